"""R02 to R05: requirements about single elements (the boundary, overflow, NaN and infinity,
signed zeros), each checked by the judge's rule of the same id (``rules.judge``): the default
check counts that rule's rejections in the families aimed at it."""

from __future__ import annotations

from sl1conf.conformance.requirements.base import Requirement


BOUNDARY_ID = "R02"
ROWS = (
    Requirement(BOUNDARY_ID, "boundary",
                "Where x1 - x2 equals +beta or -beta exactly the result is +dy or -dy exactly, or what the "
                "error model reaches there (no budget), whatever family the element is in.",
                families=("boundary-exact",)),
    Requirement("R03", "overflow",
                "No infinity or NaN where the exact result is finite: intermediate overflow (x1 - x2, "
                "diff * dy, 1 / beta, ...) must not reach the result, in any order, except an overflow "
                "of an intermediate the profile's error_model.overflow lists.",
                families=("fp16-overflow", "range-overflow")),
    Requirement("R04", "nan-and-infinity",
                "NaN in any input gives NaN (any NaN); infinities follow the branches as the oracle does.",
                families=("nan-inf",)),
    Requirement("R05", "signed-zero",
                "Zero results carry the sign IEEE 754 gives the formula (x - x = +0, -(+0) = -0, the "
                "product of signs in the middle line).", families=("signed-zero",)),
)

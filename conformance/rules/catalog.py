"""The requirement catalog: stable ids, one-line statements, kind, and where each is checked.

Ids are never renumbered; a removed requirement leaves a gap. ``kind`` is "required"
(a failure fails the verdict) or "recorded" (the manual leaves the behaviour open: the
report says what was observed, the verdict does not depend on it). A requirement whose
kind depends on the profile says so in ``strict_only`` (required under a strict profile,
recorded otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Requirement", "CATALOG", "by_id"]


@dataclass(frozen=True)
class Requirement:
    id: str
    title: str
    statement: str
    kind: str = "required"
    families: tuple = ()  # vector families it is judged on ("*" for every family)
    strict_only: bool = False


CATALOG: tuple = (
    Requirement("R01", "accuracy",
                "Every element is within the profile's ULP budget of the correctly rounded result, or is "
                "bit for bit an accepted evaluation model, an acceptable alternative the vectors list, or "
                "(where the profile accepts flushing) the flush-to-zero oracle; judged per family.",
                families=("*",)),
    Requirement("R02", "boundary",
                "Where x1 - x2 equals +beta or -beta exactly the result is +dy or -dy exactly (or an "
                "accepted evaluation model's bits).", families=("boundary-exact",)),
    Requirement("R03", "overflow",
                "No infinity or NaN where the exact result is finite: intermediate overflow (x1 - x2, "
                "diff * dy, 1 / beta) must not reach the result, beyond what an accepted model does.",
                families=("fp16-overflow", "range-overflow")),
    Requirement("R04", "nan-and-infinity",
                "NaN in any input gives NaN (any NaN); infinities follow the branches as the oracle does.",
                families=("nan-inf",)),
    Requirement("R05", "signed-zero",
                "Zero results carry the sign IEEE 754 gives the formula (x - x = +0, -(+0) = -0, the "
                "product of signs in the middle line).", families=("signed-zero",), strict_only=True),
    Requirement("R06", "subnormals",
                "Subnormal inputs and results follow gradual underflow, or, where the profile accepts it, "
                "flush to zero consistently; the report says which was observed.", families=("underflow",)),
    Requirement("R07", "lengths-and-tails",
                "Every length, odd ones and those that leave a tail after the vector body included, gives "
                "the same accuracy, and nothing is written past length.",
                families=("lengths-compact", "lengths")),
    Requirement("R08", "length-zero",
                "A call with length 0 (or negative) writes nothing."),
    Requirement("R09", "core-mask-invariance",
                "Every non-empty core_mask gives the same bits for the same data, and the shared and "
                "private versions agree.", families=("core-masks",)),
    Requirement("R10", "no-write-outside",
                "Nothing is written outside dx1[0, length) (guard pages and canaries)."),
    Requirement("R11", "no-read-past-end",
                "No input is read past its end (guard pages)."),
    Requirement("R12", "inputs-unchanged",
                "dy, x1 and x2 are unchanged by the call (unless dx1 is one of them)."),
    Requirement("R13", "no-crash-no-hang",
                "Every call returns: no crash, no hang past the timeout."),
    Requirement("R14", "deterministic",
                "Repeating a call gives the same bits."),
    Requirement("R15", "in-place",
                "When the implementation claims in-place use, dx1 over dy, x1 or x2 gives the same bits "
                "as separate buffers."),
    Requirement("R16", "open-behaviour",
                "Where the manual leaves the answer open (beta <= 0, beta = 0 with diff = 0, beta = inf "
                "with an infinite diff, core_mask = 0), which acceptable answer the implementation gives.",
                kind="recorded", families=("beta-special", "core-masks")),
    Requirement("R17", "evaluation-model",
                "The evaluation model the implementation matches bit for bit, if any.", kind="recorded",
                families=("*",)),
)


def by_id(rid: str) -> Requirement:
    for r in CATALOG:
        if r.id == rid:
            return r
    raise KeyError(f"unknown requirement {rid!r}; known: {', '.join(r.id for r in CATALOG)}")


def markdown() -> str:
    """docs/requirements.md, generated from the catalog (tests fail when the file is stale)."""
    lines = ["# Requirements", "",
             "Generated from `sl1conf.conformance.rules.catalog.CATALOG` by",
             "`python -m sl1conf.conformance.rules.catalog > docs/requirements.md`; do not edit by hand.",
             "Ids are never renumbered; a removed requirement leaves a gap.", "",
             "`required`: a failure fails the verdict. `recorded`: the manual leaves the behaviour open,",
             "so the report says what was observed and the verdict does not depend on it.", "",
             "| id | name | kind | judged on | statement |", "|---|---|---|---|---|"]
    for r in CATALOG:
        kind = "required (strict profiles), recorded otherwise" if r.strict_only else r.kind
        fams = "every family" if r.families == ("*",) else (
            ", ".join(f"`{f}`" for f in r.families) or "every call")
        lines.append(f"| {r.id} | {r.title} | {kind} | {fams} | {r.statement} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")

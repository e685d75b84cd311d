"""An example sl1conf adapter plugin (docs/adapters.md, "A plugin package, step by step").

``make_adapter`` is the entry point: sl1conf calls it with the rest of the ``--impl`` name
(``example`` gives "", ``example:float64`` gives "float64"). The kernel is the formula
evaluated in float64 and rounded once to the data type: exact in the branches and within
half an ULP plus a double rounding in the middle line. It refuses beta <= 0 the way a
framework op does (a ValueError), which the suite records under R16 as its answer.
"""

import numpy as np

from sl1conf.adapters.base import AdapterError, ArrayFunction


class RefusedInput(ValueError):
    """The kernel's own error for an input it does not take."""


def smoothl1lossgrad_float64(dy, x1, x2, beta):
    """dx1 of the documented formula in float64, rounded to the inputs' type at the end."""
    if beta <= 0:  # (a NaN beta is not refused: every result is NaN)
        raise RefusedInput(f"beta must be positive, got {float(beta)!r}")
    b, g = np.float64(beta), np.asarray(dy, np.float64)
    diff = np.asarray(x1, np.float64) - np.asarray(x2, np.float64)
    with np.errstate(all="ignore"):
        out = np.where(diff > b, g, np.where(diff < -b, -g, diff / b * g))
        return out.astype(dy.dtype)  # the one rounding to the data type


class Float64Kernel(ArrayFunction):
    """The float64 kernel as an implementation under test (fp16 and fp32, private variant)."""

    name = "example:float64"
    variants = ("p",)
    rejects = (RefusedInput,)

    def compute(self, dy, x1, x2, beta, out_alias=None):
        return smoothl1lossgrad_float64(dy, x1, x2, beta)

    def describe(self):
        return {**super().describe(), "kernel": "float64, rounded once"}


class NothingOffered(Float64Kernel):
    """Answers every call unsupported: a run of it checks nothing, which is not a pass."""

    name = "example:none"

    def supports(self, case):
        return False


def make_adapter(rest: str):
    if rest in ("", "float64"):
        return Float64Kernel()
    if rest == "none":
        return NothingOffered()
    raise AdapterError(f"unknown example implementation {rest!r}: expected float64 or none")

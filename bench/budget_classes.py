"""The classes of elements the accuracy budget sorts into: "ordinary" elements, the ones the
budget is about, and the rest by reason (bench/accuracy_budget.py).

Why a module of its own: the budget means "on ordinary elements", so the same definition is
what the tests check every evaluation a profile allows against (tests/test_error_model.py).
"""

from __future__ import annotations

import math

import numpy as np

from sl1conf.reference import formats as F

CATEGORIES = (
    ("ordinary", "all inputs finite, beta > 0, exact result normal, every exact intermediate "
                 "(diff; and where the middle line is reachable diff*dy, diff/beta, 1/beta) zero or "
                 "within the normal range"),
    ("input-nan-inf", "dy, x1, x2 or beta is NaN or infinite"),
    ("beta-not-positive", "beta <= 0 (open cases, docs/special-values.md rows 21-23, 25)"),
    ("result-zero", "the exact result is zero (diff == 0 or dy == 0 in the middle line, dy == 0 outside)"),
    ("result-subnormal", "the exact result is nonzero and below the smallest normal"),
    ("diff-overflow", "x1 - x2 rounds to infinity in the data format"),
    ("diff-underflow", "x1 - x2 is nonzero and below the smallest normal"),
    ("product-range", "middle line reachable, diff * dy nonzero and outside the normal range"),
    ("quotient-range", "middle line reachable, diff / beta nonzero and outside the normal range"),
    ("reciprocal-range", "middle line reachable, 1 / beta outside the normal range"),
)
"""Classes of elements; an element gets the first that applies (0 when none does)."""
CAT_NAMES = [c for c, _ in CATEGORIES]
NCAT = len(CATEGORIES)


def classify(fmt: F.Format, dy: np.ndarray, x1: np.ndarray, x2: np.ndarray, beta) -> np.ndarray:
    """The class (index into CATEGORIES) of every element, from the exact values.

    In binary64: for fp16 data diff and diff * dy are exact there and each other quantity
    is one correctly rounded operation, so every threshold test is exact; for fp32 data
    diff is rounded to 53 bits, which can only misplace elements within 2^-53 of a threshold.
    "Middle line reachable": |diff| <= beta (1 + 2^(2-p)), which covers a rounded diff that
    lands on +-beta in any compute precision at least as wide as the data.
    """
    b = float(beta)
    mn = float(fmt.min_normal)
    ovf = float(fmt.max_finite) + 2.0 ** (fmt.emax - fmt.precision)  # rounds to inf from here on
    code = np.zeros(dy.shape, np.uint8)
    with np.errstate(all="ignore"):
        a = np.abs(dy.astype(np.float64))
        d = x1.astype(np.float64) - x2.astype(np.float64)
        nonfinite = ~(np.isfinite(a) & np.isfinite(d))
        if not math.isfinite(b):
            code[:] = 1
            return code
        if b <= 0:
            code[:] = 2
            code[nonfinite] = 1
            return code

        def oor(v):
            return (v != 0) & ((v < mn) | (v >= ovf))

        d = np.abs(d, out=d)
        reach = d <= b * (1.0 + 2.0 ** (2 - fmt.precision))
        if oor(1.0 / b):
            code[reach] = 9
        code[reach & oor(d / b)] = 8
        code[reach & oor(d * a)] = 7
        code[(d != 0) & (d < mn)] = 6
        code[d >= ovf] = 5
        res = np.where(d <= b, d * a / b, a)
        code[(res != 0) & (res < mn)] = 4
        code[res == 0] = 3
        code[nonfinite] = 1
    return code

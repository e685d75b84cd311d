"""The arbitrary-precision oracle: the documented formula, exactly, rounded once.

``smoothl1lossgrad(dy, x1, x2, beta)`` returns, for every element, the value of

    dx1 = dy                 if diff >  beta
          -dy                if diff < -beta
          diff / beta * dy   otherwise,          diff = x1 - x2,

evaluated on the exact input values with exact real arithmetic (the branches
test the exact diff, never a rounded one) and rounded once to the input format,
to nearest with ties to even. Special values follow IEEE 754 semantics of the
formula as written; docs/special-values.md is the table of those decisions and
``_middle`` / ``evaluate_element`` below implement it line by line.

Why the result is correctly rounded (the argument, not only the number)
-----------------------------------------------------------------------
mpmath does the arithmetic with its low-level ``libmp`` functions.

* ``diff = x1 - x2`` and ``N = diff * dy`` are computed with precision 0, which
  in libmp means *exact* (the result keeps every bit; binary32 inputs need at
  most 24 + (127 + 149) bits, far below anything that matters).
* The only inexact step is ``N / beta``. It is computed truncated toward zero
  to ``WORK_PREC`` = 64 bits, giving ``t``, and the remainder is tested exactly
  (``t * beta == N``, again with exact multiplication). If it is not zero, the
  true quotient lies strictly between ``t`` and ``t`` plus one unit in the 64th
  bit of ``t``: this is the sticky bit.
* ``formats.round_to_format`` then rounds ``t`` to the format (p = 11 or 24
  bits, fewer for subnormal results) knowing the sticky bit. Because
  64 >= p + 2, the fraction of ``t`` below the format's last place is a
  multiple of 2**(p - 64) <= 1/4 ulp, and the true value exceeds it by less
  than that, so: below one half stays below one half, exactly one half becomes
  "above the tie", above stays above, and an exact ``t`` is rounded as is.
  Hence rounding (t, sticky) to nearest-even is the same as rounding the true
  quotient: one rounding, no double rounding, for every input, including
  subnormal results (the format's grid is only coarser there) and results
  that round up into the next binade.

mpmath's exponent range is unbounded, so no intermediate overflows or
underflows: ``diff * dy`` beyond 65504, or ``1/beta`` for a subnormal beta, are
ordinary numbers here, which is exactly what the exact formula means.

The flush-to-zero variant (``flush_subnormals=True``) reads every subnormal
input as a zero of the same sign and flushes a subnormal result to a zero of
the same sign; platforms that flush are judged against both variants.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from mpmath import libmp

from .formats import (FloatClass, Format, as_fraction, classify, decode, decode_parts, format_by_name,
                      round_to_format)

__all__ = [
    "WORK_PREC", "Branch", "Element", "evaluate_element", "evaluate_bits", "smoothl1lossgrad",
    "smoothl1lossgrad_ftz",
]

WORK_PREC = 64
"""Bits of the truncated quotient; anything >= 26 (binary32's 24 + 2) is enough."""


class Branch:
    """Names of the formula's branches, as the oracle reports them."""

    NAN_INPUT = "nan-input"
    UPPER = "diff > beta"
    LOWER = "diff < -beta"
    MIDDLE = "-beta <= diff <= beta"
    UNORDERED = "diff is NaN (inf - inf)"


@dataclass(frozen=True)
class Element:
    """One element evaluated exactly, with what ``sl1conf explain`` shows.

    ``diff`` and ``exact`` are Fractions for finite values, or one of the strings
    ``"+inf"``, ``"-inf"``, ``"nan"``; a zero's sign is in ``diff_neg_zero`` /
    the result bits. ``note`` says which special rule decided the result.
    """

    bits: int
    branch: str
    diff: "Fraction | str"
    exact: "Fraction | str"
    note: str = ""


_INF = ("+inf", "-inf")


def _read(fmt: Format, bits: int, flush: bool):
    """(class, sign, libmp value or None for inf/NaN), after optional flushing."""
    cls, sign, man, exp = decode_parts(fmt, bits)
    if flush and cls is FloatClass.SUBNORMAL:
        cls, man = FloatClass.ZERO, 0
    if cls is FloatClass.INF or cls.is_nan:
        return cls, sign, None
    if man == 0:
        return cls, sign, libmp.fzero
    return cls, sign, libmp.from_man_exp(-man if sign else man, exp)


def _cmp(a, b) -> int:
    """Compare extended reals: libmp finite values, or "+inf" / "-inf"."""
    if isinstance(a, str) or isinstance(b, str):
        ra = {"+inf": 1, "-inf": -1}.get(a, 0) if isinstance(a, str) else 0
        rb = {"+inf": 1, "-inf": -1}.get(b, 0) if isinstance(b, str) else 0
        return (ra > rb) - (ra < rb)
    return libmp.mpf_cmp(a, b)


def _neg(v):
    if isinstance(v, str):
        return "-inf" if v == "+inf" else "+inf"
    return libmp.mpf_neg(v)


def _frac(v) -> "Fraction | str":
    """An extended value for display: "+inf"/"-inf" as they are, a libmp value as a Fraction."""
    return v if isinstance(v, str) else as_fraction(v)


def evaluate_element(fmt: "Format | str", dy: int, x1: int, x2: int, beta: int,
                     *, flush_subnormals: bool = False) -> Element:
    """The correctly rounded dx1 for one element of bit patterns, and how it came about."""
    return evaluate_bits(format_by_name(fmt), dy, x1, x2, beta, flush_subnormals, True)


def evaluate_bits(fmt: Format, dy: int, x1: int, x2: int, beta: int, flush: bool, detail: bool):
    """evaluate_element's work; without ``detail`` it skips the exact values and returns bits."""
    (dyc, dys, dyv), (c1, s1, v1), (c2, s2, v2), (bc, bs, bv) = (
        _read(fmt, b, flush) for b in (dy, x1, x2, beta))
    nan = fmt.qnan_bits
    if any(c.is_nan for c in (dyc, c1, c2, bc)):
        return Element(nan, Branch.NAN_INPUT, "nan", "nan", "a NaN input gives NaN") if detail else nan

    # diff = x1 - x2, exactly, on the extended reals.
    diff_neg_zero = False
    if c1 is FloatClass.INF or c2 is FloatClass.INF:
        d1 = ("-inf" if s1 else "+inf") if c1 is FloatClass.INF else None
        d2 = ("+inf" if s2 else "-inf") if c2 is FloatClass.INF else None  # -x2
        if d1 and d2 and d1 != d2:
            return Element(nan, Branch.UNORDERED, "nan", "nan", "inf - inf is NaN") if detail else nan
        diff = d1 or d2
    else:
        diff = libmp.mpf_sub(v1, v2, 0)  # precision 0: exact
        # IEEE: an exact zero difference is +0, except (-0) - (+0) = -0.
        diff_neg_zero = c1 is FloatClass.ZERO and c2 is FloatClass.ZERO and s1 == 1 and s2 == 0
    beta_v = ("-inf" if bs else "+inf") if bc is FloatClass.INF else bv

    def result(bits, branch, exact, note=""):
        if flush and (bits & fmt.exp_mask) == 0 and (bits & fmt.frac_mask) != 0:
            bits &= fmt.sign_mask
            note = (note + "; " if note else "") + "subnormal result flushed to zero"
        if not detail:
            return bits
        return Element(bits, branch, _frac(diff), _exact_of(fmt, exact) if isinstance(exact, int) else exact,
                       note)

    # Outer branches return +-dy exactly (a flushed dy is flushed by result()).
    if _cmp(diff, beta_v) > 0:
        return result(dy, Branch.UPPER, dy)
    if _cmp(diff, _neg(beta_v)) < 0:
        return result(dy ^ fmt.sign_mask, Branch.LOWER, dy ^ fmt.sign_mask)
    bits, exact, note = _middle(fmt, diff, diff_neg_zero, beta_v, bs, dyv, dys, dyc, detail)
    return result(bits, Branch.MIDDLE, exact, note)


def _exact_of(fmt: Format, bits: int) -> "Fraction | str":
    cls, sign = classify(fmt, bits)
    if cls is FloatClass.INF:
        return "-inf" if sign else "+inf"
    return decode(fmt, bits)


def _middle(fmt: Format, diff, diff_neg_zero: bool, beta, beta_sign: int, dy, dy_sign: int,
            dy_cls: FloatClass, detail: bool):
    """diff / beta * dy where -beta <= diff <= beta (so |diff / beta| <= 1 when finite)."""
    nan = fmt.qnan_bits
    if isinstance(diff, str):  # only reachable with beta = +inf
        return nan, "nan", "inf / inf is NaN"
    diff_zero = diff[1] == 0
    beta_inf = isinstance(beta, str)
    if not beta_inf and beta[1] == 0:  # only reachable with diff = 0
        return nan, "nan", "0 / 0 is NaN (beta = 0 and diff = 0)"
    diff_sign = diff[0] if not diff_zero else int(diff_neg_zero)
    sign = diff_sign ^ beta_sign ^ dy_sign  # the sign of every zero or infinite product
    quotient_zero = diff_zero or beta_inf
    if dy_cls is FloatClass.INF:
        if quotient_zero:
            return nan, "nan", "0 * inf is NaN"
        return (sign << (fmt.bits - 1)) | fmt.inf_bits, ("-inf" if sign else "+inf"), "dy is infinite"
    if quotient_zero or dy[1] == 0:
        return sign << (fmt.bits - 1), Fraction(0), "a zero factor: the sign is the product of the signs"
    numerator = libmp.mpf_mul(diff, dy, 0)  # exact
    t = libmp.mpf_div(numerator, beta, WORK_PREC, libmp.round_down)
    sticky = libmp.mpf_mul(t, beta, 0) != numerator
    exact = _frac(numerator) / _frac(beta) if detail else None
    return round_to_format(fmt, t, sticky=sticky), exact, ""


def _as_bits(fmt: Format, a) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype != fmt.dtype:
        raise TypeError(f"expected {fmt.dtype} arrays, got {arr.dtype}")
    return arr.view(fmt.uint)


def smoothl1lossgrad(dy, x1, x2, beta, *, flush_subnormals: bool = False) -> np.ndarray:
    """Correctly rounded dx1 for numpy arrays of float16 or float32 (beta a scalar of that type).

    Elementwise and exact; slow (tens of microseconds an element): it is the
    ground truth, the fast oracle and kernel are checked against it.
    """
    dy = np.asarray(dy)
    fmt = format_by_name(dy.dtype)
    b_dy, b_x1, b_x2 = (_as_bits(fmt, a) for a in (dy, x1, x2))
    if not (b_dy.shape == b_x1.shape == b_x2.shape):
        raise ValueError(f"dy, x1, x2 differ in shape: {b_dy.shape}, {b_x1.shape}, {b_x2.shape}")
    b_beta = _as_bits(fmt, beta)
    if b_beta.shape != ():
        raise ValueError("beta must be a scalar")
    beta_bits = int(b_beta)
    out = np.empty(b_dy.shape, dtype=fmt.uint)
    flat_out = out.reshape(-1)
    for i, (a, b, c) in enumerate(zip(b_dy.reshape(-1).tolist(), b_x1.reshape(-1).tolist(),
                                      b_x2.reshape(-1).tolist())):
        flat_out[i] = evaluate_bits(fmt, a, b, c, beta_bits, flush_subnormals, False)
    return out.view(fmt.dtype)


def smoothl1lossgrad_ftz(dy, x1, x2, beta) -> np.ndarray:
    """The flush-to-zero oracle: subnormal inputs read as signed zeros, subnormal results flushed."""
    return smoothl1lossgrad(dy, x1, x2, beta, flush_subnormals=True)

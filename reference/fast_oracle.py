"""The fast exact oracle: the same bits as ``oracle.smoothl1lossgrad``, at numpy speed.

Same API and results as the mpmath oracle (NaN results are the canonical quiet
NaN there and here), many times faster. Two strategies, one per format.

fp16: one binary64 evaluation is already correctly rounded
-----------------------------------------------------------
Every fp16 value is a multiple of 2^-24 below 2^16 in magnitude, so ``diff`` is
a multiple of 2^-24 below 2^17: at most 41 significant bits, exact in binary64,
and the branches are tested on the exact diff. ``N = diff * dy`` has at most
41 + 11 = 52 bits: exact too. Only ``q = N / beta`` rounds (relative error at
most u = 2^-53), then ``q`` is rounded to fp16. Rounding to nearest goes wrong
after an earlier rounding only if that earlier rounding moved the value onto,
or across, an fp16 rounding boundary, which for nearest-even is a midpoint
``m = M * 2^k`` with M < 2^12 (midpoints of subnormals included). Midpoints are
binary64 numbers, and rounding is monotonic, so fl(x) can reach m only if
|x - m| <= u|x|. Write ``N = n 2^a`` (n < 2^52), ``beta = b 2^c`` (b < 2^11).
If x != m, then ``x - m = (n 2^a - M b 2^(k+c)) / (b 2^c)`` has a numerator that
is a nonzero multiple of 2^min(a, k+c), so |x - m| / |x| >= 2^min(a, k+c) / (n 2^a),
which is at least 1/n > 2^-52 when a <= k + c, and about 1/(M b) > 2^-23 otherwise
(x is close to m, so n 2^a ~ M b 2^(k+c)). Either way it is more than u: the
binary64 quotient lands on the same side of every midpoint as the exact one, and
lands on a midpoint only when the exact quotient is that midpoint. Hence the
``muldiv-fp64`` model (diff, diff*dy, /beta in binary64, one correct conversion
to fp16) *is* the correctly rounded result; the Cython kernel computes it (its
binary64 to fp16 conversion rounds once, via round-to-odd).

fp32: a filtered binary64 evaluation, with an exact fallback
------------------------------------------------------------
``s = fl(x1 - x2)`` may be inexact (fp32 diffs can need up to 277 bits), so the
exact residual ``e`` of that subtraction is computed too (TwoSum, exact):
``diff = s + e``. Branches: rounding is monotonic, so ``s > beta`` implies
``diff > beta``; when ``s == beta`` the sign of ``e`` decides (same for -beta).
Middle line: ``r = fl(fl(s * dy) / beta)`` has relative error at most
(1 + u)^3 - 1 < 3.0000001u against the exact value, and nothing over- or
underflows in binary64 for fp32 data. ``lo = fl(r (1 - 2^-50))`` and
``hi = fl(r (1 + 2^-50))`` bracket the exact value (8u covers the 3u error plus
the rounding of the bracket itself). When lo and hi round to the same fp32
pattern, monotonicity makes that the correctly rounded result; otherwise the
element is ambiguous (an exact fp32 midpoint, or within 8u of one) and goes to
the mpmath oracle. The Cython kernel runs this filter (``kernel.f32_filtered``,
compiled with -ffp-contract=off so TwoSum stays exact). Special values need no special code: binary64 arithmetic on
them follows the same IEEE rules as docs/special-values.md.

Flush-to-zero (``flush_subnormals=True``) flushes subnormal inputs to signed
zeros before, and subnormal results after, exactly as the mpmath oracle does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kernel
from .formats import FP16, FP32, Format, format_by_name, is_nan_bits
from .oracle import evaluate_bits

__all__ = ["FastResult", "evaluate", "smoothl1lossgrad", "smoothl1lossgrad_ftz", "flush_subnormal_bits"]

@dataclass(frozen=True)
class FastResult:
    """The result and how many elements needed the exact (mpmath) fallback."""

    out: np.ndarray
    fallbacks: int

    @property
    def fallback_rate(self) -> float:
        return self.fallbacks / self.out.size if self.out.size else 0.0


def flush_subnormal_bits(fmt: Format, bits: np.ndarray) -> np.ndarray:
    """Bit patterns with every subnormal replaced by a zero of the same sign."""
    sub = ((bits & fmt.exp_mask) == 0) & ((bits & fmt.frac_mask) != 0)
    return np.where(sub, bits & fmt.sign_mask, bits).astype(fmt.uint)


def _canonical_nan(fmt: Format, bits: np.ndarray) -> np.ndarray:
    """``bits`` (changed in place) with every NaN the canonical quiet NaN."""
    bits = np.asarray(bits, fmt.uint)
    bits[np.flatnonzero(is_nan_bits(fmt, bits))] = fmt.qnan_bits
    return bits


def _f32_parts(bits: int) -> tuple[int, int]:
    """A finite fp32 pattern as (m, e) with value m * 2^e exactly (m signed)."""
    field, m = (bits >> 23) & 0xFF, bits & 0x7FFFFF
    if field:
        m |= 1 << 23
    return (-m if bits >> 31 else m), (field or 1) - 150


def exact_middle_f32(dy: int, x1: int, x2: int, beta: int) -> int:
    """The correctly rounded (x1 - x2) * dy / beta for finite fp32 patterns, dy and beta nonzero, in integers:
    the filter's ambiguous elements (about 5 microseconds each, the mpmath oracle 120). Every
    value is m 2^e; the quotient is taken with at least 27 bits and a sticky remainder, then
    rounded to nearest even at fp32's quantum (2^-149 at the bottom: gradual underflow),
    overflowing to infinity from FLT_MAX + half an ulp on."""
    (m1, e1), (m2, e2), (g, eg), (b, eb) = (_f32_parts(v) for v in (x1, x2, dy, beta))
    lo = min(e1, e2)
    diff = (m1 << (e1 - lo)) - (m2 << (e2 - lo))
    if diff == 0:  # IEEE: a zero difference is +0, but (-0) - (+0) is -0
        return ((x1 == 0x80000000 and x2 == 0) ^ (dy >> 31) ^ (beta >> 31)) << 31
    num = diff * g  # exact: q = num / b * 2^exp
    sign = int((num < 0) != (b < 0))
    num, b, exp = abs(num), abs(b), lo + eg - eb
    k = max(0, 27 + b.bit_length() - num.bit_length())
    quot, rem = divmod(num << k, b)  # quot >= 2^26
    top = exp - k + quot.bit_length() - 1  # 2^top <= q < 2^(top + 1)
    quantum = max(top - 23, -149)
    drop = quantum - (exp - k)  # >= 3
    kept, low, half = quot >> drop, quot & ((1 << drop) - 1), 1 << (drop - 1)
    if low > half or (low == half and (rem or kept & 1)):
        kept += 1
    if kept < 1 << 23:  # subnormal (or zero)
        return (sign << 31) | kept
    if kept == 1 << 24:
        kept, quantum = kept >> 1, quantum + 1
    field = quantum + 150
    return (sign << 31) | (0x7F800000 if field >= 255 else (field << 23) | (kept & 0x7FFFFF))


def _fp32(dy, x1, x2, beta_bits: int) -> tuple[np.ndarray, int]:
    """The filtered binary64 evaluation (in C, ``kernel.f32_filtered``), then the
    exact integer evaluation (``exact_middle_f32``) for each ambiguous element: the filter
    decides both outer branches, and leaves ambiguous only finite nonzero middle-line values
    (anything else the mpmath oracle takes, as a safeguard)."""
    out = np.empty_like(dy)
    ambiguous = np.empty(dy.shape, np.uint8)
    beta = np.array([beta_bits], np.uint32).view(np.float32)[0]
    count = kernel.f32_filtered(dy, x1.view(np.float32), x2.view(np.float32), beta, out, ambiguous)
    idx = np.flatnonzero(ambiguous) if count else ()
    finite = lambda v: (v >> 23) & 0xFF != 0xFF and v & 0x7FFFFFFF  # noqa: E731
    for i in idx:
        a, b, c = int(dy[i]), int(x1[i]), int(x2[i])
        if finite(a) and finite(beta_bits) and (b & 0x7F800000) != 0x7F800000 and (c & 0x7F800000) != 0x7F800000:
            out[i] = exact_middle_f32(a, b, c, beta_bits)
        else:
            out[i] = evaluate_bits(FP32, a, b, c, beta_bits, False, False)
    return out, int(count)


def evaluate(dy, x1, x2, beta, *, flush_subnormals: bool = False) -> FastResult:
    """Correctly rounded dx1 (as ``oracle.smoothl1lossgrad``) and the fallback count."""
    dy = np.asarray(dy)
    fmt = format_by_name(dy.dtype)
    arrays = []
    for name, a in (("dy", dy), ("x1", x1), ("x2", x2)):
        a = np.asarray(a)
        if a.dtype != fmt.dtype:
            raise TypeError(f"{name} is {a.dtype}, expected {fmt.dtype} like dy")
        if a.shape != dy.shape:
            raise ValueError(f"dy, x1, x2 differ in shape: {dy.shape}, {a.shape}")
        arrays.append(np.ascontiguousarray(a).reshape(-1).view(fmt.uint))
    beta_arr = np.asarray(beta)
    if beta_arr.dtype != fmt.dtype or beta_arr.shape != ():
        raise TypeError(f"beta must be a {fmt.dtype} scalar")
    beta_bits = int(beta_arr.view(fmt.uint))
    if flush_subnormals:
        arrays = [flush_subnormal_bits(fmt, a) for a in arrays]
        beta_bits = int(flush_subnormal_bits(fmt, np.array([beta_bits], fmt.uint))[0])
    if fmt is FP16:
        h = [a.view(np.float16) for a in arrays]
        out = kernel.smoothl1lossgrad(h[0], h[1], h[2], np.uint16(beta_bits).view(np.float16),
                                      model="muldiv-fp64").view(np.uint16)
        fallbacks = 0
    else:
        out, fallbacks = _fp32(*arrays, beta_bits)
    if flush_subnormals:
        out = flush_subnormal_bits(fmt, out)
    out = _canonical_nan(fmt, out)
    return FastResult(out.reshape(dy.shape).view(fmt.dtype), fallbacks)


def smoothl1lossgrad(dy, x1, x2, beta, *, flush_subnormals: bool = False) -> np.ndarray:
    """Correctly rounded dx1, bit for bit the mpmath oracle's, at numpy speed."""
    return evaluate(dy, x1, x2, beta, flush_subnormals=flush_subnormals).out


def smoothl1lossgrad_ftz(dy, x1, x2, beta) -> np.ndarray:
    """The flush-to-zero oracle, fast."""
    return smoothl1lossgrad(dy, x1, x2, beta, flush_subnormals=True)

"""An independent, exact SmoothL1LossGrad for the tests: ``fractions.Fraction`` and ints only.

Why it is independent of the oracle (``sl1conf.reference.oracle``): it shares no code
with it and uses a different kind of arithmetic. The oracle uses mpmath; this module
uses only Python's exact rationals and integers, with its own bit decoding of binary16
(1-5-10) and binary32 (1-8-23) and its own round-to-nearest-even. It does not import
or copy ``sl1conf.reference.oracle`` or ``sl1conf.reference.formats``. It was written
from ``docs/special-values.md`` alone, so agreement between the two is evidence that
both implement that document, not that they share a mistake.

The semantics (docs/special-values.md): ``diff = x1 - x2`` exactly; the branches test the
exact ``diff`` in the manual's order (``diff > beta``: ``dy``; ``diff < -beta``: ``-dy``;
else ``diff / beta * dy``), with IEEE 754 rules for NaN, infinities and signed zeros;
the result is rounded once, to nearest with ties to even, with gradual underflow and
overflow to infinity. A NaN result is the canonical quiet NaN. With ``flush=True``
subnormal inputs are read as zeros of the same sign, and a subnormal (rounded) result
becomes a zero of the same sign.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

# name: (exponent bits, fraction bits)
_LAYOUT = {"fp16": (5, 10), "fp32": (8, 23)}
CANONICAL_NAN = {"fp16": 0x7E00, "fp32": 0x7FC00000}

INF = "inf"
FIN = "fin"
# A value is None (NaN) or (sign, kind, magnitude): sign 0/1, kind FIN or INF,
# magnitude a non-negative Fraction (ignored for INF). Zeros keep their sign.


def _decode(fmt: str, bits: int, flush: bool):
    ebits, mbits = _LAYOUT[fmt]
    sign = bits >> (ebits + mbits)
    e = (bits >> mbits) & ((1 << ebits) - 1)
    m = bits & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    if e == (1 << ebits) - 1:
        return (sign, INF, Fraction(0)) if m == 0 else None
    if e == 0:  # zero or subnormal: m * 2^(1 - bias - mbits)
        mag = Fraction(0) if flush else _scaled(m, 1 - bias - mbits)
    else:
        mag = _scaled((1 << mbits) | m, e - bias - mbits)
    return (sign, FIN, mag)


def _scaled(n: int, k: int) -> Fraction:
    """n * 2^k, exactly."""
    return Fraction(n << k) if k >= 0 else Fraction(n, 1 << -k)


def _real(v):
    """The extended-real number of a non-NaN value (Fraction, or float +-inf)."""
    sign, kind, mag = v
    if kind == INF:
        return float("-inf") if sign else float("inf")
    return -mag if sign else mag


def _sub(a, b):
    if a[1] == INF and b[1] == INF:
        return None if a[0] == b[0] else a  # inf - inf is NaN; +inf - -inf = +inf
    if a[1] == INF:
        return a
    if b[1] == INF:
        return (1 - b[0], INF, Fraction(0))
    d = _real(a) - _real(b)
    if d == 0:  # IEEE 754 6.3: an exact zero difference is +0, except (-0) - (+0) = -0
        return (1 if (a[0] == 1 and b[0] == 0) else 0, FIN, Fraction(0))
    return (1 if d < 0 else 0, FIN, abs(d))


def _div(a, b):
    s = a[0] ^ b[0]
    a_zero = a[1] == FIN and a[2] == 0
    b_zero = b[1] == FIN and b[2] == 0
    if (a[1] == INF and b[1] == INF) or (a_zero and b_zero):
        return None
    if a[1] == INF or b_zero:
        return (s, INF, Fraction(0))
    if b[1] == INF:
        return (s, FIN, Fraction(0))
    return (s, FIN, a[2] / b[2])


def _mul(a, b):
    s = a[0] ^ b[0]
    a_zero = a[1] == FIN and a[2] == 0
    b_zero = b[1] == FIN and b[2] == 0
    if (a[1] == INF and b_zero) or (b[1] == INF and a_zero):
        return None
    if a[1] == INF or b[1] == INF:
        return (s, INF, Fraction(0))
    return (s, FIN, a[2] * b[2])


def _round_half_even(q: Fraction) -> int:
    n, r = divmod(q.numerator, q.denominator)  # q = n + r/den, 0 <= r < den
    if 2 * r > q.denominator or (2 * r == q.denominator and n % 2 == 1):
        n += 1
    return n


def _encode(fmt: str, v, flush: bool) -> int:
    """Round v to the format (nearest, ties to even, gradual underflow) and give the bits."""
    ebits, mbits = _LAYOUT[fmt]
    if v is None:
        return CANONICAL_NAN[fmt]
    sign, kind, mag = v
    sbit = sign << (ebits + mbits)
    emax_field = (1 << ebits) - 1
    if kind == INF:
        return sbit | (emax_field << mbits)
    if mag == 0:
        return sbit
    bias = (1 << (ebits - 1)) - 1
    emin = 1 - bias
    # e = floor(log2(mag)), found by comparing against powers of two.
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    while _scaled(1, e) > mag:
        e -= 1
    while _scaled(1, e + 1) <= mag:
        e += 1
    q = max(e, emin) - mbits  # the exponent of one ulp at mag (subnormal ulp below 2^emin)
    n = _round_half_even(mag / _scaled(1, q))  # mag ~ n * 2^q
    if n == 1 << (mbits + 1):  # rounding carried into the next binade
        n >>= 1
        q += 1
    if n < (1 << mbits):  # subnormal (or zero): exponent field 0
        assert q == emin - mbits
        return sbit if flush else sbit | n
    field = q + mbits + bias
    if field >= emax_field:  # overflow: mag >= max_finite + half an ulp
        return sbit | (emax_field << mbits)
    return sbit | (field << mbits) | (n - (1 << mbits))


def smoothl1lossgrad_bits(
    fmt: str, dy: int, x1: int, x2: int, beta: int, flush: bool = False
) -> int:
    """Bit pattern of dx1 for one element of bit patterns (see the module docstring)."""
    vdy, v1, v2, vb = (_decode(fmt, int(b), flush) for b in (dy, x1, x2, beta))
    if vdy is None or v1 is None or v2 is None or vb is None:
        return CANONICAL_NAN[fmt]
    diff = _sub(v1, v2)
    if diff is None:
        result = None
    elif _real(diff) > _real(vb):
        result = vdy
    elif _real(diff) < -_real(vb):
        result = (1 - vdy[0], vdy[1], vdy[2])
    else:
        quotient = _div(diff, vb)
        result = None if quotient is None else _mul(quotient, vdy)
    return _encode(fmt, result, flush)


def smoothl1lossgrad_array(
    fmt: str, dy: np.ndarray, x1: np.ndarray, x2: np.ndarray, beta: int, flush: bool = False
) -> np.ndarray:
    """Elementwise ``smoothl1lossgrad_bits`` over uint16 (fp16) or uint32 (fp32) arrays."""
    dtype = np.uint16 if fmt == "fp16" else np.uint32
    triples = zip(np.ravel(dy).tolist(), np.ravel(x1).tolist(), np.ravel(x2).tolist())
    out = [smoothl1lossgrad_bits(fmt, a, b, c, beta, flush) for a, b, c in triples]
    return np.array(out, dtype=dtype).reshape(np.shape(dy))

"""IEEE 754 binary16 and binary32, exactly: decode, classify, round, order, parse.

Everything here works on bit patterns (Python ints or numpy unsigned arrays) and
exact rationals (``fractions.Fraction``), never on host floats, so no rounding
happens anywhere but in :func:`round_to_format`, which rounds an exact real once,
to nearest with ties to even, with gradual underflow and IEEE overflow.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction

import numpy as np

__all__ = [
    "Format", "FP16", "FP32", "FP64", "FORMATS", "format_by_name", "FloatClass",
    "classify", "decode_parts", "decode", "round_to_format", "ordered", "ulp_distance",
    "NAN_MISMATCH", "is_nan_bits", "same_result", "hex_bits", "parse_value", "to_bits", "from_bits", "hexfloat",
    "as_fraction",
]


@dataclass(frozen=True)
class Format:
    """One binary interchange format: ``precision`` counts the implicit bit."""

    name: str
    bits: int
    precision: int
    emax: int
    dtype: np.dtype
    uint: np.dtype

    @cached_property
    def emin(self) -> int:
        return 1 - self.emax

    @cached_property
    def exp_bits(self) -> int:
        return self.bits - self.precision

    @cached_property
    def frac_bits(self) -> int:
        return self.precision - 1

    @cached_property
    def sign_mask(self) -> int:
        return 1 << (self.bits - 1)

    @cached_property
    def exp_mask(self) -> int:
        return ((1 << self.exp_bits) - 1) << self.frac_bits

    @cached_property
    def frac_mask(self) -> int:
        return (1 << self.frac_bits) - 1

    @cached_property
    def inf_bits(self) -> int:
        return self.exp_mask

    @cached_property
    def qnan_bits(self) -> int:
        """The canonical quiet NaN (what the oracle returns for every NaN result)."""
        return self.exp_mask | (1 << (self.frac_bits - 1))

    @cached_property
    def max_finite(self) -> Fraction:
        return Fraction(2**self.precision - 1) * Fraction(2) ** (self.emax - self.precision + 1)

    @cached_property
    def min_normal(self) -> Fraction:
        return Fraction(2) ** self.emin

    @cached_property
    def min_subnormal(self) -> Fraction:
        return Fraction(2) ** (self.emin - self.precision + 1)


FP16 = Format("fp16", 16, 11, 15, np.dtype(np.float16), np.dtype(np.uint16))
FP32 = Format("fp32", 32, 24, 127, np.dtype(np.float32), np.dtype(np.uint32))
FP64 = Format("fp64", 64, 53, 1023, np.dtype(np.float64), np.dtype(np.uint64))
FORMATS = {"fp16": FP16, "fp32": FP32}
"""The data formats of the operator (fp64 exists only as a compute precision of models)."""
_ALIASES = {
    "fp16": FP16, "half": FP16, "float16": FP16, "binary16": FP16, "hp": FP16, "f16": FP16,
    "fp32": FP32, "float": FP32, "float32": FP32, "binary32": FP32, "fp": FP32, "f32": FP32,
}


def format_by_name(name: "str | Format | np.dtype") -> Format:
    """The data format for a name (``fp16``, ``half``, ``float32``, ...) or a numpy dtype."""
    fmt = _ALIASES.get(name) if type(name) is str else None  # (the common case first: a case's dtype, each call)
    if fmt is not None:
        return fmt
    if isinstance(name, Format):
        return name
    if isinstance(name, np.dtype) or (isinstance(name, type) and issubclass(name, np.generic)):
        dt = np.dtype(name)
        for fmt in FORMATS.values():
            if dt in (fmt.dtype, fmt.uint):
                return fmt
        raise ValueError(f"unsupported dtype {dt}: expected float16 or float32")
    try:
        return _ALIASES[str(name).strip().lower()]
    except KeyError:
        raise ValueError(f"unknown format {name!r}: expected fp16 or fp32") from None


class FloatClass(enum.Enum):
    ZERO = "zero"
    SUBNORMAL = "subnormal"
    NORMAL = "normal"
    INF = "inf"
    QNAN = "qnan"
    SNAN = "snan"

    @property
    def is_nan(self) -> bool:
        return self in (FloatClass.QNAN, FloatClass.SNAN)


def _check_bits(fmt: Format, bits: int) -> int:
    bits = int(bits)
    if not 0 <= bits < (1 << fmt.bits):
        raise ValueError(f"{bits:#x} is not a {fmt.name} bit pattern")
    return bits


def classify(fmt: Format, bits: int) -> tuple[FloatClass, int]:
    """(class, sign bit) of one bit pattern."""
    bits = _check_bits(fmt, bits)
    sign = bits >> (fmt.bits - 1)
    exp = (bits & fmt.exp_mask) >> fmt.frac_bits
    frac = bits & fmt.frac_mask
    if exp == fmt.exp_mask >> fmt.frac_bits:
        if frac == 0:
            return FloatClass.INF, sign
        quiet = frac >> (fmt.frac_bits - 1)
        return (FloatClass.QNAN if quiet else FloatClass.SNAN), sign
    if exp == 0:
        return (FloatClass.ZERO if frac == 0 else FloatClass.SUBNORMAL), sign
    return FloatClass.NORMAL, sign


def decode_parts(fmt: Format, bits: int) -> tuple[FloatClass, int, int, int]:
    """(class, sign bit, integer significand, exponent): a finite pattern is
    ``(-1)**sign * significand * 2**exponent`` exactly (significand 0 for zeros,
    and 0 for inf and NaN, whose class says what they are)."""
    cls, sign = classify(fmt, bits)
    exp = (int(bits) & fmt.exp_mask) >> fmt.frac_bits
    frac = int(bits) & fmt.frac_mask
    if cls in (FloatClass.ZERO, FloatClass.SUBNORMAL):
        return cls, sign, frac, fmt.emin - fmt.frac_bits
    if cls is FloatClass.NORMAL:
        return cls, sign, frac | (1 << fmt.frac_bits), exp - fmt.emax - fmt.frac_bits
    return cls, sign, 0, 0


def decode(fmt: Format, bits: int) -> Fraction:
    """The exact value of a finite pattern (a zero decodes to 0; its sign is the pattern's).

    Raises ValueError for inf and NaN: callers must handle those classes explicitly.
    """
    cls, sign, man, exp = decode_parts(fmt, bits)
    if cls is FloatClass.INF or cls.is_nan:
        raise ValueError(f"{int(bits):#x} is {cls.value}, which has no finite value")
    mag = Fraction(man) * Fraction(2) ** exp
    return -mag if sign else mag


def as_fraction(value) -> Fraction:
    """An exact Fraction from an int, Fraction or mpmath mpf (no rounding)."""
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    mpf = getattr(value, "_mpf_", value if isinstance(value, tuple) else None)
    if mpf is not None:  # an mpmath mpf, or libmp's raw (sign, man, exp, bc) tuple
        sign, man, exp, _ = mpf
        if man == 0 and exp != 0:
            raise ValueError("an infinite or NaN mpf has no exact finite value")
        mag = Fraction(int(man)) * Fraction(2) ** exp
        return -mag if sign else mag
    raise TypeError(f"cannot take {type(value).__name__} as an exact value")


def round_to_format(fmt: Format, value, *, negative_zero: bool = False, sticky: bool = False) -> int:
    """Round an exact real to ``fmt``: nearest, ties to even, gradual underflow, IEEE overflow.

    ``value`` is an int, Fraction, mpf or libmp tuple, taken exactly. A zero value (or one that
    rounds to zero) keeps the sign of ``value``; an exact zero is -0 only when
    ``negative_zero`` says so. ``sticky`` says ``value`` was truncated toward zero
    to a precision at least two bits finer than the format's and was inexact:
    the true magnitude lies strictly between ``|value|`` and ``|value|`` plus one
    unit in its last place. Then a tie rounds away from zero and everything else
    rounds as ``value`` does, which is the correct rounding of the true value
    (the guard-and-sticky argument; see the oracle's docstring).

    Overflow: magnitudes at or past ``max_finite`` plus half an ulp go to inf,
    as IEEE 754 round-to-nearest says.
    """
    q = as_fraction(value)
    sign = 1 if (q < 0 or (q == 0 and negative_zero)) else 0
    mag = abs(q)
    if mag == 0:
        if sticky:
            raise ValueError("sticky needs a nonzero value")
        return sign << (fmt.bits - 1)
    # Exponent e with 2**e <= mag < 2**(e+1), exactly from integer bit lengths.
    n, d = mag.numerator, mag.denominator
    e = n.bit_length() - d.bit_length()
    if Fraction(2) ** e > mag:
        e -= 1
    if e > fmt.emax:
        return (sign << (fmt.bits - 1)) | fmt.inf_bits
    quantum_exp = max(e, fmt.emin) - fmt.frac_bits
    scaled = mag / Fraction(2) ** quantum_exp  # units of the quantum
    m, rem = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rem
    if twice > scaled.denominator or (
        twice == scaled.denominator and (sticky or m & 1)
    ):
        m += 1
    # m < 2**precision, or == 2**precision after a carry into the next binade.
    biased = quantum_exp + fmt.emax + fmt.frac_bits  # exponent field if normal
    if m >> fmt.frac_bits == 0:  # subnormal (only when e < emin)
        pattern = m
    else:
        if m >> fmt.precision:  # carry: m == 2**precision
            m >>= 1
            biased += 1
        if biased >= (fmt.exp_mask >> fmt.frac_bits):
            return (sign << (fmt.bits - 1)) | fmt.inf_bits
        pattern = (biased << fmt.frac_bits) | (m & fmt.frac_mask)
    return (sign << (fmt.bits - 1)) | pattern


def ordered(fmt: Format, bits: np.ndarray) -> np.ndarray:
    """Map patterns onto one integer line: -inf < ... < -0 == +0 < ... < +inf.

    Consecutive values are consecutive integers (subnormals count, inf is one
    step past the largest finite). NaN patterns land past inf and must be
    masked by the caller (see :func:`ulp_distance`).
    """
    b = np.asarray(bits).astype(fmt.uint, copy=False)
    mag = np.array(b & np.array(fmt.exp_mask | fmt.frac_mask, fmt.uint), dtype=np.int64)  # masked in the narrow type
    np.negative(mag, out=mag, where=(b & np.array(fmt.sign_mask, fmt.uint)) != 0)
    return mag


NAN_MISMATCH = np.iinfo(np.int64).max
"""The ULP distance reported when exactly one side is NaN (never a real distance)."""


def is_nan_bits(fmt: Format, bits: np.ndarray) -> np.ndarray:
    """NaN patterns: the magnitude bits above infinity's (one mask, one compare; binary32's
    the CPU's own test, which is faster there, binary16's slower)."""
    b = np.asarray(bits).astype(fmt.uint, copy=False)
    if fmt.bits == 32:
        return np.isnan(b.view(fmt.dtype))
    return (b & np.array(fmt.exp_mask | fmt.frac_mask, fmt.uint)) > np.array(fmt.exp_mask, fmt.uint)


def same_result(fmt: Format, a_bits, b_bits) -> np.ndarray:
    """Elementwise: the same bits, or both NaN (NaN is compared as a class)."""
    a, b = np.asarray(a_bits), np.asarray(b_bits)
    same = a == b
    if same.all():
        return same
    if a.ndim == 1 and a.shape == b.shape and (a.size - np.count_nonzero(same)) * 64 < a.size:
        off = np.flatnonzero(~same)  # few differ (the usual case): only those can be two NaNs
        same[off] = is_nan_bits(fmt, a[off]) & is_nan_bits(fmt, b[off])
        return same
    return same | (is_nan_bits(fmt, a) & is_nan_bits(fmt, b))


def hex_bits(fmt: Format, bits) -> str:
    """A pattern as fixed-width hex: ``0x3c00``, ``0x3f800000``."""
    return f"0x{int(bits):0{fmt.bits // 4}x}"


def ulp_distance(fmt: Format, a_bits, b_bits) -> np.ndarray:
    """Steps between two patterns on the ordered line (int64, elementwise).

    +0 and -0 are 0 apart (check signs separately where a profile is strict);
    NaN against NaN is 0 (NaN compared as a class); NaN against a number is
    :data:`NAN_MISMATCH`.
    """
    a = np.asarray(a_bits)
    b = np.asarray(b_bits)
    na, nb = is_nan_bits(fmt, a), is_nan_bits(fmt, b)
    dist = np.abs(ordered(fmt, a) - ordered(fmt, b))
    dist = np.where(na | nb, NAN_MISMATCH, dist)
    return np.where(na & nb, 0, dist)


def to_bits(fmt: Format, arr) -> np.ndarray:
    """View a float array of ``fmt`` as its unsigned bit patterns."""
    return np.ascontiguousarray(arr, dtype=fmt.dtype).view(fmt.uint)


def from_bits(fmt: Format, bits) -> np.ndarray:
    """View unsigned bit patterns as floats of ``fmt``."""
    return np.ascontiguousarray(bits, dtype=fmt.uint).view(fmt.dtype)


def hexfloat(value: Fraction) -> str:
    """Exact C99 hex-float text of a dyadic rational, e.g. ``0x1.8p-1`` (shortest digits)."""
    q = Fraction(value)
    if q == 0:
        return "0x0p+0"
    sign = "-" if q < 0 else ""
    n, d = abs(q).numerator, abs(q).denominator
    if d & (d - 1):
        raise ValueError(f"{q} is not dyadic, so it has no exact hex-float form")
    exp = -(d.bit_length() - 1)
    # normalise to 1.xxx * 2**e
    top = n.bit_length() - 1
    e = exp + top
    frac = n - (1 << top)
    digits = ""
    if frac:
        width = (top + 3) // 4 * 4  # fraction bits padded to whole hex digits
        digits = format(frac << (width - top), "x").rjust(width // 4, "0").rstrip("0")
    return f"{sign}0x1{'.' + digits if digits else ''}p{e:+d}"


_HEX_BITS = re.compile(r"^0x[0-9a-f]+$")
_DEC_EXP = re.compile(r"e([+-]?\d+)$")
_DEC_NONZERO = re.compile(r"[1-9]")
_DEC_MANTISSA = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)$")
_EXP_LIMIT = 4000
"""Exponents (decimal or binary) past this decide the value outright: every format
overflows to inf or underflows to zero long before, and computing 10**N exactly
for a huge N would take forever."""


def _far(fmt: Format, negative: bool, huge: bool) -> int:
    """The pattern of a value far beyond the format's range: inf if huge, else zero; signed."""
    return (fmt.sign_mask if negative else 0) | (fmt.inf_bits if huge else 0)
_HEX_FLOAT = re.compile(r"^([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?p([+-]?\d+)$")


def parse_value(fmt: Format, text: str) -> tuple[int, bool]:
    """Parse one value for ``fmt``: (bit pattern, exact?).

    Accepted: a hex bit pattern (``0x3c00``, which must fit the format), a C99
    hex float (``0x1.8p-1``), a decimal (``0.1``, ``-1e-5``, ``-0``), ``inf``,
    ``-inf``, ``nan``. Decimals and hex floats are read exactly and rounded once
    to the format; ``exact`` is False when that rounding changed the value.
    """
    s = text.strip().lower().replace("_", "")
    if not s:
        raise ValueError("empty value")
    if not s.isascii() or "/" in s:
        raise ValueError(f"{text!r} is not a number (use a decimal, a hex float like 0x1.8p-1, "
                         f"a hex bit pattern like 0x3c00, inf or nan)")
    if _HEX_BITS.match(s):
        bits = int(s, 16)
        if bits >= 1 << fmt.bits:
            raise ValueError(f"{text!r} does not fit a {fmt.bits}-bit {fmt.name} pattern")
        return bits, True
    neg = s.startswith("-")
    body = s[1:] if s[:1] in "+-" else s
    if body in ("inf", "infinity"):
        return (fmt.sign_mask if neg else 0) | fmt.inf_bits, True
    if body == "nan":
        return (fmt.sign_mask if neg else 0) | fmt.qnan_bits, True
    m = _HEX_FLOAT.match(s)
    if m:
        whole, frac = m.group(2) or "0", m.group(3) or ""
        if not (m.group(2) or m.group(3)):
            raise ValueError(f"{text!r} is not a hex float")
        mantissa, exp = int(whole + frac, 16), int(m.group(4)) - 4 * len(frac)
        if abs(exp) > _EXP_LIMIT:  # far beyond every format: inf or a signed zero (or just zero)
            return _far(fmt, neg, exp > 0 and mantissa != 0), mantissa == 0
        q = Fraction(mantissa) * Fraction(2) ** exp
        q = -q if m.group(1) == "-" else q
    else:
        e = _DEC_EXP.search(s)
        if e and abs(int(e.group(1))) > _EXP_LIMIT:
            nonzero = bool(_DEC_NONZERO.search(s[:e.start()]))
            if not _DEC_MANTISSA.match(s[:e.start()]):
                raise ValueError(f"{text!r} is not a number (use a decimal, a hex float like 0x1.8p-1, "
                                 f"a hex bit pattern like 0x3c00, inf or nan)")
            return _far(fmt, neg, int(e.group(1)) > 0 and nonzero), not nonzero
        try:
            q = Fraction(s)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{text!r} is not a number (use a decimal, a hex float like 0x1.8p-1, "
                             f"a hex bit pattern like 0x3c00, inf or nan)") from None
    bits = round_to_format(fmt, q, negative_zero=neg)
    cls, _ = classify(fmt, bits)
    exact = cls is not FloatClass.INF and decode(fmt, bits) == q
    return bits, exact

"""Bit patterns of a format, for the family generators.

Conversions between bit patterns (the format's uint arrays) and values, the named patterns
(one, the largest finite value, the smallest normal, the quiet bit), negation and steps
along the ordered line, and the random draws the families share (signs, significands, dy).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from sl1conf.reference import formats
from sl1conf.reference.formats import Format

__all__ = [
    "bit_array", "float_view", "bits_of", "bits_of_text", "as_float64", "value_of",
    "one_bits", "max_bits", "min_normal_bits", "quiet_bit",
    "negated", "stepped", "ulp_at", "is_subnormal", "float_class", "concat_bits",
    "random_signs", "random_significands", "random_dy",
]


def bit_array(fmt: Format, values) -> np.ndarray:
    """Bit patterns (Python ints or arrays of them) as the format's uint array."""
    return np.asarray(values, dtype=np.int64).astype(fmt.uint)


def float_view(fmt: Format, bits) -> np.ndarray:
    return np.ascontiguousarray(bits, dtype=fmt.uint).view(fmt.dtype)


def bits_of(fmt: Format, values) -> np.ndarray:
    """Bits of binary64 values rounded once to the format (exact for the values used as such)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(values, dtype=np.float64).astype(fmt.dtype).view(fmt.uint)


def bits_of_text(fmt: Format, text: str) -> int:
    """Bits of a decimal or hex-float text (parse_value) or a fraction like "1/3", rounded once."""
    if "/" in text:
        return formats.round_to_format(fmt, Fraction(text))
    return formats.parse_value(fmt, text)[0]


def as_float64(fmt: Format, bits) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # signalling NaNs convert quietly
        return float_view(fmt, bits).astype(np.float64)


def value_of(fmt: Format, bits: int) -> float:
    """The value of one bit pattern, as a Python float (binary64: exact for fp16 and fp32)."""
    return float(as_float64(fmt, bit_array(fmt, [bits]))[0])


def one_bits(fmt: Format) -> int:
    return fmt.emax << fmt.frac_bits


def max_bits(fmt: Format) -> int:
    return fmt.inf_bits - 1


def min_normal_bits(fmt: Format) -> int:
    return 1 << fmt.frac_bits


def quiet_bit(fmt: Format) -> int:
    return 1 << (fmt.frac_bits - 1)


def negated(fmt: Format, bits) -> "int | np.ndarray":
    """Sign flipped (exact negation, NaN payload kept)."""
    if isinstance(bits, np.ndarray):
        return (bits ^ np.array(fmt.sign_mask, fmt.uint)).astype(fmt.uint)
    return int(bits) ^ fmt.sign_mask


def stepped(fmt: Format, bits: int, k: int) -> int:
    """The value k steps along the ordered line (-inf .. -0=+0 .. +inf): ``formats.ordered`` for
    one pattern, in Python integers (generation calls it tens of thousands of times)."""
    b = int(bits)
    mag = b & (fmt.exp_mask | fmt.frac_mask)
    o = (-mag if b & fmt.sign_mask else mag) + k
    return o if o >= 0 else (-o) | fmt.sign_mask


def ulp_at(fmt: Format, bits):
    """The spacing of the format at a finite value (its ulp), as binary64: one pattern (a float)
    or an array of them (an array; powers of two, so exactly what the scalar form gives)."""
    if np.ndim(bits) == 0:
        field = (int(bits) & fmt.exp_mask) >> fmt.frac_bits
        return 2.0 ** (max(field, 1) - fmt.emax - fmt.frac_bits)
    field = (np.asarray(bits).astype(np.int64) & fmt.exp_mask) >> fmt.frac_bits
    return np.exp2((np.maximum(field, 1) - fmt.emax - fmt.frac_bits).astype(np.float64))


def is_subnormal(fmt: Format, bits) -> np.ndarray:
    b = np.asarray(bits).astype(fmt.uint)
    return ((b & fmt.exp_mask) == 0) & ((b & fmt.frac_mask) != 0)


def float_class(fmt: Format, bits: int) -> formats.FloatClass:
    return formats.classify(fmt, int(bits))[0]


def concat_bits(fmt: Format, *parts) -> np.ndarray:
    return np.concatenate([np.asarray(p, dtype=np.int64).reshape(-1) for p in parts]).astype(fmt.uint)


# --------------------------------------------------------------------------
# Random draws
# --------------------------------------------------------------------------

def random_signs(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.where(rng.random(n) < 0.5, -1.0, 1.0)


def random_significands(fmt: Format, rng: np.random.Generator, n: int) -> np.ndarray:
    """Random significands in [1, 2) with every fraction bit random (binary64)."""
    return 1.0 + rng.integers(0, 1 << fmt.frac_bits, n) / float(1 << fmt.frac_bits)


def random_dy(fmt: Format, rng: np.random.Generator, n: int, *, big: bool = True) -> np.ndarray:
    """Finite normal dy: +-1, full-significand values on 2**[-6, 6], some +-max."""
    vals = random_signs(rng, n) * random_significands(fmt, rng, n) * 2.0 ** rng.integers(-6, 7, n)
    bits = bits_of(fmt, vals)
    kind = rng.random(n)
    one = bit_array(fmt, np.where(rng.random(n) < 0.5, one_bits(fmt), one_bits(fmt) | fmt.sign_mask))
    bits = np.where(kind < 0.15, one, bits)
    if big:
        mx = bit_array(fmt, np.where(rng.random(n) < 0.5, max_bits(fmt), max_bits(fmt) | fmt.sign_mask))
        bits = np.where(kind > 0.96, mx, bits)
    return bits.astype(fmt.uint)

"""Conformance tests for ``sl1conf.reference.formats`` (exact IEEE binary16/binary32 helpers).

Every expected value comes from a source independent of the module under test:

* numpy's own conversions: float16/float32 -> float64 is exact; float64 -> float16 and
  float64 -> float32 (``astype``) round correctly, to nearest with ties to even;
* ``struct``, ``float.hex``/``float.fromhex`` and ``fractions.Fraction``;
* :func:`_ref_round`, a rounding written here from first principles: it bisects the
  monotonic line of non-negative bit patterns (values read back through numpy) for the two
  neighbours of an exact rational and picks one by exact Fraction comparison with their
  midpoint (ties to the even pattern);
* hand derivations, spelled out in comments.
"""

from __future__ import annotations

import re
import struct
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sl1conf.reference import formats as F
from sl1conf.reference.formats import FP16, FP32, FloatClass

# --------------------------------------------------------------------------------------
# Independent ground truth
# --------------------------------------------------------------------------------------

ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
F16 = ALL16.view(np.float16)
with np.errstate(invalid="ignore"):
    V16 = F16.astype(np.float64)  # exact widening (NaN stays NaN)
NAN16 = np.isnan(F16)
INF16 = np.isinf(F16)
FINITE16 = ~NAN16 & ~INF16

# Every distinct non-NaN binary16 value, ascending (-0 and +0 collapse into one 0.0).
SORTED16 = np.unique(V16[~NAN16])
assert SORTED16.size == 2 * (31 * 1024 - 1) + 1 + 2  # finite distinct values plus +-inf


def _uint_of(dtype):
    return {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32}[np.dtype(dtype)]


def _bits_of(dtype, x) -> int:
    """Bit pattern of a float value of ``dtype`` (via numpy's view)."""
    return int(np.array(x, dtype=dtype).view(_uint_of(dtype)))


def _float_of(dtype, bits: int) -> float:
    """Python float (exact widening) of a bit pattern of ``dtype``."""
    return float(np.array(bits, dtype=_uint_of(dtype)).view(dtype))


def _ref_round(dtype, q: Fraction, negative_zero: bool = False) -> int:
    """Correct round-to-nearest-even of the exact rational ``q`` into ``dtype`` (float16/32).

    Non-negative patterns 0 .. inf are monotonic in value, so bisect for the largest pattern
    ``lo`` with value <= |q|; the would-be value past the largest finite one is
    2**maxexp (numpy's finfo), which IEEE uses for the overflow threshold: |q| at or past
    max_finite + half an ulp (the midpoint with 2**maxexp) rounds to inf, and that tie
    goes to inf because max_finite's pattern is odd and inf's is even.
    """
    dtype = np.dtype(dtype)
    nbits = dtype.itemsize * 8
    inf_bits = _bits_of(dtype, np.inf)
    top = Fraction(2) ** int(np.finfo(dtype).maxexp)

    def val(b: int) -> Fraction:
        return top if b == inf_bits else Fraction(_float_of(dtype, b))

    q = Fraction(q)
    neg = q < 0 or (q == 0 and negative_zero)
    a = abs(q)
    if a >= top:
        r = inf_bits
    else:
        lo, hi = 0, inf_bits  # invariant: val(lo) <= a < val(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if val(mid) <= a:
                lo = mid
            else:
                hi = mid
        if val(lo) == a:
            r = lo
        else:
            m = (val(lo) + val(hi)) / 2
            r = lo if a < m else hi if a > m else (lo if lo % 2 == 0 else hi)
    return r | ((1 << (nbits - 1)) if neg else 0)


def _np_round(dtype, x: float) -> int:
    """numpy's correctly rounded float64 -> dtype conversion, as a bit pattern."""
    with np.errstate(over="ignore"):
        return int(np.array([x], dtype=np.float64).astype(dtype).view(_uint_of(dtype))[0])


# --------------------------------------------------------------------------------------
# Format constants and format_by_name
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt, dtype", [(FP16, np.float16), (FP32, np.float32)])
def test_format_constants_match_numpy_finfo(fmt, dtype):
    fi = np.finfo(dtype)
    assert fmt.precision == fi.nmant + 1
    assert fmt.emax == fi.maxexp - 1
    assert fmt.emin == fi.minexp
    assert fmt.bits == np.dtype(dtype).itemsize * 8
    assert fmt.max_finite == Fraction(float(fi.max))
    assert fmt.min_normal == Fraction(float(fi.smallest_normal))
    assert fmt.min_subnormal == Fraction(float(fi.smallest_subnormal))
    assert fmt.inf_bits == _bits_of(dtype, np.inf)
    assert fmt.sign_mask == _bits_of(dtype, -0.0)


def test_format_constants_by_hand():
    # binary16: 1 sign, 5 exponent, 10 fraction bits; quiet NaN = exponent all ones and the top
    # fraction bit: 0b0_11111_1000000000 = 0x7e00.  binary32: 0x7f800000 | 1 << 22 = 0x7fc00000.
    assert (FP16.exp_mask, FP16.frac_mask, FP16.qnan_bits) == (0x7C00, 0x03FF, 0x7E00)
    assert (FP32.exp_mask, FP32.frac_mask, FP32.qnan_bits) == (0x7F800000, 0x007FFFFF, 0x7FC00000)
    assert FP16.max_finite == 65504 and FP32.max_finite == (2**24 - 1) * 2**104


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("fp16", FP16), ("half", FP16), ("float16", FP16), ("binary16", FP16), ("hp", FP16),
        ("f16", FP16), (" HALF ", FP16), ("Float16", FP16),
        ("fp32", FP32), ("float", FP32), ("float32", FP32), ("binary32", FP32), ("fp", FP32),
        ("f32", FP32), ("FP32\n", FP32),
        (np.float16, FP16), (np.dtype(np.float16), FP16), (np.dtype("<f2"), FP16),
        (np.uint16, FP16), (np.dtype(np.uint16), FP16),
        (np.float32, FP32), (np.dtype(np.float32), FP32), (np.dtype("f4"), FP32),
        (np.uint32, FP32),
        (FP16, FP16), (FP32, FP32),
    ],
)
def test_format_by_name(name, fmt):
    assert F.format_by_name(name) is fmt


@pytest.mark.parametrize(
    "name", ["fp64", "double", "bf16", "bfloat16", "", "fp 16", "int8", np.float64,
             np.dtype(np.float64), np.int16, np.dtype(np.uint8), float]
)
def test_format_by_name_unknown_raises(name):
    with pytest.raises(ValueError, match="unknown format|unsupported dtype"):
        F.format_by_name(name)


# --------------------------------------------------------------------------------------
# binary16, exhaustively
# --------------------------------------------------------------------------------------


def _expected_class16() -> list:
    quiet = (ALL16 & 0x0200) != 0  # the top fraction bit
    mag = np.abs(V16)
    out = []
    for i in range(1 << 16):
        if NAN16[i]:
            out.append(FloatClass.QNAN if quiet[i] else FloatClass.SNAN)
        elif INF16[i]:
            out.append(FloatClass.INF)
        elif mag[i] == 0:
            out.append(FloatClass.ZERO)
        elif mag[i] < 2.0**-14:
            out.append(FloatClass.SUBNORMAL)
        else:
            out.append(FloatClass.NORMAL)
    return out


def test_fp16_classify_exhaustive():
    expected = _expected_class16()
    signs = np.signbit(F16).astype(int)
    bad = [(b, F.classify(FP16, b), (expected[b], int(signs[b])))
           for b in range(1 << 16) if F.classify(FP16, b) != (expected[b], int(signs[b]))]
    assert not bad, bad[:10]
    # counts by hand: 2 zeros, 2*1023 subnormals, 2*30*1024 normals, 2 infs; NaNs: 2*512
    # quiet (top fraction bit set, the other 9 bits anything) and 2*511 signalling (top bit
    # clear, the other 9 bits not all zero).
    counts = {c: expected.count(c) for c in FloatClass}
    assert counts == {FloatClass.ZERO: 2, FloatClass.SUBNORMAL: 2046, FloatClass.NORMAL: 61440,
                      FloatClass.INF: 2, FloatClass.QNAN: 1024, FloatClass.SNAN: 1022}


def test_fp16_classify_accepts_numpy_scalars_and_rejects_out_of_range():
    assert F.classify(FP16, np.uint16(0x3C00)) == (FloatClass.NORMAL, 0)
    assert F.classify(FP16, np.int64(0xFC00)) == (FloatClass.INF, 1)
    for bad in (-1, 1 << 16, 1 << 20):
        with pytest.raises(ValueError):
            F.classify(FP16, bad)
    with pytest.raises(ValueError):
        F.classify(FP32, 1 << 32)


def test_fp16_decode_exhaustive():
    for b in range(1 << 16):
        if FINITE16[b]:
            assert F.decode(FP16, b) == Fraction(float(V16[b])), hex(b)
        else:
            with pytest.raises(ValueError):
                F.decode(FP16, b)


def test_fp16_decode_parts_exhaustive():
    expected = _expected_class16()
    for b in range(1 << 16):
        cls, sign, man, exp = F.decode_parts(FP16, b)
        assert (cls, sign) == (expected[b], int(np.signbit(F16[b]))), hex(b)
        if not FINITE16[b]:
            assert (man, exp) == (0, 0), hex(b)
            continue
        v = Fraction(float(V16[b]))
        assert (-1) ** sign * man * Fraction(2) ** exp == v, hex(b)
        if cls is FloatClass.NORMAL:
            # an 11-bit significand with its implicit bit: 2**10 <= man < 2**11
            assert 1 << 10 <= man < 1 << 11, hex(b)
        else:  # zero and subnormal: significand without implicit bit, fixed exponent -14 - 10
            assert man < 1 << 10 and exp == -24, hex(b)


def test_fp16_round_trip_exhaustive():
    bad = []
    for b in range(1 << 16):
        if NAN16[b]:
            continue
        sign = bool(np.signbit(F16[b]))
        # inf has no finite value: round a magnitude far past the overflow threshold instead.
        q = F.decode(FP16, b) if FINITE16[b] else Fraction(-(2**40) if sign else 2**40)
        got = F.round_to_format(FP16, q, negative_zero=sign)
        if got != b:
            bad.append((hex(b), hex(got)))
    assert not bad, bad[:10]


def _fp16_pairs():
    """For b in 0..0x7bff: (b, value(b), value(b+1)) with value(0x7c00) the would-be 2**16."""
    b = np.arange(0x7C00, dtype=np.int64)
    lo = V16[b]
    hi = np.append(V16[1:0x7C00], 65536.0)  # past 65504 the next would-be value is 2**16
    return b, lo, hi


def test_fp16_pairs_are_adjacent():
    # sanity of the setup: the positive finite patterns are the ascending distinct values
    b, lo, hi = _fp16_pairs()
    assert np.all(hi > lo)
    assert np.array_equal(np.concatenate([[0.0], hi[:-1]]), SORTED16[SORTED16 >= 0][:-1])


def test_fp16_midpoints_exhaustive_against_numpy():
    b, lo, hi = _fp16_pairs()
    mid = (lo + hi) / 2  # exact in float64: two 11-bit values, at most 41 bits apart
    assert np.all((mid > lo) & (mid < hi))
    assert mid[-1] == 65520.0  # the overflow threshold
    for sgn, sign_bit in ((1.0, 0), (-1.0, 0x8000)):
        with np.errstate(over="ignore"):
            expected = (sgn * mid).astype(np.float16).view(np.uint16).astype(np.int64)
        # numpy's answer is one of the two neighbours and the even one (ties to even)
        assert np.all((expected == (b | sign_bit)) | (expected == ((b + 1) | sign_bit)))
        assert np.all(expected % 2 == 0)
        bad = []
        for i in range(b.size):
            q = Fraction(float(sgn * mid[i]))
            got = F.round_to_format(FP16, q)
            if got != expected[i]:
                bad.append((str(q), hex(expected[i]), hex(got)))
        assert not bad, bad[:10]
    assert F.round_to_format(FP16, Fraction(65520)) == 0x7C00
    assert F.round_to_format(FP16, Fraction(-65520)) == 0xFC00


def test_fp16_midpoints_plus_minus_a_hair_exhaustive():
    """m + h rounds up to the upper neighbour and m - h to the lower one (away from / toward
    zero for negative values), where h is far below float64 resolution at m."""
    b, lo, hi = _fp16_pairs()
    mid = (lo + hi) / 2
    hair = Fraction(1, 2**200)
    bad = []
    for i in range(b.size):
        m = Fraction(float(mid[i]))
        h = m * hair
        assert float(m + h) == float(m - h) == float(m)  # float64 could not tell them apart
        lower, upper = int(b[i]), int(b[i]) + 1  # upper of 0x7bff is 0x7c00 = inf
        for q, want in (
            (m + h, upper), (m - h, lower),
            # negative side: -(m + h) rounds to -upper, -(m - h) to -lower (-0 for the lowest
            # pair, since a nonzero value rounding to zero keeps its sign)
            (-(m + h), upper | 0x8000), (-(m - h), lower | 0x8000),
        ):
            got = F.round_to_format(FP16, q)
            if got != want:
                bad.append((str(q), hex(want), hex(got)))
    assert not bad, bad[:10]


def test_fp16_hair_above_a_tie_that_float64_would_hide():
    q = 1 + Fraction(1, 2**11) + Fraction(1, 2**60)
    # going through float64 first gives the exact tie 1 + 2**-11, which rounds to even 0x3c00
    assert float(q) == 1 + 2**-11 and _np_round(np.float16, float(q)) == 0x3C00
    assert F.round_to_format(FP16, q) == 0x3C01
    assert F.round_to_format(FP16, -q) == 0xBC01
    q2 = 1 + Fraction(3, 2**11) - Fraction(1, 2**60)  # a hair below the tie that goes up to 0x3c02
    assert float(q2) == 1 + 3 * 2**-11 and _np_round(np.float16, float(q2)) == 0x3C02
    assert F.round_to_format(FP16, q2) == 0x3C01


@settings(max_examples=300)
@given(num=st.integers(-(2**70), 2**70), den=st.integers(1, 2**70), scale=st.integers(-40, 20))
def test_fp16_arbitrary_rationals_against_reference(num, den, scale):
    q = Fraction(num, den) * Fraction(2) ** scale
    assert F.round_to_format(FP16, q) == _ref_round(np.float16, q)


def test_fp16_zero_sign_rules():
    assert F.round_to_format(FP16, 0) == 0x0000
    assert F.round_to_format(FP16, Fraction(0), negative_zero=True) == 0x8000
    # 2**-30 is far below half the smallest subnormal 2**-24: rounds to a zero of its own sign
    assert F.round_to_format(FP16, Fraction(-1, 2**30)) == 0x8000
    assert F.round_to_format(FP16, Fraction(1, 2**30), negative_zero=True) == 0x0000
    assert F.round_to_format(FP16, Fraction(1, 2**30)) == 0x0000


def test_round_to_format_rejects_host_floats():
    with pytest.raises(TypeError):
        F.round_to_format(FP16, 1.5)
    with pytest.raises(TypeError):
        F.round_to_format(FP32, np.float64(1.5))


# --------------------------------------------------------------------------------------
# sticky
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "q, plain, sticky",
    [
        # ties: plain goes to even, sticky away from zero
        (1 + Fraction(1, 2**11), 0x3C00, 0x3C01),      # between 0x3c00 and 0x3c01
        (-(1 + Fraction(1, 2**11)), 0xBC00, 0xBC01),
        (1 + Fraction(3, 2**11), 0x3C02, 0x3C02),      # between 0x3c01 and 0x3c02: even is away
        (Fraction(1, 2**25), 0x0000, 0x0001),          # half the smallest subnormal
        (Fraction(-1, 2**25), 0x8000, 0x8001),
        (Fraction(3, 2**25), 0x0002, 0x0002),          # between subnormals 1 and 2 (units 2**-24)
        (Fraction(2**-14) - Fraction(1, 2**25), 0x0400, 0x0400),  # below min normal: tie, even
        (2048 + Fraction(1), 0x6800, 0x6801),          # ulp at 2048 is 2: 2049 is a tie
        (Fraction(65520), 0x7C00, 0x7C00),             # overflow threshold
        # exact values stay (the true value lies within a far-finer ulp above them)
        (Fraction(1), 0x3C00, 0x3C00),
        (Fraction(65504), 0x7BFF, 0x7BFF),
        (Fraction(1, 2**24), 0x0001, 0x0001),
        (Fraction(-3, 4), 0xBA00, 0xBA00),
        # below a tie stays, above a tie goes up, either way
        (1 + Fraction(1, 2**12), 0x3C00, 0x3C00),
        (1 + Fraction(1, 2**11) - Fraction(1, 2**20), 0x3C00, 0x3C00),
        (-(1 + Fraction(1, 2**11) - Fraction(1, 2**20)), 0xBC00, 0xBC00),
        (1 + Fraction(1, 2**11) + Fraction(1, 2**20), 0x3C01, 0x3C01),
        (Fraction(1, 2**26), 0x0000, 0x0000),          # a quarter of the smallest subnormal
    ],
)
def test_sticky(q, plain, sticky):
    # plain results by hand; cross-check them with the reference rounding too
    assert _ref_round(np.float16, q) == plain
    assert F.round_to_format(FP16, q) == plain
    assert F.round_to_format(FP16, q, sticky=True) == sticky


def test_sticky_on_every_fp16_midpoint_goes_away_from_zero():
    b, lo, hi = _fp16_pairs()
    mid = (lo + hi) / 2
    bad = []
    for i in range(b.size):
        m = Fraction(float(mid[i]))
        for q, want in ((m, int(b[i]) + 1), (-m, (int(b[i]) + 1) | 0x8000)):
            got = F.round_to_format(FP16, q, sticky=True)
            if got != want:
                bad.append((str(q), hex(want), hex(got)))
    assert not bad, bad[:10]


def test_sticky_zero_raises():
    with pytest.raises(ValueError):
        F.round_to_format(FP16, 0, sticky=True)


# --------------------------------------------------------------------------------------
# binary32, with hypothesis
# --------------------------------------------------------------------------------------

bits32 = st.one_of(
    st.integers(0, 2**32 - 1),
    # concentrate on the edges: zeros/subnormals, around max finite and inf, NaNs
    st.integers(0, 0x10),
    st.integers(0x007FFFF0, 0x00800010),
    st.integers(0x80000000, 0x80000010),
    st.integers(0x7F7FFFF0, 0x7FFFFFFF),
    st.sampled_from([0, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,
                     0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFBFFFFF,
                     0x3F800000, 0x3F800001]),
)


def _unpack32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b))[0]


@settings(max_examples=1000)
@given(b=bits32)
def test_fp32_classify_decode_round_trip(b):
    f = np.array(b, dtype=np.uint32).view(np.float32)
    cls, sign = F.classify(FP32, b)
    assert sign == int(np.signbit(f))
    if np.isnan(f):
        assert cls is (FloatClass.QNAN if b & (1 << 22) else FloatClass.SNAN)
        with pytest.raises(ValueError):
            F.decode(FP32, b)
        return
    if np.isinf(f):
        assert cls is FloatClass.INF
        with pytest.raises(ValueError):
            F.decode(FP32, b)
        assert F.round_to_format(FP32, Fraction(-(2**200) if sign else 2**200)) == b
        return
    x = _unpack32(b)
    assert float(f) == x or (x == 0 and float(f) == 0)
    mag = abs(x)
    assert cls is (FloatClass.ZERO if mag == 0 else
                   FloatClass.SUBNORMAL if mag < 2.0**-126 else FloatClass.NORMAL)
    v = F.decode(FP32, b)
    assert v == Fraction(x)
    c2, s2, man, exp = F.decode_parts(FP32, b)
    assert (c2, s2) == (cls, sign) and (-1) ** sign * man * Fraction(2) ** exp == v
    assert F.round_to_format(FP32, v, negative_zero=bool(sign)) == b


# Dyadic rationals m * 2**e that float64 holds exactly (|m| < 2**53, result a float64 normal).
_man53 = st.one_of(
    st.integers(-(2**53 - 1), 2**53 - 1),
    st.integers(2**24, 2**25 - 1),  # 25 significant bits: odd ones are exact fp32 ties
    st.integers(2**25, 2**26 - 1),  # 26 bits: ties and quarter points
    st.integers(-(2**26 - 1), -(2**25)),
    st.integers(-(2**12), 2**12),
)
_dyadic64 = st.builds(
    lambda m, e: Fraction(m) * Fraction(2) ** e,
    _man53,
    st.one_of(
        st.integers(-149 - 60, -149 + 30),  # around the subnormal range
        st.integers(128 - 60, 128 + 5),  # around overflow (2**128)
        st.integers(-180, 140),
        st.integers(-900, 900),
    ),
)


@settings(max_examples=1500)
@given(q=_dyadic64)
@example(q=Fraction(2**24 + 1, 2**24))  # tie at 1 + 2**-24 -> 1.0
@example(q=Fraction(2**128 - 2**103))  # max finite + half ulp: tie -> inf
@example(q=Fraction(2**128 - 2**103 - 2**75))  # a little below it -> max finite
@example(q=Fraction(1, 2**150))  # half the smallest subnormal: tie -> 0
@example(q=Fraction(3, 2**151))  # three quarters of it -> smallest subnormal
@example(q=Fraction(-1, 2**150))
def test_fp32_dyadic_against_numpy(q):
    x = float(q)
    assert Fraction(x) == q  # the strategy stays within float64's exact range
    want = _np_round(np.float32, x)
    assert F.round_to_format(FP32, q) == want
    assert _ref_round(np.float32, q) == want  # the reference agrees with numpy too


_big = st.integers(1, 2**130)
_rational = st.builds(
    lambda s, n, d, e: s * Fraction(n, d) * Fraction(2) ** e,
    st.sampled_from([1, -1]),
    _big,
    _big,
    st.one_of(st.integers(-175, -110), st.integers(110, 140), st.integers(-300, 300)),
)


@settings(max_examples=500)
@given(q=_rational)
@example(q=Fraction(2**128 - 2**103 - 1))  # just below the overflow tie -> max finite
@example(q=Fraction(-(2**128 - 2**103 - 1)))
@example(q=Fraction(1, 2**150) + Fraction(1, 3 * 2**200))  # just above half min subnormal
def test_fp32_arbitrary_rationals_against_reference(q):
    assert F.round_to_format(FP32, q) == _ref_round(np.float32, q)


@settings(max_examples=500)
@given(
    b=st.integers(0, 0x7F7FFFFF),  # lower neighbour: any finite non-negative pattern
    side=st.sampled_from([-1, 0, 1]),
    den=st.integers(3, 2**200),
    neg=st.booleans(),
)
def test_fp32_near_ties_with_arbitrary_denominators(b, side, den, neg):
    lo = Fraction(_unpack32(b))
    hi = Fraction(2**128) if b == 0x7F7FFFFF else Fraction(_unpack32(b + 1))  # would-be next
    q = (lo + hi) / 2 + side * (hi - lo) / den  # side 0: the exact tie
    # expected from the ordering alone: above -> upper, below -> lower, tie -> even pattern
    want = b + 1 if side > 0 else b if side < 0 else (b if b % 2 == 0 else b + 1)
    if neg:
        q, want = -q, want | 0x80000000
    assert F.round_to_format(FP32, q) == want


# --------------------------------------------------------------------------------------
# mpmath inputs
# --------------------------------------------------------------------------------------


@settings(max_examples=300)
@given(man=st.integers(-(2**90), 2**90), exp=st.integers(-260, 150))
def test_fp32_mpf_and_raw_tuples_exact(man, exp):
    q = Fraction(man) * Fraction(2) ** exp
    want = _ref_round(np.float32, q)
    with mpmath.workprec(200):  # 200 bits hold a 91-bit integer exactly; ldexp is exact
        x = mpmath.ldexp(mpmath.mpf(man), exp)
        assert x == mpmath.mpf(man) * mpmath.mpf(2) ** exp
    assert F.round_to_format(FP32, x) == want
    raw = mpmath.libmp.from_man_exp(man, exp)  # no prec: exact (normalized) raw tuple
    assert F.round_to_format(FP32, raw) == want


@pytest.mark.parametrize(
    "value, want",
    [
        (mpmath.mpf("-1.5"), struct.unpack("<I", struct.pack("<f", -1.5))[0]),  # 0xbfc00000
        (mpmath.mpf(-1), 0xBF800000),
        (mpmath.mpf("1.5"), 0x3FC00000),
        ((1, 3, -1, 2), 0xBFC00000),  # libmp raw tuple (sign, man, exp, bc) = -3 * 2**-1
        ((0, 3, -1, 2), 0x3FC00000),
        (mpmath.mpf(0), 0x00000000),
        # -2**-160 is far below half the smallest subnormal 2**-149: a negative zero
        (-mpmath.ldexp(mpmath.mpf(1), -160), 0x80000000),
        (-mpmath.ldexp(mpmath.mpf(1), 200), 0xFF800000),
    ],
)
def test_fp32_mpf_sign_kept(value, want):
    assert F.round_to_format(FP32, value) == want


def test_fp16_mpf_negative():
    assert F.round_to_format(FP16, mpmath.mpf("-0.75")) == 0xBA00  # -1.5 * 2**-1
    assert F.round_to_format(FP16, mpmath.mpf(-65520)) == 0xFC00


@pytest.mark.parametrize("value", [mpmath.inf, -mpmath.inf, mpmath.nan])
def test_mpf_inf_nan_raise(value):
    with pytest.raises(ValueError):
        F.round_to_format(FP32, value)
    with pytest.raises(ValueError):
        F.round_to_format(FP16, value._mpf_)


# --------------------------------------------------------------------------------------
# ordered / ulp_distance
# --------------------------------------------------------------------------------------


def _rank16(bits) -> np.ndarray:
    """Index of each non-NaN pattern's value among the distinct non-NaN values."""
    return np.searchsorted(SORTED16, V16[np.asarray(bits)])


def test_fp16_ordered_exhaustive_is_rank_on_the_value_line():
    nn = ALL16[~NAN16]
    got = F.ordered(FP16, nn)
    zero_rank = int(np.searchsorted(SORTED16, 0.0))
    assert np.array_equal(got, _rank16(nn) - zero_rank)
    assert int(F.ordered(FP16, np.uint16(0x8000))) == int(F.ordered(FP16, np.uint16(0))) == 0
    # NaN patterns land past inf (either sign) and must be masked by the caller
    nan_ord = F.ordered(FP16, ALL16[NAN16])
    assert np.all(np.abs(nan_ord) > 0x7C00)


def test_fp16_ulp_distance_exhaustive_against_zero_and_inf():
    nn = ALL16[~NAN16]
    r = _rank16(nn)
    for ref in (0x0000, 0x8000, 0x7C00, 0xFC00, 0x3C00, 0x0001):
        want = np.abs(r - _rank16([ref])[0])
        assert np.array_equal(F.ulp_distance(FP16, nn, np.full_like(nn, ref)), want), hex(ref)
        assert np.array_equal(F.ulp_distance(FP16, np.uint16(ref), nn), want), hex(ref)


@pytest.mark.parametrize(
    "fmt, a, b, want",
    [
        (FP16, 0x0000, 0x8000, 0),      # +0 and -0
        (FP32, 0x00000000, 0x80000000, 0),
        (FP16, 0x7BFF, 0x7C00, 1),      # max finite to inf
        (FP16, 0xFBFF, 0xFC00, 1),
        (FP32, 0x7F7FFFFF, 0x7F800000, 1),
        (FP16, 0x0001, 0x0000, 1),      # smallest subnormal to +0 / -0
        (FP16, 0x0001, 0x8000, 1),
        (FP16, 0x0001, 0x8001, 2),      # to -smallest subnormal, across one zero
        (FP32, 0x00000001, 0x80000001, 2),
        (FP16, 0x03FF, 0x0400, 1),      # largest subnormal to smallest normal
        (FP16, 0x3BFF, 0x3C00, 1),      # across a binade
        (FP16, 0x3C00, 0x3C00, 0),
        (FP16, 0x7C00, 0xFC00, 2 * 0x7C00),  # 0x7c00 steps each side of zero
        (FP32, 0x7F800000, 0xFF800000, 2 * 0x7F800000),
        (FP16, 0x7E00, 0xFE01, 0),      # NaN vs NaN, any payloads and signs
        (FP16, 0x7C01, 0x7FFF, 0),
        (FP32, 0x7FC00000, 0xFF800001, 0),
        (FP16, 0x7E00, 0x7C00, F.NAN_MISMATCH),
        (FP16, 0x0000, 0xFE00, F.NAN_MISMATCH),
        (FP32, 0x3F800000, 0x7F800001, F.NAN_MISMATCH),
    ],
)
def test_ulp_distance_cases(fmt, a, b, want):
    assert int(F.ulp_distance(fmt, a, b)) == want
    assert int(F.ulp_distance(fmt, b, a)) == want


def test_nan_mismatch_exceeds_every_real_distance():
    assert F.NAN_MISMATCH > 2 * 0x7F800000


def test_fp16_ulp_distance_all_nan_pairs_and_nan_vs_numbers():
    nans = ALL16[NAN16]
    assert nans.size == 2 * 1023
    a, b = np.meshgrid(nans, nans)
    assert np.all(F.ulp_distance(FP16, a.ravel(), b.ravel()) == 0)
    rng = np.random.default_rng(20240611)
    nums = np.concatenate([
        ALL16[~NAN16][rng.integers(0, int((~NAN16).sum()), 500)],
        np.array([0, 0x8000, 0x7C00, 0xFC00, 0x7BFF, 0x0001], dtype=np.uint16),
    ])
    a, b = np.meshgrid(nans, nums)
    assert np.all(F.ulp_distance(FP16, a.ravel(), b.ravel()) == F.NAN_MISMATCH)
    assert np.all(F.ulp_distance(FP16, b.ravel(), a.ravel()) == F.NAN_MISMATCH)


def _count_between_plus_one(a_bits, b_bits) -> np.ndarray:
    va, vb = V16[a_bits], V16[b_bits]
    lo, hi = np.minimum(va, vb), np.maximum(va, vb)
    strictly_between = np.searchsorted(SORTED16, hi, "left") - np.searchsorted(SORTED16, lo, "right")
    return np.where(lo == hi, 0, strictly_between + 1)


def test_fp16_ulp_distance_random_pairs_count_between():
    rng = np.random.default_rng(7)
    nn = ALL16[~NAN16]
    a = nn[rng.integers(0, nn.size, 200_000)]
    b = nn[rng.integers(0, nn.size, 200_000)]
    # and near pairs (small distances, often across zero)
    c = nn[rng.integers(0, nn.size, 50_000)]
    d = ALL16[np.clip(c.astype(np.int64) + rng.integers(-3, 4, c.size), 0, 0xFFFF)]
    d = np.where(NAN16[d], c, d)
    z = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x8002], dtype=np.uint16)
    za, zb = (g.ravel() for g in np.meshgrid(z, z))
    a, b = np.concatenate([a, c, za]), np.concatenate([b, d, zb])
    assert np.array_equal(F.ulp_distance(FP16, a, b), _count_between_plus_one(a, b))


@settings(max_examples=500)
@given(
    b=st.integers(0, 2**32 - 1).filter(lambda b: (b & 0x7FFFFFFF) < 0x7F800000),
    k=st.integers(0, 40),
    up=st.booleans(),
)
@example(b=0x80000003, k=6, up=True)  # across zero
@example(b=0x7F7FFFFD, k=3, up=True)  # to inf
def test_fp32_ulp_distance_by_nextafter_stepping(b, k, up):
    x = np.array(b, dtype=np.uint32).view(np.float32)[()]
    target = np.float32(np.inf if up else -np.inf)
    y = x
    steps = 0
    while steps < k and not np.isinf(y):
        with np.errstate(over="ignore"):
            y = np.nextafter(y, target)  # -0 and +0 are one value: stepping skips the other zero
        steps += 1
    yb = int(np.array(y, dtype=np.float32).view(np.uint32))
    assert int(F.ulp_distance(FP32, b, yb)) == steps
    assert int(F.ulp_distance(FP32, np.uint32(yb), np.uint32(b))) == steps


def test_to_bits_from_bits():
    vals = np.array([1.0, -2.5, 65504.0, 2**-24, -0.0], dtype=np.float16)
    assert F.to_bits(FP16, vals).tolist() == [0x3C00, 0xC100, 0x7BFF, 0x0001, 0x8000]
    assert np.array_equal(F.from_bits(FP16, [0x3C00, 0xC100]), np.array([1.0, -2.5], np.float16))
    xs = [1.0, -1.5, 2.0**-149, 3.4028234663852886e38]
    assert F.to_bits(FP32, xs).tolist() == [struct.unpack("<I", struct.pack("<f", x))[0] for x in xs]


# --------------------------------------------------------------------------------------
# parse_value
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fmt, text, bits, exact",
    [
        (FP16, "0x3c00", 0x3C00, True),
        (FP16, "0x3C00", 0x3C00, True),
        (FP16, " 0xffff ", 0xFFFF, True),
        (FP16, "0x7e01", 0x7E01, True),          # a NaN pattern, taken as is
        (FP32, "0x3f800000", 0x3F800000, True),
        (FP32, "0x10000", 0x10000, True),
        (FP16, "0x1.8p-1", 0x3A00, True),        # 0.75 = 1.5 * 2**-1: exponent field 14, frac 0x200
        (FP16, "-0x1.8p-1", 0xBA00, True),
        (FP16, "0x1p-24", 0x0001, True),         # smallest subnormal
        (FP16, "0x1p-25", 0x0000, False),        # its half: tie to even zero
        (FP16, "0x1.ffcp15", 0x7BFF, True),      # 65504
        (FP16, "0x1.ffep15", 0x7C00, False),     # 65520: overflow threshold
        (FP16, "0x.8p1", 0x3C00, True),          # 0.5 * 2 = 1
        (FP32, "0x1.000001p0", 0x3F800000, False),  # 1 + 2**-24: tie to even 1.0
        (FP32, "0x1.000003p0", 0x3F800002, False),  # 1 + 3 * 2**-24: tie to even 0x3f800002
        (FP32, "0x1p-149", 0x00000001, True),
        # 0.1 = 1.6 * 2**-4: exponent field 11, fraction 0.6 * 1024 = 614.4 -> 614 = 0x266
        (FP16, "0.1", 0x2E66, False),
        (FP16, "1", 0x3C00, True),
        (FP16, "-2.5", 0xC100, True),
        (FP16, "1e-8", 0x0000, False),
        (FP16, "-1e-8", 0x8000, False),
        (FP16, "-0", 0x8000, True),
        (FP16, "0", 0x0000, True),
        (FP16, "-0.0", 0x8000, True),
        (FP32, "-0", 0x80000000, True),
        (FP16, "65504", 0x7BFF, True),
        (FP16, "1e5", 0x7C00, False),
        (FP16, "inf", 0x7C00, True),
        (FP16, "Infinity", 0x7C00, True),
        (FP16, "-inf", 0xFC00, True),
        (FP16, "+inf", 0x7C00, True),
        (FP32, "-inf", 0xFF800000, True),
        (FP16, "nan", 0x7E00, True),
        (FP32, "NaN", 0x7FC00000, True),
        (FP16, "1_000", 0x63D0, True),           # 1000 = 1.953125 * 2**9: field 24, frac 976
    ],
)
def test_parse_value(fmt, text, bits, exact):
    assert F.parse_value(fmt, text) == (bits, exact)


def test_parse_value_decimals_agree_with_numpy_where_float64_is_not_a_tie():
    rng = np.random.default_rng(3)
    for _ in range(300):
        text = f"{rng.uniform(-70000, 70000):.6e}"
        x = float(text)
        # a 7-digit decimal is either exactly an fp16 tie or at least ~1e-7 relative away from
        # one, so float64's rounding of it (1e-16 relative) cannot cross or reach a tie
        want = _np_round(np.float16, x)
        assert _ref_round(np.float16, Fraction(text)) == want
        assert F.parse_value(FP16, text)[0] == want, text


def test_parse_value_decimal_is_rounded_exactly_not_via_float64():
    # 1 + 2**-11 = 1.00048828125 is the tie between 0x3c00 and 0x3c01; this decimal lies just
    # above it, but float64 rounds it onto the tie, which then goes to even 0x3c00.
    text = "1.00048828125000000000000001"
    assert float(text) == 1 + 2**-11 and _np_round(np.float16, float(text)) == 0x3C00
    assert F.parse_value(FP16, text) == (0x3C01, False)
    assert F.parse_value(FP16, "-" + text) == (0xBC01, False)
    # just below the tie 1 + 3 * 2**-11 = 1.00146484375, which float64 would round up to 0x3c02
    text = "1.00146484374999999999999999"
    assert float(text) == 1 + 3 * 2**-11 and _np_round(np.float16, float(text)) == 0x3C02
    assert F.parse_value(FP16, text) == (0x3C01, False)
    assert F.parse_value(FP16, "1.00048828125") == (0x3C00, False)  # the tie itself


def test_parse_value_hex_pattern_too_wide():
    with pytest.raises(ValueError, match="0x10000"):
        F.parse_value(FP16, "0x10000")
    with pytest.raises(ValueError):
        F.parse_value(FP32, "0x100000000")


@pytest.mark.parametrize(
    "text",
    ["", "   ", "abc", "1.2.3", "0x", "0xg", "0x1.8", "0x1p", "0x.p1", "1e", "nan1", "snan",
     "--1", "+0x3c00", "-0x3c00", "1/0", "in f", "one"],
)
def test_parse_value_garbage_raises_helpfully(text):
    with pytest.raises(ValueError) as err:
        F.parse_value(FP16, text)
    msg = str(err.value)
    if text.strip():
        assert repr(text) in msg  # names the offending input
    else:
        assert "empty" in msg


# Regression: doubled signs used to be stripped before matching inf/nan.
@pytest.mark.parametrize("text", ["--inf", "+-inf", "-+nan", "++nan"])
def test_parse_value_rejects_doubled_signs_on_inf_nan(text):
    with pytest.raises(ValueError):
        F.parse_value(FP16, text)


def test_parse_value_help_lists_accepted_forms():
    with pytest.raises(ValueError, match=r"hex float.*0x1\.8p-1.*0x3c00.*inf.*nan"):
        F.parse_value(FP16, "garbage")


# --------------------------------------------------------------------------------------
# hexfloat
# --------------------------------------------------------------------------------------

_HEX_SHORTEST = re.compile(r"^-?0x1(\.[0-9a-f]*[1-9a-f])?p[+-]\d+$")


def _parse_hex_by_hand(s: str) -> Fraction:
    m = re.fullmatch(r"(-?)0x([01])(?:\.([0-9a-f]+))?p([+-]\d+)", s)
    assert m, s
    digits = m.group(3) or ""
    q = Fraction(int(m.group(2) + digits, 16), 16 ** len(digits)) * Fraction(2) ** int(m.group(4))
    return -q if m.group(1) else q


@settings(max_examples=1000)
@given(b=st.integers(0, 2**64 - 1).filter(lambda b: (b >> 52) & 0x7FF != 0x7FF))
@example(b=1)  # smallest float64 subnormal
@example(b=0x000FFFFFFFFFFFFF)
@example(b=0x7FEFFFFFFFFFFFFF)
def test_hexfloat_round_trips_with_float_fromhex(b):
    x = struct.unpack("<d", struct.pack("<Q", b))[0]
    q = Fraction(x)
    s = F.hexfloat(q)
    assert float.fromhex(s) == x
    assert Fraction(float.fromhex(s)) == q
    assert _parse_hex_by_hand(s) == q
    if q != 0:
        assert _HEX_SHORTEST.match(s), s  # normalized 1.xxx, no trailing zero digits
        assert s.startswith("-") == (x < 0)
        # same exponent as Python's own (normalized) hex for normal float64 values
        if abs(x) >= 2.0**-1022:
            assert s.split("p")[1] == x.hex().split("p")[1]


@settings(max_examples=300)
@given(n=st.integers(-(2**200), 2**200), e=st.integers(-3000, 3000))
def test_hexfloat_exact_beyond_float64(n, e):
    q = Fraction(n) * Fraction(2) ** e
    s = F.hexfloat(q)
    assert _parse_hex_by_hand(s) == q
    if q:
        assert _HEX_SHORTEST.match(s), s


@pytest.mark.parametrize(
    "q, text",
    [
        (Fraction(3, 4), "0x1.8p-1"),
        (Fraction(1), "0x1p+0"),
        (Fraction(-1), "-0x1p+0"),
        (Fraction(0), "0x0p+0"),
        (Fraction(65504), "0x1.ffcp+15"),
        (Fraction(1, 2**24), "0x1p-24"),
        (Fraction(2**52 + 1, 2**51), "0x1.0000000000001p+1"),
        (Fraction(2**60 + 1), "0x1.000000000000001p+60"),
        (1 + Fraction(1, 2**11) + Fraction(1, 2**60), "0x1.002000000000001p+0"),
    ],
)
def test_hexfloat_known(q, text):
    assert F.hexfloat(q) == text
    if abs(q) < 2**1000 and Fraction(float(q)) == q:
        assert float.fromhex(text) == float(q)


@pytest.mark.parametrize("q", [Fraction(1, 3), Fraction(-1, 10), Fraction(5, 6), Fraction(1, 2**70 * 3)])
def test_hexfloat_non_dyadic_raises(q):
    with pytest.raises(ValueError):
        F.hexfloat(q)


# --------------------------------------------------------------------------------------
# same_result / hex_bits (the comparison every checker uses)
# --------------------------------------------------------------------------------------

def test_same_result_compares_nan_as_a_class_and_zeros_by_sign():
    a = np.array([0x7E00, 0x7D01, 0xFE00, 0x0000, 0x8000, 0x3C00, 0x7C00], np.uint16)
    b = np.array([0xFD00, 0x7E00, 0x7E00, 0x8000, 0x0000, 0x3C00, 0x7E00], np.uint16)
    # NaN/NaN (any payload, sign, quiet or signalling) match; +0/-0 do not; inf/NaN do not.
    assert F.same_result(FP16, a, b).tolist() == [True, True, True, False, False, True, False]


def test_same_result_is_the_same_where_few_elements_differ():
    # the pairs above among many equal elements (same_result then looks at the differing ones only)
    a = np.array([0x7E00, 0x7D01, 0xFE00, 0x0000, 0x8000, 0x3C00, 0x7C00], np.uint16)
    b = np.array([0xFD00, 0x7E00, 0x7E00, 0x8000, 0x0000, 0x3C00, 0x7E00], np.uint16)
    filler = np.arange(1000, dtype=np.uint16)
    got = F.same_result(FP16, np.concatenate([filler, a, filler]), np.concatenate([filler, b, filler]))
    assert got.tolist() == [True] * 1000 + [True, True, True, False, False, True, False] + [True] * 1000


def test_hex_bits_is_fixed_width():
    assert F.hex_bits(FP16, 0x1) == "0x0001"
    assert F.hex_bits(FP32, 0x3F800000) == "0x3f800000"
    assert F.hex_bits(FP32, np.uint32(5)) == "0x00000005"

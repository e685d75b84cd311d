"""The fast exact oracle gives the mpmath oracle's bits: 1,000,000+ elements per format.

Inputs mix three populations (conformance.sampling): boundary-weighted random
batches (special values, diff on and around +-beta, raw bit patterns),
"hard" batches (exact ties and near-ties down into the subnormal range, huge
exponent gaps at the boundary), and every special pattern crossed with every
other. The element count is asserted, so a shrunken run fails.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sl1conf.conformance.vectors.sampling import hard_batch, random_batch, special_patterns
from sl1conf.reference import fast_oracle, oracle
from sl1conf.reference import formats as F

PARTS = 8
PER_PART = 125_000  # 8 x 125,000 = 1,000,000 per format
BATCH = 1_000


def _check(fmt, batch, flush=False) -> int:
    args = batch.floats(fmt)
    want = F.to_bits(fmt, oracle.smoothl1lossgrad(*args, flush_subnormals=flush))
    got = F.to_bits(fmt, fast_oracle.smoothl1lossgrad(*args, flush_subnormals=flush))
    bad = np.flatnonzero(want != got)  # both return the canonical NaN: compare bits exactly
    assert bad.size == 0, (
        f"{fmt.name} flush={flush}: dy={int(batch.dy[bad[0]]):#x} x1={int(batch.x1[bad[0]]):#x} "
        f"x2={int(batch.x2[bad[0]]):#x} beta={batch.beta:#x}: mpmath {int(want[bad[0]]):#x}, "
        f"fast {int(got[bad[0]]):#x} ({bad.size} mismatches)")
    return want.size


@pytest.mark.parametrize("part", range(PARTS))
@pytest.mark.parametrize("fmt", [F.FP16, F.FP32], ids=lambda f: f.name)
def test_fast_oracle_matches_mpmath(fmt, part):
    rng = np.random.default_rng([2026, part, fmt.bits])
    checked = 0
    for k in range(PER_PART // BATCH):
        checked += _check(fmt, (hard_batch if k % 2 else random_batch)(fmt, BATCH, rng))
    assert checked == PER_PART  # every batch was whole: the count of compared elements is real


@pytest.mark.parametrize("fmt", [F.FP16, F.FP32], ids=lambda f: f.name)
def test_fast_oracle_flush_to_zero_matches_mpmath(fmt):
    rng = np.random.default_rng([7, fmt.bits])
    checked = 0
    for i in range(60):
        make = hard_batch if i % 2 else random_batch
        checked += _check(fmt, make(fmt, BATCH, rng), flush=True)
    assert checked == 60_000


@pytest.mark.parametrize("flush", [False, True])
@pytest.mark.parametrize("fmt", [F.FP16, F.FP32], ids=lambda f: f.name)
def test_every_special_against_every_special(fmt, flush):
    specials = special_patterns(fmt)
    triples = np.array(list(itertools.product(specials, repeat=3)), dtype=fmt.uint)
    from sl1conf.adapters.base import Case
    for beta in specials.tolist():
        _check(fmt, Case(fmt.name, triples[:, 0].copy(), triples[:, 1].copy(), triples[:, 2].copy(), beta), flush)


def test_fallback_rate_is_reported():
    # fp32 exact ties (hard batches are full of them) cannot be decided in binary64.
    rng = np.random.default_rng(3)
    b = hard_batch(F.FP32, 2000, rng)
    result = fast_oracle.evaluate(*b.floats(F.FP32))
    assert 0 < result.fallbacks < result.out.size
    assert result.fallback_rate == result.fallbacks / result.out.size
    # fp16 never falls back: one binary64 evaluation is correctly rounded.
    assert fast_oracle.evaluate(*hard_batch(F.FP16, 2000, rng).floats(F.FP16)).fallbacks == 0


def test_shapes_and_types():
    x = np.zeros((3, 4), np.float32)
    assert fast_oracle.smoothl1lossgrad(x, x, x, np.float32(1)).shape == (3, 4)
    with pytest.raises(TypeError):
        fast_oracle.smoothl1lossgrad(x, x.astype(np.float16), x, np.float32(1))
    with pytest.raises(TypeError):
        fast_oracle.smoothl1lossgrad(x, x, x, np.float16(1))


# exact_middle_f32: the fp32 filter's fallback for ambiguous elements, in integers.
# Hand-derived cases (beta = 1.0 = 0x3f800000 throughout, so q = (x1 - x2) * dy):
EXACT_MIDDLE_CASES = [
    # dy = 3 * 2^-149, diff = 0.5: q = 1.5 * 2^-149, a tie between 1 and 2 subnormal steps: even, 0x2
    (0x00000003, 0x3f000000, 0x00000000, 0x00000002),
    # dy = 5 * 2^-149: q = 2.5 steps, to even: 2 steps
    (0x00000005, 0x3f000000, 0x00000000, 0x00000002),
    # dy = 2^-149: q = half the smallest subnormal, a tie with zero: +0
    (0x00000001, 0x3f000000, 0x00000000, 0x00000000),
    # dy = -7 * 2^-149: q = -3.5 steps, to even: -4 steps
    (0x80000007, 0x3f000000, 0x00000000, 0x80000004),
    # dy = 2 + 2^-22 (0x40000001), diff = 0.75: q = 1.5 + 3 * 2^-24 = 1.5 + 1.5 ulps, a tie: even, 1.5 + 2 ulps
    (0x40000001, 0x3f400000, 0x00000000, 0x3fc00002),
    # diff = 0.75 + 2^-24 (0x3f400001): q = 1.5 + 3 * 2^-24 + 2 * 2^-24 + 2^-46 = 1.5 + 2.5 ulps + 2^-46,
    # just above a tie: up, 1.5 + 3 ulps
    (0x40000001, 0x3f400001, 0x00000000, 0x3fc00003),
    # dy = 2 + 2^-22, diff = 0.5 - 2^-25 (0x3effffff): q = 1 + 2^-23 - 2^-24 - 2^-47 = 1 + 2^-24 - 2^-47,
    # just below the midpoint of 1 and 1 + 2^-23: down, 1.0
    (0x40000001, 0x3effffff, 0x00000000, 0x3f800000),
    # (-0) - (+0) = -0, times dy = 1: -0
    (0x3f800000, 0x80000000, 0x00000000, 0x80000000),
    # (+0) - (+0) = +0, times dy = -1: -0
    (0xbf800000, 0x00000000, 0x00000000, 0x80000000),
]


@pytest.mark.parametrize("dy, x1, x2, want", EXACT_MIDDLE_CASES)
def test_exact_middle_f32_hand_cases(dy, x1, x2, want):
    assert fast_oracle.exact_middle_f32(dy, x1, x2, 0x3f800000) == want
    assert oracle.evaluate_bits(F.FP32, dy, x1, x2, 0x3f800000, False, False) == want  # and the mpmath oracle agrees


def test_exact_middle_f32_matches_mpmath_on_ambiguous_elements():
    """Every element the filter leaves ambiguous in hard batches (ties and near-ties into the
    subnormals), computed by the integer fallback and by the mpmath oracle."""
    from sl1conf.reference import kernel

    rng = np.random.default_rng(2027)
    checked = 0
    for _ in range(40):
        b = hard_batch(F.FP32, 2000, rng)
        out, amb = np.empty(b.dy.size, np.uint32), np.empty(b.dy.size, np.uint8)
        beta = np.array([b.beta], np.uint32).view(np.float32)[0]
        kernel.f32_filtered(b.dy, b.x1.view(np.float32), b.x2.view(np.float32), beta, out, amb)
        for i in np.flatnonzero(amb):
            args = (int(b.dy[i]), int(b.x1[i]), int(b.x2[i]), b.beta)
            assert fast_oracle.exact_middle_f32(*args) == oracle.evaluate_bits(F.FP32, *args, False, False), args
            checked += 1
    assert checked > 10_000  # the batches do reach the fallback, many times

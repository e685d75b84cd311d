"""The sweep's fast check (issue 38, item 2), against independent computations: the fused
comparison in C (``kernel.f16_mismatches``) finds exactly the elements the slow mpmath oracle
says are wrong, and the judge's shortcut for elements a rounding away
(``judge.within_budget_alone``) gives no element a reason the whole judge would not give it."""

from __future__ import annotations

import numpy as np
import pytest

from sl1conf.conformance.rules import judge as J
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import formats as F
from sl1conf.reference import kernel, oracle
from sl1conf.reference.exact import exact_diff

FP16 = F.FP16


def _inputs(n: int, seed: int):
    """Bit patterns of every class: random patterns (NaNs, infinities, subnormals among them), small
    integers and halves (boundaries and zeros), and the extremes."""
    rng = np.random.default_rng(seed)
    special = np.array([0, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3800, 0x7BFF, 0xFBFF,
                        0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE00], np.uint16)

    def draw():
        a = rng.integers(0, 1 << 16, n).astype(np.uint16)
        pick = rng.random(n)
        a[pick < 0.25] = rng.choice(special, int((pick < 0.25).sum()))
        small = (pick >= 0.25) & (pick < 0.45)  # near the middle line: 0.5 .. 2
        a[small] = rng.integers(0x3800, 0x4000, int(small.sum())) | (rng.integers(0, 2, int(small.sum())) << 15)
        return a
    return draw(), draw(), draw()


def _mpmath_bits(dy, x1, x2, beta):
    h = lambda a: a.view(np.float16)  # noqa: E731
    out = oracle.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(beta).view(np.float16))
    return np.ascontiguousarray(out).view(np.uint16)


@pytest.mark.parametrize("beta", [0x3C00, 0x2E66, 0x0001, 0x0000, 0xBC00, 0x7C00, 0x7E00])
def test_the_fused_check_finds_exactly_what_the_mpmath_oracle_calls_wrong(beta):
    """got = the oracle's bits, then changed by one ULP, a sign, a NaN payload, a NaN or 1.0 for a
    number at known places; the wrong ones are those places (a NaN payload is not wrong: NaN is a
    class), and the correct bits reported there are the mpmath oracle's (any NaN as 0x7e00)."""
    dy, x1, x2 = _inputs(4099, beta)  # two chunks of 2,048 and three more
    want = _mpmath_bits(dy, x1, x2, beta)
    got = want.copy()
    rng = np.random.default_rng(7)
    # at the edges of the check's runs of 64 and chunks of 2,048, and anywhere
    at = np.unique(np.r_[rng.choice(want.size, 400, replace=False), [0, 63, 64, 2047, 2048, want.size - 1]])
    how = rng.integers(0, 5, at.size)
    got[at] = np.where(how == 0, want[at] ^ 1, np.where(how == 1, want[at] ^ 0x8000,
                       np.where(how == 2, want[at] ^ 0x0100, np.where(how == 3, 0x7E00, 0x3C00))))  # 0x3c00: 1.0
    nan_w = F.is_nan_bits(FP16, want)
    nan_g = F.is_nan_bits(FP16, got)
    expected = np.flatnonzero((got != want) & ~(nan_w & nan_g))
    assert 0 < expected.size < at.size + 1  # some changes are NaN payloads (not wrong), some numbers
    idx, bits = kernel.f16_mismatches(dy, x1, x2, beta, got)
    assert idx.tolist() == expected.tolist()
    assert bits.tolist() == np.where(nan_w[expected], 0x7E00, want[expected]).tolist()


def test_the_fused_check_of_nothing_and_of_mismatched_lengths():
    e = np.empty(0, np.uint16)
    idx, bits = kernel.f16_mismatches(e, e, e, 0x3C00, e)
    assert idx.size == 0 and bits.size == 0
    with pytest.raises(ValueError, match="one length"):
        kernel.f16_mismatches(np.zeros(3, np.uint16), e, e, 0x3C00, e)


def test_the_shortcut_was_derived_for_the_rules_the_judge_has():
    """within_budget_alone's derivation goes rule by rule: a rule added to ELEMENT_RULES (or one
    removed) must be looked at there again."""
    assert sorted(r.id for r in J.ELEMENT_RULES) == sorted(J.ALONE_RULES)


@pytest.mark.parametrize("platform", ["ieee", "mt7004"])  # the profiles with fp16: strict zeros and not
@pytest.mark.parametrize("beta", [0x3C00, 0x2E66, 0x0001, 0xBC00, 0x0000, 0x8000, 0x7C00, 0x7E00, 0x7BFF])
def test_the_shortcut_gives_only_what_the_whole_judge_gives(platform, beta):
    """Every element the shortcut takes, the whole judge (expected_for, every rule, the error
    model) files as within the budget, and accepts; and the shortcut is not empty where there are
    elements a rounding or two away (else the sweep would not be faster, and this would test
    nothing). got: the oracle's bits moved by 0 to 3 ULPs, a sign or to an infinity."""
    profile = load_profile(platform)
    dy, x1, x2 = _inputs(20000, beta + 1)
    h = lambda a: a.view(np.float16)  # noqa: E731
    want = np.ascontiguousarray(kernel.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(beta).view(np.float16),
                                                        model="muldiv-fp64")).view(np.uint16)
    rng = np.random.default_rng(beta)
    step = rng.integers(-3, 4, want.size)
    got = _step(want, step)
    flip = rng.random(want.size) < 0.05
    got[flip] ^= 0x8000
    got[rng.random(want.size) < 0.02] = 0x7C00
    bad = np.flatnonzero((got != want) & ~(F.is_nan_bits(FP16, got) & F.is_nan_bits(FP16, want)))
    g, w, d, a, b = got[bad], want[bad], dy[bad], x1[bad], x2[bad]
    dist = F.ulp_distance(FP16, g, w)
    alone = J.within_budget_alone(FP16, profile, g, w, dist, d, a, b, beta)
    # given the exact diffs (as a sweep's bias counts pass them), the same answer
    assert np.array_equal(alone, J.within_budget_alone(FP16, profile, g, w, dist, d, a, b, beta,
                                                       diff=exact_diff(FP16, a, b)))
    whole = J.judge(FP16, profile, g, J.expected_for(FP16, d, a, b, beta, oracle=w), d, a, b, beta)
    if beta == 0x0001:  # a subnormal beta: all to the whole judge
        assert not alone.any()
    elif beta in (0x3C00, 0x2E66, 0x7BFF):  # an ordinary beta: most wrong elements are a rounding away
        assert alone.sum() > 100
    assert (whole.reason[alone] == J.Reason.WITHIN_BUDGET).all()
    assert whole.ok[alone].all()


def _step(bits, step):
    """``bits`` moved by ``step`` ULPs along the ordered line of fp16 (a NaN or infinity stays)."""
    b = bits.astype(np.int64)
    moved = F.ordered(FP16, bits) + step  # the ordered line: -0 and +0 meet at 0
    out = np.where(moved < 0, (-moved) | 0x8000, moved)
    keep = ((b & 0x7FFF) >= 0x7C00) | (np.abs(moved) >= 0x7C00)
    return np.where(keep, b, out).astype(np.uint16)


@pytest.mark.parametrize("beta", [0x0000, 0x8000, 0x0001, 0x0100, 0x8100, 0x0101, 0x3C00, 0x7BFF, 0x7C00, 0xFC00, 0x7E00])
def test_overflow_prone_of_one_beta_is_that_of_the_beta_given_per_element(beta):
    """judge.overflow_prone asks 1 / beta once where beta is one pattern (a sweep's sampled block
    asks it of 10^5 elements): the same answer as the same beta given for every element. By hand:
    1 / beta overflows fp16 (above 65504) where |beta| < 1 / 65504, that is for the zeros and the
    subnormals up to 0x0100 = 2^-16 (1 / beta = 65536); 0x0101 (1 / beta about 65281) and larger
    do not, nor does a NaN beta (no comparison with NaN is true); there only the diff and diff * dy
    decide."""
    dy, x1, x2 = _inputs(5000, beta + 7)
    s = exact_diff(FP16, x1, x2)[0]
    one = J.overflow_prone(FP16, s, dy, beta)
    assert np.array_equal(one, J.overflow_prone(FP16, s, dy, np.full(dy.shape, beta, np.uint16)))
    rest = J.overflow_prone(FP16, s, dy, 0x3C00)  # beta 1: only the diff and diff * dy
    if (beta & 0x7FFF) <= 0x0100:
        assert one.all()
    else:
        assert np.array_equal(one, rest) and not rest.all() and rest.any()

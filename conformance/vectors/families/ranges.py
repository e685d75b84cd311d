"""The range families: the edge of the format's range, and gradual underflow.

fp16-overflow (4) and range-overflow (5) are one generator, :func:`overflow_cases`, at the
range of fp16 and of fp32: diffs, products and reciprocals beyond the largest finite value,
dy at and next to it, results at it. underflow (6): subnormal inputs, diffs and results,
products and quotients that underflow on the way to a representable result, subnormal betas.
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.vectors.families.bits import (
    as_float64, bit_array, bits_of, bits_of_text, concat_bits, max_bits, min_normal_bits, negated,
    one_bits, random_dy, random_significands, random_signs, value_of,
)
from sl1conf.conformance.vectors.families.finish import make_case
from sl1conf.reference.formats import Format

__all__ = ["overflow_cases", "underflow_cases"]


def overflow_cases(fmt: Format, rng: np.random.Generator) -> list:
    """The edge of the format's range (fp16-overflow for fp16, range-overflow for fp32)."""
    cases = []
    mx, one = max_bits(fmt), one_bits(fmt)
    mxf = value_of(fmt, mx)
    prev = mx - 1
    n = 32
    # x1 - x2 beyond the largest finite value, both signs of the overflow.
    big1 = bits_of(fmt, mxf * (0.5 + 0.5 * rng.random(n)))
    big2 = bits_of(fmt, mxf * (0.5 + 0.5 * rng.random(n)))
    big1[:4] = [mx, mx, prev, mx]
    big2[:4] = [mx, prev, mx, 1]  # 1: the tiniest subtrahend, exact diff just above max
    x1 = concat_bits(fmt, big1, negated(fmt, big1))
    x2 = concat_bits(fmt, negated(fmt, big2), big2)
    x1[n + 3], x2[n + 3] = mx, negated(fmt, min_normal_bits(fmt))  # diff = max + tiny: rounds to max
    dy = random_dy(fmt, rng, 2 * n)
    for beta, flags in ((one, ()), (bits_of_text(fmt, "0.1"), ()), (mx, ("beta-max",)),
                        (fmt.inf_bits, ())):
        cases.append(make_case(fmt, dy, x1, x2, beta, ("diff-overflow", "input-max") + flags))

    # diff * dy beyond the range while diff / beta * dy is finite (beta > 1, 1 < |diff| <= beta).
    betas = ["4", "64", "1000", "30000"] if fmt.bits == 16 else ["4", "1048576", "1e30", "1e38"]
    for text in betas:
        beta = bits_of_text(fmt, text)
        bf = value_of(fmt, beta)
        mag = bf * (0.5 + 0.5 * rng.random(n))
        mag = np.maximum(mag, 1.5)
        d = bits_of(fmt, random_signs(rng, n) * mag)
        d[:2] = [beta, negated(fmt, beta)]
        dmag = np.abs(as_float64(fmt, d))
        lo = np.minimum(mxf / dmag * 1.01, mxf)
        dyv = random_signs(rng, n) * (lo + (mxf - lo) * rng.random(n))
        dyb = bits_of(fmt, dyv)
        dyb[2:4] = [mx, mx | fmt.sign_mask]
        keep = np.abs(as_float64(fmt, d) * as_float64(fmt, dyb)) > mxf
        x2 = np.zeros(n, np.int64)
        cases.append(make_case(fmt, dyb[keep], d[keep], x2[keep], beta,
                               ("product-overflow", "middle-branch", "result-finite")))

    # 1 / beta beyond the range: beta below 1 / max (a subnormal in both formats).
    sub_betas = ([bits_of_text(fmt, "0x1p-17"), bits_of_text(fmt, "0x1p-20"), 5, 1] if fmt.bits == 16
                 else [bits_of_text(fmt, "0x1p-129"), bits_of_text(fmt, "0x1p-140"), 5, 1])
    for beta in sub_betas:
        k = rng.integers(-3 * beta - 3, 3 * beta + 4, n)
        base = rng.integers(0, 1 << (fmt.frac_bits + 2), n)
        x2 = bit_array(fmt, np.where(rng.random(n) < 0.5, 0, base))
        x1 = bits_of(fmt, as_float64(fmt, x2) + k * 2.0 ** (fmt.emin - fmt.frac_bits))
        x1[:2] = [beta, negated(fmt, beta)]
        x2[:2] = [0, 0]
        dy = random_dy(fmt, rng, n)
        cases.append(make_case(fmt, dy, x1, x2, beta, ("recip-overflow",)))

    # dy at and near +-max and +-inf, diff in every branch (beta = 1): results at the largest
    # finite value come from dy = +-max with diff/beta at or within half an ulp of 1.
    eps = 2.0 ** -(fmt.precision + 2)  # exact diff/beta = 1 - eps: the product rounds to max
    tiny = bits_of(fmt, [eps])[0]
    x1_list = [2.0, -2.0, 1.0, -1.0, 0.5, -0.5, 0.0, 1.0, -1.0, 0.999, 3.0]
    x1b = bits_of(fmt, x1_list)
    x2b = np.zeros(len(x1_list), np.int64)
    x2b[7], x2b[8] = tiny, negated(fmt, tiny)
    for dyv, flags in ((mx, ("dy-max",)), (mx | fmt.sign_mask, ("dy-neg-max",)),
                       (prev, ("dy-near-max",)), (prev | fmt.sign_mask, ("dy-near-neg-max",)),
                       (fmt.inf_bits, ("inf-dy",)), (fmt.inf_bits | fmt.sign_mask, ("neg-inf-dy",))):
        dy = np.full(len(x1_list), dyv, np.int64)
        cases.append(make_case(fmt, dy, x1b, x2b, one, flags))
    # results at the largest finite value, every element
    dy = np.array([mx, mx | fmt.sign_mask, mx, mx | fmt.sign_mask, mx, mx], np.int64)
    x1r = concat_bits(fmt, [one, one, negated(fmt, one), one, bits_of(fmt, [3.0])[0], bits_of(fmt, [-3.0])[0]])
    x2r = concat_bits(fmt, [0, 0, 0, tiny, 0, 0])
    cases.append(make_case(fmt, dy, x1r, x2r, one, ("result-max",)))
    # inputs at +-max without overflow of the diff
    x1m = concat_bits(fmt, [mx, mx, prev, mx | fmt.sign_mask, mx, 0])
    x2m = concat_bits(fmt, [mx, prev, mx, mx | fmt.sign_mask, 0, mx])
    cases.append(make_case(fmt, random_dy(fmt, rng, 6), x1m, x2m, one, ("input-max",)))
    return cases


def underflow_cases(fmt: Format, rng: np.random.Generator) -> list:
    """Gradual underflow (family 6): each way into the subnormals, a part at a time, drawing
    from ``rng`` in this order (the cases depend on it)."""
    n = 48
    return (_subnormal_input_cases(fmt, rng, n) + [_subnormal_diff_case(fmt, rng, n)]
            + _subnormal_result_cases(fmt, rng, n) + _intermediate_underflow_cases(fmt, rng, n)
            + _subnormal_beta_cases(fmt, rng))


def _subnormals(fmt: Format, rng: np.random.Generator, k: int) -> np.ndarray:
    """k random subnormal patterns, both signs; the first three the smallest, the largest and
    half the smallest normal."""
    mags = rng.integers(1, fmt.frac_mask + 1, k)
    mags[:3] = [1, fmt.frac_mask, 1 << (fmt.frac_bits - 1)][:k]
    return bit_array(fmt, np.where(rng.random(k) < 0.5, mags, mags | fmt.sign_mask))


def _subnormal_input_cases(fmt: Format, rng: np.random.Generator, n: int) -> list:
    """Subnormal inputs, one slot at a time and all together, diff in every branch (beta = 1)."""
    cases = []
    one = one_bits(fmt)
    grid = bits_of(fmt, np.tile([2.0, -2.0, 0.5, -0.5, 1.0, -1.0, 0.0, 0.25], n // 8))
    for slot in ("dy", "x1", "x2", "all"):
        dy = random_dy(fmt, rng, n, big=False)
        x1, x2 = grid.copy(), np.zeros(n, fmt.uint)
        if slot in ("dy", "all"):
            dy = _subnormals(fmt, rng, n)
        if slot in ("x1", "all"):
            x1 = _subnormals(fmt, rng, n)
            x2 = grid.copy() if slot == "x1" else x2
        if slot in ("x2", "all"):
            x2 = _subnormals(fmt, rng, n)
        flag = "subnormal-inputs" if slot == "all" else f"subnormal-{slot}"
        cases.append(make_case(fmt, dy, x1, x2, one, (flag,)))
    return cases


def _subnormal_diff_case(fmt: Format, rng: np.random.Generator, n: int):
    """Normal inputs whose difference is subnormal; beta and dy keep the result normal."""
    k1 = rng.integers(0, 1 << fmt.frac_bits, n)
    k2 = rng.integers(0, 1 << fmt.frac_bits, n)
    x1 = bit_array(fmt, (1 << fmt.frac_bits) | k1)
    x2 = bit_array(fmt, (1 << fmt.frac_bits) | k2)
    x2[0] = fmt.frac_mask  # the largest subnormal: min normal minus it is the smallest one
    x1[0] = 1 << fmt.frac_bits
    beta = bits_of(fmt, [2.0 ** fmt.emin])[0]
    dy = bits_of(fmt, random_signs(rng, n) * random_significands(fmt, rng, n) * 2.0 ** rng.integers(0, 4, n))
    return make_case(fmt, dy, x1, x2, beta, ("subnormal-diff", "middle-branch"))


def _subnormal_result_cases(fmt: Format, rng: np.random.Generator, n: int) -> list:
    """Subnormal results: from the middle line (normal inputs, ties and underflow to zero
    included), and subnormal dy passed through by the outer branches."""
    one = one_bits(fmt)
    e_d = rng.integers(fmt.emin // 2 - 2, fmt.emin // 2 + 2, n)
    d = bits_of(fmt, random_signs(rng, n) * random_significands(fmt, rng, n) * 2.0 ** e_d)
    e_y = (fmt.emin - fmt.frac_bits // 2) - e_d + rng.integers(-2, 3, n)
    dy = bits_of(fmt, random_signs(rng, n) * random_significands(fmt, rng, n) * 2.0 ** e_y)
    cases = [make_case(fmt, dy, d, np.zeros(n, np.int64), one, ("subnormal-result", "middle-branch"))]
    # exact results of half the smallest subnormal (a tie: rounds to zero) and 0.75 of it
    half = 2.0 ** ((fmt.emin - fmt.frac_bits - 1) // 2)
    other = 2.0 ** (fmt.emin - fmt.frac_bits) / 2 / half
    dt = bits_of(fmt, [half, -half, half * 1.5, -half * 1.5, half * 0.5, -half * 0.5])
    yt = bits_of(fmt, [other, other, other, -other, other, -other])
    cases.append(make_case(fmt, yt, dt, np.zeros(6, np.int64), one,
                           ("subnormal-result", "underflow-tie", "middle-branch")))
    # outer branches pass subnormal dy through (sign flipped for -dy)
    dsub = _subnormals(fmt, rng, 16)
    x1o = bits_of(fmt, np.tile([2.0, -2.0], 8))
    cases.append(make_case(fmt, dsub, x1o, np.zeros(16, np.int64), one,
                           ("subnormal-dy", "subnormal-result", "outer-branch")))
    return cases


def _intermediate_underflow_cases(fmt: Format, rng: np.random.Generator, n: int) -> list:
    """Normal results whose intermediates underflow: diff * dy (into the subnormals, or below
    half the smallest subnormal; a tiny beta scales it back up), and diff / beta (tiny diff,
    large beta)."""
    cases = []
    min_n = 2.0 ** fmt.emin
    for e_b in (fmt.emin // 2 + 1, (fmt.emin - fmt.frac_bits) // 2 + 1):
        beta = bits_of(fmt, [2.0 ** e_b])[0]
        frac = 0.5 + 0.5 * rng.random(n)
        d = bits_of(fmt, random_signs(rng, n) * frac * 2.0 ** e_b)
        dy = bits_of(fmt, random_signs(rng, n) * random_significands(fmt, rng, n)
                     * 2.0 ** rng.integers(fmt.emin, fmt.emin + 4, n))
        prod = np.abs(as_float64(fmt, d) * as_float64(fmt, dy))
        keep = (prod < min_n) & (np.abs(as_float64(fmt, d) / 2.0 ** e_b * as_float64(fmt, dy)) >= min_n)
        cases.append(make_case(fmt, dy[keep], d[keep], np.zeros(int(keep.sum()), np.int64), beta,
                               ("product-underflow", "middle-branch", "result-normal")))
    beta = bits_of(fmt, [2.0 ** (fmt.frac_bits + 3)])[0]  # diff / beta below half the smallest subnormal
    d = bits_of(fmt, random_signs(rng, n) * random_significands(fmt, rng, n) * min_n)
    d[:4] = [1, 1 | fmt.sign_mask, fmt.frac_mask, 1 << fmt.frac_bits]
    dy = bits_of(fmt, random_signs(rng, n) * random_significands(fmt, rng, n) * 2.0 ** (fmt.emax - 1))
    cases.append(make_case(fmt, dy, d, np.zeros(n, np.int64), beta,
                           ("quotient-underflow", "middle-branch")))
    return cases


def _subnormal_beta_cases(fmt: Format, rng: np.random.Generator) -> list:
    """Subnormal betas at the boundary and inside it."""
    cases = []
    for beta in (1, 3, fmt.frac_mask):
        bf = value_of(fmt, beta)
        ks = np.array([1, -1, 2, -2, 0.5, -0.5, 0, 3, -3, 1, -1, 0.25])
        x1 = bits_of(fmt, ks * bf)
        dy = random_dy(fmt, rng, len(ks), big=False)
        cases.append(make_case(fmt, dy, x1, np.zeros(len(ks), np.int64), beta, ("subnormal-beta",)))
    return cases

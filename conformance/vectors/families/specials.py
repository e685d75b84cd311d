"""The special-value families: NaN and infinity, signed zeros, special betas.

nan-inf (7) puts quiet and signalling NaNs and +-inf in each input, signed-zero (8) +-0
(grouped by the sign of the zero result), beta-special (9) every kind of beta, from tiny to
NaN; the special values run against :func:`_branch_grid`, which covers every branch.
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.vectors.families.bits import (
    as_float64, bits_of, bits_of_text, concat_bits, float_class, max_bits, min_normal_bits,
    negated, one_bits, quiet_bit, random_dy, random_significands, random_signs, value_of,
)
from sl1conf.conformance.vectors.families.finish import make_case
from sl1conf.reference import formats
from sl1conf.reference.formats import Format

__all__ = ["nan_inf_cases", "signed_zero_cases", "beta_special_cases"]


def _specials(fmt: Format) -> list[tuple[str, int]]:
    q = quiet_bit(fmt)
    payload = int("55" * 8, 16) & (q - 1)
    return [("nan", fmt.qnan_bits), ("neg-nan", fmt.qnan_bits | fmt.sign_mask),
            ("snan", fmt.inf_bits | 1), ("neg-snan", fmt.inf_bits | 1 | fmt.sign_mask),
            ("nan-payload", fmt.qnan_bits | payload), ("snan-payload", fmt.inf_bits | payload),
            ("inf", fmt.inf_bits), ("neg-inf", fmt.inf_bits | fmt.sign_mask)]


def _branch_grid(fmt: Format, rng: np.random.Generator, scale: float, n_rand: int = 8):
    """(x1, x2) covering every branch for a beta of magnitude ``scale``: diffs of +-4, +-2,
    +-1 (exact), +-1/2, 0 times the scale with x2 = 0 and with x1 = 0, random x2 with
    x1 = x2 + d rounded, equal inputs, and (-0) - (+0)."""
    ks = np.array([4.0, -4.0, 2.0, -2.0, 1.0, -1.0, 0.5, -0.5, 0.999, -0.999, 1.001, -1.001, 0.0])
    with np.errstate(over="ignore"):
        d = bits_of(fmt, ks * scale)
    x1 = [d, np.zeros(len(ks), np.int64)]
    x2 = [np.zeros(len(ks), np.int64), negated(fmt, d)]
    r = bits_of(fmt, random_signs(rng, n_rand) * random_significands(fmt, rng, n_rand) * scale
                * 2.0 ** rng.integers(-3, 4, n_rand))
    kk = ks[rng.integers(0, len(ks), n_rand)]
    with np.errstate(over="ignore", invalid="ignore"):
        x1.append(bits_of(fmt, as_float64(fmt, r) + kk * scale))
    x2.append(r)
    x1.append(r)
    x2.append(r)  # diff = +0
    x1.append([fmt.sign_mask])
    x2.append([0])  # diff = -0
    return concat_bits(fmt, *x1), concat_bits(fmt, *x2)


def nan_inf_cases(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    one = one_bits(fmt)
    x1g, x2g = _branch_grid(fmt, rng, 1.0, n_rand=4)
    m = len(x1g)
    for slot in ("dy", "x1", "x2"):
        for kind, bits in _specials(fmt):
            dy, x1, x2 = random_dy(fmt, rng, m, big=False), x1g.copy(), x2g.copy()
            {"dy": dy, "x1": x1, "x2": x2}[slot][:] = bits
            cases.append(make_case(fmt, dy, x1, x2, one, (f"{kind}-{slot}",)))
    # inf - inf, both orders and signs, and infinities against finite values
    infs = [fmt.inf_bits, fmt.inf_bits | fmt.sign_mask]
    x1 = concat_bits(fmt, [infs[0], infs[1], infs[0], infs[1]])
    x2 = concat_bits(fmt, [infs[0], infs[1], infs[1], infs[0]])
    cases.append(make_case(fmt, random_dy(fmt, rng, 4, big=False), x1, x2, one,
                           ("inf-x1", "inf-x2", "inf-minus-inf")))
    # special values in beta, with infinite diffs among the elements
    x1s = concat_bits(fmt, x1g, infs, [0, 0])
    x2s = concat_bits(fmt, x2g, [0, 0], infs)
    for kind, bits in _specials(fmt):
        dy = random_dy(fmt, rng, len(x1s), big=False)
        cases.append(make_case(fmt, dy, x1s, x2s, bits, (f"{kind}-beta",)))
    # every input special at once: {qnan, snan, +inf, -inf, 1} cubed
    vals = [fmt.qnan_bits, fmt.inf_bits | 1, fmt.inf_bits, fmt.inf_bits | fmt.sign_mask, one]
    grid = np.array(np.meshgrid(vals, vals, vals, indexing="ij")).reshape(3, -1)
    cases.append(make_case(fmt, grid[0], grid[1], grid[2], one, ("special-cross",)))
    return cases


def signed_zero_cases(fmt: Format, rng: np.random.Generator) -> list:
    """Cases grouped by the sign of the zero every element must return (beta = 1):
    x1 == x2 (diff = +0) and (-0) - (+0) (diff = -0), and dy = +-0 in every branch."""
    cases = []
    one, sm = one_bits(fmt), fmt.sign_mask
    pz, nz = 0, sm
    r = bits_of(fmt, random_signs(rng, 6) * random_significands(fmt, rng, 6) * 2.0 ** rng.integers(-8, 8, 6))
    # diff = +0: x1 == x2 (nonzero or zero), (+0) - (-0), (-0) - (-0), (+0) - (+0)
    x1p = concat_bits(fmt, r, [pz, nz, pz, max_bits(fmt)])
    x2p = concat_bits(fmt, r, [nz, nz, pz, max_bits(fmt)])
    k = len(x1p)

    def pos_dy(n):
        return bits_of(fmt, random_significands(fmt, rng, n) * 2.0 ** rng.integers(-6, 6, n))

    cases.append(make_case(fmt, pos_dy(k), x1p, x2p, one, ("zero-diff", "pos-zero-result")))
    cases.append(make_case(fmt, negated(fmt, pos_dy(k)), x1p, x2p, one, ("zero-diff", "neg-zero-result")))
    # diff = -0: (-0) - (+0) only
    cases.append(make_case(fmt, pos_dy(3), [nz] * 3, [pz] * 3, one,
                           ("neg-zero-diff", "neg-zero-x1", "neg-zero-result")))
    cases.append(make_case(fmt, negated(fmt, pos_dy(3)), [nz] * 3, [pz] * 3, one,
                           ("neg-zero-diff", "neg-zero-x1", "pos-zero-result")))
    # dy = +-0: middle line (sign of diff xor sign of dy), outer lines (dy, -dy)
    mid_p = bits_of(fmt, [0.5, 0.25, 0.999, 1.0])  # diff > 0 inside, diff == beta
    mid_n = negated(fmt, mid_p)
    out_p = bits_of(fmt, [2.0, 1.5, 100.0])
    out_n = negated(fmt, out_p)
    for dyz, dyflag in ((pz, "pos-zero-dy"), (nz, "neg-zero-dy")):
        for x1, flags, res_sign in (
                (mid_p, ("middle-branch",), 0), (mid_n, ("middle-branch",), 1),
                (out_p, ("outer-branch",), 0), (out_n, ("outer-branch",), 1)):
            sign = res_sign ^ (1 if dyz else 0)
            res = "neg-zero-result" if sign else "pos-zero-result"
            cases.append(make_case(fmt, [dyz] * len(x1), x1, np.zeros(len(x1), np.int64), one,
                                   (dyflag,) + flags + (res,)))
    # a middle result that underflows to zero keeps the exact result's sign
    tiny_d = 2.0 ** (fmt.emin // 2)
    tiny_y = 2.0 ** ((fmt.emin - fmt.frac_bits) - fmt.emin // 2 - 3)
    for sign, res in ((1.0, "pos-zero-result"), (-1.0, "neg-zero-result")):
        d = bits_of(fmt, [tiny_d, -tiny_d, tiny_d * 1.5, -tiny_d * 1.25])
        y = bits_of(fmt, sign * np.array([tiny_y, -tiny_y, tiny_y, -tiny_y]))
        cases.append(make_case(fmt, y, d, np.zeros(4, np.int64), one, ("underflow-to-zero", res)))
    # +-0 in x1 or x2 alone (nonzero results), for completeness of "+-0 in each input"
    x_other = bits_of(fmt, [2.0, -2.0, 0.5, -0.5, 1.0, -1.0])
    for z, zflag in ((pz, "zero-x1"), (nz, "neg-zero-x1")):
        cases.append(make_case(fmt, random_dy(fmt, rng, 6, big=False), [z] * 6, x_other, one, (zflag,)))
    for z, zflag in ((pz, "zero-x2"), (nz, "neg-zero-x2")):
        cases.append(make_case(fmt, random_dy(fmt, rng, 6, big=False), x_other, [z] * 6, one, (zflag,)))
    return cases


def beta_special_cases(fmt: Format, rng: np.random.Generator) -> list:
    mn, mx = min_normal_bits(fmt), max_bits(fmt)
    large = ["100", "1000", "30000"] if fmt.bits == 16 else ["1000", "1e10", "1e30"]
    tiny = bits_of_text(fmt, "0x1p-10") if fmt.bits == 16 else bits_of_text(fmt, "0x1p-100")
    betas = [(mn, ("beta-tiny", "beta-min-normal")), (2 * mn + 5, ("beta-tiny",)), (tiny, ("beta-tiny",)),
             (1, ("beta-min-subnormal",)), (3, ()), (fmt.frac_mask, ("beta-max-subnormal",)),
             (1 << (fmt.frac_bits - 1), ())]
    betas += [(bits_of_text(fmt, f"0.{i}" if i < 10 else "1"), ("beta-documented-range",)) for i in range(1, 11)]
    betas += [(bits_of_text(fmt, t), ("beta-large",)) for t in large] + [(mx, ("beta-large", "beta-max"))]
    betas += [(0, ()), (fmt.sign_mask, ())]
    betas += [(negated(fmt, bits_of_text(fmt, t)), ()) for t in ("0.1", "0.5", "1", "2")]
    betas += [(mx | fmt.sign_mask, ("beta-neg-max",)), (1 | fmt.sign_mask, ("beta-neg-subnormal",))]
    betas += [(bits, ()) for _, bits in _specials(fmt)]
    cases = []
    for beta, flags in betas:
        cls = float_class(fmt, beta)
        bf = abs(value_of(fmt, beta))
        scale = bf if cls in (formats.FloatClass.NORMAL, formats.FloatClass.SUBNORMAL) else 1.0
        x1, x2 = _branch_grid(fmt, rng, scale)
        infs = [fmt.inf_bits, fmt.inf_bits | fmt.sign_mask]
        x1, x2 = concat_bits(fmt, infs, [0, 0], x1), concat_bits(fmt, [0, 0], infs, x2)  # infinite diffs
        if cls is formats.FloatClass.SUBNORMAL or scale < 2.0 ** (fmt.emin + fmt.frac_bits):
            dy = random_dy(fmt, rng, len(x1), big=False)
        else:
            dy = random_dy(fmt, rng, len(x1))
        dy[-3:] = [0, fmt.sign_mask, one_bits(fmt)]  # zero dy at a zero diff too
        cases.append(make_case(fmt, dy, x1, x2, beta, flags))
    return cases

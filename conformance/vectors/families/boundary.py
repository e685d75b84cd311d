"""The boundary families: x1 - x2 at, beside and (rounded) across +-beta.

boundary-exact (1) puts the exact diff on +beta and -beta, boundary-neighbours (2) one and
two ulps on either side, boundary-rounded-diff (3) where the exact diff and the diff rounded
to the format lie on different sides. Each is crossed with the betas of
:func:`_boundary_betas`: in and around the documented range, powers of two and not, tiny,
subnormal and the largest finite.
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.vectors.families.bits import (
    as_float64, bit_array, bits_of, bits_of_text, concat_bits, max_bits, min_normal_bits, negated,
    random_dy, random_significands, random_signs, stepped, ulp_at, value_of,
)
from sl1conf.conformance.vectors.families.finish import make_case
from sl1conf.reference import exact
from sl1conf.reference.formats import Format

__all__ = ["boundary_exact_cases", "boundary_neighbours_cases", "boundary_rounded_diff_cases"]


def _boundary_betas(fmt: Format) -> list[tuple[int, tuple]]:
    """Betas for the boundary families: the documented range and around it, powers of two
    and not, tiny, subnormal and large ones. (bits, flags)."""
    texts = ["0.1", "0.2", "0.25", "0.3", "1/3", "0.5", "0.7", "0.75", "0.9", "1", "1.1",
             "1.5", "2", "3", "10", "100", "1000"]
    texts += ["30000"] if fmt.bits == 16 else ["1e-3", "1e6", "1e30"]
    out = []
    for text in texts:
        bits = bits_of_text(fmt, text)
        pow2 = (bits & fmt.frac_mask) == 0
        flags = ("beta-pow2",) if pow2 else ("beta-not-pow2",)
        if text in ("0.1", "0.2", "0.3", "1/3", "0.7", "0.9", "1.1"):
            flags += ("beta-inexact-decimal",)
        if 0.1 <= value_of(fmt, bits) <= 1.0:
            flags += ("beta-documented-range",)
        out.append((bits, flags))
    mn = min_normal_bits(fmt)
    out += [(mn, ("beta-pow2", "beta-min-normal")), (3 * mn + 1, ("beta-not-pow2", "beta-tiny")),
            (fmt.frac_mask, ("beta-not-pow2",)), (max_bits(fmt), ("beta-not-pow2", "beta-max"))]
    return out


def _solve_x1(fmt: Format, x2: np.ndarray, target: int) -> tuple[np.ndarray, np.ndarray]:
    """x1 = x2 + target rounded to the format, and where x1 - x2 == target exactly."""
    t = value_of(fmt, target)
    with np.errstate(all="ignore"):
        x1 = bits_of(fmt, as_float64(fmt, x2) + t)
    s, e = exact.exact_diff(fmt, x1, x2)
    ok = exact.eq(s, e, t) & np.isfinite(as_float64(fmt, x1))
    return x1, ok


def _x2_candidates(fmt: Format, rng: np.random.Generator, target: int, m: int) -> np.ndarray:
    """Candidate x2 for x1 = x2 + target: zeros and +-target first, then multiples of the
    target's ulp and random values on its scale (most of which _solve_x1 keeps)."""
    tau = abs(value_of(fmt, target))
    q = ulp_at(fmt, target)
    ints = rng.integers(-(1 << (fmt.precision + 1)), 1 << (fmt.precision + 1), m)
    mult = bits_of(fmt, ints * q)
    scale = bits_of(fmt, random_signs(rng, m) * random_significands(fmt, rng, m) * tau * 2.0 ** rng.integers(-8, 9, m))
    pick = rng.random(m) < 0.5
    head = [0, fmt.sign_mask, negated(fmt, target), target]
    return concat_bits(fmt, head, np.where(pick, mult, scale))


def _exact_pairs(fmt: Format, rng: np.random.Generator, target: int, n: int):
    """n pairs with x1 - x2 == target exactly (fewer if the format has fewer)."""
    x2 = _x2_candidates(fmt, rng, target, 8 * n)
    x1, ok = _solve_x1(fmt, x2, target)
    idx = np.flatnonzero(ok)[:n]
    return x1[idx], x2[idx]


def boundary_exact_cases(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    for beta, bflags in _boundary_betas(fmt):
        for sign, flag in ((1, "diff-eq-beta"), (-1, "diff-eq-neg-beta")):
            target = beta if sign > 0 else negated(fmt, beta)
            x1, x2 = _exact_pairs(fmt, rng, target, 48)
            dy = random_dy(fmt, rng, len(x1))
            cases.append(make_case(fmt, dy, x1, x2, beta, (flag, "middle-branch") + bflags))
    return cases


def boundary_neighbours_cases(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    for beta, bflags in _boundary_betas(fmt):
        if beta == max_bits(fmt):
            continue  # its upper neighbours are not finite
        for sign in (1, -1):
            edge = beta if sign > 0 else negated(fmt, beta)
            for k in (-2, -1, 1, 2):
                target = stepped(fmt, edge, k)
                above = k > 0
                where = "beta" if sign > 0 else "neg-beta"
                flag = f"diff-{'above' if above else 'below'}-{where}-{abs(k)}ulp"
                branch = "outer-branch" if (above == (sign > 0)) else "middle-branch"
                x1, x2 = _exact_pairs(fmt, rng, target, 24)
                dy = random_dy(fmt, rng, len(x1))
                cases.append(make_case(fmt, dy, x1, x2, beta, (flag, branch) + bflags))
    return cases


def boundary_rounded_diff_cases(fmt: Format, rng: np.random.Generator) -> list:
    """x1 near +-beta and x2 about half an ulp of it (or the roles swapped), kept where the
    exact diff and the diff rounded to the format lie differently against +-beta."""
    cases = []
    for beta, bflags in _boundary_betas(fmt):
        if beta in (max_bits(fmt), fmt.frac_mask):
            continue  # subnormal diffs are exact; max has no room above
        beta_f = value_of(fmt, beta)
        for sign in (1, -1):
            edge = beta if sign > 0 else negated(fmt, beta)
            m = 1200
            near = bit_array(fmt, [stepped(fmt, edge, int(k)) for k in rng.integers(-1, 2, m)])
            q = ulp_at(fmt, near)
            delta = bits_of(fmt, random_signs(rng, m) * random_significands(fmt, rng, m) * q
                            * 2.0 ** rng.integers(-4, 1, m))
            swap = rng.random(m) < 0.5
            x1 = np.where(swap, delta, near).astype(fmt.uint)
            x2 = np.where(swap, negated(fmt, near), delta).astype(fmt.uint)
            s, e = exact.exact_diff(fmt, x1, x2)
            r = exact.rounded_diff(fmt, x1, x2).astype(np.float64)
            pe, pr = exact.position(s, e, beta_f), exact.position(r, np.zeros(m), beta_f)
            inside = pe == 0
            for side, sel in (("exact-diff-inside", (pe != pr) & inside),
                              ("exact-diff-outside", (pe != pr) & ~inside)):
                idx = np.flatnonzero(sel)[:32]
                if not len(idx):
                    continue
                where = "diff-near-beta" if sign > 0 else "diff-near-neg-beta"
                dy = random_dy(fmt, rng, len(idx), big=False)
                cases.append(make_case(fmt, dy, x1[idx], x2[idx], beta,
                                       ("rounded-diff-crosses-boundary", where, side) + bflags))
    return cases

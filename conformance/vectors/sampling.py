"""Random inputs aimed at the boundaries, drawn fast with numpy.

Uniform random bit patterns almost never land on ``diff == ±beta``, on ties,
or on subnormal results, so a batch mixes several populations (TestFloat-style):
raw bit patterns, values on the scale of beta, special values, and x1 built
from x2 so that ``x1 - x2`` falls on or within a few ULPs of ``±beta``.
Everything is a deterministic function of the numpy Generator passed in. Each batch is an
:class:`sl1conf.adapters.base.Case` of the format (private variant, every core): the one type
for a call's inputs.
"""

from __future__ import annotations

import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.reference.formats import Format

__all__ = ["special_patterns", "random_batch", "fast_batch", "hard_batch", "TYPICAL_BETAS"]

TYPICAL_BETAS = (1.0, 0.1, 0.5, 0.25, 0.3, 2.0, 1.0 / 3.0)
"""Betas in and around the manual's "usually between 0.1 and 1.0"."""


def _drawn(fmt: Format, dy: np.ndarray, x1: np.ndarray, x2: np.ndarray, beta: int) -> Case:
    """A draw as the call it is made for: families and the fuzzer take its arrays (or the call
    itself, given a variant and core_mask with ``Case.replace``). A draw is a Case rather than a
    type of its own so that the inputs of one call have one type, wherever they come from."""
    return Case(fmt.name, dy, x1, x2, int(beta))


def special_patterns(fmt: Format) -> np.ndarray:
    """Both signs of: zero, smallest and largest subnormal, smallest normal,
    one, largest finite, infinity, quiet NaN, signalling NaN."""
    mags = [0, 1, fmt.frac_mask, 1 << fmt.frac_bits,
            (fmt.emax << fmt.frac_bits),  # 1.0: biased exponent == emax
            fmt.inf_bits - 1, fmt.inf_bits, fmt.qnan_bits, fmt.inf_bits | 1]
    mags = np.array(mags, dtype=np.uint64)
    return np.concatenate([mags, mags | fmt.sign_mask]).astype(fmt.uint)


def _random_beta(fmt: Format, rng: np.random.Generator) -> int:
    kind = rng.integers(10)
    if kind < 6:
        value = TYPICAL_BETAS[rng.integers(len(TYPICAL_BETAS))]
    elif kind < 8:
        value = float(2.0 ** rng.uniform(fmt.emin, 6))  # tiny to large
    elif kind == 8:
        return int(rng.integers(1, 1 << fmt.frac_bits))  # subnormal
    else:
        specials = special_patterns(fmt)
        return int(specials[rng.integers(len(specials))])
    return int(np.array([value], dtype=fmt.dtype).view(fmt.uint)[0])


def _scaled(fmt: Format, rng: np.random.Generator, n: int, scale: float) -> np.ndarray:
    """Random signed values log-uniform within a few binades of ``scale``."""
    with np.errstate(all="ignore"):
        mag = scale * 2.0 ** rng.uniform(-6, 3, n)
        vals = np.where(rng.random(n) < 0.5, -mag, mag).astype(fmt.dtype)
    return vals.view(fmt.uint)


def random_batch(fmt: Format, n: int, rng: np.random.Generator, beta: "int | None" = None) -> Case:
    """``n`` elements of boundary-weighted random inputs (beta drawn if not given)."""
    beta = _random_beta(fmt, rng) if beta is None else int(beta)
    beta_f = np.array([beta], dtype=fmt.uint).view(fmt.dtype)[0]
    scale = float(abs(beta_f)) if np.isfinite(beta_f) and beta_f != 0 else 1.0
    specials = special_patterns(fmt)
    raw = lambda: rng.integers(0, 1 << fmt.bits, n, dtype=np.uint64).astype(fmt.uint)  # noqa: E731

    def mix(*choices: np.ndarray, p) -> np.ndarray:
        pick = rng.choice(len(choices), size=n, p=p)
        return np.choose(pick, choices).astype(fmt.uint)

    spec = lambda: specials[rng.integers(len(specials), size=n)]  # noqa: E731
    dy = mix(_scaled(fmt, rng, n, 1.0), raw(), spec(), p=[0.7, 0.2, 0.1])
    x2 = mix(_scaled(fmt, rng, n, scale), raw(), spec(), p=[0.75, 0.15, 0.1])
    # x1 on the boundary: x2 +- beta (rounded), then nudged by -2..2 ULPs.
    with np.errstate(all="ignore"):
        x2f = x2.view(fmt.dtype)
        sign = np.where(rng.random(n) < 0.5, -1, 1).astype(fmt.dtype)
        edge = (x2f + sign * beta_f).astype(fmt.dtype).view(fmt.uint).astype(np.int64)
        edge = edge + rng.integers(-2, 3, n) * (rng.random(n) < 0.5)
        edge = np.clip(edge, 0, (1 << fmt.bits) - 1).astype(fmt.uint)
    x1 = mix(edge, _scaled(fmt, rng, n, scale), raw(), spec(), p=[0.45, 0.35, 0.1, 0.1])
    return _drawn(fmt, dy, x1, x2, beta)


def _seed(rng: np.random.Generator) -> np.ndarray:
    """Four words of ``rng`` to start ``draw``'s xoshiro256** (never all zero, its one bad state)."""
    state = rng.bit_generator.random_raw(4)
    state[0] |= np.uint64(state.any() == 0)
    return state


def _populations(fmt: Format, rng: np.random.Generator, n: int, scale_field: int, shares: tuple,
                 edge: "np.ndarray | None" = None) -> np.ndarray:
    """:func:`random_batch`'s populations from one 64-bit random word per element
    (``draw.populations``, its words seeded from ``rng``): ``edge`` (where given), values from six binades below to two above
    the biased exponent ``scale_field`` (random sign and significand; exponent field 0 gives
    subnormals), raw bit patterns and special values, in those shares (256ths, in that order).
    The word's low bits are the raw pattern and, exponent replaced, the scaled value (an element
    takes one population, so they may share bits); its high bits pick the population, the
    binade (16 codes onto the 9 offsets -6..2, one or two codes each) and the special value."""
    from sl1conf.conformance.vectors import draw

    top = (fmt.exp_mask >> fmt.frac_bits) - 1  # the largest finite exponent field
    fields = np.clip(np.arange(16) * 9 // 16 + (scale_field - 6), 0, top).astype(fmt.uint) << fmt.frac_bits
    out = np.empty(n, fmt.uint)
    draw.populations(_seed(rng), out, fields, special_patterns(fmt),
                     ~fmt.exp_mask & ((1 << fmt.bits) - 1), np.cumsum(shares).astype(np.uint32),
                     edge if edge is not None else np.empty(0, fmt.uint))
    return out


def fast_batch(fmt: Format, n: int, rng: np.random.Generator, beta: "int | None" = None) -> Case:
    """The populations of :func:`random_batch`, in about its shares, drawn in compiled loops from
    raw random words (``draw``): many times faster, for the fuzzer's long calls, where drawing
    dominated. What differs: nine binade offsets drawn with near-uniform weights instead of a
    continuous log-uniform draw; the boundary ``x2 +- beta`` of fp16 data added in fp32, then
    rounded to fp16 (within an ULP of the fp16 sum; half of them are nudged by up to two anyway)."""
    from sl1conf.conformance.vectors import draw

    beta = _random_beta(fmt, rng) if beta is None else int(beta)
    beta_f = np.array([beta], dtype=fmt.uint).view(fmt.dtype)[0]
    finite = bool(np.isfinite(beta_f)) and beta_f != 0
    scale_field = (beta & fmt.exp_mask) >> fmt.frac_bits if finite else fmt.emax
    dy = _populations(fmt, rng, n, fmt.emax, (179, 51, 26))
    x2 = _populations(fmt, rng, n, scale_field, (192, 38, 26))
    edge = np.empty(n, fmt.uint)
    draw.edges(_seed(rng), x2, float(beta_f), edge)
    x1 = _populations(fmt, rng, n, scale_field, (115, 90, 25, 26), edge=edge)
    return _drawn(fmt, dy, x1, x2, beta)


def _pow2(fmt: Format, k: np.ndarray) -> np.ndarray:
    """Bit patterns of 2**k (k within the normal range)."""
    return ((k + fmt.emax).astype(np.int64) << fmt.frac_bits).astype(fmt.uint)


def hard_batch(fmt: Format, n: int, rng: np.random.Generator) -> Case:
    """Inputs where correct rounding is hardest, for cross-checking exact oracles.

    With beta and dy powers of two, ``(x1 - x2) * dy / beta`` is the exact diff
    scaled, so x2 = half an ulp of x1 (or that plus or minus a few of x2's own
    ulps) makes exact ties and near-ties, down into the subnormal range; x2 tiny
    against x1 = +-beta gives huge exponent gaps right at the boundary.
    """
    p = fmt.frac_bits
    beta_exp = int(rng.integers(-4, 5))
    beta = int(_pow2(fmt, np.array([beta_exp]))[0])
    # x1: random normal values on beta's scale, x2: half an ulp of x1 (+- a few ulps of x2).
    e1 = rng.integers(beta_exp - 3, beta_exp + 1, n)
    x1 = (_pow2(fmt, e1).astype(np.int64) | rng.integers(0, 1 << p, n)).astype(fmt.uint)
    half_ulp_exp = np.maximum(e1 - p - 1, fmt.emin)
    x2 = _pow2(fmt, half_ulp_exp).astype(np.int64)
    x2 = np.clip(x2 + rng.integers(-2, 3, n) * (rng.random(n) < 0.5), 1, None).astype(fmt.uint)
    x2 |= (rng.random(n) < 0.5).astype(fmt.uint) * np.array(fmt.sign_mask, fmt.uint)
    # dy: +-1 mostly, or a power of two that pushes the result into the subnormal range.
    dy_exp = np.where(rng.random(n) < 0.6, 0, rng.integers(fmt.emin - 2 - beta_exp // 2, 1, n))
    dy_exp = np.clip(dy_exp, fmt.emin, fmt.emax)
    dy = _pow2(fmt, dy_exp) | (rng.random(n) < 0.5).astype(fmt.uint) * np.array(fmt.sign_mask, fmt.uint)
    # A quarter: exponent gaps at the boundary, x1 = +-beta (or its neighbours), x2 tiny.
    gap = rng.random(n) < 0.25
    edge = (beta + rng.integers(-1, 2, n)).astype(fmt.uint) | (
        (rng.random(n) < 0.5).astype(fmt.uint) * np.array(fmt.sign_mask, fmt.uint))
    tiny = rng.integers(1, 1 << (p + 3), n).astype(fmt.uint)  # subnormal or barely normal
    x1 = np.where(gap, edge, x1).astype(fmt.uint)
    x2 = np.where(gap, tiny | (x2 & fmt.sign_mask), x2).astype(fmt.uint)
    return _drawn(fmt, dy.astype(fmt.uint), x1, x2, beta)

"""Random inputs aimed at the boundaries, drawn fast with numpy.

Uniform random bit patterns almost never land on ``diff == ±beta``, on ties,
or on subnormal results, so a batch mixes several populations (TestFloat-style):
raw bit patterns, values on the scale of beta, special values, and x1 built
from x2 so that ``x1 - x2`` falls on or within a few ULPs of ``±beta``.
Everything is a deterministic function of the numpy Generator passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sl1conf.reference.formats import Format

__all__ = ["Batch", "special_patterns", "random_batch", "TYPICAL_BETAS"]

TYPICAL_BETAS = (1.0, 0.1, 0.5, 0.25, 0.3, 2.0, 1.0 / 3.0)
"""Betas in and around the manual's "usually between 0.1 and 1.0"."""


@dataclass(frozen=True)
class Batch:
    """One batch of bit patterns: dy, x1, x2 arrays and one beta."""

    dy: np.ndarray
    x1: np.ndarray
    x2: np.ndarray
    beta: int

    def floats(self, fmt: Format):
        """(dy, x1, x2, beta) as float arrays of ``fmt`` (beta a numpy scalar)."""
        view = lambda a: np.ascontiguousarray(a, dtype=fmt.uint).view(fmt.dtype)  # noqa: E731
        return view(self.dy), view(self.x1), view(self.x2), view(np.array([self.beta]))[0]


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
        return int(special_patterns(fmt)[rng.integers(len(special_patterns(fmt)))])
    return int(np.array([value], dtype=fmt.dtype).view(fmt.uint)[0])


def _scaled(fmt: Format, rng: np.random.Generator, n: int, scale: float) -> np.ndarray:
    """Random signed values log-uniform within a few binades of ``scale``."""
    with np.errstate(all="ignore"):
        mag = scale * 2.0 ** rng.uniform(-6, 3, n)
        vals = np.where(rng.random(n) < 0.5, -mag, mag).astype(fmt.dtype)
    return vals.view(fmt.uint)


def random_batch(fmt: Format, n: int, rng: np.random.Generator, beta: "int | None" = None) -> Batch:
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
    return Batch(dy, x1, x2, beta)

"""The random families: content that depends on the seed.

random-weighted (12) draws TestFloat-style weighted bit patterns, random-boundary (13)
random data near +-beta (sampling.random_batch), large-random (14, large) one call of
LARGE_LENGTH elements on the shared version, rounding-hard (15) the hardest inputs to round
(sampling.hard_batch).
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.vectors.families.bits import (
    bit_array, bits_of, bits_of_text, float_class, max_bits, min_normal_bits, one_bits, quiet_bit,
)
from sl1conf.conformance.vectors.families.finish import make_case
from sl1conf.conformance.vectors.families.lengths import LARGE_LENGTH, length_flags, plain_batch
from sl1conf.conformance.vectors.sampling import hard_batch, random_batch
from sl1conf.reference import formats
from sl1conf.reference.formats import Format

__all__ = ["random_weighted_cases", "random_boundary_cases", "large_random_cases", "rounding_hard_cases"]


def _weighted_bits(fmt: Format, rng: np.random.Generator, n: int) -> np.ndarray:
    """TestFloat-style random patterns: an exponent class crossed with a significand pattern.

    Exponent classes (weights): zero 4%, subnormal 10%, the lowest normal binades 10%,
    around 1.0 30%, uniform over the normals 28%, the highest binades 10%, inf 4%, NaN 4%.
    Significand patterns: zero, all ones, one bit, a run of ones from the top or the bottom,
    random sparse, random (TestFloat's "boundary significands" crossed with everything).
    """
    p, top = fmt.frac_bits, (1 << fmt.exp_bits) - 1
    cls = rng.choice(8, n, p=[0.04, 0.10, 0.10, 0.30, 0.28, 0.10, 0.04, 0.04])
    field = np.select(
        [cls <= 1, cls == 2, cls == 3, cls == 4, cls == 5],
        [np.zeros(n, np.int64), rng.integers(1, 4, n), fmt.emax + rng.integers(-4, 5, n),
         rng.integers(1, top, n), rng.integers(top - 3, top, n)],
        default=np.full(n, top, np.int64))
    kind = rng.integers(0, 7, n)
    bitpos = rng.integers(0, p, n)
    run = rng.integers(1, p + 1, n)
    full = (1 << p) - 1
    rand = rng.integers(0, 1 << p, n)
    sparse = rand & rng.integers(0, 1 << p, n) & rng.integers(0, 1 << p, n)
    sig = np.select(
        [kind == 0, kind == 1, kind == 2, kind == 3, kind == 4, kind == 5],
        [np.zeros(n, np.int64), np.full(n, full, np.int64), np.left_shift(1, bitpos),
         full ^ (np.left_shift(1, p - run) - 1), np.left_shift(1, run) - 1, sparse],
        default=rand)
    sig = np.where(cls == 0, 0, sig)
    sig = np.where((cls == 1) & (sig == 0), 1, sig)           # subnormal: nonzero
    sig = np.where(cls == 6, 0, sig)                          # inf
    sig = np.where((cls == 7) & (sig == 0), quiet_bit(fmt), sig)  # NaN: nonzero
    sign = (rng.random(n) < 0.5).astype(np.int64) * fmt.sign_mask
    return bit_array(fmt, sign | (field << p) | sig)


def _random_betas(fmt: Format, rng: np.random.Generator, k: int) -> list[int]:
    """Positive finite betas: typical ones, then weighted-random positive finite patterns."""
    fixed = [one_bits(fmt), bits_of_text(fmt, "0.1"), bits_of_text(fmt, "0.5"), bits_of_text(fmt, "0.3"),
             bits_of(fmt, [2.0])[0], bits_of_text(fmt, "1/3"), min_normal_bits(fmt), fmt.frac_mask, max_bits(fmt)]
    out = list(fixed)
    while len(out) < k:
        b = int(_weighted_bits(fmt, rng, 1)[0]) & ~fmt.sign_mask
        if b and float_class(fmt, b) in (formats.FloatClass.NORMAL, formats.FloatClass.SUBNORMAL):
            out.append(b)
    return out[:k]


def random_weighted_cases(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    n = 512
    for beta in _random_betas(fmt, rng, 12):
        dy = _weighted_bits(fmt, rng, n)
        x2 = _weighted_bits(fmt, rng, n)
        x1 = _weighted_bits(fmt, rng, n)
        # a third of x1 close to x2 in the pattern order (small diffs of every exponent)
        near = np.clip(x2.astype(np.int64) + rng.integers(-4, 5, n), 0, (1 << fmt.bits) - 1)
        x1 = np.where(rng.random(n) < 0.33, near, x1).astype(fmt.uint)
        cases.append(make_case(fmt, dy, x1, x2, beta, ("random-bits",)))
    return cases


def random_boundary_cases(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    for beta in _random_betas(fmt, rng, 10):
        bt = random_batch(fmt, 512, rng, beta=beta)
        cases.append(make_case(fmt, bt.dy, bt.x1, bt.x2, beta, ("random-near-boundary",)))
    return cases


def large_random_cases(fmt: Format, rng: np.random.Generator) -> list:
    beta = one_bits(fmt)
    flags = ["large", "uneven-core-split"] + length_flags(LARGE_LENGTH)
    return [make_case(fmt, *plain_batch(fmt, LARGE_LENGTH, rng, beta), beta, flags,
                      variant="s", core_mask=0xFF)]


def rounding_hard_cases(fmt: Format, rng: np.random.Generator) -> list:
    cases = []
    for _ in range(4):
        bt = hard_batch(fmt, 1024, rng)
        cases.append(make_case(fmt, bt.dy, bt.x1, bt.x2, bt.beta, ("rounding-ties",)))
    return cases

"""The accuracy budget's sweeps: the inputs, a chunk at a time, on which every accepted model
is compared with the correctly rounded result (bench/accuracy_budget.py says what each covers).

Each sweep is a generator of (dy, x1, x2, beta_bits): bit-pattern arrays of the data format and
one beta; deterministic for the random generator it is given.
"""

from __future__ import annotations

import math

import numpy as np

from sl1conf.conformance.search.sweep import BLOCK, parse_subset
from sl1conf.conformance.vectors.sampling import hard_batch, random_batch
from sl1conf.reference import formats as F


def bits_of(fmt: F.Format, value: float) -> int:
    return int(np.array([value], dtype=fmt.dtype).view(fmt.uint)[0])


def scalar(fmt: F.Format, bits: int):
    return np.array([bits], dtype=fmt.uint).view(fmt.dtype)[0]


# --------------------------------------------------------------------------------------
# fp16 sweeps

FP16 = F.FP16
BETAS16 = (("0.1", bits_of(FP16, 0.1)), ("0.3", bits_of(FP16, 0.3)), ("1/3", bits_of(FP16, 1 / 3)),
           ("0.5", bits_of(FP16, 0.5)), ("1", bits_of(FP16, 1.0)), ("2", bits_of(FP16, 2.0)),
           ("2^-10", bits_of(FP16, 2.0 ** -10)), ("subnormal 0x0155", 0x0155),
           ("-1 (beta < 0: open)", bits_of(FP16, -1.0)))
DYS16 = (1.0, -1.0, 0.7, 3.0, 1000.0, 2.0 ** -20, 65504.0)
DY_LABELS = {2.0 ** -20: "2^-20", 2.0 ** -140: "2^-140", 3.0e38: "3e38", 1.0e-30: "1e-30"}


def dy_label(v: float) -> str:
    return DY_LABELS.get(v, f"{v:g}")


def x2_grid16(beta_bits: int, rng: np.random.Generator, size: int = 64) -> np.ndarray:
    """x2 values for the every-x1 sweep: zeros, +-beta and its neighbours, +-2beta, +-beta/2,
    the range's edges, and values with varied significands spread over every binade."""
    beta = abs(float(scalar(FP16, beta_bits)))
    s = FP16.sign_mask
    beta_bits &= ~s & 0xFFFF
    special = [0x0000, s, beta_bits, beta_bits + 1, beta_bits - 1, beta_bits | s, (beta_bits + 1) | s,
               (beta_bits - 1) | s, bits_of(FP16, 2 * beta), bits_of(FP16, -2 * beta),
               bits_of(FP16, beta / 2), bits_of(FP16, -beta / 2), 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400,
               0x8400, 0x7bff, 0xfbff]
    k = (size - len(special)) // 2
    exps = np.linspace(-24, 15, k)
    mags = (2.0 ** exps) * (1.0 + rng.random(k))
    spread = np.concatenate([mags, -mags]).astype(np.float16).view(np.uint16)
    grid = np.concatenate([np.array(special, np.uint16), spread])[:size]
    return grid.astype(np.uint16)


def sweep_fp16_all_patterns(rng, betas, dys, grid_size, *, every: str = "x1"):
    """Every pattern of one input (``every``: x1 or x2) against a grid of values of the other."""
    all_patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for _, beta_bits in betas:
        grid = x2_grid16(beta_bits, rng)
        if grid_size < len(grid):
            grid = grid[np.linspace(0, len(grid) - 1, grid_size).round().astype(int)]
        swept, fixed = np.tile(all_patterns, grid.size), np.repeat(grid, all_patterns.size)
        x1, x2 = (swept, fixed) if every == "x1" else (fixed, swept)
        for dy in dys:
            yield np.full(x1.size, bits_of(FP16, dy), np.uint16), x1, x2, beta_bits


def pairs16(beta_bits: int, rng: np.random.Generator, count: int):
    """(x1, x2) pairs with x1 - x2 in and around the middle line: x2 over the binades near
    beta's, x1 = x2 + t beta rounded, t exactly +-1, inside (-1, 1) and just outside."""
    beta = abs(float(scalar(FP16, beta_bits)))
    eb = math.floor(math.log2(beta))
    k = rng.integers(max(-24, eb - 12), min(15, eb + 3) + 1, count)
    x2 = (1.0 + rng.random(count)) * 2.0 ** k * np.where(rng.random(count) < 0.5, -1, 1)
    kind = rng.random(count)
    t = np.where(kind < 0.15, np.sign(rng.random(count) - 0.5),
                 np.where(kind < 0.85, rng.uniform(-1, 1, count),
                          np.sign(rng.random(count) - 0.5) * rng.uniform(1, 1.1, count)))
    with np.errstate(all="ignore"):
        x1 = (x2 + t * beta).astype(np.float16)
    return x1.view(np.uint16), x2.astype(np.float16).view(np.uint16)


def sweep_fp16_dy_all(rng, betas, pairs):
    dy_all = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for _, beta_bits in betas:
        x1p, x2p = pairs16(beta_bits, rng, pairs)
        yield np.tile(dy_all, pairs), np.repeat(x1p, dy_all.size), np.repeat(x2p, dy_all.size), beta_bits


PAIRS16 = (("0.1", bits_of(FP16, 0.1), "1+2^-10", 0x3C01),
           ("1/3", bits_of(FP16, 1 / 3), "1000", bits_of(FP16, 1000.0)))
"""(beta, dy) of the exhaustive pair sweep: neither beta nor dy a power of two, so every rounding
step of every model is active; dy = 1000 (significand 1.95) puts results near the top of a binade."""


def sweep_fp16_pairs(pairs, subset_text: str):
    """Every (x1, x2) pair of a ``sl1conf sweep`` subset, a block at a time, for each (beta, dy)."""
    for _, beta_bits, _, dy_bits in pairs:
        subset = parse_subset(subset_text, beta_bits)
        for lo in range(0, subset.size, BLOCK):
            x1, x2 = subset.pairs(lo, min(lo + BLOCK, subset.size))
            yield np.full(x1.size, dy_bits, np.uint16), x1, x2, beta_bits


# --------------------------------------------------------------------------------------
# fp32 sweeps

FP32 = F.FP32
BETAS32 = (("0.1", bits_of(FP32, 0.1)), ("0.3", bits_of(FP32, 0.3)), ("1/3", bits_of(FP32, 1 / 3)),
           ("0.5", bits_of(FP32, 0.5)), ("1", bits_of(FP32, 1.0)), ("2", bits_of(FP32, 2.0)),
           ("2^-10", bits_of(FP32, 2.0 ** -10)), ("subnormal 0x00012345", 0x00012345),
           ("2^-120", bits_of(FP32, 2.0 ** -120)), ("2^100", bits_of(FP32, 2.0 ** 100)),
           ("1.5*2^126", bits_of(FP32, 1.5 * 2.0 ** 126)), ("-0.3 (beta < 0: open)", bits_of(FP32, -0.3)))
DYS32 = (1.0, -1.0, 0.7, 3.0, 1000.0, 2.0 ** -20, 65504.0, 3.0e38, 1.0e-30, 2.0 ** -140)


def _f32(values) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(values, np.float64).astype(np.float32).view(np.uint32)


def _nudge(rng, bits: np.ndarray, p: float = 0.5) -> np.ndarray:
    """Move half of the patterns by -2..2 steps (sign-magnitude, clipped to the sign's range)."""
    n = bits.size
    step = rng.integers(-2, 3, n) * (rng.random(n) < p)
    mag = (bits & 0x7FFFFFFF).astype(np.int64) + step
    mag = np.clip(mag, 0, 0x7F800000)
    return ((bits & 0x80000000).astype(np.int64) | mag).astype(np.uint32)


def sweep_fp32_binades(rng, betas, dys, n):
    """x1 over the binades from 2^-30 beta to 2^4 beta (all of the range for extreme betas),
    x2 = x1 - s t beta rounded, t == 1 (the boundary), in (0, 1) or just above 1, nudged."""
    for _, beta_bits in betas:
        beta = abs(float(scalar(FP32, beta_bits)))
        eb = math.floor(math.log2(beta))
        k = rng.integers(max(-149, eb - 30), min(127, eb + 4) + 1, n)
        x1v = (1.0 + rng.random(n)) * 2.0 ** k * np.where(rng.random(n) < 0.5, -1, 1)
        x1 = _f32(x1v)
        kind = rng.random(n)
        t = np.where(kind < 0.25, 1.0, np.where(kind < 0.8, rng.random(n), rng.uniform(1, 1.001, n)))
        s = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        x2 = _nudge(rng, _f32(x1.view(np.float32).astype(np.float64) - s * t * beta))
        for dy in dys:
            yield np.full(n, bits_of(FP32, dy), np.uint32), x1, x2, beta_bits


def adversarial_betas32(rng, count: int):
    """Betas whose reciprocal rounds by nearly half an ulp, in each direction: significands
    just below 2 (1/beta just above a power of two, where the relative error of rounding is
    largest) and just above 1; plus the typical 0.1, 0.3, 1/3."""
    out = []
    for base, sign in ((0x40000000, -1), (0x3F800000, 1)):
        ks = np.arange(1, 4097, dtype=np.int64)
        b = (base + sign * ks).astype(np.uint32).view(np.float32).astype(np.float64)
        r = 1.0 / b
        # relative error of the rounded reciprocal, in units of u = 2^-24
        rel = (r.astype(np.float32).astype(np.float64) - r) / r / 2.0 ** -24
        order = np.argsort(rel)
        pick = list(order[:count]) + list(order[::-1][:count])
        out += [(f"{'2-' if sign < 0 else '1+'}{int(ks[i])}ulp (1/beta rel. err {rel[i]:+.3f}u)",
                 int(base + sign * ks[i])) for i in pick]
    out += [(name, bits) for name, bits in BETAS32[:3]]
    return out


def sweep_fp32_adversarial(rng, n_x1, n_betas):
    """Where the bounds of the analysis are reached: diff's significand near 1 and its
    rounding near half an ulp (x2 a fraction of x1's ulp), 1/beta or diff/beta rounded by
    nearly half an ulp, dy's significand near 2 or 1.5 (the result near the top of a binade)."""
    for _, beta_bits in adversarial_betas32(rng, n_betas):
        beta = float(scalar(FP32, beta_bits))
        e = math.floor(math.log2(beta))
        if beta / 2.0 ** e < 1.5:
            e -= 1  # keep most of x1 inside the middle line
        stride = int(rng.integers(1, 64))
        sig = (np.arange(n_x1, dtype=np.int64) * stride) & 0x7FFFFF
        x1 = (((e + 127) << 23) | sig).astype(np.uint32)  # consecutive significands in beta's binade
        ulp_x1 = 2.0 ** (e - 23)
        for frac in (0.0, 0.49, 0.499, -0.49, -0.499, 0.25):
            x2 = np.full(n_x1, bits_of(FP32, frac * ulp_x1), np.uint32)
            for dsig in (2 - 2.0 ** -23, 2 - 3 * 2.0 ** -23, 1.5 + 2.0 ** -23, 1 + 2.0 ** -23,
                         1 + rng.random() / 1024, 1 + rng.random()):
                dy = dsig * 2.0 ** int(rng.integers(-8, 9)) * (1 if rng.random() < 0.5 else -1)
                yield np.full(n_x1, bits_of(FP32, dy), np.uint32), x1, x2, beta_bits


def sweep_fp32_random(rng, n, batch):
    for i in range(0, n, batch):
        b = random_batch(FP32, min(batch, n - i), rng)
        yield b.dy, b.x1, b.x2, b.beta


def sweep_fp32_hard(rng, n, batch):
    for i in range(0, n, batch):
        b = hard_batch(FP32, min(batch, n - i), rng)
        yield b.dy, b.x1, b.x2, b.beta


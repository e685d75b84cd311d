"""The accuracy budget, derived: how far every ACCEPTED evaluation model lands from the
correctly rounded result, measured on large structured sweeps and bounded by hand.

    python bench/accuracy_budget.py [--quick] [--out PREFIX] [--seed 2026] [--render-only]

Writes PREFIX.json (every count) and PREFIX.md (the error analysis, the measured tables,
the budget), each atomically. PREFIX defaults to docs/accuracy-budget; with --quick (a
short run, under 30 s) it defaults to bench/results/tmp/accuracy-budget-quick, so a quick
check never replaces the committed numbers. The page's prose is
docs/accuracy-budget.template.md, whose ``$name`` placeholders this script fills with the
tables; --render-only runs no sweep and rewrites PREFIX.md from PREFIX.json (after an
edit of the prose, or to check that the committed page is what its numbers give).

For each model of ``sl1conf.reference.models.ACCEPTED`` and each data format it applies
to, every element is compared with the correctly rounded result of the fast oracle
(``sl1conf.reference.fast_oracle``; the models come from the Cython kernel) and sorted into
"ordinary" elements (all inputs finite, beta > 0, the exact result a normal number, no
exact intermediate outside the normal range) and the rest, by reason. Per model and class:
elements, the ULP histogram (0, 1, 2, 3, 4+), NaN-vs-number and inf-vs-finite mismatches,
the largest ULP distance and the element that reaches it. Every reported worst element is
checked again against the mpmath oracle and the numpy emulation of the model.

Sweeps (deterministic for a seed):
  fp16-x1-all   every fp16 x1 pattern x 64 x2 values (binades, near +-beta, specials)
                x 8 betas x 7 dy values
  fp16-dy-all   every fp16 dy pattern x 64 (x1, x2) pairs in and around the middle line x 8 betas
  fp16-pairs    every (x1, x2) pair whose exact diff lies within 64 fp16 steps of +-beta, for two
                (beta, dy): the ``sl1conf sweep`` subset around-beta:64 (--quick: 8). The 2^32-pair
                sweeps of each model, without the classes, are in docs/sweeps.md.
  fp32-binades  x1 over many binades x x2 on or near x1 -+ t*beta, 11 betas x 10 dy values
  fp32-adversarial  consecutive x1 significands x x2 offsets that make x1 - x2 round by
                nearly half an ulp x betas whose reciprocal rounds by nearly half an ulp x
                dy with significands near 2 and 1.5: where the error bounds are reached
  fp32-random   sl1conf.conformance.vectors.sampling.random_batch (boundary-weighted)
  fp32-hard     sampling.hard_batch (ties and near-ties; slow: a third goes to mpmath)
"""

from __future__ import annotations

import argparse
import json
import math
import string
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from sl1conf.conformance.common.commands import explain_command
from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.common.hostinfo import describe_host
from sl1conf.conformance.reports.markdown import markdown_table
from sl1conf.conformance.rules.profiles import PROFILE_DIR
from sl1conf.conformance.search.sweep import BLOCK, parse_subset
from sl1conf.conformance.vectors.sampling import hard_batch, random_batch
from sl1conf.reference import fast_oracle, kernel
from sl1conf.reference import formats as F
from sl1conf.reference.models import ACCEPTED, get_model
from sl1conf.reference.oracle import evaluate_element

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "docs" / "accuracy-budget.template.md"
"""The page's prose; ``$name`` placeholders (string.Template) stand for what a run measures."""

CATEGORIES = (
    ("ordinary", "all inputs finite, beta > 0, exact result normal, every exact intermediate "
                 "(diff; and where the middle line is reachable diff*dy, diff/beta, 1/beta) zero or "
                 "within the normal range"),
    ("input-nan-inf", "dy, x1, x2 or beta is NaN or infinite"),
    ("beta-not-positive", "beta <= 0 (open cases, docs/special-values.md rows 21-23, 25)"),
    ("result-zero", "the exact result is zero (diff == 0 or dy == 0 in the middle line, dy == 0 outside)"),
    ("result-subnormal", "the exact result is nonzero and below the smallest normal"),
    ("diff-overflow", "x1 - x2 rounds to infinity in the data format"),
    ("diff-underflow", "x1 - x2 is nonzero and below the smallest normal"),
    ("product-range", "middle line reachable, diff * dy nonzero and outside the normal range"),
    ("quotient-range", "middle line reachable, diff / beta nonzero and outside the normal range"),
    ("reciprocal-range", "middle line reachable, 1 / beta outside the normal range"),
)
"""Classes of elements; an element gets the first that applies (0 when none does)."""
CAT_NAMES = [c for c, _ in CATEGORIES]
NCAT = len(CATEGORIES)
BINS = ("0", "1", "2", "3", "4+", "nan-vs-number", "inf-vs-finite")
NBIN = len(BINS)
B_NAN, B_INF = 5, 6

BOUNDS = {
    # (model, dtype): the hand-derived worst case on ordinary elements, in ULPs
    ("divmul-fp16", "fp16"): 2,
    ("divmul-fp32", "fp16"): 1,
    ("recipmul-fp32", "fp16"): 1,
    ("muldiv-fp32", "fp16"): 1,
    ("divmul-fp32", "fp32"): 2,
    ("recipmul-fp32", "fp32"): 3,
    ("muldiv-fp32", "fp32"): 2,
}


def bits_of(fmt: F.Format, value: float) -> int:
    return int(np.array([value], dtype=fmt.dtype).view(fmt.uint)[0])


def scalar(fmt: F.Format, bits: int):
    return np.array([bits], dtype=fmt.uint).view(fmt.dtype)[0]


def models_for_dtype(dtype: str) -> list[str]:
    return [m for m in ACCEPTED if get_model(m).applies_to(dtype)]


# --------------------------------------------------------------------------------------
# classification


def classify(fmt: F.Format, dy: np.ndarray, x1: np.ndarray, x2: np.ndarray, beta) -> np.ndarray:
    """The class (index into CATEGORIES) of every element, from the exact values.

    In binary64: for fp16 data diff and diff * dy are exact there and each other quantity
    is one correctly rounded operation, so every threshold test is exact; for fp32 data
    diff is rounded to 53 bits, which can only misplace elements within 2^-53 of a threshold.
    "Middle line reachable": |diff| <= beta (1 + 2^(2-p)), which covers a rounded diff that
    lands on +-beta in any compute precision at least as wide as the data.
    """
    b = float(beta)
    mn = float(fmt.min_normal)
    ovf = float(fmt.max_finite) + 2.0 ** (fmt.emax - fmt.precision)  # rounds to inf from here on
    code = np.zeros(dy.shape, np.uint8)
    with np.errstate(all="ignore"):
        a = np.abs(dy.astype(np.float64))
        d = x1.astype(np.float64) - x2.astype(np.float64)
        nonfinite = ~(np.isfinite(a) & np.isfinite(d))
        if not math.isfinite(b):
            code[:] = 1
            return code
        if b <= 0:
            code[:] = 2
            code[nonfinite] = 1
            return code

        def oor(v):
            return (v != 0) & ((v < mn) | (v >= ovf))

        d = np.abs(d, out=d)
        reach = d <= b * (1.0 + 2.0 ** (2 - fmt.precision))
        if oor(1.0 / b):
            code[reach] = 9
        code[reach & oor(d / b)] = 8
        code[reach & oor(d * a)] = 7
        code[(d != 0) & (d < mn)] = 6
        code[d >= ovf] = 5
        res = np.where(d <= b, d * a / b, a)
        code[(res != 0) & (res < mn)] = 4
        code[res == 0] = 3
        code[nonfinite] = 1
    return code


# --------------------------------------------------------------------------------------
# tallies


class Tally:
    """One model on one data format: histograms, maxima and worst elements per class."""

    def __init__(self, fmt: F.Format, model: str):
        self.fmt, self.model = fmt, model
        self.hist = np.zeros((NCAT, NBIN), np.int64)
        self.max = np.full(NCAT, -1, np.int64)
        self.worst: list = [None] * NCAT
        self.mismatch: dict = {}  # (class, bin) -> first example
        self.zero_sign = np.zeros(NCAT, np.int64)

    def _example(self, sweep, dy, x1, x2, beta_bits, got, want, i, ulp):
        h = lambda v: F.hex_bits(self.fmt, int(v))  # noqa: E731
        return {"sweep": sweep, "dy": h(dy[i]), "x1": h(x1[i]), "x2": h(x2[i]), "beta": h(beta_bits),
                "got": h(got[i]), "want": h(want[i]), "ulp": ulp}

    def add(self, sweep, cat, counts, got, want, dy, x1, x2, beta_bits):
        fmt = self.fmt
        self.hist[:, 0] += counts
        neq = np.flatnonzero(got != want)
        if neq.size == 0:
            return
        g, w, c = got[neq], want[neq], cat[neq].astype(np.int64)
        gn, wn = F.is_nan_bits(fmt, g), F.is_nan_bits(fmt, w)
        mag = fmt.exp_mask | fmt.frac_mask
        ginf, winf = (g & mag) == fmt.inf_bits, (w & mag) == fmt.inf_bits
        nanmis = gn ^ wn
        infmis = ~gn & ~wn & (ginf | winf)  # g != w here: one side infinite, the other not the same inf
        dist = np.abs(F.ordered(fmt, g) - F.ordered(fmt, w))
        dist[gn & wn] = 0
        bins = np.minimum(dist, 4)
        bins[nanmis] = B_NAN
        bins[infmis] = B_INF
        self.hist -= np.bincount(c * NBIN, minlength=NCAT * NBIN).reshape(NCAT, NBIN)  # undo their bin 0
        self.hist += np.bincount(c * NBIN + bins, minlength=NCAT * NBIN).reshape(NCAT, NBIN)
        self.zero_sign += np.bincount(c[(dist == 0) & ~(gn & wn) & ~nanmis & ~infmis], minlength=NCAT)
        valid = ~nanmis & ~infmis
        dv = np.where(valid, dist, -1)
        for k in np.unique(c):
            dk = np.where(c == k, dv, -1)
            i = int(np.argmax(dk))
            if dk[i] > self.max[k]:
                self.max[k] = dk[i]
                self.worst[k] = self._example(sweep, dy, x1, x2, beta_bits, got, want, neq[i], int(dk[i]))
        for b_, mask in ((B_NAN, nanmis), (B_INF, infmis)):
            if mask.any():
                for k in np.unique(c[mask]):
                    if (int(k), b_) not in self.mismatch:
                        i = int(np.flatnonzero(mask & (c == k))[0])
                        self.mismatch[int(k), b_] = self._example(sweep, dy, x1, x2, beta_bits, got, want,
                                                                  neq[i], BINS[b_])

    def examples(self):
        """(class, kind, example) for every recorded element."""
        out = [(k, "worst", self.worst[k]) for k in range(NCAT) if self.worst[k] is not None]
        out += [(k, BINS[b], ex) for (k, b), ex in sorted(self.mismatch.items())]
        return out


class Run:
    """Everything measured: per data format, the sweeps and one Tally per model."""

    def __init__(self):
        self.tallies = {d: {m: Tally(F.format_by_name(d), m) for m in models_for_dtype(d)} for d in ("fp16", "fp32")}
        self.cat_counts = {d: np.zeros(NCAT, np.int64) for d in ("fp16", "fp32")}
        self.sweeps: list[dict] = []
        self.timing = {"oracle": 0.0, "models": 0.0, "classify": 0.0, "tally": 0.0, "inputs": 0.0}

    def sweep(self, name, dtype, description, chunks):
        fmt = F.format_by_name(dtype)
        rec = {"name": name, "dtype": dtype, "description": description, "elements": 0, "chunks": 0,
               "fallbacks": 0, "seconds": 0.0}
        t0 = time.perf_counter()
        it = iter(chunks)
        while True:
            ti = time.perf_counter()
            try:
                dy, x1, x2, beta_bits = next(it)
            except StopIteration:
                break
            self.timing["inputs"] += time.perf_counter() - ti
            self.chunk(fmt, name, rec, dy, x1, x2, beta_bits)
        rec["seconds"] = round(time.perf_counter() - t0, 2)
        self.sweeps.append(rec)
        print(f"  {name:<18} {rec['elements']:>12,} elements  {rec['seconds']:7.1f} s"
              f"  (mpmath fallbacks {rec['fallbacks']:,})", flush=True)

    def chunk(self, fmt, name, rec, dy, x1, x2, beta_bits):
        """dy, x1, x2: bit-pattern arrays (fmt.uint); beta_bits an int."""
        dyf, x1f, x2f = (np.ascontiguousarray(a, dtype=fmt.uint).view(fmt.dtype) for a in (dy, x1, x2))
        beta = scalar(fmt, beta_bits)
        t = time.perf_counter()
        res = fast_oracle.evaluate(dyf, x1f, x2f, beta)
        want = res.out.view(fmt.uint)
        self.timing["oracle"] += time.perf_counter() - t
        t = time.perf_counter()
        cat = classify(fmt, dyf, x1f, x2f, beta)
        counts = np.bincount(cat, minlength=NCAT)
        self.cat_counts[fmt.name] += counts
        self.timing["classify"] += time.perf_counter() - t
        out = np.empty_like(dyf)
        for m, tally in self.tallies[fmt.name].items():
            t = time.perf_counter()
            got = kernel.smoothl1lossgrad(dyf, x1f, x2f, beta, out=out, model=m).view(fmt.uint)
            t2 = time.perf_counter()
            self.timing["models"] += t2 - t
            tally.add(name, cat, counts, got, want, dyf.view(fmt.uint), x1f.view(fmt.uint),
                      x2f.view(fmt.uint), beta_bits)
            self.timing["tally"] += time.perf_counter() - t2
        rec["elements"] += int(dyf.size)
        rec["chunks"] += 1
        rec["fallbacks"] += int(res.fallbacks)


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


# --------------------------------------------------------------------------------------
# verification of the reported elements


def verify(run: Run) -> int:
    """Recompute every reported element with the mpmath oracle and the numpy emulation."""
    bad = 0
    for dtype, tallies in run.tallies.items():
        fmt = F.format_by_name(dtype)
        for m, tally in tallies.items():
            for _, _, ex in tally.examples():
                vals = [int(ex[k], 16) for k in ("dy", "x1", "x2", "beta")]
                want = evaluate_element(fmt, *vals).bits
                arrs = [np.array([v], fmt.uint).view(fmt.dtype) for v in vals[:3]]
                got = int(get_model(m)(*arrs, scalar(fmt, vals[3])).view(fmt.uint)[0])
                ok = bool(F.same_result(fmt, np.array([want], fmt.uint), np.array([int(ex["want"], 16)], fmt.uint))[0]
                          and F.same_result(fmt, np.array([got], fmt.uint), np.array([int(ex["got"], 16)], fmt.uint))[0])
                ex["verified"] = ok
                bad += not ok
    return bad


# --------------------------------------------------------------------------------------
# report


def summarize(run: Run) -> dict:
    out = {}
    for dtype, tallies in run.tallies.items():
        rows = {}
        for m, t in tallies.items():
            other = t.hist[1:].sum(axis=0)
            n = t.hist.sum(axis=1)
            # a class with elements and no finite mismatch has max 0; -1 marks an empty class
            mx = np.where(n > 0, np.maximum(t.max, 0), -1)
            rows[m] = {
                "elements": int(t.hist.sum()),
                "bound_ordinary": BOUNDS[m, dtype],
                "ordinary": {"elements": int(n[0]), "max_ulp": int(mx[0]),
                             "histogram": dict(zip(BINS, map(int, t.hist[0]))),
                             "zero_sign_mismatches": int(t.zero_sign[0]), "worst": t.worst[0]},
                "other": {"elements": int(other.sum()), "max_ulp": int(mx[1:].max()),
                          "histogram": dict(zip(BINS, map(int, other))),
                          "zero_sign_mismatches": int(t.zero_sign[1:].sum()),
                          "worst": t.worst[1 + int(np.argmax(t.max[1:]))] if t.max[1:].max() >= 0 else None},
                "classes": {CAT_NAMES[k]: {"elements": int(n[k]), "max_ulp": int(mx[k]),
                                           "histogram": dict(zip(BINS, map(int, t.hist[k]))),
                                           "zero_sign_mismatches": int(t.zero_sign[k]),
                                           "worst": t.worst[k],
                                           "nan_vs_number_example": t.mismatch.get((k, B_NAN)),
                                           "inf_vs_finite_example": t.mismatch.get((k, B_INF))}
                            for k in range(NCAT)},
            }
        measured = max(r["ordinary"]["max_ulp"] for r in rows.values())
        bound = max(r["bound_ordinary"] for r in rows.values())
        mism = sum(r["ordinary"]["histogram"]["nan-vs-number"] + r["ordinary"]["histogram"]["inf-vs-finite"]
                   for r in rows.values())
        out[dtype] = {"models": rows, "elements": int(run.cat_counts[dtype].sum()),
                      "class_elements": dict(zip(CAT_NAMES, map(int, run.cat_counts[dtype]))),
                      "measured_max_ulp_ordinary": measured, "bound_max_ulp_ordinary": bound,
                      "ordinary_nan_inf_mismatches": int(mism),
                      "budget": max(measured, bound)}
    return out


def profile_check(summary: dict) -> list[dict]:
    """The built-in platform profiles' max_ulp against the derived budget (read only)."""
    import tomllib

    rows = []
    for path in sorted(PROFILE_DIR.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        for dtype, value in sorted((data.get("max_ulp") or {}).items()):
            if dtype in summary:
                need = summary[dtype]["budget"]
                short = [m for m, r in summary[dtype]["models"].items()
                         if max(r["ordinary"]["max_ulp"], r["bound_ordinary"]) > value]
                rows.append({"profile": path.stem, "dtype": dtype, "max_ulp": value, "derived": need,
                             "ok": value >= need, "models_beyond": short})
    return rows


def flipped(ex) -> bool:
    """The worst element's result has the other sign than the correctly rounded one (both nonzero)."""
    if ex is None:
        return False
    g, w = int(ex["got"], 16), int(ex["want"], 16)
    top = 1 << (len(ex["got"]) * 4 - 9)  # 0x8000 or 0x80000000
    return bool((g ^ w) & top) and (g & (top - 1)) != 0 and (w & (top - 1)) != 0


def fmt_hist(h: dict) -> str:
    return " / ".join(f"{h[b]:,}" for b in BINS[:5])


def _provenance(meta: dict) -> str:
    text = (f"Written by `python bench/accuracy_budget.py{' --quick' if meta['quick'] else ''}` on {meta['date']} "
            f"in {meta['runtime_s']:.0f} s (seed {meta['seed']}; {meta['machine']['cpus_available']} CPUs, "
            f"{meta['machine']['cpu']}; kernel ISA {meta['machine']['kernel_isa']}; numpy "
            f"{meta['machine']['numpy']}). Raw numbers: `{meta['json_name']}`.")
    if meta["quick"]:
        text += "\n\n**Quick run**: small sweeps for a smoke test. The committed budget comes from a full run."
    return text


def _measured_table(summary: dict) -> str:
    rows = []
    for dtype, s in summary.items():
        for m, r in s["models"].items():
            o, t = r["ordinary"], r["other"]
            rows.append([f"`{m}`", dtype, f"{r['elements']:,}", f"{o['elements']:,}",
                         f"**{o['max_ulp']}** ({r['bound_ordinary']})", fmt_hist(o["histogram"]), t["max_ulp"],
                         fmt_hist(t["histogram"]),
                         f"{o['histogram']['nan-vs-number']:,} / {t['histogram']['nan-vs-number']:,}",
                         f"{o['histogram']['inf-vs-finite']:,} / {t['histogram']['inf-vs-finite']:,}"])
    return markdown_table(["model", "dtype", "elements", "ordinary", "max ULP ordinary (bound)",
                           "ordinary 0 / 1 / 2 / 3 / 4+", "max ULP other", "other 0 / 1 / 2 / 3 / 4+",
                           "NaN vs number (ord. / other)", "inf vs finite (ord. / other)"], rows)


def _explained(text: str, dtype: str, ex: dict) -> str:
    """A list item and, on its next line, the command that takes its element apart."""
    return f"- {text}  \n  `{explain_command(dtype, ex['dy'], ex['x1'], ex['x2'], ex['beta'])}`"


def _ordinary_worst(summary: dict) -> str:
    items = []
    for dtype, s in summary.items():
        for m, r in s["models"].items():
            ex = r["ordinary"]["worst"]
            if ex is not None:
                items.append(_explained(f"`{m}`, {dtype}, {ex['ulp']} ULP (sweep {ex['sweep']}; got {ex['got']}, "
                                        f"correctly rounded {ex['want']}"
                                        f"{'' if ex.get('verified') else '; NOT CONFIRMED by the mpmath oracle'}):",
                                        dtype, ex))
    return "\n".join(items)


def _class_section(dtype: str, s: dict) -> str:
    """Section 2 for one data format: max ULP per class and model, and what lies beyond the budget."""
    budget, models = s["budget"], list(s["models"])
    rows = []
    for name in CAT_NAMES:
        if s["class_elements"][name] == 0:
            continue
        cells = []
        for m in models:
            c = s["models"][m]["classes"][name]
            cell = "-" if c["max_ulp"] < 0 else str(c["max_ulp"])
            extra = []
            if c["histogram"]["nan-vs-number"]:
                extra.append(f"n {c['histogram']['nan-vs-number']:,}")
            if c["histogram"]["inf-vs-finite"]:
                extra.append(f"i {c['histogram']['inf-vs-finite']:,}")
            if c["max_ulp"] > budget or extra:
                cell = f"**{cell}**"
            cells.append(cell + (f" ({', '.join(extra)})" if extra else ""))
        rows.append([name, f"{s['class_elements'][name]:,}", *cells])
    zero_sign = ", ".join(f"`{m}` {sum(c['zero_sign_mismatches'] for c in s['models'][m]['classes'].values()):,}"
                          for m in models)
    out = [f"### {dtype}", "",
           "Max ULP per class (`n` NaN vs number, `i` inf vs finite mismatches when there are any):", "",
           markdown_table(["class", "elements", *(f"`{m}`" for m in models)], rows), "",
           f"Zero results with the other sign (+0 against -0, distance 0 above): {zero_sign}.", ""]
    beyond = []
    for m in models:
        for name in CAT_NAMES[1:]:
            c = s["models"][m]["classes"][name]
            if c["max_ulp"] > budget:
                beyond.append((m, name, f"{c['max_ulp']} ULP", c["worst"]))
            for key, label in (("nan_vs_number_example", "NaN vs number"), ("inf_vs_finite_example", "inf vs finite")):
                if c[key] is not None:
                    beyond.append((m, name, label, c[key]))
    if not beyond:
        return "\n".join(out + [f"No {dtype} element of any class is beyond {budget} ULP or a NaN / infinity mismatch."])
    out += [f"Beyond the {dtype} budget of {budget} ULP, or NaN / infinity where the correctly rounded result is "
            f"not (the engine must accept these models' exact bits here; widening the budget would not be "
            f"enough, and would let real defects through):", ""]
    out += [_explained(f"`{m}`, {name}, {what}: got {ex['got']}, correctly rounded {ex['want']}"
                       f"{'' if ex.get('verified') else ' (NOT CONFIRMED)'}", dtype, ex)
            for m, name, what, ex in beyond]
    return "\n".join(out)


def _bounds_table(summary: dict) -> str:
    rows = []
    for dtype, s in summary.items():
        for m, r in s["models"].items():
            got, bound = r["ordinary"]["max_ulp"], r["bound_ordinary"]
            verdict = ("yes" if got == bound else
                       "no: the sweep stays below the bound" if got < bound else
                       "**EXCEEDED: the analysis is wrong somewhere**")
            rows.append([f"`{m}`", dtype, bound, got, verdict])
    return markdown_table(["model", "dtype", "bound (ordinary)", "measured max (ordinary)", "reached?"], rows)


def _budget_list(summary: dict) -> str:
    items = []
    for dtype, s in summary.items():
        worst = [m for m, r in s["models"].items()
                 if max(r["ordinary"]["max_ulp"], r["bound_ordinary"]) == s["budget"]]
        items.append(f"- **{dtype}: max_ulp = {s['budget']}.** The largest proven bound over the accepted models "
                     f"is {s['bound_max_ulp_ordinary']} and the sweeps reach {s['measured_max_ulp_ordinary']} on "
                     f"ordinary elements ({', '.join(f'`{m}`' for m in worst)}). A smaller budget would fail an "
                     f"accepted model's own ordinary results; a larger one is not needed by any of them. "
                     f"NaN or infinity mismatches on ordinary elements: {s['ordinary_nan_inf_mismatches']}.")
    return "\n".join(items)


def _beyond_budget_list(summary: dict) -> str:
    items = []
    for dtype, s in summary.items():
        parts = []
        for m, r in s["models"].items():
            cls = [f"{name} ({'sign flip' if flipped(c['worst']) else str(c['max_ulp']) + ' ULP'}"
                   + (", NaN" if c["histogram"]["nan-vs-number"] else "")
                   + (", inf" if c["histogram"]["inf-vs-finite"] else "") + ")"
                   for name, c in r["classes"].items()
                   if name != "ordinary" and (c["max_ulp"] > s["budget"] or c["histogram"]["nan-vs-number"]
                                              or c["histogram"]["inf-vs-finite"])]
            if cls:
                parts.append(f"`{m}`: " + ", ".join(cls))
        items.append(f"- {dtype} (budget {s['budget']}): " + ("; ".join(parts) if parts else "none") + ".")
    return "\n".join(items)


def _profiles_table(profiles: list) -> str:
    rows = []
    for p in profiles:
        verdict = "ok" if p["ok"] else (
            "**too tight**: " + ", ".join(f"`{m}`" for m in p["models_beyond"])
            + f" can be {p['derived']} ULP off on ordinary elements and would pass only by matching "
              "its own bits exactly")
        rows.append([p["profile"], p["dtype"], p["max_ulp"], p["derived"], verdict])
    return markdown_table(["profile", "dtype", "max_ulp", "derived", "verdict"], rows)


def render(meta: dict, summary: dict, sweeps: list, profiles: list) -> str:
    """The page: the prose of TEMPLATE with its placeholders filled from one run's numbers
    (all of them in the run's JSON, so ``--render-only`` redoes the page from that file)."""
    sweep_rows = [[sw["name"], sw["dtype"], f"{sw['elements']:,}", sw["description"], f"{sw['fallbacks']:,}",
                   f"{sw['seconds']:.1f}"] for sw in sweeps]
    return string.Template(TEMPLATE.read_text()).substitute(
        provenance=_provenance(meta),
        accepted_models=", ".join(f"`{m}`" for m in ACCEPTED),
        ordinary_definition=CATEGORIES[0][1],
        measured_table=_measured_table(summary),
        ordinary_worst=_ordinary_worst(summary),
        sweeps_table=markdown_table(["sweep", "dtype", "elements", "what", "mpmath fallbacks", "seconds"], sweep_rows),
        class_list="\n".join(f"- `{name}`: {desc}." for name, desc in CATEGORIES),
        classes_by_dtype="\n\n".join(_class_section(dtype, s) for dtype, s in summary.items()),
        bounds_table=_bounds_table(summary),
        budget_list=_budget_list(summary),
        beyond_budget_list=_beyond_budget_list(summary),
        profiles_table=_profiles_table(profiles),
    )


def machine() -> dict:
    return describe_host(with_torch=False)


def render_again(json_path: Path, md_path: Path) -> int:
    """``--render-only``: the page from the numbers of an earlier run."""
    try:
        data = json.loads(json_path.read_text())
    except (OSError, ValueError) as exc:
        print(f"accuracy_budget: error: {json_path}: cannot read the numbers of a run ({exc})", file=sys.stderr)
        return 2
    write_atomic(md_path, render(data["meta"], data["results"], data["sweeps"], data["profiles"]))
    print(f"wrote {md_path} from {json_path}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sweeps (under 30 s), for a smoke test")
    ap.add_argument("--out", help="output prefix, .md and .json are added (default docs/accuracy-budget; "
                                  "with --quick bench/results/tmp/accuracy-budget-quick)")
    ap.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    ap.add_argument("--render-only", action="store_true",
                    help="run no sweep: write PREFIX.md again from the numbers in PREFIX.json")
    args = ap.parse_args(argv)
    if args.seed < 0:
        ap.error("--seed must be >= 0")
    prefix = Path(args.out) if args.out else ROOT / (
        "bench/results/tmp/accuracy-budget-quick" if args.quick else "docs/accuracy-budget")
    md_path, json_path = prefix.with_name(prefix.name + ".md"), prefix.with_name(prefix.name + ".json")
    if args.render_only:
        return render_again(json_path, md_path)

    t_start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    run = Run()
    q = args.quick
    print(f"accuracy budget ({'quick' if q else 'full'} run, seed {args.seed}, {kernel.default_threads()} CPUs)",
          flush=True)

    betas16 = [BETAS16[i] for i in (0, 2, 4, 5, 7)] if q else BETAS16
    dys16 = (1.0, 0.7, 1000.0, 65504.0) if q else DYS16
    grid = 8 if q else 64
    run.sweep("fp16-x1-all", "fp16",
              f"every x1 pattern (65,536) x {grid} x2 values (zeros, +-beta and neighbours, +-2beta, "
              f"+-beta/2, range edges, every binade) x betas {{{', '.join(n for n, _ in betas16)}}} x dy "
              f"{{{', '.join(dy_label(v) for v in dys16)}}}",
              sweep_fp16_all_patterns(rng, betas16, dys16, grid, every="x1"))
    run.sweep("fp16-x2-all", "fp16",
              f"every x2 pattern (65,536) x {grid} x1 values (the same kind of grid) x the same betas and dy",
              sweep_fp16_all_patterns(rng, betas16, dys16, grid, every="x2"))
    betas16b = [BETAS16[i] for i in (2, 5)] if q else BETAS16
    pairs = 8 if q else 64
    run.sweep("fp16-dy-all", "fp16",
              f"every dy pattern (65,536) x {pairs} (x1, x2) pairs per beta (x2 over the binades near "
              f"beta, x1 = x2 + t beta rounded: t = +-1, |t| < 1, 1 < |t| < 1.1) x betas "
              f"{{{', '.join(n for n, _ in betas16b)}}}",
              sweep_fp16_dy_all(rng, betas16b, pairs))
    k = 8 if q else 64
    run.sweep("fp16-pairs", "fp16",
              f"every (x1, x2) pair whose exact x1 - x2 lies within {k} fp16 steps of +-beta "
              f"(`sl1conf sweep --subset around-beta:{k}`) x (beta, dy) "
              + ", ".join(f"({b}, {d})" for b, _, d, _ in PAIRS16),
              sweep_fp16_pairs(PAIRS16, f"around-beta:{k}"))

    betas32 = [BETAS32[i] for i in (0, 2, 5, 7, 10)] if q else BETAS32
    n_bin = 16384 if q else 262144
    run.sweep("fp32-binades", "fp32",
              f"{n_bin:,} (x1, x2) per beta: x1 over the binades 2^-30 beta .. 2^4 beta, "
              f"x2 = x1 -+ t beta (t = 1, 0 < t < 1, 1 < t < 1.001), half nudged by 1-2 ulps; betas "
              f"{{{', '.join(n for n, _ in betas32)}}} x dy {{{', '.join(dy_label(v) for v in DYS32)}}}",
              sweep_fp32_binades(rng, betas32, DYS32, n_bin))
    n_adv, n_beta_adv = (8192, 1) if q else (65536, 4)
    run.sweep("fp32-adversarial", "fp32",
              f"{n_adv:,} consecutive x1 significands (stride 1-63) in beta's binade x x2 = "
              f"{{0, 0.49, 0.499, -0.49, -0.499, 0.25}} ulp(x1) x 6 dy (significands 2-2^-23, 2-3*2^-23, "
              f"1.5+2^-23, 1+2^-23, 1+small, random; random exponent and sign) x {4 * n_beta_adv + 3} betas "
              f"(reciprocal rounded by nearly +-half an ulp; 0.1, 0.3, 1/3)",
              sweep_fp32_adversarial(rng, n_adv, n_beta_adv))
    n_rand = 1_000_000 if q else 20_000_000
    run.sweep("fp32-random", "fp32",
              "sampling.random_batch, batches of 65,536 (a fresh beta each: typical, tiny to large, "
              "subnormal, special)", sweep_fp32_random(rng, n_rand, 65536))
    n_hard = 10_000 if q else 300_000
    run.sweep("fp32-hard", "fp32", "sampling.hard_batch, batches of 10,000 (ties, near-ties, exponent gaps "
              "at the boundary, subnormal results)", sweep_fp32_hard(rng, n_hard, 10_000))

    t_verify = time.perf_counter()
    bad = verify(run)
    t_verify = time.perf_counter() - t_verify
    summary = summarize(run)
    runtime = time.perf_counter() - t_start
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "quick": q, "seed": args.seed,
            "runtime_s": round(runtime, 1), "machine": machine(), "json_name": json_path.name,
            "command": "python bench/accuracy_budget.py" + (" --quick" if q else ""),
            "timing_s": {k: round(v, 1) for k, v in run.timing.items()} | {"verify": round(t_verify, 1)},
            "unconfirmed_examples": bad}
    profiles = profile_check(summary)
    data = {"meta": meta, "categories": dict(CATEGORIES), "bins": list(BINS), "sweeps": run.sweeps,
            "bounds": {f"{m}/{d}": b for (m, d), b in BOUNDS.items()}, "results": summary,
            "budget": {d: s["budget"] for d, s in summary.items()}, "profiles": profiles}
    write_atomic(json_path, json.dumps(data, indent=1) + "\n")
    write_atomic(md_path, render(meta, summary, run.sweeps, profiles))

    print(f"\n{'model':<15}{'dtype':<6}{'elements':>13}{'ordinary':>13}{'max ord':>8}{'bound':>6}"
          f"{'max other':>10}{'NaN ord/oth':>14}{'inf ord/oth':>14}")
    for dtype, s in summary.items():
        for m, r in s["models"].items():
            o, t = r["ordinary"], r["other"]
            print(f"{m:<15}{dtype:<6}{r['elements']:>13,}{o['elements']:>13,}{o['max_ulp']:>8}"
                  f"{r['bound_ordinary']:>6}{t['max_ulp']:>10}"
                  f"{o['histogram']['nan-vs-number']:>7,}/{t['histogram']['nan-vs-number']:<6,}"
                  f"{o['histogram']['inf-vs-finite']:>7,}/{t['histogram']['inf-vs-finite']:<6,}")
    print("budget: " + ", ".join(f"{d} {s['budget']} ULP (measured {s['measured_max_ulp_ordinary']}, "
                                 f"bound {s['bound_max_ulp_ordinary']})" for d, s in summary.items()))
    print(f"runtime {runtime:.1f} s; timing {meta['timing_s']}; wrote {md_path} and {json_path}")
    if bad:
        print(f"WARNING: {bad} reported element(s) not confirmed by the mpmath oracle / numpy emulation",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

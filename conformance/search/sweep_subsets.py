"""Which pairs a sweep checks, numbered: ``all``, ``x2=V``, ``around-beta[:K]`` and ``x1=V,x2=W`` (the grammar of
``--subset``) as runs of (x2, a range of x1 patterns).

Why numbered runs: a block is a range of pair numbers, so any worker finds the pairs of block k
from the subset's text alone (a pure function of the configuration), without the 2^32 pairs
of ``all`` or the irregular windows of ``around-beta`` ever being listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sl1conf.reference import formats

from sl1conf.conformance.search.sweep_config import SweepError

__all__ = ["Subset", "AROUND_BETA_K", "ALL_PATTERNS", "around_beta", "parse_subset"]

FP16 = formats.FP16
AROUND_BETA_K = 8
"""``around-beta``'s K when none is given: 8 fp16 steps on each side of +beta and -beta."""

@dataclass(frozen=True)
class Subset:
    """Pairs as runs: run r is x2[r] against table[start[r]:start[r] + count] as x1 values;
    pair number p lies in the run r with cum[r] <= p < cum[r + 1]."""

    name: str
    table: np.ndarray  # uint16 x1 patterns
    x2: np.ndarray  # uint16, one per run
    start: np.ndarray  # int64, one per run
    cum: np.ndarray  # int64, runs + 1

    @property
    def size(self) -> int:
        return int(self.cum[-1])

    def pairs(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(x1, x2) patterns of pairs lo..hi-1."""
        n = self.table.size
        if self.cum[-1] == n * self.x2.size and not self.start.any():  # every run the whole table
            r0, r1 = lo // n, -(-hi // n)
            part = slice(lo - r0 * n, hi - r0 * n)
            return np.tile(self.table, r1 - r0)[part], np.repeat(self.x2[r0:r1], n)[part]
        r0 = int(np.searchsorted(self.cum, lo, "right")) - 1
        r1 = int(np.searchsorted(self.cum, hi, "left"))
        runs = np.arange(r0, r1)
        lens = np.minimum(self.cum[runs + 1], hi) - np.maximum(self.cum[runs], lo)
        rid = np.repeat(runs, lens)
        pos = np.arange(lo, hi, dtype=np.int64) - self.cum[rid] + self.start[rid]
        return self.table[pos], self.x2[rid]


ALL_PATTERNS = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _full_runs(name: str, x2: np.ndarray) -> Subset:
    n = ALL_PATTERNS.size
    return Subset(name, ALL_PATTERNS, x2.astype(np.uint16), np.zeros(x2.size, np.int64),
                  np.arange(x2.size + 1, dtype=np.int64) * n)


def _from_ordered(o: int) -> int:
    return o if o >= 0 else FP16.sign_mask | -o


def around_beta(beta_bits: int, k: int) -> Subset:
    """Every finite pair whose exact x1 - x2 lies within k fp16 steps of +|beta| or -|beta|
    (the window [o - k, o + k] on the ordered line, clipped to the finite values).

    fp16 values are multiples of 2^-24 below 2^16, so x1 - x2 and the window's ends
    shifted by x2 are exact in binary64: for each x2 the x1 values form one contiguous
    range of the value-sorted finite patterns per window (one range when the two
    windows meet around zero), found by binary search.
    """
    if FP16.exp_mask & beta_bits == FP16.exp_mask:
        raise SweepError(f"around-beta needs a finite beta, not {formats.hex_bits(FP16, beta_bits)}")
    finite = ALL_PATTERNS[(ALL_PATTERNS & FP16.exp_mask) != FP16.exp_mask]
    vals = finite.view(np.float16).astype(np.float64)
    order = np.argsort(vals, kind="stable")
    table, vals = finite[order], vals[order]
    o = int(formats.ordered(FP16, np.array([beta_bits & ~FP16.sign_mask], np.uint16))[0])
    top = FP16.inf_bits - 1  # the largest finite pattern, on the ordered line
    a, b = (float(np.uint16(_from_ordered(v)).view(np.float16))
            for v in (max(o - k, -top), min(o + k, top)))
    windows = [(-b, b)] if a <= 0 else [(-b, -a), (a, b)]
    v = finite.view(np.float16).astype(np.float64)  # x2 in pattern order
    s = np.stack([np.searchsorted(vals, lo + v, "left") for lo, _ in windows], axis=1).ravel()
    e = np.stack([np.searchsorted(vals, hi + v, "right") for _, hi in windows], axis=1).ravel()
    x2 = np.repeat(finite, len(windows))
    keep = e > s
    counts = (e - s)[keep]
    return Subset(f"around-beta:{k}", table, x2[keep], s[keep].astype(np.int64),
                  np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))


def parse_subset(text: str, beta_bits: int) -> Subset:
    """``all``, ``x2=V`` (every x1 for one x2), ``around-beta[:K]`` or ``x1=V,x2=W`` (one pair: with a
    dy set, one point of every plane)."""
    t = text.strip().lower()
    if t == "all":
        return _full_runs("all", ALL_PATTERNS)
    if t.startswith("x1=") and ",x2=" in t:  # one pair: a volume of dy planes at one point, 65,536 elements for all
        x1_text, _, x2_text = t[3:].partition(",x2=")
        try:
            x1, x2 = (formats.parse_value(FP16, v)[0] for v in (x1_text, x2_text))
        except ValueError as exc:
            raise SweepError(f"subset {text!r}: {exc}") from None
        h = lambda b: formats.hex_bits(FP16, b)  # noqa: E731
        return Subset(f"x1={h(x1)},x2={h(x2)}", np.array([x1], np.uint16), np.array([x2], np.uint16),
                      np.zeros(1, np.int64), np.array([0, 1], np.int64))
    if t.startswith("x2="):
        try:
            bits, _ = formats.parse_value(FP16, t[3:])
        except ValueError as exc:
            raise SweepError(f"subset {text!r}: {exc}") from None
        return _full_runs(f"x2={formats.hex_bits(FP16, bits)}", np.array([bits], np.uint16))
    name, _, k = t.partition(":")
    if name == "around-beta":
        if k and not (k.isdigit() and int(k) <= 4096):
            raise SweepError(f"subset {text!r}: K must be a whole number from 0 to 4096")
        return around_beta(beta_bits, int(k) if k else AROUND_BETA_K)
    raise SweepError(f"unknown subset {text!r}: expected all, x2=V, around-beta[:K] or x1=V,x2=W")

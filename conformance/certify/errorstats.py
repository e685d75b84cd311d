"""How far a run's results are from the correctly rounded ones: the data behind the plots.

The largest errors (overall and per bin) leave out the elements accepted only as
exceptions beyond the ULP budget: reachable under the profile's error model (an
underflowing quotient, a flushed intermediate, an approximate reciprocal) or a documented
alternative for beta <= 0: those are judged by the model's bounds, not by the budget, and are
counted apart as ``excepted``.

A report must be re-renderable from ``report.json`` alone, so the distributions the
plots show are stored in it, compactly: per family, a histogram of ULP distances
(bucketed); and against ``r = (x1 - x2) / beta`` (where the branch boundary lives, at
r = +-1), per bin of r the number of elements, how many are not exact, and the largest
ULP distance. ULP distances are those of :func:`formats.ulp_distance` (NaN as a class;
a NaN against a number is a "nan" mismatch, never a distance). ``r`` is computed in
binary64 from the exact inputs; it is only a plot coordinate, so its rounding is harmless.
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.requirements.base import UNWRITTEN
from sl1conf.conformance.rules.judge import SPECIALS, special_class
from sl1conf.reference import formats

__all__ = ["BUCKETS", "RATIO_EDGES", "bucket_of", "ErrorStats"]


BUCKETS = ("0", "1", "2", "3", "4", "5-8", "9-64", "65+", "nan")
"""ULP-distance buckets of the per-family histograms ("nan": one side NaN, the other not)."""
_UPPER = np.array([0, 1, 2, 3, 4, 8, 64])  # inclusive upper ends of the numeric buckets but the last
RATIO_EDGES = [round(-4 + 0.1 * i, 10) for i in range(81)]
"""Bins of (x1 - x2) / beta from -4 to 4 (0.1 wide); elements outside are counted apart."""


def bucket_of(dist: np.ndarray) -> np.ndarray:
    """Index into BUCKETS for each ULP distance."""
    idx = np.searchsorted(_UPPER, np.minimum(dist, 1 << 62), side="left")
    return np.where(dist == formats.NAN_MISMATCH, len(BUCKETS) - 1, idx)


class ErrorStats:
    """Accumulates one run's distances; :meth:`entry` is the report's ``errors`` object."""

    def __init__(self):
        self.hist: dict[str, np.ndarray] = {}
        nbins = len(RATIO_EDGES) - 1
        self.elements = np.zeros(nbins, np.int64)
        self.inexact = np.zeros(nbins, np.int64)
        self.max_ulp = np.zeros(nbins, np.int64)
        self.nan = np.zeros(nbins, np.int64)  # NaN against a number (not excepted): no distance to plot
        self.outside = 0  # r outside the edges, or not a number (beta 0, inf, NaN inputs)
        self.worst_ulp, self.worst_at, self.nan_mismatches, self.excepted = 0, None, 0, 0
        self.excepted_ulp, self.excepted_at, self.excepted_by = 0, None, {}  # the accepted-but-far elements
        self.excepted_far = 0  # of them, those with a distance (the others are SPECIALS, counted there)
        # elements, of them accepted, first (where, k); an unwritten element (still the fill) is no result at all
        self.specials = {name: [0, 0, None] for name in (*SPECIALS, UNWRITTEN)}

    def add(self, family: str, fmt: formats.Format, dist: np.ndarray, x1, x2, beta, where, excepted=None,
            got=None, oracle=None, accepted_by=None, accepted=None, unwritten=None) -> None:
        """``dist``: the distances of one case's written elements; ``x1``, ``x2`` its inputs
        (bit patterns) and ``beta`` its scalar; ``where`` identifies the case for :attr:`worst_at`.
        ``excepted``: elements accepted only as an exception (reachable under the error
        model, or an alternative's bits, beyond the ULP budget); they count in the histogram but
        not in the largest errors, which would otherwise say nothing about accuracy: they are
        counted apart, with their own largest distance and (``accepted_by``: a name per
        element) what accepted them. ``got`` and ``oracle``: the results, so that infinities
        and NaNs against numbers are named (SPECIALS) and never enter a distance; ``accepted``:
        the elements the judge accepted (for those, how many were). ``unwritten``: the elements
        dx1 still holds the fill in (never written: no result, so no distance and no class), of
        those the judge rejected (a correct result may have the fill's bits)."""
        if not dist.size:
            return
        counts = np.bincount(bucket_of(dist), minlength=len(BUCKETS))
        self.hist[family] = self.hist.get(family, 0) + counts
        real = dist != formats.NAN_MISMATCH
        self.nan_mismatches += int((~real & ~(excepted if excepted is not None else False)).sum())
        if got is not None:
            cls = special_class(fmt, got[:dist.size], oracle[:dist.size])
            if unwritten is not None and accepted is not None:
                unwritten = unwritten & ~accepted  # an accepted element is a result, even one whose bits are the fill's
            if unwritten is not None and unwritten.any():
                cls = np.where(unwritten, len(SPECIALS), cls)
            for c in np.unique(cls[cls >= 0]).tolist():
                slot, hit = self.specials[(*SPECIALS, UNWRITTEN)[c]], cls == c
                slot[0] += int(hit.sum())
                slot[1] += int((hit & accepted).sum()) if accepted is not None else 0
                if slot[2] is None:
                    slot[2] = (where, int(np.flatnonzero(hit)[0]))
            real = real & (cls < 0)
        if excepted is not None:
            self.excepted += int(excepted.sum())
            far = excepted & real
            if far.any():
                k = int(np.argmax(np.where(far, dist, -1)))
                if self.excepted_at is None or int(dist[k]) > self.excepted_ulp:
                    self.excepted_ulp, self.excepted_at = int(dist[k]), (where, k)
            self.excepted_far += int(far.sum())
            if accepted_by is not None:
                for name in accepted_by[far].tolist():
                    self.excepted_by[name or "?"] = self.excepted_by.get(name or "?", 0) + 1
            real = real & ~excepted
        if real.any():
            k = int(np.argmax(np.where(real, dist, -1)))
            if int(dist[k]) > self.worst_ulp:
                self.worst_ulp, self.worst_at = int(dist[k]), (where, k)
        with np.errstate(all="ignore"):
            a = formats.from_bits(fmt, x1[:dist.size]).astype(np.float64)
            b = formats.from_bits(fmt, x2[:dist.size]).astype(np.float64)
            r = (a - b) / float(formats.from_bits(fmt, np.array([beta], fmt.uint))[0])
        inside = np.isfinite(r) & (r >= RATIO_EDGES[0]) & (r < RATIO_EDGES[-1])
        self.outside += int((~inside).sum())
        bins = np.clip(np.searchsorted(RATIO_EDGES, r[inside], side="right") - 1, 0, len(self.elements) - 1)
        d = dist[inside]
        np.add.at(self.elements, bins, 1)
        np.add.at(self.inexact, bins, (d != 0).astype(np.int64))
        np.maximum.at(self.max_ulp, bins, np.where(real[inside], d, 0))
        ex = excepted[inside] if excepted is not None else np.zeros(d.shape, bool)
        np.add.at(self.nan, bins, ((d == formats.NAN_MISMATCH) & ~ex).astype(np.int64))

    def entry(self, worst: "dict | None", describe=None) -> dict:
        """The report's ``errors``: ``worst`` describes the element at :attr:`worst_at`;
        ``describe(where, k)`` gives the element dict of any other position kept here."""
        out = {"max_ulp": self.worst_ulp, "nan_mismatches": self.nan_mismatches, "excepted": self.excepted,
               "buckets": list(BUCKETS),
               "ulp_histogram": {f: [int(n) for n in c] for f, c in self.hist.items()},
               "by_ratio": {"edges": RATIO_EDGES, "elements": self.elements.tolist(),
                            "inexact": self.inexact.tolist(), "max_ulp": self.max_ulp.tolist(),
                            "nan": self.nan.tolist(),
                            "outside": self.outside}}
        if worst is not None:
            out["worst"] = worst
        if self.excepted_far:
            far = {"elements": self.excepted_far, "max_ulp": self.excepted_ulp, "by": dict(sorted(self.excepted_by.items()))}
            if describe is not None and self.excepted_at is not None:
                far["worst"] = describe(*self.excepted_at)
            out["excepted_far"] = far
        specials = {}
        for name, (n, ex, at) in self.specials.items():
            if n:
                specials[name] = {"elements": n, "accepted": ex}
                if describe is not None and at is not None:
                    specials[name]["first"] = describe(*at)
        if specials:
            out["not_a_distance"] = specials
        return out

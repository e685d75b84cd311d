"""How far a run's results are from the correctly rounded ones: the data behind the plots.

The largest errors (overall and per bin) leave out the elements accepted only as
exceptions beyond the ULP budget: reachable under the profile's error model (an
underflowing quotient, a flushed intermediate, an approximate reciprocal) or a documented
alternative for beta <= 0: those are judged by the model's bounds, not by the budget, and are
counted apart as ``beyond_budget``.

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
from sl1conf.conformance.requirements.entries import ByRatio, ErrorSummary, NoDistance
from sl1conf.conformance.requirements.reasons import ReasonTally
from sl1conf.conformance.rules.distances import BUCKETS, bucket_of
from sl1conf.conformance.rules.judge import SPECIALS, Reason, special_class
from sl1conf.reference import formats

__all__ = ["BUCKETS", "RATIO_EDGES", "bucket_of", "ErrorStats"]


CHUNK = 1 << 16
"""Elements a run's statistics take at once: few enough that the temporaries stay in the cache."""
RATIO_EDGES = [round(-4 + 0.1 * i, 10) for i in range(81)]
"""Bins of (x1 - x2) / beta from -4 to 4 (0.1 wide); elements outside are counted apart."""


_EDGES = np.array(RATIO_EDGES)


def _ratio_bins(r: np.ndarray) -> np.ndarray:
    """The bin of RATIO_EDGES each ratio lies in (``E[i] <= r < E[i + 1]``; every ``r`` within the
    edges): ``(r + 4) * 10`` truncated, then moved by one where the rounding of the edges or of
    that product put it on the wrong side of one (a binary search over 81 edges per element took
    half of a run's statistics)."""
    i = ((r - _EDGES[0]) * 10).astype(np.int64)
    np.clip(i, 0, len(_EDGES) - 2, out=i)
    i -= r < _EDGES[i]
    i += r >= _EDGES[i + 1]
    return i


class ErrorStats:
    """Accumulates one run's distances; :meth:`entry` is the report's ``errors`` object."""

    def __init__(self):
        self.hist: dict[str, np.ndarray] = {}
        nbins = len(RATIO_EDGES) - 1
        self.elements = np.zeros(nbins, np.int64)
        self.inexact = np.zeros(nbins, np.int64)
        self.max_ulp = np.zeros(nbins, np.int64)
        self.nan = np.zeros(nbins, np.int64)  # NaN against a number (not accepted beyond the budget): no distance to plot
        self.outside = 0  # r outside the edges, or not a number (beta 0, inf, NaN inputs)
        self.worst_ulp, self.worst_at, self.nan_mismatches = 0, None, 0
        self.accepted = ReasonTally()  # every element by the judge's reason; those beyond the budget in detail (at (where, k))
        # elements, of them accepted, first (where, k); an unwritten element (still the fill) is no result at all
        self.specials = {name: [0, 0, None] for name in (*SPECIALS, UNWRITTEN)}

    def add(self, family: str, fmt: formats.Format, dist: np.ndarray, x1, x2, beta, where, reason=None,
            got=None, oracle=None, accepted_by=None, accepted=None, unwritten=None) -> None:
        """``dist``: the distances of one case's written elements; ``x1``, ``x2`` its inputs
        (bit patterns) and ``beta`` its scalar; ``where`` identifies the case for :attr:`worst_at`.
        ``reason``: each element's rules.judge.Reason (counted); those accepted beyond the ULP
        budget (reachable under the error model, an alternative's bits, an open input's bounds)
        count in the histogram but not in the largest errors, which would otherwise say nothing
        about accuracy: they are counted apart, with their own largest distance and
        (``accepted_by``: a name per element) what accepted them; ``got`` and ``oracle`` are then
        needed. ``got`` and ``oracle``: the results, so that infinities
        and NaNs against numbers are named (SPECIALS) and never enter a distance; ``accepted``:
        the elements the judge accepted (for those, how many were). ``unwritten``: the elements
        dx1 still holds the fill in (never written: no result, so no distance and no class), of
        those the judge rejected (a correct result may have the fill's bits)."""
        n = dist.size
        cut = lambda a: None if a is None else a[:n]  # noqa: E731
        self._add(fmt, [family], np.zeros(n, np.intp), dist, x1[:n], x2[:n], np.full(n, beta, fmt.uint),
                  lambda k: (where, k), cut(reason), cut(got), cut(oracle),
                  None if accepted_by is None else accepted_by.__getitem__, accepted, unwritten)

    def add_run(self, fmt: formats.Format, whole, judged: list, bounds) -> None:
        """Every judgement of a run at once, as :meth:`add` one by one would (``where``: its
        index in ``judged``): ``whole`` judges all their elements (``judged`` are its parts,
        judgement ``i`` its elements ``bounds[i]`` to ``bounds[i + 1]``)."""
        bounds = np.asarray(bounds, np.int64)
        names = list(dict.fromkeys(j.family for j in judged))
        ws = np.diff(bounds)
        fam = np.repeat(np.array([names.index(j.family) for j in judged], np.intp), ws)
        unwritten = np.concatenate([j.unwritten if j.case.out_alias is None else np.zeros(j.got.shape, bool)
                                    for j in judged]) if judged else np.zeros(0, bool)
        x1, x2, beta = whole.inputs[1], whole.inputs[2], np.broadcast_to(whole.inputs[3], whole.dist.shape)
        columns = (fam, whole.dist, x1, x2, beta, whole.reason, whole.got, whole.expected.oracle)
        beyond = np.flatnonzero(whole.beyond_budget)
        named = whole.accepted_as(beyond)  # what accepted them: named for those few only
        for lo in range(0, whole.dist.size, CHUNK):  # in order, as call after call would come
            def locate(k, lo=lo):
                i = int(np.searchsorted(bounds, lo + k, side="right")) - 1
                return i, int(lo + k - bounds[i])
            part = [c[lo:lo + CHUNK] for c in columns]
            self._add(fmt, names, part[0], *part[1:5], locate, *part[5:],
                      lambda k, lo=lo: named[np.searchsorted(beyond, lo + k)], whole.ok[lo:lo + CHUNK],
                      unwritten[lo:lo + CHUNK])

    def _add(self, fmt, names, fam, dist, x1, x2, beta, locate, reason, got, oracle, accepted_by, accepted,
             unwritten) -> None:
        """The elements of calls of ``names`` (``fam``: each element's index into them), with
        one beta each; ``locate(k)``: (where, index) of element ``k`` of these arrays;
        ``accepted_by(ks)``: what accepted elements ``ks`` (beyond the budget) there."""
        if not dist.size:
            return
        # Most elements are exact (distance 0, class -1: no special, no worst, no NaN): the work
        # per element is counting; everything else looks at the few with a distance only.
        nz = np.flatnonzero(dist)
        d_nz, fam_nz = dist[nz], fam[nz]
        nb, nf = len(BUCKETS), len(names)
        per_family = np.bincount(fam, minlength=nf)
        counts = np.zeros(nf * nb, np.int64)
        counts[::nb] = per_family  # every element in bucket "0", then the ones with a distance moved
        counts -= np.bincount(fam_nz * nb, minlength=nf * nb)
        counts += np.bincount(fam_nz * nb + bucket_of(d_nz), minlength=nf * nb)
        counts = counts.reshape(nf, nb)
        for f in np.flatnonzero(per_family).tolist():
            self.hist[names[f]] = self.hist.get(names[f], 0) + counts[f]
        real = d_nz != formats.NAN_MISMATCH  # of the elements nz: a distance that means one
        beyond_budget = None if reason is None else (reason >= Reason.REACHABLE) & (reason <= Reason.OPEN_BOUNDS)
        ex_nz = beyond_budget[nz] if beyond_budget is not None else np.zeros(nz.shape, bool)
        self.nan_mismatches += int((~real & ~ex_nz).sum())
        special = None  # every element's special class (-1: none), where the results are given
        if got is not None:
            cls = special_class(fmt, got[nz], oracle[nz])
            special = np.full(dist.shape, -1, np.int8)  # an element at distance 0 is no special
            special[nz] = cls
            if unwritten is not None and accepted is not None:
                # an accepted element is a result, even one whose bits are the fill's (the judge
                # accepts every exact element, so an unwritten one it rejects has a distance)
                unwritten = unwritten[nz] & ~accepted[nz]
                if unwritten.any():
                    cls = np.where(unwritten, len(SPECIALS), cls)
            for c in np.unique(cls[cls >= 0]).tolist():
                slot, hit = self.specials[(*SPECIALS, UNWRITTEN)[c]], cls == c
                slot[0] += int(hit.sum())
                slot[1] += int((hit & accepted[nz]).sum()) if accepted is not None else 0
                if slot[2] is None:
                    slot[2] = locate(int(nz[np.flatnonzero(hit)[0]]))
            real &= cls < 0
        if reason is not None:
            self.accepted.count(reason)
            ex_idx = np.flatnonzero(beyond_budget)  # few; those at distance 0 (a zero of the other sign) are real
            if ex_idx.size:
                self.accepted.add_beyond(fmt, got[ex_idx], oracle[ex_idx], dist[ex_idx], reason[ex_idx],
                                         accepted_by(ex_idx) if accepted_by is not None else np.full(ex_idx.size, "", object),
                                         lambda i: locate(int(ex_idx[i])),
                                         None if special is None else special[ex_idx])
            real &= ~ex_nz
        if real.any():
            k = int(nz[real][int(np.argmax(d_nz[real]))])
            if int(dist[k]) > self.worst_ulp:
                self.worst_ulp, self.worst_at = int(dist[k]), locate(k)
        with np.errstate(all="ignore"):
            a = formats.from_bits(fmt, x1).astype(np.float64)
            b = formats.from_bits(fmt, x2).astype(np.float64)
            r = (a - b) / formats.from_bits(fmt, np.ascontiguousarray(beta)).astype(np.float64)
        inside = np.isfinite(r) & (r >= RATIO_EDGES[0]) & (r < RATIO_EDGES[-1])
        self.outside += int(inside.size - np.count_nonzero(inside))
        n = len(self.elements)
        bins = _ratio_bins(r[inside])
        self.elements += np.bincount(bins, minlength=n)
        where = np.full(dist.shape, -1, np.int64)
        where[inside] = bins
        b_nz = where[nz]
        shown = b_nz >= 0
        self.inexact += np.bincount(b_nz[shown], minlength=n)
        np.maximum.at(self.max_ulp, b_nz[shown & real], d_nz[shown & real])
        self.nan += np.bincount(b_nz[shown & (d_nz == formats.NAN_MISMATCH) & ~ex_nz], minlength=n)

    def entry(self, worst=None, describe=None) -> ErrorSummary:
        """The report's ``errors``, typed: ``worst`` describes the element at :attr:`worst_at` (an
        ElementRecord); ``describe(where, k)`` gives the ElementRecord of any other position kept here."""
        specials = {name: NoDistance(n, ex, describe(*at) if describe is not None and at is not None else None)
                    for name, (n, ex, at) in self.specials.items() if n}
        return ErrorSummary(self.worst_ulp, self.nan_mismatches, self.accepted.reason_counts(), list(BUCKETS),
                            {f: [int(n) for n in c] for f, c in self.hist.items()},
                            ByRatio(RATIO_EDGES, self.elements.tolist(), self.inexact.tolist(), self.max_ulp.tolist(),
                                    self.nan.tolist(), self.outside), worst,
                            self.accepted.far_accepted(None if describe is None else lambda at: describe(*at)), specials)

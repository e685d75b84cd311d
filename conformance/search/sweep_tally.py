"""What a sweep's blocks found, summed: :class:`PlaneTally` (the histogram, the worst and first
examples, one Evidence per requirement, every element by the judge's reason (requirements.reasons),
the statistics), and one element as every report says one.

Why sums and order-independent choices (the worst element: largest distance, ties to the lowest
pair number): resumed, parallel, sharded and merged sweeps then give the same tally as one
uninterrupted run, whatever order the blocks finished in.
"""

from __future__ import annotations

import numpy as np

from sl1conf.reference import formats

from sl1conf.conformance.rules import distances
from sl1conf.conformance.requirements.base import Seen, element_record
from sl1conf.conformance.requirements.evidence import Evidence, add_evidence, evidence_of, pick, worst_key, worst_order
from sl1conf.conformance.requirements.records import ElementRecord
from sl1conf.conformance.requirements.reasons import ReasonTally
from sl1conf.conformance.rules.judge import Reason, expected_for, flush_match, judge, model_match, within_budget_alone
from sl1conf.conformance.search.fuzz import add_statistics

__all__ = ["BUCKETS", "ROWS", "KEEP_REJECTIONS", "PlaneTally", "element_example", "kept"]

FP16 = formats.FP16
BUCKETS = (*distances.BUCKETS, "zero-sign")
"""The histograms' buckets (rules.distances: 0, the distance classes, NaN against a number) and +0
against -0 (0 ULP apart, not the same result)."""
NB = len(BUCKETS)
B_ZERO = NB - 1
REFUSED = "rejected"
"""The open alternative a refused call is (rules.openbehaviour: an error the manual allows at an open input)."""
ROWS = ("unmatched", "ftz", "model", "model+ftz")
KEEP_REJECTIONS = 64
"""Rejected elements a tally keeps whole (the first by pair number, whichever order the blocks came in):
the examples a certificate lists and the vector set a volume's rejections are replayed from."""
"""What else a wrong element equals: nothing, only the flush-to-zero oracle, an accepted model."""


def element_example(index, dy, x1, x2, beta, want, got, ulp) -> ElementRecord:
    """One element, as every report says one (``base.element_record``: the inputs, the correctly
    rounded result and the implementation's, the distance or the kind of result that is no
    distance), at its pair number ``at``: the worst is picked by its ``distance``."""
    return element_record(FP16, dy, x1, x2, beta, want, got, distance=int(ulp), at=int(index))


def _first(e: ElementRecord) -> int:
    return e.at


def kept(e: "ElementRecord | None") -> "dict | None":
    """``e`` as the checkpoint keeps it: with its pair number and distance."""
    return None if e is None else e.to_json(internal=True)


def _read(e: "dict | None") -> "ElementRecord | None":
    return None if e is None else ElementRecord.from_json(e)


def _wrong(got, want) -> np.ndarray:
    """Indices of the elements that are not the correctly rounded result (NaN as a class):
    the bits differ, and not both NaN."""
    differ = got != want
    if np.count_nonzero(differ) > got.size // 8:  # NaN payloads, say (a NaN x2's blocks): whole arrays
        differ &= ~(formats.is_nan_bits(FP16, got) & formats.is_nan_bits(FP16, want))
        return np.flatnonzero(differ)
    bad = np.flatnonzero(differ)
    nan = np.flatnonzero(formats.is_nan_bits(FP16, want[bad]))  # few: got is looked at on those only
    if not nan.size:
        return bad
    return np.delete(bad, nan[formats.is_nan_bits(FP16, got[bad[nan]])])


def _expected(dy, x1, x2, beta, idx, w):
    """Everything acceptable (``judge.expected_for``) for the elements ``idx``, whose correctly
    rounded bits are ``w``."""
    return expected_for(FP16, dy[idx], x1[idx], x2[idx], beta, oracle=w)


def _judged(profile, got, dy, x1, x2, beta, idx, w):
    """The one judge's judgement, in full, of the elements ``idx`` (``w``: their correctly rounded bits)."""
    return judge(FP16, profile, got[idx], _expected(dy, x1, x2, beta, idx, w), dy[idx], x1[idx], x2[idx], beta)


class PlaneTally:
    """What the blocks of a sweep's plane done so far found: the histogram by what else a wrong
    element equals, the worst and first examples, one Evidence per requirement, what was accepted
    beyond the budget or as an open answer, the statistics; merging is order-independent."""

    def __init__(self):
        self.elements = 0
        self.hist = np.zeros((len(ROWS), NB), np.int64)
        self.zsign = np.zeros((len(ROWS), NB), np.int64)  # a zero on one side, the other sign
        self.worst = [None] * len(ROWS)  # largest ULP distance (>= 1)
        self.first_nan = [None] * len(ROWS)
        self.first_zsign = [None] * len(ROWS)
        self.failed = 0  # elements of calls that returned no result
        self.failure = None  # the first such call
        # requirement id -> Evidence: the elements the judge (or a probe) rejects for it, the worst
        # (largest distance, then lowest pair), and the blocks its probe found failing as calls
        self.requirements = {}
        self.rejected_elements = 0  # elements some requirement rejects (each counted once)
        # every element returned, by the judge's reason; those beyond the budget in detail (the
        # alternatives' names: R16's record), the farthest by distance, then the lower pair
        self.accepted = ReasonTally(_first)
        self.statistics = {}  # statistic name -> "dtype/variant" -> its counts of the sampled blocks
        self.rejections = []  # the first KEEP_REJECTIONS elements the judge rejects, by pair number

    def merge(self, other: "PlaneTally") -> "PlaneTally":
        self.elements += other.elements
        self.hist += other.hist
        self.zsign += other.zsign
        self.failed += other.failed
        self.failure = pick(self.failure, other.failure, lambda f: f["block"])
        for r in range(len(ROWS)):
            self.worst[r] = pick(self.worst[r], other.worst[r], worst_order)
            self.first_nan[r] = pick(self.first_nan[r], other.first_nan[r], _first)
            self.first_zsign[r] = pick(self.first_zsign[r], other.first_zsign[r], _first)
        self.rejected_elements += other.rejected_elements
        add_evidence(self.requirements, other.requirements)
        self.accepted.merge(other.accepted)
        add_statistics(self.statistics, other.statistics)
        self.keep(other.rejections)
        return self

    def keep(self, records) -> None:
        """Add rejected elements to those kept: the first :data:`KEEP_REJECTIONS` by pair number."""
        if records:
            self.rejections = sorted(self.rejections + list(records), key=_first)[:KEEP_REJECTIONS]

    def seen(self, block: int, lo, dy, x1, x2, beta, want, s: Seen) -> None:
        """A probe's finding on the block: the elements whose bits changed (``s.changed``) are
        rejected under its requirement (an element another rule rejects too counts twice in
        ``rejected_elements``), the first of them its example; a finding about the call is a
        failing call under it."""
        evidence = self.requirements.setdefault(s.requirement, Evidence())
        if not s.changed:
            evidence.add_call(block, s.kind, s.detail)
            return
        at = {i for i, _ in s.changed}
        self.rejected_elements += len(at)
        i, bits = min(s.changed, key=lambda c: c[0])
        d = formats.ulp_distance(FP16, np.array([bits], np.uint16), want[i:i + 1])[0]
        evidence.add_elements(len(at), element_example(lo + i, dy[i], x1[i], x2[i], beta, want[i], bits, d))

    def block(self, lo, dy, x1, x2, beta, got, want, profile, bad=None, alone=None) -> None:
        """One block's results: :meth:`add` and :meth:`judge` together, on the elements that can
        count: those that are not the correctly rounded result (every rule accepts those; NaN as a
        class). ``bad``: those elements' indices where the caller found them already
        (``kernel.f16_mismatches`` or ``kernel.f16_judge_pass``), and then ``want`` holds the
        correctly rounded bits of those only. The judge decides every element; those a rounding away it decides from the few facts
        that settle them (``judge.within_budget_alone``), the others in full, once. ``alone``:
        what ``kernel.f16_judge_pass`` accepted by that shortcut in C (then ``bad`` are the
        others only; :meth:`_add_alone` counts it)."""
        if alone is not None:
            self._add_alone(lo, dy, x1, x2, beta, got, alone)
        bad, w = (_wrong(got, want), None) if bad is None else (bad, want)
        w = want[bad] if w is None else w
        n_alone = 0 if alone is None else alone["count"]
        self.accepted.take(Reason.EXACT, got.size - bad.size - n_alone)
        if not bad.size:
            return self._add(lo, dy, x1, x2, beta, got, bad, w, None)
        g, d, a, b = got[bad], dy[bad], x1[bad], x2[bad]
        dist = formats.ulp_distance(FP16, g, w)
        alone = within_budget_alone(FP16, profile, g, w, dist, d, a, b, beta)
        model, ftz = np.zeros(bad.size, bool), np.zeros(bad.size, bool)
        at = np.flatnonzero(alone)
        if at.size:
            model[at] = model_match(FP16, g[at], d[at], a[at], b[at], beta)
            ftz[at] = flush_match(FP16, g[at], d[at], a[at], b[at], beta, w[at])
            self.accepted.take(Reason.WITHIN_BUDGET, int(at.size))
        rest = np.flatnonzero(~alone)
        if rest.size:
            idx = bad[rest]
            j = _judged(profile, got, dy, x1, x2, beta, idx, w[rest])
            model[rest], ftz[rest] = np.logical_or.reduce(list(j.models.values())), j.ftz
            self._judge(lo, dy, x1, x2, beta, got, idx, w[rest], j)
        self._add(lo, dy, x1, x2, beta, got, bad, w, (dist, model, ftz))

    def _add_alone(self, lo, dy, x1, x2, beta, got, alone: dict) -> None:
        """What ``kernel.f16_judge_pass`` counted of the elements ``judge.within_budget_alone``
        accepts (WITHIN_BUDGET: no NaN): as :meth:`_add` counts them,
        those elements taken out of the exact ones it counts (it counts every element)."""
        n = alone["count"]
        self.accepted.take(Reason.WITHIN_BUDGET, n)
        self.hist += alone["hist"]
        self.hist[0, 0] -= n
        self.zsign += alone["zsign"]
        ex = lambda i, w, d=None: element_example(lo + i, dy[i], x1[i], x2[i], beta, w, got[i],  # noqa: E731
                                                  formats.ulp_distance(FP16, got[i], w) if d is None else d)
        # each row's worst and first zero-sign element, made a record only where it replaces the
        # tally's (pick's orders, on the pair number and distance: a worker's tally takes block
        # after block, and a later block's 1-ULP worst never does)
        for r in range(len(ROWS)):
            i, z = int(alone["worst"][r]), int(alone["first_zsign"][r])
            if i >= 0:
                d, cur = int(alone["worst_dist"][r]), self.worst[r]
                if cur is None or worst_key(d, lo + i) < worst_order(cur):
                    self.worst[r] = ex(i, alone["worst_want"][r], d)
            if z >= 0 and (self.first_zsign[r] is None or lo + z < _first(self.first_zsign[r])):
                self.first_zsign[r] = ex(z, alone["zsign_want"][r])

    def judge(self, lo, dy, x1, x2, beta, got, want, profile) -> None:
        """One block's verdicts, by the one judge in full, on the elements that are not the
        correctly rounded result (those every rule accepts)."""
        bad = _wrong(got, want)
        self.accepted.take(Reason.EXACT, got.size - bad.size)
        if bad.size:
            self._judge(lo, dy, x1, x2, beta, got, bad, want[bad], _judged(profile, got, dy, x1, x2, beta, bad, want[bad]))

    def _judge(self, lo, dy, x1, x2, beta, got, idx, w, j) -> None:
        """:meth:`judge` given the judgement ``j`` of the elements ``idx`` (``w``: their correctly
        rounded bits)."""
        ex = lambda k: element_example(lo + idx[k], dy[idx[k]], x1[idx[k]], x2[idx[k]], beta,  # noqa: E731
                                       w[k], got[idx[k]], j.dist[k])

        def worst(mask):
            at = np.flatnonzero(mask)
            return ex(int(at[np.argmax(np.where(j.dist[at] == formats.NAN_MISMATCH, 1 << 30, j.dist[at]))]))
        rejected = np.flatnonzero(~j.ok)
        self.rejected_elements += int(rejected.size)
        self.keep([ex(int(i)) for i in rejected[:KEEP_REJECTIONS]])  # idx ascends: the first by pair number
        for rid, bad in j.breaks.items():
            if bad.any():
                self.requirements.setdefault(rid, Evidence()).add_elements(int(bad.sum()), worst(bad))
        self.accepted.add(j, None, ex)

    def add(self, lo, dy, x1, x2, beta, got, want) -> None:
        """One block's results (bit patterns; pair numbers from ``lo``)."""
        bad = _wrong(got, want)
        w = want[bad]
        if not bad.size:
            return self._add(lo, dy, x1, x2, beta, got, bad, w, None)
        exp = _expected(dy, x1, x2, beta, bad, w)
        g = got[bad]
        model = np.logical_or.reduce([formats.same_result(FP16, g, bits) for bits in exp.models.values()])
        self._add(lo, dy, x1, x2, beta, got, bad, w, (formats.ulp_distance(FP16, g, w), model,
                                                       formats.same_result(FP16, g, exp.oracle_ftz)))

    def _add(self, lo, dy, x1, x2, beta, got, bad, w, j) -> None:
        """:meth:`add` given the wrong elements ``bad``, their correctly rounded bits ``w`` and, for
        them, ``j``: their ULP distances and which are an accepted model's bits and the
        flush-to-zero oracle's (three arrays)."""
        n = got.size
        self.elements += n
        self.hist[0, 0] += n - bad.size
        if not bad.size:
            return
        dist, model, ftz = j
        g = got[bad]
        nan = dist == formats.NAN_MISMATCH
        bucket = distances.bucket_of(dist)
        bucket[dist == 0] = B_ZERO
        row = 2 * model.astype(np.int64) + ftz
        cells = row * NB + bucket
        counts = np.bincount(cells, minlength=len(ROWS) * NB).reshape(len(ROWS), NB)
        self.hist += counts
        mag = np.uint16(~FP16.sign_mask & 0xFFFF)
        zs = ((g & mag) == 0) | ((w & mag) == 0)  # a zero on one side (few elements), of the other sign
        if zs.any():
            zs &= ~nan & (((g ^ w) & FP16.sign_mask) != 0)
            self.zsign += np.bincount(cells[zs], minlength=len(ROWS) * NB).reshape(len(ROWS), NB)
        masks = [(slot, mask) for slot, mask in ((self.first_nan, nan), (self.first_zsign, zs)) if mask.any()]
        finite = np.where(nan, 0, dist) if nan.any() else dist
        ex = lambda i: element_example(lo + bad[i], dy[bad[i]], x1[bad[i]], x2[bad[i]], beta,  # noqa: E731
                                       w[i], g[i], dist[i])
        for r in np.flatnonzero(counts.any(axis=1)).tolist():  # the rows that hold elements
            whole = counts[r].sum() == bad.size
            in_row = None if whole else row == r
            in_finite = finite if whole else np.where(in_row, finite, 0)
            if in_finite.any():  # argmax: the first of the largest, the lowest pair number
                self.worst[r] = pick(self.worst[r], ex(int(np.argmax(in_finite))), worst_order)
            for slot, mask in masks:
                hit = np.flatnonzero(mask if whole else in_row & mask)
                if hit.size:
                    slot[r] = pick(slot[r], ex(int(hit[0])), _first)

    def refused(self, n: int) -> None:
        """A block of ``n`` elements refused at an open beta: the open alternative "rejected" (a
        refusal the manual allows there), counted by that reason, not checked."""
        self.elements += n
        self.accepted.take(Reason.ALTERNATIVE, n, REFUSED)

    @property
    def refused_elements(self) -> int:
        """Elements of blocks refused at an open beta (:meth:`refused`)."""
        return self.accepted.named.get("alternative", {}).get(REFUSED, 0)

    def fail(self, block: int, n: int, status: str, detail: str) -> None:
        self.elements += n
        self.failed += n
        self.failure = pick(self.failure, {"block": block, "status": status, "detail": detail[:500]},
                             lambda f: f["block"])

    def histogram(self) -> dict:
        """Elements per bucket over every row; empty buckets left out (but 0)."""
        total = self.hist.sum(axis=0)
        return {name: int(c) for i, (name, c) in enumerate(zip(BUCKETS, total)) if c or i == 0}

    def worst_overall(self):
        w = None
        for e in self.worst:
            w = pick(w, e, worst_order)
        return w

    def to_json(self) -> dict:
        rows = {}
        for r, name in enumerate(ROWS):
            rows[name] = {"histogram": {b: int(c) for b, c in zip(BUCKETS, self.hist[r]) if c},
                          "zero_sign": {b: int(c) for b, c in zip(BUCKETS, self.zsign[r]) if c},
                          "worst": kept(self.worst[r]), "first_nan": kept(self.first_nan[r]),
                          "first_zero_sign": kept(self.first_zsign[r])}
        return {"elements": self.elements, "failed_elements": self.failed, "first_failure": self.failure,
                "rows": rows, "rejected_elements": self.rejected_elements,
                "requirements": {rid: e.to_json() for rid, e in sorted(self.requirements.items())},
                "accepted": self.accepted.to_json(), "statistics": self.statistics,
                "rejections": [kept(e) for e in self.rejections]}

    @classmethod
    def from_json(cls, data: dict) -> "PlaneTally":
        t = cls()
        t.elements, t.failed, t.failure = data["elements"], data["failed_elements"], data["first_failure"]
        for r, name in enumerate(ROWS):
            row = data["rows"][name]
            for arr, key in ((t.hist, "histogram"), (t.zsign, "zero_sign")):
                for b, c in row[key].items():
                    arr[r, BUCKETS.index(b)] = c
            t.worst[r], t.first_nan[r], t.first_zsign[r] = (_read(row[k]) for k in ("worst", "first_nan",
                                                                                     "first_zero_sign"))
        t.requirements = evidence_of(data["requirements"])
        t.accepted = ReasonTally.from_json(data["accepted"], _first, _read)
        t.rejected_elements = data["rejected_elements"]
        t.rejections = [_read(e) for e in data.get("rejections", [])]
        t.statistics = {name: {run: {who: dict(c) for who, c in counts.items()} for run, counts in runs.items()}
                        for name, runs in data["statistics"].items()}
        return t

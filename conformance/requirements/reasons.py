"""Elements counted by the judge's reason (``rules.judge.Reason``): the one aggregator every
driver counts with (a requirement's tally, a run's error statistics, a sweep's plane, a fuzz
campaign), so that "exact", "within the budget", "reachable", "an alternative", "within an open
input's bounds" and "rejected" mean the same elements wherever they are counted.

Those accepted beyond the budget (reachable, an alternative, an open input's bounds) are also
kept in detail, as every report shows them: by reason and what it took (the evaluation and the
approximate operation or flush, the alternative's name, the open question), the farthest with
its element, and apart those that are no distance at all (an infinity or NaN against a number,
judge.SPECIALS). Sums and a farthest chosen by distance (ties: the first added, or the lower
position where the caller orders them), so merging in any order gives one result.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Optional

import numpy as np

from sl1conf.conformance.requirements.entries import BeyondBudget, ReasonCounts
from sl1conf.conformance.rules.judge import REASONS, SPECIALS, Reason, special_class

__all__ = ["ReasonTally", "reason_counts"]


def reason_counts(counts) -> dict:
    """Reason name -> elements, every reason named (a fixed record: zeros included)."""
    return {name: int(n) for name, n in zip(REASONS, counts)}


def _add_named(into: dict, reasons: np.ndarray, named: np.ndarray) -> None:
    """Count elements (their reasons and what each took) into reason name -> Counter of what it took."""
    for (r, name), n in Counter(zip(reasons.tolist(), named.tolist())).items():
        into.setdefault(REASONS[r], Counter())[name or "?"] += n


class ReasonTally:
    """Elements by :class:`Reason` (``counts``), and those accepted beyond the budget in detail:
    ``named`` (reason name -> what it took -> elements), ``by`` (the same, of those with a
    distance), ``far`` (how many have one), ``not_a_distance`` (SPECIALS kind -> elements), the
    farthest (``worst``: its distance, what the caller's ``record`` gave for it, its reason and what
    it took). ``position(record)``: where given, a tie for the farthest goes to the lower position
    (a sweep's blocks finish in any order), else to the one added first."""

    def __init__(self, position: "Callable[[object], object] | None" = None):
        self.counts = np.zeros(len(Reason), np.int64)
        self.named: dict = {}  # reason name -> Counter of what it took
        self.by: dict = {}  # the same, of the elements with a distance
        self.not_a_distance: Counter = Counter()
        self.worst: Optional[tuple] = None  # (distance, record, reason name, what it took)
        self._position = position

    def _farther(self, candidate: tuple) -> bool:
        """Whether ``candidate`` (a :attr:`worst`) goes before the one kept."""
        if self.worst is None:
            return True
        if candidate[0] != self.worst[0] or self._position is None:
            return candidate[0] > self.worst[0]
        return self._position(candidate[1]) < self._position(self.worst[1])

    @property
    def far(self) -> int:
        """The elements accepted beyond the budget with a distance (what ``by`` counts)."""
        return sum(sum(names.values()) for names in self.by.values())

    @property
    def beyond(self) -> int:
        """Every element accepted beyond the budget (with a distance or not)."""
        return int(self.counts[Reason.REACHABLE:Reason.OPEN_BOUNDS + 1].sum())

    def count(self, reasons: np.ndarray) -> None:
        """Count elements by their reasons (a uint8 array of Reason values)."""
        if reasons.size:
            self.counts += np.bincount(reasons, minlength=len(Reason))

    def take(self, reason: Reason, n: int, name: "str | None" = None) -> None:
        """Count ``n`` elements of ``reason`` that no judgement holds (a sweep's elements that are
        not judged because they are exact; a block refused at an open beta: the alternative
        ``name``)."""
        self.counts[reason] += n
        if name is not None:
            self.named.setdefault(REASONS[reason], Counter())[name] += n

    def add(self, j, mask: "np.ndarray | None", record: Callable[[int], object]) -> None:
        """The elements ``mask`` marks of judgement ``j`` (None: all): counted by reason, those
        beyond the budget in detail (``record(k)``: what names element ``k`` of ``j``)."""
        self.count(j.reason if mask is None else j.reason[mask])
        beyond = j.beyond_budget if mask is None else j.beyond_budget & mask
        at = np.flatnonzero(beyond)  # few: what accepted them is named for those only
        if at.size:
            self.add_beyond(j.fmt, j.got[at], j.expected.oracle[at], j.dist[at], j.reason[at], j.accepted_as(at),
                            lambda i: record(int(at[i])))

    def add_beyond(self, fmt, got, want, dist, reasons, named, record: Callable[[int], object],
                   cls: "np.ndarray | None" = None) -> None:
        """Elements accepted beyond the budget (arrays over them; ``named``: what each took) in
        detail, without counting them by reason (:meth:`count` does): those that are no distance
        by kind, the others by reason and what it took, the farthest (``record(i)``: element ``i``).
        ``cls``: their rules.judge.special_class where the caller has it already."""
        _add_named(self.named, reasons, named)
        cls = special_class(fmt, got, want) if cls is None else cls
        self.not_a_distance.update(SPECIALS[kind] for kind in cls[cls >= 0].tolist())
        keep = np.flatnonzero(cls < 0)
        if not keep.size:
            return
        _add_named(self.by, reasons[keep], named[keep])
        i = int(keep[int(np.argmax(dist[keep]))])
        if self.worst is None or int(dist[i]) >= self.worst[0]:
            candidate = (int(dist[i]), record(i), REASONS[int(reasons[i])], named[i] or "?")
            if self._farther(candidate):
                self.worst = candidate

    def merge(self, other: "ReasonTally") -> None:
        """Add ``other``'s (added after this one's: a tie for the farthest stays this one's)."""
        self.counts += other.counts
        for mine, theirs in ((self.named, other.named), (self.by, other.by)):
            for reason, names in theirs.items():
                mine.setdefault(reason, Counter()).update(names)
        self.not_a_distance.update(other.not_a_distance)
        if other.worst is not None and self._farther(other.worst):
            self.worst = other.worst

    def far_accepted(self, describe: "Callable[[object], object] | None" = lambda r: r) -> "BeyondBudget | None":
        """The elements with a distance accepted beyond the budget (None when there is none): how
        many, the farthest distance, by reason and what it took, the farthest element
        (``describe(record)``: it as an ElementRecord; None: left out) with its reason and what it took."""
        if not self.far:
            return None
        d, rec, reason, how = self.worst
        return BeyondBudget(self.far, d, {r: dict(sorted(self.by[r].items())) for r in REASONS if r in self.by},
                            None if describe is None else describe(rec).but(reason=reason, accepted_as=how))

    def beyond_budget(self, describe: "Callable[[object], object] | None" = lambda r: r) -> "dict | None":
        """:meth:`far_accepted` as written (a sweep's verdict)."""
        far = self.far_accepted(describe)
        return None if far is None else far.to_json()

    def reasons(self) -> dict:
        """Reason name -> elements (:func:`reason_counts`)."""
        return reason_counts(self.counts)

    def reason_counts(self) -> ReasonCounts:
        """The elements by reason, typed."""
        return ReasonCounts(tuple(int(n) for n in self.counts))

    def to_json(self) -> dict:
        """Everything, for a checkpoint (a sweep's state): :meth:`from_json` reads it back (a
        record with a ``to_json``, an ElementRecord, written as a checkpoint keeps one)."""
        w = self.worst
        element = None if w is None else w[1].to_json(internal=True) if hasattr(w[1], "to_json") else w[1]
        return {"reasons": self.reasons(), "named": {r: dict(sorted(v.items())) for r, v in sorted(self.named.items())},
                "by": {r: dict(sorted(v.items())) for r, v in sorted(self.by.items())}, "far": self.far,
                "not_a_distance": dict(sorted(self.not_a_distance.items())),
                "worst": None if w is None else {"ulp": w[0], "element": element, "reason": w[2], "accepted_as": w[3]}}

    @classmethod
    def from_json(cls, data: dict, position: "Callable[[object], object] | None" = None,
                  read: "Callable[[object], object]" = lambda r: r) -> "ReasonTally":
        """What :meth:`to_json` wrote; ``read``: the farthest's record from its JSON."""
        t = cls(position)
        t.counts = np.array([int(data["reasons"][name]) for name in REASONS], np.int64)
        t.named = {r: Counter(v) for r, v in data["named"].items()}
        t.by = {r: Counter(v) for r, v in data["by"].items()}  # far: what by counts (written for readers)
        t.not_a_distance = Counter(data["not_a_distance"])
        w = data["worst"]
        t.worst = None if w is None else (int(w["ulp"]), read(w["element"]), w["reason"], w["accepted_as"])
        return t

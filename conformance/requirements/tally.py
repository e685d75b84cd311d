"""What a certify run found of one requirement: its :class:`Tally` (the evidence, the examples,
the commonest kind of error, what the diagnosis reads, what was accepted beyond the budget),
and the diagnoses of a run's tallies made in one pass (:func:`diagnose_tallies`)."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.requirements.evidence import Evidence
from sl1conf.conformance.requirements.reasons import ReasonTally
from sl1conf.conformance.requirements.entries import Bulk
from sl1conf.conformance.requirements.records import (
    ERROR_KINDS, CallNote, ElementRecord, as_example, element_record, error_kinds,
)
from sl1conf.conformance.requirements.results import Counted
from sl1conf.conformance.rules.diagnosis import diagnose, diagnose_many
from sl1conf.conformance.rules.judge import OVERFLOW_NOT_ACCEPTED

__all__ = ["EXAMPLES", "calls_to_look_at", "Tally", "diagnose_tallies"]

EXAMPLES = 5  # failing inputs listed per requirement


def calls_to_look_at(ctx: "RunContext", bad: np.ndarray, among: "np.ndarray | None" = None) -> tuple:
    """For :meth:`Tally.add_calls`: per judged call, whether it has an element ``bad`` marks or one
    ``among`` accepted beyond the budget, and how many elements ``among`` marks in it."""
    bounds = ctx.bounds
    hot = ctx.whole.beyond_budget & ~bad
    if among is not None:
        hot &= among
    hot |= bad
    close = np.zeros(len(ctx.judged), bool)
    close[np.searchsorted(bounds, np.flatnonzero(hot), side="right") - 1] = True
    counted = np.diff(bounds) if among is None else np.diff(np.concatenate([[0], np.cumsum(among)])[bounds])
    return close, counted


class Tally:
    """What a certify run found of one requirement (or one family of it): its ``evidence``
    (requirements.evidence.Evidence, the shape fuzz and sweep give theirs in: the elements
    checked and rejected with the worst, the failing calls), and what a report says beyond it:
    examples, the commonest kind of error, what the diagnosis reads, the elements checked by the
    judge's reason (requirements.reasons: what was accepted beyond the budget in detail)."""

    def __init__(self, fmt):
        self.fmt, self.examples = fmt, []
        self.evidence = Evidence()
        self._added = self._counted = 0  # calls added and failing calls counted: the positions of the evidence
        self.seen = []  # (judgement, failing mask, checked mask) per call added: what the diagnosis reads
        self.accepted = ReasonTally()  # the elements checked by the judge's reason; those beyond the budget in detail
        self.kinds = {}  # error kind (ERROR_KINDS index) -> [failing elements, the first (j, k)]: the bulk
        self.noted = []  # per failing call or comparison of calls (not an element): the case ids involved

    @property
    def checked(self) -> int:
        return self.evidence.checked

    @checked.setter
    def checked(self, n: int) -> None:
        self.evidence.checked = n

    @property
    def failed(self) -> int:
        """Failing elements and calls."""
        return self.evidence.failed

    @property
    def worst(self) -> "ElementRecord | None":
        """The worst failing element (the first added of the farthest)."""
        return self.evidence.worst

    def add(self, j, bad: np.ndarray, among: "np.ndarray | None" = None):
        """``bad`` elements of judgement ``j`` (``among``: the elements the rule looked at, default all)."""
        among = np.ones(bad.shape, bool) if among is None else among
        self.checked += int(among.sum())
        self.seen.append((j, bad, among))
        self.accepted.add(j, among, lambda k: self.element(j, k))
        idx = np.flatnonzero(bad)
        self._added += 1
        if not idx.size:
            return
        kinds = error_kinds(j, idx)
        for kind, first, n in zip(*np.unique(kinds, return_index=True, return_counts=True)):
            slot = self.kinds.setdefault(int(kind), [0, None])
            slot[0] += int(n)
            if slot[1] is None:
                slot[1] = (j, int(idx[first]))
        k = int(idx[int(np.argmax(j.dist[idx]))])
        ex = self.element(j, k)
        self.evidence.add_elements(idx.size, ex.but(at=(self._added, k)))
        if len(self.examples) < EXAMPLES:
            self.examples.append(ex)

    def add_calls(self, ctx: "RunContext", which, bad: np.ndarray, among: "np.ndarray | None" = None,
                  looked: "tuple | None" = None) -> None:
        """:meth:`add` of ``ctx.judged[i]`` for every ``i`` of ``which`` (in order), ``bad`` and
        ``among`` given as masks over the run's elements (``ctx.whole``): the same counts, examples
        and evidence, the per-element work done once over the run (a call with no failing element
        and none accepted beyond the budget is only counted: most calls are). ``looked``: what
        :func:`calls_to_look_at` gave for these masks, where the caller adds several subsets."""
        judged, bounds = ctx.judged, ctx.bounds
        close, counted = looked or calls_to_look_at(ctx, bad, among)
        only_counted = np.zeros(len(judged), bool)  # the calls only counted: their reasons counted once, over the run
        for i in which:
            j, lo, hi = judged[i], bounds[i], bounds[i + 1]
            part = None if among is None else among[lo:hi]
            if close[i]:
                self.add(j, bad[lo:hi], part)
            else:
                only_counted[i] = True
                self._added += 1
                self.checked += int(counted[i])
                self.seen.append((j, bad[lo:hi], np.ones(hi - lo, bool) if part is None else part))
        if only_counted.any():
            elements = np.repeat(only_counted, np.diff(bounds))
            self.accepted.count(ctx.whole.reason[elements if among is None else elements & among])

    def note(self, case_id: "str | None", detail: str, also: tuple = ()) -> None:
        """One failing call (not an element), with what was wrong; ``case_id`` None: a finding
        about the whole run (listed first: it says more than any one element). ``also``: the
        ids of other calls the failure involves (the call it was compared with)."""
        self.count((case_id, *also), detail)
        if case_id is None:
            self.examples.insert(0, CallNote(None, detail))  # a note about the run: no element, no call
            del self.examples[EXAMPLES:]
        elif len(self.examples) < EXAMPLES:
            self.examples.append(CallNote(case_id, detail))

    def count(self, case_ids: tuple, detail: str = "") -> None:
        """One failing call or comparison of calls, without an example: the ids of the calls it
        involved (a repeat and its first call), which the diagnosis's call findings look for."""
        self._counted += 1
        self.evidence.add_call((self._counted,), "call", detail)
        self.noted.append(tuple(case_ids))

    def merge(self, other: "Tally") -> None:
        self.seen += other.seen
        self.noted += other.noted
        for kind, (n, first) in other.kinds.items():
            slot = self.kinds.setdefault(kind, [0, first])
            slot[0] += n
        self.accepted.merge(other.accepted)
        theirs = other.evidence  # after this one's: its positions moved past this one's
        worst, first = theirs.worst, theirs.first_call
        self.evidence.merge(Evidence(
            theirs.checked, theirs.elements, theirs.calls,
            None if worst is None else worst.but(at=(self._added + worst.at[0], worst.at[1])),
            None if first is None else {**first, "at": (self._counted + first["at"][0],)}))
        self._added += other._added
        self._counted += other._counted
        self.examples += other.examples[: max(0, EXAMPLES - len(self.examples))]

    def element(self, j, k: int, got=None) -> ElementRecord:
        """Element ``k`` of judgement ``j`` as a report example (:func:`element_record`, its call
        named); ``got``: another result of it (a rearranged call's) in place of the judged one,
        its distance measured the same way."""
        c = j.case
        blocked = ""
        if got is None:
            got, d = j.got[k], int(j.dist[k])
            blocked = j.reach.blocked_at(k)
        else:
            d = None
        return element_record(self.fmt, c.dy[k], c.x1[k], c.x2[k], c.beta, j.expected.oracle[k], got,
                              distance=d, may_be_fill=c.out_alias is None, case=j.row["id"], element=k,
                              length=int(c.call_length),
                              detail=f"{OVERFLOW_NOT_ACCEPTED}: {blocked}" if blocked else None)

    def diagnosed(self, findings: "dict | None" = None) -> bool:
        """Whether its entry has a diagnosis: it failed, on elements or on calls a finding may explain."""
        return bool(self.failed and (any(bad.any() for _, bad, _ in self.seen) or findings and self.noted))

    def entry(self, details: bool = True, findings: "dict | None" = None, diagnosis: "list | None" = None) -> Counted:
        """What it found, typed (results.Counted); ``details`` False: counts, reasons, worst and
        examples only (no diagnosis, nothing accepted beyond the budget: a family's line under
        its requirement). ``findings``: findings about whole calls the diagnosis tries as patterns
        (``RunContext.findings``); ``diagnosis``: the diagnosis, where :func:`diagnose_tallies` made
        it with the run's others."""
        acc = self.accepted
        far = acc.far_accepted() if details else None
        bulk = None
        if details and self.kinds:  # the bulk: the commonest kind of error, with its first element
            kind, (n, first) = max(self.kinds.items(), key=lambda kv: (kv[1][0], -kv[0]))
            bulk = Bulk(ERROR_KINDS[kind], n, sum(v[0] for v in self.kinds.values()), self.element(*first))
        if details and self.diagnosed(findings):
            diagnosis = tuple(diagnosis if diagnosis is not None
                              else diagnose(self.seen, self.element, findings, self.noted))
        else:
            diagnosis = None
        return Counted(self.checked, self.failed, acc.reason_counts() if acc.counts.any() else None, far,
                       dict(sorted(acc.not_a_distance.items())) if details else {}, bulk, diagnosis,
                       None if self.worst is None else self.worst.but(at=None),
                       tuple(as_example(e) for e in self.examples))


def diagnose_tallies(tallies: list, findings: "dict | None" = None) -> dict:
    """id(tally) -> its diagnosis, for every tally of ``tallies`` whose entry has one, made in one
    pass over their calls (rules.diagnosis.diagnose_many)."""
    asked = [t for t in tallies if t is not None and t.diagnosed(findings)]
    made = diagnose_many([(t.seen, t.element, findings, t.noted) for t in asked])
    return {id(t): d for t, d in zip(asked, made)}

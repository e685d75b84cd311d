"""One definition per call-level requirement (:class:`CallRule`), which certify's check and the
campaigns' probe are both made from.

A requirement about whole calls asks one of two things, and its rule says which:

* of one call alone (``fault``): did it do something wrong (fail, write past its length, touch
  memory it should not)? :class:`Fault` says what, in the words both drivers file.
* of a call and its twins (``twins``): extra calls that hold some of the call's elements again
  (a repeat, another core_mask, dx1 over an input, the elements moved), which must give them the
  same bits. :class:`Twin` says which elements are the same ones, :meth:`CallRule.compared` which
  of them differ (:class:`Compared`, each differing element a :class:`Change`: the element, both
  bit patterns, where it sat in the twin).

Why one definition: certify (``Requirement.check``: a Tally with examples and a diagnosis) and fuzz
and sweep (``Probe``: Seen records) used to hold two codings of one comparison, and a fix to one
missed the other. Now certify's ``Plan`` and the campaigns' ``Probe.calls`` ask the rule for the
same twins (:meth:`CallRule.plan`, :func:`campaign_probe`), and both drivers ask it what differs.
Where the drivers genuinely look at different calls (certify's vector families already hold the
twins; certify samples a run's history, a campaign repeats one call), the rule says so in
``certify_apart`` and the certify check still compares with the rule's comparison."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.conformance.requirements.base import Plan
from sl1conf.conformance.requirements.differences import Differ, difference_example
from sl1conf.conformance.requirements.probes import Batch, Probe, Seen
from sl1conf.conformance.requirements.records import detail_of
from sl1conf.reference import formats

__all__ = ["Fault", "Twin", "Change", "Compared", "CallRule", "campaign_probe", "no_twins"]


@dataclass(frozen=True)
class Fault:
    """What one call did wrong: ``kind`` (what a campaign keys it by: memory, crash, ...), ``detail``
    (the words both drivers file), ``requirement``: where it is filed when not the rule's own id (a
    refused input: filing.rejection_filed_under)."""

    kind: str
    detail: str
    requirement: Optional[str] = None


@dataclass(frozen=True)
class Twin:
    """An extra call that holds elements of a base call again, which must give them the same bits:
    ``base`` the base call's index among those the rule was given, ``call`` the extra call, and
    which elements are the same ones: ``count`` of the base call's from ``base_at`` sit from ``at``
    in the twin (``count`` None: every element of dx1, at the same index).

    Unpacks as a probe's ``(index of the case, call)`` (requirements.probes.Probe.calls)."""

    base: int
    call: Case
    base_at: int = 0
    at: int = 0
    count: Optional[int] = None

    def __iter__(self):
        return iter((self.base, self.call))

    def pair(self, first: np.ndarray, then: np.ndarray) -> tuple:
        """The base call's dx1 ``first`` and the twin's ``then`` cut to the elements they share."""
        if self.count is None:
            return first, then
        return first[self.base_at:self.base_at + self.count], then[self.at:self.at + self.count]


@dataclass(frozen=True)
class Change:
    """One element whose bits differ between a base call and its twin: its index in the base call,
    its bits there (``first``) and in the twin (``then``), its index in the twin."""

    element: int
    first: int
    then: int
    index: int


@dataclass
class Compared:
    """A twin compared with its base call (both returned): the twin, both outcomes and ``at``, the
    base call's elements whose bits differ (ascending)."""

    twin: Twin
    first: object
    then: object
    at: np.ndarray

    def changes(self) -> list:
        """:class:`Change` per differing element."""
        t = self.twin
        return [Change(int(k), self.first.out[k], self.then.out[t.at + int(k) - t.base_at], t.at + int(k) - t.base_at)
                for k in self.at]


def no_twins(cases: list, profile) -> list:
    return []


@dataclass(frozen=True)
class CallRule:
    """One call-level requirement's definition, which both drivers read.

    ``id``: the requirement its findings are filed under; ``kind``: what a campaign calls them.
    ``fault(case, outcome)``: what one call did wrong on its own (a :class:`Fault`, or None);
    ``returned_only``: it looks at the calls that returned only (R13 looks at every call).
    ``twins(cases, profile)``: the extra calls it needs for ``cases`` ([:class:`Twin`]), the same
    function for certify's plan and the campaign's probe. ``nan_payloads``: its comparison is of
    every bit (a NaN's payload too), not of NaN as a class. ``certify_apart``: where certify does
    not make ``twins`` but compares other calls with this rule's comparison, which and why."""

    id: str
    kind: str
    fault: Optional[Callable[[Case, object], Optional[Fault]]] = None
    returned_only: bool = True
    twins: Callable[[list, object], list] = no_twins
    nan_payloads: bool = False
    certify_apart: str = ""

    def differing(self, fmt: formats.Format, first: np.ndarray, then: np.ndarray,
                  nan_payloads: "bool | None" = None) -> np.ndarray:
        """Indices of the elements whose bits differ: every bit with ``nan_payloads`` (the rule's
        own where None), else NaN as a class."""
        if self.nan_payloads if nan_payloads is None else nan_payloads:
            return np.flatnonzero(np.asarray(first) != np.asarray(then))
        return np.flatnonzero(~formats.same_result(fmt, first, then))

    def compared(self, outcomes: list, twins: list, answers: list, nan_payloads: "bool | None" = None) -> list:
        """:class:`Compared` per twin that returned, of a base call that returned (``outcomes``: the
        base calls', by index; ``answers``: the twins', in order), in the twins' order."""
        out = []
        for twin, then in zip(twins, answers):
            first = outcomes[twin.base]
            if first.status == then.status == "ok":
                a, b = twin.pair(first.out, then.out)
                at = self.differing(twin.call.format, a, b, nan_payloads) + twin.base_at
                out.append(Compared(twin, first, then, at))
        return out

    def faults(self, cases: list, outcomes: list) -> list:
        """(index, :class:`Fault`) of every call (that returned, with ``returned_only``) that did wrong."""
        if self.fault is None:
            return []
        return [(i, f) for i, (c, o) in enumerate(zip(cases, outcomes))
                if (o.status == "ok" or not self.returned_only) for f in [self.fault(c, o)] if f]

    def seen(self, i: int, f: Fault) -> Seen:
        """A fault as a campaign files it."""
        return Seen(f.requirement or self.id, i, f.kind, f.detail)

    def seen_differing(self, batch: Batch, i: int, differ: list, said: Callable, also: bool = False) -> Seen:
        """Base call ``i`` whose twins ``differ`` (:class:`Compared` each) as a campaign files it:
        its first differing element (the lowest index over the twins), in the words certify's
        examples use (``differences.difference_example``: the element and its inputs, both bit
        patterns, the correctly rounded result, how many of the call's elements differ), after
        ``said(cmp)``'s headline; ``said(cmp)`` gives (headline, the words before the base call's
        bits, before the twin's). ``also``: the differing twins are calls the failure needs to be
        seen again (saved with it). Why here: R09's and R14's findings once named no element."""
        case = batch.cases[i]
        cmp = min(differ, key=lambda c: int(c.at[0]))
        head, before_first, before_then = said(cmp)
        first, then = cmp.first.out, cmp.then.out
        if cmp.twin.count is not None:  # the twin's bits of the shared elements, at the base call's indices
            t = cmp.twin
            then = first.copy()
            then[t.base_at:t.base_at + t.count] = cmp.then.out[t.at:t.at + t.count]
        k = int(cmp.at[0])
        ex = difference_example(case.format, Differ(case.id, case, first, then, cmp.at), (before_first, before_then))
        return Seen(self.id, i, self.kind, f"{head}: {detail_of(ex)}",
                    element=k if k < case.elements_written else None,
                    also=tuple(c.twin.call for c in differ) if also else ())

    def plan(self, name: str, stage: str, base: Callable, fresh: bool = False) -> Plan:
        """Certify's Plan of the rule's twins of the calls ``base(ctx)`` gives (none where it gives None)."""
        def calls(ctx) -> list:
            cases = base(ctx)
            return [] if cases is None else [t.call for t in self.twins(cases, ctx.profile)]
        return Plan(name, stage, calls, fresh=fresh, rule=self)


def campaign_probe(name: str, *rules: CallRule, said: "Callable | None" = None, more: "Callable | None" = None,
                   sampled: bool = False, last: bool = False) -> Probe:
    """The campaigns' Probe of ``rules``: their twins' calls; its check gives each call's faults
    (call by call, each rule's in turn), then, per base call with twins that differ,
    ``said(batch, i, [Compared that differ])`` ([Seen]; the first rule's twins), then ``more(batch)``
    (what no call alone says: the adapter's watch of late writes)."""
    twinned = next((r for r in rules if r.twins is not no_twins), None)
    faulting = tuple(r for r in rules if r.fault)  # (asked once: a sweep checks 2^28 blocks)

    def calls(cases: list, profile) -> list:
        return twinned.twins(cases, profile) if twinned else []

    def check(batch: Batch) -> list:
        out = []
        if faulting:
            for i, (c, o) in enumerate(zip(batch.cases, batch.outcomes)):
                out += [r.seen(i, f) for r in faulting if o.status == "ok" or not r.returned_only
                        for f in [r.fault(c, o)] if f]
        if twinned:
            by_base: dict = {}
            for cmp in twinned.compared(batch.outcomes, batch.calls, batch.answers):
                by_base.setdefault(cmp.twin.base, []).append(cmp)
            for i, cmps in by_base.items():
                differ = [c for c in cmps if c.at.size]
                if differ:
                    out += said(batch, i, differ)
        return out + (more(batch) if more else [])

    return Probe(name, check, calls, sampled=sampled, last=last, rules=rules)

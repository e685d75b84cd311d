"""A campaign's calls made with every requirement's probe: how fuzz and sweep run checks.

Why one function: the campaign drivers have no requirement's logic of their own. Each probe
(``requirements.PROBES``, made in its requirement's module from the requirement's call rule,
``requirements.call_rules``, the definition certify's check reads too) says which calls it needs
beyond the campaign's; they are made with the campaign's own in one adapter run (a simulator
starts once), in catalog order after them, and each probe's check reads the outcomes. The
statistics (``requirements.STATISTICS``) count what a campaign sums and judges once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sl1conf.conformance import requirements
from sl1conf.conformance.requirements.base import Batch

__all__ = ["Probed", "run_probed"]


@dataclass
class Probed:
    """The campaign's own calls' ``outcomes``, what the probes ``seen`` (requirements.base.Seen),
    the statistics' ``counts`` (statistic name -> "dtype/variant" -> counts) and what the
    driver's own judging gave (``first``)."""

    outcomes: list
    seen: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    first: object = None  # what the driver's ``first`` gave


def run_probed(adapter, profile, cases: list, *, ask_late: bool = True, sampled: bool = True,
               statistics: bool = True, sample: "int | None" = None, first=None, rows: "dict | None" = None) -> Probed:
    """``cases`` and every probe's calls for them in one adapter run, then ``first(outcomes)``
    (the driver's own judging: its result is ``Probed.first``), every probe's check (those
    marked ``last`` after the others) and (``statistics``) every statistic's counts.
    ``sampled`` False: the probes marked ``sampled`` make no calls (a sweep's block outside its
    sample); ``ask_late`` False: no probe waits for the adapter's watch of writes after the
    return; ``sample``: elements of a call a statistic reads (None: all). Why the driver's work
    comes first: a probe marked last may wait for the adapter (the watch of dx1 after the last
    calls returned), and that wait has passed by the time the elements are judged. ``rows``: the
    shape of the campaign's calls where the driver knows it (Batch.rows)."""
    planned, extra = [], []
    for probe in requirements.PROBES:
        calls = probe.calls(cases, profile) if sampled or not probe.sampled else []
        planned.append((probe, calls))
        extra += [call for _, call in calls]
    outcomes = adapter.run([*cases, *extra])
    own, answers = outcomes[:len(cases)], outcomes[len(cases):]
    probed, at, batches = Probed(own), 0, []
    # one Batch for the statistics and every probe without calls of its own (a sweep block's six of seven)
    plain = Batch(cases, own, profile, adapter, ask_late=ask_late, sample=sample, rows=rows or {})
    for probe, calls in planned:
        batches.append((probe, Batch(cases, own, profile, adapter, calls, answers[at:at + len(calls)], ask_late, sample)
                        if calls else plain))
        at += len(calls)
    if first is not None:
        probed.first = first(own)
    for probe, batch in sorted(batches, key=lambda pb: pb[0].last):
        probed.seen += probe.check(batch)
    if statistics:
        probed.counts = {s.name: s.counts(plain) for s in requirements.STATISTICS}
    return probed

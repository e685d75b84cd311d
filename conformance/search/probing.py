"""A campaign's calls made with every requirement's probe: how fuzz and sweep run checks.

Why one function: the campaign drivers have no requirement's logic of their own. Each probe
(``requirements.PROBES``, declared in its requirement's module) says which calls it needs
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
    """The campaign's own calls' ``outcomes``, what the probes ``seen`` (requirements.base.Seen)
    and the statistics' ``counts`` (statistic name -> "dtype/variant" -> counts)."""

    outcomes: list
    seen: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)


def run_probed(adapter, profile, cases: list, *, ask_late: bool = True, sampled: bool = True,
               statistics: bool = True, sample: "int | None" = None) -> Probed:
    """``cases`` and every probe's calls for them in one adapter run, then every probe's check
    and (``statistics``) every statistic's counts. ``sampled`` False: the probes marked
    ``sampled`` make no calls (a sweep's block outside its sample); ``ask_late`` False: no
    probe waits for the adapter's watch of writes after the return; ``sample``: elements of a
    call a statistic reads (None: all)."""
    planned, extra = [], []
    for probe in requirements.PROBES:
        calls = probe.calls(cases, profile) if sampled or not probe.sampled else []
        planned.append((probe, calls))
        extra += [call for _, call in calls]
    outcomes = adapter.run([*cases, *extra])
    own, answers = outcomes[:len(cases)], outcomes[len(cases):]
    probed, at = Probed(own), 0
    for probe, calls in planned:
        probed.seen += probe.check(Batch(cases, own, profile, adapter, calls, answers[at:at + len(calls)], ask_late,
                                         sample))
        at += len(calls)
    if statistics:
        batch = Batch(cases, own, profile, adapter, ask_late=ask_late, sample=sample)
        probed.counts = {s.name: s.counts(batch) for s in requirements.STATISTICS}
    return probed

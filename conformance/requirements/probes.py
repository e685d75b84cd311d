"""A requirement's check in a campaign of independent calls (fuzz's batches, sweep's blocks):
the :class:`Probe` a row declares, the :class:`Batch` it reads, the :class:`Seen` records it
returns, and the :class:`Statistic` a campaign sums and judges once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

__all__ = ["Batch", "Seen", "SHORT_CALL", "NOT_WRITTEN", "Probe", "Statistic"]


@dataclass
class Batch:
    """A campaign's calls as a probe sees them (a fuzz batch, a sweep block): the ``cases`` and
    their ``outcomes``, the probe's own ``calls`` ((index of the case, call), as its
    :attr:`Probe.calls` asked) with their ``answers``, whether it may ``ask_late`` the adapter
    what was written after a call returned (a wait the driver may save), and how many elements
    of a call a :class:`Statistic` reads (``sample``; None: all); ``rows``: index of a case -> its
    shape, where the driver made it a sweep block of whole runs (``kernel.f16_judge_pass``'s
    rows), which the statistics' passes in C take."""

    cases: list
    outcomes: list
    profile: object
    adapter: object
    calls: list = field(default_factory=list)  # (index of the case, call) each: a call rule's Twin
    answers: list = field(default_factory=list)
    ask_late: bool = True
    sample: Optional[int] = None
    rows: dict = field(default_factory=dict)

    def returned(self) -> list:
        """(index, case, outcome) of every call that returned a result."""
        return [(i, c, o) for i, (c, o) in enumerate(zip(self.cases, self.outcomes)) if o.status == "ok"]


@dataclass(frozen=True)
class Seen:
    """One failing call a probe found, filed under ``requirement``: ``kind`` what was seen (crash,
    memory, core-mask, ...), ``case`` the index of the call in the batch, ``element`` its first
    failing element; ``changed``: (element, its other bits) of each element whose bits changed
    in another call (a sweep counts them as rejected elements; empty: a finding about the
    call); ``also``: the other calls the failure needs to be seen again (the twin under
    another core_mask); ``shape``: what the fuzzer groups findings by beyond their key."""

    requirement: str
    case: int
    kind: str
    detail: str
    element: Optional[int] = None
    changed: tuple = ()
    also: tuple = ()
    shape: tuple = ()


SHORT_CALL = 64
"""A campaign's calls up to this length are short: the core_mask twin and the repeat are made
of short calls (a simulator pays per element), and the fuzzer keys their failures apart."""
NOT_WRITTEN = "not-written"
"""What a finding's shape calls elements whose dx1 bits are still what they were before the call."""


def _no_calls(cases: list, profile) -> list:
    return []


@dataclass(frozen=True)
class Probe:
    """A requirement's check in a campaign of independent calls (fuzz's batches, sweep's blocks).

    Why declared: the driver sees every probe's calls before it makes any, and makes them
    with the campaign's own in one adapter run. ``calls(cases, profile)``: the calls it needs
    beyond the campaign's, as (index of the case, call); ``check(batch)``: what it found
    ([:class:`Seen`]). ``sampled``: its calls are made only on the blocks a sweep samples
    (each call can be a simulator's start). A probe several requirements name is made once."""

    name: str
    check: Callable[[Batch], list]
    calls: Callable[[list, object], list] = _no_calls
    sampled: bool = False
    last: bool = False  # checked after the others and the driver's judging (it may wait for the adapter)
    rules: tuple = ()  # the call rules it is made from (requirements.call_rules.campaign_probe)


@dataclass(frozen=True)
class Statistic:
    """Counts a requirement sums over a whole campaign and judges once (the rounding bias):
    ``name`` its key in a fuzz summary, ``counts(batch)``: "dtype/variant" -> counts of one batch or block; ``add(total, more)``
    adds them; ``judge(counts)``: {"test": ..., "findings": [lines]} for one dtype and
    variant; ``failure_keys(run, judged)``: the campaign's failure keys of a failing test."""

    name: str
    requirement: str  # the id its findings are filed under
    counts: Callable[[Batch], dict]
    add: Callable[[dict, dict], dict]
    judge: Callable[[dict], dict]
    failure_keys: Callable[[str, dict], list]

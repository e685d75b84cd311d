"""What every requirement module shares: the :class:`Requirement` row, the calls it asks the
driver to make (:class:`Plan`, made into :class:`Made`), what a check returns (:class:`Check`),
the run it reads (:class:`RunContext`, its :class:`JudgedCall` per call) and the calls several
checks read again (:data:`START_LAYOUT`). A check's evidence is a ``tally.Tally``, one element
as a report says it a ``records.element_record``, a campaign's form of a check a
``probes.Probe``: their names are importable from here too."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Callable, Optional

import numpy as np

from sl1conf.conformance.requirements.probes import NOT_WRITTEN, SHORT_CALL, Batch, Probe, Seen, Statistic
from sl1conf.conformance.requirements.records import (
    ERROR_KINDS, UNWRITTEN, case_element, element_record, error_kinds, oracle_at,
)
from sl1conf.conformance.requirements.tally import EXAMPLES, Tally, calls_to_look_at, diagnose_tallies
from sl1conf.conformance.rules.diagnosis import FLUSH_VARIES, FLUSH_VARIES_TEXT
from sl1conf.conformance.rules.judge import ELEMENT_RULES, ElementRule, Judgement
from sl1conf.reference import formats

__all__ = [
    "Requirement", "Check", "JudgedCall", "RunContext", "STAGES", "Plan", "Made", "START_LAYOUT", "START_LAYOUT_MAX",
    "start_layout", "RECORDED_NOTE", "replayed", "element_check", "LONG_CALL",
    # from probes, records and tally, for the code that imports them from here
    "Batch", "Seen", "SHORT_CALL", "NOT_WRITTEN", "Probe", "Statistic",
    "UNWRITTEN", "ERROR_KINDS", "error_kinds", "element_record", "oracle_at", "case_element",
    "EXAMPLES", "Tally", "calls_to_look_at", "diagnose_tallies",
]


@dataclass
class JudgedCall(Judgement):
    """One call of a certify run, judged: its judgement (``rules.judge.Judgement``, of the
    elements it wrote, ``case`` the call) and what the judgement is of, which only certify knows:
    the vector set's ``row``, the ``outcome``, the vector ``family``, the call's number in the
    adapter's history (``call_no``), whether the elements a correct call does not write still
    hold the fill (``fill_ok``)."""

    row: Optional[dict] = None
    outcome: object = None
    family: str = ""
    fill_ok: bool = True
    call_no: int = 0

    @classmethod
    def of(cls, j: Judgement, **what) -> "JudgedCall":
        """``j`` (its arrays, not copies) with what it is of."""
        return cls(**{**{f.name: getattr(j, f.name) for f in fields(Judgement)}, **what})


@dataclass
class Check:
    """What a run check found: ``tally`` (None for a recorded requirement that counts nothing),
    ``applicable`` (False: nothing this requirement is about was in the run), extra fields."""

    tally: Optional[Tally] = None
    applicable: bool = True
    extra: dict = field(default_factory=dict)


@dataclass
class RunContext:
    """One certify run, as the run checks and the plans see it (the engine fills it in)."""

    fmt: formats.Format
    profile: object
    variant: str
    adapter: object
    judged: list  # JudgedCall per call that returned
    broken: list  # (row, case, outcome) per call that crashed, hung or failed
    calls: list  # (row, vector case, case) per call made
    memo: dict = field(default_factory=dict)  # what a plan worked out for its check (R18's arrangements)
    rejected: list = field(default_factory=list)  # (row, case, outcome, family) per call the implementation refused
    findings: dict = field(default_factory=dict)
    """Findings about whole calls that explain failures elsewhere, which the diagnosis tries as
    call-level patterns in every requirement: key -> (pattern, {case id: what was seen}). R13
    adds the calls that wrote dx1 after they returned ("late-write")."""
    returned: list = field(default_factory=list)  # the cases of the run's calls that returned, in call order
    made: dict = field(default_factory=dict)  # plan name -> Made: the calls the plans asked for
    whole: object = None  # the judgement of every returned element at once (``judged`` are views of it)
    bounds: object = None  # where each judged call's elements start in ``whole``, and where the last ends


    def element_at(self, k: int) -> tuple:
        """(judged call, index in it) of element ``k`` of ``whole``."""
        i = int(np.searchsorted(self.bounds, k, side="right")) - 1
        return self.judged[i], k - int(self.bounds[i])

    def of(self, families) -> list:
        return [j for j in self.judged if j.family in families]

    def note_flush_varies(self, case, k: int, first: int, then: int, case_id: str, detail: str) -> bool:
        """Whether ``first`` and ``then``, two results of element ``k`` of ``case`` that differ
        (bits), are flushing's doing: one reachable by IEEE arithmetic only with a subnormal
        flushed (reachable.FLUSHING), the other without. If so the call is a finding about
        whole calls (``findings``, diagnosis.FLUSH_VARIES): the cause R14 and R18 then name."""
        from dataclasses import replace

        from sl1conf.reference.reachable import FLUSHING, OVERFLOWS, reach

        fmt = self.fmt
        # every overflow taken as it comes: whether the two differ by a flush, not the overflow policy (an
        # unflushed subnormal beta's 1 / beta overflows where the flushed one divides by zero)
        r = reach(fmt, replace(FLUSHING, overflow=OVERFLOWS), np.array([first, then], fmt.uint), case.dy[k], case.x1[k], case.x2[k], case.beta,
                  np.full(2, oracle_at(case, k), fmt.uint), stages=(1, 3))
        if sorted(r.stage.tolist()) != [1, 3]:
            return False
        text, ids = self.findings.setdefault(FLUSH_VARIES, (FLUSH_VARIES_TEXT, {}))
        ids.setdefault(case_id, detail)
        return True

    def made_of(self, plan: "Plan") -> "Made":
        """What the driver made of ``plan`` (nothing, where it made none of it)."""
        return self.made.get(plan.name) or Made([], [], 0)


STAGES = ("before", "after", "judged")
"""When a plan's calls are made: ``before`` the run's own calls (after a restart, where the
plan asks for a fresh worker), ``after`` them (the plan reads ``RunContext.returned``), or
once they are ``judged`` (it reads ``RunContext.judged``)."""


@dataclass(frozen=True)
class Plan:
    """Calls a requirement needs beyond the run's own, which the driver makes for it.

    Why declared rather than made by the check: the driver sees every requirement's calls
    before it makes them, so it merges the plans of one stage into one adapter run (one start
    of a simulator or load of a board) and makes them while it judges another run. ``calls(ctx)``
    gives the cases (in order); a plan several requirements name (:data:`START_LAYOUT`) is made
    once; the check reads the outcomes with ``ctx.made_of(plan)``."""

    name: str
    stage: str
    calls: Callable[[RunContext], list]
    fresh: bool = False  # made first in a fresh worker (Adapter.restart), where the adapter can start one
    rule: object = None  # the call rule whose twins these are (requirements.call_rules.CallRule.plan), if any

    def __post_init__(self):
        if self.stage not in STAGES:
            raise ValueError(f"plan {self.name}: stage {self.stage!r} is none of {STAGES}")


@dataclass
class Made:
    """A plan's calls as the driver made them: the cases, their outcomes, the number of the first
    in the adapter's call history (``Adapter.calls_made`` counts from 1 after a restart), and
    whether a fresh worker was started for them."""

    calls: list
    outcomes: list
    first: int
    fresh: bool = False


START_LAYOUT_MAX = 100_000
"""Calls up to this many elements run a second time with every array's first element right
after a guard page (``Case.guard = "start"``), so reads before the start fault as reads past
the end do; longer calls (a handful of 1,000,000-element ones) run in the first layout only."""


def _start_layout_calls(ctx: RunContext) -> list:
    if not ctx.adapter.capabilities.memory_checked:
        return []
    return [replace(c, guard="start") for c in ctx.returned if c.n <= START_LAYOUT_MAX]


START_LAYOUT = Plan("start-layout", "after", _start_layout_calls)
"""Every returned call of at most START_LAYOUT_MAX elements again in the "start" guard layout
(once per run, for the memory, return, determinism checks); none where the adapter guards no
buffers."""


def start_layout(ctx: RunContext) -> list:
    """(judgement, outcome) of every call :data:`START_LAYOUT` made again."""
    outcomes = ctx.made_of(START_LAYOUT).outcomes
    if not outcomes:
        return []
    picked = [j for j in ctx.judged if j.case.n <= START_LAYOUT_MAX]  # the plan's calls, in the same order
    return list(zip(picked, outcomes))


RECORDED_NOTE = ("not observed from a results file: the board made each case's call once, and this requirement "
                 "needs calls of its own ({}); certify the library through sim: with the bundled harness for it")


def replayed(ctx: RunContext, needs: str) -> "Check | None":
    """Not applicable, and why, where the adapter replays recorded results and so can make none
    of the calls ``needs`` names; None where it can."""
    if getattr(ctx.adapter.capabilities, "recorded", False):
        return Check(applicable=False, extra={"observed": RECORDED_NOTE.format(needs)})
    return None


def element_check(ctx: RunContext, req: "Requirement") -> Check:
    """A run check counting the requirement's element rule's rejections over every judged call."""
    t = Tally(ctx.fmt)
    if ctx.whole is not None:
        t.add_calls(ctx, range(len(ctx.judged)), ctx.whole.rejected[req.id], ctx.whole.checked[req.id])
    else:
        for j in ctx.judged:
            t.add(j, j.rejected[req.id], among=j.checked[req.id])
    return Check(t, applicable=t.checked > 0)


LONG_CALL = 65_536  # past 32,768, where framework kernels split work between threads


# --------------------------------------------------------------------------------------
# the catalog

_RULE = {rule.id: rule for rule in ELEMENT_RULES}


@dataclass(frozen=True)
class Requirement:
    """One requirement: what the report prints and how it is checked.

    ``kind``: "required" (a failure fails the verdict) or "recorded" (the manual leaves the
    behaviour open: the report says what was observed). ``strict_only`` (from its element
    rule): required under a strict profile, recorded otherwise. ``element``: the judge's rule
    of the same id, if the requirement is about single elements (its default check counts
    that rule's rejections). ``families``: the vector families it is aimed at
    ("*": every family; empty: every call). ``per_family``: judged and reported family by
    family (waivers may name families). ``observes``: the report records what was observed
    (an answer to an open question, or the behaviour seen)."""

    id: str
    title: str
    statement: str
    check: Callable[[RunContext, "Requirement"], Check] = element_check
    kind: str = "required"
    families: tuple = ()
    per_family: bool = False
    observes: bool = False
    reports_model: bool = False  # what it observes is the evaluation model matched
    plans: tuple = ()  # the calls it needs beyond the run's own (Plan), made by the driver
    probes: tuple = ()  # its checks in fuzz batches and sweep blocks (Probe), made by those drivers
    rule: object = None  # its one definition as a call-level requirement (requirements.call_rules.CallRule)
    statistic: Optional[Statistic] = None  # counts fuzz and sweep sum over a campaign and judge once
    last: bool = False  # checked after every other requirement: it reads what their calls did too (R13)
    element: Optional[ElementRule] = None  # the judge's rule for single elements, for R01 to R06

    def __post_init__(self):
        if self.element is None:
            object.__setattr__(self, "element", _RULE.get(self.id))
        if self.check is element_check and self.element is None:
            raise ValueError(f"{self.id}: a requirement without an element rule needs a check")

    @property
    def strict_only(self) -> bool:
        """Required under a strict profile (zero signs checked), recorded otherwise."""
        return bool(self.element and self.element.strict_only)

    def kind_for(self, profile) -> str:
        return "recorded" if self.strict_only and not profile.strict_zero_sign else self.kind

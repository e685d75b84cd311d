"""What every requirement module shares: the :class:`Requirement` row, the calls it asks the
driver to make (:class:`Plan`, made into :class:`Made`), the evidence a check returns
(:class:`Check` with its :class:`Tally`), the run it reads (:class:`RunContext`) and the calls
several checks read again (:data:`START_LAYOUT`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Callable, Optional

import numpy as np

from sl1conf.adapters.base import fill_bits
from sl1conf.conformance.rules import distances
from sl1conf.conformance.requirements.evidence import Evidence
from sl1conf.conformance.rules.diagnosis import FLUSH_VARIES, FLUSH_VARIES_TEXT, diagnose, diagnose_many
from sl1conf.conformance.rules.judge import ELEMENT_RULES, ElementRule, Judgement, SPECIALS, special_class
from sl1conf.reference import formats

EXAMPLES = 5  # failing inputs listed per requirement


# --------------------------------------------------------------------------------------
# run checks


UNWRITTEN = "not written (dx1 still holds the fill)"  # an element's error kind: no result, no distance
ERROR_KINDS = (*SPECIALS, UNWRITTEN, *distances.WORDS, "a zero of the other sign")
"""What a failing element's error is, for a block's bulk: a kind that is no distance (judge.SPECIALS),
an element left unwritten, or a distance class (rules.distances, the histograms' classes)."""


def error_kinds(j, idx: np.ndarray) -> np.ndarray:
    """Index into ERROR_KINDS of elements ``idx`` of judgement ``j``."""
    fmt = j.fmt
    got, want = j.got[idx], j.expected.oracle[idx]
    out = special_class(fmt, got, want)
    rest = out < 0
    unwritten = rest & (got == fill_bits(fmt)) & (j.case is None or j.case.out_alias is None)
    out[unwritten] = len(SPECIALS)
    rest &= ~unwritten
    d = j.dist[idx]
    out[rest] = np.where(d[rest] == 0, len(ERROR_KINDS) - 1,
                         len(SPECIALS) + 1 + distances.distance_class(np.maximum(d[rest], 1)))
    return out


def element_record(fmt, dy, x1, x2, beta, expected, got, *, distance: "int | None" = None,
                   may_be_fill: bool = True) -> dict:
    """One element as every report, fuzz summary and terminal line says it (reports.view.element_text
    reads it): the inputs, the correctly rounded result and the implementation's (bit patterns,
    as hex), and ``ulp``: its distance in ULPs, or the kind of result that is no distance
    (judge.SPECIALS: an infinity or NaN against a number, the other sign ...). ``ulp_value``: the
    distance (formats.ulp_distance; NaN as a class), what the worst is chosen by (the writers
    leave it out); ``distance``: that distance where the judge measured it already.
    ``not_written``: the result has dx1's fill bits, all but surely never written (``may_be_fill``
    False: an in-place call, whose dx1 held an input)."""
    want, bits = np.array([expected], fmt.uint), np.array([got], fmt.uint)
    if distance is None:
        distance = 0 if formats.same_result(fmt, bits, want)[0] else int(formats.ulp_distance(fmt, bits, want)[0])
    cls = int(special_class(fmt, bits, want)[0])
    out = {"dy": formats.hex_bits(fmt, dy), "x1": formats.hex_bits(fmt, x1), "x2": formats.hex_bits(fmt, x2),
           "beta": formats.hex_bits(fmt, beta), "expected": formats.hex_bits(fmt, expected),
           "got": formats.hex_bits(fmt, got), "ulp": SPECIALS[cls] if cls >= 0 else distance, "ulp_value": distance}
    if may_be_fill and int(got) == fill_bits(fmt):
        out["not_written"] = True  # dx1's bits from before the call: all but surely never written
    return out


def oracle_at(case, k: int) -> int:
    """The correctly rounded result of element ``k`` of ``case`` (an adapters Case), bits."""
    from sl1conf.reference import fast_oracle

    floats = case.floats()
    return int(fast_oracle.smoothl1lossgrad(*(a[k:k + 1] for a in floats[:3]), floats[3]).view(case.format.uint)[0])


def case_element(case, k: int, got: int, distance: "int | None" = None, expected: "int | None" = None) -> dict:
    """Element ``k`` of ``case`` with the result ``got`` (bits), as :func:`element_record` says an
    element (``expected``: the correctly rounded bits, computed where not given)."""
    return element_record(case.format, case.dy[k], case.x1[k], case.x2[k], case.beta,
                          oracle_at(case, k) if expected is None else expected, got, distance=distance,
                          may_be_fill=case.out_alias is None)


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
    examples, the commonest kind of error, what the diagnosis reads, what was accepted beyond the
    budget."""

    def __init__(self, fmt):
        self.fmt, self.examples = fmt, []
        self.evidence = Evidence()
        self._added = self._counted = 0  # calls added and failing calls counted: the positions of the evidence
        self.seen = []  # (judgement, failing mask, checked mask) per call added: what the diagnosis reads
        self.far, self.far_by, self.far_worst = 0, {}, None  # accepted beyond the budget: reachable under the error model, or an alternative
        self.far_special = {}  # accepted infinities or NaNs against numbers (no distance), by kind
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
    def worst(self) -> "dict | None":
        """The worst failing element (the first added of the farthest)."""
        return self.evidence.worst

    def add(self, j, bad: np.ndarray, among: "np.ndarray | None" = None):
        """``bad`` elements of judgement ``j`` (``among``: the elements the rule looked at, default all)."""
        among = np.ones(bad.shape, bool) if among is None else among
        self.checked += int(among.sum())
        self.seen.append((j, bad, among))
        self._beyond_budget(j, among & ~bad)
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
        self.evidence.add_elements(idx.size, {**ex, "at": (self._added, k)})
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
        for i in which:
            j, lo, hi = judged[i], bounds[i], bounds[i + 1]
            part = None if among is None else among[lo:hi]
            if close[i]:
                self.add(j, bad[lo:hi], part)
            else:
                self._added += 1
                self.checked += int(counted[i])
                self.seen.append((j, bad[lo:hi], np.ones(hi - lo, bool) if part is None else part))

    def _beyond_budget(self, j, accepted: np.ndarray) -> None:
        """Count the accepted elements that are beyond the budget (reachable under the error
        model, or an alternative's bits): how many, with what it took, the farthest; those that
        are no distance at all (an infinity or NaN against a number) by kind."""
        far = accepted & j.beyond_budget
        if not far.any():
            return
        at = np.flatnonzero(far)  # few: what accepted them is named for those only
        cls = special_class(self.fmt, j.got[at], j.expected.oracle[at])
        for kind in np.unique(cls[cls >= 0]):
            self.far_special[SPECIALS[kind]] = self.far_special.get(SPECIALS[kind], 0) + int((cls == kind).sum())
        at = at[cls < 0]
        if not at.size:
            return
        named = j.accepted_as(at)
        self.far += int(at.size)
        for name in named:
            self.far_by[name] = self.far_by.get(name, 0) + 1
        i = int(np.argmax(j.dist[at]))
        k = int(at[i])
        if self.far_worst is None or int(j.dist[k]) > self.far_worst["ulp_value"]:
            self.far_worst = {**self.element(j, k), "accepted_as": named[i]}

    def note(self, case_id: "str | None", detail: str, also: tuple = ()) -> None:
        """One failing call (not an element), with what was wrong; ``case_id`` None: a finding
        about the whole run (listed first: it says more than any one element). ``also``: the
        ids of other calls the failure involves (the call it was compared with)."""
        self.count((case_id, *also), detail)
        if case_id is None:
            self.examples.insert(0, {"detail": detail})
            del self.examples[EXAMPLES:]
        elif len(self.examples) < EXAMPLES:
            self.examples.append({"case": case_id, "detail": detail})

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
        self.far += other.far
        for name, n in other.far_by.items():
            self.far_by[name] = self.far_by.get(name, 0) + n
        for kind, n in other.far_special.items():
            self.far_special[kind] = self.far_special.get(kind, 0) + n
        if other.far_worst and (self.far_worst is None or other.far_worst["ulp_value"] > self.far_worst["ulp_value"]):
            self.far_worst = other.far_worst
        theirs = other.evidence  # after this one's: its positions moved past this one's
        worst, first = theirs.worst, theirs.first_call
        self.evidence.merge(Evidence(
            theirs.checked, theirs.elements, theirs.calls,
            None if worst is None else {**worst, "at": (self._added + worst["at"][0], worst["at"][1])},
            None if first is None else {**first, "at": (self._counted + first["at"][0],)}))
        self._added += other._added
        self._counted += other._counted
        self.examples += other.examples[: max(0, EXAMPLES - len(self.examples))]

    def element(self, j, k: int, got=None) -> dict:
        """Element ``k`` of judgement ``j`` as a report example (:func:`element_record`, where it
        is first); ``got``: another result of it (a rearranged call's) in place of the judged one,
        its distance measured the same way."""
        c = j.case
        if got is None:
            got, d = j.got[k], int(j.dist[k])
        else:
            d = None
        return {"case": j.row["id"], "element": k, "length": int(c.call_length),
                **element_record(self.fmt, c.dy[k], c.x1[k], c.x2[k], c.beta, j.expected.oracle[k], got,
                                 distance=d, may_be_fill=c.out_alias is None)}

    def example(self, j, k: int) -> dict:
        """Element ``k`` of judgement ``j`` as a report shows it."""
        e = self.element(j, k)
        e.pop("ulp_value")
        return e

    def diagnosed(self, findings: "dict | None" = None) -> bool:
        """Whether its entry has a diagnosis: it failed, on elements or on calls a finding may explain."""
        return bool(self.failed and (any(bad.any() for _, bad, _ in self.seen) or findings and self.noted))

    def entry(self, details: bool = True, findings: "dict | None" = None, diagnosis: "list | None" = None) -> dict:
        """The report's entry; ``details`` False: counts, worst and examples only (no diagnosis,
        no accepted-far counts: a family's line under its requirement). ``findings``: findings about
        whole calls the diagnosis tries as patterns (``RunContext.findings``); ``diagnosis``: the
        diagnosis, where :func:`diagnose_tallies` made it with the run's others."""
        out = {"checked": self.checked, "failed": self.failed}
        if details and self.far:
            out["beyond_budget"] = {"elements": self.far, "max_ulp": self.far_worst["ulp_value"],
                                   "by": dict(sorted(self.far_by.items())),
                                   "worst": {k: v for k, v in self.far_worst.items() if k != "ulp_value"}}
        if details and self.far_special:
            out["beyond_budget_not_a_distance"] = dict(sorted(self.far_special.items()))
        example = self.example
        if details and self.kinds:  # the bulk: the commonest kind of error, with its first element
            kind, (n, first) = max(self.kinds.items(), key=lambda kv: (kv[1][0], -kv[0]))
            out["bulk"] = {"kind": ERROR_KINDS[kind], "failed": n, "of": sum(v[0] for v in self.kinds.values()),
                           "example": example(*first)}
        if details and self.diagnosed(findings):
            out["diagnosis"] = (diagnosis if diagnosis is not None
                                else diagnose(self.seen, self.example, findings, self.noted))
        if self.worst is not None:
            out["worst"] = {k: v for k, v in self.worst.items() if k not in ("ulp_value", "at")}
        if self.examples:
            out["examples"] = [{k: v for k, v in e.items() if k != "ulp_value"} for e in self.examples]
        return out


def diagnose_tallies(tallies: list, findings: "dict | None" = None) -> dict:
    """id(tally) -> its diagnosis, for every tally of ``tallies`` whose entry has one, made in one
    pass over their calls (rules.diagnosis.diagnose_many)."""
    asked = [t for t in tallies if t is not None and t.diagnosed(findings)]
    made = diagnose_many([(t.seen, t.example, findings, t.noted) for t in asked])
    return {id(t): d for t, d in zip(asked, made)}


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
        from sl1conf.reference.reachable import FLUSHING, reach

        fmt = self.fmt
        r = reach(fmt, FLUSHING, np.array([first, then], fmt.uint), case.dy[k], case.x1[k], case.x2[k], case.beta,
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


# --------------------------------------------------------------------------------------
# campaign probes: a requirement's check in fuzz batches and sweep blocks


@dataclass
class Batch:
    """A campaign's calls as a probe sees them (a fuzz batch, a sweep block): the ``cases`` and
    their ``outcomes``, the probe's own ``calls`` ((index of the case, call), as its
    :attr:`Probe.calls` asked) with their ``answers``, whether it may ``ask_late`` the adapter
    what was written after a call returned (a wait the driver may save), and how many elements
    of a call a :class:`Statistic` reads (``sample``; None: all)."""

    cases: list
    outcomes: list
    profile: object
    adapter: object
    calls: list = field(default_factory=list)
    answers: list = field(default_factory=list)
    ask_late: bool = True
    sample: Optional[int] = None

    def returned(self) -> list:
        """(index, case, outcome) of every call that returned a result."""
        return [(i, c, o) for i, (c, o) in enumerate(zip(self.cases, self.outcomes)) if o.status == "ok"]

    def differing(self, nan_payloads: bool = False) -> list:
        """(index of the case, the probe's call) of every probe call of the same data whose bits
        differ from its case's, both returned (NaN as a class; ``nan_payloads``: every bit)."""
        out = []
        for (i, call), b in zip(self.calls, self.answers):
            a = self.outcomes[i]
            if a.status == b.status == "ok" and not (np.array_equal(a.out, b.out) if nan_payloads else
                                                     formats.same_result(call.format, a.out, b.out).all()):
                out.append((i, call))
        return out


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

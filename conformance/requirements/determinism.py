"""R14 deterministic: a sample of calls repeated first in a fresh worker, after the run, in
reverse order and with their arrays elsewhere, the same bits every time."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.requirements.base import (
    LONG_CALL, START_LAYOUT, START_LAYOUT_MAX, Check, Plan, Requirement, RunContext, replayed, start_layout,
)
from sl1conf.conformance.requirements.call_rules import CallRule, Twin, campaign_probe
from sl1conf.conformance.requirements.differences import Differ, common_causes, difference_example
from sl1conf.conformance.requirements.records import detail_of
from sl1conf.conformance.requirements.probes import SHORT_CALL, Batch
from sl1conf.conformance.requirements.tally import EXAMPLES, Tally


HISTORY_SAMPLE = 24
"""Calls R14 repeats: subnormal and flush-sensitive ones, boundary ones, one long call, and
ordinary ones spread over the run."""


def _history_sample(ctx: RunContext) -> list:
    """A deterministic sample of the run's calls, in run order: up to 8 with subnormal or
    flush-sensitive inputs, 6 with diff = +-beta, the shortest call of LONG_CALL elements or
    more, and calls spread evenly over the rest."""
    calls = [c for _, _, c in ctx.calls if ctx.adapter.supports(c) and c.n]
    flags = {id(c): set(row["flags"]) for row, _, c in ctx.calls}
    picked: dict = {}

    def take(cands, k):
        for c in [c for c in cands if id(c) not in picked][:k]:
            picked[id(c)] = c

    take([c for c in calls if flags[id(c)] & {"subnormal-input", "ftz-sensitive"}], 8)
    take([c for c in calls if "diff-eq-beta" in flags[id(c)]], 6)
    take(sorted((c for c in calls if c.n >= LONG_CALL), key=lambda c: c.n), 1)
    rest = [c for c in calls if id(c) not in picked]
    if rest:
        take([rest[int(k)] for k in np.linspace(0, len(rest) - 1, min(len(rest), HISTORY_SAMPLE - len(picked)))], HISTORY_SAMPLE)
    order = {id(c): i for i, c in enumerate(calls)}
    return sorted(picked.values(), key=lambda c: order[id(c)])


HISTORY_FIRST = Plan("history-first", "before", lambda ctx: [] if replayed(ctx, "") else _history_sample(ctx), fresh=True)
"""Before anything else: the sample in a fresh worker (its first calls)."""
HISTORY_AGAIN = Plan("history-again", "after", lambda ctx: (lambda s: s + s[::-1])(ctx.made_of(HISTORY_FIRST).calls))
"""The sample again once the run's calls are made, then in reverse order: one adapter run."""


def _deterministic(ctx: RunContext, req: "Requirement") -> Check:
    """The sample again after the rest of the run and then in reverse order, every call of the
    run again with its arrays elsewhere (the start layout), each against the call's first
    result (in a fresh worker where the adapter can start one): the same bits (NaN as a class).
    Every call is numbered in the adapter's history, so the report says where a change was
    first seen; each change's example is its first differing element (its inputs, both results,
    the correctly rounded one, how many of the call's elements differ) and the first says what
    every change has in common (requirements.differences)."""
    recorded = replayed(ctx, "repeats in a fresh worker, after the run and in reverse order")
    if recorded:
        return recorded
    t = Tally(ctx.fmt)
    first, again = ctx.made_of(HISTORY_FIRST), ctx.made_of(HISTORY_AGAIN)
    seen, layout = _observations(ctx)
    changes, compared = _changes(ctx, seen)
    t.checked += len(compared)
    _note_changes(ctx, t, changes, compared)
    calls = again.first + len(again.calls) - first.first
    where = ("the sample's first calls ran in a fresh worker" if first.fresh else
             f"{ctx.adapter.name} runs in the suite's own process: no fresh worker could be started, so the sample's "
             "first calls are the first of this run, not of a process")
    elsewhere = (f" and {len(layout)} calls (every one of up to {START_LAYOUT_MAX:,} elements) again with their arrays "
                 "elsewhere" if layout else "")
    extra = {"observed": f"{len(first.calls)} sampled calls repeated up to {calls} calls into the history{elsewhere}; "
                         f"{where}"}
    if changes:
        no, cid = changes[0][0], changes[0][1].case_id
        extra["observed"] = (f"bits changed with call history: {len(changes)} repeated calls differ; first seen at call "
                             f"#{no} (case {cid}); " + extra["observed"])
        extra["reproduction"] = (f"does not reproduce in isolation: the change was first seen at call #{no}, after "
                                 f"{no - 1} calls; rerunning with --only R14 and no case makes every call again in the "
                                 "same order, so the calls that came before are replayed")
        extra["rerun_cases"] = False
    return Check(t, extra=extra)


def _observations(ctx: RunContext) -> tuple:
    """([(judgement or None, case, [(call number, what it was, outcome)])] per call repeated, the
    sample's and the start layout's, numbered from the sample's first call; the start layout's
    (judgement, outcome) pairs)."""
    first, again = ctx.made_of(HISTORY_FIRST), ctx.made_of(HISTORY_AGAIN)
    sample, main, base = first.calls, {id(j.case): j for j in ctx.judged}, first.first - 1
    after_call = again.first - base
    n = len(sample)
    after, reverse = again.outcomes[:n], again.outcomes[n:][::-1]
    seen = []
    for i, c in enumerate(sample):
        obs = [(1 + i, "a fresh worker's call" if first.fresh else "a call before the run", first.outcomes[i])]
        if id(c) in main:
            obs.append((main[id(c)].call_no - base, "the run's call", main[id(c)].outcome))
        obs += [(after_call + i, "again after the run", after[i]), (after_call + 2 * n - 1 - i, "again in reverse order",
                                                                   reverse[i])]
        seen.append((main.get(id(c)), c, obs))
    layout = start_layout(ctx)
    start = ctx.made_of(START_LAYOUT).first - base
    for k, (j, o) in enumerate(layout):
        seen.append((j, j.case, [(j.call_no - base, "the run's call", j.outcome),
                                 (start + k, "again with its arrays elsewhere (each starting at a page boundary)", o)]))
    return seen, layout


def _changes(ctx: RunContext, seen: list) -> tuple:
    """([(call number, Differ, what each result's words are, judgement)] per repeat whose bits differ
    from the call's first result, in call order; (case, first, then) per repeat compared)."""
    changes, compared = [], []
    for j, c, obs in seen:
        obs = sorted((x for x in obs if x[2].status == "ok"), key=lambda x: x[0])
        if not obs:
            continue
        no0, what0, ref = obs[0]
        for no, what, o in obs[1:]:
            compared.append((c, ref.out, o.out))
            at = RULE.differing(ctx.fmt, ref.out, o.out, nan_payloads=False)  # (see RULE)
            if at.size:
                said = (f"call #{no0} ({what0}) gave", f"call #{no} ({what})")
                changes.append((no, Differ(c.id, c, ref.out, o.out, at), said, j))
    changes.sort(key=lambda x: x[0])
    return changes, compared


def _note_changes(ctx: RunContext, t: Tally, changes: list, compared: list) -> None:
    """Each change as a failing comparison of calls (a flush that comes and goes a call finding,
    RunContext.note_flush_varies), the first EXAMPLES as examples; the first says how many
    elements differ over the repeats and what every change has in common."""
    fmt = ctx.fmt
    causes = common_causes(fmt, [d for _, d, _, _ in changes], compared) if changes else []
    over = (f"{sum(d.at.size for _, d, _, _ in changes):,} elements differ in {len(changes):,} of the "
            f"{len(compared):,} repeats compared" + "".join(f"; cause: {c}" for c in causes))
    for i, (no, d, said, j) in enumerate(changes):
        k = int(d.at[0])
        expected = int(j.expected.oracle[k]) if j is not None and k < j.exact.size else None
        ex = difference_example(fmt, d, said, got_then=True, expected=expected)
        if k < d.case.elements_written:
            ctx.note_flush_varies(d.case, k, d.first[k], d.then[k], d.case_id, detail_of(ex))
        t.count((d.case_id,), detail_of(ex))
        if i < EXAMPLES:
            t.examples.append(ex if i else difference_example(fmt, d, said, over, got_then=True, expected=expected))


# the one definition: a call made again gives the same bits

def _repeat(cases: list, profile) -> list:
    """The first short call, again (after the others)."""
    return next(([Twin(i, c)] for i, c in enumerate(cases) if c.n <= SHORT_CALL), [])


RULE = CallRule("R14", "determinism", twins=_repeat, nan_payloads=True, certify_apart=(
    "certify repeats a sample of the run's calls (HISTORY_FIRST in a fresh worker, HISTORY_AGAIN after the run "
    "and in reverse, and every call in the start layout), numbers each in the adapter's history and compares "
    "NaN as a class, as every comparison of results in a report does; a campaign repeats its first short call "
    "once, after the batch's other calls, and compares every bit, a NaN's payload too (what its findings have "
    "always counted)"))
"""R14: a call made again gives the same bits."""


def _said(batch: Batch, i: int, differ: list) -> list:
    """A call made again at the end of the batch with other bits: the first element that differs,
    its inputs and both bit patterns (every bit compared, a NaN's payload too)."""
    def words(cmp) -> tuple:
        return ("a repeated call gave different bits", "the call gave",
                "again after the batch's other calls")

    return [RULE.seen_differing(batch, i, differ, words)]


REPEAT = campaign_probe("repeat", RULE, said=_said)
"""A batch's first short call made again at the end of the batch."""


ID = "R14"
ROWS = (
    Requirement(ID, "deterministic",
                "Repeating a call gives the same bits, whatever came before it: a sample of calls (subnormal, "
                "boundary, long and ordinary ones) run first in a fresh worker, again after the rest of the run and "
                "in reverse order, and every call again with its arrays at other addresses.", _deterministic,
                observes=True, plans=(HISTORY_FIRST, START_LAYOUT, HISTORY_AGAIN), probes=(REPEAT,), rule=RULE),
)

"""R14 deterministic: a sample of calls repeated first in a fresh worker, after the run, in
reverse order and with their arrays elsewhere, the same bits every time."""

from __future__ import annotations

import numpy as np

from sl1conf.reference import formats
from sl1conf.conformance.requirements.base import (
    Batch, Check, EXAMPLES, LONG_CALL, Plan, Probe, Requirement, RunContext, SHORT_CALL, START_LAYOUT, START_LAYOUT_MAX,
    Seen, Tally, replayed, start_layout,
)


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
    first seen."""
    recorded = replayed(ctx, "repeats in a fresh worker, after the run and in reverse order")
    if recorded:
        return recorded
    fmt, t = ctx.fmt, Tally(ctx.fmt)
    first, again = ctx.made_of(HISTORY_FIRST), ctx.made_of(HISTORY_AGAIN)
    sample, main, base = first.calls, {id(j.case): j for j in ctx.judged}, first.first - 1
    after_call = again.first - base
    n = len(sample)
    after, reverse = again.outcomes[:n], again.outcomes[n:][::-1]
    seen = []  # per call: [(call number, what it was, outcome)] in history order
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
    changes = []  # (call number of the change, case id, detail, judgement, element, bits)
    for j, c, obs in seen:
        obs = sorted((x for x in obs if x[2].status == "ok"), key=lambda x: x[0])
        if not obs:
            continue
        no0, what0, ref = obs[0]
        for no, what, o in obs[1:]:
            t.checked += 1
            differ = np.flatnonzero(~formats.same_result(fmt, o.out, ref.out))
            if differ.size:
                k = int(differ[0])
                detail = (f"{differ.size} elements differ; element {k}: call #{no0} ({what0}) gave "
                          f"{formats.hex_bits(fmt, ref.out[k])}, call #{no} ({what}) {formats.hex_bits(fmt, o.out[k])}")
                if k < c.elements_written:
                    ctx.note_flush_varies(c, k, ref.out[k], o.out[k], c.id, detail)
                changes.append((no, c.id, detail, j, k, o.out[k]))
    changes.sort(key=lambda x: x[0])
    for change in changes:
        t.count((change[1],))
    for no, cid, detail, j, k, bits in changes[:EXAMPLES]:
        if j is not None and k < j.case.elements_written:
            ex = t.element(j, k, got=bits)
            ex.pop("ulp_value")
            ex["detail"] = detail
            t.examples.append(ex)
        else:
            t.examples.append({"case": cid, "detail": detail})
    calls = again.first + len(again.calls) - 1 - base
    where = ("the sample's first calls ran in a fresh worker" if first.fresh else
             f"{ctx.adapter.name} runs in the suite's own process: no fresh worker could be started, so the sample's "
             "first calls are the first of this run, not of a process")
    elsewhere = (f" and {len(layout)} calls (every one of up to {START_LAYOUT_MAX:,} elements) again with their arrays "
                 "elsewhere" if layout else "")
    extra = {"observed": f"{len(sample)} sampled calls repeated up to {calls} calls into the history{elsewhere}; {where}"}
    if changes:
        no, cid = changes[0][:2]
        extra["observed"] = (f"bits changed with call history: {len(changes)} repeated calls differ; first seen at call "
                             f"#{no} (case {cid}); " + extra["observed"])
        extra["reproduction"] = (f"does not reproduce in isolation: the change was first seen at call #{no}, after "
                                 f"{no - 1} calls; rerunning with --only R14 and no case makes every call again in the "
                                 "same order, so the calls that came before are replayed")
        extra["rerun_cases"] = False
    return Check(t, extra=extra)


# the campaigns' form: a batch's first short call made again at the end of the batch

def _repeat(cases: list, profile) -> list:
    return next(([(i, c)] for i, c in enumerate(cases) if c.n <= SHORT_CALL), [])


def _repeat_differs(batch: Batch) -> list:
    return [Seen(ID, i, "determinism", "a repeated call gave different bits")
            for i, _ in batch.differing(nan_payloads=True)]


REPEAT = Probe("repeat", _repeat_differs, _repeat)


ID = "R14"
ROWS = (
    Requirement(ID, "deterministic",
                "Repeating a call gives the same bits, whatever came before it: a sample of calls (subnormal, "
                "boundary, long and ordinary ones) run first in a fresh worker, again after the rest of the run and "
                "in reverse order, and every call again with its arrays at other addresses.", _deterministic,
                observes=True, plans=(HISTORY_FIRST, START_LAYOUT, HISTORY_AGAIN), probes=(REPEAT,)),
)

"""Judging a run's calls in one pass: what judging reads of the vector set, gathered while the
calls are made (``Columns``), and every returned call's elements judged at once by the one judge
(``rules.judge.judge``), split back into a ``JudgedCall`` per call."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sl1conf.adapters.base import Adapter
from sl1conf.conformance.requirements.base import JudgedCall
from sl1conf.conformance.rules.judge import Expected, InputFacts, input_facts, judge
from sl1conf.conformance.rules.profiles import Profile
from sl1conf.conformance.vectors import store
from sl1conf.reference.models import accepted_models

__all__ = ["Columns", "columns_of", "judge_all", "judge_outcomes"]


@dataclass
class Columns:
    """What judging a run's calls reads from the vector set, and the judge's facts of their inputs:
    all known before the results are (the engine gathers them while a simulator works)."""

    key: list  # (case id, elements written) per call, in order
    bounds: np.ndarray  # where each call's elements start, and where the last ends
    expected: Expected
    inputs: list  # dy, x1, x2
    beta: np.ndarray  # one per element
    facts: InputFacts


def columns_of(vs: store.VectorSet, calls: list) -> Columns:
    """The columns of the written elements of ``calls`` ((row, vector case, call) each)."""
    fmt = vs.format
    ws = [call.elements_written for _, _, call in calls]
    bounds = np.concatenate([[0], np.cumsum(ws, dtype=np.int64)]).astype(np.int64)
    cat = lambda parts: np.concatenate(parts).astype(fmt.uint, copy=False) if parts else np.zeros(0, fmt.uint)  # noqa: E731
    spans = []  # where the calls' written elements lie in the set's arrays, adjacent ones as one
    for (row, *_), w in zip(calls, ws):
        if spans and spans[-1][1] == row["offset"]:
            spans[-1][1] += w
        else:
            spans.append([row["offset"], row["offset"] + w])
        if w < row["n"]:
            spans.append([row["offset"] + row["n"]] * 2)  # the unwritten rest breaks adjacency
    column = lambda name: cat([vs.arrays[name][a:b] for a, b in spans])  # noqa: E731
    oracle = column("expected-oracle")
    names = sorted({n for _, vc, _ in calls for n in vc.alternatives})
    alternatives = {n: cat([vc.alternatives[n][:w] if n in vc.alternatives else oracle[lo:lo + w]
                            for (_, vc, _), w, lo in zip(calls, ws, bounds)]) for n in names}
    expected = Expected(oracle, column("expected-oracle-ftz"),
                        {m.name: column(f"expected-model-{m.name}") for m in accepted_models(fmt)}, alternatives)
    inputs = [column(a) for a in ("dy", "x1", "x2")]
    beta = np.repeat(np.array([call.beta for _, _, call in calls], np.int64), ws).astype(fmt.uint)
    return Columns([(row["id"], w) for (row, *_), w in zip(calls, ws)], bounds, expected, inputs, beta,
                    input_facts(fmt, *inputs, beta))


def judge_all(vs: store.VectorSet, profile: Profile, items: list, columns: "Columns | None" = None) -> tuple:
    """One JudgedCall per (row, vector case, call, outcome, family) of ``items``, judged in one
    pass over all their written elements (every rule is a function of the element and its
    call's beta, so judging the calls together gives each the bits it would get alone): (the
    judgements, the judgement of all their elements, where each one's elements start in it
    and where the last ends). ``columns``: those gathered beforehand for the run's calls (used
    where every call returned, else gathered again for those that did)."""
    fmt = vs.format
    key = [(row["id"], call.elements_written) for row, _, call, _, _ in items]
    if columns is None or columns.key != key:
        columns = columns_of(vs, [item[:3] for item in items])
    ws = [w for _, w in key]
    bounds, expected, inputs, beta = columns.bounds, columns.expected, columns.inputs, columns.beta
    got = (np.concatenate([o.out[:w] for (_, _, _, o, _), w in zip(items, ws)]).astype(fmt.uint, copy=False)
           if items else np.zeros(0, fmt.uint))
    whole = judge(fmt, profile, got, expected, *inputs, beta, facts=columns.facts)
    out = []
    for k, (row, vc, call, o, family) in enumerate(items):
        j = whole.part(int(bounds[k]), int(bounds[k + 1]))
        j.alt = {n: m for n, m in j.alt.items() if n in vc.alternatives}  # the case's own alternatives
        j.expected.alternatives = {n: a for n, a in j.expected.alternatives.items() if n in vc.alternatives}
        out.append(JudgedCall.of(j, case=call, row=row, outcome=o, family=family,
                                 fill_ok=bool((o.out[ws[k]:] == call.initial_out()[ws[k]:]).all())))
    return out, whole, bounds


def judge_outcomes(adapter: Adapter, profile: Profile, vs: store.VectorSet, calls: list, outcomes: list, first: int,
                    unsupported: "list | None" = None, columns: "Columns | None" = None) -> tuple:
    """Judge the outcomes of ``calls``: (judgements of the calls that returned, (row, call,
    outcome) of those that did not, (row, call, outcome, family) of those refused). Each
    judgement's ``call_no`` is the call's number in the adapter's history (``first``: the
    adapter's ``calls_made`` before the calls; it counts every call since the last restart).
    ``unsupported``, if given, collects the outcomes of calls the adapter offers that the
    implementation answered unsupported (a harness built without it)."""
    fam_name = {f["id"]: f["name"] for f in vs.manifest["families"]}
    returned, broken, rejected, numbers, no = [], [], [], [], first
    for (row, vc, case), o in zip(calls, outcomes):
        if o.status == "unsupported":
            if unsupported is not None and adapter.supports(case):
                unsupported.append(o)
            continue
        no += 1
        if o.status == "ok":
            returned.append((row, vc, case, o, fam_name[row["family"]]))
            numbers.append(no)
        elif o.status == "rejected":
            rejected.append((row, case, o, fam_name[row["family"]]))
        else:
            broken.append((row, case, o))
    judged, whole, bounds = judge_all(vs, profile, returned, columns)
    for j, no in zip(judged, numbers):
        j.call_no = no
    return judged, broken, rejected, (whole, bounds)

"""The calls requirements plan, and how certify makes them (conformance/certify/calls.py).

A requirement declares the calls it needs beyond the run's own (``requirements.base.Plan``);
certify merges the plans of a stage into one adapter run, numbers the calls as the adapter's
history does, and, where the adapter's runs are independent (a simulator), makes every run's
calls in one worker thread while it judges. What must hold: the worker runs one function at
a time in the order asked (urgent ones first); a stage is one adapter run; a toy requirement
declared in one place is checked and reported; and the queued certification gives the report
the sequential one gives.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest

from sl1conf.adapters import load as load_adapter
from sl1conf.adapters.base import ArrayFunction
from sl1conf.adapters.simulator import SimulatorAdapter, host_template
from sl1conf.conformance.certify import calls as calls_module
from sl1conf.conformance.certify import engine
from sl1conf.conformance.certify.calls import CallQueue, make_stage, plans_at
from sl1conf.conformance.requirements import CATALOG
from sl1conf.conformance.requirements.base import Check, Plan, Probe, Requirement, RunContext, Seen, Tally
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import fast_oracle, formats


# --- the queue ------------------------------------------------------------------------------------

def test_the_worker_runs_one_function_at_a_time_urgent_ones_first():
    queue = CallQueue(background=True)
    order, gate, started = [], threading.Event(), threading.Event()
    try:
        first = queue.submit(lambda: (started.set(), gate.wait(10), order.append("first")))
        assert started.wait(10)  # the worker is busy with it: what comes next waits in the queue
        later = [queue.submit(lambda k=k: order.append(k)) for k in ("a", "b")]
        urgent = queue.submit(lambda: order.append("urgent"), urgent=True)
        gate.set()
        for f in (first, *later, urgent):
            f.result(timeout=10)
    finally:
        queue.close()
    assert order == ["first", "urgent", "a", "b"]


def test_an_error_in_the_worker_is_raised_in_the_caller_and_close_cancels_what_did_not_start():
    queue = CallQueue(background=True)
    gate = threading.Event()
    failing = queue.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result(timeout=10)
    blocker = queue.submit(lambda: gate.wait(10))
    pending = queue.submit(lambda: "never")
    gate.set()
    blocker.result(timeout=10)
    queue.close()
    assert pending.cancelled() or pending.result() == "never"  # it may have started before close()
    assert not queue._thread.is_alive()


def test_without_a_worker_a_function_runs_at_once_in_the_callers_thread():
    queue = CallQueue(background=False)
    where = queue.submit(lambda: threading.current_thread()).result()
    assert where is threading.current_thread()


# --- a stage is one adapter run, its calls numbered as the adapter counts them ---------------------

class _Counting(ArrayFunction):
    """The correctly rounded result, counting the adapter runs made and restarts asked."""

    def __init__(self):
        super().__init__("counting", fast_oracle.smoothl1lossgrad, ("fp16", "fp32"))
        self.runs, self.restarts = [], 0

    def run(self, cases):
        self.runs.append(len(cases))
        return super().run(cases)

    def restart(self):
        self.restarts += 1
        self.calls_made = 0
        return True


def _case(fmt, n, seed):
    rng = np.random.default_rng(seed)
    from sl1conf.adapters.base import Case
    return Case(fmt.name, *(rng.integers(0, 0x3C00, n).astype(fmt.uint) for _ in range(3)), 0x3C00, variant="p")


def test_the_plans_of_a_stage_go_to_the_adapter_as_one_run_and_are_numbered_in_order(monkeypatch):
    fmt = formats.FP16
    one = Plan("toy-one", "after", lambda ctx: ctx.returned[:2])
    two = Plan("toy-two", "after", lambda ctx: [replace(c, id="again") for c in ctx.returned[1:]])
    fresh = Plan("toy-fresh", "before", lambda ctx: ctx.returned, fresh=True)
    rows = (Requirement("R98", "toy a", "toy", lambda ctx, req: Check(), plans=(one, fresh)),
            Requirement("R99", "toy b", "toy", lambda ctx, req: Check(), plans=(two, one)))
    monkeypatch.setattr(calls_module, "CATALOG", rows)
    assert [p.name for p in plans_at("after")] == ["toy-one", "toy-two"] and plans_at("judged") == []
    adapter = _Counting()
    adapter.run([_case(fmt, 4, 0)] * 5)  # five calls before: the history goes on from them
    ctx = RunContext(fmt, load_profile("ieee"), "p", adapter, [], [], [])
    ctx.returned = [_case(fmt, 3, k) for k in range(3)]
    make_stage(ctx, "after")
    assert adapter.runs == [5, 4] and adapter.restarts == 0  # one run for both plans (2 + 2 calls)
    assert ctx.made["toy-one"].first == 6 and ctx.made["toy-two"].first == 8
    assert [len(ctx.made[n].outcomes) for n in ("toy-one", "toy-two")] == [2, 2]
    assert all(o.status == "ok" for o in ctx.made["toy-two"].outcomes)
    make_stage(ctx, "before")
    assert adapter.restarts == 1 and ctx.made["toy-fresh"].fresh and ctx.made["toy-fresh"].first == 1


# --- a toy requirement, declared once, checked by certify ----------------------------------------

def _toy_check(ctx, req):
    """Repeats made by the plan give the bits of the run's own calls."""
    t = Tally(ctx.fmt)
    made = ctx.made_of(TOY_PLAN)
    by_id = {j.case.id: j for j in ctx.judged}
    for case, o in zip(made.calls, made.outcomes):
        t.checked += 1
        if o.status != "ok" or not formats.same_result(ctx.fmt, o.out, by_id[case.id].outcome.out).all():
            t.note(case.id, "the repeat differs")
    return Check(t)


TOY_PLAN = Plan("toy-repeat", "judged", lambda ctx: [j.case for j in ctx.judged[:3]])
TOY = Requirement("R99", "toy-repeat", "The first three calls again give the same bits.", _toy_check,
                  plans=(TOY_PLAN,))


class _Drifting(ArrayFunction):
    """The correctly rounded result, one ULP off in the first element once ``drifting`` is set
    (a defect that comes with the call history)."""

    def __init__(self):
        self.drifting = False

        def fn(*a):
            out = np.asarray(fast_oracle.smoothl1lossgrad(*a))
            if self.drifting and out.size:
                bits = out.view(np.uint16 if out.dtype == np.float16 else np.uint32).copy()
                bits[0] ^= 1
                return bits.view(out.dtype)
            return out
        super().__init__("drifting", fn, ("fp16",))


@pytest.mark.parametrize("drift", [False, True])
def test_a_toy_requirement_declared_in_one_place_is_checked_and_reported(monkeypatch, drift):
    monkeypatch.setattr(calls_module, "CATALOG", (*CATALOG, TOY))
    monkeypatch.setattr(engine, "CATALOG", (*CATALOG, TOY))
    adapter = _Drifting()
    made = []

    def staged(ctx, stage):  # the defect starts with the calls made once the run is judged: the toy's
        made.append(stage)
        adapter.drifting = drift and stage == "judged"
        return make_stage(ctx, stage)
    monkeypatch.setattr(engine, "make_stage", staged)
    report = engine.certify(adapter, load_profile("ieee"), dtypes=["fp16"], variants=["p"], quick=True).to_json()
    entry = next(q for q in report["runs"][0]["requirements"] if q["id"] == "R99")
    assert made == ["before", "after", "judged"]
    assert entry["checked"] == 3 and entry["status"] == ("fail" if drift else "pass")
    assert entry["failed"] == (3 if drift else 0)


# --- queued and sequential certification agree ------------------------------------------------------

class _Sequential(SimulatorAdapter):
    capabilities = replace(SimulatorAdapter.capabilities, independent_runs=False)


def _comparable(report):
    return {k: v for k, v in report.items() if k not in ("created", "duration_s")}


def test_a_simulator_queued_in_a_worker_gives_the_report_made_call_by_call(tmp_path):
    template = host_template(out_dir=tmp_path)
    profile = load_profile("mt7004")
    queued, sequential = SimulatorAdapter(template), _Sequential(template)
    assert queued.capabilities.independent_runs and not sequential.capabilities.independent_runs
    threads = set()
    run = queued.run

    def watching(cases):
        threads.add(threading.current_thread().name)
        return run(cases)
    queued.run = watching
    a = engine.certify(queued, profile, quick=True).to_json()
    b = engine.certify(sequential, profile, quick=True).to_json()
    assert threads == {"sl1conf-calls"}  # every call made by the worker
    assert _comparable(a) == _comparable(b)
    assert {r["verdict"] for r in a["runs"]} == {"pass"}


# --- a toy element requirement, declared once, reported by certify, fuzz and sweep ----------------

def _toy_element_rule():
    """R97, a rule stricter than any profile: no result exactly 1 ULP from the correctly rounded
    one (an inexact result: fuzz and sweep judge only those, as every rule accepts an exact one)."""
    from sl1conf.conformance.rules.judge import ElementRule

    return ElementRule("R97", lambda j: np.ones(j.got.shape, bool), lambda j: j.dist != 1)


@pytest.fixture
def toy_element_requirement(monkeypatch):
    """The toy rule first in the judge's rules (most specific first: findings are filed under it)
    and its row in the catalog: the only two places a requirement about elements is declared."""
    from sl1conf.conformance import requirements
    from sl1conf.conformance.rules import judge as judge_module

    rule = _toy_element_rule()
    row = Requirement("R97", "toy-one-ulp", "No result is exactly 1 ULP from the correctly rounded one.",
                      element=rule)
    monkeypatch.setattr(judge_module, "ELEMENT_RULES", (rule, *judge_module.ELEMENT_RULES))
    monkeypatch.setattr(engine, "CATALOG", (*CATALOG, row))
    monkeypatch.setitem(requirements.CATALOG_BY_ID, "R97", row)
    return row


IMPL = "builtin:model:muldiv-fp16"  # fp16 arithmetic step by step: often 1 ULP from the exact result


def test_certify_reports_a_toy_element_requirement(toy_element_requirement):
    report = engine.certify(load_adapter(IMPL), load_profile("ieee"), dtypes=["fp16"], variants=["p"], quick=True).to_json()
    entry = next(q for q in report["runs"][0]["requirements"] if q["id"] == "R97")
    assert entry["status"] == "fail" and entry["failed"] > 0 and entry["worst"]["ulp"] == 1


def test_fuzz_files_findings_under_a_toy_element_requirement(toy_element_requirement):
    from sl1conf.conformance.search import fuzz

    profile = load_profile("ieee")
    campaign = fuzz.Campaign(IMPL, "ieee", ("fp16",), ("p",), seed=7, batch_elements=1 << 12, batches=1)
    findings = fuzz.check_cases(load_adapter(IMPL), profile, fuzz.make_batch(campaign, profile, 0), late=False)
    toy = [f for f in findings if f.key[0] == "R97"]
    assert toy and all("R97" in f.breaks for f in toy)


def test_sweep_counts_a_toy_element_requirement(toy_element_requirement):
    from sl1conf.conformance.search import sweep

    beta = 0x3E00  # 1.5: the division rounds again, after the product (dy 0.8)
    config = sweep.SweepConfig(IMPL, beta=beta, dy=0x3A66, subset="around-beta", block=1 << 14, platform="ieee")
    tally = sweep._Block(config, load_adapter(IMPL)).run(0)
    verdict = sweep.verdict(tally, load_profile("ieee"), beta)
    assert verdict["requirements"]["R97"]["elements"] > 0 and not verdict["pass"]
    assert verdict["requirements"]["R97"]["title"] == "toy-one-ulp"


# --- a toy run-level requirement, declared once (its plan and its probe), reported by all three --

def _alone(case):
    return replace(case, dy=case.dy[:1], x1=case.x1[:1], x2=case.x2[:1], length=None, out_alias=None,
                   id=f"{case.id} first alone")


TOY_ALONE_PLAN = Plan("toy-first-alone", "judged", lambda ctx: [_alone(j.case) for j in ctx.judged if j.case.elements_written > 1])


def _toy_alone_check(ctx, req):
    """certify's form: each call's first element alone gives the bits it gave in the call."""
    t = Tally(ctx.fmt)
    made = ctx.made_of(TOY_ALONE_PLAN)
    for j, o in zip([j for j in ctx.judged if j.case.elements_written > 1], made.outcomes):
        t.checked += 1
        if o.status != "ok" or not formats.same_result(ctx.fmt, o.out[:1], j.outcome.out[:1])[0]:
            t.note(j.row["id"], "the first element alone gives other bits")
    return Check(t)


def _toy_alone_calls(cases, profile):
    return [(i, _alone(c)) for i, c in enumerate(cases) if c.elements_written > 1]


def _toy_alone_seen(batch):
    """The campaigns' form of the same check."""
    out = []
    for (i, call), o in zip(batch.calls, batch.answers):
        a = batch.outcomes[i]
        if a.status == o.status == "ok" and not formats.same_result(call.format, a.out[:1], o.out[:1])[0]:
            out.append(Seen("R96", i, "first-alone", "the first element alone gives other bits", element=0,
                            changed=((0, o.out[0]),)))
    return out


TOY_ALONE = Requirement("R96", "toy-first-alone", "Each call's first element alone gives the same bits.",
                        _toy_alone_check, plans=(TOY_ALONE_PLAN,),
                        probes=(Probe("toy-first-alone", _toy_alone_seen, _toy_alone_calls),))


class _AloneWrong(ArrayFunction):
    """The correctly rounded result, but one ULP off in calls of one element (``wrong``)."""

    def __init__(self, wrong=True):
        def fn(*a):
            out = np.asarray(fast_oracle.smoothl1lossgrad(*a))
            if wrong and out.size == 1:
                bits = out.view(np.uint16 if out.dtype == np.float16 else np.uint32).copy()
                bits[0] ^= 1
                return bits.view(out.dtype)
            return out
        super().__init__("alone-wrong" if wrong else "alone-right", fn, ("fp16",))


@pytest.fixture
def toy_run_requirement(monkeypatch):
    """The toy's row in the catalog, as the drivers read it (the package's lists of rows,
    probes and ids: what adding a module's ROWS to CATALOG gives)."""
    from sl1conf.conformance import requirements

    monkeypatch.setattr(calls_module, "CATALOG", (*CATALOG, TOY_ALONE))
    monkeypatch.setattr(engine, "CATALOG", (*CATALOG, TOY_ALONE))
    monkeypatch.setattr(requirements, "PROBES", (*requirements.PROBES, *TOY_ALONE.probes))
    monkeypatch.setitem(requirements.CATALOG_BY_ID, "R96", TOY_ALONE)


@pytest.mark.parametrize("wrong", [False, True])
def test_certify_fuzz_and_sweep_report_a_toy_run_level_requirement(toy_run_requirement, wrong):
    from sl1conf.conformance.search import fuzz, sweep

    profile = load_profile("ieee")
    report = engine.certify(_AloneWrong(wrong), profile, dtypes=["fp16"], variants=["p"], quick=True).to_json()
    entry = next(q for q in report["runs"][0]["requirements"] if q["id"] == "R96")
    assert entry["checked"] > 0 and entry["status"] == ("fail" if wrong else "pass") and bool(entry["failed"]) == wrong

    campaign = fuzz.Campaign("toy", "ieee", ("fp16",), ("p",), seed=3, batch_elements=1 << 12, batches=1)
    findings = fuzz.check_cases(_AloneWrong(wrong), profile, fuzz.make_batch(campaign, profile, 0), late=False)
    toy = [f for f in findings if f.requirement == "R96"]
    assert bool(toy) == wrong and all(f.kind == "first-alone" and f.element == 0 for f in toy)

    beta = 0x3E00
    config = sweep.SweepConfig("toy", beta=beta, dy=0x3A66, subset="around-beta", block=1 << 14, platform="ieee")
    verdict = sweep.verdict(sweep._Block(config, _AloneWrong(wrong)).run(0), profile, beta)
    assert ("R96" in verdict["requirements"]) == wrong and verdict["pass"] != wrong
    if wrong:
        assert verdict["requirements"]["R96"]["elements"] == 1 and verdict["requirements"]["R96"]["title"] == "toy-first-alone"

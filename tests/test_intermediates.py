"""Facts of the arithmetic as causes (issue 39, item 2; rules.intermediates, reports.causes).

An autodiff-style library (JAX's gradient of the smooth L1 loss) computed by hand in numpy float16,
step by step: the middle line as ``(dy / beta) * diff``, the unused branch's gradient added (times
zero: NaN where diff is infinite), and ``+ 0`` added to the result. Three elements, each derived
here independently of the code under test:

- dy = 60000, x1 = 0.25, x2 = 0, beta = 0.5: ``dy / beta`` = 120000 overflows half to inf, times
  0.25 is inf; the exact result is 30000;
- dy = 1, x1 = inf, x2 = 0, beta = 1: the result is dy (diff > beta), but ``0 * (inf / 1)`` of the
  dropped branch is NaN, and so is the sum;
- dy = -1, x1 = x2 = 0, beta = 1: the middle line gives ``(-1 / 1) * 0`` = -0, plus +0 is +0.
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.reports.causes import Cause, causes
from sl1conf.conformance.requirements.results import RequirementResult, RunResult
from sl1conf.conformance.rules import intermediates
from sl1conf.conformance.rules.judge import expected_for, judge
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import formats as F

H = np.float16


def _jax_like(dy, x1, x2, beta):
    with np.errstate(all="ignore"):
        d = (x1 - x2).astype(H)
        mid = ((dy / beta).astype(H) * d).astype(H)
        inside = np.abs(d) < beta
        outer = np.where(d > 0, dy, -dy).astype(H)
        dropped = (H(0) * (d / beta).astype(H)).astype(H)  # the unused branch's gradient, times zero
        res = np.where(inside, mid + H(0) * H(0), (outer + dropped).astype(H)).astype(H)
        return (res + H(0)).astype(H)


def test_the_three_facts_are_found_each_on_its_element():
    fmt, profile = F.FP16, load_profile("ieee")
    dy, x1, x2 = (np.array(v, H) for v in ([60000, 1, -1], [0.25, np.inf, 0], [0, 0, 0]))
    beta = H(0.5)
    got = np.array([_jax_like(dy[k:k + 1], x1[k:k + 1], x2[k:k + 1], beta if k == 0 else H(1))[0]
                    for k in range(3)], H)
    assert np.isinf(got[0]) and np.isnan(got[1]) and got[2] == 0 and not np.signbit(got[2])
    b = lambda a: a.view(np.uint16)  # noqa: E731
    facts = {}
    for k, bb in ((0, 0x3800), (1, 0x3C00), (2, 0x3C00)):  # beta 0.5, 1, 1
        sl = slice(k, k + 1)
        e = expected_for(fmt, b(dy[sl]), b(x1[sl]), b(x2[sl]), bb)
        j = judge(fmt, profile, b(got[sl]), e, b(dy[sl]), b(x1[sl]), b(x2[sl]), bb)
        assert not j.ok[0] or k == 2 and j.rejected["R05"][0]
        rejected = np.logical_or.reduce(list(j.rejected.values()))
        held = [(key, text) for key, text, m in intermediates.facts(fmt, j, rejected) if m[0]]
        assert len(held) == 1, held  # disjoint: one fact per element
        facts[k] = held[0]
    assert facts[0][0] == "fact:dy/beta:overflows:fp16"
    assert facts[0][1].startswith("dy / beta overflows half")
    assert facts[1][0] == intermediates.DROPPED and "0 * inf in a dropped branch" in facts[1][1]
    assert facts[2][0] == intermediates.ZERO_SIGN and "+0 is added to the result" in facts[2][1]


def _req(rid, failed, patterns, bulk=None):
    d = [{"pattern": p, "key": k, "failed": f, "of": failed, "checked_share": 0.001, "example": {}}
         for p, k, f in patterns]
    fields = {"checked": 1000, "failed": failed, "diagnosis": d, "examples": []}
    if bulk:
        fields["bulk"] = {"kind": bulk, "failed": failed, "of": failed,
                          "example": {"case": "1.0", "element": 0, "dy": "0x3c00", "x1": "0x3c00", "x2": "0x0000",
                                      "beta": "0x3c00", "expected": "0x3c00", "got": "0x3c01", "ulp": 1}}
    return RequirementResult.from_json({"id": rid, "title": f"t-{rid}", "kind": "required", "statement": "",
                                        "status": "fail", **fields})


def test_a_requirements_failures_split_among_facts_and_the_rest_is_unexplained():
    over = ("dy / beta overflows half: infinity where its exact value is finite", "fact:dy/beta:overflows:fp16")
    drop = ("the unused branch's gradient is added: 0 * inf in a dropped branch", intermediates.DROPPED)
    run = RunResult("fp16", "p", 1, 1, [
        _req("R01", 10, [(*over, 6), (*drop, 3)], bulk="1 ULP from the correctly rounded result"),
        _req("R03", 9, [(*over, 6), (*drop, 3)]),
        _req("R05", 4, [("+0 is added to the result, so a zero loses its sign", intermediates.ZERO_SIGN, 4)]),
    ])
    got = causes(run)
    assert got == [Cause(over[0], ["R01", "R03"], 12), Cause(drop[0], ["R01", "R03"], 6),
                   Cause("+0 is added to the result, so a zero loses its sign", ["R05"], 4),
                   Cause("unexplained (most: 1 ULP from the correctly rounded result)", ["R01"], 1)]
    assert not any(c.cause.startswith(("R01", "R03", "R05")) for c in got)  # never a requirement's name


def test_a_failure_in_several_causes_shows_every_one_of_them():
    """A requirement whose failures split among two facts, each shared with another requirement, is
    in both causes; its failure block (Markdown, JUnit) says both, not the last one only."""
    import dataclasses
    import json
    from pathlib import Path

    from sl1conf.conformance.reports.junit import render_junit
    from sl1conf.conformance.reports.markdown import render_markdown
    from sl1conf.conformance.reports.view import view
    from sl1conf.conformance.requirements.results import Report

    over = ("dy / beta overflows half: infinity where its exact value is finite", "fact:dy/beta:overflows:fp16")
    drop = ("the unused branch's gradient is added: 0 * inf in a dropped branch", intermediates.DROPPED)
    run = RunResult("fp16", "p", 1, 1, [_req("R01", 10, [(*over, 6), (*drop, 4)]), _req("R03", 9, [(*over, 6), (*drop, 3)])])
    envelope = Report.from_json(json.loads((Path(__file__).parents[1] / "reports/kernel-ieee/report.json").read_text()))
    v = view(dataclasses.replace(envelope, runs=[run]))
    lines = [f"{over[0]}: R01, R03 (12 failures)", f"{drop[0]}: R01, R03 (7 failures)"]
    assert [(f.id, f.causes) for f in v.failures] == [("R01", lines), ("R03", lines)]
    md = render_markdown(v)
    assert all(md.count(f"Cause (shared): {line}") == 2 for line in lines)
    import xml.etree.ElementTree as ET
    messages = [e.get("message") for e in ET.fromstring(render_junit(v)).iter("failure")]
    assert messages and all(f"cause: {lines[0]}; cause: {lines[1]}; " in m for m in messages), messages


def test_an_ftz_daz_float_kernels_failures_are_named_by_the_flush_fact():
    """A float kernel in DAZ/FTZ mode (XLA's on the CPU), four elements derived by hand, beta's bits given:

    - dy = 1, x1 = 2^-130 (subnormal), x2 = 0, beta = 1: DAZ reads x1 as 0, so diff = 0 and the middle
      line gives (1 / 1) * 0 = +0; the exact result is 2^-130. Flushing gives it in the manual's order
      (the default error model's: reachable.FLUSHING).
    - dy = 1, x1 = 1, x2 = 0, beta = 2^-149 (subnormal): DAZ reads beta as 0; jax.vjp's graph takes the outer
      line (|1| < 0 is false) and adds the middle line's gradient with dy = 0: q = 0 / 0 = NaN, so NaN;
      the exact result is dy = 1. Unflushed, q = 0 / 2^-149 = 0 and the result 1: only flushing gives NaN
      (the dropped branch's diff / beta = 2^149 is infinite in float too: the flush comes first).
    - dy = -2^-100, x1 = 2^-30, x2 = 0, beta = 1: the exact result -2^-130 is subnormal; flushed, -0.
    - dy = 3e38, x1 = 0.25, x2 = 0, beta = 0.5 (no subnormal anywhere): dy / beta = 6e38 overflows float to
      inf, times 0.25 is inf (exact 1.5e38): not a flush, the overflow fact.
    """
    fmt, profile = F.FP32, load_profile("ieee")
    f32 = lambda v: np.array([v], np.float32).view(np.uint32)  # noqa: E731
    sub = int(f32(2.0 ** -149)[0])
    elements = [(1.0, 2.0 ** -130, 0.0, int(f32(1.0)[0]), 0.0),
                (1.0, 1.0, 0.0, sub, float("nan")),
                (-2.0 ** -100, 2.0 ** -30, 0.0, int(f32(1.0)[0]), -0.0),
                (3e38, 0.25, 0.0, int(f32(0.5)[0]), float("inf"))]
    named = []
    for dy, x1, x2, bb, got in elements:
        e = expected_for(fmt, f32(dy), f32(x1), f32(x2), bb)
        j = judge(fmt, profile, f32(got), e, f32(dy), f32(x1), f32(x2), bb)
        rejected = np.logical_or.reduce(list(j.rejected.values()))
        assert rejected[0], (dy, x1, x2, bb)
        held = [key for key, text, m in intermediates.facts(fmt, j, rejected) if m[0]]
        assert len(held) == 1, held
        named.append(held[0])
    assert named == [intermediates.FLUSHED] * 3 + ["fact:dy/beta:overflows:fp32"]
    assert intermediates.FLUSHED_TEXT.startswith("a subnormal input, intermediate or result is flushed to zero")
    assert intermediates.FLUSHED in intermediates.fact_keys()

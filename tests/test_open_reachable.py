"""Open inputs accept what an allowed order gives (issue 39, item 3).

Where the manual leaves the input open (beta <= 0, a NaN beta, beta = +inf with an infinite diff)
the acceptable set is the reachable set together with the stated bounds, never less than either,
and the report says which (rules.judge: ``..., on an open input (beta < 0)`` under ``reachable``,
``beta < 0: other (within bounds)`` under ``open_bounds``).

The library here is the clamp written in half: ``clamp(diff, -beta, beta) / beta * dy``, every
step a numpy float16 operation (the clamp as ``min(max(diff, -beta), beta)``, numpy's clip). For a
positive beta it gives clamp-divmul-fp16's bits, an order mt7004 allows in half. At beta = -inf the
clamp gives ``min(max(diff, +inf), -inf) = -inf`` and ``-inf / -inf`` is NaN where the manual's first
line gives dy: outside the stated bounds (NaN only where dy or diff is infinite), but what that order,
as written, gives there. The expected bits are derived here step by step in numpy float16, not by the
code under test.
"""

from __future__ import annotations

import numpy as np

from sl1conf.adapters.base import ArrayFunction
from sl1conf.conformance.certify.engine import certify
from sl1conf.conformance.rules.judge import Reason, expected_for, judge
from sl1conf.conformance.rules.openbehaviour import within_bounds, open_question
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import formats as F

H = np.float16
MINUS_INF = 0xFC00


def clamp_in_half(dy, x1, x2, beta):
    """clamp(diff, -beta, beta) / beta * dy in the data type, step by step."""
    with np.errstate(all="ignore"):
        t = dy.dtype.type
        d = (x1 - x2).astype(t)
        c = np.minimum(np.maximum(d, -t(beta)), t(beta)).astype(t)
        return ((c / t(beta)).astype(t) * dy).astype(t)


def test_nan_at_minus_infinity_is_reachable_by_the_clamp_written_in_half():
    fmt = F.FP16
    profile = load_profile("mt7004")
    dy, x1, x2 = (np.array(v, H) for v in ([1.0, -3.0, 0.5], [0.5, 0.0, -2.0], [0.0, 0.25, 1.0]))
    # by hand in float16: diff = 0.5, -0.25, -3; min(max(diff, +inf), -inf) = -inf; -inf / -inf = NaN
    d = x1 - x2
    c = np.minimum(np.maximum(d, H(np.inf)), H(-np.inf))
    assert (c == H(-np.inf)).all()
    with np.errstate(invalid="ignore"):
        q = c / H(-np.inf)
    assert np.isnan(q).all()
    got = np.full(3, 0x7E00, np.uint16)  # a quiet NaN
    bits = lambda a: a.view(np.uint16)  # noqa: E731
    e = expected_for(fmt, bits(dy), bits(x1), bits(x2), MINUS_INF)
    assert (e.oracle == bits(dy)).all()  # diff > -inf: the first line, dy
    # outside the stated bounds: NaN only where dy or the diff is infinite
    assert not within_bounds(fmt, got, bits(dy), bits(x1), bits(x2), open_question(fmt, bits(x1), bits(x2), MINUS_INF),
                             e.oracle, 2).any()
    j = judge(fmt, profile, got, e, bits(dy), bits(x1), bits(x2), MINUS_INF)
    assert j.ok.all() and (j.reason == Reason.REACHABLE).all()
    said = j.accepted_as()
    assert all(s == "clamp-divmul-fp16, as min(max(diff, -beta), beta) / beta * dy, on an open input (beta < 0)"
               for s in said), said
    # an answer no order gives there and the bounds refuse (2 * dy) stays rejected
    twice = bits(np.array([2.0, -6.0, 1.0], H))
    assert not judge(fmt, profile, twice, e, bits(dy), bits(x1), bits(x2), MINUS_INF).ok.any()


def test_the_clamp_in_half_library_passes_mt7004_and_the_report_says_reachable_on_an_open_input():
    impl = ArrayFunction("clamp-in-half", clamp_in_half, ("fp16",), variants=("p",))
    report = certify(impl, load_profile("mt7004"), dtypes=["fp16"], variants=["p"], quick=True).to_json()
    [run] = report["runs"]
    failing = [(r["id"], r.get("failed")) for r in run["requirements"] if r["status"] == "fail"]
    assert not failing, failing
    # the NaNs at beta = -inf (and 0/0 at beta = 0): no distance, each accepted beyond the budget, and
    # counted under the reason "reachable", not "open_bounds" (they are outside the bounds)
    nad = run["errors"]["not_a_distance"]["NaN where the result is a number"]
    assert nad["elements"] == nad["accepted"] > 0, nad
    distance_reachable = sum(run["errors"]["beyond_budget"]["by"].get("reachable", {}).values())
    assert run["errors"]["reasons"]["reachable"] > distance_reachable + 100, run["errors"]["reasons"]
    r01 = next(r for r in run["requirements"] if r["id"] == "R01")
    assert r01["beyond_budget_not_a_distance"]["NaN where the result is a number"] == nad["accepted"]
    # R16 says which: the NaNs (no distance, so no beyond-budget row names them) under what reached them
    answers = next(r for r in run["requirements"] if r["id"] == "R16")["observed"]["beta < 0"]["answers"]
    said = "reachable: clamp-divmul-fp16, as min(max(diff, -beta), beta) / beta * dy, on an open input (beta < 0)"
    assert answers.get(said, 0) > 0 and "other" not in answers, answers

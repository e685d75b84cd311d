"""R14 (determinism), R15 (in place) and R18 (position) failures show an element and its cause, as
R09's do (tests/test_r09_evidence.py); a failure on an open input says so (issue 37, items 4 and 5).

Each implementation here is the correctly rounded result (reference.fast_oracle) with one defect
put in, built in Python (adapters.base.ArrayFunction), certified ``--quick`` on ieee, fp32 p:

- a memo of whole calls that hands back, for a call it has seen before whose beta is subnormal,
  its nonzero finite results one ULP up: R14's repeats differ, and the cause names the beta's class;
- dx1 used as scratch for the differences and then read as dy, where dx1 is dy: R15, with dx1
  over dy named as the cause;
- for a negative (normal) beta the formula with |beta| (an answer within the stated bounds), its
  middle line diff / |beta| * dy in the vector body and diff * dy / |beta| in the last n mod 8
  elements (a vector body and a scalar tail that disagree only for beta < 0): R18 alone, now that
  its sample draws a beta of every class, and its cause is the open input;
- 2 * dy at beta = -inf (an answer no order the profile allows gives there and outside the stated
  bounds; the clamp's NaN there, which this test first used, is reachable since issue 39, item 3):
  R01's failures are all there, and their diagnosis names beta = -inf as an open input outside the
  stated bounds, with no position in the call (the calls at beta = -inf are short: every element
  is in some tail).

Every example must name a case and an element whose inputs are the vector set's, both results,
the correctly rounded result and how many elements differ. The bits are derived here,
independently of the code under test: each defect's results in numpy float32 scalar arithmetic
(or as the correctly rounded bits plus one), the correctly rounded ones by exact fractions
(tests/exact_fractions.py). The oracle itself, and the |beta| formula in one order everywhere,
pass every requirement, R18 included.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from sl1conf.adapters.base import ArrayFunction
from sl1conf.conformance.certify.engine import certify, vectors_for
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import fast_oracle

from exact_fractions import smoothl1lossgrad_bits

F32 = np.float32
BITS = r"(0x[0-9a-f]{8})"
TINY = F32(1.17549435e-38)


def _certify(fn) -> tuple:
    adapter = fn if isinstance(fn, ArrayFunction) else ArrayFunction("made", fn, ("fp32",), variants=("p",))
    report = certify(adapter, load_profile("ieee"), dtypes=["fp32"], variants=["p"], quick=True).to_json()
    [run] = report["runs"]
    reqs = {r["id"]: r for r in run["requirements"]}
    return report, reqs, {rid for rid, r in reqs.items() if r["status"] == "fail"}


@pytest.fixture(scope="module")
def vectors():
    vs = vectors_for("fp32", None, quick=True)
    return vs, {row["id"]: row for row in vs.manifest["cases"]}


def _inputs(vectors, e: dict) -> tuple:
    """(dy, x1, x2) of the example's element, the call's beta and the case, checked against the
    vector set (and the example's detail, where it has one)."""
    vs, rows = vectors
    case, k = vs.case(rows[e["case"]]), e["element"]
    got = (int(case.dy[k]), int(case.x1[k]), int(case.x2[k]), int(case.beta))
    assert [int(e[key], 16) for key in ("dy", "x1", "x2", "beta")] == list(got), e
    if "detail" not in e:
        return (*got, case)
    assert f"case {e['case']}, element {k} of a call of" in e["detail"]
    assert f"dy={e['dy']} x1={e['x1']} x2={e['x2']} beta={e['beta']}" in e["detail"]
    return (*got, case)


def _f(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(F32)[0]


def _b(value) -> int:
    return int(np.array([value], F32).view(np.uint32)[0])


def _same(a: int, b: int) -> bool:
    nan = lambda x: (x & 0x7F800000) == 0x7F800000 and x & 0x007FFFFF  # noqa: E731
    return a == b or bool(nan(a) and nan(b))


def test_the_oracle_passes_every_requirement_r18_included():
    report, reqs, failed = _certify(fast_oracle.smoothl1lossgrad)
    assert report["verdict"] == "pass" and not failed, failed
    assert reqs["R18"]["status"] == "pass" and reqs["R18"]["checked"] > 0


# --------------------------------------------------------------------------------------- R14

class _Memo(ArrayFunction):
    """Counts the calls of the same data whose beta is subnormal, and from the third on hands back
    the results one ULP up where they are finite, not zero and below the largest (a memo that
    stores them wrong): R14's sampled calls are right before the run and in it, wrong after it."""

    def __init__(self):
        super().__init__("memo", None, ("fp32",), variants=("p",))
        self.seen = {}

    def compute(self, dy, x1, x2, beta, out_alias=None):
        out = np.asarray(fast_oracle.smoothl1lossgrad(dy, x1, x2, beta), F32)
        if not 0 < abs(beta) < TINY:
            return out
        key = (dy.tobytes(), x1.tobytes(), x2.tobytes(), np.array(beta).tobytes(), out_alias)
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] < 3:
            return out
        bits = out.view(np.uint32).copy()
        bits[(np.abs(out) < np.finfo(F32).max) & (out != 0)] += 1
        return bits.view(F32)


def test_a_repeat_that_differs_shows_its_element_and_the_class_of_its_beta(vectors):
    report, reqs, failed = _certify(_Memo())
    assert failed == {"R14"}, failed
    r14 = reqs["R14"]
    assert r14["failed"] > 0 and len(r14["examples"]) == min(5, r14["failed"])
    said = re.compile(rf"call #(\d+) \((.+?)\) gave {BITS}, call #(\d+) \((.+?)\) {BITS}, correctly rounded {BITS}; "
                      r"(\d+) of the call's (\d+) elements differs?")
    for e in r14["examples"]:
        dy, x1, x2, beta, case = _inputs(vectors, e)
        assert 0 < beta < 0x00800000  # every change at a subnormal beta
        no0, what0, first, no, what, then, rounded, bad, of = said.search(e["detail"]).groups()
        first, then, rounded = int(first, 16), int(then, 16), int(rounded, 16)
        want = smoothl1lossgrad_bits("fp32", dy, x1, x2, beta)
        assert rounded == want == int(e["expected"], 16) and first == want and then == want + 1
        assert int(e["got"], 16) == then and int(no0) < int(no) and what0 == "a call before the run"
        assert what in ("again after the run", "again in reverse order")
        # every nonzero finite result of the call changed, and the first of them is the example
        exact = [smoothl1lossgrad_bits("fp32", *t, beta) for t in zip(case.dy.tolist(), case.x1.tolist(),
                                                                      case.x2.tolist())]
        moved = [i for i, w in enumerate(exact) if 0 < w & 0x7FFFFFFF < 0x7F7FFFFF]
        assert e["element"] == moved[0] and (int(bad), int(of)) == (len(moved), case.dy.size), e["detail"]
    first = r14["examples"][0]["detail"]
    assert "repeats compared; cause: only where beta subnormal" in first, first
    assert "manual leaves this open" not in first
    assert all("repeats compared" not in e["detail"] for e in r14["examples"][1:])
    assert "bits changed with call history" in r14["observed"]


# --------------------------------------------------------------------------------------- R15

class _Scratch(ArrayFunction):
    """Writes the differences into dx1 first, then reads dy: where dx1 is dy, dy is the difference."""

    def __init__(self):
        super().__init__("scratch", None, ("fp32",), variants=("p",))

    def compute(self, dy, x1, x2, beta, out_alias=None):
        if out_alias == "dy":
            with np.errstate(all="ignore"):
                dy = (x1 - x2).astype(F32)
        return fast_oracle.smoothl1lossgrad(dy, x1, x2, beta)


def test_an_in_place_call_that_differs_shows_its_element_and_the_input_dx1_was_over(vectors):
    report, reqs, failed = _certify(_Scratch())
    assert failed == {"R15"}, failed
    r15 = reqs["R15"]
    said = re.compile(rf"separate buffers give {BITS}, dx1 over dy {BITS}, correctly rounded {BITS}; "
                      r"(\d+) of the call's (\d+) elements differs?")
    for e in r15["examples"]:
        assert e["detail"].startswith("dx1 over dy: case ")
        dy, x1, x2, beta, case = _inputs(vectors, e)
        first, then, rounded, bad, of = said.search(e["detail"]).groups()
        with np.errstate(all="ignore"):
            diff = _b(_f(x1) - _f(x2))  # what the scratch left in dy
        want = smoothl1lossgrad_bits("fp32", dy, x1, x2, beta)
        assert int(first, 16) == want == int(rounded, 16) == int(e["expected"], 16)
        assert int(then, 16) == smoothl1lossgrad_bits("fp32", diff, x1, x2, beta) == int(e["got"], 16)
        rows = list(zip(case.dy.tolist(), case.x1.tolist(), case.x2.tolist()))
        with np.errstate(all="ignore"):
            differ = [i for i, (a, b, c) in enumerate(rows) if not _same(
                smoothl1lossgrad_bits("fp32", a, b, c, beta), smoothl1lossgrad_bits("fp32", _b(_f(b) - _f(c)), b, c, beta))]
        assert e["element"] == differ[0] and (int(bad), int(of)) == (len(differ), len(rows)), e["detail"]
    first = r15["examples"][0]["detail"]
    assert "in-place calls compared; cause: only with dx1 over dy" in first, first


# --------------------------------------------------------------------------------------- R18

def _abs_beta(tail_order: str):
    """The |beta| formula for a negative normal beta, its middle line in the body as diff / |beta| * dy
    and in the last n mod 8 elements in ``tail_order``; the oracle elsewhere."""
    def fn(dy, x1, x2, beta):
        if not (beta < 0 and np.isfinite(beta) and -beta >= TINY):
            return fast_oracle.smoothl1lossgrad(dy, x1, x2, beta)
        n, b = dy.size, -beta
        with np.errstate(all="ignore"):
            d = (x1 - x2).astype(F32)
            body = d / b * dy
            mid = np.where(np.arange(n) >= n - n % 8, d * dy / b if tail_order == "muldiv" else body, body)
            return np.where(d > b, dy, np.where(d < -b, -dy, mid)).astype(F32)
    return fn


def _one(dy: int, x1: int, x2: int, beta: int, tail: bool) -> int:
    """The library's element, in numpy float32 scalars."""
    with np.errstate(all="ignore"):
        g, d, b = _f(dy), _f(x1) - _f(x2), -_f(beta)
        if d > b:
            return dy
        if d < -b:
            return _b(-g)
        return _b(d * g / b if tail else d / b * g)


def test_a_tail_that_disagrees_only_for_negative_betas_fails_position_invariance(vectors):
    report, reqs, failed = _certify(_abs_beta("muldiv"))
    assert failed == {"R18"}, failed
    r18 = reqs["R18"]
    said = re.compile(rf"gives {BITS} in its call, {BITS} at index (\d+) of a call of ([\d,]+) \((.+?)\), "
                      rf"correctly rounded {BITS}; (\d+) of the (\d+) sampled elements of its beta differs? there")
    for e in r18["examples"]:
        dy, x1, x2, beta, case = _inputs(vectors, e)
        assert beta & 0x80000000 and e["length"] == case.dy.size  # beta < 0
        first, then, i, length, name, rounded, bad, of = said.search(e["detail"]).groups()
        i, length, k, n = int(i), int(length.replace(",", "")), e["element"], e["length"]
        assert int(first, 16) == _one(dy, x1, x2, beta, k >= n - n % 8)
        assert int(then, 16) == _one(dy, x1, x2, beta, i >= length - length % 8) == int(e["got"], 16)
        assert int(first, 16) != int(then, 16) and (k >= n - n % 8) != (i >= length - length % 8)
        assert int(rounded, 16) == smoothl1lossgrad_bits("fp32", dy, x1, x2, beta) == int(e["expected"], 16)
        assert 0 < int(bad) <= int(of)
    first = r18["examples"][0]["detail"]
    assert "rearranged elements changed; cause: only where beta < 0: the manual leaves this open" in first, first
    assert "last n mod 8 elements" in r18["observed"]


def test_one_order_everywhere_for_negative_betas_passes_position_invariance():
    report, reqs, failed = _certify(_abs_beta("divmul"))
    assert report["verdict"] == "pass" and not failed, failed
    assert reqs["R16"]["observed"]["beta < 0"]["answers"]  # an answer of its own, within the bounds


# --------------------------------------------------------------------------------------- the diagnosis

def _twice_dy_at_minus_inf(dy, x1, x2, beta):
    """2 * dy where beta = -inf (no order the profile allows gives it: every one gives +-dy, 0 or
    NaN there, since diff / -inf is -0 or NaN and the outer lines are +-dy; the clamp orders'
    NaN is now reachable there, issue 39 item 3); the oracle elsewhere."""
    if not (np.isinf(beta) and beta < 0):
        return fast_oracle.smoothl1lossgrad(dy, x1, x2, beta)
    with np.errstate(all="ignore"):
        return (F32(2) * np.asarray(dy, F32)).astype(F32)


def test_failures_only_at_minus_infinity_are_put_down_to_that_open_input_not_to_a_tail(vectors):
    report, reqs, failed = _certify(_twice_dy_at_minus_inf)
    assert "R01" in failed, failed
    for rid in sorted(failed):
        r = reqs[rid]
        for e in r["examples"]:
            dy, _, _, beta, _ = _inputs(vectors, e)
            assert beta == 0xFF800000  # at beta = -inf only, and there 2 * dy
            assert int(e["got"], 16) == int(np.array([F32(2) * _f(dy)], F32).view(np.uint32)[0])
        diagnosis = r["diagnosis"]
        holding = [d for d in diagnosis if d["failed"] == d["of"] == r["failed"]]
        narrowest = min(holding, key=lambda d: d["checked_share"])  # the cause a report names (reports.causes)
        assert narrowest["key"] == "beta-neg-inf", diagnosis
        assert narrowest["pattern"] == "beta = -inf: the manual leaves this open; outside the stated bounds"
        assert not [d for d in diagnosis if d["key"].startswith(("tail-", "tile-", "length-", "first", "last"))], \
            diagnosis

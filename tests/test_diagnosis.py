"""What a report says about why: R17's model combinations and the diagnosis of a failing
requirement (requirements.evaluation_model.model_identification, rules.diagnosis).

The implementations are built from pieces whose behaviour is known by construction: the
accepted models' numpy emulations (reference.models), spliced by position, and the exact
oracle with one defect put in on purpose. So the expected answer (which model where, which
pattern) is the construction itself, not something the code under test produced.
"""

from __future__ import annotations

import numpy as np
import pytest

from sl1conf.adapters.base import FILL_BYTE, ArrayFunction
from sl1conf.conformance.certify.engine import certify
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import fast_oracle
from sl1conf.reference.models import get_model

FILL32 = np.frombuffer(bytes([FILL_BYTE]) * 4, np.uint32)[0]


def _run(fn, platform="ieee"):
    report = certify(ArrayFunction("made", fn, ("fp32",), variants=("p",)), load_profile(platform),
                     dtypes=["fp32"], variants=["p"], quick=True).to_json()
    [run] = report["runs"]
    return {r["id"]: r for r in run["requirements"]}


@pytest.fixture(scope="module")
def body_and_tail():
    """divmul-fp32 on whole blocks of 16, muldiv-fp32 on the last n mod 16 (torch's CPU shape)."""
    body, tail = get_model("divmul-fp32"), get_model("muldiv-fp32")

    def fn(dy, x1, x2, beta):
        n = dy.size
        k = n - n % 16
        out = np.empty_like(dy)
        if k:
            out[:k] = body(dy[:k], x1[:k], x2[:k], beta)
        if k < n:
            out[k:] = tail(dy[k:], x1[k:], x2[k:], beta)
        return out
    return _run(fn)


def test_r17_names_the_two_models_and_where_each_applies(body_and_tail):
    r17 = body_and_tail["R17"]
    combo = r17["combination"]
    assert combo["by"] == "position" and combo["vector_width"] == 16
    assert [(p["model"], p["where"]) for p in combo["parts"]] == [
        ("divmul-fp32", "the vector body"), ("muldiv-fp32", "the last n mod 16 elements")]
    # by construction every disputed element is its part's model's bits
    assert combo["explained"] == 1.0 and all(p["share"] == 1.0 for p in combo["parts"])
    assert sum(p["elements"] for p in combo["parts"]) == r17["disputed_elements"] > 0
    assert r17["observed"].startswith("no single model; divmul-fp32 on the vector body (100.0%), "
                                      "muldiv-fp32 on the last n mod 16 elements (100.0%)")
    assert set(r17["shares"]) >= {"divmul-fp32", "muldiv-fp32"} and max(r17["shares"].values()) < 1.0


def test_one_model_everywhere_is_named_alone():
    r17 = _run(get_model("muldiv-fp32"))["R17"]
    assert r17["observed"] == ["muldiv-fp32"] and "combination" not in r17
    assert r17["shares"]["muldiv-fp32"] == 1.0


@pytest.fixture(scope="module")
def tail_unwritten():
    """The exact oracle that leaves its last n mod 16 elements as they were (the fill)."""
    def fn(dy, x1, x2, beta):
        out = fast_oracle.smoothl1lossgrad(dy, x1, x2, beta)
        n = dy.size
        out[n - n % 16:] = np.full(n % 16, FILL32, np.uint32).view(np.float32)
        return out
    return _run(fn)


def test_a_tail_never_written_is_diagnosed_as_such(tail_unwritten):
    r01 = tail_unwritten["R01"]
    assert r01["status"] == "fail"
    patterns = {d["pattern"]: d for d in r01["diagnosis"]}
    unwritten = patterns["not written (dx1 still holds what it held before the call)"]
    tail = patterns["in the last n mod 16 elements (the tail after a vector body of 16)"]
    for d in (unwritten, tail):  # every failure, and both far rarer among the checked elements
        assert d["failed"] == d["of"] == r01["failed"] and d["checked_share"] < 0.5
        e = d["example"]
        assert e["got"] == f"{FILL32:#010x}" and e["element"] >= e["length"] - e["length"] % 16
    # only the best-fitting width is reported
    assert not any("n mod 8 " in p or "n mod 32 " in p for p in patterns)
    assert "length" in r01["worst"]


def test_a_defect_on_one_branch_is_diagnosed_as_that_branch():
    """Exact except that diff > beta gives -dy: the diagnosis names the branch."""
    def fn(dy, x1, x2, beta):
        out = fast_oracle.smoothl1lossgrad(dy, x1, x2, beta)
        with np.errstate(invalid="ignore"):
            wrong = (x1.astype(np.float64) - x2.astype(np.float64)) > np.float64(beta)
        out[wrong] = -dy[wrong]
        return out
    r01 = _run(fn)["R01"]
    patterns = [d["pattern"] for d in r01["diagnosis"]]
    assert "diff > beta (the result is dy)" in patterns
    assert not any(p.startswith("in the last n mod") for p in patterns)


def test_a_passing_requirement_has_no_diagnosis(body_and_tail):
    assert all("diagnosis" not in r for r in body_and_tail.values() if r["status"] != "fail")


def _reciprocal_one_ulp_low(dy, x1, x2, beta):
    """A plain scalar loop whose reciprocal is one ULP low (toward zero): diff * r * dy in float."""
    with np.errstate(all="ignore"):
        r = np.nextafter(np.float32(1) / beta, np.float32(0), dtype=np.float32)
        d = (x1 - x2).astype(np.float32)
        mid = (d * r).astype(np.float32) * dy
        return np.where(d > beta, dy, np.where(d < -beta, -dy, mid)).astype(np.float32)


def test_a_block_leads_with_its_bulk_and_no_split_is_invented():
    """Issue 25: the R02 block of a reciprocal one ULP low leads with what most of its failures are
    (1-ULP misses at the boundary, where the exact quotient is +-1), with a typical element; the worst
    element stays apart. R17 names no position, order or length split for a loop that has none."""
    reqs = _run(_reciprocal_one_ulp_low)
    r02 = reqs["R02"]
    bulk = r02["bulk"]
    assert r02["status"] == "fail" and bulk["kind"] == "1 ULP from the correctly rounded result"
    assert bulk["failed"] >= 0.8 * r02["failed"] and bulk["of"] == r02["failed"]
    e = bulk["example"]
    assert abs(int(e["got"], 16) - int(e["expected"], 16)) == 1  # a typical element: 1 ULP off, same sign
    r17 = reqs["R17"]["observed"]
    assert not any(words in r17 for words in (" on the vector body", "before call #", "calls of", "n mod")), r17


def test_a_slow_path_for_extreme_betas_is_named_by_beta_not_by_call_order():
    """divmul-fp32, and muldiv-fp32 where beta is extreme (subnormal, below 2^-63 or above 2^126:
    1 / beta not normal or near it), as a library with a slow path for such betas computes. The
    extreme betas sit in a few families, so a split by call order explains the data nearly as
    well; R17 names the split by beta class, which is what the library does."""
    from sl1conf.conformance.requirements.evaluation_model import extreme_beta
    from sl1conf.reference import formats as F

    fast, slow = get_model("divmul-fp32"), get_model("muldiv-fp32")

    def fn(dy, x1, x2, beta):
        extreme = extreme_beta(F.FP32, int(np.array([beta], np.float32).view(np.uint32)[0]))
        return (slow if extreme else fast)(dy, x1, x2, beta)
    r17 = _run(fn)["R17"]
    combo = r17.get("combination")
    assert combo is not None and combo["by"] == "beta", r17["observed"]
    assert [p["model"] for p in combo["parts"]] == ["divmul-fp32", "muldiv-fp32"]
    assert "before call #" not in r17["observed"]


def _diagnose_call_by_call(seen, element, findings, noted):
    """The diagnosis as a requirement's calls give it one after the other, each call's patterns
    computed afresh (the counting rules.diagnosis.diagnose_many batches over requirements)."""
    from sl1conf.conformance.rules.diagnosis import _masks, _patterns

    stats, failed_total, checked_total = {}, 0, 0
    for j, bad, among in seen:
        if not among.any():
            continue
        failed_total += int(bad.sum())
        checked_total += int(among.sum())
        found = [(key, text, np.full(bad.shape, j.case.id in ids)) for key, (text, ids) in findings.items()]
        for key, text, mask in (*_masks(j), *found):
            st = stats.setdefault(key, [text, 0, 0, None])
            hit = mask & bad
            st[1] += int(hit.sum())
            st[2] += int((mask & among).sum())
            if st[3] is None and hit.any():
                st[3] = (j, int(np.flatnonzero(hit)[0]))
    return _patterns(stats, failed_total, checked_total, element, findings, noted)


def test_diagnosing_several_requirements_at_once_gives_each_its_own_diagnosis():
    """diagnose_many walks the calls of every failing requirement once, computing each call's
    patterns once: each requirement still gets what its own calls, in its own order, give
    (its first failing element, its order of patterns), with more patterns than the counters'
    first room (80 call findings: they grow) and a call judged twice by one requirement."""
    from sl1conf.conformance.certify.engine import judge_run, vectors_for
    from sl1conf.conformance.rules.diagnosis import diagnose_many

    def fn(dy, x1, x2, beta):  # the tail of 16 one ULP high where diff > beta, and beta < 0 NaN
        out = fast_oracle.smoothl1lossgrad(dy, x1, x2, beta).copy()
        with np.errstate(invalid="ignore"):
            wrong = (x1.astype(np.float64) - x2.astype(np.float64)) > np.float64(beta)
        wrong[: dy.size - dy.size % 16] = False
        with np.errstate(over="ignore"):
            out[wrong] = np.nextafter(out[wrong], np.float32(np.inf))
        if beta < 0:
            out[:] = np.nan
        return out
    adapter = ArrayFunction("made", fn, ("fp32",), variants=("p",))
    _, judged, _ = judge_run(adapter, load_profile("ieee"), vectors_for("fp32", quick=True), "p")
    element = lambda j, k: {"case": j.row["id"], "element": k}  # noqa: E731
    r01 = [(j, j.rejected["R01"], j.checked["R01"]) for j in judged]
    by_family = sorted(r01, key=lambda s: s[0].family)  # R01's order: family by family
    # a requirement about the calls' second halves, its calls backwards
    late = [(j, j.rejected["R01"] & (np.arange(j.got.size) >= j.got.size // 2), np.ones(j.got.size, bool))
            for j in judged[::-1]]
    twice = r01[:40] + r01[:5]
    ids = [j.case.id for j in judged]
    findings = {f"call-{n}": (f"a call finding {n}", {i: f"seen {n}" for i in ids[n::7]}) for n in range(80)}
    asked = [(r01, element, {}, ()), (by_family, element, {}, ()), (late, element, {}, ()),
             (twice, element, findings, [(ids[3],), (ids[9], ids[10])])]
    assert any(s[1].any() for s in r01) and any(s[1].any() for s in late)
    got = diagnose_many(asked)
    want = [_diagnose_call_by_call(*a) for a in asked]
    assert got == want
    assert got[0] and got[1] and got[2] and got[3]
    # the same failures in another order: the same patterns, each with the first element in that order
    assert [d.key for d in got[0]] == [d.key for d in got[1]]
    assert any(d.key.startswith("call-") for d in got[3])

"""R06 judges flushing per place (issue 36): each input, each intermediate, the result.

Why: the error model lets each place flush independently, so a library that reads subnormal
inputs as zero (DAZ) but keeps subnormal results (no FTZ) is one function and must pass the
DSP profiles; R06 once pooled the places and failed it. One that flushes x1 for some elements
and not for others still fails, and the failure names the place and both elements. The unit
tests give hand-derived fp32 elements to ``places_seen``; the end-to-end ones certify small
numpy kernels (the ``python:`` adapter) on the quick vector set.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from sl1conf.conformance.cli import main
from sl1conf.conformance.requirements.subnormals import places_seen
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import formats as F
from sl1conf.reference import reachable as R

FP32 = F.FP32
ONE = 0x3F800000

# --------------------------------------------------------------- hand-derived elements (fp32)
# x1 = 2^-127 (0x00400000, subnormal), x2 = -2^-126 (0x80800000), dy = beta = 1: diff = 1.5 * 2^-126
# (normal, exact in fp32 and fp64), so the result is diff: 0x00c00000. With x1 read as zero diff is
# 2^-126: 0x00800000. No intermediate is subnormal and 2 ULP of division move 1.5 * 2^-126 by
# 2^-148 at most, so only reading x1 as zero gives 0x00800000, and only keeping x1 gives 0x00c00000.
X1_SUB = (ONE, 0x00400000, 0x80800000, ONE)
X1_FLUSHED, X1_KEPT = 0x00800000, 0x00C00000
# x1 = 1, x2 = 0, beta = 2^10, dy = 2^-120: diff / beta = 2^-10, diff * dy = 2^-120, 1 / beta = 2^-10
# (all normal), the result 2^-130 (0x00080000) subnormal: 0 only if the result is flushed.
RESULT_SUB = (0x03800000, ONE, 0x00000000, 0x44800000)
RESULT_FLUSHED, RESULT_KEPT = 0x00000000, 0x00080000


def _seen(rows, platform="mt7004"):
    """places_seen of (element inputs, got) rows, the oracle the unflushed bits given beside."""
    cols = [np.array([r[0][i] for r in rows], np.uint32) for i in range(4)]
    got = np.array([r[1] for r in rows], np.uint32)
    oracle = np.array([r[2] for r in rows], np.uint32)
    near = R.near_zero_places(FP32, *cols)
    return places_seen(FP32, load_profile(platform), got, *cols, oracle, near)


def _places(side: dict) -> set:
    return {p for p, idx in side.items() if idx.size}


def test_x1_read_as_zero_needs_x1_flushed_and_x1_kept_needs_it_kept():
    seen = _seen([(X1_SUB, X1_FLUSHED, X1_KEPT), (X1_SUB, X1_KEPT, X1_KEPT)])
    assert _places(seen.flushed) == {"x1"} and seen.flushed["x1"].tolist() == [0]
    assert _places(seen.kept) == {"x1"} and seen.kept["x1"].tolist() == [1]


def test_no_element_where_flushing_matters_says_every_place_unseen():
    # a run without the underflow family and without subnormals analyses nothing: every place is
    # still named (R06's check reads each), with no element on either side
    seen = _seen([])
    assert set(seen.flushed) == set(seen.kept) == set(R.INPUT_PLACES + R.MID_PLACES + (R.RESULT,))
    assert not _places(seen.flushed) and not _places(seen.kept) and seen.flushed_somewhere == 0


# Two places that each alone explain a flush: dy = 0x006e6be3 (subnormal), x1 = 0.45, x2 = 0, beta = 0.3:
# diff / beta = 1.5, so the branched orders copy dy and the clamp orders compute 1 * dy, a subnormal
# product. A result of +0 is reached by dy read as zero (either) or by the clamp order's result
# flushed, and by nothing else: no one place is needed. dy = -2^-127 (0x80400000), x1 = 0.5, x2 = 0,
# beta = 1: the result 0.5 * dy = -2^-128 (0x80200000) is exact and subnormal, so dy and the result
# were both kept (dy read as zero or the result flushed gives -0).
EITHER = ((0x006E6BE3, 0x3EE66667, 0x00000000, 0x3E99999A), 0x00000000, 0x006E6BE3)
KEPT_BOTH = ((0x80400000, 0x3F000000, 0x00000000, ONE), 0x80200000, 0x80200000)


def _either(rows):
    from sl1conf.conformance.requirements.subnormals import _either

    cols = [np.array([r[0][i] for r in rows], np.uint32) for i in range(4)]
    return _seen(rows), _either(_seen(rows), R.near_zero_places(FP32, *cols), cols, FP32)


def test_a_flush_two_places_explain_is_inconsistent_where_both_are_kept_elsewhere():
    seen, either = _either([EITHER])
    assert not _places(seen.flushed) and seen.flushed_somewhere == 1
    assert either == (None, ())  # nothing kept: a consistent flush of dy or of the result
    seen, either = _either([EITHER, KEPT_BOTH])
    assert {"dy", R.RESULT} <= _places(seen.kept)
    assert either == (0, ("dy", R.RESULT))


# x1 = 2^-127 + 2^-130 (0x00480000) and x2 = -2^-130 (0x80080000), both subnormal, beta = 1, dy = 1:
# diff = 2^-127 + 2^-129 (0x00500000), subnormal. A result of +0 is reached by x1 and x2 both read as
# zero, or by the diff or the result flushed. x1 = 1.5 * 2^-126 (0x00c00000) and x2 = 2^-126
# (0x00800000), both normal: diff = the result = 2^-127 (0x00400000), subnormal and kept. (The
# diff is not seen kept: the fp64 evaluation's diff is normal, so no flush of it is forced.) So the
# result was kept elsewhere, but reading both inputs as zero reaches the first element: consistent.
BOTH_INPUTS = ((ONE, 0x00480000, 0x80080000, ONE), 0x00000000, 0x00500000)
DIFF_KEPT = ((ONE, 0x00C00000, 0x00800000, ONE), 0x00400000, 0x00400000)


def test_a_flush_another_combination_of_places_explains_is_consistent():
    seen, either = _either([BOTH_INPUTS, DIFF_KEPT])
    assert _places(seen.kept) == {R.RESULT} and seen.flushed_somewhere == 1
    assert either == (None, ())


def test_the_result_flushed_and_kept_are_the_result_place():
    seen = _seen([(RESULT_SUB, RESULT_FLUSHED, RESULT_KEPT), (RESULT_SUB, RESULT_KEPT, RESULT_KEPT)])
    assert _places(seen.flushed) == {R.RESULT} and seen.flushed[R.RESULT].tolist() == [0]
    assert _places(seen.kept) == {R.RESULT} and seen.kept[R.RESULT].tolist() == [1]


def test_inputs_flushed_and_results_kept_are_different_places():
    """The DAZ-without-FTZ pattern: x1 read as zero in one element, a subnormal result kept in another."""
    seen = _seen([(X1_SUB, X1_FLUSHED, X1_KEPT), (RESULT_SUB, RESULT_KEPT, RESULT_KEPT)])
    assert _places(seen.flushed) == {"x1"} and _places(seen.kept) == {R.RESULT}


def test_a_result_no_flush_explains_says_nothing_of_any_place():
    """0x00a00000 is neither evaluation's result (nor within 2 ULP of one): no place is claimed."""
    seen = _seen([(X1_SUB, 0x00A00000, X1_KEPT)])
    assert not _places(seen.flushed) and not _places(seen.kept) and seen.flushed_somewhere == 0


def test_modes_per_place_by_hand():
    """reach with x1 never / always flushed: 0x00800000 needs x1 read as zero, 0x00c00000 needs it kept."""
    model = load_profile("mt7004").error_model
    args = lambda got: (FP32, model, np.array([got], np.uint32), *(np.array([v], np.uint32) for v in X1_SUB),  # noqa: E731
                        np.array([X1_KEPT], np.uint32))
    assert R.reach(*args(X1_FLUSHED)).stage[0] == 3  # today's call form: only through a flush
    assert R.reach(*args(X1_FLUSHED), places={"x1": "never"}).stage[0] == 0
    assert R.reach(*args(X1_FLUSHED), places={"x1": "always"}).stage[0] > 0
    assert R.reach(*args(X1_KEPT), places={"x1": "always"}).stage[0] == 0
    assert R.reach(*args(X1_KEPT), places={"x1": "never"}).stage[0] == 1
    with pytest.raises(ValueError, match="flush place"):
        R.place_modes((), {"x3": "never"})


# --------------------------------------------------------------- the fast path is reach's answer

def _mixed_elements(n=3000, seed=36):
    """fp32 elements where flushing matters: inputs drawn from subnormals, zeros, the smallest
    normals, ones, infinities and random values (beta positive), and results that are one
    evaluation's bits, the same with an input read as zero, a flushed zero, or a neighbour."""
    rng = np.random.default_rng(seed)
    pool = np.concatenate([rng.integers(1, 0x00800000, 40), rng.integers(0x00800000, 0x01000000, 20), [0, ONE, 0x7F800000],
                           rng.integers(0x30000000, 0x50000000, 20)]).astype(np.uint32)
    pick = lambda: pool[rng.integers(0, pool.size, n)] | (rng.integers(0, 2, n).astype(np.uint32) << 31)  # noqa: E731
    dy, x1, x2 = pick(), pick(), pick()
    beta = pool[rng.integers(0, pool.size, n)]
    beta[beta == 0] = ONE
    f = lambda b: b.view(np.float32)  # noqa: E731
    read = lambda b: np.where(((b & 0x7F800000) == 0) & ((b & 0x007FFFFF) != 0), b & 0x80000000, b).astype(np.uint32)  # noqa: E731
    evals = R.evaluations(FP32, R.IEEE)
    got = np.empty(n, np.uint32)
    for k in range(n):
        order, P = evals[k % len(evals)][1:]
        ins = [np.array([v]) for v in (dy[k], x1[k], x2[k], beta[k])]
        if k % 5 == 1:
            ins[k % 4] = read(ins[k % 4])
        got[k] = R.plain_many(FP32, [(order, P)], *(f(a) for a in ins))[0].view(np.uint32)[0]
        if k % 7 == 3:
            got[k] = got[k] & 0x80000000 if k % 2 else got[k] + 1
    oracle = np.array([R.plain_many(FP32, [("divmul", np.float64)], *(f(np.array([v])) for v in (dy[k], x1[k], x2[k], beta[k])))[0]
                       .view(np.uint32)[0] for k in range(n)], np.uint32)
    return got, dy, x1, x2, beta, oracle


def test_plainly_reached_is_only_ever_what_reach_reaches_at_stage_1():
    """reachable.plainly_reached, the plain-arithmetic first look R06 takes at its many elements,
    claims an element only where reach (its intervals) reaches it at stage 1, inputs read or not."""
    cols = _mixed_elements()
    for platform in ("mt7004", "ieee"):
        model = R.ErrorModel(load_profile(platform).error_model.orders, load_profile(platform).error_model.ulp, R.FLUSH_PLACES)
        for read in ((), ("dy",), ("x1",), ("x2",), ("beta",)):
            plain = R.plainly_reached(FP32, model, *cols, read=read)
            stage = R.reach(FP32, model, *cols, places={p: "always" for p in read} or None).stage
            assert plain.sum() > len(cols[0]) // 4, (platform, read)
            assert not (plain & (stage != 1)).any(), (platform, read, np.flatnonzero(plain & (stage != 1))[:5])


def _places_seen_by_reach(fmt, profile, got, dy, x1, x2, beta, oracle, near):
    """places_seen as first written: reach over every analysed element at every place."""
    from dataclasses import replace
    from sl1conf.conformance.requirements.subnormals import PLACES, Seen, _modes
    seen, model = Seen(), replace(profile.error_model, flush=R.FLUSH_PLACES)
    base = R.reach(fmt, model, got, dy, x1, x2, beta, oracle).stage
    needed, cols = np.zeros(got.shape, bool), (got, dy, x1, x2, beta, oracle)
    for p in PLACES:
        rows = np.flatnonzero((base == 3) & near[p])
        r = R.reach(fmt, model, *(a[rows] for a in cols), places=_modes(p, "never"), stages=(3,))
        seen.flushed[p] = rows[r.stage == 0]
        needed[seen.flushed[p]] = True
        if p == R.RESULT:
            sub = ((got & 0x7F800000) == 0) & ((got & 0x007FFFFF) != 0)
            seen.kept[p] = np.flatnonzero((base > 0) & sub & (got != dy) & (got != dy ^ np.uint32(0x80000000)))
            continue
        rows = np.flatnonzero((base > 0) & near[p])
        seen.kept[p] = rows[R.reach(fmt, model, *(a[rows] for a in cols), places=_modes(p, "always")).stage == 0]
    seen.flushed_somewhere = int(((base == 3) & ~needed).sum())
    return seen


def test_places_seen_is_what_reach_says_at_every_place():
    """The cheap places_seen (plain arithmetic first, inputs judged only where subnormal) gives
    what reach over every element at every place gives, element for element."""
    cols = _mixed_elements()
    near = R.near_zero_places(FP32, *cols[1:5])
    for platform in ("mt7004", "ieee"):
        fast = places_seen(FP32, load_profile(platform), *cols, near)
        slow = _places_seen_by_reach(FP32, load_profile(platform), *cols, near)
        assert fast.flushed_somewhere == slow.flushed_somewhere, platform
        for p in slow.flushed:
            assert fast.flushed[p].tolist() == slow.flushed[p].tolist(), (platform, p)
            assert fast.kept[p].tolist() == slow.kept[p].tolist(), (platform, p)
        assert any(v.size for v in slow.flushed.values()) and any(v.size for v in slow.kept.values()), platform


# --------------------------------------------------------------- end to end (python: adapter)

KERNELS = '''
import numpy as np

dtypes = ("fp32",)
variants = ("p",)
TINY = np.float32(np.finfo(np.float32).tiny)


def daz(v):
    """A subnormal read as a zero of its sign (a flushing load)."""
    v = np.asarray(v, np.float32)
    return np.where(np.abs(v) < TINY, np.copysign(np.float32(0), v), v).astype(np.float32)


def lines(d, b, g, middle):
    return np.where(d > b, g, np.where(d < -b, -g, middle)).astype(np.float32)


def daz_divmul(dy, x1, x2, beta):
    """Every input read through a flushing load, (diff / beta) * dy in float32, results kept."""
    with np.errstate(all="ignore"):
        g, b, d = daz(dy), daz(beta)[()], daz(x1) - daz(x2)
        return lines(d, b, g, (d / b) * g)


def daz_newton(dy, x1, x2, beta):
    """The same with no divider: 1 / beta one ULP toward zero (a Newton-Raphson reciprocal within
    1 ULP; 1 / 0 stays infinite), then (diff * inv) * dy."""
    with np.errstate(all="ignore"):
        g, b, d = daz(dy), daz(beta)[()], daz(x1) - daz(x2)
        r = np.float32(1) / b
        inv = r if np.isinf(r) else np.nextafter(r, np.float32(0))
        return lines(d, b, g, (d * inv) * g)


def x1_only(dy, x1, x2, beta):
    """Only x1 through a flushing load."""
    with np.errstate(all="ignore"):
        d = daz(x1) - x2
        return lines(d, beta, dy, (d / beta) * dy)


def x1_even_elements(dy, x1, x2, beta):
    """x1 read as zero in the even elements of a call only: the same place both ways."""
    with np.errstate(all="ignore"):
        a = x1.copy()
        a[::2] = daz(x1[::2])
        d = a - x2
        return lines(d, beta, dy, (d / beta) * dy)
'''


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    folder = tmp_path_factory.mktemp("r06-kernels")
    path = folder / "r06_kernels.py"
    path.write_text(textwrap.dedent(KERNELS))
    return path


def _certify(tmp_path, kernels, fn: str, platform: str) -> tuple:
    """(exit code, failed requirement ids, R06's entry) of a quick fp32 run of ``fn``."""
    out = tmp_path / f"{fn}-{platform}"
    code = main(["certify", "--impl", f"python:{kernels}:{fn}", "--platform", platform, "--quick", "--dtype", "fp32",
                 "--variant", "p", "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    reqs = report["runs"][0]["requirements"]
    return code, {r["id"] for r in reqs if r["status"] == "fail"}, next(r for r in reqs if r["id"] == "R06")


@pytest.mark.parametrize("fn", ["daz_divmul", "daz_newton"])
def test_inputs_read_as_zero_with_results_kept_pass_the_dsp_profiles_and_fail_ieee(fn, kernels, tmp_path):
    for platform in ("mt7004", "ft78ne"):
        code, failed, r06 = _certify(tmp_path, kernels, fn, platform)
        assert code == 0 and not failed, (platform, failed, r06.get("examples"))
        seen = r06["observed"]
        assert seen.startswith("flush-to-zero at the inputs ") and seen.endswith(": consistent per place"), seen
        assert "at the result (" in seen.split("; gradual underflow ")[1], seen  # subnormal results kept (no FTZ)
        assert "flush-to-zero at the intermediates" not in seen and "flush-to-zero at the result" not in seen, seen
    code, failed, r06 = _certify(tmp_path, kernels, fn, "ieee")
    assert code == 1 and "R06" in failed
    assert "the profile allows no flushing" in r06["observed"], r06["observed"]


def test_only_x1_read_as_zero_passes_and_names_x1(kernels, tmp_path):
    code, failed, r06 = _certify(tmp_path, kernels, "x1_only", "mt7004")
    assert code == 0 and not failed, failed
    assert r06["observed"].startswith("flush-to-zero at the inputs x1 ("), r06["observed"]


def test_x1_flushed_for_some_elements_only_fails_naming_the_place_and_both_elements(kernels, tmp_path):
    code, failed, r06 = _certify(tmp_path, kernels, "x1_even_elements", "mt7004")
    assert code == 1 and "R06" in failed
    notes = [e["detail"] for e in r06["examples"] if "flushes inconsistently" in e.get("detail", "")]
    assert len(notes) == 1 and notes[0].startswith("flushes inconsistently at the input x1: "), notes
    assert "inconsistent at the input x1" in r06["observed"], r06["observed"]
    # both elements as the note names them: the flushed one at an even index, with the bits that
    # x1 read as zero gives (diff / beta * dy in float32), the kept one at an odd index with the
    # bits x1 as given gives
    flushed, kept = notes[0].split("; flushed: ")[1].split("; kept: ")
    for text, parity, read in ((flushed, 0, True), (kept, 1, False)):
        element = int(text.split(" element ")[1].split(" ")[0])
        assert element % 2 == parity, text
        bits = {k: int(text.split(f"{k}=")[1].split(" ")[0].rstrip(":,)"), 16) for k in ("dy", "x1", "x2", "beta")}
        got = int(text.split("got ")[1].rstrip(")"), 16)
        f = lambda k: np.array([bits[k]], np.uint32).view(np.float32)  # noqa: E731
        a = np.float32(0) if read else f("x1")
        with np.errstate(all="ignore"):
            d = a - f("x2")
            want = f("dy") if d[0] > f("beta")[0] else -f("dy") if d[0] < -f("beta")[0] else d / f("beta") * f("dy")
        assert np.asarray(want, np.float32).view(np.uint32)[0] == got, text
        assert bits["x1"] & 0x7F800000 == 0 and bits["x1"] & 0x007FFFFF, text  # x1 subnormal

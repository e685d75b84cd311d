"""Exhaustive fp16 sweeps: histograms against an independent numpy computation, a planted
defect, resume, shards and merge, the around-beta enumeration, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sl1conf.adapters.base import Adapter, Outcome
from sl1conf.adapters.builtin import KernelAdapter
from sl1conf.conformance.search import sweep as S
from sl1conf.conformance.cli import main
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.search.shards import Shard
from sl1conf.reference import formats as F
from sl1conf.reference import kernel

BETA, DY = 0x2E66, 0x3C01  # 0.1 (inexact: every rounding of the spec order is active), 1 + 2^-10
SMALL = 4096  # block size for the API tests: 16 blocks per x2=V subset


def sweep(tmp_path, name, impl="builtin:kernel", beta=BETA, dy=DY, subset="x2=0x0001", platform="ieee", **kw):
    config = S.SweepConfig(impl, beta, dy, subset, block=SMALL, platform=platform)
    return S.run_sweep(config, tmp_path / name, **kw)


# --------------------------------------------------------------------------------------
# an independent computation: numpy float16 arithmetic and a hand-made ULP distance


def ordered(bits):
    b = bits.astype(np.int64)
    return np.where(b & 0x8000, -(b & 0x7FFF), b & 0x7FFF)


def numpy_histogram(x1, x2, beta, dy):
    """divmul-fp16 by numpy float16 operations, against (diff * dy) / beta in binary64
    rounded once to fp16 (correctly rounded: reference/fast_oracle.py)."""
    h = lambda b: np.asarray(b, np.uint16).view(np.float16)  # noqa: E731
    a, b, d, bt = h(x1), h(x2), h(np.full(x1.size, dy)), h(beta)
    with np.errstate(all="ignore"):
        diff = a - b
        got = np.where(diff > bt, d, np.where(diff < -bt, -d, (diff / bt) * d)).astype(np.float16)
        e = a.astype(np.float64) - b.astype(np.float64)
        d64, b64 = d.astype(np.float64), np.float64(bt)
        want = np.where(e > b64, d64, np.where(e < -b64, -d64, (e * d64) / b64)).astype(np.float16)
    g, w = got.view(np.uint16), want.view(np.uint16)
    gn, wn = np.isnan(got), np.isnan(want)
    dist = np.abs(ordered(g) - ordered(w))
    # the classes written out here, not taken from the suite: 0, 1, 2, 3, 4, 5-8, 9-64, 65+
    cls = np.select([dist <= 4, dist <= 8, dist <= 64], [dist.astype(str), "5-8", "9-64"], "65+")
    names = np.where(gn & wn, "0", np.where(gn | wn, "nan", np.where((dist == 0) & (g != w), "zero-sign", cls)))
    keys, counts = np.unique(names, return_counts=True)
    hist = {str(k): int(c) for k, c in zip(keys, counts)}
    finite = np.where(gn | wn, -1, dist)
    return hist, int(finite.max()), int(np.argmax(finite))


@pytest.mark.parametrize("x2,beta,dy", [(0x0001, BETA, DY), (0x3C00, BETA, DY), (0xFC00, BETA, DY),
                                         (0x0001, 0x63D0, 0x63D0), (0x8123, 0x4000, 0xFBFF)])
def test_histogram_matches_numpy_float16(tmp_path, x2, beta, dy):
    state = sweep(tmp_path, "s", impl="builtin:model:divmul-fp16", subset=f"x2={x2:#06x}", beta=beta, dy=dy)
    x1 = np.arange(1 << 16).astype(np.uint16)
    hist, worst, at = numpy_histogram(x1, np.full(x1.size, x2, np.uint16), beta, dy)
    tally = state["tally"]
    assert state["complete"] and state["blocks"] == 16 and tally.elements == 1 << 16
    assert tally.histogram() == {"0": 0, **hist}
    w = tally.worst_overall()  # an ElementRecord; as the checkpoint keeps it
    if worst == 0:
        assert w is None
    else:
        w = w.to_json(internal=True)
        assert (w["ulp_value"], w["at"], int(w["x1"], 16), int(w["x2"], 16)) == (worst, at, at, x2)
        g, e = int(w["got"], 16), int(w["expected"], 16)  # a zero for a normal result is named, not counted
        named = "zero where the result is normal" if g & 0x7FFF == 0 and 0x0400 <= e & 0x7FFF < 0x7C00 else None
        assert w["ulp"] == named or named is None
        assert (int(w["dy"], 16), int(w["beta"], 16)) == (dy, beta)  # an element record: every input


def test_kernel_exact_where_no_step_rounds(tmp_path):
    # beta = dy = 1 and x2 = 0: diff = x1 exactly, diff / 1 * 1 exactly: the spec order is exact.
    state = sweep(tmp_path, "a", beta=0x3C00, dy=0x3C00, subset="x2=0")
    assert state["tally"].histogram() == {"0": 1 << 16} and state["tally"].worst_overall() is None
    # muldiv in binary64 is the oracle's own evaluation: exact for any beta, dy, x2
    state = sweep(tmp_path, "b", impl="builtin:kernel:muldiv-fp64", subset="x2=0x0001")
    assert state["tally"].histogram() == {"0": 1 << 16}


# --------------------------------------------------------------------------------------
# a planted defect


class Planted(Adapter):
    """The exact kernel, wrong on purpose: x1 0x3555 three steps up, x1 0x3100 one step down,
    the zero of x1 == x2 with the wrong sign, x1 0x2000 NaN."""

    name = "planted"
    dtypes = ("fp16",)

    def __init__(self):
        self.inner = KernelAdapter("muldiv-fp64")

    def run_case(self, case):
        out = self.inner.run([case])[0].out.copy()
        out[case.x1 == 0x3555] += np.uint16(3)
        out[case.x1 == 0x3100] -= np.uint16(1)
        out[case.x1 == case.x2] ^= np.uint16(0x8000)
        out[case.x1 == 0x2000] = 0x7E00
        return Outcome("ok", out=out)


def test_planted_defect_in_histogram_and_verdict(tmp_path):
    x2, dy = 0x3000, 0xBC00  # dy = -1: x1 == x2 gives -0
    state = sweep(tmp_path, "p", beta=BETA, dy=dy, subset=f"x2={x2:#x}", adapter=Planted())
    tally = state["tally"]
    assert tally.histogram() == {"0": (1 << 16) - 4, "1": 1, "3": 1, "nan": 1, "zero-sign": 1}
    w = tally.worst_overall()
    assert (w.ulp, w.x1, w.x2, w.at) == (3, "0x3555", "0x3000", 0x3555)
    assert int(w.got, 16) == int(w.expected, 16) + 3
    strict = S.verdict(tally, load_profile("ieee"))
    # 3 ULP (R01), NaN for a number (R01, and R03: a NaN where the exact result is finite),
    # -0 as +0 (R01 and R05 on a strict profile): three elements
    assert {k: v["elements"] for k, v in strict["requirements"].items()} == {"R01": 3, "R03": 1, "R05": 1}
    assert strict["rejected"] == 3 and not strict["pass"]
    assert strict["requirements"]["R01"]["worst"]["ulp"] == "NaN where the result is a number"  # the worst
    lax_state = sweep(tmp_path, "lax", beta=BETA, dy=dy, subset=f"x2={x2:#x}", adapter=Planted(), platform="mt7004")
    lax = S.verdict(lax_state["tally"], load_profile("mt7004"))  # the sign of zero not checked
    assert lax["rejected"] == 2 and set(lax["requirements"]) == {"R01", "R03"}


def _as_format_6(doc: dict) -> dict:
    """A format-7 sweep.json of one plane as format 6 wrote the same sweep: no plane count, no
    rejected element kept whole."""
    old = json.loads(json.dumps(doc))
    assert old.pop("planes") == 1
    old["tally"].pop("rejections")
    old.pop("summary", None)
    old["format"] = "sl1conf-sweep/6"
    return old


def _as_format_5(doc: dict) -> dict:
    """A format-6 sweep.json as format 5 wrote the same sweep: no counts by reason, the elements
    accepted beyond the budget and their farthest, the alternatives' counts apart (open_answers)."""
    old = _as_format_6(doc)
    tally = old["tally"]
    accepted = tally.pop("accepted")
    reasons = accepted["reasons"]
    tally["beyond_budget"] = {"elements": reasons["reachable"] + reasons["alternative"] + reasons["open_bounds"],
                              "worst": accepted["worst"] and accepted["worst"]["element"]}
    tally["open_answers"] = accepted["named"].get("alternative", {})
    old.pop("summary", None)
    old["format"] = "sl1conf-sweep/5"
    return old


def _as_format_4(doc: dict) -> dict:
    """A format-5 sweep.json as format 4 wrote the same sweep (docs/sweeps.md's earlier shape):
    compact examples (pair number ``index``, x1, x2, expected, got, ``ulp`` a distance or "nan",
    ``kind`` for a result that is no distance), the rejected elements and the failing calls per
    requirement apart."""
    def compact(e):
        if e is None:
            return None
        ulp = "nan" if e["ulp_value"] == F.NAN_MISMATCH else e["ulp_value"]
        return {"index": e["at"], **{k: e[k] for k in ("x1", "x2", "expected", "got")}, "ulp": ulp,
                **({"kind": e["ulp"]} if isinstance(e["ulp"], str) and ulp != "nan" else {})}
    old = json.loads(json.dumps(doc))
    tally = old["tally"]
    for row in tally["rows"].values():
        for key in ("worst", "first_nan", "first_zero_sign"):
            row[key] = compact(row[key])
    tally["beyond_budget"]["worst"] = compact(tally["beyond_budget"]["worst"])
    evidence = tally.pop("requirements")
    tally["rejected"] = {rid: {"elements": e["elements"], "worst": compact(e["worst"])}
                         for rid, e in evidence.items() if e["elements"]}
    tally["call_failures"] = {rid: {"calls": e["calls"], "first": {"block": e["first_call"]["at"],
                                                                   "kind": e["first_call"]["kind"],
                                                                   "detail": e["first_call"]["detail"]}}
                              for rid, e in evidence.items() if e["calls"]}
    old.pop("summary", None)
    old["format"] = "sl1conf-sweep/4"
    return old


@pytest.mark.parametrize("older", ["6", "5", "4"])
def test_a_format_4_5_or_6_state_is_read_as_format_7(tmp_path, older):
    """Formats 5, 6 and 7 changed the shape of the counts, not how they were judged: a format-4
    checkpoint (a planted defect's: a NaN, a zero of the other sign, distances) and a format-5 one
    are read back as the same tally, format 4's examples completed with the sweep's dy and beta,
    the counts by reason derived from format 5's (exact: the histogram's 0 ULP; rejected; the
    rest within the budget, where nothing was accepted beyond it)."""
    x2, dy = 0x3000, 0xBC00
    sweep(tmp_path, "p", beta=BETA, dy=dy, subset=f"x2={x2:#x}", adapter=Planted())
    path = tmp_path / "p" / "sweep.json"
    new = json.loads(path.read_text())
    older_doc = {"6": _as_format_6, "5": _as_format_5, "4": lambda d: _as_format_4(_as_format_5(d))}[older](new)
    assert older_doc["format"] == f"sl1conf-sweep/{older}" and "rejections" not in older_doc["tally"]
    path.write_text(json.dumps(older_doc))
    state = S.load_state(tmp_path / "p")
    assert state["format"] == S.STATE_FORMAT and state["planes"] == 1
    # format 6 kept no rejected element whole: none is made up (the planted defect's 3 are in the new one)
    assert state["tally"].rejections == [] and len(new["tally"]["rejections"]) == 3
    back, want = state["tally"].to_json(), {**new["tally"], "rejections": []}
    assert back["accepted"]["reasons"] == want["accepted"]["reasons"]
    assert {k: v for k, v in back.items() if k != "accepted"} == {k: v for k, v in want.items() if k != "accepted"}
    assert want["accepted"]["reasons"]["rejected"] and want["accepted"]["reasons"]["within_budget"]
    assert state["tally"].requirements["R01"].worst.ulp == "NaN where the result is a number"


def test_accepted_model_beyond_budget_is_not_rejected(tmp_path):
    # beta = dy = 1000: divmul-fp16's subnormal diff / beta is 500 ULP off, yet it is an accepted model
    state = sweep(tmp_path, "m", impl="builtin:kernel", beta=0x63D0, dy=0x63D0, subset="x2=0x0001")
    tally = state["tally"]
    assert tally.worst_overall().ulp > 2
    assert S.verdict(tally, load_profile("ieee"))["rejected"] == 0


# --------------------------------------------------------------------------------------
# one block: everything judged once, the lean counted on the elements that count


def _block_inputs(w, k):
    from sl1conf.adapters.base import Case
    from sl1conf.reference import fast_oracle

    lo = k * w.config.block
    x1, x2 = w.subset.pairs(lo, lo + w.config.block)
    dy = w.dy
    got = w.adapter.run([Case("fp16", dy, x1, x2, w.config.beta)])[0].out
    h = lambda a: a.view(np.float16)  # noqa: E731
    want = fast_oracle.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(w.config.beta).view(np.float16))
    return lo, dy, x1, x2, got, want.view(np.uint16)


@pytest.mark.parametrize("subset,block", [("all", S.BLOCK), ("all", 1 << 17), ("x2=0x7e01", 1 << 16),
                                          ("all", SMALL), ("around-beta:3", SMALL)])
def test_a_worker_gives_the_subset_pairs_and_the_fast_oracle(subset, block):
    """A block's pairs (kept arrays where every block is whole runs) are Subset.pairs', its
    oracle bits (the muldiv-fp64 kernel, NaN made canonical in place) fast_oracle's."""
    from sl1conf.reference import fast_oracle

    w = S._Block(S.SweepConfig("builtin:kernel", BETA, DY, subset, block=block), threads=1)
    assert w.whole_runs == (block % (1 << 16) == 0)
    nblocks = -(-w.subset.size // block)
    for k in sorted({0, 1, nblocks // 2, nblocks - 1, 0x7C00 * 16 * SMALL // block}):
        if k >= nblocks:
            continue
        lo, hi = k * block, min((k + 1) * block, w.subset.size)
        x1, x2 = w.pairs(lo, hi)
        a, b = w.subset.pairs(lo, hi)
        assert (x1 == a).all() and (x2 == b).all(), k
        h = lambda v: v.view(np.float16)  # noqa: E731
        want = fast_oracle.smoothl1lossgrad(h(w.dy[:hi - lo]), h(a), h(b), np.uint16(BETA).view(np.float16))
        assert (w.oracle(w.dy[:hi - lo], x1, x2) == want.view(np.uint16)).all(), k  # the same bits, NaN too


@pytest.mark.parametrize("platform", ["ieee", "mt7004"])
def test_lean_bias_counts_are_the_whole_calls_at_every_class_of_beta(platform):
    """lean_bias_counts (the elements that differ, and only those that can be ordinary) against
    call_bias_counts (every element judged) on calls of mixed inputs, the built-in kernel's
    results and results near the oracle's, at a normal, subnormal, negative, zero, infinite and
    the largest beta: the same counts, the counters' keys included or left out alike."""
    from sl1conf.conformance.requirements.accuracy import call_bias_counts, lean_bias_counts
    from test_sweep_shortcut import _got_near, _oracle

    profile = load_profile(platform)
    seen = set()
    for seed, beta in enumerate((0x3C00, 0x0001, 0x0400, 0xBC00, 0x0000, 0x7C00, 0x2E66, 0x7BFF) * 2):
        rng = np.random.default_rng(seed)
        n = 3000

        def draw():
            a = (rng.integers(0x3000, 0x4400, n) | (rng.integers(0, 2, n) << 15)).astype(np.uint16)
            k = rng.random(n) < (0.1, 0.9)[seed // 8]  # mostly the middle line, then mostly anything
            a[k] = rng.integers(0, 1 << 16, int(k.sum()))
            return a
        dy, x1, x2 = draw(), draw(), draw()
        h = lambda a: a.view(np.float16)  # noqa: E731
        got = np.ascontiguousarray(kernel.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(beta).view(np.float16),
                                                           threads=1)).view(np.uint16).copy()
        k = rng.random(n) < 0.05
        got[k] = _got_near(_oracle(dy, x1, x2, beta), rng, dy)[k]
        whole = call_bias_counts(F.FP16, profile, got, dy, x1, x2, beta)
        assert lean_bias_counts(F.FP16, profile, got, dy, x1, x2, beta) == whole, (platform, hex(beta), seed)
        seen.add(bool(whole))
    assert seen == {True, False}  # calls with the counters and calls without


def test_lean_bias_counts_settle_the_shortcuts_deviations_as_the_whole_judge_does(tmp_path):
    """lean_bias_counts' settled path (accuracy._settled: the deviations judge.within_budget_alone
    accepts, counted as explained where an enumerated model gives them, open where the rounded
    diff's alternative moves them, the rest judged) against call_bias_counts (every element
    judged) on calls built to reach each branch: exact diffs within a few ULPs of +-beta (so that
    RN16(x1 - x2) is +-beta: the rounded-diff alternative), results that are the enumerated
    models' (explained), near the oracle's (deviations no model gives, both ways, and past the
    budget), on ieee and mt7004 (approximate operations allowed)."""
    from sl1conf.conformance.requirements.accuracy import call_bias_counts, lean_bias_counts
    from sl1conf.conformance.rules import openbehaviour
    from test_sweep_shortcut import _got_near, _oracle

    h = lambda a: a.view(np.float16)  # noqa: E731
    moved_deviations, counted = 0, set()
    # and a profile that allows no native half (divmul-fp16, an enumerated model, not among its
    # evaluations): its deviations are not explained, by either path
    text = (Path(__file__).parents[1] / "conformance" / "rules" / "profiles" / "ieee.toml").read_text()
    no_half = text.replace('divmul = ["data", "fp32", "fp64"]', 'divmul = ["fp32", "fp64"]').replace(
        'clamp-divmul = ["data", "fp32", "fp64"]', 'clamp-divmul = ["fp32", "fp64"]')
    assert no_half.count('["fp32", "fp64"]') == text.count('["fp32", "fp64"]') + 2
    (tmp_path / "no-half.toml").write_text(no_half)
    for platform in ("ieee", "mt7004", str(tmp_path / "no-half.toml")):
        profile = load_profile(platform)
        for seed, beta in enumerate((0x3C00, 0x2E66, 0x3555, 0x0400, 0x7800, 0x5640)):
            rng = np.random.default_rng(100 + seed)
            n = 4000
            bv = float(h(np.array([beta], np.uint16))[0])
            x2 = (rng.integers(0x2000, 0x5000, n) | (rng.integers(0, 2, n) << 15)).astype(np.uint16)
            # x1 = x2 +- beta, nudged a few ULPs of x1: exact diffs on, near and off the boundary
            side = np.where(rng.integers(0, 2, n) == 0, -1.0, 1.0)
            x1 = (h(x2).astype(np.float64) + side * bv).astype(np.float16).view(np.uint16).astype(np.int32)
            x1 = np.clip(x1 + rng.integers(-3, 4, n) * np.where(x1 & 0x8000, -1, 1), 0, 0xFBFF)
            x1 = np.where((x1 & 0x7C00) == 0x7C00, 0x3C00, x1).astype(np.uint16)
            far = rng.random(n) < 0.2  # and anything
            x1[far] = rng.integers(0, 0x7C00, int(far.sum())) | (rng.integers(0, 2, int(far.sum())) << 15)
            dy = (rng.integers(0x3800, 0x4800, n) | (rng.integers(0, 2, n) << 15)).astype(np.uint16)
            want = _oracle(dy, x1, x2, beta)
            got = want.copy()
            how = rng.integers(0, 3, n)
            for i, model in enumerate(("divmul-fp16", "recipmul-fp32")):
                bits = np.ascontiguousarray(kernel.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(beta).view(np.float16),
                                                                   model=model, threads=1)).view(np.uint16)
                got = np.where(how == i, bits, got)
            got = np.where(how == 2, _got_near(want, rng, dy), got).astype(np.uint16)
            whole = call_bias_counts(F.FP16, profile, got, dy, x1, x2, beta)
            assert lean_bias_counts(F.FP16, profile, got, dy, x1, x2, beta) == whole, (platform, hex(beta))
            c = whole.get("got", {})
            counted |= {k for k in ("explained", "differ") if c.get(k)}
            alts = openbehaviour.alternatives(F.FP16, dy, x1, x2, beta, oracle=want)
            if "rounded-diff" in alts:
                d = F.ulp_distance(F.FP16, got, want)
                moved_deviations += int(((alts["rounded-diff"] != want) & (d >= 1) & (d <= 2)).sum())
    assert moved_deviations > 0  # deviations the rounded diff's alternative makes open were there
    assert counted == {"explained", "differ"}
    # every element past the budget yet reachable (divmul-fp16 at beta = dy = 1000: diff / beta rounded
    # to fp16 near the subnormals, its error times 1000): no deviation to count, only the counters'
    # keys, which only the elements the shortcut leaves to the judge give
    rng = np.random.default_rng(5)
    n, beta = 200_000, 0x63D0
    x1, x2 = (rng.integers(0x0400, 0x2000, n).astype(np.uint16) for _ in range(2))
    dy = np.full(n, beta, np.uint16)
    got = np.ascontiguousarray(kernel.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(beta).view(np.float16),
                                                       model="divmul-fp16", threads=1)).view(np.uint16)
    k = np.flatnonzero(F.ulp_distance(F.FP16, got, _oracle(dy, x1, x2, beta)) > 2)[:200]
    assert k.size == 200
    profile = load_profile("ieee")
    whole = call_bias_counts(F.FP16, profile, got[k], dy[k], x1[k], x2[k], beta)
    assert whole and not any(whole["got"].values())
    assert lean_bias_counts(F.FP16, profile, got[k], dy[k], x1[k], x2[k], beta) == whole


@pytest.mark.parametrize("impl", ["builtin:kernel", "builtin:kernel:muldiv-fp64", "builtin:kernel:muldiv-fp16",
                                  "planted"])
def test_a_block_counts_as_add_judge_and_lean_on_the_whole_block(impl):
    """PlaneTally.block (one judgement of the wrong elements) gives the tally of add + judge, and the
    accuracy requirement's lean counts (lean_bias_counts: a judgement of the elements where the
    implementation differs) are call_bias_counts' (every element judged): blocks with many wrong elements, none (the bias counters' keys
    found among the others: x2 = 1, x1 far above), no ordinary element at all (x2 = inf), and
    NaN payloads that differ everywhere (x2 a NaN: not wrong)."""
    from sl1conf.conformance.requirements.accuracy import call_bias_counts, lean_bias_counts

    config = S.SweepConfig(impl, BETA, DY, "all", block=SMALL)
    w = S._Block(config, Planted() if impl == "planted" else None)
    profile = load_profile("ieee")
    seen = set()
    for k in (0, 1, 3 * 16 + 2, 0x3555 * 16 + 3, 0x3C00 * 16 + 12, 0x7C00 * 16 + 5, 0x7E01 * 16 + 2, 0xBC00 * 16 + 1):
        lo, dy, x1, x2, got, want = _block_inputs(w, k)
        one, whole, fused, shortcut = S.PlaneTally(), S.PlaneTally(), S.PlaneTally(), S.PlaneTally()
        one.block(lo, dy, x1, x2, BETA, got, want, profile)
        whole.add(lo, dy, x1, x2, BETA, got, want)
        whole.judge(lo, dy, x1, x2, BETA, got, want, profile)
        bad, at_bad = kernel.f16_mismatches(dy, x1, x2, BETA, got)  # the wrong elements only
        fused.block(lo, dy, x1, x2, BETA, got, at_bad, profile, bad=bad)
        # the sweep's way: the shortcut's elements counted in C, the others back
        bad, at_bad, alone = kernel.f16_judge_pass(dy, x1, x2, BETA, got, *S.shortcut_of(profile))
        shortcut.block(lo, dy, x1, x2, BETA, got, at_bad, profile, bad=bad, alone=alone)
        assert one.to_json() == whole.to_json() == fused.to_json() == shortcut.to_json(), (impl, k)
        counts = call_bias_counts(F.FP16, profile, got, dy, x1, x2, BETA)
        assert lean_bias_counts(F.FP16, profile, got, dy, x1, x2, BETA) == counts, (impl, k)
        deviations = sum(c["differ"] + c.get("explained", 0) for c in counts.values())  # an honest one's: explained
        seen.add(bool(counts) and deviations > 0)
        seen.add("keys only" if counts and not deviations else "")
        seen.add("none" if not counts else "")
    # an evaluation in fp64 rounds once and deviates only at exact ties of the result: none in these blocks
    assert {True, "keys only", "none"} - ({True} if impl.endswith("fp64") else set()) <= seen


# --------------------------------------------------------------------------------------
# resume, shards, merge


def test_resume_after_interruption_equals_one_run(tmp_path):
    whole = sweep(tmp_path, "whole")
    partial = sweep(tmp_path, "resumed", max_blocks=5)
    assert len(partial["done"]) == 5 and not partial["complete"]

    def stop(state, session):
        if session["blocks"] == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(tmp_path, "resumed", progress=stop)
    assert len(S.load_state(tmp_path / "resumed")["done"]) == 9  # saved before the interruption
    resumed = sweep(tmp_path, "resumed")
    assert resumed["complete"] and len(resumed["sessions"]) == 3
    assert resumed["tally"].to_json() == whole["tally"].to_json()
    assert S.load_state(tmp_path / "resumed")["tally"].to_json() == whole["tally"].to_json()


def test_the_checkpoint_is_written_at_most_every_so_often_and_at_the_end(tmp_path, monkeypatch):
    on_disk = []
    record = lambda state, session: on_disk.append(len(S.load_state(tmp_path / "c")["done"]))  # noqa: E731
    monkeypatch.setattr(S, "CHECKPOINT_SECONDS", 0.0)  # every block
    sweep(tmp_path, "c", max_blocks=4, progress=record)
    assert on_disk == [1, 2, 3, 4]
    on_disk.clear()
    monkeypatch.setattr(S, "CHECKPOINT_SECONDS", 3600.0)  # never while running: at the end only
    state = sweep(tmp_path, "c", max_blocks=4, progress=record)
    assert on_disk == [4, 4, 4, 4] and len(S.load_state(tmp_path / "c")["done"]) == len(state["done"]) == 8


def test_shards_and_merge_equal_one_run(tmp_path):
    whole = sweep(tmp_path, "whole")
    parts = [sweep(tmp_path, f"shard{i}", shard=Shard(i, 3)) for i in (1, 2, 3)]
    assert [sorted(p["done"]) for p in parts] == [list(range(i, 16, 3)) for i in range(3)]
    merged = S.merge_states([S.load_state(tmp_path / f"shard{i}") for i in (3, 1, 2)])
    assert merged["complete"] and merged["tally"].to_json() == whole["tally"].to_json()
    with pytest.raises(S.SweepError, match="repeats block"):
        S.merge_states([parts[0], parts[0]])


# --------------------------------------------------------------------------------------
# around-beta: exactly the pairs it claims


def window(beta, k):
    """The ends of the k-step windows around +|beta| and -|beta|, stepping with nextafter."""
    top, out = np.float16(65504), []
    for centre in (abs(np.uint16(beta).view(np.float16)), -abs(np.uint16(beta).view(np.float16))):
        lo = hi = np.float16(centre)
        for _ in range(k):
            with np.errstate(over="ignore"):
                lo = max(np.nextafter(lo, np.float16(-np.inf)), -top)
                hi = min(np.nextafter(hi, np.float16(np.inf)), top)
        out.append((float(lo), float(hi)))
    return out


@pytest.mark.parametrize("beta,k", [(BETA, 3), (0x3C00, 0), (0x0001, 2), (0x7BFF, 2)])
def test_around_beta_enumerates_exactly_its_pairs(beta, k):
    subset = S.parse_subset(f"around-beta:{k}", beta)
    x1, x2 = subset.pairs(0, subset.size)
    wins = window(beta, k)

    def inside(a, b):
        with np.errstate(invalid="ignore"):  # inf - inf
            d = a.view(np.float16).astype(np.float64) - b.view(np.float16).astype(np.float64)
        return np.logical_or.reduce([(lo <= d) & (d <= hi) for lo, hi in wins])

    assert inside(x1, x2).all()
    keys = x1.astype(np.int64) << 16 | x2
    assert np.unique(keys).size == keys.size
    every = np.arange(1 << 16).astype(np.uint16)
    finite = every[(every & 0x7C00) != 0x7C00]
    rng = np.random.default_rng(8)
    sample = np.concatenate([[0, 0x8000, beta, beta | 0x8000, 0x7BFF, 0xFBFF, 0x0001],
                             rng.choice(finite, 300)]).astype(np.uint16)
    for v in sample:
        brute = finite[inside(finite, np.full(finite.size, v, np.uint16))]
        assert sorted(brute) == sorted(x1[x2 == v]), hex(v)
    assert not inside(every, np.full(every.size, 0x7C00, np.uint16)).any()  # infinite x2: nothing


def test_block_pairs_cover_the_subset_once():
    subset = S.parse_subset("all", BETA)
    x1, x2 = subset.pairs(3 * (1 << 20) - 5, 3 * (1 << 20) + 7)
    p = np.arange(3 * (1 << 20) - 5, 3 * (1 << 20) + 7)
    assert (x1 == p & 0xFFFF).all() and (x2 == p >> 16).all()
    subset = S.parse_subset("around-beta:5", 0x3C00)
    a = subset.pairs(0, subset.size)
    b = [subset.pairs(lo, min(lo + 1000, subset.size)) for lo in range(0, subset.size, 1000)]
    assert all((np.concatenate([part[i] for part in b]) == a[i]).all() for i in (0, 1))


# --------------------------------------------------------------------------------------
# the command line


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_sweep_workers_shards_merge(tmp_path, capsys):
    args = ["sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "0.7", "--subset", "around-beta:4"]
    code, first, err = cli(capsys, *args, "--workers", 2, "--out", tmp_path / "one")
    assert code == 0 and err == "" and "verdict: PASS" in first
    one = json.loads((tmp_path / "one" / "sweep.json").read_text())
    assert one["blocks"] == 2 and one["complete"] and one["summary"]["verdict"]["pass"]
    for i in (1, 2):
        code, out, _ = cli(capsys, *args, "--workers", 1, "--shard", f"{i}/2", "--out", tmp_path / f"s{i}")
        assert code == 0 and "verdict: INCOMPLETE: none rejected so far" in out and "PASS" not in out
    code, out, _ = cli(capsys, "sweep", "merge", tmp_path / "s1", "--out", tmp_path / "half")
    assert code == 1 and "incomplete: 1 blocks are in none of the inputs" in out
    code, out, _ = cli(capsys, "sweep", "merge", tmp_path / "s1", tmp_path / "s2", "--out", tmp_path / "m")
    merged = json.loads((tmp_path / "m" / "sweep.json").read_text())
    assert code == 0 and merged["complete"]
    assert merged["tally"] == one["tally"] and merged["summary"]["histogram"] == one["summary"]["histogram"]
    code, out, _ = cli(capsys, *args, "--out", tmp_path / "one")  # all done: the summary again
    assert code == 0 and out == first


def test_cli_fails_beyond_budget(tmp_path, capsys):
    # muldiv-fp16 is not an accepted model: with beta = dy = 1000 its diff * dy overflows
    # to infinity where the result is finite
    code, out, _ = cli(capsys, "sweep", "--impl", "builtin:kernel:muldiv-fp16", "--beta", "1000",
                       "--dy", "1000", "--subset", "x2=0", "--out", tmp_path / "f")
    assert code == 1 and "verdict: FAIL" in out


def test_cli_errors_exit_2_and_keep_the_checkpoint(tmp_path, capsys):
    out = tmp_path / "o"
    base = ["sweep", "--impl", "builtin:kernel", "--beta", "0.1", "--dy", "1", "--subset", "x2=0x3c00"]
    assert cli(capsys, *base, "--out", out)[0] == 0
    saved = (out / "sweep.json").read_bytes()
    (tmp_path / "file").write_text("x")
    bad = [
        (["sweep", "--impl", "builtin:kernel", "--beta", "1"], "needs --dy, --out"),
        ([*base, "--shard", "3/2", "--out", out], "--shard"),
        ([*base, "--beta", "0x3f800000", "--out", out], "does not fit a 16-bit fp16"),
        ([*base, "--dtype", "fp32", "--out", out], "fp16 only"),
        ([*base, "--impl", "nope:x", "--out", tmp_path / "n"], "unknown implementation"),
        ([*base, "--out", tmp_path / "file"], "not a folder"),
        ([*base, "--dy", "2", "--out", out], "holds another sweep: dy"),
        ([*base, "--subset", "x2=2", "--out", out], "holds another sweep: subset"),
        ([*base, "--subset", "around-beta:x", "--out", out], "K must be"),
        ([*base, "--subset", "odd", "--out", out], "unknown subset"),
        ([*base, "--beta", "inf", "--subset", "around-beta", "--out", tmp_path / "n"], "finite beta"),
        ([*base, "--platform", "ft78ne", "--out", out], "no fp16"),
        ([*base, "--workers", "0", "--out", out], "argument --workers: 0: expected 1 to"),
        (["sweep", "merge", tmp_path / "none", "--out", tmp_path / "m"], "holds no sweep.json"),
        (["sweep", "merge", out, out, "--out", tmp_path / "m"], "repeats block"),
        (["sweep", "merge", out, "--out", out], "one of the inputs"),
    ]
    for argv, message in bad:
        code, stdout, err = cli(capsys, *argv)
        assert code == 2 and err.startswith("sl1conf: error: ") and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (out / "sweep.json").read_bytes() == saved


# --------------------------------------------------------------------------------------
# sweep.json and its schema


def _state_schema() -> dict:
    from pathlib import Path

    return json.loads((Path(__file__).parent.parent / "conformance" / "schemas" / "sweep-state.schema.json").read_text())


class Crashing(KernelAdapter):
    """The kernel, except that block 3 crashes: a state with a first_failure."""

    def run(self, cases):
        if cases[0].id == "block 3":
            return [Outcome("crash", detail="signal 11")]
        return super().run(cases)


def test_every_sweep_json_written_matches_its_schema(tmp_path, capsys):
    import jsonschema  # a dependency; checked here directly, not through load_state

    schema = _state_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    sweep(tmp_path, "partial", max_blocks=3)  # a checkpoint, no summary yet
    sweep(tmp_path, "crash", adapter=Crashing())
    sweep(tmp_path, "planted", dy=0xBC00, subset="x2=0x3000", adapter=Planted())
    for i in (1, 2):
        sweep(tmp_path, f"s{i}", shard=Shard(i, 2))
    assert cli(capsys, "sweep", "merge", tmp_path / "s1", tmp_path / "s2", "--out", tmp_path / "merged")[0] == 0
    assert cli(capsys, "sweep", "--impl", "builtin:kernel:muldiv-fp16", "--beta", "1000", "--dy", "1000",
               "--subset", "x2=0", "--out", tmp_path / "fails")[0] == 1
    assert cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta=-1", "--dy", "1", "--subset", "x2=0x3c00",
               "--max-blocks", "1", "--out", tmp_path / "open")[0] == 0
    docs = {p.parent.name: json.loads(p.read_text()) for p in tmp_path.glob("*/sweep.json")}
    assert len(docs) == 8
    for doc in docs.values():
        jsonschema.validate(doc, schema)
    assert docs["crash"]["tally"]["first_failure"]["status"] == "crash"
    assert set(docs["planted"]["tally"]["requirements"]) == {"R01", "R03", "R05"}
    assert docs["fails"]["summary"]["verdict"]["pass"] is False and "summary" not in docs["partial"]
    assert "beta < 0" in docs["open"]["summary"]["verdict"]["open_answers"]


def test_a_hand_edited_sweep_json_is_one_line_naming_it(tmp_path, capsys):
    base = ["sweep", "--impl", "builtin:kernel", "--beta", "0.1", "--dy", "1", "--subset", "x2=0x3c00",
            "--max-blocks", "1"]
    assert cli(capsys, *base, "--out", tmp_path / "o")[0] == 0
    path = tmp_path / "o" / "sweep.json"
    state = json.loads(path.read_text())
    state["tally"]["elements"] = "many"  # a wrong type in a required field
    path.write_text(json.dumps(state))
    saved = path.read_bytes()
    for argv in ([*base, "--out", tmp_path / "o"], ["sweep", "merge", tmp_path / "o", "--out", tmp_path / "m"]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith(f"sl1conf: error: {path}: does not match the schema at tally/elements: "), err
    assert path.read_bytes() == saved and not (tmp_path / "m").exists()
    with pytest.raises(S.SweepError, match=f"format is 'sl1conf-sweep/0', not {S.STATE_FORMAT}"):
        path.write_text(json.dumps({**state, "format": "sl1conf-sweep/0"}))
        S.load_state(tmp_path / "o")


def test_a_sweep_json_that_would_not_match_is_a_bug_and_is_not_written(tmp_path):
    state = sweep(tmp_path, "s", max_blocks=1)
    saved = (tmp_path / "s" / S.STATE_FILE).read_bytes()
    with pytest.raises(RuntimeError, match="does not match the schema at shards/0"):
        S.save_state(tmp_path / "s", {**state, "shards": [1]})
    assert (tmp_path / "s" / S.STATE_FILE).read_bytes() == saved


class TailNudge(Adapter):
    """The exact kernel with the last n mod 16 elements of every call one step up: every
    element within the budget on its own, but its bits depend on its position (R18)."""

    name = "tail-nudge"
    dtypes = ("fp16",)

    def __init__(self):
        self.inner = KernelAdapter("muldiv-fp64")

    def run_case(self, case):
        out = self.inner.run([case])[0].out.copy()
        n = case.elements_written
        tail = np.arange(out.size) >= n - n % 16
        finite = (out & 0x7C00) != 0x7C00
        out[tail & finite & (np.arange(out.size) < n)] += np.uint16(1)
        return Outcome("ok", out=out)


def test_a_position_dependent_implementation_fails_r18_in_the_sweep(tmp_path):
    """Blocks of 4096 (no tail for widths up to 64); the block's last 63 elements, moved into a
    call of their own, land in a tail and change: R18 rejects them, as certify and fuzz do."""
    state = sweep(tmp_path, "tail", subset="x2=0x3000", adapter=TailNudge())
    v = S.verdict(state["tally"], load_profile("ieee"))
    assert not v["pass"] and set(v["requirements"]) == {"R18"} and v["requirements"]["R18"]["elements"] > 0
    clean = sweep(tmp_path, "clean", subset="x2=0x3000")
    assert S.verdict(clean["tally"], load_profile("ieee"))["pass"]


def test_submitted_keeps_at_most_in_flight_and_cancels_the_rest():
    """distributed.submitted (what --scheduler runs the blocks through): every item once, never
    more than in_flight submitted and unfinished, and what is pending cancelled on close."""
    import concurrent.futures as cf
    import threading
    import time

    from sl1conf.conformance.search.distributed import submitted

    class Spy(cf.ThreadPoolExecutor):
        def submit(self, *a, **kw):
            self.made = getattr(self, "made", []) + [super().submit(*a, **kw)]
            return self.made[-1]

    running, most, lock = [0], [0], threading.Lock()

    def work(k):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.002)
        with lock:
            running[0] -= 1
        return k

    with Spy(8) as pool:
        assert sorted(f.result() for f in submitted(pool, work, ((k,) for k in range(40)), 3)) == list(range(40))
    assert most[0] <= 3 and len(pool.made) == 40
    gates = [threading.Event() for _ in range(10)]
    with Spy(1) as pool:  # one thread: item 0 runs, 1 and 2 wait in the queue
        futures = submitted(pool, lambda k: gates[k].wait(5) and k, ((k,) for k in range(10)), 3)
        gates[0].set()
        assert next(futures).result() == 0
        futures.close()
        for g in gates:
            g.set()
    assert len(pool.made) == 3 and pool.made[2].cancelled()


@pytest.mark.parametrize("older", ["sl1conf-sweep/2", "sl1conf-sweep/3"])
def test_an_older_format_is_refused_naming_why(tmp_path, capsys, older):
    """Format 4 changed what R01's rounding-bias counts hold (the deviations an allowed evaluation
    gives are left out), so a checkpoint of an older format would mix counts judged by two rules:
    resuming it is refused, one line naming the file and why, exit 2, the file untouched."""
    base = ["sweep", "--impl", "builtin:kernel:muldiv-fp16", "--beta", "0.1", "--dy", "0.3", "--subset", "x2=0x3c00",
            "--max-blocks", "1", "--out", tmp_path / "o"]
    assert cli(capsys, *base)[0] in (0, 1)
    path = tmp_path / "o" / "sweep.json"
    old = json.loads(path.read_text())
    old["format"] = older
    path.write_text(json.dumps(old))
    before = path.read_bytes()
    code, out, err = cli(capsys, *base)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "judged by other rules" in err and str(path) in err
    assert path.read_bytes() == before

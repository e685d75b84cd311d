"""sl1conf fuzz: batches by seed, the shrinker, and planted defects found, minimized and saved.

The planted defects live in a small C library built here (as tests/test_certify.py builds its
own): one returns -dy where diff is just above beta, one returns dy for the last element of a
length-13 call; and in :class:`BoundaryNudge`, the kernel one ULP off only where the exact
diff is +-beta (within the ULP budget: only R02's rule catches it). What the fuzzer must find
is computed here from the defect's own rule, never copied from the fuzzer's output.
"""

from __future__ import annotations

import json
import time
from fractions import Fraction

import numpy as np
import pytest

from sl1conf.adapters.base import Adapter, Capabilities, Case, Outcome
from sl1conf.adapters.builtin import KernelAdapter
from sl1conf.adapters.cbuild import build_shared
from sl1conf.conformance.search import fuzz as Z
from sl1conf.reference import exact as X
from sl1conf.conformance.cli import main
from sl1conf.conformance.search.minimize import minimize, simpler_patterns, take
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.vectors.store import load as load_vectors
from sl1conf.reference import formats as F

DEFECTS = r"""
static void body(const float *dy, float *dx1, const float *x1, const float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i], r;
        if (d > beta)
            r = (NEAR && d < beta * NEAR_FACTOR) ? -dy[i] : dy[i];
        else if (d < -beta)
            r = -dy[i];
        else {
            float q = d / beta;
            r = q * dy[i];
        }
        if (TAIL && n == TAIL && i == TAIL - 1)
            r = dy[i];
        dx1[i] = r;
    }
}
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int length, float beta)
{ body(dy, dx1, x1, x2, length, beta); }
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int length, float beta, int core_mask)
{ if (core_mask) body(dy, dx1, x1, x2, length, beta); }
"""
NEAR_FACTOR = 1.0078125  # wrong (-dy) for beta < diff < beta * NEAR_FACTOR
TAIL = 13  # wrong (dy) for the last element of a call of this length


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    src = tmp_path_factory.mktemp("defects") / "defects.c"
    src.write_text(DEFECTS)
    near = build_shared("fuzz-near", [src], ["-DNEAR=1", f"-DNEAR_FACTOR={NEAR_FACTOR}f", "-DTAIL=0"])
    tail = build_shared("fuzz-tail", [src], ["-DNEAR=0", "-DNEAR_FACTOR=1.0f", f"-DTAIL={TAIL}"])
    return {"near": f"ctypes:{near}", "tail": f"ctypes:{tail}"}


def exact_boundary(case: Case) -> np.ndarray:
    """Elements whose exact x1 - x2 is +beta or -beta (beta positive, finite): Fractions, on
    the elements whose binary64 diff says so (an exact +-beta always rounds to itself)."""
    _, x1, x2, beta = case.floats()
    hit = np.zeros(case.n, bool)
    if not 0 < float(beta) < np.inf:
        return hit
    b = Fraction(float(beta))
    with np.errstate(all="ignore"):
        near = np.flatnonzero(np.abs(x1.astype(np.float64) - x2.astype(np.float64)) == float(beta))
    for i in near.tolist():
        hit[i] = abs(Fraction(float(x1[i])) - Fraction(float(x2[i]))) == b
    return hit


class BoundaryNudge(Adapter):
    """The kernel with the last bit of the result flipped (one ULP) where the exact diff is
    +-beta: a boundary-only defect inside every profile's ULP budget."""

    name = "planted:boundary"
    capabilities = Capabilities(in_place=True, core_masks=None)

    def __init__(self, rest: str = ""):
        self.kernel = KernelAdapter()

    def run_case(self, case: Case) -> Outcome:
        o = self.kernel.run([case])[0]
        w, fmt = case.elements_written, case.format
        out = o.out.copy()
        nan = ((out[:w] & fmt.exp_mask) == fmt.exp_mask) & ((out[:w] & fmt.frac_mask) != 0)
        out[:w] = np.where(exact_boundary(case)[:w] & ~nan, out[:w] ^ 1, out[:w])
        return Outcome("ok", out=out)


def register_planted() -> None:
    """Make ``planted:boundary`` an implementation name (this process only)."""
    import sl1conf.adapters as A

    A._BUILTIN_PREFIXES["planted"] = BoundaryNudge


@pytest.fixture
def planted(monkeypatch):
    import sl1conf.adapters as A

    monkeypatch.setitem(A._BUILTIN_PREFIXES, "planted", BoundaryNudge)
    return "planted:boundary"


def fuzz_cli(capsys, *argv):
    code = main(["fuzz", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def certify_code(capsys, tmp_path, impl, vectors, dtype="fp32") -> int:
    code = main(["certify", "--impl", impl, "--platform", "ieee", "--dtype", dtype, "--vectors", str(vectors),
                 "--out", str(tmp_path / "report")])
    capsys.readouterr()
    return code


def failed_requirements(tmp_path) -> set:
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    return {r["id"] for run in report["runs"] for r in run["requirements"] if r["status"] == "fail"}


# ------------------------------------------------------------------ seeds and batches

def test_batch_seed_is_the_kth_child_of_the_campaign_seed():
    for seed, k in ((0, 0), (7, 3), (2**40 + 1, 123)):
        child = np.random.SeedSequence(seed).spawn(k + 1)[k]
        assert (Z.batch_seed(seed, k).generate_state(8) == child.generate_state(8)).all()
    assert (Z.batch_seed(1, 2).generate_state(4) != Z.batch_seed(1, 3).generate_state(4)).any()


def test_a_batch_is_a_pure_function_of_seed_and_index():
    profile = load_profile("ieee")
    camp = Z.Campaign("builtin:kernel", "ieee", ("fp16", "fp32"), ("s", "p"), seed=11, batch_elements=512)
    a, b, c = (Z.make_batch(camp, profile, k) for k in (5, 5, 6))
    assert len(a) == len(b) and all(
        (x.dy == y.dy).all() and (x.x1 == y.x1).all() and (x.x2 == y.x2).all()
        and (x.beta, x.variant, x.core_mask, x.dtype) == (y.beta, y.variant, y.core_mask, y.dtype)
        for x, y in zip(a, b))
    assert any(x.n != y.n or (x.dy != y.dy).any() for x, y in zip(a, c))
    lengths = {(x.dtype, x.variant): [] for x in a}
    for x in a:
        lengths[(x.dtype, x.variant)].append(x.n)
    for ns in lengths.values():  # every tail length, a long case, random longer ones
        assert set(Z.TAIL_LENGTHS) <= set(ns) and max(ns) > 400
    assert all(x.core_mask & ~profile.core_mask == 0 and x.core_mask for x in a)


def test_shards_split_the_batches_disjointly():
    camp = lambda shard: Z.Campaign("builtin:kernel", "ieee", ("fp32",), ("p",), 1, batches=11, shard=shard)  # noqa: E731
    parts = [list(Z.batch_indices(camp(f"{i}/3"))) for i in (1, 2, 3)]
    assert sorted(sum(parts, [])) == list(range(11))
    assert list(Z.batch_indices(camp("1/1"))) == list(range(11))


# ------------------------------------------------------------------ the shrinker

def test_simpler_patterns_are_strictly_simpler_so_shrinking_ends():
    fmt = F.FP32
    rng = np.random.default_rng(0)
    for bits in [*rng.integers(0, 1 << 32, 200).tolist(), 0x3F800000, 0x7F800000, 0]:
        seen, current = 0, bits
        while True:  # following the first candidate each time must stop
            cands = simpler_patterns(fmt, current, (0x3F800000, 0))
            if not cands:
                break
            current, seen = cands[0], seen + 1
            assert seen < 100
    assert simpler_patterns(fmt, 0x3F800000, (0x3F800000,)) == []


def _case(n, fill=0x3F800000):
    return Case("fp32", np.full(n, fill, np.uint32), np.arange(n, dtype=np.uint32) + 0x40000000,
                np.full(n, 0x3E000000, np.uint32), 0x3F800000)


class _Found:
    def __init__(self, element):
        self.element = element


def test_minimize_keeps_a_length_dependent_failure_at_its_length_and_its_element_last():
    """A defect of the 13th element of length-13 calls, found in a long call: 13 elements,
    the failing one last, the others replaced by the filler."""
    marked = 0x40000000 + 500

    def fails(case):
        hit = np.flatnonzero(case.x1 == marked)
        return _Found(int(hit[0])) if case.n == 13 and hit.size and hit[0] == 12 else None

    big = _case(1000)
    small, found = minimize(take(big, range(488, 501)), _Found(12), fails, 12)
    assert small.n == 13 and found.element == 12 and small.x1[12] == marked
    assert (small.x1[:12] == 0).all() and (small.dy[:12] == 0x3F800000).all()


def test_minimize_shrinks_a_value_failure_to_one_simple_element():
    def fails(case):  # fails wherever x1 > 100 (as a float)
        x1 = case.x1.view(np.float32)
        hit = np.flatnonzero(x1 > 100)
        return _Found(int(hit[0])) if hit.size else None

    case = _case(300)
    case.x1[217] = np.array([123.456], np.float32).view(np.uint32)[0]
    small, found = minimize(case, _Found(217), fails, 217)
    x1 = float(small.x1.view(np.float32)[0])
    assert small.n == 1 and found.element == 0 and 100 < x1 <= 128
    # simplest: no significant bit beyond what x1 > 100 needs, dy 1.0, x2 0, beta 1.0
    assert bin(int(small.x1[0]) & 0x7FFFFF).count("1") <= 3
    assert (int(small.dy[0]), int(small.x2[0]), small.beta) == (0x3F800000, 0, 0x3F800000)


def _fp16(beta, x1=0, x2=0, dy=0x3C00, n=1):
    return Case("fp16", np.full(n, dy, np.uint16), np.full(n, x1, np.uint16), np.full(n, x2, np.uint16), beta)


def test_minimize_makes_beta_canonical_so_one_defect_is_saved_once():
    """One defect seen with four subnormal betas minimizes to one case: beta the smallest
    subnormal (1.0 does not fail); a boundary element moves with beta (x1 = beta stays)."""
    def subnormal_beta(case):  # NaN for dy = 1, x1 = x2 = 0 and any subnormal beta
        x = np.flatnonzero((case.x1 == 0) & (case.x2 == 0))
        return _Found(int(x[0])) if 0 < case.beta < 0x0400 and x.size else None

    results = set()
    for beta in (0x0020, 0x0080, 0x0001, 0x0040, 0x03FF):
        small, found = minimize(_fp16(beta, n=5), _Found(3), subnormal_beta, 3)
        results.add((small.n, small.beta, small.dy.tobytes(), small.x1.tobytes(), small.x2.tobytes()))
    assert results == {(1, 0x0001, b"\x00\x3c", b"\0\0", b"\0\0")}

    def on_boundary(case):  # fails where x1 - x2 == beta exactly, for beta above 0.5
        hit = np.flatnonzero(exact_boundary(case))
        return _Found(int(hit[0])) if hit.size and case.beta > 0x3800 else None

    small, _ = minimize(_fp16(0x399A, x1=0x399A, dy=0xFBFF), _Found(0), on_boundary, 0)
    assert (small.beta, int(small.x1[0]), int(small.x2[0]), int(small.dy[0])) == (0x3C00, 0x3C00, 0, 0x3C00)


def test_give_up_ends_minimizing_after_the_window():
    calls = []

    def fails(case):
        calls.append(case.n)
        return _Found(0) if case.n == 1 or case.x1[0] == 0x40000000 + 7 else None

    small, _ = minimize(_case(1000), _Found(7), fails, 7, give_up=lambda: True)
    assert small.n == 1 and small.x1[0] == 0x40000000 + 7 and len(calls) == 1  # the window only


# ------------------------------------------------------------------ the boundary rule (R02)

def test_at_boundary_is_the_exact_diff_not_a_rounded_one():
    profile = load_profile("ieee")
    for dtype in ("fp16", "fp32"):
        camp = Z.Campaign("builtin:kernel", "ieee", (dtype,), ("p",), seed=3, batch_elements=2048)
        hits = 0
        for case in Z.make_batch(camp, profile, 0) + Z.make_batch(camp, profile, 1):
            want = exact_boundary(case)
            assert (X.at_boundary(case.format, case.x1, case.x2, case.beta) == want).all()
            hits += int(want.sum())
        assert hits > 100  # the batches put elements on the boundary often
    one, tiny = 0x3F800000, int(np.array([-(2.0 ** -100)], np.float32).view(np.uint32)[0])
    # 1 - (-2^-100) rounds to 1.0 in binary64, but is not 1.0
    assert X.at_boundary(F.FP32, np.array([one, one], np.uint32), np.array([tiny, 0], np.uint32), one).tolist() \
        == [False, True]
    for beta in (0xBF800000, 0x7F800000, 0x7FC00000, 0):  # beta <= 0, inf, NaN: not R02's
        assert not X.at_boundary(F.FP32, np.array([beta & 0x7FFFFFFF]), np.array([0]), beta).any()


def test_a_result_within_the_budget_but_not_dy_on_the_boundary_is_a_finding():
    """The reviewer's case: recipmul-fp16 gives 0xfbfe for dy = 0xfbff at diff == beta."""
    from sl1conf.adapters import load

    case = _fp16(0x399A, x1=0x399A, dy=0xFBFF)
    profile = load_profile("ieee")
    with load("builtin:model:recipmul-fp16") as model, load("builtin:kernel") as kernel:
        assert model.run([case])[0].out[0] == 0xFBFE
        [f] = Z.check_cases(model, profile, [case])
        assert f.kind == "element" and f.key[4] == Z.BOUNDARY
        assert Z.check_cases(kernel, profile, [case]) == []


# ------------------------------------------------------------------ planted defects, end to end

def test_a_boundary_only_defect_is_found_in_seconds_and_fails_certify_r02(planted, capsys, tmp_path):
    out = tmp_path / "boundary"
    t0 = time.monotonic()
    code, text, _ = fuzz_cli(capsys, "--impl", planted, "--platform", "ieee", "--variant", "p",
                             "--batch-elements", "8192", "--elements", "16000", "--seed", "2", "--out", str(out))
    assert code == 1 and time.monotonic() - t0 < 60, text  # seconds on an idle machine
    saved = _summary(out)["saved"]
    assert {e["dtype"] for e in saved} == {"fp16", "fp32"} and all("/boundary/" in e["key"] for e in saved)
    for dtype in ("fp16", "fp32"):
        vs = load_vectors(out / f"vectors-{dtype}")
        assert {vs.family(r["family"])["name"] for r in vs.manifest["cases"]} == {"boundary-exact"}
        for e in (e for e in saved if e["dtype"] == dtype):
            row = next(r for r in vs.manifest["cases"] if r["id"] == e["cases"][0])
            vc = vs.case(row)
            case = Case(dtype, vc.dy, vc.x1, vc.x2, vc.beta)
            assert e["length"] == 1 and exact_boundary(case)[e["element"]] and e["got"] != e["expected"]
        assert certify_code(capsys, tmp_path, planted, out / f"vectors-{dtype}", dtype) == 1
        # R02 everywhere; where the exact result is infinite, the flipped bit makes it a NaN,
        # which R04 (NaN and infinity) and R01 (beyond any budget) reject too, and R06 where an
        # input of that element (beta included) is subnormal
        special = any(e["dtype"] == dtype and "/special/" in e["key"] and F.is_nan_bits(
            F.format_by_name(dtype), np.array([int(e["got"], 16)])).all() for e in saved)
        assert all(e["key"].startswith("R02/") for e in saved)
        failed = failed_requirements(tmp_path)
        assert {"R02"} <= failed <= {"R01", "R02", "R04", "R06"} and ("R04" in failed) == special
        assert certify_code(capsys, tmp_path, "builtin:kernel", out / f"vectors-{dtype}", dtype) == 0



def test_a_near_beta_defect_is_found_minimized_saved_and_fails_certify(libs, capsys, tmp_path):
    out = tmp_path / "near"
    code, text, _ = fuzz_cli(capsys, "--impl", libs["near"], "--platform", "ieee", "--dtype", "fp32",
                             "--elements", "30000", "--batch-elements", "4096", "--seed", "7", "--out", str(out))
    assert code == 1, text
    summary = json.loads((out / "summary.json").read_text())
    saved = summary["saved"]
    # a handful: one per requirement (R01; R06 where subnormals are involved; R04 where dy is infinite,
    # -dy being the other infinity; R05 where dy is a zero, -dy the other zero), variant, short or
    # long call and value class: at most 2 x 2 x 4 requirement-class pairs that can occur
    assert saved and len(saved) <= 16 and "sl1conf explain --dtype fp32" in text and "certify:" in text
    vs = load_vectors(out / "vectors-fp32")
    for entry in saved:
        assert entry["kind"] == "element" and entry["length"] == 1
        row = next(r for r in vs.manifest["cases"] if r["id"] == entry["cases"][0])
        vc = vs.case(row)
        x1, x2 = vc.x1.view(np.float32).astype(np.float64), vc.x2.view(np.float32).astype(np.float64)
        beta = float(np.array([vc.beta], np.uint32).view(np.float32)[0])
        d = np.float32(x1[0] - x2[0])  # the library's rounded diff
        assert beta < d < np.float32(beta * NEAR_FACTOR)  # the defect's own trigger
        assert entry["got"] != entry["expected"]
    assert certify_code(capsys, tmp_path, libs["near"], out / "vectors-fp32") == 1
    assert certify_code(capsys, tmp_path, "builtin:sample", out / "vectors-fp32") == 0
    assert certify_code(capsys, tmp_path, "builtin:kernel", out / "vectors-fp32") == 0


def test_a_length_13_tail_defect_is_saved_at_length_13(libs, capsys, tmp_path):
    out = tmp_path / "tail"
    code, text, _ = fuzz_cli(capsys, "--impl", libs["tail"], "--platform", "ieee", "--dtype", "fp32", "--variant", "p",
                             "--elements", "8192", "--batch-elements", "1024", "--seed", "3", "--out", str(out))
    assert code == 1, text
    saved = json.loads((out / "summary.json").read_text())["saved"]
    assert saved and all(e["length"] == TAIL and e["element"] == TAIL - 1 for e in saved)
    assert certify_code(capsys, tmp_path, libs["tail"], out / "vectors-fp32") == 1
    assert certify_code(capsys, tmp_path, "builtin:sample", out / "vectors-fp32") == 0


def test_a_crash_is_a_failure_saved_as_a_vector(capsys, tmp_path):
    from sl1conf.adapters.sample import defects

    length = defects()["SEGV"][1]
    out = tmp_path / "segv"
    code, text, _ = fuzz_cli(capsys, "--impl", "builtin:sample:SEGV", "--platform", "ieee", "--dtype", "fp32",
                             "--variant", "p", "--elements", "100", "--batch-elements", "64", "--seed", "1",
                             "--out", str(out))
    assert code == 1, text
    saved = json.loads((out / "summary.json").read_text())["saved"]
    assert [(e["kind"], e["length"]) for e in saved] == [("crash", length)]
    code = main(["certify", "--impl", "builtin:sample:SEGV", "--platform", "ieee", "--dtype", "fp32",
                 "--variant", "p", "--vectors", str(out / "vectors-fp32"), "--out", str(tmp_path / "r")])
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert code == 1 and next(r for r in report["runs"][0]["requirements"] if r["id"] == "R13")["status"] == "fail"


def test_replay_runs_a_recorded_batch_again(libs, capsys, tmp_path):
    out = tmp_path / "near"
    fuzz_cli(capsys, "--impl", libs["near"], "--platform", "ieee", "--dtype", "fp32", "--variant", "p",
             "--elements", "8192", "--batch-elements", "4096", "--seed", "5", "--out", str(out))
    summary = json.loads((out / "summary.json").read_text())
    found = summary["saved"][0]["found"]
    code, text, _ = fuzz_cli(capsys, "replay", str(out), "--batch", str(found["batch"]))
    assert code == 1 and f"element case {found['case']} " in text and f"element {found['element']})" in text
    code, text, _ = fuzz_cli(capsys, "replay", str(out), "--batch", str(found["batch"]), "--impl", "builtin:kernel")
    assert code == 0 and "0 finding(s)" in text


# ------------------------------------------------------------------ shards, merge, workers, Dask

DEFECT = ("--impl", "builtin:model:recipmul-fp16", "--platform", "ieee", "--dtype", "fp16", "--variant", "p",
          "--batch-elements", "2048", "--seed", "9", "--elements", "10000")


def _summary(folder):
    return json.loads((folder / "summary.json").read_text())


def _batches(s):
    return [k for a, b, c in s["batches"]["ranges"] for k in range(a, b, c)]


def test_two_shards_merged_equal_the_whole_campaign(capsys, tmp_path):
    for shard in ("1/2", "2/2", "1/1"):
        fuzz_cli(capsys, *DEFECT, "--shard", shard, "--out", str(tmp_path / shard.replace("/", "of")))
    one, two, whole = (_summary(tmp_path / n) for n in ("1of2", "2of2", "1of1"))
    assert not set(_batches(one)) & set(_batches(two))
    code, text, err = fuzz_cli(capsys, "merge", str(tmp_path / "1of2"), str(tmp_path / "2of2"),
                               "--out", str(tmp_path / "merged"))
    merged = _summary(tmp_path / "merged")
    assert code == 1 and merged["shards"] == ["1/2", "2/2"], err
    assert sorted(_batches(merged)) == sorted(_batches(one) + _batches(two)) == _batches(whole)
    assert merged["elements"] == one["elements"] + two["elements"] == whole["elements"]
    # element findings add up; the rounding-bias test is judged once, over the merged counts
    bias = lambda s: sum("/rounding-bias/" in k for k in s["failures"]["keys"])  # noqa: E731
    assert merged["failures"]["findings"] - bias(merged) == (one["failures"]["findings"] - bias(one)
                                                            + two["failures"]["findings"] - bias(two))
    assert merged["rounding_bias"] == whole["rounding_bias"]
    # the evidence per requirement: every rejected element of both shards, the worst of all, as one run gives it
    assert merged["requirements"] == whole["requirements"] and whole["requirements"]["R01"]["elements"] > 0
    assert all(merged["requirements"][r]["elements"] == sum(s["requirements"].get(r, {"elements": 0})["elements"]
                                                            for s in (one, two)) for r in merged["requirements"])
    worst = merged["requirements"]["R01"]["worst"]
    assert worst["ulp_value"] == max(s["requirements"]["R01"]["worst"]["ulp_value"] for s in (one, two)
                                     if "R01" in s["requirements"])
    assert set(merged["failures"]["keys"]) == set(whole["failures"]["keys"])
    element_keys = lambda s: {k for k in s["failures"]["keys"] if "/rounding-bias/" not in k}  # noqa: E731
    assert element_keys(merged) == element_keys(one) | element_keys(two)
    vs = load_vectors(tmp_path / "merged" / "vectors-fp16")
    assert len(vs.manifest["cases"]) == sum(len(e["cases"]) for e in merged["saved"]) >= 1
    # merging a shard twice, or another campaign, is refused
    code, _, err = fuzz_cli(capsys, "merge", str(tmp_path / "1of2"), str(tmp_path / "1of2"), "--out",
                            str(tmp_path / "m2"))
    assert code == 2 and "merged twice" in err
    code, _, err = fuzz_cli(capsys, "merge", str(tmp_path / "1of2"), str(tmp_path / "1of1"), "--out",
                            str(tmp_path / "m3"))
    assert code == 2 and "another campaign" in err


def _same_results(a, b):
    keys = ("batches", "elements", "cases", "failures", "requirements")
    assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
    assert [(e["key"], e["cases"], e.get("x1")) for e in a["saved"]] == [(e["key"], e["cases"], e.get("x1"))
                                                                          for e in b["saved"]]


def test_a_dask_local_cluster_campaign_gives_the_local_results(capsys, tmp_path):
    distributed = pytest.importorskip("distributed")
    fuzz_cli(capsys, *DEFECT, "--out", str(tmp_path / "local"))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        code, text, err = fuzz_cli(capsys, *DEFECT, "--scheduler", cluster.scheduler_address,
                                   "--out", str(tmp_path / "dask"))
    assert code == 1, err
    local, dask = _summary(tmp_path / "local"), _summary(tmp_path / "dask")
    assert dask["scheduler"] and local["scheduler"] is None
    _same_results(local, dask)


def test_local_worker_processes_give_the_same_results(capsys, tmp_path):
    fuzz_cli(capsys, *DEFECT, "--out", str(tmp_path / "one"))
    code, _, err = fuzz_cli(capsys, *DEFECT, "--workers", "2", "--out", str(tmp_path / "two"))
    assert code == 1, err
    _same_results(_summary(tmp_path / "one"), _summary(tmp_path / "two"))


def test_the_kernel_is_clean_and_fast(capsys, tmp_path):
    code, text, _ = fuzz_cli(capsys, "--impl", "builtin:kernel", "--platform", "ieee", "--seconds", "2",
                             "--seed", "4", "--out", str(tmp_path / "k"))
    s = _summary(tmp_path / "k")
    assert code == 0 and s["failures"]["distinct"] == 0 and not (tmp_path / "k" / "vectors-fp32").exists(), text
    assert s["elements"] > 0 and s["elements_per_second"] > 100_000  # a loaded 2-core machine: far below a real figure
    assert set(s["implementation"]) >= {"adapter"} and s["campaign"]["seed"] == 4


def test_a_position_dependent_library_is_found_under_r18():
    """A library whose last n mod 16 elements use another accepted order ((d * dy) / beta in
    float against (d / beta) * dy in the body, as torch's CPU fp32 kernel does): every element
    is acceptable on its own, but the fuzzer's moved-tail call shows the bits depend on the
    position (R18), and an honest kernel shows nothing."""
    from sl1conf.adapters import load
    from sl1conf.adapters.base import ArrayFunction

    def tail_order(dy, x1, x2, beta):
        with np.errstate(all="ignore"):
            d, b = (x1 - x2).astype(np.float32), np.float32(beta)
            body, tail = (d / b) * dy, (d * dy) / b
            mid = np.where(np.arange(d.size) >= d.size - d.size % 16, tail, body)
            return np.where(d > b, dy, np.where(d < -b, -dy, mid)).astype(np.float32)

    rng = np.random.default_rng(5)
    n = 1000  # 1000 mod 16 = 8: the last 8 elements are the tail
    x2 = rng.standard_normal(n).astype(np.float32)
    x1 = (x2 + rng.uniform(-0.7, 0.7, n)).astype(np.float32)
    dy = rng.standard_normal(n).astype(np.float32) * np.float32(3.3)
    case = Case("fp32", dy.view(np.uint32), x1.view(np.uint32), x2.view(np.uint32),
                int(np.float32(0.7).view(np.uint32)), id="0.0")
    profile = load_profile("ieee")
    findings = Z.check_cases(ArrayFunction("tail-order", tail_order, ("fp32",)), profile, [case])
    position = [f for f in findings if f.kind == "position"]
    assert [f.requirement for f in position] == ["R18"] and position[0].element >= n - 8, findings
    with load("builtin:kernel") as kernel:
        assert Z.check_cases(kernel, profile, [case]) == []

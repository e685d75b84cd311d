"""sl1conf certify: honest implementations pass every profile, each defect fails its requirement."""

from __future__ import annotations

import json

import pytest

from sl1conf.adapters.sample import build_library
from sl1conf.conformance.cli import main
from sl1conf.conformance.rules.profiles import builtin_profiles, load_profile
from sl1conf.conformance.requirements import CATALOG
from sl1conf.reference.models import ACCEPTED, get_model


def certify(capsys, tmp_path, *argv):
    out = tmp_path / "report"
    code = main(["certify", *argv, "--quick", "--out", str(out)])
    text, err = capsys.readouterr()
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    return code, text, err, report


def failed(report) -> set:
    return {r["id"] for run in report["runs"] for r in run["requirements"] if r["status"] == "fail"}


@pytest.mark.parametrize("platform", builtin_profiles())
def test_the_kernel_passes_every_profile(platform, capsys, tmp_path):
    code, text, _, report = certify(capsys, tmp_path, "--impl", "builtin:kernel", "--platform", platform)
    assert code == 0 and report["verdict"] == "pass", text
    profile = load_profile(platform)
    assert {(r["dtype"], r["variant"]) for r in report["runs"]} == {
        (d, v) for d in profile.dtypes for v in profile.variants}
    for run in report["runs"]:
        assert [r["id"] for r in run["requirements"]] == [r.id for r in CATALOG]
        r01 = run["requirements"][0]
        assert r01["checked"] > 30_000 and r01["failed"] == 0 and r01["families"]


@pytest.mark.parametrize("model, platform", [
    (m, p) for p in builtin_profiles() for m in ACCEPTED
    if any(get_model(m).applies_to(d) for d in load_profile(p).dtypes)])
def test_every_accepted_model_passes_every_profile_but_where_it_overflows(model, platform, capsys, tmp_path):
    """Each accepted model passes wherever the profile accepts what it does: its rounding always, its
    overflow only where error_model.overflow lists the intermediate (issue 40). On fp32 data, by hand:
    muldiv-fp32 makes diff * dy (up to 2 FLT_MAX * FLT_MAX) infinite where diff * dy / beta is finite
    (x1 - x2 = 1e30, dy = 1e10, beta = 2e30: 1e40 > FLT_MAX), which no built-in profile accepts;
    recipmul-fp32 makes 1 / beta infinite for a beta below 1 / FLT_MAX (a subnormal beta), which the
    DSP profiles accept and ieee does not. On fp16 data neither overflows in fp32 (|diff * dy| <=
    131008 * 65504 < 2^33; 1 / 2^-24 = 2^24), and divmul's diff / beta is at most 1 on the middle line."""
    profile = load_profile(platform)
    dtypes = [d for d in profile.dtypes if get_model(model).applies_to(d)]
    args = [a for d in dtypes for a in ("--dtype", d)]
    code, text, _, report = certify(capsys, tmp_path, "--impl", f"builtin:model:{model}", "--platform", platform,
                                    *args, "--variant", "p")
    overflows = {"muldiv-fp32": "diff * dy", "recipmul-fp32": "1 / beta"}.get(model)
    if "fp32" in dtypes and overflows and overflows not in profile.error_model.overflow:
        fp32 = next(r for r in report["runs"] if r["dtype"] == "fp32")
        assert code == 1 and "R03" in {r["id"] for r in fp32["requirements"] if r["status"] == "fail"}, text
        assert all(r["verdict"] == "pass" for r in report["runs"] if r["dtype"] != "fp32"), text
        assert f"{overflows} overflows" in text, text
    else:
        assert code == 0, text


@pytest.mark.parametrize("model, requirement", [("muldiv-fp16", "R03"), ("recipmul-fp16", "R03")])
def test_native_half_orders_that_overflow_fail(model, requirement, capsys, tmp_path):
    code, text, _, report = certify(capsys, tmp_path, "--impl", f"builtin:model:{model}", "--platform", "ieee",
                                    "--dtype", "fp16", "--variant", "p")
    assert code == 1 and requirement in failed(report), text


def test_the_sample_library_passes_through_ctypes(capsys, tmp_path):
    code, text, _, report = certify(capsys, tmp_path, "--impl", f"ctypes:{build_library()}", "--platform", "ieee")
    assert code == 0, text
    assert report["implementation"]["sha256"] and len(report["runs"]) == 4


@pytest.mark.parametrize("bug, requirement", [
    ("SEGV", "R13"), ("HANG", "R13"), ("WRITE_PAST_END", "R10"), ("READ_PAST_END", "R11"),
    ("CLOBBER_INPUT", "R12"), ("READ_BEFORE_START", "R11"),
])
def test_each_defect_fails_its_requirement(bug, requirement, capsys, tmp_path):
    lib = build_library(bug=bug)
    code, text, _, report = certify(capsys, tmp_path, "--impl", f"ctypes:{lib}?timeout=2", "--platform", "ieee",
                                    "--dtype", "fp32", "--variant", "p")
    assert code == 1 and requirement in failed(report), text
    entry = next(r for r in report["runs"][0]["requirements"] if r["id"] == requirement)
    assert entry["failed"] >= 1 and entry["examples"][0]["case"]
    if bug == "READ_BEFORE_START":  # named for the case whose length triggers it, with the array
        assert entry["examples"][0]["detail"].startswith("read before the start of x1"), entry


def test_an_implementation_returning_dy_fails_accuracy(capsys, tmp_path):
    from sl1conf.adapters.cbuild import build_shared

    src = tmp_path / "dy.c"
    src.write_text("void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float b)\n"
                   "{ (void)x1; (void)x2; (void)b; for (int i = 0; i < n; i++) dx1[i] = dy[i]; }\n")
    code, _, _, report = certify(capsys, tmp_path, "--impl", f"ctypes:{build_shared('returns-dy', [src])}",
                                 "--platform", "ft78ne")
    assert code == 1 and "R01" in failed(report)
    worst = report["runs"][0]["requirements"][0]["worst"]
    assert set(worst) >= {"case", "element", "dy", "x1", "x2", "beta", "expected", "got", "ulp"}


@pytest.mark.parametrize("argv, words", [
    (["--impl", "builtin:kernel", "--platform", "nosuch"], "unknown platform"),
    (["--impl", "builtin:kernel", "--platform", "ft78ne", "--dtype", "fp16"], "has no fp16"),
    (["--impl", "nosuch:x", "--platform", "ieee"], "unknown implementation"),
    (["--impl", "builtin:kernel", "--platform", "ieee", "--profile", "x.toml"], "and --profile FILE, not both"),
    (["--impl", "builtin:model:divmul-fp16", "--platform", "ft78ne"], "nothing to certify"),
    (["--impl", "builtin:kernel", "--profile", "/no/such.toml"], "no such profile"),
])
def test_bad_usage_is_one_line_and_exit_2(argv, words, capsys, tmp_path):
    code, text, err, report = certify(capsys, tmp_path, *argv)
    assert code == 2 and words in err and err.count("\n") == 1 and report is None, err


def test_a_profile_file(capsys, tmp_path):
    prof = tmp_path / "mine.toml"
    prof.write_text('name = "mine"\ndtypes = ["fp32"]\nvariants = ["p"]\ncores = 2\n[max_ulp]\nfp32 = 2\n')
    code, _, _, report = certify(capsys, tmp_path, "--impl", "builtin:kernel", "--profile", str(prof))
    assert code == 0 and report["profile"]["name"] == "mine" and report["profile"]["sha256"]
    prof.write_text('name = "broken"\ndtypes = ["fp8"]\nvariants = ["p"]\ncores = 1\n[max_ulp]\nfp32 = 2\n')
    code, _, err, _ = certify(capsys, tmp_path, "--impl", "builtin:kernel", "--profile", str(prof))
    assert code == 2 and "dtypes" in err


def test_requirements_doc_is_generated_from_the_catalog():
    from pathlib import Path

    from sl1conf.conformance.requirements.__main__ import markdown

    doc = Path(__file__).resolve().parent.parent / "docs" / "requirements.md"
    assert doc.read_text() == markdown(), (
        "docs/requirements.md is stale: python -m sl1conf.conformance.requirements > docs/requirements.md")
    ids = [r.id for r in CATALOG]
    assert ids == sorted(set(ids))  # unique, in order: never renumbered


def test_waivers(capsys, tmp_path):
    waivers = tmp_path / "waivers.toml"
    waivers.write_text('[[waiver]]\nid = "R03"\nreason = "known: native half overflows (BUG-1)"\n'
                       '[[waiver]]\nid = "R01"\nfamilies = ["fp16-overflow", "underflow", "boundary-exact",'
                       ' "lengths-compact", "beta-special", "core-masks", "boundary-neighbours",'
                       ' "boundary-rounded-diff", "nan-inf", "signed-zero"]\nreason = "same bug"\n'
                       '[[waiver]]\nid = "R02"\nreason = "same bug"\n'
                       '[[waiver]]\nid = "R06"\nreason = "same bug"\n'
                       '[[waiver]]\nid = "R07"\nreason = "same bug"\n'
                       '[[waiver]]\nid = "R12"\nreason = "never fails here"\n')
    code, text, _, report = certify(capsys, tmp_path, "--impl", "builtin:model:muldiv-fp16", "--platform", "ieee",
                                    "--dtype", "fp16", "--variant", "p", "--waivers", str(waivers))
    assert code == 0 and report["verdict"] == "pass", text
    statuses = {r["id"]: r["status"] for r in report["runs"][0]["requirements"]}
    assert statuses["R03"] == "waived" and statuses["R12"] in ("pass", "not-applicable")
    unused = [w for w in report["waivers"] if not w["matched"]]
    assert [w["id"] for w in unused] == ["R12"] and "R12 matched nothing" in text
    waivers.write_text('[[waiver]]\nid = "R99"\nreason = "x"\n')
    code, _, err, _ = certify(capsys, tmp_path, "--impl", "builtin:kernel", "--platform", "ieee",
                              "--waivers", str(waivers))
    assert code == 2 and "unknown requirement id 'R99'" in err


def test_profile_budgets_are_the_derived_ones():
    """docs/accuracy-budget.json (bench/accuracy_budget.py) holds the worst ordinary-element error of
    every accepted model, measured on large sweeps; each profile's budget must cover it."""
    from pathlib import Path

    derived = json.loads((Path(__file__).resolve().parent.parent / "docs" / "accuracy-budget.json").read_text())
    for name in builtin_profiles():
        profile = load_profile(name)
        for dtype in profile.dtypes:
            assert profile.max_ulp[dtype] >= derived["budget"][dtype], (name, dtype)


# Small C libraries, each with one defect class, built by the test: (defect, body of the fp32
# private function's element loop, profile, requirement that must fail).
DEFECTS = {
    "flushes-subnormals": ("float d = x1[i] - x2[i]; float r = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i];"
                           " dx1[i] = fabsf(r) < 1.17549435e-38f ? copysignf(0.0f, r) : r;", "ieee", "R06"),
    "drops-zero-sign": ("float d = x1[i] - x2[i]; float r = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i];"
                        " dx1[i] = r == 0.0f ? 0.0f : r;", "ieee", "R05"),
    "wrong-boundary": ("float d = x1[i] - x2[i]; dx1[i] = d >= beta ? dy[i] * 1.0001f : d < -beta ? -dy[i]"
                       " : d / beta * dy[i];", "ft78ne", "R02"),
    # the last n mod 8 elements (a vector tail) computed as (d * dy) / beta, the body as (d / beta) * dy:
    # both accepted models, but an element's bits then depend on where it is in the call
    "tail-order": ("float d = x1[i] - x2[i]; int tail = i >= n - n % 8;"
                   " dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : tail ? d * dy[i] / beta : d / beta * dy[i];",
                   "ieee", "R18"),
    # call history: from the 21st call on, subnormal inputs and results flush to zero (DAZ/FTZ
    # switched on, as a thread pool that sets the FPU's mode would): consistent flushing would pass
    # mt7004; here R14's sample, run first in a fresh worker, gives gradual results in its first 20
    # calls and flushed ones when repeated (the run's own calls all flush, so R06 sees no mix)
    "flushes-after-20-calls": ("static unsigned calls; if (i == 0) calls++; float a = x1[i], b = x2[i], g = dy[i],"
                               " bb = beta; if (calls > 20) { a = fabsf(a) < 1.17549435e-38f ? copysignf(0.0f, a) : a;"
                               " b = fabsf(b) < 1.17549435e-38f ? copysignf(0.0f, b) : b;"
                               " g = fabsf(g) < 1.17549435e-38f ? copysignf(0.0f, g) : g;"
                               " bb = fabsf(bb) < 1.17549435e-38f ? copysignf(0.0f, bb) : bb; }"
                               " float d = a - b; float r = d > bb ? g : d < -bb ? -g : d / bb * g;"
                               " if (calls > 20 && fabsf(r) < 1.17549435e-38f) r = copysignf(0.0f, r); dx1[i] = r;",
                               "mt7004", "R14"),
    "nondeterministic": ("static unsigned calls; float d = x1[i] - x2[i]; float r = d > beta ? dy[i] : d < -beta"
                         " ? -dy[i] : d / beta * dy[i]; if (i == 0 && calls++ % 2) r = r * 2.0f + 1.0f;"
                         " dx1[i] = r;", "ft78ne", "R14"),
}
DEFECT_LIB = """
#include <math.h>
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{ for (int i = 0; i < n; i++) { BODY } }
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{ MASK_BODY }
"""


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_each_defect_class_fails_its_requirement(defect, capsys, tmp_path):
    from sl1conf.adapters.cbuild import build_shared

    body, platform, requirement = DEFECTS[defect]
    src = tmp_path / f"{defect}.c"
    src.write_text(DEFECT_LIB.replace("MASK_BODY", "(void)mask; if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta);")
                   .replace("BODY", body))
    lib = build_shared(f"defect-{defect}", [src], flags=["-lm"])
    code, text, _, report = certify(capsys, tmp_path, "--impl", f"ctypes:{lib}", "--platform", platform,
                                    "--dtype", "fp32", "--variant", "p")
    assert code == 1 and requirement in failed(report), text
    if requirement == "R18":  # the report names the pattern: the tail of a width-8 vector loop
        r18 = next(r for r in report["runs"][0]["requirements"] if r["id"] == "R18")
        assert "last n mod 8 elements" in r18["observed"] and "a call of" in r18["examples"][0]["detail"]
    if defect == "flushes-after-20-calls":  # where the change was first seen, and a rerun that reproduces it
        r14 = next(r for r in report["runs"][0]["requirements"] if r["id"] == "R14")
        assert "first seen at call #" in r14["observed"] and "does not reproduce in isolation" in r14["reproduction"]
        assert "a fresh worker's call" in r14["examples"][0]["detail"]
        md = (tmp_path / "report" / "report.md").read_text()
        command = next(line for line in md.splitlines() if line.startswith("sl1conf certify") and "R14" in line)
        assert "--only R14 " in command  # every case: the calls before the change are replayed
        code, text, _, again = certify(capsys, tmp_path / "again", "--impl", f"ctypes:{lib}", "--platform", platform,
                                       "--dtype", "fp32", "--variant", "p", "--only", "R14")
        assert code == 1 and failed(again) == {"R14"}, text


@pytest.mark.parametrize("mask_body, requirement", [
    # the result depends on which cores take part
    ("if (mask & 0x80) { fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta); if (n) dx1[0] += 1.0f; }"
     " else if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta);", "R09"),
    # length 0 still writes dx1[0]: caught where the buffers are longer than the call (with no
    # elements at all dx1 ends at a guard page and the write faults: R10 too)
    ("if (n <= 0) { dx1[0] = 0.0f; return; } if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta);", "R08"),
])
def test_shared_version_defects(mask_body, requirement, capsys, tmp_path):
    from sl1conf.adapters.cbuild import build_shared

    good = "float d = x1[i] - x2[i]; dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i];"
    src = tmp_path / f"shared-{requirement}.c"
    src.write_text(DEFECT_LIB.replace("MASK_BODY", mask_body).replace("BODY", good))
    lib = build_shared(f"shared-{requirement}", [src])
    code, text, _, report = certify(capsys, tmp_path, "--impl", f"ctypes:{lib}", "--platform", "ft78ne",
                                    "--dtype", "fp32", "--variant", "s")
    assert code == 1 and requirement in failed(report), text


def test_shared_and_private_versions_must_agree(capsys, tmp_path):
    from sl1conf.adapters.cbuild import build_shared

    good = "float d = x1[i] - x2[i]; dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i];"
    # the shared version rounds differently from the private one (muldiv instead of divmul)
    shared = ("for (int i = 0; i < n && mask; i++) { float d = x1[i] - x2[i]; float p = d * dy[i];"
              " dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : p / beta; }")
    src = tmp_path / "split.c"
    src.write_text(DEFECT_LIB.replace("MASK_BODY", shared).replace("BODY", good))
    code, text, _, report = certify(capsys, tmp_path, "--impl", f"ctypes:{build_shared('split', [src])}",
                                    "--platform", "ft78ne")
    assert code == 1 and "R09" in failed(report), text
    r09 = next(r for r in report["runs"][0]["requirements"] if r["id"] == "R09")
    assert r09["shared_vs_private"]["failed"] > 0
    code, _, _, report = certify(capsys, tmp_path, "--impl", "builtin:kernel", "--platform", "ft78ne")
    r09 = next(r for r in report["runs"][0]["requirements"] if r["id"] == "R09")
    assert code == 0 and r09["shared_vs_private"]["checked"] > 400 and r09["shared_vs_private"]["failed"] == 0


def test_generated_vectors_in_memory_give_the_report_a_written_set_gives(tmp_path):
    """certify without --vectors keeps the generated set in memory; the report must be the one
    the same set written to disk and loaded back gives (same set id and manifest hash, same
    runs), apart from where the set came from and when the report was made."""
    from sl1conf.adapters import load
    from sl1conf.conformance.certify.engine import certify, quick_families
    from sl1conf.conformance.rules.profiles import load_profile
    from sl1conf.conformance.vectors import store as V
    from sl1conf.conformance.vectors.families import generate

    adapter, profile = load("builtin:kernel"), load_profile("mt7004")
    folder = V.write(tmp_path / "set", "fp16", generate("fp16", 2026, list(quick_families())), seed=2026)
    in_memory = certify(adapter, profile, dtypes=["fp16"], quick=True).to_json()
    from_disk = certify(adapter, profile, dtypes=["fp16"], vectors=folder).to_json()
    for report in (in_memory, from_disk):
        report.pop("created"), report.pop("duration_s"), report.pop("quick")
        report["vectors"]["fp16"].pop("source")
    assert in_memory == from_disk

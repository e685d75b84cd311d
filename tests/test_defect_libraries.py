"""Small C libraries, each faulty in one way or honest but unusual: the long-call faults written
here, the truncation and the honest ones taken from the self-test's zoo (conformance/selftest/zoo/,
the sources ``sl1conf selftest`` builds with a user's toolchain).

Every faulty one must fail the requirement named beside it, and every honest one must pass:
a verdict is true of the implementation only if both hold. The faults are the ones real
implementations have: a tile or a code path for long calls that computes differently, a
mode that flushes subnormals only in some calls, truncation instead of rounding. The honest
ones do what real libraries do and the manual allows: flush consistently, evaluate in double,
split the cores over real threads, take their time, talk on stdout and stderr.
"""

from __future__ import annotations

import json

import pytest

from sl1conf.adapters.cbuild import build_shared
from sl1conf.conformance.cli import main
from sl1conf.conformance.selftest import zoo
from conftest import certify_library as certify, requirement_entry as entry

HEADER = """
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
static float fz(float v) { return fabsf(v) < 1.17549435e-38f ? copysignf(0.0f, v) : v; }
static float divmul(float d, float beta, float g) { return d > beta ? g : d < -beta ? -g : d / beta * g; }
"""

# (name, the fp32 private function's body, its shared function's body)
PLAIN_SHARED = "if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta);"
FP32 = """
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta) { BODY }
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask) { SHARED }
"""


def build(tmp_path, name: str, body: str, shared: str = PLAIN_SHARED, prelude: str = "", flags=()) -> str:
    src = tmp_path / f"{name}.c"
    src.write_text(prelude + HEADER + FP32.replace("BODY", body).replace("SHARED", shared))
    return str(build_shared(f"lib-{name}", [src], flags=["-lm", *flags]))


# ------------------------------------------------------------------ faulty: long calls (the default run)

LONG_DEFECTS = {
    # the last element of every 4096-element tile is computed wrong (a tile loop's epilogue)
    "tile-end": ("for (int i = 0; i < n; i++) { float r = divmul(x1[i] - x2[i], beta, dy[i]);"
                 " dx1[i] = i % 4096 == 4095 ? r * 1.5f : r; }", "ieee", "R07"),
    # a separate code path for DDR-sized calls, wrong in its last element
    "long-path": ("for (int i = 0; i < n; i++) { float r = divmul(x1[i] - x2[i], beta, dy[i]);"
                  " dx1[i] = n > 100000 && i == n - 1 ? -r : r; }", "ieee", "R07"),
    # long calls go to a path that flushes subnormals (DAZ/FTZ), short ones keep gradual underflow:
    # flushing is accepted on mt7004, but not in some calls and not in others
    "flushes-long-calls": ("for (int i = 0; i < n; i++) { float a = x1[i], b = x2[i], g = dy[i], bb = beta;"
                           " if (n > 4096) { a = fz(a); b = fz(b); g = fz(g); bb = fz(bb); }"
                           " float r = divmul(a - b, bb, g); dx1[i] = n > 4096 ? fz(r) : r; }", "mt7004", "R06"),
}


@pytest.mark.parametrize("defect", list(LONG_DEFECTS))
def test_a_defect_only_long_calls_show_fails_the_default_run(defect, tmp_path):
    """Calls of 4,096 elements and more (lengths-long) are part of the default run, not only of
    --large: a library wrong only there fails it."""
    body, platform, requirement = LONG_DEFECTS[defect]
    lib = build(tmp_path, defect, body)
    code, failed, report = certify(tmp_path, lib, platform, "--dtype", "fp32", "--variant", "p")
    assert code == 1 and requirement in failed, failed
    if defect == "flushes-long-calls":
        # long calls flush dy or the result where short ones keep both: inconsistent at those places
        observed = entry(report, "R06")["observed"]
        assert "inconsistent at the input dy or the result" in observed, observed


# ------------------------------------------------------------------ faulty: rounding

def zoo_library(name: str, build_dir) -> str:
    """A member of the self-test's zoo (conformance/selftest/zoo/NAME.c), built as sl1conf selftest
    builds it: one copy of each library serves both."""
    member = next(m for m in zoo.members() if m.name == name)
    return str(zoo.build_library(member, build_dir))


@pytest.mark.parametrize("platform", ["mt7004", "ieee"])
def test_truncated_fp16_results_fail_accuracy_on_their_lean(platform, tmp_path):
    """Truncation stays within one ULP (inside the budget) and matches no model bit for bit, so
    only the lean of its errors gives it away: every inexact result lies toward zero. On every
    profile: mt7004's approximate division in fp32 cannot explain a lean of the last rounding
    to half (the conversion rounds to nearest in every evaluation)."""
    lib = zoo_library("truncating-fp16", tmp_path)
    code, failed, report = certify(tmp_path, lib, platform, "--variant", "p", "--quick", "--dtype", "fp16")
    assert code == 1 and failed == {"R01"}, failed
    r01 = entry(report, "R01")
    toward = next(d for d in r01["rounding_bias"]["directions"] if d["direction"] == "toward zero")
    assert toward["fails"] and toward["share"] == 1.0 and toward["allowed_share"] < 0.7
    assert r01["examples"][0]["detail"].startswith("rounding bias:")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "Over the run: rounding bias:" in md and "toward zero" in md


# ------------------------------------------------------------------ honest but unusual: must pass

HONEST = {
    # name in the self-test's zoo: the profiles it must pass
    "flushes-consistently": ("ft78ne", "mt7004"),  # DAZ and FTZ in software, consistently
    "double-then-round": ("ieee", "ft78ne"),  # the whole formula in double, rounded once
    "threaded-cores": ("ft78ne",),  # the shared version's cores as real threads, each over its own chunk
    "slow": ("ft78ne",),  # 2 ms a call
    "chatty": ("ft78ne",),  # talks on every call
}


@pytest.mark.parametrize("name", list(HONEST))
def test_an_honest_but_unusual_library_passes(name, tmp_path):
    lib = zoo_library(name, tmp_path)
    variant = ["--variant", "p"] if name == "slow" else []  # a pause every call: one run is enough to show it
    for platform in HONEST[name]:
        code, failed, report = certify(tmp_path / platform, lib, platform, "--dtype", "fp32", "--quick", *variant)
        assert code == 0 and not failed, (platform, failed)
        if name == "flushes-consistently":  # every place flushed where it matters, none kept
            observed = entry(report, "R06")["observed"]
            assert "flush-to-zero at the inputs" in observed and observed.endswith("consistent per place"), observed
            assert "gradual underflow" not in observed, observed


def test_fuzz_and_sweep_find_the_truncation_too(tmp_path, capsys):
    """The same test, over a campaign: fuzz sums the lean of every batch's longest calls and
    sweep of the blocks it samples; each fails on it (exit 1) and names the direction."""
    lib = zoo_library("truncating-fp16", tmp_path)
    code = main(["fuzz", "--impl", f"ctypes:{lib}", "--platform", "mt7004", "--elements", "400000", "--workers", "1",
                 "--seed", "5", "--out", str(tmp_path / "fuzz")])
    summary = json.loads((tmp_path / "fuzz" / "summary.json").read_text())
    assert code == 1 and "R01/fp16/p/long/rounding-bias/toward-zero" in summary["failures"]["keys"], summary["failures"]
    assert summary["rounding_bias"]["fp16/p"]["findings"][0].startswith("rounding bias:")
    code = main(["sweep", "--impl", f"ctypes:{lib}", "--beta", "0.5", "--dy", "0.7", "--subset", "x2=0.25",
                 "--platform", "mt7004", "--workers", "1", "--out", str(tmp_path / "sweep")])
    verdict = json.loads((tmp_path / "sweep" / "sweep.json").read_text())["summary"]["verdict"]
    assert code == 1 and verdict["rejected"] == 0 and not verdict["pass"]  # no element rejected, the lean fails it
    assert any("toward zero" in line for line in verdict["rounding_bias"]["findings"])
    assert "R01 accuracy: fp16 p, over the blocks sampled (every 64th)" in capsys.readouterr().out

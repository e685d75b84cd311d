"""The public adapter API end to end: the example plugin package (tests/example_plugin, the one
docs/adapters.md walks through) installed with pip, found through its entry point, certified
through; and how refused inputs and unsupported calls are judged.

Expected verdicts come from the plugin's kernel: the documented formula in float64, rounded
once, is within 1 ULP of the correctly rounded result on every element (the branches are
exact; the middle line is two float64 roundings, then one to the data type), so it passes
the ieee profile's accuracy; it refuses beta <= 0, which the manual leaves open (R16).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sl1conf.adapters.base import ArrayFunction, Case
from sl1conf.conformance.certify.engine import certify
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.search import fuzz as Z
from sl1conf.reference import fast_oracle

PLUGIN = Path(__file__).parent / "example_plugin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The example package pip-installed into a folder of its own (no network, no build isolation)."""
    pytest.importorskip("setuptools", reason="the example plugin builds with setuptools (the test extra has it)")
    target = tmp_path_factory.mktemp("plugin-site")
    build = tmp_path_factory.mktemp("plugin-build")
    src = build / "example_plugin"
    import shutil
    shutil.copytree(PLUGIN, src)  # setuptools writes egg-info next to the sources: keep the checkout clean
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert list(target.glob("sl1conf_example-*.dist-info/entry_points.txt"))
    return target


def _sl1conf(site: Path, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "sl1conf", *args], capture_output=True, text=True, env=env)


def test_the_installed_plugin_certifies_through_its_entry_point(installed, tmp_path):
    """--impl example (a bare plugin prefix: the plugin picks its default) runs the float64 kernel:
    fp16 and fp32 p pass; beta <= 0 is recorded under R16 as rejected; the profile's shared variant,
    which the plugin lacks, makes the report incomplete (exit 1), and asking for p alone passes (0)."""
    out = tmp_path / "all"
    done = _sl1conf(installed, "certify", "--impl", "example", "--platform", "ieee", "--quick", "--out", str(out))
    assert done.returncode == 1, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["implementation"]["kernel"] == "float64, rounded once"
    assert report["verdict"] == "incomplete" and set(report["missing_runs"]) == {"fp16 s", "fp32 s"}
    for run in report["runs"]:
        assert run["verdict"] == "pass", run["dtype"]
        r16 = next(r for r in run["requirements"] if r["id"] == "R16")["observed"]
        for question in ("beta = 0", "beta < 0"):
            assert r16[question]["answers"]["rejected"] == r16[question]["calls"] > 0
            assert "beta must be positive" in r16[question]["rejected"]["detail"]
    done = _sl1conf(installed, "certify", "--impl", "example:float64", "--platform", "ieee", "--quick",
                    "--variant", "p", "--out", str(tmp_path / "p"))
    assert done.returncode == 0, done.stdout + done.stderr
    md = (tmp_path / "p" / "report.md").read_text()
    assert "rejected" in md and "beta must be positive" in md


def test_a_plugin_answering_every_call_unsupported_is_incomplete_exit_1(installed, tmp_path):
    done = _sl1conf(installed, "certify", "--impl", "example:none", "--platform", "ieee", "--quick",
                    "--dtype", "fp32", "--variant", "p", "--out", str(tmp_path / "r"))
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["verdict"] == "incomplete" and report["runs"][0]["verdict"] == "incomplete"
    assert (tmp_path / "r" / "report.md").read_text().startswith("# INCOMPLETE")


def test_a_plugin_name_the_plugin_does_not_know_is_one_line_exit_2(installed, tmp_path):
    done = _sl1conf(installed, "certify", "--impl", "example:nope", "--platform", "ieee", "--quick",
                    "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert "unknown example implementation 'nope'" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# --- refused inputs, in process ----------------------------------------------------------------

class Refusal(Exception):
    pass


def _refusing(refuse):
    """The exact oracle, refusing the calls ``refuse(dy, beta)`` picks with a Refusal."""
    def fn(dy, x1, x2, beta):
        if refuse(dy, beta):
            raise Refusal(f"refused a call of {dy.size}")
        return fast_oracle.smoothl1lossgrad(dy, x1, x2, beta)
    return ArrayFunction("refusing", fn, ("fp32",), variants=("p",), rejects=(Refusal,))


def test_a_refused_ordinary_input_fails_the_requirement_of_its_family():
    """Refusing every call of 7 elements (a length the manual defines) fails: filed under the
    requirement the case's family is aimed at, with the adapter's message."""
    report = certify(_refusing(lambda dy, beta: dy.size == 7), load_profile("ieee"), dtypes=["fp32"],
                     variants=["p"], quick=True).to_json()
    [run] = report["runs"]
    assert run["verdict"] == "fail"
    failed = [r for r in run["requirements"] if r["status"] == "fail"]
    assert failed and all(r["kind"] == "required" for r in failed)
    details = [e["detail"] for r in failed for e in r.get("examples", []) if "detail" in e]
    assert any(d.startswith("rejected an input the manual defines: Refusal: refused a call of 7") for d in details)
    assert next(r for r in run["requirements"] if r["id"] == "R13")["status"] == "pass"  # a refusal is no crash


def test_a_refused_open_input_is_recorded_not_failed():
    """Refusing beta <= 0 (open) passes; every such call shows under R16 as rejected."""
    report = certify(_refusing(lambda dy, beta: not beta > 0 and not np.isnan(beta)), load_profile("ieee"),
                     dtypes=["fp32"], variants=["p"], quick=True).to_json()
    [run] = report["runs"]
    assert run["verdict"] == "pass", [r["id"] for r in run["requirements"] if r["status"] == "fail"]
    r16 = next(r for r in run["requirements"] if r["id"] == "R16")["observed"]
    assert r16["beta = 0"]["answers"]["rejected"] > 0 and r16["beta < 0"]["answers"]["rejected"] > 0


def test_the_fuzzer_files_refusals_as_certify_does():
    adapter = _refusing(lambda dy, beta: True)
    one = np.array([0x3F800000] * 3, np.uint32)
    open_case = Case("fp32", one, one, one, 0x00000000, id="beta +0")
    ordinary = Case("fp32", one, one, one, 0x3F800000, id="beta 1")
    profile = load_profile("ieee")
    assert Z.check_cases(adapter, profile, [open_case]) == []
    [finding] = Z.check_cases(adapter, profile, [ordinary])
    assert finding.kind == "rejected" and finding.requirement == "R01" and "refused a call of 3" in finding.detail


def test_a_sweep_of_a_refused_open_beta_records_it_and_is_no_pass(tmp_path):
    """A sweep at beta = 0 of an implementation refusing beta <= 0: every block is recorded as
    refused under the beta = 0 question, nothing is checked, so the sweep does not pass; a sweep
    at beta = 1 of one refusing everything fails its blocks."""
    from sl1conf.conformance.search import sweep as S
    from sl1conf.reference import formats as F

    refusing = ArrayFunction("refusing", lambda dy, x1, x2, beta: (_ for _ in ()).throw(Refusal("no")),
                             ("fp16",), variants=("p",), rejects=(Refusal,))
    beta0, _ = F.parse_value(F.FP16, "0")
    state = S.run_sweep(S.SweepConfig("refusing", beta0, 0x3C00, "x2=0", block=1 << 14), tmp_path / "a",
                        adapter=refusing)
    v = S.verdict(state["tally"], load_profile("ieee"), beta0)
    assert v["open_answers"] == {"beta = 0": {"rejected": state["tally"].elements}} and v["checked_elements"] == 0
    assert not v["pass"] and v["failed_elements"] == 0
    state = S.run_sweep(S.SweepConfig("refusing", 0x3C00, 0x3C00, "x2=0", block=1 << 14), tmp_path / "b",
                        adapter=refusing)
    v = S.verdict(state["tally"], load_profile("ieee"), 0x3C00)
    assert not v["pass"] and v["failed_elements"] == state["tally"].elements > 0
    assert v["open_answers"] == {}

"""The pytest plugin's ``--sl1-report DIR`` (conformance/pytest_plugin.py): the report folder
``sl1conf certify --out DIR`` writes, written once after the session, with and without
pytest-xdist. Each run is a fresh pytest in a subprocess in an empty folder (as in
tests/test_pytest_plugin.py), on the quick families of builtin implementations.
"""

import json

import jsonschema
import pytest

from sl1conf.adapters import load
from sl1conf.conformance.certify.engine import certify
from sl1conf.conformance.cli import main as sl1conf_main
from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.rules.profiles import load_profile

pytest_plugins = ["pytester"]

KERNEL = ("--sl1-impl", "builtin:kernel", "--sl1-platform", "ft78ne", "--sl1-quick")
DEFECT = "builtin:model:muldiv-fp16"  # overflows where the result is finite: R03 and R01 families fail
DEFECT_ARGS = ("--sl1-impl", DEFECT, "--sl1-platform", "ieee", "--sl1-dtype", "fp16", "--sl1-variant", "p",
               "--sl1-quick")
FILES = ("report.json", "report.md", "report.html", "junit.xml")


@pytest.fixture(autouse=True)
def _entry_points_load(monkeypatch):
    """The subprocesses must load installed plugins (the outer run may have turned that off)."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)


def _run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=300)


def _report(folder) -> dict:
    for name in FILES:
        assert (folder / name).is_file(), name
    report = json.loads((folder / "report.json").read_text())
    jsonschema.validate(report, jsonfiles.schema("report.schema.json"))  # directly, not through the suite's reader
    return report


def _gate_on_itself(folder, capsys) -> int:
    rc = sl1conf_main(["gate", str(folder), "--baseline", str(folder)])
    assert "no regression" in capsys.readouterr().out
    return rc


@pytest.mark.parametrize("xdist", [(), ("-n", "2", "--dist", "loadgroup")], ids=["one-process", "xdist"])
def test_passing_run_writes_the_report_certify_writes_once(pytester, capsys, xdist):
    if xdist:
        pytest.importorskip("xdist")
    result = _run(pytester, *KERNEL, "--sl1-report", "sl1conf-report", *xdist)
    assert result.ret == 0
    report = _report(pytester.path / "sl1conf-report")
    assert report["verdict"] == "pass"
    # both runs, whichever worker certified them, in certify's order
    assert [(r["dtype"], r["variant"], r["verdict"]) for r in report["runs"]] == [("fp32", "s", "pass"),
                                                                                   ("fp32", "p", "pass")]
    assert report["quick"] is True and report["profile"]["name"] == "ft78ne"
    assert report["invocation"]["impl"] == "builtin:kernel" and report["invocation"]["platform"] == "ft78ne"
    assert set(report["vectors"]) == {"fp32"} and "missing_runs" not in report
    # written once, by the controller (or the one process), and said so once
    assert result.stdout.str().count("sl1conf: verdict PASS for builtin:kernel on ft78ne (fp32-s, fp32-p)") == 1
    assert _gate_on_itself(pytester.path / "sl1conf-report", capsys) == 0


def test_failing_run_report_matches_certify_and_the_failed_items(pytester, capsys):
    result = _run(pytester, *DEFECT_ARGS, "--sl1-report", "out/rep", "-rf")
    assert result.ret == 1
    report = _report(pytester.path / "out" / "rep")
    assert report["verdict"] == "fail"
    with load(DEFECT) as impl:
        want = certify(impl, load_profile("ieee"), dtypes=["fp16"], variants=["p"], quick=True).to_json()
    assert report["runs"] == want["runs"]  # one run: the engine's very entry (no s/p comparison to make)
    assert report["narrowed"] == want["narrowed"] == ["--dtype", "--variant"]
    assert report["vectors"] == want["vectors"]
    failed = set()
    for r in report["runs"][0]["requirements"]:
        failed |= ({f"sl1conf::fp16-p::R01::{f['family']}" for f in r["families"] if f["status"] == "fail"}
                   if r["id"] == "R01" else {f"sl1conf::fp16-p::{r['id']}"} if r["status"] == "fail" else set())
    out = result.stdout.str()
    assert failed and all(f"FAILED {nodeid}" in out for nodeid in failed)
    assert out.count("FAILED sl1conf::") == len(failed)
    assert _gate_on_itself(pytester.path / "out" / "rep", capsys) == 0


def test_deselected_runs_are_left_out_and_nothing_certified_writes_nothing(pytester):
    result = _run(pytester, *KERNEL, "--sl1-report", "rep", "-k", "fp32-p and R02")
    result.assert_outcomes(passed=1)
    assert [(r["dtype"], r["variant"]) for r in _report(pytester.path / "rep")["runs"]] == [("fp32", "p")]
    none = _run(pytester, *KERNEL, "--sl1-report", "none", "--collect-only", "-q")
    assert none.ret == 0
    assert not (pytester.path / "none" / "report.json").exists()
    none.stdout.fnmatch_lines(["sl1conf: no run was certified in this session*nothing written"])


@pytest.mark.parametrize("args, message", [
    (("--sl1-report", "rep"), "ERROR: --sl1-report given without --sl1-impl SPEC"),
    ((*KERNEL, "--sl1-report", "a-file"), "ERROR: *a-file exists and is not a folder"),
])
def test_bad_report_folder_is_a_usage_error(pytester, args, message):
    (pytester.path / "a-file").write_text("")
    result = _run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_waivers_are_counted_as_certify_counts_them(pytester):
    """A waiver that holds R03's failures and a stale one: the plugin's report says how many
    requirements and failures each held, as certify's report for the same options does (the
    counts summed over the session's runs, not only how many requirements matched)."""
    from sl1conf.conformance.certify.waivers import load_waivers

    pytester.path.joinpath("waivers.toml").write_text(
        '[[waiver]]\nid = "R03"\nreason = "known overflow of the muldiv order"\n\n'
        '[[waiver]]\nid = "R08"\nreason = "stale: nothing of R08 fails"\n')
    result = _run(pytester, *DEFECT_ARGS, "--sl1-waivers", "waivers.toml", "--sl1-report", "rep")
    report = _report(pytester.path / "rep")
    with load(DEFECT) as impl:
        want = certify(impl, load_profile("ieee"), dtypes=["fp16"], variants=["p"], quick=True,
                       waivers=load_waivers(pytester.path / "waivers.toml")).to_json()
    assert report["waivers"] == want["waivers"]
    r03, stale = report["waivers"]
    assert r03["matched"] == 1 and r03["failures"] > 0  # R03 fails on this defect: its failures are counted
    assert stale["matched"] == stale["failures"] == 0
    assert result.ret == 1  # the R01 families still fail

"""What a report says about details (issue 16, item 11): elements never written, the paths of
the machine that wrote it, and junit.xml's names, times and NaN wording.

* An element the implementation never wrote still holds the fill pattern the adapters put in
  dx1 before the call: the judge marks it ``not_written`` and every rendering says so instead
  of showing the pattern as a value ("got 203.2").
* report.json stores paths under the current folder relative to it and paths under the home
  folder as ``~/...``; the reproduction commands still run.
* certify's junit.xml names its test cases as the pytest plugin's ``--junitxml`` does, and
  has real times.
"""

from __future__ import annotations

from sl1conf.conformance.requirements.records import CallNote, ElementRecord
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from sl1conf.adapters.base import FILL_BYTE
from sl1conf.adapters.cbuild import build_shared
from sl1conf.conformance.cli import main
from sl1conf.conformance.reports import write as W
from sl1conf.conformance.reports import junit
from sl1conf.conformance.reports.junit import case_names
from sl1conf.conformance.reports.view import view
from sl1conf.conformance.requirements.results import Report
from sl1conf.reference.reachable import Reach
from sl1conf.conformance.reports.view import distance_text

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "conformance" / "schemas" / "report.schema.json").read_text())
FILL32 = "0x" + f"{FILL_BYTE:02x}" * 4

# Correct everywhere but the last element of each call, which it never writes.
LAST_UNWRITTEN = """
static float divmul(float d, float beta, float g) { return d > beta ? g : d < -beta ? -g : d / beta * g; }
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta) {
    for (int i = 0; i < n - 1; i++) dx1[i] = divmul(x1[i] - x2[i], beta, dy[i]);
}
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask) {
    if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta);
}
"""


@pytest.fixture(scope="module")
def unwritten(tmp_path_factory):
    """The library, built under a home folder of its own, certified (fp32 p, --quick) from a
    working folder holding the profile file: (report folder, work folder, home, library)."""
    base = tmp_path_factory.mktemp("details")
    home, work = base / "home", base / "work"
    (work / "profiles").mkdir(parents=True)
    home.mkdir()
    src = base / "last-unwritten.c"
    src.write_text(LAST_UNWRITTEN)
    lib = build_shared("lib-last-unwritten", [src], out_dir=home / "libs")
    shutil.copy(ROOT / "conformance" / "rules" / "profiles" / "ieee.toml", work / "profiles" / "strict.toml")
    mp = pytest.MonkeyPatch()
    mp.setenv("HOME", str(home))
    mp.chdir(work)
    try:
        code = main(["certify", "--impl", f"ctypes:{lib}", "--profile", str(work / "profiles" / "strict.toml"),
                     "--dtype", "fp32", "--variant", "p", "--quick", "--out", "report"])
    finally:
        mp.undo()
    assert code == 1
    return work / "report", work, home, lib


def _elements(report: dict):
    """Every element dict of the report's requirements (worst, examples, families' worst, diagnosis)."""
    for run in report["runs"]:
        for r in run["requirements"]:
            for holder in [r, *(r.get("families") or [])]:
                if holder.get("worst"):
                    yield holder["worst"]
                yield from (e for e in holder.get("examples") or [] if "dy" in e)
            yield from (d["example"] for d in r.get("diagnosis") or [])


# --- elements never written -------------------------------------------------------------------

def test_an_element_never_written_is_marked_and_said_so(unwritten):
    folder, *_ = unwritten
    report = json.loads((folder / "report.json").read_text())
    jsonschema.validate(report, SCHEMA)
    elements = list(_elements(report))
    marked = [e for e in elements if e.get("not_written")]
    assert marked and all(e["got"] == FILL32 for e in marked)
    assert all(e["got"] != FILL32 for e in elements if not e.get("not_written"))
    assert all(e["element"] == e["length"] - 1 for e in marked)  # the last element, as the library does
    failing = {r["id"] for r in report["runs"][0]["requirements"] if r["status"] == "fail"}
    assert "R07" in failing, failing
    said = f"not written (still the fill pattern {FILL32})"
    md = (folder / "report.md").read_text()
    assert f"got nothing: not written (still the fill pattern `{FILL32}`)" in md
    assert said in md  # the diagnosis' example
    assert f"`{FILL32}` (" not in md  # the pattern never shown as a value
    html = (folder / "report.html").read_text()
    assert "not written: dx1 still holds the fill pattern" in html and "(the fill pattern)" in html
    junit = (folder / "junit.xml").read_text()
    messages = [f.get("message") for f in ET.fromstring(junit).iter("failure")]
    assert any(f"got nothing: {said}" in m for m in messages)
    assert not any(f"got {FILL32}" in m for m in messages)


def test_a_written_result_equal_to_nothing_like_the_fill_is_not_marked():
    """The mark is the fill pattern's bits exactly: a near neighbour is an ordinary result."""
    import numpy as np

    from sl1conf.adapters.base import Case
    from sl1conf.conformance.requirements.base import Tally
    from sl1conf.reference import formats as F

    fmt = F.format_by_name("fp16")
    fill = int(FILL_BYTE) * 0x101

    class J:
        case = Case("fp16", np.array([0x3C00, 0x3C00], np.uint16), np.array([0x4000, 0x4000], np.uint16),
                    np.zeros(2, np.uint16), 0x3C00)
        got = np.array([fill, fill + 1], np.uint16)
        dist = np.array([100, 99])
        row = {"id": "9.9"}
        reach = Reach(np.zeros(2, np.int8), np.full(2, "", object))

        class expected:
            oracle = np.array([0x3C00, 0x3C00], np.uint16)

    t = Tally(fmt)
    assert t.element(J, 0).not_written is True and not t.element(J, 1).not_written
    assert t.element(J, 0).to_json()["not_written"] is True and "not_written" not in t.element(J, 1).to_json()
    aliased = type("JA", (J,), {"case": Case("fp16", J.case.dy, J.case.x1, J.case.x2, 0x3C00, out_alias="x1")})
    assert not t.element(aliased, 0).not_written  # dx1 was x1 before the call, not the fill


# --- paths --------------------------------------------------------------------------------------

def test_paths_are_stored_relative_to_the_folder_or_the_home(unwritten):
    folder, work, home, lib = unwritten
    text = (folder / "report.json").read_text()
    report = json.loads(text)
    assert str(work) not in text and str(home) not in text  # no path of this machine anywhere
    rel = str(lib.relative_to(home))
    assert report["implementation"]["library"] == f"~/{rel}"
    assert report["implementation"]["adapter"] == report["invocation"]["impl"] == f"ctypes:~/{rel}"
    assert report["profile"]["path"] == report["invocation"]["profile"] == "profiles/strict.toml"
    md = (folder / "report.md").read_text()
    assert str(work) not in md and str(home) not in md
    assert "profiles/strict.toml" in md


def test_the_reproduction_commands_run_from_the_folder_certify_ran_in(unwritten, tmp_path):
    folder, work, home, _ = unwritten
    md = (folder / "report.md").read_text()
    commands = re.findall(r"^(sl1conf certify .*)$", md, re.M)
    assert commands
    command = commands[0].replace("--out /tmp/", f"--out {tmp_path}/")
    env = {**os.environ, "HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, (command, proc.stderr)  # the failure reproduced, not a usage error (2)
    assert "FAIL" in proc.stdout


def test_portable_paths_on_every_known_field(tmp_path, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    report = {"profile": {"path": f"{work}/p.toml"},
              "invocation": {"impl": f"ctypes:{home}/lib.so", "profile": f"{work}/p.toml",
                             "vectors": [f"{work}/vs16", "/elsewhere/vs32"], "platform": None},
              "implementation": {"adapter": f"ctypes:{home}/lib.so", "library": f"{home}/lib.so",
                                 "note": f"the shim in {home}/.cache/sl1conf/shim-1/shim.so failed; see {work}/log"},
              "vectors": {"fp16": {"source": f"{work}/vs16"}, "fp32": {"source": "generated (canonical families)"}}}
    out = W.portable_paths(report)
    assert out == {"profile": {"path": "p.toml"},
                   "invocation": {"impl": "ctypes:~/lib.so", "profile": "p.toml", "vectors": ["vs16", "/elsewhere/vs32"],
                                  "platform": None},
                   "implementation": {"adapter": "ctypes:~/lib.so", "library": "~/lib.so",
                                      "note": "the shim in ~/.cache/sl1conf/shim-1/shim.so failed; see log"},
                   "vectors": {"fp16": {"source": "vs16"}, "fp32": {"source": "generated (canonical families)"}}}
    assert report["profile"]["path"] == f"{work}/p.toml"  # the caller's report is left as it was
    assert W.portable_path(str(work)) == "." and W.portable_path("relative/x") == "relative/x"
    assert W.portable_path(f"{home}2/x") == f"{home}2/x"  # a sibling folder is not under home
    monkeypatch.chdir("/")
    assert W.portable_path(f"{work}/p.toml") == "~/work/p.toml"  # "/" is no base: everything is under it


# --- junit.xml ----------------------------------------------------------------------------------

DEFECT = ["--impl", "builtin:model:muldiv-fp16", "--platform", "ieee", "--dtype", "fp16", "--variant", "p", "--quick"]


def test_certify_junit_names_its_cases_as_the_pytest_plugin_does(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider",
                                           *(a.replace("--", "--sl1-", 1) if a.startswith("--") else a
                                             for a in DEFECT), "--junitxml=plugin.xml", timeout=300)
    assert result.ret == 1
    assert main(["certify", *DEFECT, "--out", str(tmp_path / "report")]) == 1
    plugin = case_names((pytester.path / "plugin.xml").read_text())
    certify = case_names((tmp_path / "report" / "junit.xml").read_text())
    assert ("sl1conf.fp16-p", "R02") in certify and ("sl1conf.fp16-p.R01", "fp16-overflow") in certify
    assert certify == plugin
    # and they fail the same cases
    failing = lambda text: {(tc.get("classname"), tc.get("name")) for tc in ET.fromstring(text).iter("testcase")  # noqa: E731
                            if tc.find("failure") is not None}
    assert failing((tmp_path / "report" / "junit.xml").read_text()) == failing((pytester.path / "plugin.xml").read_text())


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("fail")
    assert main(["certify", *DEFECT, "--out", str(out)]) == 1
    return W.load_report(out).to_json()


def render_junit(report: dict) -> str:
    """junit.xml of a report's JSON (edited here as a file would be), read back typed."""
    return junit.render_junit(view(Report.from_json(report)))


def test_junit_times_come_from_the_duration(failing_report):
    report = {**failing_report, "duration_s": 12.5}
    root = ET.fromstring(render_junit(report))
    assert root.get("time") == "12.500"
    [suite] = root.iter("testsuite")
    assert suite.get("time") == "12.500"
    times = [float(tc.get("time")) for tc in root.iter("testcase")]
    assert all(t > 0 for t in times) and abs(sum(times) - 12.5) < 0.01 * len(times)
    assert 'time="0"' not in render_junit(report)
    older = {k: v for k, v in failing_report.items() if k != "duration_s"}
    assert "time=" not in render_junit(older)  # no duration recorded: no time, rather than a false 0
    two = {**report, "runs": [failing_report["runs"][0], {**failing_report["runs"][0], "variant": "s",
                                                          "elements": failing_report["runs"][0]["elements"] * 3}]}
    suites = [float(s.get("time")) for s in ET.fromstring(render_junit(two)).iter("testsuite")]
    assert suites == pytest.approx([12.5 / 4, 12.5 * 3 / 4], abs=0.001)  # shared by elements


def test_junit_says_which_side_of_a_nan_mismatch_was_the_nan(failing_report):
    report = json.loads(json.dumps({k: v for k, v in failing_report.items() if not k.startswith("_")}))
    r03 = next(r for r in report["runs"][0]["requirements"] if r["id"] == "R03")
    r03["worst"].update(ulp="nan-mismatch", got="0x7e00", expected="0x3c00")  # as older reports have it
    W.validate(report)
    text = render_junit(report)
    assert "nan-mismatch" not in text
    assert "expected 0x3c00, got 0x7e00 (NaN where the result is a number)" in text
    assert distance_text(ElementRecord("0x0", "0x0", "0x0", "0x3c00", "0x7e00", "0x3c00", ulp="nan-mismatch", distance=-1)) == "a number where the result is NaN"
    assert distance_text(ElementRecord("0x0", "0x0", "0x0", "0x3c00", "0x3c00", "0x7e00", ulp="NaN where the result is a number", distance=-1)) == "NaN where the result is a number"


# A library within every budget that rounds toward zero (it computes in double, rounds to nearest, then steps one
# ULP toward zero where that went away from zero): no family fails, and only R01's rounding bias over the whole run
# can catch it (docs/requirements.md, R01). Without an item for that finding the plugin would pass every R01 item
# while certify's verdict fails.
TOWARD_ZERO = """
#include <math.h>
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta) {
    for (int i = 0; i < n; i++) {
        double d = (double)x1[i] - (double)x2[i], g = dy[i];
        double e = d > beta ? g : d < -(double)beta ? -g : d / beta * g;
        float r = (float)e;
        if (isfinite(r) && r != 0.0f && fabs((double)r) > fabs(e)) r = nextafterf(r, 0.0f);
        dx1[i] = r;
    }
}
"""


@pytest.mark.slow
def test_a_bias_found_over_the_whole_run_fails_one_case_in_both_junit_files(pytester, monkeypatch, tmp_path):
    from sl1conf.adapters.cbuild import build_shared

    src = tmp_path / "toward_zero.c"
    src.write_text(TOWARD_ZERO)
    lib = build_shared("lib-toward-zero", [src], flags=["-lm"])
    argv = ["--impl", f"ctypes:{lib}", "--platform", "ieee", "--dtype", "fp32", "--variant", "p"]
    assert main(["certify", *argv, "--out", str(tmp_path / "report")]) == 1
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *(a.replace("--", "--sl1-", 1) if a.startswith("--")
                                                                       else a for a in argv),
                                           "--junitxml=plugin.xml", timeout=600)
    assert result.ret == 1
    failing = lambda text: {(tc.get("classname"), tc.get("name")) for tc in ET.fromstring(text).iter("testcase")  # noqa: E731
                            if tc.find("failure") is not None}
    want = {("sl1conf.fp32-p.R01", "over-the-run")}
    assert failing((tmp_path / "report" / "junit.xml").read_text()) == want
    assert failing((pytester.path / "plugin.xml").read_text()) == want
    assert case_names((tmp_path / "report" / "junit.xml").read_text()) == case_names(
        (pytester.path / "plugin.xml").read_text())


def test_a_call_example_names_its_case_once():
    """A call's example says its case once: in front of what was seen, unless what was seen (the
    evidence of R09, R14, R15 and R18: the case, the element, the call's length) begins with it;
    no committed report says ``case 1.40: case 1.40, ...``."""
    import re
    from pathlib import Path

    from sl1conf.conformance.reports.view import case_detail

    assert case_detail(CallNote("16.6", "crash: killed by SIGSEGV")) == "case 16.6: crash: killed by SIGSEGV"
    said = "case 1.40, element 8 of a call of 48 (dy=0x42c3809c ...): call #8 gave 0x00000000"
    assert case_detail(CallNote("1.40", said)) == said
    assert case_detail(CallNote("1.4", said)) == f"case 1.4: {said}"  # 1.40 is another case
    reports = sorted((Path(__file__).resolve().parents[1] / "reports").glob("*/report.md"))
    assert reports
    twice = [f"{p.parent.name}: {m.group(0)}" for p in reports for m in re.finditer(r"case (\S+): case \1\b", p.read_text())]
    assert not twice, twice

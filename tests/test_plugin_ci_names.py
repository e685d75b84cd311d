"""The pytest route says what the CLI route says (issue 40, item 4): JUnit names equal to certify's
under ``--dist loadgroup`` (xdist appends ``@sl1conf-<dtype>-<variant>`` to the node ids), waivers
applied and stale in pytest's summary and in its JUnit as certify prints them, and a reproduce
command whose ``--out`` is never the report folder it was printed from.

The expected names, waiver lines and counts are what ``sl1conf certify`` writes and prints for the
same options: the other route, not the plugin's code.
"""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from sl1conf.conformance.reports.junit import case_names

pytest_plugins = ["pytester"]

RUN_CLI = "import sys; from sl1conf.conformance.cli import main; sys.exit(main(sys.argv[1:]))"

DEFECT = "builtin:model:muldiv-fp16"  # overflows where the result is finite: R03 (waived here) and others fail
WAIVERS = ('[[waiver]]\nid = "R03"\nvariants = ["s"]\nreason = "known overflow, BUG-1"\n\n'  # fp16 p waives nothing
           '[[waiver]]\nid = "R05"\nreason = "stale, BUG-2"\n')


@pytest.fixture(autouse=True)
def _entry_points_load(monkeypatch):
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)


def _certify(tmp_path, waivers, *options) -> tuple:
    """certify's junit.xml text, report.json and printed lines for the same options. In a process
    of its own: the pytester fixture restores sys.modules after the test, and a process pool first
    imported inside it would leave later tests of this worker with a second copy of
    concurrent.futures (their pools then fail to pickle their calls)."""
    out = tmp_path / "certify-report"
    done = subprocess.run([sys.executable, "-c", RUN_CLI, "certify", "--impl", DEFECT, "--platform", "ieee", "--dtype",
                           "fp16", *options, "--quick", "--waivers", str(waivers), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    return (out / "junit.xml").read_text(), json.loads((out / "report.json").read_text()), done.stdout.splitlines()


def _expected_waiver_lines(report: dict, printed: list) -> list:
    """What the pytest summary must say of the waivers: what certify printed of them for the same
    options, each run's waived requirements (its run line's ``waived: ...``) and its ``waiver ...``
    lines (one per waiver: what it waived, with its counts, or that it matched nothing)."""
    lines = []
    for run in report["runs"]:
        line = next(p for p in printed if p.startswith(f"{run['dtype']} {run['variant']}: "))
        waived = re.search(r"; waived: (.*)$", line)
        if waived:
            lines.append(f"{run['dtype']} {run['variant']}: waived: {waived.group(1)}")
    said = [p for p in printed if p.startswith("waiver ")]
    assert len(said) == len(report["waivers"])  # certify says every waiver's use
    return lines + said


def _outs(text: str) -> set:
    return set(re.findall(r"sl1conf certify [^\n\"]*?--out (\S+)", text))


def test_loadgroup_names_waivers_and_reproduce_commands_match_certify(pytester, tmp_path):
    pytest.importorskip("xdist")
    waivers = pytester.path / "waivers.toml"
    waivers.write_text(WAIVERS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sl1-impl", DEFECT, "--sl1-platform", "ieee", "--sl1-dtype", "fp16", "--sl1-quick",
        "--sl1-waivers", "waivers.toml", "-n", "2", "--dist", "loadgroup", "--junitxml=plugin.xml",
        "--sl1-report", "sl1conf-report", timeout=300)
    assert result.ret == 1
    stdout = result.stdout.str()
    assert re.search(r"FAILED sl1conf::fp16-\w::\S+@sl1conf-fp16-\w", stdout)  # the node ids do carry the group
    plugin_xml = (pytester.path / "plugin.xml").read_text()
    junit, report, printed = _certify(tmp_path, waivers)

    # JUnit names: certify's, no @group suffix
    names = case_names(plugin_xml)
    assert not any("@" in name for _, name in names), sorted(n for _, n in names if "@" in n)[:3]
    assert ("sl1conf.fp16-s", "R03") in names and names == case_names(junit)

    # waivers: in the summary and in JUnit, as certify says them
    want = _expected_waiver_lines(report, printed)
    assert any("matched nothing" in w for w in want) and any(" waived " in w for w in want)
    summary = [line[len("sl1conf: "):] for line in stdout.splitlines() if line.startswith("sl1conf: ")]
    assert [line for line in summary if line in want] == want, summary
    suite = ET.fromstring(plugin_xml).find("testsuite")
    props = [p.get("value") for p in suite.find("properties") if p.get("name") == "sl1conf_waiver"]
    assert props == want
    # certify's junit.xml: a run that waived something holds its waived line and every waiver's use,
    # the others the stale waivers only; together, the plugin's lines
    said = [w for w in want if w.startswith("waiver ")]
    stale = [w for w in said if " matched nothing: " in w]
    assert said and stale and stale != said
    suites = [s for s in ET.fromstring(junit).iter("testsuite") if s.find("properties") is not None]
    assert len(suites) == 2  # fp16 p and s
    for s in suites:
        ours = [p.get("value") for p in s.find("properties") if p.get("name") == "sl1conf_waiver"]
        run = s.get("name").rsplit(": ", 1)[1]  # the suite of "fp16 s"
        mine = [w for w in want if w.startswith(f"{run}: waived: ")]
        assert ours == (mine + said if mine else stale), (run, ours)

    # reproduce commands: never into the report folder they came from
    outs = _outs(stdout) | _outs(plugin_xml)
    assert outs and "sl1conf-report" not in outs, outs


def test_a_reproduce_command_avoids_a_report_folder_named_like_it(pytester, tmp_path):
    """One process, the report folder named as the plugin would name a reproduction's: the
    reproduce command writes elsewhere; the waiver lines are in the summary without xdist too."""
    waivers = pytester.path / "waivers.toml"
    waivers.write_text(WAIVERS)
    folder = "sl1conf-reproduce-fp16-p"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sl1-impl", DEFECT, "--sl1-platform", "ieee", "--sl1-dtype", "fp16",
        "--sl1-variant", "p", "--sl1-quick", "--sl1-waivers", "waivers.toml", "--sl1-report", folder, timeout=300)
    assert result.ret == 1
    stdout = result.stdout.str()
    outs = _outs(stdout)
    assert outs and folder not in outs and "sl1conf-report" not in outs, outs
    assert (pytester.path / folder / "report.json").is_file()
    _, report, printed = _certify(tmp_path, waivers, "--variant", "p")
    for line in _expected_waiver_lines(report, printed):
        assert f"sl1conf: {line}" in stdout.splitlines(), line

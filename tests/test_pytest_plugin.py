"""The pytest plugin (conformance/pytest_plugin.py), end to end.

Every run is a fresh pytest in a subprocess (pytester.runpytest_subprocess) in an empty
folder, so the plugin comes in through the installed ``pytest11`` entry point, exactly as a
CI job would get it. Expected items and failures are computed here from the catalog, the
quick families and the engine itself, not written down by hand.
"""

import re
import xml.etree.ElementTree as ET

import pytest

from sl1conf.adapters import load
from sl1conf.conformance.cli import main as sl1conf_main
from sl1conf.conformance.certify.engine import certify, quick_families
from sl1conf.conformance.vectors.families import family_by_name
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.requirements import CATALOG

pytest_plugins = ["pytester"]

KERNEL = ("--sl1-impl", "builtin:kernel", "--sl1-platform", "ft78ne", "--sl1-quick")
DEFECT = "builtin:model:muldiv-fp16"  # native-half diff*dy/beta: overflows where the result is finite
DEFECT_ARGS = ("--sl1-impl", DEFECT, "--sl1-platform", "ieee", "--sl1-dtype", "fp16", "--sl1-variant", "p",
               "--sl1-quick")


@pytest.fixture(autouse=True)
def _entry_points_load(monkeypatch):
    """The subprocesses must load installed plugins (the outer run may have turned that off)."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)


def _run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=300)


def _ids(dtype, variants):
    """Node ids the plugin must collect for a quick run: one per requirement, R01 per family and
    once over the whole run (its rounding bias)."""
    families = [n for n in quick_families() if dtype in family_by_name(n).dtypes]
    out = []
    for v in variants:
        for r in CATALOG:
            if r.id == "R01":
                out += [f"sl1conf::{dtype}-{v}::R01::{f}" for f in [*families, "over-the-run"]]
            else:
                out.append(f"sl1conf::{dtype}-{v}::{r.id}")
        out.append(f"sl1conf::{dtype}-{v}::completeness")
    return out


def _testcase_id(tc) -> str:
    """A JUnit testcase's node id (junitxml writes classname with dots for '::')."""
    return tc.get("classname").replace(".", "::") + "::" + tc.get("name")


def test_passing_implementation_collects_one_item_per_requirement_and_family(pytester):
    result = _run(pytester, *KERNEL, "-v")
    ids = _ids("fp32", ("s", "p"))  # ft78ne documents fp32 only; the kernel offers both variants
    assert len(ids) == 2 * (len(CATALOG) - 1 + 10 + 1 + 1)  # requirements, R01's 10 families and the run, completeness
    result.assert_outcomes(passed=len(ids))
    assert result.ret == 0
    passed = re.findall(r"^(sl1conf::\S+) PASSED", result.stdout.str(), re.M)
    assert passed == ids  # and in catalog order
    result.stdout.fnmatch_lines(["sl1conf: builtin:kernel on ft78ne; runs: fp32-s, fp32-p; *quick*"])


def test_failing_implementation_fails_exactly_its_requirements(pytester, capsys):
    result = _run(pytester, *DEFECT_ARGS, "--junitxml=sl1conf.xml")
    assert result.ret == 1

    with load(DEFECT) as impl:
        [run] = certify(impl, load_profile("ieee"), dtypes=["fp16"], variants=["p"], quick=True).to_json()["runs"]
    expected = set()
    for r in run["requirements"]:
        if r["id"] == "R01":
            expected |= {f"sl1conf::fp16-p::R01::{f['family']}" for f in r["families"] if f["status"] == "fail"}
        elif r["status"] == "fail":
            expected.add(f"sl1conf::fp16-p::{r['id']}")
    assert "sl1conf::fp16-p::R03" in expected and "sl1conf::fp16-p::R01::fp16-overflow" in expected
    ids = _ids("fp16", ("p",))
    result.assert_outcomes(failed=len(expected), passed=len(ids) - len(expected))

    # JUnit: parseable, one testcase per item, failures exactly where the engine says.
    cases = {_testcase_id(tc): tc for tc in ET.parse(pytester.path / "sl1conf.xml").getroot().iter("testcase")}
    assert sorted(cases) == sorted(ids)
    assert {i for i, tc in cases.items() if tc.find("failure") is not None} == expected
    props = lambda i: {p.get("name"): p.get("value") for p in cases[i].iter("property")}  # noqa: E731
    assert props("sl1conf::fp16-p::R03")["sl1conf_status"] == "fail"
    assert props("sl1conf::fp16-p::R17")["sl1conf_status"] == "recorded"
    assert "sl1conf_observed" in props("sl1conf::fp16-p::R17")

    # The R03 failure reads like the report: statement, counts, worst input in hex, commands.
    r03 = next(r for r in run["requirements"] if r["id"] == "R03")
    text = cases["sl1conf::fp16-p::R03"].find("failure").text
    w = r03["worst"]
    assert f"R03 overflow failed for {DEFECT} (fp16 variant p on ieee)" in text
    assert r03["statement"] in text
    assert f"{r03['failed']} of {r03['checked']} checked failed" in text
    assert f"dy={w['dy']} x1={w['x1']} x2={w['x2']} beta={w['beta']}" in text
    explain = f"sl1conf explain --dtype fp16 --dy {w['dy']} --x1 {w['x1']} --x2 {w['x2']} --beta {w['beta']}"
    assert explain in text
    assert (f"sl1conf certify --impl {DEFECT} --platform ieee --dtype fp16 --variant p --quick "
            "--out sl1conf-reproduce-fp16-p") in text  # never the report folder the docs use (issue 40)
    assert 1 <= len(re.findall(r"^      sl1conf explain ", text, re.M)) <= 5
    result.stdout.fnmatch_lines(["*R03 overflow failed for builtin:model:muldiv-fp16*", f"*{explain}*"])
    # The reproduction command is one the command line takes.
    assert sl1conf_main(explain.split()[1:]) == 0
    assert w["x1"] in capsys.readouterr().out


def test_xdist_loadgroup_runs_each_certification_on_one_worker(pytester):
    pytest.importorskip("xdist")
    result = _run(pytester, *KERNEL, "-n", "2", "--dist", "loadgroup", "-v")
    ids = _ids("fp32", ("s", "p"))
    result.assert_outcomes(passed=len(ids))
    workers = {}
    for gw, nodeid in re.findall(r"^\[(gw\d+)\].* PASSED (sl1conf::\S+)", result.stdout.str(), re.M):
        workers.setdefault(nodeid.split("::")[1], set()).add(gw)
    assert sorted(workers) == ["fp32-p", "fp32-s"]
    assert all(len(w) == 1 for w in workers.values()), workers


def test_runs_the_profile_lists_and_the_implementation_lacks_fail_as_incomplete(pytester):
    """divmul-fp16's emulation offers fp16 only; ieee lists fp32 too. Not narrowed, the suite
    has a failing missing-runs item naming them; each run's completeness item passes (its calls
    were all judged). Narrowed with --sl1-dtype fp16 there is no such item; narrowed with
    --sl1-variant p alone, fp32 p was still asked for and is lacking: the item names it."""
    args = ("--sl1-impl", "builtin:model:divmul-fp16", "--sl1-platform", "ieee", "--sl1-quick", "--sl1-variant", "p",
            "--sl1-dtype", "fp16")
    result = _run(pytester, *args[:4], "--sl1-quick", "-k", "missing or completeness", "-v")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*sl1conf::missing-runs FAILED*",
                                 "*not offered by builtin:model:divmul-fp16, though profile ieee lists them: "
                                 "fp32 s, fp32 p*"])
    assert re.findall(r"^(sl1conf::\S+::completeness) PASSED", result.stdout.str(), re.M) == [
        "sl1conf::fp16-s::completeness", "sl1conf::fp16-p::completeness"]
    narrowed = _run(pytester, *args, "-k", "missing or completeness", "-v")
    narrowed.assert_outcomes(passed=1)
    assert "missing-runs" not in narrowed.stdout.str()
    variant_only = _run(pytester, *args[:7], "-k", "missing or completeness", "-v")
    assert variant_only.ret == 1
    variant_only.stdout.fnmatch_lines(["*sl1conf::missing-runs FAILED*",
                                       "*not offered by builtin:model:divmul-fp16, though profile ieee lists them: "
                                       "fp32 p (narrow*"])


def test_without_sl1_impl_the_plugin_does_nothing(pytester):
    pytester.makepyfile(test_plain="""
        import sys

        def test_plain():
            # the plugin is loaded (entry point) but imports nothing of the suite beyond itself
            assert "sl1conf.conformance.pytest_plugin" in sys.modules
            assert not {"sl1conf.conformance.certify.engine", "sl1conf.adapters", "numpy"} & set(sys.modules)
    """)
    result = _run(pytester, "-v")
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*collected 1 item"])
    assert "sl1conf::" not in result.stdout.str()


@pytest.mark.parametrize("args, message", [
    (("--sl1-impl", "builtin:kernel", "--sl1-platform", "no-such-platform"),
     "ERROR: --sl1-platform no-such-platform: unknown platform 'no-such-platform'*"),
    (("--sl1-impl", "ctypes:./no-such-lib.so", "--sl1-platform", "ieee"),
     "ERROR: --sl1-impl ctypes:./no-such-lib.so: no such library*"),
    (("--sl1-impl", "builtin:kernel", "--sl1-platform", "ft78ne", "--sl1-dtype", "fp16"),
     "ERROR: --sl1-platform ft78ne: profile ft78ne has no fp16*"),
    (("--sl1-platform", "ieee"), "ERROR: --sl1-platform given without --sl1-impl SPEC"),
])
def test_bad_options_are_a_usage_error(pytester, args, message):
    result = _run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR == 4
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()

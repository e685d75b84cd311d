"""A gate compares like with like (issue 40, item 2): ``sl1conf gate NEW --baseline OLD`` exits 2,
with one line naming what differs, when the profile, the vector set or the scope (--quick, --only,
the runs asked for, the requirements judged) differ, unless ``--allow-mismatch WHAT[,WHAT]`` says
that may differ; then it compares what is comparable and says what it could not.

Each report is a committed report (reports/kernel-ieee: builtin:kernel on ieee, full, fp16 and fp32,
s and p) changed here in one respect, so what differs is known by construction.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from sl1conf.conformance.cli import main

BASE = Path(__file__).resolve().parents[1] / "reports" / "kernel-ieee" / "report.json"


@pytest.fixture(scope="module")
def base() -> dict:
    return json.loads(BASE.read_text())


def _gate(tmp_path, new: dict, old: dict, *more) -> int:
    (tmp_path / "new.json").write_text(json.dumps(new))
    (tmp_path / "old.json").write_text(json.dumps(old))
    return main(["gate", str(tmp_path / "new.json"), "--baseline", str(tmp_path / "old.json"), *more])


def _other_profile(r: dict) -> dict:
    r = copy.deepcopy(r)
    r["profile"].update(name="mt7004", sha256="0" * 64)
    return r


def _other_vectors(r: dict) -> dict:
    r = copy.deepcopy(r)
    r["vectors"]["fp32"]["manifest_sha256"] = "f" * 64
    return r


def _quick(r: dict) -> dict:
    r = copy.deepcopy(r)
    r["quick"] = True
    return r


def _fp32_only(r: dict) -> dict:  # narrowed with --dtype fp32: the fp16 runs were not asked for
    r = copy.deepcopy(r)
    r["runs"] = [run for run in r["runs"] if run["dtype"] == "fp32"]
    r["narrowed"] = ["--dtype"]
    return r


def _without_r18(r: dict) -> dict:  # another suite version, whose catalog does not judge R18
    r = copy.deepcopy(r)
    r["suite_version"] = r["suite_version"] + ".dev-without-r18"
    for run in r["runs"]:
        run["requirements"] = [q for q in run["requirements"] if q["id"] != "R18"]
    return r


def _only_r03(r: dict) -> dict:
    r = copy.deepcopy(r)
    r["only"] = ["R03"]
    for run in r["runs"]:
        run["requirements"] = [q for q in run["requirements"] if q["id"] == "R03"]
    return r


CASES = {  # name: (make the new report from the baseline, what differs, a word the one line must carry)
    "profile": (_other_profile, "profile", "ieee -> mt7004"),
    "vectors": (_other_vectors, "vectors", "fp32"),
    "quick": (_quick, "scope", "full -> --quick"),
    "only": (_only_r03, "scope", "--only (all) -> R03"),
    "runs": (_fp32_only, "scope", "only in the baseline: fp16 p, fp16 s"),
    "requirements": (_without_r18, "scope", "only in the baseline: R18"),
}


@pytest.mark.parametrize("name", CASES)
def test_a_mismatch_is_exit_2_in_one_line_naming_it(name, base, tmp_path, capsys):
    make, what, words = CASES[name]
    assert _gate(tmp_path, make(base), base) == 2
    got = capsys.readouterr()
    [line] = got.err.strip().splitlines()
    assert words in line and f"--allow-mismatch {what}" in line, line
    assert "PASS" not in got.out


@pytest.mark.parametrize("name", CASES)
def test_allowed_it_compares_what_is_comparable_and_says_what_it_did_not(name, base, tmp_path, capsys):
    make, what, _ = CASES[name]
    assert _gate(tmp_path, make(base), base, "--allow-mismatch", what) == 0
    out = capsys.readouterr().out
    assert "(allowed)" in out and "gate: PASS" in out


def test_allowing_one_mismatch_does_not_allow_another(base, tmp_path, capsys):
    assert _gate(tmp_path, _quick(_other_profile(base)), base, "--allow-mismatch", "profile") == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "--allow-mismatch scope" in line and "profile differs" not in line
    assert _gate(tmp_path, _quick(_other_profile(base)), base, "--allow-mismatch", "profile,scope") == 0


def test_a_quick_regression_against_a_full_baseline_is_refused_then_still_caught(base, tmp_path, capsys):
    """Issue 40's case: a --quick run of a regressed kernel gated against a full baseline said
    "gate: PASS, no regression". Now it is refused; allowed, the regression in what both judged fails it."""
    new = _quick(base)
    run = next(r for r in new["runs"] if (r["dtype"], r["variant"]) == ("fp32", "p"))
    r03 = next(q for q in run["requirements"] if q["id"] == "R03")
    assert r03["status"] == "pass"
    r03.update(status="fail", failed=264)
    assert _gate(tmp_path, new, base) == 2
    assert _gate(tmp_path, new, base, "--allow-mismatch", "scope") == 1
    out = capsys.readouterr().out
    assert "REGRESSION fp32 p R03" in out and "pass -> FAIL" in out


def test_allowed_runs_outside_the_new_scope_are_notes_but_a_lost_run_is_a_regression(base, tmp_path, capsys):
    assert _gate(tmp_path, _fp32_only(base), base, "--allow-mismatch", "scope") == 0
    out = capsys.readouterr().out
    assert "fp16 s: not in the new report's scope, not compared" in out and "REGRESSION" not in out
    lost = copy.deepcopy(base)  # asked for (the profile lists it) and lacking: a regression, not a scope
    lost["runs"] = [r for r in lost["runs"] if (r["dtype"], r["variant"]) != ("fp16", "s")]
    lost["missing_runs"] = ["fp16 s"]
    assert _gate(tmp_path, lost, base) == 1
    assert "fp16 s: the run is missing from the new report" in capsys.readouterr().out


def test_allowed_requirements_outside_one_scope_are_named_not_compared(base, tmp_path, capsys):
    assert _gate(tmp_path, _without_r18(base), base, "--allow-mismatch", "scope") == 0
    out = capsys.readouterr().out
    assert "requirements only in the baseline, not compared: R18" in out and "no longer in the report" not in out


def test_allowed_other_vectors_leave_the_counts_uncompared(base, tmp_path, capsys):
    new = _other_vectors(base)
    run = next(r for r in new["runs"] if r["dtype"] == "fp32")
    run["errors"]["max_ulp"] += 7  # on other vectors, not a regression
    assert _gate(tmp_path, new, base, "--allow-mismatch", "vectors") == 0
    assert "(not compared)" in capsys.readouterr().out


def test_the_same_report_is_like_itself(base, tmp_path, capsys):
    assert _gate(tmp_path, base, base) == 0
    assert capsys.readouterr().err == ""


def test_an_unknown_mismatch_name_is_bad_usage(base, tmp_path, capsys):
    assert _gate(tmp_path, base, base, "--allow-mismatch", "profil") == 2
    assert "profile, vectors, scope" in capsys.readouterr().err


def test_a_requirement_gone_under_the_same_suite_and_only_is_a_regression_not_a_scope(base, tmp_path, capsys):
    """The same suite version and --only judge the same catalog: a requirement that held in the
    baseline and is missing from the new report was dropped, a regression (exit 1), never a scope
    to allow away."""
    gone = copy.deepcopy(base)
    for run in gone["runs"]:
        run["requirements"] = [q for q in run["requirements"] if q["id"] != "R18"]
    assert _gate(tmp_path, gone, base) == 1
    assert "R18 position-invariance: no longer in the report" in capsys.readouterr().out


def test_only_given_in_another_order_or_case_is_the_same_scope(base, tmp_path, capsys):
    def only(r: dict, ids: list) -> dict:
        r = copy.deepcopy(r)
        r["only"] = ids
        for run in r["runs"]:
            run["requirements"] = [q for q in run["requirements"] if q["id"] in ("R01", "R03")]
        return r
    assert _gate(tmp_path, only(base, ["R03", "R01"]), only(base, ["R01", "r03"])) == 0
    assert "scope" not in capsys.readouterr().out

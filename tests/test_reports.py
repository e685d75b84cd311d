"""Reports: schema, Markdown, HTML (offline, with plots), JUnit, re-rendering, gate and compare.

The reports judged here are real ones: the Cython kernel (passes), the recipmul-fp16 model
(a native-half order that overflows: fails R01 R02 R03 R06, see test_certify) and the sample
library with a defect that writes past the end (fails R10 and R13, no element to show).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from sl1conf.conformance.certify import errorstats
from sl1conf.conformance.cli import main
from sl1conf.conformance.reports.junit import render_junit
from sl1conf.conformance.reports.markdown import render_markdown
from sl1conf.conformance.reports import write as W
from sl1conf.conformance.reports.view import view
from sl1conf.conformance.requirements.results import Report
from sl1conf.reference import formats as F

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "conformance" / "schemas" / "report.schema.json").read_text())
FILES = ("report.json", "report.md", "report.html", "junit.xml")


def _certify(out: Path, *argv) -> int:
    return main(["certify", *argv, "--quick", "--out", str(out)])


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports")
    codes = {
        "pass": _certify(root / "pass", "--impl", "builtin:kernel", "--platform", "ieee"),
        "fail": _certify(root / "fail", "--impl", "builtin:model:recipmul-fp16", "--platform", "ieee",
                         "--dtype", "fp16"),
        "memory": _certify(root / "memory", "--impl", "builtin:sample:WRITE_PAST_END", "--platform", "ft78ne",
                           "--dtype", "fp32", "--variant", "p"),
    }
    assert codes == {"pass": 0, "fail": 1, "memory": 1}
    return root


def load(root: Path, name: str) -> dict:
    return json.loads((root / name / "report.json").read_text())


# --- report.json and its schema ---------------------------------------------------------------

def test_certify_writes_every_format_and_each_json_matches_the_schema(reports):
    for name in ("pass", "fail", "memory"):
        assert sorted(p.name for p in (reports / name).iterdir()) == sorted(FILES)
        jsonschema.validate(load(reports, name), SCHEMA)


def test_the_report_identifies_what_was_tested(reports):
    r = load(reports, "memory")
    impl = r["implementation"]
    assert re.fullmatch(r"[0-9a-f]{64}", impl["sha256"]) and Path(impl["library"]).expanduser().is_file()
    # stored as ~/... or relative (reports/write.portable_paths); absolute only where neither can
    # name it (a build cache outside the home folder and the working folder: SL1CONF_CACHE=/tmp/...)
    lib = Path(impl["library"])
    assert not lib.is_absolute() or not (lib.is_relative_to(Path.home()) or lib.is_relative_to(Path.cwd())), lib
    assert "fp_smoothl1lossgrad_p" in impl["symbols"]
    assert re.fullmatch(r"[0-9a-f]{64}", r["profile"]["sha256"]) and r["profile"]["name"] == "ft78ne"
    assert r["invocation"]["impl"] == "builtin:sample:WRITE_PAST_END"
    assert r["vectors"]["fp32"]["id"].startswith("fp32-seed2026-")
    assert r["created"][:4].isdigit() and r["host"]["python"]


def test_the_schema_rejects_what_it_should():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    validator.check_schema(SCHEMA)
    assert not validator.is_valid({"schema": "sl1conf-report"})


@pytest.mark.parametrize("mutate, words", [
    (lambda r: r["runs"][0]["requirements"][0].update(status="maybe"), "does not match the schema"),
    (lambda r: r.pop("created"), "'created' is a required property"),
    (lambda r: r.update(schema_version=99), "unknown schema version 99"),
])
def test_report_rejects_a_corrupt_report_in_one_line(reports, tmp_path, capsys, mutate, words):
    r = load(reports, "pass")
    mutate(r)
    (tmp_path / "report.json").write_text(json.dumps(r))
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # nothing half-written


def _beyond(e: dict) -> int:
    """A run's elements accepted beyond the budget: the judge's reasons reachable, alternative, open_bounds."""
    return sum(e["reasons"][r] for r in ("reachable", "alternative", "open_bounds"))


def test_largest_error_leaves_out_exceptions_and_names_its_input(reports):
    """The kernel (divmul-fp16) is at most 2 ULP from the correctly rounded result wherever it is
    not accepted beyond the budget; the worst element it names must really be that far (checked with formats)."""
    for run in load(reports, "pass")["runs"]:
        e = run["errors"]
        assert e["max_ulp"] <= 2 and e["nan_mismatches"] == 0 and _beyond(e) > 0
        w = e["worst"]
        fmt = F.format_by_name(run["dtype"])
        assert int(F.ulp_distance(fmt, np.array(int(w["expected"], 16)), np.array(int(w["got"], 16)))) == e["max_ulp"]
        assert sum(sum(h) for h in e["ulp_histogram"].values()) == sum(e["by_ratio"]["elements"]) + e["by_ratio"]["outside"]


def test_elements_accepted_beyond_the_budget_are_shown_with_what_accepted_them(reports):
    """The kernel's divmul-fp16 bits are accepted where they are far from the correctly rounded
    result (beta large, diff / beta underflowing): those elements are counted apart, with the
    largest distance among them, what accepted them, the worst input, and a headline line."""
    report = load(reports, "pass")
    budget = report["profile"]["max_ulp"]
    seen = set()
    for run in report["runs"]:
        e = run["errors"]
        # a normal result whose quotient underflowed to zero is no distance: named, not counted (issue 25)
        assert e["not_a_distance"]["zero where the result is normal"]["accepted"] > 0
        if "beyond_budget" not in e:
            accepted = sum(k["accepted"] for k in e["not_a_distance"].values())
            assert accepted == _beyond(e), e
            continue
        seen.add(run["dtype"])
        far = e["beyond_budget"]
        # every element accepted beyond the budget is either a distance (counted here) or an accepted infinity/NaN
        # against a number (counted by kind, never as ULPs)
        accepted_specials = sum(k["accepted"] for k in (e.get("not_a_distance") or {}).values())
        assert far["elements"] + accepted_specials == _beyond(e)
        assert far["elements"] == sum(n for names in far["by"].values() for n in names.values()) > 0
        assert set(far["by"]) <= {"reachable", "alternative", "open_bounds"} and far["worst"]["reason"] in far["by"]
        # every element judged has one reason: the reasons add up to the elements the histogram holds
        assert sum(e["reasons"].values()) == sum(sum(h) for h in e["ulp_histogram"].values())
        assert far["max_ulp"] > budget[run["dtype"]] and far["worst"]["ulp"] == far["max_ulp"]
        fmt = F.format_by_name(run["dtype"])
        w = far["worst"]
        assert int(F.ulp_distance(fmt, np.array(int(w["expected"], 16)), np.array(int(w["got"], 16)))) == far["max_ulp"]
    assert "fp16" in seen  # divmul-fp16's far (but nonzero) quotients
    md = (reports / "pass" / "report.md").read_text()
    assert re.search(r"accepted beyond the budget at a distance: [0-9,]+, each with what it took \(reachable: divmul-fp16",
                     md.split("## ")[0])


def test_infinity_and_nan_against_numbers_are_named_not_counted_as_ulps(reports):
    """recipmul-fp16 (native half, not accepted) overflows where the exact result is finite:
    those results are counted by kind, and the largest error is over finite results only."""
    run = load(reports, "fail")["runs"][0]
    e = run["errors"]
    inf = e["not_a_distance"]["infinity where the result is finite"]
    assert inf["elements"] > 0 and inf["accepted"] == 0  # not an accepted model: R03 rejects them
    assert inf["first"]["ulp"] == "infinity where the result is finite"
    assert int(inf["first"]["got"], 16) & 0x7FFF == 0x7C00 and int(inf["first"]["expected"], 16) & 0x7C00 != 0x7C00
    w = e["worst"]
    assert int(w["got"], 16) & 0x7C00 != 0x7C00 and int(w["expected"], 16) & 0x7C00 != 0x7C00
    md = (reports / "fail" / "report.md").read_text()
    assert "infinity where the result is finite: " in md.split("## ")[0]


def test_special_classes_by_hand():
    from sl1conf.conformance.rules.judge import SPECIALS, special_class

    fmt = F.FP16  # +inf 0x7c00, -inf 0xfc00, NaN 0x7e00, 1.0 0x3c00, max 0x7bff
    got = np.array([0x7C00, 0x7E00, 0x3C00, 0x3C00, 0xFC00, 0x7E00, 0x7C00, 0x3C01], np.uint16)
    want = np.array([0x7BFF, 0x3C00, 0x7C00, 0x7E00, 0x7C00, 0xFE01, 0x7C00, 0x3C00], np.uint16)
    names = [SPECIALS[c] if c >= 0 else None for c in special_class(fmt, got, want)]
    assert names == ["infinity where the result is finite", "NaN where the result is a number",
                     "finite where the result is infinite", "a number where the result is NaN", "the other infinity",
                     None, None, None]  # NaN against NaN is a class; inf against inf, and numbers, are distances
    # no distance either (issue 25: MindSpore's "2,139,095,023 ULP"): the other sign where either is normal,
    # zero for a normal result, a normal number for a zero. Still distances: a subnormal of the other sign
    # against a subnormal (0x8001 against 0x0001: 2 steps), zero for a subnormal, the other zero.
    got = np.array([0xBC00, 0x8001, 0x0000, 0x8000, 0x3C00, 0x0000, 0x8000, 0x0400, 0x8001], np.uint16)
    want = np.array([0x3C00, 0x3C00, 0x3C00, 0x0400, 0x0000, 0x0001, 0x0000, 0x8000, 0x0001], np.uint16)
    names = [SPECIALS[c] if c >= 0 else None for c in special_class(fmt, got, want)]
    assert names == ["the other sign", "the other sign", "zero where the result is normal",
                     "zero where the result is normal", "a normal number where the result is zero", None, None,
                     "a normal number where the result is zero", None]


def test_error_buckets_by_hand():
    dist = np.array([0, 1, 2, 3, 4, 5, 8, 9, 64, 65, 10**9, F.NAN_MISMATCH], np.int64)
    names = [errorstats.BUCKETS[i] for i in errorstats.bucket_of(dist)]
    assert names == ["0", "1", "2", "3", "4", "5-8", "5-8", "9-64", "9-64", "65+", "65+", "nan"]


def test_ratio_bins_by_hand():
    """x1 - x2 = 0.5 with beta = 1 falls in the bin [0.5, 0.6); 1.0 in [1.0, 1.1); beta 0 outside."""
    fmt = F.FP16
    s = errorstats.ErrorStats()
    bits = lambda *v: F.to_bits(fmt, np.array(v, np.float16))  # noqa: E731
    s.add("f", fmt, np.array([0, 3], np.int64), bits(0.5, 1.0), bits(0.0, 0.0), int(bits(1.0)[0]), 0)
    s.add("f", fmt, np.array([7], np.int64), bits(1.0), bits(0.0), int(bits(0.0)[0]), 1)
    e = s.entry(None).by_ratio.to_json()
    edges = e["edges"]
    assert e["elements"][edges.index(0.5)] == 1 and e["elements"][edges.index(1.0)] == 1
    assert e["max_ulp"][edges.index(1.0)] == 3 and e["inexact"][edges.index(0.5)] == 0
    assert e["outside"] == 1 and s.worst_ulp == 7 and s.worst_at == (1, 0)


def test_ratio_bins_are_those_of_a_binary_search_over_the_edges():
    """The arithmetic binning (errorstats._ratio_bins) against numpy's search, on every edge, the
    values next to each edge, decimals of one and two places and uniform ratios."""
    rng = np.random.default_rng(1)
    edges = np.array(errorstats.RATIO_EDGES)
    r = np.concatenate([rng.uniform(-4, 4, 10 ** 5), edges[:-1], np.nextafter(edges[1:], -np.inf),
                        np.nextafter(edges[:-1], np.inf), rng.integers(-40, 40, 10 ** 4) / 10.0,
                        rng.integers(-400, 400, 10 ** 4) / 100.0])
    r = r[(r >= edges[0]) & (r < edges[-1])]
    want = np.searchsorted(edges, r, side="right") - 1
    assert np.array_equal(errorstats._ratio_bins(r), want)


@pytest.mark.parametrize("impl, dtype", [("builtin:model:muldiv-fp16", "fp16"), ("builtin:model:divmul-fp32", "fp32")])
def test_a_runs_statistics_at_once_are_those_of_its_calls_one_by_one(impl, dtype):
    """ErrorStats.add_run over a run's whole judgement (in chunks, looking at the elements with a
    distance only) gives what add() call by call gives: every count, the worst and the first
    of each kind, on mt7004 (an error model: elements accepted beyond the budget)."""
    from sl1conf.adapters import load as load_adapter
    from sl1conf.conformance.certify import engine, judging
    from sl1conf.conformance.rules.profiles import load_profile

    adapter, profile = load_adapter(impl), load_profile("mt7004")
    vs = engine.vectors_for(dtype, quick=True)
    calls = engine._calls(vs, "p", profile)
    judged, _, _, (whole, bounds) = judging.judge_outcomes(adapter, profile, vs, calls,
                                                           adapter.run([c for _, _, c in calls]), 0)
    one_by_one, at_once = errorstats.ErrorStats(), errorstats.ErrorStats()
    for i, j in enumerate(judged):
        one_by_one.add(j.family, vs.format, j.dist, j.case.x1, j.case.x2, j.case.beta, i, j.reason, got=j.got,
                       oracle=j.expected.oracle, accepted_by=j.accepted_as(), accepted=j.ok,
                       unwritten=j.unwritten if j.case.out_alias is None else None)
    at_once.add_run(vs.format, whole, judged, bounds)
    assert json.dumps(at_once.entry(None).to_json(), sort_keys=True) == json.dumps(one_by_one.entry(None).to_json(), sort_keys=True)
    assert (at_once.worst_at, at_once.accepted.worst, at_once.specials) == \
        (one_by_one.worst_at, one_by_one.accepted.worst, one_by_one.specials)
    assert one_by_one.worst_ulp > 0 and one_by_one.accepted.beyond  # the comparison is about something


# --- what a reader sees -------------------------------------------------------------------------

def _first_pass_row(text: str) -> int:
    """Where the full requirement table's first passing row is (the matrix under the verdict,
    which has every status by design, comes before it)."""
    start = max(text.find("## Requirements"), text.find("<h2>Requirements</h2>"))
    m = re.compile(r"\| (pass|not-applicable) \||>pass<").search(text, start)
    return m.start() if m else len(text)


@pytest.mark.parametrize("fname", ["report.md", "report.html"])
def test_the_verdict_names_the_failing_ids_and_the_matrix_follows_it(reports, fname):
    """The first line says which requirements fail; the pass/fail matrix comes right after the
    verdict, before the first failure block."""
    r = load(reports, "fail")
    failing = sorted({q["id"] for run in r["runs"] for q in run["requirements"] if q["status"] == "fail"})
    text = (reports / "fail" / fname).read_text()
    first = text.splitlines()[0] if fname.endswith(".md") else text[text.index("<title>"):text.index("</title>")]
    assert "FAIL on " + ", ".join(failing) in first
    matrix = text.find("| id | requirement |") if fname.endswith(".md") else text.find('<figure class="matrix">')
    assert 0 < matrix < text.find("Failures (")


@pytest.mark.parametrize("name, fname", [("fail", "report.md"), ("fail", "report.html"),
                                         ("memory", "report.md"), ("memory", "report.html")])
def test_failures_come_before_any_passing_row(reports, name, fname):
    """The failing requirement, its worst input (in hex) and its reproduction command are all
    above the first passing row, so nobody scrolls past passing rows to find them."""
    r = load(reports, name)
    text = (reports / name / fname).read_text()
    limit = _first_pass_row(text)
    for run in r["runs"]:
        for q in run["requirements"]:
            if q["status"] != "fail":
                continue
            assert 0 <= text.find(f"{q['id']} {q['title']}") < limit
            if "worst" in q:
                assert 0 <= text.find(q["worst"]["got"]) < limit
                assert 0 <= text.find(f"--only {q['id']},{q['worst']['case']}") < limit
                assert 0 <= text.find(f"--x1 {q['worst']['x1']}") < limit
            else:
                assert 0 <= text.find(f"--only {q['id']}") < limit


def test_the_reproduction_commands_reproduce(reports, tmp_path, capsys):
    r = load(reports, "fail")
    text = (reports / "fail" / "report.md").read_text()
    req = next(q for q in r["runs"][0]["requirements"] if q["id"] == "R02")
    w = req["worst"]
    commands = re.findall(r"^sl1conf .*$", text, re.M)
    again = next(c for c in commands if f"--only R02,{w['case']}" in c)
    argv = shlex.split(again)[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "again")
    capsys.readouterr()
    assert main(argv) == 1
    rerun = json.loads((tmp_path / "again" / "report.json").read_text())
    [run] = rerun["runs"]
    assert [q["id"] for q in run["requirements"]] == ["R02"] and run["requirements"][0]["worst"] == w
    explain = next(c for c in commands if c.startswith("sl1conf explain") and f"--x1 {w['x1']}" in c)
    assert main(shlex.split(explain)[1:]) == 0
    assert w["expected"] in capsys.readouterr().out


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.refs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [v for k, v in attrs if k in ("src", "href", "xlink:href", "action", "data") and v]


@pytest.mark.parametrize("name", ["pass", "fail"])
def test_html_is_self_contained_and_has_its_plots(reports, name):
    html = (reports / name / "report.html").read_text()
    p = _Refs()
    p.feed(html)
    assert "script" not in p.tags and "link" not in p.tags and "img" not in p.tags and "iframe" not in p.tags
    assert all(ref.startswith("#") for ref in p.refs), p.refs  # only in-page references (SVG clip paths)
    assert "@import" not in html and not re.search(r"url\((?!#)", html)
    runs = load(reports, name)["runs"]
    assert p.tags.count("svg") == 2 + len(runs)  # matrix, error against diff/beta, one histogram per run
    assert "requirement status per run" in html and "error against diff / beta" in html
    for run in runs:
        assert f"{run['dtype']} {run['variant']}: ULP error per family" in html


def test_junit_parses_and_counts(reports):
    for name in ("pass", "fail", "memory"):
        r = load(reports, name)
        root = ET.parse(reports / name / "junit.xml").getroot()
        assert root.tag == "testsuites"
        cases = root.findall(".//testcase")
        failures = root.findall(".//testcase/failure")
        assert int(root.get("tests")) == len(cases) and int(root.get("failures")) == len(failures)
        failing = {(run["dtype"], run["variant"], q["id"]) for run in r["runs"] for q in run["requirements"]
                   if q["status"] == "fail"}
        # named as the pytest plugin names its items: sl1conf.fp16-p / R02, sl1conf.fp16-p.R01 / <family>
        failed = {(*tc.get("classname").split(".")[1].split("-"), tc.get("classname").split(".")[2]
                   if tc.get("classname").count(".") == 2 else tc.get("name"))
                  for tc in cases if tc.find("failure") is not None}
        assert failed == failing
        assert len(root.findall(".//testcase/skipped")) >= sum(
            q["status"] == "not-applicable" for run in r["runs"] for q in run["requirements"])
    root = ET.parse(reports / "fail" / "junit.xml").getroot()
    r02 = next(tc for tc in root.iter("testcase") if tc.get("name") == "R02")
    assert r02.get("classname") == "sl1conf.fp16-s" and r02.find("failure").get("message").startswith("R02 boundary: ")
    worst = next(q for q in load(reports, "fail")["runs"][0]["requirements"] if q["id"] == "R02")["worst"]
    assert worst["x1"] in r02.find("failure").get("message")
    assert "sl1conf certify" in r02.find("failure").text


def test_report_renders_from_report_json_alone(reports, tmp_path, capsys):
    src = reports / "fail"
    (tmp_path / "report.json").write_bytes((src / "report.json").read_bytes())
    assert main(["report", str(tmp_path)]) == 0
    for f in FILES[1:]:
        assert (tmp_path / f).read_text() == (src / f).read_text(), f
    other = tmp_path / "only-md"
    assert main(["report", str(tmp_path / "report.json"), "--format", "md", "--out", str(other)]) == 0
    assert [p.name for p in other.iterdir()] == ["report.md"]


# --- gate and compare ---------------------------------------------------------------------------

def _write(tmp_path, name, report) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(report))
    return str(path)


def test_gate_passes_an_unchanged_report(reports, capsys):
    assert main(["gate", str(reports / "pass"), "--baseline", str(reports / "pass")]) == 0
    assert "no regression" in capsys.readouterr().out


def test_gate_stops_a_planted_regression(reports, tmp_path, capsys):
    old = load(reports, "pass")
    new = copy.deepcopy(old)
    req = new["runs"][1]["requirements"][3]  # R04 of the second run: passed, now fails
    req.update(status="fail", failed=1)
    assert main(["gate", _write(tmp_path, "new", new), "--baseline", _write(tmp_path, "old", old)]) == 1
    out = capsys.readouterr().out
    run = new["runs"][1]
    assert f"REGRESSION {run['dtype']} {run['variant']} R04 {req['title']}: pass -> FAIL" in out
    assert out.count("REGRESSION") == 1


def test_gate_stops_a_rise_in_far_accepted_elements_and_in_overflows(reports, tmp_path, capsys):
    old = load(reports, "pass")
    new = copy.deepcopy(old)
    e = new["runs"][0]["errors"]
    e["beyond_budget"]["elements"] += 5
    e.setdefault("not_a_distance", {})["infinity where the result is finite"] = {"elements": 3, "accepted": 3}
    assert main(["gate", _write(tmp_path, "new", new), "--baseline", _write(tmp_path, "old", old)]) == 1
    out = capsys.readouterr().out
    assert "elements accepted beyond the budget (reachable, an alternative or within open bounds)" in out and "infinity where the result is finite: 0 -> 3" in out


def test_gate_stops_a_larger_worst_error_and_a_missing_run(reports, tmp_path, capsys):
    old = load(reports, "pass")
    new = copy.deepcopy(old)
    new["runs"][0]["errors"]["max_ulp"] += 1
    gone = new["runs"].pop()  # asked for and lacking (listed as missing): lost, not another scope
    new["missing_runs"] = [f"{gone['dtype']} {gone['variant']}"]
    assert main(["gate", _write(tmp_path, "new", new), "--baseline", _write(tmp_path, "old", old)]) == 1
    out = capsys.readouterr().out
    assert "largest error grew" in out and "the run is missing" in out


def test_gate_lets_improvements_through(reports, capsys):
    """Baseline: the failing model; new: the kernel on the same fp16 runs. Only improvements."""
    assert main(["gate", str(reports / "pass"), "--baseline", str(reports / "fail"), "--allow-mismatch", "scope"]) == 0
    out = capsys.readouterr().out
    assert "improved" in out and "REGRESSION" not in out


def test_gate_on_real_reports_finds_the_regression(reports, capsys):
    assert main(["gate", str(reports / "fail"), "--baseline", str(reports / "pass"), "--allow-mismatch", "scope"]) == 1
    out = capsys.readouterr().out
    assert "R02 boundary: pass -> FAIL" in out


@pytest.mark.parametrize("argv", [["gate", "/nonexistent", "--baseline", "/nonexistent"],
                                  ["gate", "X"], ["compare"], ["report", "/nonexistent/dir"]])
def test_bad_usage_is_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_compare_puts_reports_side_by_side(reports, tmp_path, capsys):
    names = ["pass", "fail", "memory"]
    assert main(["compare", *(str(reports / n) for n in names)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[1:] == ["builtin:kernel on ieee", "builtin:model:recipmul-fp16 on ieee",
                          "builtin:sample:WRITE_PAST_END on ft78ne"]
    rows = {row[0]: row[1:] for row in ([c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:])}
    assert rows["verdict"] == ["PASS", "FAIL", "FAIL"]
    assert rows["R02 boundary"][:2] == ["pass", "FAIL"]
    assert rows["R10 no-write-outside"][2] == "FAIL" and rows["R10 no-write-outside"][0] == "n/a"
    out = tmp_path / "matrix.html"
    assert main(["compare", *(str(reports / n) for n in names), "--format", "html", "--out", str(out)]) == 0
    assert "<table>" in out.read_text()


# --- the committed reports ----------------------------------------------------------------------

COMMITTED = sorted(p.parent for p in (ROOT / "reports").glob("*/report.json"))


def test_the_committed_reports_cover_every_implementation_and_profile():
    names = {p.name for p in COMMITTED}
    for impl in ("kernel", "sample", "torch-cpu"):
        for platform in ("ieee", "ft78ne", "mt7004"):
            assert f"{impl}-{platform}" in names
    index = (ROOT / "reports" / "README.md").read_text()
    for p in COMMITTED:
        assert f"]({p.name}/report.md)" in index


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: p.name)
def test_each_committed_report_is_valid_and_its_renderings_are_current(folder):
    report = json.loads((folder / "report.json").read_text())
    jsonschema.validate(report, SCHEMA)
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    v = view(Report.from_json(report))  # read at the file's boundary, then typed
    assert (folder / "report.md").read_text() == render_markdown(v)
    assert (folder / "junit.xml").read_text() == render_junit(v)


# --- observed behaviour ---------------------------------------------------------------------------

def _observed(report, rid):
    return [q["observed"] for run in report["runs"] for q in run["requirements"] if q["id"] == rid]


def test_observations_name_the_open_questions(reports, tmp_path):
    """R16 files acceptable cases under the question they ask (beta = 0, beta < 0, core_mask = 0);
    R06 tells flushing from gradual underflow, and the flush-to-zero oracle is seen flushing."""
    r16 = _observed(load(reports, "pass"), "R16")
    assert all({"beta = 0", "beta < 0"} <= set(o) for o in r16)
    assert any("core_mask = 0" in o for o in r16)
    assert all(not o.startswith("flush-to-zero") for o in _observed(load(reports, "pass"), "R06"))
    # mt7004 accepts flushing: the flush-to-zero oracle's bits pass every rule there, the boundary
    # and overflow ones included (reading subnormal inputs as zeros moves boundaries)
    assert _certify(tmp_path / "ftz", "--impl", "builtin:oracle-ftz", "--platform", "mt7004", "--dtype", "fp32",
                    "--variant", "p") == 0
    [r06] = _observed(json.loads((tmp_path / "ftz" / "report.json").read_text()), "R06")
    assert r06.startswith("flush-to-zero")


# --- review findings: writing, scope, waivers ----------------------------------------------------

def test_an_impossible_out_is_one_line_before_the_run(reports, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for argv in (["certify", "--impl", "builtin:kernel", "--platform", "ieee", "--out", str(blocker / "sub")],
                 ["report", str(reports / "pass"), "--out", str(blocker / "sub")],
                 ["compare", str(reports / "pass"), "--out", str(blocker / "c.md")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and str(blocker) in err


def test_certify_leaves_no_stale_rendering_beside_a_new_report(reports, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    for f in FILES:
        (out / f).write_bytes((reports / "fail" / f).read_bytes())
    assert _certify(out, "--impl", "builtin:kernel", "--platform", "ieee", "--dtype", "fp16", "--only", "R17",
                    "--format", "md") == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md"]


def test_a_pass_that_checked_nothing_required_says_so(tmp_path):
    assert _certify(tmp_path / "o", "--impl", "builtin:kernel", "--platform", "ieee", "--dtype", "fp16",
                    "--only", "R17") == 0
    md = (tmp_path / "o" / "report.md").read_text()
    assert md.startswith("# PASS, but nothing required was checked") and "Scope: --quick" in md


def test_waived_failures_show_in_the_headline_and_the_gate_notes_them(reports, tmp_path, capsys):
    waivers = tmp_path / "w.toml"
    waivers.write_text("".join(f'[[waiver]]\nid = "{rid}"\nreason = "known: BUG-{rid}"\n'
                               for rid in ("R01", "R02", "R03", "R06")))
    out = tmp_path / "w"
    assert main(["certify", "--impl", "builtin:model:recipmul-fp16", "--platform", "ieee", "--dtype", "fp16",
                 "--quick", "--waivers", str(waivers), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert md.startswith("# PASS (8 waived)") and "failed but are waived" in md
    capsys.readouterr()
    assert main(["gate", str(out), "--baseline", str(reports / "fail")]) == 0
    text = capsys.readouterr().out
    assert "R02 boundary: still fails, now waived (known: BUG-R02)" in text


def test_gate_does_not_compare_counts_across_scopes(reports, tmp_path, capsys):
    """Same implementation, a wider scope: more elements, a larger NaN count; not a regression."""
    old = load(reports, "pass")
    new = copy.deepcopy(old)
    new["quick"] = False
    new["runs"][0]["errors"]["nan_mismatches"] += 5
    new["runs"][0]["errors"]["max_ulp"] += 1
    assert main(["gate", _write(tmp_path, "new", new), "--baseline", _write(tmp_path, "old", old)]) == 2  # unlike
    assert main(["gate", _write(tmp_path, "new", new), "--baseline", _write(tmp_path, "old", old),
                 "--allow-mismatch", "scope"]) == 0
    assert "(not compared)" in capsys.readouterr().out


def test_compare_tells_repeated_columns_apart(reports, capsys):
    assert main(["compare", str(reports / "pass"), str(reports / "pass")]) == 0
    lines = capsys.readouterr().out.splitlines()
    # the same implementation twice: each column labelled by its folder, the very same folder numbered
    assert f"| builtin:kernel on ieee ({reports / 'pass'}) | builtin:kernel on ieee ({reports / 'pass'}) (#2) |" in lines[0]
    assert lines[3].startswith("| scope | --quick |")


# --- incomplete runs ------------------------------------------------------------------------------

def test_an_implementation_that_supports_nothing_is_incomplete_not_a_pass():
    """Every call answered unsupported: nothing fails, nothing is checked; the verdict says so."""
    from sl1conf.adapters.base import ArrayFunction
    from sl1conf.conformance.certify.engine import certify
    from sl1conf.conformance.rules.profiles import load_profile

    class Refuses(ArrayFunction):
        def supports(self, case):
            return False

    typed = certify(Refuses("refuses", lambda dy, x1, x2, beta: dy, ("fp16",)), load_profile("ieee"),
                    dtypes=["fp16"], variants=["p"], quick=True)
    report = typed.to_json()
    [run] = report["runs"]
    assert run["verdict"] == "incomplete" and report["verdict"] == "incomplete"
    assert run["incomplete"][0].endswith("calls answered unsupported") and "no element was judged" in run["incomplete"]
    jsonschema.validate(report, SCHEMA)
    md = render_markdown(view(typed))
    assert md.startswith("# INCOMPLETE") and "**Incomplete:**" in md
    assert 'name="completeness"' in render_junit(view(typed))


def test_runs_the_profile_lists_and_the_library_lacks_make_it_incomplete(tmp_path, capsys):
    """A library with only fp_smoothl1lossgrad_p, certified on mt7004 (fp16 and fp32, s and p):
    incomplete, naming the missing runs; asked for fp32 p alone it passes and says it was narrowed."""
    from sl1conf.adapters.cbuild import build_shared

    src = tmp_path / "only_p.c"
    src.write_text("void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)\n"
                   "{ for (int i = 0; i < n; i++) { float d = x1[i] - x2[i];\n"
                   "  dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i]; } }\n")
    lib = f"ctypes:{build_shared('only-p', [src])}"
    assert _certify(tmp_path / "all", "--impl", lib, "--platform", "mt7004") == 1
    report = load(tmp_path, "all")
    assert report["verdict"] == "incomplete" and report["missing_runs"] == ["fp16 s", "fp16 p", "fp32 s"]
    assert "not offered by the implementation" in (tmp_path / "all" / "report.md").read_text()
    assert _certify(tmp_path / "narrow", "--impl", lib, "--platform", "mt7004", "--dtype", "fp32", "--variant", "p") == 0
    narrow = load(tmp_path, "narrow")
    assert narrow["verdict"] == "pass" and narrow["narrowed"] == ["--dtype", "--variant"] and "missing_runs" not in narrow


def test_gate_calls_pass_to_incomplete_a_regression(reports, tmp_path, capsys):
    old = load(reports, "pass")
    new = copy.deepcopy(old)
    new["runs"][0].update(verdict="incomplete", incomplete=["3 of 600 calls answered unsupported"])
    new["verdict"] = "incomplete"
    assert main(["gate", _write(tmp_path, "new", new), "--baseline", _write(tmp_path, "old", old)]) == 1
    assert "pass -> INCOMPLETE (3 of 600 calls answered unsupported)" in capsys.readouterr().out


def _without_reasons(report: dict) -> dict:
    """``report`` as an older version held it: no counts by reason, no reason beside accepted_as."""
    out = json.loads(json.dumps(report))
    for run in out["runs"]:
        for obj in (run["errors"], *run["requirements"]):
            obj.pop("reasons", None)
            for f in obj.get("families", []):
                f.pop("reasons", None)
            if "beyond_budget" in obj and "worst" in obj["beyond_budget"]:
                obj["beyond_budget"]["worst"].pop("reason", None)
    return out


def test_reports_of_versions_1_and_2_are_read_as_version_3(reports, tmp_path):
    """Reports written before the names of what was accepted beyond the budget were made one
    (schema version 1: accepted_far, accepted_not_a_distance, errors.excepted, errors.excepted_far)
    and before every element had one reason (version 2: a flat beyond_budget.by, a count
    beyond_budget_elements) are read, rendered and gated as version 3, each name of ``by`` under
    its reason (what the error model took: reachable), without the counts by reason they never kept."""
    new = load(reports, "pass")
    v2 = _without_reasons(new)
    v2["schema_version"] = 2
    for run, run3 in zip(v2["runs"], new["runs"]):
        run["errors"]["beyond_budget_elements"] = _beyond(run3["errors"])
        for obj in (run["errors"], *run["requirements"]):
            if "beyond_budget" in obj:
                obj["beyond_budget"]["by"] = {name: n for names in obj["beyond_budget"]["by"].values()
                                              for name, n in names.items()}
    v1 = json.loads(json.dumps(v2))
    v1["schema_version"] = 1
    back = {"beyond_budget": "accepted_far", "beyond_budget_not_a_distance": "accepted_not_a_distance"}
    for run in v1["runs"]:
        run["errors"] = {{"beyond_budget_elements": "excepted", "beyond_budget": "excepted_far"}.get(k, k): v
                         for k, v in run["errors"].items()}
        run["requirements"] = [{back.get(k, k): v for k, v in r.items()} for r in run["requirements"]]
    assert any("accepted_far" in r for run in v1["runs"] for r in run["requirements"])  # the test is about something
    assert any("beyond_budget" in r for run in v2["runs"] for r in run["requirements"])
    for old in (v1, v2):
        (tmp_path / "report.json").write_text(json.dumps(old))
        assert W.load_report(tmp_path).to_json() == _without_reasons(new)

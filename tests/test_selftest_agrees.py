"""The exported self-test agrees with certify (issue 24).

The canonical fp32 set's quick families, exported with ``--platform ft78ne`` (budget 3 ULPs,
flushing accepted, zero sign not strict, no budget on the boundary), and three small C
libraries, each run both ways: through the self-test program and through
``sl1conf certify --impl ctypes:... --platform ft78ne --vectors`` on the same set. The
program's per-family PASS/FAIL must be certify's per-family R01 status (over both variants),
and a library fails R02 exactly when the program fails the family boundary-exact:

- correct (divmul in float): passes both;
- boundary-breaking (dy * 1.0001f where d >= beta, test_certify's "wrong-boundary"): fails both;
- 3 ULPs toward zero on ordinary middle-line elements (normal correctly rounded result, |d| < beta / 2): within
  the fp32 budget, passes both (the program's old default of 2 ULPs failed it).

And the program's output judged by the suite (``certify --results``, the program built with
``-DSL1_DUMP``): the same per-requirement verdicts as certify running the library through
ctypes, for those three libraries and for ones that write before or after dx1, change x2,
or crash on one call (the results stop there).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sl1conf.adapters import sample as S
from sl1conf.adapters.cbuild import build_shared
from sl1conf.conformance.cli import main
from sl1conf.conformance.vectors import export as E
from sl1conf.conformance.vectors import store as V

STRICT = ["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]

LIB = """
#include <math.h>
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{ for (int i = 0; i < n; i++) { BODY } }
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{ if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta); }
"""
GOOD = "float d = x1[i] - x2[i]; dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i];"
LIBS = {
    "correct": (GOOD, True, True),
    "wrong-boundary": ("float d = x1[i] - x2[i]; dx1[i] = d >= beta ? dy[i] * 1.0001f : d < -beta ? -dy[i]"
                       " : d / beta * dy[i];", False, False),
    # nudged only where the float result is the correctly rounded one (as the binary64
    # evaluation gives it): then exactly 3 ULPs from the oracle
    "three-ulp": ("float d = x1[i] - x2[i]; float r = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i];"
                  " float c = (float)(((double)x1[i] - (double)x2[i]) / (double)beta * (double)dy[i]);"
                  " if (fabsf(d) < beta / 2 && isnormal(r) && r == c) { r = nextafterf(r, 0.0f);"
                  " r = nextafterf(r, 0.0f); r = nextafterf(r, 0.0f); } dx1[i] = r;", True, True),
}  # name: (loop body, R02 passes, every family passes R01)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    from sl1conf.conformance.certify.engine import quick_families
    from sl1conf.conformance.vectors.families import generate

    root = tmp_path_factory.mktemp("agree")
    vs_dir = V.write(root / "set", "fp32", generate("fp32", 2026, list(quick_families())), seed=2026)
    assert main(["vectors", "export", str(vs_dir), "--format", "c-header", "--platform", "ft78ne",
                 "--out", str(root / "board")]) == 0
    return Path(vs_dir), root / "board"


def test_header_carries_the_profile(exported):
    text = (exported[1] / E.HEADER_NAME).read_text()
    for line in ('#define SL1_PROFILE_NAME "ft78ne"', "#define SL1_PROFILE_GIVEN 1", "#define SL1_PROFILE_MAX_ULP 3u",
                 "#define SL1_PROFILE_STRICT_ZERO_SIGN 0", "#define SL1_PROFILE_ACCEPT_FTZ 1"):
        assert line in text
    assert "#define SL1_VEC_BOUNDARY 0u" not in text  # boundary-exact has boundary elements


def _program(cc, board: Path, lib: Path, name: str, dump: bool = False) -> dict:
    """{family name: PASS or FAIL}, the '#' lines and the whole output of the program built with
    ``lib`` (with ``dump``: built with -DSL1_DUMP)."""
    prog = board.parent / f"selftest-{name}{'-dump' if dump else ''}"
    subprocess.run([*cc, *STRICT, "-O1", *(["-DSL1_DUMP"] if dump else []), f"-I{S.sources_dir()}",
                    str(board / E.SELFTEST_NAME), str(lib), f"-Wl,-rpath,{lib.parent}", "-lm", "-o", str(prog)],
                   check=True, capture_output=True, text=True)
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    if dump:
        return {"output": proc.stdout, "returncode": proc.returncode}
    verdicts = {ln.split(":")[0].split()[2]: ln.split()[0] for ln in lines if ln.startswith(("PASS ", "FAIL "))}
    assert proc.returncode == (0 if set(verdicts.values()) == {"PASS"} else 1), proc.stdout
    return {"families": verdicts, "comments": [ln for ln in lines if ln.startswith("#")], "output": proc.stdout}


def _certify(capsys, vs_dir: Path, lib: Path, out: Path) -> dict:
    main(["certify", "--impl", f"ctypes:{lib}", "--platform", "ft78ne", "--vectors", str(vs_dir), "--out", str(out),
          "--format", "md"])
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    families, r02 = {}, True
    for run in report["runs"]:
        for req in run["requirements"]:
            if req["id"] == "R01":
                for fam in req.get("families", []):
                    ok = fam["status"] == "pass"
                    families[fam["family"]] = families.get(fam["family"], True) and ok
            if req["id"] == "R02":
                r02 &= req["status"] == "pass"
    return {"families": {k: "PASS" if v else "FAIL" for k, v in families.items()}, "r02": r02}


@pytest.mark.parametrize("name", list(LIBS))
def test_selftest_agrees_with_certify(name, exported, cc, tmp_path, capsys):
    vs_dir, board = exported
    body, r02_passes, r01_passes = LIBS[name]
    src = tmp_path / f"{name}.c"
    src.write_text(LIB.replace("BODY", body))
    lib = build_shared(f"agree-{name}", [src], flags=["-lm"])
    prog = _program(cc, board, lib, name)
    cert = _certify(capsys, vs_dir, lib, tmp_path / "report")
    assert prog["comments"][0].startswith("# sl1_selftest fp32: ") and "profile ft78ne: budget 3 ulp" in prog["comments"][0]
    assert "sl1conf certify --impl sim:" in prog["comments"][1]
    # every family certify judged under R01 has the same verdict in the program
    assert cert["families"], cert
    assert {f: prog["families"].get(f) for f in cert["families"]} == cert["families"]
    assert cert["r02"] == r02_passes
    assert (prog["families"]["boundary-exact"] == "PASS") == r02_passes
    assert (set(prog["families"].values()) == {"PASS"}) == r01_passes


def _statuses(report: dict) -> dict:
    """{requirement id: fail, pass, or another status} over the report's runs (fail wins)."""
    out: dict = {}
    for run in report["runs"]:
        for req in run["requirements"]:
            if out.get(req["id"]) != "fail":
                out[req["id"]] = req["status"] if req["status"] in ("fail", "pass") else out.get(req["id"], req["status"])
    return out


def _certify_results(capsys, vs_dir: Path, results: Path, out: Path) -> tuple:
    code = main(["certify", "--results", str(results), "--platform", "ft78ne", "--vectors", str(vs_dir),
                 "--out", str(out), "--format", "md"])
    printed = capsys.readouterr().out
    return code, json.loads((out / "report.json").read_text()), printed


ELEMENT_RULES = ("R01", "R02", "R03", "R04", "R06", "R07", "R08")


@pytest.mark.parametrize("name", list(LIBS))
def test_the_programs_results_judged_by_the_suite_agree_with_certify(name, exported, cc, tmp_path, capsys):
    """The board's output (-DSL1_DUMP) through certify --results: every element rule and the
    verdict as certify running the library itself finds them; the run says it is recorded, and
    the requirements that need calls of their own say why they are not observed."""
    vs_dir, board = exported
    src = tmp_path / f"{name}.c"
    src.write_text(LIB.replace("BODY", LIBS[name][0]))
    lib = build_shared(f"agree-{name}", [src], flags=["-lm"])
    results = tmp_path / "board-output.txt"
    results.write_text(_program(cc, board, lib, name, dump=True)["output"])
    code, report, printed = _certify_results(capsys, vs_dir, results, tmp_path / "from-results")
    direct = json.loads(json.dumps(_certify_report(capsys, vs_dir, lib, tmp_path / "direct")))
    mine, theirs = _statuses(report), _statuses(direct)
    assert {r: mine[r] for r in ELEMENT_RULES} == {r: theirs[r] for r in ELEMENT_RULES}
    # (R01 is also the rounding bias, which the program cannot judge: three-ulp leans toward zero
    # on every nudged element, so certify fails it both ways while the program's families pass)
    assert (mine["R02"] == "pass") == LIBS[name][1]
    assert report["verdict"] == direct["verdict"] and code == (0 if report["verdict"] == "pass" else 1)
    assert report["implementation"]["adapter"] == "results:board-output.txt"
    assert report["implementation"]["program"].startswith("sl1_selftest fp32: ")
    assert report["implementation"]["program_verdict"] == results.read_text().splitlines()[-1]
    for run in report["runs"]:
        assert run["recorded"].startswith("judged from a results file: ")
        by_id = {r["id"]: r for r in run["requirements"]}
        for rid in ("R14", "R15", "R18"):
            assert by_id[rid]["status"] == "not-applicable"
            assert by_id[rid]["observed"].startswith("not observed from a results file"), by_id[rid]
        assert by_id["R10"]["status"] == by_id["R12"]["status"] == "pass"
    md = (tmp_path / "from-results" / "report.md").read_text()
    assert "judged from a results file" in md and "sl1conf certify --results" in md or report["verdict"] == "pass"


def _certify_report(capsys, vs_dir: Path, lib: Path, out: Path) -> dict:
    main(["certify", "--impl", f"ctypes:{lib}", "--platform", "ft78ne", "--vectors", str(vs_dir), "--out", str(out),
          "--format", "md"])
    capsys.readouterr()
    return json.loads((out / "report.json").read_text())


DEFECTS = {
    # name: (C statements after the correct loop, requirement failed, words of the failure)
    "write-before-dx1": ("dx1[-1] = 1.0f;", "R10", "wrote before the start of dx1"),
    "write-past-dx1": ("if (n > 0) dx1[n] = 1.0f;", "R10", "wrote past the end of dx1"),
    "change-x2": ("if (n > 0) x2[0] = -x2[0] + 1.0f;", "R12", "changed x2"),
}
DEFECT_LIB = """
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{ for (int i = 0; i < n; i++) { GOOD } DEFECT }
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{ if (mask) { for (int i = 0; i < n; i++) { GOOD } } DEFECT }
"""


@pytest.mark.parametrize("name", list(DEFECTS))
def test_writes_outside_dx1_and_changed_inputs_in_the_results_fail_naming_the_array(name, exported, cc, tmp_path,
                                                                                   capsys):
    vs_dir, board = exported
    defect, rid, words = DEFECTS[name]
    src = tmp_path / f"{name}.c"
    src.write_text(DEFECT_LIB.replace("GOOD", GOOD).replace("DEFECT", defect))
    lib = build_shared(f"results-{name}", [src])
    results = tmp_path / "out.txt"
    results.write_text(_program(cc, board, lib, name, dump=True)["output"])
    code, report, printed = _certify_results(capsys, vs_dir, results, tmp_path / "r")
    assert code == 1 and report["verdict"] == "fail"
    for run in report["runs"]:
        req = next(r for r in run["requirements"] if r["id"] == rid)
        assert req["status"] == "fail" and req["failed"] >= 0.9 * req["checked"], req
        assert words in req["examples"][0]["detail"], req["examples"][0]
    assert all(rid in line.split("failed: ")[1] for line in printed.splitlines() if line.startswith("fp32 ")), printed


CRASHES_ON_LENGTH_7 = """
static float *volatile nowhere;  /* a pointer the compiler cannot see through: a real crash */
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{ if (n == 7) *nowhere = 1.0f; for (int i = 0; i < n; i++) { GOOD } }
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{ if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta); }
"""


def test_results_that_stop_at_a_crash_blame_that_call_and_say_the_rest_did_not_run(exported, cc, tmp_path, capsys):
    vs_dir, board = exported
    src = tmp_path / "crash7.c"
    src.write_text(CRASHES_ON_LENGTH_7.replace("GOOD", GOOD))
    lib = build_shared("results-crash7", [src])
    prog = _program(cc, board, lib, "crash7", dump=True)
    assert prog["returncode"] < 0  # the program died (a signal)
    results = tmp_path / "out.txt"
    results.write_text(prog["output"])
    code, report, printed = _certify_results(capsys, vs_dir, results, tmp_path / "r")
    assert code == 1
    vs = V.load(vs_dir)
    order = [row for fam in vs.manifest["families"] for row in vs.manifest["cases"] if row["family"] == fam["id"]]
    first = next(row for row in order if row["length"] == 7)
    r13 = [r for run in report["runs"] for r in run["requirements"] if r["id"] == "R13"]
    details = [e for r in r13 for e in r.get("examples", [])]
    blamed = [e for e in details if "crashed or hung in this call" in e["detail"]]
    assert [e["case"] for e in blamed] == [first["id"]] and details == blamed, details[:3]
    # the calls after it are not run: no R13 failure of their own, but the run says it is incomplete
    judged = sum(r["checked"] for r in r13)
    assert judged == order.index(first) + 1  # every call up to the one that crashed
    reasons = [why for run in report["runs"] for why in run.get("incomplete", [])]
    assert reasons and all(f"the self-test's output stops at case {first['id']}" in why for why in reasons), reasons


def test_bad_results_files_are_one_line_and_write_nothing(exported, cc, tmp_path, capsys):
    vs_dir, board = exported
    src = tmp_path / "good.c"
    src.write_text(LIB.replace("BODY", GOOD))
    lib = build_shared("agree-correct", [src], flags=["-lm"])
    good = _program(cc, board, lib, "correct", dump=True)["output"]
    lines = good.splitlines()
    other = V.write(tmp_path / "other", "fp32", __import__("sl1conf.conformance.vectors.families", fromlist=["x"])
                    .generate("fp32", 7, ["signed-zero"]), seed=7)
    cases = {
        "plain output (no -DSL1_DUMP)": ("\n".join(ln for ln in lines if not ln.startswith("=")), "-DSL1_DUMP"),
        "not the program's output": ("hello\n", "not the output of the self-test"),
        "two runs in one file": (good + good, "more than one run"),
        "a damaged element": (good.replace("\n= 1.0 3 ", "\n= 1.0 3 zz", 1), "line "),
        "an element missing": ("\n".join(ln for ln in lines if not ln.startswith("= 1.0 3 ")), "case 1.0: element 3 missing"),
    }
    out = tmp_path / "r"
    for label, (text, words) in cases.items():
        f = tmp_path / "bad.txt"
        f.write_text(text)
        assert main(["certify", "--results", str(f), "--platform", "ft78ne", "--vectors", str(vs_dir),
                     "--out", str(out)]) == 2, label
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err, (label, err)
        assert not out.exists(), label
    f = tmp_path / "good.txt"
    f.write_text(good)
    for argv, words in ((["--vectors", str(other)], "judge the results against the set they were exported from"),
                        (["--vectors", str(vs_dir), "--impl", "builtin:kernel"], "exactly one of --impl"),
                        ([], "needs one --vectors"),
                        (["--vectors", str(vs_dir), "--quick"], "--quick does not apply")):
        assert main(["certify", "--results", str(f), "--platform", "ft78ne", *argv, "--out", str(out)]) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err, (argv, err)
        assert not out.exists()
    # a serial console's CRLF line ends and a login banner around the output change nothing
    f.write_text("Welcome to the board\r\n" + good.replace("\n", "\r\n") + "logout\r\n")
    assert main(["certify", "--results", str(f), "--platform", "ft78ne", "--vectors", str(vs_dir),
                 "--out", str(out)]) == 0

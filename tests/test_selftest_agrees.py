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


def _program(cc, board: Path, lib: Path, name: str) -> dict:
    """{family name: PASS or FAIL} and the '#' lines of the program built with ``lib``."""
    prog = board.parent / f"selftest-{name}"
    subprocess.run([*cc, *STRICT, "-O1", f"-I{S.sources_dir()}", str(board / E.SELFTEST_NAME), str(lib),
                    f"-Wl,-rpath,{lib.parent}", "-lm", "-o", str(prog)], check=True, capture_output=True, text=True)
    proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    verdicts = {ln.split(":")[0].split()[2]: ln.split()[0] for ln in lines if ln.startswith(("PASS ", "FAIL "))}
    assert proc.returncode == (0 if set(verdicts.values()) == {"PASS"} else 1), proc.stdout
    return {"families": verdicts, "comments": [ln for ln in lines if ln.startswith("#")]}


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
    assert prog["comments"][0].startswith("# sl1_selftest fp32: ") and "profile ft78ne: SL1_MAX_ULP 3" in prog["comments"][0]
    assert "sl1conf certify --impl sim:" in prog["comments"][1]
    # every family certify judged under R01 has the same verdict in the program
    assert cert["families"], cert
    assert {f: prog["families"].get(f) for f in cert["families"]} == cert["families"]
    assert cert["r02"] == r02_passes
    assert (prog["families"]["boundary-exact"] == "PASS") == r02_passes
    assert (set(prog["families"].values()) == {"PASS"}) == r01_passes

"""Every subcommand, driven with the bad input a hostile user gives (issue 16, items 3-8).

Each case runs the real ``sl1conf`` in its own process, in a workspace that already holds
what a user has (vector sets, a report, a fuzz output, a sweep checkpoint, notes), and asserts
what the standards promise for bad input: exit status 2, exactly one line on stderr naming
the problem (``sl1conf: error: ...``), no traceback, nothing printed as a result, and not one
file or folder of the workspace created, changed or removed.

The expected outcome of each case is the issue's ("one line and exit 2"), not the code's;
``words`` is what the line must name so that a user can act on it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sl1conf.conformance.cli import main

DEEP = "[" * 100_000 + "]" * 100_000  # nested far deeper than Python's recursion limit

PROFILE = """name = "mine"
title = "a valid profile, edited below"
dtypes = ["fp32"]
variants = ["p"]
cores = 8
flush_to_zero = "forbidden"
strict_zero_sign = true
[max_ulp]
fp32 = 3
"""

# name -> (what replaces which line of PROFILE, the field the one line must name)
BAD_PROFILES = {
    "assumptions-string": (("", 'assumptions = "none"\n'), "assumptions"),
    "assumptions-list": (("", "assumptions = [1, 2]\n"), "assumptions"),
    "dtypes-nested": (('dtypes = ["fp32"]', 'dtypes = [["fp16"]]'), "dtypes"),
    "dtypes-twice": (('dtypes = ["fp32"]', 'dtypes = ["fp32", "fp32"]'), "dtypes"),
    "strict-zero-sign-string": (("strict_zero_sign = true", 'strict_zero_sign = "false"'), "strict_zero_sign"),
    "cores-bool": (("cores = 8", "cores = true"), "cores"),
    "max-ulp-bool": (("fp32 = 3", "fp32 = true"), "max_ulp"),
    "name-list": (('name = "mine"', 'name = ["x"]'), "name"),
}

BAD_WAIVERS = {
    "id-list": ('[[waiver]]\nid = ["R05"]\nreason = "x"\n', "id"),
    "id-table": ('[[waiver]]\nid = {a = 1}\nreason = "x"\n', "id"),
    "dtype-unknown": ('[[waiver]]\nid = "R05"\ndtypes = ["fp61"]\nreason = "x"\n', "dtypes"),
}


def _profile(edit) -> str:
    old, new = edit
    return PROFILE.replace(old, new) if old else PROFILE.split("[max_ulp]")[0] + new + "[max_ulp]\nfp32 = 3\n"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """What a user already has: every file here must survive every bad command unchanged."""
    ws = tmp_path_factory.mktemp("hostile")
    run = lambda *argv: main([*argv])  # noqa: E731  (in-process: the fixtures are not under test)
    cwd = os.getcwd()
    os.chdir(ws)
    try:
        assert run("vectors", "generate", "--dtype", "fp32", "--families", "nan-inf", "--out", "set32") == 0
        assert run("vectors", "generate", "--dtype", "fp16", "--families", "nan-inf", "--out", "set16") == 0
        (ws / "set32" / "NOTES.txt").write_text("board 7: see results/\n")
        assert run("certify", "--impl", "builtin:kernel", "--platform", "ieee", "--vectors", "set32",
                   "--variant", "p", "--out", "report") == 0
        assert run("fuzz", "--impl", "builtin:kernel", "--platform", "ieee", "--dtype", "fp32", "--variant", "p",
                   "--elements", "2000", "--seed", "1", "--out", "fuzzed") == 0
    finally:
        os.chdir(cwd)
    (ws / "afile.txt").write_text("a file, not a folder\n")
    (ws / "notes.md").write_text("my notes: compare --out must not replace me\n")
    for name in ("deepset", "deeprep", "deepfuzz", "deepsweep"):
        (ws / name).mkdir()
    (ws / "deepset" / "manifest.json").write_text(DEEP)
    (ws / "deeprep" / "report.json").write_text(DEEP)
    (ws / "deepfuzz" / "summary.json").write_text(DEEP)
    (ws / "deepsweep" / "sweep.json").write_text(DEEP)
    (ws / "notaset").mkdir()
    (ws / "notaset" / "mine.txt").write_text("not a vector set\n")
    for name, (edit, _) in BAD_PROFILES.items():
        (ws / f"{name}.toml").write_text(_profile(edit))
    for name, (text, _) in BAD_WAIVERS.items():
        (ws / f"waiver-{name}.toml").write_text(text)
    return ws


def _snapshot(root: Path) -> dict:
    """Every path under ``root`` with what it holds (a file's bytes, hashed) and its mode."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_mode, hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None)
    return out


def _command() -> list:
    script = Path(sys.executable).with_name("sl1conf")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sl1conf.conformance"]


IMPL = ["--impl", "builtin:kernel"]
SWEEP = ["sweep", *IMPL, "--beta", "1", "--dy", "1", "--subset", "x2=0x3c00"]
FUZZ = ["fuzz", *IMPL, "--platform", "ieee", "--elements", "1000", "--seed", "1"]
CERTIFY = ["certify", *IMPL, "--platform", "ieee", "--quick", "--dtype", "fp32", "--variant", "p"]
NO_SIM = "sim:nonexistent-simulator-sl1 {case} {result}"

CASES = {
    # item 3: tracebacks
    "certify-unknown-model": (["certify", "--impl", "builtin:kernel:nosuch", "--platform", "ieee", "--out", "new"],
                              "unknown evaluation model 'nosuch'"),
    "fuzz-unknown-model": (["fuzz", "--impl", "builtin:kernel:nosuch", "--platform", "ieee", "--out", "new"],
                           "unknown evaluation model 'nosuch'"),
    "sweep-unknown-model": (["sweep", "--impl", "builtin:kernel:nosuch", "--beta", "1", "--dy", "1", "--out", "new"],
                            "unknown evaluation model 'nosuch'"),
    "sweep-out-under-a-file": ([*SWEEP, "--out", "afile.txt/x"], "afile.txt"),
    "fuzz-out-under-a-file": ([*FUZZ, "--out", "afile.txt/x"], "afile.txt"),
    "certify-out-under-a-file": ([*CERTIFY, "--out", "afile.txt/x"], "afile.txt"),
    "fuzz-huge-batches": ([*FUZZ, "--batch-elements", "1000000000000", "--out", "new"], "--batch-elements"),
    "vectors-verify-deep": (["vectors", "verify", "deepset"], "nested too deeply"),
    "vectors-list-deep": (["vectors", "list", "deepset"], "nested too deeply"),
    "vectors-show-deep": (["vectors", "show", "deepset", "1"], "nested too deeply"),
    "vectors-export-deep": (["vectors", "export", "deepset", "--format", "hex", "--out", "new.txt"],
                            "nested too deeply"),
    "certify-vectors-deep": ([*CERTIFY[:-4], "--vectors", "deepset", "--out", "new"], "nested too deeply"),
    "report-deep": (["report", "deeprep", "--out", "new"], "nested too deeply"),
    "gate-deep": (["gate", "deeprep", "--baseline", "report"], "nested too deeply"),
    "gate-deep-baseline": (["gate", "report", "--baseline", "deeprep"], "nested too deeply"),
    "compare-deep": (["compare", "report", "deeprep"], "nested too deeply"),
    "fuzz-merge-deep": (["fuzz", "merge", "deepfuzz", "fuzzed", "--out", "new"], "deepfuzz"),
    "sweep-resume-deep": ([*SWEEP, "--out", "deepsweep"], "deepsweep"),
    # item 5: a simulator that cannot start
    "certify-sim-cannot-start": (["certify", "--impl", NO_SIM, "--platform", "ieee", "--out", "new"],
                                 "cannot start 'nonexistent-simulator-sl1'"),
    "sweep-sim-cannot-start": (["sweep", "--impl", NO_SIM, "--beta", "1", "--dy", "1", "--out", "new"],
                               "cannot start 'nonexistent-simulator-sl1'"),
    "fuzz-sim-cannot-start": (["fuzz", "--impl", NO_SIM, "--platform", "ieee", "--out", "new"],
                              "cannot start 'nonexistent-simulator-sl1'"),
    # item 6: overwrites
    "compare-out-existing": (["compare", "report", "report", "--out", "notes.md"], "notes.md"),
    "generate-force-not-a-set": (["vectors", "generate", "--dtype", "fp32", "--families", "nan-inf",
                                  "--out", "notaset", "--force"], "not a vector set folder"),
    "generate-existing-no-force": (["vectors", "generate", "--dtype", "fp32", "--out", "set32"], "--force"),
    "export-existing-no-force": (["vectors", "export", "set32", "--format", "hex", "--out", "notes.md"], "--force"),
    # item 7: vector sets per dtype
    "certify-two-sets-one-dtype": (["certify", *IMPL, "--platform", "ieee", "--vectors", "set32", "--vectors", "set32",
                                    "--out", "new"], "both hold fp32 vectors"),
    "certify-dtype-without-its-set": (["certify", *IMPL, "--platform", "ieee", "--vectors", "set16", "--dtype", "fp32",
                                       "--out", "new"], "no --vectors set holds fp32"),
    "certify-set-the-profile-lacks": (["certify", *IMPL, "--platform", "ft78ne", "--vectors", "set16", "--out", "new"],
                                      "ft78ne has no fp16"),
    # item 8: empty and absurd values
    "certify-out-empty": ([*CERTIFY, "--out", ""], "--out"),
    "fuzz-out-empty": ([*FUZZ, "--out", ""], "--out"),
    "sweep-out-empty": ([*SWEEP, "--out", ""], "--out"),
    "generate-out-empty": (["vectors", "generate", "--dtype", "fp32", "--out", ""], "--out"),
    "report-out-empty": (["report", "report", "--out", ""], "--out"),
    "compare-out-empty": (["compare", "report", "--out", ""], "--out"),
    "generate-families-empty": (["vectors", "generate", "--dtype", "fp32", "--families", "", "--out", "new"],
                                "--families"),
    "generate-families-comma": (["vectors", "generate", "--dtype", "fp32", "--families", ",", "--out", "new"],
                                "--families"),
    "certify-only-empty": ([*CERTIFY, "--only", "", "--out", "new"], "--only"),
    "certify-only-comma": ([*CERTIFY, "--only", ",", "--out", "new"], "--only"),
    "fuzz-workers-absurd": ([*FUZZ, "--workers", "10000", "--out", "new"], "--workers"),
    "sweep-workers-absurd": ([*SWEEP, "--workers", "10000", "--out", "new"], "--workers"),
    "demo-elements-absurd": (["demo", "--elements", "100000000000000"], "--elements"),
    "demo-elements-zero": (["demo", "--elements", "0"], "--elements"),
}
for _name, (_, _field) in BAD_PROFILES.items():  # items 3 and 4: a profile, everywhere one is read
    CASES[f"certify-profile-{_name}"] = (["certify", *IMPL, "--profile", f"{_name}.toml", "--out", "new"], _field)
    CASES[f"fuzz-profile-{_name}"] = (["fuzz", *IMPL, "--platform", f"{_name}.toml", "--out", "new"], _field)
    CASES[f"sweep-profile-{_name}"] = ([*SWEEP, "--platform", f"{_name}.toml", "--out", "new"], _field)
for _name, (_, _field) in BAD_WAIVERS.items():
    CASES[f"certify-waiver-{_name}"] = ([*CERTIFY, "--waivers", f"waiver-{_name}.toml", "--out", "new"], _field)


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_exit_2_and_changes_nothing(workspace, name):
    argv, words = CASES[name]
    before = _snapshot(workspace)
    done = subprocess.run([*_command(), *argv], cwd=workspace, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "100"})
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("sl1conf: error: "), done.stderr
    assert words in lines[0], (words, lines[0])
    after = _snapshot(workspace)
    changed = sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
    assert not changed, f"changed: {changed}"
    assert not (before.keys() - after.keys()), f"removed: {sorted(before.keys() - after.keys())}"
    assert not (after.keys() - before.keys()), f"created: {sorted(after.keys() - before.keys())}"


def test_the_workspace_is_what_a_user_has(workspace):
    """The fixture itself: every good file is usable, so the cases above fail for their bad input."""
    for argv in (["vectors", "verify", str(workspace / "set32")], ["report", str(workspace / "report"), "--out",
                                                                    str(workspace.parent / "rendered")]):
        assert main(argv) == 0
    shutil.rmtree(workspace.parent / "rendered")

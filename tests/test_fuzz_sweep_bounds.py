"""sl1conf fuzz and sweep on hostile input (issue 16): every bad value is one line and exit 2,
before any work and with nothing that existed changed; a sweep that checked nothing says so;
--help describes each action's own options; on a terminal the one progress bar is drawn."""

from __future__ import annotations

import json
import os
import sys

import pytest

from sl1conf.conformance.cli import main

SWEEP = ["sweep", "--impl", "builtin:kernel", "--platform", "ieee", "--beta", "1", "--dy", "1", "--subset", "x2=0",
         "--workers", "1"]
FUZZ = ["fuzz", "--impl", "builtin:kernel", "--platform", "ieee", "--dtype", "fp16", "--variant", "p",
        "--batch-elements", "256", "--elements", "256", "--seed", "1"]
DEEP = "[" * 100000 + "]" * 100000


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code, err, words=""):
    assert code == 2 and err.startswith("sl1conf: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and words in err, err


def snapshot(folder):
    return {p.relative_to(folder): (p.stat().st_mode, p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


# ------------------------------------------------------------------ --out that cannot be written

@pytest.mark.parametrize("command", [SWEEP, FUZZ])
def test_out_under_a_file_is_one_line_and_changes_nothing(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile.txt").write_text("keep")
    before = snapshot(tmp_path)
    code, out, err = cli(capsys, *command, "--out", "afile.txt/x")
    one_line(code, err, "afile.txt/x: cannot write there (Not a directory")
    assert not out and snapshot(tmp_path) == before


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes in a chmod 500 folder")
@pytest.mark.parametrize("command", [SWEEP, FUZZ])
@pytest.mark.parametrize("where", ["ro", "ro/new"])
def test_out_in_a_folder_without_write_permission_is_one_line(command, where, capsys, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        code, out, err = cli(capsys, *command, "--out", tmp_path / where)
        one_line(code, err, "cannot write there (Permission denied")
        assert not out and list(ro.iterdir()) == []
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("where", ["imm", "imm/new"])
def test_sweep_out_in_an_immutable_folder_is_one_line(where, immutable, capsys, tmp_path):
    code, out, err = cli(capsys, *SWEEP, "--out", tmp_path / where)
    one_line(code, err, "cannot write there (")
    assert not out and list(immutable.iterdir()) == []


def test_a_sweep_state_write_that_fails_late_is_one_line(capsys, tmp_path, monkeypatch):
    from sl1conf.conformance.search import sweep_state

    def refuse(path, data):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(sweep_state, "write_atomic", refuse)
    code, _, err = cli(capsys, *SWEEP, "--out", tmp_path / "o")
    one_line(code, err, f"{tmp_path / 'o'}: cannot write there (No space left on device)")


@pytest.mark.parametrize("argv", [[*SWEEP, "--out", ""], ["sweep", "merge", ".", "--out", ""],
                                  [*FUZZ, "--out", ""], ["fuzz", "merge", ".", "--out", ""]])
def test_an_empty_out_is_refused(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, *argv)
    one_line(code, err, "argument --out: an empty path")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ counts with a ceiling

def test_a_batch_too_large_to_hold_is_refused_before_the_campaign(capsys, tmp_path):
    code, out, err = cli(capsys, *FUZZ, "--batch-elements", "1000000000000", "--out", tmp_path / "o")
    one_line(code, err, "argument --batch-elements: 1000000000000: expected 1 to 67,108,864 elements")
    assert not out and not (tmp_path / "o").exists()


def test_batches_that_do_not_fit_in_the_memory_available_are_refused(capsys, tmp_path, monkeypatch):
    from sl1conf.conformance.cli import fuzz

    monkeypatch.setattr(fuzz, "_available_memory", lambda: 64 << 20)  # 64 MiB
    code, out, err = cli(capsys, *FUZZ[:-4], "--batch-elements", "4000000", "--seed", "1", "--out", tmp_path / "o")
    one_line(code, err, "--batch-elements 4000000: 1 batch(es) of 1 long call(s) need at least")
    assert "fuzz: seed" not in err and not (tmp_path / "o").exists()
    assert cli(capsys, *FUZZ, "--out", tmp_path / "small")[0] == 0  # 256 elements fit


@pytest.mark.parametrize("command", [SWEEP[:-2], FUZZ])
@pytest.mark.parametrize("workers", ["10000", "0", "-1", "two"])
def test_workers_beyond_the_machine_are_refused(command, workers, capsys, tmp_path):
    code, out, err = cli(capsys, *command, "--workers", workers, "--out", tmp_path / "o")
    one_line(code, err, "argument --workers: ")
    assert not (tmp_path / "o").exists()


def test_counts_read_scientific_notation(capsys, tmp_path):
    code, out, _ = cli(capsys, *FUZZ[:-4], "--elements", "2.56e2", "--seed", "1", "--out", tmp_path / "o")
    assert code == 0 and json.loads((tmp_path / "o" / "summary.json").read_text())["campaign"]["batches"] == 1


# ------------------------------------------------------------------ implementations and files

@pytest.mark.parametrize("command", [SWEEP, FUZZ])
def test_an_unknown_model_of_a_builtin_is_one_line(command, capsys, tmp_path):
    code, _, err = cli(capsys, *command, "--impl", "builtin:kernel:nosuch", "--out", tmp_path / "o")
    one_line(code, err, "--impl builtin:kernel:nosuch: ")
    assert "unknown evaluation model 'nosuch'" in err and not (tmp_path / "o").exists()


def test_a_deeply_nested_sweep_checkpoint_is_one_line_and_kept(capsys, tmp_path):
    state = tmp_path / "o" / "sweep.json"
    state.parent.mkdir()
    state.write_text(DEEP)
    for argv in ([*SWEEP, "--out", tmp_path / "o"], ["sweep", "merge", tmp_path / "o", "--out", tmp_path / "m"]):
        code, out, err = cli(capsys, *argv)
        one_line(code, err, f"{state} is not a readable sweep state (nested too deeply)")
        assert state.read_text() == DEEP and not (tmp_path / "m").exists()


def test_a_deeply_nested_fuzz_summary_is_one_line_for_merge_and_replay(capsys, tmp_path):
    summary = tmp_path / "s" / "summary.json"
    summary.parent.mkdir()
    summary.write_text(DEEP)
    for argv in (["fuzz", "merge", tmp_path / "s", "--out", tmp_path / "m"],
                 ["fuzz", "replay", tmp_path / "s", "--batch", "0"]):
        code, _, err = cli(capsys, *argv)
        one_line(code, err, f"{summary}: nested too deeply")
        assert summary.read_text() == DEEP and not (tmp_path / "m").exists()


# ------------------------------------------------------------------ a sweep that checked nothing

CRASHING = r"""
#include <stdint.h>
float *volatile nowhere = 0;  /* volatile: GCC would delete a store through a provably null pointer */
void hp_smoothl1lossgrad_p(_Float16 *dy, _Float16 *dx1, _Float16 *x1, _Float16 *x2, int n, _Float16 beta)
{ *nowhere = 1.0f; }
void hp_smoothl1lossgrad_s(_Float16 *dy, _Float16 *dx1, _Float16 *x1, _Float16 *x2, int n, _Float16 beta, int m)
{ *nowhere = 1.0f; }
"""


def test_a_sweep_where_every_call_crashes_is_not_a_pass(capsys, tmp_path):
    from sl1conf.adapters.cbuild import build_shared

    src = tmp_path / "crash.c"
    src.write_text(CRASHING)
    lib = build_shared("always-crashes", [src])
    code, out, _ = cli(capsys, "sweep", "--impl", f"ctypes:{lib}", "--beta", "1", "--dy", "1", "--subset", "x2=0",
                       "--workers", "1", "--out", tmp_path / "o")
    assert code == 1, out
    assert "correctly rounded" not in out and "worst: 0 ULP" not in out
    assert "worst: none: nothing was checked (no call returned a result)" in out
    assert "first call without a result: block 0, crash" in out and "verdict: FAIL" in out
    verdict = json.loads((tmp_path / "o" / "sweep.json").read_text())["summary"]["verdict"]
    assert verdict["checked_elements"] == 0 and verdict["pass"] is False


# ------------------------------------------------------------------ --help

def help_text(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def options(text: str) -> dict:
    """Option -> its help text, from argparse's options section."""
    out, current = {}, None
    for line in text.splitlines():
        stripped = line.strip()
        if line.startswith("  -"):
            parts = stripped.split("  ", 1)
            current = parts[0].split(",")[-1].strip().split(" ")[0]
            out[current] = parts[1].strip() if len(parts) > 1 else ""
        elif current and line.startswith("      ") and stripped:
            out[current] = (out[current] + " " + stripped).strip()
        elif not stripped:
            current = None
    return out


def test_sweep_help_shows_merge_as_optional_and_describes_every_option(capsys):
    text = help_text(capsys, "sweep")
    usage = text.split("\n\n", 1)[0]
    assert usage.startswith("usage: sl1conf sweep --impl SPEC --beta V --dy V --out DIR")
    assert "sl1conf sweep merge DIR" in usage and "{merge} ..." not in usage
    opts = options(text)
    assert {"--beta", "--dy", "--impl", "--out", "--workers"} <= set(opts)
    assert all(opts[o] for o in opts), opts  # every option has a description


def test_sweep_merge_help_names_its_own_options(capsys):
    text = help_text(capsys, "sweep", "merge")
    assert "MERGE_OUT" not in text and "MERGE_PLATFORM" not in text and "--out DIR" in text
    assert text.startswith("usage: sl1conf sweep merge DIR [DIR ...] --out DIR")


def test_fuzz_merge_and_replay_have_their_own_help(capsys):
    campaign = options(help_text(capsys, "fuzz"))
    assert {"--impl", "--platform", "--elements", "--batch-elements", "--workers"} <= set(campaign)
    merge = help_text(capsys, "fuzz", "merge")
    assert merge.startswith("usage: sl1conf fuzz merge DIR [DIR ...] --out DIR [--force]")
    assert set(options(merge)) == {"--help", "--out", "--force"}
    replay = help_text(capsys, "fuzz", "replay")
    assert replay.startswith("usage: sl1conf fuzz replay DIR --batch K [--impl SPEC]")
    assert set(options(replay)) == {"--help", "--batch", "--impl", "--platform", "--profile"}  # (vector sets)


# ------------------------------------------------------------------ the progress bar

def test_on_a_terminal_fuzz_and_sweep_draw_the_bar_and_print_the_same_summary(capsys, tmp_path, monkeypatch):
    quiet = [cli(capsys, *FUZZ, "--elements", "2000", "--out", tmp_path / "f0"),
             cli(capsys, *SWEEP, "--out", tmp_path / "s0")]
    assert all("\r" not in err for _, _, err in quiet)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = cli(capsys, *FUZZ, "--elements", "2000", "--out", tmp_path / "f1")
    bar = err.split("\r")
    assert code == 0 and any("fuzz: 100%" in part and "8/8 batches" in part for part in bar), err
    assert "elem/s" in err and "0 failures" in err and "<00:00" in err  # elements per second, failures, an ETA
    same = lambda text, drop: [line for i, line in enumerate(text.splitlines()[:-1]) if i != drop]  # noqa: E731
    assert same(out.replace("f1", "f0"), 0) == same(quiet[0][1], 0)  # stdout as off a terminal, but the rate
    code, out, err = cli(capsys, *SWEEP, "--out", tmp_path / "s1")
    assert code == 0 and "1/1 blocks" in err and "elem/s" in err, err
    assert same(out, 1) == same(quiet[1][1], 1)

"""sl1conf fuzz on the command line: one-line errors, the output folder's rules, and the
hypothesis property of the pytest plugin (pytest --sl1-impl ... --sl1-fuzz)."""

from __future__ import annotations

import json

import pytest

from sl1conf.conformance.cli import main

pytest_plugins = ["pytester"]

KERNEL = ["--impl", "builtin:kernel", "--platform", "ft78ne", "--variant", "p", "--batch-elements", "256",
          "--elements", "256", "--seed", "1"]


def run(capsys, *argv):
    code = main(["fuzz", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, words", [
    (KERNEL, "needs --out"),
    (["--platform", "ieee", "--out", "o"], "needs --impl"),
    ([*KERNEL, "--seconds", "3", "--out", "o"], "not both"),
    (["--impl", "builtin:kernel", "--platform", "ieee", "--elements", "-5", "--out", "o"], "at least 1"),
    (["--impl", "builtin:kernel", "--platform", "ieee", "--seconds", "-1", "--out", "o"], "positive number"),
    ([*KERNEL, "--workers", "0", "--out", "o"], "--workers must be at least 1"),
    ([*KERNEL, "--shard", "3/2", "--out", "o"], "--shard"),
    ([*KERNEL, "--shard", "x", "--out", "o"], "form I/N"),
    ([*KERNEL, "--seed", "-1", "--out", "o"], "negative"),
    (["--impl", "nosuch:x", "--platform", "ieee", "--out", "o"], "unknown implementation"),
    (["--impl", "builtin:kernel", "--platform", "nosuch", "--out", "o"], "unknown platform"),
    (["--impl", "builtin:kernel", "--platform", "ft78ne", "--dtype", "fp16", "--out", "o"], "has no fp16"),
    ([*KERNEL, "--workers", "2", "--scheduler", "tcp://127.0.0.1:1", "--out", "o"], "--workers is for local"),
    (["merge", "--out", "o"], "merge needs"),
    (["merge", "no/such/dir", "--out", "o"], "no such folder"),
    (["merge", ".", "--out", "o", "--impl", "builtin:kernel"], "does not take --impl"),
    (["replay", "no/such/dir", "--batch", "1"], "no such folder"),
    (["replay", "."], "replay needs"),
    (["somewhere"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2 and words in err and err.count("\n") == 1 and err.startswith("sl1conf: error: "), err
    assert not (tmp_path / "o").exists()


def test_the_output_folder_is_reused_only_by_the_same_campaign(capsys, tmp_path):
    out = tmp_path / "out"
    assert run(capsys, *KERNEL, "--out", str(out))[0] == 0
    before = json.loads((out / "summary.json").read_text())
    assert run(capsys, *KERNEL, "--out", str(out))[0] == 0  # the same campaign again: replaced
    code, _, err = run(capsys, *KERNEL[:-1], "2", "--out", str(out))  # another seed
    assert code == 2 and "not empty" in err
    assert json.loads((out / "summary.json").read_text())["campaign"] == before["campaign"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.txt").write_text("keep")
    assert run(capsys, *KERNEL, "--out", str(other))[0] == 2
    assert run(capsys, *KERNEL, "--out", str(other), "--force")[0] == 0
    assert (other / "mine.txt").read_text() == "keep" and (other / "summary.json").is_file()
    assert not list(tmp_path.rglob(".*"))  # no temporary files left behind


def test_a_campaign_is_quiet_off_a_terminal_and_records_what_replays_it(capsys, tmp_path):
    code, out, err = run(capsys, *KERNEL, "--out", str(tmp_path / "o"))
    assert code == 0 and "\r" not in err and err.count("\n") == 1  # the seed line only
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["campaign"]["seed"] == 1 and s["batch_seed"].startswith("numpy.random.SeedSequence")
    assert s["elements"] and s["elements_per_second"] > 0 and s["host"] and s["profile"]["name"] == "ft78ne"


# ------------------------------------------------------------------ the hypothesis property under pytest

@pytest.fixture(autouse=True)
def _entry_points_load(monkeypatch):
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)


def _pytest(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "fuzz", *args, timeout=300)


def test_the_property_passes_for_the_kernel(pytester):
    result = _pytest(pytester, "--sl1-impl", "builtin:kernel", "--sl1-platform", "ieee", "--sl1-fuzz",
                     "--sl1-fuzz-examples", "50", "--hypothesis-seed", "3", "-v")
    result.assert_outcomes(passed=4)
    for run_id in ("fp16-p", "fp16-s", "fp32-p", "fp32-s"):
        result.stdout.fnmatch_lines([f"*sl1conf::fuzz::{run_id} PASSED*"])


def test_the_property_fails_for_a_defect_with_a_minimal_reproducer(pytester, tmp_path):
    db = tmp_path / "hypothesis-db"
    args = ("--sl1-impl", "builtin:model:muldiv-fp16", "--sl1-platform", "ieee", "--sl1-dtype", "fp16",
            "--sl1-variant", "p", "--sl1-fuzz", "--sl1-hypothesis-db", str(db), "--hypothesis-seed", "1")
    result = _pytest(pytester, *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*property failed for builtin:model:muldiv-fp16*",
                                 "*minimal call: length 1, *", "*sl1conf explain --dtype fp16 --dy 0x*"])
    assert any(p.is_file() for p in db.rglob("*"))  # the failing example is kept there for the next run
    again = _pytest(pytester, *args[:-2], "--sl1-fuzz-examples", "1")  # replayed from the database
    again.assert_outcomes(failed=1)


def test_property_options_need_the_property(pytester):
    result = _pytest(pytester, "--sl1-impl", "builtin:kernel", "--sl1-platform", "ieee",
                     "--sl1-fuzz-examples", "5")
    assert result.ret == 4 and "go with --sl1-fuzz" in result.stderr.str()

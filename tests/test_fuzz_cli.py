"""sl1conf fuzz on the command line: one-line errors, the output folder's rules, signals,
merging an incomplete shard set, and the hypothesis property of the pytest plugin
(pytest --sl1-impl ... --sl1-fuzz)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
    (["--impl", "builtin:kernel", "--platform", "ieee", "--elements", "-5", "--out", "o"], "expected 1 to"),
    (["--impl", "builtin:kernel", "--platform", "ieee", "--seconds", "-1", "--out", "o"], "positive number"),
    ([*KERNEL, "--workers", "0", "--out", "o"], "argument --workers: 0: expected 1 to"),
    ([*KERNEL, "--shard", "3/2", "--out", "o"], "--shard"),
    ([*KERNEL, "--shard", "x", "--out", "o"], "form I/N"),
    ([*KERNEL, "--seed", "-1", "--out", "o"], "negative"),
    (["--impl", "nosuch:x", "--platform", "ieee", "--out", "o"], "unknown implementation"),
    (["--impl", "builtin:kernel", "--platform", "nosuch", "--out", "o"], "unknown platform"),
    (["--impl", "builtin:kernel", "--platform", "ft78ne", "--dtype", "fp16", "--out", "o"], "has no fp16"),
    ([*KERNEL, "--workers", "2", "--scheduler", "tcp://127.0.0.1:1", "--out", "o"], "--workers is for local"),
    (["merge", "--out", "o"], "merge needs"),
    (["merge", "no/such/dir", "--out", "o"], "no such folder"),
    (["merge", ".", "--out", "o", "--impl", "builtin:kernel"], "unrecognized arguments: --impl"),
    (["--impl", "builtin:kernel", "merge", ".", "--out", "o"], "merge does not take --impl"),
    (["replay", "no/such/dir", "--batch", "1"], "no such folder"),
    (["replay", "."], "replay needs"),
    (["somewhere"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2 and words in err and err.count("\n") == 1 and err.startswith("sl1conf: error: "), err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("where", ["file/sub", "imm/f", "imm"])
def test_an_unwritable_out_is_one_line_before_the_campaign(where, capsys, tmp_path, request):
    if where.startswith("imm"):
        request.getfixturevalue("immutable")
    (tmp_path / "file").write_text("x")
    code, out, err = run(capsys, *KERNEL, "--out", str(tmp_path / where))
    assert code == 2 and err == f"sl1conf: error: {tmp_path / where}: cannot write there (" + err.split(" (", 1)[1]
    assert err.count("\n") == 1 and "fuzz: seed" not in err and not out  # refused before it ran


def test_a_write_that_fails_late_is_one_line(capsys, tmp_path, monkeypatch):
    from sl1conf.conformance.common import files

    def refuse(path, text):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(files, "write_atomic", refuse)  # cli/fuzz.py imports it at call time
    code, _, err = run(capsys, *KERNEL, "--out", str(tmp_path / "o"))
    assert code == 2 and err.splitlines()[-1] == f"sl1conf: error: {tmp_path / 'o'}: cannot write there " \
                                                 "(Permission denied)"


def test_replay_says_what_is_wrong_with_its_folder_and_batch(capsys, tmp_path):
    (tmp_path / "f1").write_text("x")
    code, _, err = run(capsys, "replay", str(tmp_path / "f1"), "--batch", "0")
    assert code == 2 and err.strip().endswith("f1: not a folder")
    out = tmp_path / "o"
    assert run(capsys, *KERNEL, "--shard", "2/3", "--elements", "2000", "--out", str(out))[0] == 0
    ran = json.loads((out / "summary.json").read_text())["batches"]["ranges"]
    assert ran == [[1, 10, 3]]  # 8 batches in all, shard 2 of 3 runs 1, 4, 7
    for batch in ("0", "2", "10", "99999999999999999999"):
        code, _, err = run(capsys, "replay", str(out), "--batch", batch)
        assert code == 2 and "did not run that batch (it ran 1 to 7 every 3)" in err and err.count("\n") == 1
    code, text, _ = run(capsys, "replay", str(out), "--batch", "4")
    assert code == 0 and text.startswith("batch 4 of seed 1:")


def test_merging_an_incomplete_shard_set_says_what_is_missing(capsys, tmp_path):
    for i in (1, 2):
        assert run(capsys, *KERNEL, "--shard", f"{i}/3", "--elements", "2000", "--out", str(tmp_path / f"s{i}"))[0] == 0
    code, out, err = run(capsys, "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m"))
    merged = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert code == 0 and "fuzz merge: warning: shard 3/3 missing: 2 batches not run" in err  # batches 2 and 5 of 8
    assert merged["missing_shards"] == ["3/3"] and merged["batches"]["count"] == 6 and "(3/3 missing)" in out


def _wait_for(predicate, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("sig, workers, to_group", [(signal.SIGINT, 1, True), (signal.SIGINT, 2, True),
                                                     (signal.SIGTERM, 2, False)])
def test_a_signal_stops_the_campaign_saves_what_it_found_and_leaves_no_process(sig, workers, to_group, tmp_path):
    """Ctrl-C reaches the whole process group (workers too), ``kill`` the parent alone."""
    out, log = tmp_path / "x", tmp_path / "stderr"
    argv = [sys.executable, "-m", "sl1conf", "fuzz", "--impl", "builtin:model:recipmul-fp16", "--platform", "ieee",
            "--dtype", "fp16", "--variant", "p", "--batch-elements", "4096", "--seconds", "1000",
            "--workers", str(workers), "--seed", "8", "--out", str(out)]
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    try:
        assert _wait_for(lambda: "fuzz: seed" in log.read_text(), 60), log.read_text()
        time.sleep(3)  # batches with failures run (the workers start meanwhile)
        (os.killpg if to_group else os.kill)(proc.pid, sig)
        text, _ = proc.communicate(timeout=90)  # minimizing after a signal is bounded (10 s)
        gone = _wait_for(lambda: _group_gone(proc.pid), 10)  # no worker left behind
    finally:
        if not _group_gone(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and gone, log.read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and "(interrupted)" in text and "interrupted" in log.read_text()
    if summary["failures"]["distinct"]:
        assert summary["saved"] and (out / "vectors-fp16" / "manifest.json").is_file()
    if workers == 1:
        assert summary["batches"]["count"] and summary["saved"]


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


def test_the_property_applies_the_boundary_rule(pytester):
    """A defect only at diff == +-beta, one ULP off (inside the budget), fails the property."""
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                          "import test_fuzz\ntest_fuzz.register_planted()\n")
    result = _pytest(pytester, "--sl1-impl", "planted:boundary", "--sl1-platform", "ieee", "--sl1-dtype", "fp16",
                     "--sl1-variant", "p", "--sl1-fuzz", "--hypothesis-seed", "1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*property failed for planted:boundary*", "*minimal call: length 1, beta 0x3c00*",
                                 "*[[]0[]] dy=0x3c00 x1=0x?c00 x2=0x0000*", "*got 0x?c01, expected 0x?c00*"])


def test_property_options_need_the_property(pytester):
    result = _pytest(pytester, "--sl1-impl", "builtin:kernel", "--sl1-platform", "ieee",
                     "--sl1-fuzz-examples", "5")
    assert result.ret == 4 and "go with --sl1-fuzz" in result.stderr.str()


# ------------------------------------------------------------------ summary.json and its schema

SUMMARY_SCHEMA = Path(__file__).parent.parent / "conformance" / "schemas" / "fuzz-summary.schema.json"
DEFECTIVE = ["--impl", "builtin:model:recipmul-fp16", "--platform", "ieee", "--dtype", "fp16",
             "--batch-elements", "256", "--elements", "4000", "--seed", "3"]


def _shards_and_merge(capsys, tmp_path) -> list:
    """Two shards of a campaign with failures and their merge; the three output folders."""
    for i in (1, 2):
        assert run(capsys, *DEFECTIVE, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}"))[0] == 1
    assert run(capsys, "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m"))[0] == 1
    return [tmp_path / name for name in ("s1", "s2", "m")]


def test_every_summary_written_matches_its_schema(capsys, tmp_path):
    import jsonschema  # a dependency; checked here directly, not through the suite's own reader

    schema = json.loads(SUMMARY_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    folders = _shards_and_merge(capsys, tmp_path)
    assert run(capsys, *KERNEL, "--out", str(tmp_path / "clean"))[0] == 0  # nothing found, nothing saved
    assert run(capsys, "--impl", "builtin:sample:SEGV", "--platform", "ieee", "--dtype", "fp32", "--variant", "p",
               "--elements", "100", "--batch-elements", "64", "--seed", "1", "--out", str(tmp_path / "segv"))[0] == 1
    kinds = set()
    for folder in [*folders, tmp_path / "clean", tmp_path / "segv"]:
        doc = json.loads((folder / "summary.json").read_text())
        jsonschema.validate(doc, schema)
        kinds |= {e["kind"] for e in doc["saved"]}
        # saved failures are filed under a requirement of the catalog: recipmul-fp16 breaks R01's
        # budget, the boundary (R02) and overflow (R03) rules; the segfault is R13
        assert all(e["key"].split("/")[0] in {"R01", "R02", "R03", "R13"} for e in doc["saved"])
    assert kinds == {"element", "crash"}
    merged = json.loads((folders[2] / "summary.json").read_text())
    assert merged["merged_from"] and merged["saved"] and merged["missing_shards"] == []


@pytest.mark.parametrize("edit", [
    lambda s: s.update(elements="many"),  # a wrong type in a required field
    lambda s: s["saved"][0].update(kind="wrong"),  # not one of the kinds
    lambda s: s["failures"].pop("keys"),
])
def test_a_hand_edited_summary_is_one_line_naming_it(edit, capsys, tmp_path):
    s1, s2, _ = _shards_and_merge(capsys, tmp_path)
    path = s1 / "summary.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    for argv in (["merge", str(s1), str(s2), "--out", str(tmp_path / "again")], ["replay", str(s1), "--batch", "0"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith(f"sl1conf: error: {path}: does not match the schema at "), err
    assert not (tmp_path / "again").exists()


def test_a_summary_that_would_not_match_is_a_bug_and_is_not_written(capsys, tmp_path, monkeypatch):
    from sl1conf.conformance.cli import fuzz

    monkeypatch.setattr(fuzz, "_commands", lambda summary, out: [None])  # certify: strings, not null
    with pytest.raises(RuntimeError, match="does not match the schema at certify/0"):
        main(["fuzz", *KERNEL, "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o" / "summary.json").exists()


# ------------------------------------------------------------------ a sweep's rejections, replayed


def test_fuzz_replay_runs_a_sweeps_rejected_elements_again(capsys, tmp_path):
    import numpy as np

    from test_sweep_volume import PLANTED, PLANTED_DY

    (tmp_path / "planted.py").write_text(PLANTED)
    planted = f"python:{tmp_path / 'planted.py'}:grad"
    out = tmp_path / "sweep"
    # two planes, x2 = 0.5, beta = 1: the planted one (dy 0x4321) is wrong by 4 steps wherever its result is
    # finite; the sweep keeps its first 64 rejected elements, x1 = 0x0000 ... 0x003f (x1 - x2 about -0.5)
    assert main(["sweep", "--impl", planted, "--beta", "1", "--dy", f"0x4320-{PLANTED_DY:#06x}", "--subset",
                 "x2=0x3800", "--workers", "1", "--out", str(out)]) == 1
    capsys.readouterr()
    dy = np.uint16(PLANTED_DY).view(np.float16)
    expected = int((np.float16(-0.5) * dy).view(np.uint16))  # -0.5 * dy: exact in fp16
    for where in (out, out / "rejections-fp16"):  # the sweep's folder, or the set it wrote
        code, text, err = run(capsys, "replay", str(where))
        assert code == 1, err
        assert text.startswith(f"replay of {out / 'rejections-fp16'} (the rejections of the sweep of {planted} ")
        assert "1 call(s), 64 elements" in text and "R01 accuracy: fp16 p, 64 of 64 elements rejected" in text
        assert (f"dy={PLANTED_DY:#06x} x1=0x0000 x2=0x3800 beta=0x3c00: expected {expected:#06x}, "
                f"got {expected + 4:#06x} (4 ULP)") in text
        assert text.rstrip().endswith("verdict: FAIL (64 of 64 elements rejected again)")
    for impl in ("builtin:oracle", "builtin:kernel"):  # correct ones: nothing fails again
        code, text, _ = run(capsys, "replay", str(out), "--impl", impl)
        assert code == 0 and "0 finding(s)" in text and "by the judge's reason: 64 exact" in text
        assert text.rstrip().endswith("verdict: PASS (none of the 64 elements fails again)")
    # certify --vectors reads the same set, and judges it alike
    assert main(["certify", "--impl", planted, "--vectors", str(out / "rejections-fp16"), "--out",
                 str(tmp_path / "c1")]) == 1
    assert main(["certify", "--impl", "builtin:oracle", "--vectors", str(out / "rejections-fp16"), "--out",
                 str(tmp_path / "c2")]) == 0
    capsys.readouterr()
    # a set no sweep wrote needs --impl (judged on ieee); a sweep with no rejection has nothing to replay
    (tmp_path / "loose").mkdir()
    import shutil

    shutil.copytree(out / "rejections-fp16", tmp_path / "loose" / "set")
    code, _, err = run(capsys, "replay", str(tmp_path / "loose" / "set"))
    assert code == 2 and "needs --impl SPEC" in err and err.count("\n") == 1
    code, text, _ = run(capsys, "replay", str(tmp_path / "loose" / "set"), "--impl", planted)
    assert code == 1 and "(a vector set) on" in text and "judged on ieee" in text
    clean = tmp_path / "clean"
    assert main(["sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "0x3c00", "--subset", "x2=0x3800",
                 "--out", str(clean)]) == 0
    capsys.readouterr()
    code, text, _ = run(capsys, "replay", str(clean))
    assert code == 0 and "nothing to replay" in text


def test_fuzz_replay_judges_a_vector_set_under_the_platform_asked_for(capsys, tmp_path):
    """A board team's FTZ library: the rejections of its sweep on ieee (subnormal x2 flushed), and
    the same set copied away from the sweep, replayed with --platform mt7004 (flushing accepted) are
    judged under mt7004 and pass; without it they are judged under the sweep's platform, or ieee's
    for a loose set, and fail. --batch draws under its campaign's platform: --platform refused there."""
    import shutil

    out = tmp_path / "sweep"
    assert main(["sweep", "--impl", "builtin:oracle-ftz", "--beta", "1", "--dy", "0x3c00", "--subset", "x2=0x0001",
                 "--out", str(out)]) == 1  # every subnormal result flushed: rejected on ieee
    shutil.copytree(out / "rejections-fp16", tmp_path / "loose")
    board = tmp_path / "board.toml"  # the team's own file: mt7004's
    shutil.copy(Path(__file__).parents[1] / "conformance" / "rules" / "profiles" / "mt7004.toml", board)
    capsys.readouterr()
    ftz = ["--impl", "builtin:oracle-ftz"]
    for where, more, sweep in ((out, [], True), (tmp_path / "loose", ftz, False)):
        code, text, _ = run(capsys, "replay", str(where), *more)
        assert code == 1 and "judged on ieee:" in text and "64 of 64 elements rejected" in text
        for option in (["--platform", "mt7004"], ["--profile", str(board)]):
            code, text, err = run(capsys, "replay", str(where), *more, *option)
            assert code == 0, err
            said = f"judged on mt7004 ({' '.join(option)}" + ("; the sweep ran on ieee):" if sweep else "):")
            assert said in text, text
            assert text.rstrip().endswith("verdict: PASS (none of the 64 elements fails again)")
    code, _, err = run(capsys, "replay", str(out), "--platform", "nope")
    assert code == 2 and err.count("\n") == 1 and "--platform nope: unknown platform" in err
    campaign = tmp_path / "campaign"
    assert run(capsys, *KERNEL, "--out", str(campaign))[0] == 0
    code, _, err = run(capsys, "replay", str(campaign), "--batch", "0", "--platform", "mt7004")
    assert code == 2 and err.count("\n") == 1 and "does not take --platform" in err


def test_fuzz_replay_without_batch_names_what_it_takes(capsys, tmp_path):
    out = tmp_path / "o"
    assert run(capsys, *KERNEL, "--out", str(out))[0] == 0
    code, _, err = run(capsys, "replay", str(out))  # a fuzz output folder still needs its batch
    assert code == 2 and "replay needs --batch K" in err and err.count("\n") == 1
    code, _, err = run(capsys, "replay", str(tmp_path / "nothing"))
    assert code == 2 and err.strip().endswith("nothing: no such folder")


@pytest.mark.parametrize("option", [["--platform", "mt7004"], ["--profile", "x.toml"]])
def test_replay_refuses_a_platform_it_would_not_use(capsys, tmp_path, option):
    """replay judges under the campaign's or the sweep's platform: a --platform given to it would
    be ignored, so it is refused in one line, exit 2."""
    assert main(["fuzz", *option, "replay", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"replay does not take {option[0]}" in err

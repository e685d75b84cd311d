"""The board script (adapters/sim/board-run.sh) of docs/simulator-protocol.md, run for real.

The "board" is a local folder: the script's copy and run commands (SL1_BOARD_COPY_TO,
SL1_BOARD_RUN, SL1_BOARD_COPY_FROM) are replaced by cp and sh, and the harness is the host
build of the sample library, with its deliberate defects. Through ``sl1conf certify --impl
"sim:... board-run.sh {case} {result}"``, a crash or a hang must be blamed on exactly the calls
of the triggering length (computed from the vector set), the reproduction command the report
prints must fail again, and a correct library must pass; each failure mode of a board the page
describes (a transfer that fails, a results file cut short, a board that must be reset) must
give what the page says. The page shows the script verbatim: the two must agree.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from sl1conf.adapters import AdapterError, Case, load
from sl1conf.adapters import sample as S
from sl1conf.conformance.certify.engine import vectors_for
from sl1conf.conformance.cli import main
from sl1conf.conformance.rules.profiles import load_profile

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "adapters" / "sim" / "board-run.sh"
DOC = ROOT / "docs" / "simulator-protocol.md"
ONE = 0x3F800000  # fp32 1.0


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("sl1-board-builds")


@pytest.fixture
def board(tmp_path, monkeypatch):
    """A stand-in board: a local folder, reached with cp and sh instead of scp and ssh. Returns
    (the board's folder, a function that points the script at a harness)."""
    folder = tmp_path / "board"
    folder.mkdir()
    monkeypatch.setenv("SL1_BOARD", "stand-in")
    monkeypatch.setenv("SL1_BOARD_DIR", str(folder))
    monkeypatch.setenv("SL1_BOARD_COPY_TO", 'cp "$1" "$2"')
    monkeypatch.setenv("SL1_BOARD_RUN", 'exec sh -c "$1"')
    monkeypatch.setenv("SL1_BOARD_COPY_FROM", 'cp "$1" "$2"')
    monkeypatch.setenv("SL1_BOARD_TIMEOUT", "2")  # a margin for a loaded machine
    for name in ("SL1_BOARD_DEADLINE", "SL1_BOARD_RESET", "SL1_BOARD_HARNESS"):
        monkeypatch.delenv(name, raising=False)

    def use(harness):
        monkeypatch.setenv("SL1_BOARD_HARNESS", str(harness))
    return folder, use


def name(timeout=20, **options) -> str:
    settings = ",".join([f"timeout={timeout}"] + [f"{k}={v}" for k, v in options.items()])
    return f"sim:[{settings}] {shlex.quote(str(SCRIPT))} {{case}} {{result}}"


def calls_of_length(length: int) -> tuple:
    """(the ids of the calls of ``length`` that `certify --quick --dtype fp32 --variant p` on
    ieee makes, the number of calls it makes), from the vector set itself."""
    vs = vectors_for("fp32", quick=True)
    profile = load_profile("ieee")
    ids, count = [], 0
    for row in vs.manifest["cases"]:
        vc = vs.case(row)
        if vc.variant == "s" and vc.core_mask == 0:
            continue  # core_mask 0 means nothing to the private version: not called
        count += 1
        if vc.call.replace(variant="p", core_mask=profile.core_mask, id=row["id"]).call_length == length:
            ids.append(row["id"])
    return ids, count


def certify(folder: Path, *extra) -> tuple:
    code = main(["certify", "--impl", name(), "--platform", "ieee", "--quick", "--dtype", "fp32", "--variant", "p",
                 *extra, "--out", str(folder)])
    report = json.loads((folder / "report.json").read_text())
    [run] = report["runs"]
    return code, report, {r["id"]: r for r in run["requirements"]}


# ---- the script itself ------------------------------------------------------------------

def test_the_page_shows_the_script_as_it_is():
    """The worked example of docs/simulator-protocol.md is the file, byte for byte, and no
    example on the page keeps the `set -e` + `; status=$?` pattern that lost a crash's results."""
    text = DOC.read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```$", text, re.S | re.M)
    shown = [b for b in blocks if b.startswith("#!/bin/sh\n# board-run.sh")]
    assert len(shown) == 1, "the page must show adapters/sim/board-run.sh once, in a ```sh block"
    assert shown[0] == SCRIPT.read_text()
    for block in blocks:
        assert not (re.search(r"^\s*set -e\b", block, re.M) and re.search(r";\s*status=\$\?", block)), block


def test_the_script_is_executable_and_valid_sh():
    assert os.access(SCRIPT, os.X_OK), "git must keep board-run.sh executable (mode 100755)"
    for shell in ("sh", "dash", "bash"):
        if shutil.which(shell):
            done = subprocess.run([shell, "-n", str(SCRIPT)], capture_output=True, text=True)
            assert done.returncode == 0, (shell, done.stderr)
    if shutil.which("shellcheck"):  # not required: Debian's shellcheck, where installed
        done = subprocess.run(["shellcheck", "-s", "sh", str(SCRIPT)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout


def test_bad_usage_and_settings_are_exit_status_2(board):
    assert subprocess.run(["sh", str(SCRIPT), "only-one"], capture_output=True).returncode == 2
    done = subprocess.run(["sh", str(SCRIPT), "a", "b"], capture_output=True, text=True,
                          env={**os.environ, "SL1_BOARD_TIMEOUT": "1.5"})
    assert done.returncode == 2 and "whole seconds" in done.stderr


# ---- certify through the script ------------------------------------------------------------

def test_a_correct_library_passes_and_the_board_is_left_clean(board, build_dir, tmp_path):
    folder, use = board
    use(S.build_harness(out_dir=build_dir))
    code, report, reqs = certify(tmp_path / "report")
    assert code == 0 and report["verdict"] == "pass", [r for r in reqs.values() if r["status"] == "fail"]
    assert reqs["R13"]["failed"] == 0 and report["implementation"]["protocol_version"] == 2
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("bug, said", [("SEGV", "the harness died of SIGSEGV on the board"),
                                       ("HANG", "no new result record for 2 s on the board: harness killed")])
def test_a_crash_or_a_hang_is_blamed_on_exactly_its_calls(board, build_dir, tmp_path, bug, said):
    """The sample crashes (hangs) on every call of one length: R13 fails for exactly those
    calls, nothing else fails, and the report's reproduction command fails again."""
    folder, use = board
    use(S.build_harness(out_dir=build_dir, bug=bug))
    want, count = calls_of_length(S.defects()[bug][1])
    assert 0 < len(want) <= 5  # R13 lists up to 5 examples: all of them here
    code, report, reqs = certify(tmp_path / "report")
    r13 = reqs["R13"]
    assert code == 1 and report["verdict"] == "fail"
    assert (r13["status"], r13["checked"], r13["failed"]) == ("fail", count, len(want)), r13
    assert sorted(e["case"] for e in r13["examples"]) == sorted(want), r13["examples"]
    assert all(said in e["detail"] for e in r13["examples"]), r13["examples"]
    assert [r for r in reqs if reqs[r]["status"] == "fail"] == ["R13"]
    assert list(folder.iterdir()) == []

    line = next(ln for ln in (tmp_path / "report" / "report.md").read_text().splitlines()
                if ln.startswith("sl1conf certify") and f"--only R13,{want[0]}" in ln)
    argv = shlex.split(line)[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "again")
    assert main(argv) == 1
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    [r13] = [r for r in again["runs"][0]["requirements"] if r["id"] == "R13"]
    assert r13["failed"] == 1 and r13["examples"][0]["case"] == want[0]


# ---- the failure modes of a board (docs/simulator-protocol.md, "On a board") ----------------

def five(lengths=(5, 7, 9, 11, 3)) -> list:
    return [Case("fp32", *(np.full(n, ONE, np.uint32),) * 3, ONE, id=f"n{n}") for n in lengths]


def test_a_transfer_that_fails_before_the_run(board, build_dir, monkeypatch, tmp_path, capsys):
    """Nothing ran. On the protocol question: no answer, so no guess (not version 1, one case per
    run): one line naming the command and the script's stderr, exit 2, in seconds. Past it
    (protocol=): each run's first case is an error naming the copy, the next run goes on."""
    _, use = board
    use(S.build_harness(out_dir=build_dir))
    monkeypatch.setenv("SL1_BOARD_COPY_TO", 'echo "stand-in: no route to board" >&2; exit 7')
    adapter = load(name(timeout=10))
    with pytest.raises(AdapterError, match="gave no answer to the protocol question.*exit status 7: .*no route to board"):
        adapter.protocol()
    start = time.monotonic()
    code = main(["certify", "--impl", name(timeout=10), "--platform", "ieee", "--quick", "--dtype", "fp32",
                 "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "no route to board" in err, err
    assert time.monotonic() - start < 20 and not (tmp_path / "r" / "report.json").exists()
    for version in (1, 2):
        got = load(name(timeout=10, protocol=version)).run(five())
        assert [o.status for o in got] == ["error"] * 5
        assert all("exit status 7" in o.detail and "no route to board" in o.detail
                   and "copying the case file to stand-in:" in o.detail for o in got), [o.detail for o in got]
        assert version == 1 or all(f"before the result of case {c.id}:" in o.detail for c, o in zip(five(), got))


def test_a_transfer_that_fails_after_the_run(board, build_dir, monkeypatch):
    """The harness ran, but nothing came back: an error naming the copy back (not the library)."""
    folder, use = board
    use(S.build_harness(out_dir=build_dir))
    monkeypatch.setenv("SL1_BOARD_COPY_FROM", 'echo "stand-in: connection reset" >&2; exit 5')
    got = load(name(timeout=10, protocol=2)).run(five())
    assert [o.status for o in got] == ["error"] * 5
    assert all(f"exit status 5 before the result of case {c.id}:" in o.detail for c, o in zip(five(), got))
    assert all("copying the results back from stand-in:" in o.detail for o in got), [o.detail for o in got]


def test_a_results_file_cut_short(board, build_dir, monkeypatch):
    """The copy back loses the end of the file but says it succeeded: the complete records
    count, the case cut in the middle is an error, the next run answers the rest."""
    _, use = board
    use(S.build_harness(out_dir=build_dir))
    # header (16) + one record of 3 fp32 elements (24 + 12) + 10 bytes of the next one
    monkeypatch.setenv("SL1_BOARD_COPY_FROM", 'head -c 62 "$1" >"$2"')
    got = load(name(timeout=10, protocol=2)).run(five((3, 3, 3)))
    assert [o.status for o in got] == ["ok", "error", "ok"], [o.detail for o in got]
    assert "the command exited 0 before the result of case n3" in got[1].detail
    assert all(np.array_equal(got[k].out, np.zeros(3, np.uint32)) for k in (0, 2))  # diff 0: dx1 = 0


def test_a_board_that_must_be_reset(board, build_dir, tmp_path, monkeypatch):
    """After the hang the stand-in board stops answering: past SL1_BOARD_DEADLINE the script
    kills the step, runs SL1_BOARD_RESET, copies the records back and the hang is still blamed
    on its own case."""
    _, use = board
    use(S.build_harness(out_dir=build_dir, bug="HANG"))
    resets = tmp_path / "resets"
    monkeypatch.setenv("SL1_BOARD_RUN", 'sh -c "$1"; s=$?; if [ "$s" -eq 124 ]; then exec sleep 60; fi; exit "$s"')
    monkeypatch.setenv("SL1_BOARD_DEADLINE", "7")  # the board's watchdog needs 2 to 3 s
    monkeypatch.setenv("SL1_BOARD_RESET", f"echo reset >>{shlex.quote(str(resets))}")
    got = load(name(timeout=30)).run(five((5, 17, 9)))
    assert [o.status for o in got] == ["ok", "error", "ok"], [o.detail for o in got]
    detail = got[1].detail
    assert "exit status 124 before the result of case n17" in detail
    assert "no answer from the board within 7 s (SL1_BOARD_DEADLINE)" in detail and "board reset" in detail
    assert resets.read_text() == "reset\n"


def test_without_the_boards_watchdog_the_suites_timeout_blames_the_batchs_first_case(board, build_dir,
                                                                                      monkeypatch):
    """SL1_BOARD_TIMEOUT=0: the suite's own timeout kills the script before it copies anything
    back, so the batch's first case takes the blame; the hanging case is blamed only when a new
    run starts with it (what the page warns of)."""
    _, use = board
    use(S.build_harness(out_dir=build_dir, bug="HANG"))
    monkeypatch.setenv("SL1_BOARD_TIMEOUT", "0")
    got = load(name(timeout=3, protocol=2)).run(five((5, 17, 9)))
    assert [o.status for o in got] == ["timeout", "timeout", "ok"], [o.detail for o in got]
    assert "(case n5)" in got[0].detail and "(case n17)" in got[1].detail

"""``sl1conf selftest``: the zoo built and certified through a pipeline, and the pipeline broken on
purpose. A self-test that passes whatever the pipeline does proves nothing, so two of these tests
break it (a board script that hides crashes, a harness that drops its memory report) and expect
exit 1 naming the defects no longer caught.

The full host ``--quick`` run (34 members, about 80 s on 2 CPUs) is run by hand and by the demo;
here a subset of each kind of member runs (``--only``).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from sl1conf.conformance.cli import main
from sl1conf.conformance.common.jsonfiles import validate
from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.selftest import engine, zoo

ROOT = Path(__file__).resolve().parents[1]
SUBSET = "segv,clobber-input,tail-wrong,scratch-in-output,correct,fpu-flush,threaded-cores"
"""A crash, an input clobbered, a wrong tail, an in-place bug (host only), the plain library, the
FPU's flush mode and real threads."""


def _selftest(tmp_path, capsys, *args, out="out") -> tuple:
    """(exit code, stdout, stderr, selftest.json or None) of ``sl1conf selftest ARGS --out tmp/out``."""
    code = main(["selftest", "--no-progress", "--workers", "2", *args, "--out", str(tmp_path / out)])
    captured = capsys.readouterr()
    path = tmp_path / out / "selftest.json"
    return code, captured.out, captured.err, json.loads(path.read_text()) if path.exists() else None


def _broken(stdout: str) -> set:
    """The members the BROKEN lines name."""
    return set(re.findall(r"^BROKEN: (?:defect|honest) (\S+)", stdout, re.M))


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("selftest-builds")


def test_the_zoo_table_names_every_source_and_meson_installs_every_file():
    """A member without its C file, a C file no member uses, or a file meson does not install would
    each break the installed self-test only."""
    members = zoo.members()
    own = {m.name for m in members if m.bug is None}
    sources = {p.stem for p in zoo.zoo_dir().glob("*.c")}
    assert own == sources, (own ^ sources)
    assert {m.kind for m in members} == {"defect", "honest"}
    assert all(m.meant_for for m in members if m.kind == "defect")
    meson = (ROOT / "conformance" / "meson.build").read_text()
    installed = set(re.findall(r"'selftest/zoo/([^']+)'", meson))
    assert installed == {p.name for p in zoo.zoo_dir().iterdir()}, installed ^ {p.name for p in zoo.zoo_dir().iterdir()}


def test_a_defect_is_caught_only_by_its_own_requirement():
    """Failing other requirements is not catching it: the pipeline may have lost the check meant
    for it (a crash hidden, then wrong results seen instead)."""
    row = {"name": "segv", "kind": "defect", "meant_for": "R13", "verdict": "fail", "failed": ["R01", "R07"],
           "problem": None, "skipped": None}
    judged = engine.judge_member(row)
    assert judged["status"] == "broken"
    assert judged["why"] == "defect segv (meant for R13) was not caught: verdict fail (failed only R01, R07)"
    assert engine.judge_member({**row, "failed": ["R01", "R13"]})["status"] == "ok"
    honest = {**row, "name": "slow", "kind": "honest", "meant_for": None, "verdict": "fail", "failed": ["R01"]}
    assert engine.judge_member(honest)["why"] == "honest slow failed R01"
    assert engine.judge_member({**honest, "verdict": "incomplete", "failed": []})["status"] == "broken"


def test_host_selftest_catches_every_defect_and_passes_every_honest_library(tmp_path, capsys, build_dir):
    code, out, err, doc = _selftest(tmp_path, capsys, "--quick", "--only", SUBSET, "--build-dir", str(build_dir))
    assert code == 0, out + err
    validate(doc, "selftest.schema.json", SuiteError, "selftest.json")
    assert doc["ok"] and doc["target"]["kind"] == "host" and doc["quick"]
    rows = {r["name"]: r for r in doc["members"]}
    assert list(rows) == SUBSET.split(",")
    assert rows["segv"]["status"] == "ok" and "R13" in rows["segv"]["failed"]
    assert rows["scratch-in-output"]["failed"] == ["R15"]  # host builds make the in-place calls
    assert rows["correct"]["verdict"] == "pass" and rows["correct"]["failed"] == []
    md = (tmp_path / "out" / "selftest.md").read_text()
    assert "| tail-wrong | defect | ieee | R07 lengths-and-tails |" in md
    html = (tmp_path / "out" / "selftest.html").read_text()
    assert "<table>" in html and "<script" not in html and "http" not in html.split("</style>")[1]
    assert re.search(r"^segv +defect +ieee +R13 no-crash-no-hang +R\d\d, R13 +fail +OK", out, re.M), out
    assert "4 of 4 defects caught, 3 of 3 honest libraries passed" in out


CRASH_HIDING_SCRIPT = r'''
"""A board script that hides crashes: the harness under its own 2 s watchdog; when the harness died or
hung before answering every case, it writes the missing records itself (the call "returned" with dx1
untouched) and exits 0."""
import struct, subprocess, sys

harness, case_path, result_path = sys.argv[1:4]
try:
    subprocess.run([harness, case_path, result_path], timeout=2, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
except subprocess.TimeoutExpired:
    pass
batch = open(case_path, "rb").read()
count, at, cases = struct.unpack_from("<I", batch, 8)[0], 16, []
for _ in range(count):
    size = struct.unpack_from("<I", batch, at)[0]
    record = batch[at + 4:at + 4 + size]
    n, e = struct.unpack_from("<I", record, 12)[0], record[6] // 8
    cases.append((n, record[24 + 3 * n * e:24 + 4 * n * e], e))
    at += 4 + size
try:
    data = open(result_path, "rb").read()
except FileNotFoundError:
    data = b""
if len(data) < 16:
    data = b"SL1S" + struct.pack("<HHII", 2, 0, count, 0)
done, at = 0, 16
while done < count and len(data) - at >= 24:
    status, n = struct.unpack_from("<H", data, at + 6)[0], struct.unpack_from("<I", data, at + 12)[0]
    end = at + 24 + (n * cases[done][2] if status == 0 else 0)
    if end > len(data):
        break
    done, at = done + 1, end
data = data[:at] + b"".join(b"SL1R" + struct.pack("<HHIIII", 2, 0, k, cases[k][0], 1, 0) + cases[k][1]
                            for k in range(done, count))
open(result_path, "wb").write(data)
'''

MEMORY_DROPPING_HARNESS = r'''
"""A harness that drops its memory record: the real harness writes aside, and its records are passed
on without the memory report (has report 0, flags 0), as a port of the harness that never wrote SL1M."""
import struct, subprocess, sys

harness, case_path, result_path = sys.argv[1:4]
code = subprocess.run([harness, case_path, result_path + ".raw"]).returncode
try:
    data = bytearray(open(result_path + ".raw", "rb").read())
except FileNotFoundError:
    sys.exit(code)
batch = open(case_path, "rb").read()
count, at, sizes = struct.unpack_from("<I", batch, 8)[0], 16, []
for _ in range(count):
    sizes.append(batch[at + 4 + 6] // 8)
    at += 4 + struct.unpack_from("<I", batch, at)[0]
at = 16
for k in range(count):
    if len(data) - at < 24:
        break
    status, n = struct.unpack_from("<H", data, at + 6)[0], struct.unpack_from("<I", data, at + 12)[0]
    struct.pack_into("<II", data, at + 16, 0, 0)
    at += 24 + (n * sizes[k] if status == 0 else 0)
open(result_path, "wb").write(bytes(data))
sys.exit(code)
'''


def _script(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return f"{sys.executable} {path} {{harness}} {{case}} {{result}}"


def test_a_board_script_that_hides_crashes_breaks_the_selftest(tmp_path, capsys, build_dir):
    """The crash and the hang now look like calls that returned without writing: they still fail
    (wrong results), but not the requirement meant for them, and the self-test says so."""
    template = _script(tmp_path, "hide_crashes.py", CRASH_HIDING_SCRIPT)
    code, out, _, doc = _selftest(tmp_path, capsys, "--quick", "--only", "segv,hang,clobber-input,correct",
                                  "--sim", template, "--build-dir", str(build_dir))
    assert code == 1 and not doc["ok"]
    assert _broken(out) == {"segv", "hang"}, out
    assert "BROKEN: defect segv (meant for R13) was not caught: verdict fail (failed only R01" in out


def test_a_harness_that_drops_its_memory_record_breaks_the_selftest(tmp_path, capsys, build_dir):
    """Without the memory report nothing sees writes outside dx1 or changed inputs: the defects meant
    for those requirements pass; the crash and the honest library are unaffected."""
    template = _script(tmp_path, "drop_memory.py", MEMORY_DROPPING_HARNESS)
    code, out, _, doc = _selftest(tmp_path, capsys, "--quick", "--only", "segv,write-past-end,clobber-input,correct",
                                  "--sim", template, "--build-dir", str(build_dir))
    assert code == 1
    assert _broken(out) == {"write-past-end", "clobber-input"}, out
    assert "BROKEN: defect clobber-input (meant for R12) was not caught: verdict pass" in out
    assert {r["name"]: r["status"] for r in doc["members"]}["segv"] == "ok"


def test_a_script_that_only_exits_0_hides_no_crash(tmp_path, capsys, build_dir):
    """Exit status 0 with the crashed call's record missing is still blamed on that call (protocol
    version 2's recovery): such a script breaks nothing, and the self-test says OK."""
    script = tmp_path / "exit0.sh"
    script.write_text('#!/bin/sh\n"$@"\nexit 0\n')
    script.chmod(0o755)
    code, out, _, doc = _selftest(tmp_path, capsys, "--quick", "--only", "segv", "--sim",
                                  f"{script} {{harness}} {{case}} {{result}}", "--build-dir", str(build_dir))
    assert code == 0 and doc["members"][0]["failed"] == ["R13"], out


def test_the_bundled_board_script_carries_the_selftest(tmp_path, capsys, build_dir, monkeypatch):
    """docs/selftest.md's board command, with a local folder as the board: a wrapper puts each
    member's harness where board-run.sh's SL1_BOARD_HARNESS names it, and the crash on the "board"
    comes back as an exit status that is still blamed on its call."""
    from sl1conf.adapters import sample

    board = tmp_path / "board"
    board.mkdir()
    monkeypatch.setenv("SL1_BOARD_DIR", str(board))
    monkeypatch.setenv("SL1_BOARD_COPY_TO", 'exec cp "$1" "$2"')
    monkeypatch.setenv("SL1_BOARD_RUN", 'exec sh -c "$1"')
    monkeypatch.setenv("SL1_BOARD_COPY_FROM", 'exec cp "$1" "$2"')
    script = sample.harness_source().with_name("board-run.sh")
    template = (f"[timeout=60] sh -c 'cp \"$0\" {board}/harness && SL1_BOARD_HARNESS={board}/harness "
                f"exec {script} \"$1\" \"$2\"' {{harness}} {{case}} {{result}}")
    code, out, _, doc = _selftest(tmp_path, capsys, "--quick", "--only", "segv,clobber-input,correct",
                                  "--workers", "1", "--sim", template, "--build-dir", str(build_dir))
    assert code == 0, out
    assert [r["status"] for r in doc["members"]] == ["ok", "ok", "ok"] and doc["workers"] == 1
    assert "with 1 worker\n" in out


@pytest.mark.parametrize("args, words", [
    (["--cc", "no-such-cc-27"], "no-such-cc-27"),
    (["--sim", "qemu-aarch64 ./harness {case} {result}"], "{harness}"),
    (["--sim", "no-such-simulator-27 {harness} {case} {result}"], "no-such-simulator-27"),
    (["--only", "segv,no-such-member"], "no-such-member"),
    (["--timeout", "0"], "--timeout"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, build_dir, args, words):
    code, out, err, doc = _selftest(tmp_path, capsys, "--only", "correct", "--build-dir", str(build_dir), *args)
    assert code == 2 and doc is None
    assert len(err.strip().splitlines()) == 1 and words in err and "Traceback" not in err, err


def test_an_out_that_is_a_file_is_exit_2(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    code = main(["selftest", "--only", "correct", "--out", str(tmp_path / "file")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a folder" in err, err


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")),
                    reason="aarch64-linux-gnu-gcc or qemu-aarch64 not installed")
def test_the_zoo_cross_built_runs_under_qemu_aarch64(tmp_path, capsys, build_dir):
    """Cross-built members through qemu-user: the FPU's flush mode is aarch64's FPCR.FZ there; the
    reads outside an array are host only (a harness has no guard pages) and the matrix says so."""
    code, out, _, doc = _selftest(tmp_path, capsys, "--quick", "--only", "segv,read-past-end,fpu-flush,correct",
                                  "--cc", "aarch64-linux-gnu-gcc",
                                  "--sim", "qemu-aarch64 -L /usr/aarch64-linux-gnu {harness} {case} {result}",
                                  "--build-dir", str(build_dir))
    assert code == 0, out
    rows = {r["name"]: r for r in doc["members"]}
    assert rows["read-past-end"]["status"] == "skipped" and rows["read-past-end"]["verdict"] is None
    assert rows["fpu-flush"]["verdict"] == "pass" and "aarch64" in doc["target"]["compiler"]
    assert re.search(r"^read-past-end .* host only", out, re.M), out


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")),
                    reason="aarch64-linux-gnu-gcc or qemu-aarch64 not installed")
def test_the_fpu_flush_member_really_flushes_under_qemu(tmp_path, capsys, build_dir):
    """fpu-flush passes its DSP profile because it flushes as allowed, not because FPCR.FZ did
    nothing: on the strict profile, which forbids flushing, the same build fails the subnormals."""
    member = next(m for m in zoo.members() if m.name == "fpu-flush")
    harness = zoo.build_harness(member, build_dir, cc="aarch64-linux-gnu-gcc", cflags=["-static"])
    code = main(["certify", "--impl", f"sim:qemu-aarch64 {harness} {{case}} {{result}}", "--platform", "ieee",
                 "--dtype", "fp32", "--variant", "p", "--quick", "--out", str(tmp_path / "ieee")])
    report = json.loads((tmp_path / "ieee" / "report.json").read_text())
    failed = {r["id"] for r in report["runs"][0]["requirements"] if r["status"] == "fail"}
    assert code == 1 and "R06" in failed, failed

"""The board path never guesses, and nothing checked is a pass (issue 36, parts 3 and 4).

A harness that cannot answer the protocol question (qemu-user without the target's sysroot, a
script that fails) is bad usage in seconds, with what it said, not a version 1 harness run case
by case into R13 failures. A board's output that stops (a crash, a transfer cut mid-line) fails
R13 for the one case it stops at and leaves the rest not run (the run incomplete), in both
variants' runs. A crash names the vector case id. A report names every file the command named by
its SHA-256 and the dtypes answered. A requirement that checked nothing says so, with why.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from sl1conf.adapters import AdapterError, load
from sl1conf.adapters import sample as S
from sl1conf.adapters.base import fill_bits
from sl1conf.adapters.simulator import BATCH_VERSION, PROTOCOL_VERSION, SimulatorAdapter
from sl1conf.conformance.cli import main
from sl1conf.conformance.common.jsonfiles import validate
from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.vectors.families import generate

FAMILIES = ["signed-zero", "core-masks", "lengths-compact"]  # 8.*, 11.* (shared), 16.* (both variants)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("sl1-board-path")


def certify(capsys, *argv) -> tuple:
    """(exit status, stderr, seconds) of ``sl1conf certify ...``."""
    start = time.monotonic()
    code = main(["certify", *map(str, argv)])
    return code, capsys.readouterr().err.strip(), time.monotonic() - start


# ---- the protocol question ------------------------------------------------------------------

def test_a_harness_that_cannot_start_is_one_line_and_exit_2_in_seconds(tmp_path, capsys):
    script = tmp_path / "harness.sh"
    script.write_text("#!/bin/sh\necho 'harness.sh: error while loading shared libraries: libdsp.so' >&2\nexit 127\n")
    script.chmod(0o755)
    code, err, seconds = certify(capsys, "--impl", f"sim:{script} {{case}} {{result}}", "--platform", "ieee",
                                 "--quick", "--out", tmp_path / "r")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "exit status 127" in err and "error while loading shared libraries: libdsp.so" in err, err
    assert seconds < 10 and not (tmp_path / "r" / "report.json").exists()


@pytest.mark.parametrize("body, said", [
    ("kill -SEGV $$", "killed by SIGSEGV"),  # a signal is no refusal
    ("echo 'usage: harness CASE RESULT' >&2; exit 2", "exit status 2: usage: harness CASE RESULT"),  # nor any exit 2
    ("exit 0", "exit 0 without a results file"),  # nor a silent success
    ("printf 'SL1S' > \"$2\"", "a results file of 4 bytes"),
])
def test_only_a_valid_answer_or_a_version_1_refusal_decides(tmp_path, body, said):
    script = tmp_path / "h.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    with pytest.raises(AdapterError, match="gave no answer to the protocol question") as err:
        SimulatorAdapter(f"{script} {{case}} {{result}}").protocol()
    assert said in str(err.value) and "protocol=1" in str(err.value)
    told = SimulatorAdapter(f"[protocol=1] {script} {{case}} {{result}}")  # the override asks nothing
    assert told.protocol() == PROTOCOL_VERSION and told.commands_run == 0


def test_a_hang_on_the_question_is_killed_and_said(tmp_path):
    script = tmp_path / "h.sh"
    script.write_text("#!/bin/sh\nexec sleep 30\n")
    script.chmod(0o755)
    start = time.monotonic()
    with pytest.raises(AdapterError, match="no exit within 1 s; killed"):
        SimulatorAdapter(f"{script} {{case}} {{result}}", timeout=1).protocol()
    assert time.monotonic() - start < 10


def test_version_1_and_2_harnesses_are_still_told_apart(build_dir):
    old = SimulatorAdapter(S.harness_template(S.build_harness(out_dir=build_dir,
                                                              flags=["-DSL1_HARNESS_PROTOCOL_1_ONLY"])))
    new = SimulatorAdapter(S.harness_template(S.build_harness(out_dir=build_dir)))
    assert (old.protocol(), new.protocol()) == (PROTOCOL_VERSION, BATCH_VERSION)


def test_a_dynamic_aarch64_harness_without_its_sysroot(build_dir, tmp_path, capsys):
    """qemu-user cannot start it without -L: 'Could not open /lib/ld-linux-aarch64.so.1'."""
    missing = [t for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64") if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the aarch64 board-path test: {' and '.join(missing)} not found")
        pytest.skip(f"{' and '.join(missing)} not found")
    exe = S.build_harness(cc="aarch64-linux-gnu-gcc", out_dir=build_dir)
    code, err, seconds = certify(capsys, "--impl", "sim:" + S.harness_template(exe, runner="qemu-aarch64"),
                                 "--platform", "ieee", "--quick", "--out", tmp_path / "r")
    assert code == 2 and len(err.splitlines()) == 1 and "Could not open" in err and "ld-linux-aarch64" in err, err
    assert seconds < 10


# ---- a board's results (certify --results) ---------------------------------------------------

@pytest.fixture(scope="module")
def board_set(tmp_path_factory) -> Path:
    return V.write(tmp_path_factory.mktemp("sl1-board-set") / "set", "fp32", generate("fp32", 7, FAMILIES), seed=7)


def dump(vs_dir: Path, guard: int = 4) -> list:
    """The lines a correct library's self-test built with -DSL1_DUMP prints (the built-in kernel
    makes each case's call, in its own variant and core mask), family by family: (case id, the
    case's lines) each, after the header."""
    vs = V.load(vs_dir)
    kernel = load("builtin:kernel")
    fill = fill_bits(vs.format)
    out = []
    for fam in vs.manifest["families"]:
        for row in (r for r in vs.manifest["cases"] if r["family"] == fam["id"]):
            call = vs.case(row).call
            (o,) = kernel.run([call])
            bits = [fill] * guard + [int(b) for b in o.out] + [fill] * guard
            out.append((row["id"], [f"= {row['id']} {i - guard} {b:08x}" for i, b in enumerate(bits)]
                        + [f"= {row['id']} end -"]))
    return out


def header(vs_dir: Path, guard: int = 4) -> str:
    return f"# sl1_selftest fp32: built for the test; guard {guard}; vectors {V.load(vs_dir).set_id}"


def judged(capsys, tmp_path, vs_dir, text: str) -> tuple:
    results = tmp_path / "board-output.txt"
    results.write_text(text)
    code, err, _ = certify(capsys, "--results", results, "--vectors", vs_dir, "--platform", "ieee",
                           "--out", tmp_path / "r")
    report = json.loads((tmp_path / "r" / "report.json").read_text()) if code in (0, 1) else None
    return code, err, report


def runs_of(report) -> dict:
    return {run["variant"]: (run, {r["id"]: r for r in run["requirements"]}) for run in report["runs"]}


def test_after_a_crash_the_rest_is_not_run_not_failed(board_set, tmp_path, capsys):
    cases = dump(board_set)
    ids = [cid for cid, _ in cases]
    stop = ids.index("16.6")
    rows = {r["id"]: r for r in V.load(board_set).manifest["cases"]}
    assert rows["16.6"]["variant"] == "p" and any(rows[c]["variant"] == "s" for c in ids[stop + 1:])
    text = "\n".join([header(board_set)] + [ln for _, lines in cases[:stop] for ln in lines]) + "\n"
    code, err, report = judged(capsys, tmp_path, board_set, text)
    assert code == 1 and report["verdict"] == "fail", err
    (p, preq), (s, sreq) = runs_of(report)["p"], runs_of(report)["s"]
    assert (preq["R13"]["status"], preq["R13"]["failed"]) == ("fail", 1)
    assert [e["case"] for e in preq["R13"]["examples"]] == ["16.6"]
    assert "crashed or hung in this call" in preq["R13"]["examples"][0]["detail"]
    p_made = [c for c in ids[:stop + 1] if rows[c]["variant"] == "p"]
    assert preq["R13"]["checked"] == len(p_made) and p["cases"] == len(p_made)
    assert sreq["R13"]["status"] == "pass" and sreq["R13"]["failed"] == 0  # the shared run never crashed
    assert s["verdict"] == "incomplete"
    for run, variant in ((p, "p"), (s, "s")):
        after = [c for c in ids[stop + 1:] if rows[c]["variant"] == variant]
        assert any(f"{len(after)} calls not run (the self-test's output stops at case 16.6)" in why
                   for why in run["incomplete"]), run["incomplete"]
        assert f"{len(after)} more of its" in run["recorded"] and "not run" in run["recorded"]
    assert "not run" in (tmp_path / "r" / "report.md").read_text().split("## ")[0]  # said in the scope


def test_a_results_file_cut_mid_line_is_a_cut_transfer(board_set, tmp_path, capsys):
    cases = dump(board_set)
    ids = [cid for cid, _ in cases]
    stop = ids.index("16.6")
    cut = cases[stop][1][7][:-3]  # "= 16.6 3 3f80" of "= 16.6 3 3f800000": what a cut transfer leaves
    text = "\n".join([header(board_set)] + [ln for _, lines in cases[:stop] for ln in lines]
                     + cases[stop][1][:7] + [cut])
    code, err, report = judged(capsys, tmp_path, board_set, text)
    assert code == 1, err  # judged, not refused as a damaged file
    preq = runs_of(report)["p"][1]
    assert [e["case"] for e in preq["R13"]["examples"]] == ["16.6"] and preq["R13"]["failed"] == 1
    assert "last line is cut" in preq["R13"]["examples"][0]["detail"]
    assert runs_of(report)["s"][1]["R13"]["failed"] == 0
    # the same line damaged where a line end follows it is no cut: refused, one line
    (tmp_path / "damaged").mkdir()
    code, err, _ = judged(capsys, tmp_path / "damaged", board_set, text + "\n" + "\n".join(cases[stop][1][8:]) + "\n")
    assert code == 2 and len(err.splitlines()) == 1 and "line " in err


def test_a_results_report_names_the_file_by_sha256_and_the_dtypes_answered(board_set, tmp_path, capsys):
    text = "\n".join([header(board_set)] + [ln for _, lines in dump(board_set) for ln in lines]) + "\nALL PASS\n"
    code, err, report = judged(capsys, tmp_path, board_set, text)
    assert code == 0, err
    impl = report["implementation"]
    import hashlib

    data = (tmp_path / "board-output.txt").read_bytes()
    assert impl["files"] == [{"path": impl["results"], "sha256": hashlib.sha256(data).hexdigest()}]
    assert impl["answered_dtypes"] == ["fp32"]
    assert hashlib.sha256(data).hexdigest() in (tmp_path / "r" / "report.md").read_text().split("|")[0]


# ---- sim: reports ----------------------------------------------------------------------------

def sim_report(capsys, tmp_path, template: str, *argv) -> tuple:
    code, err, _ = certify(capsys, "--impl", f"sim:{template}", "--platform", "ieee", "--quick", *argv,
                           "--out", tmp_path)
    return code, err, json.loads((tmp_path / "report.json").read_text())


def test_two_libraries_give_two_reports_and_a_crash_names_its_case(build_dir, tmp_path, capsys):
    good = S.build_harness(out_dir=build_dir)
    bad = S.build_harness(out_dir=build_dir, bug="SEGV")
    reports = {}
    for name, exe in (("good", good), ("bad", bad)):
        code, err, report = sim_report(capsys, tmp_path / name, S.harness_template(exe), "--dtype", "fp32",
                                       "--variant", "p")
        assert code == (0 if name == "good" else 1), err
        validate(report, "report.schema.json", AssertionError, "report.json")
        reports[name] = report
        files = report["implementation"]["files"]
        assert [f["path"] for f in files] == [str(exe)] and report["implementation"]["answered_dtypes"] == ["fp32"]
    assert reports["good"]["implementation"]["files"] != reports["bad"]["implementation"]["files"]
    [r13] = [r for r in reports["bad"]["runs"][0]["requirements"] if r["id"] == "R13"]
    assert r13["examples"] and all(f"(case {e['case']})" in e["detail"] and "of a batch of" not in e["detail"]
                                   for e in r13["examples"]), r13["examples"]


def test_an_fp16_run_of_a_harness_without_fp16_is_not_observed_not_passed(build_dir, tmp_path, capsys):
    exe = S.build_harness(out_dir=build_dir, flags=["-DSL1_NO_HALF"])
    code, err, report = sim_report(capsys, tmp_path, S.harness_template(exe), "--dtype", "fp16", "--variant", "p")
    assert code == 1 and report["verdict"] == "incomplete", err
    [run] = report["runs"]
    reqs = {r["id"]: r for r in run["requirements"]}
    assert not [r["id"] for r in run["requirements"] if r["status"] in ("pass", "fail")]
    for rid in ("R13", "R14"):
        assert reqs[rid]["status"] == "not-applicable" and "checked" not in reqs[rid]
        assert reqs[rid]["observed"].startswith("not observed: the implementation answered none of the")
        assert "built without this dtype" in reqs[rid]["observed"]
    assert "errors" not in run and report["implementation"]["answered_dtypes"] == []
    assert not any("passed having checked nothing" in why for why in run["incomplete"]), run["incomplete"]
    assert any("R13" in why and "not observed" in why for why in run["incomplete"]), run["incomplete"]
    md = (tmp_path / "report.md").read_text()
    assert "largest error 0 ULP" not in md and "no element judged" in md
    assert "| fp16 p | R13 | no-crash-no-hang | not observed: the implementation answered none" in md

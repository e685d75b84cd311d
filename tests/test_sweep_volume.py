"""Volumes of dy planes (issue 38): the --dy grammar, a volume's counts against numpy plane by
plane, a planted defect at one dy in 65,536 found by --dy all, the resume after kill -9, shards
merged into the certificate of one run, the certificate of an unfinished sweep, and the
rejections' vector set."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from sl1conf.conformance.cli import main
from sl1conf.conformance.search import sweep as S
from sl1conf.conformance.search.shards import Shard
from sl1conf.conformance.search.sweep_certificate import load_certificate, render_markdown
from sl1conf.conformance.search.sweep_dy import dys_text, parse_dys
from sl1conf.conformance.search.sweep_planes import Planes
from sl1conf.conformance.vectors import store

from test_sweep import numpy_histogram

SMALL = 4096
PLANTED_DY = 0x4321  # 3.56: the one plane the planted implementation is wrong in

PLANTED = textwrap.dedent(f"""
    import numpy as np

    def grad(dy, x1, x2, beta):
        # (diff * dy) / beta in binary64, rounded once to fp16: correctly rounded (reference/fast_oracle.py)
        with np.errstate(all="ignore"):
            b, g = np.float64(beta), dy.astype(np.float64)
            diff = x1.astype(np.float64) - x2.astype(np.float64)
            out = np.where(diff > b, g, np.where(diff < -b, -g, diff * g / b)).astype(np.float16)
        bits = out.view(np.uint16)
        wrong = (dy.view(np.uint16) == {PLANTED_DY:#x}) & ((bits & 0x7c00) != 0x7c00) & ((bits & 0x7fff) < 0x7bf0)
        bits[wrong] += np.uint16(4)  # 4 steps up, beyond the 2-ULP budget, at that one dy only
        return out
""")


@pytest.fixture
def planted(tmp_path):
    path = tmp_path / "planted.py"
    path.write_text(PLANTED)
    return f"python:{path}:grad"


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def f16(x) -> int:
    return int(np.float16(x).view(np.uint16))


# --------------------------------------------------------------------------------------
# the grammar


def test_dy_sets_name_their_patterns():
    assert parse_dys("all") == tuple(range(65536))
    assert parse_dys("0x3c00-0x3c03") == (0x3C00, 0x3C01, 0x3C02, 0x3C03)
    assert len(parse_dys("0x0001-0x03ff")) == 1023  # the positive subnormals
    assert parse_dys("1.5, 0x3c00,1,-2") == tuple(sorted({f16(1.5), f16(1.0), f16(-2.0)}))  # distinct, sorted
    assert parse_dys("0x3c01") == (0x3C01,)
    assert dys_text(parse_dys("0x0001-0x03ff,0x3c00,1.5")) == "0x0001-0x03ff,0x3c00,0x3e00"
    assert dys_text(range(65536)) == "all" and dys_text([0x3C01]) == "0x3c01"
    assert S.SweepConfig("builtin:kernel", 0x3C00, "0x3c01").dy == 0x3C01  # one plane is the old single dy
    assert S.SweepConfig("builtin:kernel", 0x3C00, "0x3c02,0x3c01").dy == "0x3c01-0x3c02"


@pytest.mark.parametrize("bad", ["0x3c05-0x3c00", "abc", "", "0x10000", "1,,2", "0x3c00-0x1ffff", "0x3c00-"])
def test_a_bad_dy_set_is_one_line_exit_2(tmp_path, capsys, bad):
    with pytest.raises(ValueError):
        parse_dys(bad)
    code, _, err = cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", bad, "--subset", "x2=0",
                       "--out", tmp_path / "o")
    assert code == 2 and err.startswith("sl1conf: error: --dy") and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_planes_share_blocks_and_are_counted_complete():
    planes = Planes(np.arange(10, dtype=np.uint16), pairs=3, block=4)  # 30 elements: 8 blocks
    assert planes.blocks == 8 and planes.span(7) == (28, 30)
    assert planes.segments(2, 7) == [(0, 2, 3), (1, 0, 3), (2, 0, 1)]
    dy = planes.dy_of(2, 7, np.empty(4 + 1, np.uint16))
    assert dy.tolist() == [0, 1, 1, 1, 2]
    # plane 0 is elements 0-2 (block 0), plane 1 3-5 (blocks 0 and 1), plane 2 6-8 (blocks 1 and 2),
    # plane 3 9-11 (block 2)
    assert planes.planes_complete({0, 1}) == 2 and planes.planes_complete({1, 2}) == 2
    assert planes.planes_complete({2}) == 1 and planes.planes_complete({1}) == 0
    assert planes.planes_complete(set(range(8))) == 10 and planes.planes_complete(set()) == 0


# --------------------------------------------------------------------------------------
# a volume's counts, plane by plane, against numpy


def test_a_volume_counts_every_plane_as_numpy_does(tmp_path):
    dys = (0x3C00, 0x3C01, 0x3C02, 0x63D0)
    beta, x2 = 0x2E66, 0x0001
    config = S.SweepConfig("builtin:model:divmul-fp16", beta, dys_text(dys), f"x2={x2:#06x}", block=SMALL * 3)
    state = S.run_sweep(config, tmp_path / "v")
    x1 = np.arange(1 << 16).astype(np.uint16)
    want, worst = {"0": 0}, (-1, None)
    for p, dy in enumerate(dys):
        hist, w, at = numpy_histogram(x1, np.full(x1.size, x2, np.uint16), beta, dy)
        for k, n in hist.items():
            want[k] = want.get(k, 0) + n
        if w > worst[0]:
            worst = (w, p * 65536 + at, dy)
    assert state["complete"] and state["planes"] == 4 and state["blocks"] == -(-4 * 65536 // (SMALL * 3))
    assert state["tally"].elements == 4 * 65536 and state["tally"].histogram() == want
    w = state["tally"].worst_overall()
    assert (w.distance, w.at, int(w.dy, 16)) == worst  # its number in the volume names its plane


def test_a_planted_defect_at_one_dy_of_65536_is_found_by_dy_all(tmp_path, capsys, planted):
    out = tmp_path / "v"
    code, text, err = cli(capsys, "sweep", "--impl", planted, "--beta", "1", "--dy", "all",
                          "--subset", "x1=0x3c00,x2=0x3800", "--workers", 1, "--out", out)
    assert code == 1, err
    assert "dy all (65,536 planes)" in text and "verdict: FAIL" in text
    cert = load_certificate(out)
    # x1 - x2 = 0.5 < beta: 0.5 * dy, an fp16 value, is exact: only the planted plane is wrong
    assert cert["result"] == "fail" and cert["coverage"]["elements"] == 65536 and cert["coverage"]["complete"]
    assert cert["rejected"]["elements"] == 1 and cert["accepted"]["exact"] == 65535
    lib = cert["implementation"]["library"]  # the file the spec names, by its SHA-256
    source = (tmp_path / "planted.py").read_bytes()
    assert (lib["sha256"], lib["bytes"]) == (hashlib.sha256(source).hexdigest(), len(source))
    (e,) = cert["rejected"]["first"]
    half = f16(np.float16(0.5) * np.uint16(PLANTED_DY).view(np.float16))
    assert (int(e["dy"], 16), e["at"], int(e["expected"], 16), int(e["got"], 16)) == (PLANTED_DY, PLANTED_DY,
                                                                                        half, half + 4)
    vs = store.load(out / cert["rejected"]["vectors"])  # what certify --vectors reads
    (row,) = vs.case_rows()
    case = vs.case(row)
    assert (case.dy.tolist(), case.x1.tolist(), case.x2.tolist()) == ([PLANTED_DY], [0x3C00], [0x3800])
    assert vs.expected("oracle", row).tolist() == [half]


# --------------------------------------------------------------------------------------
# kill -9, shards, an unfinished volume


RUN_CLI = ("import sys; from sl1conf.conformance.search import sweep as S; S.CHECKPOINT_SECONDS = 0.0; "
           "from sl1conf.conformance.cli import main; sys.exit(main(sys.argv[1:]))")


def test_a_volume_killed_with_sigkill_resumes_with_no_block_lost_or_twice(tmp_path):
    args = ["sweep", "--impl", "builtin:kernel", "--beta", "0x2e66", "--dy", "0x3c00-0x3fff", "--subset", "x2=0x0001",
            "--workers", "1", "--out", str(tmp_path / "k")]  # 1024 planes of 65,536: 64 blocks
    proc = subprocess.Popen([sys.executable, "-c", RUN_CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path, seen, deadline = tmp_path / "k" / "sweep.json", 0, time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if path.exists():
            seen = len(S.load_state(tmp_path / "k")["done"])  # every read is a whole state: written atomically
            if seen >= 3:
                os.kill(proc.pid, signal.SIGKILL)
                break
        time.sleep(0.005)
    assert proc.wait() == -signal.SIGKILL, proc.stderr.read()
    killed = S.load_state(tmp_path / "k")
    assert 3 <= len(killed["done"]) < 64 and not killed["complete"]
    assert killed["tally"].elements == len(killed["done"]) * (1 << 20)  # the blocks it kept, each once
    done = subprocess.run([sys.executable, "-c", RUN_CLI, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    resumed = S.load_state(tmp_path / "k")
    whole = S.run_sweep(S.SweepConfig("builtin:kernel", 0x2E66, "0x3c00-0x3fff", "x2=0x0001"), tmp_path / "one")
    assert resumed["complete"] and resumed["done"] == whole["done"] == set(range(64))
    assert resumed["tally"].to_json() == whole["tally"].to_json()
    assert sum(s["blocks"] for s in resumed["sessions"]) == 64  # the killed session's saved blocks + the rest
    assert load_certificate(tmp_path / "k")["result"] == "pass"


def test_a_volume_interrupted_with_ctrl_c_writes_a_certificate_that_claims_nothing(tmp_path):
    """Ctrl-C (SIGINT) keeps the blocks done, as a kill does, and also writes what an unfinished
    volume may say: certificate.json 'incomplete', its statement 'No claim', exit 130."""
    args = ["sweep", "--impl", "builtin:kernel", "--beta", "0x2e66", "--dy", "0x3c00-0x3fff", "--subset", "x2=0x0001",
            "--workers", "1", "--out", str(tmp_path / "i")]  # 64 blocks
    proc = subprocess.Popen([sys.executable, "-c", RUN_CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    path, deadline = tmp_path / "i" / "sweep.json", time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if path.exists() and len(S.load_state(tmp_path / "i")["done"]) >= 3:
            os.kill(proc.pid, signal.SIGINT)
            break
        time.sleep(0.005)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    state = S.load_state(tmp_path / "i")
    cert = load_certificate(tmp_path / "i")
    assert 3 <= len(state["done"]) < 64
    assert cert["result"] == "incomplete" and cert["statement"].startswith("No claim")
    # 1024 planes of 65,536 pairs in 64 blocks of 2^20
    assert cert["coverage"]["elements_checked"] == state["tally"].elements == len(state["done"]) * (1 << 20)
    assert cert["coverage"]["elements_missing"] == (64 - len(state["done"])) * (1 << 20)
    assert "interrupted:" in out and "run the same command again to continue" in out
    # certificate.md's command, run as written on that folder, does the rest
    (line,) = [x for x in (tmp_path / "i" / "certificate.md").read_text().splitlines() if x.startswith("    sl1conf ")]
    words = [str(tmp_path / "i") if w == "DIR" else w for w in shlex.split(line)]
    assert words[:2] == ["sl1conf", "sweep"]
    done = subprocess.run([sys.executable, "-c", RUN_CLI, *words[1:]], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert load_certificate(tmp_path / "i")["result"] == "pass" and S.load_state(tmp_path / "i")["done"] == set(range(64))


def _without_run(cert: dict) -> dict:
    return {k: v for k, v in cert.items() if k != "run"}


def test_shards_merged_give_the_certificate_of_one_run(tmp_path, capsys, planted):
    config = S.SweepConfig(planted, 0x3C00, "0x4320-0x4323", "x2=0x3800", block=SMALL)  # 64 blocks
    S.run_sweep(config, tmp_path / "one")
    for i in (1, 2, 3):
        S.run_sweep(config, tmp_path / f"s{i}", shard=Shard(i, 3))
    assert cli(capsys, "sweep", "merge", tmp_path / "one", "--out", tmp_path / "one-cert")[0] == 1
    code, text, _ = cli(capsys, "sweep", "merge", *(tmp_path / f"s{i}" for i in (3, 1, 2)), "--out", tmp_path / "m")
    assert code == 1 and "dy 0x4320-0x4323 (4 planes)" in text
    one, merged = load_certificate(tmp_path / "one-cert"), load_certificate(tmp_path / "m")
    assert _without_run(merged) == _without_run(one)
    assert merged["run"]["sessions"] == 3 and one["run"]["sessions"] == 1
    # the planted plane (the 2nd) rejects exactly its finite results more than 4 steps below the largest
    assert one["result"] == "fail" and set(one["rejected"]["by_requirement"]) >= {"R01"}
    assert {e["dy"] for e in one["rejected"]["first"]} == {"0x4321"}
    assert all(65536 <= e["at"] < 2 * 65536 for e in one["rejected"]["first"])
    assert one["rejected"]["kept"] == 64 and one["rejected"]["elements"] > 64
    assert "## Rejected" in render_markdown(one)


def test_an_unfinished_volume_claims_nothing_it_did_not_check(tmp_path, capsys):
    args = ["sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "0x3c00-0x3c3f", "--subset", "x2=0x0001",
            "--max-blocks", 1, "--out", tmp_path / "u"]  # 64 planes: 4 blocks of 16 planes
    code, text, _ = cli(capsys, *args)
    cert = load_certificate(tmp_path / "u")
    cov = cert["coverage"]
    assert cert["result"] == "incomplete" and cert["statement"].startswith("No claim")
    assert (cov["planes_complete"], cov["elements_done"], cov["elements_missing"]) == (16, 1 << 20, 3 << 20)
    assert "**Incomplete**: 3 of 4 blocks" in (tmp_path / "u" / "certificate.md").read_text()
    assert cli(capsys, *args[:-4], "--out", tmp_path / "u")[0] == 0  # resumed to the end
    assert load_certificate(tmp_path / "u")["result"] == "pass"


def test_a_single_dy_sweep_keeps_its_old_state(tmp_path):
    state = S.run_sweep(S.SweepConfig("builtin:kernel", 0x2E66, 0x3C01, "x2=0x0001", block=SMALL), tmp_path / "s")
    saved = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert saved["config"]["dy"] == "0x3c01" and saved["planes"] == 1 and state["blocks"] == 16
    worst = state["tally"].worst_overall()
    assert worst.at == int(worst.x1, 16)  # one plane: an element's number is its pair number, as before


# --------------------------------------------------------------------------------------
# the blocks done, as runs


def test_a_block_set_is_the_set_it_holds():
    from sl1conf.conformance.search.sweep_blocks import BlockSet

    rng = np.random.default_rng(38)
    for _ in range(40):
        a = set(rng.integers(0, 60, rng.integers(0, 50)).tolist())
        b = set(rng.integers(0, 60, rng.integers(0, 50)).tolist())
        sa = BlockSet()
        for k in rng.permutation(sorted(a)).tolist():  # any order of arrival
            sa.add(k)
        sb = BlockSet(b)
        assert list(sa) == sorted(a) and len(sa) == len(a) and sa == a and all((k in sa) == (k in a) for k in range(62))
        assert (sa & sb) == (a & b) and (sa <= sb) == (a <= b)
        assert BlockSet.from_text(sa.text()) == sa
        shard = Shard(int(rng.integers(1, 4)), 3)
        assert sa.owned(shard) == sum(1 for k in a if shard.owns(k))
        items = shard.items(0, 60)
        assert list(sa.missing(items)) == [k for k in items if k not in a]
        sa |= sb
        assert sa == a | b
    assert BlockSet(range(5, 9)).text() == "5-8" and BlockSet([1, 3]).text() == "1,3"
    with pytest.raises(ValueError):
        BlockSet.from_text("9-3")


def test_every_dy_for_every_pair_is_2_to_28_blocks_kept_as_runs(tmp_path):
    """The whole volume of one beta (2^48 elements) as a checkpoint: its blocks to do are walked
    lazily and its blocks done kept as runs, so starting (and resuming) it costs no memory of
    2^28 numbers."""
    config = S.SweepConfig("builtin:kernel", 0x3C00, "all", "all")
    state = S.run_sweep(config, tmp_path / "all", shard=Shard(3, 5), max_blocks=2)
    assert state["blocks"] == 1 << 28 and state["planes"] == 65536 and state["pairs"] == 1 << 32
    assert sorted(state["done"]) == [2, 7] and state["sessions"][0]["todo"] == 2
    saved = json.loads((tmp_path / "all" / "sweep.json").read_text())
    assert saved["done"] == "2,7" and saved["config"]["dy"] == "all"
    again = S.run_sweep(config, tmp_path / "all", shard=Shard(3, 5), max_blocks=1)
    assert sorted(again["done"]) == [2, 7, 12]  # resumed at the next block of its shard


def test_a_certificate_renders_again_and_has_its_index_row(tmp_path, capsys):
    from sl1conf.conformance.search.sweep_certificate import INDEX_HEADER, index_row, render_folder

    assert render_folder(tmp_path) is None  # no certificate: nothing to render
    cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "0x3c00,0x4000", "--subset",
        "x1=0x3c00,x2=0", "--out", tmp_path / "c")
    md = tmp_path / "c" / "certificate.md"
    first = md.read_text()
    md.write_text("edited")
    assert render_folder(tmp_path / "c") == md and md.read_text() == first
    row = index_row(load_certificate(tmp_path / "c"), "c")
    # one column per header cell; x1 - x2 = 1 = beta: the results are dy exactly, both correctly rounded
    assert row.count(" | ") == INDEX_HEADER[0].count(" | ") and "**PASS**" in row and "| 2 of 2 |" in row


# --------------------------------------------------------------------------------------
# issue 38's leftovers: the reports index, a volume's summary in sweep_lines, the bar's label


def _quickstart():
    """quickstart.py (the repository's root; run by the system python, imported here)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "quickstart.py"
    spec = importlib.util.spec_from_file_location("quickstart_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not (module.BIN / "sl1conf").exists():
        pytest.skip(f"quickstart's {module.BIN / 'sl1conf'} is not installed")
    return module


def _cells(row: str) -> list:
    return [c.strip() for c in row.strip().strip("|").split(" | ")]


def test_the_reports_index_lists_every_sweep_certificate_under_reports(tmp_path, capsys, planted):
    qs = _quickstart()
    reports = tmp_path / "reports"
    (reports / "kernel-ieee").mkdir(parents=True)  # a certification's folder: no certificate, no row
    assert qs.sweep_certificates(reports) == (0, [])  # no certificate: no section
    # x1 - x2 = 1 = beta: on the boundary the result is +-dy exactly, so both elements are correctly rounded
    assert cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "0x3c00,0x4000", "--subset",
               "x1=0x3c00,x2=0", "--out", reports / "sweeps" / "kernel-beta1")[0] == 0
    # x1 - x2 = 0.5 < beta = 1: 0.5 * dy, exact in fp16, and the planted implementation is 4 steps off there
    assert cli(capsys, "sweep", "--impl", planted, "--beta", "1", "--dy", f"{PLANTED_DY:#06x}", "--subset",
               "x1=0x3c00,x2=0x3800", "--out", reports / "sweeps" / "deep" / "planted")[0] == 1
    code, lines = qs.sweep_certificates(reports)
    assert code == 0 and lines[0] == "## Sweep certificates"
    table = [line for line in lines if line.startswith("|")]
    header, rows = _cells(table[0]), [dict(zip(_cells(table[0]), _cells(r))) for r in table[2:]]
    assert len(rows) == 2 and all(len(_cells(r)) == len(header) for r in table[2:])
    deep, kernel = rows  # by path: sweeps/deep/planted before sweeps/kernel-beta1
    assert (kernel["`--impl`"], kernel["platform"], kernel["beta"], kernel["dy"], kernel["subset"]) == (
        "`builtin:kernel`", "ieee", "0x3c00", "`0x3c00,0x4000`", "`x1=0x3c00,x2=0x0000`")
    assert (kernel["result"], kernel["elements checked of all"], kernel["rejected"]) == ("**PASS**", "2 of 2", "0")
    assert (deep["`--impl`"], deep["dy"], deep["result"], deep["elements checked of all"], deep["rejected"]) == (
        f"`{planted}`", f"`{PLANTED_DY:#06x}`", "**FAIL**", "1 of 1", "1")
    for row, folder in ((kernel, "sweeps/kernel-beta1"), (deep, "sweeps/deep/planted")):  # links relative to reports/
        assert row["certificate"] == f"[md]({folder}/certificate.md) · [json]({folder}/certificate.json)"
        assert (reports / folder / "certificate.md").is_file()
    # the same table from the command quickstart runs
    code, out, _ = cli(capsys, "sweep", "index", reports)
    assert code == 0 and out.splitlines() == table
    # a certificate.json that is not one: the index says so in one line and quickstart fails the demo
    (reports / "bad").mkdir()
    (reports / "bad" / "certificate.json").write_text("{}")
    assert qs.sweep_certificates(reports) == (1, [])
    assert "bad/certificate.json" in capsys.readouterr().err  # what sl1conf said, passed on
    code, out, err = cli(capsys, "sweep", "index", reports)
    assert code == 2 and not out and err.startswith("sl1conf: error: ") and err.count("\n") == 1
    assert "certificate.json" in err


def test_sweep_lines_say_a_volume_in_elements_and_planes(tmp_path, planted):
    from sl1conf.conformance.cli import summaries
    from sl1conf.conformance.rules.profiles import load_profile

    volume = S.run_sweep(S.SweepConfig(planted, 0x3C00, "0x4320-0x4323", "x2=0x3800", block=SMALL * 16),
                         tmp_path / "v")
    S.finish(volume, load_profile("ieee"), tmp_path / "v")
    lines = summaries.sweep_lines(volume)
    assert lines[0] == (f"sweep of {planted}: fp16 p, beta 0x3c00 (1), dy 0x4320-0x4323 (4 planes), "
                        "subset x2=0x3800")
    assert lines[1].startswith(f"{4 * 65536:,} of {4 * 65536:,} elements (complete) in ")
    explain = next(line for line in lines if "sl1conf explain" in line)
    assert "--dy 0x4321 " in explain  # the worst element's own plane, the planted one
    one = S.run_sweep(S.SweepConfig("builtin:kernel", 0x3C00, 0x3C01, "x2=0x0001", block=SMALL * 16), tmp_path / "s")
    S.finish(one, load_profile("ieee"), tmp_path / "s")
    lines = summaries.sweep_lines(one, "a note")
    assert lines[0] == "sweep of builtin:kernel: fp16 p, beta 0x3c00 (1), dy 0x3c01 (1.00098), subset x2=0x0001"
    assert lines[1].startswith("65,536 of 65,536 pairs (complete) in ") and lines[-2:] == ["a note", "verdict: PASS"]


def test_the_progress_label_is_set_through_its_public_describe(tmp_path, capsys, monkeypatch):
    import functools
    import io

    from sl1conf.conformance.cli import sweep as sweep_cli
    from sl1conf.conformance.common.progress import Progress

    buf = io.StringIO()
    bar = Progress("sweep", 4, "blocks", enabled=True, file=buf, mininterval=0)
    bar.describe("sweep 1/4 planes")
    bar.update(1)
    bar.close()
    assert "sweep 1/4 planes: " in buf.getvalue()
    Progress("sweep", 4, enabled=False).describe("nothing drawn")  # disabled: a no-op
    shown = io.StringIO()  # the sweep's bar on a "terminal": a volume's planes in its label
    monkeypatch.setattr(sweep_cli, "Progress", functools.partial(Progress, enabled=True, file=shown))
    assert cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "0x3c00-0x3c03", "--subset",
               "x2=0x0001", "--workers", 1, "--out", tmp_path / "b")[0] == 0
    assert "planes, " in shown.getvalue() and " elements" in shown.getvalue()


def test_every_committed_certificate_is_one_and_renders_as_committed():
    """reports/sweeps/*/: each certificate.json passes its schema, its certificate.md is its rendering,
    and it is the certificate of the sweep.json beside it (the blocks done, the elements counted), so a
    committed partial certificate can be resumed from and claims what its state holds, no more."""
    root = Path(__file__).resolve().parent.parent / "reports" / "sweeps"
    found = sorted(root.glob("*/certificate.json"))
    assert found, "no committed certificate"
    for path in found:
        cert = load_certificate(path.parent)
        assert (path.parent / "certificate.md").read_text() == render_markdown(cert), path
        state = S.load_state(path.parent)
        assert cert["coverage"]["blocks_done"] == len(state["done"]) and cert["coverage"]["elements_done"] == \
            state["tally"].elements, path
        assert cert["result"] == ("incomplete" if not state["complete"] else cert["result"])


def test_a_shards_certificate_resumes_that_shard_only(tmp_path):
    """A shard's folder holds its blocks only: the command its certificate.md prints continues that
    shard (--shard I/N), so `sweep merge` of the shards still takes each block once."""
    out = tmp_path / "s1"
    args = ["sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "0x3c00-0x3c3f", "--subset", "x2=0x0001",
            "--workers", "1", "--shard", "1/3", "--max-blocks", "1", "--out", str(out)]  # 64 planes: 4 blocks; 1/3 owns 0, 3
    done = subprocess.run([sys.executable, "-c", RUN_CLI, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in (out / "certificate.md").read_text().splitlines() if x.startswith("    sl1conf ")]
    words = [str(out) if w == "DIR" else w for w in shlex.split(line)]
    assert words[words.index("--shard") + 1] == "1/3"
    again = subprocess.run([sys.executable, "-c", RUN_CLI, *words[1:]], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert S.load_state(out)["done"] == {0, 3}  # the shard's blocks, none of the others'

"""A report folder always holds one whole report, old or new (conformance/reports/write.py).

``sl1conf certify`` writes report.json, report.md, report.html and junit.xml; a Ctrl-C while
they are replaced must not leave a new report.json beside the old report.html (a failing run
would leave a page saying PASS). The real command runs in a subprocess whose ``os.replace``
and ``os.unlink`` send SIGINT to the process at their k-th call, for k = 1, 2, ... until a run
ends without reaching k; each run starts from a folder holding a whole report of the other
verdict, and after each the four files must describe one run and no temporary file may remain.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sl1conf.conformance.cli import main
from sl1conf.conformance.reports import write as W
from sl1conf.conformance.requirements.results import Report

FILES = ("report.json", "report.md", "report.html", "junit.xml")

PASSING = ["--impl", "builtin:kernel", "--platform", "ieee", "--quick", "--dtype", "fp32", "--variant", "p"]
FAILING = ["--impl", "builtin:model:muldiv-fp16", "--platform", "ieee", "--quick", "--dtype", "fp16", "--variant", "p"]

# Runs sl1conf's main with os.replace and os.unlink counting their calls on paths in the --out
# folder together (not the suite's caches: the vector cache writes an entry the first time only,
# which would make the count depend on the order tests run in); at call k SIGINT goes to the
# process itself, right after the call ("after") or right before it ("before").
WRAPPER = r"""
import os, signal, sys
k, mode, patched = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
out = os.path.realpath(sys.argv[sys.argv.index("--out") + 1])
calls = [0]
def wrap(real):
    def call(*args, **kwargs):
        paths = [os.path.realpath(os.fsdecode(a)) for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))]
        if not any(p == out or p.startswith(out + os.sep) for p in paths):
            return real(*args, **kwargs)
        calls[0] += 1
        hit = calls[0] == k
        if hit and mode == "before":
            os.kill(os.getpid(), signal.SIGINT)
        try:
            return real(*args, **kwargs)
        finally:
            if hit and mode == "after":
                os.kill(os.getpid(), signal.SIGINT)
    return call
for name in patched:
    setattr(os, name, wrap(getattr(os, name)))
from sl1conf.conformance.cli import main
try:
    code = main(sys.argv[4:])
finally:
    print(f"CALLS {calls[0]}", file=sys.stderr)
sys.exit(code)
"""


def describe(folder: Path) -> dict:
    """What each of the four files says about the run: (verdict, implementation, created)."""
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES), sorted(p.name for p in folder.iterdir())
    report = json.loads((folder / "report.json").read_text())
    impl = report["invocation"]["impl"]
    out = {"json": (report["verdict"], impl, report["created"])}
    md = (folder / "report.md").read_text()
    head = re.match(r"# (PASS|FAIL|INCOMPLETE)\b.*: (\S+) on ieee\n", md)
    created = re.search(r"Suite sl1conf \S+, (\S+)\.", md)
    out["md"] = (head[1].lower(), head[2], created[1])
    html = (folder / "report.html").read_text()
    badge = re.search(r'<h1><span class="verdict (\w+)">\w+</span> (\S+) on ieee</h1>', html)
    created = re.search(r"Suite sl1conf \S+, (\S+)\.</p>", html)
    out["html"] = (badge[1], badge[2], created[1])
    root = ET.parse(folder / "junit.xml").getroot()
    [suite] = root.iter("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    out["junit"] = ("fail" if int(root.get("failures")) else "pass", props["implementation"], suite.get("timestamp"))
    return out


def whole(folder: Path) -> tuple:
    """The run the folder's four files all describe (and fail unless they agree)."""
    seen = describe(folder)
    assert len(set(seen.values())) == 1, seen
    return seen["json"]


@pytest.fixture(scope="module")
def old_reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("old")
    assert main(["certify", *FAILING, "--out", str(root / "fail")]) == 1
    assert main(["certify", *PASSING, "--out", str(root / "pass")]) == 0
    return root


def _interrupted(tmp_path: Path, old: Path, new_args: list, mode: str, patched: str) -> list:
    """(k, exit status, the run the folder describes afterwards) for k = 1, 2, ... until a run
    completes without its k-th call; each run starts from a copy of the ``old`` folder."""
    results, k = [], 1
    while True:
        out = tmp_path / f"k{k}"
        shutil.copytree(old, out)
        proc = subprocess.run([sys.executable, "-c", WRAPPER, str(k), mode, patched, "certify", *new_args,
                               "--out", str(out)], capture_output=True, text=True, timeout=300)
        assert "Traceback" not in proc.stderr, proc.stderr
        calls = int(re.search(r"CALLS (\d+)", proc.stderr)[1])
        results.append((k, proc.returncode, whole(out)))
        if calls < k:  # not interrupted: the run is complete
            assert proc.returncode in (0, 1), proc.stderr
            return results
        assert proc.returncode == 130 and "sl1conf: interrupted" in proc.stderr, (k, proc.returncode, proc.stderr)
        k += 1
        assert k < 60, "the run never completed"


@pytest.mark.slow
@pytest.mark.parametrize("old_name, new_args, new_verdict", [("fail", PASSING, "pass"), ("pass", FAILING, "fail")])
def test_an_interrupted_certify_leaves_one_whole_report(old_reports, tmp_path, old_name, new_args, new_verdict):
    """SIGINT right after each os.replace and os.unlink call (counted together). The unit test
    below interrupts write_report right before each call as well."""
    old = old_reports / old_name
    before = whole(old)
    assert before[0] != new_verdict
    results = _interrupted(tmp_path, old, new_args, "after", "replace,unlink")
    *interrupted, (_, _, complete) = results
    assert complete[:2] == (new_verdict, new_args[1])
    assert interrupted, "no call was interrupted"
    kinds = []
    for k, code, run in interrupted:  # each run is whole: the old report, or one of this run
        assert run == before or run[:2] == complete[:2], (k, run, before)
        kinds.append("old" if run == before else "new")
    assert kinds[0] == "old"  # the CLI's check that --out can be written, before the run
    assert kinds[-1] == "new"  # the replacing itself was interrupted: the new report was finished first
    assert kinds == sorted(kinds, reverse=True)  # once new, never old again


# --- write_report itself ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_reports(old_reports):
    old = W.load_report(old_reports / "pass")
    new = old.to_json()
    new["created"] = "2030-01-02T03:04:05+00:00"
    new["runs"][0]["verdict"] = "fail"  # read back as a run that broke: the report fails
    new = Report.from_json(new)
    assert new.verdict == "fail" and old.verdict == "pass"
    return old, new


@pytest.fixture
def quick_html(monkeypatch):
    """A stand-in for the HTML renderer (its plots take seconds; the folder logic is what is tested)."""
    from sl1conf.conformance.reports import html

    monkeypatch.setattr(html, "render_html", lambda v: f"<html>{v.verdict} {v.report.created}</html>\n")


_RENDERED = {}


def _rendered(report) -> dict:
    """The four files of ``report`` as write_report writes them (rendered once per report)."""
    import dataclasses

    from sl1conf.conformance.reports import html
    from sl1conf.conformance.reports.view import view

    assert html.render_html.__name__ == "<lambda>", "use the quick_html fixture"
    if report.created not in _RENDERED:
        clean = dataclasses.replace(report, envelope=W.portable_paths(report.envelope))
        _RENDERED[report.created] = {fname: render(clean.to_json(), view(clean)) for fname, render in W.FORMATS.values()}
    return _RENDERED[report.created]


@pytest.fixture
def sigint_raises(monkeypatch):
    """SIGINT raising KeyboardInterrupt here, as in a command (a test worker may ignore it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("mode", ["after", "before"])
def test_write_report_interrupted_at_any_call_leaves_the_old_or_the_new_report(two_reports, tmp_path, monkeypatch,
                                                                               sigint_raises, quick_html, mode):
    old, new = two_reports
    template = tmp_path / "old"
    W.write_report(old, template, replace_all=True)
    outcomes, k = [], 1
    while True:
        folder = tmp_path / f"k{k}"
        shutil.copytree(template, folder)
        (folder / ".report.json.leftover.tmp").write_text("from a killed run")
        calls = [0]

        def wrap(real):
            def call(*args, **kwargs):
                calls[0] += 1
                if calls[0] == k and mode == "before":
                    os.kill(os.getpid(), signal.SIGINT)
                try:
                    return real(*args, **kwargs)
                finally:
                    if calls[0] == k and mode == "after":
                        os.kill(os.getpid(), signal.SIGINT)
            return call

        with monkeypatch.context() as m:
            m.setattr(os, "replace", wrap(os.replace))
            m.setattr(os, "unlink", wrap(os.unlink))
            try:
                W.write_report(new, folder, replace_all=True)
                interrupted = False
            except KeyboardInterrupt:
                interrupted = True
        files = {p.name: p.read_text() for p in folder.iterdir()}
        assert files in (_rendered(old), _rendered(new)), (k, sorted(files))
        outcomes.append(files == _rendered(new))
        if not interrupted:
            assert calls[0] < k
            break
        k += 1
    assert len(outcomes) > 5 and all(outcomes)  # every interruption came once the new report was whole


def test_a_full_disk_while_writing_leaves_the_old_report_and_no_temporary_file(two_reports, tmp_path, monkeypatch, quick_html):
    old, new = two_reports
    W.write_report(old, tmp_path, replace_all=True)
    calls = [0]
    real = os.chmod

    def chmod(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(os, "chmod", chmod)
    with pytest.raises(W.ReportError, match="cannot write there .No space left on device"):
        W.write_report(new, tmp_path, replace_all=True)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == _rendered(old)


def test_leftovers_of_a_killed_write_go_and_nothing_else(two_reports, tmp_path, quick_html):
    old, _ = two_reports
    for name in (".report.json.x1.tmp", ".report.md.x2.tmp", ".junit.xml.x3.tmp", ".report.html.x4.tmp"):
        (tmp_path / name).write_text("left")
    (tmp_path / ".notes.x.tmp").write_text("someone else's")
    (tmp_path / "notes.txt").write_text("mine")
    W.write_report(old, tmp_path, replace_all=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*FILES, ".notes.x.tmp", "notes.txt"])


def test_replace_all_removes_the_renderings_not_asked_for_and_rerendering_keeps_them(two_reports, tmp_path, quick_html):
    old, new = two_reports
    W.write_report(old, tmp_path, replace_all=True)
    W.write_report(new, tmp_path, ["json", "md"], replace_all=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.md"]
    W.write_report(W.load_report(tmp_path), tmp_path, ["html"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]


def test_a_folder_where_a_file_goes_is_refused_before_anything_is_replaced(two_reports, tmp_path, quick_html):
    old, new = two_reports
    W.write_report(old, tmp_path, replace_all=True)
    (tmp_path / "junit.xml").unlink()
    (tmp_path / "junit.xml").mkdir()
    with pytest.raises(W.ReportError, match="junit.xml is a folder"):
        W.write_report(new, tmp_path, replace_all=True)
    assert json.loads((tmp_path / "report.json").read_text())["created"] == old.created
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)


# --- compare --out and report --out: nothing already there is replaced without --force -----------

def _cli(capsys, *argv) -> tuple:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_out_refuses_an_existing_file_unless_forced(old_reports, tmp_path, capsys):
    target = tmp_path / "side-by-side.md"
    target.write_text("kept\n")
    code, _, err = _cli(capsys, "compare", str(old_reports / "pass"), str(old_reports / "fail"), "--out", str(target))
    assert code == 2 and err.count("\n") == 1 and "exists" in err and "--force" in err and "Traceback" not in err
    assert target.read_text() == "kept\n"
    code, out, _ = _cli(capsys, "compare", str(old_reports / "pass"), str(old_reports / "fail"), "--out", str(target),
                        "--force")
    assert code == 0 and f"wrote {target}" in out
    assert "builtin:kernel" in target.read_text() and "muldiv-fp16" in target.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["side-by-side.md"]  # written atomically: no leftover
    fresh = tmp_path / "new.csv"
    assert _cli(capsys, "compare", str(old_reports / "pass"), "--format", "csv", "--out", str(fresh))[0] == 0
    assert "builtin:kernel" in fresh.read_text()
    code, _, err = _cli(capsys, "compare", str(old_reports / "pass"), "--out", "")
    assert code == 2 and "--out" in err


def test_report_out_refuses_renderings_already_there_and_another_report(old_reports, tmp_path, capsys, quick_html):
    src = old_reports / "pass"
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "report.md").write_text("someone's notes\n")
    code, _, err = _cli(capsys, "report", str(src), "--out", str(target))
    assert code == 2 and err.count("\n") == 1 and "report.md exists there" in err and "--force" in err
    assert sorted(p.name for p in target.iterdir()) == ["report.md"]
    assert (target / "report.md").read_text() == "someone's notes\n"
    code, out, _ = _cli(capsys, "report", str(src), "--out", str(target), "--force")
    assert code == 0 and sorted(p.name for p in target.iterdir()) == ["junit.xml", "report.html", "report.md"]
    assert (target / "report.md").read_text() == (src / "report.md").read_text()
    # beside another report's report.json the renderings would disagree with it: refused, even forced
    other = tmp_path / "other"
    shutil.copytree(old_reports / "fail", other)
    before = {p.name: p.read_bytes() for p in other.iterdir()}
    for extra in ((), ("--force",)):
        code, _, err = _cli(capsys, "report", str(src), "--out", str(other), *extra)
        assert code == 2 and "holds another report's report.json" in err
        assert {p.name: p.read_bytes() for p in other.iterdir()} == before
    # its own folder (the default, or named): rendered again in place, no --force needed
    own = tmp_path / "own"
    shutil.copytree(src, own)
    (own / "report.md").write_text("stale\n")
    assert _cli(capsys, "report", str(own), "--format", "md", "--out", str(own))[0] == 0
    assert (own / "report.md").read_text() == (src / "report.md").read_text()

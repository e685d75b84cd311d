"""A library whose shared version returns before its last core has written dx1.

The defect is one: a missing barrier. Its symptoms are many (elements read back unwritten,
repeats that differ, the variants and core masks disagreeing, rearranged elements changing),
so without direct evidence a report shows a list of red requirements. The ctypes worker
watches each call's dx1 after the call returns (adapters.worker_side._Watch); R13 fails with
what changed, named after the call, and the report's causes lead with that one cause.
"""

from __future__ import annotations

import pytest

from sl1conf.adapters.base import Case
from sl1conf.adapters.ctypes_lib import CtypesAdapter
from sl1conf.conformance.reports.causes import causes
from sl1conf.conformance.requirements.results import RunResult
from sl1conf.conformance.selftest import zoo
from conftest import certify_library as certify, requirement_entry as entry

@pytest.fixture(scope="module")
def late_lib(tmp_path_factory):
    """The self-test zoo's late-write member: one thread per core of the mask, each over its chunk;
    with two cores or more the last core's thread writes 20 ms after the return and is never joined."""
    member = next(m for m in zoo.members() if m.name == "late-write")
    return str(zoo.build_library(member, tmp_path_factory.mktemp("late")))


def _case(n: int, mask: int, cid: str) -> Case:
    import numpy as np

    one = np.full(n, 0x3F800000, np.uint32)  # 1.0
    return Case("fp32", one, one, np.zeros(n, np.uint32), 0x3F800000, variant="s", core_mask=mask, id=cid)


def test_the_worker_names_the_call_that_wrote_after_it_returned(late_lib):
    """Two cores: the second's half (elements 8 to 15) is read back unwritten, then written 20 ms
    later; one core: nothing late. The evidence names the first call and what changed."""
    with CtypesAdapter(late_lib) as adapter:
        two, one = adapter.run([_case(16, 0b11, "two-cores"), _case(16, 0b1, "one-core")])
        assert two.status == one.status == "ok"
        late = adapter.late_writes()
        assert adapter.late_writes() == []  # said once
    assert [cid for cid, _ in late] == ["two-cores"], late
    assert "dx1 written after the call returned" in late[0][1] and "8 of its 16 elements (first [8], last [15])" in late[0][1]


def test_the_late_writing_library_is_one_cause(late_lib, tmp_path):
    """Every failing requirement of the shared version, R13 among them, is explained by the calls
    that wrote after they returned: the report leads with that one cause, and the private
    version (no threads) passes."""
    code, failed, report = certify(tmp_path, late_lib, "ieee", "--dtype", "fp32", "--quick")
    assert code == 1 and {"R01", "R13"} <= failed, failed
    shared, private = report["runs"]
    assert private["verdict"] == "pass"
    found = causes(RunResult.from_json(shared))
    assert len(found) == 1, found
    assert found[0].cause.startswith("in calls that wrote dx1 after they returned")
    assert set(found[0].requirements) == {r["id"] for r in shared["requirements"] if r["status"] == "fail"}
    # the unwritten elements are no distance: named apart, not the largest error of the run
    assert shared["errors"]["not_a_distance"]["not written (dx1 still holds the fill)"]["elements"] > 0
    assert shared["errors"]["max_ulp"] <= 4, shared["errors"]["max_ulp"]
    r13 = entry(report, "R13")
    assert r13["examples"][0]["detail"].startswith("dx1 written after the call returned")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "**Causes** (1;" in md and "in calls that wrote dx1 after they returned" in md


def test_fuzz_files_the_write_after_the_return_under_r13(late_lib, tmp_path):
    """The fuzzer asks the same question certify does: a batch's shared calls that wrote dx1
    after they returned are late-write findings under R13, with what changed."""
    import json

    from sl1conf.conformance.cli import main

    code = main(["fuzz", "--impl", f"ctypes:{late_lib}", "--platform", "ieee", "--dtype", "fp32", "--variant", "s",
                 "--elements", "5000", "--batch-elements", "4096", "--max-cases", "2", "--workers", "1", "--seed", "3",
                 "--out", str(tmp_path / "fuzz")])
    summary = json.loads((tmp_path / "fuzz" / "summary.json").read_text())
    keys = summary["failures"]["keys"]
    assert code == 1 and any(k.startswith("R13/fp32/s/") and k.endswith("/late-write") for k in keys), keys


def test_a_correct_result_with_the_fill_bits_is_not_called_unwritten(tmp_path):
    """Some correct fp16 results have the fill's bits (0x5a5a, 203.25: dy copied, or computed);
    the judge accepts them, and the accuracy line must not list them as never written."""
    import json

    from sl1conf.conformance.cli import main

    out = tmp_path / "kernel"
    assert main(["certify", "--impl", "builtin:kernel", "--platform", "ieee", "--dtype", "fp16", "--variant", "p",
                 "--out", str(out)]) == 0
    run = json.loads((out / "report.json").read_text())["runs"][0]
    assert "not written (dx1 still holds the fill)" not in (run["errors"].get("not_a_distance") or {})


def test_the_late_thread_reads_its_own_inputs_not_a_later_calls_mappings(late_lib):
    """The late thread reads x1, x2 and dy 20 ms after its call returned. Calls of other sizes made
    meanwhile used to take over (or unmap, past the worker's spare mappings) that call's input
    mappings: the thread then faulted, a crash blamed on a later call ("read outside every
    buffer", an R11 failure the late write does not explain), and the write itself went unseen.
    The watch holds a call's inputs with its dx1: every call is ok, and the late write is named
    after the call that did it."""
    first = _case(16, 0b11, "two-cores")
    later = [_case(1024 * k, 0b1, f"one-core-{k}") for k in range(1, 25)]  # 24 sizes, 72 input mappings
    with CtypesAdapter(late_lib) as adapter:
        outcomes = adapter.run([first, *later])
        late = adapter.late_writes()
    assert [o.status for o in outcomes] == ["ok"] * len(outcomes), [(o.status, o.detail) for o in outcomes if o.status != "ok"]
    assert [cid for cid, _ in late] == ["two-cores"], late


def test_the_default_runs_guard_page_calls_add_no_cause_of_their_own(late_lib, tmp_path):
    """The default run's guard-page calls (R11) come in many sizes: before the watch held a call's
    inputs, the late thread read them after later calls had unmapped them, and R11 failed
    "unexplained" beside the late write (two causes for one defect). Now one cause line, the late
    write, listing every failing requirement, and R11 passes."""
    code, failed, report = certify(tmp_path, late_lib, "ieee", "--dtype", "fp32", "--only", "R11,R13")
    assert code == 1 and failed == {"R13"}, failed
    md = (tmp_path / "report" / "report.md").read_text()
    section = md.split("**Causes**", 1)[1].split("\n|", 1)[0]  # up to the table of requirements
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(lines) == 1 and "**Causes** (1;" in md, lines
    # the report's causes say the cause first, then each run's requirements (reports.causes.report_causes)
    assert lines[0].startswith("- in calls that wrote dx1 after they returned") and ": fp32 s: R13 (" in lines[0], lines

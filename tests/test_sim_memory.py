"""Memory requirements through a simulator harness: R10 and R12 are judged from the harness's
memory report (SL1M) exactly as from the ctypes adapter's guard pages and canaries, and R11,
which a harness cannot observe, says so in the report instead of a bare not-applicable.

Each library here is built into the bundled harness (natively, and for aarch64 under
qemu-user where the tools are installed) and certified with ``sim:`` on FT78NE, fp32, private
variant, ``--quick``, by protocol 1 (one case per run) and 2 (batches).
"""

from __future__ import annotations

import json
import shutil

import pytest

from sl1conf.adapters import Case
from sl1conf.adapters import sample as S
from sl1conf.adapters.base import Capabilities, OBSERVATIONS
from sl1conf.adapters.simulator import SimulatorAdapter, _outcome
from sl1conf.conformance.cli import main
from sl1conf.conformance.requirements.memory import call_fault

import numpy as np

LIBRARY = r"""
#include <string.h>
#include "smoothl1lossgrad.h"
static float divmul(float d, float beta, float g) { return d > beta ? g : d < -beta ? -g : d / beta * g; }
static void compute(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = divmul(x1[i] - x2[i], beta, dy[i]);
}
static void defect(float *dx1, float *x2, int n)
{
    (void)dx1; (void)x2; (void)n;
    DEFECT
}
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    compute(dy, dx1, x1, x2, n, beta);
    defect(dx1, x2, n);
}
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{
    if (mask)
        compute(dy, dx1, x1, x2, n, beta);
    defect(dx1, x2, n);
}
"""

DEFECTS = {
    # name: (the defect's C statements, the requirement it fails, the words of its example detail)
    "write-before-dx1": ("dx1[-1] = 1.0f;", "R10", "wrote before the start of dx1"),
    "write-past-dx1": ("if (n > 0) dx1[n] = 1.0f;", "R10", "wrote past the end of dx1"),
    "change-x2": ("if (n > 0) { unsigned u; memcpy(&u, x2, 4); u = ~u; memcpy(x2, &u, 4); }", "R12", "changed x2"),
}


def _aarch64():
    return shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")


_QEMU = pytest.mark.skipif(not _aarch64(), reason="aarch64-linux-gnu-gcc or qemu-aarch64 not installed")
RUNS = [("native", 1), ("native", 2), pytest.param("aarch64", 2, marks=_QEMU)]
"""(target, protocol): protocol 1 under qemu-user costs a process start per case (over a minute
for a --quick run), and decoding a version 1 results file does not depend on the target."""


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("sl1-sim-memory")


def _template(build_dir, name: str, defect: str, target: str) -> str:
    src = build_dir / f"{name}.c"
    src.write_text(LIBRARY.replace("DEFECT", defect))
    if target == "aarch64":
        exe = S.build_harness(src, cc="aarch64-linux-gnu-gcc", flags=["-static", "-DSL1_NO_HALF"], out_dir=build_dir)
        return S.harness_template(exe, runner="qemu-aarch64")
    return S.harness_template(S.build_harness(src, flags=["-DSL1_NO_HALF"], out_dir=build_dir))


def _certify(tmp_path, template: str, protocol: int) -> tuple:
    folder = tmp_path / f"report-p{protocol}"
    code = main(["certify", "--impl", f"sim:[protocol={protocol}] {template}", "--platform", "ft78ne",
                 "--dtype", "fp32", "--variant", "p", "--quick", "--out", str(folder)])
    report = json.loads((folder / "report.json").read_text())
    entries = {r["id"]: r for r in report["runs"][0]["requirements"]}
    return code, entries, (folder / "report.md").read_text()


@pytest.mark.parametrize("target, protocol", RUNS)
@pytest.mark.parametrize("name", list(DEFECTS))
def test_a_memory_defect_fails_its_requirement_through_the_harness(tmp_path, build_dir, name, protocol, target):
    defect, rid, words = DEFECTS[name]
    code, entries, _ = _certify(tmp_path, _template(build_dir, name, defect, target), protocol)
    assert code == 1
    entry = entries[rid]
    assert entry["status"] == "fail" and entry["failed"] > 0, entry
    details = [e["detail"] for e in entry["examples"]]
    assert details and all(words in d for d in details), details
    assert entries["R11"]["status"] == "not-applicable"
    assert entries["R11"]["observed"].startswith("not observed by this harness")
    other = {"R10": "R12", "R12": "R10"}[rid]  # the other memory requirement is judged, and holds
    assert entries[other]["status"] == "pass" and entries[other]["checked"] > 0


@pytest.mark.parametrize("target, protocol", RUNS)
def test_a_correct_library_passes_and_r11_says_it_is_not_observed(tmp_path, build_dir, protocol, target):
    code, entries, md = _certify(tmp_path, _template(build_dir, "correct", "", target), protocol)
    assert code == 0, {k: v["status"] for k, v in entries.items() if v["status"] == "fail"}
    for rid in ("R10", "R12"):
        assert entries[rid]["status"] == "pass" and entries[rid]["checked"] > 0
        assert entries[rid]["observed"].startswith("observed by the harness's memory report")
    r11 = entries["R11"]
    assert r11["status"] == "not-applicable" and "checked" not in r11
    assert r11["observed"].startswith("not observed by this harness") and "guard pages" in r11["observed"]
    assert "## Not observed" in md and "not observed by this harness" in md


def test_a_harness_without_a_memory_report_says_r10_and_r12_are_not_observed(tmp_path):
    """A harness that sends no SL1M record (version 1 allows it) observes nothing: each memory
    requirement is not applicable, and its entry says why."""
    script = tmp_path / "harness.py"
    script.write_text(
        "import struct, sys\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "n = struct.unpack_from('<I', data, 12)[0]\n"
        "dx1 = data[24 + 3 * 4 * n:]\n"
        "open(sys.argv[2], 'wb').write(b'SL1R' + struct.pack('<HHI', 1, 0, n) + dx1)\n")
    import sys as _sys
    template = f"{_sys.executable} {script} {{case}} {{result}}"
    adapter = SimulatorAdapter(template, protocol=1)
    from sl1conf.conformance.requirements import by_id
    from sl1conf.conformance.requirements.base import RunContext
    from sl1conf.conformance.requirements.memory import _memory
    from sl1conf.reference import formats as F
    case = Case("fp32", np.zeros(3, np.uint32), np.zeros(3, np.uint32), np.zeros(3, np.uint32), 0x3F800000)
    (o,) = adapter.run([case])
    assert o.status == "ok" and o.wrote_outside is None and o.inputs_changed is None

    class J:  # the little of a judgement _memory reads
        row, outcome = {"id": "1.1"}, o
    ctx = RunContext(F.format_by_name("fp32"), None, "p", adapter, [J()], [], [])
    for rid in ("R10", "R12"):
        found = _memory(ctx, by_id(rid))
        assert not found.applicable
        assert found.extra["observed"].startswith("not observed by this harness: it sent no memory report")
    assert _memory(ctx, by_id("R11")).extra["observed"].startswith("not observed by this harness")


def test_every_memory_flag_names_its_array_and_side():
    case = Case("fp32", np.zeros(2, np.uint32), np.zeros(2, np.uint32), np.zeros(2, np.uint32), 0x3F800000)
    out = np.zeros(2, np.uint32)
    for flag, words in [(1, "wrote before the start of dx1"), (2, "wrote past the end of dx1"),
                        (32, "wrote before the start of dy"), (64, "wrote past the end of dy"),
                        (128, "wrote before the start of x1"), (256, "wrote past the end of x1"),
                        (512, "wrote before the start of x2"), (1024, "wrote past the end of x2")]:
        o = _outcome(case, 0, out, flag, 0.0)
        assert o.wrote_outside is True and o.inputs_changed == ()
        assert call_fault("R10", o).startswith(words) and call_fault("R11", o) is None
    o = _outcome(case, 0, out, 16, 0.0)
    assert not o.wrote_outside and call_fault("R12", o) == "changed x2" and call_fault("R10", o) is None
    o = _outcome(case, 0, out, 1 << 20, 0.0)  # an unknown flag is ignored
    assert o.wrote_outside is False and o.inputs_changed == () and o.fault is None


def test_capabilities_say_what_each_adapter_observes():
    assert Capabilities(memory_checked=True).observed() == frozenset(OBSERVATIONS)
    assert Capabilities(memory_checked=True).note("reads-outside") == ""
    assert Capabilities().observed() == frozenset()
    assert Capabilities().note("writes-outside").startswith("not observed by this adapter")
    sim = SimulatorAdapter.capabilities
    assert sim.observed() == {"writes-outside", "inputs-changed"} and not sim.memory_checked
    assert sim.note("reads-outside").startswith("not observed by this harness")
    with pytest.raises(ValueError):
        Capabilities(observes=("reads-everything",))


def test_the_ctypes_canaries_name_the_array_and_the_side(tmp_path):
    """The ctypes path: a write just before dx1 lands in a canary in the "end" layout (the guard
    page is at the end) and faults on the guard page in the "start" layout; both name dx1's start."""
    from sl1conf.adapters.cbuild import build_shared
    from sl1conf.adapters.ctypes_lib import CtypesAdapter

    src = tmp_path / "before.c"
    src.write_text(LIBRARY.replace("DEFECT", DEFECTS["write-before-dx1"][0]))
    lib = build_shared("lib-sl1-write-before", [src], flags=[f"-I{S.sources_dir()}", "-DSL1_NO_HALF"])
    ones = np.full(5, 0x3F800000, np.uint32)
    with CtypesAdapter(str(lib)) as adapter:
        end, start = adapter.run([Case("fp32", ones, ones, ones, 0x3F800000, guard=g) for g in ("end", "start")])
    assert end.status == "ok" and end.wrote_outside is True
    assert call_fault("R10", end) == "wrote before the start of dx1 (canary changed)"
    assert start.status == "crash" and call_fault("R10", start) == "write before the start of dx1"

"""Simulator protocol version 2: many cases per run of the command, one result record each.

The reference for every outcome is the same case sent by protocol version 1 (one run per
case, the protocol the other tests check against the models), so a batch must give the
same bits and observations, and a crash, a hang or a malformed record must be blamed on
the case that caused it, with every other case answered.
"""

from __future__ import annotations

import shlex
import struct
import sys

import numpy as np
import pytest

from sl1conf.adapters import AdapterError, Case, load
from sl1conf.adapters import sample as S
from sl1conf.adapters.simulator import (
    BATCH_VERSION, PROTOCOL_VERSION, SimulatorAdapter, decode_records, encode_batch, encode_case,
)
from sl1conf.conformance.vectors.sampling import hard_batch
from sl1conf.reference import formats as F

PY = shlex.quote(sys.executable)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("sl1-batch-builds")


def _cases(seed=7):
    """Every case kind: both dtypes and variants, lengths 0, -1, shorter than n, n, odd and
    long, core_mask 0 and several masks, special and boundary values (hard_batch)."""
    rng = np.random.default_rng(seed)
    out = []
    for dtype in ("fp16", "fp32"):
        fmt = F.format_by_name(dtype)
        for n, length, variant, mask in [(0, None, "p", 0xFF), (9, 0, "p", 0xFF), (9, -1, "s", 0xFF),
                                         (9, 5, "p", 0xFF), (1, None, "s", 0x1), (33, None, "s", 0x55),
                                         (1025, None, "s", 0xFF), (1025, None, "p", 0xFF), (17, None, "s", 0)]:
            b = hard_batch(fmt, n, rng) if n else None
            arrays = (b.dy, b.x1, b.x2) if b else (np.zeros(0, fmt.uint),) * 3
            out.append(Case(dtype, *arrays, b.beta if b else 0x3C00 if dtype == "fp16" else 0x3F800000,
                            variant=variant, core_mask=mask, length=length,
                            id=f"{dtype}-{variant}-{mask:#x}-n{n}-len{length}"))
    return out


def _same(a, b) -> bool:
    return (a.status == b.status and a.wrote_outside == b.wrote_outside and a.inputs_changed == b.inputs_changed
            and a.fault == b.fault and (a.out is None and b.out is None or np.array_equal(a.out, b.out)))


def test_the_bundled_harness_speaks_version_2_and_batches_give_version_1s_outcomes(build_dir):
    template = S.harness_template(S.build_harness(out_dir=build_dir))
    batched, single = SimulatorAdapter(template), SimulatorAdapter(template, protocol=1)
    assert batched.protocol() == BATCH_VERSION and single.protocol() == PROTOCOL_VERSION
    cases = _cases()
    for case, a, b in zip(cases, batched.run(cases), single.run(cases)):
        assert a.status == "ok", (case.id, a.detail)
        assert _same(a, b), case.id
    assert batched.calls_made == single.calls_made == len(cases)
    assert batched.describe()["protocol_version"] == 2


def test_small_batches_split_the_cases_and_keep_their_order(build_dir):
    template = S.harness_template(S.build_harness(out_dir=build_dir))
    cases = _cases(8)
    tiny = load(f"sim:[batch=2,batch_mib=0.001] {template}")
    assert (tiny.batch, tiny.batch_bytes) == (2, 1048)
    for case, a, b in zip(cases, tiny.run(cases), SimulatorAdapter(template, protocol=1).run(cases)):
        assert _same(a, b), case.id


def test_a_crash_and_a_hang_in_the_middle_of_a_batch_are_the_right_cases(build_dir):
    """The sample's SEGV defect crashes on length 13 and its HANG defect loops on length 17:
    in a batch of five, exactly that case is a crash (timeout), the two after it are answered by
    a new run, and they equal what version 1 gives."""
    def batch(bad):
        one = 0x3F800000
        return [Case("fp32", *(np.full(n, one, np.uint32),) * 3, one, id=f"n{n}") for n in (5, 7, bad, 9, 11)]

    for bug, bad, status in (("SEGV", 13, "crash"), ("HANG", 17, "timeout")):
        template = S.harness_template(S.build_harness(out_dir=build_dir, bug=bug))
        cases = batch(bad)
        got = SimulatorAdapter(template, timeout=1.0).run(cases)
        assert [o.status for o in got] == ["ok", "ok", status, "ok", "ok"], [o.detail for o in got]
        assert f"(case n{bad})" in got[2].detail  # the case's id, not its place in the batch
        reference = SimulatorAdapter(template, timeout=1.0, protocol=1).run(cases)
        assert all(_same(a, b) for i, (a, b) in enumerate(zip(got, reference)) if i != 2)


FAKE_V2 = r"""
import struct, sys
case, result, mode = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(case, 'rb').read()
magic, ver, _, count, _ = struct.unpack_from('<4sHHII', data)
assert magic == b'SL1B' and ver == 2
out = open(result, 'wb')
out.write(struct.pack('<4sHHII', b'SL1S', 2, 0, count, 0)); out.flush()
at = 16
for k in range(count):
    size, = struct.unpack_from('<I', data, at)
    m, v, dtype, variant, length, n, beta, mask = struct.unpack_from('<4sHBBiIII', data, at + 4)
    e = dtype // 8
    dx1 = data[at + 4 + 24 + 3 * n * e: at + 4 + size]
    index = k if not (mode == 'out-of-order' and k == 1) else 7
    magic = b'XXXX' if (mode == 'bad-magic' and k == 1) else b'SL1R'
    out.write(struct.pack('<4sHHIIII', magic, 2, 0, index, n, 1, 0) + dx1); out.flush()
    if mode == 'exit-early' and k == 0:
        sys.exit(0)
    at += 4 + size
"""


@pytest.mark.parametrize("mode, problem", [("bad-magic", "malformed result record"),
                                           ("out-of-order", "result record 7 where record 1 was due"),
                                           ("exit-early", "the command exited 0 before the result of case c1")])
def test_a_malformed_record_is_the_error_of_its_case_and_the_run_goes_on(mode, problem):
    """A stand-in harness (Python, written from docs/simulator-protocol.md) that spoils the
    second record: the second case is an error naming the problem, the others are answered (the
    third by a new run, in which that fake spoils its second record again: the fourth case)."""
    adapter = SimulatorAdapter(f"{PY} -c {shlex.quote(FAKE_V2)} {{case}} {{result}} {mode}", timeout=10)
    assert adapter.protocol() == BATCH_VERSION
    one = 0x3F800000
    cases = [Case("fp32", *(np.full(3, one, np.uint32),) * 3, one, id=f"c{k}") for k in range(3)]
    got = adapter.run(cases)
    assert [o.status for o in got] == ["ok", "error", "ok"], [o.detail for o in got]
    assert problem in got[1].detail
    assert all(np.array_equal(got[k].out, cases[k].initial_out()) for k in (0, 2))  # the fake copies dx1 back


def test_a_version_1_harness_still_works(build_dir):
    """A harness built before version 2 (-DSL1_HARNESS_PROTOCOL_1_ONLY) refuses the batch file:
    the suite asks once, then sends one case file per run, with the same outcomes."""
    old = S.harness_template(S.build_harness(out_dir=build_dir, flags=["-DSL1_HARNESS_PROTOCOL_1_ONLY"]))
    new = S.harness_template(S.build_harness(out_dir=build_dir))
    adapter = SimulatorAdapter(old)
    assert adapter.protocol() == PROTOCOL_VERSION
    cases = _cases(9)[:6]
    assert all(_same(a, b) for a, b in zip(adapter.run(cases), SimulatorAdapter(new).run(cases)))


def test_batch_file_and_records_byte_layout():
    """encode_batch by hand: header, then size + case record with version 2 in it."""
    one = 0x3F800000
    cases = [Case("fp32", *(np.full(n, one, np.uint32),) * 3, one) for n in (1, 2)]
    data = encode_batch(cases)
    assert data[:16] == b"SL1B" + struct.pack("<HHII", 2, 0, 2, 0)
    first = encode_case(cases[0], version=2)
    assert data[16:20] == struct.pack("<I", len(first)) == struct.pack("<I", 24 + 4 * 4)
    assert data[20:20 + len(first)] == first and first[4:6] == struct.pack("<H", 2)
    assert len(data) == 16 + (4 + 24 + 16) + (4 + 24 + 32)
    header = b"SL1S" + struct.pack("<HHII", 2, 0, 2, 0)
    record = b"SL1R" + struct.pack("<HHIIII", 2, 0, 0, 1, 1, 2) + struct.pack("<I", 0x3F000000)
    [(status, dx1, mem)], problem = decode_records(header + record, cases)
    assert (status, dx1.tolist(), mem, problem) == (0, [0x3F000000], 2, None)
    assert decode_records(header + record[:-1], cases) == ([], None)  # a record still being written


@pytest.mark.parametrize("name, message", [("sim:[batch=0] h {case} {result}", "batch must be at least 1"),
                                           ("sim:[nope=1] h {case} {result}", "unknown option 'nope=1'"),
                                           ("sim:[batch=x] h {case} {result}", "needs a number"),
                                           ("sim:[protocol=3] h {case} {result}", "protocol must be 1 or 2"),
                                           ("sim:[batch=2 h {case} {result}", "no closing ']'")])
def test_bad_options_are_one_clear_error(name, message):
    with pytest.raises(AdapterError, match=message):
        load(name)


def test_a_crash_and_a_hang_mid_batch_under_qemu(build_dir):
    """The same attribution for an aarch64 harness under qemu-user (required in CI)."""
    import os
    import shutil

    missing = [t for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64") if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the qemu batch test: {' and '.join(missing)} not found")
        pytest.skip(f"{' and '.join(missing)} not found")
    one = 0x3C00
    for bug, bad, status in (("SEGV", 13, "crash"), ("HANG", 17, "timeout")):
        exe = S.build_harness(cc="aarch64-linux-gnu-gcc", flags=["-static"], out_dir=build_dir, bug=bug)
        adapter = load(f"sim:[timeout=2] {S.harness_template(exe, runner='qemu-aarch64')}")
        assert adapter.protocol() == BATCH_VERSION
        # dy = 1, x1 = 2, x2 = 0, beta = 1: diff > beta, every result is dy = 1 (0x3c00)
        cases = [Case("fp16", np.full(n, one, np.uint16), np.full(n, 0x4000, np.uint16), np.zeros(n, np.uint16), one,
                      variant="s", id=f"n{n}") for n in (4, bad, 6)]
        got = adapter.run(cases)
        assert [o.status for o in got] == ["ok", status, "ok"], [o.detail for o in got]
        assert f"(case n{bad})" in got[1].detail  # the case's id, not its place in the batch
        assert all(np.array_equal(got[k].out, np.full(cases[k].n, 0x3C00, np.uint16)) for k in (0, 2))


@pytest.mark.parametrize("protocol", [1, 2])
def test_a_variant_the_harness_lacks_costs_one_run_not_one_per_call(build_dir, tmp_path, protocol):
    """A harness built without the private variant answers its first private call 'built without
    this variant' (status 2); the adapter makes no more private calls (each would cost a run of
    the command, minutes on a board), answers them unsupported naming that case, and the shared
    calls run as before. Runs are counted by a wrapper around the harness."""
    harness = S.build_harness(out_dir=build_dir, flags=["-DSL1_HARNESS_NO_PRIVATE"])
    runs = tmp_path / "runs"
    wrapper = tmp_path / "count.sh"
    wrapper.write_text(f'#!/bin/sh\necho run >> {shlex.quote(str(runs))}\nexec {shlex.quote(str(harness))} "$@"\n')
    wrapper.chmod(0o755)
    impl = SimulatorAdapter(f"{wrapper} {{case}} {{result}}", protocol=protocol, batch=3)
    cases = [c for c in _cases() if c.n]
    private = [c for c in cases if c.variant == "p"]
    outcomes = impl.run(cases)
    made = len(runs.read_text().splitlines()) - (1 if protocol == 2 else 0)  # the protocol question
    shared_runs = sum(c.variant == "s" for c in cases) if protocol == 1 else None
    for c, o in zip(cases, outcomes):
        if c.variant == "p":
            assert o.status == "unsupported", (c.id, o.status, o.detail)
        else:
            assert o.status == "ok", (c.id, o.detail)
    for dtype in ("fp16", "fp32"):  # per dtype and variant: the first call is made, the others not
        mine = [(c, o) for c, o in zip(cases, outcomes) if c.variant == "p" and c.dtype == dtype]
        (c0, first), rest = mine[0], mine[1:]
        assert "built without this variant" in first.detail and rest
        skipped = [o for _, o in rest if o.detail.startswith(f"not run: the harness answered case {c0.id}")]
        # (a batch already sent holds more private calls: the harness answers them itself)
        assert skipped and all(o in skipped or "built without this variant" in o.detail for _, o in rest)
        assert impl.unbuilt[(dtype, "p")][2] == len(skipped)
        assert len(skipped) == len(rest) or protocol == 2
    if protocol == 1:
        assert made == shared_runs + 2  # one private call made per dtype, the rest not
    else:
        assert made < len(cases) / 3 + 2  # batches of 3: no batch of private calls alone after the first

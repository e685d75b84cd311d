"""The sample C library, the simulator protocol, its harness and the sim: adapter.

- The sample (host build, run through the host-built harness and the sim: adapter)
  matches the divmul models bit for bit, for both dtypes and variants, many core
  masks and lengths; core_mask 0 and length <= 0 write nothing; in-place use works.
- The C core split is the one of sl1conf.reference.cores.
- The adapter reports timeouts, crashes, nonzero exits and missing, malformed or
  truncated results files; templates without both placeholders are refused.
- The harness refuses malformed case files (exit status 2) and reports status.
- The sample's deliberate defects are reported for exactly their triggering case.
- End to end for aarch64 under qemu-user (required, not skipped, when CI is set).
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import shlex
import shutil
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

from sl1conf.adapters import AdapterError, Case, load
from sl1conf.adapters import sample as S
from sl1conf.adapters.simulator import SimulatorAdapter, decode_results, encode_case, host_template
from sl1conf.conformance.vectors.sampling import hard_batch, random_batch, special_patterns
from sl1conf.reference import formats as F
from sl1conf.reference.cores import core_chunks
from sl1conf.reference.models import evaluate

MASKS = (0x1, 0xFF, 0x55, 0xAA, 0x81)
LENGTHS = (0, 1, 7, 8, 9, 1023, 1025)
PY = shlex.quote(sys.executable)


# ---- helpers ------------------------------------------------------------------------

def expected(case: Case) -> np.ndarray:
    """dx1 after a correct call: the spec-order model in the data precision, the rest untouched."""
    fmt, m = case.format, case.elements_written
    out = case.initial_out()
    if m:
        dy, x1, x2, beta = case.floats()
        out[:m] = evaluate(f"divmul-{case.dtype}", dy[:m], x1[:m], x2[:m], beta).view(fmt.uint)
    return out


def assert_matches(case: Case, outcome) -> None:
    assert outcome.status == "ok", f"{case.id}: {outcome.status} {outcome.detail}"
    want = expected(case)
    same = F.same_result(case.format, outcome.out, want)
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        pytest.fail(f"{case.id}: {int((~same).sum())} elements differ; first at {i}: got "
                    f"{F.hex_bits(case.format, outcome.out[i])}, want {F.hex_bits(case.format, want[i])} "
                    f"(dy {F.hex_bits(case.format, case.dy[i])}, x1 {F.hex_bits(case.format, case.x1[i])}, "
                    f"x2 {F.hex_bits(case.format, case.x2[i])}, beta {F.hex_bits(case.format, case.beta)})")
    assert outcome.wrote_outside is False and outcome.inputs_changed == (), case.id


def make_case(dtype, n, rng, *, hard=False, **kw) -> Case:
    fmt = F.format_by_name(dtype)
    b = hard_batch(fmt, n, rng) if hard else random_batch(fmt, n, rng)
    return Case(dtype, b.dy, b.x1, b.x2, b.beta, **kw)


def model_cases(rng, dtypes=("fp16", "fp32"), lengths=LENGTHS, masks=MASKS) -> list[Case]:
    cases = []
    for dtype in dtypes:
        for n in lengths:
            for variant, mask in [("p", 0xFF)] + [("s", m) for m in masks]:
                k = len(cases)
                cases.append(make_case(dtype, n, rng, hard=k % 3 == 2, variant=variant, core_mask=mask,
                                       id=f"{dtype}-{variant}-{mask:#x}-n{n}"))
    return cases


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    """A fresh build cache for this module (builds are cached by content anyway)."""
    return tmp_path_factory.mktemp("sl1-builds")


@pytest.fixture(scope="module")
def host_harness(build_dir):
    return S.build_harness(out_dir=build_dir)


@pytest.fixture(scope="module")
def sim(build_dir, host_harness):
    template = host_template(out_dir=build_dir)  # the ready-made template of the same (cached) harness
    assert shlex.split(template) == [str(host_harness), "{case}", "{result}"]
    return SimulatorAdapter(template)


def fake(script: str, timeout: float = 10.0, extra: str = "") -> SimulatorAdapter:
    """A simulator adapter over a Python one-liner script (argv[1] case, argv[2] result), sent
    version 1 case files without the protocol question (which such a script cannot answer)."""
    return SimulatorAdapter(f"{PY} -c {shlex.quote(script)} {{case}} {{result}} {extra}", timeout=timeout, protocol=1)


def small_case(dtype="fp32", n=5, **kw) -> Case:
    fmt = F.format_by_name(dtype)
    vals = np.arange(1, n + 1, dtype=fmt.dtype).view(fmt.uint)
    one = int(np.array([1.0], fmt.dtype).view(fmt.uint)[0])
    return Case(dtype, vals, vals, np.zeros(n, fmt.uint), one, **kw)


# ---- the sample sources and builds ------------------------------------------------------

def test_sources_and_defects_are_found():
    d = S.sources_dir()
    assert (d / "smoothl1lossgrad.h").is_file() and (d / "smoothl1lossgrad.c").is_file()
    assert S.harness_source().is_file()
    assert S.defects() == {"SEGV": (1, 13), "HANG": (2, 17), "WRITE_PAST_END": (3, 19),
                           "READ_PAST_END": (4, 23), "CLOBBER_INPUT": (5, 29), "READ_BEFORE_START": (6, 31)}
    assert S.bug_number("SEGV") == S.bug_number("sl1_bug_segv") == S.bug_number(1) == 1
    assert S.bug_number(None) == 0
    for bad in ("NOPE", 99):
        with pytest.raises(AdapterError, match="unknown sample defect"):
            S.bug_number(bad)


def test_header_declares_exactly_the_documented_api():
    text = (S.sources_dir() / "smoothl1lossgrad.h").read_text()
    flat = " ".join(text.split())
    for decl in (
        "void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int length, float beta, int core_mask);",
        "void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int length, float beta);",
        "void hp_smoothl1lossgrad_s(half *dy, half *dx1, half *x1, half *x2, int length, half beta, int core_mask);",
        "void hp_smoothl1lossgrad_p(half *dy, half *dx1, half *x1, half *x2, int length, half beta);",
    ):
        assert decl in flat


def test_build_library_is_cached_and_keyed_by_bug(build_dir):
    lib = S.build_library(out_dir=build_dir)
    stamp = lib.stat().st_mtime_ns
    assert S.build_library(out_dir=build_dir) == lib and lib.stat().st_mtime_ns == stamp
    assert S.build_library(out_dir=build_dir, bug="CLOBBER_INPUT") != lib
    assert not [p for p in lib.parent.iterdir() if p.name.endswith(".tmp")]  # no temporary left


def test_no_compiler_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no cc, gcc or clang
    with pytest.raises(AdapterError, match="no C compiler.*cc, gcc, clang"):
        S.build_library(out_dir=tmp_path)
    with pytest.raises(AdapterError, match="no C compiler.*'/nonexistent/cc'"):
        S.build_library(out_dir=tmp_path, cc="/nonexistent/cc")
    monkeypatch.setenv("CC", "missing-cc")
    with pytest.raises(AdapterError, match=r"'missing-cc' \(from \$CC\)"):
        S.build_harness(out_dir=tmp_path)


def test_core_split_matches_reference_cores(build_dir, tmp_path):
    """The C split (sl1_split) hands out exactly the chunks of sl1conf.reference.cores."""
    probe = tmp_path / "split.c"
    probe.write_text(
        '#include "smoothl1lossgrad.c"\n#include <stdio.h>\n#include <stdlib.h>\n'
        "static void show(int core, int start, int stop, void *ctx) { (void)ctx; printf(\"%d %d %d\\n\", core, start, stop); }\n"
        "int main(int argc, char **argv) { (void)argc; sl1_split(atoi(argv[1]), (int)strtoul(argv[2], 0, 0), show, 0); return 0; }\n")
    exe = tmp_path / "split"
    cc = S.find_compiler()
    subprocess.run([*cc, *S.HARNESS_FLAGS, f"-I{S.sources_dir()}", str(probe), "-o", str(exe)], check=True)
    for length in (0, 1, 7, 8, 9, 1023, 1025, -5):
        for mask in (0, *MASKS, 0x80000001, 0xFFFFFFFF):
            got = subprocess.run([str(exe), str(length), hex(mask)], capture_output=True, text=True,
                                 check=True).stdout.split()
            got = [tuple(map(int, got[i:i + 3])) for i in range(0, len(got), 3)]
            want = core_chunks(length, mask) if length > 0 else []
            assert got == want, (length, hex(mask))


# ---- the sample through the simulator path matches the models ------------------------------

def test_sample_matches_divmul_models(sim):
    rng = np.random.default_rng(20260117)
    cases = model_cases(rng)
    for case, outcome in zip(cases, sim.run(cases)):
        assert_matches(case, outcome)


def test_sample_matches_divmul_models_for_special_betas(sim):
    """beta of +-0, subnormal, 1, max, +-inf, NaN (overlapping branches, 0/0, inf/inf), with
    diff == 0, == +-beta and random, on both variants."""
    rng = np.random.default_rng(99)
    cases = []
    for dtype in ("fp16", "fp32"):
        fmt = F.format_by_name(dtype)
        for beta in map(int, special_patterns(fmt)):
            b = random_batch(fmt, 48, rng, beta=beta)
            x1 = b.x1.copy()
            x1[:8] = b.x2[:8]  # diff == 0 (or NaN/inf - inf)
            x1[8:12] = [beta, beta ^ fmt.sign_mask, beta, beta ^ fmt.sign_mask]
            x2 = b.x2.copy()
            x2[8:12] = 0  # diff == +-beta exactly
            for variant in ("s", "p"):
                cases.append(Case(dtype, b.dy, x1, x2, beta, variant=variant, core_mask=0x55,
                                  id=f"{dtype}-{variant}-beta{beta:#x}"))
    for case, outcome in zip(cases, sim.run(cases)):
        assert_matches(case, outcome)


def test_nothing_written_for_core_mask_0_and_length_0_or_less(sim):
    rng = np.random.default_rng(7)
    cases = []
    for dtype in ("fp16", "fp32"):
        cases += [make_case(dtype, 1025, rng, variant="s", core_mask=0, id=f"{dtype}-mask0"),
                  make_case(dtype, 0, rng, variant="s", core_mask=0, id=f"{dtype}-mask0-n0"),
                  make_case(dtype, 9, rng, variant="p", length=0, id=f"{dtype}-p-length0"),
                  make_case(dtype, 9, rng, variant="s", length=0, id=f"{dtype}-s-length0"),
                  make_case(dtype, 9, rng, variant="p", length=-3, id=f"{dtype}-p-negative"),
                  make_case(dtype, 9, rng, variant="s", length=-(1 << 31), id=f"{dtype}-s-intmin")]
    for case, outcome in zip(cases, sim.run(cases)):
        assert outcome.status == "ok", (case.id, outcome.detail)
        assert np.array_equal(outcome.out, case.initial_out()), case.id
    # length < n: only the first `length` elements are written, on any mask (bit 31 included)
    for dtype in ("fp16", "fp32"):
        for variant, mask in (("p", 0xFF), ("s", 0x81), ("s", 0x80000001)):
            case = make_case(dtype, 40, rng, variant=variant, core_mask=mask, length=33, id=f"{dtype}-{mask:#x}-33of40")
            (outcome,) = sim.run([case])
            assert_matches(case, outcome)


def test_sample_in_place_via_ctypes(build_dir):
    """dx1 may alias dy, x1 or x2 exactly (fp16 through the float register trick of x86-64/aarch64)."""
    lib = ctypes.CDLL(str(S.build_library(out_dir=build_dir)))
    rng = np.random.default_rng(11)
    P = ctypes.c_void_p
    dtypes = ["fp32"] + (["fp16"] if platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64") else [])
    for dtype in dtypes:
        fmt = F.format_by_name(dtype)
        prefix = "fp" if dtype == "fp32" else "hp"
        # half travels in the low 16 bits of a float register on both ABIs: pass the float
        # whose bit pattern is 0x0000hhhh (the high half is ignored by the callee)
        beta_arg = lambda b: ctypes.c_float(struct.unpack("<f", struct.pack("<I", b))[0])  # noqa: E731
        fs = getattr(lib, f"{prefix}_smoothl1lossgrad_s")
        fp = getattr(lib, f"{prefix}_smoothl1lossgrad_p")
        fs.restype = fp.restype = None
        fs.argtypes = [P, P, P, P, ctypes.c_int, ctypes.c_float, ctypes.c_int]
        fp.argtypes = [P, P, P, P, ctypes.c_int, ctypes.c_float]
        for alias in ("dy", "x1", "x2"):
            for variant in ("s", "p"):
                case = make_case(dtype, 257, rng, variant=variant, core_mask=0x55, out_alias=alias,
                                 id=f"{dtype}-{variant}-over-{alias}")
                arrays = {"dy": case.dy.copy(), "x1": case.x1.copy(), "x2": case.x2.copy()}
                ptr = {k: a.ctypes.data for k, a in arrays.items()}
                args = [ptr["dy"], ptr[alias], ptr["x1"], ptr["x2"], case.n, beta_arg(case.beta)]
                if variant == "s":
                    fs(*args, case.core_mask)
                else:
                    fp(*args)
                got = arrays[alias]
                same = F.same_result(fmt, got, expected(case))
                assert same.all(), (case.id, int(np.flatnonzero(~same)[0]))


# ---- the simulator adapter's reports ----------------------------------------------------------

def test_template_needs_both_placeholders():
    for bad in ("", "echo hi", "prog {case}", "prog {result}", "prog {Case} {result}"):
        with pytest.raises(AdapterError, match=r"\{case\} and \{result\}"):
            SimulatorAdapter(bad)
    with pytest.raises(AdapterError, match="must contain"):
        load("sim:echo hi")
    with pytest.raises(AdapterError, match="cannot split"):
        SimulatorAdapter("prog 'unclosed {case} {result}")
    a = load("sim:cat --in={case} '{result}' {other}")
    assert a.name == "sim:cat --in={case} '{result}' {other}"
    assert a.command("/c", "/r") == ["cat", "--in=/c", "/r", "{other}"]
    assert a.capabilities.isolated and not a.capabilities.in_place
    assert a.dtypes == ("fp16", "fp32") and a.variants == ("s", "p")


# A Python stand-in for a harness: reads the case file by the protocol (independently of the
# suite's encoder), copies the initial dx1 back, and writes the results file as MODE says.
FAKE_HARNESS = r"""
import struct, sys
case, result, mode = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(case, 'rb').read()
magic, ver, dtype, variant, length, n, beta, mask = struct.unpack_from('<4sHBBiIII', data)
assert magic == b'SL1C' and ver == 1 and variant in b'sp' and dtype in (16, 32)
e = dtype // 8
assert len(data) == 24 + 4 * n * e
dx1 = data[24 + 3 * n * e:]
head = lambda status=0, count=n, magic=b'SL1R', ver=1: struct.pack('<4sHHI', magic, ver, status, count)
body = {
    'ok': head() + dx1,
    'ok-report': head() + dx1 + b'SL1M' + struct.pack('<I', 2 | 16),
    'empty': b'',
    'short-header': b'SL1R\x01',
    'bad-magic': head(magic=b'XXXX') + dx1,
    'bad-version': head(ver=2) + dx1,
    'wrong-n': head(count=n + 1) + dx1,
    'truncated': head() + dx1[:-1],
    'trailing': head() + dx1 + b'junk',
    'status-1': head(status=1, count=0),
    'status-3': head(status=3, count=0),
    'status-9': head(status=9, count=0),
}[mode]
open(result, 'wb').write(body)
"""


@pytest.mark.parametrize("mode, status, match", [
    ("empty", "error", "empty"),
    ("short-header", "error", "truncated.*header"),
    ("bad-magic", "error", "does not start with SL1R"),
    ("bad-version", "error", "version 2"),
    ("wrong-n", "error", "holds 6 elements, the case has 5"),
    ("truncated", "error", "truncated: 19 of 20 bytes"),
    ("trailing", "error", "4 trailing bytes"),
    ("status-1", "unsupported", "status 1: .*without this dtype"),
    ("status-3", "error", "status 3: length exceeds"),
    ("status-9", "error", "status 9"),
])
def test_malformed_results_are_errors(mode, status, match):
    (outcome,) = fake(FAKE_HARNESS, extra=mode).run([small_case("fp32", 5)])
    assert outcome.status == status and outcome.out is None
    assert re.search(match, outcome.detail), outcome.detail


def test_fake_harness_round_trip_and_memory_report():
    for dtype in ("fp16", "fp32"):
        for variant in ("s", "p"):
            case = small_case(dtype, 5, variant=variant)
            (ok,) = fake(FAKE_HARNESS, extra="ok").run([case])
            assert ok.status == "ok" and np.array_equal(ok.out, case.initial_out())
            assert ok.out.dtype == case.format.uint
            assert ok.wrote_outside is None and ok.inputs_changed is None  # no report: not checked
    (rep,) = fake(FAKE_HARNESS, extra="ok-report").run([small_case()])
    assert rep.status == "ok" and rep.wrote_outside is True and rep.inputs_changed == ("x2",)
    assert "past the end of dx1" in rep.fault


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    script = ("import subprocess, sys, time; p = subprocess.Popen(['sleep', '30']); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(30)")
    start = time.monotonic()
    (outcome,) = fake(script, timeout=1.0).run([small_case()])
    assert outcome.status == "timeout" and "1 s" in outcome.detail
    assert time.monotonic() - start < 10
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # gone, or a zombie waiting for a reaper
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state in ("Z", "X"):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the grandchild {pid} survived the timeout")


def test_crash_exit_status_and_missing_results():
    (abort,) = fake("import os; os.abort()").run([small_case()])
    assert abort.status == "crash" and abort.detail == "SIGABRT"
    (segv,) = fake("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)").run([small_case()])
    assert segv.status == "crash" and segv.detail == "SIGSEGV"
    (exit3,) = fake("import sys; sys.stderr.write('simulator: no licence\\n'); sys.exit(3)").run([small_case()])
    assert exit3.status == "error" and exit3.detail == "exit status 3: simulator: no licence"
    (shell,) = fake("import sys; sys.exit(139)").run([small_case()])
    assert shell.status == "error" and "SIGSEGV" in shell.detail
    (none,) = fake("pass").run([small_case()])
    assert none.status == "error" and "no results file" in none.detail



def test_a_command_that_cannot_start_is_bad_usage(tmp_path):
    """Not a failing implementation (issue 16): no such program on PATH, no such file, a file
    that is not executable, or a template that does not start with a program."""
    script = tmp_path / "sim.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    for template, why in (("nonexistent-cmd-sl1 {case} {result}", "no such command on PATH"),
                          (f"{tmp_path}/missing {{case}} {{result}}", "no such file"),
                          (f"{script} {{case}} {{result}}", "not executable"),
                          ("{case} {result}", "name the program first")):
        with pytest.raises(AdapterError, match=why):
            SimulatorAdapter(template)
    # one that could start and is gone by the time it runs: the protocol question cannot be put
    # (bad usage, one line), and past it (protocol=1) it is an error outcome of that call
    script.chmod(0o755)
    adapter, told = SimulatorAdapter(f"{script} {{case}} {{result}}"), SimulatorAdapter(f"{script} {{case}} {{result}}",
                                                                                          protocol=1)
    script.unlink()
    with pytest.raises(AdapterError, match=f"cannot start '{script}'"):
        adapter.run([small_case()])
    (missing,) = told.run([small_case()])
    assert missing.status == "error" and f"cannot run '{script}'" in missing.detail


def test_cases_the_adapter_does_not_send(sim):
    too_long = small_case(n=5, length=6)
    in_place = small_case(out_alias="x1")
    long_out, aliased = sim.run([too_long, in_place])
    assert long_out.status == "error" and "exceeds the 5 elements" in long_out.detail
    assert aliased.status == "unsupported"


# ---- the harness itself ------------------------------------------------------------------------

def _case_bytes(body=None, **overrides) -> bytes:
    f = dict(magic=b"SL1C", version=1, dtype=32, variant=ord("p"), length=3, n=3, beta=0x3F800000, mask=0xFF)
    f.update(overrides)
    header = struct.pack("<4sHBBiIII", f["magic"], f["version"], f["dtype"], f["variant"], f["length"],
                         f["n"], f["beta"], f["mask"])
    return header + (bytes(4 * f["n"] * (f["dtype"] // 8)) if body is None else body)


@pytest.mark.parametrize("data, message", [
    (b"", "shorter than the 24-byte header"),
    (_case_bytes(magic=b"SL1R"), "no SL1C magic"),
    (_case_bytes(version=2), "unsupported case-file version"),
    (_case_bytes(dtype=64), "dtype is not 16 or 32"),
    (_case_bytes(variant=ord("x")), "variant is not 's' or 'p'"),
    (_case_bytes(dtype=16, beta=0x13C00), "fp16 beta has bits above the low 16"),
    (_case_bytes()[:-1], "truncated"),
    (_case_bytes() + b"\0", "trailing bytes"),
    (_case_bytes(n=0xFFFFFFFF, body=bytes(64)), "truncated"),
])
def test_harness_refuses_malformed_case_files(host_harness, tmp_path, data, message):
    case, result = tmp_path / "case", tmp_path / "result"
    case.write_bytes(data)
    proc = subprocess.run([str(host_harness), str(case), str(result)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and re.search(message, proc.stderr), proc.stderr
    assert not result.exists()


def test_harness_usage_io_errors_and_status(host_harness, tmp_path):
    run = lambda *a: subprocess.run([str(host_harness), *map(str, a)], capture_output=True, text=True, timeout=30)  # noqa: E731
    usage = run()
    assert usage.returncode == 2 and "usage" in usage.stderr
    missing = run(tmp_path / "nope", tmp_path / "r")
    assert missing.returncode == 1 and "cannot open the case file" in missing.stderr
    case = tmp_path / "case"
    case.write_bytes(_case_bytes())
    unwritable = run(case, tmp_path / "no-such-dir" / "r")
    assert unwritable.returncode == 1 and "cannot create the results file" in unwritable.stderr
    case.write_bytes(_case_bytes(length=4))  # length > n: the call is not made
    assert run(case, tmp_path / "r").returncode == 0
    assert decode_results((tmp_path / "r").read_bytes(), "fp32", 3) == (3, None, None)


def test_harness_without_fp16_reports_unsupported(build_dir):
    exe = S.build_harness(out_dir=build_dir, flags=["-DSL1_NO_HALF"])
    a = SimulatorAdapter(S.harness_template(exe))
    half, single = a.run([small_case("fp16", 4), small_case("fp32", 4)])
    assert half.status == "unsupported" and "without this dtype" in half.detail
    assert_matches(small_case("fp32", 4), single)


def test_encode_case_layout():
    case = small_case("fp16", 2, variant="s", core_mask=0x80000001)
    data = encode_case(case)
    assert data[:24] == struct.pack("<4sHBBiIII", b"SL1C", 1, 16, ord("s"), 2, 2, 0x3C00, 0x80000001)
    assert data[24:] == struct.pack("<8H", 0x3C00, 0x4000, 0x3C00, 0x4000, 0, 0, 0x5A5A, 0x5A5A)


# ---- the deliberate defects, each reported for exactly its case ------------------------------

def _defect_cases(trigger: int) -> list[Case]:
    """length trigger-1, trigger, trigger+1 (fp32, private, arrays exactly that long), and the
    trigger length on fp16, shared, with two spare elements after it."""
    rng = np.random.default_rng(trigger)
    cases = [make_case("fp32", n, rng, variant="p", id=f"fp32-p-{n}") for n in (trigger - 1, trigger, trigger + 1)]
    cases.append(make_case("fp16", trigger + 2, rng, variant="s", core_mask=0x81, length=trigger,
                           id=f"fp16-s-{trigger}-of-{trigger + 2}"))
    return cases


@pytest.mark.parametrize("bug", ["SEGV", "HANG", "WRITE_PAST_END", "CLOBBER_INPUT", "READ_PAST_END",
                                 "READ_BEFORE_START"])
def test_defects_reported_for_the_triggering_case_only(build_dir, bug):
    trigger = S.defects()[bug][1]
    exe = S.build_harness(out_dir=build_dir, bug=bug)
    adapter = SimulatorAdapter(S.harness_template(exe), timeout=1.0 if bug == "HANG" else 30.0)
    cases = _defect_cases(trigger)
    for case, outcome in zip(cases, adapter.run(cases)):
        if case.call_length != trigger or bug.startswith("READ_"):  # reads outside are not visible here
            assert_matches(case, outcome)
        elif bug == "SEGV":
            assert outcome.status == "crash" and outcome.detail.startswith("SIGSEGV"), case.id
        elif bug == "HANG":
            assert outcome.status == "timeout", case.id
        elif bug == "WRITE_PAST_END":
            assert outcome.status == "ok" and outcome.inputs_changed == (), case.id
            if case.n == trigger:  # dx1[length] is past the array: the harness's guard zone sees it
                assert outcome.wrote_outside is True and "past the end of dx1" in outcome.fault, case.id
                assert np.array_equal(outcome.out, expected(case))
            else:  # dx1[length] is a spare element of the case: the comparison with dx1's initial bits sees it
                assert outcome.wrote_outside is False
                differs = np.flatnonzero(~F.same_result(case.format, outcome.out, expected(case)))
                assert differs.tolist() == [trigger], case.id
        elif bug == "CLOBBER_INPUT":
            assert outcome.status == "ok" and outcome.inputs_changed == ("x2",), case.id
            assert outcome.wrote_outside is False
            assert np.array_equal(outcome.out, expected(case))


# ---- end to end: aarch64 under qemu-user ---------------------------------------------------------

@pytest.fixture(scope="module")
def aarch64_tools():
    missing = [t for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64") if shutil.which(t) is None]
    if missing:
        message = (f"{' and '.join(missing)} not found: install Debian's gcc-aarch64-linux-gnu, "
                   "libc6-dev-arm64-cross and qemu-user")
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the aarch64 end-to-end test: {message}")
        pytest.skip(message)
    return "aarch64-linux-gnu-gcc"


def test_aarch64_under_qemu_matches_models(aarch64_tools, build_dir):
    exe = S.build_harness(cc=aarch64_tools, flags=["-static"], out_dir=build_dir)
    assert exe.read_bytes()[18:20] == (183).to_bytes(2, "little")  # ELF e_machine: EM_AARCH64
    adapter = load("sim:" + S.harness_template(exe, runner="qemu-aarch64"))
    rng = np.random.default_rng(64)
    cases = model_cases(rng, lengths=(0, 9, 1025), masks=(0xFF, 0x81))
    cases.append(make_case("fp32", 9, rng, variant="s", core_mask=0, id="fp32-s-mask0"))
    for case, outcome in zip(cases, adapter.run(cases)):
        assert_matches(case, outcome)


def test_aarch64_dynamic_and_crash_under_qemu(aarch64_tools, build_dir):
    dynamic = S.build_harness(cc=aarch64_tools, out_dir=build_dir)
    adapter = SimulatorAdapter(S.harness_template(dynamic, runner="qemu-aarch64 -L /usr/aarch64-linux-gnu"))
    rng = np.random.default_rng(65)
    case = make_case("fp16", 100, rng, variant="s", core_mask=0x55, id="fp16-s-dynamic")
    (outcome,) = adapter.run([case])
    assert_matches(case, outcome)
    broken = S.build_harness(cc=aarch64_tools, flags=["-static"], out_dir=build_dir, bug="SEGV")
    adapter = SimulatorAdapter(S.harness_template(broken, runner="qemu-aarch64"))
    cases = _defect_cases(13)[:3]
    outcomes = adapter.run(cases)
    assert [o.status for o in outcomes] == ["ok", "crash", "ok"], [o.detail for o in outcomes]
    assert outcomes[1].detail == f"SIGSEGV (case {cases[1].id})"  # its id, not its place in the batch

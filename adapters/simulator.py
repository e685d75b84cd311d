"""Implementations behind a simulator or a board, through case files (``sim:<command template>``).

Each case becomes one run of a user-supplied command: the adapter writes a case file,
runs the command (no shell) with ``{case}`` and ``{result}`` replaced by the two file
paths, and reads the results file the command leaves behind. The protocol is
documented, versioned and language neutral (docs/simulator-protocol.md); the suite
ships a C harness for it (``sim/harness.c``, built by
:func:`sl1conf.adapters.sample.build_harness`) that the user links with the library
under test and runs under the simulator of their choice::

    sl1conf ... --impl 'sim:qemu-aarch64 /path/to/harness {case} {result}'

The command runs in its own process group, so a hang is killed with everything it
started (``timeout``); death by a signal is a ``crash``; a nonzero exit or a missing,
malformed or truncated results file is an ``error`` whose detail names the problem.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from typing import Optional

import numpy as np

from .base import Adapter, AdapterError, Capabilities, Case, Outcome

__all__ = [
    "PROTOCOL_VERSION", "CASE_MAGIC", "RESULT_MAGIC", "MEMORY_MAGIC", "STATUS", "MEMORY_FLAGS",
    "encode_case", "decode_results", "ResultsError", "SimulatorAdapter", "host_template",
]

PROTOCOL_VERSION = 1
CASE_MAGIC = b"SL1C"
RESULT_MAGIC = b"SL1R"
MEMORY_MAGIC = b"SL1M"
_CASE_HEADER = struct.Struct("<4sHBBiIII")  # magic, version, dtype, variant, length, n, beta, core_mask
_RESULT_HEADER = struct.Struct("<4sHHI")  # magic, version, status, n
_MEMORY_REPORT = struct.Struct("<4sI")  # magic, flags

STATUS = {
    0: "ok",
    1: "the harness was built without this dtype",
    2: "the harness was built without this variant",
    3: "length exceeds the number of elements: the harness did not make the call",
}
"""Results-file status values (anything else nonzero: the harness could not call)."""
_UNSUPPORTED_STATUSES = (1, 2)

MEMORY_FLAGS = {
    1: "wrote before dx1",
    2: "wrote past the end of dx1",
    4: "dy",
    8: "x1",
    16: "x2",
}
"""Bits of the optional memory report: writes into the guard zones around dx1 and inputs changed."""

_ELEMENT = {"fp16": np.dtype("<u2"), "fp32": np.dtype("<u4")}
_DTYPE_CODE = {"fp16": 16, "fp32": 32}


class ResultsError(ValueError):
    """A results file that does not follow the protocol (the message names the problem)."""


def encode_case(case: Case) -> bytes:
    """The case file of ``case`` (protocol version 1)."""
    length = case.call_length
    if not -(1 << 31) <= length < (1 << 31):
        raise ValueError(f"length {length} does not fit the API's int (i32)")
    if case.n >= 1 << 32:
        raise ValueError(f"{case.n} elements do not fit the case file's u32 count")
    fmt = case.format
    if not 0 <= case.beta < (1 << fmt.bits):
        raise ValueError(f"beta bit pattern {case.beta:#x} does not fit {fmt.name}")
    header = _CASE_HEADER.pack(CASE_MAGIC, PROTOCOL_VERSION, _DTYPE_CODE[case.dtype], ord(case.variant),
                               length, case.n, case.beta, case.core_mask & 0xFFFFFFFF)
    el = _ELEMENT[case.dtype]
    arrays = (case.dy, case.x1, case.x2, case.initial_out())
    return header + b"".join(np.ascontiguousarray(a).astype(el).tobytes() for a in arrays)


def decode_results(data: bytes, dtype: str, n: int) -> tuple[int, Optional[np.ndarray], Optional[int]]:
    """(status, dx1 bits or None, memory-report flags or None) of a results file.

    Raises :class:`ResultsError` naming the problem when the file breaks the protocol.
    """
    if len(data) == 0:
        raise ResultsError("the results file is empty")
    if len(data) < _RESULT_HEADER.size:
        raise ResultsError(f"the results file is truncated: {len(data)} bytes, "
                           f"shorter than the {_RESULT_HEADER.size}-byte header")
    magic, version, status, count = _RESULT_HEADER.unpack_from(data)
    if magic != RESULT_MAGIC:
        raise ResultsError(f"the results file does not start with {RESULT_MAGIC.decode()} (it starts with {magic!r})")
    if version != PROTOCOL_VERSION:
        raise ResultsError(f"the results file has protocol version {version}; this suite reads {PROTOCOL_VERSION}")
    rest = data[_RESULT_HEADER.size:]
    if status != 0:
        if count != 0 or rest:
            raise ResultsError(f"the results file has status {status} but carries data")
        return status, None, None
    if count != n:
        raise ResultsError(f"the results file holds {count} elements, the case has {n}")
    el = _ELEMENT[dtype]
    nbytes = n * el.itemsize
    if len(rest) < nbytes:
        raise ResultsError(f"the results file is truncated: {len(rest)} of {nbytes} bytes of dx1")
    out = np.frombuffer(rest[:nbytes], dtype=el).astype(el.newbyteorder("="))
    tail = rest[nbytes:]
    if not tail:
        return 0, out, None
    if len(tail) == _MEMORY_REPORT.size and tail[:4] == MEMORY_MAGIC:
        return 0, out, _MEMORY_REPORT.unpack(tail)[1]
    if tail[:4] == MEMORY_MAGIC:
        raise ResultsError(f"the results file's memory report is {len(tail)} bytes, not {_MEMORY_REPORT.size}")
    raise ResultsError(f"the results file has {len(tail)} trailing bytes after dx1")


def _write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _tail(path: str, limit: int = 600) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            text = f.read().decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
    return ("..." if size > limit else "") + text


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the command and everything it started (its own process group)."""
    try:
        if sys.platform != "win32":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


class SimulatorAdapter(Adapter):
    """Runs each case as one command: a harness linked with the library, under a simulator.

    ``template`` is split like a shell would (:func:`shlex.split`) but run without
    one; in each argument ``{case}`` and ``{result}`` are replaced by the paths of
    the case file and the results file (other braces are left alone). Both must
    appear. ``timeout`` is in seconds per case.
    """

    capabilities = Capabilities(isolated=True)

    def __init__(self, template: str, timeout: float = 30.0):
        try:
            argv = shlex.split(template)
        except ValueError as exc:
            raise AdapterError(f"sim: cannot split the command template {template!r}: {exc}") from None
        missing = [p for p in ("{case}", "{result}") if not any(p in a for a in argv)]
        if not argv or missing:
            raise AdapterError(f"sim: the command template {template!r} must contain {{case}} and {{result}} "
                               f"(missing: {', '.join(missing) or 'the command'}), e.g. "
                               "'sim:qemu-aarch64 ./harness {case} {result}'")
        if not timeout > 0:
            raise AdapterError(f"sim: the timeout must be positive, not {timeout}")
        self.template, self.argv, self.timeout = template, argv, float(timeout)
        self.name = f"sim:{template}"

    def command(self, case_path: str, result_path: str) -> list[str]:
        """The argument list for one case."""
        return [a.replace("{case}", case_path).replace("{result}", result_path) for a in self.argv]

    def restart(self) -> bool:
        """Every case is its own process already: nothing carries over from one call to the next."""
        self.calls_made = 0
        return True

    def run_case(self, case: Case) -> Outcome:
        if case.call_length > case.n:
            return Outcome("error", detail=f"length {case.call_length} exceeds the {case.n} elements of the "
                                           "case's arrays: the harness would run past them")
        try:
            data = encode_case(case)
        except ValueError as exc:
            return Outcome("error", detail=f"cannot encode the case: {exc}")
        workdir = tempfile.mkdtemp(prefix="sl1sim-")
        try:
            return self._run_in(workdir, case, data)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _run_in(self, workdir: str, case: Case, data: bytes) -> Outcome:
        case_path = os.path.join(workdir, "case.sl1c")
        result_path = os.path.join(workdir, "result.sl1r")
        out_path, err_path = os.path.join(workdir, "stdout"), os.path.join(workdir, "stderr")
        _write_atomic(case_path, data)
        argv = self.command(case_path, result_path)
        start = time.perf_counter()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        start_new_session=(sys.platform != "win32"))
            except OSError as exc:
                return Outcome("error", detail=f"cannot run {argv[0]!r}: {exc.strerror or exc}")
            try:
                rc = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                proc.wait()
                return Outcome("timeout", detail=f"no exit within {self.timeout:g} s; killed",
                               seconds=time.perf_counter() - start)
            finally:
                if proc.returncode is None:  # interrupted (KeyboardInterrupt): leave nothing behind
                    _kill_group(proc)
                    proc.wait()
        seconds = time.perf_counter() - start
        if rc < 0:
            return Outcome("crash", detail=_signal_name(-rc), seconds=seconds)
        if rc != 0:
            said = _tail(err_path) or _tail(out_path)
            hint = f" (a shell's report of {_signal_name(rc - 128)}?)" if 128 < rc < 128 + 65 else ""
            return Outcome("error", detail=f"exit status {rc}{hint}" + (f": {said}" if said else ""),
                           seconds=seconds)
        if not os.path.exists(result_path):
            said = _tail(err_path)
            return Outcome("error", detail="the command exited 0 but wrote no results file"
                                           + (f": {said}" if said else ""), seconds=seconds)
        try:
            with open(result_path, "rb") as f:
                raw = f.read()
            status, out, mem = decode_results(raw, case.dtype, case.n)
        except (OSError, ResultsError) as exc:
            return Outcome("error", detail=str(exc), seconds=seconds)
        if status != 0:
            what = STATUS.get(status, "the harness could not make the call")
            return Outcome("unsupported" if status in _UNSUPPORTED_STATUSES else "error",
                           detail=f"harness status {status}: {what}", seconds=seconds)
        outcome = Outcome("ok", out=out.astype(case.format.uint), seconds=seconds)
        if mem is not None:
            outcome.wrote_outside = bool(mem & 3)
            outcome.inputs_changed = tuple(MEMORY_FLAGS[b] for b in (4, 8, 16) if mem & b)
            faults = [MEMORY_FLAGS[b] for b in (1, 2) if mem & b]
            if faults:
                outcome.fault = " and ".join(faults) + " (the harness's guard zone changed)"
        return outcome

    def describe(self) -> dict:
        return {**super().describe(), "template": self.template, "timeout_s": self.timeout,
                "protocol_version": PROTOCOL_VERSION}


def host_template(bug: "int | str | None" = None, cc: "str | None" = None, out_dir=None) -> str:
    """The ``sim:`` template of the harness linked with the sample, built for this machine.

    Builds (or reuses from the cache) the harness with
    :func:`sl1conf.adapters.sample.build_harness`; ``bug`` selects one of the sample's
    deliberate defects.
    """
    from .sample import build_harness, harness_template
    return harness_template(build_harness(cc=cc, out_dir=out_dir, bug=bug))

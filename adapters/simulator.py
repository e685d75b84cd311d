"""Implementations behind a simulator or a board, through case files (``sim:<command template>``).

The adapter writes a case file, runs a user-supplied command (no shell) with ``{case}``
and ``{result}`` replaced by the two file paths, and reads the results file the command
leaves behind. Protocol version 2 puts many cases in one batch file and reads one result
record per case, flushed by the harness as each call returns, so one process start serves
hundreds of cases and a crash or hang still names its own case (the cases after it go to a
new run); version 1, one case per run, is used for harnesses that do not answer the
version 2 question (:meth:`SimulatorAdapter.protocol`). The protocol is
documented, versioned and language neutral (docs/simulator-protocol.md); the suite
ships a C harness for it (``sim/harness.c``, built by
:func:`sl1conf.adapters.sample.build_harness`) that the user links with the library
under test and runs under the simulator of their choice::

    sl1conf ... --impl 'sim:qemu-aarch64 /path/to/harness {case} {result}'
    sl1conf ... --impl 'sim:[batch=128,timeout=60] qemu-aarch64 /path/to/harness {case} {result}'

The command runs in its own process group, so a hang is killed with everything it
started (``timeout``, per case: in version 2, since the previous record); death by a
signal is a ``crash``; a nonzero exit or a missing, malformed or truncated results file
(record) is an ``error`` whose detail names the problem.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np

from .base import Adapter, AdapterError, Capabilities, Case, Outcome

__all__ = [
    "PROTOCOL_VERSION", "BATCH_VERSION", "CASE_MAGIC", "RESULT_MAGIC", "MEMORY_MAGIC", "BATCH_MAGIC", "STREAM_MAGIC",
    "STATUS", "MEMORY_FLAGS", "MEMORY_NOTES", "encode_case", "encode_batch", "decode_results", "decode_records", "ResultsError",
    "SimulatorAdapter", "host_template", "named_files",
]

PROTOCOL_VERSION = 1  # one case per run (every harness speaks it)
BATCH_VERSION = 2  # many cases per run, one results record per case (docs/simulator-protocol.md)
CASE_MAGIC = b"SL1C"
RESULT_MAGIC = b"SL1R"
MEMORY_MAGIC = b"SL1M"
BATCH_MAGIC = b"SL1B"
STREAM_MAGIC = b"SL1S"
_CASE_HEADER = struct.Struct("<4sHBBiIII")  # magic, version, dtype, variant, length, n, beta, core_mask
_RESULT_HEADER = struct.Struct("<4sHHI")  # magic, version, status, n
_MEMORY_REPORT = struct.Struct("<4sI")  # magic, flags
_BATCH_HEADER = struct.Struct("<4sHHII")  # magic, version, reserved, count, reserved
_RECORD_HEADER = struct.Struct("<4sHHIIII")  # magic, version, status, index, n, has report, memory flags
BATCH_CASES, BATCH_MIB = 512, 64  # default bounds of one batch (cases, MiB of batch file)

STATUS = {
    0: "ok",
    1: "the harness was built without this dtype",
    2: "the harness was built without this variant",
    3: "length exceeds the number of elements: the harness did not make the call",
}
"""Results-file status values (anything else nonzero: the harness could not call)."""
_UNSUPPORTED_STATUSES = (1, 2)

MEMORY_FLAGS = {
    1: "wrote before the start of dx1",
    2: "wrote past the end of dx1",
    4: "dy",
    8: "x1",
    16: "x2",
    32: "wrote before the start of dy",
    64: "wrote past the end of dy",
    128: "wrote before the start of x1",
    256: "wrote past the end of x1",
    512: "wrote before the start of x2",
    1024: "wrote past the end of x2",
}
"""Bits of the optional memory report: writes into the guard zones around dx1 (1, 2) and
around each input (32 to 1024, newer harnesses), and inputs changed (4, 8, 16)."""
_WRITE_FLAGS = (1, 2, 32, 64, 128, 256, 512, 1024)
_INPUT_FLAGS = (4, 8, 16)

GUARD_BYTES = 64  # the bundled harness's guard zones, before and after every array
MEMORY_NOTES = (
    ("writes-outside",
     "observed by the harness's memory report (SL1M): 64-byte guard zones before and after dx1 (filled with 0xA5 "
     "bytes) and before and after dy, x1 and x2 (filled with signalling NaNs), compared after every call; a write "
     "farther away, or of the fill's own bytes, is not seen"),
    ("reads-outside",
     "not observed by this harness: a harness has no guard pages (portable C on a simulator or a board), and a "
     "read outside an array changes nothing the harness can compare; the guard zones around dy, x1 and x2 hold "
     "signalling NaNs, so a read that reaches a result shows there, as a wrong result (R01, R04), not here; "
     "reads are observed by the ctypes adapter's guard pages"),
    ("inputs-changed",
     "observed by the harness's memory report (SL1M): copies of dy, x1 and x2 taken before every call are "
     "compared with them after it"),
)
"""What the memory report of a harness observes, and what it does not (the report prints these)."""
NO_REPORT_NOTE = ("not observed by this harness: it sent no memory report (SL1M) with its results, so writes "
                  "outside dx1 and changed inputs are not seen")

_ELEMENT = {"fp16": np.dtype("<u2"), "fp32": np.dtype("<u4")}
_DTYPE_CODE = {"fp16": 16, "fp32": 32}


class ResultsError(ValueError):
    """A results file that does not follow the protocol (the message names the problem)."""


def encode_case(case: Case, version: int = PROTOCOL_VERSION) -> bytes:
    """The case file of ``case`` (protocol version 1), or its record in a batch (version 2)."""
    length = case.call_length
    if not -(1 << 31) <= length < (1 << 31):
        raise ValueError(f"length {length} does not fit the API's int (i32)")
    if case.n >= 1 << 32:
        raise ValueError(f"{case.n} elements do not fit the case file's u32 count")
    fmt = case.format
    if not 0 <= case.beta < (1 << fmt.bits):
        raise ValueError(f"beta bit pattern {case.beta:#x} does not fit {fmt.name}")
    header = _CASE_HEADER.pack(CASE_MAGIC, version, _DTYPE_CODE[case.dtype], ord(case.variant),
                               length, case.n, case.beta, case.core_mask & 0xFFFFFFFF)
    el = _ELEMENT[case.dtype]
    arrays = (case.dy, case.x1, case.x2, case.initial_out())
    return header + b"".join(np.ascontiguousarray(a).astype(el).tobytes() for a in arrays)


def encode_batch(cases: list) -> bytes:
    """The batch file of ``cases`` (protocol version 2): a header, then per case its byte count
    (u32) and its case record (a version 1 case file with version 2 in its header)."""
    records = [encode_case(c, BATCH_VERSION) for c in cases]
    return _BATCH_HEADER.pack(BATCH_MAGIC, BATCH_VERSION, 0, len(cases), 0) + b"".join(
        struct.pack("<I", len(r)) + r for r in records)


def decode_records(data: bytes, cases: list) -> tuple[list, "str | None"]:
    """The complete result records at the start of a version 2 results file, and the problem
    that stopped the reading (None: the data ends at a record boundary, perhaps mid-write). Each
    record is (status, dx1 bits or None, memory flags or None); records must come in order."""
    records: list = []
    problem, _ = _decode_from(data, cases, records, 0)
    return records, problem


def _decode_from(data, cases: list, records: list, at: int) -> tuple:
    """Append to ``records`` the complete records of ``data`` from offset ``at`` (0: the file's
    start, header included): (the problem that stopped the reading or None, the offset reached),
    so that a growing file is read once, not from its start at every look."""
    if at == 0:
        if len(data) < _BATCH_HEADER.size:
            return None, 0
        magic, version, _, count, _ = _BATCH_HEADER.unpack_from(data)
        if magic != STREAM_MAGIC or version != BATCH_VERSION:
            return f"the results file does not start with a version 2 {STREAM_MAGIC.decode()} header", 0
        if count != len(cases):
            return f"the results file announces {count} cases, the batch has {len(cases)}", 0
        at = _BATCH_HEADER.size
    while len(records) < len(cases) and len(data) - at >= _RECORD_HEADER.size:
        magic, version, status, index, n, has_report, flags = _RECORD_HEADER.unpack_from(data, at)
        case = cases[len(records)]
        if magic != RESULT_MAGIC or version != BATCH_VERSION:
            return f"malformed result record (no version 2 {RESULT_MAGIC.decode()} header)", at
        if index != len(records):
            return f"result record {index} where record {len(records)} was due", at
        if status != 0:
            if n or has_report:
                return f"result record with status {status} carries data", at
            records.append((status, None, None))
            at += _RECORD_HEADER.size
            continue
        if n != case.n:
            return f"the result record holds {n} elements, the case has {case.n}", at
        el = _ELEMENT[case.dtype]
        end = at + _RECORD_HEADER.size + n * el.itemsize
        if len(data) < end:
            return None, at  # still being written (or cut short: the caller decides)
        dx1 = np.frombuffer(bytes(data[at + _RECORD_HEADER.size:end]), dtype=el).astype(el.newbyteorder("="))
        records.append((0, dx1, flags if has_report else None))
        at = end
    if len(records) == len(cases) and at != len(data):
        return f"the results file has {len(data) - at} trailing bytes after the last record", at
    return None, at


class _Records:
    """The records of a results file being written, read as it grows (each byte read once)."""

    def __init__(self, path: str, cases: list):
        self.path, self.cases, self.data, self.at = path, cases, bytearray(), 0
        self.records, self.problem = [], None

    def update(self) -> None:
        if self.problem:
            return
        try:
            with open(self.path, "rb") as f:
                f.seek(len(self.data))
                more = f.read()
        except FileNotFoundError:
            return
        if more or not self.at:
            self.data += more
            self.problem, self.at = _decode_from(self.data, self.cases, self.records, self.at)


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


def _startable(program: str) -> None:
    """AdapterError unless ``program`` (the template's first word) names a file this process can
    execute: a command that cannot start at all is bad usage, not a failing implementation."""
    if "{case}" in program or "{result}" in program:
        raise AdapterError(f"sim: the command template starts with {program!r}: name the program first")
    if os.sep in program or (os.altsep and os.altsep in program):
        if not os.path.isfile(program):
            raise AdapterError(f"sim: cannot start {program!r}: no such file")
        if not os.access(program, os.X_OK):
            raise AdapterError(f"sim: cannot start {program!r}: not executable")
    elif shutil.which(program) is None:
        raise AdapterError(f"sim: cannot start {program!r}: no such command on PATH")


def _which(cases: list, k: int) -> str:
    """The case a batch's run stopped on, as a report names it: its vector case id (``case
    16.6``), or where it has none, its place in the batch."""
    return f"case {cases[k].id}" if cases[k].id else f"case {k + 1} of a batch of {len(cases)}"


def _refusal(code: int, results: "bytes | None", said: str) -> bool:
    """Whether a command's answer to the protocol question is a version 1 harness's refusal of the
    batch file (docs/simulator-protocol.md, "Asking"): exit status 2, no results file, and stderr
    naming the case file it could not read (the bundled harness built before version 2: "malformed
    case file: shorter than the 24-byte header", or "no SL1C magic")."""
    text = said.lower()
    return code == 2 and not results and (CASE_MAGIC.decode().lower() in text or "case file" in text)


class SimulatorAdapter(Adapter):
    """Runs each case as one command: a harness linked with the library, under a simulator.

    ``template`` is split like a shell would (:func:`shlex.split`) but run without
    one; in each argument ``{case}`` and ``{result}`` are replaced by the paths of
    the case file and the results file (other braces are left alone). Both must
    appear. ``timeout`` is in seconds per case.
    """

    capabilities = Capabilities(isolated=True, observes=("writes-outside", "inputs-changed"), notes=MEMORY_NOTES,
                                independent_runs=True)
    """Writes outside and changed inputs are observed through the harness's memory report, in the
    calls whose results carry one (a harness that sends none observes nothing: the requirements
    say so); reads outside are never observed (:data:`MEMORY_NOTES`). Every run starts the command
    afresh (per batch, or per case in version 1), so runs are independent of each other."""
    unreported_note = NO_REPORT_NOTE  # the memory requirements' entry when no result carried a report

    def __init__(self, template: str, timeout: float = 30.0, *, batch: int = BATCH_CASES,
                 batch_mib: float = BATCH_MIB, protocol: "int | None" = None):
        given = template
        options, template = _options(template)
        timeout = options.get("timeout", timeout)
        batch, batch_mib = int(options.get("batch", batch)), options.get("batch_mib", batch_mib)
        protocol = int(options["protocol"]) if "protocol" in options else protocol
        if batch < 1 or not batch_mib > 0:
            raise AdapterError(f"sim: batch must be at least 1 case and batch_mib positive, not {batch} and {batch_mib}")
        if protocol not in (None, PROTOCOL_VERSION, BATCH_VERSION):
            raise AdapterError(f"sim: protocol must be {PROTOCOL_VERSION} or {BATCH_VERSION}, not {protocol}")
        self.batch, self.batch_bytes, self._protocol = batch, int(batch_mib * (1 << 20)), protocol
        self._interrupted = False
        self.commands_run = 0  # starts of the command (a board's loads): the protocol question, batches, cases
        self.unbuilt: dict = {}  # (dtype, variant) -> the first answer "built without it", and how many calls it saved
        self.answered: dict = {}  # dtype -> calls of it the harness made (answered with dx1)
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
        _startable(argv[0])
        self.template, self.argv, self.timeout = template, argv, float(timeout)
        self.name = f"sim:{given}"

    def protocol(self) -> int:
        """The protocol the command speaks, asked once (``protocol=`` in the name decides without
        asking): version 2 when it answers an empty batch file with an empty version 2 results
        file and exit 0; version 1 only on a version 1 harness's refusal of it (:func:`_refusal`).
        Anything else is no answer, and the suite never guesses: a command that cannot start
        (qemu-user without the target's sysroot), dies of a signal, hangs or says anything else
        is an AdapterError naming the command and what it said, before any case is sent."""
        if self._protocol is None:
            self._protocol = self._ask()
        return self._protocol

    def _ask(self) -> int:
        workdir = tempfile.mkdtemp(prefix="sl1sim-")
        try:
            case_path, result_path = os.path.join(workdir, "batch.sl1b"), os.path.join(workdir, "result.sl1s")
            out_path, err_path = os.path.join(workdir, "stdout"), os.path.join(workdir, "stderr")
            _write_atomic(case_path, encode_batch([]))
            argv = self.command(case_path, result_path)
            asked = f"sim: {self.template} gave no answer to the protocol question (an empty version 2 batch file)"
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                try:
                    # its own process group, killed whole on a timeout (a board script's ssh and
                    # children too), as every batch's run is
                    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                            start_new_session=(sys.platform != "win32"))
                except OSError as exc:
                    raise AdapterError(f"sim: cannot start {argv[0]!r}: {exc.strerror or exc}") from None
                self.commands_run += 1
                try:
                    code = proc.wait(timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    _kill_group(proc)
                    proc.wait()
                    raise AdapterError(f"{asked}: no exit within {self.timeout:g} s; killed") from None
                finally:
                    if proc.returncode is None:  # interrupted (KeyboardInterrupt): leave nothing behind
                        _kill_group(proc)
                        proc.wait()
            said = " | ".join(_tail(err_path).splitlines()[-3:]) or " | ".join(_tail(out_path).splitlines()[-3:])
            try:
                with open(result_path, "rb") as f:
                    results = f.read()
            except FileNotFoundError:
                results = None
            if code == 0 and results == _BATCH_HEADER.pack(STREAM_MAGIC, BATCH_VERSION, 0, 0, 0):
                return BATCH_VERSION
            if _refusal(code, results, said):
                return PROTOCOL_VERSION
            what = (f"killed by {_signal_name(-code)}" if code < 0 else f"exit status {code}" if code else "exit 0")
            if code >= 0 and results:
                what += f", a results file of {len(results)} bytes that is no empty version 2 one"
            elif code == 0:
                what += " without a results file"
            raise AdapterError(f"{asked}: {what}" + (f": {said}" if said else ", nothing on stderr")
                               + f" (a version 1 harness refuses it with exit status 2 naming the {CASE_MAGIC.decode()}"
                               " case file on stderr; protocol=1 in the name skips the question)")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def run(self, cases) -> list:
        """Version 2: the supported cases in batches (bounded by ``batch`` cases and
        ``batch_mib``), one run of the command per batch; a case the run crashed or hung on is
        reported as such and the next run starts after it. Version 1: one run per case."""
        if self.protocol() != BATCH_VERSION:
            return super().run(cases)
        out: list = [None] * len(cases)
        todo = []
        for i, c in enumerate(cases):
            if not self.supports(c):
                out[i] = super().run([c])[0]  # the base's "unsupported" answer
                continue
            self.calls_made += 1
            early = self._refuse(c) or self._not_built(c)
            if early is not None:
                out[i] = self._observed(c, early)
            else:
                todo.append((i, c, 4 + _CASE_HEADER.size + 4 * c.n * _ELEMENT[c.dtype].itemsize))  # its record's bytes
        while todo:
            batch, size = [], _BATCH_HEADER.size
            while todo and len(batch) < self.batch and (not batch or size + todo[0][2] <= self.batch_bytes):
                size += todo[0][2]
                batch.append(todo.pop(0))
            answered = self._run_batch([c for _, c, _ in batch])
            for (i, c, _), o in zip(batch, answered):
                out[i] = self._observed(c, self._note_unbuilt(c, o))
            todo = batch[len(answered):] + todo  # after a crash or hang: the cases it did not reach
            if self.unbuilt:  # calls of a dtype and variant the harness lacks: no run for them
                left = []
                for i, c, size in todo:
                    skip = self._not_built(c)
                    if skip is None:
                        left.append((i, c, size))
                    else:
                        out[i] = self._observed(c, skip)
                todo = left
        return out

    def _refuse(self, case: Case) -> "Outcome | None":
        """The error for a case the adapter does not send (its encoding fails, or length > n)."""
        if case.call_length > case.n:
            return Outcome("error", detail=f"length {case.call_length} exceeds the {case.n} elements of the "
                                           "case's arrays: the harness would run past them")
        if case.n >= 1 << 32:  # what encode_case refuses that Case itself allows
            return Outcome("error", detail=f"cannot encode the case: {case.n} elements do not fit the case "
                                           "file's u32 count")
        return None

    def _run_batch(self, cases: list) -> list:
        """Outcomes of the first cases of ``cases`` that one run of the command answered, and of
        the case it stopped on (crash, hang, exit, malformed record): at least one outcome."""
        workdir = tempfile.mkdtemp(prefix="sl1sim-")
        try:
            case_path, result_path = os.path.join(workdir, "batch.sl1b"), os.path.join(workdir, "result.sl1s")
            out_path, err_path = os.path.join(workdir, "stdout"), os.path.join(workdir, "stderr")
            _write_atomic(case_path, encode_batch(cases))
            argv = self.command(case_path, result_path)
            start = last = time.perf_counter()
            reader, stamps, hung = _Records(result_path, cases), [], False
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                try:
                    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                            start_new_session=(sys.platform != "win32"))
                except OSError as exc:
                    return [Outcome("error", detail=f"cannot run {argv[0]!r}: {exc.strerror or exc}")]
                self.commands_run += 1
                try:
                    while True:
                        finished = proc.poll() is not None
                        reader.update()
                        records, problem = reader.records, reader.problem
                        now = time.perf_counter()
                        stamps += [now] * (len(records) - len(stamps))
                        if len(stamps) > 0 and stamps[-1] > last:
                            last = stamps[-1]
                        if finished or problem or len(records) == len(cases):
                            break
                        if now - last > self.timeout:
                            hung = True
                            break
                        if self._interrupted:  # the caller's thread was interrupted: the finally below kills it
                            raise KeyboardInterrupt
                        time.sleep(0.002 if now - start < 0.1 else 0.01)
                    if proc.poll() is None and (hung or problem):
                        _kill_group(proc)
                    rc = proc.wait(timeout=None if hung or problem else self.timeout)
                except subprocess.TimeoutExpired:  # every record in, but the command does not exit
                    _kill_group(proc)
                    rc = proc.wait()
                finally:
                    if proc.returncode is None:  # interrupted (KeyboardInterrupt): leave nothing behind
                        _kill_group(proc)
                        proc.wait()
            if not hung and not problem:
                reader.update()  # what came after the last look
                records, problem = reader.records, reader.problem
                stamps += [time.perf_counter()] * (len(records) - len(stamps))
            outcomes = []
            previous = start
            for case, (status, dx1, mem), t in zip(cases, records, stamps):
                outcomes.append(_outcome(case, status, dx1, mem, t - previous))
                previous = t
            if len(outcomes) == len(cases):
                return outcomes
            seconds = time.perf_counter() - previous
            which = _which(cases, len(outcomes))
            if hung:
                stop = Outcome("timeout", detail=f"no result within {self.timeout:g} s ({which}); killed",
                               seconds=seconds)
            elif problem:
                stop = Outcome("error", detail=f"{problem} ({which})", seconds=seconds)
            elif rc < 0:
                stop = Outcome("crash", detail=f"{_signal_name(-rc)} ({which})", seconds=seconds)
            else:
                said = _tail(err_path) or _tail(out_path)
                hint = f" (a shell's report of {_signal_name(rc - 128)}?)" if 128 < rc < 128 + 65 else ""
                stop = Outcome("error", detail=(f"exit status {rc}{hint}" if rc else "the command exited 0")
                               + f" before the result of {which}"
                               + (f": {said}" if said else ""), seconds=seconds)
            return outcomes + [stop]
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


    def interrupt(self) -> None:
        """The batch in progress (in another thread) is killed with everything it started."""
        self._interrupted = True

    def command(self, case_path: str, result_path: str) -> list[str]:
        """The argument list for one case."""
        return [a.replace("{case}", case_path).replace("{result}", result_path) for a in self.argv]

    def restart(self) -> bool:
        """Every run() starts the command afresh (version 1: every case; version 2: every batch,
        whose cases share one process, as calls on a board do): nothing carries over from calls
        made before it."""
        self.calls_made = 0
        return True

    def _note_unbuilt(self, case: Case, o: Outcome) -> Outcome:
        """Remember a harness built without the case's dtype or variant (its status 1 or 2), and
        the dtypes whose calls it made (the report's ``answered_dtypes``)."""
        if o.status == "unsupported":
            self.unbuilt.setdefault((case.dtype, case.variant), [case.id, o.detail, 0])
        elif o.status == "ok":
            self.answered[case.dtype] = self.answered.get(case.dtype, 0) + 1
        return o

    def _not_built(self, case: Case) -> "Outcome | None":
        """After the harness said it was built without a dtype or variant, the calls of it left are
        not made (each would cost a run of the command, minutes on a board, to say the same): they
        are answered unsupported, naming the case that said so."""
        seen = self.unbuilt.get((case.dtype, case.variant))
        if seen is None:
            return None
        seen[2] += 1
        return Outcome("unsupported", detail=f"not run: the harness answered case {seen[0]} \"{seen[1]}\"")

    def run_case(self, case: Case) -> Outcome:
        """Version 1: one run of the command for one case."""
        if self._interrupted:  # the caller's thread was interrupted: no more runs
            raise KeyboardInterrupt
        early = self._refuse(case) or self._not_built(case)
        if early is not None:
            return early
        data = encode_case(case)
        workdir = tempfile.mkdtemp(prefix="sl1sim-")
        try:
            return self._note_unbuilt(case, self._run_in(workdir, case, data))
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
            self.commands_run += 1
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
        return _outcome(case, status, out, mem, seconds)

    def describe(self) -> dict:
        """Identity for reports: besides the template, the SHA-256 of every file on this host the
        command names (the harness, the simulator: two libraries linked into two harnesses give two
        reports that differ) and the dtypes whose calls the harness made."""
        info = {**super().describe(), "template": self.template, "timeout_s": self.timeout,
                "protocol_version": self.protocol(), "commands_run": self.commands_run,
                "files": named_files(self.argv), "answered_dtypes": sorted(self.answered)}
        if self.protocol() == BATCH_VERSION:
            info["batch"] = {"cases": self.batch, "bytes": self.batch_bytes}
        return info


def named_files(argv: list) -> list:
    """{path, sha256} of every regular file an argument of ``argv`` names (the program found on
    PATH too; the placeholders' files, made per run, are not), in the command's order."""
    out, seen = [], set()
    for k, arg in enumerate(argv):
        if "{case}" in arg or "{result}" in arg:
            continue
        path = shutil.which(arg) if k == 0 and os.sep not in arg else arg
        if not path or path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        out.append({"path": arg if k or os.sep in arg else path, "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()})
    return out


def _options(template: str) -> tuple:
    """(options, the command template) of ``[key=value,...] template``: the adapter's settings,
    given in the implementation's name (``sim:[batch=64,timeout=120] qemu-aarch64 ...``)."""
    text = template.lstrip()
    if not text.startswith("["):
        return {}, template
    end = text.find("]")
    if end < 0:
        raise AdapterError(f"sim: the options {text!r} have no closing ']'")
    options = {}
    for item in filter(None, (p.strip() for p in text[1:end].split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in ("batch", "batch_mib", "timeout", "protocol"):
            raise AdapterError(f"sim: unknown option {item!r}: the options are batch=CASES, batch_mib=MIB, "
                               "timeout=SECONDS and protocol=1|2")
        try:
            options[key] = float(value)
        except ValueError:
            raise AdapterError(f"sim: option {key} needs a number, not {value!r}") from None
    return options, text[end + 1:].strip()


def _outcome(case: Case, status: int, out, mem, seconds: float) -> Outcome:
    """The Outcome of one answered case (a version 1 results file or a version 2 record)."""
    if status != 0:
        what = STATUS.get(status, "the harness could not make the call")
        return Outcome("unsupported" if status in _UNSUPPORTED_STATUSES else "error",
                       detail=f"harness status {status}: {what}", seconds=seconds)
    outcome = Outcome("ok", out=out.astype(case.format.uint), seconds=seconds)
    if mem is not None:
        outcome.wrote_outside = any(mem & b for b in _WRITE_FLAGS)
        outcome.inputs_changed = tuple(MEMORY_FLAGS[b] for b in _INPUT_FLAGS if mem & b)
        faults = [MEMORY_FLAGS[b] for b in _WRITE_FLAGS if mem & b]
        if faults:
            outcome.fault = " and ".join(faults) + " (the harness's guard zone changed)"
    return outcome


def host_template(bug: "int | str | None" = None, cc: "str | None" = None, out_dir=None) -> str:
    """The ``sim:`` template of the harness linked with the sample, built for this machine.

    Builds (or reuses from the cache) the harness with
    :func:`sl1conf.adapters.sample.build_harness`; ``bug`` selects one of the sample's
    deliberate defects.
    """
    from .sample import build_harness, harness_template
    return harness_template(build_harness(cc=cc, out_dir=out_dir, bug=bug))

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
(record) is an ``error`` whose detail names the problem. The files themselves, bytes in and
out, are :mod:`sl1conf.adapters.simfiles`.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .base import Adapter, AdapterError, Capabilities, Case, Outcome
from .simfiles import (
    BATCH_HEADER_BYTES, BATCH_MAGIC, BATCH_VERSION, CASE_MAGIC, EMPTY_RESULTS, INPUT_FLAGS, MEMORY_FLAGS,
    MEMORY_MAGIC, PROTOCOL_VERSION, RESULT_MAGIC, STATUS, STREAM_MAGIC, UNSUPPORTED_STATUSES, WRITE_FLAGS,
    ProtocolError, ResultsReader, decode_records, decode_results, encode_batch, encode_case, record_bytes,
)

__all__ = [
    "PROTOCOL_VERSION", "BATCH_VERSION", "CASE_MAGIC", "RESULT_MAGIC", "MEMORY_MAGIC", "BATCH_MAGIC", "STREAM_MAGIC",
    "STATUS", "MEMORY_FLAGS", "MEMORY_NOTES", "encode_case", "encode_batch", "decode_results", "decode_records", "ProtocolError",
    "SimulatorAdapter", "host_template", "named_files",
]

BATCH_CASES, BATCH_MIB = 512, 64  # default bounds of one batch (cases, MiB of batch file)

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


class _NotStarted(Exception):
    """The command could not be started: its message is ``'program': why`` (Popen's OSError)."""


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
            try:
                code = self._spawn(argv, out_path, err_path)
            except _NotStarted as exc:
                raise AdapterError(f"sim: cannot start {exc}") from None
            if code is None:
                raise AdapterError(f"{asked}: no exit within {self.timeout:g} s; killed")
            said = " | ".join(_tail(err_path).splitlines()[-3:]) or " | ".join(_tail(out_path).splitlines()[-3:])
            try:
                with open(result_path, "rb") as f:
                    results = f.read()
            except FileNotFoundError:
                results = None
            if code == 0 and results == EMPTY_RESULTS:
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
                todo.append((i, c, record_bytes(c)))
        while todo:
            batch, size = [], BATCH_HEADER_BYTES
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
            reader, stamps, hung = ResultsReader(result_path, cases), [], False

            def follow(proc: subprocess.Popen) -> bool:
                """Read the records as they come until the command ends, every record is in or
                one is malformed, or none came within the timeout: whether to kill it now."""
                nonlocal last, hung
                while True:
                    finished = proc.poll() is not None
                    reader.update()
                    now = time.perf_counter()
                    stamps.extend([now] * (len(reader.records) - len(stamps)))
                    if len(stamps) > 0 and stamps[-1] > last:
                        last = stamps[-1]
                    if finished or reader.problem or len(reader.records) == len(cases):
                        return bool(reader.problem)
                    if now - last > self.timeout:
                        hung = True
                        return True
                    if self._interrupted:  # the caller's thread was interrupted: _spawn kills it
                        raise KeyboardInterrupt
                    time.sleep(0.002 if now - start < 0.1 else 0.01)

            try:
                # None: every record in, but the command did not exit (killed); the outcomes are all there
                rc = self._spawn(argv, out_path, err_path, follow)
            except _NotStarted as exc:
                return [Outcome("error", detail=f"cannot run {exc}")]
            records, problem = reader.records, reader.problem
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

    def _spawn(self, argv: list, out_path: str, err_path: str, follow=None) -> "int | None":
        """Run ``argv`` once (the protocol question, a batch, a case): no stdin, stdout and stderr
        to the two files, in its own process group, so that a hang is killed whole (a board
        script's ssh and children too). ``follow(proc)``, while it runs, says whether to kill it
        now; then, or without one, it has :attr:`timeout` seconds to exit. Its exit status, or
        None when it did not exit in time (killed); :class:`_NotStarted` when it cannot start.
        Interrupted (KeyboardInterrupt), it leaves nothing behind."""
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        start_new_session=(sys.platform != "win32"))
            except OSError as exc:
                raise _NotStarted(f"{argv[0]!r}: {exc.strerror or exc}") from None
            self.commands_run += 1
            try:
                kill = follow is not None and follow(proc)
                if kill and proc.poll() is None:
                    _kill_group(proc)
                return proc.wait(timeout=None if kill else self.timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                proc.wait()
                return None
            finally:
                if proc.returncode is None:  # interrupted (KeyboardInterrupt): leave nothing behind
                    _kill_group(proc)
                    proc.wait()

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
        try:
            rc = self._spawn(argv, out_path, err_path)
        except _NotStarted as exc:
            return Outcome("error", detail=f"cannot run {exc}")
        seconds = time.perf_counter() - start
        if rc is None:
            return Outcome("timeout", detail=f"no exit within {self.timeout:g} s; killed", seconds=seconds)
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
        except (OSError, ProtocolError) as exc:
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
        return Outcome("unsupported" if status in UNSUPPORTED_STATUSES else "error",
                       detail=f"harness status {status}: {what}", seconds=seconds)
    outcome = Outcome("ok", out=out.astype(case.format.uint), seconds=seconds)
    if mem is not None:
        outcome.wrote_outside = any(mem & b for b in WRITE_FLAGS)
        outcome.inputs_changed = tuple(MEMORY_FLAGS[b] for b in INPUT_FLAGS if mem & b)
        faults = [MEMORY_FLAGS[b] for b in WRITE_FLAGS if mem & b]
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

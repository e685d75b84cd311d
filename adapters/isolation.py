"""A worker process that calls a C implementation of the API on guarded buffers.

The implementation under test is hostile until proven otherwise: it runs in a
separate process (a fresh interpreter running this module, so nothing of the
suite's state is shared and the caller's script is never re-imported), one case
per request over a pair of pipes. A crash (segfault, abort, exit) or a hang (past
the per-call timeout) becomes an :class:`~sl1conf.adapters.base.Outcome` for
that case; the worker is replaced and the run goes on.

Before each call the worker writes where the guard pages of that call lie into
the staging memory's header, so a fault reported by the shim's signal handler
(address, read or write) is named after the array it hit: "write past the end
of dx1".

The arrays travel through a staging file both processes map (:class:`Stage`), not
through the pipe (pickling four arrays of a million elements each way cost more than
the call): the pipe carries a small request and answer. In the worker the staging
mapping is inaccessible (``mprotect``) while the library runs, so a stray write into it
faults like one into a guard page instead of changing what the parent reads back.

A call must have finished when it returns. After each call the worker keeps dx1's mapping out
of reuse for ``WATCH_S`` seconds with a copy of what the call returned (:class:`_Watch`); a
mapping that changed in that time was written after the call returned (a core or thread the
library did not wait for, a DMA still in flight), and the worker says so with a later answer
(or when the parent asks it to settle): direct evidence, named after the call that did it.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

from .base import AdapterError, Case, Outcome
from .guard import CANARY, PAGE, GuardedArray, set_access

__all__ = ["SYMBOLS", "Worker"]

SYMBOLS = ("fp_smoothl1lossgrad_s", "fp_smoothl1lossgrad_p", "hp_smoothl1lossgrad_s", "hp_smoothl1lossgrad_p")
_FAULT = struct.Struct("<qQq")  # signo, address, access (0 read, 1 write, -1 unknown)
_START_TIMEOUT = 60.0


class Stage:
    """Shared memory both processes map, holding one call's arrays back to back (``place`` lays
    them out; the layout travels in the request). An anonymous file (``memfd`` where the system
    has it, sealed against shrinking, so the worker cannot cut the parent's mapping short;
    else an unlinked temporary file) handed to the worker as a file descriptor. It grows, in
    whole MiB, when a call needs more; the worker maps it again when the request's size changed."""

    GROW = 1 << 20

    def __init__(self, fd: int):
        self.fd, self.size, self.map = fd, 0, None

    @classmethod
    def create(cls) -> "Stage":
        try:
            fd = os.memfd_create("sl1conf-stage", os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
        except (AttributeError, OSError):
            f = tempfile.TemporaryFile()
            fd = os.dup(f.fileno())
            f.close()
        else:
            try:
                import fcntl

                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
            except (ImportError, AttributeError, OSError):
                pass
        return cls(fd)

    def resize(self, size: int, grow_file: bool = False) -> None:
        if size == self.size and (self.map is not None or not size):
            return
        if self.map is not None:
            self.map.close()
            self.map = None
        if grow_file:
            os.ftruncate(self.fd, size)
        self.size = size
        self.map = mmap.mmap(self.fd, size) if size else None

    HEADER = 4096  # the stage's first bytes: the guard regions of the call in progress (``regions``)
    _REGION = struct.Struct("<B4Q")  # array (index into ARRAYS), low guard start and end, high guard start and end
    ARRAYS = ("dy", "dx1", "x1", "x2")

    def write_regions(self, regions: dict) -> None:
        """The worker, before each call: where the guard pages of the call's arrays lie (read by
        the parent only when the call ends the worker, to name the array a fault hit)."""
        blob = struct.pack("<B", len(regions)) + b"".join(
            self._REGION.pack(self.ARRAYS.index(name), *lo, *hi) for name, (lo, hi) in regions.items())
        self.map[:len(blob)] = blob

    def regions(self) -> dict:
        if self.map is None or self.size < self.HEADER:
            return {}
        count, at, out = self.map[0], 1, {}
        for _ in range(min(count, len(self.ARRAYS))):
            k, lo0, lo1, hi0, hi1 = self._REGION.unpack_from(self.map, at)
            at += self._REGION.size
            if k < len(self.ARRAYS):
                out[self.ARRAYS[k]] = ((lo0, lo1), (hi0, hi1))
        return out

    def place(self, arrays: dict) -> dict:
        """Write ``arrays`` (name -> array) into the stage after its header, growing it if need be:
        their layout (name -> (offset, dtype, count)), by which the other side finds them."""
        layout, at = {}, self.HEADER
        if self.map is not None:
            self.map[0] = 0  # no regions until the worker writes this call's
        for name, a in arrays.items():
            layout[name] = (at, a.dtype.str, a.size)
            at += -(-a.nbytes // 64) * 64
        if at > self.size:
            self.resize(-(-at // self.GROW) * self.GROW, grow_file=True)
        for name, a in arrays.items():
            self.view(layout[name])[:] = a.reshape(-1)
        return layout

    def view(self, where) -> np.ndarray:
        at, dtype, count = where
        return np.frombuffer(self.map, dtype=dtype, count=count, offset=at) if count else np.empty(0, dtype)

    def protect(self, accessible: bool) -> None:
        """Make the mapping (in)accessible in this process (a no-op without mprotect)."""
        if self.map is not None:
            set_access(ctypes.addressof(ctypes.c_char.from_buffer(self.map)), self.size, accessible)

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
            self.map = None
        os.close(self.fd)


def symbol_for(case: Case) -> str:
    return f"{'hp' if case.dtype == 'fp16' else 'fp'}_smoothl1lossgrad_{case.variant}"


# ---------------------------------------------------------------------------- the worker side

WATCH_S = 0.1  # how long a call's dx1 is watched after the call returned
WATCH_MAX = 512  # calls watched at once (the oldest is checked and let go early past it)


class _Watch:
    """The dx1 mappings of the latest calls, kept out of reuse for WATCH_S after each call
    returned, each with a copy of its bytes (data and canaries) as the call left them. Why:
    a library that returns before its last core (or thread, or DMA) has written dx1 changes
    memory the suite has already read back; the copy shows it, and names the call."""

    def __init__(self):
        self.items: list = []  # [seq, due, buffer, bytes as returned, itemsize, slot in _SPARE]

    def add(self, seq: int, buffer: GuardedArray, itemsize: int) -> None:
        slot = next((k for k, v in _SPARE.items() if v is buffer), None)
        if slot is not None:
            del _SPARE[slot]  # no later call may reuse it while it is watched
        snapshot = bytes(buffer._map[PAGE:PAGE + buffer.body])
        self.items.append([seq, time.monotonic() + WATCH_S, buffer, snapshot, itemsize, slot])

    def due(self, settle: bool = False) -> list:
        """(seq, what changed) of every watched call let go now: those watched WATCH_S (all of
        them when ``settle``, after waiting for the last to be due), and the oldest past WATCH_MAX."""
        if settle and self.items:
            time.sleep(max(0.0, self.items[-1][1] - time.monotonic()))
        now, late = time.monotonic(), []
        while self.items and (settle or self.items[0][1] <= now or len(self.items) > WATCH_MAX):
            seq, _, buffer, snapshot, itemsize, slot = self.items.pop(0)
            text = _changed_since(buffer, snapshot, itemsize)
            if text:
                late.append((seq, text))
            if slot is not None and slot not in _SPARE:
                _SPARE[slot] = buffer
            else:
                buffer.close()
        return late


def _changed_since(b: GuardedArray, snapshot: bytes, itemsize: int) -> "str | None":
    """What of a watched dx1 mapping differs from its copy taken when the call returned."""
    now = b._map[PAGE:PAGE + b.body]
    if now == snapshot:
        return None
    lo, hi = b.offset - PAGE, b.offset - PAGE + b.nbytes
    parts = []
    if now[lo:hi] != snapshot[lo:hi]:
        before = np.frombuffer(snapshot[lo:hi], f"u{itemsize}")
        after = np.frombuffer(now[lo:hi], f"u{itemsize}")
        changed = np.flatnonzero(before != after)
        parts.append(f"{changed.size:,} of its {before.size:,} elements (first [{changed[0]}], last "
                     f"[{changed[-1]}])" if changed.size else "the padding of its elements")
    if now[:lo] != snapshot[:lo]:
        parts.append("bytes before its start")
    if now[hi:] != snapshot[hi:]:
        parts.append("bytes past its end")
    return f"dx1 written after the call returned ({WATCH_S * 1000:g} ms watch): {' and '.join(parts)}"

def _serve(conn_in, conn, library: str, shim: "str | None", report_path: str, log_path: str,
           stage_fd: int) -> None:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)  # whatever the library prints goes to the worker's log, not the terminal
    os.dup2(log, 2)
    report = os.open(report_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    me = os.getpid()
    try:
        lib = ctypes.CDLL(library)
    except OSError as exc:
        conn.send(("error", f"cannot load {library}: {exc}"))
        return
    if os.getpid() != me:  # the library's constructor forked: the copy must not serve
        os._exit(0)
    shim_lib = ctypes.CDLL(shim) if shim else None
    symbols = {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
               for name in SYMBOLS if hasattr(lib, name)}
    stage = Stage(stage_fd)
    watch = _Watch()
    conn.send(("ready", sorted(symbols)))
    while True:
        try:
            request = conn_in.recv()
        except EOFError:
            return
        if request is None:
            return
        if request.get("settle"):  # the parent collects the last calls' late writes
            conn.send(("settled", request["seq"], watch.due(settle=True)))
            continue
        late = watch.due()
        os.ftruncate(report, 0)
        os.lseek(report, 0, os.SEEK_SET)
        if shim_lib is not None:  # (re)armed before every call: the library may have replaced it
            shim_lib.sl1shim_install_fault_reporter(report)
        stage.resize(request["stage_size"])
        result, dx1 = _call(request, {k: stage.view(v) for k, v in request["arrays"].items()}, stage, lib,
                            symbols, shim_lib)
        if os.getpid() != me:  # the library forked during the call: only the original answers
            os._exit(0)
        watch.add(request["seq"], dx1, 2 if request["dtype"] == "fp16" else 4)
        conn.send(("done", request["seq"], *result, late))


def _call(req: dict, staged: dict, stage: Stage, lib, symbols: dict, shim_lib):
    """Lay out guarded buffers (filled from the stage), announce them, call with the stage out
    of reach, check what changed (against the stage, which still holds the inputs), and put
    the result where the fill came in."""
    itemsize = 2 if req["dtype"] == "fp16" else 4
    buffers, arrays = {}, {}
    alias = req["out_alias"]
    for name, source in (("dy", "dy"), ("x1", "x1"), ("x2", "x2"), ("dx1", "initial_out")):
        if name == "dx1" and alias:
            buffers["dx1"], arrays["dx1"] = buffers[alias], arrays[alias]
            continue
        buffers[name] = _guarded(name, staged[source].nbytes, req["align"], req["layout"])
        arrays[name] = buffers[name].array(staged[source].dtype)
        arrays[name][:] = staged[source]
    stage.write_regions({name: (b.lo_guard, b.hi_guard) for name, b in buffers.items()})
    addr = {name: ctypes.c_void_p(buffers[name].address) for name in ("dy", "dx1", "x1", "x2")}
    fn = symbols[req["symbol"]]
    args = [addr["dy"], addr["dx1"], addr["x1"], addr["x2"], ctypes.c_int(req["length"])]
    extra = [ctypes.c_int(req["core_mask"])] if req["symbol"].endswith("_s") else []
    stage.protect(False)
    t0 = time.perf_counter()
    if shim_lib is not None:
        entry = getattr(shim_lib, f"sl1shim_{req['symbol'][:2]}_{req['symbol'][-1]}")
        beta = (ctypes.c_uint16 if itemsize == 2 else ctypes.c_uint32)(req["beta"])
        entry(ctypes.c_void_p(fn), *args, beta, *extra)
    else:  # fp32 without a C compiler: a c_float made from the bits (not via a double, which quiets sNaN)
        beta = ctypes.c_float.from_buffer_copy(struct.pack("<I", req["beta"]))
        ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), ctypes.c_int, ctypes.c_float,
                         *([ctypes.c_int] * len(extra)))(fn)(*args, beta, *extra)
    seconds = time.perf_counter() - t0
    stage.protect(True)
    sides = _canaries_hit(buffers)
    wrote_outside = bool(sides)
    changed = tuple(name for name in ("dy", "x1", "x2") if name != alias and not np.array_equal(staged[name], arrays[name]))
    staged["initial_out"][:] = arrays["dx1"]
    fault = " and ".join(sides) + " (canary changed)" if sides else None
    return (wrote_outside, changed, seconds, fault), buffers["dx1"]


def _canaries_hit(buffers: dict) -> list:
    """Where a call wrote into the canaries of its guarded buffers, each named by its array and
    side ("wrote past the end of dx1"); dx1 first, an aliased input under dx1's name only."""
    out, seen = [], set()
    for name in ("dx1", "dy", "x1", "x2"):
        b = buffers.get(name)
        if b is None or id(b) in seen:
            continue
        seen.add(id(b))
        if b.canaries_intact():
            continue
        before = b._map[PAGE:b.offset]
        after = b._map[b.offset + b.nbytes:PAGE + b.body]
        if before.count(CANARY) != len(before):
            out.append(f"wrote before the start of {name}")
        if after.count(CANARY) != len(after):
            out.append(f"wrote past the end of {name}")
    return out


_SPARE: dict = {}  # (array name, mapping size) -> a guarded mapping kept for later calls
_SPARE_MAX = 16


def _guarded(name: str, nbytes: int, align: int, layout: str) -> GuardedArray:
    """The guarded mapping for array ``name`` of this call: an earlier call's of the same size,
    laid out again (new canaries; the caller overwrites the data), else a new one (the oldest
    kept mapping is let go past _SPARE_MAX)."""
    slot = (name, GuardedArray.body_for(nbytes, align))
    old = _SPARE.pop(slot, None)
    _SPARE[slot] = old.place(nbytes, align, layout) if old is not None else GuardedArray(nbytes, align, layout)
    while len(_SPARE) > _SPARE_MAX:
        _SPARE.pop(next(iter(_SPARE))).close()
    return _SPARE[slot]


# ---------------------------------------------------------------------------- the parent side

def _describe_fault(record: bytes, regions: dict) -> "str | None":
    if len(record) < _FAULT.size:
        return None
    signo, address, access = _FAULT.unpack(record[:_FAULT.size])
    verb = {0: "read", 1: "write"}.get(access, "access")
    for name, (lo, hi) in regions.items():
        if lo[0] <= address < lo[1]:
            return f"{verb} before the start of {name}"
        if hi[0] <= address < hi[1]:
            return f"{verb} past the end of {name}"
    if address < 4096:
        return f"{verb} through a NULL pointer (address {address:#x})"
    return f"{verb} at {address:#x}, outside every buffer"


# ---------------------------------------------------------------------------- the fork server

_FORK, _POLL, _WAIT = b"F", b"P", b"W"
_FORKS = sys.platform.startswith("linux") and hasattr(__import__("socket"), "send_fds") and hasattr(os, "fork")
_ANSWER = struct.Struct("<qq")  # pid (0: still running / unknown), raw wait status


def _zygote(sock_fd: int) -> None:
    """The fork server: an interpreter that has imported everything a worker needs and forks a
    fresh worker on request, so replacing a crashed one costs a fork (milliseconds), not an
    interpreter start. It never loads the library: each worker loads it after the fork, so its
    constructors run in every worker, as in a fresh process. Requests on the socket: fork (with
    the worker's two pipe ends and its arguments; answers its pid), poll and wait (a worker's
    exit status: workers are the server's children, so only it can reap them)."""
    import socket

    sock = socket.socket(fileno=sock_fd)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 4096, 2)
        except OSError:
            return
        if not msg:
            return
        kind, rest = msg[:1], msg[1:]
        if kind == _FORK:
            args = rest.decode().split("\0")
            pid = os.fork()
            if pid == 0:  # the worker
                try:
                    sock.close()
                    os.setsid()  # its own group: the parent kills the worker and what it forks together
                    _serve(Connection(fds[0], writable=False), Connection(fds[1], readable=False), args[0],
                           args[1] or None, args[2], args[3], int(args[4]))
                except BaseException:
                    os._exit(70)
                os._exit(0)
            for fd in fds:
                os.close(fd)
            sock.sendall(_ANSWER.pack(pid, 0))
        elif kind in (_POLL, _WAIT):
            pid = int(rest.decode())
            try:
                got, status = os.waitpid(pid, 0 if kind == _WAIT else os.WNOHANG)
            except ChildProcessError:
                got, status = -1, 0
            sock.sendall(_ANSWER.pack(got, status))


class _ForkServer:
    """The parent's side of :func:`_zygote`: one per Worker, started once."""

    def __init__(self, stage_fd: int, start_timeout: float):
        import socket

        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")  # one thread: safe to fork
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "sl1conf.adapters.isolation", "--fork-server",
                                          str(theirs.fileno())], pass_fds=(theirs.fileno(), stage_fd), env=env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            theirs.close()
        self.sock = mine
        self.sock.settimeout(start_timeout)

    def _ask(self, msg: bytes, fds=()) -> tuple:
        import socket

        socket.send_fds(self.sock, [msg], list(fds))
        return _ANSWER.unpack(self.sock.recv(_ANSWER.size))

    def fork(self, req_r: int, resp_w: int, args: list) -> int:
        pid, _ = self._ask(_FORK + "\0".join(args).encode(), (req_r, resp_w))
        return pid

    def status(self, pid: int, block: bool) -> "int | None":
        """The worker's exit code as ``Popen.returncode`` says it (negative: killed by that
        signal), None while it runs."""
        try:
            got, status = self._ask((_WAIT if block else _POLL) + str(pid).encode())
        except OSError:  # the server is gone, and its workers with it (killed with its group, or orphaned)
            return -signal.SIGKILL
        if got == 0:
            return None
        return os.waitstatus_to_exitcode(status) if got > 0 else -signal.SIGKILL

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            try:
                self.proc.kill()
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass


class _Forked:
    """A worker forked by the fork server, with the part of ``Popen``'s interface Worker uses."""

    def __init__(self, server: _ForkServer, pid: int):
        self.server, self.pid, self.returncode = server, pid, None

    def poll(self) -> "int | None":
        if self.returncode is None:
            self.returncode = self.server.status(self.pid, block=False)
        return self.returncode

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("worker", timeout)
            time.sleep(0.002)
        return self.returncode


class PipedProcess:
    """What the ctypes worker and :class:`~sl1conf.adapters.process.ProcessAdapter` share: a
    process in a group of its own, spoken to over two pipes (``_send``, ``_conn``), its output
    in a log file (``log_path``)."""

    _proc = _send = _conn = None
    log_path = ""

    def _kill(self) -> "int | None":
        """Kill the process's whole group (its children too) and close the pipes; its exit status
        (``Popen.returncode``'s convention), None if it could not be reaped."""
        code = None
        if self._proc is not None:
            code = self._proc.poll()
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)  # the group outlives a dead leader's children
            except (ProcessLookupError, PermissionError):
                pass
            try:
                waited = self._proc.wait(5)
                code = waited if code is None else code
            except subprocess.TimeoutExpired:
                pass
        for conn in (self._conn, self._send):
            if conn is not None:
                conn.close()
        self._proc = self._conn = self._send = None
        return code

    def _stop(self, wait: float) -> None:
        """Ask the process to end (``None`` on the pipe), give it ``wait`` seconds, then kill it."""
        if self._send is not None:
            try:
                self._send.send(None)
                self._proc.wait(wait)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()

    def log_tail(self, lines: int = 5) -> str:
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Worker(PipedProcess):
    """One worker process for one library; restarted after every crash or hang (forked by a fork
    server where the system can pass file descriptors over a socket, else a fresh interpreter)."""

    def __init__(self, library: str, shim: "str | None", timeout: float, align: int,
                 start_timeout: float = _START_TIMEOUT):
        self.library, self.shim, self.timeout, self.align = library, shim, timeout, align
        self.start_timeout = start_timeout
        self._dir = tempfile.TemporaryDirectory(prefix="sl1conf-worker-")
        self.report_path = str(Path(self._dir.name) / "fault")
        self.log_path = str(Path(self._dir.name) / "log")
        self._proc = self._conn = self._send = None
        self._seq = 0
        self.symbols: list[str] = []
        self.restarts = 0
        self.late: list = []  # (case id, what changed) of calls seen writing after they returned
        self._ids: dict = {}  # seq -> case id of the latest calls (those the worker may still name)
        self._stage = Stage.create()
        self._server = None
        try:
            self._server = _ForkServer(self._stage.fd, start_timeout) if _FORKS else None
        except OSError:
            self._server = None
        self._start()

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        args = [self.library, self.shim or "", self.report_path, self.log_path, str(self._stage.fd)]
        cmd = [sys.executable, "-m", "sl1conf.adapters.isolation", str(req_r), str(resp_w), *args]
        if self._server is not None:
            try:
                self._proc = _Forked(self._server, self._server.fork(req_r, resp_w, args))
            except OSError:  # the fork server is gone (killed?): fresh interpreters from now on
                self._server.close()
                self._server = None
        try:
            if self._server is None:
                # Its own session: a library that signals its process group, or forks children,
                # reaches only the worker's group, and Ctrl-C at the terminal reaches only the suite.
                self._proc = subprocess.Popen(cmd, pass_fds=(req_r, resp_w, self._stage.fd),
                                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            os.close(req_w)
            os.close(resp_r)
            raise
        finally:
            os.close(req_r)
            os.close(resp_w)
        self._send = Connection(req_w, readable=False)
        self._conn = Connection(resp_r, writable=False)
        if not self._conn.poll(self.start_timeout):
            self._kill()
            raise AdapterError(f"{self.library}: loading it did not finish within {self.start_timeout:g} s")
        try:
            kind, payload = self._conn.recv()
        except Exception:  # EOF, or garbage written into the pipe by the library
            code = self._kill()
            tail = self.log_tail(1)
            raise AdapterError(f"{self.library}: loading it ended the worker ({exit_text(code, loading=True)})"
                               + (f": {tail}" if tail else "")) from None
        if kind == "error":
            self._kill()
            raise AdapterError(payload)
        self.symbols = payload

    def call(self, case: Case) -> Outcome:
        for attempt in range(2):
            if self._proc is None or self._proc.poll() is not None:
                if self._proc is not None:  # died while idle (a background thread of the library?)
                    self._kill()
                self._start()
                self.restarts += 1
            self._seq += 1
            layout = self._stage.place({"dy": case.dy, "x1": case.x1, "x2": case.x2,
                                        "initial_out": case.initial_out()})
            request = {
                "seq": self._seq, "dtype": case.dtype, "symbol": symbol_for(case), "arrays": layout,
                "stage_size": self._stage.size, "beta": int(case.beta),
                "length": case.call_length, "core_mask": int(case.core_mask), "out_alias": case.out_alias,
                "align": self.align, "layout": case.guard,
            }
            try:
                self._send.send(request)
                break
            except OSError:
                self._kill()
        else:
            return Outcome("error", detail="the worker could not be given the case")
        deadline = time.monotonic() + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill()
                return Outcome("timeout", detail=f"no result within {self.timeout:g} s (killed)",
                               seconds=self.timeout)
            # Wait in slices, watching the worker too: a child it forked may hold the pipe open
            # after the worker itself died.
            if not self._conn.poll(min(remaining, 0.05)) and self._proc.poll() is None:
                continue
            try:
                if not self._conn.poll(0):
                    raise EOFError  # the worker is dead and said nothing more
                message = self._conn.recv()
            except Exception:  # EOF: the worker died; or garbage the library wrote into the pipe
                try:  # a dying worker closes the pipe a moment before it can be reaped
                    self._proc.wait(2)
                except subprocess.TimeoutExpired:
                    pass
                alive = self._proc.poll() is None
                try:
                    record = Path(self.report_path).read_bytes()
                except OSError:
                    record = b""
                code = self._kill()
                fault = _describe_fault(record, self._stage.regions())
                if alive:
                    return Outcome("crash", detail="the library broke the worker's result channel")
                return Outcome("crash", detail=exit_text(code) + (f": {fault}" if fault else ""), fault=fault)
            if message[1] != self._seq:  # an answer that is not for this case: the worker is not sound
                self._kill()
                return Outcome("crash", detail="the worker answered out of turn (did the library fork?)")
            if message[0] == "done":
                _, _, wrote_outside, changed, seconds, fault, late = message
                self._late_from(late)
                self._ids[self._seq] = case.id
                while len(self._ids) > 4 * WATCH_MAX:  # the calls still watched are the latest
                    del self._ids[next(iter(self._ids))]
                return Outcome("ok", out=self._stage.view(layout["initial_out"]).copy(), wrote_outside=wrote_outside,
                               inputs_changed=changed, fault=fault, seconds=seconds)

    def _late_from(self, late: list) -> None:
        self.late += [(self._ids.get(seq, f"call #{seq}"), text) for seq, text in late]

    def late_writes(self) -> list:
        """(case id, what changed) of every call seen writing dx1 after it returned, since the
        last ask: the worker waits until its latest calls have been watched WATCH_S, then says."""
        if self._proc is not None and self._proc.poll() is None:
            self._seq += 1
            try:
                self._send.send({"settle": True, "seq": self._seq})
                if self._conn.poll(WATCH_S + self.timeout):
                    kind, seq, late = self._conn.recv()
                    if kind == "settled" and seq == self._seq:
                        self._late_from(late)
            except Exception:  # the worker died or garbled the channel: the next call replaces it
                self._kill()
        out, self.late = self.late, []
        return out

    def close(self) -> None:
        self._stop(2)
        if self._server is not None:
            self._server.close()
        self._stage.close()
        self._dir.cleanup()


def exit_text(code: "int | None", loading: bool = False) -> str:
    if code is None:
        return "the worker did not exit"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}" + ("" if loading else " during the call")


if __name__ == "__main__" and sys.argv[1:2] == ["--fork-server"]:  # python -m ... --fork-server <socket fd>
    _zygote(int(sys.argv[2]))
elif __name__ == "__main__":  # the worker process: python -m sl1conf.adapters.isolation ...
    _req, _resp, _library, _shim, _report, _log, _stage = sys.argv[1:8]
    _serve(Connection(int(_req), writable=False), Connection(int(_resp), readable=False),
           _library, _shim or None, _report, _log, int(_stage))

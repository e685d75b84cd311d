"""The suite's side of the worker process that calls a C implementation of the API on guarded buffers.

The implementation under test is hostile until proven otherwise: it runs in a
separate process (a fresh interpreter running this module, so nothing of the
suite's state is shared and the caller's script is never re-imported), one case
per request over a pair of pipes. A crash (segfault, abort, exit) or a hang (past
the per-call timeout) becomes an :class:`~sl1conf.adapters.base.Outcome` for
that case; the worker is replaced and the run goes on.

Here: :class:`Worker` (starts the worker, sends it cases, turns what it answers or how it
ended into outcomes, naming a fault after the array it hit: "write past the end of dx1"),
and this module is the worker's and the fork server's entry point. The pieces, each in its
module: the staging memory the arrays travel through (:mod:`.stage`), what runs in the worker
(:mod:`.worker_side`: the guarded call, and the watch on dx1 after the call returned that
catches a library writing late, ``WATCH_S``), and the fork server that makes replacing a
crashed worker cost a fork (:mod:`.fork_server`).
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

from .base import AdapterError, Case, Outcome
from .fork_server import Forked, ForkServer, zygote
from .stage import Stage
from .worker_side import SYMBOLS, WATCH_MAX, WATCH_S, serve

__all__ = ["SYMBOLS", "Worker"]

_FAULT = struct.Struct("<qQq")  # signo, address, access (0 read, 1 write, -1 unknown)
_START_TIMEOUT = 60.0
_FORKS = sys.platform.startswith("linux") and hasattr(__import__("socket"), "send_fds") and hasattr(os, "fork")


def symbol_for(case: Case) -> str:
    return f"{'hp' if case.dtype == 'fp16' else 'fp'}_smoothl1lossgrad_{case.variant}"


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
            self._server = ForkServer(self._stage.fd, start_timeout) if _FORKS else None
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
                self._proc = Forked(self._server, self._server.fork(req_r, resp_w, args))
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
    zygote(int(sys.argv[2]))
elif __name__ == "__main__":  # the worker process: python -m sl1conf.adapters.isolation ...
    _req, _resp, _library, _shim, _report, _log, _stage = sys.argv[1:8]
    serve(Connection(int(_req), writable=False), Connection(int(_resp), readable=False),
          _library, _shim or None, _report, _log, int(_stage))

"""A worker process that calls a C implementation of the API on guarded buffers.

The implementation under test is hostile until proven otherwise: it runs in a
separate process (a fresh interpreter running this module, so nothing of the
suite's state is shared and the caller's script is never re-imported), one case
per request over a pair of pipes. A crash (segfault, abort, exit) or a hang (past
the per-call timeout) becomes an :class:`~sl1conf.adapters.base.Outcome` for
that case; the worker is replaced and the run goes on.

Before each call the worker tells the parent where the guard pages of that call
lie, so a fault reported by the shim's signal handler (address, read or write)
is named after the array it hit: "write past the end of dx1".
"""

from __future__ import annotations

import ctypes
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
from .guard import GuardedArray

__all__ = ["SYMBOLS", "Worker"]

SYMBOLS = ("fp_smoothl1lossgrad_s", "fp_smoothl1lossgrad_p", "hp_smoothl1lossgrad_s", "hp_smoothl1lossgrad_p")
_FAULT = struct.Struct("<qQq")  # signo, address, access (0 read, 1 write, -1 unknown)
_START_TIMEOUT = 60.0


def symbol_for(case: Case) -> str:
    return f"{'hp' if case.dtype == 'fp16' else 'fp'}_smoothl1lossgrad_{case.variant}"


# ---------------------------------------------------------------------------- the worker side

def _serve(conn_in, conn, library: str, shim: "str | None", report_path: str, log_path: str) -> None:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)  # whatever the library prints goes to the worker's log, not the terminal
    os.dup2(log, 2)
    report = os.open(report_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    shim_lib = None
    if shim:
        shim_lib = ctypes.CDLL(shim)
        shim_lib.sl1shim_install_fault_reporter(report)
    try:
        lib = ctypes.CDLL(library)
    except OSError as exc:
        conn.send(("error", f"cannot load {library}: {exc}"))
        return
    symbols = {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
               for name in SYMBOLS if hasattr(lib, name)}
    conn.send(("ready", sorted(symbols)))
    while True:
        try:
            request = conn_in.recv()
        except EOFError:
            return
        if request is None:
            return
        os.ftruncate(report, 0)
        os.lseek(report, 0, os.SEEK_SET)
        conn.send(("done", *_call(request, lib, symbols, shim_lib, conn)))


def _call(req: dict, lib, symbols: dict, shim_lib, conn):
    """Lay out guarded buffers, announce them, call, and check what changed."""
    itemsize = 2 if req["dtype"] == "fp16" else 4
    buffers, arrays = {}, {}
    for name in ("dy", "x1", "x2"):
        buffers[name] = GuardedArray(req[name].nbytes, req["align"])
        arrays[name] = buffers[name].array(req[name].dtype)
        arrays[name][:] = req[name]
    alias = req["out_alias"]
    if alias:
        buffers["dx1"], arrays["dx1"] = buffers[alias], arrays[alias]
    else:
        buffers["dx1"] = GuardedArray(req["dy"].nbytes, req["align"])
        arrays["dx1"] = buffers["dx1"].array(req["dy"].dtype)
        arrays["dx1"][:] = req["initial_out"]
    saved = {name: arrays[name].copy() for name in ("dy", "x1", "x2") if name != alias}
    conn.send(("calling", {name: (b.lo_guard, b.hi_guard) for name, b in buffers.items()}))
    addr = {name: ctypes.c_void_p(buffers[name].address) for name in ("dy", "dx1", "x1", "x2")}
    fn = symbols[req["symbol"]]
    args = [addr["dy"], addr["dx1"], addr["x1"], addr["x2"], ctypes.c_int(req["length"])]
    t0 = time.perf_counter()
    if shim_lib is not None:
        entry = getattr(shim_lib, f"sl1shim_{req['symbol'][:2]}_{req['symbol'][-1]}")
        beta = (ctypes.c_uint16 if itemsize == 2 else ctypes.c_uint32)(req["beta"])
        extra = [ctypes.c_int(req["core_mask"])] if req["symbol"].endswith("_s") else []
        entry(ctypes.c_void_p(fn), *args, beta, *extra)
    else:  # fp32 without a C compiler: ctypes passes a float by value correctly
        beta = ctypes.c_float(np.array([req["beta"]], np.uint32).view(np.float32)[0])
        extra = [ctypes.c_int(req["core_mask"])] if req["symbol"].endswith("_s") else []
        ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), ctypes.c_int, ctypes.c_float,
                         *([ctypes.c_int] * len(extra)))(fn)(*args, beta, *extra)
    seconds = time.perf_counter() - t0
    out = arrays["dx1"].copy()
    wrote_outside = not all(b.canaries_intact() for b in buffers.values())
    changed = tuple(name for name, before in saved.items() if not np.array_equal(before, arrays[name]))
    for b in {id(b): b for b in buffers.values()}.values():
        b.close()
    return out, wrote_outside, changed, seconds


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


class Worker:
    """One worker process for one library; restarted after every crash or hang."""

    def __init__(self, library: str, shim: "str | None", timeout: float, align: int):
        self.library, self.shim, self.timeout, self.align = library, shim, timeout, align
        self._dir = tempfile.TemporaryDirectory(prefix="sl1conf-worker-")
        self.report_path = str(Path(self._dir.name) / "fault")
        self.log_path = str(Path(self._dir.name) / "log")
        self._proc = self._conn = self._send = None
        self.symbols: list[str] = []
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        cmd = [sys.executable, "-m", "sl1conf.adapters.isolation", str(req_r), str(resp_w),
               self.library, self.shim or "", self.report_path, self.log_path]
        try:
            self._proc = subprocess.Popen(cmd, pass_fds=(req_r, resp_w), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            os.close(req_r)
            os.close(resp_w)
        self._send = Connection(req_w, readable=False)
        self._conn = Connection(resp_r, writable=False)
        if not self._conn.poll(_START_TIMEOUT):
            self._kill()
            raise AdapterError(f"{self.library}: the worker did not start within {_START_TIMEOUT:.0f} s")
        try:
            kind, payload = self._conn.recv()
        except EOFError:
            code = self._proc.wait(5)
            tail = self.log_tail(1)
            self._kill()
            raise AdapterError(f"{self.library}: loading it killed the worker ({_exit_text(code)})"
                               + (f": {tail}" if tail else "")) from None
        if kind == "error":
            self._kill()
            raise AdapterError(payload)
        self.symbols = payload

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait(5)
        for conn in (self._conn, getattr(self, "_send", None)):
            if conn is not None:
                conn.close()
        self._proc = self._conn = self._send = None

    def call(self, case: Case) -> Outcome:
        if self._proc is None:
            self._start()
            self.restarts += 1
        request = {
            "dtype": case.dtype, "symbol": symbol_for(case), "dy": case.dy, "x1": case.x1, "x2": case.x2,
            "initial_out": case.initial_out(), "beta": int(case.beta), "length": case.call_length,
            "core_mask": int(case.core_mask), "out_alias": case.out_alias, "align": self.align,
        }
        try:
            self._send.send(request)
        except (BrokenPipeError, OSError):
            self._kill()
            return self.call(case)
        regions, deadline = {}, time.monotonic() + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._conn.poll(remaining):
                self._kill()
                return Outcome("timeout", detail=f"no result within {self.timeout:g} s (killed)",
                               seconds=self.timeout)
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                code = self._proc.wait(5)
                fault = _describe_fault(Path(self.report_path).read_bytes(), regions) \
                    if Path(self.report_path).exists() else None
                self._kill()
                return Outcome("crash", detail=_exit_text(code) + (f": {fault}" if fault else ""), fault=fault)
            if message[0] == "calling":
                regions = message[1]
            elif message[0] == "done":
                _, out, wrote_outside, changed, seconds = message
                return Outcome("ok", out=out, wrote_outside=wrote_outside, inputs_changed=changed,
                               seconds=seconds)

    def log_tail(self, lines: int = 5) -> str:
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def close(self) -> None:
        if self._send is not None:
            try:
                self._send.send(None)
                self._proc.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
        self._dir.cleanup()


def _exit_text(code: "int | None") -> str:
    if code is None:
        return "the worker did not exit"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code} during the call"


if __name__ == "__main__":  # the worker process: python -m sl1conf.adapters.isolation ...
    _req, _resp, _library, _shim, _report, _log = sys.argv[1:7]
    _serve(Connection(int(_req), writable=False), Connection(int(_resp), readable=False),
           _library, _shim or None, _report, _log)

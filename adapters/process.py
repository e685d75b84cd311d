"""An in-process adapter run in a worker process of its own: :class:`ProcessAdapter`.

Why: a framework kernel (MindSpore) keeps state across calls in its process (a thread pool
that flushes subnormals, a launch-count tuner), may crash the interpreter or hang, and R14's
"first calls of a fresh worker" are only real if a fresh process can be had. The worker is a
fresh interpreter (``python -m sl1conf.adapters.process``) that builds the adapter from a
factory named ``module:attribute`` and runs the cases it is sent, one request at a time over
a pair of pipes (cases and outcomes pickled: the arrays of one call, a few MB at most). A
crash or a hang (past the per-call timeout) becomes the call's Outcome; the next call starts
a new worker; :meth:`ProcessAdapter.restart` starts one on purpose.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path

from .base import Adapter, AdapterError, Case, Outcome
from .isolation import PipedProcess, exit_text

__all__ = ["ProcessAdapter"]


class ProcessAdapter(Adapter, PipedProcess):
    """The adapter ``factory(arg)`` builds, run in a worker process; it answers for it (name,
    dtypes, variants, capabilities and ``describe()``, asked of the worker)."""

    def __init__(self, factory: str, arg: str = "", *, timeout: float = 120.0, start_timeout: float = 180.0):
        self.factory, self.arg, self.timeout, self.start_timeout = factory, arg, timeout, start_timeout
        self._dir = tempfile.TemporaryDirectory(prefix="sl1conf-process-")
        self.log_path = Path(self._dir.name) / "log"
        self._proc = self._send = self._conn = None
        self.restarts = 0
        info = self._start()
        self.name, self.dtypes, self.variants = info["name"], tuple(info["dtypes"]), tuple(info["variants"])
        self.capabilities = replace(info["capabilities"], isolated=True)

    def _start(self) -> dict:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        log = open(self.log_path, "ab")
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", "sl1conf.adapters.process", str(req_r), str(resp_w),
                                           self.factory, self.arg], pass_fds=(req_r, resp_w),
                                          stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        finally:
            log.close()
            os.close(req_r)
            os.close(resp_w)
        self._send, self._conn = Connection(req_w, readable=False), Connection(resp_r, writable=False)
        if not self._conn.poll(self.start_timeout):
            self._kill()
            raise AdapterError(f"{self.factory}: the worker did not start within {self.start_timeout:g} s")
        try:
            kind, payload = self._conn.recv()
        except Exception:
            code = self._kill()
            raise AdapterError(f"{self.factory}: the worker ended while starting ({exit_text(code, loading=True)})"
                               + (f": {self.log_tail()}" if self.log_tail() else "")) from None
        if kind != "ready":
            self._kill()
            raise AdapterError(payload)
        return payload

    def _ask(self, message, timeout: float):
        """Send one request and wait for its answer: ("answer", value), or ("crash" | "timeout", text)."""
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            self._start()
            self.restarts += 1
        try:
            self._send.send(message)
        except OSError:
            return "crash", f"the worker could not be sent the request ({exit_text(self._kill())})"
        deadline = time.monotonic() + timeout
        while not self._conn.poll(0.05):
            if self._proc.poll() is not None:
                break
            if time.monotonic() > deadline:
                self._kill()
                return "timeout", f"no result within {timeout:g} s (killed)"
        try:
            return "answer", self._conn.recv()
        except Exception:
            code = self._kill()
            tail = self.log_tail(1)
            return "crash", exit_text(code) + (f": {tail}" if tail else "")

    def run_case(self, case: Case) -> Outcome:
        kind, value = self._ask(("run", case), self.timeout)
        if kind != "answer":
            return Outcome(kind, detail=value, seconds=self.timeout if kind == "timeout" else 0.0)
        return value

    def restart(self) -> bool:
        """A new worker process: nothing left of earlier calls (the framework imported afresh)."""
        self._kill()
        self._start()
        self.calls_made = 0
        return True

    def describe(self) -> dict:
        kind, value = self._ask(("describe",), 60.0)
        info = value if kind == "answer" else {"adapter": self.name, "dtypes": list(self.dtypes),
                                               "variants": list(self.variants), "note": f"describe: {value}"}
        return {**info, "process": "a worker process of its own (fresh after each restart)",
                "worker_restarts": self.restarts}

    def close(self) -> None:
        self._stop(5)
        self._dir.cleanup()


def _serve(conn_in: Connection, conn: Connection, factory: str, arg: str) -> None:
    module, _, attr = factory.partition(":")
    try:
        adapter = getattr(importlib.import_module(module), attr)(arg)
    except AdapterError as exc:
        conn.send(("error", str(exc)))
        return
    except Exception as exc:
        conn.send(("error", f"{factory}: {type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", {"name": adapter.name, "dtypes": list(adapter.dtypes), "variants": list(adapter.variants),
                         "capabilities": adapter.capabilities}))
    while True:
        try:
            request = conn_in.recv()
        except EOFError:
            break
        if request is None:
            break
        if request[0] == "run":
            conn.send(adapter.run([request[1]])[0])
        elif request[0] == "describe":
            conn.send(adapter.describe())
    adapter.close()


if __name__ == "__main__":  # the worker: python -m sl1conf.adapters.process <req fd> <resp fd> <factory> <arg>
    _serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False),
           sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")

"""The fork server of the ctypes worker: a fresh worker costs a fork, not an interpreter start.

Why: a crash or a hang replaces the worker, and some libraries crash on many cases; starting
Python and importing numpy each time would cost more than the cases. :func:`zygote` runs in
its own process and forks workers on request; :class:`ForkServer` is the parent's side of it,
:class:`Forked` a worker it forked, spoken to as ``Popen`` is.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from multiprocessing.connection import Connection

from .worker_side import serve

__all__ = ["zygote", "ForkServer", "Forked"]

_FORK, _POLL, _WAIT = b"F", b"P", b"W"
_ANSWER = struct.Struct("<qq")  # pid (0: still running / unknown), raw wait status


def zygote(sock_fd: int) -> None:
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
                    serve(Connection(fds[0], writable=False), Connection(fds[1], readable=False), args[0],
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


class ForkServer:
    """The parent's side of :func:`zygote`: one per Worker, started once."""

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


class Forked:
    """A worker forked by the fork server, with the part of ``Popen``'s interface Worker uses."""

    def __init__(self, server: ForkServer, pid: int):
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

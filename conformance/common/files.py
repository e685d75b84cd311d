"""Files the suite writes: always whole or not at all.

Why one helper: a report, a sweep checkpoint, an export or a benchmark table that is half
written (a full disk, a Ctrl-C) must never stand where a good file stood. Every writer
writes a temporary file beside the target and renames it over the target (``os.replace``
is atomic on one file system); the temporary file is removed on any failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Union

__all__ = ["write_atomic", "write_temporary", "writable_folder", "uninterrupted"]

_DEFERRED = ("SIGINT", "SIGTERM", "SIGHUP")


@contextlib.contextmanager
def uninterrupted():
    """Ctrl-C, SIGTERM and SIGHUP arriving inside the block take effect when it ends: for the
    few renames that take a folder from one whole state to the next (a report's four files,
    a vector set swapped in), so a signal interrupts before or after them, never between.

    The Python-level handlers are swapped for one that only notes the signal (a handler,
    not ``pthread_sigmask``: the mask is per thread, and a signal another thread receives,
    the kernel's pool or a library's, still raises KeyboardInterrupt in the main one); on
    leaving, the old handlers are put back (SIGINT's last) and each noted signal is handed to
    its old handler: the default SIGINT handler raises KeyboardInterrupt, a default SIGTERM
    ends the process. Outside the main thread handlers cannot be set, and the block runs
    unprotected (Python runs signal handlers in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted, old = [], {}

    def note(signum, frame):
        noted.append(signum)

    for name in _DEFERRED:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        current = signal.getsignal(sig)
        if current is None or current == signal.SIG_IGN:  # set outside Python, or ignored: leave it
            continue
        old[sig] = signal.signal(sig, note)
    try:
        yield
    finally:
        for sig in sorted(old, key=lambda s: s == signal.SIGINT):  # SIGINT last: the rest are back first
            signal.signal(sig, old[sig])
        for sig in sorted(dict.fromkeys(noted), key=lambda s: s == signal.SIGINT):
            handler = old[sig]
            if callable(handler):
                handler(sig, None)  # the default SIGINT handler raises KeyboardInterrupt here
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), sig)  # SIGTERM's default: the process ends, the folder whole


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_temporary(path, data: Union[str, bytes, Iterable[str]], *, encoding: str = "utf-8") -> Path:
    """``data`` (text, bytes, or text chunks) in a new temporary file beside ``path``, named
    ``.NAME.*.tmp``, with the ordinary permissions (``0o666`` less the umask, not
    ``mkstemp``'s private ones); removed again if writing fails. The caller renames it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if isinstance(data, bytes):
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        else:
            with os.fdopen(fd, "w", encoding=encoding, newline="\n") as fh:
                for chunk in ([data] if isinstance(data, str) else data):
                    fh.write(chunk)
        os.chmod(tmp, 0o666 & ~_umask())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_atomic(path, data: Union[str, bytes, Iterable[str]], *, encoding: str = "utf-8") -> Path:
    """Write ``data`` (text, bytes, or text chunks) to a temporary file beside ``path``
    (:func:`write_temporary`), then rename it over ``path``. The folder is created if needed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = write_temporary(path, data, encoding=encoding)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def writable_folder(path, error: type) -> Path:
    """Create folder ``path`` if needed and prove a file can be written in it, before any
    long run writes there; ``error("PATH: cannot write there (why)")`` otherwise."""
    path = Path(path)
    try:
        if path.exists() and not path.is_dir():
            raise error(f"{path} exists and is not a folder")
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".sl1conf-probe.", dir=path)
        try:
            os.close(fd)
        finally:  # a Ctrl-C here leaves no probe behind
            os.unlink(probe)
    except OSError as exc:
        raise error(f"{path}: cannot write there ({exc.strerror or exc})") from None
    return path

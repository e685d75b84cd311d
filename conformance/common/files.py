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

__all__ = ["write_atomic", "writable_folder", "uninterrupted"]

_HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def uninterrupted():
    """Hold SIGINT, SIGTERM and SIGHUP for the few renames that take a folder from one whole
    state to the next (a report's four files, a vector set swapped in): a signal sent meanwhile
    is delivered when the block ends, so it can interrupt before or after, never between.
    Only the main thread can hold them (elsewhere this does nothing: Python delivers signals to
    the main thread only, so another thread is not interrupted by them anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path, data: Union[str, bytes, Iterable[str]], *, encoding: str = "utf-8") -> Path:
    """Write ``data`` (text, bytes, or text chunks) to a temporary file beside ``path``, then
    rename it over ``path``. The folder is created if needed; the file gets the ordinary
    permissions (``0o666`` less the umask), not ``mkstemp``'s private ones."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
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
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
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
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise error(f"{path}: cannot write there ({exc.strerror or exc})") from None
    return path

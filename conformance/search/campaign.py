"""What a fuzz campaign and a sweep share to run their tasks: the local process pool, the
stop flag a signal sets, the adapter each worker keeps, and the checkpoint written as tasks end.

Why one machinery: both cut their work into tasks that are pure functions of (configuration,
index), a fuzz batch or a sweep block, and run them in this process, on a spawn pool of local
processes or on a Dask cluster (``distributed``), through the same ``concurrent.futures``
interface (``distributed.submitted``). What running them needs beyond that (workers that
leave signals to the parent and are ended by it, an adapter loaded once per worker, state
saved often enough to resume and seldom enough to cost nothing) is here, once.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable

__all__ = ["Stop", "stop_on_signals", "ignore_signals", "process_pool", "per_worker", "Checkpoint"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stop:
    """Set by the first SIGINT or SIGTERM (:func:`stop_on_signals`): the run stops and keeps
    what it found, and what follows (minimizing) may go on for ``grace`` seconds from then; a
    second signal interrupts at once (KeyboardInterrupt: exit 130, nothing saved)."""

    def __init__(self, notice: str, grace: float):
        self.notice, self.grace, self.at = notice, grace, None

    def __call__(self) -> bool:
        return self.at is not None

    def give_up(self) -> bool:
        return self.at is not None and time.monotonic() > self.at + self.grace

    def _handle(self, signum, frame) -> None:
        if self.at is not None:
            raise KeyboardInterrupt
        self.at = time.monotonic()
        text = ("\r\033[K" if sys.stderr.isatty() else "") + self.notice.format(signal=signal.Signals(signum).name)
        try:
            os.write(sys.stderr.fileno(), text.encode())  # not print: the handler may interrupt a print
        except (OSError, ValueError):  # no file descriptor (a captured stderr)
            print(text, end="", file=sys.stderr)


@contextmanager
def stop_on_signals(notice: str, grace: float):
    """A :class:`Stop` wired to SIGINT and SIGTERM while the block runs (in the main thread;
    elsewhere signals cannot be caught and the stop is never set). ``notice`` is written to
    stderr at the first signal, its ``{signal}`` replaced by the signal's name."""
    stop = Stop(notice, grace)
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    old = {s: signal.signal(s, stop._handle) for s in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def ignore_signals(*signums) -> None:
    """A pool worker's initializer: these signals (a Ctrl-C sent to the whole process group)
    reach the parent only, which decides what to keep and ends the workers itself; a worker
    dying mid-task would break the pool instead."""
    for signum in signums:
        signal.signal(signum, signal.SIG_IGN)


@contextmanager
def process_pool(workers: int, stop: "Callable[[], bool] | None" = None, ignore=STOP_SIGNALS):
    """A spawn process pool of ``workers`` whose workers ignore the signals ``ignore``. A run
    that ends normally (no exception, ``stop()`` not set) lets them exit; a stopped or failed
    one ends them at once (SIGKILL) rather than waiting for their tasks, so it neither hangs
    nor leaves orphans."""
    pool = cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=ignore_signals, initargs=tuple(ignore))
    ended = False
    try:
        yield pool
        ended = stop is None or not stop()
    finally:
        if not ended:
            procs = list((pool._processes or {}).values())  # no public way before Python 3.14
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.kill()
                proc.join()
        pool.shutdown(wait=True)


_SLOTS: dict = {}  # thread id -> (key, the object made for it, the function that closes it)
_SLOTS_LOCK = threading.Lock()


def per_worker(key, make: Callable, close: Callable):
    """The object ``make()`` made for ``key`` in this thread (a local pool's process, a Dask
    worker's thread), made at its first task and kept for the next tasks of the same key:
    loading an adapter (a library, a simulator) costs more than a task. The thread's object
    for another key (an earlier run) is closed, by ``close(object)``, first."""
    me = threading.get_ident()
    with _SLOTS_LOCK:
        slot = _SLOTS.get(me)
    if slot is not None and slot[0] == key:
        return slot[1]
    if slot is not None:
        slot[2](slot[1])
    made = make()
    with _SLOTS_LOCK:
        _SLOTS[me] = (key, made, close)
    return made


def _close_workers() -> None:
    with _SLOTS_LOCK:
        for _, made, close in _SLOTS.values():
            close(made)
        _SLOTS.clear()


atexit.register(_close_workers)


class Checkpoint:
    """Calls ``save()`` at most every ``every`` seconds while tasks end (:meth:`changed`), and
    once more when the ``with`` block ends however it ends (done, Ctrl-C, an error) if
    anything changed since: an interrupted run resumes where it stopped, having lost at most
    ``every`` seconds, and a fast run does not spend its time writing. ``unsaved`` true saves
    at the end even if nothing changes (a state that has never been written)."""

    def __init__(self, save: Callable[[], None], every: float, unsaved: bool = False):
        self.save, self.every, self.unsaved = save, every, unsaved
        self.saved_at = time.perf_counter()

    def changed(self) -> None:
        self.unsaved = True
        if time.perf_counter() - self.saved_at >= self.every:
            self.unsaved = False
            self.save()
            self.saved_at = time.perf_counter()

    def __enter__(self) -> "Checkpoint":
        return self

    def __exit__(self, *exc) -> None:
        if self.unsaved:
            self.save()

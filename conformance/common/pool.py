"""A local spawn process pool that signals stop cleanly, and the stop flag they set.

Why here, at the bottom: fuzz and sweep (search/) and the self-test (an entry point) all run
tasks in worker processes, and each must react to Ctrl-C and SIGTERM the same way: the workers
leave the signals to the parent, the first signal sets a flag the run reads (it stops and keeps
what it found), a second interrupts at once, and a stopped or failed run kills its workers
rather than waiting for them, so it neither hangs nor leaves orphans. None of that knows what
the tasks are.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable

__all__ = ["STOP_SIGNALS", "Stop", "stop_on_signals", "ignore_signals", "process_pool"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a run: Ctrl-C, and what a batch system or ``kill`` sends."""


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

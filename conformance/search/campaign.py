"""What a fuzz campaign and a sweep share to run their tasks: the adapter each worker keeps, and
the checkpoint written as tasks end.

Why one machinery: both cut their work into tasks that are pure functions of (configuration,
index), a fuzz batch or a sweep block, and run them in this process, on a spawn pool of local
processes (``common.pool``, which the self-test uses too) or on a Dask cluster
(``distributed``), through the same ``concurrent.futures`` interface
(``distributed.submitted``). What running such tasks needs beyond that (an adapter loaded once
per worker, state saved often enough to resume and seldom enough to cost nothing) is here, once.
"""

from __future__ import annotations

import atexit
import threading
import time
from typing import Callable

__all__ = ["per_worker", "Checkpoint"]

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

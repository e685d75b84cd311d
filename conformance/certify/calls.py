"""The adapter's calls of a certification: each run's own calls and the calls its requirements
plan, merged into one adapter run per stage, made in one worker thread where runs may overlap.

Why a worker thread: a simulator or a board spends seconds on a run's calls while the engine
spends seconds judging another run's results. Where every adapter run starts the
implementation afresh (``Capabilities.independent_runs``: a simulator's batches, each a new
process), the engine queues every run's calls at once and judges one run while the worker
makes the next one's; the calls are still made one adapter run at a time, in the order
queued, so a board never sees two sessions at once. Elsewhere (a library in a worker process
that keeps state from call to call, an implementation in the suite's own process) every call
is made in the caller's thread at the moment it is asked for, as the history the
determinism check numbers is one process's.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from concurrent.futures import Future

from sl1conf.conformance.requirements import CATALOG
from sl1conf.conformance.requirements.base import Made, RunContext

__all__ = ["CallQueue", "plans_at", "make_stage"]


def plans_at(stage: str) -> list:
    """The plans of ``stage``, in catalog order, each once (a plan several requirements name is
    made once, where the first of them lists it)."""
    out, seen = [], set()
    for req in CATALOG:
        for plan in req.plans:
            if plan.stage == stage and plan.name not in seen:
                seen.add(plan.name)
                out.append(plan)
    return out


def make_stage(ctx: RunContext, stage: str) -> None:
    """Make the plans of ``stage`` for the run: their calls in one adapter run (after a restart
    where one of them asks for a fresh worker), each plan's outcomes and call numbers into
    ``ctx.made``. Each plan's calls are worked out once the earlier plans are made (a plan may
    read what an earlier stage made)."""
    plans = plans_at(stage)
    if not plans:
        return
    adapter = ctx.adapter
    fresh = adapter.restart() if any(p.fresh for p in plans) else False
    asked = []
    for plan in plans:
        asked.append((plan, plan.calls(ctx)))
    every = [c for _, calls in asked for c in calls]
    number = adapter.calls_made + 1  # the adapter counts every call it supports, in order
    outcomes = adapter.run(every) if every else []
    at = 0
    for plan, calls in asked:
        ctx.made[plan.name] = Made(calls, outcomes[at:at + len(calls)], number, fresh)
        at += len(calls)
        number += sum(adapter.supports(c) for c in calls)


class CallQueue:
    """Functions of the adapter, run one at a time: in a worker thread in priority order, then
    the order submitted (``background``), or at once in the caller's thread. ``submit`` gives
    a Future."""

    def __init__(self, background: bool):
        self.background = background
        self._heap: list = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._closed = False
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._work, name="sl1conf-calls", daemon=True)
            self._thread.start()

    def submit(self, fn, urgent: bool = False) -> Future:
        """``fn()`` after the functions submitted before it (``urgent``: before every one not yet
        started that is not urgent itself)."""
        future: Future = Future()
        if not self.background:
            _run_into(future, fn)
            return future
        with self._ready:
            heapq.heappush(self._heap, (0 if urgent else 1, next(self._order), fn, future))
            self._ready.notify()
        return future

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._heap and not self._closed:
                    self._ready.wait()
                if self._closed:
                    for *_, future in self._heap:
                        future.cancel()
                    return
                *_, fn, future = heapq.heappop(self._heap)
            if future.set_running_or_notify_cancel():
                _run_into(future, fn)

    def close(self, interrupt=None) -> None:
        """No more functions: those not started are cancelled; waits for the one running, after
        calling ``interrupt()`` (the adapter's: it stops the run in progress) where given."""
        if self._thread is None:
            return
        with self._ready:
            self._closed = True
            self._ready.notify()
        if interrupt is not None and self._thread.is_alive():
            interrupt()
        self._thread.join()


def _run_into(future: Future, fn) -> None:
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: B902 (the caller's result() raises it, KeyboardInterrupt too)
        future.set_exception(exc)

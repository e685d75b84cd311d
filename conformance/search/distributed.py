"""A fuzzing campaign on a Dask distributed cluster (``sl1conf fuzz --scheduler ADDRESS``).

Why Dask and not a scheduler of our own: batches are independent pure functions of
(seed, batch index), which is exactly what ``Client.submit`` schedules, retries and spreads;
the campaign hands its batches to the client's ``concurrent.futures`` executor, the same
interface a local process pool offers, so the two runs share every line but this one.
Dask is an extra (``pip install 'smoothl1-conformance[distributed]'``), imported only here.
"""

from __future__ import annotations

import concurrent.futures as cf
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

from sl1conf.conformance.common.errors import SuiteError

__all__ = ["DaskError", "dask_executor", "submitted"]

CONNECT_TIMEOUT = "20s"
POLL = 0.2  # seconds between looks at the futures in flight (a Ctrl-C or a stop is seen between them)


class DaskError(SuiteError):
    """Dask is not installed, or the scheduler cannot be reached (one line)."""


@contextmanager
def dask_executor(address: str):
    """(executor, threads): a Dask client's executor for the scheduler at ``address`` and
    how many worker threads the cluster has; the client is closed afterwards."""
    try:
        from distributed import Client
    except ImportError:
        raise DaskError("--scheduler needs dask.distributed, which is not installed: "
                        "pip install 'smoothl1-conformance[distributed]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise DaskError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        threads = max(1, sum(client.nthreads().values()))
        yield client.get_executor(pure=False), threads
    finally:
        client.close()


def submitted(executor: cf.Executor, fn: Callable, items: Iterable[tuple], in_flight: int,
              more: "Callable[[], bool] | None" = None,
              stop: "Callable[[], bool] | None" = None) -> Iterator[cf.Future]:
    """``fn(*args)`` for each ``args`` of ``items`` through ``executor`` (a Dask client's, or a
    local ``common.pool.process_pool``), at most ``in_flight`` submitted at a time (a cluster's
    queue stays short, and a stop leaves little to cancel), while ``more()`` says so: each
    future once it has finished, in the order they finish. Once ``stop()`` says so (a
    signal), the futures already finished are the last: what is in flight is abandoned.
    What is still pending when this ends (the items are done, a stop, or the caller stops
    reading or raises) is cancelled."""
    todo, pending = iter(items), set()
    try:
        while stop is None or not stop():
            while len(pending) < in_flight and (more is None or more()):
                args = next(todo, None)
                if args is None:
                    break
                pending.add(executor.submit(fn, *args))
            if not pending:
                return
            finished, pending = cf.wait(pending, timeout=POLL, return_when=cf.FIRST_COMPLETED)
            yield from finished
    finally:
        for fut in pending:
            fut.cancel()

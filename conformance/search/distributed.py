"""A fuzzing campaign on a Dask distributed cluster (``sl1conf fuzz --scheduler ADDRESS``).

Why Dask and not a scheduler of our own: batches are independent pure functions of
(seed, batch index), which is exactly what ``Client.submit`` schedules, retries and spreads;
the campaign hands its batches to the client's ``concurrent.futures`` executor, the same
interface a local process pool offers, so the two runs share every line but this one.
Dask is an extra (``pip install 'smoothl1-conformance[distributed]'``), imported only here.
"""

from __future__ import annotations

from contextlib import contextmanager

from sl1conf.conformance.common.errors import SuiteError

__all__ = ["DaskError", "dask_executor"]

CONNECT_TIMEOUT = "20s"


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

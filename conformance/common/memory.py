"""Keep freed memory in the process for the next array, instead of handing it back.

Why: the engines allocate and free arrays of tens of MiB (one per judged column of a run of
8 million elements) over and over. glibc's malloc gives every block above its mmap threshold
(at most 32 MiB unless told otherwise) its own mapping and unmaps it on free, so each new
array is faulted in afresh, page by page; in a virtual machine a fault costs microseconds,
and a full certification spent more time in faults than in arithmetic (about 3.7 s of system
time against 4.3 s of user time judging four runs). Keeping every block in the heap and never
trimming it makes the second array of a size reuse the first one's pages. The cost: the
process keeps its peak memory until it exits. Nothing where the C library is not glibc.
"""

from __future__ import annotations

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_LARGE = 1 << 30  # blocks up to 1 GiB come from the heap; the heap gives back nothing below 1 GiB free
_DONE: list = []


def keep_freed_memory() -> bool:
    """Once per process: tell glibc's malloc to keep freed blocks for reuse (see the module's
    docstring). True where it was told (now or before)."""
    if _DONE:
        return _DONE[0]
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        _DONE.append(bool(mallopt(_M_MMAP_THRESHOLD, _LARGE)) and bool(mallopt(_M_TRIM_THRESHOLD, _LARGE)))
    except (OSError, AttributeError):
        _DONE.append(False)
    return _DONE[0]

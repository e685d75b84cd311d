"""Keep freed memory in the process for the next array, instead of handing it back.

Why: the engines allocate and free arrays of tens of MiB (one per judged column of a run of
8 million elements) over and over. glibc's malloc gives every block above its mmap threshold
(at most 32 MiB unless told otherwise) its own mapping and unmaps it on free, so each new
array is faulted in afresh, page by page; in a virtual machine a fault costs microseconds,
and a full certification spent more time in faults than in arithmetic (about 3.7 s of system
time against 4.3 s of user time judging four runs). Keeping every block in the heap and never
trimming it makes the second array of a size reuse the first one's pages. The cost: the
process keeps its peak memory until it exits. Nothing where the C library is not glibc.

numpy's own habit of asking for transparent huge pages for every array of 4 MiB or more is
turned off with it: where the kernel answers that request with direct compaction (THP
"madvise" with defrag "madvise", as on the machines this suite is benchmarked on, which never
got a huge page: AnonHugePages stayed 0) each such fault stalled, and a full certification
under qemu took 18.7 s instead of 16.2 s (system time 6.4 s against 3.4 s). With freed blocks
kept, pages are faulted in once, whatever their size.
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
    if _DONE[0]:
        _no_huge_page_requests()
    return _DONE[0]


def _no_huge_page_requests() -> None:
    """numpy stops asking for transparent huge pages (a private switch of numpy's; nothing where
    this numpy has none)."""
    import numpy as np

    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    if hasattr(switch, "_set_madvise_hugepage"):
        switch._set_madvise_hugepage(False)

"""How the shared-storage API splits ``length`` elements across the cores of ``core_mask``.

The manual says only that the cores chosen by ``core_mask`` work on the data
together. The suite's model of that (used by the kernel, the sample library and
the vectors) is the usual static split: each set bit, lowest first, takes one
contiguous chunk; the first ``length % cores`` chunks take one element more.
Results must never depend on it (every element is independent), which is
exactly what the core-mask requirements check.
"""

from __future__ import annotations

__all__ = ["MAX_CORES", "cores_of", "core_chunks"]

MAX_CORES = 32
"""Bits of an ``int`` core_mask that can name a core (the manual's example uses 0xff)."""


def cores_of(core_mask: int) -> list[int]:
    """Indices of the set bits of ``core_mask``, lowest first."""
    if not 0 <= core_mask < (1 << MAX_CORES):
        raise ValueError(f"core_mask {core_mask:#x} is outside 0..0x{(1 << MAX_CORES) - 1:x}")
    return [i for i in range(MAX_CORES) if core_mask >> i & 1]


def core_chunks(length: int, core_mask: int) -> list[tuple[int, int, int]]:
    """(core, start, stop) for each core of the mask; empty chunks included, in core order."""
    cores = cores_of(core_mask)
    if length < 0:
        raise ValueError(f"length {length} is negative")
    if not cores:
        return []
    per, extra = divmod(length, len(cores))
    chunks, start = [], 0
    for k, core in enumerate(cores):
        stop = start + per + (1 if k < extra else 0)
        chunks.append((core, start, stop))
        start = stop
    return chunks

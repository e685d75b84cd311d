"""The geometry of a volume: the elements of every dy plane numbered one after another (element
``p * pairs + q`` is pair q of the subset at the p-th dy of the set), cut into blocks of the
sweep's block size, a block spanning planes where a plane is smaller than a block.

Why planes share blocks: a call takes dy as an array, so one call can hold many planes; a
small subset (one pair, ``x2=V``) then costs one call per 2^20 elements, not one per plane
(65,536 planes of one pair are one block, not 65,536). Why one numbering: a block is still a
pure function of (the configuration, k), an element's number ``at`` names its plane and its
pair, and shards, resume and merge need nothing new. A sweep of one dy numbers as before.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np


__all__ = ["Planes"]


@dataclass(frozen=True)
class Planes:
    """``dys`` (uint16, increasing) planes of ``pairs`` pairs each, in blocks of ``block`` elements."""

    dys: np.ndarray
    pairs: int
    block: int

    @classmethod
    def of_state(cls, state: dict) -> "Planes":
        """The planes of a sweep state (its ``config.dy``, ``pairs`` and ``block_elements``)."""
        from sl1conf.conformance.search.sweep_dy import plane_values

        return cls(plane_values(state["config"]["dy"]), state["pairs"], state["config"]["block_elements"])

    @property
    def elements(self) -> int:
        return self.pairs * len(self.dys)

    @property
    def blocks(self) -> int:
        return -(-self.elements // self.block)

    def span(self, k: int) -> tuple:
        """(lo, hi): the elements of block k."""
        lo = k * self.block
        return lo, min(lo + self.block, self.elements)

    def segments(self, lo: int, hi: int) -> list:
        """[(plane, first pair, end pair)] of elements lo..hi-1, plane by plane."""
        out = []
        while lo < hi:
            p, q = divmod(lo, self.pairs)
            end = min(self.pairs, q + hi - lo)
            out.append((p, q, end))
            lo += end - q
        return out

    def blocks_of_plane(self, p: int) -> tuple:
        """(first, last): the blocks holding plane p's elements."""
        return p * self.pairs // self.block, ((p + 1) * self.pairs - 1) // self.block

    def planes_complete(self, done) -> int:
        """Planes all of whose blocks are in ``done`` (a set of block numbers)."""
        if not self.pairs:
            return 0
        from sl1conf.conformance.search.sweep_blocks import BlockSet

        runs = (done if isinstance(done, BlockSet) else BlockSet(done)).runs()
        starts = [a for a, _ in runs]
        n = 0
        for p in range(len(self.dys)):
            first, last = self.blocks_of_plane(p)
            i = bisect.bisect_right(starts, first) - 1
            n += i >= 0 and runs[i][1] > last  # half-open runs
        return n

    def dy_of(self, lo: int, hi: int, out: np.ndarray) -> np.ndarray:
        """The dy of elements lo..hi-1, into ``out[:hi - lo]``."""
        at = 0
        for p, q, end in self.segments(lo, hi):
            out[at:at + end - q] = self.dys[p]
            at += end - q
        return out[:hi - lo]

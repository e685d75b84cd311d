"""``--shard I/N``: split work deterministically so N machines cover disjoint parts.

Shards are numbered from 1, as CI matrices and batch systems usually number their jobs.
Work item ``k`` (a batch number, a block of the sweep) belongs to shard ``k % N + 1``,
so every shard gets an even share however many items there are, and the union of the
N shards is every item exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Shard", "WHOLE", "parse_shard", "missing_shards"]


@dataclass(frozen=True)
class Shard:
    index: int  # 1..count
    count: int

    def owns(self, item: int) -> bool:
        return item % self.count == self.index - 1

    def items(self, start: int, stop: int) -> range:
        """The items of ``range(start, stop)`` this shard owns."""
        first = start + (self.index - 1 - start) % self.count
        return range(first, stop, self.count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


WHOLE = Shard(1, 1)


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> Shard(2, 4); ValueError with a readable message otherwise."""
    parts = text.split("/")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"shard {text!r} is not of the form I/N (for example 1/4)")
    index, count = (int(p) for p in parts)
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"shard {text!r}: I must be from 1 to N and N at least 1")
    return Shard(index, count)


def missing_shards(count: int, present, total: "int | None") -> dict:
    """Shard (as text) -> how many of ``total`` items it would have run (None where ``total``
    is None: a timed campaign, unknown), for each of the ``count`` shards not in ``present``
    (what a merge of shards' outputs says is missing)."""
    shards = (Shard(index, count) for index in range(1, count + 1))
    return {str(shard): None if total is None else len(shard.items(0, total))
            for shard in shards if str(shard) not in present}

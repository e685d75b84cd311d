"""The blocks a sweep has done, kept as runs of consecutive block numbers (:class:`BlockSet`).

Why runs and not a set of numbers: a volume of every dy for every pair is 2^28 blocks of 2^20
elements; a Python set of them would take gigabytes in the process that keeps the checkpoint,
and the list of blocks still to do as much again. Blocks finish nearly in order (a pool holds a
few per worker in flight), so the blocks done are a few runs whatever their number, the state's
``done`` text (``0-15,32``) is those runs, and the blocks to do are walked lazily around them.
It reads as a set where the sweep's code and tests used one (``in``, ``len``, ``add``, ``|=``,
``&``, ``<=``, ``==``, iteration in order).
"""

from __future__ import annotations

import bisect
import re

__all__ = ["BlockSet"]

_TEXT = re.compile(r"([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?")


class BlockSet:
    """Block numbers as sorted, disjoint, non-adjacent half-open runs ``[starts[i], ends[i])``."""

    def __init__(self, items=()):
        self.starts, self.ends, self.count = [], [], 0
        for k in sorted(set(items)):
            self.add(k)

    @classmethod
    def _of_runs(cls, runs) -> "BlockSet":
        """The union of half-open runs ``(a, b)``, in any order."""
        out = cls()
        for a, b in sorted(r for r in runs if r[1] > r[0]):
            if out.ends and a <= out.ends[-1]:
                if b > out.ends[-1]:
                    out.count += b - out.ends[-1]
                    out.ends[-1] = b
            else:
                out.starts.append(a)
                out.ends.append(b)
                out.count += b - a
        return out

    def runs(self) -> list:
        return list(zip(self.starts, self.ends))

    def add(self, k: int) -> None:
        i = bisect.bisect_right(self.starts, k) - 1
        if i >= 0 and k < self.ends[i]:
            return
        left = i >= 0 and self.ends[i] == k
        right = i + 1 < len(self.starts) and self.starts[i + 1] == k + 1
        if left and right:
            self.ends[i] = self.ends.pop(i + 1)
            del self.starts[i + 1]
        elif left:
            self.ends[i] = k + 1
        elif right:
            self.starts[i + 1] = k
        else:
            self.starts.insert(i + 1, k)
            self.ends.insert(i + 1, k + 1)
        self.count += 1

    def __contains__(self, k) -> bool:
        i = bisect.bisect_right(self.starts, k) - 1
        return i >= 0 and k < self.ends[i]

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        for a, b in zip(self.starts, self.ends):
            yield from range(a, b)

    def __ior__(self, other) -> "BlockSet":
        merged = BlockSet._of_runs(self.runs() + _runs_of(other))
        self.starts, self.ends, self.count = merged.starts, merged.ends, merged.count
        return self

    def __and__(self, other) -> "BlockSet":
        other = other if isinstance(other, BlockSet) else BlockSet(other)
        out, j = [], 0
        for a, b in self.runs():
            while j < len(other.starts) and other.ends[j] <= a:
                j += 1
            i = j
            while i < len(other.starts) and other.starts[i] < b:
                out.append((max(a, other.starts[i]), min(b, other.ends[i])))
                i += 1
        return BlockSet._of_runs(out)

    def __le__(self, other) -> bool:
        return len(self & other) == len(self)

    def __eq__(self, other) -> bool:
        if isinstance(other, BlockSet):
            return self.runs() == other.runs()
        if isinstance(other, (set, frozenset)):
            return len(other) == self.count and all(k in self for k in other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"BlockSet({self.text()!r})"

    def owned(self, shard) -> int:
        """Blocks of this set that ``shard`` (``shards.Shard``) owns."""
        n, r = shard.count, shard.index - 1
        return sum((b - 1 - r) // n - (a - 1 - r) // n for a, b in self.runs())

    def missing(self, items: range):
        """The numbers of ``items`` (a range with a positive step) not in this set, in order, lazily."""
        k, step, stop = items.start, items.step, items.stop
        i = max(bisect.bisect_right(self.starts, k) - 1, 0)
        while k < stop:
            while i < len(self.starts) and self.ends[i] <= k:
                i += 1
            if i < len(self.starts) and self.starts[i] <= k:  # inside a run: to the first item past it
                k += -(-(self.ends[i] - k) // step) * step
                continue
            yield k
            k += step

    def text(self) -> str:
        """``0-15,32``: the runs, inclusive (the state's ``done``)."""
        return ",".join(str(a) if b - a == 1 else f"{a}-{b - 1}" for a, b in self.runs())

    @classmethod
    def from_text(cls, text: str) -> "BlockSet":
        """The blocks of :meth:`text`'s text; ValueError for anything else (a run ending before it starts)."""
        if not _TEXT.fullmatch(text):
            raise ValueError(f"{text[:40]!r} is not ranges of whole numbers (as 0-3,7,9-12)")
        runs = []
        for part in filter(None, text.split(",")):
            a, _, b = part.partition("-")
            a, b = int(a), int(b or a)
            if b < a:
                raise ValueError(f"the range {part} ends before it starts")
            runs.append((a, b + 1))
        return cls._of_runs(runs)


def _runs_of(other) -> list:
    return other.runs() if isinstance(other, BlockSet) else BlockSet(other).runs()

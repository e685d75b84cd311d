"""Sets of work items (fuzz batches, sweep blocks) written short, as their runs.

Why runs: a campaign's or a sweep's output names the items it ran, and a shard runs every
N-th item, so a list of thousands of numbers is a few runs. One grouping serves two spellings
that the output formats fix: a fuzz summary's ``[start, stop, step]`` triples (a shard's
items are one run with its step; schemas/fuzz-summary.schema.json) and a sweep state's
``"0-15,32"`` text (runs of consecutive items; schemas/sweep-state.schema.json).
"""

from __future__ import annotations

import re

__all__ = ["runs", "expand", "runs_text", "ranges_text", "parse_ranges"]

RANGES_TEXT = re.compile(r"([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?")
"""What :func:`parse_ranges` reads (the pattern of the sweep state's ``done``)."""


def _grouped(items, any_step: bool) -> list:
    """(first, last, step) for each run of the sorted distinct ``items``, grown greedily: a run
    of one item takes the next as its second (at any distance when ``any_step``, else only
    the next number), a longer run only the item one step after its last."""
    out = []
    for k in sorted(set(items)):
        if out:
            first, last, step = out[-1]
            if (first == last and (any_step or k == last + 1)) or (first != last and k - last == step):
                out[-1] = (first, k, k - first if first == last else step)
                continue
        out.append((k, k, 1))
    return out


def runs(items) -> list:
    """Item numbers as ``[start, stop, step]`` runs (``range(start, stop, step)`` each):
    ``[1, 4, 7, 8]`` -> ``[[1, 10, 3], [8, 9, 1]]``."""
    return [[first, last + step, step] for first, last, step in _grouped(items, any_step=True)]


def expand(triples) -> list:
    """The item numbers of :func:`runs`' triples, in their order."""
    return [k for start, stop, step in triples for k in range(start, stop, step)]


def runs_text(triples) -> str:
    """:func:`runs`' triples in words, for a message: ``1 to 7 every 3, 8`` (``none`` for none)."""
    return ", ".join(f"{a}" if b - a <= c else f"{a} to {b - c}" + (f" every {c}" if c > 1 else "")
                     for a, b, c in triples) or "none"


def ranges_text(items) -> str:
    """Item numbers as runs of consecutive numbers: ``{0, 1, 2, 3, 7, 9, 10}`` -> ``0-3,7,9-10``."""
    return ",".join(str(first) if first == last else f"{first}-{last}"
                    for first, last, _ in _grouped(items, any_step=False))


def parse_ranges(text: str) -> set:
    """The item numbers of :func:`ranges_text`'s text; ValueError naming the problem for text
    that is not runs of whole numbers, or a run that ends before it starts."""
    if not RANGES_TEXT.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not ranges of whole numbers (as 0-3,7,9-12)")
    items = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        if int(last or first) < int(first):
            raise ValueError(f"the range {part} ends before it starts")
        items.update(range(int(first), int(last or first) + 1))
    return items

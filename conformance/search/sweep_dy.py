"""The ``--dy`` grammar of a sweep: one value (one plane, as before), ``all`` (every fp16
pattern: 65,536 planes), ranges of bit patterns (``0x3c00-0x3fff``) and lists of both
(``0x0001-0x03ff,0x3c00,1.5``).

Why a module of its own: the command line parses it, the configuration names the planes by
its canonical text (a checkpoint resumes and merges only the same set), and the volume's
certificate cites it; one grammar and one canonical spelling serve all three. The planes are
numbered in increasing bit-pattern order, so plane p of a set is the same plane for every
reader.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from sl1conf.reference import formats

__all__ = ["ALL", "parse_dys", "dys_text", "plane_values", "is_single"]

FP16 = formats.FP16
ALL = "all"
"""Every one of the 65,536 fp16 patterns, NaNs and infinities included."""
_RANGE = re.compile(r"^\s*(0x[0-9a-fA-F]+)\s*-\s*(0x[0-9a-fA-F]+)\s*$")


def _pattern(text: str, item: str) -> int:
    bits = int(text, 16)
    if bits > 0xFFFF:
        raise ValueError(f"{item!r}: {text} does not fit a 16-bit fp16 pattern")
    return bits


def parse_dys(text: str) -> tuple:
    """The dy patterns ``text`` names, sorted and distinct: ``all``, or a comma-separated list of
    values (a decimal, a hex float or a bit pattern, as ``--beta``) and inclusive ranges of bit
    patterns ``0xAAAA-0xBBBB``. ValueError with one line naming the item for anything else."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty dy set (give a value, a range 0x3c00-0x3fff, a list, or all)")
    if text.strip().lower() == ALL:
        return tuple(range(1 << 16))
    out = set()
    for item in text.split(","):
        if not item.strip():
            raise ValueError(f"{text!r}: an empty item in the list")
        m = _RANGE.match(item)
        if m:
            lo, hi = _pattern(m.group(1), item), _pattern(m.group(2), item)
            if hi < lo:
                raise ValueError(f"{item.strip()!r}: the range ends before it starts")
            out.update(range(lo, hi + 1))
            continue
        try:
            bits, _ = formats.parse_value(FP16, item)
        except ValueError as exc:
            raise ValueError(f"{item.strip()!r}: {exc} (a range is two bit patterns, 0x3c00-0x3fff)") from None
        out.add(bits)
    return tuple(sorted(out))


def dys_text(values) -> str:
    """The canonical spelling of a dy set: one pattern ``0x3c01`` (a single plane, as sweeps of
    one dy always named it), ``all``, or runs ``0x0001-0x03ff,0x3c00``."""
    values = sorted(set(int(v) for v in values))
    if len(values) == 1 << 16:
        return ALL
    h = lambda b: formats.hex_bits(FP16, b)  # noqa: E731
    runs, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            runs.append(h(start) if start == v else f"{h(start)}-{h(v)}")
            start = None
    return ",".join(runs)


@functools.lru_cache(maxsize=8)
def plane_values(text: str) -> np.ndarray:
    """The planes of a canonical dy set, in order, as uint16 (cached: every block of a volume asks)."""
    values = np.array(parse_dys(text), np.uint16)
    values.flags.writeable = False
    return values


def is_single(text: str) -> bool:
    """Whether ``text`` (canonical) names one plane."""
    return text != ALL and "," not in text and "-" not in text

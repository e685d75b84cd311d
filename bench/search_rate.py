"""How fast the search commands check elements: ``sl1conf fuzz`` and ``sl1conf sweep``.

Rows (each a new process of the command, as a user runs it; elements/s from its own summary):

  fuzz, builtin:kernel, --workers 2     fp16 and fp32, p and s, mt7004, 20 s; target 20 M/s (issue 15)
  fuzz, ctypes sample, --workers 2      the sample library, isolated worker; target 10 M/s (issue 15)
  sweep, full fp16 plane, --workers 2   every (x1, x2) for beta 0x2e66, dy 0x3c01 on ieee; target 30 s
"""

from __future__ import annotations


def measure() -> dict:
    """Filled in by the search-rate work of issue 15."""
    return {"rows": {}}


def markdown(result: dict) -> list:
    return []

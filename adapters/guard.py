"""Guarded buffers: memory errors of an implementation under test become visible.

Each array gets its own mapping: an inaccessible guard page, the array, a second
inaccessible guard page. Two layouts (:data:`LAYOUTS`):

* ``"end"``: the array's *end* touches the second guard page, so reading or writing even
  one element past the end faults at once (odd lengths included). The slack between the
  first guard page and the start holds canary bytes, checked after the call: a write just
  before the array shows there (a read does not).
* ``"start"``: the array's *first element* sits right after the first guard page (a page
  boundary, so every alignment holds), so a read or a write one element before the start
  faults at once; the slack after the end holds canaries.

With an alignment requirement in the ``"end"`` layout the start is aligned and the few
bytes between the end and the guard page are canaries too.

Guard pages need ``mprotect`` (POSIX); elsewhere the buffers have canaries only
(``GuardedArray.guarded`` says which).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

import numpy as np

__all__ = ["PAGE", "CANARY", "LAYOUTS", "GuardedArray", "set_access"]

PAGE = mmap.PAGESIZE
CANARY = 0xA5  # canary byte; 0xa5a5 / 0xa5a5a5a5 is an unremarkable number, not a special value
LAYOUTS = ("end", "start")  # which end of the array touches a guard page

_PROT_NONE = 0
_libc = None


def _mprotect():
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            _libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        except (OSError, AttributeError):
            _libc = False
    return _libc.mprotect if _libc else None


def set_access(address: int, size: int, accessible: bool) -> bool:
    """Make ``size`` bytes of pages from ``address`` readable and writable, or inaccessible;
    False where the system has no mprotect or refuses."""
    protect = _mprotect()
    if protect is None:
        return False
    mode = mmap.PROT_READ | mmap.PROT_WRITE if accessible else _PROT_NONE
    return protect(ctypes.c_void_p(address), size, mode) == 0


class GuardedArray:
    """``nbytes`` bytes between two guard pages, the end touching the second one (layout
    ``"end"``) or the start touching the first (``"start"``)."""

    def __init__(self, nbytes: int, align: int = 1, layout: str = "end"):
        self._map = mmap.mmap(-1, self.body_for(nbytes, align) + 2 * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self._map))
        self.base, self.body = base, len(self._map) - 2 * PAGE
        self.lo_guard = (base, base + PAGE)
        self.hi_guard = (base + PAGE + self.body, base + 2 * PAGE + self.body)
        self.guarded = set_access(base, PAGE, False) & set_access(self.hi_guard[0], PAGE, False)
        self.place(nbytes, align, layout)

    @staticmethod
    def body_for(nbytes: int, align: int) -> int:
        """Bytes between the guard pages for ``nbytes`` of data at ``align``: whole pages."""
        if align < 1 or align & (align - 1):
            raise ValueError(f"alignment {align} is not a power of two")
        return -(-(nbytes + align) // PAGE) * PAGE  # room for the data and the alignment slack

    def place(self, nbytes: int, align: int = 1, layout: str = "end") -> "GuardedArray":
        """Put ``nbytes`` of data against the guard page ``layout`` names, canaries in the slack:
        at creation, and again to reuse the mapping for another call of the same body size
        (a fresh mapping costs a page fault per page on first touch: ~10 ms for 4 MB here)."""
        if layout not in LAYOUTS:
            raise ValueError(f"layout {layout!r} is not one of {LAYOUTS}")
        if self.body_for(nbytes, align) != self.body:
            raise ValueError("place: the data needs a mapping of another size")
        self.layout, self.nbytes = layout, nbytes
        if layout == "start":
            start = self.base + PAGE  # page-aligned: every alignment up to a page holds
        else:
            start = self.hi_guard[0] - nbytes
            start -= start % align  # aligning moves the start down, leaving canaries after the end
        self.offset, self.address = start - self.base, start
        # canaries in the slack on both sides of the data (the data itself is written by the caller)
        end = self.offset + nbytes
        self._map[PAGE:self.offset] = bytes([CANARY]) * (self.offset - PAGE)
        self._map[end:PAGE + self.body] = bytes([CANARY]) * (PAGE + self.body - end)
        return self

    def array(self, dtype) -> np.ndarray:
        """The data as a numpy array (a view into the guarded mapping)."""
        dtype = np.dtype(dtype)
        return np.frombuffer(self._map, dtype=dtype, count=self.nbytes // dtype.itemsize, offset=self.offset)

    def canaries_intact(self) -> bool:
        """True when every byte around the data, inside the guard pages, still holds CANARY."""
        lo, hi = PAGE, PAGE + self.body
        before = self._map[lo:self.offset]
        after = self._map[self.offset + self.nbytes:hi]
        return before.count(CANARY) == len(before) and after.count(CANARY) == len(after)

    def where(self, address: int) -> "str | None":
        """'before' / 'after' when ``address`` is in this buffer's low / high guard page."""
        if self.lo_guard[0] <= address < self.lo_guard[1]:
            return "before"
        if self.hi_guard[0] <= address < self.hi_guard[1]:
            return "after"
        return None

    def close(self) -> None:
        if self.guarded:  # give the guard pages back their access first
            set_access(self.lo_guard[0], PAGE, True)
            set_access(self.hi_guard[0], PAGE, True)
        try:
            self._map.close()
        except BufferError:  # numpy views are still alive: the mapping is freed with the last of them
            pass


if os.name == "nt":  # pragma: no cover - mprotect is POSIX; Windows gets canaries only
    _libc = False

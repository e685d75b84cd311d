"""The staging memory between the suite and its ctypes worker: one call's arrays, mapped by both.

Why: the arrays travel through a file both processes map, not through the worker's pipe
(pickling four arrays of a million elements each way cost more than the call): the pipe carries
a small request and answer. In the worker the mapping is inaccessible (``mprotect``) while the
library runs, so a stray write into it faults like one into a guard page instead of changing
what the parent reads back. Its header says where the guard pages of the call in progress lie,
so that a fault can be named after the array it hit.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import tempfile

import numpy as np

from .guard import set_access

__all__ = ["Stage"]


class Stage:
    """Shared memory both processes map, holding one call's arrays back to back (``place`` lays
    them out; the layout travels in the request). An anonymous file (``memfd`` where the system
    has it, sealed against shrinking, so the worker cannot cut the parent's mapping short;
    else an unlinked temporary file) handed to the worker as a file descriptor. It grows, in
    whole MiB, when a call needs more; the worker maps it again when the request's size changed."""

    GROW = 1 << 20

    def __init__(self, fd: int):
        self.fd, self.size, self.map = fd, 0, None

    @classmethod
    def create(cls) -> "Stage":
        try:
            fd = os.memfd_create("sl1conf-stage", os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
        except (AttributeError, OSError):
            f = tempfile.TemporaryFile()
            fd = os.dup(f.fileno())
            f.close()
        else:
            try:
                import fcntl

                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
            except (ImportError, AttributeError, OSError):
                pass
        return cls(fd)

    def resize(self, size: int, grow_file: bool = False) -> None:
        if size == self.size and (self.map is not None or not size):
            return
        if self.map is not None:
            self.map.close()
            self.map = None
        if grow_file:
            os.ftruncate(self.fd, size)
        self.size = size
        self.map = mmap.mmap(self.fd, size) if size else None

    HEADER = 4096  # the stage's first bytes: the guard regions of the call in progress (``regions``)
    _REGION = struct.Struct("<B4Q")  # array (index into ARRAYS), low guard start and end, high guard start and end
    ARRAYS = ("dy", "dx1", "x1", "x2")

    def write_regions(self, regions: dict) -> None:
        """The worker, before each call: where the guard pages of the call's arrays lie (read by
        the parent only when the call ends the worker, to name the array a fault hit)."""
        blob = struct.pack("<B", len(regions)) + b"".join(
            self._REGION.pack(self.ARRAYS.index(name), *lo, *hi) for name, (lo, hi) in regions.items())
        self.map[:len(blob)] = blob

    def regions(self) -> dict:
        if self.map is None or self.size < self.HEADER:
            return {}
        count, at, out = self.map[0], 1, {}
        for _ in range(min(count, len(self.ARRAYS))):
            k, lo0, lo1, hi0, hi1 = self._REGION.unpack_from(self.map, at)
            at += self._REGION.size
            if k < len(self.ARRAYS):
                out[self.ARRAYS[k]] = ((lo0, lo1), (hi0, hi1))
        return out

    def place(self, arrays: dict) -> dict:
        """Write ``arrays`` (name -> array) into the stage after its header, growing it if need be:
        their layout (name -> (offset, dtype, count)), by which the other side finds them."""
        layout, at = {}, self.HEADER
        if self.map is not None:
            self.map[0] = 0  # no regions until the worker writes this call's
        for name, a in arrays.items():
            layout[name] = (at, a.dtype.str, a.size)
            at += -(-a.nbytes // 64) * 64
        if at > self.size:
            self.resize(-(-at // self.GROW) * self.GROW, grow_file=True)
        for name, a in arrays.items():
            self.view(layout[name])[:] = a.reshape(-1)
        return layout

    def view(self, where) -> np.ndarray:
        at, dtype, count = where
        return np.frombuffer(self.map, dtype=dtype, count=count, offset=at) if count else np.empty(0, dtype)

    def protect(self, accessible: bool) -> None:
        """Make the mapping (in)accessible in this process (a no-op without mprotect)."""
        if self.map is not None:
            set_access(ctypes.addressof(ctypes.c_char.from_buffer(self.map)), self.size, accessible)

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
            self.map = None
        os.close(self.fd)

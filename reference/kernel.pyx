# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The fast kernel: every evaluation model of ``sl1conf.reference.models`` in C.

``smoothl1lossgrad(dy, x1, x2, beta, out=None, model=None, core_mask=None, threads=None)``
computes the same bits as the numpy emulation of ``model`` (NaN payloads aside)
at memory speed, with the GIL released. The default model is the manual's order
in the data's own precision (``divmul-fp16`` / ``divmul-fp32``).

``core_mask`` splits the range into one contiguous chunk per set bit, as the
shared-storage API would (``sl1conf.reference.cores``); ``threads`` runs the
chunks on up to that many threads (default: the CPUs available), never more
than one per ``MIN_PER_THREAD`` elements. The result never depends on
either: every element is computed on its own.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from sl1conf.reference.cores import core_chunks
from sl1conf.reference.formats import format_by_name
from sl1conf.reference.models import get_model

from libc.stdint cimport uint16_t
cimport numpy as cnp

cnp.import_array()

cdef extern from "csrc/loops.h" nogil:
    int sl1k_f32(int model, const float *dy, const float *x1, const float *x2,
                 float beta, float *out, Py_ssize_t n)
    int sl1k_f16(int model, const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                 uint16_t beta, uint16_t *out, Py_ssize_t n)
    const char *sl1k_isa()
    Py_ssize_t sl1k_f32_filtered(const unsigned int *dy, const float *x1, const float *x2,
                                 float beta, unsigned int *out, unsigned char *ambiguous,
                                 Py_ssize_t n)

_ORDERS = {"divmul": 0, "recipmul": 1, "muldiv": 2}
_COMPUTES = {"fp16": 0, "fp32": 1, "fp64": 2}
MIN_PER_THREAD = 1 << 17
"""A call uses at most one thread per this many elements (threads cost ~10-50 us to start work)."""

ISA = sl1k_isa().decode()
"""The instruction-set variant the loops run on (chosen at import time)."""

_pool = None
_pool_lock = threading.Lock()


def _executor():
    """One pool for the process, as many threads as CPUs, created once (thread-safe)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, default_threads() - 1),
                                       thread_name_prefix="sl1conf-kernel")
        return _pool


def default_threads():
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


cdef class _Job:
    """One call: raw pointers to the (already checked) arrays, run chunk by chunk without the GIL."""

    cdef int model, is_f32
    cdef object keep  # the arrays, alive as long as the job
    cdef char *dy
    cdef char *x1
    cdef char *x2
    cdef char *out
    cdef float f_beta
    cdef uint16_t h_beta

    def __init__(self, int model, cnp.ndarray dy, cnp.ndarray x1, cnp.ndarray x2, cnp.ndarray out, beta):
        self.model = model
        self.keep = (dy, x1, x2, out)
        self.dy, self.x1, self.x2 = <char *>cnp.PyArray_DATA(dy), <char *>cnp.PyArray_DATA(x1), <char *>cnp.PyArray_DATA(x2)
        self.out = <char *>cnp.PyArray_DATA(out)
        self.is_f32 = cnp.PyArray_ITEMSIZE(dy) == 4
        if self.is_f32:
            self.f_beta = float(beta)
        else:
            self.h_beta = int(np.asarray(beta).view(np.uint16))

    cpdef int run(self, Py_ssize_t start, Py_ssize_t stop):
        cdef int rc = 0
        if stop <= start:
            return 0
        if self.is_f32:
            with nogil:
                rc = sl1k_f32(self.model, <float *>self.dy + start, <float *>self.x1 + start,
                              <float *>self.x2 + start, self.f_beta, <float *>self.out + start,
                              stop - start)
        else:
            with nogil:
                rc = sl1k_f16(self.model, <uint16_t *>self.dy + start, <uint16_t *>self.x1 + start,
                              <uint16_t *>self.x2 + start, self.h_beta, <uint16_t *>self.out + start,
                              stop - start)
        return rc

    def run_all(self, chunks):
        return [self.run(s, e) for s, e in chunks]


_MODEL_IDS = {}
for _fmt in ("fp16", "fp32"):
    from sl1conf.reference.models import models_for as _models_for
    for _m in _models_for(_fmt):
        _MODEL_IDS[_fmt, _m.name] = _ORDERS[_m.order] * 3 + _COMPUTES[_m.compute]
    _MODEL_IDS[_fmt, None] = _MODEL_IDS[_fmt, f"divmul-{_fmt}"]


def _model_id(fmt, model):
    try:
        return _MODEL_IDS[fmt.name, model]
    except KeyError:
        m = get_model(model)  # raises for an unknown name
        raise ValueError(f"model {m.name} computes in a narrower format than {fmt.name}") from None


def smoothl1lossgrad(dy, x1, x2, beta, out=None, model=None, core_mask=None, threads=None):
    """dx1 for contiguous 1-d float16 or float32 arrays; see the module docstring."""
    dy = np.asarray(dy)
    fmt = format_by_name(dy.dtype)
    arrays = (dy, np.asarray(x1), np.asarray(x2))
    for name, a in zip(("dy", "x1", "x2"), arrays):
        if a.dtype != fmt.dtype:
            raise TypeError(f"{name} is {a.dtype}, expected {fmt.dtype} like dy")
        if a.ndim != 1 or not a.flags.c_contiguous:
            raise ValueError(f"{name} must be a contiguous 1-d array")
        if a.shape != dy.shape:
            raise ValueError(f"{name} has {a.shape[0]} elements, dy has {dy.shape[0]}")
    n = dy.shape[0]
    if out is None:
        out = np.empty(n, dtype=fmt.dtype)
    elif out.dtype != fmt.dtype or out.shape != (n,) or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"out must be a writeable contiguous {fmt.dtype} array of {n} elements")
    job = _Job(_model_id(fmt, model), arrays[0], arrays[1], arrays[2], out,
               np.asarray(beta, dtype=fmt.dtype).reshape(()))

    # Chunks: one per core of core_mask, else one per thread. Threads: never more
    # than one per MIN_PER_THREAD elements, since starting work on a thread costs
    # more than computing a small chunk.
    limit = n // MIN_PER_THREAD
    if core_mask is None and (limit <= 1 or threads == 1):
        rcs = [job.run(0, n)]
    else:
        cpus = threads or default_threads()
        if core_mask is not None:
            chunks = [(s, e) for _, s, e in core_chunks(n, core_mask)]
        else:
            chunks = [(s, e) for _, s, e in core_chunks(n, (1 << min(cpus, limit, 32)) - 1)]
        workers = max(1, min(cpus, len(chunks), limit))
        groups = [chunks[w::workers] for w in range(workers)]
        # workers - 1 groups on the pool (a caller may ask for more threads than CPUs: they queue)
        futures = [_executor().submit(job.run_all, g) for g in groups[1:]]
        rcs = job.run_all(groups[0])
        for f in futures:
            rcs += f.result()
    if any(rcs):
        raise RuntimeError(f"kernel rejected model {model} for {fmt.name}")
    return out


def f32_filtered(const unsigned int[::1] dy, const float[::1] x1, const float[::1] x2, float beta,
                 unsigned int[::1] out, unsigned char[::1] ambiguous):
    """The fast oracle's fp32 step (sl1conf.reference.fast_oracle); returns the ambiguous count."""
    cdef Py_ssize_t n = dy.shape[0], count
    if not (x1.shape[0] == x2.shape[0] == out.shape[0] == ambiguous.shape[0] == n):
        raise ValueError("f32_filtered: arrays differ in length")
    with nogil:
        count = sl1k_f32_filtered(&dy[0] if n else NULL, &x1[0] if n else NULL,
                                  &x2[0] if n else NULL, beta, &out[0] if n else NULL,
                                  &ambiguous[0] if n else NULL, n)
    return count

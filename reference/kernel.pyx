# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The fast kernel: every evaluation model of ``sl1conf.reference.models`` in C.

``smoothl1lossgrad(dy, x1, x2, beta, out=None, model=None, core_mask=None, threads=None)``
computes the same bits as the numpy emulation of ``model`` (NaN payloads aside)
at memory speed, with the GIL released. The default model is the manual's order
in the data's own precision (``divmul-fp16`` / ``divmul-fp32``).

``core_mask`` splits the range into one contiguous chunk per set bit, as the
shared-storage API would (``sl1conf.reference.cores``); ``threads`` runs the
chunks on up to that many threads (default: the CPUs available), never more
than one per ``MIN_PER_THREAD`` elements. The threads are a persistent C
worker pool (csrc/pool.c; docs/kernel.md), started on first use and again in a
forked child. The result never depends on either: every element is computed
on its own.
"""

import os

import numpy as np

from sl1conf.reference.cores import MAX_CORES, cores_of
from sl1conf.reference.formats import FP16, FP32, format_by_name
from sl1conf.reference.models import get_model

from libc.stdint cimport int64_t, uint16_t
cimport numpy as cnp

cnp.import_array()

cdef extern from "csrc/loops.h" nogil:
    ctypedef struct sl1k_call:
        int is_f32
        int traffic
        int model
        const void *dy
        const void *x1
        const void *x2
        void *out
        float f_beta
        uint16_t h_beta
    int sl1k_run(const sl1k_call *call, Py_ssize_t n, int tasks, int threads, int aligned)
    int sl1k_pool_workers()
    const char *sl1k_isa()
    Py_ssize_t sl1k_f32_filtered(const unsigned int *dy, const float *x1, const float *x2,
                                 float beta, unsigned int *out, unsigned char *ambiguous,
                                 Py_ssize_t n)
    Py_ssize_t sl1k_f16_mismatches(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                                   uint16_t beta, const uint16_t *got, Py_ssize_t n,
                                   int64_t *idx, uint16_t *want)
    void sl1k_f16_cr(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2, uint16_t beta,
                     uint16_t *out, Py_ssize_t n)
    int sl1k_f16_row(int model, const uint16_t *x1, uint16_t dy, uint16_t x2, uint16_t beta, uint16_t *out,
                     Py_ssize_t n)
    ctypedef struct sl1k_alone_tally:
        int64_t hist[4][10]
        int64_t zsign[4][10]
        int64_t worst[4]
        int64_t worst_dist[4]
        int64_t first_zsign[4]
        int64_t worst_want[4]
        int64_t zsign_want[4]
        int64_t alone
    ctypedef struct sl1k_rows:
        Py_ssize_t row
        const int64_t *runs
        Py_ssize_t nruns
    Py_ssize_t sl1k_f16_judge_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                                   uint16_t beta, const uint16_t *got, Py_ssize_t n, int budget,
                                   int strict_zero_sign, const int *models, int nmodels,
                                   const sl1k_rows *rows, int64_t *idx, uint16_t *want, sl1k_alone_tally *t)
    Py_ssize_t sl1k_f16_bias_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                                  uint16_t beta, const uint16_t *got, Py_ssize_t n, int budget,
                                  const int *held, int nheld, const sl1k_rows *rows, int64_t *idx, uint16_t *want,
                                  int64_t *explained)

_ORDERS = {"divmul": 0, "recipmul": 1, "muldiv": 2}
_COMPUTES = {"fp16": 0, "fp32": 1, "fp64": 2}
MIN_PER_THREAD = 1 << 15
"""A call uses at most one thread per this many elements (about 10 us of work for
fp32, 15 us for fp16): handing a range to a pool worker costs about a microsecond
when the worker is awake (it spins for 0.2 ms after each job), tens of
microseconds when it sleeps (docs/kernel.md)."""

ISA = sl1k_isa().decode()
"""The instruction-set variant the loops run on (chosen at import time)."""


def default_threads():
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def pool_workers():
    """Worker threads the C pool has started in this process (0 before the first threaded call)."""
    return sl1k_pool_workers()


_MODEL_IDS = {}
for _fmt in ("fp16", "fp32"):
    from sl1conf.reference.models import models_for as _models_for
    for _m in _models_for(_fmt):
        _MODEL_IDS[_fmt, _m.name] = _ORDERS[_m.order] * 3 + _COMPUTES[_m.compute]
    _MODEL_IDS[_fmt, None] = _MODEL_IDS[_fmt, f"divmul-{_fmt}"]
_FORMATS = {FP16.dtype: FP16, FP32.dtype: FP32}


def _model_id(fmt, model):
    try:
        return _MODEL_IDS[fmt.name, model]
    except KeyError:
        m = get_model(model)  # raises for an unknown name
        raise ValueError(f"model {m.name} computes in a narrower format than {fmt.name}") from None


cdef int _run(sl1k_call *call, Py_ssize_t n, object core_mask, object threads) except -2:
    """Split and run one call; returns sl1k_run's code. Without core_mask the split is
    ours to choose: boundaries on whole vectors."""
    cdef int tasks, nthreads, aligned, rc
    cdef Py_ssize_t limit = n // MIN_PER_THREAD
    if core_mask is None:
        aligned = 1
        if threads == 1 or limit < 2:
            nthreads = 1
        else:
            nthreads = <int>min(threads or default_threads(), limit, MAX_CORES)
        # Up to four ranges a thread, each at least MIN_PER_THREAD / 2: a worker slow to
        # start (asleep, or its CPU busy) leaves the caller ranges to take meanwhile.
        tasks = <int>max(nthreads, min(4 * nthreads, n // (MIN_PER_THREAD // 2)))
    else:
        aligned = 0
        if not 0 <= core_mask < (1 << MAX_CORES):
            cores_of(core_mask)  # raises, with the message
        tasks = bin(core_mask).count("1")  # one range per core, as cores.core_chunks splits
        nthreads = 1 if threads == 1 or limit < 2 else <int>max(1, min(threads or default_threads(), tasks, limit))
    with nogil:
        rc = sl1k_run(call, n, tasks, nthreads, aligned)
    return rc


cdef object _check(object a, object dtype, int typenum, str name, Py_ssize_t n):
    """a as a contiguous 1-d array of dtype and n elements, or the error (checked with
    numpy's C macros: a call's checks cost well under a microsecond)."""
    if not cnp.PyArray_Check(a):
        a = np.asarray(a)
    cdef cnp.ndarray arr = <cnp.ndarray>a
    if cnp.PyArray_TYPE(arr) != typenum:
        raise TypeError(f"{name} is {arr.dtype}, expected {dtype} like dy")
    if cnp.PyArray_NDIM(arr) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(arr):
        raise ValueError(f"{name} must be a contiguous 1-d array")
    if cnp.PyArray_DIM(arr, 0) != n:
        raise ValueError(f"{name} has {arr.shape[0]} elements, dy has {n}")
    return arr


def smoothl1lossgrad(dy, x1, x2, beta, out=None, model=None, core_mask=None, threads=None):
    """dx1 for contiguous 1-d float16 or float32 arrays; see the module docstring."""
    if not cnp.PyArray_Check(dy):
        dy = np.asarray(dy)
    fmt = _FORMATS.get((<cnp.ndarray>dy).dtype)
    if fmt is None:
        fmt = format_by_name((<cnp.ndarray>dy).dtype)  # raises for an unsupported dtype
    cdef bint f32 = fmt is FP32
    cdef int typenum = cnp.NPY_FLOAT32 if f32 else cnp.NPY_FLOAT16
    cdef Py_ssize_t n = cnp.PyArray_DIM(<cnp.ndarray>dy, 0) if cnp.PyArray_NDIM(<cnp.ndarray>dy) == 1 else -1
    dy = _check(dy, fmt.dtype, typenum, "dy", n)
    x1 = _check(x1, fmt.dtype, typenum, "x1", n)
    x2 = _check(x2, fmt.dtype, typenum, "x2", n)
    if out is None:
        out = np.empty(n, dtype=fmt.dtype)
    elif (not cnp.PyArray_Check(out) or cnp.PyArray_TYPE(<cnp.ndarray>out) != typenum
          or cnp.PyArray_NDIM(<cnp.ndarray>out) != 1 or cnp.PyArray_DIM(<cnp.ndarray>out, 0) != n
          or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>out) or not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out)):
        raise ValueError(f"out must be a writeable contiguous {fmt.dtype} array of {n} elements")
    cdef sl1k_call call
    call.traffic = 0
    call.model = _model_id(fmt, model)
    call.is_f32 = f32
    call.dy = cnp.PyArray_DATA(<cnp.ndarray>dy)
    call.x1 = cnp.PyArray_DATA(<cnp.ndarray>x1)
    call.x2 = cnp.PyArray_DATA(<cnp.ndarray>x2)
    call.out = cnp.PyArray_DATA(<cnp.ndarray>out)
    # beta: a numpy scalar of the data's type is read as it is (its bits), anything else
    # as numpy converts it.
    if f32 and type(beta) is np.float32:
        cnp.PyArray_ScalarAsCtype(beta, &call.f_beta)
    elif not f32 and type(beta) is np.float16:
        cnp.PyArray_ScalarAsCtype(beta, &call.h_beta)
    else:
        b = np.asarray(beta, dtype=fmt.dtype).reshape(())
        if f32:
            call.f_beta = float(b)
        else:
            call.h_beta = int(b.view(np.uint16))
    if _run(&call, n, core_mask, threads):
        raise RuntimeError(f"kernel rejected model {model} for {fmt.name}")
    return out


def _traffic(cnp.ndarray a, cnp.ndarray b, cnp.ndarray c, cnp.ndarray out, threads=1):
    """The bandwidth probe of bench/run.py (not part of the API): out = a ^ b ^ c on the
    bits of four contiguous 1-d arrays of 2- or 4-byte elements, split and threaded as
    smoothl1lossgrad is, so that its time is the kernel's memory traffic alone."""
    cdef Py_ssize_t n = a.shape[0]
    cdef int size = cnp.PyArray_ITEMSIZE(a)
    for x in (a, b, c, out):
        if x.ndim != 1 or x.shape[0] != n or not x.flags.c_contiguous or x.itemsize != size:
            raise ValueError("_traffic: four contiguous 1-d arrays of one length and element size")
    if size not in (2, 4) or not out.flags.writeable:
        raise ValueError("_traffic: 2- or 4-byte elements, a writeable out")
    cdef sl1k_call call
    call.traffic = 1
    call.model = 0
    call.is_f32 = size == 4
    call.dy, call.x1, call.x2 = cnp.PyArray_DATA(a), cnp.PyArray_DATA(b), cnp.PyArray_DATA(c)
    call.out = cnp.PyArray_DATA(out)
    _run(&call, n, None, threads)
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


def f16_mismatches(const uint16_t[::1] dy, const uint16_t[::1] x1, const uint16_t[::1] x2, uint16_t beta,
                   const uint16_t[::1] got):
    """(indices, correctly rounded bits there): the elements of ``got`` (fp16 bits) that are
    not the correctly rounded result for (dy, x1, x2, beta), NaN compared as a class (a NaN
    there as the canonical quiet NaN). The correctly rounded result is the muldiv-fp64 model's
    bits (``fast_oracle``'s proof), computed as :func:`f16_correctly_rounded` computes them
    and compared in the cache, one thread: the sweep's check of a block at the cost of the
    arithmetic (loops.c; the sweep itself calls :func:`f16_judge_pass`)."""
    cdef Py_ssize_t n = dy.shape[0], count = 0
    cdef _Pass p = _Pass(n, x1.shape[0], x2.shape[0], got.shape[0], (), None, "f16_mismatches")
    if n:
        with nogil:
            count = sl1k_f16_mismatches(&dy[0], &x1[0], &x2[0], beta, &got[0], n, p.ip, p.wp)
    return p.found(count, "f16_mismatches")


def f16_table_runs(const uint16_t[::1] table):
    """The stretches of ``table`` (fp16 bits) along which the values rise or fall strictly, finite,
    or are all NaN, 64 elements or more: an int64 array of (start, end, direction) rows covering
    the table in order, direction 1 (rising), -1 (falling), 2 (NaN: every result NaN) or 0
    (neither: the infinities, +0 beside -0, short stretches). Computed once a sweep worker, for
    :func:`f16_judge_pass`'s ``rows``."""
    v = np.asarray(table).view(np.float16).astype(np.float64)
    n = v.size
    with np.errstate(invalid="ignore"):
        step = np.where(np.isfinite(v[:-1]) & np.isfinite(v[1:]), np.sign(np.diff(v)), 0).astype(np.int8)
        step[np.isnan(v[:-1]) & np.isnan(v[1:])] = 2
    cut = np.flatnonzero(step[1:] != step[:-1]) + 1  # step i goes from element i to i + 1
    out, pos = [], 0
    for a, b in zip(np.r_[0, cut].tolist(), np.r_[cut, step.size].tolist()):
        d, lo, hi = int(step[a]) if step.size else 0, max(a, pos), b + 1
        if d and hi - lo >= 64:
            if lo > pos:
                out.append((pos, lo, 0))
            out.append((lo, hi, d))
            pos = hi
    if pos < n:
        out.append((pos, n, 0))
    return np.array(out, np.int64).reshape(-1, 3)


cdef bint _rows_cover(Py_ssize_t row, Py_ssize_t n, const int64_t[:, ::1] runs):
    """Whether rows of ``row`` cut ``n`` elements whole and ``runs`` cover one row in order, without
    gaps, each run nonempty and of a known direction (a loop: a call's check costs no numpy)."""
    cdef Py_ssize_t r, at = 0
    if row <= 0 or n % row or runs.shape[0] == 0:
        return False
    for r in range(runs.shape[0]):
        if runs[r, 0] != at or runs[r, 1] <= at or runs[r, 2] < -1 or runs[r, 2] > 2:
            return False
        at = runs[r, 1]
    return at == row


cdef class _Pass:
    """What judge_pass.c's passes take beside the arrays, checked: the outputs idx and want (n
    each: dy's n elements must be x1's, x2's and got's), the fp16 models' kernel ids (at most 16)
    and the block's rows (``rows`` as :func:`f16_judge_pass` takes it; ``shape_p`` NULL where
    there are none). ``what``: the function, for the errors."""
    cdef object idx, want, runs_arr
    cdef int64_t *ip
    cdef uint16_t *wp
    cdef int mids[16]
    cdef int nm
    cdef sl1k_rows shape
    cdef const sl1k_rows *shape_p

    def __cinit__(self, Py_ssize_t n, Py_ssize_t n1, Py_ssize_t n2, Py_ssize_t ng, models, rows, str what):
        cdef int64_t[::1] i
        cdef uint16_t[::1] w
        cdef const int64_t[:, ::1] runs
        if not (n1 == n2 == ng == n):
            raise ValueError(f"{what}: dy, x1, x2 and got must have one length")
        ids = [_MODEL_IDS["fp16", m] for m in models]
        if len(ids) > 16:
            raise ValueError(f"{what}: at most 16 models")
        self.nm = len(ids)
        for k in range(self.nm):
            self.mids[k] = ids[k]
        self.shape_p = NULL
        if rows is not None:
            row, runs_arr = rows
            self.runs_arr = np.ascontiguousarray(runs_arr, np.int64).reshape(-1, 3)  # (kept: shape points into it)
            runs = self.runs_arr
            if not _rows_cover(row, n, runs):
                raise ValueError(f"{what}: rows must cut the elements into whole rows and runs cover one row, "
                                 "in order, without gaps (f16_table_runs)")
            self.shape.row, self.shape.nruns, self.shape.runs = row, runs.shape[0], &runs[0, 0]  # (at least one run)
            self.shape_p = &self.shape
        self.idx, self.want = np.empty(n, np.int64), np.empty(n, np.uint16)
        self.ip, self.wp = NULL, NULL
        if n:
            i, w = self.idx, self.want
            self.ip, self.wp = &i[0], &w[0]

    cdef tuple found(self, Py_ssize_t count, str what):
        """(indices, correctly rounded bits) of the ``count`` elements the pass handed back."""
        if count < 0:
            raise MemoryError(what)
        return self.idx[:count].copy(), self.want[:count].copy()


def f16_judge_pass(const uint16_t[::1] dy, const uint16_t[::1] x1, const uint16_t[::1] x2, uint16_t beta,
                   const uint16_t[::1] got, int budget, bint strict_zero_sign, models, rows=None):
    """:func:`f16_mismatches` with ``judge.within_budget_alone``'s shortcut taken in C:
    (indices, correctly rounded bits there, alone) where the indices are the elements that
    differ and that the shortcut does not accept (under a profile of fp16 budget ``budget`` ULP
    and ``strict_zero_sign``; ``models``: the accepted models' names), and ``alone`` what it
    accepted, as sweep_tally counts it: a dict of ``hist`` and ``zsign`` (ROWS x BUCKETS),
    ``worst`` and ``worst_dist`` (per row: the index of the first element of the largest
    distance, -1 for none, and that distance), ``first_zsign`` (per row, -1 for none),
    ``worst_want`` and ``zsign_want`` (the correctly rounded bits of those) and ``count``.
    ``rows``: None, or ``(row, runs)`` where the elements are rows of ``row`` (a divisor of their
    number), x1 in each the same as in the first, x2 and dy one value a row, ``runs`` the first
    row's :func:`f16_table_runs`: the outer branches are then checked by a comparison with dy's
    bits, no arithmetic (judge_pass.c). The same result either way where the arrays have that
    shape, which is the caller's to know (sweep._Block made them so; it is not read back: that
    would cost a pass over three arrays); the runs are checked. One thread."""
    cdef Py_ssize_t n = dy.shape[0], count
    cdef _Pass p = _Pass(n, x1.shape[0], x2.shape[0], got.shape[0], models, rows, "f16_judge_pass")
    cdef sl1k_alone_tally t
    with nogil:
        count = sl1k_f16_judge_pass(&dy[0] if n else NULL, &x1[0] if n else NULL, &x2[0] if n else NULL, beta,
                                    &got[0] if n else NULL, n, budget, strict_zero_sign, p.mids, p.nm, p.shape_p,
                                    p.ip, p.wp, &t)
    idx, want = p.found(count, "f16_judge_pass")
    alone = {"hist": np.array(t.hist, np.int64).reshape(4, 10), "zsign": np.array(t.zsign, np.int64).reshape(4, 10),
             "worst": np.array(t.worst, np.int64), "worst_dist": np.array(t.worst_dist, np.int64),
             "first_zsign": np.array(t.first_zsign, np.int64), "worst_want": np.array(t.worst_want, np.uint16),
             "zsign_want": np.array(t.zsign_want, np.uint16), "count": int(t.alone)}
    return idx, want, alone


def f16_bias_pass(const uint16_t[::1] dy, const uint16_t[::1] x1, const uint16_t[::1] x2, uint16_t beta,
                  const uint16_t[::1] got, int budget, held, rows=None):
    """:func:`f16_mismatches` less the deviations the rounding-bias counts surely count as
    "explained" (accuracy.bias_counts: an ordinary element within ``budget`` ULPs whose result a
    model of ``held``, names of accepted models the profile's error model allows, gives bit
    for bit; judge_pass.c gives the conditions): (indices, correctly rounded bits there, how
    many were so counted). For a positive, finite, normal beta (else none are counted); ``rows``
    as :func:`f16_judge_pass` takes it. One thread."""
    cdef Py_ssize_t n = dy.shape[0], count
    cdef _Pass p = _Pass(n, x1.shape[0], x2.shape[0], got.shape[0], held, rows, "f16_bias_pass")
    cdef int64_t explained = 0
    with nogil:
        count = sl1k_f16_bias_pass(&dy[0] if n else NULL, &x1[0] if n else NULL, &x2[0] if n else NULL, beta,
                                   &got[0] if n else NULL, n, budget, p.mids, p.nm, p.shape_p, p.ip, p.wp, &explained)
    return (*p.found(count, "f16_bias_pass"), int(explained))


def f16_row_bits(model, const uint16_t[::1] x1, uint16_t dy, uint16_t x2, uint16_t beta):
    """The bits the sweep's check computes along a row's middle (judge_pass.c's check_middle:
    one dy and one x2, every exact |x1 - x2| <= beta, which the caller must hold to): ``model``'s
    (a name), or the correctly rounded result's (None): loops.c's sl1k_f16_row.
    For tests: they must be the whole loops' bits (``smoothl1lossgrad``, ``f16_correctly_rounded``)."""
    cdef Py_ssize_t n = x1.shape[0]
    cdef int mid = -1 if model is None else _MODEL_IDS["fp16", model]
    out = np.empty(n, np.uint16)
    cdef uint16_t[::1] o = out
    if n:
        with nogil:
            sl1k_f16_row(mid, &x1[0], dy, x2, beta, &o[0], n)
    return out


def f16_correctly_rounded(const uint16_t[::1] dy, const uint16_t[::1] x1, const uint16_t[::1] x2, uint16_t beta):
    """The correctly rounded fp16 bits of every element, as the sweep's check computes them
    (loops.c's sl1k_f16_cr: binary32 with a proven error bound, binary64 where that cannot
    tell): the muldiv-fp64 model's bits. One thread."""
    cdef Py_ssize_t n = dy.shape[0]
    if not (x1.shape[0] == x2.shape[0] == n):
        raise ValueError("f16_correctly_rounded: dy, x1 and x2 must have one length")
    out = np.empty(n, np.uint16)
    cdef uint16_t[::1] o = out
    if n:
        with nogil:
            sl1k_f16_cr(&dy[0], &x1[0], &x2[0], beta, &o[0], n)
    return out

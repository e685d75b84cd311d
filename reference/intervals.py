"""The interval arithmetic of one evaluation: the set of results an error model allows for an element.

Why: listing the bit patterns of every way an expression can come out cannot keep up; a bound
can. The set is computed per element as an interval of the data format (the hull: every
operation is monotone in each operand, so the interval of the rounded corners bounds
every way the operation can come out), plus the zero reached by a flush and the NaN
reached by 0/0 or 0 * inf after one. Where the reachable ``diff`` straddles ``+-beta`` both
branches count. numpy rounds every float16, float32 and float64 operation correctly (float16
through float32, exact for + - * / since 24 >= 2 * 11 + 2), so the corners are exact.
:func:`evaluate` gives one evaluation's set; :mod:`sl1conf.reference.reachable` judges by it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .error_model import LAST, ORDERS, OVERFLOW_CAUSES, RESULT, branched, place_modes
from .formats import Format
from .orders import parse as _grammar_order

__all__ = ["evaluate"]


@dataclass
class _Iv:
    """Per element: the hull [lo, hi] (``has``: not empty), a zero reached by a flush (``z``,
    with the code of why: 1 x1 - x2, 2 an intermediate, 3 the result), NaN reached (``nan``) and the
    overflows taken on the way (``ovf``: bits of error_model.OVERFLOW_CAUSES, an operation's
    infinity from finite operands, carried on by every operation that uses it)."""

    lo: np.ndarray
    hi: np.ndarray
    has: np.ndarray
    z: np.ndarray
    nan: np.ndarray
    ovf: np.ndarray = None

    def __post_init__(self):
        if self.ovf is None:
            self.ovf = np.zeros(self.lo.shape, np.uint16)

    @classmethod
    def point(cls, v):
        n = v.shape
        return cls(v.copy(), v.copy(), np.ones(n, bool), np.zeros(n, np.int8), np.zeros(n, bool))


def _bit(name: str) -> int:
    return 1 << OVERFLOW_CAUSES.index(name)


def _infinite(lo, hi, has):
    return has & (np.isinf(lo) | np.isinf(hi))


def _overflowed(out: "_Iv", carried, finite_in, place: str) -> "_Iv":
    """``out`` with its overflows: those its operands carried, and ``place``'s own where its hull
    is infinite (or NaN) from finite operands (``finite_in``)."""
    fresh = (_infinite(out.lo, out.hi, out.has) | out.nan) & finite_in
    out.ovf = (carried | np.where(fresh, _bit(place), 0)).astype(np.uint16)
    return out


def _in(P, v):
    return np.asarray(v, np.float64).astype(P)


def _near_zero(lo, hi, has, tiny: float):
    """Where the hull holds a subnormal, or a value that was subnormal before its rounding (an
    endpoint at the smallest normal): where a flush may give zero. Not an exact zero alone."""
    return has & (lo <= tiny) & (hi >= -tiny) & ~((lo == 0) & (hi == 0))


def _widen(lo, hi, k: int, P):
    """The k representable values of P on either side (lo down, hi up). A zero or an infinity
    stays what it is: those are exact (0 / beta, 1 / 0), not roundings an approximation moves."""
    lo, hi = _in(P, lo), _in(P, hi)
    with np.errstate(all="ignore"):
        for _ in range(k):
            lo = np.where((lo == 0) | np.isinf(lo), lo, np.nextafter(lo, P(-np.inf)))
            hi = np.where((hi == 0) | np.isinf(hi), hi, np.nextafter(hi, P(np.inf)))
    return lo.astype(np.float64), hi.astype(np.float64)


class _Arith:
    """The operations of one evaluation: precision P, the model's steps, flushing of intermediates
    (``flush_mid``: each may flush; ``modes``: each place's mode of MODES instead)."""

    def __init__(self, P, ulp: dict, flush_mid: bool, modes: "dict | None" = None):
        self.P, self.ulp, self.flush_mid = P, ulp, flush_mid
        self.modes = modes or {}
        self.tiny = float(np.finfo(P).tiny)

    def _done(self, lo, hi, has, z, nan, op, place, code=2) -> _Iv:
        lo, hi = _widen(lo, hi, self.ulp.get(op, 0), self.P)
        z = z.copy()
        mode = self.modes.get(place, "may" if self.flush_mid else "never")
        if mode != "never":
            near = _near_zero(lo, hi, has, self.tiny)
            z[near & (z == 0)] = code
            if mode == "always":
                has = _flush_all(lo, hi, has, near, self.tiny)
        return _Iv(lo, hi, has, z, nan)

    def _point(self, v, op, place, code=2) -> _Iv:
        one = _Iv.point(v)
        return self._done(one.lo, one.hi, one.has, one.z, one.nan, op, place, code)

    def sub(self, a, c) -> _Iv:
        P = self.P
        with np.errstate(all="ignore"):
            out = self._point((_in(P, a) - _in(P, c)).astype(np.float64), "sub", "x1 - x2", code=1)
        return _overflowed(out, 0, np.isfinite(a) & np.isfinite(c), "x1 - x2")

    def mul(self, A: _Iv, B: _Iv, place: str) -> _Iv:
        P = self.P
        with np.errstate(all="ignore"):
            corners = np.stack([(_in(P, a) * _in(P, b)).astype(np.float64)
                                for a, b in ((A.lo, B.lo), (A.lo, B.hi), (A.hi, B.lo), (A.hi, B.hi))])
        both = A.has & B.has
        bad = np.isnan(corners).any(axis=0) & both  # 0 * inf
        ok = ~np.isnan(corners).all(axis=0) & both
        with np.errstate(all="ignore"):
            lo = np.where(ok, np.nanmin(np.where(np.isnan(corners), np.inf, corners), axis=0), 0.0)
            hi = np.where(ok, np.nanmax(np.where(np.isnan(corners), -np.inf, corners), axis=0), 0.0)
        inf_a = A.has & (np.isinf(A.lo) | np.isinf(A.hi))
        inf_b = B.has & (np.isinf(B.lo) | np.isinf(B.hi))
        nan = A.nan | B.nan | bad | ((A.z > 0) & inf_b) | ((B.z > 0) & inf_a)
        z = np.where(A.z > 0, A.z, 0)
        z = np.where((z == 0) & (B.z > 0), B.z, z).astype(np.int8)
        z[(z > 0) & ~(A.has | (A.z > 0)) | (z > 0) & ~(B.has | (B.z > 0))] = 0  # a zero times nothing is nothing
        out = self._done(lo, hi, ok, z, nan, "mul", place)
        finite_in = ~_infinite(A.lo, A.hi, A.has) & ~_infinite(B.lo, B.hi, B.has) & ~A.nan & ~B.nan
        return _overflowed(out, A.ovf | B.ovf, finite_in, place)

    def div(self, A: _Iv, b, place: str) -> _Iv:
        """A / b for a point b >= 0 (b = 0: a flushed beta)."""
        P = self.P
        with np.errstate(all="ignore"):
            lo = (_in(P, A.lo) / _in(P, b)).astype(np.float64)
            hi = (_in(P, A.hi) / _in(P, b)).astype(np.float64)
        bad = A.has & (np.isnan(lo) | np.isnan(hi))
        ok = A.has & ~(np.isnan(lo) & np.isnan(hi))
        lo2, hi2 = np.where(np.isnan(lo), hi, lo), np.where(np.isnan(hi), lo, hi)
        lo, hi = np.minimum(lo2, hi2), np.maximum(lo2, hi2)
        zero_b = b == 0
        nan = A.nan | bad | ((A.z > 0) & zero_b)
        z = np.where(zero_b, 0, A.z).astype(np.int8)
        out = self._done(np.where(ok, lo, 0.0), np.where(ok, hi, 0.0), ok, z, nan, "div", place)
        finite_in = ~_infinite(A.lo, A.hi, A.has) & ~A.nan & np.isfinite(b)
        out = _overflowed(out, A.ovf, finite_in & (b != 0), place)
        out.ovf |= np.where(finite_in & (b == 0) & (_infinite(out.lo, out.hi, out.has) | out.nan), _bit("a zero beta"), 0).astype(np.uint16)
        return out

    def recip(self, b) -> _Iv:
        P = self.P
        with np.errstate(all="ignore"):
            out = self._point((P(1) / _in(P, b)).astype(np.float64), "recip", "1 / beta")
        b = np.asarray(b, np.float64)
        out = _overflowed(out, 0, np.isfinite(b) & (b != 0), "1 / beta")
        out.ovf |= np.where(b == 0, _bit("a zero beta"), 0).astype(np.uint16)
        return out

    def add(self, A: _Iv, B: _Iv, place: str) -> _Iv:
        """A + B (the halved shapes' two halves): the hull of the corner sums, NaN where +inf meets
        -inf; an accuracy of ``sub``'s steps; overflows carried from both."""
        P = self.P
        with np.errstate(all="ignore"):
            lo = (_in(P, A.lo) + _in(P, B.lo)).astype(np.float64)
            hi = (_in(P, A.hi) + _in(P, B.hi)).astype(np.float64)
        both = A.has & B.has
        bad = both & ((np.isposinf(A.hi) & np.isneginf(B.lo)) | (np.isneginf(A.lo) & np.isposinf(B.hi)))
        lo, hi = np.where(bad | np.isnan(lo), -np.inf, lo), np.where(bad | np.isnan(hi), np.inf, hi)
        z = np.where((A.z > 0) & (B.z > 0), A.z, 0).astype(np.int8)  # a flushed zero plus a flushed zero
        out = self._done(np.where(both, lo, 0.0), np.where(both, hi, 0.0), both, z, A.nan | B.nan | bad, "sub", place)
        finite_in = ~_infinite(A.lo, A.hi, A.has) & ~_infinite(B.lo, B.hi, B.has) & ~A.nan & ~B.nan
        return _overflowed(out, A.ovf | B.ovf, finite_in, place)

    @staticmethod
    def clip(A: _Iv, lo, hi) -> _Iv:
        """A clamped to [lo, hi]: an overflow the clamp brings back into range is gone (its bits with it)."""
        clo, chi = np.clip(A.lo, lo, hi), np.clip(A.hi, lo, hi)
        ovf = np.where(_infinite(clo, chi, A.has) | A.nan, A.ovf, 0).astype(np.uint16)
        return _Iv(clo, chi, A.has.copy(), A.z.copy(), A.nan.copy(), ovf)


def _flush_all(lo, hi, has, near, tiny: float) -> np.ndarray:
    """``has`` once every near-zero value is flushed (mode ``always``): the hull goes, leaving the
    flush's zero, where all of it is below the smallest normal; a hull reaching the smallest
    normal (which may or may not have been subnormal before its rounding) stays, which only
    widens the set: R06 reads "not reachable" from it, so the set may be too large, never too small."""
    return has & ~(near & (lo > -tiny) & (hi < tiny))


def _halved(ar: _Arith, q: _Iv, d: _Iv) -> _Iv:
    """A ``-halved`` shape's middle line, ``(0.5 * diff) * q + 0.5 * (q * diff)``, operation by operation:
    0.5 * diff rounds where diff is subnormal (and q may scale that far), and 0 * inf + inf is NaN."""
    half = _Iv.point(np.full(d.lo.shape, 0.5))
    h1 = ar.mul(ar.mul(half, d, "x1 - x2"), q, LAST)
    h2 = ar.mul(ar.mul(q, d, LAST), half, LAST)
    return ar.add(h1, h2, LAST)


def _middle(ar: _Arith, order: str, d: _Iv, b, y) -> _Iv:
    Y = _Iv.point(np.asarray(y, np.float64))
    if order == "divmul":
        return ar.mul(ar.div(d, b, "diff / beta"), Y, LAST)
    if order == "recipmul":
        return ar.mul(ar.mul(d, ar.recip(b), "diff * (1 / beta)"), Y, LAST)
    if order == "muldiv":
        return ar.div(ar.mul(d, Y, "diff * dy"), b, LAST)
    if order == "mulrecip":
        return ar.mul(ar.mul(d, Y, "diff * dy"), ar.recip(b), LAST)
    if order == "clamp-recipmul":
        return ar.mul(ar.mul(ar.clip(d, -b, b), ar.recip(b), "diff * (1 / beta)"), Y, LAST)
    if order == "clamp-divmul":
        return ar.mul(ar.clip(ar.div(d, b, "diff / beta"), -1.0, 1.0), Y, LAST)
    # the grammar's dy-first shapes (reference.orders); their first intermediate is no place of R06's
    if order in ("dy-divmul", "dy-divmul-halved"):
        q = ar.div(Y, b, "dy / beta")
        return _halved(ar, q, d) if order.endswith("-halved") else ar.mul(q, d, LAST)
    if order in ("dy-recipmul", "dy-recipmul-halved"):
        q = ar.mul(Y, ar.recip(b), "dy * (1 / beta)")
        return _halved(ar, q, d) if order.endswith("-halved") else ar.mul(q, d, LAST)
    raise ValueError(f"unknown evaluation order {order!r}; known: {', '.join(ORDERS)}")


def evaluate(fmt: Format, order: str, P, ulp: dict, flush: tuple, y, a, c, b, *, places: "dict | None" = None):
    """(result interval in the data format, up, down): the middle line's (or the clamp
    order's) interval, and where the branched orders' outer lines (dy, -dy) are reachable.
    ``places``: a mode per place (:func:`place_modes` over ``flush``; the inputs' are the
    caller's, who passes them as read)."""
    modes = None if places is None else place_modes(flush, places)
    ar = _Arith(P, ulp, "intermediates" in flush, modes)
    d = ar.sub(a, c)
    if branched(order):
        g = _grammar_order(order)  # a grammar order: its shape, branch test and term
        if g.inclusive:  # outer lines from |diff| >= beta
            up, down = d.has & (d.hi >= b), d.has & (d.lo <= -b)
            mid = ar.clip(d, -b, b)
            mid.has = d.has & (d.lo < b) & (d.hi > -b)
        else:
            up, down = d.has & (d.hi > b), d.has & (d.lo < -b)
            mid = ar.clip(d, -b, b)
            mid.has = d.has & (d.lo <= b) & (d.hi >= -b)
        # a flushed diff is 0, which the middle line takes (0 <= beta)
        out = _middle(ar, g.shape, mid, b, y)
        if g.term in ("plus0diff", "plus0abs", "grad", "gradfma"):  # a term NaN where diff is infinite, on every line
            term_nan = d.has & (np.isinf(d.lo) | np.isinf(d.hi))
            out.nan = out.nan | term_nan
            out.ovf = out.ovf | np.where(term_nan, _bit("the branch term") | d.ovf, 0).astype(np.uint16)
            if g.term in ("grad", "gradfma"):  # on the outer lines the middle line with dy = 0: NaN where it is 0 * inf
                u = _middle(ar, g.shape, d, b, np.zeros(d.lo.shape))
                dropped = (up | down) & u.nan & ~term_nan
                out.nan = out.nan | dropped
                out.ovf = out.ovf | np.where(dropped, u.ovf, 0).astype(np.uint16)  # the overflow that made it (0 * inf)
        # a zero term changes a zero's sign only, which the hull does not hold (reach: the outer lines' copy)
    else:
        up = down = np.zeros(d.lo.shape, bool)
        out = _middle(ar, order, d, b, y)
    with np.errstate(all="ignore"):
        lo, hi = (_in(P, out.lo).astype(fmt.dtype).astype(np.float64),
                  _in(P, out.hi).astype(fmt.dtype).astype(np.float64))
    z, has = out.z.copy(), out.has
    ovf = out.ovf | np.where(_infinite(lo, hi, has) & ~_infinite(out.lo, out.hi, out.has), _bit(RESULT), 0).astype(np.uint16)
    mode = modes[RESULT] if modes is not None else "may" if "result" in flush else "never"
    if mode != "never":
        near = _near_zero(out.lo, out.hi, out.has, float(fmt.min_normal))
        z[near & (z == 0)] = 3
        if mode == "always":
            has = _flush_all(lo, hi, has, near, float(fmt.min_normal))
    return _Iv(lo, hi, has, z, out.nan, ovf), up, down

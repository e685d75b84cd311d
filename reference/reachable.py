"""What honest arithmetic can give for an element: the error model, judged by bounds.

Why: a DSP flushes subnormals at any step, may have no divider (a reciprocal by
Newton-Raphson, within an ULP or two), and real kernels use orders other than the
manual's. Listing their bit patterns cannot keep up; a bound can. As the Vulkan and WebGPU
conformance suites do, a result is accepted when it lies in the set of all the ways the
expression could come out, operation by operation:

* an **order** (:data:`ORDERS`) at a **precision** (the data format, fp32 or fp64): every
  intermediate is in that precision, the result is then rounded once to the data format;
* each operation's **accuracy** in steps: the result of ``sub``, ``mul``, ``div`` or
  ``recip`` is the correctly rounded value (round to nearest even) or one of the ``k``
  representable values of the precision on either side of it (``k = 0``: IEEE);
* **flushing** where the model allows it, each place independently: ``inputs`` (a
  subnormal input read as a zero of its sign, DAZ), ``intermediates`` (an arithmetic
  intermediate that is, or was before rounding, subnormal becomes a zero: FTZ), ``result``
  (the same for the result in the data format). A copy or a sign flip of ``dy`` (the
  outer lines of the branched orders) is not arithmetic and is never flushed.

The set is computed per element as an interval of the data format (the hull: every
operation is monotone in each operand, so the interval of the rounded corners bounds
every way the operation can come out), plus the zero reached by a flush and the NaN
reached by 0/0 or 0 * inf after one. Where the reachable ``diff`` straddles ``+-beta`` both
branches count. numpy rounds every float16, float32 and float64 operation correctly (float16
through float32, exact for + - * / since 24 >= 2 * 11 + 2), so the corners are exact.

Only elements with a positive beta (+inf included), no NaN input and a number as the exact
result are judged here: NaN and ``beta <= 0`` are the oracle's and the open-behaviour rules'
(``conformance.rules.openbehaviour``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from .formats import Format

__all__ = ["ORDERS", "BRANCHED", "OPS", "FLUSH_PLACES", "PRECISIONS", "ErrorModel", "IEEE", "FLUSHING", "may_flush",
           "Reach", "reach",
           "evaluations", "point", "plain_many"]

ORDERS = {
    "divmul": "(diff / beta) * dy",
    "recipmul": "(diff * (1 / beta)) * dy",
    "muldiv": "(diff * dy) / beta",
    "mulrecip": "(diff * dy) * (1 / beta)",
    "clamp-recipmul": "clamp(diff, -beta, beta) * (1 / beta) * dy",
    "clamp-divmul": "clamp(diff / beta, -1, 1) * dy",
}
"""The evaluation orders: the first four are the middle line of the manual's three branches
(the outer lines copy ``dy`` or flip its sign); the clamp orders have no branch (Ascend CANN's
kernel is ``clamp-recipmul`` in the data type, autodiff frameworks give ``clamp-divmul``)."""
BRANCHED = ("divmul", "recipmul", "muldiv", "mulrecip")
OPS = ("sub", "mul", "div", "recip")
FLUSH_PLACES = ("inputs", "intermediates", "result")
PRECISIONS = ("data", "fp32", "fp64")
_DTYPE = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64}
_OP_WORDS = {"sub": "x1 - x2", "mul": "a product", "div": "the division", "recip": "1/beta"}
_INPUTS = ("dy", "x1", "x2", "beta")


@dataclass(frozen=True)
class ErrorModel:
    """A platform's arithmetic: ``orders`` (order -> the precisions it may be computed in),
    ``ulp`` (operation -> steps from the correctly rounded result it may land), ``flush`` (the
    places flushing may happen, of FLUSH_PLACES)."""

    orders: dict = field(default_factory=lambda: {o: PRECISIONS for o in ORDERS})
    ulp: dict = field(default_factory=lambda: {op: 0 for op in OPS})
    flush: tuple = ()

    @property
    def approximate(self) -> tuple:
        """The operations that may land off the correctly rounded value."""
        return tuple(op for op in OPS if self.ulp.get(op, 0) > 0)

    def summary(self) -> dict:
        return {"orders": {o: list(p) for o, p in self.orders.items()}, "ulp": dict(self.ulp),
                "flush": list(self.flush)}


IEEE = ErrorModel(orders={"divmul": PRECISIONS, "recipmul": ("fp32", "fp64"), "muldiv": ("fp32", "fp64"),
                          "mulrecip": ("fp32", "fp64"), "clamp-recipmul": ("fp32", "fp64"),
                          "clamp-divmul": PRECISIONS})
"""The default (a profile that names no error model): every order in fp32 and fp64, the
division orders in the data format too, every operation correctly rounded, no flushing."""
FLUSHING = ErrorModel(orders=IEEE.orders, flush=FLUSH_PLACES)
"""IEEE's arithmetic with flushing at every place (DAZ and FTZ, as an FPU in flush mode does): the
hypothesis a diagnosis tests rejected elements against (rules.judge.Judgement.flush_explained)."""


def may_flush(fmt: Format, dy, x1, x2, beta) -> np.ndarray:
    """Elements (bit arrays; ``beta`` one or one per element) where some value of some evaluation is
    subnormal, or near enough to be before its rounding: an input, ``x1 - x2``, ``diff / beta``,
    ``diff * dy``, ``1 / beta``, or the result. Elsewhere no flush changes anything, so the
    flushing stage need not look (float64 with a margin of 2: its own rounding is far smaller)."""
    v = lambda bits: np.asarray(bits, fmt.uint).view(fmt.dtype).astype(np.float64)  # noqa: E731
    y, a, c = v(dy), v(x1), v(x2)
    b = np.broadcast_to(v(np.asarray(beta, fmt.uint)), y.shape)
    tiny = 2 * float(fmt.min_normal)
    out = np.zeros(y.shape, bool)
    with np.errstate(all="ignore"):
        d = a - c
        for w in (y, a, c, b, d, d / b, d * y, 1 / b, d / b * y):
            out |= (np.abs(w) < tiny) & (w != 0)
    return out


def evaluations(fmt: Format, model: ErrorModel) -> list:
    """(name, order, numpy dtype) of every evaluation the model allows for data ``fmt``: the
    precision "data" is the data format, duplicates (data = fp32 for fp32 data) once."""
    out, seen = [], set()
    for order, precs in model.orders.items():
        for p in precs:
            name = fmt.name if p == "data" else p
            if np.dtype(_DTYPE[name]).itemsize < fmt.dtype.itemsize or (order, name) in seen:
                continue
            seen.add((order, name))
            out.append((f"{order}-{name}", order, _DTYPE[name]))
    return out


# ---------------------------------------------------------------------------- intervals


@dataclass
class _Iv:
    """Per element: the hull [lo, hi] (``has``: not empty), a zero reached by a flush (``z``,
    with the code of why: 1 x1 - x2, 2 an intermediate, 3 the result) and NaN reached (``nan``)."""

    lo: np.ndarray
    hi: np.ndarray
    has: np.ndarray
    z: np.ndarray
    nan: np.ndarray

    @classmethod
    def point(cls, v):
        n = v.shape
        return cls(v.copy(), v.copy(), np.ones(n, bool), np.zeros(n, np.int8), np.zeros(n, bool))


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
    """The operations of one evaluation: precision P, the model's steps, flushing of intermediates."""

    def __init__(self, P, ulp: dict, flush_mid: bool):
        self.P, self.ulp, self.flush_mid = P, ulp, flush_mid
        self.tiny = float(np.finfo(P).tiny)

    def _done(self, lo, hi, has, z, nan, op, code=2) -> _Iv:
        lo, hi = _widen(lo, hi, self.ulp.get(op, 0), self.P)
        z = z.copy()
        if self.flush_mid:
            z[_near_zero(lo, hi, has, self.tiny) & (z == 0)] = code
        return _Iv(lo, hi, has, z, nan)

    def _point(self, v, op, code=2) -> _Iv:
        one = _Iv.point(v)
        return self._done(one.lo, one.hi, one.has, one.z, one.nan, op, code)

    def sub(self, a, c) -> _Iv:
        P = self.P
        with np.errstate(all="ignore"):
            return self._point((_in(P, a) - _in(P, c)).astype(np.float64), "sub", code=1)

    def mul(self, A: _Iv, B: _Iv, op="mul") -> _Iv:
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
        return self._done(lo, hi, ok, z, nan, op)

    def div(self, A: _Iv, b) -> _Iv:
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
        return self._done(np.where(ok, lo, 0.0), np.where(ok, hi, 0.0), ok, z, nan, "div")

    def recip(self, b) -> _Iv:
        P = self.P
        with np.errstate(all="ignore"):
            return self._point((P(1) / _in(P, b)).astype(np.float64), "recip")

    @staticmethod
    def clip(A: _Iv, lo, hi) -> _Iv:
        return _Iv(np.clip(A.lo, lo, hi), np.clip(A.hi, lo, hi), A.has.copy(), A.z.copy(), A.nan.copy())


def _middle(ar: _Arith, order: str, d: _Iv, b, y) -> _Iv:
    Y = _Iv.point(np.asarray(y, np.float64))
    if order == "divmul":
        return ar.mul(ar.div(d, b), Y)
    if order == "recipmul":
        return ar.mul(ar.mul(d, ar.recip(b)), Y)
    if order == "muldiv":
        return ar.div(ar.mul(d, Y), b)
    if order == "mulrecip":
        return ar.mul(ar.mul(d, Y), ar.recip(b))
    if order == "clamp-recipmul":
        return ar.mul(ar.mul(ar.clip(d, -b, b), ar.recip(b)), Y)
    if order == "clamp-divmul":
        return ar.mul(ar.clip(ar.div(d, b), -1.0, 1.0), Y)
    raise ValueError(f"unknown evaluation order {order!r}; known: {', '.join(ORDERS)}")


def _evaluate(fmt: Format, order: str, P, ulp: dict, flush: tuple, y, a, c, b):
    """(result interval in the data format, up, down): the middle line's (or the clamp
    order's) interval, and where the branched orders' outer lines (dy, -dy) are reachable."""
    ar = _Arith(P, ulp, "intermediates" in flush)
    d = ar.sub(a, c)
    if order in BRANCHED:
        up, down = d.has & (d.hi > b), d.has & (d.lo < -b)
        mid = ar.clip(d, -b, b)
        mid.has = d.has & (d.lo <= b) & (d.hi >= -b)
        # a flushed diff is 0, which the middle line takes (0 <= beta)
        out = _middle(ar, order, mid, b, y)
    else:
        up = down = np.zeros(d.lo.shape, bool)
        out = _middle(ar, order, d, b, y)
    with np.errstate(all="ignore"):
        lo, hi = (_in(P, out.lo).astype(fmt.dtype).astype(np.float64),
                  _in(P, out.hi).astype(fmt.dtype).astype(np.float64))
    z = out.z.copy()
    if "result" in flush:
        z[_near_zero(out.lo, out.hi, out.has, float(fmt.min_normal)) & (z == 0)] = 3
    return _Iv(lo, hi, out.has, z, out.nan), up, down


def point(fmt: Format, order: str, precision, dy, x1, x2, beta) -> np.ndarray:
    """The bits of one evaluation with every operation correctly rounded and nothing flushed
    (beta: one value or one per element; float arrays of the data format): what an
    implementation of that order gives, bit for bit. The C-order branches as in
    reference.models (NaN falls to the middle line). ``precision``: a name of PRECISIONS or
    fp16, or the numpy type :func:`evaluations` gives."""
    P = _DTYPE[fmt.name if precision == "data" else precision] if isinstance(precision, str) else precision
    f = lambda v: np.asarray(v, fmt.dtype).astype(np.float64)  # noqa: E731
    y, a, c = f(dy), f(x1), f(x2)
    b = np.broadcast_to(f(beta), y.shape).astype(np.float64)
    zero = {op: 0 for op in OPS}
    out, up, down = _evaluate(fmt, order, P, zero, (), y, a, c, b)
    with np.errstate(all="ignore"):
        mid = np.where(out.nan | ~out.has, np.nan, out.lo)
        res = np.where(up, y, np.where(down, -y, mid)) if order in BRANCHED else mid
    return np.asarray(res).astype(fmt.dtype)


def plain_many(fmt: Format, evaluations: list, dy, x1, x2, beta) -> list:
    """:func:`point`'s bits of several (order, precision) pairs of the same elements by plain numpy
    arithmetic in the precision, several times faster (the rounding-bias test evaluates every
    order on an implementation's deviations): numpy rounds each float16, float32 and float64
    operation correctly, the same rounding the intervals' corners take, then ``astype`` rounds
    once to the data format. The same bits as :func:`point` wherever that gives a number
    (tests/test_error_model.py); NaN payloads may differ. Each operation is computed once per
    precision (``x1 - x2``, ``1 / beta``, ``diff / beta``, ``diff * dy`` serve several orders)."""
    dy = np.asarray(dy, fmt.dtype)
    out, cache = [], {}
    with np.errstate(all="ignore"):
        for order, precision in evaluations:
            P = _DTYPE[fmt.name if precision == "data" else precision] if isinstance(precision, str) else precision
            c = cache.setdefault(np.dtype(P), {})

            def get(name, make):
                if name not in c:
                    c[name] = make()
                return c[name]
            y = get("y", lambda: dy.astype(P, copy=False))
            b = get("b", lambda: np.broadcast_to(np.asarray(beta, fmt.dtype).astype(P), y.shape))
            d = get("d", lambda: np.asarray(x1, fmt.dtype).astype(P, copy=False) - np.asarray(x2, fmt.dtype).astype(P, copy=False))
            r = (lambda: get("r", lambda: P(1) / b))
            q = (lambda: get("q", lambda: d / b))
            m = (lambda: get("m", lambda: d * y))
            if order == "divmul":
                mid = q() * y
            elif order == "recipmul":
                mid = (d * r()) * y
            elif order == "muldiv":
                mid = m() / b
            elif order == "mulrecip":
                mid = m() * r()
            elif order == "clamp-recipmul":
                mid = (np.clip(d, -b, b) * r()) * y
            elif order == "clamp-divmul":
                mid = np.clip(q(), -P(1), P(1)) * y
            else:
                raise ValueError(f"unknown evaluation order {order!r}; known: {', '.join(ORDERS)}")
            mid = mid.astype(fmt.dtype)
            out.append(np.where(d > b, dy, np.where(d < -b, -dy, mid)) if order in BRANCHED else mid)
    return out


# ---------------------------------------------------------------------------- judging


@dataclass
class Reach:
    """Per judged element: ``stage`` 0 not reachable, 1 reachable with every operation correctly
    rounded and nothing flushed, 2 only with an approximate operation, 3 only with a flush;
    ``how`` what it took (the evaluation, and the approximation or the flush), "" where 0."""

    stage: np.ndarray
    how: np.ndarray


def _is_sub(v, tiny):
    return (v != 0) & (np.abs(v) < tiny)


def reach(fmt: Format, model: ErrorModel, got, dy, x1, x2, beta, oracle, *, strict_zero_sign: bool = False,
          stages=(1, 2, 3), min_precision: int = 0, flushing_inputs: bool = False) -> Reach:
    """Whether each ``got`` (bits) is reachable under ``model``, and how (all arrays of bits, of
    one length; ``beta`` one pattern or one per element; ``oracle`` the correctly rounded bits,
    whose sign a zero must have where ``strict_zero_sign``). Each stage runs only on the
    elements the earlier ones left, so the cost is the unexplained elements'. ``stages``: those
    to try; ``min_precision``: only the evaluations in a precision of at least that many bytes;
    ``flushing_inputs``: only stage 3, with every subnormal input read as zero (what an
    implementation that flushes its inputs can give: R06 asks it of the gradual-looking results)."""
    n = np.shape(got)[0]
    stage = np.zeros(n, np.int8)
    how = np.full(n, "", object)
    if n == 0:
        return Reach(stage, how)
    v = lambda bits: np.ascontiguousarray(np.broadcast_to(np.asarray(bits, fmt.uint), (n,))).view(fmt.dtype).astype(np.float64)  # noqa: E731
    with np.errstate(all="ignore"):
        g, y, a, c, b, o = (v(x) for x in (got, dy, x1, x2, beta, oracle))
    # dy, x1 and x2 may be infinite (an infinite dy makes the middle line infinite, or NaN where
    # diff / beta underflows to 0; an infinite diff goes to the outer lines, or the clamp)
    tiny = float(fmt.min_normal)
    if flushing_inputs:
        stages = (3,)
    flush_beta = "inputs" in model.flush and 3 in stages
    # a negative subnormal beta read as -0 is a zero beta (the model's business only when flushed)
    ok = ~np.isnan(y) & ~np.isnan(a) & ~np.isnan(c) & ((b > 0) | (flush_beta & (b < 0) & (b > -tiny))) & ~np.isnan(o)
    g_zero, g_nan = g == 0, np.isnan(g)
    sign_ok = ~g_zero | (np.signbit(g) == np.signbit(o)) if strict_zero_sign else np.ones(n, bool)
    subs = [_is_sub(x, tiny) for x in (y, a, c, b)]
    evals = [e for e in evaluations(fmt, model) if np.dtype(e[2]).itemsize >= min_precision]
    plans = []  # (stage, ulp, flush, input-flush combos)
    exact = {op: 0 for op in OPS}
    if 1 in stages:
        plans.append((1, exact, (), [()]))
    if 2 in stages and model.approximate:
        plans.append((2, model.ulp, (), [()]))
    if 3 in stages and model.flush:
        combos = [()]
        if "inputs" in model.flush:
            present = [i for i in range(4) if subs[i].any()]
            combos = [t for r in range(len(present) + 1) for t in itertools.combinations(present, r)]
        plans.append((3, exact, model.flush, combos))  # a flush alone first, then with the approximations
        if model.approximate:
            plans.append((3, model.ulp, model.flush, combos))
    todo = ok.copy()
    for st, ulp, flush, combos in plans:
        for combo in combos:
            rows = todo.copy()
            for i in combo:
                rows &= subs[i]
            if flushing_inputs:  # exactly the element's subnormal inputs
                for i in set(range(4)) - set(combo):
                    rows &= ~subs[i]
            if 3 not in combo:
                rows &= b > 0
            idx = np.flatnonzero(rows)
            if not idx.size:
                continue
            ins = [x[idx].copy() for x in (y, a, c, b)]
            for i in combo:
                ins[i] = np.copysign(0.0, ins[i])
            gi, zi, ni, si = g[idx], g_zero[idx], g_nan[idx], sign_ok[idx]
            hit = np.zeros(idx.size, bool)
            label = np.full(idx.size, "", object)
            for name, order, P in evals:
                out, up, down = _evaluate(fmt, order, P, ulp, flush, *ins)
                inside = out.has & (out.lo <= gi) & (gi <= out.hi) & si
                flushed = zi & (out.z > 0) & si
                nan = ni & out.nan
                copy = (up & (gi == ins[0]) & (np.signbit(gi) == np.signbit(ins[0]))) | \
                       (down & (gi == -ins[0]) & (np.signbit(gi) != np.signbit(ins[0])))
                new = (inside | flushed | nan | copy) & ~hit
                if not new.any():
                    continue
                # the words depend on the evaluation and three flags: one label per distinct triple
                zc = np.where(flushed & ~inside, out.z, 0).astype(np.int64)
                key = zc * 4 + (nan & ~inside) * 2 + (copy & ~inside)
                for kk in np.unique(key[new]).tolist():
                    label[new & (key == kk)] = _words(name, order, st, ulp, combo, kk // 4, bool(kk & 2), bool(kk & 1))
                hit |= new
                if hit.all():
                    break
            got_idx = idx[hit]
            stage[got_idx] = st
            how[got_idx] = label[hit]
            todo[got_idx] = False
        if not todo.any():
            break
    return Reach(stage, how)


_ZERO_WHY = {1: "x1 - x2 flushed to zero", 2: "an intermediate flushed to zero", 3: "the result flushed to zero"}


def _words(name: str, order: str, st: int, ulp: dict, combo: tuple, zcode: int, nan: bool, copy: bool) -> str:
    """What accepting the element took, in words."""
    parts = [name]
    if st >= 2:
        approx = [f"{_OP_WORDS[op]} within {ulp[op]} ULP" for op in OPS if ulp.get(op, 0) > 0 and _uses(order, op)]
        parts += approx
    if combo:
        parts.append(", ".join(_INPUTS[i] for i in combo) + " (subnormal) read as zero")
    if zcode:
        parts.append(_ZERO_WHY[zcode])
    if nan:
        parts.append("0/0 or 0 * inf after a flush gives NaN" if st == 3 else
                     "0 * inf or inf / inf gives NaN (an intermediate overflows)")
    if copy and combo:
        parts.append("the outer line's dy")
    return parts[0] + (": " + ", ".join(parts[1:]) if len(parts) > 1 else "")


def _uses(order: str, op: str) -> bool:
    return op in ("sub", "mul") or (op == "recip") == ("recip" in order)

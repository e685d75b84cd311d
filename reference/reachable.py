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

Each of those places is several (:data:`PLACES`): the four inputs, each intermediate by its
name, the last operation and the result. ``reach`` and ``_evaluate`` take an optional mode per
place (``never``, ``may``, ``always``; :func:`place_modes`), which R06 uses to ask what an
element's result says of one place (conformance/requirements/subnormals.py); without it each
place may flush where ``flush`` lists its kind, as before.

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
           "INPUT_PLACES", "MID_PLACES", "LAST", "RESULT", "PLACES", "MODES", "place_modes", "near_zero_places",
           "Reach", "reach", "Group", "reachable_sets",
           "evaluations", "point", "plain_many", "plainly_reached"]

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
INPUT_PLACES = _INPUTS
MID_PLACES = ("x1 - x2", "1 / beta", "diff / beta", "diff * (1 / beta)", "diff * dy")
"""The arithmetic intermediates before the last operation, by name ("diff" in the clamp orders is
the clamped diff, the same value where the middle line is taken)."""
LAST = "the last operation"
"""The operation whose value is rounded to the result, in the evaluation's precision: its flush and
the result's both make the result a zero, so R06 judges the two as one place, the result."""
RESULT = "the result"
PLACES = INPUT_PLACES + MID_PLACES + (LAST, RESULT)
MODES = ("never", "may", "always")
_KIND = {**{p: "inputs" for p in INPUT_PLACES}, **{p: "intermediates" for p in MID_PLACES + (LAST,)}, RESULT: "result"}


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


def place_modes(flush: tuple = (), places: "dict | None" = None) -> dict:
    """Every place of :data:`PLACES` with its mode: ``may`` where ``flush`` (of FLUSH_PLACES) lists
    its kind, ``never`` elsewhere, then ``places`` (place -> mode of MODES) over those."""
    out = {p: "may" if _KIND[p] in flush else "never" for p in PLACES}
    for p, m in (places or {}).items():
        if p not in out or m not in MODES:
            raise ValueError(f"unknown flush place or mode {p!r}: {m!r}; places: {', '.join(PLACES)}; modes: {', '.join(MODES)}")
        out[p] = m
    return out


def near_zero_places(fmt: Format, dy, x1, x2, beta) -> dict:
    """Per place of :data:`PLACES` (the last operation's and the result's value are one), the
    elements (bit arrays; ``beta`` one or one per element) where its value in some evaluation is
    subnormal, or near enough to be before its rounding: where flushing it can change anything
    (float64 with a margin of 2: its own rounding is far smaller). The diff is taken as
    ``x1 - x2``, and as ``-x2`` or ``x1`` where x1 or x2 is subnormal and read as zero; a zero
    dy or beta read so gives a zero or an infinity, never a subnormal."""
    v = lambda bits: np.asarray(bits, fmt.uint).view(fmt.dtype).astype(np.float64)  # noqa: E731
    tiny = 2 * float(fmt.min_normal)
    near = lambda w: (np.abs(w) < tiny) & (w != 0)  # noqa: E731
    with np.errstate(all="ignore"):  # NaN inputs: their casts and sums raise nothing
        y, a, c = v(dy), v(x1), v(x2)
        b = np.broadcast_to(v(np.asarray(beta, fmt.uint)), y.shape)
        diffs = (a - c, np.where(near(a), -c, a - c), np.where(near(c), a, a - c))
        any_of = lambda f: near(f(diffs[0])) | near(f(diffs[1])) | near(f(diffs[2]))  # noqa: E731
        out = {"dy": near(y), "x1": near(a), "x2": near(c), "beta": near(b), "x1 - x2": any_of(lambda d: d),
               "1 / beta": near(1 / b), "diff / beta": any_of(lambda d: d / b), "diff * dy": any_of(lambda d: d * y)}
        out["diff * (1 / beta)"] = out["diff / beta"]
        out[LAST] = out[RESULT] = any_of(lambda d: d / b * y)
    return out


def may_flush(fmt: Format, dy, x1, x2, beta) -> np.ndarray:
    """Elements where some place's value is near zero (:func:`near_zero_places`): elsewhere no flush
    changes anything, so the flushing stage need not look."""
    out = None
    for mask in near_zero_places(fmt, dy, x1, x2, beta).values():
        out = mask.copy() if out is None else out | mask
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
            return self._point((_in(P, a) - _in(P, c)).astype(np.float64), "sub", "x1 - x2", code=1)

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
        return self._done(lo, hi, ok, z, nan, "mul", place)

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
        return self._done(np.where(ok, lo, 0.0), np.where(ok, hi, 0.0), ok, z, nan, "div", place)

    def recip(self, b) -> _Iv:
        P = self.P
        with np.errstate(all="ignore"):
            return self._point((P(1) / _in(P, b)).astype(np.float64), "recip", "1 / beta")

    @staticmethod
    def clip(A: _Iv, lo, hi) -> _Iv:
        return _Iv(np.clip(A.lo, lo, hi), np.clip(A.hi, lo, hi), A.has.copy(), A.z.copy(), A.nan.copy())


def _flush_all(lo, hi, has, near, tiny: float) -> np.ndarray:
    """``has`` once every near-zero value is flushed (mode ``always``): the hull goes, leaving the
    flush's zero, where all of it is below the smallest normal; a hull reaching the smallest
    normal (which may or may not have been subnormal before its rounding) stays, which only
    widens the set: R06 reads "not reachable" from it, so the set may be too large, never too small."""
    return has & ~(near & (lo > -tiny) & (hi < tiny))


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
    raise ValueError(f"unknown evaluation order {order!r}; known: {', '.join(ORDERS)}")


def _evaluate(fmt: Format, order: str, P, ulp: dict, flush: tuple, y, a, c, b, *, places: "dict | None" = None):
    """(result interval in the data format, up, down): the middle line's (or the clamp
    order's) interval, and where the branched orders' outer lines (dy, -dy) are reachable.
    ``places``: a mode per place (:func:`place_modes` over ``flush``; the inputs' are the
    caller's, who passes them as read)."""
    modes = None if places is None else place_modes(flush, places)
    ar = _Arith(P, ulp, "intermediates" in flush, modes)
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
    z, has = out.z.copy(), out.has
    mode = modes[RESULT] if modes is not None else "may" if "result" in flush else "never"
    if mode != "never":
        near = _near_zero(out.lo, out.hi, out.has, float(fmt.min_normal))
        z[near & (z == 0)] = 3
        if mode == "always":
            has = _flush_all(lo, hi, has, near, float(fmt.min_normal))
    return _Iv(lo, hi, has, z, out.nan), up, down


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


@dataclass
class Group:
    """Elements one stage tries with one choice of subnormal inputs read as zero (``combo``,
    indices of INPUT_PLACES): ``idx`` (the call's), ``ins`` (dy, x1, x2, beta as read, float64),
    ``copies`` (the dy an outer line may copy: as read, and as given where a place mode reads it).
    :meth:`evaluations` computes each evaluation's set only when asked, so a caller that has
    what it needs stops early."""

    stage: int
    ulp: dict
    flush: "tuple | dict"
    combo: tuple
    idx: np.ndarray
    ins: list
    copies: tuple
    fmt: Format
    evals: list

    def evaluations(self):
        """(name, order, interval, up, down) per evaluation (:func:`evaluations`): the result's
        interval (``lo``, ``hi``, ``has``, the flush's zero ``z``, ``nan``), and where the outer
        lines are reachable."""
        per_place = isinstance(self.flush, dict)
        for name, order, P in self.evals:
            if per_place:
                out, up, down = _evaluate(self.fmt, order, P, self.ulp, (), *self.ins, places=self.flush)
            else:
                out, up, down = _evaluate(self.fmt, order, P, self.ulp, self.flush, *self.ins)
            yield name, order, out, up, down


def reachable_sets(fmt: Format, model: ErrorModel, dy, x1, x2, beta, oracle, *, stages=(1, 2, 3),
                   min_precision: int = 0, flushing_inputs: bool = False, places: "dict | None" = None,
                   settled: "np.ndarray | None" = None):
    """The groups (:class:`Group`) whose evaluations make up the model's set, stage by stage (1 exact, 2
    approximate, 3 flushing alone, then with the approximations): what :func:`reach` tests results
    against and rules.acceptance lists, from one place. Arguments as :func:`reach`'s (bits of one
    length; ``beta`` one or one per element), less the results. ``settled``: the caller's mask of
    elements it needs no more (reach's reached ones), read at each group: they are left out, and
    the groups end when none is left."""
    n = np.broadcast_shapes(*(np.shape(a) for a in (dy, x1, x2, beta, oracle)))[0]
    v = lambda bits: np.ascontiguousarray(np.broadcast_to(np.asarray(bits, fmt.uint), (n,))).view(fmt.dtype).astype(np.float64)  # noqa: E731
    with np.errstate(all="ignore"):
        y, a, c, b, o = (v(x) for x in (dy, x1, x2, beta, oracle))
    # dy, x1 and x2 may be infinite (an infinite dy makes the middle line infinite, or NaN where
    # diff / beta underflows to 0; an infinite diff goes to the outer lines, or the clamp)
    tiny = float(fmt.min_normal)
    if flushing_inputs:
        stages = (3,)
    modes = None if places is None else place_modes(model.flush, places)
    if modes is None:
        flush_beta = "inputs" in model.flush and 3 in stages
    else:
        flush_beta = modes["beta"] == "always" or (modes["beta"] == "may" and 3 in stages)
    # a negative subnormal beta read as -0 is a zero beta (the model's business only when flushed)
    ok = ~np.isnan(y) & ~np.isnan(a) & ~np.isnan(c) & ((b > 0) | (flush_beta & (b < 0) & (b > -tiny))) & ~np.isnan(o)
    vals = [y, a, c, b]
    subs = [_is_sub(x, tiny) for x in vals]
    given_y, b_read_zero = y, np.zeros(n, bool)
    for i, p in enumerate(INPUT_PLACES if modes is not None else ()):
        if modes[p] == "always":  # read as zero wherever subnormal: no longer a choice
            vals[i] = np.where(subs[i], np.copysign(0.0, vals[i]), vals[i])
            if i == 3:
                b_read_zero = subs[i]
            subs[i] = np.zeros(n, bool)
    y, a, c, b = vals
    evals = [e for e in evaluations(fmt, model) if np.dtype(e[2]).itemsize >= min_precision]
    plans = []  # (stage, ulp, flush: FLUSH_PLACES or a mode per place, input-flush combos)
    exact = {op: 0 for op in OPS}
    if modes is None:
        fixed, flushing, can_flush, flush_inputs = (), model.flush, bool(model.flush), "inputs" in model.flush
    else:
        fixed = {p: "never" if m == "may" else m for p, m in modes.items()}
        flushing, can_flush = modes, "may" in modes.values()
    if 1 in stages:
        plans.append((1, exact, fixed, [()]))
    if 2 in stages and model.approximate:
        plans.append((2, model.ulp, fixed, [()]))
    if 3 in stages and can_flush:
        if modes is None:
            present = [i for i in range(4) if flush_inputs and subs[i].any()]
        else:
            present = [i for i, p in enumerate(INPUT_PLACES) if modes[p] == "may" and subs[i].any()]
        combos = [t for r in range(len(present) + 1) for t in itertools.combinations(present, r)]
        plans.append((3, exact, flushing, combos))  # a flush alone first, then with the approximations
        if model.approximate:
            plans.append((3, model.ulp, flushing, combos))
    todo = lambda: ok if settled is None else ok & ~settled  # noqa: E731
    for st, ulp, flush, combos in plans:
        if not todo().any():
            return
        per_place = isinstance(flush, dict)
        for combo in combos:
            rows = todo()
            for i in combo:
                rows = rows & subs[i]
            if flushing_inputs:  # exactly the element's subnormal inputs
                for i in set(range(4)) - set(combo):
                    rows = rows & ~subs[i]
            if 3 not in combo:
                rows = rows & ((b > 0) | b_read_zero)
            idx = np.flatnonzero(rows)
            if not idx.size:
                continue
            ins = [x[idx].copy() for x in (y, a, c, b)]
            for i in combo:
                ins[i] = np.copysign(0.0, ins[i])
            copies = (ins[0], given_y[idx]) if per_place else (ins[0],)
            yield Group(st, ulp, flush, combo, idx, ins, copies, fmt, evals)


def reach(fmt: Format, model: ErrorModel, got, dy, x1, x2, beta, oracle, *, strict_zero_sign: bool = False,
          stages=(1, 2, 3), min_precision: int = 0, flushing_inputs: bool = False,
          places: "dict | None" = None) -> Reach:
    """Whether each ``got`` (bits) is reachable under ``model``, and how (all arrays of bits, of
    one length; ``beta`` one pattern or one per element; ``oracle`` the correctly rounded bits,
    whose sign a zero must have where ``strict_zero_sign``). Each stage runs only on the
    elements the earlier ones left, so the cost is the unexplained elements'. ``stages``: those
    to try; ``min_precision``: only the evaluations in a precision of at least that many bytes;
    ``flushing_inputs``: only stage 3, with every subnormal input read as zero (what an
    implementation that flushes its inputs can give). ``places``: a mode per place over the
    model's (:func:`place_modes`): ``never`` flushed, ``may`` be (stage 3), ``always`` flushed
    where near zero (every stage); an input ``always`` flushed is read as zero where subnormal,
    and the outer lines may then copy dy as given or as read (a copy is a move, which a
    flushing FPU leaves alone, and a flushing load does not). R06 asks it what a result says of
    one place (conformance/requirements/subnormals.py)."""
    n = np.shape(got)[0]
    stage = np.zeros(n, np.int8)
    how = np.full(n, "", object)
    if n == 0:
        return Reach(stage, how)
    v = lambda bits: np.ascontiguousarray(np.broadcast_to(np.asarray(bits, fmt.uint), (n,))).view(fmt.dtype).astype(np.float64)  # noqa: E731
    with np.errstate(all="ignore"):
        g, o = v(got), v(oracle)
    g_zero, g_nan = g == 0, np.isnan(g)
    sign_ok = ~g_zero | (np.signbit(g) == np.signbit(o)) if strict_zero_sign else np.ones(n, bool)
    per_element = lambda bits: np.broadcast_to(np.asarray(bits, fmt.uint), (n,))  # noqa: E731
    reached = np.zeros(n, bool)
    for grp in reachable_sets(fmt, model, *(per_element(x) for x in (dy, x1, x2, beta, oracle)), stages=stages,
                              min_precision=min_precision, flushing_inputs=flushing_inputs, places=places,
                              settled=reached):
        idx = grp.idx
        gi, zi, ni, si = g[idx], g_zero[idx], g_nan[idx], sign_ok[idx]
        hit = np.zeros(idx.size, bool)
        label = np.full(idx.size, "", object)
        for name, order, out, up, down in grp.evaluations():
            inside = out.has & (out.lo <= gi) & (gi <= out.hi) & si
            flushed = zi & (out.z > 0) & si
            nan = ni & out.nan
            copy = np.zeros(idx.size, bool)
            for y0 in grp.copies:
                copy |= (up & (gi == y0) & (np.signbit(gi) == np.signbit(y0))) | \
                        (down & (gi == -y0) & (np.signbit(gi) != np.signbit(y0)))
            new = (inside | flushed | nan | copy) & ~hit
            if not new.any():
                continue
            # the words depend on the evaluation and three flags: one label per distinct triple
            zc = np.where(flushed & ~inside, out.z, 0).astype(np.int64)
            key = zc * 4 + (nan & ~inside) * 2 + (copy & ~inside)
            for kk in np.unique(key[new]).tolist():
                label[new & (key == kk)] = _words(name, order, grp.stage, grp.ulp, grp.combo, kk // 4, bool(kk & 2), bool(kk & 1))
            hit |= new
            if hit.all():
                break
        got_idx = idx[hit]
        stage[got_idx] = grp.stage
        how[got_idx] = label[hit]
        reached[got_idx] = True
    return Reach(stage, how)


def plainly_reached(fmt: Format, model: ErrorModel, got, dy, x1, x2, beta, oracle, *, read: tuple = ()) -> np.ndarray:
    """Elements :func:`reach` reaches at stage 1 for certain (every operation correctly rounded,
    nothing flushed), found by plain arithmetic (:func:`plain_many`, several times faster than the
    intervals): those it judges (no NaN input or oracle, a positive beta) whose result is, bit for
    bit, one evaluation's number (a point's NaN is left out: the interval may have no NaN). ``read``:
    input places (:data:`INPUT_PLACES`) read as zero where subnormal, as ``reach`` with
    ``places={p: "always"}`` reads them, every other place never flushed. A sufficient test only:
    an element it leaves out may still be reached (a zero of the other sign, NaN, an approximation,
    the given dy copied where dy is read as zero); ``reach`` decides those, element by element
    (its stages are each element's own: the others in a call change none). R06 asks it first of
    its many elements, and of the stage alone (conformance/requirements/subnormals.py)."""
    n = np.shape(got)[0]
    out = np.zeros(n, bool)
    if n == 0:
        return out
    bits = lambda a: np.ascontiguousarray(np.broadcast_to(np.asarray(a, fmt.uint), (n,)))  # noqa: E731
    g, ins, o = bits(got), [bits(a) for a in (dy, x1, x2, beta)], bits(oracle)
    f = lambda b: b.view(fmt.dtype)  # noqa: E731
    with np.errstate(all="ignore"):
        todo = ~np.isnan(f(g)) & ~np.isnan(f(o)) & (f(ins[3]) > 0)
        for a in ins[:3]:
            todo &= ~np.isnan(f(a))
    sign = np.array(fmt.sign_mask, fmt.uint)
    for p in read:
        i = INPUT_PLACES.index(p)
        sub = ((ins[i] & fmt.exp_mask) == 0) & ((ins[i] & fmt.frac_mask) != 0)
        ins[i] = np.where(sub, ins[i] & sign, ins[i])
    for _, order, P in evaluations(fmt, model):
        idx = np.flatnonzero(todo)
        if not idx.size:
            break
        v = plain_many(fmt, [(order, P)], *(f(a[idx]) for a in ins))[0]
        hit = ~np.isnan(v) & (v.view(fmt.uint) == g[idx])
        out[idx[hit]] = True
        todo[idx[hit]] = False
    return out


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

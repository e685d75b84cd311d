"""Facts about a rejected element: what its intermediates did, and which way of writing the formula
gives its bits (issue 39, item 2).

Why: a pattern says where failures are (a class of beta, a tail); a fact says what happened in the
arithmetic. The diagnosis (rules.diagnosis) tests every intermediate of the grammar the formula is
written in, in the data format: ``x1 - x2``, ``1 / beta``, ``diff / beta``, ``dy / beta``,
``diff * dy``, each for overflow (infinite where its exact value is finite), underflow (zero where
it is not), a subnormal and NaN (``0 / 0``, ``inf / inf``, ``inf - inf``, ``0 * inf``); the unused
branch's ``0 * inf`` (a result that adds the dropped branch's gradient, times zero, is NaN where
that branch's ``diff / beta`` is infinite); a ``+0`` added to the result (a zero loses its sign);
a subnormal input, intermediate or result flushed to zero (DAZ/FTZ: the bits are a flushed
evaluation's, of the default error model's orders or an autodiff's, and not the unflushed one's);
and the middle line written in an order the profile does not list (``(dy / beta) * diff``, or a
listed order in a precision it does not list). An underflow or a subnormal is a fact only where the
intermediate enters a finite result (the middle line's intermediates where the middle line is the
element's result): on the outer lines (every element of a beta < 0), or where the result is NaN, it
cannot change the bits, so it is not said to explain them. Each fact is tested on the rejected elements only,
and they are disjoint: an element is put down to the first fact of :func:`facts`'s order that
holds (the fact that gives its bits, or its kind of result, most directly), so a requirement's
failures split among its facts and what no fact holds is unexplained (reports.causes).
"""

from __future__ import annotations

import numpy as np

from sl1conf.reference import exact
from sl1conf.reference import formats
from sl1conf.reference import orders
from sl1conf.reference.error_model import DTYPES, may_flush, order_text

__all__ = ["INTERMEDIATES", "CLASSES", "GRAMMAR", "FACT_PREFIX", "fact_keys", "facts", "ZERO_SIGN", "DROPPED", "FLUSHED",
           "FLUSHED_TEXT", "FLUSH_ORDERS"]

FACT_PREFIX = "fact:"  # the keys of the facts (a waiver's pattern may name one)
INTERMEDIATES = ("x1 - x2", "1 / beta", "diff / beta", "dy / beta", "diff * dy")
CLASSES = ("overflows", "is NaN", "underflows", "is subnormal")
GRAMMAR = orders.SHAPES
"""The ways of writing the middle line the diagnosis tries: the shapes of the grammar of orders
(reference.orders, one grammar for R17 and the diagnosis), each branched as the manual's lines;
the first four are the error model's branched orders (reference.error_model.ORDERS)."""
ZERO_SIGN = FACT_PREFIX + "plus-zero"
DROPPED = FACT_PREFIX + "dropped-branch"
FLUSHED = FACT_PREFIX + "flushed"
FLUSHED_TEXT = ("a subnormal input, intermediate or result is flushed to zero (DAZ/FTZ): the result is what the "
                "arithmetic gives with it flushed, and not without")
FLUSH_ORDERS = tuple(o for shape in orders.SHAPES for o in (orders.Order(shape), orders.Order(shape, True, "grad"),
                                                             orders.Order(shape, True, "gradfma")))
"""The orders the flush fact evaluates flushed and not (in the data precision): each shape of the grammar with
the manual's branches, and with an autodiff's (``where``'s branch test, its branches' gradients summed,
rounded or fused)."""
_PRECISIONS = ("fp16", "fp32")


def _key(*parts: str) -> str:
    return FACT_PREFIX + ":".join(p.replace(" ", "") for p in parts)


def fact_keys() -> tuple:
    """Every key :func:`facts` can give."""
    return (ZERO_SIGN, FLUSHED, DROPPED,
            *(_key(i, c, p) for c in CLASSES[:2] for i in INTERMEDIATES for p in _PRECISIONS),
            *(_key("order", o, p) for o in GRAMMAR for p in _PRECISIONS),
            *(_key(i, c, p) for c in CLASSES[2:] for i in INTERMEDIATES for p in _PRECISIONS))


def _reached_by(blocked) -> str:
    """The evaluation that reaches most of these elements only through an overflow the profile does
    not accept (reachable.Reach.blocked, ``muldiv-fp32: diff * dy overflows``), in words: R03 names
    the intermediate and the order; "" where none does."""
    said = [w for w in blocked.tolist() if w]
    if not said:
        return ""
    words = max(set(said), key=lambda w: (said.count(w), w))
    evaluation, _, what = words.partition(": ")
    order, _, prec = evaluation.rpartition("-")
    said = f"{order_text(order)} in {orders.precision_words(prec)} ({evaluation})" if prec in DTYPES else evaluation
    return f" (the order {said} reaches it: {what}, an overflow the profile does not accept)"


def _values(fmt, dy, x1, x2, beta):
    """Each intermediate in the data format (numpy rounds each float16 and float32 operation
    correctly) and its exact value's float64 (the diff exactly; the others near enough for a class)."""
    f = lambda b: np.asarray(b, fmt.uint).view(fmt.dtype)  # noqa: E731
    y, a, c = f(dy), f(x1), f(x2)
    b = np.broadcast_to(f(np.asarray(beta, fmt.uint)), y.shape)
    s = exact.exact_diff(fmt, np.asarray(x1, fmt.uint), np.asarray(x2, fmt.uint))[0]
    Y, B = y.astype(np.float64), b.astype(np.float64)
    d = a - c
    one = fmt.dtype.type(1)
    rounded = {"x1 - x2": d, "1 / beta": one / b, "diff / beta": d / b, "dy / beta": y / b, "diff * dy": d * y}
    exact_ = {"x1 - x2": s, "1 / beta": 1.0 / B, "diff / beta": s / B, "dy / beta": Y / B, "diff * dy": s * Y}
    return rounded, exact_, s


def _flushed(fmt, j, todo, dy, x1, x2, beta, got) -> np.ndarray:
    """The elements of ``todo`` whose bits flushing gives (:data:`FLUSHED_TEXT`): a flushed evaluation of
    the default error model's orders (Judgement.flush_explained) or of one of :data:`FLUSH_ORDERS` gives
    them, and not without the flush: where they are a number, no unflushed evaluation of FLUSH_ORDERS
    gives them (an autodiff's halved sum rounds a subnormal half to zero with nothing flushed: not a
    flush); where they are NaN or infinite, not that order's own unflushed evaluation (some other order
    reaches a NaN or an infinity unflushed by an overflow of its own, which says nothing of this one)."""
    out = todo & np.asarray(j.flush_explained, bool)
    idx = np.flatnonzero(todo)
    if idx.size:
        idx = idx[out[idx] | may_flush(fmt, dy[idx], x1[idx], x2[idx], beta[idx])]
    if not idx.size:
        return out
    f = lambda b: np.asarray(b, fmt.uint).view(fmt.dtype)  # noqa: E731
    P = DTYPES[fmt.name]
    vals = orders.evaluate_many(fmt, [(o, P, flush) for flush in (True, False) for o in FLUSH_ORDERS],
                                f(dy[idx]), f(x1[idx]), f(x2[idx]), f(beta[idx]))
    g = got[idx]
    same = [formats.same_result(fmt, v.view(fmt.uint), g) for v in vals]
    k = len(FLUSH_ORDERS)
    special = ~np.isfinite(g.view(fmt.dtype))
    plain = np.logical_or.reduce(same[k:])
    hit = np.logical_or.reduce([same[i] & ~same[k + i] for i in range(k)])  # flushed, and not the order unflushed
    out[idx] = (out[idx] | hit) & (special | ~plain)
    return out


def facts(fmt, j, at: np.ndarray):
    """(key, text, mask) of every fact, each mask over the call's elements and True only at ``at``
    (the rejected elements to explain) where that fact holds and no earlier one does. ``j``: the
    call's Judgement (its results, correctly rounded results and inputs). An order the profile lists
    gives no rejected element's bits (the error model reaches them), so every order is tried."""
    n = j.got.size
    todo = np.asarray(at, bool).copy()
    if not todo.any() or not j.inputs:
        return
    dy, x1, x2, beta = (np.broadcast_to(np.asarray(v, fmt.uint), (n,)) for v in j.inputs)
    got, oracle = j.got, j.expected.oracle
    sign = np.array(fmt.sign_mask, fmt.uint)
    name = orders.precision_words(fmt.name)
    with np.errstate(all="ignore"):
        g = got.view(fmt.dtype).astype(np.float64)
        rounded, exact_, s = _values(fmt, dy, x1, x2, beta)
        B = np.broadcast_to(np.asarray(beta, fmt.uint).view(fmt.dtype).astype(np.float64), (n,))

        def take(mask):
            hit = todo & mask
            todo[hit] = False
            return hit
        # a +0 added to the result: -0 becomes +0, nothing else changes
        yield ZERO_SIGN, "+0 is added to the result, so a zero loses its sign (+0 where the result is -0)", \
            take((got == 0) & (oracle == sign))
        # a subnormal flushed (DAZ/FTZ): the bits are what the arithmetic gives with it flushed and not without,
        # in an order the default error model lists (Judgement.flush_explained: reachable.FLUSHING's reach, stages
        # 1 and 3) or in one of FLUSH_ORDERS (an autodiff's); tried only where a subnormal can arise. Before the
        # facts of the unflushed arithmetic: a subnormal beta read as zero makes 0 / 0, an infinite diff / beta
        # of the unflushed beta is then incidental
        yield FLUSHED, FLUSHED_TEXT, take(_flushed(fmt, j, todo, dy, x1, x2, beta, got))
        # the dropped branch's gradient, times zero: NaN where the result is +-dy and diff / beta is infinite
        outer = (np.abs(s) > np.abs(B)) & (B > 0) & np.isfinite(oracle.view(fmt.dtype).astype(np.float64))
        dropped_inf = np.isinf(rounded["diff / beta"]) | np.isinf(rounded["x1 - x2"])
        yield DROPPED, ("the unused branch's gradient is added: 0 * inf in a dropped branch (NaN where the result is "
                        "+-dy and diff / beta is infinite)"), take(np.isnan(g) & outer & dropped_inf)
        special = ~np.isfinite(g)
        blocked = j.reach.blocked_at(slice(None))  # the evaluation that reaches it, through an overflow not accepted
        for cls in CLASSES[:2]:
            for im in INTERMEDIATES:
                v, e = rounded[im], exact_[im]
                if cls == "overflows":
                    holds = np.isinf(v) & np.isfinite(e) & special
                    text = f"{im} overflows {name}: infinity where its exact value is finite"
                else:
                    holds = np.isnan(v) & ~np.isnan(s) & np.isnan(g)
                    text = f"{im} is NaN in {name} (0 / 0, inf / inf, inf - inf or 0 * inf)"
                hit = take(holds)
                yield _key(im, cls, fmt.name), text + _reached_by(blocked[hit]), hit
        f = lambda b: np.asarray(b, fmt.uint).view(fmt.dtype)  # noqa: E731
        # the middle line of each shape of the grammar (reference.orders), branched as the manual's lines (C's
        # order on the rounded diff), in each precision at least the data's: one evaluation of them all on the
        # elements still to explain (take keeps the first that holds, in this order)
        tried = [(shape, prec) for shape in GRAMMAR for prec in _PRECISIONS
                 if np.dtype(DTYPES[prec]).itemsize >= fmt.dtype.itemsize]
        idx = np.flatnonzero(todo)
        evaluated = orders.evaluate_many(fmt, [(orders.Order(shape), DTYPES[prec]) for shape, prec in tried],
                                         f(dy[idx]), f(x1[idx]), f(x2[idx]), f(beta[idx])) if idx.size else []
        for k, (shape, prec) in enumerate(tried):
            hit = np.zeros(n, bool)
            if idx.size:
                hit[idx] = formats.same_result(fmt, evaluated[k].view(fmt.uint), got[idx])
            yield _key("order", shape, prec), f"the middle line computed as {orders.Order(shape).words(prec)}", take(hit)
        tiny = float(fmt.min_normal)
        # an underflow or a subnormal loses a finite result's digits: a fact of an element only where its
        # correctly rounded result is finite and the intermediate enters it, the middle line's intermediates
        # where the middle line is its result (the exact diff within +-beta), x1 - x2 also where it decides
        # the line (beta > 0). On an outer line (+-dy; every element of a beta < 0) or where the result is
        # NaN (a NaN input) it changes nothing, even added times zero: there it is incidental
        finite = np.isfinite(oracle.view(fmt.dtype).astype(np.float64))
        middle = finite & ~(s > B) & ~(s < -B)
        decides = finite & (middle | (B > 0))
        for cls in CLASSES[2:]:
            for im in INTERMEDIATES:
                v, e = rounded[im].astype(np.float64), exact_[im]
                if cls == "underflows":
                    holds = (v == 0) & (e != 0) & np.isfinite(e)
                    text = f"{im} underflows {name}: zero where its exact value is not"
                else:
                    holds = (v != 0) & (np.abs(v) < tiny)
                    text = f"{im} is subnormal in {name}"
                yield _key(im, cls, fmt.name), text, take(holds & (decides if im == "x1 - x2" else middle))

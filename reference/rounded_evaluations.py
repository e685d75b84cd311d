"""The bits of one evaluation with every operation correctly rounded and nothing flushed.

Why: the model's honest evaluations, bit for bit, serve where no interval is needed: what an
implementation of one order gives (:func:`point`, from the intervals, exact), and the same by
plain numpy arithmetic, several times faster (:func:`plain_many`), which the rounding-bias
test and :func:`sl1conf.reference.reachable.plainly_reached` use on many elements.
"""

from __future__ import annotations

import numpy as np

from .error_model import DTYPES, OPS, ORDERS, branched
from .formats import Format
from .intervals import evaluate
from .orders import add_term, evaluate_many
from .orders import parse as _grammar_order

__all__ = ["point", "plain_many"]


def point(fmt: Format, order: str, precision, dy, x1, x2, beta) -> np.ndarray:
    """The bits of one evaluation with every operation correctly rounded and nothing flushed
    (beta: one value or one per element; float arrays of the data format): what an
    implementation of that order gives, bit for bit. The C-order branches as in
    reference.models (NaN falls to the middle line). ``precision``: a name of PRECISIONS or
    fp16, or the numpy type :func:`evaluations` gives."""
    P = DTYPES[fmt.name if precision == "data" else precision] if isinstance(precision, str) else precision
    g = _grammar_order(order)
    if g is not None and g.shape.endswith("-halved"):  # its interval is widened at the subnormals: no point of it
        return evaluate_many(fmt, [(g, P)], dy, x1, x2, beta)[0]
    f = lambda v: np.asarray(v, fmt.dtype).astype(np.float64)  # noqa: E731
    y, a, c = f(dy), f(x1), f(x2)
    b = np.broadcast_to(f(beta), y.shape).astype(np.float64)
    zero = {op: 0 for op in OPS}
    out, up, down = evaluate(fmt, order, P, zero, (), y, a, c, b)
    with np.errstate(all="ignore"):
        mid = np.where(out.nan | ~out.has, np.nan, out.lo)
        res = np.where(up, y, np.where(down, -y, mid)) if branched(order) else mid
        if g is not None and g.term:  # the branch term, on the diff rounded to the precision
            res = add_term(g, res, (a.astype(P) - c.astype(P)).astype(np.float64))
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
            P = DTYPES[fmt.name if precision == "data" else precision] if isinstance(precision, str) else precision
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
            elif _grammar_order(order) is not None:  # the grammar's other orders (reference.orders)
                out.append(evaluate_many(fmt, [(_grammar_order(order), P)], dy, x1, x2, beta)[0])
                continue
            else:
                raise ValueError(f"unknown evaluation order {order!r}; known: {', '.join(ORDERS)} and the grammar's "
                                 "(reference.orders)")
            mid = mid.astype(fmt.dtype)
            out.append(np.where(d > b, dy, np.where(d < -b, -dy, mid)) if branched(order) else mid)
    return out

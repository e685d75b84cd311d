"""The grammar of evaluation orders: every way to compute the middle line from diff, beta and dy.

Why: real kernels compute ``diff * dy / beta`` in orders the manual does not write (an autodiff
framework's ``(dy / beta) * diff``, a hoisted reciprocal), and an enumerated list of them
cannot keep up. R17 searches this grammar for the order an implementation computes bit for
bit, and a profile may name any of its orders in ``[error_model.orders]`` to accept it on
purpose (docs/evaluation-models.md, "The grammar of orders").

An order (:class:`Order`) is

* a **shape** (:data:`SHAPES`): diff, beta and dy combined with one division and one
  multiplication, or one reciprocal of beta and two multiplications; a product is
  commutative in IEEE arithmetic (``a * b`` and ``b * a`` are the same bits), so these six
  are all there are;
* a **branch test** (:data:`TESTS`): the outer lines (``dy``, ``-dy``) taken where ``diff > beta``
  (``diff < -beta``), as the manual's C chain does, or from ``diff >= beta`` on (``<= -beta``),
  as a ``where(|diff| < beta, ...)`` does; a NaN diff takes the middle line either way;
* an optional **branch term** (:data:`TERMS`) that an automatic differentiation adds to every
  line: the gradient of the branch not taken, a zero (``+ 0``: a -0 result becomes +0),
  ``0 * diff`` (a zero of diff's sign, NaN where diff is infinite), or ``0 * |diff|`` (+0, NaN
  where diff is infinite);

computed at one **precision** (the data format, fp32 or fp64): every operation rounded to it,
the result then rounded once to the data format. An order's name is ``<shape>[-ge][-<term>]``
(``dy-divmul-ge-plus0``), an evaluation's ``<order>-<precision>`` as the error model's
(``dy-divmul-fp16``); the four shapes the error model always knew keep their names
(``divmul`` is ``(diff / beta) * dy``). :func:`evaluate_many` computes evaluations bit for bit
with numpy (which rounds every float16, float32 and float64 operation correctly), sharing
the intermediates of one precision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .formats import Format

__all__ = ["SHAPES", "TESTS", "TERMS", "Order", "parse", "grammar", "evaluate_many", "precision_words",
           "add_term", "NAME_PATTERN"]

SHAPES = {
    "divmul": "(diff / beta) * dy",
    "recipmul": "(diff * (1 / beta)) * dy",
    "muldiv": "(diff * dy) / beta",
    "mulrecip": "(diff * dy) * (1 / beta)",
    "dy-divmul": "(dy / beta) * diff",
    "dy-recipmul": "(dy * (1 / beta)) * diff",
}
"""The middle line's shapes, in the grammar's order of preference (the manual's first)."""
TESTS = {"": "", "ge": "the outer lines from |diff| >= beta"}
TERMS = {"": "", "plus0": "plus a zero (+0)", "plus0diff": "plus 0 * diff",
         "plus0abs": "plus 0 * |diff| (+0, NaN where diff is infinite)"}
NAME_PATTERN = ("^(dy-)?(divmul|recipmul)(-ge)?(-plus0|-plus0diff|-plus0abs)?$|"
                "^(muldiv|mulrecip)(-ge)?(-plus0|-plus0diff|-plus0abs)?$")
"""Every order's name (profile.schema.json holds the same pattern for ``[error_model.orders]``)."""
_NAME = re.compile(r"^(?P<shape>(?:dy-)?(?:divmul|recipmul)|muldiv|mulrecip)(?P<ge>-ge)?(?:-(?P<term>plus0|plus0diff|plus0abs))?$")
_WORDS = {"fp16": "half", "fp32": "float", "fp64": "double"}


def precision_words(name: str) -> str:
    """``half``, ``float`` or ``double`` for fp16, fp32, fp64."""
    return _WORDS[name]


@dataclass(frozen=True)
class Order:
    """One order of the grammar: its shape (of SHAPES), its branch test (inclusive: outer lines from
    ``|diff| >= beta``) and its branch term (of TERMS, "" for none)."""

    shape: str
    inclusive: bool = False
    term: str = ""

    @property
    def name(self) -> str:
        return self.shape + ("-ge" if self.inclusive else "") + (f"-{self.term}" if self.term else "")

    @property
    def text(self) -> str:
        """The middle line and what the order adds to the manual's branches, in words."""
        extra = [w for w in (TESTS["ge" if self.inclusive else ""], TERMS[self.term]) if w]
        return SHAPES[self.shape] + (" (" + ", ".join(extra) + ")" if extra else "")

    def words(self, precision: str) -> str:
        """The evaluation in words: ``(dy / beta) * diff in half``."""
        extra = [w for w in (TESTS["ge" if self.inclusive else ""], TERMS[self.term]) if w]
        return f"{SHAPES[self.shape]} in {precision_words(precision)}" + (", " + ", ".join(extra) if extra else "")


def parse(name: str) -> "Order | None":
    """The grammar's order of that name, or None (the clamp orders, an unknown name)."""
    m = _NAME.match(name)
    return Order(m["shape"], bool(m["ge"]), m["term"] or "") if m else None


def grammar() -> tuple:
    """Every order (48), simplest first: no term before a term, the C branch test before the
    inclusive one, the shapes in SHAPES' order."""
    return tuple(Order(s, ge, t) for t in TERMS for ge in (False, True) for s in SHAPES)


def _middle(shape: str, d, b, y, get):
    r = lambda: get("r", lambda: b.dtype.type(1) / b)  # noqa: E731
    if shape == "divmul":
        return get("q", lambda: d / b) * y
    if shape == "recipmul":
        return (d * r()) * y
    if shape == "muldiv":
        return get("m", lambda: d * y) / b
    if shape == "mulrecip":
        return get("m", lambda: d * y) * r()
    if shape == "dy-divmul":
        return get("yq", lambda: y / b) * d
    if shape == "dy-recipmul":
        return (y * r()) * d
    raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")


def evaluate_many(fmt: Format, evaluations: list, dy, x1, x2, beta) -> list:
    """The values (arrays of the data format) of several ``(Order, numpy type)``
    evaluations of the same elements (``dy``, ``x1``, ``x2`` arrays of the data format, ``beta``
    one value or one per element), every operation rounded to the precision, then the result once
    to the data format. A precision's intermediates (diff, 1 / beta, diff / beta, ...) are
    computed once for all the evaluations that share them."""
    dy = np.asarray(dy, fmt.dtype)
    out, cache = [], {}
    with np.errstate(all="ignore"):
        for order, P in evaluations:
            c = cache.setdefault(np.dtype(P), {})

            def get(name, make):
                if name not in c:
                    c[name] = make()
                return c[name]
            y = get("y", lambda: dy.astype(P))
            b = get("b", lambda: np.broadcast_to(np.asarray(beta, fmt.dtype).astype(P), y.shape))
            d = get("d", lambda: np.asarray(x1, fmt.dtype).astype(P) - np.asarray(x2, fmt.dtype).astype(P))
            mid = get(("mid", order.shape), lambda: _middle(order.shape, d, b, y, get))
            if order.inclusive:
                up, down = get("ge", lambda: d >= b), get("le", lambda: d <= -b)
            else:
                up, down = get("gt", lambda: d > b), get("lt", lambda: d < -b)
            line = np.where(up, y, np.where(down, -y, mid))
            if order.term == "plus0":
                line = line + P(0)
            elif order.term == "plus0diff":
                line = line + P(0) * d
            elif order.term == "plus0abs":
                line = line + P(0) * np.abs(d)
            out.append(line.astype(fmt.dtype))
    return out


def add_term(order: "Order | None", res, d):
    """``res`` (float64, the lines chosen) with the order's branch term added (``d``: the rounded
    diff, float64): what :func:`reference.rounded_evaluations.point` gives for a grammar order."""
    if order is None or not order.term:
        return res
    with np.errstate(all="ignore"):
        return res + {"plus0": 0.0, "plus0diff": 0.0 * d, "plus0abs": 0.0 * np.abs(d)}[order.term]

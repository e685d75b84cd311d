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
  are all there are; and the two **halved** forms of the dy-first shapes an automatic
  differentiation makes of ``0.5 * d * d / beta`` (``(0.5 * diff) * q + 0.5 * (q * diff)``,
  ``q = dy / beta`` or ``dy * (1 / beta)``: the product's gradient summed over its two factors);
* a **branch test** (:data:`TESTS`): the outer lines (``dy``, ``-dy``) taken where ``diff > beta``
  (``diff < -beta``), as the manual's C chain does, or from ``diff >= beta`` on (``<= -beta``),
  as a ``where(|diff| < beta, ...)`` does; a NaN diff takes the middle line either way;
* an optional **branch term** (:data:`TERMS`) that an automatic differentiation adds to every
  line: the gradient of the branch not taken, a zero (``+ 0``: a -0 result becomes +0),
  ``0 * diff`` (a zero of diff's sign, NaN where diff is infinite), ``0 * |diff|`` (+0, NaN
  where diff is infinite), or ``grad``: the unused branches' gradients summed as ``jax.vjp`` of a
  ``where`` sums them (:func:`evaluate_many`), or ``gradfma``: the same with each product added
  fused (a compiler's multiply-add contraction: one rounding, so an underflowing product keeps its
  sign);

computed at one **precision** (the data format, fp32 or fp64): every operation rounded to it,
the result then rounded once to the data format, and either nothing flushed or, as an FPU in
DAZ/FTZ mode, every subnormal input, intermediate and result flushed to zero (the evaluation's
name ends ``-ftz``: ``dy-divmul-halved-ge-grad-fp32-ftz``). An order's name is ``<shape>[-ge][-<term>]``
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
           "add_term", "NAME_PATTERN", "FLUSH_WORDS", "flush_name"]

SHAPES = {
    "divmul": "(diff / beta) * dy",
    "recipmul": "(diff * (1 / beta)) * dy",
    "muldiv": "(diff * dy) / beta",
    "mulrecip": "(diff * dy) * (1 / beta)",
    "dy-divmul": "(dy / beta) * diff",
    "dy-recipmul": "(dy * (1 / beta)) * diff",
    "dy-divmul-halved": "(0.5 * diff) * q + 0.5 * (q * diff) with q = dy / beta",
    "dy-recipmul-halved": "(0.5 * diff) * q + 0.5 * (q * diff) with q = dy * (1 / beta)",
}
"""The middle line's shapes, in the grammar's order of preference (the manual's first). The two
``-halved`` shapes are what an automatic differentiation makes of a loss written ``0.5 * d * d / beta``
(or ``* (1 / beta)``): the gradient of a product summed over its two factors, each halved; halving is
exact unless a product is subnormal, so they differ from ``dy-divmul`` (``dy-recipmul``) only there."""
TESTS = {"": "", "ge": "the outer lines from |diff| >= beta"}
TERMS = {"": "", "plus0": "plus a zero (+0)", "plus0diff": "plus 0 * diff",
         "plus0abs": "plus 0 * |diff| (+0, NaN where diff is infinite)",
         "grad": ("plus the unused branches' gradients as an autodiff sums them (the outer lines' cotangent "
                  "+0 - +0 on the middle line; on the outer lines the middle line with dy = 0 added to dy "
                  "(to +0 - dy): NaN where diff is infinite or beta is zero)"),
         "gradfma": ("plus the unused branches' gradients as an autodiff sums them, each product added "
                     "fused (one rounding: a multiply-add contracted by the compiler)")}
FLUSH_WORDS = "subnormals flushed (DAZ/FTZ: a subnormal input read as zero, every intermediate and the result flushed)"
"""What a flushed evaluation (``evaluate_many``'s third item, the name's ``-ftz``) adds to its words."""
NAME_PATTERN = ("^(dy-)?(divmul|recipmul)(-ge)?(-plus0|-plus0diff|-plus0abs|-grad|-gradfma)?$|"
                "^dy-(divmul|recipmul)-halved(-ge)?(-plus0|-plus0diff|-plus0abs|-grad|-gradfma)?$|"
                "^(muldiv|mulrecip)(-ge)?(-plus0|-plus0diff|-plus0abs|-grad|-gradfma)?$")
"""Every order's name (profile.schema.json holds the same pattern for ``[error_model.orders]``)."""
_NAME = re.compile(r"^(?P<shape>dy-(?:divmul|recipmul)-halved|(?:dy-)?(?:divmul|recipmul)|muldiv|mulrecip)(?P<ge>-ge)?"
                   r"(?:-(?P<term>plus0|plus0diff|plus0abs|grad|gradfma))?$")
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
    """Every order (96), simplest first: no term before a term, the C branch test before the
    inclusive one, the shapes in SHAPES' order."""
    return tuple(Order(s, ge, t) for t in TERMS for ge in (False, True) for s in SHAPES)


def flush_name(name: str, flush: bool) -> str:
    """An evaluation's name (``dy-divmul-fp32``) with ``-ftz`` where it flushes subnormals."""
    return name + ("-ftz" if flush else "")


def _middle(shape: str, d, b, y, get, A, yk="y"):
    """The middle line of ``shape`` as the terms it sums (one, or the ``-halved`` shapes' two), each
    ``(a, b)``: a last product not yet rounded (``a * b``; a fused add takes it whole), or ``(v, None)``:
    a value (the division that ends ``muldiv``). ``A``: the arithmetic (:class:`_Arith`). ``yk``: the
    cache key of ``y`` (the whole dy, or the middle line's cotangent of a ``grad`` term)."""
    r = lambda: get("r", lambda: A.div(b.dtype.type(1), b))  # noqa: E731
    if shape == "divmul":
        return [(get("q", lambda: A.div(d, b)), y)]
    if shape == "recipmul":
        return [(get("dr", lambda: A.mul(d, r())), y)]
    if shape == "muldiv":
        return [(A.div(get(("m", yk), lambda: A.mul(d, y)), b), None)]
    if shape == "mulrecip":
        return [(get(("m", yk), lambda: A.mul(d, y)), r())]
    if shape in ("dy-divmul", "dy-divmul-halved"):
        q = get(("yq", yk), lambda: A.div(y, b))
    elif shape in ("dy-recipmul", "dy-recipmul-halved"):
        q = get(("yr", yk), lambda: A.mul(y, r()))
    else:
        raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
    if not shape.endswith("-halved"):
        return [(q, d)]
    half = b.dtype.type(0.5)
    return [(get("hd", lambda: A.mul(half, d)), q), (A.mul(q, d), half)]


class _Arith:
    """Each operation in the precision ``P``, correctly rounded; with ``flush``, as an x86 FPU in
    DAZ/FTZ mode: an input subnormal in P reads as a zero of its sign (:meth:`daz`), and a result whose
    exact value is below P's smallest normal is a zero of its sign, tininess judged before rounding
    (a quotient that rounds up to the smallest normal is flushed too: XLA's CPU code does so). Flushed,
    fp16 and fp32 operations are computed in float64 (exact for a product, a sum of these operands
    near the subnormals and a fused multiply-add of the shapes', and rounded once more innocuously for
    a quotient); fp64's tininess is judged after rounding."""

    def __init__(self, P, flush: bool):
        self.P, self.flush = P, flush
        self.tiny = np.finfo(P).tiny
        self.wide = np.dtype(P) != np.float64

    def daz(self, x):
        if not self.flush:
            return x
        x = np.asarray(x)
        return np.where((x != 0) & (np.abs(x) < self.tiny), np.copysign(self.P(0), x), x)

    def _op(self, fn, *args):
        if not self.flush:
            return fn(*args)
        if not self.wide:
            return self.daz(fn(*args))
        w = fn(*(np.asarray(a).astype(np.float64) for a in args))
        r = np.asarray(w).astype(self.P)
        return np.where((w != 0) & (np.abs(w) < self.tiny), np.copysign(self.P(0), w), r)

    def mul(self, a, b):
        return self._op(np.multiply, a, b)

    def div(self, a, b):
        return self._op(np.divide, a, b)

    def add(self, a, b):
        return self._op(np.add, a, b)

    def sub(self, a, b):
        return self._op(np.subtract, a, b)

    def term(self, t):
        """A term's value: its product rounded."""
        return t[0] if t[1] is None else self.mul(t[0], t[1])

    def fused(self, acc, t):
        """``acc + t`` with ``t``'s product unrounded (a fused multiply-add: one rounding). The exact
        sum is computed in float64, exact here for fp16 and fp32 operands (the accumulator is zero or
        the product zero, or they are of one size: the halved shapes' halves); in fp64 a plain add."""
        if t[1] is None or not self.wide:
            return self.add(acc, self.term(t))
        f64 = lambda v: np.asarray(v).astype(np.float64)  # noqa: E731
        w = f64(t[0]) * f64(t[1]) + f64(acc)
        r = np.asarray(w).astype(self.P)
        if not self.flush:
            return r
        return np.where((w != 0) & (np.abs(w) < self.tiny), np.copysign(self.P(0), w), r)


def evaluate_many(fmt: Format, evaluations: list, dy, x1, x2, beta) -> list:
    """The values (arrays of the data format) of several ``(Order, numpy type)`` or ``(Order, numpy
    type, flush)`` evaluations of the same elements (``dy``, ``x1``, ``x2`` arrays of the data format,
    ``beta`` one value or one per element), every operation rounded to the precision, then the result
    once to the data format; ``flush``: as an FPU in DAZ/FTZ mode, each input subnormal in the precision
    read as a zero of its sign and each operation's subnormal result flushed to one (:data:`FLUSH_WORDS`).
    A precision's intermediates (diff, 1 / beta, diff / beta, ...) are computed once for all the
    evaluations that share them.

    The ``grad`` term is what ``jax.vjp`` of ``where(|d| < beta, 0.5 * d * d / beta, |d| - 0.5 * beta)``
    computes (its graph: tests/test_order_discovery.py): the cotangent of the middle line ``ym`` is dy
    there and +0 elsewhere, the outer lines' ``A`` is ``dy + -(+0)`` on the upper line, ``+0 + -dy`` on
    the lower and ``+0 + -(+0)`` in the middle, and the result ``A + u`` (``(A + h1) + h2`` for a halved
    shape), ``u`` the middle line of ``ym``: on the outer lines the middle line with dy = 0, NaN where
    diff is infinite (``inf * 0``) or beta is zero (``0 / 0``)."""
    dy = np.asarray(dy, fmt.dtype)
    out, cache = [], {}
    with np.errstate(all="ignore"):
        for item in evaluations:
            order, P = item[0], item[1]
            flush = bool(item[2]) if len(item) > 2 else False
            c = cache.setdefault((np.dtype(P), flush), {})
            A = _Arith(P, flush)

            def get(name, make):
                if name not in c:
                    c[name] = make()
                return c[name]
            y = get("y", lambda: A.daz(dy.astype(P)))
            b = get("b", lambda: A.daz(np.broadcast_to(np.asarray(beta, fmt.dtype).astype(P), y.shape)))
            d = get("d", lambda: A.sub(A.daz(np.asarray(x1, fmt.dtype).astype(P)),
                                       A.daz(np.asarray(x2, fmt.dtype).astype(P))))
            if order.inclusive:
                up, down = get("ge", lambda: d >= b), get("le", lambda: d <= -b)
            else:
                up, down = get("gt", lambda: d > b), get("lt", lambda: d < -b)
            if order.term in ("grad", "gradfma"):
                t = order.inclusive
                ym = get(("ym", t), lambda: np.where(up | down, P(0), y))
                zero = np.zeros_like(y)
                line = get(("A", t), lambda: np.where(up, y + (-zero), np.where(down, zero + (-y), zero + (-zero))))
                for term in get(("mid", order.shape, ("ym", t)),
                                lambda: _middle(order.shape, d, b, ym, get, A, ("ym", t))):
                    line = A.fused(line, term) if order.term == "gradfma" else A.add(line, A.term(term))
                out.append(line.astype(fmt.dtype))
                continue

            def summed():
                terms = _middle(order.shape, d, b, y, get, A)
                v = A.term(terms[0])
                for term in terms[1:]:
                    v = A.add(v, A.term(term))
                return v
            mid = get(("mid", order.shape, "y"), summed)
            line = np.where(up, y, np.where(down, -y, mid))
            if order.term == "plus0":
                line = A.add(line, P(0))
            elif order.term == "plus0diff":
                line = A.add(line, A.mul(P(0), d))
            elif order.term == "plus0abs":
                line = A.add(line, A.mul(P(0), np.abs(d)))
            out.append(line.astype(fmt.dtype))
    return out


def add_term(order: "Order | None", res, d):
    """``res`` (float64, the lines chosen) with the order's branch term added (``d``: the rounded
    diff, float64): what :func:`reference.rounded_evaluations.point` gives for a grammar order. The
    ``grad`` and ``gradfma`` terms are ``plus0abs``'s where beta > 0 (every zero +0, NaN where diff is infinite; the
    gradient's NaN at beta = 0 is not a point's: the point judges a positive beta)."""
    if order is None or not order.term:
        return res
    with np.errstate(all="ignore"):
        return res + {"plus0": 0.0, "plus0diff": 0.0 * d, "plus0abs": 0.0 * np.abs(d),
                      "grad": 0.0 * np.abs(d), "gradfma": 0.0 * np.abs(d)}[order.term]

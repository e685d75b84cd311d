"""The error model: what a platform's arithmetic may do, and the places a flush may happen.

Why a module of its own: the model is data (profiles name one, reports print it), and what
judges a result against it (:mod:`sl1conf.reference.reachable`) is a separate job. A model is

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
name, the last operation and the result; :func:`place_modes` gives each a mode (``never``,
``may``, ``always``), which R06 uses to ask what an element's result says of one place
(conformance/requirements/subnormals.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .formats import Format
from .orders import parse as _grammar_order

__all__ = ["ORDERS", "BRANCHED", "OPS", "FLUSH_PLACES", "PRECISIONS", "DTYPES", "ErrorModel", "IEEE", "FLUSHING",
           "may_flush", "INPUT_PLACES", "MID_PLACES", "LAST", "RESULT", "PLACES", "MODES", "place_modes",
           "near_zero_places", "evaluations", "branched", "known_order", "order_text", "OVERFLOWS", "OVERFLOW_CAUSES",
           "overflow_bits", "overflow_barred", "overflow_words"]

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
"""The branched orders the error model always knew; any order of the grammar
(:mod:`sl1conf.reference.orders`: ``dy-divmul``, ``divmul-ge-plus0``, ...) is branched too
(:func:`branched`), and a profile may name it."""


def branched(order: str) -> bool:
    """Whether the order has the manual's branches (every order but the clamp ones)."""
    return order in BRANCHED or _grammar_order(order) is not None


def known_order(order: str) -> bool:
    """An order of ORDERS or of the grammar (:mod:`sl1conf.reference.orders`)."""
    return order in ORDERS or _grammar_order(order) is not None


def order_text(order: str) -> str:
    """The order's middle line in words (ORDERS', or the grammar's)."""
    g = _grammar_order(order)
    return ORDERS.get(order) or (g.text if g else order)

OPS = ("sub", "mul", "div", "recip")
FLUSH_PLACES = ("inputs", "intermediates", "result")
PRECISIONS = ("data", "fp32", "fp64")
DTYPES = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64}
"""The numpy type of each precision's name (and of fp16 data)."""
INPUT_PLACES = ("dy", "x1", "x2", "beta")
MID_PLACES = ("x1 - x2", "1 / beta", "diff / beta", "diff * (1 / beta)", "diff * dy")
"""The arithmetic intermediates before the last operation, by name ("diff" in the clamp orders is
the clamped diff, the same value where the middle line is taken)."""
LAST = "the last operation"
"""The operation whose value is rounded to the result, in the evaluation's precision: its flush and
the result's both make the result a zero, so R06 judges the two as one place, the result."""
RESULT = "the result"
PLACES = INPUT_PLACES + MID_PLACES + (LAST, RESULT)
MODES = ("never", "may", "always")
OVERFLOWS = ("x1 - x2", "1 / beta", "diff / beta", "dy / beta", "diff * (1 / beta)", "dy * (1 / beta)", "diff * dy",
             LAST, RESULT)
"""The intermediates whose overflow a profile may accept (``error_model.overflow``; issue 40): each
arithmetic value of an evaluation by its name (the grammar's dy-first ones too), the last operation,
and the result's rounding to the data format. An overflow is an infinity an operation makes from
finite operands (a value past the precision's range, or one an approximation steps past it); what
it then makes (an infinite result, NaN from ``0 * inf`` or ``inf / inf``) carries its name.
R03's statement is that no such overflow reaches a result whose exact value is finite: an
evaluation that reaches an infinity or NaN there is accepted only where every overflow it took is
one the profile lists (the built-in ieee lists none; ft78ne and mt7004 list ``1 / beta``, a
divider-less DSP's reciprocal of a subnormal beta)."""
OVERFLOW_CAUSES = OVERFLOWS + ("a zero beta", "the branch term")
"""The bits of :func:`overflow_bits` (reference.intervals tracks them per element): OVERFLOWS, then two
that are no overflow: a division by (or the reciprocal of) a beta read as zero (an accepted flush
of a subnormal beta; accepted wherever that flush is), and an automatic differentiation's branch
term ``0 * diff`` or ``0 * |diff|``, NaN where diff is infinite (never accepted where the exact result
is finite: it is no overflow, and R03 and R04 say what an infinite diff gives)."""
_ZERO_BETA = 1 << OVERFLOW_CAUSES.index("a zero beta")


def overflow_bits(names) -> int:
    """The bit mask of those names of OVERFLOWS (a profile's ``error_model.overflow``); a beta read as
    zero is always in it (its infinity is the accepted flush's, not an overflow)."""
    out = _ZERO_BETA
    for n in names:
        out |= 1 << OVERFLOWS.index(n)
    return out


def overflow_barred(ovf, model: "ErrorModel"):
    """Per element, whether an evaluation's infinity or NaN (``ovf``: its overflow bits, reference.intervals)
    is one ``model`` does not accept where the exact result is finite: an overflow it does not list, or
    none at all (an infinite input's). One rule for the judge (reachable.reach) and the board's record
    (rules.acceptance)."""
    ovf = np.asarray(ovf, np.uint16)
    return ((ovf & ~np.uint16(overflow_bits(model.overflow))) != 0) | (ovf == 0)


def overflow_words(bits: int) -> str:
    """The names of the overflows (and no-overflow causes) in ``bits``, in words."""
    names = [n for i, n in enumerate(OVERFLOW_CAUSES) if bits >> i & 1]
    words = [n + " is NaN (0 * inf: diff is infinite)" if n == "the branch term" else
             "division by a beta read as zero" if n == "a zero beta" else
             "the rounding to the data format overflows" if n == RESULT else n + " overflows" for n in names]
    return " and ".join(words) if words else "an infinite input (no overflow)"
_KIND = {**{p: "inputs" for p in INPUT_PLACES}, **{p: "intermediates" for p in MID_PLACES + (LAST,)}, RESULT: "result"}


@dataclass(frozen=True)
class ErrorModel:
    """A platform's arithmetic: ``orders`` (order -> the precisions it may be computed in),
    ``ulp`` (operation -> steps from the correctly rounded result it may land), ``flush`` (the
    places flushing may happen, of FLUSH_PLACES)."""

    orders: dict = field(default_factory=lambda: {o: PRECISIONS for o in ORDERS})
    ulp: dict = field(default_factory=lambda: {op: 0 for op in OPS})
    flush: tuple = ()
    overflow: tuple = ()

    @property
    def approximate(self) -> tuple:
        """The operations that may land off the correctly rounded value."""
        return tuple(op for op in OPS if self.ulp.get(op, 0) > 0)

    def summary(self) -> dict:
        return {"orders": {o: list(p) for o, p in self.orders.items()}, "ulp": dict(self.ulp),
                "flush": list(self.flush), "overflow": list(self.overflow)}


IEEE = ErrorModel(orders={"divmul": PRECISIONS, "recipmul": ("fp32", "fp64"), "muldiv": ("fp32", "fp64"),
                          "mulrecip": ("fp32", "fp64"), "clamp-recipmul": ("fp32", "fp64"),
                          "clamp-divmul": PRECISIONS})
"""The default (a profile that names no error model): every order in fp32 and fp64, the
division orders in the data format too, every operation correctly rounded, no flushing."""
FLUSHING = ErrorModel(orders=IEEE.orders, flush=FLUSH_PLACES)
"""IEEE's arithmetic with flushing at every place (DAZ and FTZ, as an FPU in flush mode does): the
hypothesis a diagnosis tests rejected elements against (rules.judge.Judgement.flush_explained). No
overflow is taken: an infinity a flushed beta makes (a division by zero) is the flush's, and one an
overflowing 1 / beta makes without a flush does not explain it away. R14 and R18, which ask whether
two results of one element are one with a flush and one without, take every overflow
(conformance/requirements/base.py)."""


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
    # the grammar's dy-first orders have one intermediate more, dy / beta (not a place of R06's)
    v = lambda bits: np.asarray(bits, fmt.uint).view(fmt.dtype).astype(np.float64)  # noqa: E731
    with np.errstate(all="ignore"):
        q = v(dy) / np.broadcast_to(v(np.asarray(beta, fmt.uint)), np.shape(out))
    return out | ((np.abs(q) < 2 * float(fmt.min_normal)) & (q != 0))


def evaluations(fmt: Format, model: ErrorModel) -> list:
    """(name, order, numpy dtype) of every evaluation the model allows for data ``fmt``: the
    precision "data" is the data format, duplicates (data = fp32 for fp32 data) once."""
    out, seen = [], set()
    for order, precs in model.orders.items():
        for p in precs:
            name = fmt.name if p == "data" else p
            if np.dtype(DTYPES[name]).itemsize < fmt.dtype.itemsize or (order, name) in seen:
                continue
            seen.add((order, name))
            out.append((f"{order}-{name}", order, DTYPES[name]))
    return out

"""What honest arithmetic can give for an element: the error model, judged by bounds.

Why: a DSP flushes subnormals at any step, may have no divider (a reciprocal by
Newton-Raphson, within an ULP or two), and real kernels use orders other than the
manual's. Listing their bit patterns cannot keep up; a bound can. As the Vulkan and WebGPU
conformance suites do, a result is accepted when it lies in the set of all the ways the
expression could come out, operation by operation: the model (orders, precisions, each
operation's accuracy, the places a flush may happen) is :mod:`sl1conf.reference.error_model`,
the set of one evaluation :mod:`sl1conf.reference.intervals`, the correctly rounded bits of
one :mod:`sl1conf.reference.rounded_evaluations`. Here: whether a result lies in the set, and
what it took (:func:`reach`, in stages), and the groups of elements each stage tries
(:func:`reachable_sets`). ``reach`` takes an optional mode per place (``never``, ``may``,
``always``; :func:`place_modes`), which R06 uses to ask what an element's result says of one
place (conformance/requirements/subnormals.py); without it each place may flush where
``flush`` lists its kind, as before. Every name of those modules that the suite uses is
importable from here too.

Only elements with a positive beta (+inf included), no NaN input and a number as the exact
result are judged here: NaN and ``beta <= 0`` are the oracle's and the open-behaviour rules'
(``conformance.rules.openbehaviour``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .error_model import (BRANCHED, FLUSH_PLACES, FLUSHING, IEEE, INPUT_PLACES, LAST, MID_PLACES, MODES, OPS,
                          ORDERS, OVERFLOWS, PLACES, PRECISIONS, RESULT, ErrorModel, evaluations, may_flush,
                          near_zero_places, overflow_barred, overflow_bits, overflow_words, place_modes)
from .formats import Format, is_nan_bits
from .intervals import evaluate
from .orders import parse as _grammar_order
from .rounded_evaluations import plain_many, point

__all__ = ["ORDERS", "BRANCHED", "OPS", "FLUSH_PLACES", "PRECISIONS", "ErrorModel", "IEEE", "FLUSHING", "may_flush",
           "INPUT_PLACES", "MID_PLACES", "LAST", "RESULT", "PLACES", "MODES", "place_modes", "near_zero_places",
           "OVERFLOWS", "overflow_bits", "overflow_barred",
           "Reach", "reach", "Group", "reachable_sets",
           "evaluations", "point", "plain_many", "plainly_reached", "OPEN_FORMS", "open_points", "open_reach"]

@dataclass
class Reach:
    """Per judged element: ``stage`` 0 not reachable, 1 reachable with every operation correctly
    rounded and nothing flushed, 2 only with an approximate operation, 3 only with a flush;
    ``how`` what it took (the evaluation, and the approximation or the flush), "" where 0;
    ``blocked`` where stage is 0 and an evaluation reaches the result only through an overflow the
    model does not accept (an infinity or NaN where the exact result is finite: R03), which one, in
    words (``muldiv-fp32: diff * dy overflows``), "" elsewhere (None: nothing blocked anywhere)."""

    stage: np.ndarray
    how: np.ndarray
    blocked: "np.ndarray | None" = None

    def blocked_at(self, at) -> np.ndarray:
        """``blocked`` at ``at`` (a slice, a mask or indices), "" where nothing was."""
        if self.blocked is None:
            return np.full(np.shape(self.stage[at]), "", object)
        return self.blocked[at]


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
                out, up, down = evaluate(self.fmt, order, P, self.ulp, (), *self.ins, places=self.flush)
            else:
                out, up, down = evaluate(self.fmt, order, P, self.ulp, self.flush, *self.ins)
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
    # an infinity or NaN where the exact result is finite: reached only through overflows the model accepts
    unbounded = ~np.isfinite(g) & np.isfinite(o)
    blocked = np.full(n, "", object) if unbounded.any() else None
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
        ui = unbounded[idx]
        for name, order, out, up, down in grp.evaluations():
            inside = out.has & (out.lo <= gi) & (gi <= out.hi) & si
            flushed = zi & (out.z > 0) & si
            nan = ni & out.nan
            if ui.any():  # R03: only through overflows the model accepts (none, where it took none: an infinite input)
                barred = ui & overflow_barred(out.ovf, model)
                say = barred & (inside | nan) & ~hit & (blocked[idx] == "")
                for bits in np.unique(out.ovf[say]).tolist():
                    blocked[idx[say & (out.ovf == bits)]] = f"{name}: {overflow_words(bits)}"
                inside, nan = inside & ~barred, nan & ~barred
            copy = np.zeros(idx.size, bool)
            for y0 in grp.copies:
                copy |= (up & (gi == y0) & (np.signbit(gi) == np.signbit(y0))) | \
                        (down & (gi == -y0) & (np.signbit(gi) != np.signbit(y0)))
                if _zero_term(order):  # a grammar order's branch term (+0, 0 * diff) may turn a -0 copy into +0
                    copy |= (up | down) & zi & (y0 == 0)
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
    if blocked is not None:
        blocked[stage > 0] = ""
    return Reach(stage, how, blocked)


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
    with np.errstate(all="ignore"):  # an infinity where the exact result is finite: reach's (R03's overflows)
        todo = ~np.isnan(f(g)) & ~np.isnan(f(o)) & (f(ins[3]) > 0) & ~(np.isinf(f(g)) & np.isfinite(f(o)))
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


OPEN_FORMS = (
    ("divmul", "(diff / beta) * dy"),
    ("recipmul", "(diff * (1 / beta)) * dy"),
    ("muldiv", "(diff * dy) / beta"),
    ("mulrecip", "(diff * dy) * (1 / beta)"),
    ("clamp-recipmul", "min(max(diff, -beta), beta) * (1 / beta) * dy"),
    ("clamp-recipmul", "max(min(diff, beta), -beta) * (1 / beta) * dy"),
    ("clamp-divmul", "clamp(diff / beta, -1, 1) * dy"),
    ("clamp-divmul", "min(max(diff, -beta), beta) / beta * dy"),
    ("clamp-divmul", "max(min(diff, beta), -beta) / beta * dy"),
)
"""Each order as it may be written (order, form), evaluated as written on an open input (:func:`open_points`).
For a positive beta the forms of one order give the same bits (rounding is monotone and beta / beta is 1:
``clamp(diff, -beta, beta) / beta`` is ``clamp(diff / beta, -1, 1)``), so they are one order; where the
manual leaves the input open (beta <= 0, a NaN beta, beta = +inf with an infinite diff) they part: at
beta = -inf ``min(max(diff, +inf), -inf) / -inf`` is ``-inf / -inf``, NaN, where ``clamp(diff / beta, -1, 1)``
is a zero. min and max propagate a NaN (a clamp that drops it is a defect, not an order). The branched
orders test the manual's lines in C's order: ``diff > beta``, then ``diff < -beta``, else the middle line."""


def open_points(fmt: Format, model: ErrorModel, dy, x1, x2, beta) -> list:
    """(label, bits) per evaluation the model allows and per written form of its order (:data:`OPEN_FORMS`):
    the data format's bits the form gives for these elements (bit arrays of one length; ``beta`` one
    or one per element), every operation correctly rounded in the evaluation's precision, nothing
    flushed, the result rounded once to the data format. What an order the profile allows reaches on
    an input the manual leaves open, where :func:`reach` (which judges a positive beta only) does not
    look; the judge accepts it beside the open input's stated bounds (rules.judge). ``label``:
    ``clamp-divmul-fp16, as min(max(diff, -beta), beta) / beta * dy``."""
    n = np.shape(dy)[0]
    f = lambda bits: np.ascontiguousarray(np.broadcast_to(np.asarray(bits, fmt.uint), (n,))).view(fmt.dtype)  # noqa: E731
    y0, a0, c0, b0 = (f(v) for v in (dy, x1, x2, beta))
    out = []
    with np.errstate(all="ignore"):
        # the data format's evaluations first: where several give the bits, the label names the narrowest
        for name, order, P in sorted(evaluations(fmt, model), key=lambda e: np.dtype(e[2]).itemsize):
            y, b = y0.astype(P), b0.astype(P)
            d = a0.astype(P) - c0.astype(P)
            lo_hi = lambda: np.minimum(np.maximum(d, -b), b)  # noqa: E731  min(max(diff, -beta), beta)
            hi_lo = lambda: np.maximum(np.minimum(d, b), -b)  # noqa: E731  max(min(diff, beta), -beta)
            for o, form in OPEN_FORMS:
                if o != order:
                    continue
                if form == "(diff / beta) * dy":
                    v = (d / b) * y
                elif form == "(diff * (1 / beta)) * dy":
                    v = (d * (P(1) / b)) * y
                elif form == "(diff * dy) / beta":
                    v = (d * y) / b
                elif form == "(diff * dy) * (1 / beta)":
                    v = (d * y) * (P(1) / b)
                elif form.endswith("* (1 / beta) * dy"):
                    v = ((lo_hi() if form.startswith("min") else hi_lo()) * (P(1) / b)) * y
                elif form == "clamp(diff / beta, -1, 1) * dy":
                    v = np.minimum(np.maximum(d / b, P(-1)), P(1)) * y
                else:
                    v = ((lo_hi() if form.startswith("min") else hi_lo()) / b) * y
                v = np.asarray(v).astype(fmt.dtype)
                if order in BRANCHED:
                    v = np.where(d > b, y0, np.where(d < -b, -y0, v))
                out.append((f"{name}, as {form}", np.ascontiguousarray(v, fmt.dtype).view(fmt.uint)))
    return out


def open_reach(fmt: Format, model: ErrorModel, got, dy, x1, x2, beta, *, strict_zero_sign: bool = False) -> Reach:
    """Whether each ``got`` (bits) is what an evaluation the model allows gives as written on its input
    (:func:`open_points`; NaN as a class, a zero's sign counted only where ``strict_zero_sign``): stage 1
    and the first such evaluation's label where it is, 0 and "" where not. For the elements whose input
    the manual leaves open (the judge asks it of those only)."""
    got = np.asarray(got, fmt.uint)
    n = got.shape[0]
    stage, how = np.zeros(n, np.int8), np.full(n, "", object)
    if n == 0:
        return Reach(stage, how)
    sign = np.array(fmt.sign_mask, fmt.uint)
    zero = lambda b: (b & ~sign) == 0  # noqa: E731
    for label, bits in open_points(fmt, model, dy, x1, x2, beta):
        same = (got == bits) | (is_nan_bits(fmt, got) & is_nan_bits(fmt, bits))
        if not strict_zero_sign:
            same |= zero(got) & zero(bits)
        new = same & (stage == 0)
        stage[new], how[new] = 1, label
        if (stage > 0).all():
            break
    return Reach(stage, how)


_OP_WORDS = {"sub": "x1 - x2", "mul": "a product", "div": "the division", "recip": "1/beta"}
_ZERO_WHY = {1: "x1 - x2 flushed to zero", 2: "an intermediate flushed to zero", 3: "the result flushed to zero"}


def _words(name: str, order: str, st: int, ulp: dict, combo: tuple, zcode: int, nan: bool, copy: bool) -> str:
    """What accepting the element took, in words."""
    parts = [name]
    if st >= 2:
        approx = [f"{_OP_WORDS[op]} within {ulp[op]} ULP" for op in OPS if ulp.get(op, 0) > 0 and _uses(order, op)]
        parts += approx
    if combo:
        parts.append(", ".join(INPUT_PLACES[i] for i in combo) + " (subnormal) read as zero")
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


def _zero_term(order: str) -> bool:
    """Whether the order is one of the grammar's with a branch term (reference.orders): its outer
    lines add a zero to the copy of dy, which may change a zero's sign."""
    g = _grammar_order(order)
    return g is not None and bool(g.term)

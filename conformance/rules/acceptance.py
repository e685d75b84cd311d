"""Every result the judge accepts for an element, as a small record a C program can check.

Why: the exported self-test (``vectors/selftest.c``) runs on a board, where the suite cannot
judge; its verdict must still be the suite's (issue 36). The judge (``rules.judge``) decides
by masks over results it is given; this module gives the same decision before any result
exists, as a set per element, built from the same pieces: the correctly rounded result, the
profile's ULP budget (not on the boundary, not for an infinity or NaN: R02 to R04), the zero
sign where the profile is strict, the open-behaviour alternatives, an open input's bounds
(``rules.openbehaviour``), and everything the profile's error model reaches
(``reference.reachable``: per evaluation, stage, flush of the inputs, a hull [lo, hi], a zero
reached by a flush, NaN reached, the outer lines' copies of dy and -dy).

The record (:class:`Accepted`), per element:

* ``lo``, ``hi``: bit patterns of the data format, an interval on the ordered line
  (``formats.ordered``: -inf < ... < -0 == +0 < ... < +inf), of the numbers other than
  zero; the interval that holds the correctly rounded result where one does; empty
  (:func:`empty`: +inf .. -inf) where no number is accepted;
* ``flags``: :data:`NAN` (any NaN is accepted), :data:`PLUS_ZERO`, :data:`MINUS_ZERO`, and
  :data:`BOUNDARY` (the exact x1 - x2 is +-beta: no budget there; said, not judged by);
* a few further intervals where the accepted numbers are not one interval (an evaluation that
  under- or overflows far from the others, a flushed input's result, an open input's bounds
  with the fill pattern left out), as rows ``(element, lo, hi)`` in ``extra_*``, ascending by
  element: there is no limit to how many, so nothing is ever accepted or rejected for want
  of room.

A result is accepted when it is NaN and NaN is, a zero whose sign's flag is set, or a number
(infinities included) inside ``lo .. hi`` or one of the element's further intervals
(:meth:`Accepted.contains`: what the self-test computes with integer comparisons). That this
is exactly ``judge(...).ok`` is tests/test_selftest_gate.py's first claim.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sl1conf.conformance.rules import openbehaviour
from sl1conf.conformance.rules.judge import Expected, InputFacts, input_facts, is_special, is_zero
from sl1conf.reference import formats, reachable

__all__ = ["Accepted", "accepted", "NAN", "PLUS_ZERO", "MINUS_ZERO", "BOUNDARY", "empty"]

NAN, PLUS_ZERO, MINUS_ZERO, BOUNDARY = 1, 2, 4, 8
"""The flags of an element's record (one byte)."""


def empty(fmt: formats.Format) -> tuple:
    """(lo, hi) of an interval that holds nothing: +inf .. -inf."""
    return fmt.inf_bits, fmt.inf_bits | fmt.sign_mask


@dataclass
class Accepted:
    """Per element, what the judge accepts (module docstring): ``lo``, ``hi`` and ``flags``
    (arrays over the elements), and the further intervals ``extra_at`` (element index,
    ascending), ``extra_lo``, ``extra_hi``."""

    fmt: formats.Format
    lo: np.ndarray
    hi: np.ndarray
    flags: np.ndarray
    extra_at: np.ndarray
    extra_lo: np.ndarray
    extra_hi: np.ndarray

    def contains(self, got) -> np.ndarray:
        """Whether each result (bits, one per element) is accepted."""
        fmt = self.fmt
        got = np.asarray(got, fmt.uint)
        k = formats.ordered(fmt, got)
        inside = (formats.ordered(fmt, self.lo) <= k) & (k <= formats.ordered(fmt, self.hi))
        at = self.extra_at
        hit = (formats.ordered(fmt, self.extra_lo) <= k[at]) & (k[at] <= formats.ordered(fmt, self.extra_hi))
        inside[at[hit]] = True
        negative = (got & np.array(fmt.sign_mask, fmt.uint)) != 0
        zero_ok = (self.flags & np.where(negative, MINUS_ZERO, PLUS_ZERO)) != 0
        return np.where(formats.is_nan_bits(fmt, got), (self.flags & NAN) != 0,
                        np.where(is_zero(fmt, got), zero_ok, inside))

    def intervals(self) -> int:
        """How many intervals the record holds in all (the further ones included)."""
        none = formats.ordered(self.fmt, self.lo) > formats.ordered(self.fmt, self.hi)
        return int((~none).sum()) + int(self.extra_at.size)


class _Sets:
    """The accepted sets of n elements as they are gathered: flags, and intervals of keys
    (``formats.ordered``) of the numbers other than zero, merged once at the end."""

    def __init__(self, fmt: formats.Format, n: int):
        self.fmt, self.n = fmt, n
        self.flags = np.zeros(n, np.uint8)
        self.rows: list = []  # (element, key lo, key hi) arrays

    def flag(self, idx, bit: int) -> None:
        self.flags[idx] |= np.uint8(bit)

    def zeros(self, idx, negative=None) -> None:
        """Zeros of both signs at ``idx``; with ``negative`` (per idx), only the zero of that sign."""
        idx = np.asarray(idx)
        if negative is None:
            self.flag(idx, PLUS_ZERO | MINUS_ZERO)
            return
        self.flag(idx[~negative], PLUS_ZERO)
        self.flag(idx[negative], MINUS_ZERO)

    def span(self, idx, klo, khi) -> None:
        idx = np.asarray(idx, np.int64)
        if idx.size:
            self.rows.append((idx, np.broadcast_to(np.asarray(klo, np.int64), idx.shape),
                              np.broadcast_to(np.asarray(khi, np.int64), idx.shape)))

    def points(self, idx, bits) -> None:
        """The results ``bits`` (one per idx), NaN as a class, each zero by its sign."""
        fmt = self.fmt
        idx, bits = np.asarray(idx), np.asarray(bits, fmt.uint)
        nan, zero = formats.is_nan_bits(fmt, bits), is_zero(fmt, bits)
        self.flag(idx[nan], NAN)
        self.zeros(idx[zero], (bits[zero] & np.array(fmt.sign_mask, fmt.uint)) != 0)
        k = formats.ordered(fmt, bits[~nan & ~zero])
        self.span(idx[~nan & ~zero], k, k)

    def record(self, primary_key) -> Accepted:
        """The merged intervals: per element the one holding ``primary_key`` (the correctly rounded
        result's key; another value where it is NaN or zero) as lo .. hi, else the first; the rest
        as further intervals. Keys are merged on the line of numbers other than zero (rank r: the
        key below 0, the key - 1 above), so [-3, -1] and [1, 2] are one interval."""
        fmt, n = self.fmt, self.n
        e_lo, e_hi = empty(fmt)
        lo, hi = np.full(n, e_lo, fmt.uint), np.full(n, e_hi, fmt.uint)
        none = np.zeros(0, np.int64)
        if not self.rows:
            return Accepted(fmt, lo, hi, self.flags, none, np.zeros(0, fmt.uint), np.zeros(0, fmt.uint))
        at, klo, khi = (np.concatenate([r[i] for r in self.rows]) for i in range(3))
        rlo = np.where(klo > 0, klo - 1, np.where(klo == 0, 0, klo))
        rhi = np.where(khi > 0, khi - 1, np.where(khi == 0, -1, khi))
        keep = rlo <= rhi
        at, rlo, rhi = at[keep], rlo[keep], rhi[keep]
        order = np.lexsort((rlo, at))
        at, rlo, rhi = at[order], rlo[order], rhi[order]
        shift = at << 34  # each element's ranks apart from the next one's (|rank| < 2**32)
        reach = np.maximum.accumulate(rhi + shift)
        start = np.ones(at.size, bool)
        start[1:] = rlo[1:] + shift[1:] > reach[:-1] + 1
        first = np.flatnonzero(start)
        g_at, g_lo = at[first], rlo[first]
        g_hi = reach[np.r_[first[1:] - 1, at.size - 1]] - (g_at << 34)
        to_key = lambda r: np.where(r >= 0, r + 1, r)  # noqa: E731
        g_klo, g_khi = to_key(g_lo), to_key(g_hi)
        pk = np.asarray(primary_key, np.int64)[g_at]
        holds = (g_klo <= pk) & (pk <= g_khi)
        # the primary group per element: the one holding the key, else the element's first
        is_first = np.ones(g_at.size, bool)
        is_first[1:] = g_at[1:] != g_at[:-1]
        has_holder = np.zeros(n, bool)
        has_holder[g_at[holds]] = True
        primary = holds | (is_first & ~has_holder[g_at])
        bits = lambda k: np.where(k < 0, fmt.sign_mask | -k, k).astype(fmt.uint)  # noqa: E731
        lo[g_at[primary]], hi[g_at[primary]] = bits(g_klo[primary]), bits(g_khi[primary])
        rest = ~primary
        return Accepted(fmt, lo, hi, self.flags, g_at[rest], bits(g_klo[rest]), bits(g_khi[rest]))


def _as_f64(fmt: formats.Format, bits, n: int) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(bits, fmt.uint), (n,))).view(fmt.dtype).astype(np.float64)


def _keys(fmt: formats.Format, values) -> np.ndarray:
    """Keys of values of the data format held as binary64."""
    with np.errstate(all="ignore"):
        return formats.ordered(fmt, np.asarray(values, np.float64).astype(fmt.dtype).view(fmt.uint))


def _budget(sets: _Sets, fmt, profile, oracle, boundary) -> None:
    """Within the profile's budget of the correctly rounded result: not on the boundary (R02),
    neither side an infinity or NaN (R03, R04), a zero of the correctly rounded sign where the
    profile is strict (judge's within: a zero on either side with the other sign is not)."""
    budget = int(profile.max_ulp[fmt.name])
    idx = np.flatnonzero(~boundary & ~is_special(fmt, oracle))
    o = oracle[idx]
    ko = formats.ordered(fmt, o)
    top = fmt.exp_mask - 1  # the largest finite value's key
    klo, khi = np.maximum(ko - budget, -top), np.minimum(ko + budget, top)
    negative = (o & np.array(fmt.sign_mask, fmt.uint)) != 0
    if profile.strict_zero_sign:
        o_zero = is_zero(fmt, o)
        klo = np.where(o_zero & ~negative, np.maximum(klo, 1), klo)
        khi = np.where(o_zero & negative, np.minimum(khi, -1), khi)
    sets.span(idx, klo, khi)
    near = np.abs(ko) <= budget
    sets.zeros(idx[near], negative[near] if profile.strict_zero_sign else None)


def _bounded(sets: _Sets, fmt, profile, dy, x1, x2, oracle, open_q, diff) -> None:
    """An open input's bounds (openbehaviour.open_bounds, the judge's): NaN only where it must be;
    elsewhere both zeros and any number within the magnitude bound, NaN where allowed; never the
    fill pattern."""
    bd = openbehaviour.open_bounds(fmt, dy, x1, x2, open_q, oracle, int(profile.max_ulp[fmt.name]), diff)
    idx = bd.at
    if not idx.size:
        return
    sets.flag(idx[bd.may_nan], NAN)
    num = ~bd.must_nan
    top = bd.limit
    fill = int(formats.ordered(fmt, np.array([bd.fill], fmt.uint))[0])  # positive
    sets.zeros(idx[num])
    sets.span(idx[num], -top[num], np.minimum(top[num], fill - 1))
    above = num & (top > fill)
    sets.span(idx[above], fill + 1, top[above])


def _reachable(sets: _Sets, fmt, profile, dy, x1, x2, beta, oracle) -> None:
    """Everything the profile's error model reaches: the sets reachable.reach tests results
    against (reachable.reachable_sets), every one of them, as intervals and flags."""
    n = oracle.size
    zero_negative = np.signbit(_as_f64(fmt, oracle, n)) if profile.strict_zero_sign else None
    # where the exact result is finite, an infinity or NaN only through the overflows the model accepts (R03:
    # reachable.reach bars the others the same way)
    finite = np.isfinite(_as_f64(fmt, oracle, n))
    top = fmt.exp_mask - 1
    for grp in reachable.reachable_sets(fmt, profile.error_model, dy, x1, x2, beta, oracle):
        idx = grp.idx
        neg = None if zero_negative is None else zero_negative[idx]
        pick = (lambda m: None) if neg is None else (lambda m: neg[m])  # noqa: E731
        for _, _, out, up, down in grp.evaluations():
            barred = finite[idx] & reachable.overflow_barred(out.ovf, profile.error_model)
            has = out.has & ~np.isnan(out.lo) & ~np.isnan(out.hi)
            klo, khi = _keys(fmt, out.lo), _keys(fmt, out.hi)
            klo, khi = np.where(barred, np.maximum(klo, -top), klo), np.where(barred, np.minimum(khi, top), khi)
            sets.span(idx[has], klo[has], khi[has])
            zero = (has & (out.lo <= 0) & (out.hi >= 0)) | (out.z > 0)
            sets.zeros(idx[zero], pick(zero))
            sets.flag(idx[out.nan & ~barred], NAN)
            with np.errstate(all="ignore"):
                for y0 in grp.copies:
                    sets.points(idx[up], y0[up].astype(fmt.dtype).view(fmt.uint))
                    sets.points(idx[down], (-y0[down]).astype(fmt.dtype).view(fmt.uint))


def _open_reachable(sets: _Sets, fmt, profile, dy, x1, x2, beta, open_q) -> None:
    """Where the input is open, what an order the profile allows gives there as written
    (reachable.open_points: the judge accepts it beside the stated bounds), each zero of either sign
    where the profile does not count it."""
    idx = np.flatnonzero(open_q >= 0)
    if not idx.size:
        return
    for _, bits in reachable.open_points(fmt, profile.error_model, dy[idx], x1[idx], x2[idx], beta[idx]):
        sets.points(idx, bits)
        if not profile.strict_zero_sign:
            z = is_zero(fmt, bits)
            sets.zeros(idx[z])


def accepted(fmt: formats.Format, profile, expected: Expected, dy, x1, x2, beta,
             facts: "InputFacts | None" = None) -> Accepted:
    """Per element, every result :func:`rules.judge.judge` accepts under ``profile`` (the same
    arguments, less the results: ``expected`` gives the correctly rounded bits and the
    alternatives; ``beta`` one pattern or one per element; ``facts`` the elements'
    ``input_facts`` where the caller has them)."""
    oracle = np.asarray(expected.oracle, fmt.uint)
    n = oracle.size
    dy, x1, x2 = (np.asarray(v, fmt.uint) for v in (dy, x1, x2))
    beta = np.broadcast_to(np.asarray(beta, fmt.uint), (n,))
    if facts is None:
        facts = input_facts(fmt, dy, x1, x2, beta, expected.diff)
    sets = _Sets(fmt, n)
    sets.points(np.arange(n), oracle)  # the correctly rounded result, NaN as a class
    _budget(sets, fmt, profile, oracle, facts.boundary)
    for bits in expected.alternatives.values():
        sets.points(np.arange(n), bits)
    _bounded(sets, fmt, profile, dy, x1, x2, oracle, facts.open_q, facts.diff)
    _reachable(sets, fmt, profile, dy, x1, x2, beta, oracle)
    _open_reachable(sets, fmt, profile, dy, x1, x2, beta, facts.open_q)
    sets.flag(np.flatnonzero(facts.boundary), BOUNDARY)
    return sets.record(formats.ordered(fmt, oracle))

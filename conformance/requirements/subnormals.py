"""R06 subnormals: gradual underflow, or flushing where the profile allows it, consistently at
each place; the report says which places were seen flushing and which kept a subnormal."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from sl1conf.conformance.rules.judge import is_subnormal
from sl1conf.reference import formats
from sl1conf.reference.reachable import (FLUSH_PLACES, INPUT_PLACES, LAST, MID_PLACES, RESULT, near_zero_places,
                                         place_modes, plainly_reached, reach)
from sl1conf.conformance.requirements.base import Check, Requirement, RunContext, element_check, element_record

PLACES = INPUT_PLACES + MID_PLACES + (RESULT,)
"""The places R06 judges one by one: each input, each intermediate, the result (the last
operation's flush is the result's: both make the result a zero, reachable.LAST)."""
_GROUPS = (("the inputs", INPUT_PLACES), ("the intermediates", MID_PLACES), ("the result", (RESULT,)))


def _modes(place: str, mode: str) -> dict:
    """``mode`` at ``place`` for reachable.reach (the result's with the last operation's)."""
    return {RESULT: mode, LAST: mode} if place == RESULT else {place: mode}


@dataclass
class Seen:
    """What the run's results say of each place: per place, the elements (indices into the
    analysed columns) that need it flushed (reachable only with it flushed) and those that need
    it kept (it held a subnormal, or a value flushing makes zero, and the result is not reachable
    with it flushed); ``flushed_somewhere``: reachable only with a flush, but no one place needed."""

    flushed: dict = field(default_factory=dict)
    kept: dict = field(default_factory=dict)
    flushed_somewhere: int = 0
    either: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Of the elements flushed somewhere, those no way of flushing reaches without flushing a
    place that another element kept: whichever place flushed there, it was kept elsewhere."""


def _analysed(ctx: RunContext, parts: list) -> tuple:
    """Where flushing matters, so the analysis's cost is theirs, not the run's 8 million: the
    elements R06's rule is about (flushing changes the correctly rounded result, or an input is
    subnormal), those the judge reached only through a flush, and the underflow family's (normal
    inputs with a subnormal diff, product or quotient), of them those with a positive beta where
    some place's value is near zero (reachable.near_zero_places). ((part, element) per analysed element, as two rows, the
    columns got, dy, x1, x2, beta, oracle, the near-zero masks per place)."""
    fmt = ctx.fmt
    at, cols = [], [[] for _ in range(6)]
    for i, j in enumerate(parts):
        mask = ~formats.same_result(fmt, j.expected.oracle, j.expected.oracle_ftz) | j.subnormal_inputs | j.flushed
        if ctx.whole is not None:
            for k, call in enumerate(ctx.judged):
                if call.family == "underflow":
                    mask[ctx.bounds[k]:ctx.bounds[k + 1]] = True
        elif getattr(j, "family", "") == "underflow":
            mask[:] = True
        idx = np.flatnonzero(mask)
        column = lambda a: np.broadcast_to(np.asarray(a, fmt.uint), j.got.shape)[idx]  # noqa: E731
        for out, a in zip(cols, (j.got, *j.inputs, j.expected.oracle)):
            out.append(column(a))
        at.append(np.stack([np.full(idx.size, i), idx]))
    cols = [np.concatenate(c) if c else np.zeros(0, fmt.uint) for c in cols]
    at = np.concatenate(at, axis=1) if at else np.zeros((2, 0), np.int64)
    near = near_zero_places(fmt, *cols[1:5])
    # a positive beta only: the error model reads beta <= 0 only as a flushed one, so it can
    # say nothing of a place where beta is negative (the open-behaviour rules judge those)
    keep = (cols[4] & fmt.sign_mask) == 0
    near_any = np.zeros(cols[0].shape, bool)
    for mask in near.values():
        near_any |= mask
    pick = np.flatnonzero(keep & near_any)
    return at[:, pick], [c[pick] for c in cols], {p: m[pick] for p, m in near.items()}


def places_seen(fmt, profile, got, dy, x1, x2, beta, oracle, near: dict) -> Seen:
    """Per place, which elements need it flushed and which need it kept (bit columns of equal
    length). The error model is the profile's with flushing allowed everywhere, so a profile
    that forbids flushing still hears which places flushed (its element rule fails them). An
    element the model cannot reach at all says nothing of any place; one reachable without a
    flush needs none flushed; a subnormal result that is no copy of +-dy is the result kept (the
    middle line's arithmetic, which an FPU flushing its results never gives).

    Cost: a run's analysed elements can be a million (a case with a subnormal beta is near zero
    at beta throughout), nearly all reached by plain arithmetic: reachable.plainly_reached finds
    those at stage 1 first, without the intervals, and only the rest go to reach (the stages are
    each element's own, so the answer is the same as reach's over them all)."""
    none = np.zeros(0, np.int64)
    seen = Seen({p: none for p in PLACES}, {p: none for p in PLACES})
    if not got.size:  # nothing where flushing matters (a run without the underflow family): no place seen
        return seen
    model = replace(profile.error_model, flush=FLUSH_PLACES)
    cols = (got, dy, x1, x2, beta, oracle)

    def stage_of(rows: np.ndarray, places: "dict | None" = None, read: tuple = (), **kw) -> np.ndarray:
        """reach's stage of the elements ``rows`` (indices), the plainly reached ones first."""
        out = np.zeros(rows.size, np.int8)
        if not rows.size:
            return out
        at = cols if rows.size == got.size else [np.asarray(a)[rows] for a in cols]  # rows: every element or a few
        left = np.arange(rows.size)
        if read is not None:
            plain = plainly_reached(fmt, model, *at, read=read)
            out[plain] = 1
            left = np.flatnonzero(~plain)
        if left.size:
            out[left] = reach(fmt, model, *(a[left] for a in at), places=places, **kw).stage
        return out

    base = stage_of(np.arange(got.size))
    only_flushed = base == 3
    needed = np.zeros(got.shape, bool)
    sign = np.array(fmt.sign_mask, fmt.uint)
    for p in PLACES:
        # an input that is not subnormal is read as given whatever its place's mode: the element's
        # stage is the same with it never or always flushed (reach's input combinations never
        # include it), so it says nothing of that place
        here = near[p] & is_subnormal(fmt, cols[1 + INPUT_PLACES.index(p)]) if p in INPUT_PLACES else near[p]
        rows = np.flatnonzero(only_flushed & here)
        # not reachable without a flush: only stage 3 can reach it (nothing plain does)
        seen.flushed[p] = rows[stage_of(rows, _modes(p, "never"), read=None, stages=(3,)) == 0]
        needed[seen.flushed[p]] = True
        if p == RESULT:
            seen.kept[p] = np.flatnonzero((base > 0) & is_subnormal(fmt, got) & (got != dy) & (got != dy ^ sign))
            continue
        rows = np.flatnonzero((base > 0) & here)
        # an input always flushed is an input read as zero, which plain arithmetic does too; an
        # intermediate always flushed is not plain arithmetic
        r = stage_of(rows, _modes(p, "always"), read=(p,) if p in INPUT_PLACES else None)
        seen.kept[p] = rows[r == 0]
    some = np.flatnonzero(only_flushed & ~needed)
    seen.flushed_somewhere = int(some.size)
    kept = [p for p in PLACES if seen.kept[p].size]
    if some.size and kept:
        # every place some element kept, never flushed (the others as they may): what is then out of
        # reach took a flush at one of them, in any combination of places
        never = {}
        for p in kept:
            never |= _modes(p, "never")
        seen.either = some[stage_of(some, never, read=None, stages=(3,)) == 0]
    return seen


def _either(seen: Seen, near: dict, dy_etc: tuple, fmt) -> tuple:
    """The first element flushed somewhere that needs a flush at a place another element kept
    (Seen.either), with the kept places near zero in it (an input only where subnormal); or
    (None, ())."""
    if not seen.either.size:
        return None, ()
    k = int(seen.either[0])
    places = tuple(p for p in PLACES if seen.kept[p].size and near[p][k]
                   and (p not in INPUT_PLACES or is_subnormal(fmt, dy_etc[INPUT_PLACES.index(p)][k])))
    return k, places


def _element(ctx: RunContext, parts: list, where: np.ndarray) -> tuple:
    """(case id, the element as the report says it: case, index, inputs, expected and got bits)."""
    i, k = (int(v) for v in where)
    j, k = ctx.element_at(k) if ctx.whole is not None else (parts[i], k)
    rec = element_record(ctx.fmt, *(np.broadcast_to(np.asarray(a), j.got.shape)[k] for a in j.inputs),
                         j.expected.oracle[k], j.got[k])
    return j.row["id"], (f"case {j.row['id']} element {k} (dy={rec.dy} x1={rec.x1} x2={rec.x2} "
                         f"beta={rec.beta}: expected {rec.expected}, got {rec.got})")


def _subnormals(ctx: RunContext, req: "Requirement") -> Check:
    """R06's element rule, what was observed, and consistency per place: an element that needs
    a place flushed and another that needs the same place kept (:func:`places_seen`) are two
    behaviours of one place, and fail R06 where the profile lets that place flush (elsewhere
    the element rule fails every flush already). Places are judged apart because each may
    flush independently (the error model): an implementation that reads subnormal inputs as
    zero and keeps subnormal results is one function; one that flushes x1 in some calls and
    not in others is not. Both elements are named, with their inputs and bits."""
    c = element_check(ctx, req)
    parts = [ctx.whole] if ctx.whole is not None else ctx.judged  # the run at once, where it was judged so
    where, cols, near = _analysed(ctx, parts)
    seen = places_seen(ctx.fmt, ctx.profile, *cols, near)
    allowed = place_modes(ctx.profile.error_model.flush)
    mixed = []
    for p in PLACES:
        f, k = seen.flushed[p], seen.kept[p]
        if not (f.size and k.size) or allowed[p] == "never":
            continue
        mixed.append(_name(p))
        (fid, ftext), (kid, ktext) = _element(ctx, parts, where[:, f[0]]), _element(ctx, parts, where[:, k[0]])
        c.tally.note(fid, f"flushes inconsistently at {_name(p)}: {f.size} elements need it flushed, {k.size} need it "
                          f"kept; flushed: {ftext}; kept: {ktext}", also=(kid,) if kid != fid else ())
    k, places = _either(seen, near, cols[1:5], ctx.fmt)
    if k is not None and places and ctx.profile.error_model.flush and not set(map(_name, places)) & set(mixed):
        # one element, whichever of its places it flushed (not said again where a place fails already)
        said = " or ".join(_name(p) for p in places)
        mixed.append(said)
        (fid, ftext), (kid, ktext) = _element(ctx, parts, where[:, k]), _element(ctx, parts, where[:, seen.kept[places[0]][0]])
        c.tally.note(fid, f"flushes inconsistently at {said}: an element reachable only with one of them flushed, "
                          f"each of them kept in other elements; flushed: {ftext}; kept ({_name(places[0])}): "
                          f"{ktext}", also=(kid,) if kid != fid else ())
    c.extra["observed"] = _observed(seen, mixed, bool(ctx.profile.error_model.flush))
    return c


def _name(place: str) -> str:
    return place if place == RESULT else f"the input {place}" if place in INPUT_PLACES else f"the intermediate {place}"


def _observed(seen: Seen, mixed: list, allowed: bool) -> str:
    """The places seen flushing and keeping, by group, with elements counted; then consistent or not."""
    def said(side: dict, verb: str) -> str:
        out = []
        for group, places in _GROUPS:
            hit = [p for p in places if side[p].size]
            if hit:
                n = len(set(np.concatenate([side[p] for p in hit]).tolist()))
                at = group if group == RESULT else f"{group} {', '.join(hit)}"
                out.append(f"at {at} ({n} element{'s' if n != 1 else ''})")
        return f"{verb} " + ", ".join(out) if out else ""
    flushed, kept = said(seen.flushed, "flush-to-zero"), said(seen.kept, "gradual underflow")
    more = (f"{seen.flushed_somewhere} element{'s' if seen.flushed_somewhere != 1 else ''} reachable only with a "
            "flush at one of several places") if seen.flushed_somewhere else ""
    text = "; ".join(t for t in (flushed, more, kept) if t) or "no element where flushing changes the result"
    if not flushed and not more:
        return text + " (no flushing seen)"
    if not allowed:
        return text + " (the profile allows no flushing: R06's element rule fails the flushed elements)"
    return text + (": inconsistent at " + ", ".join(mixed) if mixed else ": consistent per place")


ROWS = (
    Requirement("R06", "subnormals",
                "Subnormal inputs and results follow gradual underflow, or, where the profile's error model "
                "allows it, flush to zero, each place (each input, each intermediate, the result) consistently: "
                "no place flushed for one element and kept for another; the report says which places were "
                "seen flushing.", _subnormals,
                families=("underflow",), observes=True),
)

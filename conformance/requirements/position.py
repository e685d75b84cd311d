"""R18 position invariance: an element's bits depend only on its own inputs and beta, not on
where it sits (sampled elements run again rearranged)."""

from __future__ import annotations

from dataclasses import replace
import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.conformance.rules.judge import is_special
from sl1conf.reference import formats
from sl1conf.conformance.requirements.base import (
    Batch, Check, EXAMPLES, LONG_CALL, NOT_WRITTEN, Plan, Probe, Requirement, RunContext, Seen, Tally, replayed,
)


POSITION_WIDTHS = (4, 8, 16, 32, 64)
"""Vector widths (elements) whose body and tail the position check moves elements between."""
POSITION_BETAS, POSITION_PER_BETA = 4, 120


def _exact_reciprocal(fmt, beta: int) -> bool:
    """Whether 1 / beta is exact (beta a power of two, or not finite): then the evaluation orders
    give the same middle line (diff / beta = diff * (1 / beta), and the products and quotients
    by beta are exact scalings), so a code path that takes another order at some positions
    changes no bits with that beta."""
    exp, frac = (beta & fmt.exp_mask) >> fmt.frac_bits, beta & fmt.frac_mask
    return frac == 0 or exp == fmt.exp_mask >> fmt.frac_bits


def _position_sample(ctx: RunContext) -> dict:
    """beta -> [(judgement, element index)]: a deterministic sample of judged elements (the
    boundary, special, subnormal and overflow-prone ones first, then ordinary ones) of the
    calls made with every core, from the betas most calls use among those whose reciprocal is
    inexact (where the evaluation orders differ: a full run's commonest betas are 1, 0.1, 2
    and 0.5, and an order taken in one lane shows with 0.1 alone), then the others."""
    full = ctx.profile.core_mask
    calls = [j for j in ctx.judged if j.exact.size and (j.case.variant == "p" or j.case.core_mask == full)]
    by_beta: dict = {}
    for j in calls:
        by_beta.setdefault(j.case.beta, []).append(j)
    picked = {}
    for beta in sorted(by_beta, key=lambda b: (_exact_reciprocal(ctx.fmt, b), -len(by_beta[b]), b))[:POSITION_BETAS]:
        classes = [[], [], [], [], []]
        for j in by_beta[beta]:
            special = is_special(j.fmt, j.expected.oracle)
            for k in np.flatnonzero(j.boundary)[:8]:
                classes[0].append((j, int(k)))
            for k in np.flatnonzero(special)[:4]:
                classes[1].append((j, int(k)))
            for k in np.flatnonzero(j.subnormal_inputs & ~special)[:4]:
                classes[2].append((j, int(k)))
            for k in np.flatnonzero(j.overflow_prone & ~special)[:4]:
                classes[3].append((j, int(k)))
            for k in np.linspace(0, j.exact.size - 1, min(8, j.exact.size)).astype(int):
                classes[4].append((j, int(k)))
        sample, seen = [], set()
        while len(sample) < POSITION_PER_BETA and any(classes):
            for c in classes:  # round robin over the classes
                while c:
                    j, k = c.pop(0)
                    if (id(j), k) not in seen:
                        seen.add((id(j), k))
                        sample.append((j, k))
                        break
        picked[beta] = sample
    return picked


def _arrangements(n: int) -> list:
    """(name, length of each call, where the sample's element i goes: (call, index)) for a
    sample of n elements: the vector body, shifted starts, tails of every width, a long call."""
    out = [("body", [-(-n // 64) * 64], [(0, i) for i in range(n)])]
    for shift in (1, 7, 33, 63):
        out.append((f"shifted by {shift}", [shift + n], [(0, shift + i) for i in range(n)]))
    for size in (3, 15):
        chunks = -(-n // size)
        out.append((f"in calls of {size}", [min(size, n - c * size) for c in range(chunks)],
                    [(i // size, i % size) for i in range(n)]))
    out.append((f"at the end of a call of {LONG_CALL + n}", [LONG_CALL + n], [(0, LONG_CALL + i) for i in range(n)]))
    return out


def _tail(k: int, n: int, width: int) -> bool:
    return k >= n - n % width


def _position_calls(ctx: RunContext) -> list:
    """Every rearrangement of every beta's sample, as calls (one adapter run for them all: a
    simulator starts once, not once per rearrangement); the arrangements go to ``ctx.memo``."""
    if replayed(ctx, ""):
        return []
    fmt = ctx.fmt
    one = np.array(fmt.emax << fmt.frac_bits, fmt.uint)  # dy = 1 for the filler elements (x1 = x2 = 0)
    arranged, calls = [], []  # every rearrangement of every beta's sample, then all their calls
    for beta, sample in _position_sample(ctx).items():
        n = len(sample)
        template = sample[0][0].case
        for name, lengths, where in _arrangements(n):
            arrays = [{a: np.zeros(L, fmt.uint) for a in ("dy", "x1", "x2")} for L in lengths]
            for arr in arrays:
                arr["dy"][:] = one
            for (j, k), (c, i) in zip(sample, where):
                for a in ("dy", "x1", "x2"):
                    arrays[c][a][i] = getattr(j.case, a)[k]
            arranged.append((sample, name, lengths, where, len(calls)))
            calls += [replace(template, dy=arr["dy"], x1=arr["x1"], x2=arr["x2"], length=None, out_alias=None,
                              id=f"{ID} {name}") for arr in arrays]
    ctx.memo[POSITIONS.name] = arranged
    return calls


POSITIONS = Plan("positions", "judged", _position_calls)
"""The sampled elements rearranged (its sample reads the judged masks: boundary, special, ...)."""


def _position_invariance(ctx: RunContext, req: "Requirement") -> Check:
    """Sampled elements again, rearranged (alone in the body, shifted, in short calls, at the end
    of a long call): the same bits as in their first call (NaN as a class)."""
    recorded = replayed(ctx, "the sampled elements again at other positions and in other call lengths")
    if recorded:
        return recorded
    fmt, t = ctx.fmt, Tally(ctx.fmt)
    changed, moves = [], []  # (original position, new position) of every changed and every compared element
    made = ctx.made_of(POSITIONS)
    calls, every = made.calls, made.outcomes
    for sample, name, lengths, where, first in ctx.memo.get(POSITIONS.name, []):
        outcomes = every[first:first + len(lengths)]
        for (j, k), (c, i) in zip(sample, where):
            o, L = outcomes[c], lengths[c]
            t.checked += 1
            orig = (k, j.case.call_length)
            if o.status != "ok":
                t.note(j.row["id"], f"the rearranged call ({name}) failed: {o.status}: {o.detail}")
                continue
            moves.append((orig, (i, L)))
            if not formats.same_result(fmt, o.out[i:i + 1], j.outcome.out[k:k + 1])[0]:
                changed.append((orig, (i, L)))
                t.count((j.row["id"], calls[first + c].id))
                detail = (f"element {k} of a call of {j.case.call_length} gave "
                          f"{formats.hex_bits(fmt, j.outcome.out[k])}; the same element at index {i} of a "
                          f"call of {L} ({name}) gives {formats.hex_bits(fmt, o.out[i])}")
                ctx.note_flush_varies(j.case, k, j.outcome.out[k], o.out[i], j.row["id"], detail)
                if len(t.examples) < EXAMPLES:
                    ex = t.element(j, k, got=o.out[i])
                    ex.pop("ulp_value")
                    ex["detail"] = detail
                    t.examples.append(ex)
    extra = {}
    if changed:
        best = None
        for width in POSITION_WIDTHS:
            moved = sum(_tail(*a, width) != _tail(*b, width) for a, b in changed) / len(changed)
            if best is None or moved > best[1]:
                best = (width, moved)
        width, share = best
        extra["observed"] = (f"{len(changed)} of {len(moves)} rearranged elements changed; "
                             + (f"{share:.0%} of them moved between the vector body and the last n mod {width} "
                                f"elements of a call (its tail for a width of {width})" if share >= 0.9
                                else "no body/tail pattern for the widths 4 to 64 explains them"))
    return Check(t, applicable=t.checked > 0, extra=extra)


# the campaigns' form of the same check: a long call's last elements moved

MOVED = 64
"""R18 in fuzz and sweep: the last MOVED - 1 elements of a long call run again, as elements
1.. of a call of MOVED (the vector body of every width up to 64) and as a call of their own of
MOVED - 1 (a tail of every width from 4 to 64), so an element that was in a body moves into a
tail and one that was in a tail moves into a body."""


def moved_calls(case: Case) -> list:
    """The long call's last MOVED - 1 elements in the two calls above (none for a short call)."""
    if case.n <= MOVED or case.elements_written != case.n:
        return []
    fmt, k = case.format, MOVED - 1
    head = lambda a, v: np.concatenate([np.array([v], fmt.uint), a[-k:]])  # noqa: E731
    body = replace(case, dy=head(case.dy, fmt.emax << fmt.frac_bits), x1=head(case.x1, 0),
                               x2=head(case.x2, 0), length=None, id=f"{case.id} tail in a body")
    tail = replace(case, dy=case.dy[-k:], x1=case.x1[-k:], x2=case.x2[-k:], length=None,
                               id=f"{case.id} tail alone")
    return [(body, 1), (tail, 0)]


def position_changes(case: Case, out, moved) -> list:
    """(element of ``case``, its bits in the moved call, description) for every element of the
    last MOVED - 1 whose bits changed in one of the moved calls (``moved``: [(outcome, offset, call)])."""
    k, changes = MOVED - 1, []
    for o, offset, call in moved:
        if o.status != "ok":
            continue
        differ = np.flatnonzero(~formats.same_result(case.format, out[case.n - k:case.n], o.out[offset:offset + k]))
        changes += [(case.n - k + int(d), o.out[offset + int(d)], f"index {offset + int(d)} of a call of {call.n}")
                    for d in differ]
    return changes


def _moved(cases: list, profile) -> list:
    return [(i, call) for i, c in enumerate(cases) for call, _ in moved_calls(c)]


def _moved_differ(batch: Batch) -> list:
    """Long calls whose last elements gave other bits when moved (``changed``: each such
    element and its other bits); where every bit that differs is the fill dx1 held before the
    call, the shape says the elements were never written (one pattern with such defects)."""
    answers: dict = {}
    for (i, _), o in zip(batch.calls, batch.answers):
        answers.setdefault(i, []).append(o)
    out = []
    for i, got in answers.items():
        c, o = batch.cases[i], batch.outcomes[i]
        if o.status != "ok":
            continue
        changes = position_changes(c, o.out, [(a, offset, call) for a, (call, offset) in zip(got, moved_calls(c))])
        if changes:
            e, bits, where = changes[0]
            fill = c.initial_out()  # a moved call's dx1 starts with the same fill (FILL_BYTE everywhere)
            unwritten = all(o.out[k] == fill[k] or b == fill[k] for k, b, _ in changes)
            out.append(Seen(ID, i, "position",
                            f"{len(changes)} of the last {MOVED - 1} elements of a call of {c.n} give other bits when "
                            f"moved (element {e}: {formats.hex_bits(c.format, o.out[e])}, then "
                            f"{formats.hex_bits(c.format, bits)} at {where})"
                            + ("; the bits that differ were never written" if unwritten else ""),
                            element=e, changed=tuple((k, b) for k, b, _ in changes),
                            shape=("position", NOT_WRITTEN) if unwritten else ()))
    return out


MOVED_TAIL = Probe("moved-tail", _moved_differ, _moved, sampled=True)
"""A long call's last elements again in a body and alone (a sweep: on its sampled blocks)."""


ID = "R18"
ROWS = (
    Requirement(ID, "position-invariance",
                "An element's bits depend only on its own inputs and beta: not on its index, the call's length, "
                "its neighbours or where a core's chunk starts (sampled elements run again alone in the vector "
                "body, shifted by 1 to 63 places, in calls of 3 and 15 elements, and at the end of a call "
                "longer than 65,536).", _position_invariance, observes=True, plans=(POSITIONS,),
                probes=(MOVED_TAIL,)),
)

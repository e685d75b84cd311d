"""R18 position invariance: an element's bits depend only on its own inputs and beta, not on
where it sits (sampled elements run again rearranged)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.conformance.requirements.base import LONG_CALL, Check, Plan, Requirement, RunContext, replayed
from sl1conf.conformance.requirements.call_rules import CallRule, Twin, campaign_probe
from sl1conf.conformance.requirements.differences import Differ, common_causes, differ_word, element_words, rare
from sl1conf.conformance.requirements.probes import NOT_WRITTEN, Batch, Seen
from sl1conf.conformance.requirements.tally import EXAMPLES, Tally
from sl1conf.conformance.rules.diagnosis import beta_classes
from sl1conf.conformance.rules.judge import is_special, is_subnormal
from sl1conf.reference import formats


POSITION_WIDTHS = (4, 8, 16, 32, 64)
"""Vector widths (elements) whose body and tail the position check moves elements between."""
POSITION_BETAS, POSITION_PER_BETA = 4, 120
POSITION_PER_CLASS = 40
"""Elements sampled of one beta of every class of beta the POSITION_BETAS betas leave out (the
open ones among them: beta <= 0, -inf, a NaN beta; and +inf)."""


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
    and 0.5, and an order taken in one lane shows with 0.1 alone), then the others; and from one
    beta of every class of beta those leave out (:func:`beta_class`: the open ones, beta <= 0,
    -inf and a NaN beta, and +inf, among them), so that a path taken only for such a beta is
    moved too."""
    fmt, full = ctx.fmt, ctx.profile.core_mask
    calls = [j for j in ctx.judged if j.exact.size and (j.case.variant == "p" or j.case.core_mask == full)]
    by_beta: dict = {}
    for j in calls:
        by_beta.setdefault(j.case.beta, []).append(j)
    order = sorted(by_beta, key=lambda b: (_exact_reciprocal(fmt, b), -len(by_beta[b]), b))
    picked = {beta: _beta_sample(by_beta[beta], POSITION_PER_BETA, 8) for beta in order[:POSITION_BETAS]}
    classes = {beta_class(fmt, beta) for beta in picked}
    # of each class left, a beta of ordinary size first (-0.1 before a negative subnormal), then in the order above
    for beta in sorted(order[POSITION_BETAS:], key=lambda b: bool(is_subnormal(fmt, b))):
        cls = beta_class(fmt, beta)
        if cls not in classes:
            classes.add(cls)
            picked[beta] = _beta_sample(by_beta[beta], POSITION_PER_CLASS, POSITION_PER_CLASS)
    return picked


def beta_class(fmt, beta: int) -> str:
    """The class of a beta the sample draws one of (the first key rules.diagnosis.beta_classes gives:
    beta-nan, beta-zero, beta-neg-inf, beta-negative, beta-inf, beta-subnormal, beta-pow2, beta-not-pow2)."""
    return next(iter(beta_classes(fmt, beta)))[0]


def _beta_sample(js: list, size: int, ordinary: int) -> list:
    """Up to ``size`` elements of the calls ``js`` (of one beta), round robin over their classes:
    on the boundary, special results, subnormal inputs, overflow-prone ones, and ``ordinary``
    ones spread over each call."""
    classes = [[], [], [], [], []]
    for j in js:
        special = is_special(j.fmt, j.expected.oracle)
        for k in np.flatnonzero(j.boundary)[:8]:
            classes[0].append((j, int(k)))
        for k in np.flatnonzero(special)[:4]:
            classes[1].append((j, int(k)))
        for k in np.flatnonzero(j.subnormal_inputs & ~special)[:4]:
            classes[2].append((j, int(k)))
        for k in np.flatnonzero(j.overflow_prone & ~special)[:4]:
            classes[3].append((j, int(k)))
        for k in np.linspace(0, j.exact.size - 1, min(ordinary, j.exact.size)).astype(int):
            classes[4].append((j, int(k)))
    sample, seen = [], set()
    while len(sample) < size and any(classes):
        for c in classes:  # round robin over the classes
            while c:
                j, k = c.pop(0)
                if (id(j), k) not in seen:
                    seen.add((id(j), k))
                    sample.append((j, k))
                    break
    return sample


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


@dataclass
class _Moved:
    """A sampled element compared at another position: element ``k`` of judged call ``j``, at index
    ``i`` of a call of ``length`` (``call``: its id) in arrangement ``name``, where it gave ``bits``."""

    j: object
    k: int
    i: int
    length: int
    name: str
    call: str
    bits: int

    def tail_moved(self, width: int) -> bool:
        """Whether it moved between the vector body and the tail (the last n mod ``width`` elements)."""
        return _tail(self.k, self.j.case.call_length, width) != _tail(self.i, self.length, width)


def _position_invariance(ctx: RunContext, req: "Requirement") -> Check:
    """Sampled elements again, rearranged (alone in the body, shifted, in short calls, at the end
    of a long call): the same bits as in their first call (NaN as a class). Each change's example
    is the element (its inputs, both results, the correctly rounded one, how many of the sampled
    elements of its beta changed in that arrangement); the first says what every change has in
    common (requirements.differences, and the move between the vector body and the tail)."""
    recorded = replayed(ctx, "the sampled elements again at other positions and in other call lengths")
    if recorded:
        return recorded
    t = Tally(ctx.fmt)
    made = ctx.made_of(POSITIONS)
    moves, changed, groups = [], [], []  # _Moved per element compared and changed; _arranged's per arrangement
    for sample, name, lengths, where, first in ctx.memo.get(POSITIONS.name, []):
        outcomes = made.outcomes[first:first + len(lengths)]
        group = []
        for (j, k), (c, i) in zip(sample, where):
            o = outcomes[c]
            t.checked += 1
            if o.status != "ok":
                t.note(j.row["id"], f"the rearranged call ({name}) failed: {o.status}: {o.detail}")
                continue
            group.append(_Moved(j, k, i, lengths[c], name, made.calls[first + c].id, int(o.out[i])))
        if group:
            moves += group
            groups.append(_arranged(ctx.fmt, group))
            changed += [group[a] for a in (groups[-1][0].at if groups[-1][0] else ())]
    _note_moved(ctx, t, changed, moves, groups)
    extra = {"observed": _observed(changed, moves)} if changed else {}
    return Check(t, applicable=t.checked > 0, extra=extra)


def _arranged(fmt, group: list) -> tuple:
    """One arrangement of a beta's sample as the differences module compares calls: the sampled
    elements as one case (their inputs, the beta), their bits in their own calls and here, and a
    Differ where some changed (None elsewhere)."""
    template = group[0].j.case
    pick = lambda a: np.array([getattr(m.j.case, a)[m.k] for m in group], fmt.uint)  # noqa: E731
    case = replace(template, dy=pick("dy"), x1=pick("x1"), x2=pick("x2"), length=None, out_alias=None,
                   id=f"{ID} {group[0].name}")
    first = np.array([m.j.outcome.out[m.k] for m in group], fmt.uint)
    then = np.array([m.bits for m in group], fmt.uint)
    at = RULE.differing(fmt, first, then)
    return (Differ(case.id, case, first, then, at) if at.size else None), (case, first, then)


def _note_moved(ctx: RunContext, t: Tally, changed: list, moves: list, groups: list) -> None:
    """Each changed element as a failing comparison (a flush that comes and goes a call finding,
    RunContext.note_flush_varies), the first EXAMPLES as R01's examples are, with a detail; the
    first says how many changed and what every change has in common."""
    if not changed:
        return
    fmt = ctx.fmt
    differs = [d for d, _ in groups if d is not None]
    causes = common_causes(fmt, differs, [c for _, c in groups], positions=False) + _moved_cause(changed, moves)
    over = (f"{len(changed):,} of the {len(moves):,} rearranged elements changed"
            + "".join(f"; cause: {c}" for c in causes))
    per = {(c.beta, c.id): (0 if d is None else d.at.size, c.n) for d, (c, _, _) in groups}  # changed, compared
    for e, m in enumerate(changed):
        j, k = m.j, m.k
        bad, of = per[j.case.beta, f"{ID} {m.name}"]
        detail = (element_words(fmt, j.case, k, j.row["id"])
                  + f": gives {formats.hex_bits(fmt, j.outcome.out[k])} in its call, {formats.hex_bits(fmt, m.bits)} "
                  f"at index {m.i} of a call of {m.length:,} ({m.name}), correctly rounded "
                  f"{formats.hex_bits(fmt, j.expected.oracle[k])}; {bad:,} of the {of:,} sampled elements of its beta "
                  f"{differ_word(bad)} there" + (f" ({over})" if e == 0 else ""))
        ctx.note_flush_varies(j.case, k, j.outcome.out[k], m.bits, j.row["id"], detail)
        t.count((j.row["id"], m.call), detail)
        if len(t.examples) < EXAMPLES:
            t.examples.append(t.element(j, k, got=m.bits).but(detail=detail))


def _moved_cause(changed: list, moves: list) -> list:
    """``only where an element moved between the vector body and the tail``, for the narrowest width
    whose body and tail every change moved between and few of the compared elements did."""
    fits = [(sum(m.tail_moved(w) for m in moves), w) for w in POSITION_WIDTHS
            if all(m.tail_moved(w) for m in changed)]
    fits = [(n, w) for n, w in fits if rare(n, len(moves))]
    if not fits:
        return []
    w = min(fits)[1]
    return [f"only where an element moved between the vector body and the last n mod {w} elements of a call "
            f"(its tail for a width of {w})"]


def _observed(changed: list, moves: list) -> str:
    """How many rearranged elements changed, and the width whose body and tail most of them moved between."""
    best = None
    for width in POSITION_WIDTHS:
        moved = sum(m.tail_moved(width) for m in changed) / len(changed)
        if best is None or moved > best[1]:
            best = (width, moved)
    width, share = best
    return (f"{len(changed)} of {len(moves)} rearranged elements changed; "
            + (f"{share:.0%} of them moved between the vector body and the last n mod {width} "
               f"elements of a call (its tail for a width of {width})" if share >= 0.9
               else "no body/tail pattern for the widths 4 to 64 explains them"))


# the one definition: an element moved to another index, in a call of another length, gives the same bits

MOVED = 64
"""R18 in fuzz and sweep: the last MOVED - 1 elements of a long call run again, as elements
1.. of a call of MOVED (the vector body of every width up to 64) and as a call of their own of
MOVED - 1 (a tail of every width from 4 to 64), so an element that was in a body moves into a
tail and one that was in a tail moves into a body."""


def moved_calls(case: Case, i: int = 0) -> list:
    """The long call's last MOVED - 1 elements in the two calls above, as twins of call ``i`` (none
    for a short call)."""
    if case.n <= MOVED or case.elements_written != case.n:
        return []
    fmt, k = case.format, MOVED - 1
    head = lambda a, v: np.concatenate([np.array([v], fmt.uint), a[-k:]])  # noqa: E731
    body = replace(case, dy=head(case.dy, fmt.emax << fmt.frac_bits), x1=head(case.x1, 0),
                   x2=head(case.x2, 0), length=None, id=f"{case.id} tail in a body")
    tail = replace(case, dy=case.dy[-k:], x1=case.x1[-k:], x2=case.x2[-k:], length=None, id=f"{case.id} tail alone")
    return [Twin(i, body, case.n - k, 1, k), Twin(i, tail, case.n - k, 0, k)]


def _moved(cases: list, profile) -> list:
    return [t for i, c in enumerate(cases) for t in moved_calls(c, i)]


RULE = CallRule("R18", "position", twins=_moved, certify_apart=(
    "certify moves a sample of a run's elements, drawn from many calls by beta and by class (boundary, "
    "special, subnormal ...), into arrangements of its own (_position_calls: the body, shifted starts, short "
    "calls, the end of a long call), which no one call's twins are; a campaign moves one long call's last "
    "elements. Both compare each element's bits with the rule's comparison, NaN as a class"))
"""R18: an element's bits at another index, in a call of another length, are its bits in its own call."""


def _said(batch: Batch, i: int, differ: list) -> list:
    """A long call whose last elements gave other bits when moved (``changed``: each such element and
    its other bits); where every bit that differs is the fill dx1 held before the call, the shape says
    the elements were never written (one pattern with such defects)."""
    c, o = batch.cases[i], batch.outcomes[i]
    changes = [(ch, cmp.twin.call) for cmp in differ for ch in cmp.changes()]
    ch, call = changes[0]
    fill = c.initial_out()  # a moved call's dx1 starts with the same fill (FILL_BYTE everywhere)
    unwritten = all(o.out[x.element] == fill[x.element] or x.then == fill[x.element] for x, _ in changes)
    return [Seen(ID, i, "position",
                 f"{len(changes)} of the last {MOVED - 1} elements of a call of {c.n} give other bits when "
                 f"moved (element {ch.element}: {formats.hex_bits(c.format, ch.first)}, then "
                 f"{formats.hex_bits(c.format, ch.then)} at index {ch.index} of a call of {call.n})"
                 + ("; the bits that differ were never written" if unwritten else ""),
                 element=ch.element, changed=tuple((x.element, x.then) for x, _ in changes),
                 shape=("position", NOT_WRITTEN) if unwritten else ())]


MOVED_TAIL = campaign_probe("moved-tail", RULE, said=_said, sampled=True)
"""A long call's last elements again in a body and alone (a sweep: on its sampled blocks)."""


ID = "R18"
ROWS = (
    Requirement(ID, "position-invariance",
                "An element's bits depend only on its own inputs and beta: not on its index, the call's length, "
                "its neighbours or where a core's chunk starts (sampled elements run again alone in the vector "
                "body, shifted by 1 to 63 places, in calls of 3 and 15 elements, and at the end of a call "
                "longer than 65,536).", _position_invariance, observes=True, plans=(POSITIONS,),
                probes=(MOVED_TAIL,), rule=RULE),
)

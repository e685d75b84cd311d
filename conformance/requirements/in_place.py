"""R15 in-place: where the implementation claims it, dx1 over dy, x1 or x2 gives the same bits
as separate buffers."""

from __future__ import annotations

from dataclasses import replace

from sl1conf.reference import formats
from sl1conf.conformance.requirements.base import Check, Plan, Requirement, RunContext, Tally, replayed


SAMPLE = 12  # calls repeated with dx1 over each input
ALIASES = ("dy", "x1", "x2")


def _whole(case) -> bool:
    """A call that writes all of its elements (the sample's calls)."""
    return bool(case.n) and case.elements_written == case.n


def _in_place_calls(ctx: RunContext) -> list:
    if replayed(ctx, "") or not ctx.adapter.capabilities.in_place:
        return []
    return [replace(c, out_alias=alias, length=None) for c in [c for c in ctx.returned if _whole(c)][:SAMPLE]
            for alias in ALIASES]


IN_PLACE = Plan("in-place", "after", _in_place_calls)
"""The first SAMPLE returned calls that write every element, again with dx1 over dy, x1 and x2."""


def _in_place(ctx: RunContext, req: "Requirement") -> Check:
    recorded = replayed(ctx, "calls with dx1 over dy, x1 and x2")
    if recorded:
        return recorded
    t = Tally(ctx.fmt)
    if not ctx.adapter.capabilities.in_place:
        return Check(t, applicable=False)
    sample = [j for j in ctx.judged if _whole(j.case)][:SAMPLE]
    made = ctx.made_of(IN_PLACE)
    pairs = [(j, ac) for j, ac in zip([j for j in sample for _ in ALIASES], made.calls)]
    for (j, ac), o in zip(pairs, made.outcomes):
        t.checked += 1
        if o.status != "ok" or not formats.same_result(ctx.fmt, o.out, j.outcome.out).all():
            t.note(ac.id, f"dx1 over {ac.out_alias}: " + (o.detail if o.status != "ok" else "different bits"))
    return Check(t)


ROWS = (
    Requirement("R15", "in-place",
                "When the implementation claims in-place use, dx1 over dy, x1 or x2 gives the same bits "
                "as separate buffers.", _in_place, plans=(IN_PLACE,)),
)

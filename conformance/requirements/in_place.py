"""R15 in-place: where the implementation claims it, dx1 over dy, x1 or x2 gives the same bits
as separate buffers."""

from __future__ import annotations

from dataclasses import replace

from sl1conf.reference import formats
from sl1conf.conformance.requirements.base import Check, Requirement, RunContext, Tally, replayed


def _in_place(ctx: RunContext, req: "Requirement") -> Check:
    recorded = replayed(ctx, "calls with dx1 over dy, x1 and x2")
    if recorded:
        return recorded
    t = Tally(ctx.fmt)
    if not ctx.adapter.capabilities.in_place:
        return Check(t, applicable=False)
    sample = [j for j in ctx.judged if j.case.n and j.case.elements_written == j.case.n][:12]
    pairs = [(j, replace(j.case, out_alias=alias, length=None)) for j in sample for alias in ("dy", "x1", "x2")]
    for (j, ac), o in zip(pairs, ctx.adapter.run([ac for _, ac in pairs])):
        t.checked += 1
        if o.status != "ok" or not formats.same_result(ctx.fmt, o.out, j.outcome.out).all():
            t.note(ac.id, f"dx1 over {ac.out_alias}: " + (o.detail if o.status != "ok" else "different bits"))
    return Check(t)


ROWS = (
    Requirement("R15", "in-place",
                "When the implementation claims in-place use, dx1 over dy, x1 or x2 gives the same bits "
                "as separate buffers.", _in_place),
)

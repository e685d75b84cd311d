"""R15 in-place: where the implementation claims it, dx1 over dy, x1 or x2 gives the same bits
as separate buffers."""

from __future__ import annotations

from dataclasses import replace

from sl1conf.conformance.requirements.base import Check, Requirement, RunContext, replayed
from sl1conf.conformance.requirements.call_rules import CallRule, Twin
from sl1conf.conformance.requirements.differences import Differ, common_causes, difference_example
from sl1conf.conformance.requirements.records import detail_of, with_detail
from sl1conf.conformance.requirements.tally import EXAMPLES, Tally


SAMPLE = 12  # calls repeated with dx1 over each input
ALIASES = ("dy", "x1", "x2")


def _whole(case) -> bool:
    """A call that writes all of its elements (the sample's calls)."""
    return bool(case.n) and case.elements_written == case.n


def _in_place_twins(cases: list, profile) -> list:
    """The first SAMPLE calls that write all of their elements, again with dx1 over dy, x1 and x2."""
    whole = [i for i, c in enumerate(cases) if _whole(c)][:SAMPLE]
    return [Twin(i, replace(cases[i], out_alias=alias, length=None)) for i in whole for alias in ALIASES]


RULE = CallRule("R15", "in-place", twins=_in_place_twins)
"""R15: a call with dx1 over one of its inputs gives the bits it gives with separate buffers, NaN as a
class. Certify's only: the calls need the adapter's claim (``Capabilities.in_place``), and fuzz and
sweep make calls of separate buffers only."""


def _in_place_base(ctx: RunContext) -> "list | None":
    """The run's returned calls, where the adapter claims in-place use and makes calls of its own."""
    return None if replayed(ctx, "") or not ctx.adapter.capabilities.in_place else ctx.returned


IN_PLACE = RULE.plan("in-place", "after", _in_place_base)
"""The first SAMPLE returned calls that write every element, again with dx1 over dy, x1 and x2."""


def _in_place(ctx: RunContext, req: "Requirement") -> Check:
    """Each sampled call with dx1 over dy, x1 and x2 against its call with separate buffers: the
    same bits (NaN as a class). A call that differs is a failure whose example is its first
    differing element (its inputs, both results, the correctly rounded one, how many of the call's
    elements differ); the first says what every difference has in common (requirements.differences),
    and which input dx1 was over where it was always the same one."""
    recorded = replayed(ctx, "calls with dx1 over dy, x1 and x2")
    if recorded:
        return recorded
    t = Tally(ctx.fmt)
    if not ctx.adapter.capabilities.in_place:
        return Check(t, applicable=False)
    made = ctx.made_of(IN_PLACE)
    twins = RULE.twins([j.case for j in ctx.judged], ctx.profile)[:len(made.outcomes)]
    for twin, o in zip(twins, made.outcomes):
        t.checked += 1
        if o.status != "ok":
            t.note(twin.call.id, f"dx1 over {twin.call.out_alias}: {o.detail}")
    compared, differs = [], []  # (case, both dx1) per in-place call compared; (Differ, judgement) per one that differs
    for c in RULE.compared([j.outcome for j in ctx.judged], twins, made.outcomes):
        j, ac = ctx.judged[c.twin.base], c.twin.call
        compared.append((ac, j.outcome.out, c.then.out))
        if c.at.size:
            differs.append((Differ(ac.id, ac, j.outcome.out, c.then.out, c.at), j))
    _note_differences(t, differs, compared)
    return Check(t)


def _note_differences(t: Tally, differs: list, compared: list) -> None:
    """Each in-place call that differs as a failing call, the first EXAMPLES as examples."""
    if not differs:
        return
    fmt = t.fmt
    causes = common_causes(fmt, [d for d, _ in differs], compared)
    aliases = {d.case.out_alias for d, _ in differs}
    if len(aliases) == 1 and len({c.out_alias for c, _, _ in compared}) > 1:
        causes.insert(0, f"only with dx1 over {next(iter(aliases))}")
    over = (f"{sum(d.at.size for d, _ in differs):,} elements differ in {len(differs):,} of the {len(compared):,} "
            "in-place calls compared" + "".join(f"; cause: {c}" for c in causes))
    for i, (d, j) in enumerate(differs):
        k = int(d.at[0])
        said = ("separate buffers give", f"dx1 over {d.case.out_alias}")
        expected = int(j.expected.oracle[k]) if k < j.exact.size else None
        ex = difference_example(fmt, d, said, over if i == 0 else "", got_then=True, expected=expected)
        t.count((d.case_id,), f"dx1 over {d.case.out_alias}: " + detail_of(ex))
        if len(t.examples) < EXAMPLES:
            t.examples.append(with_detail(ex, f"dx1 over {d.case.out_alias}: " + detail_of(ex)))


ROWS = (
    Requirement("R15", "in-place",
                "When the implementation claims in-place use, dx1 over dy, x1 or x2 gives the same bits "
                "as separate buffers.", _in_place, plans=(IN_PLACE,), rule=RULE),
)

"""R07 lengths and tails, R08 length zero: every length as accurate as the others, nothing
written past length, nothing at all for a length of 0 or less."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.requirements.base import Check, Requirement, RunContext, Tally
from sl1conf.conformance.requirements.call_rules import CallRule, Fault, campaign_probe


def wrote_past_length(case, outcome) -> "Fault | None":
    """Whether a returned call changed dx1 past the elements it computes (``Case.elements_written``:
    all of them for a length of 0 or less, or a shared call with core_mask 0) from the fill it held
    before the call. Most calls compute every element: nothing past length to look at."""
    w = case.elements_written
    if w < case.n and not np.array_equal(outcome.out[w:], case.initial_out()[w:]):
        return Fault("memory", "wrote past length in dx1")
    return None


PAST_LENGTH_RULE = CallRule("R07", "memory", fault=wrote_past_length)
"""R07 and R08 as one call alone shows them: nothing written past length (certify files a call of
length 0 or less under R08, whose words name the length; a campaign files every one under R07)."""


def _lengths(ctx: RunContext, req: "Requirement") -> Check:
    """Accuracy on the length families, and nothing written past length in any call (what
    the fuzzer files here too)."""
    js = ctx.of(req.families)
    t = Tally(ctx.fmt)
    for j in js:
        t.add(j, ~j.ok)
    for j in ctx.judged:
        if j.case.call_length > 0 and PAST_LENGTH_RULE.fault(j.case, j.outcome):
            t.note(j.row["id"], f"wrote past length {j.case.call_length} in dx1")
    return Check(t, applicable=bool(js) or t.failed > 0)


def _length_zero(ctx: RunContext, req: "Requirement") -> Check:
    t = Tally(ctx.fmt)
    for j in ctx.judged:
        if j.case.call_length <= 0:
            t.checked += 1
            if PAST_LENGTH_RULE.fault(j.case, j.outcome):
                t.note(j.row["id"], f"wrote into dx1 with length {j.case.call_length}")
    return Check(t, applicable=t.checked > 0)


PAST_LENGTH = campaign_probe("past-length", PAST_LENGTH_RULE)
"""A campaign's calls that wrote into dx1 past length."""


ROWS = (
    Requirement("R07", "lengths-and-tails",
                "Every length, odd ones and those that leave a tail after the vector body included, gives "
                "the same accuracy, and nothing is written past length.", _lengths,
                families=("lengths-compact", "lengths", "lengths-long", "calls-crossed"), probes=(PAST_LENGTH,),
                rule=PAST_LENGTH_RULE),
    Requirement("R08", "length-zero",
                "A call with length 0 (or negative) writes nothing.", _length_zero, rule=PAST_LENGTH_RULE),
)

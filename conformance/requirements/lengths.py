"""R07 lengths and tails, R08 length zero: every length as accurate as the others, nothing
written past length, nothing at all for a length of 0 or less."""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.requirements.base import Batch, Check, Probe, Requirement, RunContext, Seen, Tally


def _lengths(ctx: RunContext, req: "Requirement") -> Check:
    """Accuracy on the length families, and nothing written past length in any call (what
    the fuzzer files here too)."""
    js = ctx.of(req.families)
    t = Tally(ctx.fmt)
    for j in js:
        t.add(j, ~j.ok)
    for j in ctx.judged:
        if j.case.call_length > 0 and not j.fill_ok:
            t.note(j.row["id"], f"wrote past length {j.case.call_length} in dx1")
    return Check(t, applicable=bool(js) or t.failed > 0)


def _length_zero(ctx: RunContext, req: "Requirement") -> Check:
    t = Tally(ctx.fmt)
    for j in ctx.judged:
        if j.case.call_length <= 0:
            t.checked += 1
            if not j.fill_ok:
                t.note(j.row["id"], f"wrote into dx1 with length {j.case.call_length}")
    return Check(t, applicable=t.checked > 0)


def _past_length(batch: Batch) -> list:
    """A campaign's calls that wrote into dx1 past length."""
    return [Seen("R07", i, "memory", "wrote past length in dx1") for i, c, o in batch.returned()
            if c.elements_written < c.n  # (most calls write every element: nothing past length to look at)
            and not np.array_equal(o.out[c.elements_written:], c.initial_out()[c.elements_written:])]


PAST_LENGTH = Probe("past-length", _past_length)


ROWS = (
    Requirement("R07", "lengths-and-tails",
                "Every length, odd ones and those that leave a tail after the vector body included, gives "
                "the same accuracy, and nothing is written past length.", _lengths,
                families=("lengths-compact", "lengths", "lengths-long", "calls-crossed"), probes=(PAST_LENGTH,)),
    Requirement("R08", "length-zero",
                "A call with length 0 (or negative) writes nothing.", _length_zero),
)

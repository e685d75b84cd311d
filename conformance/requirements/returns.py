"""R13: every call returns, and has finished when it does: crashes, hangs and errors, and
the calls the adapter saw writing dx1 after the return (checked last, once every call of the
run is made; the write after the return is a call finding the diagnosis tries everywhere)."""

from __future__ import annotations

from sl1conf.conformance.rules import diagnosis
from sl1conf.conformance.requirements.base import (
    Batch, Check, Requirement, RunContext, START_LAYOUT, Seen, Tally, start_layout,
)
from sl1conf.conformance.requirements.call_rules import CallRule, Fault, campaign_probe


LATE_WRITE = "in calls that wrote dx1 after they returned (a core or thread not waited for)"
"""The diagnosis's words for the calls R13 saw writing after the return: the cause of every
failure in them (an element read back before it was written, a repeat that differs)."""


def _returns(ctx: RunContext, req: "Requirement") -> Check:
    """Every call returned, and had finished when it did: crashes and hangs, then the calls the
    adapter saw writing dx1 after the return (asked once every call of the run is made: the
    requirement is checked last)."""
    t = Tally(ctx.fmt)
    again = [(j.row, o) for j, o in start_layout(ctx)]
    t.checked = len(ctx.judged) + len(ctx.broken) + len(ctx.rejected) + len(again)  # the calls answered or failed:
    # an unsupported call was checked for nothing (a harness built without the dtype answers each)
    for row, f in [(row, RULE.fault(case, o)) for row, case, o in ctx.broken] + [
            (row, Fault(o.status, o.detail)) for row, o in again if o.status != "ok"]:
        t.note(row["id"], f"{f.kind}: {f.detail}")
    late: dict = {}  # case id -> what each of its calls wrote after returning (a case may run several times)
    for cid, text in ctx.adapter.late_writes():
        late.setdefault(cid, []).append(text)
    rows = {row["id"] for row, _, _ in ctx.calls}
    t.checked += sum(cid not in rows for cid in late)  # other requirements' own calls (R18's rearranged ones)
    if late:
        ctx.findings[diagnosis.LATE_WRITE] = (LATE_WRITE, {cid: texts[0] for cid, texts in late.items()})
    for cid, texts in late.items():
        t.note(cid, texts[0] + (f" (and in {len(texts) - 1} more of its calls)" if len(texts) > 1 else ""))
    return Check(t)


ANSWERS = ("ok", "unsupported", "rejected")
"""Outcome statuses that are an answer; any other (crash, timeout, error) is a call that failed."""


def failed(case, outcome) -> "Fault | None":
    """A call that crashed, hung or failed: its status and what the adapter said."""
    return None if outcome.status in ANSWERS else Fault(outcome.status, outcome.detail)


RULE = CallRule("R13", "failed", fault=failed, returned_only=False)
"""R13 as one call shows it: the call failed (its kind the status). Certify's failed calls are the
engine's (``RunContext.broken``: the same statuses), and a call of its start layout, the repeat of
one that returned, fails with any other answer (a refusal too). What a call wrote after it returned
no call alone shows: the adapter says it once the calls are made (``Adapter.late_writes``, which
certify's check reads and the campaign's probe reads in :func:`_late_writes`)."""


def _late_writes(batch: Batch) -> list:
    """Where the driver may wait for the adapter's watch: a campaign's calls that wrote dx1 after
    they returned."""
    if not batch.ask_late:
        return []
    index = {c.id: i for i, c in enumerate(batch.cases)}  # a probe's call keeps its case's id
    return [Seen(ID, index[cid], "late-write", detail) for cid, detail in dict(batch.adapter.late_writes()).items()
            if cid in index]


FAILED_CALLS = campaign_probe("failed-calls", RULE, more=_late_writes, last=True)
"""A campaign's calls that crashed, hung or failed, then those that wrote dx1 after they returned."""


ID = "R13"
ROWS = (
    Requirement(ID, "no-crash-no-hang",
                "Every call returns, and has finished when it returns: no crash, no hang past the timeout, "
                "nothing written into dx1 after the return (the ctypes worker watches each call's dx1 for "
                "100 ms after it returns; other adapters cannot see it).", _returns, last=True,
                plans=(START_LAYOUT,), probes=(FAILED_CALLS,), rule=RULE),
)

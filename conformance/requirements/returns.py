"""R13: every call returns, and has finished when it does: crashes, hangs and errors, and
the calls the adapter saw writing dx1 after the return (checked last, once every call of the
run is made; the write after the return is a call finding the diagnosis tries everywhere)."""

from __future__ import annotations

from sl1conf.conformance.rules import diagnosis
from sl1conf.conformance.requirements.base import (
    Batch, Check, Probe, Requirement, RunContext, START_LAYOUT, Seen, Tally, start_layout,
)


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
    for row, o in [(row, o) for row, _, o in ctx.broken] + [(row, o) for row, o in again if o.status != "ok"]:
        t.note(row["id"], f"{o.status}: {o.detail}")
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


def _failed_calls(batch: Batch) -> list:
    """A campaign's calls that crashed, hung or failed, and (where the driver may wait for the
    adapter's watch) those that wrote dx1 after they returned."""
    out = [Seen(ID, i, o.status, o.detail) for i, o in enumerate(batch.outcomes) if o.status not in ANSWERS]
    if batch.ask_late:
        index = {c.id: i for i, c in enumerate(batch.cases)}  # a probe's call keeps its case's id
        out += [Seen(ID, index[cid], "late-write", detail) for cid, detail in dict(batch.adapter.late_writes()).items()
                if cid in index]
    return out


FAILED_CALLS = Probe("failed-calls", _failed_calls, last=True)


ID = "R13"
ROWS = (
    Requirement(ID, "no-crash-no-hang",
                "Every call returns, and has finished when it returns: no crash, no hang past the timeout, "
                "nothing written into dx1 after the return (the ctypes worker watches each call's dx1 for "
                "100 ms after it returns; other adapters cannot see it).", _returns, last=True,
                plans=(START_LAYOUT,), probes=(FAILED_CALLS,)),
)

"""Where an observation is filed when no one requirement's check owns it: a refused input
(:func:`rejection_filed_under`: certify and the probes of the campaigns file it under the same
requirement) and the fuzzer's pattern of elements never written (:data:`NOT_WRITTEN_UNDER`).
Everything else about whole calls is filed by the probe of the requirement that checks it."""

from __future__ import annotations

from sl1conf.conformance.rules import openbehaviour
from sl1conf.conformance.requirements.base import RunContext


def rejection_filed_under(case, family: "str | None" = None, rows: tuple = ()) -> tuple:
    """Where a call the implementation refused (Outcome status "rejected") is filed: (the open
    question, None) when the call's beta or core_mask is one the manual leaves open (R16 records
    the refusal as the answer), else (None, requirement id): a failure of the required
    requirement of ``rows`` (the catalog) aimed at the case's family, R01 where none is (a
    campaign's call, of no family)."""
    q = openbehaviour.open_input(case.format, case.beta, case.variant, case.core_mask)
    if q:
        return q, None
    rid = next((r.id for r in rows if r.kind == "required" and family in r.families), "R01")
    return None, rid


def rejection_failures(ctx: RunContext, rows: tuple) -> dict:
    """Requirement id -> [(case id, detail)] for every refused call whose input is not open
    (``rows``: the catalog, whose requirements are aimed at the calls' families)."""
    out: dict = {}
    for row, case, o, family in ctx.rejected:
        q, rid = rejection_filed_under(case, family, rows)
        if rid:
            out.setdefault(rid, []).append((row["id"], f"rejected an input the manual defines: {o.detail}"))
    return out


NOT_WRITTEN_UNDER = "R01"
"""The requirement the fuzzer files a pattern of unwritten elements under: an element never
written is beyond every budget (R01), whatever else its inputs' class adds (R04 for a NaN
input, R06 for a subnormal one, ...: those are the inputs', not the defect's)."""

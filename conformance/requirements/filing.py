"""Where an observation outside a single element is filed: a crash, a hang, a write past
length, a core_mask or history dependence (:data:`SEEN_UNDER`), a memory fault
(:data:`MEMORY`), a refused input (:func:`rejection_filed_under`). The fuzzer and certify
file the same observation under the same requirement."""

from __future__ import annotations

from sl1conf.conformance.rules import openbehaviour
from sl1conf.conformance.requirements import CATALOG
from sl1conf.conformance.requirements.base import RunContext


def rejection_filed_under(case, family: "str | None" = None) -> tuple:
    """Where a call the implementation refused (Outcome status "rejected") is filed: (the open
    question, None) when the call's beta or core_mask is one the manual leaves open (R16 records
    the refusal as the answer), else (None, requirement id): a failure of the required
    requirement aimed at the case's family, R01 where none is."""
    q = openbehaviour.open_input(case.format, case.beta, case.variant, case.core_mask)
    if q:
        return q, None
    rid = next((r.id for r in CATALOG if r.kind == "required" and family in r.families), "R01")
    return None, rid


def rejection_failures(ctx: RunContext) -> dict:
    """Requirement id -> [(case id, detail)] for every refused call whose input is not open."""
    out: dict = {}
    for row, case, o, family in ctx.rejected:
        q, rid = rejection_filed_under(case, family)
        if rid:
            out.setdefault(rid, []).append((row["id"], f"rejected an input the manual defines: {o.detail}"))
    return out


SEEN_UNDER = {"crash": "R13", "timeout": "R13", "error": "R13", "late-write": "R13", "past-length": "R07",
              "core-mask": "R09", "determinism": "R14", "position": "R18"}
"""The requirement each kind of observation outside a single element is filed under (the
fuzzer's findings, the comparison of the shared and private versions)."""
MEMORY = {"R10": "memory", "R11": "memory", "R12": "inputs-changed"}
"""The requirements :func:`~.memory.call_fault` answers for, and what the fuzzer calls their findings."""
NOT_WRITTEN_UNDER = "R01"
"""The requirement the fuzzer files a pattern of unwritten elements under: an element never
written is beyond every budget (R01), whatever else its inputs' class adds (R04 for a NaN
input, R06 for a subnormal one, ...: those are the inputs', not the defect's)."""

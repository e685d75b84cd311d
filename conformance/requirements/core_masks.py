"""R09 core-mask invariance: every non-empty core_mask gives the same bits, and the shared and
private versions agree (:func:`compare_variants`, once both runs are done)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from sl1conf.adapters.base import Case
from sl1conf.reference import formats
from sl1conf.conformance.requirements.base import (
    Batch, Check, EXAMPLES, Probe, Requirement, RunContext, SHORT_CALL, Seen, Tally,
)


def _core_masks(ctx: RunContext, req: "Requirement") -> Check:
    """The same data under every non-empty mask gives the same bits (the engine adds the
    shared-against-private half when both variants ran)."""
    t = Tally(ctx.fmt)
    if ctx.variant == "s":
        groups = {}
        for j in ctx.of(req.families):
            if j.case.core_mask:
                key = (j.case.dy.tobytes(), j.case.x1.tobytes(), j.case.x2.tobytes(), j.case.beta)
                groups.setdefault(key, []).append(j)
        for js in groups.values():
            for j in js[1:]:
                t.checked += 1
                if not formats.same_result(ctx.fmt, j.outcome.out, js[0].outcome.out).all():
                    t.note(j.row["id"], f"core_mask {j.case.core_mask:#x} differs from {js[0].case.core_mask:#x} "
                           f"(case {js[0].row['id']})", also=(js[0].row["id"],))
    return Check(t, applicable=ctx.variant == "s" and t.checked > 0)


def compare_variants(shared, fmt: formats.Format, outputs_shared: dict, outputs_private: dict,
                     findings: "dict | None" = None) -> None:
    """R09's second half, added to the evidence of the shared run's R09 result (RunResult): the
    shared version (all cores) and the private version give the same bits, case by case
    (``outputs_*``: case id -> dx1). ``findings``: the call findings of both runs
    (``RunContext.findings``: key -> (pattern, {case id: what was seen}), such as R13's writes
    after the return): a difference in such a call counts for that finding's pattern in the
    entry's diagnosis. Its status follows from the evidence (results.RequirementResult.status)."""
    result = next(r for r in shared.requirements if r.id == ID)
    entry = result.fields
    checked = failed = 0
    findings, explained = findings or {}, {key: [] for key in findings or {}}
    examples = entry.setdefault("examples", [])
    for cid in sorted(set(outputs_shared) & set(outputs_private)):
        checked += 1
        if not formats.same_result(fmt, outputs_shared[cid], outputs_private[cid]).all():
            failed += 1
            for key, (_, ids) in findings.items():
                if cid in ids:
                    explained[key].append(cid)
            if len(examples) < EXAMPLES:
                examples.append({"case": cid, "detail": "the shared version (all cores) and the private "
                                 "version give different bits"})
    if not examples:
        entry.pop("examples")
    entry["checked"] = entry.get("checked", 0) + checked
    entry["failed"] = entry.get("failed", 0) + failed
    entry["shared_vs_private"] = {"checked": checked, "failed": failed}
    if failed and ("diagnosis" in entry or any(explained.values())):
        _add_call_findings(entry, failed, explained, findings)
    result.applicable = result.applicable or checked > 0


def _add_call_findings(entry: dict, failed: int, explained: dict, findings: dict) -> None:
    """Fold ``failed`` more failures into an entry's diagnosis, ``explained[key]`` (case ids) of
    them in calls of that call finding; the patterns that then hold too few are dropped."""
    from sl1conf.conformance.rules.diagnosis import MIN_SHARE

    items = entry.setdefault("diagnosis", [])
    for key, ids in explained.items():
        if ids and not any(d.get("key") == key for d in items):
            pattern, seen = findings[key]
            items.append({"pattern": pattern, "key": key, "failed": 0, "of": 0, "checked_share": 0.0,
                          "example": {"case": ids[0], "detail": seen[ids[0]]}})
    for d in items:
        d["of"] = d["of"] + failed if d["of"] else entry["failed"]
        d["failed"] += len(explained.get(d.get("key"), ()))
    entry["diagnosis"] = sorted((d for d in items if d["failed"] >= MIN_SHARE * d["of"]), key=lambda d: -d["failed"] / d["of"])
    if not entry["diagnosis"]:
        del entry["diagnosis"]


# the campaigns' form of the same check: a short shared-variant call again under another mask

def twin_mask(case: Case, full: int) -> Optional[int]:
    """The other core_mask a short shared-variant case is run under (None: nothing to compare)."""
    other = full if case.core_mask != full else full & -full
    return None if other == case.core_mask else other


def _twins(cases: list, profile) -> list:
    out = []
    for i, c in enumerate(cases):
        m = twin_mask(c, profile.core_mask) if c.variant == "s" and c.n <= SHORT_CALL else None
        if m is not None:
            out.append((i, replace(c, core_mask=m)))
    return out


def _twins_differ(batch: Batch) -> list:
    """Short shared-variant calls whose twin under another core_mask gave other bits."""
    return [Seen(ID, i, "core-mask", f"core_mask {batch.cases[i].core_mask:#x} and {twin.core_mask:#x} give "
                 "different bits", also=(twin,)) for i, twin in batch.differing()]


TWINS = Probe("core-mask-twins", _twins_differ, _twins)


ID = "R09"
ROWS = (
    Requirement(ID, "core-mask-invariance",
                "Every non-empty core_mask gives the same bits for the same data, and the shared and "
                "private versions agree.", _core_masks, families=("core-masks",), probes=(TWINS,)),
)

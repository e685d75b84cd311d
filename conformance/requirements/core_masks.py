"""R09 core-mask invariance: every non-empty core_mask gives the same bits, and the shared and
private versions agree (:func:`compare_variants`, once both runs are done)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.reference import formats
from sl1conf.conformance.requirements.base import Check, Requirement, RunContext
from sl1conf.conformance.requirements.call_rules import CallRule, Twin, campaign_probe
from sl1conf.conformance.requirements.differences import Differ, common_causes, difference_example
from sl1conf.conformance.requirements.records import detail_of, with_detail
from sl1conf.conformance.requirements.probes import SHORT_CALL, Batch
from sl1conf.conformance.requirements.tally import EXAMPLES, Tally


def _core_masks(ctx: RunContext, req: "Requirement") -> Check:
    """The same data under every non-empty mask gives the same bits (the engine adds the
    shared-against-private half when both variants ran)."""
    t = Tally(ctx.fmt)
    if ctx.variant == "s":
        js = ctx.of(req.families)
        for k, first in same_data([j.case for j in js]):
            t.checked += 1
            differ = RULE.differing(ctx.fmt, js[k].outcome.out, js[first].outcome.out)
            if differ.size:
                _note_masks_differ(t, js[k], js[first], differ)
    return Check(t, applicable=ctx.variant == "s" and t.checked > 0)


def _note_masks_differ(t: Tally, j, first, differ: np.ndarray) -> None:
    """One call under another core_mask that gave other bits than ``first`` (the same data's
    first call), as a failing comparison of calls whose example is its first differing element:
    its inputs, both results and the correctly rounded one, how many elements differ."""
    case, k = j.case, int(differ[0])
    d = Differ(j.row["id"], case, j.outcome.out, first.outcome.out, differ)
    said = (f"core_mask {case.core_mask:#x} gives", f"{first.case.core_mask:#x}")
    ex = difference_example(t.fmt, d, said, expected=int(j.expected.oracle[k]) if k < j.exact.size else None)
    detail = (f"core_mask {case.core_mask:#x} differs from {first.case.core_mask:#x} (case {first.row['id']}): "
              + detail_of(ex))
    t.count((j.row["id"], first.row["id"]), detail)
    if len(t.examples) < EXAMPLES:
        t.examples.append(with_detail(ex, detail))


VARIANTS_SAID = ("the shared version (all cores) gives", "the private version")
"""What an R09 example says before each version's bits."""


def compare_variants(requirements: list, fmt: formats.Format, outputs_shared: dict, outputs_private: dict,
                     findings: "dict | None" = None) -> list:
    """The shared run's requirement results (RequirementResult each, in catalog order) with R09's
    second half given to R09's, a new result built with it (a result is never changed once
    built): the shared version (all cores) and the private version give the same bits, case by
    case (``outputs_*``: case id -> (the call's adapters Case, dx1)). Each differing call's
    example is its first differing element (requirements.differences.difference_example): the
    inputs, both results, the correctly rounded one, how many elements differ, and, in the
    first, what every difference has in common (differences.common_causes). ``findings``: the
    call findings of both runs (``RunContext.findings``: key -> (pattern, {case id: what was
    seen}), such as R13's writes after the return): a difference in such a call counts for that
    finding's pattern in the entry's diagnosis. Its status follows from the evidence
    (results.RequirementResult.status). R09 not among them (``--only``): as they were."""
    at = next((i for i, r in enumerate(requirements) if r.id == ID), None)
    if at is None:
        return requirements
    result = requirements[at]
    checked = failed = 0
    findings, explained = findings or {}, {key: [] for key in findings or {}}
    examples = list(result.examples)
    compared, differs = [], []  # (case, both dx1) per call compared; Differ per call that differs
    for cid in sorted(set(outputs_shared) & set(outputs_private)):
        (case, a), (_, b) = outputs_shared[cid], outputs_private[cid]
        checked += 1
        compared.append((case, a, b))
        at_ = RULE.differing(fmt, a, b)
        if at_.size:
            failed += 1
            for key, (_, ids) in findings.items():
                if cid in ids:
                    explained[key].append(cid)
            differs.append(Differ(cid, case, a, b, at_))
    if differs:
        elements = sum(d.at.size for d in differs)
        over = (f"{elements:,} elements differ in {failed:,} of the {checked:,} calls compared"
                + "".join(f"; cause: {c}" for c in common_causes(fmt, differs, compared)))
        room = max(0, EXAMPLES - len(examples))
        examples += [difference_example(fmt, d, VARIANTS_SAID, over if i == 0 else "")
                     for i, d in enumerate(differs[:room])]
    total = (result.failed or 0) + failed
    diagnosis = result.diagnosis
    if failed and (diagnosis is not None or any(explained.values())):
        diagnosis = _with_call_findings(diagnosis or (), total, failed, explained, findings)
    compared_result = replace(result, applicable=result.applicable or checked > 0,
                              checked=(result.checked or 0) + checked, failed=total, examples=tuple(examples),
                              diagnosis=diagnosis, extra={**result.extra,
                                                          "shared_vs_private": {"checked": checked, "failed": failed}})
    return [*requirements[:at], compared_result, *requirements[at + 1:]]


def _with_call_findings(diagnosis: tuple, total: int, failed: int, explained: dict, findings: dict) -> "tuple | None":
    """A diagnosis (rules.diagnosis.Pattern each) with ``failed`` more failures folded in (``total``
    now), ``explained[key]`` (case ids) of them in calls of that call finding: new patterns (a
    result is never changed once built); those that then hold too few are dropped (None: none is left)."""
    from sl1conf.conformance.rules.diagnosis import MIN_SHARE, CallNote, Pattern

    items = list(diagnosis)
    for key, ids in explained.items():
        if ids and not any(d.key == key for d in items):
            pattern, seen = findings[key]
            items.append(Pattern(pattern, key, 0, 0, 0.0, CallNote(ids[0], seen[ids[0]])))
    items = [replace(d, of=d.of + failed if d.of else total, failed=d.failed + len(explained.get(d.key, ())))
             for d in items]
    kept = sorted((d for d in items if d.failed >= MIN_SHARE * d.of), key=lambda d: -d.failed / d.of)
    return tuple(kept) or None


# the one definition: the same data under another core_mask, or in the other version, gives the same bits

def twin_mask(case: Case, full: int) -> Optional[int]:
    """The other core_mask a short shared-variant case is run under (None: nothing to compare)."""
    other = full if case.core_mask != full else full & -full
    return None if other == case.core_mask else other


def _twins(cases: list, profile) -> list:
    """Each short shared-variant call again under another core_mask."""
    out = []
    for i, c in enumerate(cases):
        m = twin_mask(c, profile.core_mask) if c.variant == "s" and c.n <= SHORT_CALL else None
        if m is not None:
            out.append(Twin(i, replace(c, core_mask=m)))
    return out


def same_data(cases: list) -> list:
    """(index, index of the first) of every call under a non-empty core_mask whose data (dy, x1, x2,
    beta) an earlier one held, data by data: the twins certify's core-masks family makes of its own
    calls."""
    groups: dict = {}
    for k, c in enumerate(cases):
        if c.core_mask:
            groups.setdefault((c.dy.tobytes(), c.x1.tobytes(), c.x2.tobytes(), c.beta), []).append(k)
    return [(k, ks[0]) for ks in groups.values() for k in ks[1:]]


RULE = CallRule("R09", "core-mask", twins=_twins, certify_apart=(
    "certify makes no twins: its core-masks family already calls the same data under every mask (same_data "
    "pairs them), and compare_variants pairs the shared run's calls with the private run's; a campaign's "
    "calls are random, so each short shared call gets a twin under another mask"))
"""R09: a call and the same data under another core_mask (or in the other version): the same bits,
NaN as a class."""


def _said(batch: Batch, i: int, differ: list) -> list:
    """A short shared call and its twin under another core_mask with other bits: the first element
    that differs, its inputs and both bit patterns, as certify's R09 examples say them."""
    mask = batch.cases[i].core_mask

    def words(cmp) -> tuple:
        other = cmp.twin.call.core_mask
        return f"core_mask {mask:#x} and {other:#x} give different bits", f"core_mask {mask:#x} gives", f"{other:#x}"

    return [RULE.seen_differing(batch, i, differ, words, also=True)]


TWINS = campaign_probe("core-mask-twins", RULE, said=_said)
"""Short shared-variant calls whose twin under another core_mask gave other bits."""


ID = "R09"
ROWS = (
    Requirement(ID, "core-mask-invariance",
                "Every non-empty core_mask gives the same bits for the same data, and the shared and "
                "private versions agree.", _core_masks, families=("core-masks",), probes=(TWINS,), rule=RULE),
)

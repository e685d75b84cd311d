"""R09 core-mask invariance: every non-empty core_mask gives the same bits, and the shared and
private versions agree (:func:`compare_variants`, once both runs are done)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.reference import formats
from sl1conf.conformance.rules.diagnosis import MIN_LIFT, WIDTHS
from sl1conf.conformance.rules.judge import is_subnormal
from sl1conf.conformance.rules.openbehaviour import open_input
from sl1conf.conformance.requirements.base import (
    Batch, Check, EXAMPLES, Probe, Requirement, RunContext, SHORT_CALL, Seen, Tally, case_element, oracle_at,
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
                same = formats.same_result(ctx.fmt, j.outcome.out, js[0].outcome.out)
                if not same.all():
                    _note_masks_differ(t, j, js[0], np.flatnonzero(~same))
    return Check(t, applicable=ctx.variant == "s" and t.checked > 0)


def _note_masks_differ(t: Tally, j, first, differ: np.ndarray) -> None:
    """One call under another core_mask that gave other bits than ``first`` (the same data's
    first call), as a failing comparison of calls whose example is its first differing element:
    its inputs, both results and the correctly rounded one, how many elements differ."""
    fmt, case, k = t.fmt, j.case, int(differ[0])
    a, b = j.outcome.out[k], first.outcome.out[k]
    detail = (f"core_mask {case.core_mask:#x} differs from {first.case.core_mask:#x} (case {first.row['id']}): "
              + _element_words(fmt, case, k, j.row["id"])
              + f": core_mask {case.core_mask:#x} gives {formats.hex_bits(fmt, a)}, "
              f"{first.case.core_mask:#x} {formats.hex_bits(fmt, b)}"
              + (f", correctly rounded {formats.hex_bits(fmt, j.expected.oracle[k])}" if k < j.exact.size else "")
              + f"; {differ.size:,} of the call's {case.n:,} elements {_differ_word(differ.size)}")
    t.count((j.row["id"], first.row["id"]), detail)
    if len(t.examples) >= EXAMPLES:
        return
    if k < j.exact.size:
        ex = t.element(j, k, got=a)
        ex.pop("ulp_value")
        ex["detail"] = detail
        t.examples.append(ex)
    else:
        t.examples.append({"case": j.row["id"], "detail": detail})


def _differ_word(n: int) -> str:
    return "differs" if n == 1 else "differ"


def _element_words(fmt: formats.Format, case: Case, k: int, case_id: str) -> str:
    """``case 4.2, element 3 of a call of 7 (dy=0x... x1=0x... x2=0x... beta=0x...)``; an element
    past the call's length is said to be."""
    past = " (past the call's length: a correct call leaves it alone)" if k >= case.elements_written else ""
    return (f"case {case_id}, element {k} of a call of {case.call_length:,}{past} "
            f"(dy={formats.hex_bits(fmt, case.dy[k])} x1={formats.hex_bits(fmt, case.x1[k])} "
            f"x2={formats.hex_bits(fmt, case.x2[k])} beta={formats.hex_bits(fmt, case.beta)})")


@dataclass
class _Differ:
    """A call whose shared and private results differ: its case, both results, and the elements
    that differ."""

    case_id: str
    case: Case
    shared: np.ndarray
    private: np.ndarray
    at: np.ndarray


def compare_variants(shared, fmt: formats.Format, outputs_shared: dict, outputs_private: dict,
                     findings: "dict | None" = None) -> None:
    """R09's second half, added to the evidence of the shared run's R09 result (RunResult): the
    shared version (all cores) and the private version give the same bits, case by case
    (``outputs_*``: case id -> (the call's adapters Case, dx1)). Each differing
    call's example is its first differing element (:func:`_variant_example`): the inputs, both
    results, the correctly rounded one, how many elements differ, and, in the first, what every
    difference has in common (:func:`_causes`). ``findings``: the call findings of both runs
    (``RunContext.findings``: key -> (pattern, {case id: what was seen}), such as R13's writes
    after the return): a difference in such a call counts for that finding's pattern in the
    entry's diagnosis. Its status follows from the evidence (results.RequirementResult.status)."""
    result = next(r for r in shared.requirements if r.id == ID)
    entry = result.fields
    checked = failed = 0
    findings, explained = findings or {}, {key: [] for key in findings or {}}
    examples = entry.setdefault("examples", [])
    compared, differing = [], []  # (case, both dx1) per call compared; _Differ per call that differs
    for cid in sorted(set(outputs_shared) & set(outputs_private)):
        (case, a), (_, b) = outputs_shared[cid], outputs_private[cid]
        checked += 1
        compared.append((case, a, b))
        same = formats.same_result(fmt, a, b)
        if not same.all():
            failed += 1
            for key, (_, ids) in findings.items():
                if cid in ids:
                    explained[key].append(cid)
            differing.append(_Differ(cid, case, a, b, np.flatnonzero(~same)))
    if differing:
        elements = sum(d.at.size for d in differing)
        over = (f"{elements:,} elements differ in {failed:,} of the {checked:,} calls compared"
                + "".join(f"; cause: {c}" for c in _causes(fmt, differing, compared)))
        room = max(0, EXAMPLES - len(examples))
        examples += [_variant_example(fmt, d, over if i == 0 else "") for i, d in enumerate(differing[:room])]
    if not examples:
        entry.pop("examples")
    entry["checked"] = entry.get("checked", 0) + checked
    entry["failed"] = entry.get("failed", 0) + failed
    entry["shared_vs_private"] = {"checked": checked, "failed": failed}
    if failed and ("diagnosis" in entry or any(explained.values())):
        _add_call_findings(entry, failed, explained, findings)
    result.applicable = result.applicable or checked > 0


def _variant_example(fmt: formats.Format, d: _Differ, over: str) -> dict:
    """A call whose shared and private results differ, as a report example: its first differing
    element (:func:`requirements.base.case_element`, ``got`` the shared version's bits) with a
    detail that says it all on one line (the inputs, both results and the correctly rounded one,
    how many of the call's elements differ, and ``over``: what is said of every difference)."""
    k, case = int(d.at[0]), d.case
    a, b = formats.hex_bits(fmt, d.shared[k]), formats.hex_bits(fmt, d.private[k])
    if k >= case.n:  # past the call's inputs: the bits alone
        detail = f"element {k}: the shared version (all cores) gives {a}, the private version {b}"
        return {"case": d.case_id, "detail": detail + f"; {d.at.size:,} elements of the call differ"
                + (f" ({over})" if over else "")}
    written = k < case.elements_written
    expected = oracle_at(case, k) if written else None
    detail = (_element_words(fmt, case, k, d.case_id) + f": the shared version (all cores) gives {a}, the private "
              f"version {b}" + (f", correctly rounded {formats.hex_bits(fmt, expected)}" if written else "")
              + f"; {d.at.size:,} of the call's {case.n:,} elements {_differ_word(d.at.size)}"
              + (f" ({over})" if over else ""))
    if not written:
        return {"case": d.case_id, "detail": detail}
    ex = case_element(case, k, int(d.shared[k]), expected=expected)
    ex.pop("ulp_value")
    return {"case": d.case_id, "element": k, "length": int(case.call_length), **ex, "detail": detail}


def _causes(fmt: formats.Format, differing: list, compared: list) -> list:
    """What every differing element has in common and the elements compared mostly lack (the
    diagnosis's rule: at least rules.diagnosis.MIN_LIFT times rarer among them), as words:
    an open input of the call's beta (``beta < 0: the manual leaves this open``), the tail of
    the call (the last n mod W elements, rarer among the differing calls' own elements), the
    elements past the call's length, a NaN or a subnormal among the element's inputs and
    either result."""
    total = sum(a.size for _, a, _ in compared)
    rare = lambda n, of: of > 0 and n * MIN_LIFT <= of  # noqa: E731
    out = []
    questions = {open_input(fmt, int(d.case.beta)) for d in differing}
    if len(questions) == 1 and None not in questions:
        q = next(iter(questions))
        if rare(sum(a.size for c, a, _ in compared if open_input(fmt, int(c.beta)) == q), total):
            out.append(f"only where {q}: the manual leaves this open")
    written = [d.case.elements_written for d in differing]
    if all((d.at >= m).all() for d, m in zip(differing, written)):
        out.append("only past the call's length (elements a correct call leaves alone)")
    else:
        in_calls = sum(d.case.n for d in differing)
        tails = [w for w in WIDTHS if rare(sum(m % w for m in written), in_calls)
                 and all(((d.at >= m - m % w) & (d.at < m)).all() for d, m in zip(differing, written))]
        if tails:  # the narrowest tail that holds them all
            w = min(tails, key=lambda w: sum(m % w for m in written))
            out.append(f"only in the last n mod {w} elements of a call (the tail after a vector body of {w})")
    for name, test in (("NaN", formats.is_nan_bits), ("subnormal", is_subnormal)):
        if all(_in_class(fmt, test, d.case, (d.shared, d.private), d.at).all() for d in differing) and rare(
                sum(int(np.count_nonzero(_in_class(fmt, test, c, (a, b), slice(0, min(c.n, a.size)))))
                    for c, a, b in compared), total):
            out.append(f"only where an input or a result is {name}")
    return out


def _in_class(fmt: formats.Format, test, case: Case, results: tuple, at) -> np.ndarray:
    """Whether elements ``at`` have an input (dy, x1, x2) or a result (``results``) in ``test``'s class."""
    return np.logical_or.reduce([test(fmt, x[at]) for x in (case.dy, case.x1, case.x2, *results)])


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

"""How one element, a distance, a pattern and a run's accuracy are said, the same in every
format (Markdown, HTML, JUnit, the pytest plugin, the gate, fuzz's and sweep's summaries)."""

from __future__ import annotations

import re

import numpy as np

from sl1conf.conformance.requirements.entries import Bulk
from sl1conf.conformance.requirements.records import CallNote, ElementRecord
from sl1conf.conformance.rules.diagnosis import Pattern
from sl1conf.reference import formats

__all__ = ["decimal", "distance_text", "got_text", "outcome_text", "inputs_text", "element_text", "over_the_run",
           "judged_elements", "accuracy_line", "REASON_WORDS", "reasons_text", "by_text", "why_far", "where_text", "case_detail", "diagnosis_line", "bulk_line"]


def decimal(dtype: str, hex_bits: str) -> str:
    """A pattern of the report (``0x3c00``) as its shortest decimal in its own format (``1.0``)."""
    fmt = formats.format_by_name(dtype)
    value = formats.from_bits(fmt, np.array([int(hex_bits, 16)], fmt.uint))[0]
    return str(value)


def distance_text(e: ElementRecord) -> str:
    """An element's distance as a report says it: ``3 ULP``, ``NaN against a number``, or the
    kind of result that is no distance at all (``infinity where the result is finite``)."""
    if e.ulp == "nan-mismatch":  # older reports: which side was the NaN, from the bits
        return {True: "NaN where the result is a number", False: "a number where the result is NaN"}.get(
            _is_nan(e.got or ""), "NaN against a number")
    return f"{e.ulp} ULP" if isinstance(e.ulp, int) else str(e.ulp)


def _is_nan(hex_bits: str) -> "bool | None":
    """Whether an fp16 (``0x`` and 4 digits) or fp32 (8 digits) pattern is a NaN; None for another width."""
    digits = hex_bits[2:] if hex_bits.startswith("0x") else ""
    exp, man = {4: (0x7C00, 0x03FF), 8: (0x7F800000, 0x007FFFFF)}.get(len(digits), (0, 0))
    if not exp:
        return None
    bits = int(digits, 16)
    return (bits & exp) == exp and bool(bits & man)


def got_text(e: ElementRecord) -> str:
    """An element's result as a report says it: its bits, or, where the implementation never
    wrote it (``not_written``: still the fill pattern dx1 held before the call), that."""
    return f"not written (still the fill pattern {e.got})" if e.not_written else e.got


def outcome_text(e: ElementRecord) -> str:
    """``expected 0x3c00, got 0x3c01 (1 ULP)``, or ``expected 0x3c00, got nothing: not written
    (still the fill pattern 0x5a5a)`` (no distance: the fill is no result)."""
    if e.not_written:
        return f"expected {e.expected}, got nothing: {got_text(e)}"
    return f"expected {e.expected}, got {e.got} ({distance_text(e)})"


def inputs_text(e: ElementRecord) -> str:
    """``dy=0x3c00 x1=0x3c00 x2=0x0000 beta=0x3c00``: an element's inputs, as bits."""
    return f"dy={e.dy} x1={e.x1} x2={e.x2} beta={e.beta}"


def element_text(e: ElementRecord) -> str:
    """An element's inputs and what became of it, on one line: the words JUnit, the gate and the
    pytest plugin give an element (``dy=... beta=...: expected 0x3c00, got 0x3c01 (1 ULP)``)."""
    return f"{inputs_text(e)}: {outcome_text(e)}"


def over_the_run(entry) -> tuple:
    """(status, detail) of a per-family requirement's finding about the whole run, in no
    family (R01's rounding bias): ``fail`` (or ``waived``) with what was found when the entry
    has one, else ``pass``, or ``not-applicable`` with the entry. One rule for certify's
    junit.xml and the pytest plugin's ``over-the-run`` item, which are always there."""
    found = "; ".join(entry.over_the_run)
    if entry.status == "not-applicable":
        return "not-applicable", ""
    if found and entry.status in ("fail", "waived"):
        return entry.status, found
    return "pass", ""


def judged_elements(err) -> int:
    """How many elements a run's ``errors`` (an ErrorSummary, or None) are of (its histograms'
    counts): a largest error is said only of some (a report written before certify left ``errors``
    out of a run that judged none holds zeros)."""
    return err.judged if err is not None else 0


REASON_WORDS = {"exact": "exact", "within_budget": "within the budget", "reachable": "reachable under the error model",
                "alternative": "as an open alternative", "open_bounds": "within an open input's stated bounds",
                "rejected": "rejected"}
"""Each of the judge's reasons (rules.judge.REASONS) as every report, summary and terminal line says it."""


def reasons_text(reasons) -> str:
    """Elements by the judge's reason (a ReasonCounts, or a summary's reason -> elements) in words:
    "1,000 exact, 3 within the budget, 1 rejected" (the reasons no element has left out; "none"
    where none has any)."""
    return ", ".join(f"{n:,} {REASON_WORDS[r]}" for r, n in reasons.items() if n) or "none"


def by_text(by: dict) -> str:
    """What accepted elements beyond the budget took (reason -> what -> elements), commonest first:
    "reachable: divmul in fp32 (12); alternative: nan (3)"."""
    rows = sorted(((r, name, n) for r, names in by.items() for name, n in names.items()), key=lambda t: -t[2])
    return "; ".join(f"{r.replace('_', ' ')}: {name} ({n:,})" for r, name, n in rows)


def accuracy_line(run) -> str:
    """One run's (RunResult) accuracy in one line: the largest error of finite results within the budget,
    the elements accepted beyond it (how many, up to how far, as what), and the results that
    are no distance (infinity or NaN against a number), each named."""
    err = run.errors
    if not judged_elements(err):
        return f"{run.dtype} {run.variant}: no element judged, so no largest error"
    parts = [f"{run.dtype} {run.variant}: largest error {err.max_ulp} ULP (finite results)"]
    if err.reasons is not None:
        parts[0] += f"; by the judge's reason: {reasons_text(err.reasons)}"
    far = err.beyond_budget
    if far and far.elements:
        as_ = by_text(far.by)
        worst = far.worst
        why = why_far(run.dtype, worst) if worst else ""
        parts.append(f"accepted beyond the budget at a distance: {far.elements:,}, each with what it took ({as_}), "
                     + (f"up to {far.max_ulp:,} ULP" if far.max_ulp else "each a zero of the other sign")
                     + (f" (the worst at beta = {decimal(run.dtype, worst.beta)}"
                                                  f"{': ' + why if why else ''}; {where_text(worst)})" if worst else ""))
    for kind, seen in err.not_a_distance.items():
        parts.append(f"{kind}: {seen.elements:,} element{'s' if seen.elements != 1 else ''}" + (
            f" ({seen.accepted:,} accepted beyond the budget)" if seen.accepted
            else " (none accepted)"))
    return "; ".join(parts)


def why_far(dtype: str, e: ElementRecord) -> str:
    """Why an accepted element can be far from the exact result, where the inputs show it: a beta
    the manual leaves open (an alternative answered), the quotient diff / beta below the format's
    smallest normal (an evaluation dividing first loses it), or diff * dy beyond its largest
    finite value (one multiplying first overflows)."""
    fmt = formats.format_by_name(dtype)
    dy, x1, x2, beta = (float(decimal(dtype, getattr(e, k))) for k in ("dy", "x1", "x2", "beta"))
    with np.errstate(all="ignore"):
        diff = x1 - x2
        ratio = diff / beta if beta else float("nan")
        product = diff * dy
    tiny, huge = float(np.finfo(fmt.dtype).tiny), float(np.finfo(fmt.dtype).max)
    if not beta > 0 or np.isinf(beta):
        return "a beta the manual leaves open"
    if 0 < abs(ratio) < tiny:
        return "diff / beta underflows"
    if np.isfinite(product) and abs(product) > huge:
        return "diff * dy overflows"
    return ""


def where_text(e: ElementRecord) -> str:
    """``case 2.0, element 16 of a call of 24``: where an element is, with its call's length."""
    return f"case {e.case}, element {e.element}" + (f" of a call of {e.length:,}" if e.length is not None else "")


def case_detail(e: CallNote) -> str:
    """A call's example (its case and what was seen of it) as one line: ``case 1.40: <detail>``,
    or the detail alone where it already begins with its case (the evidence of R09, R14, R15 and
    R18 names the case, the element and the call's length itself)."""
    detail, case = e.detail or "", e.case
    return detail if detail.startswith((f"case {case},", f"case {case}:", f"case {case} ")) else f"case {case}: {detail}"


def diagnosis_line(d: Pattern) -> str:
    """One pattern of a diagnosis (rules.diagnosis.Pattern) with its representative element."""
    e = d.example
    shown = f"{where_text(e)}: {outcome_text(e)}" if isinstance(e, ElementRecord) else case_detail(e)
    return (f"{d.pattern}: {d.failed:,} of {d.of:,} failures ({d.checked_share:.1%} of the elements "
            f"checked); e.g. {shown}")


def bulk_line(b: Bulk) -> str:
    """The commonest kind of error of a failing requirement (requirements.base.ERROR_KINDS) and a typical element."""
    e = b.example
    return f"{b.kind}: {b.failed:,} of {b.of:,} failing elements; e.g. {where_text(e)}: {outcome_text(e)}"

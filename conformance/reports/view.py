"""What a reader of a report needs, computed once for every format (Markdown, HTML, JUnit).

The renderers only lay out what this module derives from ``report.json``: the failing
requirements first, each with its worst input in decimal and hex, the expected and actual
bits, and the one-line commands that reproduce it; then the full table; then what was
observed where the documentation leaves the behaviour open; then who was tested where.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from sl1conf.reference import formats

from sl1conf.conformance.common.commands import certify_command, explain_command
from sl1conf.conformance.requirements import CATALOG_BY_ID
from sl1conf.conformance.requirements.results import NOTHING_OBSERVED, Report

__all__ = ["case_detail", "distance_text", "inputs_text", "element_text", "bulk_line", "run_causes", "got_text", "outcome_text", "where_text", "diagnosis_line", "failing_ids", "matrix", "accuracy_line", "incompleteness", "Failure", "Said", "failure_said", "failure_text", "Row", "View", "view", "sections", "all_held", "decimal",
           "STATUS_ORDER", "ACCEPTED_FAR"]

STATUS_ORDER = ("fail", "waived", "recorded", "pass", "not-applicable")


def decimal(dtype: str, hex_bits: str) -> str:
    """A pattern of the report (``0x3c00``) as its shortest decimal in its own format (``1.0``)."""
    fmt = formats.format_by_name(dtype)
    value = formats.from_bits(fmt, np.array([int(hex_bits, 16)], fmt.uint))[0]
    return str(value)


def distance_text(e: dict) -> str:
    """An element's distance as a report says it: ``3 ULP``, ``NaN against a number``, or the
    kind of result that is no distance at all (``infinity where the result is finite``)."""
    if e.get("kind"):  # a sweep's example: its distance, and the kind that says it better
        return e["kind"]
    if e["ulp"] == "nan-mismatch":  # older reports: which side was the NaN, from the bits
        return {True: "NaN where the result is a number", False: "a number where the result is NaN"}.get(
            _is_nan(e.get("got", "")), "NaN against a number")
    return f"{e['ulp']} ULP" if isinstance(e["ulp"], int) else str(e["ulp"])


def _is_nan(hex_bits: str) -> "bool | None":
    """Whether an fp16 (``0x`` and 4 digits) or fp32 (8 digits) pattern is a NaN; None for another width."""
    digits = hex_bits[2:] if hex_bits.startswith("0x") else ""
    exp, man = {4: (0x7C00, 0x03FF), 8: (0x7F800000, 0x007FFFFF)}.get(len(digits), (0, 0))
    if not exp:
        return None
    bits = int(digits, 16)
    return (bits & exp) == exp and bool(bits & man)


def got_text(e: dict) -> str:
    """An element's result as a report says it: its bits, or, where the implementation never
    wrote it (``not_written``: still the fill pattern dx1 held before the call), that."""
    return f"not written (still the fill pattern {e['got']})" if e.get("not_written") else e["got"]


def outcome_text(e: dict) -> str:
    """``expected 0x3c00, got 0x3c01 (1 ULP)``, or ``expected 0x3c00, got nothing: not written
    (still the fill pattern 0x5a5a)`` (no distance: the fill is no result)."""
    if e.get("not_written"):
        return f"expected {e['expected']}, got nothing: {got_text(e)}"
    return f"expected {e['expected']}, got {e['got']} ({distance_text(e)})"


def inputs_text(e: dict) -> str:
    """``dy=0x3c00 x1=0x3c00 x2=0x0000 beta=0x3c00``: an element's inputs, as bits."""
    return f"dy={e['dy']} x1={e['x1']} x2={e['x2']} beta={e['beta']}"


def element_text(e: dict) -> str:
    """An element's inputs and what became of it, on one line: the words JUnit, the gate and the
    pytest plugin give an element (``dy=... beta=...: expected 0x3c00, got 0x3c01 (1 ULP)``)."""
    return f"{inputs_text(e)}: {outcome_text(e)}"


def over_the_run(entry) -> tuple:
    """(status, detail) of a per-family requirement's finding about the whole run, in no
    family (R01's rounding bias): ``fail`` (or ``waived``) with what was found when the entry
    has one, else ``pass``, or ``not-applicable`` with the entry. One rule for certify's
    junit.xml and the pytest plugin's ``over-the-run`` item, which are always there."""
    found = "; ".join(e["detail"] for e in entry.fields.get("examples") or [] if "case" not in e and "detail" in e)
    if entry.status == "not-applicable":
        return "not-applicable", ""
    if found and entry.status in ("fail", "waived"):
        return entry.status, found
    return "pass", ""


def judged_elements(err: "dict | None") -> int:
    """How many elements a run's ``errors`` are of (its histograms' counts): a largest error is
    said only of some (a report written before certify left ``errors`` out of a run that judged
    none holds zeros)."""
    return sum(sum(c) for c in (err or {}).get("ulp_histogram", {}).values())


def accuracy_line(run) -> str:
    """One run's (RunResult) accuracy in one line: the largest error of finite results within the budget,
    the elements accepted beyond it (how many, up to how far, as what), and the results that
    are no distance (infinity or NaN against a number), each named."""
    err = run.errors
    if not judged_elements(err):
        return f"{run.dtype} {run.variant}: no element judged, so no largest error"
    parts = [f"{run.dtype} {run.variant}: largest error {err['max_ulp']} ULP (finite results)"]
    far = err.get("beyond_budget")
    if far and far["elements"]:
        by = sorted(far["by"].items(), key=lambda kv: -kv[1])
        as_ = (by[0][0] if len(by) == 1 else "; ".join(f"{name} ({n:,})" for name, n in by))
        worst = far.get("worst")
        why = _why_far(run.dtype, worst) if worst else ""
        parts.append(f"{far['elements']:,} more elements accepted beyond the budget, each with what it took ({as_}), "
                     + (f"up to {far['max_ulp']:,} ULP" if far["max_ulp"] else "each a zero of the other sign")
                     + (f" (the worst at beta = {decimal(run.dtype, worst['beta'])}"
                                                  f"{': ' + why if why else ''}; {where_text(worst)})" if worst else ""))
    for kind, seen in (err.get("not_a_distance") or {}).items():
        parts.append(f"{kind}: {seen['elements']:,} element{'s' if seen['elements'] != 1 else ''}" + (
            f" ({seen['accepted']:,} accepted: reachable under the error model, or an alternative's bits)" if seen["accepted"]
            else " (none accepted)"))
    return "; ".join(parts)


def _why_far(dtype: str, e: dict) -> str:
    """Why an accepted element can be far from the exact result, where the inputs show it: a beta
    the manual leaves open (an alternative answered), the quotient diff / beta below the format's
    smallest normal (an evaluation dividing first loses it), or diff * dy beyond its largest
    finite value (one multiplying first overflows)."""
    fmt = formats.format_by_name(dtype)
    dy, x1, x2, beta = (float(decimal(dtype, e[k])) for k in ("dy", "x1", "x2", "beta"))
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


def where_text(e: dict) -> str:
    """``case 2.0, element 16 of a call of 24``: where an element is, with its call's length."""
    return f"case {e['case']}, element {e['element']}" + (f" of a call of {e['length']:,}" if "length" in e else "")


def case_detail(e: dict) -> str:
    """A call's example (its case and what was seen of it) as one line: ``case 1.40: <detail>``,
    or the detail alone where it already begins with its case (the evidence of R09, R14, R15 and
    R18 names the case, the element and the call's length itself)."""
    detail, case = e.get("detail", ""), e["case"]
    return detail if detail.startswith((f"case {case},", f"case {case}:", f"case {case} ")) else f"case {case}: {detail}"


def diagnosis_line(d: dict) -> str:
    """One pattern of a diagnosis (rules.diagnosis) with its representative element."""
    e = d["example"]
    shown = f"{where_text(e)}: {outcome_text(e)}" if "element" in e else case_detail(e)
    return (f"{d['pattern']}: {d['failed']:,} of {d['of']:,} failures ({d['checked_share']:.1%} of the elements "
            f"checked); e.g. {shown}")


def bulk_line(b: dict) -> str:
    """The commonest kind of error of a failing requirement (requirements.base.ERROR_KINDS) and a typical element."""
    e = b["example"]
    return f"{b['kind']}: {b['failed']:,} of {b['of']:,} failing elements; e.g. {where_text(e)}: {outcome_text(e)}"


def failing_ids(report: Report) -> list:
    """The ids of the required requirements that fail in some run, in catalog order."""
    return sorted({r.id for run in report.runs for r in run.requirements if r.status == "fail"})


def matrix(report: Report) -> tuple:
    """(header, rows) of the pass/fail matrix: each requirement against each run's status."""
    runs = report.runs
    header = ["id", "requirement", *(f"{r.dtype} {r.variant}" for r in runs)]
    ids = []
    for run in runs:
        ids += [(q.id, q.title) for q in run.requirements if (q.id, q.title) not in ids]
    rows = []
    for rid, title in sorted(ids):
        status = [next((q.status for q in run.requirements if q.id == rid), "") for run in runs]
        rows.append([rid, title, *status])
    return header, rows


def _rerun_command(report: Report, dtype: str, variant: str, only: list) -> str:
    """``sl1conf certify`` rerunning one requirement (and case) on the same implementation,
    platform or profile and vectors as the report (generated vectors are generated again)."""
    inv, prof = report.invocation, report.profile
    vectors = report.vectors.get(dtype, {}).get("source", "")
    built_in = prof["path"].replace("\\", "/").endswith(f"rules/profiles/{prof['name']}.toml")
    platform = inv.get("platform") or (prof["name"] if built_in and not inv.get("profile") else None)
    return _home_expanded(certify_command(inv.get("impl") or report.implementation["adapter"], platform=platform,
                           profile=None if platform else inv.get("profile") or prof["path"], dtype=dtype, variant=variant,
                           vectors=vectors if inv.get("vectors") and not vectors.startswith("generated") else None,
                           quick=report.quick, only=only, results=inv.get("results"),
                           out=f"/tmp/sl1conf-{dtype}-{variant}-{'-'.join(only)}"))


def _home_expanded(command: str) -> str:
    """``command`` with its quoted ``'~/...'`` arguments (a report stores paths under the home
    folder so: reports/write.portable_paths) as ``~/'...'``, which the shell expands: --profile
    and --vectors take the path as given. (``ctypes:~/...`` expands in the adapter.)"""
    return re.sub(r"(^|\s)'~/", r"\1~/'", command)


WORST_LABEL = "Worst input (the largest error, not a pattern)"


@dataclass
class Failure:
    """One failing requirement of one run, with everything needed to see and reproduce it."""

    dtype: str
    variant: str
    id: str
    title: str
    statement: str
    worst: "dict | None"  # the element, with "x1_decimal" etc. added
    detail: str  # for requirements about calls, not elements (the first example's detail)
    commands: list = field(default_factory=list)
    variants: list = field(default_factory=list)  # the variants failing the same way (first: the one run)
    counts: list = field(default_factory=list)  # (failed, checked) per variant
    reproduction: str = ""  # how far the commands reproduce it, where not plainly (history-dependent)
    over_the_run: str = ""  # a finding about the whole run, not one call (R01's rounding bias)
    diagnosis: list = field(default_factory=list)  # diagnosis_line per pattern the failures share
    bulk: str = ""  # bulk_line: the commonest kind of error and a typical element (the block leads with it)
    cause: str = ""  # the cause it shares with other failing requirements of the run (reports.causes), if any
    counted: str = ""  # how many, in words of a driver that counts otherwise (fuzz: distinct failures, findings)
    shown_as: str = WORST_LABEL  # what the element shown is (fuzz: the smallest reproducer, not the worst)

    @property
    def where(self) -> str:
        return f"{self.dtype} {' and '.join(self.variants)}"

    @property
    def how_many(self) -> str:
        """``125 of 37269 failed`` (one variant, or the same counts in each), else per variant."""
        if self.counted:
            return self.counted
        if len(set(self.counts)) == 1:
            failed, checked = self.counts[0]
            return f"{failed} of {checked} failed" + (" in each" if len(self.counts) > 1 else "")
        return "; ".join(f"{v}: {f} of {c} failed" for v, (f, c) in zip(self.variants, self.counts))


@dataclass(frozen=True)
class Said:
    """One thing a failure says: its ``kind`` (heading, cause, statement, over-the-run, bulk,
    diagnosis, worst, first, reproduce), the ``label`` a format puts before it, and its ``text``,
    ``lines`` (diagnosis patterns, commands) or ``element`` (the worst input)."""

    kind: str
    label: str = ""
    text: str = ""
    lines: tuple = ()
    element: "dict | None" = None


def failure_said(f: Failure, commands: "list | None" = None) -> list:
    """What a failing requirement says, in the one order every format says it, cause first:
    the heading (where, how many), the cause it shares with others, the statement, what was
    found over the run, the commonest kind of error, the patterns the failures share, the worst
    input (or the first failure of a requirement about calls), and how to reproduce it
    (``commands``: other commands than the report's, as the pytest plugin's)."""
    said = [Said("heading", text=f"{f.id} {f.title}: {f.where}, {f.how_many}")]
    if f.cause:
        said.append(Said("cause", "Cause (shared)", f.cause))
    said.append(Said("statement", text=f.statement))
    if f.over_the_run:
        said.append(Said("over-the-run", "Over the run", f.over_the_run))
    if f.bulk:
        said.append(Said("bulk", "Most failures", f.bulk))
    if f.diagnosis:
        said.append(Said("diagnosis", "Diagnosis (patterns the failures share)", lines=tuple(f.diagnosis)))
    if f.worst:
        said.append(Said("worst", f.shown_as, element_text(f.worst), element=f.worst))
    elif f.detail:
        said.append(Said("first", "First failure", f.detail))
    said.append(Said("reproduce", "Reproduce" + (f" ({f.reproduction})" if f.reproduction else ""),
                     lines=tuple(f.commands if commands is None else commands)))
    return said


def failure_text(f: Failure, commands: "list | None" = None, brief: bool = False) -> str:
    """:func:`failure_said` as plain text (JUnit's failure, the pytest plugin's, the command
    line's); ``brief``: the heading, the cause, what was found over the run, the commonest error and
    the worst input (or the first failure) only."""
    out = []
    for s in failure_said(f, commands):
        if brief and s.kind not in ("heading", "cause", "over-the-run", "bulk", "worst", "first"):
            continue
        if s.kind in ("heading", "statement"):
            out.append(("  " if brief and s.kind != "heading" else "") + s.text)
        elif s.lines:
            out += [f"{s.label}:"] + [f"  {line}" for line in s.lines]
        elif s.kind != "reproduce":
            out.append(("  " if brief else "") + f"{s.label}: {s.text}")
    return "\n".join(out)


@dataclass
class Row:
    dtype: str
    variant: str
    id: str
    title: str
    kind: str
    status: str
    checked: "int | None"
    failed: "int | None"
    worst_ulp: "int | str | None"


@dataclass
class View:
    """What every format of a report says, built once from the typed ``Report``: the renderers
    (Markdown, HTML, JUnit), the command line's summary and the pytest plugin read this alone."""

    report: Report
    title: str
    verdict: str
    failures: list  # Failure, in catalog order per run; variants failing alike share one
    rows: list  # Row, every requirement of every run
    observed: list  # (dtype, variant, id, title, observation text)
    identity: list  # (label, value)
    errors: list  # (dtype, variant, max ULP, nan mismatches, worst element or None)
    headline: str  # the verdict with what qualifies it: waived failures, nothing checked
    scope: str  # "" for a full run
    accuracy: list = field(default_factory=list)  # accuracy_line per run
    beyond_budget: list = field(default_factory=list)  # a row per requirement that accepted elements beyond the budget
    unobserved: list = field(default_factory=list)  # (dtype, variant, id, title, why) per not-applicable entry that says why
    causes: list = field(default_factory=list)  # "fp32 s: <cause line>" per cause of each run's failures (reports.causes)
    provenance: str = ""  # the files the command named, by SHA-256, and the dtypes answered (sim:, --results)
    incomplete: list = field(default_factory=list)  # incompleteness: why the report is incomplete, a line each

    @property
    def runs_line(self) -> str:
        """``fp32 s PASS, fp32 p FAIL``: every run's verdict."""
        return ", ".join(f"{r.dtype} {r.variant} {r.verdict.upper()}" for r in self.report.runs)


def _headline(report: Report) -> str:
    """``PASS``, ``FAIL on R01, R07``, ``PASS (2 waived)``, ``PASS, but nothing required was checked``,
    ``INCOMPLETE``."""
    reqs = [r for run in report.runs for r in run.requirements]
    text = report.verdict.upper()
    failing = failing_ids(report)
    if failing:
        text += " on " + ", ".join(failing)
    waived = sum(r.status == "waived" for r in reqs)
    if waived:
        text += f" ({waived} waived)"
    if report.verdict == "pass" and not any(r.kind == "required" and r.status in ("pass", "waived") for r in reqs):
        text += ", but nothing required was checked"
    return text


def incompleteness(report: Report) -> list:
    """Why the report is incomplete, one line each: runs the profile lists and the
    implementation lacks, and each incomplete run's reasons."""
    out = []
    if report.missing:
        out.append("not offered by the implementation, though the profile lists them: " + ", ".join(report.missing))
    out += [f"{run.dtype} {run.variant}: " + "; ".join(run.incomplete) for run in report.runs
            if run.incomplete and run.verdict == "incomplete"]
    return out


def _scope(report: Report) -> str:
    """What part of the suite ran, when not all of it."""
    return "; ".join((["--quick: edge families only"] if report.quick else []) + (
        ["--only " + ",".join(report.only) + ": only these requirements and cases"] if report.only else [])
        + ([" and ".join(report.narrowed) + ": only the runs asked for"] if report.narrowed else [])
        + [f"{run.dtype} {run.variant}: {run.recorded}" for run in report.runs if run.recorded])


def _with_decimals(dtype: str, element: dict) -> dict:
    out = dict(element)
    for key in ("dy", "x1", "x2", "beta", "expected", "got"):
        if key in element:
            out[f"{key}_decimal"] = decimal(dtype, element[key])
    return out


def _observation(req) -> str:
    obs = req.fields.get("observed")
    if isinstance(obs, dict):  # R16: per open question, how many open elements (or calls) each answer explains
        def one(question, seen):
            sizes = " and ".join(f"{seen[k]} {unit}" for k, unit in (("elements", "open elements"), ("calls", "calls"))
                                 if k in seen)
            refused = seen.get("rejected")
            return (f"{question}: {sizes}: " + ", ".join(f"{name} {n}" for name, n in seen.get("answers", {}).items())
                    + (f" (rejected calls: the implementation refused the input, e.g. case {refused['case']}: "
                       f"{refused['detail']})" if refused else ""))
        return "; ".join(one(q, seen) for q, seen in obs.items()) or "nothing to record"
    if isinstance(obs, list):
        return ", ".join(obs) or "none"
    return str(obs) if obs is not None else ""


def _beyond_budget_row(d: str, v: str, r) -> "list | None":
    """The row of the section "Accepted beyond the budget" of one requirement of one run, if it accepted any."""
    far, nodist = r.fields.get("beyond_budget"), r.fields.get("beyond_budget_not_a_distance") or {}
    if not far and not nodist:
        return None
    w = far["worst"] if far else None
    why = _why_far(d, w) if w else ""
    return [f"{d} {v}", f"{r.id} {r.title}", f"{far['elements']:,}" if far else "0",
            "; ".join(f"{name} ({n:,})" for name, n in far["by"].items()) if far else "",
            f"{far['max_ulp']:,} ULP" if far else "",
            "; ".join(f"{kind}: {n:,}" for kind, n in nodist.items()),
            (f"{where_text(w)}: dy {w['dy']}, x1 {w['x1']}, x2 {w['x2']}, beta {w['beta']}; expected "
             f"{w['expected']}, got {w['got']}" + (f" ({why})" if why else "")) if w else "",
            explain_command(d, w["dy"], w["x1"], w["x2"], w["beta"]) if w else ""]


def _failure(report: Report, run, r, shared: dict) -> Failure:
    """The Failure of a failing requirement ``r`` of ``run``; ``shared``: requirement id -> the
    cause line it shares with others of the run."""
    d, v, fields = run.dtype, run.variant, r.fields
    worst = fields.get("worst")
    run_wide = [e["detail"] for e in fields.get("examples") or [] if "case" not in e]
    examples = [e for e in fields.get("examples") or [] if "case" in e]
    f = Failure(d, v, r.id, r.title, r.statement, _with_decimals(d, worst) if worst else None,
                "" if worst else (examples[0].get("detail", "") if examples else ""),
                variants=[v], counts=[(r.failed, r.checked)],
                reproduction=fields.get("reproduction", ""), over_the_run="; ".join(run_wide),
                diagnosis=[diagnosis_line(dg) for dg in fields.get("diagnosis") or []],
                bulk=bulk_line(fields["bulk"]) if fields.get("bulk") else "", cause=shared.get(r.id, ""))
    case = (worst or (examples[0] if examples else {})).get("case") if fields.get("rerun_cases", True) else None
    f.commands.append(_rerun_command(report, d, v, [r.id] + ([case] if case else [])))
    if worst:  # the exact diff, branch, result and every model's bits of the worst element
        f.commands.append(explain_command(d, worst["dy"], worst["x1"], worst["x2"], worst["beta"]))
    return f


def _run_parts(report: Report, run, out: dict) -> None:
    """What one run adds to the view's lists (``out``: failures, rows, observed, errors,
    beyond_budget, unobserved)."""
    from sl1conf.conformance.reports.causes import cause_line, causes

    d, v = run.dtype, run.variant
    shared = {rid: cause_line(c) for c in causes(run) if len(c.requirements) > 1 for rid in c.requirements}
    err = run.errors
    if judged_elements(err):
        worst = err.get("worst")
        out["errors"].append((d, v, err["max_ulp"], err["nan_mismatches"], _with_decimals(d, worst) if worst else None))
    for r in run.requirements:
        worst = r.fields.get("worst")
        out["rows"].append(Row(d, v, r.id, r.title, r.kind, r.status, r.fields.get("checked"), r.fields.get("failed"),
                               worst.get("ulp") if worst else None))
        far = _beyond_budget_row(d, v, r)
        if far is not None:
            out["beyond_budget"].append(far)
        req, obs = CATALOG_BY_ID.get(r.id), r.fields.get("observed")
        if r.status == "not-applicable" and obs:  # "not observed by this harness", or a check of nothing, and why
            out["unobserved"].append((d, v, r.id, r.title, _observation(r)))
        elif req is not None and req.observes and obs is not None:
            out["observed"].append((d, v, r.id, r.title, _observation(r)))
        if r.status != "fail":
            continue
        f = _failure(report, run, r, shared)
        same = next((g for g in out["failures"] if (g.dtype, g.id, g.worst, g.detail)
                     == (f.dtype, f.id, f.worst, f.detail)), None)
        if same is not None:  # the other variant failing the same way: one block, not two
            same.variants.append(v)
            same.counts += f.counts
        else:
            out["failures"].append(f)


_IMPLEMENTATION_LABELS = (("library", "library"), ("sha256", "library SHA-256"), ("symbols", "symbols"),
                          ("model", "model"), ("isa", "ISA"), ("device", "device"), ("torch", "torch"),
                          ("mindspore_version", "mindspore"), ("threads", "threads"), ("results", "results file"),
                          ("results_sha256", "results SHA-256"), ("program", "self-test"),
                          ("program_verdict", "the self-test's own verdict"))


def _identity(report: Report, name: str) -> list:
    """(label, value) of what was tested where: the implementation, its files, the profile, the
    vectors, the suite, the date, the host and the scope."""
    impl = report.implementation
    identity = [("implementation", name)]
    for key, label in _IMPLEMENTATION_LABELS:
        if key in impl:
            value = impl[key]
            identity.append((label, ", ".join(value) if isinstance(value, list) else str(value)))
    identity += [(f"file {f['path']}", f"SHA-256 {f['sha256']}") for f in impl.get("files") or []]
    if "answered_dtypes" in impl:
        identity.append(("dtypes answered", ", ".join(impl["answered_dtypes"]) or "none"))
    prof = report.profile
    identity += [("profile", f"{prof['name']}: {prof['title']}"), ("profile file", prof["path"]),
                 ("profile SHA-256", prof["sha256"])]
    for dtype, vs in report.vectors.items():
        identity.append((f"vectors {dtype}", f"{vs.get('id', '')} ({vs['source']}; {vs['elements']} elements; "
                                             f"manifest SHA-256 {vs['manifest_sha256']})"))
    identity += [("suite", f"sl1conf {report.suite_version}"), ("date", report.created or "unknown"),
                 ("host", ", ".join(f"{k} {v}" for k, v in report.host.items()) or "unknown")]
    if report.quick:
        identity.append(("scope", "--quick: edge families only"))
    if report.only:
        identity.append(("scope", "--only " + ",".join(report.only)))
    return identity


def view(report: Report) -> View:
    """The view of a typed report (``requirements.results.Report``), built once for every format."""
    if not isinstance(report, Report):
        raise TypeError(f"view() takes a requirements.results.Report, not {type(report).__name__}")
    name = report.invocation.get("impl") or report.implementation["adapter"]
    out: dict = {k: [] for k in ("failures", "rows", "observed", "errors", "beyond_budget", "unobserved")}
    for run in report.runs:
        _run_parts(report, run, out)
    rows = sorted(out["rows"], key=lambda r: STATUS_ORDER.index(r.status) if r.status in STATUS_ORDER else 0)
    return View(report, f"{name} on {report.profile['name']}", report.verdict, out["failures"], rows, out["observed"],
                _identity(report, name), out["errors"], _headline(report), _scope(report),
                [line for line in map(accuracy_line, report.runs) if line], out["beyond_budget"], out["unobserved"],
                run_causes(report), provenance(report.implementation), incompleteness(report))


def provenance(impl: dict) -> str:
    """What identifies a board's or a simulator's run beyond its name, in one line for the
    header: each file the command named (the harness, the results file) by its SHA-256, and the
    dtypes the harness answered ("" for an adapter that records neither)."""
    parts = [f"{f['path']} (SHA-256 {f['sha256']})" for f in impl.get("files") or []]
    if "answered_dtypes" in impl:
        parts.append("dtypes answered: " + (", ".join(impl["answered_dtypes"]) or "none"))
    return "; ".join(parts)


def run_causes(report: Report, shared: bool = False) -> list:
    """The causes of every run's failures (reports.causes), a line each, runs failing alike once;
    ``shared``: only the causes of more than one requirement (each failure says its own)."""
    from sl1conf.conformance.reports.causes import cause_line, causes

    out: dict = {}
    for run in report.runs:
        for c in causes(run):
            if not shared or len(c.requirements) > 1:
                out.setdefault(cause_line(c), []).append(f"{run.dtype} {run.variant}")
    return [f"{' and '.join(where)}: {line}" for line, where in out.items()]


def all_held(v: View) -> str:
    """The line shown where the failures would be, when there are none: what it does and does not say."""
    waived = [r for r in v.rows if r.status == "waived"]
    if "nothing required" in v.headline:
        return "No failure, but no required requirement was checked here (see the scope and the table)."
    if waived:
        return (f"No failure, and {len(waived)} requirement runs failed but are waived "
                f"({', '.join(sorted({r.id for r in waived}))}; reasons under Waivers).")
    if v.verdict == "incomplete":
        return "No failure on what ran, but the report is incomplete (see above): it is not a pass."
    return "Every required requirement holds on every run."


ACCEPTED_FAR = "Accepted beyond the budget"


def sections(v: View) -> list:
    """The sections after the requirement table: (heading, note, header, rows), for every format."""
    out = []
    if v.errors:
        out.append(("Largest error of each run",
                    "Finite results, accepted within the budget or rejected, in ULPs from the correctly rounded result; "
                    "elements accepted beyond the budget (reachable under the error model, or an alternative) and infinities or NaNs against numbers are "
                    "counted apart, in the lines under the title.",
                    ["run", "max ULP", "NaN mismatches", "at input (dy, x1, x2, beta)", "expected", "got"],
                    [[f"{d} {var}", m, n, f"{w['dy']}, {w['x1']}, {w['x2']}, {w['beta']} (case {w['case']})"
                      if w else "", w["expected"] if w else "", got_text(w) if w else ""]
                     for d, var, m, n, w in v.errors]))
    if v.beyond_budget:
        out.append((ACCEPTED_FAR, "Elements each requirement accepted although they are farther than the budget "
                    "from the correctly rounded result, because the profile's error model reaches them (the "
                    "evaluation, and the approximate operation or the flush it took) or they are an acceptable "
                    "alternative's result; and accepted results that are no distance at all. Not counted in the "
                    "largest error.",
                    ["run", "requirement", "elements", "what it took", "up to", "infinity or NaN against a number",
                     "farthest input", "explain it"], v.beyond_budget))
    if v.observed:
        out.append(("Observed where the manual is silent", "", ["run", "id", "what", "observed"],
                    [[f"{d} {var}", rid, title, text] for d, var, rid, title, text in v.observed]))
    if v.unobserved:
        nothing = any(text.startswith(NOTHING_OBSERVED) for *_, text in v.unobserved)
        out.append(("Not observed", "Requirements not applicable because the adapter or the harness cannot observe "
                    "what they are about: nothing was checked, and the verdict does not rest on them."
                    + (" Those that say \"not observed:\" had nothing to check in the run (a harness that answered "
                       "no call of the dtype): none of them is a pass, and a required one makes the run incomplete."
                       if nothing else ""),
                    ["run", "id", "what", "why"],
                    [[f"{d} {var}", rid, title, text] for d, var, rid, title, text in v.unobserved]))
    if v.report.waivers:
        out.append(("Waivers", "", ["waiver", "pattern", "matched", "failures waived", "reason"],
                    [[w["id"], w.get("pattern", ""), w["matched"], w.get("failures", ""), w["reason"]]
                     for w in v.report.waivers]))
    out.append(("What was tested", "", ["", ""], [[k, val] for k, val in v.identity]))
    return out

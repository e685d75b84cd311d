"""What a reader of a report needs, computed once for every format (Markdown, HTML, JUnit).

The renderers only lay out what this module derives from a typed report (how an element and a
pattern are said is ``wording``'s, what a failure says ``failures``'): the failing
requirements first, each with its worst input in decimal and hex, the expected and actual
bits, and the one-line commands that reproduce it; then the full table; then what was
observed where the documentation leaves the behaviour open; then who was tested where.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sl1conf.conformance.common.commands import certify_command, explain_command
from sl1conf.conformance.requirements import CATALOG_BY_ID
from sl1conf.conformance.requirements.results import NOTHING_OBSERVED, Report
from sl1conf.conformance.reports.failures import WORST_LABEL, Failure, Said, failure_said, failure_text
from sl1conf.conformance.reports.wording import (
    accuracy_line, bulk_line, case_detail, decimal, diagnosis_line, distance_text, element_text, got_text,
    by_text, inputs_text, judged_elements, reasons_text, outcome_text, over_the_run, where_text, why_far,
)

__all__ = ["over_the_run", "judged_elements", "WORST_LABEL", "case_detail", "distance_text", "inputs_text", "element_text", "bulk_line", "run_causes", "got_text", "outcome_text", "where_text", "diagnosis_line", "failing_ids", "matrix", "accuracy_line", "incompleteness", "Failure", "Said", "failure_said", "failure_text", "Row", "View", "view", "sections", "all_held", "decimal",
           "STATUS_ORDER", "ACCEPTED_BEYOND", "reasons_text", "by_text"]

STATUS_ORDER = ("fail", "waived", "recorded", "pass", "not-applicable")


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
    causes_total: int = 0  # how many causes ``causes`` holds (the smaller ones may be one line: reports.causes)

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
        + ([" and ".join(report.narrowed) + ": only the runs asked for"
            + (f" (not asked: {', '.join(report.not_asked)})" if report.not_asked else "")] if report.narrowed else [])
        + [f"{run.dtype} {run.variant}: {run.recorded}" for run in report.runs if run.recorded])


def _observation(req) -> str:
    obs = req.observed
    if isinstance(obs, dict):  # R16: per open question (an OpenAnswer), how many open elements (or calls) each answer explains
        def one(question, seen):
            sizes = " and ".join(f"{n} {unit}" for n, unit in ((seen.elements, "open elements"), (seen.calls, "calls"))
                                 if n is not None)
            refused = seen.rejected
            return (f"{question}: {sizes}: " + ", ".join(f"{name} {n}" for name, n in seen.answers.items())
                    + (f" (rejected calls: the implementation refused the input, e.g. case {refused.case}: "
                       f"{refused.detail})" if refused else ""))
        return "; ".join(one(q, seen) for q, seen in obs.items()) or "nothing to record"
    if isinstance(obs, tuple):
        return ", ".join(obs) or "none"
    return str(obs) if obs is not None else ""


def _beyond_budget_row(d: str, v: str, r) -> "list | None":
    """The row of the section "Accepted beyond the budget" of one requirement of one run, if it accepted any."""
    far, nodist = r.beyond_budget, r.not_a_distance
    if not far and not nodist:
        return None
    w = far.worst if far else None
    why = why_far(d, w) if w else ""
    return [f"{d} {v}", f"{r.id} {r.title}", f"{far.elements:,}" if far else "0",
            by_text(far.by) if far else "",
            f"{far.max_ulp:,} ULP" if far else "",
            "; ".join(f"{kind}: {n:,}" for kind, n in nodist.items()),
            (f"{where_text(w)}: dy {w.dy}, x1 {w.x1}, x2 {w.x2}, beta {w.beta}; expected "
             f"{w.expected}, got {w.got}" + (f" ({why})" if why else "")) if w else "",
            explain_command(d, w.dy, w.x1, w.x2, w.beta) if w else ""]


def _failure(report: Report, run, r, shared: dict) -> Failure:
    """The Failure of a failing requirement ``r`` of ``run``; ``shared``: requirement id -> the
    cause lines it shares with others of the run (every one, in the run's order of causes)."""
    d, v, worst = run.dtype, run.variant, r.worst
    examples = [e for e in r.examples if e.case is not None]
    f = Failure(d, v, r.id, r.title, r.statement, worst,
                "" if worst else (examples[0].detail or "" if examples else ""),
                variants=[v], counts=[(r.failed, r.checked)],
                reproduction=r.reproduction, over_the_run="; ".join(r.over_the_run),
                diagnosis=[diagnosis_line(dg) for dg in r.diagnosis or ()],
                bulk=bulk_line(r.bulk) if r.bulk else "", causes=shared.get(r.id, []))
    case = (worst or (examples[0] if examples else None)) if r.rerun_cases else None
    case = case.case if case is not None else None
    f.commands.append(_rerun_command(report, d, v, [r.id] + ([case] if case else [])))
    if worst:  # the exact diff, branch, result and every model's bits of the worst element
        f.commands.append(explain_command(d, worst.dy, worst.x1, worst.x2, worst.beta))
    return f


def _written(e) -> "dict | None":
    """An element as written (what two variants failing alike share: not their positions)."""
    return None if e is None else e.to_json()


def _run_parts(report: Report, run, out: dict) -> None:
    """What one run adds to the view's lists (``out``: failures, rows, observed, errors,
    beyond_budget, unobserved)."""
    from sl1conf.conformance.reports.causes import cause_line, causes

    d, v = run.dtype, run.variant
    shared: dict = {}  # a requirement whose failures split among several causes is in each of them
    for c in causes(run):
        if len(c.requirements) > 1:
            for rid in c.requirements:
                shared.setdefault(rid, []).append(cause_line(c))
    err = run.errors
    if judged_elements(err):
        out["errors"].append((d, v, err.max_ulp, err.nan_mismatches, err.worst))
    for r in run.requirements:
        out["rows"].append(Row(d, v, r.id, r.title, r.kind, r.status, r.checked, r.failed,
                               r.worst.ulp if r.worst else None))
        far = _beyond_budget_row(d, v, r)
        if far is not None:
            out["beyond_budget"].append(far)
        req, obs = CATALOG_BY_ID.get(r.id), r.observed
        if r.status == "not-applicable" and obs:  # "not observed by this harness", or a check of nothing, and why
            out["unobserved"].append((d, v, r.id, r.title, _observation(r)))
        elif req is not None and req.observes and obs is not None:
            out["observed"].append((d, v, r.id, r.title, _observation(r)))
        if r.status != "fail":
            continue
        f = _failure(report, run, r, shared)
        same = next((g for g in out["failures"] if (g.dtype, g.id, _written(g.worst), g.detail)
                     == (f.dtype, f.id, _written(f.worst), f.detail)), None)
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
    from sl1conf.conformance.reports.causes import report_causes
    lines, total = report_causes(report.runs)
    return View(report, f"{name} on {report.profile['name']}", report.verdict, out["failures"], rows, out["observed"],
                _identity(report, name), out["errors"], _headline(report), _scope(report),
                [line for line in map(accuracy_line, report.runs) if line], out["beyond_budget"], out["unobserved"],
                lines, provenance(report.implementation), incompleteness(report), total)


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


ACCEPTED_BEYOND = "Accepted beyond the budget"


def sections(v: View) -> list:
    """The sections after the requirement table: (heading, note, header, rows), for every format."""
    out = []
    if v.errors:
        out.append(("Largest error of each run",
                    "Finite results, accepted within the budget or rejected, in ULPs from the correctly rounded result; "
                    "elements accepted beyond the budget (reachable under the error model, an open alternative's bits or within an open input's stated bounds) and infinities or NaNs against numbers are "
                    "counted apart, in the lines under the title.",
                    ["run", "max ULP", "NaN mismatches", "at input (dy, x1, x2, beta)", "expected", "got"],
                    [[f"{d} {var}", m, n, f"{w.dy}, {w.x1}, {w.x2}, {w.beta} (case {w.case})"
                      if w else "", w.expected if w else "", got_text(w) if w else ""]
                     for d, var, m, n, w in v.errors]))
    if v.beyond_budget:
        out.append((ACCEPTED_BEYOND, "Elements each requirement accepted although they are farther than the budget "
                    "from the correctly rounded result, each with the judge's reason: reachable under the profile's "
                    "error model (the evaluation, and the approximate operation or the flush it took), an open "
                    "alternative's bits (its name) or within an open input's stated bounds (which question); and "
                    "accepted results that are no distance at all. Not counted in the largest error.",
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

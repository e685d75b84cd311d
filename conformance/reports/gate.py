"""Comparing reports: the regression gate (new against a baseline) and the side-by-side matrix.

A regression is anything a CI system should stop on: a requirement that held and now does
not (fails, is waived, or is no longer checked), a run that disappeared, a largest ULP
error or a count of NaN mismatches that grew, or, on the same vectors, more failing
elements in a requirement that already failed. A gate compares like with like: reports of
another profile, vector set or scope (``mismatches``) are refused (:class:`Mismatch`, one line,
exit 2) unless the caller allows each difference; then what is comparable is compared and the
rest stated as notes ("not compared"). Another library build or implementation is a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.requirements import CATALOG_BY_ID
from sl1conf.conformance.requirements.results import Report
from sl1conf.conformance.reports.view import element_text

__all__ = ["GateResult", "Mismatch", "MISMATCHES", "mismatches", "gate", "label", "compare_rows", "column_labels"]

HELD = ("pass", "recorded")


@dataclass
class GateResult:
    regressions: list = field(default_factory=list)
    improvements: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def lines(self) -> list:
        return ([f"REGRESSION {r}" for r in self.regressions] + [f"improved   {i}" for i in self.improvements]
                + [f"note: {n}" for n in self.notes])


def label(report: Report) -> str:
    """``impl on profile``, short enough for a column head (a library is named by its file)."""
    impl = report.invocation.get("impl") or report.implementation["adapter"]
    if impl.startswith("ctypes:") and "/" in impl:
        impl = "ctypes:" + impl.rsplit("/", 1)[1]
    return f"{impl} on {report.profile['name']}"


def _runs(report: Report) -> dict:
    return {(r.dtype, r.variant): r for r in report.runs}


def _worst_text(req) -> str:
    """``; worst <element>`` of a RequirementResult or a FamilyResult, if it has a worst element."""
    w = req.worst
    if not w:
        return ""
    return f"; worst {element_text(w)}"


MISMATCHES = ("profile", "vectors", "scope")
"""What may differ between a new report and its baseline only when ``--allow-mismatch`` says so:
the profile that judged (its file's SHA-256), the vector set of a dtype both certified (its
manifest's SHA-256), and the scope (``--quick``, ``--only``, the runs asked for, the requirements
judged)."""


def _asked(report: Report) -> set:
    """The (dtype, variant) runs a report was asked for: those it has and those it asked for that
    the implementation lacked (``missing_runs``: a run lost that way is a regression, not another
    scope). The runs narrowing left out (``not_asked``) are not: another scope. (A report written
    before ``not_asked`` existed left ``missing_runs`` out when narrowed: its lost runs read as
    not asked for.)"""
    return {(r.dtype, r.variant) for r in report.runs} | {tuple(m.split()) for m in report.missing}


def _only(report: Report) -> list:
    """``--only``'s requirements as a set (the order and case they were given in say nothing)."""
    return sorted({i.upper() for i in report.only})


def _requirement_ids(report: Report) -> set:
    return {q.id for run in report.runs for q in run.requirements}


def _ids(keys) -> str:
    return ", ".join(sorted(f"{k[0]} {k[1]}" if isinstance(k, tuple) else k for k in keys))


def mismatches(new: Report, old: Report) -> dict:
    """What makes the two reports unlike (MISMATCHES): what -> the words naming how they differ."""
    out = {}
    if new.profile.get("sha256") != old.profile.get("sha256"):
        same = new.profile["name"] == old.profile["name"]
        out["profile"] = (f"the profile differs: {old.profile['name']} -> {new.profile['name']}"
                          + (" (its file's SHA-256 differs)" if same else ""))
    common = sorted(new.vectors.keys() & old.vectors.keys())
    other = [d for d in common if new.vectors[d].get("manifest_sha256") != old.vectors[d].get("manifest_sha256")]
    if other and new.quick == old.quick:  # --quick against full: other vectors by that choice, a scope said below
        out["vectors"] = f"the vector sets differ ({', '.join(other)}: another manifest SHA-256)"
    scope = []
    if new.quick != old.quick:
        scope.append(f"{'--quick' if old.quick else 'full'} -> {'--quick' if new.quick else 'full'}")
    if _only(new) != _only(old):
        scope.append(f"--only {','.join(old.only) or '(all)'} -> {','.join(new.only) or '(all)'}")
    na, oa = _asked(new), _asked(old)
    if na != oa:
        scope.append("runs " + "; ".join(t for t in (
            f"only in the baseline: {_ids(oa - na)}" if oa - na else "",
            f"only in the new report: {_ids(na - oa)}" if na - oa else "") if t))
    judged_new, judged_old = _requirement_ids(new), _requirement_ids(old)
    # another catalog (another suite version) judges other requirements; with the same suite and the
    # same --only, a requirement gone from the new report is a regression (gate), not another scope
    if (judged_new and judged_old and judged_new != judged_old and _only(new) == _only(old)
            and new.suite_version != old.suite_version):
        scope.append("requirements " + "; ".join(t for t in (
            f"only in the baseline: {_ids(judged_old - judged_new)}" if judged_old - judged_new else "",
            f"only in the new report: {_ids(judged_new - judged_old)}" if judged_new - judged_old else "") if t))
    if scope:
        out["scope"] = "the scope differs (" + "; ".join(scope) + ")"
    return out


def _identity_notes(new: Report, old: Report, out: GateResult, found: dict) -> tuple:
    """Notes on what differs between the two reports' setups (``found``: their mismatches, each
    allowed); (whether counts are comparable, whether what the profile accepted is)."""
    ni, oi = new.implementation, old.implementation
    if ni.get("sha256") and oi.get("sha256") and ni["sha256"] != oi["sha256"]:
        out.notes.append(f"the library changed: SHA-256 {oi['sha256'][:12]} -> {ni['sha256'][:12]}")
    if ni["adapter"] != oi["adapter"]:
        out.notes.append(f"the implementation changed: {oi['adapter']} -> {ni['adapter']}")
    if "profile" in found:
        out.notes.append(f"{found['profile']} (allowed): statuses are compared, each judged by its own profile; "
                         "elements accepted beyond the budget are not compared")
    if "vectors" in found:
        out.notes.append(f"{found['vectors']} (allowed): counts and largest errors are not compared")
    if "scope" in found:
        out.notes.append(f"{found['scope']} (allowed): only what both cover is compared, and counts and largest "
                         "errors are not")
    same = "vectors" not in found and new.quick == old.quick and _only(new) == _only(old)  # the runs' counts are alike
    return same, "profile" not in found


class Mismatch(SuiteError):
    """The two reports are unlike in ways ``--allow-mismatch`` did not allow: one line."""


def gate(new: Report, old: Report, allow=()) -> GateResult:
    """What got worse (and better) from ``old`` (the baseline) to ``new``. Reports that differ
    in profile, vectors or scope (``mismatches``) are compared only where ``allow`` names each
    difference; otherwise :class:`Mismatch`, naming every one."""
    found = mismatches(new, old)
    refused = [what for what in found if what not in allow]
    if refused:
        raise Mismatch("; ".join(found[w] for w in refused) + ": a gate compares like with like; pass --allow-mismatch "
                       + ",".join(refused) + " to compare what is comparable")
    out = GateResult()
    same_vectors, same_profile = _identity_notes(new, old, out, found)
    nruns, asked_new = _runs(new), _asked(new)
    both_ids = _requirement_ids(new) & _requirement_ids(old) if "scope" in found else None
    for key, orun in _runs(old).items():
        where = f"{key[0]} {key[1]}"
        nrun = nruns.get(key)
        if nrun is None:
            if key in asked_new:  # asked for and lacking: the implementation lost it
                out.regressions.append(f"{where}: the run is missing from the new report")
            else:  # another scope (allowed): not asked for in the new report
                why = f" (not asked for: {' '.join(new.narrowed)})" if where in new.not_asked and new.narrowed else ""
                out.notes.append(f"{where}: not in the new report's scope{why}, not compared")
            continue
        if orun.verdict == "pass" and nrun.verdict == "incomplete":
            out.regressions.append(f"{where}: pass -> INCOMPLETE ({'; '.join(nrun.incomplete)})")
        nreqs = {r.id: r for r in nrun.requirements}
        for oreq in orun.requirements:
            rid, title = oreq.id, oreq.title
            nreq = nreqs.get(rid)
            if nreq is None:
                if both_ids is not None and rid not in both_ids:
                    continue  # outside the new report's scope (allowed): said once below
                if oreq.status in HELD:
                    out.regressions.append(f"{where} {rid} {title}: no longer in the report")
                continue
            os_, ns = oreq.status, nreq.status
            if os_ in HELD and ns not in HELD:
                counts = f" ({nreq.failed} of {nreq.checked} failed{_worst_text(nreq)})" \
                    if ns in ("fail", "waived") else ""
                out.regressions.append(f"{where} {rid} {title}: {os_} -> {ns.upper()}{counts}")
            elif os_ not in HELD and ns in HELD and os_ != "not-applicable":
                out.improvements.append(f"{where} {rid} {title}: {os_} -> {ns}")
            elif os_ == "fail" and ns == "waived":
                out.notes.append(f"{where} {rid} {title}: still fails, now waived ({nreq.waiver or 'no reason'})")
            elif os_ == ns == "fail" and same_vectors and nreq.failed > oreq.failed:
                out.regressions.append(f"{where} {rid} {title}: still fails, with more failing elements "
                                       f"({oreq.failed} -> {nreq.failed}){_worst_text(nreq)}")
            if os_ == ns == "fail":  # already failing: a family that held and now fails is still news
                nfam = {f.family: f for f in nreq.families}
                for of in oreq.families:
                    nf = nfam.get(of.family)
                    if of.status == "pass" and nf is not None and nf.status == "fail":
                        out.regressions.append(f"{where} {rid} {title} [{of.family}]: pass -> FAIL "
                                               f"({nf.failed} of {nf.checked} failed{_worst_text(nf)})")
            ow, nw = (oreq.worst.ulp if oreq.worst else None), (nreq.worst.ulp if nreq.worst else None)
            if isinstance(ow, int) and isinstance(nw, int) and nw > ow and os_ == ns == "fail":
                out.regressions.append(f"{where} {rid} {title}: worst failing error grew {ow} -> {nw} ULP")
        oerr, nerr = orun.errors, nrun.errors
        if oerr and nerr and not same_vectors:
            if (nerr.max_ulp, nerr.nan_mismatches) != (oerr.max_ulp, oerr.nan_mismatches):
                out.notes.append(f"{where} largest error {oerr.max_ulp} -> {nerr.max_ulp} ULP, NaN against a "
                                 f"number {oerr.nan_mismatches} -> {nerr.nan_mismatches} (not compared)")
        elif oerr and nerr:
            if nerr.max_ulp > oerr.max_ulp:
                w = nerr.worst
                out.regressions.append(
                    f"{where} largest error grew: {oerr.max_ulp} -> {nerr.max_ulp} ULP"
                    + (f" ({element_text(w)})" if w else ""))
            elif nerr.max_ulp < oerr.max_ulp:
                out.improvements.append(f"{where} largest error: {oerr.max_ulp} -> {nerr.max_ulp} ULP")
            if nerr.nan_mismatches > oerr.nan_mismatches:
                out.regressions.append(f"{where} NaN against a number: {oerr.nan_mismatches} -> "
                                       f"{nerr.nan_mismatches} elements")
            if not same_profile:  # what each profile accepted beyond the budget is its own
                continue
            ofar, nfar = oerr.beyond_budget, nerr.beyond_budget
            before = ofar.elements if ofar else 0
            if nfar and nfar.elements > before:
                out.regressions.append(f"{where} elements accepted beyond the budget (reachable, an alternative or within open bounds): "
                                       f"{before} -> {nfar.elements} (up to {nfar.max_ulp} ULP)")
            for kind, seen in nerr.not_a_distance.items():
                was = oerr.not_a_distance.get(kind)
                before = was.elements if was else 0
                if seen.elements > before:
                    out.regressions.append(f"{where} {kind}: {before} -> {seen.elements} elements")
    for key in sorted(nruns.keys() - _runs(old).keys()):
        out.notes.append(f"{key[0]} {key[1]}: new run, not in the baseline"
                         + (", not compared" if "scope" in found else ""))
    if both_ids is not None:
        for side, ids in (("the baseline", _requirement_ids(old) - both_ids),
                          ("the new report", _requirement_ids(new) - both_ids)):
            if ids:
                out.notes.append(f"requirements only in {side}, not compared: {_ids(ids)}")
    return out


def _cell(runs: list, rid: str) -> str:
    """One requirement over a report's runs: one status if all agree, else which runs failed."""
    statuses = {}
    for run in runs:
        for r in run.requirements:
            if r.id == rid:
                statuses[f"{run.dtype} {run.variant}"] = r
    if not statuses:
        return "-"
    kinds = {r.status for r in statuses.values()}
    if kinds == {"not-applicable"}:
        return "n/a"
    parts = []
    for status, shown in (("fail", "FAIL"), ("waived", "waived")):
        runs = [k for k, r in statuses.items() if r.status == status]
        if runs:
            parts.append(shown if len(runs) == len(statuses) else f"{shown} ({', '.join(runs)})")
    if parts:
        return ", ".join(parts)
    return "recorded" if kinds <= {"recorded", "not-applicable"} else "pass"


def _folder(source) -> str:
    """The report folder a path names (a folder, or a report.json in one), as it was given."""
    from pathlib import PurePath

    p = PurePath(str(source))
    return str(p.parent if p.name == "report.json" else p)


def column_labels(reports: list, sources=None) -> list:
    """One column head per report: ``impl on profile``, and where that repeats (the same
    implementation on the same profile, another date or scope), the report's folder beside it
    (``sources``: the paths the reports were read from); only a folder given twice is numbered."""
    labels = [label(r) for r in reports]
    if sources is not None:
        folders = [_folder(s) for s in sources]
        labels = [f"{text} ({folder})" if labels.count(text) > 1 else text for text, folder in zip(labels, folders)]
    out = []
    for text in labels:  # the very same column twice: number the repeats
        seen = sum(x == text or x.startswith(text + " (#") for x in out)
        out.append(f"{text} (#{seen + 1})" if seen else text)
    return out


def _accepted_in_run(errors) -> tuple:
    """What one run (its ErrorSummary) accepted beyond the budget: (elements at a distance, the
    largest distance, results that are no distance accepted beyond the budget). A result that is no
    distance and was not accepted (the report's "none accepted": it failed, or was exact) is not counted."""
    far = errors.beyond_budget
    return ((far.elements, far.max_ulp) if far else (0, 0)) + (
        sum(k.accepted for k in errors.not_a_distance.values()),)


def compare_rows(reports: list, sources=None) -> tuple:
    """(header, rows): the side-by-side matrix of several reports (Report each, one column each);
    ``sources``: the paths they were read from, which label the columns of repeated implementations."""
    header = ["", *column_labels(reports, sources)]
    rows = [["verdict", *(r.verdict.upper() for r in reports)],
            ["scope", *("; ".join((["--quick"] if r.quick else []) + (
                ["--only " + ",".join(r.only)] if r.only else [])) or "full" for r in reports)],
            ["date", *(r.envelope.get("created", "?")[:16].replace("T", " ") for r in reports)]]
    dtypes = sorted({run.dtype for r in reports for run in r.runs})
    for d in dtypes:
        cells = []
        for r in reports:
            errs = [run.errors.max_ulp for run in r.runs if run.dtype == d and run.errors]
            cells.append(str(max(errs)) if errs else "-")
        rows.append([f"largest error {d} (ULP)", *cells])
    for d in dtypes:  # what the largest error leaves out: accepted-far elements, infinities and NaNs, per run
        cells = []
        for r in reports:
            runs = [_accepted_in_run(run.errors) for run in r.runs if run.dtype == d and run.errors]
            if not runs:
                cells.append("-")
                continue
            most, top, special = (max(x[i] for x in runs) for i in range(3))  # each the most in any one run
            text = (f"{most:,} " + (f"up to {top:,} ULP" if top else "zeros of the other sign")) if most else "0"
            cells.append(text + (f"; {special:,} no distance (infinity, NaN, the other sign, flushed)" if special else ""))
        rows.append([f"accepted beyond the budget {d} (most in a run)", *cells])
    for d in dtypes:
        cells = []
        for r in reports:
            seen = {}
            for run in r.runs:
                for req in run.requirements:
                    entry = CATALOG_BY_ID.get(req.id)
                    if run.dtype == d and entry is not None and entry.reports_model:
                        o, combo = req.observed, req.model_parts
                        text = (o if isinstance(o, str) else ", ".join(o)) if not combo else " + ".join(
                            f"{model} ({where})" for model, where in combo)
                        seen.setdefault("none" if text.startswith("none") else text, []).append(run.variant)
            cells.append("-" if not seen else next(iter(seen)) if len(seen) == 1 else
                         "; ".join(f"{' and '.join(vs)}: {m}" for m, vs in seen.items()))
        rows.append([f"model matched {d}", *cells])
    ids = []
    for r in reports:
        for run in r.runs:
            ids += [(q.id, q.title) for q in run.requirements if (q.id, q.title) not in ids]
    for rid, title in sorted(ids):
        rows.append([f"{rid} {title}", *(_cell(r.runs, rid) for r in reports)])
    return header, rows

"""Comparing reports: the regression gate (new against a baseline) and the side-by-side matrix.

A regression is anything a CI system should stop on: a requirement that held and now does
not (fails, is waived, or is no longer checked), a run that disappeared, a largest ULP
error or a count of NaN mismatches that grew, or, on the same vectors, more failing
elements in a requirement that already failed. Differences that make counts
incomparable (other vectors, another library build, another profile) are stated as notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sl1conf.conformance.requirements import CATALOG_BY_ID
from sl1conf.conformance.requirements.results import Report
from sl1conf.conformance.reports.view import element_text

__all__ = ["GateResult", "gate", "label", "compare_rows"]

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


def _identity_notes(new: Report, old: Report, out: GateResult) -> bool:
    """Notes on what differs between the two reports' setups; True if the vectors are the same."""
    ni, oi = new.implementation, old.implementation
    if ni.get("sha256") and oi.get("sha256") and ni["sha256"] != oi["sha256"]:
        out.notes.append(f"the library changed: SHA-256 {oi['sha256'][:12]} -> {ni['sha256'][:12]}")
    if ni["adapter"] != oi["adapter"]:
        out.notes.append(f"the implementation changed: {oi['adapter']} -> {ni['adapter']}")
    if new.profile["sha256"] != old.profile["sha256"]:
        out.notes.append(f"the profile changed: {old.profile['name']} -> {new.profile['name']} "
                         "(its file's SHA-256 differs)")
    common = new.vectors.keys() & old.vectors.keys()
    same = all(new.vectors[d]["manifest_sha256"] == old.vectors[d]["manifest_sha256"] for d in common)
    if not same:
        out.notes.append("the vector sets differ, so counts and largest errors are not compared")
    if new.envelope.get("only") != old.envelope.get("only") or new.envelope.get("quick") != old.envelope.get("quick"):
        out.notes.append("the two runs had a different scope (--quick or --only), so counts and largest "
                         "errors are not compared")
        same = False
    return same


def gate(new: Report, old: Report) -> GateResult:
    """What got worse (and better) from ``old`` (the baseline) to ``new``."""
    out = GateResult()
    same_vectors = _identity_notes(new, old, out)
    nruns = _runs(new)
    for key, orun in _runs(old).items():
        where = f"{key[0]} {key[1]}"
        nrun = nruns.get(key)
        if nrun is None:
            out.regressions.append(f"{where}: the run is missing from the new report")
            continue
        if orun.verdict == "pass" and nrun.verdict == "incomplete":
            out.regressions.append(f"{where}: pass -> INCOMPLETE ({'; '.join(nrun.incomplete)})")
        nreqs = {r.id: r for r in nrun.requirements}
        for oreq in orun.requirements:
            rid, title = oreq.id, oreq.title
            nreq = nreqs.get(rid)
            if nreq is None:
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
    for key in nruns.keys() - _runs(old).keys():
        out.notes.append(f"{key[0]} {key[1]}: new run, not in the baseline")
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


def compare_rows(reports: list) -> tuple:
    """(header, rows): the side-by-side matrix of several reports (Report each, one column each)."""
    labels = []
    for r in reports:  # the same implementation twice (another date, scope): number the repeats
        text = label(r)
        labels.append(text if text not in labels else f"{text} (#{sum(x.startswith(text) for x in labels) + 1})")
    header = ["", *labels]
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
    for d in dtypes:  # what the largest error leaves out: accepted-far elements, infinities and NaNs
        cells = []
        for r in reports:
            errs = [run.errors for run in r.runs if run.dtype == d and run.errors]
            far = [e.beyond_budget for e in errs if e.beyond_budget]
            special = sum(k.elements for e in errs for k in e.not_a_distance.values())
            top = max((f.max_ulp for f in far), default=0)
            text = (f"{max(f.elements for f in far):,} " + (f"up to {top:,} ULP" if top else "zeros of the other sign")
                    if far else "0" if errs else "-")
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

"""``junit.xml``: the report as CI systems read test results (Jenkins, GitLab, GitHub checks).

The test cases are named as the pytest plugin names its items (conformance/pytest_plugin.py)
and pytest's ``--junitxml`` writes them, so a CI page reads the same names whichever of the
two ran: per run (dtype and variant) ``classname="sl1conf.fp16-p"`` with ``name="R02"`` for
each requirement and ``name="completeness"``; a requirement judged per family (R01) has one
case per family of the run's vectors, ``classname="sl1conf.fp16-p.R01"``,
``name="boundary-exact"`` (a family nothing was judged in is skipped, as the plugin skips
it), and a failure about the whole run (R01's rounding bias) one more, ``name="over-the-run"``;
runs the profile lists and the implementation lacks are ``classname="sl1conf"``,
``name="missing-runs"``. One test suite per run. A failing case is a <failure> whose message
is its counts and worst input and whose text holds the statement and the reproduction
commands; not applicable is <skipped>; recorded behaviour and waivers pass and go to
<system-out>, and each run's suite has a property ``sl1conf_waiver`` per line certify prints of
the waivers that concerns it (what the run waived and every waiver's use where it waived
something, the stale waivers elsewhere), as the plugin's JUnit has them.

Times: the root's ``time`` is the run's ``duration_s``; each suite's is its share by elements
(one certify judges all runs in one process), and each case's an equal part of its suite's:
every requirement is judged from the same calls, so no case has a time of its own. A report
without ``duration_s`` (an older one) has no times rather than false zeros, and the
missing runs, where nothing ran, none either.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sl1conf.conformance.reports.view import View, by_text, element_text, failure_text, over_the_run
from sl1conf.conformance.requirements import CATALOG_BY_ID
from sl1conf.conformance.requirements.results import use_lines, waived_line

__all__ = ["render_junit", "case_names"]

ROOT = "sl1conf"
"""The first part of every classname: the plugin's root collector (its items' node ids
begin ``sl1conf::``)."""


WAIVER_PROPERTY = "sl1conf_waiver"
"""A run's suite property per line certify prints of the waivers, as the pytest plugin writes them
to its JUnit: a CI page that shows a suite's properties shows that a pass rests on waivers."""


def _waiver_lines(report, run) -> list:
    """What certify prints of the waivers that concerns a run: where it waived requirements,
    those (``fp16 p: waived: R03``) and every waiver's use over the report
    (``requirements.results.use_lines``: what the pass rests on); elsewhere only the waivers that
    matched nothing (stale in every run: ``waiver R05 matched nothing: ...``)."""
    waived = [r.id for r in run.requirements if r.status == "waived"]
    used = report.waivers or []
    if not waived:
        return use_lines([w for w in used if not w.get("matched")])
    return [waived_line(run.dtype, run.variant, waived), *use_lines(used)]


def _case(suite, classname: str, name: str, status: str, message: str = "", text: str = "", out: str = ""):
    tc = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if status == "fail":
        ET.SubElement(tc, "failure", message=message, type="requirement").text = text
    elif status in ("not-applicable", "not-judged"):
        ET.SubElement(tc, "skipped", message="not applicable to this implementation or vector set"
                      if status == "not-applicable" else message)
    if out:
        ET.SubElement(tc, "system-out").text = out
    return status


def _count(suite, statuses: list, total: dict) -> None:
    counts = {"tests": len(statuses), "failures": statuses.count("fail"),
              "skipped": sum(s in ("not-applicable", "not-judged") for s in statuses)}
    for k, n in counts.items():
        suite.set(k, str(n))
        total[k] += n
    suite.set("errors", "0")


def _time(element, seconds: float) -> None:
    element.set("time", f"{seconds:.3f}")


def _worst(w) -> str:
    return f"worst: {element_text(w)}"


def _families(report, run, r) -> list:
    """The families the per-family cases of ``r`` are: those of the run's vectors (as the plugin
    collects them), then any judged family the report lists beside them."""
    names = list((report.vectors.get(run.dtype) or {}).get("families") or [])
    return names + [f.family for f in r.families if f.family not in names]


def _requirement_out(r, observed: dict, d: str, var: str) -> str:
    """A requirement's system-out: what was observed, what was accepted beyond the budget, its waiver."""
    far = r.beyond_budget
    accepted = (f"accepted beyond the budget: {far.elements} elements, each with the judge's reason: "
                + by_text(far.by) + f", up to {far.max_ulp} ULP") if far else ""
    return "\n".join(t for t in (observed.get((d, var, r.id), ""), accepted,
                                 f"waived: {r.waiver}" if r.waiver else "") if t)


def _one_case(suite, classname: str, r, f, out: str) -> str:
    """A requirement judged as a whole: one case."""
    message = text = ""
    if f:
        counts = f"{r.id} {r.title}: {r.failed} of {r.checked} failed"  # this run's own
        message = f"{counts}; " + "".join(f"cause: {c}; " for c in f.causes) + (_worst(f.worst) if f.worst else f.detail)
        if f.over_the_run:
            message = f"{message}; over the run: {f.over_the_run}" if f.worst or f.detail else f"{counts}; {f.over_the_run}"
        text = failure_text(f)
    return _case(suite, classname, r.id, r.status, message, text, out)


def _family_cases(suite, classname: str, report, run, r, f) -> list:
    """A requirement judged per family: one case per family, as the plugin's items, and one for
    what it found over the run, in no family (always a case)."""
    statuses, judged = [], {fam.family: fam for fam in r.families}
    for name in _families(report, run, r):
        fam = judged.get(name)
        if fam is None:
            statuses.append(_case(suite, f"{classname}.{r.id}", name, "not-judged",
                                  f"no element of family {name} was judged in {run.dtype} {run.variant}"))
            continue
        w = fam.worst
        msg = f"{r.id} {r.title}, family {name}: {fam.failed} of {fam.checked} failed" + (f"; {_worst(w)}" if w else "")
        statuses.append(_case(suite, f"{classname}.{r.id}", name, fam.status, msg,
                              f"{msg}\n\n{failure_text(f)}" if f and fam.status == "fail" else msg,
                              f"waived: {fam.waiver}" if fam.waiver else ""))
    status, found = over_the_run(r)
    statuses.append(_case(suite, f"{classname}.{r.id}", "over-the-run", status,
                          f"over the run: {found}", failure_text(f) if f and status == "fail" else found,
                          f"waived: {r.waiver}" if status == "waived" and r.waiver else ""))
    return statuses


def _run_suite(root, v, run, failures: dict, observed: dict):
    """One run's test suite: its properties (who was tested where), a case per requirement (per
    family where it is judged per family) and the completeness case; (the suite, its statuses)."""
    report, d, var = v.report, run.dtype, run.variant
    classname = f"{ROOT}.{d}-{var}"
    suite = ET.SubElement(root, "testsuite", name=f"{v.title}: {d} {var}", timestamp=report.created)
    props = ET.SubElement(suite, "properties")  # who was tested where (JUnit's hostname is not recorded)
    for label, value in v.identity:
        ET.SubElement(props, "property", name=label, value=str(value))
    for line in _waiver_lines(report, run):
        ET.SubElement(props, "property", name=WAIVER_PROPERTY, value=line)
    statuses, suite_out = [], []
    for r in run.requirements:
        f = failures.get((d, var, r.id))
        out = _requirement_out(r, observed, d, var)
        req = CATALOG_BY_ID.get(r.id)
        if not r.per_family and not (req is not None and req.per_family):
            statuses.append(_one_case(suite, classname, r, f, out))
            continue
        if out:
            suite_out.append(f"{r.id} {r.title}: {out}")
        statuses += _family_cases(suite, classname, report, run, r, f)
    incomplete = run.verdict == "incomplete"  # failed nothing, checked too little: not a pass in CI either
    why = "; ".join(run.incomplete)
    statuses.append(_case(suite, classname, "completeness", "fail" if incomplete else "pass", f"incomplete: {why}", why))
    if suite_out:
        ET.SubElement(suite, "system-out").text = "\n".join(suite_out)
    return suite, statuses


def render_junit(v: View) -> str:
    """``junit.xml`` of a report's view (reports.view)."""
    report = v.report
    failures = {(f.dtype, var, f.id): f for f in v.failures for var in f.variants}
    observed = {(d, var, rid): text for d, var, rid, _, text in v.observed}
    root = ET.Element("testsuites", name=f"sl1conf: {v.title}")
    total = {"tests": 0, "failures": 0, "skipped": 0}
    duration = report.duration_s
    elements = sum(run.elements for run in report.runs) or 1
    for run in report.runs:
        suite, statuses = _run_suite(root, v, run, failures, observed)
        _count(suite, statuses, total)
        if duration is not None:
            share = duration * run.elements / elements if len(report.runs) > 1 else duration
            _time(suite, share)
            for tc in suite.iter("testcase"):
                _time(tc, share / len(statuses))
    if report.missing:
        suite = ET.SubElement(root, "testsuite", name=f"{v.title}: runs the implementation lacks",
                              timestamp=report.created)
        listed = ", ".join(report.missing)
        statuses = [_case(suite, ROOT, "missing-runs", "fail",
                          f"not offered by the implementation, though the profile lists them: {listed}", listed)]
        _count(suite, statuses, total)  # no time: nothing ran for them
    for k, n in total.items():
        root.set(k, str(n))
    root.set("errors", "0")
    if duration is not None:
        _time(root, duration)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def case_names(xml_text: str) -> set:
    """(classname, name) of every test case of a JUnit file (certify's or pytest's)."""
    return {(tc.get("classname"), tc.get("name")) for tc in ET.fromstring(xml_text).iter("testcase")}

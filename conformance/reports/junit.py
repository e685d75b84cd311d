"""``junit.xml``: the report as CI systems read test results (Jenkins, GitLab, GitHub checks).

One test suite per run (dtype and variant), one test case per requirement, and for R01
one per family as well, so a CI page names the family that broke. A failing requirement
is a <failure> whose message is its worst input and whose text holds the reproduction
commands; not applicable is <skipped>; recorded behaviour passes and goes to <system-out>.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sl1conf.conformance.reports.view import distance_text, view

__all__ = ["render_junit"]


def _case(suite, classname: str, name: str, status: str, message: str = "", text: str = "", out: str = ""):
    tc = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
    if status == "fail":
        ET.SubElement(tc, "failure", message=message, type="requirement").text = text
    elif status == "not-applicable":
        ET.SubElement(tc, "skipped", message="not applicable to this implementation or vector set")
    if out:
        ET.SubElement(tc, "system-out").text = out
    return status


def _count(suite, statuses: list, total: dict) -> None:
    counts = {"tests": len(statuses), "failures": statuses.count("fail"), "skipped": statuses.count("not-applicable")}
    for k, n in counts.items():
        suite.set(k, str(n))
        total[k] += n
    suite.set("errors", "0")


def render_junit(report: dict) -> str:
    v = view(report)
    failures = {(f.dtype, var, f.id): f for f in v.failures for var in f.variants}
    observed = {(d, var, rid): text for d, var, rid, _, text in v.observed}
    root = ET.Element("testsuites", name=f"sl1conf: {v.title}")
    total = {"tests": 0, "failures": 0, "skipped": 0}
    for run in report["runs"]:
        d, var = run["dtype"], run["variant"]
        classname = f"sl1conf.{report['profile']['name']}.{d}.{var}"
        suite = ET.SubElement(root, "testsuite", name=f"{v.title}: {d} {var}", timestamp=report.get("created", ""))
        props = ET.SubElement(suite, "properties")  # who was tested where (JUnit's hostname is not recorded)
        for label, value in v.identity:
            ET.SubElement(props, "property", name=label, value=str(value))
        statuses = []
        for r in run["requirements"]:
            f = failures.get((d, var, r["id"]))
            message = text = ""
            if f:
                w = f.worst
                counts = f"{r.get('failed', 0)} of {r.get('checked', 0)} failed"  # this run's own
                message = (f"{counts}; worst: dy={w['dy']} x1={w['x1']} x2={w['x2']} "
                           f"beta={w['beta']} expected {w['expected']} got {w['got']} ({distance_text(w)})"
                           if w else f"{counts}; {f.detail}")
                if f.over_the_run:
                    message = f"{message}; over the run: {f.over_the_run}" if w or f.detail else f"{counts}; {f.over_the_run}"
                text = (f.statement + "".join(f"\n\nDiagnosis: {line}" for line in f.diagnosis) + "\n\nReproduce" + (f" ({f.reproduction})" if f.reproduction else "") + ":\n"
                        + "\n".join(f.commands))
            far = r.get("accepted_far")
            accepted = (f"accepted beyond the budget: {far['elements']} elements as "
                        + ", ".join(f"{name} ({n})" for name, n in far["by"].items())
                        + f", up to {far['max_ulp']} ULP") if far else ""
            out = "\n".join(t for t in (observed.get((d, var, r["id"]), ""), accepted) if t)
            statuses.append(_case(suite, classname, f"{r['id']} {r['title']}", r["status"], message, text, out))
            for fam in r.get("families") or []:
                w = fam.get("worst")
                msg = (f"{fam['failed']} of {fam['checked']} failed; worst: dy={w['dy']} x1={w['x1']} x2={w['x2']} "
                       f"beta={w['beta']} expected {w['expected']} got {w['got']}" if w else "")
                statuses.append(_case(suite, classname, f"{r['id']} {r['title']} [{fam['family']}]",
                                      fam["status"], msg, msg))
        if run["verdict"] == "incomplete":  # failed nothing, checked too little: not a pass in CI either
            why = "; ".join(run.get("incomplete", []))
            statuses.append(_case(suite, classname, "completeness", "fail", f"incomplete: {why}", why))
        _count(suite, statuses, total)
    if report.get("missing_runs"):
        suite = ET.SubElement(root, "testsuite", name=f"{v.title}: runs the implementation lacks",
                              timestamp=report.get("created", ""))
        statuses = [_case(suite, f"sl1conf.{report['profile']['name']}", f"{run} offered", "fail",
                          "the profile lists this run; the implementation does not offer it", "") for run in
                    report["missing_runs"]]
        _count(suite, statuses, total)
    for k, n in total.items():
        root.set(k, str(n))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

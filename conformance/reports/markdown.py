"""``report.md``: the report as a code review or a merge request shows it.

Order is what a reader needs first: the verdict naming the failing requirements, the
pass/fail matrix, then each failing requirement with its diagnosis, its worst input and the
commands that reproduce it, and only then the full table (failures first), the worst error of every run, what was observed where the manual is silent, and
the identity of what was tested.
"""

from __future__ import annotations

from sl1conf.conformance.reports.causes import causes_heading
from sl1conf.conformance.reports.view import (
    View, all_held, decimal, distance_text, failure_said, matrix, sections, where_text,
)

__all__ = ["render_markdown", "markdown_table"]


def _cell(value) -> str:
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list, rows: list) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _element(dtype: str, e) -> list:
    """An element (an ElementRecord) with its values in decimal and in bits, and where it is."""
    d = {n: decimal(dtype, getattr(e, n)) for n in ("dy", "x1", "x2", "beta", "expected", "got")}
    lines = [f"- input: dy = {d['dy']} (`{e.dy}`), x1 = {d['x1']} (`{e.x1}`), "
             f"x2 = {d['x2']} (`{e.x2}`), beta = {d['beta']} (`{e.beta}`); "
             f"{where_text(e)}",
             f"- expected `{e.expected}` ({d['expected']}), "
             + (f"got nothing: not written (still the fill pattern `{e.got}`)" if e.not_written else
                f"got `{e.got}` ({d['got']}): {distance_text(e)}")]
    return lines + ([f"- {e.detail}"] if e.detail else [])


def render_markdown(v: View) -> str:
    """``report.md`` of a report's view (reports.view)."""
    report = v.report
    out = [f"# {v.headline}: {v.title}", ""]
    out += [f"{v.runs_line}. Suite sl1conf {report.suite_version}, {report.created}.", ""]
    if v.provenance:
        out += [f"Files: {v.provenance}.", ""]
    if v.causes:
        out += [f"**Causes** ({causes_heading(len(v.causes), v.causes_total or len(v.causes))}):", ""] + [
            f"- {line}" for line in v.causes] + [""]
    if report.runs:
        header, rows = matrix(report)
        out += [markdown_table(header, [[*row[:2], *(f"**{c.upper()}**" if c == "fail" else c for c in row[2:])]
                                        for row in rows]), ""]
    missing = v.incomplete
    if missing:
        out += ["**Incomplete:**", ""] + [f"- {line}" for line in missing] + [""]
    if v.accuracy:
        out += ["**Accuracy:**", ""] + [f"- {line}" for line in v.accuracy] + [""]
    if v.scope:
        out += [f"Scope: {v.scope}.", ""]
    if v.failures:
        out += [f"## Failures ({len(v.failures)})", ""]
        for f in v.failures:
            for s in failure_said(f):
                if s.kind == "heading":
                    out += [f"### {s.text}", ""]
                elif s.kind == "statement":
                    out += [f"> {s.text}", ""]
                elif s.kind == "diagnosis":
                    out += [f"{s.label}:", ""] + [f"- {line}" for line in s.lines] + [""]
                elif s.kind == "worst":
                    out += [f"{s.label}:", *_element(f.dtype, s.element), ""]
                elif s.kind == "reproduce":
                    out += [f"{s.label}:", "", "```sh", *s.lines, "```", ""]
                else:
                    out += [f"{s.label}: {s.text}", ""]
    else:
        out += [all_held(v), ""]
    out += ["## Requirements", "",
            markdown_table(["run", "id", "requirement", "kind", "status", "checked", "failed", "worst ULP"],
                           [[f"{r.dtype} {r.variant}", r.id, r.title, r.kind,
                             f"**{r.status.upper()}**" if r.status == "fail" else r.status,
                             r.checked, r.failed, r.worst_ulp] for r in v.rows]), ""]
    for heading, note, header, rows in sections(v):
        out += [f"## {heading}", ""] + ([note, ""] if note else []) + [markdown_table(header, rows), ""]
    return "\n".join(out)

"""``report.html``: one self-contained page (inline CSS and SVG, no script, no network).

Same order as the Markdown: verdict naming the failing requirements, the pass/fail matrix,
failures with their diagnosis, worst input and reproduction commands, then the other plots, then the full table and the rest. Every text from the report
is escaped; nothing is fetched, so the file opens anywhere, offline, and can be mailed.
"""

from __future__ import annotations

from html import escape

from sl1conf.conformance.reports.causes import causes_heading
from sl1conf.conformance.reports.plots import all_plots
from sl1conf.conformance.reports.view import (
    ACCEPTED_BEYOND, View, all_held, decimal, distance_text, failure_said, sections, where_text,
)

__all__ = ["render_html", "render_table_page"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#1b1b1b;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:14px 0 6px}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:700}
.pass{background:#2e7d32} .fail{background:#c62828} .waived{background:#ef6c00} .recorded{background:#1565c0}
.not-applicable{background:#9e9e9e} .incomplete{background:#6a1b9a}
.failure{border:2px solid #c62828;border-radius:6px;padding:8px 14px;margin:10px 0;background:#fff6f6}
.statement{color:#555;font-style:italic}
pre{background:#f4f4f4;padding:8px;overflow-x:auto;font-size:12.5px;white-space:pre-wrap;overflow-wrap:anywhere}
code{font-size:12.5px}
table{border-collapse:collapse;font-size:13px;margin:6px 0} th,td{border:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top} th{background:#f4f4f4}
td.status span{padding:0 6px;border-radius:3px;color:#fff}
.far h2{color:#8a4b00;border-color:#f0c36d} .far td{background:#fff8e6} ul.accuracy li{color:#5a3d00}
figure{margin:12px 0} figcaption{color:#555;font-size:13px} figure svg{max-width:100%;height:auto}
"""


def _badge(status: str) -> str:
    return f'<span class="verdict {escape(status)}">{escape(status.upper())}</span>'


def _table(header: list, rows: list, raw_cols=()) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for i, c in enumerate(row):
            text = "" if c is None else str(c)
            cells.append(f"<td>{text if i in raw_cols else escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _element(label: str, dtype: str, e) -> str:
    """An element (an ElementRecord) as a table of its values in decimal and in bits."""
    unwritten = e.not_written
    distance = "not written: dx1 still holds the fill pattern" if unwritten else distance_text(e)
    names = ("dy", "x1", "x2", "beta", "expected", "got")
    rows = [["decimal", *(escape("not written" if unwritten and n == "got" else decimal(dtype, getattr(e, n)))
                         for n in names)],
            ["bits", *(f"<code>{escape(getattr(e, n))}</code>" + (" (the fill pattern)" if unwritten and n == "got" else "")
                       for n in names)]]
    return (f"<p>{escape(label)}: {escape(where_text(e))}: "
            f"<b>{escape(distance)}</b></p>" + _table(["", *names], rows, raw_cols=range(1, 7))
            + (f'<p class="detail">{escape(e.detail)}</p>' if e.detail else ""))


def render_html(v: View) -> str:
    """``report.html`` of a report's view (reports.view)."""
    report, missing = v.report, v.incomplete
    plots = all_plots(report)  # the pass/fail matrix first, right under the verdict; the others after the failures
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{escape(v.headline)}: {escape(v.title)}</title>", f"<style>{_CSS}</style></head><body>",
             f"<h1>{_badge(v.verdict)} {escape(v.title)}</h1>",
             *([f"<p><b>{escape(v.headline)}</b></p>"] if v.headline != v.verdict.upper() else []),
             "<p>" + escape(v.runs_line) + escape(f". Suite sl1conf {report.suite_version}, {report.created}.") + "</p>",
             *([f"<p>Files: {escape(v.provenance)}.</p>"] if v.provenance else []),
             *[f'<figure class="matrix">{svg}<figcaption>{escape(caption)}</figcaption></figure>'
               for caption, svg in plots[:1] if caption.startswith("Pass/fail matrix")],
             *(["<p><b>Incomplete:</b></p><ul>" + "".join(f"<li>{escape(line)}</li>" for line in missing)
                + "</ul>"] if missing else []),
             *([f"<p><b>Causes</b> ({escape(causes_heading(len(v.causes), v.causes_total or len(v.causes)))}):</p>"
                "<ul class=\"causes\">" + "".join(f"<li>{escape(line)}</li>" for line in v.causes) + "</ul>"]
               if v.causes else []),
             *(["<p><b>Accuracy:</b></p><ul class=\"accuracy\">" + "".join(f"<li>{escape(line)}</li>"
                                                                             for line in v.accuracy) + "</ul>"]
               if v.accuracy else []),
             *([f"<p>Scope: {escape(v.scope)}.</p>"] if v.scope else [])]
    if v.failures:
        parts.append(f"<h2>Failures ({len(v.failures)})</h2>")
        for f in v.failures:
            parts.append('<div class="failure">')
            for s in failure_said(f):
                if s.kind == "heading":
                    parts.append(f"<h3>{escape(s.text)}</h3>")
                elif s.kind == "statement":
                    parts.append(f'<p class="statement">{escape(s.text)}</p>')
                elif s.kind == "diagnosis":
                    parts.append(f'<p>{escape(s.label)}:</p><ul class="diagnosis">'
                                 + "".join(f"<li>{escape(line)}</li>" for line in s.lines) + "</ul>")
                elif s.kind == "worst":
                    parts.append(_element(s.label, f.dtype, s.element))
                elif s.kind == "reproduce":
                    parts.append(f"<p>{escape(s.label)}:</p><pre>" + escape("\n".join(s.lines)) + "</pre>")
                else:
                    parts.append(f'<p class="{s.kind}">{escape(s.label)}: {escape(s.text)}</p>')
            parts.append("</div>")
    else:
        parts.append(f"<p>{escape(all_held(v))}</p>")
    rest = [p for p in plots if not p[0].startswith("Pass/fail matrix")]
    if rest:
        parts.append("<h2>Plots</h2>")
        for caption, svg in rest:
            parts.append(f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>")
    parts.append("<h2>Requirements</h2>")
    parts.append(_table(["run", "id", "requirement", "kind", "status", "checked", "failed", "worst ULP"],
                        [[escape(f"{r.dtype} {r.variant}"), escape(r.id), escape(r.title), escape(r.kind),
                          f'<span class="verdict {escape(r.status)}">{escape(r.status)}</span>',
                          r.checked, r.failed, escape(str(r.worst_ulp if r.worst_ulp is not None else ""))]
                         for r in v.rows], raw_cols=(0, 1, 2, 3, 4, 7)))
    for heading, note, header, rows in sections(v):
        far = heading == ACCEPTED_BEYOND  # in their own colour: accepted, but not within the budget
        parts.append(("<div class=\"far\">" if far else "") + f"<h2>{escape(heading)}</h2>"
                     + (f"<p>{escape(note)}</p>" if note else ""))
        parts.append(_table(header, rows) + ("</div>" if far else ""))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def render_table_page(title: str, header: list, rows: list) -> str:
    """A self-contained page holding one table (``sl1conf compare --format html``)."""
    def cell(text):
        t = str(text)
        status = "fail" if t.startswith("FAIL") else "pass" if t in ("PASS", "pass") else ""
        return f'<span class="verdict {status}">{escape(t)}</span>' if status else escape(t)

    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
                      f"<h1>{escape(title)}</h1>",
                      _table(header, [[cell(c) for c in row] for row in rows],
                             raw_cols=range(len(header))),
                      "</body></html>"]) + "\n"

"""The kill matrix in words: the terminal's table, selftest.md, selftest.html (self-contained: inline
CSS, no script, nothing fetched) and selftest.json (validated against its schema as it is written).
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.common.jsonfiles import validate

__all__ = ["HEADER", "rows", "render_text", "render_markdown", "render_html", "write_matrix", "summary_line"]

HEADER = ("member", "kind", "profile", "meant for", "failed", "verdict", "result", "seconds")
_RESULT = {"ok": "OK", "broken": "BROKEN", "skipped": "host only"}


def _title(rid: str) -> str:
    from sl1conf.conformance.requirements import CATALOG_BY_ID

    row = CATALOG_BY_ID.get(rid)
    return f"{rid} {row.title}" if row else rid


def rows(doc: dict) -> list:
    """The matrix's rows as text cells, in :data:`HEADER`'s order."""
    out = []
    for r in doc["members"]:
        where = r["platform"] + ("" if r["dtype"] == "fp32" else f" {r['dtype']}")
        out.append([r["name"], r["kind"], where, _title(r["meant_for"]) if r["meant_for"] else "-",
                    ", ".join(r["failed"]) or "-", r["verdict"] or "-", _RESULT[r["status"]], f"{r['seconds']:.1f}"])
    return out


def summary_line(doc: dict) -> str:
    """One line: how many defects were caught and honest members passed, on which target, how long."""
    ms = doc["members"]
    defects = [r for r in ms if r["kind"] == "defect" and r["status"] != "skipped"]
    honest = [r for r in ms if r["kind"] == "honest" and r["status"] != "skipped"]
    skipped = sum(r["status"] == "skipped" for r in ms)
    t = doc["target"]
    where = f"sim: {t['sim']}" if t["sim"] else "ctypes: (host build)"
    return (f"{sum(r['status'] == 'ok' for r in defects)} of {len(defects)} defects caught, "
            f"{sum(r['status'] == 'ok' for r in honest)} of {len(honest)} honest libraries passed"
            + (f", {skipped} host only (not run here)" if skipped else "")
            + f"; built by {t['compiler']}, run through {where}; {'--quick, ' if doc['quick'] else ''}"
            f"{doc['seconds']:.0f} s with {doc['workers']} worker{'s' if doc['workers'] > 1 else ''}")


def render_text(doc: dict) -> str:
    """The matrix as an aligned plain-text table, then the summary line."""
    table = [list(HEADER), *rows(doc)]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines + ["", summary_line(doc)])


def render_markdown(doc: dict, title: str = "Self-test") -> str:
    """selftest.md: the summary, the matrix, the broken members and the host-only ones."""
    def cell(text):
        return str(text).replace("|", "\\|")

    out = [f"# {title}", "", ("**OK**" if doc["ok"] else "**BROKEN**") + ": " + summary_line(doc), "",
           "| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows(doc)]
    broken = [r for r in doc["members"] if r["status"] == "broken"]
    skipped = [r for r in doc["members"] if r["status"] == "skipped"]
    if broken:
        out += ["", "Broken:", ""] + [f"- {r['why']}" for r in broken]
    if skipped:
        out += ["", "Not run on this target:", ""] + [f"- {r['name']}: {r['skipped']}" for r in skipped]
    out += ["", "What each member is:", ""]
    out += [f"- `{r['name']}` ({r['kind']}): {r['what']}" for r in doc["members"]]
    return "\n".join(out) + "\n"


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#1b1b1b;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:700}
span.ok{background:#2e7d32} span.broken{background:#c62828} span.skipped{background:#9e9e9e}
table{border-collapse:collapse;font-size:13px;margin:6px 0} th,td{border:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top} th{background:#f4f4f4} tr.broken td{background:#fff0f0}
td.result span{padding:0 6px;border-radius:3px;color:#fff} .what{color:#555}
"""


def render_html(doc: dict, title: str = "Self-test") -> str:
    """selftest.html: one self-contained page with the same content as the Markdown."""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    body = []
    for r, cells in zip(doc["members"], rows(doc)):
        tds = [f"<td><b>{escape(cells[0])}</b><div class=\"what\">{escape(r['what'])}</div></td>"]
        tds += [f"<td>{escape(c)}</td>" for c in cells[1:6]]
        tds.append(f'<td class="result"><span class="{r["status"]}">{escape(cells[6])}</span></td>')
        tds.append(f"<td>{escape(cells[7])}</td>")
        body.append(f'<tr class="{r["status"]}">' + "".join(tds) + "</tr>")
    status = "ok" if doc["ok"] else "broken"
    parts = [f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{escape(title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{escape(title)}</h1>",
             f'<p><span class="verdict {status}">{status.upper()}</span> {escape(summary_line(doc))}</p>',
             f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"]
    broken = [r["why"] for r in doc["members"] if r["status"] == "broken"]
    if broken:
        parts.append("<h2>Broken</h2><ul>" + "".join(f"<li>{escape(b)}</li>" for b in broken) + "</ul>")
    skipped = [r for r in doc["members"] if r["status"] == "skipped"]
    if skipped:
        parts.append("<h2>Not run on this target</h2><ul>"
                     + "".join(f"<li>{escape(r['name'])}: {escape(r['skipped'])}</li>" for r in skipped) + "</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)


class MatrixError(SuiteError):
    """A self-test document that does not match its schema (a bug: one line, exit 2)."""


def write_matrix(doc: dict, out: Path) -> list:
    """selftest.json (validated first), selftest.md and selftest.html in ``out``; their paths."""
    validate(doc, "selftest.schema.json", MatrixError, "selftest.json")
    files = [(out / "selftest.json", json.dumps(doc, indent=1) + "\n"), (out / "selftest.md", render_markdown(doc)),
             (out / "selftest.html", render_html(doc))]
    for path, text in files:
        write_atomic(path, text)
    return [p for p, _ in files]

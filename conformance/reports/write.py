"""Reading a ``report.json`` back and writing every format of a report into its folder.

``report.json`` is the source of truth; ``report.md``, ``report.html`` and ``junit.xml``
are renderings of it alone, so ``sl1conf report DIR`` can redo them later or elsewhere.
Reports are checked against the committed schema when read and before they are written.
"""

from __future__ import annotations

import json
from pathlib import Path

from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.files import writable_folder, write_atomic

__all__ = ["ReportError", "FORMATS", "SCHEMA_VERSION", "load_report", "write_report", "validate"]

SCHEMA_VERSION = 1
SCHEMA_FILE = "report.schema.json"


class ReportError(SuiteError):
    """An unusable report file or folder: one line naming it and the problem."""


def _json(report: dict) -> str:
    return json.dumps(report, indent=1) + "\n"


def _markdown(report: dict) -> str:
    from sl1conf.conformance.reports.markdown import render_markdown

    return render_markdown(report)


def _html(report: dict) -> str:
    from sl1conf.conformance.reports.html import render_html

    return render_html(report)


def _junit(report: dict) -> str:
    from sl1conf.conformance.reports.junit import render_junit

    return render_junit(report)


FORMATS = {"json": ("report.json", _json), "md": ("report.md", _markdown),
           "html": ("report.html", _html), "junit": ("junit.xml", _junit)}
"""format name -> (file name in the report folder, renderer)"""


def validate(report: dict) -> None:
    """ReportError unless ``report`` matches the committed schema."""
    jsonfiles.validate(report, SCHEMA_FILE, ReportError, "report")


def load_report(path) -> dict:
    """A report from its folder or its ``report.json``, checked against the schema."""
    path = Path(path)
    if path.is_dir():
        path = path / "report.json"
    elif not path.exists():
        raise ReportError(f"{path}: no such report folder or file")
    report = jsonfiles.read_checked(path, SCHEMA_FILE, SCHEMA_VERSION, ReportError)
    report.setdefault("_path", str(path))
    return report


def write_report(report: dict, out, formats=tuple(FORMATS), *, replace_all: bool = False) -> list:
    """Write the formats asked for (all by default) into folder ``out``, each atomically.

    ``replace_all`` (a new report.json): remove the renderings not asked for, so no file of
    an earlier run is left beside the new report (a CI job reading junit.xml would read it).
    Re-rendering (``sl1conf report``) leaves the others alone: they render the same JSON.
    """
    report = {k: v for k, v in report.items() if not k.startswith("_")}
    validate(report)
    out = writable_folder(out, ReportError)
    rendered = [(out / FORMATS[f][0], FORMATS[f][1](report)) for f in formats]  # all or nothing
    try:
        written = [write_atomic(path, text) for path, text in rendered]
        if replace_all:
            for name, (fname, _) in FORMATS.items():
                if name not in formats:
                    (out / fname).unlink(missing_ok=True)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write there ({exc.strerror or exc})") from None
    return written

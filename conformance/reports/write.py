"""Reading a ``report.json`` back and writing every format of a report into its folder.

``report.json`` is the source of truth; ``report.md``, ``report.html`` and ``junit.xml``
are renderings of it alone, so ``sl1conf report DIR`` can redo them later or elsewhere.
Reports are checked against the committed schema when read and before they are written.
"""

from __future__ import annotations

import copy
import dataclasses
import glob
import json
import os
from pathlib import Path

from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.files import uninterrupted, writable_folder, write_temporary
from sl1conf.conformance.requirements.results import Report

__all__ = ["ReportError", "FORMATS", "SCHEMA_VERSION", "PATH_FIELDS", "load_report", "write_report", "written_view", "validate",
           "portable_path", "portable_paths"]

SCHEMA_VERSION = jsonfiles.REPORT_SCHEMA_VERSION
SCHEMA_FILE = "report.schema.json"


class ReportError(SuiteError):
    """An unusable report file or folder: one line naming it and the problem."""


def _json(data: dict, v) -> str:
    return json.dumps(data, indent=1) + "\n"


def _markdown(data: dict, v) -> str:
    from sl1conf.conformance.reports.markdown import render_markdown

    return render_markdown(v)


def _html(data: dict, v) -> str:
    from sl1conf.conformance.reports.html import render_html

    return render_html(v)


def _junit(data: dict, v) -> str:
    from sl1conf.conformance.reports.junit import render_junit

    return render_junit(v)


FORMATS = {"json": ("report.json", _json), "md": ("report.md", _markdown),
           "html": ("report.html", _html), "junit": ("junit.xml", _junit)}
"""format name -> (file name in the report folder, renderer: (the report's JSON, its View) -> text)"""


def validate(report: dict) -> None:
    """ReportError unless ``report`` matches the committed schema."""
    jsonfiles.validate(report, SCHEMA_FILE, ReportError, "report")


V1_NAMES = {"requirement": {"accepted_far": "beyond_budget", "accepted_not_a_distance": "beyond_budget_not_a_distance"},
            "errors": {"excepted": "beyond_budget_elements", "excepted_far": "beyond_budget"}}
"""Version 1's names of what was accepted beyond the budget -> version 2's (one idea, one name)."""


def upgraded_from_1(report: dict) -> dict:
    """A version 1 report as version 2 (the names of V1_NAMES; nothing else changed)."""
    def renamed(obj: dict, names: dict) -> dict:
        return {names.get(k, k): v for k, v in obj.items()}
    runs = report.get("runs") if isinstance(report.get("runs"), list) else []
    for run in runs:
        if not isinstance(run, dict):
            continue
        if isinstance(run.get("errors"), dict):
            run["errors"] = renamed(run["errors"], V1_NAMES["errors"])
        if isinstance(run.get("requirements"), list):
            run["requirements"] = [renamed(r, V1_NAMES["requirement"]) if isinstance(r, dict) else r
                                   for r in run["requirements"]]
    return {**report, "schema_version": 2}


def upgraded_from_2(report: dict) -> dict:
    """A version 2 report as version 3: ``errors.beyond_budget_elements`` dropped (version 3 counts
    every element by the judge's reason; version 2 kept no such counts, so a version 2 report has
    none), and each ``beyond_budget.by`` name filed under its reason (an open question's
    "...: within the stated bounds" under open_bounds, an alternative's name under alternative,
    what the error model took under reachable)."""
    from sl1conf.conformance.rules import openbehaviour

    def by_reason(far):
        if not isinstance(far, dict) or not isinstance(far.get("by"), dict):
            return far
        by: dict = {}
        for name, n in far["by"].items():
            reason = ("open_bounds" if name.endswith(openbehaviour.WITHIN_BOUNDS) else
                      "alternative" if name in openbehaviour.QUESTION_OF else "reachable")
            by.setdefault(reason, {})[name] = n
        return {**far, "by": by}
    for run in report.get("runs") if isinstance(report.get("runs"), list) else []:
        if not isinstance(run, dict):
            continue
        if isinstance(run.get("errors"), dict):
            run["errors"].pop("beyond_budget_elements", None)
            run["errors"]["beyond_budget"] = by_reason(run["errors"].get("beyond_budget"))
            if run["errors"]["beyond_budget"] is None:
                del run["errors"]["beyond_budget"]
        for r in run.get("requirements") if isinstance(run.get("requirements"), list) else []:
            if isinstance(r, dict) and "beyond_budget" in r:
                r["beyond_budget"] = by_reason(r["beyond_budget"])
    return {**report, "schema_version": 3}


def load_report(path) -> Report:
    """A report from its folder or its ``report.json``, checked against the schema, typed
    (``requirements.results.Report``): the JSON is read here, at the file's boundary, only."""
    path = Path(path)
    if path.is_dir():
        path = path / "report.json"
    elif not path.exists():
        raise ReportError(f"{path}: no such report folder or file")
    return Report.from_json(jsonfiles.read_checked(path, SCHEMA_FILE, SCHEMA_VERSION, ReportError,
                                                   upgrades={1: upgraded_from_1, 2: upgraded_from_2}))


PATH_FIELDS = (("profile", "path"), ("invocation", "profile"), ("invocation", "vectors"),
               ("implementation", "library"))
"""(object, key) of report.json's fields that hold a path of the machine that wrote it; and
``vectors.<dtype>.source`` (a vector set's folder, unless generated)."""
SPEC_FIELDS = (("implementation", "adapter"), ("invocation", "impl"))
"""Implementation names, a path in them after ``ctypes:``."""
TEXT_FIELDS = (("implementation", "note"),)
"""Free text that may name paths (the ctypes adapter's note on its call shim, in its cache)."""


def portable_path(text: str, cwd=None, home=None) -> str:
    """An absolute path as a report stores it: relative to the current folder when it lies
    under it (the demo certifies from the repository root: ``conformance/rules/profiles/ieee.toml``),
    else ``~/...`` under the home folder, else unchanged (and a relative path too)."""
    cwd = os.path.normpath(cwd or os.getcwd())
    home = os.path.normpath(home or os.path.expanduser("~"))
    if not text or not os.path.isabs(text):
        return text
    path = os.path.normpath(text)
    for base, prefix in ((cwd, ""), (home, "~")):
        if base == os.path.dirname(base):  # "/": everything is under it, and nothing is gained
            continue
        if path == base:
            return prefix or "."
        if path.startswith(base + os.sep):
            rest = path[len(base) + 1:]
            return f"{prefix}/{rest}" if prefix else rest
    return text


def _portable_text(text: str, cwd: str, home: str) -> str:
    """``text`` with every path under ``cwd`` or ``home`` in it written as portable_path writes it."""
    for base, prefix in ((cwd, ""), (home, "~/")):
        if base != os.path.dirname(base):
            text = text.replace(base + os.sep, prefix)
    return text


def portable_paths(report: dict) -> dict:
    """``report`` with the paths of the machine that wrote it (PATH_FIELDS, SPEC_FIELDS,
    TEXT_FIELDS, the vector sets' sources) made portable (:func:`portable_path`): the
    committed reports name no folder of the machine that wrote them, and their reproduction
    commands still work from the folder certify ran in. Done once, where the report is
    written, not by each producer of a path."""
    cwd, home = os.path.normpath(os.getcwd()), os.path.normpath(os.path.expanduser("~"))
    report = copy.deepcopy(report)

    def fix(obj, key, how):
        if isinstance(obj, dict) and isinstance(obj.get(key), str):
            obj[key] = how(obj[key])
        elif isinstance(obj, dict) and isinstance(obj.get(key), list):  # --vectors, one folder per dtype
            obj[key] = [how(t) if isinstance(t, str) else t for t in obj[key]]

    for section, key in PATH_FIELDS:
        fix(report.get(section), key, lambda t: portable_path(t, cwd, home))
    for section, key in SPEC_FIELDS:
        fix(report.get(section), key, lambda t: "ctypes:" + portable_path(t[len("ctypes:"):], cwd, home)
            if t.startswith("ctypes:") else t)
    for section, key in TEXT_FIELDS:
        fix(report.get(section), key, lambda t: _portable_text(t, cwd, home))
    for vs in (report.get("vectors") or {}).values():
        fix(vs, "source", lambda t: portable_path(t, cwd, home))
    for named in (report.get("implementation") or {}).get("files") or ():  # the files a sim: or --results run named
        fix(named, "path", lambda t: portable_path(t, cwd, home))
    return report


def _leftovers(out: Path) -> list:
    """Temporary files an earlier write into ``out`` left behind (a SIGKILL, a power cut):
    the ``.report.json.*.tmp`` and the like that :func:`write_report` names its own."""
    return sorted(p for fname, _ in FORMATS.values() for p in out.glob(f".{glob.escape(fname)}.*.tmp"))


def written_view(report: Report, formats=tuple(FORMATS)):
    """The report as its files will hold it (a new report.json: this machine's paths made
    portable) and its one ``reports.view.View``: what :func:`write_report` renders, and what a
    command that also prints the report shows (certify's terminal lines), built once."""
    from sl1conf.conformance.reports.view import view

    if "json" in formats:  # a new report.json: paths of this machine made portable first
        report = dataclasses.replace(report, envelope=portable_paths(report.envelope))
    return view(report)


def write_report(report: Report, out, formats=tuple(FORMATS), *, replace_all: bool = False,
                 shown=None) -> list:
    """Write the formats asked for (all by default) into folder ``out``, all or none.

    Everything is rendered first, then written to temporary files in the folder, and only
    then renamed into place, ``report.json`` last, with Ctrl-C (and SIGTERM, SIGHUP) held
    until the folder is whole again: an interrupted certify leaves the earlier report or the
    new one, never a new ``report.json`` beside an old ``report.html`` that says PASS. A
    failure while writing the temporary files (a full disk) removes them and leaves the old
    files as they were; a target that is a folder is refused before anything is replaced.
    (A rename in one folder failing after that, or a SIGKILL among the renames, could still
    leave a mix; nothing here can undo it.) Temporary files an earlier, killed, write left
    behind are removed too.

    ``replace_all`` (a new report.json): remove the renderings not asked for, so no file of
    an earlier run is left beside the new report (a CI job reading junit.xml would read it).
    Re-rendering (``sl1conf report``) leaves the others alone: they render the same JSON.

    ``report`` is the typed report; its JSON is made here, once, and every other format is
    rendered from its one ``reports.view.View`` (``shown``: :func:`written_view` of it, where the
    caller made it already to print it too).
    """
    v = shown if shown is not None else written_view(report, formats)
    data = v.report.to_json()
    validate(data)
    order = sorted(dict.fromkeys(formats), key=lambda f: f == "json")  # report.json renamed last
    rendered = [(FORMATS[f][0], FORMATS[f][1](data, v)) for f in order]  # all rendered, or nothing written
    stale = [fname for name, (fname, _) in FORMATS.items() if replace_all and name not in formats]
    temporary = []
    with uninterrupted():
        out = writable_folder(out, ReportError)
        for fname, _ in rendered:  # a folder where a file goes fails before anything is replaced
            if (out / fname).is_dir():
                raise ReportError(f"{out / fname} is a folder; the report cannot be written there")
        try:
            for leftover in _leftovers(out):
                leftover.unlink(missing_ok=True)
            for fname, text in rendered:
                temporary.append((write_temporary(out / fname, text), out / fname))
            for fname in stale:  # before the new report.json: an old rendering never sits beside it
                (out / fname).unlink(missing_ok=True)
            while temporary:
                os.replace(*temporary[0])
                del temporary[0]
        except OSError as exc:
            raise ReportError(f"{out}: cannot write there ({exc.strerror or exc})") from None
        finally:
            for tmp, _ in temporary:  # those not renamed (a failure): nothing is left behind
                tmp.unlink(missing_ok=True)
    return [out / FORMATS[f][0] for f in dict.fromkeys(formats)]

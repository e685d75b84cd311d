"""``sl1conf report | gate | compare``: render, gate on and compare ``report.json`` files."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from sl1conf.conformance.cli.args import EXIT_FAIL, EXIT_OK, UsageError, path_arg

__all__ = ["register"]


def _load(path):
    from sl1conf.conformance.reports.write import load_report

    return load_report(path)


def _cmd_report(args) -> int:
    from sl1conf.conformance.reports.write import FORMATS, write_report

    folder = Path(args.dir)
    if folder.is_dir() and (folder / "certificate.json").exists() and not (folder / "report.json").exists():
        from sl1conf.conformance.search.sweep_certificate import render_folder
        print(f"wrote {render_folder(folder)}")  # a sweep's certificate: its certificate.md again
        return EXIT_OK
    report = _load(args.dir)
    formats = args.format or [f for f in FORMATS if f != "json"]
    own = Path(args.dir) if Path(args.dir).is_dir() else Path(args.dir).parent  # the folder it was read from
    out = Path(args.out) if args.out else own
    if out.exists() and not (out.is_dir() and out.resolve() == own.resolve()):  # another folder than the report's
        _refuse_foreign_report(out, report)
        there = [FORMATS[f][0] for f in formats if (out / FORMATS[f][0]).exists()]
        if there and not args.force:
            raise UsageError(f"--out {out}: {', '.join(there)} exist{'s' * (len(there) == 1)} there: choose another "
                             "folder or pass --force to replace them")
    written = write_report(report, out, formats)
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK


def _refuse_foreign_report(out: Path, report) -> None:
    """Renderings of ``report`` beside another report's ``report.json`` would disagree with it
    (the very mix an interrupted certify must not leave): refused, --force or not."""
    import json

    theirs = out / "report.json"
    if not out.is_dir() or not theirs.is_file():
        return
    try:
        same = json.loads(theirs.read_text(encoding="utf-8")) == report.to_json()
    except (OSError, ValueError, RecursionError):
        same = False
    if not same:
        raise UsageError(f"--out {out} holds another report's report.json: render into the report's own folder "
                         "or an empty one")


def _cmd_gate(args) -> int:
    from sl1conf.conformance.reports.gate import gate, label

    new, old = _load(args.new), _load(args.baseline)
    result = gate(new, old, allow=args.allow_mismatch or ())  # unlike reports not allowed: Mismatch, one line, exit 2
    print(f"gate: {label(new)} ({new.created or '?'}) against the baseline {label(old)} "
          f"({old.created or '?'})")
    for line in result.lines():
        print(f"  {line}")
    if result.regressions:
        print(f"gate: FAIL, {len(result.regressions)} regression{'s' * (len(result.regressions) != 1)}")
        return EXIT_FAIL
    print("gate: PASS, no regression")
    return EXIT_OK


def _mismatch_arg(text: str) -> list:
    """argparse type: what may differ between a gate's reports, comma-separated."""
    import argparse

    from sl1conf.conformance.reports.gate import MISMATCHES

    names = [n.strip() for n in text.split(",")]
    bad = [n for n in names if n not in MISMATCHES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(repr(b) for b in bad) or repr(text)}: name what may differ, "
                                         f"comma-separated: {', '.join(MISMATCHES)}")
    return names


def _cmd_compare(args) -> int:
    from sl1conf.conformance.reports.gate import compare_rows
    from sl1conf.conformance.common.files import write_atomic

    reports = [_load(p) for p in args.reports]
    header, rows = compare_rows(reports, args.reports)
    if args.format == "csv":
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows([header, *rows])
        text = buf.getvalue()
    elif args.format == "html":
        from sl1conf.conformance.reports.html import render_table_page

        text = render_table_page("sl1conf: reports side by side", header, rows)
    else:
        from sl1conf.conformance.reports.markdown import markdown_table

        text = markdown_table(header, rows) + "\n"
    if args.out:
        out = Path(args.out)
        if out.is_dir():
            raise UsageError(f"--out {out} is a folder; give a file name")
        if not out.parent.is_dir():
            raise UsageError(f"--out {out}: no folder {out.parent}")
        if out.exists() and not args.force:
            raise UsageError(f"--out {out} exists: choose another file name or pass --force to replace it")
        try:
            write_atomic(out, text)
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None
        print(f"wrote {out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def register(sub) -> None:
    """Add ``report``, ``gate`` and ``compare`` to the ``sl1conf`` parser."""
    p = sub.add_parser("report", help="render report.md, report.html and junit.xml again from report.json",
                       description="Renders from report.json alone, so reports can be redone later or elsewhere.")
    p.add_argument("dir", help="a report folder (or its report.json)")
    p.add_argument("--format", choices=("html", "md", "junit"), action="append",
                   help="html, md or junit (repeatable; default all three)")
    p.add_argument("--out", type=path_arg, help="folder to write into (default: the report's own folder)")
    p.add_argument("--force", action="store_true",
                   help="replace renderings already in the --out folder (never beside another report's report.json)")
    p.set_defaults(run=_cmd_report)

    p = sub.add_parser("gate", help="exit 1 if NEW regressed against the baseline report, else 0 (2: reports "
                                    "of another profile, vector set or scope, unless --allow-mismatch)")
    p.add_argument("new", metavar="NEW", help="the new report.json (or its folder)")
    p.add_argument("--baseline", required=True, metavar="OLD", help="the baseline report.json (or its folder)")
    p.add_argument("--allow-mismatch", type=_mismatch_arg, metavar="WHAT[,WHAT]",
                   help="compare reports that differ in these (profile, vectors, scope), as far as they are "
                        "comparable, saying what was not compared (default: such reports are refused, exit 2)")
    p.set_defaults(run=_cmd_gate)

    p = sub.add_parser("compare", help="one table of several reports side by side")
    p.add_argument("reports", nargs="+", metavar="REPORT", help="report.json files (or their folders)")
    p.add_argument("--format", choices=("md", "html", "csv"), default="md", help="md (default), html or csv")
    p.add_argument("--out", type=path_arg, help="file to write (default: standard output); an existing one only with --force")
    p.add_argument("--force", action="store_true", help="replace the --out file if it exists")
    p.set_defaults(run=_cmd_compare)

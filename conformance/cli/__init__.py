"""The ``sl1conf`` command line: one subcommand per job, one line per error.

Bad input never produces a traceback: argparse's errors and every
:class:`UsageError` print one line naming the problem and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from sl1conf.reference import formats as F

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise UsageError(message)


VALUE_OPTIONS = ("--dy", "--x1", "--x2", "--beta")


def _join_negative_values(argv: list) -> list:
    """``--x1 -inf`` as ``--x1=-inf``: argparse would read ``-inf`` (or -1e-5, -0x1p-3) as an option."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: seeds are whole numbers from 0")
    return value


def _dtype(text: str) -> F.Format:
    try:
        return F.format_by_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cmd_explain(args) -> int:
    from sl1conf.conformance.cli.explain import explain

    texts = {"dy": args.dy, "x1": args.x1, "x2": args.x2, "beta": args.beta}
    for name, text in texts.items():
        try:
            F.parse_value(args.dtype, text)
        except ValueError as exc:
            raise UsageError(f"--{name}: {exc}") from None
    print(explain(args.dtype, texts))
    return EXIT_OK


def _cmd_demo(args) -> int:
    from sl1conf.conformance.cli.demo import run_demo

    if args.elements < 1:
        raise UsageError(f"--elements must be at least 1, not {args.elements}")
    return run_demo(args.dtype, elements=args.elements, seed=args.seed)


def _cmd_vectors(args) -> int:
    from sl1conf.conformance.cli import vectors as C

    try:
        if args.action == "generate":
            names = [n for part in (args.families or []) for n in part.split(",") if n]
            return C.generate(args.dtype, args.out, seed=args.seed, names=names, large=args.large,
                              force=args.force)
        if args.action == "verify":
            return C.verify(args.dir)
        if args.action == "list":
            return C.list_set(args.dir)
        if args.action == "show":
            return C.show(args.dir, args.id)
        return C.export(args.dir, args.format, args.out, force=args.force)
    except C.CommandError as exc:
        raise UsageError(str(exc)) from None


def _cmd_certify(args) -> int:
    from pathlib import Path

    from sl1conf.adapters import AdapterError, load

    from sl1conf.conformance.certify.engine import SelectionError, certify
    from sl1conf.conformance.rules.profiles import ProfileError, load_profile
    from sl1conf.conformance.vectors.store import VectorSetError

    if bool(args.platform) == bool(args.profile):
        raise UsageError("give exactly one of --platform NAME and --profile FILE")
    try:
        profile = load_profile(args.platform or args.profile)
        for d in args.dtype or []:
            profile.require_dtype(d.name)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    from sl1conf.conformance.common.files import writable_folder

    out = writable_folder(args.out, UsageError)  # before the run, not after it
    from sl1conf.conformance.certify.waivers import WaiverError, apply_waivers, load_waivers

    try:
        waivers = load_waivers(args.waivers) if args.waivers else None
    except WaiverError as exc:
        raise UsageError(str(exc)) from None
    try:
        impl = load(args.impl)
    except AdapterError as exc:
        raise UsageError(f"--impl {args.impl}: {exc}") from None
    with impl:
        dtypes = [d.name for d in args.dtype] if args.dtype else None
        try:
            profile.select(impl, dtypes, args.variant)  # before the run: nothing to certify is bad usage
        except ProfileError as exc:
            raise UsageError(str(exc)) from None
        only = [o.strip() for part in (args.only or []) for o in part.split(",") if o.strip()]
        invocation = {"impl": args.impl, "platform": args.platform,
                      "profile": str(Path(args.profile).resolve()) if args.profile else None,
                      "vectors": str(Path(args.vectors).resolve()) if args.vectors else None}
        try:
            tty = sys.stderr.isatty()  # progress on a terminal, quiet in CI logs
            show = (lambda text: print(f"\r\033[K{text}", end="", file=sys.stderr, flush=True)) if tty else None
            report = certify(impl, profile, dtypes=dtypes, variants=args.variant, vectors=args.vectors,
                             quick=args.quick, progress=show, only=only, invocation=invocation)
            if tty:
                print("\r\033[K", end="", file=sys.stderr, flush=True)
        except (VectorSetError, ProfileError, SelectionError) as exc:
            raise UsageError(str(exc)) from None
    if waivers is not None:
        apply_waivers(report, waivers)
    from sl1conf.conformance.reports.write import FORMATS, ReportError, write_report

    try:
        write_report(report, out, ["json", *(args.format or ["md", "html", "junit"])], replace_all=True)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    for run in report["runs"]:
        failed = [r["id"] + " " + r["title"] for r in run["requirements"] if r["status"] == "fail"]
        waived = [r["id"] for r in run["requirements"] if r["status"] == "waived"]
        print(f"{run['dtype']} {run['variant']}: {run['verdict'].upper()} ({run['cases']} cases, "
              f"{run['elements']} elements)" + (f"; failed: {', '.join(failed)}" if failed else "")
              + (f"; waived: {', '.join(waived)}" if waived else ""))
    for w in report.get("waivers", []):
        if not w["matched"]:
            print(f"waiver {w['id']} matched nothing: {w['reason']}")
    print(f"verdict: {report['verdict'].upper()} for {impl.name} on {profile.name}; report: {out / 'report.json'} "
          f"(and {', '.join(FORMATS[f][0] for f in (args.format or ['md', 'html', 'junit']))})")
    return EXIT_OK if report["verdict"] == "pass" else EXIT_FAIL


@dataclass(frozen=True)
class Common:
    """What a subcommand module needs from here (passed in, so it need not import cli)."""

    UsageError: type
    dtype: object  # argparse type: "fp16" | "fp32" -> Format
    seed: object  # argparse type: whole number >= 0
    parser_class: type
    EXIT_OK: int
    EXIT_FAIL: int
    EXIT_USAGE: int


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sl1conf", description=__doc__.splitlines()[0])
    from sl1conf import __version__

    parser.add_argument("--version", action="version", version=f"sl1conf {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("explain", help="take one element apart: exact diff, branch, result, models",
                       description="Values are decimals (0.1), hex floats (0x1.8p-1), hex bit "
                                   "patterns (0x3c00), inf, -inf or nan.")
    p.add_argument("--dtype", type=_dtype, required=True, help="fp16 or fp32")
    for name in ("dy", "x1", "x2", "beta"):
        p.add_argument(f"--{name}", required=True, metavar="V")
    p.set_defaults(run=_cmd_explain)

    p = sub.add_parser("demo", help="compare every evaluation model with the exact oracle")
    p.add_argument("--dtype", type=_dtype, action="append",
                   help="fp16 or fp32 (repeatable; default both)")
    p.add_argument("--elements", type=int, default=3000, help="elements per dtype (default 3000)")
    p.add_argument("--seed", type=_seed, default=2026, help="random seed (default 2026)")
    p.set_defaults(run=_cmd_demo)

    p = sub.add_parser("certify", help="run an implementation against a platform profile; exit 0 pass, 1 fail")
    p.add_argument("--impl", required=True, metavar="SPEC",
                   help="builtin:kernel, ctypes:lib.so, sim:'cmd {case} {result}', torch:cpu, ...")
    p.add_argument("--platform", help="ieee, ft78ne or mt7004")
    p.add_argument("--profile", help="a profile TOML file instead of a built-in platform")
    p.add_argument("--dtype", type=_dtype, action="append", help="fp16 or fp32 (default: all in common)")
    p.add_argument("--variant", choices=("s", "p"), action="append", help="s or p (default: all in common)")
    p.add_argument("--vectors", help="a vector set folder (default: the canonical families, generated)")
    p.add_argument("--quick", action="store_true", help="edge families only, no random ones")
    p.add_argument("--waivers", metavar="FILE", help="known failures to waive, with reasons (TOML)")
    p.add_argument("--only", action="append", metavar="IDS",
                   help="requirement ids (R02) and vector case ids (4.9), comma-separated: run those cases, "
                        "report those requirements (the reports' reproduction commands use it)")
    p.add_argument("--format", choices=("md", "html", "junit"), action="append",
                   help="formats beside report.json (repeatable; default md, html and junit)")
    p.add_argument("--out", required=True, help="folder for report.json, report.md, report.html, junit.xml")
    p.set_defaults(run=_cmd_certify)

    p = sub.add_parser("vectors", help="golden test vectors: generate, verify, list, show, export")
    vsub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    g = vsub.add_parser("generate", help="write a vector set folder (docs/vector-format.md)")
    g.add_argument("--dtype", type=_dtype, required=True, help="fp16 or fp32")
    g.add_argument("--out", required=True, help="folder to create")
    g.add_argument("--seed", type=_seed, default=2026, help="random seed (default 2026)")
    g.add_argument("--families", action="append", metavar="NAMES",
                   help="comma-separated family names (default: all)")
    g.add_argument("--large", action="store_true", help="include the large (1,000,000+ element) family")
    g.add_argument("--force", action="store_true", help="replace an existing folder")
    for name, text in (("verify", "check checksums and schema, recompute every expected result"),
                       ("list", "summarize the families of a set")):
        v = vsub.add_parser(name, help=text)
        v.add_argument("dir")
    v = vsub.add_parser("show", help="one family (id or name) or one case (id like 3.12)")
    v.add_argument("dir")
    v.add_argument("id")
    v = vsub.add_parser("export", help="a C header with a self-test program, or TestFloat-style hex text")
    v.add_argument("dir")
    v.add_argument("--format", choices=("c-header", "hex"), required=True)
    v.add_argument("--out", help="output folder (c-header) or file (hex)")
    v.add_argument("--force", action="store_true", help="replace existing output")
    p.set_defaults(run=_cmd_vectors)

    from sl1conf.conformance.cli import fuzz as fuzzcmds
    from sl1conf.conformance.cli import reports as reportcmds
    from sl1conf.conformance.cli import sweep as sweepcmds

    common = Common(UsageError=UsageError, dtype=_dtype, seed=_seed, parser_class=_Parser,
                    EXIT_OK=EXIT_OK, EXIT_FAIL=EXIT_FAIL, EXIT_USAGE=EXIT_USAGE)
    for module in (reportcmds, fuzzcmds, sweepcmds):
        module.register(sub, common)
    return parser


def main(argv=None) -> int:
    try:
        argv = _join_negative_values(list(sys.argv[1:] if argv is None else argv))
        args = build_parser().parse_args(argv)
        return args.run(args)
    except UsageError as exc:
        print(f"sl1conf: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("sl1conf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sl1conf vectors show ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK

"""``sl1conf certify``: run an implementation against a platform profile and write the report.

Exit 0 when every required requirement holds, 1 when one fails, 2 for bad usage or bad input
(one line naming the problem: an unknown platform, an unloadable library, a dtype the
profile does not have, corrupt vectors).
"""

from __future__ import annotations

import sys

from sl1conf.conformance.cli.args import EXIT_FAIL, EXIT_OK, UsageError, dtype_arg

__all__ = ["register"]


def _run(args) -> int:
    from pathlib import Path

    from sl1conf.adapters import AdapterError, load

    from sl1conf.conformance.certify.engine import certify
    from sl1conf.conformance.rules.profiles import load_profile

    if bool(args.platform) == bool(args.profile):
        raise UsageError("give exactly one of --platform NAME and --profile FILE")
    profile = load_profile(args.platform or args.profile)
    for d in args.dtype or []:
        profile.require_dtype(d.name)
    from sl1conf.conformance.common.files import writable_folder

    out = writable_folder(args.out, UsageError)  # before the run, not after it
    from sl1conf.conformance.certify.waivers import apply_waivers, load_waivers

    waivers = load_waivers(args.waivers) if args.waivers else None
    try:
        impl = load(args.impl)
    except AdapterError as exc:
        raise UsageError(f"--impl {args.impl}: {exc}") from None
    with impl:
        dtypes = [d.name for d in args.dtype] if args.dtype else None
        profile.select(impl, dtypes, args.variant)  # before the run: nothing to certify is bad usage
        only = [o.strip() for part in (args.only or []) for o in part.split(",") if o.strip()]
        invocation = {"impl": args.impl, "platform": args.platform,
                      "profile": str(Path(args.profile).resolve()) if args.profile else None,
                      "vectors": str(Path(args.vectors).resolve()) if args.vectors else None}
        tty = sys.stderr.isatty()  # progress on a terminal, quiet in CI logs
        show = (lambda text: print(f"\r\033[K{text}", end="", file=sys.stderr, flush=True)) if tty else None
        try:
            report = certify(impl, profile, dtypes=dtypes, variants=args.variant, vectors=args.vectors,
                             quick=args.quick, progress=show, only=only, invocation=invocation)
        finally:
            if tty:
                print("\r\033[K", end="", file=sys.stderr, flush=True)
    if waivers is not None:
        apply_waivers(report, waivers)
    from sl1conf.conformance.reports.write import FORMATS, write_report

    write_report(report, out, ["json", *(args.format or ["md", "html", "junit"])], replace_all=True)
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


def register(sub) -> None:
    """Add ``certify`` to the ``sl1conf`` parser."""
    p = sub.add_parser("certify", help="run an implementation against a platform profile; exit 0 pass, 1 fail")
    p.add_argument("--impl", required=True, metavar="SPEC",
                   help="builtin:kernel, ctypes:lib.so, sim:'cmd {case} {result}', torch:cpu, ...")
    p.add_argument("--platform", help="ieee, ft78ne or mt7004")
    p.add_argument("--profile", help="a profile TOML file instead of a built-in platform")
    p.add_argument("--dtype", type=dtype_arg, action="append", help="fp16 or fp32 (default: all in common)")
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
    p.set_defaults(run=_run)

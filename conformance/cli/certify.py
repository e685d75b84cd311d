"""``sl1conf certify``: run an implementation against a platform profile and write the report.

Exit 0 when every required requirement holds, 1 when one fails or the certification is
incomplete, 2 for bad usage or bad input (one line naming the problem: an unknown platform,
an unloadable library, a dtype or variant asked for that the profile or the implementation
does not have, corrupt vectors).
"""

from __future__ import annotations

from sl1conf.conformance.cli.args import EXIT_FAIL, EXIT_OK, UsageError, add_platform, dtype_arg, names_arg, path_arg

__all__ = ["register"]

EPILOG = ("exit status: 0 every required requirement holds; 1 one fails, or the certification is incomplete "
          "(runs the profile lists that the implementation lacks, calls that gave no result); 2 bad usage or "
          "bad input, said in one line (nothing is run and no report is written)")


DEFAULT_OUT = "sl1conf-report"
"""Where certify writes without --out: one folder in the current one, the last report."""

def _recorded(args, sets):
    """The adapter replaying a board self-test's results file (``--results``), read against the
    one --vectors set it was exported from."""
    from sl1conf.adapters.recorded import Recorded
    from sl1conf.conformance.vectors.results import read_results

    if args.quick:
        raise UsageError("--results judges the calls the board made; --quick does not apply")
    if not sets or len(args.vectors) != 1:
        raise UsageError("--results FILE needs one --vectors DIR: the vector set the self-test was exported from")
    vs = next(iter(sets.values()))
    return Recorded(read_results(args.results, vs), vs)


def _run(args) -> int:
    from sl1conf.conformance.certify.session import open_session
    from sl1conf.conformance.common.files import writable_folder

    session = open_session(args.platform, args.profile, dtypes=[d.name for d in args.dtype] if args.dtype else None,
                           vector_dirs=args.vectors or (), waivers_file=args.waivers)
    if bool(args.impl) == bool(args.results):
        raise UsageError("give exactly one of --impl SPEC (run an implementation) and --results FILE (judge a board "
                         "self-test's output)")
    from sl1conf.conformance.reports import plots

    if "html" in (args.format or ["html"]):
        plots.warm()  # the plots' processes, started while this one is small and has one thread
    try:
        return _certified(args, session, out_of=lambda: writable_folder(args.out, UsageError))
    except BaseException:
        plots.cool()
        raise


def _certified(args, session, out_of) -> int:
    """The certification of :func:`_run`'s checked ``session``, written into ``out_of()``; the
    implementation opened here, after the plots' processes started."""
    from pathlib import Path

    from sl1conf.conformance.certify.engine import certify
    from sl1conf.conformance.certify.session import selected_runs
    from sl1conf.conformance.common.progress import Progress

    profile, dtypes, sets = session.profile, session.dtypes, session.vectors
    impl = _recorded(args, sets) if args.results else session.open_implementation(args.impl)
    with impl:
        selected_runs(session, impl, args.variant)  # before the run: nothing to certify is bad usage
        if sets is not None and dtypes is None:
            print("vectors: " + "; ".join(f"{d} from {vs.path}" for d, vs in sets.items())
                  + (f" (no --vectors set holds {', '.join(d for d in profile.dtypes if d not in sets)}: "
                     "not certified)" if set(profile.dtypes) - set(sets) else ""))
        out = out_of()  # after every check of the input, before the run
        only = [o for part in (args.only or []) for o in part]
        invocation = {"impl": args.impl, "platform": args.platform,
                      **({"results": str(Path(args.results).resolve())} if args.results else {}),
                      "profile": str(Path(args.profile).resolve()) if args.profile else None,
                      "vectors": [str(Path(p).resolve()) for p in args.vectors] if args.vectors else None}
        report = certify(impl, profile, dtypes=dtypes, variants=args.variant, vectors=sets,
                         quick=args.quick, progress=lambda desc, total: Progress(desc, total, unit="cases"),
                         only=only, invocation=invocation, waivers=session.waivers)
    from sl1conf.conformance.reports.write import FORMATS, write_report, written_view

    formats = ["json", *(args.format or ["md", "html", "junit"])]
    shown = written_view(report, formats)  # the one View: the files render it, the terminal shows it
    write_report(report, out, formats, replace_all=True, shown=shown)
    _summary(shown)
    print(f"verdict: {report.verdict.upper()} for {impl.name} on {profile.name}; report: {out / 'report.json'} "
          f"(and {', '.join(FORMATS[f][0] for f in (args.format or ['md', 'html', 'junit']))})")
    return EXIT_OK if report.verdict == "pass" else EXIT_FAIL


def _summary(shown) -> None:
    """What the terminal shows of a report, from the View its files render (``reports.view.View``):
    each run's verdict, the causes shared by several requirements, each failure briefly, the
    waivers' use (those that matched nothing too)."""
    from sl1conf.conformance.requirements.results import use_lines
    from sl1conf.conformance.reports.view import failure_text, run_causes

    report = shown.report

    for run in report.runs:
        failed = [r.id + " " + r.title for r in run.requirements if r.status == "fail"]
        waived = [r.id for r in run.requirements if r.status == "waived"]
        print(f"{run.dtype} {run.variant}: {run.verdict.upper()} ({run.cases} cases, "
              f"{run.elements} elements)" + (f"; failed: {', '.join(failed)}" if failed else "")
              + (f"; waived: {', '.join(waived)}" if waived else ""))
    for line in run_causes(report, shared=True):  # one cause behind several requirements' failures
        print(f"cause: {line}")
    for f in shown.failures:  # each in the report's words, briefly: the report has the rest
        print(failure_text(f, brief=True))
    for line in use_lines(report.waivers or []):  # each waiver's use, a stale one too
        print(line)


def register(sub) -> None:
    """Add ``certify`` to the ``sl1conf`` parser."""
    p = sub.add_parser("certify", help="run an implementation against a platform profile; exit 0 pass, 1 fail",
                       description="Run an implementation against a platform profile and write its report "
                                   "(report.json, report.md, report.html, junit.xml). On a terminal a progress "
                                   "bar shows each run's calls, elements per second, the time left and the "
                                   "failures so far.", epilog=EPILOG)
    p.add_argument("--impl", metavar="SPEC",
                   help="builtin:kernel, ctypes:lib.so, python:file.py:function, sim:'cmd {case} {result}', "
                        "torch:cpu, torch:inductor, mindspore:cpu, ... (docs/adapters.md)")
    p.add_argument("--results", type=path_arg, metavar="FILE",
                   help="instead of --impl: judge what the exported self-test (built with -DSL1_DUMP) printed on "
                        "the board, against the one --vectors set it was exported from")
    add_platform(p)
    p.add_argument("--dtype", type=dtype_arg, action="append",
                   help="fp16 or fp32; repeatable (default: every dtype the profile lists; one the "
                        "implementation lacks is an error when asked for)")
    p.add_argument("--variant", choices=("s", "p"), action="append",
                   help="s or p; repeatable (default: every variant the profile lists; one the "
                        "implementation lacks is an error when asked for)")
    p.add_argument("--vectors", type=path_arg, action="append", metavar="DIR",
                   help="a vector set folder, repeatable, one per dtype: the dtypes certified are those of the "
                        "sets unless --dtype says (default: the canonical families, generated)")
    p.add_argument("--quick", action="store_true", help="edge families only, no random ones")
    p.add_argument("--waivers", type=path_arg, metavar="FILE", help="known failures to waive, with reasons (TOML)")
    p.add_argument("--only", type=names_arg, action="append", metavar="IDS",
                   help="requirement ids (Rnn, docs/requirements.md) and vector case ids (4.9), comma-separated: run those cases, "
                        "report those requirements (the reports' reproduction commands use it)")
    p.add_argument("--format", choices=("md", "html", "junit"), action="append",
                   help="formats beside report.json (repeatable; default md, html and junit)")
    p.add_argument("--out", type=path_arg, default=DEFAULT_OUT, metavar="DIR",
                   help=f"folder for report.json, report.md, report.html, junit.xml (default: {DEFAULT_OUT}, in the "
                        "current folder; a report already there is replaced)")
    p.set_defaults(run=_run)

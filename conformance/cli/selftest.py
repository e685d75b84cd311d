"""``sl1conf selftest``: the suite's defect zoo run through the user's toolchain and path.

Every member of the zoo (defective libraries, each aimed at one requirement, and honest but unusual
ones) is built with ``--cc`` and certified through ``ctypes:`` (host builds) or through ``--sim``
(the harness under the user's simulator or board script). Prints the kill matrix and writes
selftest.json, selftest.md and selftest.html. Exit 0 when every defect is caught and every honest
library passes, 1 otherwise (each broken member named), 2 for bad input (one line).
"""

from __future__ import annotations

import argparse
import shlex
import sys

from sl1conf.conformance.cli.args import EXIT_FAIL, EXIT_OK, UsageError, names_arg, path_arg, workers_arg

__all__ = ["register"]

EPILOG = ("exit status: 0 every defect caught and every honest library passed; 1 one was not (each named on its "
          "own line); 2 bad usage or bad input, said in one line (a compiler that cannot build, a --sim template "
          "without {harness}, {case} and {result}, an --out that is a file)")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: expected a positive number of seconds")
    return value


def _run(args) -> int:
    from pathlib import Path

    from sl1conf.adapters.cbuild import cache_dir
    from sl1conf.conformance.common.files import writable_folder
    from sl1conf.conformance.selftest.engine import Target, broken_lines, run_selftest, select
    from sl1conf.conformance.selftest.matrix import render_text, write_matrix

    if args.sim is not None and not args.sim.strip():
        raise UsageError("--sim: an empty template; e.g. --sim \"qemu-aarch64 {harness} {case} {result}\"")
    try:
        cflags = tuple(shlex.split(args.cflags or ""))
    except ValueError as exc:
        raise UsageError(f"--cflags {args.cflags!r}: {exc}") from None
    target = Target(cc=args.cc, cflags=cflags, sim=args.sim or "", timeout=args.timeout)
    zoo = select([n for part in (args.only or []) for n in part])
    out = writable_folder(args.out, UsageError)
    build_dir = Path(args.build_dir) if args.build_dir else cache_dir() / "selftest"

    def progress(row, done, total):
        print(f"[{done}/{total}] {row['name']}: {row['status']} ({row['why']}; {row['seconds']:.1f} s)",
              file=sys.stderr, flush=True)

    doc = run_selftest(target, zoo, build_dir, quick=args.quick, workers=args.workers,
                       progress=None if args.no_progress else progress)
    files = write_matrix(doc, out)
    print(render_text(doc))
    for line in broken_lines(doc):
        print(f"BROKEN: {line}")
    print(("OK" if doc["ok"] else "BROKEN") + ": the matrix is in " + ", ".join(str(f) for f in files))
    return EXIT_OK if doc["ok"] else EXIT_FAIL


def register(sub) -> None:
    """Add ``selftest`` to the ``sl1conf`` parser."""
    p = sub.add_parser("selftest", help="run the defect zoo through your compiler and simulator; exit 0 when every "
                                        "defect is caught",
                       description="Build the suite's zoo of small libraries (defects, each aimed at one requirement, "
                                   "and honest but unusual ones) with your compiler, certify each through ctypes: "
                                   "(host builds) or your simulator or board script (--sim), and print and write "
                                   "the kill matrix (selftest.json, selftest.md, selftest.html). docs/selftest.md.",
                       epilog=EPILOG)
    p.add_argument("--cc", metavar="COMPILER",
                   help="the C compiler (a cross compiler with --sim), may carry flags (default: $CC, else cc)")
    p.add_argument("--cflags", metavar="FLAGS", help="extra compiler flags for every member, e.g. --cflags=-static")
    p.add_argument("--sim", metavar="TEMPLATE",
                   help="run each member's harness through this command: {harness} is the harness built for the "
                        "member, {case} and {result} the protocol's files, e.g. \"qemu-aarch64 -L "
                        "/usr/aarch64-linux-gnu {harness} {case} {result}\" (default: host builds through ctypes:)")
    p.add_argument("--quick", action="store_true", help="certify each member with --quick (edge families only)")
    p.add_argument("--only", type=names_arg, action="append", metavar="NAMES",
                   help="run only these members of the zoo (comma-separated)")
    p.add_argument("--workers", type=workers_arg, metavar="N",
                   help="members certified at once (default: the CPUs; 1 for a board that takes one session)")
    p.add_argument("--timeout", type=_seconds, default=5.0, metavar="S",
                   help="seconds a call may take before it is a hang (default 5; a template's own [timeout=S] wins)")
    p.add_argument("--build-dir", type=path_arg, metavar="DIR",
                   help="where the members are built (default: the build cache, selftest/)")
    p.add_argument("--no-progress", action="store_true", help="no line on stderr as each member finishes")
    p.add_argument("--out", type=path_arg, required=True, metavar="DIR",
                   help="folder for selftest.json, selftest.md and selftest.html")
    p.set_defaults(run=_run)

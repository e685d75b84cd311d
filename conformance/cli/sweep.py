"""``sl1conf sweep``: the exhaustive fp16 sweep, the merge of its shards and the index of the
certificates under a folder, on the command line.

The work is :mod:`.sweep`'s (the blocks, the state in OUT/sweep.json, the merge, the verdict);
this module turns arguments into a sweep, shows progress on a terminal and prints the summary
(``cli.summaries``). Exit 0 when the one judge (certify's) rejects no element on
``--platform``, 1 otherwise, 2 for bad input.
"""

from __future__ import annotations

import time
from pathlib import Path

from sl1conf.conformance.cli import summaries
from sl1conf.conformance.cli.args import (EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, WORKERS_PER_CPU, Parser, UsageError,
                                          add_action, add_platform, dtype_arg, path_arg, workers_arg)
from sl1conf.reference import formats

from sl1conf.conformance.common.platforms import cli_option
from sl1conf.conformance.common.progress import Progress
from sl1conf.conformance.search import sweep

HELP = "every fp16 (x1, x2) pair, or a named subset, for one beta and a dy or set of dy, against the oracle"
DESCRIPTION = """Values are decimals (0.1), hex floats (0x1.8p-1) or fp16 bit patterns (0x2e66). --dy also takes
a set of planes: all (every fp16 pattern), ranges of bit patterns (0x3c00-0x3fff) and lists
(0x0001-0x03ff,0x3c00,1.5). A finished sweep writes OUT/certificate.json and certificate.md.
Subsets: all (2^32 pairs), x2=V (every x1 for one x2), around-beta[:K] (every pair whose exact
x1 - x2 is within K fp16 steps of +beta or -beta; K defaults to 8). Re-running the same command
resumes from OUT/sweep.json; 'sl1conf sweep merge' combines shards; 'sl1conf sweep index DIR' lists
the certificates under DIR. See docs/sweeps.md."""


USAGE = """sl1conf sweep --impl SPEC --beta V --dy V --out DIR [--subset S]
                    [--platform NAME|FILE | --profile FILE] [options]
       sl1conf sweep merge DIR [DIR ...] --out DIR
       sl1conf sweep index DIR"""


def register(sub) -> None:
    """Add this module's subcommands to the ``sl1conf`` parser (see cli.build_parser)."""
    p = sub.add_parser("sweep", help=HELP, description=DESCRIPTION, usage=USAGE)
    p.add_argument("--impl", metavar="SPEC", help="builtin:kernel, ctypes:lib.so, ... (as for certify)")
    p.add_argument("--beta", metavar="V", help="beta of every call (a value as above; required)")
    p.add_argument("--dy", metavar="V|SET", help="dy of every element (a value as above), or a set of planes: all, "
                   "0x3c00-0x3fff, lists of both (required)")
    p.add_argument("--dtype", type=dtype_arg, default=formats.FP16, help="fp16 only (the default): fp32 has 2^64 pairs")
    p.add_argument("--subset", default="all", help="all (default), x2=V or around-beta[:K]")
    p.add_argument("--variant", choices=("s", "p"), default="p", help="s or p (default p)")
    p.add_argument("--workers", type=workers_arg, metavar="N",
                   help=f"processes (default: the CPUs available; at most {WORKERS_PER_CPU} per CPU)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run the blocks on this Dask scheduler (docs/sweeps.md)")
    p.add_argument("--shard", metavar="I/N", help="run only the blocks k with k %% N == I - 1")
    add_platform(p, note="; kept in the checkpoint")
    p.add_argument("--max-blocks", type=int, metavar="N", help="stop after N blocks (run again to continue)")
    p.add_argument("--out", type=path_arg, metavar="DIR", help="folder for sweep.json (the checkpoint and the result)")
    actions = p.add_subparsers(dest="action", parser_class=Parser, title="actions (default: a sweep)",
                               metavar="{merge,index}")
    m = add_action(actions, "merge", "combine the sweep.json of shards into one",
                   "sl1conf sweep merge DIR [DIR ...] --out DIR",
                   "Combine the sweep.json of a sweep's shards (sl1conf sweep --shard I/N) into one, judged under "
                   "the platform the shards recorded. See docs/sweeps.md.", "folders holding a shard's sweep.json",
                   nargs="+")
    m.add_argument("--out", dest="merge_out", type=path_arg, required=True, metavar="DIR",
                   help="folder for the merged sweep.json")
    add_action(actions, "index", "the table of every sweep certificate under a folder (a reports index's)",
               "sl1conf sweep index DIR",
               "Print, as a Markdown table, one row per certificate.json found under DIR (at any depth, by path): the "
               "implementation, the platform, beta, dy, subset and variant, the result, the elements checked of "
               "all, the elements rejected and links to the certificate, relative to DIR (quickstart's "
               "reports/README.md lists sweeps so). Nothing when there is none. See docs/sweeps.md.",
               "the folder to search (the index's folder)", nargs=1)
    p.set_defaults(run=lambda args: {"merge": _merge, "index": _index}.get(args.action, _sweep)(args))


def _session(platform, profile_file=None, option=None):
    """The sweep's session (``certify.session.open_session``): the fp16 profile it is judged under,
    its one line naming ``--platform`` or ``--profile``, or what ``option`` says held the platform.
    Its ``platform`` (a built-in name or the file's path) is what the checkpoint keeps and the
    workers load again; the implementation is the workers' own to load."""
    from sl1conf.conformance.certify.session import open_session

    return open_session(platform, profile_file, dtypes=["fp16"], option=option or cli_option)


def _sweep(args) -> int:
    from sl1conf.adapters import AdapterError

    from sl1conf.conformance.search.shards import WHOLE, parse_shard

    missing = [o for o in ("impl", "beta", "dy", "out") if getattr(args, o) is None]
    if missing:
        raise UsageError(f"sweep needs {', '.join('--' + o for o in missing)}")
    if args.dtype.name != "fp16":
        raise UsageError(f"sweep covers fp16 only, not {args.dtype.name}: fp32 has 2^64 pairs "
                         "(use sl1conf fuzz or sl1conf certify for fp32)")
    from sl1conf.conformance.search.sweep_dy import dys_text, parse_dys

    values = {}
    try:
        values["beta"], _ = formats.parse_value(formats.FP16, args.beta)
    except ValueError as exc:
        raise UsageError(f"--beta: {exc}") from None
    try:
        planes = parse_dys(args.dy)
    except ValueError as exc:
        raise UsageError(f"--dy: {exc}") from None
    values["dy"] = planes[0] if len(planes) == 1 else dys_text(planes)
    try:
        shard = parse_shard(args.shard) if args.shard else WHOLE
    except ValueError as exc:
        raise UsageError(f"--shard: {exc}") from None
    if args.max_blocks is not None and args.max_blocks < 1:
        raise UsageError("--max-blocks must be at least 1")
    if args.scheduler and args.workers is not None:
        raise UsageError("--workers is for local runs; a Dask cluster (--scheduler) has its own workers")
    session = _session(args.platform, args.profile)
    out = sweep.state_folder(args.out)
    config = sweep.SweepConfig(args.impl, values["beta"], values["dy"], args.subset, args.variant,
                               platform=session.platform)
    show = _Bar()
    interrupted = False
    try:
        state = sweep.run_sweep_on(config, out, workers=args.workers, scheduler=args.scheduler, shard=shard,
                                   max_blocks=args.max_blocks, progress=show)
    except AdapterError as exc:
        raise UsageError(f"--impl {args.impl}: {exc}") from None
    except KeyboardInterrupt:  # the checkpoint holds the blocks done: their certificate, "No claim" for the rest
        interrupted = True
        state = sweep.load_state(out)
        if state is None:  # stopped before the first checkpoint: nothing done, nothing to certify
            raise
    finally:
        show.close()
    pending = len(shard.items(0, state["blocks"])) - state["done"].owned(shard)
    code = _finish(state, session.profile, out, f"{'interrupted' if interrupted else 'partial'}: {pending} blocks of "
                   "this shard still to run; run the same command again to continue" if pending else "")
    return EXIT_INTERRUPTED if interrupted else code


def _merge(args) -> int:
    out = sweep.state_folder(args.merge_out)
    merged = sweep.merge_folders([Path(d) for d in args.dirs], out)
    # the profile the shards judged under
    recorded = f"the inputs' {sweep.STATE_FILE}"
    profile = _session(merged["config"]["platform"], option=lambda name: f"{recorded}: {name}").profile
    missing = merged["blocks"] - len(merged["done"])
    note = f"incomplete: {missing} blocks are in none of the inputs" if missing else ""
    code = _finish(merged, profile, out, note)
    return EXIT_FAIL if missing else code  # a merge that misses blocks has not checked them


def _index(args) -> int:
    """``sl1conf sweep index DIR``: the certificates under DIR as a table (nothing when none); a
    certificate that is not one is one line, exit 2."""
    from sl1conf.conformance.search.sweep_certificate import index_lines

    folder = Path(args.dirs[0])
    if not folder.is_dir():
        raise UsageError(f"{folder}: " + ("not a folder" if folder.exists() else "no such folder"))
    for line in index_lines(folder):
        print(line)
    return EXIT_OK


def _finish(state, profile, out, note: str = "") -> int:
    """Write the summary into OUT/sweep.json, the rejections' vector set and the certificate
    (OUT/certificate.json and .md: an unfinished sweep's says what is missing), print the summary,
    and choose the exit status."""
    from sl1conf.conformance.search.sweep_certificate import CERTIFICATE_FILE, CERTIFICATE_MD, write_certificate
    from sl1conf.conformance.search.sweep_rejections import write_rejections

    sweep.finish(state, profile, out)
    vectors = write_rejections(out, state["tally"].rejections, state["config"]["variant"])
    cert = write_certificate(out, state, vectors=vectors)
    for line in summaries.sweep_lines(state, note):
        print(line)
    print(f"certificate: {cert['result'].upper()} ({CERTIFICATE_FILE} and {CERTIFICATE_MD} beside sweep.json"
          + (f"; the rejected elements kept: the vector set {vectors}" if vectors else "") + ")")
    print(f"summary: {Path(out) / sweep.STATE_FILE}")
    return EXIT_OK if state["summary"]["verdict"]["pass"] else EXIT_FAIL


class _Bar:
    """``run_sweep``'s progress callback: the one bar of common.progress, on a terminal only,
    made at the first block (when the blocks of this run are known): blocks of this run done of
    all, the ETA, elements per second, and the elements rejected or without a result so far; for
    a volume of planes also the planes complete and the elements done of all (counted at most
    once a second: a plane is complete when all its blocks are)."""

    def __init__(self):
        self.bar, self.elements, self.blocks, self.counted = None, 0, 0, 0.0

    def __call__(self, state, session) -> None:
        if self.bar is None:
            self.bar = Progress("sweep", session["todo"], "blocks")
        tally = state["tally"]
        self.bar.update(session["blocks"] - self.blocks, elements=session["elements"] - self.elements,
                        failures=tally.rejected_elements + tally.failed)  # a task is one block or a chunk
        self.elements, self.blocks = session["elements"], session["blocks"]
        if state.get("planes", 1) > 1 and time.monotonic() - self.counted >= 1.0:
            self.counted = time.monotonic()
            self.bar.describe(_volume_text(state))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _volume_text(state) -> str:
    """``sweep 12/256 planes, 3.1G/16.8G elements``: a volume's progress, in words for the bar."""
    from sl1conf.conformance.search.sweep_planes import Planes

    planes = Planes.of_state(state).planes_complete(state["done"])
    size = lambda n: next(f"{n / d:.1f}{u}" for d, u in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1, "")) if n >= d or d == 1)  # noqa: E731
    return (f"sweep {planes:,}/{state['planes']:,} planes, {size(state['tally'].elements)}/"
            f"{size(state['pairs'] * state['planes'])} elements")

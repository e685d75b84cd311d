"""``sl1conf sweep``: the exhaustive fp16 sweep and the merge of its shards, on the command line.

The work is :mod:`.sweep`'s (the blocks, the state in OUT/sweep.json, the merge, the verdict);
this module turns arguments into a sweep, shows progress on a terminal and prints the summary
(``cli.summaries``). Exit 0 when the one judge (certify's) rejects no element on
``--platform``, 1 otherwise, 2 for bad input.
"""

from __future__ import annotations

from pathlib import Path

from sl1conf.conformance.cli import summaries
from sl1conf.conformance.cli.args import (EXIT_FAIL, EXIT_OK, WORKERS_PER_CPU, Parser, UsageError, add_action,
                                          add_platform, dtype_arg, path_arg, workers_arg)
from sl1conf.reference import formats

from sl1conf.conformance.common.platforms import cli_option
from sl1conf.conformance.common.progress import Progress
from sl1conf.conformance.search import sweep

HELP = "every fp16 (x1, x2) pair, or a named subset, for one beta and dy, against the oracle"
DESCRIPTION = """Values are decimals (0.1), hex floats (0x1.8p-1) or fp16 bit patterns (0x2e66).
Subsets: all (2^32 pairs), x2=V (every x1 for one x2), around-beta[:K] (every pair whose exact
x1 - x2 is within K fp16 steps of +beta or -beta; K defaults to 8). Re-running the same command
resumes from OUT/sweep.json; 'sl1conf sweep merge' combines shards. See docs/sweeps.md."""


USAGE = """sl1conf sweep --impl SPEC --beta V --dy V --out DIR [--subset S]
                    [--platform NAME|FILE | --profile FILE] [options]
       sl1conf sweep merge DIR [DIR ...] --out DIR"""


def register(sub) -> None:
    """Add this module's subcommands to the ``sl1conf`` parser (see cli.build_parser)."""
    p = sub.add_parser("sweep", help=HELP, description=DESCRIPTION, usage=USAGE)
    p.add_argument("--impl", metavar="SPEC", help="builtin:kernel, ctypes:lib.so, ... (as for certify)")
    p.add_argument("--beta", metavar="V", help="beta of every call (a value as above; required)")
    p.add_argument("--dy", metavar="V", help="dy of every element (a value as above; required)")
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
                               metavar="{merge}")
    m = add_action(actions, "merge", "combine the sweep.json of shards into one",
                   "sl1conf sweep merge DIR [DIR ...] --out DIR",
                   "Combine the sweep.json of a sweep's shards (sl1conf sweep --shard I/N) into one, judged under "
                   "the platform the shards recorded. See docs/sweeps.md.", "folders holding a shard's sweep.json",
                   nargs="+")
    m.add_argument("--out", dest="merge_out", type=path_arg, required=True, metavar="DIR",
                   help="folder for the merged sweep.json")
    p.set_defaults(run=lambda args: _merge(args) if args.action == "merge" else _sweep(args))


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
    values = {}
    for name in ("beta", "dy"):
        try:
            values[name], _ = formats.parse_value(formats.FP16, getattr(args, name))
        except ValueError as exc:
            raise UsageError(f"--{name}: {exc}") from None
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
    try:
        state = sweep.run_sweep_on(config, out, workers=args.workers, scheduler=args.scheduler, shard=shard,
                                   max_blocks=args.max_blocks, progress=show)
    except AdapterError as exc:
        raise UsageError(f"--impl {args.impl}: {exc}") from None
    finally:
        show.close()
    pending = len(shard.items(0, state["blocks"])) - sum(1 for k in state["done"] if shard.owns(k))
    return _finish(state, session.profile, out, f"partial: {pending} blocks of this shard still to run; run "
                   "the same command again to continue" if pending else "")


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


def _finish(state, profile, out, note: str = "") -> int:
    """Write the summary into OUT/sweep.json, print it, and choose the exit status."""
    sweep.finish(state, profile, out)
    for line in summaries.sweep_lines(state, note):
        print(line)
    print(f"summary: {Path(out) / sweep.STATE_FILE}")
    return EXIT_OK if state["summary"]["verdict"]["pass"] else EXIT_FAIL


class _Bar:
    """``run_sweep``'s progress callback: the one bar of common.progress, on a terminal only,
    made at the first block (when the blocks of this run are known): blocks of this run done of
    all, the ETA, elements per second, and the elements rejected or without a result so far."""

    def __init__(self):
        self.bar, self.elements = None, 0

    def __call__(self, state, session) -> None:
        if self.bar is None:
            self.bar = Progress("sweep", session["todo"], "blocks")
        tally = state["tally"]
        self.bar.update(1, elements=session["elements"] - self.elements,
                        failures=tally.rejected_elements + tally.failed)
        self.elements = session["elements"]

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

"""``sl1conf fuzz``: run a campaign, merge shards' outputs, replay one batch, on the command line.

The work is :mod:`.fuzz_campaign`'s (the output folder, minimizing, merging) and :mod:`.fuzz`'s
(the batches); this module turns arguments into a campaign and prints what it found. Exit 0
without findings, 1 with, 2 for bad input, 130 when SIGINT or SIGTERM stopped it (what was
found is saved). docs/fuzzing.md is the user's guide.
"""

from __future__ import annotations

import math
import os
import secrets
import sys
from pathlib import Path

from sl1conf.conformance.cli import summaries
from sl1conf.conformance.cli.args import (EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, WORKERS_PER_CPU, Parser, UsageError,
                                          add_action,
                                          add_platform, count_arg, dtype_arg, path_arg, seed_arg, workers_arg)
from sl1conf.conformance.common.commands import certify_command
from sl1conf.conformance.common.platforms import cli_option, platform_options
from sl1conf.conformance.common.progress import Progress
from sl1conf.conformance.search import fuzz, fuzz_campaign, shards

__all__ = ["register"]

USAGE = """sl1conf fuzz --impl SPEC [--platform NAME|FILE | --profile FILE] --out DIR
                    [--elements N | --seconds S] [options]
       sl1conf fuzz merge DIR [DIR ...] --out DIR [--force]
       sl1conf fuzz replay DIR --batch K [--impl SPEC]
       sl1conf fuzz replay SWEEP_OUT|VECTORS [--impl SPEC]"""
MAX_CASES = 20
MAX_BATCH_ELEMENTS = 1 << 26
"""The most elements --batch-elements gives a batch's long case (64 Mi; the default is 1 Mi)."""
MAX_ELEMENTS = 10 ** 15
"""The most elements --elements asks for (years at the kernel's speed)."""


def register(sub) -> None:
    """Add ``sl1conf fuzz`` (with the actions merge and replay) to the parser."""
    p = sub.add_parser(
        "fuzz", help="fuzz an implementation; save every failure as a minimized regression vector", usage=USAGE,
        description="sl1conf fuzz --impl SPEC [--platform NAME|FILE | --profile FILE] --out DIR: a campaign. "
                    "sl1conf fuzz merge DIR... --out DIR: one summary of shards' outputs. "
                    "sl1conf fuzz replay DIR --batch K: run one recorded batch again; "
                    "sl1conf fuzz replay SWEEP_OUT: run a sweep's rejected elements again "
                    "(sl1conf fuzz merge --help, sl1conf fuzz replay --help: their options). See docs/fuzzing.md.")
    p.add_argument("--impl", metavar="SPEC", help="builtin:kernel, ctypes:lib.so, ...")
    add_platform(p)
    p.add_argument("--dtype", type=dtype_arg, action="append", help="fp16 or fp32 (default: all in common)")
    p.add_argument("--variant", choices=("s", "p"), action="append", help="s or p (default: all in common)")
    p.add_argument("--seconds", type=float, help="run for this long (default 60 unless --elements)")
    p.add_argument("--elements", type=count_arg(MAX_ELEMENTS, "elements"), metavar="N",
                   help="check about this many elements (all shards together; 1e9 is read too)")
    p.add_argument("--workers", type=workers_arg, default=1, metavar="N",
                   help=f"local worker processes (default 1; at most {WORKERS_PER_CPU} per CPU)")
    p.add_argument("--seed", type=seed_arg, help="campaign seed (default: a fresh one, printed and recorded)")
    p.add_argument("--shard", metavar="I/N", default="1/1", help="run shard I of N (default 1/1)")
    p.add_argument("--batch-elements", type=count_arg(MAX_BATCH_ELEMENTS, "elements"), default=fuzz.BATCH_ELEMENTS,
                   metavar="N", help=f"elements of each batch's long case (default {fuzz.BATCH_ELEMENTS}, "
                                     f"at most {MAX_BATCH_ELEMENTS})")
    p.add_argument("--max-cases", type=int, default=MAX_CASES, metavar="N",
                   help=f"most failures minimized and saved (default {MAX_CASES})")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run the batches on this Dask scheduler")
    p.add_argument("--out", type=path_arg, metavar="DIR", help="output folder")
    p.add_argument("--force", action="store_true", help="write into a non-empty folder that is not this campaign's")
    actions = p.add_subparsers(dest="action", parser_class=Parser, title="actions (default: a campaign)",
                               metavar="{merge,replay}")
    m = add_action(actions, "merge", "one summary of the outputs of a campaign's shards",
                   "sl1conf fuzz merge DIR [DIR ...] --out DIR [--force]",
                   "Merge the output folders of a campaign's shards (sl1conf fuzz --shard I/N) into one: batches, "
                   "elements, failures and saved vectors united, shards missing named. See docs/fuzzing.md.",
                   "fuzz output folders of one campaign's shards")
    m.add_argument("--out", dest="merge_out", type=path_arg, metavar="DIR", help="folder for the merged output")
    m.add_argument("--force", dest="merge_force", action="store_true",
                   help="write into a non-empty folder that is not this campaign's")
    r = add_action(actions, "replay", "run one recorded batch, or a sweep's rejected elements, again",
                   "sl1conf fuzz replay DIR --batch K [--impl SPEC]\n"
                   "       sl1conf fuzz replay SWEEP_OUT|VECTORS [--impl SPEC] [--platform NAME|FILE | --profile FILE]",
                   "Draw batch K of the campaign recorded in DIR again from its seed and check it (against the "
                   "campaign's implementation, or --impl). Without --batch, DIR is a sweep's output folder (or the "
                   "vector set it wrote, SWEEP_OUT/rejections-fp16, or any vector set with --impl): its rejected "
                   "elements are called and judged again as a batch is, under the sweep's platform or --platform "
                   "(against the sweep's implementation, or --impl). See docs/fuzzing.md.",
                   "a fuzz output folder (with --batch), a sweep's output folder or a vector set")
    r.add_argument("--batch", type=int, metavar="K", help="the batch index to run again (a fuzz output folder)")
    r.add_argument("--impl", dest="replay_impl", metavar="SPEC",
                   help="another implementation (default: the campaign's or the sweep's)")
    for flag, keywords in platform_options("the profile that judges a vector set (not with --batch: a batch is "
                                           "drawn under its campaign's)", ": the sweep's own for its set"):
        r.add_argument(flag, dest=f"replay_{flag[2:]}", **keywords, **({"type": path_arg} if flag == "--profile" else {}))
    p.set_defaults(run=lambda args: {"merge": _merge, "replay": _replay}.get(args.action, _campaign)(args))


# ------------------------------------------------------------------ argument checks

CAMPAIGN_DEFAULTS = {"platform": None, "profile": None, "workers": 1, "shard": "1/1",
                     "batch_elements": fuzz.BATCH_ELEMENTS, "max_cases": MAX_CASES, "force": False}


def _no_campaign_options(args, action: str) -> None:
    """merge and replay take none of the campaign's options (given before the action): the
    platform too is the campaign's or the sweep's (a set no sweep wrote is judged on ieee)."""
    given = ("impl", "dtype", "variant", "seconds", "elements", "seed", "scheduler", "out", "platform", "profile")
    extra = sorted(n for n in given if getattr(args, n) is not None)
    extra += sorted(n for n, d in CAMPAIGN_DEFAULTS.items() if getattr(args, n) != d)
    if extra:
        raise UsageError(f"{action} does not take --{extra[0].replace('_', '-')}")


def _available_memory() -> "int | None":
    """Bytes of memory available to new work (MemAvailable; None where it cannot be read)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _campaign_from(args, session) -> fuzz.Campaign:
    if args.seconds is not None and args.elements is not None:
        raise UsageError("give --seconds or --elements, not both")
    if args.seconds is not None and not (args.seconds > 0 and math.isfinite(args.seconds)):
        raise UsageError(f"--seconds must be a positive number, not {args.seconds}")
    if not args.max_cases >= 0:
        raise UsageError(f"--max-cases must be at least 0, not {args.max_cases}")
    try:
        shards.parse_shard(args.shard)
    except ValueError as exc:
        raise UsageError(f"--shard: {exc}") from None
    dtypes, variants = session.profile.select(session.implementation,
                                              [d.name for d in args.dtype] if args.dtype else None,
                                              args.variant, what="fuzz")
    batches = seconds = None
    if args.elements is not None:
        batches = max(1, math.ceil(args.elements / (args.batch_elements * len(dtypes) * len(variants))))
    else:
        seconds = 60.0 if args.seconds is None else args.seconds
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    return fuzz.Campaign(args.impl, session.platform, tuple(dtypes), tuple(variants), seed, args.batch_elements,
                         batches, seconds, args.shard)


def _session(impl: str, platform: "str | None", profile_file: "str | None" = None, option=None):
    """The campaign's session (``certify.session.open_session``): the profile first, its one line
    naming ``--platform`` or ``--profile`` (or what ``option`` says held them), then the adapter.
    Its ``platform`` (a built-in name or the file's path) is what the campaign records and its
    workers load again."""
    from sl1conf.conformance.certify.session import open_session

    return open_session(platform, profile_file, impl=impl, option=option or cli_option)


# ------------------------------------------------------------------ the commands

def _commands(summary: dict, out: Path) -> list:
    """The certify command lines that run the saved vector sets (the summary's ``certify``)."""
    camp = summary["campaign"]
    return [certify_command(camp["impl"], platform=camp["platform"], dtype=dtype, vectors=out / name,
                            out=out / f"report-{dtype}")
            for dtype, name in summary["vectors"].items()]


def _campaign(args) -> int:
    for name in ("impl", "out"):
        if getattr(args, name) is None:
            raise UsageError(f"a campaign needs --{name}")
    if args.scheduler and args.workers != 1:
        raise UsageError("--workers is for local runs; a Dask cluster (--scheduler) has its own workers")
    session = _session(args.impl, args.platform, args.profile)
    adapter, profile = session.implementation, session.profile
    with adapter:
        campaign = _campaign_from(args, session)
        if not args.scheduler:  # a cluster's workers have their own memory
            fuzz_campaign.fits_in_memory(campaign, args.workers, _available_memory())
        out = Path(args.out)
        old = fuzz_campaign.claim(out, campaign.identity(), [campaign.shard], args.force)
        print(f"fuzz: seed {campaign.seed}, shard {campaign.shard}, "
              + (f"{campaign.batches} batches in all" if campaign.batches else f"{campaign.seconds:g} s"),
              file=sys.stderr)
        summary, stopped = fuzz_campaign.run_campaign(  # a bar on a terminal: batches done of this shard's
            campaign, adapter, profile, workers=args.workers, scheduler=args.scheduler, max_cases=args.max_cases,
            out=out, old=old, commands=_commands, progress=lambda total: Progress("fuzz", total, "batches"))
        print(*summaries.fuzz_lines(summary, out), sep="\n")
    if stopped:
        print("fuzz: interrupted: the summary covers the batches that finished", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_FAIL if summary["failures"]["findings"] else EXIT_OK


def _merge(args) -> int:
    _no_campaign_options(args, "merge")
    if not args.dirs or args.merge_out is None:
        raise UsageError("merge needs the folders to merge and --out DIR")
    parts = [(Path(d), fuzz_campaign.read_summary(Path(d))) for d in args.dirs]
    out = Path(args.merge_out)
    summary, saved, old, missing = fuzz_campaign.merge(parts, out, args.merge_force)
    for shard, n in missing.items():
        print(f"fuzz merge: warning: shard {shard} missing: "
              + ("its batches not run (a timed campaign)" if n is None else f"{n} batches not run"), file=sys.stderr)
    fuzz_campaign.write_output(out, summary, saved, old, _commands)
    print(*summaries.fuzz_lines(summary, out), sep="\n")
    return EXIT_FAIL if summary["failures"]["findings"] else EXIT_OK


REPLAY_NEEDS = "replay needs one fuzz output folder and --batch K, or a sweep's output folder or a vector set"


def _replay(args) -> int:
    _no_campaign_options(args, "replay")
    if len(args.dirs) != 1:
        raise UsageError(REPLAY_NEEDS)
    if args.batch is None:
        return _replay_vectors(Path(args.dirs[0]), args.replay_impl, args.replay_platform, args.replay_profile)
    if args.replay_platform or args.replay_profile:
        raise UsageError(f"replay --batch K draws the campaign's batch under the campaign's own platform: it does not "
                         f"take --{'platform' if args.replay_platform else 'profile'}")
    if not args.batch >= 0:
        raise UsageError(f"--batch must be at least 0, not {args.batch}")
    campaign = fuzz_campaign.replayed_campaign(fuzz_campaign.read_summary(Path(args.dirs[0])), args.batch,
                                               args.dirs[0])
    recorded = Path(args.dirs[0]) / "summary.json"
    # the platform the campaign recorded: an error about it names where; --impl is the option's
    session = _session(args.replay_impl or campaign.impl, campaign.platform,
                       option=lambda name: f"{recorded}: {name}" if name == "platform" else cli_option(name))
    adapter, profile = session.implementation, session.profile
    with adapter:
        cases = fuzz.make_batch(campaign, profile, args.batch)
        findings = fuzz.check_cases(adapter, profile, cases)
    print(*summaries.replay_lines(campaign, args.batch, cases, findings), sep="\n")
    return EXIT_FAIL if findings else EXIT_OK


def _replay_vectors(folder: Path, impl: "str | None", platform: "str | None" = None,
                    profile_file: "str | None" = None) -> int:
    """``sl1conf fuzz replay SWEEP_OUT|VECTORS``: a sweep's rejected elements (its vector set
    rejections-fp16), or any vector set's calls, called and judged again as a batch is, under
    ``platform`` or ``profile_file`` where given, else the sweep's platform (ieee's for a set no
    sweep wrote), against the sweep's implementation or ``impl``. Exit 1 when anything fails
    again, 0 when nothing does."""
    from sl1conf.conformance.search.sweep_rejections import SET_FOLDER, replay_source
    from sl1conf.conformance.search.sweep_state import STATE_FILE

    if not folder.is_dir():
        raise UsageError(f"{folder}: " + ("not a folder" if folder.exists() else "no such folder"))
    if (folder / "summary.json").is_file():
        raise UsageError(f"replay needs --batch K for a fuzz output folder ({folder})")
    source = replay_source(folder)
    if source is None:
        raise UsageError(f"{REPLAY_NEEDS}: {folder} is none of them")
    vectors, config = source
    if vectors is None:
        print(f"{folder}: the sweep kept no rejected element (no {SET_FOLDER}): nothing to replay")
        return EXIT_OK
    spec = impl or (config or {}).get("impl")
    if spec is None:
        raise UsageError(f"replay of the vector set {vectors} needs --impl SPEC (no sweep's {STATE_FILE} beside it "
                         "names one)")
    recorded = (folder if (folder / STATE_FILE).is_file() else vectors.resolve().parent) / STATE_FILE

    asked = bool(platform or profile_file)

    def option(name: str) -> str:  # the sweep's platform: an error about it names where it was read
        if name == "vectors":
            return "replay"
        return f"{recorded}: {name}" if name == "platform" and config and not asked else cli_option(name)

    from sl1conf.conformance.certify.session import open_session

    session = open_session(platform if asked else config["platform"] if config else None, profile_file, impl=spec,
                           vector_dirs=[vectors], option=option)
    (vs,) = session.vectors.values()
    adapter, profile = session.implementation, session.profile
    with adapter:
        _, variants = profile.select(adapter, [vs.manifest["dtype"]], None, what="replay")
        if not any(row["variant"] in variants for row in vs.case_rows()):
            raise UsageError(f"{vs.path}: its calls are of variants {spec} does not offer on {profile.name} "
                             f"(it offers {', '.join(variants)})")
        cases, findings, evidence, reasons = fuzz_campaign.replay_vectors(adapter, profile, vs, variants)
    judged = profile.name  # and where it was read, when an option named it: a file's name field may say anything
    if asked:
        judged += f" ({cli_option('platform')} {platform}" if platform else f" ({cli_option('profile')} {profile_file}"
        judged += f"; the sweep ran on {config['platform']})" if config else ")"
    print(*summaries.vectors_replay_lines(vs, spec, judged, config, cases, findings, evidence, reasons),
          sep="\n")
    return EXIT_FAIL if findings else EXIT_OK

"""``sl1conf fuzz``: run a campaign, merge shards' outputs, replay one batch.

An output folder holds ``summary.json`` (the campaign, the batches run, elements, failures,
throughput, the implementation) and, per dtype with failures, ``vectors-<dtype>/``: the
minimized failures as a vector set in the standard format, which ``sl1conf certify
--vectors`` runs. Writes are atomic (vector sets first, the summary last); a folder is
reused only if it is empty or a previous output of the same campaign, other folders need
``--force`` (and then only our own files are replaced). The folder is proved writable before
the campaign starts, so a long run never ends in a traceback. SIGINT and SIGTERM stop a
campaign cleanly: what was found is minimized (in bounded time), saved, and the summary
says ``"interrupted": true``. docs/fuzzing.md is the user's guide.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import secrets
import shlex
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from sl1conf.conformance.cli.args import (EXIT_FAIL, EXIT_OK, WORKERS_PER_CPU, Parser, UsageError, count_arg, dtype_arg,
                                          out_arg, seed_arg, workers_arg)
from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.common.commands import certify_command, explain_command
from sl1conf.conformance.common.progress import Progress
from sl1conf.conformance.requirements import accuracy, by_id, core_masks
from sl1conf.conformance.requirements.elements import BOUNDARY_ID
from sl1conf.conformance.requirements.accuracy import (
    add_bias_counts, bias_failure_keys, bias_findings, rounding_bias,
)
from sl1conf.conformance.requirements.core_masks import twin_mask
from sl1conf.conformance.search import fuzz
from sl1conf.reference import fast_oracle
from sl1conf.reference import formats

SCHEMA = "sl1conf-fuzz"
SCHEMA_VERSION = 4  # 2: findings keyed by requirement id; saved failures name their requirements;
# 3: batches of 2^20 elements, long calls drawn by sampling.fast_batch (another batch for the same seed);
# 4: failures grouped by pattern (failures.patterns), one saved reproducer per pattern with its counts
REGRESSIONS = (100, "fuzz-regressions", "Failures found by sl1conf fuzz, each minimized to the shortest call "
                                        "and the simplest values that still fail.")
CORE_MASKS = (11, "core-masks", "Failures found by sl1conf fuzz: the same data under two core masks gives "
                                f"different bits (compared by certify's {core_masks.ID}).")
BOUNDARY_EXACT = (1, "boundary-exact", "Failures found by sl1conf fuzz where x1 - x2 equals +beta or -beta "
                                       f"exactly: the result must be +-dy bit for bit (checked by certify's {BOUNDARY_ID}).")
MAX_CASES = 20
INTERRUPTED_MINIMIZE_SECONDS = 10.0
"""After SIGINT or SIGTERM, how long minimizing may go on before the rest is saved as it is."""
EXIT_INTERRUPTED = 130

__all__ = ["register"]




USAGE = """sl1conf fuzz --impl SPEC --platform NAME --out DIR [--elements N | --seconds S] [options]
       sl1conf fuzz merge DIR [DIR ...] --out DIR [--force]
       sl1conf fuzz replay DIR --batch K [--impl SPEC]"""
MAX_BATCH_ELEMENTS = 1 << 26
"""The most elements --batch-elements gives a batch's long case (64 Mi; the default is 1 Mi)."""
MAX_ELEMENTS = 10 ** 15
"""The most elements --elements asks for (years at the kernel's speed)."""
BATCH_BYTES_PER_ELEMENT = 32
"""Memory a batch needs per element of its long calls (each dtype and variant), at least: an
honest implementation's batch holds about 17 bytes an element (inputs, output, the oracle's
bits), one whose every element is judged about 230. A campaign whose batches would not fit
even at this rate in the memory available (one batch per worker process) is refused before it
starts, rather than failing with a MemoryError once it runs."""


def register(sub) -> None:
    """Add ``sl1conf fuzz`` (with the actions merge and replay) to the parser."""
    p = sub.add_parser(
        "fuzz", help="fuzz an implementation; save every failure as a minimized regression vector", usage=USAGE,
        description="sl1conf fuzz --impl SPEC --platform NAME --out DIR: a campaign. "
                    "sl1conf fuzz merge DIR... --out DIR: one summary of shards' outputs. "
                    "sl1conf fuzz replay DIR --batch K: run one recorded batch again "
                    "(sl1conf fuzz merge --help, sl1conf fuzz replay --help: their options). See docs/fuzzing.md.")
    p.add_argument("--impl", metavar="SPEC", help="builtin:kernel, ctypes:lib.so, ...")
    p.add_argument("--platform", metavar="NAME", help="ieee, ft78ne, mt7004 or a profile .toml file")
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
    p.add_argument("--out", type=out_arg, metavar="DIR", help="output folder")
    p.add_argument("--force", action="store_true", help="write into a non-empty folder that is not this campaign's")
    actions = p.add_subparsers(dest="action", parser_class=Parser, title="actions (default: a campaign)",
                               metavar="{merge,replay}")
    m = actions.add_parser("merge", help="one summary of the outputs of a campaign's shards",
                           usage="sl1conf fuzz merge DIR [DIR ...] --out DIR [--force]",
                           description="Merge the output folders of a campaign's shards (sl1conf fuzz --shard I/N) "
                                       "into one: batches, elements, failures and saved vectors united, shards "
                                       "missing named. See docs/fuzzing.md.")
    m.add_argument("dirs", nargs="*", metavar="DIR", help="fuzz output folders of one campaign's shards")
    m.add_argument("--out", dest="merge_out", type=out_arg, metavar="DIR", help="folder for the merged output")
    m.add_argument("--force", dest="merge_force", action="store_true",
                   help="write into a non-empty folder that is not this campaign's")
    r = actions.add_parser("replay", help="run one recorded batch again",
                           usage="sl1conf fuzz replay DIR --batch K [--impl SPEC]",
                           description="Draw batch K of the campaign recorded in DIR again from its seed and "
                                       "check it (against the campaign's implementation, or --impl). "
                                       "See docs/fuzzing.md.")
    r.add_argument("dirs", nargs="*", metavar="DIR", help="a fuzz output folder")
    r.add_argument("--batch", type=int, metavar="K", help="the batch index to run again")
    r.add_argument("--impl", dest="replay_impl", metavar="SPEC", help="another implementation (default: the campaign's)")

    def run(args) -> int:
        if args.action == "merge":
            return _merge(args)
        if args.action == "replay":
            return _replay(args)
        return _campaign(args)

    p.set_defaults(run=run)


# ------------------------------------------------------------------ argument checks

CAMPAIGN_DEFAULTS = {"workers": 1, "shard": "1/1", "batch_elements": fuzz.BATCH_ELEMENTS, "max_cases": MAX_CASES,
                     "force": False}


def _no_campaign_options(args, action: str) -> None:
    """merge and replay take none of the campaign's options (given before the action)."""
    given = ("impl", "platform", "dtype", "variant", "seconds", "elements", "seed", "scheduler", "out")
    extra = sorted(n for n in given if getattr(args, n) is not None)
    extra += sorted(n for n, d in CAMPAIGN_DEFAULTS.items() if getattr(args, n) != d)
    if extra:
        raise UsageError(f"{action} does not take --{extra[0].replace('_', '-')}")


def _fits_in_memory(campaign, workers: int) -> None:
    """Refuse a campaign whose batches could not be held (see BATCH_BYTES_PER_ELEMENT)."""
    available = _available_memory()
    runs = len(campaign.dtypes) * len(campaign.variants)
    need = BATCH_BYTES_PER_ELEMENT * campaign.batch_elements * runs * workers
    if available is not None and need > available:
        raise UsageError(f"--batch-elements {campaign.batch_elements}: {workers} batch(es) of {runs} long call(s) "
                         f"need at least {need / 2**30:.1f} GiB, more than the {available / 2**30:.1f} GiB of memory "
                         "available here: give fewer --batch-elements (or --workers)")


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


def _positive(name: str, value, minimum=1) -> None:
    if value is not None and not value >= minimum:
        raise UsageError(f"--{name} must be at least {minimum}, not {value}")


def _campaign_from(args, adapter, profile) -> fuzz.Campaign:
    if args.seconds is not None and args.elements is not None:
        raise UsageError("give --seconds or --elements, not both")
    if args.seconds is not None and not (args.seconds > 0 and math.isfinite(args.seconds)):
        raise UsageError(f"--seconds must be a positive number, not {args.seconds}")
    _positive("max-cases", args.max_cases, 0)
    try:
        fuzz.parse_shard(args.shard)
    except ValueError as exc:
        raise UsageError(f"--shard: {exc}") from None
    dtypes, variants = profile.select(adapter, [d.name for d in args.dtype] if args.dtype else None,
                                      args.variant, what="fuzz")
    batches = seconds = None
    if args.elements is not None:
        batches = max(1, math.ceil(args.elements / (args.batch_elements * len(dtypes) * len(variants))))
    else:
        seconds = 60.0 if args.seconds is None else args.seconds
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    return fuzz.Campaign(args.impl, args.platform, tuple(dtypes), tuple(variants), seed, args.batch_elements,
                      batches, seconds, args.shard)


def _load(impl: str, platform: str):
    from sl1conf.adapters import AdapterError, load

    from sl1conf.conformance.rules.profiles import load_profile

    profile = load_profile(platform)  # its errors name the file or the unknown platform
    try:
        return load(impl), profile
    except AdapterError as exc:
        raise UsageError(f"--impl {impl}: {exc}") from None


# ------------------------------------------------------------------ the output folder

def _read_summary(folder: Path) -> dict:
    """``folder``'s summary.json, checked against schemas/fuzz-summary.schema.json: a missing,
    corrupt or hand-edited one is one line naming the file (exit 2)."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: " + ("not a folder" if folder.exists() else "no such folder"))
    path = folder / "summary.json"
    if not path.exists():
        raise UsageError(f"{folder}: not a sl1conf fuzz output (no summary.json)")
    return jsonfiles.read_checked(path, "fuzz-summary.schema.json", SCHEMA_VERSION, UsageError)


def _claim(out: Path, identity: dict, shards: list, force: bool) -> "dict | None":
    """Check ``out`` may be written, and prove it (created, a file written and removed there)
    before any work; the previous summary there (same campaign), if any."""
    from sl1conf.conformance.common.files import writable_folder

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    with _cannot_write(out):
        empty = not out.exists() or not any(out.iterdir())
        writable_folder(out, UsageError)
    if empty:
        return None
    try:
        old = _read_summary(out)
    except (UsageError, OSError, ValueError):
        old = None
    if old is not None and old["identity"] == identity and old["shards"] == shards:
        return old
    if not force:
        raise UsageError(f"--out {out} is not empty and not an output of this campaign: choose another folder "
                     "or pass --force")
    return old


def _vector_case(case, kind: str):
    from sl1conf.conformance.vectors.families import finish_case  # flags and open alternatives, as every vector case gets them
    from sl1conf.conformance.vectors.cases import VectorCase

    fmt = case.format
    vc = VectorCase(case.dy.copy(), case.x1.copy(), case.x2.copy(), int(case.beta), variant=case.variant,
                    core_mask=int(case.core_mask), flags=("fuzz", f"fuzz-{kind}"))
    return finish_case(fmt, vc)


def _write_sets(out: Path, seed: int, cases_by_dtype: dict, old: "dict | None") -> dict:
    """``vectors-<dtype>`` for each dtype's (family spec, VectorCase) list; stale ones removed."""
    from sl1conf.conformance.vectors.cases import Family
    from sl1conf.conformance.vectors.store import is_replaceable, remove, write

    written = {}
    for dtype, items in cases_by_dtype.items():
        families = {}
        for spec, vc in items:
            families.setdefault(spec, Family(spec[0], spec[1], spec[2], ("fuzz",))).cases.append(vc)
        order = sorted(families.values(), key=lambda f: f.id != REGRESSIONS[0])
        write(out / f"vectors-{dtype}", dtype, order, seed=seed, force=True)
        written[dtype] = f"vectors-{dtype}"
    for dtype, name in ((old or {}).get("vectors") or {}).items():
        stale = out / name
        if dtype not in written and stale.is_dir() and is_replaceable(stale):
            remove(stale)  # the set; files the user put beside it stay
    return written


def _case_ids(items: list) -> list:
    """The ids ``store.write`` gives ``items`` (regressions first, then core masks)."""
    ids, counts = [], {}
    order = sorted(range(len(items)), key=lambda i: items[i][0][0] != REGRESSIONS[0])
    for i in order:
        fid = items[i][0][0]
        ids.append((i, f"{fid}.{counts.get(fid, 0)}"))
        counts[fid] = counts.get(fid, 0) + 1
    return [cid for _, cid in sorted(ids)]


def _commands(summary: dict, out: Path) -> list:
    camp = summary["campaign"]
    return [certify_command(camp["impl"], platform=camp["platform"], dtype=dtype, vectors=out / name,
                            out=out / f"report-{dtype}")
            for dtype, name in summary["vectors"].items()]


def _explain(dtype: str, entry: dict) -> str:
    return explain_command(dtype, entry["dy"], entry["x1"], entry["x2"], entry["beta"])


@contextmanager
def _cannot_write(out: Path):
    """An OSError while reading or writing ``out`` becomes one line (exit 2), not a traceback."""
    try:
        yield
    except OSError as exc:
        raise UsageError(f"{out}: cannot write there ({exc.strerror or exc})") from None


def _save(out: Path, summary: dict, saved: list, old) -> None:
    """Write the vector sets, then the summary (the commit point), and print the reproducers."""
    with _cannot_write(out):
        _write_all(out, summary, saved, old)
    _print(summary, out)


def _write_all(out: Path, summary: dict, saved: list, old) -> None:
    from sl1conf.conformance.common.files import write_atomic

    by_dtype = {}
    for entry, items in saved:
        by_dtype.setdefault(entry["dtype"], []).append((entry, items))
    sets = {}
    for dtype, pairs in by_dtype.items():
        flat = [(spec, vc) for _, items in pairs for spec, vc in items]
        ids = iter(_case_ids(flat))
        for entry, items in pairs:
            entry["cases"] = [next(ids) for _ in items]
        sets[dtype] = flat
    out.mkdir(parents=True, exist_ok=True)
    summary["vectors"] = _write_sets(out, summary["campaign"]["seed"], sets, old)
    summary["saved"] = [entry for entry, _ in saved]
    summary["certify"] = _commands(summary, out)
    # what we write must read back: a summary that does not match its schema is a bug (a traceback)
    jsonfiles.validate(summary, "fuzz-summary.schema.json", RuntimeError, f"the summary for {out / 'summary.json'}")
    write_atomic(out / "summary.json", json.dumps(summary, indent=1) + "\n")


def _print(summary: dict, out: Path) -> None:
    f = summary["failures"]
    print(f"fuzz {summary['implementation']['adapter']} on {summary['profile']['name']}: "
          f"{summary['elements']:,} elements in {summary['batches']['count']} batches "
          f"({summary['elements_per_second'] / 1e6:.2f} M elements/s), seed {summary['campaign']['seed']}, "
          f"shard(s) {', '.join(summary['shards'])}"
          + "".join(f" ({shard} missing)" for shard in summary.get("missing_shards", []))
          + (" (interrupted)" if summary.get("interrupted") else "")
          + f": {len(f['patterns'])} finding(s) ({f['distinct']} distinct failure(s), {f['findings']} in all), "
            f"{len(summary['saved'])} saved")
    for i, e in enumerate(summary["saved"], 1):
        where = f"batch {e['found']['batch']}, case {e['found']['case']}" + (
            f", element {e['found']['element']}" if e["found"]["element"] is not None else "")
        what = f"got {e['got']}, expected {e['expected']}" if "got" in e else e["detail"]
        print(f"  [{i}] {describe_pattern(e['pattern'])}: {e['distinct']} distinct failure(s), {e['findings']} in all")
        print(f"      smallest: {e['kind']} ({e['dtype']} {e['variant']}, length {e['length']}): {what} (found in {where}; "
              f"vectors-{e['dtype']} case {', '.join(e['cases'])})")
        if "dy" in e:
            print(f"      {_explain(e['dtype'], e)}")
        if e.get("replay"):
            print(f"      {e['replay']}")
    shown = {e["pattern"] for e in summary["saved"]}
    rest = [r for r in f["patterns"] if r["pattern"] not in shown and "/rounding-bias/" not in r["pattern"]]
    for r in rest:
        print(f"  [-] {describe_pattern(r['pattern'])}: {len(r['keys'])} distinct failure(s), {r['findings']} in all "
              "(no reproducer of its own saved: --max-cases, or the same as one above)")
    for run, e in summary.get("rounding_bias", {}).items():
        for line in e["findings"]:
            print(f"  {accuracy.ID} {run.replace('/', ' ')}, over the campaign: {line}")
    for cmd in summary["certify"]:
        print(f"  certify: {cmd}")
    print(f"summary: {out / 'summary.json'}")


# ------------------------------------------------------------------ a campaign

def _progress(campaign) -> Progress:
    """The campaign's bar on a terminal (common.progress): batches of this shard done of all
    (with an ETA) when the campaign counts batches (--elements), the count and rates when it
    runs for a time; elements per second and the distinct failures so far."""
    total = len(campaign.shard_range.items(0, campaign.batches)) if campaign.batches is not None else None
    return Progress("fuzz", total, "batches")


class _Stop:
    """Set by the first SIGINT or SIGTERM: the campaign stops and saves what it found, and
    minimizing gets INTERRUPTED_MINIMIZE_SECONDS from then; a second signal interrupts at
    once (KeyboardInterrupt: exit 130, nothing saved)."""

    def __init__(self):
        self.at = None

    def __call__(self) -> bool:
        return self.at is not None

    def give_up(self) -> bool:
        return self.at is not None and time.monotonic() > self.at + INTERRUPTED_MINIMIZE_SECONDS

    def _handle(self, signum, frame) -> None:
        if self.at is not None:
            raise KeyboardInterrupt
        self.at = time.monotonic()
        text = ("\r\033[K" if sys.stderr.isatty() else "") + f"fuzz: {signal.Signals(signum).name}: stopping; " \
            "minimizing and saving what was found (again to abandon it)\n"
        try:
            os.write(sys.stderr.fileno(), text.encode())  # not print: the handler may interrupt a print
        except (OSError, ValueError):  # no file descriptor (a captured stderr)
            print(text, end="", file=sys.stderr)


@contextmanager
def _stop_on_signals():
    """A :class:`_Stop` wired to SIGINT and SIGTERM while the block runs (in the main thread;
    elsewhere signals cannot be caught and the stop is never set)."""
    stop = _Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    old = {s: signal.signal(s, stop._handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextmanager
def _local_pool(workers: int, stop: _Stop):
    """A spawn process pool whose workers ignore SIGINT and SIGTERM (``fuzz.worker_init``).
    A campaign that ends normally lets them exit; a stopped or failed one ends them at once
    (SIGKILL) rather than waiting for their batches, so it neither hangs nor leaves orphans."""
    import concurrent.futures as cf
    import multiprocessing

    pool = cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=fuzz.worker_init)
    ended = False
    try:
        yield pool
        ended = not stop()
    finally:
        if not ended:
            procs = list((pool._processes or {}).values())  # no public way before Python 3.14
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.kill()
                proc.join()
        pool.shutdown(wait=True)


def _execute(campaign, adapter, profile, workers: int, scheduler, stop):
    bar, seen = _progress(campaign), [0]

    def show(r: fuzz.Result) -> None:
        bar.update(1, elements=r.elements - seen[0], failures=len(r.first))
        seen[0] = r.elements

    with bar:
        if scheduler:
            from sl1conf.conformance.search.distributed import dask_executor

            with dask_executor(scheduler) as (executor, threads):
                return fuzz.run(campaign, executor=executor, in_flight=2 * threads, progress=show, stop=stop)
        if workers > 1:
            with _local_pool(workers, stop) as pool:
                return fuzz.run(campaign, executor=pool, in_flight=2 * workers, progress=show, stop=stop)
        return fuzz.run(campaign, adapter=adapter, profile=profile, progress=show, stop=stop)


def _ranges(ks) -> list:
    """Sorted batch indices as [start, stop, step] ranges."""
    out = []
    for k in sorted(ks):
        if out and (out[-1][3] == 1 or k - out[-1][1] == out[-1][2]):
            run = out[-1]
            run[2] = k - run[1] if run[3] == 1 else run[2]
            run[1], run[3] = k, run[3] + 1
        else:
            out.append([k, k, 1, 1])  # first, last, step, count
    return [[a, b + c, c] for a, b, c, _ in out]


def _expand(ranges) -> list:
    return [k for a, b, c in ranges for k in range(a, b, c)]


def _ranges_text(ranges) -> str:
    return ", ".join(f"{a}" if b - a <= c else f"{a} to {b - c}" + (f" every {c}" if c > 1 else "")
                     for a, b, c in ranges) or "none"


def _missing_shards(identity: dict, shards: list) -> dict:
    """Shard -> how many batches it would have run (None: a timed campaign, unknown), for the
    shards of the campaign that no merged output holds."""
    missing, total = {}, identity["batches"]
    for shard in (fuzz.Shard(i, identity["shards"]) for i in range(1, identity["shards"] + 1)):
        if str(shard) not in shards:
            missing[str(shard)] = None if total is None else len(shard.items(0, total))
    return missing


def _minimized(campaign, profile, adapter, result, max_cases: int, out: Path, give_up=None) -> list:
    """(summary entry, [(family spec, VectorCase)]) per finding (a pattern's failures: see
    search.fuzz.pattern), its reproducer minimized from the failure found on the shortest call;
    findings whose minimized calls are the same (the same values) are saved once."""
    saved, seen = [], set()
    for group in result.groups():
        if len(saved) >= max_cases:
            break
        f = group.smallest
        case, g = fuzz.shrink(campaign, profile, adapter, f, give_up)
        fmt = case.format
        content = (case.dtype, case.variant, case.core_mask, case.beta, case.dy.tobytes(), case.x1.tobytes(),
                   case.x2.tobytes())
        final = (*g.key[:3], case.n, *g.key[4:])
        if content in seen or final in seen:
            continue
        seen |= {content, final}
        entry = {"requirement": g.requirement, "title": by_id(g.requirement).title,
                 "breaks": list(g.breaks or (g.requirement,)),
                 "kind": g.kind, "key": fuzz.key_text(f.key), "pattern": fuzz.key_text(group.pattern),
                 "distinct": len(group.keys), "findings": group.findings, "detail": g.detail, "dtype": case.dtype,
                 "variant": case.variant, "core_mask": f"{case.core_mask:#x}", "length": case.n,
                 "element": g.element, "found": {"batch": f.batch, "case": f.case, "element": f.element},
                 "replay": shlex.join(["sl1conf", "fuzz", "replay", str(out), "--batch", str(f.batch)])}
        if g.element is not None:
            k = g.element
            o = adapter.run([case])[0]
            want = fast_oracle.smoothl1lossgrad(*(a[k:k + 1] for a in case.floats()[:3]), case.floats()[3])
            entry.update({name: formats.hex_bits(fmt, getattr(case, name)[k]) for name in ("dy", "x1", "x2")})
            entry["beta"] = formats.hex_bits(fmt, case.beta)
            entry["expected"] = formats.hex_bits(fmt, want.view(fmt.uint)[0])
            if o.status == "ok":
                entry["got"] = formats.hex_bits(fmt, o.out[k])
        family = BOUNDARY_EXACT if g.kind == "element" and g.key[4] == fuzz.BOUNDARY else REGRESSIONS
        items = [(family, _vector_case(case, g.kind))]
        if g.kind == "core-mask":
            twin = dataclasses.replace(case, core_mask=twin_mask(case, profile.core_mask))
            items = [(CORE_MASKS, _vector_case(case, g.kind)), (CORE_MASKS, _vector_case(twin, g.kind))]
        saved.append((entry, items))
    return saved


def _patterns(groups, bias_keys) -> list:
    """The summary's ``failures.patterns``: per finding, its pattern, the distinct failures (keys)
    in it and how many failures; a failing rounding-bias direction is a finding of its own."""
    rows = [{"pattern": fuzz.key_text(g.pattern), "keys": sorted(fuzz.key_text(k) for k in g.keys), "findings": g.findings}
            for g in groups]
    rows += [{"pattern": k, "keys": [k], "findings": 1} for k in bias_keys]
    return sorted(rows, key=lambda r: r["pattern"])


def describe_pattern(text: str) -> str:
    """A pattern (search.fuzz.pattern, as text) in words."""
    parts = text.split("/")
    head = " ".join(parts[:3])
    if len(parts) == 5 and parts[3] == fuzz.NOT_WRITTEN:
        where = {"end": "the last elements of a call", "start": "the first elements of a call",
                 "scattered": "elements here and there in a call"}.get(parts[4], parts[4])
        return f"{head}: {where} left unwritten"
    if len(parts) == 5 and parts[3] in ("wrong", "nan"):
        what = "NaN results" if parts[3] == "nan" else "wrong values"
        branch = {"gt": "x1 - x2 > beta", "lt": "x1 - x2 < -beta", "mid": "|x1 - x2| <= beta",
                  "nan": "x1 - x2 or beta NaN"}.get(parts[4], parts[4])
        return f"{head}: {what} where {branch}"
    return text


def _bias(counts: dict) -> tuple:
    """The summary's ``rounding_bias`` ("dtype/variant" -> the summed counts and R01's test of
    them) and the failure keys of its failing directions (judged once per campaign)."""
    entry, keys = {}, []
    for run, c in sorted(counts.items()):
        test = rounding_bias(c)
        entry[run] = {"counts": c, "test": test, "findings": bias_findings(test)}
        keys += bias_failure_keys(run, test)
    return entry, keys


def _summary(campaign, profile, adapter, result, workers, scheduler) -> dict:
    from sl1conf import __version__

    from sl1conf.conformance.common.hostinfo import describe_host

    bias, bias_keys = _bias(result.bias)
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "suite_version": __version__,
            "campaign": campaign.to_dict(), "identity": campaign.identity(), "shards": [campaign.shard],
            "batch_seed": "numpy.random.SeedSequence(seed, spawn_key=(batch,))",
            "batches": {"count": len(result.batches), "ranges": _ranges(result.batches)},
            "elements": result.elements, "cases": result.cases, "seconds": round(result.seconds, 3),
            "elements_per_second": round(result.rate), "workers": workers, "scheduler": scheduler,
            "interrupted": result.interrupted,
            "failures": {"distinct": len(result.first) + len(bias_keys), "findings": result.findings + len(bias_keys),
                         "keys": sorted([fuzz.key_text(k) for k in result.first] + bias_keys),
                         "patterns": _patterns(result.groups(), bias_keys)},
            "rounding_bias": bias,
            "implementation": adapter.describe(), "profile": profile.summary(), "host": describe_host()}


def _campaign(args) -> int:
    for name in ("impl", "platform", "out"):
        if getattr(args, name) is None:
            raise UsageError(f"a campaign needs --{name}")
    if args.scheduler and args.workers != 1:
        raise UsageError("--workers is for local runs; a Dask cluster (--scheduler) has its own workers")
    adapter, profile = _load(args.impl, args.platform)
    with adapter:
        campaign = _campaign_from(args, adapter, profile)
        if not args.scheduler:  # a cluster's workers have their own memory
            _fits_in_memory(campaign, args.workers)
        out = Path(args.out)
        old = _claim(out, campaign.identity(), [campaign.shard], args.force)
        print(f"fuzz: seed {campaign.seed}, shard {campaign.shard}, "
              + (f"{campaign.batches} batches in all" if campaign.batches else f"{campaign.seconds:g} s"),
              file=sys.stderr)
        with _stop_on_signals() as stop:
            result = _execute(campaign, adapter, profile, args.workers, args.scheduler, stop)
            summary = _summary(campaign, profile, adapter, result, args.workers, args.scheduler)
            saved = _minimized(campaign, profile, adapter, result, args.max_cases, out, stop.give_up)
            _save(out, summary, saved, old)
    if stop():
        print("fuzz: interrupted: the summary covers the batches that finished", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_FAIL if summary["failures"]["findings"] else EXIT_OK


# ------------------------------------------------------------------ merge

def _merge(args) -> int:
    from sl1conf.conformance.vectors.store import load

    _no_campaign_options(args, "merge")
    if not args.dirs or args.merge_out is None:
        raise UsageError("merge needs the folders to merge and --out DIR")
    parts = [(Path(d), _read_summary(Path(d))) for d in args.dirs]
    first = parts[0][1]
    shards, batches = [], set()
    for folder, s in parts:
        if s["identity"] != first["identity"]:
            diff = sorted(k for k in s["identity"] if s["identity"][k] != first["identity"].get(k))
            raise UsageError(f"{folder} is another campaign than {parts[0][0]} (differs in {', '.join(diff)})")
        if set(s["shards"]) & set(shards):
            raise UsageError(f"{folder}: shard {sorted(set(s['shards']) & set(shards))[0]} is merged twice")
        mine = set(_expand(s["batches"]["ranges"]))
        if mine & batches:
            raise UsageError(f"{folder}: batch {min(mine & batches)} was run by two of the outputs")
        shards += s["shards"]
        batches |= mine
    out = Path(args.merge_out)
    old = _claim(out, first["identity"], sorted(shards), args.merge_force)
    saved, seen, by_pattern = [], set(), {}
    for folder, s in parts:
        sets = {}
        for e in s["saved"]:
            dtype = e["dtype"]
            if dtype not in sets:
                sets[dtype] = load(folder / s["vectors"][dtype])
            vs = sets[dtype]
            rows = {r["id"]: r for r in vs.manifest["cases"]}
            items = []
            for cid in e["cases"]:
                row = rows[cid]
                fam = vs.family(row["family"])
                items.append(((fam["id"], fam["name"], fam["description"]), vs.case(row)))
            content = tuple((spec, vc.variant, vc.core_mask, vc.beta, vc.dy.tobytes(), vc.x1.tobytes(),
                             vc.x2.tobytes()) for spec, vc in items)
            if content in seen:
                continue
            seen.add(content)
            other = by_pattern.get(e["pattern"])
            if other is None or e["length"] < saved[other][0]["length"]:  # one reproducer a finding: the smallest
                if other is None:
                    by_pattern[e["pattern"]] = len(saved)
                    saved.append((dict(e), items))
                else:
                    saved[other] = (dict(e), items)
    missing = _missing_shards(first["identity"], shards)
    for shard, n in missing.items():
        print(f"fuzz merge: warning: shard {shard} missing: "
              + ("its batches not run (a timed campaign)" if n is None else f"{n} batches not run"), file=sys.stderr)
    parts_seconds = [s["seconds"] for _, s in parts]
    counts: dict = {}
    for _, s in parts:  # the lean is judged again over the sum of the shards' counts
        for run, e in s.get("rounding_bias", {}).items():
            add_bias_counts(counts.setdefault(run, {}), e["counts"])
    bias, bias_keys = _bias(counts)
    old_bias = [k for _, s in parts for k in s["failures"]["keys"] if "/rounding-bias/" in k]
    keys = {k for _, s in parts for k in s["failures"]["keys"] if "/rounding-bias/" not in k} | set(bias_keys)
    elements = sum(s["elements"] for _, s in parts)
    summary = {**first, "shards": sorted(shards), "merged_from": [str(f) for f, _ in parts],
               "missing_shards": sorted(missing),
               "batches_not_run": None if None in missing.values() else sum(missing.values()),
               "interrupted": any(s.get("interrupted") for _, s in parts),
               "batches": {"count": len(batches), "ranges": _ranges(batches)},
               "elements": elements, "cases": sum(s["cases"] for _, s in parts),
               "seconds": max(parts_seconds),
               "elements_per_second": sum(s["elements_per_second"] for _, s in parts),
               "failures": {"distinct": len(keys), "findings": sum(s["failures"]["findings"] for _, s in parts)
                            - len(old_bias) + len(bias_keys), "keys": sorted(keys),
                            "patterns": _merged_patterns(parts, bias_keys)},
               "rounding_bias": bias}
    counts = {r["pattern"]: r for r in summary["failures"]["patterns"]}
    for e, _ in saved:  # each reproducer with its finding's counts over every shard
        e["distinct"], e["findings"] = len(counts[e["pattern"]]["keys"]), counts[e["pattern"]]["findings"]
    summary.pop("saved", None)
    _save(out, summary, saved, old)
    return EXIT_FAIL if summary["failures"]["findings"] else EXIT_OK


def _merged_patterns(parts, bias_keys) -> list:
    """The shards' ``failures.patterns`` united (keys united, failures summed); the rounding-bias
    findings are those judged again over the merged counts."""
    rows: dict = {}
    for _, s in parts:
        for r in s["failures"]["patterns"]:
            if "/rounding-bias/" in r["pattern"]:
                continue
            row = rows.setdefault(r["pattern"], {"pattern": r["pattern"], "keys": set(), "findings": 0})
            row["keys"] |= set(r["keys"])
            row["findings"] += r["findings"]
    out = [{**r, "keys": sorted(r["keys"])} for r in rows.values()]
    out += [{"pattern": k, "keys": [k], "findings": 1} for k in bias_keys]
    return sorted(out, key=lambda r: r["pattern"])


# ------------------------------------------------------------------ replay

def _replay(args) -> int:
    _no_campaign_options(args, "replay")
    if len(args.dirs) != 1 or args.batch is None:
        raise UsageError("replay needs one fuzz output folder and --batch K")
    _positive("batch", args.batch, 0)
    s = _read_summary(Path(args.dirs[0]))
    ranges = s["batches"]["ranges"]
    if not any(a <= args.batch < b and (args.batch - a) % c == 0 for a, b, c in ranges):
        raise UsageError(f"--batch {args.batch}: {args.dirs[0]} did not run that batch (it ran {_ranges_text(ranges)})")
    campaign = fuzz.Campaign.from_dict(s["campaign"])
    adapter, profile = _load(args.replay_impl or campaign.impl, campaign.platform)
    with adapter:
        cases = fuzz.make_batch(campaign, profile, args.batch)
        findings = fuzz.check_cases(adapter, profile, cases)
    print(f"batch {args.batch} of seed {campaign.seed}: {len(cases)} cases, {sum(c.n for c in cases):,} elements, "
          f"{len(findings)} finding(s)")
    for f in findings:
        c = cases[f.case]
        print(f"  {f.kind} case {f.case} ({c.dtype} {c.variant}, length {c.n}"
              + (f", element {f.element}" if f.element is not None else "") + f"): {f.detail}")
    return EXIT_FAIL if findings else EXIT_OK

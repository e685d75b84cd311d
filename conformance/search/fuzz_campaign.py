"""A fuzz campaign's output folder: running it, its summary, its minimized failures, merging shards'.

An output folder holds ``summary.json`` (the campaign, the batches run, elements, failures,
throughput, the implementation) and, per dtype with failures, ``vectors-<dtype>/``: the
minimized failures as a vector set in the standard format, which ``sl1conf certify
--vectors`` runs. Writes are atomic (vector sets first, the summary last); a folder is
reused only if it is empty or a previous output of the same campaign, other folders need
``force`` (and then only our own files are replaced). The folder is proved writable before
the campaign starts (:func:`claim`), so a long run never ends in a traceback. SIGINT and
SIGTERM stop a campaign cleanly (:func:`run_campaign`): what was found is minimized (in
bounded time), saved, and the summary says ``"interrupted": true``. The batches themselves
are :mod:`.fuzz`'s; docs/fuzzing.md is the user's guide.
"""

from __future__ import annotations

import json
import shlex
from contextlib import contextmanager
from pathlib import Path

from sl1conf.reference import fast_oracle

from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.pool import process_pool, stop_on_signals
from sl1conf.conformance.common.progress import Progress
from sl1conf.conformance import requirements
from sl1conf.conformance.requirements import by_id, core_masks
from sl1conf.conformance.requirements.base import element_record
from sl1conf.conformance.requirements.evidence import add_evidence, evidence_of
from sl1conf.conformance.requirements.reasons import reason_counts
from sl1conf.conformance.requirements.elements import BOUNDARY_ID
from sl1conf.conformance.search import fuzz
from sl1conf.conformance.search.ranges import expand, runs, runs_text
from sl1conf.conformance.search.shards import missing_shards

__all__ = ["FuzzError", "SCHEMA", "SCHEMA_VERSION", "read_summary", "claim", "fits_in_memory", "run_campaign",
           "write_output", "merge", "replayed_campaign", "replay_vectors", "statistic_keys"]

SCHEMA = "sl1conf-fuzz"
SCHEMA_VERSION = 7  # 2: findings keyed by requirement id; saved failures name their requirements;
# 3: batches of 2^20 elements, long calls drawn by sampling.fast_batch (another batch for the same seed);
# 4: failures grouped by pattern (failures.patterns), one saved reproducer per pattern with its counts;
# 5: R01's rounding-bias counts leave out, as 'explained', the deviations an allowed evaluation gives (the
# rule changed: older summaries are not merged with newer ones); saved reproducers carry ulp and not_written;
# 6: the evidence per requirement (requirements.evidence: every rejected element and the worst, every failing
# call and the first), as certify's runs and sweeps hold it; 7: every element counted by the judge's reason
# (``reasons``: a version 6 summary is read as 7 with ``reasons`` null, not counted)
REGRESSIONS = (100, "fuzz-regressions", "Failures found by sl1conf fuzz, each minimized to the shortest call "
                                        "and the simplest values that still fail.")
CORE_MASKS = (11, "core-masks", "Failures found by sl1conf fuzz: the same data under two core masks gives "
                                f"different bits (compared by certify's {core_masks.ID}).")
BOUNDARY_EXACT = (1, "boundary-exact", "Failures found by sl1conf fuzz where x1 - x2 equals +beta or -beta "
                                       f"exactly: the result must be +-dy bit for bit (checked by certify's {BOUNDARY_ID}).")
INTERRUPTED_MINIMIZE_SECONDS = 10.0
"""After SIGINT or SIGTERM, how long minimizing may go on before the rest is saved as it is."""
STOPPING = "fuzz: {signal}: stopping; minimizing and saving what was found (again to abandon it)\n"
BATCH_BYTES_PER_ELEMENT = 32
"""Memory a batch needs per element of its long calls (each dtype and variant), at least: an
honest implementation's batch holds about 17 bytes an element (inputs, output, the oracle's
bits), one whose every element is judged about 230. A campaign whose batches would not fit
even at this rate in the memory available (one batch per worker process) is refused before it
starts, rather than failing with a MemoryError once it runs."""


class FuzzError(SuiteError):
    """Bad input for a campaign, a merge or a replay (a folder, a summary): one line, exit 2."""


# ------------------------------------------------------------------ the output folder

def read_summary(folder: Path) -> dict:
    """``folder``'s summary.json, checked against schemas/fuzz-summary.schema.json: a missing,
    corrupt or hand-edited one is one line naming the file (exit 2)."""
    if not folder.is_dir():
        raise FuzzError(f"{folder}: " + ("not a folder" if folder.exists() else "no such folder"))
    path = folder / "summary.json"
    if not path.exists():
        raise FuzzError(f"{folder}: not a sl1conf fuzz output (no summary.json)")
    return jsonfiles.read_checked(path, "fuzz-summary.schema.json", SCHEMA_VERSION, FuzzError,
                                  upgrades={6: _from_version_6})


def _from_version_6(summary: dict) -> dict:
    """A version 6 summary as version 7: the same findings and evidence, no counts by reason (null)."""
    return {**summary, "reasons": None, "schema_version": 7}


@contextmanager
def _cannot_write(out: Path):
    """An OSError while reading or writing ``out`` becomes one line (exit 2), not a traceback."""
    try:
        yield
    except OSError as exc:
        raise FuzzError(f"{out}: cannot write there ({exc.strerror or exc})") from None


def claim(out: Path, identity: dict, shards: list, force: bool) -> "dict | None":
    """Check ``out`` may be written, and prove it (created, a file written and removed there)
    before any work; the previous summary there (same campaign), if any."""
    from sl1conf.conformance.common.files import writable_folder

    if out.exists() and not out.is_dir():
        raise FuzzError(f"--out {out} exists and is not a folder")
    with _cannot_write(out):
        empty = not out.exists() or not any(out.iterdir())
        writable_folder(out, FuzzError)
    if empty:
        return None
    try:
        old = read_summary(out)
    except (FuzzError, OSError, ValueError):
        old = None
    if old is not None and old["identity"] == identity and old["shards"] == shards:
        return old
    if not force:
        raise FuzzError(f"--out {out} is not empty and not an output of this campaign: choose another folder "
                        "or pass --force")
    return old


def fits_in_memory(campaign: fuzz.Campaign, workers: int, available: "int | None") -> None:
    """Refuse a campaign whose batches could not be held in ``available`` bytes (see
    BATCH_BYTES_PER_ELEMENT; None: unknown, not refused)."""
    runs_per_batch = len(campaign.dtypes) * len(campaign.variants)
    need = BATCH_BYTES_PER_ELEMENT * campaign.batch_elements * runs_per_batch * workers
    if available is not None and need > available:
        raise FuzzError(f"--batch-elements {campaign.batch_elements}: {workers} batch(es) of {runs_per_batch} long "
                        f"call(s) need at least {need / 2**30:.1f} GiB, more than the {available / 2**30:.1f} GiB "
                        "of memory available here: give fewer --batch-elements (or --workers)")


# ------------------------------------------------------------------ writing

def _vector_case(case, kind: str):
    from sl1conf.conformance.vectors.families import finish_case  # flags and open alternatives, as every vector case gets them
    from sl1conf.conformance.vectors.cases import VectorCase

    fmt = case.format
    vc = VectorCase(case.replace(dy=case.dy.copy(), x1=case.x1.copy(), x2=case.x2.copy(), length=None, id="",
                                 out_alias=None, guard="end"), flags=("fuzz", f"fuzz-{kind}"))
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


def write_output(out: Path, summary: dict, saved: list, old, commands) -> None:
    """Write the vector sets of ``saved`` (the summary entry and the vector cases of each
    reproducer), then the summary (the commit point), with ``vectors``, ``saved`` and
    ``certify`` (``commands(summary, out)``: the certify command lines that run the sets) set."""
    from sl1conf.conformance.common.files import write_atomic  # at call time: a test makes it fail

    with _cannot_write(out):
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
        summary["certify"] = commands(summary, out)
        # what we write must read back: a summary that does not match its schema is a bug (a traceback)
        jsonfiles.validate(summary, "fuzz-summary.schema.json", RuntimeError, f"the summary for {out / 'summary.json'}")
        write_atomic(out / "summary.json", json.dumps(summary, indent=1) + "\n")


# ------------------------------------------------------------------ a campaign

def _no_bar(total: "int | None") -> Progress:
    """No bar: a campaign run from code rather than the command line."""
    return Progress("fuzz", total, "batches", enabled=False)


def _execute(campaign, adapter, profile, workers: int, scheduler, stop, progress):
    """The campaign's batches (``fuzz.run``) in this process, on a local pool of ``workers`` or
    on the Dask cluster at ``scheduler``, with the bar ``progress(total)`` makes (a
    common.progress.Progress): batches of this shard done of ``total`` (None when the campaign
    runs for a time), elements checked and the distinct failures so far."""
    total = len(campaign.shard_range.items(0, campaign.batches)) if campaign.batches is not None else None
    bar, seen = progress(total), [0]

    def show(r: fuzz.Result) -> None:
        bar.update(1, elements=r.elements - seen[0], failures=len(r.first))
        seen[0] = r.elements

    with bar:
        if scheduler:
            from sl1conf.conformance.search.distributed import dask_executor

            with dask_executor(scheduler) as (executor, threads):
                return fuzz.run(campaign, executor=executor, in_flight=2 * threads, progress=show, stop=stop)
        if workers > 1:
            with process_pool(workers, stop) as pool:
                return fuzz.run(campaign, executor=pool, in_flight=2 * workers, progress=show, stop=stop)
        return fuzz.run(campaign, adapter=adapter, profile=profile, progress=show, stop=stop)


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
            element = element_record(fmt, case.dy[k], case.x1[k], case.x2[k], case.beta, want.view(fmt.uint)[0],
                                     o.out[k] if o.status == "ok" else 0, may_be_fill=case.out_alias is None)
            entry.update(element.to_json(result=o.status == "ok"))  # no result: the inputs and the expected bits only
        family = BOUNDARY_EXACT if g.kind == "element" and g.key[4] == fuzz.BOUNDARY else REGRESSIONS
        items = [(family, _vector_case(case, g.kind))]
        if g.also:  # the calls it is seen in too (a twin under another core_mask)
            items = [(CORE_MASKS, _vector_case(c, g.kind)) for c in (case, *g.also)]
        saved.append((entry, items))
    return saved


def _judged(totals: dict) -> tuple:
    """The summary's entry of each statistic (``requirements.STATISTICS``: its name -> "dtype/variant"
    -> the summed counts and their judgement, judged once per campaign) and the failure keys of
    what failed."""
    entries, keys = {}, []
    for s in requirements.STATISTICS:
        entry = entries[s.name] = {}
        for run, counts in sorted(totals.get(s.name, {}).items()):
            entry[run] = {"counts": counts, **s.judge(counts)}
            keys += s.failure_keys(run, entry[run])
    return entries, keys


def statistic_keys(summary: dict) -> set:
    """The failure keys a summary's statistics gave (each a finding of its own, with no reproducer)."""
    return {k for s in requirements.STATISTICS for run, e in summary.get(s.name, {}).items()
            for k in s.failure_keys(run, e)}


def _patterns(rows: list, statistic_keys) -> list:
    """The summary's ``failures.patterns``: ``rows`` (per finding, its pattern, the distinct
    failures (keys) in it and how many failures) and a finding of its own for each failure
    key of a statistic, sorted by pattern."""
    rows = rows + [{"pattern": k, "keys": [k], "findings": 1} for k in statistic_keys]
    return sorted(rows, key=lambda r: r["pattern"])


def _summary(campaign, profile, adapter, result, workers, scheduler) -> dict:
    from sl1conf import __version__

    from sl1conf.conformance.common.hostinfo import describe_host

    judged, judged_keys = _judged(result.statistics)
    rows = [{"pattern": fuzz.key_text(g.pattern), "keys": sorted(fuzz.key_text(k) for k in g.keys),
             "findings": g.findings} for g in result.groups()]
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "suite_version": __version__,
            "campaign": campaign.to_dict(), "identity": campaign.identity(), "shards": [campaign.shard],
            "batch_seed": "numpy.random.SeedSequence(seed, spawn_key=(batch,))",
            "batches": {"count": len(result.batches), "ranges": runs(result.batches)},
            "elements": result.elements, "cases": result.cases, "seconds": round(result.seconds, 3),
            "elements_per_second": round(result.rate), "workers": workers, "scheduler": scheduler,
            "interrupted": result.interrupted,
            "failures": {"distinct": len(result.first) + len(judged_keys),
                         "findings": result.findings + len(judged_keys),
                         "keys": sorted([fuzz.key_text(k) for k in result.first] + judged_keys),
                         "patterns": _patterns(rows, judged_keys)},
            "requirements": {rid: e.to_json() for rid, e in sorted(result.evidence.items())},
            "reasons": reason_counts(result.reasons), **judged,
            "implementation": adapter.describe(), "profile": profile.summary(), "host": describe_host()}


def run_campaign(campaign, adapter, profile, *, workers: int, scheduler, max_cases: int, out: Path, old,
                 commands, progress=_no_bar) -> tuple:
    """(the summary written, whether a signal stopped it): run the campaign, minimize up to
    ``max_cases`` findings and write ``out`` (``old``: :func:`claim`'s; ``commands``: as for
    :func:`write_output`; ``progress(total)``: the bar of the batches, see ``_execute``). The
    first SIGINT or SIGTERM stops the batches; what was found is still minimized (for
    INTERRUPTED_MINIMIZE_SECONDS at most) and saved."""
    with stop_on_signals(STOPPING, INTERRUPTED_MINIMIZE_SECONDS) as stop:
        result = _execute(campaign, adapter, profile, workers, scheduler, stop, progress)
        summary = _summary(campaign, profile, adapter, result, workers, scheduler)
        saved = _minimized(campaign, profile, adapter, result, max_cases, out, stop.give_up)
        write_output(out, summary, saved, old, commands)
    return summary, stop()


# ------------------------------------------------------------------ merge and replay

def _merged_parts(parts: list) -> tuple:
    """(shards, batches) of the shards' summaries ``parts`` ([(folder, summary)]), checked to be
    disjoint parts of one campaign."""
    first = parts[0][1]
    shards, batches = [], set()
    for folder, s in parts:
        if s["identity"] != first["identity"]:
            diff = sorted(k for k in s["identity"] if s["identity"][k] != first["identity"].get(k))
            raise FuzzError(f"{folder} is another campaign than {parts[0][0]} (differs in {', '.join(diff)})")
        if set(s["shards"]) & set(shards):
            raise FuzzError(f"{folder}: shard {sorted(set(s['shards']) & set(shards))[0]} is merged twice")
        mine = set(expand(s["batches"]["ranges"]))
        if mine & batches:
            raise FuzzError(f"{folder}: batch {min(mine & batches)} was run by two of the outputs")
        shards += s["shards"]
        batches |= mine
    return shards, batches


def _merged_saved(parts: list) -> list:
    """The shards' saved reproducers (summary entry, [(family spec, VectorCase)]), read back
    from their vector sets: one per pattern (the shortest), the same values saved once."""
    from sl1conf.conformance.vectors.store import load

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
    return saved


def _merged_patterns(parts, judged_keys) -> list:
    """The shards' ``failures.patterns`` united (keys united, failures summed); the statistics'
    findings are those judged again over the merged counts."""
    rows: dict = {}
    for _, s in parts:
        old = statistic_keys(s)
        for r in s["failures"]["patterns"]:
            if r["pattern"] in old:
                continue
            row = rows.setdefault(r["pattern"], {"pattern": r["pattern"], "keys": set(), "findings": 0})
            row["keys"] |= set(r["keys"])
            row["findings"] += r["findings"]
    return _patterns([{**r, "keys": sorted(r["keys"])} for r in rows.values()], judged_keys)


def merge(parts: list, out: Path, force: bool) -> tuple:
    """(the merged summary, its saved reproducers, :func:`claim`'s old summary, the missing
    shards: shard -> batches not run, None for a timed campaign) of the shards' outputs
    ``parts`` ([(folder, summary)]) into ``out``; :func:`write_output` writes them."""
    first = parts[0][1]
    shards, batches = _merged_parts(parts)
    old = claim(out, first["identity"], sorted(shards), force)
    saved = _merged_saved(parts)
    missing = missing_shards(first["identity"]["shards"], shards, first["identity"]["batches"])
    totals: dict = {}
    for _, s in parts:  # the statistics are judged again over the sum of the shards' counts
        fuzz.add_statistics(totals, {st.name: {run: e["counts"] for run, e in s.get(st.name, {}).items()}
                                     for st in requirements.STATISTICS})
    judged, judged_keys = _judged(totals)
    evidence: dict = {}
    for _, s in parts:
        add_evidence(evidence, evidence_of(s["requirements"]))
    counted = [statistic_keys(s) for _, s in parts]  # judged again above
    keys = {k for (_, s), c in zip(parts, counted) for k in s["failures"]["keys"] if k not in c} | set(judged_keys)
    summary = {**first, "shards": sorted(shards), "merged_from": [str(f) for f, _ in parts],
               "missing_shards": sorted(missing),
               "batches_not_run": None if None in missing.values() else sum(missing.values()),
               "interrupted": any(s.get("interrupted") for _, s in parts),
               "batches": {"count": len(batches), "ranges": runs(batches)},
               "elements": sum(s["elements"] for _, s in parts), "cases": sum(s["cases"] for _, s in parts),
               "seconds": max(s["seconds"] for _, s in parts),
               "elements_per_second": sum(s["elements_per_second"] for _, s in parts),
               "failures": {"distinct": len(keys), "findings": sum(s["failures"]["findings"] for _, s in parts)
                            - sum(map(len, counted)) + len(judged_keys), "keys": sorted(keys),
                            "patterns": _merged_patterns(parts, judged_keys)},
               "requirements": {rid: e.to_json() for rid, e in sorted(evidence.items())},
               "reasons": (None if any(s["reasons"] is None for _, s in parts) else
                           {r: sum(s["reasons"][r] for _, s in parts) for r in parts[0][1]["reasons"]}),
               **judged}
    by_pattern = {r["pattern"]: r for r in summary["failures"]["patterns"]}
    for e, _ in saved:  # each reproducer with its finding's counts over every shard
        e["distinct"], e["findings"] = len(by_pattern[e["pattern"]]["keys"]), by_pattern[e["pattern"]]["findings"]
    summary.pop("saved", None)
    return summary, saved, old, missing


def replayed_campaign(summary: dict, batch: int, folder) -> fuzz.Campaign:
    """The campaign recorded in ``summary`` (of ``folder``), checked to have run ``batch``."""
    ranges = summary["batches"]["ranges"]
    if not any(a <= batch < b and (batch - a) % c == 0 for a, b, c in ranges):
        raise FuzzError(f"--batch {batch}: {folder} did not run that batch (it ran {runs_text(ranges)})")
    return fuzz.Campaign.from_dict(summary["campaign"])


def replay_vectors(adapter, profile, vs, variants) -> tuple:
    """The calls of vector set ``vs`` of the ``variants`` given, checked as a batch is
    (``fuzz.check_cases``: every element judged by the one judge, every probe): ``sl1conf fuzz replay``
    of a sweep's rejections (or of any vector set). (the calls, the findings, requirement id ->
    Evidence at [0, call, element], the elements by the judge's reason)."""
    import numpy as np

    from sl1conf.conformance.rules.judge import Reason

    cases = [vs.case(row).call for row in vs.case_rows() if row["variant"] in variants]
    evidence, reasons = {}, np.zeros(len(Reason), np.int64)
    findings = fuzz.check_cases(adapter, profile, cases, evidence=evidence, reasons=reasons) if cases else []
    return cases, findings, evidence, reason_counts(reasons)

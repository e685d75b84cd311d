"""What a volume of dy planes costs per core (issue 38, item 2): elements per second of one sweep
worker (one process on one core: what a Dask worker thread or a pool process does), beside the
time the implementation itself takes for the same elements, and the projection of a whole
volume (every dy for every (x1, x2) pair, 2^48 elements, one beta) onto a cluster.

Rows: ``builtin:kernel`` (the Cython kernel in process) and ``builtin:sample`` (the sample C
library through ctypes, in its isolated, guarded worker: the transfer included in its own
time). For each, BLOCKS blocks of the volume ``--dy all --subset all`` for beta = 1.0, in runs of
RUN consecutive blocks (``sample_blocks``: stratified over the places in a plane and the dy
patterns, seeded; the middle line's blocks and the sampled ones, every 64th, come in at their
exact shares): a worker takes blocks in order, so its dy array is refilled once a plane (4,096 blocks),
which runs of RUN charge 4,096 / RUN times too often, and one block at a time would charge every
block (0.05 to 0.1 ns an element of the judge's cost that a volume does not pay). Each is timed whole
(``sweep._Block.run``: the call, the oracle, the comparison, the judge on the wrong elements,
the tally, into one tally a run of RUN blocks as ``sweep.blocks_task`` adds a task's, that
tally's making included) and the implementation's call within it (its adapter's ``run``, timed where the sweep
makes it). The judge's own
cost is the difference; of it, the check (``sweep._Block.check``: ``kernel.f16_judge_pass`` with
the block's rows, the correctly rounded result where the branch is not known, the comparison,
the judge's shortcut and its histogram in C) is timed alone; the rest is Python's, per block
(the inputs, the probes, the rounding-bias counts of every 64th block, the whole judge on the
elements the check hands back, the tally), shown per element. For comparison, the correctly
rounded result of every element (``kernel.f16_correctly_rounded``: the arithmetic a check
without rows would do) is timed too. Every block is timed all four ways one after another, so
the ratios come from one run on a noisy machine; ``REPEATS`` runs, medians shown. Timings are
written, never asserted; docs/sweeps.md quotes them. ``SL1CONF_KERNEL_ISA=avx2`` runs the AVX2 +
F16C loops on an AVX-512 machine (the kernel's and the check's).

A section of bench/run.py (``measure``, ``markdown``: docs/benchmark.md's "A volume of dy
planes"): the two rows above, the AVX2 row in a subprocess where the CPU has AVX-512, the
projection, and a measured LocalCluster run (``distributed``, the ``dask`` extra) of
CLUSTER_PLANES planes of ``around-beta:64`` beside the same sweep with ``--workers 2``, their
certificates compared (the issue asks for at least 256 planes; docs/sweeps.md quotes a run of
1,024). Alone it prints the per-core table:

    python bench/volume_rate.py [--kernel] [--json] [BLOCKS [REPEATS]]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sl1conf.reference import kernel
from sl1conf.conformance.search import sweep as S
from search_rate import sl1conf

BETA = 0x3C00  # 1.0, the DSP team's beta
IMPLS = ("builtin:kernel", "builtin:sample")
ELEMENTS = 1 << 48
CLUSTER_CORES = 100 * 16  # the 100 16-core Dask workers
REPEATS = 5
RUN = 8  # consecutive blocks a run
PLANE_BLOCKS = 4096  # blocks of one dy plane of --subset all (2^32 pairs / 2^20)
BLOCKS = 512
CLUSTER_PLANES = 256  # the "a LocalCluster run of at least 256 planes"
CLUSTER_SWEEP = ["--impl", "builtin:kernel", "--beta", "1", "--dy", f"0x3c00-{0x3c00 + CLUSTER_PLANES - 1:#06x}",
                 "--subset", "around-beta:64"]
TABLE = ("| implementation | elements/s per core | its own time per element | the judge's per element | "
         "judge / implementation | projected 2^48 on 1,600 cores | of the judge's: the check (C, with the "
         "block's rows) | of the judge's: Python's (inputs, probes, sampled blocks' bias counts, tally) | "
         "elements back to the whole judge | for comparison: the correctly rounded result of every element |",
         "|---|---|---|---|---|---|---|---|---|---|")


def _measure(impl: str, blocks: list) -> dict:
    """Seconds of whole blocks, of the implementation's calls within them, of the check and of the
    correctly rounded result, over ``blocks``; elements, and those the check hands back.

    The implementation's time is its adapter's ``run`` inside each whole block, timed where the
    sweep makes it (right after the block's inputs are written, on an output just allocated): a
    second call before or after the block runs on inputs that call or the block had just read
    (10 to 20 % faster or slower), and the judge would be charged the difference either way. The
    check is timed once more alone, on the block's result (its share of the judge's cost)."""
    config = S.SweepConfig(impl, BETA, "all", "all")
    worker = S._Block(config, threads=1)  # noqa: SLF001 (the worker a pool process or Dask thread keeps)
    adapter_run, last = worker.adapter.run, {}

    def timed_run(cases):  # the adapter's run, timed (on a sampled block: the probes' 2 small calls too)
        t = time.perf_counter()
        try:
            last["outcomes"] = adapter_run(cases)
            return last["outcomes"]
        finally:
            last["seconds"] = last.get("seconds", 0.0) + time.perf_counter() - t

    worker.adapter.run = timed_run
    try:
        worker.run(blocks[0])  # warm: the adapter's worker, the arrays
        m = dict.fromkeys(("whole", "own", "check", "cr"), 0.0) | {"impl": impl, "elements": 0, "back": 0}
        for i, k in enumerate(blocks):
            last["seconds"] = 0.0
            t = time.perf_counter()
            if i % RUN == 0:  # a task's tally (sweep.blocks_task: each block of the task adds to it)
                tally = S.PlaneTally()
            before = tally.elements
            worker.run(k, tally)
            m["whole"] += time.perf_counter() - t
            m["own"] += last["seconds"]
            m["elements"] += tally.elements - before
            lo, hi, dy, x1, x2 = worker.inputs(k)
            got = last["outcomes"][0].out[:hi - lo]
            t = time.perf_counter()
            m["back"] += worker.check(dy, x1, x2, got)[0].size
            m["check"] += time.perf_counter() - t
            t = time.perf_counter()
            kernel.f16_correctly_rounded(dy, x1, x2, BETA)
            m["cr"] += time.perf_counter() - t
    finally:
        worker.adapter.close()
    return m


def _median(runs: list) -> dict:
    """Each figure's median over the runs (per element, as the row shows them)."""
    per = lambda m, k: m[k] / m["elements"]  # noqa: E731
    med = lambda f: float(np.median([f(m) for m in runs]))  # noqa: E731
    return {"impl": runs[0]["impl"], "rate": med(lambda m: m["elements"] / m["whole"]), "own": med(lambda m: per(m, "own")),
            "judge": med(lambda m: (m["whole"] - m["own"]) / m["elements"]), "ratio": med(lambda m: (m["whole"] - m["own"]) / m["own"]),
            "check": med(lambda m: per(m, "check")), "cr": med(lambda m: per(m, "cr")), "back": med(lambda m: per(m, "back")),
            "rest": med(lambda m: (m["whole"] - m["own"] - m["check"]) / m["elements"])}


def _minutes(m: dict) -> float:
    """A whole volume (2^48 elements) on CLUSTER_CORES cores at the measured rate per core."""
    return ELEMENTS / (m["rate"] * CLUSTER_CORES) / 60


def _row(m: dict) -> str:
    return (f"| {m['impl']} | {m['rate'] / 1e6:.0f} M/s | {m['own'] * 1e9:.2f} ns | {m['judge'] * 1e9:.2f} ns | "
            f"{m['ratio']:.1f} x | {_minutes(m):.0f} min | {m['check'] * 1e9:.2f} ns | {m['rest'] * 1e9:.2f} ns | "
            f"{m['back']:.3%} | {m['cr'] * 1e9:.2f} ns |")


def sample_blocks(n: int, seed: int = 38) -> list:
    """About ``n`` blocks of the volume ``--dy all --subset all`` (2^28 blocks, PLANE_BLOCKS a
    plane), in runs of RUN consecutive blocks, stratified so that the draw adds no spread of its
    own: the runs' places in a plane (which x2 values: the middle line's blocks cost ten times the
    others') spread evenly over the plane, one run in each of as many equal strata, and their
    offsets cycle so that exactly one block in sweep.SAMPLE_EVERY is a sampled one (ten times
    dearer again); each run's plane (dy) is drawn at random within its own stratum of the dy
    patterns, the strata shuffled (seeded). A plain random draw of 64 runs gave the sampled blocks
    from 1 in 85 to 1 in 51 of the blocks, and the judge's ratio moved with it."""
    rng = np.random.default_rng(seed)
    runs, every = max(1, n // RUN), S.SAMPLE_EVERY
    planes = (1 << 28) // PLANE_BLOCKS
    order = rng.permutation(runs)
    out = set()
    for i in range(runs):
        at = every * (i * (PLANE_BLOCKS // every) // runs) + (i * RUN) % every  # the place in the plane
        p = order[i] * planes // runs + int(rng.integers(0, max(1, planes // runs)))
        out.update(p * PLANE_BLOCKS + (at + j) % PLANE_BLOCKS for j in range(RUN))
    return sorted(out)


def per_core(n: "int | None" = None, repeats: "int | None" = None, impls=IMPLS) -> list:
    """The per-core rows (one an implementation of ``impls``, medians of ``repeats`` runs over ``n``
    blocks), this process pinned to one core (the kernel's own threads too: it uses the CPUs it
    may run on)."""
    n, repeats = n or BLOCKS, repeats or REPEATS
    pin = hasattr(os, "sched_setaffinity")
    cpus = os.sched_getaffinity(0) if pin else None
    if pin:
        os.sched_setaffinity(0, {min(cpus)})
    blocks = sample_blocks(n)
    try:
        return [_median([_measure(impl, blocks) for _ in range(repeats)]) | {"blocks": len(blocks), "repeats": repeats}
                for impl in impls]
    finally:
        if pin:  # bench/run.py's process goes on with its CPUs (and the cluster's workers start from it)
            os.sched_setaffinity(0, cpus)


def _avx2_rows() -> "list | None":
    """The per-core rows with the AVX2 + F16C loops forced, in a subprocess (the kernel picks its
    loops once a process), where this CPU runs AVX-512 (elsewhere the rows above are AVX2's)."""
    if "AVX-512" not in kernel.ISA:
        return None
    proc = subprocess.run([sys.executable, __file__, "--json", "--kernel", str(BLOCKS), str(REPEATS)],
                          capture_output=True, text=True, env=dict(os.environ, SL1CONF_KERNEL_ISA="avx2"))
    if proc.returncode:
        raise RuntimeError(f"volume_rate with AVX2 forced: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout)


def _sweep(*argv) -> float:
    """Seconds of one ``sl1conf sweep`` command (a new process, as a user runs it)."""
    t0 = time.perf_counter()
    proc = sl1conf("sweep", *map(str, argv))
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"sweep: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return time.perf_counter() - t0


def _cluster() -> dict:
    """CLUSTER_PLANES planes on a LocalCluster of 2 worker processes of 1 thread, then with
    ``--workers 2``: seconds, elements, and whether the certificates are one (but for ``run``,
    how each was made). {"missing": why} where ``distributed`` is not installed."""
    try:
        import distributed
    except ImportError:
        return {"missing": "distributed is not installed (the dask extra)"}
    from sl1conf.conformance.search.sweep_certificate import load_certificate

    with tempfile.TemporaryDirectory() as tmp, distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        out = {"dask": _sweep(*CLUSTER_SWEEP, "--scheduler", cluster.scheduler_address, "--out", Path(tmp) / "dask"),
               "local": _sweep(*CLUSTER_SWEEP, "--workers", 2, "--out", Path(tmp) / "local")}
        certs = [load_certificate(Path(tmp) / d) for d in ("dask", "local")]
    strip = lambda c: {k: v for k, v in c.items() if k != "run"}  # noqa: E731
    return out | {"planes": CLUSTER_PLANES, "elements": certs[0]["coverage"]["elements_checked"],
                  "same": strip(certs[0]) == strip(certs[1]), "result": certs[0]["result"].upper()}


def measure() -> dict:
    rows = per_core()
    return {"rows": {f"volume, {m['impl']}, one core": m["rate"] for m in rows}, "per_core": rows,
            "avx2": _avx2_rows(), "cluster": _cluster(), "isa": kernel.ISA}


def _met(ok: bool, why: str) -> str:
    return f"**met** ({why})" if ok else f"**not met** ({why})"


def markdown(result: dict) -> list:
    kern, lib = result["per_core"]
    lines = ["## A volume of dy planes", "",
             f"Issue 38; bench/volume_rate.py: one sweep worker pinned to one core ({result['isa']}), on "
             f"{kern['blocks']} blocks of `--dy all --subset all` at beta = 1.0 in runs of {RUN} consecutive blocks "
             "(stratified: the middle line's blocks and the sampled ones at their exact shares), each block timed whole and the implementation's call within it, the check and the "
             f"correctly rounded result again on the same inputs, medians of {kern['repeats']} runs (the AVX2 row "
             "in a process of its own); docs/sweeps.md (\"A volume's "
             "throughput, and the projection\") explains the columns and keeps the history of the ratio.", "",
             *TABLE, _row(kern), _row(lib)]
    if result.get("avx2"):
        lines.append(_row(result["avx2"][0] | {"impl": "builtin:kernel, AVX2 + F16C forced"}))
    lines += ["", "| what | measured | target (issue 38) | |", "|---|---|---|---|",
              f"| the judge's cost, builtin:kernel | {kern['judge'] * 1e9:.2f} ns an element against the kernel's "
              f"{kern['own'] * 1e9:.2f} ns | at most the built-in kernel's | "
              + _met(kern["ratio"] <= 1, f"{kern['ratio']:.1f} x") + " |",
              f"| the judge's cost, ctypes sample (isolated worker) | {lib['judge'] * 1e9:.2f} ns an element against the "
              f"library's {lib['own'] * 1e9:.2f} ns | at most the implementation's | "
              + _met(lib["ratio"] <= 1, f"{lib['ratio']:.1f} x") + " |",
              f"| whole volume for one beta (2^48), projected on 100 workers of 16 cores | about "
              f"{_minutes(kern):.0f} min (kernel), about {_minutes(lib):.0f} min (ctypes) | at most 1 h | "
              + _met(max(_minutes(kern), _minutes(lib)) <= 60, "projection from the rates per core above") + " |"]
    c = result["cluster"]
    if "missing" in c:
        lines.append(f"| {CLUSTER_PLANES} planes on a LocalCluster | not measured: {c['missing']} | a measured run of "
                     f"at least 256 planes | **not measured** |")
    else:
        rate = lambda s: f"{c['elements'] / s / 1e6:.1f} M elements/s"  # noqa: E731
        lines.append(f"| {c['planes']:,} planes of `around-beta:64` ({c['elements'] / 1e9:.1f} G elements), LocalCluster "
                     f"of 2 x 1 thread | {c['dask']:.0f} s ({rate(c['dask'])}); `--workers 2`: {c['local']:.0f} s "
                     f"({rate(c['local'])}); result {c['result']}; "
                     + ("the same certificate" if c["same"] else "**the certificates differ**")
                     + " | a measured run of at least 256 planes, the local certificate | "
                     + ("**not met** (the certificates differ)" if not c["same"] else "done" if c["planes"] >= 256
                        else "**not met** (fewer than 256 planes)") + " |")
    return lines + [""]


def main(argv) -> None:
    flags = {a for a in argv if a.startswith("--")}  # --json: the rows as JSON; --kernel: builtin:kernel alone
    argv = [a for a in argv if not a.startswith("--")]
    rows = per_core(int(argv[0]) if argv else None, int(argv[1]) if len(argv) > 1 else None,
                    IMPLS[:1] if "--kernel" in flags else IMPLS)
    as_json = "--json" in flags
    if as_json:
        print(json.dumps(rows))
        return
    print(f"{rows[0]['blocks']} blocks of 2^20 of --dy all --subset all (runs of {RUN}), beta 0x3c00, one process on "
          f"one core ({kernel.ISA}), medians of {rows[0]['repeats']} runs")
    print("\n".join([*TABLE, *map(_row, rows)]))


if __name__ == "__main__":
    main(sys.argv[1:])

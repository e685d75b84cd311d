"""What a volume of dy planes costs per core (issue 38, item 2): elements per second of one sweep
worker (one process on one core: what a Dask worker thread or a pool process does), beside the
time the implementation itself takes for the same elements, and the projection of a whole
volume (every dy for every (x1, x2) pair, 2^48 elements, one beta) onto a cluster.

Rows: ``builtin:kernel`` (the Cython kernel in process) and ``builtin:sample`` (the sample C
library through ctypes, in its isolated, guarded worker: the transfer included in its own
time). For each, BLOCKS blocks of the volume ``--dy all --subset all`` for beta = 1.0, in runs of
RUN consecutive blocks at random places (seeded; the sampled blocks, every 64th, come in at their
share): a worker takes blocks in order, so its dy array is refilled once a plane (4,096 blocks),
which runs of RUN charge 4,096 / RUN times too often, and one block at a time would charge every
block (0.05 to 0.1 ns an element of the judge's cost that a volume does not pay). Each is timed whole
(``sweep._Block.run``: the call, the oracle, the comparison, the judge on the wrong elements,
the tally) and the implementation alone on the same inputs (``adapter.run``). The judge's own
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

    python bench/volume_rate.py [BLOCKS [REPEATS]]
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from sl1conf.adapters.base import Case
from sl1conf.reference import kernel
from sl1conf.conformance.search import sweep as S

BETA = 0x3C00  # 1.0, the DSP team's beta
IMPLS = ("builtin:kernel", "builtin:sample")
ELEMENTS = 1 << 48
CLUSTER_CORES = 100 * 16  # the 100 16-core Dask workers
REPEATS = 5
RUN = 8  # consecutive blocks a run


def _measure(impl: str, blocks: list) -> dict:
    """Seconds of whole blocks, of the implementation's calls alone, of the check and of the
    correctly rounded result, over ``blocks``; elements, and those the check hands back."""
    config = S.SweepConfig(impl, BETA, "all", "all")
    worker = S._Block(config, threads=1)  # noqa: SLF001 (the worker a pool process or Dask thread keeps)
    try:
        worker.run(blocks[0])  # warm: the adapter's worker, the arrays
        m = dict.fromkeys(("whole", "own", "check", "cr"), 0.0) | {"impl": impl, "elements": 0, "back": 0}
        for k in blocks:
            t = time.perf_counter()
            tally = worker.run(k)
            m["whole"] += time.perf_counter() - t
            m["elements"] += tally.elements
            lo, hi, dy, x1, x2 = worker.inputs(k)
            call = Case("fp16", dy, x1, x2, BETA, variant="p")
            t = time.perf_counter()
            got = worker.adapter.run([call])[0].out[:hi - lo]
            m["own"] += time.perf_counter() - t
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


def _row(m: dict) -> str:
    hours = ELEMENTS / (m["rate"] * CLUSTER_CORES) / 3600
    return (f"| {m['impl']} | {m['rate'] / 1e6:.0f} M/s | {m['own'] * 1e9:.2f} ns | {m['judge'] * 1e9:.2f} ns | "
            f"{m['ratio']:.1f} x | {hours * 60:.0f} min | {m['check'] * 1e9:.2f} ns | {m['rest'] * 1e9:.2f} ns | "
            f"{m['back']:.3%} | {m['cr'] * 1e9:.2f} ns |")


def main(argv) -> None:
    n = int(argv[0]) if argv else 32
    repeats = int(argv[1]) if len(argv) > 1 else REPEATS
    if hasattr(os, "sched_setaffinity"):  # one core: the kernel's own threads too (it uses the CPUs it may run on)
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rng = np.random.default_rng(38)
    blocks = sorted({int(k) + j for k in rng.integers(0, (1 << 28) - RUN, max(1, n // RUN)) for j in range(RUN)})
    print(f"{len(blocks)} blocks of 2^20 of --dy all --subset all (runs of {RUN}), beta 0x3c00, one process on one core "
          f"({kernel.ISA}), medians of {repeats} runs")
    print("| implementation | elements/s per core | its own time per element | the judge's per element | "
          "judge / implementation | projected 2^48 on 1,600 cores | of the judge's: the check (C, with the "
          "block's rows) | of the judge's: Python's (inputs, probes, sampled blocks' bias counts, tally) | "
          "elements back to the whole judge | for comparison: the correctly rounded result of every element |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for impl in IMPLS:
        print(_row(_median([_measure(impl, blocks) for _ in range(repeats)])), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""What a volume of dy planes costs per core (issue 38, item 2): elements per second of one sweep
worker (one process on one core: what a Dask worker thread or a pool process does), beside the
time the implementation itself takes for the same elements, and the projection of a whole
volume (every dy for every (x1, x2) pair, 2^48 elements, one beta) onto a cluster.

Rows: ``builtin:kernel`` (the Cython kernel in process) and ``builtin:sample`` (the sample C
library through ctypes, in its isolated, guarded worker: the transfer included in its own
time). For each, BLOCKS blocks of the volume ``--dy all --subset all`` for beta = 1.0, drawn at
random (seeded; the sampled blocks, every 64th, come in at their share), each timed whole
(``sweep._Block.run``: the call, the oracle, the comparison, the judge on the wrong elements,
the tally) and the implementation alone on the same inputs (``adapter.run``). The judge's own
cost is the difference; of it, the check (``kernel.f16_mismatches``: the correctly rounded
result and the comparison, paid by every element) is timed alone, and the rest is put per wrong
element (the judge and the tally work on those only). Timings are written, never asserted; docs/sweeps.md quotes them.

    python bench/volume_rate.py [BLOCKS]
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


def _measure(impl: str, blocks: list) -> dict:
    """Seconds of whole blocks and of the implementation's calls alone, over ``blocks``."""
    config = S.SweepConfig(impl, BETA, "all", "all")
    worker = S._Block(config, threads=1)  # noqa: SLF001 (the worker a pool process or Dask thread keeps)
    try:
        worker.run(blocks[0])  # warm: the adapter's worker, the arrays
        whole = own = check = 0.0
        elements = wrong = 0
        for k in blocks:
            t = time.perf_counter()
            tally = worker.run(k)
            whole += time.perf_counter() - t
            elements += tally.elements
            lo, hi, dy, x1, x2 = worker.inputs(k)
            call = Case("fp16", dy, x1, x2, BETA, variant="p")
            t = time.perf_counter()
            got = worker.adapter.run([call])[0].out[:hi - lo]
            own += time.perf_counter() - t
            t = time.perf_counter()
            wrong += kernel.f16_mismatches(dy, x1, x2, BETA, got)[0].size
            check += time.perf_counter() - t
    finally:
        worker.adapter.close()
    return {"impl": impl, "elements": elements, "whole": whole, "own": own, "check": check, "wrong": wrong}


def _row(m: dict) -> str:
    rate = m["elements"] / m["whole"]
    judge = (m["whole"] - m["own"]) / m["elements"] * 1e9
    hours = ELEMENTS / (rate * CLUSTER_CORES) / 3600
    rest = (m["whole"] - m["own"] - m["check"]) / max(m["wrong"], 1) * 1e9
    return (f"| {m['impl']} | {rate / 1e6:.1f} M/s | {m['own'] / m['elements'] * 1e9:.2f} ns | {judge:.2f} ns | "
            f"{(m['whole'] - m['own']) / m['own']:.1f} x | {hours:.1f} h | {m['check'] / m['elements'] * 1e9:.2f} ns | "
            f"{m['wrong'] / m['elements']:.2%}, {rest:.0f} ns each |")


def main(argv) -> None:
    n = int(argv[0]) if argv else 32
    if hasattr(os, "sched_setaffinity"):  # one core: the kernel's own threads too (it uses the CPUs it may run on)
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rng = np.random.default_rng(38)
    blocks = sorted(int(k) for k in rng.integers(0, 1 << 28, n))
    print(f"{n} blocks of 2^20 of --dy all --subset all, beta 0x3c00, one process on one core")
    print("| implementation | elements/s per core | its own time per element | the judge's per element | "
          "judge / implementation | projected 2^48 on 1,600 cores | of the judge's: the check (oracle and comparison, "
          "every element) | wrong elements, the rest of the judge's cost per wrong one |")
    print("|---|---|---|---|---|---|---|---|")
    for impl in IMPLS:
        print(_row(_measure(impl, blocks)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

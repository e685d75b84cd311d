"""Benchmark: the kernel, numpy, PyTorch, memory bandwidth and the oracles, side by side.

    python bench/run.py [--out docs/benchmark] [--sizes 1e3,1e4,1e5,1e6,1e7] [--quick]

Writes OUT.md (a table) and OUT.json (every timing and the machine), each atomically.
All rows of one size come from the same run on the same inputs, so their ratios are
meaningful; absolute times are not comparable between runs on these machines.
Timings are written, never asserted.

Rows per size and format:
  kernel-1t / kernel-Nt  the Cython kernel, spec order in the data precision, 1 and N threads
  numpy-where            np.where over the same formula in the data dtype
  torch-1t / torch-Nt    torch.ops.aten.smooth_l1_loss_backward, reduction none (if torch imports)
  copy                   numpy copy of as many bytes as the kernel moves (3 inputs + 1 output):
                         the memory-bandwidth yardstick
  fast-oracle            sl1conf.reference.fast_oracle (correctly rounded)
  mpmath-oracle          sl1conf.reference.oracle (correctly rounded), small sizes only

then the certification latency (bench/certify_latency.py: the engine and the whole command) and
the fuzz and sweep rates (bench/search_rate.py).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.common.hostinfo import describe_host
from sl1conf.reference import fast_oracle, kernel, oracle

SECTIONS = (("certify_latency", "certify_latency"), ("search_rate", "search_rate"))
"""The sections after the kernel's tables: (key in OUT.json, module in bench/ with measure() and markdown())."""
MPMATH_MAX = 10_000  # the mpmath oracle runs ~40k elements/s: larger sizes would take minutes


def timeit(fn, min_time: float = 0.2, max_reps: int = 5000) -> float:
    """Best of repeated calls (seconds per call), after one warm-up call."""
    fn()
    best, total, reps = float("inf"), 0.0, 0
    while reps < 3 or (total < min_time and reps < max_reps):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, total, reps = min(best, dt), total + dt, reps + 1
    return best


def machine() -> dict:
    return describe_host(with_torch=True)


def bench_size(n: int, dtype, threads: int, torch) -> list[dict]:
    rng = np.random.default_rng(n)
    dy, x1, x2 = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    beta = dtype(1.0)
    out = np.empty(n, dtype)
    rows = {}
    rows["kernel-1t"] = timeit(lambda: kernel.smoothl1lossgrad(dy, x1, x2, beta, out=out, threads=1))
    rows[f"kernel-{threads}t"] = timeit(
        lambda: kernel.smoothl1lossgrad(dy, x1, x2, beta, out=out, threads=threads))

    def numpy_where():
        diff = x1 - x2
        return np.where(diff > beta, dy, np.where(diff < -beta, -dy, diff / beta * dy))

    with np.errstate(all="ignore"):
        rows["numpy-where"] = timeit(numpy_where)
    if torch is not None:
        tdy, tx1, tx2 = (torch.from_numpy(a) for a in (dy, x1, x2))
        op = torch.ops.aten.smooth_l1_loss_backward
        for t in sorted({1, threads}):
            torch.set_num_threads(t)
            rows[f"torch-{t}t"] = timeit(lambda: op(tdy, tx1, tx2, 0, 1.0))
    src = np.empty(2 * n, dtype)  # copying 2n elements moves 4n elements' bytes, as the kernel does
    src[:] = 1
    dst = np.empty_like(src)
    rows["copy"] = timeit(lambda: np.copyto(dst, src))
    rows["fast-oracle"] = timeit(lambda: fast_oracle.smoothl1lossgrad(dy, x1, x2, beta))
    if n <= MPMATH_MAX:
        rows["mpmath-oracle"] = timeit(lambda: oracle.smoothl1lossgrad(dy, x1, x2, beta), min_time=0, max_reps=1)
    moved = 4 * n * np.dtype(dtype).itemsize
    return [{"impl": k, "n": n, "dtype": np.dtype(dtype).name, "seconds": s,
             "elements_per_s": n / s, "gb_per_s": moved / s / 1e9} for k, s in rows.items()]


def ratios(rows: list[dict], threads: int) -> dict:
    t = {r["impl"]: r["seconds"] for r in rows}
    out = {"kernel-1t / copy (bandwidth share)": t["copy"] / t["kernel-1t"],
           f"kernel-{threads}t / copy (bandwidth share)": t["copy"] / t[f"kernel-{threads}t"],
           "kernel-1t speed-up over numpy-where": t["numpy-where"] / t["kernel-1t"]}
    if "torch-1t" in t:
        out["kernel-1t speed-up over torch-1t"] = t["torch-1t"] / t["kernel-1t"]
        out[f"kernel-{threads}t speed-up over torch-{threads}t"] = t[f"torch-{threads}t"] / t[f"kernel-{threads}t"]
    if "mpmath-oracle" in t:
        out["fast-oracle speed-up over mpmath-oracle"] = t["mpmath-oracle"] / t["fast-oracle"]
    return out


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = ["# Benchmark", "",
             f"Written by `python bench/run.py` on {result['date']}. Machine: {m['cpu']}, "
             f"{m['cpus_available']} CPUs available, {m['os']}; Python {m['python']}, numpy {m['numpy']}, "
             f"torch {m['torch']}; kernel ISA: {m['kernel_isa']}.", "",
             "Elements per second (millions; higher is better). `copy` moves as many bytes as the "
             "kernel (3 inputs read, 1 output written) and is the memory-bandwidth yardstick. "
             "Ratios compare rows of the same run only.", ""]
    for dtype in ("float32", "float16"):
        rows = [r for r in result["rows"] if r["dtype"] == dtype]
        sizes = sorted({r["n"] for r in rows})
        impls = list(dict.fromkeys(r["impl"] for r in rows))
        lines += [f"## {dtype}", "", "| impl | " + " | ".join(f"n = {n:.0e}" for n in sizes) + " |",
                  "|---" * (len(sizes) + 1) + "|"]
        for impl in impls:
            cells = []
            for n in sizes:
                r = next((r for r in rows if r["impl"] == impl and r["n"] == n), None)
                cells.append(f"{r['elements_per_s'] / 1e6:.3g}" if r else "")
            lines.append(f"| {impl} | " + " | ".join(cells) + " |")
        lines += ["", "| ratio | " + " | ".join(f"n = {n:.0e}" for n in sizes) + " |",
                  "|---" * (len(sizes) + 1) + "|"]
        keys = list(dict.fromkeys(k for n in sizes for k in result["ratios"][dtype][str(n)]))
        for k in keys:
            cells = [f"{result['ratios'][dtype][str(n)][k]:.2f}" if k in result["ratios"][dtype][str(n)] else ""
                     for n in sizes]
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        lines.append("")
    for name, module in SECTIONS:
        if name in result:
            lines += importlib.import_module(module).markdown(result[name])
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/benchmark", help="output path without extension")
    p.add_argument("--sizes", default="1e3,1e4,1e5,1e6,1e7", help="comma-separated element counts")
    p.add_argument("--threads", type=int, default=kernel.default_threads())
    args = p.parse_args(argv)
    try:
        sizes = [int(float(s)) for s in args.sizes.split(",")]
    except ValueError:
        print(f"bench: error: --sizes {args.sizes!r} is not a list of numbers", file=sys.stderr)
        return 2
    try:
        import torch
    except Exception:
        torch = None
    t0 = time.time()
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
              "threads": args.threads, "rows": [], "ratios": {}}
    for dtype in (np.float32, np.float16):
        result["ratios"][np.dtype(dtype).name] = {}
        for n in sizes:
            rows = bench_size(n, dtype, args.threads, torch)
            result["rows"] += rows
            result["ratios"][np.dtype(dtype).name][str(n)] = ratios(rows, args.threads)
            print(f"{np.dtype(dtype).name} n={n}: " + ", ".join(
                f"{r['impl']} {r['elements_per_s'] / 1e6:.3g}M/s" for r in rows), flush=True)
    for name, module in SECTIONS:
        result[name] = importlib.import_module(module).measure()
        print(f"{name}: " + ", ".join(f"{k} {v:.3g}" for k, v in result[name]["rows"].items()), flush=True)
    result["wall_seconds"] = time.time() - t0
    out = Path(args.out)
    write_atomic(out.with_suffix(".json"), json.dumps(result, indent=1) + "\n")
    write_atomic(out.with_suffix(".md"), markdown(result))
    print(f"wrote {out}.md and {out}.json in {result['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

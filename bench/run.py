"""Benchmark: the kernel, numpy, PyTorch, the memory-bandwidth limit and the oracles, side by side.

    python bench/run.py [--out docs/benchmark] [--sizes 1e3,1e4,1e5,1e6,1e7] [--threads N] [--only kernel]

Writes OUT.md (a table) and OUT.json (every timing and the machine), each atomically.
All rows of one size come from the same run on the same inputs, timed in turns (one call
of each row per round, best of the rounds), so their ratios are meaningful; absolute
times are not comparable between runs on these machines. Timings are written, never
asserted. ``--only kernel`` measures the kernel tables alone (seconds, not minutes: no
certify latency, no fuzz and sweep rates).

Rows per size and format (N = --threads, default the CPUs available):
  kernel-1t / kernel-Nt  the Cython kernel, spec order in the data precision, 1 and N threads,
                         writing into a preallocated out= (the kernel's own traffic)
  kernel-1t alloc        the same with a new output array per call (what `out=None` costs)
  kernel-1t muldiv-fp64  the binary64 model, the fast oracle's correctly rounded fp16 path
  kernel-1t divmul-fp32  float16 only: the spec order computed in float and rounded once, which
                         is what torch computes for float16 (the default model rounds every
                         step to half: two roundings, four conversions more)
  kernel-1t/Nt [ISA]     the kernel forced to each narrower instruction-set variant with
                         SL1CONF_KERNEL_ISA (in a subprocess: the variant is chosen once per
                         process), for information
  limit-1t / limit-Nt    the memory-bandwidth limit for the kernel's traffic: a C loop in the
                         kernel extension (kernel._traffic, threaded by the same pool) reading
                         three arrays and writing one of the kernel's element size, all
                         allocated and written before, so no page faults are timed
  numpy-where            np.where over the same formula in the data dtype
  torch-1t / torch-Nt    torch.ops.aten.smooth_l1_loss_backward, reduction none, into a
                         preallocated grad_input (if torch imports)
  torch-1t alloc         the same returning a new tensor
  copy                   numpy copy of as many bytes as the kernel moves (3 inputs + 1 output),
                         for comparison only (it is no limit: it is slower than the kernel)
  fast-oracle            sl1conf.reference.fast_oracle (correctly rounded)
  mpmath-oracle          sl1conf.reference.oracle (correctly rounded), small sizes only

Targets (issue 15), each stated in OUT.md with met / not met and by how much: kernel-1t >=
torch-1t and kernel-Nt >= torch-Nt at every size; at the largest size (1e7), kernel-1t and
kernel-Nt at least 70% (float32) and 50% (float16) of limit-1t and limit-Nt.

then the certification latency (bench/certify_latency.py: the engine and the whole command) and
the fuzz and sweep rates (bench/search_rate.py).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.common.hostinfo import describe_host
from sl1conf.reference import fast_oracle, kernel, oracle

SECTIONS = (("certify_latency", "certify_latency"), ("search_rate", "search_rate"), ("volume_rate", "volume_rate"))
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


def timeit_rows(rows: dict, budget: float = 3.0, max_rounds: int = 500) -> dict:
    """Best seconds per call of each row, {name: (setup or None, fn)}, timed in turns: each
    round runs every row for about 2 ms (at least one call) after its setup, a pause of
    5 ms (the previous row's spinning threads, the kernel's pool or torch's OpenMP team,
    go quiet: two pools spinning at once on 2 CPUs slowed torch-2t 100-fold) and one call
    untimed (the row's own threads wake), for at least 3 rounds and about `budget` seconds
    in all: a slow spell of a busy machine hits every row alike."""
    calls = {}
    for k, (setup, fn) in rows.items():
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        calls[k] = max(1, min(1000, int(2e-3 / max(time.perf_counter() - t0, 1e-7))))
    best = {k: float("inf") for k in rows}
    start, rounds = time.perf_counter(), 0
    while rounds < 3 or (time.perf_counter() - start < budget and rounds < max_rounds):
        for k, (setup, fn) in rows.items():
            if setup:
                setup()
            time.sleep(5e-3)
            fn()
            for _ in range(calls[k]):
                t0 = time.perf_counter()
                fn()
                best[k] = min(best[k], time.perf_counter() - t0)
        rounds += 1
    return best


def machine() -> dict:
    return describe_host(with_torch=True)


TARGET_SHARE = {"float32": 0.70, "float16": 0.50}
"""The kernel's share of the bandwidth limit at the largest size, each thread count (issue 15)."""
NARROWER_ISAS = {"x86-64 AVX-512": ("avx2", "baseline"), "x86-64 AVX2+F16C": ("baseline",)}


def kernel_rows(dy, x1, x2, out, threads: int) -> dict:
    """The kernel's rows for one size: {name: (setup, fn)}, writing into out."""
    beta = dy.dtype.type(1.0)
    rows = {"kernel-1t": (None, lambda: kernel.smoothl1lossgrad(dy, x1, x2, beta, out=out, threads=1))}
    if threads != 1:
        rows[f"kernel-{threads}t"] = (None, lambda: kernel.smoothl1lossgrad(dy, x1, x2, beta, out=out,
                                                                           threads=threads))
    return rows


def inputs(n: int, dtype):
    """dy, x1, x2 (standard normal, seeded by n) and a zeroed out: every page already written."""
    rng = np.random.default_rng(n)
    return tuple(rng.standard_normal(n).astype(dtype) for _ in range(3)) + (np.zeros(n, dtype),)


def bench_size(n: int, dtype, threads: int, torch) -> list[dict]:
    dy, x1, x2, out = inputs(n, dtype)
    beta = dtype(1.0)
    rows = kernel_rows(dy, x1, x2, out, threads)
    rows["kernel-1t alloc"] = (None, lambda: kernel.smoothl1lossgrad(dy, x1, x2, beta, threads=1))
    rows["kernel-1t muldiv-fp64"] = (None, lambda: kernel.smoothl1lossgrad(dy, x1, x2, beta, out=out,
                                                                          model="muldiv-fp64", threads=1))
    if np.dtype(dtype).itemsize == 2:  # what torch computes for fp16: in float, rounded once
        rows["kernel-1t divmul-fp32"] = (None, lambda: kernel.smoothl1lossgrad(dy, x1, x2, beta, out=out,
                                                                              model="divmul-fp32", threads=1))
    # The limit: the kernel's traffic (3 reads, 1 write, its element size), nothing else.
    bits = np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint32
    ta, tb, tc = (a.view(bits) for a in (dy, x1, x2))
    tout = np.zeros(n, bits)
    for t in sorted({1, threads}):
        rows[f"limit-{t}t"] = (None, lambda t=t: kernel._traffic(ta, tb, tc, tout, threads=t))

    def numpy_where():
        with np.errstate(all="ignore"):
            diff = x1 - x2
            return np.where(diff > beta, dy, np.where(diff < -beta, -dy, diff / beta * dy))

    others = {"numpy-where": numpy_where}
    if torch is not None:
        tdy, tx1, tx2 = (torch.from_numpy(a) for a in (dy, x1, x2))
        tout_t = torch.from_numpy(np.zeros(n, dtype))
        op = torch.ops.aten.smooth_l1_loss_backward
        for t in sorted({1, threads}):
            rows[f"torch-{t}t"] = (lambda t=t: torch.set_num_threads(t),
                                   lambda: op.grad_input(tdy, tx1, tx2, 0, 1.0, grad_input=tout_t))
        rows["torch-1t alloc"] = (lambda: torch.set_num_threads(1), lambda: op(tdy, tx1, tx2, 0, 1.0))
    src = np.empty(2 * n, dtype)  # copying 2n elements moves 4n elements' bytes, as the kernel does
    src[:] = 1
    dst = np.empty_like(src)
    others["copy"] = lambda: np.copyto(dst, src)
    others["fast-oracle"] = lambda: fast_oracle.smoothl1lossgrad(dy, x1, x2, beta)
    # The rows the targets compare, in turns; the others one after another.
    seconds = timeit_rows(rows)
    if torch is not None:
        torch.set_num_threads(threads)
    seconds.update({k: timeit(fn) for k, fn in others.items()})
    if n <= MPMATH_MAX:
        seconds["mpmath-oracle"] = timeit(lambda: oracle.smoothl1lossgrad(dy, x1, x2, beta), min_time=0, max_reps=1)
    return [row(k, n, dtype, s) for k, s in seconds.items()]


def row(impl: str, n: int, dtype, seconds: float) -> dict:
    moved = 4 * n * np.dtype(dtype).itemsize
    return {"impl": impl, "n": n, "dtype": np.dtype(dtype).name, "seconds": seconds,
            "elements_per_s": n / seconds, "gb_per_s": moved / seconds / 1e9}


def narrower_isa_rows(sizes: list, threads: int) -> list[dict]:
    """kernel-1t/Nt for each instruction-set variant narrower than this machine's, each in a
    subprocess with SL1CONF_KERNEL_ISA set (``--isa-rows`` below)."""
    out = []
    for isa in NARROWER_ISAS.get(kernel.ISA, ()):
        env = dict(os.environ, SL1CONF_KERNEL_ISA=isa)
        run = subprocess.run([sys.executable, __file__, "--isa-rows", "--sizes", ",".join(map(str, sizes)),
                              "--threads", str(threads)], env=env, capture_output=True, text=True, check=True)
        out += json.loads(run.stdout)
    return out


def isa_rows(sizes: list, threads: int) -> list[dict]:
    """This process's kernel rows, named with its variant (run by narrower_isa_rows)."""
    rows = []
    for dtype in (np.float32, np.float16):
        for n in sizes:
            for k, s in timeit_rows(kernel_rows(*inputs(n, dtype), threads)).items():
                rows.append(row(f"{k} [{kernel.ISA.removeprefix('x86-64 ')}]", n, dtype, s))
    return rows


def ratios(rows: list[dict], threads: int) -> dict:
    t = {r["impl"]: r["seconds"] for r in rows}
    out = {}
    for k in sorted({1, threads}):
        out[f"kernel-{k}t / torch-{k}t"] = t[f"torch-{k}t"] / t[f"kernel-{k}t"] if f"torch-{k}t" in t else None
        out[f"kernel-{k}t share of limit-{k}t"] = t[f"limit-{k}t"] / t[f"kernel-{k}t"]
    if "kernel-1t divmul-fp32" in t and "torch-1t" in t:
        out["kernel-1t divmul-fp32 / torch-1t (both computing in float)"] = t["torch-1t"] / t["kernel-1t divmul-fp32"]
    out["kernel-1t / copy"] = t["copy"] / t["kernel-1t"]
    out["kernel-1t speed-up over numpy-where"] = t["numpy-where"] / t["kernel-1t"]
    if "mpmath-oracle" in t:
        out["fast-oracle speed-up over mpmath-oracle"] = t["mpmath-oracle"] / t["fast-oracle"]
    return {k: v for k, v in out.items() if v is not None}


def targets(result: dict) -> dict:
    """Each target of issue 15, per dtype: what was asked, the worst ratio measured, met or not."""
    out = {}
    for dtype, by_size in result["ratios"].items():
        sizes = sorted(by_size, key=int)
        for k in sorted({1, result["threads"]}):
            name = f"kernel-{k}t / torch-{k}t"
            got = {n: by_size[n][name] for n in sizes if name in by_size[n]}
            if got:
                worst = min(got, key=got.get)
                out[f"{dtype}: kernel-{k}t >= torch-{k}t at every size"] = {
                    "want": 1.0, "worst": got[worst], "at": int(worst), "met": got[worst] >= 1.0}
            name = f"kernel-{k}t share of limit-{k}t"
            largest = sizes[-1]
            if int(largest) >= 10 ** 7:
                share = by_size[largest][name]
                out[f"{dtype}: kernel-{k}t >= {TARGET_SHARE[dtype]:.0%} of limit-{k}t at n = {int(largest):.0e}"] = {
                    "want": TARGET_SHARE[dtype], "worst": share, "at": int(largest), "met": share >= TARGET_SHARE[dtype]}
    return out


WHY_NOT = {
    "torch": {
        "float16": "the default model, divmul-fp16, rounds every step to half: two roundings more than "
                   "torch, which computes float16 in float and rounds once, that is four more "
                   "half/float conversions, and on this CPU the conversions bound the loop (see "
                   "docs/kernel.md). The same arithmetic as torch's, `kernel-1t divmul-fp32`, is the "
                   "ratio row `kernel-1t divmul-fp32 / torch-1t` above.",
        "float32": "both are at the memory-bandwidth limit at the sizes past the caches, where this "
                   "shared machine's other work moves every row by tens of percent from run to run.",
    },
    "limit": "at 1e7 every row is bound by the memory bandwidth this shared 2-CPU machine has left "
             "over from its other work, which varies during a run: the limit rows themselves moved "
             "by up to 2x between runs.",
}


def target_lines(result: dict, dtype: str) -> list[str]:
    lines = []
    for what, t in result.get("targets", {}).items():
        if not what.startswith(dtype + ":"):
            continue
        verdict = ("**met**" if t["met"] else
                   f"**not met** (short by {(t['want'] - t['worst']) / t['want']:.0%})")
        why = ""
        if not t["met"]:
            why = " Why: " + (WHY_NOT["torch"][dtype] if "torch" in what else WHY_NOT["limit"])
        lines.append(f"- Target {what.split(': ', 1)[1]}: worst {t['worst']:.2f} (n = {t['at']:.0e}), {verdict}.{why}")
    return lines + ([""] if lines else [])


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = ["# Benchmark", "",
             f"Written by `python bench/run.py` on {result['date']}. Machine: {m['cpu']}, "
             f"{m['cpus_available']} CPUs available, {m['os']}; Python {m['python']}, numpy {m['numpy']}, "
             f"torch {m['torch']}; kernel ISA: {m['kernel_isa']}.", "",
             "Elements per second (millions; higher is better). Kernel and torch rows write into a "
             "preallocated output unless marked `alloc`. `limit` is the memory-bandwidth limit for the "
             "kernel's traffic (a C loop reading three arrays and writing one of the kernel's element "
             "size, nothing else; threaded like the kernel); `copy` (numpy copying as many bytes) is "
             "for comparison only. Rows marked with an ISA are the kernel forced to that narrower "
             "variant, for information. Ratios compare rows of the same run only (timed in turns); "
             "a ratio above 1 is the kernel faster, a share is the kernel's fraction of the limit.", ""]
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
        lines += target_lines(result, dtype)
    for name, module in SECTIONS:
        if name in result:
            lines += importlib.import_module(module).markdown(result[name])
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/benchmark", help="output path without extension")
    p.add_argument("--sizes", default="1e3,1e4,1e5,1e6,1e7", help="comma-separated element counts")
    p.add_argument("--threads", type=int, default=kernel.default_threads())
    p.add_argument("--only", choices=["kernel"], help="the kernel tables alone (no later sections)")
    p.add_argument("--isa-rows", action="store_true", help=argparse.SUPPRESS)  # narrower_isa_rows' worker
    args = p.parse_args(argv)
    try:
        sizes = [int(float(s)) for s in args.sizes.split(",")]
    except ValueError:
        print(f"bench: error: --sizes {args.sizes!r} is not a list of numbers", file=sys.stderr)
        return 2
    if args.isa_rows:
        print(json.dumps(isa_rows(sizes, args.threads)))
        return 0
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
    result["rows"] += narrower_isa_rows(sizes, args.threads)
    result["targets"] = targets(result)
    for what, t in result["targets"].items():
        print(f"target {what}: worst {t['worst']:.2f} at n={t['at']:.0e}, {'met' if t['met'] else 'NOT met'}")
    for name, module in (() if args.only else SECTIONS):
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

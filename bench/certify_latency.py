"""How long a certification takes: the engine alone, and the whole command.

Why these rows: a certification is mostly fixed cost (generating the canonical vectors,
computing their expected columns, judging about 50,000 elements per run, rendering the
reports), so its latency is what a user waits for in CI and at the terminal. Rows, all from
one run on this machine (ratios between them are what the numbers mean):

  engine, in memory       certify() of builtin:kernel on ieee, fp16, vectors generated in memory
  engine, through disk    the same, the generated set written to a folder and loaded back first
                          (checksums, JSON Schema and consistency checks: what `--vectors` costs)
  command, report.json+md sl1conf certify ... --format md, a new process (imports included)
  command, all formats    sl1conf certify ... (report.json, report.md, report.html with its
                          matplotlib plots, junit.xml), a new process
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 1.5  # issue 12: the engine's fp16 certification of builtin:kernel on ieee
COMMAND = ["certify", "--impl", "builtin:kernel", "--platform", "ieee", "--dtype", "fp16"]


def _best(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(reps: int = 3) -> dict:
    """Best of ``reps`` for each row (seconds), and whether the engine meets TARGET_S."""
    from sl1conf.adapters import load
    from sl1conf.conformance.certify.engine import certify
    from sl1conf.conformance.rules.profiles import load_profile
    from sl1conf.conformance.vectors import store as V
    from sl1conf.conformance.vectors.families import generate

    adapter, profile = load("builtin:kernel"), load_profile("ieee")
    runs = certify(adapter, profile, dtypes=["fp16"])["runs"]
    rows = {"engine, in memory": _best(lambda: certify(adapter, profile, dtypes=["fp16"]), reps)}
    with tempfile.TemporaryDirectory() as tmp:
        def through_disk():
            folder = V.write(Path(tmp) / "set", "fp16", generate("fp16", 2026), seed=2026, force=True)
            certify(adapter, profile, dtypes=["fp16"], vectors=folder)
        rows["engine, through disk"] = _best(through_disk, reps)
        for label, extra in (("command, report.json+md", ["--format", "md"]), ("command, all formats", [])):
            argv = [sys.executable, "-m", "sl1conf", *COMMAND, "--out", str(Path(tmp) / "r"), *extra]
            rows[label] = _best(lambda: subprocess.run(argv, check=True, capture_output=True), max(1, reps - 1))
    return {"rows": rows, "target_s": TARGET_S, "meets_target": rows["engine, in memory"] <= TARGET_S,
            "runs": [{k: r[k] for k in ("variant", "cases", "elements")} for r in runs]}


def markdown(result: dict) -> list:
    rows = result["rows"]
    base = rows["engine, in memory"]
    lines = ["## Certify latency", "",
             "`sl1conf certify --impl builtin:kernel --platform ieee --dtype fp16` ("
             + ", ".join(f"{r['variant']}: {r['cases']} cases, {r['elements']:,} elements" for r in result["runs"])
             + "), best of 3 (bench/certify_latency.py says what each "
             f"row includes). Target for the engine: at most {result['target_s']} s: "
             + ("**met**." if result["meets_target"] else f"**not met** (by {base - result['target_s']:.2f} s)."), "",
             "| what | seconds | relative to the engine in memory |", "|---|---|---|"]
    lines += [f"| {label} | {s:.2f} | {s / base:.2f} |" for label, s in rows.items()]
    return lines + [""]


if __name__ == "__main__":
    print("\n".join(markdown(measure())))

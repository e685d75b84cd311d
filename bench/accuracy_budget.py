"""The accuracy budget, derived: how far every ACCEPTED evaluation model lands from the
correctly rounded result, measured on large structured sweeps and bounded by hand.

    python bench/accuracy_budget.py [--quick] [--out PREFIX] [--seed 2026] [--render-only]

Writes PREFIX.json (every count) and PREFIX.md (the error analysis, the measured tables,
the budget), each atomically. PREFIX defaults to docs/accuracy-budget; with --quick (a
short run, under 30 s) it defaults to bench/results/tmp/accuracy-budget-quick, so a quick
check never replaces the committed numbers. The page's prose is
docs/accuracy-budget.template.md, whose ``$name`` placeholders this script fills with the
tables; --render-only runs no sweep and rewrites PREFIX.md from PREFIX.json (after an
edit of the prose, or to check that the committed page is what its numbers give).

For each model of ``sl1conf.reference.models.ACCEPTED`` and each data format it applies
to, every element is compared with the correctly rounded result of the fast oracle
(``sl1conf.reference.fast_oracle``; the models come from the Cython kernel) and sorted into
"ordinary" elements (all inputs finite, beta > 0, the exact result a normal number, no
exact intermediate outside the normal range) and the rest, by reason. Per model and class:
elements, the ULP histogram (0, 1, 2, 3, 4+), NaN-vs-number and inf-vs-finite mismatches,
the largest ULP distance and the element that reaches it. Every reported worst element is
checked again against the mpmath oracle and the numpy emulation of the model.

Sweeps (deterministic for a seed):
  fp16-x1-all   every fp16 x1 pattern x 64 x2 values (binades, near +-beta, specials)
                x 8 betas x 7 dy values
  fp16-dy-all   every fp16 dy pattern x 64 (x1, x2) pairs in and around the middle line x 8 betas
  fp16-pairs    every (x1, x2) pair whose exact diff lies within 64 fp16 steps of +-beta, for two
                (beta, dy): the ``sl1conf sweep`` subset around-beta:64 (--quick: 8). The 2^32-pair
                sweeps of each model, without the classes, are in docs/sweeps.md.
  fp32-binades  x1 over many binades x x2 on or near x1 -+ t*beta, 11 betas x 10 dy values
  fp32-adversarial  consecutive x1 significands x x2 offsets that make x1 - x2 round by
                nearly half an ulp x betas whose reciprocal rounds by nearly half an ulp x
                dy with significands near 2 and 1.5: where the error bounds are reached
  fp32-random   sl1conf.conformance.vectors.sampling.random_batch (boundary-weighted)
  fp32-hard     sampling.hard_batch (ties and near-ties; slow: a third goes to mpmath)

This script runs the sweeps and writes the files; beside it: budget_sweeps.py (the inputs),
budget_classes.py (the classes), budget_tally.py (the measurement), budget_summary.py (the
budget) and budget_page.py (the page).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.common.hostinfo import describe_host
from sl1conf.reference import kernel

from budget_classes import CATEGORIES
from budget_page import render
from budget_summary import BOUNDS, profile_check, summarize
from budget_sweeps import (
    BETAS16, BETAS32, DYS16, DYS32, PAIRS16, dy_label, sweep_fp16_all_patterns, sweep_fp16_dy_all, sweep_fp16_pairs,
    sweep_fp32_adversarial, sweep_fp32_binades, sweep_fp32_hard, sweep_fp32_random,
)
from budget_tally import BINS, Run, verify

ROOT = Path(__file__).resolve().parent.parent


def machine() -> dict:
    return describe_host(with_torch=False)


def render_again(json_path: Path, md_path: Path) -> int:
    """``--render-only``: the page from the numbers of an earlier run."""
    try:
        data = json.loads(json_path.read_text())
    except (OSError, ValueError) as exc:
        print(f"accuracy_budget: error: {json_path}: cannot read the numbers of a run ({exc})", file=sys.stderr)
        return 2
    write_atomic(md_path, render(data["meta"], data["results"], data["sweeps"], data["profiles"]))
    print(f"wrote {md_path} from {json_path}")
    return 0


def _arguments(argv) -> argparse.Namespace:
    """The command line (argparse exits 2 on a bad one)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sweeps (under 30 s), for a smoke test")
    ap.add_argument("--out", help="output prefix, .md and .json are added (default docs/accuracy-budget; "
                                  "with --quick bench/results/tmp/accuracy-budget-quick)")
    ap.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    ap.add_argument("--render-only", action="store_true",
                    help="run no sweep: write PREFIX.md again from the numbers in PREFIX.json")
    args = ap.parse_args(argv)
    if args.seed < 0:
        ap.error("--seed must be >= 0")
    return args


def _sweep_fp16(run: Run, rng: np.random.Generator, q: bool) -> None:
    """The fp16 sweeps (smaller with ``q``, --quick), in the order that draws from ``rng``."""
    betas16 = [BETAS16[i] for i in (0, 2, 4, 5, 7)] if q else BETAS16
    dys16 = (1.0, 0.7, 1000.0, 65504.0) if q else DYS16
    grid = 8 if q else 64
    run.sweep("fp16-x1-all", "fp16",
              f"every x1 pattern (65,536) x {grid} x2 values (zeros, +-beta and neighbours, +-2beta, "
              f"+-beta/2, range edges, every binade) x betas {{{', '.join(n for n, _ in betas16)}}} x dy "
              f"{{{', '.join(dy_label(v) for v in dys16)}}}",
              sweep_fp16_all_patterns(rng, betas16, dys16, grid, every="x1"))
    run.sweep("fp16-x2-all", "fp16",
              f"every x2 pattern (65,536) x {grid} x1 values (the same kind of grid) x the same betas and dy",
              sweep_fp16_all_patterns(rng, betas16, dys16, grid, every="x2"))
    betas16b = [BETAS16[i] for i in (2, 5)] if q else BETAS16
    pairs = 8 if q else 64
    run.sweep("fp16-dy-all", "fp16",
              f"every dy pattern (65,536) x {pairs} (x1, x2) pairs per beta (x2 over the binades near "
              f"beta, x1 = x2 + t beta rounded: t = +-1, |t| < 1, 1 < |t| < 1.1) x betas "
              f"{{{', '.join(n for n, _ in betas16b)}}}",
              sweep_fp16_dy_all(rng, betas16b, pairs))
    k = 8 if q else 64
    run.sweep("fp16-pairs", "fp16",
              f"every (x1, x2) pair whose exact x1 - x2 lies within {k} fp16 steps of +-beta "
              f"(`sl1conf sweep --subset around-beta:{k}`) x (beta, dy) "
              + ", ".join(f"({b}, {d})" for b, _, d, _ in PAIRS16),
              sweep_fp16_pairs(PAIRS16, f"around-beta:{k}"))


def _sweep_fp32(run: Run, rng: np.random.Generator, q: bool) -> None:
    """The fp32 sweeps (smaller with ``q``, --quick), in the order that draws from ``rng``."""
    betas32 = [BETAS32[i] for i in (0, 2, 5, 7, 10)] if q else BETAS32
    n_bin = 16384 if q else 262144
    run.sweep("fp32-binades", "fp32",
              f"{n_bin:,} (x1, x2) per beta: x1 over the binades 2^-30 beta .. 2^4 beta, "
              f"x2 = x1 -+ t beta (t = 1, 0 < t < 1, 1 < t < 1.001), half nudged by 1-2 ulps; betas "
              f"{{{', '.join(n for n, _ in betas32)}}} x dy {{{', '.join(dy_label(v) for v in DYS32)}}}",
              sweep_fp32_binades(rng, betas32, DYS32, n_bin))
    n_adv, n_beta_adv = (8192, 1) if q else (65536, 4)
    run.sweep("fp32-adversarial", "fp32",
              f"{n_adv:,} consecutive x1 significands (stride 1-63) in beta's binade x x2 = "
              f"{{0, 0.49, 0.499, -0.49, -0.499, 0.25}} ulp(x1) x 6 dy (significands 2-2^-23, 2-3*2^-23, "
              f"1.5+2^-23, 1+2^-23, 1+small, random; random exponent and sign) x {4 * n_beta_adv + 3} betas "
              f"(reciprocal rounded by nearly +-half an ulp; 0.1, 0.3, 1/3)",
              sweep_fp32_adversarial(rng, n_adv, n_beta_adv))
    n_rand = 1_000_000 if q else 20_000_000
    run.sweep("fp32-random", "fp32",
              "sampling.random_batch, batches of 65,536 (a fresh beta each: typical, tiny to large, "
              "subnormal, special)", sweep_fp32_random(rng, n_rand, 65536))
    n_hard = 10_000 if q else 300_000
    run.sweep("fp32-hard", "fp32", "sampling.hard_batch, batches of 10,000 (ties, near-ties, exponent gaps "
              "at the boundary, subnormal results)", sweep_fp32_hard(rng, n_hard, 10_000))


def _print_summary(summary: dict, meta: dict, runtime: float, md_path: Path, json_path: Path) -> None:
    """The table of the run on standard output: per model the elements and the worst errors."""
    print(f"\n{'model':<15}{'dtype':<6}{'elements':>13}{'ordinary':>13}{'max ord':>8}{'bound':>6}"
          f"{'max other':>10}{'NaN ord/oth':>14}{'inf ord/oth':>14}")
    for dtype, s in summary.items():
        for m, r in s["models"].items():
            o, t = r["ordinary"], r["other"]
            print(f"{m:<15}{dtype:<6}{r['elements']:>13,}{o['elements']:>13,}{o['max_ulp']:>8}"
                  f"{r['bound_ordinary']:>6}{t['max_ulp']:>10}"
                  f"{o['histogram']['nan-vs-number']:>7,}/{t['histogram']['nan-vs-number']:<6,}"
                  f"{o['histogram']['inf-vs-finite']:>7,}/{t['histogram']['inf-vs-finite']:<6,}")
    print("budget: " + ", ".join(f"{d} {s['budget']} ULP (measured {s['measured_max_ulp_ordinary']}, "
                                 f"bound {s['bound_max_ulp_ordinary']})" for d, s in summary.items()))
    print(f"runtime {runtime:.1f} s; timing {meta['timing_s']}; wrote {md_path} and {json_path}")


def main(argv=None) -> int:
    """Run the sweeps and write PREFIX.json and PREFIX.md (or only PREFIX.md, --render-only);
    1 where a reported element is not confirmed by the mpmath oracle."""
    args = _arguments(argv)
    prefix = Path(args.out) if args.out else ROOT / (
        "bench/results/tmp/accuracy-budget-quick" if args.quick else "docs/accuracy-budget")
    md_path, json_path = prefix.with_name(prefix.name + ".md"), prefix.with_name(prefix.name + ".json")
    if args.render_only:
        return render_again(json_path, md_path)

    t_start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    run = Run()
    q = args.quick
    print(f"accuracy budget ({'quick' if q else 'full'} run, seed {args.seed}, {kernel.default_threads()} CPUs)",
          flush=True)
    _sweep_fp16(run, rng, q)
    _sweep_fp32(run, rng, q)

    t_verify = time.perf_counter()
    bad = verify(run)
    t_verify = time.perf_counter() - t_verify
    summary = summarize(run)
    runtime = time.perf_counter() - t_start
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "quick": q, "seed": args.seed,
            "runtime_s": round(runtime, 1), "machine": machine(), "json_name": json_path.name,
            "command": "python bench/accuracy_budget.py" + (" --quick" if q else ""),
            "timing_s": {k: round(v, 1) for k, v in run.timing.items()} | {"verify": round(t_verify, 1)},
            "unconfirmed_examples": bad}
    profiles = profile_check(summary)
    data = {"meta": meta, "categories": dict(CATEGORIES), "bins": list(BINS), "sweeps": run.sweeps,
            "bounds": {f"{m}/{d}": b for (m, d), b in BOUNDS.items()}, "results": summary,
            "budget": {d: s["budget"] for d, s in summary.items()}, "profiles": profiles}
    write_atomic(json_path, json.dumps(data, indent=1) + "\n")
    write_atomic(md_path, render(meta, summary, run.sweeps, profiles))
    _print_summary(summary, meta, runtime, md_path, json_path)
    if bad:
        print(f"WARNING: {bad} reported element(s) not confirmed by the mpmath oracle / numpy emulation",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

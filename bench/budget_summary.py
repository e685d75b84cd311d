"""The accuracy budget from the tallies: per model and class the largest ULP distance and the
histograms, the hand-derived bounds they are held against, the budget per data format (the
larger of the two), and the built-in profiles' max_ulp checked against it.
"""

from __future__ import annotations

import numpy as np

from sl1conf.conformance.rules.profiles import PROFILE_DIR

from budget_classes import CAT_NAMES, NCAT
from budget_tally import B_INF, B_NAN, BINS, Run

BOUNDS = {
    # (model, dtype): the hand-derived worst case on ordinary elements, in ULPs
    ("divmul-fp16", "fp16"): 2,
    ("divmul-fp32", "fp16"): 1,
    ("recipmul-fp32", "fp16"): 1,
    ("muldiv-fp32", "fp16"): 1,
    ("divmul-fp32", "fp32"): 2,
    ("recipmul-fp32", "fp32"): 3,
    ("muldiv-fp32", "fp32"): 2,
}


def summarize(run: Run) -> dict:
    out = {}
    for dtype, tallies in run.tallies.items():
        rows = {}
        for m, t in tallies.items():
            other = t.hist[1:].sum(axis=0)
            n = t.hist.sum(axis=1)
            # a class with elements and no finite mismatch has max 0; -1 marks an empty class
            mx = np.where(n > 0, np.maximum(t.max, 0), -1)
            rows[m] = {
                "elements": int(t.hist.sum()),
                "bound_ordinary": BOUNDS[m, dtype],
                "ordinary": {"elements": int(n[0]), "max_ulp": int(mx[0]),
                             "histogram": dict(zip(BINS, map(int, t.hist[0]))),
                             "zero_sign_mismatches": int(t.zero_sign[0]), "worst": t.worst[0]},
                "other": {"elements": int(other.sum()), "max_ulp": int(mx[1:].max()),
                          "histogram": dict(zip(BINS, map(int, other))),
                          "zero_sign_mismatches": int(t.zero_sign[1:].sum()),
                          "worst": t.worst[1 + int(np.argmax(t.max[1:]))] if t.max[1:].max() >= 0 else None},
                "classes": {CAT_NAMES[k]: {"elements": int(n[k]), "max_ulp": int(mx[k]),
                                           "histogram": dict(zip(BINS, map(int, t.hist[k]))),
                                           "zero_sign_mismatches": int(t.zero_sign[k]),
                                           "worst": t.worst[k],
                                           "nan_vs_number_example": t.mismatch.get((k, B_NAN)),
                                           "inf_vs_finite_example": t.mismatch.get((k, B_INF))}
                            for k in range(NCAT)},
            }
        measured = max(r["ordinary"]["max_ulp"] for r in rows.values())
        bound = max(r["bound_ordinary"] for r in rows.values())
        mism = sum(r["ordinary"]["histogram"]["nan-vs-number"] + r["ordinary"]["histogram"]["inf-vs-finite"]
                   for r in rows.values())
        out[dtype] = {"models": rows, "elements": int(run.cat_counts[dtype].sum()),
                      "class_elements": dict(zip(CAT_NAMES, map(int, run.cat_counts[dtype]))),
                      "measured_max_ulp_ordinary": measured, "bound_max_ulp_ordinary": bound,
                      "ordinary_nan_inf_mismatches": int(mism),
                      "budget": max(measured, bound)}
    return out


def profile_check(summary: dict) -> list[dict]:
    """The built-in platform profiles' max_ulp against the derived budget (read only)."""
    import tomllib

    rows = []
    for path in sorted(PROFILE_DIR.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        for dtype, value in sorted((data.get("max_ulp") or {}).items()):
            if dtype in summary:
                need = summary[dtype]["budget"]
                short = [m for m, r in summary[dtype]["models"].items()
                         if max(r["ordinary"]["max_ulp"], r["bound_ordinary"]) > value]
                rows.append({"profile": path.stem, "dtype": dtype, "max_ulp": value, "derived": need,
                             "ok": value >= need, "models_beyond": short})
    return rows

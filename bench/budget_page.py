"""The accuracy budget's page: the prose of docs/accuracy-budget.template.md with its ``$name``
placeholders filled from one run's numbers (all of them in the run's JSON, so the page can be
written again from that file alone).
"""

from __future__ import annotations

import string
from pathlib import Path

from sl1conf.conformance.common.commands import explain_command
from sl1conf.conformance.reports.markdown import markdown_table
from sl1conf.reference.models import ACCEPTED

from budget_classes import CAT_NAMES, CATEGORIES
from budget_tally import BINS

TEMPLATE = Path(__file__).resolve().parent.parent / "docs" / "accuracy-budget.template.md"
"""The page's prose; ``$name`` placeholders (string.Template) stand for what a run measures."""


def flipped(ex) -> bool:
    """The worst element's result has the other sign than the correctly rounded one (both nonzero)."""
    if ex is None:
        return False
    g, w = int(ex["got"], 16), int(ex["want"], 16)
    top = 1 << (len(ex["got"]) * 4 - 9)  # 0x8000 or 0x80000000
    return bool((g ^ w) & top) and (g & (top - 1)) != 0 and (w & (top - 1)) != 0


def fmt_hist(h: dict) -> str:
    return " / ".join(f"{h[b]:,}" for b in BINS[:5])


def _provenance(meta: dict) -> str:
    text = (f"Written by `python bench/accuracy_budget.py{' --quick' if meta['quick'] else ''}` on {meta['date']} "
            f"in {meta['runtime_s']:.0f} s (seed {meta['seed']}; {meta['machine']['cpus_available']} CPUs, "
            f"{meta['machine']['cpu']}; kernel ISA {meta['machine']['kernel_isa']}; numpy "
            f"{meta['machine']['numpy']}). Raw numbers: `{meta['json_name']}`.")
    if meta["quick"]:
        text += "\n\n**Quick run**: small sweeps for a smoke test. The committed budget comes from a full run."
    return text


def _measured_table(summary: dict) -> str:
    rows = []
    for dtype, s in summary.items():
        for m, r in s["models"].items():
            o, t = r["ordinary"], r["other"]
            rows.append([f"`{m}`", dtype, f"{r['elements']:,}", f"{o['elements']:,}",
                         f"**{o['max_ulp']}** ({r['bound_ordinary']})", fmt_hist(o["histogram"]), t["max_ulp"],
                         fmt_hist(t["histogram"]),
                         f"{o['histogram']['nan-vs-number']:,} / {t['histogram']['nan-vs-number']:,}",
                         f"{o['histogram']['inf-vs-finite']:,} / {t['histogram']['inf-vs-finite']:,}"])
    return markdown_table(["model", "dtype", "elements", "ordinary", "max ULP ordinary (bound)",
                           "ordinary 0 / 1 / 2 / 3 / 4+", "max ULP other", "other 0 / 1 / 2 / 3 / 4+",
                           "NaN vs number (ord. / other)", "inf vs finite (ord. / other)"], rows)


def _explained(text: str, dtype: str, ex: dict) -> str:
    """A list item and, on its next line, the command that takes its element apart."""
    return f"- {text}  \n  `{explain_command(dtype, ex['dy'], ex['x1'], ex['x2'], ex['beta'])}`"


def _ordinary_worst(summary: dict) -> str:
    items = []
    for dtype, s in summary.items():
        for m, r in s["models"].items():
            ex = r["ordinary"]["worst"]
            if ex is not None:
                items.append(_explained(f"`{m}`, {dtype}, {ex['ulp']} ULP (sweep {ex['sweep']}; got {ex['got']}, "
                                        f"correctly rounded {ex['want']}"
                                        f"{'' if ex.get('verified') else '; NOT CONFIRMED by the mpmath oracle'}):",
                                        dtype, ex))
    return "\n".join(items)


def _class_section(dtype: str, s: dict) -> str:
    """Section 2 for one data format: max ULP per class and model, and what lies beyond the budget."""
    budget, models = s["budget"], list(s["models"])
    rows = []
    for name in CAT_NAMES:
        if s["class_elements"][name] == 0:
            continue
        cells = []
        for m in models:
            c = s["models"][m]["classes"][name]
            cell = "-" if c["max_ulp"] < 0 else str(c["max_ulp"])
            extra = []
            if c["histogram"]["nan-vs-number"]:
                extra.append(f"n {c['histogram']['nan-vs-number']:,}")
            if c["histogram"]["inf-vs-finite"]:
                extra.append(f"i {c['histogram']['inf-vs-finite']:,}")
            if c["max_ulp"] > budget or extra:
                cell = f"**{cell}**"
            cells.append(cell + (f" ({', '.join(extra)})" if extra else ""))
        rows.append([name, f"{s['class_elements'][name]:,}", *cells])
    zero_sign = ", ".join(f"`{m}` {sum(c['zero_sign_mismatches'] for c in s['models'][m]['classes'].values()):,}"
                          for m in models)
    out = [f"### {dtype}", "",
           "Max ULP per class (`n` NaN vs number, `i` inf vs finite mismatches when there are any):", "",
           markdown_table(["class", "elements", *(f"`{m}`" for m in models)], rows), "",
           f"Zero results with the other sign (+0 against -0, distance 0 above): {zero_sign}.", ""]
    beyond = []
    for m in models:
        for name in CAT_NAMES[1:]:
            c = s["models"][m]["classes"][name]
            if c["max_ulp"] > budget:
                beyond.append((m, name, f"{c['max_ulp']} ULP", c["worst"]))
            for key, label in (("nan_vs_number_example", "NaN vs number"), ("inf_vs_finite_example", "inf vs finite")):
                if c[key] is not None:
                    beyond.append((m, name, label, c[key]))
    if not beyond:
        return "\n".join(out + [f"No {dtype} element of any class is beyond {budget} ULP or a NaN / infinity mismatch."])
    out += [f"Beyond the {dtype} budget of {budget} ULP, or NaN / infinity where the correctly rounded result is "
            f"not (the engine must accept these models' exact bits here; widening the budget would not be "
            f"enough, and would let real defects through):", ""]
    out += [_explained(f"`{m}`, {name}, {what}: got {ex['got']}, correctly rounded {ex['want']}"
                       f"{'' if ex.get('verified') else ' (NOT CONFIRMED)'}", dtype, ex)
            for m, name, what, ex in beyond]
    return "\n".join(out)


def _bounds_table(summary: dict) -> str:
    rows = []
    for dtype, s in summary.items():
        for m, r in s["models"].items():
            got, bound = r["ordinary"]["max_ulp"], r["bound_ordinary"]
            verdict = ("yes" if got == bound else
                       "no: the sweep stays below the bound" if got < bound else
                       "**EXCEEDED: the analysis is wrong somewhere**")
            rows.append([f"`{m}`", dtype, bound, got, verdict])
    return markdown_table(["model", "dtype", "bound (ordinary)", "measured max (ordinary)", "reached?"], rows)


def _budget_list(summary: dict) -> str:
    items = []
    for dtype, s in summary.items():
        worst = [m for m, r in s["models"].items()
                 if max(r["ordinary"]["max_ulp"], r["bound_ordinary"]) == s["budget"]]
        items.append(f"- **{dtype}: max_ulp = {s['budget']}.** The largest proven bound over the accepted models "
                     f"is {s['bound_max_ulp_ordinary']} and the sweeps reach {s['measured_max_ulp_ordinary']} on "
                     f"ordinary elements ({', '.join(f'`{m}`' for m in worst)}). A smaller budget would fail an "
                     f"accepted model's own ordinary results; a larger one is not needed by any of them. "
                     f"NaN or infinity mismatches on ordinary elements: {s['ordinary_nan_inf_mismatches']}.")
    return "\n".join(items)


def _beyond_budget_list(summary: dict) -> str:
    items = []
    for dtype, s in summary.items():
        parts = []
        for m, r in s["models"].items():
            cls = [f"{name} ({'sign flip' if flipped(c['worst']) else str(c['max_ulp']) + ' ULP'}"
                   + (", NaN" if c["histogram"]["nan-vs-number"] else "")
                   + (", inf" if c["histogram"]["inf-vs-finite"] else "") + ")"
                   for name, c in r["classes"].items()
                   if name != "ordinary" and (c["max_ulp"] > s["budget"] or c["histogram"]["nan-vs-number"]
                                              or c["histogram"]["inf-vs-finite"])]
            if cls:
                parts.append(f"`{m}`: " + ", ".join(cls))
        items.append(f"- {dtype} (budget {s['budget']}): " + ("; ".join(parts) if parts else "none") + ".")
    return "\n".join(items)


def _profiles_table(profiles: list) -> str:
    rows = []
    for p in profiles:
        verdict = "ok" if p["ok"] else (
            "**too tight**: " + ", ".join(f"`{m}`" for m in p["models_beyond"])
            + f" can be {p['derived']} ULP off on ordinary elements and would pass only by matching "
              "its own bits exactly")
        rows.append([p["profile"], p["dtype"], p["max_ulp"], p["derived"], verdict])
    return markdown_table(["profile", "dtype", "max_ulp", "derived", "verdict"], rows)


def render(meta: dict, summary: dict, sweeps: list, profiles: list) -> str:
    """The page: the prose of TEMPLATE with its placeholders filled from one run's numbers
    (all of them in the run's JSON, so ``--render-only`` redoes the page from that file)."""
    sweep_rows = [[sw["name"], sw["dtype"], f"{sw['elements']:,}", sw["description"], f"{sw['fallbacks']:,}",
                   f"{sw['seconds']:.1f}"] for sw in sweeps]
    return string.Template(TEMPLATE.read_text()).substitute(
        provenance=_provenance(meta),
        accepted_models=", ".join(f"`{m}`" for m in ACCEPTED),
        ordinary_definition=CATEGORIES[0][1],
        measured_table=_measured_table(summary),
        ordinary_worst=_ordinary_worst(summary),
        sweeps_table=markdown_table(["sweep", "dtype", "elements", "what", "mpmath fallbacks", "seconds"], sweep_rows),
        class_list="\n".join(f"- `{name}`: {desc}." for name, desc in CATEGORIES),
        classes_by_dtype="\n\n".join(_class_section(dtype, s) for dtype, s in summary.items()),
        bounds_table=_bounds_table(summary),
        budget_list=_budget_list(summary),
        beyond_budget_list=_beyond_budget_list(summary),
        profiles_table=_profiles_table(profiles),
    )

"""The report's plots, drawn with matplotlib from ``report.json`` alone, as inline SVG text.

Three pictures where people would rather look than read: the pass/fail matrix of
requirements against dtype and variant, the ULP-error histogram of every family, and the
error against ``(x1 - x2) / beta`` (the branch boundary is at +-1). ``matplotlib.figure.Figure``
is used directly (no pyplot), so no display, backend or global state is involved; the SVG
is made reproducible (fixed hash salt, no date) and keeps text as text, so it is small.
"""

from __future__ import annotations

import io

import numpy as np

__all__ = ["matrix_svg", "histogram_svg", "ratio_svg", "all_plots"]

_COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "waived": "#ef6c00", "recorded": "#1565c0",
            "not-applicable": "#bdbdbd"}
_STATUS_CODE = {s: i for i, s in enumerate(_COLOURS)}


def _svg(fig) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "sl1conf", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype: it is inlined in HTML


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=96, layout="constrained")


def _cells(ax, values, cmap, vmin, vmax) -> None:
    """A grid of coloured cells centred on integer coordinates, first row at the top. Vector
    cells (pcolormesh), not an embedded bitmap as imshow would make: crisp, and text only."""
    rows, cols = values.shape
    ax.pcolormesh(np.arange(cols + 1) - 0.5, np.arange(rows + 1) - 0.5, values, cmap=cmap, vmin=vmin,
                  vmax=vmax, edgecolors="white", linewidth=0.5)
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)


def matrix_svg(report: dict) -> str:
    """Requirements (rows) against runs (columns), one coloured cell per status."""
    from matplotlib.colors import ListedColormap

    runs = report["runs"]
    ids = []
    for run in runs:
        ids += [r["id"] + " " + r["title"] for r in run["requirements"] if r["id"] + " " + r["title"] not in ids]
    grid = np.full((len(ids), len(runs)), _STATUS_CODE["not-applicable"])
    for c, run in enumerate(runs):
        for r in run["requirements"]:
            grid[ids.index(r["id"] + " " + r["title"]), c] = _STATUS_CODE.get(r["status"], 0)
    fig = _figure(3.0 + 0.8 * len(runs), 0.8 + 0.26 * len(ids))
    ax = fig.add_subplot()
    _cells(ax, grid, ListedColormap(list(_COLOURS.values())), 0, len(_COLOURS) - 1)
    names = list(_COLOURS)
    for (i, c), code in np.ndenumerate(grid):
        ax.text(c, i, names[code].replace("not-applicable", "n/a"), ha="center", va="center", color="white",
                fontsize=7)
    ax.set_xticks(range(len(runs)), [f"{r['dtype']} {r['variant']}" for r in runs], fontsize=8)
    ax.set_yticks(range(len(ids)), ids, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_title("requirement status per run", fontsize=9)
    return _svg(fig)


def histogram_svg(run: dict) -> str:
    """Per family, how many elements lie 0, 1, 2, ... ULPs from the correctly rounded result."""
    err = run["errors"]
    buckets, hist = err["buckets"], err["ulp_histogram"]
    fams = list(hist)
    fig = _figure(7.5, 0.9 + 0.3 * max(1, len(fams)))
    ax = fig.add_subplot()
    counts = np.array([hist[f] for f in fams], dtype=float).reshape(len(fams), len(buckets))
    shown = np.where(counts > 0, np.log10(np.maximum(counts, 1)) + 1, 0)
    _cells(ax, shown, "Blues", 0, max(1.0, float(shown.max())))
    for (i, j), n in np.ndenumerate(counts):
        if n:
            ax.text(j, i, f"{int(n)}", ha="center", va="center", fontsize=7,
                    color="white" if shown[i, j] > 0.6 * shown.max() else "black")
    ax.set_xticks(range(len(buckets)), [b if b != "nan" else "NaN vs number" for b in buckets], fontsize=8)
    ax.set_yticks(range(len(fams)), fams, fontsize=8)
    ax.set_xlabel("ULPs from the correctly rounded result (elements per family and distance)", fontsize=8)
    ax.set_title(f"{run['dtype']} {run['variant']}: ULP error per family (max {err['max_ulp']} ULP)", fontsize=9)
    return _svg(fig)


def ratio_svg(runs: list) -> str:
    """Largest ULP error and share of inexact elements against (x1 - x2) / beta, per run."""
    fig = _figure(7.5, 3.2)
    ax = fig.add_subplot()
    ax2 = ax.twinx()
    top = max(max(max(r["errors"]["by_ratio"]["max_ulp"] or [0]) for r in runs), 4)
    nan_label = "NaN against a number (no distance)"
    for run in runs:
        b = run["errors"]["by_ratio"]
        edges = np.array(b["edges"])
        mid = (edges[:-1] + edges[1:]) / 2
        n = np.array(b["elements"], float)
        keep = n > 0
        label = f"{run['dtype']} {run['variant']}"
        dashed = run["variant"] == "p"  # s and p usually coincide: the dashes let both show
        colour = "C0" if run["dtype"] == "fp16" else "C3"  # one colour per dtype
        ax.step(mid[keep], np.array(b["max_ulp"])[keep], where="mid", label=f"{label}: max ULP", color=colour,
                linestyle=(0, (4, 3)) if dashed else "-", linewidth=1.2)
        ax2.plot(mid[keep], (np.array(b["inexact"], float)[keep] / n[keep]), linestyle=":", linewidth=1,
                 color=colour, alpha=0.7, label=f"{label}: share inexact")
        nan = np.array(b.get("nan") or [0] * len(mid)) > 0
        if nan.any():
            ax.plot(mid[nan], np.full(nan.sum(), top * 1.2), "x", color="#c62828", label=nan_label)
            nan_label = None  # one legend entry for all runs
    for x in (-1, 1):
        ax.axvline(x, color="#888888", linewidth=0.8)
    ax.set_xlabel("(x1 - x2) / beta   (the branch boundary is at -1 and +1)", fontsize=8)
    ax.set_ylabel("largest ULP error in the bin", fontsize=8)
    ax2.set_ylabel("share of elements not exact", fontsize=8)
    ax2.set_ylim(0, 1.05)
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("symlog", linthresh=4)  # 0..4 ULP linear (the budgets), larger errors compressed
    ax.set_ylim(0, top * 1.4)
    ax.set_yticks([t for t in (0, 1, 2, 3, 4, *(10 ** k for k in range(1, 10))) if t <= top * 1.4])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="upper left")
    ax.set_title("error against diff / beta", fontsize=9)
    return _svg(fig)


def all_plots(report: dict) -> list:
    """(caption, svg) for every plot the report has data for."""
    plots = []
    if report["runs"]:
        plots.append(("Pass/fail matrix: every requirement against every dtype and variant", matrix_svg(report)))
    with_errors = [r for r in report["runs"] if r.get("errors")]
    if with_errors:
        outside = sum(r["errors"]["by_ratio"]["outside"] for r in with_errors)
        plots.append(("Error against (x1 - x2) / beta: largest ULP error (steps; the p variant dashed), share of "
                      "inexact elements (dotted) and NaN against a number (x) per bin of 0.1. Not shown: "
                      f"{outside} elements with the ratio outside -4..4 or not a number (beta 0, inf, NaN inputs), "
                      "and elements accepted only as a model's or an alternative's exact bits.",
                      ratio_svg(with_errors)))
    for run in with_errors:
        if run["errors"]["ulp_histogram"]:
            plots.append((f"{run['dtype']} {run['variant']}: elements per family and ULP distance",
                          histogram_svg(run)))
    return plots

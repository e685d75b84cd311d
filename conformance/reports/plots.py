"""The report's plots, drawn with matplotlib from ``report.json`` alone, as inline SVG text.

Three pictures where people would rather look than read: the pass/fail matrix of
requirements against dtype and variant, the ULP-error histogram of every family, and the
error against ``(x1 - x2) / beta`` (the branch boundary is at +-1). ``matplotlib.figure.Figure``
is used directly (no pyplot), so no display, backend or global state is involved; the SVG
is made reproducible (fixed hash salt, no date) and keeps text as text, so it is small.

Each plot is built as a Figure first (``matrix_figure``, ``histogram_figure``, ``ratio_figure``:
inspectable, as the tests do) and only then turned into SVG (``*_svg``). The figures must stay
readable for a failing library too: legends sit outside the data area, tick labels are chosen
or thinned (after a layout pass that measures them) so that they never overlap, category labels
turn upright or are thinned when there are too many, and ULP errors up to 2^32 or NaN against a
number get an axis and a strip of their own instead of crowding the budgets' 0..4 ULPs.
"""

from __future__ import annotations

import io
import math

import numpy as np

__all__ = ["matrix_figure", "histogram_figure", "ratio_figure", "matrix_svg", "histogram_svg", "ratio_svg",
           "ratio_caption", "all_plots", "drawn_ticklabels", "overlapping_ticklabels"]

_COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "waived": "#ef6c00", "recorded": "#1565c0",
            "not-applicable": "#bdbdbd"}
_STATUS_CODE = {s: i for i, s in enumerate(_COLOURS)}
_DPI = 96
_ROW_IN = 0.3  # a category row's height (inches) while the figure stays at most _MAX_ROWS rows tall
_MAX_ROWS = 40
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _svg(fig) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "sl1conf", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype: it is inlined in HTML


def _figure(width: float, height: float):
    """A Figure with its own Agg canvas: the layout passes that measure tick labels then reuse one
    renderer (and its text metrics) instead of making a new one each time; SVG is still SVG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _rows_height(rows: int) -> float:
    """Inches for ``rows`` category rows: _ROW_IN each, up to _MAX_ROWS rows' worth (then they share)."""
    return _ROW_IN * min(max(1, rows), _MAX_ROWS)


def _room_for_text(rows: int, row_in: float = _ROW_IN) -> bool:
    """Whether a cell of a ``rows``-row grid (``row_in`` inches a row up to _MAX_ROWS rows) has room
    for a line of 7-point text: 0.16 inch, so up to 75 rows in the tallest figure."""
    return row_in * min(max(1, rows), _MAX_ROWS) / max(1, rows) >= 0.16


# --- tick labels that do not overlap -----------------------------------------------------------

def drawn_ticklabels(axis) -> list:
    """The tick labels of ``axis`` that are drawn: visible, not empty, at a tick inside the view.
    Their positions are those of the last layout (``fig.draw_without_rendering()``)."""
    lo, hi = sorted(axis.get_view_interval())
    slack = (hi - lo) * 1e-9
    labels = []
    for tick, loc in zip(axis.get_major_ticks(len(axis.get_majorticklocs())), axis.get_majorticklocs()):
        if not lo - slack <= loc <= hi + slack:
            continue
        labels += [t for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text()]
    return labels


def overlapping_ticklabels(axis, pad: float = 1.0) -> list:
    """Pairs of drawn tick labels of ``axis`` whose boxes (padded by ``pad`` pixels) intersect."""
    boxes = [(t, t.get_window_extent().padded(pad / 2)) for t in drawn_ticklabels(axis)]
    return [(a, c) for i, (a, b) in enumerate(boxes) for c, d in boxes[i + 1:] if b.overlaps(d)]


def _lay_out(fig) -> None:
    """Place the axes and their tick labels as drawing would (the constrained layout), without
    drawing: enough to measure tick labels (``overlapping_ticklabels``), cheaper than a draw."""
    fig.get_layout_engine().execute(fig)


def _declutter(fig, ax) -> None:
    """Category tick labels that do not overlap: the x labels stand upright when they collide
    lying down, and then either axis keeps every k-th label, k as small as leaves no overlap."""
    _lay_out(fig)
    if overlapping_ticklabels(ax.xaxis):
        ax.tick_params(axis="x", labelrotation=90)
        _lay_out(fig)
    for axis in (ax.xaxis, ax.yaxis):
        locs = list(axis.get_majorticklocs())
        texts = [t.get_text() for t in axis.get_majorticklabels()]
        step = 1
        while overlapping_ticklabels(axis) and step < len(locs):
            step += 1
            axis.set_ticks(locs, [s if i % step == 0 else "" for i, s in enumerate(texts)])
            _lay_out(fig)


def _count(n: float) -> str:
    """A cell's element count, at most 7 characters (1048577 as is, 12345678 as 12.3M)."""
    n = int(n)
    return str(n) if n < 10 ** 7 else f"{n / 1e6:.3g}M" if n < 10 ** 9 else f"{n / 1e9:.3g}G"


def _ulp_label(value: float) -> str:
    """0 to 9999 as digits, larger powers of ten as 10 with a superscript exponent (10⁹)."""
    if value < 10 ** 4:
        return f"{value:g}"
    return "10" + str(round(math.log10(value))).translate(_SUPERSCRIPT)


def _magnitude(ulp: int) -> str:
    """``", about 2^31.0"`` for errors from 2^16 ULP up, where the digits stop telling much."""
    return f", about 2^{math.log2(ulp):.1f}" if ulp >= 2 ** 16 else ""


# --- the plots -----------------------------------------------------------------------------------

def _cells(ax, values, cmap, vmin, vmax) -> None:
    """A grid of coloured cells centred on integer coordinates, first row at the top. Vector
    cells (pcolormesh), not an embedded bitmap as imshow would make: crisp, and text only."""
    rows, cols = values.shape
    ax.pcolormesh(np.arange(cols + 1) - 0.5, np.arange(rows + 1) - 0.5, values, cmap=cmap, vmin=vmin,
                  vmax=vmax, edgecolors="white", linewidth=0.5)
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)


def matrix_figure(runs: list):
    """Requirements (rows) against runs (columns: RunResult each), one coloured cell per status."""
    from matplotlib.colors import ListedColormap

    ids = []
    for run in runs:
        ids += [r.id + " " + r.title for r in run.requirements if r.id + " " + r.title not in ids]
    grid = np.full((len(ids), len(runs)), _STATUS_CODE["not-applicable"])
    for c, run in enumerate(runs):
        for r in run.requirements:
            grid[ids.index(r.id + " " + r.title), c] = _STATUS_CODE.get(r.status, 0)
    fig = _figure(3.0 + 0.8 * len(runs), 0.8 + _rows_height(len(ids)) * 0.26 / _ROW_IN)  # 0.26 inch a row
    ax = fig.add_subplot()
    _cells(ax, grid, ListedColormap(list(_COLOURS.values())), 0, len(_COLOURS) - 1)
    names = list(_COLOURS)
    if _room_for_text(len(ids), 0.26):  # cells too small for their word otherwise: the colour says it
        for (i, c), code in np.ndenumerate(grid):
            ax.text(c, i, names[code].replace("not-applicable", "n/a"), ha="center", va="center", color="white",
                    fontsize=7, in_layout=False)  # inside the axes: no need to measure it for the layout
    ax.set_xticks(range(len(runs)), [f"{r.dtype} {r.variant}" for r in runs], fontsize=8)
    ax.set_yticks(range(len(ids)), ids, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_title("requirement status per run", fontsize=9)
    _declutter(fig, ax)
    return fig


def matrix_svg(runs: list) -> str:
    return _svg(matrix_figure(runs))


def histogram_figure(run):
    """Per family, how many elements lie 0, 1, 2, ... ULPs from the correctly rounded result
    (of a RunResult's errors)."""
    err = run.errors
    buckets, hist = err.buckets, err.ulp_histogram
    fams = list(hist)
    fig = _figure(7.5, 0.9 + _rows_height(len(fams)))
    ax = fig.add_subplot()
    counts = np.array([hist[f] for f in fams], dtype=float).reshape(len(fams), len(buckets))
    shown = np.where(counts > 0, np.log10(np.maximum(counts, 1)) + 1, 0)
    _cells(ax, shown, "Blues", 0, max(1.0, float(shown.max())))
    if _room_for_text(len(fams)) and len(buckets) <= 12:  # room for a count in each cell
        for (i, j), n in np.ndenumerate(counts):
            if n:
                ax.text(j, i, _count(n), ha="center", va="center", fontsize=7, in_layout=False,
                        color="white" if shown[i, j] > 0.6 * shown.max() else "black")
    ax.set_xticks(range(len(buckets)), [b if b != "nan" else "NaN vs\nnumber" for b in buckets], fontsize=8)
    ax.set_yticks(range(len(fams)), fams, fontsize=8)
    ax.set_xlabel("ULPs from the correctly rounded result (elements per family and distance)", fontsize=8)
    ax.set_title(f"{run.dtype} {run.variant}: ULP error per family (max {err.max_ulp} ULP"
                 f"{_magnitude(err.max_ulp)})", fontsize=9)
    _declutter(fig, ax)
    return fig


def histogram_svg(run) -> str:
    return _svg(histogram_figure(run))


def _ulp_ticks(fig, ax, ymax: float, fontsize: float) -> list:
    """Ticks for the largest-error axis (symlog, linear to 4), at least 1.6 lines apart on the
    laid-out axes: 0 and 4 first (the budgets' range), then powers of ten upwards, then 2, 1, 3."""
    _lay_out(fig)
    sep = 1.6 * fontsize * _DPI / 72

    def at(v):
        return ax.transData.transform((0.0, v))[1]

    candidates = [0, 4] + [10 ** k for k in range(1, int(math.log10(ymax)) + 1)] + [2, 1, 3]
    chosen = []
    for v in candidates:
        if v <= ymax and all(abs(at(v) - at(c)) >= sep for c in chosen):
            chosen.append(v)
    return sorted(chosen)


def _nan_bins(runs: list) -> list:
    """The middles of the bins where some run has NaN against a number, in order."""
    return sorted({round((lo + hi) / 2, 9) for b in (r.errors.by_ratio for r in runs)
                   for lo, hi, k in zip(b.edges[:-1], b.edges[1:], b.nan or []) if k > 0})


def ratio_figure(runs: list):
    """Largest ULP error and share of inexact elements against (x1 - x2) / beta, per run; NaN
    against a number in a strip of its own above; the legend below the axes, one column a run."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator, PercentFormatter

    bins = [r.errors.by_ratio for r in runs]
    top = max(max(b.max_ulp or [0]) for b in bins)
    nan_at = _nan_bins(runs)
    shown = [r for r, b in zip(runs, bins) if any(b.elements)]
    fig = _figure(7.5, 3.0 + (0.35 if nan_at else 0) + (0.4 if shown else 0))
    if nan_at:
        grid = fig.add_gridspec(2, 1, height_ratios=[1, 11])
        strip = fig.add_subplot(grid[0])
        ax = fig.add_subplot(grid[1], sharex=strip)
    else:
        strip, ax = None, fig.add_subplot()
    ax2 = ax.twinx()
    entries = []  # (handle, label), column by column: one run's max ULP above its share inexact
    for run, b in zip(runs, bins):
        if not any(b.elements):
            continue
        edges = np.array(b.edges, float)
        mid = (edges[:-1] + edges[1:]) / 2
        n = np.array(b.elements, float)
        keep = n > 0
        label = f"{run.dtype} {run.variant}"
        dashes = (0, (4, 3)) if run.variant == "p" else "-"  # s and p usually coincide: both show
        colour = "C0" if run.dtype == "fp16" else "C3"  # one colour per dtype
        ax.stairs(np.where(keep, np.array(b.max_ulp, float), np.nan), edges, baseline=None, color=colour,
                  linestyle=dashes, linewidth=1.2)  # a gap where a bin has no element
        ax2.plot(mid[keep], np.array(b.inexact, float)[keep] / n[keep], linestyle=":", linewidth=1,
                 color=colour, alpha=0.7)
        entries += [(Line2D([], [], color=colour, linestyle=dashes, linewidth=1.2), f"{label}: max ULP"),
                    (Line2D([], [], color=colour, linestyle=":", linewidth=1, alpha=0.7), f"{label}: share inexact")]
    lo = min(b.edges[0] for b in bins)
    hi = max(b.edges[-1] for b in bins)
    for axes in (ax, strip):
        if axes is not None:
            for x in (-1, 1):
                axes.axvline(x, color="#888888", linewidth=0.8)
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=10, steps=[1, 2, 5, 10]))
    ax.tick_params(labelsize=8)
    ax.set_xlabel("(x1 - x2) / beta   (the branch boundary is at -1 and +1)", fontsize=8)
    ax.set_ylabel("largest ULP error in the bin", fontsize=8)
    ax2.set_ylabel("share of elements not exact", fontsize=8)
    ax2.set_ylim(0, 1.05)
    ax2.yaxis.set_major_locator(FixedLocator([0, 0.25, 0.5, 0.75, 1]))
    ax2.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax2.tick_params(labelsize=8)
    if not shown:
        ax.text(0.5, 0.5, f"no element with (x1 - x2) / beta in {lo:g}..{hi:g}", transform=ax.transAxes,
                ha="center", va="center", fontsize=8, color="#555555")
    if nan_at:
        strip.plot(nan_at, np.zeros(len(nan_at)), "x", color="#c62828", markersize=5, clip_on=False)
        strip.set_ylim(-1, 1)
        strip.set_yticks([0], ["NaN vs number"], fontsize=7)
        strip.tick_params(axis="x", bottom=False, labelbottom=False)
        strip.set_title("error against diff / beta", fontsize=9)
    else:
        ax.set_title("error against diff / beta", fontsize=9)
    if entries:
        handles, labels = zip(*entries)
        fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(shown)), fontsize=7,
                   frameon=False, handlelength=2.5, columnspacing=1.5)
    if top <= 4:  # the budgets' range only: linear
        ymax = 4.5
        ax.set_ylim(0, ymax)
        ax.yaxis.set_major_locator(FixedLocator([0, 1, 2, 3, 4]))
    else:  # linear to 4 ULP (the budgets), then decades, the linear part kept a readable height
        ymax = 2.0 * top
        ax.set_yscale("symlog", linthresh=4, linscale=max(1.0, math.log10(ymax / 4) / 2))
        ax.set_ylim(0, ymax)
        ax.yaxis.set_major_locator(FixedLocator(_ulp_ticks(fig, ax, ymax, 8)))
        ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: _ulp_label(value)))
    return fig


def ratio_svg(runs: list) -> str:
    return _svg(ratio_figure(runs))


def ratio_caption(runs: list) -> str:
    """The caption of ``ratio_svg(runs)``: what is drawn (the NaN strip only where there is one)
    and how many elements are not."""
    outside = sum(r.errors.by_ratio.outside for r in runs)
    nan = " and NaN against a number (x, in the strip above)" if _nan_bins(runs) else ""
    return ("Error against (x1 - x2) / beta: largest ULP error (steps; the p variant dashed), share of "
            f"inexact elements (dotted){nan} per bin of 0.1. Not shown: {outside} elements with the ratio "
            "outside -4..4 or not a number (beta 0, inf, NaN inputs), and elements accepted beyond the budget "
            "(reachable under the error model, or an alternative's bits).")


def all_plots(report) -> list:
    """(caption, svg) for every plot the report has data for, drawn side by side in forked
    processes where there are several CPUs (matplotlib's layout passes are pure Python: one
    CPU draws one figure at a time; the SVG is the same bits either way)."""
    todo = []
    if report.runs:
        todo.append(("Pass/fail matrix: every requirement against every dtype and variant", matrix_svg, report.runs))
    with_errors = [r for r in report.runs if r.errors]
    if with_errors:
        todo.append((ratio_caption(with_errors), ratio_svg, with_errors))
    for run in with_errors:
        if run.errors.ulp_histogram:
            todo.append((f"{run.dtype} {run.variant}: elements per family and ULP distance", histogram_svg, run))
    return [(caption, svg) for (caption, _, _), svg in zip(todo, _draw_all([(fn, arg) for _, fn, arg in todo]))]


_WARM = None  # the drawing processes :func:`warm` started, until all_plots takes them


def _workers() -> int:
    """Processes to draw in: one per CPU this process may use; 1 where fork is not available."""
    import multiprocessing
    import os

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


MOST_PLOTS = 6  # the matrix, the ratio plot and one histogram per run (two dtypes, two variants)


def _import_matplotlib(parent: "int | None" = None) -> None:
    """Import what drawing needs; ``parent``: a process started early (warm), idle until the end:
    Ctrl-C is the parent's to handle, it takes what the certification leaves of the CPUs, and it
    ends with its parent however that ends (killed, say), never left behind."""
    import importlib
    import os
    import signal

    if parent is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if hasattr(os, "nice"):
            os.nice(10)
        try:  # Linux: SIGTERM when the parent dies
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        if os.getppid() != parent:  # the parent died before that was set
            os._exit(0)
    for name in ("matplotlib.figure", "matplotlib.backends.backend_agg", "matplotlib.backends.backend_svg"):
        importlib.import_module(name)


def warm() -> None:
    """Start the processes that will draw the plots, now: forked while this process is still
    small and has one thread, each importing matplotlib (at a lower priority) while the
    certification runs, so that :func:`all_plots` draws at once at the end. Nothing where it
    would draw in this process (one CPU, no fork)."""
    global _WARM
    if _WARM is not None or _workers() < 2:
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import os

    try:
        _WARM = ProcessPoolExecutor(min(_workers(), MOST_PLOTS), mp_context=multiprocessing.get_context("fork"),
                                    initializer=_import_matplotlib, initargs=(os.getpid(),))
        _WARM.submit(int)  # a forking pool starts every process at the first task
    except OSError:
        _WARM = None


def cool() -> None:
    """The processes :func:`warm` started, ended now (nothing will be drawn: the command failed),
    and the pool's manager thread with them. Why wait for it: a manager thread left running
    closes its wakeup pipe while the interpreter's exit hook (concurrent.futures' _python_exit,
    unlocked) may be writing to it, and the command that failed with one clear line then prints
    "Exception ignored ... OSError: [Errno 9] Bad file descriptor" after it (seen once in CI;
    CPython gh-132969). The processes are terminated first (killed if they outlive a second), so
    the wait is the manager's noticing that they are gone: milliseconds."""
    global _WARM
    pool, _WARM = _WARM, None
    if pool is not None:
        processes = list((getattr(pool, "_processes", None) or {}).values())
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(1.0)
            if process.is_alive():
                process.kill()
                process.join()
        pool.shutdown(wait=True, cancel_futures=True)


def _draw_all(tasks: list) -> list:
    """``fn(arg)`` of every task, in order: in a pool of forked processes (those :func:`warm`
    started, or new ones, matplotlib imported first, so that no child imports it again) where
    fork exists and there are several CPUs and tasks, else one after the other (and where the
    pool cannot be had)."""
    global _WARM
    import multiprocessing

    pool, _WARM = _WARM, None
    workers = min(len(tasks), _workers())
    if pool is None and workers < 2:
        return [fn(arg) for fn, arg in tasks]
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        if pool is None:
            _import_matplotlib()  # once, before the fork: no child imports it again
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        with pool:
            return list(pool.map(_draw, tasks))
    except (OSError, BrokenProcessPool):
        return [fn(arg) for fn, arg in tasks]


def _draw(task):
    fn, arg = task
    return fn(arg)

"""The report's plots stay readable for a failing library: legends outside the data, tick labels that
neither overlap nor crowd, huge ULP errors and NaN against a number shown sensibly, and a passing
library's plots with nothing in the legend that is not in the data. Checked on the matplotlib
Figures themselves (laid out, before they become SVG), then on the SVG text (reproducible, small).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import dataclasses

import numpy as np

from sl1conf.conformance.requirements.entries import ErrorSummary
import pytest

from sl1conf.conformance.reports import plots as P
from sl1conf.conformance.requirements.results import Report

ROOT = Path(__file__).resolve().parents[1]
PASSING = ROOT / "reports" / "kernel-ieee" / "report.json"  # committed, read only
BUCKETS = ["0", "1", "2", "3", "4", "5-8", "9-64", "65+", "nan"]
EDGES = [round(-4 + 0.1 * i, 10) for i in range(81)]
RUNS = [("fp16", "s"), ("fp16", "p"), ("fp32", "s"), ("fp32", "p")]


def run(dtype="fp32", variant="s", max_ulp=None, elements=None, nan=None, families=10, requirements=18,
        seed=0) -> SimpleNamespace:
    """A run (as requirements.results.RunResult has it), with what the plots read: the requirements'
    statuses, the histogram, by_ratio."""
    rng = np.random.default_rng(seed)
    max_ulp = [0] * 80 if max_ulp is None else [int(v) for v in max_ulp]
    elements = [int(v) for v in (rng.integers(1, 1000, 80) if elements is None else elements)]
    statuses = list(P._COLOURS)
    return SimpleNamespace(
        dtype=dtype, variant=variant,
        requirements=[SimpleNamespace(id=f"R{i:02d}", title=f"requirement-{i}", status=statuses[i % len(statuses)])
                      for i in range(1, requirements + 1)],
        errors=ErrorSummary.from_json({
            "max_ulp": max(max_ulp), "nan_mismatches": 0, "reasons": dict.fromkeys(("exact", "within_budget", "reachable", "alternative", "open_bounds", "rejected"), 0), "buckets": BUCKETS,
            "ulp_histogram": {f"family-{i}-{'x' * (i % 20)}": [int(v) for v in rng.integers(0, 3 * 10 ** 6, 9)]
                              for i in range(families)},
            "by_ratio": {"edges": EDGES, "elements": elements,
                         "inexact": [int(e * rng.random()) for e in elements], "max_ulp": max_ulp,
                         "nan": [0] * 80 if nan is None else [int(v) for v in nan], "outside": 7}}),
    )


def failing_runs() -> list:
    """Four runs of a badly failing library: errors up to 2^32 - 1 ULP near the boundary, NaN
    against a number in many bins, p different from s."""
    rng = np.random.default_rng(7)
    runs = []
    for k, (dtype, variant) in enumerate(RUNS):
        ulp = np.where(rng.random(80) < 0.5, rng.integers(0, 5, 80), rng.integers(0, 2 ** 32, 80))
        ulp[35 + k] = 2 ** 32 - 1
        runs.append(run(dtype, variant, ulp, nan=rng.random(80) < 0.4, families=14, seed=k))
    return runs


def laid_out(fig):
    fig.draw_without_rendering()
    return fig


def tick_labels(fig) -> list:
    return [t for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for t in P.drawn_ticklabels(axis)]


def overlaps(texts) -> list:
    boxes = [(t.get_text(), t.get_window_extent()) for t in texts]
    return [(a, c) for i, (a, b) in enumerate(boxes) for c, d in boxes[i + 1:] if b.overlaps(d)]


def assert_tick_labels_readable(fig, most: int = 12) -> None:
    """No two tick labels of the figure overlap (across its axes too), and no axis has more than
    ``most`` labels unless it is a category axis (then they may not overlap either)."""
    assert overlaps(tick_labels(fig)) == []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            assert P.overlapping_ticklabels(axis) == []
            assert len(P.drawn_ticklabels(axis)) <= most, [t.get_text() for t in P.drawn_ticklabels(axis)]


def legend_entries(fig) -> list:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


# --- error against diff / beta -------------------------------------------------------------------

def test_failing_ratio_plot_has_its_legend_outside_every_axes():
    fig = laid_out(P.ratio_figure(failing_runs()))
    [legend] = fig.legends
    box = legend.get_window_extent()
    assert len(fig.axes) == 3  # the NaN strip, the error axes, its twin (share inexact)
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent()), ax
    assert box.y1 < min(ax.get_window_extent().y0 for ax in fig.axes)  # below the axes
    for t in tick_labels(fig):  # and over no tick label
        assert not box.overlaps(t.get_window_extent()), t.get_text()
    assert legend_entries(fig) == [f"{d} {v}: {what}" for d, v in RUNS for what in ("max ULP", "share inexact")]


@pytest.mark.parametrize("top", [0, 1, 3, 4, 5, 64, 1000, 63486, 2 ** 31, 2 ** 32 - 1])
def test_ratio_tick_labels_do_not_overlap_whatever_the_largest_error(top):
    ulp = [0] * 80
    ulp[30], ulp[40], ulp[50] = top, min(top, 4), min(top, 2)
    fig = laid_out(P.ratio_figure([run("fp32", "s", ulp), run("fp32", "p", ulp)]))
    assert_tick_labels_readable(fig)
    ax = fig.axes[0]
    labels = [t.get_text() for t in P.drawn_ticklabels(ax.yaxis)]
    assert {"0", "4"} <= set(labels)  # the budgets' range is always labelled
    lo, hi = ax.get_ylim()
    assert lo == 0 and hi > top  # the largest error is inside the axes, below its top
    if top > 4:
        assert ax.get_yscale() == "symlog"
        zero, four, high = (ax.transData.transform((0, v))[1] for v in (0, 4, hi))
        assert (four - zero) / (high - zero) >= 0.25  # 0..4 ULP keeps a readable part of the height


def test_the_failing_ratio_plot_labels_are_few_and_spaced():
    fig = laid_out(P.ratio_figure(failing_runs()))
    assert_tick_labels_readable(fig, most=10)
    ax = fig.axes[1]
    labels = [t.get_text() for t in P.drawn_ticklabels(ax.yaxis)]
    assert labels[0] == "0" and "4" in labels and labels[-1] in ("10⁸", "10⁹") and all(len(s) <= 4 for s in labels)
    centres = [t.get_window_extent().y0 for t in P.drawn_ticklabels(ax.yaxis)]
    assert min(np.diff(sorted(centres))) >= 1.5 * 8 * 96 / 72  # 1.5 lines of 8-point text apart at least


def test_nan_against_a_number_gets_a_strip_of_its_own_only_when_there_is_some():
    nan = [0] * 80
    nan[12] = nan[60] = 3
    fig = laid_out(P.ratio_figure([run(max_ulp=[1] * 80, nan=nan)]))
    strip = fig.axes[0]
    [marks] = strip.lines[2:]  # after the two boundary lines
    assert marks.get_marker() == "x" and list(np.round(marks.get_xdata(), 6)) == [-2.75, 2.05]
    assert [t.get_text() for t in P.drawn_ticklabels(strip.yaxis)] == ["NaN vs number"]
    assert strip.get_window_extent().y0 > fig.axes[1].get_window_extent().y1  # above the error axes
    assert "NaN" not in " ".join(legend_entries(fig))  # the strip says it; the legend has lines only
    fig = laid_out(P.ratio_figure([run(max_ulp=[1] * 80)]))
    assert len(fig.axes) == 2 and all(t.get_text() != "NaN vs number" for t in tick_labels(fig))


def test_the_legend_names_only_runs_with_something_drawn():
    empty = run("fp16", "s", elements=[0] * 80)
    fig = laid_out(P.ratio_figure([empty, run("fp32", "p", [2] * 80)]))
    assert legend_entries(fig) == ["fp32 p: max ULP", "fp32 p: share inexact"]
    fig = laid_out(P.ratio_figure([empty]))
    assert fig.legends == [] and any("no element" in t.get_text() for t in fig.axes[0].texts)


def test_the_passing_committed_report_plots_the_same_way():
    report = Report.from_json(json.loads(PASSING.read_text()))
    runs = [r for r in report.runs if r.errors]
    fig = laid_out(P.ratio_figure(runs))
    assert len(fig.axes) == 2  # no NaN strip: a passing kernel has no NaN against a number in -4..4
    assert_tick_labels_readable(fig)
    assert [t.get_text() for t in P.drawn_ticklabels(fig.axes[0].yaxis)] == ["0", "1", "2", "3", "4"]
    [legend] = fig.legends
    assert all(not legend.get_window_extent().overlaps(ax.get_window_extent()) for ax in fig.axes)
    assert legend_entries(fig) == [f"{r.dtype} {r.variant}: {what}" for r in runs
                                   for what in ("max ULP", "share inexact")]
    caption = P.ratio_caption(runs)
    assert "NaN" in caption and "strip" not in caption  # NaN named only as what is not shown
    for r in runs:
        assert_tick_labels_readable(laid_out(P.histogram_figure(r)), most=20)
    assert_tick_labels_readable(laid_out(P.matrix_figure(report.runs)), most=20)


# --- histogram and matrix: category labels -------------------------------------------------------------

@pytest.mark.parametrize("families", [1, 14, 60, 150])
def test_histogram_family_labels_never_overlap(families):
    fig = laid_out(P.histogram_figure(run(families=families, max_ulp=[2 ** 31] * 80)))
    assert_tick_labels_readable(fig, most=80)
    ax = fig.axes[0]
    shown = [t.get_text() for t in P.drawn_ticklabels(ax.yaxis)]
    assert shown[0] == "family-0-"  # the first family is always named
    if families <= 60:
        assert len(shown) == families  # all of them while there is room
    assert fig.get_figheight() <= 13  # the figure stops growing; labels are thinned instead
    assert "about 2^31.0" in ax.get_title()


def test_many_wide_buckets_stand_upright_and_do_not_overlap():
    r = run(families=5)
    r.errors = dataclasses.replace(r.errors, buckets=[f"bucket number {i}" for i in range(30)],
                                   ulp_histogram={f"f{i}": list(range(30)) for i in range(5)})
    fig = laid_out(P.histogram_figure(r))
    assert_tick_labels_readable(fig, most=30)
    assert {t.get_rotation() for t in P.drawn_ticklabels(fig.axes[0].xaxis)} == {90.0}


def test_the_usual_buckets_lie_flat_and_nan_takes_two_lines():
    fig = laid_out(P.histogram_figure(run()))
    labels = P.drawn_ticklabels(fig.axes[0].xaxis)
    assert [t.get_text() for t in labels][-1] == "NaN vs\nnumber"
    assert {t.get_rotation() for t in labels} == {0.0}


@pytest.mark.parametrize("requirements", [18, 60, 150])
def test_matrix_requirement_labels_never_overlap(requirements):
    fig = laid_out(P.matrix_figure([run(d, v, requirements=requirements) for d, v in RUNS]))
    assert_tick_labels_readable(fig, most=80)
    words = [t.get_text() for t in fig.axes[0].texts]
    assert len(words) == (4 * requirements if requirements <= 60 else 0)  # a word per cell while it fits


def test_cell_counts_and_ulp_labels_are_short():
    assert P._count(1450462) == "1450462" and P._count(12_345_678) == "12.3M" and P._count(2 * 10 ** 9) == "2G"
    assert [P._ulp_label(v) for v in (0, 4, 10, 1000, 10 ** 4, 10 ** 9)] == ["0", "4", "10", "1000", "10⁴", "10⁹"]
    assert P._magnitude(63486) == "" and P._magnitude(2 ** 32 - 1) == ", about 2^32.0"


# --- the SVG ---------------------------------------------------------------------------------------

def test_the_svg_of_a_failing_report_is_reproducible_small_and_text():
    report = SimpleNamespace(runs=failing_runs()[1:3])  # fp16 p and fp32 s: different errors, NaN in both
    first, again = P.all_plots(report), P.all_plots(report)
    assert first == again
    assert [c.split(":")[0] for c, _ in first][:2] == ["Pass/fail matrix", "Error against (x1 - x2) / beta"]
    assert "(x, in the strip above)" in first[1][0]
    for caption, svg in first:
        assert svg.startswith("<svg") and "<image" not in svg, caption
        assert len(svg) < 150_000, (caption, len(svg))
        assert not re.search(r"\d{4}-\d\d-\d\dT", svg)  # no date
    assert "error against diff / beta" in first[1][1] and re.search("10[⁸⁹]<", first[1][1])  # text, not paths


def test_cool_leaves_nothing_for_the_exit_hook_to_race_with():
    """plots.cool() after plots.warm() (a command that fails early): the warm processes are gone and
    so is the pool's manager thread, its wakeup pipe closed, before cool() returns; a manager
    thread still running at exit races concurrent.futures' exit hook, which then prints a
    traceback after the command's one error line (seen once in CI)."""
    import threading

    if P._workers() < 2:
        pytest.skip("warm() starts nothing on one CPU")
    before = set(threading.enumerate())
    P.warm()
    pool = P._WARM
    assert pool is not None
    processes = list(pool._processes.values())
    wakeup = pool._executor_manager_thread_wakeup
    P.cool()
    assert not any(p.is_alive() for p in processes)
    assert wakeup._closed  # the exit hook's wakeup() writes to nothing
    assert not [t for t in set(threading.enumerate()) - before if t.is_alive()]

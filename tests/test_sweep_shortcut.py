"""The judge's shortcut in C (issue 38, item 2): ``kernel.f16_judge_pass`` accepts exactly the
elements the Python definition ``judge.within_budget_alone`` accepts, and counts them as
``sweep_tally`` counts them in numpy (the histogram's row and bucket, the zero-sign count, the
worst and first zero-sign element of each row). Expected results come from the oracle
(``fast_oracle``, itself checked against mpmath in tests/test_fast_oracle*.py) and the Python
definitions, never from the C code under test."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sl1conf.conformance.rules import distances
from sl1conf.conformance.rules import judge as J
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.search import sweep_tally as T
from sl1conf.conformance.search.sweep import shortcut_of
from sl1conf.reference import fast_oracle, kernel
from sl1conf.reference import formats as F
from sl1conf.reference.exact import at_boundary as exact_at_boundary

FP16 = F.FP16
EDGES = (0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x03FF, 0x83FF, 0x0400, 0x8400, 0x0401, 0x3800, 0xB800,
         0x3BFF, 0x3C00, 0xBC00, 0x3C01, 0x4000, 0xC000, 0x2E66, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00,
         0x7C01, 0xFE00)
BETAS = (0x3C00, 0x3800, 0x4000, 0x2E66, 0x0400, 0x0001, 0x03FF, 0x0000, 0x8000, 0xBC00, 0x7BFF, 0x7C00, 0x7E00)


def _profile(strict: bool, budget: int):
    p = load_profile("ieee")
    return dataclasses.replace(p, strict_zero_sign=strict, max_ulp={**p.max_ulp, "fp16": budget})


def _oracle(dy, x1, x2, beta):
    """The correctly rounded bits, every NaN as the canonical quiet NaN."""
    h = lambda a: np.ascontiguousarray(a, np.uint16).view(np.float16)  # noqa: E731
    w = np.ascontiguousarray(fast_oracle.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(beta).view(np.float16)))
    w = w.view(np.uint16).copy()
    w[F.is_nan_bits(FP16, w)] = FP16.qnan_bits
    return w


def _python_side(dy, x1, x2, beta, got, profile):
    """What sweep_tally does in numpy: the wrong elements, the shortcut's choice, and its count
    of those it accepts (row by the accepted models, bucket, zero sign, worst and first zero-sign
    element per row)."""
    want = _oracle(dy, x1, x2, beta)
    bad = T._wrong(got, want)  # noqa: SLF001
    g, w = got[bad], want[bad]
    dist = F.ulp_distance(FP16, g, w)
    alone = J.within_budget_alone(FP16, profile, g, w, dist, dy[bad], x1[bad], x2[bad], beta)
    at = np.flatnonzero(alone)
    hist, zsign = np.zeros((4, T.NB), np.int64), np.zeros((4, T.NB), np.int64)
    worst, first_z = [-1] * 4, [-1] * 4
    if at.size:
        model = J.model_match(FP16, g[at], dy[bad][at], x1[bad][at], x2[bad][at], beta)
        ftz = J.flush_match(FP16, g[at], dy[bad][at], x1[bad][at], x2[bad][at], beta, w[at])
        row = 2 * model.astype(np.int64) + ftz
        bucket = distances.bucket_of(dist[at])
        bucket[dist[at] == 0] = T.B_ZERO
        np.add.at(hist, (row, bucket), 1)
        mag = np.uint16(0x7FFF)
        zs = (((g[at] & mag) == 0) | ((w[at] & mag) == 0)) & (((g[at] ^ w[at]) & 0x8000) != 0)
        np.add.at(zsign, (row[zs], bucket[zs]), 1)
        for r in range(4):
            in_row = np.flatnonzero(row == r)
            if in_row.size and dist[at][in_row].max() > 0:
                worst[r] = int(bad[at][in_row[np.argmax(dist[at][in_row])]])
            zr = np.flatnonzero((row == r) & zs)
            if zr.size:
                first_z[r] = int(bad[at][zr[0]])
    return bad[~alone], want[bad][~alone], {"hist": hist, "zsign": zsign, "worst": worst, "first_zsign": first_z,
                                            "count": int(at.size)}, want


def _check(dy, x1, x2, beta, got, profile, rows=None):
    rest, w_rest, py, want = _python_side(dy, x1, x2, beta, got, profile)
    idx, w, alone = kernel.f16_judge_pass(dy, x1, x2, beta, got, *shortcut_of(profile), rows=rows)
    np.testing.assert_array_equal(idx, rest)
    np.testing.assert_array_equal(w, w_rest)
    assert alone["count"] == py["count"]
    np.testing.assert_array_equal(alone["hist"], py["hist"])
    np.testing.assert_array_equal(alone["zsign"], py["zsign"])
    assert alone["worst"].tolist() == py["worst"]
    assert alone["first_zsign"].tolist() == py["first_zsign"]
    for r in range(4):
        if py["worst"][r] >= 0:
            i = py["worst"][r]
            assert alone["worst_want"][r] == want[i]
            assert alone["worst_dist"][r] == F.ulp_distance(FP16, got[i], want[i])
        if py["first_zsign"][r] >= 0:
            assert alone["zsign_want"][r] == want[py["first_zsign"][r]]
    return py["count"]


def _got_near(want, rng, dy):
    """Results near the correctly rounded ones: a few ULPs either way (across zero, into the
    subnormals and past the largest finite value), the other sign, a zero of either sign, an
    infinity, a NaN, dy itself (an accepted model's answer at the boundary, say)."""
    n = want.size
    how = rng.integers(0, 10, n)
    step = rng.integers(-9, 10, n)
    o = F.ordered(FP16, want) + step
    o = np.clip(o, -0x7C00, 0x7C00)
    near = np.where(o < 0, (-o) | 0x8000, o).astype(np.uint16)
    got = np.where(how < 6, near, want)
    got = np.where(how == 6, want ^ 0x8000, got)
    got = np.where(how == 7, rng.choice(np.array([0, 0x8000, 0x7C00, 0xFC00, 0x7E00], np.uint16), n), got)
    got = np.where(how == 8, dy, got)
    return got.astype(np.uint16)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), beta=st.sampled_from(BETAS), strict=st.booleans(),
       budget=st.sampled_from([0, 1, 2, 3, 8, 100, 70000]), edges=st.floats(0, 1))
def test_the_c_shortcut_accepts_what_within_budget_alone_accepts_and_counts_it_as_numpy_does(
        seed, beta, strict, budget, edges):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))

    def draw():
        a = rng.integers(0, 1 << 16, n).astype(np.uint16)
        pick = rng.random(n)
        e = pick < edges * 0.6
        a[e] = rng.choice(np.array(EDGES, np.uint16), int(e.sum()))
        mid = (pick >= 0.6) & (pick < 0.85)  # near the middle line, both signs
        a[mid] = rng.integers(0x3400, 0x4200, int(mid.sum())) | (rng.integers(0, 2, int(mid.sum())) << 15)
        return a
    dy, x1, x2 = draw(), draw(), draw()
    if rng.random() < 0.3:  # the boundary: x1 - x2 = +-beta exactly
        k = rng.random(n) < 0.3
        bv = float(np.uint16(beta).view(np.float16))
        with np.errstate(all="ignore"):
            x1b = (x2.view(np.float16).astype(np.float64) + np.where(rng.random(n) < 0.5, bv, -bv)).astype(np.float16)
            exact = x1b.astype(np.float64) - x2.view(np.float16).astype(np.float64)
        k &= np.abs(exact) == abs(bv)
        x1[k] = x1b.view(np.uint16)[k]
    got = _got_near(_oracle(dy, x1, x2, beta), rng, dy)
    _check(dy, x1, x2, beta, got, _profile(strict, budget))


def _table(rng, size: int) -> np.ndarray:
    """A table of x1 patterns with rising and falling stretches (runs of consecutive positive or
    negative patterns, across zero, the subnormals, the infinities and NaN), short ones and
    scattered patterns between them."""
    parts = []
    while sum(p.size for p in parts) < size:
        kind = rng.integers(0, 4)
        if kind < 2:  # a run of consecutive patterns: rising values if positive, falling if negative
            start = int(rng.choice([0, 0x0300, 0x3500, 0x3B80, 0x7B00, 0x8000, 0x8300, 0xB500, 0xBB80, 0xFB00,
                                    rng.integers(0, 1 << 16)]))
            parts.append((start + np.arange(int(rng.integers(1, 700)))) % (1 << 16))
        elif kind == 2:  # a run read backwards
            start = int(rng.integers(0, 1 << 16))
            parts.append((start - np.arange(int(rng.integers(1, 300)))) % (1 << 16))
        else:
            parts.append(rng.choice(np.array(EDGES, np.int64), int(rng.integers(1, 20))))
    return np.concatenate(parts)[:size].astype(np.uint16)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), beta=st.sampled_from(BETAS), strict=st.booleans(),
       budget=st.sampled_from([0, 1, 2, 100, 70000]))
def test_a_block_of_rows_is_checked_as_every_element_alone(seed, beta, strict, budget):
    """Rows (x1 a table, x2 and dy one value a row: a sweep block's shape) checked through the
    table's stretches give what the Python definitions give element by element, and what the
    pass without rows gives: the outer branches, found by binary search, are dy's bits."""
    _rows_case(seed, beta, strict, budget)


def _rows_case(seed, beta, strict, budget):
    """One block of rows, checked as test_a_block_of_rows_is_checked_as_every_element_alone says."""
    rng = np.random.default_rng(seed)
    size, nrows = int(rng.integers(1, 3000)), int(rng.integers(1, 6))
    table = _table(rng, size)
    x1 = np.tile(table, nrows)
    pool = np.array(EDGES + (0x3C00, 0xBC00, 0x3BFF), np.uint16)
    x2 = np.repeat(np.where(rng.random(nrows) < 0.7, rng.choice(pool, nrows), rng.integers(0, 1 << 16, nrows)),
                   size).astype(np.uint16)
    dy = np.repeat(np.where(rng.random(nrows) < 0.5, rng.choice(pool, nrows), rng.integers(0, 1 << 16, nrows)),
                   size).astype(np.uint16)
    want = _oracle(dy, x1, x2, beta)
    got = want.copy() if rng.random() < 0.2 else _got_near(want, rng, dy)
    if rng.random() < 0.3:  # the built-in kernel's results
        got = np.ascontiguousarray(kernel.smoothl1lossgrad(*(a.view(np.float16) for a in (dy, x1, x2)),
                                                           np.uint16(beta).view(np.float16), threads=1)).view(np.uint16)
    profile = _profile(strict, budget)
    rows = (size, kernel.f16_table_runs(table))
    _check(dy, x1, x2, beta, got, profile, rows=rows)
    plain, shaped = (kernel.f16_judge_pass(dy, x1, x2, beta, got, *shortcut_of(profile), rows=r) for r in (None, rows))
    for a, b in zip(plain[:2], shaped[:2]):
        np.testing.assert_array_equal(a, b)



@pytest.mark.parametrize("beta", [0x3C00, 0x3800, 0x2E66, 0x4000])
@pytest.mark.parametrize("model", [None, "divmul-fp16"])
def test_rows_whose_middle_ends_on_the_boundary_hand_back_those_elements(beta, model):
    """In a block of rows the middle of each stretch (|x1 - x2| <= beta) is found by binary search,
    and only its first and last element can lie on the boundary (x1 - x2 = +-beta exactly: R02
    applies there, and the shortcut takes nothing), which the C pass uses. Rows built so that a
    middle begins or ends on the boundary in each: the table is every positive finite x1 (rising)
    and every negative one (falling), and x2 + beta and x2 - beta are halves, so x1 = x2 + beta
    (the last of the rising middle) and x1 = x2 - beta (the first of the rising middle where it is
    not negative, else the last of the falling one; both zeros where x2 = beta) are in it. With
    results 1 ULP off everywhere (dense chunks that no model gives) or the built-in kernel's (dense
    chunks of its own model), the pass hands back what the Python definition hands back, the
    boundary elements among them."""
    table = np.concatenate([np.arange(0x0000, 0x7C00), np.arange(0x8000, 0xFC00)]).astype(np.uint16)
    b = float(np.uint16(beta).view(np.float16))
    h = lambda v: np.float16(v).view(np.uint16)  # noqa: E731
    x2s = [v for v in (0.5, 2 * b, 1.0, b, -b, -0.5, -3 * b, 100.0, 0.0) if float(np.float16(v)) == v
           and float(np.float16(v + b)) == v + b and float(np.float16(v - b)) == v - b]
    dys = [h(1.0), h(-3.0), h(0.1), h(1000.0), h(1.0), h(-0.75), h(5.0), h(2.0), h(-7.0)][:len(x2s)]
    x1 = np.tile(table, len(x2s))
    x2 = np.repeat(np.array([h(v) for v in x2s], np.uint16), table.size)
    dy = np.repeat(np.array(dys, np.uint16), table.size)
    want = _oracle(dy, x1, x2, beta)
    if model is None:
        got = _got_near(want, np.random.default_rng(beta), dy)
        got = np.where(want == got, (want + 1).astype(np.uint16), got)  # every finite result off by one ULP or more
        got = np.where((want & 0x7FFF) >= 0x7BFF, want, got).astype(np.uint16)
    else:
        got = np.ascontiguousarray(kernel.smoothl1lossgrad(*(a.view(np.float16) for a in (dy, x1, x2)),
                                                           np.uint16(beta).view(np.float16), model=model,
                                                           threads=1)).view(np.uint16)
    on = np.flatnonzero(exact_at_boundary(FP16, x1, x2, beta))
    assert on.size >= 2 * len(x2s) and len(x2s) >= 3  # x2 + beta and x2 - beta, in every row
    profile = _profile(False, 3)
    _check(dy, x1, x2, beta, got, profile, rows=(table.size, kernel.f16_table_runs(table)))
    idx = kernel.f16_judge_pass(dy, x1, x2, beta, got, *shortcut_of(profile), rows=(table.size,
                                kernel.f16_table_runs(table)))[0]
    differ = on[got[on] != want[on]]
    assert np.isin(differ, idx).all()  # (the boundary elements that differ: handed back)
    assert differ.size or model  # (the built-in kernel's are right there: dy's bits)


@pytest.mark.parametrize("order", ["rising", "falling"])
def test_subnormal_x1_in_a_dense_middle_counts_the_flush_to_zero_row(order):
    """Rows whose middle holds every subnormal x1, with the built-in kernel's dense deviations
    there (x1 - x2 rounds to -x2: the flush-to-zero oracle's result, row "model+ftz"): rows of
    different x2 and dy one after another (each row's flushed result is its own; some of them
    subnormal, where every element has a subnormal input), the
    subnormals at the start of the middle (rising) or at its end, after the normal x1 have set
    row "model"'s worst (falling): the tally is the Python definitions'."""
    table = np.arange(0, 0x3C01, dtype=np.uint16)
    table = table if order == "rising" else table[::-1].copy()
    rows = (table.size, kernel.f16_table_runs(table))
    # (and rows of a subnormal x2 or dy: every element's flush-to-zero oracle computed, not one per row)
    x2v = np.array([0x3555, 0x2E66, 0xB400, 0x3A01, 0x3555, 0x0007, 0x3555, 0x8203], np.uint16)
    dyv = np.array([0x3555, 0x4100, 0x3555, 0xB9F0, 0x3C01, 0x3555, 0x0003, 0xC100], np.uint16)
    x1, x2, dy = np.tile(table, x2v.size), np.repeat(x2v, table.size), np.repeat(dyv, table.size)
    got = np.ascontiguousarray(kernel.smoothl1lossgrad(*(a.view(np.float16) for a in (dy, x1, x2)), np.float16(1),
                                                       model="divmul-fp16", threads=1)).view(np.uint16)
    sub = J.is_subnormal(FP16, x1)
    want = _oracle(dy, x1, x2, 0x3C00)
    assert ((got != want) & sub).sum() > 500  # deviations at subnormal x1, in every row
    for strict in (False, True):
        _, _, alone = kernel.f16_judge_pass(dy, x1, x2, 0x3C00, got, *shortcut_of(_profile(strict, 2)), rows=rows)
        assert alone["hist"][3].sum() > 500  # (counted in row "model+ftz")
        _check(dy, x1, x2, 0x3C00, got, _profile(strict, 2), rows=rows)


def _kernel_bits(model, dy, x1, x2, beta):
    """The built-in kernel's results for ``model`` (bits in, bits out)."""
    return np.ascontiguousarray(kernel.smoothl1lossgrad(*(a.view(np.float16) for a in (dy, x1, x2)),
                                                       np.uint16(beta).view(np.float16), model=model,
                                                       threads=1)).view(np.uint16)


def _other_neighbour(got, want, every):
    """Every ``every``-th element that differs from the correctly rounded ``want`` moved to the
    other side of it, as far (no longer the model's result, as close): the finite ones."""
    o_g, o_w = F.ordered(FP16, got), F.ordered(FP16, want)
    at = np.flatnonzero((got != want) & ((got & 0x7FFF) < 0x7C00) & ((want & 0x7FFF) < 0x7C00))[::every]
    o = np.clip(2 * o_w[at] - o_g[at], -0x7BFF, 0x7BFF)
    out = got.copy()
    out[at] = np.where(o < 0, (-o) | 0x8000, o).astype(np.uint16)
    return out


def _on_variant(forced, function: str) -> str:
    """``function()`` of this module: here (``forced`` None), or in a process forced onto that
    instruction-set variant (test_sweep_check_f32.digest_on), whose loops this machine's never runs."""
    if forced is None:
        return globals()[function]()
    from test_sweep_check_f32 import digest_on

    return digest_on(forced, "test_sweep_shortcut", function)[1]


@pytest.mark.parametrize("forced", [None, "avx2", "baseline"])
def test_a_dense_middle_of_one_ulp_model_results_counts_as_the_python_definitions(forced):
    """A row's middle where the first model's results are each one ULP from the correctly rounded
    one (the common case of a sweep, counted without distances by the pass) and x1 crosses the
    subnormals (row "model+ftz" only there): x2 = 0.75 and dy = 1 + 2^-10 or 1 + 3 * 2^-10 make
    x2 * dy a tie that the kernel's divmul-fp16 rounds to even, and the exact result away from it
    for subnormal x1 of one sign (positive, then negative), so the first and the last subnormal x1
    each deviate in one row, with the flush-to-zero oracle's result. The table runs from
    -(2^-14 + k ULPs) to 2^-14 + k2 ULPs (or back), so that the first subnormal x1 is the last lane
    of a run of 32 (k or k2 = 62) and the last one the first lane of one (33), neither in the
    middle's first or last run (which hold the boundary's candidates) nor at a chunk's start: the
    pass looks for subnormal x1 only within the middle's stretch of them. In other rows, every fifth deviation is moved to the other side of
    the correctly rounded result (one ULP away, no model's result), and then the
    tally is the Python definitions', on every variant."""
    assert _on_variant(forced, "_dense_unit_checks") == "ok"


def _dense_unit_checks() -> str:
    for order in ("rising", "falling"):
        for k, k2 in ((62, 33), (33, 62)):
            _dense_unit_case(order, k, k2)
    return "ok"


def _dense_unit_case(order, k, k2):
    table = np.concatenate([np.arange(0x8400 + k, 0x8000, -1), np.arange(0x0000, 0x0401 + k2)]).astype(np.uint16)
    table = table if order == "rising" else table[::-1].copy()
    rows = (table.size, kernel.f16_table_runs(table))
    assert rows[1].shape[0] == 1  # one strictly monotone stretch: the whole row is its middle
    dyv = np.array([0x3C01, 0x3C03, 0x3C01, 0x3C03], np.uint16)
    x1, dy = np.tile(table, dyv.size), np.repeat(dyv, table.size)
    x2 = np.full(x1.size, 0x3A00, np.uint16)
    got = _kernel_bits("divmul-fp16", dy, x1, x2, 0x3C00)
    want = _oracle(dy, x1, x2, 0x3C00)
    half = 2 * table.size
    got[half:] = _other_neighbour(got[half:], want[half:], 5)
    ends = [int(np.flatnonzero(table == p)[0]) + row * table.size for row, p in ((0, 0x03FF), (1, 0x83FF))]
    assert (got[ends] != want[ends]).all()  # the largest subnormal x1 of each sign deviates in one row
    for strict in (False, True):
        _, _, alone = kernel.f16_judge_pass(dy, x1, x2, 0x3C00, got, *shortcut_of(_profile(strict, 2)), rows=rows)
        assert alone["hist"][3].sum() > 1000 and alone["hist"][2].sum() > 0
        _check(dy, x1, x2, 0x3C00, got, _profile(strict, 2), rows=rows)


@pytest.mark.parametrize("forced", [None, "avx2", "baseline"])
def test_a_dense_middle_where_the_model_gives_zero_one_ulp_from_the_result_counts_as_the_python_definitions(forced):
    """The kernel's divmul-fp16 gives +-0 where the correctly rounded result is the least subnormal
    (x1 - x2 rounded to half before the product): a zero on one side, whose flush-to-zero row the
    Python definition decides (the flushed result is 0), in dense middles of normal inputs (every
    third result elsewhere off by a rounding), each alone in its run of 32; on every variant."""
    assert _on_variant(forced, "_dense_zero_checks") == "ok"


def _dense_zero_checks() -> str:
    table = np.arange(0x0000, 0x7C00, dtype=np.uint16)
    rows = (table.size, kernel.f16_table_runs(table))
    dyv = np.array([0x0400, 0x0400, 0x0555, 0x0555, 0x0800], np.uint16)
    x2v = np.array([0x1400, 0x0C01, 0x1000, 0x1001, 0x1000], np.uint16)
    x1, x2, dy = np.tile(table, dyv.size), np.repeat(x2v, table.size), np.repeat(dyv, table.size)
    got = _kernel_bits("divmul-fp16", dy, x1, x2, 0x3C00)
    want = _oracle(dy, x1, x2, 0x3C00)
    zero = ((got & 0x7FFF) == 0) & ((want & 0x7FFF) == 1) & ~J.is_subnormal(FP16, x1)
    assert zero.sum() >= dyv.size
    # every third result elsewhere a rounding off, so that each chunk is dense, but for the runs
    # around those zeros (each then the only element of its run that differs)
    near = np.convolve(zero, np.ones(129, bool), mode="same")
    off = (np.arange(x1.size) % 3 == 0) & ~near & ((want & 0x7FFF) < 0x7BFF)
    got = np.where(off, want ^ 1, got).astype(np.uint16)
    for budget in (1, 2):
        _check(dy, x1, x2, 0x3C00, got, _profile(False, budget), rows=rows)
    return "ok"


@pytest.mark.parametrize("forced", [None, "avx2", "baseline"])
def test_a_boundary_element_that_is_the_first_models_result_is_still_handed_back(forced):
    """No accepted model deviates on the boundary (the diff is +-beta exactly there, and each of
    them gives dy's bits), so the kernel's results cannot test it; recipmul-fp16 does for beta =
    0x3E01 (RN16(1 / beta) * beta is not 1). With it as the pass's only model and its bits as the
    results, the boundary elements of rows are, in the dense chunks of the middle, that model's
    results a rounding away: the pass must still hand them back (R02 decides them), as
    within_budget_alone does, and count nothing else differently; on every variant."""
    assert _on_variant(forced, "_boundary_model_checks") == "ok"


def _boundary_model_checks() -> str:
    beta, b = 0x3E01, float(np.uint16(0x3E01).view(np.float16))
    table = np.concatenate([np.arange(0x0000, 0x7C00), np.arange(0x8000, 0xFC00)]).astype(np.uint16)
    x2s = np.array([0.0, b, -b, 2 * b], np.float16).view(np.uint16)
    x1 = np.tile(table, x2s.size)
    x2 = np.repeat(x2s, table.size)
    dy = np.repeat(np.array([1.0, -3.0, 0.75, 1000.0], np.float16).view(np.uint16), table.size)
    got = np.ascontiguousarray(kernel.smoothl1lossgrad(*(a.view(np.float16) for a in (dy, x1, x2)),
                                                       np.uint16(beta).view(np.float16), model="recipmul-fp16",
                                                       threads=1)).view(np.uint16)
    want = _oracle(dy, x1, x2, beta)
    on = np.flatnonzero(exact_at_boundary(FP16, x1, x2, beta))
    off = on[(got[on] != want[on]) & (F.ulp_distance(FP16, got[on], want[on]) <= 3)]
    assert off.size >= x2s.size  # the model's deviations on the boundary, within the budget
    bad = T._wrong(got, want)  # noqa: SLF001
    alone = J.within_budget_alone(FP16, _profile(False, 3), got[bad], want[bad],
                                  F.ulp_distance(FP16, got[bad], want[bad]), dy[bad], x1[bad], x2[bad], beta)
    idx, w, counted = kernel.f16_judge_pass(dy, x1, x2, beta, got, 3, False, ("recipmul-fp16",),
                                            rows=(table.size, kernel.f16_table_runs(table)))
    np.testing.assert_array_equal(idx, bad[~alone])
    assert np.isin(off, idx).all() and counted["count"] == int(alone.sum())
    return "ok"


ROW_BETAS = (0x3C00, 0x3800, 0x2E66, 0x0001, 0x03FF, 0x7BFF)


def _row_cr_checks() -> str:
    """Every fp16 x1 against rows of edge x2 and dy values (zeros, subnormals, the largest finite,
    dy infinite), for betas normal and subnormal: with results that are all wrong and no shortcut
    (budget -1), the pass hands back every element that differs with the correctly rounded bits,
    which in a row's middle come from its own loop (loops.c's sl1k_f16_row): the oracle's."""
    table = np.arange(1 << 16, dtype=np.uint16)
    rows = (table.size, kernel.f16_table_runs(table))
    x2v = np.array([0x3A00, 0xB800, 0x0001, 0x8400, 0x3C00, 0x5640, 0x0000, 0x83FF, 0x7BFF, 0x2E66], np.uint16)
    dyv = np.array([0x3C01, 0x7BFF, 0x0001, 0x8000, 0x3555, 0xFC00, 0x0400, 0xC100, 0x03FF, 0x7C00], np.uint16)
    x1, x2, dy = np.tile(table, x2v.size), np.repeat(x2v, table.size), np.repeat(dyv, table.size)
    got = np.zeros(x1.size, np.uint16)
    for beta in ROW_BETAS:
        want = _oracle(dy, x1, x2, beta)
        idx, w, _ = kernel.f16_judge_pass(dy, x1, x2, beta, got, -1, False, (), rows=rows)
        np.testing.assert_array_equal(idx, T._wrong(got, want))  # noqa: SLF001
        np.testing.assert_array_equal(w, want[idx])
    return "ok"


def _row_model_checks() -> str:
    """Each model's bits and the correctly rounded bits as the pass computes them along a row's
    middle (kernel.f16_row_bits: one dy and x2, every x1 with |x1 - x2| <= beta exactly) against
    the whole loops' (the kernel's smoothl1lossgrad for the model; the oracle), for edge rows
    (subnormal, zero and large dy and x2, dy infinite) and betas normal, subnormal, large."""
    from sl1conf.reference.models import MODELS

    every = np.arange(1 << 16, dtype=np.uint16)
    every = every[(every & 0x7C00) != 0x7C00]  # the finite x1
    h = lambda a: np.ascontiguousarray(a, np.uint16).view(np.float16)  # noqa: E731
    for beta in ROW_BETAS + (0x5BFF, 0x0400, 0x7800, 0x4400):  # (powers of two: divmul as recipmul)
        b = float(h(np.array([beta]))[0])
        for x2, dy in ((0x3A00, 0x3C01), (0xB800, 0x7BFF), (0x0001, 0x0001), (0x8400, 0x8000), (0x0000, 0x3555),
                       (0x2E66, 0xFC00), (0x83FF, 0x03FF), (0x5640, 0xC100)):
            x1 = every[np.abs(h(every).astype(np.float64) - float(h(np.array([x2]))[0])) <= b]
            if not x1.size:
                continue
            dys, x2s = np.full(x1.size, dy, np.uint16), np.full(x1.size, x2, np.uint16)
            np.testing.assert_array_equal(kernel.f16_row_bits(None, x1, dy, x2, beta), _oracle(dys, x1, x2s, beta)
                                          if not (dy & 0x7C00) == 0x7C00 else
                                          kernel.f16_correctly_rounded(dys, x1, x2s, beta))
            for model in MODELS:
                whole = kernel.smoothl1lossgrad(h(dys), h(x1), h(x2s), h(np.array([beta]))[0], model=model, threads=1)
                np.testing.assert_array_equal(kernel.f16_row_bits(model, x1, dy, x2, beta),
                                              np.ascontiguousarray(whole).view(np.uint16), err_msg=f"{model} {beta:#x}")
    return "ok"


@pytest.mark.parametrize("forced", [None, "avx2", "baseline"])
def test_a_rows_middle_gets_each_models_bits_on_every_variant(forced):
    """The models' bits along a row's middle (the dense chunks' first model, the rounding-bias
    pass's held model), which the pass computes with loops of its own, are the whole loops' bits
    for every model, on every variant."""
    assert _on_variant(forced, "_row_model_checks") == "ok"


@pytest.mark.parametrize("forced", [None, "avx2", "baseline"])
def test_a_rows_middle_gets_the_correctly_rounded_result_on_every_variant(forced):
    """The correctly rounded result along a row's middle (one dy and x2, x1 the table), which the
    pass computes with its own loop, is the oracle's for every x1 and edge rows, on every variant."""
    assert _on_variant(forced, "_row_cr_checks") == "ok"


def _random_checks() -> str:
    """Seeded cases of both hypothesis tests above (every beta, both zero-sign rules, budgets up to
    70000, blocks with and without rows), checked against the Python definitions: run in a
    process forced onto each instruction-set variant, whose loops this machine's never runs."""
    for seed in range(24):
        beta, strict, budget = BETAS[seed % len(BETAS)], bool(seed % 2), (0, 1, 2, 100, 70000)[seed % 5]
        _rows_case(seed, beta, strict, budget)
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 5000))
        dy, x1, x2 = (rng.integers(0, 1 << 16, n).astype(np.uint16) for _ in range(3))
        x1[: n // 2] = rng.integers(0x3400, 0x4200, n // 2)
        _check(dy, x1, x2, beta, _got_near(_oracle(dy, x1, x2, beta), rng, dy), _profile(strict, budget))
    return "ok"


@pytest.mark.parametrize("forced", ["baseline", "avx2"])
def test_every_variant_counts_as_the_python_definitions(forced):
    """The portable and AVX2 passes (their element-by-element shortcut, their scans) against the
    Python definitions, not only against this machine's pass."""
    assert _on_variant(forced, "_random_checks") == "ok"


GUARDED = r"""
import sys
import numpy as np
from sl1conf.adapters.guard import GuardedArray
from sl1conf.reference import kernel
sys.path.insert(0, sys.argv[1])
import test_sweep_shortcut as t

def guarded(a):
    g = GuardedArray(a.nbytes, layout="end")  # the last element touches an inaccessible page
    out = g.array(np.uint16)
    out[:] = a
    return g, out

# (the last two: a row whose middle is empty at its end, rising and falling: nothing past it is read)
for n, table, x2v, beta in ((100, None, 0x3400, 0x3C00), (2048, (0x3000 + np.arange(2048)).astype(np.uint16), 0x3400, 0x2C00),
                            (3 * 777, (0x3A00 + np.arange(777)).astype(np.uint16), 0x3B00, 0x3C00), (64, None, 0x3C00, 0x3C00),
                            (2048, (0x3000 + np.arange(2048)).astype(np.uint16), 0x4000, 0x3C00),
                            (2048, (0xB000 + np.arange(2048)).astype(np.uint16), 0xC000, 0x3C00)):
    rng = np.random.default_rng(n)
    x1 = np.tile(table, n // table.size) if table is not None else rng.integers(0x3000, 0x4000, n).astype(np.uint16)
    dy, x2 = np.full(n, 0x3555, np.uint16), np.full(n, x2v, np.uint16)
    want = t._oracle(dy, x1, x2, beta)
    got = want.copy()
    got[-3:] ^= 1  # the last elements a rounding away: visited at the end of the arrays
    rows = (table.size, kernel.f16_table_runs(table)) if table is not None else None
    args = [guarded(a) for a in (dy, x1, x2, got)]
    for r in (None, rows):
        plain = kernel.f16_judge_pass(dy, x1, x2, beta, got, 2, True, ("divmul-fp16",), rows=r)
        fenced = kernel.f16_judge_pass(*(a for _, a in args[:3]), beta, args[3][1], 2, True, ("divmul-fp16",), rows=r)
        assert plain[2]["count"] == fenced[2]["count"] == 3 and (plain[0] == fenced[0]).all(), (n, r)
print("ok")
"""


@pytest.mark.parametrize("forced", [None, "avx2", "baseline"])
def test_the_pass_reads_nothing_past_the_end_of_its_arrays(forced):
    """Arrays whose last element touches an inaccessible page (adapters.guard), the last elements
    wrong, with and without rows, on every variant: the pass visits them without reading past the
    end (a crash here is a segmentation fault of the subprocess), and counts what it counts on
    ordinary arrays."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, **({"SL1CONF_KERNEL_ISA": forced} if forced else {}))
    run = subprocess.run([sys.executable, "-c", GUARDED, os.path.dirname(__file__)], capture_output=True, text=True,
                         env=env)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-2000:])


def test_rows_that_do_not_cover_a_row_in_order_are_refused():
    """No runs, a gap, an overlap, an empty run, an unknown direction, rows that do not divide the
    elements: one ValueError each, nothing checked (the C pass would leave elements unchecked)."""
    n = 256
    a = np.zeros(n, np.uint16)
    for rows in ((n, np.zeros((0, 3))), (n, [[0, 10, 0], [200, 256, 0]]), (n, [[0, 200, 0], [100, 256, 0]]),
                 (n, [[0, 0, 0], [0, 256, 0]]), (n, [[0, 256, 5]]), (100, [[0, 100, 0]]), (0, [[0, 0, 0]])):
        with pytest.raises(ValueError):
            kernel.f16_judge_pass(a, a, a, 0x3C00, a, 2, False, ("divmul-fp16",), rows=rows)


def test_table_runs_cut_the_table_into_strictly_monotone_finite_stretches():
    """f16_table_runs: every element in exactly one stretch, in order; a rising (falling) stretch's
    values rise (fall) strictly and are finite (checked on the values, in binary64)."""
    rng = np.random.default_rng(7)
    for table in (np.arange(1 << 16, dtype=np.uint16), _table(rng, 5000), np.array([0x3C00], np.uint16),
                  np.zeros(0, np.uint16)):
        runs = kernel.f16_table_runs(table)
        if not table.size:
            assert runs.size == 0
            continue
        assert runs[:, 0].tolist() == [0] + runs[:-1, 1].tolist() and runs[-1, 1] == table.size
        v = table.view(np.float16).astype(np.float64)
        for s, e, d in runs.tolist():
            assert e > s
            if d == 2:
                assert e - s >= 64 and np.isnan(v[s:e]).all()
            elif d:
                assert e - s >= 64 and np.isfinite(v[s:e]).all() and (np.sign(np.diff(v[s:e])) == d).all()
    runs = kernel.f16_table_runs(np.arange(1 << 16, dtype=np.uint16))
    assert runs.tolist() == [[0, 0x7C00, 1], [0x7C00, 0x7C01, 0], [0x7C01, 0x8000, 2], [0x8000, 0xFC00, -1],
                             [0xFC00, 0xFC01, 0], [0xFC01, 0x10000, 2]]


def test_the_shortcut_on_a_kernels_block_and_every_edge_pair():
    """Every pair of EDGES (and the middle line) at several dy, with the built-in kernel's results
    and results near the oracle's: the shortcut accepts some, and agrees throughout."""
    e = np.array(EDGES + tuple(range(0x3B00, 0x3D00, 7)), np.uint16)
    x1, x2 = (a.ravel() for a in np.meshgrid(e, e))
    rng = np.random.default_rng(38)
    accepted = 0
    for dy0 in (0x3C00, 0xBC00, 0x0001, 0x7BFF, 0x3555):
        dy = np.full(x1.size, dy0, np.uint16)
        for beta in (0x3C00, 0x2E66, 0x0001):
            h = lambda a: a.view(np.float16)  # noqa: E731
            builtin = np.ascontiguousarray(kernel.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(beta).view(np.float16),
                                                                   threads=1)).view(np.uint16)
            for got in (builtin, _got_near(_oracle(dy, x1, x2, beta), rng, dy)):
                for strict in (False, True):
                    accepted += _check(dy, x1, x2, beta, got, _profile(strict, 2))
    assert accepted > 0


def test_a_tally_through_the_c_shortcut_is_the_numpy_tally():
    """PlaneTally.block given the C pass's result (the sweep's way) and given nothing (every wrong
    element through numpy and the Python shortcut) write the same tally."""
    rng = np.random.default_rng(5)
    n = 1 << 14
    for beta, strict in ((0x3C00, False), (0x3C00, True), (0x2E66, True), (0x0001, False)):
        dy = rng.integers(0, 1 << 16, n).astype(np.uint16)
        x1 = rng.integers(0x3400, 0x4200, n).astype(np.uint16) | (rng.integers(0, 2, n) << 15).astype(np.uint16)
        x2 = rng.integers(0, 1 << 16, n).astype(np.uint16)
        x2[: n // 2] = rng.integers(0x3400, 0x4200, n // 2)
        want = _oracle(dy, x1, x2, beta)
        got = want.copy()
        at = rng.random(n) < 0.05
        got[at] = _got_near(want, rng, dy)[at]
        profile = _profile(strict, 2)
        a, b = T.PlaneTally(), T.PlaneTally()
        a.block(0, dy, x1, x2, beta, got, want, profile)
        idx, w, alone = kernel.f16_judge_pass(dy, x1, x2, beta, got, *shortcut_of(profile))
        b.block(0, dy, x1, x2, beta, got, w, profile, bad=idx, alone=alone)
        assert a.to_json() == b.to_json()


def _pass_digest() -> str:
    """The C pass's whole answer (indices, bits, counts) on blocks of every x1 against edge x2,
    the built-in kernel's results and results near the oracle's, both zero-sign rules."""
    d = hashlib.sha256()
    rng = np.random.default_rng(4)
    x1 = np.tile(np.arange(1 << 16, dtype=np.uint16), 2)
    runs = kernel.f16_table_runs(x1[:1 << 16])
    for x2v in (0x3C00, 0x0001, 0x3555, 0x7E01):  # (a NaN x2: every result NaN)
        x2 = np.full(x1.size, x2v, np.uint16)
        dy = np.full(x1.size, 0x3555, np.uint16)
        want = _oracle(dy, x1, x2, 0x3C00)
        for got in (np.ascontiguousarray(kernel.smoothl1lossgrad(*(a.view(np.float16) for a in (dy, x1, x2)),
                                                                 np.float16(1), threads=1)).view(np.uint16),
                    _got_near(want, rng, dy)):
            for strict, rows in ((False, None), (True, None), (True, (1 << 16, runs))):
                idx, w, alone = kernel.f16_judge_pass(dy, x1, x2, 0x3C00, got, *shortcut_of(_profile(strict, 2)),
                                                      rows=rows)
                d.update(idx.tobytes() + w.tobytes())
                for k in sorted(alone):
                    d.update(np.asarray(alone[k]).tobytes())
    return d.hexdigest()


@pytest.mark.parametrize("forced", ["baseline", "avx2"])
def test_the_c_pass_is_the_same_on_every_instruction_set_variant(forced):
    """Its scan (a 64-bit mask of the elements that differ: AVX-512 BW, AVX2 or portable) and its
    correctly rounded result give the same answer on every variant."""
    from test_sweep_check_f32 import digest_on

    isa, theirs = digest_on(forced, "test_sweep_shortcut", "_pass_digest")
    assert theirs == _pass_digest(), f"{isa} differs from {kernel.ISA}"

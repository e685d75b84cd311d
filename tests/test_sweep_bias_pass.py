"""The rounding-bias counts' pass in C (issue 38, item 2: a sampled block's counts at the speed
of the check): ``kernel.f16_bias_pass`` hands back exactly the differing elements that can be
ordinary (accuracy._may_be_ordinary, the Python definition) but for those it counts as
"explained", and every one it counts is one the Python definitions settle so
(judge.within_budget_alone, the rounded diff's open alternative out of reach, a model the
profile's error model allows giving it bit for bit); ``lean_bias_counts`` through it, with and
without a sweep block's rows, is ``call_bias_counts`` (every element judged whole). Expected
results come from the oracle (fast_oracle) and the Python definitions, never from the C code."""

from __future__ import annotations

import numpy as np
import pytest

from sl1conf.conformance.requirements import accuracy as A
from sl1conf.conformance.rules import judge as J
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.search import sweep as S
from sl1conf.conformance.search import sweep_tally as T
from sl1conf.reference import kernel
from sl1conf.reference import formats as F
from sl1conf.reference.exact import exact_diff

from test_sweep_shortcut import _got_near, _oracle

FP16 = F.FP16
h = lambda a: np.ascontiguousarray(a, np.uint16).view(np.float16)  # noqa: E731


def _model(name, dy, x1, x2, beta):
    return np.ascontiguousarray(kernel.smoothl1lossgrad(h(dy), h(x1), h(x2), np.uint16(beta).view(np.float16),
                                                        model=name, threads=1)).view(np.uint16)


def _check_pass(dy, x1, x2, beta, got, profile, rows=None) -> int:
    """f16_bias_pass against the Python definitions; the number it counted."""
    held = A._held_models(FP16, profile)  # noqa: SLF001
    idx, want, explained = kernel.f16_bias_pass(dy, x1, x2, beta, got, profile.max_ulp["fp16"], held, rows=rows)
    oracle = _oracle(dy, x1, x2, beta)
    bad = T._wrong(got, oracle)  # noqa: SLF001 (the indices that differ, NaN as a class)
    with np.errstate(all="ignore"):
        may = bad[A._may_be_ordinary(FP16, got[bad], oracle[bad], dy[bad], x1[bad], x2[bad], beta)]  # noqa: SLF001
    assert np.isin(idx, may).all() and (np.diff(idx) > 0).all()  # handed back: ordinary-able, in index order
    np.testing.assert_array_equal(want, oracle[idx])
    counted = np.setdiff1d(may, idx)
    assert counted.size == explained
    if counted.size:  # each one the Python definitions settle as "explained"
        g, w, d, a, b = (v[counted] for v in (got, oracle, dy, x1, x2))
        with np.errstate(all="ignore"):
            s = exact_diff(FP16, a, b)
        alone = J.within_budget_alone(FP16, profile, g, w, F.ulp_distance(FP16, g, w), d, a, b, beta, diff=s)
        bv = float(h(np.array([beta]))[0])
        assert alone.all() and (np.abs(np.abs(s[0]) - bv) > bv * 2.0 ** -8).all()
        assert (((w & 0x7C00) != 0) & ~J.is_special(FP16, w)).all()
        assert J.model_match(FP16, g, d, a, b, beta, held).all()
    return explained


def _draw(rng, n, beta):
    """Inputs around the middle line and the boundary (x1 = x2 +- beta nudged), with subnormals,
    large dy (intermediates that overflow), zeros, infinities and NaNs among them."""
    bv = float(h(np.array([beta]))[0])
    x2 = (rng.integers(0x2000, 0x4C00, n) | (rng.integers(0, 2, n) << 15)).astype(np.uint16)
    side = np.where(rng.integers(0, 2, n) == 0, -1.0, 1.0)
    x1 = (h(x2).astype(np.float64) + side * bv).astype(np.float16).view(np.uint16).astype(np.int32)
    x1 = np.clip(x1 + rng.integers(-300, 300, n) * np.where(x1 & 0x8000, -1, 1), 0, 0xFBFF)
    x1 = np.where((x1 & 0x7C00) == 0x7C00, 0x3C00, x1).astype(np.uint16)
    mid = rng.random(n) < 0.85  # and the middle: x1 and x2 of different magnitudes below beta / 2 (inexact diffs)
    for a in (x1, x2):
        a[mid] = (rng.uniform(-0.5, 0.5, int(mid.sum())) * bv).astype(np.float16).view(np.uint16)
    dy = (rng.integers(0x3000, 0x5000, n) | (rng.integers(0, 2, n) << 15)).astype(np.uint16)
    for a in (dy, x1, x2):
        k = rng.random(n) < 0.08
        a[k] = rng.choice(np.array([0, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0x7800, 0x7C00, 0x7E00], np.uint16), int(k.sum()))
    return dy, x1, x2


BIAS_BETAS = (0x3C00, 0x2E66, 0x3555, 0x0400, 0x7800, 0x0001, 0x7C00, 0x8000, 0xBC00)


def _settle_checks(beta: int) -> int:
    """_check_pass on calls whose results are each accepted model's (so a held one gives most:
    dense chunks, the model switched between chunks), a model no profile evaluation holds, and
    results near the oracle's: on ieee and mt7004, and ieee with budgets 0 and 1 (divmul-fp16's
    deviations of 2 ULPs then handed back). What it counted."""
    import dataclasses

    counted = 0
    for seed, (platform, budget) in enumerate((("ieee", None), ("mt7004", None), ("ieee", 0), ("ieee", 1))):
        profile = load_profile(platform)
        if budget is not None:
            profile = dataclasses.replace(profile, max_ulp={**profile.max_ulp, "fp16": budget})
        rng = np.random.default_rng(seed + beta)
        n = 9000
        dy, x1, x2 = _draw(rng, n, beta)
        oracle = _oracle(dy, x1, x2, beta)
        parts = [_model(m, dy, x1, x2, beta) for m in ("divmul-fp16", "recipmul-fp32", "muldiv-fp16")]
        parts.append(_got_near(oracle, rng, dy))
        got = np.concatenate([p[i * n // 4:(i + 1) * n // 4] for i, p in enumerate(parts)])
        counted += _check_pass(dy, x1, x2, beta, got, profile)
    return counted


@pytest.mark.parametrize("beta", BIAS_BETAS)
def test_the_bias_pass_counts_only_what_the_python_definitions_settle(beta):
    """_settle_checks on this machine's variant; where beta is ordinary the pass counts the bulk."""
    counted = _settle_checks(beta)
    if beta in (0x3C00, 0x2E66, 0x3555):
        assert counted > 500  # (dense chunks)


def _all_settle_checks() -> str:
    return str(sum(_settle_checks(beta) > 0 for beta in BIAS_BETAS))


@pytest.mark.parametrize("forced", ["baseline", "avx2"])
def test_every_variant_counts_only_what_the_python_definitions_settle(forced):
    """The portable element-by-element visit (baseline and AVX2 run it) against the definitions."""
    from test_sweep_check_f32 import digest_on

    assert int(digest_on(forced, "test_sweep_bias_pass", "_all_settle_checks")[1]) >= 3


def test_the_bias_pass_on_a_blocks_rows_and_every_edge():
    """Blocks of rows (the table every fp16 value, x2 one value a row) at x2 on the middle line,
    near +-beta, subnormal, infinite and NaN, dy ordinary, subnormal and large: with and without
    the rows, the built-in kernel's results and results near the oracle's."""
    table = np.arange(1 << 16, dtype=np.uint16)
    runs = kernel.f16_table_runs(table)
    profile = load_profile("ieee")
    rng = np.random.default_rng(38)
    counted = 0
    for dyv, x2v in ((0x3555, 0x3400), (0x3C01, 0xBC00), (0x0003, 0x3800), (0x7BFF, 0x3000), (0x3555, 0x0007),
                     (0xC200, 0x3BFF), (0x3555, 0x7C00), (0x3555, 0x7E01)):
        x1 = np.tile(table, 2)
        x2 = np.repeat(np.array([x2v, x2v ^ 0x8000], np.uint16), table.size)
        dy = np.full(x1.size, dyv, np.uint16)
        for got in (_model("divmul-fp16", dy, x1, x2, 0x3C00), _got_near(_oracle(dy, x1, x2, 0x3C00), rng, dy)):
            # (which dense chunks it counts in differs with the rows: the split, not the definitions)
            _check_pass(dy, x1, x2, 0x3C00, got, profile)
            counted += _check_pass(dy, x1, x2, 0x3C00, got, profile, rows=(table.size, runs))
    assert counted > 10000


@pytest.mark.parametrize("impl,platform", [("builtin:kernel", "ieee"), ("builtin:kernel", "mt7004"),
                                           ("builtin:kernel:recipmul-fp16", "ieee"),
                                           ("builtin:kernel:muldiv-fp16", "ieee")])
def test_a_sampled_blocks_counts_with_its_rows_are_the_whole_calls(impl, platform):
    """The sweep's way (the block's rows given to lean_bias_counts, the bulk counted in C) against
    call_bias_counts (every element judged): blocks of one row each, on the middle line, next to
    +-beta, with subnormal x2, subnormal and large dy."""
    config = S.SweepConfig(impl, 0x3C00, "0x3555,0x0003,0x7bff", "all", block=1 << 16, platform=platform)
    w = S._Block(config)  # noqa: SLF001
    profile = load_profile(platform)
    explained = differ = 0
    try:
        for plane in range(3):
            for x2v in (0x3400, 0xB800, 0x3C00, 0x0005, 0x4000):
                k = plane * 65536 + int(np.flatnonzero(w.subset.x2 == x2v)[0])
                lo, hi, dy, x1, x2 = w.inputs(k)
                assert w.rows() is not None
                call = S.Case("fp16", dy, x1, x2, 0x3C00, id="b")
                got = w.adapter.run([call])[0].out[:hi - lo]
                lean = A.lean_bias_counts(F.FP16, profile, got, dy, x1, x2, 0x3C00, rows=w.rows())
                assert lean == A.call_bias_counts(F.FP16, profile, got, dy, x1, x2, 0x3C00), (impl, hex(x2v), plane)
                explained += lean.get("got", {}).get("explained", 0)
                differ += lean.get("got", {}).get("differ", 0)
    finally:
        w.adapter.close()
    # the kernel's divmul-fp16 is an evaluation ieee allows (explained, most in C); the fp16 reciprocal
    # and muldiv are not (judged whole, in the directions)
    assert (explained if (impl, platform) == ("builtin:kernel", "ieee") else explained + differ) > 0


def _variant_digest() -> str:
    """f16_bias_pass's whole answer on edge blocks, with and without rows (for each variant)."""
    import hashlib

    d = hashlib.sha256()
    table = np.arange(1 << 16, dtype=np.uint16)
    runs = kernel.f16_table_runs(table)
    held = A._held_models(FP16, load_profile("ieee"))  # noqa: SLF001
    rng = np.random.default_rng(4)
    for dyv, x2v in ((0x3555, 0x3400), (0x0003, 0x3800), (0x7BFF, 0x3000), (0x3555, 0x0007)):
        x1, x2, dy = table, np.full(table.size, x2v, np.uint16), np.full(table.size, dyv, np.uint16)
        for got in (_model("divmul-fp16", dy, x1, x2, 0x3C00), _got_near(_oracle(dy, x1, x2, 0x3C00), rng, dy)):
            for rows in (None, (table.size, runs)):
                idx, want, explained = kernel.f16_bias_pass(dy, x1, x2, 0x3C00, got, 2, held, rows=rows)
                d.update(idx.tobytes() + want.tobytes() + str(explained).encode())
    return d.hexdigest()


@pytest.mark.parametrize("forced", ["baseline", "avx2"])
def test_the_bias_pass_is_the_same_on_every_instruction_set_variant(forced):
    """The portable element-by-element visit (baseline and AVX2) and AVX-512's give one answer."""
    from test_sweep_check_f32 import digest_on

    isa, theirs = digest_on(forced, "test_sweep_bias_pass", "_variant_digest")
    assert theirs == _variant_digest(), f"{isa} differs from {kernel.ISA}"


GUARDED = r"""
import numpy as np
from sl1conf.adapters.guard import GuardedArray
from sl1conf.reference import kernel

def guarded(a):
    g = GuardedArray(a.nbytes, layout="end")  # the last element touches an inaccessible page
    out = g.array(np.uint16)
    out[:] = a
    return g, out

for n in (100, 2048, 2048 + 37):
    rng = np.random.default_rng(n)
    x1 = (rng.integers(0x2000, 0x3A00, n) | (rng.integers(0, 2, n) << 15)).astype(np.uint16)  # (inexact diffs)
    dy, x2 = np.full(n, 0x3555, np.uint16), np.full(n, 0x3401, np.uint16)
    h = lambda a: a.view(np.float16)
    got = np.ascontiguousarray(kernel.smoothl1lossgrad(h(dy), h(x1), h(x2), np.float16(1), model="divmul-fp16",
                                                       threads=1)).view(np.uint16).copy()
    got[-3:] ^= 1  # the last elements wrong too
    args = [guarded(a) for a in (dy, x1, x2, got)]
    plain = kernel.f16_bias_pass(dy, x1, x2, 0x3C00, got, 2, ["divmul-fp16"])
    fenced = kernel.f16_bias_pass(*(a for _, a in args[:3]), 0x3C00, args[3][1], 2, ["divmul-fp16"])
    assert (plain[0] == fenced[0]).all() and plain[2] == fenced[2] and plain[2] > 0, n
print("ok")
"""


@pytest.mark.parametrize("forced", [None, "avx2", "baseline"])
def test_the_bias_pass_reads_nothing_past_the_end_of_its_arrays(forced):
    """Arrays whose last element touches an inaccessible page: no read past the end (a crash is a
    segmentation fault of the subprocess), the same answer as on ordinary arrays."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, **({"SL1CONF_KERNEL_ISA": forced} if forced else {}))
    run = subprocess.run([sys.executable, "-c", GUARDED], capture_output=True, text=True, env=env)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-2000:])

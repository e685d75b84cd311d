"""Evaluation models: numpy emulation against an independent scalar emulation, and by hand.

The scalar emulation below does each step with Python floats (binary64, IEEE,
correctly rounded) and rounds to the compute format with ``round_to_format``
(tested exhaustively in test_formats.py). For fp16 and fp32 compute, computing
one operation in binary64 and rounding once to the narrower format is correct
rounding of that operation, because 53 >= 2p + 2 for p = 11 and p = 24
(Figueroa, "When is double rounding innocuous?", 1995). It shares nothing with
the numpy code path under test but the rounding function.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from sl1conf.conformance.vectors.sampling import random_batch
from sl1conf.reference import formats as F
from sl1conf.reference.models import evaluate, get_model, models_for
from sl1conf.reference.oracle import smoothl1lossgrad

_COMPUTE = {"fp16": F.FP16, "fp32": F.FP32, "fp64": F.FP64}


def _to_float(fmt: F.Format, bits: int) -> float:
    cls, sign = F.classify(fmt, bits)
    if cls.is_nan:
        return math.nan
    if cls is F.FloatClass.INF:
        return -math.inf if sign else math.inf
    return math.copysign(float(F.decode(fmt, bits)), -1.0 if sign else 1.0)


def _round(fmt: F.Format, x: float) -> float:
    """Round a binary64 value to ``fmt`` (returned as a float holding the rounded value)."""
    if math.isnan(x) or math.isinf(x) or fmt is F.FP64:
        return x
    bits = F.round_to_format(fmt, Fraction(x), negative_zero=math.copysign(1.0, x) < 0)
    return _to_float(fmt, bits)


def _div(a: float, b: float) -> float:
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def scalar_model(order: str, compute: str, fmt: F.Format, dy: int, x1: int, x2: int, beta: int) -> int:
    """One element of a model, step by step, as C code with that compute type would do it."""
    c = _COMPUTE[compute]
    dyv, x1v, x2v, bv = (_to_float(fmt, b) for b in (dy, x1, x2, beta))
    diff = _round(c, x1v - x2v)
    if diff > bv:
        return dy
    if diff < -bv:
        return dy ^ fmt.sign_mask
    if order == "divmul":
        r = _round(c, _round(c, _div(diff, bv)) * dyv)
    elif order == "recipmul":
        r = _round(c, _round(c, diff * _round(c, _div(1.0, bv))) * dyv)
    else:
        r = _round(c, _div(_round(c, diff * dyv), bv))
    if math.isnan(r):
        return fmt.qnan_bits
    if math.isinf(r):
        return (fmt.sign_mask if r < 0 else 0) | fmt.inf_bits
    return F.round_to_format(fmt, Fraction(r), negative_zero=math.copysign(1.0, r) < 0)


@pytest.mark.parametrize("fmt, model", [
    pytest.param(fmt, m.name, id=f"{fmt.name}-{m.name}")
    for fmt in (F.FP16, F.FP32) for m in models_for(fmt)])
def test_numpy_model_matches_scalar_emulation(fmt, model):
    m = get_model(model)
    rng = np.random.default_rng(20261130)
    checked = 0
    for _ in range(12):
        batch = random_batch(fmt, 300, rng)
        got = F.to_bits(fmt, m(*batch.floats(fmt)))
        want = np.array([scalar_model(m.order, m.compute, fmt, int(a), int(b), int(c), batch.beta)
                         for a, b, c in zip(batch.dy, batch.x1, batch.x2)], dtype=fmt.uint)
        bad = np.flatnonzero(~F.same_result(fmt, got, want))
        assert bad.size == 0, (
            f"{model} {fmt.name}: dy={int(batch.dy[bad[0]]):#x} x1={int(batch.x1[bad[0]]):#x} "
            f"x2={int(batch.x2[bad[0]]):#x} beta={batch.beta:#x}: numpy {int(got[bad[0]]):#x}, "
            f"scalar {int(want[bad[0]]):#x}")
        checked += got.size
    assert checked == 3600


def test_muldiv_in_fp64_is_correctly_rounded_for_fp16():
    """For fp16 data, diff and diff*dy are exact in binary64 and one division then one
    conversion to fp16 cannot double-round wrongly, so muldiv-fp64 equals the oracle."""
    rng = np.random.default_rng(7)
    for _ in range(8):
        batch = random_batch(F.FP16, 400, rng)
        args = batch.floats(F.FP16)
        got = F.to_bits(F.FP16, evaluate("muldiv-fp64", *args))
        want = F.to_bits(F.FP16, smoothl1lossgrad(*args))
        assert F.same_result(F.FP16, got, want).all()


def _one(fmt, model, dy, x1, x2, beta) -> int:
    arr = lambda v: F.from_bits(fmt, np.array([v], dtype=fmt.uint))  # noqa: E731
    return int(F.to_bits(fmt, evaluate(model, arr(dy), arr(x1), arr(x2), arr(beta)[0]))[0])


# Hand derivations (fp16: 1 sign, 5 exponent bits biased by 15, 10 fraction bits).
@pytest.mark.parametrize("model, expected", [
    # x1 = 256 (0x5c00), x2 = 0, dy = 512 (0x6000), beta = 1024 (0x6400): middle branch.
    # divmul: 256/1024 = 0.25, * 512 = 128 = 2^7 -> exponent 22 -> 0x5800.
    ("divmul-fp16", 0x5800),
    # muldiv: 256 * 512 = 131072 > 65504 overflows fp16 to +inf, inf / 1024 = +inf.
    ("muldiv-fp16", 0x7C00),
    # in fp32 the product 131072 is exact: 131072 / 1024 = 128 -> 0x5800.
    ("muldiv-fp32", 0x5800),
    # recip: 1/1024 = 2^-10 exact; 256 * 2^-10 = 0.25; * 512 = 128.
    ("recipmul-fp16", 0x5800),
])
def test_intermediate_overflow_by_hand(model, expected):
    assert _one(F.FP16, model, 0x6000, 0x5C00, 0x0000, 0x6400) == expected


@pytest.mark.parametrize("model, expected", [
    # beta = 2^-17 = 128 * 2^-24 -> subnormal 0x0080; x1 = 2^-18 -> 0x0040, x2 = 0, dy = 1.
    # recipmul-fp16: 1 / 2^-17 = 131072 overflows to inf; 2^-18 * inf = inf; inf * 1 = inf.
    ("recipmul-fp16", 0x7C00),
    # recipmul-fp32: 131072 is exact in fp32; 2^-18 * 2^17 = 0.5 -> 0x3800.
    ("recipmul-fp32", 0x3800),
    # divmul-fp16: 2^-18 / 2^-17 = 0.5 exactly -> 0x3800.
    ("divmul-fp16", 0x3800),
])
def test_reciprocal_overflow_by_hand(model, expected):
    assert _one(F.FP16, model, 0x3C00, 0x0040, 0x0000, 0x0080) == expected


def test_branch_uses_the_rounded_diff_by_hand():
    """x1 = 2 (0x4000), x2 = -(1 - 2^-11) (0xbbff): exact diff = 3 - 2^-11, between
    2.998046875 and 3 in fp16 (spacing 2^-9 there); it is 3 - 2^-11, a quarter of
    the spacing below 3, so the fp16-compute models round diff to 3 = beta (0x4200),
    test 3 > 3, false, and take the middle line: 3 / 3 * dy = dy exactly. The fp32
    and fp64 models keep diff = 3 - 2^-11 exactly, take the middle line too, and get
    dy * (1 - 2^-11 / 3), less than a quarter of an fp16 ulp from dy
    (0x3555 = 0.333251953125), so rounding to fp16 gives dy back as well."""
    for m in models_for(F.FP16):
        assert _one(F.FP16, m.name, 0x3555, 0x4000, 0xBBFF, 0x4200) == 0x3555, m.name


def test_signed_zero_by_hand():
    """x1 = -0, x2 = +0: diff = -0 - +0 = -0; middle line: -0 / 1 = -0, * 1 = -0 (0x8000)."""
    for fmt in (F.FP16, F.FP32):
        one = 0x3C00 if fmt is F.FP16 else 0x3F800000
        for m in models_for(fmt):
            assert _one(fmt, m.name, one, fmt.sign_mask, 0, one) == fmt.sign_mask, m.name


def test_model_registry():
    assert [m.name for m in models_for(F.FP32)] == [
        "divmul-fp32", "divmul-fp64", "recipmul-fp32", "recipmul-fp64", "muldiv-fp32", "muldiv-fp64"]
    assert len(models_for(F.FP16)) == 9
    with pytest.raises(ValueError, match="unknown evaluation model"):
        get_model("divmul-fp8")
    with pytest.raises(ValueError, match="narrower"):
        evaluate("divmul-fp16", *(np.zeros(2, np.float32),) * 3, np.float32(1))

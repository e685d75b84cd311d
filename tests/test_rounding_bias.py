"""R01's rounding-bias test: what it allows, what it catches, and its false alarms.

The test counts, over a run's ordinary elements, the results that differ from the correctly
rounded one and which way they lie; it fails a direction when the implementation's share
of the deviations no evaluation the profile's error model allows gives (every operation
correctly rounded: those are that evaluation's rounding) exceeds one half by more than
BIAS_SIGMAS binomial standard deviations. The expected outcomes below come from that
statement and from how the inputs were made, not from running the test first.
"""

from __future__ import annotations

import numpy as np
import pytest

from sl1conf.adapters import load
from sl1conf.conformance.certify.engine import judge_run
from sl1conf.conformance.requirements.accuracy import BIAS_MIN, BIAS_SIGMAS, bias_counts, rounding_bias
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.vectors.families import FAMILIES, generate
from sl1conf.reference import formats as F
from sl1conf.reference.models import accepted_models, models_for


def counts(n, toward):
    """Counts as bias_counts gives them: the implementation's n deviations that no allowed
    evaluation explains, ``toward`` of them toward zero (and down), the rest away (and up)."""
    return {"got": {"differ": n, "toward zero": toward, "away from zero": n - toward, "down": toward, "up": n - toward,
                    "explained": 0}}


def fails(result, direction):
    return next(d for d in result["directions"] if d["direction"] == direction)["fails"]


def test_too_few_deviations_are_not_judged():
    assert rounding_bias(counts(BIAS_MIN - 1, BIAS_MIN - 1)) is None
    assert rounding_bias({}) is None


def test_the_limit_is_one_half_plus_the_stated_margin():
    # n = 10,000 gives a standard deviation of 50, so the limit is 5,000 + 6 * 50 = 5,300
    n = 10_000
    limit = n / 2 + BIAS_SIGMAS * (n * 0.25) ** 0.5
    assert limit == 5300
    assert not fails(rounding_bias(counts(n, int(limit))), "toward zero")
    assert fails(rounding_bias(counts(n, int(limit) + 1)), "toward zero")
    assert fails(rounding_bias(counts(n, n - int(limit) - 1)), "away from zero")


def test_a_deviation_an_allowed_evaluation_gives_is_its_rounding_not_a_lean():
    """Elements built by hand, fp32 on ieee: beta = 0.85 (0x3f59999a), whose fp32 reciprocal
    rounds down far enough that beta * fl(1/beta) rounds below 1 (25 of the betas 0.01 to 1.99
    in steps of 0.01 do), dy = 1 + k * 4099 ULPs, x1 - x2 = 3 (> beta: the result is dy exactly). Ascend's
    clamp order gives fl(fl(beta * fl(1/beta)) * dy): beta * fl(1/beta) rounds to 1 - 2^-24,
    and that times a dy whose significand is above 1 is dy one ULP toward zero (dy * 2^-24 lies
    between half an ULP and one ULP of dy). Every one of these deviations is the clamp order's
    (allowed on ieee), so none is counted; the same bits on an evaluation the profile does not
    list would all count, and lean toward zero."""
    import dataclasses

    from sl1conf.conformance.rules.judge import expected_for, judge
    from sl1conf.reference import reachable

    fmt = F.FP32
    n = 4 * BIAS_MIN
    dy = (np.uint32(0x3F800000) + np.arange(1, n + 1, dtype=np.uint32) * np.uint32(4099)).astype(np.uint32)
    x1, x2, beta = np.full(n, 0x40400000, np.uint32), np.zeros(n, np.uint32), 0x3F59999A
    b = np.uint32(beta).view(np.float32)
    r = np.float32(1) / b
    assert r < np.float64(1) / np.float64(b)  # 1/beta rounds down ...
    p = np.float32(b * r)
    assert p == np.float32(1 - 2.0 ** -24)  # ... so beta * fl(1/beta) is the float below 1
    got = (dy.view(np.float32) * p).view(np.uint32)  # each product rounded once to fp32
    assert (got == dy - 1).all()  # one ULP toward zero, every one
    want = reachable.point(fmt, "clamp-recipmul", "fp32", dy.view(np.float32), x1.view(np.float32),
                           x2.view(np.float32), b).view(np.uint32)
    assert (got == want).all()  # the clamp order's own bits
    ieee = load_profile("ieee")
    j = judge(fmt, ieee, got, expected_for(fmt, dy, x1, x2, beta), dy, x1, x2, beta)
    c = bias_counts([j], ieee)["got"]
    assert (c["explained"], c["differ"]) == (n, 0) and rounding_bias({"got": c}) is None
    branched_only = dataclasses.replace(ieee, error_model=dataclasses.replace(
        ieee.error_model, orders={o: p for o, p in ieee.error_model.orders.items() if not o.startswith("clamp")}))
    c = bias_counts([j], branched_only)["got"]
    assert (c["explained"], c["differ"], c["toward zero"]) == (0, n, n)
    assert fails(rounding_bias({"got": c}), "toward zero")


def test_a_fair_coin_stays_under_the_limit():
    """The false-alarm rate of the statistic itself: 20,000 unbiased runs of 2,000 deviations
    each (a one-sided 6-sigma limit is passed with probability about 1e-9)."""
    rng = np.random.default_rng(13)
    n = 2000
    limit = n / 2 + BIAS_SIGMAS * (n * 0.25) ** 0.5
    assert (rng.binomial(n, 0.5, 20_000) <= limit).all()


def _without_large() -> list:
    return [f.name for f in FAMILIES if not f.large]


@pytest.mark.parametrize("seed", [2026, 7])
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_no_round_to_nearest_evaluation_the_profile_allows_or_that_rounds_once_raises_it(dtype, seed):
    """Every evaluation the ieee profile's error model allows with each operation correctly
    rounded (the clamp orders and mulrecip too: the clamp orders' outer lines lean toward zero
    where 1/beta rounds down), and every model that evaluates in a wider format and rounds once,
    on the canonical and random families of two seeds: no direction fails. The evaluations
    outside the kernel's models run as reachable.point, the interval engine's own bits."""
    from sl1conf.adapters.base import ArrayFunction
    from sl1conf.reference import reachable

    fmt = F.format_by_name(dtype)
    vs = V.in_memory(dtype, generate(dtype, seed, _without_large()), seed=seed)
    profile = load_profile("ieee")
    names = {m.name for m in accepted_models(fmt)} | {m.name for m in models_for(fmt) if m.name.endswith("fp64")}
    adapters = [load(f"builtin:model:{name}") for name in sorted(names)]
    for name, order, precision in reachable.evaluations(fmt, profile.error_model):
        if name not in names:
            fn = lambda dy, x1, x2, beta, o=order, p=precision: reachable.point(fmt, o, p, dy, x1, x2, beta)  # noqa: E731
            adapters.append(ArrayFunction(f"ieee-{name}", np.errstate(all="ignore")(fn), (dtype,)))
    for adapter in adapters:
        _, judged, _ = judge_run(adapter, profile, vs, "p")
        result = rounding_bias(bias_counts(judged, profile))
        if result is not None:
            assert not any(d["fails"] for d in result["directions"]), (adapter.name, result)


def test_truncation_and_round_down_are_caught():
    """The divmul-fp32 order (accepted), its result rounded toward zero or down instead of to
    nearest: every deviation lies one way, far past what any model does."""
    from sl1conf.adapters.base import ArrayFunction

    vs = V.in_memory("fp32", generate("fp32", 2026, _without_large()), seed=2026)
    profile = load_profile("ieee")
    for way, direction in (("toward zero", "toward zero"), ("down", "down")):
        @np.errstate(all="ignore")  # the special-value families divide by zero and overflow on purpose
        def fn(dy, x1, x2, beta, _way=way):
            d = x1.astype(np.float64) - x2.astype(np.float64)
            exact = np.where(d > beta, dy, np.where(d < -beta, -dy.astype(np.float64), d / beta * dy))
            r = exact.astype(np.float32)  # to nearest, then one step back where it went the wrong way
            up = r.astype(np.float64) > exact
            lean = (np.abs(r.astype(np.float64)) > np.abs(exact)) if _way == "toward zero" else up
            step = np.where(lean & np.isfinite(r) & (r != 0), np.nextafter(r, np.where(
                _way == "toward zero", np.float32(0), np.float32(-np.inf))), r)
            return step.astype(np.float32)

        _, judged, _ = judge_run(ArrayFunction(f"round-{way}", fn, ("fp32",)), profile, vs, "p")
        result = rounding_bias(bias_counts(judged, profile))
        assert result is not None and fails(result, direction), (way, result)

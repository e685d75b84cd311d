"""One rulebook: certify, fuzz and sweep judge the same element the same way.

The implementation below answers the open cases as torch's CPU kernel does (``|diff| >=
beta`` first, then ``diff > 0 ? dy : -dy``: -dy at diff = 0 for beta = 0, the sign of diff
for beta < 0) and the middle line as (diff / beta) * dy in float32, rounded once to fp16
(the accepted ``divmul-fp32`` model's order). A second one also breaks the boundary (it
rounds 1 ULP low where diff = +-beta). For each, the certify path (a vector set judged by
the engine), the fuzzer's judgement and the sweep's tally must name the same requirement
for the same elements, and the expected verdicts come from the hand derivation above:
every open answer is acceptable (so nothing is rejected), the broken boundary fails R02.
"""

from __future__ import annotations

import numpy as np
import pytest

from sl1conf.adapters.base import ArrayFunction, Case
from sl1conf.conformance.certify.engine import judge_run
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.search import fuzz as Z
from sl1conf.conformance.search import sweep as S
from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.vectors.cases import Family, VectorCase
from sl1conf.conformance.vectors.families import finish_case
from sl1conf.reference import exact as X
from sl1conf.reference import formats as F

FP16 = F.FP16


def torch_like(dy, x1, x2, beta):
    with np.errstate(all="ignore"):
        d = x1.astype(np.float32) - x2.astype(np.float32)
        b, g = np.float32(beta), dy.astype(np.float32)
        return np.where(np.abs(d) >= b, np.where(d > 0, g, -g), (d / b) * g).astype(np.float16)


def boundary_low(dy, x1, x2, beta):
    out = torch_like(dy, x1, x2, beta)
    on = X.at_boundary(FP16, x1.view(np.uint16), x2.view(np.uint16), int(np.float16(beta).view(np.uint16)))
    low = out.view(np.uint16).copy()
    low[on & np.isfinite(out) & (out != 0)] -= 1
    return low.view(np.float16)


def inputs(beta_text: str, rng) -> tuple:
    """x1 against x2 = 0, +-1, 0.25 (every x1 for the first, random ones for the rest), so the
    elements cover diff = 0, +-beta exactly, rounded diffs across the boundary and specials."""
    beta, _ = F.parse_value(FP16, beta_text)
    x1 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x2 = np.zeros(x1.size, np.uint16)
    more = rng.integers(0, 1 << 16, 3 * 4096).astype(np.uint16)
    x2b = np.repeat(np.array([0x3C00, 0xBC00, 0x3400], np.uint16), 4096)
    return beta, np.concatenate([x1, more]), np.concatenate([x2, x2b])


@pytest.mark.parametrize("impl", [torch_like, boundary_low], ids=["torch-like", "boundary-low"])
@pytest.mark.parametrize("beta_text", ["0", "-0", "-1", "inf", "0.5", "0x1p-14"])
def test_certify_fuzz_and_sweep_agree_element_by_element(tmp_path, impl, beta_text):
    rng = np.random.default_rng(7)
    beta, x1, x2 = inputs(beta_text, rng)
    dy = np.full(x1.size, 0x3C00, np.uint16)
    adapter = ArrayFunction("test", impl)
    profile = load_profile("ieee")

    # certify: the elements as a vector set (cases of 1024), judged by the engine
    chunks = [slice(k, min(k + 1024, x1.size)) for k in range(0, x1.size, 1024)]
    cases = [finish_case(FP16, VectorCase(Case("fp16", dy[s].copy(), x1[s].copy(), x2[s].copy(), beta)))
             for s in chunks]
    vs = V.in_memory("fp16", [Family(1, "boundary-exact", "test", cases=cases)], seed=0)
    _, judged, broken = judge_run(adapter, profile, vs, "p")
    assert not broken and len(judged) == len(chunks)
    certify_bad = {}
    for j, s in zip(judged, chunks):
        for rid, bad in j.breaks.items():
            certify_bad.setdefault(rid, []).extend((np.flatnonzero(bad) + s.start).tolist())

    # fuzz: the same calls through the fuzzer's judgement
    fuzz_bad = {}
    for s in chunks:
        case = Case("fp16", dy[s], x1[s], x2[s], beta)
        got = adapter.run([case])[0].out
        for rid, idx in Z.judge_call(profile, case, got).items():
            fuzz_bad.setdefault(rid, []).extend((idx + s.start).tolist())

    # sweep: the same elements through the sweep's tally (one block)
    got = adapter.run([Case("fp16", dy, x1, x2, beta)])[0].out
    from sl1conf.reference import fast_oracle

    want = fast_oracle.smoothl1lossgrad(dy.view(np.float16), x1.view(np.float16), x2.view(np.float16),
                                        np.uint16(beta).view(np.float16)).view(np.uint16)
    tally = S.PlaneTally()
    tally.add(0, dy, x1, x2, beta, got, want)
    tally.judge(0, dy, x1, x2, beta, got, want, profile)

    clean = lambda d: {k: sorted(v) for k, v in d.items() if v}  # noqa: E731
    assert clean(certify_bad) == clean(fuzz_bad)
    assert {k: len(v) for k, v in clean(certify_bad).items()} == {k: e.elements for k, e in tally.requirements.items()}
    verdict = S.verdict(tally, profile)
    # the hand derivation: every open answer is acceptable; only the lowered boundary fails, as R02
    on_boundary = X.at_boundary(FP16, x1, x2, beta).any()
    if impl is torch_like or not on_boundary:
        assert verdict["pass"] and not clean(certify_bad), clean(certify_bad)
    else:
        assert set(clean(certify_bad)) == {"R02"} and not verdict["pass"]


def test_sweep_records_the_open_answers_and_passes_beta_zero(tmp_path):
    """`sl1conf sweep ... --beta 0 --subset x2=0` on a torch-like implementation: pass, with the
    answer at diff = 0 (-dy, the neg-dy alternative) recorded under the beta = 0 question."""
    beta, _ = F.parse_value(FP16, "0")
    config = S.SweepConfig("test", beta, 0x3C00, "x2=0", block=1 << 14)
    state = S.run_sweep(config, tmp_path, adapter=ArrayFunction("test", torch_like))
    v = S.verdict(state["tally"], load_profile("ieee"))
    assert v["pass"] and v["rejected"] == 0
    assert v["open_answers"]["beta = 0"] == {"neg-dy": 2}  # x1 = +0 and x1 = -0, diff = 0


@pytest.mark.parametrize("platform, passes", [("mt7004", True), ("ieee", False)])
def test_flushing_is_accepted_by_every_rule_where_the_profile_accepts_it(platform, passes):
    """The flush-to-zero oracle itself, judged on subnormal-heavy inputs: on a flushing profile
    (mt7004) no rule rejects it, the boundary and overflow rules included (a subnormal beta read
    as zero puts diff = 0 on the boundary and makes 1 / beta overflow); on ieee it fails."""
    from sl1conf.reference import fast_oracle

    rng = np.random.default_rng(3)
    n = 4096
    sub = lambda: rng.integers(1, 0x400, n).astype(np.uint16) | (rng.integers(0, 2, n).astype(np.uint16) << 15)  # noqa: E731
    x1 = np.where(rng.random(n) < 0.5, sub(), rng.integers(0, 0x7C00, n).astype(np.uint16))
    x2 = np.where(rng.random(n) < 0.5, sub(), np.zeros(n, np.uint16))
    dy = np.where(rng.random(n) < 0.3, sub(), np.full(n, 0x3C00, np.uint16))
    profile = load_profile(platform)
    for beta in (0x0001, 0x0155, 0x3C00):
        flushing = lambda d, a, b, beta: fast_oracle.smoothl1lossgrad(d, a, b, beta, flush_subnormals=True)  # noqa: E731
        adapter = ArrayFunction("ftz", flushing)
        case = Case("fp16", dy, x1, x2, beta)
        got = adapter.run([case])[0].out
        rejected = Z.judge_call(profile, case, got)
        assert (not rejected) == passes or (not passes and beta == 0x3C00 and not rejected), (beta, rejected)


@pytest.mark.parametrize("platform", ["mt7004", "ieee"])
@pytest.mark.parametrize("beta_text", ["0", "-1", "inf", "0x1p-14"])
def test_shorter_calls_shared_variant_and_a_flushing_profile_agree_too(platform, beta_text):
    """The same agreement for calls shorter than their buffers (length n - 3), on the shared
    variant with every core of the profile, and on a profile that accepts flushing."""
    rng = np.random.default_rng(11)
    beta, x1, x2 = inputs(beta_text, rng)
    x1, x2 = x1[::7].copy(), x2[::7].copy()  # a sample: every kind of element, fewer of them
    dy = rng.integers(0, 1 << 16, x1.size).astype(np.uint16)
    profile = load_profile(platform)
    adapter = ArrayFunction("test", boundary_low)
    chunks = [slice(k, min(k + 512, x1.size)) for k in range(0, x1.size, 512)]
    cases = [finish_case(FP16, VectorCase(Case("fp16", dy[s].copy(), x1[s].copy(), x2[s].copy(), beta, variant="s",
                                               core_mask=profile.core_mask, length=s.stop - s.start - 3)))
             for s in chunks]
    vs = V.in_memory("fp16", [Family(1, "boundary-exact", "test", cases=cases)], seed=0)
    _, judged, broken = judge_run(adapter, profile, vs, "s")
    assert not broken and len(judged) == len(chunks)
    for j, vc in zip(judged, cases):
        call = Case("fp16", vc.dy, vc.x1, vc.x2, beta, variant="s", core_mask=profile.core_mask, length=vc.length)
        got = adapter.run([call])[0].out[:call.elements_written]
        fuzz = {rid: idx.tolist() for rid, idx in Z.judge_call(profile, call, got).items()}
        certify = {rid: np.flatnonzero(bad).tolist() for rid, bad in j.breaks.items() if bad.any()}
        assert certify == fuzz


@pytest.mark.parametrize("fmt", [F.FP16, F.FP32], ids=lambda f: f.name)
def test_expected_for_computes_the_flush_to_zero_oracle_only_where_flushing_matters(fmt):
    """expected_for takes the oracle's bits wherever no input and no result is subnormal (and
    computes every element when beta is): the same bits as the flush-to-zero oracle on all."""
    from sl1conf.conformance.rules.judge import expected_for
    from sl1conf.conformance.vectors.sampling import fast_batch, hard_batch, random_batch
    from sl1conf.reference import fast_oracle

    rng = np.random.default_rng([11, fmt.bits])
    subnormal_betas = 0
    for k in range(45):
        b = (fast_batch, hard_batch, random_batch)[k % 3](fmt, 2000, rng, **({"beta": k // 9 + 1} if k % 9 == 0 else {}))
        subnormal_betas += 0 < (b.beta & ~fmt.sign_mask) < (1 << fmt.frac_bits)
        want = fast_oracle.smoothl1lossgrad_ftz(*b.floats(fmt)).view(fmt.uint)
        assert np.array_equal(expected_for(fmt, b.dy, b.x1, b.x2, b.beta).oracle_ftz, want)
    assert subnormal_betas >= 4  # the whole-call path ran too

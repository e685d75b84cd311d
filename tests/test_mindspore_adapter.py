"""The MindSpore adapter (``mindspore``, ``mindspore:cpu``): mapping, the clear errors, the
refusal of beta <= 0, and the behaviour its docstring records.

Tests that need mindspore skip when it is not importable (``pytest.importorskip``), except
under CI (the CI variable set), where .ci/run installs it (``quickstart.py test
--with-mindspore``) and a missing mindspore fails them. The tests of the error for a missing
mindspore, and of unknown devices, need no mindspore.

The bit-for-bit characterisations (which model each format matches, what MindSpore does in
the open cases, when fp32 flushes subnormals) were measured on mindspore 2.10; on other
versions they skip, since a new MindSpore may legitimately compute differently (then
re-measure and update the docstring of ``sl1conf.adapters.mindspore_adapter``).

fp32 results depend on the call history of the process (the docstring: from the 6th launch
of the kernel on, calls split between MindSpore's pool threads flush subnormals). So the
tests in this process use what no flushing can change: data with no subnormal input,
intermediate or result, or calls of one element, which are never split. The call-history
claims run in fresh processes (a subprocess each), whatever ran before in this pytest worker.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import require_optional
from sl1conf.adapters import AdapterError, Case, load
from sl1conf.adapters.mindspore_adapter import MISSING_MINDSPORE, STALE_RETRIES, MindSporeAdapter, MindSporeKernel
from sl1conf.conformance.vectors.sampling import TYPICAL_BETAS, random_batch
from sl1conf.reference import fast_oracle
from sl1conf.reference import formats as F
from sl1conf.reference.models import get_model

CHARACTERIZED = "2.10"  # the mindspore version whose bit-level behaviour the docstring records
DTYPES = ("fp16", "fp32")
INF, NAN = float("inf"), float("nan")
FLT_MAX = float(np.finfo(np.float32).max)


def _require_mindspore():
    os.environ.setdefault("GLOG_v", "3")  # as the adapter does: MindSpore's log lines off the output
    return require_optional("mindspore", "pip install mindspore==2.10.0, or python3 quickstart.py test "
                                         "--with-mindspore, as .ci/run does")


@pytest.fixture(scope="module")
def ms():
    return _require_mindspore()


@pytest.fixture(scope="module")
def adapter(ms):
    a = MindSporeAdapter("cpu")
    yield a
    a.close()


def _characterized(ms):
    if not ms.__version__.startswith(CHARACTERIZED + "."):
        pytest.skip(f"bit-level behaviour recorded for mindspore {CHARACTERIZED}, this is {ms.__version__}")


def _bits(fmt, values):
    with np.errstate(over="ignore"):
        return np.array(values, dtype=np.float64).astype(fmt.dtype).view(fmt.uint)


def _beta_bits(fmt, value) -> int:
    return int(_bits(fmt, [value])[0])


def _floats(fmt, dy, x1, x2, beta):
    view = lambda a: np.asarray(a, fmt.uint).view(fmt.dtype)  # noqa: E731
    return view(dy), view(x1), view(x2), np.array([beta], fmt.uint).view(fmt.dtype)[0]


def _model_bits(name, fmt, dy, x1, x2, beta):
    return get_model(name)(*_floats(fmt, dy, x1, x2, beta)).view(fmt.uint)


def _first_difference(fmt, got, want, what):
    bad = np.flatnonzero(~F.same_result(fmt, got, want))
    if bad.size:
        i = bad[0]
        return (f"element {i}: mindspore {F.hex_bits(fmt, got[i])}, {what} {F.hex_bits(fmt, want[i])} "
                f"({bad.size} of {got.size} differ)")
    return None


def _no_tiny_anywhere(fmt, dy, x1, x2, beta):
    """Elements with no subnormal input, diff, quotient or result, nothing near the smallest
    normal and nothing infinite: where flushing (DAZ/FTZ) cannot change a bit."""
    tiny, big = 2.0 ** (fmt.emin + 8), float(fmt.max_finite) / 16
    with np.errstate(all="ignore"):
        a = [v.astype(np.float64) for v in (dy, x1, x2)]
        d, y = a[1] - a[2], a[0]
        ok = np.ones(dy.shape, bool)
        for v in a:
            ok &= np.isfinite(v) & (np.abs(v) < big) & ((np.abs(v) > tiny) | (v == 0))
        ok &= (np.abs(d) > tiny) | (d == 0)
        ok &= (np.abs(d / float(beta)) > tiny) | (d == 0)
        r = np.abs(d / float(beta) * y)
        ok &= (r > tiny) | (r == 0) | (np.abs(d) >= float(beta))
    return ok


def _no_tiny_batches(dtype, n, count, seed):
    """``count`` (dy, x1, x2, beta bits) of ``random_batch`` data, elements flushing could
    change zeroed (x1 = x2 = dy = 0 gives a zero by any rule)."""
    fmt = F.format_by_name(dtype)
    rng = np.random.default_rng(seed)
    for k in range(count):
        beta = _beta_bits(fmt, TYPICAL_BETAS[k % len(TYPICAL_BETAS)])
        b = random_batch(fmt, n, rng, beta=beta)
        ok = _no_tiny_anywhere(fmt, *b.floats(fmt))
        yield tuple(np.where(ok, a, 0).astype(fmt.uint) for a in (b.dy, b.x1, b.x2)) + (beta,)


# ---------------------------------------------------------------- which model, bit for bit

FP16_BETAS = tuple(TYPICAL_BETAS) + (2.0 ** -20, 2.0 ** -14, 65504.0, INF, NAN)


def test_fp16_is_divmul_fp16_bit_for_bit(adapter, ms):
    """fp16 is MindSpore's float16 class, every operation rounded to half: divmul-fp16 on
    random_batch data as it comes (specials, subnormals, the boundary), in every call and at
    every length; fp16 never flushes, so the call history does not matter."""
    _characterized(ms)
    fmt, rng = F.FP16, np.random.default_rng(2016)
    cases = []
    for k, n in enumerate((1000,) * 12 + (1, 7, 33, 255)):
        b = random_batch(fmt, n, rng, beta=_beta_bits(fmt, FP16_BETAS[k % len(FP16_BETAS)]))
        cases.append(Case("fp16", b.dy, b.x1, b.x2, b.beta, id=f"fp16-{k}"))
    discriminating = 0
    for case, outcome in zip(cases, adapter.run(cases)):
        assert outcome.status == "ok", f"{case.id}: {outcome.status} {outcome.detail}"
        assert not outcome.inputs_changed
        want = _model_bits("divmul-fp16", fmt, case.dy, case.x1, case.x2, case.beta)
        problem = _first_difference(fmt, outcome.out, want, "divmul-fp16")
        assert problem is None, f"{case.id}: {problem}"
        other = _model_bits("divmul-fp32", fmt, case.dy, case.x1, case.x2, case.beta)
        discriminating += int((~F.same_result(fmt, other, want)).sum())
    assert discriminating > 0, "the data cannot tell divmul-fp16 from divmul-fp32"


def test_fp32_is_divmul_fp32_bit_for_bit_where_flushing_cannot_matter(adapter, ms):
    """fp32 is divmul-fp32 at every length and position (no SIMD tail), on data no flushing
    can change (so whatever this process's call history); within 2 ULP of the oracle there."""
    _characterized(ms)
    fmt = F.FP32
    discriminating = 0
    for n, seed in ((1, 1), (7, 2), (16, 3), (33, 4), (1000, 5), (1025, 6)):
        for i, (dy, x1, x2, beta) in enumerate(_no_tiny_batches("fp32", n, 7, seed)):
            outcome = adapter.run([Case("fp32", dy, x1, x2, beta)])[0]
            assert outcome.status == "ok", outcome.detail
            want = _model_bits("divmul-fp32", fmt, dy, x1, x2, beta)
            problem = _first_difference(fmt, outcome.out, want, "divmul-fp32")
            assert problem is None, f"n={n} batch {i}: {problem}"
            oracle = F.to_bits(fmt, fast_oracle.smoothl1lossgrad(*_floats(fmt, dy, x1, x2, beta)))
            assert int(F.ulp_distance(fmt, outcome.out, oracle).max()) <= 2
            for other in ("muldiv-fp32", "recipmul-fp32"):
                discriminating += int((_model_bits(other, fmt, dy, x1, x2, beta) != want).sum())
    assert discriminating > 0, "the data cannot tell divmul-fp32 from the other fp32 models"


def test_a_long_call(adapter, ms):
    """2^20 elements in one call: divmul-fp32 bit for bit (normal data), well within seconds
    (about 0.05 s measured)."""
    _characterized(ms)
    fmt, n = F.FP32, 1 << 20
    rng = np.random.default_rng(20)
    dy, x1, x2 = (rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n) for _ in range(3))
    case = Case("fp32", _bits(fmt, dy), _bits(fmt, x1), _bits(fmt, x2), _beta_bits(fmt, 1.5))
    start = time.perf_counter()
    outcome = adapter.run([case])[0]
    seconds = time.perf_counter() - start
    assert outcome.status == "ok", outcome.detail
    assert _first_difference(fmt, outcome.out, _model_bits("divmul-fp32", fmt, case.dy, case.x1, case.x2,
                                                           case.beta), "divmul-fp32") is None
    assert seconds < 10, f"a call of 2^20 elements took {seconds:.1f} s"


# ---------------------------------------------------------------- beta <= 0, NaN beta

# (beta, MindSpore's words for it: the kernel's Resize for +-0, shape inference for beta < 0)
REFUSED = {
    "fp32": [(0.0, "should greater than 0, but got 0."), (-0.0, "should greater than 0, but got -0."),
             (-1.0, "not support negative values, but got -1."),
             (-INF, "not support negative values, but got -inf."),
             (-FLT_MAX, "not support negative values, but got -3.40282e+38."),
             (-(2.0 ** -149), "not support negative values, but got -1.4013e-45.")],
    "fp16": [(0.0, "should greater than 0, but got 0."), (-0.0, "should greater than 0, but got -0."),
             (-0.5, "not support negative values, but got -0.5."),
             (-INF, "not support negative values, but got -inf."),
             (-65504.0, "not support negative values, but got -65504."),
             (-(2.0 ** -24), "not support negative values, but got -5.96046e-08.")],
}


@pytest.mark.parametrize("dtype", DTYPES)
def test_beta_zero_and_negative_are_rejected(adapter, ms, dtype):
    """MindSpore refuses beta <= 0 (both zeros, negative, -inf, a negative subnormal) with a
    RuntimeError: Outcome status rejected, the detail naming the call's own beta."""
    fmt = F.format_by_name(dtype)
    row = [_bits(fmt, [v] * 5) for v in (2.0, 0.5, 0.0)]
    for beta, words in REFUSED[dtype]:
        outcome = adapter.run([Case(dtype, *row, _beta_bits(fmt, beta))])[0]
        assert outcome.status == "rejected", f"beta={beta}: {outcome.status} {outcome.detail}"
        assert outcome.out is None
        assert "RuntimeError: For 'SmoothL1LossGrad', the values for beta " + words in outcome.detail, (
            f"beta={beta}: {outcome.detail}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_beta_is_accepted_and_gives_nan(adapter, ms, dtype):
    """NaN beta passes both checks (NaN <= 0 and NaN < 0 are false): every result is NaN, in
    every branch (diff > NaN and diff < -NaN are false, diff / NaN is NaN), as the oracle."""
    fmt = F.format_by_name(dtype)
    row = [_bits(fmt, [2.0, -2.0, 0.5, 0.0, INF]), _bits(fmt, [3.0, -3.0, 0.25, 0.0, 1.0]),
           _bits(fmt, [0.0, 0.0, 0.0, 0.0, 0.0])]
    nans = [fmt.qnan_bits, fmt.qnan_bits | fmt.sign_mask, fmt.inf_bits | 1, fmt.inf_bits | 0x15 | fmt.sign_mask]
    for beta in nans:
        outcome = adapter.run([Case(dtype, *row, beta)])[0]
        assert outcome.status == "ok", f"beta={F.hex_bits(fmt, beta)}: {outcome.status} {outcome.detail}"
        assert F.is_nan_bits(fmt, outcome.out).all(), [F.hex_bits(fmt, b) for b in outcome.out]


# ---------------------------------------------------------------- the open cases, one element a call

# (dtypes, dy, x1, x2, beta, expected dx1, the oracle agrees). x1 is the prediction, x2 the
# target. Each runs as a call of one element, which MindSpore never splits, so never flushes.
# Every expected value is the IEEE evaluation of diff = x1 - x2, then
# diff > beta ? dy : diff < -beta ? -dy : (diff / beta) * dy in the data type.
BOTH = ("fp16", "fp32")
OPEN = [
    (BOTH, 0.5, 3.0, 1.0, 1.0, 0.5, True),       # diff = 2 > beta: dy
    (BOTH, 0.5, 1.0, 3.0, 1.0, -0.5, True),      # diff = -2 < -beta: -dy
    (BOTH, 2.0, 1.25, 1.0, 0.5, 1.0, True),      # middle: 0.25 / 0.5 * 2
    (BOTH, 2.0, 1.0, 1.25, 0.5, -1.0, True),
    # beta = +inf: a finite diff gives a signed zero; an infinite one inf / inf = NaN (torch: +-dy)
    (BOTH, 2.0, 0.5, 0.0, INF, 0.0, True),
    (BOTH, 2.0, -0.5, 0.0, INF, -0.0, True),
    (BOTH, -2.0, 0.5, 0.0, INF, -0.0, True),
    (BOTH, 2.0, INF, 0.0, INF, NAN, True),
    (BOTH, 2.0, -INF, 0.0, INF, NAN, True),
    # infinite inputs
    (BOTH, 2.0, INF, 0.0, 1.0, 2.0, True),       # diff = +inf > beta
    (BOTH, 2.0, -INF, 0.0, 1.0, -2.0, True),
    (BOTH, 2.0, 0.0, -INF, 1.0, 2.0, True),      # 0 - (-inf) = +inf
    (BOTH, 2.0, INF, INF, 1.0, NAN, True),       # inf - inf
    (BOTH, INF, 0.5, 0.0, 1.0, INF, True),       # middle: 0.5 * inf
    (BOTH, -INF, 0.5, 0.0, 1.0, -INF, True),
    (BOTH, INF, -0.5, 0.0, 1.0, -INF, True),
    (BOTH, INF, 1.0, 1.0, 1.0, NAN, True),       # diff = 0: 0 * inf
    (BOTH, INF, 3.0, 0.0, 1.0, INF, True),       # outer branches copy dy
    (BOTH, INF, -3.0, 0.0, 1.0, -INF, True),
    # NaN inputs
    (BOTH, NAN, 3.0, 0.0, 1.0, NAN, True),
    (BOTH, 2.0, NAN, 0.0, 1.0, NAN, True),
    (BOTH, 2.0, 0.0, NAN, 1.0, NAN, True),
    # diff exactly +-beta: (+-1) * dy, exactly +-dy
    (BOTH, 3.0, 1.5, 1.0, 0.5, 3.0, True),
    (BOTH, 3.0, 1.0, 1.5, 0.5, -3.0, True),
    (BOTH, -0.0, 1.5, 1.0, 0.5, -0.0, True),     # 1 * (-0)
    # signed zeros
    (BOTH, -3.0, 2.0, 2.0, 0.5, -0.0, True),     # x - x = +0; +0 / 0.5 * -3 = -0
    (BOTH, 3.0, -0.0, 0.0, 0.5, -0.0, True),     # (-0) - (+0) = -0
    (BOTH, -3.0, -0.0, 0.0, 0.5, 0.0, True),
    (BOTH, -3.0, 0.0, -0.0, 0.5, -0.0, True),    # (+0) - (-0) = +0
    (BOTH, 0.0, -3.0, 1.0, 1.0, -0.0, True),     # -dy of +0 is -0
    (BOTH, -0.0, -3.0, 1.0, 1.0, 0.0, True),
    (BOTH, -0.0, 3.0, 1.0, 1.0, -0.0, True),
    (BOTH, -0.0, 0.5, 0.0, 1.0, -0.0, True),     # middle: 0.5 * -0
    # no intermediate overflow: the middle line divides first (2 / 4 = 0.5, then * dy)
    (("fp32",), FLT_MAX, 2.0, 0.0, 4.0, FLT_MAX / 2, True),
    (("fp16",), 65504.0, 2.0, 0.0, 4.0, 32752.0, True),
    # diff rounded to the data type first, and it can overflow: only beta = inf notices
    (("fp32",), 2.0, FLT_MAX, -FLT_MAX, 1.0, 2.0, True),   # inf > 1: dy, the oracle's branch
    (("fp32",), 2.0, FLT_MAX, -FLT_MAX, INF, NAN, False),  # inf / inf; the oracle: 2^129 / inf * 2 = 0
    (("fp16",), 2.0, 65504.0, -65504.0, 1.0, 2.0, True),
    (("fp16",), 2.0, 65504.0, -16.0, INF, NAN, False),     # 65520 rounds to inf in half; the oracle: 0
    # fp16 diff / beta underflows: 1.5 * 2^-24 ties to 2^-23 (even), * 1024 = 2^-13; exact 1.5 * 2^-14
    (("fp16",), 1024.0, 3 * 2.0 ** -24, 0.0, 2.0, 2.0 ** -13, False),
    # subnormals, gradual underflow (calls that do not flush): beta, inputs, results kept
    (("fp32",), 1.0, 2.0 ** -149, 0.0, 2.0 ** -148, 0.5, True),          # subnormal beta accepted
    (("fp32",), 2.0 ** -125, 2.0 ** -20, 0.0, 1.0, 2.0 ** -145, True),   # subnormal result
    (("fp32",), 2.0 ** 100, 2.0 ** -127, -(2.0 ** -127), 1.0, 2.0 ** -26, True),  # subnormal inputs
    (("fp32",), 2.0 ** -140, 3.0, 0.0, 1.0, 2.0 ** -140, True),          # subnormal dy copied
    (("fp32",), 2.0 ** -140, 1.0, 0.0, 1.0, 2.0 ** -140, True),          # diff == beta: 1 * dy
    (("fp16",), 1.0, 2.0 ** -24, 0.0, 2.0 ** -23, 0.5, True),
    (("fp16",), 2.0 ** -14, 2.0 ** -4, 0.0, 1.0, 2.0 ** -18, True),
    (("fp16",), 2.0 ** 8, 2.0 ** -15, -(2.0 ** -15), 1.0, 2.0 ** -6, True),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_open_cases_behave_as_the_docstring_says(adapter, ms, dtype):
    _characterized(ms)
    fmt = F.format_by_name(dtype)
    model = get_model(f"divmul-{dtype}")
    rows = [r for r in OPEN if dtype in r[0]]
    cases = [Case(dtype, _bits(fmt, [dy]), _bits(fmt, [x1]), _bits(fmt, [x2]), _beta_bits(fmt, beta))
             for _, dy, x1, x2, beta, _, _ in rows]
    for (_, dy, x1, x2, beta, want, as_oracle), case, outcome in zip(rows, cases, adapter.run(cases)):
        label = f"dy={dy} x1={x1} x2={x2} beta={beta}"
        assert outcome.status == "ok", f"{label}: {outcome.status} {outcome.detail}"
        got = outcome.out
        assert F.same_result(fmt, got, _bits(fmt, [want]))[0], (
            f"{label}: got {F.hex_bits(fmt, got[0])}, want {want} ({F.hex_bits(fmt, _bits(fmt, [want])[0])})")
        # the table's own claims: it is the model's result, and the oracle's exactly where it says so
        assert F.same_result(fmt, got, model(*case.floats()).view(fmt.uint))[0], label
        oracle = F.to_bits(fmt, fast_oracle.smoothl1lossgrad(*case.floats()))
        assert bool(F.same_result(fmt, got, oracle)[0]) == as_oracle, (
            f"{label}: the oracle gives {F.hex_bits(fmt, oracle[0])}")


# ---------------------------------------------------------------- a refusal raised again

_STALE = "For 'SmoothL1LossGrad', the values for beta not support negative values, but got {}."


class _FakeResult:
    def __init__(self, answer, like):
        self.answer, self.like = answer, like

    def asnumpy(self):
        if isinstance(self.answer, BaseException):
            raise self.answer
        like = self.like.asnumpy()
        return np.full(like.shape, self.answer, like.dtype)


class _FakeOp:
    """Stands in for a SmoothL1LossGrad primitive: its calls' answers in turn (the last one
    again and again); an exception is raised by asnumpy(), as MindSpore raises its own."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), 0

    def __call__(self, x1, x2, dy):
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return _FakeResult(answer, dy)


def _with_fake(ms, beta, fake):
    a = MindSporeKernel("cpu")  # in this process, a fresh one: the shared adapter's primitives stay real
    a._ops[np.asarray(np.float32(beta)).tobytes()] = fake
    row = [_bits(F.FP32, [2.0, 0.5, -1.0]), _bits(F.FP32, [3.0, 0.25, 1.0]), _bits(F.FP32, [0.0] * 3)]
    return a.run([Case("fp32", *row, _beta_bits(F.FP32, beta))])[0]


@pytest.mark.parametrize("beta", [1.0, NAN])
def test_a_refusal_of_an_earlier_call_is_run_again(ms, beta):
    fake = _FakeOp(RuntimeError(_STALE.format(-2)), 0.25)
    outcome = _with_fake(ms, beta, fake)
    assert outcome.status == "ok" and (outcome.out == _bits(F.FP32, [0.25] * 3)).all(), outcome
    assert fake.calls == 2


def test_a_persisting_refusal_of_another_call_is_an_error_not_a_rejection(ms):
    fake = _FakeOp(RuntimeError(_STALE.format(-2)))
    outcome = _with_fake(ms, 1.0, fake)
    assert outcome.status == "error", outcome
    assert "refusal of an earlier call" in outcome.detail and "beta = 1" in outcome.detail, outcome.detail
    assert fake.calls == STALE_RETRIES + 1


def test_a_refusal_naming_another_beta_is_run_again_for_its_own_message(ms):
    fake = _FakeOp(RuntimeError(_STALE.format(-3)), RuntimeError(_STALE.format(-2)))
    outcome = _with_fake(ms, -2.0, fake)
    assert outcome.status == "rejected" and outcome.detail.endswith("but got -2."), outcome
    assert fake.calls == 2
    own = _FakeOp(RuntimeError(_STALE.format(-2)))
    assert _with_fake(ms, -2.0, own).status == "rejected" and own.calls == 1  # its own refusal: no rerun
    other = _FakeOp(RuntimeError("For 'SmoothL1LossGrad', something else"))
    assert _with_fake(ms, 1.0, other).status == "error" and other.calls == 1  # not a refusal: no rerun


def test_refusals_do_not_leak_into_later_calls(adapter, ms):
    """MindSpore (asynchronous) now and then raises a refusal again at the next call; through
    the adapter every valid call right after a refused one is answered, and every refusal
    names its own beta. A new primitive (a new beta) each time, as provoked it most."""
    fmt = F.FP32
    for k, (dy, x1, x2, _) in enumerate(_no_tiny_batches("fp32", 47, 30, 31)):
        bad, words = REFUSED["fp32"][k % len(REFUSED["fp32"])]
        no = adapter.run([Case("fp32", dy, x1, x2, _beta_bits(fmt, bad))])[0]
        assert no.status == "rejected" and words in no.detail, (k, bad, no.status, no.detail)
        beta = _beta_bits(fmt, 1.0 + k / 1024)
        yes = adapter.run([Case("fp32", dy, x1, x2, beta)])[0]
        assert yes.status == "ok", f"call after the refusal of beta={bad}: {yes.status} {yes.detail}"
        assert _first_difference(fmt, yes.out, _model_bits("divmul-fp32", fmt, dy, x1, x2, beta),
                                 "divmul-fp32") is None


# ---------------------------------------------------------------- the call history (fresh processes)

_CHILD = r"""
import os, sys
os.environ.setdefault("GLOG_v", "3")
import numpy as np
if sys.argv[2] == "one-thread":
    import mindspore
    mindspore.device_context.cpu.op_tuning.threads_num(1)
from sl1conf.adapters import Case
from sl1conf.adapters.mindspore_adapter import MindSporeKernel
data = np.load(sys.argv[1])
adapters = (MindSporeKernel("cpu"), MindSporeKernel(""))  # two instances in this one process
out = {}
for k in range(int(data["count"])):
    case = Case(str(data[f"dtype{k}"]), data[f"dy{k}"], data[f"x1{k}"], data[f"x2{k}"], int(data[f"beta{k}"]))
    o = adapters[int(data[f"which{k}"])].run([case])[0]
    out[f"status{k}"] = np.array(o.status)
    out[f"out{k}"] = o.out if o.out is not None else np.zeros(0, case.format.uint)
np.savez(sys.argv[3], **out)
"""


def _run_fresh(tmp_path, calls, mode="default"):
    """Run ``calls`` ((dtype, dy, x1, x2, beta bits, adapter 0 or 1), in order) in a fresh
    process; two adapter instances there (load('mindspore:cpu') and load('mindspore'))."""
    data = {"count": np.array(len(calls))}
    for k, (dtype, dy, x1, x2, beta, which) in enumerate(calls):
        data.update({f"dtype{k}": np.array(dtype), f"dy{k}": dy, f"x1{k}": x1, f"x2{k}": x2,
                     f"beta{k}": np.array(beta), f"which{k}": np.array(which)})
    src, dst = tmp_path / f"calls-{mode}.npz", tmp_path / f"results-{mode}.npz"
    np.savez(src, **data)
    env = {**os.environ, "GLOG_v": "3"}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(src), mode, str(dst)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(dst)
    return [(str(got[f"status{k}"]), got[f"out{k}"]) for k in range(len(calls))]


_TINY = 2.0 ** -126


def _daz(a):
    a = np.asarray(a, np.float32)
    return np.where(np.abs(a) < np.float32(_TINY), np.copysign(np.float32(0), a), a).astype(np.float32)


def _ftz(exact, rounded):
    """x86 FTZ: an exact result below 2^-126 in magnitude gives a zero of its sign, also one
    that would round up to 2^-126 (tininess before rounding)."""
    return np.where((np.abs(exact) < _TINY) & np.isfinite(exact),
                    np.copysign(np.float32(0), rounded), rounded).astype(np.float32)


def _divmul_fp32_daz_ftz(dy, x1, x2, beta):
    """divmul-fp32 with DAZ and FTZ on every operation (the comparisons read flushed operands
    too); the outer branches copy dy and -dy, so a subnormal dy there is kept. The exact
    values come from binary64: x1 - x2 and q * dy are exact there, and only a quotient within
    2^-53 of 2^-126 could be judged wrongly."""
    with np.errstate(all="ignore"):
        b, a1, a2, y = _daz(np.float32(beta)), _daz(x1), _daz(x2), _daz(dy)
        d = _ftz(a1.astype(np.float64) - a2.astype(np.float64), a1 - a2)
        q = _ftz(d.astype(np.float64) / np.float64(b), d / b)
        m = _ftz(q.astype(np.float64) * y.astype(np.float64), q * y)
        return np.where(d > b, dy, np.where(d < -b, -dy, m)).astype(np.float32)


# Elements every call below carries: flushing changes each of them (the docstring's cases)
PROBE = [  # (dy, x1, x2): beta is the call's
    (2.0 ** -125, 2.0 ** -20, 0.0),              # normal inputs, subnormal result: FTZ gives 0
    (2.0 ** 100, 2.0 ** -127, -(2.0 ** -127)),   # subnormal inputs, normal diff and result: DAZ gives 0
    (2.0 ** -126, -2.0, -(2.0 ** -24) * 1.08),   # beta = 2: -(1 - 2^-24) * 2^-126 rounds to -2^-126; FTZ: -0
    (INF, 2.0 ** -126 * (1 + 2.0 ** -22), 2.0 ** -126),  # diff 2^-148, flushed: 0 * inf = NaN, not inf
]


def _probe(n, beta, rng=None):
    """``n`` elements: random_batch data (subnormals and specials included) with the PROBE
    elements written at random places (all of them at n = len(PROBE) * k, repeated)."""
    fmt = F.FP32
    if rng is None:
        dy, x1, x2 = (np.empty(n, np.float32) for _ in range(3))
    else:
        b = random_batch(fmt, n, rng, beta=beta)
        dy, x1, x2 = (a.view(np.float32).copy() for a in (b.dy, b.x1, b.x2))
    at = np.arange(n) if rng is None else rng.choice(n, size=len(PROBE) * 4, replace=False)
    for j, i in enumerate(at):
        dy[i], x1[i], x2[i] = PROBE[j % len(PROBE)]
    return dy.view(np.uint32), x1.view(np.uint32), x2.view(np.uint32)


def _flush_kind(dy, x1, x2, beta, out):
    """'plain' (divmul-fp32), 'flushed' (divmul-fp32 with DAZ/FTZ), or what differs from both."""
    fmt = F.FP32
    floats = _floats(fmt, dy, x1, x2, beta)
    plain = get_model("divmul-fp32")(*floats).view(np.uint32)
    flushed = _divmul_fp32_daz_ftz(*floats).view(np.uint32)
    assert not F.same_result(fmt, plain, flushed).all(), "the call's data cannot show flushing"
    if F.same_result(fmt, out, plain).all():
        return "plain"
    if F.same_result(fmt, out, flushed).all():
        return "flushed"
    return (f"neither: {_first_difference(fmt, out, plain, 'divmul-fp32')}; "
            f"{_first_difference(fmt, out, flushed, 'divmul-fp32 with DAZ/FTZ')}")


def _fp32_call(n, beta, rng, which=0):
    fmt = F.FP32
    b = _beta_bits(fmt, beta)
    return ("fp32", *_probe(n, b, rng), b, which)


def test_fp32_flushes_from_the_sixth_launch_in_a_fresh_process(ms, tmp_path):
    """The docstring's call-history rule, in a fresh process: fp16 calls do not count for
    fp32 (a kernel object each); launches 1 to 5 do not flush; refused calls do not count;
    two adapter instances share the count; launches 6 to 15 flush every element of calls of
    2 or more elements, exactly as divmul-fp32 with DAZ and FTZ; a call of 1 element never
    flushes; after the search (ended with one task of 200 elements, or going on), a call of
    201 elements flushes."""
    _characterized(ms)
    fmt, rng = F.FP32, np.random.default_rng(6)
    calls = []
    for k in range(7):  # fp16 launches 1 to 7: split from its 6th on, never flushed
        b = random_batch(F.FP16, 300, rng, beta=_beta_bits(F.FP16, FP16_BETAS[k % len(FP16_BETAS)]))
        calls.append(("fp16", b.dy, b.x1, b.x2, b.beta, 0))
    calls += [_fp32_call(200, beta, rng) for beta in (1.0, 2.0 ** -140, 0.1)]  # fp32 launches 1-3
    calls.append(_fp32_call(200, 0.0, rng))                                    # refused
    calls.append(_fp32_call(200, -1.0, rng, which=1))                          # refused
    calls += [_fp32_call(200, beta, rng, which=1) for beta in (0.5, 1 / 3)]    # launches 4, 5
    betas = (0.25, 0.3, 2.0 ** -140, 2.0, 1.0, 0.1, 0.5, 1 / 3, 2.0 ** -126)
    calls += [_fp32_call(200, beta, rng, which=k % 2) for k, beta in enumerate(betas)]  # launches 6-14
    one = ("fp32", *(a[:1] for a in _probe(4, 0)), _beta_bits(fmt, 1.0), 0)  # launch 15: 1 element
    calls.append(one)
    calls.append(("fp32", *_probe(200, 0), _beta_bits(fmt, 1.0), 0))  # launch 16: 200, either way
    calls.append(("fp32", *_probe(201, 0), _beta_bits(fmt, 1.0), 0))  # launch 17: 201: flushed
    calls.append(one)                                                 # launch 18: 1 element
    results = _run_fresh(tmp_path, calls)

    for k in range(7):
        status, out = results[k]
        assert status == "ok"
        dtype, dy, x1, x2, beta, _ = calls[k]
        assert _first_difference(F.FP16, out, _model_bits("divmul-fp16", F.FP16, dy, x1, x2, beta),
                                 "divmul-fp16") is None, f"fp16 launch {k + 1}"
    kinds = []
    for (dtype, dy, x1, x2, beta, _), (status, out) in zip(calls[7:], results[7:]):
        if status == "rejected":
            kinds.append("rejected")
            continue
        assert status == "ok", status
        kinds.append(_flush_kind(dy, x1, x2, beta, out))
    launches = [k for k in kinds if k != "rejected"]
    assert kinds[3:5] == ["rejected", "rejected"], kinds
    assert launches[:5] == ["plain"] * 5, launches
    assert launches[5:14] == ["flushed"] * 9, launches
    assert launches[14] == "plain", f"a 1-element call flushed: {launches}"
    assert launches[15] in ("plain", "flushed"), launches
    assert launches[16] == "flushed", f"launch 17 (201 elements) did not flush: {launches}"
    assert launches[17] == "plain", f"a 1-element call flushed: {launches}"


def test_one_kernel_thread_never_flushes(ms, tmp_path):
    """With mindspore.device_context.cpu.op_tuning.threads_num(1) no call is split: launches
    6 to 20, which flush by default, give divmul-fp32 bit for bit, subnormals and all."""
    _characterized(ms)
    rng = np.random.default_rng(1)
    betas = (1.0, 0.1, 2.0 ** -140, 0.5, 1 / 3)
    calls = [_fp32_call(201, betas[k % len(betas)], rng) for k in range(20)]
    kinds = [_flush_kind(dy, x1, x2, beta, out) if status == "ok" else status
             for (_, dy, x1, x2, beta, _), (status, out) in zip(calls, _run_fresh(tmp_path, calls, "one-thread"))]
    assert kinds == ["plain"] * 20, kinds


def test_the_adapter_runs_mindspore_in_a_worker_that_restart_makes_fresh(ms):
    """Through the adapter (a worker process): launches 6 and on flush, restart() gives a new
    worker whose first calls do not (the launch count is per process: R14's fresh worker is
    real), and the report's identity counts the pool's threads."""
    _characterized(ms)
    rng = np.random.default_rng(3)
    calls = [_fp32_call(200, (1.0, 0.5, 0.1)[k % 3], rng) for k in range(7)]
    cases = [Case("fp32", dy, x1, x2, beta) for _, dy, x1, x2, beta, _ in calls]
    with MindSporeAdapter("cpu") as a:
        first = a.run(cases)
        kinds = [_flush_kind(c.dy, c.x1, c.x2, c.beta, o.out) for c, o in zip(cases, first)]
        assert kinds[:5] == ["plain"] * 5 and kinds[5:] == ["flushed"] * 2, kinds
        assert a.restart() and a.calls_made == 0
        again = a.run(cases[:2])
        assert [_flush_kind(c.dy, c.x1, c.x2, c.beta, o.out) for c, o in zip(cases, again)] == ["plain"] * 2
        threads = a.describe()["threads"]
    assert re.match(r"\d+ kernel and \d+ actor threads? in MindSpore's pool, on \d+ CPUs", threads), threads


def test_one_kernel_thread_as_an_option(ms):
    """``mindspore:cpu?threads=1`` sets threads_num(1) in the worker: no call flushes, and the
    name and the threads line say so."""
    _characterized(ms)
    rng = np.random.default_rng(4)
    calls = [_fp32_call(201, (1.0, 2.0 ** -140)[k % 2], rng) for k in range(8)]
    cases = [Case("fp32", dy, x1, x2, beta) for _, dy, x1, x2, beta, _ in calls]
    a = load("mindspore:cpu?threads=1")
    try:
        kinds = [_flush_kind(c.dy, c.x1, c.x2, c.beta, o.out) for c, o in zip(cases, a.run(cases))]
        info = a.describe()
    finally:
        a.close()
    assert kinds == ["plain"] * 8, kinds
    assert a.name == "mindspore:cpu?threads=1" and info["threads"].endswith("threads_num(1) set"), info


@pytest.mark.parametrize("spec, words", [("cpu?threads=0", "threads=0: expected a whole number"),
                                          ("cpu?threads=x", "threads=x: expected a whole number"),
                                          ("cpu?cores=2", "unknown option(s) cores"),
                                          ("cpu?threads", "cannot read the options")])
def test_bad_options_are_one_clear_error(spec, words):
    """No mindspore needed: the options are read before anything starts."""
    with pytest.raises(AdapterError) as err:
        MindSporeAdapter(spec)
    assert words in str(err.value), str(err.value)


# ---------------------------------------------------------------- names, shapes, errors

def test_load_names_map_to_the_adapter(ms):
    for name in ("mindspore", "mindspore:cpu", "mindspore:CPU"):
        a = load(name)
        assert isinstance(a, MindSporeAdapter) and a.name == "mindspore:cpu"
        info = a.describe()
        assert info["mindspore_version"] == ms.__version__ and info["device"] == "CPU"
        assert info["adapter"] == "mindspore:cpu" and info["dtypes"] == list(DTYPES) and info["variants"] == ["p"]


def test_shared_variant_and_in_place_are_not_offered_and_length_zero_writes_nothing(adapter, ms):
    fmt = F.FP32
    row = [_bits(fmt, [2.0, 0.5, -1.0]), _bits(fmt, [3.0, 0.25, 1.0]), _bits(fmt, [0.0] * 3)]
    beta = _beta_bits(fmt, 1.0)
    shared, over, empty, short = adapter.run([Case("fp32", *row, beta, variant="s"),
                                              Case("fp32", *row, beta, out_alias="dy"),
                                              Case("fp32", *row, beta, length=0),
                                              Case("fp32", *row, beta, length=2)])
    assert shared.status == "unsupported" and over.status == "unsupported"
    assert empty.status == "ok" and (empty.out == Case("fp32", *row, beta).initial_out()).all()
    assert short.status == "ok" and (short.out[:2] == _bits(fmt, [2.0, 0.125])).all()  # dy; 0.25 / 1 * 0.5
    assert short.out[2] == Case("fp32", *row, beta).initial_out()[2]


def test_mindspore_is_installed_where_ci_installs_it():
    """Skips without mindspore on a developer machine; fails under CI, which installs it."""
    _require_mindspore()


def test_missing_mindspore_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "mindspore", None)  # import mindspore now raises ImportError
    assert MISSING_MINDSPORE.startswith("mindspore is not installed: pip install mindspore==2.10.0")
    for make in (MindSporeAdapter, lambda: MindSporeAdapter("cpu"), lambda: load("mindspore"),
                 lambda: load("mindspore:cpu")):
        with pytest.raises(AdapterError, match=r"mindspore is not installed: pip install mindspore==2\.10\.0 "
                                               r"\(the optional extra 'mindspore'\)"):
            make()


@pytest.mark.parametrize("device", ["gpu", "ascend", "cpu:0", "cuda", "npu"])
def test_unknown_device_is_a_clear_error(device):
    """No mindspore needed: the device is checked first."""
    want = rf"unknown mindspore device '{device}': only cpu is supported \(mindspore:cpu\)"
    with pytest.raises(AdapterError, match=want):
        MindSporeAdapter(device)
    with pytest.raises(AdapterError, match=want):
        load(f"mindspore:{device}")

"""The torch adapter (``torch``, ``torch:cpu``, ``torch:cuda``): mapping, bit-exact
transport, the clear errors, and the behaviour its docstring records.

Tests that need torch skip when it is not installed, except under CI (the CI
variable set), where CI installs torch and a missing torch fails them. The tests
of the error for a missing torch, and of unknown devices, need no torch.

The bit-for-bit characterisations (which model each CPU code path matches, what
torch does in the open cases) were measured on torch 2.13; on other versions they
skip, since a new torch may legitimately compute differently (then re-measure and
update the docstring of ``sl1conf.adapters.torch_adapter``).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conftest import require_optional
from sl1conf.adapters import AdapterError, Case, load
from sl1conf.adapters.torch_adapter import TorchAdapter
from sl1conf.conformance.vectors.sampling import TYPICAL_BETAS, random_batch
from sl1conf.reference import fast_oracle
from sl1conf.reference import formats as F
from sl1conf.reference.models import get_model

CHARACTERIZED = "2.13"  # the torch version whose bit-level behaviour the docstring records
DTYPES = ("fp16", "fp32")


def _require_torch():
    return require_optional("torch", "pip install torch, the optional extra 'torch'; quickstart.py installs it")


@pytest.fixture(scope="module")
def torch():
    return _require_torch()


@pytest.fixture(scope="module")
def cpu(torch):
    a = TorchAdapter("cpu")
    yield a
    a.close()


def _devices():
    try:
        import torch
        return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    except ImportError:
        return ["cpu"]


@pytest.fixture(scope="module", params=_devices())
def adapter(request, torch):
    a = TorchAdapter(request.param)
    yield a
    a.close()


def _characterized(torch):
    if not torch.__version__.startswith(CHARACTERIZED + "."):
        pytest.skip(f"bit-level behaviour recorded for torch {CHARACTERIZED}, this is {torch.__version__}")


def _bits(fmt, values):
    return np.array(values, dtype=fmt.dtype).view(fmt.uint)


def _beta_bits(fmt, value) -> int:
    return int(_bits(fmt, [value])[0])


def _ordinary(fmt, dy, x1, x2, beta):
    """Finite inputs, no intermediate overflow, nothing near underflow: where every
    honest evaluation order is within 2 ULP of the exact value."""
    tiny, big = 2.0 ** (fmt.emin + 8), float(fmt.max_finite) / 16
    with np.errstate(all="ignore"):
        d = x1.astype(np.float64) - x2.astype(np.float64)
        y = dy.astype(np.float64)
        ok = np.isfinite(d) & np.isfinite(y) & (np.abs(d) < big) & (np.abs(y) < big)
        ok &= (np.abs(y) > tiny) | (y == 0)
        ok &= (np.abs(d / float(beta)) > tiny) | (d == 0)
        r = np.abs(d / float(beta) * y)
        ok &= (r > tiny) | (r == 0) | (np.abs(d) >= float(beta))
    return ok


def _ordinary_batches(dtype, n, count, seed):
    """``count`` (dy, x1, x2, beta bits) of ``random_batch`` data, non-ordinary elements zeroed."""
    fmt = F.format_by_name(dtype)
    rng = np.random.default_rng(seed)
    for k in range(count):
        beta = _beta_bits(fmt, TYPICAL_BETAS[k % len(TYPICAL_BETAS)])
        b = random_batch(fmt, n, rng, beta=beta)
        dy, x1, x2, bf = b.floats(fmt)
        ok = _ordinary(fmt, dy, x1, x2, bf)
        yield tuple(np.where(ok, a, 0).astype(fmt.uint) for a in (b.dy, b.x1, b.x2)) + (beta,)


def _floats(fmt, dy, x1, x2, beta):
    view = lambda a: np.asarray(a, fmt.uint).view(fmt.dtype)  # noqa: E731
    return view(dy), view(x1), view(x2), np.array([beta], fmt.uint).view(fmt.dtype)[0]


def _scalar_rule(dy, x1, x2, beta):
    """torch's scalar CPU path: muldiv-fp32, with diff == +-beta giving +-dy."""
    middle = get_model("muldiv-fp32")(dy, x1, x2, beta)
    with np.errstate(all="ignore"):
        diff = x1.astype(np.float32) - x2.astype(np.float32)
        b = np.float32(beta)
    return np.where(diff <= -b, -dy, np.where(diff >= b, dy, middle)).astype(dy.dtype)


# ---------------------------------------------------------------- against the oracle

@pytest.mark.parametrize("dtype", DTYPES)
def test_ordinary_inputs_within_2_ulp_of_the_oracle(adapter, dtype):
    fmt = F.format_by_name(dtype)
    cases = []
    for n, seed in ((1, 1), (7, 2), (16, 3), (33, 4), (100, 5), (1024, 6), (1025, 7)):
        for i, (dy, x1, x2, beta) in enumerate(_ordinary_batches(dtype, n, 8, seed)):
            cases.append(Case(dtype, dy, x1, x2, beta, variant="ps"[i % 2], id=f"{dtype}-n{n}-{i}"))
    for case, outcome in zip(cases, adapter.run(cases)):
        assert outcome.status == "ok", f"{case.id}: {outcome.status} {outcome.detail}"
        assert not outcome.inputs_changed, f"{case.id}: torch changed {outcome.inputs_changed}"
        want = F.to_bits(fmt, fast_oracle.smoothl1lossgrad(*case.floats()))
        dist = F.ulp_distance(fmt, outcome.out, want)
        worst = int(np.argmax(dist))
        assert dist[worst] <= 2, (
            f"{adapter.name} {case.id} element {worst}: got {F.hex_bits(fmt, outcome.out[worst])}, "
            f"oracle {F.hex_bits(fmt, want[worst])} ({int(dist[worst])} ULP)")


@pytest.mark.parametrize("dtype", DTYPES)
def test_long_calls_are_divmul_fp32_bit_for_bit(cpu, torch, dtype):
    """Calls of a multiple of 32 elements run torch's SIMD path only: divmul-fp32,
    for fp16 too (computed in float, rounded to half once)."""
    _characterized(torch)
    fmt, model = F.format_by_name(dtype), get_model("divmul-fp32")
    other = get_model("muldiv-fp32" if dtype == "fp32" else "divmul-fp16")
    discriminating = 0
    for dy, x1, x2, beta in _ordinary_batches(dtype, 1024, 12, 11):
        out = cpu.run([Case(dtype, dy, x1, x2, beta)])[0].out
        want = model(*_floats(fmt, dy, x1, x2, beta)).view(fmt.uint)
        bad = np.flatnonzero(~F.same_result(fmt, out, want))
        assert bad.size == 0, (f"element {bad[0]}: torch {F.hex_bits(fmt, out[bad[0]])}, "
                               f"divmul-fp32 {F.hex_bits(fmt, want[bad[0]])} ({bad.size} differ)")
        discriminating += int((other(*_floats(fmt, dy, x1, x2, beta)).view(fmt.uint) != want).sum())
    assert discriminating > 0, f"the data cannot tell divmul-fp32 from {other.name}"


@pytest.mark.parametrize("dtype", DTYPES)
def test_short_calls_are_the_scalar_rule_bit_for_bit(cpu, torch, dtype):
    """Calls shorter than a SIMD block run torch's scalar path: muldiv-fp32 with a
    closed boundary. The same elements in a long call give divmul-fp32: torch's
    result depends on where an element sits in the call."""
    _characterized(torch)
    fmt = F.format_by_name(dtype)
    moved = 0
    for dy, x1, x2, beta in _ordinary_batches(dtype, 1022, 12, 12):
        cases = [Case(dtype, dy[i:i + 7], x1[i:i + 7], x2[i:i + 7], beta) for i in range(0, 1022, 7)]
        out = np.concatenate([o.out for o in cpu.run(cases)])
        floats = _floats(fmt, dy, x1, x2, beta)
        want = _scalar_rule(*floats).view(fmt.uint)
        bad = np.flatnonzero(~F.same_result(fmt, out, want))
        assert bad.size == 0, (f"element {bad[0]}: torch {F.hex_bits(fmt, out[bad[0]])}, "
                               f"scalar rule {F.hex_bits(fmt, want[bad[0]])} ({bad.size} differ)")
        if dtype == "fp16":  # the closed boundary changes nothing for fp16 data
            assert (want == get_model("muldiv-fp32")(*floats).view(fmt.uint)).all()
        moved += int((want != get_model("divmul-fp32")(*floats).view(fmt.uint)).sum())
    if dtype == "fp32":
        assert moved > 0, "the data never separates torch's two code paths"


# ---------------------------------------------------------------- hand cases

# (dy, x1, x2, beta, expected dx1): x1 is torch's self (the prediction), x2 its target.
HAND = [
    (0.5, 3.0, 1.0, 1.0, 0.5),      # diff = 2 > beta: dy
    (0.5, 1.0, 3.0, 1.0, -0.5),     # diff = -2 < -beta: -dy
    (-0.5, 1.0, 3.0, 1.0, 0.5),     # -dy with a negative dy
    (2.0, 1.25, 1.0, 0.5, 1.0),     # middle: diff / beta * dy = 0.25 / 0.5 * 2
    (2.0, 1.0, 1.25, 0.5, -1.0),    # middle, negative diff
    (3.0, 1.5, 1.0, 0.5, 3.0),      # diff == beta: dy
    (3.0, 1.0, 1.5, 0.5, -3.0),     # diff == -beta: -dy
    (-3.0, 2.0, 2.0, 0.5, -0.0),    # diff = +0: +0 / beta * -3 = -0
    (0.0, -3.0, 1.0, 1.0, -0.0),    # -dy of +0 is -0
    (float("inf"), 4.0, 0.0, 1.0, float("inf")),
    (2.0, float("-inf"), 0.0, 1.0, -2.0),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", ["p", "s"])
def test_hand_cases_fix_the_sign_convention_and_the_branches(adapter, dtype, variant):
    fmt = F.format_by_name(dtype)
    for dy, x1, x2, beta, want in HAND:
        case = Case(dtype, _bits(fmt, [dy]), _bits(fmt, [x1]), _bits(fmt, [x2]), _beta_bits(fmt, beta),
                    variant=variant)
        outcome = adapter.run([case])[0]
        assert outcome.status == "ok", outcome.detail
        assert outcome.out[0] == _bits(fmt, [want])[0], (
            f"dy={dy} x1={x1} x2={x2} beta={beta}: got {F.hex_bits(fmt, outcome.out[0])}, "
            f"want {want} ({F.hex_bits(fmt, _bits(fmt, [want])[0])})")


# ---------------------------------------------------------------- call shapes

def _nine(dtype):
    fmt = F.format_by_name(dtype)
    dy, x1, x2, beta = next(_ordinary_batches(dtype, 9, 1, 21))
    return fmt, dy, x1, x2, beta


@pytest.mark.parametrize("dtype", DTYPES)
def test_core_mask_zero_and_length_zero_write_nothing(adapter, dtype):
    fmt, dy, x1, x2, beta = _nine(dtype)
    full = adapter.run([Case(dtype, dy, x1, x2, beta, variant="s", core_mask=0xFF)])[0].out
    nothing = [Case(dtype, dy, x1, x2, beta, variant="s", core_mask=0),
               Case(dtype, dy, x1, x2, beta, variant="p", length=0),
               Case(dtype, dy, x1, x2, beta, variant="s", length=-3)]
    for case, outcome in zip(nothing, adapter.run(nothing)):
        assert outcome.status == "ok", outcome.detail
        assert (outcome.out == case.initial_out()).all(), f"wrote into dx1: {case}"
    # Other masks compute everything; p ignores the mask; a short length writes a prefix.
    for case in (Case(dtype, dy, x1, x2, beta, variant="s", core_mask=0x81),
                 Case(dtype, dy, x1, x2, beta, variant="p", core_mask=0)):
        assert F.same_result(fmt, adapter.run([case])[0].out, full).all()
    part = adapter.run([Case(dtype, dy, x1, x2, beta, length=4)])[0].out
    assert F.same_result(fmt, part[:4], full[:4]).all()
    assert (part[4:] == Case(dtype, dy, x1, x2, beta).initial_out()[4:]).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alias", ["dy", "x1", "x2"])
def test_in_place_over_each_input(adapter, dtype, alias):
    fmt, dy, x1, x2, beta = _nine(dtype)
    plain = Case(dtype, dy, x1, x2, beta)
    over = Case(dtype, dy, x1, x2, beta, out_alias=alias)
    before = {name: getattr(over, name).copy() for name in ("dy", "x1", "x2")}
    a, b = adapter.run([plain, over])
    assert b.status == "ok", b.detail
    assert F.same_result(fmt, a.out, b.out).all()
    assert not b.inputs_changed
    for name, bits in before.items():  # the case's own arrays are never written
        assert (getattr(over, name) == bits).all()


def test_describe_names_torch_and_the_device(adapter, torch):
    info = adapter.describe()
    assert info["torch_version"] == torch.__version__
    assert info["device"] == adapter.device
    assert info["adapter"] == f"torch:{adapter.device}"
    assert set(info["dtypes"]) == set(DTYPES)


def test_load_names_map_to_the_adapter(torch):
    assert load("torch").name == "torch:cpu"
    assert load("torch:cpu").name == "torch:cpu"


# ---------------------------------------------------------------- errors

def test_torch_is_installed_where_ci_installs_it():
    """Skips without torch on a developer machine; fails under CI, which installs torch."""
    _require_torch()


def test_missing_torch_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    for make in (lambda: TorchAdapter("cpu"), lambda: TorchAdapter("cuda"), lambda: load("torch"),
                 lambda: load("torch:cuda")):
        with pytest.raises(AdapterError, match=r"torch is not installed: pip install torch.*extra 'torch'"):
            make()


def test_cuda_without_a_gpu_is_a_clear_error(torch):
    if torch.cuda.is_available():
        assert TorchAdapter("cuda").describe()["device"] == "cuda"
        pytest.skip("a CUDA device is present: the no-GPU error cannot be provoked")
    for make in (lambda: TorchAdapter("cuda"), lambda: TorchAdapter("cuda:0"), lambda: load("torch:cuda")):
        with pytest.raises(AdapterError, match="no CUDA device is available"):
            make()


@pytest.mark.parametrize("device", ["gpu", "tpu", "cuda:x", "cpu:0", "cuda:0:1", "CUDA", "mps"])
def test_unknown_device_is_a_clear_error(device):
    with pytest.raises(AdapterError, match="unknown torch device"):
        TorchAdapter(device)
    with pytest.raises(AdapterError, match="unknown torch device"):
        load(f"torch:{device}")


# ---------------------------------------------------------------- the open cases

INF, NAN = float("inf"), float("nan")
# (dy, x1, x2, beta, SIMD path result, scalar path result) with x2 = 0 so diff = x1.
OPEN = [
    (2.0, 0.0, 0.0, 0.0, -2.0, -2.0),    # beta 0, diff 0: -dy (oracle: NaN)
    (2.0, 0.0, 0.0, -0.0, -2.0, -2.0),
    (2.0, -0.0, 0.0, 0.0, -2.0, -2.0),
    (2.0, 0.5, 0.0, 0.0, 2.0, 2.0),      # beta 0: sign(diff) * dy
    (2.0, -0.5, 0.0, 0.0, -2.0, -2.0),
    (2.0, 3.0, 0.0, -1.0, 2.0, 2.0),     # beta < 0: the paths disagree in -|beta| < diff <= |beta|
    (2.0, 0.5, 0.0, -1.0, 2.0, -2.0),
    (2.0, 1.0, 0.0, -1.0, 2.0, -2.0),
    (2.0, 0.0, 0.0, -1.0, -2.0, -2.0),
    (2.0, -0.5, 0.0, -1.0, -2.0, -2.0),
    (2.0, -3.0, 0.0, -1.0, -2.0, -2.0),
    (2.0, 0.5, 0.0, -INF, 2.0, -2.0),    # beta = -inf: scalar path -dy for every diff
    (2.0, INF, 0.0, INF, 2.0, 2.0),      # beta = inf, diff = inf: dy (oracle: NaN)
    (2.0, -INF, 0.0, INF, -2.0, -2.0),
    (2.0, 0.5, 0.0, INF, 0.0, 0.0),      # beta = inf, finite diff: signed zero
    (2.0, -0.5, 0.0, INF, -0.0, -0.0),
    (2.0, 3.0, 0.0, NAN, NAN, NAN),      # NaN beta: NaN
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_open_cases_behave_as_the_docstring_says(cpu, torch, dtype):
    _characterized(torch)
    fmt = F.format_by_name(dtype)
    for dy, x1, x2, beta, simd, scalar in OPEN:
        row = [_bits(fmt, [v] * 32) for v in (dy, x1, x2)]
        long_call = Case(dtype, *row, _beta_bits(fmt, beta))              # 32 elements: SIMD only
        short_call = Case(dtype, *(r[:1] for r in row), _beta_bits(fmt, beta))  # 1 element: scalar
        got_simd, got_scalar = (o.out for o in cpu.run([long_call, short_call]))
        for got, want, path in ((got_simd, simd, "SIMD"), (got_scalar, scalar, "scalar")):
            assert F.same_result(fmt, got, _bits(fmt, [want] * got.size)).all(), (
                f"{path} path, dy={dy} diff={x1} beta={beta}: got {F.hex_bits(fmt, got[0])}, want {want}")


def test_scalar_path_overflows_where_the_formula_does_not(cpu, torch):
    _characterized(torch)
    fmt = F.FP32
    big = float(np.finfo(np.float32).max)
    row = [_bits(fmt, [v] * 32) for v in (big, 2.0, 0.0)]
    long_call, short_call = cpu.run([Case("fp32", *row, _beta_bits(fmt, 4.0)),
                                     Case("fp32", *(r[:1] for r in row), _beta_bits(fmt, 4.0))])
    assert long_call.out[0] == _bits(fmt, [big / 2])[0]
    assert short_call.out[0] == fmt.inf_bits


@pytest.mark.parametrize("beta", ["0", "-1"])
def test_sweep_gives_certifys_verdict_on_torchs_open_answers(torch, tmp_path, capsys, beta):
    """`sl1conf sweep --impl torch:cpu --beta 0|-1 --dy 1 --subset x2=0` passes, as certify does on
    those inputs: torch's answers at beta <= 0 are acceptable alternatives (recorded under R16),
    and every other element is within the budget or an accepted model's bits."""
    import json

    from sl1conf.conformance.cli import main

    code = main(["sweep", "--impl", "torch:cpu", f"--beta={beta}", "--dy", "1", "--subset", "x2=0",
                 "--workers", "1", "--out", str(tmp_path / "s")])
    out = capsys.readouterr().out
    verdict = json.loads((tmp_path / "s" / "sweep.json").read_text())["summary"]["verdict"]
    assert code == 0 and "verdict: PASS" in out and verdict["rejected"] == 0, out
    question = "beta = 0" if beta == "0" else "beta < 0"
    assert verdict["open_answers"][question] and f"open ({question}, R16)" in out

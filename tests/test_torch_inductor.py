"""``torch:inductor`` (``torch:compile``): the op through torch.compile on the CPU, never eager.

Skips without torch (fails under CI, which installs it), as tests/test_torch_adapter.py does.
The characterisations (what the compiled kernel returns) were measured on torch 2.13 and skip
on other versions. One adapter is shared by the module's tests: each distinct beta compiles
a graph, so the tests reuse betas where they can.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import require_optional
from sl1conf.adapters import AdapterError, Case, load
from sl1conf.conformance.requirements.base import ERROR_KINDS
from sl1conf.reference import fast_oracle
from sl1conf.reference import formats as F

CHARACTERIZED = "2.13"
DTYPES = ("fp16", "fp32")
NUMBER_FOR_NAN = "a number where the result is NaN"  # the suite's name for this error kind
NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def torch():
    return require_optional("torch", "pip install torch, the optional extra 'torch'; quickstart.py installs it")


@pytest.fixture(scope="module")
def inductor(torch):
    a = load("torch:inductor")
    yield a
    a.close()


def _characterized(torch):
    if not torch.__version__.startswith(CHARACTERIZED + "."):
        pytest.skip(f"bit-level behaviour recorded for torch {CHARACTERIZED}, this is {torch.__version__}")


def _case(dtype, dy, x1, x2, beta, n=1):
    """One value per argument, repeated n times (n = 40: the vector loop and its tail)."""
    fmt = F.format_by_name(dtype)
    bits = lambda v: np.array(v, fmt.dtype).view(fmt.uint)  # noqa: E731
    return Case(dtype, bits([dy] * n), bits([x1] * n), bits([x2] * n), int(bits([beta])[0]))


def _value(dtype, bits) -> float:
    fmt = F.format_by_name(dtype)
    return float(np.asarray(bits, fmt.uint).view(fmt.dtype)[0])


def test_names_load_the_compiled_adapter(torch):
    assert load("torch:inductor").name == "torch:inductor"
    assert load("torch:compile").name == "torch:inductor"
    assert load("torch:inductor:cpu").describe()["op"].startswith("torch.compile(backend='inductor'")
    with pytest.raises(AdapterError, match="CPU only"):
        load("torch:inductor:cuda")


# (dy, x1, x2, beta, compiled result): x2 = 0 so diff = x1. The oracle's answer differs in the
# rows marked *, which the docstring records (NaN x1 -> signed zero; the open cases).
ROWS = [
    (2.0, NAN, 0.0, 1.0, 0.0),       # * NaN diff: dy * sign(NaN) = dy * 0 (oracle NaN)
    (-2.0, NAN, 0.0, 1.0, -0.0),     # *   with dy's sign
    (2.0, INF, INF, 1.0, 0.0),       # * inf - inf: NaN diff, the same
    (NAN, 0.5, 0.0, 1.0, NAN),       # NaN dy: NaN
    (2.0, 0.25, 0.0, 1.0, 0.5),      # middle: 0.25 * 2 / 1
    (2.0, 1.0, 0.0, 1.0, 2.0),       # diff == beta: dy
    (2.0, -1.0, 0.0, 1.0, -2.0),     # diff == -beta: -dy
    (2.0, 0.0, 0.0, 0.0, 0.0),       # * beta 0, diff 0: dy * sign(0) (oracle NaN)
    (2.0, 0.5, 0.0, -1.0, 2.0),      # * beta < 0: sign(diff) * dy
    (2.0, 0.5, 0.0, NAN, 2.0),       # * NaN beta: sign(diff) * dy (oracle NaN)
    (2.0, INF, 0.0, INF, 2.0),       # * beta = inf, diff = inf: dy (oracle NaN)
    (2.0, 0.5, 0.0, INF, 0.0),       # beta = inf, finite diff: a signed zero
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_kernel_answers_as_the_docstring_says(inductor, torch, dtype):
    """Each row in a call of 1 and in one of 40 elements (vector loop and tail): the same answer
    everywhere, where eager torch's result depends on the element's position."""
    _characterized(torch)
    fmt = F.format_by_name(dtype)
    for dy, x1, x2, beta, want in ROWS:
        for n in (1, 40):
            case = _case(dtype, dy, x1, x2, beta, n)
            outcome = inductor.run([case])[0]
            assert outcome.status == "ok", outcome.detail
            expected = np.array([want] * n, fmt.dtype).view(fmt.uint)
            assert F.same_result(fmt, outcome.out, expected).all(), (
                f"{dtype} n={n} dy={dy} x1={x1} beta={beta}: got {_value(dtype, outcome.out)}, want {want}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_input_gives_a_number_where_the_oracle_and_eager_torch_give_nan(inductor, torch, dtype):
    _characterized(torch)
    case = _case(dtype, 2.0, NAN, 0.0, 1.0, n=40)
    assert np.isnan(fast_oracle.smoothl1lossgrad(*case.floats())).all()  # the ground truth
    eager = load("torch:cpu").run([case])[0]
    assert np.isnan(_value(dtype, eager.out))
    compiled = inductor.run([case])[0]
    assert compiled.status == "ok" and _value(dtype, compiled.out) == 0.0


def test_certify_fails_r04_with_a_number_where_the_result_is_nan(torch, tmp_path):
    """The full certification's one failure, in both dtypes: NaN x1 or x2 gives a number."""
    from sl1conf.conformance.cli import main

    assert NUMBER_FOR_NAN in ERROR_KINDS
    code = main(["certify", "--impl", "torch:inductor", "--platform", "ieee", "--quick", "--variant", "p",
                 "--only", "R04", "--out", str(tmp_path / "r")])
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert code == 1 and report["verdict"] == "fail"
    assert sorted(run["dtype"] for run in report["runs"]) == ["fp16", "fp32"]
    for run in report["runs"]:
        [r04] = [q for q in run["requirements"] if q["id"] == "R04"]
        assert r04["status"] == "fail", run["dtype"]
        assert r04["bulk"]["kind"] == NUMBER_FOR_NAN and r04["bulk"]["failed"] == r04["failed"] > 0
        worst = r04["worst"]
        assert worst["ulp"] == NUMBER_FOR_NAN
        fmt = F.format_by_name(run["dtype"])
        got, expected = (np.array([int(worst[k], 16)], fmt.uint) for k in ("got", "expected"))
        assert np.isnan(_value(run["dtype"], expected)) and _value(run["dtype"], got) == 0.0
    assert NUMBER_FOR_NAN in (tmp_path / "r" / "report.md").read_text()


# ---------------------------------------------------------------- never eager

def test_an_eager_fallback_is_an_error_not_a_result(inductor, torch):
    """Under the stance force_eager dynamo runs the function eagerly without a word: the
    adapter sees that no compiled graph ran and answers error."""
    case = _case("fp32", 2.0, 0.25, 0.0, 1.0, n=40)
    assert inductor.run([case])[0].status == "ok"
    with torch.compiler.set_stance("force_eager"):
        outcome = inductor.run([case])[0]
    assert outcome.status == "error" and outcome.out is None
    assert "the compiled kernel did not run: torch.compile ran the op eagerly" in outcome.detail
    assert inductor.run([case])[0].status == "ok"  # and it compiles again afterwards


def test_the_recompile_limit_is_an_error_not_an_eager_result(torch, monkeypatch):
    from sl1conf.adapters import torch_compile

    adapter = load("torch:inductor")
    monkeypatch.setattr(torch_compile, "RECOMPILE_LIMIT", 1)
    first = adapter.run([_case("fp16", 2.0, 0.25, 0.0, 1.0, n=8)])[0]
    assert first.status == "ok"
    other_beta = adapter.run([_case("fp16", 2.0, 0.25, 0.0, 0.5, n=8)])[0]  # a second graph: past the limit
    assert other_beta.status == "error" and other_beta.out is None
    assert other_beta.detail == ("NotCompiled: the compiled kernel did not run: dynamo reached its "
                                 "recompile limit (1 graphs) for fp16")


def test_no_cpp_compiler_is_an_error(torch):
    import torch._inductor.config as inductor_config

    adapter = load("torch:inductor")
    with inductor_config.patch({"cpp.cxx": ("/nonexistent/g++",), "fx_graph_cache": False}):
        outcome = adapter.run([_case("fp32", 2.0, 0.25, 0.0, 3.0, n=8)])[0]
    assert outcome.status == "error" and outcome.out is None
    assert outcome.detail.startswith("NotCompiled: the compiled kernel did not run: ")
    assert "C++ compiler" in outcome.detail

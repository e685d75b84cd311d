"""The JAX adapter (``jax``, ``jax:cpu``): the kernel a JAX user writes, differentiated by
``jax.vjp`` and compiled by XLA on the CPU, reproduces bit for bit the facts its docstring
records, each checked on elements derived here by hand (exact arithmetic with Fraction, or
numpy's correctly rounded float16/float32 operations in the order the facts state), never
with the suite's own oracle or models.

Tests that need jax skip when it is not installed (``python3 quickstart.py test --with-jax``
installs it), except under CI (the CI variable set), where .ci/run installs it and a missing jax
fails them; the bit-level facts were measured on jax 0.10.2 and skip on other versions (a
new JAX may legitimately differentiate or compile differently: then re-measure and update the
docstring of ``sl1conf.adapters.jax_adapter``). The tests of the clear errors need no jax.
"""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from sl1conf.adapters import AdapterError, Case
from sl1conf.adapters.jax_adapter import MISSING_JAX, JaxAdapter
from conftest import require_optional

CHARACTERIZED = "0.10.2"  # the jax version whose bit-level behaviour the docstring records
INF = float("inf")
F16 = (np.float16, np.uint16)
F32 = (np.float32, np.uint32)


@pytest.fixture(scope="module")
def jax():
    install = "pip install jax==0.10.2 jaxlib==0.10.2, or python3 quickstart.py test --with-jax, as .ci/run does"
    jax = require_optional("jax", install)
    require_optional("jaxlib", install)
    return jax


@pytest.fixture(scope="module")
def adapter(jax):
    a = JaxAdapter("cpu")
    yield a
    a.close()


@pytest.fixture(scope="module")
def characterized(jax):
    if jax.__version__ != CHARACTERIZED:
        pytest.skip(f"bit-level behaviour recorded for jax {CHARACTERIZED}, this is {jax.__version__}")


def _case(fmt, dy, x1, x2, beta, **kw) -> Case:
    ftype, utype = fmt
    arr = lambda v: np.array(v, ftype).view(utype)  # noqa: E731  (the values are exact in the type)
    return Case("fp16" if ftype is np.float16 else "fp32", arr(dy), arr(x1), arr(x2),
                int(np.array(beta, ftype).view(utype)), **kw)


def _run(adapter, case) -> np.ndarray:
    outcome = adapter.run([case])[0]
    assert outcome.status == "ok", outcome.detail
    return outcome.out


def _exact_to_float32_bits(value: Fraction, ulp: Fraction) -> int:
    """``value``, a positive number known to lie in one binade of ulp ``ulp``, rounded to the
    nearest multiple of ``ulp`` (ties to even), as float32 bits."""
    units = value / ulp
    down = units.numerator // units.denominator
    rest = units - down
    n = down + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and down % 2) else 0)
    return int(np.array(float(n * ulp), np.float32).view(np.uint32))  # n * ulp is exact in float32


# ---------------------------------------------------------------- the four facts, by hand


def test_a_the_middle_line_is_dy_over_beta_times_diff(adapter, characterized):
    """(a) fp32 dy = 1, beta = 3, diff = x1 - x2 = 1 + 2^-22 (exact: x2 = 0).

    Exact result: dy * diff / beta = (2^22 + 1) / (3 * 2^22), about 0.3333, in [2^-2, 2^-1),
    where float32's ulp is 2^-25; in ulps: (2^22 + 1) * 2^3 / 3 = (2^25 + 8) / 3 =
    11184813 + 1/3, so the correctly rounded result is 11184813 * 2^-25.

    JAX: q = dy / beta = RN(1/3) = 11184811 * 2^-25 (1/3 = 11184810.67 ulps of 2^-25, rounded
    up: q is 1/3 * (1 + 2^-25)); q * diff = 11184811 * (2^23 + 2) * 2^-48 = (11184811 +
    22369622 / 2^23) * 2^-25 = 11184813.67 * 2^-25, rounded to 11184814 * 2^-25: one ulp above
    the correctly rounded result. The first rounding (q's, a third of an ulp too large, scaled
    by diff) pushes the product past the midpoint the exact value lay below. Neither of the
    suite's orders gives it: (diff / beta) * dy rounds the exact quotient once (11184813), and
    (diff * dy) / beta divides the exact product diff (11184813) too. JAX's middle line is
    (0.5 * diff) * q + 0.5 * (q * diff): halving is exact here, so the sum is RN(q * diff)."""
    ulp = Fraction(1, 2 ** 25)
    diff = 1 + Fraction(1, 2 ** 22)
    exact = _exact_to_float32_bits(diff / 3, ulp)
    q = Fraction(11184811, 2 ** 25)
    assert q == Fraction(float(np.float32(1) / np.float32(3)))  # the hand value of RN(1/3), checked
    jax_order = _exact_to_float32_bits(q * diff, ulp)
    assert exact == (125 << 23) | (11184813 - 2 ** 23)  # 11184813 * 2^-25: exponent -2, biased 125
    assert jax_order == exact + 1
    x1 = float(diff)  # 1 + 2^-22: exact in float32
    out = _run(adapter, _case(F32, [1.0], [x1], [0.0], 3.0))
    assert int(out[0]) == jax_order, (hex(int(out[0])), hex(jax_order), hex(exact))


@pytest.mark.parametrize("fmt", [F16, F32], ids=["fp16", "fp32"])
def test_a_on_ordinary_data_every_element_is_that_order_rounded_in_the_type(adapter, characterized, fmt):
    """(a) and the outer lines on ordinary data (finite, normal, beta in [2^-3, 2^3], no
    intermediate near overflow or underflow): the middle line is RN(RN(dy / beta) * diff) in
    the data type, the outer lines +-dy, with numpy's correctly rounded operations of that type
    (float16 operations round each result to half)."""
    ftype, utype = fmt
    rng = np.random.default_rng(20260439)
    n = 4000
    beta = ftype(2.0 ** rng.integers(-3, 4) * rng.uniform(1, 2))
    dy = (rng.uniform(-8, 8, n)).astype(ftype)
    x1 = (rng.uniform(-4, 4, n) * float(beta)).astype(ftype)
    x2 = (rng.uniform(-4, 4, n) * float(beta)).astype(ftype)
    with np.errstate(all="raise"):
        diff = x1 - x2
        keep = (np.abs(diff) >= ftype(2 ** -6)) & (np.abs(dy) >= ftype(2 ** -6))  # no subnormal anywhere
        dy, x1, x2, diff = dy[keep], x1[keep], x2[keep], diff[keep]
        middle = np.abs(diff) < beta
        want = np.where(middle, (dy / beta) * diff, np.where(diff > 0, dy, -dy)).astype(ftype)
    assert 500 < middle.sum() < len(dy) - 500  # both lines are exercised
    out = _run(adapter, _case(fmt, dy, x1, x2, beta))
    differ = np.flatnonzero(out != want.view(utype))
    assert not differ.size, (f"{differ.size} of {len(dy)} differ, first: dy={dy[differ[0]]!r} x1={x1[differ[0]]!r} "
                             f"x2={x2[differ[0]]!r} beta={beta!r}: got {out[differ[0]]:#x}, "
                             f"want {want.view(utype)[differ[0]]:#x}")


def test_b_in_half_dy_over_beta_overflows(adapter, characterized):
    """(b) fp16 dy = 60000, beta = 0.5, diff = 0.25: exact dy * diff / beta = 30000, finite in
    half (30000 = 1875 * 16, half's ulp in [2^14, 2^15) is 16). JAX forms dy / beta = 120000
    first, past half's largest finite value 65504 (anything from 65520 rounds to inf), then
    inf * 0.25 = inf: +inf, 0x7c00."""
    exact = Fraction(60000) * Fraction(1, 4) / Fraction(1, 2)
    assert exact == 30000 and float(np.float16(30000)) == 30000.0
    assert 60000 / 0.5 >= 65520  # rounds to +inf in half
    out = _run(adapter, _case(F16, [60000.0], [0.25], [0.0], 0.5))
    assert int(out[0]) == 0x7C00, hex(int(out[0]))


@pytest.mark.parametrize("fmt", [F16, F32], ids=["fp16", "fp32"])
def test_c_the_unused_branchs_gradient_makes_an_infinite_diff_nan(adapter, characterized, fmt):
    """(c) x2 = -inf, x1 = 1, dy = 2, beta = 1: diff = +inf > beta, exact result dy = 2. JAX
    also differentiates the middle branch with the cotangent +0 it sends there: q = 0 / beta =
    0, and (0.5 * diff) * q = inf * 0 = NaN, added to the result: NaN. The same with x1 = +inf
    (x2 finite) and with the result -dy (x2 = +inf)."""
    ftype, utype = fmt
    out = _run(adapter, _case(fmt, [2.0, 2.0, 2.0, 2.0], [1.0, INF, 1.0, 1.0], [-INF, 1.0, INF, 0.5], 1.0))
    got = out.view(ftype)
    assert np.isnan(got[:3]).all(), out          # exact: 2, 2, -2
    assert got[3] == ftype(1.0)                  # a finite diff in the middle line: (2 / 1) * 0.5 = 1


@pytest.mark.parametrize("fmt", [F16, F32], ids=["fp16", "fp32"])
def test_d_plus_zero_is_added_so_a_zero_loses_its_sign(adapter, characterized, fmt):
    """(d) dy = -1, x1 = x2 = 1, beta = 1: diff = 1 - 1 = +0, middle line, exact result
    (+0 / 1) * -1 = -0. JAX: the middle line gives (0.5 * +0) * -1 + 0.5 * (-1 * +0) = -0 + -0
    = -0, then adds the outer lines' cotangent, +0 here: -0 + +0 = +0 (round to nearest), and
    +0 + -(+0) = +0. So +0: all bits clear, where the exact result has only the sign bit. An
    outer line's -0 (dy = -0, diff = 2 > beta) goes the same way."""
    ftype, utype = fmt
    sign = int(np.array(-0.0, ftype).view(utype))
    out = _run(adapter, _case(fmt, [-1.0, -0.0], [1.0, 2.0], [1.0, 0.0], 1.0))
    assert sign != 0 and [int(v) for v in out] == [0, 0], out


def test_e_fp32_subnormals_are_flushed_fp16_ones_kept(adapter, characterized):
    """(e) XLA's CPU executable runs with FTZ and DAZ: fp32 dy = 1, x1 = 2^-130, x2 = 0,
    beta = 1 (middle line, exact result 2^-130, a subnormal float32: bits 2^-130 / 2^-149 =
    2^19) gives +0; dy = 2^-130 with diff = 2 > beta (exact result dy itself) gives +0 too,
    the subnormal dy read through an addition."""
    tiny = 2.0 ** -130
    assert int(np.array(tiny, np.float32).view(np.uint32)) == 1 << 19
    out = _run(adapter, _case(F32, [1.0, tiny], [tiny, 2.0], [0.0, 0.0], 1.0))
    assert [int(v) for v in out] == [0, 0], out
    # fp16 keeps them: dy = 1, x1 = 2^-20 (a subnormal half: 2^-20 / 2^-24 = 16, bits 0x0010),
    # x2 = 0, beta = 1 gives 2^-20 exactly ((1 / 1) * 2^-20); dy = 2^-20 with diff = 2 gives dy.
    half = _run(adapter, _case(F16, [1.0, 2.0 ** -20], [2.0 ** -20, 2.0], [0.0, 0.0], 1.0))
    assert [int(v) for v in half] == [0x0010, 0x0010], half


def test_f_the_suites_own_thread_keeps_gradual_underflow(adapter, characterized):
    """The flushing stays in the worker: this process still makes subnormals."""
    _run(adapter, _case(F32, [1.0], [2.0 ** -130], [0.0], 1.0))
    assert np.float32(2.0 ** -75) * np.float32(2.0 ** -60) == np.float32(2.0 ** -135)


def test_g_the_grammar_names_the_jax_order_bit_for_bit(adapter, characterized):
    """R17's grammar (reference.orders) holds the JAX order: dy-divmul-halved-ge-grad in half, and in
    float dy-divmul-halved-ge-gradfma flushed (-ftz). The graph ``jax.jit(smooth_l1_grad).lower(...)
    .as_text()`` (jax 0.10.2, fp16; fp32 the same with f32), with d = %0, mid = %3, ge = %7::

        %0 = stablehlo.subtract %arg1, %arg2          d = x1 - x2
        %3 = stablehlo.compare LT, |d|, beta          mid = |d| < beta
        %5 = stablehlo.multiply 0.5, %0               0.5 * d
        %7 = stablehlo.compare GE, %0, 0              d >= 0
        %8:2 = call @_where(%3, dy)                   (mid ? dy : 0, mid ? 0 : dy)
        %10 = select %7, 0, %8#1;  %11 = select %7, %8#1, 0
        %13 = add %11, negate(%10)                    A: dy, +0 - dy or +0 - +0
        %15 = divide %8#0, beta                       q = ym / beta
        %16 = multiply %5, %15;  %17 = add %13, %16   A + (0.5 * d) * q
        %18 = multiply %15, %0;  %20 = multiply 0.5, %18
        %21 = add %17, %20                            + 0.5 * (q * d)

    and ``.compile().as_text()`` keeps that order in one loop fusion; on the CPU in float the
    multiplies feed the adds unrounded (a fused multiply-add: a product that underflows keeps its sign)
    and subnormals are flushed (DAZ/FTZ). Elements by hand (tests/test_order_discovery.py derives each):
    half diff = 2^-24 and 3 * 2^-24 with dy = beta = 1 (the halved sum gives +0 and 2^-22 where the plain
    shape gives 2^-24 and 3 * 2^-24); float dy = -2^-100, diff = 2^-30, beta = 1 (fused and flushed: -0;
    rounded and flushed: +0; unflushed: -2^-130) and beta = 2^-149 with dy = 1, diff = 1 (flushed: 0 / 0,
    NaN; unflushed: 1)."""
    from sl1conf.reference import formats as F
    from sl1conf.reference import orders as O
    s = 2.0 ** -24
    half = _run(adapter, _case(F16, [1.0, 1.0, 1.0], [s, 3 * s, 0.5], [0.0, 0.0, 0.0], 1.0))
    assert [int(v) for v in half] == [0x0000, int(np.array(4 * s, np.float16).view(np.uint16)), 0x3800], half
    arr = lambda v: np.array(v, np.float16)  # noqa: E731
    ours = O.evaluate_many(F.FP16, [(O.parse("dy-divmul-halved-ge-grad"), np.float16)], arr([1.0] * 3),
                           arr([s, 3 * s, 0.5]), arr([0.0] * 3), np.float16(1))[0].view(np.uint16)
    assert ours.tolist() == [int(v) for v in half]
    sub = float(np.array([1], np.uint32).view(np.float32)[0])
    for dy, x1, beta, want in ((-2.0 ** -100, 2.0 ** -30, 1.0, 0x80000000), (1.0, 1.0, sub, None)):
        out = _run(adapter, _case(F32, [dy], [x1], [0.0], beta))
        a = lambda v: np.array([v], np.float32)  # noqa: E731
        ours = O.evaluate_many(F.FP32, [(O.parse("dy-divmul-halved-ge-gradfma"), np.float32, True)], a(dy), a(x1),
                               a(0.0), np.float32(beta))[0].view(np.uint32)
        if want is None:
            assert np.isnan(np.asarray(out, np.uint32).view(np.float32)).all() and np.isnan(ours.view(np.float32)).all()
        else:
            assert int(out[0]) == want == int(ours[0])
    # tininess before rounding: dy = 2, x1 = 0, x2 = (2 - 2^-23) * 2^-126, beta = 1: 0.5 * diff, exactly below
    # the smallest normal though it rounds to it, is flushed, and the result is diff itself (0x80ffffff)
    x2 = float(np.array([0x00FFFFFF], np.uint32).view(np.float32)[0])
    assert [int(v) for v in _run(adapter, _case(F32, [2.0], [0.0], [x2], 1.0))] == [0x80FFFFFF]


# ---------------------------------------------------------------- variants, lengths, identity


def test_shared_is_the_same_call_and_core_mask_zero_and_length_zero_write_nothing(adapter, jax):
    row = ([2.0, 0.5, -1.0], [3.0, 0.25, 1.0], [0.0, 0.0, 0.0], 1.0)
    plain = _case(F32, *row)
    p, s, s5, none, empty, short, over = adapter.run([
        plain, _case(F32, *row, variant="s"), _case(F32, *row, variant="s", core_mask=5),
        _case(F32, *row, variant="s", core_mask=0), _case(F32, *row, length=0), _case(F32, *row, length=2),
        _case(F32, *row, out_alias="dy")])
    want = np.array([2.0, 0.125, -1.0], np.float32).view(np.uint32)  # dy; (0.5 / 1) * 0.25; -dy
    assert p.status == s.status == s5.status == "ok"
    assert (p.out == want).all() and (s.out == want).all() and (s5.out == want).all()
    assert none.status == "ok" and (none.out == plain.initial_out()).all()
    assert empty.status == "ok" and (empty.out == plain.initial_out()).all()
    assert short.status == "ok" and (short.out[:2] == want[:2]).all() and short.out[2] == plain.initial_out()[2]
    assert over.status == "unsupported"


def test_the_worker_restarts_fresh_and_describe_says_what_ran(adapter, jax):
    import jaxlib
    assert adapter.name == "jax:cpu" and adapter.dtypes == ("fp16", "fp32") and adapter.variants == ("s", "p")
    assert adapter.capabilities.isolated and not adapter.capabilities.in_place
    assert adapter.restart() and adapter.calls_made == 0
    info = adapter.describe()
    assert info["jax_version"] == jax.__version__ and info["jaxlib_version"] == jaxlib.__version__
    assert info["backend"] == "cpu" and info["x64"] is False and "XLA's CPU pool" in info["threads"]
    assert info["process"].startswith("a worker process of its own")


def test_the_cpu_and_32_bit_types_are_forced_whatever_the_environment(jax, monkeypatch):
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    with JaxAdapter("cpu") as a:
        info = a.describe()
        out = _run(a, _case(F16, [1.0], [0.25], [0.0], 0.5))
    assert info["backend"] == "cpu" and info["x64"] is False
    assert int(out[0]) == int(np.array(0.5, np.float16).view(np.uint16))  # (1 / 0.5) * 0.25, in half


def test_load_names_map_to_the_adapter(jax):
    from sl1conf.adapters import load
    for name in ("jax", "jax:cpu", "jax:CPU"):
        with load(name) as a:
            assert isinstance(a, JaxAdapter) and a.name == "jax:cpu"


# ---------------------------------------------------------------- without jax


def test_importing_the_suite_and_the_adapter_module_needs_no_jax():
    code = ("import sys; import sl1conf.adapters, sl1conf.adapters.jax_adapter, sl1conf.conformance.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_missing_jax_is_one_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # import jax (and find_spec) now fail
    assert MISSING_JAX == "jax is not installed: pip install jax==0.10.2 jaxlib==0.10.2 (the optional extra 'jax')"
    for make in (JaxAdapter, lambda: JaxAdapter("cpu")):
        with pytest.raises(AdapterError) as err:
            make()
        assert str(err.value) == MISSING_JAX


@pytest.mark.parametrize("device", ["gpu", "cuda", "tpu", "cpu:0"])
def test_unknown_device_is_a_clear_error(device):
    """No jax needed: the device is checked first."""
    with pytest.raises(AdapterError, match=rf"unknown jax device '{device}': only cpu is supported \(jax:cpu\)"):
        JaxAdapter(device)

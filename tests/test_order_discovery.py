"""R17 discovers the evaluation order: it searches the grammar of orders (reference.orders) on the
elements where the enumerated models disagree or differ from the implementation, names the order
that matches bit for bit in words, or says the closest and the best split honestly; a profile that
names a found order in [error_model.orders] accepts a kernel of that order (issue 39, item 1).

The kernels are plain numpy, step by step: every float16 (float32) operation numpy makes is rounded
to that type, so each kernel is the order it is written as, independently of the code under test."""

from __future__ import annotations

import json
import re
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

from sl1conf.conformance.cli import main
from sl1conf.conformance.rules.profiles import PROFILE_DIR, ProfileError, load_profile
from sl1conf.reference import formats as F
from sl1conf.reference import orders as O
from sl1conf.reference.reachable import IEEE, ErrorModel, point, reach

ROOT = Path(__file__).resolve().parents[1]

KERNELS = '''
import numpy as np


def dy_first_half(dy, x1, x2, beta):
    """(dy / beta) * diff in the data type, each step rounded; the manual's branches."""
    with np.errstate(all="ignore"):
        diff = x1 - x2
        q = dy / beta
        mid = q * diff
        return np.where(diff > beta, dy, np.where(diff < -beta, -dy, mid))


def dy_first_float(dy, x1, x2, beta):
    """(dy / beta) * diff in float32, rounded once to the data type at the end."""
    with np.errstate(all="ignore"):
        y, a, c, b = dy.astype(np.float32), x1.astype(np.float32), x2.astype(np.float32), np.float32(beta)
        diff = a - c
        q = y / b
        mid = q * diff
        return np.where(diff > b, y, np.where(diff < -b, -y, mid)).astype(dy.dtype)


def autodiff_half(dy, x1, x2, beta):
    """What an autodiff gives: (dy / beta) * diff in the data type, the outer lines from
    |diff| >= beta (a where on |diff| < beta), plus the other branch's gradient 0 * diff."""
    with np.errstate(all="ignore"):
        diff = x1 - x2
        mid = (dy / beta) * diff
        line = np.where(diff >= beta, dy, np.where(diff <= -beta, -dy, mid))
        return line + dy.dtype.type(0) * diff


def halved_half(dy, x1, x2, beta):
    """jax.vjp of where(|d| < beta, 0.5 * d * d / beta, |d| - 0.5 * beta), as its graph computes it, each
    step rounded to half: q = (mid ? dy : 0) / beta, A = (d >= 0 ? o : 0) + -(d >= 0 ? 0 : o) with o = (mid ?
    0 : dy), the result (A + (0.5 * d) * q) + 0.5 * (q * d)."""
    with np.errstate(all="ignore"):
        t = dy.dtype.type
        d = x1 - x2
        mid = np.abs(d) < beta
        zero = np.zeros_like(dy)
        o = np.where(mid, zero, dy)
        up = d >= t(0)
        a = np.where(up, o, zero) + -np.where(up, zero, o)
        q = np.where(mid, dy, zero) / t(beta)
        return (a + (t(0.5) * d) * q) + t(0.5) * (q * d)


def muldiv_float(dy, x1, x2, beta):
    """(diff * dy) / beta in float32: the enumerated model muldiv-fp32."""
    with np.errstate(all="ignore"):
        y, a, c, b = dy.astype(np.float32), x1.astype(np.float32), x2.astype(np.float32), np.float32(beta)
        diff = a - c
        mid = (diff * y) / b
        return np.where(diff > b, y, np.where(diff < -b, -y, mid)).astype(dy.dtype)


def sloppy_reciprocal(dy, x1, x2, beta):
    """(diff * dy) * (1 / beta) in float32 with 1 / beta one ULP off: no order of the grammar."""
    with np.errstate(all="ignore"):
        y, a, c, b = dy.astype(np.float32), x1.astype(np.float32), x2.astype(np.float32), np.float32(beta)
        diff = a - c
        r = np.float32(1) / b
        if np.isfinite(r) and r != 0:
            r = np.nextafter(r, np.float32(np.inf))
        mid = (diff * y) * r
        return np.where(diff > b, y, np.where(diff < -b, -y, mid)).astype(dy.dtype)
'''


@pytest.fixture()
def kernels(tmp_path):
    path = tmp_path / "order_kernels.py"
    path.write_text(textwrap.dedent(KERNELS))
    return path


def _certify(capsys, tmp_path, impl, profile, dtype, out):
    code = main(["certify", "--impl", impl, "--platform", str(profile), "--quick", "--dtype", dtype, "--variant", "p",
                 "--out", str(tmp_path / out)])
    text = capsys.readouterr()
    assert code in (0, 1), text.out + text.err
    report = json.loads((tmp_path / out / "report.json").read_text())
    (run,) = report["runs"]
    return {q["id"]: q for q in run["requirements"]}


def _r17(reqs) -> str:
    obs = reqs["R17"]["observed"]
    return obs if isinstance(obs, str) else ", ".join(obs)


# ---------------------------------------------------------------- the grammar, by hand

def test_the_grammar_names_and_words():
    names = [o.name for o in O.grammar()]
    assert len(names) == len(set(names)) == 8 * 2 * 6
    assert names[:4] == ["divmul", "recipmul", "muldiv", "mulrecip"]  # the error model's orders keep their names
    for name in names:
        assert O.parse(name).name == name
        assert re.fullmatch(O.NAME_PATTERN, name)
    assert O.parse("dy-divmul").words("fp16") == "(dy / beta) * diff in half"
    assert O.parse("dy-recipmul-ge-plus0diff").words("fp32") == (
        "(dy * (1 / beta)) * diff in float, the outer lines from |diff| >= beta, plus 0 * diff")
    assert O.parse("clamp-divmul") is None and O.parse("dy-muldiv") is None
    schema = json.loads((ROOT / "conformance" / "schemas" / "profile.schema.json").read_text())
    pattern = schema["properties"]["error_model"]["properties"]["orders"]["propertyNames"]["pattern"]
    assert all(re.search(pattern, n) for n in names + ["clamp-recipmul", "clamp-divmul"])
    assert not re.search(pattern, "dy-muldiv") and not re.search(pattern, "divmul-fp16")


def test_the_evaluator_is_the_order_step_by_step():
    """evaluate_many against numpy float16 arithmetic written out here, and point (the intervals) the same."""
    rng = np.random.default_rng(39)
    H = F.FP16
    n = 20000
    dy = rng.standard_normal(n).astype(np.float16) * np.float16(3)
    x1 = rng.standard_normal(n).astype(np.float16)
    x2 = rng.standard_normal(n).astype(np.float16)
    beta = np.float16(0.7)
    with np.errstate(all="ignore"):
        d = x1 - x2
        half = np.where(d > beta, dy, np.where(d < -beta, -dy, (dy / beta) * d))
        ge = np.where(d >= beta, dy, np.where(d <= -beta, -dy, (dy / beta) * d)) + np.float16(0) * d
        y32, d32 = dy.astype(np.float32), x1.astype(np.float32) - x2.astype(np.float32)
        b32 = np.float32(beta)
        flt = np.where(d32 > b32, y32, np.where(d32 < -b32, -y32, (d32 * y32) * (np.float32(1) / b32))).astype(np.float16)
    got = O.evaluate_many(H, [(O.parse("dy-divmul"), np.float16), (O.parse("dy-divmul-ge-plus0diff"), np.float16),
                              (O.parse("mulrecip"), np.float32)], dy, x1, x2, beta)
    for mine, theirs in zip(got, (half, ge, flt)):
        assert np.array_equal(mine.view(np.uint16), theirs.view(np.uint16))
    assert np.array_equal(point(H, "dy-divmul", "data", dy, x1, x2, beta).view(np.uint16), half.view(np.uint16))
    assert np.array_equal(point(H, "dy-divmul-ge-plus0diff", "data", dy, x1, x2, beta).view(np.uint16),
                          ge.view(np.uint16))
    # the two orders part somewhere on these elements (else the search could not tell them apart)
    divmul = np.where(d > beta, dy, np.where(d < -beta, -dy, (d / beta) * dy))
    assert (divmul.view(np.uint16) != half.view(np.uint16)).sum() > 100


def _one(fmt, order, P, flush, dy, x1, x2, beta):
    """One evaluation's bits on elements given as values exact in the data type."""
    t = fmt.dtype.type
    arr = lambda v: np.array(v, fmt.dtype)  # noqa: E731
    return O.evaluate_many(fmt, [(O.parse(order), P, flush)], arr(dy), arr(x1), arr(x2), t(beta))[0].view(fmt.uint)


def test_the_halved_sum_differs_from_the_plain_shape_where_a_half_is_inexact():
    """The halved shape (what jax.vjp makes of 0.5 * d * d / beta) against (dy / beta) * diff in half, on
    elements derived by hand, with dy = 1 and beta = 1 (so q = dy / beta = 1 exactly):

    * diff = 2^-24 (half's smallest subnormal; x1 = 2^-24, x2 = 0): the plain shape gives q * diff =
      2^-24 (the exact result). Halved: 0.5 * diff = 2^-25 is a tie between 0 and 2^-24, to even: 0;
      h1 = 0 * q = 0; q * diff = 2^-24, 0.5 * 2^-24 ties to 0 again: h2 = 0; the sum is +0.
    * diff = 3 * 2^-24: plain 3 * 2^-24. Halved: 0.5 * diff = 1.5 * 2^-24 ties to even, 2 * 2^-24; h1 =
      2 * 2^-24; h2 = 0.5 * (3 * 2^-24) the same 2 * 2^-24; the sum 4 * 2^-24 = 2^-22.
    * diff = 0.5 (normal): every half exact, both give 0.5.
    """
    H, s = F.FP16, 2.0 ** -24
    x1, x2 = [s, 3 * s, 0.5], [0.0, 0.0, 0.0]
    plain = _one(H, "dy-divmul", np.float16, False, [1.0] * 3, x1, x2, 1.0)
    halved = _one(H, "dy-divmul-halved", np.float16, False, [1.0] * 3, x1, x2, 1.0)
    bits = lambda *v: np.array(v, np.float16).view(np.uint16)  # noqa: E731
    assert plain.tolist() == bits(s, 3 * s, 0.5).tolist()
    assert halved.tolist() == bits(0.0, 4 * s, 0.5).tolist()
    # the autodiff's branch term adds +0 on the middle line (+0 + h1 + h2) and, on the outer lines, the
    # middle line with dy = 0: with beta = 1, x1 = inf gives (0.5 * inf) * (0 / 1) = NaN where the result is 1
    grad = _one(H, "dy-divmul-halved-ge-grad", np.float16, False, [1.0, -1.0, 1.0], [s, 0.0, INF], [0.0, 0.0, 0.0], 1.0)
    assert grad[:2].tolist() == bits(0.0, 0.0).tolist() and np.isnan(grad[2:].view(np.float16)).all()


INF = float("inf")


def test_the_flushed_and_fused_evaluation_by_hand():
    """The flushed (DAZ/FTZ) evaluation and the fused term, fp32, on elements derived by hand:

    * dy = -2^-100, diff = 2^-30 (x1 = 2^-30, x2 = 0), beta = 1: q = -2^-100; the exact result -2^-130 is
      subnormal. Unflushed, (dy / beta) * diff gives -2^-130. Flushed it becomes -0, and the grad term adds
      +0 - +0 = +0 first: h1 = (0.5 * diff) * q = -2^-131 is flushed to -0 and +0 + -0 = +0; h2 = 0.5 * (q * diff)
      = 0.5 * (-0) = -0, +0 + -0 = +0: the rounded grad gives +0. Fused (gradfma), +0 + (0.5 * diff) * q is
      rounded once: -2^-131, flushed to -0; then -0 + 0.5 * (-0) = -0: the fused one gives -0.
    * dy = 2, x1 = 0, x2 = (2 - 2^-23) * 2^-126 (bits 0x00ffffff, normal), beta = 1: diff = -x2; 0.5 * diff is
      exactly -(1 - 2^-24) * 2^-126, below the smallest normal, though it rounds (a tie, to even) to -2^-126:
      tininess is judged before rounding (as x86 does; XLA's code shows it), so it is flushed to -0, and
      h1 = -0 * 2 = -0, +0 + -0 = +0; q * diff = -(2 - 2^-23) * 2^-125 is normal, and + 0.5 * that = diff
      exactly: the result is diff, bits 0x80ffffff. Judged after rounding it would be -2^-126 + diff.
    * beta = 2^-149 (subnormal), dy = 1, x1 = 1, x2 = 0: unflushed diff = 1 > beta, the result dy = 1 (the grad
      term adds (0.5 * 1) * (0 / beta) = 0). Flushed, beta reads as 0: the outer line still (1 >= 0), but
      q = 0 / 0 is NaN, so the term makes the result NaN.
    """
    S = F.FP32
    f32 = lambda *v: np.array(v, np.float32).view(np.uint32).tolist()  # noqa: E731
    args = ([-2.0 ** -100], [2.0 ** -30], [0.0], 1.0)
    assert _one(S, "dy-divmul", np.float32, False, *args).tolist() == f32(-2.0 ** -130)
    assert _one(S, "dy-divmul", np.float32, True, *args).tolist() == f32(-0.0)
    assert _one(S, "dy-divmul-halved-ge-grad", np.float32, True, *args).tolist() == f32(0.0)
    assert _one(S, "dy-divmul-halved-ge-gradfma", np.float32, True, *args).tolist() == f32(-0.0)
    x2 = float(np.array([0x00FFFFFF], np.uint32).view(np.float32)[0])
    assert _one(S, "dy-divmul-halved-ge-gradfma", np.float32, True, [2.0], [0.0], [x2], 1.0).tolist() == [0x80FFFFFF]
    sub = float(np.array([1], np.uint32).view(np.float32)[0])
    args = ([1.0], [1.0], [0.0], sub)
    assert _one(S, "dy-divmul-halved-ge-gradfma", np.float32, False, *args).tolist() == f32(1.0)
    assert np.isnan(np.array(_one(S, "dy-divmul-halved-ge-gradfma", np.float32, True, *args)).view(np.float32)).all()


def test_a_zero_term_turns_a_negative_zero_copy_positive_and_reach_accepts_it():
    """dy = -0 on an outer line: the C order copies -0; plus a zero gives +0, which the error model
    reaches only where the profile names the order with the term."""
    H = F.FP16
    bits = lambda v: np.array([v], np.float16).view(np.uint16)  # noqa: E731
    dy, x1, x2, beta = bits(-0.0), bits(3.0), bits(1.0), bits(1.0)
    got = bits(0.0)
    plain = reach(H, ErrorModel(orders={"divmul": ("data",)}), got, dy, x1, x2, beta, bits(-0.0))
    termed = reach(H, ErrorModel(orders={"divmul-plus0": ("data",)}), got, dy, x1, x2, beta, bits(-0.0))
    assert plain.stage[0] == 0 and termed.stage[0] == 1


# ---------------------------------------------------------------- R17 names the order

def test_r17_names_dy_over_beta_times_diff_in_half(capsys, tmp_path, kernels):
    reqs = _certify(capsys, tmp_path, f"python:{kernels}:dy_first_half", "ieee", "fp16", "half")
    said = _r17(reqs)
    assert "dy-divmul-fp16" in said and "(dy / beta) * diff in half" in said, said
    assert reqs["R01"]["status"] == "fail"  # the built-in profile does not list it


def test_r17_names_the_autodiff_order_with_its_branch_term(capsys, tmp_path, kernels):
    said = _r17(_certify(capsys, tmp_path, f"python:{kernels}:autodiff_half", "ieee", "fp16", "ad"))
    assert "dy-divmul-ge-plus0diff-fp16" in said, said
    assert "(dy / beta) * diff in half, the outer lines from |diff| >= beta, plus 0 * diff" in said


def test_r17_names_the_halved_sum_an_autodiff_makes(capsys, tmp_path, kernels):
    """The JAX graph in half (halved_half): the halved shape, the where's branch test and its branch term
    (on a positive beta the grad term's bits are plus0abs's, the simpler, named first)."""
    said = _r17(_certify(capsys, tmp_path, f"python:{kernels}:halved_half", "ieee", "fp16", "halved"))
    assert said.startswith("dy-divmul-halved-ge-plus0abs-fp16: (0.5 * diff) * q + 0.5 * (q * diff) with q = dy / beta "
                           "in half, the outer lines from |diff| >= beta"), said


def test_r17_names_the_float_orders(capsys, tmp_path, kernels):
    # fp32 data: (dy / beta) * diff in float is the grammar's; on fp16 data, computed in float and rounded
    # once, it gives the enumerated fp32 models' bits on every element of the quick run
    said = _r17(_certify(capsys, tmp_path, f"python:{kernels}:dy_first_float", "ieee", "fp32", "f32"))
    assert "dy-divmul-fp32" in said and "(dy / beta) * diff in float" in said, said
    said = _r17(_certify(capsys, tmp_path, f"python:{kernels}:dy_first_float", "ieee", "fp16", "f16"))
    assert said.split(", ")[0] == "divmul-fp32", said  # the models matched, named first


def test_r17_names_an_enumerated_model_by_its_name(capsys, tmp_path, kernels):
    said = _r17(_certify(capsys, tmp_path, f"python:{kernels}:muldiv_float", "ieee", "fp32", "md"))
    assert said == "muldiv-fp32", said  # the enumerated model's name, no search


def test_r17_says_the_closest_honestly_where_no_order_matches(capsys, tmp_path, kernels):
    said = _r17(_certify(capsys, tmp_path, f"python:{kernels}:sloppy_reciprocal", "ieee", "fp32", "odd"))
    assert said.startswith("no single model"), said
    assert "no order of the grammar (288 evaluations" in said
    assert re.search(r"closest: \S+-fp(32|64) \(\(.*\) in (float|double)[^)]*\) \d+\.\d%", said), said


# ---------------------------------------------------------------- a profile accepts a found order

def test_a_profile_naming_the_found_order_accepts_it(capsys, tmp_path, kernels):
    text = (PROFILE_DIR / "ieee.toml").read_text()
    text = text.replace('name = "ieee"', 'name = "ieee-dy-first"')
    text = text.replace('divmul = ["data", "fp32", "fp64"]\n', 'divmul = ["data", "fp32", "fp64"]\ndy-divmul = ["data"]\n', 1)
    profile = tmp_path / "dy-first.toml"
    profile.write_text(text)
    assert load_profile(str(profile)).error_model.orders["dy-divmul"] == ("data",)
    builtin = _certify(capsys, tmp_path, f"python:{kernels}:dy_first_half", "ieee", "fp16", "builtin")
    assert builtin["R01"]["status"] == "fail"
    # the order accepted for its rounding, not for its overflow (issue 40): in half, dy / beta overflows where
    # the exact result is finite (dy = 60000, beta = 0.5: 120000 > 65504), which R03 fails until the profile
    # lists that intermediate too
    rounding_only = _certify(capsys, tmp_path, f"python:{kernels}:dy_first_half", profile, "fp16", "rounding")
    assert rounding_only["R03"]["status"] == "fail" and "dy / beta overflows" in json.dumps(rounding_only["R03"])
    text = text.replace("overflow = []", 'overflow = ["dy / beta"]')
    profile.write_text(text)
    assert load_profile(str(profile)).error_model.overflow == ("dy / beta",)
    named = _certify(capsys, tmp_path, f"python:{kernels}:dy_first_half", profile, "fp16", "named")
    assert named["R01"]["status"] == "pass", named["R01"]
    assert "dy-divmul-fp16: (dy / beta) * diff in half" in _r17(named)
    # the built-in profiles keep their lists
    assert set(load_profile("ieee").error_model.orders) == set(IEEE.orders)


def test_an_unknown_order_is_one_line(tmp_path):
    text = (PROFILE_DIR / "ieee.toml").read_text().replace('divmul = ["data", "fp32", "fp64"]\n',
                                                           'divmul = ["data", "fp32", "fp64"]\ndy-muldiv = ["data"]\n', 1)
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(ProfileError, match=r"error_model\.orders\.dy-muldiv: unknown evaluation order"):
        load_profile(str(tmp_path / "bad.toml"))


# ---------------------------------------------------------------- the cost stays bounded

def test_the_search_evaluates_only_the_disagreeing_elements(capsys, tmp_path, kernels, monkeypatch):
    from sl1conf.conformance.requirements import evaluation_model as EM
    sizes = []
    real = O.evaluate_many

    def counted(fmt, evaluations, dy, *rest):
        sizes.append((len(evaluations), np.shape(dy)[0]))
        return real(fmt, evaluations, dy, *rest)
    # R17's own evaluations (the diagnosis's facts of the rejected elements evaluate the grammar too, apart)
    monkeypatch.setattr(EM, "grammar_orders", types.SimpleNamespace(**{**vars(O), "evaluate_many": counted}))
    seen = {}
    search = EM.order_search

    def kept(judged, fmt):
        out = search(judged, fmt)
        seen["searched"], seen["total"] = out["searched"], sum(j.got.size for j in judged)
        return out
    monkeypatch.setattr(EM, "order_search", kept)
    reqs = _certify(capsys, tmp_path, f"python:{kernels}:dy_first_half", "ieee", "fp16", "cost")
    assert "dy-divmul-fp16" in _r17(reqs)
    assert 0 < seen["searched"] < seen["total"] / 10  # the disagreeing elements are a small part of the run
    searches = [s for s in sizes if s[0] > 1]  # one call per precision (and the flushed data precision), every order
    assert len(searches) == 4 and all(n == seen["searched"] for _, n in searches)
    assert sum(k for k, _ in searches) == len(EM.grammar_evaluations(F.FP16)) == 8 * 2 * 6 * (3 + 1)
    confirms = [s for s in sizes if s[0] == 1]  # the order found, evaluated once on every element to confirm it
    assert 1 <= len(confirms) <= EM.SEARCH_CONFIRM and all(n <= seen["total"] for _, n in confirms)

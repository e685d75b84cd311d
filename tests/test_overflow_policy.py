"""Overflow that must fail (issue 40, item 1): an allowed order is accepted for its rounding, not for
its overflow. Where the exact result is finite, an infinity or NaN is accepted only where every
overflow the evaluation took is of an intermediate the profile's ``error_model.overflow`` lists
(ieee: none; ft78ne and mt7004: ``1 / beta``). Every expected value here is derived by hand
beside it; the judge, the record the exported self-test checks (rules.acceptance) and the reports
must each say it.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import certify_library, requirement_entry as entry
from sl1conf.adapters.cbuild import build_shared
from sl1conf.conformance.rules import acceptance as A
from sl1conf.conformance.rules import intermediates as I
from sl1conf.conformance.rules import judge as J
from sl1conf.conformance.rules.profiles import SCHEMA, ProfileError, load_profile
from sl1conf.reference import formats as F
from sl1conf.reference.error_model import OVERFLOWS

FP32 = F.FP32


def _bits(*values) -> np.ndarray:
    return np.array(values, np.float32).view(np.uint32)


# x1 - x2 = 1e30 (exact: x2 = 0), beta = 2e30, dy = 1e10: the middle line (|diff| <= beta), exact
# value 1e30 * 1e10 / 2e30 = 5e9, finite in float. diff * dy = 1e40 > FLT_MAX (3.4e38): the order
# (diff * dy) / beta in float gives +inf (and -inf for x1 = -1e30). A third element far from any
# overflow (0.5 * 3 / 2e30 = 7.5e-31, its own bits) stays accepted.
DY, X1, X2, BETA = _bits(1e10, 1e10, 3.0), _bits(1e30, -1e30, 0.5), _bits(0.0, 0.0, 0.0), int(_bits(2e30)[0])
GOT = _bits(np.inf, -np.inf, np.float32(np.float32(0.5) * np.float32(3.0)) / np.float32(2e30))


def _profile_file(tmp_path, base: str, overflow: list):
    """The built-in ``base`` profile with ``error_model.overflow`` set to ``overflow``."""
    body = open(load_profile(base).path).read()
    body = re.sub(r"(?m)^overflow = \[.*\]$", "overflow = " + json.dumps(overflow), body)
    path = tmp_path / f"{base}-overflow.toml"
    path.write_text(body.replace(f'name = "{base}"', f'name = "{base}-overflow"'))
    return load_profile(str(path))


def test_an_allowed_orders_overflow_fails_r03_on_ieee_and_names_the_intermediate_and_the_order():
    expected = J.expected_for(FP32, DY, X1, X2, BETA)
    assert expected.oracle.view(np.float32)[0] == np.float32(5e9)  # the hand derivation above
    j = J.judge(FP32, load_profile("ieee"), GOT, expected, DY, X1, X2, BETA)
    assert j.ok.tolist() == [False, False, True]
    assert j.breaks["R03"].tolist() == [True, True, False]
    assert j.reach.blocked_at(slice(None)).tolist()[:2] == ["muldiv-fp32: diff * dy overflows"] * 2
    facts = {key: (text, mask) for key, text, mask in I.facts(FP32, j, ~j.ok) if mask.any()}
    text, mask = facts["fact:diff*dy:overflows:fp32"]
    assert mask.tolist() == [True, True, False]
    assert "(diff * dy) / beta in float (muldiv-fp32)" in text and "does not accept" in text, text


def test_a_profile_that_lists_the_intermediate_accepts_its_overflow_as_reachable(tmp_path):
    profile = _profile_file(tmp_path, "ieee", ["diff * dy"])
    assert profile.error_model.overflow == ("diff * dy",)
    j = J.judge(FP32, profile, GOT, J.expected_for(FP32, DY, X1, X2, BETA), DY, X1, X2, BETA)
    assert j.ok.all()
    assert j.reason[:2].tolist() == [J.Reason.REACHABLE] * 2
    assert all(h.startswith("muldiv-fp32") for h in j.reach.how[:2]), j.reach.how


def test_the_reciprocals_overflow_is_accepted_where_the_profile_lists_it(tmp_path):
    # beta = 2^-149 (the smallest subnormal), x1 = x2 = 0, dy = 1: the middle line, exact 0 * 1 / beta = +0.
    # In float 1 / 2^-149 = 2^149 > FLT_MAX: +inf, and diff * (1 / beta) = 0 * inf is NaN (recipmul-fp32).
    beta = int(np.array([1], np.uint32)[0])
    dy, x1, x2 = _bits(1.0), _bits(0.0), _bits(0.0)
    nan = np.array([0x7FC00000], np.uint32)
    expected = J.expected_for(FP32, dy, x1, x2, beta)
    assert expected.oracle.tolist() == [0]
    ieee = J.judge(FP32, load_profile("ieee"), nan, expected, dy, x1, x2, beta)
    assert not ieee.ok[0] and ieee.breaks["R03"][0]
    assert ieee.reach.blocked_at(0).endswith("1 / beta overflows"), ieee.reach.blocked_at(0)
    listed = J.judge(FP32, _profile_file(tmp_path, "ieee", ["1 / beta"]), nan, expected, dy, x1, x2, beta)
    assert listed.ok[0] and listed.reason[0] == J.Reason.REACHABLE


@pytest.mark.parametrize("profile", ["ieee", "ft78ne", "mt7004"])
def test_the_builtin_profiles_state_their_overflow(profile):
    assert load_profile(profile).error_model.overflow == ((), ("1 / beta",), ("1 / beta",))[
        ["ieee", "ft78ne", "mt7004"].index(profile)]
    assert load_profile(profile).summary()["error_model"]["overflow"] == list(load_profile(profile).error_model.overflow)


def test_the_schema_names_exactly_the_intermediates_the_model_tracks():
    from sl1conf.conformance.common.jsonfiles import schema

    enum = schema(SCHEMA)["properties"]["error_model"]["properties"]["overflow"]["items"]["enum"]
    assert tuple(enum) == OVERFLOWS


def test_an_unknown_intermediate_is_one_line_naming_the_field(tmp_path):
    path = tmp_path / "bad.toml"
    body = open(load_profile("ieee").path).read().replace("overflow = []", 'overflow = ["diff + dy"]')
    path.write_text(body)
    with pytest.raises(ProfileError) as caught:
        load_profile(str(path))
    said = str(caught.value)
    assert "\n" not in said and "error_model.overflow" in said, said


def test_the_exported_record_bars_the_same_infinities():
    """rules.acceptance (what the board's program checks) accepts exactly what the judge does here."""
    expected = J.expected_for(FP32, DY, X1, X2, BETA)
    record = A.accepted(FP32, load_profile("ieee"), expected, DY, X1, X2, BETA)
    assert record.contains(GOT).tolist() == [False, False, True]
    assert record.contains(np.array([0x7FC00000] * 3, np.uint32)).tolist() == [False, False, False]


FP32_PRODUCT_FIRST = """
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{ for (int i = 0; i < n; i++) { float d = x1[i] - x2[i]; float p = d * dy[i];
    dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : p / beta; } }
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{ if (mask) fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta); }
"""


def test_certify_fails_the_product_first_fp32_kernel_on_r03_naming_the_overflow(tmp_path):
    """The issue's kernel: (diff * dy) / beta in float, an order ieee allows for its rounding. It once
    passed ieee, its infinities "reachable"; now R03 fails, and the report names diff * dy and the order."""
    src = tmp_path / "product-first.c"
    src.write_text(FP32_PRODUCT_FIRST)
    lib = str(build_shared("overflow-product-first", [src]))
    code, failed, report = certify_library(tmp_path, lib, "ieee", "--dtype", "fp32", "--variant", "p", "--quick",
                                           out="report-ieee")
    assert code == 1 and "R03" in failed, failed
    r03 = json.dumps(entry(report, "R03"))
    assert "diff * dy overflows" in r03 and "muldiv-fp32" in r03, r03[:2000]
    md = (tmp_path / "report-ieee" / "report.md").read_text()
    assert "(diff * dy) / beta in float (muldiv-fp32)" in md and J.OVERFLOW_NOT_ACCEPTED in md


def _reach(model, got, dy, x1, x2, beta):
    from sl1conf.reference import reachable as R

    u = lambda v: np.array([v], np.uint32)  # noqa: E731
    oracle = J.expected_for(FP32, u(dy), u(x1), u(x2), beta).oracle
    return R.reach(FP32, model, u(got), u(dy), u(x1), u(x2), u(beta), oracle)


def test_an_overflow_the_clamp_removes_is_no_overflow_of_the_result():
    # mt7004, clamp(diff, -beta, beta) * (1 / beta) * dy in float: x1 - x2 = FLT_MAX - -FLT_MAX overflows to
    # +inf, which the clamp brings back to beta = 2^-149; 1 / beta = 2^149 overflows (listed), so
    # beta * inf * 1 = +inf comes from 1 / beta alone: reachable (exact result: the outer line, dy = 1)
    r = _reach(load_profile("mt7004").error_model, 0x7F800000, 0x3F800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001)
    assert r.stage[0] > 0 and r.how[0].startswith("clamp-recipmul-fp32"), (r.stage, r.how, r.blocked)


def test_a_halved_order_reaches_its_own_bits_and_its_nan():
    from sl1conf.reference import orders as O
    from sl1conf.reference.error_model import ErrorModel

    # dy = 2^100, x1 = 3 * 2^-149, x2 = 0, beta = 1: q = 2^100; 0.5 * diff = 1.5 * 2^-149 rounds (to even) to
    # 2^-148, so (0.5 * diff) * q = 2^-48 and 0.5 * (q * diff) = 1.5 * 2^-49: their sum 1.75 * 2^-48 =
    # 0x27e00000, where the exact result is 1.5 * 2^-48 = 0x27c00000. The order reaches its own bits.
    f = lambda v: np.array([v], np.uint32).view(np.float32)  # noqa: E731
    own = O.evaluate_many(FP32, [(O.parse("dy-divmul-halved"), np.float32)], f(0x71800000), f(3), f(0), f(0x3F800000))[0]
    assert own.view(np.uint32)[0] == 0x27E00000
    halved = ErrorModel(orders={"dy-divmul-halved": ("fp32",)})
    assert _reach(halved, 0x27E00000, 0x71800000, 3, 0, 0x3F800000).stage[0] == 1
    # dy = 1, x1 = 2^-149, x2 = 0, beta = 2^-149 (the boundary: exact result dy = 1): q = 1 / 2^-149 overflows
    # to +inf and 0.5 * diff rounds to 0, so 0 * inf + inf is NaN: reachable where dy / beta's overflow is listed
    listed = ErrorModel(orders={"dy-divmul-halved": ("fp32",)}, overflow=("dy / beta",))
    assert _reach(listed, 0x7FC00000, 0x3F800000, 1, 0, 1).stage[0] > 0
    assert _reach(halved, 0x7FC00000, 0x3F800000, 1, 0, 1).stage[0] == 0


def test_an_autodiff_term_carries_the_dropped_middle_lines_overflow():
    from sl1conf.reference.error_model import ErrorModel

    # divmul with the autodiff's gradient term: on the outer line (diff = 1e10 > beta = 1e-30) it adds the
    # middle line computed with dy = 0: (1e10 / 1e-30) overflows float, times 0 is NaN. NaN is reachable
    # through diff / beta's overflow, where the profile lists it, and not otherwise (the exact result is 1)
    args = (0x7FC00000, 0x3F800000, 0x501502F9, 0, 0x0DA24260)
    assert _reach(ErrorModel(orders={"divmul-grad": ("fp32",)}, overflow=("diff / beta",)), *args).stage[0] > 0
    r = _reach(ErrorModel(orders={"divmul-grad": ("fp32",)}), *args)
    assert r.stage[0] == 0 and "diff / beta overflows" in r.blocked[0], r.blocked


def test_a_flush_is_told_from_no_flush_whatever_the_overflow_policy():
    """R14 and R18 ask whether two results of one element differ by a flush: clamp-recipmul in float with
    beta = 2^-149, x1 = 1, x2 = 0, dy = 1 (the outer line, exact 1): unflushed, clamp(1) = beta times
    1 / beta = +inf (an overflow) gives +inf; with beta read as zero, 0 * (1 / 0) is NaN. One is reached
    without a flush (through the overflow), the other only with it, whatever the profile accepts. The
    diagnosis's FLUSHING hypothesis itself takes no overflow: a flushed beta's infinity is the flush's."""
    from dataclasses import replace

    from sl1conf.reference import reachable as R

    u = lambda v: np.array(v, np.uint32)  # noqa: E731
    oracle = J.expected_for(FP32, u([0x3F800000] * 2), u([0x3F800000] * 2), u([0, 0]), 1).oracle
    args = (u([0x7F800000, 0x7FC00000]), u([0x3F800000] * 2), u([0x3F800000] * 2), u([0, 0]), u([1, 1]), oracle)
    both = R.reach(FP32, replace(R.FLUSHING, overflow=R.OVERFLOWS), *args, stages=(1, 3))
    assert sorted(both.stage.tolist()) == [1, 3]
    assert R.reach(FP32, R.FLUSHING, *args, stages=(1, 3)).stage.tolist()[1] == 3

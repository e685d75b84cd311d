"""A campaign's R09 and R14 findings name their first differing element, as R18's do (issue 37,
item 4): its index, its inputs and both bit patterns, in the finding fuzz keeps, in what
``sl1conf fuzz`` saves and in ``fuzz replay``'s lines.

Each defect is a zoo library (conformance/selftest/zoo) and each expected bit pattern is worked
out here with numpy's float32 arithmetic in the library's own order, not by the suite:
core-mask-order computes d * (1 / beta) * dy on more than one core and d / beta * dy on one;
stale-beta computes a call's first element with the previous call's beta."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sl1conf.adapters import load
from sl1conf.adapters.base import Case
from sl1conf.conformance.cli import main
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.conformance.search import fuzz
from sl1conf.conformance.selftest.zoo import build_library, members

F = np.float32


def bits(v) -> int:
    return int(np.array([v], np.float32).view(np.uint32)[0])


def value(b: int) -> np.float32:
    return np.array([b], np.uint32).view(np.float32)[0]


def hexb(b: int) -> str:
    return f"{b:#010x}"


def _divmul(d, beta, dy):
    """The manual's lines in the manual's order, as zoo.h's zoo_divmul (one core)."""
    return dy if d > beta else -dy if d < -beta else F(F(d / beta) * dy)


def _reciprocal_order(d, beta, dy):
    """core-mask-order.c on more than one core: d * (1 / beta) * dy."""
    return dy if d > beta else -dy if d < -beta else F(F(d * F(F(1) / beta)) * dy)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    built = tmp_path_factory.mktemp("zoo")
    table = {m.name: m for m in members()}
    return lambda name: f"ctypes:{build_library(table[name], built)}"


def _case(variant, beta, dy, x1, core_mask=0, cid="0.0"):
    arr = lambda v: np.array(v, np.float32).view(np.uint32)  # noqa: E731
    return Case("fp32", arr(dy), arr(x1), arr(np.zeros(len(x1), np.float32)), bits(beta), variant=variant,
                core_mask=core_mask, id=cid)


def _orders_differ(beta) -> tuple:
    """(d, dy) in the middle line whose two orders round differently, found by search."""
    rng = np.random.default_rng(7)
    for _ in range(10_000):
        d, dy = F(rng.uniform(-0.09, 0.09)), F(rng.uniform(-3, 3))
        if bits(_divmul(d, beta, dy)) != bits(_reciprocal_order(d, beta, dy)):
            return d, dy
    raise AssertionError("no element found whose two orders differ")


def test_an_r09_finding_names_the_first_element_under_both_masks(library):
    profile = load_profile("ieee")
    beta = F(0.1)
    d, dy = _orders_differ(beta)
    # elements 0 and 1 clamp (the same bits in both orders), element 2 is the first that differs
    case = _case("s", beta, [F(1.5), F(-2), dy, F(1)], [F(0.5), F(-0.5), d, F(3)], core_mask=profile.core_mask)
    with load(library("core-mask-order")) as adapter:
        findings = [f for f in fuzz.check_cases(adapter, profile, [case]) if f.requirement == "R09"]
    [f] = findings
    assert (f.kind, f.case, f.element) == ("core-mask", 0, 2), f
    many, one = bits(_reciprocal_order(d, beta, dy)), bits(_divmul(d, beta, dy))
    assert many != one
    assert (f"element 2 of a call of 4 (dy={hexb(bits(dy))} x1={hexb(bits(d))} x2=0x00000000 "
            f"beta={hexb(bits(beta))})") in f.detail, f.detail
    assert f"core_mask {profile.core_mask:#x} gives {hexb(many)}, 0x1 {hexb(one)}" in f.detail, f.detail
    assert "1 of the call's 4 elements differs" in f.detail
    assert [c.core_mask for c in f.also] == [1]  # the twin the failure is seen again with


def test_an_r14_finding_names_the_first_element_and_both_results(library):
    profile = load_profile("ieee")
    first = _case("p", F(1), [F(1), F(1), F(1)], [F(0.75), F(0.25), F(2)], cid="0.0")
    second = _case("p", F(2), [F(1), F(1)], [F(0.5), F(0.5)], cid="0.1")
    with load(library("stale-beta")) as adapter:
        adapter.run([_case("p", F(1), [F(1)], [F(0)])])  # the library's previous beta is 1 now
        # the calls: first (beta 1 after beta 1), second, then first again right after second (beta 2)
        findings = [f for f in fuzz.check_cases(adapter, profile, [first, second]) if f.requirement == "R14"]
    [f] = findings
    assert (f.kind, f.case, f.element) == ("determinism", 0, 0), f
    then, again = bits(_divmul(F(0.75), F(1), F(1))), bits(_divmul(F(0.75), F(2), F(1)))
    assert (then, again) == (0x3F400000, 0x3EC00000)  # 0.75, then 0.375
    assert "element 0 of a call of 3 (dy=0x3f800000 x1=0x3f400000 x2=0x00000000 beta=0x3f800000)" in f.detail
    assert f"the call gave {hexb(then)}, again after the batch's other calls {hexb(again)}" in f.detail, f.detail
    assert "1 of the call's 3 elements differs" in f.detail


def _fuzz(capsys, impl, out: Path) -> tuple:
    """(exit status, what it printed, summary.json) of a small ``sl1conf fuzz`` of the shared variant."""
    code = main(["fuzz", "--impl", impl, "--platform", "ieee", "--dtype", "fp32", "--variant", "s",
                 "--batch-elements", "2048", "--elements", "8000", "--seed", "5", "--out", str(out)])
    return code, capsys.readouterr().out, json.loads((out / "summary.json").read_text())


def test_fuzz_saves_the_r09_element_with_both_bit_patterns(library, capsys, tmp_path):
    """The saved reproducer (minimized) names its element, its inputs and both results; the two
    results are worked out again here from the saved inputs in each order."""
    code, text, s = _fuzz(capsys, library("core-mask-order"), tmp_path / "o")
    [e] = [e for e in s["saved"] if e["requirement"] == "R09"]
    assert code == 1 and e["element"] is not None and e["kind"] == "core-mask"
    assert f"Smallest reproducer: dy={e['dy']} x1={e['x1']} x2={e['x2']} beta={e['beta']}" in text, text
    assert f"element {e['element']} of a call of {e['length']} (found in batch" in text, text
    k, full = e["element"], load_profile("ieee").core_mask
    d = F(value(int(e["x1"], 16)) - value(int(e["x2"], 16)))
    beta, dy = value(int(e["beta"], 16)), value(int(e["dy"], 16))
    mask = int(e["core_mask"], 16)
    other = full if mask != full else 1
    order = lambda m: _reciprocal_order if m & (m - 1) else _divmul  # noqa: E731
    said = f"core_mask {mask:#x} gives {hexb(bits(order(mask)(d, beta, dy)))}, {other:#x} " \
           f"{hexb(bits(order(other)(d, beta, dy)))}"
    assert said in e["detail"] and f"element {k} of a call of {e['length']} (dy={e['dy']} x1={e['x1']}" in e["detail"]
    first = s["requirements"]["R09"]["first_call"]["detail"]  # the evidence's first failing call names it too
    assert "element " in first and " gives 0x" in first
    code = main(["fuzz", "replay", str(tmp_path / "o"), "--batch", str(e["found"]["batch"])])
    lines = capsys.readouterr().out
    assert code == 1 and f"element {e['found']['element']}): core_mask" in lines, lines

"""An R09 failure (the shared version against the private one) shows an element and its cause.

Two small C libraries whose ``_s`` version evaluates the middle line in another order than
``_p`` (``_p``: diff / |beta| * dy; ``_s``: diff * dy / |beta|, beta taken as |beta|, an
accepted answer to beta < 0), certified ``--quick`` on ieee: one where ``_s`` takes the
other order only for beta < 0 (what a library whose vector body and scalar tail disagree for
beta < 0 does), one where it does for every beta. Each R09 example must name a case and an
element, the element's inputs (those of the vector set at that case and index), both versions'
bits, the correctly rounded bits and how many of the call's elements differ; the first must
say the cause "beta < 0: the manual leaves this open" for the first library, and no open
input for the second. The bits are derived here, independently of the code under test: the
library's two orders in numpy float32 arithmetic (the C compiler's float on the host), and the
correctly rounded result from tests/exact_fractions.py.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from sl1conf.adapters.cbuild import build_shared
from sl1conf.conformance.certify.engine import vectors_for
from sl1conf.conformance.cli import main

from exact_fractions import smoothl1lossgrad_bits

LIB = """
static float one(float dy, float x1, float x2, float beta, int muldiv)
{
    float d = x1 - x2, b = beta < 0 ? -beta : beta;
    if (d > b) return dy;
    if (d < -b) return -dy;
    return muldiv ? d * dy / b : d / b * dy;
}
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{ for (int i = 0; i < n; i++) dx1[i] = one(dy[i], x1[i], x2[i], beta, 0); }
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{ for (int i = 0; i < n && mask; i++) dx1[i] = one(dy[i], x1[i], x2[i], beta, MULDIV); }
"""
OPEN_NOTE = "beta < 0: the manual leaves this open"
F32 = np.float32


def _model(dy, x1, x2, beta, muldiv: bool) -> np.ndarray:
    """The library's ``one`` over a call, in numpy float32 (bits)."""
    dy, x1, x2 = (np.asarray(a, np.uint32).view(F32) for a in (dy, x1, x2))
    beta = np.array([beta], np.uint32).view(F32)[0]
    with np.errstate(all="ignore"):
        d = x1 - x2
        b = -beta if beta < 0 else beta
        mid = d * dy / b if muldiv else d / b * dy
        return np.where(d > b, dy, np.where(d < -b, -dy, mid)).astype(F32).view(np.uint32)


def _differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    nan = lambda x: (x & 0x7F800000 == 0x7F800000) & (x & 0x007FFFFF != 0)  # noqa: E731
    return (a != b) & ~(nan(a) & nan(b))


def _r09(tmp_path, name: str, muldiv_when: str) -> tuple:
    src = tmp_path / f"{name}.c"
    src.write_text(LIB.replace("MULDIV", muldiv_when))
    lib = build_shared(name, [src])
    out = tmp_path / "report"
    code = main(["certify", "--impl", f"ctypes:{lib}", "--platform", "ieee", "--dtype", "fp32", "--quick",
                 "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    shared = next(run for run in report["runs"] if run["variant"] == "s")
    r09 = next(r for r in shared["requirements"] if r["id"] == "R09")
    assert code == 1 and r09["status"] == "fail" and r09["shared_vs_private"]["failed"] > 0, r09
    return r09, (out / "report.md").read_text()


def _check_examples(r09: dict) -> tuple:
    """Every shared-against-private example against the vector set and the numpy model; the
    betas of the examples (bits)."""
    vs = vectors_for("fp32", None, quick=True)
    rows = {row["id"]: row for row in vs.manifest["cases"]}
    betas = []
    examples = [e for e in r09["examples"] if "the private version" in e.get("detail", "")]
    assert examples
    for e in examples:
        assert {"case", "element", "dy", "x1", "x2", "beta", "expected", "got", "ulp", "detail"} <= set(e), e
        case, k = vs.case(rows[e["case"]]), e["element"]
        n = case.dy.size if case.length is None else max(0, min(case.length, case.dy.size))
        # the inputs are the vector set's at that case and index
        assert [int(e[key], 16) for key in ("dy", "x1", "x2")] == [int(case.dy[k]), int(case.x1[k]), int(case.x2[k])]
        assert int(e["beta"], 16) == case.beta
        # both bit patterns: the shared version's muldiv, the private version's divmul, and they differ
        private = int(re.search(r"the private version (0x[0-9a-f]{8})", e["detail"]).group(1), 16)
        shared_bits = _model(case.dy[:n], case.x1[:n], case.x2[:n], case.beta, muldiv=True)
        private_bits = _model(case.dy[:n], case.x1[:n], case.x2[:n], case.beta, muldiv=False)
        assert int(e["got"], 16) == int(shared_bits[k]) and private == int(private_bits[k]), e
        assert _differ(shared_bits[k:k + 1], private_bits[k:k + 1])[0]
        assert f"the shared version (all cores) gives {e['got']}" in e["detail"]
        # the first that differs, and how many of the call's elements differ
        assert k == int(np.flatnonzero(_differ(shared_bits, private_bits))[0])
        assert f"{int(_differ(shared_bits, private_bits).sum()):,} of the call's {case.dy.size:,} elements differ" \
            in e["detail"], e["detail"]
        # the correctly rounded result, from exact rationals
        want = smoothl1lossgrad_bits("fp32", int(case.dy[k]), int(case.x1[k]), int(case.x2[k]), case.beta)
        assert int(e["expected"], 16) == want and f"correctly rounded {e['expected']}" in e["detail"]
        assert f"case {e['case']}, element {k} of a call of" in e["detail"]
        assert f"dy={e['dy']} x1={e['x1']} x2={e['x2']} beta={e['beta']}" in e["detail"]
        betas.append(case.beta)
    return betas, examples


def test_a_difference_only_for_negative_beta_names_the_open_input(tmp_path):
    r09, md = _r09(tmp_path, "r09-negative-beta", "beta < 0")
    betas, examples = _check_examples(r09)
    assert all(b & 0x80000000 for b in betas)  # every example has beta < 0
    first = examples[0]["detail"]
    failed, checked = r09["shared_vs_private"]["failed"], r09["shared_vs_private"]["checked"]
    assert f"in {failed:,} of the {checked:,} calls compared" in first and f"cause: only where {OPEN_NOTE}" in first
    assert all(OPEN_NOTE not in e["detail"] for e in examples[1:])  # said once, with the run's counts
    assert f"First failure: {first}" in md  # what the report shows


def test_a_difference_for_every_beta_names_no_open_input(tmp_path):
    r09, md = _r09(tmp_path, "r09-every-beta", "1")
    betas, examples = _check_examples(r09)
    assert any(not b & 0x80000000 for b in betas)
    assert all("manual leaves this open" not in e["detail"] for e in examples)
    assert "calls compared" in examples[0]["detail"] and f"First failure: {examples[0]['detail']}" in md


@pytest.mark.parametrize("width", [8])
def test_a_difference_only_in_the_tail_names_the_tail(tmp_path, width):
    """``_s`` takes the other order only in the last n mod 8 elements (a vector body of 8 and a
    scalar tail that disagree): the cause is the tail, not an open input."""
    src = tmp_path / "tail.c"
    src.write_text(LIB.replace("MULDIV", f"i >= n - n % {width}"))
    out = tmp_path / "report"
    code = main(["certify", "--impl", f"ctypes:{build_shared('r09-tail', [src])}", "--platform", "ieee",
                 "--dtype", "fp32", "--quick", "--only", "R09", "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    r09 = next(r for run in report["runs"] if run["variant"] == "s" for r in run["requirements"] if r["id"] == "R09")
    assert code == 1 and r09["status"] == "fail", r09
    first = next(e for e in r09["examples"] if "the private version" in e.get("detail", ""))
    assert f"cause: only in the last n mod {width} elements of a call" in first["detail"], first
    assert "manual leaves this open" not in first["detail"]
    n = first["length"]
    assert first["element"] >= n - n % width

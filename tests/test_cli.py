"""The command line: explain's content, and one clean line with exit 2 for bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sl1conf.conformance.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_middle_branch_fp16(capsys):
    # diff = 0.75 - 0.25 = 0.5 exactly; beta = 1: middle line; 0.5 / 1 * 3 = 1.5,
    # fp16 1.5 = 2^0 * 1.1b -> exponent 15 (0b01111), fraction 0b1000000000 -> 0x3e00.
    code, out, err = run(capsys, "explain", "--dtype", "fp16", "--dy", "3", "--x1", "0.75",
                         "--x2", "0.25", "--beta", "1")
    assert code == 0 and err == ""
    assert "diff = x1 - x2 = 0.5" in out
    assert "-beta <= diff <= beta" in out
    assert "correctly rounded dx1 = 0x3e00  1.5" in out
    assert "divmul-fp16     0x3e00      0" in out


def test_explain_fp32_hex_inputs_and_inexact_note(capsys):
    # beta = 0.1 rounds to fp32 0x3dcccccd; x1 = 1 (0x3f800000), x2 = 0: diff = 1 > beta -> dy.
    code, out, _ = run(capsys, "explain", "--dtype", "float", "--dy", "0x40400000", "--x1", "1",
                       "--x2", "0x0", "--beta", "0.1")
    assert code == 0
    assert "0x3dcccccd" in out and "(0.1 rounded to fp32)" in out
    assert "branch: diff > beta" in out
    assert "correctly rounded dx1 = 0x40400000  3" in out


def test_explain_shows_flush_to_zero_difference(capsys):
    # x1 = 2^-24 (fp16 0x0001, subnormal), x2 = 0, beta = 1, dy = 1: exact result 2^-24,
    # 0x0001; the flush-to-zero oracle reads x1 as +0, so the result is +0 (0x0000).
    code, out, _ = run(capsys, "explain", "--dtype", "fp16", "--dy", "1", "--x1", "0x0001",
                       "--x2", "0", "--beta", "1")
    assert code == 0
    assert "correctly rounded dx1 = 0x0001" in out
    assert "flush-to-zero oracle:   0x0000" in out


def test_explain_names_the_class_of_every_intermediate(capsys):
    # fp16: x1 = 2^-14 + 2^-15 (0x0600, normal), x2 = 2^-14 (0x0400): diff = 2^-15, subnormal (exact);
    # dy = 3: diff * dy = 3 * 2^-15 = 1.5 * 2^-14, the smallest binade's normal, exact;
    # beta = 2^15 (0x7800): diff / beta = 2^-30, below half the smallest subnormal 2^-25: underflows
    # to zero; 1 / beta = 2^-15, subnormal, exact.
    code, out, _ = run(capsys, "explain", "--dtype", "fp16", "--dy", "3", "--x1", "0x0600", "--x2", "0x0400",
                       "--beta", "0x7800")
    text = out.splitlines()
    first = text.index("  intermediates (exact value; what fp16 does to it)") + 1
    lines = {name: next(ln for ln in text[first:first + 4] if ln.startswith("  " + name + " "))
             for name in ("x1 - x2", "(x1 - x2) * dy", "(x1 - x2) / beta", "1 / beta")}
    assert code == 0
    assert "subnormal in fp16, exact" in lines["x1 - x2"]
    assert lines["(x1 - x2) * dy"].endswith("exact in fp16")
    assert "underflows to zero in fp16" in lines["(x1 - x2) / beta"]
    assert "subnormal in fp16, exact" in lines["1 / beta"]
    code, out, _ = run(capsys, "explain", "--dtype", "fp16", "--dy", "60000", "--x1", "2", "--x2", "0", "--beta",
                       "4")
    assert "overflows fp16 (rounds to infinity)" in out  # diff * dy = 120000 > 65504


@pytest.mark.parametrize("argv, message", [
    (["explain", "--dtype", "fp8", "--dy", "1", "--x1", "1", "--x2", "1", "--beta", "1"], "fp8"),
    (["explain", "--dtype", "fp16", "--dy", "one", "--x1", "1", "--x2", "1", "--beta", "1"], "--dy"),
    (["explain", "--dtype", "fp16", "--dy", "1", "--x1", "0x10000", "--x2", "1", "--beta", "1"], "--x1"),
    (["explain", "--dtype", "fp16", "--dy", "1"], "required"),
    (["demo", "--elements", "0"], "--elements"),
    (["nonsense"], "invalid choice"),
    ([], "required"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("sl1conf: error: ") and message in err
    assert "Traceback" not in err


def test_demo_runs(capsys):
    code, out, _ = run(capsys, "demo", "--dtype", "fp16", "--elements", "60", "--seed", "1")
    assert code == 0
    assert "fp16: 60 boundary-weighted elements" in out
    # muldiv in fp64 is correctly rounded for fp16 (see test_models), so it is bit-exact on all.
    assert any(line.split()[:3] == ["muldiv-fp64", "60", "0"] for line in out.splitlines())


def test_python_dash_m_and_bad_input_without_traceback():
    ok = subprocess.run([sys.executable, "-m", "sl1conf", "--version"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("sl1conf ")
    bad = subprocess.run([sys.executable, "-m", "sl1conf", "explain", "--dtype", "fp16", "--dy", "x",
                          "--x1", "1", "--x2", "1", "--beta", "1"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


@pytest.mark.parametrize("value, bits", [
    ("-inf", "0xfc00"),            # argparse would take these for options without the joining
    ("-1e-5", "0x80a8"),           # -1e-5 = -0.00001: nearest fp16 is -168 * 2^-24 (subnormal, 0xa8)
    ("-0x1p-3", "0xb000"),         # -0.125 = -2^-3: exponent 12 -> 0xb000
    ("1e99999999", "0x7c00"),      # far past 65504: +inf, decided without computing 10**99999999
    ("-1e-99999999", "0x8000"),    # far below 2^-25: -0
    ("0x1p99999999999", "0x7c00"),
    ("0e999999999", "0x0000"),
])
def test_explain_reads_negative_and_extreme_values(capsys, value, bits):
    code, out, err = run(capsys, "explain", "--dtype", "fp16", "--dy", "1", "--x1", value, "--x2", "0",
                         "--beta", "1")
    assert code == 0, err
    assert any(line.split()[:2] == ["x1", bits] for line in out.splitlines()), out


@pytest.mark.parametrize("argv", [["demo", "--seed", "-1"], ["demo", "--seed", "x"],
                                  ["explain", "--dtype", "fp16", "--dy", "1/3", "--x1", "0", "--x2", "0",
                                   "--beta", "1"]])
def test_more_bad_input(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err

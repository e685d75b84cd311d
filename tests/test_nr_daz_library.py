"""Issue 36's reference library, done when (a): the zoo's ``newton-raphson-daz``.

What a DSP engineer writes from the manual for a chip without a divider and with DAZ: 1/beta by
Newton-Raphson (three fused steps from a bit-trick seed, within 1 ULP), ``d * inv * dy`` in
float, subnormal inputs read as zero, subnormal results kept (no FTZ). It must pass mt7004 and
ft78ne (their error models allow a reciprocal within 2 ULP and a flush at any place, each
place consistently) through ``ctypes:`` and through ``sim:`` under qemu-aarch64, and fail
``ieee``, whose profile forbids flushing (``flush_to_zero = "forbidden"``, ``error_model.flush
= []``): R06 fails on its subnormal elements, and R01, which accepts an element only where the
error model reaches it, fails on the same flushed elements (its families hold subnormal inputs
too). The recipes of the docs run it as well (tests/test_doc_recipes.py).

And the claim its source makes: the reciprocal is within 1 ULP of the correctly rounded 1/b,
not always correctly rounded, with no libm (the fused step emulated exactly where the target
has no fused multiply-add).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess

import pytest

from sl1conf.adapters import AdapterError
from sl1conf.adapters import sample as S
from sl1conf.conformance.cli import main
from sl1conf.conformance.selftest import zoo

from conftest import certify_library, requirement_entry

NAME = "newton-raphson-daz"

# Includes the member's source to reach its static functions. ``r`` LO HI checks the reciprocal
# of every float whose bits are in [LO, HI) (subnormal b skipped: the library reads it as zero
# before); ``f`` N compares the fused step with libm's fmaf on N pseudo-random finite triples.
CHECK = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "newton-raphson-daz.c"
static long ord(float f) { int32_t i; memcpy(&i, &f, 4); return i < 0 ? -(long)(i & 0x7fffffff) : (long)i; }
int main(int argc, char **argv)
{
    unsigned long off = 0, worst = 0, n = 0;
    if (argc == 3 && argv[1][0] == 'f') {
        uint64_t x = 88172645463325252u;
        for (unsigned long k = strtoul(argv[2], 0, 10); k; k--) {
            float v[3], a, b;
            for (int j = 0; j < 3; j++) {
                uint32_t w;
                do { x ^= x << 13; x ^= x >> 7; x ^= x << 17; w = (uint32_t)x;
                     if (j == 2 && (k & 1)) w = (w & 0x807fffffu) | (uint32_t)((x >> 40) % 60 + 97) << 23; /* c near a*b */
                } while ((w >> 23 & 0xff) == 0xff);
                memcpy(&v[j], &w, 4);
            }
            a = fused(v[0], v[1], v[2]); b = fmaf(v[0], v[1], v[2]); n++;
            if (memcmp(&a, &b, 4)) off++;
        }
        printf("%lu %lu 0\n", n, off);
        return 0;
    }
    if (argc != 4 || argv[1][0] != 'r')
        return 2;
    for (unsigned long w = strtoul(argv[2], 0, 16); w < strtoul(argv[3], 0, 16); w++) {
        uint32_t u = (uint32_t)w; float b, r, ref; long d;
        if ((u & 0x7f800000u) == 0 && (u & 0x7fffffu)) continue;
        memcpy(&b, &u, 4); r = nr_reciprocal(b); ref = 1.0f / b; n++;
        if (r != r || ref != ref) { if ((r != r) != (ref != ref)) worst = 99; continue; }
        d = labs(ord(r) - ord(ref)); off += d != 0; if ((unsigned long)d > worst) worst = (unsigned long)d;
    }
    printf("%lu %lu %lu\n", n, off, worst);
    return 0;
}
"""


@pytest.fixture(scope="module")
def member():
    return next(m for m in zoo.members() if m.name == NAME)


@pytest.fixture(scope="module")
def library(member, tmp_path_factory) -> str:
    try:
        return str(zoo.build_library(member, tmp_path_factory.mktemp("nr-daz")))
    except AdapterError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def checker(cc, tmp_path_factory):
    """The check program, built for the host with the fused step emulated (-U__FP_FAST_FMAF: the
    path a target without a fused multiply-add takes), so that libm's fmaf can judge it."""
    folder = tmp_path_factory.mktemp("nr-check")
    (folder / "check.c").write_text(CHECK)
    exe = folder / "check"
    subprocess.run([*cc, "-O2", "-std=c11", "-ffp-contract=off", "-U__FP_FAST_FMAF", "-DSL1_NO_HALF",
                    f"-I{zoo.zoo_dir()}", f"-I{S.sources_dir()}", str(folder / "check.c"), "-o", str(exe), "-lm"],
                   check=True, capture_output=True)
    return lambda *args: tuple(int(v) for v in subprocess.run([str(exe), *args], check=True, capture_output=True,
                                                                  text=True).stdout.split())


def test_the_member_is_an_honest_fp32_member_of_mt7004(member):
    assert (member.kind, member.platform, member.dtype, member.variants) == ("honest", "mt7004", "fp32", ("s", "p"))
    assert "-DSL1_NO_HALF" in member.defines()


def test_the_reciprocal_is_within_one_ulp_and_not_always_correctly_rounded(checker):
    # one binade is every case of the normal range (seed and steps scale exactly by powers of 2):
    # 1,320 of its 2^23 mantissas are 1 ULP off, as the source says
    assert checker("r", "3f800000", "40000000") == (1 << 23, 1320, 1)
    assert checker("r", "00800000", "01000000") == (1 << 23, 1320, 1)  # the smallest normal betas
    n, off, worst = checker("r", "7e800000", "7f800001")  # 2^126 up to infinity: through b / 4
    assert (n, worst) == ((1 << 24) + 1, 1) and off > 0
    for lo, hi in (("80000000", "80000001"), ("bf800000", "bf900000"), ("7f800001", "7f800100")):  # -0, negatives, NaN
        assert checker("r", lo, hi)[2] <= 1, (lo, hi)


def test_the_emulated_fused_step_is_fmaf(checker):
    assert checker("f", "2000000") == (2000000, 0, 0)


def test_the_library_needs_no_libm(library):
    """The zoo links no libm: no fmaf (nor anything else of it) left for the loader."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm not found")
    undefined = subprocess.run([nm, "-D", "--undefined-only", library], capture_output=True, text=True).stdout
    assert "fmaf" not in undefined and "smoothl1lossgrad" not in undefined, undefined


@pytest.mark.parametrize("platform", ["mt7004", "ft78ne"])
def test_it_passes_the_dsp_profiles_through_ctypes(platform, library, tmp_path):
    code, failed, report = certify_library(tmp_path, library, platform, "--dtype", "fp32", "--quick")
    assert code == 0 and not failed, (platform, failed)
    assert {(r["dtype"], r["variant"]) for r in report["runs"]} == {("fp32", "s"), ("fp32", "p")}
    observed = requirement_entry(report, "R06")["observed"]
    # DAZ without FTZ: inputs seen flushed, results seen kept
    assert "inputs" in observed and "gradual underflow" in observed, observed


def test_it_fails_ieee_for_its_flush(library, tmp_path):
    code, failed, report = certify_library(tmp_path, library, "ieee", "--dtype", "fp32", "--quick")
    assert code == 1 and {"R01", "R06"} <= failed, failed
    assert requirement_entry(report, "R06")["status"] == "fail"


def _aarch64_tools():
    """Skip (fail under CI) where the cross compiler or qemu-user is missing."""
    missing = [t for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64") if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the aarch64 test: {' and '.join(missing)} not found")
        pytest.skip(f"{' and '.join(missing)} not found")


@pytest.fixture(scope="module")
def harness(member, tmp_path_factory):
    _aarch64_tools()
    return zoo.build_harness(member, tmp_path_factory.mktemp("nr-daz-a64"), cc="aarch64-linux-gnu-gcc")


def _failed(report: dict) -> set:
    return {e["id"] for r in report["runs"] for e in r["requirements"] if e["status"] == "fail"}


@pytest.mark.parametrize("platform", ["mt7004", "ft78ne"])
def test_it_passes_the_dsp_profiles_through_sim_under_qemu(platform, harness, tmp_path):
    impl = "sim:" + S.harness_template(harness, runner="qemu-aarch64 -L /usr/aarch64-linux-gnu")
    code = main(["certify", "--impl", impl, "--platform", platform, "--dtype", "fp32", "--quick",
                 "--out", str(tmp_path / "r")])
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert code == 0 and not _failed(report), _failed(report)
    assert {(r["dtype"], r["variant"]) for r in report["runs"]} == {("fp32", "s"), ("fp32", "p")}


@pytest.fixture(scope="module")
def board():
    from test_selftest_gate import Board  # the gate test's exports and builds of the self-test program

    return Board


@pytest.mark.parametrize("platform", ["mt7004", "ft78ne"])
def test_its_exported_self_test_passes_on_the_board_and_by_certify_results(platform, member, board, tmp_path, capsys):
    """The board path: the quick set exported for the profile, the self-test program built with the
    library for aarch64 (-DSL1_DUMP) and run under qemu standing in for the board: its own verdict
    is ALL PASS (exit 0), and certify --results judges the same printed results a pass."""
    _aarch64_tools()
    chip = dataclasses.replace(member, platform=platform)
    made = board(tmp_path)
    prog = made.program(chip, "qemu")
    run = subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(prog)], capture_output=True, text=True,
                         timeout=120)
    fails = [ln for ln in run.stdout.splitlines() if ln.startswith("FAIL ")]
    assert run.returncode == 0 and not fails and "ALL PASS" in run.stdout, fails or run.stdout[-500:]
    (tmp_path / "results.txt").write_text(run.stdout)
    code = main(["certify", "--results", str(tmp_path / "results.txt"), "--platform", platform, "--vectors",
                 str(made.vectors("fp32")), "--out", str(tmp_path / "r")])
    capsys.readouterr()
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert code == 0 and not _failed(report), _failed(report)

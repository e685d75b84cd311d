"""The sweep's check in binary32 (issue 38, item 2): ``kernel.f16_correctly_rounded`` (loops.c's
sl1k_f16_cr: binary32 with a proven error bound, binary64 where the binary32 value is too close
to a rounding boundary of fp16) gives the correctly rounded bits of every element, against the
binary64 oracle (``fast_oracle``, proven and checked against mpmath elsewhere) on dense edge sets
(every x1 against edge x2, betas and dy: subnormals, zeros, near-overflow, ties), against the
mpmath oracle itself on a sample, and on every instruction-set variant. NaN is compared as a
class (the check does)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from sl1conf.reference import fast_oracle, kernel, oracle
from sl1conf.reference import formats as F

FP16 = F.FP16
X1 = np.arange(1 << 16, dtype=np.uint16)
X2S = (0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x3C00, 0xBC00, 0x3555, 0x1234, 0x7BFF, 0xFBFF, 0x7BFE)
BETAS = (0x3C00, 0x2E66, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x5640, 0x0000, 0xBC00, 0x7C00, 0x7E00)
DYS = (0x3C00, 0x3555, 0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x0000, 0x8000, 0x7C00, 0x7E00)


def _h(a):
    return np.ascontiguousarray(a, np.uint16).view(np.float16)


def _same(got, want):
    return (got == want) | (F.is_nan_bits(FP16, got) & F.is_nan_bits(FP16, want))


def _planes():
    for beta in BETAS:
        for x2 in X2S:
            for dy in DYS:
                yield beta, np.full(X1.size, dy, np.uint16), np.full(X1.size, x2, np.uint16)


def test_every_x1_against_edge_x2_betas_and_dy_is_the_binary64_oracles():
    for beta, dy, x2 in _planes():
        want = np.ascontiguousarray(fast_oracle.smoothl1lossgrad(_h(dy), _h(X1), _h(x2), np.uint16(beta).view(np.float16)))
        got = kernel.f16_correctly_rounded(dy, X1, x2, beta)
        ok = _same(got, want.view(np.uint16))
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise AssertionError(f"{kernel.ISA} beta={beta:#06x} dy={int(dy[0]):#06x} x1={i:#06x} x2={int(x2[0]):#06x}: "
                                 f"got {int(got[i]):#06x}, want {int(want.view(np.uint16)[i]):#06x} "
                                 f"({int((~ok).sum())} differ)")


def test_a_sample_near_the_middle_line_is_the_mpmath_oracles():
    """Random elements, most of them on the middle line (|x1 - x2| < beta: the binary32 path
    and its filter), against the exact (mpmath) oracle."""
    rng = np.random.default_rng(382)
    n = 6000
    for beta in (0x3C00, 0x0001, 0x7BFF, 0x2E66):
        dy = rng.integers(0, 1 << 16, n).astype(np.uint16)
        x2 = rng.integers(0, 1 << 16, n).astype(np.uint16)
        with np.errstate(all="ignore"):
            near = (_h(x2).astype(np.float64) + rng.uniform(-1, 1, n) * float(np.uint16(beta).view(np.float16))).astype(np.float16)
        x1 = np.where(rng.random(n) < 0.8, near.view(np.uint16), rng.integers(0, 1 << 16, n).astype(np.uint16))
        x1 = x1.astype(np.uint16)
        want = np.ascontiguousarray(oracle.smoothl1lossgrad(_h(dy), _h(x1), _h(x2), np.uint16(beta).view(np.float16)))
        got = kernel.f16_correctly_rounded(dy, x1, x2, beta)
        assert _same(got, want.view(np.uint16)).all(), beta


def _digest() -> str:
    d = hashlib.sha256()
    for beta, dy, x2 in _planes():
        got = kernel.f16_correctly_rounded(dy, X1, x2, beta)
        got[F.is_nan_bits(FP16, got)] = FP16.qnan_bits
        d.update(got.tobytes())
    return d.hexdigest()


def digest_on(forced: str, module: str, function: str) -> tuple:
    """(the variant's name, ``module.function()``) in a subprocess with SL1CONF_KERNEL_ISA=``forced``
    (the kernel picks its variant once a process)."""
    code = (f"import sys; sys.path.insert(0, sys.argv[1]); import {module} as t; "
            f"from sl1conf.reference import kernel; print(kernel.ISA); print(t.{function}())")
    env = dict(os.environ, SL1CONF_KERNEL_ISA=forced)
    run = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, check=True)
    return tuple(run.stdout.strip().rsplit("\n", 1))


@pytest.mark.parametrize("forced", ["baseline", "avx2"])
def test_every_instruction_set_variant_gives_the_same_bits(forced):
    """The AVX-512 loop (this machine's, where it has AVX-512), the AVX2 one and the binary64
    baseline give the same bits for the dense planes."""
    isa, theirs = digest_on(forced, "test_sweep_check_f32", "_digest")
    assert theirs == _digest(), f"{isa} differs from {kernel.ISA}"

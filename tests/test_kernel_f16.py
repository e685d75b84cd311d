"""The fp16 vector loops, exhaustively in x1: every model, every instruction-set variant.

All 65,536 fp16 patterns of x1 against a grid of x2 and (beta, dy) pairs that
reach every branch, the half subnormals, overflow to infinity, signed zeros,
NaNs and rounding ties, for every fp16 model (compute fp16, fp32 and fp64).
The kernel as this process runs it (the widest variant the CPU has) must match
the numpy emulation of sl1conf.reference.models; the narrower variants, forced
with SL1CONF_KERNEL_ISA in a subprocess (the variant is chosen once per
process), must match this process bit for bit, NaN payloads aside (a digest of
each result with its NaNs made canonical). The baseline variant is the scalar
C loop, so this also checks every vector loop against it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from sl1conf.reference import formats as F
from sl1conf.reference import kernel
from sl1conf.reference.models import models_for

MODELS = [m.name for m in models_for(F.FP16)]


def _h(*values) -> list[int]:
    return [int(np.float16(v).view(np.uint16)) for v in values]


# x2: zeros, the smallest and largest subnormals, the smallest normal, ordinary values,
# values whose difference with a large x1 overflows, infinities and NaNs.
X2 = _h(0.0, -0.0, 2.0 ** -24, -3 * 2.0 ** -24, 0.5, 1.0, -1.0, 1.5, 3.0, -7.25, 1000.0, 2050.0,
        -65504.0, 65504.0, 1e-3, -0.1) + [0x03FF, 0x8400, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFD00]
# (beta, dy): subnormal, smallest normal, ordinary, powers of two that push d / beta into the
# subnormals (rounding ties there), the largest finite, infinities, zero, negative and NaN.
BETA_DY = [(_h(b)[0] if not isinstance(b, int) else b, _h(dy)[0]) for b, dy in [
    (0x0001, 1.0), (0x0001, 65504.0), (0x03FF, -3.0), (0x0400, 2.0 ** -24), (0.1, 1.0), (0.75, -0.1),
    (1.0, 1.0), (1.0, 3 * 2.0 ** -24), (3.0, 7.0), (7.0, -65504.0), (1024.0, 1.0), (4096.0, 0.5),
    (65504.0, 1.0), (65504.0, 1e-3), (0x7C00, 1.0), (0xFC00, -2.0), (0.0, 1.0), (-1.0, 1.0),
    (0x7E00, 1.0), (1.0, 0x7C01), (1.0, 0x7C00), (2.0, -0.0)]]

X1 = np.arange(1 << 16, dtype=np.uint16)


def case(beta: int, dy: int):
    """Every x1 against every x2 of X2, as float16 arrays, and beta."""
    x1 = np.tile(X1, len(X2))
    x2 = np.repeat(np.array(X2, np.uint16), X1.size)
    dyv = np.full(x1.size, dy, np.uint16)
    return (dyv.view(np.float16), x1.view(np.float16), x2.view(np.float16),
            np.uint16(beta).view(np.float16))


def digest(bits: np.ndarray) -> str:
    bits = np.where(F.is_nan_bits(F.FP16, bits), np.uint16(0x7E00), bits).astype(np.uint16)
    return hashlib.sha1(bits.tobytes()).hexdigest()


def digests() -> dict:
    """(model, beta, dy) -> digest of this process's kernel results."""
    out = {}
    for beta, dy in BETA_DY:
        args = case(beta, dy)
        for m in MODELS:
            out[m, beta, dy] = digest(kernel.smoothl1lossgrad(*args, model=m).view(np.uint16))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_every_x1_against_the_numpy_model(model):
    from sl1conf.reference.models import get_model
    m = get_model(model)
    for beta, dy in BETA_DY:
        args = case(beta, dy)
        got = kernel.smoothl1lossgrad(*args, model=model).view(np.uint16)
        want = m(*args).view(np.uint16)
        ok = F.same_result(F.FP16, got, want)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise AssertionError(
                f"{model} ({kernel.ISA}) beta={beta:#06x} dy={dy:#06x} x1={int(args[1].view(np.uint16)[i]):#06x} "
                f"x2={int(args[2].view(np.uint16)[i]):#06x}: got {int(got[i]):#06x}, want {int(want[i]):#06x} "
                f"({int((~ok).sum())} elements differ)")


@pytest.mark.slow
@pytest.mark.parametrize("forced", ["baseline", "avx2"])
def test_every_x1_the_same_on_every_instruction_set_variant(forced):
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import json, test_kernel_f16 as t; "
            "from sl1conf.reference import kernel; "
            "print(kernel.ISA); print(json.dumps([[k, v] for k, v in t.digests().items()]))")
    env = dict(os.environ, SL1CONF_KERNEL_ISA=forced)
    run = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, check=True)
    import json
    isa, payload = run.stdout.split("\n", 1)
    theirs = {tuple(k): v for k, v in json.loads(payload)}
    ours = digests()
    bad = [k for k in ours if ours[k] != theirs[k]]
    assert not bad, f"{isa} differs from {kernel.ISA} for (model, beta, dy) {bad[:5]} ({len(bad)} in all)"


def test_ranges_the_fp64_round_to_odd_relies_on():
    """The vector round-to-odd is exact for |r| in [2^-126, 2^128): the extremes of the
    binary64 middle line for fp16 data, 2^-24 * 2^-24 / 65504 and 65504 (docs/kernel.md),
    stay inside, and come out right."""
    tiny, big, zero = np.float16(2.0 ** -24), np.float16(65504.0), np.float16(0.0)
    cases = [  # (dy, x1, x2, beta): the smallest and largest |r| of the middle line
        (tiny, tiny, zero, big), (-tiny, zero, tiny, big), (big, big, zero, big), (big, -big, zero, big)]
    for m in ("divmul-fp64", "recipmul-fp64", "muldiv-fp64"):
        from sl1conf.reference.models import get_model
        for dy, a, c, b in cases:
            n = 37  # vector body and scalar tail
            args = (np.full(n, dy), np.full(n, a), np.full(n, c), b)
            got = kernel.smoothl1lossgrad(*args, model=m).view(np.uint16)
            want = get_model(m)(*args).view(np.uint16)
            assert (got == want).all(), (m, dy, a, c, b, got[0], want[0])

"""The AVX-512 fp16 loops on any x86-64 CPU: built over SIMDe's portable emulation.

The kernel picks its AVX-512 loops only on a CPU that has AVX-512, so a machine
without it never runs them. This test compiles the same source (f16_simd.inc
with the primitives of simd_avx512.inc) against SIMDe (the header-only
"SIMD everywhere" library, Debian's libsimde-dev), which implements each
intrinsic in portable C, and checks every fp16 model against the numpy
emulation on all 65,536 x1. Skipped where SIMDe or a C compiler is missing.
The four AVX-512 conversions SIMDe 0.7 lacks are written below from their
256-bit halves (F16C and AVX, which SIMDe has).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sl1conf.reference import formats as F
from sl1conf.reference.models import get_model, models_for

CSRC = Path(__file__).resolve().parents[1] / "reference" / "csrc"
SIMDE = Path("/usr/include/simde/x86/avx512.h")

HARNESS = r"""
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
#include <stdint.h>
#include <string.h>
#include "loops.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define V4
#define RNE (SIMDE_MM_FROUND_TO_NEAREST_INT | SIMDE_MM_FROUND_NO_EXC)
#ifndef __mmask16
typedef simde__mmask16 __mmask16;
typedef simde__mmask8 __mmask8;
#endif
typedef ptrdiff_t (*vh_fn)(const uint16_t *, const uint16_t *, const uint16_t *, float, float,
                          uint16_t *, ptrdiff_t);
typedef ptrdiff_t (*vd_fn)(const uint16_t *, const uint16_t *, const uint16_t *, double, double,
                          uint16_t *, ptrdiff_t);

static simde__m512 join_ps(simde__m256 lo, simde__m256 hi) {
    return simde_mm512_castpd_ps(simde_mm512_insertf64x4(
        simde_mm512_castpd256_pd512(simde_mm256_castps_pd(lo)), simde_mm256_castps_pd(hi), 1));
}
static simde__m256 hi_ps(simde__m512 v) {
    return simde_mm256_castpd_ps(simde_mm512_extractf64x4_pd(simde_mm512_castps_pd(v), 1));
}
#ifndef _mm512_cvtph_ps
static simde__m512 emul_cvtph_ps(simde__m256i h) {
    return join_ps(simde_mm256_cvtph_ps(simde_mm256_castsi256_si128(h)),
                   simde_mm256_cvtph_ps(simde_mm256_extracti128_si256(h, 1)));
}
#define _mm512_cvtph_ps emul_cvtph_ps
#endif
#ifndef _mm512_cvtps_ph
static simde__m256i emul_cvtps_ph(simde__m512 v) {
    return simde_mm256_set_m128i(simde_mm256_cvtps_ph(hi_ps(v), RNE),
                                 simde_mm256_cvtps_ph(simde_mm512_castps512_ps256(v), RNE));
}
#define _mm512_cvtps_ph(v, imm) emul_cvtps_ph(v)
#endif
#ifndef _mm512_cvtpd_ps
static simde__m256 emul_cvtpd_ps(simde__m512d x) {
    return simde_mm256_set_m128(simde_mm256_cvtpd_ps(simde_mm512_extractf64x4_pd(x, 1)),
                                simde_mm256_cvtpd_ps(simde_mm512_castpd512_pd256(x)));
}
#define _mm512_cvtpd_ps emul_cvtpd_ps
#endif
#ifndef _mm512_cvtps_pd
static simde__m512d emul_cvtps_pd(simde__m256 v) {
    return simde_mm512_insertf64x4(
        simde_mm512_castpd256_pd512(simde_mm256_cvtps_pd(simde_mm256_castps256_ps128(v))),
        simde_mm256_cvtps_pd(simde_mm256_extractf128_ps(v, 1)), 1);
}
#define _mm512_cvtps_pd emul_cvtps_pd
#endif

#include "simd_avx512.inc"
#include "f16_simd.inc"

ptrdiff_t emul_f16_vec(int model, const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                       uint16_t beta, uint16_t *out, ptrdiff_t n) {
    return f16_vec_z(model, dy, x1, x2, beta, out, n);
}
"""


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not SIMDE.exists():
        pytest.skip("needs a C compiler and SIMDe's headers (Debian: libsimde-dev)")
    d = tmp_path_factory.mktemp("avx512emul")
    (d / "harness.c").write_text(HARNESS)
    lib = d / "emul.so"
    subprocess.run([cc, "-O1", "-std=gnu11", "-shared", "-fPIC", "-fno-trapping-math", "-ffp-contract=off",
                    "-fexcess-precision=standard", "-I", str(CSRC), str(d / "harness.c"), "-o", str(lib)],
                   check=True, capture_output=True)
    f = ctypes.CDLL(str(lib)).emul_f16_vec
    p = ctypes.c_void_p
    f.argtypes = [ctypes.c_int, p, p, p, ctypes.c_uint16, p, ctypes.c_ssize_t]
    f.restype = ctypes.c_ssize_t
    return f


def _h(*values) -> list[int]:
    return [int(np.float16(v).view(np.uint16)) for v in values]


X2 = _h(0.0, -0.0, 2.0 ** -24, 1.0, -7.25, 1000.0, -65504.0) + [0x03FF, 0x7C00, 0x7E00, 0xFC01]
BETA_DY = [(_h(b)[0] if not isinstance(b, int) else b, _h(dy)[0]) for b, dy in [
    (0x0001, 65504.0), (0.1, 1.0), (1.0, 3 * 2.0 ** -24), (1024.0, 1.0), (65504.0, 1e-3),
    (0x7C00, 1.0), (0xFC00, -2.0), (0.0, 1.0), (0x7E00, 1.0), (1.0, 0x7C01)]]


@pytest.mark.slow
@pytest.mark.parametrize("model", [m.name for m in models_for(F.FP16)])
def test_avx512_loops_under_emulation_match_the_numpy_model(emulated, model):
    from sl1conf.reference import kernel
    mid = kernel._MODEL_IDS["fp16", model]
    x1 = np.tile(np.arange(1 << 16, dtype=np.uint16), len(X2))
    x2 = np.repeat(np.array(X2, np.uint16), 1 << 16)
    n = x1.size
    for beta, dy in BETA_DY:
        dyv = np.full(n, dy, np.uint16)
        out = np.zeros(n, np.uint16)
        done = emulated(mid, dyv.ctypes.data, x1.ctypes.data, x2.ctypes.data, beta, out.ctypes.data, n)
        assert done == n  # a multiple of 16: all in vectors
        want = get_model(model)(dyv.view(np.float16), x1.view(np.float16), x2.view(np.float16),
                                np.uint16(beta).view(np.float16)).view(np.uint16)
        ok = F.same_result(F.FP16, out, want)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise AssertionError(f"{model} emulated AVX-512 beta={beta:#06x} dy={dy:#06x} x1={int(x1[i]):#06x} "
                                 f"x2={int(x2[i]):#06x}: got {int(out[i]):#06x}, want {int(want[i]):#06x} "
                                 f"({int((~ok).sum())} differ)")

# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The inner loops of ``sampling.fast_batch``: boundary-weighted bit patterns from random words,
one pass per array (numpy needed about fifteen passes, and its float-to-half cast is slow
wherever a result overflows or is subnormal). The words come from xoshiro256** (Blackman and
Vigna; integer operations only, so the same words on every machine), seeded with four words
of the batch's numpy Generator: a pure function of the campaign's seed and the batch index.

Rounding: ``edges`` adds in binary32, rounded to nearest even, then rounds to fp16 (for fp16
data) by one conversion to ``_Float16`` (nearest even), as ``x2.astype(float32) + beta``
then ``astype(float16)`` does in numpy.
"""

from libc.stdint cimport uint16_t, uint32_t, uint64_t

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    static inline uint32_t sl1d_f32_bits(float v) { uint32_t b; memcpy(&b, &v, 4); return b; }
    static inline float sl1d_bits_f32(uint32_t b) { float v; memcpy(&v, &b, 4); return v; }
    static const int sl1d_nudge[16] = {0, 0, 0, 0, 0, 0, 0, 0, -2, -2, -1, -1, 0, 1, 1, 2};

    /* xoshiro256** 1.0 (public domain, prng.di.unimi.it). */
    static inline uint64_t sl1d_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static inline uint64_t sl1d_next(uint64_t *s) {
        const uint64_t result = sl1d_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
        s[2] ^= t; s[3] = sl1d_rotl(s[3], 45);
        return result;
    }

    /* fp16 edges: x2 to float (exact), + or - beta in float (nearest even), to fp16 (nearest
     * even), nudged, clipped. Two builds of one loop: F16C instructions where the CPU has
     * them, libgcc's _Float16 conversions elsewhere (the same bits: both round to nearest even). */
    #define SL1D_EDGES16(NAME, TARGET, TO_F, TO_H)                                         \
    TARGET static void NAME(uint64_t *s, const uint16_t *x2, float beta, uint16_t *out,      \
                            ptrdiff_t n) {                                                  \
        for (ptrdiff_t i = 0; i < n; i++) {                                                 \
            const uint64_t w = sl1d_next(s);                                                \
            const float v = TO_F(x2[i]) + ((w & 1) ? -beta : beta);                          \
            long b = (long)TO_H(v) + sl1d_nudge[(w >> 1) & 15];                              \
            out[i] = (uint16_t)(b < 0 ? 0 : (b > 0xFFFF ? 0xFFFF : b));                     \
        }                                                                                   \
    }
    static inline float sl1d_h2f(uint16_t b) { _Float16 h; memcpy(&h, &b, 2); return (float)h; }
    static inline uint16_t sl1d_f2h(float v) { _Float16 h = (_Float16)v; uint16_t b; memcpy(&b, &h, 2); return b; }
    SL1D_EDGES16(sl1d_edges16_soft, , sl1d_h2f, sl1d_f2h)
    #if defined(__x86_64__) && defined(__GNUC__)
    #include <immintrin.h>
    #define SL1D_F16C __attribute__((target("f16c")))
    SL1D_F16C static inline float sl1d_h2f_x(uint16_t b) { return _cvtsh_ss(b); }
    SL1D_F16C static inline uint16_t sl1d_f2h_x(float v) { return (uint16_t)_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT); }
    SL1D_EDGES16(sl1d_edges16_f16c, SL1D_F16C, sl1d_h2f_x, sl1d_f2h_x)
    static void sl1d_edges16(uint64_t *s, const uint16_t *x2, float beta, uint16_t *out, ptrdiff_t n) {
        if (__builtin_cpu_supports("f16c")) sl1d_edges16_f16c(s, x2, beta, out, n);
        else sl1d_edges16_soft(s, x2, beta, out, n);
    }
    #else
    #define sl1d_edges16 sl1d_edges16_soft
    #endif
    """
    uint32_t sl1d_f32_bits(float v) nogil
    float sl1d_bits_f32(uint32_t b) nogil
    const int *sl1d_nudge
    uint64_t sl1d_next(uint64_t *s) nogil
    void sl1d_edges16(uint64_t *s, const uint16_t *x2, float beta, uint16_t *out, Py_ssize_t n) nogil

ctypedef fused bits_t:
    uint16_t
    uint32_t

def populations(uint64_t[::1] state, bits_t[::1] out, const bits_t[::1] fields,
                const bits_t[::1] specials, bits_t keep, const uint32_t[::1] bounds, const bits_t[::1] edge):
    """out[i] from the i-th word w of xoshiro256** from ``state`` (four words, advanced): the
    population whose bound (cumulative 256ths, ascending) first exceeds bits 41..48 of w;
    populations in order: edge[i] (when ``edge`` is not empty), the low bits with their
    exponent field replaced by fields[bits 32..35], the low bits as they are, specials[bits
    36..40 scaled to len(specials)]."""
    cdef Py_ssize_t i, n = out.shape[0]
    cdef int first = 0 if edge.shape[0] else 1, pop
    cdef uint64_t w
    cdef uint32_t hi, pick, nspecial = specials.shape[0]
    cdef bits_t low
    cdef bits_t cand[4]
    if state.shape[0] != 4 or (edge.shape[0] and edge.shape[0] != n) or fields.shape[0] != 16 or nspecial == 0:
        raise ValueError("populations: arrays of the wrong length")
    if bounds.shape[0] != 4 - first or bounds[bounds.shape[0] - 1] != 256:
        raise ValueError("populations: one bound per population, the last 256")
    with nogil:
        for i in range(n):
            w = sl1d_next(&state[0])
            low = <bits_t>w
            hi = <uint32_t>(w >> 32)
            pick = (hi >> 9) & 255
            pop = first + (pick >= bounds[0]) + (pick >= bounds[1]) + (pick >= bounds[2])
            cand[0] = edge[i] if first == 0 else 0
            cand[1] = (low & keep) | fields[hi & 15]
            cand[2] = low
            cand[3] = specials[(((hi >> 4) & 31) * nspecial) >> 5]
            out[i] = cand[pop]


def edges(uint64_t[::1] state, const bits_t[::1] x2, float beta, bits_t[::1] out):
    """out[i]: the pattern of x2[i] + beta or x2[i] - beta (bit 0 of the i-th word of
    xoshiro256** from ``state``, advanced), then half of them moved by -2..2 patterns (bits
    1..4), clipped to the pattern range."""
    cdef Py_ssize_t i, n = x2.shape[0]
    cdef uint64_t w
    cdef float v
    cdef long long b, top = (<long long>1 << (8 * sizeof(bits_t))) - 1
    if state.shape[0] != 4 or out.shape[0] != n:
        raise ValueError("edges: arrays of the wrong length")
    if bits_t is uint16_t:
        with nogil:
            sl1d_edges16(&state[0], &x2[0] if n else NULL, beta, &out[0] if n else NULL, n)
        return
    with nogil:
        for i in range(n):
            w = sl1d_next(&state[0])
            b = sl1d_f32_bits(sl1d_bits_f32(x2[i]) + (-beta if w & 1 else beta)) + sl1d_nudge[(w >> 1) & 15]
            out[i] = <bits_t>(0 if b < 0 else (top if b > top else b))

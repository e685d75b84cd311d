/* Run-time dispatch over the instruction-set variants of loops_body.inc.
 *
 * The baseline variant is portable C (on x86-64 without F16C, half conversions
 * go through libgcc and are slow but exact); on x86-64 two more copies are
 * built, for AVX2 + F16C and for AVX-512 F/BW/VL, each chosen only when the CPU
 * has it. No variant assumes the build machine's CPU, so one wheel runs
 * everywhere.
 */
#include "loops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* double -> half, rounded once: round to odd into float (24 >= 11 + 2 bits),
 * then to nearest-even into half (Boldo and Melquiond's round-to-odd). A plain
 * (_Float16)(float)x would round twice and can be wrong near half's ties. */
static inline _Float16 sl1_d2h(double x) {
    float f = (float)x;
    if ((double)f != x && x == x) {
        uint32_t u;
        memcpy(&u, &f, 4);
        if (!(u & 1u))
            u += fabs((double)f) < fabs(x) ? 1u : (uint32_t)-1;
        memcpy(&f, &u, 4);
    }
    return (_Float16)f;
}

#define TO_HALF__Float16(r) (r)
#define TO_HALF_float(r) ((_Float16)(r))
#define TO_HALF_double(r) sl1_d2h(r)

#define SUFFIX _base
#define TARGET
#include "loops_body.inc"
#undef SUFFIX
#undef TARGET

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SL1_HAVE_V3 1
#define SUFFIX _v3
#define TARGET __attribute__((target("avx2,f16c")))
#include "loops_body.inc"
#undef SUFFIX
#undef TARGET

/* fp16 data, compute in half or float, eight lanes at a time with F16C: GCC
 * does not vectorize _Float16 conversions, so these loops spell them out.
 * HALF = 1 rounds every step to half (convert to half and back), as the
 * _Float16 models do; the last step is rounded by the final conversion. */
#include <immintrin.h>
#define V3 __attribute__((target("avx2,f16c")))
#define RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

V3 static inline __m256 round_half(__m256 v) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, RNE));
}
V3 static inline __m128i mask16(__m256 m) {
    __m256i i = _mm256_castps_si256(m);
    return _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
}

#define STEP_DIVMUL(HALF)   q = _mm256_div_ps(d, vb); if (HALF) q = round_half(q); r = _mm256_mul_ps(q, g);
#define STEP_RECIPMUL(HALF) q = _mm256_mul_ps(d, vrb); if (HALF) q = round_half(q); r = _mm256_mul_ps(q, g);
#define STEP_MULDIV(HALF)   q = _mm256_mul_ps(d, g); if (HALF) q = round_half(q); r = _mm256_div_ps(q, vb);

#define V3_F16(ORDER, HALF, C)                                                        \
V3 static void f16x_##ORDER##_##C(const uint16_t *dy, const uint16_t *x1,             \
        const uint16_t *x2, uint16_t beta_bits, uint16_t *out, ptrdiff_t n) {         \
    _Float16 bh;                                                                      \
    memcpy(&bh, &beta_bits, 2);                                                       \
    const float b = (float)bh;                                                        \
    float rb = 1.0f / b;                                                              \
    if (HALF) rb = (float)(_Float16)rb;                                               \
    const __m256 vb = _mm256_set1_ps(b), vnb = _mm256_set1_ps(-b),                    \
                 vrb = _mm256_set1_ps(rb);                                            \
    const __m128i sign = _mm_set1_epi16((short)0x8000);                               \
    (void)vrb;                                                                        \
    ptrdiff_t i = 0;                                                                  \
    for (; i + 8 <= n; i += 8) {                                                      \
        const __m128i hy = _mm_loadu_si128((const __m128i *)(dy + i));                \
        const __m256 g = _mm256_cvtph_ps(hy);                                         \
        const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x1 + i))); \
        const __m256 c = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x2 + i))); \
        __m256 d = _mm256_sub_ps(a, c), q, r;                                         \
        if (HALF) d = round_half(d);                                                  \
        STEP_##ORDER(HALF)                                                            \
        const __m128i m = _mm256_cvtps_ph(r, RNE);                                    \
        const __m128i gt = mask16(_mm256_cmp_ps(d, vb, _CMP_GT_OQ));                  \
        const __m128i lt = mask16(_mm256_cmp_ps(d, vnb, _CMP_LT_OQ));                 \
        __m128i res = _mm_blendv_epi8(m, _mm_xor_si128(hy, sign), lt);                \
        res = _mm_blendv_epi8(res, hy, gt);                                           \
        _mm_storeu_si128((__m128i *)(out + i), res);                                  \
    }                                                                                 \
    if (i < n)                                                                        \
        f16_##ORDER##_##C##_v3(dy + i, x1 + i, x2 + i, beta_bits, out + i, n - i);    \
}

V3_F16(DIVMUL, 1, _Float16) V3_F16(RECIPMUL, 1, _Float16) V3_F16(MULDIV, 1, _Float16)
V3_F16(DIVMUL, 0, float)    V3_F16(RECIPMUL, 0, float)    V3_F16(MULDIV, 0, float)

static const f16_fn f16_table_x[9] = {
    f16x_DIVMUL__Float16, f16x_DIVMUL_float, f16_DIVMUL_double_v3,
    f16x_RECIPMUL__Float16, f16x_RECIPMUL_float, f16_RECIPMUL_double_v3,
    f16x_MULDIV__Float16, f16x_MULDIV_float, f16_MULDIV_double_v3,
};

/* AVX-512 (F, BW, VL): the same loops sixteen lanes wide. */
#define SUFFIX _v4
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c,prefer-vector-width=512")))
#include "loops_body.inc"
#undef SUFFIX
#undef TARGET

#define V4 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))

V4 static inline __m512 round_half16(__m512 v) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, RNE));
}

#define STEP16_DIVMUL(HALF)   q = _mm512_div_ps(d, vb); if (HALF) q = round_half16(q); r = _mm512_mul_ps(q, g);
#define STEP16_RECIPMUL(HALF) q = _mm512_mul_ps(d, vrb); if (HALF) q = round_half16(q); r = _mm512_mul_ps(q, g);
#define STEP16_MULDIV(HALF)   q = _mm512_mul_ps(d, g); if (HALF) q = round_half16(q); r = _mm512_div_ps(q, vb);

#define V4_F16(ORDER, HALF, C)                                                        \
V4 static void f16z_##ORDER##_##C(const uint16_t *dy, const uint16_t *x1,             \
        const uint16_t *x2, uint16_t beta_bits, uint16_t *out, ptrdiff_t n) {         \
    _Float16 bh;                                                                      \
    memcpy(&bh, &beta_bits, 2);                                                       \
    const float b = (float)bh;                                                        \
    float rb = 1.0f / b;                                                              \
    if (HALF) rb = (float)(_Float16)rb;                                               \
    const __m512 vb = _mm512_set1_ps(b), vnb = _mm512_set1_ps(-b),                    \
                 vrb = _mm512_set1_ps(rb);                                            \
    const __m256i sign = _mm256_set1_epi16((short)0x8000);                            \
    (void)vrb;                                                                        \
    ptrdiff_t i = 0;                                                                  \
    for (; i + 16 <= n; i += 16) {                                                    \
        const __m256i hy = _mm256_loadu_si256((const __m256i *)(dy + i));             \
        const __m512 g = _mm512_cvtph_ps(hy);                                         \
        const __m512 a = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x1 + i))); \
        const __m512 c = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x2 + i))); \
        __m512 d = _mm512_sub_ps(a, c), q, r;                                         \
        if (HALF) d = round_half16(d);                                                \
        STEP16_##ORDER(HALF)                                                          \
        const __m256i m = _mm512_cvtps_ph(r, RNE);                                    \
        const __mmask16 gt = _mm512_cmp_ps_mask(d, vb, _CMP_GT_OQ);                   \
        const __mmask16 lt = _mm512_cmp_ps_mask(d, vnb, _CMP_LT_OQ);                  \
        __m256i res = _mm256_mask_blend_epi16(lt, m, _mm256_xor_si256(hy, sign));     \
        res = _mm256_mask_blend_epi16(gt, res, hy);                                   \
        _mm256_storeu_si256((__m256i *)(out + i), res);                               \
    }                                                                                 \
    if (i < n)                                                                        \
        f16x_##ORDER##_##C(dy + i, x1 + i, x2 + i, beta_bits, out + i, n - i);        \
}

V4_F16(DIVMUL, 1, _Float16) V4_F16(RECIPMUL, 1, _Float16) V4_F16(MULDIV, 1, _Float16)
V4_F16(DIVMUL, 0, float)    V4_F16(RECIPMUL, 0, float)    V4_F16(MULDIV, 0, float)

static const f16_fn f16_table_z[9] = {
    f16z_DIVMUL__Float16, f16z_DIVMUL_float, f16_DIVMUL_double_v4,
    f16z_RECIPMUL__Float16, f16z_RECIPMUL_float, f16_RECIPMUL_double_v4,
    f16z_MULDIV__Float16, f16z_MULDIV_float, f16_MULDIV_double_v4,
};
#endif

static int variant = -1; /* 0 baseline, 1 AVX2 + F16C, 2 AVX-512 F/BW/VL */

static int pick(void) {
    if (variant < 0) {
        const char *forced = getenv("SL1CONF_KERNEL_ISA");
        int v = 0;
#ifdef SL1_HAVE_V3
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
            v = 1;
        if (v && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
            && __builtin_cpu_supports("avx512vl"))
            v = 2;
#endif
        if (forced && strcmp(forced, "baseline") == 0)
            v = 0;
        else if (forced && strcmp(forced, "avx2") == 0 && v > 1)
            v = 1;
        variant = v;
    }
    return variant;
}

const char *sl1k_isa(void) {
#ifdef SL1_HAVE_V3
    static const char *names[] = {"x86-64 baseline", "x86-64 AVX2+F16C", "x86-64 AVX-512"};
    return names[pick()];
#else
    (void)pick();
    return "generic";
#endif
}

int sl1k_f32(int model, const float *dy, const float *x1, const float *x2,
             float beta, float *out, ptrdiff_t n) {
    if (model < 0 || model >= 9 || !f32_table_base[model])
        return -1;
#ifdef SL1_HAVE_V3
    switch (pick()) {
    case 2: f32_table_v4[model](dy, x1, x2, beta, out, n); return 0;
    case 1: f32_table_v3[model](dy, x1, x2, beta, out, n); return 0;
    }
#endif
    f32_table_base[model](dy, x1, x2, beta, out, n);
    return 0;
}

int sl1k_f16(int model, const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
             uint16_t beta, uint16_t *out, ptrdiff_t n) {
    if (model < 0 || model >= 9)
        return -1;
#ifdef SL1_HAVE_V3
    switch (pick()) {
    case 2: f16_table_z[model](dy, x1, x2, beta, out, n); return 0;
    case 1: f16_table_x[model](dy, x1, x2, beta, out, n); return 0;
    }
#endif
    f16_table_base[model](dy, x1, x2, beta, out, n);
    return 0;
}

ptrdiff_t sl1k_f32_filtered(const uint32_t *dy, const float *x1, const float *x2,
                            float beta, uint32_t *out, uint8_t *ambiguous, ptrdiff_t n) {
    const double b = beta, nb = -(double)beta;
    const double lo_scale = 1.0 - 0x1p-50, hi_scale = 1.0 + 0x1p-50;
    ptrdiff_t count = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        float gf;
        memcpy(&gf, &dy[i], 4);
        const double a = x1[i], c = x2[i], g = gf;
        const double s = a - c;                      /* rounded diff */
        const double bb = s - a;                     /* TwoSum: exact residual e */
        double e = (a - (s - bb)) + (-c - bb);
        e = (s - s == 0.0) ? e : 0.0;                /* no residual for inf / NaN */
        const int gt = (s > b) | ((s == b) & (e > 0.0));
        const int lt = (!gt) & ((s < nb) | ((s == nb) & (e < 0.0)));
        const double r = (s * g) / b;
        const float lo = (float)(r * lo_scale), hi = (float)(r * hi_scale);
        uint32_t lob, hib;
        memcpy(&lob, &lo, 4);
        memcpy(&hib, &hi, 4);
        const int amb = !gt & !lt & (lob != hib) & !((lo != lo) & (hi != hi));
        out[i] = gt ? dy[i] : (lt ? dy[i] ^ 0x80000000u : lob);
        ambiguous[i] = (uint8_t)amb;
        count += amb;
    }
    return count;
}

/* Run-time dispatch over the instruction-set variants of loops_body.inc.
 *
 * The baseline variant is portable C (on x86-64 without F16C, half conversions
 * go through libgcc and are slow but exact); on x86-64 two more copies are
 * built, for AVX2 + F16C and for AVX-512 F/BW/VL, each chosen only when the CPU
 * has it. No variant assumes the build machine's CPU, so one wheel runs
 * everywhere.
 */
#include "loops.h"
#include "pool.h"
#include "half_bits.h"

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

typedef ptrdiff_t (*vh_fn)(const uint16_t *, const uint16_t *, const uint16_t *, float, float,
                          uint16_t *, ptrdiff_t);
typedef ptrdiff_t (*vd_fn)(const uint16_t *, const uint16_t *, const uint16_t *, double, double,
                          uint16_t *, ptrdiff_t);

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

/* fp16 data, every model, a vector at a time (f16_simd.inc): GCC does not
 * vectorize _Float16 conversions, so those loops spell them out with F16C. */
#include <immintrin.h>
#define RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V3 __attribute__((target("avx2,f16c")))
#define V4 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))

#include "simd_avx2.inc"
#include "f16_simd.inc"
#include "simd_undef.inc"

/* AVX-512 (F, BW, VL): the scalar loops built for it, and f16_simd.inc sixteen lanes wide. */
#define SUFFIX _v4
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c,prefer-vector-width=512")))
#include "loops_body.inc"
#undef SUFFIX
#undef TARGET

#include "simd_avx512.inc"
#include "f16_simd.inc"
#include "simd_undef.inc"
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
    const f16_fn *scalar = f16_table_base;
#ifdef SL1_HAVE_V3
    /* Whole vectors, the widest first, then the scalar loop of the same variant. */
    ptrdiff_t done = 0;
    switch (pick()) {
    case 2:
        done = f16_vec_z(model, dy, x1, x2, beta, out, n);
        done += f16_vec_x(model, dy + done, x1 + done, x2 + done, beta, out + done, n - done);
        scalar = f16_table_v4;
        break;
    case 1:
        done = f16_vec_x(model, dy, x1, x2, beta, out, n);
        scalar = f16_table_v3;
        break;
    }
    dy += done, x1 += done, x2 += done, out += done, n -= done;
#endif
    if (n > 0)
        scalar[model](dy, x1, x2, beta, out, n);
    return 0;
}

static void traffic(int is_f32, const void *a, const void *b, const void *c, void *out,
                    ptrdiff_t n) {
    int v = 0;
#ifdef SL1_HAVE_V3
    v = pick();
#endif
    if (is_f32)
        (v == 2 ? traffic_uint32_t_v4 : v == 1 ? traffic_uint32_t_v3 : traffic_uint32_t_base)(a, b, c, out, n);
    else
        (v == 2 ? traffic_uint16_t_v4 : v == 1 ? traffic_uint16_t_v3 : traffic_uint16_t_base)(a, b, c, out, n);
}

static void call_range(void *ctx, ptrdiff_t start, ptrdiff_t stop) {
    const sl1k_call *c = ctx;
    const ptrdiff_t n = stop - start, s = c->is_f32 ? 4 : 2;
    const char *dy = (const char *)c->dy + start * s, *x1 = (const char *)c->x1 + start * s,
               *x2 = (const char *)c->x2 + start * s;
    char *out = (char *)c->out + start * s;
    if (n <= 0)
        return;
    if (c->traffic)
        traffic(c->is_f32, dy, x1, x2, out, n);
    else if (c->is_f32)
        sl1k_f32(c->model, (const float *)dy, (const float *)x1, (const float *)x2, c->f_beta,
                 (float *)out, n);
    else
        sl1k_f16(c->model, (const uint16_t *)dy, (const uint16_t *)x1, (const uint16_t *)x2,
                 c->h_beta, (uint16_t *)out, n);
}

int sl1k_run(const sl1k_call *call, ptrdiff_t n, int tasks, int threads, int aligned) {
    if (!call->traffic && (call->model < 0 || call->model >= 9
                           || (call->is_f32 && !f32_table_base[call->model])))
        return -1;
    if (tasks > 0 && n > 0)
        sl1_pool_run(call_range, (void *)call, n, tasks, threads, aligned);
    return 0;
}

int sl1k_pool_workers(void) { return sl1_pool_workers(); }

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

/* ---- the correctly rounded result (the sweep's check: judge_pass.c) ---------- */

int sl1k_variant(void) { return pick(); }

void sl1k_f16_cr(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2, uint16_t beta,
                 uint16_t *out, ptrdiff_t n) {
    ptrdiff_t done = 0;
#ifdef SL1_HAVE_V3
    const float b = (float)h_value(beta);
    if (b > 0 && b < INFINITY) { /* f16_simd.inc's cr_f32: binary32, proven, binary64 where it cannot tell */
        switch (pick()) {
        case 2:
            done = cr_f32_z(dy, x1, x2, b, out, n);
            done += cr_f32_x(dy + done, x1 + done, x2 + done, b, out + done, n - done);
            break;
        case 1:
            done = cr_f32_x(dy, x1, x2, b, out, n);
            break;
        }
    }
#endif
    if (n > done) /* the binary64 model (correctly rounded: fast_oracle's proof) */
        sl1k_f16(SL1_MULDIV * 3 + SL1_C64, dy + done, x1 + done, x2 + done, beta, out + done, n - done);
}

int sl1k_f16_row(int model, const uint16_t *x1, uint16_t dy, uint16_t x2, uint16_t beta, uint16_t *out,
                 ptrdiff_t n) {
    if (model < -1 || model >= 9)
        return -1;
    ptrdiff_t done = 0;
#ifdef SL1_HAVE_V3
    const float b = (float)h_value(beta);
    /* f16_simd.inc's cr_row_f32 (0 < beta < inf, as sl1k_f16_cr's cr_f32) and f16_row */
    if (!h_special(dy) && !h_special(x2) && (model >= 0 || (b > 0 && b < INFINITY))) {
        switch (pick()) {
        case 2:
            done = model < 0 ? cr_row_f32_z(x1, dy, x2, b, out, n) : f16_row_z(model, x1, dy, x2, beta, out, n);
            __attribute__((fallthrough)); /* the AVX2 loop's vectors take what those left */
        case 1:
            done += model < 0 ? cr_row_f32_x(x1 + done, dy, x2, b, out + done, n - done)
                              : f16_row_x(model, x1 + done, dy, x2, beta, out + done, n - done);
            break;
        }
    }
#endif
    uint16_t cdy[256], cx2[256]; /* the rest: the whole loops, the row's dy and x2 repeated */
    for (int j = 0; j < 256; j++)
        cdy[j] = dy, cx2[j] = x2;
    while (done < n) {
        const ptrdiff_t m = n - done < 256 ? n - done : 256;
        if (model < 0)
            sl1k_f16_cr(cdy, x1 + done, cx2, beta, out + done, m);
        else
            sl1k_f16(model, cdy, x1 + done, cx2, beta, out + done, m);
        done += m;
    }
    return 0;
}

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

/* ---- the sweep's check and the judge's shortcut ------------------------------
 *
 * The sweep's comparison (sl1conf.conformance.search.sweep): the correctly rounded
 * result of every element (sl1k_f16_cr below) computed CHUNK elements at a time into a
 * buffer that stays in the L1 cache, and compared with got there, NaN as a class. A block
 * that is mostly right costs the arithmetic and one read of got, not a 2-byte-per-element
 * array written out and read back by three passes.
 *
 * The elements that differ are then sorted in the same pass (sl1k_f16_judge_pass): those
 * judge.within_budget_alone (Python, the definition) says are WITHIN_BUDGET are counted
 * here, into the sweep's histogram (sweep_tally: the row by whether an accepted model gives
 * got, the bucket by the ULP distance, the zero-sign count, the worst and first zero-sign
 * element of each row), and only the others leave for the whole judge: their indices in
 * idx and the correctly rounded bits in want (a NaN as the canonical quiet NaN 0x7e00).
 * tests/test_sweep_shortcut.py checks both against the Python definitions. */

/* Bit k set where a[k] != b[k], k < 64: the check's scan of a run (the few elements that differ
 * are then visited by their bits, with no branch per element to mispredict). */
static uint64_t diff64_base(const uint16_t *a, const uint16_t *b) {
    uint64_t mask = 0;
    for (int k = 0; k < 64; k++)
        mask |= (uint64_t)(a[k] != b[k]) << k;
    return mask;
}
#ifdef SL1_HAVE_V3
V3 static uint64_t diff64_x(const uint16_t *a, const uint16_t *b) {
    uint64_t mask = 0;
    for (int q = 0; q < 64; q += 32) {
        const __m256i c0 = _mm256_cmpeq_epi16(_mm256_loadu_si256((const __m256i *)(a + q)),
                                              _mm256_loadu_si256((const __m256i *)(b + q)));
        const __m256i c1 = _mm256_cmpeq_epi16(_mm256_loadu_si256((const __m256i *)(a + q + 16)),
                                              _mm256_loadu_si256((const __m256i *)(b + q + 16)));
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi16(c0, c1), 0xD8);
        mask |= (uint64_t)(uint32_t)~_mm256_movemask_epi8(p) << q;
    }
    return mask;
}
V4 static uint64_t diff64_z(const uint16_t *a, const uint16_t *b) {
    return (uint64_t)_mm512_cmpneq_epi16_mask(_mm512_loadu_si512(a), _mm512_loadu_si512(b))
           | (uint64_t)_mm512_cmpneq_epi16_mask(_mm512_loadu_si512(a + 32), _mm512_loadu_si512(b + 32)) << 32;
}
#endif

static inline int h_special(uint16_t b) { return (b & 0x7c00) == 0x7c00; }
static inline int h_nan(uint16_t b) { return (b & 0x7fff) > 0x7c00; }
static inline int h_zero(uint16_t b) { return (b & 0x7fff) == 0; }
static inline int h_subnormal(uint16_t b) { return (b & 0x7c00) == 0 && (b & 0x03ff) != 0; }
static inline int64_t h_ordered(uint16_t b) { /* formats.ordered */
    const int64_t m = b & 0x7fff;
    return (b & 0x8000) ? -m : m;
}
/* A half's value, exactly, on its bits (the portable build would call libgcc for _Float16). */
static inline double h_value(uint16_t b) {
    const uint64_t sign = (uint64_t)(b & 0x8000) << 48, e = (b >> 10) & 31, m = b & 0x3ff;
    if (!e) {
        const double v = (double)m * 0x1p-24;
        return sign ? -v : v;
    }
    const uint64_t u = sign | (e == 31 ? 0x7ffull : e + 1008) << 52 | m << 42;
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* distances.bucket_of for a distance between two numbers (no NaN), with sweep_tally's
 * zero-sign bucket (9) for 0: 1-4 their own, 5-8, 9-64, 65 and more. */
static inline int h_bucket(int64_t d) {
    return d == 0 ? 9 : d <= 4 ? (int)d : d <= 8 ? 5 : d <= 64 ? 6 : 7;
}

/* The elements judge.within_budget_alone accepts, gathered CHUNK at a time: their accepted
 * models' bits computed on the gathered inputs by the kernel's own loops (judge.model_match),
 * then counted into t in index order. */
typedef struct {
    uint16_t dy[2048], x1[2048], x2[2048], got[2048], want[2048], bits[2048];
    int64_t at[2048], dist[2048];
    uint8_t model[2048];
    ptrdiff_t n;
} alone_buf;

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

static void alone_flush(alone_buf *a, uint16_t beta, const int *models, int nmodels, sl1k_alone_tally *t) {
    const ptrdiff_t n = a->n;
    if (!n)
        return;
    memset(a->model, 0, (size_t)n);
    for (int m = 0; m < nmodels; m++) {
        sl1k_f16(models[m], a->dy, a->x1, a->x2, beta, a->bits, n);
        for (ptrdiff_t k = 0; k < n; k++) /* formats.same_result: got is a number here */
            a->model[k] |= a->bits[k] == a->got[k];
    }
    for (ptrdiff_t k = 0; k < n; k++) {
        const int row = 2 * a->model[k], b = h_bucket(a->dist[k]); /* ftz: never for these */
        const uint16_t g = a->got[k], w = a->want[k];
        t->hist[row][b]++;
        if (a->dist[k] > t->worst_dist[row]) /* the first of the largest: the lowest index */
            t->worst_dist[row] = a->dist[k], t->worst[row] = a->at[k], t->worst_want[row] = w;
        if ((h_zero(g) || h_zero(w)) && ((g ^ w) & 0x8000)) {
            t->zsign[row][b]++;
            if (t->first_zsign[row] < 0)
                t->first_zsign[row] = a->at[k], t->zsign_want[row] = w;
        }
    }
    t->alone += n;
    a->n = 0;
}

ptrdiff_t sl1k_f16_judge_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                              uint16_t beta, const uint16_t *got, ptrdiff_t n, int budget,
                              int strict_zero_sign, const int *models, int nmodels,
                              int64_t *idx, uint16_t *want, sl1k_alone_tally *t) {
    enum { CHUNK = 2048, RUN = 64 }; /* RUN: the bits of diff64's mask */
    uint16_t buf[CHUNK];
    alone_buf *a = NULL;
    const double bv = h_value(beta);
    const int b_open = !(bv > 0 && bv < INFINITY); /* exact.at_boundary: no boundary then */
    if (t) {
        memset(t, 0, sizeof *t);
        for (int r = 0; r < 4; r++)
            t->worst[r] = t->first_zsign[r] = -1;
        if (!h_subnormal(beta))
            a = malloc(sizeof *a);
        if (a)
            a->n = 0;
    }
    uint64_t (*diff64)(const uint16_t *, const uint16_t *) = diff64_base;
#ifdef SL1_HAVE_V3
    diff64 = pick() == 2 ? diff64_z : pick() == 1 ? diff64_x : diff64_base;
#endif
    ptrdiff_t count = 0;
    for (ptrdiff_t s = 0; s < n; s += CHUNK) {
        const ptrdiff_t m = n - s < CHUNK ? n - s : CHUNK;
        const uint16_t *g = got + s;
        sl1k_f16_cr(dy + s, x1 + s, x2 + s, beta, buf, m);
        for (ptrdiff_t i = 0; i < m; i += RUN) {
            uint64_t mask = 0;
            if (m - i >= RUN)
                mask = diff64(buf + i, g + i);
            else
                for (ptrdiff_t k = i; k < m; k++)
                    mask |= (uint64_t)(buf[k] != g[k]) << (k - i);
            while (mask) {
                const ptrdiff_t k = i + __builtin_ctzll(mask);
                mask &= mask - 1;
                const uint16_t w = buf[k], r = g[k];
                const int w_nan = h_nan(w), r_nan = h_nan(r);
                if (w_nan && r_nan)
                    continue;
                if (a) { /* judge.within_budget_alone, condition by condition */
                    const uint16_t d = dy[s + k], p = x1[s + k], q = x2[s + k];
                    const int64_t dist = llabs(h_ordered(r) - h_ordered(w));
                    /* (&, not &&: no branch to mispredict per condition) */
                    int alone = (dist <= budget) & !h_special(r) & !h_special(w) & !(h_zero(r) & h_zero(w))
                                & !h_subnormal(w) & !h_subnormal(d) & !h_subnormal(p) & !h_subnormal(q);
                    if (strict_zero_sign)
                        alone &= !((h_zero(r) | h_zero(w)) & !!((r ^ w) & 0x8000));
                    if (!b_open) /* the exact diff (binary64 holds it) is not +-beta */
                        alone &= fabs(h_value(p) - h_value(q)) != bv;
                    if (alone) {
                        const ptrdiff_t j = a->n++;
                        a->dy[j] = d, a->x1[j] = p, a->x2[j] = q, a->got[j] = r, a->want[j] = w;
                        a->at[j] = s + k, a->dist[j] = dist;
                        continue;
                    }
                }
                idx[count] = s + k;
                want[count] = w_nan ? 0x7e00 : w;
                count++;
            }
        }
        if (a)
            alone_flush(a, beta, models, nmodels, t);
    }
    free(a);
    return count;
}

ptrdiff_t sl1k_f16_mismatches(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                              uint16_t beta, const uint16_t *got, ptrdiff_t n,
                              int64_t *idx, uint16_t *want) {
    return sl1k_f16_judge_pass(dy, x1, x2, beta, got, n, -1, 0, NULL, 0, idx, want, NULL);
}

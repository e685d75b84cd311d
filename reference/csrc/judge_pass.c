/* The sweep's check and the judge's shortcut (sl1conf.conformance.search.sweep).
 *
 * The check: every element's correctly rounded result (loops.c's sl1k_f16_cr) compared with
 * the implementation's bits, NaN as a class, CHUNK elements at a time in a buffer that stays in
 * the L1 cache, 64 at a time (a mask of the elements that differ, visited by its bits: no
 * branch per element to mispredict). A block that is mostly right costs the arithmetic and one
 * read of got.
 *
 * Rows (a sweep block of whole runs: x1 one table repeated, x2 one value a row, one dy): the
 * branch of every pair is known without arithmetic. Along a stretch of the table whose values
 * rise (or fall) strictly, the exact diff x1 - x2 rises (falls) with them, so the pairs with
 * diff > beta, and those with diff < -beta, are a prefix and a suffix of the stretch, found by
 * binary search on the exact diff (binary64 holds every fp16 diff). There the correctly rounded
 * result is dy's bits, or dy's with the sign flipped (the binary64 model's select, which
 * sl1k_f16_cr gives too), and the check is a comparison of got with one constant, in one vector
 * loop (skip_*). A stretch of NaN x1, and a row of NaN dy or x2, is checked as "any NaN" (every
 * result is NaN there); only the middle (|diff| <= beta, the boundary included) and the rest
 * of the table (the infinities, short stretches) get the arithmetic, and an infinite x2 or a
 * beta outside (0, inf) takes it for the whole row.
 *
 * The shortcut: the elements that differ are sorted in the same pass. Those
 * judge.within_budget_alone (Python, the definition) says are WITHIN_BUDGET are counted here,
 * into the sweep's histogram (sweep_tally: the row by whether an accepted model gives got and
 * whether the flush-to-zero oracle does, the bucket by the ULP distance, the zero-sign count,
 * the worst and first zero-sign element of each row), and only the others leave for the whole
 * judge: their indices in idx and the correctly rounded bits in want (a NaN as the canonical
 * quiet NaN 0x7e00). On AVX-512 the shortcut's conditions are masks over 32 lanes (visit_z),
 * and in a dense chunk (more than one element in 8 differs) the first model's bits are computed
 * for the whole chunk so that an element that is its result is counted where it is found; in
 * a row's middle, where only the first and last element can lie on the boundary, a half whose
 * differing elements are all that model's results a rounding away is counted with fewer steps
 * (visit_dense_z), and one whose differing elements are each one ULP away (bits that differ by
 * one: the common case) with fewer still, no distance computed and x1 read only where the
 * middle's subnormal x1 are (unit_model_z and unit_model_x, counted by count_unit).
 * tests/test_sweep_shortcut.py checks all of it, with and without rows, on every variant,
 * against the Python definitions.
 *
 * The rounding-bias pass (sl1k_f16_bias_pass: the counts of a sweep's sampled block,
 * accuracy.lean_bias_counts) walks the same way, rows and all, with its own visit: the
 * deviations that cannot be ordinary are left out, those a held model gives that are surely
 * ordinary are counted as "explained", the rest handed back (visit_bias_base, visit_bias_z);
 * tests/test_sweep_bias_pass.py checks it against the Python definitions on every variant. */
#include "loops.h"
#include "half_bits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SL1_HAVE_V3 1
#include <immintrin.h>
#define V3 __attribute__((target("avx2,f16c")))
#define V4 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c,popcnt")))
#endif

enum { CHUNK = 2048, RUN = 64 }; /* RUN: the bits of a mask */

/* Masks of 64 elements, bit k for element k: a[k] != b[k] (diff), g[k] != c (diffc), g[k] not
 * a NaN (number; c unused). */
typedef uint64_t (*diff_fn)(const uint16_t *, const uint16_t *);
typedef uint64_t (*const_fn)(const uint16_t *, uint16_t);

static uint64_t diff64_base(const uint16_t *a, const uint16_t *b) {
    uint64_t mask = 0;
    for (int k = 0; k < RUN; k++)
        mask |= (uint64_t)(a[k] != b[k]) << k;
    return mask;
}
static uint64_t diffc64_base(const uint16_t *g, uint16_t c) {
    uint64_t mask = 0;
    for (int k = 0; k < RUN; k++)
        mask |= (uint64_t)(g[k] != c) << k;
    return mask;
}
static uint64_t number64_base(const uint16_t *g, uint16_t c) {
    (void)c;
    uint64_t mask = 0;
    for (int k = 0; k < RUN; k++)
        mask |= (uint64_t)!h_nan(g[k]) << k;
    return mask;
}
/* How many of g's n elements (a multiple of RUN) lie in leading runs of RUN that are all c, NaN
 * as a class where c is a NaN: where check_constant's next visit starts. */
typedef ptrdiff_t (*skip_fn)(const uint16_t *, ptrdiff_t, uint16_t);
static inline ptrdiff_t skip_with(const_fn f, const uint16_t *g, ptrdiff_t n, uint16_t c) {
    ptrdiff_t k = 0;
    while (k < n && !f(g + k, c))
        k += RUN;
    return k;
}
static ptrdiff_t skip_base(const uint16_t *g, ptrdiff_t n, uint16_t c) {
    return skip_with(h_nan(c) ? number64_base : diffc64_base, g, n, c);
}

#ifdef SL1_HAVE_V3
/* Bit k of 32 set where lane k of the two 16-lane compares c0, c1 is all ones. */
V3 static inline uint32_t ones32_x(__m256i c0, __m256i c1) {
    return (uint32_t)_mm256_movemask_epi8(_mm256_permute4x64_epi64(_mm256_packs_epi16(c0, c1), 0xD8));
}
#define LOAD_X(p) _mm256_loadu_si256((const __m256i *)(p))
V3 static uint64_t diff64_x(const uint16_t *a, const uint16_t *b) {
    uint64_t mask = 0;
    for (int q = 0; q < RUN; q += 32)
        mask |= (uint64_t)(uint32_t)~ones32_x(_mm256_cmpeq_epi16(LOAD_X(a + q), LOAD_X(b + q)),
                                              _mm256_cmpeq_epi16(LOAD_X(a + q + 16), LOAD_X(b + q + 16))) << q;
    return mask;
}
V3 static uint64_t diffc64_x(const uint16_t *g, uint16_t c) {
    const __m256i vc = _mm256_set1_epi16((short)c);
    uint64_t mask = 0;
    for (int q = 0; q < RUN; q += 32)
        mask |= (uint64_t)(uint32_t)~ones32_x(_mm256_cmpeq_epi16(LOAD_X(g + q), vc),
                                              _mm256_cmpeq_epi16(LOAD_X(g + q + 16), vc)) << q;
    return mask;
}
V3 static uint64_t number64_x(const uint16_t *g, uint16_t c) {
    (void)c;
    const __m256i mag = _mm256_set1_epi16(0x7fff), inf = _mm256_set1_epi16(0x7c00);
    uint64_t mask = 0;
    for (int q = 0; q < RUN; q += 32) /* (g & 0x7fff) > 0x7c00, signed compares of non-negative lanes */
        mask |= (uint64_t)(uint32_t)~ones32_x(_mm256_cmpgt_epi16(_mm256_and_si256(LOAD_X(g + q), mag), inf),
                                              _mm256_cmpgt_epi16(_mm256_and_si256(LOAD_X(g + q + 16), mag), inf)) << q;
    return mask;
}
V3 static ptrdiff_t skip_x(const uint16_t *g, ptrdiff_t n, uint16_t c) {
    if (h_nan(c))
        return skip_with(number64_x, g, n, c);
    ptrdiff_t k = 0;
    { /* OR of the XORs with c: zero where all 64 are c */
        const __m256i vc = _mm256_set1_epi16((short)c);
        for (; k < n; k += RUN) {
            const __m256i x = _mm256_or_si256(_mm256_or_si256(_mm256_xor_si256(LOAD_X(g + k), vc), _mm256_xor_si256(LOAD_X(g + k + 16), vc)),
                                              _mm256_or_si256(_mm256_xor_si256(LOAD_X(g + k + 32), vc), _mm256_xor_si256(LOAD_X(g + k + 48), vc)));
            if (!_mm256_testz_si256(x, x))
                break;
        }
    }
    return k;
}
V4 static ptrdiff_t skip_z(const uint16_t *g, ptrdiff_t n, uint16_t c) {
    ptrdiff_t k = 0;
    if (h_nan(c)) { /* a number among them: (g & 0x7fff) <= 0x7c00 */
        const __m512i mag = _mm512_set1_epi16(0x7fff), inf = _mm512_set1_epi16(0x7c00);
        for (; k < n; k += RUN)
            if (_mm512_cmple_epu16_mask(_mm512_and_si512(_mm512_loadu_si512(g + k), mag), inf)
                | _mm512_cmple_epu16_mask(_mm512_and_si512(_mm512_loadu_si512(g + k + 32), mag), inf))
                break;
    } else {
        const __m512i vc = _mm512_set1_epi16((short)c);
        for (; k < n; k += RUN) {
            const __m512i x = _mm512_or_si512(_mm512_xor_si512(_mm512_loadu_si512(g + k), vc),
                                              _mm512_xor_si512(_mm512_loadu_si512(g + k + 32), vc));
            if (_mm512_test_epi64_mask(x, x))
                break;
        }
    }
    return k;
}
V4 static uint64_t diff64_z(const uint16_t *a, const uint16_t *b) {
    return (uint64_t)_mm512_cmpneq_epi16_mask(_mm512_loadu_si512(a), _mm512_loadu_si512(b))
           | (uint64_t)_mm512_cmpneq_epi16_mask(_mm512_loadu_si512(a + 32), _mm512_loadu_si512(b + 32)) << 32;
}
V4 static uint64_t diffc64_z(const uint16_t *g, uint16_t c) {
    const __m512i vc = _mm512_set1_epi16((short)c);
    return (uint64_t)_mm512_cmpneq_epi16_mask(_mm512_loadu_si512(g), vc)
           | (uint64_t)_mm512_cmpneq_epi16_mask(_mm512_loadu_si512(g + 32), vc) << 32;
}
V4 static uint64_t number64_z(const uint16_t *g, uint16_t c) {
    (void)c;
    const __m512i mag = _mm512_set1_epi16(0x7fff), inf = _mm512_set1_epi16(0x7c00);
    return (uint64_t)_mm512_cmple_epu16_mask(_mm512_and_si512(_mm512_loadu_si512(g), mag), inf)
           | (uint64_t)_mm512_cmple_epu16_mask(_mm512_and_si512(_mm512_loadu_si512(g + 32), mag), inf) << 32;
}
#endif

/* distances.bucket_of for a distance between two numbers (no NaN), with sweep_tally's
 * zero-sign bucket (9) for 0: 1-4 their own, 5-8, 9-64, 65 and more. */
static inline int h_bucket(int64_t d) {
    return d == 0 ? 9 : d <= 4 ? (int)d : d <= 8 ? 5 : d <= 64 ? 6 : 7;
}

/* The elements judge.within_budget_alone accepts, gathered up to CHUNK at a time, then counted
 * into the tally in index order: their accepted models' bits (judge.model_match) and the
 * flush-to-zero oracle's (where a subnormal input or result can make it differ) computed on the
 * gathered inputs by the kernel's own loops. */
typedef struct {
    uint16_t dy[CHUNK], x1[CHUNK], x2[CHUNK], got[CHUNK], want[CHUNK], bits[CHUNK];
    uint16_t gdy[CHUNK], gx1[CHUNK], gx2[CHUNK], left[CHUNK]; /* a gathered subset of those */
    uint16_t dist[CHUNK];      /* the ULP distance (at most the budget; below 2^16 between numbers) */
    int64_t at[CHUNK];
    uint8_t model[CHUNK], ftz[CHUNK];
    uint8_t sub[CHUNK];        /* a subnormal input or correctly rounded result */
    ptrdiff_t n, nsub;
    int first; /* the model tried first: the one that matched most in the last batch */
} alone_buf;

typedef struct pass pass;
/* The elements of a run of 64 that differ (mask, bit j: element base + j), w[j] their correctly
 * rounded bits, or wc for all where w is NULL: sorted (visit_base; visit_z on AVX-512, visit_x
 * on AVX2). */
typedef void (*visit_fn)(pass *, ptrdiff_t, uint64_t, const uint16_t *, uint16_t);
/* The gathered elements [k, n) counted into the tally (hist_base, or hist_z on AVX-512). */
typedef void (*hist_fn)(alone_buf *, sl1k_alone_tally *, ptrdiff_t);

/* One pass's state: the inputs, the profile's shortcut arguments, what leaves and what is counted. */
struct pass {
    const uint16_t *dy, *x1, *x2, *got;
    uint16_t beta;
    int budget, strict, b_open;
    double bv;
    const int *models;
    int nmodels;
    int64_t *idx;
    uint16_t *want;
    ptrdiff_t count;
    alone_buf *a;
    sl1k_alone_tally *t;
    diff_fn diff;
    const_fn diffc, number;
    skip_fn skip;
    visit_fn visit;
    visit_fn dense; /* a dense chunk of a row's middle: visit_dense_z on AVX-512, visit_dense_x on AVX2, else NULL (visit) */
    hist_fn hist;
    /* Dense chunks (more than one element in 8 differs; mon): the first model's bits of the
     * whole chunk in mbuf (from mstart to mend), so that an element that is that model's
     * result, with no zero on either side, is counted where it is found: row "model", or
     * "model+ftz" where a subnormal input is and got is the flush-to-zero oracle's (fbuf, from
     * fstart to the chunk's end, computed where the first is needed: fon). Each row's worst is
     * kept apart (fast_*) and merged at the end: larger distance, then lower index, as one pass
     * in index order picks. */
    int mon, fon;
    ptrdiff_t mstart, mend, fstart;
    ptrdiff_t lim; /* the end of the piece being visited: visit_x reads no element at or past it */
    /* Where the piece being checked is the middle of a row's stretch (check_row), the only
     * elements whose exact diff can be +-beta: its first and its last (the diff is strictly
     * monotone along the stretch, and the middle runs from the first element at or past one
     * limit to the last at or before the other); bnd_known 0: any element may be (visit_z then
     * asks binary32 of every lane). */
    int bnd_known, row_sub; /* row_sub: the row's dy or x2 is subnormal (known with bnd) */
    uint16_t fz[2]; /* (with bnd, where fz_ok) the flush-to-zero oracle's bits of the row for x1 = +0 and -0 */
    int fz_ok;
    ptrdiff_t bnd[2];
    ptrdiff_t sub_lo, sub_hi; /* (with bnd) the middle's elements whose x1 may be subnormal lie in [sub_lo, sub_hi) */
    int64_t fast_dist[4], fast_at[4], fast_want[4]; /* (rows 2 and 3) */
    /* The rounding-bias pass (sl1k_f16_bias_pass; bias 1, no tally): the deviations a held model
     * gives that are surely ordinary are counted in explained, with the held model's bits of a
     * chunk with a deviation in mbuf (bon); held[hcur] the one tried, the next where most missed it in a chunk
     * (hit, miss); prone: 1 / beta overflows (no element is ordinary). */
    int bias, bon, nheld, hcur, prone;
    const int *held;
    int64_t explained, hit, miss;
    uint16_t buf[CHUNK], mbuf[CHUNK], fbuf[CHUNK], fdy[CHUNK], fx1[CHUNK], fx2[CHUNK];
};

/* Where the models match: the first tried on every element, each next one on those none
 * matched yet (an element is computed alone by every loop, so a subset gives its bits). */
static void match_models(pass *c) {
    alone_buf *a = c->a;
    const ptrdiff_t n = a->n;
    ptrdiff_t left = n, best_hits = -1;
    int best = a->first;
    for (ptrdiff_t k = 0; k < n; k++)
        a->left[k] = (uint16_t)k;
    for (int i = 0; i < c->nmodels && left; i++) {
        const int mi = (a->first + i) % c->nmodels;
        const uint16_t *d = a->dy, *p = a->x1, *q = a->x2;
        if (left < n) {
            for (ptrdiff_t j = 0; j < left; j++)
                a->gdy[j] = a->dy[a->left[j]], a->gx1[j] = a->x1[a->left[j]], a->gx2[j] = a->x2[a->left[j]];
            d = a->gdy, p = a->gx1, q = a->gx2;
        }
        sl1k_f16(c->models[mi], d, p, q, c->beta, a->bits, left);
        ptrdiff_t keep = 0;
        for (ptrdiff_t j = 0; j < left; j++) { /* formats.same_result: got is a number here */
            const uint16_t k = a->left[j];
            const uint8_t hit = a->bits[j] == a->got[k];
            a->model[k] |= hit;
            a->left[keep] = k; /* (no branch to mispredict: kept where none matched) */
            keep += !hit;
        }
        if (left - keep > best_hits)
            best_hits = left - keep, best = mi;
        left = keep;
    }
    a->first = best;
}

/* Where got is the flush-to-zero oracle's result (fast_oracle with flush_subnormals: subnormal
 * inputs read as zeros of their sign, a subnormal result written as one, beta is not subnormal
 * here): computed where a subnormal input or correctly rounded result can make it differ from
 * the oracle, which got is not. */
static void match_flushed(pass *c) {
    alone_buf *a = c->a;
    ptrdiff_t m = 0;
    for (ptrdiff_t k = 0; k < a->n && m < a->nsub; k++)
        if (a->sub[k]) {
            a->gdy[m] = h_flush(a->dy[k]), a->gx1[m] = h_flush(a->x1[k]), a->gx2[m] = h_flush(a->x2[k]);
            a->left[m++] = (uint16_t)k;
        }
    if (!m)
        return;
    /* (the binary64 model, correctly rounded: on these scattered elements, whose flushed inputs
     * often give exact or tie results, sl1k_f16_cr's binary32 filter falls back vector after vector) */
    sl1k_f16(SL1_MULDIV * 3 + SL1_C64, a->gdy, a->gx1, a->gx2, c->beta, a->bits, m);
    for (ptrdiff_t j = 0; j < m; j++)
        a->ftz[a->left[j]] = h_flush(a->bits[j]) == a->got[a->left[j]];
}

/* A row's worst (its distance, index, correctly rounded bits) replaced by element at of distance
 * d where d is larger: elements offered in index order leave the first of the largest. */
static inline void keep_worst(int64_t *worst_dist, int64_t *worst, int64_t *worst_want, int64_t d, int64_t at,
                              uint16_t w) {
    if (d > *worst_dist)
        *worst_dist = d, *worst = at, *worst_want = w;
}
/* A zero-sign element counted in its row and bucket, the row's first kept (index order). */
static inline void count_zsign(sl1k_alone_tally *t, int row, int b, int64_t at, uint16_t w) {
    t->zsign[row][b]++;
    if (t->first_zsign[row] < 0)
        t->first_zsign[row] = at, t->zsign_want[row] = w;
}

/* Element k of the gathered ones into the tally: its row, bucket, zero sign, worst and first. */
static inline void count_one(alone_buf *a, sl1k_alone_tally *t, ptrdiff_t k) {
    const int row = 2 * a->model[k] + a->ftz[k], b = h_bucket(a->dist[k]);
    const uint16_t g = a->got[k], w = a->want[k];
    t->hist[row][b]++;
    keep_worst(&t->worst_dist[row], &t->worst[row], &t->worst_want[row], a->dist[k], a->at[k], w);
    if ((h_zero(g) || h_zero(w)) && ((g ^ w) & 0x8000))
        count_zsign(t, row, b, a->at[k], w);
}

static void hist_base(alone_buf *a, sl1k_alone_tally *t, ptrdiff_t k) {
    for (; k < a->n; k++)
        count_one(a, t, k);
}

static void alone_flush(pass *c) {
    alone_buf *a = c->a;
    const ptrdiff_t n = a->n;
    if (!n)
        return;
    {
        const uint16_t *__restrict dy = c->dy, *__restrict x1 = c->x1, *__restrict x2 = c->x2, *__restrict got = c->got;
        const int64_t *__restrict at = a->at;
        for (ptrdiff_t k = 0; k < n; k++) { /* the inputs and results of the gathered elements */
            const int64_t i = at[k];
            a->dy[k] = dy[i], a->x1[k] = x1[i], a->x2[k] = x2[i], a->got[k] = got[i];
        }
    }
    memset(a->model, 0, (size_t)n);
    memset(a->ftz, 0, (size_t)n);
    match_models(c);
    if (a->nsub)
        match_flushed(c);
    c->hist(a, c->t, 0);
    c->t->alone += n;
    a->n = a->nsub = 0;
}

/* Element k (got[k] differs from the correctly rounded w) into the gathered ones (dist: their
 * ULP distance; sub: a subnormal input or result) or handed back (NaN as the canonical NaN). */
static inline void take(pass *c, ptrdiff_t k, uint16_t w, uint16_t dist, int sub) {
    alone_buf *a = c->a;
    if (a->n == CHUNK)
        alone_flush(c);
    const ptrdiff_t j = a->n++;
    a->want[j] = w, a->at[j] = k, a->dist[j] = dist, a->sub[j] = (uint8_t)sub; /* the rest read at the flush */
    a->nsub += sub;
}
static inline void hand_back(pass *c, ptrdiff_t k, uint16_t w) {
    c->idx[c->count] = k;
    c->want[c->count] = h_nan(w) ? 0x7e00 : w;
    c->count++;
}

/* The exact diff x1 - x2 (binary64 holds it) is +-beta: exact.at_boundary. */
static inline int on_boundary(const pass *c, ptrdiff_t k) {
    return !c->b_open && fabs(h_value(c->x1[k]) - h_value(c->x2[k])) == c->bv;
}

/* Element k, whose bits differ from the correctly rounded w: nothing (both NaN), counted
 * (judge.within_budget_alone, condition by condition), or handed back. */
static inline void visit_one(pass *c, ptrdiff_t k, uint16_t w) {
    const uint16_t r = c->got[k];
    if (h_nan(w) && h_nan(r))
        return;
    if (c->a) {
        const int64_t dist = llabs(h_ordered(r) - h_ordered(w));
        /* (&, not &&: no branch to mispredict per condition) */
        int alone = (dist <= c->budget) & !h_special(r) & !h_special(w) & !(h_zero(r) & h_zero(w));
        if (c->strict)
            alone &= !((h_zero(r) | h_zero(w)) & !!((r ^ w) & 0x8000));
        if (alone && !on_boundary(c, k))
            return take(c, k, w, (uint16_t)dist, h_subnormal(w) | h_subnormal(c->dy[k]) | h_subnormal(c->x1[k])
                                                     | h_subnormal(c->x2[k]));
    }
    hand_back(c, k, w);
}

static void visit_base(pass *c, ptrdiff_t base, uint64_t mask, const uint16_t *w, uint16_t wc) {
    while (mask) {
        const int j = __builtin_ctzll(mask);
        mask &= mask - 1;
        visit_one(c, base + j, w ? w[j] : wc);
    }
}

/* A half run of 32 at `at`, sorted: the fast elements (counted already) that may be their rows'
 * worst noted (far; fast_*: in index order, the first of the largest), the shortcut's elements gathered,
 * the others handed back, each list in index order (dist, want: the lanes' distances and
 * correctly rounded bits; sub: a subnormal input or result; ftz: got is the flush-to-zero
 * oracle's, among the fast ones). */
static inline void sort_half(pass *c, ptrdiff_t at, uint32_t far, uint32_t ftz, uint32_t alone, uint32_t back,
                             uint32_t sub, const uint16_t *dist, const uint16_t *want) {
    for (uint32_t f = far; f; f &= f - 1) {
        const int j = __builtin_ctz(f), row = 2 + (int)(ftz >> j & 1);
        keep_worst(&c->fast_dist[row], &c->fast_at[row], &c->fast_want[row], dist[j], at + j, want[j]);
    }
    alone_buf *a = c->a;
    for (uint32_t b = alone; b; b &= b - 1) {
        const int j = __builtin_ctz(b);
        if (a->n == CHUNK)
            alone_flush(c);
        const ptrdiff_t i = a->n++;
        const uint8_t sb = (uint8_t)(sub >> j & 1);
        a->want[i] = want[j], a->at[i] = at + j, a->dist[i] = dist[j], a->sub[i] = sb;
        a->nsub += sb;
    }
    for (uint32_t b = back; b; b &= b - 1) {
        const int j = __builtin_ctz(b);
        hand_back(c, at + j, want[j]);
    }
}

/* The rounding-bias pass (accuracy.lean_bias_counts' conditions, in C): of the elements that
 * differ, those that cannot be bias_counts' ordinary ones (accuracy._may_be_ordinary: the
 * correctly rounded result w not normal, got an infinity or NaN, a subnormal input, an
 * intermediate that overflows: judge.overflow_prone, |s| or |s * dy| in binary64 beyond 65504
 * for the exact diff s, or 1 / beta) add nothing to the counts, not even their keys: left out.
 * Those a held model gives (its bits in mbuf) that are surely ordinary and "explained" are
 * counted: judge.within_budget_alone accepts them (within the budget, both finite and no zero,
 * not on the boundary), no input is subnormal (so flushing changes nothing), and the rounded
 * diff's open alternative cannot move them (accuracy._settled: s farther than beta * 2^-8 from
 * +-beta, which leaves the boundary out too). The others are handed back, for the caller to
 * judge. The conditions on the inputs are the exact ones, in binary64 as numpy asks them
 * (bias_inputs); visit_bias_z asks the same. */
enum { MAY = 1, FAR = 2 }; /* may be ordinary; and not near the boundary */
static inline int bias_inputs(const pass *c, ptrdiff_t k) {
    if (c->prone || h_subnormal(c->dy[k]) | h_subnormal(c->x1[k]) | h_subnormal(c->x2[k]))
        return 0;
    const double s = h_value(c->x1[k]) - h_value(c->x2[k]), a = fabs(s);
    if (a > 65504.0 || fabs(s * h_value(c->dy[k])) > 65504.0)
        return 0;
    return fabs(a - c->bv) <= c->bv * 0x1p-8 ? MAY : MAY | FAR;
}
static void visit_bias_base(pass *c, ptrdiff_t base, uint64_t mask, const uint16_t *w, uint16_t wc) {
    while (mask) {
        const int j = __builtin_ctzll(mask);
        mask &= mask - 1;
        const ptrdiff_t k = base + j;
        const uint16_t r = c->got[k], ww = w ? w[j] : wc;
        if (h_special(r) || h_special(ww) || !(ww & 0x7c00))
            continue; /* (both NaN: the same result) */
        const int in = bias_inputs(c, k);
        if (!in)
            continue;
        if (c->bon && in & FAR && !h_zero(r) && llabs(h_ordered(r) - h_ordered(ww)) <= c->budget) {
            if (r == c->mbuf[k - c->mstart]) {
                c->explained++, c->hit++;
                continue;
            }
            c->miss++;
        }
        hand_back(c, k, ww);
    }
}

#ifdef SL1_HAVE_V3
/* The elements of mask in counted into row's histogram (h_bucket's buckets) from their distances'
 * masks: le[v] (v = 0 to 4) where the distance is at most v, le8, le64 likewise. */
static inline void add_buckets(sl1k_alone_tally *t, int row, uint32_t in, const uint32_t le[5], uint32_t le8,
                               uint32_t le64) {
    t->hist[row][9] += __builtin_popcount(in & le[0]);
    for (int b = 1; b <= 4; b++)
        t->hist[row][b] += __builtin_popcount(in & le[b] & ~le[b - 1]);
    t->hist[row][5] += __builtin_popcount(in & le8 & ~le[4]);
    t->hist[row][6] += __builtin_popcount(in & le64 & ~le8);
    t->hist[row][7] += __builtin_popcount(in & ~le64);
}

/* The elements of mask counted into row's histogram by the buckets of their distances d. */
V4 static inline void count_buckets(sl1k_alone_tally *t, int row, __mmask32 in, __m512i d) {
    const __mmask32 one = in & _mm512_cmpeq_epi16_mask(d, _mm512_set1_epi16(1)); /* (most are 1 ULP away) */
    t->hist[row][1] += __builtin_popcount(one);
    if (!(in &= ~one))
        return;
    uint32_t le[5];
    for (int v = 0; v <= 4; v++)
        le[v] = _mm512_cmple_epu16_mask(d, _mm512_set1_epi16((short)v));
    add_buckets(t, row, in, le, _mm512_cmple_epu16_mask(d, _mm512_set1_epi16(8)),
                _mm512_cmple_epu16_mask(d, _mm512_set1_epi16(64)));
}

/* The lanes of the half at `at` that are the boundary's candidates (a row's middle: its first
 * and last element, c->bnd). */
static inline uint32_t bnd_lanes(const pass *c, ptrdiff_t at) {
    uint32_t lanes = 0;
    for (int q = 0; q < 2; q++)
        if (c->bnd[q] >= at && c->bnd[q] < at + 32)
            lanes |= 1u << (c->bnd[q] - at);
    return lanes;
}

/* The flush-to-zero oracle's bits of a row's middle for x1 = +0 and -0 (fz), made where first
 * asked (the row's dy and x2, neither subnormal; flushed_oracle's arithmetic). */
static inline void row_fz(pass *c, ptrdiff_t at) {
    if (!c->fz_ok) {
        const uint16_t fdy[2] = {c->dy[at], c->dy[at]}, fx1[2] = {0x0000, 0x8000}, fx2[2] = {c->x2[at], c->x2[at]};
        sl1k_f16_cr(fdy, fx1, fx2, c->beta, c->fz, 2);
        c->fz[0] = h_flush(c->fz[0]), c->fz[1] = h_flush(c->fz[1]), c->fz_ok = 1;
    }
}

/* A half at `at` of a row's middle whose differing elements (m) are each the first model's result
 * one ULP from the correctly rounded one (unit_model_z, unit_model_x) counted: rows "model" and
 * "model+ftz" (ftz), bucket 1, each row's worst offered only while it has none (every distance
 * is 1: a later one never replaces it). */
static inline void count_unit(pass *c, ptrdiff_t at, uint32_t m, uint32_t ftz, const uint16_t *want) {
    c->t->alone += __builtin_popcount(m);
    c->t->hist[2][1] += __builtin_popcount(m & ~ftz);
    c->t->hist[3][1] += __builtin_popcount(ftz);
    const uint32_t far = (c->fast_dist[2] < 1 ? m & ~ftz : 0) | (c->fast_dist[3] < 1 ? ftz : 0);
    if (far) {
        uint16_t dist[32];
        for (int j = 0; j < 32; j++)
            dist[j] = 1;
        sort_half(c, at, far, ftz, 0, 0, 0, dist, want);
    }
}

/* Lanes holding a subnormal. */
V4 static inline __mmask32 subnormal_z(__m512i v) {
    return _mm512_testn_epi16_mask(v, _mm512_set1_epi16(0x7c00)) & _mm512_test_epi16_mask(v, _mm512_set1_epi16(0x03ff));
}

/* The flush-to-zero oracle's bits (flushed inputs, the correctly rounded result, flushed) of
 * the elements [from, mend) of a dense chunk, into fbuf. */
static void flushed_oracle(pass *c, ptrdiff_t from) {
    const ptrdiff_t n = c->mend - from;
    for (ptrdiff_t k = 0; k < n; k++)
        c->fdy[k] = h_flush(c->dy[from + k]), c->fx1[k] = h_flush(c->x1[from + k]), c->fx2[k] = h_flush(c->x2[from + k]);
    sl1k_f16_cr(c->fdy, c->fx1, c->fx2, c->beta, c->fbuf, n);
    for (ptrdiff_t k = 0; k < n; k++)
        c->fbuf[k] = h_flush(c->fbuf[k]);
    c->fon = 1, c->fstart = from;
}

/* The ULP distance of 32 results r from the correctly rounded ww, in 16 bits (between two
 * numbers: |m1 - m2| of the magnitudes for one sign, m1 + m2 for two, below 2^16 for finite
 * halves), with the magnitudes (mr, mw) and where the signs differ (sd). */
V4 static inline __m512i distance_z(__m512i r, __m512i ww, __m512i *mr, __m512i *mw, __mmask32 *sd) {
    const __m512i mag = _mm512_set1_epi16(0x7fff);
    *mr = _mm512_and_si512(r, mag), *mw = _mm512_and_si512(ww, mag);
    *sd = _mm512_test_epi16_mask(_mm512_xor_si512(r, ww), _mm512_set1_epi16((short)0x8000));
    return _mm512_mask_blend_epi16(*sd, _mm512_sub_epi16(_mm512_max_epu16(*mr, *mw), _mm512_min_epu16(*mr, *mw)),
                                   _mm512_add_epi16(*mr, *mw));
}

/* visit_base 32 lanes at a time: within_budget_alone's conditions as masks (the distance
 * between two numbers in 16 bits: |m1 - m2| of the magnitudes for one sign, m1 + m2 for two,
 * below 2^16 for finite halves), the boundary asked exactly only where binary32 says it may be
 * (|RN32(x1 - x2)| == beta: an exact diff of +-beta rounds to +-beta), then each element
 * gathered or handed back in index order. */
V4 static void visit_z(pass *c, ptrdiff_t base, uint64_t mask, const uint16_t *w, uint16_t wc) {
    if (!c->a || c->budget < 0)
        return visit_base(c, base, mask, w, wc);
    const __m512i inf = _mm512_set1_epi16(0x7c00);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i budget = _mm512_set1_epi16((short)(uint16_t)(c->budget > 0xffff ? 0xffff : c->budget));
    const __m512 vb = _mm512_set1_ps((float)c->bv);
    for (int h = 0; h < 2; h++) {
        __mmask32 m = (__mmask32)(mask >> (32 * h));
        if (!m)
            continue;
        const ptrdiff_t at = base + 32 * h;
        /* (masked loads: a run at the end of the arrays is shorter than 64, and a lane outside
         * the mask is never used; w is a buffer of the pass, CHUNK long) */
        const __mmask32 lanes = m;
        const __m512i r = _mm512_maskz_loadu_epi16(lanes, c->got + at);
        const __m512i ww = w ? _mm512_loadu_si512(w + 32 * h) : _mm512_set1_epi16((short)wc);
        __m512i mr, mw;
        __mmask32 sd;
        const __m512i d = distance_z(r, ww, &mr, &mw, &sd);
        m &= ~(_mm512_cmpgt_epu16_mask(mr, inf) & _mm512_cmpgt_epu16_mask(mw, inf)); /* both NaN: the same result */
        const __mmask32 zr = _mm512_cmpeq_epi16_mask(mr, zero), zw = _mm512_cmpeq_epi16_mask(mw, zero);
        __mmask32 alone = m & ~_mm512_cmpge_epu16_mask(mr, inf) & ~_mm512_cmpge_epu16_mask(mw, inf) & ~(zr & zw)
                          & _mm512_cmple_epu16_mask(d, budget);
        if (c->strict)
            alone &= ~((zr | zw) & sd);
        __mmask32 sub = 0, fast = 0, ftz = 0, far = 0;
        if (alone) {
            const __m512i x1 = _mm512_maskz_loadu_epi16(lanes, c->x1 + at), x2 = _mm512_maskz_loadu_epi16(lanes, c->x2 + at);
            const __m512i dy = _mm512_maskz_loadu_epi16(lanes, c->dy + at);
            if (!c->b_open) {
                __mmask32 maybe = 0;
                if (c->bnd_known) { /* (a row's middle: its first and last element only) */
                    maybe = bnd_lanes(c, at);
                } else {
                    const __m512 lo = _mm512_abs_ps(_mm512_sub_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(x1)),
                                                                  _mm512_cvtph_ps(_mm512_castsi512_si256(x2))));
                    const __m512 hi = _mm512_abs_ps(_mm512_sub_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(x1, 1)),
                                                                  _mm512_cvtph_ps(_mm512_extracti64x4_epi64(x2, 1))));
                    maybe = (__mmask32)_mm512_cmpeq_ps_mask(lo, vb) | (__mmask32)_mm512_cmpeq_ps_mask(hi, vb) << 16;
                }
                maybe &= alone;
                while (maybe) {
                    const int j = __builtin_ctz(maybe);
                    maybe &= maybe - 1;
                    if (on_boundary(c, at + j))
                        alone &= ~(1u << j);
                }
            }
            const __mmask32 subin = subnormal_z(dy) | subnormal_z(x1) | subnormal_z(x2);
            /* A dense chunk: the first model's result, no zero: row "model", and "model+ftz" where a
             * subnormal input is and got is the flush-to-zero oracle's (a subnormal correctly
             * rounded result alone flushes to a zero, which got is not) */
            if (c->mon) {
                fast = alone & ~(zr | zw) & _mm512_cmpeq_epi16_mask(r, _mm512_loadu_si512(c->mbuf + (at - c->mstart)));
                if (fast & subin) {
                    if (!c->fon)
                        flushed_oracle(c, at);
                    ftz = subin & _mm512_cmpeq_epi16_mask(r, _mm512_loadu_si512(c->fbuf + (at - c->fstart)));
                }
                if (fast) {
                    c->t->alone += __builtin_popcount(fast);
                    count_buckets(c->t, 2, fast & ~ftz, d);
                    count_buckets(c->t, 3, fast & ftz, d);
                    alone &= ~fast;
                    /* (only those farther than their row's worst so far can replace it; once a
                     * row's worst is 1 ULP or more, only those 2 or more away: usually none) */
                    const __mmask32 two = fast & _mm512_cmpgt_epu16_mask(d, _mm512_set1_epi16(1));
                    if (two || c->fast_dist[2] < 1 || c->fast_dist[3] < 1)
                        far = (fast & ~ftz & _mm512_cmpgt_epu16_mask(d, _mm512_set1_epi16((short)(uint16_t)c->fast_dist[2])))
                              | (fast & ftz & _mm512_cmpgt_epu16_mask(d, _mm512_set1_epi16((short)(uint16_t)c->fast_dist[3])));
                }
            }
            if (alone) /* (a subnormal result or input: read where an element is gathered) */
                sub = subin | subnormal_z(ww);
        }
        if (!(far | (m & ~fast))) /* every element of the half counted already */
            continue;
        uint16_t dist[32] __attribute__((aligned(64))), want[32] __attribute__((aligned(64)));
        _mm512_store_si512(dist, d);
        _mm512_store_si512(want, ww);
        sort_half(c, at, far, ftz, alone, m & ~alone & ~fast, sub, dist, want);
    }
}

/* The lanes of a half at `at` of a row's middle (visit_dense_z) that are the first model's result
 * (mb) one ULP from the correctly rounded ww and not boundary candidates: bits that differ by
 * one with both magnitudes in [1, 0x7bff] (finite, no zero on either side) are halves of one
 * sign one ULP apart (a carry across the sign would need a magnitude of 0x7fff or 0), which
 * judge.within_budget_alone accepts wherever the budget is at least 1. */
V4 static inline __mmask32 unit_model_z(const pass *c, ptrdiff_t at, __m512i r, __m512i ww, __m512i mb) {
    const __m512i mag = _mm512_set1_epi16(0x7fff), one = _mm512_set1_epi16(1);
    const __m512i mr = _mm512_and_si512(r, mag), mw = _mm512_and_si512(ww, mag);
    __mmask32 unit = _mm512_cmpeq_epi16_mask(r, mb)
                     & (_mm512_cmpeq_epi16_mask(r, _mm512_add_epi16(ww, one)) | _mm512_cmpeq_epi16_mask(r, _mm512_sub_epi16(ww, one)))
                     & _mm512_cmpneq_epi16_mask(_mm512_min_epu16(mr, mw), _mm512_setzero_si512())
                     & _mm512_cmple_epu16_mask(_mm512_max_epu16(mr, mw), _mm512_set1_epi16(0x7bff));
    return unit & ~bnd_lanes(c, at);
}

/* Where x1 is subnormal in the half at `at` (m: its lanes that differ) of a row's middle, the
 * lanes whose got is the flush-to-zero oracle's (row "model+ftz"): for a row of subnormal dy or
 * x2, flushed_oracle's bits of the chunk; else x1 read as a zero of its sign, one value per sign
 * for the row (fz), only where the half meets the middle's subnormal x1 (sub_lo, sub_hi). */
V4 static inline __mmask32 ftz_half_z(pass *c, ptrdiff_t at, __mmask32 m, __m512i r) {
    if (c->row_sub) { /* every input row's dy or x2 subnormal: flushed_oracle's bits, for the rest of the chunk */
        if (!c->fon)
            flushed_oracle(c, at);
        return m & _mm512_cmpeq_epi16_mask(r, _mm512_loadu_si512(c->fbuf + (at - c->fstart)));
    }
    if (at + 32 <= c->sub_lo || at >= c->sub_hi)
        return 0;
    const __m512i x1 = _mm512_maskz_loadu_epi16(m, c->x1 + at);
    const __mmask32 sub = m & subnormal_z(x1);
    if (!sub)
        return 0;
    row_fz(c, at);
    return sub & _mm512_cmpeq_epi16_mask(r, _mm512_mask_blend_epi16(_mm512_test_epi16_mask(x1, _mm512_set1_epi16((short)0x8000)),
                                                                    _mm512_set1_epi16((short)c->fz[0]),
                                                                    _mm512_set1_epi16((short)c->fz[1])));
}

/* A half of a row's middle whose differing elements (m) are all the first model's results, within
 * the budget, finite, no zero, not boundary candidates, at distances d, counted: rows "model"
 * and "model+ftz" (ftz_half_z), their buckets, and each row's worst in index order: only those
 * farther than it are offered (usually none, at 1 ULP). */
V4 static inline void count_model_half(pass *c, ptrdiff_t at, __mmask32 m, __m512i r, __m512i d, const uint16_t *want) {
    const __mmask32 ftz = ftz_half_z(c, at, m, r);
    c->t->alone += __builtin_popcount(m);
    count_buckets(c->t, 2, m & ~ftz, d);
    if (ftz)
        count_buckets(c->t, 3, ftz, d);
    if (_mm512_cmpgt_epu16_mask(d, _mm512_set1_epi16(1)) & m || c->fast_dist[2] < 1 || (ftz && c->fast_dist[3] < 1)) {
        const __mmask32 far = (m & ~ftz & _mm512_cmpgt_epu16_mask(d, _mm512_set1_epi16((short)(uint16_t)c->fast_dist[2])))
                              | (ftz & _mm512_cmpgt_epu16_mask(d, _mm512_set1_epi16((short)(uint16_t)c->fast_dist[3])));
        if (far) {
            uint16_t dist[32] __attribute__((aligned(64)));
            _mm512_store_si512(dist, d);
            sort_half(c, at, far, ftz, 0, 0, 0, dist, want); /* (rows 2 and 3: nothing gathered or back) */
        }
    }
}

/* visit_z for a dense chunk of a row's middle (check_middle: the first model's bits in mbuf, the
 * boundary's candidates known, the row's dy and x2 one value each), where
 * almost every element that differs is the first model's result a rounding or two away: a half
 * all of whose elements are so (finite, no zero on either side, within the budget, not a boundary
 * candidate) is counted here with fewer steps, in row "model", or "model+ftz" where an input is
 * subnormal and got is the flush-to-zero oracle's (for a subnormal x1 in a row of normal dy and
 * x2, x1 read as a zero of its sign: one value per sign for the row, fz; in a row of subnormal dy
 * or x2, flushed_oracle's bits of the chunk); any other half goes to visit_z whole, so that each
 * row's worst is still offered in index order. */
V4 static void visit_dense_z(pass *c, ptrdiff_t base, uint64_t mask, const uint16_t *w, uint16_t wc) {
    if (c->budget < 0)
        return visit_z(c, base, mask, w, wc);
    const __m512i inf = _mm512_set1_epi16(0x7c00);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i budget = _mm512_set1_epi16((short)(uint16_t)(c->budget > 0xffff ? 0xffff : c->budget));
    for (int h = 0; h < 2; h++) {
        const __mmask32 m = (__mmask32)(mask >> (32 * h));
        if (!m)
            continue;
        const ptrdiff_t at = base + 32 * h, o = at - c->mstart;
        const __m512i r = _mm512_maskz_loadu_epi16(m, c->got + at), ww = _mm512_loadu_si512(w + 32 * h);
        const __m512i mb = _mm512_loadu_si512(c->mbuf + o);
        if (c->budget >= 1 && !(m & ~unit_model_z(c, at, r, ww, mb))) {
            count_unit(c, at, m, ftz_half_z(c, at, m, r), w + 32 * h);
            continue;
        }
        __m512i mr, mw;
        __mmask32 sd;
        const __m512i d = distance_z(r, ww, &mr, &mw, &sd);
        __mmask32 fast = _mm512_cmplt_epu16_mask(mr, inf) & _mm512_cmplt_epu16_mask(mw, inf)
                         & _mm512_cmpneq_epi16_mask(mr, zero) & _mm512_cmpneq_epi16_mask(mw, zero)
                         & _mm512_cmple_epu16_mask(d, budget) & _mm512_cmpeq_epi16_mask(r, mb);
        fast &= ~bnd_lanes(c, at);
        if (m & ~fast) { /* (not all so: the whole half as visit_z sorts it) */
            visit_z(c, at, m, w + 32 * h, wc);
            continue;
        }
        count_model_half(c, at, m, r, d, w + 32 * h);
    }
}

/* visit_bias_base 32 lanes at a time: the conditions on the results as masks, those on the
 * inputs in binary64, 8 lanes a step (bias_inputs' operations), the elements handed back in
 * index order. */
V4 static void visit_bias_z(pass *c, ptrdiff_t base, uint64_t mask, const uint16_t *w, uint16_t wc) {
    if (!c->bon) /* (bon: a chunk with a held model's bits, beta not prone) */
        return visit_bias_base(c, base, mask, w, wc);
    const __m512i inf = _mm512_set1_epi16(0x7c00), zero = _mm512_setzero_si512(), least = _mm512_set1_epi16(0x0400);
    const __m512i budget = _mm512_set1_epi16((short)(uint16_t)(c->budget > 0xffff ? 0xffff : c->budget));
    const __m512d vb = _mm512_set1_pd(c->bv), near = _mm512_set1_pd(c->bv * 0x1p-8), top = _mm512_set1_pd(65504.0);
    for (int h = 0; h < 2; h++) {
        __mmask32 m = (__mmask32)(mask >> (32 * h));
        if (!m)
            continue;
        const ptrdiff_t at = base + 32 * h;
        const __m512i r = _mm512_maskz_loadu_epi16(m, c->got + at);
        const __m512i ww = w ? _mm512_loadu_si512(w + 32 * h) : _mm512_set1_epi16((short)wc);
        __m512i mr, mw;
        __mmask32 sd;
        const __m512i d = distance_z(r, ww, &mr, &mw, &sd);
        /* may be ordinary: got finite, w normal, no subnormal input (then no intermediate overflow, below) */
        __mmask32 may = m & _mm512_cmplt_epu16_mask(mr, inf) & _mm512_cmplt_epu16_mask(mw, inf)
                        & _mm512_cmpge_epu16_mask(mw, least);
        __mmask32 far = 0;
        if (may) {
            const __m512i x1 = _mm512_maskz_loadu_epi16(may, c->x1 + at), x2 = _mm512_maskz_loadu_epi16(may, c->x2 + at);
            const __m512i dy = _mm512_maskz_loadu_epi16(may, c->dy + at);
            may &= ~(subnormal_z(dy) | subnormal_z(x1) | subnormal_z(x2));
            __mmask32 prone = 0, close = 0;
            for (int q = 0; q < 4; q++) { /* lanes 8q to 8q + 7, in binary64 (masked: none read past the arrays) */
                const __mmask8 l = (__mmask8)(may >> (8 * q));
                if (!l)
                    continue;
                const __m512d a = _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_maskz_loadu_epi16(l, c->x1 + at + 8 * q)));
                const __m512d b = _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_maskz_loadu_epi16(l, c->x2 + at + 8 * q)));
                const __m512d y = _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_maskz_loadu_epi16(l, c->dy + at + 8 * q)));
                const __m512d s = _mm512_sub_pd(a, b), as = _mm512_abs_pd(s);
                prone |= (__mmask32)(uint8_t)(_mm512_cmp_pd_mask(as, top, _CMP_GT_OQ)
                                              | _mm512_cmp_pd_mask(_mm512_abs_pd(_mm512_mul_pd(s, y)), top, _CMP_GT_OQ)) << (8 * q);
                close |= (__mmask32)(uint8_t)_mm512_cmp_pd_mask(_mm512_abs_pd(_mm512_sub_pd(as, vb)), near, _CMP_LE_OQ) << (8 * q);
            }
            may &= ~prone;
            far = may & ~close;
        }
        const __mmask32 ok = far & _mm512_cmpneq_epi16_mask(mr, zero) & _mm512_cmple_epu16_mask(d, budget);
        const __mmask32 hit = ok & _mm512_cmpeq_epi16_mask(r, _mm512_loadu_si512(c->mbuf + (at - c->mstart)));
        c->explained += __builtin_popcount(hit), c->hit += __builtin_popcount(hit);
        c->miss += __builtin_popcount(ok & ~hit);
        for (__mmask32 b = may & ~hit; b; b &= b - 1) {
            const int j = __builtin_ctz(b);
            hand_back(c, at + j, w ? w[32 * h + j] : wc);
        }
    }
}

/* visit_z on AVX2: the same masks from two vectors of 16 lanes a half (ones32_x), unsigned
 * comparisons through max/min, the buckets of the fast elements counted with popcounts; a half
 * that reaches the piece's end (lim) is read through a copy (AVX2 has no masked 16-bit loads). */
V3 static inline uint32_t le_epu16_x(__m256i a0, __m256i a1, __m256i b) { /* a <= b, unsigned */
    return ones32_x(_mm256_cmpeq_epi16(_mm256_max_epu16(a0, b), b), _mm256_cmpeq_epi16(_mm256_max_epu16(a1, b), b));
}
V3 static inline uint32_t eq_x(__m256i a0, __m256i a1, __m256i b) {
    return ones32_x(_mm256_cmpeq_epi16(a0, b), _mm256_cmpeq_epi16(a1, b));
}
V3 static inline uint32_t subnormal_x(__m256i v0, __m256i v1) {
    const __m256i e = _mm256_set1_epi16(0x7c00), f = _mm256_set1_epi16(0x03ff), z = _mm256_setzero_si256();
    return eq_x(_mm256_and_si256(v0, e), _mm256_and_si256(v1, e), z)
           & ~eq_x(_mm256_and_si256(v0, f), _mm256_and_si256(v1, f), z);
}
V3 static inline void count_buckets_x(sl1k_alone_tally *t, int row, uint32_t in, __m256i d0, __m256i d1) {
    const uint32_t one = in & eq_x(d0, d1, _mm256_set1_epi16(1)); /* (most are 1 ULP away) */
    t->hist[row][1] += __builtin_popcount(one);
    if (!(in &= ~one))
        return;
    uint32_t le[5];
    for (int v = 0; v <= 4; v++)
        le[v] = le_epu16_x(d0, d1, _mm256_set1_epi16((short)v));
    add_buckets(t, row, in, le, le_epu16_x(d0, d1, _mm256_set1_epi16(8)), le_epu16_x(d0, d1, _mm256_set1_epi16(64)));
}
V3 static void visit_x(pass *c, ptrdiff_t base, uint64_t mask, const uint16_t *w, uint16_t wc) {
    if (!c->a || c->budget < 0)
        return visit_base(c, base, mask, w, wc);
    const __m256i mag = _mm256_set1_epi16(0x7fff), inf = _mm256_set1_epi16(0x7c00), finite = _mm256_set1_epi16(0x7bff);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i budget = _mm256_set1_epi16((short)(uint16_t)(c->budget > 0xffff ? 0xffff : c->budget));
    const __m256 vb = _mm256_set1_ps((float)c->bv), absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int h = 0; h < 2; h++) {
        uint32_t m = (uint32_t)(mask >> (32 * h));
        if (!m)
            continue;
        const ptrdiff_t at = base + 32 * h;
        uint16_t cg[32], c1[32], c2[32], cd[32]; /* copies where the half reaches the piece's end */
        const uint16_t *pg = c->got + at, *p1 = c->x1 + at, *p2 = c->x2 + at, *pd = c->dy + at;
        if (at + 32 > c->lim) {
            const ptrdiff_t n = c->lim - at;
            memset(cg, 0, sizeof cg), memset(c1, 0, sizeof c1), memset(c2, 0, sizeof c2), memset(cd, 0, sizeof cd);
            memcpy(cg, pg, 2 * (size_t)n), memcpy(c1, p1, 2 * (size_t)n), memcpy(c2, p2, 2 * (size_t)n), memcpy(cd, pd, 2 * (size_t)n);
            pg = cg, p1 = c1, p2 = c2, pd = cd;
        }
        uint16_t want[32], dist[32];
        if (w)
            memcpy(want, w + 32 * h, sizeof want);
        else
            for (int j = 0; j < 32; j++)
                want[j] = wc;
        const __m256i r0 = LOAD_X(pg), r1 = LOAD_X(pg + 16), w0 = LOAD_X(want), w1 = LOAD_X(want + 16);
        const __m256i mr0 = _mm256_and_si256(r0, mag), mr1 = _mm256_and_si256(r1, mag);
        const __m256i mw0 = _mm256_and_si256(w0, mag), mw1 = _mm256_and_si256(w1, mag);
        /* (magnitudes are below 2^15: signed comparisons of them are the unsigned ones) */
        m &= ~(ones32_x(_mm256_cmpgt_epi16(mr0, inf), _mm256_cmpgt_epi16(mr1, inf))
               & ones32_x(_mm256_cmpgt_epi16(mw0, inf), _mm256_cmpgt_epi16(mw1, inf))); /* both NaN */
        const uint32_t zr = eq_x(mr0, mr1, zero), zw = eq_x(mw0, mw1, zero);
        const __m256i s0 = _mm256_srai_epi16(_mm256_xor_si256(r0, w0), 15), s1 = _mm256_srai_epi16(_mm256_xor_si256(r1, w1), 15);
        const uint32_t sd = ones32_x(s0, s1);
        const __m256i d0 = _mm256_blendv_epi8(_mm256_sub_epi16(_mm256_max_epu16(mr0, mw0), _mm256_min_epu16(mr0, mw0)),
                                              _mm256_add_epi16(mr0, mw0), s0);
        const __m256i d1 = _mm256_blendv_epi8(_mm256_sub_epi16(_mm256_max_epu16(mr1, mw1), _mm256_min_epu16(mr1, mw1)),
                                              _mm256_add_epi16(mr1, mw1), s1);
        uint32_t alone = m & ~ones32_x(_mm256_cmpgt_epi16(mr0, finite), _mm256_cmpgt_epi16(mr1, finite))
                         & ~ones32_x(_mm256_cmpgt_epi16(mw0, finite), _mm256_cmpgt_epi16(mw1, finite)) & ~(zr & zw)
                         & le_epu16_x(d0, d1, budget);
        if (c->strict)
            alone &= ~((zr | zw) & sd);
        uint32_t sub = 0, fast = 0, ftz = 0, far = 0;
        if (alone) {
            const __m256i a0 = LOAD_X(p1), a1 = LOAD_X(p1 + 16), b0 = LOAD_X(p2), b1 = LOAD_X(p2 + 16);
            const __m256i y0 = LOAD_X(pd), y1 = LOAD_X(pd + 16);
            if (!c->b_open) { /* |RN32(x1 - x2)| == beta, 8 lanes a conversion */
                uint32_t maybe = 0;
                for (int q = 0; q < 4; q++) {
                    const __m128i a = _mm_loadu_si128((const __m128i *)(p1 + 8 * q)), b = _mm_loadu_si128((const __m128i *)(p2 + 8 * q));
                    const __m256 diff = _mm256_and_ps(_mm256_sub_ps(_mm256_cvtph_ps(a), _mm256_cvtph_ps(b)), absm);
                    maybe |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(diff, vb, _CMP_EQ_OQ)) << (8 * q);
                }
                for (maybe &= alone; maybe; maybe &= maybe - 1) {
                    const int j = __builtin_ctz(maybe);
                    if (on_boundary(c, at + j))
                        alone &= ~(1u << j);
                }
            }
            const uint32_t subin = subnormal_x(y0, y1) | subnormal_x(a0, a1) | subnormal_x(b0, b1);
            sub = subin | subnormal_x(w0, w1);
            if (c->mon) { /* as visit_z */
                const uint16_t *mb = c->mbuf + (at - c->mstart);
                fast = alone & ~(zr | zw) & ones32_x(_mm256_cmpeq_epi16(r0, LOAD_X(mb)), _mm256_cmpeq_epi16(r1, LOAD_X(mb + 16)));
                if (fast & subin) {
                    if (!c->fon)
                        flushed_oracle(c, at);
                    const uint16_t *fb = c->fbuf + (at - c->fstart);
                    ftz = subin & ones32_x(_mm256_cmpeq_epi16(r0, LOAD_X(fb)), _mm256_cmpeq_epi16(r1, LOAD_X(fb + 16)));
                }
                if (fast) {
                    c->t->alone += __builtin_popcount(fast);
                    count_buckets_x(c->t, 2, fast & ~ftz, d0, d1);
                    count_buckets_x(c->t, 3, fast & ftz, d0, d1);
                    alone &= ~fast;
                    for (int row = 2; row < 4; row++) {
                        const __m256i wd = _mm256_set1_epi16((short)(uint16_t)c->fast_dist[row]);
                        far |= fast & (row == 3 ? ftz : ~ftz) & ~le_epu16_x(d0, d1, wd);
                    }
                }
            }
        }
        _mm256_storeu_si256((__m256i *)dist, d0);
        _mm256_storeu_si256((__m256i *)(dist + 16), d1);
        sort_half(c, at, far, ftz, alone, m & ~alone & ~fast, sub, dist, want);
    }
}

/* unit_model_z on AVX2: the lanes of the half at `at` (got r, correctly rounded w, the first
 * model's bits mb) that are the first model's result one ULP away and not boundary candidates
 * (magnitudes are below 2^15: signed comparisons of them are the unsigned ones). */
V3 static inline uint32_t unit_model_x(const pass *c, ptrdiff_t at, __m256i r0, __m256i r1, __m256i w0, __m256i w1,
                                       const uint16_t *mb) {
    const __m256i mag = _mm256_set1_epi16(0x7fff), one = _mm256_set1_epi16(1), finite = _mm256_set1_epi16(0x7bff);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i mr0 = _mm256_and_si256(r0, mag), mr1 = _mm256_and_si256(r1, mag);
    const __m256i mw0 = _mm256_and_si256(w0, mag), mw1 = _mm256_and_si256(w1, mag);
    const uint32_t model = ones32_x(_mm256_cmpeq_epi16(r0, LOAD_X(mb)), _mm256_cmpeq_epi16(r1, LOAD_X(mb + 16)));
    const uint32_t unit = ones32_x(_mm256_or_si256(_mm256_cmpeq_epi16(r0, _mm256_add_epi16(w0, one)),
                                                   _mm256_cmpeq_epi16(r0, _mm256_sub_epi16(w0, one))),
                                   _mm256_or_si256(_mm256_cmpeq_epi16(r1, _mm256_add_epi16(w1, one)),
                                                   _mm256_cmpeq_epi16(r1, _mm256_sub_epi16(w1, one))));
    const uint32_t zeros = eq_x(_mm256_min_epu16(mr0, mw0), _mm256_min_epu16(mr1, mw1), zero);
    const uint32_t big = ones32_x(_mm256_cmpgt_epi16(_mm256_max_epu16(mr0, mw0), finite),
                                  _mm256_cmpgt_epi16(_mm256_max_epu16(mr1, mw1), finite));
    return model & unit & ~zeros & ~big & ~bnd_lanes(c, at);
}

/* ftz_half_z on AVX2 (the whole half lies before c->lim). */
V3 static inline uint32_t ftz_half_x(pass *c, ptrdiff_t at, uint32_t m, __m256i r0, __m256i r1) {
    if (c->row_sub) {
        if (!c->fon)
            flushed_oracle(c, at);
        const uint16_t *fb = c->fbuf + (at - c->fstart);
        return m & ones32_x(_mm256_cmpeq_epi16(r0, LOAD_X(fb)), _mm256_cmpeq_epi16(r1, LOAD_X(fb + 16)));
    }
    if (at + 32 <= c->sub_lo || at >= c->sub_hi)
        return 0;
    const __m256i a0 = LOAD_X(c->x1 + at), a1 = LOAD_X(c->x1 + at + 16);
    const uint32_t sub = m & subnormal_x(a0, a1);
    if (!sub)
        return 0;
    row_fz(c, at);
    const __m256i p = _mm256_set1_epi16((short)c->fz[0]), n = _mm256_set1_epi16((short)c->fz[1]);
    return sub & ones32_x(_mm256_cmpeq_epi16(r0, _mm256_blendv_epi8(p, n, _mm256_srai_epi16(a0, 15))),
                          _mm256_cmpeq_epi16(r1, _mm256_blendv_epi8(p, n, _mm256_srai_epi16(a1, 15))));
}

/* visit_dense_z's one-ULP halves on AVX2: a half of a dense chunk of a row's middle whose
 * differing elements are each the first model's result one ULP away is counted by count_unit;
 * any other half (and one that reaches the chunk's end) goes to visit_x whole. */
V3 static void visit_dense_x(pass *c, ptrdiff_t base, uint64_t mask, const uint16_t *w, uint16_t wc) {
    if (c->budget < 1)
        return visit_x(c, base, mask, w, wc);
    for (int h = 0; h < 2; h++) {
        const uint32_t m = (uint32_t)(mask >> (32 * h));
        if (!m)
            continue;
        const ptrdiff_t at = base + 32 * h;
        if (at + 32 <= c->lim) {
            const uint16_t *ww = w + 32 * h;
            const __m256i r0 = LOAD_X(c->got + at), r1 = LOAD_X(c->got + at + 16);
            if (!(m & ~unit_model_x(c, at, r0, r1, LOAD_X(ww), LOAD_X(ww + 16), c->mbuf + (at - c->mstart)))) {
                count_unit(c, at, m, ftz_half_x(c, at, m, r0, r1), ww);
                continue;
            }
        }
        visit_x(c, at, m, w + 32 * h, wc);
    }
}

/* hist_base 32 elements at a time: each row's elements by bucket counted with popcounts; the
 * zero signs and a new largest distance (rare) element by element, in index order. */
V4 static void hist_z(alone_buf *a, sl1k_alone_tally *t, ptrdiff_t k) {
    const __m512i mag = _mm512_set1_epi16(0x7fff), sgn = _mm512_set1_epi16((short)0x8000), zero = _mm512_setzero_si512();
    for (; k + 32 <= a->n; k += 32) {
        const __m512i d = _mm512_loadu_si512(a->dist + k), g = _mm512_loadu_si512(a->got + k), w = _mm512_loadu_si512(a->want + k);
        const __mmask32 model = _mm256_test_epi8_mask(_mm256_loadu_si256((const __m256i *)(a->model + k)), _mm256_set1_epi8(1));
        const __mmask32 ftz = _mm256_test_epi8_mask(_mm256_loadu_si256((const __m256i *)(a->ftz + k)), _mm256_set1_epi8(1));
        const __mmask32 zs = (_mm512_cmpeq_epi16_mask(_mm512_and_si512(g, mag), zero) | _mm512_cmpeq_epi16_mask(_mm512_and_si512(w, mag), zero))
                             & _mm512_test_epi16_mask(_mm512_xor_si512(g, w), sgn);
        for (int row = 0; row < 4; row++) {
            const __mmask32 in = (row & 2 ? model : ~model) & (row & 1 ? ftz : ~ftz);
            if (!in)
                continue;
            count_buckets(t, row, in, d);
            const __mmask32 far = in & _mm512_cmpgt_epu16_mask(d, _mm512_set1_epi16((short)(uint16_t)(t->worst_dist[row] > 0xffff ? 0xffff : t->worst_dist[row])));
            if (far | (in & zs))
                for (__mmask32 e = far | (in & zs); e; e &= e - 1) { /* in index order, as hist_base */
                    const int j = __builtin_ctz(e);
                    keep_worst(&t->worst_dist[row], &t->worst[row], &t->worst_want[row], a->dist[k + j], a->at[k + j],
                               a->want[k + j]);
                    if (zs >> j & 1)
                        count_zsign(t, row, h_bucket(a->dist[k + j]), a->at[k + j], a->want[k + j]);
                }
        }
    }
    hist_base(a, t, k);
}
#undef LOAD_X
#endif

/* Bits set in x (no popcnt instruction assumed: the baseline build). */
static inline int pop64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    return (int)((((x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full) * 0x0101010101010101ull) >> 56);
}

/* The bits of model (a kernel id; -1: the correctly rounded result) for the elements [s, s + m)
 * into out: along a row's middle (bnd_known), the row loops for one dy and x2 (the same bits). */
static void model_bits(const pass *c, int model, ptrdiff_t s, ptrdiff_t m, uint16_t *out) {
    if (c->bnd_known)
        sl1k_f16_row(model, c->x1 + s, c->dy[s], c->x2[s], c->beta, out, m);
    else if (model < 0)
        sl1k_f16_cr(c->dy + s, c->x1 + s, c->x2 + s, c->beta, out, m);
    else
        sl1k_f16(model, c->dy + s, c->x1 + s, c->x2 + s, c->beta, out, m);
}

/* Elements [s, e) by the arithmetic: sl1k_f16_cr, CHUNK at a time, compared 64 at a time. */
static void check_computed(pass *c, ptrdiff_t s, ptrdiff_t e) {
    uint64_t masks[CHUNK / RUN];
    for (; s < e; s += CHUNK) {
        const ptrdiff_t m = e - s < CHUNK ? e - s : CHUNK;
        const uint16_t *g = c->got + s;
        model_bits(c, -1, s, m, c->buf);
        ptrdiff_t differ = 0;
        for (ptrdiff_t i = 0; i < m; i += RUN) {
            uint64_t mask = 0;
            if (m - i >= RUN)
                mask = c->diff(c->buf + i, g + i);
            else
                for (ptrdiff_t k = i; k < m; k++)
                    mask |= (uint64_t)(c->buf[k] != g[k]) << (k - i);
            masks[i / RUN] = mask;
            differ += pop64(mask);
        }
        /* dense: more than one element in 8 differs (visit_z and visit_x count the first model's own there) */
        c->mon = c->a && c->nmodels && c->visit != visit_base && differ * 8 > m;
        c->fon = 0;
        if (c->mon)
            model_bits(c, c->models[c->a->first], s, m, c->mbuf), c->mstart = s, c->mend = s + m;
        /* the bias pass: a held model's bits of every chunk where an element differs (a sampled block
         * only: a sparse chunk's model costs about 1,000 cycles, numpy's judging its 28 deviations far more) */
        c->bon = c->bias && c->nheld && !c->prone && differ;
        if (c->bon) {
            model_bits(c, c->held[c->hcur], s, m, c->mbuf), c->mstart = s, c->mend = s + m;
            c->hit = c->miss = 0;
        }
        c->lim = s + m;
        const visit_fn visit = c->mon && c->bnd_known && c->dense ? c->dense : c->visit;
        for (ptrdiff_t i = 0; i < m; i += RUN)
            if (masks[i / RUN])
                visit(c, s + i, masks[i / RUN], c->buf + i, 0);
        if (c->bon && c->miss > c->hit) /* most were not its results: the next held model in the next chunk */
            c->hcur = (c->hcur + 1) % c->nheld;
        c->mon = c->bon = 0;
    }
}

/* Elements [s, e), whose correctly rounded result is w (a NaN: any NaN is right). */
static void check_constant(pass *c, ptrdiff_t s, ptrdiff_t e, uint16_t w) {
    const int nan = h_nan(w);
    const const_fn f = nan ? c->number : c->diffc;
    c->lim = e;
    while (e - s >= RUN) {
        s += c->skip(c->got + s, (e - s) / RUN * RUN, w); /* the runs that are all right */
        if (e - s < RUN)
            break;
        c->visit(c, s, f(c->got + s, w), NULL, w);
        s += RUN;
    }
    uint64_t mask = 0;
    for (ptrdiff_t k = s; k < e; k++)
        mask |= (uint64_t)(nan ? !h_nan(c->got[k]) : c->got[k] != w) << (k - s);
    if (mask)
        c->visit(c, s, mask, NULL, w);
}

/* The first i in [s, e) where the exact diff d = table[i] - x (binary64 holds every fp16 diff)
 * passes the limit: d >= limit (GE), d > limit (GT), d <= limit (LE), d < limit (LT), along a
 * stretch where that is false, then true. */
enum { GE, GT, LE, LT };
static ptrdiff_t first_where(const uint16_t *table, ptrdiff_t s, ptrdiff_t e, double x, double limit, int how) {
    while (s < e) {
        const ptrdiff_t mid = s + (e - s) / 2;
        const double d = h_value(table[mid]) - x;
        const int past = how == GE ? d >= limit : how == GT ? d > limit : how == LE ? d <= limit : d < limit;
        if (past)
            e = mid;
        else
            s = mid + 1;
    }
    return s;
}

/* The middle [lo, hi) of a row's stretch at base (|diff| <= beta, found by first_where; x1 rises
 * or falls strictly along it): check_computed, told that only its first and last element can lie
 * on the boundary (pass.bnd_known) and where x1 may be subnormal (|x1| < 2^-14: between the
 * first element past -2^-14 and the first at or past 2^-14, the other way where x1 falls). */
static void check_middle(pass *c, ptrdiff_t base, ptrdiff_t lo, ptrdiff_t hi, int rising) {
    if (lo >= hi) /* (none: at a row's end, base + lo may be the arrays' end, where nothing may be read) */
        return;
    const double t = 0x1p-14;
    const ptrdiff_t a = first_where(c->x1, lo, hi, 0.0, rising ? -t : t, rising ? GT : LT);
    c->sub_lo = base + a, c->sub_hi = base + first_where(c->x1, a, hi, 0.0, rising ? t : -t, rising ? GE : LE);
    const ptrdiff_t s = base + lo, e = base + hi;
    c->bnd_known = 1, c->bnd[0] = s, c->bnd[1] = e - 1;
    c->row_sub = h_subnormal(c->dy[s]) | h_subnormal(c->x2[s]);
    c->fz_ok = 0;
    check_computed(c, s, e);
    c->bnd_known = 0;
}

/* One row [base, base + rows->row): x1 the table (the row at 0), x2 one value, dy one value. */
static void check_row(pass *c, const sl1k_rows *rows, ptrdiff_t base) {
    const uint16_t hy = c->dy[base], hx = c->x2[base], gt = hy, lt = hy ^ 0x8000;
    if (c->b_open || (h_special(hx) && !h_nan(hx)))
        return check_computed(c, base, base + rows->row);
    if (h_nan(hy) || h_nan(hx)) /* every result is NaN: dy or the diff is */
        return check_constant(c, base, base + rows->row, 0x7e00);
    const double x = h_value(hx), b = c->bv;
    for (ptrdiff_t r = 0; r < rows->nruns; r++) {
        const ptrdiff_t s = rows->runs[3 * r], e = rows->runs[3 * r + 1];
        const int64_t dir = rows->runs[3 * r + 2];
        if (!dir) {
            check_computed(c, base + s, base + e);
        } else if (dir == 2) { /* x1 NaN: every result NaN */
            check_constant(c, base + s, base + e, 0x7e00);
        } else if (dir > 0) { /* the diff rises: below -beta, the middle and boundary, above beta */
            const ptrdiff_t lo = first_where(c->x1, s, e, x, -b, GE), hi = first_where(c->x1, lo, e, x, b, GT);
            check_constant(c, base + s, base + lo, lt);
            check_middle(c, base, lo, hi, 1);
            check_constant(c, base + hi, base + e, gt);
        } else { /* the diff falls: above beta, the middle and boundary, below -beta */
            const ptrdiff_t lo = first_where(c->x1, s, e, x, b, LE), hi = first_where(c->x1, lo, e, x, -b, LT);
            check_constant(c, base + s, base + lo, gt);
            check_middle(c, base, lo, hi, 0);
            check_constant(c, base + hi, base + e, lt);
        }
    }
}

/* A pass over n elements with the ISA's loops (its inputs, got, beta and the outputs idx and
 * want set); NULL where memory ran out. */
static pass *new_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2, uint16_t beta, const uint16_t *got,
                      int budget, int64_t *idx, uint16_t *want) {
    pass *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    const double bv = h_value(beta);
    *c = (pass){.dy = dy, .x1 = x1, .x2 = x2, .got = got, .beta = beta, .budget = budget,
                .b_open = !(bv > 0 && bv < INFINITY), /* exact.at_boundary: none then */
                .bv = bv, .idx = idx, .want = want,
                .diff = diff64_base, .diffc = diffc64_base, .number = number64_base, .skip = skip_base,
                .visit = visit_base, .hist = hist_base};
#ifdef SL1_HAVE_V3
    switch (sl1k_variant()) {
    case 2:
        c->diff = diff64_z, c->diffc = diffc64_z, c->number = number64_z, c->skip = skip_z, c->visit = visit_z, c->hist = hist_z;
        c->dense = visit_dense_z;
        break;
    case 1:
        c->diff = diff64_x, c->diffc = diffc64_x, c->number = number64_x, c->skip = skip_x, c->visit = visit_x;
        c->dense = visit_dense_x;
        break;
    }
#endif
    return c;
}

/* Every element of the pass checked: row by row where the block has rows, else computed. */
static void walk(pass *c, const sl1k_rows *rows, ptrdiff_t n) {
    if (rows && rows->row > 0 && n % rows->row == 0)
        for (ptrdiff_t base = 0; base < n; base += rows->row)
            check_row(c, rows, base);
    else
        check_computed(c, 0, n);
}

ptrdiff_t sl1k_f16_judge_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                              uint16_t beta, const uint16_t *got, ptrdiff_t n, int budget,
                              int strict_zero_sign, const int *models, int nmodels,
                              const sl1k_rows *rows, int64_t *idx, uint16_t *want, sl1k_alone_tally *t) {
    pass *c = new_pass(dy, x1, x2, beta, got, budget, idx, want);
    if (!c)
        return -1;
    c->strict = strict_zero_sign, c->models = models, c->nmodels = nmodels, c->t = t;
    if (t) {
        memset(t, 0, sizeof *t);
        for (int r = 0; r < 4; r++)
            t->worst[r] = t->first_zsign[r] = -1;
        if (!h_subnormal(beta)) { /* judge.within_budget_alone accepts nothing then */
            c->a = malloc(sizeof *c->a);
            if (!c->a) {
                free(c);
                return -1;
            }
            c->a->n = c->a->nsub = 0, c->a->first = 0;
        }
    }
    walk(c, rows, n);
    if (c->a) {
        alone_flush(c);
        for (int row = 2; row < 4; row++)
            if (c->fast_dist[row] > t->worst_dist[row]
                || (c->fast_dist[row] == t->worst_dist[row] && c->fast_dist[row] > 0 && c->fast_at[row] < t->worst[row]))
                t->worst_dist[row] = c->fast_dist[row], t->worst[row] = c->fast_at[row], t->worst_want[row] = c->fast_want[row];
    }
    const ptrdiff_t count = c->count;
    free(c->a);
    free(c);
    return count;
}

ptrdiff_t sl1k_f16_bias_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                             uint16_t beta, const uint16_t *got, ptrdiff_t n, int budget,
                             const int *held, int nheld, const sl1k_rows *rows, int64_t *idx, uint16_t *want,
                             int64_t *explained) {
    pass *c = new_pass(dy, x1, x2, beta, got, budget, idx, want);
    if (!c)
        return -1;
    c->bias = 1, c->held = held, c->nheld = c->b_open || h_subnormal(beta) || budget < 1 ? 0 : nheld;
    c->prone = 1.0 / fabs(c->bv) > 65504.0; /* (judge.overflow_prone: 1 / beta, a zero beta too) */
    c->visit = visit_bias_base;
#ifdef SL1_HAVE_V3
    if (sl1k_variant() == 2)
        c->visit = visit_bias_z;
#endif
    walk(c, rows, n);
    const ptrdiff_t count = c->count;
    *explained = c->explained;
    free(c);
    return count;
}

ptrdiff_t sl1k_f16_mismatches(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                              uint16_t beta, const uint16_t *got, ptrdiff_t n,
                              int64_t *idx, uint16_t *want) {
    return sl1k_f16_judge_pass(dy, x1, x2, beta, got, n, -1, 0, NULL, 0, NULL, idx, want, NULL);
}

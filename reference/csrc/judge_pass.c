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
 * sl1k_f16_cr gives too), and the check is a comparison of got with one constant; only the
 * middle (|diff| <= beta, the boundary included) and the rest of the table (infinities, NaN,
 * short stretches) get the arithmetic. For a NaN dy or x2 every result is NaN; an infinite x2
 * or a beta outside (0, inf) takes the arithmetic for the whole row.
 *
 * The shortcut: the elements that differ are sorted in the same pass. Those
 * judge.within_budget_alone (Python, the definition) says are WITHIN_BUDGET are counted here,
 * into the sweep's histogram (sweep_tally: the row by whether an accepted model gives got and
 * whether the flush-to-zero oracle does, the bucket by the ULP distance, the zero-sign count,
 * the worst and first zero-sign element of each row), and only the others leave for the whole
 * judge: their indices in idx and the correctly rounded bits in want (a NaN as the canonical
 * quiet NaN 0x7e00). tests/test_sweep_shortcut.py checks both, with and without rows, against
 * the Python definitions. */
#include "loops.h"
#include "half_bits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SL1_HAVE_V3 1
#include <immintrin.h>
#define V3 __attribute__((target("avx2,f16c")))
#define V4 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))
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
#undef LOAD_X
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
    int64_t at[CHUNK], dist[CHUNK];
    uint8_t model[CHUNK], ftz[CHUNK];
    ptrdiff_t n;
    int first; /* the model tried first: the one that matched most in the last batch */
} alone_buf;

/* One pass's state: the inputs, the profile's shortcut arguments, what leaves and what is counted. */
typedef struct {
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
    uint16_t buf[CHUNK];
} pass;

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
            if (a->bits[j] == a->got[k])
                a->model[k] = 1;
            else
                a->left[keep++] = k;
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
    for (ptrdiff_t k = 0; k < a->n; k++)
        if (h_subnormal(a->want[k]) | h_subnormal(a->dy[k]) | h_subnormal(a->x1[k]) | h_subnormal(a->x2[k])) {
            a->gdy[m] = h_flush(a->dy[k]), a->gx1[m] = h_flush(a->x1[k]), a->gx2[m] = h_flush(a->x2[k]);
            a->left[m++] = (uint16_t)k;
        }
    if (!m)
        return;
    sl1k_f16(SL1_MULDIV * 3 + SL1_C64, a->gdy, a->gx1, a->gx2, c->beta, a->bits, m);
    for (ptrdiff_t j = 0; j < m; j++)
        a->ftz[a->left[j]] = h_flush(a->bits[j]) == a->got[a->left[j]];
}

static void alone_flush(pass *c) {
    alone_buf *a = c->a;
    sl1k_alone_tally *t = c->t;
    const ptrdiff_t n = a->n;
    if (!n)
        return;
    memset(a->model, 0, (size_t)n);
    memset(a->ftz, 0, (size_t)n);
    match_models(c);
    match_flushed(c);
    for (ptrdiff_t k = 0; k < n; k++) {
        const int row = 2 * a->model[k] + a->ftz[k], b = h_bucket(a->dist[k]);
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

/* Element k, whose bits differ from the correctly rounded w: nothing (both NaN), counted
 * (judge.within_budget_alone, condition by condition), or handed back. */
static inline void visit(pass *c, ptrdiff_t k, uint16_t w) {
    const uint16_t r = c->got[k];
    const int w_nan = h_nan(w), r_nan = h_nan(r);
    if (w_nan && r_nan)
        return;
    alone_buf *a = c->a;
    if (a) {
        const uint16_t d = c->dy[k], p = c->x1[k], q = c->x2[k];
        const int64_t dist = llabs(h_ordered(r) - h_ordered(w));
        /* (&, not &&: no branch to mispredict per condition) */
        int alone = (dist <= c->budget) & !h_special(r) & !h_special(w) & !(h_zero(r) & h_zero(w));
        if (c->strict)
            alone &= !((h_zero(r) | h_zero(w)) & !!((r ^ w) & 0x8000));
        if (!c->b_open) /* the exact diff (binary64 holds it) is not +-beta */
            alone &= fabs(h_value(p) - h_value(q)) != c->bv;
        if (alone) {
            if (a->n == CHUNK)
                alone_flush(c);
            const ptrdiff_t j = a->n++;
            a->dy[j] = d, a->x1[j] = p, a->x2[j] = q, a->got[j] = r, a->want[j] = w;
            a->at[j] = k, a->dist[j] = dist;
            return;
        }
    }
    c->idx[c->count] = k;
    c->want[c->count] = w_nan ? 0x7e00 : w;
    c->count++;
}

/* The elements of mask (bit j: element base + j), w[j] their correctly rounded bits, or wc
 * for all where w is NULL. */
static inline void visit_mask(pass *c, ptrdiff_t base, uint64_t mask, const uint16_t *w, uint16_t wc) {
    while (mask) {
        const int j = __builtin_ctzll(mask);
        mask &= mask - 1;
        visit(c, base + j, w ? w[j] : wc);
    }
}

/* Elements [s, e) by the arithmetic: sl1k_f16_cr, CHUNK at a time, compared 64 at a time. */
static void check_computed(pass *c, ptrdiff_t s, ptrdiff_t e) {
    for (; s < e; s += CHUNK) {
        const ptrdiff_t m = e - s < CHUNK ? e - s : CHUNK;
        const uint16_t *g = c->got + s;
        sl1k_f16_cr(c->dy + s, c->x1 + s, c->x2 + s, c->beta, c->buf, m);
        for (ptrdiff_t i = 0; i < m; i += RUN) {
            uint64_t mask = 0;
            if (m - i >= RUN)
                mask = c->diff(c->buf + i, g + i);
            else
                for (ptrdiff_t k = i; k < m; k++)
                    mask |= (uint64_t)(c->buf[k] != g[k]) << (k - i);
            visit_mask(c, s + i, mask, c->buf + i, 0);
        }
    }
}

/* Elements [s, e), whose correctly rounded result is w (a NaN: any NaN is right). */
static void check_constant(pass *c, ptrdiff_t s, ptrdiff_t e, uint16_t w) {
    const int nan = h_nan(w);
    const const_fn f = nan ? c->number : c->diffc;
    for (; s < e; s += RUN) {
        uint64_t mask = 0;
        if (e - s >= RUN)
            mask = f(c->got + s, w);
        else
            for (ptrdiff_t k = s; k < e; k++)
                mask |= (uint64_t)(nan ? !h_nan(c->got[k]) : c->got[k] != w) << (k - s);
        visit_mask(c, s, mask, NULL, w);
    }
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
        } else if (dir > 0) { /* the diff rises: below -beta, the middle and boundary, above beta */
            const ptrdiff_t lo = first_where(c->x1, s, e, x, -b, GE), hi = first_where(c->x1, lo, e, x, b, GT);
            check_constant(c, base + s, base + lo, lt);
            check_computed(c, base + lo, base + hi);
            check_constant(c, base + hi, base + e, gt);
        } else { /* the diff falls: above beta, the middle and boundary, below -beta */
            const ptrdiff_t lo = first_where(c->x1, s, e, x, b, LE), hi = first_where(c->x1, lo, e, x, -b, LT);
            check_constant(c, base + s, base + lo, gt);
            check_computed(c, base + lo, base + hi);
            check_constant(c, base + hi, base + e, lt);
        }
    }
}

ptrdiff_t sl1k_f16_judge_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                              uint16_t beta, const uint16_t *got, ptrdiff_t n, int budget,
                              int strict_zero_sign, const int *models, int nmodels,
                              const sl1k_rows *rows, int64_t *idx, uint16_t *want, sl1k_alone_tally *t) {
    pass *c = malloc(sizeof *c);
    if (!c)
        return -1;
    const double bv = h_value(beta);
    *c = (pass){.dy = dy, .x1 = x1, .x2 = x2, .got = got, .beta = beta, .budget = budget,
                .strict = strict_zero_sign, .b_open = !(bv > 0 && bv < INFINITY), /* exact.at_boundary: none then */
                .bv = bv, .models = models, .nmodels = nmodels, .idx = idx, .want = want, .t = t,
                .diff = diff64_base, .diffc = diffc64_base, .number = number64_base};
#ifdef SL1_HAVE_V3
    switch (sl1k_variant()) {
    case 2:
        c->diff = diff64_z, c->diffc = diffc64_z, c->number = number64_z;
        break;
    case 1:
        c->diff = diff64_x, c->diffc = diffc64_x, c->number = number64_x;
        break;
    }
#endif
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
            c->a->n = 0, c->a->first = 0;
        }
    }
    if (rows && rows->row > 0 && n % rows->row == 0)
        for (ptrdiff_t base = 0; base < n; base += rows->row)
            check_row(c, rows, base);
    else
        check_computed(c, 0, n);
    if (c->a)
        alone_flush(c);
    const ptrdiff_t count = c->count;
    free(c->a);
    free(c);
    return count;
}

ptrdiff_t sl1k_f16_mismatches(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                              uint16_t beta, const uint16_t *got, ptrdiff_t n,
                              int64_t *idx, uint16_t *want) {
    return sl1k_f16_judge_pass(dy, x1, x2, beta, got, n, -1, 0, NULL, 0, NULL, idx, want, NULL);
}

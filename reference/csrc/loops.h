/* SmoothL1LossGrad loops for the Cython kernel: every evaluation model of
 * sl1conf.reference.models, for fp32 and fp16 data, chosen at run time.
 *
 * Rounding: every step of a model is rounded to its compute type by assigning
 * it to a variable of that type (GCC and Clang honour this with
 * -fexcess-precision=standard); never -ffast-math (it enables flush-to-zero for
 * the whole process). Build with -fno-trapping-math so the branchy loops
 * vectorize, and -ffp-contract=off so no multiply is fused with anything.
 */
#ifndef SL1_KERNEL_LOOPS_H
#define SL1_KERNEL_LOOPS_H

#include <stddef.h>
#include <stdint.h>

/* model = order * 3 + compute; order: 0 divmul, 1 recipmul, 2 muldiv;
 * compute: 0 fp16, 1 fp32, 2 fp64. Returns 0, or -1 for a model that does not
 * apply to the data type. */
enum { SL1_DIVMUL = 0, SL1_RECIPMUL = 1, SL1_MULDIV = 2 };
enum { SL1_C16 = 0, SL1_C32 = 1, SL1_C64 = 2 };

int sl1k_f32(int model, const float *dy, const float *x1, const float *x2,
             float beta, float *out, ptrdiff_t n);
int sl1k_f16(int model, const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
             uint16_t beta, uint16_t *out, ptrdiff_t n);

/* The fast exact oracle's fp32 filter (see sl1conf.reference.fast_oracle):
 * the correctly rounded result where a binary64 evaluation with a proven error
 * bound decides it, and ambiguous[i] = 1 (result left to the caller) where it
 * does not. Returns the number of ambiguous elements. */
ptrdiff_t sl1k_f32_filtered(const uint32_t *dy, const float *x1, const float *x2,
                            float beta, uint32_t *out, uint8_t *ambiguous, ptrdiff_t n);

/* The elements of got (fp16 bits) that are not the correctly rounded result, NaN as a
 * class: their indices in idx, the correctly rounded bits in want (NaN as 0x7e00); returns
 * their number. One thread; idx and want hold n each (judge_pass.c says how). */
ptrdiff_t sl1k_f16_mismatches(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                              uint16_t beta, const uint16_t *got, ptrdiff_t n,
                              int64_t *idx, uint16_t *want);

/* The correctly rounded fp16 result of every element (NaN payloads aside: the binary64
 * model's bits): from binary32 with a proven error bound where that decides it, in binary64
 * elsewhere (loops.c, f16_simd.inc's cr_f32). One thread. */
void sl1k_f16_cr(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2, uint16_t beta,
                 uint16_t *out, ptrdiff_t n);
/* sl1k_f16 (model 0 to 8), or sl1k_f16_cr (model -1), for a row's middle: dy and x2 one value
 * each, |x1 - x2| <= beta exactly for every element (the caller's binary search says so); the
 * same bits, with fewer steps (f16_simd.inc's f16_row and cr_row_f32) where dy and x2 are
 * finite (and beta, for the correctly rounded result). -1 for a model out of range (nothing written),
 * else 0. */
int sl1k_f16_row(int model, const uint16_t *x1, uint16_t dy, uint16_t x2, uint16_t beta, uint16_t *out,
                 ptrdiff_t n);

/* The sweep's check with judge.within_budget_alone's shortcut (judge_pass.c says how): the
 * elements of got that differ from the correctly rounded result and that the shortcut does
 * not accept (budget: the profile's fp16 ULP budget; strict_zero_sign: the profile's; models:
 * the accepted models' kernel ids) in idx and want, their number returned; those it accepts
 * counted in t (NULL: none accepted, every element that differs returned). */
typedef struct {
    int64_t hist[4][10], zsign[4][10]; /* sweep_tally's ROWS x BUCKETS */
    int64_t worst[4], worst_dist[4];   /* per row: the first element of the largest distance (-1: none) */
    int64_t first_zsign[4];            /* per row: the first zero-sign element (-1: none) */
    int64_t worst_want[4], zsign_want[4]; /* the correctly rounded bits of those two */
    int64_t alone;                     /* elements accepted */
} sl1k_alone_tally;
/* A sweep block's shape, where it has one: rows of `row` elements, x1 in each the first row's
 * (the table), x2 and dy one value a row; runs: nruns triples (start, end, direction) cutting
 * the table into stretches whose values rise strictly (1), fall strictly (-1), are all NaN (2),
 * or neither (0). */
typedef struct {
    ptrdiff_t row;
    const int64_t *runs;
    ptrdiff_t nruns;
} sl1k_rows;
/* rows: NULL, or the block's shape (judge_pass.c: the outer branches then cost a comparison).
 * Returns -1 where memory ran out. */
ptrdiff_t sl1k_f16_judge_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                              uint16_t beta, const uint16_t *got, ptrdiff_t n, int budget,
                              int strict_zero_sign, const int *models, int nmodels,
                              const sl1k_rows *rows, int64_t *idx, uint16_t *want, sl1k_alone_tally *t);

/* The rounding-bias counts' pass (judge_pass.c, accuracy.lean_bias_counts): the elements of got
 * that differ from the correctly rounded result, as sl1k_f16_mismatches gives them, but for
 * those that accuracy.bias_counts surely counts as "explained" (an ordinary element, within the
 * budget, whose result a held model (kernel ids, in held) gives bit for bit), which are counted
 * in *explained. Returns -1 where memory ran out. */
ptrdiff_t sl1k_f16_bias_pass(const uint16_t *dy, const uint16_t *x1, const uint16_t *x2,
                             uint16_t beta, const uint16_t *got, ptrdiff_t n, int budget,
                             const int *held, int nheld, const sl1k_rows *rows, int64_t *idx, uint16_t *want,
                             int64_t *explained);

/* The instruction-set variant the loops run (0 baseline, 1 AVX2 + F16C, 2 AVX-512 F/BW/VL). */
int sl1k_variant(void);

/* One call of the kernel over n elements, for sl1k_run. */
typedef struct {
    int is_f32;          /* float32 data (else float16) */
    int traffic;         /* the bandwidth probe instead of a model: out = dy ^ x1 ^ x2 on bits */
    int model;
    const void *dy, *x1, *x2;
    void *out;
    float f_beta;        /* beta for float32 data */
    uint16_t h_beta;     /* beta's bits for float16 data */
} sl1k_call;

/* The call split into `tasks` ranges (as pool.h describes: aligned = 0 is the
 * core_chunks split) run on up to `threads` threads of the worker pool.
 * Returns 0, or -1 (nothing written) for a model that does not apply. */
int sl1k_run(const sl1k_call *call, ptrdiff_t n, int tasks, int threads, int aligned);

/* Workers the pool has started in this process. */
int sl1k_pool_workers(void);

/* Which instruction-set variant sl1k_* run on this CPU ("x86-64 AVX-512",
 * "x86-64 AVX2+F16C", "x86-64 baseline", "generic"); SL1CONF_KERNEL_ISA=baseline
 * or =avx2 in the environment forces a narrower variant (to test it on any CPU). */
const char *sl1k_isa(void);

#endif

/* smoothl1lossgrad.c: a portable sample implementation of the SmoothL1LossGrad C API.
 *
 * It is the suite's reference for what a conforming library computes: the manual's
 * formula in its own order (the "divmul" evaluation model in the data precision),
 *
 *     diff = x1 - x2;
 *     if (diff > beta)        dx1 = dy;
 *     else if (diff < -beta)  dx1 = -dy;
 *     else                    dx1 = diff / beta * dy;
 *
 * with every step assigned to a variable of the data type, so it is rounded to fp32
 * (float) or fp16 (_Float16) before the next step. Its results are bit-identical to
 * the models divmul-fp32 and divmul-fp16 (NaN compared as a class) when compiled with
 *
 *     -O2 -std=c11 -ffp-contract=off -fexcess-precision=standard
 *
 * -ffp-contract=off forbids fusing q * dy into an FMA with anything; standard excess
 * precision makes each assignment to _Float16 round (targets without fp16 arithmetic
 * compute in float, which is exact enough: float has 24 >= 2 * 11 + 2 bits, so the
 * double rounding of + - * / to half is innocuous). Never -ffast-math: it flushes
 * subnormals and reorders arithmetic. -dy in fp16 is computed by flipping the sign bit,
 * so +-dy come back bit for bit (NaN payloads included).
 *
 * Behaviour the manual leaves open, as decided here:
 *   - length <= 0 writes nothing; core_mask == 0 (shared version) writes nothing.
 *   - The shared version splits [0, length) across the set bits of core_mask, lowest bit
 *     first, one contiguous chunk per core, the first length % cores chunks one element
 *     longer (as sl1conf.reference.cores does); each chunk is handed to a per-core
 *     worker in turn, as the cores would run it.
 *   - Every input element is read before dx1[i] is written, so dx1 may alias dy, x1 or
 *     x2 exactly (in-place use). Partial overlaps are not supported.
 *
 * Deliberate defects, for testing the suite's detectors. Compile with -DSL1_BUG=<n>;
 * each is triggered only by one recognizable length (the same for fp16 and fp32 and
 * both variants, whatever the core_mask), so a test can check it is reported for
 * exactly that case:
 *
 *   n  name                     trigger        what it does
 *   1  SL1_BUG_SEGV             length == 13   writes through a NULL pointer (SIGSEGV)
 *   2  SL1_BUG_HANG             length == 17   loops forever
 *   3  SL1_BUG_WRITE_PAST_END   length == 19   writes dx1[length] (a fixed pattern) after the call's work
 *   4  SL1_BUG_READ_PAST_END    length == 23   reads x1[length] and folds it into a global
 *   5  SL1_BUG_CLOBBER_INPUT    length == 29   overwrites x2[0] (complements its bits)
 *   6  SL1_BUG_READ_BEFORE_START length == 31  reads x1[-1] and folds it into a global
 *
 * Without SL1_BUG (or with SL1_BUG=0) the library has none of them. The Python side
 * (sl1conf.adapters.sample) reads the numbers and lengths from the #defines below.
 */
#include "smoothl1lossgrad.h"

#include <stdint.h>
#include <string.h>

#define SL1_BUG_SEGV            1
#define SL1_BUG_HANG            2
#define SL1_BUG_WRITE_PAST_END  3
#define SL1_BUG_READ_PAST_END   4
#define SL1_BUG_CLOBBER_INPUT   5
#define SL1_BUG_READ_BEFORE_START 6

#define SL1_BUG_SEGV_LENGTH            13
#define SL1_BUG_HANG_LENGTH            17
#define SL1_BUG_WRITE_PAST_END_LENGTH  19
#define SL1_BUG_READ_PAST_END_LENGTH   23
#define SL1_BUG_CLOBBER_INPUT_LENGTH   29
#define SL1_BUG_READ_BEFORE_START_LENGTH 31

#ifndef SL1_BUG
#define SL1_BUG 0
#endif

#define SL1_MAX_CORES 32

/* ---- deliberate defects (compiled out unless SL1_BUG names one) ---------------- */

#if SL1_BUG == SL1_BUG_READ_PAST_END || SL1_BUG == SL1_BUG_READ_BEFORE_START
volatile unsigned sl1_bug_sink; /* where the value read outside x1 goes */
#endif

/* Called on entry of every public function, before any work. */
static void sl1_bug_before(int length)
{
    (void)length;
#if SL1_BUG == SL1_BUG_SEGV
    if (length == SL1_BUG_SEGV_LENGTH) {
        volatile float *volatile p = NULL; /* the compiler can neither see it is NULL nor drop the store */
        *p = 1.0f;
    }
#elif SL1_BUG == SL1_BUG_HANG
    if (length == SL1_BUG_HANG_LENGTH) {
        volatile int spin = 1;
        while (spin) {
        }
    }
#endif
}

/* Called on exit of every public function; size is the element size in bytes. */
static void sl1_bug_after(void *dx1, const void *x1, void *x2, int length, size_t size)
{
    (void)dx1; (void)x1; (void)x2; (void)length; (void)size;
#if SL1_BUG == SL1_BUG_WRITE_PAST_END
    if (length == SL1_BUG_WRITE_PAST_END_LENGTH) {
        static const unsigned char pattern[4] = {0x78, 0x56, 0x34, 0x12}; /* never the fill byte */
        volatile unsigned char *p = (volatile unsigned char *)dx1 + (size_t)length * size;
        for (size_t k = 0; k < size; k++)
            p[k] = pattern[k];
    }
#elif SL1_BUG == SL1_BUG_READ_PAST_END
    if (length == SL1_BUG_READ_PAST_END_LENGTH) {
        const volatile unsigned char *p = (const volatile unsigned char *)x1 + (size_t)length * size;
        unsigned acc = 0;
        for (size_t k = 0; k < size; k++)
            acc = acc * 256u + p[k];
        sl1_bug_sink ^= acc;
    }
#elif SL1_BUG == SL1_BUG_READ_BEFORE_START
    if (length == SL1_BUG_READ_BEFORE_START_LENGTH) {
        const volatile unsigned char *p = (const volatile unsigned char *)x1 - size;
        unsigned acc = 0;
        for (size_t k = 0; k < size; k++)
            acc = acc * 256u + p[k];
        sl1_bug_sink ^= acc;
    }
#elif SL1_BUG == SL1_BUG_CLOBBER_INPUT
    if (length == SL1_BUG_CLOBBER_INPUT_LENGTH) {
        volatile unsigned char *p = (volatile unsigned char *)x2;
        for (size_t k = 0; k < size; k++)
            p[k] = (unsigned char)~p[k];
    }
#endif
}

/* ---- the core split --------------------------------------------------------------- */

/* Calls worker(core, start, stop, ctx) for each set bit of core_mask, lowest first. */
typedef void (*sl1_worker)(int core, int start, int stop, void *ctx);

static void sl1_split(int length, int core_mask, sl1_worker worker, void *ctx)
{
    const uint32_t mask = (uint32_t)core_mask;
    int cores = 0;
    for (int bit = 0; bit < SL1_MAX_CORES; bit++)
        cores += (int)(mask >> bit & 1u);
    if (length <= 0 || cores == 0)
        return;
    const int per = length / cores, extra = length % cores;
    int start = 0, k = 0;
    for (int bit = 0; bit < SL1_MAX_CORES; bit++) {
        if (!(mask >> bit & 1u))
            continue;
        const int stop = start + per + (k < extra ? 1 : 0);
        worker(bit, start, stop, ctx);
        start = stop;
        k++;
    }
}

/* ---- fp32 ------------------------------------------------------------------------- */

static void fp_loop(const float *dy, float *dx1, const float *x1, const float *x2,
                    int start, int stop, float beta)
{
    const float nbeta = -beta;
    for (int i = start; i < stop; i++) {
        const float a = x1[i], b = x2[i], g = dy[i]; /* read everything before writing */
        const float diff = a - b;
        float r;
        if (diff > beta) {
            r = g;
        } else if (diff < nbeta) {
            r = -g;
        } else {
            const float q = diff / beta;
            r = q * g;
        }
        dx1[i] = r;
    }
}

struct fp_args {
    float *dy, *dx1, *x1, *x2;
    float beta;
};

static void fp_core(int core, int start, int stop, void *ctx)
{
    const struct fp_args *a = (const struct fp_args *)ctx;
    (void)core;
    fp_loop(a->dy, a->dx1, a->x1, a->x2, start, stop, a->beta);
}

void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2,
                           int length, float beta, int core_mask)
{
    sl1_bug_before(length);
    struct fp_args args = {dy, dx1, x1, x2, beta};
    sl1_split(length, core_mask, fp_core, &args);
    sl1_bug_after(dx1, x1, x2, length, sizeof(float));
}

void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2,
                           int length, float beta)
{
    sl1_bug_before(length);
    if (length > 0)
        fp_loop(dy, dx1, x1, x2, 0, length, beta);
    sl1_bug_after(dx1, x1, x2, length, sizeof(float));
}

/* ---- fp16 ------------------------------------------------------------------------- */

#ifndef SL1_NO_HALF

static void hp_loop(const half *dy, half *dx1, const half *x1, const half *x2,
                    int start, int stop, half beta)
{
    const half nbeta = -beta;
    for (int i = start; i < stop; i++) {
        const half a = x1[i], b = x2[i], g = dy[i]; /* read everything before writing */
        uint16_t gbits, rbits;
        memcpy(&gbits, &dy[i], sizeof gbits);
        const half diff = a - b;
        if (diff > beta) {
            rbits = gbits;
        } else if (diff < nbeta) {
            rbits = (uint16_t)(gbits ^ 0x8000u); /* -dy: flip the sign bit */
        } else {
            const half q = diff / beta;
            const half r = q * g;
            memcpy(&rbits, &r, sizeof rbits);
        }
        memcpy(&dx1[i], &rbits, sizeof rbits);
    }
}

struct hp_args {
    half *dy, *dx1, *x1, *x2;
    half beta;
};

static void hp_core(int core, int start, int stop, void *ctx)
{
    const struct hp_args *a = (const struct hp_args *)ctx;
    (void)core;
    hp_loop(a->dy, a->dx1, a->x1, a->x2, start, stop, a->beta);
}

void hp_smoothl1lossgrad_s(half *dy, half *dx1, half *x1, half *x2,
                           int length, half beta, int core_mask)
{
    sl1_bug_before(length);
    struct hp_args args = {dy, dx1, x1, x2, beta};
    sl1_split(length, core_mask, hp_core, &args);
    sl1_bug_after(dx1, x1, x2, length, sizeof(half));
}

void hp_smoothl1lossgrad_p(half *dy, half *dx1, half *x1, half *x2,
                           int length, half beta)
{
    sl1_bug_before(length);
    if (length > 0)
        hp_loop(dy, dx1, x1, x2, 0, length, beta);
    sl1_bug_after(dx1, x1, x2, length, sizeof(half));
}

#endif /* SL1_NO_HALF */

/* sl1_selftest.c: on-target self-test of a SmoothL1LossGrad library against the golden
 * vectors in sl1_vectors.h; see docs/vector-format.md of sl1conf.
 *
 * The same program for every export: `sl1conf vectors export --format c-header` copies it
 * unchanged (from sl1conf/conformance/vectors/selftest.c) beside the sl1_vectors.h it
 * writes; everything that differs from one vector set to another (the dtype, the counts,
 * the tables) comes from that header, whose first line names the sl1conf that wrote it.
 *
 * Build it with the library under test and its smoothl1lossgrad.h, for example
 *
 *     cc -std=c11 -O2 -I<folder of smoothl1lossgrad.h> sl1_selftest.c <library> -o sl1_selftest
 *
 * C99 (C11 is fine) plus _Float16 for fp16 sets (GCC >= 12, Clang >= 15, or a toolchain whose
 * smoothl1lossgrad.h defines `half`). It uses no file I/O and no heap: only printf (override
 * with -DSL1_PRINTF=my_printf) and static buffers.
 *
 * The budget is the profile's that the header carries (SL1_PROFILE_*: `--platform NAME` or
 * `--profile FILE` of the export; without either, the ieee profile's: fp16 2 ULPs, fp32 3,
 * strict zero sign, no flushing), judged as `sl1conf certify` judges (conformance/rules/judge.py).
 *
 * For every case it copies the inputs into static buffers, fills dx1 (and SL1_GUARD more
 * elements before and after it) with the byte 0x5a, calls hp_/fp_smoothl1lossgrad_s/_p per the case's
 * dtype and variant, and judges each element of dx1:
 *   - index < written, on the boundary (the exact x1 - x2 is +beta or -beta; the header lists
 *     these elements, sl1_boundary): no budget (certify's R02): pass only when bit-equal to
 *     the oracle (any NaN for a NaN) or, bit for bit, to one of the acceptable columns below;
 *   - index < written, elsewhere: pass when bit-equal to the oracle, or both NaN (any NaN), or
 *     at most SL1_MAX_ULP units in the last place from the oracle (distance on the ordered
 *     integer line, +0 and -0 0 apart; where the zero sign is strict a result within
 *     SL1_MAX_ULP fails when it or the oracle is a zero and their signs differ: +0 for -0, a
 *     tiny negative for +0, ...), or equal to one of the acceptable columns;
 *   - the acceptable columns (bits, or both NaN): the case's alternatives; the oracle-ftz
 *     column where flushing is accepted; the accepted evaluation models (below);
 *   - index >= written (nothing to compute: length <= 0, core_mask 0, past length) and the
 *     SL1_GUARD elements before dx1 and after the case's n: must still hold the fill pattern
 *     exactly (reported at indices -SL1_GUARD .. -1 and n .. n + SL1_GUARD - 1).
 * It also checks that dy, x1 and x2 are unchanged after the call.
 *
 * What it cannot judge as certify does, and says so in its second output line: results the
 * profile's error model reaches beyond the budget other than the exported columns (an
 * approximate division or reciprocal, flushing at one place only, ...), the lean of the
 * roundings, that an element's bits do not depend on its position or the cores, and that
 * results do not change with the call history. For the full verdict run the same library
 * under `sl1conf certify --impl sim:...` with the bundled harness (docs/vector-format.md).
 *
 * Output: two first lines starting with '#' (the configuration; what is not judged here),
 * then one line per family,
 *     PASS <id> <name>: <elements> elements, worst <k> ulp
 *     FAIL <id> <name>: <bad> of <elements> elements, worst <k> ulp at case <case id> element <i> (got 0x...., expected 0x....)
 * then ALL PASS or FAILED <n> families; main returns 0 or 1. On a PASS line k is the largest
 * distance to the oracle of an element accepted within SL1_MAX_ULP (0 when every element is
 * exact or matches an acceptable column); on a FAIL line it is the distance of the worst
 * failing element, whose place and bits follow ("nan" when exactly one of got and expected
 * is NaN). A family whose call changed an input fails too; its line ends with
 *     ; case <case id> changed input <dy|x1|x2> element <i> (got 0x...., was 0x....)
 *
 * The accepted evaluation models (sl1_model_names: honest orders of evaluation that may
 * stray further from the oracle, e.g. where an intermediate underflows) are acceptable bit
 * for bit; -DSL1_NO_MODELS judges by the oracle, the alternatives and SL1_MAX_ULP alone.
 *
 * Options (-D...), each overriding the header's profile: SL1_MAX_ULP (default
 * SL1_PROFILE_MAX_ULP), SL1_ACCEPT_FTZ or SL1_NO_FTZ (default SL1_PROFILE_ACCEPT_FTZ),
 * SL1_STRICT_ZERO_SIGN or SL1_LAX_ZERO_SIGN (default SL1_PROFILE_STRICT_ZERO_SIGN),
 * SL1_NO_BOUNDARY (judge the boundary like any element: not certify's rule); and
 * SL1_NO_MODELS, SL1_GUARD (elements checked past each case's end, default 16),
 * SL1_SELFTEST_NO_MAIN (no main; call int sl1_selftest(void) yourself), SL1_PRINTF, SL1_FLUSH (called
 * after each case's results under SL1_DUMP; default fflush(stdout); -D'SL1_FLUSH()=' for none), SL1_DUMP
 * (also print every element of dx1 after its call, both guard zones included, as
 * "= <case id> <i> <hex>", then "= <case id> end <inputs changed: dy,x1,x2 or ->", before the
 * family's line: the results file `sl1conf certify --results FILE` judges as certify does).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "smoothl1lossgrad.h"
#include "sl1_vectors.h"

#ifndef SL1_MAX_ULP
#define SL1_MAX_ULP SL1_PROFILE_MAX_ULP
#endif
#if defined(SL1_STRICT_ZERO_SIGN) || (SL1_PROFILE_STRICT_ZERO_SIGN && !defined(SL1_LAX_ZERO_SIGN))
#define SL1_STRICT 1
#else
#define SL1_STRICT 0
#endif
#if defined(SL1_ACCEPT_FTZ) || (SL1_PROFILE_ACCEPT_FTZ && !defined(SL1_NO_FTZ))
#define SL1_FTZ 1
#else
#define SL1_FTZ 0
#endif
#ifdef SL1_NO_BOUNDARY
#define SL1_BOUNDARY_RULE 0
#else
#define SL1_BOUNDARY_RULE 1
#endif
#ifndef SL1_GUARD
#define SL1_GUARD 16
#endif
#ifndef SL1_PRINTF
#define SL1_PRINTF printf
#endif
#ifndef SL1_FLUSH /* after each case's results (-DSL1_DUMP): what was printed survives a crash in the next call */
#define SL1_FLUSH() fflush(stdout)
#endif

#if SL1_VEC_BITS == 16
typedef half sl1_value;
#define SL1_SIGN_MASK 0x8000ul
#define SL1_EXP_MASK 0x7c00ul
#define SL1_FRAC_MASK 0x03fful
#define SL1_HEX_DIGITS 4
#elif SL1_VEC_BITS == 32
typedef float sl1_value;
#define SL1_SIGN_MASK 0x80000000ul
#define SL1_EXP_MASK 0x7f800000ul
#define SL1_FRAC_MASK 0x007ffffful
#define SL1_HEX_DIGITS 8
#else
#error "sl1_vectors.h: SL1_VEC_BITS must be 16 or 32"
#endif

/* The value type and its bit pattern type have one size (memcpy moves bits between them). */
typedef char sl1_check_value_size[sizeof(sl1_value) == sizeof(sl1_bits_t) ? 1 : -1];

#define SL1_DIST_NAN 0xfffffffful /* exactly one side NaN: worse than any distance */

static sl1_value sl1_w_dy[SL1_VEC_BUF];
static sl1_value sl1_w_x1[SL1_VEC_BUF];
static sl1_value sl1_w_x2[SL1_VEC_BUF];
static sl1_value sl1_w_zone[SL1_GUARD + SL1_VEC_BUF + SL1_GUARD]; /* dx1 between two guard zones */
#define sl1_w_dx1 (sl1_w_zone + (SL1_GUARD))

static int sl1_is_nan(unsigned long b)
{
    return (b & SL1_EXP_MASK) == SL1_EXP_MASK && (b & SL1_FRAC_MASK) != 0;
}

static int sl1_is_zero(unsigned long b)
{
    return (b & ~SL1_SIGN_MASK) == 0;
}

/* Bit-equal, or both NaN. */
static int sl1_same(unsigned long a, unsigned long b)
{
    return a == b || (sl1_is_nan(a) && sl1_is_nan(b));
}

/* Units in the last place between two patterns on the ordered line (+0 and -0 are 0 apart);
 * SL1_DIST_NAN when exactly one is NaN, 0 when both are. Fits 32 bits for fp32 (< 0xff000001). */
static unsigned long sl1_ulps(unsigned long a, unsigned long b)
{
    const unsigned long ma = a & ~SL1_SIGN_MASK, mb = b & ~SL1_SIGN_MASK;
    if (sl1_is_nan(a) || sl1_is_nan(b))
        return sl1_is_nan(a) && sl1_is_nan(b) ? 0ul : SL1_DIST_NAN;
    if ((a ^ b) & SL1_SIGN_MASK)
        return ma + mb;
    return ma > mb ? ma - mb : mb - ma;
}

static unsigned long sl1_bits_at(const sl1_value *v, uint32_t i)
{
    sl1_bits_t b;
    memcpy(&b, &v[i], sizeof b);
    return (unsigned long)b;
}

/* One element of dx1 (index i of case c, got its bits; boundary: the exact x1 - x2 is +-beta):
 * 1 when acceptable. *dist is the distance to *want, the value it is reported against (the
 * oracle, or the fill pattern). */
static int sl1_judge(const struct sl1_case *c, uint32_t i, unsigned long got, int boundary,
                     unsigned long *want, unsigned long *dist)
{
    uint32_t k;
    if (i >= c->written) { /* not to be written: the fill pattern, exactly */
        *want = SL1_VEC_FILL;
        *dist = sl1_ulps(got, *want);
        return got == *want;
    }
    *want = sl1_oracle[c->offset + i];
    *dist = sl1_same(got, *want) ? 0ul : sl1_ulps(got, *want);
    if (sl1_same(got, *want))
        return 1;
    if (!(SL1_BOUNDARY_RULE && boundary) && *dist <= (unsigned long)(SL1_MAX_ULP)) { /* no budget on the boundary */
        if (!(SL1_STRICT && (sl1_is_zero(got) || sl1_is_zero(*want)) && ((got ^ *want) & SL1_SIGN_MASK)))
            return 1;
    }
    for (k = 0; k < c->alt_count; k++) {
        if (sl1_same(got, sl1_alternatives[sl1_alt_offsets[c->alt_first + k] + i])) {
            *dist = 0;
            return 1;
        }
    }
    if (SL1_FTZ && sl1_same(got, sl1_oracle_ftz[c->offset + i])) {
        *dist = 0;
        return 1;
    }
#ifndef SL1_NO_MODELS
    for (k = 0; k < SL1_VEC_MODELS; k++) {
        if (sl1_same(got, sl1_models[k * SL1_VEC_ELEMENTS + c->offset + i])) {
            *dist = 0;
            return 1;
        }
    }
#endif
    return 0;
}

struct sl1_tally {
    unsigned long bad, worst_pass, worst_fail;
    const struct sl1_case *fail_case;          /* the worst failing element: */
    long fail_index;                           /* negative: in the guard zone before dx1 */
    unsigned long fail_got, fail_want;
    const struct sl1_case *input_case;         /* the first changed input: */
    const char *input_name;
    uint32_t input_index;
    unsigned long input_got, input_was;
};

static void sl1_call(const struct sl1_case *c)
{
    sl1_value beta;
    const sl1_bits_t beta_bits = c->beta;
    memcpy(&beta, &beta_bits, sizeof beta);
#if SL1_VEC_BITS == 16
    if (c->variant == 's')
        hp_smoothl1lossgrad_s(sl1_w_dy, sl1_w_dx1, sl1_w_x1, sl1_w_x2, (int)c->length, beta, (int)c->core_mask);
    else
        hp_smoothl1lossgrad_p(sl1_w_dy, sl1_w_dx1, sl1_w_x1, sl1_w_x2, (int)c->length, beta);
#else
    if (c->variant == 's')
        fp_smoothl1lossgrad_s(sl1_w_dy, sl1_w_dx1, sl1_w_x1, sl1_w_x2, (int)c->length, beta, (int)c->core_mask);
    else
        fp_smoothl1lossgrad_p(sl1_w_dy, sl1_w_dx1, sl1_w_x1, sl1_w_x2, (int)c->length, beta);
#endif
}

/* 1 when the call changed input `name` (the first change is kept in the tally). */
static int sl1_check_input(struct sl1_tally *t, const struct sl1_case *c, const char *name,
                           const sl1_value *work, const sl1_bits_t *golden)
{
    uint32_t i;
    for (i = 0; i < c->n; i++) {
        const unsigned long got = sl1_bits_at(work, i), was = golden[c->offset + i];
        if (got != was) {
            if (t->input_case)
                return 1;
            t->input_case = c;
            t->input_name = name;
            t->input_index = i;
            t->input_got = got;
            t->input_was = was;
            return 1;
        }
    }
    return 0;
}

/* A failing element (index i of case c; negative: before dx1) into the tally. */
static void sl1_fail(struct sl1_tally *t, const struct sl1_case *c, long i, unsigned long got, unsigned long want,
                     unsigned long dist)
{
    t->bad++;
    if (!t->fail_case || dist > t->worst_fail) {
        t->worst_fail = dist;
        t->fail_case = c;
        t->fail_index = i;
        t->fail_got = got;
        t->fail_want = want;
    }
}

static void sl1_run_case(struct sl1_tally *t, const struct sl1_case *c)
{
    const size_t bytes = (size_t)c->n * sizeof(sl1_bits_t);
    const uint32_t k = (uint32_t)(c - sl1_cases);
    uint32_t i, b = sl1_boundary_first[k];
    const uint32_t b_end = sl1_boundary_first[k + 1];
    memcpy(sl1_w_dy, sl1_dy + c->offset, bytes);
    memcpy(sl1_w_x1, sl1_x1 + c->offset, bytes);
    memcpy(sl1_w_x2, sl1_x2 + c->offset, bytes);
    int changed;
    memset(sl1_w_zone, SL1_VEC_FILL_BYTE, bytes + 2 * (size_t)(SL1_GUARD) * sizeof(sl1_bits_t));
    sl1_call(c);
    for (i = 0; i < (uint32_t)(SL1_GUARD); i++) { /* the guard zone before dx1: the fill, exactly */
        const unsigned long got = sl1_bits_at(sl1_w_zone, i);
        const long at = (long)i - (long)(SL1_GUARD);
#ifdef SL1_DUMP
        SL1_PRINTF("= %s %ld %0*lx\n", c->id, at, SL1_HEX_DIGITS, got);
#endif
        if (got != SL1_VEC_FILL)
            sl1_fail(t, c, at, got, SL1_VEC_FILL, sl1_ulps(got, SL1_VEC_FILL));
    }
    for (i = 0; i < c->n + (uint32_t)(SL1_GUARD); i++) {
        const unsigned long got = sl1_bits_at(sl1_w_dx1, i);
        unsigned long want, dist;
        const int boundary = b != b_end && sl1_boundary[b] == c->offset + i;
        if (boundary)
            b++;
#ifdef SL1_DUMP
        SL1_PRINTF("= %s %lu %0*lx\n", c->id, (unsigned long)i, SL1_HEX_DIGITS, got);
#endif
        if (sl1_judge(c, i, got, boundary, &want, &dist)) {
            if (dist > t->worst_pass)
                t->worst_pass = dist;
            continue;
        }
        sl1_fail(t, c, (long)i, got, want, dist);
    }
    changed = sl1_check_input(t, c, "dy", sl1_w_dy, sl1_dy);
    changed |= sl1_check_input(t, c, "x1", sl1_w_x1, sl1_x1) << 1;
    changed |= sl1_check_input(t, c, "x2", sl1_w_x2, sl1_x2) << 2;
#ifdef SL1_DUMP
    SL1_PRINTF("= %s end %s%s%s%s%s%s\n", c->id, changed & 1 ? "dy" : "", changed & 1 && changed & 6 ? "," : "",
               changed & 2 ? "x1" : "", changed & 2 && changed & 4 ? "," : "", changed & 4 ? "x2" : "",
               changed ? "" : "-");
    SL1_FLUSH();
#else
    (void)changed;
#endif
}

static void sl1_print_ulps(unsigned long d)
{
    if (d == SL1_DIST_NAN)
        SL1_PRINTF("nan");
    else
        SL1_PRINTF("%lu", d);
}

/* Runs every case; prints the report; 0 when every family passes, else 1. */
int sl1_selftest(void)
{
    uint32_t f, k;
    unsigned failed = 0;
    SL1_PRINTF("# sl1_selftest %s: %lu families, %lu cases, %lu elements; profile %s%s: SL1_MAX_ULP %lu, ftz %s, "
               "zero sign %s, boundary %s (%lu elements), guard %lu; vectors %s\n", SL1_VEC_DTYPE, (unsigned long)SL1_VEC_FAMILIES,
               (unsigned long)SL1_VEC_CASES, (unsigned long)SL1_VEC_ELEMENTS, SL1_PROFILE_NAME,
               SL1_PROFILE_GIVEN ? "" : " (defaults)", (unsigned long)(SL1_MAX_ULP),
               SL1_FTZ ? "accepted" : "not accepted", SL1_STRICT ? "strict" : "not strict",
               SL1_BOUNDARY_RULE ? "exact" : "not checked", (unsigned long)SL1_VEC_BOUNDARY,
               (unsigned long)(SL1_GUARD), SL1_VEC_SET);
    SL1_PRINTF("# not judged here as certify judges: results the error model reaches beyond the budget other "
               "than the exported columns, rounding bias, position and core invariance, call history; for the "
               "full verdict run sl1conf certify --impl sim:... with the bundled harness, or judge this program's "
               "-DSL1_DUMP output with sl1conf certify --results FILE\n");
    for (f = 0; f != SL1_VEC_FAMILIES; f++) { /* != : no warning when there are none */
        const struct sl1_family *fam = &sl1_families[f];
        struct sl1_tally t;
        memset(&t, 0, sizeof t);
        for (k = 0; k != SL1_VEC_CASES; k++)
            if (sl1_cases[k].family == fam->id)
                sl1_run_case(&t, &sl1_cases[k]);
        if (!t.bad && !t.input_case) {
            SL1_PRINTF("PASS %d %s: %lu elements, worst %lu ulp\n", fam->id, fam->name,
                       (unsigned long)fam->elements, t.worst_pass);
            continue;
        }
        failed++;
        SL1_PRINTF("FAIL %d %s: %lu of %lu elements, worst ", fam->id, fam->name, t.bad,
                   (unsigned long)fam->elements);
        if (t.bad) {
            sl1_print_ulps(t.worst_fail);
            SL1_PRINTF(" ulp at case %s element %ld (got 0x%0*lx, expected 0x%0*lx)", t.fail_case->id,
                       t.fail_index, SL1_HEX_DIGITS, t.fail_got, SL1_HEX_DIGITS, t.fail_want);
        } else {
            SL1_PRINTF("%lu ulp", t.worst_pass);
        }
        if (t.input_case)
            SL1_PRINTF("; case %s changed input %s element %lu (got 0x%0*lx, was 0x%0*lx)", t.input_case->id,
                       t.input_name, (unsigned long)t.input_index, SL1_HEX_DIGITS, t.input_got,
                       SL1_HEX_DIGITS, t.input_was);
        SL1_PRINTF("\n");
    }
    if (failed) {
        SL1_PRINTF("FAILED %u families\n", failed);
        return 1;
    }
    SL1_PRINTF("ALL PASS\n");
    return 0;
}

#ifndef SL1_SELFTEST_NO_MAIN
int main(void)
{
    return sl1_selftest();
}
#endif

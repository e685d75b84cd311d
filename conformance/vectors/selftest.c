/* sl1_selftest.c: on-target self-test of a SmoothL1LossGrad library against the golden
 * vectors in sl1_vectors.h; see docs/vector-format.md of sl1conf.
 *
 * The same program for every export: `sl1conf vectors export --format c-header` copies it
 * unchanged (from sl1conf/conformance/vectors/selftest.c) beside the sl1_vectors.h it
 * writes; everything that differs from one vector set to another (the dtype, the counts,
 * the tables, what is accepted) comes from that header, whose first line names the sl1conf
 * that wrote it and the command that writes it again.
 *
 * Build it with the library under test and its smoothl1lossgrad.h, for example
 *
 *     cc -std=c11 -O2 -I<folder of smoothl1lossgrad.h> sl1_selftest.c <library> -o sl1_selftest
 *
 * C99 (C11 is fine) plus _Float16 for fp16 sets (GCC >= 12, Clang >= 15, or a toolchain whose
 * smoothl1lossgrad.h defines `half`). It uses no file I/O and no heap: only printf (override
 * with -DSL1_PRINTF=my_printf) and static buffers.
 *
 * Its verdict is the suite's: for every element the header holds what `sl1conf certify` accepts
 * under the export's profile (`--platform NAME` or `--profile FILE`; without either, ieee's),
 * computed at export by the suite's one judge (conformance/rules/acceptance.py): the correctly
 * rounded result, the budget off the boundary, the open-behaviour alternatives and an open
 * input's bounds, and everything the profile's error model reaches (approximate divisions and
 * reciprocals, flushing at any place it allows, the evaluation orders and precisions it lists).
 * The record is an interval sl1_lo .. sl1_hi on the ordered line of the numbers other than zero,
 * flags for NaN and each zero, and further intervals where one is not enough. Certify's verdict
 * per family on this program's printed results (-DSL1_DUMP, `sl1conf certify --results FILE`) is
 * the program's own: tests/test_selftest_gate.py checks it for every library of the self-test zoo.
 *
 * For every case it copies the inputs into static buffers, fills dx1 (and SL1_GUARD more
 * elements before and after it) with the byte 0x5a, calls hp_/fp_smoothl1lossgrad_s/_p per the case's
 * dtype and variant, and checks each element of dx1 by integer comparisons of bit patterns:
 *   - index < written: NaN passes where NaN is accepted (any NaN), a zero where its sign's flag
 *     is set, any other value (infinities included) where its place on the ordered line
 *     (-magnitude for a negative pattern, +magnitude for a positive one) lies in lo .. hi or one
 *     of the element's further intervals;
 *   - index >= written (nothing to compute: length <= 0, core_mask 0, past length) and the
 *     SL1_GUARD elements before dx1 and after the case's n: must still hold the fill pattern
 *     exactly (reported at indices -SL1_GUARD .. -1 and n .. n + SL1_GUARD - 1).
 * It also checks that dy, x1 and x2 are unchanged after the call. A case certify does not call
 * on the profile (a core_mask naming cores it lacks) is called and printed but not judged.
 *
 * What it does not judge (its second output line says so): the lean of the roundings (rounding
 * bias), that an element's bits do not depend on its position or the cores, that results do not
 * change with the call history, reads outside the arrays. `sl1conf certify --results FILE` on this
 * program's -DSL1_DUMP output judges those it can; `certify --impl sim:...` with the bundled
 * harness judges them all.
 *
 * Output: two first lines starting with '#' (the configuration; what is not judged here),
 * then one line per family,
 *     PASS <id> <name>: <elements> elements, worst <k> ulp, <b> beyond the budget
 *     FAIL <id> <name>: <bad> of <elements> elements fail; first: case <case id> element <i> got 0x...,
 *          correctly rounded 0x..., accepted <set>: <why>
 * then ALL PASS or FAILED <n> families; main returns 0 or 1. On a PASS line k is the largest
 * distance of a result from the correctly rounded one (units in the last place on the ordered
 * line; a NaN against a number is no distance and not counted), b how many results were
 * accepted beyond the budget (farther from it, a NaN against a number, or off it on the
 * boundary): results the error model reaches, an alternative, an open input's answer. A FAIL line names the first failing element
 * of the family, its bits, the correctly rounded result, what is accepted there (lo..hi, or "no
 * number"; then ", NaN", ", +0", ", -0" where those are, and how many further intervals) and why:
 *     outside lo..hi                          a number no accepted interval holds
 *     outside lo..hi; on the boundary: no budget (exact or reachable only)
 *     NaN expected                            the result is NaN, a number was given
 *     NaN where a number is expected
 *     a zero of the wrong sign                the other zero is accepted, this one is not
 *     a zero where none is accepted
 *     not to be written (length, core_mask, past length): must keep the fill
 *     written before dx1: must keep the fill
 *     written past the case's elements: must keep the fill
 * A family whose call changed an input fails too; its line ends with
 *     ; case <case id> changed input <dy|x1|x2> element <i> (got 0x...., was 0x....)
 *
 * Options (-D...): SL1_GUARD (elements checked past each case's end, default 16),
 * SL1_SELFTEST_NO_MAIN (no main; call int sl1_selftest(void) yourself), SL1_PRINTF, SL1_FLUSH (called
 * after each case's results under SL1_DUMP; default fflush(stdout); -D'SL1_FLUSH()=' for none), SL1_DUMP
 * (also print every element of dx1 after its call, both guard zones included, as
 * "= <case id> <i> <hex>", then "= <case id> end <inputs changed: dy,x1,x2 or ->", before the
 * family's line: the results file `sl1conf certify --results FILE` judges as certify does).
 * What is accepted is the profile's, fixed at export: to judge by another profile, export again
 * with it (the options that changed the budget, the flushing and the zero sign here are gone).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "smoothl1lossgrad.h"
#include "sl1_vectors.h"

#if defined(SL1_MAX_ULP) || defined(SL1_ACCEPT_FTZ) || defined(SL1_NO_FTZ) || defined(SL1_STRICT_ZERO_SIGN) || \
    defined(SL1_LAX_ZERO_SIGN) || defined(SL1_NO_MODELS) || defined(SL1_NO_BOUNDARY)
#error "sl1_selftest.c: what is accepted is the profile's, computed at export: export again with --platform NAME or --profile FILE instead of -DSL1_MAX_ULP, -DSL1_ACCEPT_FTZ and the like"
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

/* The place of a pattern on the ordered line: -magnitude for a negative one, +magnitude for a
 * positive one (+0 and -0 both 0; consecutive values one apart; NaN past the infinities). */
static long sl1_key(unsigned long b)
{
    const long mag = (long)(b & ~SL1_SIGN_MASK);
    return (b & SL1_SIGN_MASK) ? -mag : mag;
}

/* Units in the last place between two patterns on the ordered line (+0 and -0 are 0 apart);
 * SL1_DIST_NAN when exactly one is NaN, 0 when both are. */
static unsigned long sl1_ulps(unsigned long a, unsigned long b)
{
    const unsigned long ma = a & ~SL1_SIGN_MASK, mb = b & ~SL1_SIGN_MASK;
    if (sl1_is_nan(a) || sl1_is_nan(b))
        return sl1_is_nan(a) && sl1_is_nan(b) ? 0ul : SL1_DIST_NAN;
    if ((a ^ b) & SL1_SIGN_MASK)
        return ma + mb; /* fits 32 bits for fp32 (< 0xff000001) */
    return ma > mb ? ma - mb : mb - ma;
}

static unsigned long sl1_bits_at(const sl1_value *v, uint32_t i)
{
    sl1_bits_t b;
    memcpy(&b, &v[i], sizeof b);
    return (unsigned long)b;
}

static int sl1_in(long k, unsigned long lo, unsigned long hi)
{
    return sl1_key(lo) <= k && k <= sl1_key(hi);
}

/* Why an element fails (0: it passes). */
enum { SL1_PASS, SL1_OUTSIDE, SL1_OUTSIDE_BOUNDARY, SL1_NAN_EXPECTED, SL1_NAN_GOT, SL1_ZERO_SIGN, SL1_ZERO,
       SL1_UNWRITTEN, SL1_BEFORE, SL1_PAST };
static const char *const sl1_why_words[] = {
    "", "outside lo..hi", "outside lo..hi; on the boundary: no budget (exact or reachable only)", "NaN expected",
    "NaN where a number is expected", "a zero of the wrong sign", "a zero where none is accepted",
    "not to be written (length, core_mask, past length): must keep the fill", "written before dx1: must keep the fill",
    "written past the case's elements: must keep the fill"};

/* Element e of the arrays (dx1[i] of a case, i < written), got its bits; *x: the cursor in the
 * further intervals (ascending by element). */
static int sl1_judge(uint32_t e, unsigned long got, uint32_t *x, uint32_t x_end)
{
    const unsigned flags = sl1_accept[e];
    const unsigned long want = sl1_oracle[e];
    uint32_t y;
    long k;
    while (*x < x_end && sl1_extra_at[*x] < e)
        (*x)++;
    if (sl1_is_nan(got))
        return flags & SL1_ACCEPT_NAN ? SL1_PASS : SL1_NAN_GOT;
    if (sl1_is_zero(got)) {
        if (flags & ((got & SL1_SIGN_MASK) ? SL1_ACCEPT_MINUS_ZERO : SL1_ACCEPT_PLUS_ZERO))
            return SL1_PASS;
        return flags & (SL1_ACCEPT_PLUS_ZERO | SL1_ACCEPT_MINUS_ZERO) ? SL1_ZERO_SIGN : SL1_ZERO;
    }
    k = sl1_key(got);
    if (sl1_in(k, sl1_lo[e], sl1_hi[e]))
        return SL1_PASS;
    for (y = *x; y < x_end && sl1_extra_at[y] == e; y++)
        if (sl1_in(k, sl1_extra_lo[y], sl1_extra_hi[y]))
            return SL1_PASS;
    if (sl1_is_nan(want))
        return SL1_NAN_EXPECTED;
    return flags & SL1_ACCEPT_BOUNDARY ? SL1_OUTSIDE_BOUNDARY : SL1_OUTSIDE;
}

struct sl1_tally {
    unsigned long bad, worst, beyond;
    const struct sl1_case *fail_case;          /* the first failing element: */
    long fail_index;                           /* negative: in the guard zone before dx1 */
    unsigned long fail_got;
    int fail_why;
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
static void sl1_fail(struct sl1_tally *t, const struct sl1_case *c, long i, unsigned long got, int why)
{
    t->bad++;
    if (!t->fail_case) {
        t->fail_case = c;
        t->fail_index = i;
        t->fail_got = got;
        t->fail_why = why;
    }
}

static void sl1_run_case(struct sl1_tally *t, const struct sl1_case *c)
{
    const size_t bytes = (size_t)c->n * sizeof(sl1_bits_t);
    const uint32_t k = (uint32_t)(c - sl1_cases);
    uint32_t i, x = sl1_extra_first[k];
    const uint32_t x_end = sl1_extra_first[k + 1];
    struct sl1_tally unjudged; /* what a call certify does not make on the profile did: counted nowhere */
    struct sl1_tally *const into = c->judged ? t : &unjudged;
    int changed;
    memset(&unjudged, 0, sizeof unjudged);
    memcpy(sl1_w_dy, sl1_dy + c->offset, bytes);
    memcpy(sl1_w_x1, sl1_x1 + c->offset, bytes);
    memcpy(sl1_w_x2, sl1_x2 + c->offset, bytes);
    memset(sl1_w_zone, SL1_VEC_FILL_BYTE, bytes + 2 * (size_t)(SL1_GUARD) * sizeof(sl1_bits_t));
    sl1_call(c);
    for (i = 0; i < (uint32_t)(SL1_GUARD); i++) { /* the guard zone before dx1: the fill, exactly */
        const unsigned long got = sl1_bits_at(sl1_w_zone, i);
        const long at = (long)i - (long)(SL1_GUARD);
#ifdef SL1_DUMP
        SL1_PRINTF("= %s %ld %0*lx\n", c->id, at, SL1_HEX_DIGITS, got);
#endif
        if (got != SL1_VEC_FILL)
            sl1_fail(into, c, at, got, SL1_BEFORE);
    }
    for (i = 0; i < c->n + (uint32_t)(SL1_GUARD); i++) {
        const unsigned long got = sl1_bits_at(sl1_w_dx1, i);
        int why;
#ifdef SL1_DUMP
        SL1_PRINTF("= %s %lu %0*lx\n", c->id, (unsigned long)i, SL1_HEX_DIGITS, got);
#endif
        if (i >= c->written) /* nothing to be written here: the fill, exactly */
            why = got == SL1_VEC_FILL ? SL1_PASS : i < c->n ? SL1_UNWRITTEN : SL1_PAST;
        else {
            const unsigned long d = sl1_ulps(got, sl1_oracle[c->offset + i]);
            why = sl1_judge(c->offset + i, got, &x, x_end);
            if (!why && d != SL1_DIST_NAN && d > into->worst)
                into->worst = d;
            if (!why && d && (d > SL1_PROFILE_MAX_ULP || (sl1_accept[c->offset + i] & SL1_ACCEPT_BOUNDARY)))
                into->beyond++;
        }
        if (why)
            sl1_fail(into, c, (long)i, got, why);
    }
    changed = sl1_check_input(into, c, "dy", sl1_w_dy, sl1_dy);
    changed |= sl1_check_input(into, c, "x1", sl1_w_x1, sl1_x1) << 1;
    changed |= sl1_check_input(into, c, "x2", sl1_w_x2, sl1_x2) << 2;
#ifdef SL1_DUMP
    SL1_PRINTF("= %s end %s%s%s%s%s%s\n", c->id, changed & 1 ? "dy" : "", changed & 1 && changed & 6 ? "," : "",
               changed & 2 ? "x1" : "", changed & 2 && changed & 4 ? "," : "", changed & 4 ? "x2" : "",
               changed ? "" : "-");
    SL1_FLUSH();
#else
    (void)changed;
#endif
}

/* What is accepted at the failing element: lo..hi (or no number), NaN, the zeros, further intervals. */
static void sl1_print_accepted(const struct sl1_tally *t)
{
    const struct sl1_case *c = t->fail_case;
    const uint32_t k = (uint32_t)(c - sl1_cases);
    uint32_t e, y, more = 0;
    unsigned flags;
    if (t->fail_index < 0 || (unsigned long)t->fail_index >= (unsigned long)c->written) {
        SL1_PRINTF("accepted 0x%0*lx only", SL1_HEX_DIGITS, (unsigned long)SL1_VEC_FILL);
        return;
    }
    e = c->offset + (uint32_t)t->fail_index;
    flags = sl1_accept[e];
    SL1_PRINTF("correctly rounded 0x%0*lx, accepted ", SL1_HEX_DIGITS, (unsigned long)sl1_oracle[e]);
    if (sl1_key(sl1_lo[e]) <= sl1_key(sl1_hi[e]))
        SL1_PRINTF("0x%0*lx..0x%0*lx", SL1_HEX_DIGITS, (unsigned long)sl1_lo[e], SL1_HEX_DIGITS,
                   (unsigned long)sl1_hi[e]);
    else
        SL1_PRINTF("no number");
    if (flags & SL1_ACCEPT_NAN)
        SL1_PRINTF(", NaN");
    if (flags & SL1_ACCEPT_PLUS_ZERO)
        SL1_PRINTF(", +0");
    if (flags & SL1_ACCEPT_MINUS_ZERO)
        SL1_PRINTF(", -0");
    for (y = sl1_extra_first[k]; y < sl1_extra_first[k + 1]; y++)
        more += sl1_extra_at[y] == e;
    if (more)
        SL1_PRINTF(", and %lu more interval%s", (unsigned long)more, more == 1 ? "" : "s");
}

/* Runs every case; prints the report; 0 when every family passes, else 1. */
int sl1_selftest(void)
{
    uint32_t f, k;
    unsigned failed = 0;
    SL1_PRINTF("# sl1_selftest %s: %lu families, %lu cases, %lu elements; profile %s%s: budget %lu ulp, flushing %s, "
               "zero sign %s; accepted sets by sl1conf's judge (%lu further intervals, %lu boundary elements), "
               "%lu cases not judged; guard %lu; vectors %s\n", SL1_VEC_DTYPE, (unsigned long)SL1_VEC_FAMILIES,
               (unsigned long)SL1_VEC_CASES, (unsigned long)SL1_VEC_ELEMENTS, SL1_PROFILE_NAME,
               SL1_PROFILE_GIVEN ? "" : " (defaults)", (unsigned long)SL1_PROFILE_MAX_ULP,
               SL1_PROFILE_ACCEPT_FTZ ? "accepted" : "not accepted", SL1_PROFILE_STRICT_ZERO_SIGN ? "strict" : "not strict",
               (unsigned long)SL1_VEC_EXTRA, (unsigned long)SL1_VEC_BOUNDARY, (unsigned long)SL1_VEC_NOT_JUDGED,
               (unsigned long)(SL1_GUARD), SL1_VEC_SET);
    SL1_PRINTF("# judged here as certify judges them: every element (R01-R06), the fill (R07, R08), the guard zones "
               "(R10), the inputs (R12); not here: rounding bias, position and core invariance, call history, reads "
               "outside the arrays: judge this program's -DSL1_DUMP output with sl1conf certify --results FILE, or run "
               "sl1conf certify --impl sim:... with the bundled harness\n");
    for (f = 0; f != SL1_VEC_FAMILIES; f++) { /* != : no warning when there are none */
        const struct sl1_family *fam = &sl1_families[f];
        struct sl1_tally t;
        memset(&t, 0, sizeof t);
        for (k = 0; k != SL1_VEC_CASES; k++)
            if (sl1_cases[k].family == fam->id)
                sl1_run_case(&t, &sl1_cases[k]);
        if (!t.bad && !t.input_case) {
            SL1_PRINTF("PASS %d %s: %lu elements, worst %lu ulp, %lu beyond the budget\n", fam->id, fam->name,
                       (unsigned long)fam->elements, t.worst, t.beyond);
            continue;
        }
        failed++;
        SL1_PRINTF("FAIL %d %s: %lu of %lu elements fail", fam->id, fam->name, t.bad, (unsigned long)fam->elements);
        if (t.bad) {
            SL1_PRINTF("; first: case %s element %ld got 0x%0*lx, ", t.fail_case->id, t.fail_index, SL1_HEX_DIGITS,
                       t.fail_got);
            sl1_print_accepted(&t);
            SL1_PRINTF(": %s", sl1_why_words[t.fail_why]);
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

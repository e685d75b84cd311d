/* harness.c: run the SmoothL1LossGrad calls described by a case file, write the results.
 *
 *     harness CASE RESULT
 *
 * CASE is a version 1 case file (one call, "SL1C") or a version 2 batch file (many calls,
 * "SL1B"; one results record per call, flushed before the next call, so a crash or hang
 * leaves the records of the calls before it). Both are documented in
 * docs/simulator-protocol.md. -DSL1_HARNESS_PROTOCOL_1_ONLY builds a version-1-only harness
 * (what older harnesses are; the suite then sends one case per run). This
 * program is portable C99 with <stdint.h> (plus the header's `half` type, only passed
 * through, never computed with); build it with the toolchain of the target and link it with the
 * library under test, e.g.
 *
 *     cc -O2 -std=c11 -I<dir of smoothl1lossgrad.h> harness.c libyours.a -o harness
 *
 * (every flag of the aarch64 builds, under qemu-user: docs/adapters.md, "sim:").
 *
 * Build options:
 *   -DSL1_NO_HALF            no fp16 functions (FT78NE, or any fp32-only library): fp16 cases get
 *                            status 1, and nothing here names an hp_ symbol. Without it such a
 *                            library fails to link: undefined reference to hp_smoothl1lossgrad_s
 *   -DSL1_HARNESS_NO_SHARED  no _s functions: shared-variant cases get status 2
 *   -DSL1_HARNESS_NO_PRIVATE no _p functions: private-variant cases get status 2
 *
 * Exit status: 0 the results file was written (whatever its status fields say),
 * 1 an I/O error (case file unreadable, results file not writable), 2 bad usage or a
 * malformed case file. Every nonzero exit prints one line on stderr. A crash or hang of
 * the library is the runner's to observe: the results file is written only after the
 * call has returned.
 *
 * Memory observations: dx1 sits between two guard zones of GUARD bytes filled with
 * GUARD_BYTE; dy, x1 and x2 each sit between two guard zones of GUARD bytes filled with a
 * signalling NaN (fp32 0x7FA5A5A5, fp16 0x7DA5, element by element); copies of dy, x1, x2
 * are compared after the call; the results file ends with a memory report ("SL1M", u32
 * flags) saying which guard zone or input changed. Reads outside the arrays are not
 * observed: portable C has no guard pages, and a read changes nothing. The signalling NaNs
 * only make a read that reaches a result visible there, as a wrong result.
 */
#include "smoothl1lossgrad.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 24u
#define BATCH_HEADER_BYTES 16u
#define RECORD_BYTES 24u
#define GUARD 64u
#define GUARD_BYTE 0xA5u
#define GUARD_SNAN32 0x7FA5A5A5ul /* a signalling NaN: quiet bit clear, payload nonzero */
#define GUARD_SNAN16 0x7DA5u

/* results status values */
#define STATUS_OK 0u
#define STATUS_NO_DTYPE 1u
#define STATUS_NO_VARIANT 2u
#define STATUS_LENGTH_EXCEEDS_N 3u

/* memory report flags */
#define MEM_BEFORE_DX1 1u
#define MEM_AFTER_DX1 2u
#define MEM_DY_CHANGED 4u
#define MEM_X1_CHANGED 8u
#define MEM_X2_CHANGED 16u
#define MEM_BEFORE_DY 32u
#define MEM_AFTER_DY 64u
#define MEM_BEFORE_X1 128u
#define MEM_AFTER_X1 256u
#define MEM_BEFORE_X2 512u
#define MEM_AFTER_X2 1024u

static const char *prog = "harness";

static int fail(int code, const char *what, const char *arg)
{
    fprintf(stderr, "%s: %s%s%s\n", prog, what, arg ? ": " : "", arg ? arg : "");
    return code;
}

static unsigned long get_u16(const unsigned char *p)
{
    return (unsigned long)p[0] | (unsigned long)p[1] << 8;
}

static unsigned long get_u32(const unsigned char *p)
{
    return (unsigned long)p[0] | (unsigned long)p[1] << 8 | (unsigned long)p[2] << 16 |
           (unsigned long)p[3] << 24;
}

static void put_u16(unsigned char *p, unsigned long v)
{
    p[0] = (unsigned char)(v & 0xFFu);
    p[1] = (unsigned char)(v >> 8 & 0xFFu);
}

static void put_u32(unsigned char *p, unsigned long v)
{
    put_u16(p, v & 0xFFFFu);
    put_u16(p + 2, v >> 16 & 0xFFFFu);
}

/* Little-endian element bits (es = 2 or 4 bytes) to the host's representation. */
static void decode_elements(unsigned char *dst, const unsigned char *src, size_t n, size_t es)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (es == 2) {
            const uint16_t v = (uint16_t)get_u16(src + i * 2u);
            memcpy(dst + i * 2u, &v, 2);
        } else {
            const uint32_t v = (uint32_t)get_u32(src + i * 4u);
            memcpy(dst + i * 4u, &v, 4);
        }
    }
}

/* The host's representation back to little-endian bits. */
static void encode_elements(unsigned char *dst, const unsigned char *src, size_t n, size_t es)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (es == 2) {
            uint16_t v;
            memcpy(&v, src + i * 2u, 2);
            put_u16(dst + i * 2u, v);
        } else {
            uint32_t v;
            memcpy(&v, src + i * 4u, 4);
            put_u32(dst + i * 4u, v);
        }
    }
}

/* A u32 as the two's complement i32 it encodes (no implementation-defined conversion). */
static long to_i32(unsigned long v)
{
    return v >= 0x80000000ul ? -(long)(0xFFFFFFFFul - v) - 1 : (long)v;
}

/* One case's header fields, checked; 0, or the exit code after one line on stderr. */
struct header {
    unsigned dtype, variant;
    long length;
    unsigned long beta_bits, core_mask_bits;
    size_t n, es, bytes;
};

static int parse_header(const unsigned char *h, unsigned long want_version, struct header *c, const char *where)
{
    unsigned long n32;
    unsigned long long expected;
    if (memcmp(h, "SL1C", 4) != 0)
        return fail(2, "malformed case file: no SL1C magic", where);
    if (get_u16(h + 4) != want_version)
        return fail(2, want_version == 1u ? "unsupported case-file version (this harness reads version 1 case files, "
                                            "and version 2 batch files)"
                                          : "malformed batch file: a case record is not version 2", where);
    c->dtype = h[6];
    c->variant = h[7];
    if (c->dtype != 16 && c->dtype != 32)
        return fail(2, "malformed case file: dtype is not 16 or 32", where);
    if (c->variant != 's' && c->variant != 'p')
        return fail(2, "malformed case file: variant is not 's' or 'p'", where);
    c->length = to_i32(get_u32(h + 8));
    n32 = get_u32(h + 12);
    c->beta_bits = get_u32(h + 16);
    c->core_mask_bits = get_u32(h + 20);
    if (c->dtype == 16 && c->beta_bits > 0xFFFFul)
        return fail(2, "malformed case file: fp16 beta has bits above the low 16", where);
    c->es = c->dtype / 8u;
    expected = (unsigned long long)n32 * 4u * c->es;
    if (expected > (unsigned long long)((size_t)-1) / 2u)
        return fail(2, "malformed case file: arrays too large for this machine", where);
    c->n = (size_t)n32;
    c->bytes = c->n * c->es;
    return 0;
}

/* Fill a guard zone of an input (GUARD bytes) with signalling NaNs of element size es. */
static void fill_nan_zone(unsigned char *zone, size_t es)
{
    size_t i;
    for (i = 0; i < GUARD; i += es) {
        if (es == 2) {
            const uint16_t v = (uint16_t)GUARD_SNAN16;
            memcpy(zone + i, &v, 2);
        } else {
            const uint32_t v = (uint32_t)GUARD_SNAN32;
            memcpy(zone + i, &v, 4);
        }
    }
}

/* 1 when a guard zone of an input still holds the signalling NaNs fill_nan_zone wrote. */
static int nan_zone_intact(const unsigned char *zone, size_t es)
{
    unsigned char want[GUARD];
    fill_nan_zone(want, es);
    return memcmp(zone, want, GUARD) == 0;
}

/* Make the call of one case whose four arrays are at ``payload`` (4 * bytes, little-endian):
 * *status, dx1's bits (the host's representation, caller frees *dx1_block) and the memory
 * flags. 0, or the exit code after one line on stderr. */
static int call_case(const struct header *c, const unsigned char *payload, unsigned *status,
                     unsigned char **dx1_block, unsigned long *mem, const char *where)
{
    const size_t n = c->n, es = c->es, bytes = c->bytes;
    unsigned char *dy_block, *x1_block, *x2_block, *dy, *x1, *x2, *block, *dx1, *saved;
    size_t i;
    *status = STATUS_OK;
    *mem = 0;
    dy_block = (unsigned char *)malloc(bytes + 2u * GUARD);
    x1_block = (unsigned char *)malloc(bytes + 2u * GUARD);
    x2_block = (unsigned char *)malloc(bytes + 2u * GUARD);
    block = (unsigned char *)malloc(bytes + 2u * GUARD);
    saved = (unsigned char *)malloc(3u * bytes + 1u);
    if (!dy_block || !x1_block || !x2_block || !block || !saved) {
        free(dy_block); free(x1_block); free(x2_block); free(block); free(saved);
        return fail(2, "case file arrays do not fit in memory", where);
    }
    dy = dy_block + GUARD;
    x1 = x1_block + GUARD;
    x2 = x2_block + GUARD;
    fill_nan_zone(dy_block, es);
    fill_nan_zone(dy + bytes, es);
    fill_nan_zone(x1_block, es);
    fill_nan_zone(x1 + bytes, es);
    fill_nan_zone(x2_block, es);
    fill_nan_zone(x2 + bytes, es);
    dx1 = block + GUARD;
    decode_elements(dy, payload, n, es);
    decode_elements(x1, payload + bytes, n, es);
    decode_elements(x2, payload + 2u * bytes, n, es);
    memset(block, GUARD_BYTE, GUARD);
    decode_elements(dx1, payload + 3u * bytes, n, es);
    memset(dx1 + bytes, GUARD_BYTE, GUARD);
    memcpy(saved, dy, bytes);
    memcpy(saved + bytes, x1, bytes);
    memcpy(saved + 2u * bytes, x2, bytes);

    if (c->length > (long)n) {
        *status = STATUS_LENGTH_EXCEEDS_N;
    } else if (c->dtype == 32) {
        float beta;
        uint32_t bb = (uint32_t)c->beta_bits;
        memcpy(&beta, &bb, sizeof beta);
        if (c->variant == 's') {
#ifndef SL1_HARNESS_NO_SHARED
            fp_smoothl1lossgrad_s((float *)(void *)dy, (float *)(void *)dx1, (float *)(void *)x1,
                                  (float *)(void *)x2, (int)c->length, beta, (int)to_i32(c->core_mask_bits));
#else
            *status = STATUS_NO_VARIANT;
#endif
        } else {
#ifndef SL1_HARNESS_NO_PRIVATE
            fp_smoothl1lossgrad_p((float *)(void *)dy, (float *)(void *)dx1, (float *)(void *)x1,
                                  (float *)(void *)x2, (int)c->length, beta);
#else
            *status = STATUS_NO_VARIANT;
#endif
        }
    } else {
#ifndef SL1_NO_HALF
        half beta;
        uint16_t hb = (uint16_t)c->beta_bits;
        memcpy(&beta, &hb, sizeof beta);
        if (c->variant == 's') {
#ifndef SL1_HARNESS_NO_SHARED
            hp_smoothl1lossgrad_s((half *)(void *)dy, (half *)(void *)dx1, (half *)(void *)x1,
                                  (half *)(void *)x2, (int)c->length, beta, (int)to_i32(c->core_mask_bits));
#else
            *status = STATUS_NO_VARIANT;
#endif
        } else {
#ifndef SL1_HARNESS_NO_PRIVATE
            hp_smoothl1lossgrad_p((half *)(void *)dy, (half *)(void *)dx1, (half *)(void *)x1,
                                  (half *)(void *)x2, (int)c->length, beta);
#else
            *status = STATUS_NO_VARIANT;
#endif
        }
#else
        *status = STATUS_NO_DTYPE;
#endif
    }

    if (*status == STATUS_OK) {
        for (i = 0; i < GUARD; i++) {
            if (block[i] != GUARD_BYTE)
                *mem |= MEM_BEFORE_DX1;
            if (dx1[bytes + i] != GUARD_BYTE)
                *mem |= MEM_AFTER_DX1;
        }
        if (memcmp(saved, dy, bytes) != 0)
            *mem |= MEM_DY_CHANGED;
        if (memcmp(saved + bytes, x1, bytes) != 0)
            *mem |= MEM_X1_CHANGED;
        if (memcmp(saved + 2u * bytes, x2, bytes) != 0)
            *mem |= MEM_X2_CHANGED;
        if (!nan_zone_intact(dy_block, es))
            *mem |= MEM_BEFORE_DY;
        if (!nan_zone_intact(dy + bytes, es))
            *mem |= MEM_AFTER_DY;
        if (!nan_zone_intact(x1_block, es))
            *mem |= MEM_BEFORE_X1;
        if (!nan_zone_intact(x1 + bytes, es))
            *mem |= MEM_AFTER_X1;
        if (!nan_zone_intact(x2_block, es))
            *mem |= MEM_BEFORE_X2;
        if (!nan_zone_intact(x2 + bytes, es))
            *mem |= MEM_AFTER_X2;
    }
    free(dy_block); free(x1_block); free(x2_block); free(saved);
    *dx1_block = block;
    return 0;
}

/* A version 1 results file. */
static int write_results(const char *path, unsigned status, const unsigned char *dx1,
                         size_t n, size_t es, int with_report, unsigned long mem_flags)
{
    const size_t data = status == STATUS_OK ? n * es : 0;
    const size_t total = 12u + data + (with_report ? 8u : 0u);
    unsigned char *buf = (unsigned char *)malloc(total);
    FILE *f;
    int ok;
    if (!buf)
        return fail(1, "out of memory for the results", NULL);
    memcpy(buf, "SL1R", 4);
    put_u16(buf + 4, 1u);
    put_u16(buf + 6, status);
    put_u32(buf + 8, status == STATUS_OK ? (unsigned long)n : 0ul);
    if (data)
        encode_elements(buf + 12, dx1, n, es);
    if (with_report) {
        memcpy(buf + 12 + data, "SL1M", 4);
        put_u32(buf + 16 + data, mem_flags);
    }
    f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return fail(1, "cannot create the results file", path);
    }
    ok = fwrite(buf, 1, total, f) == total;
    ok = (fclose(f) == 0) && ok;
    free(buf);
    if (!ok)
        return fail(1, "cannot write the results file", path);
    return 0;
}

/* One version 2 result record, written and flushed before the next call. */
static int write_record(FILE *f, unsigned long index, unsigned status, const unsigned char *dx1,
                        size_t n, size_t es, unsigned long mem_flags, const char *path)
{
    const size_t data = status == STATUS_OK ? n * es : 0;
    unsigned char *buf = (unsigned char *)malloc(RECORD_BYTES + data + 1u);
    int ok;
    if (!buf)
        return fail(1, "out of memory for the results", NULL);
    memcpy(buf, "SL1R", 4);
    put_u16(buf + 4, 2u);
    put_u16(buf + 6, status);
    put_u32(buf + 8, index);
    put_u32(buf + 12, status == STATUS_OK ? (unsigned long)n : 0ul);
    put_u32(buf + 16, status == STATUS_OK ? 1ul : 0ul);
    put_u32(buf + 20, status == STATUS_OK ? mem_flags : 0ul);
    if (data)
        encode_elements(buf + RECORD_BYTES, dx1, n, es);
    ok = fwrite(buf, 1, RECORD_BYTES + data, f) == RECORD_BYTES + data;
    ok = (fflush(f) == 0) && ok;
    free(buf);
    if (!ok)
        return fail(1, "cannot write the results file", path);
    return 0;
}

static unsigned char *read_file(const char *path, size_t *size, int *code)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t cap = 0, have = 0, got;
    if (!f) {
        *code = fail(1, "cannot open the case file", path);
        return NULL;
    }
    for (;;) {
        if (have == cap) {
            unsigned char *bigger;
            cap = cap ? cap * 2u : 65536u;
            bigger = (unsigned char *)realloc(buf, cap + 1u);
            if (!bigger) {
                free(buf);
                fclose(f);
                *code = fail(2, "case file arrays do not fit in memory", path);
                return NULL;
            }
            buf = bigger;
        }
        got = fread(buf + have, 1, cap - have, f);
        have += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        *code = fail(1, "cannot read the case file", path);
        return NULL;
    }
    fclose(f);
    *size = have;
    return buf;
}

/* Version 2: a batch file of many cases, one results record per case, flushed as it comes. */
static int run_batch(const unsigned char *file, size_t size, const char *case_path, const char *result_path)
{
    unsigned long count, k;
    size_t at = BATCH_HEADER_BYTES;
    FILE *out;
    int rc = 0;
    if (size < BATCH_HEADER_BYTES || get_u16(file + 4) != 2u)
        return fail(2, "malformed batch file: shorter than its 16-byte header, or not version 2", case_path);
    count = get_u32(file + 8);
    out = fopen(result_path, "wb");
    if (!out)
        return fail(1, "cannot create the results file", result_path);
    {
        unsigned char head[BATCH_HEADER_BYTES];
        memcpy(head, "SL1S", 4);
        put_u16(head + 4, 2u);
        put_u16(head + 6, 0u);
        put_u32(head + 8, count);
        put_u32(head + 12, 0ul);
        if (fwrite(head, 1, BATCH_HEADER_BYTES, out) != BATCH_HEADER_BYTES || fflush(out) != 0) {
            fclose(out);
            return fail(1, "cannot write the results file", result_path);
        }
    }
    for (k = 0; k < count && rc == 0; k++) {
        struct header c;
        unsigned status;
        unsigned long mem, record;
        unsigned char *block = NULL;
        if (size - at < 4u + HEADER_BYTES) {
            rc = fail(2, "malformed batch file: truncated before a case record", case_path);
            break;
        }
        record = get_u32(file + at);
        if ((rc = parse_header(file + at + 4u, 2u, &c, case_path)) != 0)
            break;
        if (record != HEADER_BYTES + 4u * c.bytes || size - at - 4u < record) {
            rc = fail(2, "malformed batch file: a record's size does not match its header, or it is truncated",
                      case_path);
            break;
        }
        if ((rc = call_case(&c, file + at + 4u + HEADER_BYTES, &status, &block, &mem, case_path)) != 0)
            break;
        rc = write_record(out, k, status, block + GUARD, c.n, c.es, mem, result_path);
        free(block);
        at += 4u + record;
    }
    if (rc == 0 && at != size)
        rc = fail(2, "malformed batch file: trailing bytes after the last record", case_path);
    if (fclose(out) != 0 && rc == 0)
        rc = fail(1, "cannot write the results file", result_path);
    return rc;
}

int main(int argc, char **argv)
{
    struct header c;
    unsigned status;
    unsigned long mem;
    unsigned char *file, *block = NULL;
    size_t size = 0;
    int rc = 0;

    if (argc > 0 && argv[0] && argv[0][0])
        prog = argv[0];
    if (argc != 3)
        return fail(2, "usage: harness CASE RESULT", NULL);
    file = read_file(argv[1], &size, &rc);
    if (!file)
        return rc;
#ifndef SL1_HARNESS_PROTOCOL_1_ONLY
    if (size >= 4 && memcmp(file, "SL1B", 4) == 0) {
        rc = run_batch(file, size, argv[1], argv[2]);
        free(file);
        return rc;
    }
#endif
    if (size < HEADER_BYTES) {
        free(file);
        return fail(2, "malformed case file: shorter than the 24-byte header", argv[1]);
    }
    if ((rc = parse_header(file, 1u, &c, argv[1])) != 0) {
        free(file);
        return rc;
    }
    if (size - HEADER_BYTES < 4u * c.bytes) {
        free(file);
        return fail(2, "malformed case file: truncated (fewer than 4 * n elements)", argv[1]);
    }
    if (size - HEADER_BYTES > 4u * c.bytes) {
        free(file);
        return fail(2, "malformed case file: trailing bytes after the arrays", argv[1]);
    }
    rc = call_case(&c, file + HEADER_BYTES, &status, &block, &mem, argv[1]);
    free(file);
    if (rc != 0)
        return rc;
    rc = write_results(argv[2], status, block + GUARD, c.n, c.es, status == STATUS_OK, mem);
    free(block);
    return rc;
}

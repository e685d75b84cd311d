/* harness.c: run one SmoothL1LossGrad call described by a case file, write the results.
 *
 *     harness CASE RESULT
 *
 * The case-file protocol (version 1) is documented in docs/simulator-protocol.md. This
 * program is portable C99 with <stdint.h> (plus the header's `half` type, only passed
 * through, never computed with); build it with the toolchain of the target and link it with the
 * library under test, e.g.
 *
 *     cc -O2 -std=c11 -I<dir of smoothl1lossgrad.h> harness.c libyours.a -o harness
 *
 * Build options:
 *   -DSL1_NO_HALF            no fp16 functions (FT78NE): fp16 cases get status 1
 *   -DSL1_HARNESS_NO_SHARED  no _s functions: shared-variant cases get status 2
 *   -DSL1_HARNESS_NO_PRIVATE no _p functions: private-variant cases get status 2
 *
 * Exit status: 0 the results file was written (whatever its status field says),
 * 1 an I/O error (case file unreadable, results file not writable), 2 bad usage or a
 * malformed case file. Every nonzero exit prints one line on stderr. A crash or hang of
 * the library is the runner's to observe: the results file is written only after the
 * call has returned.
 *
 * Memory observations: dx1 sits between two guard zones of GUARD bytes filled with
 * GUARD_BYTE, and copies of dy, x1, x2 are compared after the call; the results file
 * ends with a memory report ("SL1M", u32 flags) saying what changed.
 */
#include "smoothl1lossgrad.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROTOCOL_VERSION 1u
#define HEADER_BYTES 24u
#define GUARD 64u
#define GUARD_BYTE 0xA5u

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
    put_u16(buf + 4, PROTOCOL_VERSION);
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

int main(int argc, char **argv)
{
    unsigned char header[HEADER_BYTES];
    unsigned long version, n32, beta_bits, core_mask_bits, length_bits;
    unsigned dtype, variant, status = STATUS_OK;
    long length;
    size_t n, es, bytes;
    unsigned long long expected;
    unsigned char *payload = NULL, *dy, *x1, *x2, *block, *dx1, *saved;
    unsigned long mem = 0;
    size_t i;
    FILE *f;
    int rc;

    if (argc > 0 && argv[0] && argv[0][0])
        prog = argv[0];
    if (argc != 3)
        return fail(2, "usage: harness CASE RESULT", NULL);

    f = fopen(argv[1], "rb");
    if (!f)
        return fail(1, "cannot open the case file", argv[1]);
    if (fread(header, 1, HEADER_BYTES, f) != HEADER_BYTES) {
        fclose(f);
        return fail(2, "malformed case file: shorter than the 24-byte header", argv[1]);
    }
    if (memcmp(header, "SL1C", 4) != 0) {
        fclose(f);
        return fail(2, "malformed case file: no SL1C magic", argv[1]);
    }
    version = get_u16(header + 4);
    if (version != PROTOCOL_VERSION) {
        fclose(f);
        return fail(2, "unsupported case-file version (this harness reads version 1)", argv[1]);
    }
    dtype = header[6];
    variant = header[7];
    if (dtype != 16 && dtype != 32) {
        fclose(f);
        return fail(2, "malformed case file: dtype is not 16 or 32", argv[1]);
    }
    if (variant != 's' && variant != 'p') {
        fclose(f);
        return fail(2, "malformed case file: variant is not 's' or 'p'", argv[1]);
    }
    length_bits = get_u32(header + 8);
    length = to_i32(length_bits);
    n32 = get_u32(header + 12);
    beta_bits = get_u32(header + 16);
    core_mask_bits = get_u32(header + 20);
    if (dtype == 16 && beta_bits > 0xFFFFul) {
        fclose(f);
        return fail(2, "malformed case file: fp16 beta has bits above the low 16", argv[1]);
    }
    es = dtype / 8u;
    expected = (unsigned long long)n32 * 4u * es;
    if (expected > (unsigned long long)((size_t)-1) / 2u) {
        fclose(f);
        return fail(2, "malformed case file: arrays too large for this machine", argv[1]);
    }
    n = (size_t)n32;
    bytes = n * es;
    {   /* where the file can be measured, check its size before allocating anything */
        long here = ftell(f), end;
        if (here >= 0 && fseek(f, 0L, SEEK_END) == 0 && (end = ftell(f)) >= 0) {
            const unsigned long long have = (unsigned long long)(end - here);
            if (have < expected) {
                fclose(f);
                return fail(2, "malformed case file: truncated (fewer than 4 * n elements)", argv[1]);
            }
            if (have > expected) {
                fclose(f);
                return fail(2, "malformed case file: trailing bytes after the arrays", argv[1]);
            }
        }
        if (here < 0 || fseek(f, here, SEEK_SET) != 0) {
            fclose(f);
            return fail(1, "cannot seek in the case file", argv[1]);
        }
    }
    payload = (unsigned char *)malloc(4u * bytes + 1u);
    if (!payload) {
        fclose(f);
        return fail(2, "case file arrays do not fit in memory", argv[1]);
    }
    if (fread(payload, 1, 4u * bytes, f) != 4u * bytes) {
        free(payload);
        fclose(f);
        return fail(2, "malformed case file: truncated (fewer than 4 * n elements)", argv[1]);
    }
    if (fgetc(f) != EOF) {
        free(payload);
        fclose(f);
        return fail(2, "malformed case file: trailing bytes after the arrays", argv[1]);
    }
    fclose(f);

    /* The arrays as the library sees them; dx1 between guard zones, inputs saved. */
    dy = (unsigned char *)malloc(bytes + es);
    x1 = (unsigned char *)malloc(bytes + es);
    x2 = (unsigned char *)malloc(bytes + es);
    block = (unsigned char *)malloc(bytes + 2u * GUARD);
    saved = (unsigned char *)malloc(3u * bytes + 1u);
    if (!dy || !x1 || !x2 || !block || !saved) {
        free(payload); free(dy); free(x1); free(x2); free(block); free(saved);
        return fail(2, "case file arrays do not fit in memory", argv[1]);
    }
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
    free(payload);

    if (length > (long)n) {
        status = STATUS_LENGTH_EXCEEDS_N;
    } else if (dtype == 32) {
        float beta;
        uint32_t bb = (uint32_t)beta_bits;
        memcpy(&beta, &bb, sizeof beta);
        if (variant == 's') {
#ifndef SL1_HARNESS_NO_SHARED
            fp_smoothl1lossgrad_s((float *)(void *)dy, (float *)(void *)dx1, (float *)(void *)x1,
                                  (float *)(void *)x2, (int)length, beta, (int)to_i32(core_mask_bits));
#else
            status = STATUS_NO_VARIANT;
#endif
        } else {
#ifndef SL1_HARNESS_NO_PRIVATE
            fp_smoothl1lossgrad_p((float *)(void *)dy, (float *)(void *)dx1, (float *)(void *)x1,
                                  (float *)(void *)x2, (int)length, beta);
#else
            status = STATUS_NO_VARIANT;
#endif
        }
    } else {
#ifndef SL1_NO_HALF
        half beta;
        uint16_t hb = (uint16_t)beta_bits;
        memcpy(&beta, &hb, sizeof beta);
        if (variant == 's') {
#ifndef SL1_HARNESS_NO_SHARED
            hp_smoothl1lossgrad_s((half *)(void *)dy, (half *)(void *)dx1, (half *)(void *)x1,
                                  (half *)(void *)x2, (int)length, beta, (int)to_i32(core_mask_bits));
#else
            status = STATUS_NO_VARIANT;
#endif
        } else {
#ifndef SL1_HARNESS_NO_PRIVATE
            hp_smoothl1lossgrad_p((half *)(void *)dy, (half *)(void *)dx1, (half *)(void *)x1,
                                  (half *)(void *)x2, (int)length, beta);
#else
            status = STATUS_NO_VARIANT;
#endif
        }
#else
        status = STATUS_NO_DTYPE;
#endif
    }

    if (status == STATUS_OK) {
        for (i = 0; i < GUARD; i++) {
            if (block[i] != GUARD_BYTE)
                mem |= MEM_BEFORE_DX1;
            if (dx1[bytes + i] != GUARD_BYTE)
                mem |= MEM_AFTER_DX1;
        }
        if (memcmp(saved, dy, bytes) != 0)
            mem |= MEM_DY_CHANGED;
        if (memcmp(saved + bytes, x1, bytes) != 0)
            mem |= MEM_X1_CHANGED;
        if (memcmp(saved + 2u * bytes, x2, bytes) != 0)
            mem |= MEM_X2_CHANGED;
    }
    rc = write_results(argv[2], status, dx1, n, es, status == STATUS_OK, mem);
    free(dy); free(x1); free(x2); free(block); free(saved);
    return rc;
}

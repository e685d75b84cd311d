/* fp16 bit patterns, read without _Float16 arithmetic (the portable build would call libgcc
 * for it): the classes the judge asks about, the ordered line, the exact value. */
#ifndef SL1_HALF_BITS_H
#define SL1_HALF_BITS_H

#include <stdint.h>
#include <string.h>

static inline int h_special(uint16_t b) { return (b & 0x7c00) == 0x7c00; }
static inline int h_nan(uint16_t b) { return (b & 0x7fff) > 0x7c00; }
static inline int h_zero(uint16_t b) { return (b & 0x7fff) == 0; }
static inline int h_subnormal(uint16_t b) { return (b & 0x7c00) == 0 && (b & 0x03ff) != 0; }
/* A subnormal made the zero of its sign (fast_oracle.flush_subnormal_bits), anything else kept. */
static inline uint16_t h_flush(uint16_t b) { return h_subnormal(b) ? (uint16_t)(b & 0x8000) : b; }
static inline int64_t h_ordered(uint16_t b) { /* formats.ordered */
    const int64_t m = b & 0x7fff;
    return (b & 0x8000) ? -m : m;
}
/* A half's value, exactly. */
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

#endif

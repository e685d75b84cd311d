/* zoo.h: what the members of the self-test zoo share (sl1conf selftest, docs/selftest.md).
 *
 * Every member is one small library of the FT DSP API, portable C (no intrinsics, no libm
 * calls: GCC's builtins), built by the user's compiler as a shared library (ctypes:) or into
 * the simulator harness (sim:). Most are fp32 only and built with -DSL1_NO_HALF.
 */
#ifndef ZOO_H
#define ZOO_H
#include <stdint.h>
#include <string.h>
#include "smoothl1lossgrad.h"

/* v flushed to a zero of its sign where it is subnormal (what DAZ/FTZ hardware does) */
static inline float zoo_fz(float v)
{
    return __builtin_fabsf(v) < 1.17549435e-38f ? __builtin_copysignf(0.0f, v) : v;
}

/* the manual's three lines, in the data type, in the order the manual writes them */
static inline float zoo_divmul(float d, float beta, float g)
{
    return d > beta ? g : d < -beta ? -g : d / beta * g;
}

/* how many cores core_mask names (bits 0 to 31), and core k's chunk of n elements split over them
 * (the first n % cores chunks one longer): how the shared variant divides its work */
static inline int zoo_cores(int mask)
{
    return __builtin_popcount((unsigned)mask);
}
static inline int zoo_chunk(int n, int cores, int k)
{
    return n / cores + (k < n % cores);
}

/* the shared variant as the private one on one core: the same work whenever a core is asked for */
#define ZOO_FP32_SHARED_AS_PRIVATE                                                                  \
    void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta,      \
                               int mask)                                                            \
    {                                                                                               \
        if (mask)                                                                                   \
            fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta);                                        \
    }

#define ZOO_FP16_SHARED_AS_PRIVATE                                                                  \
    void hp_smoothl1lossgrad_s(half *dy, half *dx1, half *x1, half *x2, int n, half beta, int mask) \
    {                                                                                               \
        if (mask)                                                                                   \
            hp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta);                                        \
    }

#endif

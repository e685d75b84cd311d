/* smoothl1lossgrad.h: the SmoothL1LossGrad C API of the FT DSP library, as documented
 * (see the suite's docs and spec: dy first, then the output dx1, then x1, x2).
 *
 *   diff = x1[i] - x2[i]
 *   dx1[i] =  dy[i]                 if diff >  beta
 *            -dy[i]                 if diff < -beta
 *             diff / beta * dy[i]   otherwise
 *
 * The _s (shared-storage) functions split the work across the cores named by
 * core_mask; the _p (private-storage) functions run on one core.
 *
 * `half` is the IEEE binary16 type. With GCC or Clang it is _Float16; a toolchain
 * with another 16-bit type may define SL1_HALF_TYPE to it before including this
 * header, and one without any may define SL1_NO_HALF to drop the hp_ functions.
 */
#ifndef SMOOTHL1LOSSGRAD_H
#define SMOOTHL1LOSSGRAD_H

#ifdef __cplusplus
extern "C" {
#endif

void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2,
                           int length, float beta, int core_mask);
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2,
                           int length, float beta);

#ifndef SL1_NO_HALF
#ifdef SL1_HALF_TYPE
typedef SL1_HALF_TYPE half;
#elif defined(__GNUC__)
__extension__ typedef _Float16 half;
#else
typedef _Float16 half;
#endif

void hp_smoothl1lossgrad_s(half *dy, half *dx1, half *x1, half *x2,
                           int length, half beta, int core_mask);
void hp_smoothl1lossgrad_p(half *dy, half *dx1, half *x1, half *x2,
                           int length, half beta);
#endif /* SL1_NO_HALF */

#ifdef __cplusplus
}
#endif

#endif /* SMOOTHL1LOSSGRAD_H */

/* honest on mt7004: fp16 natively in half, every step rounded to half and flushed where subnormal,
 * inputs read as zero where subnormal (a half FPU with DAZ and FTZ) */
#include "zoo.h"
static half fz16(half v)
{
    float f = v;
    return __builtin_fabsf(f) < 6.103515625e-05f ? (half)__builtin_copysignf(0.0f, f) : v;
}
void hp_smoothl1lossgrad_p(half *dy, half *dx1, half *x1, half *x2, int n, half beta)
{
    half b = fz16(beta);
    for (int i = 0; i < n; i++) {
        half a = fz16(x1[i]), c = fz16(x2[i]), g = fz16(dy[i]);
        half d = fz16(a - c);
        if (d > b)
            dx1[i] = g;
        else if (d < -b)
            dx1[i] = -g;
        else {
            half q = fz16(d / b);
            dx1[i] = fz16(q * g);
        }
    }
}
ZOO_FP16_SHARED_AS_PRIVATE
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
ZOO_FP32_SHARED_AS_PRIVATE

/* defect: fp16 results computed in float, then truncated (not rounded) to half where normal: within
 * an ULP, matching no model, and every inexact result leans toward zero */
#include "zoo.h"
static half trunc16(float f)
{
    uint32_t u, a;
    memcpy(&u, &f, 4);
    a = u & 0x7fffffffu;
    if (a < 0x38800000u || a >= 0x477fe000u)
        return (half)f;
    uint16_t h = (uint16_t)(((u >> 16) & 0x8000u) | (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu));
    half r;
    memcpy(&r, &h, 2);
    return r;
}
void hp_smoothl1lossgrad_p(half *dy, half *dx1, half *x1, half *x2, int n, half beta)
{
    float b = beta;
    for (int i = 0; i < n; i++) {
        float d = (float)x1[i] - (float)x2[i];
        dx1[i] = d > b ? dy[i] : d < -b ? -dy[i] : trunc16(d / b * (float)dy[i]);
    }
}
ZOO_FP16_SHARED_AS_PRIVATE
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
ZOO_FP32_SHARED_AS_PRIVATE

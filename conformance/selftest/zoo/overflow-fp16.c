/* defect: fp16 product first, in half: diff * dy overflows to infinity where the exact result is
 * finite */
#include "zoo.h"
void hp_smoothl1lossgrad_p(half *dy, half *dx1, half *x1, half *x2, int n, half beta)
{
    for (int i = 0; i < n; i++) {
        half d = x1[i] - x2[i];
        half p = d * dy[i];
        dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : p / beta;
    }
}
ZOO_FP16_SHARED_AS_PRIVATE
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
ZOO_FP32_SHARED_AS_PRIVATE

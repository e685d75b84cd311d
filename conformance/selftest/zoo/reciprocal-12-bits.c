/* defect: a reciprocal table of 12 bits, never refined (diff * r * dy with r good to 12 bits) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    float r = 1.0f / beta;
    uint32_t u;
    memcpy(&u, &r, 4);
    u &= ~0x7ffu;
    memcpy(&r, &u, 4);
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i];
        dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d * r * dy[i];
    }
}
ZOO_FP32_SHARED_AS_PRIVATE

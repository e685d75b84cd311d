/* defect: every 8th element (an 8-lane vector unit's last lane) takes another order, so an element's bits
 * depend on where it sits in the call */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    float r = 1.0f / beta;
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i];
        dx1[i] = i % 8 != 7 ? zoo_divmul(d, beta, dy[i]) : d > beta ? dy[i] : d < -beta ? -dy[i] : d * r * dy[i];
    }
}
ZOO_FP32_SHARED_AS_PRIVATE

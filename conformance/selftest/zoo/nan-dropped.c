/* defect: a NaN difference gives 0 (a min/max clamp that drops NaN) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i];
        dx1[i] = d != d ? 0.0f : zoo_divmul(d, beta, dy[i]);
    }
}
ZOO_FP32_SHARED_AS_PRIVATE

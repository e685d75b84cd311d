/* defect: every zero result is +0 (the sign IEEE 754 gives, -0 included, is lost) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++) {
        float r = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
        dx1[i] = r == 0.0f ? 0.0f : r;
    }
}
ZOO_FP32_SHARED_AS_PRIVATE

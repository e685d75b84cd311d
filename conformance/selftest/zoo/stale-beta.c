/* defect: keeps state between calls: a software pipeline loads beta one call late for the first
 * element, which is computed with the previous call's beta; a call's bits depend on the call
 * before it */
#include "zoo.h"
static float previous_beta = 1.0f;
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], i == 0 ? previous_beta : beta, dy[i]);
    previous_beta = beta;
}
ZOO_FP32_SHARED_AS_PRIVATE

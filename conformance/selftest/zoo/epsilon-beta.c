/* defect: beta nudged by 1e-6 "to avoid dividing by zero" */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    float b = beta + 1e-6f;
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], b, dy[i]);
}
ZOO_FP32_SHARED_AS_PRIVATE

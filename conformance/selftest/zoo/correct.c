/* honest: the manual's lines in fp32, the reference against which every defect is one change */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
ZOO_FP32_SHARED_AS_PRIVATE

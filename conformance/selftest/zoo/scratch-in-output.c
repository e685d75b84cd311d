/* defect: uses dx1 as scratch for the differences, then reads dy: wrong when dx1 is dy (in place) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = x1[i] - x2[i];
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(dx1[i], beta, dy[i]);
}
ZOO_FP32_SHARED_AS_PRIVATE

/* defect: writes the element before dx1 (an off-by-one pointer in a reverse loop) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = n - 1; i >= 0; i--)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
    if (n > 0)
        ((volatile float *)dx1)[-1] = 1.0f;
}
ZOO_FP32_SHARED_AS_PRIVATE

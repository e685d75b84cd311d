/* defect: a call with length 0 or negative writes one element (a do-while loop) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    int i = 0;
    do
        ((volatile float *)dx1)[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
    while (++i < n);
}
ZOO_FP32_SHARED_AS_PRIVATE

/* defect: exactly at diff = -beta the result is +dy (a sign slip on the boundary's own line) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i];
        dx1[i] = d == -beta ? dy[i] : zoo_divmul(d, beta, dy[i]);
    }
}
ZOO_FP32_SHARED_AS_PRIVATE

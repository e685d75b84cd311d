/* defect: the middle line as (diff * dy) / beta in float: diff * dy overflows to infinity where the
 * exact result is finite (x1 - x2 = 1e30, dy = 1e10, beta = 2e30: exact 5e9, this gives inf). An
 * order the ieee profile allows for its rounding, whose overflow it does not accept (issue 40) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i];
        float p = d * dy[i];
        dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : p / beta;
    }
}
ZOO_FP32_SHARED_AS_PRIVATE

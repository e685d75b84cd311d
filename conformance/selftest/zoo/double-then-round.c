/* honest: the whole formula in double, rounded once to float */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++) {
        double d = (double)x1[i] - (double)x2[i], b = beta;
        dx1[i] = (float)(d > b ? (double)dy[i] : d < -b ? -(double)dy[i] : d / b * dy[i]);
    }
}
ZOO_FP32_SHARED_AS_PRIVATE

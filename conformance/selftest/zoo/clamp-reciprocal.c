/* honest: Ascend CANN's order, clamp(diff, -beta, beta) * (1 / beta) * dy in the data type; the
 * open inputs (beta <= 0 or infinite) by the manual's lines */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    float r = 1.0f / beta;
    int open = !(beta > 0) || __builtin_isinf(beta);
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i];
        if (open) {
            dx1[i] = zoo_divmul(d, beta, dy[i]);
            continue;
        }
        float t = d > beta ? beta : d < -beta ? -beta : d;
        float p = t * r;
        dx1[i] = p * dy[i];
    }
}
ZOO_FP32_SHARED_AS_PRIVATE

/* defect: the shared variant on more than one core takes another order (diff * (1 / beta) * dy), so
 * the bits depend on core_mask and differ from the private variant's */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{
    if (!mask)
        return;
    if (!(mask & (mask - 1))) {
        fp_smoothl1lossgrad_p(dy, dx1, x1, x2, n, beta);
        return;
    }
    float r = 1.0f / beta;
    for (int i = 0; i < n; i++) {
        float d = x1[i] - x2[i];
        dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d * r * dy[i];
    }
}

/* honest on DSP profiles: DAZ and FTZ in software, consistently (inputs read as zero where
 * subnormal, every result flushed) */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    float b = zoo_fz(beta);
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_fz(zoo_divmul(zoo_fz(x1[i]) - zoo_fz(x2[i]), b, zoo_fz(dy[i])));
}
ZOO_FP32_SHARED_AS_PRIVATE

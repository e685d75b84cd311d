/* defect: a vector body of 8 elements and a scalar tail for the rest, and the tail forgets dy's sign */
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    int body = n > 0 ? n - n % 8 : 0;
    for (int i = 0; i < body; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
    for (int i = body; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, __builtin_fabsf(dy[i]));
}
ZOO_FP32_SHARED_AS_PRIVATE

/* honest: talks on stdout and stderr on every call (a debug build left in) */
#include <stdio.h>
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    printf("smoothl1: %d elements\n", n);
    fprintf(stderr, "smoothl1: beta %g\n", (double)beta);
    fflush(0);
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
ZOO_FP32_SHARED_AS_PRIVATE

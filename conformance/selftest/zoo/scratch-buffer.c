/* honest: copies the inputs into a heap buffer, computes there and copies the results out (a DMA
 * into local memory and back, as a DSP library does) */
#include <stdlib.h>
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    if (n <= 0)
        return;
    float *local = malloc(3 * (size_t)n * sizeof *local);
    if (!local) {
        for (int i = 0; i < n; i++)
            dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
        return;
    }
    memcpy(local, dy, (size_t)n * 4);
    memcpy(local + n, x1, (size_t)n * 4);
    memcpy(local + 2 * (size_t)n, x2, (size_t)n * 4);
    for (int i = 0; i < n; i++)
        local[i] = zoo_divmul(local[n + i] - local[2 * n + i], beta, local[i]);
    memcpy(dx1, local, (size_t)n * 4);
    free(local);
}
ZOO_FP32_SHARED_AS_PRIVATE

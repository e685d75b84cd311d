/* honest: takes its time, 2 ms a call (a slow board, a cold cache) */
#define _POSIX_C_SOURCE 199309L
#include <time.h>
#include "zoo.h"
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, 0);
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
ZOO_FP32_SHARED_AS_PRIVATE

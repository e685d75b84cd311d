/* defect: the shared variant returns before its last core's thread has written dx1 (a missing
 * barrier: the thread writes 20 ms after the return) */
#define _POSIX_C_SOURCE 199309L
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "zoo.h"
struct job { float *dy, *dx1, *x1, *x2; int n; float beta; int late; };
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
static void *run(void *p)
{
    struct job *j = p;
    if (j->late) {
        struct timespec pause = {0, 20000000};
        nanosleep(&pause, 0);
    }
    fp_smoothl1lossgrad_p(j->dy, j->dx1, j->x1, j->x2, j->n, j->beta);
    free(j);
    return 0;
}
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{
    pthread_t threads[32];
    int cores = zoo_cores(mask), start = 0;
    if (n <= 0 || !cores)
        return;
    for (int k = 0; k < cores; k++) {
        struct job *j = malloc(sizeof *j); /* the late thread outlives this frame: it frees its own */
        if (!j)
            return;
        *j = (struct job){dy + start, dx1 + start, x1 + start, x2 + start, zoo_chunk(n, cores, k), beta,
                          cores > 1 && k == cores - 1};
        start += j->n;
        pthread_create(&threads[k], 0, run, j);
        if (j->late)
            pthread_detach(threads[k]);
    }
    for (int k = 0; k < cores - (cores > 1); k++)
        pthread_join(threads[k], 0);
}

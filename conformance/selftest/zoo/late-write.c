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
    if (j->late)
        free(j);
    return 0;
}
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{
    pthread_t threads[32];
    struct job jobs[32];
    int cores = 0, start = 0, k = 0;
    for (int c = 0; c < 32; c++)
        cores += (unsigned)mask >> c & 1;
    if (n <= 0 || !cores)
        return;
    for (int c = 0; c < 32; c++)
        if ((unsigned)mask >> c & 1) {
            int len = n / cores + (k < n % cores);
            jobs[k] = (struct job){dy + start, dx1 + start, x1 + start, x2 + start, len, beta,
                                   cores > 1 && k == cores - 1};
            struct job *j = &jobs[k];
            if (j->late) {
                j = malloc(sizeof *j);
                *j = jobs[k];
            }
            pthread_create(&threads[k], 0, run, j);
            start += len;
            k++;
        }
    for (int c = 0; c < k; c++)
        if (jobs[c].late)
            pthread_detach(threads[c]);
        else
            pthread_join(threads[c], 0);
}

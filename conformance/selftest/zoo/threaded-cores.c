/* honest: the shared variant's cores as real POSIX threads, one per core of the mask, each over its
 * own chunk, all joined before the return */
#include <pthread.h>
#include "zoo.h"
struct job { float *dy, *dx1, *x1, *x2; int n; float beta; };
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n; i++)
        dx1[i] = zoo_divmul(x1[i] - x2[i], beta, dy[i]);
}
static void *run(void *p)
{
    struct job *j = p;
    fp_smoothl1lossgrad_p(j->dy, j->dx1, j->x1, j->x2, j->n, j->beta);
    return 0;
}
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{
    struct job jobs[32];
    pthread_t threads[32];
    int cores = zoo_cores(mask), start = 0;
    if (n <= 0 || !cores)
        return;
    for (int k = 0; k < cores; start += jobs[k].n, k++) {
        jobs[k] = (struct job){dy + start, dx1 + start, x1 + start, x2 + start, zoo_chunk(n, cores, k), beta};
        if (pthread_create(&threads[k], 0, run, &jobs[k]) != 0)
            run(&jobs[k]), threads[k] = 0;
    }
    for (int k = 0; k < cores; k++)
        if (threads[k])
            pthread_join(threads[k], 0);
}

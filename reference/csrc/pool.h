/* A persistent worker pool for the kernel's loops (pthreads; docs/kernel.md).
 *
 * sl1_pool_run(fn, ctx, n, tasks, threads, aligned) splits [0, n) into `tasks`
 * contiguous ranges and calls fn(ctx, start, stop) once for each, on the
 * calling thread and up to threads - 1 pool workers, which take the ranges in
 * any order; it returns when every range is done. Ranges: aligned == 0 splits
 * as sl1conf.reference.cores.core_chunks does (the first n % tasks ranges one
 * element longer); aligned != 0 puts every boundary but the last on a multiple
 * of 64 elements (whole vectors; for callers free to choose the split).
 *
 * Workers are started on first use, spin briefly after each job, then sleep on
 * a condition variable. A forked child starts its own (checked by getpid()).
 * A call made while another thread's call holds the pool runs all its ranges
 * on the calling thread. Neither changes any result: each range is computed
 * on its own. */
#ifndef SL1_POOL_H
#define SL1_POOL_H

#include <stddef.h>

#define SL1_POOL_MAX_THREADS 64
#define SL1_POOL_MAX_TASKS 4096

typedef void (*sl1_range_fn)(void *ctx, ptrdiff_t start, ptrdiff_t stop);

void sl1_pool_run(sl1_range_fn fn, void *ctx, ptrdiff_t n, int tasks, int threads, int aligned);

/* Workers started in this process (for tests). */
int sl1_pool_workers(void);

#endif

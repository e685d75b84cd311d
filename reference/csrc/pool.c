/* The kernel's persistent worker pool; pool.h says what it does, docs/kernel.md why.
 *
 * One job at a time, published in one 64-bit word: generation (24 bits),
 * helpers wanted (8), ranges (16), next range to take (16). Every taker (the
 * caller and the helpers) takes a range with a compare-and-swap on that word,
 * so a worker that wakes late, after the job is done and another published,
 * can never take a range of a job it did not see: its swap fails on the
 * generation. The caller waits only for the ranges, never for a late worker,
 * and takes any range no worker has taken yet. (The generation wraps after
 * 2^24 jobs: a swap could only succeed wrongly for a worker that stalled
 * between one load and its swap through 16 million jobs.)
 *
 * Waiting: spin (with pause) for SPIN_NS, then sleep on a condition variable;
 * whoever could make a sleeper's condition true takes the mutex and wakes it
 * (sleepers count themselves under the mutex before checking once more). A
 * worker that finds itself on the CPU its last caller ran on moves off it (its
 * affinity becomes the process's CPUs at the pool's start less that one), or
 * sleeps where it cannot: on a machine whose other CPUs are busy the scheduler
 * puts both on one CPU (and puts a woken worker back beside its waker), where
 * a worker only takes time from its caller. Measured on 2 busy CPUs: 2 threads
 * no faster than 1 without this, 1.5-1.8x with it (fp16, 2^16-2^18 elements). */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define SPIN_NS 200000 /* 0.2 ms: longer than the gap between back-to-back calls */

#define GEN(w) ((uint32_t)((w) >> 40))
#define HELPERS(w) ((int)(((w) >> 32) & 0xff))
#define TASKS(w) ((int)(((w) >> 16) & 0xffff))
#define NEXT(w) ((int)((w) & 0xffff))

static struct {
    pid_t pid;                  /* the process whose workers these are; 0: none */
    int workers;                /* started in this process */
    atomic_int busy;            /* a call holds the pool */
    _Atomic uint64_t word;      /* the job: see above */
    atomic_int done;            /* ranges finished in this job */
    atomic_int sleepers;        /* workers asleep on wake */
    atomic_int caller_asleep;   /* the caller sleeps on finished */
    atomic_int caller_cpu;      /* where the last caller published its job */
#ifdef __linux__
    cpu_set_t cpus;             /* the process's CPUs when the pool started */
#endif
    /* The job's payload, written before its word is published and read only by
     * a taker that won a range of it (the caller is then still waiting). */
    sl1_range_fn fn;
    void *ctx;
    ptrdiff_t n;
    int aligned;
    pthread_mutex_t lock;
    pthread_cond_t wake, finished;
} P;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline int this_cpu(void) { /* -1 where unknown (never equal to caller_cpu's -2) */
#ifdef __linux__
    return sched_getcpu();
#else
    return -1;
#endif
}

/* Move the calling worker off `cpu` (to the CPUs the process had when the pool
 * started, less that one); returns 0 where it cannot. */
static int move_off(int cpu) {
#ifdef __linux__
    cpu_set_t mask = P.cpus;
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask) || CPU_COUNT(&mask) < 2)
        return 0;
    CPU_CLR(cpu, &mask);
    return pthread_setaffinity_np(pthread_self(), sizeof mask, &mask) == 0;
#else
    (void)cpu;
    return 0;
#endif
}

static inline int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static ptrdiff_t range_start(ptrdiff_t n, int tasks, int k, int aligned) {
    if (k >= tasks)
        return n;
    if (aligned)
        return (ptrdiff_t)((n / 64) * k / tasks) * 64;
    const ptrdiff_t per = n / tasks, extra = n % tasks;
    return per * k + (k < extra ? k : extra);
}

/* Take and run ranges of the job whose word is w (generation gen) until none is left. */
static void take_ranges(uint64_t w, uint32_t gen) {
    for (;;) {
        if (GEN(w) != gen || NEXT(w) >= TASKS(w))
            return;
        if (!atomic_compare_exchange_weak(&P.word, &w, w + 1))
            continue; /* w now holds the current word */
        const int k = NEXT(w), tasks = TASKS(w);
        P.fn(P.ctx, range_start(P.n, tasks, k, P.aligned), range_start(P.n, tasks, k + 1, P.aligned));
        if (atomic_fetch_add(&P.done, 1) + 1 == tasks && atomic_load(&P.caller_asleep)) {
            pthread_mutex_lock(&P.lock);
            pthread_cond_broadcast(&P.finished);
            pthread_mutex_unlock(&P.lock);
        }
        w = atomic_load(&P.word);
    }
}

static void *worker(void *arg) {
    const uintptr_t id = (uintptr_t)arg >> 24;
    uint32_t seen = (uint32_t)((uintptr_t)arg & 0xffffff);
    for (;;) {
        uint64_t w = atomic_load(&P.word);
        if (GEN(w) == seen) {
            const int64_t until = now_ns() + SPIN_NS;
            for (int i = 0; GEN(w = atomic_load(&P.word)) == seen; i++) {
                cpu_relax();
                if ((i & 63) == 63) {
                    if (now_ns() > until)
                        break;
                    if (this_cpu() == atomic_load(&P.caller_cpu) && !move_off(atomic_load(&P.caller_cpu)))
                        break;
                }
            }
        }
        if (GEN(w) == seen) {
            pthread_mutex_lock(&P.lock);
            atomic_fetch_add(&P.sleepers, 1);
            while (GEN(w = atomic_load(&P.word)) == seen)
                pthread_cond_wait(&P.wake, &P.lock);
            atomic_fetch_sub(&P.sleepers, 1);
            pthread_mutex_unlock(&P.lock);
        }
        seen = GEN(w);
        if ((int)id <= HELPERS(w))
            take_ranges(w, seen);
    }
    return NULL;
}

static void forked_child(void) { P.pid = 0; }

/* A fresh pool: in a new process (after fork the parent's workers do not
 * exist here, and the mutex may have been held by one of them). getpid() is
 * the check; the fork handler also covers a child whose pid happens to be
 * that of the process that last had workers. */
static void reset(pid_t pid) {
    static int handler;
    if (!handler)
        handler = pthread_atfork(NULL, NULL, forked_child) == 0;
    pthread_mutex_init(&P.lock, NULL);
    pthread_cond_init(&P.wake, NULL);
    pthread_cond_init(&P.finished, NULL);
    atomic_store(&P.word, 0);
    atomic_store(&P.done, 0);
    atomic_store(&P.sleepers, 0);
    atomic_store(&P.caller_asleep, 0);
    atomic_store(&P.caller_cpu, -2);
#ifdef __linux__
    if (sched_getaffinity(0, sizeof P.cpus, &P.cpus) != 0)
        CPU_ZERO(&P.cpus);
#endif
    atomic_store(&P.busy, 0);
    P.workers = 0;
    P.pid = pid;
}

/* At least `want` workers (fewer if threads cannot be made); returns how many there are. */
static int ensure_workers(int want) {
    if (want > SL1_POOL_MAX_THREADS - 1)
        want = SL1_POOL_MAX_THREADS - 1;
    if (P.workers >= want)
        return P.workers;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* signals go to the interpreter's threads */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    const uint32_t gen = GEN(atomic_load(&P.word));
    while (P.workers < want) {
        pthread_t t;
        const uintptr_t arg = ((uintptr_t)(P.workers + 1) << 24) | gen;
        if (pthread_create(&t, &attr, worker, (void *)arg) != 0)
            break;
        P.workers++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return P.workers;
}

int sl1_pool_workers(void) { return P.pid == getpid() ? P.workers : 0; }

void sl1_pool_run(sl1_range_fn fn, void *ctx, ptrdiff_t n, int tasks, int threads, int aligned) {
    if (tasks > SL1_POOL_MAX_TASKS)
        tasks = SL1_POOL_MAX_TASKS;
    if (threads > tasks)
        threads = tasks;
    int helpers = threads - 1;
    if (helpers > 0) {
        const pid_t pid = getpid();
        if (P.pid != pid)
            reset(pid);
        if (atomic_exchange(&P.busy, 1))
            helpers = 0; /* another thread's call has the pool */
        else if ((helpers = ensure_workers(helpers)) == 0)
            atomic_store(&P.busy, 0);
    }
    if (helpers <= 0) {
        for (int k = 0; k < tasks; k++)
            fn(ctx, range_start(n, tasks, k, aligned), range_start(n, tasks, k + 1, aligned));
        return;
    }
    if (helpers > threads - 1)
        helpers = threads - 1;
    P.fn = fn;
    P.ctx = ctx;
    P.n = n;
    P.aligned = aligned;
    atomic_store(&P.done, 0);
    const uint32_t gen = (GEN(atomic_load(&P.word)) + 1) & 0xffffff;
    const uint64_t w = ((uint64_t)gen << 40) | ((uint64_t)helpers << 32) | ((uint64_t)tasks << 16);
    const int cpu = this_cpu();
    atomic_store(&P.caller_cpu, cpu < 0 ? -2 : cpu);
    atomic_store(&P.word, w);
    if (atomic_load(&P.sleepers)) {
        pthread_mutex_lock(&P.lock);
        pthread_cond_broadcast(&P.wake);
        pthread_mutex_unlock(&P.lock);
    }
    take_ranges(w, gen);
    if (atomic_load(&P.done) < tasks) {
        const int64_t until = now_ns() + SPIN_NS;
        for (int i = 0; atomic_load(&P.done) < tasks; i++) {
            cpu_relax();
            if ((i & 63) == 63 && now_ns() > until)
                break;
        }
        if (atomic_load(&P.done) < tasks) {
            pthread_mutex_lock(&P.lock);
            atomic_store(&P.caller_asleep, 1);
            while (atomic_load(&P.done) < tasks)
                pthread_cond_wait(&P.finished, &P.lock);
            atomic_store(&P.caller_asleep, 0);
            pthread_mutex_unlock(&P.lock);
        }
    }
    atomic_store(&P.busy, 0);
}

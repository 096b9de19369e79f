// SPDX-License-Identifier: Apache-2.0
/* The worker pool (workers.h). One mutex guards the task counter: a run hands out tasks one at a time to whichever
 * thread asks, the caller included, so a worker the OS wakes late (a busy machine) costs nothing but its share, and
 * the caller returns as soon as every task is done, without waiting for idle workers to wake. A worker out of tasks,
 * and the caller waiting for the last ones, first watch for a while (SPIN_NS) before sleeping: a forward pass starts
 * its next split within microseconds to a few hundred (a layer's serial part, a CPU layer between two KPU layers),
 * sooner than a sleeping thread is woken (tens of microseconds in a virtual machine). The watch is timed, not counted:
 * a pause instruction takes 10 ns on one x86 and 40 on the next. */
#if defined(OKPU_HAVE_PTHREADS) && defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity: the processors this process may use, not all the machine has */
#endif
#if defined(OKPU_HAVE_PTHREADS) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(__APPLE__)
#define _POSIX_C_SOURCE 200809L /* (macOS hides _SC_NPROCESSORS_ONLN under it; its headers need none) */
#endif

#include "workers.h"

#include <string.h>

#include "alloc.h"
#include "error.h"

#ifdef OKPU_HAVE_PTHREADS
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif
#endif

#ifdef OKPU_HAVE_PTHREADS
/* generation, quit and finished are written under the lock and also read without it while watching: atomically. */
#if defined(__GNUC__) || defined(__clang__)
#define SPIN_NS 300000L /* 0.3 ms; libgomp's default spin (OMP_WAIT_POLICY unset) is of the same order */
#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#if defined(__x86_64__) || defined(__i386__)
#define RELAX() __builtin_ia32_pause()
#else
#define RELAX() ((void)0)
#endif
#else
#define SPIN_NS 0L /* no atomics: sleep at once */
#define LOAD(p) (*(p))
#define STORE(p, v) (*(p) = (v))
#define RELAX() ((void)0)
#endif

/* Part of a watch: sixteen pauses (the clock costs more than one), then whether SPIN_NS have passed since *start
 * (-1: the watch's first call, which sets it). A clock that cannot be read ends the watch. */
static int watch_over(long long *start)
{
    struct timespec t;
    long long ns;
    int i;

    for (i = 0; i < 16; i++)
        RELAX();
    if (SPIN_NS <= 0 || clock_gettime(CLOCK_MONOTONIC, &t) != 0)
        return 1;
    ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
    if (*start < 0)
        *start = ns;
    return ns - *start >= SPIN_NS;
}

typedef struct worker_arg {
    okpu_workers *pool;
    int index;
} worker_arg;
#endif

struct okpu_workers {
    int count;
    okpu_allocator allocator; /* copy of the caller's (the pool frees itself with it) */
    int has_allocator;
#ifdef OKPU_HAVE_PTHREADS
    pthread_mutex_t lock;
    pthread_cond_t start; /* a new run (generation) or quit */
    pthread_cond_t done;  /* the last task of a run finished */
    unsigned long generation;
    int quit;
    int threads; /* threads started (count - 1 once create succeeded) */
    pid_t pid;   /* the process the threads belong to */
    okpu_task_fn fn;
    void *ctx;
    uint32_t n_tasks, next, finished;
    pthread_t thread[OKPU_WORKERS_MAX];
    worker_arg arg[OKPU_WORKERS_MAX];
#endif
};

int okpu_workers_default_count(void)
{
#ifdef OKPU_HAVE_PTHREADS
    long n = 0;
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
#ifdef _SC_NPROCESSORS_ONLN
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    return n < 1 ? 1 : n > OKPU_WORKERS_MAX ? OKPU_WORKERS_MAX : (int)n;
#else
    return 1;
#endif
}

int okpu_workers_count(const okpu_workers *w)
{
    return w ? w->count : 1;
}

static void serial_run(uint32_t n_tasks, okpu_task_fn fn, void *ctx)
{
    uint32_t t;
    for (t = 0; t < n_tasks; t++)
        fn(ctx, 0, t);
}

#ifdef OKPU_HAVE_PTHREADS
/* Take tasks until none is left; called and returns with the lock held. */
static void take_tasks(okpu_workers *w, int index)
{
    while (w->next < w->n_tasks) {
        const uint32_t task = w->next++;
        okpu_task_fn fn = w->fn;
        void *ctx = w->ctx;
        pthread_mutex_unlock(&w->lock);
        fn(ctx, index, task);
        pthread_mutex_lock(&w->lock);
        STORE(&w->finished, w->finished + 1);
        if (w->finished == w->n_tasks)
            pthread_cond_signal(&w->done);
    }
}

static void *worker_main(void *p)
{
    worker_arg *arg = p;
    okpu_workers *w = arg->pool;
    unsigned long seen = 0; /* a thread that starts late joins the run under way, if it still has tasks */
    long long start;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        if (!w->quit && w->generation == seen) {
            pthread_mutex_unlock(&w->lock);
            start = -1;
            while (LOAD(&w->generation) == seen && !LOAD(&w->quit) && !watch_over(&start))
                ;
            pthread_mutex_lock(&w->lock);
        }
        while (!w->quit && w->generation == seen)
            pthread_cond_wait(&w->start, &w->lock);
        if (w->quit)
            break;
        seen = w->generation;
        take_tasks(w, arg->index);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Stop and join the threads started so far (create's failure path and destroy). */
static void stop_threads(okpu_workers *w)
{
    int i;
    pthread_mutex_lock(&w->lock);
    STORE(&w->quit, 1);
    pthread_cond_broadcast(&w->start);
    pthread_mutex_unlock(&w->lock);
    for (i = 0; i < w->threads; i++)
        pthread_join(w->thread[i], NULL);
    w->threads = 0;
}
#endif

static void pool_free(okpu_workers *w)
{
    okpu_allocator copy = w->allocator;
    okpu_free(w->has_allocator ? &copy : NULL, w, sizeof *w);
}

okpu_workers *okpu_workers_create(int count, const okpu_allocator *alloc, okpu_error *err)
{
    okpu_workers *w;

    if (count == 0)
        count = okpu_workers_default_count();
    if (count < 1 || count > OKPU_WORKERS_MAX) {
        okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "threads=%d: expected 0 (the processors available) or 1..%d", count,
                  OKPU_WORKERS_MAX);
        return NULL;
    }
#ifndef OKPU_HAVE_PTHREADS
    count = 1; /* a serial build: the caller is the one worker */
#endif
    w = okpu_alloc(alloc, sizeof *w);
    if (!w) {
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "no memory for the worker pool (%lu bytes)", (unsigned long)sizeof *w);
        return NULL;
    }
    w->count = count;
    if (alloc) {
        w->allocator = *alloc;
        w->has_allocator = 1;
    }
#ifdef OKPU_HAVE_PTHREADS
    w->pid = getpid();
    if (count > 1) {
        int i, rc = 0;
        if (pthread_mutex_init(&w->lock, NULL) != 0 || pthread_cond_init(&w->start, NULL) != 0 ||
            pthread_cond_init(&w->done, NULL) != 0) {
            /* (never on Linux: these only fail for lack of a resource glibc does not need) */
            pool_free(w);
            okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "cannot set up the worker pool's lock: use threads=1");
            return NULL;
        }
        for (i = 0; i + 1 < count; i++) {
            w->arg[i].pool = w;
            w->arg[i].index = i + 1;
            if ((rc = pthread_create(&w->thread[i], NULL, worker_main, &w->arg[i])) != 0)
                break;
            w->threads++;
        }
        if (rc != 0) {
            stop_threads(w);
            pthread_cond_destroy(&w->done);
            pthread_cond_destroy(&w->start);
            pthread_mutex_destroy(&w->lock);
            pool_free(w);
            okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1,
                      "cannot start worker thread %d of %d (pthread_create error %d): use fewer threads", i + 2,
                      count, rc);
            return NULL;
        }
    }
#endif
    return w;
}

void okpu_workers_run(okpu_workers *w, uint32_t n_tasks, okpu_task_fn fn, void *ctx)
{
#ifdef OKPU_HAVE_PTHREADS
    /* One task, a pool of one, or a forked child (its pool's threads stayed in the parent): the caller alone. */
    if (w && w->count > 1 && n_tasks > 1 && getpid() == w->pid) {
        pthread_mutex_lock(&w->lock);
        w->fn = fn;
        w->ctx = ctx;
        w->n_tasks = n_tasks;
        w->next = 0;
        STORE(&w->finished, 0u);
        STORE(&w->generation, w->generation + 1);
        pthread_cond_broadcast(&w->start);
        take_tasks(w, 0);
        if (w->finished < n_tasks) {
            long long start = -1;
            pthread_mutex_unlock(&w->lock);
            while (LOAD(&w->finished) < n_tasks && !watch_over(&start))
                ;
            pthread_mutex_lock(&w->lock);
        }
        while (w->finished < n_tasks)
            pthread_cond_wait(&w->done, &w->lock);
        pthread_mutex_unlock(&w->lock);
        return;
    }
#else
    (void)w;
#endif
    serial_run(n_tasks, fn, ctx);
}

void okpu_workers_destroy(okpu_workers *w)
{
    if (!w)
        return;
#ifdef OKPU_HAVE_PTHREADS
    if (w->count > 1 && getpid() == w->pid) { /* a forked child has neither the threads nor a usable lock */
        stop_threads(w);
        pthread_cond_destroy(&w->done);
        pthread_cond_destroy(&w->start);
        pthread_mutex_destroy(&w->lock);
    }
#endif
    pool_free(w);
}

// SPDX-License-Identifier: Apache-2.0
/* The worker pool (workers.h). A run hands out tasks 0..n-1 through one atomic ticket word (the run's generation
 * and the range of tasks not yet taken), so taking a task is one atomic add, with no lock: a worker that finds the lock
 * held would sleep in the kernel, and a sleeping thread wakes tens of microseconds later in a virtual machine, longer
 * than many layers' tasks. Tasks go to whichever thread asks, the caller included, so a worker the OS wakes late (a
 * busy machine) costs nothing but its share, and the caller returns as soon as every task is done, without waiting
 * for idle workers. A worker out of tasks, and the caller waiting for the last ones, first watch for a while
 * (SPIN_NS) before sleeping on a condition variable: a forward pass starts its next split within microseconds to a
 * few hundred (a layer's serial part, a CPU layer between two KPU layers). The watch is timed, not counted: a pause
 * instruction takes 10 ns on one x86 and 40 on the next; it checks the condition after every pause. The lock guards
 * only the sleeping and the waking. */
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

/* Threads need the compiler's atomics (GCC and clang have them); a build without runs every pool on the caller. */
#if defined(OKPU_HAVE_PTHREADS) && !defined(__GNUC__) && !defined(__clang__)
#undef OKPU_HAVE_PTHREADS
#endif

#ifdef OKPU_HAVE_PTHREADS
#define SPIN_NS 300000L /* 0.3 ms; libgomp's default spin (OMP_WAIT_POLICY unset) is of the same order */
/* Sequentially consistent: the sleep and wake paths below rely on a store then a load on each side being seen in
 * one order by both threads (a sleeper registers then checks for work; a waker publishes work then checks for
 * sleepers). */
#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define FETCH_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#if defined(__x86_64__) || defined(__i386__)
#define RELAX() __builtin_ia32_pause()
#else
#define RELAX() ((void)0)
#endif

/* The ticket: generation (16 bits) | end (24) | front (24). The tasks not yet taken are [front, end - BACK_BIAS):
 * the caller takes from the front (one add), the other workers from the back (one subtract), so with two threads
 * each keeps to its end of the range, layer after layer: a depthwise layer's channel then mostly lies in the cache
 * of the processor that wrote it in the layer before. Each thread's last add or subtract finds the range empty and
 * it stops taking, so front passes end - BACK_BIAS, and end falls below BACK_BIAS, by at most the thread count:
 * neither carries into the next field for a run of at most TASKS_MAX tasks. */
#define BACK_BIAS ((uint64_t)OKPU_WORKERS_MAX)
#define TICKET_FRONT(v) ((uint32_t)(v)&0xffffffu)
#define TICKET_BACK(v) ((int64_t)(((v) >> 24) & 0xffffffu) - (int64_t)BACK_BIAS) /* one past the last task left */
#define TICKET_GEN(v) ((uint32_t)((v) >> 48))
#define TASKS_MAX (0xffffffu - 2u * OKPU_WORKERS_MAX)

/* A watch: a spin on a condition that ends SPIN_NS after it started. Each step is one pause, so the watcher sees the
 * condition change within a pause (about 25 ns on the EPYC the README measures on): a watch of sixteen pauses a step
 * noticed each hand-out and each join some 200 ns late, 84 of each in a ULFFD pass. The clock, which costs about a
 * pause, is read every sixteenth step; one that cannot be read ends the watch. */
typedef struct watch {
    long long start; /* -1 until the first reading */
    unsigned steps;
} watch;

static void watch_start(watch *wt)
{
    wt->start = -1;
    wt->steps = 0;
}

static int watch_over(watch *wt)
{
    struct timespec t;
    long long ns;

    RELAX();
    if (wt->steps++ % 16u != 0u)
        return 0;
    if (SPIN_NS <= 0 || clock_gettime(CLOCK_MONOTONIC, &t) != 0)
        return 1;
    ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
    if (wt->start < 0)
        wt->start = ns;
    return ns - wt->start >= SPIN_NS;
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
    uint64_t ticket;      /* see TICKET_*: written by the caller to start a run, taken from by every thread */
    uint32_t n_tasks;     /* the run's task count: stable while any of its tasks is unfinished */
    int quit;
    int sleepers;        /* workers asleep on `start` or about to be */
    int caller_sleeps;   /* the caller is asleep on `done` or about to be */
    int threads; /* threads started (count - 1 once create succeeded) */
    pid_t pid;   /* the process the threads belong to */
    okpu_task_fn fn;     /* the run's task and context: stable while any of its tasks is unfinished */
    void *ctx;
    uint32_t finished;   /* the run's tasks done */
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
/* Take tasks of the current run until none is left (the caller from the front, the others from the back); returns
 * the generation of the run that had none. A task taken belongs to the run its ticket names, whose fn, ctx and
 * n_tasks cannot change before that task is finished. */
static uint32_t take_tasks(okpu_workers *w, int index)
{
    for (;;) {
        const uint64_t v = index == 0 ? FETCH_ADD(&w->ticket, 1u) : FETCH_ADD(&w->ticket, (uint64_t)-((int64_t)1 << 24));
        uint32_t task, n;
        if ((int64_t)TICKET_FRONT(v) >= TICKET_BACK(v))
            return TICKET_GEN(v);
        task = index == 0 ? TICKET_FRONT(v) : (uint32_t)(TICKET_BACK(v) - 1);
        n = w->n_tasks; /* (read before the task is done: once every task is, the caller may start the next run) */
        w->fn(w->ctx, index, task);
        if (ADD(&w->finished, 1u) == n && LOAD(&w->caller_sleeps)) {
            pthread_mutex_lock(&w->lock);
            pthread_cond_signal(&w->done);
            pthread_mutex_unlock(&w->lock);
        }
    }
}

static void *worker_main(void *p)
{
    worker_arg *arg = p;
    okpu_workers *w = arg->pool;
    uint32_t seen = 0; /* a thread that starts late joins the run under way, if it still has tasks */
    watch wt;

    for (;;) {
        watch_start(&wt);
        while (TICKET_GEN(LOAD(&w->ticket)) == seen && !LOAD(&w->quit) && !watch_over(&wt))
            ;
        if (TICKET_GEN(LOAD(&w->ticket)) == seen && !LOAD(&w->quit)) {
            pthread_mutex_lock(&w->lock);
            STORE(&w->sleepers, w->sleepers + 1);
            while (TICKET_GEN(LOAD(&w->ticket)) == seen && !LOAD(&w->quit))
                pthread_cond_wait(&w->start, &w->lock);
            STORE(&w->sleepers, w->sleepers - 1);
            pthread_mutex_unlock(&w->lock);
        }
        if (LOAD(&w->quit))
            return NULL;
        seen = take_tasks(w, arg->index);
    }
}

/* Stop and join the threads started so far (create's failure path and destroy). */
static void stop_threads(okpu_workers *w)
{
    int i;
    STORE(&w->quit, 1);
    pthread_mutex_lock(&w->lock);
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
    memset(w, 0, sizeof *w);
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
    if (w && w->count > 1 && n_tasks > 1 && n_tasks <= TASKS_MAX && getpid() == w->pid) {
        const uint64_t gen = (TICKET_GEN(LOAD(&w->ticket)) + 1u) & 0xffffu; /* (only the caller changes it) */
        watch wt;
        w->fn = fn;
        w->ctx = ctx;
        w->n_tasks = n_tasks;
        STORE(&w->finished, 0u);
        STORE(&w->ticket, gen << 48 | ((uint64_t)n_tasks + BACK_BIAS) << 24);
        if (LOAD(&w->sleepers)) {
            pthread_mutex_lock(&w->lock);
            pthread_cond_broadcast(&w->start);
            pthread_mutex_unlock(&w->lock);
        }
        take_tasks(w, 0);
        watch_start(&wt);
        while (LOAD(&w->finished) < n_tasks && !watch_over(&wt))
            ;
        if (LOAD(&w->finished) < n_tasks) {
            pthread_mutex_lock(&w->lock);
            STORE(&w->caller_sleeps, 1);
            while (LOAD(&w->finished) < n_tasks)
                pthread_cond_wait(&w->done, &w->lock);
            STORE(&w->caller_sleeps, 0);
            pthread_mutex_unlock(&w->lock);
        }
        return;
    }
#else
    (void)w;
#endif
    serial_run(n_tasks, fn, ctx);
}

void okpu_workers_wake(okpu_workers *w)
{
#ifdef OKPU_HAVE_PTHREADS
    /* A run of no tasks: a new generation whose range is empty, which a woken worker finds so before it watches. */
    if (w && w->count > 1 && getpid() == w->pid && LOAD(&w->sleepers)) {
        const uint64_t gen = (TICKET_GEN(LOAD(&w->ticket)) + 1u) & 0xffffu;
        STORE(&w->ticket, gen << 48 | BACK_BIAS << 24);
        pthread_mutex_lock(&w->lock);
        pthread_cond_broadcast(&w->start);
        pthread_mutex_unlock(&w->lock);
    }
#else
    (void)w;
#endif
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

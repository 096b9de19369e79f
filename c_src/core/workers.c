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

/* A worker's task time, on a cache line of its own: each thread adds to its counter after every timed task, and a
 * counter sharing a line with another thread's, or with the clock's fields that every task reads, sent that line
 * between the processors at each task (the pad puts 56 bytes between a counter and the fields before it). */
typedef struct task_time {
    unsigned char apart[64 - sizeof(uint64_t)];
    uint64_t ns;
} task_time;

struct okpu_workers {
    int count;
    okpu_allocator allocator; /* copy of the caller's (the pool frees itself with it) */
    int has_allocator;
    /* Task timing (okpu_workers_time_tasks): set by the caller between runs, read by whoever runs a task; task_ns[i]
     * is written only by the thread running as worker i, before that task counts as finished. */
    okpu_clock_fn task_clock;
    void *task_clock_ctx;
    int caller_only; /* okpu_workers_caller_only: every run on the caller */
    task_time task_ns[OKPU_WORKERS_MAX];
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
    unsigned forks; /* fork_count when they were started */
    okpu_task_fn fn;     /* the run's task and context: stable while any of its tasks is unfinished */
    void *ctx;
    uint32_t finished;   /* the run's tasks done */
    pthread_t thread[OKPU_WORKERS_MAX];
    worker_arg arg[OKPU_WORKERS_MAX];
#endif
};

#ifdef OKPU_HAVE_PTHREADS
/* ---- Forks ----
 * A forked child has none of its parent's threads, and perhaps a lock one of them held: its copy of a pool runs every
 * task on the caller. getpid() told the two apart, but it is a system call, made at each of some fifty hand-outs of a
 * ULFFD pass; a handler registered with pthread_atfork counts the forks instead, and getpid() stays where the handler
 * could not be registered. */
static unsigned fork_count;  /* written only by a child, before it can have a second thread */
static int forks_counted;    /* the handler is registered (set once, under pthread_once) */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void count_fork(void)
{
    fork_count++;
}

static void watch_forks(void)
{
    forks_counted = pthread_atfork(NULL, NULL, count_fork) == 0;
}

/* Is this the process whose threads the pool started? */
static int in_owner(const okpu_workers *w)
{
    return forks_counted ? w->forks == fork_count : getpid() == w->pid;
}
#endif

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

/* One task as worker `index`, timed when the pool times its tasks (w NULL: a pool-less serial run, untimed). */
static void run_task(okpu_workers *w, okpu_task_fn fn, void *ctx, int index, uint32_t task)
{
    const okpu_clock_fn now = w ? w->task_clock : NULL;
    uint64_t t0;

    if (!now) {
        fn(ctx, index, task);
        return;
    }
    t0 = now(w->task_clock_ctx);
    fn(ctx, index, task);
    w->task_ns[index].ns += now(w->task_clock_ctx) - t0;
}

static void serial_run(okpu_workers *w, uint32_t n_tasks, okpu_task_fn fn, void *ctx)
{
    uint32_t t;
    for (t = 0; t < n_tasks; t++)
        run_task(w, fn, ctx, 0, t);
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
        run_task(w, w->fn, w->ctx, index, task);
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
    (void)pthread_once(&fork_once, watch_forks);
    w->forks = fork_count;
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
    if (w && w->count > 1 && !w->caller_only && n_tasks > 1 && n_tasks <= TASKS_MAX && in_owner(w)) {
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
    serial_run(w, n_tasks, fn, ctx);
}

void okpu_workers_time_tasks(okpu_workers *w, okpu_clock_fn now, void *clock_ctx)
{
    if (!w)
        return;
    w->task_clock = now;
    w->task_clock_ctx = clock_ctx;
    if (now)
        memset(w->task_ns, 0, sizeof w->task_ns);
}

void okpu_workers_caller_only(okpu_workers *w, int on)
{
    if (w)
        w->caller_only = on != 0;
}

uint64_t okpu_workers_task_ns(const okpu_workers *w)
{
    uint64_t sum = 0;
    int i;

    if (!w)
        return 0;
    for (i = 0; i < w->count; i++)
        sum += w->task_ns[i].ns;
    return sum;
}

void okpu_workers_wake(okpu_workers *w)
{
#ifdef OKPU_HAVE_PTHREADS
    /* A run of no tasks: a new generation whose range is empty, which a woken worker finds so before it watches. */
    if (w && w->count > 1 && !w->caller_only && in_owner(w) && LOAD(&w->sleepers)) {
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

uint32_t okpu_workers_taper(uint32_t n, uint32_t quantum, int workers, uint32_t max_runs, uint32_t *cut)
{
    /* (the back runs' starts are collected in cut's tail, from max_runs down, then moved after the front ones) */
    uint32_t lo = 0, hi, runs = 0, backs = 0, d, i;

    if (n == 0 || quantum == 0 || workers < 1 || workers > OKPU_WORKERS_MAX || max_runs == 0)
        return 0;
    if (workers == 1) {
        cut[0] = 0;
        cut[1] = n;
        return 1;
    }
    d = 2u * (uint32_t)workers;
    hi = n / quantum + (n % quantum != 0);
    while (lo < hi) {
        const uint32_t left = hi - lo, c = left / d + (left % d != 0);
        if (runs + backs + (left > 1u ? 2u : 1u) > max_runs)
            return 0;
        cut[runs++] = lo * quantum;
        if (2u * c >= left) { /* the middle: one run, or two halves */
            if (left > 1u)
                cut[max_runs - backs++] = lo + left / 2u + left % 2u;
            break;
        }
        lo += c;
        hi -= c;
        cut[max_runs - backs++] = hi;
    }
    for (i = 0; i < backs; i++)
        cut[runs + i] = cut[max_runs - backs + 1u + i] * quantum;
    cut[runs + backs] = n;
    return runs + backs;
}

void okpu_workers_destroy(okpu_workers *w)
{
    if (!w)
        return;
#ifdef OKPU_HAVE_PTHREADS
    if (w->count > 1 && in_owner(w)) { /* a forked child has neither the threads nor a usable lock */
        stop_threads(w);
        pthread_cond_destroy(&w->done);
        pthread_cond_destroy(&w->start);
        pthread_mutex_destroy(&w->lock);
    }
#endif
    pool_free(w);
}

#ifdef OKPU_HAVE_PTHREADS
#define ROUND_TRIPS 2000    /* per trial: 0.2 ms near, 0.8 ms far */
#define ROUND_TRIALS 7      /* the best one: a trial the host interrupts reads high */
#define ROUND_GIVE_UP_NS 1000000000LL

static long long now_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) != 0)
        return -1;
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The ball: the caller makes it odd, the other thread returns it even; -1 sends the other thread home. A compare
 * and swap, so a return cannot overwrite the -1. */
typedef struct court {
    long ball;
    int second_cpu; /* -1: not pinned */
} court;

static void *return_ball(void *p)
{
    court *c = (court *)p;
    long v;
#if defined(__linux__) && defined(CPU_SET)
    if (c->second_cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(c->second_cpu, &one);
        (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    }
#endif
    while ((v = LOAD(&c->ball)) >= 0) {
        if (v & 1)
            (void)__atomic_compare_exchange_n(&c->ball, &v, v + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        else
            RELAX();
    }
    return NULL;
}
#endif

long okpu_workers_round_trip_ns(void)
{
#ifdef OKPU_HAVE_PTHREADS
    court c;
    pthread_t other;
    long long best = -1, start, t0;
    long i, k = 0;
    int trial, pinned = 0;
#if defined(__linux__) && defined(CPU_SET)
    cpu_set_t saved, one;
    int cpu, first_cpu = -1;
#endif

    c.ball = 0;
    c.second_cpu = -1;
    if (okpu_workers_default_count() < 2)
        return -1;
#if defined(__linux__) && defined(CPU_SET)
    if (pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0) {
        for (cpu = 0; cpu < CPU_SETSIZE && c.second_cpu < 0; cpu++)
            if (CPU_ISSET(cpu, &saved)) {
                if (first_cpu < 0)
                    first_cpu = cpu;
                else
                    c.second_cpu = cpu;
            }
        if (c.second_cpu >= 0) {
            CPU_ZERO(&one);
            CPU_SET(first_cpu, &one);
            pinned = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
        }
        if (!pinned)
            c.second_cpu = -1;
    }
#endif
    if (pthread_create(&other, NULL, return_ball, &c) == 0) {
        start = now_ns();
        for (trial = 0; trial < ROUND_TRIALS && start >= 0; trial++) {
            t0 = now_ns();
            for (i = 0; i < ROUND_TRIPS; i++, k++) {
                unsigned spins = 0;
                STORE(&c.ball, 2 * k + 1);
                while (LOAD(&c.ball) != 2 * k + 2)
                    if (++spins % 4096u == 0u && now_ns() - start > ROUND_GIVE_UP_NS)
                        break;
                if (LOAD(&c.ball) != 2 * k + 2)
                    break;
            }
            if (i < ROUND_TRIPS) {
                best = -1; /* the other thread did not answer: no figure */
                break;
            }
            t0 = (now_ns() - t0) / ROUND_TRIPS;
            if (best < 0 || t0 < best)
                best = t0;
        }
        STORE(&c.ball, -1L);
        pthread_join(other, NULL);
    }
#if defined(__linux__) && defined(CPU_SET)
    if (pinned)
        (void)pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
#endif
    return (long)best;
#else
    return -1;
#endif
}


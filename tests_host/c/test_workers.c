// SPDX-License-Identifier: Apache-2.0
/* The worker pool (c_src/core/workers.c) and the threaded emulator: every task runs once, on more than one thread
 * when the build has threads, a forked child still runs; timed tasks are each read twice on the clock; real models
 * give the same outputs and KPU RAM for 1, 2 and 3 threads (with every layer split one channel per task too), on the
 * fast and the reference paths, and a profiled run's task times fit inside its layer times; a forward pass allocates
 * nothing and the memory report counts each worker's buffers. */
#ifdef __linux__
#define _GNU_SOURCE /* sched_setaffinity and CPU_SET (round trip), and what follows */
#else
#define _POSIX_C_SOURCE 200809L /* setenv, fork, nanosleep */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef OKPU_HAVE_PTHREADS
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#endif
#if defined(OKPU_HAVE_PTHREADS) && defined(__linux__)
#include <sched.h>
#endif

#include "counting_heap.h"
#include "ctest.h"
#include "model_run.h"

#include "../../c_src/core/workers.h"

#define MAX_TASKS 4096

typedef struct tally {
    int runs[MAX_TASKS];   /* how often each task ran */
    int worker[MAX_TASKS]; /* who ran it */
    int count;             /* the pool's workers */
    volatile int others;   /* tasks run by a worker other than the caller (volatile: read while workers write) */
    int spin;              /* task 0 waits (up to a few seconds) until another worker has run a task */
    int nap_ms;            /* task 0 sleeps this long first: time enough for another worker to take tasks */
} tally;

#ifdef OKPU_HAVE_PTHREADS
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
#define TALLY_LOCK() pthread_mutex_lock(&tally_lock)
#define TALLY_UNLOCK() pthread_mutex_unlock(&tally_lock)
#else
#define TALLY_LOCK() ((void)0)
#define TALLY_UNLOCK() ((void)0)
#endif

static void sleep_ms(long ms)
{
    struct timespec t;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
}

static void count_task(void *ctx, int worker, uint32_t task)
{
    tally *t = ctx;
    int i, others;

    if (t->nap_ms && task == 0)
        sleep_ms(t->nap_ms);
    if (t->spin && task == 0)
        for (i = 0; i < 5000; i++) {
            TALLY_LOCK();
            others = t->others;
            TALLY_UNLOCK();
            if (others)
                break;
            sleep_ms(1);
        }
    TALLY_LOCK();
    t->runs[task]++;
    t->worker[task] = worker;
    if (worker != 0)
        t->others++;
    TALLY_UNLOCK();
}

/* A light task for many runs: hits[task]++ (the counts are checked and cleared after each run). */
static int hits[8];

static void hit_task(void *ctx, int worker, uint32_t task)
{
    (void)ctx;
    (void)worker;
    TALLY_LOCK();
    hits[task]++;
    TALLY_UNLOCK();
}

/* A task that keeps a worker other than the caller busy for 2 ms: the caller, out of tasks, waits longer than it
 * watches and sleeps until that worker wakes it. */
static void slow_task(void *ctx, int worker, uint32_t task)
{
    if (worker != 0)
        sleep_ms(2);
    hit_task(ctx, worker, task);
}

static void check_tally(const tally *t, uint32_t n, const char *what)
{
    uint32_t i;
    int bad = 0;
    for (i = 0; i < n; i++)
        if (t->runs[i] != 1 || t->worker[i] < 0 || t->worker[i] >= t->count)
            bad++;
    CHECK(bad == 0, "%s: %d of %u tasks ran other than once on a worker 0..%d", what, bad, n, t->count - 1);
}

/* The caller holds task 0 of 8 until another worker ran one: the pool really runs tasks on more than one thread. */
static void check_shared(okpu_workers *w, const char *what)
{
    static tally t;

    memset(&t, 0, sizeof t);
    t.count = okpu_workers_count(w);
    t.spin = 1;
    okpu_workers_run(w, 8, count_task, &t);
    check_tally(&t, 8, what);
    CHECK(t.others > 0, "%s, %d workers: no task ran outside the caller", what, t.count);
}

static void test_pool(void)
{
    static tally t;
    okpu_workers *w;
    okpu_error err;
    char what[64];
    int count, round;
    uint32_t n;

    CHECK(okpu_workers_default_count() >= 1 && okpu_workers_default_count() <= OKPU_WORKERS_MAX,
          "default count %d", okpu_workers_default_count());
#ifndef OKPU_HAVE_PTHREADS
    CHECK(okpu_workers_default_count() == 1, "a serial build defaults to %d workers", okpu_workers_default_count());
#endif
    CHECK(okpu_workers_create(-1, NULL, &err) == NULL && err.code == OKPU_ERR_PARAM && strstr(err.message, "1..64"),
          "threads=-1: %s", err.message);
    CHECK(okpu_workers_create(OKPU_WORKERS_MAX + 1, NULL, &err) == NULL && strstr(err.message, "threads=65"),
          "threads=65: %s", err.message);
    CHECK(okpu_workers_count(NULL) == 1, "a NULL pool has %d workers", okpu_workers_count(NULL));
    memset(&t, 0, sizeof t);
    t.count = 1;
    okpu_workers_run(NULL, 10, count_task, &t);
    check_tally(&t, 10, "NULL pool");

    for (count = 0; count <= 4; count++) {
        w = okpu_workers_create(count, NULL, &err);
        CHECK(w != NULL, "create(%d): %s", count, w ? "" : err.message);
        if (!w)
            continue;
#ifdef OKPU_HAVE_PTHREADS
        CHECK(okpu_workers_count(w) == (count ? count : okpu_workers_default_count()), "create(%d): %d workers",
              count, okpu_workers_count(w));
#else
        CHECK(okpu_workers_count(w) == 1, "serial build, create(%d): %d workers", count, okpu_workers_count(w));
#endif
        /* many runs of every size back to back: each task exactly once, each run complete when run returns */
        for (round = 0; round < 300; round++) {
            n = (uint32_t)(round * 37 % 67);
            memset(&t, 0, sizeof t);
            t.count = okpu_workers_count(w);
            okpu_workers_run(w, n, count_task, &t);
            snprintf(what, sizeof what, "%d workers, run %d (%u tasks)", t.count, round, n);
            check_tally(&t, n, what);
        }
        memset(&t, 0, sizeof t);
        t.count = okpu_workers_count(w);
        okpu_workers_run(w, MAX_TASKS, count_task, &t);
        check_tally(&t, MAX_TASKS, "4096 tasks");
        if (t.count > 1)
            check_shared(w, "spin");
        if (t.count > 1) {
            /* more runs than the pool's run counter has values (it wraps at 2^16), then runs far enough apart that
             * the workers sleep between them, and runs whose caller sleeps waiting for a worker: every task once */
            int bad = 0, k;
            for (round = 0; round < 66000 + 20; round++) {
                const uint32_t m = round < 66000 ? 2u + (uint32_t)round % 3u : 4u;
                if (round >= 66000 && round % 2 == 0)
                    sleep_ms(2);
                okpu_workers_run(w, m, round >= 66000 && round % 4 == 1 ? slow_task : hit_task, NULL);
                for (k = 0; k < 8; k++) {
                    bad += hits[k] != ((uint32_t)k < m);
                    hits[k] = 0;
                }
            }
            CHECK(bad == 0, "%d workers, 66020 short runs: %d tasks ran other than once", t.count, bad);
        }
#ifdef OKPU_HAVE_PTHREADS
        if (t.count > 1) {
            /* a forked child has none of the threads: its runs happen on the caller and complete */
            pid_t pid;
            int status = 0;
            fflush(stdout);
            pid = fork();
            if (pid == 0) {
                memset(&t, 0, sizeof t);
                t.count = okpu_workers_count(w);
                okpu_workers_run(w, 100, count_task, &t);
                for (n = 0; n < 100; n++)
                    if (t.runs[n] != 1 || t.worker[n] != 0)
                        _exit(3);
                okpu_workers_destroy(w);
                _exit(0);
            }
            CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "forked child: status %d", status);
        }
#endif
        okpu_workers_destroy(w);
    }
    okpu_workers_destroy(NULL);
    printf("pool: counts 0..4, every task once; default %d workers\n", okpu_workers_default_count());
}

/* ---------------------------------------------------------------------------------------------------------------- */

typedef struct snapshot {
    uint8_t *ram;
    uint8_t *out[8];
    size_t out_bytes[8];
    int outputs;
    size_t scratch;
} snapshot;

/* The model run with `threads`: its outputs and KPU RAM; the forward pass must not allocate. */
static int run_threads(const uint8_t *data, size_t size, int threads, snapshot *s, const char *name)
{
    counting_heap heap = {0, 0, 0, 0};
    okpu_allocator alloc;
    okpu_options o;
    okpu_memory_info mem;
    okpu_error err;
    okpu_model *m;
    long calls;
    int i, rc;

    alloc.alloc = count_alloc;
    alloc.free = count_free;
    alloc.ctx = &heap;
    okpu_options_default(&o);
    o.allocator = &alloc;
    o.threads = threads;
    memset(s, 0, sizeof *s);
    m = okpu_model_load(data, size, &o, &err);
    CHECK(m != NULL, "%s, threads=%d: load: %s", name, threads, err.message);
    if (!m)
        return 0;
    set_filled_inputs(m, 1234u, name);
    calls = heap.calls;
    rc = okpu_model_run(m, 0, &err);
    CHECK(rc == OKPU_OK, "%s, threads=%d: run: %s", name, threads, err.message);
    /* twice: a second pass on the same pool gives the same bytes (checked by the caller through the first) */
    rc |= okpu_model_run(m, 0, &err);
    CHECK(heap.calls == calls, "%s, threads=%d: the forward pass allocated %ld times", name, threads,
          heap.calls - calls);
    okpu_model_memory(m, &mem);
    s->scratch = mem.backend_scratch;
    if (rc == OKPU_OK) {
        s->ram = malloc(OKPU_KPU_RAM_SIZE);
        memcpy(s->ram, okpu_model_kpu_ram(m), OKPU_KPU_RAM_SIZE);
        s->outputs = okpu_model_output_count(m) < 8 ? okpu_model_output_count(m) : 8;
        for (i = 0; i < s->outputs; i++) {
            okpu_tensor t;
            const uint8_t *p = NULL;
            if (okpu_model_output(m, i, &t, &p, &err) == OKPU_OK && p) {
                s->out[i] = malloc(t.bytes);
                memcpy(s->out[i], p, t.bytes);
                s->out_bytes[i] = t.bytes;
            }
        }
    }
    okpu_model_free(m);
    CHECK(heap.live == 0 && heap.bytes == 0, "%s, threads=%d: %ld blocks not freed", name, threads, heap.live);
    return rc == OKPU_OK;
}

static void snapshot_free(snapshot *s)
{
    int i;
    free(s->ram);
    for (i = 0; i < s->outputs; i++)
        free(s->out[i]);
}

static int same(const snapshot *a, const snapshot *b)
{
    int i;
    if (!a->ram || !b->ram || a->outputs != b->outputs || memcmp(a->ram, b->ram, OKPU_KPU_RAM_SIZE) != 0)
        return 0;
    for (i = 0; i < a->outputs; i++)
        if (a->out_bytes[i] != b->out_bytes[i] || (a->out_bytes[i] && memcmp(a->out[i], b->out[i], a->out_bytes[i])))
            return 0;
    return 1;
}

/* modes: 2 = fast and split per channel, 3 = the reference path too (slow under the sanitizers: small models only) */
static void model_threads(const char *path, int required, int modes_run, int i_small)
{
    static const char *const modes[][2] = {{NULL, NULL}, {"OKPU_EMU_SPLIT_ALL", "1"}, {"OKPU_EMU_REFERENCE", "1"}};
    snapshot one, more;
    uint8_t *data;
    size_t size;
    int threads, mode;
    char name[600];

    data = read_model(path, &size, required);
    if (!data)
        return;
    for (mode = 0; mode < modes_run; mode++) {
        if (modes[mode][0])
            setenv(modes[mode][0], modes[mode][1], 1);
        snprintf(name, sizeof name, "%s%s%s", path, modes[mode][0] ? " with " : "",
                 modes[mode][0] ? modes[mode][0] : "");
        if (run_threads(data, size, 1, &one, name)) {
            for (threads = 2; threads <= 3; threads++) {
                if (run_threads(data, size, threads, &more, name)) {
                    CHECK(same(&one, &more), "%s: threads=%d differs from threads=1 (outputs or KPU RAM)", name,
                          threads);
#ifdef OKPU_HAVE_PTHREADS
                    /* each worker's buffers are counted, for the layers split over them: all when split per channel,
                     * none of a small model's (digits: no layer worth waking a worker) */
                    CHECK(mode == 1 ? more.scratch > one.scratch
                                    : i_small ? more.scratch == one.scratch : more.scratch >= one.scratch,
                          "%s: threads=%d reports %zu bytes of backend scratch, threads=1 %zu", name, threads,
                          more.scratch, one.scratch);
#endif
                }
                snapshot_free(&more);
            }
        }
        snapshot_free(&one);
        if (modes[mode][0])
            unsetenv(modes[mode][0]);
    }
    printf("%s: threads 1, 2, 3 (fast, split per channel%s): same outputs and KPU RAM\n", path,
           modes_run > 2 ? ", reference" : "");
    free(data);
}

static void test_models(void)
{
    static const char *const real[] = {
        "mnist_v3_maixpy/mnist.kmodel", "kmodel_v5_nncase/convnet_u8_v190.kmodel",
        "face_detect_yolo2_v3_maixpy/facedetect.kmodel", "ulffd_face_v4_nncase/slim-320.kmodel",
        "mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel", "yolo2_voc20_v4_nncase/yolo.kmodel",
        "ulffd_face_v4_nncase/RFB-320.kmodel" /* (batches run at once on the workers) */};
    char path[512];
    size_t i;

    model_threads("examples/models/digits.kmodel", 1, 3, 1);
    for (i = 0; i < sizeof real / sizeof real[0]; i++) {
        model_threads(testdata_path(path, sizeof path, real[i]), 0, i < 2 ? 3 : 2, 0);
    }
}

/* A bad count is refused at load with the limit in the message. */
static void test_bad_threads(void)
{
    okpu_options o;
    okpu_error err;
    okpu_model *m;
    uint8_t *data;
    size_t size;

    data = read_file("examples/models/digits.kmodel", &size);
    CHECK(data != NULL, "digits.kmodel missing");
    if (!data)
        return;
    okpu_options_default(&o);
    o.threads = 65;
    m = okpu_model_load(data, size, &o, &err);
    CHECK(m == NULL && err.code == OKPU_ERR_PARAM && strstr(err.message, "threads=65") && strstr(err.message, "1..64"),
          "threads=65 loaded: %s", m ? "yes" : err.message);
    okpu_model_free(m);
    free(data);
}

/* A clock that moves 1000 ns at each read, from any thread: a task's time is 1000 ns times the reads between its
 * two (its own second read included). */
static uint64_t fake_ticks;

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
#ifdef OKPU_HAVE_PTHREADS
    return __atomic_add_fetch(&fake_ticks, 1000u, __ATOMIC_SEQ_CST);
#else
    return fake_ticks += 1000u;
#endif
}

static uint64_t real_clock(void *ctx)
{
    struct timespec t;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* okpu_workers_time_tasks: every task of a timed run is read twice on the clock, on whichever thread ran it, and its
 * time counted once; nothing while timing is off (the counts kept), and timing on again starts from 0. On one
 * worker the fake clock gives exactly 1000 ns a task. */
static void test_task_times(void)
{
    okpu_workers *w;
    okpu_error err;
    int count;

    CHECK(okpu_workers_task_ns(NULL) == 0, "a NULL pool's task time");
    okpu_workers_time_tasks(NULL, fake_clock, NULL); /* (nothing to time) */
    for (count = 1; count <= 3; count++) {
        static tally t;
        uint64_t ns;
        w = okpu_workers_create(count, NULL, &err);
        CHECK(w != NULL, "create(%d): %s", count, w ? "" : err.message);
        if (!w)
            continue;
        CHECK(okpu_workers_task_ns(w) == 0, "%d workers: task time before any timing", count);
        okpu_workers_time_tasks(w, fake_clock, NULL);
        fake_ticks = 0;
        memset(&t, 0, sizeof t);
        t.count = okpu_workers_count(w);
        okpu_workers_run(w, 200, count_task, &t);
        okpu_workers_run(w, 1, hit_task, NULL); /* (one task: on the caller) */
        CHECK(hits[0] == 1, "%d workers: the one task ran %d times", count, hits[0]);
        memset(hits, 0, sizeof hits);
        check_tally(&t, 200, "timed run");
        ns = okpu_workers_task_ns(w);
        CHECK(fake_ticks == 2u * 201u * 1000u, "%d workers: %llu clock reads for 201 tasks (2 each expected)", count,
              (unsigned long long)(fake_ticks / 1000u));
        if (okpu_workers_count(w) == 1)
            CHECK(ns == 201u * 1000u, "one worker: %llu ns for 201 tasks of 1000", (unsigned long long)ns);
        else
            CHECK(ns >= 201u * 1000u && ns <= (uint64_t)okpu_workers_count(w) * fake_ticks, /* (tasks overlap) */
                  "%d workers: %llu ns for 201 tasks (reads %llu)", count, (unsigned long long)ns,
                  (unsigned long long)fake_ticks);
        okpu_workers_time_tasks(w, NULL, NULL);
        okpu_workers_run(w, 8, hit_task, NULL);
        memset(hits, 0, sizeof hits);
        CHECK(fake_ticks == 2u * 201u * 1000u && okpu_workers_task_ns(w) == ns,
              "%d workers: timing off still read the clock or changed the count", count);
        okpu_workers_time_tasks(w, fake_clock, NULL);
        CHECK(okpu_workers_task_ns(w) == 0, "%d workers: timing on again kept %llu ns", count,
              (unsigned long long)okpu_workers_task_ns(w));
        okpu_workers_destroy(w);
    }
}

/* okpu_workers_caller_only: while on, every run goes to the caller alone (worker 0, each task once, one thread's time:
 * the task time is exactly the tasks' clock), the pool's count unchanged; once off, the other threads take tasks
 * again (the caller holds task 0 until one has). Nothing for NULL. */
static void test_caller_only(void)
{
    okpu_workers *w;
    okpu_error err;
    int count;

    okpu_workers_caller_only(NULL, 1); /* (nothing to hold) */
    for (count = 1; count <= 3; count++) {
        static tally t;
        w = okpu_workers_create(count, NULL, &err);
        CHECK(w != NULL, "create(%d): %s", count, w ? "" : err.message);
        if (!w)
            continue;
        okpu_workers_caller_only(w, 1);
        okpu_workers_time_tasks(w, fake_clock, NULL);
        fake_ticks = 0;
        memset(&t, 0, sizeof t);
        t.count = okpu_workers_count(w);
        t.nap_ms = 50; /* (shared, the other threads would take most of the 300 meanwhile) */
        okpu_workers_run(w, 300, count_task, &t);
        check_tally(&t, 300, "caller only");
        CHECK(t.others == 0, "%d workers, caller only: %d tasks ran on another thread", t.count, t.others);
        CHECK(okpu_workers_count(w) == t.count, "caller only changed the count to %d", okpu_workers_count(w));
        CHECK(okpu_workers_task_ns(w) == 300u * 1000u && fake_ticks == 2u * 300u * 1000u, /* (no task overlaps) */
              "%d workers, caller only: %llu ns for 300 tasks of 1000 on one thread", t.count,
              (unsigned long long)okpu_workers_task_ns(w));
        okpu_workers_time_tasks(w, NULL, NULL);
        okpu_workers_wake(w); /* (held: wakes no one) */
        okpu_workers_caller_only(w, 0);
        if (t.count > 1)
            check_shared(w, "caller only, then off");
        okpu_workers_destroy(w);
    }
}

/* Layers of a profiled run whose task time exceeds `threads` x their time, or that have task time but none of their
 * own (folded into a pair or a side chain); *kpu_timed: the KPU layers with task time. */
static int task_time_excess(const okpu_model *m, int n, const uint64_t *ns, const uint64_t *task, int threads,
                            int *kpu_timed)
{
    int i, bad = 0;

    *kpu_timed = 0;
    for (i = 0; i < n; i++) {
        okpu_layer_info li;
        okpu_model_layer_info(m, i, &li);
        bad += task[i] > (uint64_t)threads * ns[i] || (ns[i] == 0 && task[i] != 0);
        *kpu_timed += li.is_kpu && task[i] > 0;
    }
    return bad;
}

/* okpu_model_run_profiled on real models, 1 and 2 threads: the same outputs as a plain run; each layer's task time
 * is at most threads x its time (every task lies inside its step, on the same clock), the layers a pair or a side
 * chain folds into its first read 0 for both; the KPU layers have task time, and on one thread no more than their
 * time. A run without a task array is refused. */
static void profiled_run(const char *path, int required)
{
    okpu_options o;
    okpu_error err;
    okpu_model *m;
    uint8_t *data;
    size_t size;
    int threads;

    data = read_model(path, &size, required);
    if (!data)
        return;
    for (threads = 1; threads <= 2; threads++) {
        uint64_t *ns, *task;
        int n, kpu_timed, bad;
        okpu_tensor out;
        const uint8_t *bytes;
        uint8_t *plain;
        okpu_options_default(&o);
        o.threads = threads;
        m = okpu_model_load(data, size, &o, &err);
        CHECK(m != NULL, "%s: %s", path, m ? "" : err.message);
        if (!m)
            continue;
        set_filled_inputs(m, 7u, path);
        n = okpu_model_layer_count(m);
        ns = calloc((size_t)n, sizeof *ns);
        task = calloc((size_t)n, sizeof *task);
        CHECK(okpu_model_run(m, -1, &err) == OKPU_OK && okpu_model_output(m, 0, &out, &bytes, &err) == OKPU_OK,
              "%s: plain run: %s", path, err.message);
        plain = malloc(out.bytes);
        memcpy(plain, bytes, out.bytes);
        CHECK(okpu_model_run_profiled(m, -1, real_clock, NULL, ns, NULL, &err) == OKPU_ERR_PARAM &&
                  strstr(err.message, "task times"),
              "%s: a profiled run without task times: %s", path, err.message);
        CHECK(okpu_model_run_profiled(m, -1, NULL, NULL, ns, task, &err) == OKPU_ERR_PARAM &&
                  strstr(err.message, "clock"),
              "%s: a profiled run without a clock: %s", path, err.message);
        set_filled_inputs(m, 7u, path);
        CHECK(okpu_model_run_profiled(m, -1, real_clock, NULL, ns, task, &err) == OKPU_OK, "%s: profiled run: %s",
              path, err.message);
        CHECK(okpu_model_output(m, 0, &out, &bytes, &err) == OKPU_OK && memcmp(bytes, plain, out.bytes) == 0,
              "%s, %d threads: the profiled run's output differs from the plain run's", path, threads);
        bad = task_time_excess(m, n, ns, task, threads, &kpu_timed);
        CHECK(bad == 0, "%s, %d threads: %d layers whose task time exceeds threads x their time", path, threads, bad);
        CHECK(kpu_timed > 0, "%s, %d threads: no KPU layer has task time", path, threads);
        if (threads > 1) {
            /* the same split on the calling thread alone: the same output, and no layer's tasks longer than it */
            okpu_model_caller_only(m, 1);
            set_filled_inputs(m, 7u, path);
            CHECK(okpu_model_run_profiled(m, -1, real_clock, NULL, ns, task, &err) == OKPU_OK,
                  "%s: caller-only profiled run: %s", path, err.message);
            okpu_model_caller_only(m, 0);
            CHECK(okpu_model_output(m, 0, &out, &bytes, &err) == OKPU_OK && memcmp(bytes, plain, out.bytes) == 0,
                  "%s, %d threads on the caller: the output differs from the plain run's", path, threads);
            bad = task_time_excess(m, n, ns, task, 1, &kpu_timed); /* (one thread ran every task) */
            CHECK(bad == 0 && kpu_timed > 0, "%s, %d threads on the caller: %d layers whose task time exceeds their "
                  "time, %d KPU layers timed", path, threads, bad, kpu_timed);
        }
        free(plain);
        free(ns);
        free(task);
        okpu_model_free(m);
    }
    free(data);
}

static void test_profiled_models(void)
{
    static const char *const real[] = {"ulffd_face_v4_nncase/slim-320.kmodel",
                                       "face_detect_yolo2_v3_maixpy/facedetect.kmodel"};
    on_test_models(profiled_run, real, sizeof real / sizeof real[0]);
}

/* okpu_workers_taper: the runs cover [0, n) in order, each non-empty and starting on a whole unit; from each end the
 * runs shrink (in units) down to one unit in the middle, the first no more than a 2 x workers-th of the units (every
 * run of a delayed worker stays small); one run for one worker; at most max_runs of them, else 0, and 0 for nothing
 * to cut. Every channel count of a KPU layer (1..1024) on 2-7 workers fits the emulator's table of 64; quads too. */
#define TAPER_TABLE 64u
static void test_taper(void)
{
    uint32_t cut[TAPER_TABLE + 1u], n, r, quantum, first_units, bad_runs = 0, bad = 0;
    int workers;
    const uint32_t want_48[] = {0, 12, 20, 24, 28, 36, 48}; /* MobileNet's 48 channels by quads on two workers */

    CHECK(okpu_workers_taper(0, 1, 2, TAPER_TABLE, cut) == 0, "n = 0");
    CHECK(okpu_workers_taper(8, 0, 2, TAPER_TABLE, cut) == 0, "quantum 0");
    CHECK(okpu_workers_taper(8, 1, 0, TAPER_TABLE, cut) == 0, "no worker");
    CHECK(okpu_workers_taper(1024, 1, 8, TAPER_TABLE, cut) == 0, "1024 channels on 8 workers: more than 64 runs");
    CHECK(okpu_workers_taper(5, 1, 2, 1, cut) == 0, "a table of one run");
    r = okpu_workers_taper(48, 4, 2, TAPER_TABLE, cut);
    CHECK(r == 6 && memcmp(cut, want_48, sizeof want_48) == 0, "48 by quads on 2 workers: %u runs, %u %u %u %u", r,
          cut[0], cut[1], cut[2], cut[3]);
    for (quantum = 1; quantum <= 4; quantum += 3)
        for (workers = 1; workers <= 8; workers++)
            for (n = 1; n <= 1024; n++) {
                const uint32_t units = (n + quantum - 1u) / quantum;
                uint32_t size[TAPER_TABLE], low = 0, lo, hi;
                const uint32_t runs = okpu_workers_taper(n, quantum, workers, TAPER_TABLE, cut);
                if (runs == 0) {
                    bad_runs += workers < 8;
                    continue;
                }
                bad += runs > TAPER_TABLE || cut[0] != 0 || cut[runs] != n;
                for (r = 0; r < runs && r < TAPER_TABLE; r++) {
                    bad += cut[r] >= cut[r + 1u] || cut[r] % quantum != 0;
                    size[r] = (cut[r + 1u] + quantum - 1u) / quantum - cut[r] / quantum;
                    low = size[r] < size[low] ? r : low;
                }
                bad += workers == 1 ? runs != 1u : size[low] != 1u; /* the middle: one unit */
                first_units = (units + 2u * (uint32_t)workers - 1u) / (2u * (uint32_t)workers);
                bad += size[0] > (first_units > 1u ? first_units : 1u) && runs > 2u;
                for (lo = 0; lo + 1u < low; lo++) /* shrinking from the front to the smallest run */
                    bad += size[lo + 1u] > size[lo];
                for (hi = runs - 1u; hi > low + 1u; hi--) /* and from the back */
                    bad += size[hi - 1u] > size[hi];
            }
    CHECK(bad == 0, "%u tapered runs out of order, empty, off a unit or not shrinking to one unit", bad);
    CHECK(bad_runs == 0, "%u cuts on 1-7 workers did not fit 64 runs", bad_runs);
}

/* okpu_workers_round_trip_ns: a figure with two processors, -1 with one or without threads; the caller's processor
 * set is the same after; the pool still runs. */
static void test_round_trip(void)
{
    long ns = okpu_workers_round_trip_ns();
#ifndef OKPU_HAVE_PTHREADS
    CHECK(ns == -1, "serial build: round trip %ld", ns);
#else
    okpu_workers *w;
    okpu_error err;
    static tally t;
    if (okpu_workers_default_count() < 2) {
        CHECK(ns == -1, "one processor: round trip %ld", ns);
        printf("round trip: one processor, -1 (the two-processor checks skipped)\n");
        return;
    }
    /* a cache line's round trip between two processors is tens to hundreds of nanoseconds; 100 us would be a
     * broken loop (or a thread that never answered, which gives -1) */
    CHECK(ns > 0 && ns < 100000, "round trip %ld ns", ns);
#ifdef __linux__
    {
        cpu_set_t before, after, one;
        int cpu = 0;
        CHECK(sched_getaffinity(0, sizeof before, &before) == 0, "sched_getaffinity");
        ns = okpu_workers_round_trip_ns();
        CHECK(sched_getaffinity(0, sizeof after, &after) == 0 && CPU_EQUAL(&before, &after),
              "the caller's processor set changed (%d processors before, %d after)", CPU_COUNT(&before),
              CPU_COUNT(&after));
        while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &before))
            cpu++;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "pin to processor %d", cpu);
        CHECK(okpu_workers_round_trip_ns() == -1, "one processor allowed: a round trip measured");
        CHECK(sched_setaffinity(0, sizeof before, &before) == 0, "restore the processor set");
    }
#endif
    w = okpu_workers_create(2, NULL, &err);
    CHECK(w != NULL, "create(2): %s", w ? "" : err.message);
    if (w) {
        memset(&t, 0, sizeof t);
        t.count = 2;
        okpu_workers_run(w, 64, count_task, &t);
        check_tally(&t, 64, "after the round trips");
        CHECK(okpu_workers_round_trip_ns() > 0, "round trip with a pool alive");
        okpu_workers_destroy(w);
    }
    printf("round trip: %ld ns between the first two processors\n", ns);
#endif
}

int main(void)
{
    test_pool();
    test_task_times();
    test_caller_only();
    test_taper();
    test_round_trip();
    test_bad_threads();
    test_models();
    test_profiled_models();
    return ctest_summary();
}

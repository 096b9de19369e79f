// SPDX-License-Identifier: Apache-2.0
/* The step table, generated from the steps_*.def lists. */
#include "plan.h"

const okpu_step_desc okpu_step_table[OKPU_STEP_COUNT] = {
#define OKPU_STEP(id, name, type, fn) {name, sizeof(type), fn},
#include "steps_kpu.def"
#include "steps_cpu.def"
#include "steps_neutral.def"
#include "steps_v5.def"
#undef OKPU_STEP
};

/* Below this many elements a CPU step runs on the caller alone (a hand-out costs microseconds: about what a few
 * thousand elements of quantize cost). */
#define PARALLEL_MIN_ELEMENTS 16384u
/* A shared step's range is cut in runs that shrink toward the middle (okpu_workers_taper), in units of a
 * PARALLEL_UNITS-th of the range per worker: the thread that runs out of runs first waits for at most a small one.
 * Two equal runs a worker, slim-320's softmax steps left the caller waiting 2-10 us at each of their joins (a
 * worker slower than the caller, on a busy host, finished its second run late). */
#define PARALLEL_UNITS 16u
#define PARALLEL_RUNS_MAX 64u

typedef struct range_tasks {
    okpu_range_fn fn;
    const void *args;
    size_t n, per_task;
    const uint32_t *cut; /* NULL: runs of per_task items; else run r is items [cut[r], cut[r + 1]) */
} range_tasks;

static void range_task(void *ctx, int worker, uint32_t task)
{
    const range_tasks *T = ctx;
    const size_t first = (size_t)task * T->per_task;

    (void)worker;
    if (T->cut)
        T->fn(T->args, T->cut[task], T->cut[task + 1u]);
    else
        T->fn(T->args, first, T->n - first < T->per_task ? T->n : first + T->per_task);
}

void okpu_step_parallel(const okpu_run_ctx *ctx, size_t n, size_t item_elements, size_t align, okpu_range_fn fn,
                        const void *args)
{
    okpu_workers *pool = ctx && ctx->kpu ? ctx->kpu->workers : NULL;
    const int workers = okpu_workers_count(pool);
    uint32_t cut[PARALLEL_RUNS_MAX + 1u], runs = 0;
    range_tasks T;
    size_t tasks;

    if (!pool || n < 2u || n * item_elements < PARALLEL_MIN_ELEMENTS) { /* (both < 2^32: tensor sizes) */
        fn(args, 0, n);
        return;
    }
    if (align < 1)
        align = 1;
    T.fn = fn;
    T.args = args;
    T.n = n;
    T.cut = NULL;
    /* one worker: one run, so that a profiled run counts the same work as tasks on one thread as on several
     * (okpu_model_run_profiled) */
    if (n <= 0xffffffffu) {
        const size_t units = (size_t)PARALLEL_UNITS * (size_t)workers;
        size_t quantum = (n + units - 1u) / units;
        quantum = (quantum + align - 1u) / align * align;
        if (quantum <= 0xffffffffu)
            runs = okpu_workers_taper((uint32_t)n, (uint32_t)quantum, workers, PARALLEL_RUNS_MAX, cut);
    }
    if (runs) {
        T.cut = cut;
        T.per_task = 0;
        okpu_workers_run(pool, runs, range_task, &T);
        return;
    }
    /* (more runs than PARALLEL_RUNS_MAX: two equal ones a worker; a worker the OS delays leaves its second to the
     * others) */
    tasks = 2u * (size_t)workers;
    if (tasks > n)
        tasks = n;
    T.per_task = (n + tasks - 1u) / tasks;
    T.per_task = (T.per_task + align - 1u) / align * align;
    okpu_workers_run(pool, (uint32_t)((n + T.per_task - 1u) / T.per_task), range_task, &T);
}

/* The kinds of steps_cpu.def and steps_neutral.def follow those of steps_kpu.def in the enum (plan.h). */
enum {
    KPU_KINDS = 0
#define OKPU_STEP(id, name, type, fn) +1
#include "steps_kpu.def"
    ,
    MAIN_MEMORY_KINDS = 0
#include "steps_cpu.def"
#include "steps_neutral.def"
#undef OKPU_STEP
};

int okpu_step_main_memory_only(okpu_step_kind kind)
{
    return (unsigned)kind >= (unsigned)KPU_KINDS && (unsigned)kind < (unsigned)(KPU_KINDS + MAIN_MEMORY_KINDS);
}

const char *okpu_step_name(okpu_step_kind kind)
{
    return (unsigned)kind < (unsigned)OKPU_STEP_COUNT ? okpu_step_table[kind].name : "?";
}

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

typedef struct range_tasks {
    okpu_range_fn fn;
    const void *args;
    size_t n, per_task;
} range_tasks;

static void range_task(void *ctx, int worker, uint32_t task)
{
    const range_tasks *T = ctx;
    const size_t first = (size_t)task * T->per_task;

    (void)worker;
    T->fn(T->args, first, T->n - first < T->per_task ? T->n : first + T->per_task);
}

void okpu_step_parallel(const okpu_run_ctx *ctx, size_t n, size_t item_elements, size_t align, okpu_range_fn fn,
                        const void *args)
{
    okpu_workers *pool = ctx && ctx->kpu ? ctx->kpu->workers : NULL;
    const size_t workers = (size_t)okpu_workers_count(pool);
    range_tasks T;
    size_t tasks;

    if (!pool || n < 2u || n * item_elements < PARALLEL_MIN_ELEMENTS) { /* (both < 2^32: tensor sizes) */
        fn(args, 0, n);
        return;
    }
    if (align < 1)
        align = 1;
    /* two each: a worker the OS delays leaves its second to the others; one worker: one task, so that a profiled
     * run counts the same work as tasks on one thread as on several (okpu_model_run_profiled) */
    tasks = workers < 2 ? 1u : 2u * workers;
    if (tasks > n)
        tasks = n;
    T.fn = fn;
    T.args = args;
    T.n = n;
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

// SPDX-License-Identifier: Apache-2.0
/* The execution plan: what a model's forward pass runs, decoded once at load.
 *
 * A format front-end (kmodel/kmodel_v3.c, kmodel/kmodel_v4.c) reads and validates its file once and turns every
 * layer into one step: a step kind (which kernel) and that kernel's typed arguments, with every pointer resolved
 * (main buffer, KPU RAM, weights in the file) and every size computed. One runner (okpu_model_run in model.c) then
 * calls the steps in order; nothing is parsed, checked or allocated while running.
 *
 * Every step kind is listed once, in the steps_*.def files (OKPU_STEP(ID, name, argument type, run function)); the
 * enum, the names, the argument sizes and the dispatch table all come from them. Kernels shared between formats
 * (the KPU convolution, uploads) take what differs between versions as explicit fields of their arguments (batches,
 * weight width, rounding mode), never by asking which format they run for.
 *
 * Adding a format = a front-end that fills steps; adding an op = a .def line, an argument struct, a run function. */
#ifndef OKPU_PLAN_PLAN_H
#define OKPU_PLAN_PLAN_H

#include <stddef.h>

#include "../kpu/kpu_backend.h"
#include "../okpu.h"

/* What a step sees while it runs: the KPU backend and where it is in the model (for messages). */
typedef struct okpu_run_ctx {
    okpu_kpu_backend *kpu;
    int layer;
    long body_offset;
} okpu_run_ctx;

typedef int (*okpu_step_fn)(const okpu_run_ctx *ctx, const void *args, okpu_error *err);

#include "steps_cpu.h"
#include "steps_kpu.h"
#include "steps_neutral.h"
#include "steps_v5.h"

typedef enum okpu_step_kind {
#define OKPU_STEP(id, name, type, fn) OKPU_STEP_##id,
#include "steps_kpu.def"
#include "steps_cpu.def"
#include "steps_neutral.def"
#include "steps_v5.def"
#undef OKPU_STEP
    OKPU_STEP_COUNT
} okpu_step_kind;

/* One row of the step table. */
typedef struct okpu_step_desc {
    const char *name;
    size_t args_size; /* sizeof the argument struct (a step may allocate a variable tail after it) */
    okpu_step_fn run;
} okpu_step_desc;

extern const okpu_step_desc okpu_step_table[OKPU_STEP_COUNT];

/* One layer's step. `args` is okpu_step_table[kind].args_size bytes (plus any tail: args_bytes in all), owned by the
 * model and freed with it. */
typedef struct okpu_step {
    okpu_step_kind kind;
    uint32_t args_bytes;
    void *args;
} okpu_step;

/* Defines a step's run function for a kernel that cannot fail (the front-end checked everything at load): `a` is the
 * step's typed arguments, `call` the kernel call. */
#define OKPU_DEFINE_STEP(fn, type, call)                                                                              \
    int fn(const okpu_run_ctx *ctx, const void *args, okpu_error *err)                                                \
    {                                                                                                                 \
        const type *a = (const type *)args;                                                                           \
        (void)ctx, (void)err;                                                                                         \
        call;                                                                                                         \
        return OKPU_OK;                                                                                               \
    }

/* fn(args, first, end) over ranges covering [0, n) items of `item_elements` elements each (an element that costs k
 * times one of quantize counts k times), on the KPU backend's worker threads when it has some and the elements are
 * enough to pay for them, else at once on the caller: for a CPU
 * step whose elements are computed independently (the bytes do not depend on the split). Every range but the last
 * starts and ends at a multiple of `align`. */
typedef void (*okpu_range_fn)(const void *args, size_t first, size_t end);
void okpu_step_parallel(const okpu_run_ctx *ctx, size_t n, size_t item_elements, size_t align, okpu_range_fn fn,
                        const void *args);

/* Does a step of this kind read and write main memory alone, never KPU RAM and never the KPU backend (the v3 CPU
 * layers of steps_cpu.def and the v4 neutral ops of steps_neutral.def)? Such steps may run on one thread beside a
 * KPU layer that touches KPU RAM alone (a side chain: okpu_kpu_backend.run_beside). */
int okpu_step_main_memory_only(okpu_step_kind kind);

/* Name of a step kind ("kpu_conv", ...), "?" outside the table. */
const char *okpu_step_name(okpu_step_kind kind);

#endif

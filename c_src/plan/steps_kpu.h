// SPDX-License-Identifier: Apache-2.0
/* Arguments of the KPU steps (steps_kpu.def). Included by plan.h. */
#ifndef OKPU_PLAN_STEPS_KPU_H
#define OKPU_PLAN_STEPS_KPU_H

#include "../kpu/kpu_args.h"
#include "../kpu/kpu_backend.h"

/* A KPU convolution: `job` holds the layer's first batch (raw words in the file, decoded fields, tables, weight width,
 * main_out: NULL when the output stays in KPU RAM) and its batches (v3: 1; nncase advances both addresses per batch). */
typedef struct okpu_kpu_conv_args {
    okpu_kpu_layer_job job;
    int beside; /* > 0: this layer and the main-memory steps after it run as one task beside KPU layer `beside`'s
                 * shared channels (a side chain, okpu_kpu_backend.run_beside; model.c sets it at load); 0: none */
    int paired; /* > 0: KPU layer `paired`, the next step, runs together with this one (a pair,
                 * okpu_kpu_backend.run_pair; model.c sets it at load); 0: none */
} okpu_kpu_conv_args;

/* A planar u8 C x H x W map copied into KPU RAM at `row` in KPU layout, `batches` maps of rows_per_batch rows. */
typedef struct okpu_kpu_upload_args {
    const uint8_t *src;
    uint8_t *kpu_ram; /* the backend's KPU RAM */
    uint32_t row, rows_per_batch, batches;
    uint32_t w, h, c;
} okpu_kpu_upload_args;

/* K210_ADD_PADDING (main -> KPU RAM as 4x4 maps) / K210_REMOVE_PADDING (main -> main). */
typedef struct okpu_kpu_padding_args {
    const uint8_t *in;
    uint8_t *out;
    uint32_t channels;
} okpu_kpu_padding_args;

struct okpu_run_ctx;
int okpu_step_kpu_conv(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_kpu_upload(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_kpu_add_padding(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_kpu_remove_padding(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);

#endif

// SPDX-License-Identifier: Apache-2.0
/* The KPU steps: convolutions on the backend, and the CPU's moves into and out of KPU RAM. */
#include <string.h>

#include "../kernels/kernels.h"
#include "../kpu/kpu_layout.h"
#include "plan.h"

int okpu_step_kpu_conv(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_kpu_conv_args *a = (const okpu_kpu_conv_args *)args;
    uint8_t raw[KPU_ARGS_BYTES];
    uint32_t b;
    if (a->job.batches > 1u && ctx->kpu->run_batches)
        return ctx->kpu->run_batches(ctx->kpu, &a->job, err);
    memcpy(raw, a->job.raw_args, KPU_ARGS_BYTES);
    for (b = 0; b < a->job.batches || b == 0; b++) {
        okpu_kpu_layer_job job;
        int rc;
        okpu_kpu_job_batch(&a->job, b, raw, &job);
        rc = ctx->kpu->run_layer(ctx->kpu, &job, err);
        if (rc != OKPU_OK)
            return rc;
    }
    return OKPU_OK;
}

/* Channels [first, end) of the maps, counted batch after batch; each channel's bytes in KPU RAM are its own (the
 * emulator's channel tasks upload the same way). */
static void upload_range(const void *args, size_t first, size_t end)
{
    const okpu_kpu_upload_args *a = (const okpu_kpu_upload_args *)args;
    const size_t map = (size_t)a->w * a->h * a->c;

    while (first < end) {
        const uint32_t b = (uint32_t)(first / a->c), c0 = (uint32_t)(first % a->c);
        const size_t left = end - (size_t)b * a->c;
        const uint32_t c1 = left < a->c ? (uint32_t)left : a->c;
        okpu_kpu_layout_upload_channels(a->kpu_ram, a->row + b * a->rows_per_batch, a->src + b * map, a->w, a->h, c0,
                                        c1);
        first = (size_t)b * a->c + c1;
    }
}

int okpu_step_kpu_upload(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_kpu_upload_args *a = (const okpu_kpu_upload_args *)args;
    (void)err;
    okpu_step_parallel(ctx, (size_t)a->batches * a->c, (size_t)a->w * a->h, 1, upload_range, args);
    return OKPU_OK;
}

OKPU_DEFINE_STEP(okpu_step_kpu_add_padding, okpu_kpu_padding_args, okpu_k_add_padding(a->in, a->out, a->channels))
OKPU_DEFINE_STEP(okpu_step_kpu_remove_padding, okpu_kpu_padding_args,
                 okpu_k_remove_padding(a->in, a->out, a->channels))

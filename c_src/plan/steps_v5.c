// SPDX-License-Identifier: Apache-2.0
/* The kmodel v5 steps: KPU downloads and the stackvm's tensor functions (kernels/v5_tensor.c). */
#include "../core/error.h"
#include "../kernels/v5_kernels.h"
#include "../kpu/kpu_layout.h"
#include "plan.h"

int okpu_step_v5_download(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v5_download_args *a = (const okpu_v5_download_args *)args;
    const size_t map = (size_t)a->w * a->h * a->c;
    uint32_t b;
    (void)ctx, (void)err;
    for (b = 0; b < a->batches; b++)
        okpu_kpu_layout_download(a->kpu_ram, a->row + b * a->rows_per_batch, a->dst + b * map, a->w, a->h, a->c);
    return OKPU_OK;
}

OKPU_DEFINE_STEP(okpu_step_v5_copy, okpu_v5_copy_args, okpu_v5_k_copy(a))
OKPU_DEFINE_STEP(okpu_step_v5_quantize, okpu_v5_quant_args, okpu_v5_k_quantize(a))
OKPU_DEFINE_STEP(okpu_step_v5_dequantize, okpu_v5_quant_args, okpu_v5_k_dequantize(a))
OKPU_DEFINE_STEP(okpu_step_v5_pad, okpu_v5_pad_args, okpu_v5_k_pad(a))
OKPU_DEFINE_STEP(okpu_step_v5_conv2d, okpu_v5_conv2d_args, okpu_v5_k_conv2d(a))
OKPU_DEFINE_STEP(okpu_step_v5_window, okpu_v5_window_args, okpu_v5_k_window(a))
OKPU_DEFINE_STEP(okpu_step_v5_reduce, okpu_v5_reduce_args, okpu_v5_k_reduce(a))
OKPU_DEFINE_STEP(okpu_step_v5_softmax, okpu_v5_softmax_args, okpu_v5_k_softmax(a))
OKPU_DEFINE_STEP(okpu_step_v5_binary, okpu_v5_binary_args, okpu_v5_k_binary(a))
OKPU_DEFINE_STEP(okpu_step_v5_lut, okpu_v5_lut_args, okpu_v5_k_lut(a))
OKPU_DEFINE_STEP(okpu_step_v5_resize, okpu_v5_resize_args, okpu_v5_k_resize(a))
OKPU_DEFINE_STEP(okpu_step_v5_matmul, okpu_v5_matmul_args, okpu_v5_k_matmul(a))
OKPU_DEFINE_STEP(okpu_step_v5_convert, okpu_v5_convert_args, okpu_v5_k_convert(a))
OKPU_DEFINE_STEP(okpu_step_v5_unary, okpu_v5_unary_args, okpu_v5_k_unary(a))
OKPU_DEFINE_STEP(okpu_step_v5_arg, okpu_v5_arg_args, okpu_v5_k_arg(a))

/* GATHER: indices computed while running are checked here (constant ones were checked at load). */
int okpu_step_v5_gather(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v5_gather_args *a = (const okpu_v5_gather_args *)args;
    int64_t bad = 0;
    if (okpu_v5_k_gather(a, &bad) == 0)
        return OKPU_OK;
    return okpu_fail(err, OKPU_ERR_RUN_MODEL, ctx->layer, ctx->body_offset,
                     "stackvm GATHER at byte %ld: index %lld computed by the model is outside its axis of %lu; "
                     "expected 0 .. %lu (the model or its input is wrong)",
                     ctx->body_offset, (long long)bad, (unsigned long)a->axis_dim, (unsigned long)a->axis_dim - 1u);
}

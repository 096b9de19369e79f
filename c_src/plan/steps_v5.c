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
/* quantize / dequantize over [first, end) of the outermost axis longer than one (the elements are independent):
 * the same walk on a copy of the arguments cut to that part. */
static uint32_t split_axis(const okpu_v5_nd *nd)
{
    uint32_t k = 0;
    while (k + 1u < nd->rank && nd->shape[k] == 1u)
        k++;
    return k;
}

static void quant_part(const okpu_v5_quant_args *a, size_t first, size_t end, size_t src_size, size_t dst_size,
                       void (*kernel)(const okpu_v5_quant_args *))
{
    okpu_v5_quant_args part = *a;
    const uint32_t k = split_axis(&a->nd);

    part.src += (int64_t)first * a->nd.in_stride[k] * (int64_t)src_size;
    part.dst += (int64_t)first * a->nd.out_stride[k] * (int64_t)dst_size;
    part.nd.shape[k] = (uint32_t)(end - first);
    kernel(&part);
}

static void quantize_part(const void *args, size_t first, size_t end)
{
    quant_part(args, first, end, 4, 1, okpu_v5_k_quantize);
}

static void dequantize_part(const void *args, size_t first, size_t end)
{
    quant_part(args, first, end, 1, 4, okpu_v5_k_dequantize);
}

/* The walk's length along its split axis (0 for rank 0), and the elements of each of its parts. */
static size_t quant_parts(const okpu_v5_quant_args *a)
{
    return a->nd.rank ? a->nd.shape[split_axis(&a->nd)] : 0u;
}

static size_t quant_part_elements(const okpu_v5_quant_args *a)
{
    size_t n = 1;
    uint32_t r;
    for (r = split_axis(&a->nd) + 1u; r < a->nd.rank; r++)
        n *= a->nd.shape[r];
    return n;
}

static void quant_step(const okpu_run_ctx *ctx, const okpu_v5_quant_args *a, okpu_range_fn part,
                       void (*kernel)(const okpu_v5_quant_args *))
{
    if (quant_parts(a) > 1u)
        okpu_step_parallel(ctx, quant_parts(a), quant_part_elements(a), 1, part, a);
    else
        kernel(a);
}

int okpu_step_v5_quantize(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    (void)err;
    quant_step(ctx, args, quantize_part, okpu_v5_k_quantize);
    return OKPU_OK;
}

int okpu_step_v5_dequantize(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    (void)err;
    quant_step(ctx, args, dequantize_part, okpu_v5_k_dequantize);
    return OKPU_OK;
}
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

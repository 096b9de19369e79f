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

/* Steps split over the threads run [first, end) of a walk's outermost axis longer than one (the last when none is):
 * the same walk on a copy of the arguments cut to that part. */
static uint32_t split_axis(const uint32_t *shape, uint32_t rank)
{
    uint32_t k = 0;
    while (k + 1u < rank && shape[k] == 1u)
        k++;
    return k;
}

/* Elements under one index of axis k: the product of the extents after it. */
static size_t elements_after(const uint32_t *shape, uint32_t rank, uint32_t k)
{
    size_t n = 1;
    for (k++; k < rank; k++)
        n *= shape[k];
    return n;
}

static uint32_t nd_split_axis(const okpu_v5_nd *nd)
{
    return split_axis(nd->shape, nd->rank);
}

/* May a walk writing with `out_stride` be split on axis k, its parts run in any order? Each index of k must write bytes
 * no other index writes: |out_stride[k]| at least the span the axes after it cover (a file may give a stride of 0, or
 * overlapping ones), and every extent >= 1. What the step reads must also miss what it writes (apart). */
static int parts_apart(const uint32_t *shape, const int32_t *out_stride, uint32_t rank, uint32_t k)
{
    int64_t span = 1;
    uint32_t r;
    for (r = 0; r < rank; r++)
        if (shape[r] == 0u)
            return 0;
    for (r = k + 1u; r < rank; r++)
        span += (out_stride[r] < 0 ? -(int64_t)out_stride[r] : (int64_t)out_stride[r]) * ((int64_t)shape[r] - 1);
    return (out_stride[k] < 0 ? -(int64_t)out_stride[k] : (int64_t)out_stride[k]) >= span;
}

/* Do the bytes a walk of `shape` reads (in_stride from src) miss the bytes it writes (out_stride from dst)? */
static int apart(const uint32_t *shape, uint32_t rank, const int32_t *in_stride, const uint8_t *src, size_t in_size,
                 const int32_t *out_stride, const uint8_t *dst, size_t out_size)
{
    return okpu_v5_apart(rank, shape, in_stride, src, in_size, shape, out_stride, dst, out_size);
}

/* COPY over [first, end) of its outermost axis longer than one, when what it reads and what it writes are apart. */
static void copy_part(const void *args, size_t first, size_t end)
{
    okpu_v5_copy_args part = *(const okpu_v5_copy_args *)args;
    const uint32_t k = nd_split_axis(&part.nd);

    part.src += (int64_t)first * part.nd.in_stride[k] * (int64_t)part.esize;
    part.dst += (int64_t)first * part.nd.out_stride[k] * (int64_t)part.esize;
    part.nd.shape[k] = (uint32_t)(end - first);
    okpu_v5_k_copy(&part);
}

int okpu_step_v5_copy(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v5_copy_args *a = (const okpu_v5_copy_args *)args;
    const uint32_t k = nd_split_axis(&a->nd);
    (void)err;
    if (!a->nd.rank || !parts_apart(a->nd.shape, a->nd.out_stride, a->nd.rank, k) ||
        !apart(a->nd.shape, a->nd.rank, a->nd.in_stride, a->src, a->esize, a->nd.out_stride, a->dst, a->esize)) {
        okpu_v5_k_copy(a);
        return OKPU_OK;
    }
    okpu_step_parallel(ctx, a->nd.shape[k], elements_after(a->nd.shape, a->nd.rank, k), 1, copy_part, a);
    return OKPU_OK;
}

/* quantize / dequantize: the elements are independent. */
static void quant_part(const okpu_v5_quant_args *a, size_t first, size_t end, size_t src_size, size_t dst_size,
                       void (*kernel)(const okpu_v5_quant_args *))
{
    okpu_v5_quant_args part = *a;
    const uint32_t k = nd_split_axis(&a->nd);

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
    return a->nd.rank ? a->nd.shape[nd_split_axis(&a->nd)] : 0u;
}

static size_t quant_part_elements(const okpu_v5_quant_args *a)
{
    return elements_after(a->nd.shape, a->nd.rank, nd_split_axis(&a->nd));
}

static void quant_step(const okpu_run_ctx *ctx, const okpu_v5_quant_args *a, size_t src_size, size_t dst_size,
                       okpu_range_fn part, void (*kernel)(const okpu_v5_quant_args *))
{
    const okpu_v5_nd *nd = &a->nd;
    if (quant_parts(a) > 1u && parts_apart(nd->shape, nd->out_stride, nd->rank, nd_split_axis(nd)) &&
        apart(nd->shape, nd->rank, nd->in_stride, a->src, src_size, nd->out_stride, a->dst, dst_size))
        okpu_step_parallel(ctx, quant_parts(a), quant_part_elements(a), 1, part, a);
    else
        kernel(a);
}

int okpu_step_v5_quantize(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    (void)err;
    quant_step(ctx, args, 4, 1, quantize_part, okpu_v5_k_quantize);
    return OKPU_OK;
}

int okpu_step_v5_dequantize(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    (void)err;
    quant_step(ctx, args, 1, 4, dequantize_part, okpu_v5_k_dequantize);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_v5_pad, okpu_v5_pad_args, okpu_v5_k_pad(a))
OKPU_DEFINE_STEP(okpu_step_v5_conv2d, okpu_v5_conv2d_args, okpu_v5_k_conv2d(a))

/* REDUCE_WINDOW2D by channels (by batches when there are several): each output plane reads its input plane alone. */
static void window_part(const void *args, size_t first, size_t end)
{
    okpu_v5_window_args part = *(const okpu_v5_window_args *)args;
    const int k = part.n > 1u ? 0 : 1; /* the axis split */

    part.src += (int64_t)first * part.in_stride[k] * 4;
    part.dst += (int64_t)first * part.out_stride[k] * 4;
    if (k == 0)
        part.n = (uint32_t)(end - first);
    else
        part.c = (uint32_t)(end - first);
    okpu_v5_k_window(&part);
}

int okpu_step_v5_window(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v5_window_args *a = (const okpu_v5_window_args *)args;
    const uint32_t in_shape[4] = {a->n, a->c, a->ih, a->iw}, out_shape[4] = {a->n, a->c, a->oh, a->ow};
    const uint32_t k = a->n > 1u ? 0u : 1u; /* the axis split */
    /* taps of one output plane, bounded (only the threshold reads it) */
    const uint64_t plane = (uint64_t)a->oh * a->ow, taps = (uint64_t)a->fh * a->fw;
    const size_t plane_work = (size_t)((plane < 65536u ? plane : 65536u) * (taps < 1024u ? taps : 1024u));
    (void)err;
    if (!parts_apart(out_shape, a->out_stride, 4, k) || a->ih == 0u || a->iw == 0u ||
        !okpu_v5_apart(4, in_shape, a->in_stride, a->src, 4, out_shape, a->out_stride, a->dst, 4)) {
        okpu_v5_k_window(a);
        return OKPU_OK;
    }
    okpu_step_parallel(ctx, out_shape[k], (k == 0u ? a->c : 1u) * plane_work, 1, window_part, a);
    return OKPU_OK;
}

OKPU_DEFINE_STEP(okpu_step_v5_reduce, okpu_v5_reduce_args, okpu_v5_k_reduce(a))
OKPU_DEFINE_STEP(okpu_step_v5_softmax, okpu_v5_softmax_args, okpu_v5_k_softmax(a))

/* BINARY: the elements are independent. */
static void binary_part(const void *args, size_t first, size_t end)
{
    okpu_v5_binary_args part = *(const okpu_v5_binary_args *)args;
    const uint32_t k = split_axis(part.shape, part.rank);

    part.a += (int64_t)first * part.a_stride[k] * 4;
    part.b += (int64_t)first * part.b_stride[k] * 4;
    part.dst += (int64_t)first * part.out_stride[k] * 4;
    part.shape[k] = (uint32_t)(end - first);
    okpu_v5_k_binary(&part);
}

int okpu_step_v5_binary(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v5_binary_args *a = (const okpu_v5_binary_args *)args;
    const uint32_t k = split_axis(a->shape, a->rank);
    (void)err;
    if (!a->rank || !parts_apart(a->shape, a->out_stride, a->rank, k) ||
        !apart(a->shape, a->rank, a->a_stride, a->a, 4, a->out_stride, a->dst, 4) ||
        !apart(a->shape, a->rank, a->b_stride, a->b, 4, a->out_stride, a->dst, 4)) {
        okpu_v5_k_binary(a);
        return OKPU_OK;
    }
    okpu_step_parallel(ctx, a->shape[k], elements_after(a->shape, a->rank, k), 1, binary_part, a);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_v5_lut, okpu_v5_lut_args, okpu_v5_k_lut(a))
/* RESIZE_IMAGE by channels (by batches when there are several): each output plane reads its input plane alone. */
static void resize_part(const void *args, size_t first, size_t end)
{
    okpu_v5_resize_args part = *(const okpu_v5_resize_args *)args;
    const int k = part.n > 1u ? 0 : 1; /* the axis split */
    const int64_t es = part.is_u8 ? 1 : 4;

    part.src += (int64_t)first * part.in_stride[k] * es;
    part.dst += (int64_t)first * part.out_stride[k] * es;
    if (k == 0)
        part.n = (uint32_t)(end - first);
    else
        part.c = (uint32_t)(end - first);
    okpu_v5_k_resize(&part);
}

/* An output element of RESIZE_IMAGE (its source coordinates in float, four taps when bilinear) costs about four of
 * quantize. */
#define RESIZE_COST 4u

int okpu_step_v5_resize(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v5_resize_args *a = (const okpu_v5_resize_args *)args;
    const uint32_t in_shape[4] = {a->n, a->c, a->ih, a->iw}, out_shape[4] = {a->n, a->c, a->oh, a->ow};
    const uint32_t k = a->n > 1u ? 0u : 1u;
    const size_t es = a->is_u8 ? 1u : 4u;
    (void)err;
    if (!parts_apart(out_shape, a->out_stride, 4, k) || a->ih == 0u || a->iw == 0u ||
        !okpu_v5_apart(4, in_shape, a->in_stride, a->src, es, out_shape, a->out_stride, a->dst, es)) {
        okpu_v5_k_resize(a);
        return OKPU_OK;
    }
    okpu_step_parallel(ctx, out_shape[k], elements_after(out_shape, 4, k) * RESIZE_COST, 1, resize_part, a);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_v5_matmul, okpu_v5_matmul_args, okpu_v5_k_matmul(a))

/* CONVERT: the elements are independent. */
static void convert_part(const void *args, size_t first, size_t end)
{
    okpu_v5_convert_args part = *(const okpu_v5_convert_args *)args;
    const uint32_t k = nd_split_axis(&part.nd);

    part.src += (int64_t)first * part.nd.in_stride[k] * (int64_t)okpu_v5_convert_bytes(part.in_dt);
    part.dst += (int64_t)first * part.nd.out_stride[k] * (int64_t)okpu_v5_convert_bytes(part.out_dt);
    part.nd.shape[k] = (uint32_t)(end - first);
    okpu_v5_k_convert(&part);
}

int okpu_step_v5_convert(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v5_convert_args *a = (const okpu_v5_convert_args *)args;
    const okpu_v5_nd *nd = &a->nd;
    const uint32_t k = nd_split_axis(nd);
    (void)err;
    if (!nd->rank || nd->shape[k] < 2u || !parts_apart(nd->shape, nd->out_stride, nd->rank, k) ||
        !apart(nd->shape, nd->rank, nd->in_stride, a->src, okpu_v5_convert_bytes(a->in_dt), nd->out_stride, a->dst,
               okpu_v5_convert_bytes(a->out_dt))) {
        okpu_v5_k_convert(a);
        return OKPU_OK;
    }
    okpu_step_parallel(ctx, nd->shape[k], elements_after(nd->shape, nd->rank, k), 1, convert_part, a);
    return OKPU_OK;
}
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

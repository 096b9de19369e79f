// SPDX-License-Identifier: Apache-2.0
/* The nncase v0.2 CPU op steps: each calls its kernel with the arguments kmodel_v4.c resolved and validated at load
 * (nothing here can fail). */
#include <string.h>

#include "../core/bytes.h"
#include "../kernels/neutral_kernels.h"
#include "../kernels/nnil.h"
#include "plan.h"

/* May an elementwise step's ranges run in any order? The loader lets these steps work in place, so an input may overlap
 * the output: that is safe when it is the output itself, element for element (`same` and equal starts), and
 * otherwise only when they miss each other (else one range would write what another reads). */
static int ranges_apart(const uint8_t *in, size_t in_bytes, const uint8_t *out, size_t out_bytes, int same)
{
    return (same && in == out) || okpu_bytes_apart(in, in_bytes, out, out_bytes);
}

OKPU_DEFINE_STEP(okpu_step_v4_binary, okpu_v4_binary_args,
                 okpu_v4k_binary(a->a, a->b, a->out, a->sa, a->sb, a->so, a->op, a->lo, a->hi))
/* Same-shape inputs, elements [first, end): the kernel on a flat run of them. */
static void qbinary_range(const void *args, size_t first, size_t end)
{
    const okpu_v4_qbinary_args *a = args;
    const int32_t flat[4] = {1, 1, 1, (int32_t)(end - first)}; /* end - first <= the tensor's int32 element count */

    okpu_v4k_quantized_binary(a->bin.a + first, a->bin.b + first, a->bin.out + first, flat, flat, flat, a->bin.op, &a->q,
                              a->round);
}

/* Broadcast shapes: the output's first axis of more than one element (the axes before it are 1 in every shape), rows
 * [first, end) of it; an input of extent 1 on that axis is read whole by every range. */
static int first_wide_axis(const int32_t so[4])
{
    int k = 0;
    while (k < 3 && so[k] == 1)
        k++;
    return k;
}

static size_t elements_after(const int32_t s[4], int k)
{
    size_t n = 1;
    for (k++; k < 4; k++)
        n *= (size_t)s[k];
    return n;
}

static void qbinary_bcast_range(const void *args, size_t first, size_t end)
{
    const okpu_v4_qbinary_args *a = args;
    const okpu_v4_binary_args *b = &a->bin;
    const int k = first_wide_axis(b->so);
    int32_t sa[4], sb[4], so[4];
    memcpy(sa, b->sa, sizeof sa);
    memcpy(sb, b->sb, sizeof sb);
    memcpy(so, b->so, sizeof so);
    so[k] = (int32_t)(end - first); /* <= so[k] */
    if (sa[k] != 1)
        sa[k] = so[k];
    if (sb[k] != 1)
        sb[k] = so[k];
    okpu_v4k_quantized_binary(b->a + (b->sa[k] == 1 ? 0 : first * elements_after(b->sa, k)),
                              b->b + (b->sb[k] == 1 ? 0 : first * elements_after(b->sb, k)),
                              b->out + first * elements_after(b->so, k), sa, sb, so, b->op, &a->q, a->round);
}

/* A broadcast element costs about ten of quantize (measured: 3 ns against 0.3; ULFFD's softmax pair, 8840 outputs). */
#define QBINARY_BCAST_COST 10u

int okpu_step_v4_quant_binary(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v4_qbinary_args *a = args;
    const okpu_v4_binary_args *b = &a->bin;

    const size_t n = (size_t)b->so[0] * b->so[1] * b->so[2] * b->so[3];
    const size_t na = (size_t)b->sa[0] * b->sa[1] * b->sa[2] * b->sa[3];
    const size_t nb = (size_t)b->sb[0] * b->sb[1] * b->sb[2] * b->sb[3];
    const int k = first_wide_axis(b->so);
    (void)err;
    if (memcmp(b->sa, b->sb, sizeof b->sa) == 0 && memcmp(b->sa, b->so, sizeof b->sa) == 0 &&
        ranges_apart(b->a, n, b->out, n, 1) && ranges_apart(b->b, n, b->out, n, 1))
        okpu_step_parallel(ctx, n, 1, 1, qbinary_range, a);
    else if (okpu_bytes_apart(b->a, na, b->out, n) && okpu_bytes_apart(b->b, nb, b->out, n))
        okpu_step_parallel(ctx, (size_t)b->so[k], elements_after(b->so, k) * QBINARY_BCAST_COST, 1,
                           qbinary_bcast_range, a);
    else
        okpu_v4k_quantized_binary(b->a, b->b, b->out, b->sa, b->sb, b->so, b->op, &a->q, a->round);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_v4_concat, okpu_v4_concat_args,
                 okpu_v4k_concat(a->out, a->inputs, a->dims, a->count, a->inner, a->outer))
OKPU_DEFINE_STEP(okpu_step_v4_conv2d, okpu_v4_conv_args,
                 okpu_v4k_conv2d(a->in, a->out, a->weights, a->bias, a->in_shape, a->groups, a->out_channels, &a->win, a->lo, a->hi))
OKPU_DEFINE_STEP(okpu_step_v4_quant_conv2d, okpu_v4_qconv_args,
                 okpu_v4k_quantized_conv2d(a->conv.in, a->conv.out, a->conv.weights, a->conv.bias, a->conv.in_shape, a->conv.groups,
                                      a->conv.out_channels, &a->conv.win, &a->q, a->round))
OKPU_DEFINE_STEP(okpu_step_v4_conv2d_transpose, okpu_v4_conv_transpose_args,
                 okpu_v4k_conv2d_transpose(a->in, a->out, a->weights, a->in_shape, a->out_shape, a->groups, &a->win, a->lo, a->hi))
static void dequantize_range(const void *args, size_t first, size_t end)
{
    const okpu_v4_quant_args *a = args;
    okpu_v4k_dequantize(a->in + first, a->out + first * 4u, (uint32_t)(end - first), a->zero_point, a->scale);
}

/* Ranges of even length but the last: the kernel rounds pairs half to even and an odd count's last element half away
 * from zero (nncase's tail), so the last range keeps the tail. */
static void quantize_range(const void *args, size_t first, size_t end)
{
    const okpu_v4_quant_args *a = args;
    okpu_v4k_quantize(a->in + first * 4u, a->out + first, (uint32_t)(end - first), a->zero_point, a->scale);
}

int okpu_step_v4_dequantize(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v4_quant_args *a = args;
    (void)err;
    if (ranges_apart(a->in, a->count, a->out, (size_t)a->count * 4u, 0))
        okpu_step_parallel(ctx, a->count, 1, 1, dequantize_range, args);
    else
        dequantize_range(args, 0, a->count);
    return OKPU_OK;
}

int okpu_step_v4_quantize(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v4_quant_args *a = args;
    (void)err;
    if (ranges_apart(a->in, (size_t)a->count * 4u, a->out, a->count, 0))
        okpu_step_parallel(ctx, a->count, 1, 2, quantize_range, args);
    else
        quantize_range(args, 0, a->count);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_v4_matmul, okpu_v4_matmul_args,
                 okpu_v4k_matmul(a->a, a->b, a->out, a->bias, a->rows, a->cols, a->b_cols, a->lo, a->hi))
OKPU_DEFINE_STEP(okpu_step_v4_quant_matmul, okpu_v4_qmatmul_args,
                 okpu_v4k_quantized_matmul(a->mm.a, a->mm.b, a->mm.out, a->mm.bias, a->mm.rows, a->mm.cols, a->mm.b_cols, a->a_offset,
                                      a->b_offset, a->out_mul, a->out_shift, a->out_offset, a->round))
/* An element that pad or transpose moves costs about three of quantize (0.3-0.7 ns here against 0.1: strided or
 * short copies; RFB-320's space-to-batch pads and transposes of 19-32 thousand elements took 6-15 us each). */
#define MOVE_COST 3u

static void pad_range(const void *args, size_t first, size_t end)
{
    const okpu_v4_pad_args *a = args;
    okpu_v4k_pad_planes(a->in, a->out, a->in_shape, a->paddings, a->value, a->elem_size, first, end);
}

/* By output planes (each written whole by one range), when the output misses the input. */
int okpu_step_v4_pad(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v4_pad_args *a = args;
    int32_t os[4];
    int k;
    (void)err;
    for (k = 0; k < 4; k++)
        os[k] = a->in_shape[k] + a->paddings[2 * k] + a->paddings[2 * k + 1];
    if (ranges_apart(a->in, elements_after(a->in_shape, -1) * a->elem_size, a->out,
                     elements_after(os, -1) * a->elem_size, 0))
        okpu_step_parallel(ctx, (size_t)os[0] * (size_t)os[1], (size_t)os[2] * (size_t)os[3] * MOVE_COST, 1,
                           pad_range, args);
    else
        okpu_v4k_pad(a->in, a->out, a->in_shape, a->paddings, a->value, a->elem_size);
    return OKPU_OK;
}
/* Rows [first, end) of the output's first axis of more than one element, k, with every axis before it 1 in the input
 * too (reduce_split_axis): a kept axis (the loader allows out_shape[k] = 1 or in_shape[k]), so the rows are the same
 * reduce over a run of k, each output folding the same inputs in the same order. Mean multiplies by the same
 * out/in count ratio: both counts exact in float (under 2^24: reduce_split_axis), one correctly rounded quotient. */
static void reduce_range(const void *args, size_t first, size_t end)
{
    const okpu_v4_reduce_args *a = args;
    const int k = first_wide_axis(a->out_shape);
    int32_t is[4], os[4];
    memcpy(is, a->in_shape, sizeof is);
    memcpy(os, a->out_shape, sizeof os);
    is[k] = os[k] = (int32_t)(end - first); /* <= os[k] */
    okpu_v4k_reduce(a->in + first * elements_after(a->in_shape, k) * 4u,
                    a->out + first * elements_after(a->out_shape, k) * 4u, a->op, is, os, a->init);
}

/* The axis reduce_range splits, or -1 when the reduce runs whole: the output's first axis of more than one element,
 * if no input axis before it is reduced and the input has fewer than 2^24 elements. */
static int reduce_split_axis(const okpu_v4_reduce_args *a)
{
    const int k = first_wide_axis(a->out_shape);
    int j;
    if (a->out_shape[k] < 2 || elements_after(a->in_shape, -1) >= (1u << 24))
        return -1;
    for (j = 0; j < k; j++)
        if (a->in_shape[j] != 1)
            return -1;
    return k;
}

/* An input element of reduce costs about three of quantize (a float fold through the op's switch: ULFFD's 4420 pairs
 * took 6 us). */
#define REDUCE_COST 3u

int okpu_step_v4_reduce(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v4_reduce_args *a = args;
    const int k = reduce_split_axis(a);
    (void)err;
    if (k >= 0 && ranges_apart(a->in, elements_after(a->in_shape, -1) * 4u, a->out,
                               elements_after(a->out_shape, -1) * 4u, 0))
        okpu_step_parallel(ctx, (size_t)a->out_shape[k], elements_after(a->in_shape, k) * REDUCE_COST, 1, reduce_range,
                           args);
    else
        okpu_v4k_reduce(a->in, a->out, a->op, a->in_shape, a->out_shape, a->init);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_v4_reduce_window2d, okpu_v4_reduce_window_args,
                 okpu_v4k_reduce_window2d(a->in, a->out, a->op, a->in_shape, &a->win, a->init, a->lo, a->hi))
OKPU_DEFINE_STEP(okpu_step_v4_cpu_reduce_window2d, okpu_v4_reduce_window_args,
                 okpu_v4k_cpu_reduce_window2d(a->in, a->out, a->op, a->in_shape, &a->win, a->init, a->lo, a->hi))
OKPU_DEFINE_STEP(okpu_step_v4_memory_copy, okpu_v4_copy_args, memmove(a->out, a->in, a->bytes))
OKPU_DEFINE_STEP(okpu_step_v4_resize, okpu_v4_resize_args,
                 okpu_v4k_resize(a->in, a->out, a->in_shape, a->out_h, a->out_w, a->mode, a->align_corners, a->elem_size))
OKPU_DEFINE_STEP(okpu_step_v4_softmax, okpu_v4_softmax_args, okpu_v4k_softmax(a->in, a->out, a->inner, a->outer, a->beta))
static void transpose_range(const void *args, size_t first, size_t end)
{
    const okpu_v4_transpose_args *a = args;
    okpu_v4k_transpose_part(a->in, a->out, a->in_shape, a->perm, a->elem_size, first, end);
}

/* By the runs of its outer loops (okpu_v4k_transpose_outer), when the output misses the input and each run writes a
 * block of its own: runs whose elements interleave made RFB-320's batch-to-space transposes ten times slower on two
 * threads than on one (the threads writing the same cache lines). */
int okpu_step_v4_transpose(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v4_transpose_args *a = args;
    const size_t n = elements_after(a->in_shape, -1);
    int contiguous;
    const size_t runs = okpu_v4k_transpose_outer(a->in_shape, a->perm, &contiguous);
    (void)err;
    if (contiguous && ranges_apart(a->in, n * a->elem_size, a->out, n * a->elem_size, 0))
        okpu_step_parallel(ctx, runs, n / runs * MOVE_COST, 1, transpose_range, args);
    else
        okpu_v4k_transpose(a->in, a->out, a->in_shape, a->perm, a->elem_size);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_v4_strided_slice, okpu_v4_slice_args,
                 okpu_v4k_strided_slice(a->in, a->out, a->in_shape, a->begin, a->end, a->strides, a->elem_size))
static void unary_range(const void *args, size_t first, size_t end)
{
    const okpu_v4_unary_args *a = args;
    okpu_v4k_unary(a->in + first * 4u, a->out + first * 4u, (uint32_t)(end - first), a->op);
}

/* An element of exp, log, sin or cos (the core's own functions) costs about ten of quantize (3 ns against 0.3). */
#define UNARY_COST 10u

int okpu_step_v4_unary(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_v4_unary_args *a = args;
    (void)err;
    if (ranges_apart(a->in, (size_t)a->count * 4u, a->out, (size_t)a->count * 4u, 1))
        okpu_step_parallel(ctx, a->count, UNARY_COST, 1, unary_range, args);
    else
        unary_range(args, 0, a->count);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_v4_nnil, okpu_v4_nnil_args, okpu_nnil_unary(a->program, a->length, a->in, a->out, a->count))
OKPU_DEFINE_STEP(okpu_step_v4_table_lookup1d, okpu_v4_lookup_args, okpu_v4k_table_lookup1d(a->in, a->out, a->count, a->table))
OKPU_DEFINE_STEP(okpu_step_v4_cpu_conv2d, okpu_v4_conv_args,
                 okpu_v4k_cpu_conv2d(a->in, a->out, a->weights, a->bias, a->in_shape, a->out_channels, &a->win, a->lo, a->hi))
OKPU_DEFINE_STEP(okpu_step_v4_cpu_depthwise_conv2d, okpu_v4_conv_args,
                 okpu_v4k_cpu_depthwise_conv2d(a->in, a->out, a->weights, a->bias, a->in_shape, &a->win, a->lo, a->hi))
OKPU_DEFINE_STEP(okpu_step_v4_cpu_quant_conv2d, okpu_v4_qconv_args,
                 okpu_v4k_cpu_quantized_conv2d(a->conv.in, a->conv.out, a->conv.weights, a->conv.bias, a->conv.in_shape,
                                          a->conv.out_channels, &a->conv.win, &a->q, a->round))
OKPU_DEFINE_STEP(okpu_step_v4_cpu_quant_depthwise_conv2d, okpu_v4_qconv_args,
                 okpu_v4k_cpu_quantized_depthwise_conv2d(a->conv.in, a->conv.out, a->conv.weights, a->conv.bias, a->conv.in_shape,
                                                    &a->conv.win, &a->q, a->round))

// SPDX-License-Identifier: Apache-2.0
/* Arguments of the nncase v0.2 CPU op steps (steps_neutral.def). Included by plan.h.
 *
 * Every pointer is resolved at load (main buffer, KPU RAM, or tables in the model file) and every field was
 * validated by the front-end (kmodel/kmodel_v4.c); the run functions only call the kernels. Shapes are NCHW
 * int32[4] (NHWC for the cpu_* ops), as the kernels take them. */
#ifndef OKPU_PLAN_STEPS_NEUTRAL_H
#define OKPU_PLAN_STEPS_NEUTRAL_H

#include <stddef.h>
#include <stdint.h>

#include "../kernels/neutral_kernels.h"
#include "../okpu.h"

/* binary (float, broadcasting), clamped to [lo, hi] */
typedef struct okpu_v4_binary_args {
    const uint8_t *a, *b;
    uint8_t *out;
    int32_t sa[4], sb[4], so[4];
    int32_t op;
    float lo, hi;
} okpu_v4_binary_args;

/* quantized_binary (u8): the binary's ranges, shapes and op (lo, hi unused) */
typedef struct okpu_v4_qbinary_args {
    okpu_v4_binary_args bin;
    okpu_v4_qbin_params q;
    okpu_round_mode round; /* opts.v4_quant_round at load */
} okpu_v4_qbinary_args;

/* concat: `inputs` and `dims` (count of each) live in the step's tail, after this struct. */
typedef struct okpu_v4_concat_args {
    uint8_t *out;
    const uint8_t **inputs;
    int32_t *dims;
    uint32_t count, inner, outer;
} okpu_v4_concat_args;

/* conv2d (NCHW, grouped), cpu_conv2d and cpu_depthwise_conv2d (NHWC; groups unused) */
typedef struct okpu_v4_conv_args {
    const uint8_t *in;
    uint8_t *out;
    const uint8_t *weights, *bias;
    int32_t in_shape[4];
    int32_t groups, out_channels;
    okpu_v4_window win;
    float lo, hi;
} okpu_v4_conv_args;

/* quantized_conv2d (NCHW), cpu_quantized_conv2d and cpu_quantized_depthwise_conv2d (NHWC): the convolution's
 * geometry (lo, hi unused) and the quantization */
typedef struct okpu_v4_qconv_args {
    okpu_v4_conv_args conv;
    okpu_v4_qconv_params q;
    okpu_round_mode round; /* opts.v4_quant_round at load */
} okpu_v4_qconv_args;

typedef struct okpu_v4_conv_transpose_args {
    const uint8_t *in;
    uint8_t *out;
    const uint8_t *weights;
    int32_t in_shape[4], out_shape[4];
    int32_t groups;
    okpu_v4_window win;
    float lo, hi;
} okpu_v4_conv_transpose_args;

/* dequantize (u8 -> f32) and quantize (f32 -> u8) of `count` elements */
typedef struct okpu_v4_quant_args {
    const uint8_t *in;
    uint8_t *out;
    uint32_t count;
    int32_t zero_point;
    float scale;
} okpu_v4_quant_args;

typedef struct okpu_v4_matmul_args {
    const uint8_t *a, *b;
    uint8_t *out;
    const uint8_t *bias;
    int32_t rows, cols, b_cols;
    float lo, hi;
} okpu_v4_matmul_args;

/* quantized_matmul: the matmul's ranges and sizes (lo, hi unused) and the quantization */
typedef struct okpu_v4_qmatmul_args {
    okpu_v4_matmul_args mm;
    int32_t a_offset, b_offset, out_mul, out_shift, out_offset;
    okpu_round_mode round; /* opts.v4_quant_round at load */
} okpu_v4_qmatmul_args;

typedef struct okpu_v4_pad_args {
    const uint8_t *in;
    uint8_t *out;
    int32_t in_shape[4];
    int32_t paddings[8];
    uint8_t value[4];
    uint32_t elem_size;
} okpu_v4_pad_args;

typedef struct okpu_v4_reduce_args {
    const uint8_t *in;
    uint8_t *out;
    int32_t op;
    int32_t in_shape[4], out_shape[4];
    float init;
} okpu_v4_reduce_args;

/* reduce_window2d (NCHW) and cpu_reduce_window2d (NHWC) */
typedef struct okpu_v4_reduce_window_args {
    const uint8_t *in;
    uint8_t *out;
    int32_t op;
    int32_t in_shape[4];
    okpu_v4_window win;
    float init, lo, hi;
} okpu_v4_reduce_window_args;

/* memory_copy: memmove of `bytes` */
typedef struct okpu_v4_copy_args {
    const uint8_t *in;
    uint8_t *out;
    size_t bytes;
} okpu_v4_copy_args;

typedef struct okpu_v4_resize_args {
    const uint8_t *in;
    uint8_t *out;
    int32_t in_shape[4];
    int32_t out_h, out_w, mode, align_corners;
    uint32_t elem_size;
} okpu_v4_resize_args;

typedef struct okpu_v4_softmax_args {
    const uint8_t *in;
    uint8_t *out;
    int32_t inner, outer;
    float beta;
} okpu_v4_softmax_args;

typedef struct okpu_v4_transpose_args {
    const uint8_t *in;
    uint8_t *out;
    int32_t in_shape[4], perm[4];
    uint32_t elem_size;
} okpu_v4_transpose_args;

typedef struct okpu_v4_slice_args {
    const uint8_t *in;
    uint8_t *out;
    int32_t in_shape[4], begin[4], end[4], strides[4];
    uint32_t elem_size;
} okpu_v4_slice_args;

typedef struct okpu_v4_unary_args {
    const uint8_t *in;
    uint8_t *out;
    uint32_t count;
    int32_t op;
} okpu_v4_unary_args;

/* nnil_unary_method: the checked program stays in the model file */
typedef struct okpu_v4_nnil_args {
    const uint8_t *program;
    size_t length;
    const uint8_t *in;
    uint8_t *out;
    uint32_t count;
} okpu_v4_nnil_args;

typedef struct okpu_v4_lookup_args {
    const uint8_t *in, *table;
    uint8_t *out;
    uint32_t count;
} okpu_v4_lookup_args;

struct okpu_run_ctx;
#define OKPU_STEP(id, name, type, fn) int fn(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
#include "steps_neutral.def"
#undef OKPU_STEP

#endif

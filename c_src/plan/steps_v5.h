// SPDX-License-Identifier: Apache-2.0
/* Arguments of the kmodel v5 (nncase 1.x) steps (steps_v5.def). Included by plan.h.
 * The stackvm's tensor functions are generic strided N-d kernels; the front-end (kmodel/kmodel_v5_*.c) resolves their
 * register operands (shapes, strides in elements) into these fixed-size records at load, with every pointer and
 * every extent checked, so the kernels below only compute. */
#ifndef OKPU_PLAN_STEPS_V5_H
#define OKPU_PLAN_STEPS_V5_H

#include <stdint.h>

#include "../okpu.h"

#define OKPU_V5_MAX_RANK 6

/* An N-d walk: `shape` in row-major order, the source and destination strides in elements (source strides may be
 * negative: a SLICE with a negative step). rank 0 = one element. */
typedef struct okpu_v5_nd {
    uint32_t rank;
    uint32_t shape[OKPU_V5_MAX_RANK];
    int32_t in_stride[OKPU_V5_MAX_RANK];
    int32_t out_stride[OKPU_V5_MAX_RANK];
} okpu_v5_nd;

/* KPU RAM -> main: `batches` u8 maps of C x H x W from KPU row `row` (rows_per_batch apart) to dense NCHW. */
typedef struct okpu_v5_download_args {
    const uint8_t *kpu_ram;
    uint8_t *dst;
    uint32_t row, rows_per_batch, batches;
    uint32_t w, h, c;
} okpu_v5_download_args;

/* Strided copy of `esize`-byte elements (COPY, SLICE, TRANSPOSE and the k210 copy). */
typedef struct okpu_v5_copy_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t esize;
    okpu_v5_nd nd;
} okpu_v5_copy_args;

/* v5 datatype codes (kmodel-v5.md 2.5) this runtime computes with. */
enum { OKPU_V5_DT_I8 = 0, OKPU_V5_DT_U8 = 4, OKPU_V5_DT_F32 = 9 };

/* QUANTIZE: f32 -> u8/i8, q = clamp(nearbyint(x * scale + bias)); DEQUANTIZE: u8/i8 -> f32, y = q * scale + bias (two
 * roundings each: the Simulator does not fuse them). */
typedef struct okpu_v5_quant_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t qtype; /* OKPU_V5_DT_U8 or OKPU_V5_DT_I8: the integer side */
    float scale, bias;
    okpu_v5_nd nd;
} okpu_v5_quant_args;

/* PAD: out[o] = in[o - before] where that lies inside the input; elsewhere mode 0 (constant) writes `value` (esize
 * bytes), 1 (reflect) reads in[-i] / in[2(n-1)-i], 2 (symmetric) in[-i-1] / in[2n-1-i], 3 (edge) the nearest edge
 * element (the front-end bounds the paddings so that one reflection lands inside). */
typedef struct okpu_v5_pad_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t esize, rank;
    uint32_t in_shape[OKPU_V5_MAX_RANK], out_shape[OKPU_V5_MAX_RANK];
    int32_t in_stride[OKPU_V5_MAX_RANK], out_stride[OKPU_V5_MAX_RANK];
    int32_t before[OKPU_V5_MAX_RANK];
    uint8_t value[4];
    uint32_t mode;
} okpu_v5_pad_args;

/* Float CONV2D, NCHW; weights [oc][ic/groups][kh][kw]; value = bias[oc], then += x * w over ic, ky, kx ascending for
 * in-bounds taps only; clamp. Strides in elements. */
typedef struct okpu_v5_conv2d_args {
    const uint8_t *src, *weights, *bias;
    uint8_t *dst;
    uint32_t n, ic, ih, iw, oc, kh, kw, oh, ow, groups;
    int32_t in_stride[4], w_stride[4], out_stride[4], bias_stride;
    uint16_t stride_h, stride_w, dil_h, dil_w;
    int32_t pad_top, pad_left;
    float clamp_lo, clamp_hi;
} okpu_v5_conv2d_args;

/* REDUCE_WINDOW2D on f32 NCHW: op 0 mean (over the in-bounds taps), 1 min, 2 max, 3 sum; value starts at `init`;
 * then clamp. */
typedef struct okpu_v5_window_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t op, n, c, ih, iw, oh, ow;
    int32_t in_stride[4], out_stride[4];
    uint16_t fh, fw, sh, sw, dh, dw;
    int32_t pad_top, pad_left;
    float init, clamp_lo, clamp_hi;
} okpu_v5_window_args;

/* REDUCE on f32: `walk` visits the input in index order with the output's strides (0 on reduced axes); out_shape /
 * out_stride visit the output (initial values, the mean's division); op 0 mean (divide by `count`), 1 min, 2 max,
 * 3 sum. */
typedef struct okpu_v5_reduce_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t op, count;
    float init;
    okpu_v5_nd walk; /* input shape: in strides, out strides (0 on reduced axes) */
    uint32_t out_shape[OKPU_V5_MAX_RANK]; /* the output on the input's axes (1 where reduced), walk.rank of them */
    int32_t out_stride[OKPU_V5_MAX_RANK];
} okpu_v5_reduce_args;

/* SOFTMAX on f32 along one axis: `nd` walks every position with that axis at extent 1. */
typedef struct okpu_v5_softmax_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t len;
    int32_t in_step, out_step;
    float beta;
    okpu_v5_nd nd;
} okpu_v5_softmax_args;

/* BINARY on f32 with numpy broadcasting resolved into strides (0 on broadcast axes): out = a op b, then clamp.
 * op: 0 add, 1 sub, 2 mul, 3 div, 4 min, 5 max. */
typedef struct okpu_v5_binary_args {
    const uint8_t *a, *b;
    uint8_t *dst;
    uint32_t op, rank;
    uint32_t shape[OKPU_V5_MAX_RANK];
    int32_t a_stride[OKPU_V5_MAX_RANK], b_stride[OKPU_V5_MAX_RANK], out_stride[OKPU_V5_MAX_RANK];
    float clamp_lo, clamp_hi;
} okpu_v5_binary_args;

/* LUT1D on u8: out = table[x] (256 entries). */
typedef struct okpu_v5_lut_args {
    const uint8_t *src, *table;
    uint8_t *dst;
    okpu_v5_nd nd;
} okpu_v5_lut_args;

/* RESIZE_IMAGE on NCHW f32 or u8: mode 0 bilinear, 1 nearest (nncase's reference kernel, kmodel-v5.md section 8). */
typedef struct okpu_v5_resize_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t is_u8, nearest, align_corners, half_pixel;
    uint32_t n, c, ih, iw, oh, ow;
    int32_t in_stride[4], out_stride[4];
} okpu_v5_resize_args;

/* MATMUL on f32, dense: `batch` products of A [M, K] and B [K, N] (B repeated when b_step is 0); out = bias[n] +
 * sum over k ascending; clamp. */
typedef struct okpu_v5_matmul_args {
    const uint8_t *a, *b, *bias;
    uint8_t *dst;
    uint32_t batch, m, k, n, b_step;
    float clamp_lo, clamp_hi;
} okpu_v5_matmul_args;

/* CONVERT: a C cast per element between i8, i16, i32, u8, u16, u32 and f32 (float -> integer truncates; values
 * outside the target type saturate, where C leaves the cast undefined). */
typedef struct okpu_v5_convert_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t in_dt, out_dt;
    okpu_v5_nd nd;
} okpu_v5_convert_args;

/* UNARY and SIGMOID on f32, per element (op: OKPU_V5_UN_*, nncase 1.1.0+'s unary_op numbering; the front-end maps
 * older files' numbers). Transcendental functions are computed in double and rounded once (kernels/fmath.h). */
enum {
    OKPU_V5_UN_ABS = 0, OKPU_V5_UN_ACOS, OKPU_V5_UN_ASIN, OKPU_V5_UN_CEIL, OKPU_V5_UN_COS, OKPU_V5_UN_EXP,
    OKPU_V5_UN_FLOOR, OKPU_V5_UN_LOG, OKPU_V5_UN_NEG, OKPU_V5_UN_ROUND, OKPU_V5_UN_RSQRT, OKPU_V5_UN_SIGN,
    OKPU_V5_UN_SIN, OKPU_V5_UN_SQRT, OKPU_V5_UN_SQUARE, OKPU_V5_UN_TANH, OKPU_V5_UN_ERF = 18,
    OKPU_V5_UN_SIGMOID = 32 /* SIGMOID: 1 / (1 + exp(-x)) */
};
typedef struct okpu_v5_unary_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t op;
    okpu_v5_nd nd;
} okpu_v5_unary_args;

/* REDUCE_ARG on f32 along one axis: `nd` walks every position with that axis at extent 1; the index of the first
 * (select_last: last) maximum (arg_max) or minimum along it, written as i32 or i64 (out_i64). */
typedef struct okpu_v5_arg_args {
    const uint8_t *src;
    uint8_t *dst;
    uint32_t len, arg_max, select_last, out_i64;
    int32_t in_step;
    okpu_v5_nd nd;
} okpu_v5_arg_args;

/* GATHER along `axis`: out[o..., i..., n...] = in[o..., indices[i...], n...] (indices i32, dense, each in
 * 0 .. axis_dim - 1: checked at load when they are constants, while running otherwise). `nd` walks the output
 * (its shape and strides; in_stride unused); in_stride holds the input's strides on its own axes. */
typedef struct okpu_v5_gather_args {
    const uint8_t *src, *indices;
    uint8_t *dst;
    uint32_t esize, axis, in_rank, idx_rank, axis_dim;
    int32_t in_stride[OKPU_V5_MAX_RANK];
    okpu_v5_nd nd;
} okpu_v5_gather_args;

struct okpu_run_ctx;
int okpu_step_v5_download(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_copy(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_quantize(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_dequantize(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_pad(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_conv2d(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_window(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_reduce(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_softmax(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_binary(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_resize(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_matmul(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_convert(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_lut(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_unary(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_arg(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
int okpu_step_v5_gather(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);

#endif

// SPDX-License-Identifier: Apache-2.0
/* kmodel v4 (nncase v0.2) CPU kernels: the "neutral" ops 0x00-0x13 and the CPU NHWC ops 0x1001-0x1005.
 *
 * Semantics follow nncase v0.2.0-beta4's runtime as it runs ON THE K210 (src/common/include/kernels/neutral,
 * kernels/cpu, kernels/riscv): that runtime is C++ built by riscv GCC, which contracts `a*b + c` into a fused
 * multiply-add, so every place nncase writes `acc += a*b` (conv2d, matmul, conv2d_transpose), `q*scale + zero`
 * (dequantize, quantize) or `v0*a0 + v1*a1 + ...` (bilinear resize) uses fmaf() explicitly here, in nncase's
 * loop order. The core is built with -std=c99, which does not contract on its own.
 *
 * Tensors are byte pointers (main-buffer offsets are not aligned): float32 is little-endian via core/bytes.h.
 * Shapes are NCHW int32[4] (NHWC for the cpu_* kernels). Callers (kmodel_v4.c) validate every size, shape and
 * parameter first; kernels never check bounds.
 *
 * Integer ops are bit exact; the rounding of the quantized ops' multiply-shift is selectable (see okpu_v4_mul_shift). */
#ifndef OKPU_KERNELS_NEUTRAL_KERNELS_H
#define OKPU_KERNELS_NEUTRAL_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "../okpu.h"

/* nncase enums (datatypes.h) */
enum { V4_BIN_ADD = 0, V4_BIN_SUB, V4_BIN_MUL, V4_BIN_DIV, V4_BIN_MIN, V4_BIN_MAX, V4_BIN_COUNT };
enum { V4_RED_MEAN = 0, V4_RED_MIN, V4_RED_MAX, V4_RED_SUM, V4_RED_COUNT };
enum {
    V4_UN_ABS = 0, V4_UN_CEIL, V4_UN_COS, V4_UN_EXP, V4_UN_FLOOR, V4_UN_LOG, V4_UN_NEG, V4_UN_RSQRT, V4_UN_SIN,
    V4_UN_SQUARE, V4_UN_COUNT
};

/* Windowed op geometry (conv, pooling). */
typedef struct okpu_v4_window {
    int32_t filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w;
    int32_t pad_h_before, pad_h_after, pad_w_before, pad_w_after;
} okpu_v4_window;

/* Quantized multiply-shift of nncase's ops: okpu_mul_shift (core/arith.h) of (int64)v * mul by (uint8_t)shift,
 * truncated to int32 (two's complement wrap, as nncase's cast). HALF_UP = nncase v0.2.0-beta4 `(x + 2^(s-1)) >> s`,
 * SDK_CARRY = the odd-bit carry shift of the SDK runtime, HALF_EVEN = ties to even (any other mode: HALF_UP). The
 * reader keeps shift in 0..OKPU_SHIFT_MAX; |v * mul| <= 2^62, so only shift 63 with v = mul = INT32_MIN makes the
 * half-up addition wrap, as it does on the chip. */
int32_t okpu_v4_mul_shift(int32_t v, int32_t mul, int32_t shift, okpu_round_mode mode);

/* nncase's get_windowed_output_size: (size + pad_before + pad_after - ((filter-1)*dilation+1) + stride) / stride,
 * computed in 64 bits. */
int64_t okpu_v4_windowed_size(int64_t size, int64_t filter, int64_t stride, int64_t dilation, int64_t pad_before,
                         int64_t pad_after);

float okpu_v4_clampf(float v, float lo, float hi); /* std::clamp(v, lo, hi) */

/* 0x00 binary (float, broadcasting over size-1 dims), then clamp to [lo, hi]. */
void okpu_v4k_binary(const uint8_t *a, const uint8_t *b, uint8_t *out, const int32_t sa[4], const int32_t sb[4],
                const int32_t so[4], int op, float lo, float hi);

typedef struct okpu_v4_qbin_params {
    int32_t a_offset, a_mul, a_shift, b_offset, b_mul, b_shift, out_offset, out_mul, out_shift;
} okpu_v4_qbin_params;
/* 0x11 quantized_binary (u8). Integer op semantics are RISC-V's (the K210): division by zero gives -1,
 * INT32_MIN / -1 gives INT32_MIN; add/sub/mul wrap. div is nncase's `(a + b/2) / b` (truncating). */
void okpu_v4k_quantized_binary(const uint8_t *a, const uint8_t *b, uint8_t *out, const int32_t sa[4], const int32_t sb[4],
                          const int32_t so[4], int op, const okpu_v4_qbin_params *p, okpu_round_mode mode);

/* 0x01 concat: for each outer index, each input's `inner * dims[i]` bytes in turn. */
void okpu_v4k_concat(uint8_t *out, const uint8_t *const *inputs, const int32_t *dims, uint32_t count, uint32_t inner,
                uint32_t outer);

/* 0x02 conv2d, NCHW float, grouped. weights [oc][ic/g][fh][fw], bias [oc]. */
void okpu_v4k_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias, const int32_t in_shape[4],
                int32_t groups, int32_t out_channels, const okpu_v4_window *win, float lo, float hi);

/* 0x0F quantized_conv2d, NCHW u8: acc = bias + sum (x + input_offset) * (w + filter_offset). */
typedef struct okpu_v4_qconv_params {
    int32_t input_offset, filter_offset, output_mul, output_shift, output_offset;
} okpu_v4_qconv_params;
void okpu_v4k_quantized_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                          const int32_t in_shape[4], int32_t groups, int32_t out_channels, const okpu_v4_window *win,
                          const okpu_v4_qconv_params *p, okpu_round_mode mode);

/* 0x13 conv2d_transpose. nncase v0.2 never adds the bias (it reads it into an unused variable): reproduced. */
void okpu_v4k_conv2d_transpose(const uint8_t *in, uint8_t *out, const uint8_t *weights, const int32_t in_shape[4],
                          const int32_t out_shape[4], int32_t groups, const okpu_v4_window *win, float lo, float hi);

/* 0x03 dequantize (K210 build): s = 1/scale, z = -zp * s, y = fmaf(q, s, z). */
void okpu_v4k_dequantize(const uint8_t *in, uint8_t *out, uint32_t count, int32_t zero_point, float scale);
/* out[i] = fmaf(in[i], s, z) as little-endian float32, front to back (in and out miss each other), eight at a time with
 * AVX2 + FMA: both dequantizes' arithmetic (the v3 layer's scale and bias, the v4 one's 1 / scale and -zero_point / scale). */
void okpu_k_u8_fma_f32(const uint8_t *in, uint8_t *out, uint32_t count, float s, float z);
/* 0x06 quantize (K210 build): v = fmaf(x, scale, zp); elements in pairs convert with fcvt.w.s round-to-nearest-even,
 * an odd last element with roundf (ties away from zero); saturating; clamp 0..255. */
void okpu_v4k_quantize(const uint8_t *in, uint8_t *out, uint32_t count, int32_t zero_point, float scale);

/* 0x04 matmul: out[r][c] = act(bias[c] + sum_i a[r][i]*b[i][c]) accumulated with fmaf in i order. */
void okpu_v4k_matmul(const uint8_t *a, const uint8_t *b, uint8_t *out, const uint8_t *bias, int32_t a_rows, int32_t a_cols,
                int32_t b_cols, float lo, float hi);
/* 0x10 quantized_matmul. */
void okpu_v4k_quantized_matmul(const uint8_t *a, const uint8_t *b, uint8_t *out, const uint8_t *bias, int32_t a_rows,
                          int32_t a_cols, int32_t b_cols, int32_t a_offset, int32_t b_offset, int32_t out_mul,
                          int32_t out_shift, int32_t out_offset, okpu_round_mode mode);

/* 0x05 pad: element size 1 or 4; paddings {before, after} x 4 (negative = crop); pad value's bytes. */
void okpu_v4k_pad(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t paddings[8],
             const uint8_t pad_value[4], uint32_t elem_size);
/* The same, output planes [first, end) only (plane q: the output's (q / out_shape[1], q % out_shape[1]); each plane
 * out_shape[2] x out_shape[3] elements, written whole). */
void okpu_v4k_pad_planes(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t paddings[8],
                         const uint8_t pad_value[4], uint32_t elem_size, size_t first, size_t end);

/* 0x07 reduce: output filled with init, then reduced over the in-shape dims the out-shape has as 1
 * (nncase's get_reduced_offset); mean multiplies by (float)out_count / in_count. */
void okpu_v4k_reduce(const uint8_t *in, uint8_t *out, int op, const int32_t in_shape[4], const int32_t out_shape[4],
                float init);

/* 0x08 reduce_window2d, NCHW float. Mean divides by the in-bounds tap count. */
void okpu_v4k_reduce_window2d(const uint8_t *in, uint8_t *out, int op, const int32_t in_shape[4], const okpu_v4_window *win,
                         float init, float lo, float hi);
/* 0x1003 cpu_reduce_window2d: the same on NHWC. */
void okpu_v4k_cpu_reduce_window2d(const uint8_t *in, uint8_t *out, int op, const int32_t in_shape[4], const okpu_v4_window *win,
                             float init, float lo, float hi);

/* 0x0A resize_image: mode 0 bilinear, 1 nearest; elem_size 4 (f32) or 1 (u8). */
void okpu_v4k_resize(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], int32_t out_h, int32_t out_w, int mode,
                int align_corners, uint32_t elem_size);

/* 0x0B softmax over inner_size values, outer_size times: exp((x - max) * beta), sequential sum, divide. */
void okpu_v4k_softmax(const uint8_t *in, uint8_t *out, int32_t inner_size, int32_t outer_size, float beta);

/* 0x0C transpose (elem_size 1 or 4). */
void okpu_v4k_transpose(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t perm[4],
                   uint32_t elem_size);
/* The transpose's outer loops cover okpu_v4k_transpose_outer() runs of output elements, each written by one run
 * alone; okpu_v4k_transpose_part does runs [first, end). *contiguous (may be NULL): each run's elements are one block
 * of the output, not interleaved with other runs' (which would share cache lines between threads). */
size_t okpu_v4k_transpose_outer(const int32_t in_shape[4], const int32_t perm[4], int *contiguous);
void okpu_v4k_transpose_part(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t perm[4],
                             uint32_t elem_size, size_t first, size_t end);

/* 0x0D strided_slice (masks ignored, as nncase). The caller checked every visited index is in range. */
void okpu_v4k_strided_slice(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t begin[4],
                       const int32_t end[4], const int32_t strides[4], uint32_t elem_size);

/* 0x0E unary (float). */
float okpu_v4_unary_apply(int op, float v);
void okpu_v4k_unary(const uint8_t *in, uint8_t *out, uint32_t count, int op);

/* 0x12 table_lookup1d */
void okpu_v4k_table_lookup1d(const uint8_t *in, uint8_t *out, uint32_t count, const uint8_t *table);

/* 0x1001 cpu_conv2d / 0x1002 cpu_depthwise_conv2d: NHWC float; weights [oc][fh][fw][ic] / [c][fh][fw]. */
void okpu_v4k_cpu_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                    const int32_t in_shape[4], int32_t out_channels, const okpu_v4_window *win, float lo, float hi);
void okpu_v4k_cpu_depthwise_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                              const int32_t in_shape[4], const okpu_v4_window *win, float lo, float hi);
/* 0x1004 / 0x1005 quantized NHWC: acc = bias + sum (x - input_offset) * (w - filter_offset) (the cpu kernels
 * SUBTRACT the offsets, the neutral ones add them). */
void okpu_v4k_cpu_quantized_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                              const int32_t in_shape[4], int32_t out_channels, const okpu_v4_window *win,
                              const okpu_v4_qconv_params *p, okpu_round_mode mode);
void okpu_v4k_cpu_quantized_depthwise_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                                        const int32_t in_shape[4], const okpu_v4_window *win, const okpu_v4_qconv_params *p,
                                        okpu_round_mode mode);

#endif

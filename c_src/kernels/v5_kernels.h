// SPDX-License-Identifier: Apache-2.0
/* CPU kernels of the kmodel v5 (nncase 1.x) stackvm tensor functions, over the argument records of plan/steps_v5.h.
 * Float arithmetic follows nncase's reference kernels (what its Simulator runs): IEEE float32, every operation rounded
 * on its own (no fused multiply-add), sums in index order. Elements are read and written with memcpy: v5 pools put
 * tensors at any byte offset. */
#ifndef OKPU_KERNELS_V5_KERNELS_H
#define OKPU_KERNELS_V5_KERNELS_H

#include "../plan/steps_v5.h"

void okpu_v5_k_copy(const okpu_v5_copy_args *a);
/* Do the bytes a walk of in_shape with in_stride from src (elements of in_size bytes) reads miss the bytes a walk of
 * out_shape with out_stride from dst (elements of out_size bytes) writes? Every extent >= 1. */
int okpu_v5_apart(uint32_t rank, const uint32_t *in_shape, const int32_t *in_stride, const uint8_t *src,
                  size_t in_size, const uint32_t *out_shape, const int32_t *out_stride, const uint8_t *dst,
                  size_t out_size);
void okpu_v5_k_quantize(const okpu_v5_quant_args *a);
void okpu_v5_k_dequantize(const okpu_v5_quant_args *a);
void okpu_v5_k_pad(const okpu_v5_pad_args *a);
void okpu_v5_k_conv2d(const okpu_v5_conv2d_args *a);
void okpu_v5_k_window(const okpu_v5_window_args *a);
void okpu_v5_k_reduce(const okpu_v5_reduce_args *a);
void okpu_v5_k_softmax(const okpu_v5_softmax_args *a);
void okpu_v5_k_binary(const okpu_v5_binary_args *a);
void okpu_v5_k_resize(const okpu_v5_resize_args *a);
void okpu_v5_k_matmul(const okpu_v5_matmul_args *a);
void okpu_v5_k_convert(const okpu_v5_convert_args *a);
uint32_t okpu_v5_convert_bytes(uint32_t dt); /* bytes of a CONVERT element type (the front-end checked dt) */
void okpu_v5_k_lut(const okpu_v5_lut_args *a);
void okpu_v5_k_unary(const okpu_v5_unary_args *a);
void okpu_v5_k_arg(const okpu_v5_arg_args *a);
/* 0, or -1 with the first index outside the axis in *bad (the output is then incomplete). */
int okpu_v5_k_gather(const okpu_v5_gather_args *a, int64_t *bad);

/* Round half to even, as nearbyintf in the default rounding mode (for |x| < 2^23; larger values are integers). */
float okpu_v5_round_even(float x);

#endif

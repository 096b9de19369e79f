/* CPU layer kernels: plain array-based loops shared by the kmodel readers (v3 layers, v4 ops).
 *
 * Tensors are passed as byte pointers because model buffers and main-buffer offsets are not guaranteed to be
 * aligned: float32 values are little-endian and read/written through core/bytes.h. Callers validate every range
 * before calling; kernels never check bounds themselves.
 *
 * Float kernels reproduce what the K210 prints (docs/kpu-reference.md section 2, "Float CPU layers on the chip"): the
 * SDK's kpu.c is built by GCC, which contracts `a*b + c` into a fused multiply-add, so those places use fmaf()
 * explicitly here (the core itself is compiled with -std=c99, which does not contract). */
#ifndef OKPU_KERNELS_H
#define OKPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "../core/arith.h"
#include "../okpu.h"

typedef enum okpu_act { OKPU_ACT_LINEAR = 0, OKPU_ACT_RELU = 1, OKPU_ACT_RELU6 = 2 } okpu_act;

/* ---- integer helpers ---- */
/* Floor and rounding shifts, the quantized multiply-shift, wrapping, the u8 clamp and the one shift range
 * (OKPU_SHIFT_MAX) are core/arith.h's, shared with the KPU emulator; included above for every kernel. */

/* ---- float activation (elementwise.c) ---- */
float okpu_apply_act(float v, uint32_t act); /* 0 linear, 1 relu, 2 relu6; other values: linear */

/* ---- float elementwise (elementwise.c) ---- */
void okpu_k_add_f32(const uint8_t *a, const uint8_t *b, uint8_t *out, uint32_t count);
/* q = clamp(roundf((x - bias) * (1.0f / scale)), 0, 255); NaN -> 0. */
void okpu_k_quantize(const uint8_t *in, uint8_t *out, uint32_t count, float scale, float bias);
/* x = fmaf(q, scale, bias) */
void okpu_k_dequantize(const uint8_t *in, uint8_t *out, uint32_t count, float scale, float bias);
/* per channel c (channel_size values each): fmaf(q, scale[c], bias[c]); params = {f32 scale, f32 bias} x ch */
void okpu_k_channelwise_dequantize(const uint8_t *in, uint8_t *out, uint32_t channels, uint32_t channel_size,
                                   const uint8_t *params);
void okpu_k_requantize(const uint8_t *in, uint8_t *out, uint32_t count, const uint8_t table[256]);
void okpu_k_logistic_f32(const uint8_t *in, uint8_t *out, uint32_t count);

/* ---- normalisations (softmax.c) ---- */
void okpu_k_softmax_f32(const uint8_t *in, uint8_t *out, uint32_t count);
void okpu_k_l2_normalize_f32(const uint8_t *in, uint8_t *out, uint32_t count);

/* ---- fully connected (fc.c) ---- */
/* y[o] = act(sum_i fmaf(x[i], w[o][i], s) + bias[o]); weights [out][in] f32, bias [out] f32. */
void okpu_k_fc_f32(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias, uint32_t in_ch,
                   uint32_t out_ch, uint32_t act);

typedef struct okpu_qfc_params {
    int32_t input_offset, weight_offset; /* added to each u8 input / weight */
    int32_t output_mul, output_shift, output_offset;
} okpu_qfc_params;
/* u8 x u8 matrix-vector: acc = bias[o] + sum (x+in_off)*(w+w_off); out = clamp(round_shift(acc*mul, shift) + off).
 * weights u8 [out][in], bias i32 [out] little-endian. */
void okpu_k_fc_u8(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias, uint32_t in_ch,
                  uint32_t out_ch, const okpu_qfc_params *p, okpu_round_mode mode);

/* ---- quantized add (quant_add.c) ---- */
typedef struct okpu_qadd_params {
    int32_t a_offset, a_mul, a_shift;
    int32_t b_offset, b_mul, b_shift;
    int32_t out_offset, out_mul, out_shift;
} okpu_qadd_params;
void okpu_k_quant_add_u8(const uint8_t *a, const uint8_t *b, uint8_t *out, uint32_t count,
                         const okpu_qadd_params *p, okpu_round_mode mode);

/* ---- pooling (pool.c) ---- */
typedef struct okpu_pool2d_params {
    uint32_t in_w, in_h, in_c, out_w, out_h, out_c;
    uint32_t kernel_w, kernel_h, stride_w, stride_h, pad_w, pad_h;
} okpu_pool2d_params;
/* Global pools over kernel_size values per channel, channels planar. */
void okpu_k_global_max_f32(const uint8_t *in, uint8_t *out, uint32_t kernel_size, uint32_t channels);
void okpu_k_global_avg_f32(const uint8_t *in, uint8_t *out, uint32_t kernel_size, uint32_t channels);
void okpu_k_global_max_u8(const uint8_t *in, uint8_t *out, uint32_t kernel_size, uint32_t channels);
void okpu_k_global_avg_u8(const uint8_t *in, uint8_t *out, uint32_t kernel_size, uint32_t channels);
/* Windowed pools, NCHW; out-of-range taps are skipped; mean divides by the in-range tap count. */
void okpu_k_max_pool_f32(const uint8_t *in, uint8_t *out, const okpu_pool2d_params *p, uint32_t act);
void okpu_k_avg_pool_f32(const uint8_t *in, uint8_t *out, const okpu_pool2d_params *p, uint32_t act);
void okpu_k_max_pool_u8(const uint8_t *in, uint8_t *out, const okpu_pool2d_params *p);
void okpu_k_avg_pool_u8(const uint8_t *in, uint8_t *out, const okpu_pool2d_params *p);

/* ---- reshapes (reshape.c) ---- */
/* TensorFlow flatten: planar CHW (w, h, c as stored in the model) -> interleaved HWC. elem = 4 (f32) or 1 (u8). */
void okpu_k_flatten(const uint8_t *in, uint8_t *out, uint32_t w, uint32_t h, uint32_t c, uint32_t elem);
/* Nearest-neighbour resize of planar CHW maps. elem = 4 or 1. */
void okpu_k_resize_nearest(const uint8_t *in, uint8_t *out, uint32_t in_w, uint32_t in_h, uint32_t c,
                           uint32_t out_w, uint32_t out_h, uint32_t elem);

/* ---- KPU RAM transfers done by the CPU (kpu_io.c) ---- */
/* K210_ADD_PADDING: channel c's byte becomes pixel (0,0) of a 4x4 map in KPU layout at `dst` (row start). */
void okpu_k_add_padding(const uint8_t *in, uint8_t *kpu_dst, uint32_t channels);
/* K210_REMOVE_PADDING: out[c] = in[c * 16]. */
void okpu_k_remove_padding(const uint8_t *in, uint8_t *out, uint32_t channels);
/* KPU rows the 4x4xC map of ADD_PADDING spans. */
uint32_t okpu_k_add_padding_rows(uint32_t channels);

#endif

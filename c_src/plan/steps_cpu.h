// SPDX-License-Identifier: Apache-2.0
/* Arguments of the CPU steps (steps_cpu.def): one step kind per kernel variant of kernels/kernels.h, every pointer
 * resolved at load (main buffer, tables in the file). Included by plan.h. */
#ifndef OKPU_PLAN_STEPS_CPU_H
#define OKPU_PLAN_STEPS_CPU_H

#include <stdint.h>

#include "../kernels/kernels.h"
#include "../okpu.h"

/* One float input, one float output, `count` elements (softmax, l2 normalisation, logistic). */
typedef struct okpu_cpu_unary_args {
    const uint8_t *in;
    uint8_t *out;
    uint32_t count;
} okpu_cpu_unary_args;

/* Elementwise float add of two inputs. */
typedef struct okpu_cpu_add_args {
    const uint8_t *a, *b;
    uint8_t *out;
    uint32_t count;
} okpu_cpu_add_args;

/* Quantized add; `round` is the format's rounding mode, copied from the options at load. */
typedef struct okpu_cpu_quant_add_args {
    const uint8_t *a, *b;
    uint8_t *out;
    uint32_t count;
    okpu_qadd_params p;
    okpu_round_mode round;
} okpu_cpu_quant_add_args;

/* Global pools: `channels` planes of kernel_size values each. */
typedef struct okpu_cpu_global_pool_args {
    const uint8_t *in;
    uint8_t *out;
    uint32_t kernel_size, channels;
} okpu_cpu_global_pool_args;

/* Windowed pools; act applies to the float variants only. */
typedef struct okpu_cpu_pool_args {
    const uint8_t *in;
    uint8_t *out;
    okpu_pool2d_params p;
    uint32_t act;
} okpu_cpu_pool_args;

/* Quantize (f32 -> u8) / dequantize (u8 -> f32) with one scale and bias. */
typedef struct okpu_cpu_quant_args {
    const uint8_t *in;
    uint8_t *out;
    uint32_t count;
    float scale, bias;
} okpu_cpu_quant_args;

/* u8 -> u8 through a 256-entry table. */
typedef struct okpu_cpu_requant_args {
    const uint8_t *in;
    uint8_t *out;
    const uint8_t *table; /* 256 bytes in the file */
    uint32_t count;
} okpu_cpu_requant_args;

/* Per-channel dequantize: params = {f32 scale, f32 bias} x channels, in the file. */
typedef struct okpu_cpu_cw_dequant_args {
    const uint8_t *in;
    uint8_t *out;
    const uint8_t *params;
    uint32_t channels, channel_size;
} okpu_cpu_cw_dequant_args;

/* Byte ranges of the main buffer copied one after the other to `out`: `count` {u32 start, u32 size} pairs in the
 * file, every range checked at load. */
typedef struct okpu_cpu_concat_args {
    uint8_t *main; /* the main buffer the starts are offsets into */
    uint8_t *out;
    const uint8_t *ranges;
    uint32_t count;
} okpu_cpu_concat_args;

/* Float dense layer: weights [out][in] f32 and bias [out] f32 in the file. */
typedef struct okpu_cpu_fc_args {
    const uint8_t *in;
    uint8_t *out;
    const uint8_t *weights, *bias;
    uint32_t in_ch, out_ch, act;
} okpu_cpu_fc_args;

/* Quantized dense layer: u8 weights [out][in], i32 bias [out] in the file. */
typedef struct okpu_cpu_quant_fc_args {
    const uint8_t *in;
    uint8_t *out;
    const uint8_t *weights, *bias;
    uint32_t in_ch, out_ch;
    okpu_qfc_params p;
    okpu_round_mode round;
} okpu_cpu_quant_fc_args;

/* Planar CHW -> interleaved HWC; elem = 4 (f32) or 1 (u8). */
typedef struct okpu_cpu_flatten_args {
    const uint8_t *in;
    uint8_t *out;
    uint32_t w, h, c, elem;
} okpu_cpu_flatten_args;

/* Nearest-neighbour resize of planar maps; elem = 4 (f32) or 1 (u8). */
typedef struct okpu_cpu_resize_args {
    const uint8_t *in;
    uint8_t *out;
    uint32_t in_w, in_h, c, out_w, out_h, elem;
} okpu_cpu_resize_args;

struct okpu_run_ctx;
/* The run functions, declared from the list itself. */
#define OKPU_STEP(id, name, type, fn) int fn(const struct okpu_run_ctx *ctx, const void *args, okpu_error *err);
#include "steps_cpu.def"
#undef OKPU_STEP

#endif

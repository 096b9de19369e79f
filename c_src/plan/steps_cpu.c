// SPDX-License-Identifier: Apache-2.0
/* The CPU steps: each calls one kernel of kernels/kernels.h with the arguments resolved at load. Nothing here can
 * fail: the front-end checked every range before the step existed. */
#include <string.h>

#include "../core/bytes.h"
#include "plan.h"

OKPU_DEFINE_STEP(okpu_step_add_f32, okpu_cpu_add_args, okpu_k_add_f32(a->a, a->b, a->out, a->count))
OKPU_DEFINE_STEP(okpu_step_quant_add_u8, okpu_cpu_quant_add_args,
                 okpu_k_quant_add_u8(a->a, a->b, a->out, a->count, &a->p, a->round))
/* Global pools: runs of channels on the workers (the loader refuses an output over the input; each channel's values
 * are still taken in the kernel's order, so the sums are the same bits). MobileNet's average over 768 x 49 floats
 * took 24 us, serial on two threads. */
#define OKPU_GLOBAL_POOL_STEP(name, kernel, elem)                                                                     \
    static void name##_range(const void *args, size_t first, size_t end)                                             \
    {                                                                                                                 \
        const okpu_cpu_global_pool_args *a = args;                                                                    \
        kernel(a->in + (size_t)(elem) * a->kernel_size * first, a->out + (size_t)(elem) * first, a->kernel_size,      \
               (uint32_t)(end - first));                                                                              \
    }                                                                                                                 \
    int name(const okpu_run_ctx *ctx, const void *args, okpu_error *err)                                             \
    {                                                                                                                 \
        const okpu_cpu_global_pool_args *a = args;                                                                    \
        (void)err;                                                                                                    \
        okpu_step_parallel(ctx, a->channels, a->kernel_size, 1, name##_range, args);                                  \
        return OKPU_OK;                                                                                               \
    }
OKPU_GLOBAL_POOL_STEP(okpu_step_global_max_f32, okpu_k_global_max_f32, 4u)
OKPU_GLOBAL_POOL_STEP(okpu_step_global_avg_f32, okpu_k_global_avg_f32, 4u)
OKPU_GLOBAL_POOL_STEP(okpu_step_global_max_u8, okpu_k_global_max_u8, 1u)
OKPU_GLOBAL_POOL_STEP(okpu_step_global_avg_u8, okpu_k_global_avg_u8, 1u)
OKPU_DEFINE_STEP(okpu_step_max_pool_f32, okpu_cpu_pool_args, okpu_k_max_pool_f32(a->in, a->out, &a->p, a->act))
OKPU_DEFINE_STEP(okpu_step_avg_pool_f32, okpu_cpu_pool_args, okpu_k_avg_pool_f32(a->in, a->out, &a->p, a->act))
OKPU_DEFINE_STEP(okpu_step_max_pool_u8, okpu_cpu_pool_args, okpu_k_max_pool_u8(a->in, a->out, &a->p))
OKPU_DEFINE_STEP(okpu_step_avg_pool_u8, okpu_cpu_pool_args, okpu_k_avg_pool_u8(a->in, a->out, &a->p))
OKPU_DEFINE_STEP(okpu_step_quantize, okpu_cpu_quant_args, okpu_k_quantize(a->in, a->out, a->count, a->scale, a->bias))
static void dequantize_range(const void *args, size_t first, size_t end)
{
    const okpu_cpu_quant_args *a = args;
    okpu_k_dequantize(a->in + first, a->out + first * 4u, (uint32_t)(end - first), a->scale, a->bias);
}

/* On the workers when the output misses the input (in place, the kernel's order is what keeps it right) */
int okpu_step_dequantize(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_cpu_quant_args *a = args;
    (void)err;
    if (okpu_bytes_apart(a->in, a->count, a->out, (size_t)a->count * 4u))
        okpu_step_parallel(ctx, a->count, 1, 1, dequantize_range, args);
    else
        okpu_k_dequantize(a->in, a->out, a->count, a->scale, a->bias);
    return OKPU_OK;
}
OKPU_DEFINE_STEP(okpu_step_requantize, okpu_cpu_requant_args, okpu_k_requantize(a->in, a->out, a->count, a->table))
OKPU_DEFINE_STEP(okpu_step_channelwise_dequantize, okpu_cpu_cw_dequant_args,
                 okpu_k_channelwise_dequantize(a->in, a->out, a->channels, a->channel_size, a->params))
OKPU_DEFINE_STEP(okpu_step_l2_normalize_f32, okpu_cpu_unary_args, okpu_k_l2_normalize_f32(a->in, a->out, a->count))
OKPU_DEFINE_STEP(okpu_step_softmax_f32, okpu_cpu_unary_args, okpu_k_softmax_f32(a->in, a->out, a->count))
OKPU_DEFINE_STEP(okpu_step_logistic_f32, okpu_cpu_unary_args, okpu_k_logistic_f32(a->in, a->out, a->count))
OKPU_DEFINE_STEP(okpu_step_fc_f32, okpu_cpu_fc_args,
                 okpu_k_fc_f32(a->in, a->out, a->weights, a->bias, a->in_ch, a->out_ch, a->act))
OKPU_DEFINE_STEP(okpu_step_fc_u8, okpu_cpu_quant_fc_args,
                 okpu_k_fc_u8(a->in, a->out, a->weights, a->bias, a->in_ch, a->out_ch, &a->p, a->round))
OKPU_DEFINE_STEP(okpu_step_flatten, okpu_cpu_flatten_args, okpu_k_flatten(a->in, a->out, a->w, a->h, a->c, a->elem))
OKPU_DEFINE_STEP(okpu_step_resize_nearest, okpu_cpu_resize_args,
                 okpu_k_resize_nearest(a->in, a->out, a->in_w, a->in_h, a->c, a->out_w, a->out_h, a->elem))

/* Inputs copied one after the other (the load checked each against the whole output). */
int okpu_step_concat(const okpu_run_ctx *ctx, const void *args, okpu_error *err)
{
    const okpu_cpu_concat_args *a = (const okpu_cpu_concat_args *)args;
    uint8_t *dst = a->out;
    uint32_t i;
    (void)ctx, (void)err;
    for (i = 0; i < a->count; i++) {
        uint32_t start = okpu_rd_u32(a->ranges + 8u * i), size = okpu_rd_u32(a->ranges + 8u * i + 4u);
        memmove(dst, a->main + start, size);
        dst += size;
    }
    return OKPU_OK;
}

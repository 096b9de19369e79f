/* Elementwise CPU layers: add, (de)quantize, requantize, logistic; the float activations of the CPU layers. */
#include <math.h>

#include "fmath.h"
#include "../core/bytes.h"
#include "kernels.h"
#include "neutral_kernels.h"

void okpu_k_add_f32(const uint8_t *a, const uint8_t *b, uint8_t *out, uint32_t count)
{
    uint32_t i;
    for (i = 0; i < count; i++)
        okpu_wr_f32(out + 4u * i, okpu_rd_f32(a + 4u * i) + okpu_rd_f32(b + 4u * i));
}

static uint8_t quantize_one(float x, float inv_scale, float bias)
{
    float v = roundf((x - bias) * inv_scale); /* roundf: ties away from zero, as on the chip */
    if (!(v >= 0.0f))                        /* negative or NaN */
        return 0;
    if (v > 255.0f)
        return 255;
    return (uint8_t)v;
}

void okpu_k_quantize(const uint8_t *in, uint8_t *out, uint32_t count, float scale, float bias)
{
    /* SDK: reciprocal first, then multiply (docs/kpu-reference.md section 2). */
    float inv = 1.0f / scale;
    uint32_t i;
    for (i = 0; i < count; i++)
        out[i] = quantize_one(okpu_rd_f32(in + 4u * i), inv, bias);
}

void okpu_k_dequantize(const uint8_t *in, uint8_t *out, uint32_t count, float scale, float bias)
{
    uint32_t i = count;

    if (okpu_bytes_apart(in, count, out, (size_t)count * 4u)) {
        okpu_k_u8_fma_f32(in, out, count, scale, bias);
        return;
    }
    /* Written back to front: in place (in == out) the u8 source is never overwritten before it is read. */
    while (i-- > 0)
        okpu_wr_f32(out + 4u * i, fmaf((float)in[i], scale, bias));
}

void okpu_k_channelwise_dequantize(const uint8_t *in, uint8_t *out, uint32_t channels, uint32_t channel_size,
                                   const uint8_t *params)
{
    uint32_t c = channels;
    if (okpu_bytes_apart(in, (size_t)channels * channel_size, out, (size_t)channels * channel_size * 4u)) {
        for (c = 0; c < channels; c++)
            okpu_k_u8_fma_f32(in + (size_t)c * channel_size, out + (size_t)c * channel_size * 4u, channel_size,
                              okpu_rd_f32(params + 8u * c), okpu_rd_f32(params + 8u * c + 4u));
        return;
    }
    while (c-- > 0) { /* (the loader refuses an output over the input; back to front all the same) */
        float scale = okpu_rd_f32(params + 8u * c), bias = okpu_rd_f32(params + 8u * c + 4u);
        uint32_t i = channel_size;
        while (i-- > 0) {
            size_t k = (size_t)c * channel_size + i;
            okpu_wr_f32(out + 4u * k, fmaf((float)in[k], scale, bias));
        }
    }
}

void okpu_k_requantize(const uint8_t *in, uint8_t *out, uint32_t count, const uint8_t table[256])
{
    uint32_t i;
    for (i = 0; i < count; i++)
        out[i] = table[in[i]];
}

void okpu_k_logistic_f32(const uint8_t *in, uint8_t *out, uint32_t count)
{
    uint32_t i;
    for (i = 0; i < count; i++)
        okpu_wr_f32(out + 4u * i, 1.0f / (1.0f + okpu_expf(-okpu_rd_f32(in + 4u * i))));
}

float okpu_apply_act(float v, uint32_t act)
{
    switch (act) {
    case OKPU_ACT_RELU:
        return v < 0.0f ? 0.0f : v;
    case OKPU_ACT_RELU6:
        return v < 0.0f ? 0.0f : v > 6.0f ? 6.0f : v;
    default:
        return v;
    }
}

// SPDX-License-Identifier: Apache-2.0
/* Pooling CPU layers.
 *
 * Float (SDK kpu.c): global average = sequential float sum / kernel_size; windowed pools skip out-of-range taps,
 * average divides by the number of in-range taps (float count), then the stored activation is applied.
 * Quantized (Maix-EMC's patched driver `kpu.c_replace_it_to_driver.c`, the only public runtime that has them):
 * - QUANTIZED_MAX_POOL2D: running max starts at 0, out-of-range taps skipped (TF SAME padding stored as 0).
 * - QUANTIZED_GLOBAL_AVERAGE_POOL2D: u32 sum / kernel_size, truncating, u8 out.
 * - QUANTIZED_GLOBAL_MAX_POOL2D and QUANTIZED_AVERAGE_POOL2D have no public implementation; by analogy: max
 *   from 0, and the truncating integer mean of the in-range taps. */
#include <float.h>

#include "../core/bytes.h"
#include "kernels.h"

void okpu_k_global_max_f32(const uint8_t *in, uint8_t *out, uint32_t kernel_size, uint32_t channels)
{
    uint32_t c, i;
    for (c = 0; c < channels; c++) {
        const uint8_t *src = in + (size_t)4u * kernel_size * c;
        float m = -FLT_MAX;
        for (i = 0; i < kernel_size; i++) {
            float v = okpu_rd_f32(src + 4u * i);
            if (v > m)
                m = v;
        }
        okpu_wr_f32(out + 4u * c, m);
    }
}

void okpu_k_global_avg_f32(const uint8_t *in, uint8_t *out, uint32_t kernel_size, uint32_t channels)
{
    uint32_t c, i;
    for (c = 0; c < channels; c++) {
        const uint8_t *src = in + (size_t)4u * kernel_size * c;
        float s = 0.0f;
        for (i = 0; i < kernel_size; i++)
            s += okpu_rd_f32(src + 4u * i);
        okpu_wr_f32(out + 4u * c, s / (float)kernel_size);
    }
}

void okpu_k_global_max_u8(const uint8_t *in, uint8_t *out, uint32_t kernel_size, uint32_t channels)
{
    uint32_t c, i;
    for (c = 0; c < channels; c++) {
        const uint8_t *src = in + (size_t)kernel_size * c;
        uint8_t m = 0;
        for (i = 0; i < kernel_size; i++)
            if (src[i] > m)
                m = src[i];
        out[c] = m;
    }
}

void okpu_k_global_avg_u8(const uint8_t *in, uint8_t *out, uint32_t kernel_size, uint32_t channels)
{
    uint32_t c, i;
    for (c = 0; c < channels; c++) {
        const uint8_t *src = in + (size_t)kernel_size * c;
        uint64_t s = 0;
        for (i = 0; i < kernel_size; i++)
            s += src[i];
        out[c] = kernel_size ? (uint8_t)(s / kernel_size) : 0;
    }
}

/* In-range tap window of output (ox, oy): [*x0, *x1) x [*y0, *y1) in input coordinates. */
static void window(const okpu_pool2d_params *p, uint32_t ox, uint32_t oy, int64_t *x0, int64_t *x1, int64_t *y0,
                   int64_t *y1)
{
    int64_t bx = (int64_t)ox * p->stride_w - p->pad_w, by = (int64_t)oy * p->stride_h - p->pad_h;
    int64_t ex = bx + p->kernel_w, ey = by + p->kernel_h;
    *x0 = bx < 0 ? 0 : bx;
    *y0 = by < 0 ? 0 : by;
    *x1 = ex > (int64_t)p->in_w ? (int64_t)p->in_w : ex;
    *y1 = ey > (int64_t)p->in_h ? (int64_t)p->in_h : ey;
}

#define POOL_LOOP(ELEM, BODY_INIT, BODY_TAP, BODY_OUT)                                                          \
    do {                                                                                                        \
        uint32_t c, oy, ox;                                                                                     \
        size_t o = 0;                                                                                           \
        for (c = 0; c < p->out_c; c++)                                                                          \
            for (oy = 0; oy < p->out_h; oy++)                                                                   \
                for (ox = 0; ox < p->out_w; ox++, o++) {                                                        \
                    int64_t x0, x1, y0, y1, x, y;                                                               \
                    BODY_INIT;                                                                                  \
                    window(p, ox, oy, &x0, &x1, &y0, &y1);                                                      \
                    for (y = y0; y < y1; y++)                                                                   \
                        for (x = x0; x < x1; x++) {                                                             \
                            size_t k = ((size_t)c * p->in_h + (size_t)y) * p->in_w + (size_t)x;                \
                            BODY_TAP;                                                                           \
                        }                                                                                       \
                    BODY_OUT;                                                                                   \
                }                                                                                               \
    } while (0)

void okpu_k_max_pool_f32(const uint8_t *in, uint8_t *out, const okpu_pool2d_params *p, uint32_t act)
{
    float m;
    POOL_LOOP(4, m = -FLT_MAX, { float v = okpu_rd_f32(in + 4u * k); if (v > m) m = v; },
              okpu_wr_f32(out + 4u * o, okpu_apply_act(m, act)));
}

void okpu_k_avg_pool_f32(const uint8_t *in, uint8_t *out, const okpu_pool2d_params *p, uint32_t act)
{
    float s, n;
    POOL_LOOP(4, (s = 0.0f, n = 0.0f), { s += okpu_rd_f32(in + 4u * k); n += 1.0f; },
              okpu_wr_f32(out + 4u * o, okpu_apply_act(n > 0.0f ? s / n : 0.0f, act)));
}

void okpu_k_max_pool_u8(const uint8_t *in, uint8_t *out, const okpu_pool2d_params *p)
{
    uint8_t m;
    POOL_LOOP(1, m = 0, { if (in[k] > m) m = in[k]; }, out[o] = m);
}

void okpu_k_avg_pool_u8(const uint8_t *in, uint8_t *out, const okpu_pool2d_params *p)
{
    uint64_t s, n;
    POOL_LOOP(1, (s = 0, n = 0), { s += in[k]; n++; }, out[o] = (uint8_t)(n ? s / n : 0));
}

// SPDX-License-Identifier: Apache-2.0
/* Softmax and L2 normalisation over one vector (SDK kpu.c semantics). */
#include <float.h>
#include <math.h>

#include "fmath.h"
#include "../core/bytes.h"
#include "kernels.h"

void okpu_k_softmax_f32(const uint8_t *in, uint8_t *out, uint32_t count)
{
    /* The SDK starts the running max at FLT_MIN (the smallest positive normal), not -inf: all-negative inputs
     * are therefore shifted by FLT_MIN, which is what the chip prints. */
    float max = FLT_MIN, sum = 0.0f;
    uint32_t i;
    for (i = 0; i < count; i++)
        max = fmaxf(max, okpu_rd_f32(in + 4u * i));
    for (i = 0; i < count; i++) {
        float e = okpu_expf(okpu_rd_f32(in + 4u * i) - max);
        sum += e;
        okpu_wr_f32(out + 4u * i, e);
    }
    for (i = 0; i < count; i++)
        okpu_wr_f32(out + 4u * i, okpu_rd_f32(out + 4u * i) / sum);
}

void okpu_k_l2_normalize_f32(const uint8_t *in, uint8_t *out, uint32_t count)
{
    const float eps = 1e-10f;
    float sum = 0.0f, inv;
    uint32_t i;
    for (i = 0; i < count; i++) {
        float x = okpu_rd_f32(in + 4u * i);
        sum = fmaf(x, x, sum); /* GCC contracts `sum += x*x` on the chip */
    }
    if (sum < eps)
        sum = eps;
    inv = 1.0f / sqrtf(sum);
    for (i = 0; i < count; i++)
        okpu_wr_f32(out + 4u * i, okpu_rd_f32(in + 4u * i) * inv);
}

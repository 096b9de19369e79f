// SPDX-License-Identifier: Apache-2.0
/* Integer rounding helpers for the quantized CPU layers. */
#include "kernels.h"

int64_t okpu_wrap_add(int64_t a, int64_t b)
{
    uint64_t u = (uint64_t)a + (uint64_t)b;
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

int64_t okpu_wrap_mul(int64_t a, int64_t b)
{
    uint64_t u = (uint64_t)a * (uint64_t)b;
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

int64_t okpu_asr64(int64_t v, unsigned shift)
{
    if (shift == 0)
        return v;
    if (shift > 63)
        shift = 63;
    if (v >= 0)
        return v >> shift;
    /* floor(v / 2^s) for negative v without relying on implementation-defined >> of negatives */
    return -(int64_t)(((uint64_t)(-(v + 1)) >> shift)) - 1;
}

int64_t okpu_round_shift(int64_t v, unsigned shift, okpu_round_mode mode)
{
    int64_t q, rem, half;
    if (shift == 0)
        return v;
    if (shift > 62)
        shift = 62;
    switch (mode) {
    case OKPU_ROUND_SDK_CARRY:
        /* kpu_carry_shift (SDK kpu.c): shift by s-1, then the last bit decides: odd positives round up,
         * odd negatives go one further down. */
        v = okpu_asr64(v, shift - 1);
        if (v % 2 != 0)
            return v >= 0 ? okpu_asr64(v, 1) + 1 : okpu_asr64(v, 1) - 1;
        return okpu_asr64(v, 1);
    case OKPU_ROUND_HALF_UP:
        return okpu_asr64(okpu_wrap_add(v, (int64_t)1 << (shift - 1)), shift);
    case OKPU_ROUND_HALF_EVEN:
    default:
        q = okpu_asr64(v, shift);
        rem = v - (int64_t)((uint64_t)q << shift); /* 0 <= rem < 2^s */
        half = (int64_t)1 << (shift - 1);
        if (rem > half || (rem == half && (q % 2 != 0)))
            q++;
        return q;
    }
}

uint8_t okpu_clamp_u8(int64_t v)
{
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
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

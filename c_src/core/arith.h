// SPDX-License-Identifier: Apache-2.0
/* The integer arithmetic of the KPU and of the quantized CPU layers, in one place: floor and rounding right shifts,
 * the multiply-shift of the quantized ops, two's complement wrapping, the clamp to u8. Every reference these follow
 * (the SDK's kpu.c, nncase v0.1/v0.2 and its K210 simulator) computes on signed 64-bit values; the helpers give the
 * same results with no undefined behaviour (no signed overflow, no shift of a negative value, no shift by 64 or more).
 *
 * The shift range, OKPU_SHIFT_MAX = 63: a shift count the CPU ops of a model may hold is 0..63.
 * - It is the range every reference defines: they shift int64 values, and C/C++ define `>>` on a 64-bit value only
 *   for counts below 64 (nncase's `(v + (1 << (s-1))) >> s` and the SDK's kpu_carry_shift `v >>= s-1` alike).
 * - nncase's quantized ops store int32 shifts (used as uint8_t) and the v3 CPU layers int32 shifts: the readers
 *   refuse any such field outside 0..OKPU_SHIFT_MAX.
 * - The KPU's 4-bit fields (shr_x, shr_w, norm_shift: 0..15) are inside it. Its activation shift_number is an 8-bit
 *   hardware field that the readers take as stored (real models use <= 22; the bit-exact tests feed 0..255): for it
 *   the helpers are total, i.e. every unsigned count is defined and exact (beyond 63: floor 0 or -1, nearest 0, the
 *   SDK carry its value at 64), so no count reaches undefined behaviour anywhere.
 * Within 0..OKPU_SHIFT_MAX the helpers give bit for bit what the previous copies in kpu_emu.c, round.c and
 * neutral_kernels.c gave over the shifts each accepted (tests_host/c/test_arith.c), except that round.c rounded a
 * shift of 63 as if it were 62.
 *
 * Rounding modes (okpu_round_mode), for a shift s >= 1 of v, q = floor(v / 2^s), r = v - q * 2^s (0 <= r < 2^s):
 * - HALF_EVEN: q + 1 when r > 2^(s-1), or r == 2^(s-1) and q is odd (nearest, ties to even);
 * - HALF_UP:   q + 1 when r >= 2^(s-1) (nearest, ties toward +infinity);
 * - SDK_CARRY: kpu_carry_shift of the SDK's kpu.c: when r >= 2^(s-1), q + 1 for v >= 0 and q - 1 for v < 0 (ties up
 *   for positives, negatives one further down); else q.
 * - NNCASE1: nncase 1.x's Simulator (carry_shift<Banker>, docs kmodel-v5.md 4.3): HALF_EVEN's test on q and r, but
 *   the step is the sign of v: q - 1 instead of q + 1 for v < 0. Not a rounding for v < 0 (-0.25 gives -2): it only
 *   reproduces the Simulator's reference outputs. Beyond 63 it follows the same formula: 0 for v >= 0, -2 for v < 0.
 * Any other mode value rounds half to even. A shift of 0 returns v in every mode. */
#ifndef OKPU_CORE_ARITH_H
#define OKPU_CORE_ARITH_H

#include <stdint.h>

#include "../okpu.h"

#define OKPU_SHIFT_MAX 63u

/* The int64 whose two's complement bits are u. */
static inline int64_t okpu_i64_from_bits(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

/* a + b and a * b modulo 2^64, as the 64-bit registers of the chip's CPU and nncase's simulator wrap. */
static inline int64_t okpu_wrap_add(int64_t a, int64_t b)
{
    return okpu_i64_from_bits((uint64_t)a + (uint64_t)b);
}

static inline int64_t okpu_wrap_mul(int64_t a, int64_t b)
{
    return okpu_i64_from_bits((uint64_t)a * (uint64_t)b);
}

/* v modulo 2^32 as an int32 (C++'s conversion to int32_t on the chip). */
static inline int32_t okpu_wrap_i32(int64_t v)
{
    uint32_t u = (uint32_t)(uint64_t)v;
    return u <= 0x7FFFFFFFu ? (int32_t)u : (int32_t)(u - 0x80000000u) - 0x7FFFFFFF - 1;
}

static inline uint8_t okpu_clamp_u8(int64_t v)
{
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* floor(v / 2^s): the arithmetic right shift of the KPU and of RISC-V's sra. */
static inline int64_t okpu_asr64(int64_t v, unsigned s)
{
    if (s == 0)
        return v;
    if (s > OKPU_SHIFT_MAX) /* floor(v / 2^s) is 0 or -1 for every s >= 63 */
        s = OKPU_SHIFT_MAX;
    if (v >= 0)
        return v >> s;
    return -1 - (int64_t)((uint64_t)(-(v + 1)) >> s); /* -(v+1) >= 0: no shift of a negative value */
}

/* v / 2^s rounded to nearest per `mode` (see the top of this file), exactly: nothing wraps. */
static inline int64_t okpu_round_shift(int64_t v, unsigned s, okpu_round_mode mode)
{
    int64_t q;
    uint64_t rem, half;

    if (s == 0)
        return v;
    if (mode == OKPU_ROUND_SDK_CARRY) {
        /* kpu_carry_shift: shift by s-1, then the last bit decides; t / 2 never overflows +-1 */
        int64_t t = okpu_asr64(v, s - 1);
        if ((uint64_t)t & 1u)
            return t >= 0 ? okpu_asr64(t, 1) + 1 : okpu_asr64(t, 1) - 1;
        return okpu_asr64(t, 1);
    }
    if (s > OKPU_SHIFT_MAX) /* |v| <= 2^63 <= 2^(s-1): never above half; the one tie (-2^63, s = 64) gives 0 */
        return mode == OKPU_ROUND_NNCASE1 && v < 0 ? -2 : 0; /* NNCASE1: q = -1, r = v + 2^s >= 2^(s-1) */
    q = okpu_asr64(v, s);
    rem = (uint64_t)v & (((uint64_t)1 << s) - 1u);
    half = (uint64_t)1 << (s - 1);
    if (rem > half || (rem == half && (mode == OKPU_ROUND_HALF_UP || ((uint64_t)q & 1u))))
        return mode == OKPU_ROUND_NNCASE1 && v < 0 ? q - 1 : q + 1; /* |q| <= 2^62: no overflow */
    return q;
}

/* The multiply-shift of the quantized CPU ops: p = v * mul in a 64-bit register (wrapping), then p shifted right by
 * s with `mode`. HALF_UP is computed as nncase v0.2.0-beta4 writes it, `(p + 2^(s-1)) >> s`, the addition wrapping
 * in the register as on the chip (it differs from okpu_round_shift's exact half-up only when p + 2^(s-1) passes
 * 2^63 - 1); SDK_CARRY and HALF_EVEN add nothing, so they are okpu_round_shift of the product. */
static inline int64_t okpu_mul_shift(int64_t v, int64_t mul, unsigned s, okpu_round_mode mode)
{
    int64_t p = okpu_wrap_mul(v, mul);
    if (mode != OKPU_ROUND_HALF_UP || s == 0 || s > OKPU_SHIFT_MAX)
        return okpu_round_shift(p, s, mode);
    return okpu_asr64(okpu_wrap_add(p, (int64_t)1 << (s - 1)), s);
}

#endif

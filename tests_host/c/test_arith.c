// SPDX-License-Identifier: Apache-2.0
/* core/arith.h against an independent formulation: exact integer division on 128-bit integers and the plain
 * definitions of the rounding modes (nearest with the mode's tie rule; the SDK carry as "q + 1 for v >= 0, q - 1 for
 * v < 0 when the remainder is at least half"), never the helpers' own bit tricks. Every mode, every shift in
 * 0..OKPU_SHIFT_MAX and a few beyond it (the helpers stay total: the KPU's activation field is 8 bits), edge values
 * (0, +-1, the int64 limits, powers of two and their neighbours, exact ties) and random values.
 *
 * A second part keeps the three formulations the core had before arith.h (round.c, kpu_emu.c, neutral_kernels.c)
 * and checks the helpers give their results bit for bit over every input each accepted; the one deliberate
 * difference, round.c turning a shift of 63 into 62, is checked to be gone. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../c_src/core/arith.h"
#include "../../c_src/kernels/neutral_kernels.h"
#include "../../c_src/kernels/v5_kernels.h"
#include "ctest.h"

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

static const okpu_round_mode modes[] = {OKPU_ROUND_HALF_EVEN, OKPU_ROUND_HALF_UP, OKPU_ROUND_SDK_CARRY,
                                        OKPU_ROUND_NNCASE1};
static const char *const mode_names[] = {"half-even", "half-up", "sdk-carry", "nncase1"};
#define MODE_COUNT (sizeof modes / sizeof modes[0])

/* ---- the independent formulation ---- */

/* floor(v / 2^s), exactly. Beyond s = 100 the quotient of any |v| < 2^64 is already 0 or -1. */
static i128 ref_floor(i128 v, unsigned s)
{
    i128 d, q;
    if (s > 100)
        s = 100;
    d = (i128)1 << s;
    q = v / d; /* truncates toward zero */
    if (v % d != 0 && v < 0)
        q -= 1;
    return q;
}

static i128 ref_round(i128 v, unsigned s, okpu_round_mode mode)
{
    i128 d, q, r;
    if (s == 0)
        return v;
    if (s > 100)
        s = 100;
    d = (i128)1 << s;
    q = ref_floor(v, s);
    r = v - q * d; /* 0 <= r < d */
    switch (mode) {
    case OKPU_ROUND_HALF_UP:
        return 2 * r >= d ? q + 1 : q;
    case OKPU_ROUND_SDK_CARRY:
        return 2 * r >= d ? (v >= 0 ? q + 1 : q - 1) : q;
    case OKPU_ROUND_NNCASE1: {
        /* kmodel-v5.md 4.3 as written: f = the low s bits, h = 2^(s-1), the step is the sign of v */
        const i128 sign = v < 0 ? -1 : 1, h = d / 2;
        if (r < h)
            return q;
        if (r > h)
            return q + sign;
        return (q & 1) != 0 ? q + sign : q;
    }
    default:
        return 2 * r > d || (2 * r == d && (q & 1) != 0) ? q + 1 : q;
    }
}

/* x modulo 2^bits as a signed number of that width. */
static i128 ref_wrap(i128 x, unsigned bits)
{
    u128 m = ((u128)1 << bits) - 1u, u = (u128)x & m;
    return u >= ((u128)1 << (bits - 1)) ? (i128)u - ((i128)1 << bits) : (i128)u;
}

/* The CPU op: product in a 64-bit register; half up as `(p + 2^(s-1)) >> s` with that register wrapping. */
static i128 ref_mul_shift(int64_t v, int64_t mul, unsigned s, okpu_round_mode mode)
{
    i128 p = ref_wrap((i128)v * mul, 64);
    if (mode == OKPU_ROUND_HALF_UP && s >= 1 && s <= 63)
        return ref_floor(ref_wrap(p + ((i128)1 << (s - 1)), 64), s);
    return ref_round(p, s, mode);
}

/* ---- values ---- */

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A random int64 of random magnitude (uniform bits would almost never be small). */
static int64_t rnd_value(void)
{
    unsigned bits = (unsigned)(rnd() % 64u);
    uint64_t u = rnd();
    u = bits == 63 ? u : u & (((uint64_t)1 << (bits + 1)) - 1u);
    return okpu_i64_from_bits(u);
}

static int64_t edges[1024];
static size_t edge_count;

static void add_edge(i128 v)
{
    if (v >= INT64_MIN && v <= INT64_MAX && edge_count < sizeof edges / sizeof edges[0])
        edges[edge_count++] = (int64_t)v;
}

static void make_edges(void)
{
    unsigned k;
    add_edge(0), add_edge(1), add_edge(-1), add_edge(2), add_edge(-2), add_edge(3), add_edge(-3);
    add_edge(INT64_MAX), add_edge(INT64_MAX - 1), add_edge(INT64_MIN), add_edge(INT64_MIN + 1);
    for (k = 1; k < 64; k++) {
        i128 p = (i128)1 << k, h = (i128)1 << (k - 1);
        add_edge(p), add_edge(p - 1), add_edge(p + 1), add_edge(-p), add_edge(-p + 1), add_edge(-p - 1);
        add_edge(p + h), add_edge(-p - h), add_edge(3 * p + h), add_edge(-3 * p - h); /* ties for s = k */
        add_edge(INT64_MAX - h + 1), add_edge(INT64_MIN + h);                         /* where half-up wraps */
    }
}

static const unsigned beyond[] = {64, 65, 66, 100, 127, 128, 200, 255, 256, 1000, UINT_MAX};

/* Every shift in the range and the ones beyond it, in one list. */
static unsigned shift_at(unsigned i)
{
    return i <= OKPU_SHIFT_MAX ? i : beyond[i - OKPU_SHIFT_MAX - 1];
}
#define SHIFT_COUNT (OKPU_SHIFT_MAX + 1u + (unsigned)(sizeof beyond / sizeof beyond[0]))

static int64_t lld(i128 v) /* for printing values that fit */
{
    return (int64_t)v;
}

/* ---- part 1: against the definitions ---- */

static void check_shifts(int64_t v)
{
    unsigned i, m;
    for (i = 0; i < SHIFT_COUNT; i++) {
        unsigned s = shift_at(i);
        i128 f = ref_floor(v, s);
        CHECK(okpu_asr64(v, s) == f, "asr64(%lld, %u) = %lld, expected %lld", (long long)v, s,
              (long long)okpu_asr64(v, s), (long long)lld(f));
        for (m = 0; m < MODE_COUNT; m++) {
            i128 r = ref_round(v, s, modes[m]);
            int64_t got = okpu_round_shift(v, s, modes[m]);
            CHECK(got == r, "round_shift(%lld, %u, %s) = %lld, expected %lld", (long long)v, s, mode_names[m],
                  (long long)got, (long long)lld(r));
        }
    }
}

static void check_mul_shift(int64_t v, int64_t mul)
{
    unsigned i, m;
    for (i = 0; i < SHIFT_COUNT; i++) {
        unsigned s = shift_at(i);
        for (m = 0; m < MODE_COUNT; m++) {
            i128 r = ref_mul_shift(v, mul, s, modes[m]);
            int64_t got = okpu_mul_shift(v, mul, s, modes[m]);
            CHECK(got == r, "mul_shift(%lld, %lld, %u, %s) = %lld, expected %lld", (long long)v, (long long)mul, s,
                  mode_names[m], (long long)got, (long long)lld(r));
        }
    }
}

static void check_wrap_clamp(int64_t a, int64_t b)
{
    CHECK(okpu_wrap_add(a, b) == ref_wrap((i128)a + b, 64), "wrap_add(%lld, %lld)", (long long)a, (long long)b);
    CHECK(okpu_wrap_mul(a, b) == ref_wrap((i128)a * b, 64), "wrap_mul(%lld, %lld)", (long long)a, (long long)b);
    CHECK(okpu_wrap_i32(a) == ref_wrap(a, 32), "wrap_i32(%lld)", (long long)a);
    CHECK(okpu_clamp_u8(a) == (a < 0 ? 0 : a > 255 ? 255 : a), "clamp_u8(%lld)", (long long)a);
}

static void test_against_definitions(void)
{
    size_t i, j;
    int n;
    int before = failed;

    for (i = 0; i < edge_count; i++) {
        check_shifts(edges[i]);
        check_wrap_clamp(edges[i], edges[(i * 7u + 3u) % edge_count]);
    }
    for (i = 0; i < edge_count; i += 3)
        for (j = 0; j < edge_count; j += 5)
            check_mul_shift(edges[i], edges[j]);
    for (n = -20000; n <= 20000; n++) /* every small value: all remainders of the small shifts */
        check_shifts(n);
    for (n = 0; n < 20000; n++) {
        int64_t a = rnd_value(), b = rnd_value();
        check_shifts(a);
        check_wrap_clamp(a, b);
        check_mul_shift(a, b);
        check_mul_shift((int32_t)a, (int32_t)b); /* nncase's int32 operands: the product never wraps */
    }
    /* Hand-checked anchors, so a wrong reference cannot agree with a wrong helper unnoticed. */
    CHECK(okpu_asr64(-1, 5) == -1 && okpu_asr64(-32, 5) == -1 && okpu_asr64(-33, 5) == -2, "asr anchors");
    CHECK(okpu_round_shift(5, 1, OKPU_ROUND_SDK_CARRY) == 3 && okpu_round_shift(-5, 1, OKPU_ROUND_SDK_CARRY) == -4,
          "carry 5>>1 = 3, -5>>1 = -4");
    CHECK(okpu_round_shift(-6, 2, OKPU_ROUND_SDK_CARRY) == -3 && okpu_round_shift(-7, 2, OKPU_ROUND_SDK_CARRY) == -2,
          "carry -6>>2 = -3, -7>>2 = -2");
    CHECK(okpu_round_shift(5, 1, OKPU_ROUND_HALF_EVEN) == 2 && okpu_round_shift(7, 1, OKPU_ROUND_HALF_EVEN) == 4 &&
              okpu_round_shift(-5, 1, OKPU_ROUND_HALF_EVEN) == -2,
          "half even 2.5 -> 2, 3.5 -> 4, -2.5 -> -2");
    CHECK(okpu_round_shift(5, 1, OKPU_ROUND_HALF_UP) == 3 && okpu_round_shift(-5, 1, OKPU_ROUND_HALF_UP) == -2,
          "half up 2.5 -> 3, -2.5 -> -2");
    /* nncase1: positives as half-even; negatives step down (kmodel-v5.md 4.3: -1.25 -> -3, -0.5 -> -2) */
    CHECK(okpu_round_shift(-5, 2, OKPU_ROUND_NNCASE1) == -3 && okpu_round_shift(-2, 2, OKPU_ROUND_NNCASE1) == -2 &&
              okpu_round_shift(-1, 2, OKPU_ROUND_NNCASE1) == -2 && okpu_round_shift(-6, 2, OKPU_ROUND_NNCASE1) == -2 &&
              okpu_round_shift(-4, 2, OKPU_ROUND_NNCASE1) == -1 && okpu_round_shift(-3, 1, OKPU_ROUND_NNCASE1) == -2 &&
              okpu_round_shift(-1, 1, OKPU_ROUND_NNCASE1) == -2,
          "nncase1 -5>>2 = -3, -2>>2 = -2, -1>>2 = -2, -6>>2 = -2, -4>>2 = -1, -3>>1 = -2, -1>>1 = -2");
    CHECK(okpu_round_shift(5, 2, OKPU_ROUND_NNCASE1) == 1 && okpu_round_shift(6, 2, OKPU_ROUND_NNCASE1) == 2 &&
              okpu_round_shift(2, 2, OKPU_ROUND_NNCASE1) == 0 && okpu_round_shift(7, 0, OKPU_ROUND_NNCASE1) == 7 &&
              okpu_round_shift(-7, 0, OKPU_ROUND_NNCASE1) == -7,
          "nncase1 5>>2 = 1, 6>>2 = 2, 2>>2 = 0, shift 0 = v");
    CHECK(okpu_round_shift(-1, 63, OKPU_ROUND_NNCASE1) == -2 &&
              okpu_round_shift(-((int64_t)1 << 62), 63, OKPU_ROUND_NNCASE1) == -2 &&
              okpu_round_shift(-((int64_t)1 << 62) - 1, 63, OKPU_ROUND_NNCASE1) == -1 &&
              okpu_round_shift(INT64_MIN, 63, OKPU_ROUND_NNCASE1) == -1 &&
              okpu_round_shift(INT64_MAX, 63, OKPU_ROUND_NNCASE1) == 1 &&
              okpu_round_shift((int64_t)1 << 62, 63, OKPU_ROUND_NNCASE1) == 0 &&
              okpu_round_shift(INT64_MIN, 64, OKPU_ROUND_NNCASE1) == -2 &&
              okpu_round_shift(-1, 255, OKPU_ROUND_NNCASE1) == -2 &&
              okpu_round_shift(INT64_MAX, 255, OKPU_ROUND_NNCASE1) == 0,
          "nncase1 at shift 63 and beyond");
    CHECK(okpu_round_shift(INT64_MAX, 63, OKPU_ROUND_HALF_UP) == 1 &&
              okpu_mul_shift(INT64_MAX, 1, 63, OKPU_ROUND_HALF_UP) == -1,
          "2^63-1 >> 63: exact half up 1, the wrapping register -1");
    CHECK(okpu_round_shift(INT64_MIN, 64, OKPU_ROUND_SDK_CARRY) == -2 &&
              okpu_round_shift(INT64_MIN, 255, OKPU_ROUND_SDK_CARRY) == -2 &&
              okpu_round_shift(INT64_MIN, 255, OKPU_ROUND_HALF_EVEN) == 0 && okpu_asr64(INT64_MIN, 255) == -1,
          "beyond the range");
    printf("definitions: %lu edge values, -20000..20000 and 20000 random ones, shifts 0..%u and %u beyond, %s\n",
           (unsigned long)edge_count, OKPU_SHIFT_MAX, (unsigned)(sizeof beyond / sizeof beyond[0]),
           failed == before ? "all equal" : "MISMATCHES");
}

/* ---- part 2: bit for bit what the core computed before arith.h ---- */

/* c_src/kernels/round.c */
static int64_t old_round_c_wrap(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}
static int64_t old_round_c_asr64(int64_t v, unsigned shift)
{
    if (shift == 0)
        return v;
    if (shift > 63)
        shift = 63;
    if (v >= 0)
        return v >> shift;
    return -(int64_t)(((uint64_t)(-(v + 1)) >> shift)) - 1;
}
static int64_t old_round_c_round_shift(int64_t v, unsigned shift, okpu_round_mode mode)
{
    int64_t q, rem, half;
    if (shift == 0)
        return v;
    if (shift > 62)
        shift = 62;
    switch (mode) {
    case OKPU_ROUND_SDK_CARRY:
        v = old_round_c_asr64(v, shift - 1);
        if (v % 2 != 0)
            return v >= 0 ? old_round_c_asr64(v, 1) + 1 : old_round_c_asr64(v, 1) - 1;
        return old_round_c_asr64(v, 1);
    case OKPU_ROUND_HALF_UP:
        return old_round_c_asr64(old_round_c_wrap((uint64_t)v + ((uint64_t)1 << (shift - 1))), shift);
    case OKPU_ROUND_HALF_EVEN:
    default:
        q = old_round_c_asr64(v, shift);
        rem = v - (int64_t)((uint64_t)q << shift);
        half = (int64_t)1 << (shift - 1);
        if (rem > half || (rem == half && (q % 2 != 0)))
            q++;
        return q;
    }
}

/* c_src/kpu/kpu_emu.c */
static int64_t old_emu_floor_shr(int64_t v, unsigned s)
{
    if (s == 0)
        return v;
    if (s >= 63)
        return v < 0 ? -1 : 0;
    if (v >= 0)
        return v >> s;
    return -1 - ((-(v + 1)) >> s);
}
static int64_t old_emu_round_shr(int64_t v, unsigned s, okpu_round_mode mode)
{
    int64_t q;
    uint64_t rem, half;
    if (s == 0)
        return v;
    if (mode == OKPU_ROUND_SDK_CARRY) {
        int64_t t = old_emu_floor_shr(v, s - 1);
        if ((uint64_t)t & 1u)
            return t >= 0 ? old_emu_floor_shr(t, 1) + 1 : old_emu_floor_shr(t, 1) - 1;
        return old_emu_floor_shr(t, 1);
    }
    if (s >= 64)
        return 0;
    q = old_emu_floor_shr(v, s);
    rem = (uint64_t)v & (((uint64_t)1 << s) - 1u);
    half = (uint64_t)1 << (s - 1);
    if (rem > half || (rem == half && (mode == OKPU_ROUND_HALF_UP || ((uint64_t)q & 1u))))
        return q + 1;
    return q;
}

/* c_src/kernels/neutral_kernels.c (the reader kept shift in 0..62) */
static int64_t old_v4_asr64(int64_t v, unsigned s)
{
    if (s == 0)
        return v;
    if (v >= 0)
        return v >> s;
    return -(int64_t)((((uint64_t)(-(v + 1))) >> s)) - 1;
}
static int32_t old_v4_wrap32(int64_t v)
{
    uint32_t u = (uint32_t)(uint64_t)v;
    return (u <= 0x7FFFFFFFu) ? (int32_t)u : (int32_t)(u - 0x80000000u) - 0x7FFFFFFF - 1;
}
static int32_t old_v4_mul_shift(int32_t v, int32_t mul, int32_t shift, okpu_round_mode mode)
{
    int64_t p = (int64_t)v * (int64_t)mul;
    unsigned s = (unsigned)(uint8_t)shift;
    int64_t r;
    if (s == 0) {
        r = p;
    } else if (s > 62) {
        r = p < 0 ? -1 : 0;
    } else if (mode == OKPU_ROUND_SDK_CARRY) {
        int64_t t = old_v4_asr64(p, s - 1);
        if (t & 1)
            r = (t < 0) ? old_v4_asr64(t, 1) - 1 : old_v4_asr64(t, 1) + 1;
        else
            r = old_v4_asr64(t, 1);
    } else if (mode == OKPU_ROUND_HALF_EVEN) {
        int64_t fl = old_v4_asr64(p, s);
        int64_t frac = p - fl * ((int64_t)1 << s);
        int64_t half = (int64_t)1 << (s - 1);
        r = fl;
        if (frac > half || (frac == half && (fl & 1)))
            r = fl + 1;
    } else {
        r = old_v4_asr64(p + ((int64_t)1 << (s - 1)), s);
    }
    return old_v4_wrap32(r);
}

static void check_old(int64_t v, int64_t mul)
{
    static const okpu_round_mode all_modes[4] = {OKPU_ROUND_HALF_EVEN, OKPU_ROUND_HALF_UP, OKPU_ROUND_SDK_CARRY,
                                                 (okpu_round_mode)7};
    unsigned i, m;
    for (i = 0; i < SHIFT_COUNT; i++) {
        unsigned s = shift_at(i);
        CHECK(okpu_asr64(v, s) == old_round_c_asr64(v, s) && okpu_asr64(v, s) == old_emu_floor_shr(v, s),
              "floor shift of %lld by %u differs from before", (long long)v, s);
        for (m = 0; m < 4; m++) {
            /* the emulator took any shift (its activation field is 8 bits) */
            CHECK(okpu_round_shift(v, s, all_modes[m]) == old_emu_round_shr(v, s, all_modes[m]),
                  "KPU activation rounding of %lld by %u (mode %d) differs from before", (long long)v, s,
                  (int)all_modes[m]);
            /* the v3 CPU layers: round.c over the product, shifts 0..62 (63 was turned into 62) */
            if (s <= 62)
                CHECK(okpu_mul_shift(v, mul, s, all_modes[m]) ==
                          old_round_c_round_shift(old_round_c_wrap((uint64_t)v * (uint64_t)mul), s, all_modes[m]),
                      "v3 multiply-shift of %lld * %lld by %u (mode %d) differs from before", (long long)v,
                      (long long)mul, s, (int)all_modes[m]);
            /* the v4 ops: int32 operands, shifts 0..62 */
            if (s <= 62)
                CHECK(okpu_v4_mul_shift((int32_t)v, (int32_t)mul, (int32_t)s, all_modes[m]) ==
                          old_v4_mul_shift((int32_t)v, (int32_t)mul, (int32_t)s, all_modes[m]),
                      "v4 multiply-shift of %d * %d by %u (mode %d) differs from before", (int32_t)v, (int32_t)mul, s,
                      (int)all_modes[m]);
        }
    }
}

static void test_same_as_before(void)
{
    size_t i;
    int n, m, before = failed;
    for (i = 0; i < edge_count; i++)
        check_old(edges[i], edges[(i * 13u + 5u) % edge_count]);
    for (n = 0; n < 20000; n++)
        check_old(rnd_value(), rnd_value());
    /* round.c rounded a shift of 63 as 62 (the v3 reader accepts 63): now 63 means 63. 1.25 * 2^61 / 2^63 = 0.3125
     * rounds to 0; the old code gave 1 (0.625 rounded). */
    for (m = 0; m < (int)MODE_COUNT; m++) {
        const int64_t v = (int64_t)5 << 59;
        CHECK(okpu_round_shift(v, 63, modes[m]) == 0 && okpu_mul_shift(v, 1, 63, modes[m]) == 0 &&
                  old_round_c_round_shift(v, 63, modes[m]) == 1,
              "shift 63 (%s)", mode_names[m]);
    }
    printf("before arith.h: round.c, kpu_emu.c and neutral_kernels.c formulations %s over their accepted inputs\n",
           failed == before ? "reproduced bit for bit" : "NOT reproduced");
}

/* kmodel v5's round-half-even of floats (its quantize) against the C library's nearbyintf in the default rounding
 * mode, round to nearest even: every 997th float over the whole range, and every float within a few ulps of the
 * halves and integers in [-64, 64] (ties and their neighbours). Compared as values: the kernel rounds (-0.5, 0) to
 * +0 where nearbyintf gives -0, the same integer for quantize. */
static void test_v5_round_even(void)
{
    uint64_t u;
    int k, d, before = failed;
    float x, want, got;

    for (u = 0; u < ((uint64_t)1 << 32) && failed - before < 5; u += 997) {
        const uint32_t bits = (uint32_t)u;
        memcpy(&x, &bits, 4);
        want = nearbyintf(x);
        got = okpu_v5_round_even(x);
        CHECK(want == got || (want != want && got != got), "okpu_v5_round_even(%a) = %a, nearbyintf %a", (double)x,
              (double)got, (double)want);
    }
    for (k = -128; k <= 128; k++)
        for (d = -4; d <= 4; d++) {
            uint32_t bits;
            x = (float)k * 0.5f;
            memcpy(&bits, &x, 4);
            bits = (uint32_t)((int64_t)bits + d);
            memcpy(&x, &bits, 4);
            want = nearbyintf(x);
            got = okpu_v5_round_even(x);
            CHECK(want == got || (want != want && got != got), "okpu_v5_round_even(%a) = %a, nearbyintf %a", (double)x,
                  (double)got, (double)want);
        }
}

int main(void)
{
    make_edges();
    test_against_definitions();
    test_same_as_before();
    test_v5_round_even();
    return ctest_summary();
}

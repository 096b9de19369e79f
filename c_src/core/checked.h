// SPDX-License-Identifier: Apache-2.0
/* Checked size arithmetic for the readers and kernels.
 *
 * Every size, count and offset a model file feeds into a computation goes through these: a product of four 32-bit
 * fields does not fit in 64 bits (2^31 * 2^31 * 4 wraps to 0), and a wrapped size lets a 0-byte range pass a bounds
 * check while the kernel walks billions of elements. Each helper computes in 64 bits and reports whether the exact
 * result exceeds `limit` (overflow of 64 bits counts as exceeding it), so one comparison covers both.
 *
 * Usage: `if (okpu_mul3(w, h, c, OKPU_SIZE_LIMIT, &n)) return error;` - n then holds the exact product. On failure
 * *out is set to UINT64_MAX so a caller that prints it shows an absurd value, never a wrapped small one. */
#ifndef OKPU_CORE_CHECKED_H
#define OKPU_CORE_CHECKED_H

#include <stdint.h>

/* No tensor, range or table of a K210 model can be larger than the chip's whole address space (6 MiB SRAM, 16 MiB
 * flash): 2^32 is far above anything real and far below where 64-bit products of the results could wrap. */
#define OKPU_SIZE_LIMIT ((uint64_t)0xFFFFFFFFu)

/* *out = a * b; returns 1 (and *out = UINT64_MAX) when the exact product exceeds limit. */
static inline int okpu_mul_ovf(uint64_t a, uint64_t b, uint64_t limit, uint64_t *out)
{
    if (a != 0 && b > limit / a) {
        *out = UINT64_MAX;
        return 1;
    }
    *out = a * b;
    return 0;
}

/* *out = a + b; returns 1 (and *out = UINT64_MAX) when the exact sum exceeds limit. */
static inline int okpu_add_ovf(uint64_t a, uint64_t b, uint64_t limit, uint64_t *out)
{
    if (a > limit || b > limit - a) {
        *out = UINT64_MAX;
        return 1;
    }
    *out = a + b;
    return 0;
}

/* Products of three and four factors, each partial product checked against the same limit. */
static inline int okpu_mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t limit, uint64_t *out)
{
    return okpu_mul_ovf(a, b, limit, out) || okpu_mul_ovf(*out, c, limit, out);
}

static inline int okpu_mul4(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t limit, uint64_t *out)
{
    return okpu_mul3(a, b, c, limit, out) || okpu_mul_ovf(*out, d, limit, out);
}

/* Saturating add for work counters: the sum, or UINT64_MAX when it would not fit. */
static inline uint64_t okpu_sat_add(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* Saturating product for work estimates (MACs, elements touched): never wraps to a small number. */
static inline uint64_t okpu_sat_mul(uint64_t a, uint64_t b)
{
    return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b;
}

/* Do [a, a + an) and [b, b + bn) share a byte? Empty ranges overlap nothing. */
static inline int okpu_ranges_overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
    return an != 0 && bn != 0 && a < b + bn && b < a + an;
}

#endif

// SPDX-License-Identifier: Apache-2.0
/* Little-endian field readers (and the writers tests and device models need). Model buffers are not assumed aligned, so fields are assembled byte by byte. */
#ifndef OKPU_CORE_BYTES_H
#define OKPU_CORE_BYTES_H

#include <stdint.h>
#include <string.h>

/* Do the n bytes at p and the m bytes at q miss each other? */
static inline int okpu_bytes_apart(const void *p, size_t n, const void *q, size_t m)
{
    const uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    return a + n <= b || b + m <= a;
}

/* Copy n bytes between buffers that miss each other, inline for the short rows of small maps where unaligned loads are
 * cheap (a library call per 10- to 40-byte row of a KPU layout cost more than its copy on x86-64): up to 64 bytes as
 * two fixed-size copies that overlap in the middle, which the compiler turns into a few loads and stores. Elsewhere
 * (the K210's rv64, which has no fast unaligned access: those copies would become byte loops) the library's memcpy. */
static inline void okpu_copy_short(uint8_t *dst, const uint8_t *src, size_t n)
{
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    if (n > 64)
        memcpy(dst, src, n);
    else if (n >= 32) {
        memcpy(dst, src, 32);
        memcpy(dst + n - 32, src + n - 32, 32);
    } else if (n >= 16) {
        memcpy(dst, src, 16);
        memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else
        while (n--)
            *dst++ = *src++;
#else
    memcpy(dst, src, n);
#endif
}

static inline uint32_t okpu_rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline int32_t okpu_rd_i32(const uint8_t *p)
{
    return (int32_t)okpu_rd_u32(p);
}

static inline uint64_t okpu_rd_u64(const uint8_t *p)
{
    return (uint64_t)okpu_rd_u32(p) | ((uint64_t)okpu_rd_u32(p + 4) << 32);
}

static inline float okpu_rd_f32(const uint8_t *p)
{
    uint32_t u = okpu_rd_u32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline void okpu_wr_f32(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}

static inline void okpu_wr_u64(uint8_t *p, uint64_t v)
{
    unsigned i;
    for (i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Sign-extend the low `bits` bits of v. */
static inline int64_t okpu_sext(uint64_t v, unsigned bits)
{
    uint64_t m = (uint64_t)1 << (bits - 1);
    v &= (bits == 64) ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
    return (int64_t)((v ^ m) - m);
}

/* Bits [lo, lo+n) of a 64-bit word. */
static inline uint64_t okpu_bits(uint64_t w, unsigned lo, unsigned n)
{
    return (w >> lo) & ((n == 64) ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1));
}

#endif

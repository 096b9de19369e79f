// SPDX-License-Identifier: Apache-2.0
/* kmodel v4 CPU kernels (see neutral_kernels.h for the semantics and the sources they follow). */
#include "fmath.h"
#include "neutral_kernels.h"

#include <math.h>
#include <string.h>

#include "../core/arith.h"
#include "../core/bytes.h"

#define RD(p, i) okpu_rd_f32((p) + (size_t)(i)*4u)
#define WR(p, i, v) okpu_wr_f32((p) + (size_t)(i)*4u, (v))

/* x86-64 with AVX2 (and FMA for the float kernels), checked at run time: quantize, dequantize and the quantized
 * binary op eight values at a time. -DOKPU_EMU_PORTABLE (the emulator's C-path test build) leaves them out. */
#if defined(__x86_64__) && !defined(OKPU_EMU_PORTABLE) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define V4_AVX2 1

static int avx2_fma(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

/* ---- integer helpers (core/arith.h) ---- */

/* (inline here: the kernels below call it per element) */
static inline int32_t mul_shift_v4(int32_t v, int32_t mul, int32_t shift, okpu_round_mode mode)
{
    /* nncase passes the shift as uint8_t; a mode nncase has no name for takes its own rounding, half up */
    if (mode != OKPU_ROUND_SDK_CARRY && mode != OKPU_ROUND_HALF_EVEN)
        mode = OKPU_ROUND_HALF_UP;
    return okpu_wrap_i32(okpu_mul_shift(v, mul, (unsigned)(uint8_t)shift, mode));
}

int32_t okpu_v4_mul_shift(int32_t v, int32_t mul, int32_t shift, okpu_round_mode mode)
{
    return mul_shift_v4(v, mul, shift, mode);
}

int64_t okpu_v4_windowed_size(int64_t size, int64_t filter, int64_t stride, int64_t dilation, int64_t pad_before,
                         int64_t pad_after)
{
    int64_t eff = (filter - 1) * dilation + 1;
    int64_t num = size + pad_before + pad_after - eff + stride;
    if (stride <= 0)
        return -1;
    /* C++ truncating division, as nncase */
    return num / stride;
}

float okpu_v4_clampf(float v, float lo, float hi)
{
    return (v < lo) ? lo : ((hi < v) ? hi : v);
}

static float fmin_nn(float a, float b) { return (b < a) ? b : a; } /* std::min */
static float fmax_nn(float a, float b) { return (a < b) ? b : a; } /* std::max */

static size_t off4(const int32_t s[4], int32_t i0, int32_t i1, int32_t i2, int32_t i3)
{
    return (((size_t)i0 * (size_t)s[1] + (size_t)i1) * (size_t)s[2] + (size_t)i2) * (size_t)s[3] + (size_t)i3;
}

static size_t prod4(const int32_t s[4])
{
    return (size_t)s[0] * (size_t)s[1] * (size_t)s[2] * (size_t)s[3];
}

static int same_shape(const int32_t a[4], const int32_t b[4])
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/* ---- binary ---- */

static float bin_f(int op, float a, float b)
{
    switch (op) {
    case V4_BIN_ADD: return a + b;
    case V4_BIN_SUB: return a - b;
    case V4_BIN_MUL: return a * b;
    case V4_BIN_DIV: return a / b;
    case V4_BIN_MIN: return fmin_nn(a, b);
    default: return fmax_nn(a, b);
    }
}

void okpu_v4k_binary(const uint8_t *a, const uint8_t *b, uint8_t *out, const int32_t sa[4], const int32_t sb[4],
                const int32_t so[4], int op, float lo, float hi)
{
    if (same_shape(sa, sb)) {
        size_t i, n = prod4(sa);
        for (i = 0; i < n; i++)
            WR(out, i, okpu_v4_clampf(bin_f(op, RD(a, i), RD(b, i)), lo, hi));
    } else {
        int32_t d0, d1, d2, d3;
        for (d0 = 0; d0 < so[0]; d0++)
            for (d1 = 0; d1 < so[1]; d1++)
                for (d2 = 0; d2 < so[2]; d2++)
                    for (d3 = 0; d3 < so[3]; d3++) {
                        size_t ia = off4(sa, d0 < sa[0] ? d0 : 0, d1 < sa[1] ? d1 : 0, d2 < sa[2] ? d2 : 0,
                                         d3 < sa[3] ? d3 : 0);
                        size_t ib = off4(sb, d0 < sb[0] ? d0 : 0, d1 < sb[1] ? d1 : 0, d2 < sb[2] ? d2 : 0,
                                         d3 < sb[3] ? d3 : 0);
                        WR(out, off4(so, d0, d1, d2, d3), okpu_v4_clampf(bin_f(op, RD(a, ia), RD(b, ib)), lo, hi));
                    }
    }
}

static int32_t bin_i(int op, int32_t a, int32_t b)
{
    switch (op) {
    case V4_BIN_ADD: return okpu_wrap_i32((int64_t)a + b);
    case V4_BIN_SUB: return okpu_wrap_i32((int64_t)a - b);
    case V4_BIN_MUL: return okpu_wrap_i32((int64_t)a * b);
    case V4_BIN_DIV: {
        /* nncase: (a + b / 2) / b, int32; RISC-V DIV: x / 0 = -1, INT32_MIN / -1 = INT32_MIN */
        int32_t n = okpu_wrap_i32((int64_t)a + b / 2);
        if (b == 0)
            return -1;
        if (b == -1)
            return okpu_wrap_i32(-(int64_t)n);
        return n / b;
    }
    case V4_BIN_MIN: return (b < a) ? b : a;
    default: return (a < b) ? b : a;
    }
}

/* Each operand's rescale, mul_shift(x + offset), depends on its byte alone: a table of 256 (cheaper than two
 * multiply-shifts per element once a tensor has more than a few hundred). */
static void qbin_table(int32_t t[256], int32_t offset, int32_t mul, int32_t shift, okpu_round_mode mode)
{
    int v;
    for (v = 0; v < 256; v++)
        t[v] = mul_shift_v4(okpu_wrap_i32((int64_t)v + offset), mul, shift, mode);
}

static inline uint8_t qbin_out(int32_t v, int32_t mul, int32_t shift, int32_t offset, okpu_round_mode mode)
{
    return okpu_clamp_u8((int64_t)mul_shift_v4(v, mul, shift, mode) + offset);
}

#ifdef V4_AVX2
/* floor(x / 2^s) for |x| <= 2^62 + 2^61 as a logical shift of x + 2^62 (no wrap as uint64) less 2^(62-s). */
__attribute__((target("avx2"))) static inline __m256i floor_shift4(__m256i x, __m128i s, __m256i unbias)
{
    return _mm256_sub_epi64(_mm256_srl_epi64(_mm256_add_epi64(x, _mm256_set1_epi64x((int64_t)1 << 62)), s), unbias);
}

/* The same-shape quantized binary op eight values at a time, for every op but division and shifts 1..62: the
 * operands' rescales by table (vpgatherdd), the op on int32 lanes (wrapping as bin_i does), the output's
 * multiply-shift on int64 lanes (p = v * mul is an int32 product, |p| <= 2^62) rounded as okpu_mul_shift rounds,
 * then wrapped to int32, offset and clamped. Returns how many it did (a multiple of 8). */
__attribute__((target("avx2"))) static size_t qbin_avx2(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t n,
                                                       const int32_t *ta, const int32_t *tb, int op, int32_t mul,
                                                       unsigned s, int32_t offset, okpu_round_mode mode)
{
    const __m128i sh = _mm_cvtsi32_si128((int)s), sh1 = _mm_cvtsi32_si128((int)s - 1), sh_one = _mm_cvtsi32_si128(1);
    const __m256i unbias = _mm256_set1_epi64x((int64_t)(((uint64_t)1 << 62) >> s));
    const __m256i unbias1 = _mm256_set1_epi64x((int64_t)(((uint64_t)1 << 62) >> (s - 1)));
    const __m256i unbias_one = _mm256_set1_epi64x((int64_t)1 << 61);
    const __m256i mv = _mm256_set1_epi64x(mul), half = _mm256_set1_epi64x((int64_t)1 << (s - 1));
    const __m256i low_bits = _mm256_set1_epi64x(((int64_t)1 << s) - 1), one = _mm256_set1_epi64x(1);
    const __m256i off = _mm256_set1_epi64x(offset), top = _mm256_set1_epi64x(255), zero = _mm256_setzero_si256();
    const __m256i even_dwords = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    size_t i;
    int h;

    for (i = 0; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_i32gather_epi32(ta, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(a + i))), 4);
        const __m256i y = _mm256_i32gather_epi32(tb, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(b + i))), 4);
        const __m256i v = op == V4_BIN_ADD ? _mm256_add_epi32(x, y)
                          : op == V4_BIN_SUB ? _mm256_sub_epi32(x, y)
                          : op == V4_BIN_MUL ? _mm256_mullo_epi32(x, y)
                          : op == V4_BIN_MIN ? _mm256_min_epi32(x, y)
                                             : _mm256_max_epi32(x, y);
        __m128i bytes[2];
        for (h = 0; h < 2; h++) {
            const __m256i p = _mm256_mul_epi32(_mm256_cvtepi32_epi64(h ? _mm256_extracti128_si256(v, 1)
                                                                        : _mm256_castsi256_si128(v)), mv);
            __m256i r, q;
            if (mode == OKPU_ROUND_HALF_EVEN) {
                /* q + 1 when the remainder passes half, or is half and q is odd */
                const __m256i rem = _mm256_and_si256(p, low_bits);
                q = floor_shift4(p, sh, unbias);
                r = _mm256_or_si256(_mm256_cmpgt_epi64(rem, half),
                                    _mm256_and_si256(_mm256_cmpeq_epi64(rem, half),
                                                     _mm256_cmpeq_epi64(_mm256_and_si256(q, one), one)));
                r = _mm256_sub_epi64(q, r);
            } else if (mode == OKPU_ROUND_SDK_CARRY) {
                /* t = floor(p / 2^(s-1)); floor(t / 2), then +1 (t >= 0) or -1 (t < 0) when t is odd */
                const __m256i t = floor_shift4(p, sh1, unbias1);
                const __m256i odd = _mm256_cmpeq_epi64(_mm256_and_si256(t, one), one);
                const __m256i neg = _mm256_cmpgt_epi64(zero, t);
                q = floor_shift4(t, sh_one, unbias_one);
                r = _mm256_add_epi64(q, _mm256_and_si256(odd, _mm256_or_si256(neg, one))); /* (neg | 1: -1 or 1) */
            } else {
                r = floor_shift4(_mm256_add_epi64(p, half), sh, unbias);
            }
            /* wrap to int32 (the low halves, sign-extended), add the offset, clamp to 0..255 */
            r = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(_mm256_permutevar8x32_epi32(r, even_dwords)));
            r = _mm256_add_epi64(r, off);
            r = _mm256_blendv_epi8(r, top, _mm256_cmpgt_epi64(r, top));
            r = _mm256_blendv_epi8(r, zero, _mm256_cmpgt_epi64(zero, r));
            bytes[h] = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(r, even_dwords)); /* 4 x int32 */
        }
        bytes[0] = _mm_packs_epi32(bytes[0], bytes[1]);
        _mm_storel_epi64((__m128i *)(void *)(out + i), _mm_packus_epi16(bytes[0], bytes[0]));
    }
    return i;
}
#endif

/* out[i] = the rescaled op of ta[a[i]] and tb[b[i]] for i in [0, n), in order (so out may be a or b). */
static void qbin_flat(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t n, const int32_t *ta, const int32_t *tb,
                      int op, int32_t mul, int32_t shift, int32_t offset, okpu_round_mode mode)
{
    size_t i = 0;

#ifdef V4_AVX2
    if (op != V4_BIN_DIV && (uint8_t)shift >= 1 && (uint8_t)shift <= 62 && __builtin_cpu_supports("avx2"))
        i = qbin_avx2(a, b, out, n, ta, tb, op, mul, (uint8_t)shift, offset,
                      mode == OKPU_ROUND_SDK_CARRY || mode == OKPU_ROUND_HALF_EVEN ? mode : OKPU_ROUND_HALF_UP);
#endif
    /* one loop per rounding mode, the mode a constant in each */
#define QBIN_LOOP(MODE)                                                                                               \
    for (; i < n; i++)                                                                                                \
        out[i] = qbin_out(bin_i(op, ta[a[i]], tb[b[i]]), mul, shift, offset, MODE);
    if (mode == OKPU_ROUND_SDK_CARRY) {
        QBIN_LOOP(OKPU_ROUND_SDK_CARRY)
    } else if (mode == OKPU_ROUND_HALF_EVEN) {
        QBIN_LOOP(OKPU_ROUND_HALF_EVEN)
    } else if ((uint8_t)shift >= 1 && (uint8_t)shift <= 62) {
        /* half up (every other mode is, here: mul_shift_v4) with the usual shifts: p = v * mul is an int32 product,
         * |p| <= 2^62, so p + 2^(s-1) does not wrap, and floor(x / 2^s) is a logical shift of x + 2^62 less
         * 2^(62-s): no branch on the sign */
        const unsigned sh = (uint8_t)shift;
        const int64_t half = (int64_t)1 << (sh - 1);
        const uint64_t bias = (uint64_t)1 << 62;
        for (; i < n; i++) {
            const int64_t q = (int64_t)bin_i(op, ta[a[i]], tb[b[i]]) * mul + half;
            out[i] = okpu_clamp_u8((int64_t)okpu_wrap_i32((int64_t)(((uint64_t)q + bias) >> sh) -
                                                          (int64_t)(bias >> sh)) + offset);
        }
    } else {
        QBIN_LOOP(OKPU_ROUND_HALF_UP)
    }
#undef QBIN_LOOP
}

#define QBIN_BLOCK 256u

void okpu_v4k_quantized_binary(const uint8_t *a, const uint8_t *b, uint8_t *out, const int32_t sa[4], const int32_t sb[4],
                          const int32_t so[4], int op, const okpu_v4_qbin_params *p, okpu_round_mode mode)
{
    /* (in locals: stores through the uint8_t output could alias *p, which the compiler would then reload) */
    const int32_t mul = p->out_mul, shift = p->out_shift, offset = p->out_offset;
    int32_t ta[256], tb[256];
    int32_t d0, d1, d2, d3;

    qbin_table(ta, p->a_offset, p->a_mul, p->a_shift, mode);
    qbin_table(tb, p->b_offset, p->b_mul, p->b_shift, mode);
    if (same_shape(sa, sb)) {
        qbin_flat(a, b, out, prod4(sa), ta, tb, op, mul, shift, offset, mode);
    } else if (okpu_bytes_apart(out, prod4(so), a, prod4(sa)) && okpu_bytes_apart(out, prod4(so), b, prod4(sb))) {
        /* broadcast, the output apart from both inputs: blocks of outputs in order, each block's operand bytes
         * gathered first (a dimension an operand lacks reads its index 0), then the same loop as one shape */
        uint8_t ga[QBIN_BLOCK], gb[QBIN_BLOCK];
        size_t j = 0, done = 0;
        for (d0 = 0; d0 < so[0]; d0++)
            for (d1 = 0; d1 < so[1]; d1++) {
                const uint8_t *pa = a + off4(sa, d0 < sa[0] ? d0 : 0, d1 < sa[1] ? d1 : 0, 0, 0);
                const uint8_t *pb = b + off4(sb, d0 < sb[0] ? d0 : 0, d1 < sb[1] ? d1 : 0, 0, 0);
                for (d2 = 0; d2 < so[2]; d2++) {
                    const uint8_t *ra = pa + (size_t)(d2 < sa[2] ? d2 : 0) * (size_t)sa[3];
                    const uint8_t *rb = pb + (size_t)(d2 < sb[2] ? d2 : 0) * (size_t)sb[3];
                    for (d3 = 0; d3 < so[3]; d3++) {
                        ga[j] = ra[d3 < sa[3] ? d3 : 0];
                        gb[j] = rb[d3 < sb[3] ? d3 : 0];
                        if (++j == QBIN_BLOCK) {
                            qbin_flat(ga, gb, out + done, j, ta, tb, op, mul, shift, offset, mode);
                            done += j;
                            j = 0;
                        }
                    }
                }
            }
        qbin_flat(ga, gb, out + done, j, ta, tb, op, mul, shift, offset, mode);
    } else {
        /* (an output over an input: element by element, each read before the writes that follow it) */
        for (d0 = 0; d0 < so[0]; d0++)
            for (d1 = 0; d1 < so[1]; d1++)
                for (d2 = 0; d2 < so[2]; d2++)
                    for (d3 = 0; d3 < so[3]; d3++) {
                        size_t ia = off4(sa, d0 < sa[0] ? d0 : 0, d1 < sa[1] ? d1 : 0, d2 < sa[2] ? d2 : 0,
                                         d3 < sa[3] ? d3 : 0);
                        size_t ib = off4(sb, d0 < sb[0] ? d0 : 0, d1 < sb[1] ? d1 : 0, d2 < sb[2] ? d2 : 0,
                                         d3 < sb[3] ? d3 : 0);
                        out[off4(so, d0, d1, d2, d3)] = qbin_out(bin_i(op, ta[a[ia]], tb[b[ib]]), mul, shift, offset,
                                                                 mode);
                    }
    }
}

/* ---- concat ---- */

void okpu_v4k_concat(uint8_t *out, const uint8_t *const *inputs, const int32_t *dims, uint32_t count, uint32_t inner,
                uint32_t outer)
{
    uint32_t oc, i;
    for (oc = 0; oc < outer; oc++)
        for (i = 0; i < count; i++) {
            size_t size = (size_t)inner * (size_t)dims[i];
            memmove(out, inputs[i] + (size_t)oc * size, size);
            out += size;
        }
}

/* ---- convolutions ---- */

/* Is input row/col `origin + dilation*k` inside [0, size)? (equivalent to nncase's filter start/end bounds) */
static int tap_in(int64_t origin, int32_t k, int32_t dilation, int32_t size)
{
    int64_t p = origin + (int64_t)dilation * k;
    return p >= 0 && p < size;
}

void okpu_v4k_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias, const int32_t in_shape[4],
                int32_t groups, int32_t out_channels, const okpu_v4_window *w, float lo, float hi)
{
    int32_t out_h = (int32_t)okpu_v4_windowed_size(in_shape[2], w->filter_h, w->stride_h, w->dilation_h, w->pad_h_before,
                                              w->pad_h_after);
    int32_t out_w = (int32_t)okpu_v4_windowed_size(in_shape[3], w->filter_w, w->stride_w, w->dilation_w, w->pad_w_before,
                                              w->pad_w_after);
    int32_t g_ic = in_shape[1] / groups, g_oc = out_channels / groups;
    size_t plane = (size_t)in_shape[2] * (size_t)in_shape[3], ksz = (size_t)w->filter_h * (size_t)w->filter_w;
    size_t o = 0;
    int32_t n, og, oc, oy, ox, ic, ky, kx;
    for (n = 0; n < in_shape[0]; n++)
        for (og = 0; og < groups; og++)
            for (oc = 0; oc < g_oc; oc++) {
                size_t wo = ((size_t)og * g_oc + oc) * g_ic * ksz;
                for (oy = 0; oy < out_h; oy++)
                    for (ox = 0; ox < out_w; ox++) {
                        int32_t iy0 = oy * w->stride_h - w->pad_h_before, ix0 = ox * w->stride_w - w->pad_w_before;
                        float v = RD(bias, (size_t)og * g_oc + oc);
                        for (ic = 0; ic < g_ic; ic++) {
                            size_t ci = ((size_t)n * in_shape[1] + (size_t)og * g_ic + ic) * plane;
                            for (ky = 0; ky < w->filter_h; ky++) {
                                if (!tap_in(iy0, ky, w->dilation_h, in_shape[2]))
                                    continue;
                                for (kx = 0; kx < w->filter_w; kx++) {
                                    int32_t y, x;
                                    if (!tap_in(ix0, kx, w->dilation_w, in_shape[3]))
                                        continue;
                                    y = iy0 + w->dilation_h * ky;
                                    x = ix0 + w->dilation_w * kx;
                                    v = fmaf(RD(in, ci + (size_t)y * in_shape[3] + x),
                                             RD(weights, wo + ic * ksz + (size_t)ky * w->filter_w + kx), v);
                                }
                            }
                        }
                        WR(out, o++, okpu_v4_clampf(v, lo, hi));
                    }
            }
}

void okpu_v4k_quantized_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                          const int32_t in_shape[4], int32_t groups, int32_t out_channels, const okpu_v4_window *w,
                          const okpu_v4_qconv_params *p, okpu_round_mode mode)
{
    int32_t out_h = (int32_t)okpu_v4_windowed_size(in_shape[2], w->filter_h, w->stride_h, w->dilation_h, w->pad_h_before,
                                              w->pad_h_after);
    int32_t out_w = (int32_t)okpu_v4_windowed_size(in_shape[3], w->filter_w, w->stride_w, w->dilation_w, w->pad_w_before,
                                              w->pad_w_after);
    int32_t g_ic = in_shape[1] / groups, g_oc = out_channels / groups;
    size_t plane = (size_t)in_shape[2] * (size_t)in_shape[3], ksz = (size_t)w->filter_h * (size_t)w->filter_w;
    size_t o = 0;
    int32_t n, og, oc, oy, ox, ic, ky, kx;
    for (n = 0; n < in_shape[0]; n++)
        for (og = 0; og < groups; og++)
            for (oc = 0; oc < g_oc; oc++) {
                size_t wo = ((size_t)og * g_oc + oc) * g_ic * ksz;
                for (oy = 0; oy < out_h; oy++)
                    for (ox = 0; ox < out_w; ox++) {
                        int32_t iy0 = oy * w->stride_h - w->pad_h_before, ix0 = ox * w->stride_w - w->pad_w_before;
                        uint32_t acc = (uint32_t)okpu_rd_i32(bias + ((size_t)og * g_oc + oc) * 4u); /* int32, wraps */
                        int32_t r;
                        for (ic = 0; ic < g_ic; ic++) {
                            size_t ci = ((size_t)n * in_shape[1] + (size_t)og * g_ic + ic) * plane;
                            for (ky = 0; ky < w->filter_h; ky++) {
                                if (!tap_in(iy0, ky, w->dilation_h, in_shape[2]))
                                    continue;
                                for (kx = 0; kx < w->filter_w; kx++) {
                                    int32_t y, x;
                                    int64_t xv, wv;
                                    if (!tap_in(ix0, kx, w->dilation_w, in_shape[3]))
                                        continue;
                                    y = iy0 + w->dilation_h * ky;
                                    x = ix0 + w->dilation_w * kx;
                                    xv = (int64_t)in[ci + (size_t)y * in_shape[3] + x] + p->input_offset;
                                    wv = (int64_t)weights[wo + ic * ksz + (size_t)ky * w->filter_w + kx] +
                                         p->filter_offset;
                                    acc += (uint32_t)okpu_wrap_i32(okpu_wrap_i32(xv) * (int64_t)okpu_wrap_i32(wv));
                                }
                            }
                        }
                        r = mul_shift_v4(okpu_wrap_i32((int64_t)acc), p->output_mul, p->output_shift, mode);
                        out[o++] = okpu_clamp_u8((int64_t)r + p->output_offset);
                    }
            }
}

void okpu_v4k_conv2d_transpose(const uint8_t *in, uint8_t *out, const uint8_t *weights, const int32_t in_shape[4],
                          const int32_t out_shape[4], int32_t groups, const okpu_v4_window *w, float lo, float hi)
{
    size_t total = prod4(out_shape), i, ii = 0;
    int32_t g_ic = in_shape[1] / groups, g_oc = out_shape[1] / groups;
    size_t oplane = (size_t)out_shape[2] * (size_t)out_shape[3], ksz = (size_t)w->filter_h * (size_t)w->filter_w;
    int32_t n, g, ic, iy, ix, oc, ky, kx;
    for (i = 0; i < total; i++)
        WR(out, i, 0.0f);
    for (n = 0; n < in_shape[0]; n++)
        for (g = 0; g < groups; g++)
            for (ic = 0; ic < g_ic; ic++)
                for (iy = 0; iy < in_shape[2]; iy++)
                    for (ix = 0; ix < in_shape[3]; ix++) {
                        /* 64-bit: iy * stride_h reaches 2^24 * 4096, past int32 */
                        int64_t oy0 = (int64_t)iy * w->stride_h - w->pad_h_before;
                        int64_t ox0 = (int64_t)ix * w->stride_w - w->pad_w_before;
                        float x = RD(in, ii++);
                        for (oc = 0; oc < g_oc; oc++) {
                            size_t ob = ((size_t)n * out_shape[1] + (size_t)g * g_oc + oc) * oplane;
                            size_t wb = (((size_t)g * g_oc + oc) * g_ic + ic) * ksz;
                            for (ky = 0; ky < w->filter_h; ky++) {
                                if (!tap_in(oy0, ky, w->dilation_h, out_shape[2]))
                                    continue;
                                for (kx = 0; kx < w->filter_w; kx++) {
                                    size_t oi;
                                    if (!tap_in(ox0, kx, w->dilation_w, out_shape[3]))
                                        continue;
                                    oi = ob + (size_t)(oy0 + w->dilation_h * ky) * out_shape[3] +
                                         (size_t)(ox0 + w->dilation_w * kx);
                                    WR(out, oi, fmaf(x, RD(weights, wb + (size_t)ky * w->filter_w + kx), RD(out, oi)));
                                }
                            }
                        }
                    }
    for (i = 0; i < total; i++)
        WR(out, i, okpu_v4_clampf(RD(out, i), lo, hi));
}

/* ---- quantize / dequantize ---- */

#ifdef V4_AVX2
/* vfmadd is the fused multiply-add fmaf is, and vroundps's nearest mode rounds ties to even, as round_half_even does. */
__attribute__((target("avx2,fma"))) static uint32_t dequantize_avx2(const uint8_t *in, uint8_t *out, uint32_t count,
                                                                   float s, float z)
{
    const __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps(z);
    uint32_t i;

    for (i = 0; i + 8 <= count; i += 8) {
        const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(in + i))));
        _mm256_storeu_ps((float *)(void *)(out + (size_t)i * 4u), _mm256_fmadd_ps(x, vs, vz));
    }
    return i;
}

/* NaN becomes 255 (the scalar path's saturating conversion gives INT32_MAX), the rest is clamped to 0..255. */
__attribute__((target("avx2,fma"))) static uint32_t quantize_avx2(const uint8_t *in, uint8_t *out, uint32_t count,
                                                                 float scale, float z)
{
    const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps(z);
    const __m256 lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.0f);
    uint32_t i;

    for (i = 0; i + 8 <= count; i += 8) {
        const __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps((const float *)(const void *)(in + (size_t)i * 4u)), vs, vz);
        const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m128i w;
        r = _mm256_blendv_ps(_mm256_min_ps(_mm256_max_ps(r, lo), hi), hi, nan);
        w = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_cvtps_epi32(r)), _mm256_extracti128_si256(_mm256_cvtps_epi32(r), 1));
        _mm_storel_epi64((__m128i *)(void *)(out + i), _mm_packus_epi16(w, w));
    }
    return i;
}
#endif

void okpu_k_u8_fma_f32(const uint8_t *in, uint8_t *out, uint32_t count, float s, float z)
{
    uint32_t i = 0;
#ifdef V4_AVX2
    if (avx2_fma())
        i = dequantize_avx2(in, out, count, s, z);
#endif
    for (; i < count; i++)
        WR(out, i, fmaf((float)in[i], s, z));
}

void okpu_v4k_dequantize(const uint8_t *in, uint8_t *out, uint32_t count, int32_t zero_point, float scale)
{
    float s = 1.0f / scale;
    float z = (float)(-(int64_t)zero_point) * s;
    okpu_k_u8_fma_f32(in, out, count, s, z);
}

static int64_t sat_i32f(float v) /* RISC-V fcvt.w.s saturation: NaN -> INT32_MAX */
{
    if (v != v || v >= 2147483648.0f)
        return 2147483647;
    if (v < -2147483648.0f)
        return -2147483647 - 1;
    return (int64_t)v;
}

/* floorf without the library call (the same for every float but NaN, checked exhaustively): a float of magnitude
 * 2^23 or more is an integer already (or inf), zero keeps its sign; otherwise the conversion to int32 truncates
 * exactly. v is not NaN. */
static inline float floor_f(float v)
{
    float t;
    if (!(v > -8388608.0f && v < 8388608.0f) || v == 0.0f)
        return v;
    t = (float)(int32_t)v;
    return t > v ? t - 1.0f : t;
}

/* v is not NaN. fl is an integer: even when its magnitude is 2^24 or more, else by its low bit. */
static inline float round_half_even(float v)
{
    float fl = floor_f(v), d = v - fl;
    if (d > 0.5f)
        return fl + 1.0f;
    if (d < 0.5f)
        return fl;
    return (fabsf(fl) >= 16777216.0f || ((int32_t)fl & 1) == 0) ? fl : fl + 1.0f;
}

void okpu_v4k_quantize(const uint8_t *in, uint8_t *out, uint32_t count, int32_t zero_point, float scale)
{
    float z = (float)zero_point;
    uint32_t i = 0, pairs = count / 2u * 2u;
#ifdef V4_AVX2
    if (avx2_fma())
        i = quantize_avx2(in, out, pairs, scale, z);
#endif
    for (; i < pairs; i++) {
        float v = fmaf(RD(in, i), scale, z);
        out[i] = okpu_clamp_u8(v != v ? 2147483647 : sat_i32f(round_half_even(v)));
    }
    if (count % 2u) {
        float v = fmaf(RD(in, count - 1), scale, z);
        out[count - 1] = okpu_clamp_u8(v != v ? 2147483647 : sat_i32f(roundf(v)));
    }
}

/* ---- matmul ---- */

void okpu_v4k_matmul(const uint8_t *a, const uint8_t *b, uint8_t *out, const uint8_t *bias, int32_t a_rows, int32_t a_cols,
                int32_t b_cols, float lo, float hi)
{
    int32_t r, c, i;
    for (r = 0; r < a_rows; r++)
        for (c = 0; c < b_cols; c++) {
            float v = RD(bias, c);
            for (i = 0; i < a_cols; i++)
                v = fmaf(RD(a, (size_t)r * a_cols + i), RD(b, (size_t)i * b_cols + c), v);
            WR(out, (size_t)r * b_cols + c, okpu_v4_clampf(v, lo, hi));
        }
}

void okpu_v4k_quantized_matmul(const uint8_t *a, const uint8_t *b, uint8_t *out, const uint8_t *bias, int32_t a_rows,
                          int32_t a_cols, int32_t b_cols, int32_t a_offset, int32_t b_offset, int32_t out_mul,
                          int32_t out_shift, int32_t out_offset, okpu_round_mode mode)
{
    int32_t r, c, i;
    for (r = 0; r < a_rows; r++)
        for (c = 0; c < b_cols; c++) {
            uint32_t acc = (uint32_t)okpu_rd_i32(bias + (size_t)c * 4u);
            int32_t v;
            for (i = 0; i < a_cols; i++) {
                int32_t av = okpu_wrap_i32((int64_t)a[(size_t)r * a_cols + i] + a_offset);
                int32_t bv = okpu_wrap_i32((int64_t)b[(size_t)i * b_cols + c] + b_offset);
                acc += (uint32_t)okpu_wrap_i32((int64_t)av * bv);
            }
            v = mul_shift_v4((int32_t)okpu_wrap_i32((int64_t)acc), out_mul, out_shift, mode);
            out[(size_t)r * b_cols + c] = okpu_clamp_u8((int64_t)v + out_offset);
        }
}

/* ---- pad / transpose / slice ---- */

/* es bytes of `value`, n times from out. */
static uint8_t *fill_elems(uint8_t *out, const uint8_t value[4], uint32_t es, size_t n)
{
    size_t i;
    if (es == 1) {
        memset(out, value[0], n);
        return out + n;
    }
    for (i = 0; i < n; i++, out += es)
        memcpy(out, value, es);
    return out;
}

/* Row by row of the output's last dimension: pad_value, the input row's kept span, pad_value. A negative padding
 * crops: the output coordinate d reads input d - before on every axis. */
void okpu_v4k_pad_planes(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t paddings[8],
                         const uint8_t pad_value[4], uint32_t es, size_t first, size_t end)
{
    int32_t os[4], lo[4], hi[4], d0, d1, d2, k;
    size_t q;
    for (k = 0; k < 4; k++) {
        os[k] = in_shape[k] + paddings[2 * k] + paddings[2 * k + 1];
        /* the output coordinates that read the input: [lo, hi) */
        lo[k] = paddings[2 * k] > 0 ? paddings[2 * k] : 0;
        hi[k] = paddings[2 * k + 1] > 0 ? os[k] - paddings[2 * k + 1] : os[k];
    }
    out += first * (size_t)os[2] * (size_t)os[3] * es;
    for (q = first; q < end; q++) {
        d0 = (int32_t)(q / (size_t)os[1]);
        d1 = (int32_t)(q % (size_t)os[1]);
        if (paddings[6] == 0 && paddings[7] == 0 && d0 >= lo[0] && d0 < hi[0] && d1 >= lo[1] && d1 < hi[1] &&
            lo[2] < hi[2]) {
            /* Rows neither padded nor cropped: the input rows an output plane reads follow each other in both
             * tensors, one copy (ULFFD pads a 20x15 map to 20x16 in 128 channels: 1920 row copies before). */
            const size_t row = (size_t)os[3] * es;
            out = fill_elems(out, pad_value, es, (size_t)lo[2] * (size_t)os[3]);
            memcpy(out, in + off4(in_shape, d0 - paddings[0], d1 - paddings[2], lo[2] - paddings[4], 0) * es,
                   (size_t)(hi[2] - lo[2]) * row);
            out += (size_t)(hi[2] - lo[2]) * row;
            out = fill_elems(out, pad_value, es, (size_t)(os[2] - hi[2]) * (size_t)os[3]);
            continue;
        }
        for (d2 = 0; d2 < os[2]; d2++) {
            if (d0 < lo[0] || d0 >= hi[0] || d1 < lo[1] || d1 >= hi[1] || d2 < lo[2] || d2 >= hi[2] ||
                lo[3] >= hi[3]) {
                out = fill_elems(out, pad_value, es, (size_t)os[3]);
                continue;
            }
            out = fill_elems(out, pad_value, es, (size_t)lo[3]);
            memcpy(out,
                   in + off4(in_shape, d0 - paddings[0], d1 - paddings[2], d2 - paddings[4], lo[3] - paddings[6]) * es,
                   (size_t)(hi[3] - lo[3]) * es);
            out += (size_t)(hi[3] - lo[3]) * es;
            out = fill_elems(out, pad_value, es, (size_t)(os[3] - hi[3]));
        }
    }
}

void okpu_v4k_pad(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t paddings[8],
                  const uint8_t pad_value[4], uint32_t es)
{
    okpu_v4k_pad_planes(in, out, in_shape, paddings, pad_value, es, 0,
                        (size_t)(in_shape[0] + paddings[0] + paddings[1]) *
                            (size_t)(in_shape[1] + paddings[2] + paddings[3]));
}

/* The output axes the transpose loops over, outermost first (ax[0], ax[1], ax[2]), and the innermost (*inner): the
 * output axis of most elements (ties: the later one), so that NCHW to NHWC with a few channels runs rows of the map
 * rather than rows of a few channels. */
static void transpose_axes(const int32_t in_shape[4], const int32_t perm[4], int ax[3], int *inner)
{
    int k, a = 0;
    *inner = 3;
    for (k = 2; k >= 0; k--)
        if (in_shape[perm[k]] > in_shape[perm[*inner]])
            *inner = k;
    for (k = 0; k < 4; k++)
        if (k != *inner)
            ax[a++] = k;
}

size_t okpu_v4k_transpose_outer(const int32_t in_shape[4], const int32_t perm[4], int *contiguous)
{
    int ax[3], inner;
    transpose_axes(in_shape, perm, ax, &inner);
    if (contiguous)
        *contiguous = inner >= 2; /* (the outer loops then walk output axes 0 and 1) */
    return (size_t)in_shape[perm[ax[0]]] * (size_t)in_shape[perm[ax[1]]];
}

/* The offsets stepped, not recomputed. The loader keeps the input and the output apart, so the order is free. */
void okpu_v4k_transpose_part(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t perm[4],
                             uint32_t es, size_t first, size_t end)
{
    size_t in_stride[4], out_stride[4], step[4], q, i2, x, n;
    int32_t os[4];
    int k, inner, ax[3];

    in_stride[3] = es;
    for (k = 2; k >= 0; k--)
        in_stride[k] = in_stride[k + 1] * (size_t)in_shape[k + 1];
    for (k = 0; k < 4; k++) {
        os[k] = in_shape[perm[k]];
        step[k] = in_stride[perm[k]]; /* output axis k walks input axis perm[k] */
    }
    out_stride[3] = es;
    for (k = 2; k >= 0; k--)
        out_stride[k] = out_stride[k + 1] * (size_t)os[k + 1];
    transpose_axes(in_shape, perm, ax, &inner);
    n = (size_t)os[inner];
    for (q = first; q < end; q++) {
        const size_t i0 = q / (size_t)os[ax[1]], i1 = q % (size_t)os[ax[1]];
        for (i2 = 0; i2 < (size_t)os[ax[2]]; i2++) {
            const uint8_t *src = in + i0 * step[ax[0]] + i1 * step[ax[1]] + i2 * step[ax[2]];
            uint8_t *dst = out + i0 * out_stride[ax[0]] + i1 * out_stride[ax[1]] + i2 * out_stride[ax[2]];
            if (es == 1)
                for (x = 0; x < n; x++)
                    dst[x * out_stride[inner]] = src[x * step[inner]];
            else
                for (x = 0; x < n; x++)
                    memcpy(dst + x * out_stride[inner], src + x * step[inner], es);
        }
    }
}

void okpu_v4k_transpose(const uint8_t *in, uint8_t *out, const int32_t in_shape[4], const int32_t perm[4], uint32_t es)
{
    okpu_v4k_transpose_part(in, out, in_shape, perm, es, 0, okpu_v4k_transpose_outer(in_shape, perm, NULL));
}

static int slice_more(int64_t i, int64_t stop, int64_t stride)
{
    return stride > 0 ? i < stop : i > stop;
}

void okpu_v4k_strided_slice(const uint8_t *in, uint8_t *out, const int32_t s[4], const int32_t begin[4],
                       const int32_t end[4], const int32_t strides[4], uint32_t es)
{
    int64_t d0, d1, d2, d3; /* 64-bit: d += stride past end overflows int32 (end near INT32_MAX, large stride) */
    for (d0 = begin[0]; slice_more(d0, end[0], strides[0]); d0 += strides[0])
        for (d1 = begin[1]; slice_more(d1, end[1], strides[1]); d1 += strides[1])
            for (d2 = begin[2]; slice_more(d2, end[2], strides[2]); d2 += strides[2])
                for (d3 = begin[3]; slice_more(d3, end[3], strides[3]); d3 += strides[3]) {
                    memcpy(out, in + off4(s, (int32_t)d0, (int32_t)d1, (int32_t)d2, (int32_t)d3) * es, es);
                    out += es;
                }
}

/* ---- reductions ---- */

static float red_f(int op, float acc, float v)
{
    switch (op) {
    case V4_RED_MIN: return fmin_nn(acc, v);
    case V4_RED_MAX: return fmax_nn(acc, v);
    default: return acc + v; /* mean, sum */
    }
}

/* In nncase's loop order (each output folds its inputs in the same order), the output offset stepped: 0 on a reduced
 * axis (the loader allows out_shape[k] = 1 or in_shape[k] only), instead of computed for every input element. */
void okpu_v4k_reduce(const uint8_t *in, uint8_t *out, int op, const int32_t is[4], const int32_t os[4], float init)
{
    size_t i, j = 0, n_out = prod4(os), n_in = prod4(is), step[4], span = 1;
    int32_t d0, d1, d2, d3, k;
    for (k = 3; k >= 0; k--) {
        step[k] = os[k] == 1 ? 0 : span;
        span *= (size_t)os[k];
    }
    for (i = 0; i < n_out; i++)
        WR(out, i, init);
    for (d0 = 0; d0 < is[0]; d0++)
        for (d1 = 0; d1 < is[1]; d1++)
            for (d2 = 0; d2 < is[2]; d2++) {
                const size_t o = (size_t)d0 * step[0] + (size_t)d1 * step[1] + (size_t)d2 * step[2];
                if (step[3] == 0) { /* the last axis reduced: one output, its inputs in a row */
                    float acc = RD(out, o);
                    for (d3 = 0; d3 < is[3]; d3++)
                        acc = red_f(op, acc, RD(in, j++));
                    WR(out, o, acc);
                } else {
                    for (d3 = 0; d3 < is[3]; d3++, j++)
                        WR(out, o + (size_t)d3, red_f(op, RD(out, o + (size_t)d3), RD(in, j)));
                }
            }
    if (op == V4_RED_MEAN) {
        float mul = (float)n_out / (float)n_in; /* nncase: (float)output.size() / input.size() */
        for (i = 0; i < n_out; i++)
            WR(out, i, RD(out, i) * mul);
    }
}

static float window_out(int op, float v, int32_t k)
{
    return op == V4_RED_MEAN ? v / (float)k : v;
}

void okpu_v4k_reduce_window2d(const uint8_t *in, uint8_t *out, int op, const int32_t is[4], const okpu_v4_window *w, float init,
                         float lo, float hi)
{
    int32_t out_h = (int32_t)okpu_v4_windowed_size(is[2], w->filter_h, w->stride_h, w->dilation_h, w->pad_h_before,
                                              w->pad_h_after);
    int32_t out_w = (int32_t)okpu_v4_windowed_size(is[3], w->filter_w, w->stride_w, w->dilation_w, w->pad_w_before,
                                              w->pad_w_after);
    size_t o = 0;
    int32_t n, c, oy, ox, ky, kx;
    for (n = 0; n < is[0]; n++)
        for (c = 0; c < is[1]; c++)
            for (oy = 0; oy < out_h; oy++)
                for (ox = 0; ox < out_w; ox++) {
                    int32_t iy0 = oy * w->stride_h - w->pad_h_before, ix0 = ox * w->stride_w - w->pad_w_before;
                    float v = init;
                    int32_t k = 0;
                    for (ky = 0; ky < w->filter_h; ky++) {
                        if (!tap_in(iy0, ky, w->dilation_h, is[2]))
                            continue;
                        for (kx = 0; kx < w->filter_w; kx++) {
                            if (!tap_in(ix0, kx, w->dilation_w, is[3]))
                                continue;
                            v = red_f(op, v, RD(in, off4(is, n, c, iy0 + w->dilation_h * ky, ix0 + w->dilation_w * kx)));
                            k++;
                        }
                    }
                    WR(out, o++, okpu_v4_clampf(window_out(op, v, k), lo, hi));
                }
}

void okpu_v4k_cpu_reduce_window2d(const uint8_t *in, uint8_t *out, int op, const int32_t is[4], const okpu_v4_window *w,
                             float init, float lo, float hi)
{
    /* NHWC: is = {n, h, w, c} */
    int32_t out_h = (int32_t)okpu_v4_windowed_size(is[1], w->filter_h, w->stride_h, w->dilation_h, w->pad_h_before,
                                              w->pad_h_after);
    int32_t out_w = (int32_t)okpu_v4_windowed_size(is[2], w->filter_w, w->stride_w, w->dilation_w, w->pad_w_before,
                                              w->pad_w_after);
    size_t o = 0;
    int32_t n, c, oy, ox, ky, kx;
    for (n = 0; n < is[0]; n++)
        for (oy = 0; oy < out_h; oy++)
            for (ox = 0; ox < out_w; ox++) {
                int32_t iy0 = oy * w->stride_h - w->pad_h_before, ix0 = ox * w->stride_w - w->pad_w_before;
                for (c = 0; c < is[3]; c++) {
                    float v = init;
                    int32_t k = 0;
                    for (ky = 0; ky < w->filter_h; ky++) {
                        if (!tap_in(iy0, ky, w->dilation_h, is[1]))
                            continue;
                        for (kx = 0; kx < w->filter_w; kx++) {
                            if (!tap_in(ix0, kx, w->dilation_w, is[2]))
                                continue;
                            v = red_f(op, v, RD(in, off4(is, n, iy0 + w->dilation_h * ky, ix0 + w->dilation_w * kx, c)));
                            k++;
                        }
                    }
                    WR(out, o++, okpu_v4_clampf(window_out(op, v, k), lo, hi));
                }
            }
}

/* ---- resize ---- */

static float rd_elem(const uint8_t *p, size_t i, uint32_t es)
{
    return es == 4 ? RD(p, i) : (float)p[i];
}

void okpu_v4k_resize(const uint8_t *in, uint8_t *out, const int32_t is[4], int32_t out_h, int32_t out_w, int mode,
                int align_corners, uint32_t es)
{
    float hs = (float)is[2] / (float)out_h, ws = (float)is[3] / (float)out_w;
    size_t o = 0;
    int32_t n, c, oy, ox;
    if (mode != 0) {
        for (n = 0; n < is[0]; n++)
            for (c = 0; c < is[1]; c++)
                for (oy = 0; oy < out_h; oy++) {
                    int32_t iy = (int32_t)floorf((float)oy * hs);
                    if (iy > is[2] - 1)
                        iy = is[2] - 1;
                    for (ox = 0; ox < out_w; ox++) {
                        int32_t ix = (int32_t)floorf((float)ox * ws);
                        if (ix > is[3] - 1)
                            ix = is[3] - 1;
                        memcpy(out + o * es, in + off4(is, n, c, iy, ix) * es, es);
                        o++;
                    }
                }
        return;
    }
    if (align_corners && out_h > 1)
        hs = (float)(is[2] - 1) / (float)(out_h - 1);
    if (align_corners && out_w > 1)
        ws = (float)(is[3] - 1) / (float)(out_w - 1);
    for (n = 0; n < is[0]; n++)
        for (c = 0; c < is[1]; c++)
            for (oy = 0; oy < out_h; oy++) {
                float fy = (float)oy * hs;
                int32_t y0 = (int32_t)floorf(fy), y1 = y0 + 1 < is[2] - 1 ? y0 + 1 : is[2] - 1;
                for (ox = 0; ox < out_w; ox++) {
                    float fx = (float)ox * ws;
                    int32_t x0 = (int32_t)floorf(fx), x1 = x0 + 1 < is[3] - 1 ? x0 + 1 : is[3] - 1;
                    float dy = fy - (float)y0, dx = fx - (float)x0;
                    float a0 = (1 - dy) * (1 - dx), a1 = dy * (1 - dx), a2 = (1 - dy) * dx, a3 = dy * dx;
                    float v0 = rd_elem(in, off4(is, n, c, y0, x0), es), v1 = rd_elem(in, off4(is, n, c, y1, x0), es);
                    float v2 = rd_elem(in, off4(is, n, c, y0, x1), es), v3 = rd_elem(in, off4(is, n, c, y1, x1), es);
                    float v = fmaf(v3, a3, fmaf(v2, a2, fmaf(v1, a1, v0 * a0)));
                    if (es == 4) {
                        WR(out, o, v);
                    } else {
                        /* T(v): truncation toward zero; clamped first so the conversion is defined */
                        out[o] = (uint8_t)(v != v ? 0 : (v <= 0.0f ? 0 : (v >= 255.0f ? 255 : (int)v)));
                    }
                    o++;
                }
            }
}

/* ---- softmax / unary / lookup ---- */

void okpu_v4k_softmax(const uint8_t *in, uint8_t *out, int32_t inner, int32_t outer, float beta)
{
    int32_t b, i;
    for (b = 0; b < outer; b++) {
        size_t base = (size_t)b * (size_t)inner;
        float mx = RD(in, base), sum = 0.0f;
        for (i = 1; i < inner; i++) { /* std::max_element: first largest by operator< */
            float v = RD(in, base + i);
            if (mx < v)
                mx = v;
        }
        for (i = 0; i < inner; i++) {
            float e = okpu_expf((RD(in, base + i) - mx) * beta);
            sum += e;
            WR(out, base + i, e);
        }
        for (i = 0; i < inner; i++)
            WR(out, base + i, RD(out, base + i) / sum);
    }
}

float okpu_v4_unary_apply(int op, float a)
{
    switch (op) {
    case V4_UN_ABS: return fabsf(a);
    case V4_UN_CEIL: return ceilf(a);
    case V4_UN_COS: return okpu_cosf(a);
    case V4_UN_EXP: return okpu_expf(a);
    case V4_UN_FLOOR: return floorf(a);
    case V4_UN_LOG: return okpu_logf(a);
    case V4_UN_NEG: return -a;
    case V4_UN_RSQRT: return 1.0f / sqrtf(a);
    case V4_UN_SIN: return okpu_sinf(a);
    default: return a * a; /* square */
    }
}

void okpu_v4k_unary(const uint8_t *in, uint8_t *out, uint32_t count, int op)
{
    uint32_t i;
    for (i = 0; i < count; i++)
        WR(out, i, okpu_v4_unary_apply(op, RD(in, i)));
}

void okpu_v4k_table_lookup1d(const uint8_t *in, uint8_t *out, uint32_t count, const uint8_t *table)
{
    uint32_t i;
    for (i = 0; i < count; i++)
        out[i] = table[in[i]];
}

/* ---- CPU NHWC convolutions ---- */

void okpu_v4k_cpu_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                    const int32_t is[4], int32_t out_channels, const okpu_v4_window *w, float lo, float hi)
{
    int32_t out_h = (int32_t)okpu_v4_windowed_size(is[1], w->filter_h, w->stride_h, w->dilation_h, w->pad_h_before,
                                              w->pad_h_after);
    int32_t out_w = (int32_t)okpu_v4_windowed_size(is[2], w->filter_w, w->stride_w, w->dilation_w, w->pad_w_before,
                                              w->pad_w_after);
    size_t o = 0;
    int32_t n, oy, ox, oc, ky, kx, ic;
    for (n = 0; n < is[0]; n++)
        for (oy = 0; oy < out_h; oy++)
            for (ox = 0; ox < out_w; ox++) {
                int32_t iy0 = oy * w->stride_h - w->pad_h_before, ix0 = ox * w->stride_w - w->pad_w_before;
                for (oc = 0; oc < out_channels; oc++) {
                    size_t wb = (size_t)oc * w->filter_h * w->filter_w * is[3];
                    float v = RD(bias, oc);
                    for (ky = 0; ky < w->filter_h; ky++) {
                        if (!tap_in(iy0, ky, w->dilation_h, is[1]))
                            continue;
                        for (kx = 0; kx < w->filter_w; kx++) {
                            size_t ip, wp;
                            if (!tap_in(ix0, kx, w->dilation_w, is[2]))
                                continue;
                            ip = off4(is, n, iy0 + w->dilation_h * ky, ix0 + w->dilation_w * kx, 0);
                            wp = wb + ((size_t)ky * w->filter_w + kx) * is[3];
                            for (ic = 0; ic < is[3]; ic++)
                                v = fmaf(RD(in, ip + ic), RD(weights, wp + ic), v);
                        }
                    }
                    WR(out, o++, okpu_v4_clampf(v, lo, hi));
                }
            }
}

void okpu_v4k_cpu_depthwise_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                              const int32_t is[4], const okpu_v4_window *w, float lo, float hi)
{
    int32_t out_h = (int32_t)okpu_v4_windowed_size(is[1], w->filter_h, w->stride_h, w->dilation_h, w->pad_h_before,
                                              w->pad_h_after);
    int32_t out_w = (int32_t)okpu_v4_windowed_size(is[2], w->filter_w, w->stride_w, w->dilation_w, w->pad_w_before,
                                              w->pad_w_after);
    size_t o = 0;
    int32_t n, oy, ox, oc, ky, kx;
    for (n = 0; n < is[0]; n++)
        for (oy = 0; oy < out_h; oy++)
            for (ox = 0; ox < out_w; ox++) {
                int32_t iy0 = oy * w->stride_h - w->pad_h_before, ix0 = ox * w->stride_w - w->pad_w_before;
                for (oc = 0; oc < is[3]; oc++) {
                    size_t wb = (size_t)oc * w->filter_h * w->filter_w;
                    float v = RD(bias, oc);
                    for (ky = 0; ky < w->filter_h; ky++) {
                        if (!tap_in(iy0, ky, w->dilation_h, is[1]))
                            continue;
                        for (kx = 0; kx < w->filter_w; kx++) {
                            if (!tap_in(ix0, kx, w->dilation_w, is[2]))
                                continue;
                            v = fmaf(RD(in, off4(is, n, iy0 + w->dilation_h * ky, ix0 + w->dilation_w * kx, oc)),
                                     RD(weights, wb + (size_t)ky * w->filter_w + kx), v);
                        }
                    }
                    WR(out, o++, okpu_v4_clampf(v, lo, hi));
                }
            }
}

static void cpu_qconv(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias, const int32_t is[4],
                      int32_t out_channels, int depthwise, const okpu_v4_window *w, const okpu_v4_qconv_params *p,
                      okpu_round_mode mode)
{
    int32_t out_h = (int32_t)okpu_v4_windowed_size(is[1], w->filter_h, w->stride_h, w->dilation_h, w->pad_h_before,
                                              w->pad_h_after);
    int32_t out_w = (int32_t)okpu_v4_windowed_size(is[2], w->filter_w, w->stride_w, w->dilation_w, w->pad_w_before,
                                              w->pad_w_after);
    size_t o = 0;
    int32_t n, oy, ox, oc, ky, kx, ic;
    int32_t noc = depthwise ? is[3] : out_channels;
    for (n = 0; n < is[0]; n++)
        for (oy = 0; oy < out_h; oy++)
            for (ox = 0; ox < out_w; ox++) {
                int32_t iy0 = oy * w->stride_h - w->pad_h_before, ix0 = ox * w->stride_w - w->pad_w_before;
                for (oc = 0; oc < noc; oc++) {
                    size_t wb = (size_t)oc * w->filter_h * w->filter_w * (depthwise ? 1u : (size_t)is[3]);
                    uint32_t acc = (uint32_t)okpu_rd_i32(bias + (size_t)oc * 4u);
                    int32_t r;
                    for (ky = 0; ky < w->filter_h; ky++) {
                        if (!tap_in(iy0, ky, w->dilation_h, is[1]))
                            continue;
                        for (kx = 0; kx < w->filter_w; kx++) {
                            size_t ip;
                            if (!tap_in(ix0, kx, w->dilation_w, is[2]))
                                continue;
                            ip = off4(is, n, iy0 + w->dilation_h * ky, ix0 + w->dilation_w * kx, 0);
                            if (depthwise) {
                                int64_t xv = (int64_t)in[ip + oc] - p->input_offset;
                                int64_t wv = (int64_t)weights[wb + (size_t)ky * w->filter_w + kx] - p->filter_offset;
                                acc += (uint32_t)okpu_wrap_i32(okpu_wrap_i32(xv) * (int64_t)okpu_wrap_i32(wv));
                            } else {
                                size_t wp = wb + ((size_t)ky * w->filter_w + kx) * is[3];
                                for (ic = 0; ic < is[3]; ic++) {
                                    int64_t xv = (int64_t)in[ip + ic] - p->input_offset;
                                    int64_t wv = (int64_t)weights[wp + ic] - p->filter_offset;
                                    acc += (uint32_t)okpu_wrap_i32(okpu_wrap_i32(xv) * (int64_t)okpu_wrap_i32(wv));
                                }
                            }
                        }
                    }
                    r = mul_shift_v4(okpu_wrap_i32((int64_t)acc), p->output_mul, p->output_shift, mode);
                    out[o++] = okpu_clamp_u8((int64_t)okpu_wrap_i32((int64_t)r + p->output_offset));
                }
            }
}

void okpu_v4k_cpu_quantized_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                              const int32_t in_shape[4], int32_t out_channels, const okpu_v4_window *win,
                              const okpu_v4_qconv_params *p, okpu_round_mode mode)
{
    cpu_qconv(in, out, weights, bias, in_shape, out_channels, 0, win, p, mode);
}

void okpu_v4k_cpu_quantized_depthwise_conv2d(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias,
                                        const int32_t in_shape[4], const okpu_v4_window *win, const okpu_v4_qconv_params *p,
                                        okpu_round_mode mode)
{
    cpu_qconv(in, out, weights, bias, in_shape, 0, 1, win, p, mode);
}

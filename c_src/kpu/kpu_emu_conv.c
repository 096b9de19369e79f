// SPDX-License-Identifier: Apache-2.0
/* The fast convolution: docs/kpu-reference.md section 4.1's sums reorganised into integer loops over whole rows,
 * computing the bytes okpu_emu_conv_reference computes. The x-offset term depends only on the pixel, so it is one
 * plane per layer (per channel when depthwise); the w-offset term depends only on the output channel, so it is one
 * number (computed at prepare); the products sum in uint32 in 8-bit mode (1024*9*255*255 < 2^32) and in uint64 in
 * 16-bit mode. */
#include <string.h>

#include "../core/arith.h"
#include "kpu_emu.h"
#include "kpu_layout.h"

static inline int as_int(uint32_t v) /* the int with v's bits (a vector lane's value) */
{
    int32_t r;
    memcpy(&r, &v, sizeof r);
    return r;
}

/* ---- x-offset terms with AVX2 ----
 * With arg_x = q * 2^shr_x + r (0 <= r < 2^shr_x), floor(arg_x * s / 2^shr_x) = q * s + floor(r * s / 2^shr_x) for a
 * tap sum s >= 0, so the terms of a run of input channels are q * (sum of s) + (sum of floor(r * s / 2^shr_x)): both
 * sums fit int32 (r * s < 2^15 * 2295, 1024 channels), so eight pixels at a time sum every channel of the run in two
 * registers, and the int64 plane is read and written once per run instead of once per channel. */
enum { XT_SET, XT_ADD, XT_SUM };

#ifdef EMU_AVX2
#include <immintrin.h>

#define LOAD8(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p)))

/* For every pixel p: dst[p] = the terms of input channels [first, end) (XT_SET), dst[p] += them (XT_ADD), or
 * dst[p] += their tap sums (XT_SUM, for one floor of the total). Returns the columns it did: all of them, or none
 * when rows are narrower than a step (the caller does the rest). */
__attribute__((target("avx2"))) static uint32_t x_terms_avx2(const emu_layer *L, uint32_t first, uint32_t end,
                                                            int64_t *dst, int mode)
{
    const unsigned k = L->a->shr_x;
    const int32_t q = L->a->arg_x >> k; /* (an arithmetic shift: floor) */
    const __m256i rem = _mm256_set1_epi32(L->a->arg_x - q * (1 << k)), qv = _mm256_set1_epi64x(q);
    const __m128i shr = _mm_cvtsi32_si128((int)k);
    /* 1x1: no border, so the plane is one row of w x h pixels (a narrow map then has no scalar tail per row) */
    const uint32_t rows = L->k == 1 ? 1u : L->h, cols = L->k == 1 ? L->w * L->h : L->w;
    uint32_t x, y, c, i;
    int half;

    if (cols < 8)
        return 0;
    for (y = 0; y < rows; y++) {
        int64_t *d = dst + (size_t)y * L->w;
        /* the last step is the row's last eight columns, of which the first `done` were already done */
        for (x = 0;; x = x + 16 <= cols ? x + 8 : cols - 8) { /* 3x3: reads up to r2 + x + 9 < r2 + pitch */
            const uint32_t done = x % 8u ? 8u - cols % 8u : 0u;
            __m256i sum = _mm256_setzero_si256(), low = _mm256_setzero_si256();
            int64_t v[8];
            for (c = first; c < end; c++) {
                const uint8_t *r0 = L->in + (size_t)c * L->plane + (size_t)y * L->pitch + x;
                __m256i t = LOAD8(r0);
                if (L->k == 3) {
                    const uint8_t *r1 = r0 + L->pitch, *r2 = r1 + L->pitch;
                    t = _mm256_add_epi32(t, _mm256_add_epi32(LOAD8(r0 + 1), LOAD8(r0 + 2)));
                    t = _mm256_add_epi32(t, _mm256_add_epi32(LOAD8(r1), LOAD8(r1 + 1)));
                    t = _mm256_add_epi32(t, _mm256_add_epi32(LOAD8(r1 + 2), LOAD8(r2)));
                    t = _mm256_add_epi32(t, _mm256_add_epi32(LOAD8(r2 + 1), LOAD8(r2 + 2)));
                }
                sum = _mm256_add_epi32(sum, t);
                if (mode != XT_SUM)
                    low = _mm256_add_epi32(low, _mm256_srl_epi32(_mm256_mullo_epi32(t, rem), shr));
            }
            for (half = 0; half < 2; half++) {
                const __m128i s4 = half ? _mm256_extracti128_si256(sum, 1) : _mm256_castsi256_si128(sum);
                const __m128i l4 = half ? _mm256_extracti128_si256(low, 1) : _mm256_castsi256_si128(low);
                __m256i *at = (__m256i *)(void *)(done ? v + 4 * half : d + x + 4 * half);
                __m256i t = _mm256_cvtepi32_epi64(s4);
                if (mode != XT_SUM)
                    t = _mm256_add_epi64(_mm256_mul_epi32(t, qv), _mm256_cvtepi32_epi64(l4));
                if (mode != XT_SET && !done)
                    t = _mm256_add_epi64(_mm256_loadu_si256(at), t);
                _mm256_storeu_si256(at, t);
            }
            for (i = done; done && i < 8u; i++)
                d[x + i] = mode == XT_SET ? v[i] : d[x + i] + v[i];
            if (x + 8 >= cols)
                break;
        }
    }
    return cols;
}
#undef LOAD8
#endif

/* The columns [x0, cols) of x_terms_avx2's rows (all of them without AVX2) one pixel at a time. */
static void x_terms_rest(const emu_layer *L, const emu_shared *S, uint32_t first, uint32_t end, int64_t *dst,
                         int mode, uint32_t x0)
{
    const uint32_t rows = L->k == 1 ? 1u : L->h, cols = L->k == 1 ? L->w * L->h : L->w;
    uint32_t x, y, c;

    for (y = 0; y < rows; y++)
        for (x = x0; x < cols; x++) {
            int64_t v = 0;
            for (c = first; c < end; c++) {
                const uint8_t *r0 = L->in + (size_t)c * L->plane + (size_t)y * L->pitch + x;
                uint32_t t = r0[0];
                if (L->k == 3) {
                    const uint8_t *r1 = r0 + L->pitch, *r2 = r1 + L->pitch;
                    t += (uint32_t)r0[1] + r0[2] + r1[0] + r1[1] + r1[2] + r2[0] + r2[1] + r2[2];
                }
                v += mode == XT_SUM ? (int64_t)t : S->x_table[t];
            }
            dst[(size_t)y * L->w + x] = mode == XT_SET ? v : dst[(size_t)y * L->w + x] + v;
        }
}

static void x_terms(const emu_layer *L, const emu_shared *S, uint32_t first, uint32_t end, int64_t *dst, int mode)
{
    uint32_t x0 = 0;

#ifdef EMU_AVX2
    if (L->avx2)
        x0 = x_terms_avx2(L, first, end, dst, mode);
#endif
    x_terms_rest(L, S, first, end, dst, mode, x0);
}

void okpu_emu_x_table_fill(const emu_layer *L, emu_shared *S)
{
    const size_t n = (size_t)L->kk * 255u + 1u;
    size_t s;

    for (s = 0; s < n; s++)
        S->x_table[s] = okpu_asr64(L->a->arg_x * (int64_t)s, L->a->shr_x);
}

/* The x-offset plane of a non-depthwise layer: per input channel floored terms, or one floor of the total. */
void okpu_emu_x_term_add_channels(const emu_layer *L, const emu_shared *S, uint32_t first, uint32_t end, int64_t *x)
{
    if (first < end)
        x_terms(L, S, first, end, x, L->offset_mode == OKPU_CONV_OFFSET_PER_CHANNEL ? XT_ADD : XT_SUM);
}

void okpu_emu_x_term_finish(const emu_layer *L, int64_t *x, size_t first, size_t end)
{
    size_t p;

    if (L->offset_mode == OKPU_CONV_OFFSET_ONCE)
        for (p = first; p < end; p++)
            x[p] = okpu_asr64(L->a->arg_x * x[p], L->a->shr_x);
}

/* Depthwise: one channel, so both offset modes give floor(arg_x * sum(x) / 2^shr_x), into W->x_term. */
static void x_term_one_channel(const emu_layer *L, uint32_t c, const emu_shared *S, emu_worker *W)
{
    if (!L->folded) /* (folded: the terms are in the weights) */
        x_terms(L, S, c, c + 1u, W->x_term, XT_SET);
}

/* The w-offset terms and arg_add of output channel oc: a constant over the whole plane. */
int64_t okpu_emu_w_term(const emu_layer *L, uint32_t oc)
{
    const okpu_kpu_args *a = L->a;
    int64_t total = 0, all_w = 0;
    uint32_t i, t;

    if (a->arg_w == 0) /* every term is floor(0 / 2^shr_w) = 0 */
        return a->arg_add * (int64_t)L->g_ic;
    for (i = 0; i < L->g_ic; i++) {
        const size_t w0 = okpu_emu_weight_index(L, oc, i);
        int64_t sum_w = 0;
        if (L->eight_bit)
            for (t = 0; t < L->kk; t++)
                sum_w += L->weights[w0 + t];
        else
            for (t = 0; t < L->kk; t++)
                sum_w += okpu_emu_weight_at(L, w0 + t);
        if (L->offset_mode == OKPU_CONV_OFFSET_PER_CHANNEL)
            total += okpu_asr64(a->arg_w * sum_w, a->shr_w);
        else
            all_w += sum_w;
    }
    if (L->offset_mode == OKPU_CONV_OFFSET_ONCE)
        total = okpu_asr64(a->arg_w * all_w, a->shr_w);
    return total + a->arg_add * (int64_t)L->g_ic;
}

/* ---- 8-bit accumulation ----
 * In 8-bit mode every product is at most 255 * 255 and a whole output value at most 1024 * 9 * 65025 < 2^31; with
 * the x-offset fold (okpu_emu_fold) a weight is an int16 and the sum still fits an int32. The sums are taken mod 2^32
 * from acc_bias = 2^31, so the uint32 accumulator is the sum + 2^31. The taps are taken in pairs (u, v) with weights
 * (wu, wv): on x86-64 pmaddwd multiplies 16-bit pairs (pixels <= 255, weights int16: exact) and adds each pair into 32
 * bits, 16 pixels a step with AVX2 when the CPU has it, 8 with SSE2 (part of every x86-64); elsewhere the same sums in
 * plain C. */

#define MAX_PAIRS 5 /* a 3x3 channel's nine taps */

typedef struct tap_pairs {
    const uint8_t *u[MAX_PAIRS], *v[MAX_PAIRS];
    uint32_t wu[MAX_PAIRS], wv[MAX_PAIRS]; /* int16 weights as the uint32 of their two's complement */
    int n;
} tap_pairs;

static void pair_add(tap_pairs *P, const uint8_t *u, uint32_t wu, const uint8_t *v, uint32_t wv)
{
    P->u[P->n] = u;
    P->v[P->n] = v;
    P->wu[P->n] = wu;
    P->wv[P->n] = wv;
    P->n++;
}

#if defined(__x86_64__) && !defined(OKPU_EMU_PORTABLE) /* -DOKPU_EMU_PORTABLE tests the C path on x86 */
#include <emmintrin.h>

/* The sums of pixels x..x+7 into s0 (x..x+3) and s1 (x+4..x+7). */
static inline void pairs8(const tap_pairs *P, const __m128i *w, size_t x, __m128i *s0, __m128i *s1)
{
    const __m128i zero = _mm_setzero_si128();
    int j;

    *s0 = zero;
    *s1 = zero;
    for (j = 0; j < P->n; j++) {
        const __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(P->u[j] + x)), zero);
        const __m128i b = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(P->v[j] + x)), zero);
        *s0 = _mm_add_epi32(*s0, _mm_madd_epi16(_mm_unpacklo_epi16(a, b), w[j]));
        *s1 = _mm_add_epi32(*s1, _mm_madd_epi16(_mm_unpackhi_epi16(a, b), w[j]));
    }
}

/* acc[x] += the pairs' sums for x in [x, n); when n >= 8 the last partial step recomputes the last 8 pixels and
 * adds only the new ones. */
static void acc_pairs_sse2(uint32_t *acc, const tap_pairs *P, size_t x, size_t n)
{
    __m128i w[MAX_PAIRS], s0, s1;
    uint32_t tail[8];
    size_t i;
    int j;

    if (x >= n)
        return;
    for (j = 0; j < P->n; j++)
        w[j] = _mm_set1_epi32(as_int((P->wu[j] & 0xffffu) | (P->wv[j] << 16)));
    for (; x + 8 <= n; x += 8) {
        pairs8(P, w, x, &s0, &s1);
        _mm_storeu_si128((__m128i *)(void *)(acc + x),
                         _mm_add_epi32(_mm_loadu_si128((const __m128i *)(const void *)(acc + x)), s0));
        _mm_storeu_si128((__m128i *)(void *)(acc + x + 4),
                         _mm_add_epi32(_mm_loadu_si128((const __m128i *)(const void *)(acc + x + 4)), s1));
    }
    if (x < n && n >= 8) {
        pairs8(P, w, n - 8, &s0, &s1);
        _mm_storeu_si128((__m128i *)(void *)tail, s0);
        _mm_storeu_si128((__m128i *)(void *)(tail + 4), s1);
        for (i = x; i < n; i++)
            acc[i] += tail[i - (n - 8)];
        return;
    }
    for (; x < n; x++) {
        uint32_t sum = 0;
        for (j = 0; j < P->n; j++)
            sum += P->wu[j] * P->u[j][x] + P->wv[j] * P->v[j][x];
        acc[x] += sum;
    }
}

#ifdef EMU_AVX2
#include <immintrin.h>

/* The sums of pixels x..x+15 into lo (x..x+7) and hi (x+8..x+15). */
__attribute__((target("avx2"))) static inline void pairs16(const tap_pairs *P, const __m256i *w, size_t x, __m256i *lo,
                                                          __m256i *hi)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    int j;

    for (j = 0; j < P->n; j++) {
        const __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(P->u[j] + x)));
        const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(P->v[j] + x)));
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), w[j]));
        s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), w[j]));
    }
    /* the unpacks work within 128-bit lanes: s0 holds pixels 0-3 and 8-11, s1 4-7 and 12-15 */
    *lo = _mm256_permute2x128_si256(s0, s1, 0x20);
    *hi = _mm256_permute2x128_si256(s0, s1, 0x31);
}

/* All n pixels when n >= 16 (the last partial step recomputes the last 16 pixels and adds only the new ones);
 * returns how many it did. */
__attribute__((target("avx2"))) static size_t acc_pairs_avx2(uint32_t *acc, const tap_pairs *P, size_t n)
{
    __m256i w[MAX_PAIRS], lo, hi;
    uint32_t tail[16];
    size_t x = 0, i;
    int j;

    if (n < 16)
        return 0;
    for (j = 0; j < P->n; j++)
        w[j] = _mm256_set1_epi32(as_int((P->wu[j] & 0xffffu) | (P->wv[j] << 16)));
    for (; x + 16 <= n; x += 16) {
        pairs16(P, w, x, &lo, &hi);
        _mm256_storeu_si256((__m256i *)(void *)(acc + x),
                            _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(acc + x)), lo));
        _mm256_storeu_si256((__m256i *)(void *)(acc + x + 8),
                            _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(acc + x + 8)), hi));
    }
    if (x < n) {
        pairs16(P, w, n - 16, &lo, &hi);
        _mm256_storeu_si256((__m256i *)(void *)tail, lo);
        _mm256_storeu_si256((__m256i *)(void *)(tail + 8), hi);
        for (i = x; i < n; i++)
            acc[i] += tail[i - (n - 16)];
    }
    return n;
}
#endif

static void acc_pairs(const emu_layer *L, uint32_t *acc, const tap_pairs *P, size_t n)
{
    size_t x = 0;

#ifdef EMU_AVX2
    if (L->avx2)
        x = acc_pairs_avx2(acc, P, n);
#else
    (void)L;
#endif
    acc_pairs_sse2(acc, P, x, n);
}
#else
static void acc_pairs(const emu_layer *L, uint32_t *acc, const tap_pairs *P, size_t n)
{
    size_t x;
    int j;

    (void)L;
    for (j = 0; j < P->n; j++) {
        const uint8_t *u = P->u[j], *v = P->v[j];
        const uint32_t wu = P->wu[j], wv = P->wv[j];
        for (x = 0; x < n; x++)
            acc[x] += wu * u[x] + wv * v[x];
    }
}
#endif

/* Weight w plus the layer's x-offset fold, as the uint32 of its two's complement (the sums are taken mod 2^32). */
static uint32_t folded_weight(const emu_layer *L, uint8_t w)
{
    return (uint32_t)w + (uint32_t)L->x_fold;
}

/* Depthwise channel oc's sums over a run of `span` pixels from output row y0 (the 8-bit layers that are not
 * depthwise run by quads; 3x3 whole planes on x86 by dw3_accumulate). */
static void accumulate_span8(const emu_layer *L, uint32_t oc, uint32_t y0, uint32_t span, const emu_worker *B)
{
    uint32_t *acc = (uint32_t *)(void *)B->acc + (size_t)y0 * L->w;
    const uint8_t *r0 = L->in + (size_t)oc * L->plane + (size_t)y0 * L->pitch;
    const uint8_t *wt = L->weights + okpu_emu_weight_index(L, oc, 0);
    uint32_t f[9], x;
    tap_pairs P;

    for (x = 0; x < span; x++)
        acc[x] = (uint32_t)L->acc_bias;
    for (x = 0; x < L->kk; x++)
        f[x] = folded_weight(L, wt[x]);
    P.n = 0;
    if (L->k == 3) {
        const uint8_t *r1 = r0 + L->pitch, *r2 = r1 + L->pitch;
        pair_add(&P, r0, f[0], r0 + 1, f[1]);
        pair_add(&P, r0 + 2, f[2], r1, f[3]);
        pair_add(&P, r1 + 1, f[4], r1 + 2, f[5]);
        pair_add(&P, r2, f[6], r2 + 1, f[7]);
        pair_add(&P, r2 + 2, f[8], r2 + 2, 0);
    } else {
        pair_add(&P, r0, f[0], r0, 0);
    }
    acc_pairs(L, acc, &P, span);
}

/* Accumulate sum(x*w) over a run of `span` pixels starting at output row y0. A 3x3 conv takes its nine taps in one
 * pass (one accumulator update per pixel per input channel); a 1x1 conv takes four input channels per pass. Nine
 * or four products of at most 255 * 65535 stay below 2^32, so each pass sums in uint32. */
static void accumulate_span(const emu_layer *L, uint32_t oc, uint32_t y0, uint32_t span, const emu_worker *B)
{
    uint32_t *acc32 = (uint32_t *)(void *)B->acc + (size_t)y0 * L->w;
    uint64_t *acc64 = B->acc + (size_t)y0 * L->w;
    uint32_t i = 0, x, t;

    if (L->eight_bit)
        memset(acc32, 0, span * sizeof *acc32);
    else
        memset(acc64, 0, span * sizeof *acc64);
    if (L->k == 3) {
        for (; i < L->g_ic; i++) {
            const uint8_t *r0 = L->in + (size_t)okpu_emu_input_channel(L, oc, i) * L->plane + (size_t)y0 * L->pitch;
            const uint8_t *r1 = r0 + L->pitch, *r2 = r1 + L->pitch;
            const size_t w0 = okpu_emu_weight_index(L, oc, i);
            uint32_t wt[9];
            for (t = 0; t < 9; t++)
                wt[t] = okpu_emu_weight_at(L, w0 + t);
            for (x = 0; x < span; x++) {
                uint32_t sum = wt[0] * r0[x] + wt[1] * r0[x + 1] + wt[2] * r0[x + 2] + wt[3] * r1[x] +
                               wt[4] * r1[x + 1] + wt[5] * r1[x + 2] + wt[6] * r2[x] + wt[7] * r2[x + 1] +
                               wt[8] * r2[x + 2];
                if (L->eight_bit)
                    acc32[x] += sum;
                else
                    acc64[x] += sum;
            }
        }
        return;
    }
    for (; i + 4 <= L->g_ic; i += 4) {
        const uint8_t *p0 = L->in + (size_t)okpu_emu_input_channel(L, oc, i) * L->plane + (size_t)y0 * L->pitch;
        const uint8_t *p1 = p0 + L->plane, *p2 = p1 + L->plane, *p3 = p2 + L->plane;
        const size_t w0 = okpu_emu_weight_index(L, oc, i);
        const uint32_t wa = okpu_emu_weight_at(L, w0), wb = okpu_emu_weight_at(L, w0 + 1), wc = okpu_emu_weight_at(L, w0 + 2),
                       wd = okpu_emu_weight_at(L, w0 + 3);
        if (L->eight_bit)
            for (x = 0; x < span; x++)
                acc32[x] += wa * p0[x] + wb * p1[x] + wc * p2[x] + wd * p3[x];
        else
            for (x = 0; x < span; x++)
                acc64[x] += wa * p0[x] + wb * p1[x] + wc * p2[x] + wd * p3[x];
    }
    for (; i < L->g_ic; i++) {
        const uint8_t *p0 = L->in + (size_t)okpu_emu_input_channel(L, oc, i) * L->plane + (size_t)y0 * L->pitch;
        const uint32_t wa = okpu_emu_weight_at(L, okpu_emu_weight_index(L, oc, i));
        if (L->eight_bit)
            for (x = 0; x < span; x++)
                acc32[x] += wa * p0[x];
        else
            for (x = 0; x < span; x++)
                acc64[x] += wa * p0[x];
    }
}

/* The pixels of output channel oc the pool reads, as runs: a pick pool reads one pixel per stride x stride window
 * (rows 0, s, 2s..., columns x_first, x_first + s, ...); otherwise every row (1x1: the whole plane is one run). */
typedef struct runs {
    uint32_t count, row_step, span, x_first, x_step;
    size_t acc_row; /* accumulators between the starts of consecutive runs */
    int whole;      /* 8-bit 3x3: the accumulators of all rows in one pass (see plane_runs) */
} runs;

static runs plane_runs(const emu_layer *L)
{
    const unsigned pool = L->a->pool_type;
    runs R;

    R.whole = 0;
    R.acc_row = (size_t)L->w;
    if (pool >= 5 && pool <= 7) {
        const uint32_t s = okpu_kpu_pool_stride(pool);
        R.count = L->h / s;
        R.row_step = s;
        R.span = L->w / s * s;
        R.x_first = pool == 6 ? 1u : 0u;
        R.x_step = s;
        R.acc_row = (size_t)s * L->w;
    } else if (L->k == 1) {
        R.count = 1;
        R.row_step = 1;
        R.span = L->w * L->h;
        R.x_first = 0;
        R.x_step = 1;
    } else {
        R.count = L->h;
        R.row_step = 1;
        R.span = L->w;
        R.x_first = 0;
        R.x_step = 1;
        /* In 8-bit mode a 3x3 conv runs over the padded planes as if they were one row of h * pitch - 2 pixels: the
         * two extra accumulators per row (taps straddling the border) are computed, then dropped when channel_finish
         * closes the rows up. One long run instead of h short ones, each with a tail that does not fill a vector.
         * h * pitch - 2 <= 2 * w * h accumulators fit the uint32 view of the buffer. */
        if (L->eight_bit) {
            R.whole = 1;
            R.acc_row = L->pitch;
        }
    }
    return R;
}

#ifdef EMU_AVX2
/* min and max of acc[x] + xt[x] for x in [0, n) into *mn, *mx (which hold the range so far); returns how many it did
 * (a multiple of 4). Four independent minima and maxima, so the compare-and-blend chains overlap. */
__attribute__((target("avx2"))) static inline __m256i range_load(const uint32_t *a32, const uint64_t *a64,
                                                                const int64_t *xt, size_t x)
{
    const __m256i acc = a32 ? _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(const void *)(a32 + x)))
                            : _mm256_loadu_si256((const __m256i *)(const void *)(a64 + x));
    return _mm256_add_epi64(acc, _mm256_loadu_si256((const __m256i *)(const void *)(xt + x)));
}

__attribute__((target("avx2"))) static size_t range_avx2(const uint32_t *a32, const uint64_t *a64, const int64_t *xt,
                                                        size_t n, int64_t *mn, int64_t *mx)
{
    __m256i vmn[4], vmx[4], v;
    int64_t lo[4], hi[4];
    size_t x = 0;
    int i, k;

    for (k = 0; k < 4; k++) {
        vmn[k] = _mm256_set1_epi64x(*mn);
        vmx[k] = _mm256_set1_epi64x(*mx);
    }
    for (; x + 16 <= n; x += 16)
        for (k = 0; k < 4; k++) {
            v = range_load(a32, a64, xt, x + 4 * (size_t)k);
            vmn[k] = _mm256_blendv_epi8(vmn[k], v, _mm256_cmpgt_epi64(vmn[k], v));
            vmx[k] = _mm256_blendv_epi8(vmx[k], v, _mm256_cmpgt_epi64(v, vmx[k]));
        }
    for (; x + 4 <= n; x += 4) {
        v = range_load(a32, a64, xt, x);
        vmn[0] = _mm256_blendv_epi8(vmn[0], v, _mm256_cmpgt_epi64(vmn[0], v));
        vmx[0] = _mm256_blendv_epi8(vmx[0], v, _mm256_cmpgt_epi64(v, vmx[0]));
    }
    for (k = 0; k < 4; k++) {
        _mm256_storeu_si256((__m256i *)(void *)lo, vmn[k]);
        _mm256_storeu_si256((__m256i *)(void *)hi, vmx[k]);
        for (i = 0; i < 4; i++) {
            *mn = lo[i] < *mn ? lo[i] : *mn;
            *mx = hi[i] > *mx ? hi[i] : *mx;
        }
    }
    return x;
}
#endif

#ifdef EMU_AVX2
/* range_avx2 eight lanes at a time with AVX-512 F, whose vpminsq/vpmaxsq replace AVX2's compare-and-blend pairs (the
 * range pass was 9% of MobileNet's one-thread time with them); returns how many it did (a multiple of 8). */
__attribute__((target("avx512f"))) static size_t range_avx512(const uint32_t *a32, const uint64_t *a64,
                                                             const int64_t *xt, size_t n, int64_t *mn, int64_t *mx)
{
    __m512i vmn[2], vmx[2], v;
    size_t x = 0;
    int k;

    for (k = 0; k < 2; k++) {
        vmn[k] = _mm512_set1_epi64(*mn);
        vmx[k] = _mm512_set1_epi64(*mx);
    }
    for (; x + 16 <= n; x += 16)
        for (k = 0; k < 2; k++) {
            v = okpu_emu_acc8_avx512(a32, a64, xt, x + 8 * (size_t)k);
            vmn[k] = _mm512_min_epi64(vmn[k], v);
            vmx[k] = _mm512_max_epi64(vmx[k], v);
        }
    for (; x + 8 <= n; x += 8) {
        v = okpu_emu_acc8_avx512(a32, a64, xt, x);
        vmn[0] = _mm512_min_epi64(vmn[0], v);
        vmx[0] = _mm512_max_epi64(vmx[0], v);
    }
    *mn = _mm512_reduce_min_epi64(_mm512_min_epi64(vmn[0], vmn[1]));
    *mx = _mm512_reduce_max_epi64(_mm512_max_epi64(vmx[0], vmx[1]));
    return x;
}
#endif

#ifdef EMU_AVX2
/* min and max of the uint32 a[x] for x in [0, n) into *mn, *mx (which hold the range so far), sixteen at a time;
 * returns how many it did (a multiple of 16). */
__attribute__((target("avx2"))) static size_t range_u32_avx2(const uint32_t *a, size_t n, int64_t *mn, int64_t *mx)
{
    __m256i vmn[2], vmx[2];
    uint32_t lo[8], hi[8];
    size_t x = 0;
    int i, k;

    for (k = 0; k < 2; k++) {
        vmn[k] = _mm256_set1_epi32(-1); /* UINT32_MAX */
        vmx[k] = _mm256_setzero_si256();
    }
    for (; x + 16 <= n; x += 16)
        for (k = 0; k < 2; k++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(a + x + 8 * (size_t)k));
            vmn[k] = _mm256_min_epu32(vmn[k], v);
            vmx[k] = _mm256_max_epu32(vmx[k], v);
        }
    if (x == 0)
        return 0;
    _mm256_storeu_si256((__m256i *)(void *)lo, _mm256_min_epu32(vmn[0], vmn[1]));
    _mm256_storeu_si256((__m256i *)(void *)hi, _mm256_max_epu32(vmx[0], vmx[1]));
    for (i = 0; i < 8; i++) {
        *mn = (int64_t)lo[i] < *mn ? (int64_t)lo[i] : *mn;
        *mx = (int64_t)hi[i] > *mx ? (int64_t)hi[i] : *mx;
    }
    return x;
}
#endif

/* Range of alu = sum(x*w) + x_term + w_const over the pixels of R (x_term NULL: folded into the weights). */
static void alu_range(const emu_layer *L, const uint32_t *acc32, const uint64_t *acc64, const int64_t *x_term,
                      const runs *R, int64_t w_const, int64_t *lo, int64_t *hi)
{
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    uint32_t r;
    size_t x;

    for (r = 0; r < R->count; r++) {
        const size_t first = (size_t)r * R->row_step * L->w, acc_first = r * R->acc_row;
        x = R->x_first;
#ifdef EMU_AVX2
        if (L->avx2 && R->x_step == 1 && !x_term && acc32)
            x += range_u32_avx2(acc32 + acc_first + x, R->span - x, &mn, &mx);
        else if (L->avx512 && R->x_step == 1 && x_term)
            x += range_avx512(acc32 ? acc32 + acc_first + x : NULL, acc32 ? NULL : acc64 + acc_first + x,
                              x_term + first + x, R->span - x, &mn, &mx);
        else if (L->avx2 && R->x_step == 1 && x_term)
            x += range_avx2(acc32 ? acc32 + acc_first + x : NULL, acc32 ? NULL : acc64 + acc_first + x,
                            x_term + first + x, R->span - x, &mn, &mx);
#endif
        for (; x < R->span; x += R->x_step) {
            const int64_t v = (acc32 ? (int64_t)acc32[acc_first + x] : (int64_t)acc64[acc_first + x]) +
                              (x_term ? x_term[first + x] : 0);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
    }
    *lo = mn + w_const;
    *hi = mx + w_const;
}

/* Output channel oc once its accumulators are in (a32 in 8-bit mode, else a64, laid out as R says): batch norm and
 * activation of each pixel the pool reads, into W->activated. */
static void channel_finish(const emu_layer *L, uint32_t oc, const runs *R, uint32_t *a32, const uint64_t *a64,
                           const emu_shared *S, emu_worker *W)
{
    const int64_t w_const = S->w_const[oc] - L->acc_bias;
    const int64_t *x_term = L->folded ? NULL : L->a->depthwise ? W->x_term : S->x_term;
    const int has_range = S->act.usable && R->count > 0 && R->span > R->x_first;
    int64_t lo = 0, hi = 0;
    okpu_kpu_bn bn;
    emu_bn_channel bc;
    runs dense;
    uint32_t r;

    if (R->whole && a32) {
        /* Each batch-norm call has a fixed cost and a vector tail (a 14-pixel row of MobileNet has no 16-wide step),
         * so the rows of the one run (pitch apart) are moved up to w apart, in place (row r moves back 2r places,
         * after rows 0..r-1 have), and the channel finishes as one run of w x h, as a 1x1 layer does. */
        for (r = 1; r < L->h; r++)
            memmove(a32 + (size_t)r * L->w, a32 + (size_t)r * L->pitch, L->w * sizeof *a32);
        dense = *R;
        dense.whole = 0;
        dense.count = 1;
        dense.span = L->w * L->h;
        dense.acc_row = dense.span;
        R = &dense;
    }
    okpu_kpu_bn_decode(L->bn_raw + (size_t)oc * KPU_BN_ENTRY_BYTES, &bn);
    if (has_range)
        alu_range(L, a32, a64, x_term, R, w_const, &lo, &hi);
    okpu_emu_bn_channel_init(L, &S->act, &bn, has_range, lo, hi, &bc);
    if (has_range) {
        const size_t npix = (size_t)R->count * ((R->span - R->x_first + R->x_step - 1) / R->x_step);
        okpu_emu_bn_lut(L, &S->act, &bc, W, npix, npix * W->share);
    }
    for (r = 0; r < R->count; r++) {
        const size_t first = (size_t)r * R->row_step * L->w;
        okpu_emu_bn_act_row(L, &S->act, &bc, a32 ? a32 + r * R->acc_row : NULL, a64 ? a64 + r * R->acc_row : NULL,
                            x_term ? x_term + first : NULL, w_const, W->activated + first, R->x_first, R->span,
                            R->x_step);
    }
}

/* ---- 8-bit 3x3 depthwise: the taps in registers on a widened plane ----
 * The channel's padded plane is widened to int16 once (W->wide), so the taps need no unpacking: pmaddwd over pixels
 * x..x+15 of a row with the packed pair (w0, w1) sums w0 * p[x + 2i] + w1 * p[x + 2i + 1], the first two taps of the
 * even output pixels x + 2i; the same from x + 1 gives the odd ones; (w2, 0) from x + 2 and x + 3 the third tap. Per
 * 16 output pixels: twelve loads and pmaddwd for the nine taps, one interleave of the even and odd sums. The packed
 * words per channel, for kernel rows 0-2: (w0, w1) then (w2, 0), folded weights as in the quads. Over the padded
 * planes as one run (see plane_runs), so the accumulators are laid out as the 3x3 quads' are. */

void okpu_emu_pack_dw3(const emu_layer *L, uint32_t c, uint32_t *dst)
{
    const uint8_t *w = L->weights + (size_t)c * 9u;
    uint32_t r;

    for (r = 0; r < 3; r++) {
        dst[2u * r] = (folded_weight(L, w[3u * r]) & 0xffffu) | folded_weight(L, w[3u * r + 1u]) << 16;
        dst[2u * r + 1u] = folded_weight(L, w[3u * r + 2u]) & 0xffffu;
    }
}

#if defined(__x86_64__) && !defined(OKPU_EMU_PORTABLE)
/* acc[x] for x in [0, n), n >= 8: eight pixels a step, a last partial step recomputing the last eight. */
static void dw3_sse2(const int16_t *wide, size_t pitch, const uint32_t *pk, uint32_t bias, uint32_t *acc, size_t n)
{
    __m128i w[6];
    size_t x = 0;
    int r;

    for (r = 0; r < 6; r++)
        w[r] = _mm_set1_epi32(as_int(pk[r]));
    for (;;) {
        __m128i e = _mm_set1_epi32(as_int(bias)), o = e;
        for (r = 0; r < 3; r++) {
            const int16_t *p = wide + x + (size_t)r * pitch;
            e = _mm_add_epi32(e, _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(const void *)p), w[2 * r]));
            o = _mm_add_epi32(o, _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(const void *)(p + 1)), w[2 * r]));
            e = _mm_add_epi32(e, _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(const void *)(p + 2)), w[2 * r + 1]));
            o = _mm_add_epi32(o, _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(const void *)(p + 3)), w[2 * r + 1]));
        }
        _mm_storeu_si128((__m128i *)(void *)(acc + x), _mm_unpacklo_epi32(e, o));
        _mm_storeu_si128((__m128i *)(void *)(acc + x + 4), _mm_unpackhi_epi32(e, o));
        if (x + 8 >= n)
            return;
        x = x + 16 <= n ? x + 8 : n - 8;
    }
}

#ifdef EMU_AVX2
/* acc[x] for x in [0, n), n >= 16: sixteen pixels a step (the unpacks work within 128-bit lanes). */
__attribute__((target("avx2"))) static void dw3_avx2(const int16_t *wide, size_t pitch, const uint32_t *pk,
                                                    uint32_t bias, uint32_t *acc, size_t n)
{
    __m256i w[6];
    size_t x = 0;
    int r;

    for (r = 0; r < 6; r++)
        w[r] = _mm256_set1_epi32(as_int(pk[r]));
    for (;;) {
        __m256i e = _mm256_set1_epi32(as_int(bias)), o = e, lo, hi;
        for (r = 0; r < 3; r++) {
            const int16_t *p = wide + x + (size_t)r * pitch;
            e = _mm256_add_epi32(e, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)p), w[2 * r]));
            o = _mm256_add_epi32(o, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(p + 1)), w[2 * r]));
            e = _mm256_add_epi32(e, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(p + 2)), w[2 * r + 1]));
            o = _mm256_add_epi32(o, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(p + 3)), w[2 * r + 1]));
        }
        lo = _mm256_unpacklo_epi32(e, o); /* pixels 0-3, 8-11 */
        hi = _mm256_unpackhi_epi32(e, o); /* 4-7, 12-15 */
        _mm256_storeu_si256((__m256i *)(void *)(acc + x), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256((__m256i *)(void *)(acc + x + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
        if (x + 16 >= n)
            return;
        x = x + 32 <= n ? x + 16 : n - 16;
    }
}

/* Thirty-two uint32 sums to d[0..32) in pixel order, from the unpacks' halves: in each 128-bit lane i, lo holds pixels
 * 8i..8i+3 and hi 8i+4..8i+7 (the layout of the AVX-512 quads and 3x3 depthwise steps). */
__attribute__((target("avx512f"))) static inline void store_lanes_avx512(uint32_t *d, __m512i lo, __m512i hi)
{
    const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);

    _mm512_storeu_si512((void *)d, _mm512_permutex2var_epi64(lo, first, hi));
    _mm512_storeu_si512((void *)(d + 16), _mm512_permutex2var_epi64(lo, second, hi));
}

/* acc[x] for x in [0, n), n >= 32: thirty-two pixels a step with AVX-512 BW. The last step starts at n - 32 and reads
 * up to wide[n + 2 * pitch + 2], as the AVX2 one's. */
__attribute__((target("avx512f,avx512bw"))) static void dw3_avx512(const int16_t *wide, size_t pitch, const uint32_t *pk,
                                                                  uint32_t bias, uint32_t *acc, size_t n)
{
    __m512i w[6];
    size_t x = 0;
    int r;

    for (r = 0; r < 6; r++)
        w[r] = _mm512_set1_epi32(as_int(pk[r]));
    for (;;) {
        __m512i e = _mm512_set1_epi32(as_int(bias)), o = e, lo, hi;
        for (r = 0; r < 3; r++) {
            const int16_t *p = wide + x + (size_t)r * pitch;
            e = _mm512_add_epi32(e, _mm512_madd_epi16(_mm512_loadu_si512((const void *)p), w[2 * r]));
            o = _mm512_add_epi32(o, _mm512_madd_epi16(_mm512_loadu_si512((const void *)(p + 1)), w[2 * r]));
            e = _mm512_add_epi32(e, _mm512_madd_epi16(_mm512_loadu_si512((const void *)(p + 2)), w[2 * r + 1]));
            o = _mm512_add_epi32(o, _mm512_madd_epi16(_mm512_loadu_si512((const void *)(p + 3)), w[2 * r + 1]));
        }
        lo = _mm512_unpacklo_epi32(e, o); /* lane i: pixels 8i..8i+3 */
        hi = _mm512_unpackhi_epi32(e, o); /* 8i+4..8i+7 */
        store_lanes_avx512(acc + x, lo, hi);
        if (x + 32 >= n)
            return;
        x = x + 64 <= n ? x + 32 : n - 32;
    }
}
#endif

/* Channel c's accumulators over the run of n pixels; 0 when the run is too short for a vector step (the pairs path
 * then takes it). Reads wide[x + 2 * pitch + 18] at most, inside the plane and its EMU_WIDE_SLACK. */
static int dw3_accumulate(const emu_layer *L, uint32_t c, const emu_shared *S, emu_worker *W, size_t n)
{
    const uint8_t *in = L->in + (size_t)c * L->plane;
    /* the rows the taps read: the whole plane, or a band's (a layer by rows: its planes start at the band's row) */
    const size_t used = (size_t)(L->h + 2u) * L->pitch < L->plane ? (size_t)(L->h + 2u) * L->pitch : L->plane;
    uint32_t own[6];
    const uint32_t *pk = S->packed ? S->packed + (size_t)c * 6u : own;
    size_t i;

    if (n < 8)
        return 0;
    if (!S->packed)
        okpu_emu_pack_dw3(L, c, own);
    for (i = 0; i < used; i++)
        W->wide[i] = in[i];
    memset(W->wide + used, 0, EMU_WIDE_SLACK * sizeof *W->wide);
#ifdef EMU_AVX2
    if (L->avx512bw && n >= 32) {
        dw3_avx512(W->wide, L->pitch, pk, (uint32_t)L->acc_bias, (uint32_t *)(void *)W->acc, n);
        return 1;
    }
    if (L->avx2 && n >= 16) {
        dw3_avx2(W->wide, L->pitch, pk, (uint32_t)L->acc_bias, (uint32_t *)(void *)W->acc, n);
        return 1;
    }
#endif
    dw3_sse2(W->wide, L->pitch, pk, (uint32_t)L->acc_bias, (uint32_t *)(void *)W->acc, n);
    return 1;
}
#else
static int dw3_accumulate(const emu_layer *L, uint32_t c, const emu_shared *S, emu_worker *W, size_t n)
{
    (void)L, (void)c, (void)S, (void)W, (void)n;
    return 0; /* the pairs path in plain C */
}
#endif

/* Output channel oc alone (16-bit weights, depthwise layers): accumulate its runs into W->acc, then finish it. */
static void conv_fast(const emu_layer *L, uint32_t oc, const emu_shared *S, emu_worker *W)
{
    const runs R = plane_runs(L);
    uint32_t r;

    if (L->a->depthwise)
        x_term_one_channel(L, oc, S, W);
    if (R.whole) {
        const size_t n = (size_t)(L->h - 1) * L->pitch + L->w;
        if (!(okpu_emu_dw3(L) && dw3_accumulate(L, oc, S, W, n)))
            accumulate_span8(L, oc, 0, (uint32_t)n, W);
    } else
        for (r = 0; r < R.count; r++) {
            if (L->eight_bit)
                accumulate_span8(L, oc, r * R.row_step, R.span, W);
            else
                accumulate_span(L, oc, r * R.row_step, R.span, W);
        }
    channel_finish(L, oc, &R, L->eight_bit ? (uint32_t *)(void *)W->acc : NULL, W->acc, S, W);
}

/* The pool of one channel: max 2x2 stride 2 (the common one) here, the others in okpu_emu_pool_plane. Every window
 * of that pool lies inside the map (2 * ox + 1 < w), so it is the largest of four bytes; plain loops the compiler
 * vectorises. */
static void pool_fast(const emu_layer *L, const uint8_t *in, uint8_t *out)
{
    const uint32_t w = L->w, ow = L->w / 2u, oh = L->h / 2u;
    uint32_t ox, oy;

    if (L->a->pool_type != 1) {
        okpu_emu_pool_plane(in, L->w, L->h, L->a->pool_type, L->mean_border, out);
        return;
    }
    for (oy = 0; oy < oh; oy++) {
        const uint8_t *r0 = in + (size_t)2u * oy * w, *r1 = r0 + w;
        uint8_t *o = out + (size_t)oy * ow;
        for (ox = 0; ox < ow; ox++) {
            const uint8_t a = r0[2u * ox] > r0[2u * ox + 1u] ? r0[2u * ox] : r0[2u * ox + 1u];
            const uint8_t b = r1[2u * ox] > r1[2u * ox + 1u] ? r1[2u * ox] : r1[2u * ox + 1u];
            o[ox] = a > b ? a : b;
        }
    }
}

/* ---- 8-bit layers that are not depthwise: four output channels at once ----
 * Every output channel reads the same input taps, so a pass over the input serves four channels: the taps (input
 * channel x kernel position, in weight order) are taken in pairs, each pair's pixels widened and interleaved once and
 * multiplied (pmaddwd) by four channels' packed weights. A quad's packed weights are, per pair j, four 32-bit words
 * wu | wv << 16 (channel 4q + k's weights of taps 2j and 2j + 1; 0 past the last channel or the last tap), laid out
 * when the layer is prepared (or per quad, into the worker's buffer, for a layer no prepare covered). Each pixel's
 * four sums stay in registers over all the pairs, as uint32 (8-bit mode: < 2^32, see the top of this file). */

uint32_t okpu_emu_pairs(const emu_layer *L)
{
    return (L->g_ic * L->kk + 1u) / 2u;
}

int okpu_emu_by_quads(const emu_layer *L)
{
    return L->eight_bit && !L->a->depthwise;
}

int okpu_emu_dw3(const emu_layer *L)
{
    return L->eight_bit && L->a->depthwise && L->k == 3;
}

void okpu_emu_fold(emu_layer *L)
{
    const okpu_kpu_args *a = L->a;
    int64_t fold, most;

    L->acc_bias = L->eight_bit ? (int64_t)1 << 31 : 0; /* 8-bit sums: |sum| < 1024 * 9 * 255 * 255 < 2^31 */
    L->x_fold = 0;
    L->folded = 0;
    if (!L->eight_bit || a->shr_x > 30u || a->arg_x % ((int32_t)1 << a->shr_x) != 0)
        return;
    fold = a->arg_x / ((int32_t)1 << a->shr_x);
    /* each folded weight must fit pmaddwd's int16, and g_ic * kk of them times 255 an int32 sum */
    most = 255 + (fold < 0 ? -fold : fold);
    if (most > INT16_MAX || (uint64_t)most * 255u * L->g_ic * L->kk > (uint64_t)INT32_MAX)
        return;
    L->x_fold = (int32_t)fold;
    L->folded = 1;
}

void okpu_emu_pack_quad(const emu_layer *L, uint32_t quad, uint32_t *dst)
{
    const uint32_t items = L->g_ic * L->kk, pairs = okpu_emu_pairs(L);
    uint32_t j, k;

    for (k = 0; k < 4; k++) {
        const uint32_t oc = 4u * quad + k;
        const uint8_t *w = L->weights + (size_t)oc * items;
        for (j = 0; j < pairs; j++)
            dst[4u * j + k] = oc >= L->oc ? 0u
                                          : (folded_weight(L, w[2u * j]) & 0xffffu) |
                                                (2u * j + 1u < items ? folded_weight(L, w[2u * j + 1u]) << 16 : 0u);
    }
}

/* Offsets of each pair's two taps from a pixel in its first input row: tap t = (input channel t / kk, kernel position
 * t % kk); a last odd tap is paired with itself (its weight is 0). */
void okpu_emu_pair_offsets(const emu_layer *L, uint32_t *off)
{
    const uint32_t items = L->g_ic * L->kk, pairs = okpu_emu_pairs(L);
    uint32_t pos[9], c, p, t = 0; /* (the offsets within a channel's plane: one division per kernel position, not per
                                   * tap; this runs at every layer of every forward pass) */

    for (p = 0; p < L->kk; p++) {
        const uint32_t dy = p / L->k;
        const uint32_t col = L->pick_x0 + p % L->k; /* a picked 3x3 layer: the tap's column from the picked one */
        if (L->pick_step && L->k == 3)
            pos[p] = (uint32_t)((col % L->pick_step) * L->phase_plane + (size_t)dy * L->phase_pitch + col / L->pick_step);
        else
            pos[p] = dy * L->pitch + p % L->k;
    }
    for (c = 0; c < L->g_ic; c++)
        for (p = 0; p < L->kk; p++)
            off[t++] = (uint32_t)((size_t)c * L->plane + pos[p]);
    for (; t < 2u * pairs; t++) /* a last odd tap is paired with itself */
        off[t] = off[items - 1u];
}

/* acc[k * stride + x] = channel k's sum at pixel x, for x in [0, n). */
typedef struct quad_job {
    const uint8_t *base; /* pixel 0 in the first input row of the run */
    const uint32_t *off; /* 2 x pairs tap offsets */
    const uint32_t *wq;  /* pairs x 4 packed words */
    uint32_t pairs;
    uint32_t bias; /* the accumulators' start (L->acc_bias) */
    uint32_t *acc;
    size_t stride;
} quad_job;

/* The int16 halves of a packed word, sign-extended, as uint32 (sums mod 2^32). */
static inline uint32_t low16(uint32_t w)
{
    return ((w & 0xffffu) ^ 0x8000u) - 0x8000u;
}

static inline uint32_t high16(uint32_t w)
{
    return ((w >> 16) ^ 0x8000u) - 0x8000u;
}

#if defined(__x86_64__) && !defined(OKPU_EMU_PORTABLE)
/* Pixels [x, n) one at a time: a run shorter than one vector step. */
static void quad_scalar(const quad_job *Q, size_t x, size_t n)
{
    uint32_t j, k;

    for (; x < n; x++) {
        uint32_t sum[4];
        for (k = 0; k < 4; k++)
            sum[k] = Q->bias;
        for (j = 0; j < Q->pairs; j++) {
            const uint32_t u = Q->base[Q->off[2u * j] + x], v = Q->base[Q->off[2u * j + 1u] + x];
            for (k = 0; k < 4; k++)
                sum[k] += low16(Q->wq[4u * j + k]) * u + high16(Q->wq[4u * j + k]) * v;
        }
        for (k = 0; k < 4; k++)
            Q->acc[k * Q->stride + x] = sum[k];
    }
}

/* Eight pixels a step; a last partial step recomputes the last eight (the sums are stored, not added, so pixels
 * computed twice get the same value). */
static size_t quad_sse2(const quad_job *Q, size_t n)
{
    const __m128i zero = _mm_setzero_si128();
    size_t x = 0;
    uint32_t j;
    int k;

    if (n < 8)
        return 0;
    for (;;) {
        __m128i s[4][2];
        for (k = 0; k < 4; k++)
            s[k][0] = s[k][1] = _mm_set1_epi32(as_int(Q->bias));
        for (j = 0; j < Q->pairs; j++) {
            const __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(Q->base + Q->off[2u * j] + x)), zero);
            const __m128i b = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(Q->base + Q->off[2u * j + 1u] + x)), zero);
            const __m128i lo = _mm_unpacklo_epi16(a, b), hi = _mm_unpackhi_epi16(a, b);
            for (k = 0; k < 4; k++) {
                const __m128i w = _mm_set1_epi32(as_int(Q->wq[4u * j + (uint32_t)k]));
                s[k][0] = _mm_add_epi32(s[k][0], _mm_madd_epi16(lo, w));
                s[k][1] = _mm_add_epi32(s[k][1], _mm_madd_epi16(hi, w));
            }
        }
        for (k = 0; k < 4; k++) {
            _mm_storeu_si128((__m128i *)(void *)(Q->acc + (size_t)k * Q->stride + x), s[k][0]);
            _mm_storeu_si128((__m128i *)(void *)(Q->acc + (size_t)k * Q->stride + x + 4), s[k][1]);
        }
        if (x + 8 >= n)
            return n;
        x = x + 16 <= n ? x + 8 : n - 8;
    }
}

#ifdef EMU_AVX2
/* Sixteen pixels a step (the unpacks work within 128-bit lanes: lo holds pixels 0-3 and 8-11, hi 4-7 and 12-15). */
__attribute__((target("avx2"))) static size_t quad_avx2(const quad_job *Q, size_t n)
{
    size_t x = 0;
    uint32_t j;
    int k;

    if (n < 16)
        return 0;
    for (;;) {
        __m256i s[4][2];
        for (k = 0; k < 4; k++)
            s[k][0] = s[k][1] = _mm256_set1_epi32(as_int(Q->bias));
        for (j = 0; j < Q->pairs; j++) {
            const __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(Q->base + Q->off[2u * j] + x)));
            const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(Q->base + Q->off[2u * j + 1u] + x)));
            const __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);
            for (k = 0; k < 4; k++) {
                const __m256i w = _mm256_set1_epi32(as_int(Q->wq[4u * j + (uint32_t)k]));
                s[k][0] = _mm256_add_epi32(s[k][0], _mm256_madd_epi16(lo, w));
                s[k][1] = _mm256_add_epi32(s[k][1], _mm256_madd_epi16(hi, w));
            }
        }
        for (k = 0; k < 4; k++) {
            uint32_t *d = Q->acc + (size_t)k * Q->stride + x;
            _mm256_storeu_si256((__m256i *)(void *)d, _mm256_permute2x128_si256(s[k][0], s[k][1], 0x20));
            _mm256_storeu_si256((__m256i *)(void *)(d + 8), _mm256_permute2x128_si256(s[k][0], s[k][1], 0x31));
        }
        if (x + 16 >= n)
            return n;
        x = x + 32 <= n ? x + 16 : n - 16;
    }
}

/* Thirty-two pixels a step with AVX-512 BW: the AVX2 step twice as wide (store_lanes_avx512 puts the unpacks' lanes
 * back in pixel order). */
__attribute__((target("avx512f,avx512bw"))) static size_t quad_avx512(const quad_job *Q, size_t n)
{
    size_t x = 0;
    uint32_t j;
    int k;

    if (n < 32)
        return 0;
    for (;;) {
        __m512i s[4][2];
        for (k = 0; k < 4; k++)
            s[k][0] = s[k][1] = _mm512_set1_epi32(as_int(Q->bias));
        for (j = 0; j < Q->pairs; j++) {
            const __m512i a = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(Q->base + Q->off[2u * j] + x)));
            const __m512i b = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(Q->base + Q->off[2u * j + 1u] + x)));
            const __m512i lo = _mm512_unpacklo_epi16(a, b), hi = _mm512_unpackhi_epi16(a, b);
            for (k = 0; k < 4; k++) {
                const __m512i w = _mm512_set1_epi32(as_int(Q->wq[4u * j + (uint32_t)k]));
                s[k][0] = _mm512_add_epi32(s[k][0], _mm512_madd_epi16(lo, w));
                s[k][1] = _mm512_add_epi32(s[k][1], _mm512_madd_epi16(hi, w));
            }
        }
        for (k = 0; k < 4; k++)
            store_lanes_avx512(Q->acc + (size_t)k * Q->stride + x, s[k][0], s[k][1]);
        if (x + 32 >= n)
            return n;
        x = x + 64 <= n ? x + 32 : n - 32;
    }
}
#endif

static void quad_run(const emu_layer *L, const quad_job *Q, size_t n)
{
    size_t x = 0;

#ifdef EMU_AVX2
    if (L->avx512bw)
        x = quad_avx512(Q, n);
    if (x == 0 && L->avx2)
        x = quad_avx2(Q, n);
#else
    (void)L;
#endif
    if (x == 0)
        x = quad_sse2(Q, n);
    quad_scalar(Q, x, n);
}
#else
/* The portable path: pair by pair over the run, four channels each. */
static void quad_run(const emu_layer *L, const quad_job *Q, size_t n)
{
    uint32_t j, k;
    size_t x;

    (void)L;
    for (k = 0; k < 4; k++)
        for (x = 0; x < n; x++)
            Q->acc[k * Q->stride + x] = Q->bias;
    for (j = 0; j < Q->pairs; j++) {
        const uint8_t *u = Q->base + Q->off[2u * j], *v = Q->base + Q->off[2u * j + 1u];
        for (k = 0; k < 4; k++) {
            const uint32_t wu = low16(Q->wq[4u * j + k]), wv = high16(Q->wq[4u * j + k]);
            uint32_t *acc = Q->acc + k * Q->stride;
            for (x = 0; x < n; x++)
                acc[x] += wu * u[x] + wv * v[x];
        }
    }
}
#endif

/* Channels 4q..4q+3 of the quads covering [oc_first, oc_end): accumulate all four, finish those in the range. */
static void channels_by_quads(const emu_layer *L, uint32_t oc_first, uint32_t oc_end, const emu_shared *S,
                              emu_worker *W, uint8_t *out)
{
    const size_t out_plane = (size_t)L->a->out_width * L->a->out_height;
    const runs R = plane_runs(L);
    const uint32_t pairs = okpu_emu_pairs(L);
    uint32_t *acc = (uint32_t *)(void *)W->acc;
    uint32_t q, k, r;
    quad_job Q;

    Q.off = S->pair_off;
    Q.pairs = pairs;
    Q.bias = (uint32_t)L->acc_bias;
    Q.stride = L->acc_stride;
    for (q = oc_first / 4u; 4u * q < oc_end; q++) {
        if (S->packed) {
            Q.wq = S->packed + (size_t)q * pairs * 4u;
        } else {
            okpu_emu_pack_quad(L, q, W->pack);
            Q.wq = W->pack;
        }
        if (R.whole) {
            Q.base = L->in;
            Q.acc = acc;
            quad_run(L, &Q, (size_t)(L->h - 1) * L->pitch + L->w);
        } else {
            for (r = 0; r < R.count; r++) {
                Q.base = L->in + (size_t)r * R.row_step * L->pitch;
                Q.acc = acc + r * R.acc_row;
                quad_run(L, &Q, R.span);
            }
        }
        for (k = 0; k < 4; k++) {
            const uint32_t oc = 4u * q + k;
            if (oc < oc_first || oc >= oc_end)
                continue;
            channel_finish(L, oc, &R, acc + k * L->acc_stride, NULL, S, W);
            pool_fast(L, W->activated, out + oc * out_plane);
        }
    }
}

void okpu_emu_channels_fast(const emu_layer *L, uint32_t oc_first, uint32_t oc_end, const emu_shared *S,
                            emu_worker *W, uint8_t *out)
{
    const size_t out_plane = (size_t)L->a->out_width * L->a->out_height;
    uint32_t oc;

    /* The table holds the activation of this layer (emu_run_layer clears the worker's at each layer), so it stays
     * valid from one of the worker's ranges to the next; the fill budget is the worker's share of the layer. */
    if (okpu_emu_by_quads(L)) {
        channels_by_quads(L, oc_first, oc_end, S, W, out);
        return;
    }
    for (oc = oc_first; oc < oc_end; oc++) {
        conv_fast(L, oc, S, W);
        pool_fast(L, W->activated, out + oc * out_plane);
    }
}

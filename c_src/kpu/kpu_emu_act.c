// SPDX-License-Identifier: Apache-2.0
/* Batch norm + activation over a row of accumulators, computing the bytes okpu_emu_bn_act (kpu_emu_ref.c) computes.
 * An output channel's accumulators are all known before its batch norm, so okpu_emu_bn_channel_init sees their range
 * and picks, per channel, the cheapest path that is exact over it. */
#include <float.h>
#include <string.h>

#include "../core/arith.h"
#include "kpu_emu.h"

/* ---- Batch norm + activation without the wrapping helpers ----
 * okpu_emu_bn_act is exact for every alu. An output channel's accumulators are all computed before its batch norm, so
 * the range of its alu values is known: when that range keeps every intermediate below 2^61 in magnitude, plain int64
 * arithmetic computes the same value with no wrap, the floor shifts become one add and one logical shift, and the
 * segment search covers only the segments that range reaches (often one or two). A channel whose range does not
 * allow that (or an unsorted activation table, or a shift above 62) takes okpu_emu_bn_act. */

#define FAST_LIMIT ((int64_t)1 << 61)
#define EXACT_LIMIT ((int64_t)1 << 52) /* the double path's bound (bn_vec_init) */
#define FLOOR_BIAS ((uint64_t)1 << 62)

/* 2^-s for s <= 62, built from its exponent bits (a division here was a fifth of a channel's setup) */
static double pow2_neg(unsigned s)
{
    const uint64_t bits = (uint64_t)(1023u - s) << 52;
    double d;

    memcpy(&d, &bits, sizeof d);
    return d;
}

/* floor(v / 2^s) for |v| < 2^62 and s <= 62: v + 2^62 is in [0, 2^63) and 2^62 is a multiple of 2^s. */
static inline int64_t floor_shift(int64_t v, unsigned s)
{
    return (int64_t)(((uint64_t)v + FLOOR_BIAS) >> s) - (int64_t)(FLOOR_BIAS >> s);
}

void okpu_emu_act_fast_init(const okpu_kpu_act *act, int act_sorted, emu_act_fast *f)
{
    int i;

    f->usable = act_sorted;
    for (i = 16; i < 32; i++)
        f->x_start[i] = INT64_MAX;
    for (i = 0; i < 16; i++) {
        const unsigned s = act->shift[i];
        f->x_start[i] = act->x_start[i];
        f->y_mul[i] = act->y_mul[i];
        f->bias[i] = act->bias[i];
        f->shift[i] = s;
        if (s > 62u) {
            f->usable = 0;
            f->shift[i] = 0;
        }
        f->half[i] = s >= 1u && s <= 62u ? (int64_t)1 << (s - 1u) : 0;
        f->half_m1[i] = f->half[i] ? f->half[i] - 1 : 0;
        f->odd_bit[i] = s >= 1u && s <= 62u ? (uint64_t)1 << s : 0u;
        f->round_en[i] = s >= 1u ? 1 : 0;
        f->shift_m1[i] = s >= 1u && s <= 62u ? s - 1u : 0u;
        {
            const int64_t m = f->y_mul[i] < 0 ? -f->y_mul[i] : f->y_mul[i];
            f->fast_d_max[i] = m ? (FAST_LIMIT - 1) / m : INT64_MAX;
            f->exact_d_max[i] = m ? (EXACT_LIMIT - 1) / m : INT64_MAX;
            f->sc[i] = s <= 62u ? pow2_neg(s) : 0.0;
            f->sc1[i] = s == 0u ? 2.0 : s <= 63u ? pow2_neg(s - 1u) : 0.0;
        }
    }
    /* bn_fast_init's bound on every segment at once: |y - x_start[i]| <= fast_d_max[i] for all i and every y of
     * [ylo, yhi] exactly when ylo >= x_start[i] - fast_d_max[i] and yhi <= x_start[i] + fast_d_max[i] for all i
     * (computed saturating: fast_d_max is INT64_MAX for y_mul = 0) */
    f->y_fast_lo = INT64_MIN;
    f->y_fast_hi = INT64_MAX;
    for (i = 0; i < 16; i++) {
        const int64_t v = f->x_start[i], d = f->fast_d_max[i];
        const int64_t lo = v < INT64_MIN + d ? INT64_MIN : v - d, hi = v > INT64_MAX - d ? INT64_MAX : v + d;
        f->y_fast_lo = lo > f->y_fast_lo ? lo : f->y_fast_lo;
        f->y_fast_hi = hi < f->y_fast_hi ? hi : f->y_fast_hi;
    }
}

/* Decide whether the channel with BN `bn` and alu in [lo, hi] can use bn_act_fast. */
static void bn_fast_init(const okpu_kpu_bn *bn, const emu_act_fast *af, int64_t lo, int64_t hi, emu_bn_channel *f)
{
    const int64_t limit = (int64_t)1 << 37; /* |alu| <= 2^37 and |norm_mul| <= 2^23: |alu * norm_mul| <= 2^60 */
    int64_t y0, y1, ylo, yhi;
    int i, last;

    f->usable = 0;
    f->mul = bn->norm_mul;
    f->add = bn->norm_add;
    f->shift = bn->norm_shift;
    if (!af->usable || lo < -limit || hi > limit || lo > hi || f->shift > 62u)
        return;
    y0 = floor_shift(lo * f->mul, f->shift) + f->add;
    y1 = floor_shift(hi * f->mul, f->shift) + f->add;
    ylo = y0 < y1 ? y0 : y1; /* floor(alu * m / 2^s) is monotone in alu */
    yhi = y0 < y1 ? y1 : y0;
    if (ylo < af->y_fast_lo || yhi > af->y_fast_hi) /* (some |y - x_start[i]| * |y_mul[i]| would reach 2^61) */
        return;
    /* Segments are chosen by y > x_start (sorted): every y in [ylo, yhi] takes one of first..last. */
    f->first = 0;
    last = 0;
    for (i = 1; i < 16; i++) {
        f->first = ylo > af->x_start[i] ? i : f->first;
        last = yhi > af->x_start[i] ? i : last;
    }
    for (f->steps = 0; (1 << f->steps) < last - f->first + 1; f->steps++)
        ;
    f->last = last;
    f->ylo = ylo;
    f->yhi = yhi;
    f->alu_abs = -lo > hi ? -lo : hi;
    f->usable = 1;
}

/* The activation of y in segment i, for y that bn_fast_init bounded (|y - x_start[j]| * |y_mul[j]| < 2^61 for every
 * segment j): the byte okpu_emu_bn_act gives. */
static inline uint8_t act_fast(int64_t y, int i, const emu_act_fast *A, okpu_round_mode mode)
{
    const int64_t d = (y - A->x_start[i]) * A->y_mul[i];
    int64_t r, q;

    if (mode == OKPU_ROUND_HALF_UP) {
        r = floor_shift(d + A->half[i], A->shift[i]);
    } else if (mode == OKPU_ROUND_SDK_CARRY) {
        const int64_t t = floor_shift(d, A->shift_m1[i]);
        q = floor_shift(t, 1);
        r = !A->round_en[i] ? d : ((uint64_t)t & 1u) ? (t >= 0 ? q + 1 : q - 1) : q;
    } else {
        /* ties to even: floor((d + 2^(s-1) - 1 + (floor(d / 2^s) & 1)) / 2^s); the added bit makes a tie round up
         * exactly when the quotient is odd. |d| + 2^(s-1) < 2^62. */
        const int64_t odd = ((uint64_t)d & A->odd_bit[i]) != 0;
        r = floor_shift(d + A->half_m1[i] + odd, A->shift[i]);
    }
    if (r >= 255)
        return 255;
    if (r <= -255)
        return 0;
    return okpu_clamp_u8(r + A->bias[i]);
}

/* bn_act for a channel bn_fast_init accepted: the same byte. */
static inline uint8_t bn_act_fast(int64_t alu, const emu_bn_channel *b, const emu_act_fast *A, okpu_round_mode mode)
{
    const int64_t y = floor_shift(alu * b->mul, b->shift) + b->add;
    int i = b->first;

    /* the largest segment i in first..first + 2^steps - 1 with y > x_start[i] (y > x_start[first] holds) */
    switch (b->steps) {
    case 4:
        i += y > A->x_start[i + 8] ? 8 : 0;
        /* fall through */
    case 3:
        i += y > A->x_start[i + 4] ? 4 : 0;
        /* fall through */
    case 2:
        i += y > A->x_start[i + 2] ? 2 : 0;
        /* fall through */
    case 1:
        i += y > A->x_start[i + 1] ? 1 : 0;
        /* fall through */
    default:
        break;
    }
    return act_fast(y, i, A, mode);
}

/* ---- The activation as a table ----
 * The activation depends on y alone and is the same for every channel of a layer; in some models (MobileNet) y spans
 * only a few thousand values per channel, fewer than the pixels the layer computes. Each worker then keeps a table
 * of the activation of every y in one range, grown as its channels need (it covers the union of the channels' ranges,
 * an interval whose ends are ends of ranges bn_fast_init bounded, so every y inside is bounded too), and a pixel costs
 * one multiply, one shift and one load. An entry costs about what a pixel costs on the search path, so the entries a
 * worker computes in a layer are at most half the pixels of its share of the layer; a channel the vector path takes
 * with at most four segments uses the table only when it already covers its range. */
#ifdef EMU_AVX2
static size_t lut_segment_avx512(const emu_act_fast *A, int i, int64_t y, size_t n, okpu_round_mode mode, uint8_t *t);
#endif

/* t[j] = the activation of y + j for j in [0, n), every y + j in segment i. */
static void lut_segment(const emu_layer *L, const emu_act_fast *A, int i, int64_t y, size_t n, uint8_t *t)
{
    size_t j = 0;

#ifdef EMU_AVX2
    if (L->avx512)
        j = lut_segment_avx512(A, i, y, n, L->round, t);
#endif
    /* one loop per rounding mode, the mode a constant in each */
#define FILL(MODE)                                                                                                \
    for (; j < n; j++)                                                                                            \
        t[j] = act_fast(y + (int64_t)j, i, A, MODE);
    if (L->round == OKPU_ROUND_HALF_UP)
        FILL(OKPU_ROUND_HALF_UP)
    else if (L->round == OKPU_ROUND_SDK_CARRY)
        FILL(OKPU_ROUND_SDK_CARRY)
    else
        FILL(OKPU_ROUND_HALF_EVEN)
#undef FILL
}

static void lut_fill(const emu_layer *L, const emu_act_fast *A, uint8_t *t, int64_t y, size_t n)
{
    size_t j = 0;
    int i = 0;

    if (!n)
        return;
    i += y > A->x_start[i + 8] ? 8 : 0;
    i += y > A->x_start[i + 4] ? 4 : 0;
    i += y > A->x_start[i + 2] ? 2 : 0;
    i += y > A->x_start[i + 1] ? 1 : 0;
    /* y rises by one an entry and x_start is sorted, so the segment only moves up (x_start[16] is INT64_MAX): the
     * entries in segment i run up to y = x_start[i + 1] */
    while (j < n) {
        const int64_t at = y + (int64_t)j;
        size_t run = n - j;
        while (at > A->x_start[i + 1])
            i++;
        if (A->x_start[i + 1] != INT64_MAX && (uint64_t)(A->x_start[i + 1] - at) + 1u < run)
            run = (size_t)(A->x_start[i + 1] - at) + 1u;
        lut_segment(L, A, i, at, run, t + j);
        j += run;
    }
}

void okpu_emu_bn_lut(const emu_layer *L, const emu_act_fast *A, emu_bn_channel *c, emu_worker *W, size_t npix,
                     size_t range_px)
{
    const uint64_t budget = (uint64_t)range_px / 2u;
    int64_t lo, hi;
    uint64_t fresh;

    c->lut = NULL;
    if (!c->usable || !W->lut || npix == 0)
        return;
    lo = c->ylo;
    hi = c->yhi; /* |ylo|, |yhi| < 2^61: the differences below do not wrap */
    if (W->lut_n) {
        const int64_t old_hi = W->lut_lo + (int64_t)W->lut_n - 1;
        lo = lo < W->lut_lo ? lo : W->lut_lo;
        hi = hi > old_hi ? hi : old_hi;
    }
    fresh = (uint64_t)(hi - lo) + 1u - W->lut_n;
    if (c->vec && c->nseg <= 4 && fresh)
        return;
    if ((uint64_t)(hi - lo) >= EMU_LUT_MAX || W->lut_filled + fresh > budget) {
        /* the union does not fit or costs too much: start over from this channel's range alone if that pays */
        lo = c->ylo;
        hi = c->yhi;
        fresh = (uint64_t)(hi - lo) + 1u;
        if ((uint64_t)(hi - lo) >= EMU_LUT_MAX || W->lut_filled + fresh > budget || fresh > (uint64_t)npix / 2u)
            return;
        W->lut_n = 0;
    }
    if (fresh) {
        const size_t below = W->lut_n ? (size_t)(W->lut_lo - lo) : 0, n = (size_t)(hi - lo) + 1u;
        if (!W->lut_n) {
            lut_fill(L, A, W->lut, lo, n);
        } else {
            const size_t above = n - below - W->lut_n;
            if (below)
                memmove(W->lut + below, W->lut, W->lut_n);
            lut_fill(L, A, W->lut, lo, below);
            lut_fill(L, A, W->lut + below + W->lut_n, W->lut_lo + (int64_t)W->lut_n, above);
        }
        W->lut_lo = lo;
        W->lut_n = n;
        W->lut_filled += (size_t)fresh;
    }
    c->lut = W->lut;
    c->lut_lo = W->lut_lo;
}

/* ---- Batch norm + activation, two values at a time (x86-64 with SSE4.1, checked at run time) ----
 * The same integers in doubles: every value below is an integer (or an integer times a power of two) under 2^53 in
 * magnitude, where double arithmetic is exact, so floor / nearest-even / +0.5 give bit for bit what the int64 code
 * gives. bn_vec_init accepts a channel only when its alu range bounds every intermediate that way and it reaches at
 * most four segments (chosen by compare and blend instead of a search). */
#ifdef EMU_SSE41
#include <smmintrin.h>


static int64_t abs_diff_max(int64_t lo, int64_t hi, int64_t v)
{
    int64_t a = lo > v ? lo - v : v - lo, b = hi > v ? hi - v : v - hi;
    return a > b ? a : b;
}

static void bn_vec_init(const emu_act_fast *A, emu_bn_channel *c, int max_seg)
{
    int j;

    c->vec = 0;
    if (!c->usable || c->last - c->first >= max_seg)
        return;
    if (c->mul != 0 && c->alu_abs > (EXACT_LIMIT - 1) / (c->mul < 0 ? -c->mul : c->mul))
        return; /* |alu * norm_mul| < 2^52 */
    for (j = 0; j <= c->last - c->first; j++) {
        const int i = c->first + j;
        const int64_t d = abs_diff_max(c->ylo, c->yhi, A->x_start[i]);
        if (A->shift[i] > 52u || d >= EXACT_LIMIT || d > A->exact_d_max[i])
            return; /* |d| < 2^52, and |d| + 2^(s-1) < 2^53 for half up */
        c->xs[j] = (double)A->x_start[i];
        c->ym[j] = (double)A->y_mul[i];
        c->sc[j] = A->sc[i];
        c->sc1[j] = A->sc1[i];
        c->vbias[j] = (double)A->bias[i];
        c->ymsc[j] = c->ym[j] * c->sc[j];
        c->ymsc1[j] = c->ym[j] * c->sc1[j];
    }
    c->nseg = c->last - c->first + 1;
    for (j = c->nseg; j < EMU_VEC_SEG; j++)
        c->xs[j] = DBL_MAX; /* (bn8_avx512's search probes up to 2^steps - 1: no y passes these) */
    c->vmul = (double)c->mul * pow2_neg(c->shift); /* |norm_mul| < 2^24: exact */
    c->vadd = (double)c->add;
    c->vec = 1;
}

/* out[x] for x in [0, n) from acc (uint32 or uint64 view) + xt + w_const; returns how many it did (an even count). */
__attribute__((target("sse4.1"))) static size_t bn_row_sse41(const uint32_t *a32, const uint64_t *a64,
                                                           const int64_t *xt, int64_t w_const, uint8_t *out, size_t n,
                                                           const emu_bn_channel *V, okpu_round_mode mode)
{
    const __m128i wc = _mm_set1_epi64x(w_const), magic_i = _mm_set1_epi64x(0x4338000000000000LL);
    const __m128d magic = _mm_set1_pd(6755399441055744.0); /* 1.5 * 2^52 */
    const __m128d mul = _mm_set1_pd(V->vmul), add = _mm_set1_pd(V->vadd), half = _mm_set1_pd(0.5);
    const __m128d zero = _mm_setzero_pd(), top = _mm_set1_pd(255.0), one = _mm_set1_pd(1.0);
    size_t x = 0;
    int j;

    for (; x + 2 <= n; x += 2) {
        __m128i acc = a32 ? _mm_unpacklo_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(a32 + x)),
                                               _mm_setzero_si128())
                          : _mm_loadu_si128((const __m128i *)(const void *)(a64 + x));
        const __m128i alu_i = _mm_add_epi64(xt ? _mm_add_epi64(acc, _mm_loadu_si128((const __m128i *)(const void *)(xt + x))) : acc, wc);
        /* int64 -> double for |v| < 2^51: v + 1.5 * 2^52 in the mantissa */
        const __m128d alu = _mm_sub_pd(_mm_castsi128_pd(_mm_add_epi64(alu_i, magic_i)), magic);
        const __m128d y = _mm_add_pd(_mm_floor_pd(_mm_mul_pd(alu, mul)), add);
        __m128d xs = _mm_set1_pd(V->xs[0]), ym = _mm_set1_pd(V->ym[0]), sc = _mm_set1_pd(V->sc[0]),
                sc1 = _mm_set1_pd(V->sc1[0]), bias = _mm_set1_pd(V->vbias[0]), d, r, v;
        __m128i q32;
        for (j = 1; j < V->nseg; j++) { /* sorted: the last segment whose x_start y passes wins */
            const __m128d m = _mm_cmpgt_pd(y, _mm_set1_pd(V->xs[j]));
            xs = _mm_blendv_pd(xs, _mm_set1_pd(V->xs[j]), m);
            ym = _mm_blendv_pd(ym, _mm_set1_pd(V->ym[j]), m);
            sc = _mm_blendv_pd(sc, _mm_set1_pd(V->sc[j]), m);
            sc1 = _mm_blendv_pd(sc1, _mm_set1_pd(V->sc1[j]), m);
            bias = _mm_blendv_pd(bias, _mm_set1_pd(V->vbias[j]), m);
        }
        d = _mm_mul_pd(_mm_sub_pd(y, xs), ym);
        if (mode == OKPU_ROUND_HALF_UP) {
            r = _mm_floor_pd(_mm_add_pd(_mm_mul_pd(d, sc), half));
        } else if (mode == OKPU_ROUND_SDK_CARRY) {
            const __m128d t = _mm_floor_pd(_mm_mul_pd(d, sc1)), h = _mm_mul_pd(t, half), q = _mm_floor_pd(h);
            const __m128d odd = _mm_cmpneq_pd(h, q);
            const __m128d step = _mm_blendv_pd(_mm_sub_pd(zero, one), one, _mm_cmpge_pd(t, zero));
            r = _mm_add_pd(q, _mm_and_pd(odd, step));
        } else {
            r = _mm_round_pd(_mm_mul_pd(d, sc), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        /* r >= 255 gives 255; r <= -255 gives 0, which the clamp of r + bias (bias <= 255) already gives */
        v = _mm_min_pd(_mm_max_pd(_mm_add_pd(r, bias), zero), top);
        v = _mm_blendv_pd(v, top, _mm_cmpge_pd(r, top));
        q32 = _mm_cvtpd_epi32(v);
        out[x] = (uint8_t)_mm_cvtsi128_si32(q32);
        out[x + 1] = (uint8_t)_mm_cvtsi128_si32(_mm_srli_si128(q32, 4));
    }
    return x;
}
#endif

#ifdef EMU_AVX2
#include <immintrin.h>

/* bn_row_sse41 four values at a time (x86-64 with AVX2, checked at run time). (y - x_start) * y_mul * 2^-s is one
 * product with the exact y_mul * 2^-s (an integer under 2^52 times a power of two: exact), so each segment needs
 * three blends (x_start, that factor, bias); r >= 255 needs no case of its own since bias >= 0 makes r + bias >= 255,
 * which the clamp turns into 255. */
__attribute__((target("avx2"))) static size_t bn_row_avx2(const uint32_t *a32, const uint64_t *a64, const int64_t *xt,
                                                         int64_t w_const, uint8_t *out, size_t n,
                                                         const emu_bn_channel *V, okpu_round_mode mode)
{
    const __m256i wc = _mm256_set1_epi64x(w_const), magic_i = _mm256_set1_epi64x(0x4338000000000000LL);
    const __m256d magic = _mm256_set1_pd(6755399441055744.0); /* 1.5 * 2^52 */
    const __m256d mul = _mm256_set1_pd(V->vmul), add = _mm256_set1_pd(V->vadd), half = _mm256_set1_pd(0.5);
    const __m256d zero = _mm256_setzero_pd(), top = _mm256_set1_pd(255.0), one = _mm256_set1_pd(1.0);
    const double *f = mode == OKPU_ROUND_SDK_CARRY ? V->ymsc1 : V->ymsc;
    size_t x = 0;
    int j;

    for (; x + 4 <= n; x += 4) {
        const __m256i acc = a32 ? _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(const void *)(a32 + x)))
                                : _mm256_loadu_si256((const __m256i *)(const void *)(a64 + x));
        const __m256i alu_i =
            _mm256_add_epi64(xt ? _mm256_add_epi64(acc, _mm256_loadu_si256((const __m256i *)(const void *)(xt + x))) : acc, wc);
        const __m256d alu = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(alu_i, magic_i)), magic);
        const __m256d y = _mm256_add_pd(_mm256_floor_pd(_mm256_mul_pd(alu, mul)), add);
        __m256d xs = _mm256_set1_pd(V->xs[0]), fm = _mm256_set1_pd(f[0]), bias = _mm256_set1_pd(V->vbias[0]), d, r, v;
        __m128i q;
        int32_t bytes;
        for (j = 1; j < V->nseg; j++) {
            const __m256d m = _mm256_cmp_pd(y, _mm256_set1_pd(V->xs[j]), _CMP_GT_OQ);
            xs = _mm256_blendv_pd(xs, _mm256_set1_pd(V->xs[j]), m);
            fm = _mm256_blendv_pd(fm, _mm256_set1_pd(f[j]), m);
            bias = _mm256_blendv_pd(bias, _mm256_set1_pd(V->vbias[j]), m);
        }
        d = _mm256_mul_pd(_mm256_sub_pd(y, xs), fm); /* d * 2^-s, or d * 2^-(s-1) for the SDK's carry */
        if (mode == OKPU_ROUND_HALF_UP) {
            r = _mm256_floor_pd(_mm256_add_pd(d, half));
        } else if (mode == OKPU_ROUND_SDK_CARRY) {
            const __m256d t = _mm256_floor_pd(d), h = _mm256_mul_pd(t, half), qd = _mm256_floor_pd(h);
            const __m256d odd = _mm256_cmp_pd(h, qd, _CMP_NEQ_UQ);
            const __m256d step = _mm256_blendv_pd(_mm256_sub_pd(zero, one), one, _mm256_cmp_pd(t, zero, _CMP_GE_OQ));
            r = _mm256_add_pd(qd, _mm256_and_pd(odd, step));
        } else {
            r = _mm256_round_pd(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        v = _mm256_min_pd(_mm256_max_pd(_mm256_add_pd(r, bias), zero), top);
        q = _mm256_cvtpd_epi32(v); /* 0..255 */
        q = _mm_packus_epi16(_mm_packus_epi32(q, q), q);
        bytes = _mm_cvtsi128_si32(q);
        memcpy(out + x, &bytes, 4);
    }
    return x;
}

/* bn_row_avx2 sixteen values at a time with AVX-512 (F and DQ, checked at run time): the same double operations on
 * eight lanes, the conversions direct (uint32 to double, or to int64 and then vcvtqq2pd: exact below 2^53), the
 * segment choice by compare masks, the bytes by vpmovdb. bn8_avx512 takes y, floor(alu * norm_mul / 2^norm_shift) +
 * norm_add (exact), to eight bytes. */
__attribute__((target("avx512f,avx512dq"))) static inline __m256i bn8_avx512(__m512d y, const emu_bn_channel *V,
                                                                            const double *f, okpu_round_mode mode)
{
    const __m512d zero = _mm512_setzero_pd(), top = _mm512_set1_pd(255.0), half = _mm512_set1_pd(0.5);
    __m512d xs = _mm512_set1_pd(V->xs[0]), fm = _mm512_set1_pd(f[0]), bias = _mm512_set1_pd(V->vbias[0]), d, r;
    int j;

    if (V->nseg > 4) {
        /* The same segment (the last whose x_start y passes: the passing ones are a prefix, x_start sorted) by a
         * binary search over the sixteen-entry tables, two registers each (vpermt2pd): 4 steps of 4 operations and 3
         * look-ups where the scan below takes 15 of 4. A SiLU-like activation reaches 10-16 segments. */
        const __m512d xs0 = _mm512_loadu_pd(V->xs), xs1 = _mm512_loadu_pd(V->xs + 8);
        __m512i at = _mm512_setzero_si512();
        for (j = 1 << (V->steps - 1); j >= 1; j >>= 1) {
            const __m512i probe = _mm512_add_epi64(at, _mm512_set1_epi64(j));
            const __mmask8 m =
                _mm512_cmp_pd_mask(y, _mm512_permutex2var_pd(xs0, probe, xs1), _CMP_GT_OQ);
            at = _mm512_mask_mov_epi64(at, m, probe);
        }
        xs = _mm512_permutex2var_pd(xs0, at, xs1);
        fm = _mm512_permutex2var_pd(_mm512_loadu_pd(f), at, _mm512_loadu_pd(f + 8));
        bias = _mm512_permutex2var_pd(_mm512_loadu_pd(V->vbias), at, _mm512_loadu_pd(V->vbias + 8));
    } else {
        for (j = 1; j < V->nseg; j++) {
            const __mmask8 m = _mm512_cmp_pd_mask(y, _mm512_set1_pd(V->xs[j]), _CMP_GT_OQ);
            xs = _mm512_mask_blend_pd(m, xs, _mm512_set1_pd(V->xs[j]));
            fm = _mm512_mask_blend_pd(m, fm, _mm512_set1_pd(f[j]));
            bias = _mm512_mask_blend_pd(m, bias, _mm512_set1_pd(V->vbias[j]));
        }
    }
    d = _mm512_mul_pd(_mm512_sub_pd(y, xs), fm);
    if (mode == OKPU_ROUND_HALF_UP) {
        r = _mm512_roundscale_pd(_mm512_add_pd(d, half), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    } else if (mode == OKPU_ROUND_SDK_CARRY) {
        const __m512d t = _mm512_roundscale_pd(d, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), h = _mm512_mul_pd(t, half);
        const __m512d qd = _mm512_roundscale_pd(h, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        const __mmask8 odd = _mm512_cmp_pd_mask(h, qd, _CMP_NEQ_UQ), neg = _mm512_cmp_pd_mask(t, zero, _CMP_LT_OQ);
        r = _mm512_mask_add_pd(qd, odd, qd, _mm512_mask_blend_pd(neg, _mm512_set1_pd(1.0), _mm512_set1_pd(-1.0)));
    } else {
        r = _mm512_roundscale_pd(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    return _mm512_cvtpd_epi32(_mm512_min_pd(_mm512_max_pd(_mm512_add_pd(r, bias), zero), top)); /* 0..255 */
}

__attribute__((target("avx512f,avx512dq"))) static size_t bn_row_avx512(const uint32_t *a32, const uint64_t *a64,
                                                                       const int64_t *xt, int64_t w_const,
                                                                       uint8_t *out, size_t n, const emu_bn_channel *V,
                                                                       okpu_round_mode mode)
{
    const __m512i wc = _mm512_set1_epi64(w_const);
    const __m512d vmul = _mm512_set1_pd(V->vmul);
    const double *f = mode == OKPU_ROUND_SDK_CARRY ? V->ymsc1 : V->ymsc;
    const __m512d vadd = _mm512_set1_pd(V->vadd);
    const int64_t m = V->mul < 0 ? -V->mul : V->mul, wabs = w_const < 0 ? -w_const : w_const;
    const int64_t aabs = V->add < 0 ? -V->add : V->add, lim = ((int64_t)1 << 53) - 1;
    /* The 8-bit accumulators alone (nncase's layers: no x-offset plane): y = floor(acc * vmul + k) with
     * k = (w_const * norm_mul + norm_add * 2^norm_shift) / 2^norm_shift, one fused multiply-add from the uint32
     * converted straight to double. Exact: the product is exact inside the FMA, k is a double when its numerator is
     * below 2^53, and the exact sum, (alu * norm_mul + norm_add * 2^norm_shift) / 2^norm_shift, is one too
     * (bn_vec_init bounds |alu * norm_mul| below 2^52; |norm_add| < 2^31, norm_shift <= 15), so the FMA's one rounding
     * changes nothing and floor(t + norm_add) = floor(t) + norm_add. */
    const int fused = a32 && !xt && V->shift <= 15u && aabs < ((int64_t)1 << 31) &&
                      (m == 0 || wabs <= lim / m) && wabs * m <= lim - (aabs << V->shift);
    const double k_num = fused ? (double)(w_const * V->mul + V->add * ((int64_t)1 << V->shift)) : 0.0;
    const __m512d k = _mm512_set1_pd(k_num * pow2_neg(V->shift));
    __m256i q[2];
    size_t x = 0;
    int h;

    for (; fused && x + 16 <= n; x += 16) {
        for (h = 0; h < 2; h++) {
            const __m256i a8 = _mm256_loadu_si256((const __m256i *)(const void *)(a32 + x + 8 * (size_t)h));
            const __m512d acc = _mm512_cvtepu32_pd(a8);
            q[h] = bn8_avx512(
                _mm512_roundscale_pd(_mm512_fmadd_pd(acc, vmul, k), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), V, f,
                mode);
        }
        _mm_storeu_si128((__m128i *)(void *)(out + x),
                         _mm512_cvtepi32_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(q[0]), q[1], 1)));
    }
    for (; x + 16 <= n; x += 16) {
        for (h = 0; h < 2; h++) {
            const __m512i acc = okpu_emu_acc8_avx512(a32, a64, xt, x + 8 * (size_t)h);
            const __m512d alu = _mm512_cvtepi64_pd(_mm512_add_epi64(acc, wc));
            const __m512d y = _mm512_add_pd(
                _mm512_roundscale_pd(_mm512_mul_pd(alu, vmul), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), vadd);
            q[h] = bn8_avx512(y, V, f, mode);
        }
        _mm_storeu_si128((__m128i *)(void *)(out + x),
                         _mm512_cvtepi32_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(q[0]), q[1], 1)));
    }
    return x;
}
#endif

#ifdef EMU_AVX2
/* lut_segment eight entries at a time with AVX-512 (F and DQ): act_fast's int64 arithmetic on eight lanes. Within
 * one segment d = (y - x_start) * y_mul grows by y_mul an entry, so the lanes start one y_mul apart and step eight;
 * every y is one act_fast bounds (|d| < 2^61), so the biased logical shifts floor exactly as floor_shift does.
 * Returns how many it did (a multiple of 8). */
__attribute__((target("avx512f,avx512dq"))) static __m512i floor_shift8(__m512i v, __m128i s)
{
    const __m512i bias = _mm512_set1_epi64((int64_t)FLOOR_BIAS);
    return _mm512_sub_epi64(_mm512_srl_epi64(_mm512_add_epi64(v, bias), s), _mm512_srl_epi64(bias, s));
}

__attribute__((target("avx512f,avx512dq"))) static size_t lut_segment_avx512(const emu_act_fast *A, int i, int64_t y,
                                                                            size_t n, okpu_round_mode mode, uint8_t *t)
{
    const int64_t ym = A->y_mul[i];
    const __m128i s = _mm_cvtsi32_si128((int)A->shift[i]), s1 = _mm_cvtsi32_si128((int)A->shift_m1[i]);
    const __m128i one_bit = _mm_cvtsi32_si128(1);
    const __m512i step = _mm512_set1_epi64(8 * ym), bias = _mm512_set1_epi64(A->bias[i]);
    const __m512i top = _mm512_set1_epi64(255), zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);
    __m512i d = _mm512_add_epi64(_mm512_set1_epi64((y - A->x_start[i]) * ym),
                                 _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(ym)));
    size_t j = 0;

    for (; j + 8 <= n; j += 8, d = _mm512_add_epi64(d, step)) {
        __m512i r, v;
        if (mode == OKPU_ROUND_HALF_UP) {
            r = floor_shift8(_mm512_add_epi64(d, _mm512_set1_epi64(A->half[i])), s);
        } else if (mode == OKPU_ROUND_SDK_CARRY) {
            if (!A->round_en[i]) {
                r = d;
            } else {
                /* q = floor(t / 2), plus 1 (t >= 0) or -1 (t < 0) when t is odd */
                const __m512i tt = floor_shift8(d, s1), q = floor_shift8(tt, one_bit);
                const __mmask8 odd = _mm512_test_epi64_mask(tt, one);
                const __mmask8 neg = _mm512_cmplt_epi64_mask(tt, zero);
                r = _mm512_mask_add_epi64(q, odd, q, _mm512_mask_blend_epi64(neg, one, _mm512_set1_epi64(-1)));
            }
        } else {
            const __m512i odd = _mm512_srl_epi64(_mm512_and_si512(d, _mm512_set1_epi64((int64_t)A->odd_bit[i])), s);
            r = floor_shift8(_mm512_add_epi64(_mm512_add_epi64(d, _mm512_set1_epi64(A->half_m1[i])), odd), s);
        }
        /* r >= 255: 255; r <= -255: 0; else r + bias clamped to 0..255 */
        v = _mm512_min_epi64(_mm512_max_epi64(_mm512_add_epi64(r, bias), zero), top);
        v = _mm512_mask_mov_epi64(v, _mm512_cmpge_epi64_mask(r, top), top);
        v = _mm512_mask_mov_epi64(v, _mm512_cmple_epi64_mask(r, _mm512_set1_epi64(-255)), zero);
        _mm_storel_epi64((__m128i *)(void *)(t + j), _mm512_cvtepi64_epi8(v));
    }
    return j;
}
#endif

#ifdef EMU_AVX2
/* The table path four values at a time for a channel whose alu and norm_mul fit int32 (vpmuldq's signed 32 x 32 -> 64
 * product): the index floor(alu * norm_mul / 2^norm_shift) + norm_add - lut_lo by the biased logical shift, then four
 * loads. Returns how many it did (a multiple of 4). */
__attribute__((target("avx2"))) static size_t lut_row_avx2(const uint32_t *a32, const uint64_t *a64, const int64_t *xt,
                                                          int64_t w_const, uint8_t *out, size_t n,
                                                          const emu_bn_channel *c)
{
    const __m256i wc = _mm256_set1_epi64x(w_const), mul = _mm256_set1_epi64x(c->mul),
                  bias = _mm256_set1_epi64x((int64_t)FLOOR_BIAS);
    const __m256i k = _mm256_set1_epi64x((int64_t)(FLOOR_BIAS >> c->shift) - (c->add - c->lut_lo));
    const __m128i shr = _mm_cvtsi32_si128((int)c->shift);
    const uint8_t *t = c->lut;
    int64_t idx[4];
    size_t x = 0;

    for (; x + 4 <= n; x += 4) {
        const __m256i acc = a32 ? _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(const void *)(a32 + x)))
                                : _mm256_loadu_si256((const __m256i *)(const void *)(a64 + x));
        const __m256i alu =
            _mm256_add_epi64(xt ? _mm256_add_epi64(acc, _mm256_loadu_si256((const __m256i *)(const void *)(xt + x))) : acc, wc);
        const __m256i i = _mm256_sub_epi64(_mm256_srl_epi64(_mm256_add_epi64(_mm256_mul_epi32(alu, mul), bias), shr), k);
        _mm256_storeu_si256((__m256i *)(void *)idx, i);
        out[x] = t[idx[0]];
        out[x + 1] = t[idx[1]];
        out[x + 2] = t[idx[2]];
        out[x + 3] = t[idx[3]];
    }
    return x;
}
#endif

#ifdef EMU_AVX2
/* lut_row_avx2 sixteen values a step with AVX-512 F: the same indices, eight to a register, narrowed to int32 (they
 * are below EMU_LUT_MAX) and looked up by one gather of sixteen four-byte words whose low bytes are the entries (the
 * table has EMU_LUT_SLACK bytes after its last entry for the other three). Returns how many it did (a multiple of
 * 16). */
__attribute__((target("avx512f"))) static size_t lut_row_avx512(const uint32_t *a32, const uint64_t *a64,
                                                               const int64_t *xt, int64_t w_const, uint8_t *out,
                                                               size_t n, const emu_bn_channel *c)
{
    const __m512i wc = _mm512_set1_epi64(w_const), mul = _mm512_set1_epi64(c->mul),
                  bias = _mm512_set1_epi64((int64_t)FLOOR_BIAS);
    const __m512i k = _mm512_set1_epi64((int64_t)(FLOOR_BIAS >> c->shift) - (c->add - c->lut_lo));
    const __m128i shr = _mm_cvtsi32_si128((int)c->shift);
    __m256i idx[2];
    size_t x = 0;
    int h;

    for (; x + 16 <= n; x += 16) {
        for (h = 0; h < 2; h++) {
            const __m512i alu = _mm512_add_epi64(okpu_emu_acc8_avx512(a32, a64, xt, x + 8 * (size_t)h), wc);
            idx[h] = _mm512_cvtepi64_epi32(
                _mm512_sub_epi64(_mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epi32(alu, mul), bias), shr), k));
        }
        _mm_storeu_si128((__m128i *)(void *)(out + x),
                         _mm512_cvtepi32_epi8(_mm512_i32gather_epi32(
                             _mm512_inserti64x4(_mm512_castsi256_si512(idx[0]), idx[1], 1), (const void *)c->lut, 1)));
    }
    return x;
}
#endif

void okpu_emu_bn_channel_init(const emu_layer *L, const emu_act_fast *A, const okpu_kpu_bn *bn, int has_range,
                              int64_t lo, int64_t hi, emu_bn_channel *c)
{
    /* the fields each path reads are set by the init that enables it (not a memset of the ~1 KB of tables: a
     * tenth of the setup's time) */
    c->bn = bn;
    c->usable = 0;
    c->vec = 0;
    c->lut = NULL;
    /* nncase 1.x's rounding (OKPU_ROUND_NNCASE1) has no fast form: the exact okpu_emu_bn_act runs */
    if (A->usable && has_range && L->round != OKPU_ROUND_NNCASE1)
        bn_fast_init(bn, A, lo, hi, c);
#ifdef EMU_SSE41
    if (L->sse41)
        bn_vec_init(A, c, L->avx2 ? 16 : 4); /* bn_row_sse41 then only takes a row's last values */
#else
    (void)L;
#endif
}

#define XT(x) (xt ? xt[x] : 0) /* xt NULL: the layer's x-offset terms are folded into its weights */

void okpu_emu_bn_act_row(const emu_layer *L, const emu_act_fast *A, const emu_bn_channel *c, const uint32_t *a32,
                         const uint64_t *a64, const int64_t *xt, int64_t w_const, uint8_t *out, size_t first,
                         size_t end, size_t step)
{
    size_t x = first;

    if (!c->usable) {
        for (; x < end; x += step)
            out[x] = okpu_emu_bn_act((a32 ? (int64_t)a32[x] : (int64_t)a64[x]) + XT(x) + w_const, c->bn, &L->act,
                                     L->act_sorted, L->round);
        return;
    }
#ifdef EMU_SSE41
    if (step > 1 && (c->lut || c->vec) && L->sse41) {
        /* A strided pool reads every step-th pixel: gather those into a run for the vector paths, same values */
        enum { RUN = 128 };
        uint64_t acc[RUN];
        int64_t xts[RUN];
        uint8_t res[RUN];
        while (x < end) {
            const size_t start = x;
            size_t n = 0, i;
            for (; x < end && n < RUN; x += step, n++) {
                acc[n] = a32 ? a32[x] : a64[x];
                xts[n] = XT(x);
            }
            okpu_emu_bn_act_row(L, A, c, NULL, acc, xts, w_const, res, 0, n, 1);
            for (i = 0; i < n; i++)
                out[start + i * step] = res[i];
        }
        return;
    }
#endif
    if (c->lut) {
        const uint8_t *t = c->lut;
        const int64_t off = c->add - c->lut_lo; /* y - lut_lo is in [0, lut_n) for every pixel of the range */
#ifdef EMU_AVX2
        /* (the vector index arithmetic multiplies alu and norm_mul as int32) */
        const int narrow = step == 1 && c->alu_abs <= INT32_MAX && c->mul >= INT32_MIN && c->mul <= INT32_MAX;
        if (L->avx512 && narrow)
            x += lut_row_avx512(a32 ? a32 + x : NULL, a32 ? NULL : a64 + x, xt ? xt + x : NULL, w_const, out + x,
                                end - x, c);
        if (L->avx2 && narrow)
            x += lut_row_avx2(a32 ? a32 + x : NULL, a32 ? NULL : a64 + x, xt ? xt + x : NULL, w_const, out + x, end - x, c);
#endif
        if (a32)
            for (; x < end; x += step)
                out[x] = t[floor_shift(((int64_t)a32[x] + XT(x) + w_const) * c->mul, c->shift) + off];
        else
            for (; x < end; x += step)
                out[x] = t[floor_shift(((int64_t)a64[x] + XT(x) + w_const) * c->mul, c->shift) + off];
        return;
    }
#ifdef EMU_AVX2
    if (c->vec && step == 1 && L->avx512)
        x += bn_row_avx512(a32 ? a32 + x : NULL, a32 ? NULL : a64 + x, xt ? xt + x : NULL, w_const, out + x, end - x, c, L->round);
    if (c->vec && step == 1 && L->avx2)
        x += bn_row_avx2(a32 ? a32 + x : NULL, a32 ? NULL : a64 + x, xt ? xt + x : NULL, w_const, out + x, end - x, c, L->round);
#endif
#ifdef EMU_SSE41
    if (c->vec && step == 1)
        x += bn_row_sse41(a32 ? a32 + x : NULL, a32 ? NULL : a64 + x, xt ? xt + x : NULL, w_const, out + x, end - x, c, L->round);
#endif
    /* the mode is a constant in each loop, so the compiler drops the other modes' code from it */
#define BN_LOOP(ACC, MODE)                                                                                        \
    for (; x < end; x += step)                                                                                    \
        out[x] = bn_act_fast((int64_t)(ACC)[x] + XT(x) + w_const, c, A, MODE)
    if (a32) {
        if (L->round == OKPU_ROUND_HALF_UP)
            BN_LOOP(a32, OKPU_ROUND_HALF_UP);
        else if (L->round == OKPU_ROUND_SDK_CARRY)
            BN_LOOP(a32, OKPU_ROUND_SDK_CARRY);
        else
            BN_LOOP(a32, OKPU_ROUND_HALF_EVEN);
    } else {
        if (L->round == OKPU_ROUND_HALF_UP)
            BN_LOOP(a64, OKPU_ROUND_HALF_UP);
        else if (L->round == OKPU_ROUND_SDK_CARRY)
            BN_LOOP(a64, OKPU_ROUND_SDK_CARRY);
        else
            BN_LOOP(a64, OKPU_ROUND_HALF_EVEN);
    }
#undef BN_LOOP
}
#undef XT

/* The bit-exact software KPU (docs/kpu-reference.md section 4). run_layer reads the input map from the emulated
 * KPU RAM, computes conv -> batch norm -> activation -> pool and writes the result back to KPU RAM (and densely to main
 * memory when asked), using nothing but the job.
 *
 * Two convolution paths compute the same bytes:
 * - conv_reference: docs/kpu-reference.md section 4.1 as written, one output value at a time (the oracle the tests
 *   compare against);
 * - conv_fast: the same sums reorganised into integer loops over whole rows. The x-offset term depends only on the
 *   pixel, so it is one plane per layer; the w-offset term depends only on the output channel, so it is one number;
 *   the products sum in uint32 in 8-bit mode (1024*9*255*255 < 2^32) and in uint64 in 16-bit mode.
 * okpu_kpu_emu_create picks conv_fast unless the environment has OKPU_EMU_REFERENCE=1. */
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/arith.h"
#include "../core/checked.h"
#include "../core/error.h"
#include "kpu_backend.h"
#include "kpu_layout.h"

/* The w-offset terms of one prepared layer, per output channel (see "Working memory"). The key is everything the
 * terms depend on. */
typedef struct w_terms {
    const uint8_t *weights;
    int eight_bit;
    uint32_t oc, g_ic, kk;
    int32_t arg_w;
    unsigned shr_w;
    int64_t arg_add;
    int64_t *term; /* oc entries */
} w_terms;

typedef struct okpu_kpu_emu {
    okpu_kpu_backend base; /* first, so the backend pointer is the emulator pointer */
    okpu_options opts;
    okpu_allocator allocator; /* copy of *opts->allocator; opts.allocator points here or is NULL */
    int reference;
    int sse41;
    int owns_ram;     /* 0 when the RAM belongs to a board model (okpu_kpu_emu_create_on_ram) */
    uint8_t *scratch; /* working memory for the largest layer prepared (see "Working memory"), freed by destroy */
    size_t scratch_size;
    w_terms *wt;      /* the prepared layers' w-offset terms (fast path only) */
    size_t wt_count, wt_cap, wt_bytes;
} okpu_kpu_emu;

/* Batch norm then activation of one accumulator (docs/kpu-reference.md sections 4.2, 4.3). A real layer's alu stays far
 * below 2^40 and its BN product below 2^63; the wrapping ops only pin down the result of values no real layer produces (alu near
 * 2^53 is reachable only with 16-bit weights and near-maximal arg fields). */
static uint8_t bn_act(int64_t alu, const okpu_kpu_bn *bn, const okpu_kpu_act *act, int act_sorted, okpu_round_mode mode)
{
    int64_t y = okpu_wrap_add(okpu_asr64(okpu_wrap_mul(alu, bn->norm_mul), bn->norm_shift), bn->norm_add);
    int64_t r;
    int i;

    if (act_sorted) {
        /* x_start non-decreasing: the segments with y > x_start form a prefix, so search for its end */
        i = 0;
        i += y > act->x_start[i + 8] ? 8 : 0;
        i += y > act->x_start[i + 4] ? 4 : 0;
        i += y > act->x_start[i + 2] ? 2 : 0;
        i += y > act->x_start[i + 1] ? 1 : 0;
    } else {
        i = 15;
        while (i > 0 && !(y > act->x_start[i]))
            i--;
    }
    r = okpu_round_shift(okpu_wrap_mul(okpu_wrap_add(y, -act->x_start[i]), act->y_mul[i]), act->shift[i], mode);
    if (r >= 255)
        return 255;
    if (r <= -255)
        return 0;
    return okpu_clamp_u8(r + act->bias[i]);
}

/* ---- Batch norm + activation without the wrapping helpers ----
 * bn_act above is exact for every alu. An output channel's accumulators are all computed before its batch norm, so
 * the range of its alu values is known: when that range keeps every intermediate below 2^61 in magnitude, plain int64
 * arithmetic computes the same value with no wrap, the floor shifts become one add and one logical shift, and the
 * segment search covers only the segments that range reaches (often one or two). A channel whose range does not
 * allow that (or an unsorted activation table, or a shift above 62) takes bn_act. */

#define FAST_LIMIT ((int64_t)1 << 61)
#define FLOOR_BIAS ((uint64_t)1 << 62)

/* floor(v / 2^s) for |v| < 2^62 and s <= 62: v + 2^62 is in [0, 2^63) and 2^62 is a multiple of 2^s. */
static inline int64_t floor_shift(int64_t v, unsigned s)
{
    return (int64_t)(((uint64_t)v + FLOOR_BIAS) >> s) - (int64_t)(FLOOR_BIAS >> s);
}

typedef struct act_fast {
    int usable;          /* x_start sorted and every shift <= 62 */
    int64_t x_start[32]; /* 16..31: INT64_MAX, so a search from any segment stops inside the table */
    int64_t y_mul[16];
    int64_t half[16];    /* 2^(s-1), 0 for s = 0 */
    int64_t half_m1[16]; /* 2^(s-1) - 1, 0 for s = 0 */
    uint64_t odd_bit[16]; /* 2^s: the bit of d that is the lowest of floor(d / 2^s); 0 for s = 0 (no rounding) */
    int64_t round_en[16]; /* 1 when s >= 1 (a shift of 0 rounds nothing) */
    unsigned shift[16];
    unsigned shift_m1[16]; /* s - 1 (SDK carry), 0 for s = 0 */
    int64_t bias[16];
} act_fast;

typedef struct bn_fast {
    int usable; /* this channel's alu range keeps the arithmetic below FAST_LIMIT */
    int64_t mul, add;
    unsigned shift;
    int first;  /* segment of the smallest y the channel reaches */
    int steps;  /* binary search steps over the segments it can reach (0: one segment) */
    int last;   /* segment of the largest */
    int64_t ylo, yhi, alu_abs; /* range of y, largest |alu| */
} bn_fast;

static void act_fast_init(const okpu_kpu_act *act, int act_sorted, act_fast *f)
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
    }
}

static int64_t abs_diff_max(int64_t lo, int64_t hi, int64_t v)
{
    int64_t a = lo > v ? lo - v : v - lo, b = hi > v ? hi - v : v - hi;
    return a > b ? a : b;
}

/* Decide whether the channel with BN `bn` and alu in [lo, hi] can use bn_act_fast. */
static void bn_fast_init(const okpu_kpu_bn *bn, const act_fast *af, int64_t lo, int64_t hi, bn_fast *f)
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
    for (i = 0; i < 16; i++) {
        const int64_t d = abs_diff_max(ylo, yhi, af->x_start[i]); /* < 2^60 + 2^31 + 2^35 */
        const int64_t m = af->y_mul[i] < 0 ? -af->y_mul[i] : af->y_mul[i];
        if (m != 0 && d > (FAST_LIMIT - 1) / m)
            return;
    }
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

/* bn_act for a channel bn_fast_init accepted: the same byte. */
static inline uint8_t bn_act_fast(int64_t alu, const bn_fast *b, const act_fast *A, okpu_round_mode mode)
{
    const int64_t y = floor_shift(alu * b->mul, b->shift) + b->add;
    int64_t d, r, q;
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
    d = (y - A->x_start[i]) * A->y_mul[i];
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

/* ---- Batch norm + activation, two values at a time (x86-64 with SSE4.1, checked at run time) ----
 * The same integers in doubles: every value below is an integer (or an integer times a power of two) under 2^53 in
 * magnitude, where double arithmetic is exact, so floor / nearest-even / +0.5 give bit for bit what the int64 code
 * gives. bn_vec_init accepts a channel only when its alu range bounds every intermediate that way and it reaches at
 * most four segments (chosen by compare and blend instead of a search). */
#if defined(__x86_64__) && !defined(OKPU_EMU_PORTABLE) && (defined(__GNUC__) || defined(__clang__))
#define EMU_SSE41 1
#include <smmintrin.h>

typedef struct bn_vec {
    int usable, nseg;
    double mul, add;                           /* norm_mul / 2^norm_shift, norm_add */
    double xs[4], ym[4], sc[4], sc1[4], bias[4]; /* per reachable segment: x_start, y_mul, 2^-s, 2^-(s-1) (2 for s=0) */
} bn_vec;

#define EXACT_LIMIT ((int64_t)1 << 52)

static double pow2_neg(unsigned s) /* 2^-s, exact for s <= 62 */
{
    return 1.0 / (double)((uint64_t)1 << s);
}

static void bn_vec_init(const bn_fast *bf, const act_fast *A, bn_vec *v)
{
    int j;

    v->usable = 0;
    if (!bf->usable || bf->last - bf->first >= 4)
        return;
    if (bf->mul != 0 && bf->alu_abs > (EXACT_LIMIT - 1) / (bf->mul < 0 ? -bf->mul : bf->mul))
        return; /* |alu * norm_mul| < 2^52 */
    for (j = 0; j <= bf->last - bf->first; j++) {
        const int i = bf->first + j;
        const int64_t d = abs_diff_max(bf->ylo, bf->yhi, A->x_start[i]);
        const int64_t m = A->y_mul[i] < 0 ? -A->y_mul[i] : A->y_mul[i];
        if (A->shift[i] > 52u || d >= EXACT_LIMIT || (m != 0 && d > (EXACT_LIMIT - 1) / m))
            return; /* |d| < 2^52, and |d| + 2^(s-1) < 2^53 for half up */
        v->xs[j] = (double)A->x_start[i];
        v->ym[j] = (double)A->y_mul[i];
        v->sc[j] = pow2_neg(A->shift[i]);
        v->sc1[j] = A->shift[i] ? pow2_neg(A->shift[i] - 1u) : 2.0;
        v->bias[j] = (double)A->bias[i];
    }
    v->nseg = bf->last - bf->first + 1;
    v->mul = (double)bf->mul * pow2_neg(bf->shift); /* |norm_mul| < 2^24: exact */
    v->add = (double)bf->add;
    v->usable = 1;
}

/* out[x] for x in [0, n) from acc (uint32 or uint64 view) + xt + w_const; returns how many it did (an even count). */
__attribute__((target("sse4.1"))) static size_t bn_row_sse41(const uint32_t *a32, const uint64_t *a64,
                                                           const int64_t *xt, int64_t w_const, uint8_t *out, size_t n,
                                                           const bn_vec *V, okpu_round_mode mode)
{
    const __m128i wc = _mm_set1_epi64x(w_const), magic_i = _mm_set1_epi64x(0x4338000000000000LL);
    const __m128d magic = _mm_set1_pd(6755399441055744.0); /* 1.5 * 2^52 */
    const __m128d mul = _mm_set1_pd(V->mul), add = _mm_set1_pd(V->add), half = _mm_set1_pd(0.5);
    const __m128d zero = _mm_setzero_pd(), top = _mm_set1_pd(255.0), one = _mm_set1_pd(1.0);
    size_t x = 0;
    int j;

    for (; x + 2 <= n; x += 2) {
        __m128i acc = a32 ? _mm_unpacklo_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(a32 + x)),
                                               _mm_setzero_si128())
                          : _mm_loadu_si128((const __m128i *)(const void *)(a64 + x));
        const __m128i alu_i = _mm_add_epi64(_mm_add_epi64(acc, _mm_loadu_si128((const __m128i *)(const void *)(xt + x))), wc);
        /* int64 -> double for |v| < 2^51: v + 1.5 * 2^52 in the mantissa */
        const __m128d alu = _mm_sub_pd(_mm_castsi128_pd(_mm_add_epi64(alu_i, magic_i)), magic);
        const __m128d y = _mm_add_pd(_mm_floor_pd(_mm_mul_pd(alu, mul)), add);
        __m128d xs = _mm_set1_pd(V->xs[0]), ym = _mm_set1_pd(V->ym[0]), sc = _mm_set1_pd(V->sc[0]),
                sc1 = _mm_set1_pd(V->sc1[0]), bias = _mm_set1_pd(V->bias[0]), d, r, v;
        __m128i q32;
        for (j = 1; j < V->nseg; j++) { /* sorted: the last segment whose x_start y passes wins */
            const __m128d m = _mm_cmpgt_pd(y, _mm_set1_pd(V->xs[j]));
            xs = _mm_blendv_pd(xs, _mm_set1_pd(V->xs[j]), m);
            ym = _mm_blendv_pd(ym, _mm_set1_pd(V->ym[j]), m);
            sc = _mm_blendv_pd(sc, _mm_set1_pd(V->sc[j]), m);
            sc1 = _mm_blendv_pd(sc1, _mm_set1_pd(V->sc1[j]), m);
            bias = _mm_blendv_pd(bias, _mm_set1_pd(V->bias[j]), m);
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

/* ---- Pooling (docs/kpu-reference.md section 4.4) ---- */

enum pool_kind { POOL_BYPASS, POOL_MAX, POOL_MEAN, POOL_PICK00, POOL_PICK01 };

static void pool_plane(const uint8_t *in, uint32_t w, uint32_t h, unsigned pool_type,
                       okpu_mean_border_mode border, uint8_t *out)
{
    static const unsigned char kinds[] = {
#define OKPU_KPU_POOL(type, side, stride, kind, name) POOL_##kind,
#include "kpu_pool_types.def"
#undef OKPU_KPU_POOL
    };
    const uint32_t f = okpu_kpu_pool_window(pool_type), s = okpu_kpu_pool_stride(pool_type);
    const uint32_t ow = w / s, oh = h / s;
    const uint32_t pick_x = kinds[pool_type] == POOL_PICK01 ? 1u : 0u; /* the column a pick takes */
    uint32_t ox, oy, kx, ky;

    if (kinds[pool_type] == POOL_BYPASS) {
        memcpy(out, in, (size_t)w * h);
        return;
    }
    for (oy = 0; oy < oh; oy++) {
        for (ox = 0; ox < ow; ox++) {
            const uint32_t y0 = oy * s, x0 = ox * s;
            uint32_t v = 0, taps = 0;
            switch (kinds[pool_type]) {
            case POOL_PICK00:
            case POOL_PICK01:
                v = x0 + pick_x < w ? in[(size_t)y0 * w + x0 + pick_x] : 0u;
                break;
            case POOL_MAX: /* taps past the edge read 0, which never wins */
                for (ky = 0; ky < f; ky++)
                    for (kx = 0; kx < f; kx++)
                        if (y0 + ky < h && x0 + kx < w && in[(size_t)(y0 + ky) * w + x0 + kx] > v)
                            v = in[(size_t)(y0 + ky) * w + x0 + kx];
                break;
            default: /* POOL_MEAN */
                for (ky = 0; ky < f; ky++) {
                    for (kx = 0; kx < f; kx++) {
                        uint32_t y = y0 + ky, x = x0 + kx;
                        if (border == OKPU_MEAN_BORDER_IN_RANGE) {
                            if (y >= h || x >= w)
                                continue;
                        } else {
                            y = y < h ? y : h - 1;
                            x = x < w ? x : w - 1;
                        }
                        v += in[(size_t)y * w + x];
                        taps++;
                    }
                }
                v = border == OKPU_MEAN_BORDER_IN_RANGE ? v / taps : v / (f * f);
                break;
            }
            out[(size_t)oy * ow + ox] = (uint8_t)v;
        }
    }
}

/* ---- Layer state shared by both conv paths ---- */

typedef struct emu_layer {
    const okpu_kpu_args *a;
    const uint8_t *weights;
    const uint8_t *bn_raw;
    int eight_bit;
    okpu_kpu_act act;
    int act_sorted; /* x_start non-decreasing (every real table) */
    uint32_t w, h, k, kk, ic, oc;
    uint32_t g_ic;       /* input channels each output channel reads: 1 when depthwise */
    uint32_t pad;        /* border of the padded input planes: 1 for 3x3, 0 for 1x1 */
    uint32_t pitch;      /* bytes per row of a padded input plane */
    size_t plane;        /* bytes per padded input plane */
    const uint8_t *in;   /* ic padded input planes (pad taps hold pad_value) */
    uint8_t *activated;  /* one output channel after the activation, w x h */
    okpu_round_mode round;
    okpu_conv_offset_mode offset_mode;
    int sse41; /* x86-64 with SSE4.1 (checked at run time) */
} emu_layer;

static uint32_t weight_at(const emu_layer *L, size_t index)
{
    if (L->eight_bit)
        return L->weights[index];
    return (uint32_t)L->weights[2 * index] | ((uint32_t)L->weights[2 * index + 1] << 8);
}

/* First weight of output channel oc's taps on its i-th input channel ([oc][ic][kh][kw], depthwise [c][kh][kw]). */
static size_t weight_index(const emu_layer *L, uint32_t oc, uint32_t i)
{
    return ((size_t)oc * L->g_ic + i) * L->kk;
}

/* Input channel number that output channel oc reads as its i-th. */
static uint32_t input_channel(const emu_layer *L, uint32_t oc, uint32_t i)
{
    return L->a->depthwise ? oc : i;
}

/* Section 4.1 as written: one output value at a time. */
static void conv_reference(const emu_layer *L, uint32_t oc, const okpu_kpu_bn *bn)
{
    const okpu_kpu_args *a = L->a;
    uint32_t x, y, i, kx, ky;

    for (y = 0; y < L->h; y++) {
        for (x = 0; x < L->w; x++) {
            int64_t alu = 0, all_xw = 0, all_x = 0, all_w = 0;
            for (i = 0; i < L->g_ic; i++) {
                const uint8_t *plane = L->in + (size_t)input_channel(L, oc, i) * L->plane;
                const size_t w0 = weight_index(L, oc, i);
                int64_t sum_xw = 0, sum_x = 0, sum_w = 0;
                for (ky = 0; ky < L->k; ky++) {
                    for (kx = 0; kx < L->k; kx++) {
                        /* (y + ky - pad, x + kx - pad) in the map is (y + ky, x + kx) in the padded plane */
                        int64_t xv = plane[(size_t)(y + ky) * L->pitch + x + kx];
                        int64_t wv = weight_at(L, w0 + ky * L->k + kx);
                        sum_xw += xv * wv;
                        sum_x += xv;
                        sum_w += wv;
                    }
                }
                if (L->offset_mode == OKPU_CONV_OFFSET_PER_CHANNEL) {
                    alu += sum_xw + okpu_asr64(a->arg_x * sum_x, a->shr_x) + okpu_asr64(a->arg_w * sum_w, a->shr_w) +
                           a->arg_add;
                } else {
                    all_xw += sum_xw;
                    all_x += sum_x;
                    all_w += sum_w;
                }
            }
            if (L->offset_mode == OKPU_CONV_OFFSET_ONCE)
                alu = all_xw + okpu_asr64(a->arg_x * all_x, a->shr_x) + okpu_asr64(a->arg_w * all_w, a->shr_w) +
                      a->arg_add * (int64_t)L->g_ic;
            L->activated[(size_t)y * L->w + x] = bn_act(alu, bn, &L->act, 0, L->round);
        }
    }
}

/* Scratch of the fast path. */
typedef struct fast_bufs {
    int64_t *x_term;     /* w x h: the x-offset term of every pixel, summed over the channels it covers */
    int64_t *x_table;    /* floor(arg_x * s / 2^shr_x) for every possible per-channel tap sum s */
    uint32_t *box;       /* w x h: one channel's tap sums */
    uint32_t *col;       /* w + 2: column sums for the 3x3 box */
    uint64_t *acc;       /* w x h accumulators (used as uint32 in 8-bit mode) */
    const int64_t *w_const; /* oc: the w-offset terms and arg_add of each output channel */
    act_fast act;        /* the layer's activation table for bn_act_fast */
} fast_bufs;

/* Tap sums sum(x) of channel c at every pixel (pad taps included). */
static void channel_box_sums(const emu_layer *L, uint32_t c, const fast_bufs *B)
{
    const uint8_t *plane = L->in + (size_t)c * L->plane;
    uint32_t x, y;

    if (L->k == 1) {
        for (x = 0; x < L->w * L->h; x++)
            B->box[x] = plane[x];
        return;
    }
    for (y = 0; y < L->h; y++) {
        const uint8_t *r0 = plane + (size_t)y * L->pitch, *r1 = r0 + L->pitch, *r2 = r1 + L->pitch;
        uint32_t *out = B->box + (size_t)y * L->w;
        for (x = 0; x < L->pitch; x++)
            B->col[x] = (uint32_t)r0[x] + r1[x] + r2[x];
        for (x = 0; x < L->w; x++)
            out[x] = B->col[x] + B->col[x + 1] + B->col[x + 2];
    }
}

/* The x-offset plane of a non-depthwise layer: per input channel floored terms, or one floor of the total. */
static void x_term_all_channels(const emu_layer *L, const fast_bufs *B)
{
    const size_t n = (size_t)L->w * L->h;
    size_t p;
    uint32_t c;

    memset(B->x_term, 0, n * sizeof *B->x_term);
    if (L->a->arg_x == 0)
        return;
    for (c = 0; c < L->ic; c++) {
        channel_box_sums(L, c, B);
        if (L->offset_mode == OKPU_CONV_OFFSET_PER_CHANNEL)
            for (p = 0; p < n; p++)
                B->x_term[p] += B->x_table[B->box[p]];
        else
            for (p = 0; p < n; p++)
                B->x_term[p] += B->box[p];
    }
    if (L->offset_mode == OKPU_CONV_OFFSET_ONCE)
        for (p = 0; p < n; p++)
            B->x_term[p] = okpu_asr64(L->a->arg_x * B->x_term[p], L->a->shr_x);
}

/* Depthwise: one channel, so both offset modes give floor(arg_x * sum(x) / 2^shr_x). */
static void x_term_one_channel(const emu_layer *L, uint32_t c, const fast_bufs *B)
{
    const size_t n = (size_t)L->w * L->h;
    size_t p;

    if (L->a->arg_x == 0) {
        memset(B->x_term, 0, n * sizeof *B->x_term);
            return;
    }
    channel_box_sums(L, c, B);
    for (p = 0; p < n; p++)
        B->x_term[p] = B->x_table[B->box[p]];
}

/* The w-offset terms and arg_add of output channel oc: a constant over the whole plane. */
static int64_t w_term(const emu_layer *L, uint32_t oc)
{
    const okpu_kpu_args *a = L->a;
    int64_t total = 0, all_w = 0;
    uint32_t i, t;

    if (a->arg_w == 0) /* every term is floor(0 / 2^shr_w) = 0 */
        return a->arg_add * (int64_t)L->g_ic;
    for (i = 0; i < L->g_ic; i++) {
        const size_t w0 = weight_index(L, oc, i);
        int64_t sum_w = 0;
        if (L->eight_bit)
            for (t = 0; t < L->kk; t++)
                sum_w += L->weights[w0 + t];
        else
            for (t = 0; t < L->kk; t++)
                sum_w += weight_at(L, w0 + t);
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
 * In 8-bit mode every product is at most 255 * 255 and a whole output value at most 1024 * 9 * 65025 < 2^32, so the
 * sums are uint32 throughout. The taps are taken in pairs (u, v) with weights (wu, wv): on x86-64 SSE2's pmaddwd
 * multiplies 16-bit pairs and adds each pair into 32 bits (all operands <= 255, so its signed arithmetic is exact and
 * a 32-bit add is the uint32 add); elsewhere the same sums in plain C. SSE2 is part of every x86-64. (An AVX2 version
 * with 16 pixels per step, chosen at run time, measured slower than this one on the test machine, so there is none.) */

#define MAX_PAIRS 8

typedef struct tap_pairs {
    const uint8_t *u[MAX_PAIRS], *v[MAX_PAIRS];
    uint32_t wu[MAX_PAIRS], wv[MAX_PAIRS];
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

static void acc_pairs(uint32_t *acc, const tap_pairs *P, size_t n)
{
    const __m128i zero = _mm_setzero_si128();
    __m128i w[MAX_PAIRS];
    size_t x = 0;
    int j;

    for (j = 0; j < P->n; j++)
        w[j] = _mm_set1_epi32((int)(P->wu[j] | (P->wv[j] << 16)));
    for (; x + 8 <= n; x += 8) {
        __m128i s0 = _mm_setzero_si128(), s1 = _mm_setzero_si128();
        for (j = 0; j < P->n; j++) {
            const __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(P->u[j] + x)), zero);
            const __m128i b = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(P->v[j] + x)), zero);
            s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_unpacklo_epi16(a, b), w[j]));
            s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_unpackhi_epi16(a, b), w[j]));
        }
        _mm_storeu_si128((__m128i *)(void *)(acc + x),
                         _mm_add_epi32(_mm_loadu_si128((const __m128i *)(const void *)(acc + x)), s0));
        _mm_storeu_si128((__m128i *)(void *)(acc + x + 4),
                         _mm_add_epi32(_mm_loadu_si128((const __m128i *)(const void *)(acc + x + 4)), s1));
    }
    for (; x < n; x++) {
        uint32_t sum = 0;
        for (j = 0; j < P->n; j++)
            sum += P->wu[j] * P->u[j][x] + P->wv[j] * P->v[j][x];
        acc[x] += sum;
    }
}
#else
static void acc_pairs(uint32_t *acc, const tap_pairs *P, size_t n)
{
    size_t x;
    int j;

    for (j = 0; j < P->n; j++) {
        const uint8_t *u = P->u[j], *v = P->v[j];
        const uint32_t wu = P->wu[j], wv = P->wv[j];
        for (x = 0; x < n; x++)
            acc[x] += wu * u[x] + wv * v[x];
    }
}
#endif

static void accumulate_span8(const emu_layer *L, uint32_t oc, uint32_t y0, uint32_t span, const fast_bufs *B)
{
    uint32_t *acc = (uint32_t *)(void *)B->acc + (size_t)y0 * L->w;
    const uint8_t *wt;
    tap_pairs P;
    uint32_t i = 0;

    memset(acc, 0, span * sizeof *acc);
    if (L->k == 3) {
        for (i = 0; i < L->g_ic; i++) {
            const uint8_t *r0 = L->in + (size_t)input_channel(L, oc, i) * L->plane + (size_t)y0 * L->pitch;
            const uint8_t *r1 = r0 + L->pitch, *r2 = r1 + L->pitch;
            wt = L->weights + weight_index(L, oc, i);
            P.n = 0;
            pair_add(&P, r0, wt[0], r0 + 1, wt[1]);
            pair_add(&P, r0 + 2, wt[2], r1, wt[3]);
            pair_add(&P, r1 + 1, wt[4], r1 + 2, wt[5]);
            pair_add(&P, r2, wt[6], r2 + 1, wt[7]);
            pair_add(&P, r2 + 2, wt[8], r2 + 2, 0);
            acc_pairs(acc, &P, span);
        }
        return;
    }
    while (i < L->g_ic) {
        const uint8_t *p0 = L->in + (size_t)input_channel(L, oc, i) * L->plane + (size_t)y0 * L->pitch;
        wt = L->weights + weight_index(L, oc, i);
        P.n = 0;
        for (; i + 2 <= L->g_ic && P.n < MAX_PAIRS; i += 2, p0 += 2 * L->plane, wt += 2)
            pair_add(&P, p0, wt[0], p0 + L->plane, wt[1]);
        if (i + 1 == L->g_ic && P.n < MAX_PAIRS) {
            pair_add(&P, p0, wt[0], p0, 0);
            i++;
        }
        acc_pairs(acc, &P, span);
    }
}

/* Accumulate sum(x*w) over a run of `span` pixels starting at output row y0. A 3x3 conv takes its nine taps in one
 * pass (one accumulator update per pixel per input channel); a 1x1 conv takes four input channels per pass. Nine
 * or four products of at most 255 * 65535 stay below 2^32, so each pass sums in uint32. */
static void accumulate_span(const emu_layer *L, uint32_t oc, uint32_t y0, uint32_t span, const fast_bufs *B)
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
            const uint8_t *r0 = L->in + (size_t)input_channel(L, oc, i) * L->plane + (size_t)y0 * L->pitch;
            const uint8_t *r1 = r0 + L->pitch, *r2 = r1 + L->pitch;
            const size_t w0 = weight_index(L, oc, i);
            uint32_t wt[9];
            for (t = 0; t < 9; t++)
                wt[t] = weight_at(L, w0 + t);
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
        const uint8_t *p0 = L->in + (size_t)input_channel(L, oc, i) * L->plane + (size_t)y0 * L->pitch;
        const uint8_t *p1 = p0 + L->plane, *p2 = p1 + L->plane, *p3 = p2 + L->plane;
        const size_t w0 = weight_index(L, oc, i);
        const uint32_t wa = weight_at(L, w0), wb = weight_at(L, w0 + 1), wc = weight_at(L, w0 + 2),
                       wd = weight_at(L, w0 + 3);
        if (L->eight_bit)
            for (x = 0; x < span; x++)
                acc32[x] += wa * p0[x] + wb * p1[x] + wc * p2[x] + wd * p3[x];
        else
            for (x = 0; x < span; x++)
                acc64[x] += wa * p0[x] + wb * p1[x] + wc * p2[x] + wd * p3[x];
    }
    for (; i < L->g_ic; i++) {
        const uint8_t *p0 = L->in + (size_t)input_channel(L, oc, i) * L->plane + (size_t)y0 * L->pitch;
        const uint32_t wa = weight_at(L, weight_index(L, oc, i));
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
         * two extra accumulators per row (taps straddling the border) are computed and never read. One long run
         * instead of h short ones, each with a tail that does not fill a vector. h * pitch - 2 <= 2 * w * h
         * accumulators fit the uint32 view of the buffer. */
        if (L->eight_bit) {
            R.whole = 1;
            R.acc_row = L->pitch;
        }
    }
    return R;
}

/* Range of alu = sum(x*w) + x_term + w_const over the pixels of R. */
static void alu_range(const emu_layer *L, const fast_bufs *B, const runs *R, int64_t w_const, int64_t *lo,
                      int64_t *hi)
{
    const uint32_t *acc32 = (const uint32_t *)(const void *)B->acc;
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    uint32_t r;
    size_t x;

    for (r = 0; r < R->count; r++) {
        const size_t first = (size_t)r * R->row_step * L->w, acc_first = r * R->acc_row;
        for (x = R->x_first; x < R->span; x += R->x_step) {
            const int64_t v = (L->eight_bit ? (int64_t)acc32[acc_first + x] : (int64_t)B->acc[acc_first + x]) +
                              B->x_term[first + x];
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
    }
    *lo = mn + w_const;
    *hi = mx + w_const;
}

/* Output channel oc: accumulate its runs, then batch norm and activation of each pixel the pool reads. */
static void conv_fast(const emu_layer *L, uint32_t oc, const okpu_kpu_bn *bn, fast_bufs *B)
{
    const runs R = plane_runs(L);
    const uint32_t *acc32 = (const uint32_t *)(const void *)B->acc;
    const int64_t w_const = B->w_const[oc];
    int64_t lo, hi;
    bn_fast bf;
#ifdef EMU_SSE41
    bn_vec bv;
#endif
    uint32_t r;
    size_t x;

    if (L->a->depthwise)
        x_term_one_channel(L, oc, B);
    if (R.whole)
        accumulate_span8(L, oc, 0, (L->h - 1) * L->pitch + L->w, B);
    else
        for (r = 0; r < R.count; r++) {
            if (L->eight_bit)
                accumulate_span8(L, oc, r * R.row_step, R.span, B);
            else
                accumulate_span(L, oc, r * R.row_step, R.span, B);
        }
    memset(&bf, 0, sizeof bf); /* not usable: bn_act for every pixel (always for NNCASE1, the fast paths lack it) */
    if (B->act.usable && L->round != OKPU_ROUND_NNCASE1 && R.count > 0 && R.span > R.x_first) {
        alu_range(L, B, &R, w_const, &lo, &hi);
        bn_fast_init(bn, &B->act, lo, hi, &bf);
    }
#ifdef EMU_SSE41
    bv.usable = 0;
    if (L->sse41)
        bn_vec_init(&bf, &B->act, &bv);
#endif
    for (r = 0; r < R.count; r++) {
        const size_t first = (size_t)r * R.row_step * L->w;
        const uint32_t *a32 = acc32 + r * R.acc_row;
        const uint64_t *a64 = B->acc + r * R.acc_row;
        const int64_t *xt = B->x_term + first;
        uint8_t *out = L->activated + first;
        if (!bf.usable) {
            for (x = R.x_first; x < R.span; x += R.x_step)
                out[x] = bn_act((L->eight_bit ? (int64_t)a32[x] : (int64_t)a64[x]) + xt[x] + w_const, bn, &L->act,
                                L->act_sorted, L->round);
            continue;
        }
        x = R.x_first;
#ifdef EMU_SSE41
        if (bv.usable && R.x_step == 1)
            x += bn_row_sse41(L->eight_bit ? a32 + x : NULL, a64 + x, xt + x, w_const, out + x, R.span - x, &bv,
                              L->round);
#endif
#define BN_LOOP(ACC, MODE)                                                                                        \
    for (; x < R.span; x += R.x_step)                                                                           \
        out[x] = bn_act_fast((int64_t)(ACC)[x] + xt[x] + w_const, &bf, &B->act, MODE)
        if (L->eight_bit) {
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
}

/* ---- Working memory ----
 * One block, sized for the largest layer: prepare() (the backend hook model.c calls at load for every KPU conv)
 * takes it, so a model's forward pass never allocates. run_layer carves the block into the parts below. A caller
 * that runs a layer no prepare covered (the virtual board's register block calls prepare itself; the transitional
 * LEGACY reader steps and a test driving the backend by hand do not) gets the same memory taken on that run:
 * run_layer prepares the job itself, which is the only allocation it can make.
 * Beside the block, prepare computes each layer's w-offset terms (one int64 per output channel: they depend only on
 * the weights and the layer's arguments) once, kept until destroy and counted in scratch_bytes; a layer no prepare
 * covered computes them into the block's PART_W_TERM on each run. */

enum {
    PART_IN,
    PART_ACTIVATED,
    PART_OUT,
    PART_X_TERM,
    PART_X_TABLE,
    PART_BOX,
    PART_COL,
    PART_ACC,
    PART_W_TERM, /* the w-offset terms of a layer no prepare covered */
    PART_COUNT
};

static uint64_t align8(uint64_t n)
{
    return (n + 7u) & ~(uint64_t)7u;
}

/* Bytes of each part for the layer `a` (8-aligned, 0 for the fast path's parts on the reference path) and their sum.
 * okpu_kpu_args_check bounds every factor (the maps fit the 2 MiB KPU RAM, x_table has 9 * 255 + 1 entries); the checked
 * products keep that an explicit limit rather than an assumption. */
static int scratch_parts(const okpu_kpu_emu *e, const okpu_kpu_args *a, int layer, uint64_t part[PART_COUNT], uint64_t *total,
                         okpu_error *err)
{
    const uint64_t k = okpu_kpu_kernel_size(a), pad = k / 2u, w = a->in_width, h = a->in_height;
    uint64_t plane, n;
    int bad = 0, i;

    memset(part, 0, PART_COUNT * sizeof *part);
    bad |= okpu_mul_ovf(w + 2u * pad, h + 2u * pad, OKPU_SIZE_LIMIT, &plane);
    bad |= okpu_mul_ovf(plane, a->in_channels, OKPU_SIZE_LIMIT, &part[PART_IN]);
    bad |= okpu_mul_ovf(w, h, OKPU_SIZE_LIMIT, &n);
    part[PART_ACTIVATED] = n;
    bad |= okpu_mul3(a->out_width, a->out_height, a->out_channels, OKPU_SIZE_LIMIT, &part[PART_OUT]);
    if (!e->reference) {
        bad |= okpu_mul_ovf(n, sizeof(int64_t), OKPU_SIZE_LIMIT, &part[PART_X_TERM]);
        part[PART_X_TABLE] = (k * k * 255u + 1u) * sizeof(int64_t);
        bad |= okpu_mul_ovf(n, sizeof(uint32_t), OKPU_SIZE_LIMIT, &part[PART_BOX]);
        part[PART_COL] = (w + 2u) * sizeof(uint32_t);
        bad |= okpu_mul_ovf(n, sizeof(uint64_t), OKPU_SIZE_LIMIT, &part[PART_ACC]);
        part[PART_W_TERM] = (uint64_t)a->out_channels * sizeof(int64_t);
    }
    *total = 0;
    for (i = 0; i < PART_COUNT && !bad; i++) {
        part[i] = align8(part[i]);
        bad |= okpu_add_ovf(*total, part[i], OKPU_SIZE_LIMIT, total);
    }
    if (bad || *total > (uint64_t)(size_t)-1)
        return okpu_fail(err, OKPU_ERR_PARAM, layer, -1,
                         "layer %d: the KPU emulator's work area for a %lux%lux%lu map does not fit in memory", layer,
                         (unsigned long)w, (unsigned long)h, (unsigned long)a->in_channels);
    return OKPU_OK;
}

/* Grow the block to `bytes` (its contents need not survive: every run rewrites what it reads). */
static int reserve_scratch(okpu_kpu_emu *e, uint64_t bytes, int layer, okpu_error *err)
{
    if (bytes <= e->scratch_size)
        return OKPU_OK;
    okpu_free(e->opts.allocator, e->scratch, e->scratch_size);
    e->scratch_size = 0;
    e->base.scratch_bytes = e->wt_bytes;
    e->scratch = okpu_alloc(e->opts.allocator, (size_t)bytes);
    if (!e->scratch)
        return okpu_fail(err, OKPU_ERR_NO_MEM, layer, -1,
                         "layer %d: no memory for the KPU emulator's %lu-byte work area", layer,
                         (unsigned long)bytes);
    e->scratch_size = (size_t)bytes;
    e->base.scratch_bytes = e->scratch_size + e->wt_bytes;
    return OKPU_OK;
}

/* The w-offset term of every output channel of the layer into out[0..oc). */
static void w_terms_fill(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job, int64_t *out)
{
    emu_layer L;
    uint32_t oc;

    memset(&L, 0, sizeof L);
    L.a = &job->args;
    L.weights = job->weights;
    L.eight_bit = job->eight_bit;
    L.g_ic = job->args.depthwise ? 1u : job->args.in_channels;
    L.kk = okpu_kpu_kernel_size(&job->args) * okpu_kpu_kernel_size(&job->args);
    L.offset_mode = e->opts.conv_offset;
    for (oc = 0; oc < job->args.out_channels; oc++)
        out[oc] = w_term(&L, oc);
}

static w_terms *w_terms_find(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job)
{
    const okpu_kpu_args *a = &job->args;
    size_t i;

    for (i = 0; i < e->wt_count; i++) {
        w_terms *t = &e->wt[i];
        if (t->weights == job->weights && t->eight_bit == job->eight_bit && t->oc == a->out_channels &&
            t->g_ic == (a->depthwise ? 1u : a->in_channels) && t->kk == okpu_kpu_kernel_size(a) * okpu_kpu_kernel_size(a) &&
            t->arg_w == a->arg_w && t->shr_w == a->shr_w && t->arg_add == a->arg_add)
            return t;
    }
    return NULL;
}

/* At most this many layers keep their terms (a virtual board running one model after another would otherwise grow
 * the list without end); a layer past it computes them on each run. */
#define W_TERMS_MAX 1024u

/* Compute the layer's w-offset terms once, at prepare; a layer prepared again (the virtual board prepares before
 * every run, and its weights may have changed) recomputes them in place. */
static int w_terms_prepare(okpu_kpu_emu *e, const okpu_kpu_layer_job *job, okpu_error *err)
{
    const okpu_kpu_args *a = &job->args;
    const size_t bytes = (size_t)a->out_channels * sizeof(int64_t); /* out_channels <= 1024: okpu_kpu_args_check */
    w_terms *t = w_terms_find(e, job);

    if (t) {
        w_terms_fill(e, job, t->term);
        return OKPU_OK;
    }
    if (e->wt_count >= W_TERMS_MAX || !job->weights)
        return OKPU_OK;
    if (e->wt_count == e->wt_cap) {
        const size_t cap = e->wt_cap ? 2 * e->wt_cap : 32;
        w_terms *grown = okpu_alloc(e->opts.allocator, cap * sizeof *grown); /* cap <= 2 * W_TERMS_MAX */
        if (!grown)
            return okpu_fail(err, OKPU_ERR_NO_MEM, job->layer, -1,
                             "layer %d: no memory for the KPU emulator's table of weight terms", job->layer);
        if (e->wt_count)
            memcpy(grown, e->wt, e->wt_count * sizeof *grown);
        okpu_free(e->opts.allocator, e->wt, e->wt_cap * sizeof *e->wt);
        e->wt_bytes = e->wt_bytes - e->wt_cap * sizeof *e->wt + cap * sizeof *grown;
        e->wt = grown;
        e->wt_cap = cap;
    }
    t = &e->wt[e->wt_count];
    t->term = okpu_alloc(e->opts.allocator, bytes);
    if (!t->term)
        return okpu_fail(err, OKPU_ERR_NO_MEM, job->layer, -1,
                         "layer %d: no memory for the KPU emulator's %lu bytes of weight terms", job->layer,
                         (unsigned long)bytes);
    t->weights = job->weights;
    t->eight_bit = job->eight_bit;
    t->oc = a->out_channels;
    t->g_ic = a->depthwise ? 1u : a->in_channels;
    t->kk = okpu_kpu_kernel_size(a) * okpu_kpu_kernel_size(a);
    t->arg_w = a->arg_w;
    t->shr_w = a->shr_w;
    t->arg_add = a->arg_add;
    w_terms_fill(e, job, t->term);
    e->wt_count++;
    e->wt_bytes += bytes;
    e->base.scratch_bytes = e->scratch_size + e->wt_bytes;
    return OKPU_OK;
}

static int emu_prepare(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    uint64_t part[PART_COUNT], total;
    int rc;

    if ((rc = okpu_kpu_args_check(&job->args, job->layer, -1, err)) != OKPU_OK ||
        (rc = scratch_parts(e, &job->args, job->layer, part, &total, err)) != OKPU_OK ||
        (rc = reserve_scratch(e, total, job->layer, err)) != OKPU_OK)
        return rc;
    return e->reference ? OKPU_OK : w_terms_prepare(e, job, err);
}

/* Copy the input map out of KPU RAM into ic planes, each with a `pad`-wide border of pad_value. */
static void load_input(const uint8_t *ram, const emu_layer *L, uint8_t *planes)
{
    const okpu_kpu_layout layout = okpu_kpu_layout_for_width(L->w);
    const uint8_t *base = ram + (size_t)L->a->image_src_addr * OKPU_KPU_ROW_BYTES;
    uint32_t c, y;

    if (L->pad)
        memset(planes, L->a->pad_value, L->plane * L->ic);
    for (c = 0; c < L->ic; c++)
        for (y = 0; y < L->h; y++)
            memcpy(planes + c * L->plane + (size_t)(y + L->pad) * L->pitch + L->pad,
                   base + okpu_kpu_layout_offset(&layout, L->h, c, y, 0), L->w);
}

static int emu_run_layer(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    const okpu_kpu_args *a = &job->args;
    emu_layer L;
    fast_bufs B;
    uint8_t *at[PART_COUNT], *in_planes, *out_dense;
    uint64_t part[PART_COUNT], total;
    size_t out_plane, x_table_len;
    uint32_t oc, s;
    int rc, i;

    if ((rc = okpu_kpu_args_check(a, job->layer, -1, err)) != OKPU_OK)
        return rc;
    if (!job->weights || !job->bn || !job->act)
        return okpu_fail(err, OKPU_ERR_PARAM, job->layer, -1,
                         "layer %d: KPU job without %s (the loader must point weights, bn and act into the model)",
                         job->layer, !job->weights ? "weights" : !job->bn ? "a BN table" : "an activation table");
    if ((rc = scratch_parts(e, a, job->layer, part, &total, err)) != OKPU_OK)
        return rc;
    if (total > e->scratch_size && (rc = reserve_scratch(e, total, job->layer, err)) != OKPU_OK)
        return rc; /* a job no prepare covered: see "Working memory" */
    at[0] = e->scratch;
    for (i = 1; i < PART_COUNT; i++)
        at[i] = at[i - 1] + part[i - 1];

    memset(&L, 0, sizeof L);
    L.a = a;
    L.weights = job->weights;
    L.bn_raw = job->bn;
    L.eight_bit = job->eight_bit;
    okpu_kpu_act_decode(job->act, &L.act);
    L.act_sorted = 1;
    for (s = 1; s < 16; s++)
        if (L.act.x_start[s] < L.act.x_start[s - 1])
            L.act_sorted = 0;
    L.w = a->in_width;
    L.h = a->in_height;
    L.k = okpu_kpu_kernel_size(a);
    L.kk = L.k * L.k;
    L.ic = a->in_channels;
    L.oc = a->out_channels;
    L.g_ic = a->depthwise ? 1u : L.ic;
    L.pad = L.k / 2;
    L.pitch = L.w + 2 * L.pad;
    L.plane = (size_t)L.pitch * (L.h + 2 * L.pad);
    L.round = e->opts.act_round;
    L.sse41 = e->sse41;
    L.offset_mode = e->opts.conv_offset;

    out_plane = (size_t)a->out_width * a->out_height;
    x_table_len = (size_t)L.kk * 255u + 1u;
    in_planes = at[PART_IN];
    L.activated = at[PART_ACTIVATED];
    out_dense = at[PART_OUT];
    L.in = in_planes;
    load_input(self->ram, &L, in_planes);

    if (!e->reference) {
        B.x_term = (int64_t *)(void *)at[PART_X_TERM];
        B.x_table = (int64_t *)(void *)at[PART_X_TABLE];
        B.box = (uint32_t *)(void *)at[PART_BOX];
        B.col = (uint32_t *)(void *)at[PART_COL];
        B.acc = (uint64_t *)(void *)at[PART_ACC];
        {
            const w_terms *t = w_terms_find(e, job);
            int64_t *fresh = (int64_t *)(void *)at[PART_W_TERM];
            if (t) {
                B.w_const = t->term;
            } else {
                w_terms_fill(e, job, fresh);
                B.w_const = fresh;
            }
        }
        for (s = 0; s < x_table_len; s++)
            B.x_table[s] = okpu_asr64(a->arg_x * (int64_t)s, a->shr_x);
        act_fast_init(&L.act, L.act_sorted, &B.act);
        if (!a->depthwise)
            x_term_all_channels(&L, &B);
    }

    for (oc = 0; oc < L.oc; oc++) {
        okpu_kpu_bn bn;
        okpu_kpu_bn_decode(job->bn + (size_t)oc * KPU_BN_ENTRY_BYTES, &bn);
        if (e->reference)
            conv_reference(&L, oc, &bn);
        else
            conv_fast(&L, oc, &bn, &B);
        pool_plane(L.activated, L.w, L.h, a->pool_type, e->opts.mean_border, out_dense + oc * out_plane);
    }

    /* Written only after the whole input was read: source and destination regions may overlap. */
    okpu_kpu_layout_upload(self->ram, a->image_dst_addr, out_dense, a->out_width, a->out_height, L.oc);
    if (job->main_out)
        memcpy(job->main_out, out_dense, out_plane * L.oc);
    return OKPU_OK;
}

static void emu_destroy(okpu_kpu_backend *self)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    const okpu_allocator *alloc;
    okpu_allocator copy;
    size_t i;

    if (!e)
        return;
    copy = e->allocator;
    alloc = e->opts.allocator ? &copy : NULL;
    okpu_free(alloc, e->scratch, e->scratch_size);
    for (i = 0; i < e->wt_count; i++)
        okpu_free(alloc, e->wt[i].term, (size_t)e->wt[i].oc * sizeof(int64_t));
    okpu_free(alloc, e->wt, e->wt_cap * sizeof *e->wt);
    if (e->owns_ram)
        okpu_free(alloc, e->base.ram, OKPU_KPU_RAM_SIZE);
    okpu_free(alloc, e, sizeof *e);
}

static okpu_kpu_backend *emu_create(const okpu_options *opts, int reference, uint8_t *ram, okpu_error *err)
{
    okpu_options o;
    okpu_kpu_emu *e;

    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof o); /* zero selects the chip's behaviour for everything the emulator uses */
    e = okpu_alloc(o.allocator, sizeof *e);
    if (!e) {
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "no memory for the KPU emulator (%lu bytes)",
                  (unsigned long)sizeof *e);
        return NULL;
    }
    e->opts = o;
    if (o.allocator) {
        e->allocator = *o.allocator;
        e->opts.allocator = &e->allocator;
    }
    e->reference = reference;
#ifdef EMU_SSE41
    __builtin_cpu_init();
    e->sse41 = __builtin_cpu_supports("sse4.1") && !getenv("OKPU_EMU_NO_SSE41"); /* the variable tests the C path */
#endif
    e->base.name = reference ? "emulator (reference conv)" : "emulator";
    e->base.run_layer = emu_run_layer;
    e->base.prepare = emu_prepare;
    e->base.destroy = emu_destroy;
    if (ram) {
        e->base.ram = ram;
        return &e->base;
    }
    e->owns_ram = 1;
    e->base.ram = okpu_alloc(e->opts.allocator, OKPU_KPU_RAM_SIZE);
    if (!e->base.ram) {
        emu_destroy(&e->base);
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "no memory for the emulated KPU RAM (%u bytes)", OKPU_KPU_RAM_SIZE);
        return NULL;
    }
    return &e->base;
}

okpu_kpu_backend *okpu_kpu_emu_create(const okpu_options *opts, okpu_error *err)
{
    const char *env = getenv("OKPU_EMU_REFERENCE");
    return emu_create(opts, env && strcmp(env, "1") == 0, NULL, err);
}

okpu_kpu_backend *okpu_kpu_emu_create_on_ram(const okpu_options *opts, uint8_t *ram, okpu_error *err)
{
    const char *env = getenv("OKPU_EMU_REFERENCE");
    return emu_create(opts, env && strcmp(env, "1") == 0, ram, err);
}

okpu_kpu_backend *okpu_kpu_emu_create_reference(const okpu_options *opts, okpu_error *err)
{
    return emu_create(opts, 1, NULL, err);
}

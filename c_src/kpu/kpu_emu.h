// SPDX-License-Identifier: Apache-2.0
/* The software KPU's parts (internal to c_src/kpu/kpu_emu*.c). docs/kpu-reference.md section 4 in four units:
 * - kpu_emu_ref.c:  the arithmetic as written, one value at a time (conv, batch norm + activation, pool): the oracle;
 * - kpu_emu_conv.c: the same convolution sums reorganised into integer loops over whole rows;
 * - kpu_emu_act.c:  the same batch norm + activation over a row, on int64 (or exact doubles) where a channel's range
 *                   proves no wrap, falling back to the oracle's bn_act per channel otherwise;
 * - kpu_emu.c:      the backend: working memory, prepare, run_layer, worker split.
 * A layer's read-only state (emu_layer, emu_shared) is computed once per run; each worker has its own emu_worker
 * buffers, so output channels can be computed in any order or in parallel. */
#ifndef OKPU_KPU_EMU_H
#define OKPU_KPU_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "../okpu.h"
#include "kpu_args.h"

/* x86-64 builds have SSE4.1, AVX2 and AVX-512 code, each used when the CPU has it (checked at run time; the
 * environment variables OKPU_EMU_NO_SSE41 / OKPU_EMU_NO_AVX2 / OKPU_EMU_NO_AVX512 turn them off for tests);
 * -DOKPU_EMU_PORTABLE tests the C paths on x86. */
#if defined(__x86_64__) && !defined(OKPU_EMU_PORTABLE) && (defined(__GNUC__) || defined(__clang__))
#define EMU_SSE41 1
#define EMU_AVX2 1
#define EMU_VEC_SEG 16 /* segments the double path takes (with AVX2; four with SSE4.1 alone) */
#else
#define EMU_VEC_SEG 4 /* (no double path: a placeholder) */
#endif

/* A layer as both conv paths see it. */
typedef struct emu_layer {
    const okpu_kpu_args *a;
    const uint8_t *weights;
    const uint8_t *bn_raw; /* out_channels x 8 bytes */
    int eight_bit;
    okpu_kpu_act act;
    int act_sorted; /* x_start non-decreasing (every real table) */
    uint32_t w, h, k, kk, ic, oc;
    uint32_t g_ic;       /* input channels each output channel reads: 1 when depthwise */
    uint32_t pad;        /* border of the padded input planes: 1 for 3x3, 0 for 1x1 */
    uint32_t pitch;      /* bytes per row of a padded input plane */
    size_t plane;        /* bytes per padded input plane */
    const uint8_t *in;   /* ic padded input planes (pad taps hold pad_value) */
    uint32_t src_w, src_h; /* the input map in KPU RAM (w x h, or more when picked) */
    uint32_t pick_step, pick_x0; /* a layer over the pixels its pick pool reads (kpu_emu.c, pick_layer); 0, 0 */
    uint32_t phase_pitch;        /* a picked 3x3 layer: bytes per row of a phase plane, */
    size_t phase_plane;          /* and per phase plane */
    size_t acc_stride;   /* by quads (okpu_emu_by_quads): uint32 accumulators per channel of a quad in W->acc */
    /* 8-bit mode: the accumulators (uint32) hold the signed sum plus acc_bias = 2^31 (the sums fit int32), so weights
     * may be negative. x_fold: when arg_x is a multiple of 2^shr_x, every x-offset term is exactly x_fold times a tap
     * sum (x_fold = arg_x / 2^shr_x), so the fast path adds x_fold to every weight instead (folded = 1) and its
     * x-offset terms are 0; okpu_emu_fold sets these. */
    int64_t acc_bias;
    int32_t x_fold;
    int folded;
    okpu_round_mode round;
    okpu_conv_offset_mode offset_mode;
    okpu_mean_border_mode mean_border;
    int sse41; /* x86-64 with SSE4.1 (checked at run time) */
    int avx2;  /* x86-64 with AVX2 (checked at run time) */
    int avx512; /* and AVX-512 F + DQ (the batch-norm rows) */
    int avx512bw; /* and AVX-512 BW (the quads' 32-pixel steps) */
} emu_layer;

static inline uint32_t okpu_emu_weight_at(const emu_layer *L, size_t index)
{
    if (L->eight_bit)
        return L->weights[index];
    return (uint32_t)L->weights[2 * index] | ((uint32_t)L->weights[2 * index + 1] << 8);
}

/* First weight of output channel oc's taps on its i-th input channel ([oc][ic][kh][kw], depthwise [c][kh][kw]). */
static inline size_t okpu_emu_weight_index(const emu_layer *L, uint32_t oc, uint32_t i)
{
    return ((size_t)oc * L->g_ic + i) * L->kk;
}

/* Input channel number that output channel oc reads as its i-th. */
static inline uint32_t okpu_emu_input_channel(const emu_layer *L, uint32_t oc, uint32_t i)
{
    return L->a->depthwise ? oc : i;
}

/* ---- kpu_emu_ref.c: the oracle ---- */

uint8_t okpu_emu_bn_act(int64_t alu, const okpu_kpu_bn *bn, const okpu_kpu_act *act, int act_sorted,
                        okpu_round_mode mode);
/* Output channels [oc_first, oc_end) one value at a time, each into out + oc * out_plane; activated: w x h scratch. */
void okpu_emu_channels_reference(const emu_layer *L, uint32_t oc_first, uint32_t oc_end, uint8_t *activated,
                                 uint8_t *out);
void okpu_emu_pool_plane(const uint8_t *in, uint32_t w, uint32_t h, unsigned pool_type,
                         okpu_mean_border_mode border, uint8_t *out);

/* ---- kpu_emu_act.c: batch norm + activation over rows ---- */

/* The layer's activation table prepared for the fast rows. */
typedef struct emu_act_fast {
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
    /* per segment, computed once per layer rather than per channel: the largest |y - x_start| whose product with
     * y_mul stays below 2^61 (the int64 path) and below 2^52 (the double path), INT64_MAX when y_mul = 0; 2^-s and
     * 2^-(s-1) (2 for s = 0) as doubles */
    int64_t fast_d_max[16], exact_d_max[16];
    int64_t y_fast_lo, y_fast_hi; /* the int64 path's y bounds over every segment (see okpu_emu_act_fast_init) */
    double sc[16], sc1[16];
} emu_act_fast;

void okpu_emu_act_fast_init(const okpu_kpu_act *act, int act_sorted, emu_act_fast *f);

/* One output channel's batch norm + activation, set up from the range [lo, hi] of its accumulators (alu values). */
typedef struct emu_bn_channel {
    const okpu_kpu_bn *bn;
    int usable; /* the int64 path: this channel's alu range keeps the arithmetic below 2^61 */
    int64_t mul, add;
    unsigned shift;
    int first;  /* segment of the smallest y the channel reaches */
    int steps;  /* binary search steps over the segments it can reach (0: one segment) */
    int last;   /* segment of the largest */
    int64_t ylo, yhi, alu_abs; /* range of y, largest |alu| */
    int vec;    /* the double path applies (at most four segments, sixteen with AVX2; every value exact in a double) */
    int nseg;
    double vmul, vadd;                                /* norm_mul / 2^norm_shift, norm_add */
    /* per reachable segment: x_start, y_mul, 2^-s, 2^-(s-1), bias, y_mul * 2^-s, y_mul * 2^-(s-1) (exact: powers of
     * two) */
    double xs[EMU_VEC_SEG], ym[EMU_VEC_SEG], sc[EMU_VEC_SEG], sc1[EMU_VEC_SEG], vbias[EMU_VEC_SEG];
    double ymsc[EMU_VEC_SEG], ymsc1[EMU_VEC_SEG];
    const uint8_t *lut; /* when not NULL: lut[y - lut_lo] is the activation of y for every y in [ylo, yhi] */
    int64_t lut_lo;
} emu_bn_channel;

/* has_range = 0: no alu seen (the exact path is taken). */
void okpu_emu_bn_channel_init(const emu_layer *L, const emu_act_fast *A, const okpu_kpu_bn *bn, int has_range,
                              int64_t lo, int64_t hi, emu_bn_channel *c);
struct emu_worker;
/* Point c->lut at the worker's table of the activation of y, extended to cover the channel's [ylo, yhi] when that
 * pays (see kpu_emu_act.c). npix: pixels of this channel the pool reads; range_px: of all the channels of the
 * worker's share of the layer (the table computes at most half that many entries in the layer). */
void okpu_emu_bn_lut(const emu_layer *L, const emu_act_fast *A, emu_bn_channel *c, struct emu_worker *W, size_t npix,
                     size_t range_px);
/* out[x] = bn_act(acc[x] + xt[x] + w_const) for x = first, first + step, ... < end; acc is a32 (8-bit mode) or a64;
 * xt NULL: no x-offset terms (folded into the weights). */
void okpu_emu_bn_act_row(const emu_layer *L, const emu_act_fast *A, const emu_bn_channel *c, const uint32_t *a32,
                         const uint64_t *a64, const int64_t *xt, int64_t w_const, uint8_t *out, size_t first,
                         size_t end, size_t step);

/* ---- kpu_emu_conv.c: the fast convolution ---- */

/* What every output channel of a layer reads (written before the channels run, read-only while they do). */
typedef struct emu_shared {
    int64_t *x_term;        /* w x h: the x-offset term of every pixel (non-depthwise layers) */
    int64_t *x_table;       /* floor(arg_x * s / 2^shr_x) for every possible per-channel tap sum s */
    const int64_t *w_const; /* oc: the w-offset terms and arg_add of each output channel */
    const uint32_t *pair_off; /* by quads: 2 x okpu_emu_pairs tap offsets (okpu_emu_pair_offsets) */
    const uint32_t *packed;   /* by quads: every quad's packed weights; 8-bit 3x3 depthwise: every channel's six
                               * words (okpu_emu_pack_dw3); NULL: each worker packs its own */
    emu_act_fast act;       /* the layer's activation table for the fast rows */
} emu_shared;

/* One worker's buffers. */
typedef struct emu_worker {
    uint8_t *activated; /* w x h: one output channel after the activation */
    int64_t *x_term;    /* w x h: a depthwise channel's x-offset terms, or this worker's part of a shared layer's */
    int x_started;      /* x_term holds this worker's part of the current layer's (zeroed at its first use) */
    uint64_t *acc;      /* w x h accumulators (used as uint32 in 8-bit mode; by quads four planes of acc_stride) */
    uint32_t *pack;     /* by quads without S->packed: one quad's packed weights */
    int16_t *wide;      /* 8-bit 3x3 depthwise: one padded input plane widened, then EMU_WIDE_SLACK zeros */
    uint8_t *lut;       /* EMU_LUT_MAX bytes: the activation of y for y in [lut_lo, lut_lo + lut_n) */
    size_t lut_n;       /* entries valid (0 at the start of each layer: emu_run_layer clears the worker) */
    int64_t lut_lo;
    size_t lut_filled;  /* entries computed for the current layer, bounded by the pixels of its share */
    uint32_t share;     /* output channels of the layer this worker is expected to compute (oc / workers) */
} emu_worker;

/* Entries of a worker's activation table: real layers' y ranges (floor(alu * norm_mul / 2^norm_shift) + norm_add)
 * span a few thousand values when the table pays off at all. */
#define EMU_LUT_MAX 65536u
#define EMU_LUT_SLACK 3u /* bytes after the table's last entry: lut_row_avx512 reads four bytes at an entry */

void okpu_emu_x_table_fill(const emu_layer *L, emu_shared *S);
/* The x-offset plane of a non-depthwise layer: x[p] += the terms of input channels [first, end), then
 * okpu_emu_x_term_finish once every channel is in. Integer sums, so channel ranges may be added in any order, into
 * separate planes summed afterwards. */
void okpu_emu_x_term_add_channels(const emu_layer *L, const emu_shared *S, uint32_t first, uint32_t end, int64_t *x);
/* Pixels [first, end) of the summed plane: one floor of the total per pixel (OKPU_CONV_OFFSET_ONCE), else as is. */
void okpu_emu_x_term_finish(const emu_layer *L, int64_t *x, size_t first, size_t end);
int64_t okpu_emu_w_term(const emu_layer *L, uint32_t oc);
/* 8-bit 3x3 depthwise layers accumulate on a widened plane with six packed words per channel: */
#define EMU_WIDE_SLACK 32u
int okpu_emu_dw3(const emu_layer *L);
void okpu_emu_pack_dw3(const emu_layer *L, uint32_t c, uint32_t *dst); /* 6 words */
/* Sets L->acc_bias, L->x_fold and L->folded from L->eight_bit, L->a, L->g_ic and L->kk. */
void okpu_emu_fold(emu_layer *L);
/* 8-bit layers that are not depthwise run four output channels at a time on packed weights (kpu_emu_conv.c): */
int okpu_emu_by_quads(const emu_layer *L);
uint32_t okpu_emu_pairs(const emu_layer *L);                     /* pairs of taps: ceil(g_ic * kk / 2) */
void okpu_emu_pair_offsets(const emu_layer *L, uint32_t *off);   /* 2 x pairs words */
void okpu_emu_pack_quad(const emu_layer *L, uint32_t quad, uint32_t *dst); /* 4 x pairs words */
/* Output channels [oc_first, oc_end): conv + BN + activation + pool, each into out + oc * out_plane (the dense
 * output, out_width x out_height per channel). A worker runs one such range; ranges may run in parallel. */
void okpu_emu_channels_fast(const emu_layer *L, uint32_t oc_first, uint32_t oc_end, const emu_shared *S,
                            emu_worker *W, uint8_t *out);

#ifdef EMU_AVX2
#include <immintrin.h>
/* Eight accumulators from x as int64 (a32: 8-bit mode, else a64), plus their x-offset terms when xt is not NULL: what
 * the AVX-512 range, batch-norm and table rows read. */
__attribute__((target("avx512f"))) static inline __m512i okpu_emu_acc8_avx512(const uint32_t *a32,
                                                                             const uint64_t *a64, const int64_t *xt,
                                                                             size_t x)
{
    const __m512i acc = a32 ? _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(a32 + x)))
                            : _mm512_loadu_si512((const void *)(a64 + x));
    return xt ? _mm512_add_epi64(acc, _mm512_loadu_si512((const void *)(xt + x))) : acc;
}
#endif

#endif

// SPDX-License-Identifier: Apache-2.0
/* kmodel v5 stackvm tensor functions (kernels/v5_kernels.h). */
#include <stdlib.h>
#include <string.h>

#include "fmath.h"
#include "v5_kernels.h"

/* KERNEL_ARGS: every kernel reads its arguments from a local copy. Its stores go through uint8_t pointers, which C lets
 * alias any object, so a loop reading a->dst or a->shape[i] from the caller's struct reloads it after every store; a
 * copy whose address never leaves the kernel is known apart. The arithmetic is unchanged. */
static float ld_f32(const uint8_t *p)
{
    float f;
    memcpy(&f, p, 4);
    return f;
}

static void st_f32(uint8_t *p, float f)
{
    memcpy(p, &f, 4);
}

/* Run the statement for every index of nd in row-major order, with si_ / di_ the element offsets of the source and the
 * destination and idx_ the index. The last axis is a plain loop (the statement runs per element: the step there
 * costs an add, not a walk over the axes); the other axes advance after it, odometer-style. Rank 0 is one element;
 * a zero extent anywhere gives none. */
#define ND_WALK(nd, ...)                                                                                              \
    do {                                                                                                              \
        uint32_t idx_[OKPU_V5_MAX_RANK] = {0};                                                                        \
        const uint32_t last_ = (nd)->rank ? (nd)->rank - 1u : 0u;                                                     \
        const uint32_t n_ = (nd)->rank ? (nd)->shape[last_] : 1u;                                                     \
        const int64_t sstep_ = (nd)->rank ? (nd)->in_stride[last_] : 0;                                              \
        const int64_t dstep_ = (nd)->rank ? (nd)->out_stride[last_] : 0;                                             \
        uint64_t outer_ = 1, o_;                                                                                      \
        int64_t si_ = 0, di_ = 0;                                                                                     \
        uint32_t r_;                                                                                                  \
        for (r_ = 0; r_ < last_; r_++)                                                                                \
            outer_ *= (nd)->shape[r_];                                                                                \
        if (n_ == 0u) /* an empty walk: nothing, however large the other extents (the work counted none) */           \
            outer_ = 0;                                                                                               \
        for (o_ = 0; o_ < outer_; o_++) {                                                                             \
            for (idx_[last_] = 0; idx_[last_] < n_; idx_[last_]++, si_ += sstep_, di_ += dstep_) {                   \
                __VA_ARGS__;                                                                                           \
            }                                                                                                         \
            si_ -= sstep_ * (int64_t)n_;                                                                              \
            di_ -= dstep_ * (int64_t)n_;                                                                              \
            idx_[last_] = 0;                                                                                          \
            for (r_ = last_; r_-- > 0;) {                                                                             \
                si_ += (nd)->in_stride[r_];                                                                           \
                di_ += (nd)->out_stride[r_];                                                                          \
                if (++idx_[r_] < (nd)->shape[r_])                                                                     \
                    break;                                                                                            \
                si_ -= (int64_t)(nd)->in_stride[r_] * (nd)->shape[r_];                                                \
                di_ -= (int64_t)(nd)->out_stride[r_] * (nd)->shape[r_];                                               \
                idx_[r_] = 0;                                                                                         \
            }                                                                                                         \
        }                                                                                                             \
    } while (0)

/* The bytes [*lo, *hi) a walk of `shape` with strides `stride` (elements of e bytes) from base touches (every extent
 * >= 1). */
static void extent(const uint32_t *shape, const int32_t *stride, uint32_t rank, const uint8_t *base, size_t e,
                   uintptr_t *lo, uintptr_t *hi)
{
    int64_t mn = 0, mx = 0;
    uint32_t r;
    for (r = 0; r < rank; r++) {
        const int64_t span = (int64_t)stride[r] * ((int64_t)shape[r] - 1); /* (a 0 extent: a walk touching nothing) */
        mn += span < 0 ? span : 0;
        mx += span > 0 ? span : 0;
    }
    *lo = (uintptr_t)base + (uintptr_t)(mn * (int64_t)e); /* (mn <= 0: wraps to base - |mn| e) */
    *hi = (uintptr_t)base + (uintptr_t)((mx + 1) * (int64_t)e);
}

int okpu_v5_apart(uint32_t rank, const uint32_t *in_shape, const int32_t *in_stride, const uint8_t *src,
                  size_t in_size, const uint32_t *out_shape, const int32_t *out_stride, const uint8_t *dst,
                  size_t out_size)
{
    uintptr_t slo, shi, dlo, dhi;
    extent(in_shape, in_stride, rank, src, in_size, &slo, &shi);
    extent(out_shape, out_stride, rank, dst, out_size, &dlo, &dhi);
    return shi <= dlo || dhi <= slo;
}

void okpu_v5_k_copy(const okpu_v5_copy_args *args)
{
    const okpu_v5_copy_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    const size_t e = a->esize;
    const uint32_t last = a->nd.rank ? a->nd.rank - 1u : 0u;
    okpu_v5_nd rows;
    uint32_t r;
    for (r = 0; r < a->nd.rank; r++)
        if (a->nd.shape[r] == 0u)
            return; /* nothing to copy (and the loader checked no stride of an empty view) */
    /* Source and destination apart, a last axis dense on both sides is one memcpy per row, and other walks copy
     * elements of a size known here (a load and a store, not a call per element: YOLOX's stride-2 gathers went from
     * 2 to 0.3 ns an element); otherwise element by element with memmove (a file may make an element's source and
     * destination overlap: found by fuzz_v5), in index order, as before. */
    if (a->nd.rank &&
        okpu_v5_apart(a->nd.rank, a->nd.shape, a->nd.in_stride, a->src, e, a->nd.shape, a->nd.out_stride, a->dst, e)) {
        if (a->nd.in_stride[last] == 1 && a->nd.out_stride[last] == 1) {
            const size_t row = (size_t)a->nd.shape[last] * e;
            rows = a->nd;
            rows.shape[last] = 1u;
            ND_WALK(&rows, memcpy(a->dst + di_ * (int64_t)e, a->src + si_ * (int64_t)e, row));
            return;
        }
        if (e == 1u) {
            ND_WALK(&a->nd, a->dst[di_] = a->src[si_]);
            return;
        }
        if (e == 4u) {
            ND_WALK(&a->nd, memcpy(a->dst + di_ * 4, a->src + si_ * 4, 4));
            return;
        }
    }
    ND_WALK(&a->nd, memmove(a->dst + di_ * (int64_t)e, a->src + si_ * (int64_t)e, e));
}

/* (inline here: quantize calls it per element) */
static inline float round_even(float x)
{
    /* 2^23: from there on every float is an integer */
    const float big = 8388608.0f;
    long t;
    float diff;
    int odd, up, down;
    if (!(x < big && x > -big))
        return x;
    t = (long)x; /* truncated, exact */
    diff = x - (float)t;
    odd = (int)(t & 1);
    /* comparisons as 0/1 rather than branches: the data decides them, so branches would be mispredicted */
    up = (diff > 0.5f) | ((diff == 0.5f) & odd);
    down = (diff < -0.5f) | ((diff == -0.5f) & odd);
    return (float)t + (float)(up - down);
}

float okpu_v5_round_even(float x)
{
    return round_even(x);
}

/* Are the walk's source and destination both dense row-major (one run of elements)? */
static int nd_dense(const okpu_v5_nd *nd)
{
    int64_t step = 1;
    uint32_t r = nd->rank;

    while (r-- > 0) {
        if (nd->shape[r] != 1u && (nd->in_stride[r] != step || nd->out_stride[r] != step))
            return 0;
        step *= nd->shape[r];
    }
    return 1;
}

static uint8_t quantize1(float x, float scale, float bias, int lo, int hi)
{
    const float v = round_even(x * scale + bias);
    /* NaN (a NaN scale or bias in the file) takes the low end, as the x86 Simulator's cast does; (int)NaN is UB */
    return (uint8_t)(!(v >= (float)lo) ? lo : v > (float)hi ? hi : (int)v);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(OKPU_V5_PORTABLE)
#include <immintrin.h>
/* A dense run, sixteen at a time with SSE4.1 (checked at run time): the same float product and sum (mulps, addps, each
 * rounded as the scalar code's), roundps to nearest even (what round_even computes), max then min against the range
 * (maxps gives its second operand, the low end, for a NaN, as quantize1 does), the truncation of an integral float,
 * and packs whose saturation never acts (the values are in range). Returns the elements it did. */
__attribute__((target("sse4.1"))) static size_t quantize_sse41(const uint8_t *src, uint8_t *dst, size_t n, float scale,
                                                              float bias, int lo, int hi)
{
    const __m128 s = _mm_set1_ps(scale), b = _mm_set1_ps(bias), l = _mm_set1_ps((float)lo), h = _mm_set1_ps((float)hi);
    size_t i = 0;
    int k;

    for (; i + 16 <= n; i += 16) {
        __m128i q[4], w0, w1;
        for (k = 0; k < 4; k++) {
            __m128 v = _mm_loadu_ps((const float *)(const void *)(src + (i + 4u * (size_t)k) * 4u));
            v = _mm_round_ps(_mm_add_ps(_mm_mul_ps(v, s), b), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            q[k] = _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(v, l), h));
        }
        w0 = _mm_packs_epi32(q[0], q[1]);
        w1 = _mm_packs_epi32(q[2], q[3]);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), lo < 0 ? _mm_packs_epi16(w0, w1) : _mm_packus_epi16(w0, w1));
    }
    return i;
}
#endif

void okpu_v5_k_quantize(const okpu_v5_quant_args *args)
{
    const okpu_v5_quant_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    const int lo = a->qtype == OKPU_V5_DT_I8 ? -128 : 0, hi = a->qtype == OKPU_V5_DT_I8 ? 127 : 255;

    if (nd_dense(&a->nd)) {
        size_t n = 1, i = 0;
        uint32_t r;
        for (r = 0; r < a->nd.rank; r++)
            n *= a->nd.shape[r];
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(OKPU_V5_PORTABLE)
        __builtin_cpu_init(); /* (OKPU_EMU_NO_SSE41 tests the scalar loop, as it does the emulator's) */
        if (n >= 16 && __builtin_cpu_supports("sse4.1") && !getenv("OKPU_EMU_NO_SSE41"))
            i = quantize_sse41(a->src, a->dst, n, a->scale, a->bias, lo, hi);
#endif
        for (; i < n; i++)
            a->dst[i] = quantize1(ld_f32(a->src + i * 4u), a->scale, a->bias, lo, hi);
        return;
    }
    ND_WALK(&a->nd, a->dst[di_] = quantize1(ld_f32(a->src + si_ * 4), a->scale, a->bias, lo, hi));
}

/* An element's value depends on its byte alone: the 256 values are computed once as each element's would be (the
 * product rounded on its own, then the add), then looked up. */
void okpu_v5_k_dequantize(const okpu_v5_quant_args *args)
{
    const okpu_v5_quant_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    float table[256];
    int b;

    for (b = 0; b < 256; b++) {
        const int q = a->qtype == OKPU_V5_DT_I8 ? (int)(int8_t)(uint8_t)b : b;
        const float prod = (float)q * a->scale;
        table[b] = prod + a->bias;
    }
    if (nd_dense(&a->nd)) {
        size_t n = 1, i;
        uint32_t r;
        for (r = 0; r < a->nd.rank; r++)
            n *= a->nd.shape[r];
        for (i = 0; i < n; i++)
            st_f32(a->dst + i * 4u, table[a->src[i]]);
        return;
    }
    ND_WALK(&a->nd, st_f32(a->dst + di_ * 4, table[a->src[si_]]));
}

void okpu_v5_k_pad(const okpu_v5_pad_args *args)
{
    const okpu_v5_pad_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    okpu_v5_nd nd;
    const size_t e = a->esize;
    uint32_t r;
    memset(&nd, 0, sizeof nd);
    nd.rank = a->rank;
    for (r = 0; r < a->rank; r++) {
        nd.shape[r] = a->out_shape[r];
        nd.out_stride[r] = a->out_stride[r];
    }
    ND_WALK(&nd, {
        int64_t src = 0;
        uint32_t k;
        int inside = 1;
        (void)si_;
        for (k = 0; k < a->rank; k++) {
            const int64_t n = a->in_shape[k];
            int64_t i = (int64_t)idx_[k] - a->before[k];
            if (i < 0 || i >= n) {
                if (a->mode == 0) {
                    inside = 0;
                    break;
                }
                if (a->mode == 1) /* reflect: the edge element is not repeated */
                    i = i < 0 ? -i : 2 * (n - 1) - i;
                else if (a->mode == 2) /* symmetric: it is */
                    i = i < 0 ? -i - 1 : 2 * n - 1 - i;
                else /* edge */
                    i = i < 0 ? 0 : n - 1;
            }
            src += i * a->in_stride[k];
        }
        if (inside)
            memmove(a->dst + di_ * (int64_t)e, a->src + src * (int64_t)e, e); /* may overlap, as in copy */
        else
            memcpy(a->dst + di_ * (int64_t)e, a->value, e);
    });
}

void okpu_v5_k_conv2d(const okpu_v5_conv2d_args *args)
{
    const okpu_v5_conv2d_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    const uint32_t g_ic = a->ic / a->groups, g_oc = a->oc / a->groups;
    uint32_t b, o, oy, ox, c, ky, kx;
    for (b = 0; b < a->n; b++)
        for (o = 0; o < a->oc; o++) {
            const uint32_t g = o / g_oc;
            const float bias = ld_f32(a->bias + (int64_t)o * a->bias_stride * 4);
            for (oy = 0; oy < a->oh; oy++)
                for (ox = 0; ox < a->ow; ox++) {
                    float v = bias;
                    const int64_t y0 = (int64_t)oy * a->stride_h - a->pad_top;
                    const int64_t x0 = (int64_t)ox * a->stride_w - a->pad_left;
                    for (c = 0; c < g_ic; c++) {
                        const uint32_t ic = g * g_ic + c;
                        for (ky = 0; ky < a->kh; ky++) {
                            const int64_t y = y0 + (int64_t)ky * a->dil_h;
                            if (y < 0 || y >= (int64_t)a->ih)
                                continue;
                            for (kx = 0; kx < a->kw; kx++) {
                                const int64_t x = x0 + (int64_t)kx * a->dil_w;
                                float xv, wv, prod;
                                if (x < 0 || x >= (int64_t)a->iw)
                                    continue;
                                xv = ld_f32(a->src + 4 * ((int64_t)b * a->in_stride[0] + (int64_t)ic * a->in_stride[1] +
                                                          y * a->in_stride[2] + x * a->in_stride[3]));
                                wv = ld_f32(a->weights +
                                            4 * ((int64_t)o * a->w_stride[0] + (int64_t)c * a->w_stride[1] +
                                                 (int64_t)ky * a->w_stride[2] + (int64_t)kx * a->w_stride[3]));
                                prod = xv * wv;
                                v = v + prod;
                            }
                        }
                    }
                    v = v < a->clamp_lo ? a->clamp_lo : v > a->clamp_hi ? a->clamp_hi : v;
                    st_f32(a->dst + 4 * ((int64_t)b * a->out_stride[0] + (int64_t)o * a->out_stride[1] +
                                         (int64_t)oy * a->out_stride[2] + (int64_t)ox * a->out_stride[3]),
                           v);
                }
        }
}

static float clampf(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The taps k of a window starting at p0 (step d, f of them) that land in [0, n): [*lo, *hi). */
static void window_taps(int64_t p0, uint32_t d, uint32_t f, uint32_t n, uint32_t *lo, uint32_t *hi)
{
    const int64_t first = p0 >= 0 ? 0 : (-p0 + d - 1) / d;      /* smallest k with p0 + k * d >= 0 */
    const int64_t end = p0 >= (int64_t)n ? 0 : ((int64_t)n - 1 - p0) / d + 1; /* k with p0 + k * d <= n - 1 */
    *lo = (uint32_t)(first < (int64_t)f ? first : f);
    *hi = (uint32_t)(end < (int64_t)f ? end : f);
    *hi = *hi < *lo ? *lo : *hi;
}

void okpu_v5_k_window(const okpu_v5_window_args *args)
{
    const okpu_v5_window_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    uint32_t b, c, oy, ox, ky, kx, ky0, ky1, kx0, kx1;
    for (b = 0; b < a->n; b++)
        for (c = 0; c < a->c; c++) {
            const int64_t plane = (int64_t)b * a->in_stride[0] + (int64_t)c * a->in_stride[1];
            for (oy = 0; oy < a->oh; oy++) {
                const int64_t y0 = (int64_t)oy * a->sh - a->pad_top;
                window_taps(y0, a->dh, a->fh, a->ih, &ky0, &ky1);
                for (ox = 0; ox < a->ow; ox++) {
                    const int64_t x0 = (int64_t)ox * a->sw - a->pad_left;
                    float v = a->init;
                    window_taps(x0, a->dw, a->fw, a->iw, &kx0, &kx1);
                    /* the in-bounds taps in the same order as a tap-by-tap walk: the same float sums */
                    for (ky = ky0; ky < ky1; ky++) {
                        const int64_t row = plane + (y0 + (int64_t)ky * a->dh) * a->in_stride[2];
                        for (kx = kx0; kx < kx1; kx++) {
                            const float t = ld_f32(a->src + 4 * (row + (x0 + (int64_t)kx * a->dw) * a->in_stride[3]));
                            if (a->op == 0 || a->op == 3)
                                v = v + t;
                            else if (a->op == 1)
                                v = t < v ? t : v;
                            else
                                v = t > v ? t : v;
                        }
                    }
                    if (a->op == 0 && ky1 > ky0 && kx1 > kx0)
                        v = v / (float)((ky1 - ky0) * (kx1 - kx0));
                    st_f32(a->dst + 4 * ((int64_t)b * a->out_stride[0] + (int64_t)c * a->out_stride[1] +
                                         (int64_t)oy * a->out_stride[2] + (int64_t)ox * a->out_stride[3]),
                           clampf(v, a->clamp_lo, a->clamp_hi));
                }
            }
        }
}

void okpu_v5_k_reduce(const okpu_v5_reduce_args *args)
{
    const okpu_v5_reduce_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    /* min / max start from the type's extremes whatever init was pushed (nncase's reference kernel) */
    const float init = a->op == 1 ? 3.40282347e38f : a->op == 2 ? -3.40282347e38f : a->init;
    okpu_v5_nd out;
    uint32_t r;
    out = a->walk;
    for (r = 0; r < out.rank; r++)
        out.shape[r] = a->out_shape[r], out.out_stride[r] = a->out_stride[r];
    ND_WALK(&out, {
        (void)si_;
        st_f32(a->dst + di_ * 4, init);
    });
    ND_WALK(&a->walk, {
        uint8_t *o = a->dst + di_ * 4;
        const float x = ld_f32(a->src + si_ * 4), v = ld_f32(o);
        st_f32(o, a->op == 1 ? (x < v ? x : v) : a->op == 2 ? (x > v ? x : v) : v + x);
    });
    if (a->op == 0)
        ND_WALK(&out, {
            (void)si_;
            st_f32(a->dst + di_ * 4, ld_f32(a->dst + di_ * 4) / (float)a->count);
        });
}

void okpu_v5_k_softmax(const okpu_v5_softmax_args *args)
{
    const okpu_v5_softmax_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    if (a->len == 0u)
        return; /* an empty axis: no element to read or write (the other extents may be huge, the work counted 0) */
    ND_WALK(&a->nd, {
        const uint8_t *x = a->src + si_ * 4;
        uint8_t *y = a->dst + di_ * 4;
        float m = ld_f32(x), s = 0.0f;
        uint32_t i;
        for (i = 1; i < a->len; i++) {
            const float v = ld_f32(x + (int64_t)i * a->in_step * 4);
            m = v > m ? v : m;
        }
        for (i = 0; i < a->len; i++) {
            const float t = (ld_f32(x + (int64_t)i * a->in_step * 4) - m) * a->beta;
            const float e = okpu_expf(t);
            st_f32(y + (int64_t)i * a->out_step * 4, e);
            s = s + e;
        }
        for (i = 0; i < a->len; i++) {
            uint8_t *p = y + (int64_t)i * a->out_step * 4;
            st_f32(p, ld_f32(p) / s);
        }
    });
}

/* n elements along the last axis from a + ai, b + bi to dst + oi (steps sa, sb, so), the op chosen once. */
static void binary_run(const okpu_v5_binary_args *a, int64_t ai, int64_t bi, int64_t oi, uint32_t n, int64_t sa,
                       int64_t sb, int64_t so)
{
    const uint8_t *A = a->a, *B = a->b;
    uint8_t *D = a->dst;
    const float lo = a->clamp_lo, hi = a->clamp_hi;
    uint32_t i;
    /* The usual steps (dense, the other operand dense or one value) as constants: loops the compiler vectorizes, each
     * element's operation the same (YOLOX's input normalisation: 1.2 to 0.4 ns an element). */
#define BINARY_STEPS(SA, SB, SO, EXPR)                                                                                \
    for (i = 0; i < n; i++) {                                                                                         \
        const float x = ld_f32(A + (ai + (int64_t)i * (SA)) * 4), y = ld_f32(B + (bi + (int64_t)i * (SB)) * 4);       \
        st_f32(D + (oi + (int64_t)i * (SO)) * 4, clampf(EXPR, lo, hi));                                               \
    }
#define BINARY_RUN(EXPR)                                                                                              \
    if (sa == 1 && so == 1 && sb == 0)                                                                                \
        BINARY_STEPS(1, 0, 1, EXPR)                                                                                   \
    else if (sa == 1 && so == 1 && sb == 1)                                                                           \
        BINARY_STEPS(1, 1, 1, EXPR)                                                                                   \
    else if (sa == 0 && so == 1 && sb == 1)                                                                           \
        BINARY_STEPS(0, 1, 1, EXPR)                                                                                   \
    else                                                                                                              \
        BINARY_STEPS(sa, sb, so, EXPR)
    switch (a->op) {
    case 0: BINARY_RUN(x + y); break;
    case 1: BINARY_RUN(x - y); break;
    case 2: BINARY_RUN(x * y); break;
    case 3: BINARY_RUN(x / y); break;
    case 4: BINARY_RUN(x < y ? x : y); break;
    default: BINARY_RUN(x > y ? x : y); break;
    }
#undef BINARY_RUN
#undef BINARY_STEPS
}

void okpu_v5_k_binary(const okpu_v5_binary_args *args)
{
    const okpu_v5_binary_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    uint32_t idx[OKPU_V5_MAX_RANK] = {0}, r;
    const uint32_t last = a->rank ? a->rank - 1u : 0u, n = a->rank ? a->shape[last] : 1u;
    uint64_t outer = 1, o;
    int64_t ai = 0, bi = 0, oi = 0;
    for (r = 0; r < last; r++)
        outer *= a->shape[r];
    if (n == 0u)
        return; /* an empty output: nothing (as ND_WALK) */
    for (o = 0; o < outer; o++) {
        if (a->rank)
            binary_run(a, ai, bi, oi, n, a->a_stride[last], a->b_stride[last], a->out_stride[last]);
        else
            binary_run(a, 0, 0, 0, 1, 0, 0, 0);
        for (r = last; r-- > 0;) {
            ai += a->a_stride[r], bi += a->b_stride[r], oi += a->out_stride[r];
            if (++idx[r] < a->shape[r])
                break;
            ai -= (int64_t)a->a_stride[r] * a->shape[r];
            bi -= (int64_t)a->b_stride[r] * a->shape[r];
            oi -= (int64_t)a->out_stride[r] * a->shape[r];
            idx[r] = 0;
        }
    }
}

void okpu_v5_k_lut(const okpu_v5_lut_args *args)
{
    const okpu_v5_lut_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    ND_WALK(&a->nd, a->dst[di_] = a->table[a->src[si_]]);
}

static float resize_scale(uint32_t in, uint32_t out, uint32_t align_corners)
{
    return align_corners && out > 1u ? (float)(in - 1u) / (float)(out - 1u) : (float)in / (float)out;
}

static uint32_t nearest_src(uint32_t o, uint32_t in, float scale, const okpu_v5_resize_args *a)
{
    float s;
    int64_t i;
    if (a->align_corners)
        s = roundf((float)o * scale);
    else if (a->half_pixel)
        s = floorf(((float)o + 0.5f) * scale);
    else
        s = floorf((float)o * scale);
    i = (int64_t)s;
    return i < 0 ? 0u : i > (int64_t)in - 1 ? in - 1u : (uint32_t)i;
}

static void bilinear_src(uint32_t o, uint32_t in, float scale, uint32_t half_pixel, float *s, int64_t *i0, int64_t *i1)
{
    float f;
    *s = half_pixel ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
    f = floorf(*s);
    *i0 = f < 0.0f ? 0 : (int64_t)f;
    f = ceilf(*s);
    *i1 = f > (float)(in - 1u) ? (int64_t)in - 1 : (int64_t)f;
}

static float resize_at(const okpu_v5_resize_args *a, int64_t base, int64_t y, int64_t x)
{
    const int64_t off = base + y * a->in_stride[2] + x * a->in_stride[3];
    return a->is_u8 ? (float)a->src[off] : ld_f32(a->src + off * 4);
}

void okpu_v5_k_resize(const okpu_v5_resize_args *args)
{
    const okpu_v5_resize_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    const float hs = resize_scale(a->ih, a->oh, a->align_corners), ws = resize_scale(a->iw, a->ow, a->align_corners);
    uint32_t b, c, oy, ox;
    for (b = 0; b < a->n; b++)
        for (c = 0; c < a->c; c++) {
            const int64_t ib = (int64_t)b * a->in_stride[0] + (int64_t)c * a->in_stride[1];
            const int64_t ob = (int64_t)b * a->out_stride[0] + (int64_t)c * a->out_stride[1];
            for (oy = 0; oy < a->oh; oy++) {
                /* the row's source, once a row (the same values as per pixel) */
                const int64_t ny = a->nearest ? nearest_src(oy, a->ih, hs, a) : 0;
                float sy = 0.0f, fy = 0.0f;
                int64_t y0 = 0, y1 = 0;
                if (!a->nearest) {
                    bilinear_src(oy, a->ih, hs, a->half_pixel, &sy, &y0, &y1);
                    fy = sy - (float)y0;
                }
                for (ox = 0; ox < a->ow; ox++) {
                    const int64_t o = ob + (int64_t)oy * a->out_stride[2] + (int64_t)ox * a->out_stride[3];
                    float v;
                    if (a->nearest) {
                        v = resize_at(a, ib, ny, nearest_src(ox, a->iw, ws, a));
                    } else {
                        float sx, fx, a0, a1, a2, a3;
                        int64_t x0, x1;
                        bilinear_src(ox, a->iw, ws, a->half_pixel, &sx, &x0, &x1);
                        fx = sx - (float)x0;
                        a0 = (1.0f - fy) * (1.0f - fx);
                        a1 = fy * (1.0f - fx);
                        a2 = (1.0f - fy) * fx;
                        a3 = fy * fx;
                        v = resize_at(a, ib, y0, x0) * a0;
                        v = v + resize_at(a, ib, y1, x0) * a1;
                        v = v + resize_at(a, ib, y0, x1) * a2;
                        v = v + resize_at(a, ib, y1, x1) * a3;
                        if (a->is_u8)
                            v = v + 0.5f;
                    }
                    if (a->is_u8)
                        a->dst[o] = (uint8_t)(v <= 0.0f ? 0u : v >= 255.0f ? 255u : (uint32_t)v);
                    else
                        st_f32(a->dst + o * 4, v);
                }
            }
        }
}

void okpu_v5_k_matmul(const okpu_v5_matmul_args *args)
{
    const okpu_v5_matmul_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    uint32_t t, i, j, k;
    for (t = 0; t < a->batch; t++) {
        const uint8_t *A = a->a + (size_t)t * a->m * a->k * 4, *B = a->b + (size_t)t * a->b_step * 4;
        uint8_t *O = a->dst + (size_t)t * a->m * a->n * 4;
        for (i = 0; i < a->m; i++)
            for (j = 0; j < a->n; j++) {
                float v = ld_f32(a->bias + (size_t)j * 4);
                for (k = 0; k < a->k; k++) {
                    const float prod = ld_f32(A + ((size_t)i * a->k + k) * 4) * ld_f32(B + ((size_t)k * a->n + j) * 4);
                    v = v + prod;
                }
                st_f32(O + ((size_t)i * a->n + j) * 4, clampf(v, a->clamp_lo, a->clamp_hi));
            }
    }
}

static inline double cv_load(const uint8_t *p, uint32_t dt)
{
    switch (dt) {
    case 0: return (double)(int8_t)p[0];
    case 1: { int16_t v; memcpy(&v, p, 2); return (double)v; }
    case 2: { int32_t v; memcpy(&v, p, 4); return (double)v; }
    case 4: return (double)p[0];
    case 5: { uint16_t v; memcpy(&v, p, 2); return (double)v; }
    case 6: { uint32_t v; memcpy(&v, p, 4); return (double)v; }
    default: return (double)ld_f32(p);
    }
}

static double sat(double v, double lo, double hi)
{
    return v != v ? 0.0 : v < lo ? lo : v > hi ? hi : v;
}

static inline void cv_store(uint8_t *p, uint32_t dt, double v)
{
    /* integer targets: truncate toward zero as the C cast does, saturating where the cast would be undefined */
    switch (dt) {
    case 0: { int8_t x = (int8_t)sat(v, -128.0, 127.0); memcpy(p, &x, 1); break; }
    case 1: { int16_t x = (int16_t)sat(v, -32768.0, 32767.0); memcpy(p, &x, 2); break; }
    case 2: { int32_t x = (int32_t)sat(v, -2147483648.0, 2147483647.0); memcpy(p, &x, 4); break; }
    case 4: p[0] = (uint8_t)sat(v, 0.0, 255.0); break;
    case 5: { uint16_t x = (uint16_t)sat(v, 0.0, 65535.0); memcpy(p, &x, 2); break; }
    case 6: { uint32_t x = (uint32_t)sat(v, 0.0, 4294967295.0); memcpy(p, &x, 4); break; }
    default: st_f32(p, (float)v); break;
    }
}

uint32_t okpu_v5_convert_bytes(uint32_t dt)
{
    static const uint8_t size[10] = {1, 2, 4, 0, 1, 2, 4, 0, 0, 4};
    return dt < 10u ? size[dt] : 0u;
}

void okpu_v5_k_convert(const okpu_v5_convert_args *args)
{
    const okpu_v5_convert_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    const int64_t ie = okpu_v5_convert_bytes(a->in_dt), oe = okpu_v5_convert_bytes(a->out_dt);

    if (a->in_dt == a->out_dt) {
        /* the identity, as nncase's static_cast to the same type: the elements' bytes (YOLOX's f32 input, 150k
         * elements, went from 1.8 to 0.2 ns an element; a signalling NaN now stays one) */
        okpu_v5_copy_args c;
        c.src = a->src;
        c.dst = a->dst;
        c.esize = (uint32_t)ie;
        c.nd = a->nd;
        okpu_v5_k_copy(&c);
        return;
    }
    /* u8 to f32 (an image input) with the types constant, so that cv_load's and cv_store's switches fold: 1M elements
     * 1.9 to 0.8-1.4 ms. f32 to u8 so specialised measured within noise, and walks as the other pairs do. */
#define CONVERT_WALK(IN, OUT) ND_WALK(&a->nd, cv_store(a->dst + di_ * oe, OUT, cv_load(a->src + si_ * ie, IN)))
    if (a->in_dt == OKPU_V5_DT_U8 && a->out_dt == OKPU_V5_DT_F32)
        CONVERT_WALK(OKPU_V5_DT_U8, OKPU_V5_DT_F32);
    else
        CONVERT_WALK(a->in_dt, a->out_dt);
#undef CONVERT_WALK
}

static float unary(uint32_t op, float x)
{
    switch (op) {
    case OKPU_V5_UN_ABS:
        return (float)fabs((double)x);
    case OKPU_V5_UN_ACOS:
        return (float)acos((double)x);
    case OKPU_V5_UN_ASIN:
        return (float)asin((double)x);
    case OKPU_V5_UN_CEIL:
        return (float)ceil((double)x);
    case OKPU_V5_UN_COS:
        return okpu_cosf(x);
    case OKPU_V5_UN_EXP:
        return okpu_expf(x);
    case OKPU_V5_UN_FLOOR:
        return (float)floor((double)x);
    case OKPU_V5_UN_LOG:
        return okpu_logf(x);
    case OKPU_V5_UN_NEG:
        return -x;
    case OKPU_V5_UN_ROUND: /* rintf: half to even */
        return round_even(x);
    case OKPU_V5_UN_RSQRT: /* 1 / sqrtf(x): two roundings */
        return 1.0f / (float)sqrt((double)x);
    case OKPU_V5_UN_SIGN:
        return (float)((x > 0.0f) - (x < 0.0f));
    case OKPU_V5_UN_SIN:
        return okpu_sinf(x);
    case OKPU_V5_UN_SQRT:
        return (float)sqrt((double)x);
    case OKPU_V5_UN_SQUARE:
        return x * x;
    case OKPU_V5_UN_TANH:
        return (float)tanh((double)x);
    case OKPU_V5_UN_ERF:
        return (float)erf((double)x);
    default: /* OKPU_V5_UN_SIGMOID: 1 / (1 + expf(-x)), each operation rounded */
        return 1.0f / (1.0f + okpu_expf(-x));
    }
}

void okpu_v5_k_unary(const okpu_v5_unary_args *args)
{
    const okpu_v5_unary_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    ND_WALK(&a->nd, st_f32(a->dst + di_ * 4, unary(a->op, ld_f32(a->src + si_ * 4))));
}

void okpu_v5_k_arg(const okpu_v5_arg_args *args)
{
    const okpu_v5_arg_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    ND_WALK(&a->nd, {
        const uint8_t *x = a->src + si_ * 4;
        float best = ld_f32(x);
        int64_t at = 0;
        uint32_t i;
        for (i = 1; i < a->len; i++) {
            const float v = ld_f32(x + (int64_t)i * a->in_step * 4);
            const int better = a->arg_max ? (a->select_last ? v >= best : v > best)
                                          : (a->select_last ? v <= best : v < best);
            if (better)
                best = v, at = (int64_t)i;
        }
        if (a->out_i64) {
            memcpy(a->dst + di_ * 8, &at, 8);
        } else {
            const int32_t at32 = (int32_t)at;
            memcpy(a->dst + di_ * 4, &at32, 4);
        }
    });
}

int okpu_v5_k_gather(const okpu_v5_gather_args *args, int64_t *bad)
{
    const okpu_v5_gather_args local = *args, *a = &local; /* (see KERNEL_ARGS) */
    const size_t e = a->esize;
    int rc = 0;
    ND_WALK(&a->nd, {
        int64_t src = 0, at = 0;
        int32_t k;
        uint32_t d;
        (void)si_;
        for (d = 0; d < a->idx_rank; d++) /* the indices tensor is dense */
            at = at * a->nd.shape[a->axis + d] + idx_[a->axis + d];
        memcpy(&k, a->indices + at * 4, 4);
        if (k < 0 || (uint32_t)k >= a->axis_dim) {
            *bad = k;
            rc = -1;
            break;
        }
        for (d = 0; d < a->axis; d++)
            src += (int64_t)idx_[d] * a->in_stride[d];
        src += (int64_t)k * a->in_stride[a->axis];
        for (d = a->axis + 1; d < a->in_rank; d++)
            src += (int64_t)idx_[d - 1 + a->idx_rank] * a->in_stride[d];
        memcpy(a->dst + di_ * (int64_t)e, a->src + src * (int64_t)e, e);
    });
    return rc;
}

// SPDX-License-Identifier: Apache-2.0
/* kmodel v3 (nncase v0.1.x, Maix-EMC): the front-end that turns a v3 file into the execution plan (plan/plan.h).
 *
 * File layout: docs/kpu-reference.md section 2. Every layer type is listed once, in kmodel_v3_ops.def (id, name,
 * minimum body size, decode function); the type enum, the dispatch table, the names and the list of known types in
 * messages all come from it.
 *
 * read_header checks the 28-byte header; decode then walks the layers once: each decode function validates its body
 * (every main-buffer range against main_mem_usage, every KPU region against the 2 MiB KPU RAM, every weight/table
 * pointer against the layer's body and the file) and gives the layer one step with every pointer resolved. Running
 * is then the generic runner's business (model.c); nothing of this file is used after load.
 *
 * Body field orders: SDK lib/drivers/include/kpu.h (kpu_model_*_layer_argument_t) for every type it defines;
 * QUANTIZED_FULLY_CONNECTED (19) has no struct in the SDK, nncase v0.1 or Maix-EMC, so its body is openkpu's own
 * definition (see dec_qfc). Quantized pool semantics: see kernels/pool.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../core/arith.h"
#include "../core/bytes.h"
#include "../core/checked.h"
#include "../core/error.h"
#include "../kernels/kernels.h"
#include "../kpu/kpu_args.h"
#include "../kpu/kpu_layout.h"
#include "model.h"

#define V3_HEADER_BYTES 28u
#define V3_MAIN_MEM_OUT 1u
#define V3_MAX_TAIL_PAD 7u /* the last body's alignment padding is never written */

enum {
#define V3_OP(id, e, name, min_body, dec) V3_##e = id,
#include "kmodel_v3_ops.def"
#undef V3_OP
};

/* What a layer writes into the main buffer, kept only while decoding: the header's outputs take their dtype from
 * the last layer writing there, and an elementwise layer takes its shape from the layer before it. */
typedef struct v3_written {
    uint32_t off, size;
    uint8_t valid, u8;
} v3_written;

/* Decoding context of one layer. */
typedef struct v3_ctx {
    okpu_model *m;
    int idx;
    okpu_layer *L;
    const char *name;
    const uint8_t *body;
    uint32_t boff;  /* absolute file offset of the body */
    uint32_t avail; /* body bytes actually inside the file */
    v3_written *wr; /* one per layer, for the whole walk */
    okpu_error *err;
} v3_ctx;

typedef struct v3_op {
    uint32_t type;
    const char *name;
    uint32_t min_body; /* bytes of fixed fields */
    int (*decode)(v3_ctx *c);
} v3_op;

/* ---- decode helpers ---- */

static uint32_t fld(const v3_ctx *c, unsigned i)
{
    return okpu_rd_u32(c->body + 4u * i);
}

static int32_t fldi(const v3_ctx *c, unsigned i)
{
    return okpu_rd_i32(c->body + 4u * i);
}

static float fldf(const v3_ctx *c, unsigned i)
{
    return okpu_rd_f32(c->body + 4u * i);
}

#if !(defined(OKPU_ERROR_TERSE) && OKPU_ERROR_TERSE)
static int OKPU_PRINTF(4, 5) bad(const v3_ctx *c, int code, uint64_t abs_off, const char *fmt, ...)
{
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return okpu_fail(c->err, code, c->idx, (long)abs_off, "layer %d (%s) body at byte %lu: %s", c->idx, c->name,
                     (unsigned long)c->boff, buf);
}
#else
#define bad(c, code, abs_off, ...) okpu_fail_terse((c)->err, (code), (c)->idx, (long)(abs_off))
#endif

/* Main-buffer range named by field `fi` of the body. */
static int main_rng(const v3_ctx *c, unsigned fi, const char *what, uint64_t off, uint64_t size)
{
    return okpu_model_check_main(c->m, c->idx, (long)(c->boff + 4u * fi), what, off, size, c->err);
}

/* [abs, abs+size) must be inside this layer's body and inside the file. */
static int body_rng(const v3_ctx *c, const char *what, uint64_t abs, uint64_t size)
{
    uint64_t bend = (uint64_t)c->boff + c->L->body_size, fsize = c->m->size;
    if (abs > fsize || size > fsize - abs)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, abs,
                   "%s at byte %llu + %llu bytes ends past the end of the file (%llu bytes); the file is truncated "
                   "or corrupt — copy it again",
                   what, (unsigned long long)abs, (unsigned long long)size, (unsigned long long)fsize);
    if (abs < c->boff || abs > bend || size > bend - abs)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, abs,
                   "%s at byte %llu + %llu bytes lies outside the layer's body [%lu, %llu); the file is corrupt or "
                   "was written by an incompatible compiler — copy it again or recompile",
                   what, (unsigned long long)abs, (unsigned long long)size, (unsigned long)c->boff,
                   (unsigned long long)bend);
    return OKPU_OK;
}

/* The variable part that follows the fixed fields: `size` bytes at body offset `rel`. */
static int tail_rng(const v3_ctx *c, const char *what, uint64_t rel, uint64_t size)
{
    return body_rng(c, what, (uint64_t)c->boff + rel, size);
}

/* The layer writes a ch x h x w map (planar, n = 1) of `dt` at main-buffer offset `off`; the range was checked. */
static void set_out_shape(v3_ctx *c, okpu_dtype dt, uint32_t off, uint32_t ch, uint32_t h, uint32_t w)
{
    okpu_layer *L = c->L;
    uint32_t esz = dt == OKPU_DTYPE_F32 ? 4u : 1u;
    L->out.mem = OKPU_MEM_MAIN;
    L->out.offset = off;
    L->out.t.dtype = dt;
    L->out.t.n = 1;
    L->out.t.c = ch;
    L->out.t.h = h;
    L->out.t.w = w;
    L->out.t.bytes = ch * h * w * esz;
    c->wr[c->idx].valid = 1;
    c->wr[c->idx].u8 = dt == OKPU_DTYPE_U8;
    c->wr[c->idx].off = off;
    c->wr[c->idx].size = L->out.t.bytes;
}

/* A flat vector of `count` values. */
static void set_out(v3_ctx *c, okpu_dtype dt, uint32_t off, uint64_t count)
{
    set_out_shape(c, dt, off, 1, 1, (uint32_t)count);
}

/* An elementwise layer reading `count` values at `in`: when the layer just before it wrote exactly those values, the
 * output keeps that layer's shape (a DEQUANTIZE after a KPU convolution is still its w x h x c map); else flat. */
static void set_out_like_input(v3_ctx *c, okpu_dtype dt, uint32_t off, uint32_t in, uint32_t count)
{
    if (c->idx > 0 && c->wr[c->idx - 1].valid && c->wr[c->idx - 1].off == in) {
        const okpu_tensor *p = &c->m->layers[c->idx - 1].out.t;
        if ((uint64_t)p->c * p->h * p->w == count) {
            set_out_shape(c, dt, off, p->c, p->h, p->w);
            return;
        }
    }
    set_out(c, dt, off, count);
}

static void set_map(okpu_layer *L, uint32_t row, uint32_t w, uint32_t h, uint32_t ch)
{
    L->out.mem = OKPU_MEM_KPU;
    L->out.offset = row;
    L->out.t.dtype = OKPU_DTYPE_U8;
    L->out.t.n = 1;
    L->out.t.c = ch;
    L->out.t.h = h;
    L->out.t.w = w;
    L->out.t.bytes = w * h * ch;
}

/* A region of KPU RAM [row, row + rows) must fit in the 32768 rows. */
static int kpu_rng(const v3_ctx *c, unsigned fi, const char *what, uint32_t row, uint64_t rows)
{
    if (row < OKPU_KPU_RAM_ROWS && rows <= OKPU_KPU_RAM_ROWS - row)
        return OKPU_OK;
    return bad(c, OKPU_ERR_KMODEL_FORMAT, (uint64_t)c->boff + 4u * fi,
               "%s at KPU row %lu spans %llu rows, past the end of the 2 MiB KPU RAM (%u rows of 64 bytes); the "
               "file is corrupt",
               what, (unsigned long)row, (unsigned long long)rows, OKPU_KPU_RAM_ROWS);
}

static int check_shift(const v3_ctx *c, unsigned fi, const char *what, int32_t v)
{
    if (v >= 0 && (uint32_t)v <= OKPU_SHIFT_MAX) /* the one range of core/arith.h */
        return OKPU_OK;
    return bad(c, OKPU_ERR_KMODEL_FORMAT, (uint64_t)c->boff + 4u * fi,
               "%s is %ld, expected 0..%u; the file is corrupt", what, (long)v, OKPU_SHIFT_MAX);
}


/* e * a * b * d from 32-bit fields (`what` named by field `fi`), refused when it exceeds any size a model can have:
 * unchecked, 2^31 * 2^31 * 4 wraps to 0 and a 0-byte range passes the main-buffer check. */
static int size4(const v3_ctx *c, unsigned fi, const char *what, uint64_t e, uint64_t a, uint64_t b, uint64_t d,
                 uint64_t *out)
{
    if (!okpu_mul4(e, a, b, d, OKPU_SIZE_LIMIT, out))
        return OKPU_OK;
    return bad(c, OKPU_ERR_KMODEL_FORMAT, (uint64_t)c->boff + 4u * fi,
               "%s of %llu x %llu x %llu elements of %llu bytes exceeds %llu bytes (more than any K210 memory); the "
               "file is corrupt",
               what, (unsigned long long)a, (unsigned long long)b, (unsigned long long)d, (unsigned long long)e,
               (unsigned long long)OKPU_SIZE_LIMIT);
}

/* Every dimension the kernel loops over must be >= 1: a zero makes the range empty while the outer loops still
 * run (a 0-channel flatten of 2^32 x 2^32 pixels passes every size check and never ends). */
static int nonzero(const v3_ctx *c, unsigned fi, const char *what, uint32_t a, uint32_t b, uint32_t d)
{
    if (a && b && d)
        return OKPU_OK;
    return bad(c, OKPU_ERR_KMODEL_FORMAT, (uint64_t)c->boff + 4u * fi,
               "%s %lux%lux%lu has a zero dimension; expected every dimension >= 1", what, (unsigned long)a,
               (unsigned long)b, (unsigned long)d);
}

/* Input and output ranges of a kernel that is not written to work in place must not share a byte: its element
 * copies (memcpy) and multi-pass reads would read what it already overwrote, and memcpy of overlapping bytes is
 * undefined behaviour. */
static int disjoint(const v3_ctx *c, unsigned fi, const char *what, uint64_t in, uint64_t in_n, uint64_t out,
                    uint64_t out_n)
{
    if (!okpu_ranges_overlap(in, in_n, out, out_n))
        return OKPU_OK;
    return bad(c, OKPU_ERR_KMODEL_FORMAT, (uint64_t)c->boff + 4u * fi,
               "%s [%llu, %llu) overlaps the output [%llu, %llu) in the main buffer; this layer cannot work in "
               "place - the file is corrupt or was written by an incompatible compiler, recompile it",
               what, (unsigned long long)in, (unsigned long long)(in + in_n), (unsigned long long)out,
               (unsigned long long)(out + out_n));
}

/* The layer's work (elements touched or multiply-accumulates), for the model's work budget (model.c). */
static void set_work(v3_ctx *c, uint64_t work)
{
    c->L->info.work = work;
}

/* The layer's step: zeroed arguments of `kind`, or NULL with the error set. */
static void *new_step(v3_ctx *c, okpu_step_kind kind)
{
    return okpu_model_add_step(c->m, c->idx, kind, 0, c->err);
}

/* `type *var` = the layer's new step of `kind`; returns the error from the decode function when it cannot exist. */
#define STEP(type, var, kind)                                                                                   \
    type *var = (type *)new_step(c, kind);                                                                      \
    if (!var)                                                                                                   \
        return c->err ? c->err->code : OKPU_ERR_NO_MEM

#define MAIN(off) OKPU_MAIN(c->m, off)

/* ---- decode functions (one per body layout): validate, then fill the step ---- */

/* ADD: flags, in_a, in_b, out, count (float). */
static int dec_add(v3_ctx *c)
{
    uint32_t in = fld(c, 1), in_b = fld(c, 2), out = fld(c, 3), count = fld(c, 4);
    OKPU_TRY(main_rng(c, 1, "input a", in, 4ull * count));
    OKPU_TRY(main_rng(c, 2, "input b", in_b, 4ull * count));
    OKPU_TRY(main_rng(c, 3, "output", out, 4ull * count));
    {
        STEP(okpu_cpu_add_args, a, OKPU_STEP_ADD_F32);
        a->a = MAIN(in), a->b = MAIN(in_b), a->out = MAIN(out), a->count = count;
    }
    set_out_like_input(c, OKPU_DTYPE_F32, out, in, count);
    set_work(c, count);
    return OKPU_OK;
}

/* QUANTIZED_ADD: flags, in_a, in_b, out, count, a_off, a_mul, a_shift, b_off, b_mul, b_shift, o_off, o_mul, o_shift */
static int dec_qadd(v3_ctx *c)
{
    uint32_t in = fld(c, 1), in_b = fld(c, 2), out = fld(c, 3), count = fld(c, 4);
    okpu_qadd_params p;
    p.a_offset = fldi(c, 5), p.a_mul = fldi(c, 6), p.a_shift = fldi(c, 7);
    p.b_offset = fldi(c, 8), p.b_mul = fldi(c, 9), p.b_shift = fldi(c, 10);
    p.out_offset = fldi(c, 11), p.out_mul = fldi(c, 12), p.out_shift = fldi(c, 13);
    OKPU_TRY(check_shift(c, 7, "in_a_shift", p.a_shift));
    OKPU_TRY(check_shift(c, 10, "in_b_shift", p.b_shift));
    OKPU_TRY(check_shift(c, 13, "out_shift", p.out_shift));
    OKPU_TRY(main_rng(c, 1, "input a", in, count));
    OKPU_TRY(main_rng(c, 2, "input b", in_b, count));
    OKPU_TRY(main_rng(c, 3, "output", out, count));
    {
        STEP(okpu_cpu_quant_add_args, a, OKPU_STEP_QUANT_ADD_U8);
        a->a = MAIN(in), a->b = MAIN(in_b), a->out = MAIN(out), a->count = count;
        a->p = p;
        a->round = c->m->opts.v3_quant_round;
    }
    set_out_like_input(c, OKPU_DTYPE_U8, out, in, count);
    set_work(c, count);
    return OKPU_OK;
}

/* GLOBAL_(MAX|AVERAGE)_POOL2D and quantized: flags, in, out, kernel_size, channels. */
static int dec_gpool(v3_ctx *c)
{
    uint32_t type = c->L->type;
    int f32 = type == V3_GLOBAL_MAX_POOL2D || type == V3_GLOBAL_AVERAGE_POOL2D;
    uint64_t e = f32 ? 4u : 1u, in_n;
    uint32_t in = fld(c, 1), out = fld(c, 2), kernel_size = fld(c, 3), channels = fld(c, 4);
    if (kernel_size == 0 && channels != 0)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 12u, "kernel_size is 0 for %lu channels; expected H*W >= 1",
                   (unsigned long)channels);
    OKPU_TRY(size4(c, 3, "input", e, kernel_size, channels, 1, &in_n));
    OKPU_TRY(main_rng(c, 1, "input", in, in_n));
    OKPU_TRY(main_rng(c, 2, "output", out, e * channels));
    OKPU_TRY(disjoint(c, 1, "input", in, in_n, out, e * channels));
    {
        STEP(okpu_cpu_global_pool_args, a,
             type == V3_GLOBAL_MAX_POOL2D             ? OKPU_STEP_GLOBAL_MAX_F32
             : type == V3_GLOBAL_AVERAGE_POOL2D       ? OKPU_STEP_GLOBAL_AVG_F32
             : type == V3_QUANTIZED_GLOBAL_MAX_POOL2D ? OKPU_STEP_GLOBAL_MAX_U8
                                                      : OKPU_STEP_GLOBAL_AVG_U8);
        a->in = MAIN(in), a->out = MAIN(out), a->kernel_size = kernel_size, a->channels = channels;
    }
    set_work(c, in_n / e);
    set_out_shape(c, f32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, out, channels, 1, 1); /* one value per channel */
    return OKPU_OK;
}

/* (QUANTIZED_)MAX/AVERAGE_POOL2D: flags, in, out, in{w,h,c}, out{w,h,c}, kw, kh, sw, sh, pw, ph[, act]. */
static int dec_pool(v3_ctx *c)
{
    uint32_t type = c->L->type;
    int f32 = type == V3_MAX_POOL2D || type == V3_AVERAGE_POOL2D;
    uint64_t e = f32 ? 4u : 1u;
    okpu_pool2d_params p;
    uint32_t in = fld(c, 1), out = fld(c, 2), act;
    p.in_w = fld(c, 3), p.in_h = fld(c, 4), p.in_c = fld(c, 5);
    p.out_w = fld(c, 6), p.out_h = fld(c, 7), p.out_c = fld(c, 8);
    p.kernel_w = fld(c, 9), p.kernel_h = fld(c, 10), p.stride_w = fld(c, 11), p.stride_h = fld(c, 12);
    p.pad_w = fld(c, 13), p.pad_h = fld(c, 14);
    act = f32 ? fld(c, 15) : 0;
    if (p.out_c > p.in_c)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 32u,
                   "output has %lu channels but the input only %lu; expected equal channel counts",
                   (unsigned long)p.out_c, (unsigned long)p.in_c);
    if (!p.kernel_w || !p.kernel_h || !p.stride_w || !p.stride_h)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 36u,
                   "kernel %lux%lu stride %lux%lu: kernel and stride must be >= 1", (unsigned long)p.kernel_w,
                   (unsigned long)p.kernel_h, (unsigned long)p.stride_w, (unsigned long)p.stride_h);
    if (p.pad_w >= p.kernel_w || p.pad_h >= p.kernel_h)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 52u,
                   "padding %lux%lu is not smaller than the kernel %lux%lu", (unsigned long)p.pad_w,
                   (unsigned long)p.pad_h, (unsigned long)p.kernel_w, (unsigned long)p.kernel_h);
    OKPU_TRY(nonzero(c, 3, "input", p.in_w, p.in_h, p.in_c));
    OKPU_TRY(nonzero(c, 6, "output", p.out_w, p.out_h, p.out_c));
    {
        uint64_t in_n, out_n, taps;
        OKPU_TRY(size4(c, 3, "input", e, p.in_w, p.in_h, p.in_c, &in_n));
        OKPU_TRY(size4(c, 6, "output", e, p.out_w, p.out_h, p.out_c, &out_n));
        OKPU_TRY(main_rng(c, 1, "input", in, in_n));
        OKPU_TRY(main_rng(c, 2, "output", out, out_n));
        OKPU_TRY(disjoint(c, 1, "input", in, in_n, out, out_n));
        taps = (uint64_t)(p.kernel_w < p.in_w ? p.kernel_w : p.in_w) *
               (p.kernel_h < p.in_h ? p.kernel_h : p.in_h); /* in-range taps per output, at most */
        set_work(c, okpu_sat_mul(out_n / e, taps));
    }
    {
        STEP(okpu_cpu_pool_args, a,
             type == V3_MAX_POOL2D             ? OKPU_STEP_MAX_POOL_F32
             : type == V3_AVERAGE_POOL2D       ? OKPU_STEP_AVG_POOL_F32
             : type == V3_QUANTIZED_MAX_POOL2D ? OKPU_STEP_MAX_POOL_U8
                                               : OKPU_STEP_AVG_POOL_U8);
        a->in = MAIN(in), a->out = MAIN(out), a->p = p, a->act = act;
        c->L->info.wi = p.in_w, c->L->info.hi = p.in_h, c->L->info.chi = p.in_c;
        c->L->info.wo = p.out_w, c->L->info.ho = p.out_h, c->L->info.cho = p.out_c;
        c->L->info.kernel_w = p.kernel_w, c->L->info.kernel_h = p.kernel_h;
        c->L->info.stride_w = p.stride_w, c->L->info.stride_h = p.stride_h;
    }
    set_out_shape(c, f32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, out, p.out_c, p.out_h, p.out_w);
    return OKPU_OK;
}

/* QUANTIZE / DEQUANTIZE: flags, in, out, count, f32 scale, f32 bias. */
static int dec_quant(v3_ctx *c)
{
    int q = c->L->type == V3_QUANTIZE;
    uint32_t in = fld(c, 1), out = fld(c, 2), count = fld(c, 3);
    OKPU_TRY(main_rng(c, 1, "input", in, (q ? 4ull : 1ull) * count));
    OKPU_TRY(main_rng(c, 2, "output", out, (q ? 1ull : 4ull) * count));
    {
        STEP(okpu_cpu_quant_args, a, q ? OKPU_STEP_QUANTIZE : OKPU_STEP_DEQUANTIZE);
        a->in = MAIN(in), a->out = MAIN(out), a->count = count, a->scale = fldf(c, 4), a->bias = fldf(c, 5);
    }
    set_out_like_input(c, q ? OKPU_DTYPE_U8 : OKPU_DTYPE_F32, out, in, count);
    set_work(c, count);
    return OKPU_OK;
}

/* REQUANTIZE: flags, in, out, count, u8 table[256] (inside the minimum body). */
static int dec_requant(v3_ctx *c)
{
    uint32_t in = fld(c, 1), out = fld(c, 2), count = fld(c, 3);
    OKPU_TRY(main_rng(c, 1, "input", in, count));
    OKPU_TRY(main_rng(c, 2, "output", out, count));
    {
        STEP(okpu_cpu_requant_args, a, OKPU_STEP_REQUANTIZE);
        a->in = MAIN(in), a->out = MAIN(out), a->table = c->body + 16, a->count = count;
    }
    set_out_like_input(c, OKPU_DTYPE_U8, out, in, count);
    set_work(c, count);
    return OKPU_OK;
}

/* L2_NORMALIZATION / SOFTMAX / LOGISTIC: flags, in, out, channels (float). */
static int dec_vec(v3_ctx *c)
{
    uint32_t type = c->L->type;
    uint32_t in = fld(c, 1), out = fld(c, 2), count = fld(c, 3);
    OKPU_TRY(main_rng(c, 1, "input", in, 4ull * count));
    OKPU_TRY(main_rng(c, 2, "output", out, 4ull * count));
    {
        STEP(okpu_cpu_unary_args, a,
             type == V3_SOFTMAX            ? OKPU_STEP_SOFTMAX_F32
             : type == V3_L2_NORMALIZATION ? OKPU_STEP_L2_NORMALIZE_F32
                                           : OKPU_STEP_LOGISTIC_F32);
        a->in = MAIN(in), a->out = MAIN(out), a->count = count;
    }
    if (type == V3_LOGISTIC) /* elementwise; softmax and l2 normalise the vector as a whole */
        set_out_like_input(c, OKPU_DTYPE_F32, out, in, count);
    else
        set_out(c, OKPU_DTYPE_F32, out, count);
    set_work(c, 3ull * count); /* softmax / l2: a pass for the max or norm, one for the sum, one to write */
    return OKPU_OK;
}

/* (QUANTIZED_)CONCAT: flags, out, input_count, then {start, size} x input_count. The step reads the ranges from the
 * file, each checked here. */
static int dec_concat(v3_ctx *c)
{
    uint32_t i, out = fld(c, 1), count = fld(c, 2);
    const uint8_t *ranges = c->body + 12;
    uint64_t total = 0;
    OKPU_TRY(tail_rng(c, "input range table", 12, 8ull * count));
    for (i = 0; i < count; i++) {
        uint32_t start = okpu_rd_u32(ranges + 8u * i), size = okpu_rd_u32(ranges + 8u * i + 4u);
        OKPU_TRY(okpu_model_check_main(c->m, c->idx, (long)(c->boff + 12u + 8u * i), "concat input", start, size,
                                       c->err));
        total += size; /* < 2^32 inputs of < 2^32 bytes each: no 64-bit wrap */
    }
    OKPU_TRY(main_rng(c, 1, "output", out, total));
    for (i = 0; i < count; i++)
        OKPU_TRY(disjoint(c, 1, "concat input", okpu_rd_u32(ranges + 8u * i), okpu_rd_u32(ranges + 8u * i + 4u), out,
                          total));
    {
        STEP(okpu_cpu_concat_args, a, OKPU_STEP_CONCAT);
        a->main = c->m->main_mem, a->out = MAIN(out), a->ranges = ranges, a->count = count;
    }
    set_work(c, total + count);
    if (c->L->type == V3_CONCAT)
        set_out(c, OKPU_DTYPE_F32, out, total / 4u);
    else
        set_out(c, OKPU_DTYPE_U8, out, total);
    c->wr[c->idx].size = (uint32_t)total; /* every byte written, also a float concat's odd tail */
    return OKPU_OK;
}

/* FULLY_CONNECTED: flags, in, out, in_channels, out_channels, act, f32 weights[out][in], f32 bias[out]. */
static int dec_fc(v3_ctx *c)
{
    uint64_t wbytes;
    uint32_t in = fld(c, 1), out = fld(c, 2), in_ch = fld(c, 3), out_ch = fld(c, 4), act = fld(c, 5);
    if (act > 2)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 20u, "activation %lu is unknown; expected 0 (linear), "
                   "1 (relu) or 2 (relu6)", (unsigned long)act);
    OKPU_TRY(size4(c, 3, "weights", 4, in_ch, out_ch, 1, &wbytes));
    OKPU_TRY(tail_rng(c, "weights", 24, wbytes));
    OKPU_TRY(tail_rng(c, "bias", 24 + wbytes, 4ull * out_ch));
    OKPU_TRY(main_rng(c, 1, "input", in, 4ull * in_ch));
    OKPU_TRY(main_rng(c, 2, "output", out, 4ull * out_ch));
    OKPU_TRY(disjoint(c, 1, "input", in, 4ull * in_ch, out, 4ull * out_ch));
    {
        STEP(okpu_cpu_fc_args, a, OKPU_STEP_FC_F32);
        a->in = MAIN(in), a->out = MAIN(out), a->weights = c->body + 24, a->bias = c->body + 24 + wbytes;
        a->in_ch = in_ch, a->out_ch = out_ch, a->act = act;
    }
    set_out(c, OKPU_DTYPE_F32, out, out_ch);
    set_work(c, wbytes / 4u + out_ch);
    return OKPU_OK;
}

/* QUANTIZED_FULLY_CONNECTED: the type id exists in the SDK's enum, but no public writer or runtime defines its
 * body. openkpu reads it as the v3 analogue of nncase v0.2's quantized_matmul: flags, in, out, in_channels,
 * out_channels, i32 input_offset, i32 weights_offset, i32 output_mul, i32 output_shift, i32 output_offset,
 * u8 weights[out][in], i32 bias[out]. */
static int dec_qfc(v3_ctx *c)
{
    uint64_t wbytes;
    uint32_t in = fld(c, 1), out = fld(c, 2), in_ch = fld(c, 3), out_ch = fld(c, 4);
    okpu_qfc_params p;
    p.input_offset = fldi(c, 5), p.weight_offset = fldi(c, 6);
    p.output_mul = fldi(c, 7), p.output_shift = fldi(c, 8), p.output_offset = fldi(c, 9);
    OKPU_TRY(check_shift(c, 8, "output_shift", p.output_shift));
    OKPU_TRY(size4(c, 3, "weights", 1, in_ch, out_ch, 1, &wbytes));
    OKPU_TRY(tail_rng(c, "weights", 40, wbytes));
    OKPU_TRY(tail_rng(c, "bias", 40 + wbytes, 4ull * out_ch));
    OKPU_TRY(main_rng(c, 1, "input", in, in_ch));
    OKPU_TRY(main_rng(c, 2, "output", out, out_ch));
    OKPU_TRY(disjoint(c, 1, "input", in, in_ch, out, out_ch));
    {
        STEP(okpu_cpu_quant_fc_args, a, OKPU_STEP_FC_U8);
        a->in = MAIN(in), a->out = MAIN(out), a->weights = c->body + 40, a->bias = c->body + 40 + wbytes;
        a->in_ch = in_ch, a->out_ch = out_ch, a->p = p;
        a->round = c->m->opts.v3_quant_round;
    }
    set_out(c, OKPU_DTYPE_U8, out, out_ch);
    set_work(c, wbytes + out_ch);
    return OKPU_OK;
}

/* (QUANTIZED_)TENSORFLOW_FLATTEN: flags, in, out, shape{w, h, c}. The output is TensorFlow's flattened NHWC
 * vector, so it stays flat: its elements are no longer a planar w x h x c map. */
static int dec_flatten(v3_ctx *c)
{
    int f32 = c->L->type == V3_TENSORFLOW_FLATTEN;
    uint64_t n;
    uint32_t in = fld(c, 1), out = fld(c, 2), w = fld(c, 3), h = fld(c, 4), ch = fld(c, 5);
    OKPU_TRY(nonzero(c, 3, "shape", w, h, ch));
    OKPU_TRY(size4(c, 3, "shape", f32 ? 4u : 1u, w, h, ch, &n));
    OKPU_TRY(main_rng(c, 1, "input", in, n));
    OKPU_TRY(main_rng(c, 2, "output", out, n));
    OKPU_TRY(disjoint(c, 1, "input", in, n, out, n));
    {
        STEP(okpu_cpu_flatten_args, a, OKPU_STEP_FLATTEN);
        a->in = MAIN(in), a->out = MAIN(out), a->w = w, a->h = h, a->c = ch, a->elem = f32 ? 4u : 1u;
    }
    n /= f32 ? 4u : 1u;
    set_out(c, f32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, out, n);
    set_work(c, n);
    return OKPU_OK;
}

/* (QUANTIZED_)RESIZE_NEAREST_NEIGHBOR: flags, in, out, in_shape{w, h, c}, out_w, out_h, align_corners. */
static int dec_resize(v3_ctx *c)
{
    int f32 = c->L->type == V3_RESIZE_NEAREST_NEIGHBOR;
    uint64_t e = f32 ? 4u : 1u, in_n, out_n;
    uint32_t in = fld(c, 1), out = fld(c, 2), w = fld(c, 3), h = fld(c, 4), ch = fld(c, 5);
    uint32_t ow = fld(c, 6), oh = fld(c, 7);
    if (!w || !h || !ow || !oh || !ch)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 12u,
                   "sizes in %lux%lux%lu out %lux%lu: every width, height and channel count must be >= 1",
                   (unsigned long)w, (unsigned long)h, (unsigned long)ch, (unsigned long)ow, (unsigned long)oh);
    OKPU_TRY(size4(c, 3, "input", e, w, h, ch, &in_n));
    OKPU_TRY(size4(c, 6, "output", e, ow, oh, ch, &out_n));
    OKPU_TRY(main_rng(c, 1, "input", in, in_n));
    OKPU_TRY(main_rng(c, 2, "output", out, out_n));
    OKPU_TRY(disjoint(c, 1, "input", in, in_n, out, out_n));
    set_work(c, out_n / e);
    {
        STEP(okpu_cpu_resize_args, a, OKPU_STEP_RESIZE_NEAREST);
        a->in = MAIN(in), a->out = MAIN(out), a->in_w = w, a->in_h = h, a->c = ch, a->out_w = ow, a->out_h = oh;
        a->elem = (uint32_t)e;
    }
    set_out_shape(c, f32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, out, ch, oh, ow);
    return OKPU_OK;
}

/* CHANNELWISE_DEQUANTIZE: flags, in, out, channels, channel_size, {f32 scale, f32 bias} x channels. */
static int dec_cwdq(v3_ctx *c)
{
    uint64_t n;
    uint32_t in = fld(c, 1), out = fld(c, 2), channels = fld(c, 3), channel_size = fld(c, 4);
    OKPU_TRY(tail_rng(c, "per-channel scale/bias table", 20, 8ull * channels));
    OKPU_TRY(size4(c, 3, "input", 4, channels, channel_size, 1, &n));
    n /= 4u;
    OKPU_TRY(main_rng(c, 1, "input", in, n));
    OKPU_TRY(main_rng(c, 2, "output", out, 4u * n));
    OKPU_TRY(disjoint(c, 1, "input", in, n, out, 4u * n));
    {
        STEP(okpu_cpu_cw_dequant_args, a, OKPU_STEP_CHANNELWISE_DEQUANTIZE);
        a->in = MAIN(in), a->out = MAIN(out), a->params = c->body + 20;
        a->channels = channels, a->channel_size = channel_size;
    }
    /* `channels` planes of channel_size values: the input's w x h when the layer before wrote it, else one row */
    set_out_like_input(c, OKPU_DTYPE_F32, out, in, (uint32_t)n);
    if (c->L->out.t.c != channels)
        set_out_shape(c, OKPU_DTYPE_F32, out, channels, 1, channel_size);
    set_work(c, n + channels);
    return OKPU_OK;
}

/* K210_CONV: flags, main_mem_out_address, layer_offset, weights_offset, bn_offset, act_offset; the four offsets are
 * absolute file offsets into this body. Alignments differ between writers
 * (docs/kpu-reference.md section 8.5): only ranges are checked. */
static int dec_conv(v3_ctx *c)
{
    okpu_model *m = c->m;
    okpu_kpu_layer_job j;
    const okpu_kpu_args *a = &j.args;
    uint32_t flags = fld(c, 0), out = fld(c, 1);
    uint32_t layer_off = fld(c, 2), w_off = fld(c, 3), bn_off = fld(c, 4), act_off = fld(c, 5);
    uint64_t src_rows, dst_rows, out_bytes;
    int eight = (int)(m->flags & 1u);

    memset(&j, 0, sizeof j);
    OKPU_TRY(body_rng(c, "layer argument (96 bytes, layer_offset)", layer_off, KPU_ARGS_BYTES));
    j.raw_args = m->data + layer_off;
    okpu_kpu_args_decode(j.raw_args, &j.args);
    OKPU_TRY(okpu_kpu_args_check(a, c->idx, (long)layer_off, c->err));
    OKPU_TRY(body_rng(c, eight ? "8-bit weights (weights_offset)" : "16-bit weights (weights_offset)", w_off,
                      okpu_kpu_weights_bytes(a, eight)));
    OKPU_TRY(body_rng(c, "batch-norm table (bn_offset)", bn_off, okpu_kpu_bn_bytes(a)));
    OKPU_TRY(body_rng(c, "activation table (act_offset)", act_off, KPU_ACT_TABLE_BYTES));
    j.weights = m->data + w_off;
    j.bn = m->data + bn_off;
    j.act = m->data + act_off;
    j.eight_bit = eight;
    j.layer = c->idx;

    src_rows = okpu_kpu_layout_rows(a->in_width, a->in_height, a->in_channels);
    dst_rows = okpu_kpu_layout_rows(a->out_width, a->out_height, a->out_channels);
    OKPU_TRY(kpu_rng(c, 2, "input feature map", a->image_src_addr, src_rows));
    OKPU_TRY(kpu_rng(c, 2, "output feature map", a->image_dst_addr, dst_rows));
    okpu_model_touch_kpu_rows(m, a->image_src_addr, (uint32_t)src_rows);
    okpu_model_touch_kpu_rows(m, a->image_dst_addr, (uint32_t)dst_rows);

    out_bytes = (uint64_t)a->out_width * a->out_height * a->out_channels;
    if (flags & V3_MAIN_MEM_OUT) {
        if ((uint64_t)a->dma_total_byte + 1u != out_bytes)
            return bad(c, OKPU_ERR_KMODEL_FORMAT, (uint64_t)layer_off + 88u,
                       "main-memory output of %llu bytes (dma_total_byte + 1) does not match the output map "
                       "%lux%lux%lu = %llu bytes; the file is corrupt",
                       (unsigned long long)a->dma_total_byte + 1u, (unsigned long)a->out_width,
                       (unsigned long)a->out_height, (unsigned long)a->out_channels, (unsigned long long)out_bytes);
        OKPU_TRY(main_rng(c, 1, "main-memory output (main_mem_out_address)", out, out_bytes));
        c->wr[c->idx].valid = 1;
        c->wr[c->idx].u8 = 1;
        c->wr[c->idx].off = out;
        c->wr[c->idx].size = (uint32_t)out_bytes;
    }
    {
        STEP(okpu_kpu_conv_args, s, OKPU_STEP_KPU_CONV);
        j.main_out = (flags & V3_MAIN_MEM_OUT) ? MAIN(out) : NULL;
        j.batches = 1;
        j.in_rows = (uint32_t)src_rows;
        j.out_rows = (uint32_t)dst_rows;
        j.main_out_stride = (size_t)out_bytes;
        s->job = j;
    }

    c->L->info.is_kpu = 1;
    c->L->info.wi = a->in_width;
    c->L->info.hi = a->in_height;
    c->L->info.chi = a->in_channels;
    c->L->info.wo = a->out_width;
    c->L->info.ho = a->out_height;
    c->L->info.cho = a->out_channels;
    c->L->info.depthwise = (int)a->depthwise;
    c->L->info.kernel_type = (int)a->kernel_type;
    c->L->info.pool_type = (int)a->pool_type;
    c->L->info.para_size = a->para_size;
    c->L->info.macs = okpu_kpu_args_macs(a);
    set_work(c, c->L->info.macs);
    set_map(c->L, a->image_dst_addr, a->out_width, a->out_height, a->out_channels);
    return OKPU_OK;
}

/* K210_ADD_PADDING: flags, main_in, kpu_out (row), channels. */
static int dec_add_padding(v3_ctx *c)
{
    uint32_t rows, in = fld(c, 1), row = fld(c, 2), channels = fld(c, 3);
    if (channels == 0 || channels > 1024u)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 12u, "channels is %lu, expected 1..1024 (KPU limit)",
                   (unsigned long)channels);
    rows = okpu_k_add_padding_rows(channels);
    OKPU_TRY(main_rng(c, 1, "input", in, channels));
    OKPU_TRY(kpu_rng(c, 2, "padded 4x4 output map", row, rows));
    okpu_model_touch_kpu_rows(c->m, row, rows);
    {
        STEP(okpu_kpu_padding_args, a, OKPU_STEP_KPU_ADD_PADDING);
        a->in = MAIN(in), a->out = c->m->kpu->ram + (size_t)row * OKPU_KPU_ROW_BYTES, a->channels = channels;
    }
    set_map(c->L, row, 4, 4, channels);
    set_work(c, 16ull * channels);
    return OKPU_OK;
}

/* K210_REMOVE_PADDING: flags, main_in, main_out, channels: out[c] = in[16c]. */
static int dec_remove_padding(v3_ctx *c)
{
    uint32_t in = fld(c, 1), out = fld(c, 2), channels = fld(c, 3);
    uint64_t in_n = channels ? 16ull * (channels - 1u) + 1u : 0u;
    OKPU_TRY(main_rng(c, 1, "input", in, in_n));
    OKPU_TRY(main_rng(c, 2, "output", out, channels));
    OKPU_TRY(disjoint(c, 1, "input", in, in_n, out, channels));
    {
        STEP(okpu_kpu_padding_args, a, OKPU_STEP_KPU_REMOVE_PADDING);
        a->in = MAIN(in), a->out = MAIN(out), a->channels = channels;
    }
    set_out_shape(c, OKPU_DTYPE_U8, out, channels, 1, 1); /* the 1x1 pixel of each channel */
    set_work(c, channels);
    return OKPU_OK;
}

/* K210_UPLOAD: flags, main_in, kpu_out (row), width, height, channels. */
static int dec_upload(v3_ctx *c)
{
    uint32_t rows, in = fld(c, 1), row = fld(c, 2), w = fld(c, 3), h = fld(c, 4), ch = fld(c, 5);
    if (!w || !h || !ch || w > 4096u || h > 4096u || ch > 4096u)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 12u,
                   "map %lux%lux%lu: expected width, height and channels of 1..4096", (unsigned long)w,
                   (unsigned long)h, (unsigned long)ch);
    rows = okpu_kpu_layout_rows(w, h, ch);
    OKPU_TRY(main_rng(c, 1, "input", in, (uint64_t)w * h * ch));
    OKPU_TRY(kpu_rng(c, 2, "output map", row, rows));
    okpu_model_touch_kpu_rows(c->m, row, rows);
    {
        STEP(okpu_kpu_upload_args, a, OKPU_STEP_KPU_UPLOAD);
        a->src = MAIN(in), a->kpu_ram = c->m->kpu->ram, a->row = row, a->rows_per_batch = rows, a->batches = 1;
        a->w = w, a->h = h, a->c = ch;
    }
    set_map(c->L, row, w, h, ch);
    set_work(c, (uint64_t)w * h * ch);
    return OKPU_OK;
}

/* ---- the table: every v3 layer type, once (kmodel_v3_ops.def) ---- */

static const v3_op v3_ops[] = {
#define V3_OP(id, e, name, min_body, dec) {id, name, min_body, dec},
#include "kmodel_v3_ops.def"
#undef V3_OP
};

#define V3_OP_COUNT (sizeof v3_ops / sizeof v3_ops[0])

static const v3_op *find_op(uint32_t type)
{
    size_t i;
    for (i = 0; i < V3_OP_COUNT; i++)
        if (v3_ops[i].type == type)
            return &v3_ops[i];
    return NULL;
}

/* The known type ids as runs of consecutive ids, e.g. "1-25 and 10240-10243" (the table is in ascending order). */
static void known_types(char *buf, size_t size)
{
    size_t i = 0, runs = 0, n = 0, k;
    size_t first[V3_OP_COUNT], last[V3_OP_COUNT];
    while (i < V3_OP_COUNT) {
        k = i;
        while (k + 1 < V3_OP_COUNT && v3_ops[k + 1].type == v3_ops[k].type + 1u)
            k++;
        first[runs] = i, last[runs] = k, runs++;
        i = k + 1;
    }
    buf[0] = '\0';
    for (i = 0; i < runs && n < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == runs ? " and " : ", ";
        int w = first[i] == last[i]
                    ? snprintf(buf + n, size - n, "%s%lu", sep, (unsigned long)v3_ops[first[i]].type)
                    : snprintf(buf + n, size - n, "%s%lu-%lu", sep, (unsigned long)v3_ops[first[i]].type,
                               (unsigned long)v3_ops[last[i]].type);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/* ---- format interface ---- */

static int v3_decode_layer(okpu_model *m, int i, uint64_t hdr_off, uint64_t boff, v3_written *wr, okpu_error *err)
{
    okpu_layer *L = &m->layers[i];
    const uint8_t *h = m->data + hdr_off;
    uint32_t type = okpu_rd_u32(h), bsize = okpu_rd_u32(h + 4);
    uint64_t end = boff + bsize;
    const v3_op *op = find_op(type);
    v3_ctx c;

    if (!op) {
        char known[64];
        known_types(known, sizeof known);
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, i, (long)hdr_off,
                         "layer %d: unknown layer type %lu in the layer table at byte %lu; v3 types are %s — the "
                         "file is corrupt or not an nncase v0.1 / Maix-EMC model",
                         i, (unsigned long)type, (unsigned long)hdr_off, known);
    }
    L->type = type;
    L->body_offset = (uint32_t)boff;
    L->body_size = bsize;
    L->info.index = i;
    L->info.type = type;
    L->info.type_name = op->name;
    L->info.body_offset = (uint32_t)boff;
    L->info.body_size = bsize;
    L->info.para_size = bsize;

    if (boff >= m->size)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, i, (long)boff,
                         "layer %d (%s) body at byte %llu starts at or past the end of the file (%lu bytes); the file "
                         "is truncated — copy it again",
                         i, op->name, (unsigned long long)boff, (unsigned long)m->size);
    if (end > m->size && (i != m->layer_count - 1 || end - m->size > V3_MAX_TAIL_PAD))
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, i, (long)boff,
                         "layer %d (%s) body at byte %llu: body_size %lu ends at byte %llu, %llu bytes past the end of "
                         "the file (%lu bytes); only the last layer's unwritten alignment padding (up to 7 bytes) is "
                         "tolerated — the file is truncated or corrupt, copy it again",
                         i, op->name, (unsigned long long)boff, (unsigned long)bsize, (unsigned long long)end,
                         (unsigned long long)(end - m->size), (unsigned long)m->size);
    if (bsize < op->min_body)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, i, (long)boff,
                         "layer %d (%s) body at byte %llu: body_size %lu is smaller than the %lu bytes of a %s body; "
                         "the file is corrupt",
                         i, op->name, (unsigned long long)boff, (unsigned long)bsize, (unsigned long)op->min_body,
                         op->name);
    c.m = m;
    c.idx = i;
    c.L = L;
    c.name = op->name;
    c.body = m->data + boff;
    c.boff = (uint32_t)boff;
    c.avail = end > m->size ? (uint32_t)(m->size - boff) : bsize;
    c.wr = wr;
    c.err = err;
    if (c.avail < op->min_body)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, i, (long)boff,
                         "layer %d (%s) body at byte %llu: its %lu bytes of fields end past the end of the file (%lu "
                         "bytes); the file is truncated — copy it again",
                         i, op->name, (unsigned long long)boff, (unsigned long)op->min_body, (unsigned long)m->size);
    OKPU_TRY(op->decode(&c));
    L->out.t.layer = i;
    L->info.output = L->out.t;
    return OKPU_OK;
}

static int v3_read_header(okpu_model *m, okpu_error *err)
{
    const uint8_t *d = m->data;
    uint32_t arch, nlayers, nout, main_mem;
    uint64_t tables_end;

    if (m->size < V3_HEADER_BYTES)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, (long)m->size,
                         "kmodel v3 header truncated: the file is %lu bytes, the header needs %u; the file is "
                         "truncated — copy it again",
                         (unsigned long)m->size, V3_HEADER_BYTES);
    m->flags = okpu_rd_u32(d + 4);
    arch = okpu_rd_u32(d + 8);
    nlayers = okpu_rd_u32(d + 12);
    main_mem = okpu_rd_u32(d + 20);
    nout = okpu_rd_u32(d + 24);
    if (arch != 0)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, 8,
                         "kmodel v3 header at byte 8: arch is %lu, expected 0 (K210); the file is corrupt or for "
                         "another chip",
                         (unsigned long)arch);
    tables_end = V3_HEADER_BYTES + 8ull * nout + 8ull * nlayers;
    if (tables_end > m->size)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, 12,
                         "kmodel v3 header: %lu outputs and %lu layers need tables up to byte %llu, past the end of "
                         "the file (%lu bytes); the file is truncated or corrupt — copy it again",
                         (unsigned long)nout, (unsigned long)nlayers, (unsigned long long)tables_end,
                         (unsigned long)m->size);
    if (nout > OKPU_MAX_IO)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, 24,
                         "kmodel v3 header at byte 24: output_count %lu, this runtime supports at most %d outputs",
                         (unsigned long)nout, OKPU_MAX_IO);
    if (nlayers == 0)
        return okpu_fail(err, OKPU_ERR_GET_CONV_LAYER, -1, 12,
                         "kmodel v3 header at byte 12: the model has no layers; expected a first K210_CONV or "
                         "FULLY_CONNECTED layer — recompile the model");
    m->main_mem_size = main_mem;
    m->main_mem_from = "the header's main_mem_usage";
    m->main_mem_from_at = 20;
    if (main_mem > OKPU_BOARD_SRAM_SIZE) /* a corrupt size fails here, before the layer walk */
        return okpu_model_check_main_budget(m, err);
    if (nlayers > 0x7FFFFFFFu)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, 12, "layer count %lu is too large",
                         (unsigned long)nlayers);
    return OKPU_OK;
}

/* The model input: what the first layer reads. */
static int v3_input(okpu_model *m, okpu_error *err)
{
    const okpu_layer *L0 = &m->layers[0];
    okpu_place *in = &m->inputs[0];
    memset(in, 0, sizeof *in);
    in->t.n = 1;
    in->t.layer = -1;
    if (L0->type == V3_K210_CONV) {
        const okpu_kpu_args *a = &((const okpu_kpu_conv_args *)L0->step.args)->job.args;
        in->mem = OKPU_MEM_KPU;
        in->offset = a->image_src_addr;
        in->t.dtype = OKPU_DTYPE_U8;
        in->t.c = a->in_channels;
        in->t.h = a->in_height;
        in->t.w = a->in_width;
        in->t.bytes = a->in_width * a->in_height * a->in_channels;
    } else if (L0->type == V3_FULLY_CONNECTED) {
        const okpu_cpu_fc_args *a = (const okpu_cpu_fc_args *)L0->step.args;
        in->mem = OKPU_MEM_MAIN;
        in->offset = (uint32_t)(a->in - m->main_mem);
        in->t.dtype = OKPU_DTYPE_F32;
        in->t.c = 1;
        in->t.h = 1;
        in->t.w = a->in_ch;
        in->t.bytes = 4u * a->in_ch;
    } else {
        return okpu_fail(err, OKPU_ERR_GET_CONV_LAYER, 0, (long)L0->body_offset,
                         "layer 0 (%s) body at byte %lu: the first layer must be K210_CONV (image input) or "
                         "FULLY_CONNECTED (float input), found %s; MaixPy cannot feed this model — recompile it "
                         "so it starts with a convolution or a dense layer",
                         L0->info.type_name, (unsigned long)L0->body_offset, L0->info.type_name);
    }
    m->input_count = 1;
    return OKPU_OK;
}

/* The outputs: the header's table, each with the dtype of the last layer writing there. */
static int v3_outputs(okpu_model *m, const v3_written *wr, okpu_error *err)
{
    uint32_t i, nout = okpu_rd_u32(m->data + 24);
    for (i = 0; i < nout; i++) {
        uint64_t off = V3_HEADER_BYTES + 8ull * i;
        uint32_t addr = okpu_rd_u32(m->data + off), size = okpu_rd_u32(m->data + off + 4);
        okpu_place *o = &m->outputs[i];
        int j, u8 = 0;
        if (okpu_model_check_main(m, -1, (long)off, "output", addr, size, err) != OKPU_OK)
            return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, (long)off,
                             "kmodel v3 output table entry %lu at byte %llu: address %lu + size %lu ends past the main "
                             "buffer (main_mem_usage %lu bytes); the file is corrupt — copy it again",
                             (unsigned long)i, (unsigned long long)off, (unsigned long)addr, (unsigned long)size,
                             (unsigned long)m->main_mem_size);
        for (j = m->layer_count - 1; j >= 0; j--)
            if (wr[j].valid && addr >= wr[j].off && addr - wr[j].off < (wr[j].size ? wr[j].size : 1u)) {
                u8 = wr[j].u8;
                break;
            }
        memset(o, 0, sizeof *o);
        o->mem = OKPU_MEM_MAIN;
        o->offset = addr;
        o->t.dtype = u8 ? OKPU_DTYPE_U8 : OKPU_DTYPE_F32;
        o->t.n = 1;
        o->t.c = 1;
        o->t.h = 1;
        o->t.w = u8 ? size : size / 4u;
        o->t.bytes = u8 ? size : (size / 4u) * 4u;
        o->t.layer = j;
    }
    m->output_count = (int)nout;
    return OKPU_OK;
}

static int v3_walk(okpu_model *m, v3_written *wr, okpu_error *err)
{
    uint32_t i, nout = okpu_rd_u32(m->data + 24);
    uint64_t boff = V3_HEADER_BYTES + 8ull * nout + 8ull * (uint32_t)m->layer_count;
    for (i = 0; i < (uint32_t)m->layer_count; i++) {
        OKPU_TRY(v3_decode_layer(m, (int)i, V3_HEADER_BYTES + 8ull * nout + 8ull * i, boff, wr, err));
        boff += m->layers[i].body_size;
    }
    OKPU_TRY(v3_input(m, err));
    return v3_outputs(m, wr, err);
}

static int v3_decode(okpu_model *m, okpu_error *err)
{
    uint32_t nlayers = okpu_rd_u32(m->data + 12); /* 1..0x7FFFFFFF: read_header checked it */
    size_t wr_bytes;
    v3_written *wr;
    int rc = okpu_model_alloc_layers(m, (int)nlayers, err);
    if (rc != OKPU_OK)
        return rc;
    /* a temporary of 12 bytes a layer: alloc_layers bounded the layer count by the file size */
    wr_bytes = (size_t)nlayers * sizeof *wr;
    wr = (v3_written *)okpu_model_alloc(m, wr_bytes);
    if (!wr)
        return okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1,
                         "out of memory decoding the model: %lu bytes to follow what its %lu layers write; free "
                         "other models or use a smaller model",
                         (unsigned long)wr_bytes, (unsigned long)nlayers);
    rc = v3_walk(m, wr, err);
    okpu_model_free_mem(m, wr, wr_bytes);
    return rc;
}

const okpu_format okpu_format_v3 = {.name = "kmodel v3 (nncase v0.1 / Maix-EMC)",
                                    .version = 3,
                                    .read_header = v3_read_header,
                                    .decode = v3_decode};

/* The per-layer record bound of okpu_model_alloc_layers assumes every CPU step's arguments stay small. */
#define OKPU_STEP(id, name, type, fn) typedef char v3_step_##id##_fits[sizeof(type) <= OKPU_LAYER_STATE_MAX ? 1 : -1];
#include "../plan/steps_cpu.def"
#undef OKPU_STEP

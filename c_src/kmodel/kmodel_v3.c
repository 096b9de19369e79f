/* kmodel v3 (nncase v0.1.x, Maix-EMC): reader and layer dispatch.
 *
 * File layout: docs/kpu-reference.md section 2. One table (v3_ops below) lists every layer type once with its name,
 * minimum body size, parse/validate function and run function; parsing, dispatch and names all come from it.
 *
 * Everything is validated in parse(), before anything runs: every main-buffer range against main_mem_usage, every
 * KPU region against the 2 MiB KPU RAM, every weight/table pointer against the layer's body and the file. The run
 * functions then only compute.
 *
 * Body field orders: SDK lib/drivers/include/kpu.h (kpu_model_*_layer_argument_t) for every type it defines;
 * QUANTIZED_FULLY_CONNECTED (19) has no struct in the SDK, nncase v0.1 or Maix-EMC, so its body is openkpu's own
 * definition (see parse_qfc). Quantized pool semantics: see kernels/pool.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

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
    V3_ADD = 1,
    V3_QUANTIZED_ADD = 2,
    V3_GLOBAL_MAX_POOL2D = 3,
    V3_QUANTIZED_GLOBAL_MAX_POOL2D = 4,
    V3_GLOBAL_AVERAGE_POOL2D = 5,
    V3_QUANTIZED_GLOBAL_AVERAGE_POOL2D = 6,
    V3_MAX_POOL2D = 7,
    V3_QUANTIZED_MAX_POOL2D = 8,
    V3_AVERAGE_POOL2D = 9,
    V3_QUANTIZED_AVERAGE_POOL2D = 10,
    V3_QUANTIZE = 11,
    V3_DEQUANTIZE = 12,
    V3_REQUANTIZE = 13,
    V3_L2_NORMALIZATION = 14,
    V3_SOFTMAX = 15,
    V3_CONCAT = 16,
    V3_QUANTIZED_CONCAT = 17,
    V3_FULLY_CONNECTED = 18,
    V3_QUANTIZED_FULLY_CONNECTED = 19,
    V3_TENSORFLOW_FLATTEN = 20,
    V3_QUANTIZED_TENSORFLOW_FLATTEN = 21,
    V3_RESIZE_NEAREST_NEIGHBOR = 22,
    V3_QUANTIZED_RESIZE_NEAREST_NEIGHBOR = 23,
    V3_CHANNELWISE_DEQUANTIZE = 24,
    V3_LOGISTIC = 25,
    V3_K210_CONV = 10240,
    V3_K210_ADD_PADDING = 10241,
    V3_K210_REMOVE_PADDING = 10242,
    V3_K210_UPLOAD = 10243
};

/* A layer's body decoded and validated at load. Only K210_CONV layers use `job` (about 300 bytes): every other layer
 * is allocated up to offsetof(v3_state, job), so a file of many small layers costs memory in proportion to what its
 * layers hold, not a fixed large record each. */
typedef struct v3_state {
    uint32_t alloc_size; /* bytes allocated for this record (sizeof or offsetof(v3_state, job)) */
    uint32_t flags;
    uint32_t in, in_b, out; /* main-buffer byte offsets (out: KPU row for ADD_PADDING / UPLOAD) */
    uint32_t count;         /* elements, channels */
    uint32_t kernel_size, channel_size;
    uint32_t w, h, c, ow, oh;
    uint32_t act;
    uint32_t in_ch, out_ch;
    float scale, bias;
    union { /* one layer kind each */
        okpu_pool2d_params pool;
        okpu_qadd_params qadd;
        okpu_qfc_params qfc;
    } p;
    const uint8_t *blob;  /* weights / table / per-channel params / concat ranges, inside the file */
    const uint8_t *blob2; /* bias */
    /* what this layer writes into the main buffer (for output dtypes) */
    int wr_valid, wr_u8;
    uint32_t wr_off, wr_size;
    kpu_layer_job job; /* K210_CONV only: must stay the last member (see above) */
} v3_state;

/* Parsing context of one layer. */
typedef struct v3_ctx {
    okpu_model *m;
    int idx;
    okpu_layer *L;
    const char *name;
    const uint8_t *body;
    uint32_t boff;  /* absolute file offset of the body */
    uint32_t avail; /* body bytes actually inside the file */
    okpu_error *err;
} v3_ctx;

typedef struct v3_op {
    uint32_t type;
    const char *name;
    uint32_t min_body; /* bytes of fixed fields */
    int (*parse)(v3_ctx *c, v3_state *s);
    int (*run)(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err);
} v3_op;

/* ---- parse helpers ---- */

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

static void set_out(okpu_layer *L, v3_state *s, okpu_dtype dt, uint32_t off, uint64_t count)
{
    uint32_t esz = dt == OKPU_DTYPE_F32 ? 4u : 1u;
    L->out.mem = OKPU_MEM_MAIN;
    L->out.offset = off;
    L->out.t.dtype = dt;
    L->out.t.n = 1;
    L->out.t.c = 1;
    L->out.t.h = 1;
    L->out.t.w = (uint32_t)count;
    L->out.t.bytes = (uint32_t)(count * esz);
    s->wr_valid = 1;
    s->wr_u8 = dt == OKPU_DTYPE_U8;
    s->wr_off = off;
    s->wr_size = (uint32_t)(count * esz);
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
    if (v >= 0 && v <= 63)
        return OKPU_OK;
    return bad(c, OKPU_ERR_KMODEL_FORMAT, (uint64_t)c->boff + 4u * fi,
               "%s is %ld, expected 0..63; the file is corrupt", what, (long)v);
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

/* ---- parse functions (one per body layout) ---- */

#define TRY(x)                                                                                                  \
    do {                                                                                                        \
        int rc_ = (x);                                                                                          \
        if (rc_ != OKPU_OK)                                                                                     \
            return rc_;                                                                                         \
    } while (0)

/* ADD: flags, in_a, in_b, out, count (float). */
static int parse_add(v3_ctx *c, v3_state *s)
{
    s->in = fld(c, 1), s->in_b = fld(c, 2), s->out = fld(c, 3), s->count = fld(c, 4);
    TRY(main_rng(c, 1, "input a", s->in, 4ull * s->count));
    TRY(main_rng(c, 2, "input b", s->in_b, 4ull * s->count));
    TRY(main_rng(c, 3, "output", s->out, 4ull * s->count));
    set_out(c->L, s, OKPU_DTYPE_F32, s->out, s->count);
    set_work(c, s->count);
    return OKPU_OK;
}

/* QUANTIZED_ADD: flags, in_a, in_b, out, count, a_off, a_mul, a_shift, b_off, b_mul, b_shift, o_off, o_mul, o_shift */
static int parse_qadd(v3_ctx *c, v3_state *s)
{
    s->in = fld(c, 1), s->in_b = fld(c, 2), s->out = fld(c, 3), s->count = fld(c, 4);
    s->p.qadd.a_offset = fldi(c, 5), s->p.qadd.a_mul = fldi(c, 6), s->p.qadd.a_shift = fldi(c, 7);
    s->p.qadd.b_offset = fldi(c, 8), s->p.qadd.b_mul = fldi(c, 9), s->p.qadd.b_shift = fldi(c, 10);
    s->p.qadd.out_offset = fldi(c, 11), s->p.qadd.out_mul = fldi(c, 12), s->p.qadd.out_shift = fldi(c, 13);
    TRY(check_shift(c, 7, "in_a_shift", s->p.qadd.a_shift));
    TRY(check_shift(c, 10, "in_b_shift", s->p.qadd.b_shift));
    TRY(check_shift(c, 13, "out_shift", s->p.qadd.out_shift));
    TRY(main_rng(c, 1, "input a", s->in, s->count));
    TRY(main_rng(c, 2, "input b", s->in_b, s->count));
    TRY(main_rng(c, 3, "output", s->out, s->count));
    set_out(c->L, s, OKPU_DTYPE_U8, s->out, s->count);
    set_work(c, s->count);
    return OKPU_OK;
}

/* GLOBAL_(MAX|AVERAGE)_POOL2D and quantized: flags, in, out, kernel_size, channels. */
static int parse_gpool(v3_ctx *c, v3_state *s)
{
    int f32 = c->L->type == V3_GLOBAL_MAX_POOL2D || c->L->type == V3_GLOBAL_AVERAGE_POOL2D;
    uint64_t e = f32 ? 4u : 1u;
    s->in = fld(c, 1), s->out = fld(c, 2), s->kernel_size = fld(c, 3), s->count = fld(c, 4);
    if (s->kernel_size == 0 && s->count != 0)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 12u, "kernel_size is 0 for %lu channels; expected H*W >= 1",
                   (unsigned long)s->count);
    {
        uint64_t in_n;
        TRY(size4(c, 3, "input", e, s->kernel_size, s->count, 1, &in_n));
        TRY(main_rng(c, 1, "input", s->in, in_n));
        TRY(main_rng(c, 2, "output", s->out, e * s->count));
        TRY(disjoint(c, 1, "input", s->in, in_n, s->out, e * s->count));
        set_work(c, in_n / e);
    }
    set_out(c->L, s, f32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, s->out, s->count);
    return OKPU_OK;
}

/* (QUANTIZED_)MAX/AVERAGE_POOL2D: flags, in, out, in{w,h,c}, out{w,h,c}, kw, kh, sw, sh, pw, ph[, act]. */
static int parse_pool(v3_ctx *c, v3_state *s)
{
    int f32 = c->L->type == V3_MAX_POOL2D || c->L->type == V3_AVERAGE_POOL2D;
    uint64_t e = f32 ? 4u : 1u;
    okpu_pool2d_params *p = &s->p.pool;
    s->in = fld(c, 1), s->out = fld(c, 2);
    p->in_w = fld(c, 3), p->in_h = fld(c, 4), p->in_c = fld(c, 5);
    p->out_w = fld(c, 6), p->out_h = fld(c, 7), p->out_c = fld(c, 8);
    p->kernel_w = fld(c, 9), p->kernel_h = fld(c, 10), p->stride_w = fld(c, 11), p->stride_h = fld(c, 12);
    p->pad_w = fld(c, 13), p->pad_h = fld(c, 14);
    s->act = f32 ? fld(c, 15) : 0;
    if (p->out_c > p->in_c)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 32u,
                   "output has %lu channels but the input only %lu; expected equal channel counts",
                   (unsigned long)p->out_c, (unsigned long)p->in_c);
    if (!p->kernel_w || !p->kernel_h || !p->stride_w || !p->stride_h)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 36u,
                   "kernel %lux%lu stride %lux%lu: kernel and stride must be >= 1", (unsigned long)p->kernel_w,
                   (unsigned long)p->kernel_h, (unsigned long)p->stride_w, (unsigned long)p->stride_h);
    if (p->pad_w >= p->kernel_w || p->pad_h >= p->kernel_h)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 52u,
                   "padding %lux%lu is not smaller than the kernel %lux%lu", (unsigned long)p->pad_w,
                   (unsigned long)p->pad_h, (unsigned long)p->kernel_w, (unsigned long)p->kernel_h);
    TRY(nonzero(c, 3, "input", p->in_w, p->in_h, p->in_c));
    TRY(nonzero(c, 6, "output", p->out_w, p->out_h, p->out_c));
    {
        uint64_t in_n, out_n, taps;
        TRY(size4(c, 3, "input", e, p->in_w, p->in_h, p->in_c, &in_n));
        TRY(size4(c, 6, "output", e, p->out_w, p->out_h, p->out_c, &out_n));
        TRY(main_rng(c, 1, "input", s->in, in_n));
        TRY(main_rng(c, 2, "output", s->out, out_n));
        TRY(disjoint(c, 1, "input", s->in, in_n, s->out, out_n));
        taps = (uint64_t)(p->kernel_w < p->in_w ? p->kernel_w : p->in_w) *
               (p->kernel_h < p->in_h ? p->kernel_h : p->in_h); /* in-range taps per output, at most */
        set_work(c, okpu_sat_mul(out_n / e, taps));
    }
    set_out(c->L, s, f32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, s->out, (uint64_t)p->out_w * p->out_h * p->out_c);
    return OKPU_OK;
}

/* QUANTIZE / DEQUANTIZE: flags, in, out, count, f32 scale, f32 bias. */
static int parse_quant(v3_ctx *c, v3_state *s)
{
    int q = c->L->type == V3_QUANTIZE;
    s->in = fld(c, 1), s->out = fld(c, 2), s->count = fld(c, 3), s->scale = fldf(c, 4), s->bias = fldf(c, 5);
    TRY(main_rng(c, 1, "input", s->in, (q ? 4ull : 1ull) * s->count));
    TRY(main_rng(c, 2, "output", s->out, (q ? 1ull : 4ull) * s->count));
    set_out(c->L, s, q ? OKPU_DTYPE_U8 : OKPU_DTYPE_F32, s->out, s->count);
    set_work(c, s->count);
    return OKPU_OK;
}

/* REQUANTIZE: flags, in, out, count, u8 table[256]. */
static int parse_requant(v3_ctx *c, v3_state *s)
{
    s->in = fld(c, 1), s->out = fld(c, 2), s->count = fld(c, 3);
    s->blob = c->body + 16;
    TRY(main_rng(c, 1, "input", s->in, s->count));
    TRY(main_rng(c, 2, "output", s->out, s->count));
    set_out(c->L, s, OKPU_DTYPE_U8, s->out, s->count);
    set_work(c, s->count);
    return OKPU_OK;
}

/* L2_NORMALIZATION / SOFTMAX / LOGISTIC: flags, in, out, channels (float). */
static int parse_vec(v3_ctx *c, v3_state *s)
{
    s->in = fld(c, 1), s->out = fld(c, 2), s->count = fld(c, 3);
    TRY(main_rng(c, 1, "input", s->in, 4ull * s->count));
    TRY(main_rng(c, 2, "output", s->out, 4ull * s->count));
    set_out(c->L, s, OKPU_DTYPE_F32, s->out, s->count);
    set_work(c, 3ull * s->count); /* softmax / l2: a pass for the max or norm, one for the sum, one to write */
    return OKPU_OK;
}

/* (QUANTIZED_)CONCAT: flags, out, input_count, then {start, size} x input_count. */
static int parse_concat(v3_ctx *c, v3_state *s)
{
    uint32_t i;
    uint64_t total = 0;
    s->out = fld(c, 1), s->count = fld(c, 2);
    TRY(tail_rng(c, "input range table", 12, 8ull * s->count));
    s->blob = c->body + 12;
    for (i = 0; i < s->count; i++) {
        uint32_t start = okpu_rd_u32(s->blob + 8u * i), size = okpu_rd_u32(s->blob + 8u * i + 4u);
        TRY(okpu_model_check_main(c->m, c->idx, (long)(c->boff + 12u + 8u * i), "concat input", start, size,
                                  c->err));
        total += size; /* < 2^32 inputs of < 2^32 bytes each: no 64-bit wrap */
    }
    TRY(main_rng(c, 1, "output", s->out, total));
    for (i = 0; i < s->count; i++)
        TRY(disjoint(c, 1, "concat input", okpu_rd_u32(s->blob + 8u * i), okpu_rd_u32(s->blob + 8u * i + 4u), s->out,
                     total));
    set_work(c, total + s->count);
    s->kernel_size = (uint32_t)total; /* total bytes */
    if (c->L->type == V3_CONCAT)
        set_out(c->L, s, OKPU_DTYPE_F32, s->out, total / 4u);
    else
        set_out(c->L, s, OKPU_DTYPE_U8, s->out, total);
    s->wr_size = (uint32_t)total;
    return OKPU_OK;
}

/* FULLY_CONNECTED: flags, in, out, in_channels, out_channels, act, f32 weights[out][in], f32 bias[out]. */
static int parse_fc(v3_ctx *c, v3_state *s)
{
    uint64_t wbytes;
    s->in = fld(c, 1), s->out = fld(c, 2), s->in_ch = fld(c, 3), s->out_ch = fld(c, 4), s->act = fld(c, 5);
    if (s->act > 2)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 20u, "activation %lu is unknown; expected 0 (linear), "
                   "1 (relu) or 2 (relu6)", (unsigned long)s->act);
    TRY(size4(c, 3, "weights", 4, s->in_ch, s->out_ch, 1, &wbytes));
    TRY(tail_rng(c, "weights", 24, wbytes));
    TRY(tail_rng(c, "bias", 24 + wbytes, 4ull * s->out_ch));
    s->blob = c->body + 24;
    s->blob2 = c->body + 24 + wbytes;
    TRY(main_rng(c, 1, "input", s->in, 4ull * s->in_ch));
    TRY(main_rng(c, 2, "output", s->out, 4ull * s->out_ch));
    TRY(disjoint(c, 1, "input", s->in, 4ull * s->in_ch, s->out, 4ull * s->out_ch));
    set_out(c->L, s, OKPU_DTYPE_F32, s->out, s->out_ch);
    set_work(c, wbytes / 4u + s->out_ch);
    return OKPU_OK;
}

/* QUANTIZED_FULLY_CONNECTED: the type id exists in the SDK's enum, but no public writer or runtime defines its
 * body. openkpu reads it as the v3 analogue of nncase v0.2's quantized_matmul: flags, in, out, in_channels,
 * out_channels, i32 input_offset, i32 weights_offset, i32 output_mul, i32 output_shift, i32 output_offset,
 * u8 weights[out][in], i32 bias[out]. */
static int parse_qfc(v3_ctx *c, v3_state *s)
{
    uint64_t wbytes;
    s->in = fld(c, 1), s->out = fld(c, 2), s->in_ch = fld(c, 3), s->out_ch = fld(c, 4);
    s->p.qfc.input_offset = fldi(c, 5), s->p.qfc.weight_offset = fldi(c, 6);
    s->p.qfc.output_mul = fldi(c, 7), s->p.qfc.output_shift = fldi(c, 8), s->p.qfc.output_offset = fldi(c, 9);
    TRY(check_shift(c, 8, "output_shift", s->p.qfc.output_shift));
    TRY(size4(c, 3, "weights", 1, s->in_ch, s->out_ch, 1, &wbytes));
    TRY(tail_rng(c, "weights", 40, wbytes));
    TRY(tail_rng(c, "bias", 40 + wbytes, 4ull * s->out_ch));
    s->blob = c->body + 40;
    s->blob2 = c->body + 40 + wbytes;
    TRY(main_rng(c, 1, "input", s->in, s->in_ch));
    TRY(main_rng(c, 2, "output", s->out, s->out_ch));
    TRY(disjoint(c, 1, "input", s->in, s->in_ch, s->out, s->out_ch));
    set_out(c->L, s, OKPU_DTYPE_U8, s->out, s->out_ch);
    set_work(c, wbytes + s->out_ch);
    return OKPU_OK;
}

/* (QUANTIZED_)TENSORFLOW_FLATTEN: flags, in, out, shape{w, h, c}. */
static int parse_flatten(v3_ctx *c, v3_state *s)
{
    int f32 = c->L->type == V3_TENSORFLOW_FLATTEN;
    uint64_t n;
    s->in = fld(c, 1), s->out = fld(c, 2), s->w = fld(c, 3), s->h = fld(c, 4), s->c = fld(c, 5);
    TRY(nonzero(c, 3, "shape", s->w, s->h, s->c));
    TRY(size4(c, 3, "shape", f32 ? 4u : 1u, s->w, s->h, s->c, &n));
    TRY(main_rng(c, 1, "input", s->in, n));
    TRY(main_rng(c, 2, "output", s->out, n));
    TRY(disjoint(c, 1, "input", s->in, n, s->out, n));
    n /= f32 ? 4u : 1u;
    set_out(c->L, s, f32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, s->out, n);
    set_work(c, n);
    return OKPU_OK;
}

/* (QUANTIZED_)RESIZE_NEAREST_NEIGHBOR: flags, in, out, in_shape{w, h, c}, out_w, out_h, align_corners. */
static int parse_resize(v3_ctx *c, v3_state *s)
{
    int f32 = c->L->type == V3_RESIZE_NEAREST_NEIGHBOR;
    uint64_t e = f32 ? 4u : 1u;
    s->in = fld(c, 1), s->out = fld(c, 2), s->w = fld(c, 3), s->h = fld(c, 4), s->c = fld(c, 5);
    s->ow = fld(c, 6), s->oh = fld(c, 7);
    if (!s->w || !s->h || !s->ow || !s->oh || !s->c)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 12u,
                   "sizes in %lux%lux%lu out %lux%lu: every width, height and channel count must be >= 1",
                   (unsigned long)s->w, (unsigned long)s->h, (unsigned long)s->c, (unsigned long)s->ow,
                   (unsigned long)s->oh);
    {
        uint64_t in_n, out_n;
        TRY(size4(c, 3, "input", e, s->w, s->h, s->c, &in_n));
        TRY(size4(c, 6, "output", e, s->ow, s->oh, s->c, &out_n));
        TRY(main_rng(c, 1, "input", s->in, in_n));
        TRY(main_rng(c, 2, "output", s->out, out_n));
        TRY(disjoint(c, 1, "input", s->in, in_n, s->out, out_n));
        set_work(c, out_n / e);
    }
    set_out(c->L, s, f32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, s->out, (uint64_t)s->ow * s->oh * s->c);
    return OKPU_OK;
}

/* CHANNELWISE_DEQUANTIZE: flags, in, out, channels, channel_size, {f32 scale, f32 bias} x channels. */
static int parse_cwdq(v3_ctx *c, v3_state *s)
{
    uint64_t n;
    s->in = fld(c, 1), s->out = fld(c, 2), s->count = fld(c, 3), s->channel_size = fld(c, 4);
    TRY(tail_rng(c, "per-channel scale/bias table", 20, 8ull * s->count));
    s->blob = c->body + 20;
    TRY(size4(c, 3, "input", 4, s->count, s->channel_size, 1, &n));
    n /= 4u;
    TRY(main_rng(c, 1, "input", s->in, n));
    TRY(main_rng(c, 2, "output", s->out, 4u * n));
    TRY(disjoint(c, 1, "input", s->in, n, s->out, 4u * n));
    set_out(c->L, s, OKPU_DTYPE_F32, s->out, n);
    set_work(c, n + s->count);
    return OKPU_OK;
}

/* K210_CONV: flags, main_mem_out_address, layer_offset, weights_offset, bn_offset, act_offset; the four offsets are
 * absolute file offsets into this body. Alignments differ between writers
 * (docs/kpu-reference.md section 8.5): only ranges are checked. */
static int parse_conv(v3_ctx *c, v3_state *s)
{
    okpu_model *m = c->m;
    kpu_layer_job *j = &s->job;
    const kpu_args *a = &j->args;
    uint32_t layer_off = fld(c, 2), w_off = fld(c, 3), bn_off = fld(c, 4), act_off = fld(c, 5);
    uint64_t src_rows, dst_rows, out_bytes;
    int eight = (int)(m->flags & 1u);

    s->flags = fld(c, 0);
    s->out = fld(c, 1);
    TRY(body_rng(c, "layer argument (96 bytes, layer_offset)", layer_off, KPU_ARGS_BYTES));
    j->raw_args = m->data + layer_off;
    kpu_args_decode(j->raw_args, &j->args);
    TRY(kpu_args_check(a, c->idx, (long)layer_off, c->err));
    TRY(body_rng(c, eight ? "8-bit weights (weights_offset)" : "16-bit weights (weights_offset)", w_off,
                 kpu_weights_bytes(a, eight)));
    TRY(body_rng(c, "batch-norm table (bn_offset)", bn_off, kpu_bn_bytes(a)));
    TRY(body_rng(c, "activation table (act_offset)", act_off, KPU_ACT_TABLE_BYTES));
    j->weights = m->data + w_off;
    j->bn = m->data + bn_off;
    j->act = m->data + act_off;
    j->eight_bit = eight;
    j->main_out = NULL;
    j->layer = c->idx;

    src_rows = kpu_layout_rows(a->in_width, a->in_height, a->in_channels);
    dst_rows = kpu_layout_rows(a->out_width, a->out_height, a->out_channels);
    TRY(kpu_rng(c, 2, "input feature map", a->image_src_addr, src_rows));
    TRY(kpu_rng(c, 2, "output feature map", a->image_dst_addr, dst_rows));
    okpu_model_touch_kpu_rows(m, a->image_src_addr, (uint32_t)src_rows);
    okpu_model_touch_kpu_rows(m, a->image_dst_addr, (uint32_t)dst_rows);

    out_bytes = (uint64_t)a->out_width * a->out_height * a->out_channels;
    if (s->flags & V3_MAIN_MEM_OUT) {
        if ((uint64_t)a->dma_total_byte + 1u != out_bytes)
            return bad(c, OKPU_ERR_KMODEL_FORMAT, (uint64_t)layer_off + 88u,
                       "main-memory output of %llu bytes (dma_total_byte + 1) does not match the output map "
                       "%lux%lux%lu = %llu bytes; the file is corrupt",
                       (unsigned long long)a->dma_total_byte + 1u, (unsigned long)a->out_width,
                       (unsigned long)a->out_height, (unsigned long)a->out_channels, (unsigned long long)out_bytes);
        TRY(main_rng(c, 1, "main-memory output (main_mem_out_address)", s->out, out_bytes));
        s->wr_valid = 1;
        s->wr_u8 = 1;
        s->wr_off = s->out;
        s->wr_size = (uint32_t)out_bytes;
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
    c->L->info.macs = kpu_args_macs(a);
    set_work(c, c->L->info.macs);
    set_map(c->L, a->image_dst_addr, a->out_width, a->out_height, a->out_channels);
    return OKPU_OK;
}

/* K210_ADD_PADDING: flags, main_in, kpu_out (row), channels. */
static int parse_add_padding(v3_ctx *c, v3_state *s)
{
    uint32_t rows;
    s->in = fld(c, 1), s->out = fld(c, 2), s->count = fld(c, 3);
    if (s->count == 0 || s->count > 1024u)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 12u, "channels is %lu, expected 1..1024 (KPU limit)",
                   (unsigned long)s->count);
    rows = okpu_k_add_padding_rows(s->count);
    TRY(main_rng(c, 1, "input", s->in, s->count));
    TRY(kpu_rng(c, 2, "padded 4x4 output map", s->out, rows));
    okpu_model_touch_kpu_rows(c->m, s->out, rows);
    set_map(c->L, s->out, 4, 4, s->count);
    set_work(c, 16ull * s->count);
    return OKPU_OK;
}

/* K210_REMOVE_PADDING: flags, main_in, main_out, channels: out[c] = in[16c]. */
static int parse_remove_padding(v3_ctx *c, v3_state *s)
{
    s->in = fld(c, 1), s->out = fld(c, 2), s->count = fld(c, 3);
    TRY(main_rng(c, 1, "input", s->in, s->count ? 16ull * (s->count - 1u) + 1u : 0u));
    TRY(main_rng(c, 2, "output", s->out, s->count));
    TRY(disjoint(c, 1, "input", s->in, s->count ? 16ull * (s->count - 1u) + 1u : 0u, s->out, s->count));
    set_out(c->L, s, OKPU_DTYPE_U8, s->out, s->count);
    set_work(c, s->count);
    return OKPU_OK;
}

/* K210_UPLOAD: flags, main_in, kpu_out (row), width, height, channels. */
static int parse_upload(v3_ctx *c, v3_state *s)
{
    uint32_t rows;
    s->in = fld(c, 1), s->out = fld(c, 2), s->w = fld(c, 3), s->h = fld(c, 4), s->c = fld(c, 5);
    if (!s->w || !s->h || !s->c || s->w > 4096u || s->h > 4096u || s->c > 4096u)
        return bad(c, OKPU_ERR_KMODEL_FORMAT, c->boff + 12u,
                   "map %lux%lux%lu: expected width, height and channels of 1..4096", (unsigned long)s->w,
                   (unsigned long)s->h, (unsigned long)s->c);
    rows = kpu_layout_rows(s->w, s->h, s->c);
    TRY(main_rng(c, 1, "input", s->in, (uint64_t)s->w * s->h * s->c));
    TRY(kpu_rng(c, 2, "output map", s->out, rows));
    okpu_model_touch_kpu_rows(c->m, s->out, rows);
    set_map(c->L, s->out, s->w, s->h, s->c);
    set_work(c, (uint64_t)s->w * s->h * s->c);
    return OKPU_OK;
}

/* ---- run functions ---- */

#define MAIN(off) (m->main_mem + (off))

static int run_add(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    okpu_k_add_f32(MAIN(s->in), MAIN(s->in_b), MAIN(s->out), s->count);
    return OKPU_OK;
}

static int run_qadd(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    okpu_k_quant_add_u8(MAIN(s->in), MAIN(s->in_b), MAIN(s->out), s->count, &s->p.qadd, m->opts.v3_quant_round);
    return OKPU_OK;
}

static int run_gpool(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)err;
    switch (L->type) {
    case V3_GLOBAL_MAX_POOL2D:
        okpu_k_global_max_f32(MAIN(s->in), MAIN(s->out), s->kernel_size, s->count);
        break;
    case V3_GLOBAL_AVERAGE_POOL2D:
        okpu_k_global_avg_f32(MAIN(s->in), MAIN(s->out), s->kernel_size, s->count);
        break;
    case V3_QUANTIZED_GLOBAL_MAX_POOL2D:
        okpu_k_global_max_u8(MAIN(s->in), MAIN(s->out), s->kernel_size, s->count);
        break;
    default:
        okpu_k_global_avg_u8(MAIN(s->in), MAIN(s->out), s->kernel_size, s->count);
        break;
    }
    return OKPU_OK;
}

static int run_pool(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)err;
    switch (L->type) {
    case V3_MAX_POOL2D:
        okpu_k_max_pool_f32(MAIN(s->in), MAIN(s->out), &s->p.pool, s->act);
        break;
    case V3_AVERAGE_POOL2D:
        okpu_k_avg_pool_f32(MAIN(s->in), MAIN(s->out), &s->p.pool, s->act);
        break;
    case V3_QUANTIZED_MAX_POOL2D:
        okpu_k_max_pool_u8(MAIN(s->in), MAIN(s->out), &s->p.pool);
        break;
    default:
        okpu_k_avg_pool_u8(MAIN(s->in), MAIN(s->out), &s->p.pool);
        break;
    }
    return OKPU_OK;
}

static int run_quant(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)err;
    if (L->type == V3_QUANTIZE)
        okpu_k_quantize(MAIN(s->in), MAIN(s->out), s->count, s->scale, s->bias);
    else
        okpu_k_dequantize(MAIN(s->in), MAIN(s->out), s->count, s->scale, s->bias);
    return OKPU_OK;
}

static int run_requant(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    okpu_k_requantize(MAIN(s->in), MAIN(s->out), s->count, s->blob);
    return OKPU_OK;
}

static int run_vec(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)err;
    if (L->type == V3_SOFTMAX)
        okpu_k_softmax_f32(MAIN(s->in), MAIN(s->out), s->count);
    else if (L->type == V3_L2_NORMALIZATION)
        okpu_k_l2_normalize_f32(MAIN(s->in), MAIN(s->out), s->count);
    else
        okpu_k_logistic_f32(MAIN(s->in), MAIN(s->out), s->count);
    return OKPU_OK;
}

static int run_concat(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    uint32_t i;
    size_t dst = s->out;
    (void)L, (void)err;
    for (i = 0; i < s->count; i++) {
        uint32_t start = okpu_rd_u32(s->blob + 8u * i), size = okpu_rd_u32(s->blob + 8u * i + 4u);
        memmove(MAIN(dst), MAIN(start), size);
        dst += size;
    }
    return OKPU_OK;
}

static int run_fc(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    okpu_k_fc_f32(MAIN(s->in), MAIN(s->out), s->blob, s->blob2, s->in_ch, s->out_ch, s->act);
    return OKPU_OK;
}

static int run_qfc(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    okpu_k_fc_u8(MAIN(s->in), MAIN(s->out), s->blob, s->blob2, s->in_ch, s->out_ch, &s->p.qfc, m->opts.v3_quant_round);
    return OKPU_OK;
}

static int run_flatten(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)err;
    okpu_k_flatten(MAIN(s->in), MAIN(s->out), s->w, s->h, s->c, L->type == V3_TENSORFLOW_FLATTEN ? 4u : 1u);
    return OKPU_OK;
}

static int run_resize(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)err;
    okpu_k_resize_nearest(MAIN(s->in), MAIN(s->out), s->w, s->h, s->c, s->ow, s->oh,
                          L->type == V3_RESIZE_NEAREST_NEIGHBOR ? 4u : 1u);
    return OKPU_OK;
}

static int run_cwdq(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    okpu_k_channelwise_dequantize(MAIN(s->in), MAIN(s->out), s->count, s->channel_size, s->blob);
    return OKPU_OK;
}

static int run_conv(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    kpu_layer_job job = s->job;
    (void)L;
    job.main_out = (s->flags & V3_MAIN_MEM_OUT) ? MAIN(s->out) : NULL;
    if (!m->kpu || !m->kpu->run_layer)
        return okpu_fail(err, OKPU_ERR_RUN_MODEL, job.layer, (long)L->body_offset,
                         "layer %d (K210_CONV): no KPU backend to run it", job.layer);
    return m->kpu->run_layer(m->kpu, &job, err);
}

static int run_add_padding(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    okpu_k_add_padding(MAIN(s->in), m->kpu->ram + (size_t)s->out * OKPU_KPU_ROW_BYTES, s->count);
    return OKPU_OK;
}

static int run_remove_padding(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    okpu_k_remove_padding(MAIN(s->in), MAIN(s->out), s->count);
    return OKPU_OK;
}

static int run_upload(okpu_model *m, okpu_layer *L, v3_state *s, okpu_error *err)
{
    (void)L, (void)err;
    kpu_layout_upload(m->kpu->ram, s->out, MAIN(s->in), s->w, s->h, s->c);
    return OKPU_OK;
}

/* ---- the table: every v3 layer type, once ---- */

static const v3_op v3_ops[] = {
    {V3_ADD, "ADD", 20, parse_add, run_add},
    {V3_QUANTIZED_ADD, "QUANTIZED_ADD", 56, parse_qadd, run_qadd},
    {V3_GLOBAL_MAX_POOL2D, "GLOBAL_MAX_POOL2D", 20, parse_gpool, run_gpool},
    {V3_QUANTIZED_GLOBAL_MAX_POOL2D, "QUANTIZED_GLOBAL_MAX_POOL2D", 20, parse_gpool, run_gpool},
    {V3_GLOBAL_AVERAGE_POOL2D, "GLOBAL_AVERAGE_POOL2D", 20, parse_gpool, run_gpool},
    {V3_QUANTIZED_GLOBAL_AVERAGE_POOL2D, "QUANTIZED_GLOBAL_AVERAGE_POOL2D", 20, parse_gpool, run_gpool},
    {V3_MAX_POOL2D, "MAX_POOL2D", 64, parse_pool, run_pool},
    {V3_QUANTIZED_MAX_POOL2D, "QUANTIZED_MAX_POOL2D", 60, parse_pool, run_pool},
    {V3_AVERAGE_POOL2D, "AVERAGE_POOL2D", 64, parse_pool, run_pool},
    {V3_QUANTIZED_AVERAGE_POOL2D, "QUANTIZED_AVERAGE_POOL2D", 60, parse_pool, run_pool},
    {V3_QUANTIZE, "QUANTIZE", 24, parse_quant, run_quant},
    {V3_DEQUANTIZE, "DEQUANTIZE", 24, parse_quant, run_quant},
    {V3_REQUANTIZE, "REQUANTIZE", 16 + 256, parse_requant, run_requant},
    {V3_L2_NORMALIZATION, "L2_NORMALIZATION", 16, parse_vec, run_vec},
    {V3_SOFTMAX, "SOFTMAX", 16, parse_vec, run_vec},
    {V3_CONCAT, "CONCAT", 12, parse_concat, run_concat},
    {V3_QUANTIZED_CONCAT, "QUANTIZED_CONCAT", 12, parse_concat, run_concat},
    {V3_FULLY_CONNECTED, "FULLY_CONNECTED", 24, parse_fc, run_fc},
    {V3_QUANTIZED_FULLY_CONNECTED, "QUANTIZED_FULLY_CONNECTED", 40, parse_qfc, run_qfc},
    {V3_TENSORFLOW_FLATTEN, "TENSORFLOW_FLATTEN", 24, parse_flatten, run_flatten},
    {V3_QUANTIZED_TENSORFLOW_FLATTEN, "QUANTIZED_TENSORFLOW_FLATTEN", 24, parse_flatten, run_flatten},
    {V3_RESIZE_NEAREST_NEIGHBOR, "RESIZE_NEAREST_NEIGHBOR", 36, parse_resize, run_resize},
    {V3_QUANTIZED_RESIZE_NEAREST_NEIGHBOR, "QUANTIZED_RESIZE_NEAREST_NEIGHBOR", 36, parse_resize, run_resize},
    {V3_CHANNELWISE_DEQUANTIZE, "CHANNELWISE_DEQUANTIZE", 20, parse_cwdq, run_cwdq},
    {V3_LOGISTIC, "LOGISTIC", 16, parse_vec, run_vec},
    {V3_K210_CONV, "K210_CONV", 24, parse_conv, run_conv},
    {V3_K210_ADD_PADDING, "K210_ADD_PADDING", 16, parse_add_padding, run_add_padding},
    {V3_K210_REMOVE_PADDING, "K210_REMOVE_PADDING", 16, parse_remove_padding, run_remove_padding},
    {V3_K210_UPLOAD, "K210_UPLOAD", 24, parse_upload, run_upload},
};

static const v3_op *find_op(uint32_t type)
{
    size_t i;
    for (i = 0; i < sizeof v3_ops / sizeof v3_ops[0]; i++)
        if (v3_ops[i].type == type)
            return &v3_ops[i];
    return NULL;
}

/* ---- format interface ---- */

static int v3_parse_layer(okpu_model *m, int i, uint64_t hdr_off, uint64_t boff, okpu_error *err)
{
    okpu_layer *L = &m->layers[i];
    const uint8_t *h = m->data + hdr_off;
    uint32_t type = okpu_rd_u32(h), bsize = okpu_rd_u32(h + 4);
    uint64_t end = boff + bsize;
    const v3_op *op = find_op(type);
    v3_ctx c;
    v3_state *s;

    if (!op)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, i, (long)hdr_off,
                         "layer %d: unknown layer type %lu in the layer table at byte %lu; v3 types are 1-25 and "
                         "10240-10243 — the file is corrupt or not an nncase v0.1 / Maix-EMC model",
                         i, (unsigned long)type, (unsigned long)hdr_off);
    L->type = type;
    L->op = op;
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
    c.err = err;
    if (c.avail < op->min_body)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, i, (long)boff,
                         "layer %d (%s) body at byte %llu: its %lu bytes of fields end past the end of the file (%lu "
                         "bytes); the file is truncated — copy it again",
                         i, op->name, (unsigned long long)boff, (unsigned long)op->min_body, (unsigned long)m->size);

    {
        size_t bytes = type == V3_K210_CONV ? sizeof *s : offsetof(v3_state, job);
        s = (v3_state *)okpu_model_alloc(m, bytes);
        if (!s)
            return okpu_fail(err, OKPU_ERR_NO_MEM, i, (long)boff, "out of memory decoding layer %d (%s)", i,
                             op->name);
        s->alloc_size = (uint32_t)bytes;
    }
    L->state = s;
    s->flags = okpu_rd_u32(c.body);
    {
        int rc = op->parse(&c, s);
        if (rc != OKPU_OK)
            return rc;
    }
    L->out.t.layer = i;
    L->info.output = L->out.t;
    return OKPU_OK;
}

static int v3_parse(okpu_model *m, okpu_error *err)
{
    const uint8_t *d = m->data;
    uint32_t arch, nlayers, nout, main_mem, i;
    uint64_t tables_end, boff;
    int rc;

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
    if (main_mem > OKPU_BOARD_SRAM_SIZE) /* a corrupt size fails here, before the layer walk */
        return okpu_model_check_main_budget(m, err);
    if (nlayers > 0x7FFFFFFFu)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, 12, "layer count %lu is too large",
                         (unsigned long)nlayers);

    rc = okpu_model_alloc_layers(m, (int)nlayers, err);
    if (rc != OKPU_OK)
        return rc;

    boff = tables_end;
    for (i = 0; i < nlayers; i++) {
        uint64_t hdr = V3_HEADER_BYTES + 8ull * nout + 8ull * i;
        rc = v3_parse_layer(m, (int)i, hdr, boff, err);
        if (rc != OKPU_OK)
            return rc;
        boff += m->layers[i].body_size;
    }

    /* the model input: first layer */
    {
        okpu_layer *L0 = &m->layers[0];
        v3_state *s0 = (v3_state *)L0->state;
        okpu_place *in = &m->inputs[0];
        memset(in, 0, sizeof *in);
        in->t.n = 1;
        in->t.layer = -1;
        if (L0->type == V3_K210_CONV) {
            const kpu_args *a = &s0->job.args;
            in->mem = OKPU_MEM_KPU;
            in->offset = a->image_src_addr;
            in->t.dtype = OKPU_DTYPE_U8;
            in->t.c = a->in_channels;
            in->t.h = a->in_height;
            in->t.w = a->in_width;
            in->t.bytes = a->in_width * a->in_height * a->in_channels;
        } else if (L0->type == V3_FULLY_CONNECTED) {
            in->mem = OKPU_MEM_MAIN;
            in->offset = s0->in;
            in->t.dtype = OKPU_DTYPE_F32;
            in->t.c = 1;
            in->t.h = 1;
            in->t.w = s0->in_ch;
            in->t.bytes = 4u * s0->in_ch;
        } else {
            return okpu_fail(err, OKPU_ERR_GET_CONV_LAYER, 0, (long)L0->body_offset,
                             "layer 0 (%s) body at byte %lu: the first layer must be K210_CONV (image input) or "
                             "FULLY_CONNECTED (float input), found %s; MaixPy cannot feed this model — recompile it "
                             "so it starts with a convolution or a dense layer",
                             L0->info.type_name, (unsigned long)L0->body_offset, L0->info.type_name);
        }
        m->input_count = 1;
    }

    /* the outputs: header table, dtype from the last layer writing there */
    for (i = 0; i < nout; i++) {
        uint64_t off = V3_HEADER_BYTES + 8ull * i;
        uint32_t addr = okpu_rd_u32(d + off), size = okpu_rd_u32(d + off + 4);
        okpu_place *o = &m->outputs[i];
        int j, u8 = 0;
        rc = okpu_model_check_main(m, -1, (long)off, "output", addr, size, err);
        if (rc != OKPU_OK)
            return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, (long)off,
                             "kmodel v3 output table entry %lu at byte %llu: address %lu + size %lu ends past the main "
                             "buffer (main_mem_usage %lu bytes); the file is corrupt — copy it again",
                             (unsigned long)i, (unsigned long long)off, (unsigned long)addr, (unsigned long)size,
                             (unsigned long)m->main_mem_size);
        for (j = (int)nlayers - 1; j >= 0; j--) {
            const v3_state *s = (const v3_state *)m->layers[j].state;
            if (s->wr_valid && addr >= s->wr_off && addr - s->wr_off < (s->wr_size ? s->wr_size : 1u)) {
                u8 = s->wr_u8;
                break;
            }
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

static int v3_run_layer(okpu_model *m, int index, okpu_error *err)
{
    okpu_layer *L = &m->layers[index];
    const v3_op *op = (const v3_op *)L->op;
    return op->run(m, L, (v3_state *)L->state, err);
}

static void v3_free_layer(okpu_model *m, okpu_layer *L)
{
    if (L->state)
        okpu_model_free_mem(m, L->state, ((v3_state *)L->state)->alloc_size);
    L->state = NULL;
}

const okpu_format okpu_format_v3 = {"kmodel v3 (nncase v0.1 / Maix-EMC)", 3, v3_parse, okpu_legacy_decode, v3_run_layer, v3_free_layer};

/* The bound okpu_model_alloc_layers applies assumes small records for non-KPU layers. */
typedef char v3_small_state_fits[offsetof(v3_state, job) <= OKPU_LAYER_STATE_MAX ? 1 : -1];

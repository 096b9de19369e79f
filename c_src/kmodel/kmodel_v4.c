// SPDX-License-Identifier: Apache-2.0
/* kmodel v4 (nncase v0.2.x) front-end of the execution plan (plan/plan.h).
 *
 * Layout (docs/kpu-reference.md section 6; nncase v0.2.0-beta4 runtime/model.h, interpreter.cpp): a 40-byte header,
 * input memory ranges, input shapes, output memory ranges, the constants blob, {opcode, body_size} per node, then the
 * bodies one after another (body += body_size; the last may run past EOF by < 8 bytes of unwritten padding).
 *
 * Every opcode is listed once, in kmodel_v4_ops.def (opcode, name, fixed body bytes, decoder). A decoder reads and
 * validates its node's body once, at load, and turns it into one step (plan/steps_neutral.h, plan/steps_kpu.h) with
 * every pointer resolved: constants -> the file, main ranges -> the main buffer, KPU ranges -> the backend's KPU RAM.
 * Nothing is decoded while running. Body layouts follow nncase v0.2.0-beta4 neutral_ops_body.h / cpu_ops_body.h /
 * k210_ops_body.h: plain structs read field by field (enums and bools are 4 / 1 bytes, struct tail padding included
 * in the body size). Error messages name the node, its body and the byte offset of the field at fault.
 *
 * Rounding of the quantized ops (docs/kpu-reference.md section 8 item 3): opts->v4_quant_round, copied into each
 * step. Default HALF_UP, because nncase v0.2.0-beta4's runtime — the one that writes and runs these files, and what
 * MaixPy's prebuilt v4 library is built from — computes `(v * mul + 2^(s-1)) >> s`; SDK_CARRY (the odd-bit carry
 * shift of older nncase / the SDK's bundled runtime) stays selectable because no hardware dump settles which one a
 * given firmware uses.
 *
 * Float ops: float32 exactly as the K210 build of nncase computes them (fmaf where riscv GCC contracts a*b+c;
 * quantize / dequantize as kernels/riscv/neutral_kernels.h): see kernels/neutral_kernels.h. */
#include "kmodel_v4.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/arith.h"
#include "../core/bytes.h"
#include "../core/checked.h"
#include "../core/error.h"
#include "../kernels/neutral_kernels.h"
#include "../kernels/nnil.h"
#include "../kpu/kpu_args.h"
#include "../kpu/kpu_layout.h"

#define KMDL_ID 0x4B4D444Cu
#define V4_MAX_NODES 65536u
#define V4_MAX_DIM (1 << 24)
#define V4_MAX_ELEMS ((uint64_t)1 << 30)
#define V4_MAX_CONCAT 4096u
#define V4_MAX_BATCHES 1024
#define V4_MAX_WINDOW 4096
#define V4_SHAPE_LOOKBACK 64 /* nodes set_t_like searches for the shape of a flat input (real models: 1-3) */

enum { MT_CONST = 0, MT_MAIN = 1, MT_KPU = 2 };
enum { DT_F32 = 0, DT_U8 = 1 };

typedef struct v4_mr {
    uint32_t type, dtype, start, size;
} v4_mr;

/* What a decoder reports besides its step: the ranges the overlap check needs, the tensor the node writes and
 * where (layer info, output shapes, partial runs), and its work. */
typedef struct v4_node {
    v4_mr in, in2, out;
    okpu_tensor t;
    int out_mem; /* okpu_mem_kind */
    uint32_t out_off;
    uint64_t work; /* multiply-accumulates or elements touched; 0: one pass over the output */
} v4_node;

typedef struct v4_op v4_op;

/* The node being decoded. */
typedef struct v4_cx {
    okpu_model *m;
    okpu_error *err;
    int idx;
    const v4_op *op;
    const uint8_t *body;
    uint32_t avail; /* body bytes present in the file (<= body_size) */
    uint32_t body_size;
    uint32_t pos;
    uint32_t body_off;
    uint32_t const_off, const_size;
} v4_cx;

struct v4_op {
    uint32_t opcode;
    const char *name;
    int (*decode)(v4_cx *cx, v4_node *n); /* validate the body, give the layer its step */
};

/* ---- errors ---- */

#if !(defined(OKPU_ERROR_TERSE) && OKPU_ERROR_TERSE)
static int nfail_v(v4_cx *cx, uint32_t at, const char *fmt, va_list ap)
{
    char msg[400];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return okpu_fail(cx->err, OKPU_ERR_KMODEL_FORMAT, cx->idx, (long)cx->body_off + (long)at,
                     "kmodel v4 node %d (%s, opcode 0x%X) body at byte %lu, field at byte %lu: %s; the file is "
                     "corrupt or not written by nncase v0.2 - re-export it with nncase v0.2.0",
                     cx->idx, cx->op ? cx->op->name : "?", cx->op ? (unsigned)cx->op->opcode : 0u,
                     (unsigned long)cx->body_off, (unsigned long)cx->body_off + at, msg);
}

/* A format error at body offset `at` / at the read position. */
static int nfail_at(v4_cx *cx, uint32_t at, const char *fmt, ...) OKPU_PRINTF(3, 4);
static int nfail_at(v4_cx *cx, uint32_t at, const char *fmt, ...)
{
    int rc;
    va_list ap;
    va_start(ap, fmt);
    rc = nfail_v(cx, at, fmt, ap);
    va_end(ap);
    return rc;
}

static int nfail(v4_cx *cx, const char *fmt, ...) OKPU_PRINTF(2, 3);
static int nfail(v4_cx *cx, const char *fmt, ...)
{
    int rc;
    va_list ap;
    va_start(ap, fmt);
    rc = nfail_v(cx, cx->pos, fmt, ap);
    va_end(ap);
    return rc;
}
#else
#define nfail_at(cx, at, ...) okpu_fail_terse((cx)->err, OKPU_ERR_KMODEL_FORMAT, (cx)->idx, (long)(cx)->body_off + (long)(at))
#define nfail(cx, ...) nfail_at((cx), (cx)->pos, __VA_ARGS__)
#endif

/* The layer's step of `kind` (zeroed arguments + `tail` bytes) into `args`, or return the allocation error. */
#define NEW_STEP(cx, args, kind, tail)                                                                                 \
    do {                                                                                                               \
        (args) = okpu_model_add_step((cx)->m, (cx)->idx, (kind), (tail), (cx)->err);                                   \
        if (!(args))                                                                                                   \
            return (cx)->err ? (cx)->err->code : OKPU_ERR_NO_MEM;                                                      \
    } while (0)

/* ---- body reader ---- */

static int need_at(v4_cx *cx, uint32_t at, uint32_t bytes, const char *what)
{
    if (bytes > cx->avail || at > cx->avail - bytes)
        return nfail_at(cx, at, "expected %s (%lu bytes at body offset %lu) but the body has only %lu bytes%s", what,
                        (unsigned long)bytes, (unsigned long)at, (unsigned long)cx->avail,
                        cx->avail < cx->body_size ? " before the end of the file (truncated)" : "");
    return OKPU_OK;
}

static int need(v4_cx *cx, uint32_t bytes, const char *what)
{
    return need_at(cx, cx->pos, bytes, what);
}

static int rd_i32(v4_cx *cx, int32_t *v, const char *what)
{
    OKPU_TRY(need(cx, 4, what));
    *v = okpu_rd_i32(cx->body + cx->pos);
    cx->pos += 4;
    return OKPU_OK;
}

static int rd_u32(v4_cx *cx, uint32_t *v, const char *what)
{
    OKPU_TRY(need(cx, 4, what));
    *v = okpu_rd_u32(cx->body + cx->pos);
    cx->pos += 4;
    return OKPU_OK;
}

static int rd_f32(v4_cx *cx, float *v, const char *what)
{
    OKPU_TRY(need(cx, 4, what));
    *v = okpu_rd_f32(cx->body + cx->pos);
    cx->pos += 4;
    return OKPU_OK;
}

/* `count` i32 fields named names[i] */
static int rd_i32s(v4_cx *cx, int32_t *v, int count, const char *const *names)
{
    int i;
    for (i = 0; i < count; i++)
        OKPU_TRY(rd_i32(cx, &v[i], names[i]));
    return OKPU_OK;
}

static int rd_shape(v4_cx *cx, int32_t s[4], const char *what)
{
    int i;
    OKPU_TRY(need(cx, 16, what));
    for (i = 0; i < 4; i++)
        s[i] = okpu_rd_i32(cx->body + cx->pos + 4u * (uint32_t)i);
    cx->pos += 16;
    return OKPU_OK;
}

static int rd_span(v4_cx *cx, const uint8_t **p, uint64_t bytes, const char *what)
{
    if (bytes > 0xFFFFFFFFu)
        return nfail(cx, "%s would be %llu bytes, larger than any model", what, (unsigned long long)bytes);
    OKPU_TRY(need(cx, (uint32_t)bytes, what));
    *p = cx->body + cx->pos;
    cx->pos += (uint32_t)bytes;
    return OKPU_OK;
}

/* Skip the memory ranges a body starts with: they are checked (mr_at) once the fields after them give their sizes. */
static int skip_ranges(v4_cx *cx, uint32_t count, const char *what)
{
    OKPU_TRY(need(cx, 16u * count, what));
    cx->pos += 16u * count;
    return OKPU_OK;
}

static void mr_decode(const uint8_t *p, v4_mr *r)
{
    r->type = okpu_rd_u32(p);
    r->dtype = okpu_rd_u32(p + 4);
    r->start = okpu_rd_u32(p + 8);
    r->size = okpu_rd_u32(p + 12);
}

static const char *mt_name(uint32_t t)
{
    return t == MT_CONST ? "const" : t == MT_MAIN ? "main" : t == MT_KPU ? "k210_kpu" : "unknown";
}

static const char *dt_name(uint32_t d)
{
    return d == DT_F32 ? "float32" : d == DT_U8 ? "uint8" : "unknown";
}

static uint64_t mem_size(const v4_cx *cx, uint32_t type)
{
    return type == MT_CONST ? cx->const_size : type == MT_MAIN ? cx->m->main_mem_size : OKPU_KPU_RAM_SIZE;
}

/* Check the memory range at body offset `at` (errors name that offset): memory type in `types` (bit mask of
 * 1 << type), datatype `dtype` (-1: f32 or u8), size == `bytes` (UINT64_MAX: any), and inside its memory. */
static int mr_at(v4_cx *cx, uint32_t at, v4_mr *r, const char *what, unsigned types, int dtype, uint64_t bytes)
{
    OKPU_TRY(need_at(cx, at, 16, what));
    mr_decode(cx->body + at, r);
    if (r->type > MT_KPU || !(types & (1u << r->type)))
        return nfail_at(cx, at, "%s has memory_type %lu (%s); expected %s%s%s", what, (unsigned long)r->type,
                        mt_name(r->type), (types & 1u) ? "const " : "", (types & 2u) ? "main " : "",
                        (types & 4u) ? "k210_kpu" : "");
    if (r->dtype > DT_U8 || (dtype >= 0 && r->dtype != (uint32_t)dtype))
        return nfail_at(cx, at, "%s has datatype %lu (%s); expected %s", what, (unsigned long)r->dtype,
                        dt_name(r->dtype), dtype < 0 ? "float32 or uint8" : dt_name((uint32_t)dtype));
    if ((uint64_t)r->start + r->size > mem_size(cx, r->type))
        return nfail_at(cx, at, "%s [%lu, %lu) lies outside %s memory of %llu bytes", what, (unsigned long)r->start,
                        (unsigned long)((uint64_t)r->start + r->size), mt_name(r->type),
                        (unsigned long long)mem_size(cx, r->type));
    if (bytes != UINT64_MAX && r->size != bytes)
        return nfail_at(cx, at, "%s is %lu bytes but the node's shape/count needs %llu bytes", what,
                        (unsigned long)r->size, (unsigned long long)bytes);
    return OKPU_OK;
}

/* The same for the range at the read position, which then moves past it. */
static int rd_mr(v4_cx *cx, v4_mr *r, const char *what, unsigned types, int dtype, uint64_t bytes)
{
    OKPU_TRY(mr_at(cx, cx->pos, r, what, types, dtype, bytes));
    cx->pos += 16;
    return OKPU_OK;
}

/* Where a checked input range's data is (constants in the file, or the main buffer) / a checked output range's. */
static const uint8_t *src_ptr(const v4_cx *cx, const v4_mr *r)
{
    return r->type == MT_CONST ? cx->m->data + cx->const_off + r->start : OKPU_MAIN(cx->m, r->start);
}

static uint8_t *dst_ptr(const v4_cx *cx, const v4_mr *r)
{
    return OKPU_MAIN(cx->m, r->start);
}

static unsigned esize(uint32_t dtype)
{
    return dtype == DT_F32 ? 4u : 1u;
}

#define IN_TYPES ((1u << MT_CONST) | (1u << MT_MAIN))
#define OUT_TYPES (1u << MT_MAIN)

/* Shape: every dim in 1..2^24, product <= 2^30. */
static int chk_shape(v4_cx *cx, const int32_t s[4], const char *what, uint64_t *count)
{
    uint64_t c = 1;
    int i;
    for (i = 0; i < 4; i++) {
        if (s[i] < 1 || s[i] > V4_MAX_DIM)
            return nfail(cx, "%s [%ld, %ld, %ld, %ld]: dimension %d is %ld, expected 1..%d", what, (long)s[0],
                         (long)s[1], (long)s[2], (long)s[3], i, (long)s[i], V4_MAX_DIM);
        c *= (uint64_t)s[i];
        if (c > V4_MAX_ELEMS)
            return nfail(cx, "%s [%ld, %ld, %ld, %ld] has more than 2^30 elements", what, (long)s[0], (long)s[1],
                         (long)s[2], (long)s[3]);
    }
    if (count)
        *count = c;
    return OKPU_OK;
}

/* rd_shape then chk_shape */
static int rd_chk_shape(v4_cx *cx, int32_t s[4], const char *what, uint64_t *count)
{
    OKPU_TRY(rd_shape(cx, s, what));
    return chk_shape(cx, s, what, count);
}

static int chk_positive(v4_cx *cx, int32_t v, int32_t max, const char *what)
{
    if (v < 1 || v > max)
        return nfail(cx, "%s is %ld, expected 1..%ld", what, (long)v, (long)max);
    return OKPU_OK;
}

static int chk_shift(v4_cx *cx, int32_t s, const char *what)
{
    if (s < 0 || (uint32_t)s > OKPU_SHIFT_MAX) /* the one range of core/arith.h */
        return nfail(cx, "%s is %ld, expected 0..%u", what, (long)s, OKPU_SHIFT_MAX);
    return OKPU_OK;
}

/* The datatype field of the range at body offset `at` (ops whose element type follows their input's). */
static uint32_t dtype_at(const v4_cx *cx, uint32_t at)
{
    return okpu_rd_u32(cx->body + at + 4);
}

/* ---- what the node writes ---- */

static void set_t(v4_node *n, uint32_t dtype, int32_t a, int32_t b, int32_t c, int32_t d)
{
    n->t.dtype = dtype == DT_F32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8;
    n->t.n = (uint32_t)a;
    n->t.c = (uint32_t)b;
    n->t.h = (uint32_t)c;
    n->t.w = (uint32_t)d;
    n->t.bytes = (uint32_t)((uint64_t)a * (uint64_t)b * (uint64_t)c * (uint64_t)d * esize(dtype));
    n->out_mem = OKPU_MEM_MAIN;
    n->out_off = n->out.start;
}

static void set_t4(v4_node *n, uint32_t dtype, const int32_t s[4])
{
    set_t(n, dtype, s[0], s[1], s[2], s[3]);
}

/* Flat output: inherit the shape of whatever earlier node wrote `src` (same main offset, same element count),
 * else (1, count, 1, 1). */
static void set_t_like(v4_cx *cx, v4_node *n, const v4_mr *src, uint32_t dtype, uint32_t count)
{
    int j;
    set_t(n, dtype, 1, (int32_t)count, 1, 1);
    if (src->type != MT_MAIN)
        return;
    /* look back a bounded number of nodes: unbounded, 65,536 nodes cost 2^31 comparisons at load */
    for (j = cx->idx - 1; j >= 0 && j >= cx->idx - V4_SHAPE_LOOKBACK; j--) {
        const okpu_place *p = &cx->m->layers[j].out;
        if (p->mem == OKPU_MEM_MAIN && p->offset == src->start && p->t.bytes == src->size) {
            if ((uint64_t)p->t.n * p->t.c * p->t.h * p->t.w == count)
                set_t(n, dtype, (int32_t)p->t.n, (int32_t)p->t.c, (int32_t)p->t.h, (int32_t)p->t.w);
            return;
        }
    }
}

static uint64_t prod4u(const int32_t s[4])
{
    return okpu_sat_mul(okpu_sat_mul((uint64_t)s[0], (uint64_t)s[1]), okpu_sat_mul((uint64_t)s[2], (uint64_t)s[3]));
}

/* Elements of the node's output (work estimates saturate: a corrupt node shows a huge number, never a wrapped one). */
static uint64_t out_elems(const v4_node *n)
{
    return okpu_sat_mul(okpu_sat_mul(n->t.n, n->t.c), okpu_sat_mul(n->t.h, n->t.w));
}

/* Kernels other than the elementwise ones read inputs after they started writing the output: refuse a main-memory
 * input that overlaps the output. */
static int no_overlap(v4_cx *cx, const v4_node *n)
{
    const v4_mr *ins[2];
    const char *names[2] = {"input", "second input"};
    int k;
    ins[0] = &n->in;
    ins[1] = &n->in2;
    for (k = 0; k < 2; k++)
        if (ins[k]->type == MT_MAIN && okpu_ranges_overlap(ins[k]->start, ins[k]->size, n->out.start, n->out.size))
            return nfail_at(cx, 0,
                            "the %s [%lu, %llu) overlaps the output [%lu, %llu) in main memory; %s cannot work in "
                            "place",
                            names[k], (unsigned long)ins[k]->start, (unsigned long long)ins[k]->start + ins[k]->size,
                            (unsigned long)n->out.start, (unsigned long long)n->out.start + n->out.size,
                            cx->op->name);
    return OKPU_OK;
}

/* ---- windows ---- */

static int rd_window(v4_cx *cx, okpu_v4_window *w)
{
    OKPU_TRY(rd_i32(cx, &w->pad_h_before, "padding_h.before"));
    OKPU_TRY(rd_i32(cx, &w->pad_h_after, "padding_h.after"));
    OKPU_TRY(rd_i32(cx, &w->pad_w_before, "padding_w.before"));
    OKPU_TRY(rd_i32(cx, &w->pad_w_after, "padding_w.after"));
    OKPU_TRY(rd_i32(cx, &w->filter_h, "filter_h"));
    OKPU_TRY(rd_i32(cx, &w->filter_w, "filter_w"));
    OKPU_TRY(rd_i32(cx, &w->stride_h, "stride_h"));
    OKPU_TRY(rd_i32(cx, &w->stride_w, "stride_w"));
    OKPU_TRY(rd_i32(cx, &w->dilation_h, "dilation_h"));
    OKPU_TRY(rd_i32(cx, &w->dilation_w, "dilation_w"));
    OKPU_TRY(chk_positive(cx, w->filter_h, V4_MAX_WINDOW, "filter_h"));
    OKPU_TRY(chk_positive(cx, w->filter_w, V4_MAX_WINDOW, "filter_w"));
    OKPU_TRY(chk_positive(cx, w->stride_h, V4_MAX_WINDOW, "stride_h"));
    OKPU_TRY(chk_positive(cx, w->stride_w, V4_MAX_WINDOW, "stride_w"));
    OKPU_TRY(chk_positive(cx, w->dilation_h, V4_MAX_WINDOW, "dilation_h"));
    OKPU_TRY(chk_positive(cx, w->dilation_w, V4_MAX_WINDOW, "dilation_w"));
    if (w->pad_h_before < -V4_MAX_WINDOW || w->pad_h_before > V4_MAX_WINDOW || w->pad_h_after < -V4_MAX_WINDOW ||
        w->pad_h_after > V4_MAX_WINDOW || w->pad_w_before < -V4_MAX_WINDOW || w->pad_w_before > V4_MAX_WINDOW ||
        w->pad_w_after < -V4_MAX_WINDOW || w->pad_w_after > V4_MAX_WINDOW)
        return nfail(cx, "padding (%ld, %ld, %ld, %ld) out of range -%d..%d", (long)w->pad_h_before,
                     (long)w->pad_h_after, (long)w->pad_w_before, (long)w->pad_w_after, V4_MAX_WINDOW, V4_MAX_WINDOW);
    return OKPU_OK;
}

/* output h, w of the window over (h, w) */
static int window_out(v4_cx *cx, const okpu_v4_window *win, int32_t h, int32_t w, int32_t *oh, int32_t *ow)
{
    int64_t a = okpu_v4_windowed_size(h, win->filter_h, win->stride_h, win->dilation_h, win->pad_h_before,
                                 win->pad_h_after);
    int64_t b = okpu_v4_windowed_size(w, win->filter_w, win->stride_w, win->dilation_w, win->pad_w_before,
                                 win->pad_w_after);
    if (a < 1 || b < 1 || a > V4_MAX_DIM || b > V4_MAX_DIM)
        return nfail(cx,
                     "the window (filter %ldx%ld, stride %ldx%ld, dilation %ldx%ld) over %ldx%ld gives an output of "
                     "%lldx%lld, expected at least 1x1",
                     (long)win->filter_h, (long)win->filter_w, (long)win->stride_h, (long)win->stride_w,
                     (long)win->dilation_h, (long)win->dilation_w, (long)h, (long)w, (long long)a, (long long)b);
    *oh = (int32_t)a;
    *ow = (int32_t)b;
    return OKPU_OK;
}

/* Report a windowed node's maps (w, h, c; all already checked positive) and window in its layer info. */
static void window_info(v4_cx *cx, const okpu_v4_window *w, int32_t wi, int32_t hi, int32_t ci, int32_t wo, int32_t ho,
                        int32_t co)
{
    okpu_layer_info *I = &cx->m->layers[cx->idx].info;
    I->wi = (uint32_t)wi, I->hi = (uint32_t)hi, I->chi = (uint32_t)ci;
    I->wo = (uint32_t)wo, I->ho = (uint32_t)ho, I->cho = (uint32_t)co;
    I->kernel_w = (uint32_t)w->filter_w, I->kernel_h = (uint32_t)w->filter_h;
    I->stride_w = (uint32_t)w->stride_w, I->stride_h = (uint32_t)w->stride_h;
}

static uint64_t window_taps(const okpu_v4_window *w)
{
    return okpu_sat_mul((uint64_t)w->filter_h, (uint64_t)w->filter_w);
}

static int rd_act(v4_cx *cx, float *lo, float *hi)
{
    OKPU_TRY(rd_f32(cx, lo, "fused_activation.min"));
    return rd_f32(cx, hi, "fused_activation.max");
}

/* Bytes of e-byte elements in a*b*c*d, refused past any possible size: unchecked, oc*ic*fh*fw*4 wraps in 64 bits
 * and a tiny body passes for huge weights the kernel then reads outside the model. */
static int span_size(v4_cx *cx, const char *what, uint64_t e, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                     uint64_t *out)
{
    if (!okpu_mul4(a, b, c, d, OKPU_SIZE_LIMIT, out) && !okpu_mul_ovf(*out, e, OKPU_SIZE_LIMIT, out))
        return OKPU_OK;
    return nfail(cx, "%s of %llu x %llu x %llu x %llu elements exceed %llu bytes", what, (unsigned long long)a,
                 (unsigned long long)b, (unsigned long long)c, (unsigned long long)d,
                 (unsigned long long)OKPU_SIZE_LIMIT);
}

static const char *const qconv_names[5] = {"input_offset", "filter_offset", "output_mul", "output_shift",
                                           "output_offset"};

/* The quantization fields of the quantized convolutions (okpu_v4_qconv_params order). */
static int rd_qconv(v4_cx *cx, okpu_v4_qconv_params *q)
{
    int32_t v[5];
    OKPU_TRY(rd_i32s(cx, v, 5, qconv_names));
    OKPU_TRY(chk_shift(cx, v[3], "output_shift"));
    q->input_offset = v[0];
    q->filter_offset = v[1];
    q->output_mul = v[2];
    q->output_shift = v[3];
    q->output_offset = v[4];
    return OKPU_OK;
}

/* ================= neutral ops ================= */

/* binary / quantized_binary: three ranges, binary_op, three shapes (the ranges are sized by the shapes after them). */
static int binary_head(v4_cx *cx, v4_node *n, int quant, okpu_v4_binary_args *a)
{
    uint32_t at = cx->pos;
    uint64_t ca, cb, co;
    unsigned es = quant ? 1u : 4u;
    int dt = quant ? DT_U8 : DT_F32;
    int i;
    OKPU_TRY(need(cx, 48 + 4 + 48, "the three memory ranges, binary_op and three shapes"));
    cx->pos = at + 52;
    OKPU_TRY(rd_shape(cx, a->sa, "in_a_shape"));
    OKPU_TRY(rd_shape(cx, a->sb, "in_b_shape"));
    OKPU_TRY(rd_shape(cx, a->so, "out_shape"));
    OKPU_TRY(chk_shape(cx, a->sa, "in_a_shape", &ca));
    OKPU_TRY(chk_shape(cx, a->sb, "in_b_shape", &cb));
    OKPU_TRY(chk_shape(cx, a->so, "out_shape", &co));
    for (i = 0; i < 4; i++)
        if ((a->sa[i] != a->so[i] && a->sa[i] != 1) || (a->sb[i] != a->so[i] && a->sb[i] != 1))
            return nfail(cx,
                         "shapes a [%ld,%ld,%ld,%ld] and b [%ld,%ld,%ld,%ld] do not broadcast to out [%ld,%ld,%ld,%ld]",
                         (long)a->sa[0], (long)a->sa[1], (long)a->sa[2], (long)a->sa[3], (long)a->sb[0],
                         (long)a->sb[1], (long)a->sb[2], (long)a->sb[3], (long)a->so[0], (long)a->so[1],
                         (long)a->so[2], (long)a->so[3]);
    /* and out is their broadcast, no wider (the kernels write the broadcast's elements: a wider out would keep bytes
     * from before the op, and which ones would depend on how the threads split it) */
    for (i = 0; i < 4; i++)
        if (a->so[i] != (a->sa[i] > a->sb[i] ? a->sa[i] : a->sb[i]))
            return nfail(cx,
                         "out_shape [%ld,%ld,%ld,%ld] is not the broadcast of a [%ld,%ld,%ld,%ld] and b [%ld,%ld,%ld,%ld]: "
                         "dimension %d is %ld where both inputs have 1",
                         (long)a->so[0], (long)a->so[1], (long)a->so[2], (long)a->so[3], (long)a->sa[0],
                         (long)a->sa[1], (long)a->sa[2], (long)a->sa[3], (long)a->sb[0], (long)a->sb[1],
                         (long)a->sb[2], (long)a->sb[3], i, (long)a->so[i]);
    OKPU_TRY(mr_at(cx, at, &n->in, "input_a", IN_TYPES, dt, ca * es));
    OKPU_TRY(mr_at(cx, at + 16, &n->in2, "input_b", IN_TYPES, dt, cb * es));
    OKPU_TRY(mr_at(cx, at + 32, &n->out, "output", OUT_TYPES, dt, co * es));
    a->op = okpu_rd_i32(cx->body + at + 48);
    if (a->op < 0 || a->op >= V4_BIN_COUNT)
        return nfail_at(cx, at + 52, "binary_op %ld, expected 0..5 (add, sub, mul, div, min, max)", (long)a->op);
    a->a = src_ptr(cx, &n->in);
    a->b = src_ptr(cx, &n->in2);
    a->out = dst_ptr(cx, &n->out);
    set_t4(n, (uint32_t)dt, a->so);
    return OKPU_OK;
}

static int d_binary(v4_cx *cx, v4_node *n)
{
    okpu_v4_binary_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_BINARY, 0);
    OKPU_TRY(binary_head(cx, n, 0, a));
    return rd_act(cx, &a->lo, &a->hi);
}

static int d_quantized_binary(v4_cx *cx, v4_node *n)
{
    static const char *const names[9] = {"input_a_offset", "input_a_mul", "input_a_shift",
                                         "input_b_offset", "input_b_mul", "input_b_shift",
                                         "output_offset",  "output_mul",  "output_shift"};
    okpu_v4_qbinary_args *a;
    int32_t q[9];
    NEW_STEP(cx, a, OKPU_STEP_V4_QUANT_BINARY, 0);
    OKPU_TRY(binary_head(cx, n, 1, &a->bin));
    OKPU_TRY(rd_i32s(cx, q, 9, names));
    OKPU_TRY(chk_shift(cx, q[2], "input_a_shift"));
    OKPU_TRY(chk_shift(cx, q[5], "input_b_shift"));
    OKPU_TRY(chk_shift(cx, q[8], "output_shift"));
    a->q.a_offset = q[0];
    a->q.a_mul = q[1];
    a->q.a_shift = q[2];
    a->q.b_offset = q[3];
    a->q.b_mul = q[4];
    a->q.b_shift = q[5];
    a->q.out_offset = q[6];
    a->q.out_mul = q[7];
    a->q.out_shift = q[8];
    a->round = cx->m->opts.v4_quant_round;
    return OKPU_OK;
}

static int d_concat(v4_cx *cx, v4_node *n)
{
    okpu_v4_concat_args *a;
    const uint8_t *list;
    uint32_t i, list_at, inner, outer, count;
    uint64_t total = 0;
    OKPU_TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, -1, UINT64_MAX));
    OKPU_TRY(rd_u32(cx, &inner, "inner_size"));
    OKPU_TRY(rd_u32(cx, &outer, "outer_size"));
    OKPU_TRY(rd_u32(cx, &count, "inputs_count"));
    if (count < 1 || count > V4_MAX_CONCAT)
        return nfail(cx, "inputs_count %lu, expected 1..%u", (unsigned long)count, V4_MAX_CONCAT);
    /* the kernel loops outer x inputs times whatever the sizes: a zero inner size with a huge outer size is an empty
     * output that takes billions of iterations (found by fuzz_v4) */
    if (inner < 1 || outer < 1)
        return nfail(cx, "inner_size %lu, outer_size %lu: both must be >= 1", (unsigned long)inner,
                     (unsigned long)outer);
    list_at = cx->pos;
    OKPU_TRY(rd_span(cx, &list, (uint64_t)count * 20u, "the concat input ranges and dims"));
    /* the tail (a pointer and a dim per input) is paid for by the 20 bytes each input takes in the body */
    NEW_STEP(cx, a, OKPU_STEP_V4_CONCAT, (size_t)count * (sizeof(const uint8_t *) + sizeof(int32_t)));
    a->inputs = (const uint8_t **)(void *)(a + 1);
    a->dims = (int32_t *)(void *)(a->inputs + count);
    for (i = 0; i < count; i++) {
        v4_mr r;
        uint32_t dim_at = list_at + 16u * count + 4u * i, mr_pos = list_at + 16u * i;
        int32_t dim = okpu_rd_i32(list + 16u * count + 4u * i);
        uint64_t need_bytes;
        if (dim < 0 || dim > V4_MAX_DIM)
            return nfail_at(cx, dim_at, "dims[%lu] is %ld, expected 0..%d", (unsigned long)i, (long)dim, V4_MAX_DIM);
        /* inner * dim * outer wraps to 0 unchecked, and the kernel then moves gigabytes */
        if (okpu_mul3(inner, (uint64_t)dim, outer, OKPU_SIZE_LIMIT, &need_bytes))
            return nfail_at(cx, dim_at, "input %lu: inner_size %lu x dims %ld x outer_size %lu exceeds %llu bytes",
                            (unsigned long)i, (unsigned long)inner, (long)dim, (unsigned long)outer,
                            (unsigned long long)OKPU_SIZE_LIMIT);
        OKPU_TRY(mr_at(cx, mr_pos, &r, "a concat input", IN_TYPES, (int)n->out.dtype, need_bytes));
        if (r.type == MT_MAIN && okpu_ranges_overlap(r.start, r.size, n->out.start, n->out.size))
            return nfail_at(cx, mr_pos + 16,
                            "concat input %lu [%lu, %llu) overlaps the output [%lu, %llu) in main memory; concat "
                            "cannot work in place",
                            (unsigned long)i, (unsigned long)r.start, (unsigned long long)r.start + r.size,
                            (unsigned long)n->out.start, (unsigned long long)n->out.start + n->out.size);
        total += need_bytes; /* <= 4096 inputs of < 2^32 bytes: no wrap */
        a->inputs[i] = src_ptr(cx, &r);
        a->dims[i] = dim;
    }
    if (total != n->out.size)
        return nfail_at(cx, list_at,
                        "the inputs add up to %llu bytes (outer_size %lu x inner_size %lu x sum of dims) but the "
                        "output range is %lu bytes",
                        (unsigned long long)total, (unsigned long)outer, (unsigned long)inner,
                        (unsigned long)n->out.size);
    a->out = dst_ptr(cx, &n->out);
    a->count = count;
    a->inner = inner;
    a->outer = outer;
    set_t(n, n->out.dtype, 1, (int32_t)(n->out.size / esize(n->out.dtype)), 1, 1);
    /* bytes moved, and one step per outer index and input even when they are empty */
    n->work = okpu_sat_add(n->out.size, okpu_sat_mul(outer, count));
    return OKPU_OK;
}

/* conv2d / quantized_conv2d up to the activation or quantization fields: ranges, in_shape, groups, out_channels,
 * window. */
static int conv_common(v4_cx *cx, v4_node *n, int quant, okpu_v4_conv_args *a)
{
    uint64_t cin, co;
    int32_t so[4];
    uint32_t at = cx->pos;
    int dt = quant ? DT_U8 : DT_F32;
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    OKPU_TRY(rd_chk_shape(cx, a->in_shape, "in_shape", &cin));
    OKPU_TRY(rd_i32(cx, &a->groups, "groups"));
    OKPU_TRY(rd_i32(cx, &a->out_channels, "out_channels"));
    OKPU_TRY(chk_positive(cx, a->groups, V4_MAX_DIM, "groups"));
    OKPU_TRY(chk_positive(cx, a->out_channels, V4_MAX_DIM, "out_channels"));
    if (a->in_shape[1] % a->groups || a->out_channels % a->groups)
        return nfail(cx, "groups %ld does not divide in channels %ld and out_channels %ld", (long)a->groups,
                     (long)a->in_shape[1], (long)a->out_channels);
    OKPU_TRY(rd_window(cx, &a->win));
    so[0] = a->in_shape[0];
    so[1] = a->out_channels;
    OKPU_TRY(window_out(cx, &a->win, a->in_shape[2], a->in_shape[3], &so[2], &so[3]));
    OKPU_TRY(chk_shape(cx, so, "output shape", &co));
    OKPU_TRY(mr_at(cx, at, &n->in, "input", IN_TYPES, dt, cin * esize((uint32_t)dt)));
    OKPU_TRY(mr_at(cx, at + 16, &n->out, "output", OUT_TYPES, dt, co * esize((uint32_t)dt)));
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    set_t4(n, (uint32_t)dt, so);
    window_info(cx, &a->win, a->in_shape[3], a->in_shape[2], a->in_shape[1], so[3], so[2], so[1]);
    /* out x ic/groups x window */
    n->work = okpu_sat_mul(okpu_sat_mul(out_elems(n), (uint64_t)(a->in_shape[1] / a->groups)), window_taps(&a->win));
    return OKPU_OK;
}

/* weights of a grouped NCHW convolution: oc x ic/groups x filter_h x filter_w elements of e bytes */
static int conv_weights(v4_cx *cx, int32_t oc, const int32_t in_shape[4], int32_t groups, const okpu_v4_window *w,
                        uint64_t e, uint64_t *bytes)
{
    return span_size(cx, "weights (oc x ic/groups x filter_h x filter_w)", e, (uint64_t)oc,
                     (uint64_t)(in_shape[1] / groups), (uint64_t)w->filter_h, (uint64_t)w->filter_w, bytes);
}

static int d_conv2d(v4_cx *cx, v4_node *n)
{
    okpu_v4_conv_args *a;
    uint64_t wb;
    NEW_STEP(cx, a, OKPU_STEP_V4_CONV2D, 0);
    OKPU_TRY(conv_common(cx, n, 0, a));
    OKPU_TRY(rd_act(cx, &a->lo, &a->hi));
    OKPU_TRY(conv_weights(cx, a->out_channels, a->in_shape, a->groups, &a->win, 4, &wb));
    OKPU_TRY(rd_span(cx, &a->weights, wb, "weights (oc x ic/groups x filter_h x filter_w float32)"));
    OKPU_TRY(rd_span(cx, &a->bias, (uint64_t)a->out_channels * 4u, "bias (out_channels float32)"));
    return no_overlap(cx, n);
}

static int d_quantized_conv2d(v4_cx *cx, v4_node *n)
{
    okpu_v4_qconv_args *a;
    uint64_t wb;
    NEW_STEP(cx, a, OKPU_STEP_V4_QUANT_CONV2D, 0);
    OKPU_TRY(conv_common(cx, n, 1, &a->conv));
    OKPU_TRY(rd_qconv(cx, &a->q));
    OKPU_TRY(rd_span(cx, &a->conv.bias, (uint64_t)a->conv.out_channels * 4u, "bias (out_channels int32)"));
    OKPU_TRY(conv_weights(cx, a->conv.out_channels, a->conv.in_shape, a->conv.groups, &a->conv.win, 1, &wb));
    OKPU_TRY(rd_span(cx, &a->conv.weights, wb, "weights (oc x ic/groups x filter_h x filter_w uint8)"));
    a->round = cx->m->opts.v4_quant_round;
    return no_overlap(cx, n);
}

static int d_conv2d_transpose(v4_cx *cx, v4_node *n)
{
    okpu_v4_conv_transpose_args *a;
    const uint8_t *bias;
    uint64_t cin, co, wb;
    uint32_t at = cx->pos;
    NEW_STEP(cx, a, OKPU_STEP_V4_CONV2D_TRANSPOSE, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    OKPU_TRY(rd_shape(cx, a->in_shape, "in_shape"));
    OKPU_TRY(rd_shape(cx, a->out_shape, "out_shape"));
    OKPU_TRY(chk_shape(cx, a->in_shape, "in_shape", &cin));
    OKPU_TRY(chk_shape(cx, a->out_shape, "out_shape", &co));
    OKPU_TRY(rd_i32(cx, &a->groups, "groups"));
    OKPU_TRY(chk_positive(cx, a->groups, V4_MAX_DIM, "groups"));
    if (a->in_shape[1] % a->groups || a->out_shape[1] % a->groups || a->in_shape[0] != a->out_shape[0])
        return nfail(cx,
                     "groups %ld must divide in channels %ld and out channels %ld, and batches must match (%ld, %ld)",
                     (long)a->groups, (long)a->in_shape[1], (long)a->out_shape[1], (long)a->in_shape[0],
                     (long)a->out_shape[0]);
    OKPU_TRY(rd_window(cx, &a->win));
    OKPU_TRY(rd_act(cx, &a->lo, &a->hi));
    OKPU_TRY(mr_at(cx, at, &n->in, "input", IN_TYPES, DT_F32, cin * 4u));
    OKPU_TRY(mr_at(cx, at + 16, &n->out, "output", OUT_TYPES, DT_F32, co * 4u));
    OKPU_TRY(conv_weights(cx, a->out_shape[1], a->in_shape, a->groups, &a->win, 4, &wb));
    OKPU_TRY(rd_span(cx, &a->weights, wb, "weights (out_channels x in_channels/groups x filter_h x filter_w float32)"));
    /* nncase v0.2 reads the bias but never adds it (kernels/neutral_kernels.h): checked, not passed on */
    OKPU_TRY(rd_span(cx, &bias, (uint64_t)a->out_shape[1] * 4u, "bias (out_channels float32)"));
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    set_t4(n, DT_F32, a->out_shape);
    window_info(cx, &a->win, a->in_shape[3], a->in_shape[2], a->in_shape[1], a->out_shape[3], a->out_shape[2],
                a->out_shape[1]);
    /* in x oc/groups x window, plus the zeroing and activation passes */
    n->work = okpu_sat_add(okpu_sat_mul(okpu_sat_mul(prod4u(a->in_shape), (uint64_t)(a->out_shape[1] / a->groups)),
                                        window_taps(&a->win)),
                           okpu_sat_mul(out_elems(n), 2));
    return no_overlap(cx, n);
}

/* dequantize (u8 -> f32) / quantize (f32 -> u8): input, output, zero point, scale */
static int quant_common(v4_cx *cx, v4_node *n, int quantize)
{
    okpu_v4_quant_args *a;
    uint32_t at = cx->pos, count;
    NEW_STEP(cx, a, quantize ? OKPU_STEP_V4_QUANTIZE : OKPU_STEP_V4_DEQUANTIZE, 0);
    OKPU_TRY(rd_mr(cx, &n->in, "input", IN_TYPES, quantize ? DT_F32 : DT_U8, UINT64_MAX));
    if (quantize && n->in.size % 4u)
        return nfail_at(cx, at, "float32 input of %lu bytes is not a whole number of floats",
                        (unsigned long)n->in.size);
    count = quantize ? n->in.size / 4u : n->in.size;
    OKPU_TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, quantize ? DT_U8 : DT_F32,
                   quantize ? count : (uint64_t)count * 4u));
    OKPU_TRY(rd_i32(cx, &a->zero_point, "quant_param.zero_point"));
    OKPU_TRY(rd_f32(cx, &a->scale, "quant_param.scale"));
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    a->count = count;
    set_t_like(cx, n, &n->in, quantize ? DT_U8 : DT_F32, count);
    return OKPU_OK;
}

static int d_dequantize(v4_cx *cx, v4_node *n)
{
    return quant_common(cx, n, 0);
}

static int d_quantize(v4_cx *cx, v4_node *n)
{
    return quant_common(cx, n, 1);
}

/* matmul / quantized_matmul up to the activation or quantization fields: three ranges, a_rows, a_cols, b_cols */
static int matmul_common(v4_cx *cx, v4_node *n, int quant, okpu_v4_matmul_args *a)
{
    uint32_t at = cx->pos;
    unsigned es = quant ? 1u : 4u;
    int dt = quant ? DT_U8 : DT_F32;
    OKPU_TRY(skip_ranges(cx, 3, "three memory ranges"));
    OKPU_TRY(rd_i32(cx, &a->rows, "a_rows"));
    OKPU_TRY(rd_i32(cx, &a->cols, "a_cols"));
    OKPU_TRY(rd_i32(cx, &a->b_cols, "b_cols"));
    OKPU_TRY(chk_positive(cx, a->rows, V4_MAX_DIM, "a_rows"));
    OKPU_TRY(chk_positive(cx, a->cols, V4_MAX_DIM, "a_cols"));
    OKPU_TRY(chk_positive(cx, a->b_cols, V4_MAX_DIM, "b_cols"));
    if ((uint64_t)a->rows * a->cols > V4_MAX_ELEMS || (uint64_t)a->cols * a->b_cols > V4_MAX_ELEMS ||
        (uint64_t)a->rows * a->b_cols > V4_MAX_ELEMS)
        return nfail(cx, "matrices %ldx%ld by %ldx%ld exceed 2^30 elements", (long)a->rows, (long)a->cols,
                     (long)a->cols, (long)a->b_cols);
    OKPU_TRY(mr_at(cx, at, &n->in, "input_a", IN_TYPES, dt, (uint64_t)a->rows * a->cols * es));
    OKPU_TRY(mr_at(cx, at + 16, &n->in2, "input_b", IN_TYPES, dt, (uint64_t)a->cols * a->b_cols * es));
    OKPU_TRY(mr_at(cx, at + 32, &n->out, "output", OUT_TYPES, dt, (uint64_t)a->rows * a->b_cols * es));
    a->a = src_ptr(cx, &n->in);
    a->b = src_ptr(cx, &n->in2);
    a->out = dst_ptr(cx, &n->out);
    if (a->rows == 1)
        set_t(n, (uint32_t)dt, 1, a->b_cols, 1, 1);
    else
        set_t(n, (uint32_t)dt, 1, 1, a->rows, a->b_cols);
    n->work = okpu_sat_mul(okpu_sat_mul((uint64_t)a->rows, (uint64_t)a->cols), (uint64_t)a->b_cols);
    return OKPU_OK;
}

static int d_matmul(v4_cx *cx, v4_node *n)
{
    okpu_v4_matmul_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_MATMUL, 0);
    OKPU_TRY(matmul_common(cx, n, 0, a));
    OKPU_TRY(rd_act(cx, &a->lo, &a->hi));
    OKPU_TRY(rd_span(cx, &a->bias, (uint64_t)a->b_cols * 4u, "bias (b_cols float32)"));
    return no_overlap(cx, n);
}

static int d_quantized_matmul(v4_cx *cx, v4_node *n)
{
    static const char *const names[5] = {"input_a_offset", "input_b_offset", "output_mul", "output_shift",
                                         "output_offset"};
    okpu_v4_qmatmul_args *a;
    int32_t q[5];
    NEW_STEP(cx, a, OKPU_STEP_V4_QUANT_MATMUL, 0);
    OKPU_TRY(matmul_common(cx, n, 1, &a->mm));
    OKPU_TRY(rd_i32s(cx, q, 5, names));
    OKPU_TRY(chk_shift(cx, q[3], "output_shift"));
    OKPU_TRY(rd_span(cx, &a->mm.bias, (uint64_t)a->mm.b_cols * 4u, "bias (b_cols int32)"));
    a->a_offset = q[0];
    a->b_offset = q[1];
    a->out_mul = q[2];
    a->out_shift = q[3];
    a->out_offset = q[4];
    a->round = cx->m->opts.v4_quant_round;
    return no_overlap(cx, n);
}

/* The end of the ops that move elements without changing their type (pad, resize, transpose, strided_slice): the
 * input and output ranges at body offset `at` for in_count / out_count elements of `dt`, resolved into the step, the
 * output shape recorded, and the in-place check. */
static int reshape_io(v4_cx *cx, v4_node *n, uint32_t at, uint32_t dt, uint64_t in_count, uint64_t out_count,
                      const int32_t so[4], const uint8_t **in, uint8_t **out, uint32_t *elem_size)
{
    OKPU_TRY(mr_at(cx, at, &n->in, "input", IN_TYPES, -1, in_count * esize(dt)));
    OKPU_TRY(mr_at(cx, at + 16, &n->out, "output", OUT_TYPES, (int)dt, out_count * esize(dt)));
    *in = src_ptr(cx, &n->in);
    *out = dst_ptr(cx, &n->out);
    *elem_size = esize(n->in.dtype);
    set_t4(n, dt, so);
    return no_overlap(cx, n);
}

static int d_pad(v4_cx *cx, v4_node *n)
{
    okpu_v4_pad_args *a;
    uint64_t cin, co;
    uint32_t at = cx->pos, dt;
    int32_t so[4];
    int i;
    NEW_STEP(cx, a, OKPU_STEP_V4_PAD, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    dt = dtype_at(cx, at);
    OKPU_TRY(rd_chk_shape(cx, a->in_shape, "in_shape", &cin));
    for (i = 0; i < 8; i++)
        OKPU_TRY(rd_i32(cx, &a->paddings[i], "paddings"));
    for (i = 0; i < 4; i++) {
        int32_t before = a->paddings[2 * i], after = a->paddings[2 * i + 1];
        int64_t d = (int64_t)a->in_shape[i] + before + after;
        if (before < -V4_MAX_DIM || before > V4_MAX_DIM || after < -V4_MAX_DIM || after > V4_MAX_DIM || d < 1 ||
            d > V4_MAX_DIM)
            return nfail(cx, "paddings (%ld, %ld) of dimension %d (size %ld) give size %lld", (long)before,
                         (long)after, i, (long)a->in_shape[i], (long long)d);
        so[i] = (int32_t)d;
    }
    OKPU_TRY(chk_shape(cx, so, "padded shape", &co));
    OKPU_TRY(need(cx, 8, "pad_value (scalar: datatype + 4 bytes)"));
    memcpy(a->value, cx->body + cx->pos + 4, 4);
    cx->pos += 8;
    return reshape_io(cx, n, at, dt, cin, co, so, &a->in, &a->out, &a->elem_size);
}

static int rd_reduce_op(v4_cx *cx, int32_t *op)
{
    OKPU_TRY(rd_i32(cx, op, "reduce_op"));
    if (*op < 0 || *op >= V4_RED_COUNT)
        return nfail(cx, "reduce_op %ld, expected 0..3 (mean, min, max, sum)", (long)*op);
    return OKPU_OK;
}

static int d_reduce(v4_cx *cx, v4_node *n)
{
    okpu_v4_reduce_args *a;
    uint64_t cin, co;
    uint32_t at = cx->pos;
    int i;
    NEW_STEP(cx, a, OKPU_STEP_V4_REDUCE, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    OKPU_TRY(rd_reduce_op(cx, &a->op));
    OKPU_TRY(rd_shape(cx, a->in_shape, "in_shape"));
    OKPU_TRY(rd_shape(cx, a->out_shape, "out_shape"));
    OKPU_TRY(chk_shape(cx, a->in_shape, "in_shape", &cin));
    OKPU_TRY(chk_shape(cx, a->out_shape, "out_shape", &co));
    for (i = 0; i < 4; i++)
        if (a->out_shape[i] != a->in_shape[i] && a->out_shape[i] != 1)
            return nfail(cx, "out_shape dimension %d is %ld; expected %ld or 1", i, (long)a->out_shape[i],
                         (long)a->in_shape[i]);
    OKPU_TRY(rd_f32(cx, &a->init, "init_value"));
    OKPU_TRY(mr_at(cx, at, &n->in, "input", IN_TYPES, DT_F32, cin * 4u));
    OKPU_TRY(mr_at(cx, at + 16, &n->out, "output", OUT_TYPES, DT_F32, co * 4u));
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    set_t4(n, DT_F32, a->out_shape);
    n->work = okpu_sat_add(prod4u(a->in_shape), out_elems(n)); /* every input once */
    return no_overlap(cx, n);
}

/* reduce_window2d (neutral NCHW) and cpu_reduce_window2d (NHWC) share the body layout */
static int reduce_window(v4_cx *cx, v4_node *n, int nhwc)
{
    okpu_v4_reduce_window_args *a;
    uint64_t cin, co;
    uint32_t at = cx->pos;
    int32_t oh, ow, so[4];
    NEW_STEP(cx, a, nhwc ? OKPU_STEP_V4_CPU_REDUCE_WINDOW2D : OKPU_STEP_V4_REDUCE_WINDOW2D, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    OKPU_TRY(rd_reduce_op(cx, &a->op));
    OKPU_TRY(rd_chk_shape(cx, a->in_shape, "in_shape", &cin));
    OKPU_TRY(rd_window(cx, &a->win));
    OKPU_TRY(rd_f32(cx, &a->init, "init_value"));
    OKPU_TRY(rd_act(cx, &a->lo, &a->hi));
    OKPU_TRY(window_out(cx, &a->win, a->in_shape[nhwc ? 1 : 2], a->in_shape[nhwc ? 2 : 3], &oh, &ow));
    so[0] = a->in_shape[0];
    if (nhwc) {
        so[1] = oh;
        so[2] = ow;
        so[3] = a->in_shape[3];
    } else {
        so[1] = a->in_shape[1];
        so[2] = oh;
        so[3] = ow;
    }
    OKPU_TRY(chk_shape(cx, so, "output shape", &co));
    OKPU_TRY(mr_at(cx, at, &n->in, "input", IN_TYPES, DT_F32, cin * 4u));
    OKPU_TRY(mr_at(cx, at + 16, &n->out, "output", OUT_TYPES, DT_F32, co * 4u));
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    if (nhwc) {
        set_t(n, DT_F32, so[0], so[3], so[1], so[2]); /* reported as NCHW dims of an NHWC buffer */
        window_info(cx, &a->win, a->in_shape[2], a->in_shape[1], a->in_shape[3], so[2], so[1], so[3]);
    } else {
        set_t4(n, DT_F32, so);
        window_info(cx, &a->win, a->in_shape[3], a->in_shape[2], a->in_shape[1], so[3], so[2], so[1]);
    }
    n->work = okpu_sat_mul(out_elems(n), window_taps(&a->win)); /* every output visits its window */
    return no_overlap(cx, n);
}

static int d_reduce_window2d(v4_cx *cx, v4_node *n)
{
    return reduce_window(cx, n, 0);
}

static int d_cpu_reduce_window2d(v4_cx *cx, v4_node *n)
{
    return reduce_window(cx, n, 1);
}

static int d_memory_copy(v4_cx *cx, v4_node *n)
{
    okpu_v4_copy_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_MEMORY_COPY, 0);
    OKPU_TRY(rd_mr(cx, &n->in, "input", IN_TYPES, -1, UINT64_MAX));
    OKPU_TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, -1, n->in.size));
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    a->bytes = (size_t)(n->in.size / 4u) * 4u; /* nncase copies input.size()/4 floats */
    set_t_like(cx, n, &n->in, n->out.dtype, n->out.size / esize(n->out.dtype));
    n->t.bytes = n->out.size;
    return OKPU_OK;
}

static int d_resize_image(v4_cx *cx, v4_node *n)
{
    okpu_v4_resize_args *a;
    uint64_t cin, co;
    uint32_t at = cx->pos, dt;
    int32_t so[4];
    NEW_STEP(cx, a, OKPU_STEP_V4_RESIZE, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    dt = dtype_at(cx, at);
    OKPU_TRY(rd_chk_shape(cx, a->in_shape, "in_shape", &cin));
    OKPU_TRY(rd_i32(cx, &a->out_h, "out_h"));
    OKPU_TRY(rd_i32(cx, &a->out_w, "out_w"));
    OKPU_TRY(chk_positive(cx, a->out_h, V4_MAX_DIM, "out_h"));
    OKPU_TRY(chk_positive(cx, a->out_w, V4_MAX_DIM, "out_w"));
    OKPU_TRY(rd_i32(cx, &a->mode, "mode"));
    if (a->mode != 0 && a->mode != 1)
        return nfail(cx, "resize mode %ld, expected 0 (bilinear) or 1 (nearest neighbor)", (long)a->mode);
    OKPU_TRY(need(cx, 4, "align_corners (bool + 3 bytes of struct padding)"));
    a->align_corners = cx->body[cx->pos] != 0;
    cx->pos += 4;
    so[0] = a->in_shape[0];
    so[1] = a->in_shape[1];
    so[2] = a->out_h;
    so[3] = a->out_w;
    OKPU_TRY(chk_shape(cx, so, "output shape", &co));
    return reshape_io(cx, n, at, dt, cin, co, so, &a->in, &a->out, &a->elem_size);
}

static int d_softmax(v4_cx *cx, v4_node *n)
{
    okpu_v4_softmax_args *a;
    uint32_t at = cx->pos;
    uint64_t c;
    NEW_STEP(cx, a, OKPU_STEP_V4_SOFTMAX, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    OKPU_TRY(rd_i32(cx, &a->inner, "inner_size"));
    OKPU_TRY(rd_i32(cx, &a->outer, "outer_size"));
    OKPU_TRY(chk_positive(cx, a->inner, V4_MAX_DIM, "inner_size"));
    OKPU_TRY(chk_positive(cx, a->outer, V4_MAX_DIM, "outer_size"));
    c = (uint64_t)a->inner * (uint64_t)a->outer;
    if (c > V4_MAX_ELEMS)
        return nfail(cx, "inner_size x outer_size exceeds 2^30 elements");
    OKPU_TRY(rd_f32(cx, &a->beta, "beta"));
    OKPU_TRY(mr_at(cx, at, &n->in, "input", IN_TYPES, DT_F32, c * 4u));
    OKPU_TRY(mr_at(cx, at + 16, &n->out, "output", OUT_TYPES, DT_F32, c * 4u));
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    set_t_like(cx, n, &n->in, DT_F32, (uint32_t)c);
    n->work = okpu_sat_mul(out_elems(n), 3); /* max, sum, write */
    return no_overlap(cx, n);
}

static int d_transpose(v4_cx *cx, v4_node *n)
{
    okpu_v4_transpose_args *a;
    uint64_t cin;
    uint32_t at = cx->pos, dt;
    int32_t so[4];
    int i, seen = 0;
    NEW_STEP(cx, a, OKPU_STEP_V4_TRANSPOSE, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    dt = dtype_at(cx, at);
    OKPU_TRY(rd_chk_shape(cx, a->in_shape, "in_shape", &cin));
    OKPU_TRY(rd_shape(cx, a->perm, "perm"));
    for (i = 0; i < 4; i++) {
        if (a->perm[i] < 0 || a->perm[i] > 3 || (seen & (1 << a->perm[i])))
            return nfail(cx, "perm [%ld, %ld, %ld, %ld] is not a permutation of 0..3", (long)a->perm[0],
                         (long)a->perm[1], (long)a->perm[2], (long)a->perm[3]);
        seen |= 1 << a->perm[i];
        so[i] = a->in_shape[a->perm[i]];
    }
    return reshape_io(cx, n, at, dt, cin, cin, so, &a->in, &a->out, &a->elem_size);
}

static int d_strided_slice(v4_cx *cx, v4_node *n)
{
    okpu_v4_slice_args *a;
    uint64_t cin, co = 1;
    uint32_t at = cx->pos, dt;
    int32_t so[4], masks;
    int i;
    NEW_STEP(cx, a, OKPU_STEP_V4_STRIDED_SLICE, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    dt = dtype_at(cx, at);
    OKPU_TRY(rd_chk_shape(cx, a->in_shape, "in_shape", &cin));
    OKPU_TRY(rd_shape(cx, a->begin, "begin"));
    OKPU_TRY(rd_shape(cx, a->end, "end"));
    OKPU_TRY(rd_shape(cx, a->strides, "strides"));
    for (i = 0; i < 5; i++) /* ignored, as nncase does */
        OKPU_TRY(rd_i32(cx, &masks, "begin/end/ellipsis/new_axis/shrink_axis mask"));
    for (i = 0; i < 4; i++) {
        int64_t b = a->begin[i], e = a->end[i], s = a->strides[i], cnt, last;
        if (s == 0)
            return nfail(cx, "strides[%d] is 0", i);
        cnt = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (e < b ? (b - e + (-s) - 1) / (-s) : 0);
        if (cnt < 1)
            return nfail(cx, "begin %lld, end %lld, stride %lld of dimension %d select nothing", (long long)b,
                         (long long)e, (long long)s, i);
        last = b + (cnt - 1) * s;
        if (b < 0 || b >= a->in_shape[i] || last < 0 || last >= a->in_shape[i])
            return nfail(cx, "begin %lld, end %lld, stride %lld of dimension %d read indices %lld..%lld outside 0..%ld",
                         (long long)b, (long long)e, (long long)s, i, (long long)b, (long long)last,
                         (long)a->in_shape[i] - 1);
        so[i] = (int32_t)cnt;
        co *= (uint64_t)cnt;
    }
    return reshape_io(cx, n, at, dt, cin, co, so, &a->in, &a->out, &a->elem_size);
}

static int d_unary(v4_cx *cx, v4_node *n)
{
    okpu_v4_unary_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_UNARY, 0);
    OKPU_TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, UINT64_MAX));
    OKPU_TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, n->in.size));
    OKPU_TRY(rd_i32(cx, &a->op, "unary_op"));
    if (a->op < 0 || a->op >= V4_UN_COUNT)
        return nfail(cx, "unary_op %ld, expected 0..9 (abs, ceil, cos, exp, floor, log, neg, rsqrt, sin, square)",
                     (long)a->op);
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    a->count = n->in.size / 4u;
    set_t_like(cx, n, &n->in, DT_F32, a->count);
    return OKPU_OK;
}

static int d_nnil_unary_method(v4_cx *cx, v4_node *n)
{
    okpu_v4_nnil_args *a;
    size_t bad = 0;
    const char *why = "";
    uint32_t start;
    NEW_STEP(cx, a, OKPU_STEP_V4_NNIL, 0);
    OKPU_TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, UINT64_MAX));
    OKPU_TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, n->in.size));
    /* the program is the rest of the body (nncase read_avail); zero padding decodes as nop. It stays in the file. */
    start = cx->pos; /* after the two ranges: 32; rd_mr guarantees avail >= start */
    a->program = cx->body + start;
    if (okpu_nnil_check(a->program, cx->avail - start, &a->length, &bad, &why) != 0)
        return nfail_at(cx, start + (uint32_t)bad, "nnil program (%lu bytes from body offset %lu) at its byte %lu: %s",
                        (unsigned long)(cx->avail - start), (unsigned long)start, (unsigned long)bad, why);
    a->in = src_ptr(cx, &n->in);
    a->out = dst_ptr(cx, &n->out);
    a->count = n->in.size / 4u;
    set_t_like(cx, n, &n->in, DT_F32, a->count);
    /* the program runs once per element */
    n->work = okpu_sat_mul(a->count, a->length ? a->length : 1u);
    return OKPU_OK;
}

static int d_table_lookup1d(v4_cx *cx, v4_node *n)
{
    okpu_v4_lookup_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_TABLE_LOOKUP1D, 0);
    OKPU_TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_U8, UINT64_MAX));
    OKPU_TRY(rd_mr(cx, &n->in2, "table", IN_TYPES, DT_U8, 256u));
    OKPU_TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_U8, n->in.size));
    a->in = src_ptr(cx, &n->in);
    a->table = src_ptr(cx, &n->in2);
    a->out = dst_ptr(cx, &n->out);
    a->count = n->in.size;
    set_t_like(cx, n, &n->in, DT_U8, n->in.size);
    return OKPU_OK;
}

/* ================= CPU (NHWC) ops ================= */

/* cpu_conv2d, cpu_depthwise_conv2d and their quantized forms: `c` is the step's convolution (the quantized steps
 * embed it; `q` their quantization, else NULL). */
static int cpu_conv(v4_cx *cx, v4_node *n, int depthwise, okpu_v4_conv_args *c, okpu_v4_qconv_args *q)
{
    uint64_t cin, co, wcount;
    uint32_t at = cx->pos;
    int32_t so[4];
    int dt = q ? DT_U8 : DT_F32;
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    OKPU_TRY(rd_chk_shape(cx, c->in_shape, "in_shape (NHWC)", &cin));
    if (!depthwise) {
        OKPU_TRY(rd_i32(cx, &c->out_channels, "out_channels"));
        OKPU_TRY(chk_positive(cx, c->out_channels, V4_MAX_DIM, "out_channels"));
    } else {
        c->out_channels = c->in_shape[3];
    }
    OKPU_TRY(rd_window(cx, &c->win));
    so[0] = c->in_shape[0];
    OKPU_TRY(window_out(cx, &c->win, c->in_shape[1], c->in_shape[2], &so[1], &so[2]));
    so[3] = c->out_channels;
    OKPU_TRY(chk_shape(cx, so, "output shape (NHWC)", &co));
    if (q) {
        OKPU_TRY(rd_qconv(cx, &q->q));
        q->round = cx->m->opts.v4_quant_round;
    } else {
        OKPU_TRY(rd_act(cx, &c->lo, &c->hi));
    }
    OKPU_TRY(span_size(cx, "weights (filter_h x filter_w x in_channels x out_channels)", q ? 1u : 4u,
                       (uint64_t)c->win.filter_h, (uint64_t)c->win.filter_w, (uint64_t)c->in_shape[3],
                       depthwise ? 1u : (uint64_t)c->out_channels, &wcount));
    OKPU_TRY(mr_at(cx, at, &n->in, "input", IN_TYPES, dt, cin * esize((uint32_t)dt)));
    OKPU_TRY(mr_at(cx, at + 16, &n->out, "output", OUT_TYPES, dt, co * esize((uint32_t)dt)));
    /* float bodies: weights then bias; quantized bodies too (cpu_ops_body.h: weights, then bias) */
    OKPU_TRY(rd_span(cx, &c->weights, wcount, "weights"));
    OKPU_TRY(rd_span(cx, &c->bias, (uint64_t)c->out_channels * 4u, "bias"));
    c->in = src_ptr(cx, &n->in);
    c->out = dst_ptr(cx, &n->out);
    set_t(n, (uint32_t)dt, so[0], so[3], so[1], so[2]);
    window_info(cx, &c->win, c->in_shape[2], c->in_shape[1], c->in_shape[3], so[2], so[1], so[3]);
    n->work = okpu_sat_mul(out_elems(n), window_taps(&c->win));
    if (!depthwise)
        n->work = okpu_sat_mul(n->work, (uint64_t)c->in_shape[3]);
    return no_overlap(cx, n);
}

static int d_cpu_conv2d(v4_cx *cx, v4_node *n)
{
    okpu_v4_conv_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_CPU_CONV2D, 0);
    return cpu_conv(cx, n, 0, a, NULL);
}

static int d_cpu_depthwise_conv2d(v4_cx *cx, v4_node *n)
{
    okpu_v4_conv_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_CPU_DEPTHWISE_CONV2D, 0);
    return cpu_conv(cx, n, 1, a, NULL);
}

static int d_cpu_quantized_conv2d(v4_cx *cx, v4_node *n)
{
    okpu_v4_qconv_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_CPU_QUANT_CONV2D, 0);
    return cpu_conv(cx, n, 0, &a->conv, a);
}

static int d_cpu_quantized_depthwise_conv2d(v4_cx *cx, v4_node *n)
{
    okpu_v4_qconv_args *a;
    NEW_STEP(cx, a, OKPU_STEP_V4_CPU_QUANT_DEPTHWISE_CONV2D, 0);
    return cpu_conv(cx, n, 1, &a->conv, a);
}

/* ================= K210 ops ================= */

static int d_kpu_upload(v4_cx *cx, v4_node *n)
{
    okpu_kpu_upload_args *a;
    int32_t sa[4];
    uint64_t cin, rows;
    uint32_t at = cx->pos, per;
    NEW_STEP(cx, a, OKPU_STEP_KPU_UPLOAD, 0);
    OKPU_TRY(skip_ranges(cx, 2, "input and output memory ranges"));
    OKPU_TRY(rd_chk_shape(cx, sa, "in_shape", &cin));
    if (sa[1] > 1024 || sa[2] > 256 || sa[3] > 512)
        return nfail(cx, "in_shape [%ld, %ld, %ld, %ld] exceeds the KPU's limits (C <= 1024, H <= 256, W <= 512)",
                     (long)sa[0], (long)sa[1], (long)sa[2], (long)sa[3]);
    per = okpu_kpu_layout_rows((uint32_t)sa[3], (uint32_t)sa[2], (uint32_t)sa[1]);
    rows = (uint64_t)sa[0] * per;
    OKPU_TRY(mr_at(cx, at, &n->in, "input", IN_TYPES, DT_U8, cin));
    OKPU_TRY(mr_at(cx, at + 16, &n->out, "output", 1u << MT_KPU, DT_U8, UINT64_MAX));
    if (n->out.start % 64u)
        return nfail_at(cx, at + 16, "KPU output start %lu is not a multiple of 64 (a KPU row)",
                        (unsigned long)n->out.start);
    if (n->out.start / 64u + rows > OKPU_KPU_RAM_ROWS)
        return nfail_at(cx, at + 16,
                        "%ld batch(es) of [%ld, %ld, %ld] need %llu KPU rows from row %lu, past the 32768 rows of KPU "
                        "RAM",
                        (long)sa[0], (long)sa[1], (long)sa[2], (long)sa[3], (unsigned long long)rows,
                        (unsigned long)(n->out.start / 64u));
    a->src = src_ptr(cx, &n->in);
    a->kpu_ram = cx->m->kpu->ram;
    a->row = n->out.start / 64u;
    a->rows_per_batch = per;
    a->batches = (uint32_t)sa[0];
    a->w = (uint32_t)sa[3];
    a->h = (uint32_t)sa[2];
    a->c = (uint32_t)sa[1];
    okpu_model_touch_kpu_rows(cx->m, a->row, (uint32_t)rows);
    set_t4(n, DT_U8, sa);
    n->out_mem = OKPU_MEM_KPU;
    n->out_off = a->row;
    n->work = prod4u(sa);
    return OKPU_OK;
}

/* kpu_conv2d stores a count of padding bytes before each of its three tables (alignment differs by version). */
static int skip_padding(v4_cx *cx, uint32_t count, const char *field, const char *what)
{
    if (count > cx->avail)
        return nfail(cx, "%s padding count %lu is larger than the body", field, (unsigned long)count);
    OKPU_TRY(need(cx, count, what));
    cx->pos += count;
    return OKPU_OK;
}

static int d_kpu_conv2d(v4_cx *cx, v4_node *n)
{
    okpu_kpu_conv_args *a;
    okpu_kpu_args *k;
    okpu_layer_info *I = &cx->m->layers[cx->idx].info;
    int32_t batches, reserved;
    uint32_t at_args;
    uint64_t map_out;
    NEW_STEP(cx, a, OKPU_STEP_KPU_CONV, 0);
    k = &a->job.args;
    OKPU_TRY(need(cx, 16, "main_mem_output"));
    mr_decode(cx->body + cx->pos, &n->out);
    if (n->out.size == 0) /* no main-memory output: nncase writes an empty (const, 0-byte) range */
        cx->pos += 16;
    else
        OKPU_TRY(rd_mr(cx, &n->out, "main_mem_output", OUT_TYPES, DT_U8, UINT64_MAX));
    OKPU_TRY(rd_i32(cx, &batches, "batches"));
    OKPU_TRY(chk_positive(cx, batches, V4_MAX_BATCHES, "batches"));
    OKPU_TRY(rd_i32(cx, &reserved, "reserved0"));
    at_args = cx->pos;
    OKPU_TRY(rd_span(cx, &a->job.raw_args, KPU_ARGS_BYTES, "the 96-byte kpu_layer_argument_t"));
    okpu_kpu_args_decode(a->job.raw_args, k);
    OKPU_TRY(okpu_kpu_args_check(k, cx->idx, (long)(cx->body_off + at_args), cx->err));
    a->job.in_rows = okpu_kpu_layout_rows(k->in_width, k->in_height, k->in_channels);
    a->job.out_rows = okpu_kpu_layout_rows(k->out_width, k->out_height, k->out_channels);
    if ((uint64_t)k->image_src_addr + (uint64_t)a->job.in_rows * batches > OKPU_KPU_RAM_ROWS ||
        (uint64_t)k->image_dst_addr + (uint64_t)a->job.out_rows * batches > OKPU_KPU_RAM_ROWS)
        return nfail_at(cx, at_args + 8,
                        "%ld batches: input rows %lu + %ld x %lu or output rows %lu + %ld x %lu run past the 32768 "
                        "rows of KPU RAM",
                        (long)batches, (unsigned long)k->image_src_addr, (long)batches, (unsigned long)a->job.in_rows,
                        (unsigned long)k->image_dst_addr, (long)batches, (unsigned long)a->job.out_rows);
    map_out = (uint64_t)k->out_channels * k->out_height * k->out_width;
    if (n->out.size != 0 && n->out.size != map_out * (uint64_t)batches)
        return nfail_at(cx, 0, "main_mem_output is %lu bytes; the layer writes %ld x %lux%lux%lu = %llu bytes",
                        (unsigned long)n->out.size, (long)batches, (unsigned long)k->out_channels,
                        (unsigned long)k->out_height, (unsigned long)k->out_width,
                        (unsigned long long)(map_out * (uint64_t)batches));
    OKPU_TRY(skip_padding(cx, k->bwsx_base_addr, "bwsx_base_addr",
                          "padding before the batch-norm table (bwsx_base_addr bytes)"));
    OKPU_TRY(rd_span(cx, &a->job.bn, (uint64_t)okpu_kpu_bn_bytes(k), "the batch-norm table (8 bytes x out channels)"));
    OKPU_TRY(skip_padding(cx, k->active_addr, "active_addr",
                          "padding before the activation table (active_addr bytes)"));
    OKPU_TRY(rd_span(cx, &a->job.act, KPU_ACT_TABLE_BYTES, "the 144-byte activation table"));
    OKPU_TRY(skip_padding(cx, k->para_start_addr, "para_start_addr",
                          "padding before the weights (para_start_addr bytes)"));
    OKPU_TRY(rd_span(cx, &a->job.weights, (uint64_t)okpu_kpu_weights_bytes(k, 1), "the u8 weights"));
    a->job.eight_bit = 1;
    a->job.layer = cx->idx;
    a->job.main_out = n->out.size ? OKPU_MAIN(cx->m, n->out.start) : NULL;
    a->job.batches = (uint32_t)batches;
    a->job.main_out_stride = (size_t)map_out;
    okpu_model_touch_kpu_rows(cx->m, k->image_src_addr, a->job.in_rows * (uint32_t)batches);
    okpu_model_touch_kpu_rows(cx->m, k->image_dst_addr, a->job.out_rows * (uint32_t)batches);
    n->t.dtype = OKPU_DTYPE_U8;
    n->t.n = (uint32_t)batches;
    n->t.c = k->out_channels;
    n->t.h = k->out_height;
    n->t.w = k->out_width;
    n->t.bytes = (uint32_t)(map_out * (uint64_t)batches);
    n->out_mem = n->out.size ? OKPU_MEM_MAIN : OKPU_MEM_KPU;
    n->out_off = n->out.size ? n->out.start : k->image_dst_addr;
    I->is_kpu = 1;
    I->wi = k->in_width;
    I->hi = k->in_height;
    I->chi = k->in_channels;
    I->wo = k->out_width;
    I->ho = k->out_height;
    I->cho = k->out_channels;
    I->depthwise = (int)k->depthwise;
    I->kernel_type = (int)k->kernel_type;
    I->pool_type = (int)k->pool_type;
    I->para_size = k->para_size;
    I->macs = okpu_kpu_args_macs(k) * (uint64_t)batches;
    n->work = okpu_sat_mul(okpu_kpu_args_macs(k), (uint64_t)batches);
    return OKPU_OK;
}

/* ================= the op table ================= */

#define V4_OP(opcode, id, name, fixed_body, decode) static int decode(v4_cx *cx, v4_node *n);
#include "kmodel_v4_ops.def"
#undef V4_OP

static const v4_op v4_ops[] = {
#define V4_OP(opcode, id, name, fixed_body, decode) {KMODEL_V4_OP_##id, name, decode},
#include "kmodel_v4_ops.def"
#undef V4_OP
};

#define V4_OP_COUNT (sizeof v4_ops / sizeof v4_ops[0])

static const v4_op *find_op(uint32_t opcode)
{
    size_t i;
    for (i = 0; i < V4_OP_COUNT; i++)
        if (v4_ops[i].opcode == opcode)
            return &v4_ops[i];
    return NULL;
}

const char *okpu_v4_opcode_name(uint32_t opcode)
{
    const v4_op *op = find_op(opcode);
    return op ? op->name : NULL;
}

/* The table's opcodes as runs of consecutive values: "0x00-0x14, 0x1001-0x1005 and 0x2001-0x2002". */
static void known_opcodes(char *buf, size_t cap)
{
    size_t i = 0, len = 0, runs = 0, run = 0;
    for (i = 0; i < V4_OP_COUNT; i++)
        if (i == 0 || v4_ops[i].opcode != v4_ops[i - 1].opcode + 1u)
            runs++;
    buf[0] = '\0';
    for (i = 0; i < V4_OP_COUNT && len < cap; run++) {
        size_t j = i;
        const char *sep = run == 0 ? "" : run + 1 == runs ? " and " : ", ";
        int w;
        while (j + 1 < V4_OP_COUNT && v4_ops[j + 1].opcode == v4_ops[j].opcode + 1u)
            j++;
        if (j > i)
            w = snprintf(buf + len, cap - len, "%s0x%02lX-0x%02lX", sep, (unsigned long)v4_ops[i].opcode,
                         (unsigned long)v4_ops[j].opcode);
        else
            w = snprintf(buf + len, cap - len, "%s0x%02lX", sep, (unsigned long)v4_ops[i].opcode);
        len += w > 0 ? (size_t)w : 0u;
        i = j + 1;
    }
}

/* ================= model ================= */

#if !(defined(OKPU_ERROR_TERSE) && OKPU_ERROR_TERSE)
static int hfail(okpu_error *err, int code, long off, const char *fmt, ...) OKPU_PRINTF(4, 5);
static int hfail(okpu_error *err, int code, long off, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return okpu_fail(err, code, -1, off, "kmodel v4 header, byte %ld: %s", off, msg);
}
#else
#define hfail(err, code, off, ...) okpu_fail_terse((err), (code), -1, (long)(off))
#endif
static int parse_io(okpu_model *m, okpu_error *err, uint32_t ninputs, uint32_t noutputs)
{
    uint32_t i;
    for (i = 0; i < ninputs; i++) {
        long at = (long)(KMODEL_V4_HEADER_BYTES + 16u * i), sat = (long)(KMODEL_V4_HEADER_BYTES + 16u * ninputs + 16u * i);
        v4_mr r;
        int32_t s[4];
        uint64_t cnt = 1;
        int k;
        okpu_place *p = &m->inputs[i];
        mr_decode(m->data + at, &r);
        for (k = 0; k < 4; k++) {
            s[k] = okpu_rd_i32(m->data + sat + 4 * k);
            if (s[k] < 1 || s[k] > V4_MAX_DIM)
                return hfail(err, OKPU_ERR_KMODEL_FORMAT, sat,
                             "input %lu shape [%ld, %ld, %ld, %ld]: dimension %d must be 1..%d; the file is corrupt",
                             (unsigned long)i, (long)okpu_rd_i32(m->data + sat), (long)okpu_rd_i32(m->data + sat + 4),
                             (long)okpu_rd_i32(m->data + sat + 8), (long)okpu_rd_i32(m->data + sat + 12), k,
                             V4_MAX_DIM);
            cnt *= (uint64_t)s[k];
        }
        if (r.dtype > DT_U8)
            return hfail(err, OKPU_ERR_KMODEL_FORMAT, at, "input %lu has datatype %lu; expected 0 (float32) or 1 (uint8)",
                         (unsigned long)i, (unsigned long)r.dtype);
        if (cnt * esize(r.dtype) != r.size)
            return hfail(err, OKPU_ERR_KMODEL_FORMAT, at,
                         "input %lu is %lu bytes but its shape [%ld, %ld, %ld, %ld] of %s needs %llu; the file is "
                         "corrupt",
                         (unsigned long)i, (unsigned long)r.size, (long)s[0], (long)s[1], (long)s[2], (long)s[3],
                         dt_name(r.dtype), (unsigned long long)(cnt * esize(r.dtype)));
        p->t.dtype = r.dtype == DT_F32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8;
        p->t.n = (uint32_t)s[0];
        p->t.c = (uint32_t)s[1];
        p->t.h = (uint32_t)s[2];
        p->t.w = (uint32_t)s[3];
        p->t.bytes = r.size;
        p->t.layer = -1;
        if (r.type == MT_MAIN) {
            if ((uint64_t)r.start + r.size > m->main_mem_size)
                return hfail(err, OKPU_ERR_KMODEL_FORMAT, at,
                             "input %lu [%lu, %lu) lies outside the main buffer of %lu bytes (main_mem)",
                             (unsigned long)i, (unsigned long)r.start, (unsigned long)((uint64_t)r.start + r.size),
                             (unsigned long)m->main_mem_size);
            p->mem = OKPU_MEM_MAIN;
            p->offset = r.start;
        } else if (r.type == MT_KPU) {
            uint32_t rows;
            if (r.dtype != DT_U8 || s[0] != 1 || s[1] > 1024 || s[2] < 4 || s[2] > 256 || s[3] < 4 || s[3] > 512)
                return hfail(err, OKPU_ERR_KMODEL_FORMAT, at,
                             "KPU input %lu must be uint8 [1, C<=1024, 4<=H<=256, 4<=W<=512]; found %s [%ld, %ld, %ld, "
                             "%ld]",
                             (unsigned long)i, dt_name(r.dtype), (long)s[0], (long)s[1], (long)s[2], (long)s[3]);
            if (r.start % 64u)
                return hfail(err, OKPU_ERR_KMODEL_FORMAT, at,
                             "KPU input %lu starts at byte %lu of KPU RAM, not on a 64-byte row", (unsigned long)i,
                             (unsigned long)r.start);
            rows = okpu_kpu_layout_rows((uint32_t)s[3], (uint32_t)s[2], (uint32_t)s[1]);
            if ((uint64_t)r.start / 64u + rows > OKPU_KPU_RAM_ROWS)
                return hfail(err, OKPU_ERR_KMODEL_FORMAT, at,
                             "KPU input %lu needs %lu rows from row %lu, past the 32768 rows of KPU RAM",
                             (unsigned long)i, (unsigned long)rows, (unsigned long)(r.start / 64u));
            p->mem = OKPU_MEM_KPU;
            p->offset = r.start / 64u;
            okpu_model_touch_kpu_rows(m, p->offset, rows);
        } else {
            return hfail(err, OKPU_ERR_KMODEL_FORMAT, at,
                         "input %lu has memory_type %lu (%s); expected 1 (main) or 2 (k210_kpu)", (unsigned long)i,
                         (unsigned long)r.type, mt_name(r.type));
        }
    }
    for (i = 0; i < noutputs; i++) {
        long at = (long)(KMODEL_V4_HEADER_BYTES + 32u * ninputs + 16u * i);
        v4_mr r;
        okpu_place *p = &m->outputs[i];
        mr_decode(m->data + at, &r);
        if (r.type != MT_MAIN || r.dtype > DT_U8)
            return hfail(err, OKPU_ERR_KMODEL_FORMAT, at,
                         "output %lu has memory_type %lu (%s), datatype %lu; expected main memory, float32 or uint8",
                         (unsigned long)i, (unsigned long)r.type, mt_name(r.type), (unsigned long)r.dtype);
        if ((uint64_t)r.start + r.size > m->main_mem_size || r.size % esize(r.dtype) || r.size == 0)
            return hfail(err, OKPU_ERR_KMODEL_FORMAT, at,
                         "output %lu [%lu, %lu) of %s must be a non-empty whole number of elements inside the main "
                         "buffer of %lu bytes",
                         (unsigned long)i, (unsigned long)r.start, (unsigned long)((uint64_t)r.start + r.size),
                         dt_name(r.dtype), (unsigned long)m->main_mem_size);
        p->mem = OKPU_MEM_MAIN;
        p->offset = r.start;
        p->t.dtype = r.dtype == DT_F32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8;
        p->t.n = 1;
        p->t.c = r.size / esize(r.dtype);
        p->t.h = 1;
        p->t.w = 1;
        p->t.bytes = r.size;
        p->t.layer = -1;
    }
    return OKPU_OK;
}

/* Where the header's tables end and the node bodies begin (the header was checked against the file). */
static uint64_t bodies_start(const okpu_model *m)
{
    const uint8_t *d = m->data;
    return (uint64_t)KMODEL_V4_HEADER_BYTES + 32u * (uint64_t)okpu_rd_u32(d + 28) +
           16u * (uint64_t)okpu_rd_u32(d + 32) + okpu_rd_u32(d + 16) + 8u * (uint64_t)okpu_rd_u32(d + 24);
}

static int v4_read_header(okpu_model *m, okpu_error *err)
{
    const uint8_t *d = m->data;
    uint32_t flags, target, consts, main_mem, nodes, ninputs, noutputs;
    uint64_t table_end;
    if (m->size < KMODEL_V4_HEADER_BYTES)
        return hfail(err, OKPU_ERR_KMODEL_FORMAT, 0,
                     "the file is %lu bytes, shorter than the 40-byte kmodel v4 header; it is truncated - copy it "
                     "again",
                     (unsigned long)m->size);
    if (okpu_rd_u32(d) != KMDL_ID)
        return hfail(err, OKPU_ERR_KMODEL_FORMAT, 0, "identifier is not \"LDMK\" ('KMDL'); not a kmodel v4 file");
    if (okpu_rd_u32(d + 4) != 4u)
        return hfail(err, OKPU_ERR_KMODEL_VERSION, 4,
                     "version %lu, expected 4 (nncase v0.2.x); v5+ files come from nncase >= 1.0, which MaixPy cannot "
                     "run - recompile with nncase v0.2",
                     (unsigned long)okpu_rd_u32(d + 4));
    flags = okpu_rd_u32(d + 8);
    target = okpu_rd_u32(d + 12);
    consts = okpu_rd_u32(d + 16);
    main_mem = okpu_rd_u32(d + 20);
    nodes = okpu_rd_u32(d + 24);
    ninputs = okpu_rd_u32(d + 28);
    noutputs = okpu_rd_u32(d + 32);
    if (target > 1u)
        return hfail(err, OKPU_ERR_KMODEL_FORMAT, 12, "target %lu, expected 0 (CPU) or 1 (K210)",
                     (unsigned long)target);
    if (ninputs < 1 || ninputs > OKPU_MAX_IO || noutputs < 1 || noutputs > OKPU_MAX_IO)
        return hfail(err, OKPU_ERR_KMODEL_FORMAT, 28, "%lu inputs and %lu outputs; this runtime handles 1..%d of each",
                     (unsigned long)ninputs, (unsigned long)noutputs, OKPU_MAX_IO);
    if (nodes < 1 || nodes > V4_MAX_NODES)
        return hfail(err, OKPU_ERR_KMODEL_FORMAT, 24, "%lu nodes, expected 1..%u", (unsigned long)nodes,
                     V4_MAX_NODES);
    table_end = bodies_start(m);
    if (table_end > m->size)
        return hfail(err, OKPU_ERR_KMODEL_FORMAT, 16,
                     "the header declares %lu inputs, %lu outputs, %lu bytes of constants and %lu nodes, whose tables "
                     "end at byte %llu, past the end of the %lu-byte file; the file is truncated - copy it again",
                     (unsigned long)ninputs, (unsigned long)noutputs, (unsigned long)consts, (unsigned long)nodes,
                     (unsigned long long)table_end, (unsigned long)m->size);
    m->flags = flags;
    m->main_mem_size = main_mem;
    m->main_mem_from = "the header's main_mem";
    m->main_mem_from_at = 20;
    m->input_count = (int)ninputs;
    m->output_count = (int)noutputs;
    return parse_io(m, err, ninputs, noutputs);
}

/* Every node once: its table entry, its body (the op's decoder), its step, info and output place. */
static int v4_decode(okpu_model *m, okpu_error *err)
{
    const uint8_t *d = m->data;
    uint32_t nodes = okpu_rd_u32(d + 24), ninputs = okpu_rd_u32(d + 28), noutputs = okpu_rd_u32(d + 32), i;
    uint64_t off = bodies_start(m), table = off - 8u * (uint64_t)nodes;
    v4_cx cx;
    memset(&cx, 0, sizeof cx);
    cx.m = m;
    cx.err = err;
    cx.const_off = KMODEL_V4_HEADER_BYTES + 32u * ninputs + 16u * noutputs;
    cx.const_size = okpu_rd_u32(d + 16);
    OKPU_TRY(okpu_model_alloc_layers(m, (int)nodes, err));

    for (i = 0; i < nodes; i++) {
        uint64_t hdr = table + 8u * i;
        uint32_t opcode = okpu_rd_u32(d + hdr), bsz = okpu_rd_u32(d + hdr + 4);
        okpu_layer *L = &m->layers[i];
        okpu_layer_info *I = &L->info;
        const v4_op *op = find_op(opcode);
        v4_node n;
        if (!op) {
            char known[128];
            known_opcodes(known, sizeof known);
            return okpu_fail(err, OKPU_ERR_NOT_IMPLEMENT, (int)i, (long)hdr,
                             "kmodel v4 node %lu (node table at byte %lu) has opcode 0x%lX, which no nncase v0.2 "
                             "release defines: this runtime knows nncase v0.2.0-beta4's %s. The file is corrupt or "
                             "from an unofficial nncase build; recompile it with nncase v0.2.0-beta4",
                             (unsigned long)i, (unsigned long)hdr, (unsigned long)opcode, known);
        }
        if (off > m->size || bsz > m->size - off) {
            /* the last body may lack its < 8 bytes of alignment padding */
            if (!(i + 1 == nodes && off <= m->size && off + bsz - m->size < 8u))
                return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, (int)i, (long)hdr,
                                 "kmodel v4 node %lu (%s): its body of %lu bytes at byte %llu ends at %llu, past the "
                                 "end of the %lu-byte file; the file is truncated - copy it again",
                                 (unsigned long)i, op->name, (unsigned long)bsz, (unsigned long long)off,
                                 (unsigned long long)(off + bsz), (unsigned long)m->size);
        }
        L->type = opcode;
        L->body_offset = (uint32_t)off;
        L->body_size = bsz;
        memset(I, 0, sizeof *I);
        I->index = (int)i;
        I->type = opcode;
        I->type_name = op->name;
        I->body_offset = L->body_offset;
        I->body_size = bsz;
        I->para_size = bsz; /* kpu_conv2d: its weights' size */

        cx.idx = (int)i;
        cx.op = op;
        cx.body = d + off;
        cx.body_off = (uint32_t)off;
        cx.body_size = bsz;
        cx.avail = (uint64_t)bsz <= m->size - off ? bsz : (uint32_t)(m->size - off);
        cx.pos = 0;
        memset(&n, 0, sizeof n);
        OKPU_TRY(op->decode(&cx, &n));

        I->work = n.work ? n.work : out_elems(&n);
        L->out.t = n.t;
        L->out.t.layer = (int)i;
        L->out.mem = (okpu_mem_kind)n.out_mem;
        L->out.offset = n.out_off;
        I->output = L->out.t;
        off += bsz;
    }

    /* output shapes: nncase v0.2 stores none; take the last node that writes exactly that range */
    for (i = 0; i < noutputs; i++) {
        okpu_place *p = &m->outputs[i];
        int j;
        for (j = (int)nodes - 1; j >= 0; j--) {
            const okpu_place *q = &m->layers[j].out;
            if (q->mem == OKPU_MEM_MAIN && q->offset == p->offset && q->t.bytes == p->t.bytes &&
                q->t.dtype == p->t.dtype) {
                p->t = q->t;
                break;
            }
        }
    }
    return OKPU_OK;
}

const okpu_format okpu_format_v4 = {.name = "kmodel v4 (nncase v0.2)",
                                   .version = 4,
                                   .read_header = v4_read_header,
                                   .decode = v4_decode};

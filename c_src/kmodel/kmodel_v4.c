/* kmodel v4 (nncase v0.2.x) reader and runner.
 *
 * Layout (docs/kpu-reference.md section 6; nncase v0.2.0-beta4 runtime/model.h, interpreter.cpp): a 40-byte header,
 * input memory ranges, input shapes, output memory ranges, the constants blob, {opcode, body_size} per node, then the
 * bodies one after another (body += body_size; the last may run past EOF by < 8 bytes of unwritten padding).
 *
 * ONE table (v4_ops below) lists every opcode once: its nncase name, the function that decodes AND validates its
 * body (used at load and again, infallibly, before each run) and the function that runs it. Body layouts follow
 * nncase v0.2.0-beta4 neutral_ops_body.h / cpu_ops_body.h / k210_ops_body.h: plain structs read field by field
 * (enums and bools are 4 / 1 bytes, struct tail padding included in the body size).
 *
 * Rounding of the quantized ops (docs/kpu-reference.md section 8 item 3): opts->v4_quant_round. Default HALF_UP,
 * because nncase v0.2.0-beta4's runtime — the one that writes and runs these files, and what MaixPy's prebuilt v4 library
 * is built from — computes `(v * mul + 2^(s-1)) >> s`; SDK_CARRY (the odd-bit carry shift of older nncase /
 * the SDK's bundled runtime) stays selectable because no hardware dump settles which one a given firmware uses.
 *
 * Float ops: float32 exactly as the K210 build of nncase computes them (fmaf where riscv GCC contracts a*b+c;
 * quantize / dequantize as kernels/riscv/neutral_kernels.h): see kernels/neutral_kernels.h. */
#include "kmodel_v4.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* Everything any op decodes from its body. Pointers point into the model file. */
typedef struct v4_node {
    v4_mr in, in2, out;
    int32_t op;
    int32_t sa[4], sb[4], so[4];
    v4_window win;
    int32_t groups, oc;
    float lo, hi, init, beta, scale;
    int32_t zp;
    int32_t q[9];
    int32_t rows, cols, bcols;
    const uint8_t *w, *bias;
    const uint8_t *prog;
    size_t prog_len;
    uint32_t inner, outer, count;
    const uint8_t *list; /* concat: count memory ranges, then count i32 dims */
    int32_t pads[8];
    uint8_t padv[4];
    int32_t out_h, out_w, mode, align;
    int32_t begin[4], end[4], strides[4], perm[4];
    int32_t batches;
    const uint8_t *args_raw, *bn, *act, *kw;
    kpu_args args;
    uint32_t in_rows, out_rows;
    /* what the node writes, for layer info and output shapes */
    okpu_tensor t;
    int out_mem; /* okpu_mem_kind */
    uint32_t out_off;
    uint64_t work; /* multiply-accumulates or elements touched (node_work) */
} v4_node;

typedef struct v4_op v4_op;

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
    int running; /* re-decoding before a run: skip what only describes the node (set_t_like's search) */
} v4_cx;

struct v4_op {
    uint32_t opcode;
    const char *name;
    int (*parse)(v4_cx *cx, v4_node *n);
    int (*run)(v4_cx *cx, const v4_node *n);
};

/* ---- errors ---- */

static int nfail(v4_cx *cx, int code, const char *fmt, ...) OKPU_PRINTF(3, 4);
static int nfail(v4_cx *cx, int code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return okpu_fail(cx->err, code, cx->idx, (long)cx->body_off + (long)cx->pos,
                     "kmodel v4 node %d (%s, opcode 0x%X) body at byte %lu, field at byte %lu: %s; the file is "
                     "corrupt or not written by nncase v0.2 - re-export it with nncase v0.2.0",
                     cx->idx, cx->op ? cx->op->name : "?", cx->op ? (unsigned)cx->op->opcode : 0u,
                     (unsigned long)cx->body_off, (unsigned long)cx->body_off + cx->pos, msg);
}

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        int rc_ = (x);                                                                                                 \
        if (rc_ != OKPU_OK)                                                                                            \
            return rc_;                                                                                                \
    } while (0)

/* ---- body reader ---- */

static int need(v4_cx *cx, uint32_t bytes, const char *what)
{
    if (bytes > cx->avail || cx->pos > cx->avail - bytes)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                     "expected %s (%lu bytes at body offset %lu) but the body has only %lu bytes%s", what,
                     (unsigned long)bytes, (unsigned long)cx->pos, (unsigned long)cx->avail,
                     cx->avail < cx->body_size ? " before the end of the file (truncated)" : "");
    return OKPU_OK;
}

static int rd_i32(v4_cx *cx, int32_t *v, const char *what)
{
    TRY(need(cx, 4, what));
    *v = okpu_rd_i32(cx->body + cx->pos);
    cx->pos += 4;
    return OKPU_OK;
}

static int rd_u32(v4_cx *cx, uint32_t *v, const char *what)
{
    TRY(need(cx, 4, what));
    *v = okpu_rd_u32(cx->body + cx->pos);
    cx->pos += 4;
    return OKPU_OK;
}

static int rd_f32(v4_cx *cx, float *v, const char *what)
{
    TRY(need(cx, 4, what));
    *v = okpu_rd_f32(cx->body + cx->pos);
    cx->pos += 4;
    return OKPU_OK;
}

static int rd_shape(v4_cx *cx, int32_t s[4], const char *what)
{
    int i;
    TRY(need(cx, 16, what));
    for (i = 0; i < 4; i++)
        s[i] = okpu_rd_i32(cx->body + cx->pos + 4u * (uint32_t)i);
    cx->pos += 16;
    return OKPU_OK;
}

static int rd_span(v4_cx *cx, const uint8_t **p, uint64_t bytes, const char *what)
{
    if (bytes > 0xFFFFFFFFu)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s would be %llu bytes, larger than any model", what,
                     (unsigned long long)bytes);
    TRY(need(cx, (uint32_t)bytes, what));
    *p = cx->body + cx->pos;
    cx->pos += (uint32_t)bytes;
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

/* Read a memory range and check it: memory type in `types` (bit mask of 1 << type), datatype `dtype` (-1: f32 or
 * u8), size == `bytes` (UINT64_MAX: any), and inside its memory. */
static int rd_mr(v4_cx *cx, v4_mr *r, const char *what, unsigned types, int dtype, uint64_t bytes)
{
    uint32_t at = cx->pos;
    TRY(need(cx, 16, what));
    mr_decode(cx->body + cx->pos, r);
    if (r->type > MT_KPU || !(types & (1u << r->type)))
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s has memory_type %lu (%s); expected %s%s%s", what,
                     (unsigned long)r->type, mt_name(r->type), (types & 1u) ? "const " : "",
                     (types & 2u) ? "main " : "", (types & 4u) ? "k210_kpu" : "");
    if (r->dtype > DT_U8 || (dtype >= 0 && r->dtype != (uint32_t)dtype))
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s has datatype %lu (%s); expected %s", what,
                     (unsigned long)r->dtype, dt_name(r->dtype), dtype < 0 ? "float32 or uint8" : dt_name((uint32_t)dtype));
    if ((uint64_t)r->start + r->size > mem_size(cx, r->type))
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s [%lu, %lu) lies outside %s memory of %llu bytes", what,
                     (unsigned long)r->start, (unsigned long)((uint64_t)r->start + r->size), mt_name(r->type),
                     (unsigned long long)mem_size(cx, r->type));
    if (bytes != UINT64_MAX && r->size != bytes) {
        cx->pos = at;
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s is %lu bytes but the node's shape/count needs %llu bytes",
                     what, (unsigned long)r->size, (unsigned long long)bytes);
    }
    cx->pos += 16;
    return OKPU_OK;
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
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s [%ld, %ld, %ld, %ld]: dimension %d is %ld, expected 1..%d",
                         what, (long)s[0], (long)s[1], (long)s[2], (long)s[3], i, (long)s[i], V4_MAX_DIM);
        c *= (uint64_t)s[i];
        if (c > V4_MAX_ELEMS)
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s [%ld, %ld, %ld, %ld] has more than 2^30 elements", what,
                         (long)s[0], (long)s[1], (long)s[2], (long)s[3]);
    }
    if (count)
        *count = c;
    return OKPU_OK;
}

static int chk_positive(v4_cx *cx, int32_t v, int32_t max, const char *what)
{
    if (v < 1 || v > max)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s is %ld, expected 1..%ld", what, (long)v, (long)max);
    return OKPU_OK;
}

static int chk_shift(v4_cx *cx, int32_t s, const char *what)
{
    if (s < 0 || s > 62)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s is %ld, expected 0..62", what, (long)s);
    return OKPU_OK;
}

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

/* Flat output: inherit the shape of whatever earlier node wrote `src` (same main offset, same element count),
 * else (1, count, 1, 1). */
static void set_t_like(v4_cx *cx, v4_node *n, const v4_mr *src, uint32_t dtype, uint32_t count)
{
    int j;
    set_t(n, dtype, 1, (int32_t)count, 1, 1);
    if (src->type != MT_MAIN || cx->running)
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

/* ---- memory access at run time (ranges were validated at load) ---- */

static const uint8_t *mem_in(v4_cx *cx, const v4_mr *r)
{
    if (r->type == MT_CONST)
        return cx->m->data + cx->const_off + r->start;
    if (r->type == MT_KPU)
        return cx->m->kpu->ram + r->start;
    return cx->m->main_mem + r->start;
}

static uint8_t *mem_out(v4_cx *cx, const v4_mr *r)
{
    if (r->type == MT_KPU)
        return cx->m->kpu->ram + r->start;
    return cx->m->main_mem + r->start;
}

/* ---- windows ---- */

static int rd_window(v4_cx *cx, v4_node *n, int with_filter_first)
{
    (void)with_filter_first;
    TRY(rd_i32(cx, &n->win.pad_h_before, "padding_h.before"));
    TRY(rd_i32(cx, &n->win.pad_h_after, "padding_h.after"));
    TRY(rd_i32(cx, &n->win.pad_w_before, "padding_w.before"));
    TRY(rd_i32(cx, &n->win.pad_w_after, "padding_w.after"));
    TRY(rd_i32(cx, &n->win.filter_h, "filter_h"));
    TRY(rd_i32(cx, &n->win.filter_w, "filter_w"));
    TRY(rd_i32(cx, &n->win.stride_h, "stride_h"));
    TRY(rd_i32(cx, &n->win.stride_w, "stride_w"));
    TRY(rd_i32(cx, &n->win.dilation_h, "dilation_h"));
    TRY(rd_i32(cx, &n->win.dilation_w, "dilation_w"));
    TRY(chk_positive(cx, n->win.filter_h, V4_MAX_WINDOW, "filter_h"));
    TRY(chk_positive(cx, n->win.filter_w, V4_MAX_WINDOW, "filter_w"));
    TRY(chk_positive(cx, n->win.stride_h, V4_MAX_WINDOW, "stride_h"));
    TRY(chk_positive(cx, n->win.stride_w, V4_MAX_WINDOW, "stride_w"));
    TRY(chk_positive(cx, n->win.dilation_h, V4_MAX_WINDOW, "dilation_h"));
    TRY(chk_positive(cx, n->win.dilation_w, V4_MAX_WINDOW, "dilation_w"));
    if (n->win.pad_h_before < -V4_MAX_WINDOW || n->win.pad_h_before > V4_MAX_WINDOW ||
        n->win.pad_h_after < -V4_MAX_WINDOW || n->win.pad_h_after > V4_MAX_WINDOW ||
        n->win.pad_w_before < -V4_MAX_WINDOW || n->win.pad_w_before > V4_MAX_WINDOW ||
        n->win.pad_w_after < -V4_MAX_WINDOW || n->win.pad_w_after > V4_MAX_WINDOW)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "padding (%ld, %ld, %ld, %ld) out of range -%d..%d",
                     (long)n->win.pad_h_before, (long)n->win.pad_h_after, (long)n->win.pad_w_before,
                     (long)n->win.pad_w_after, V4_MAX_WINDOW, V4_MAX_WINDOW);
    return OKPU_OK;
}

/* output h, w of a window over (h, w) */
static int window_out(v4_cx *cx, const v4_node *n, int32_t h, int32_t w, int32_t *oh, int32_t *ow)
{
    int64_t a = v4_windowed_size(h, n->win.filter_h, n->win.stride_h, n->win.dilation_h, n->win.pad_h_before,
                                 n->win.pad_h_after);
    int64_t b = v4_windowed_size(w, n->win.filter_w, n->win.stride_w, n->win.dilation_w, n->win.pad_w_before,
                                 n->win.pad_w_after);
    if (a < 1 || b < 1 || a > V4_MAX_DIM || b > V4_MAX_DIM)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                     "the window (filter %ldx%ld, stride %ldx%ld, dilation %ldx%ld) over %ldx%ld gives an output of "
                     "%lldx%lld, expected at least 1x1",
                     (long)n->win.filter_h, (long)n->win.filter_w, (long)n->win.stride_h, (long)n->win.stride_w,
                     (long)n->win.dilation_h, (long)n->win.dilation_w, (long)h, (long)w, (long long)a, (long long)b);
    *oh = (int32_t)a;
    *ow = (int32_t)b;
    return OKPU_OK;
}

static int rd_act(v4_cx *cx, v4_node *n)
{
    TRY(rd_f32(cx, &n->lo, "fused_activation.min"));
    return rd_f32(cx, &n->hi, "fused_activation.max");
}

/* ================= neutral ops ================= */

static int rd_binary_head(v4_cx *cx, v4_node *n, int quant)
{
    int32_t op;
    uint32_t at;
    uint64_t ca, cb, co;
    unsigned es = quant ? 1u : 4u;
    int dt = quant ? DT_U8 : DT_F32;
    int i;
    /* shapes come after the ranges: read ahead to size-check the ranges */
    TRY(need(cx, 48 + 4 + 48, "the three memory ranges, binary_op and three shapes"));
    at = cx->pos;
    cx->pos = at + 52;
    TRY(rd_shape(cx, n->sa, "in_a_shape"));
    TRY(rd_shape(cx, n->sb, "in_b_shape"));
    TRY(rd_shape(cx, n->so, "out_shape"));
    TRY(chk_shape(cx, n->sa, "in_a_shape", &ca));
    TRY(chk_shape(cx, n->sb, "in_b_shape", &cb));
    TRY(chk_shape(cx, n->so, "out_shape", &co));
    for (i = 0; i < 4; i++)
        if ((n->sa[i] != n->so[i] && n->sa[i] != 1) || (n->sb[i] != n->so[i] && n->sb[i] != 1))
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                         "shapes a [%ld,%ld,%ld,%ld] and b [%ld,%ld,%ld,%ld] do not broadcast to out [%ld,%ld,%ld,%ld]",
                         (long)n->sa[0], (long)n->sa[1], (long)n->sa[2], (long)n->sa[3], (long)n->sb[0],
                         (long)n->sb[1], (long)n->sb[2], (long)n->sb[3], (long)n->so[0], (long)n->so[1],
                         (long)n->so[2], (long)n->so[3]);
    cx->pos = at;
    TRY(rd_mr(cx, &n->in, "input_a", IN_TYPES, dt, ca * es));
    TRY(rd_mr(cx, &n->in2, "input_b", IN_TYPES, dt, cb * es));
    TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, dt, co * es));
    TRY(rd_i32(cx, &op, "binary_op"));
    if (op < 0 || op >= V4_BIN_COUNT)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "binary_op %ld, expected 0..5 (add, sub, mul, div, min, max)",
                     (long)op);
    n->op = op;
    cx->pos += 48;
    set_t(n, (uint32_t)dt, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

static int p_binary(v4_cx *cx, v4_node *n)
{
    TRY(rd_binary_head(cx, n, 0));
    return rd_act(cx, n);
}

static int r_binary(v4_cx *cx, const v4_node *n)
{
    v4k_binary(mem_in(cx, &n->in), mem_in(cx, &n->in2), mem_out(cx, &n->out), n->sa, n->sb, n->so, n->op, n->lo,
               n->hi);
    return OKPU_OK;
}

static int p_qbinary(v4_cx *cx, v4_node *n)
{
    static const char *const names[9] = {"input_a_offset", "input_a_mul", "input_a_shift",
                                         "input_b_offset", "input_b_mul", "input_b_shift",
                                         "output_offset",  "output_mul",  "output_shift"};
    int i;
    TRY(rd_binary_head(cx, n, 1));
    for (i = 0; i < 9; i++)
        TRY(rd_i32(cx, &n->q[i], names[i]));
    TRY(chk_shift(cx, n->q[2], "input_a_shift"));
    TRY(chk_shift(cx, n->q[5], "input_b_shift"));
    return chk_shift(cx, n->q[8], "output_shift");
}

static int r_qbinary(v4_cx *cx, const v4_node *n)
{
    v4_qbin_params p;
    p.a_offset = n->q[0];
    p.a_mul = n->q[1];
    p.a_shift = n->q[2];
    p.b_offset = n->q[3];
    p.b_mul = n->q[4];
    p.b_shift = n->q[5];
    p.out_offset = n->q[6];
    p.out_mul = n->q[7];
    p.out_shift = n->q[8];
    v4k_quantized_binary(mem_in(cx, &n->in), mem_in(cx, &n->in2), mem_out(cx, &n->out), n->sa, n->sb, n->so, n->op,
                         &p, cx->m->opts.v4_quant_round);
    return OKPU_OK;
}

static int p_concat(v4_cx *cx, v4_node *n)
{
    uint32_t i, list_at;
    uint64_t total = 0;
    TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, -1, UINT64_MAX));
    TRY(rd_u32(cx, &n->inner, "inner_size"));
    TRY(rd_u32(cx, &n->outer, "outer_size"));
    TRY(rd_u32(cx, &n->count, "inputs_count"));
    if (n->count < 1 || n->count > V4_MAX_CONCAT)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "inputs_count %lu, expected 1..%u", (unsigned long)n->count,
                     V4_MAX_CONCAT);
    /* the kernel loops outer x inputs times whatever the sizes: a zero inner size with a huge outer size is an empty
     * output that takes billions of iterations (found by fuzz_v4) */
    if (n->inner < 1 || n->outer < 1)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "inner_size %lu, outer_size %lu: both must be >= 1",
                     (unsigned long)n->inner, (unsigned long)n->outer);
    list_at = cx->pos;
    TRY(rd_span(cx, &n->list, (uint64_t)n->count * 20u, "the concat input ranges and dims"));
    for (i = 0; i < n->count; i++) {
        v4_mr r;
        int32_t dim = okpu_rd_i32(n->list + 16u * n->count + 4u * i);
        uint64_t need_bytes;
        cx->pos = list_at + 16u * n->count + 4u * i;
        if (dim < 0 || dim > V4_MAX_DIM)
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "dims[%lu] is %ld, expected 0..%d", (unsigned long)i, (long)dim,
                         V4_MAX_DIM);
        /* inner * dim * outer wraps to 0 unchecked, and the kernel then moves gigabytes */
        if (okpu_mul3(n->inner, (uint64_t)dim, n->outer, OKPU_SIZE_LIMIT, &need_bytes))
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                         "input %lu: inner_size %lu x dims %ld x outer_size %lu exceeds %llu bytes", (unsigned long)i,
                         (unsigned long)n->inner, (long)dim, (unsigned long)n->outer,
                         (unsigned long long)OKPU_SIZE_LIMIT);
        cx->pos = list_at + 16u * i;
        TRY(rd_mr(cx, &r, "a concat input", IN_TYPES, (int)n->out.dtype, need_bytes));
        if (r.type == MT_MAIN && okpu_ranges_overlap(r.start, r.size, n->out.start, n->out.size))
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                         "concat input %lu [%lu, %llu) overlaps the output [%lu, %llu) in main memory; concat cannot "
                         "work in place",
                         (unsigned long)i, (unsigned long)r.start, (unsigned long long)r.start + r.size,
                         (unsigned long)n->out.start, (unsigned long long)n->out.start + n->out.size);
        total += need_bytes; /* <= 4096 inputs of < 2^32 bytes: no wrap */
    }
    cx->pos = list_at;
    if (total != n->out.size)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                     "the inputs add up to %llu bytes (outer_size %lu x inner_size %lu x sum of dims) but the output "
                     "range is %lu bytes",
                     (unsigned long long)total, (unsigned long)n->outer, (unsigned long)n->inner,
                     (unsigned long)n->out.size);
    cx->pos = list_at + 20u * n->count;
    set_t(n, n->out.dtype, 1, (int32_t)(n->out.size / esize(n->out.dtype)), 1, 1);
    return OKPU_OK;
}

static int r_concat(v4_cx *cx, const v4_node *n)
{
    const uint8_t *ptrs[64];
    int32_t dims[64];
    uint32_t done = 0;
    uint8_t *out = mem_out(cx, &n->out);
    /* copy in chunks of 64 inputs per outer step would change the order; concat needs all inputs per outer index,
     * so when count > 64 fall back to one input at a time per outer index */
    if (n->count <= 64) {
        uint32_t i;
        for (i = 0; i < n->count; i++) {
            v4_mr r;
            mr_decode(n->list + 16u * i, &r);
            ptrs[i] = mem_in(cx, &r);
            dims[i] = okpu_rd_i32(n->list + 16u * n->count + 4u * i);
        }
        v4k_concat(out, ptrs, dims, n->count, n->inner, n->outer);
        return OKPU_OK;
    }
    for (done = 0; done < n->outer; done++) {
        uint32_t i;
        for (i = 0; i < n->count; i++) {
            v4_mr r;
            int32_t dim = okpu_rd_i32(n->list + 16u * n->count + 4u * i);
            size_t sz = (size_t)n->inner * (size_t)dim;
            mr_decode(n->list + 16u * i, &r);
            memmove(out, mem_in(cx, &r) + (size_t)done * sz, sz);
            out += sz;
        }
    }
    return OKPU_OK;
}

static int conv_common(v4_cx *cx, v4_node *n, int quant)
{
    uint64_t cin;
    int32_t oh, ow;
    uint32_t at = cx->pos;
    /* ranges first, checked after the shape is known */
    TRY(need(cx, 32, "input and output memory ranges"));
    cx->pos += 32;
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    TRY(rd_i32(cx, &n->groups, "groups"));
    TRY(rd_i32(cx, &n->oc, "out_channels"));
    TRY(chk_positive(cx, n->groups, V4_MAX_DIM, "groups"));
    TRY(chk_positive(cx, n->oc, V4_MAX_DIM, "out_channels"));
    if (n->sa[1] % n->groups || n->oc % n->groups)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "groups %ld does not divide in channels %ld and out_channels %ld",
                     (long)n->groups, (long)n->sa[1], (long)n->oc);
    TRY(rd_window(cx, n, 0));
    TRY(window_out(cx, n, n->sa[2], n->sa[3], &oh, &ow));
    n->so[0] = n->sa[0];
    n->so[1] = n->oc;
    n->so[2] = oh;
    n->so[3] = ow;
    {
        uint64_t co;
        uint32_t after = cx->pos;
        TRY(chk_shape(cx, n->so, "output shape", &co));
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, quant ? DT_U8 : DT_F32, cin * (quant ? 1u : 4u)));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, quant ? DT_U8 : DT_F32, co * (quant ? 1u : 4u)));
        cx->pos = after;
    }
    set_t(n, quant ? DT_U8 : DT_F32, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

/* Bytes of e-byte elements in a*b*c*d, refused past any possible size: unchecked, oc*ic*fh*fw*4 wraps in 64 bits
 * and a tiny body passes for huge weights the kernel then reads outside the model. */
static int span_size(v4_cx *cx, const char *what, uint64_t e, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                     uint64_t *out)
{
    if (!okpu_mul4(a, b, c, d, OKPU_SIZE_LIMIT, out) && !okpu_mul_ovf(*out, e, OKPU_SIZE_LIMIT, out))
        return OKPU_OK;
    return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "%s of %llu x %llu x %llu x %llu elements exceed %llu bytes", what,
                 (unsigned long long)a, (unsigned long long)b, (unsigned long long)c, (unsigned long long)d,
                 (unsigned long long)OKPU_SIZE_LIMIT);
}

static int conv_weights(v4_cx *cx, const v4_node *n, uint64_t e, uint64_t *bytes)
{
    return span_size(cx, "weights (oc x ic/groups x filter_h x filter_w)", e, (uint64_t)n->oc,
                     (uint64_t)(n->sa[1] / n->groups), (uint64_t)n->win.filter_h, (uint64_t)n->win.filter_w, bytes);
}

static int p_conv2d(v4_cx *cx, v4_node *n)
{
    uint64_t wb;
    TRY(conv_common(cx, n, 0));
    TRY(rd_act(cx, n));
    TRY(conv_weights(cx, n, 4, &wb));
    TRY(rd_span(cx, &n->w, wb, "weights (oc x ic/groups x filter_h x filter_w float32)"));
    return rd_span(cx, &n->bias, (uint64_t)n->oc * 4u, "bias (out_channels float32)");
}

static int r_conv2d(v4_cx *cx, const v4_node *n)
{
    v4k_conv2d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->w, n->bias, n->sa, n->groups, n->oc, &n->win, n->lo,
               n->hi);
    return OKPU_OK;
}

static int p_qconv2d(v4_cx *cx, v4_node *n)
{
    static const char *const names[5] = {"input_offset", "filter_offset", "output_mul", "output_shift",
                                         "output_offset"};
    int i;
    uint64_t wb;
    TRY(conv_common(cx, n, 1));
    for (i = 0; i < 5; i++)
        TRY(rd_i32(cx, &n->q[i], names[i]));
    TRY(chk_shift(cx, n->q[3], "output_shift"));
    TRY(rd_span(cx, &n->bias, (uint64_t)n->oc * 4u, "bias (out_channels int32)"));
    TRY(conv_weights(cx, n, 1, &wb));
    return rd_span(cx, &n->w, wb, "weights (oc x ic/groups x filter_h x filter_w uint8)");
}

static void qconv_params(const v4_node *n, v4_qconv_params *p)
{
    p->input_offset = n->q[0];
    p->filter_offset = n->q[1];
    p->output_mul = n->q[2];
    p->output_shift = n->q[3];
    p->output_offset = n->q[4];
}

static int r_qconv2d(v4_cx *cx, const v4_node *n)
{
    v4_qconv_params p;
    qconv_params(n, &p);
    v4k_quantized_conv2d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->w, n->bias, n->sa, n->groups, n->oc, &n->win,
                         &p, cx->m->opts.v4_quant_round);
    return OKPU_OK;
}

static int p_conv2d_transpose(v4_cx *cx, v4_node *n)
{
    uint64_t cin, co;
    uint32_t at = cx->pos;
    TRY(need(cx, 32, "input and output memory ranges"));
    cx->pos += 32;
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(rd_shape(cx, n->so, "out_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    TRY(chk_shape(cx, n->so, "out_shape", &co));
    TRY(rd_i32(cx, &n->groups, "groups"));
    TRY(chk_positive(cx, n->groups, V4_MAX_DIM, "groups"));
    if (n->sa[1] % n->groups || n->so[1] % n->groups || n->sa[0] != n->so[0])
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                     "groups %ld must divide in channels %ld and out channels %ld, and batches must match (%ld, %ld)",
                     (long)n->groups, (long)n->sa[1], (long)n->so[1], (long)n->sa[0], (long)n->so[0]);
    TRY(rd_window(cx, n, 0));
    TRY(rd_act(cx, n));
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, cin * 4u));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, co * 4u));
        cx->pos = after;
    }
    n->oc = n->so[1];
    {
        uint64_t wb;
        TRY(conv_weights(cx, n, 4, &wb));
        TRY(rd_span(cx, &n->w, wb, "weights (out_channels x in_channels/groups x filter_h x filter_w float32)"));
    }
    TRY(rd_span(cx, &n->bias, (uint64_t)n->so[1] * 4u, "bias (out_channels float32)"));
    set_t(n, DT_F32, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

static int r_conv2d_transpose(v4_cx *cx, const v4_node *n)
{
    v4k_conv2d_transpose(mem_in(cx, &n->in), mem_out(cx, &n->out), n->w, n->sa, n->so, n->groups, &n->win, n->lo,
                         n->hi);
    return OKPU_OK;
}

static int p_dequantize(v4_cx *cx, v4_node *n)
{
    TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_U8, UINT64_MAX));
    TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, (uint64_t)n->in.size * 4u));
    TRY(rd_i32(cx, &n->zp, "quant_param.zero_point"));
    TRY(rd_f32(cx, &n->scale, "quant_param.scale"));
    set_t_like(cx, n, &n->in, DT_F32, n->in.size);
    return OKPU_OK;
}

static int r_dequantize(v4_cx *cx, const v4_node *n)
{
    v4k_dequantize(mem_in(cx, &n->in), mem_out(cx, &n->out), n->in.size, n->zp, n->scale);
    return OKPU_OK;
}

static int p_quantize(v4_cx *cx, v4_node *n)
{
    TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, UINT64_MAX));
    if (n->in.size % 4u) {
        cx->pos -= 16;
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "float32 input of %lu bytes is not a whole number of floats",
                     (unsigned long)n->in.size);
    }
    TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_U8, (uint64_t)n->in.size / 4u));
    TRY(rd_i32(cx, &n->zp, "quant_param.zero_point"));
    TRY(rd_f32(cx, &n->scale, "quant_param.scale"));
    set_t_like(cx, n, &n->in, DT_U8, n->in.size / 4u);
    return OKPU_OK;
}

static int r_quantize(v4_cx *cx, const v4_node *n)
{
    v4k_quantize(mem_in(cx, &n->in), mem_out(cx, &n->out), n->in.size / 4u, n->zp, n->scale);
    return OKPU_OK;
}

static int p_matmul(v4_cx *cx, v4_node *n, int quant)
{
    uint32_t at = cx->pos;
    unsigned es = quant ? 1u : 4u;
    int dt = quant ? DT_U8 : DT_F32;
    TRY(need(cx, 48, "three memory ranges"));
    cx->pos += 48;
    TRY(rd_i32(cx, &n->rows, "a_rows"));
    TRY(rd_i32(cx, &n->cols, "a_cols"));
    TRY(rd_i32(cx, &n->bcols, "b_cols"));
    TRY(chk_positive(cx, n->rows, V4_MAX_DIM, "a_rows"));
    TRY(chk_positive(cx, n->cols, V4_MAX_DIM, "a_cols"));
    TRY(chk_positive(cx, n->bcols, V4_MAX_DIM, "b_cols"));
    if ((uint64_t)n->rows * n->cols > V4_MAX_ELEMS || (uint64_t)n->cols * n->bcols > V4_MAX_ELEMS ||
        (uint64_t)n->rows * n->bcols > V4_MAX_ELEMS)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "matrices %ldx%ld by %ldx%ld exceed 2^30 elements", (long)n->rows,
                     (long)n->cols, (long)n->cols, (long)n->bcols);
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input_a", IN_TYPES, dt, (uint64_t)n->rows * n->cols * es));
        TRY(rd_mr(cx, &n->in2, "input_b", IN_TYPES, dt, (uint64_t)n->cols * n->bcols * es));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, dt, (uint64_t)n->rows * n->bcols * es));
        cx->pos = after;
    }
    if (n->rows == 1)
        set_t(n, (uint32_t)dt, 1, n->bcols, 1, 1);
    else
        set_t(n, (uint32_t)dt, 1, 1, n->rows, n->bcols);
    return OKPU_OK;
}

static int p_fmatmul(v4_cx *cx, v4_node *n)
{
    TRY(p_matmul(cx, n, 0));
    TRY(rd_act(cx, n));
    return rd_span(cx, &n->bias, (uint64_t)n->bcols * 4u, "bias (b_cols float32)");
}

static int r_fmatmul(v4_cx *cx, const v4_node *n)
{
    v4k_matmul(mem_in(cx, &n->in), mem_in(cx, &n->in2), mem_out(cx, &n->out), n->bias, n->rows, n->cols, n->bcols,
               n->lo, n->hi);
    return OKPU_OK;
}

static int p_qmatmul(v4_cx *cx, v4_node *n)
{
    static const char *const names[5] = {"input_a_offset", "input_b_offset", "output_mul", "output_shift",
                                         "output_offset"};
    int i;
    TRY(p_matmul(cx, n, 1));
    for (i = 0; i < 5; i++)
        TRY(rd_i32(cx, &n->q[i], names[i]));
    TRY(chk_shift(cx, n->q[3], "output_shift"));
    return rd_span(cx, &n->bias, (uint64_t)n->bcols * 4u, "bias (b_cols int32)");
}

static int r_qmatmul(v4_cx *cx, const v4_node *n)
{
    v4k_quantized_matmul(mem_in(cx, &n->in), mem_in(cx, &n->in2), mem_out(cx, &n->out), n->bias, n->rows, n->cols,
                         n->bcols, n->q[0], n->q[1], n->q[2], n->q[3], n->q[4], cx->m->opts.v4_quant_round);
    return OKPU_OK;
}

static int p_pad(v4_cx *cx, v4_node *n)
{
    uint64_t cin, co;
    uint32_t at = cx->pos, dt;
    int i;
    TRY(need(cx, 32, "input and output memory ranges"));
    dt = okpu_rd_u32(cx->body + at + 4);
    cx->pos += 32;
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    for (i = 0; i < 8; i++)
        TRY(rd_i32(cx, &n->pads[i], "paddings"));
    for (i = 0; i < 4; i++) {
        int64_t d = (int64_t)n->sa[i] + n->pads[2 * i] + n->pads[2 * i + 1];
        if (n->pads[2 * i] < -V4_MAX_DIM || n->pads[2 * i] > V4_MAX_DIM || n->pads[2 * i + 1] < -V4_MAX_DIM ||
            n->pads[2 * i + 1] > V4_MAX_DIM || d < 1 || d > V4_MAX_DIM)
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "paddings (%ld, %ld) of dimension %d (size %ld) give size %lld",
                         (long)n->pads[2 * i], (long)n->pads[2 * i + 1], i, (long)n->sa[i], (long long)d);
        n->so[i] = (int32_t)d;
    }
    TRY(chk_shape(cx, n->so, "padded shape", &co));
    TRY(need(cx, 8, "pad_value (scalar: datatype + 4 bytes)"));
    memcpy(n->padv, cx->body + cx->pos + 4, 4);
    cx->pos += 8;
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, -1, cin * esize(dt)));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, (int)dt, co * esize(dt)));
        cx->pos = after;
    }
    set_t(n, dt, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

static int r_pad(v4_cx *cx, const v4_node *n)
{
    v4k_pad(mem_in(cx, &n->in), mem_out(cx, &n->out), n->sa, n->pads, n->padv, esize(n->in.dtype));
    return OKPU_OK;
}

static int p_reduce(v4_cx *cx, v4_node *n)
{
    uint64_t cin, co;
    uint32_t at = cx->pos;
    int i;
    TRY(need(cx, 32, "input and output memory ranges"));
    cx->pos += 32;
    TRY(rd_i32(cx, &n->op, "reduce_op"));
    if (n->op < 0 || n->op >= V4_RED_COUNT)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "reduce_op %ld, expected 0..3 (mean, min, max, sum)", (long)n->op);
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(rd_shape(cx, n->so, "out_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    TRY(chk_shape(cx, n->so, "out_shape", &co));
    for (i = 0; i < 4; i++)
        if (n->so[i] != n->sa[i] && n->so[i] != 1)
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "out_shape dimension %d is %ld; expected %ld or 1", i,
                         (long)n->so[i], (long)n->sa[i]);
    TRY(rd_f32(cx, &n->init, "init_value"));
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, cin * 4u));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, co * 4u));
        cx->pos = after;
    }
    set_t(n, DT_F32, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

static int r_reduce(v4_cx *cx, const v4_node *n)
{
    v4k_reduce(mem_in(cx, &n->in), mem_out(cx, &n->out), n->op, n->sa, n->so, n->init);
    return OKPU_OK;
}

/* reduce_window2d (neutral NCHW) and cpu_reduce_window2d (NHWC) share the body layout */
static int p_rw2d(v4_cx *cx, v4_node *n, int nhwc)
{
    uint64_t cin, co;
    uint32_t at = cx->pos;
    int32_t oh, ow;
    TRY(need(cx, 32, "input and output memory ranges"));
    cx->pos += 32;
    TRY(rd_i32(cx, &n->op, "reduce_op"));
    if (n->op < 0 || n->op >= V4_RED_COUNT)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "reduce_op %ld, expected 0..3 (mean, min, max, sum)", (long)n->op);
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    TRY(rd_window(cx, n, 0));
    TRY(rd_f32(cx, &n->init, "init_value"));
    TRY(rd_act(cx, n));
    if (nhwc) {
        TRY(window_out(cx, n, n->sa[1], n->sa[2], &oh, &ow));
        n->so[0] = n->sa[0];
        n->so[1] = oh;
        n->so[2] = ow;
        n->so[3] = n->sa[3];
    } else {
        TRY(window_out(cx, n, n->sa[2], n->sa[3], &oh, &ow));
        n->so[0] = n->sa[0];
        n->so[1] = n->sa[1];
        n->so[2] = oh;
        n->so[3] = ow;
    }
    TRY(chk_shape(cx, n->so, "output shape", &co));
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, cin * 4u));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, co * 4u));
        cx->pos = after;
    }
    if (nhwc)
        set_t(n, DT_F32, n->so[0], n->so[3], n->so[1], n->so[2]); /* reported as NCHW dims of an NHWC buffer */
    else
        set_t(n, DT_F32, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

static int p_reduce_window2d(v4_cx *cx, v4_node *n)
{
    return p_rw2d(cx, n, 0);
}

static int r_reduce_window2d(v4_cx *cx, const v4_node *n)
{
    v4k_reduce_window2d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->op, n->sa, &n->win, n->init, n->lo, n->hi);
    return OKPU_OK;
}

static int p_cpu_reduce_window2d(v4_cx *cx, v4_node *n)
{
    return p_rw2d(cx, n, 1);
}

static int r_cpu_reduce_window2d(v4_cx *cx, const v4_node *n)
{
    v4k_cpu_reduce_window2d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->op, n->sa, &n->win, n->init, n->lo, n->hi);
    return OKPU_OK;
}

static int p_memory_copy(v4_cx *cx, v4_node *n)
{
    TRY(rd_mr(cx, &n->in, "input", IN_TYPES, -1, UINT64_MAX));
    TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, -1, n->in.size));
    set_t_like(cx, n, &n->in, n->out.dtype, n->out.size / esize(n->out.dtype));
    n->t.bytes = n->out.size;
    return OKPU_OK;
}

static int r_memory_copy(v4_cx *cx, const v4_node *n)
{
    /* nncase copies input.size()/4 floats */
    memmove(mem_out(cx, &n->out), mem_in(cx, &n->in), (size_t)(n->in.size / 4u) * 4u);
    return OKPU_OK;
}

static int p_resize(v4_cx *cx, v4_node *n)
{
    uint64_t cin, co;
    uint32_t at = cx->pos, dt;
    TRY(need(cx, 32, "input and output memory ranges"));
    dt = okpu_rd_u32(cx->body + at + 4);
    cx->pos += 32;
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    TRY(rd_i32(cx, &n->out_h, "out_h"));
    TRY(rd_i32(cx, &n->out_w, "out_w"));
    TRY(chk_positive(cx, n->out_h, V4_MAX_DIM, "out_h"));
    TRY(chk_positive(cx, n->out_w, V4_MAX_DIM, "out_w"));
    TRY(rd_i32(cx, &n->mode, "mode"));
    if (n->mode != 0 && n->mode != 1)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "resize mode %ld, expected 0 (bilinear) or 1 (nearest neighbor)",
                     (long)n->mode);
    TRY(need(cx, 4, "align_corners (bool + 3 bytes of struct padding)"));
    n->align = cx->body[cx->pos] != 0;
    cx->pos += 4;
    n->so[0] = n->sa[0];
    n->so[1] = n->sa[1];
    n->so[2] = n->out_h;
    n->so[3] = n->out_w;
    TRY(chk_shape(cx, n->so, "output shape", &co));
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, -1, cin * esize(dt)));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, (int)dt, co * esize(dt)));
        cx->pos = after;
    }
    set_t(n, dt, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

static int r_resize(v4_cx *cx, const v4_node *n)
{
    v4k_resize(mem_in(cx, &n->in), mem_out(cx, &n->out), n->sa, n->out_h, n->out_w, n->mode, n->align,
               esize(n->in.dtype));
    return OKPU_OK;
}

static int p_softmax(v4_cx *cx, v4_node *n)
{
    uint32_t at = cx->pos;
    uint64_t c;
    TRY(need(cx, 32, "input and output memory ranges"));
    cx->pos += 32;
    TRY(rd_i32(cx, &n->rows, "inner_size"));
    TRY(rd_i32(cx, &n->cols, "outer_size"));
    TRY(chk_positive(cx, n->rows, V4_MAX_DIM, "inner_size"));
    TRY(chk_positive(cx, n->cols, V4_MAX_DIM, "outer_size"));
    c = (uint64_t)n->rows * (uint64_t)n->cols;
    if (c > V4_MAX_ELEMS)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "inner_size x outer_size exceeds 2^30 elements");
    TRY(rd_f32(cx, &n->beta, "beta"));
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, c * 4u));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, c * 4u));
        cx->pos = after;
    }
    set_t_like(cx, n, &n->in, DT_F32, (uint32_t)c);
    return OKPU_OK;
}

static int r_softmax(v4_cx *cx, const v4_node *n)
{
    v4k_softmax(mem_in(cx, &n->in), mem_out(cx, &n->out), n->rows, n->cols, n->beta);
    return OKPU_OK;
}

static int p_transpose(v4_cx *cx, v4_node *n)
{
    uint64_t cin;
    uint32_t at = cx->pos, dt;
    int i, seen = 0;
    TRY(need(cx, 32, "input and output memory ranges"));
    dt = okpu_rd_u32(cx->body + at + 4);
    cx->pos += 32;
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    TRY(rd_shape(cx, n->perm, "perm"));
    for (i = 0; i < 4; i++) {
        if (n->perm[i] < 0 || n->perm[i] > 3 || (seen & (1 << n->perm[i])))
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "perm [%ld, %ld, %ld, %ld] is not a permutation of 0..3",
                         (long)n->perm[0], (long)n->perm[1], (long)n->perm[2], (long)n->perm[3]);
        seen |= 1 << n->perm[i];
        n->so[i] = n->sa[n->perm[i]];
    }
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, -1, cin * esize(dt)));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, (int)dt, cin * esize(dt)));
        cx->pos = after;
    }
    set_t(n, dt, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

static int r_transpose(v4_cx *cx, const v4_node *n)
{
    v4k_transpose(mem_in(cx, &n->in), mem_out(cx, &n->out), n->sa, n->perm, esize(n->in.dtype));
    return OKPU_OK;
}

static int p_strided_slice(v4_cx *cx, v4_node *n)
{
    uint64_t cin, co = 1;
    uint32_t at = cx->pos, dt;
    int i;
    int32_t masks;
    TRY(need(cx, 32, "input and output memory ranges"));
    dt = okpu_rd_u32(cx->body + at + 4);
    cx->pos += 32;
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    TRY(rd_shape(cx, n->begin, "begin"));
    TRY(rd_shape(cx, n->end, "end"));
    TRY(rd_shape(cx, n->strides, "strides"));
    for (i = 0; i < 5; i++)
        TRY(rd_i32(cx, &masks, "begin/end/ellipsis/new_axis/shrink_axis mask"));
    for (i = 0; i < 4; i++) {
        int64_t b = n->begin[i], e = n->end[i], s = n->strides[i], cnt, last;
        if (s == 0)
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "strides[%d] is 0", i);
        cnt = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (e < b ? (b - e + (-s) - 1) / (-s) : 0);
        if (cnt < 1)
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "begin %lld, end %lld, stride %lld of dimension %d select nothing",
                         (long long)b, (long long)e, (long long)s, i);
        last = b + (cnt - 1) * s;
        if (b < 0 || b >= n->sa[i] || last < 0 || last >= n->sa[i])
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                         "begin %lld, end %lld, stride %lld of dimension %d read indices %lld..%lld outside 0..%ld",
                         (long long)b, (long long)e, (long long)s, i, (long long)b, (long long)last,
                         (long)n->sa[i] - 1);
        n->so[i] = (int32_t)cnt;
        co *= (uint64_t)cnt;
    }
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, -1, cin * esize(dt)));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, (int)dt, co * esize(dt)));
        cx->pos = after;
    }
    set_t(n, dt, n->so[0], n->so[1], n->so[2], n->so[3]);
    return OKPU_OK;
}

static int r_strided_slice(v4_cx *cx, const v4_node *n)
{
    v4k_strided_slice(mem_in(cx, &n->in), mem_out(cx, &n->out), n->sa, n->begin, n->end, n->strides,
                      esize(n->in.dtype));
    return OKPU_OK;
}

static int p_unary(v4_cx *cx, v4_node *n)
{
    TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, UINT64_MAX));
    TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, n->in.size));
    TRY(rd_i32(cx, &n->op, "unary_op"));
    if (n->op < 0 || n->op >= V4_UN_COUNT)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                     "unary_op %ld, expected 0..9 (abs, ceil, cos, exp, floor, log, neg, rsqrt, sin, square)",
                     (long)n->op);
    set_t_like(cx, n, &n->in, DT_F32, n->in.size / 4u);
    return OKPU_OK;
}

static int r_unary(v4_cx *cx, const v4_node *n)
{
    v4k_unary(mem_in(cx, &n->in), mem_out(cx, &n->out), n->in.size / 4u, n->op);
    return OKPU_OK;
}

static int p_nnil(v4_cx *cx, v4_node *n)
{
    size_t len = 0, bad = 0;
    const char *why = "";
    TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_F32, UINT64_MAX));
    TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_F32, n->in.size));
    /* the program is the rest of the body (nncase read_avail); zero padding decodes as nop */
    n->prog = cx->body + cx->pos;
    if (nnil_check(n->prog, cx->avail - cx->pos, &len, &bad, &why) != 0) {
        uint32_t start = cx->pos; /* after the two ranges: 32; rd_mr guarantees avail >= start */
        cx->pos += (uint32_t)bad;
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "nnil program (%lu bytes from body offset %lu) at its byte %lu: %s",
                     (unsigned long)(cx->avail - start), (unsigned long)start, (unsigned long)bad, why);
    }
    n->prog_len = len;
    set_t_like(cx, n, &n->in, DT_F32, n->in.size / 4u);
    return OKPU_OK;
}

static int r_nnil(v4_cx *cx, const v4_node *n)
{
    nnil_unary(n->prog, n->prog_len, mem_in(cx, &n->in), mem_out(cx, &n->out), n->in.size / 4u);
    return OKPU_OK;
}

static int p_table_lookup1d(v4_cx *cx, v4_node *n)
{
    TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_U8, UINT64_MAX));
    TRY(rd_mr(cx, &n->in2, "table", IN_TYPES, DT_U8, 256u));
    TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, DT_U8, n->in.size));
    set_t_like(cx, n, &n->in, DT_U8, n->in.size);
    return OKPU_OK;
}

static int r_table_lookup1d(v4_cx *cx, const v4_node *n)
{
    v4k_table_lookup1d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->in.size, mem_in(cx, &n->in2));
    return OKPU_OK;
}

/* ================= CPU (NHWC) ops ================= */

static int p_cpu_conv(v4_cx *cx, v4_node *n, int depthwise, int quant)
{
    uint64_t cin, co, wcount;
    uint32_t at = cx->pos;
    int32_t oh, ow;
    int i;
    TRY(need(cx, 32, "input and output memory ranges"));
    cx->pos += 32;
    TRY(rd_shape(cx, n->sa, "in_shape (NHWC)"));
    TRY(chk_shape(cx, n->sa, "in_shape (NHWC)", &cin));
    if (!depthwise) {
        TRY(rd_i32(cx, &n->oc, "out_channels"));
        TRY(chk_positive(cx, n->oc, V4_MAX_DIM, "out_channels"));
    } else {
        n->oc = n->sa[3];
    }
    TRY(rd_window(cx, n, 0));
    TRY(window_out(cx, n, n->sa[1], n->sa[2], &oh, &ow));
    n->so[0] = n->sa[0];
    n->so[1] = oh;
    n->so[2] = ow;
    n->so[3] = n->oc;
    TRY(chk_shape(cx, n->so, "output shape (NHWC)", &co));
    if (quant) {
        static const char *const names[5] = {"input_offset", "filter_offset", "output_mul", "output_shift",
                                             "output_offset"};
        for (i = 0; i < 5; i++)
            TRY(rd_i32(cx, &n->q[i], names[i]));
        TRY(chk_shift(cx, n->q[3], "output_shift"));
    } else {
        TRY(rd_act(cx, n));
    }
    TRY(span_size(cx, "weights (filter_h x filter_w x in_channels x out_channels)", quant ? 1u : 4u,
                  (uint64_t)n->win.filter_h, (uint64_t)n->win.filter_w, (uint64_t)n->sa[3],
                  depthwise ? 1u : (uint64_t)n->oc, &wcount));
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, quant ? DT_U8 : DT_F32, cin * (quant ? 1u : 4u)));
        TRY(rd_mr(cx, &n->out, "output", OUT_TYPES, quant ? DT_U8 : DT_F32, co * (quant ? 1u : 4u)));
        cx->pos = after;
    }
    /* float bodies: weights then bias; quantized bodies too (cpu_ops_body.h: weights, then bias) */
    TRY(rd_span(cx, &n->w, wcount, "weights"));
    TRY(rd_span(cx, &n->bias, (uint64_t)n->oc * 4u, "bias"));
    set_t(n, quant ? DT_U8 : DT_F32, n->so[0], n->so[3], n->so[1], n->so[2]);
    return OKPU_OK;
}

static int p_cpu_conv2d(v4_cx *cx, v4_node *n) { return p_cpu_conv(cx, n, 0, 0); }
static int p_cpu_dwconv2d(v4_cx *cx, v4_node *n) { return p_cpu_conv(cx, n, 1, 0); }
static int p_cpu_qconv2d(v4_cx *cx, v4_node *n) { return p_cpu_conv(cx, n, 0, 1); }
static int p_cpu_qdwconv2d(v4_cx *cx, v4_node *n) { return p_cpu_conv(cx, n, 1, 1); }

static int r_cpu_conv2d(v4_cx *cx, const v4_node *n)
{
    v4k_cpu_conv2d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->w, n->bias, n->sa, n->oc, &n->win, n->lo, n->hi);
    return OKPU_OK;
}

static int r_cpu_dwconv2d(v4_cx *cx, const v4_node *n)
{
    v4k_cpu_depthwise_conv2d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->w, n->bias, n->sa, &n->win, n->lo, n->hi);
    return OKPU_OK;
}

static int r_cpu_qconv2d(v4_cx *cx, const v4_node *n)
{
    v4_qconv_params p;
    qconv_params(n, &p);
    v4k_cpu_quantized_conv2d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->w, n->bias, n->sa, n->oc, &n->win, &p,
                             cx->m->opts.v4_quant_round);
    return OKPU_OK;
}

static int r_cpu_qdwconv2d(v4_cx *cx, const v4_node *n)
{
    v4_qconv_params p;
    qconv_params(n, &p);
    v4k_cpu_quantized_depthwise_conv2d(mem_in(cx, &n->in), mem_out(cx, &n->out), n->w, n->bias, n->sa, &n->win, &p,
                                       cx->m->opts.v4_quant_round);
    return OKPU_OK;
}

/* ================= K210 ops ================= */

static int p_kpu_upload(v4_cx *cx, v4_node *n)
{
    uint64_t cin, rows;
    uint32_t at = cx->pos;
    TRY(need(cx, 32, "input and output memory ranges"));
    cx->pos += 32;
    TRY(rd_shape(cx, n->sa, "in_shape"));
    TRY(chk_shape(cx, n->sa, "in_shape", &cin));
    if (n->sa[1] > 1024 || n->sa[2] > 256 || n->sa[3] > 512)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                     "in_shape [%ld, %ld, %ld, %ld] exceeds the KPU's limits (C <= 1024, H <= 256, W <= 512)",
                     (long)n->sa[0], (long)n->sa[1], (long)n->sa[2], (long)n->sa[3]);
    rows = (uint64_t)n->sa[0] * kpu_layout_rows((uint32_t)n->sa[3], (uint32_t)n->sa[2], (uint32_t)n->sa[1]);
    {
        uint32_t after = cx->pos;
        cx->pos = at;
        TRY(rd_mr(cx, &n->in, "input", IN_TYPES, DT_U8, cin));
        TRY(rd_mr(cx, &n->out, "output", 1u << MT_KPU, DT_U8, UINT64_MAX));
        if (n->out.start % 64u) {
            cx->pos -= 16;
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "KPU output start %lu is not a multiple of 64 (a KPU row)",
                         (unsigned long)n->out.start);
        }
        if (n->out.start / 64u + rows > OKPU_KPU_RAM_ROWS) {
            cx->pos -= 16;
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                         "%ld batch(es) of [%ld, %ld, %ld] need %llu KPU rows from row %lu, past the 32768 rows of "
                         "KPU RAM",
                         (long)n->sa[0], (long)n->sa[1], (long)n->sa[2], (long)n->sa[3], (unsigned long long)rows,
                         (unsigned long)(n->out.start / 64u));
        }
        cx->pos = after;
    }
    n->out_rows = (uint32_t)rows;
    set_t(n, DT_U8, n->sa[0], n->sa[1], n->sa[2], n->sa[3]);
    n->out_mem = OKPU_MEM_KPU;
    n->out_off = n->out.start / 64u;
    return OKPU_OK;
}

static int r_kpu_upload(v4_cx *cx, const v4_node *n)
{
    int32_t b;
    const uint8_t *src = mem_in(cx, &n->in);
    uint32_t per = n->out_rows / (uint32_t)n->sa[0];
    size_t map = (size_t)n->sa[1] * (size_t)n->sa[2] * (size_t)n->sa[3];
    for (b = 0; b < n->sa[0]; b++)
        kpu_layout_upload(cx->m->kpu->ram, n->out.start / 64u + (uint32_t)b * per, src + (size_t)b * map,
                          (uint32_t)n->sa[3], (uint32_t)n->sa[2], (uint32_t)n->sa[1]);
    return OKPU_OK;
}

static int p_kpu_conv2d(v4_cx *cx, v4_node *n)
{
    int32_t reserved;
    uint32_t at_args;
    uint64_t map_out;
    kpu_args *a = &n->args;
    TRY(need(cx, 16, "main_mem_output"));
    mr_decode(cx->body + cx->pos, &n->out);
    if (n->out.size == 0) /* no main-memory output: nncase writes an empty (const, 0-byte) range */
        cx->pos += 16;
    else
        TRY(rd_mr(cx, &n->out, "main_mem_output", OUT_TYPES, DT_U8, UINT64_MAX));
    TRY(rd_i32(cx, &n->batches, "batches"));
    TRY(chk_positive(cx, n->batches, V4_MAX_BATCHES, "batches"));
    TRY(rd_i32(cx, &reserved, "reserved0"));
    at_args = cx->pos;
    TRY(rd_span(cx, &n->args_raw, KPU_ARGS_BYTES, "the 96-byte kpu_layer_argument_t"));
    kpu_args_decode(n->args_raw, a);
    TRY(kpu_args_check(a, cx->idx, (long)(cx->body_off + at_args), cx->err));
    n->in_rows = kpu_layout_rows(a->in_width, a->in_height, a->in_channels);
    n->out_rows = kpu_layout_rows(a->out_width, a->out_height, a->out_channels);
    if ((uint64_t)a->image_src_addr + (uint64_t)n->in_rows * n->batches > OKPU_KPU_RAM_ROWS ||
        (uint64_t)a->image_dst_addr + (uint64_t)n->out_rows * n->batches > OKPU_KPU_RAM_ROWS) {
        cx->pos = at_args + 8;
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                     "%ld batches: input rows %lu + %ld x %lu or output rows %lu + %ld x %lu run past the 32768 rows "
                     "of KPU RAM",
                     (long)n->batches, (unsigned long)a->image_src_addr, (long)n->batches, (unsigned long)n->in_rows,
                     (unsigned long)a->image_dst_addr, (long)n->batches, (unsigned long)n->out_rows);
    }
    map_out = (uint64_t)a->out_channels * a->out_height * a->out_width;
    if (n->out.size != 0 && n->out.size != map_out * (uint64_t)n->batches) {
        cx->pos = 0;
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                     "main_mem_output is %lu bytes; the layer writes %ld x %lux%lux%lu = %llu bytes",
                     (unsigned long)n->out.size, (long)n->batches, (unsigned long)a->out_channels,
                     (unsigned long)a->out_height, (unsigned long)a->out_width,
                     (unsigned long long)(map_out * (uint64_t)n->batches));
    }
    /* three (padding, table) pairs: the stored counts are padding bytes to skip (alignment differs by version) */
    if (a->bwsx_base_addr > cx->avail)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "bwsx_base_addr padding count %lu is larger than the body",
                     (unsigned long)a->bwsx_base_addr);
    TRY(need(cx, a->bwsx_base_addr, "padding before the batch-norm table (bwsx_base_addr bytes)"));
    cx->pos += a->bwsx_base_addr;
    TRY(rd_span(cx, &n->bn, (uint64_t)kpu_bn_bytes(a), "the batch-norm table (8 bytes x out channels)"));
    if (a->active_addr > cx->avail)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "active_addr padding count %lu is larger than the body",
                     (unsigned long)a->active_addr);
    TRY(need(cx, a->active_addr, "padding before the activation table (active_addr bytes)"));
    cx->pos += a->active_addr;
    TRY(rd_span(cx, &n->act, KPU_ACT_TABLE_BYTES, "the 144-byte activation table"));
    if (a->para_start_addr > cx->avail)
        return nfail(cx, OKPU_ERR_KMODEL_FORMAT, "para_start_addr padding count %lu is larger than the body",
                     (unsigned long)a->para_start_addr);
    TRY(need(cx, a->para_start_addr, "padding before the weights (para_start_addr bytes)"));
    cx->pos += a->para_start_addr;
    TRY(rd_span(cx, &n->kw, (uint64_t)kpu_weights_bytes(a, 1), "the u8 weights"));
    n->t.dtype = OKPU_DTYPE_U8;
    n->t.n = (uint32_t)n->batches;
    n->t.c = a->out_channels;
    n->t.h = a->out_height;
    n->t.w = a->out_width;
    n->t.bytes = (uint32_t)(map_out * (uint64_t)n->batches);
    if (n->out.size) {
        n->out_mem = OKPU_MEM_MAIN;
        n->out_off = n->out.start;
    } else {
        n->out_mem = OKPU_MEM_KPU;
        n->out_off = a->image_dst_addr;
    }
    return OKPU_OK;
}

static int r_kpu_conv2d(v4_cx *cx, const v4_node *n)
{
    int32_t b;
    uint8_t raw[KPU_ARGS_BYTES];
    size_t map_out = (size_t)n->args.out_channels * n->args.out_height * n->args.out_width;
    memcpy(raw, n->args_raw, KPU_ARGS_BYTES);
    for (b = 0; b < n->batches; b++) {
        kpu_layer_job job;
        uint32_t src = n->args.image_src_addr + (uint32_t)b * n->in_rows;
        uint32_t dst = n->args.image_dst_addr + (uint32_t)b * n->out_rows;
        int rc;
        /* word 1: [14:0] image_src_addr, [46:32] image_dst_addr (nncase advances both per batch) */
        raw[8] = (uint8_t)src;
        raw[9] = (uint8_t)((raw[9] & 0x80u) | ((src >> 8) & 0x7Fu));
        raw[12] = (uint8_t)dst;
        raw[13] = (uint8_t)((raw[13] & 0x80u) | ((dst >> 8) & 0x7Fu));
        memset(&job, 0, sizeof job);
        job.raw_args = raw;
        job.args = n->args;
        job.args.image_src_addr = src;
        job.args.image_dst_addr = dst;
        job.weights = n->kw;
        job.bn = n->bn;
        job.act = n->act;
        job.eight_bit = 1;
        job.main_out = n->out.size ? cx->m->main_mem + n->out.start + (size_t)b * map_out : NULL;
        job.layer = cx->idx;
        rc = cx->m->kpu->run_layer(cx->m->kpu, &job, cx->err);
        if (rc != OKPU_OK)
            return rc;
    }
    return OKPU_OK;
}

/* ================= the op table ================= */

/* 0x00-0x0E exist since nncase v0.2.0-alpha/beta1; 0x0F-0x14 came with v0.2.0-beta3/beta4 (the runtime bundled in
 * the K210 SDK and older MaixPy firmware lack them, docs/kpu-reference.md section 8 item 7). */
static const v4_op v4_ops[] = {
    {0x00, "binary", p_binary, r_binary},
    {0x01, "concat", p_concat, r_concat},
    {0x02, "conv2d", p_conv2d, r_conv2d},
    {0x03, "dequantize", p_dequantize, r_dequantize},
    {0x04, "matmul", p_fmatmul, r_fmatmul},
    {0x05, "pad", p_pad, r_pad},
    {0x06, "quantize", p_quantize, r_quantize},
    {0x07, "reduce", p_reduce, r_reduce},
    {0x08, "reduce_window2d", p_reduce_window2d, r_reduce_window2d},
    {0x09, "memory_copy", p_memory_copy, r_memory_copy},
    {0x0A, "resize_image", p_resize, r_resize},
    {0x0B, "softmax", p_softmax, r_softmax},
    {0x0C, "transpose", p_transpose, r_transpose},
    {0x0D, "strided_slice", p_strided_slice, r_strided_slice},
    {0x0E, "unary", p_unary, r_unary},
    {0x0F, "quantized_conv2d", p_qconv2d, r_qconv2d},
    {0x10, "quantized_matmul", p_qmatmul, r_qmatmul},
    {0x11, "quantized_binary", p_qbinary, r_qbinary},
    {0x12, "table_lookup1d", p_table_lookup1d, r_table_lookup1d},
    {0x13, "conv2d_transpose", p_conv2d_transpose, r_conv2d_transpose},
    {0x14, "nnil_unary_method", p_nnil, r_nnil},
    {0x1001, "cpu_conv2d", p_cpu_conv2d, r_cpu_conv2d},
    {0x1002, "cpu_depthwise_conv2d", p_cpu_dwconv2d, r_cpu_dwconv2d},
    {0x1003, "cpu_reduce_window2d", p_cpu_reduce_window2d, r_cpu_reduce_window2d},
    {0x1004, "cpu_quantized_conv2d", p_cpu_qconv2d, r_cpu_qconv2d},
    {0x1005, "cpu_quantized_depthwise_conv2d", p_cpu_qdwconv2d, r_cpu_qdwconv2d},
    {0x2001, "kpu_upload", p_kpu_upload, r_kpu_upload},
    {0x2002, "kpu_conv2d", p_kpu_conv2d, r_kpu_conv2d},
};

static const v4_op *find_op(uint32_t opcode)
{
    size_t i;
    for (i = 0; i < sizeof v4_ops / sizeof v4_ops[0]; i++)
        if (v4_ops[i].opcode == opcode)
            return &v4_ops[i];
    return NULL;
}

const char *kmodel_v4_opcode_name(uint32_t opcode)
{
    const v4_op *op = find_op(opcode);
    return op ? op->name : NULL;
}

/* ================= model ================= */

static void cx_init(v4_cx *cx, okpu_model *m, okpu_error *err, int idx)
{
    uint32_t inputs = okpu_rd_u32(m->data + 28), outputs = okpu_rd_u32(m->data + 32);
    okpu_layer *L = &m->layers[idx];
    memset(cx, 0, sizeof *cx);
    cx->m = m;
    cx->err = err;
    cx->idx = idx;
    cx->op = (const v4_op *)L->op;
    cx->body = m->data + L->body_offset;
    cx->body_size = L->body_size;
    cx->avail = (size_t)L->body_size <= m->size - L->body_offset ? L->body_size : (uint32_t)(m->size - L->body_offset);
    cx->body_off = L->body_offset;
    cx->const_off = KMODEL_V4_HEADER_BYTES + 32u * inputs + 16u * outputs;
    cx->const_size = okpu_rd_u32(m->data + 16);
}

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
            rows = kpu_layout_rows((uint32_t)s[3], (uint32_t)s[2], (uint32_t)s[1]);
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

static uint64_t prod4u(const int32_t s[4])
{
    return okpu_sat_mul(okpu_sat_mul((uint64_t)s[0], (uint64_t)s[1]), okpu_sat_mul((uint64_t)s[2], (uint64_t)s[3]));
}

/* What running the node costs, for the model's work budget: multiply-accumulates for convolutions and matmuls,
 * window taps for windowed reductions, instructions for nnil, elements touched for the rest. Saturating: a corrupt
 * node shows a huge number, never a wrapped small one. */
static uint64_t node_work(uint32_t opcode, const v4_node *n)
{
    uint64_t out = okpu_sat_mul(okpu_sat_mul(n->t.n, n->t.c), okpu_sat_mul(n->t.h, n->t.w));
    uint64_t win = okpu_sat_mul((uint64_t)n->win.filter_h, (uint64_t)n->win.filter_w);
    switch (opcode) {
    case 0x01: /* concat: bytes moved, and one step per outer index and input even when they are empty */
        return okpu_sat_add(n->out.size, okpu_sat_mul(n->outer, n->count));
    case 0x02:
    case 0x0F: /* conv2d: out x ic/groups x window */
        return okpu_sat_mul(okpu_sat_mul(out, (uint64_t)(n->sa[1] / n->groups)), win);
    case 0x13: /* conv2d_transpose: in x oc/groups x window, plus the zeroing and activation passes */
        return okpu_sat_add(okpu_sat_mul(okpu_sat_mul(prod4u(n->sa), (uint64_t)(n->so[1] / n->groups)), win),
                            okpu_sat_mul(out, 2));
    case 0x04:
    case 0x10: /* matmul */
        return okpu_sat_mul(okpu_sat_mul((uint64_t)n->rows, (uint64_t)n->cols), (uint64_t)n->bcols);
    case 0x07: /* reduce: every input once */
        return okpu_sat_add(prod4u(n->sa), out);
    case 0x08:
    case 0x1003: /* reduce_window2d: every output visits its window */
        return okpu_sat_mul(out, win);
    case 0x0B: /* softmax: max, sum, write */
        return okpu_sat_mul(out, 3);
    case 0x14: /* nnil: the program runs once per element */
        return okpu_sat_mul(n->in.size / 4u, n->prog_len ? n->prog_len : 1u);
    case 0x1001:
    case 0x1004:
        return okpu_sat_mul(okpu_sat_mul(out, win), (uint64_t)n->sa[3]);
    case 0x1002:
    case 0x1005:
        return okpu_sat_mul(out, win);
    case 0x2001:
        return prod4u(n->sa);
    case 0x2002:
        return okpu_sat_mul(kpu_args_macs(&n->args), (uint64_t)n->batches);
    default: /* elementwise, pad, resize, transpose, slice, copies: one pass over the output */
        return out;
    }
}

/* Ops whose kernels read element i before writing element i and nothing else (or use memmove) may run in place;
 * every other kernel reads inputs after it started writing the output. */
static int runs_in_place(uint32_t opcode)
{
    switch (opcode) {
    case 0x00: /* binary */
    case 0x03: /* dequantize */
    case 0x06: /* quantize */
    case 0x09: /* memory_copy (memmove) */
    case 0x0E: /* unary */
    case 0x11: /* quantized_binary */
    case 0x12: /* table_lookup1d */
    case 0x14: /* nnil_unary_method */
        return 1;
    default:
        return 0;
    }
}

static int check_overlap(v4_cx *cx, const v4_node *n)
{
    const v4_mr *ins[2];
    const char *names[2] = {"input", "second input"};
    int k;
    ins[0] = &n->in;
    ins[1] = &n->in2;
    if (runs_in_place(cx->op->opcode) || n->out.type != MT_MAIN)
        return OKPU_OK;
    for (k = 0; k < 2; k++)
        if (ins[k]->type == MT_MAIN && okpu_ranges_overlap(ins[k]->start, ins[k]->size, n->out.start, n->out.size)) {
            cx->pos = 0;
            return nfail(cx, OKPU_ERR_KMODEL_FORMAT,
                         "the %s [%lu, %llu) overlaps the output [%lu, %llu) in main memory; %s cannot work in place",
                         names[k], (unsigned long)ins[k]->start, (unsigned long long)ins[k]->start + ins[k]->size,
                         (unsigned long)n->out.start, (unsigned long long)n->out.start + n->out.size, cx->op->name);
        }
    return OKPU_OK;
}

static void fill_info(okpu_model *m, int idx, const v4_node *n)
{
    okpu_layer *L = &m->layers[idx];
    okpu_layer_info *I = &L->info;
    const v4_op *op = (const v4_op *)L->op;
    memset(I, 0, sizeof *I);
    I->index = idx;
    I->type = op->opcode;
    I->type_name = op->name;
    I->body_offset = L->body_offset;
    I->body_size = L->body_size;
    I->para_size = L->body_size;
    if (op->opcode == 0x2002) {
        const kpu_args *a = &n->args;
        I->is_kpu = 1;
        I->wi = a->in_width;
        I->hi = a->in_height;
        I->chi = a->in_channels;
        I->wo = a->out_width;
        I->ho = a->out_height;
        I->cho = a->out_channels;
        I->depthwise = (int)a->depthwise;
        I->kernel_type = (int)a->kernel_type;
        I->pool_type = (int)a->pool_type;
        I->para_size = a->para_size;
        I->macs = kpu_args_macs(a) * (uint64_t)n->batches;
    }
    I->work = n->work;
    L->out.t = n->t;
    L->out.t.layer = idx;
    L->out.mem = (okpu_mem_kind)n->out_mem;
    L->out.offset = n->out_off;
    I->output = L->out.t;
}

static int v4_parse(okpu_model *m, okpu_error *err)
{
    const uint8_t *d = m->data;
    uint32_t flags, target, consts, main_mem, nodes, ninputs, noutputs, i;
    uint64_t table_end, off;
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
    table_end = (uint64_t)KMODEL_V4_HEADER_BYTES + 32u * (uint64_t)ninputs + 16u * (uint64_t)noutputs + consts +
                8u * (uint64_t)nodes;
    if (table_end > m->size)
        return hfail(err, OKPU_ERR_KMODEL_FORMAT, 16,
                     "the header declares %lu inputs, %lu outputs, %lu bytes of constants and %lu nodes, whose tables "
                     "end at byte %llu, past the end of the %lu-byte file; the file is truncated - copy it again",
                     (unsigned long)ninputs, (unsigned long)noutputs, (unsigned long)consts, (unsigned long)nodes,
                     (unsigned long long)table_end, (unsigned long)m->size);
    m->version = 4;
    m->flags = flags;
    m->main_mem_size = main_mem;
    m->input_count = (int)ninputs;
    m->output_count = (int)noutputs;
    TRY(parse_io(m, err, ninputs, noutputs));
    TRY(okpu_model_alloc_layers(m, (int)nodes, err));

    off = table_end;
    for (i = 0; i < nodes; i++) {
        uint64_t hdr = table_end - 8u * (uint64_t)nodes + 8u * i;
        uint32_t opcode = okpu_rd_u32(d + hdr), bsz = okpu_rd_u32(d + hdr + 4);
        okpu_layer *L = &m->layers[i];
        const v4_op *op = find_op(opcode);
        v4_node n;
        v4_cx cx;
        if (!op)
            return okpu_fail(err, OKPU_ERR_NOT_IMPLEMENT, (int)i, (long)hdr,
                             "kmodel v4 node %lu (node table at byte %lu) has opcode 0x%lX, which no nncase v0.2 "
                             "release defines: this runtime knows nncase v0.2.0-beta4's 0x00-0x14, 0x1001-0x1005 and "
                             "0x2001-0x2002. The file is corrupt or from an unofficial nncase build; recompile it with "
                             "nncase v0.2.0-beta4",
                             (unsigned long)i, (unsigned long)hdr, (unsigned long)opcode);
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
        L->op = op;
        L->state = NULL;
        L->info.type_name = op->name;
        cx_init(&cx, m, err, (int)i);
        memset(&n, 0, sizeof n);
        TRY(op->parse(&cx, &n));
        TRY(check_overlap(&cx, &n));
        n.work = node_work(opcode, &n);
        fill_info(m, (int)i, &n);
        if (opcode == 0x2002) {
            okpu_model_touch_kpu_rows(m, n.args.image_src_addr, n.in_rows * (uint32_t)n.batches);
            okpu_model_touch_kpu_rows(m, n.args.image_dst_addr, n.out_rows * (uint32_t)n.batches);
        } else if (opcode == 0x2001) {
            okpu_model_touch_kpu_rows(m, n.out.start / 64u, n.out_rows);
        }
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

static int v4_run_layer(okpu_model *m, int index, okpu_error *err)
{
    v4_cx cx;
    v4_node n;
    cx_init(&cx, m, err, index);
    cx.running = 1;
    memset(&n, 0, sizeof n);
    TRY(cx.op->parse(&cx, &n)); /* validated at load: cannot fail; re-decoding keeps no per-node state */
    return cx.op->run(&cx, &n);
}

static void v4_free_layer(okpu_model *m, okpu_layer *layer)
{
    (void)m;
    layer->state = NULL;
}

const okpu_format okpu_format_v4 = {"kmodel v4 (nncase v0.2)", 4, v4_parse, okpu_legacy_decode, v4_run_layer, v4_free_layer};

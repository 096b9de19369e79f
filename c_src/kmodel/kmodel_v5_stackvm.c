// SPDX-License-Identifier: Apache-2.0
/* kmodel v5: the stackvm module (kmodel-v5.md sections 5-9).
 *
 * Every stackvm function nncase 1.x writes is straight-line code of six instructions (LEA_BUFFER, LDC_I4, LDC_R4,
 * STSHAPE, STPADDINGS, TENSOR): every operand a tensor function pops is a constant or a constant address. So the code
 * is run ONCE here, at load, on a symbolic stack (addresses are (pool, offset) pairs), and each TENSOR instruction
 * becomes one plan step with its registers and operands resolved, its memory checked and its work counted; a
 * TENSOR.CALL into the k210 module becomes that k210 function's steps bound to the caller's tensors. Running the plan
 * is then exactly running the code. Any other instruction (branches, loads, arithmetic) is refused by name.
 *
 * The file does not say which nncase release wrote it, and the tensor-function ids and a few layouts changed between
 * releases with the version field staying 5: okpu_v5_stackvm_detect trial-decodes the code with each release group's
 * table (v5_tensor_funcs.def) and keeps the groups under which every instruction is known, the code ends exactly at
 * text_size, and the stack holds exactly what each tensor function pops (section 9.3); the newest such group wins
 * unless okpu_options.v5_release names one (kmodel_v5_release.h). v5_tensor_funcs.def lists every function once: its
 * ids per group, lengths and pops drive the detection, its decoder column the dispatch (t_refuse: refused by name). */
#include <stdio.h>
#include <string.h>

#include "../core/bytes.h"
#include "../core/checked.h"
#include "kmodel_v5.h"
#include "kmodel_v5_release.h"

/* release groups, oldest first (the columns of v5_tensor_funcs.def; 1.3 and 1.4-1.5 share ids, not layouts) */
enum { G_BETA, G_100, G_TCU, G_110, G_120, G_130, G_140, G_160, G_COUNT };
/* the option's values are these groups + 1 (kmodel_v5_release.h) */
typedef char okpu_v5_groups_match_release_enum[(int)G_COUNT == (int)OKPU_V5_RELEASES ? 1 : -1];
static const char *const group_names[G_COUNT] = {"1.0.0-beta1 .. 1.0.0-rc1", "1.0.0",         "1.0.0-tcu_num",
                                                 "1.1.0",                    "1.2.0",         "1.3.0-rc1 .. 1.3.x",
                                                 "1.4.0 .. 1.5.0",           "1.6.0 .. 1.9.0"};

#define NA (-1)
#define ND(x) (0x100 | (x))
enum {
#define V5_TF(id, bytes, pops, pads, old_bytes, old_until, run, g0, g1, g2, g3, g4, g5, g6) TF_##id,
#include "v5_tensor_funcs.def"
#undef V5_TF
    TF_COUNT
};

/* A tensor function's decoder: the instruction at p (its 5E + u16 prefix included, `bytes` long) with its operands on
 * the symbolic stack becomes plan steps. Every one is listed in v5_tensor_funcs.def. */
typedef struct sv sv;
typedef int tf_run(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes);
#define V5_TF(id, bytes, pops, pads, old_bytes, old_until, run, g0, g1, g2, g3, g4, g5, g6) static tf_run run;
#include "v5_tensor_funcs.def"
#undef V5_TF

typedef struct tf_desc {
    const char *name;
    int bytes, pops, pads;
    int old_bytes, old_until; /* the layout before group old_until (section 7.3) */
    tf_run *run;
    int ids[7];
} tf_desc;
static const tf_desc tfs[TF_COUNT] = {
#define V5_TF(id, bytes, pops, pads, old_bytes, old_until, run, g0, g1, g2, g3, g4, g5, g6)                         \
    {#id, bytes, pops, pads, old_bytes, old_until, run, {g0, g1, g2, g3, g4, g5, g6}},
#include "v5_tensor_funcs.def"
#undef V5_TF
};

typedef struct op_desc {
    const char *name;
    int operand_bytes;
} op_desc;
static const op_desc ops[0x5F] = {
#define V5_OP(code, name, bytes) {name, bytes},
#include "v5_stackvm_ops.def"
#undef V5_OP
};

#define OP_LDC_I4 0x02
#define OP_LDC_R4 0x05
#define OP_LEA_BUFFER 0x17
#define OP_STSHAPE 0x31
#define OP_STPADDINGS 0x32
#define OP_TENSOR 0x5E

#define SV_STACK_MAX 256u
#define SV_REG_RANK 8u
#define SV_REGS 256u

static const char redo[] = "the file is corrupt or was written by an unreleased nncase - recompile it with nncase 1.x";

static int id_column(int group)
{
    return group >= G_140 ? group - 1 : group;
}

/* The function a TENSOR id names in `group`, or -1; *decoder = 0 when that release has no decoder for it. */
static int find_tf(int group, uint32_t id, int *decoder)
{
    int t, col = id_column(group);
    for (t = 0; t < TF_COUNT; t++) {
        int v = tfs[t].ids[col];
        if (v != NA && (uint32_t)(v & 0xFF) == id) {
            *decoder = !(v & 0x100) && tfs[t].bytes > 0;
            return t;
        }
    }
    return -1;
}

/* Instruction bytes (with the 5E + u16 prefix) of function t in group: the layouts that changed (section 7.3). */
static int tf_bytes(int t, int group)
{
    return tfs[t].old_bytes && group < tfs[t].old_until ? tfs[t].old_bytes : tfs[t].bytes;
}

static uint32_t padding_values(int group)
{
    return group <= G_100 ? 2u : 3u;
}

/* ---- release detection (section 9.3) ---- */

static int trial(const uint8_t *code, uint32_t size, int group, char *why, size_t why_len, uint32_t *where)
{
    uint32_t pos = 0, depth = 0;
    while (pos < size) {
        const uint32_t op = code[pos];
        uint32_t len, pops = 0;
        *where = pos;
        if (op != OP_LDC_I4 && op != OP_LDC_R4 && op != OP_LEA_BUFFER && op != OP_STSHAPE && op != OP_STPADDINGS &&
            op != OP_TENSOR) {
            snprintf(why, why_len, "instruction %s (opcode 0x%02lX)", op < 0x5F ? ops[op].name : "unknown",
                     (unsigned long)op);
            return 0;
        }
        if (op == OP_TENSOR) {
            int decoder, t;
            if (size - pos < 3u) {
                snprintf(why, why_len, "a TENSOR instruction cut by the end of the code");
                return 0;
            }
            t = find_tf(group, (uint32_t)(code[pos + 1] | (code[pos + 2] << 8)), &decoder);
            if (t < 0 || !decoder) {
                snprintf(why, why_len, "tensor function id 0x%02X (%s)", code[pos + 1] | (code[pos + 2] << 8),
                         t < 0 ? "not defined" : tfs[t].name);
                return 0;
            }
            len = (uint32_t)tf_bytes(t, group);
            if (size - pos < len) {
                snprintf(why, why_len, "%s cut by the end of the code", tfs[t].name);
                return 0;
            }
            if (t == TF_CALL)
                pops = 4u * ((uint32_t)code[pos + 9] + code[pos + 10]);
            else
                pops = (uint32_t)tfs[t].pops + (uint32_t)tfs[t].pads * padding_values(group);
            if (depth != pops) {
                snprintf(why, why_len, "%s with %lu values on the stack (it pops %lu)", tfs[t].name,
                         (unsigned long)depth, (unsigned long)pops);
                return 0;
            }
            depth = 0;
        } else {
            len = 1u + (uint32_t)ops[op].operand_bytes;
            if (size - pos < len) {
                snprintf(why, why_len, "%s cut by the end of the code", ops[op].name);
                return 0;
            }
            if (op == OP_STSHAPE || op == OP_STPADDINGS) {
                pops = code[pos + 2] * (op == OP_STPADDINGS ? padding_values(group) : 1u);
                if (pops > depth) {
                    snprintf(why, why_len, "%s popping %lu values from a stack of %lu", ops[op].name,
                             (unsigned long)pops, (unsigned long)depth);
                    return 0;
                }
                depth -= pops;
            } else if (++depth > SV_STACK_MAX) {
                snprintf(why, why_len, "more than %u values on the stack", SV_STACK_MAX);
                return 0;
            }
        }
        pos += len;
    }
    return 1;
}

/* Trial-decode every function of module mi under group g; 0 and the first failure when one fails. */
static int decodes(const v5_cx *cx, uint32_t mi, int g, char *why, size_t why_len, uint32_t *at, long *fn_index)
{
    const v5_module *mod = &cx->f->mod[mi];
    uint32_t fi, where = 0;
    for (fi = 0; fi < mod->nfuncs; fi++) {
        const v5_func *fn = &mod->funcs[fi];
        if (!trial(cx->m->data + mod->text_off + fn->entry, fn->text_size, g, why, why_len, &where)) {
            *at = where + (uint32_t)mod->text_off + fn->entry;
            *fn_index = (long)fi;
            return 0;
        }
    }
    return 1;
}

int okpu_v5_stackvm_detect(v5_cx *cx, uint32_t mi)
{
    const int chosen = cx->m->opts.v5_release;
    char why[160], others[200];
    uint32_t where = 0;
    long fn_index = 0;
    size_t n = 0;
    int g;
    if (chosen < 0 || chosen > G_COUNT)
        return okpu_fail(cx->err, OKPU_ERR_PARAM, -1, -1,
                         "option v5_release = %d: expected 0 (detect the nncase release from the file) or 1 .. %d "
                         "(a release group, kmodel_v5_release.h)",
                         chosen, G_COUNT);
    if (chosen) { /* the user's group, or a refusal that names the groups that would decode it */
        if (decodes(cx, mi, chosen - 1, why, sizeof why, &where, &fn_index)) {
            cx->group = chosen - 1;
            return OKPU_OK;
        }
        others[0] = 0;
        for (g = G_COUNT - 1; g >= 0; g--) {
            char w2[160];
            uint32_t at2;
            long f2;
            if (g != chosen - 1 && n < sizeof others && decodes(cx, mi, g, w2, sizeof w2, &at2, &f2))
                n += (size_t)snprintf(others + n, sizeof others - n, "%s%s", n ? ", " : "", group_names[g]);
        }
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_VERSION, (long)where,
                            "stackvm code does not decode with nncase %s's tensor functions, the release the "
                            "v5_release option (nncase=) selects: function %ld fails at byte %lu: %s. Releases whose "
                            "numbering decodes it: %s; load it without the option to detect the release",
                            group_names[chosen - 1], fn_index, (unsigned long)where, why, n ? others : "none");
    }
    for (g = G_COUNT - 1; g >= 0; g--) { /* the newest group that decodes everything (section 9.4) */
        char w2[160];
        uint32_t at2;
        long f2;
        if (decodes(cx, mi, g, g == G_COUNT - 1 ? why : w2, sizeof why, g == G_COUNT - 1 ? &where : &at2,
                    g == G_COUNT - 1 ? &fn_index : &f2)) {
            cx->group = g;
            return OKPU_OK;
        }
    }
    return okpu_v5_fail(cx, OKPU_ERR_KMODEL_VERSION, (long)where,
                   "stackvm code: no nncase 1.x release's tensor-function table decodes it (checked 1.0.0-beta1 .. "
                   "1.9.0); with 1.6.0 .. 1.9.0's, function %ld fails at byte %lu: %s. The file is corrupt or from an "
                   "unreleased nncase; recompile it with a released nncase 1.x (or nncase v0.2 for kmodel v4)",
                   fn_index, (unsigned long)where, why);
}

/* ---- release names (kmodel_v5_release.h) ---- */

const char okpu_v5_release_names[] = "1.0.0-beta1, 1.0.0-beta2, 1.0.0-rc1, 1.0.0, 1.0.0-tcu_num, 1.1.0, 1.2.0, "
                                     "1.3.0-rc1, 1.3.0, 1.4.0, 1.5.0, 1.6.0, 1.7.0, 1.7.1, 1.7.2, 1.8.0, 1.9.0 (1.X "
                                     "for 1.X.0; a PyPI version such as 1.9.0.20230322)";

int okpu_v5_release_parse(const char *name)
{
    static const struct {
        const char *tag;
        int group;
    } tags[] = {{"1.0.0-beta1", G_BETA}, {"1.0.0-beta2", G_BETA}, {"1.0.0-rc1", G_BETA}, {"1.0.0", G_100},
                {"1.0.0-tcu_num", G_TCU}, {"1.1.0", G_110},       {"1.2.0", G_120},      {"1.3.0-rc1", G_130},
                {"1.3.0", G_130},         {"1.4.0", G_140},       {"1.5.0", G_140},      {"1.6.0", G_160},
                {"1.7.0", G_160},         {"1.7.1", G_160},       {"1.7.2", G_160},      {"1.8.0", G_160},
                {"1.9.0", G_160}};
    size_t k, len;
    if (!name)
        return -1;
    if (strcmp(name, "detect") == 0)
        return OKPU_V5_RELEASE_DETECT;
    if (name[0] == 'v')
        name++;
    len = strlen(name);
    for (k = 0; k < sizeof tags / sizeof tags[0]; k++) {
        const char *t = tags[k].tag;
        const size_t tl = strlen(t);
        if (strcmp(name, t) == 0)
            return tags[k].group + 1;
        /* "1.9" for 1.9.0 */
        if (tl == 5 && len == 3 && strncmp(name, t, 3) == 0)
            return tags[k].group + 1;
        /* PyPI's "1.9.0.20230322": the tag, a dot, digits */
        if (len > tl + 1 && strncmp(name, t, tl) == 0 && name[tl] == '.' &&
            strspn(name + tl + 1, "0123456789") == len - tl - 1)
            return tags[k].group + 1;
    }
    return -1;
}

const char *okpu_v5_release_name(int release)
{
    if (release == OKPU_V5_RELEASE_DETECT)
        return "detect";
    return release >= 1 && release <= G_COUNT ? group_names[release - 1] : "?";
}

/* ---- the symbolic run ---- */

enum { E_INT = 1, E_F32 = 2, E_ADDR = 3 };
typedef struct sv_entry {
    int kind;
    int32_t i;
    float f;
    v5_addr a;
} sv_entry;

typedef struct sv_shape {
    int set;
    uint32_t rank;
    int32_t v[SV_REG_RANK];
} sv_shape;

typedef struct sv_pads {
    int set;
    uint32_t rank;
    int32_t before[SV_REG_RANK], after[SV_REG_RANK], interior[SV_REG_RANK];
} sv_pads;

struct sv {
    v5_cx *cx;
    uint32_t mi;
    long at;          /* file offset of the instruction */
    const char *name; /* the tensor function being decoded */
    uint32_t depth;
    sv_entry stack[SV_STACK_MAX];
    sv_shape shapes[SV_REGS];
    sv_pads pads[SV_REGS];
};

static int sfail(const sv *s, const char *what)
{
    return okpu_v5_fail(s->cx, OKPU_ERR_KMODEL_FORMAT, s->at, "stackvm %s at byte %ld: %s; %s", s->name, s->at, what, redo);
}

static int pop(sv *s, int kind, sv_entry *e, const char *what)
{
    static const char *const kinds[4] = {"?", "an integer", "a float", "an address"};
    memset(e, 0, sizeof *e);
    if (s->depth == 0)
        return okpu_v5_fail(s->cx, OKPU_ERR_KMODEL_FORMAT, s->at, "stackvm %s at byte %ld pops %s from an empty stack; %s",
                       s->name, s->at, what, redo);
    *e = s->stack[--s->depth];
    if (kind && e->kind != kind)
        return okpu_v5_fail(s->cx, OKPU_ERR_KMODEL_FORMAT, s->at,
                       "stackvm %s at byte %ld: %s: expected %s on the stack, found %s; %s", s->name, s->at, what,
                       kinds[kind], kinds[e->kind], redo);
    return OKPU_OK;
}

static int reg_shape(sv *s, uint32_t r, const sv_shape **out, const char *what)
{
    if (!s->shapes[r].set)
        return okpu_v5_fail(s->cx, OKPU_ERR_KMODEL_FORMAT, s->at,
                       "stackvm %s at byte %ld: %s names shape register %lu, which no STSHAPE wrote before it; %s",
                       s->name, s->at, what, (unsigned long)r, redo);
    *out = &s->shapes[r];
    return OKPU_OK;
}

/* A tensor operand: `addr` with `rank` dims and element strides, esize bytes each; checks it lies inside its pool
 * (and is writable when `writes`). */
static int view(sv *s, const v5_addr *addr, uint32_t esize, uint32_t rank, const uint32_t *shape,
                const int64_t *stride, int writes, const char *what)
{
    uint64_t size = okpu_v5_pool_size(s->cx, addr);
    int64_t lo = 0, hi = 0;
    uint32_t r;
    char msg[200];
    if (writes && addr->pool == V5_POOL_RDATA) {
        snprintf(msg, sizeof msg, "its %s is in the read-only .rdata", what);
        return sfail(s, msg);
    }
    for (r = 0; r < rank; r++) {
        int64_t span;
        if (shape[r] == 0)
            return OKPU_OK; /* touches nothing */
        if (stride[r] > 0x7FFFFFFF || stride[r] < -0x7FFFFFFF || shape[r] > 0x7FFFFFFFu)
            goto outside;
        span = (int64_t)(shape[r] - 1u) * stride[r]; /* < 2^62 */
        if (span < 0)
            lo += span;
        else
            hi += span;
        if (hi > (int64_t)OKPU_SIZE_LIMIT || lo < -(int64_t)OKPU_SIZE_LIMIT)
            goto outside;
    }
    if ((int64_t)addr->off + lo * (int64_t)esize >= 0 &&
        (uint64_t)((int64_t)addr->off + (hi + 1) * (int64_t)esize) <= size)
        return OKPU_OK;
outside:
    snprintf(msg, sizeof msg, "its %s (%lu dims, %lu-byte elements) at offset %llu runs outside the %llu bytes of its "
             "pool", what, (unsigned long)rank, (unsigned long)esize, (unsigned long long)addr->off,
             (unsigned long long)size);
    return sfail(s, msg);
}

static uint64_t count_elems(uint32_t rank, const uint32_t *shape)
{
    uint64_t n = 1;
    uint32_t r;
    for (r = 0; r < rank; r++)
        n = okpu_sat_mul(n, shape[r]);
    return n;
}

/* Describe the step just taken: its output (for partial runs and netinfo) and its work. */
static void describe(sv *s, const v5_addr *out, uint32_t dt, uint32_t rank, const uint32_t *shape, uint64_t work)
{
    v5_cx *cx = s->cx;
    okpu_layer *L;
    uint32_t dims[4] = {1, 1, 1, 1}, r;
    uint64_t elems = count_elems(rank, shape);
    uint64_t bytes = elems * okpu_v5_dtype_size(dt) > OKPU_SIZE_LIMIT ? 0 : elems * okpu_v5_dtype_size(dt);
    if (!cx->emit)
        return;
    L = &cx->m->layers[cx->nsteps - 1];
    for (r = 0; r < rank; r++) {
        if (r < 4)
            dims[r] = shape[r];
        else
            dims[3] *= shape[r];
    }
    L->out.mem = OKPU_MEM_NONE;
    /* a dense output in main memory can be shown after a partial run - if it lies in its pool: the kernels write
     * through the file's strides, which may overlap or stop short of the dense size (found by fuzz_v5) */
    if ((out->pool == V5_POOL_OUT || out->pool == V5_POOL_DATA) && out->off + bytes <= okpu_v5_pool_size(cx, out)) {
        L->out.mem = OKPU_MEM_MAIN;
        L->out.offset = (uint32_t)((out->pool == V5_POOL_OUT ? cx->f->out_base : cx->f->mod[out->module].data_base) +
                                   out->off);
    }
    L->out.t.dtype = dt == OKPU_V5_DT_F32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8;
    L->out.t.n = dims[0], L->out.t.c = dims[1], L->out.t.h = dims[2], L->out.t.w = dims[3];
    L->out.t.bytes = (uint32_t)bytes;
    L->out.t.layer = cx->nsteps - 1;
    L->info.output = L->out.t;
    /* at least one operation per output written, whatever the step's own count (a product over no input channel or
     * K = 0, a reduction over an empty axis), and one for its dispatch */
    if (work < elems)
        work = elems;
    L->info.work = work ? work : 1;
}

static int take_step(sv *s, okpu_step_kind kind, uint32_t id, uint32_t bytes, void **args)
{
    return okpu_v5_next_step(s->cx, kind, id, s->name, s->at, bytes, args);
}

/* Read a shape register as dims (every value >= 0), at most OKPU_V5_MAX_RANK of them. */
static int dims_of(sv *s, uint32_t r, uint32_t *rank, uint32_t *dims, const char *what)
{
    const sv_shape *sh = NULL;
    uint32_t k;
    char msg[160];
    if (reg_shape(s, r, &sh, what) != OKPU_OK)
        return s->cx->err ? s->cx->err->code : OKPU_ERR_KMODEL_FORMAT;
    if (sh->rank > OKPU_V5_MAX_RANK) {
        snprintf(msg, sizeof msg, "%s has %lu dimensions; this runtime handles at most %u", what,
                 (unsigned long)sh->rank, OKPU_V5_MAX_RANK);
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at, "stackvm %s at byte %ld: %s", s->name, s->at, msg);
    }
    for (k = 0; k < sh->rank; k++) {
        if (sh->v[k] < 0) {
            snprintf(msg, sizeof msg, "%s holds the negative dimension %ld", what, (long)sh->v[k]);
            return sfail(s, msg);
        }
        dims[k] = (uint32_t)sh->v[k];
    }
    *rank = sh->rank;
    return OKPU_OK;
}

/* Strides register as signed element strides, with `rank` values expected. */
static int strides_of(sv *s, uint32_t r, uint32_t rank, int64_t *st, const char *what)
{
    const sv_shape *sh = NULL;
    uint32_t k;
    char msg[160];
    if (reg_shape(s, r, &sh, what) != OKPU_OK)
        return s->cx->err ? s->cx->err->code : OKPU_ERR_KMODEL_FORMAT;
    if (sh->rank != rank) {
        snprintf(msg, sizeof msg, "%s has %lu values for a %lu-dimensional tensor", what, (unsigned long)sh->rank,
                 (unsigned long)rank);
        return sfail(s, msg);
    }
    for (k = 0; k < rank; k++)
        st[k] = (int64_t)(uint32_t)sh->v[k]; /* strides are unsigned in the file */
    return OKPU_OK;
}

static uint32_t dt_checked(sv *s, uint32_t dt, int *rc)
{
    uint32_t e = okpu_v5_dtype_size(dt);
    *rc = OKPU_OK;
    if (!e) {
        char msg[80];
        snprintf(msg, sizeof msg, "datatype code %lu is not one of nncase's 0..11", (unsigned long)dt);
        *rc = sfail(s, msg);
    }
    return e;
}

static void fill_nd(okpu_v5_nd *nd, uint32_t rank, const uint32_t *shape, const int64_t *is, const int64_t *os)
{
    uint32_t k;
    nd->rank = rank;
    for (k = 0; k < rank; k++) {
        nd->shape[k] = shape[k];
        nd->in_stride[k] = (int32_t)is[k];
        nd->out_stride[k] = (int32_t)os[k];
    }
}

/* One strided copy step: `rank` dimensions of `shape`, read from src with element strides `is` and written to dst
 * with `os` (both views checked by the caller). COPY, SLICE, TRANSPOSE and BROADCAST all become one. */
static int copy_step(sv *s, uint32_t id, uint32_t bytes, const v5_addr *src, const v5_addr *dst, uint32_t esize,
                     uint32_t dt, uint32_t rank, const uint32_t *shape, const int64_t *is, const int64_t *os)
{
    void *args;

    OKPU_TRY(take_step(s, OKPU_STEP_V5_COPY, id, bytes, &args));
    if (args) {
        okpu_v5_copy_args *a = (okpu_v5_copy_args *)args;
        a->src = okpu_v5_ptr(s->cx, src);
        a->dst = okpu_v5_ptr(s->cx, dst);
        a->esize = esize;
        fill_nd(&a->nd, rank, shape, is, os);
    }
    describe(s, dst, dt, rank, shape, count_elems(rank, shape));
    return OKPU_OK;
}

/* The operands of a function from one tensor to another of the same rank: pops the output and the input address,
 * then reads rshape_src, rstride_src and rstride_dest from the shape registers p[at], p[at + 1] and p[at + 2]. */
static int in_out_operands(sv *s, const uint8_t *p, unsigned at, sv_entry *in, sv_entry *out, uint32_t *rank,
                           uint32_t *shape, int64_t *is, int64_t *os)
{
    OKPU_TRY(pop(s, E_ADDR, out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, in, "input address"));
    OKPU_TRY(dims_of(s, p[at], rank, shape, "rshape_src"));
    OKPU_TRY(strides_of(s, p[at + 1], *rank, is, "rstride_src"));
    return strides_of(s, p[at + 2], *rank, os, "rstride_dest");
}

/* COPY, SLICE and TRANSPOSE: strided copies; the slice's begin and steps and the transpose's permutation fold into
 * the source address and strides. */
static int t_copy_like(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out;
    uint32_t dt = p[3], esize, rank, shape[OKPU_V5_MAX_RANK], oshape[OKPU_V5_MAX_RANK], k;
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK], ois[OKPU_V5_MAX_RANK];
    v5_addr src;
    int rc;
    esize = dt_checked(s, dt, &rc);
    OKPU_TRY(rc);
    OKPU_TRY(in_out_operands(s, p, 4, &in, &out, &rank, shape, is, os));
    /* the input view first: it bounds (dim - 1) x stride, so the slice arithmetic below cannot overflow */
    OKPU_TRY(view(s, &in.a, esize, rank, shape, is, 0, "input"));
    src = in.a;
    for (k = 0; k < rank; k++)
        oshape[k] = shape[k], ois[k] = is[k];
    if (t == TF_SLICE) {
        const sv_shape *b = NULL, *e = NULL, *st = NULL;
        OKPU_TRY(reg_shape(s, p[7], &b, "rbegins"));
        OKPU_TRY(reg_shape(s, p[8], &e, "rends"));
        OKPU_TRY(reg_shape(s, p[9], &st, "rstrides"));
        if (b->rank != rank || e->rank != rank || st->rank != rank)
            return sfail(s, "its begins, ends and strides do not have one value per dimension");
        for (k = 0; k < rank; k++) {
            int64_t begin = (uint32_t)b->v[k], end = e->v[k], step = st->v[k], n;
            if (step == 0)
                return sfail(s, "a slice step is 0");
            if (end < 0) /* nncase reads ends as i32 and clamps them to the dimension */
                end = step > 0 ? 0 : -1;
            if (end > (int64_t)shape[k])
                end = shape[k];
            if (begin > (int64_t)shape[k] - (step > 0 ? 0 : 1))
                return sfail(s, "a slice begins past its dimension");
            n = step > 0 ? (end > begin ? (end - begin + step - 1) / step : 0)
                         : (begin > end ? (begin - end + (-step) - 1) / (-step) : 0);
            oshape[k] = (uint32_t)n;
            src.off += (uint64_t)(begin * is[k] * (int64_t)esize);
            ois[k] = is[k] * step;
        }
    } else if (t == TF_TRANSPOSE) {
        const sv_shape *perm = NULL;
        uint32_t used = 0;
        OKPU_TRY(reg_shape(s, p[7], &perm, "rshape_perm"));
        if (perm->rank != rank)
            return sfail(s, "its permutation does not have one value per dimension");
        for (k = 0; k < rank; k++) {
            uint32_t from = (uint32_t)perm->v[k];
            if (from >= rank || (used & (1u << from)))
                return sfail(s, "its permutation is not a permutation of the dimensions");
            used |= 1u << from;
            oshape[k] = shape[from];
            ois[k] = is[from];
        }
    }
    OKPU_TRY(view(s, &src, esize, rank, oshape, ois, 0, "input (as read)"));
    OKPU_TRY(view(s, &out.a, esize, rank, oshape, os, 1, "output"));
    return copy_step(s, id, bytes, &src, &out.a, esize, dt, rank, oshape, ois, os);
}

static int t_quant(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out, scale, bias;
    const uint32_t in_dt = p[3], out_dt = p[4];
    const int quant = t == TF_QUANTIZE;
    const uint32_t qdt = quant ? out_dt : in_dt, fdt = quant ? in_dt : out_dt;
    uint32_t rank, shape[OKPU_V5_MAX_RANK];
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK];
    void *args;
    if (fdt != OKPU_V5_DT_F32 || (qdt != OKPU_V5_DT_U8 && qdt != OKPU_V5_DT_I8)) {
        char msg[120];
        snprintf(msg, sizeof msg, "converts %s to %s; this runtime handles f32 <-> u8/i8", okpu_v5_dtype_name(in_dt),
                 okpu_v5_dtype_name(out_dt));
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at, "stackvm %s at byte %ld %s", s->name, s->at, msg);
    }
    OKPU_TRY(pop(s, E_F32, &bias, "bias"));
    OKPU_TRY(pop(s, E_F32, &scale, "scale"));
    OKPU_TRY(in_out_operands(s, p, 5, &in, &out, &rank, shape, is, os));
    OKPU_TRY(view(s, &in.a, okpu_v5_dtype_size(in_dt), rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, okpu_v5_dtype_size(out_dt), rank, shape, os, 1, "output"));
    OKPU_TRY(take_step(s, quant ? OKPU_STEP_V5_QUANTIZE : OKPU_STEP_V5_DEQUANTIZE, id, bytes, &args));
    if (args) {
        okpu_v5_quant_args *a = (okpu_v5_quant_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->qtype = qdt;
        a->scale = scale.f;
        a->bias = bias.f;
        fill_nd(&a->nd, rank, shape, is, os);
    }
    describe(s, &out.a, out_dt, rank, shape, count_elems(rank, shape));
    return OKPU_OK;
}

static int t_pad(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out, value;
    const uint32_t dt = p[3];
    uint32_t esize, rank, shape[OKPU_V5_MAX_RANK], oshape[OKPU_V5_MAX_RANK], k;
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK];
    const sv_pads *pads;
    uint8_t vbytes[4] = {0, 0, 0, 0};
    void *args;
    int rc;
    (void)t;
    esize = dt_checked(s, dt, &rc);
    OKPU_TRY(rc);
    if (p[8] > 3u || esize > 4) {
        char msg[160];
        snprintf(msg, sizeof msg, "pad mode %u on %s; this runtime pads in modes 0 .. 3 (constant, reflect, symmetric, "
                 "edge) with elements of up to 4 bytes", p[8], okpu_v5_dtype_name(dt));
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at, "stackvm %s at byte %ld: %s", s->name, s->at, msg);
    }
    OKPU_TRY(pop(s, 0, &value, "pad value"));
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    if (value.kind == E_ADDR)
        return sfail(s, "its pad value is an address");
    if (dt == OKPU_V5_DT_F32 || dt == 8u || dt == 11u) {
        float f;
        if (value.kind == E_INT && value.i != 0)
            return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                           "stackvm PAD at byte %ld: a float pad value given as the integer %ld; this runtime takes "
                           "0 or a float there",
                           s->at, (long)value.i);
        if (dt != OKPU_V5_DT_F32)
            return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at, "stackvm PAD at byte %ld: pads %s, not supported",
                           s->at, okpu_v5_dtype_name(dt));
        f = value.kind == E_F32 ? value.f : 0.0f;
        memcpy(vbytes, &f, 4);
    } else {
        uint32_t v = value.kind == E_INT ? (uint32_t)value.i : (uint32_t)(int32_t)value.f;
        for (k = 0; k < esize; k++)
            vbytes[k] = (uint8_t)(v >> (8 * k));
    }
    OKPU_TRY(dims_of(s, p[4], &rank, shape, "rshape_src"));
    OKPU_TRY(strides_of(s, p[5], rank, is, "rstride_src"));
    OKPU_TRY(strides_of(s, p[6], rank, os, "rstride_dest"));
    pads = &s->pads[p[7]];
    if (!pads->set || pads->rank != rank)
        return sfail(s, "its paddings register is unset or does not have one padding per dimension");
    for (k = 0; k < rank; k++) {
        int64_t n = (int64_t)shape[k] + pads->before[k] + pads->after[k];
        if (pads->interior[k] != 0)
            return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                           "stackvm PAD at byte %ld: interior padding %ld; this runtime pads edges only", s->at,
                           (long)pads->interior[k]);
        if (n < 0 || n > 0x7FFFFFFF)
            return sfail(s, "its paddings give a negative or huge dimension");
        oshape[k] = (uint32_t)n;
        /* reflect / symmetric / edge read one mirror image of the input: at most n - 1 / n / any elements past an
         * edge, of a non-empty dimension */
        if (p[8] != 0 && (pads->before[k] > 0 || pads->after[k] > 0) &&
            (shape[k] == 0 || (p[8] != 3 && ((int64_t)pads->before[k] > (int64_t)shape[k] - (p[8] == 1) ||
                                              (int64_t)pads->after[k] > (int64_t)shape[k] - (p[8] == 1))))) {
            char msg[200];
            snprintf(msg, sizeof msg, "its %s padding of axis %lu (%ld before, %ld after) on a dimension of %lu; "
                     "expected at most %s elements on each side", p[8] == 1 ? "reflect" : p[8] == 2 ? "symmetric" :
                     "edge", (unsigned long)k, (long)pads->before[k], (long)pads->after[k], (unsigned long)shape[k],
                     p[8] == 1 ? "dimension - 1" : p[8] == 2 ? "dimension" : "any number of (dimension >= 1)");
            return sfail(s, msg);
        }
    }
    OKPU_TRY(view(s, &in.a, esize, rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, esize, rank, oshape, os, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_PAD, id, bytes, &args));
    if (args) {
        okpu_v5_pad_args *a = (okpu_v5_pad_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->esize = esize;
        a->rank = rank;
        for (k = 0; k < rank; k++) {
            a->in_shape[k] = shape[k];
            a->out_shape[k] = oshape[k];
            a->in_stride[k] = (int32_t)is[k];
            a->out_stride[k] = (int32_t)os[k];
            a->before[k] = pads->before[k];
        }
        memcpy(a->value, vbytes, 4);
        a->mode = p[8];
    }
    describe(s, &out.a, dt, rank, oshape, count_elems(rank, oshape));
    return OKPU_OK;
}

static int pop_padding(sv *s, int32_t *before, int32_t *after)
{
    sv_entry e;
    if (padding_values(s->cx->group) == 3u) {
        OKPU_TRY(pop(s, E_INT, &e, "padding interior"));
        if (e.i != 0)
            return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                           "stackvm %s at byte %ld: interior padding %ld is not supported", s->name, s->at, (long)e.i);
    }
    OKPU_TRY(pop(s, E_INT, &e, "padding after"));
    *after = e.i;
    OKPU_TRY(pop(s, E_INT, &e, "padding before"));
    *before = e.i;
    return OKPU_OK;
}

static int t_conv2d(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, w, b, out;
    int32_t pt, pb, pl, pr;
    uint32_t rank, shape[OKPU_V5_MAX_RANK], wrank, wshape[OKPU_V5_MAX_RANK], oshape[4], k;
    int64_t is[OKPU_V5_MAX_RANK], ws[OKPU_V5_MAX_RANK], bs[1], os[4], oh, ow;
    const uint16_t groups = (uint16_t)(p[10] | (p[11] << 8)), sh = (uint16_t)(p[12] | (p[13] << 8)),
                   sw = (uint16_t)(p[14] | (p[15] << 8)), dh = (uint16_t)(p[16] | (p[17] << 8)),
                   dw = (uint16_t)(p[18] | (p[19] << 8));
    const float lo = okpu_rd_f32(p + 20), hi = okpu_rd_f32(p + 24);
    const sv_shape *bst = NULL;
    uint32_t bshape[1];
    void *args;
    (void)t;
    if (p[3] != OKPU_V5_DT_F32)
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                       "stackvm CONV2D at byte %ld on %s; this runtime convolves f32 on the CPU", s->at,
                       okpu_v5_dtype_name(p[3]));
    OKPU_TRY(pop_padding(s, &pl, &pr));
    OKPU_TRY(pop_padding(s, &pt, &pb));
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &b, "bias address"));
    OKPU_TRY(pop(s, E_ADDR, &w, "weights address"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    OKPU_TRY(dims_of(s, p[4], &rank, shape, "rshape_src"));
    OKPU_TRY(dims_of(s, p[6], &wrank, wshape, "rshape_kernel"));
    if (rank != 4 || wrank != 4)
        return sfail(s, "its input or kernel shape is not 4-dimensional (NCHW, OIHW)");
    OKPU_TRY(strides_of(s, p[5], 4, is, "rstride_src"));
    OKPU_TRY(strides_of(s, p[7], 4, ws, "rstride_kernel"));
    OKPU_TRY(reg_shape(s, p[8], &bst, "rstride_bias"));
    OKPU_TRY(strides_of(s, p[9], 4, os, "rstride_dest"));
    bs[0] = bst->rank >= 1 ? (int64_t)(uint32_t)bst->v[bst->rank - 1] : 1;
    if (groups == 0 || sh == 0 || sw == 0 || dh == 0 || dw == 0 || shape[1] % groups || wshape[0] % groups ||
        (uint64_t)wshape[1] * groups != shape[1] || wshape[2] == 0 || wshape[3] == 0)
        return sfail(s, "its groups, strides, dilations or kernel shape do not fit its input");
    oh = ((int64_t)shape[2] + pt + pb - ((int64_t)(wshape[2] - 1) * dh + 1)) / sh + 1;
    ow = ((int64_t)shape[3] + pl + pr - ((int64_t)(wshape[3] - 1) * dw + 1)) / sw + 1;
    if (oh <= 0 || ow <= 0 || oh > 0xFFFFFF || ow > 0xFFFFFF || pt < -0xFFFF || pt > 0xFFFF || pl < -0xFFFF ||
        pl > 0xFFFF)
        return sfail(s, "its output size from the paddings, kernel and strides is not positive");
    oshape[0] = shape[0], oshape[1] = wshape[0], oshape[2] = (uint32_t)oh, oshape[3] = (uint32_t)ow;
    bshape[0] = wshape[0];
    OKPU_TRY(view(s, &in.a, 4, 4, shape, is, 0, "input"));
    OKPU_TRY(view(s, &w.a, 4, 4, wshape, ws, 0, "weights"));
    OKPU_TRY(view(s, &b.a, 4, 1, bshape, bs, 0, "bias"));
    OKPU_TRY(view(s, &out.a, 4, 4, oshape, os, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_CONV2D, id, bytes, &args));
    if (args) {
        okpu_v5_conv2d_args *a = (okpu_v5_conv2d_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->weights = okpu_v5_ptr(s->cx, &w.a);
        a->bias = okpu_v5_ptr(s->cx, &b.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->n = shape[0], a->ic = shape[1], a->ih = shape[2], a->iw = shape[3];
        a->oc = wshape[0], a->kh = wshape[2], a->kw = wshape[3], a->oh = (uint32_t)oh, a->ow = (uint32_t)ow;
        a->groups = groups;
        for (k = 0; k < 4; k++) {
            a->in_stride[k] = (int32_t)is[k];
            a->w_stride[k] = (int32_t)ws[k];
            a->out_stride[k] = (int32_t)os[k];
        }
        a->bias_stride = (int32_t)bs[0];
        a->stride_h = sh, a->stride_w = sw, a->dil_h = dh, a->dil_w = dw;
        a->pad_top = pt, a->pad_left = pl;
        a->clamp_lo = lo, a->clamp_hi = hi;
    }
    describe(s, &out.a, OKPU_V5_DT_F32, 4, oshape,
             okpu_sat_mul(count_elems(4, oshape), okpu_sat_mul(wshape[1], (uint64_t)wshape[2] * wshape[3])));
    return OKPU_OK;
}

static int need_f32(sv *s, uint32_t dt)
{
    if (dt == OKPU_V5_DT_F32)
        return OKPU_OK;
    return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                   "stackvm %s at byte %ld on %s; this runtime computes it on f32 only (nncase's K210 models use f32 "
                   "there)",
                   s->name, s->at, okpu_v5_dtype_name(dt));
}

static int t_window(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, init, out;
    int32_t pt, pb, pl, pr;
    uint32_t rank, shape[OKPU_V5_MAX_RANK], oshape[4], k;
    int64_t is[OKPU_V5_MAX_RANK], os[4], oh, ow;
    const uint32_t op = p[4];
    const uint16_t fh = (uint16_t)(p[8] | (p[9] << 8)), fw = (uint16_t)(p[10] | (p[11] << 8)),
                   sh = (uint16_t)(p[12] | (p[13] << 8)), sw = (uint16_t)(p[14] | (p[15] << 8)),
                   dh = (uint16_t)(p[16] | (p[17] << 8)), dw = (uint16_t)(p[18] | (p[19] << 8));
    void *args;
    (void)t;
    OKPU_TRY(need_f32(s, p[3]));
    if (op > 3u)
        return sfail(s, "its reduce_op is not 0 (mean), 1 (min), 2 (max) or 3 (sum)");
    OKPU_TRY(pop_padding(s, &pl, &pr));
    OKPU_TRY(pop_padding(s, &pt, &pb));
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_F32, &init, "initial value"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    OKPU_TRY(dims_of(s, p[5], &rank, shape, "rshape_src"));
    if (rank != 4)
        return sfail(s, "its input is not 4-dimensional (NCHW)");
    OKPU_TRY(strides_of(s, p[6], 4, is, "rstride_src"));
    OKPU_TRY(strides_of(s, p[7], 4, os, "rstride_dest"));
    if (!fh || !fw || !sh || !sw || !dh || !dw || pt < -0xFFFF || pt > 0xFFFF || pl < -0xFFFF || pl > 0xFFFF ||
        pb < -0xFFFF || pb > 0xFFFF || pr < -0xFFFF || pr > 0xFFFF)
        return sfail(s, "its filter, strides, dilations or paddings are 0 or out of range");
    oh = ((int64_t)shape[2] + pt + pb - ((int64_t)(fh - 1) * dh + 1) + sh) / sh;
    ow = ((int64_t)shape[3] + pl + pr - ((int64_t)(fw - 1) * dw + 1) + sw) / sw;
    if (oh <= 0 || ow <= 0)
        return sfail(s, "its output size is not positive");
    oshape[0] = shape[0], oshape[1] = shape[1], oshape[2] = (uint32_t)oh, oshape[3] = (uint32_t)ow;
    OKPU_TRY(view(s, &in.a, 4, 4, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, 4, 4, oshape, os, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_WINDOW, id, bytes, &args));
    if (args) {
        okpu_v5_window_args *a = (okpu_v5_window_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->op = op;
        a->n = shape[0], a->c = shape[1], a->ih = shape[2], a->iw = shape[3];
        a->oh = (uint32_t)oh, a->ow = (uint32_t)ow;
        for (k = 0; k < 4; k++)
            a->in_stride[k] = (int32_t)is[k], a->out_stride[k] = (int32_t)os[k];
        a->fh = fh, a->fw = fw, a->sh = sh, a->sw = sw, a->dh = dh, a->dw = dw;
        a->pad_top = pt, a->pad_left = pl;
        a->init = init.f;
        a->clamp_lo = okpu_rd_f32(p + 20), a->clamp_hi = okpu_rd_f32(p + 24);
    }
    describe(s, &out.a, OKPU_V5_DT_F32, 4, oshape,
             okpu_sat_mul(count_elems(4, oshape), (uint64_t)fh * fw));
    return OKPU_OK;
}

static int t_reduce(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out, init;
    uint32_t rank, shape[OKPU_V5_MAX_RANK], kshape[OKPU_V5_MAX_RANK], orank = 0, k;
    uint32_t reduced = 0, count = 1;
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK], wos[OKPU_V5_MAX_RANK], kos[OKPU_V5_MAX_RANK];
    const sv_shape *axes = NULL;
    const uint32_t op = p[7], keep = p[9];
    void *args;
    (void)t;
    OKPU_TRY(need_f32(s, p[3]));
    if (op > 3u)
        return sfail(s, "its reduce_op is not 0 (mean), 1 (min), 2 (max) or 3 (sum)");
    OKPU_TRY(pop(s, 0, &init, "initial value"));
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    if (init.kind == E_ADDR || (init.kind == E_INT && init.i != 0))
        return sfail(s, "its initial value is not a float");
    OKPU_TRY(dims_of(s, p[4], &rank, shape, "rshape_src"));
    OKPU_TRY(strides_of(s, p[5], rank, is, "rstride_src"));
    OKPU_TRY(reg_shape(s, p[8], &axes, "rshape_axis"));
    for (k = 0; k < axes->rank; k++) {
        uint32_t ax = (uint32_t)axes->v[k];
        if (ax >= rank || (reduced & (1u << ax)))
            return sfail(s, "its axes are not distinct dimensions of the input");
        reduced |= 1u << ax;
    }
    for (k = 0; k < rank; k++) {
        kshape[k] = reduced & (1u << k) ? 1u : shape[k];
        if (reduced & (1u << k))
            count *= shape[k] ? shape[k] : 1u; /* bounded by the input view below */
        else
            orank++;
    }
    if (keep)
        orank = rank;
    OKPU_TRY(strides_of(s, p[6], orank, os, "rstride_dest"));
    for (k = 0, orank = 0; k < rank; k++) { /* the output strides on the input's axes, 0 where reduced */
        if (keep) {
            kos[k] = os[k];
        } else {
            kos[k] = reduced & (1u << k) ? 0 : os[orank++];
        }
        wos[k] = reduced & (1u << k) ? 0 : kos[k];
    }
    OKPU_TRY(view(s, &in.a, 4, rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, 4, rank, kshape, kos, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_REDUCE, id, bytes, &args));
    if (args) {
        okpu_v5_reduce_args *a = (okpu_v5_reduce_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->op = op;
        a->count = count;
        a->init = init.kind == E_F32 ? init.f : 0.0f;
        fill_nd(&a->walk, rank, shape, is, wos);
        for (k = 0; k < rank; k++)
            a->out_shape[k] = kshape[k], a->out_stride[k] = (int32_t)kos[k];
    }
    describe(s, &out.a, OKPU_V5_DT_F32, rank, kshape, count_elems(rank, shape));
    return OKPU_OK;
}

static int t_softmax(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out;
    uint32_t rank, shape[OKPU_V5_MAX_RANK], outer[OKPU_V5_MAX_RANK], k, axis;
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK];
    const int32_t ax = okpu_rd_i32(p + 7);
    void *args;
    (void)t;
    OKPU_TRY(need_f32(s, p[3]));
    OKPU_TRY(in_out_operands(s, p, 4, &in, &out, &rank, shape, is, os));
    if (ax >= (int32_t)rank || ax < -(int32_t)rank || rank == 0)
        return sfail(s, "its axis is not a dimension of the input");
    axis = (uint32_t)(ax < 0 ? ax + (int32_t)rank : ax);
    for (k = 0; k < rank; k++)
        outer[k] = k == axis ? 1u : shape[k];
    OKPU_TRY(view(s, &in.a, 4, rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, 4, rank, shape, os, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_SOFTMAX, id, bytes, &args));
    if (args) {
        okpu_v5_softmax_args *a = (okpu_v5_softmax_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->len = shape[axis];
        a->in_step = (int32_t)is[axis];
        a->out_step = (int32_t)os[axis];
        a->beta = okpu_rd_f32(p + 11);
        fill_nd(&a->nd, rank, outer, is, os);
    }
    describe(s, &out.a, OKPU_V5_DT_F32, rank, shape, okpu_sat_mul(count_elems(rank, shape), 3));
    return OKPU_OK;
}

static int t_binary(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry a_, b_, out;
    const int has_dest_shape = bytes == 19u; /* the 1.4.0+ layout (section 7.3) */
    const uint32_t op = p[has_dest_shape ? 10 : 9];
    const uint8_t *clamp = p + (has_dest_shape ? 11 : 10);
    uint32_t ra, rb, rank, sa[OKPU_V5_MAX_RANK], sb[OKPU_V5_MAX_RANK], so[OKPU_V5_MAX_RANK], k;
    uint32_t ea[OKPU_V5_MAX_RANK], eb[OKPU_V5_MAX_RANK];
    int64_t ta[OKPU_V5_MAX_RANK], tb[OKPU_V5_MAX_RANK], to[OKPU_V5_MAX_RANK];
    int64_t xa[OKPU_V5_MAX_RANK], xb[OKPU_V5_MAX_RANK];
    void *args;
    (void)t;
    OKPU_TRY(need_f32(s, p[3]));
    if (op > 5u) {
        char msg[120];
        snprintf(msg, sizeof msg, "binary_op %lu (0..5 = add, sub, mul, div, min, max are supported)",
                 (unsigned long)op);
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at, "stackvm BINARY at byte %ld: %s", s->at, msg);
    }
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &b_, "second input address"));
    OKPU_TRY(pop(s, E_ADDR, &a_, "first input address"));
    OKPU_TRY(dims_of(s, p[4], &ra, sa, "rshape_src1"));
    OKPU_TRY(strides_of(s, p[5], ra, ta, "rstride_src1"));
    OKPU_TRY(dims_of(s, p[6], &rb, sb, "rshape_src2"));
    OKPU_TRY(strides_of(s, p[7], rb, tb, "rstride_src2"));
    rank = ra > rb ? ra : rb;
    for (k = 0; k < rank; k++) { /* numpy broadcasting, aligned on the last axis */
        const uint32_t da = k + ra >= rank ? sa[k + ra - rank] : 1u, db = k + rb >= rank ? sb[k + rb - rank] : 1u;
        if (da != db && da != 1u && db != 1u)
            return sfail(s, "its input shapes do not broadcast");
        so[k] = da == 1u ? db : da;
        ea[k] = da, eb[k] = db;
        xa[k] = (k + ra >= rank && da != 1u) ? ta[k + ra - rank] : 0;
        xb[k] = (k + rb >= rank && db != 1u) ? tb[k + rb - rank] : 0;
    }
    if (has_dest_shape) {
        uint32_t rd, sd[OKPU_V5_MAX_RANK];
        OKPU_TRY(dims_of(s, p[8], &rd, sd, "rshape_dest"));
        if (rd != rank || memcmp(sd, so, rank * sizeof so[0]) != 0)
            return sfail(s, "its output shape is not the broadcast of its input shapes");
    }
    OKPU_TRY(strides_of(s, p[has_dest_shape ? 9 : 8], rank, to, "rstride_dest"));
    OKPU_TRY(view(s, &a_.a, 4, ra, sa, ta, 0, "first input"));
    OKPU_TRY(view(s, &b_.a, 4, rb, sb, tb, 0, "second input"));
    OKPU_TRY(view(s, &out.a, 4, rank, so, to, 1, "output"));
    (void)ea, (void)eb;
    OKPU_TRY(take_step(s, OKPU_STEP_V5_BINARY, id, bytes, &args));
    if (args) {
        okpu_v5_binary_args *a = (okpu_v5_binary_args *)args;
        a->a = okpu_v5_ptr(s->cx, &a_.a);
        a->b = okpu_v5_ptr(s->cx, &b_.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->op = op;
        a->rank = rank;
        for (k = 0; k < rank; k++) {
            a->shape[k] = so[k];
            a->a_stride[k] = (int32_t)xa[k], a->b_stride[k] = (int32_t)xb[k], a->out_stride[k] = (int32_t)to[k];
        }
        a->clamp_lo = okpu_rd_f32(clamp), a->clamp_hi = okpu_rd_f32(clamp + 4);
    }
    describe(s, &out.a, OKPU_V5_DT_F32, rank, so, count_elems(rank, so));
    return OKPU_OK;
}

static int t_lut(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, table, out, lo, hi;
    uint32_t rank, shape[OKPU_V5_MAX_RANK], tshape[1] = {256};
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK], ts[1] = {1};
    const uint32_t len = (uint32_t)(p[7] | (p[8] << 8));
    void *args;
    (void)t;
    if (p[3] != OKPU_V5_DT_U8 || len != 256u)
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                       "stackvm LUT1D at byte %ld on %s with a %lu-entry table; this runtime (like nncase) looks up "
                       "u8 values in 256-entry tables",
                       s->at, okpu_v5_dtype_name(p[3]), (unsigned long)len);
    OKPU_TRY(pop(s, 0, &hi, "max"));
    OKPU_TRY(pop(s, 0, &lo, "min"));
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &table, "table address"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    OKPU_TRY(dims_of(s, p[4], &rank, shape, "rshape_src"));
    OKPU_TRY(strides_of(s, p[5], rank, is, "rstride_src"));
    OKPU_TRY(strides_of(s, p[6], rank, os, "rstride_dest"));
    OKPU_TRY(view(s, &in.a, 1, rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &table.a, 1, 1, tshape, ts, 0, "table"));
    OKPU_TRY(view(s, &out.a, 1, rank, shape, os, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_LUT, id, bytes, &args));
    if (args) {
        okpu_v5_lut_args *a = (okpu_v5_lut_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->table = okpu_v5_ptr(s->cx, &table.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        fill_nd(&a->nd, rank, shape, is, os);
    }
    describe(s, &out.a, OKPU_V5_DT_U8, rank, shape, count_elems(rank, shape));
    return OKPU_OK;
}

static int t_resize(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out, oh, ow;
    const uint32_t dt = p[3];
    uint32_t rank, shape[OKPU_V5_MAX_RANK], oshape[4], k;
    int64_t is[OKPU_V5_MAX_RANK], os[4];
    void *args;
    (void)t;
    if ((dt != OKPU_V5_DT_F32 && dt != OKPU_V5_DT_U8) || p[9] > 1u)
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                       "stackvm RESIZE_IMAGE at byte %ld: %s, mode %u; this runtime resizes f32 and u8, bilinear (0) "
                       "or nearest (1)",
                       s->at, okpu_v5_dtype_name(dt), p[9]);
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    OKPU_TRY(pop(s, E_INT, &ow, "output width"));
    OKPU_TRY(pop(s, E_INT, &oh, "output height"));
    OKPU_TRY(dims_of(s, p[4], &rank, shape, "rshape_src"));
    if (rank != 4)
        return sfail(s, "its input is not 4-dimensional (NCHW)");
    if (oh.i <= 0 || ow.i <= 0 || shape[2] == 0 || shape[3] == 0)
        return sfail(s, "its input or output size is 0 or negative");
    OKPU_TRY(strides_of(s, p[5], 4, is, "rstride_src"));
    OKPU_TRY(strides_of(s, p[6], 4, os, "rstride_dest"));
    oshape[0] = shape[0], oshape[1] = shape[1], oshape[2] = (uint32_t)oh.i, oshape[3] = (uint32_t)ow.i;
    OKPU_TRY(view(s, &in.a, okpu_v5_dtype_size(dt), 4, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, okpu_v5_dtype_size(dt), 4, oshape, os, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_RESIZE, id, bytes, &args));
    if (args) {
        okpu_v5_resize_args *a = (okpu_v5_resize_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->is_u8 = dt == OKPU_V5_DT_U8;
        a->nearest = p[9];
        a->align_corners = p[7] != 0;
        a->half_pixel = p[8] != 0;
        a->n = shape[0], a->c = shape[1], a->ih = shape[2], a->iw = shape[3];
        a->oh = oshape[2], a->ow = oshape[3];
        for (k = 0; k < 4; k++)
            a->in_stride[k] = (int32_t)is[k], a->out_stride[k] = (int32_t)os[k];
    }
    describe(s, &out.a, dt, 4, oshape, okpu_sat_mul(count_elems(4, oshape), 4));
    return OKPU_OK;
}

static int t_matmul(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry a_, b_, bias, out;
    const int full = bytes == 17u; /* 1.4.0+: with stride and output registers (section 7.3) */
    uint32_t ra, rb, sa[OKPU_V5_MAX_RANK], sb[OKPU_V5_MAX_RANK], k, batch = 1, bbatch = 1, m, kk, n;
    uint32_t one[1], dense[1];
    int64_t unit[1] = {1};
    const uint8_t *clamp = p + (full ? 9 : 5);
    void *args;
    (void)t;
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &bias, "bias address"));
    OKPU_TRY(pop(s, E_ADDR, &b_, "second input address"));
    OKPU_TRY(pop(s, E_ADDR, &a_, "first input address"));
    OKPU_TRY(dims_of(s, p[3], &ra, sa, "rshape_src1"));
    OKPU_TRY(dims_of(s, p[full ? 5 : 4], &rb, sb, "rshape_src2"));
    if (ra < 2 || rb < 2 || sa[ra - 1] != sb[rb - 2])
        return sfail(s, "its inputs are not [..., M, K] and [..., K, N]");
    {
        uint64_t ba = 1, bb = 1;
        for (k = 0; k + 2 < ra; k++)
            ba = okpu_sat_mul(ba, sa[k]);
        for (k = 0; k + 2 < rb; k++)
            bb = okpu_sat_mul(bb, sb[k]);
        /* every dense extent below must stay far from wrapping when it is narrowed to 32 bits */
        if (okpu_sat_mul(okpu_sat_mul(ba, sa[ra - 2]), sa[ra - 1]) > 0x7FFFFFFFu ||
            okpu_sat_mul(okpu_sat_mul(bb, sb[rb - 2]), sb[rb - 1]) > 0x7FFFFFFFu ||
            okpu_sat_mul(okpu_sat_mul(ba, sa[ra - 2]), sb[rb - 1]) > 0x7FFFFFFFu)
            return sfail(s, "its tensors are too large");
        batch = (uint32_t)ba, bbatch = (uint32_t)bb;
    }
    if (bbatch != 1u && bbatch != batch)
        return sfail(s, "its second input's batch is neither 1 nor the first input's");
    m = sa[ra - 2], kk = sa[ra - 1], n = sb[rb - 1];
    /* the kernel reads every tensor densely: check each dense extent */
    dense[0] = (uint32_t)okpu_sat_mul(okpu_sat_mul(batch, m), kk);
    OKPU_TRY(view(s, &a_.a, 4, 1, dense, unit, 0, "first input"));
    dense[0] = (uint32_t)okpu_sat_mul(okpu_sat_mul(bbatch, kk), n);
    OKPU_TRY(view(s, &b_.a, 4, 1, dense, unit, 0, "second input"));
    one[0] = n;
    OKPU_TRY(view(s, &bias.a, 4, 1, one, unit, 0, "bias"));
    dense[0] = (uint32_t)okpu_sat_mul(okpu_sat_mul(batch, m), n);
    OKPU_TRY(view(s, &out.a, 4, 1, dense, unit, 1, "output"));
    if (okpu_sat_mul(okpu_sat_mul(batch, m), okpu_sat_mul(kk, n)) > OKPU_SIZE_LIMIT)
        return sfail(s, "its product is too large");
    OKPU_TRY(take_step(s, OKPU_STEP_V5_MATMUL, id, bytes, &args));
    if (args) {
        okpu_v5_matmul_args *a = (okpu_v5_matmul_args *)args;
        a->a = okpu_v5_ptr(s->cx, &a_.a);
        a->b = okpu_v5_ptr(s->cx, &b_.a);
        a->bias = okpu_v5_ptr(s->cx, &bias.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->batch = batch, a->m = m, a->k = kk, a->n = n;
        a->b_step = bbatch == 1u ? 0u : kk * n;
        a->clamp_lo = okpu_rd_f32(clamp), a->clamp_hi = okpu_rd_f32(clamp + 4);
    }
    {
        uint32_t oshape[2] = {batch * m, n};
        describe(s, &out.a, OKPU_V5_DT_F32, 2, oshape,
                 okpu_sat_mul(okpu_sat_mul(batch, m), okpu_sat_mul(kk, n)));
    }
    return OKPU_OK;
}

static int convertible(uint32_t dt)
{
    return dt == OKPU_V5_DT_I8 || dt == 1u || dt == 2u || dt == OKPU_V5_DT_U8 || dt == 5u || dt == 6u ||
           dt == OKPU_V5_DT_F32;
}

static int t_convert(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out;
    const uint32_t in_dt = p[3], out_dt = p[4];
    uint32_t rank, shape[OKPU_V5_MAX_RANK];
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK];
    void *args;
    (void)t;
    if (!convertible(in_dt) || !convertible(out_dt))
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                       "stackvm CONVERT at byte %ld from %s to %s; this runtime converts between i8, i16, i32, u8, "
                       "u16, u32 and f32",
                       s->at, okpu_v5_dtype_name(in_dt), okpu_v5_dtype_name(out_dt));
    OKPU_TRY(in_out_operands(s, p, 5, &in, &out, &rank, shape, is, os));
    OKPU_TRY(view(s, &in.a, okpu_v5_dtype_size(in_dt), rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, okpu_v5_dtype_size(out_dt), rank, shape, os, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_CONVERT, id, bytes, &args));
    if (args) {
        okpu_v5_convert_args *a = (okpu_v5_convert_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->in_dt = in_dt, a->out_dt = out_dt;
        fill_nd(&a->nd, rank, shape, is, os);
    }
    describe(s, &out.a, out_dt, rank, shape, count_elems(rank, shape));
    return OKPU_OK;
}

static int t_call(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    const uint32_t fid = okpu_rd_u32(p + 3), mid = (uint32_t)(p[7] | (p[8] << 8)), nsrc = p[9], ndst = p[10];
    const v5_file *f = s->cx->f;
    v5_addr bound[2 * V5_MAX_IO];
    const v5_func *callee;
    uint32_t k;
    (void)t, (void)id, (void)bytes;
    if (mid >= f->nmodules || f->mod[mid].kind != V5_MOD_K210 || fid >= f->mod[mid].nfuncs)
        return okpu_v5_fail(s->cx, OKPU_ERR_KMODEL_FORMAT, s->at,
                       "stackvm CALL at byte %ld calls module %lu function %lu: expected a function of a k210 module "
                       "(the model has %lu modules); %s",
                       s->at, (unsigned long)mid, (unsigned long)fid, (unsigned long)f->nmodules, redo);
    callee = &f->mod[mid].funcs[fid];
    if (nsrc != callee->ninputs || ndst != callee->noutputs)
        return okpu_v5_fail(s->cx, OKPU_ERR_KMODEL_FORMAT, s->at,
                       "stackvm CALL at byte %ld binds %lu inputs and %lu outputs; k210 function %lu has %lu and %lu; "
                       "%s",
                       s->at, (unsigned long)nsrc, (unsigned long)ndst, (unsigned long)fid,
                       (unsigned long)callee->ninputs, (unsigned long)callee->noutputs, redo);
    for (k = nsrc + ndst; k-- > 0;) { /* outputs in reverse, then inputs in reverse */
        sv_entry rstride, rshape, dt, addr;
        const v5_io *io = &callee->io[k];
        uint32_t rank, shape[OKPU_V5_MAX_RANK], r;
        int64_t st[OKPU_V5_MAX_RANK];
        OKPU_TRY(pop(s, E_INT, &rstride, "stride register"));
        OKPU_TRY(pop(s, E_INT, &rshape, "shape register"));
        OKPU_TRY(pop(s, E_INT, &dt, "datatype"));
        OKPU_TRY(pop(s, E_ADDR, &addr, "tensor address"));
        if ((uint32_t)rstride.i >= SV_REGS || (uint32_t)rshape.i >= SV_REGS)
            return sfail(s, "a register index is out of range");
        OKPU_TRY(dims_of(s, (uint32_t)rshape.i, &rank, shape, "a bound tensor's shape"));
        OKPU_TRY(strides_of(s, (uint32_t)rstride.i, rank, st, "a bound tensor's strides"));
        if ((uint32_t)dt.i != io->r.dt || rank != io->rank)
            goto mismatch;
        for (r = 0; r < rank; r++)
            if (shape[r] != io->dims[r])
                goto mismatch;
        /* the callee reads and writes its descriptor's bytes from the bound address on */
        {
            uint32_t one[1] = {io->r.size};
            int64_t unit[1] = {1};
            OKPU_TRY(view(s, &addr.a, 1, 1, one, unit, k >= nsrc, k >= nsrc ? "bound output" : "bound input"));
        }
        bound[k] = addr.a;
        continue;
    mismatch:
        return okpu_v5_fail(s->cx, OKPU_ERR_KMODEL_FORMAT, s->at,
                       "stackvm CALL at byte %ld: its %s %lu is bound as %s with %lu dims, but k210 function %lu "
                       "declares %s with %lu dims and other sizes; %s",
                       s->at, k >= nsrc ? "output" : "input", (unsigned long)(k >= nsrc ? k - nsrc : k),
                       okpu_v5_dtype_name((uint32_t)dt.i), (unsigned long)rank, (unsigned long)fid,
                       okpu_v5_dtype_name(io->r.dt), (unsigned long)io->rank, redo);
    }
    return okpu_v5_k210_call(s->cx, mid, fid, bound, s->at);
}

/* UNARY and SIGMOID: one f32 function per element. */
static int t_unary(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    /* nncase 1.1.0 inserted sign at 11 (section 7.4): older numbers from 11 on move up by one */
    static const uint8_t old_ops[6] = {OKPU_V5_UN_SIN, OKPU_V5_UN_SQRT, OKPU_V5_UN_SQUARE, OKPU_V5_UN_TANH, 16, 17};
    sv_entry in, out;
    uint32_t rank, shape[OKPU_V5_MAX_RANK], op = OKPU_V5_UN_SIGMOID;
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK];
    void *args;
    OKPU_TRY(need_f32(s, p[3]));
    if (t == TF_SIGMOID && bytes != 7u)
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                            "stackvm SIGMOID at byte %ld in nncase 1.2.0's layout (no output strides); this runtime "
                            "runs SIGMOID as written by nncase 1.3.0 and later - recompile the model with them",
                            s->at);
    if (t == TF_UNARY) {
        op = p[7];
        if (s->cx->group < G_110 && op >= 11u)
            op = op - 11u < 6u ? old_ops[op - 11u] : 99u;
        if (op > OKPU_V5_UN_TANH && (op != OKPU_V5_UN_ERF || s->cx->group < G_160)) /* erf: from 1.7.2 */
            return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                                "stackvm UNARY at byte %ld: unary_op %u (nncase %s's numbering) on f32; this runtime "
                                "computes abs, acos, asin, ceil, cos, exp, floor, log, neg, round, rsqrt, sign, sin, "
                                "sqrt, square, tanh and erf (not the bitwise / logical not of integer tensors)",
                                s->at, p[7], group_names[s->cx->group]);
    }
    OKPU_TRY(in_out_operands(s, p, 4, &in, &out, &rank, shape, is, os));
    OKPU_TRY(view(s, &in.a, 4, rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, 4, rank, shape, os, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_UNARY, id, bytes, &args));
    if (args) {
        okpu_v5_unary_args *a = (okpu_v5_unary_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->op = op;
        fill_nd(&a->nd, rank, shape, is, os);
    }
    describe(s, &out.a, OKPU_V5_DT_F32, rank, shape, okpu_sat_mul(count_elems(rank, shape), 4));
    return OKPU_OK;
}

/* BROADCAST: numpy broadcasting of the input to rshape_dest (aligned on the last axis): a copy reading the
 * broadcast axes with stride 0. */
static int t_broadcast(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out;
    uint32_t dt = p[3], esize, rank, orank, shape[OKPU_V5_MAX_RANK], oshape[OKPU_V5_MAX_RANK], k;
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK], bis[OKPU_V5_MAX_RANK];
    int rc;
    (void)t;
    esize = dt_checked(s, dt, &rc);
    OKPU_TRY(rc);
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    OKPU_TRY(dims_of(s, p[4], &rank, shape, "rshape_src"));
    OKPU_TRY(strides_of(s, p[5], rank, is, "rstride_src"));
    OKPU_TRY(dims_of(s, p[6], &orank, oshape, "rshape_dest"));
    OKPU_TRY(strides_of(s, p[7], orank, os, "rstride_dest"));
    if (orank < rank)
        return sfail(s, "its output has fewer dimensions than its input");
    for (k = 0; k < orank; k++) {
        const uint32_t d = k + rank >= orank ? shape[k + rank - orank] : 1u;
        if (d != oshape[k] && d != 1u)
            return sfail(s, "its input shape does not broadcast to its output shape");
        bis[k] = d == 1u ? 0 : is[k + rank - orank];
    }
    OKPU_TRY(view(s, &in.a, esize, rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, esize, orank, oshape, os, 1, "output"));
    return copy_step(s, id, bytes, &in.a, &out.a, esize, dt, orank, oshape, bis, os);
}

/* REDUCE_ARG: argmin / argmax of f32 along one axis, as i32 or i64. */
static int t_reduce_arg(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out;
    const uint32_t odt = p[6], op = p[8], keep = p[10];
    uint32_t rank, shape[OKPU_V5_MAX_RANK], outer[OKPU_V5_MAX_RANK], axis, k, r;
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK], kos[OKPU_V5_MAX_RANK];
    const sv_shape *axes = NULL;
    void *args;
    (void)t;
    OKPU_TRY(need_f32(s, p[3]));
    if ((odt != 2u && odt != 3u) || op > 1u) {
        char msg[120];
        snprintf(msg, sizeof msg, "reduce_arg_op %lu with a %s output (expected 0 argmin or 1 argmax, i32 or i64)",
                 (unsigned long)op, okpu_v5_dtype_name(odt));
        return sfail(s, msg);
    }
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    OKPU_TRY(dims_of(s, p[4], &rank, shape, "rshape_src"));
    OKPU_TRY(strides_of(s, p[5], rank, is, "rstride_src"));
    OKPU_TRY(reg_shape(s, p[9], &axes, "rshape_axis"));
    if (axes->rank != 1u)
        return okpu_v5_fail(s->cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                            "stackvm REDUCE_ARG at byte %ld over %lu axes; this runtime reduces over one axis (what "
                            "nncase's ArgMax / ArgMin import gives)",
                            s->at, (unsigned long)axes->rank);
    axis = (uint32_t)axes->v[0];
    if (axis >= rank || shape[axis] == 0u)
        return sfail(s, "its axis is not a non-empty dimension of the input");
    OKPU_TRY(strides_of(s, p[7], keep ? rank : rank - 1u, os, "rstride_dest"));
    for (k = 0, r = 0; k < rank; k++) { /* the output strides on the input's axes, 0 on the reduced one */
        outer[k] = k == axis ? 1u : shape[k];
        kos[k] = k == axis ? 0 : os[keep ? k : r++];
    }
    OKPU_TRY(view(s, &in.a, 4, rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, okpu_v5_dtype_size(odt), rank, outer, kos, 1, "output"));
    OKPU_TRY(take_step(s, OKPU_STEP_V5_ARG, id, bytes, &args));
    if (args) {
        okpu_v5_arg_args *a = (okpu_v5_arg_args *)args;
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->len = shape[axis];
        a->in_step = (int32_t)is[axis];
        a->arg_max = op == 1u;
        a->select_last = p[11] != 0;
        a->out_i64 = odt == 3u;
        fill_nd(&a->nd, rank, outer, is, kos);
    }
    describe(s, &out.a, odt, rank, outer, count_elems(rank, shape));
    return OKPU_OK;
}

/* GATHER (i32 indices, read densely, as nncase's reference kernel): the output shape is the input's with `axis`
 * replaced by the indices' shape. */
static int t_gather(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    sv_entry in, out, idx;
    const uint32_t dt = p[3], axis = p[9];
    uint32_t esize, rank, orank, irank, shape[OKPU_V5_MAX_RANK], oshape[OKPU_V5_MAX_RANK], ishape[OKPU_V5_MAX_RANK];
    uint32_t want[OKPU_V5_MAX_RANK + OKPU_V5_MAX_RANK], k, n = 0;
    int64_t is[OKPU_V5_MAX_RANK], os[OKPU_V5_MAX_RANK], dense[1] = {1};
    uint32_t count[1];
    void *args;
    int rc;
    (void)t;
    esize = dt_checked(s, dt, &rc);
    OKPU_TRY(rc);
    OKPU_TRY(pop(s, E_ADDR, &idx, "indices address"));
    OKPU_TRY(pop(s, E_ADDR, &out, "output address"));
    OKPU_TRY(pop(s, E_ADDR, &in, "input address"));
    OKPU_TRY(dims_of(s, p[4], &rank, shape, "rshape_src"));
    OKPU_TRY(dims_of(s, p[5], &orank, oshape, "rshape_dest"));
    OKPU_TRY(strides_of(s, p[6], rank, is, "rstride_src"));
    OKPU_TRY(strides_of(s, p[7], orank, os, "rstride_dest"));
    OKPU_TRY(dims_of(s, p[8], &irank, ishape, "rshape_indices"));
    if (axis >= rank)
        return sfail(s, "its axis is not a dimension of the input");
    for (k = 0; k < axis; k++)
        want[n++] = shape[k];
    for (k = 0; k < irank; k++)
        want[n++] = ishape[k];
    for (k = axis + 1; k < rank; k++)
        want[n++] = shape[k];
    if (n != orank || memcmp(want, oshape, n * sizeof want[0]) != 0)
        return sfail(s, "its output shape is not the input's with the axis replaced by the indices' shape");
    if (count_elems(irank, ishape) > 0x7FFFFFFFu)
        return sfail(s, "its indices tensor is too large");
    count[0] = (uint32_t)count_elems(irank, ishape);
    OKPU_TRY(view(s, &in.a, esize, rank, shape, is, 0, "input"));
    OKPU_TRY(view(s, &out.a, esize, orank, oshape, os, 1, "output"));
    OKPU_TRY(view(s, &idx.a, 4, 1, count, dense, 0, "indices"));
    if (idx.a.pool == V5_POOL_RDATA && count[0]) { /* constants: check them now */
        const uint8_t *q = okpu_v5_ptr(s->cx, &idx.a);
        for (k = 0; k < count[0]; k++) {
            int32_t v;
            memcpy(&v, q + 4u * k, 4);
            if (v < 0 || (uint32_t)v >= shape[axis]) {
                char msg[160];
                snprintf(msg, sizeof msg, "its index %lu in .rdata is %ld; expected 0 .. %ld (the input's axis %lu)",
                         (unsigned long)k, (long)v, (long)shape[axis] - 1, (unsigned long)axis);
                return sfail(s, msg);
            }
        }
    }
    OKPU_TRY(take_step(s, OKPU_STEP_V5_GATHER, id, bytes, &args));
    if (args) {
        okpu_v5_gather_args *a = (okpu_v5_gather_args *)args;
        int64_t zero[OKPU_V5_MAX_RANK] = {0};
        a->src = okpu_v5_ptr(s->cx, &in.a);
        a->indices = okpu_v5_ptr(s->cx, &idx.a);
        a->dst = okpu_v5_ptr(s->cx, &out.a);
        a->esize = esize, a->axis = axis, a->in_rank = rank, a->idx_rank = irank, a->axis_dim = shape[axis];
        for (k = 0; k < rank; k++)
            a->in_stride[k] = (int32_t)is[k];
        fill_nd(&a->nd, orank, oshape, zero, os);
    }
    describe(s, &out.a, dt, orank, oshape, count_elems(orank, oshape));
    return OKPU_OK;
}

/* The functions this runtime decodes, from the table: "BINARY, CALL, ..." */
static void supported_list(char *buf, size_t size)
{
    size_t n = 0;
    int t;
    buf[0] = 0;
    for (t = 0; t < TF_COUNT && n < size; t++)
        if (tfs[t].run != t_refuse)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", tfs[t].name);
}

static int t_refuse(sv *s, int t, const uint8_t *p, uint32_t id, uint32_t bytes)
{
    char list[300];
    (void)t, (void)p, (void)bytes;
    supported_list(list, sizeof list);
    return okpu_v5_fail(s->cx, OKPU_ERR_KMODEL_VERSION, s->at,
                        "stackvm TENSOR at byte %ld: tensor function %s (id 0x%02lX in nncase %s's numbering) is not "
                        "supported by this openkpu; it runs %s; recompile the model without it, or with nncase v0.2 "
                        "(kmodel v4)",
                        s->at, s->name, (unsigned long)id, group_names[s->cx->group], list);
}

static int tensor(sv *s, const uint8_t *p, uint32_t len)
{
    const uint32_t id = (uint32_t)(p[1] | (p[2] << 8));
    int decoder, t = find_tf(s->cx->group, id, &decoder);
    /* okpu_v5_stackvm_detect accepted every id under this group */
    s->name = tfs[t].name;
    return tfs[t].run(s, t, p, id, len);
}

int okpu_v5_stackvm_run(v5_cx *cx, uint32_t mi, uint32_t fi)
{
    const v5_module *mod = &cx->f->mod[mi];
    const v5_func *fn = &mod->funcs[fi];
    const uint8_t *code = cx->m->data + mod->text_off + fn->entry;
    const uint32_t P = padding_values(cx->group);
    uint32_t pos = 0;
    int rc = OKPU_OK;
    sv *s = (sv *)okpu_model_alloc(cx->m, sizeof(sv));
    if (!s)
        return okpu_fail(cx->err, OKPU_ERR_NO_MEM, -1, fn->off, "out of memory decoding the stackvm code (%lu bytes)",
                         (unsigned long)sizeof(sv));
    s->cx = cx;
    s->mi = mi;
    /* okpu_v5_stackvm_detect accepted the code under cx->group: every instruction is one of the six, has its bytes, and
     * the stack depth matches; the checks below are on values. */
    while (rc == OKPU_OK && pos < fn->text_size) {
        const uint8_t *p = code + pos;
        const uint32_t op = p[0];
        uint32_t len;
        s->at = (long)(mod->text_off + fn->entry + pos);
        s->name = op < 0x5F ? ops[op].name : "?";
        if (op == OP_TENSOR) {
            int decoder;
            int t = find_tf(cx->group, (uint32_t)(p[1] | (p[2] << 8)), &decoder);
            len = (uint32_t)tf_bytes(t, cx->group);
            rc = tensor(s, p, len);
            s->depth = 0;
        } else {
            len = 1u + (uint32_t)ops[op].operand_bytes;
            if (op == OP_LDC_I4 || op == OP_LDC_R4 || op == OP_LEA_BUFFER) {
                sv_entry *e = &s->stack[s->depth++]; /* depth bounded by the detection */
                memset(e, 0, sizeof *e);
                if (op == OP_LDC_I4) {
                    e->kind = E_INT;
                    e->i = okpu_rd_i32(p + 1);
                } else if (op == OP_LDC_R4) {
                    e->kind = E_F32;
                    e->f = okpu_rd_f32(p + 1);
                } else {
                    const uint32_t loc = p[1], off = okpu_rd_u32(p + 3);
                    e->kind = E_ADDR;
                    e->a.module = (int)mi;
                    e->a.off = off;
                    e->a.pool = loc == V5_LOC_INPUT    ? V5_POOL_IN
                                : loc == V5_LOC_OUTPUT ? V5_POOL_OUT
                                : loc == V5_LOC_RDATA  ? V5_POOL_RDATA
                                : loc == V5_LOC_DATA   ? V5_POOL_DATA
                                                       : V5_POOL_NONE;
                    if (e->a.pool == V5_POOL_NONE || off > okpu_v5_pool_size(cx, &e->a))
                        rc = okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, s->at,
                                     "stackvm LEA_BUFFER at byte %ld: location %lu offset %lu; expected input (0), "
                                     "output (1), rdata (2) or data (3) and an offset inside that pool (%llu bytes); "
                                     "%s",
                                     s->at, (unsigned long)loc, (unsigned long)off,
                                     (unsigned long long)okpu_v5_pool_size(cx, &e->a), redo);
                }
            } else { /* STSHAPE / STPADDINGS: pop rank values (or paddings); the last popped is dim 0 */
                const uint32_t r = p[1], rank = p[2];
                uint32_t k;
                if (rank > SV_REG_RANK) {
                    rc = okpu_v5_fail(cx, OKPU_ERR_NOT_IMPLEMENT, s->at,
                                 "stackvm %s at byte %ld: rank %lu; this runtime handles at most %u dimensions",
                                 s->name, s->at, (unsigned long)rank, SV_REG_RANK);
                    break;
                }
                if (op == OP_STSHAPE) {
                    sv_shape *sh = &s->shapes[r];
                    for (k = rank; k-- > 0 && rc == OKPU_OK;) {
                        sv_entry e;
                        rc = pop(s, E_INT, &e, "a shape value");
                        sh->v[k] = e.i;
                    }
                    sh->rank = rank;
                    sh->set = 1;
                } else {
                    sv_pads *pd = &s->pads[r];
                    for (k = rank; k-- > 0 && rc == OKPU_OK;) {
                        sv_entry e;
                        pd->interior[k] = 0;
                        if (P == 3u) {
                            rc = pop(s, E_INT, &e, "a padding's interior");
                            pd->interior[k] = e.i;
                        }
                        if (rc == OKPU_OK)
                            rc = pop(s, E_INT, &e, "a padding's after");
                        pd->after[k] = e.i;
                        if (rc == OKPU_OK)
                            rc = pop(s, E_INT, &e, "a padding's before");
                        pd->before[k] = e.i;
                    }
                    pd->rank = rank;
                    pd->set = 1;
                }
            }
        }
        pos += len;
    }
    okpu_model_free_mem(cx->m, s, sizeof(sv));
    return rc;
}

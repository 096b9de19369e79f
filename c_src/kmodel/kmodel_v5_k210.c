// SPDX-License-Identifier: Apache-2.0
/* kmodel v5: the k210 module's functions as plan steps (kmodel-v5.md section 4). A k210 function runs when the
 * stackvm calls it (TENSOR.CALL): its input/output memory ranges name the tensors the caller bound, so each call is
 * decoded with those bindings into KPU_UPLOAD, KPU_CONV, V5_DOWNLOAD and V5_COPY steps with resolved pointers. */
#include <string.h>

#include "../core/bytes.h"
#include "../core/checked.h"
#include "../kpu/kpu_layout.h"
#include "kmodel_v5.h"

#define K210_UPLOAD 0u
#define K210_DOWNLOAD 1u
#define K210_CONV2D 2u
#define K210_COPY 3u

static const char *const k210_names[4] = {"kpu_upload", "kpu_download", "kpu_conv2d", "copy"};
static const uint32_t k210_sizes[4] = {44, 44, 152, 76};
static const char redo[] = "the file is corrupt or was written by an unreleased nncase - recompile it with nncase 1.x";

typedef struct k210_call {
    v5_cx *cx;
    uint32_t mi, fi;
    const v5_func *fn;
    const v5_addr *bound;
    long at;          /* file offset of the instruction being decoded */
    const char *name; /* its name */
} k210_call;

static void rd_range(const uint8_t *p, v5_range *r)
{
    r->loc = p[0];
    r->dt = p[1];
    r->shared_module = (uint16_t)(p[2] | (p[3] << 8));
    r->start = okpu_rd_u32(p + 4);
    r->size = okpu_rd_u32(p + 8);
}

/* Resolve a memory range of the k210 function into an address, checking it lies inside what it names. `writes`:
 * the instruction writes there (rdata is read-only). */
static int resolve(k210_call *k, const v5_range *r, long field, const char *what, int writes, v5_addr *out)
{
    v5_cx *cx = k->cx;
    uint64_t limit;
    uint32_t i;
    out->module = (int)k->mi;
    out->off = r->start;
    switch (r->loc) {
    case V5_LOC_INPUT:
    case V5_LOC_OUTPUT: {
        /* the bound tensor whose descriptor starts exactly there (nncase fails the instruction otherwise) */
        const uint32_t first = r->loc == V5_LOC_INPUT ? 0 : k->fn->ninputs;
        const uint32_t count = r->loc == V5_LOC_INPUT ? k->fn->ninputs : k->fn->noutputs;
        for (i = 0; i < count; i++)
            if (k->fn->io[first + i].r.start == r->start)
                break;
        if (i == count)
            return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, field,
                           "k210 function %lu, %s at byte %ld: %s range starts at %s pool offset %lu, where none of "
                           "the function's %lu %s tensors starts; %s",
                           (unsigned long)k->fi, k->name, k->at, what, r->loc == V5_LOC_INPUT ? "input" : "output",
                           (unsigned long)r->start, (unsigned long)count,
                           r->loc == V5_LOC_INPUT ? "input" : "output", redo);
        if (r->size > k->fn->io[first + i].r.size)
            return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, field,
                           "k210 function %lu, %s at byte %ld: %s range of %lu bytes is larger than the %lu-byte "
                           "tensor it names; %s",
                           (unsigned long)k->fi, k->name, k->at, what, (unsigned long)r->size,
                           (unsigned long)k->fn->io[first + i].r.size, redo);
        *out = k->bound[first + i];
        break;
    }
    case V5_LOC_RDATA:
        out->pool = V5_POOL_RDATA;
        break;
    case V5_LOC_DATA:
        out->pool = V5_POOL_DATA;
        break;
    case V5_LOC_KPU:
        out->pool = V5_POOL_KPU;
        break;
    default:
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, field,
                       "k210 function %lu, %s at byte %ld: %s range has location %u; expected 0 (input), 1 (output), "
                       "2 (rdata), 3 (data) or 64 (kpu); %s",
                       (unsigned long)k->fi, k->name, k->at, what, r->loc, redo);
    }
    if (writes && out->pool == V5_POOL_RDATA)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, field,
                       "k210 function %lu, %s at byte %ld: its %s range writes into the read-only .rdata; %s",
                       (unsigned long)k->fi, k->name, k->at, what, redo);
    limit = okpu_v5_pool_size(cx, out);
    if (out->off > limit || r->size > limit - out->off)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, field,
                       "k210 function %lu, %s at byte %ld: %s range %lu + %lu bytes (location %u) ends past the %llu "
                       "bytes of the memory it names; %s",
                       (unsigned long)k->fi, k->name, k->at, what, (unsigned long)r->start, (unsigned long)r->size,
                       r->loc, (unsigned long long)limit, redo);
    return OKPU_OK;
}

static void set_out(v5_cx *cx, okpu_mem_kind mem, uint32_t off, okpu_dtype dt, const uint32_t *nchw, uint64_t bytes,
                    uint64_t work)
{
    okpu_layer *L;
    if (!cx->emit)
        return;
    L = &cx->m->layers[cx->nsteps - 1];
    L->out.mem = mem;
    L->out.offset = off;
    L->out.t.dtype = dt;
    L->out.t.n = nchw[0], L->out.t.c = nchw[1], L->out.t.h = nchw[2], L->out.t.w = nchw[3];
    L->out.t.bytes = (uint32_t)bytes;
    L->out.t.layer = cx->nsteps - 1;
    L->info.output = L->out.t;
    L->info.work = work;
}

/* Main-buffer offset of an address in main memory (for the partial-run output), or 0 with mem NONE. */
static okpu_mem_kind main_place(const v5_cx *cx, const v5_addr *a, uint32_t *off)
{
    switch (a->pool) {
    case V5_POOL_IN:
        *off = (uint32_t)(cx->f->in_base + a->off);
        return OKPU_MEM_MAIN;
    case V5_POOL_OUT:
        *off = (uint32_t)(cx->f->out_base + a->off);
        return OKPU_MEM_MAIN;
    case V5_POOL_DATA:
        *off = (uint32_t)(cx->f->mod[a->module].data_base + a->off);
        return OKPU_MEM_MAIN;
    default:
        *off = 0;
        return OKPU_MEM_NONE;
    }
}

/* upload / download: a dense u8 NCHW map in main memory and its KPU-layout copy */
static int updown(k210_call *k, const uint8_t *p, int upload)
{
    v5_cx *cx = k->cx;
    v5_range rin, rout;
    v5_addr ain, aout;
    const v5_range *rk, *rm;
    const v5_addr *ak, *am;
    uint32_t shape[4], i, rows, row;
    uint64_t map, total;
    void *args;
    rd_range(p + 4, &rin);
    rd_range(p + 16, &rout);
    for (i = 0; i < 4; i++)
        shape[i] = okpu_rd_u32(p + 28 + 4 * i);
    if (resolve(k, &rin, k->at + 4, "input", 0, &ain) != OKPU_OK ||
        resolve(k, &rout, k->at + 16, "output", 1, &aout) != OKPU_OK)
        return cx->err ? cx->err->code : OKPU_ERR_KMODEL_FORMAT;
    rk = upload ? &rout : &rin;
    rm = upload ? &rin : &rout;
    ak = upload ? &aout : &ain;
    am = upload ? &ain : &aout;
    if (rk->loc != V5_LOC_KPU || rm->loc == V5_LOC_KPU || rin.dt != 4u || rout.dt != 4u)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, k->at + 4,
                       "k210 function %lu, %s at byte %ld: moves %s (location %u) to %s (location %u); expected u8 "
                       "data from main memory to KPU RAM (location 64)%s; %s",
                       (unsigned long)k->fi, k->name, k->at, okpu_v5_dtype_name(rin.dt), rin.loc, okpu_v5_dtype_name(rout.dt),
                       rout.loc, upload ? "" : " for an upload, the reverse for a download", redo);
    if (shape[0] == 0 || shape[1] == 0 || shape[2] == 0 || shape[3] == 0 || shape[2] > 4096u || shape[3] > 4096u ||
        shape[1] > 4096u || shape[0] > 4096u || (rk->start % OKPU_KPU_ROW_BYTES) != 0u)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, k->at + 28,
                       "k210 function %lu, %s at byte %ld: shape [%lu, %lu, %lu, %lu] at KPU RAM byte %lu; expected "
                       "dimensions 1 .. 4096 and a KPU RAM offset on a 64-byte row; %s",
                       (unsigned long)k->fi, k->name, k->at, (unsigned long)shape[0], (unsigned long)shape[1],
                       (unsigned long)shape[2], (unsigned long)shape[3], (unsigned long)rk->start, redo);
    row = rk->start / OKPU_KPU_ROW_BYTES;
    rows = okpu_kpu_layout_rows(shape[3], shape[2], shape[1]);
    map = (uint64_t)shape[1] * shape[2] * shape[3];
    total = map * shape[0];
    if ((uint64_t)row + (uint64_t)rows * shape[0] > OKPU_KPU_RAM_ROWS || total > rm->size)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, k->at + 28,
                       "k210 function %lu, %s at byte %ld: %lu map(s) of %lux%lux%lu take KPU rows %lu + %lu x %lu "
                       "(the KPU RAM has 32768) and %llu bytes of main memory (its range has %lu); %s",
                       (unsigned long)k->fi, k->name, k->at, (unsigned long)shape[0], (unsigned long)shape[1],
                       (unsigned long)shape[2], (unsigned long)shape[3], (unsigned long)row, (unsigned long)shape[0],
                       (unsigned long)rows, (unsigned long long)total, (unsigned long)rm->size, redo);
    (void)ak;
    if (upload) {
        okpu_kpu_upload_args *a;
        if (okpu_v5_next_step(cx, OKPU_STEP_KPU_UPLOAD, K210_UPLOAD, "kpu_upload", k->at, 44, &args) != OKPU_OK)
            return cx->err ? cx->err->code : OKPU_ERR_NO_MEM;
        if (!args)
            return OKPU_OK;
        a = (okpu_kpu_upload_args *)args;
        a->src = okpu_v5_ptr(cx, am);
        a->kpu_ram = cx->m->kpu->ram;
        a->row = row, a->rows_per_batch = rows, a->batches = shape[0];
        a->w = shape[3], a->h = shape[2], a->c = shape[1];
        {
            uint32_t nchw[4] = {shape[0], shape[1], shape[2], shape[3]};
            set_out(cx, OKPU_MEM_KPU, row, OKPU_DTYPE_U8, nchw, total, total);
            if (shape[0] != 1) /* a partial run copies out one KPU map: report multi-batch uploads as not copyable */
                cx->m->layers[cx->nsteps - 1].out.mem = OKPU_MEM_NONE;
        }
        okpu_model_touch_kpu_rows(cx->m, row, rows * shape[0]);
    } else {
        okpu_v5_download_args *a;
        uint32_t off;
        okpu_mem_kind mem;
        if (okpu_v5_next_step(cx, OKPU_STEP_V5_DOWNLOAD, K210_DOWNLOAD, "kpu_download", k->at, 44, &args) != OKPU_OK)
            return cx->err ? cx->err->code : OKPU_ERR_NO_MEM;
        if (!args)
            return OKPU_OK;
        a = (okpu_v5_download_args *)args;
        a->kpu_ram = cx->m->kpu->ram;
        a->dst = okpu_v5_ptr(cx, am);
        a->row = row, a->rows_per_batch = rows, a->batches = shape[0];
        a->w = shape[3], a->h = shape[2], a->c = shape[1];
        mem = main_place(cx, am, &off);
        set_out(cx, mem, off, OKPU_DTYPE_U8, shape, total, total);
        okpu_model_touch_kpu_rows(cx->m, row, rows * shape[0]);
    }
    return OKPU_OK;
}

static int conv2d(k210_call *k, const uint8_t *p)
{
    v5_cx *cx = k->cx;
    v5_range rw, rbn, ract, rout;
    v5_addr aw, abn, aact;
    okpu_kpu_args args;
    uint32_t batches, in_rows, out_rows;
    uint64_t need_w, need_bn, map_out;
    void *vargs;
    int rc;
    rd_range(p + 4, &rw);
    rd_range(p + 16, &rbn);
    rd_range(p + 28, &ract);
    rd_range(p + 40, &rout);
    batches = okpu_rd_u32(p + 52);
    if ((rc = resolve(k, &rw, k->at + 4, "weights", 0, &aw)) != OKPU_OK ||
        (rc = resolve(k, &rbn, k->at + 16, "batch-norm table", 0, &abn)) != OKPU_OK ||
        (rc = resolve(k, &ract, k->at + 28, "activation table", 0, &aact)) != OKPU_OK)
        return rc;
    if (rw.loc != V5_LOC_RDATA || rbn.loc != V5_LOC_RDATA || ract.loc != V5_LOC_RDATA)
        return okpu_v5_fail(cx, OKPU_ERR_NOT_IMPLEMENT, k->at + 4,
                       "k210 function %lu, kpu_conv2d at byte %ld: its tables are at locations %u/%u/%u; this runtime "
                       "reads KPU tables from the module's .rdata (location 2), where every nncase 1.x release puts "
                       "them; recompile the model with a released nncase 1.x",
                       (unsigned long)k->fi, k->at, rw.loc, rbn.loc, ract.loc);
    if (rout.loc || rout.dt || rout.shared_module || rout.start || rout.size)
        return okpu_v5_fail(cx, OKPU_ERR_NOT_IMPLEMENT, k->at + 40,
                       "k210 function %lu, kpu_conv2d at byte %ld: main_mem_output at byte %ld is not empty (location "
                       "%u, %lu bytes); expected all zero - no nncase 1.x release fills it, and this runtime does not "
                       "run such a layer; recompile the model with a released nncase 1.x",
                       (unsigned long)k->fi, k->at, k->at + 40, rout.loc, (unsigned long)rout.size);
    if (batches == 0 || batches > 4096u)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, k->at + 52,
                       "k210 function %lu, kpu_conv2d at byte %ld: batches %lu at byte %ld; expected 1 .. 4096; %s",
                       (unsigned long)k->fi, k->at, (unsigned long)batches, k->at + 52, redo);
    okpu_kpu_args_decode(p + 56, &args);
    /* both passes walk the same steps: nsteps is the index this step gets (netinfo's), not "layer -1" */
    if ((rc = okpu_kpu_args_check(&args, cx->nsteps, k->at + 56, cx->err)) != OKPU_OK)
        return rc;
    need_w = okpu_kpu_weights_bytes(&args, 1);
    need_bn = okpu_kpu_bn_bytes(&args);
    if (rw.size < need_w || rbn.size < need_bn || ract.size < KPU_ACT_TABLE_BYTES)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, k->at + 4,
                       "k210 function %lu, kpu_conv2d at byte %ld: tables of %lu (weights), %lu (batch norm), %lu "
                       "(activation) bytes; the layer argument needs %llu, %llu and %u; %s",
                       (unsigned long)k->fi, k->at, (unsigned long)rw.size, (unsigned long)rbn.size,
                       (unsigned long)ract.size, (unsigned long long)need_w, (unsigned long long)need_bn,
                       KPU_ACT_TABLE_BYTES, redo);
    in_rows = okpu_kpu_layout_rows(args.in_width, args.in_height, args.in_channels);
    out_rows = okpu_kpu_layout_rows(args.out_width, args.out_height, args.out_channels);
    if ((uint64_t)args.image_src_addr + (uint64_t)in_rows * batches > OKPU_KPU_RAM_ROWS ||
        (uint64_t)args.image_dst_addr + (uint64_t)out_rows * batches > OKPU_KPU_RAM_ROWS)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, k->at + 64,
                       "k210 function %lu, kpu_conv2d at byte %ld: %lu batch(es) read KPU rows %lu + %lu each and "
                       "write rows %lu + %lu each, past the 32768 rows of KPU RAM; %s",
                       (unsigned long)k->fi, k->at, (unsigned long)batches, (unsigned long)args.image_src_addr,
                       (unsigned long)in_rows, (unsigned long)args.image_dst_addr, (unsigned long)out_rows, redo);
    if (okpu_v5_next_step(cx, OKPU_STEP_KPU_CONV, K210_CONV2D, "kpu_conv2d", k->at, 152, &vargs) != OKPU_OK)
        return cx->err ? cx->err->code : OKPU_ERR_NO_MEM;
    if (vargs) {
        okpu_kpu_conv_args *a = (okpu_kpu_conv_args *)vargs;
        okpu_layer_info *I = &cx->m->layers[cx->nsteps - 1].info;
        uint32_t nchw[4];
        a->job.raw_args = p + 56;
        a->job.args = args;
        a->job.weights = okpu_v5_ptr(cx, &aw);
        a->job.bn = okpu_v5_ptr(cx, &abn);
        a->job.act = okpu_v5_ptr(cx, &aact);
        a->job.eight_bit = 1;
        a->job.main_out = NULL;
        a->job.layer = cx->nsteps - 1;
        a->job.batches = batches;
        a->job.in_rows = in_rows;
        a->job.out_rows = out_rows;
        map_out = (uint64_t)args.out_channels * args.out_height * args.out_width;
        nchw[0] = batches, nchw[1] = args.out_channels, nchw[2] = args.out_height, nchw[3] = args.out_width;
        set_out(cx, batches == 1 ? OKPU_MEM_KPU : OKPU_MEM_NONE, args.image_dst_addr, OKPU_DTYPE_U8, nchw,
                map_out * batches, okpu_sat_mul(okpu_kpu_args_macs(&args), batches));
        I->is_kpu = 1;
        I->wi = args.in_width, I->hi = args.in_height, I->chi = args.in_channels;
        I->wo = args.out_width, I->ho = args.out_height, I->cho = args.out_channels;
        I->depthwise = (int)args.depthwise, I->kernel_type = (int)args.kernel_type;
        I->pool_type = (int)args.pool_type;
        I->para_size = args.para_size;
        I->macs = okpu_sat_mul(okpu_kpu_args_macs(&args), batches);
        okpu_model_touch_kpu_rows(cx->m, args.image_src_addr, in_rows * batches);
        okpu_model_touch_kpu_rows(cx->m, args.image_dst_addr, out_rows * batches);
    }
    return OKPU_OK;
}

/* Lowest and highest element offsets of a strided 4-d walk, for the extent check. */
static uint64_t span4(const uint32_t *shape, const uint32_t *strides)
{
    uint64_t last = 0;
    uint32_t i;
    for (i = 0; i < 4; i++)
        last = okpu_sat_add(last, okpu_sat_mul((uint64_t)shape[i] - 1u, strides[i]));
    return okpu_sat_add(last, 1);
}

/* Bytes from a resolved range's start to the end of what it names: the bound tensor for input/output, else the pool. */
static uint64_t copy_room(const k210_call *k, const v5_range *r, const v5_addr *a)
{
    uint32_t i;
    if (r->loc == V5_LOC_INPUT || r->loc == V5_LOC_OUTPUT) {
        const uint32_t first = r->loc == V5_LOC_INPUT ? 0 : k->fn->ninputs;
        const uint32_t count = r->loc == V5_LOC_INPUT ? k->fn->ninputs : k->fn->noutputs;
        for (i = 0; i < count; i++)
            if (k->fn->io[first + i].r.start == r->start)
                return k->fn->io[first + i].r.size;
        return 0;
    }
    return okpu_v5_pool_size(k->cx, a) - a->off; /* resolve() checked off <= pool size */
}

static int copy(k210_call *k, const uint8_t *p)
{
    v5_cx *cx = k->cx;
    v5_range rin, rout;
    v5_addr ain, aout;
    uint32_t shape[4], is[4], os[4], i, esize;
    uint64_t elems = 1, in_bytes, out_bytes;
    void *vargs;
    int rc;
    rd_range(p + 4, &rin);
    rd_range(p + 16, &rout);
    for (i = 0; i < 4; i++) {
        shape[i] = okpu_rd_u32(p + 28 + 4 * i);
        is[i] = okpu_rd_u32(p + 44 + 4 * i);
        os[i] = okpu_rd_u32(p + 60 + 4 * i);
        elems = okpu_sat_mul(elems, shape[i]);
    }
    if ((rc = resolve(k, &rin, k->at + 4, "input", 0, &ain)) != OKPU_OK ||
        (rc = resolve(k, &rout, k->at + 16, "output", 1, &aout)) != OKPU_OK)
        return rc;
    esize = okpu_v5_dtype_size(rin.dt);
    if (!esize || rin.loc == V5_LOC_KPU || rout.loc == V5_LOC_KPU)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, k->at + 4,
                       "k210 function %lu, copy at byte %ld: from %s location %u to location %u; expected a known "
                       "datatype in main memory (not KPU RAM); %s",
                       (unsigned long)k->fi, k->at, okpu_v5_dtype_name(rin.dt), rin.loc, rout.loc, redo);
    if (elems == 0) {
        in_bytes = out_bytes = 0;
    } else {
        in_bytes = okpu_sat_mul(span4(shape, is), esize);
        out_bytes = okpu_sat_mul(span4(shape, os), esize);
    }
    for (i = 0; i < 4; i++)
        if (is[i] > 0x7FFFFFFFu || os[i] > 0x7FFFFFFFu)
            in_bytes = UINT64_MAX;
    /* nncase walks the strides from the range's start without looking at its size (a channel gathered with strides
     * spans more than the range says): bound the walk by the memory the range names */
    if (in_bytes > copy_room(k, &rin, &ain) || out_bytes > copy_room(k, &rout, &aout))
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, k->at + 28,
                       "k210 function %lu, copy at byte %ld: shape [%lu, %lu, %lu, %lu] with its strides spans %llu "
                       "bytes of input and %llu of output; the memory from the ranges' starts has %llu and %llu; %s",
                       (unsigned long)k->fi, k->at, (unsigned long)shape[0], (unsigned long)shape[1],
                       (unsigned long)shape[2], (unsigned long)shape[3], (unsigned long long)in_bytes,
                       (unsigned long long)out_bytes, (unsigned long long)copy_room(k, &rin, &ain),
                       (unsigned long long)copy_room(k, &rout, &aout), redo);
    if (okpu_v5_next_step(cx, OKPU_STEP_V5_COPY, K210_COPY, "copy", k->at, 76, &vargs) != OKPU_OK)
        return cx->err ? cx->err->code : OKPU_ERR_NO_MEM;
    if (vargs) {
        okpu_v5_copy_args *a = (okpu_v5_copy_args *)vargs;
        uint32_t off;
        okpu_mem_kind mem = main_place(cx, &aout, &off);
        a->src = okpu_v5_ptr(cx, &ain);
        a->dst = okpu_v5_ptr(cx, &aout);
        a->esize = esize;
        a->nd.rank = 4;
        for (i = 0; i < 4; i++) {
            a->nd.shape[i] = shape[i];
            a->nd.in_stride[i] = (int32_t)is[i];
            a->nd.out_stride[i] = (int32_t)os[i];
        }
        set_out(cx, mem, off, rin.dt == OKPU_V5_DT_F32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8, shape, out_bytes, elems);
    }
    return OKPU_OK;
}

int okpu_v5_k210_call(v5_cx *cx, uint32_t mi, uint32_t fi, const v5_addr *bound, long call_at)
{
    const v5_module *mod = &cx->f->mod[mi];
    const v5_func *fn;
    k210_call k;
    uint64_t pos, end;
    if (mod->kind != V5_MOD_K210 || fi >= mod->nfuncs)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, call_at,
                       "TENSOR.CALL at byte %ld calls module %lu function %lu: expected a function of a k210 module "
                       "(module %lu is \"%s\" with %lu functions); %s",
                       call_at, (unsigned long)mi, (unsigned long)fi, (unsigned long)mi, mod->type,
                       (unsigned long)mod->nfuncs, redo);
    fn = &mod->funcs[fi];
    memset(&k, 0, sizeof k);
    k.cx = cx;
    k.mi = mi;
    k.fi = fi;
    k.fn = fn;
    k.bound = bound;
    pos = (uint64_t)mod->text_off + fn->entry;
    end = pos + fn->text_size;
    while (pos < end) {
        const uint8_t *p = cx->m->data + pos;
        uint32_t op;
        int rc;
        if (end - pos < 4u)
            goto past_end;
        op = okpu_rd_u32(p);
        k.at = (long)pos;
        if (op > K210_COPY)
            return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                           "k210 function %lu at byte %ld: instruction word 0x%08lX; expected opcode 0 (kpu_upload), "
                           "1 (kpu_download), 2 (kpu_conv2d) or 3 (copy) with bytes 1..3 zero (nncase: "
                           "k210_illegal_instruction); %s",
                           (unsigned long)fi, (long)pos, (unsigned long)op, redo);
        k.name = k210_names[op];
        if (end - pos < k210_sizes[op])
            goto past_end;
        if (op == K210_UPLOAD || op == K210_DOWNLOAD)
            rc = updown(&k, p, op == K210_UPLOAD);
        else if (op == K210_CONV2D)
            rc = conv2d(&k, p);
        else
            rc = copy(&k, p);
        if (rc != OKPU_OK)
            return rc;
        pos += k210_sizes[op];
        continue;
    past_end:
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                       "k210 function %lu: the instruction at byte %llu (%s) runs past the end of the function's "
                       "code at byte %llu; expected instructions to end exactly at text_size; %s",
                       (unsigned long)fi, (unsigned long long)pos,
                       end - pos >= 4u && okpu_rd_u32(cx->m->data + pos) <= K210_COPY
                           ? k210_names[okpu_rd_u32(cx->m->data + pos)]
                           : "truncated",
                       (unsigned long long)end, redo);
    }
    return OKPU_OK;
}

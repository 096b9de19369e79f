// SPDX-License-Identifier: Apache-2.0
/* kmodel v5 (nncase 1.x, K210 target): the container (model header, modules, mempools, functions, sections) and the
 * driver of the two module front-ends. Facts: docs kmodel-v5.md sections 2-3.
 *
 * nncase's own loader trusts the file; this one checks every header, count, size, section and memory range against
 * the file and the pools before anything runs (section 2.7). The whole model becomes one flat plan: the entry stackvm
 * function's tensor instructions in order, with every TENSOR.CALL into the k210 module replaced by that k210
 * function's instructions bound to the caller's tensors (kmodel_v5_stackvm.c, kmodel_v5_k210.c). The main buffer
 * holds the entry function's input pool, its output pool and each module's data pool. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/bytes.h"
#include "../core/checked.h"
#include "kmodel_v5.h"

static const char v5_redo[] = "the file is truncated or corrupt - copy it again or recompile it with nncase 1.x";

uint32_t okpu_v5_dtype_size(uint32_t dt)
{
    static const uint8_t sizes[12] = {1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2};
    return dt < 12u ? sizes[dt] : 0u;
}

const char *okpu_v5_dtype_name(uint32_t dt)
{
    static const char *const names[12] = {"i8",  "i16", "i32", "i64", "u8",  "u16",
                                          "u32", "u64", "f16", "f32", "f64", "bf16"};
    return dt < 12u ? names[dt] : "unknown";
}

/* (okpu_v5_fail): not expanded by the terse macro; terse builds never call it. */
int(okpu_v5_fail)(const v5_cx *cx, int code, long where, const char *fmt, ...)
{
    char msg[sizeof(((okpu_error *)0)->message)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return okpu_fail(cx->err, code, cx->emit ? cx->nsteps - 1 : -1, where, "kmodel version 5 (nncase >= 1.0) %s",
                     msg);
}

uint64_t okpu_v5_pool_size(const v5_cx *cx, const v5_addr *a)
{
    switch (a->pool) {
    case V5_POOL_IN:
        return cx->f->mod[cx->f->entry_module].funcs[cx->f->entry_function].in_pool;
    case V5_POOL_OUT:
        return cx->f->mod[cx->f->entry_module].funcs[cx->f->entry_function].out_pool;
    case V5_POOL_RDATA:
        return cx->f->mod[a->module].rdata_size;
    case V5_POOL_DATA:
        return cx->f->mod[a->module].data_pool;
    case V5_POOL_KPU:
        return OKPU_KPU_RAM_SIZE;
    default:
        return 0;
    }
}

uint8_t *okpu_v5_ptr(const v5_cx *cx, const v5_addr *a)
{
    okpu_model *m = cx->m;
    switch (a->pool) {
    case V5_POOL_IN:
        return m->main_mem + cx->f->in_base + a->off;
    case V5_POOL_OUT:
        return m->main_mem + cx->f->out_base + a->off;
    case V5_POOL_RDATA: /* constants: the steps only read through these pointers */
        return (uint8_t *)(uintptr_t)(m->data + cx->f->mod[a->module].rdata_off + a->off);
    case V5_POOL_DATA:
        return m->main_mem + cx->f->mod[a->module].data_base + a->off;
    case V5_POOL_KPU:
        return m->kpu->ram + a->off;
    default:
        return NULL;
    }
}

int okpu_v5_next_step(v5_cx *cx, okpu_step_kind kind, uint32_t type, const char *name, long where, uint32_t bytes,
                 void **args)
{
    okpu_layer *L;
    int i = cx->nsteps++;
    *args = NULL;
    if (!cx->emit)
        return OKPU_OK;
    if (i >= cx->m->layer_count)
        return okpu_fail(cx->err, OKPU_ERR_UNKNOWN, -1, where, "internal: the v5 plan has more steps than counted");
    L = &cx->m->layers[i];
    L->type = type;
    L->body_offset = (uint32_t)where;
    L->body_size = bytes;
    L->info.index = i;
    L->info.type = type;
    L->info.type_name = name;
    L->info.body_offset = (uint32_t)where;
    L->info.body_size = bytes;
    L->info.para_size = bytes;
    L->info.output.layer = i;
    *args = okpu_model_add_step(cx->m, i, kind, 0, cx->err);
    return *args ? OKPU_OK : (cx->err ? cx->err->code : OKPU_ERR_NO_MEM);
}

/* ---- container ---- */

static void free_file(okpu_model *m, v5_file *f)
{
    uint32_t i, j;
    for (i = 0; i < f->nmodules && i < V5_MAX_MODULES; i++) {
        v5_module *mod = &f->mod[i];
        if (!mod->funcs)
            continue;
        for (j = 0; j < mod->nfuncs; j++) {
            v5_func *fn = &mod->funcs[j];
            okpu_model_free_mem(m, fn->io, (size_t)(fn->ninputs + fn->noutputs) * sizeof(v5_io));
        }
        okpu_model_free_mem(m, mod->funcs, (size_t)mod->nfuncs * sizeof(v5_func));
        mod->funcs = NULL;
    }
}

/* `need` bytes at `at` must lie inside [lo, hi) (a module or function blob inside the file). */
static int need(const v5_cx *cx, uint64_t at, uint64_t bytes, uint64_t hi, const char *what, const char *inside)
{
    if (at <= hi && bytes <= hi - at)
        return OKPU_OK;
    return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)at,
                   "%s at byte %llu: expected %llu bytes inside %s (which ends at byte %llu), found only %lld; %s",
                   what, (unsigned long long)at, (unsigned long long)bytes, inside, (unsigned long long)hi,
                   (long long)(at <= hi ? hi - at : 0), v5_redo);
}

static int parse_descs(const v5_cx *cx, const v5_module *mod, uint32_t mi, uint32_t fi, v5_func *fn, uint64_t pos,
                       uint64_t end)
{
    const uint8_t *d = cx->m->data;
    uint32_t group, k;
    for (group = 0; group < 2; group++) {
        const uint32_t first = group ? fn->ninputs : 0, count = group ? fn->noutputs : fn->ninputs;
        const uint32_t pool = group ? fn->out_pool : fn->in_pool;
        const char *kind = group ? "output" : "input";
        for (k = 0; k < count; k++) { /* the ranges */
            v5_io *io = &fn->io[first + k];
            OKPU_TRY(need(cx, pos, V5_RANGE_BYTES, end, "a function's memory_range", "its function blob"));
            io->r.loc = d[pos];
            io->r.dt = d[pos + 1];
            io->r.shared_module = (uint16_t)(d[pos + 2] | (d[pos + 3] << 8));
            io->r.start = okpu_rd_u32(d + pos + 4);
            io->r.size = okpu_rd_u32(d + pos + 8);
            if (io->r.loc != (group ? V5_LOC_OUTPUT : V5_LOC_INPUT))
                return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                               "module %lu (%s) function %lu %s %lu: memory_range at byte %llu has location %u, "
                               "expected %u (%s); %s",
                               (unsigned long)mi, mod->type, (unsigned long)fi, kind, (unsigned long)k,
                               (unsigned long long)pos, io->r.loc, group ? V5_LOC_OUTPUT : V5_LOC_INPUT, kind, v5_redo);
            if (!okpu_v5_dtype_size(io->r.dt))
                return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos + 1,
                               "module %lu function %lu %s %lu: datatype code %u at byte %llu is not one of nncase's "
                               "0..11 (i8 .. bf16); %s",
                               (unsigned long)mi, (unsigned long)fi, kind, (unsigned long)k, io->r.dt,
                               (unsigned long long)pos + 1, v5_redo);
            if (io->r.start > pool || io->r.size > pool - io->r.start)
                return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos + 4,
                               "module %lu function %lu %s %lu at byte %llu: range %lu + %lu bytes ends past the "
                               "function's %s pool of %lu bytes; %s",
                               (unsigned long)mi, (unsigned long)fi, kind, (unsigned long)k,
                               (unsigned long long)pos + 4, (unsigned long)io->r.start, (unsigned long)io->r.size,
                               kind, (unsigned long)pool, v5_redo);
            pos += V5_RANGE_BYTES;
        }
        for (k = 0; k < count; k++) { /* the shapes */
            v5_io *io = &fn->io[first + k];
            uint64_t elems = 1;
            uint32_t r;
            OKPU_TRY(need(cx, pos, 4, end, "a shape's rank", "its function blob"));
            io->rank = okpu_rd_u32(d + pos);
            if (io->rank > OKPU_V5_MAX_RANK)
                return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                               "module %lu function %lu %s %lu: shape rank %lu at byte %llu; expected at most %u "
                               "dimensions; %s",
                               (unsigned long)mi, (unsigned long)fi, kind, (unsigned long)k, (unsigned long)io->rank,
                               (unsigned long long)pos, OKPU_V5_MAX_RANK, v5_redo);
            OKPU_TRY(need(cx, pos + 4, 4u * (uint64_t)io->rank, end, "a shape's dimensions", "its function blob"));
            for (r = 0; r < io->rank; r++) {
                io->dims[r] = okpu_rd_u32(d + pos + 4 + 4 * r);
                if (okpu_mul_ovf(elems, io->dims[r], OKPU_SIZE_LIMIT, &elems))
                    elems = OKPU_SIZE_LIMIT + 1u;
            }
            if (elems > OKPU_SIZE_LIMIT || elems * okpu_v5_dtype_size(io->r.dt) > io->r.size)
                return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                               "module %lu function %lu %s %lu: its shape at byte %llu holds %llu %s elements, more "
                               "than the %lu bytes of its memory range; %s",
                               (unsigned long)mi, (unsigned long)fi, kind, (unsigned long)k, (unsigned long long)pos,
                               (unsigned long long)elems, okpu_v5_dtype_name(io->r.dt), (unsigned long)io->r.size,
                               v5_redo);
            pos += 4 + 4u * (uint64_t)io->rank;
        }
    }
    return OKPU_OK;
}

static int parse_module(v5_cx *cx, v5_file *f, uint32_t mi, uint64_t off)
{
    okpu_model *m = cx->m;
    const uint8_t *d = m->data;
    v5_module *mod = &f->mod[mi];
    uint32_t version, hsize, mempools, shared, sections, functions, k;
    uint64_t end, pos;
    int seen[256];

    memset(seen, 0, sizeof seen);
    mod->off = (long)off;
    mod->rdata_off = mod->text_off = -1;
    mod->data_pool_at = -1;
    OKPU_TRY(need(cx, off, V5_MODULE_HEADER_BYTES, m->size, "a 48-byte module header", "the file"));
    memcpy(mod->type, d + off, 16);
    mod->type[16] = 0;
    for (k = 0; k < 16 && mod->type[k]; k++) /* the name goes into messages: keep them printable */
        if (mod->type[k] < 0x20 || mod->type[k] > 0x7E)
            mod->type[k] = '?';
    if (memchr(d + off, 0, 16) == NULL)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)off,
                       "module %lu header at byte %llu: its 16-byte type name is not NUL-terminated; %s",
                       (unsigned long)mi, (unsigned long long)off, v5_redo);
    version = okpu_rd_u32(d + off + 16);
    hsize = okpu_rd_u32(d + off + 20);
    mod->size = okpu_rd_u32(d + off + 24);
    mempools = okpu_rd_u32(d + off + 28);
    shared = okpu_rd_u32(d + off + 32);
    sections = okpu_rd_u32(d + off + 36);
    functions = okpu_rd_u32(d + off + 40);
    if (strcmp(mod->type, "stackvm") == 0)
        mod->kind = V5_MOD_STACKVM;
    else if (strcmp(mod->type, "k210") == 0)
        mod->kind = V5_MOD_K210;
    else
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_VERSION, (long)off,
                       "module %lu at byte %llu has type \"%s\": expected \"stackvm\" or \"k210\", the modules of "
                       "nncase's K210 target; this model was compiled for another target - recompile it with "
                       "target='k210'",
                       (unsigned long)mi, (unsigned long long)off, mod->type);
    if (version != 1u || hsize != V5_MODULE_HEADER_BYTES)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_VERSION, (long)off + 16,
                       "module %lu (%s) at byte %llu: version %lu, header_size %lu; expected version 1 and "
                       "header_size 48 (every nncase 1.x release); recompile the model with a released nncase 1.x",
                       (unsigned long)mi, mod->type, (unsigned long long)off, (unsigned long)version,
                       (unsigned long)hsize);
    if (mod->size < V5_MODULE_HEADER_BYTES || mod->size > m->size - off)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)off + 24,
                       "module %lu (%s) at byte %llu: size %lu at byte %llu; expected 48 .. %llu (to the end of the "
                       "file); %s",
                       (unsigned long)mi, mod->type, (unsigned long long)off, (unsigned long)mod->size,
                       (unsigned long long)off + 24, (unsigned long long)(m->size - off), v5_redo);
    end = off + mod->size;
    if (shared != 0u)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_VERSION, (long)off + 32,
                       "module %lu (%s) at byte %llu declares %lu shared mempools: expected 0 (no nncase 1.x K210 "
                       "model uses them); this runtime does not support shared mempools - recompile the model with "
                       "nncase 1.x for target k210",
                       (unsigned long)mi, mod->type, (unsigned long long)off, (unsigned long)shared);
    if (mempools > 8u || functions > (mod->size - V5_MODULE_HEADER_BYTES) / V5_FUNCTION_HEADER_BYTES ||
        sections > (mod->size - V5_MODULE_HEADER_BYTES) / V5_SECTION_HEADER_BYTES)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)off + 28,
                       "module %lu (%s) at byte %llu: %lu mempools, %lu sections, %lu functions do not fit its %lu "
                       "bytes (expected at most 8 mempools, 32 bytes per section and per function); %s",
                       (unsigned long)mi, mod->type, (unsigned long long)off, (unsigned long)mempools,
                       (unsigned long)sections, (unsigned long)functions, (unsigned long)mod->size, v5_redo);
    pos = off + V5_MODULE_HEADER_BYTES;
    for (k = 0; k < mempools; k++, pos += 8) {
        uint32_t loc, size;
        OKPU_TRY(need(cx, pos, 8, end, "a mempool descriptor", "its module"));
        loc = d[pos];
        size = okpu_rd_u32(d + pos + 4);
        if (seen[loc]++)
            return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                           "module %lu (%s) mempool %lu at byte %llu: location %lu is declared twice; %s",
                           (unsigned long)mi, mod->type, (unsigned long)k, (unsigned long long)pos,
                           (unsigned long)loc, v5_redo);
        if (loc == V5_LOC_RDATA)
            mod->rdata_pool = size;
        else if (loc == V5_LOC_DATA)
            mod->data_pool = size, mod->data_pool_at = (long)pos + 4;
        else if (loc == V5_LOC_KPU && mod->kind == V5_MOD_K210 && size <= OKPU_KPU_RAM_SIZE)
            mod->kpu_pool = size;
        else
            return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                           "module %lu (%s) mempool %lu at byte %llu: location %lu with %lu bytes; expected 2 "
                           "(rdata), 3 (data) or, in a k210 module, 64 (kpu, at most 2097152 bytes); %s",
                           (unsigned long)mi, mod->type, (unsigned long)k, (unsigned long long)pos,
                           (unsigned long)loc, (unsigned long)size, v5_redo);
    }
    mod->nfuncs = functions;
    if (functions) {
        mod->funcs = (v5_func *)okpu_model_alloc(m, (size_t)functions * sizeof(v5_func));
        if (!mod->funcs)
            return okpu_fail(cx->err, OKPU_ERR_NO_MEM, -1, (long)off, "out of memory reading the %lu functions of "
                             "module %lu; free other models", (unsigned long)functions, (unsigned long)mi);
    }
    for (k = 0; k < functions; k++) {
        v5_func *fn = &mod->funcs[k];
        uint32_t fh, fsize;
        uint64_t fend;
        fn->off = (long)pos;
        OKPU_TRY(need(cx, pos, V5_FUNCTION_HEADER_BYTES, end, "a 32-byte function header", "its module"));
        fh = okpu_rd_u32(d + pos);
        fsize = okpu_rd_u32(d + pos + 4);
        fn->in_pool = okpu_rd_u32(d + pos + 8);
        fn->out_pool = okpu_rd_u32(d + pos + 12);
        fn->ninputs = okpu_rd_u32(d + pos + 16);
        fn->noutputs = okpu_rd_u32(d + pos + 20);
        fn->entry = okpu_rd_u32(d + pos + 24);
        fn->text_size = okpu_rd_u32(d + pos + 28);
        if (fh != V5_FUNCTION_HEADER_BYTES || fsize < V5_FUNCTION_HEADER_BYTES || fsize > end - pos)
            return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                           "module %lu (%s) function %lu header at byte %llu: header_size %lu, size %lu; expected "
                           "header_size 32 and a size of 32 .. %llu (to the end of the module); %s",
                           (unsigned long)mi, mod->type, (unsigned long)k, (unsigned long long)pos,
                           (unsigned long)fh, (unsigned long)fsize, (unsigned long long)(end - pos), v5_redo);
        fend = pos + fsize;
        if (fn->ninputs > V5_MAX_IO || fn->noutputs > V5_MAX_IO)
            return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos + 16,
                           "module %lu (%s) function %lu at byte %llu: %lu inputs and %lu outputs; expected at most "
                           "%u each; %s",
                           (unsigned long)mi, mod->type, (unsigned long)k, (unsigned long long)pos,
                           (unsigned long)fn->ninputs, (unsigned long)fn->noutputs, V5_MAX_IO, v5_redo);
        if (fn->ninputs + fn->noutputs) {
            fn->io = (v5_io *)okpu_model_alloc(m, (size_t)(fn->ninputs + fn->noutputs) * sizeof(v5_io));
            if (!fn->io)
                return okpu_fail(cx->err, OKPU_ERR_NO_MEM, -1, (long)pos,
                                 "out of memory reading the descriptors of module %lu function %lu",
                                 (unsigned long)mi, (unsigned long)k);
        }
        OKPU_TRY(parse_descs(cx, mod, mi, k, fn, pos + V5_FUNCTION_HEADER_BYTES, fend));
        pos = fend;
    }
    for (k = 0; k < sections; k++) {
        char name[17];
        uint32_t flags, bstart, bsize;
        uint64_t body;
        OKPU_TRY(need(cx, pos, V5_SECTION_HEADER_BYTES, end, "a 32-byte section header", "its module"));
        memcpy(name, d + pos, 16);
        name[16] = 0;
        flags = okpu_rd_u32(d + pos + 16);
        bstart = okpu_rd_u32(d + pos + 20);
        bsize = okpu_rd_u32(d + pos + 24);
        if (flags & 1u) { /* merged into .rdata: no bytes of its own */
            if (mod->rdata_off < 0 || bstart > mod->rdata_size || bsize > mod->rdata_size - bstart)
                return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, (long)pos,
                               "module %lu (%s) section \"%s\" at byte %llu is merged into .rdata at %lu + %lu "
                               "bytes, outside the module's .rdata (%lu bytes); %s",
                               (unsigned long)mi, mod->type, name, (unsigned long long)pos, (unsigned long)bstart,
                               (unsigned long)bsize, (unsigned long)mod->rdata_size, v5_redo);
            body = (uint64_t)mod->rdata_off + bstart;
            pos += V5_SECTION_HEADER_BYTES;
        } else {
            body = pos + V5_SECTION_HEADER_BYTES + (uint64_t)bstart;
            OKPU_TRY(need(cx, pos + V5_SECTION_HEADER_BYTES, (uint64_t)bstart + bsize, end,
                          "a section's padding and body", "its module"));
            pos = body + bsize;
        }
        if (strcmp(name, ".rdata") == 0) {
            mod->rdata_off = (long)body;
            mod->rdata_size = bsize;
        } else if (strcmp(name, ".text") == 0) {
            mod->text_off = (long)body;
            mod->text_size = bsize;
        }
    }
    if (mod->rdata_size != mod->rdata_pool)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, mod->rdata_off >= 0 ? mod->rdata_off : (long)off,
                       "module %lu (%s): its .rdata section has %lu bytes, its rdata mempool declares %lu; expected "
                       "the same; %s",
                       (unsigned long)mi, mod->type, (unsigned long)mod->rdata_size, (unsigned long)mod->rdata_pool,
                       v5_redo);
    for (k = 0; k < functions; k++) {
        const v5_func *fn = &mod->funcs[k];
        if (fn->entry > mod->text_size || fn->text_size > mod->text_size - fn->entry)
            return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, fn->off + 24,
                           "module %lu (%s) function %lu at byte %ld: code at .text + %lu, %lu bytes; expected it "
                           "inside the module's .text of %lu bytes; %s",
                           (unsigned long)mi, mod->type, (unsigned long)k, fn->off, (unsigned long)fn->entry,
                           (unsigned long)fn->text_size, (unsigned long)mod->text_size, v5_redo);
    }
    return OKPU_OK;
}

static int add_pool(v5_cx *cx, uint64_t *at, uint32_t size, uint32_t *base)
{
    uint64_t a = (*at + 7u) & ~(uint64_t)7u;
    if (a + size > OKPU_SIZE_LIMIT)
        return okpu_v5_fail(cx, OKPU_ERR_NO_MEM, 0, "pools need more than 4 GiB of memory; %s", v5_redo);
    *base = (uint32_t)a;
    *at = a + size;
    return OKPU_OK;
}

static int parse_file(v5_cx *cx, v5_file *f)
{
    okpu_model *m = cx->m;
    const uint8_t *d = m->data;
    uint64_t off = V5_HEADER_BYTES, at = 0;
    uint32_t i, largest;
    const v5_func *entry;

    memset(f, 0, sizeof *f);
    cx->f = f;
    if (m->size < V5_HEADER_BYTES)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, 0,
                       "file (version 5) of %lu bytes: expected at least the 32-byte model header; %s",
                       (unsigned long)m->size, v5_redo);
    f->alignment = okpu_rd_u32(d + 16);
    f->nmodules = okpu_rd_u32(d + 20);
    f->entry_module = okpu_rd_u32(d + 24);
    f->entry_function = okpu_rd_u32(d + 28);
    if (f->nmodules == 0 || f->nmodules > V5_MAX_MODULES)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, 20,
                       "model header (version 5) at byte 20: %lu modules; expected 1 .. %u (K210 models have a "
                       "stackvm and a k210 module); %s",
                       (unsigned long)f->nmodules, V5_MAX_MODULES, v5_redo);
    for (i = 0; i < f->nmodules; i++) {
        OKPU_TRY(parse_module(cx, f, i, off));
        off += f->mod[i].size;
    }
    if (f->entry_module >= f->nmodules || f->entry_function >= f->mod[f->entry_module].nfuncs)
        return okpu_v5_fail(cx, OKPU_ERR_KMODEL_FORMAT, 24,
                       "model header (version 5) at byte 24: entry module %lu, function %lu; expected a module below "
                       "%lu and a function it has; %s",
                       (unsigned long)f->entry_module, (unsigned long)f->entry_function, (unsigned long)f->nmodules,
                       v5_redo);
    entry = &f->mod[f->entry_module].funcs[f->entry_function];
    if (entry->ninputs > OKPU_MAX_IO || entry->noutputs > OKPU_MAX_IO || entry->ninputs == 0 ||
        entry->noutputs == 0)
        return okpu_v5_fail(cx, OKPU_ERR_NOT_IMPLEMENT, entry->off + 16,
                       "entry function at byte %ld: %lu inputs, %lu outputs; this runtime runs models with 1 .. %d "
                       "of each",
                       entry->off, (unsigned long)entry->ninputs, (unsigned long)entry->noutputs, OKPU_MAX_IO);
    OKPU_TRY(add_pool(cx, &at, entry->in_pool, &f->in_base));
    OKPU_TRY(add_pool(cx, &at, entry->out_pool, &f->out_base));
    largest = entry->in_pool, f->main_largest_at = entry->off + 8;
    if (entry->out_pool > largest)
        largest = entry->out_pool, f->main_largest_at = entry->off + 12;
    for (i = 0; i < f->nmodules; i++) {
        OKPU_TRY(add_pool(cx, &at, f->mod[i].data_pool, &f->mod[i].data_base));
        if (f->mod[i].data_pool > largest)
            largest = f->mod[i].data_pool, f->main_largest_at = f->mod[i].data_pool_at;
    }
    f->main_size = (uint32_t)at;
    return OKPU_OK;
}

/* ---- the format interface ---- */

/* The parsed container lives in m->format_state from read_header to the end of decode (model.c frees it through
 * format_free when the load fails in between): the file is parsed once. */
static void v5_free_state(okpu_model *m)
{
    v5_file *f = (v5_file *)m->format_state;
    if (!f)
        return;
    free_file(m, f);
    okpu_model_free_mem(m, f, sizeof *f);
    m->format_state = NULL;
    m->format_free = NULL;
}

static int v5_read_header(okpu_model *m, okpu_error *err)
{
    v5_file *f = (v5_file *)okpu_model_alloc(m, sizeof(v5_file));
    v5_cx cx;
    int rc;
    if (!f)
        return okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "out of memory reading the kmodel v5 container (%lu bytes)",
                         (unsigned long)sizeof(v5_file));
    m->format_state = f;
    m->format_free = v5_free_state;
    memset(&cx, 0, sizeof cx);
    cx.m = m;
    cx.err = err;
    rc = parse_file(&cx, f);
    if (rc != OKPU_OK) {
        v5_free_state(m);
        return rc;
    }
    m->main_mem_size = f->main_size;
    m->main_mem_from = "the main buffer it needs (the entry function's input and output pools and each module's "
                       "data pool; the largest pool's size is at this byte)";
    m->main_mem_from_at = f->main_largest_at;
    return OKPU_OK;
}

static okpu_dtype api_dtype(uint32_t dt)
{
    return dt == OKPU_V5_DT_F32 ? OKPU_DTYPE_F32 : OKPU_DTYPE_U8;
}

static int describe_io(v5_cx *cx, const v5_func *fn)
{
    okpu_model *m = cx->m;
    uint32_t k;
    for (k = 0; k < fn->ninputs + fn->noutputs; k++) {
        const v5_io *io = &fn->io[k];
        const int is_out = k >= fn->ninputs;
        okpu_place *p = is_out ? &m->outputs[k - fn->ninputs] : &m->inputs[k];
        uint32_t dims[4] = {1, 1, 1, 1}, r;
        uint64_t elems = 1;
        if (io->r.dt != OKPU_V5_DT_F32 && io->r.dt != OKPU_V5_DT_U8)
            return okpu_v5_fail(cx, OKPU_ERR_NOT_IMPLEMENT, fn->off,
                           "the model's %s %lu is %s: this runtime exchanges u8 and f32 tensors only; recompile with "
                           "input_type / output_type uint8 or float32",
                           is_out ? "output" : "input", (unsigned long)(is_out ? k - fn->ninputs : k),
                           okpu_v5_dtype_name(io->r.dt));
        for (r = 0; r < io->rank; r++) {
            elems *= io->dims[r];
            if (r < 4)
                dims[r] = io->dims[r];
            else
                dims[3] *= io->dims[r]; /* fold the rest into the last (bounded by the range check) */
        }
        p->mem = OKPU_MEM_MAIN;
        p->offset = (is_out ? cx->f->out_base : cx->f->in_base) + io->r.start;
        p->t.dtype = api_dtype(io->r.dt);
        p->t.n = dims[0], p->t.c = dims[1], p->t.h = dims[2], p->t.w = dims[3];
        p->t.bytes = (uint32_t)(elems * okpu_v5_dtype_size(io->r.dt));
        p->t.layer = -1; /* outputs: set once the plan is built */
    }
    m->input_count = (int)fn->ninputs;
    m->output_count = (int)fn->noutputs;
    return OKPU_OK;
}

static int run_entry(v5_cx *cx)
{
    const v5_file *f = cx->f;
    const v5_module *mod = &f->mod[f->entry_module];
    cx->nsteps = 0;
    if (mod->kind == V5_MOD_STACKVM)
        return okpu_v5_stackvm_run(cx, f->entry_module, f->entry_function);
    {
        /* a k210 entry function: its tensors are the model's pools, each at its descriptor's start */
        const v5_func *fn = &mod->funcs[f->entry_function];
        v5_addr bound[2 * V5_MAX_IO];
        uint32_t k;
        for (k = 0; k < fn->ninputs + fn->noutputs; k++) {
            bound[k].pool = k < fn->ninputs ? V5_POOL_IN : V5_POOL_OUT;
            bound[k].module = 0;
            bound[k].off = fn->io[k].r.start;
        }
        return okpu_v5_k210_call(cx, f->entry_module, f->entry_function, bound, fn->off);
    }
}

static int v5_decode(okpu_model *m, okpu_error *err)
{
    const v5_file *f = (const v5_file *)m->format_state; /* read_header parsed the container */
    v5_cx cx;
    int rc;
    if (!f)
        return okpu_fail(err, OKPU_ERR_UNKNOWN, -1, -1, "internal: kmodel v5 decode without its header");
    memset(&cx, 0, sizeof cx);
    cx.m = m;
    cx.err = err;
    cx.f = f;
    rc = describe_io(&cx, &f->mod[f->entry_module].funcs[f->entry_function]);
    if (rc == OKPU_OK && f->mod[f->entry_module].kind == V5_MOD_STACKVM)
        rc = okpu_v5_stackvm_detect(&cx, f->entry_module);
    if (rc == OKPU_OK)
        rc = run_entry(&cx); /* count */
    if (rc == OKPU_OK && cx.nsteps == 0)
        rc = okpu_v5_fail(&cx, OKPU_ERR_KMODEL_FORMAT, f->mod[f->entry_module].funcs[f->entry_function].off,
                     "entry function has no tensor instruction: nothing to run; %s", v5_redo);
    if (rc == OKPU_OK)
        rc = okpu_model_alloc_layers(m, cx.nsteps, err);
    if (rc == OKPU_OK) {
        int k;
        cx.emit = 1;
        rc = run_entry(&cx);
        for (k = 0; k < m->output_count; k++)
            m->outputs[k].t.layer = m->layer_count - 1;
    }
    v5_free_state(m);
    return rc;
}

const okpu_format okpu_format_v5 = {"kmodel v5 (nncase 1.x)", 5, v5_read_header, v5_decode};

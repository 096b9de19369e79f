// SPDX-License-Identifier: Apache-2.0
/* The generic driver behind okpu.h: format detection, the main buffer, the KPU backend, running, outputs.
 * Format readers (kmodel_v3.c, kmodel_v4.c) validate and describe the file; everything here is format-neutral. */
#include <string.h>

#include "../core/alloc.h"
#include "../core/bytes.h"
#include "../core/checked.h"
#include "../core/error.h"
#include "../core/workers.h"
#include "../kpu/kpu_layout.h"
#include "model.h"

#define KMDL_MAGIC 0x4B4D444Cu /* bytes "LDMK" */
#define LDMS_MAGIC 0x534D444Cu /* bytes "LDMS": encrypted MaixPy model */
#define LDME_MAGIC 0x454D444Cu /* bytes "LDME": encrypted MaixPy model */

static const char recompile_hint[] =
    "openkpu runs kmodel v3 (nncase v0.1.x, Maix-EMC), v4 (nncase v0.2.x) and v5 (released nncase 1.x; MaixPy "
    "itself runs only v3 and v4); recompile the model with nncase v0.1, v0.2 or 1.x for the K210";

void okpu_options_default(okpu_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->conv_offset = OKPU_CONV_OFFSET_PER_CHANNEL;
    opts->act_round = OKPU_ROUND_HALF_EVEN;
    opts->v3_quant_round = OKPU_ROUND_SDK_CARRY;
    opts->v4_quant_round = OKPU_ROUND_HALF_UP;
    opts->mean_border = OKPU_MEAN_BORDER_REPLICATE;
    opts->backend = OKPU_BACKEND_EMULATOR;
    opts->allocator = NULL;
}

/* ---- helpers for the format readers ---- */

void *okpu_model_alloc(okpu_model *m, size_t size)
{
    void *p = okpu_alloc(m->opts.allocator, size);
    if (p)
        m->ctx_alloc_bytes += size ? size : 1;
    return p;
}

void okpu_model_free_mem(okpu_model *m, void *ptr, size_t size)
{
    if (!ptr)
        return;
    okpu_free(m->opts.allocator, ptr, size);
    size = size ? size : 1;
    m->ctx_alloc_bytes = m->ctx_alloc_bytes >= size ? m->ctx_alloc_bytes - size : 0;
}

void *okpu_model_add_step(okpu_model *m, int layer, okpu_step_kind kind, size_t tail, okpu_error *err)
{
    okpu_step *s = &m->layers[layer].step;
    size_t fixed = okpu_step_table[kind].args_size;
    uint64_t bytes;
    /* the per-layer record bound of okpu_model_alloc_layers relies on this (a KPU convolution's body is larger) */
    if (kind != OKPU_STEP_KPU_CONV && fixed > OKPU_LAYER_STATE_MAX) {
        okpu_fail(err, OKPU_ERR_UNKNOWN, layer, (long)m->layers[layer].body_offset,
                  "internal: the %s step's arguments (%lu bytes) exceed OKPU_LAYER_STATE_MAX", okpu_step_name(kind),
                  (unsigned long)fixed);
        return NULL;
    }
    if (okpu_add_ovf(fixed, tail, OKPU_SIZE_LIMIT, &bytes)) {
        okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, layer, (long)m->layers[layer].body_offset,
                  "layer %d: its step would take more than the address space", layer);
        return NULL;
    }
    s->args = okpu_model_alloc(m, (size_t)bytes);
    if (!s->args) {
        okpu_fail(err, OKPU_ERR_NO_MEM, layer, (long)m->layers[layer].body_offset,
                  "out of memory decoding layer %d (%s): its step takes %lu bytes; free other models or use a smaller "
                  "model",
                  layer, okpu_step_name(kind), (unsigned long)bytes);
        return NULL;
    }
    s->kind = kind;
    s->args_bytes = (uint32_t)bytes;
    return s->args;
}

int okpu_model_alloc_layers(okpu_model *m, int count, okpu_error *err)
{
    size_t bytes;
    if (count < 0 || (size_t)count > ((size_t)-1) / sizeof(okpu_layer))
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, -1, "layer count %d is not valid", count);
    bytes = (size_t)count * sizeof(okpu_layer);
    /* Per-layer records (this table and a reader's decoded body, at most OKPU_LAYER_STATE_MAX each) must stay in
     * proportion to the file: a file of 100,000 near-empty 24-byte layers would otherwise take 14-27x its size. */
    if ((uint64_t)count * (sizeof(okpu_layer) + OKPU_LAYER_STATE_MAX) >
        OKPU_LAYER_RECORD_RATIO * (uint64_t)m->size + OKPU_LAYER_RECORD_SLACK)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, -1, -1,
                         "the model declares %d layers in %lu bytes: their records would take %llu bytes, more than "
                         "%ux the file + %u bytes; a real model's layers carry weights or tables, so the file is "
                         "corrupt - copy or recompile it",
                         count, (unsigned long)m->size,
                         (unsigned long long)count * (sizeof(okpu_layer) + OKPU_LAYER_STATE_MAX),
                         OKPU_LAYER_RECORD_RATIO, OKPU_LAYER_RECORD_SLACK);
    m->layers = (okpu_layer *)okpu_model_alloc(m, bytes);
    if (!m->layers)
        return okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1,
                         "out of memory allocating the table of %d layers (%lu bytes); free other models or use a "
                         "smaller model",
                         count, (unsigned long)bytes);
    m->layer_count = count;
    return OKPU_OK;
}

void okpu_model_touch_kpu_rows(okpu_model *m, uint32_t row, uint32_t count)
{
    uint32_t r, end;
    if (!m->kpu_row_map || row >= OKPU_KPU_RAM_ROWS)
        return;
    end = count > OKPU_KPU_RAM_ROWS - row ? OKPU_KPU_RAM_ROWS : row + count;
    for (r = row; r < end; r++)
        m->kpu_row_map[r >> 3] |= (uint8_t)(1u << (r & 7u));
}

static const char *layer_name(const okpu_model *m, int layer)
{
    if (layer >= 0 && layer < m->layer_count && m->layers && m->layers[layer].info.type_name)
        return m->layers[layer].info.type_name;
    return "?";
}

int okpu_model_check_main(const okpu_model *m, int layer, long file_offset, const char *what, uint64_t offset,
                          uint64_t size, okpu_error *err)
{
    if (offset <= m->main_mem_size && size <= (uint64_t)m->main_mem_size - offset)
        return OKPU_OK;
    if (layer >= 0)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, layer, file_offset,
                         "layer %d (%s), field at byte %ld: %s at main-buffer offset %llu + %llu bytes ends at %llu, "
                         "past the main buffer (main_mem_usage %lu bytes in the header); the file is corrupt or was "
                         "written by an incompatible compiler — recompile or copy it again",
                         layer, layer_name(m, layer), file_offset, what, (unsigned long long)offset,
                         (unsigned long long)size, (unsigned long long)(offset + size),
                         (unsigned long)m->main_mem_size);
    return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, layer, file_offset,
                     "header at byte %ld: %s at main-buffer offset %llu + %llu bytes ends at %llu, past the main "
                     "buffer (main_mem_usage %lu bytes); the file is corrupt — copy it again",
                     file_offset, what, (unsigned long long)offset, (unsigned long long)size,
                     (unsigned long long)(offset + size), (unsigned long)m->main_mem_size);
}

/* ---- load / free ---- */

static int identify(const uint8_t *data, size_t size, int *version, okpu_error *err)
{
    uint32_t magic;
    if (!data || size == 0)
        return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 0,
                         "the model is empty (0 bytes): expected a kmodel file starting with 03 00 00 00 (v3) or "
                         "\"LDMK\" (v4); check the path / flash address and copy the file again");
    if (size < 4)
        return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 0,
                         "the model is only %lu bytes, too short for any kmodel header (v3 needs 28, v4 40); the "
                         "file is truncated — copy it again",
                         (unsigned long)size);
    magic = okpu_rd_u32(data);
    if (magic == 3u) {
        *version = 3;
        return OKPU_OK;
    }
    if (magic == KMDL_MAGIC) {
        uint32_t v;
        if (size < 8)
            return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 4,
                             "\"LDMK\" (KMDL) file of %lu bytes ends before its version field at byte 4; the file "
                             "is truncated — copy it again",
                             (unsigned long)size);
        v = okpu_rd_u32(data + 4);
        if (v == 4u) {
            *version = 4;
            return OKPU_OK;
        }
        if (v == 5u) {
            /* nncase 1.x (kmodel-v5.md section 1): the released layout has header_size 32 at byte 8; development
             * builds before 2021-08-18 wrote another layout (flags there) that no released runtime loads */
            uint32_t hs;
            if (size < 12)
                return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 8,
                                 "kmodel version 5 (\"LDMK\" + 5) file of %lu bytes ends before its header_size "
                                 "field at byte 8 (expected 32); the file is truncated - copy it again",
                                 (unsigned long)size);
            hs = okpu_rd_u32(data + 8);
            if (hs != 32u)
                return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 8,
                                 "kmodel version 5 (nncase >= 1.0) header at byte 8: expected header_size 32 "
                                 "(every released nncase 1.x), found %lu: this is a pre-release / development-build "
                                 "v5 file (nncase development builds before v1.0.0-beta1, 2021-08-18, wrote a "
                                 "different layout that no released nncase runtime loads); recompile the model with a "
                                 "released nncase 1.x (e.g. nncase 1.9.0) or with nncase v0.2 for kmodel v4",
                                 (unsigned long)hs);
            *version = 5;
            return OKPU_OK;
        }
        if (v > 5u)
            return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 4,
                             "kmodel version %lu (\"LDMK\" + version at byte 4): newer than the v5 that nncase 1.x "
                             "writes for the K210; %s",
                             (unsigned long)v, recompile_hint);
        return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 4,
                         "\"LDMK\" (KMDL) file with unknown version %lu at byte 4 (expected 4); %s",
                         (unsigned long)v, recompile_hint);
    }
    if (magic == 1u)
        return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 0,
                         "first u32 is 1: an old 2018 model-compiler (\"v1\", kpu_model_load_from_buffer) file, not a "
                         "kmodel; %s",
                         recompile_hint);
    if (magic == 0x12345678u)
        return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 0,
                         "first u32 is 0x12345678: the oldest raw model-compiler format, not a kmodel; %s",
                         recompile_hint);
    if (magic == 10003u || magic == LDMS_MAGIC || magic == LDME_MAGIC)
        return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 0,
                         "first u32 is %s: an encrypted MaixPy model (.smodel/.emodel); openkpu cannot decrypt it — "
                         "use the original unencrypted .kmodel",
                         magic == 10003u ? "10003" : magic == LDMS_MAGIC ? "\"LDMS\"" : "\"LDME\"");
    return okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 0,
                     "not a kmodel: first bytes %02X %02X %02X %02X (version %lu); expected 03 00 00 00 (v3) or "
                     "4C 44 4D 4B \"LDMK\" + version 4 (v4); the file is not a model or is corrupt",
                     data[0], data[1], data[2], data[3], (unsigned long)magic);
}

/* Sum the layers' work (each at least 1: a layer costs its dispatch even when empty) and refuse the model at the
 * first layer that takes the total past the budget, before anything is allocated for running it. */
static int check_work_budget(okpu_model *m, okpu_error *err)
{
    uint64_t limit = m->opts.max_work ? m->opts.max_work : OKPU_DEFAULT_MAX_WORK, total = 0;
    int i;
    for (i = 0; i < m->layer_count; i++) {
        okpu_layer_info *I = &m->layers[i].info;
        if (I->work == 0)
            I->work = 1;
        total = okpu_sat_add(total, I->work);
        if (total > limit)
            return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, i, (long)m->layers[i].body_offset,
                             "layer %d (%s) body at byte %lu: its work of %llu operations (multiply-accumulates or "
                             "elements touched) brings the model's total to %llu, past the work limit of %llu; the "
                             "file is corrupt, or a model this large is meant - then raise the limit "
                             "(_kpu.Model(data, max_work=N); okpu_options.max_work in C)",
                             i, I->type_name ? I->type_name : "?", (unsigned long)m->layers[i].body_offset,
                             (unsigned long long)I->work, (unsigned long long)total, (unsigned long long)limit);
    }
    m->mem.work = total;
    m->mem.max_work = limit;
    return OKPU_OK;
}

static uint32_t count_rows(const uint8_t *map, uint32_t *lo, uint32_t *hi)
{
    uint32_t r, n = 0;
    *lo = OKPU_KPU_RAM_ROWS;
    *hi = 0;
    for (r = 0; r < OKPU_KPU_RAM_ROWS; r++)
        if (map[r >> 3] & (1u << (r & 7u))) {
            n++;
            if (r < *lo)
                *lo = r;
            *hi = r + 1;
        }
    return n;
}

/* Let the backend take, at load, what each KPU layer needs, so that running never allocates; and mark the layers
 * that read the output of the KPU layer run just before them (okpu_kpu_layer_job.follows_producer). */
static int prepare_backend(okpu_model *m, okpu_error *err)
{
    int i, rc;
    for (i = 0; i < m->layer_count; i++) {
        okpu_layer *L = &m->layers[i];
        okpu_kpu_layer_job *job;
        if (L->step.kind != OKPU_STEP_KPU_CONV)
            continue;
        job = &((okpu_kpu_conv_args *)L->step.args)->job;
        job->follows_producer =
            i > 0 && m->layers[i - 1].step.kind == OKPU_STEP_KPU_CONV &&
            okpu_kpu_reads_output_of(&((const okpu_kpu_conv_args *)m->layers[i - 1].step.args)->job, job);
        if (m->kpu->prepare && (rc = m->kpu->prepare(m->kpu, job, err)) != OKPU_OK)
            return rc;
    }
    return OKPU_OK;
}

/* The KPU layer a step's side chain runs beside (okpu_kpu_conv_args.beside), or 0. */
static int beside_of(const okpu_step *s)
{
    return s->kind == OKPU_STEP_KPU_CONV ? ((const okpu_kpu_conv_args *)s->args)->beside : 0;
}

/* Side chains (okpu_kpu_backend.run_beside): each KPU layer followed, past main-memory steps only, by another KPU
 * layer asks the backend whether the two may overlap. Called once the layers are prepared. */
static int plan_side_chains(okpu_model *m, okpu_error *err)
{
    int i, j, rc;
    if (!m->kpu->prepare_beside || !m->kpu->run_beside || !m->kpu->run_side)
        return OKPU_OK;
    for (i = 0; i < m->layer_count; i++) {
        if (m->layers[i].step.kind != OKPU_STEP_KPU_CONV)
            continue;
        for (j = i + 1; j < m->layer_count && okpu_step_main_memory_only(m->layers[j].step.kind); j++)
            ;
        if (j == m->layer_count || m->layers[j].step.kind != OKPU_STEP_KPU_CONV)
            continue;
        rc = m->kpu->prepare_beside(m->kpu, &((const okpu_kpu_conv_args *)m->layers[i].step.args)->job,
                                    &((const okpu_kpu_conv_args *)m->layers[j].step.args)->job, err);
        if (rc < 0)
            return err && err->code != OKPU_OK ? err->code : OKPU_ERR_NO_MEM;
        if (rc > 0) {
            ((okpu_kpu_conv_args *)m->layers[i].step.args)->beside = j;
            i = j - 1; /* (the next KPU layer runs in this pair: it starts no chain of its own) */
        }
    }
    return OKPU_OK;
}

/* The KPU layer run with a step's as a pair (okpu_kpu_conv_args.paired), or 0. */
static int paired_of(const okpu_step *s)
{
    return s->kind == OKPU_STEP_KPU_CONV ? ((const okpu_kpu_conv_args *)s->args)->paired : 0;
}

/* Pairs (okpu_kpu_backend.run_pair): each KPU layer followed directly by a KPU layer that reads its output asks the
 * backend whether the two run together; neither may already be in a side chain. Called after plan_side_chains. */
static int plan_pairs(okpu_model *m, okpu_error *err)
{
    int i, rc, chained = 0; /* the last layer a side chain runs beside */
    if (!m->kpu->prepare_pair || !m->kpu->run_pair)
        return OKPU_OK;
    for (i = 0; i + 1 < m->layer_count; i++) {
        okpu_kpu_conv_args *first, *second;
        if (beside_of(&m->layers[i].step) > chained)
            chained = beside_of(&m->layers[i].step);
        if (m->layers[i].step.kind != OKPU_STEP_KPU_CONV || m->layers[i + 1].step.kind != OKPU_STEP_KPU_CONV ||
            i == chained || beside_of(&m->layers[i].step) || beside_of(&m->layers[i + 1].step))
            continue;
        first = (okpu_kpu_conv_args *)m->layers[i].step.args;
        second = (okpu_kpu_conv_args *)m->layers[i + 1].step.args;
        rc = m->kpu->prepare_pair(m->kpu, &first->job, &second->job, err);
        if (rc < 0)
            return err && err->code != OKPU_OK ? err->code : OKPU_ERR_NO_MEM;
        if (rc > 0) {
            first->paired = i + 1;
            i++; /* (the second runs in this pair: it starts none of its own) */
        }
    }
    return OKPU_OK;
}

static void account_memory(okpu_model *m)
{
    m->mem.context_bytes = sizeof *m + m->ctx_alloc_bytes;
    m->mem.sram_total = m->mem.model_alloc + m->mem.main_mem + m->mem.context_bytes;
    m->mem.backend_scratch = m->kpu ? m->kpu->scratch_bytes : 0;
}

okpu_model *okpu_model_load(const uint8_t *data, size_t size, const okpu_options *opts, okpu_error *err)
{
    okpu_options o;
    okpu_model *m;
    int version = 0, rc, i;
    const okpu_format *fmt;

    okpu_error_clear(err);
    if (opts)
        o = *opts;
    else
        okpu_options_default(&o);

    if (identify(data, size, &version, err) != OKPU_OK)
        return NULL;
    fmt = okpu_find_format(version);
    if (!fmt) {
        okpu_fail(err, OKPU_ERR_KMODEL_VERSION, -1, 0,
                  "kmodel v%d is recognised but this build of openkpu has no reader for it; rebuild openkpu "
                  "with its kmodel_v%d reader",
                  version, version);
        return NULL;
    }

    m = (okpu_model *)okpu_alloc(o.allocator, sizeof *m);
    if (!m) {
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "out of memory allocating the model context (%lu bytes)",
                  (unsigned long)sizeof *m);
        return NULL;
    }
    memset(m, 0, sizeof *m);
    m->opts = o;
    m->format = fmt;
    m->data = data;
    m->size = size;
    m->version = version;

    m->kpu_row_map = (uint8_t *)okpu_model_alloc(m, OKPU_KPU_RAM_ROWS / 8u);
    if (!m->kpu_row_map) {
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "out of memory allocating the KPU row map (%u bytes)",
                  OKPU_KPU_RAM_ROWS / 8u);
        goto fail;
    }

    rc = fmt->read_header(m, err);
    if (rc == OKPU_OK)
        rc = okpu_model_check_main_budget(m, err);
    if (rc != OKPU_OK)
        goto fail;

    /* The plan's pointers are resolved while decoding: the main buffer and the KPU RAM exist first. */
    m->main_mem = (uint8_t *)okpu_alloc(m->opts.allocator, m->main_mem_size ? m->main_mem_size : 1u);
    if (!m->main_mem) {
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1,
                  "out of memory allocating the main buffer: the model needs %lu bytes (main_mem_usage); free other "
                  "models or use a smaller model",
                  (unsigned long)m->main_mem_size);
        goto fail;
    }
    m->kpu = okpu_kpu_backend_create(&m->opts, err);
    if (!m->kpu) {
        if (err && err->code == OKPU_OK)
            okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "could not create the KPU backend (2 MiB KPU RAM)");
        goto fail;
    }

    rc = fmt->decode(m, err);
    if (rc == OKPU_OK)
        rc = check_work_budget(m, err);
    if (rc == OKPU_OK)
        rc = prepare_backend(m, err);
    if (rc == OKPU_OK)
        rc = plan_side_chains(m, err);
    if (rc == OKPU_OK)
        rc = plan_pairs(m, err);
    if (rc != OKPU_OK)
        goto fail;

    /* memory accounting */
    m->mem.model_bytes = size;
    m->mem.model_alloc = size + OKPU_MODEL_ALIGN_SLACK;
    m->mem.main_mem = m->main_mem_size;
    account_memory(m);
    m->mem.kpu_rows_used = count_rows(m->kpu_row_map, &m->mem.kpu_row_lo, &m->mem.kpu_row_hi);
    m->mem.kpu_macs = 0;
    for (i = 0; i < m->layer_count; i++)
        m->mem.kpu_macs += m->layers[i].info.macs;
    return m;

fail:
    okpu_model_free(m);
    return NULL;
}

void okpu_model_free(okpu_model *m)
{
    const okpu_allocator *a;
    int i;
    if (!m)
        return;
    a = m->opts.allocator;
    if (m->layers) {
        for (i = 0; i < m->layer_count; i++)
            okpu_model_free_mem(m, m->layers[i].step.args, m->layers[i].step.args_bytes);
        okpu_model_free_mem(m, m->layers, (size_t)m->layer_count * sizeof(okpu_layer));
        m->layers = NULL;
    }
    if (m->format_free)
        m->format_free(m);
    if (m->kpu && m->kpu->destroy)
        m->kpu->destroy(m->kpu);
    m->kpu = NULL;
    okpu_free(a, m->main_mem, m->main_mem_size ? m->main_mem_size : 1u);
    okpu_model_free_mem(m, m->scratch, m->scratch_size);
    okpu_model_free_mem(m, m->kpu_row_map, OKPU_KPU_RAM_ROWS / 8u);
    okpu_free(a, m, sizeof *m);
}

int okpu_model_version(const okpu_model *m)
{
    return m ? m->version : 0;
}

const okpu_options *okpu_model_options(const okpu_model *m)
{
    return m ? &m->opts : NULL;
}

/* ---- inputs ---- */

int okpu_model_input_count(const okpu_model *m)
{
    return m ? m->input_count : 0;
}

int okpu_model_input(const okpu_model *m, int index, okpu_tensor *out)
{
    if (!m || index < 0 || index >= m->input_count)
        return OKPU_ERR_IDX_OUTRANGE;
    if (out)
        *out = m->inputs[index].t;
    return OKPU_OK;
}

static const char *dtype_name(okpu_dtype d)
{
    return d == OKPU_DTYPE_F32 ? "float32" : "uint8";
}

int okpu_model_set_input(okpu_model *m, int index, const void *data, size_t size, okpu_error *err)
{
    const okpu_place *in;
    if (!m)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "no model");
    if (index < 0 || index >= m->input_count)
        return okpu_fail(err, OKPU_ERR_IDX_OUTRANGE, -1, -1, "input index %d out of range: the model has %d input%s",
                         index, m->input_count, m->input_count == 1 ? "" : "s");
    in = &m->inputs[index];
    if (!data || size != in->t.bytes)
        return okpu_fail(err, OKPU_ERR_SIZE_NOTMATCH, -1, -1,
                         "input %d size mismatch: expected %lu bytes (%s, shape n=%lu c=%lu h=%lu w=%lu), got %lu "
                         "bytes; resize the image / vector to exactly that shape",
                         index, (unsigned long)in->t.bytes, dtype_name(in->t.dtype), (unsigned long)in->t.n,
                         (unsigned long)in->t.c, (unsigned long)in->t.h, (unsigned long)in->t.w,
                         (unsigned long)(data ? size : 0));
    switch (in->mem) {
    case OKPU_MEM_MAIN:
        memcpy(m->main_mem + in->offset, data, size); /* range validated at load */
        return OKPU_OK;
    case OKPU_MEM_KPU:
        if (!m->kpu || !m->kpu->ram)
            return okpu_fail(err, OKPU_ERR_RUN_MODEL, -1, -1, "the KPU backend exposes no RAM to upload input %d",
                             index);
        okpu_kpu_layout_upload(m->kpu->ram, in->offset, (const uint8_t *)data, in->t.w, in->t.h, in->t.c);
        return OKPU_OK;
    default:
        return okpu_fail(err, OKPU_ERR_NOT_IMPLEMENT, -1, -1, "input %d lives in memory kind %d, which cannot be set",
                         index, (int)in->mem);
    }
}

/* ---- running ---- */

/* A run stopped after layer n-1 leaves its output where that layer wrote it; in KPU RAM it is copied out densely so
 * that okpu_model_output can point at it. That copy is the only memory a partial run needs beyond a full one; it is
 * taken here, before the run (bindings call this from set_layers), never during it. */
int okpu_model_reserve_partial(okpu_model *m, int n_layers, okpu_error *err)
{
    const okpu_place *p;
    uint8_t *copy;
    if (!m)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "no model");
    if (n_layers <= 0 || n_layers >= m->layer_count)
        return OKPU_OK; /* a full run */
    p = &m->layers[n_layers - 1].out;
    if (p->mem != OKPU_MEM_KPU || p->t.bytes <= m->scratch_size)
        return OKPU_OK;
    copy = (uint8_t *)okpu_model_alloc(m, p->t.bytes);
    if (!copy)
        return okpu_fail(err, OKPU_ERR_NO_MEM, n_layers - 1, (long)m->layers[n_layers - 1].body_offset,
                         "out of memory allocating %lu bytes to copy layer %d's output (%s, in KPU RAM) out after a "
                         "run stopped there; free other models or stop at another layer",
                         (unsigned long)p->t.bytes, n_layers - 1, layer_name(m, n_layers - 1));
    okpu_model_free_mem(m, m->scratch, m->scratch_size);
    m->scratch = copy;
    m->scratch_size = p->t.bytes;
    account_memory(m);
    return OKPU_OK;
}

typedef struct side_chain {
    okpu_model *m;
    int first, end; /* the side job's layer, and the layer the chain runs beside */
    int failed;     /* the layer that failed, or -1 */
    int rc;
    okpu_error err;
} side_chain;

/* The side job, then the main-memory steps after it, on the calling thread (no backend: CPU steps share no
 * workers from inside another layer's task). */
static void run_side_chain(void *p)
{
    side_chain *c = (side_chain *)p;
    okpu_model *m = c->m;
    okpu_run_ctx ctx;
    int i;
    c->failed = c->first;
    c->rc = m->kpu->run_side(m->kpu, &((const okpu_kpu_conv_args *)m->layers[c->first].step.args)->job, &c->err);
    ctx.kpu = NULL;
    for (i = c->first + 1; i < c->end && c->rc == OKPU_OK; i++) {
        const okpu_step *s = &m->layers[i].step;
        c->failed = i;
        ctx.layer = i;
        ctx.body_offset = (long)m->layers[i].body_offset;
        c->rc = okpu_step_table[s->kind].run(&ctx, s->args, &c->err);
    }
    if (c->rc == OKPU_OK)
        c->failed = -1;
}

static int run_failed(const okpu_model *m, int i, int rc, okpu_error *err)
{
    if (err && err->code == OKPU_OK)
        okpu_fail(err, OKPU_ERR_RUN_MODEL, i, (long)m->layers[i].body_offset, "layer %d (%s) failed to run", i,
                  layer_name(m, i));
    return err ? err->code : rc;
}

/* A timed run's clock: the time since `t` goes to layer_ns[layer] at the end of each step, and with task_ns, the time
 * the pool's threads spent in tasks since `tasks` to task_ns[layer]. */
typedef struct step_clock {
    okpu_clock_fn now; /* NULL: the run is not timed */
    void *ctx;
    uint64_t t;
    uint64_t *layer_ns;
    okpu_workers *pool; /* NULL: no tasks to time */
    uint64_t tasks;
    uint64_t *task_ns;
} step_clock;

static void time_step(step_clock *c, int layer)
{
    uint64_t t1;

    if (!c->now)
        return;
    t1 = c->now(c->ctx);
    c->layer_ns[layer] += t1 - c->t;
    c->t = t1;
    if (c->task_ns) {
        const uint64_t tasks = okpu_workers_task_ns(c->pool);
        c->task_ns[layer] += tasks - c->tasks;
        c->tasks = tasks;
    }
}

/* The one runner: every format's plan runs here, step by step (timed when clock->now is given). */
static int run_steps(okpu_model *m, int n_layers, step_clock *clock, okpu_error *err)
{
    int i, rc;
    okpu_run_ctx ctx;
    if (n_layers <= 0 || n_layers > m->layer_count)
        n_layers = m->layer_count;
    m->ran_layers = 0;
    m->partial = 0;
    rc = okpu_model_reserve_partial(m, n_layers, err); /* nothing to do when the caller reserved it already */
    if (rc != OKPU_OK)
        return rc;
    ctx.kpu = m->kpu;
    if (m->kpu && m->kpu->wakes_workers)
        okpu_workers_wake(m->kpu->workers); /* awake by the first split, not woken by it */
    if (clock->now)
        clock->t = clock->now(clock->ctx);
    for (i = 0; i < n_layers; i++) {
        const okpu_step *s = &m->layers[i].step;
        const int next = beside_of(s);
        if (next > i && next < n_layers) {
            side_chain c;
            memset(&c, 0, sizeof c);
            c.m = m;
            c.first = i;
            c.end = next;
            c.failed = -1;
            okpu_error_clear(&c.err);
            rc = m->kpu->run_beside(m->kpu, &((const okpu_kpu_conv_args *)m->layers[next].step.args)->job,
                                    &((const okpu_kpu_conv_args *)s->args)->job, run_side_chain, &c, err);
            if (c.failed >= 0) {
                if (err)
                    *err = c.err;
                return run_failed(m, c.failed, c.rc, err);
            }
            if (rc != OKPU_OK)
                return run_failed(m, next, rc, err);
            time_step(clock, i); /* the whole chain and the layer beside it */
            i = next;
            continue;
        }
        if (paired_of(s) == i + 1 && i + 1 < n_layers) {
            rc = m->kpu->run_pair(m->kpu, &((const okpu_kpu_conv_args *)s->args)->job,
                                  &((const okpu_kpu_conv_args *)m->layers[i + 1].step.args)->job, err);
            if (rc != OKPU_OK)
                return run_failed(m, i, rc, err);
            time_step(clock, i); /* both layers of the pair */
            i++;
            continue;
        }
        ctx.layer = i;
        ctx.body_offset = (long)m->layers[i].body_offset;
        rc = okpu_step_table[s->kind].run(&ctx, s->args, err);
        if (rc != OKPU_OK)
            return run_failed(m, i, rc, err);
        time_step(clock, i);
    }
    if (n_layers < m->layer_count) {
        const okpu_place *p = &m->layers[n_layers - 1].out;
        if (p->mem == OKPU_MEM_KPU)
            okpu_kpu_layout_download(m->kpu->ram, p->offset, m->scratch, p->t.w, p->t.h, p->t.c);
        m->partial = 1;
        time_step(clock, n_layers - 1); /* the copy out is the last layer's output */
    }
    m->ran_layers = n_layers;
    return OKPU_OK;
}

/* run_steps with the arguments checked, the times zeroed and, for task times, the pool's task timing on for the run. */
static int run_plan(okpu_model *m, int n_layers, okpu_clock_fn now, void *clock_ctx, uint64_t *layer_ns,
                    uint64_t *task_ns, okpu_error *err)
{
    step_clock clock;
    int i, rc;

    okpu_error_clear(err);
    if (!m)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "no model");
    if (now && !layer_ns)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "a timed run needs an array of layer times");
    memset(&clock, 0, sizeof clock);
    clock.now = now;
    clock.ctx = clock_ctx;
    clock.layer_ns = layer_ns;
    clock.task_ns = task_ns;
    clock.pool = task_ns && m->kpu ? m->kpu->workers : NULL;
    for (i = 0; (layer_ns || task_ns) && i < m->layer_count; i++) {
        if (layer_ns)
            layer_ns[i] = 0;
        if (task_ns)
            task_ns[i] = 0;
    }
    okpu_workers_time_tasks(clock.pool, now, clock_ctx);
    rc = run_steps(m, n_layers, &clock, err);
    okpu_workers_time_tasks(clock.pool, NULL, NULL);
    return rc;
}

int okpu_model_run(okpu_model *m, int n_layers, okpu_error *err)
{
    return run_plan(m, n_layers, NULL, NULL, NULL, NULL, err);
}

int okpu_model_run_timed(okpu_model *m, int n_layers, okpu_clock_fn now, void *clock_ctx, uint64_t *layer_ns,
                         okpu_error *err)
{
    if (!now)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "a timed run needs a clock");
    return run_plan(m, n_layers, now, clock_ctx, layer_ns, NULL, err);
}

int okpu_model_run_profiled(okpu_model *m, int n_layers, okpu_clock_fn now, void *clock_ctx, uint64_t *layer_ns,
                            uint64_t *task_ns, okpu_error *err)
{
    if (!now)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "a profiled run needs a clock");
    if (!task_ns)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "a profiled run needs an array of task times");
    return run_plan(m, n_layers, now, clock_ctx, layer_ns, task_ns, err);
}

void okpu_model_caller_only(okpu_model *m, int on)
{
    if (m && m->kpu)
        okpu_workers_caller_only(m->kpu->workers, on);
}

int okpu_model_output_count(const okpu_model *m)
{
    return m ? m->output_count : 0;
}

int okpu_model_check_main_budget(const okpu_model *m, okpu_error *err)
{
    if (m->main_mem_size <= OKPU_BOARD_SRAM_SIZE)
        return OKPU_OK;
    return okpu_fail(err, OKPU_ERR_NO_MEM, -1, m->main_mem_from_at,
                     "kmodel v%d at byte %ld: %s is %lu bytes, more than the K210's whole %u-byte SRAM; the model "
                     "cannot run on the chip (or the file is corrupt)",
                     m->version, m->main_mem_from_at, m->main_mem_from ? m->main_mem_from : "its main buffer",
                     (unsigned long)m->main_mem_size, OKPU_BOARD_SRAM_SIZE);
}

int okpu_model_output_info(const okpu_model *m, int index, okpu_tensor *out)
{
    if (!m || index < 0 || index >= m->output_count)
        return OKPU_ERR_IDX_OUTRANGE;
    if (out)
        *out = m->outputs[index].t;
    return OKPU_OK;
}

int okpu_model_output(const okpu_model *m, int index, okpu_tensor *out, const uint8_t **data, okpu_error *err)
{
    const okpu_place *p;
    if (!m)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "no model");
    if (index < 0 || index >= (m->partial ? 1 : m->output_count))
        return okpu_fail(err, OKPU_ERR_IDX_OUTRANGE, -1, -1,
                         m->partial ? "output index %d out of range: after a partial run (set_layers) only output 0 "
                                      "(the last layer run) exists; %d outputs after a full run"
                                    : "output index %d out of range: the model has %d output(s)",
                         index, m->output_count);
    if (m->ran_layers == 0)
        return okpu_fail(err, OKPU_ERR_RUN_MODEL, -1, -1,
                         "forward has not run: there is no output %d yet; set the input and run the model first",
                         index);
    p = m->partial ? &m->layers[m->ran_layers - 1].out : &m->outputs[index];
    if (out)
        *out = p->t;
    if (data) {
        if (p->mem == OKPU_MEM_KPU)
            *data = m->scratch;
        else if (p->mem == OKPU_MEM_MAIN)
            *data = m->main_mem + p->offset;
        else
            *data = NULL;
    }
    return OKPU_OK;
}

/* ---- description ---- */

int okpu_model_layer_count(const okpu_model *m)
{
    return m ? m->layer_count : 0;
}

int okpu_model_layer_info(const okpu_model *m, int index, okpu_layer_info *out)
{
    if (!m || index < 0 || index >= m->layer_count)
        return OKPU_ERR_IDX_OUTRANGE;
    if (out)
        *out = m->layers[index].info;
    return OKPU_OK;
}

int okpu_model_beside(const okpu_model *m, int index)
{
    const int next = m && index >= 0 && index < m->layer_count ? beside_of(&m->layers[index].step) : 0;
    return next > 0 ? next : -1;
}

int okpu_model_paired(const okpu_model *m, int index)
{
    const int next = m && index >= 0 && index < m->layer_count ? paired_of(&m->layers[index].step) : 0;
    return next > 0 ? next : -1;
}

void okpu_model_memory(const okpu_model *m, okpu_memory_info *out)
{
    if (!out)
        return;
    if (!m) {
        memset(out, 0, sizeof *out);
        out->kpu_row_lo = OKPU_KPU_RAM_ROWS;
        return;
    }
    *out = m->mem;
}

const uint8_t *okpu_model_kpu_ram(const okpu_model *m)
{
    if (!m || !m->kpu)
        return NULL;
    return m->kpu->ram;
}

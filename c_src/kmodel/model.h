// SPDX-License-Identifier: Apache-2.0
/* The loaded model, shared by the format front-ends (kmodel_v3.c, kmodel_v4.c) and the generic driver (model.c).
 * A front-end reads its header, then decodes and validates the whole file once into the execution plan
 * (plan/plan.h: one step per layer) and fills inputs and outputs; the driver owns the main buffer, the KPU backend,
 * the plan's memory, running and output access. */
#ifndef OKPU_KMODEL_MODEL_H
#define OKPU_KMODEL_MODEL_H

#include "../okpu.h"
#include "../kpu/kpu_backend.h"
#include "../plan/plan.h"

typedef enum okpu_mem_kind {
    OKPU_MEM_NONE = 0,
    OKPU_MEM_MAIN = 1, /* byte offset into the main buffer */
    OKPU_MEM_KPU = 2,  /* KPU RAM, `offset` is a 64-byte row, data in KPU layout (w, h, c of the tensor) */
    OKPU_MEM_CONST = 3 /* v4 constants blob, byte offset */
} okpu_mem_kind;

/* A tensor and where it lives. */
typedef struct okpu_place {
    okpu_tensor t;
    okpu_mem_kind mem;
    uint32_t offset;
} okpu_place;

typedef struct okpu_layer {
    uint32_t type;        /* v3 layer type / v4 opcode */
    uint32_t body_offset; /* absolute file offset */
    uint32_t body_size;   /* declared size (may include unwritten alignment padding) */
    okpu_layer_info info; /* filled by decode(): netinfo fields, macs, work, output */
    okpu_place out;       /* where this layer's output lives (output of a run stopped after it) */
    okpu_step step;       /* what running it does (okpu_model_add_step) */
} okpu_layer;

typedef struct okpu_format okpu_format;

#define OKPU_MAX_IO 16

struct okpu_model {
    const okpu_format *format;
    okpu_options opts;
    const uint8_t *data; /* the model file (not owned) */
    size_t size;
    int version;
    uint32_t flags; /* v3: bit0 = 8-bit weights */

    int layer_count;
    okpu_layer *layers;

    int input_count;
    okpu_place inputs[OKPU_MAX_IO];
    int output_count;
    okpu_place outputs[OKPU_MAX_IO];

    uint32_t main_mem_size;
    uint8_t *main_mem;
    okpu_kpu_backend *kpu;

    /* run state */
    int ran_layers;  /* layers executed by the last run; 0 = never ran */
    int partial;     /* last run stopped early: output 0 is layers[ran_layers-1].out */
    uint8_t *scratch; /* dense copy of a KPU-RAM output after a partial run (okpu_model_reserve_partial) */
    size_t scratch_size;

    uint8_t *kpu_row_map; /* OKPU_KPU_RAM_ROWS / 8 bytes: rows any layer touches (accounting) */
    okpu_memory_info mem;  /* computed at load */
    void *format_state;   /* format-specific (e.g. v4 constants pointer) */
    void (*format_free)(okpu_model *m); /* frees format_state if a load fails between read_header and decode */
    const char *main_mem_from; /* what main_mem_size is, for the budget message (read_header sets both) */
    long main_mem_from_at;     /* ... and the file offset that sets it */
    size_t ctx_alloc_bytes; /* bytes currently allocated through okpu_model_alloc (context accounting) */
};

struct okpu_format {
    const char *name;
    int version;
    /* Validate the header against the file; set main_mem_size (and anything else decode needs from it). */
    int (*read_header)(okpu_model *m, okpu_error *err);
    /* With the main buffer and the KPU backend in place: validate every layer against the file and the memory it
     * will touch and turn it into a step (okpu_model_alloc_layers, okpu_model_add_step) with every pointer
     * resolved; fill inputs, outputs, per-layer info and KPU rows. */
    int (*decode)(okpu_model *m, okpu_error *err);
};

extern const okpu_format okpu_format_v3;
extern const okpu_format okpu_format_v4;

/* The reader for a file's format version (3, 4), or NULL when the core has none (formats.c). */
const okpu_format *okpu_find_format(int version);

/* Bound on per-layer memory: layer_count x (sizeof(okpu_layer) + OKPU_LAYER_STATE_MAX) may not exceed
 * OKPU_LAYER_RECORD_RATIO x the file size + OKPU_LAYER_RECORD_SLACK (okpu_model_alloc_layers). Every step's
 * arguments but a KPU convolution's (whose file body is larger) stay under OKPU_LAYER_STATE_MAX (okpu_model_add_step
 * refuses more); a variable tail must be paid for by at least as many bytes of the layer's body. */
#define OKPU_LAYER_STATE_MAX 160u
#define OKPU_LAYER_RECORD_RATIO 4u
#define OKPU_LAYER_RECORD_SLACK (256u * 1024u)

/* Helpers for the format readers. */
int okpu_model_alloc_layers(okpu_model *m, int count, okpu_error *err);
void *okpu_model_alloc(okpu_model *m, size_t size); /* zeroed, via the model's allocator */
/* Give layer `layer` its step: zeroed arguments of the kind's size plus `tail` bytes (a variable part the caller
 * bounded by the body it reads it from). Returns the arguments, or NULL with err set. */
void *okpu_model_add_step(okpu_model *m, int layer, okpu_step_kind kind, size_t tail, okpu_error *err);
/* Main-buffer pointer of a validated offset. */
#define OKPU_MAIN(m, off) ((m)->main_mem + (off))
void okpu_model_free_mem(okpu_model *m, void *ptr, size_t size);

/* OKPU_ERR_NO_MEM when main_mem_size exceeds the K210's whole SRAM, naming the field each format's read_header gave
 * in main_mem_from / main_mem_from_at. */
int okpu_model_check_main_budget(const okpu_model *m, okpu_error *err);

/* Mark KPU RAM rows [row, row+count) as used by the model (memory accounting). */
void okpu_model_touch_kpu_rows(okpu_model *m, uint32_t row, uint32_t count);

/* Check that [offset, offset+size) lies inside the main buffer; message names the layer and what it is. */
int okpu_model_check_main(const okpu_model *m, int layer, long file_offset, const char *what, uint64_t offset,
                          uint64_t size, okpu_error *err);

#endif

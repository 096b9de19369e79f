// SPDX-License-Identifier: Apache-2.0
/* The loaded model, shared by the format readers (kmodel_v3.c, kmodel_v4.c) and the generic driver (model.c).
 * A format reader validates the whole file in parse() and fills layers, inputs and outputs; the driver owns the
 * main buffer, the KPU backend, running and output access. */
#ifndef OKPU_KMODEL_MODEL_H
#define OKPU_KMODEL_MODEL_H

#include "../okpu.h"
#include "../kpu/kpu_backend.h"

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
    const void *op;       /* the format's op-table entry */
    okpu_layer_info info; /* filled by parse(): netinfo fields, macs, output */
    okpu_place out;       /* where this layer's output lives (output of a run stopped after it) */
    void *state;          /* format-specific decoded body (or NULL), freed by the format's free_layer */
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
    kpu_backend *kpu;

    /* run state */
    int ran_layers;  /* layers executed by the last run; 0 = never ran */
    int partial;     /* last run stopped early: output 0 is layers[ran_layers-1].out */
    uint8_t *scratch; /* dense copy of a KPU-RAM output */
    size_t scratch_size;

    uint8_t *kpu_row_map; /* OKPU_KPU_RAM_ROWS / 8 bytes: rows any layer touches (accounting) */
    okpu_memory_info mem;  /* computed at load */
    void *format_state;   /* format-specific (e.g. v4 constants pointer) */
    size_t ctx_alloc_bytes; /* bytes currently allocated through okpu_model_alloc (context accounting) */
};

struct okpu_format {
    const char *name;
    int version;
    /* Validate everything against the file and the memory it will touch; fill layers (allocate via
     * okpu_model_alloc_layers), inputs, outputs, main_mem_size, per-layer info and kpu rows. */
    int (*parse)(okpu_model *m, okpu_error *err);
    /* Run one layer. Inputs are already in place. */
    int (*run_layer)(okpu_model *m, int index, okpu_error *err);
    /* Release layer->state (may be NULL). */
    void (*free_layer)(okpu_model *m, okpu_layer *layer);
};

extern const okpu_format okpu_format_v3;
extern const okpu_format okpu_format_v4;

/* The reader for a file's format version (3, 4), or NULL when the core has none (formats.c). */
const okpu_format *okpu_find_format(int version);

/* Bound on per-layer memory: layer_count x (sizeof(okpu_layer) + OKPU_LAYER_STATE_MAX) may not exceed
 * OKPU_LAYER_RECORD_RATIO x the file size + OKPU_LAYER_RECORD_SLACK (okpu_model_alloc_layers). The v3 reader's
 * records of non-KPU layers stay under OKPU_LAYER_STATE_MAX; the v4 reader keeps none. */
#define OKPU_LAYER_STATE_MAX 160u
#define OKPU_LAYER_RECORD_RATIO 4u
#define OKPU_LAYER_RECORD_SLACK (256u * 1024u)

/* Helpers for the format readers. */
int okpu_model_alloc_layers(okpu_model *m, int count, okpu_error *err);
void *okpu_model_alloc(okpu_model *m, size_t size); /* zeroed, via the model's allocator */
void okpu_model_free_mem(okpu_model *m, void *ptr, size_t size);

/* OKPU_ERR_NO_MEM when main_mem_size exceeds the K210's whole SRAM (the size sits at header byte 20 in v3 and v4). */
int okpu_model_check_main_budget(const okpu_model *m, okpu_error *err);

/* Mark KPU RAM rows [row, row+count) as used by the model (memory accounting). */
void okpu_model_touch_kpu_rows(okpu_model *m, uint32_t row, uint32_t count);

/* Check that [offset, offset+size) lies inside the main buffer; message names the layer and what it is. */
int okpu_model_check_main(const okpu_model *m, int layer, long file_offset, const char *what, uint64_t offset,
                          uint64_t size, okpu_error *err);

#endif

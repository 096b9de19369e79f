// SPDX-License-Identifier: Apache-2.0
/* The KPU engine behind one interface. Two backends implement it: the software emulator (kpu_emu.c) and, on the
 * board, the K210 hardware (same 12 layer-argument words in, same bytes out). Callers never know which runs. */
#ifndef OKPU_KPU_BACKEND_H
#define OKPU_KPU_BACKEND_H

#include "../core/workers.h"
#include "../okpu.h"
#include "kpu_args.h"

typedef struct okpu_kpu_layer_job {
    const uint8_t *raw_args; /* the 96 bytes as stored in the model (address fields of the file ignored) */
    okpu_kpu_args args;           /* the same, decoded */
    const uint8_t *weights;  /* u8 (8-bit mode) or little-endian u16 weights, okpu_kpu_weights_bytes() long */
    const uint8_t *bn;       /* out_channels x 8 bytes */
    const uint8_t *act;      /* 144 bytes */
    int eight_bit;           /* 1: 8-bit weights, 0: 16-bit */
    uint8_t *main_out;       /* NULL, or where the output is also copied densely (dma_total_byte + 1 bytes) */
    int layer;               /* index in the model, for messages */
    /* A layer run over several maps (kmodel v4 and v5 batches; v3: 1): batch b reads rows image_src_addr + b x in_rows,
     * writes image_dst_addr + b x out_rows and main_out + b x main_out_stride (okpu_kpu_job_batch). 0 or 1: one map. */
    uint32_t batches, in_rows, out_rows;
    size_t main_out_stride;
    /* 1: the plan ran the KPU layer just before this one (of one map, the step before this one), and this layer
     * reads that layer's whole output map (same rows, width, height and channels) as its input, so a backend that
     * kept that output may read its own copy instead of KPU RAM (model.c sets it; a job built elsewhere leaves it 0) */
    int follows_producer;
} okpu_kpu_layer_job;

/* Batch b of `job` as a job of one map. With `raw` (KPU_ARGS_BYTES, holding the job's raw words) its address words
 * are set to the batch's and out->raw_args points at it; without, the raw words stay the first batch's (for a backend
 * that runs the decoded arguments). The loaders checked every batch's rows. */
void okpu_kpu_job_batch(const okpu_kpu_layer_job *job, uint32_t b, uint8_t *raw, okpu_kpu_layer_job *out);

/* Does the layer of `next` read, whole, the output map of the layer of `prev` (the same KPU RAM rows, width, height
 * and channels)? Both of one map. (okpu_kpu_layer_job.follows_producer; the emulator checks it again when it runs.) */
int okpu_kpu_reads_output_of(const okpu_kpu_layer_job *prev, const okpu_kpu_layer_job *next);

typedef struct okpu_kpu_backend okpu_kpu_backend;
struct okpu_kpu_backend {
    const char *name;
    uint8_t *ram; /* the 2 MiB KPU RAM as the CPU sees it */
    int (*run_layer)(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err);
    /* Called at load for every layer the model will run (NULL: nothing to prepare): a backend that needs working
     * memory for a layer takes it here, so that running cannot fail for lack of memory, and may keep what it computes
     * from the job's weights and tables (the emulator keeps the w-offset terms and packed weights): a job whose
     * weights, BN or activation bytes change is prepared again before it runs (the virtual board prepares before
     * every run). */
    int (*prepare)(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err);
    /* The job's batches (job->batches >= 2), in any order or at once (NULL: the step runs them one after another). */
    int (*run_batches)(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err);
    /* Side chains (NULL: the backend runs none). A KPU layer the backend runs on one thread (a detection head of a few
     * channels), with the main-memory steps after it, can run as one task beside the next KPU layer, whose channels
     * the other threads share: the plan asks prepare_beside at load, after prepare, whether the pair may (1: yes,
     * and the backend took what the side job needs; 0: no; -1 and err: no memory for it), and then runs `next`
     * through run_beside, passing `chain`, which runs `side` through run_side and then those steps. The backend may
     * run the chain first when it finds, running, that the two would meet (it runs it exactly once either way). */
    int (*prepare_beside)(okpu_kpu_backend *self, const okpu_kpu_layer_job *side, const okpu_kpu_layer_job *next,
                          okpu_error *err);
    int (*run_beside)(okpu_kpu_backend *self, const okpu_kpu_layer_job *next, const okpu_kpu_layer_job *side,
                      void (*chain)(void *chain_ctx), void *chain_ctx, okpu_error *err);
    int (*run_side)(okpu_kpu_backend *self, const okpu_kpu_layer_job *side, okpu_error *err);
    /* Pairs (NULL: the backend runs none). A KPU layer and the KPU layer of the next step, which reads its output
     * (second->follows_producer), may run as one: the plan asks prepare_pair at load, after the side chains, whether
     * the backend runs them together (1: yes, having taken what it needs; 0: no; -1 and err: no memory for it), and
     * then runs both through run_pair, which leaves what run_layer on each in turn would. */
    int (*prepare_pair)(okpu_kpu_backend *self, const okpu_kpu_layer_job *first, const okpu_kpu_layer_job *second,
                        okpu_error *err);
    int (*run_pair)(okpu_kpu_backend *self, const okpu_kpu_layer_job *first, const okpu_kpu_layer_job *second,
                    okpu_error *err);
    size_t scratch_bytes; /* working memory the backend holds (prepare), for the memory report */
    void (*destroy)(okpu_kpu_backend *self);
    okpu_workers *workers; /* the backend's threads, which CPU steps may share between its layers (NULL: none) */
    int wakes_workers;     /* prepare saw a layer it shares among them: a forward pass wakes them as it starts */
};

/* The bit-exact software KPU. Allocates its 2 MiB RAM through opts->allocator. NULL + err on failure. */
okpu_kpu_backend *okpu_kpu_emu_create(const okpu_options *opts, okpu_error *err);

/* The emulator over a KPU RAM it does not own (2 MiB at `ram`, e.g. a virtual board's AI SRAM). */
okpu_kpu_backend *okpu_kpu_emu_create_on_ram(const okpu_options *opts, uint8_t *ram, okpu_error *err);

/* The same emulator computing each convolution straight from the specification, one output value at a time: the
 * oracle its fast path is tested against (okpu_kpu_emu_create also picks it when the environment has
 * OKPU_EMU_REFERENCE=1). */
okpu_kpu_backend *okpu_kpu_emu_create_reference(const okpu_options *opts, okpu_error *err);

/* The K210's KPU driven through `port` (kpu_k210.c): the board's register block, or a simulated peripheral in the
 * host tests. The backend does not own the port; it must outlive the backend. */
okpu_kpu_backend *okpu_kpu_k210_create_on(const okpu_k210_port *port, const okpu_options *opts, okpu_error *err);

#ifdef OKPU_HAVE_K210_HW
/* The board's microsecond clock: a board build provides it (the firmware: CLINT mtime). It bounds the wait for a
 * layer, so a KPU that never finishes is an error naming the layer, not a hang. */
uint64_t okpu_board_time_us(void);

/* The chip's own KPU (board builds only). */
const okpu_k210_port *okpu_k210_board_port(void);
okpu_kpu_backend *okpu_kpu_k210_create(const okpu_options *opts, okpu_error *err);
#endif

/* Backend selected by opts->backend. OKPU_BACKEND_K210 uses opts->k210_port, or the board's own KPU in board builds
 * (OKPU_HAVE_K210_HW). */
okpu_kpu_backend *okpu_kpu_backend_create(const okpu_options *opts, okpu_error *err);

#endif

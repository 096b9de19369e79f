// SPDX-License-Identifier: Apache-2.0
/* The bit-exact software KPU as a backend (docs/kpu-reference.md section 4). run_layer reads the input map from the
 * emulated KPU RAM, computes conv -> batch norm -> activation -> pool per output channel and writes the result back to
 * KPU RAM (and densely to main memory when asked), using nothing but the job. The arithmetic lives in kpu_emu_ref.c
 * (the oracle), kpu_emu_conv.c and kpu_emu_act.c (the fast paths; see kpu_emu.h). okpu_kpu_emu_create picks the fast
 * paths unless the environment has OKPU_EMU_REFERENCE=1. A layer's output channels are split over the emulator's
 * worker threads (okpu_options.threads, c_src/core/workers.h): each channel is computed by one worker into its own
 * place from read-only shared state, so the bytes are the same for any thread count. */
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/arith.h"
#include "../core/bytes.h"
#include "../core/checked.h"
#include "../core/error.h"
#include "../core/workers.h"
#include "kpu_backend.h"
#include "kpu_emu.h"
#include "kpu_layout.h"

/* The w-offset terms and packed weights of one prepared layer (see "Working memory"). The key is everything they
 * depend on: a depthwise layer and a layer of one input channel have the same terms but not the same packed layout. */
typedef struct w_terms {
    const uint8_t *weights;
    int eight_bit, depthwise;
    uint32_t oc, g_ic, kk;
    int32_t arg_w, arg_x;
    unsigned shr_w, shr_x; /* arg_x, shr_x: the packed weights hold the x-offset fold (okpu_emu_fold) */
    int64_t arg_add;
    int64_t *term;    /* oc entries */
    uint32_t *packed; /* 8-bit: every quad's packed weights (okpu_emu_pack_quad), or a 3x3 depthwise layer's six words
                       * per channel (okpu_emu_pack_dw3); packed_words of them */
    size_t packed_words;
} w_terms;

typedef struct okpu_kpu_emu {
    okpu_kpu_backend base; /* first, so the backend pointer is the emulator pointer */
    okpu_options opts;
    okpu_allocator allocator; /* copy of *opts->allocator; opts.allocator points here or is NULL */
    int reference;
    int sse41;
    int avx2;
    int avx512;
    int avx512bw;
    int owns_ram;     /* 0 when the RAM belongs to a board model (okpu_kpu_emu_create_on_ram) */
    uint8_t *scratch; /* working memory for the largest layer prepared (see "Working memory"), freed by destroy */
    size_t scratch_size;
    w_terms *wt;      /* the prepared layers' w-offset terms (fast path only) */
    size_t wt_count, wt_cap, wt_bytes;
    okpu_workers *pool; /* the forward pass's threads (created with the emulator, kept until destroy) */
    int nworkers;       /* okpu_workers_count(pool): the block holds this many sets of worker parts */
    int split_all;      /* OKPU_EMU_SPLIT_ALL=1 (tests): every layer split, one channel per task */
    emu_worker *worker; /* nworkers entries, pointed into the block by each run */
    /* A layer's dense output planes, in turns: each run writes one and the next layer may read it (see "Forwarding"). */
    uint8_t *outs[3], *outs_alloc[3]; /* (each OUT_SKEW x (i + 1) bytes into its allocation) */
    int nouts;        /* 2, or 3 once a pair is prepared (see "Pairs") */
    size_t outs_size; /* bytes of each */
    int last;         /* outs[last] holds the last run's output; the next run writes another */
    int fwd_valid;    /* outs[last] holds the output of fwd_job's layer, as KPU RAM has it */
    okpu_kpu_layer_job fwd_job;
    emu_worker *pair_worker; /* nworkers entries: the second layer of a pair, once one is prepared */
    /* What a side job runs with (see "Side chains"): a block of its own, output planes included, and a worker record. */
    uint8_t *side_block;
    size_t side_size;
    emu_worker side_worker;
} okpu_kpu_emu;

/* ---- Working memory ----
 * One block, sized for the largest layer (the parts every worker reads, then one set of worker parts per thread the
 * layer is split over): prepare() (the backend hook model.c calls at load for every KPU conv) takes it, so a model's
 * forward pass never allocates. run_layer carves the block into the parts below. A caller
 * that runs a layer no prepare covered (the virtual board's register block calls prepare itself; the transitional
 * LEGACY reader steps and a test driving the backend by hand do not) gets the same memory taken on that run:
 * run_layer prepares the job itself, which is the only allocation it can make.
 * Beside the block, prepare computes each layer's w-offset terms (one int64 per output channel: they depend only on
 * the weights and the layer's arguments) once, kept until destroy and counted in scratch_bytes; a layer no prepare
 * covered computes them into the block's PART_W_TERM on each run. */

enum {
    /* shared: written before the channels run, read by every worker */
    PART_IN,
    PART_OUT,
    PART_X_TERM, /* non-depthwise layers */
    PART_X_TABLE,
    PART_W_TERM, /* the w-offset terms of a layer no prepare covered */
    PART_PAIR_OFF, /* non-depthwise layers: the tap pairs' offsets (okpu_emu_pair_offsets) */
    /* one set per worker (emu_worker) */
    PART_ACTIVATED,
    PART_WX_TERM, /* depthwise layers; a shared non-depthwise layer's part of the x-offset plane */
    PART_ACC,
    PART_LUT, /* the activation table (emu_worker.lut) */
    PART_PACK, /* non-depthwise layers no prepare covered: one quad's packed weights */
    PART_WIDE, /* depthwise layers: one input plane as int16 (emu_worker.wide) */
    PART_COUNT
};
#define PART_FIRST_WORKER PART_ACTIVATED

/* Bytes left unused between one worker's parts and the next's, and before the first worker's. Packed end to end,
 * the two workers' parts of a 3x3 depthwise layer ran 10% slower on two threads than with this gap (measured on the
 * face detector's 20x15x256 layers: 104 against 94 us; 32 KiB recovered most of it, 4-16 KiB nothing), though
 * neither writes the other's: the caches' prefetchers reach across the boundary. The shared parts before the first
 * worker's are read, and some written, by every worker (a depthwise layer's tasks load their own input planes): with
 * the first worker's parts right after them, slim-320's two-thread speedup was 0.4-1.9% lower (the same build with
 * and without the gap, and two builds, 16-20 alternating rounds each; the face detector's and YOLOv2 v4's 1-2%,
 * MobileNet's and RFB-320's the same). Only a layer split over several workers has the gaps. */
#define WORKER_GAP 65536u

static uint64_t align8(uint64_t n)
{
    return (n + 7u) & ~(uint64_t)7u;
}

/* Do the KPU RAM rows [a0, a0 + a_rows) and [b0, b0 + b_rows) overlap? */
static int rows_meet(uint64_t a0, uint64_t a_rows, uint64_t b0, uint64_t b_rows)
{
    return a0 < b0 + b_rows && b0 < a0 + a_rows;
}

static uint64_t in_rows(const okpu_kpu_args *a)
{
    return okpu_kpu_layout_rows(a->in_width, a->in_height, a->in_channels);
}

static uint64_t out_rows(const okpu_kpu_args *a)
{
    return okpu_kpu_layout_rows(a->out_width, a->out_height, a->out_channels);
}

/* Whether a layer's output channels are shared among the workers; a layer that is not runs on the calling thread
 * alone, and the block holds one set of worker parts for it (a small model takes no more memory on many threads
 * than on one). Sharing costs microseconds to hand out the work, and more to move data between the processors'
 * caches: every channel of a non-depthwise layer reads the whole input map, half of which the other worker loaded.
 * The limits are where sharing starts to pay on the real models' layers (measured on two processors, each layer
 * timed shared and not): a non-depthwise layer needs enough multiply-accumulates and enough of them per input byte
 * (out_channels x k x k: a 1x1 detection head with 4 to 12 outputs runs faster on one thread); every depthwise layer
 * of those models gained. */
#define SPLIT_MIN_MACS 200000u
#define SPLIT_MIN_MACS_PER_BYTE 16u
#define SPLIT_MIN_DW_CHANNELS 16u

static int layer_workers(const okpu_kpu_emu *e, const okpu_kpu_args *a)
{
    const uint64_t k = okpu_kpu_kernel_size(a);
    const uint64_t macs = (uint64_t)a->in_width * a->in_height * (a->depthwise ? 1u : a->in_channels) * k * k *
                          a->out_channels; /* < 2^44: 10-bit fields, k <= 3 */
    int split;

    if (e->nworkers < 2)
        return 1;
    if (a->depthwise)
        split = a->out_channels >= SPLIT_MIN_DW_CHANNELS;
    else
        split = macs >= SPLIT_MIN_MACS && a->out_channels * k * k >= SPLIT_MIN_MACS_PER_BYTE;
    return e->split_all || split ? e->nworkers : 1;
}

/* Tasks per worker: small enough tasks that a worker the OS delays (a busy machine) leaves its share to the others. */
#define TASKS_PER_WORKER 4u

/* Does a shared non-depthwise layer sum its x-offset plane from one part per worker (each adding the input channels it
 * loaded, see input_task)? With fewer input channels than tasks (an image's three) the parts would cost more than
 * they save: the plane is then computed after the load, in bands of rows (x_term_band). */
static int x_parts(const okpu_kpu_emu *e, const okpu_kpu_args *a, int sets)
{
    return !a->depthwise && sets > 1 && a->in_channels >= (uint32_t)e->nworkers * TASKS_PER_WORKER;
}

/* Bytes of each part for the layer `a` split over `sets` workers (8-aligned, 0 for the fast path's parts on the
 * reference path and for the x-offset part the layer does not use) and the block's size: the shared parts plus `sets`
 * sets of worker parts.
 * okpu_kpu_args_check bounds every factor (the maps fit the 2 MiB KPU RAM, x_table has 9 * 255 + 1 entries); the checked
 * products keep that an explicit limit rather than an assumption. */
static int scratch_parts(const okpu_kpu_emu *e, const okpu_kpu_args *a, int sets, int own_out, int layer,
                         uint64_t part[PART_COUNT], uint64_t *total, okpu_error *err)
{
    const uint64_t k = okpu_kpu_kernel_size(a), pad = k / 2u, w = a->in_width, h = a->in_height;
    uint64_t plane, n, per_worker = 0;
    int bad = 0, i;

    memset(part, 0, PART_COUNT * sizeof *part);
    bad |= okpu_mul_ovf(w + 2u * pad, h + 2u * pad, OKPU_SIZE_LIMIT, &plane);
    if (!e->reference && k == 3u && !a->depthwise && a->pool_type >= 5 && a->pool_type <= 7) {
        /* (a picked 3x3 layer's phase planes, see pick_layer: s x (h + 2) x ceil((w + 2) / s) >= plane) */
        const uint64_t s = okpu_kpu_pool_stride(a->pool_type);
        bad |= okpu_mul3(s, h + 2u, (w + 2u + s - 1u) / s, OKPU_SIZE_LIMIT, &plane);
    }
    bad |= okpu_mul_ovf(plane, a->in_channels, OKPU_SIZE_LIMIT, &part[PART_IN]);
    bad |= okpu_mul_ovf(w, h, OKPU_SIZE_LIMIT, &n);
    part[PART_ACTIVATED] = n;
    if (own_out) /* (else the output planes are the emulator's outs: see "Forwarding") */
        bad |= okpu_mul3(a->out_width, a->out_height, a->out_channels, OKPU_SIZE_LIMIT, &part[PART_OUT]);
    if (!e->reference) {
        bad |= okpu_mul_ovf(n, sizeof(int64_t), OKPU_SIZE_LIMIT, &part[a->depthwise ? PART_WX_TERM : PART_X_TERM]);
        if (x_parts(e, a, sets))
            part[PART_WX_TERM] = part[PART_X_TERM]; /* each worker's part of the x-offset plane */
        part[PART_X_TABLE] = (k * k * 255u + 1u) * sizeof(int64_t);
        bad |= okpu_mul_ovf(n, sizeof(uint64_t), OKPU_SIZE_LIMIT, &part[PART_ACC]);
        if (a->depthwise)
            part[PART_WIDE] = (plane + EMU_WIDE_SLACK) * sizeof(int16_t);
        if (!a->depthwise) {
            /* by quads: four planes of acc_stride uint32 (a 3x3 layer's run over its padded rows is longer than n) */
            const uint64_t pairs = ((uint64_t)a->in_channels * k * k + 1u) / 2u;
            uint64_t quad_acc = 0;
            bad |= okpu_mul_ovf(align8(plane), 4u * sizeof(uint32_t), OKPU_SIZE_LIMIT, &quad_acc);
            part[PART_ACC] = quad_acc > part[PART_ACC] ? quad_acc : part[PART_ACC];
            part[PART_PAIR_OFF] = 2u * pairs * sizeof(uint32_t);
            part[PART_PACK] = 4u * pairs * sizeof(uint32_t);
        }
        part[PART_W_TERM] = (uint64_t)a->out_channels * sizeof(int64_t);
        part[PART_LUT] = EMU_LUT_MAX + EMU_LUT_SLACK;
    }
    *total = 0;
    for (i = 0; i < PART_COUNT && !bad; i++) {
        part[i] = align8(part[i]);
        if (i < PART_FIRST_WORKER)
            bad |= okpu_add_ovf(*total, part[i], OKPU_SIZE_LIMIT, total);
        else
            bad |= okpu_add_ovf(per_worker, part[i], OKPU_SIZE_LIMIT, &per_worker);
    }
    bad |= bad ? 0 : okpu_add_ovf(per_worker, WORKER_GAP, OKPU_SIZE_LIMIT, &per_worker);
    bad |= bad ? 0 : okpu_mul_ovf(per_worker, (uint64_t)sets, OKPU_SIZE_LIMIT, &per_worker);
    bad |= bad ? 0 : okpu_add_ovf(*total, sets > 1 ? per_worker : per_worker - WORKER_GAP, OKPU_SIZE_LIMIT, total);
    if (bad || *total > (uint64_t)(size_t)-1)
        return okpu_fail(err, OKPU_ERR_PARAM, layer, -1,
                         "layer %d: the KPU emulator's work area for a %lux%lux%lu map does not fit in memory", layer,
                         (unsigned long)w, (unsigned long)h, (unsigned long)a->in_channels);
    return OKPU_OK;
}

/* Where each output buffer starts in its allocation (see "Forwarding"). Large allocations start at the same offset
 * in a page as the block does, and so did each output plane and the input plane it was computed from: loads and
 * stores at equal page offsets stall on each other (4K aliasing). Unskewed, ULFFD's 160x120 layers ran 2-3% slower
 * than with their outputs in the block; 1088 or 2112 bytes in, no slower. */
#define OUT_SKEW 1088u
#define OUT_SLACK (3u * OUT_SKEW) /* each buffer's allocation: its bytes and this */

/* The memory report's figure: the block, the prepared layers' weight terms, the output buffers, the side jobs' block
 * and the pairs' worker records. */
static void count_scratch(okpu_kpu_emu *e)
{
    const size_t outs = e->outs_alloc[0] ? (size_t)e->nouts * (e->outs_size + OUT_SLACK) : 0u;
    const size_t records = e->pair_worker ? (size_t)e->nworkers * sizeof *e->pair_worker : 0u;

    e->base.scratch_bytes = e->scratch_size + e->wt_bytes + outs + e->side_size + records;
}

/* Grow the block to `bytes` (its contents need not survive: every run rewrites what it reads). */
static int reserve_scratch(okpu_kpu_emu *e, uint64_t bytes, int layer, okpu_error *err)
{
    if (bytes <= e->scratch_size)
        return OKPU_OK;
    okpu_free(e->opts.allocator, e->scratch, e->scratch_size);
    e->scratch_size = 0;
    count_scratch(e);
    e->scratch = okpu_alloc(e->opts.allocator, (size_t)bytes);
    if (!e->scratch)
        return okpu_fail(err, OKPU_ERR_NO_MEM, layer, -1,
                         "layer %d: no memory for the KPU emulator's %lu-byte work area", layer,
                         (unsigned long)bytes);
    e->scratch_size = (size_t)bytes;
    count_scratch(e);
    return OKPU_OK;
}

/* ---- Forwarding ----
 * A layer's output planes (dense, channel after channel) go to one of two buffers of the emulator's (three once a
 * pair is prepared: the pair's two layers write one each while the first may read the last run's), in turns, not
 * into the block, so they outlive the run: a 1x1 layer that reads the whole output of the layer run just before it
 * (okpu_kpu_layer_job.follows_producer, which the plan sets, and the emulator checks against the last run it made)
 * takes those planes as its input planes instead of loading them back out of KPU RAM, where they are the same bytes
 * (nothing runs between the two steps). That saves the load, and on several threads the hand-out it needed: ULFFD's
 * 1x1 layers each follow a depthwise one. A layer's own max or mean pool changes nothing here (it pools the layer's
 * output, not its input): the face detector's three 1x1 layers with a 2x2 max pool take their input so too, its pass
 * on two threads 1.8% shorter and its one-/two-thread ratio 1.777 to 1.819 (medians of 10 alternating rounds of 60
 * runs). A picked layer (pools 5-7) loads only the pixels it picks. A layer whose batches run apart keeps its planes
 * in its blocks. */

static void free_outs(okpu_kpu_emu *e)
{
    int i;

    for (i = 0; i < 3; i++) {
        okpu_free(e->opts.allocator, e->outs_alloc[i], e->outs_size + OUT_SLACK);
        e->outs_alloc[i] = e->outs[i] = NULL;
    }
    e->outs_size = 0;
    e->fwd_valid = 0;
}

/* Grow the output buffers (e->nouts of them) to the layer's output map (at most 2 MiB: it fits KPU RAM,
 * okpu_kpu_args_check). */
static int reserve_outs(okpu_kpu_emu *e, const okpu_kpu_args *a, int layer, okpu_error *err)
{
    size_t bytes = (size_t)a->out_width * a->out_height * a->out_channels; /* < 2^30: 10-bit fields */
    int i;

    if (bytes <= e->outs_size && e->outs_alloc[e->nouts - 1])
        return OKPU_OK;
    bytes = bytes > e->outs_size ? bytes : e->outs_size;
    free_outs(e);
    count_scratch(e);
    for (i = 0; i < e->nouts; i++) {
        if (!(e->outs_alloc[i] = okpu_alloc(e->opts.allocator, bytes + OUT_SLACK))) {
            while (i-- > 0) {
                okpu_free(e->opts.allocator, e->outs_alloc[i], bytes + OUT_SLACK);
                e->outs_alloc[i] = e->outs[i] = NULL;
            }
            return okpu_fail(err, OKPU_ERR_NO_MEM, layer, -1,
                             "layer %d: no memory for the KPU emulator's %d %lu-byte output maps", layer, e->nouts,
                             (unsigned long)bytes);
        }
        e->outs[i] = e->outs_alloc[i] + OUT_SKEW * (unsigned)(i + 1);
    }
    e->outs_size = bytes;
    count_scratch(e);
    return OKPU_OK;
}

/* The buffer the next run writes: not the last run's, which it may read. */
static int next_out(const okpu_kpu_emu *e)
{
    return (e->last + 1) % e->nouts;
}

/* The layer as far as its weights go (what the w-offset terms and the packed weights need). */
static void weights_layer(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job, emu_layer *L)
{
    memset(L, 0, sizeof *L);
    L->a = &job->args;
    L->weights = job->weights;
    L->eight_bit = job->eight_bit;
    L->oc = job->args.out_channels;
    L->g_ic = job->args.depthwise ? 1u : job->args.in_channels;
    L->k = okpu_kpu_kernel_size(&job->args);
    L->kk = L->k * L->k;
    L->offset_mode = e->opts.conv_offset;
    okpu_emu_fold(L);
}

/* The w-offset term of every output channel of the layer into out[0..oc). */
static void w_terms_fill(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job, int64_t *out)
{
    emu_layer L;
    uint32_t oc;

    weights_layer(e, job, &L);
    for (oc = 0; oc < job->args.out_channels; oc++)
        out[oc] = okpu_emu_w_term(&L, oc);
}

/* Words of a layer's packed weights: quads x pairs x 4 (< 2^24: 256 quads, 4608 pairs) for a layer by quads,
 * out_channels x 6 for an 8-bit 3x3 depthwise layer, else 0. */
static size_t packed_words(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job)
{
    emu_layer L;

    weights_layer(e, job, &L);
    if (okpu_emu_dw3(&L))
        return (size_t)L.oc * 6u;
    return okpu_emu_by_quads(&L) ? (size_t)((L.oc + 3u) / 4u) * okpu_emu_pairs(&L) * 4u : 0u;
}

/* The layer's packed weights into t->packed (t->packed_words of them). */
static void packed_fill(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job, w_terms *t)
{
    emu_layer L;
    uint32_t q;

    weights_layer(e, job, &L);
    if (t->packed_words != packed_words(e, job)) /* (the key makes them equal: a guard on the buffer's size) */
        return;
    if (okpu_emu_dw3(&L))
        for (q = 0; q < L.oc; q++)
            okpu_emu_pack_dw3(&L, q, t->packed + (size_t)q * 6u);
    else if (okpu_emu_by_quads(&L))
        for (q = 0; 4u * q < L.oc; q++)
            okpu_emu_pack_quad(&L, q, t->packed + (size_t)q * okpu_emu_pairs(&L) * 4u);
}

static w_terms *w_terms_find(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job)
{
    const okpu_kpu_args *a = &job->args;
    size_t i;

    for (i = 0; i < e->wt_count; i++) {
        w_terms *t = &e->wt[i];
        if (t->weights == job->weights && t->eight_bit == job->eight_bit && t->depthwise == (int)a->depthwise &&
            t->oc == a->out_channels &&
            t->g_ic == (a->depthwise ? 1u : a->in_channels) && t->kk == okpu_kpu_kernel_size(a) * okpu_kpu_kernel_size(a) &&
            t->arg_w == a->arg_w && t->shr_w == a->shr_w && t->arg_add == a->arg_add && t->arg_x == a->arg_x &&
            t->shr_x == a->shr_x)
            return t;
    }
    return NULL;
}

/* At most this many layers keep their terms (a virtual board running one model after another would otherwise grow
 * the list without end); a layer past it computes them on each run. */
#define W_TERMS_MAX 1024u

/* Compute the layer's w-offset terms once, at prepare; a layer prepared again (the virtual board prepares before
 * every run, and its weights may have changed) recomputes them in place. */
static int w_terms_prepare(okpu_kpu_emu *e, const okpu_kpu_layer_job *job, okpu_error *err)
{
    const okpu_kpu_args *a = &job->args;
    const size_t bytes = (size_t)a->out_channels * sizeof(int64_t); /* out_channels <= 1024: okpu_kpu_args_check */
    w_terms *t = w_terms_find(e, job);

    if (t) {
        w_terms_fill(e, job, t->term);
        packed_fill(e, job, t);
        return OKPU_OK;
    }
    if (e->wt_count >= W_TERMS_MAX || !job->weights)
        return OKPU_OK;
    if (e->wt_count == e->wt_cap) {
        const size_t cap = e->wt_cap ? 2 * e->wt_cap : 32;
        w_terms *grown = okpu_alloc(e->opts.allocator, cap * sizeof *grown); /* cap <= 2 * W_TERMS_MAX */
        if (!grown)
            return okpu_fail(err, OKPU_ERR_NO_MEM, job->layer, -1,
                             "layer %d: no memory for the KPU emulator's table of weight terms", job->layer);
        if (e->wt_count)
            memcpy(grown, e->wt, e->wt_count * sizeof *grown);
        okpu_free(e->opts.allocator, e->wt, e->wt_cap * sizeof *e->wt);
        e->wt_bytes = e->wt_bytes - e->wt_cap * sizeof *e->wt + cap * sizeof *grown;
        e->wt = grown;
        e->wt_cap = cap;
    }
    t = &e->wt[e->wt_count];
    t->term = okpu_alloc(e->opts.allocator, bytes);
    t->packed_words = packed_words(e, job);
    t->packed = t->packed_words ? okpu_alloc(e->opts.allocator, t->packed_words * sizeof *t->packed) : NULL;
    if (!t->term || (t->packed_words && !t->packed)) {
        okpu_free(e->opts.allocator, t->term, bytes);
        okpu_free(e->opts.allocator, t->packed, t->packed_words * sizeof *t->packed);
        return okpu_fail(err, OKPU_ERR_NO_MEM, job->layer, -1,
                         "layer %d: no memory for the KPU emulator's %lu bytes of weight terms and packed weights",
                         job->layer, (unsigned long)(bytes + t->packed_words * sizeof *t->packed));
    }
    t->weights = job->weights;
    t->eight_bit = job->eight_bit;
    t->depthwise = (int)a->depthwise;
    t->oc = a->out_channels;
    t->g_ic = a->depthwise ? 1u : a->in_channels;
    t->kk = okpu_kpu_kernel_size(a) * okpu_kpu_kernel_size(a);
    t->arg_w = a->arg_w;
    t->shr_w = a->shr_w;
    t->arg_add = a->arg_add;
    t->arg_x = a->arg_x;
    t->shr_x = a->shr_x;
    w_terms_fill(e, job, t->term);
    packed_fill(e, job, t);
    e->wt_count++;
    e->wt_bytes += bytes + t->packed_words * sizeof *t->packed;
    count_scratch(e);
    return OKPU_OK;
}

/* ---- Batches ----
 * A step that runs one layer over several maps (kmodel v4 batches: RFB's dilated convolutions run 4, 9 and 25 small
 * maps) gives each worker whole maps when there are at least as many as workers and what the batches read in KPU RAM
 * misses what they write: each map is then the layer on one worker, with a block of its own (the shared parts and one
 * set of worker parts), instead of a map at a time split over the workers (a 10x8 map's channels are too few to share:
 * 25 of them ran on one thread). */
static int batches_apart(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job)
{
    const okpu_kpu_args *a = &job->args;

    return e->nworkers > 1 && job->batches >= (uint32_t)e->nworkers && job->in_rows >= in_rows(a) &&
           job->out_rows >= out_rows(a) &&
           (!job->main_out || job->main_out_stride >= (size_t)a->out_width * a->out_height * a->out_channels) &&
           !rows_meet(a->image_src_addr, (uint64_t)job->in_rows * job->batches, a->image_dst_addr,
                      (uint64_t)job->out_rows * job->batches);
}

/* The block a job needs: its layer split as usual, or, when its batches run apart, one block per worker of
 * *batch_block bytes each (0 otherwise: batch_block may be NULL). */
static int job_scratch(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job, uint64_t *total, uint64_t *batch_block,
                       okpu_error *err)
{
    uint64_t part[PART_COUNT], one;
    int rc = scratch_parts(e, &job->args, layer_workers(e, &job->args), 0, job->layer, part, total, err);

    if (batch_block)
        *batch_block = 0;
    if (rc != OKPU_OK || !batches_apart(e, job))
        return rc;
    if ((rc = scratch_parts(e, &job->args, 1, 1, job->layer, part, &one, err)) != OKPU_OK)
        return rc;
    if (batch_block)
        *batch_block = one + WORKER_GAP;
    if (okpu_mul_ovf(one + WORKER_GAP, (uint64_t)e->nworkers, OKPU_SIZE_LIMIT, &one) || one > (uint64_t)(size_t)-1)
        return okpu_fail(err, OKPU_ERR_PARAM, job->layer, -1,
                         "layer %d: the KPU emulator's work areas for %lu batches on %d workers do not fit in memory",
                         job->layer, (unsigned long)job->batches, e->nworkers);
    if (one > *total)
        *total = one;
    return OKPU_OK;
}

static int emu_prepare(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    uint64_t total;
    int rc;

    if ((rc = okpu_kpu_args_check(&job->args, job->layer, -1, err)) != OKPU_OK ||
        (rc = job_scratch(e, job, &total, NULL, err)) != OKPU_OK ||
        (rc = reserve_scratch(e, total, job->layer, err)) != OKPU_OK ||
        (rc = reserve_outs(e, &job->args, job->layer, err)) != OKPU_OK)
        return rc;
    if (layer_workers(e, &job->args) > 1 || batches_apart(e, job))
        e->base.wakes_workers = 1;
    return e->reference ? OKPU_OK : w_terms_prepare(e, job, err);
}

/* Rows [y0, y1) of one channel of a picked 3x3 layer (see pick_layer) from its map in KPU RAM (src: the channel's row
 * 0, rows `pitch` apart): padded column x (0..src_w + 1; columns 0 and src_w + 1 and rows 0 and src_h + 1 hold
 * pad_value) goes to phase plane x % s at x / s. The first rows also set padded row 0, the last ones row src_h + 1. */
static void load_phase_rows(const emu_layer *L, const uint8_t *src, size_t pitch, uint8_t *dst, uint32_t y0,
                            uint32_t y1)
{
    const uint32_t s = L->pick_step;
    const uint8_t pad = (uint8_t)L->a->pad_value;
    uint32_t m, y, col, i;

    for (m = 0; m < s; m++) {
        uint8_t *phase = dst + m * L->phase_plane;
        if (y0 == 0)
            memset(phase, pad, L->phase_pitch);
        memset(phase + (size_t)(y0 + 1u) * L->phase_pitch, pad, (size_t)(y1 - y0) * L->phase_pitch);
        if (y1 == L->src_h)
            memset(phase + (size_t)(y1 + 1u) * L->phase_pitch, pad, L->phase_plane - (size_t)(y1 + 1u) * L->phase_pitch);
    }
    src += (size_t)y0 * pitch;
    if (s == 2) { /* (pool types 5-7 are stride 2: one pass a row, which the compiler vectorises) */
        /* (the fields in locals: a byte store may alias *L, which would make every step reload them) */
        const uint32_t half = L->src_w / 2u, odd_w = L->src_w & 1u;
        const size_t phase_pitch = L->phase_pitch, phase_plane = L->phase_plane;
        for (y = y0; y < y1; y++, src += pitch) {
            uint8_t *even = dst + (size_t)(y + 1u) * phase_pitch, *odd = even + phase_plane;
            for (i = 0; i < half; i++) {
                odd[i] = src[2u * i];          /* padded column 2i + 1 */
                even[i + 1u] = src[2u * i + 1u]; /* padded column 2i + 2 */
            }
            if (odd_w)
                odd[i] = src[2u * i];
        }
        return;
    }
    for (y = y0; y < y1; y++, src += pitch)
        for (m = 0; m < s; m++) {
            uint8_t *row = dst + m * L->phase_plane + (size_t)(y + 1u) * L->phase_pitch;
            /* the columns x = m, m + s, ... of this phase that hold a map pixel (column 0 is padding) */
            for (col = m ? m : s, i = col / s; col <= L->src_w; col += s, i++)
                row[i] = src[col - 1u];
        }
}

/* Rows a channel's load is counted in (load_channel_rows): the map's in KPU RAM for a picked 3x3 layer, else the
 * plane's. */
static uint32_t load_row_count(const emu_layer *L)
{
    return L->pick_step && L->k == 3 ? L->src_h : L->h;
}

/* Rows [y0, y1) of input channel c out of KPU RAM into its plane (L->in, written here as `planes`) with a `pad`-wide
 * border of pad_value (the first rows also write the border above, the last ones the border below); a picked 1x1
 * layer's rows 0, s, 2s... and columns pick_x0, pick_x0 + s, ... of the map, a picked 3x3 layer's phase planes (see
 * pick_layer). Any split of a channel into runs of rows writes each byte of its plane once. */
static void load_channel_rows(const uint8_t *ram, const emu_layer *L, uint8_t *planes, uint32_t c, uint32_t y0,
                              uint32_t y1)
{
    const okpu_kpu_layout layout = okpu_kpu_layout_for_width(L->src_w);
    const size_t row = (size_t)layout.row_len * OKPU_KPU_ROW_BYTES; /* one image row to the next in KPU RAM */
    const uint32_t step = L->pick_step ? L->pick_step : 1u;
    const uint8_t *src = ram + (size_t)L->a->image_src_addr * OKPU_KPU_ROW_BYTES +
                         okpu_kpu_layout_offset(&layout, L->src_h, c, 0, 0);
    uint8_t *plane = planes + c * L->plane, *dst;
    const uint8_t pad = (uint8_t)L->a->pad_value;
    /* (the fields in locals: a byte store may alias *L, which would make every step reload them) */
    const uint32_t w = L->w, border = L->pad, pitch = L->pitch;
    const uint8_t *from;
    uint32_t x, y;

    if (L->pick_step && L->k == 3) {
        load_phase_rows(L, src, row, plane, y0, y1);
        return;
    }
    if (border) { /* (only an unpicked layer has one) */
        if (y0 == 0)
            memset(plane, pad, (size_t)border * pitch);
        if (y1 == L->h)
            memset(plane + (size_t)(L->h + border) * pitch, pad, (size_t)border * pitch);
    }
    from = src + (size_t)y0 * step * row + L->pick_x0;
    dst = plane + (size_t)(y0 + border) * pitch;
    for (y = y0; y < y1; y++, from += step * row, dst += pitch) {
        for (x = 0; x < border; x++) /* (the border columns: a byte each side for a 3x3 layer) */
            dst[x] = dst[border + w + x] = pad;
        if (step == 2u) { /* (pool types 5-7 are stride 2: a constant stride the compiler vectorises) */
            size_t i;
            for (i = 0; i < w; i++)
                dst[i] = from[2 * i];
        } else if (step > 1u)
            for (x = 0; x < w; x++)
                dst[x] = from[x * step];
        else
            okpu_copy_short(dst + border, from, w);
    }
}

/* Input channels [first, end) into their planes, whole. */
static void load_planes(const uint8_t *ram, const emu_layer *L, uint8_t *planes, uint32_t first, uint32_t end)
{
    uint32_t c;

    for (c = first; c < end; c++)
        load_channel_rows(ram, L, planes, c, 0, load_row_count(L));
}

/* A layer whose pool picks one pixel of each window (pool types 5-7, stride s) computes only the pixels it picks, on
 * the fast path: L (set up for the whole map) becomes a layer without a pool over the ow x oh picked pixels, with
 * `args` its arguments, and load_planes loads what those read from the map in KPU RAM (src_w x src_h):
 * - 1x1: the picked pixels alone (a 1x1 output pixel and its x-offset term depend on its own input pixel only);
 * - 3x3, 8-bit, by quads, x-offset terms folded: each input channel as s phase planes, padded column x in phase
 *   x % s at x / s, so the taps of consecutive picked pixels are consecutive bytes (tap offsets: okpu_emu_pair_offsets)
 *   and a picked row's taps start s rows down: pitch = s x phase_pitch, one run over all rows as the 3x3 quads do. */
static void pick_layer(emu_layer *L, okpu_kpu_args *args)
{
    const okpu_kpu_args *a = L->a;

    if (a->pool_type < 5 || a->pool_type > 7 || (L->k == 3 && !(okpu_emu_by_quads(L) && L->folded)))
        return;
    *args = *a;
    args->pool_type = 0;
    args->in_width = a->out_width; /* = in_width / stride: okpu_kpu_args_check */
    args->in_height = a->out_height;
    L->a = args;
    L->pick_step = okpu_kpu_pool_stride(a->pool_type);
    L->pick_x0 = a->pool_type == 6 ? 1u : 0u;
    L->w = L->pitch = args->in_width;
    L->h = args->in_height;
    L->plane = (size_t)L->w * L->h;
    if (L->k == 3) {
        L->phase_pitch = (L->src_w + 2u + L->pick_step - 1u) / L->pick_step;
        L->phase_plane = (size_t)(L->src_h + 2u) * L->phase_pitch;
        L->pitch = L->pick_step * L->phase_pitch;
        L->plane = L->pick_step * L->phase_plane; /* <= PART_IN's share: scratch_parts */
    }
}

/* Task `task`'s channels [*first, *end) of n, per_task a task. */
static void task_channels(uint32_t n, uint32_t per_task, uint32_t task, uint32_t *first, uint32_t *end)
{
    *first = task * per_task;
    *end = n - *first < per_task ? n : *first + per_task;
}

/* A layer's output channels as tasks for the workers: each task a run of consecutive channels, each channel written
 * by exactly one task into its own place (the dense output, its rows of KPU RAM, main memory), so the bytes do not
 * depend on which worker ran which task, or when. */
typedef struct channel_tasks {
    const emu_layer *L;
    const emu_shared *S; /* NULL: the reference path */
    emu_worker *worker;  /* one per worker */
    uint8_t *out;        /* the dense output */
    uint8_t *ram;
    uint8_t *planes;     /* L->in, for the tasks that load it */
    uint8_t *main_out;   /* NULL: the output stays in KPU RAM */
    int load;            /* a depthwise layer whose output rows miss its input rows: each task loads its own planes */
    uint32_t per_task;
    uint32_t bands, band_rows; /* each run of channels in `bands` runs of band_rows rows (channel_bands); 1, h */
    const uint32_t *band_cut;  /* NULL: bands of band_rows rows; else band b is rows [band_cut[b], band_cut[b + 1]) */
    uint32_t runs;             /* runs of channels (of per_task each) */
    int band_major;            /* the tasks band after band (by rows); else each run's bands one after another */
    void (*side)(void *);      /* NULL, or a side chain: task 0, the first the calling thread takes */
    void *side_ctx;
    const uint32_t *cut;       /* NULL: runs of per_task channels; else run r is channels [cut[r], cut[r + 1]) */
} channel_tasks;

/* ---- Tapered runs ----
 * A hand-out ends with its last task, so the thread that runs out of tasks first waits for the others' tasks in
 * progress: with equal runs of channels, half a run on average, and a run of a pair of MobileNet's 56x56 layers takes
 * 90-200 us on two threads. A layer shared by channels alone (one band) is cut in runs that shrink toward the middle
 * of its range, where the threads meet (okpu_workers_taper): MobileNet's 48 channels of 112x112 in runs of 3, 2, 1,
 * 1, 2, 3 quads where equal runs were 2 quads each. The same code with and without, 8 alternating rounds of 80
 * two-thread passes: MobileNet's median 8.83 to 8.64 ms, the face detector's 4.23 to 4.11, slim-320's (by rows, few
 * layers by channels alone) 3.18 to 3.16. A split that would need more runs than TAPER_RUNS_MAX (eight workers or
 * more on a layer of 1024 channels) keeps equal runs. */
#define TAPER_RUNS_MAX 64u

/* Run `run`'s channels [*first, *end) of a layer's channel tasks. */
static void run_channels(const channel_tasks *T, uint32_t run, uint32_t *first, uint32_t *end)
{
    if (T->cut) {
        *first = T->cut[run];
        *end = T->cut[run + 1u];
    } else {
        task_channels(T->L->oc, T->per_task, run, first, end);
    }
}

/* Runs of rows a layer by quads computes its channels in, each a task: a layer of few quads (ULFFD's first layers: 4
 * and 8 of them over 160x120 pixels) made as few tasks, 35-45 us each on two threads, and the thread that finished
 * first waited up to one of them (16 us of the pass's 49 at the joins were those layers'). The rows of a band are the
 * same layer over fewer rows: its planes start at the band's first row (padded, or picked, rows are pitch apart),
 * same plane stride, and so do its x-offset terms and its outputs. A pooled layer too when its windows tile the map
 * (pools 1-7, window = stride): its bands start on a multiple of the stride, so no window straddles two, and its
 * outputs start stride times fewer rows down (pools 8 and 9, 2x2 windows a row apart, are not split).
 * Beyond the tasks `want` asks for, a band per TASK_MACS multiply-accumulates of a run of channels, up to twice as
 * many tasks in all: at the joins a thread waits up to one task, and the face detector's first layer (4 quads over
 * 320x240, 3x3, a max pool) made 4 tasks of 210 us. With both, the same code alternating 6 rounds of 60 runs with and
 * without: the face detector's one-/two-thread ratio 1.785 to 1.897, MobileNet's 1.83 to 1.87 (its first layer is
 * not picked: its x-offset terms are not folded), YOLOv2 320x240 v5's 1.76 to 2.10, the others within 1%. */
#define BAND_MIN_PIXELS 4096u
#define TASK_MACS 1048576u

/* ---- Rows kept on one thread ----
 * A layer over a large map (ULFFD's and RFB's first four, 160x120) is shared by rows rather than by channels: its
 * input loaded, and its channels computed, in bands of rows, the bands' tasks in band order (band_major), so that the
 * calling thread, which takes tasks from the front, computes the top rows and the others the bottom rows, layer
 * after layer: each thread then reads back mostly rows it wrote itself. Shared by channels, every channel of a 1x1
 * layer read the whole map, half of it written by the other thread (or a depthwise layer's channels, written by
 * whichever thread computed them). A depthwise layer so shared loads its input before the channels start (its bands
 * read rows beyond their own). The same build with and without, alternating: slim-320's one-/two-thread ratio 1.5%
 * higher by the medians of 16 rounds (0.7% in two earlier series of 12 and 16), RFB-320's 0.6%, the other models'
 * within 0.6% either way; with the 80x60 layers by rows too, slim-320's 0.3% lower than with neither (the load's
 * hand-out, batch norm set up per band). A layer by rows is not paired (see "Pairs"). */
#define ROWS_MIN_PIXELS 16384u

/* ---- Tapered bands ----
 * The same for a layer by rows: its bands shrink toward the middle of its rows, where the caller (from the top) and
 * the other threads (from the bottom) meet, in units of a TAPER_BAND_UNITS-th of the rows (slim-320's 120 rows:
 * bands of 32, 16, 8, 8, 8, 16 and 32 rows, where two or four bands of 60 or 30 were). */
#define TAPER_BAND_UNITS 16u
#define TAPER_BANDS_MAX 32u

/* The pixels a layer computes: its input map's, or its output's when its pool picks one pixel of each window (a
 * picked layer computes only those: pick_layer). */
static uint64_t computed_pixels(const okpu_kpu_args *a)
{
    return a->pool_type >= 5 && a->pool_type <= 7 ? (uint64_t)a->out_width * a->out_height
                                                  : (uint64_t)a->in_width * a->in_height;
}

static int by_rows(const okpu_kpu_emu *e, const okpu_kpu_args *a, int sets)
{
    return sets > 1 && !e->reference && computed_pixels(a) >= ROWS_MIN_PIXELS;
}

static uint32_t channel_bands(const okpu_kpu_emu *e, const emu_layer *L, uint32_t channel_tasks_n, int sets,
                              int rows)
{
    const uint32_t want = (uint32_t)e->nworkers * TASKS_PER_WORKER * 2u;
    uint32_t bands;

    if (rows) { /* (an even count: the front half's rows for the calling thread) */
        bands = channel_tasks_n >= want ? 2u : ((want + channel_tasks_n - 1u) / channel_tasks_n + 1u) / 2u * 2u;
        return bands < L->h ? bands : L->h;
    }
    if (sets < 2 || e->reference || e->split_all || !okpu_emu_by_quads(L) ||
        okpu_kpu_pool_window(L->a->pool_type) != okpu_kpu_pool_stride(L->a->pool_type) ||
        (size_t)L->w * L->h < BAND_MIN_PIXELS)
        return 1;
    bands = channel_tasks_n >= want ? 1u : (want + channel_tasks_n - 1u) / channel_tasks_n;
    {
        /* tasks of at most about TASK_MACS, up to twice `want` tasks in all */
        const uint64_t run_macs =
            (uint64_t)(L->oc + channel_tasks_n - 1u) / channel_tasks_n * L->w * L->h * L->g_ic * L->kk;
        const uint64_t by_macs = (run_macs + TASK_MACS - 1u) / TASK_MACS;
        const uint32_t most = (2u * want + channel_tasks_n - 1u) / channel_tasks_n;
        if (by_macs > bands)
            bands = by_macs < most ? (uint32_t)by_macs : most;
    }
    return bands < L->h ? bands : L->h;
}

static void channel_task(void *ctx, int worker, uint32_t task)
{
    const channel_tasks *T = ctx;
    const emu_layer *L = T->L;
    const size_t out_plane = (size_t)L->a->out_width * L->a->out_height;
    emu_worker *W = &T->worker[worker];
    uint32_t first, end;

    if (T->side) {
        if (task == 0) {
            T->side(T->side_ctx);
            return;
        }
        task--;
    }
    if (T->bands > 1) {
        const uint32_t band_i = T->band_major ? task / T->runs : task % T->bands;
        const uint32_t run = T->band_major ? task % T->runs : task / T->bands;
        const uint32_t y0 = T->band_cut ? T->band_cut[band_i] : band_i * T->band_rows;
        const uint32_t y1 = T->band_cut                  ? T->band_cut[band_i + 1u]
                            : L->h - y0 < T->band_rows ? L->h
                                                       : y0 + T->band_rows;
        const uint32_t s = okpu_kpu_pool_stride(L->a->pool_type); /* (the band's output rows: y0 / s to y1 / s) */
        const size_t at = (size_t)y0 * L->w, out_at = (size_t)(y0 / s) * L->a->out_width;
        const size_t n = (size_t)(y1 / s - y0 / s) * L->a->out_width;
        emu_layer band = *L;
        emu_shared S = *T->S;
        uint32_t c;
        run_channels(T, run, &first, &end);
        if (y0 >= L->h)
            return;
        band.h = y1 - y0;
        band.in = L->in + (size_t)y0 * L->pitch;
        if (S.x_term)
            S.x_term += at;
        okpu_emu_channels_fast(&band, first, end, &S, W, T->out + out_at);
        okpu_kpu_layout_upload_rows(T->ram, L->a->image_dst_addr, T->out + first * out_plane + out_at, out_plane,
                                    L->a->out_width, L->a->out_height, first, end, y0 / s, y1 / s);
        if (T->main_out)
            for (c = first; c < end; c++)
                memcpy(T->main_out + c * out_plane + out_at, T->out + c * out_plane + out_at, n);
        return;
    }
    run_channels(T, task, &first, &end);
    if (T->load)
        load_planes(T->ram, L, T->planes, first, end);
    if (T->S)
        okpu_emu_channels_fast(L, first, end, T->S, W, T->out);
    else
        okpu_emu_channels_reference(L, first, end, W->activated, T->out);
    /* Every input channel was read before any task started (or, with T->load, lies outside the output's rows). */
    okpu_kpu_layout_upload_channels(T->ram, L->a->image_dst_addr, T->out, L->a->out_width, L->a->out_height, first,
                                    end);
    if (T->main_out)
        memcpy(T->main_out + first * out_plane, T->out + first * out_plane, (end - first) * out_plane);
}

/* The input planes in runs of channels, each run's x-offset terms added as soon as it is loaded (while its planes are
 * in this processor's cache): the phase before the channels of a layer that cannot load in its channel tasks. With
 * more than one worker, each adds into its own plane and x_sum_task sums them. */
typedef struct input_tasks {
    const uint8_t *ram;
    uint8_t *planes; /* L->in */
    const emu_layer *L;
    const emu_shared *S; /* NULL: nothing to add (the reference path, a depthwise layer, arg_x = 0) */
    emu_worker *worker;
    int parts;           /* each worker adds into its own W->x_term (else into S->x_term) */
    uint32_t per_task;
    /* Nothing to add, and fewer input channels than tasks (an image's three: a channel a run) or a layer by rows:
     * each run of per_task channels in `bands` runs of band_rows rows, in band order when band_major (by rows), else
     * each run's bands one after another (0: by channels, a run a task). */
    uint32_t bands, band_rows, runs;
    int band_major;
} input_tasks;

static void input_task(void *ctx, int worker, uint32_t task)
{
    const input_tasks *T = ctx;
    const emu_layer *L = T->L;
    emu_worker *W = &T->worker[worker];
    uint32_t first, end;
    int64_t *x;

    if (T->bands) { /* a run of rows of a run of channels, nothing to add */
        const uint32_t rows = load_row_count(L), band = T->band_major ? task / T->runs : task % T->bands;
        const uint32_t y0 = band * T->band_rows;
        uint32_t c;
        task_channels(L->ic, T->per_task, T->band_major ? task % T->runs : task / T->bands, &first, &end);
        if (y0 < rows)
            for (c = first; c < end; c++)
                load_channel_rows(T->ram, L, T->planes, c, y0, rows - y0 < T->band_rows ? rows : y0 + T->band_rows);
        return;
    }
    task_channels(L->ic, T->per_task, task, &first, &end);
    load_planes(T->ram, L, T->planes, first, end);
    if (!T->S)
        return;
    x = T->S->x_term;
    if (T->parts) {
        if (!W->x_started)
            memset(W->x_term, 0, (size_t)L->w * L->h * sizeof *W->x_term);
        W->x_started = 1;
        x = W->x_term;
    }
    okpu_emu_x_term_add_channels(L, T->S, first, end, x);
}

/* The workers' x-offset planes summed (and finished) in bands of pixels. */
typedef struct x_sum_tasks {
    const emu_layer *L;
    const emu_shared *S;
    const emu_worker *worker;
    int nworkers;
    size_t per_task;
} x_sum_tasks;

static void x_sum_task(void *ctx, int worker, uint32_t task)
{
    const x_sum_tasks *T = ctx;
    const size_t n = (size_t)T->L->w * T->L->h, first = task * T->per_task;
    const size_t end = n - first < T->per_task ? n : first + T->per_task;
    size_t p;
    int k;

    (void)worker;
    for (p = first; p < end; p++) {
        int64_t sum = 0;
        for (k = 0; k < T->nworkers; k++)
            if (T->worker[k].x_started)
                sum += T->worker[k].x_term[p];
        T->S->x_term[p] = sum;
    }
    okpu_emu_x_term_finish(T->L, T->S->x_term, first, end);
}

/* Items per task when a layer's `n` input channels, output channels or rows are shared out. */
static uint32_t items_per_task(const okpu_kpu_emu *e, int sets, uint32_t n)
{
    uint32_t tasks;

    if (sets < 2)
        return e->split_all ? 1u : n;
    if (e->split_all)
        return 1;
    tasks = (uint32_t)e->nworkers * TASKS_PER_WORKER;
    return n <= tasks ? 1u : (n + tasks - 1u) / tasks;
}

/* Do the rows the layer reads and the rows it writes in KPU RAM miss each other? */
static int rows_disjoint(const okpu_kpu_args *a)
{
    return !rows_meet(a->image_src_addr, in_rows(a), a->image_dst_addr, out_rows(a));
}

/* The x-offset plane of a non-depthwise layer in bands of rows, once every input channel is loaded: each band is the
 * same layer over fewer rows (its input planes start at the band's first padded row, same pitch and plane stride),
 * writing its own rows of x_term. */
typedef struct x_term_bands {
    const emu_layer *L;
    const emu_shared *S;
    uint32_t rows; /* per band */
} x_term_bands;

static void x_term_band(void *ctx, int worker, uint32_t task)
{
    const x_term_bands *B = ctx;
    const uint32_t y0 = task * B->rows;
    int64_t *x = B->S->x_term + (size_t)y0 * B->L->w;
    emu_layer band = *B->L;
    size_t n;

    (void)worker;
    band.h = B->L->h - y0 < B->rows ? B->L->h - y0 : B->rows;
    band.in = B->L->in + (size_t)y0 * B->L->pitch;
    n = (size_t)band.w * band.h;
    memset(x, 0, n * sizeof *x);
    okpu_emu_x_term_add_channels(&band, B->S, 0, band.ic, x);
    okpu_emu_x_term_finish(&band, x, 0, n);
}

/* The checks a job passes before it runs, and its block reserved (a job no prepare covered: see "Working memory");
 * *batch_block as job_scratch says. */
static int job_ready(okpu_kpu_emu *e, const okpu_kpu_layer_job *job, uint64_t *batch_block, okpu_error *err)
{
    uint64_t total;
    int rc;

    if ((rc = okpu_kpu_args_check(&job->args, job->layer, -1, err)) != OKPU_OK)
        return rc;
    if (!job->weights || !job->bn || !job->act)
        return okpu_fail(err, OKPU_ERR_PARAM, job->layer, -1,
                         "layer %d: KPU job without %s (the loader must point weights, bn and act into the model)",
                         job->layer, !job->weights ? "weights" : !job->bn ? "a BN table" : "an activation table");
    if ((rc = job_scratch(e, job, &total, batch_block, err)) != OKPU_OK ||
        (rc = reserve_outs(e, &job->args, job->layer, err)) != OKPU_OK)
        return rc;
    return total > e->scratch_size ? reserve_scratch(e, total, job->layer, err) : OKPU_OK;
}

/* A layer made ready to run its channels: what setup_job leaves for the channels' hand-out (T points into it). */
typedef struct job_run {
    okpu_kpu_args picked; /* (pick_layer's arguments, when L.a points here) */
    emu_layer L;
    emu_shared S;
    channel_tasks T;
    uint32_t tasks; /* runs of channels, each T.bands tasks, and one more with T.side */
    uint32_t cut[TAPER_RUNS_MAX + 1u]; /* T.cut's table */
    uint32_t band_cut[TAPER_BANDS_MAX + 1u]; /* T.band_cut's */
} job_run;

/* Make a ready job's layer (one map) ready to run its channels, into *R: with the block at `block`, split over `sets`
 * workers (the worker records workers[0 .. sets)) on `pool` (NULL: the calling thread alone), its output planes into
 * `out` (NULL: the block's) and its input planes `in` (a 1x1 layer's, forwarded) or, NULL, loaded from KPU RAM
 * (here, unless each channel task loads its own: R->T.load); with `side`, side(side_ctx) is one more task of its
 * channels' hand-out (see "Side chains"). */
static void setup_job(okpu_kpu_emu *e, const okpu_kpu_layer_job *job, uint8_t *block, int sets, emu_worker *workers,
                      okpu_workers *pool, uint8_t *out, const uint8_t *in, void (*side)(void *), void *side_ctx,
                      job_run *R)
{
    const okpu_kpu_args *a = &job->args;
    emu_layer *const L = &R->L;
    emu_shared *const S = &R->S;
    channel_tasks *const T = &R->T;
    uint8_t *at[PART_COUNT], *next;
    uint64_t part[PART_COUNT], total;
    uint32_t s;
    int i, k;

    (void)scratch_parts(e, a, sets, !out, job->layer, part, &total, NULL); /* (job_ready computed the same) */
    /* A part the layer does not use is NULL rather than an alias of the next one. */
    next = block;
    for (i = 0; i < PART_FIRST_WORKER; i++) {
        at[i] = part[i] ? next : NULL;
        next += part[i];
    }
    for (k = 0; k < sets; k++) {
        emu_worker *W = &workers[k];
        if (sets > 1)
            next += WORKER_GAP;
        for (i = PART_FIRST_WORKER; i < PART_COUNT; i++) {
            at[i] = part[i] ? next : NULL;
            next += part[i];
        }
        memset(W, 0, sizeof *W);
        W->activated = at[PART_ACTIVATED];
        W->x_term = (int64_t *)(void *)at[PART_WX_TERM];
        W->acc = (uint64_t *)(void *)at[PART_ACC];
        W->pack = (uint32_t *)(void *)at[PART_PACK];
        W->wide = (int16_t *)(void *)at[PART_WIDE];
        W->lut = at[PART_LUT];
        W->share = (a->out_channels + (uint32_t)sets - 1u) / (uint32_t)sets;
    }

    memset(L, 0, sizeof *L);
    L->a = a;
    L->weights = job->weights;
    L->bn_raw = job->bn;
    L->eight_bit = job->eight_bit;
    okpu_kpu_act_decode(job->act, &L->act);
    L->act_sorted = 1;
    for (s = 1; s < 16; s++)
        if (L->act.x_start[s] < L->act.x_start[s - 1])
            L->act_sorted = 0;
    L->w = a->in_width;
    L->h = a->in_height;
    L->k = okpu_kpu_kernel_size(a);
    L->kk = L->k * L->k;
    L->ic = a->in_channels;
    L->oc = a->out_channels;
    L->g_ic = a->depthwise ? 1u : L->ic;
    L->pad = L->k / 2;
    L->pitch = L->w + 2 * L->pad;
    L->plane = (size_t)L->pitch * (L->h + 2 * L->pad);
    L->round = e->opts.act_round;
    L->offset_mode = e->opts.conv_offset;
    L->mean_border = e->opts.mean_border;
    L->sse41 = e->sse41;
    L->avx2 = e->avx2;
    L->avx512 = e->avx512;
    L->avx512bw = e->avx512bw;
    L->src_w = L->w;
    L->src_h = L->h;
    L->in = in ? in : at[PART_IN];
    L->acc_stride = (size_t)align8(L->plane); /* (a picked layer's runs need fewer) */
    okpu_emu_fold(L);
    if (!e->reference)
        pick_layer(L, &R->picked);

    memset(T, 0, sizeof *T);
    T->L = L;
    T->worker = workers;
    T->out = out ? out : at[PART_OUT];
    T->ram = e->base.ram;
    T->planes = at[PART_IN];
    T->main_out = job->main_out;
    T->side = side;
    T->side_ctx = side_ctx;
    T->per_task = items_per_task(e, sets, L->oc);
    /* Whole quads: a quad split between tasks is computed by each (a layer of 8 channels split one channel a task
     * computed each quad four times). OKPU_EMU_SPLIT_ALL keeps one channel a task, to test those boundaries. */
    if (!e->reference && okpu_emu_by_quads(L) && !e->split_all)
        T->per_task = (T->per_task + 3u) / 4u * 4u;
    /* A depthwise channel reads its own input channel alone: its task can load it, unless another task's output
     * could overwrite an input channel not yet loaded, or the layer is shared by rows. Otherwise every input channel
     * is loaded first. */
    T->band_major = by_rows(e, a, sets) && L->a->pool_type == 0; /* (a picked layer's pool is 0 by now) */
    T->load = a->depthwise && rows_disjoint(a) && !T->band_major;
    if (!e->reference) {
        const w_terms *t = w_terms_find(e, job);
        memset(S, 0, sizeof *S);
        S->x_term = (int64_t *)(void *)at[PART_X_TERM];
        S->x_table = (int64_t *)(void *)at[PART_X_TABLE];
        if (t) {
            S->w_const = t->term;
        } else {
            int64_t *fresh = (int64_t *)(void *)at[PART_W_TERM];
            w_terms_fill(e, job, fresh);
            S->w_const = fresh;
        }
        if (okpu_emu_by_quads(L)) {
            okpu_emu_pair_offsets(L, (uint32_t *)(void *)at[PART_PAIR_OFF]);
            S->pair_off = (const uint32_t *)(void *)at[PART_PAIR_OFF];
        }
        S->packed = t ? t->packed : NULL;
        if (!L->folded) /* (folded: no x-offset term is computed, see okpu_emu_fold) */
            okpu_emu_x_table_fill(L, S);
        okpu_emu_act_fast_init(&L->act, L->act_sorted, &S->act);
        T->S = S;
    }
    if (!T->load) {
        /* The input, and a non-depthwise fast layer's x-offset plane: zero (arg_x = 0), added by the input tasks
         * (into the plane itself on one worker, into the workers' parts summed after: see x_parts), or computed in
         * row bands once the input is in. */
        enum { X_NONE, X_ZERO, X_DIRECT, X_PARTS, X_BANDS } x_mode;
        const size_t n = (size_t)L->w * L->h;
        input_tasks IT;
        x_mode = e->reference || a->depthwise || L->folded ? X_NONE /* folded: the terms are in the weights */
                 : a->arg_x == 0              ? X_ZERO
                 : in                         ? X_BANDS /* forwarded: nothing to load, the planes are in */
                 : sets < 2                   ? X_DIRECT
                 : x_parts(e, a, sets)        ? X_PARTS
                                              : X_BANDS;
        IT.ram = e->base.ram;
        IT.planes = at[PART_IN];
        IT.L = L;
        IT.S = x_mode == X_DIRECT || x_mode == X_PARTS ? S : NULL;
        IT.worker = workers;
        IT.per_task = items_per_task(e, sets, L->ic);
        IT.parts = x_mode == X_PARTS;
        IT.bands = 0;
        IT.band_rows = 0;
        IT.band_major = T->band_major && !IT.S && load_row_count(L) > 1u;
        if (IT.band_major) {
            const uint32_t rows = load_row_count(L);
            IT.bands = 2u;
            IT.band_rows = (rows + 1u) / 2u;
        } else if (sets > 1 && !IT.S && L->ic < (uint32_t)e->nworkers * TASKS_PER_WORKER && load_row_count(L) > 1u) {
            const uint32_t rows = load_row_count(L);
            IT.per_task = 1;
            IT.bands = (e->nworkers * TASKS_PER_WORKER + L->ic - 1u) / L->ic;
            IT.bands = e->split_all ? rows : IT.bands < rows ? IT.bands : rows;
            IT.band_rows = (rows + IT.bands - 1u) / IT.bands;
        }
        IT.runs = (L->ic + IT.per_task - 1u) / IT.per_task;
        if (x_mode == X_ZERO || x_mode == X_DIRECT)
            memset(S->x_term, 0, n * sizeof *S->x_term);
        if (!in)
            okpu_workers_run(pool, IT.bands ? IT.runs * IT.bands : IT.runs, input_task, &IT);
        if (x_mode == X_PARTS) {
            x_sum_tasks XT;
            const uint32_t tasks = (uint32_t)e->nworkers * TASKS_PER_WORKER;
            XT.L = L;
            XT.S = S;
            XT.worker = workers;
            XT.nworkers = sets;
            XT.per_task = (n + tasks - 1u) / tasks; /* (not one pixel a task under OKPU_EMU_SPLIT_ALL) */
            okpu_workers_run(pool, (uint32_t)((n + XT.per_task - 1u) / XT.per_task), x_sum_task, &XT);
        } else if (x_mode == X_BANDS) {
            x_term_bands B;
            B.L = L;
            B.S = S;
            B.rows = items_per_task(e, sets, L->h);
            okpu_workers_run(pool, (L->h + B.rows - 1u) / B.rows, x_term_band, &B);
        } else if (x_mode == X_DIRECT) {
            okpu_emu_x_term_finish(L, S->x_term, 0, n);
        }
    }
    R->tasks = (L->oc + T->per_task - 1u) / T->per_task;
    T->runs = R->tasks;
    T->bands = T->load ? 1u : channel_bands(e, L, R->tasks, sets, T->band_major);
    T->band_rows = (L->h + T->bands - 1u) / T->bands;
    if (T->bands > 1u) { /* (whole pool windows a band: a pooled layer's bands start on a multiple of its stride) */
        const uint32_t stride = okpu_kpu_pool_stride(L->a->pool_type);
        T->band_rows = (T->band_rows + stride - 1u) / stride * stride;
    }
    if (T->band_major && T->bands > 1u && !e->split_all) {
        const uint32_t bands = okpu_workers_taper(L->h, (L->h + TAPER_BAND_UNITS - 1u) / TAPER_BAND_UNITS, sets,
                                                  TAPER_BANDS_MAX, R->band_cut);
        if (bands) {
            T->bands = bands;
            T->band_cut = R->band_cut;
        }
    }
    if (T->bands == 1u && sets > 1 && !e->reference && !e->split_all) {
        const uint32_t runs = okpu_workers_taper(L->oc, okpu_emu_by_quads(L) ? 4u : 1u, sets, TAPER_RUNS_MAX, R->cut);
        if (runs) {
            R->tasks = T->runs = runs;
            T->cut = R->cut;
        }
    }
}

/* Run a ready job's layer: setup_job's arguments, then its channels. */
static void run_job(okpu_kpu_emu *e, const okpu_kpu_layer_job *job, uint8_t *block, int sets, emu_worker *workers,
                    okpu_workers *pool, uint8_t *out, const uint8_t *in, void (*side)(void *), void *side_ctx)
{
    job_run R;

    setup_job(e, job, block, sets, workers, pool, out, in, side, side_ctx, &R);
    okpu_workers_run(pool, R.tasks * R.T.bands + (side ? 1u : 0u), channel_task, &R.T);
}

/* Is the job of a kind that takes its input from the last run's output when that run was its producer's? */
static int takes_forwarded(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job)
{
    const okpu_kpu_args *a = &job->args;

    return job->follows_producer && !e->reference && okpu_kpu_kernel_size(a) == 1u && !a->depthwise &&
           !(a->pool_type >= 5 && a->pool_type <= 7); /* (a picked layer loads only the pixels it picks) */
}

/* The input planes a job may take from the last run's output (see "Forwarding"), or NULL. */
static const uint8_t *forwarded_input(const okpu_kpu_emu *e, const okpu_kpu_layer_job *job)
{
    return takes_forwarded(e, job) && e->fwd_valid && e->fwd_job.layer == job->layer - 1 &&
                   okpu_kpu_reads_output_of(&e->fwd_job, job)
               ? e->outs[e->last]
               : NULL;
}

/* Run a ready job of one map, its output into the buffer of this turn (with a side chain: see run_job), and
 * remember it for the next. */
static void run_turn(okpu_kpu_emu *e, const okpu_kpu_layer_job *job, void (*side)(void *), void *side_ctx)
{
    const uint8_t *in = forwarded_input(e, job);
    const int to = next_out(e);

    run_job(e, job, e->scratch, layer_workers(e, &job->args), e->worker, e->pool, e->outs[to], in, side, side_ctx);
    e->fwd_valid = 1;
    e->fwd_job = *job;
    e->last = to;
}

static int emu_run_layer(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    int rc = job_ready(e, job, NULL, err);

    if (rc == OKPU_OK)
        run_turn(e, job, NULL, NULL);
    else
        e->fwd_valid = 0;
    return rc;
}

/* ---- Side chains ----
 * A layer the emulator runs on one thread (a 1x1 detection head of 4 to 12 channels: too few to share, see
 * layer_workers) left the other threads idle while it ran, with the CPU steps after it (its transpose and
 * dequantize), before the next layer could start: 0.04 ms of ULFFD slim-320's pass on two threads. When the next KPU
 * layer is shared and neither reads nor writes what the side job does, the plan runs that head and those steps as
 * one more task of the next layer's channels (run_beside), the first the calling thread takes, while the other
 * threads start on the channels. The side job runs in a block of its own, its output planes included
 * (the next layer writes this turn's buffer, and the side job's input may be the other); the forwarding state stays
 * the side job's producer's until the next layer has run, so the side job finds its input as it would have.
 * What may overlap in KPU RAM: the next layer writes rows the side job neither writes nor reads (when the side job
 * loads its input from KPU RAM; a forwarded input is the producer's buffer), and the side job writes no row the next
 * layer reads. The CPU steps touch main memory alone (okpu_step_main_memory_only), and the next layer none. */

/* Does `next` write rows the side job reads from KPU RAM? */
static int next_overwrites_input(const okpu_kpu_layer_job *side, const okpu_kpu_layer_job *next)
{
    return rows_meet(next->args.image_dst_addr, out_rows(&next->args), side->args.image_src_addr,
                     in_rows(&side->args));
}

static int emu_prepare_beside(okpu_kpu_backend *self, const okpu_kpu_layer_job *side, const okpu_kpu_layer_job *next,
                              okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    const okpu_kpu_args *s = &side->args, *n = &next->args;
    uint64_t part[PART_COUNT], total;

    if (e->reference || e->nworkers < 2 || side->batches > 1u || next->batches > 1u || next->main_out ||
        !side->weights || !side->bn || !side->act || layer_workers(e, s) > 1 || layer_workers(e, n) < 2 ||
        okpu_kpu_args_check(s, side->layer, -1, NULL) != OKPU_OK ||
        okpu_kpu_args_check(n, next->layer, -1, NULL) != OKPU_OK ||
        rows_meet(n->image_dst_addr, out_rows(n), s->image_dst_addr, out_rows(s)) ||
        rows_meet(s->image_dst_addr, out_rows(s), n->image_src_addr, in_rows(n)) ||
        (next_overwrites_input(side, next) && !takes_forwarded(e, side)) ||
        scratch_parts(e, s, 1, 1, side->layer, part, &total, NULL) != OKPU_OK)
        return 0;
    if (total > e->side_size) {
        okpu_free(e->opts.allocator, e->side_block, e->side_size);
        e->side_size = 0;
        e->side_block = okpu_alloc(e->opts.allocator, (size_t)total);
        if (!e->side_block) {
            count_scratch(e);
            okpu_fail(err, OKPU_ERR_NO_MEM, side->layer, -1,
                      "layer %d: no memory for the KPU emulator's %lu-byte work area of a side job", side->layer,
                      (unsigned long)total);
            return -1;
        }
        e->side_size = (size_t)total;
        count_scratch(e);
    }
    return 1;
}

static int emu_run_side(okpu_kpu_backend *self, const okpu_kpu_layer_job *side, okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    uint64_t part[PART_COUNT], total;
    int rc;

    if ((rc = okpu_kpu_args_check(&side->args, side->layer, -1, err)) != OKPU_OK ||
        (rc = scratch_parts(e, &side->args, 1, 1, side->layer, part, &total, err)) != OKPU_OK)
        return rc;
    if (total > e->side_size || !side->weights || !side->bn || !side->act || side->batches > 1u)
        return okpu_fail(err, OKPU_ERR_PARAM, side->layer, -1,
                         "layer %d: run as a side job without prepare_beside accepting it", side->layer);
    run_job(e, side, e->side_block, 1, &e->side_worker, NULL, NULL, forwarded_input(e, side), NULL, NULL);
    return OKPU_OK;
}

static int emu_run_beside(okpu_kpu_backend *self, const okpu_kpu_layer_job *next, const okpu_kpu_layer_job *side,
                          void (*chain)(void *chain_ctx), void *chain_ctx, okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    int rc = job_ready(e, next, NULL, err);

    if (rc != OKPU_OK) {
        e->fwd_valid = 0;
        return rc;
    }
    /* (a side job that would find its input overwritten, not forwarded this time, runs first) */
    if (next_overwrites_input(side, next) && !forwarded_input(e, side)) {
        chain(chain_ctx);
        run_turn(e, next, NULL, NULL);
    } else {
        run_turn(e, next, chain, chain_ctx);
    }
    return OKPU_OK;
}

/* ---- Pairs ----
 * A shared layer and the depthwise layer after it that reads its output: each channel of the second reads the same
 * channel of the first alone, so one hand-out runs both, each task a run of channels of the first and then the same
 * channels of the second (pair_task), where two hand-outs and the wait for the first's last task were (ULFFD's and
 * MobileNet's 1x1 layers are each followed by a depthwise one). Each layer has its block (the first's, a gap, the
 * second's) and its worker records, and writes its own output buffer, neither the last run's, which the first may
 * read (forwarded). What the tasks may then meet in KPU RAM:
 * - the second writes rows that neither layer reads: its input rows are the first's output rows (rows_disjoint),
 *   and the first reads none in its channel tasks (its input planes are loaded, or forwarded, before they start; a
 *   depthwise first layer that loads in its tasks is not paired);
 * - a task reads the second's input channels, in KPU RAM, where the same task wrote them, and no other bytes;
 * - main memory: at most one of the two copies its output there.
 * A first layer split into bands of rows (few channels over many pixels: channel_bands) runs its hand-out, and then
 * the second's, as unpaired layers do. */

/* May `second` run paired with `first` (both jobs' arguments checked already: one map each, the second depthwise
 * reading the first's output whole, both shared, and what the tasks touch apart as above)? */
static int pair_fits(const okpu_kpu_emu *e, const okpu_kpu_layer_job *first, const okpu_kpu_layer_job *second)
{
    const okpu_kpu_args *f = &first->args, *d = &second->args;
    const int f_sets = layer_workers(e, f), d_sets = layer_workers(e, d);

    return !e->reference && e->nworkers > 1 && first->batches <= 1u && second->batches <= 1u && first->weights &&
           first->bn && first->act && second->weights && second->bn && second->act && d->depthwise &&
           d->out_channels == f->out_channels && second->follows_producer && okpu_kpu_reads_output_of(first, second) &&
           f_sets > 1 && d_sets > 1 && rows_disjoint(d) && !by_rows(e, f, f_sets) && !by_rows(e, d, d_sets) &&
           !(f->depthwise && rows_disjoint(f)) && !(first->main_out && second->main_out);
}

/* The block a pair needs: the first's block, a gap, the second's (*first_block: the first's bytes). */
static int pair_scratch(const okpu_kpu_emu *e, const okpu_kpu_layer_job *first, const okpu_kpu_layer_job *second,
                        uint64_t *first_block, uint64_t *total, okpu_error *err)
{
    uint64_t part[PART_COUNT], one, two;
    int rc;

    if ((rc = scratch_parts(e, &first->args, layer_workers(e, &first->args), 0, first->layer, part, &one, err)) !=
            OKPU_OK ||
        (rc = scratch_parts(e, &second->args, layer_workers(e, &second->args), 0, second->layer, part, &two, err)) !=
            OKPU_OK)
        return rc;
    *first_block = one;
    if (okpu_add_ovf(one, WORKER_GAP, OKPU_SIZE_LIMIT, &one) || okpu_add_ovf(one, two, OKPU_SIZE_LIMIT, total) ||
        *total > (uint64_t)(size_t)-1)
        return okpu_fail(err, OKPU_ERR_PARAM, second->layer, -1,
                         "layer %d: the KPU emulator's work area for layers %d and %d run together does not fit in "
                         "memory",
                         second->layer, first->layer, second->layer);
    return OKPU_OK;
}

static int emu_prepare_pair(okpu_kpu_backend *self, const okpu_kpu_layer_job *first,
                            const okpu_kpu_layer_job *second, okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    uint64_t first_block, total;
    int rc;

    if (okpu_kpu_args_check(&first->args, first->layer, -1, NULL) != OKPU_OK ||
        okpu_kpu_args_check(&second->args, second->layer, -1, NULL) != OKPU_OK || !pair_fits(e, first, second) ||
        pair_scratch(e, first, second, &first_block, &total, NULL) != OKPU_OK)
        return 0;
    if (!e->pair_worker) {
        e->pair_worker = okpu_alloc(e->opts.allocator, (size_t)e->nworkers * sizeof *e->pair_worker);
        if (!e->pair_worker) {
            okpu_fail(err, OKPU_ERR_NO_MEM, first->layer, -1,
                      "layer %d: no memory for the KPU emulator's worker records of a pair", first->layer);
            return -1;
        }
        count_scratch(e);
    }
    e->nouts = 3;
    if ((rc = reserve_outs(e, &first->args, first->layer, err)) != OKPU_OK ||
        (rc = reserve_outs(e, &second->args, second->layer, err)) != OKPU_OK ||
        (rc = reserve_scratch(e, total, second->layer, err)) != OKPU_OK)
        return -1;
    return 1;
}

typedef struct pair_tasks {
    channel_tasks *first, *second;
} pair_tasks;

static void pair_task(void *ctx, int worker, uint32_t task)
{
    const pair_tasks *P = ctx;

    channel_task(P->first, worker, task);
    channel_task(P->second, worker, task);
}

static int emu_run_pair(okpu_kpu_backend *self, const okpu_kpu_layer_job *first, const okpu_kpu_layer_job *second,
                        okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    uint64_t first_block, total;
    int rc;

    if ((rc = job_ready(e, first, NULL, err)) != OKPU_OK || (rc = job_ready(e, second, NULL, err)) != OKPU_OK) {
        e->fwd_valid = 0;
        return rc;
    }
    /* (a pair no prepare accepted: one layer after the other) */
    if (!e->pair_worker || e->nouts < 3 || !pair_fits(e, first, second)) {
        run_turn(e, first, NULL, NULL);
        run_turn(e, second, NULL, NULL);
        return OKPU_OK;
    }
    if ((rc = pair_scratch(e, first, second, &first_block, &total, err)) != OKPU_OK ||
        (rc = reserve_scratch(e, total, second->layer, err)) != OKPU_OK) {
        e->fwd_valid = 0;
        return rc;
    }
    {
        const okpu_kpu_args *f = &first->args;
        const int to_first = next_out(e), to_second = (e->last + 2) % 3;
        job_run A, B;

        setup_job(e, first, e->scratch, layer_workers(e, f), e->worker, e->pool, e->outs[to_first],
                  forwarded_input(e, first), NULL, NULL, &A);
        setup_job(e, second, e->scratch + first_block + WORKER_GAP, layer_workers(e, &second->args), e->pair_worker,
                  e->pool, e->outs[to_second], NULL, NULL, NULL, &B);
        if (A.T.bands == 1u && B.T.load) {
            pair_tasks P;
            B.T.per_task = A.T.per_task; /* (the same channel count: pair_fits) */
            B.T.cut = A.T.cut;
            P.first = &A.T;
            P.second = &B.T;
            okpu_workers_run(e->pool, A.tasks, pair_task, &P);
        } else {
            okpu_workers_run(e->pool, A.tasks * A.T.bands, channel_task, &A.T);
            okpu_workers_run(e->pool, B.tasks * B.T.bands, channel_task, &B.T);
        }
        e->fwd_valid = 1;
        e->fwd_job = *second;
        e->last = to_second;
    }
    return OKPU_OK;
}

typedef struct batch_tasks {
    okpu_kpu_emu *e;
    const okpu_kpu_layer_job *job;
    size_t block; /* bytes of each worker's block */
} batch_tasks;

static void batch_task(void *ctx, int worker, uint32_t b)
{
    const batch_tasks *B = ctx;
    okpu_kpu_layer_job one;

    okpu_kpu_job_batch(B->job, b, NULL, &one);
    run_job(B->e, &one, B->e->scratch + (size_t)worker * B->block, 1, &B->e->worker[worker], NULL, NULL, NULL, NULL,
            NULL);
}

/* (The decoded arguments are what the emulator runs: the raw words' addresses, the first batch's, go unread.) */
static int emu_run_batches(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    okpu_kpu_layer_job one;
    uint64_t block;
    uint32_t b;
    int rc;

    if (job->batches < 2u)
        return emu_run_layer(self, job, err);
    e->fwd_valid = 0; /* (a job of several maps is never forwarded, nor forwards: model.c) */
    if ((rc = job_ready(e, job, &block, err)) != OKPU_OK)
        return rc;
    /* (the loaders check every batch's rows: a job built by hand is checked here too) */
    if ((uint64_t)job->args.image_src_addr + (uint64_t)job->in_rows * job->batches > OKPU_KPU_RAM_ROWS ||
        (uint64_t)job->args.image_dst_addr + (uint64_t)job->out_rows * job->batches > OKPU_KPU_RAM_ROWS)
        return okpu_fail(err, OKPU_ERR_PARAM, job->layer, -1,
                         "layer %d: %lu batches of %lu input rows from row %lu or %lu output rows from row %lu run "
                         "past the %u rows of KPU RAM",
                         job->layer, (unsigned long)job->batches, (unsigned long)job->in_rows,
                         (unsigned long)job->args.image_src_addr, (unsigned long)job->out_rows,
                         (unsigned long)job->args.image_dst_addr, (unsigned)OKPU_KPU_RAM_ROWS);
    if (block) {
        batch_tasks B;
        B.e = e;
        B.job = job;
        B.block = (size_t)block;
        okpu_workers_run(e->pool, job->batches, batch_task, &B);
        return OKPU_OK;
    }
    for (b = 0; b < job->batches; b++) {
        okpu_kpu_job_batch(job, b, NULL, &one);
        run_job(e, &one, e->scratch, layer_workers(e, &job->args), e->worker, e->pool, e->outs[next_out(e)], NULL,
                NULL, NULL);
    }
    return OKPU_OK;
}

static void emu_destroy(okpu_kpu_backend *self)
{
    okpu_kpu_emu *e = (okpu_kpu_emu *)(void *)self;
    const okpu_allocator *alloc;
    okpu_allocator copy;
    size_t i;

    if (!e)
        return;
    copy = e->allocator;
    alloc = e->opts.allocator ? &copy : NULL;
    okpu_free(alloc, e->scratch, e->scratch_size);
    okpu_free(alloc, e->side_block, e->side_size);
    free_outs(e);
    for (i = 0; i < e->wt_count; i++) {
        okpu_free(alloc, e->wt[i].term, (size_t)e->wt[i].oc * sizeof(int64_t));
        okpu_free(alloc, e->wt[i].packed, e->wt[i].packed_words * sizeof *e->wt[i].packed);
    }
    okpu_free(alloc, e->wt, e->wt_cap * sizeof *e->wt);
    okpu_workers_destroy(e->pool);
    okpu_free(alloc, e->worker, (size_t)e->nworkers * sizeof *e->worker);
    okpu_free(alloc, e->pair_worker, (size_t)e->nworkers * sizeof *e->pair_worker);
    if (e->owns_ram)
        okpu_free(alloc, e->base.ram, OKPU_KPU_RAM_SIZE);
    okpu_free(alloc, e, sizeof *e);
}

static okpu_kpu_backend *emu_create(const okpu_options *opts, int reference, uint8_t *ram, okpu_error *err)
{
    /* On a board's RAM (the virtual board's register block) one thread: that emulator runs a layer per register
     * write, too little work per call to share. */
    const int threads = ram ? 1 : opts ? opts->threads : 0;
    const char *env;
    okpu_options o;
    okpu_kpu_emu *e;

    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof o); /* zero selects the chip's behaviour for everything the emulator uses */
    e = okpu_alloc(o.allocator, sizeof *e);
    if (!e) {
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "no memory for the KPU emulator (%lu bytes)",
                  (unsigned long)sizeof *e);
        return NULL;
    }
    e->opts = o;
    if (o.allocator) {
        e->allocator = *o.allocator;
        e->opts.allocator = &e->allocator;
    }
    e->reference = reference;
    e->split_all = (env = getenv("OKPU_EMU_SPLIT_ALL")) != NULL && strcmp(env, "1") == 0;
#ifdef EMU_SSE41
    __builtin_cpu_init();
    e->sse41 = __builtin_cpu_supports("sse4.1") && !getenv("OKPU_EMU_NO_SSE41"); /* the variable tests the C path */
    e->avx2 = __builtin_cpu_supports("avx2") && !getenv("OKPU_EMU_NO_AVX2"); /* the variable tests the SSE paths */
    e->avx512 = e->avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                !getenv("OKPU_EMU_NO_AVX512"); /* the variable tests the AVX2 paths */
    e->avx512bw = e->avx512 && __builtin_cpu_supports("avx512bw");
#endif
    e->base.name = reference ? "emulator (reference conv)" : "emulator";
    e->base.run_layer = emu_run_layer;
    e->base.run_batches = emu_run_batches;
    e->base.prepare = emu_prepare;
    e->base.prepare_beside = emu_prepare_beside;
    e->base.run_beside = emu_run_beside;
    e->base.run_side = emu_run_side;
    e->base.prepare_pair = emu_prepare_pair;
    e->base.run_pair = emu_run_pair;
    e->base.destroy = emu_destroy;
    e->nworkers = 1;
    e->nouts = 2;
    e->pool = okpu_workers_create(threads, e->opts.allocator, err);
    if (e->pool)
        e->nworkers = okpu_workers_count(e->pool);
    e->base.workers = e->pool;
    e->worker = e->pool ? okpu_alloc(e->opts.allocator, (size_t)e->nworkers * sizeof *e->worker) : NULL;
    if (!e->worker) {
        if (e->pool)
            okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "no memory for the KPU emulator's %d workers", e->nworkers);
        emu_destroy(&e->base);
        return NULL;
    }
    if (ram) {
        e->base.ram = ram;
        return &e->base;
    }
    e->owns_ram = 1;
    e->base.ram = okpu_alloc(e->opts.allocator, OKPU_KPU_RAM_SIZE);
    if (!e->base.ram) {
        emu_destroy(&e->base);
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "no memory for the emulated KPU RAM (%u bytes)", OKPU_KPU_RAM_SIZE);
        return NULL;
    }
    return &e->base;
}

okpu_kpu_backend *okpu_kpu_emu_create(const okpu_options *opts, okpu_error *err)
{
    const char *env = getenv("OKPU_EMU_REFERENCE");
    return emu_create(opts, env && strcmp(env, "1") == 0, NULL, err);
}

okpu_kpu_backend *okpu_kpu_emu_create_on_ram(const okpu_options *opts, uint8_t *ram, okpu_error *err)
{
    const char *env = getenv("OKPU_EMU_REFERENCE");
    return emu_create(opts, env && strcmp(env, "1") == 0, ram, err);
}

okpu_kpu_backend *okpu_kpu_emu_create_reference(const okpu_options *opts, okpu_error *err)
{
    return emu_create(opts, 1, NULL, err);
}

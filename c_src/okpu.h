/*
 * openkpu: public API of the portable C core.
 *
 * Binding-agnostic: no Python or MicroPython types. Bindings (CPython, MicroPython) and the C tests use only
 * this header. All integers in model files are little-endian; the core never assumes host alignment of the
 * model buffer (every field is read byte by byte).
 */
#ifndef OKPU_H
#define OKPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OKPU_KPU_RAM_SIZE (2u * 1024u * 1024u) /* the KPU's own SRAM */
#define OKPU_KPU_ROW_BYTES 64u
#define OKPU_KPU_RAM_ROWS (OKPU_KPU_RAM_SIZE / OKPU_KPU_ROW_BYTES) /* 32768 */
#define OKPU_BOARD_SRAM_SIZE (6u * 1024u * 1024u)                   /* general SRAM of a K210 */
#define OKPU_MODEL_ALIGN_SLACK 256u /* MaixPy over-allocates the model by this to 256-align it */

/* MaixPy's error codes (SIPEED_KPU_ERR_*), kept numerically identical: users search for them. */
typedef enum okpu_status {
    OKPU_OK = 0,
    OKPU_ERR_PARAM = 2001,
    OKPU_ERR_KMODEL_VERSION = 2002,
    OKPU_ERR_KMODEL_FORMAT = 2003,
    OKPU_ERR_DECRYPT = 2004,
    OKPU_ERR_READ_FILE = 2005,
    OKPU_ERR_NO_MEM = 2006,
    OKPU_ERR_GET_CONV_LAYER = 2007,
    OKPU_ERR_RUN_MODEL = 2008,
    OKPU_ERR_MODELS_FULL = 2009,
    OKPU_ERR_PERMITION = 2010,
    OKPU_ERR_IDX_OUTRANGE = 2011,
    OKPU_ERR_SIZE_NOTMATCH = 2012,
    OKPU_ERR_OUTPUTS_NODONE = 2013,
    OKPU_ERR_NOT_IMPLEMENT = 2014,
    OKPU_ERR_UNKNOWN = 2015
} okpu_status;

/* An error says what was expected, what was found, where (layer, byte offset) and what to do. */
typedef struct okpu_error {
    int code;     /* okpu_status */
    int layer;    /* layer / node index, or -1 */
    long offset;  /* absolute byte offset in the model file, or -1 */
    char message[512];
} okpu_error;

/* "ERR_KMODEL_FORMAT" etc.; "ERR_UNKNOWN" for codes outside the table. */
const char *okpu_status_name(int code);

/* The text a user sees for an error, the same from every binding (CPython, MicroPython, KPU.py):
 *   "[MAIXPY]kpu: <what> error:<code>, <ERR_NAME>: <message>"   (what NULL or "": "[MAIXPY]kpu: error:<code>, ...")
 * MaixPy's prefix and code so people can search for them; the message already names the layer and byte offset where
 * they apply. A code of OKPU_OK counts as OKPU_ERR_UNKNOWN and an empty message reads "(no details)". Writes at most
 * `size` bytes including the terminating NUL (truncating like snprintf) and returns the length of the whole text;
 * OKPU_ERROR_TEXT_SIZE always holds it when `what` is shorter than 64 bytes. */
#define OKPU_ERROR_TEXT_SIZE (sizeof(((okpu_error *)0)->message) + 128u)
size_t okpu_error_format(const okpu_error *e, const char *what, char *buf, size_t size);

typedef enum okpu_dtype { OKPU_DTYPE_F32 = 0, OKPU_DTYPE_U8 = 1 } okpu_dtype;

/* Where public sources disagree (docs/kpu-reference.md section 8) the default follows the chip or the runtime
 * MaixPy ships; the alternatives stay selectable so they can be checked against hardware. */
typedef enum okpu_round_mode {
    OKPU_ROUND_HALF_EVEN = 0, /* nncase v0.2 / v1.0 activation shift */
    OKPU_ROUND_HALF_UP = 1,   /* (v + 2^(s-1)) >> s: nncase v0.2.0-beta4 quantized CPU ops */
    OKPU_ROUND_SDK_CARRY = 2, /* kpu_carry_shift of the SDK's kpu.c (odd-bit carry) */
    OKPU_ROUND_NNCASE1 = 3    /* nncase 1.x Simulator's activation shift (kmodel-v5.md 4.3): act_round only */
} okpu_round_mode;

typedef enum okpu_conv_offset_mode {
    /* the chip: offset terms floored per input channel (docs/kpu-reference.md section 4.1) */
    OKPU_CONV_OFFSET_PER_CHANNEL = 0,
    OKPU_CONV_OFFSET_ONCE = 1         /* nncase's emulators: floored once over the whole sum */
} okpu_conv_offset_mode;

typedef enum okpu_mean_border_mode {
    OKPU_MEAN_BORDER_REPLICATE = 0, /* nncase v0.2: out-of-range taps clamp to the edge, divide by f*f */
    OKPU_MEAN_BORDER_IN_RANGE = 1   /* nncase v0.1: average only the in-range taps */
} okpu_mean_border_mode;

typedef enum okpu_backend_kind { OKPU_BACKEND_EMULATOR = 0, OKPU_BACKEND_K210 = 1 } okpu_backend_kind;

/* Memory hooks so MicroPython can route allocations to its own heap. NULL = malloc/free. */
typedef struct okpu_allocator {
    void *(*alloc)(void *ctx, size_t size); /* zeroed memory or NULL */
    void (*free)(void *ctx, void *ptr, size_t size);
    void *ctx;
} okpu_allocator;

/* How the K210 backend reaches the chip's KPU (docs/kpu-reference.md section 7): its register block, the KPU RAM as the
 * CPU sees it, and the address the KPU must be given for a table in main memory. Board builds get the real one from
 * okpu_k210_board_port(); host tests pass a simulated peripheral, so the driver logic is tested without a board. */
typedef struct okpu_k210_port {
    void *ctx;
    uint64_t (*read_reg)(void *ctx, uint32_t offset);            /* 64-bit register at byte offset */
    void (*write_reg)(void *ctx, uint32_t offset, uint64_t value);
    uint8_t *kpu_ram;                                            /* the 2 MiB KPU RAM */
    int (*kpu_address)(void *ctx, const void *p, uint32_t *addr); /* 0 and *addr, or nonzero: KPU cannot reach p */
    uint32_t max_polls; /* calc_done polls before a layer counts as hung; 0 = OKPU_K210_DEFAULT_POLLS */
    /* With a clock, a layer counts as hung after timeout_us instead (0 = OKPU_K210_DEFAULT_TIMEOUT_US), and the
     * status register is read every few microseconds rather than back to back. NULL: count polls. */
    uint64_t (*now_us)(void *ctx);
    uint32_t timeout_us;
} okpu_k210_port;

#define OKPU_K210_DEFAULT_POLLS 100000000u
#define OKPU_K210_DEFAULT_TIMEOUT_US 1000000u /* the largest real layer takes a few ms on the chip */

typedef struct okpu_options {
    okpu_conv_offset_mode conv_offset;
    okpu_round_mode act_round;      /* KPU activation shift: default HALF_EVEN */
    okpu_round_mode v3_quant_round; /* v3 quantized CPU layers: default SDK_CARRY (the SDK's kpu.c runs them) */
    okpu_round_mode v4_quant_round; /* v4 quantized CPU ops: default HALF_UP (nncase v0.2 runtime) */
    okpu_mean_border_mode mean_border;
    okpu_backend_kind backend;
    const okpu_allocator *allocator;
    const okpu_k210_port *k210_port; /* OKPU_BACKEND_K210 only: NULL = the board's own (board builds) */
    /* Work budget: a model whose forward pass costs more than this (multiply-accumulates + elements touched, summed
     * over its layers) is refused at load with OKPU_ERR_KMODEL_FORMAT naming the layer that crosses it, so a corrupt
     * or hostile file cannot keep a board busy for hours. 0 = OKPU_DEFAULT_MAX_WORK. */
    uint64_t max_work;
    /* kmodel v5: the nncase 1.x release whose stackvm numbering decodes the file: 0 = detect (the newest that decodes
     * it), 1 .. 8 = a release group, oldest first (kmodel/kmodel_v5_release.h); a file that does not decode under the
     * chosen group is refused. */
    int v5_release;
    /* Threads of the KPU emulator's forward pass (each layer's output channels are split over them; the outputs are
     * the same for every count): 0 = the processors this process may use (sched_getaffinity, else
     * sysconf(_SC_NPROCESSORS_ONLN)) in a build with POSIX threads (OKPU_HAVE_PTHREADS), 1..64 = that many. A build
     * without them (the board, MicroPython ports) runs one thread whatever this says. */
    int threads;
} okpu_options;

/* The default work budget: about 15x the largest real model (MobileNet v1 0.75, v3: 542,429,040). */
#define OKPU_DEFAULT_MAX_WORK ((uint64_t)8000000000u)

void okpu_options_default(okpu_options *opts);

/* A tensor as the API shows it: NCHW shape (unknown dims are 1), element type, byte size. */
typedef struct okpu_tensor {
    okpu_dtype dtype;
    uint32_t n, c, h, w;
    uint32_t bytes;
    int layer; /* index of the layer that produced it, -1 for model inputs */
} okpu_tensor;

/* Per-layer description: MaixPy's netinfo fields plus what the tools need. */
typedef struct okpu_layer_info {
    int index;
    uint32_t type;         /* v3 layer type id or v4 opcode */
    const char *type_name; /* "K210_CONV", "kpu_conv2d", ... */
    uint32_t body_offset;  /* absolute file offset of the body */
    uint32_t body_size;    /* declared body size */
    int is_kpu;            /* a KPU convolution layer: depthwise, kernel_type and pool_type come from its words */
    /* input and output map (width, height, channels): a KPU convolution's from its layer-argument words; a CPU
     * windowed layer's (pool, convolution) from its body; 0 for the other layers */
    uint32_t wi, hi, chi, wo, ho, cho;
    int depthwise, kernel_type, pool_type;
    /* the window of a CPU windowed layer (pool, convolution), from its body; 0 when the layer has none (KPU
     * convolutions describe theirs with kernel_type and pool_type) */
    uint32_t kernel_w, kernel_h, stride_w, stride_h;
    uint32_t para_size; /* KPU: para_size field; other layers: body size (MaixPy's convention) */
    uint64_t macs;      /* multiply-accumulates this layer performs on the KPU (0 for CPU layers) */
    uint64_t work;      /* what running it costs: multiply-accumulates or elements touched (>= 1); see max_work */
    okpu_tensor output; /* what the layer writes (the output of a run stopped after this layer) */
} okpu_layer_info;

/* What the model costs on a K210. */
typedef struct okpu_memory_info {
    size_t model_bytes;     /* size of the model file */
    size_t model_alloc;     /* model_bytes + OKPU_MODEL_ALIGN_SLACK, as MaixPy allocates it */
    size_t main_mem;        /* CPU main buffer (v3 main_mem_usage, v4 main_mem) */
    size_t context_bytes;   /* the runtime's own bookkeeping for this model: layers, the plan's steps, the KPU row
                             * map (and a reserved partial-run copy); all a forward pass uses is allocated at load */
    size_t sram_total;      /* model_alloc + main_mem + context_bytes: bytes taken from the 6 MiB */
    size_t backend_scratch; /* working memory the KPU backend took at load for this model's layers (the emulator's
                             * conv buffers; 0 on the K210's own KPU, which needs none); not part of sram_total */
    uint32_t kpu_rows_used; /* distinct 64-byte KPU RAM rows any layer reads or writes */
    uint32_t kpu_row_lo;    /* lowest row touched (OKPU_KPU_RAM_ROWS when none) */
    uint32_t kpu_row_hi;    /* one past the highest row touched (0 when none) */
    uint64_t kpu_macs;      /* multiply-accumulates of one full forward pass on the KPU */
    uint64_t work;          /* sum of the layers' work (okpu_layer_info.work): one forward pass */
    uint64_t max_work;      /* the limit the model was loaded under (okpu_options.max_work) */
} okpu_memory_info;

typedef struct okpu_model okpu_model;

/* Validate and load a model. The core does NOT copy `data`: it must outlive the model (on the board it is the
 * model buffer; bindings keep their bytes object alive). Returns NULL and fills `err` on failure.
 * `opts` may be NULL for the defaults. */
okpu_model *okpu_model_load(const uint8_t *data, size_t size, const okpu_options *opts, okpu_error *err);
void okpu_model_free(okpu_model *model);

int okpu_model_version(const okpu_model *model); /* 3 or 4 */
const okpu_options *okpu_model_options(const okpu_model *model);

int okpu_model_input_count(const okpu_model *model);
int okpu_model_input(const okpu_model *model, int index, okpu_tensor *out);
/* Copy one input into place (planar u8 CHW images, float32 vectors). `size` must equal the input's bytes. The place
 * is the model's (KPU RAM or the main buffer), and the layers after the first may reuse it, as on the chip: set the
 * input again before each run. */
int okpu_model_set_input(okpu_model *model, int index, const void *data, size_t size, okpu_error *err);

/* Run layers [0, n_layers) (n_layers <= 0 or > count: all). After a partial run, output 0 is the last layer's
 * output and the other outputs are unavailable. Everything a full run needs was allocated at load: it cannot fail
 * for lack of memory. A partial run whose last layer writes KPU RAM needs a copy of that output: reserve it first
 * with okpu_model_reserve_partial (MaixPy's set_layers does), or run reserves it and may fail with ERR_NO_MEM. */
int okpu_model_run(okpu_model *model, int n_layers, okpu_error *err);
/* A clock for timed runs, in nanoseconds from any fixed start (the core has none of its own: a binding passes the
 * platform's monotonic clock, a board its timer). */
typedef uint64_t (*okpu_clock_fn)(void *clock_ctx);
/* okpu_model_run, reading `now` around every step: layer_ns (okpu_model_layer_count entries) gets each layer's time
 * in this run, 0 for the layers not run. Layers the plan runs as one (a pair, a side chain with the layer it runs
 * beside: okpu_model_paired, okpu_model_beside) count under their first layer and the others read 0; a partial run's
 * copy of its last output counts under that layer. The times add up to the run's but for its start (a clock read
 * and a wake-up of the workers). Everything else as okpu_model_run. */
int okpu_model_run_timed(okpu_model *model, int n_layers, okpu_clock_fn now, void *clock_ctx, uint64_t *layer_ns,
                         okpu_error *err);
/* okpu_model_run_timed, and task_ns (okpu_model_layer_count entries) gets, per layer as layer_ns, the time the
 * backend's threads spent inside their tasks, summed over the threads (0 for a layer none ran, or a backend without
 * threads: the K210's). On one thread a layer's task time is its time less its serial part; on N threads, more than
 * the one-thread figure means the work itself grew (data read from another processor's cache), and N x layer_ns
 * less task_ns is the threads' time outside tasks (waiting at the joins, serial parts). Each task costs two clock
 * reads more than in a timed run, made on whichever thread runs it: the clock must be callable from several threads
 * at once (a monotonic clock is; a clock with state of its own needs atomics). */
int okpu_model_run_profiled(okpu_model *model, int n_layers, okpu_clock_fn now, void *clock_ctx, uint64_t *layer_ns,
                            uint64_t *task_ns, okpu_error *err);
/* on != 0: the model's passes from now on run every task on the calling thread, each layer still split as on the
 * model's thread count (0: the threads share them again). A diagnostic for okpu_model_run_profiled: its task times
 * are then the split's work without its threads running at once; over the one-thread figures, the split itself costs
 * work, and the rest of an N-thread loss is concurrency (data between the processors' caches, joins, other load on
 * the machine). The outputs are the same either way. Nothing for a model without threads. Call between runs. */
void okpu_model_caller_only(okpu_model *model, int on);
/* Take the memory a run of the first n_layers needs beyond a full run (counted in context_bytes). */
int okpu_model_reserve_partial(okpu_model *model, int n_layers, okpu_error *err);

int okpu_model_output_count(const okpu_model *model);
/* Describe output `index` as the model declares it, without running (OKPU_ERR_IDX_OUTRANGE for a bad index). */
int okpu_model_output_info(const okpu_model *model, int index, okpu_tensor *out);
/* Describe output `index` of the last run and point `*data` at its bytes (valid until the next run or free).
 * Returns OKPU_ERR_IDX_OUTRANGE for a bad index, OKPU_ERR_RUN_MODEL if nothing ran yet. */
int okpu_model_output(const okpu_model *model, int index, okpu_tensor *out, const uint8_t **data, okpu_error *err);

int okpu_model_layer_count(const okpu_model *model);
int okpu_model_layer_info(const okpu_model *model, int index, okpu_layer_info *out);
/* The layer whose shared channels the KPU layer `index` runs beside, on this model's backend and thread count, with
 * the main-memory steps between them (a side chain: see kpu_emu.c), or -1: it runs on its own. */
int okpu_model_beside(const okpu_model *model, int index);
/* The KPU layer run together with the KPU layer `index` (the next one, which reads its output: a pair, see kpu_emu.c),
 * on this model's backend and thread count, or -1: none. */
int okpu_model_paired(const okpu_model *model, int index);
void okpu_model_memory(const okpu_model *model, okpu_memory_info *out);

/* The KPU RAM (2 MiB) for inspection: the emulator's, or on the K210 backend the chip's own (the port's kpu_ram:
 * the uncached AI SRAM on a board), so a board's KPU RAM after a run can be compared with the emulator's. */
const uint8_t *okpu_model_kpu_ram(const okpu_model *model);


/* ---- The KPU as a peripheral (a virtual board's register block) -------------------------------------------------
 * The K210's KPU register block (docs/kpu-reference.md section 7) over a board's memory: the 12 words a driver pushes
 * into the layer FIFO run on the bit-exact emulator, reading their tables from `sram` (KPU bus address =
 * CPU address - 0x40000000, so bus 0x40000000 is sram[0]) and working in `kpu_ram` (the 2 MiB AI SRAM). A virtual
 * board hands its guest memory here, so a firmware's K210 backend runs through the real register sequence. */
typedef struct okpu_kpu_device okpu_kpu_device;

#define OKPU_KPU_BUS_SRAM_BASE 0x40000000u /* the KPU's address of sram[0] */
#define OKPU_KPU_REG_BLOCK_BYTES 0x48u     /* nine 64-bit registers */

okpu_kpu_device *okpu_kpu_device_create(uint8_t *sram, size_t sram_size, uint8_t *kpu_ram, const okpu_options *opts,
                                        okpu_error *err);
void okpu_kpu_device_free(okpu_kpu_device *dev);
/* 64-bit register access at a byte offset (multiple of 8, below OKPU_KPU_REG_BLOCK_BYTES). An access the block
 * does not have, or a layer the KPU cannot run, records a fault (okpu_kpu_device_fault) and is otherwise ignored. */
void okpu_kpu_device_write(okpu_kpu_device *dev, uint32_t offset, uint64_t value);
uint64_t okpu_kpu_device_read(okpu_kpu_device *dev, uint32_t offset);
int okpu_kpu_device_irq(const okpu_kpu_device *dev);                /* the interrupt line (PLIC source 25) */
void okpu_kpu_device_set_hang(okpu_kpu_device *dev, int hang);      /* fault injection: calc_done never rises */
unsigned long okpu_kpu_device_layers_run(const okpu_kpu_device *dev);
const okpu_error *okpu_kpu_device_fault(const okpu_kpu_device *dev); /* NULL while nothing went wrong */
void okpu_kpu_device_clear_fault(okpu_kpu_device *dev);

#ifdef __cplusplus
}
#endif
#endif /* OKPU_H */

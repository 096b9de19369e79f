/* The K210's own KPU behind the backend interface (docs/kpu-reference.md section 7).
 *
 * A layer runs the way nncase v0.2's K210 runtime runs it: clear the interrupts, unmask calc_done only, push the 12
 * layer-argument words into the FIFO with int_en = 1 and send_data_out = 0 and the three table addresses patched to
 * where the tables are, wait for calc_done, clear the interrupts again, and copy a main-memory output out of KPU RAM
 * by CPU (no DMA channel to configure or share). The emulator implements the same contract, so the model driver
 * cannot tell the two apart.
 *
 * Everything touching the chip goes through an okpu_k210_port: board builds (OKPU_HAVE_K210_HW) use the real
 * register block; the host tests drive this file against a simulated peripheral. */
#include <string.h>

#include "../core/alloc.h"
#include "../core/bytes.h"
#include "../core/error.h"
#include "kpu_backend.h"
#include "kpu_layout.h"

/* Register offsets in the AI block (64-bit registers). */
enum {
    K210_REG_LAYER_FIFO = 0x00,
    K210_REG_INT_STATUS = 0x08,
    K210_REG_INT_RAW = 0x10,
    K210_REG_INT_MASK = 0x18,
    K210_REG_INT_CLEAR = 0x20,
    K210_REG_FIFO_THRESHOLD = 0x28,
    K210_REG_FIFO_DATA_OUT = 0x30,
    K210_REG_FIFO_CTRL = 0x38,
    K210_REG_EIGHT_BIT_MODE = 0x40
};

#define K210_INT_CALC_DONE 1u
#define K210_INT_ALL 7u
/* FIFO thresholds as the SDK sets them: full at 10 entries, empty at 1. */
#define K210_FIFO_THRESHOLDS ((1u << 4) | 10u)
/* The KPU fetches its tables with 64-bit reads. */
#define K210_TABLE_ALIGN 8u

typedef struct kpu_k210 {
    okpu_kpu_backend base;
    okpu_k210_port port;
    const okpu_allocator *allocator;
    okpu_allocator allocator_copy;
} kpu_k210;

static uint64_t set_field(uint64_t word, unsigned lo, unsigned width, uint64_t value)
{
    uint64_t mask = (width == 64 ? ~0ull : ((1ull << width) - 1u)) << lo;
    return (word & ~mask) | ((value << lo) & mask);
}

/* The KPU address of one table, checked: reachable and 8-byte aligned. */
static int table_address(const kpu_k210 *k, const okpu_kpu_layer_job *job, const void *p, const char *what,
                         uint32_t *addr, okpu_error *err)
{
    if (k->port.kpu_address(k->port.ctx, p, addr) != 0)
        return okpu_fail(err, OKPU_ERR_RUN_MODEL, job->layer, -1,
                         "layer %d: the KPU cannot read the %s at %p (outside the memory it addresses); keep the "
                         "model in main SRAM",
                         job->layer, what, p);
    if (*addr % K210_TABLE_ALIGN)
        return okpu_fail(err, OKPU_ERR_RUN_MODEL, job->layer, -1,
                         "layer %d: the %s at KPU address 0x%lx is not %u-byte aligned; load the model into a "
                         "256-byte aligned buffer, as the SDK requires",
                         job->layer, what, (unsigned long)*addr, K210_TABLE_ALIGN);
    return OKPU_OK;
}

/* The 12 words to push: the stored argument with the source/destination rows of this job, the three table
 * addresses, the completion interrupt on and the output FIFO off. */
static int build_words(const kpu_k210 *k, const okpu_kpu_layer_job *job, uint64_t words[12], okpu_error *err)
{
    uint32_t bn_addr, act_addr, weights_addr;
    unsigned i;
    int rc;

    if ((rc = table_address(k, job, job->bn, "batch-norm table", &bn_addr, err)) != OKPU_OK ||
        (rc = table_address(k, job, job->act, "activation table", &act_addr, err)) != OKPU_OK ||
        (rc = table_address(k, job, job->weights, "weights", &weights_addr, err)) != OKPU_OK)
        return rc;
    for (i = 0; i < 12; i++)
        words[i] = okpu_rd_u64(job->raw_args + 8 * i);
    words[0] = set_field(words[0], 0, 1, 1);                           /* int_en */
    words[1] = set_field(words[1], 0, 15, job->args.image_src_addr);   /* image_src_addr */
    words[1] = set_field(words[1], 32, 15, job->args.image_dst_addr);  /* image_dst_addr */
    words[4] = set_field(words[4], 32, 32, bn_addr);                   /* bwsx_base_addr */
    words[5] = set_field(words[5], 32, 32, weights_addr);              /* para_start_addr */
    words[7] = set_field(words[7], 32, 32, act_addr);                  /* active_addr */
    words[11] = set_field(words[11], 0, 1, 0);                         /* send_data_out */
    return OKPU_OK;
}

/* About a microsecond of CPU work between two status reads when a clock bounds the wait: every read is a bus
 * access (and on the virtual board a host callback). */
static void pause_between_polls(void)
{
    volatile unsigned spin;
    for (spin = 0; spin < 256u; spin++)
        ;
}

static int wait_calc_done(const kpu_k210 *k, int layer, okpu_error *err)
{
    uint32_t limit = k->port.max_polls ? k->port.max_polls : OKPU_K210_DEFAULT_POLLS;
    uint32_t polls;
    if (k->port.now_us) {
        uint32_t timeout = k->port.timeout_us ? k->port.timeout_us : OKPU_K210_DEFAULT_TIMEOUT_US;
        uint64_t start = k->port.now_us(k->port.ctx);
        for (;;) {
            if (k->port.read_reg(k->port.ctx, K210_REG_INT_STATUS) & K210_INT_CALC_DONE)
                return OKPU_OK;
            if (k->port.now_us(k->port.ctx) - start >= timeout)
                return okpu_fail(err, OKPU_ERR_RUN_MODEL, layer, -1,
                                 "layer %d: the KPU did not signal calc_done within %lu ms; check that its clock is "
                                 "enabled (SYSCTL_CLOCK_AI) and that nothing else drives the KPU",
                                 layer, (unsigned long)(timeout / 1000u));
            pause_between_polls();
        }
    }
    for (polls = 0; polls < limit; polls++)
        if (k->port.read_reg(k->port.ctx, K210_REG_INT_STATUS) & K210_INT_CALC_DONE)
            return OKPU_OK;
    return okpu_fail(err, OKPU_ERR_RUN_MODEL, layer, -1,
                     "layer %d: the KPU did not signal calc_done after %lu polls; check that its clock is enabled "
                     "(SYSCTL_CLOCK_AI) and that nothing else drives the KPU",
                     layer, (unsigned long)limit);
}

static int k210_run_layer(okpu_kpu_backend *self, const okpu_kpu_layer_job *job, okpu_error *err)
{
    kpu_k210 *k = (kpu_k210 *)(void *)self;
    const okpu_kpu_args *a = &job->args;
    uint64_t words[12];
    unsigned i;
    int rc;

    if ((rc = okpu_kpu_args_check(a, job->layer, -1, err)) != OKPU_OK)
        return rc;
    if ((rc = okpu_kpu_args_check_weight_loads(a, job->eight_bit, job->layer, -1, err)) != OKPU_OK)
        return rc;
    if (!job->raw_args || !job->weights || !job->bn || !job->act)
        return okpu_fail(err, OKPU_ERR_PARAM, job->layer, -1,
                         "layer %d: KPU job without its layer argument or tables (the loader must point them into "
                         "the model)",
                         job->layer);
    if ((rc = build_words(k, job, words, err)) != OKPU_OK)
        return rc;

    k->port.write_reg(k->port.ctx, K210_REG_EIGHT_BIT_MODE, job->eight_bit ? 1u : 0u);
    k->port.write_reg(k->port.ctx, K210_REG_INT_CLEAR, K210_INT_ALL);
    k->port.write_reg(k->port.ctx, K210_REG_INT_MASK, K210_INT_ALL & ~K210_INT_CALC_DONE);
    for (i = 0; i < 12; i++)
        k->port.write_reg(k->port.ctx, K210_REG_LAYER_FIFO, words[i]);
    rc = wait_calc_done(k, job->layer, err);
    k->port.write_reg(k->port.ctx, K210_REG_INT_CLEAR, K210_INT_ALL);
    k->port.write_reg(k->port.ctx, K210_REG_INT_MASK, K210_INT_ALL);
    if (rc != OKPU_OK)
        return rc;
    if (job->main_out)
        okpu_kpu_layout_download(self->ram, a->image_dst_addr, job->main_out, a->out_width, a->out_height,
                            a->out_channels);
    return OKPU_OK;
}

static void k210_destroy(okpu_kpu_backend *self)
{
    kpu_k210 *k = (kpu_k210 *)(void *)self;
    if (k)
        okpu_free(k->allocator, k, sizeof *k);
}

okpu_kpu_backend *okpu_kpu_k210_create_on(const okpu_k210_port *port, const okpu_options *opts, okpu_error *err)
{
    const okpu_allocator *alloc = opts ? opts->allocator : NULL;
    kpu_k210 *k;

    if (!port || !port->read_reg || !port->write_reg || !port->kpu_ram || !port->kpu_address) {
        okpu_fail(err, OKPU_ERR_PARAM, -1, -1,
                  "the K210 backend needs a port with read_reg, write_reg, kpu_ram and kpu_address");
        return NULL;
    }
    k = okpu_alloc(alloc, sizeof *k);
    if (!k) {
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "no memory for the K210 backend (%lu bytes)",
                  (unsigned long)sizeof *k);
        return NULL;
    }
    if (alloc) {
        k->allocator_copy = *alloc;
        k->allocator = &k->allocator_copy;
    }
    k->port = *port;
    k->base.name = "K210 KPU";
    k->base.ram = port->kpu_ram;
    k->base.run_layer = k210_run_layer;
    k->base.destroy = k210_destroy;
    k->base.workers = NULL; /* the KPU is one engine; CPU steps run on the caller */
    port->write_reg(port->ctx, K210_REG_INT_CLEAR, K210_INT_ALL);
    port->write_reg(port->ctx, K210_REG_INT_MASK, K210_INT_ALL);
    port->write_reg(port->ctx, K210_REG_FIFO_THRESHOLD, K210_FIFO_THRESHOLDS);
    return &k->base;
}

#ifdef OKPU_HAVE_K210_HW
/* The chip: AI register block at 0x40800000, KPU RAM through its uncached alias 0x40600000, and the KPU addressing
 * main SRAM at (CPU address - 0x40000000) as the SDK patches it. The caller enables SYSCTL_CLOCK_AI beforehand.
 * Uncached because the KPU reads and writes that RAM behind the CPU's data cache: through the cached alias
 * (0x80600000) an uploaded input could still sit in the cache when the KPU reads it, and a download could return
 * stale lines of an earlier run. The SDK (AI_IO_BASE_ADDR, USE_CACHED_AI_RAM 0) and nncase's K210 runtime use
 * 0x40600000 for the same reason. */
#define K210_AI_BASE 0x40800000u
#define K210_KPU_RAM 0x40600000u
#define K210_IOMEM 0x40000000u
#define K210_SRAM_LO 0x80000000u
#define K210_SRAM_HI 0x80600000u

static uint64_t board_read(void *ctx, uint32_t offset)
{
    (void)ctx;
    return *(volatile uint64_t *)(uintptr_t)(K210_AI_BASE + offset);
}

static void board_write(void *ctx, uint32_t offset, uint64_t value)
{
    (void)ctx;
    *(volatile uint64_t *)(uintptr_t)(K210_AI_BASE + offset) = value;
}

static int board_address(void *ctx, const void *p, uint32_t *addr)
{
    uintptr_t a = (uintptr_t)p;
    (void)ctx;
    if (a < K210_SRAM_LO || a >= K210_SRAM_HI)
        return 1;
    *addr = (uint32_t)(a - K210_IOMEM);
    return 0;
}

static uint64_t board_now_us(void *ctx)
{
    (void)ctx;
    return okpu_board_time_us();
}

const okpu_k210_port *okpu_k210_board_port(void)
{
    static const okpu_k210_port port = {NULL, board_read, board_write, (uint8_t *)(uintptr_t)K210_KPU_RAM,
                                        board_address, 0, board_now_us, 0};
    return &port;
}

okpu_kpu_backend *okpu_kpu_k210_create(const okpu_options *opts, okpu_error *err)
{
    return okpu_kpu_k210_create_on(okpu_k210_board_port(), opts, err);
}
#endif

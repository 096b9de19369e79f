// SPDX-License-Identifier: Apache-2.0
/* The KPU as a peripheral: the K210's register block (docs/kpu-reference.md section 7) in front of the bit-exact
 * emulator, over a board's own memory. The virtual Maix board maps it at 0x40800000, so a firmware's K210 backend (or any
 * driver) runs through the real register sequence and its layers run on the same arithmetic as the PC emulator.
 *
 * What the block does, as far as drivers can see it:
 * - the 12th word written to the layer FIFO starts the layer; its three table addresses are KPU bus addresses
 *   (CPU address - 0x40000000), read from the board's SRAM;
 * - interrupt_raw bit 0 (calc_done) latches when a layer with int_en finishes; bits 1/2 (FIFO almost empty / almost
 *   full) are levels against fifo_threshold; interrupt_status = raw & ~mask; interrupt_clear clears latched bits;
 * - a layer with send_data_out queues its output, densely, for 64-bit reads of fifo_data_out (the SDK's DMA path);
 * - layers arrive one at a time with no model load before them, so each is prepared (the emulator's working memory
 *   grown to fit it, kept for the next) just before it runs: a board without the memory faults on that layer;
 * - anything a real KPU would do something undefined with (a bad argument, a table outside SRAM, an unknown
 *   register) is recorded as a fault with the layer and the reason, so the board can stop and say so. */
#include <string.h>

#include "../core/alloc.h"
#include "../core/bytes.h"
#include "../core/error.h"
#include "kpu_backend.h"
#include "kpu_layout.h"

enum {
    REG_LAYER_FIFO = 0x00,
    REG_INT_STATUS = 0x08,
    REG_INT_RAW = 0x10,
    REG_INT_MASK = 0x18,
    REG_INT_CLEAR = 0x20,
    REG_FIFO_THRESHOLD = 0x28,
    REG_FIFO_DATA_OUT = 0x30,
    REG_FIFO_CTRL = 0x38,
    REG_EIGHT_BIT_MODE = 0x40
};

#define INT_CALC_DONE 1u
#define INT_ALMOST_EMPTY 2u
#define INT_ALMOST_FULL 4u
#define INT_ALL 7u
#define TABLE_ALIGN 8u /* the KPU fetches its tables in 64-bit words */

struct okpu_kpu_device {
    okpu_kpu_backend *emu;
    okpu_allocator allocator;
    const okpu_allocator *alloc; /* &allocator or NULL (malloc) */
    uint8_t *sram;
    size_t sram_size;
    uint64_t fifo[12];
    unsigned fifo_n;
    uint64_t int_latched, int_mask, fifo_threshold, fifo_ctrl, eight_bit;
    uint8_t *out;       /* fifo_data_out queue */
    size_t out_cap, out_len, out_pos;
    int hang;
    unsigned long layers_run;
    int has_fault;
    okpu_error fault;
};

static void record_fault(okpu_kpu_device *d, const okpu_error *err)
{
    if (!d->has_fault) { /* the first fault is the one that explains the rest */
        d->fault = *err;
        d->has_fault = 1;
    }
}

static void fault_unknown_register(okpu_kpu_device *d, const char *op, uint32_t offset)
{
    okpu_error err;
    okpu_fail(&err, OKPU_ERR_RUN_MODEL, -1, -1,
              "KPU register block: %s at offset 0x%lx, which is not one of its nine 64-bit registers "
              "(0x00..0x40, step 8)",
              op, (unsigned long)offset);
    record_fault(d, &err);
}

/* A table the layer reads: inside SRAM as the KPU addresses it, 8-byte aligned. */
static const uint8_t *resolve_table(const okpu_kpu_device *d, uint32_t bus, uint32_t size, const char *what,
                                    int layer, okpu_error *err)
{
    uint64_t off = (uint64_t)bus - OKPU_KPU_BUS_SRAM_BASE;
    if (bus < OKPU_KPU_BUS_SRAM_BASE || off > d->sram_size || size > d->sram_size - off) {
        okpu_fail(err, OKPU_ERR_RUN_MODEL, layer, -1,
                  "KPU layer %d: the %s (%lu bytes at KPU bus address 0x%08lx) is outside the SRAM the KPU reads "
                  "(0x%08lx..0x%08lx); the driver must patch the address to CPU address - 0x40000000",
                  layer, what, (unsigned long)size, (unsigned long)bus, (unsigned long)OKPU_KPU_BUS_SRAM_BASE,
                  (unsigned long)(OKPU_KPU_BUS_SRAM_BASE + d->sram_size));
        return NULL;
    }
    if (bus % TABLE_ALIGN) {
        okpu_fail(err, OKPU_ERR_RUN_MODEL, layer, -1,
                  "KPU layer %d: the %s at KPU bus address 0x%08lx is not %u-byte aligned (the KPU fetches tables in "
                  "64-bit words)",
                  layer, what, (unsigned long)bus, TABLE_ALIGN);
        return NULL;
    }
    return d->sram + off;
}

static int queue_output(okpu_kpu_device *d, const okpu_kpu_args *a, int layer, okpu_error *err)
{
    size_t n = (size_t)a->out_width * a->out_height * a->out_channels;
    if (n > d->out_cap) {
        uint8_t *p = okpu_alloc(d->alloc, n);
        if (!p)
            return okpu_fail(err, OKPU_ERR_NO_MEM, layer, -1, "KPU layer %d: no memory for its %lu-byte output FIFO",
                             layer, (unsigned long)n);
        okpu_free(d->alloc, d->out, d->out_cap);
        d->out = p;
        d->out_cap = n;
    }
    okpu_kpu_layout_download(d->emu->ram, a->image_dst_addr, d->out, a->out_width, a->out_height, a->out_channels);
    d->out_len = n;
    d->out_pos = 0;
    return OKPU_OK;
}

static void execute_layer(okpu_kpu_device *d)
{
    uint8_t raw[KPU_ARGS_BYTES];
    okpu_kpu_layer_job job;
    okpu_error err;
    int layer = (int)d->layers_run;
    unsigned i;

    for (i = 0; i < 12; i++)
        okpu_wr_u64(raw + 8 * i, d->fifo[i]);
    memset(&job, 0, sizeof job);
    job.raw_args = raw;
    job.layer = layer;
    job.eight_bit = (int)(d->eight_bit & 1u);
    okpu_kpu_args_decode(raw, &job.args);
    if (okpu_kpu_args_check(&job.args, layer, -1, &err) != OKPU_OK ||
        okpu_kpu_args_check_weight_loads(&job.args, job.eight_bit, layer, -1, &err) != OKPU_OK ||
        !(job.bn = resolve_table(d, job.args.bwsx_base_addr, okpu_kpu_bn_bytes(&job.args), "batch-norm table", layer,
                                 &err)) ||
        !(job.weights = resolve_table(d, job.args.para_start_addr, okpu_kpu_weights_bytes(&job.args, job.eight_bit),
                                      "weights", layer, &err)) ||
        !(job.act = resolve_table(d, job.args.active_addr, KPU_ACT_TABLE_BYTES, "activation table", layer, &err)) ||
        d->emu->prepare(d->emu, &job, &err) != OKPU_OK || d->emu->run_layer(d->emu, &job, &err) != OKPU_OK ||
        (job.args.send_data_out && queue_output(d, &job.args, layer, &err) != OKPU_OK)) {
        record_fault(d, &err);
        return;
    }
    d->layers_run++;
    if (job.args.int_en)
        d->int_latched |= INT_CALC_DONE;
}

static uint64_t int_raw(const okpu_kpu_device *d)
{
    uint64_t raw = d->int_latched;
    unsigned full = (unsigned)(d->fifo_threshold & 0xFu), empty = (unsigned)((d->fifo_threshold >> 4) & 0xFu);
    if (d->fifo_n <= empty)
        raw |= INT_ALMOST_EMPTY;
    if (d->fifo_n >= full)
        raw |= INT_ALMOST_FULL;
    return raw;
}

void okpu_kpu_device_write(okpu_kpu_device *d, uint32_t offset, uint64_t value)
{
    switch (offset) {
    case REG_LAYER_FIFO:
        d->fifo[d->fifo_n++] = value;
        if (d->fifo_n == 12) {
            d->fifo_n = 0;
            if (!d->hang)
                execute_layer(d);
        }
        break;
    case REG_INT_CLEAR:
        d->int_latched &= ~value;
        break;
    case REG_INT_MASK:
        d->int_mask = value & INT_ALL;
        break;
    case REG_FIFO_THRESHOLD:
        d->fifo_threshold = value & 0xFFu;
        break;
    case REG_FIFO_CTRL:
        d->fifo_ctrl = value & 0x1Fu;
        break;
    case REG_EIGHT_BIT_MODE:
        d->eight_bit = value & 1u;
        break;
    case REG_INT_STATUS:
    case REG_INT_RAW:
    case REG_FIFO_DATA_OUT:
        /* read-only: a write is a driver bug worth stopping for */
    default:
        fault_unknown_register(d, "write", offset);
        break;
    }
}

uint64_t okpu_kpu_device_read(okpu_kpu_device *d, uint32_t offset)
{
    switch (offset) {
    case REG_INT_STATUS:
        return int_raw(d) & ~d->int_mask;
    case REG_INT_RAW:
        return int_raw(d);
    case REG_INT_MASK:
        return d->int_mask;
    case REG_FIFO_THRESHOLD:
        return d->fifo_threshold;
    case REG_FIFO_CTRL:
        return d->fifo_ctrl;
    case REG_EIGHT_BIT_MODE:
        return d->eight_bit;
    case REG_FIFO_DATA_OUT: {
        uint8_t word[8] = {0};
        size_t n = d->out_len - d->out_pos < 8 ? d->out_len - d->out_pos : 8;
        memcpy(word, d->out + d->out_pos, n);
        d->out_pos += n;
        return okpu_rd_u64(word);
    }
    default:
        fault_unknown_register(d, "read", offset);
        return 0;
    }
}

int okpu_kpu_device_irq(const okpu_kpu_device *d)
{
    return (int_raw(d) & ~d->int_mask & INT_ALL) != 0;
}

void okpu_kpu_device_set_hang(okpu_kpu_device *d, int hang)
{
    d->hang = hang != 0;
}

unsigned long okpu_kpu_device_layers_run(const okpu_kpu_device *d)
{
    return d->layers_run;
}

const okpu_error *okpu_kpu_device_fault(const okpu_kpu_device *d)
{
    return d->has_fault ? &d->fault : NULL;
}

void okpu_kpu_device_clear_fault(okpu_kpu_device *d)
{
    d->has_fault = 0;
}

okpu_kpu_device *okpu_kpu_device_create(uint8_t *sram, size_t sram_size, uint8_t *kpu_ram, const okpu_options *opts,
                                        okpu_error *err)
{
    const okpu_allocator *alloc = opts ? opts->allocator : NULL;
    okpu_kpu_device *d;

    if (!sram || !kpu_ram || sram_size > 0xFFFFFFFFu - OKPU_KPU_BUS_SRAM_BASE) {
        okpu_fail(err, OKPU_ERR_PARAM, -1, -1,
                  "a KPU device needs the board's SRAM (at most %lu bytes) and its 2 MiB KPU RAM",
                  (unsigned long)(0xFFFFFFFFu - OKPU_KPU_BUS_SRAM_BASE));
        return NULL;
    }
    d = okpu_alloc(alloc, sizeof *d);
    if (!d) {
        okpu_fail(err, OKPU_ERR_NO_MEM, -1, -1, "no memory for a KPU device (%lu bytes)", (unsigned long)sizeof *d);
        return NULL;
    }
    if (alloc) {
        d->allocator = *alloc;
        d->alloc = &d->allocator;
    }
    d->emu = okpu_kpu_emu_create_on_ram(opts, kpu_ram, err);
    if (!d->emu) {
        okpu_free(d->alloc, d, sizeof *d);
        return NULL;
    }
    d->sram = sram;
    d->sram_size = sram_size;
    d->int_mask = INT_ALL; /* reset state: everything masked until a driver unmasks what it waits for */
    d->eight_bit = 1;
    return d;
}

void okpu_kpu_device_free(okpu_kpu_device *d)
{
    const okpu_allocator *alloc;
    okpu_allocator copy;
    if (!d)
        return;
    copy = d->allocator;
    alloc = d->alloc ? &copy : NULL;
    d->emu->destroy(d->emu);
    okpu_free(alloc, d->out, d->out_cap);
    okpu_free(alloc, d, sizeof *d);
}

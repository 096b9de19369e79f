/* Decode and validation of the KPU layer argument (docs/kpu-reference.md section 3 for the bits, 4.4 and 4.6 for the
 * limits). Every word is read byte by byte: model buffers are not aligned. */
#include "kpu_args.h"

#include <stdio.h>

#include "../core/bytes.h"
#include "../core/error.h"
#include "kpu_layout.h"

#define KPU_MAX_CHANNELS 1024u
#define KPU_MIN_SIDE 4u
#define KPU_MAX_WIDTH 512u
#define KPU_MAX_HEIGHT 256u
#define KPU_KERNEL_TYPES 2u
enum { /* one entry per pool type: their count */
#define OKPU_KPU_POOL(type, side, stride, kind, name) KPU_POOL_ENTRY_##type,
#include "kpu_pool_types.def"
#undef OKPU_KPU_POOL
    KPU_POOL_ENTRIES
};
#define KPU_POOL_TYPES ((unsigned)KPU_POOL_ENTRIES)

static uint64_t word(const uint8_t *raw, unsigned index)
{
    return okpu_rd_u64(raw + 8u * index);
}

void okpu_kpu_args_decode(const uint8_t raw[KPU_ARGS_BYTES], okpu_kpu_args *a)
{
    uint64_t w;

    w = word(raw, 0);
    a->int_en = (unsigned)okpu_bits(w, 0, 1);
    a->ram_flag = (unsigned)okpu_bits(w, 1, 1);
    a->full_add = (unsigned)okpu_bits(w, 2, 1);
    a->depthwise = (unsigned)okpu_bits(w, 3, 1);

    w = word(raw, 1);
    a->image_src_addr = (uint32_t)okpu_bits(w, 0, 15);
    a->image_dst_addr = (uint32_t)okpu_bits(w, 32, 15);

    w = word(raw, 2);
    a->in_channels = (uint32_t)okpu_bits(w, 0, 10) + 1u;
    a->out_channels = (uint32_t)okpu_bits(w, 32, 10) + 1u;
    a->out_channels_coef = (uint32_t)okpu_bits(w, 48, 10) + 1u;

    w = word(raw, 3);
    a->in_width = (uint32_t)okpu_bits(w, 0, 10) + 1u;
    a->in_height = (uint32_t)okpu_bits(w, 10, 9) + 1u;
    a->out_width = (uint32_t)okpu_bits(w, 32, 10) + 1u;
    a->out_height = (uint32_t)okpu_bits(w, 42, 9) + 1u;

    w = word(raw, 4);
    a->kernel_type = (unsigned)okpu_bits(w, 0, 3);
    a->pad_type = (unsigned)okpu_bits(w, 3, 1);
    a->pool_type = (unsigned)okpu_bits(w, 4, 4);
    a->first_stride = (unsigned)okpu_bits(w, 8, 1);
    a->bypass_conv = (unsigned)okpu_bits(w, 9, 1);
    a->load_para = (unsigned)okpu_bits(w, 10, 1);
    a->dma_burst_size = (unsigned)okpu_bits(w, 16, 8);
    a->pad_value = (uint8_t)okpu_bits(w, 24, 8);
    a->bwsx_base_addr = (uint32_t)okpu_bits(w, 32, 32);

    w = word(raw, 5);
    a->load_coor = (unsigned)okpu_bits(w, 0, 1);
    a->load_time = (unsigned)okpu_bits(w, 1, 6);
    a->para_size = (uint32_t)okpu_bits(w, 15, 17);
    a->para_start_addr = (uint32_t)okpu_bits(w, 32, 32);

    w = word(raw, 6);
    a->coef_column_offset = (unsigned)okpu_bits(w, 0, 4);
    a->coef_row_offset = (unsigned)okpu_bits(w, 4, 12);

    w = word(raw, 7);
    a->channel_switch_addr = (uint32_t)okpu_bits(w, 0, 15);
    a->row_switch_addr = (unsigned)okpu_bits(w, 16, 4);
    a->coef_size = (unsigned)okpu_bits(w, 20, 8);
    a->coef_group = (unsigned)okpu_bits(w, 28, 3);
    a->load_act = (unsigned)okpu_bits(w, 31, 1);
    a->active_addr = (uint32_t)okpu_bits(w, 32, 32);

    w = word(raw, 8);
    a->wb_channel_switch_addr = (uint32_t)okpu_bits(w, 0, 15);
    a->wb_row_switch_addr = (unsigned)okpu_bits(w, 16, 4);
    a->wb_group = (unsigned)okpu_bits(w, 20, 3);

    w = word(raw, 9);
    a->shr_w = (unsigned)okpu_bits(w, 0, 4);
    a->shr_x = (unsigned)okpu_bits(w, 4, 4);
    a->arg_w = (int32_t)okpu_sext(okpu_bits(w, 8, 24), 24);
    a->arg_x = (int32_t)okpu_sext(okpu_bits(w, 32, 24), 24);

    w = word(raw, 10);
    a->arg_add = okpu_sext(okpu_bits(w, 0, 40), 40);

    w = word(raw, 11);
    a->send_data_out = (unsigned)okpu_bits(w, 0, 1);
    a->channel_byte_num = (uint32_t)okpu_bits(w, 16, 16);
    a->dma_total_byte = (uint32_t)okpu_bits(w, 32, 32);
}

void okpu_kpu_bn_decode(const uint8_t raw[KPU_BN_ENTRY_BYTES], okpu_kpu_bn *bn)
{
    uint64_t w = okpu_rd_u64(raw);
    bn->norm_mul = (int32_t)okpu_sext(okpu_bits(w, 0, 24), 24);
    bn->norm_add = (int32_t)okpu_sext(okpu_bits(w, 24, 32), 32);
    bn->norm_shift = (unsigned)okpu_bits(w, 56, 4);
}

void okpu_kpu_act_decode(const uint8_t raw[KPU_ACT_TABLE_BYTES], okpu_kpu_act *act)
{
    unsigned i;
    for (i = 0; i < 16; i++) {
        uint64_t w = okpu_rd_u64(raw + 8u * i);
        act->shift[i] = (unsigned)okpu_bits(w, 0, 8);
        act->y_mul[i] = (int32_t)okpu_sext(okpu_bits(w, 8, 16), 16);
        act->x_start[i] = okpu_sext(okpu_bits(w, 24, 36), 36);
    }
    /* Two trailing u64 words hold result_bias as bytes, least significant first: byte i is segment i's bias. */
    for (i = 0; i < 16; i++)
        act->bias[i] = raw[128 + i];
}

unsigned okpu_kpu_kernel_size(const okpu_kpu_args *a)
{
    return a->kernel_type == 1 ? 3u : 1u;
}

unsigned okpu_kpu_pool_window(unsigned pool_type)
{
    static const unsigned window[KPU_POOL_TYPES] = {
#define OKPU_KPU_POOL(type, side, stride, kind, name) side,
#include "kpu_pool_types.def"
#undef OKPU_KPU_POOL
    };
    return pool_type < KPU_POOL_TYPES ? window[pool_type] : 0u;
}

unsigned okpu_kpu_pool_stride(unsigned pool_type)
{
    static const unsigned stride[KPU_POOL_TYPES] = {
#define OKPU_KPU_POOL(type, side, step, kind, name) step,
#include "kpu_pool_types.def"
#undef OKPU_KPU_POOL
    };
    return pool_type < KPU_POOL_TYPES ? stride[pool_type] : 0u;
}

uint32_t okpu_kpu_weights_bytes(const okpu_kpu_args *a, int eight_bit)
{
    uint32_t k = okpu_kpu_kernel_size(a);
    uint32_t taps = a->depthwise ? a->out_channels * k * k : a->in_channels * a->out_channels * k * k;
    return eight_bit ? taps : 2u * taps;
}

uint32_t okpu_kpu_bn_bytes(const okpu_kpu_args *a)
{
    return KPU_BN_ENTRY_BYTES * a->out_channels;
}

uint64_t okpu_kpu_args_macs(const okpu_kpu_args *a)
{
    uint64_t k = okpu_kpu_kernel_size(a);
    uint64_t per_pixel = a->depthwise ? (uint64_t)a->out_channels * k * k
                                      : (uint64_t)a->in_channels * a->out_channels * k * k;
    return per_pixel * a->in_width * a->in_height;
}

/* Reject a field: "<what> (<field> at byte offset N)" so the user can find it in a hex dump. */
static int reject(okpu_error *err, int layer, long args_offset, unsigned word_index, const char *field,
                  const char *what)
{
    if (args_offset >= 0)
        return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, layer, args_offset + 8L * (long)word_index,
                         "layer %d: %s (%s at byte offset %ld); the model was not made for the K210's KPU or is "
                         "damaged: re-export it with nncase or Maix-EMC",
                         layer, what, field, args_offset + 8L * (long)word_index);
    return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, layer, -1,
                     "layer %d: %s (%s); the model was not made for the K210's KPU or is damaged: re-export it "
                     "with nncase or Maix-EMC",
                     layer, what, field);
}

static int check_side(okpu_error *err, int layer, long offset, const char *field, const char *name,
                      uint32_t value, uint32_t limit)
{
    char what[200];
    if (value < KPU_MIN_SIDE)
        OKPU_MSGF(what, sizeof what, "KPU conv input %s %lu is below the KPU minimum of %u", name,
                 (unsigned long)value, KPU_MIN_SIDE);
    else if (value > limit)
        OKPU_MSGF(what, sizeof what, "KPU conv input %s %lu exceeds the KPU limit of %lu", name,
                 (unsigned long)value, (unsigned long)limit);
    else
        return OKPU_OK;
    return reject(err, layer, offset, 3, field, what);
}

static int check_region(okpu_error *err, int layer, long offset, const char *field, const char *name,
                        uint32_t row, uint32_t width, uint32_t height, uint32_t channels)
{
    uint32_t rows = okpu_kpu_layout_rows(width, height, channels);
    char what[240];
    if ((uint64_t)row + rows <= OKPU_KPU_RAM_ROWS)
        return OKPU_OK;
    OKPU_MSGF(what, sizeof what,
             "KPU conv %s map (%lux%lux%lu, %lu rows of 64 bytes) starting at row %lu ends at row %lu, past the "
             "end of the %u-row KPU RAM",
             name, (unsigned long)width, (unsigned long)height, (unsigned long)channels, (unsigned long)rows,
             (unsigned long)row, (unsigned long)((uint64_t)row + rows), OKPU_KPU_RAM_ROWS);
    return reject(err, layer, offset, 1, field, what);
}

int okpu_kpu_args_check(const okpu_kpu_args *a, int layer, long offset, okpu_error *err)
{
    char what[240];
    unsigned stride;
    int rc;

    /* Channel counts need no check: their 10-bit fields hold count - 1, so 1..1024 is all they can express. */
    if ((rc = check_side(err, layer, offset, "i_row_wid", "width", a->in_width, KPU_MAX_WIDTH)) != OKPU_OK)
        return rc;
    if ((rc = check_side(err, layer, offset, "i_col_high", "height", a->in_height, KPU_MAX_HEIGHT)) != OKPU_OK)
        return rc;

    if (a->kernel_type >= KPU_KERNEL_TYPES) {
        OKPU_MSGF(what, sizeof what, "KPU kernel_type %u is not 0 (1x1) or 1 (3x3)", a->kernel_type);
        return reject(err, layer, offset, 4, "kernel_type", what);
    }
    if (a->pool_type >= KPU_POOL_TYPES) {
        OKPU_MSGF(what, sizeof what, "KPU pool_type %u is not one of the KPU's pool types 0..%u", a->pool_type,
                 KPU_POOL_TYPES - 1);
        return reject(err, layer, offset, 4, "pool_type", what);
    }
    if (a->depthwise && a->in_channels != a->out_channels) {
        OKPU_MSGF(what, sizeof what, "depthwise KPU conv has %lu input channels but %lu output channels (must be equal)",
                 (unsigned long)a->in_channels, (unsigned long)a->out_channels);
        return reject(err, layer, offset, 2, "o_ch_num", what);
    }

    /* The pooled output size is fixed by the input and the pool type (floor of in / stride). */
    stride = okpu_kpu_pool_stride(a->pool_type);
    if (a->out_width != a->in_width / stride || a->out_height != a->in_height / stride) {
        OKPU_MSGF(what, sizeof what,
                 "KPU conv output %lux%lu does not match input %lux%lu with pool_type %u (stride %u): expected "
                 "%lux%lu",
                 (unsigned long)a->out_width, (unsigned long)a->out_height, (unsigned long)a->in_width,
                 (unsigned long)a->in_height, a->pool_type, stride, (unsigned long)(a->in_width / stride),
                 (unsigned long)(a->in_height / stride));
        return reject(err, layer, offset, 3, "o_row_wid/o_col_high", what);
    }

    if ((rc = check_region(err, layer, offset, "image_src_addr", "input", a->image_src_addr, a->in_width,
                           a->in_height, a->in_channels)) != OKPU_OK)
        return rc;
    if ((rc = check_region(err, layer, offset, "image_dst_addr", "output", a->image_dst_addr, a->out_width,
                           a->out_height, a->out_channels)) != OKPU_OK)
        return rc;

    /* The output DMA moves channel_byte_num + 1 bytes per channel, dma_total_byte + 1 in all. */
    if (a->send_data_out) {
        uint64_t plane = (uint64_t)a->out_width * a->out_height;
        if ((uint64_t)a->channel_byte_num + 1u != plane) {
            OKPU_MSGF(what, sizeof what, "KPU output DMA channel size %lu bytes differs from the %lux%lu output (%lu)",
                     (unsigned long)a->channel_byte_num + 1ul, (unsigned long)a->out_width,
                     (unsigned long)a->out_height, (unsigned long)plane);
            return reject(err, layer, offset, 11, "channel_byte_num", what);
        }
        if ((uint64_t)a->dma_total_byte + 1u != plane * a->out_channels) {
            OKPU_MSGF(what, sizeof what, "KPU output DMA total %lu bytes differs from the %lux%lux%lu output (%lu)",
                     (unsigned long)((uint64_t)a->dma_total_byte + 1u), (unsigned long)a->out_width,
                     (unsigned long)a->out_height, (unsigned long)a->out_channels,
                     (unsigned long)(plane * a->out_channels));
            return reject(err, layer, offset, 11, "dma_total_byte", what);
        }
    }
    return OKPU_OK;
}

/* The KPU fetches its weights itself: load_time + 1 loads of para_size bytes from para_start_addr, each for
 * o_ch_num_coef output channels (the last load takes the remaining channels). Nothing else in the layer words bounds
 * that read, so a word with a large para_size or load_time makes the chip read past the model's weights. Accepted:
 * the layout nncase v0.2 and Maix-EMC write (docs/kpu-reference.md section 3) and every real model carries -
 * load_time + 1 = ceil(out channels / channels per load), para_size = bytes per channel x channels per load (or
 * less: a shorter load reads less) - so the loads stay inside the okpu_kpu_weights_bytes() the loader validated. */
int okpu_kpu_args_check_weight_loads(const okpu_kpu_args *a, int eight_bit, int layer, long offset, okpu_error *err)
{
    uint64_t k = okpu_kpu_kernel_size(a);
    uint64_t per_ch = (a->depthwise ? k * k : (uint64_t)a->in_channels * k * k) * (eight_bit ? 1u : 2u);
    uint64_t per_load = a->out_channels_coef, loads = a->load_time + 1u;
    uint64_t want_loads = per_load ? (a->out_channels + per_load - 1u) / per_load : 0u;
    if (!a->load_para) /* the KPU keeps the weights already loaded and reads none */
        return OKPU_OK;
    if (per_load >= 1u && per_load <= a->out_channels && a->para_size <= per_ch * per_load && loads == want_loads)
        return OKPU_OK;
    return okpu_fail(err, OKPU_ERR_KMODEL_FORMAT, layer, offset,
                     "layer %d: the KPU's weight loads (para_size %lu bytes x %lu loads, %lu output channels per "
                     "load) do not match the layer's %lu output channels of %llu weight bytes each (expected "
                     "para_size <= %llu, %llu loads): the chip would read %llu bytes from a table of %lu, past the "
                     "model's weights; the file is corrupt - recompile or copy it again",
                     layer, (unsigned long)a->para_size, (unsigned long)loads, (unsigned long)per_load,
                     (unsigned long)a->out_channels, (unsigned long long)per_ch,
                     (unsigned long long)(per_ch * (per_load ? per_load : 1u)), (unsigned long long)want_loads,
                     (unsigned long long)a->para_size * loads, (unsigned long)okpu_kpu_weights_bytes(a, eight_bit));
}

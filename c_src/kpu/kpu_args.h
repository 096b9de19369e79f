/* The KPU layer argument: 12 little-endian u64 words (kpu_layer_argument_t), decoded into named fields.
 * Bit positions: docs/kpu-reference.md section 3. The emulator and the hardware backend both start from these words. */
#ifndef OKPU_KPU_ARGS_H
#define OKPU_KPU_ARGS_H

#include <stdint.h>

#include "../okpu.h"

#define KPU_ARGS_BYTES 96u
#define KPU_ACT_TABLE_BYTES 144u /* 16 segments x u64 + 2 x u64 of result_bias */
#define KPU_BN_ENTRY_BYTES 8u

typedef struct okpu_kpu_args {
    /* word 0 */
    unsigned int_en, ram_flag, full_add, depthwise;
    /* word 1: 64-byte row indices into KPU RAM */
    uint32_t image_src_addr, image_dst_addr;
    /* word 2 (stored minus one; the *_num fields hold the real counts) */
    uint32_t in_channels, out_channels, out_channels_coef;
    /* word 3 (real sizes, i.e. stored value + 1) */
    uint32_t in_width, in_height, out_width, out_height;
    /* word 4 */
    unsigned kernel_type, pad_type, pool_type, first_stride, bypass_conv, load_para, dma_burst_size;
    uint8_t pad_value;
    uint32_t bwsx_base_addr;
    /* word 5 */
    unsigned load_coor, load_time;
    uint32_t para_size, para_start_addr;
    /* word 6 */
    unsigned coef_column_offset, coef_row_offset;
    /* word 7 */
    uint32_t channel_switch_addr;
    unsigned row_switch_addr, coef_size, coef_group, load_act;
    uint32_t active_addr;
    /* word 8 */
    uint32_t wb_channel_switch_addr;
    unsigned wb_row_switch_addr, wb_group;
    /* word 9 */
    unsigned shr_w, shr_x;
    int32_t arg_w, arg_x; /* signed 24-bit */
    /* word 10 */
    int64_t arg_add; /* signed 40-bit */
    /* word 11 */
    unsigned send_data_out;
    uint32_t channel_byte_num, dma_total_byte; /* stored values (bytes - 1) */
} okpu_kpu_args;

/* One BN entry (u64 per output channel). */
typedef struct okpu_kpu_bn {
    int32_t norm_mul;   /* signed 24 */
    int32_t norm_add;   /* signed 32 */
    unsigned norm_shift; /* u4 */
} okpu_kpu_bn;

/* The activation table: 16 segments. */
typedef struct okpu_kpu_act {
    int64_t x_start[16]; /* signed 36 */
    int32_t y_mul[16];   /* 16-bit, sign-extended (nncase) */
    unsigned shift[16];
    uint8_t bias[16];
} okpu_kpu_act;

void okpu_kpu_args_decode(const uint8_t raw[KPU_ARGS_BYTES], okpu_kpu_args *a);
void okpu_kpu_bn_decode(const uint8_t raw[KPU_BN_ENTRY_BYTES], okpu_kpu_bn *bn);
void okpu_kpu_act_decode(const uint8_t raw[KPU_ACT_TABLE_BYTES], okpu_kpu_act *act);

/* Filter side (1 or 3) for kernel_type 0 / 1. */
unsigned okpu_kpu_kernel_size(const okpu_kpu_args *a);

/* Pool geometry of pool_type (docs/kpu-reference.md section 4.4): window side and stride; 0 for an unknown type. */
unsigned okpu_kpu_pool_window(unsigned pool_type);
unsigned okpu_kpu_pool_stride(unsigned pool_type);

/* Bytes of weights the layer reads: depthwise oc*k*k, else ic*oc*k*k, times 2 in 16-bit mode. */
uint32_t okpu_kpu_weights_bytes(const okpu_kpu_args *a, int eight_bit);
uint32_t okpu_kpu_bn_bytes(const okpu_kpu_args *a); /* 8 * out_channels */

/* Multiply-accumulates of the convolution (at input resolution, as the KPU computes it). */
uint64_t okpu_kpu_args_macs(const okpu_kpu_args *a);

/* Validate a layer argument against the KPU's limits: channel counts, 4 <= H <= 256, 4 <= W <= 512, kernel and
 * pool types, output size = input / pool stride, source and destination regions inside the 2 MiB KPU RAM,
 * depthwise in == out channels, DMA byte counts consistent with the output shape when it goes to main memory.
 * `layer`/`offset` locate it in the file for the message. */
int okpu_kpu_args_check(const okpu_kpu_args *a, int layer, long offset, okpu_error *err);

/* The chip's own weight fetch (para_size, load_time, out_channels_coef; load_para 0 = no fetch) against the weight
 * table the loader validated: anything but the nncase / Maix-EMC layout is refused, since it would make the KPU read
 * past the weights. Only the hardware (and the virtual board's KPU) reads by these fields; the emulator ignores them. */
int okpu_kpu_args_check_weight_loads(const okpu_kpu_args *a, int eight_bit, int layer, long offset, okpu_error *err);

#endif

// SPDX-License-Identifier: Apache-2.0
/* Kernel-level tests of the KPU layer: argument decode and checks, the RAM layout, the emulator's arithmetic on
 * hand-computed layers, and its fast convolution path against the straight-from-the-spec reference on random
 * layers. Exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200112L /* setenv, nanosleep */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/bytes.h"
#include "kpu/kpu_args.h"
#include "kpu/kpu_backend.h"
#include "kpu/kpu_layout.h"
#include "kmodel/model.h"
#include "counting_heap.h"
#include "ctest.h"
#include "model_run.h"



/* xorshift64*: reproducible across platforms */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

/* uniform in [lo, hi] */
static int64_t rnd_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static void put_bits(uint64_t *word, unsigned lo, unsigned n, int64_t value)
{
    uint64_t mask = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1u)) << lo;
    *word = (*word & ~mask) | (((uint64_t)value << lo) & mask);
}

static void store_u64(uint8_t *p, uint64_t v)
{
    unsigned i;
    for (i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The fields a test layer sets; everything else in the 12 words stays 0. */
typedef struct layer_spec {
    unsigned depthwise, kernel_type, pool_type, send_data_out;
    uint32_t src, dst, ic, oc, w, h, ow, oh;
    uint8_t pad_value;
    unsigned shr_w, shr_x;
    int32_t arg_w, arg_x;
    int64_t arg_add;
} layer_spec;

static void pack_args(const layer_spec *s, uint8_t raw[KPU_ARGS_BYTES])
{
    uint64_t w[12];
    unsigned i;
    memset(w, 0, sizeof w);
    put_bits(&w[0], 3, 1, s->depthwise);
    put_bits(&w[1], 0, 15, s->src);
    put_bits(&w[1], 32, 15, s->dst);
    put_bits(&w[2], 0, 10, s->ic - 1);
    put_bits(&w[2], 32, 10, s->oc - 1);
    put_bits(&w[3], 0, 10, s->w - 1);
    put_bits(&w[3], 10, 9, s->h - 1);
    put_bits(&w[3], 32, 10, s->ow - 1);
    put_bits(&w[3], 42, 9, s->oh - 1);
    put_bits(&w[4], 0, 3, s->kernel_type);
    put_bits(&w[4], 4, 4, s->pool_type);
    put_bits(&w[4], 24, 8, s->pad_value);
    put_bits(&w[9], 0, 4, s->shr_w);
    put_bits(&w[9], 4, 4, s->shr_x);
    put_bits(&w[9], 8, 24, s->arg_w);
    put_bits(&w[9], 32, 24, s->arg_x);
    put_bits(&w[10], 0, 40, s->arg_add);
    put_bits(&w[11], 0, 1, s->send_data_out);
    put_bits(&w[11], 16, 16, (int64_t)s->ow * s->oh - 1);
    put_bits(&w[11], 32, 32, (int64_t)s->ow * s->oh * s->oc - 1);
    for (i = 0; i < 12; i++)
        store_u64(raw + 8 * i, w[i]);
}

static void pack_bn(uint8_t raw[8], int32_t mul, int32_t add, unsigned shift)
{
    uint64_t w = 0;
    put_bits(&w, 0, 24, mul);
    put_bits(&w, 24, 32, add);
    put_bits(&w, 56, 4, shift);
    store_u64(raw, w);
}

static void pack_act(uint8_t raw[KPU_ACT_TABLE_BYTES], const int64_t x_start[16], const int32_t y_mul[16],
                     const unsigned shift[16], const uint8_t bias[16])
{
    unsigned i;
    for (i = 0; i < 16; i++) {
        uint64_t w = 0;
        put_bits(&w, 0, 8, shift[i]);
        put_bits(&w, 8, 16, y_mul[i]);
        put_bits(&w, 24, 36, x_start[i]);
        store_u64(raw + 8 * i, w);
        raw[128 + i] = bias[i];
    }
}

/* Segment 0 maps y <= 0 to 0, the others pass y through (y_mul 1): the output is clamp(y, 0, 255). */
static void pack_identity_act(uint8_t raw[KPU_ACT_TABLE_BYTES], unsigned shift)
{
    int64_t x_start[16];
    int32_t y_mul[16];
    unsigned shifts[16];
    uint8_t bias[16];
    unsigned i;
    for (i = 0; i < 16; i++) {
        x_start[i] = i == 0 ? -((int64_t)1 << 35) : 0;
        y_mul[i] = i == 0 ? 0 : 1;
        shifts[i] = shift;
        bias[i] = 0;
    }
    pack_act(raw, x_start, y_mul, shifts, bias);
}

static void spec_shape(layer_spec *s)
{
    unsigned stride = okpu_kpu_pool_stride(s->pool_type);
    s->ow = s->w / stride;
    s->oh = s->h / stride;
}

/* ---------------------------------------------------------------------------------------------------------------- */

static void test_layout(void)
{
    static const uint32_t widths[] = {4, 16, 17, 32, 33, 64, 65};
    uint8_t *ram = malloc(OKPU_KPU_RAM_SIZE);
    uint8_t *src = malloc(65 * 9 * 7), *back = malloc(65 * 9 * 7);
    size_t i;

    for (i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        const uint32_t w = widths[i], h = 9, c = 7, row = 1000;
        const okpu_kpu_layout l = okpu_kpu_layout_for_width(w);
        const uint32_t rows = okpu_kpu_layout_rows(w, h, c);
        const size_t n = (size_t)w * h * c;
        size_t j, untouched = 0, expect_untouched;
        uint32_t ch, y, x;
        int offsets_ok = 1;

        CHECK(l.groups == (w <= 16 ? 4u : w <= 32 ? 2u : 1u), "width %u: groups %u", w, l.groups);
        CHECK(l.row_len == (w <= 64 ? 1u : 2u), "width %u: row_len %u", w, l.row_len);
        CHECK(l.row_pitch == 64u / l.groups, "width %u: row_pitch %u", w, l.row_pitch);
        CHECK(rows == l.row_len * h * ((c + l.groups - 1) / l.groups), "width %u: rows %u", w, rows);

        for (j = 0; j < n; j++)
            src[j] = (uint8_t)rnd();
        memset(ram, 0xA5, OKPU_KPU_RAM_SIZE);
        okpu_kpu_layout_upload(ram, row, src, w, h, c);
        for (ch = 0; ch < c; ch++)
            for (y = 0; y < h; y++)
                for (x = 0; x < w; x++) {
                    size_t off = (size_t)(ch / l.groups) * l.row_len * h * 64 + (ch % l.groups) * l.row_pitch +
                                 (size_t)y * l.row_len * 64 + x;
                    if (okpu_kpu_layout_offset(&l, h, ch, y, x) != off ||
                        ram[(size_t)row * 64 + off] != src[((size_t)ch * h + y) * w + x])
                        offsets_ok = 0;
                }
        CHECK(offsets_ok, "width %u: bytes not where section 5 puts them", w);
        for (j = 0; j < OKPU_KPU_RAM_SIZE; j++)
            if (j < (size_t)row * 64 || j >= (size_t)(row + rows) * 64)
                untouched += ram[j] == 0xA5;
        expect_untouched = OKPU_KPU_RAM_SIZE - (size_t)rows * 64;
        CHECK(untouched == expect_untouched, "width %u: upload wrote outside its %u rows", w, rows);
        if (w % 64 == 0)
            CHECK(memcmp(ram + (size_t)row * 64, src, n) == 0, "width %u: not dense", w);
        memset(back, 0, n);
        okpu_kpu_layout_download(ram, row, back, w, h, c);
        CHECK(memcmp(src, back, n) == 0, "width %u: round trip differs", w);
    }
    free(ram);
    free(src);
    free(back);
}

static void test_decode(void)
{
    uint8_t raw[KPU_ARGS_BYTES], bn_raw[8], act_raw[KPU_ACT_TABLE_BYTES];
    uint64_t w[12];
    okpu_kpu_args a;
    okpu_kpu_bn bn;
    okpu_kpu_act act;
    int64_t x_start[16];
    int32_t y_mul[16];
    unsigned shift[16], i;
    uint8_t bias[16];

    memset(w, 0, sizeof w);
    put_bits(&w[0], 0, 4, 0xB); /* int_en, full_add, depthwise */
    put_bits(&w[1], 0, 15, 0x7123);
    put_bits(&w[1], 32, 15, 0x0456);
    put_bits(&w[2], 0, 10, 1023);
    put_bits(&w[2], 32, 10, 4);
    put_bits(&w[2], 48, 10, 2);
    put_bits(&w[3], 0, 10, 319);
    put_bits(&w[3], 10, 9, 239);
    put_bits(&w[3], 32, 10, 159);
    put_bits(&w[3], 42, 9, 119);
    put_bits(&w[4], 0, 3, 1);
    put_bits(&w[4], 3, 1, 1);
    put_bits(&w[4], 4, 4, 6);
    put_bits(&w[4], 8, 1, 1);
    put_bits(&w[4], 9, 1, 1);
    put_bits(&w[4], 10, 1, 1);
    put_bits(&w[4], 16, 8, 0x3C);
    put_bits(&w[4], 24, 8, 0xE7);
    put_bits(&w[4], 32, 32, 0xDEADBEEF);
    put_bits(&w[5], 0, 1, 1);
    put_bits(&w[5], 1, 6, 37);
    put_bits(&w[5], 15, 17, 0x1ABCD);
    put_bits(&w[5], 32, 32, 0x12345678);
    put_bits(&w[6], 0, 4, 9);
    put_bits(&w[6], 4, 12, 0xABC);
    put_bits(&w[7], 0, 15, 0x6001);
    put_bits(&w[7], 16, 4, 5);
    put_bits(&w[7], 20, 8, 0x99);
    put_bits(&w[7], 28, 3, 4);
    put_bits(&w[7], 31, 1, 1);
    put_bits(&w[7], 32, 32, 0xCAFEF00D);
    put_bits(&w[8], 0, 15, 0x1234);
    put_bits(&w[8], 16, 4, 3);
    put_bits(&w[8], 20, 3, 2);
    put_bits(&w[9], 0, 4, 15);
    put_bits(&w[9], 4, 4, 14);
    put_bits(&w[9], 8, 24, -5799936);
    put_bits(&w[9], 32, 24, 8388607);
    put_bits(&w[10], 0, 40, -549755813888LL); /* -2^39, the most negative 40-bit value */
    put_bits(&w[10], 40, 24, 0xFFFFFF);       /* bits above the field must not leak in */
    put_bits(&w[11], 0, 1, 1);
    put_bits(&w[11], 16, 16, 19199);
    put_bits(&w[11], 32, 32, 307199);
    for (i = 0; i < 12; i++)
        store_u64(raw + 8 * i, w[i]);
    okpu_kpu_args_decode(raw, &a);

    CHECK(a.int_en == 1 && a.ram_flag == 1 && a.full_add == 0 && a.depthwise == 1, "word 0: %u %u %u %u", a.int_en,
          a.ram_flag, a.full_add, a.depthwise);
    CHECK(a.image_src_addr == 0x7123 && a.image_dst_addr == 0x456, "word 1");
    CHECK(a.in_channels == 1024 && a.out_channels == 5 && a.out_channels_coef == 3, "word 2: %u %u %u",
          a.in_channels, a.out_channels, a.out_channels_coef);
    CHECK(a.in_width == 320 && a.in_height == 240 && a.out_width == 160 && a.out_height == 120, "word 3");
    CHECK(a.kernel_type == 1 && a.pad_type == 1 && a.pool_type == 6 && a.first_stride == 1 && a.bypass_conv == 1 &&
              a.load_para == 1 && a.dma_burst_size == 0x3C && a.pad_value == 0xE7 && a.bwsx_base_addr == 0xDEADBEEF,
          "word 4");
    CHECK(a.load_coor == 1 && a.load_time == 37 && a.para_size == 0x1ABCD && a.para_start_addr == 0x12345678,
          "word 5: %u %u %x", a.load_coor, a.load_time, a.para_size);
    CHECK(a.coef_column_offset == 9 && a.coef_row_offset == 0xABC, "word 6");
    CHECK(a.channel_switch_addr == 0x6001 && a.row_switch_addr == 5 && a.coef_size == 0x99 && a.coef_group == 4 &&
              a.load_act == 1 && a.active_addr == 0xCAFEF00D,
          "word 7");
    CHECK(a.wb_channel_switch_addr == 0x1234 && a.wb_row_switch_addr == 3 && a.wb_group == 2, "word 8");
    CHECK(a.shr_w == 15 && a.shr_x == 14 && a.arg_w == -5799936 && a.arg_x == 8388607, "word 9: %d %d", a.arg_w,
          a.arg_x);
    CHECK(a.arg_add == -549755813888LL, "word 10: %lld", (long long)a.arg_add);
    CHECK(a.send_data_out == 1 && a.channel_byte_num == 19199 && a.dma_total_byte == 307199, "word 11");

    pack_bn(bn_raw, -8388608, -2147483647 - 1, 15);
    okpu_kpu_bn_decode(bn_raw, &bn);
    CHECK(bn.norm_mul == -8388608 && bn.norm_add == -2147483647 - 1 && bn.norm_shift == 15, "bn: %d %d %u",
          bn.norm_mul, bn.norm_add, bn.norm_shift);
    pack_bn(bn_raw, 123456, 7654321, 3);
    okpu_kpu_bn_decode(bn_raw, &bn);
    CHECK(bn.norm_mul == 123456 && bn.norm_add == 7654321 && bn.norm_shift == 3, "bn positive");

    for (i = 0; i < 16; i++) {
        x_start[i] = i == 0 ? -((int64_t)1 << 35) : (int64_t)i * 1000 - 7000;
        y_mul[i] = i % 2 ? -32768 + (int32_t)i : 32767 - (int32_t)i;
        shift[i] = 200 + i;
        bias[i] = (uint8_t)(i * 17 + 3);
    }
    pack_act(act_raw, x_start, y_mul, shift, bias);
    okpu_kpu_act_decode(act_raw, &act);
    for (i = 0; i < 16; i++)
        CHECK(act.x_start[i] == x_start[i] && act.y_mul[i] == y_mul[i] && act.shift[i] == shift[i] &&
                  act.bias[i] == bias[i],
              "act segment %u: %lld %d %u %u", i, (long long)act.x_start[i], act.y_mul[i], act.shift[i], act.bias[i]);
    /* result_bias: segments 0-7 in the first trailing word's bytes, LSB first, then 8-15 */
    CHECK(okpu_rd_u64(act_raw + 128) == 0x7A69584736251403ull, "bias word 0 %llx",
          (unsigned long long)okpu_rd_u64(act_raw + 128));

    {
        layer_spec s;
        memset(&s, 0, sizeof s);
        s.kernel_type = 1;
        s.pool_type = 1;
        s.ic = 3;
        s.oc = 16;
        s.w = 320;
        s.h = 240;
        spec_shape(&s);
        pack_args(&s, raw);
        okpu_kpu_args_decode(raw, &a);
        CHECK(okpu_kpu_kernel_size(&a) == 3, "kernel size");
        CHECK(okpu_kpu_weights_bytes(&a, 1) == 3 * 16 * 9 && okpu_kpu_weights_bytes(&a, 0) == 2 * 3 * 16 * 9, "weights bytes");
        CHECK(okpu_kpu_bn_bytes(&a) == 128, "bn bytes");
        CHECK(okpu_kpu_args_macs(&a) == 320ull * 240 * 3 * 16 * 9, "macs");
        s.depthwise = 1;
        s.ic = s.oc = 16;
        s.kernel_type = 0;
        pack_args(&s, raw);
        okpu_kpu_args_decode(raw, &a);
        CHECK(okpu_kpu_weights_bytes(&a, 1) == 16 && okpu_kpu_args_macs(&a) == 320ull * 240 * 16, "depthwise sizes");
    }
    {
        static const unsigned window[] = {1, 2, 2, 4, 4, 2, 2, 4, 2, 2}, stride[] = {1, 2, 2, 4, 4, 2, 2, 4, 1, 1};
        for (i = 0; i < 10; i++)
            CHECK(okpu_kpu_pool_window(i) == window[i] && okpu_kpu_pool_stride(i) == stride[i], "pool geometry %u", i);
        CHECK(okpu_kpu_pool_window(10) == 0 && okpu_kpu_pool_stride(15) == 0, "unknown pool type");
    }
}

/* okpu_kpu_args_check on a layer with one field changed: expect rejection naming `field` and `value`. */
static void expect_reject(const uint8_t good[KPU_ARGS_BYTES], unsigned word, unsigned lo, unsigned n, int64_t value,
                          unsigned reported_word, const char *field, const char *text)
{
    uint8_t raw[KPU_ARGS_BYTES];
    uint64_t w;
    okpu_kpu_args a;
    okpu_error err;
    int rc;

    memcpy(raw, good, sizeof raw);
    w = okpu_rd_u64(raw + 8 * word);
    put_bits(&w, lo, n, value);
    store_u64(raw + 8 * word, w);
    okpu_kpu_args_decode(raw, &a);
    memset(&err, 0, sizeof err);
    rc = okpu_kpu_args_check(&a, 3, 1000, &err);
    CHECK(rc == OKPU_ERR_KMODEL_FORMAT && err.code == OKPU_ERR_KMODEL_FORMAT && err.layer == 3 &&
              err.offset == 1000 + 8 * (long)reported_word && strstr(err.message, field) && strstr(err.message, text) &&
              strstr(err.message, "layer 3"),
          "reject %s: rc %d offset %ld message \"%s\"", field, rc, err.offset, err.message);
}

static void test_check(void)
{
    uint8_t raw[KPU_ARGS_BYTES];
    layer_spec s;
    okpu_kpu_args a;
    okpu_error err;

    memset(&s, 0, sizeof s);
    s.kernel_type = 1;
    s.pool_type = 1;
    s.ic = 3;
    s.oc = 16;
    s.w = 320;
    s.h = 240;
    s.src = 29168;
    s.dst = 23408;
    s.send_data_out = 1;
    spec_shape(&s);
    pack_args(&s, raw);
    okpu_kpu_args_decode(raw, &a);
    CHECK(okpu_kpu_args_check(&a, 0, 0, &err) == OKPU_OK, "valid layer rejected: %s", err.message);

    expect_reject(raw, 3, 0, 10, 599, 3, "i_row_wid", "input width 600 exceeds the KPU limit of 512");
    expect_reject(raw, 3, 0, 10, 2, 3, "i_row_wid", "input width 3 is below the KPU minimum of 4");
    expect_reject(raw, 3, 10, 9, 299, 3, "i_col_high", "input height 300 exceeds the KPU limit of 256");
    expect_reject(raw, 3, 10, 9, 0, 3, "i_col_high", "input height 1 is below");
    expect_reject(raw, 4, 0, 3, 2, 4, "kernel_type", "kernel_type 2");
    expect_reject(raw, 4, 4, 4, 10, 4, "pool_type", "pool_type 10");
    expect_reject(raw, 3, 32, 10, 160, 3, "o_row_wid", "expected 160x120");
    expect_reject(raw, 3, 42, 9, 239, 3, "o_col_high", "output 160x240");
    expect_reject(raw, 0, 3, 1, 1, 2, "o_ch_num", "3 input channels but 16 output channels");
    expect_reject(raw, 1, 0, 15, 32000, 1, "image_src_addr", "past the end");
    expect_reject(raw, 1, 32, 15, 30000, 1, "image_dst_addr", "past the end");
    expect_reject(raw, 11, 16, 16, 100, 11, "channel_byte_num", "101 bytes");
    expect_reject(raw, 11, 32, 32, 5, 11, "dma_total_byte", "total 6 bytes");

    /* A 4x4 input (an FC layer on the KPU) and the map ending exactly at the last row are fine. */
    s.w = s.h = 4;
    s.pool_type = 0;
    s.ic = 768;
    s.oc = 1000;
    spec_shape(&s);
    s.src = OKPU_KPU_RAM_ROWS - okpu_kpu_layout_rows(4, 4, 768);
    s.dst = OKPU_KPU_RAM_ROWS - okpu_kpu_layout_rows(4, 4, 1000);
    pack_args(&s, raw);
    okpu_kpu_args_decode(raw, &a);
    CHECK(okpu_kpu_args_check(&a, 0, -1, &err) == OKPU_OK, "4x4 layer rejected: %s", err.message);
    s.dst++;
    pack_args(&s, raw);
    okpu_kpu_args_decode(raw, &a);
    CHECK(okpu_kpu_args_check(&a, 5, -1, &err) == OKPU_ERR_KMODEL_FORMAT && err.offset == -1 &&
              strstr(err.message, "image_dst_addr"),
          "one row too far accepted or badly reported: %s", err.message);
}

/* ---------------------------------------------------------------------------------------------------------------- */

/* A layer ready to run: args, weights, BN, activation table, and its input. */
typedef struct test_layer {
    layer_spec s;
    int eight_bit;
    okpu_kpu_layer_job job;
    uint8_t raw[KPU_ARGS_BYTES];
    uint8_t act[KPU_ACT_TABLE_BYTES];
    uint8_t *weights, *bn, *input, *main_out;
} test_layer;

static void layer_init(test_layer *t, int eight_bit)
{
    okpu_kpu_args a;
    spec_shape(&t->s);
    t->eight_bit = eight_bit;
    pack_args(&t->s, t->raw);
    okpu_kpu_args_decode(t->raw, &a);
    t->weights = calloc(okpu_kpu_weights_bytes(&a, eight_bit), 1);
    t->bn = calloc(okpu_kpu_bn_bytes(&a), 1);
    t->input = calloc((size_t)t->s.w * t->s.h * t->s.ic, 1);
    t->main_out = calloc((size_t)t->s.ow * t->s.oh * t->s.oc, 1);
}

static void layer_free(test_layer *t)
{
    free(t->weights);
    free(t->bn);
    free(t->input);
    free(t->main_out);
}

static void layer_job(test_layer *t)
{
    memset(&t->job, 0, sizeof t->job);
    t->job.raw_args = t->raw;
    okpu_kpu_args_decode(t->raw, &t->job.args);
    t->job.weights = t->weights;
    t->job.bn = t->bn;
    t->job.act = t->act;
    t->job.eight_bit = t->eight_bit;
    t->job.main_out = t->main_out;
}

/* Upload the input, run, return the dense output (main_out) after checking it equals the KPU RAM copy. */
static int run_on(okpu_kpu_backend *b, test_layer *t, const char *what)
{
    okpu_error err;
    uint8_t *back;
    size_t n = (size_t)t->s.ow * t->s.oh * t->s.oc;
    int rc;

    layer_job(t);
    okpu_kpu_layout_upload(b->ram, t->s.src, t->input, t->s.w, t->s.h, t->s.ic);
    rc = b->run_layer(b, &t->job, &err);
    CHECK(rc == OKPU_OK, "%s: run failed: %s", what, err.message);
    if (rc != OKPU_OK)
        return rc;
    back = malloc(n);
    okpu_kpu_layout_download(b->ram, t->s.dst, back, t->s.ow, t->s.oh, t->s.oc);
    CHECK(memcmp(back, t->main_out, n) == 0, "%s: main-memory copy differs from KPU RAM", what);
    free(back);
    return rc;
}

static okpu_kpu_backend *make_emu(okpu_conv_offset_mode offset, okpu_round_mode round, okpu_mean_border_mode border,
                             int reference)
{
    okpu_options o;
    okpu_error err;
    okpu_kpu_backend *b;
    memset(&o, 0, sizeof o);
    o.conv_offset = offset;
    o.act_round = round;
    o.mean_border = border;
    b = reference ? okpu_kpu_emu_create_reference(&o, &err) : okpu_kpu_emu_create(&o, &err);
    if (!b) {
        printf("cannot create the emulator: %s\n", err.message);
        exit(2);
    }
    return b;
}

/* Run a hand-computed layer on both paths and compare with `expect`. */
static void expect_output(test_layer *t, okpu_conv_offset_mode offset, okpu_round_mode round, const uint8_t *expect,
                          const char *what)
{
    int reference;
    for (reference = 0; reference < 2; reference++) {
        okpu_kpu_backend *b = make_emu(offset, round, OKPU_MEAN_BORDER_REPLICATE, reference);
        size_t n = (size_t)t->s.ow * t->s.oh * t->s.oc, i;
        if (run_on(b, t, what) == OKPU_OK) {
            int same = memcmp(t->main_out, expect, n) == 0;
            CHECK(same, "%s (%s path): output differs", what, reference ? "reference" : "fast");
            if (!same) {
                for (i = 0; i < n; i++)
                    printf(" %u/%u", t->main_out[i], expect[i]);
                printf("\n");
            }
        }
        b->destroy(b);
    }
}

static void tiny_layer(test_layer *t, uint32_t w, uint32_t h, uint32_t ic, uint32_t oc, unsigned kernel_type,
                       unsigned pool_type, int eight_bit)
{
    memset(t, 0, sizeof *t);
    t->s.w = w;
    t->s.h = h;
    t->s.ic = ic;
    t->s.oc = oc;
    t->s.kernel_type = kernel_type;
    t->s.pool_type = pool_type;
    t->s.src = 100;
    t->s.dst = 200;
    layer_init(t, eight_bit);
}

static void test_hand_computed(void)
{
    test_layer t;
    uint8_t expect[64];
    uint32_t i;

    /* 1x1, weight 3: out = 3x. */
    tiny_layer(&t, 4, 4, 1, 1, 0, 0, 1);
    for (i = 0; i < 16; i++) {
        t.input[i] = (uint8_t)(i * 7);
        expect[i] = (uint8_t)(i * 21 > 255 ? 255 : i * 21);
    }
    t.weights[0] = 3;
    pack_bn(t.bn, 1, 0, 0);
    pack_identity_act(t.act, 0);
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "1x1 weight 3");
    layer_free(&t);

    /* 3x3 of ones over ones with pad_value 10: corners see 4 ones and 5 pads, edges 6 and 3, the middle 9. */
    tiny_layer(&t, 4, 4, 1, 1, 1, 0, 1);
    t.s.pad_value = 10;
    pack_args(&t.s, t.raw);
    memset(t.input, 1, 16);
    memset(t.weights, 1, 9);
    pack_bn(t.bn, 1, 0, 0);
    pack_identity_act(t.act, 0);
    {
        static const uint8_t e[16] = {54, 36, 36, 54, 36, 9, 9, 36, 36, 9, 9, 36, 54, 36, 36, 54};
        expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, e, "3x3 padding");
    }
    layer_free(&t);

    /* 16-bit weights: 300 * 2 = 600, BN >> 2 = 150 (a byte-wide weight could not hold 300). */
    tiny_layer(&t, 4, 4, 1, 1, 0, 0, 0);
    memset(t.input, 2, 16);
    t.weights[0] = 300 & 0xFF;
    t.weights[1] = 300 >> 8;
    pack_bn(t.bn, 1, 0, 2);
    pack_identity_act(t.act, 0);
    memset(expect, 150, 16);
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "16-bit weight");
    layer_free(&t);

    /* Offset flooring: two channels of x = 1, weights 0, arg_x = -1 >> 1, arg_add 20.
     * Per channel: 2 * (floor(-0.5) + 20) = 38. Once: floor(-2 / 2) + 2 * 20 = 39. */
    tiny_layer(&t, 4, 4, 2, 1, 0, 0, 1);
    t.s.arg_x = -1;
    t.s.shr_x = 1;
    t.s.arg_add = 20;
    pack_args(&t.s, t.raw);
    memset(t.input, 1, 32);
    pack_bn(t.bn, 1, 0, 0);
    pack_identity_act(t.act, 0);
    memset(expect, 38, 16);
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "x offset per channel");
    memset(expect, 39, 16);
    expect_output(&t, OKPU_CONV_OFFSET_ONCE, OKPU_ROUND_HALF_EVEN, expect, "x offset once");
    /* The same on the weight side: weights 1, x = 0, arg_w = 1 >> 1: per channel 2 * floor(0.5) + 40 = 40, once 41. */
    t.s.arg_x = 0;
    t.s.shr_x = 0;
    t.s.arg_w = 1;
    t.s.shr_w = 1;
    pack_args(&t.s, t.raw);
    memset(t.input, 0, 32);
    memset(t.weights, 1, 2);
    memset(expect, 40, 16);
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "w offset per channel");
    memset(expect, 41, 16);
    expect_output(&t, OKPU_CONV_OFFSET_ONCE, OKPU_ROUND_HALF_EVEN, expect, "w offset once");
    layer_free(&t);

    /* BN floors: alu 5 * -3 = -15, >> 2 = -4 (floor of -3.75), + 100 = 96. */
    tiny_layer(&t, 4, 4, 1, 1, 0, 0, 1);
    memset(t.input, 5, 16);
    t.weights[0] = 1;
    pack_bn(t.bn, -3, 100, 2);
    pack_identity_act(t.act, 0);
    memset(expect, 96, 16);
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "BN floor");

    /* Activation rounding of y / 2: 5 -> 2.5, 7 -> 3.5, and a negative slope for the SDK's carry shift. */
    pack_bn(t.bn, 1, 0, 0);
    pack_identity_act(t.act, 1);
    for (i = 0; i < 16; i++)
        t.input[i] = i % 2 ? 7 : 5;
    for (i = 0; i < 16; i++)
        expect[i] = i % 2 ? 4 : 2;
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "round half even");
    for (i = 0; i < 16; i++)
        expect[i] = i % 2 ? 4 : 3;
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_UP, expect, "round half up");
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_SDK_CARRY, expect, "SDK carry positive");
    {
        /* One segment above x_start 0 with y_mul -1, shift 1 and bias 10: y = 5 gives -5 / 2.
         * half even: -2 -> 8; half up: floor(-2.5 + 0.5) = -2 -> 8; SDK carry: -5 is odd and negative:
         * (-5 >> 1) - 1 = -4 -> 6. y = 7, -3.5: half even -4 -> 6; half up -3 -> 7; carry (-7 >> 1) - 1 = -5 -> 5. */
        int64_t xs[16];
        int32_t ym[16];
        unsigned sh[16];
        uint8_t bi[16];
        for (i = 0; i < 16; i++) {
            xs[i] = i == 0 ? -((int64_t)1 << 35) : 0;
            ym[i] = i == 0 ? 0 : -1;
            sh[i] = 1;
            bi[i] = 10;
        }
        pack_act(t.act, xs, ym, sh, bi);
        for (i = 0; i < 16; i++)
            expect[i] = i % 2 ? 6 : 8;
        expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "negative half even");
        for (i = 0; i < 16; i++)
            expect[i] = i % 2 ? 7 : 8;
        expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_UP, expect, "negative half up");
        for (i = 0; i < 16; i++)
            expect[i] = i % 2 ? 5 : 6;
        expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_SDK_CARRY, expect, "negative SDK carry");
    }
    {
        /* Segment choice is the last with y > x_start: y = 5 and 7 against x_start 5 at segment 9 and 6 at 12:
         * y = 5 falls to segment 8 (x_start 0, bias 1), y = 7 to segment 12 (bias 3); y_mul 0 leaves the bias. */
        int64_t xs[16];
        int32_t ym[16];
        unsigned sh[16];
        uint8_t bi[16];
        for (i = 0; i < 16; i++) {
            xs[i] = i == 0 ? -((int64_t)1 << 35) : i < 9 ? 0 : i < 12 ? 5 : i == 12 ? 6 : 100;
            ym[i] = 0;
            sh[i] = 0;
            bi[i] = (uint8_t)(i == 8 ? 1 : i == 11 ? 2 : i == 12 ? 3 : 200);
        }
        pack_act(t.act, xs, ym, sh, bi);
        for (i = 0; i < 16; i++)
            expect[i] = i % 2 ? 3 : 1;
        expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "segment choice");
    }
    layer_free(&t);

    /* Depthwise: channel c reads only input channel c. */
    tiny_layer(&t, 4, 4, 2, 2, 0, 0, 1);
    t.s.depthwise = 1;
    pack_args(&t.s, t.raw);
    memset(t.input, 3, 16);
    memset(t.input + 16, 5, 16);
    t.weights[0] = 2;
    t.weights[1] = 7;
    pack_bn(t.bn, 1, 0, 0);
    pack_bn(t.bn + 8, 1, 1, 0);
    pack_identity_act(t.act, 0);
    memset(expect, 6, 16);
    memset(expect + 16, 36, 16);
    expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect, "depthwise");
    layer_free(&t);
}

static void test_pools(void)
{
    /* Identity conv (1x1, weight 1) over 1..16 in a 4x4 map, then each pool type. */
    static const uint8_t expect_by_type[10][16] = {
        {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
        {6, 8, 14, 16},
        {3, 5, 11, 13},
        {16},
        {8},
        {1, 3, 9, 11},
        {2, 4, 10, 12},
        {1},
        {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 13, 14, 15, 16},
        {6, 7, 8, 8, 10, 11, 12, 12, 14, 15, 16, 16, 14, 15, 16, 16},
    };
    unsigned type, i;
    for (type = 0; type < 10; type++) {
        test_layer t;
        char what[40];
        tiny_layer(&t, 4, 4, 1, 1, 0, type, 1);
        for (i = 0; i < 16; i++)
            t.input[i] = (uint8_t)(i + 1);
        t.weights[0] = 1;
        pack_bn(t.bn, 1, 0, 0);
        pack_identity_act(t.act, 0);
        snprintf(what, sizeof what, "pool type %u", type);
        expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, expect_by_type[type], what);
        layer_free(&t);
    }
    {
        /* 5x5 with odd sums: mean 2x2 s1 truncates (2+2+3+3)/4 = 2 on the last column; max keeps 0 past the edge */
        test_layer t;
        tiny_layer(&t, 5, 5, 1, 1, 0, 8, 1);
        for (i = 0; i < 25; i++)
            t.input[i] = (uint8_t)(i % 5 == 4 ? 3 : 2);
        t.weights[0] = 1;
        pack_bn(t.bn, 1, 0, 0);
        pack_identity_act(t.act, 0);
        {
            uint8_t e[25];
            for (i = 0; i < 25; i++)
                e[i] = (uint8_t)(i % 5 == 3 ? 2 : i % 5 == 4 ? 3 : 2); /* (2+3+2+3)/4 = 2, (3+3+3+3)/4 = 3 */
            expect_output(&t, OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, e, "mean s1 5x5");
        }
        layer_free(&t);
    }
}

/* ---------------------------------------------------------------------------------------------------------------- */

/* narrow: BN maps the sums to about +-256 and the activation's segments are 32 apart, so a channel's y spans a few
 * hundred values and the fast path's activation table (kpu_emu_act.c okpu_emu_bn_lut) comes into play. */
static void random_layer(test_layer *t, int extreme, int narrow)
{
    const int eight_bit = rnd() % 4 != 0;
    const int unsorted = rnd() % 4 == 0; /* real tables are sorted; the emulator must not depend on it */
    uint32_t kk, g_ic, i;
    double scale;
    okpu_kpu_args a;
    int64_t xs[16];
    int32_t ym[16];
    unsigned sh[16];
    uint8_t bi[16];
    size_t n;

    memset(t, 0, sizeof *t);
    t->s.kernel_type = (unsigned)(rnd() % 2);
    t->s.pool_type = (unsigned)(rnd() % 10);
    t->s.depthwise = rnd() % 3 == 0;
    t->s.w = (uint32_t)(rnd() % 8 == 0 ? rnd_range(60, 70) : rnd_range(4, 36));
    t->s.h = (uint32_t)rnd_range(4, 11);
    t->s.ic = (uint32_t)(rnd() % 6 == 0 ? rnd_range(20, 40) : rnd_range(1, 8));
    t->s.oc = t->s.depthwise ? t->s.ic : (uint32_t)rnd_range(1, narrow ? 24 : 9);
    spec_shape(&t->s);
    t->s.src = (uint32_t)rnd_range(0, OKPU_KPU_RAM_ROWS - okpu_kpu_layout_rows(t->s.w, t->s.h, t->s.ic));
    t->s.dst = (uint32_t)rnd_range(0, OKPU_KPU_RAM_ROWS - okpu_kpu_layout_rows(t->s.ow, t->s.oh, t->s.oc));
    kk = t->s.kernel_type ? 9u : 1u;
    g_ic = t->s.depthwise ? 1u : t->s.ic;
    if (extreme) {
        t->s.pad_value = (uint8_t)rnd();
        t->s.shr_x = (unsigned)rnd_range(0, 15);
        t->s.shr_w = (unsigned)rnd_range(0, 15);
        t->s.arg_x = (int32_t)rnd_range(-8388608, 8388607);
        t->s.arg_w = (int32_t)rnd_range(-8388608, 8388607);
        t->s.arg_add = rnd_range(-549755813888LL, 549755813887LL);
    } else {
        /* As compilers emit them: arg_x = -w_zp * 2^shr_x, arg_w = -x_zp * 2^shr_w, arg_add = k*k*x_zp*w_zp, so each
         * channel sums (x - x_zp) * (w - w_zp); half the time the args carry a fraction, as Maix-EMC's do. Zero
         * points near the middle keep the sums centred. */
        const int32_t zp_x = (int32_t)rnd_range(100, 155);
        const int32_t zp_w = eight_bit ? (int32_t)rnd_range(100, 155) : (int32_t)rnd_range(25000, 40000);
        t->s.pad_value = (uint8_t)zp_x;
        t->s.shr_x = (unsigned)rnd_range(0, eight_bit ? 15 : 6); /* w_zp * 2^shr_x must fit 24 bits */
        t->s.shr_w = (unsigned)rnd_range(0, 15);
        t->s.arg_x = -zp_w * (int32_t)(1u << t->s.shr_x);
        t->s.arg_w = -zp_x * (int32_t)(1u << t->s.shr_w);
        if (rnd() % 2) {
            t->s.arg_x += (int32_t)rnd_range(-(1 << t->s.shr_x), 1 << t->s.shr_x);
            t->s.arg_w += (int32_t)rnd_range(-(1 << t->s.shr_w), 1 << t->s.shr_w);
        }
        t->s.arg_add = (int64_t)kk * zp_x * zp_w;
    }
    layer_init(t, eight_bit);
    okpu_kpu_args_decode(t->raw, &a);

    n = okpu_kpu_weights_bytes(&a, eight_bit);
    for (i = 0; i < n; i++)
        t->weights[i] = rnd() % 5 == 0 ? 0 : (uint8_t)rnd();
    n = (size_t)t->s.w * t->s.h * t->s.ic;
    for (i = 0; i < n; i++)
        t->input[i] = (uint8_t)rnd();

    /* BN maps the accumulator's likely range to about +-4096 so the activation sees varied values. */
    scale = 5400.0 * sqrt((double)g_ic * kk) * (eight_bit ? 1.0 : 257.0); /* spread of the centred sums */
    if (extreme)
        scale = (double)g_ic * ((double)kk * 65025.0 * (eight_bit ? 1.0 : 257.0) +
                                (double)(t->s.arg_add < 0 ? -t->s.arg_add : t->s.arg_add) + 2295.0 * 8388608.0);
    if (narrow)
        scale *= 16.0;
    for (i = 0; i < t->s.oc; i++) {
        double m = 32768.0 * 4096.0 / scale * (0.5 + (double)(rnd() % 1000) / 666.0);
        int32_t mul = m >= 8388607.0 ? 8388607 : m < 1.0 ? 1 : (int32_t)m;
        if (extreme && rnd() % 4 == 0)
            mul = (int32_t)rnd_range(-8388608, 8388607);
        pack_bn(t->bn + 8 * i, rnd() % 3 == 0 ? -mul : mul, (int32_t)rnd_range(-2048, 2048), 15);
    }
    for (i = 0; i < 16; i++) {
        xs[i] = i == 0 ? -((int64_t)1 << 35) : -4096 + (int64_t)i * 512 + rnd_range(-200, 200);
        if (narrow && i > 0)
            xs[i] = -256 + (int64_t)i * 32 + rnd_range(-12, 12);
        if (unsorted && i > 0)
            xs[i] = rnd_range(-4096, 4096);
        ym[i] = extreme ? (int32_t)rnd_range(-32768, 32767) : (int32_t)rnd_range(-2000, 2000);
        sh[i] = extreme && rnd() % 4 == 0 ? (unsigned)rnd_range(0, 255) : (unsigned)rnd_range(4, 14);
        if (narrow && !extreme) {
            ym[i] = (int32_t)rnd_range(-1000, 1000);
            sh[i] = (unsigned)rnd_range(6, 12);
        }
        bi[i] = (uint8_t)rnd();
    }
    pack_act(t->act, xs, ym, sh, bi);
}

/* The layer t (an 8-bit layer of one map) on the fast path and on the reference path, under each rounding mode: the
 * same bytes, and at least eight different ones (the layer is not degenerate). */
static void check_bn_layer(test_layer *t, const char *name)
{
    static const okpu_round_mode rounds[] = {OKPU_ROUND_HALF_EVEN, OKPU_ROUND_HALF_UP, OKPU_ROUND_SDK_CARRY};
    const size_t n = (size_t)t->s.ow * t->s.oh * t->s.oc;
    uint8_t *out[2];
    size_t i;
    int r, reference;

    for (r = 0; r < 3; r++) {
        char what[96];
        snprintf(what, sizeof what, "%s (rounding %d)", name, (int)rounds[r]);
        for (reference = 0; reference < 2; reference++) {
            okpu_kpu_backend *b = make_emu(OKPU_CONV_OFFSET_PER_CHANNEL, rounds[r], OKPU_MEAN_BORDER_REPLICATE,
                                           reference);
            out[reference] = malloc(n);
            if (run_on(b, t, what) == OKPU_OK)
                memcpy(out[reference], t->main_out, n);
            else
                memset(out[reference], reference, n);
            b->destroy(b);
        }
        CHECK(memcmp(out[0], out[1], n) == 0, "%s: fast and reference paths differ", what);
        {
            unsigned char seen[256] = {0};
            unsigned distinct = 0;
            for (i = 0; i < n; i++) {
                distinct += !seen[out[1][i]];
                seen[out[1][i]] = 1;
            }
            CHECK(distinct >= 8, "%s: only %u different output bytes", what, distinct);
        }
        free(out[0]);
        free(out[1]);
    }
}

/* Batch norm near the int64 path's bound: y = alu * norm_mul (shift 0) near 2^41-2^48 and an activation slope of
 * 32767, so (y - x_start) * y_mul runs from 2^56 past 2^63, across the 2^61 below which the fast path may take the
 * int64 arithmetic (okpu_emu_act_fast_init's y bounds); past it the fast path must give the reference's bytes all the
 * same. The shift 56 keeps the bytes of the values in range away from 0 and 255. */
static void test_bn_near_int64_bound(void)
{
    int64_t xs[16];
    int32_t ym[16];
    unsigned sh[16];
    uint8_t bi[16];
    size_t i;
    test_layer t;

    tiny_layer(&t, 16, 4, 1, 16, 0, 0, 1);
    for (i = 0; i < 64; i++)
        t.input[i] = (uint8_t)(i * 37u + 11u);
    for (i = 0; i < 16; i++) {
        /* alu = x * w + arg_add, 2^25 to 2^25 + 65025; mul halves every second channel, the odd ones negative */
        const int32_t mul = (int32_t)(8388607 >> (i / 2u));
        t.weights[i] = (uint8_t)(1u + i * 16u);
        pack_bn(t.bn + 8 * i, i % 2 ? -mul : mul, (int32_t)(i * 1000u), 0);
        xs[i] = i == 0 ? -((int64_t)1 << 35) : -((int64_t)1 << 34) + (int64_t)i * ((int64_t)1 << 31);
        ym[i] = i % 3 ? 32767 : -32768;
        sh[i] = 56;
        bi[i] = (uint8_t)(i * 16u);
    }
    t.s.arg_add = (int64_t)1 << 25;
    pack_args(&t.s, t.raw);
    pack_act(t.act, xs, ym, sh, bi);
    check_bn_layer(&t, "batch norm near the int64 bound");
    layer_free(&t);
}

/* The AVX-512 batch norm of 8-bit accumulators with no x-offset plane adds k = (w_const * norm_mul + norm_add *
 * 2^norm_shift) / 2^norm_shift in one fused multiply-add, exact only while that numerator is under 2^53 (bn_row_avx512
 * checks it on each call). Here w_const = arg_add - 2^31 (the accumulators' bias) and norm_mul = 2^23 - 1, so the
 * numerator is about 2^54 and odd, while alu = x * 3 - 15 stays small enough for the double path: a double k would
 * be one off, and the pixels where alu = 0 (x = 5) give y = norm_add exactly, one above the second segment's
 * x_start. Without the check, those pixels fall into the first segment or one step up the second. */
static void test_bn_fused_bound(void)
{
    int64_t xs[16];
    int32_t ym[16];
    unsigned sh[16];
    uint8_t bi[16];
    const int32_t mul = 8388607, add = 1000;
    size_t i;
    test_layer t;

    tiny_layer(&t, 16, 4, 1, 4, 0, 0, 1);
    for (i = 0; i < 64; i++)
        t.input[i] = (uint8_t)(i % 4u == 0u ? 5u : 5u + (i * 7u) % 90u);
    for (i = 0; i < 4; i++) {
        t.weights[i] = 3;
        pack_bn(t.bn + 8 * i, mul, add, 0);
    }
    for (i = 0; i < 16; i++) { /* 0 below norm_add; 100 + 1 at norm_add; then about alu - 2 from 2 norm_mul up */
        xs[i] = i == 0 ? -((int64_t)1 << 35) : i == 1 ? add - 1 : add + 2 * (int64_t)mul + (int64_t)i;
        ym[i] = i == 0 ? 0 : 1;
        sh[i] = i < 2 ? 0 : 23;
        bi[i] = i == 0 ? 0 : i == 1 ? 100 : 10;
    }
    t.s.arg_add = -15;
    pack_args(&t.s, t.raw);
    pack_act(t.act, xs, ym, sh, bi);
    check_bn_layer(&t, "fused batch norm past 2^53");
    layer_free(&t);
}

/* saturation: check that the layers' outputs are not mostly clamped (the generator's property, checked once per kind) */
static void test_fast_vs_reference(int count, int narrow, int saturation)
{
    static const okpu_round_mode rounds[] = {OKPU_ROUND_HALF_EVEN, OKPU_ROUND_HALF_UP, OKPU_ROUND_SDK_CARRY};
    uint8_t *seed_ram = malloc(OKPU_KPU_RAM_SIZE);
    size_t unsaturated = 0, total = 0, j;
    int i, mismatches = 0;

    for (j = 0; j < OKPU_KPU_RAM_SIZE; j++)
        seed_ram[j] = (uint8_t)rnd();
    for (i = 0; i < count; i++) {
        test_layer t;
        const int extreme = i % 4 == 3;
        const okpu_conv_offset_mode offset = i % 3 == 2 ? OKPU_CONV_OFFSET_ONCE : OKPU_CONV_OFFSET_PER_CHANNEL;
        const okpu_round_mode round = rounds[(i / 3) % 3];
        const okpu_mean_border_mode border = i % 2 ? OKPU_MEAN_BORDER_IN_RANGE : OKPU_MEAN_BORDER_REPLICATE;
        okpu_kpu_backend *fast = make_emu(offset, round, border, 0);
        okpu_kpu_backend *ref = make_emu(offset, round, border, 1);
        uint8_t *fast_out;
        size_t n;
        char what[160];

        random_layer(&t, extreme, narrow);
        snprintf(what, sizeof what,
                 "random layer %d (%ux%ux%u -> %u, k%u pool %u dw %u %s-bit, arg_x %d>>%u arg_w %d>>%u add %lld)", i,
                 t.s.w, t.s.h, t.s.ic, t.s.oc, t.s.kernel_type ? 3u : 1u, t.s.pool_type, t.s.depthwise,
                 t.eight_bit ? "8" : "16", t.s.arg_x, t.s.shr_x, t.s.arg_w, t.s.shr_w, (long long)t.s.arg_add);
        memcpy(fast->ram, seed_ram, OKPU_KPU_RAM_SIZE);
        memcpy(ref->ram, seed_ram, OKPU_KPU_RAM_SIZE);
        n = (size_t)t.s.ow * t.s.oh * t.s.oc;
        fast_out = malloc(n);
        if (run_on(fast, &t, what) == OKPU_OK) {
            memcpy(fast_out, t.main_out, n);
            if (run_on(ref, &t, what) == OKPU_OK) {
                int same = memcmp(fast_out, t.main_out, n) == 0 && memcmp(fast->ram, ref->ram, OKPU_KPU_RAM_SIZE) == 0;
                if (!same && mismatches++ < 10)
                    printf("  mismatch: %s\n", what);
                CHECK(same, "fast and reference paths differ on %s", what);
                if (!extreme)
                    for (j = 0; j < n; j++) {
                        unsaturated += fast_out[j] != 0 && fast_out[j] != 255;
                        total++;
                    }
            }
        }
        free(fast_out);
        layer_free(&t);
        fast->destroy(fast);
        ref->destroy(ref);
    }
    /* The comparison only means something if the outputs are not all clamped. */
    CHECK(!saturation || unsaturated * (narrow ? 5 : 3) > total, "random layers too saturated to test anything: %zu of %zu outputs in 1..254",
          unsaturated, total);
    printf("fast vs reference: %d random%s layers, %zu of %zu realistic outputs unsaturated\n", count,
           narrow ? " narrow" : "", unsaturated, total);
    free(seed_ram);
}

/* ---------------------------------------------------------------------------------------------------------------- */

static void test_backend_and_errors(void)
{
    counting_heap heap = {0, 0, 0, 0};
    okpu_allocator alloc;
    okpu_options o;
    okpu_error err;
    okpu_kpu_backend *b;
    test_layer t;
    int rc;

    alloc.alloc = count_alloc;
    alloc.free = count_free;
    alloc.ctx = &heap;
    memset(&o, 0, sizeof o);
    o.allocator = &alloc;
    o.backend = OKPU_BACKEND_EMULATOR;
    b = okpu_kpu_backend_create(&o, &err);
    CHECK(b != NULL && b->ram != NULL, "emulator backend: %s", b ? "" : err.message);
    if (!b)
        return;
    CHECK(heap.peak >= OKPU_KPU_RAM_SIZE, "KPU RAM not taken from the allocator (%zu bytes)", heap.peak);
    tiny_layer(&t, 8, 8, 2, 3, 1, 1, 1);
    memset(t.weights, 1, 2 * 3 * 9);
    pack_identity_act(t.act, 0);
    run_on(b, &t, "allocator run");
    t.s.w = 600;
    pack_args(&t.s, t.raw);
    layer_job(&t);
    rc = b->run_layer(b, &t.job, &err);
    CHECK(rc == OKPU_ERR_KMODEL_FORMAT && strstr(err.message, "600"), "bad layer ran: %d %s", rc, err.message);
    t.s.w = 8;
    pack_args(&t.s, t.raw);
    layer_job(&t);
    t.job.weights = NULL;
    rc = b->run_layer(b, &t.job, &err);
    CHECK(rc == OKPU_ERR_PARAM && strstr(err.message, "weights"), "job without weights: %d %s", rc, err.message);
    /* batches built by hand whose rows run past KPU RAM (the loaders refuse such files; the backend checks too) */
    layer_job(&t);
    t.job.batches = 3;
    t.job.in_rows = 20000;
    t.job.out_rows = 4;
    rc = b->run_batches(b, &t.job, &err);
    CHECK(rc == OKPU_ERR_PARAM && strstr(err.message, "3 batches of 20000 input rows"), "batches past KPU RAM: %d %s",
          rc, err.message);
    layer_free(&t);
    b->destroy(b);
    CHECK(heap.live == 0 && heap.bytes == 0, "allocator: %ld blocks, %zu bytes not freed", heap.live, heap.bytes);

    o.backend = OKPU_BACKEND_K210;
    b = okpu_kpu_backend_create(&o, &err);
    CHECK(b == NULL && err.code == OKPU_ERR_NOT_IMPLEMENT && strstr(err.message, "board"),
          "K210 backend on the host: %s", b ? "created" : err.message);
}

/* ---------------------------------------------------------------------------------------------------------------- */

/* Run t on the prepared backend b, then on `plain` (never prepared): the same output bytes. */
static int same_as_unprepared(okpu_kpu_backend *b, okpu_kpu_backend *plain, test_layer *t, const char *label)
{
    const size_t n = (size_t)t->s.ow * t->s.oh * t->s.oc;
    uint8_t *expect = malloc(n);
    int same;

    run_on(b, t, label);
    memcpy(expect, t->main_out, n);
    run_on(plain, t, label);
    same = memcmp(expect, t->main_out, n) == 0;
    free(expect);
    return same;
}

/* prepare() takes the working memory; run_layer then allocates nothing. A job no prepare covered still runs (the
 * emulator prepares it on that run) and gives the same bytes. */
static void test_prepare(int reference)
{
    counting_heap heap = {0, 0, 0, 0};
    okpu_allocator alloc;
    okpu_options o;
    okpu_error err;
    okpu_kpu_backend *b, *plain;
    test_layer big, small;
    size_t n, scratch;
    long calls;
    const char *what = reference ? "reference path" : "fast path";

    alloc.alloc = count_alloc;
    alloc.free = count_free;
    alloc.ctx = &heap;
    memset(&o, 0, sizeof o);
    o.allocator = &alloc;
    b = reference ? okpu_kpu_emu_create_reference(&o, &err) : okpu_kpu_emu_create(&o, &err);
    plain = make_emu(OKPU_CONV_OFFSET_PER_CHANNEL, OKPU_ROUND_HALF_EVEN, OKPU_MEAN_BORDER_REPLICATE, reference);
    CHECK(b != NULL && b->prepare != NULL, "%s: emulator without prepare", what);
    if (!b)
        return;
    CHECK(b->scratch_bytes == 0, "%s: %zu bytes of scratch before any prepare", what, b->scratch_bytes);

    tiny_layer(&big, 40, 20, 12, 6, 1, 0, 1);
    for (n = 0; n < (size_t)40 * 20 * 12; n++)
        big.input[n] = (uint8_t)(n * 29u + 7u);
    for (n = 0; n < (size_t)6 * 12 * 9; n++)
        big.weights[n] = (uint8_t)(n % 4u);
    for (n = 0; n < 6; n++)
        pack_bn(big.bn + 8 * n, 1, 0, 9);
    pack_identity_act(big.act, 0);
    layer_job(&big);
    tiny_layer(&small, 8, 8, 2, 3, 1, 1, 1);
    small.s.arg_w = 1; /* the w-offset term is the weights' sum: the output follows the weights */
    pack_args(&small.s, small.raw);
    memset(small.weights, 1, 2 * 3 * 9);
    for (n = 0; n < 3; n++)
        pack_bn(small.bn + 8 * n, 1, 0, 2);
    pack_identity_act(small.act, 0);
    layer_job(&small);

    CHECK(b->prepare(b, &big.job, &err) == OKPU_OK, "%s: prepare: %s", what, err.message);
    scratch = b->scratch_bytes;
    CHECK(scratch > 0, "%s: prepare took no working memory", what);
    calls = heap.calls;
    /* The work block is not regrown for a smaller layer; the fast path keeps each layer's w-offset terms (one int64
     * per output channel) and, 8-bit and not depthwise, its weights packed by quads of output channels (per pair of
     * taps, four 32-bit words: here 1 quad x 9 pairs), taken at prepare and counted in scratch_bytes. */
    CHECK(b->prepare(b, &small.job, &err) == OKPU_OK && heap.calls == calls + (reference ? 0 : 2) &&
              b->scratch_bytes == scratch + (reference ? 0 : small.s.oc * sizeof(int64_t) + 1 * 9 * 4 * sizeof(uint32_t)),
          "%s: a smaller layer after a larger one reallocated (%ld calls, %zu -> %zu bytes)", what,
          heap.calls - calls, scratch, b->scratch_bytes);
    scratch = b->scratch_bytes;
    calls = heap.calls;
    CHECK(b->prepare(b, &small.job, &err) == OKPU_OK && heap.calls == calls && b->scratch_bytes == scratch,
          "%s: preparing a layer again allocated (%ld calls, %zu -> %zu bytes)", what, heap.calls - calls, scratch,
          b->scratch_bytes);

    /* both run without one allocation, and give what an emulator that was never prepared gives */
    CHECK(same_as_unprepared(b, plain, &small, "small layer"), "%s: prepared and unprepared runs differ", what);
    CHECK(same_as_unprepared(b, plain, &big, "big layer"), "%s: prepared and unprepared runs differ", what);
    CHECK(heap.calls == calls, "%s: run_layer allocated %ld times after prepare", what, heap.calls - calls);
    /* the same work block either way; the prepared fast path holds the w-offset terms on top */
    CHECK(reference ? plain->scratch_bytes >= scratch : scratch > plain->scratch_bytes,
          "%s: the unprepared emulator reports %zu bytes, the prepared %zu", what, plain->scratch_bytes, scratch);

    /* weights changed in place and the layer prepared again (as the virtual board does before each run): the
     * prepared terms follow the new weights */
    for (n = 0; n < (size_t)2 * 3 * 9; n++)
        small.weights[n] = (uint8_t)(n * 7u + 3u);
    CHECK(b->prepare(b, &small.job, &err) == OKPU_OK && heap.calls == calls, "%s: prepare again: %s", what,
          err.message);
    CHECK(same_as_unprepared(b, plain, &small, "small layer, new weights"),
          "%s: re-prepared and unprepared runs differ", what);
    /* so with the activation table: every y to 7 */
    {
        const size_t n_out = (size_t)small.s.ow * small.s.oh * small.s.oc;
        uint8_t *before = malloc(n_out), bias[16];
        int64_t x_start[16];
        int32_t y_mul[16];
        unsigned shift[16], i;
        memcpy(before, small.main_out, n_out);
        for (i = 0; i < 16; i++) {
            x_start[i] = i == 0 ? -((int64_t)1 << 35) : ((int64_t)1 << 34) + i;
            y_mul[i] = 0;
            shift[i] = 0;
            bias[i] = 7;
        }
        pack_act(small.act, x_start, y_mul, shift, bias);
        CHECK(b->prepare(b, &small.job, &err) == OKPU_OK && heap.calls == calls, "%s: prepare again: %s", what,
              err.message);
        CHECK(same_as_unprepared(b, plain, &small, "small layer, new activation"),
              "%s: re-prepared and unprepared runs differ after a new activation table", what);
        CHECK(memcmp(before, small.main_out, n_out) != 0 && small.main_out[0] == 7 && small.main_out[n_out - 1] == 7,
              "%s: the new activation table was not applied (%u)", what, small.main_out[0]);
        free(before);
    }

    /* a job prepare refuses: the same check as run_layer, nothing allocated */
    big.s.w = 600;
    pack_args(&big.s, big.raw);
    layer_job(&big);
    CHECK(b->prepare(b, &big.job, &err) == OKPU_ERR_KMODEL_FORMAT && strstr(err.message, "600") &&
              heap.calls == calls,
          "%s: bad layer prepared: %s", what, err.message);

    layer_free(&big);
    layer_free(&small);
    if (!reference) {
        /* A 3x3 conv of one input channel and a 3x3 depthwise layer on the same weights and arguments: the same
         * w-offset terms, but their weights pack differently (40 words for 2 quads of 5 pairs, 48 for 8 channels of
         * six), so each must keep its own (a shared entry once overran the smaller buffer). */
        test_layer conv1, dw;
        tiny_layer(&conv1, 8, 8, 1, 8, 1, 0, 1);
        tiny_layer(&dw, 8, 8, 8, 8, 1, 0, 1);
        dw.s.depthwise = 1;
        pack_args(&dw.s, dw.raw);
        free(dw.weights);
        dw.weights = conv1.weights;
        for (n = 0; n < (size_t)8 * 9; n++)
            conv1.weights[n] = (uint8_t)(n * 37u + 11u);
        for (n = 0; n < 64; n++)
            conv1.input[n] = (uint8_t)(n * 13u + 5u);
        for (n = 0; n < (size_t)8 * 8 * 8; n++)
            dw.input[n] = (uint8_t)(n * 29u + 3u);
        for (n = 0; n < 8; n++) {
            pack_bn(conv1.bn + 8 * n, 1, 0, 6);
            pack_bn(dw.bn + 8 * n, 1, 0, 4);
        }
        pack_identity_act(conv1.act, 0);
        pack_identity_act(dw.act, 0);
        layer_job(&conv1);
        layer_job(&dw);
        CHECK(b->prepare(b, &conv1.job, &err) == OKPU_OK && b->prepare(b, &dw.job, &err) == OKPU_OK,
              "%s: prepare: %s", what, err.message);
        CHECK(same_as_unprepared(b, plain, &conv1, "conv on shared weights") &&
                  same_as_unprepared(b, plain, &dw, "depthwise on shared weights"),
              "%s: a conv and a depthwise layer on the same weights differ from unprepared runs", what);
        dw.weights = NULL;
        layer_free(&conv1);
        layer_free(&dw);
    }
    b->destroy(b);
    plain->destroy(plain);
    CHECK(heap.live == 0 && heap.bytes == 0, "%s: %ld blocks, %zu bytes not freed", what, heap.live, heap.bytes);
}

/* A side job run beside the next layer (see "Side chains" in kpu_emu.c) when its input was not forwarded this time,
 * although the pair was made because it would be: the next layer overwrites the rows the side job reads, so the
 * emulator runs the chain first, then the layer. (The plan always runs the side job's producer just before it, so
 * only a backend driven directly, as here, takes this path.) The bytes: the two layers run one after the other. */
typedef struct side_chain_call {
    okpu_kpu_backend *b;
    const okpu_kpu_layer_job *side;
    int runs, rc;
} side_chain_call;

static void run_side_chain(void *p)
{
    side_chain_call *c = p;
    const struct timespec pause = {0, 100000000L};
    okpu_error err;

    /* A tenth of a second first: long enough for another thread to run the whole next layer, over the rows read
     * below, were the chain not run before it. */
    nanosleep(&pause, NULL);
    c->runs++;
    c->rc = c->b->run_side(c->b, c->side, &err);
}

static void side_pair_layer(test_layer *t, uint32_t oc, uint32_t src, uint32_t dst, uint32_t seed)
{
    size_t i;

    tiny_layer(t, 40, 30, 64, oc, 0, 0, 1);
    t->s.src = src;
    t->s.dst = dst;
    pack_args(&t->s, t->raw);
    for (i = 0; i < (size_t)40 * 30 * 64; i++)
        t->input[i] = (uint8_t)(i * (29u + seed) + seed);
    for (i = 0; i < (size_t)64 * oc; i++)
        t->weights[i] = (uint8_t)(i * (7u + seed) + 3u);
    for (i = 0; i < oc; i++) { /* about 128 + (sum - its mean) x mul / 2^14: a sum's mean is 64 x 127.5^2 */
        const int32_t mul = (int32_t)(1 + (i * 5u + seed) % 9u);
        pack_bn(t->bn + 8 * i, mul, 128 - (int32_t)((1040400 * mul) >> 14), 14);
    }
    pack_identity_act(t->act, 0);
    layer_job(t);
}

static void test_side_chain_fallback(void)
{
    okpu_kpu_backend *backend[2];
    okpu_options o;
    okpu_error err;
    test_layer side, next;
    uint8_t *side_out[2];
    const size_t side_bytes = (size_t)40 * 30 * 4;
    side_chain_call call;
    int k, rc;

    /* side: a 1x1 head of 4 channels (on one thread) reading rows 100-2019; next: 64 channels (shared) reading rows
     * 4000-5919 and writing rows 100-2019, the head's input */
    side_pair_layer(&side, 4, 100, 8000, 1);
    side_pair_layer(&next, 64, 4000, 100, 2);
    side.job.layer = 1;
    side.job.follows_producer = 1; /* forwarded when its producer ran just before: the pair may overlap so */
    next.job.layer = 2;
    next.job.main_out = NULL; /* (a next layer writes no main memory) */
    for (k = 0; k < 2; k++) {
        memset(&o, 0, sizeof o);
        o.threads = k ? 2 : 1;
        backend[k] = okpu_kpu_emu_create(&o, &err);
        if (!backend[k]) {
            CHECK(0, "side chain fallback: cannot create the emulator: %s", err.message);
            return;
        }
        okpu_kpu_layout_upload(backend[k]->ram, side.s.src, side.input, 40, 30, 64);
        okpu_kpu_layout_upload(backend[k]->ram, next.s.src, next.input, 40, 30, 64);
    }
    /* one thread: the two layers in order */
    rc = backend[0]->run_layer(backend[0], &side.job, &err);
    CHECK(rc == OKPU_OK, "side chain fallback: side layer on one thread: %s", err.message);
    side_out[0] = malloc(side_bytes);
    memcpy(side_out[0], side.main_out, side_bytes);
    rc = backend[0]->run_layer(backend[0], &next.job, &err);
    CHECK(rc == OKPU_OK, "side chain fallback: next layer on one thread: %s", err.message);
    /* two threads: the pair, its side job's input not forwarded (nothing ran before it) */
    memset(side.main_out, 0, side_bytes);
    CHECK(backend[1]->prepare(backend[1], &side.job, &err) == OKPU_OK &&
              backend[1]->prepare(backend[1], &next.job, &err) == OKPU_OK,
          "side chain fallback: prepare: %s", err.message);
    rc = backend[1]->prepare_beside(backend[1], &side.job, &next.job, &err);
    CHECK(rc == 1, "side chain fallback: prepare_beside refused the pair (%d)", rc);
    call.b = backend[1];
    call.side = &side.job;
    call.runs = 0;
    call.rc = -1;
    rc = backend[1]->run_beside(backend[1], &next.job, &side.job, run_side_chain, &call, &err);
    CHECK(rc == OKPU_OK && call.runs == 1 && call.rc == OKPU_OK,
          "side chain fallback: run_beside %d, chain ran %d times (rc %d)", rc, call.runs, call.rc);
    side_out[1] = side.main_out;
    {
        size_t i, inside = 0; /* (a saturated head would hide a corrupted input) */
        for (i = 0; i < side_bytes; i++)
            inside += side_out[0][i] > 0 && side_out[0][i] < 255;
        CHECK(inside > side_bytes / 2, "side chain fallback: only %zu of %zu head outputs unsaturated", inside,
              side_bytes);
    }
    CHECK(memcmp(side_out[0], side_out[1], side_bytes) == 0, "side chain fallback: the side job's output differs");
    CHECK(memcmp(backend[0]->ram, backend[1]->ram, OKPU_KPU_RAM_SIZE) == 0,
          "side chain fallback: KPU RAM differs from the two layers run in order");
    free(side_out[0]);
    for (k = 0; k < 2; k++)
        backend[k]->destroy(backend[k]);
    layer_free(&side);
    layer_free(&next);
}

/* Whole models: after okpu_model_load, a forward pass allocates nothing, and the emulator's working memory is in the
 * memory report. Only a reader that builds KPU_CONV steps has its layers prepared at load; a model whose reader still
 * runs its KPU layers itself (the transitional LEGACY step) is reported as such, and then only a second pass is
 * checked. */
static void model_forward_allocations(const char *path, int required)
{
    counting_heap heap = {0, 0, 0, 0};
    okpu_allocator alloc;
    okpu_options o;
    okpu_error err;
    okpu_memory_info mem;
    okpu_model *m;
    uint8_t *data;
    size_t size;
    long calls;
    int i, kpu_layers = 0, conv_steps = 0;

    data = read_model(path, &size, required);
    if (!data)
        return;
    alloc.alloc = count_alloc;
    alloc.free = count_free;
    alloc.ctx = &heap;
    okpu_options_default(&o);
    o.allocator = &alloc;
    m = okpu_model_load(data, size, &o, &err);
    CHECK(m != NULL, "%s: load: %s", path, err.message);
    if (!m) {
        free(data);
        return;
    }
    for (i = 0; i < m->layer_count; i++) {
        kpu_layers += m->layers[i].info.is_kpu;
        conv_steps += m->layers[i].step.kind == OKPU_STEP_KPU_CONV;
    }
    set_filled_inputs(m, 11u, path);
    okpu_model_memory(m, &mem);
    calls = heap.calls;
    CHECK(okpu_model_run(m, 0, &err) == OKPU_OK, "%s: run: %s", path, err.message);
    if (conv_steps > 0 || kpu_layers == 0) {
        CHECK(heap.calls == calls, "%s: the forward pass allocated %ld times after load", path, heap.calls - calls);
        CHECK(kpu_layers == 0 || mem.backend_scratch > 0, "%s: %d KPU layers but backend_scratch is 0", path,
              kpu_layers);
        printf("%s: %d KPU layers prepared at load (backend_scratch %zu bytes), forward pass: %ld allocations\n", path,
               kpu_layers, mem.backend_scratch, heap.calls - calls);
    } else {
        printf("%s: NOT CHECKED after load: its %d KPU layers run outside KPU_CONV steps (reader not converted); ",
               path, kpu_layers);
        calls = heap.calls;
        CHECK(okpu_model_run(m, 0, &err) == OKPU_OK, "%s: second run: %s", path, err.message);
        CHECK(heap.calls == calls, "%s: the second forward pass allocated %ld times", path, heap.calls - calls);
        printf("second pass: %ld allocations\n", heap.calls - calls);
    }
    okpu_model_free(m);
    CHECK(heap.live == 0 && heap.bytes == 0, "%s: %ld blocks, %zu bytes not freed", path, heap.live, heap.bytes);
    free(data);
}

static void test_model_allocations(void)
{
    static const char *const real[] = {
        "face_detect_yolo2_v3_maixpy/facedetect.kmodel", "yolo2_voc20_v3_nncase_rc5/yolo.kmodel",
        "yolo2_voc20_v4_nncase/yolo.kmodel", "mnist_v3_maixpy/mnist.kmodel", "ulffd_face_v4_nncase/slim-320.kmodel",
        "mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel",
        "ulffd_face_v4_nncase/RFB-320.kmodel", /* (batches: each worker's block for whole maps taken at load) */
        "kmodel_v5_nncase/yolox_nano_224.kmodel"};

    on_test_models(model_forward_allocations, real, sizeof real / sizeof real[0]);
}

/* A clock for the timed runs: every read is 1000 ns after the last, so each step's time is exactly 1000 and a
 * layer's figure says how many steps went to it. */
static uint64_t step_clock(void *ctx)
{
    uint64_t *t = (uint64_t *)ctx;
    *t += 1000u;
    return *t;
}

/* okpu_model_run_timed: the same outputs as okpu_model_run; each step's time under the layer that starts it (a
 * pair's and a side chain's under their first layer, 0 under the rest); nothing under layers a partial run did not
 * reach; no clock or no array refused. On two threads, so pairs and side chains (slim-320) are in the plan. */
static void timed_run(const char *path, int required)
{
    okpu_options o;
    okpu_error err;
    okpu_model *m;
    okpu_tensor t;
    uint8_t *data, *plain = NULL;
    const uint8_t *out;
    uint64_t clock = 0, *ns;
    size_t size;
    int i, n, groups = 0, partial;

    data = read_model(path, &size, required);
    if (!data)
        return;
    okpu_options_default(&o);
    o.threads = 2;
    m = okpu_model_load(data, size, &o, &err);
    CHECK(m != NULL, "%s: load: %s", path, err.message);
    if (!m) {
        free(data);
        return;
    }
    n = okpu_model_layer_count(m);
    ns = malloc((size_t)n * sizeof *ns);
    set_filled_inputs(m, 7u, path);
    CHECK(okpu_model_run(m, 0, &err) == OKPU_OK && okpu_model_output(m, 0, &t, &out, &err) == OKPU_OK, "%s: run: %s",
          path, err.message);
    plain = malloc(t.bytes);
    memcpy(plain, out, t.bytes);
    for (i = 0; i < n; i++)
        ns[i] = 12345u;
    set_filled_inputs(m, 7u, path); /* (a run may reuse the input's memory, as on the chip) */
    CHECK(okpu_model_run_timed(m, 0, step_clock, &clock, ns, &err) == OKPU_OK, "%s: timed run: %s", path,
          err.message);
    CHECK(okpu_model_output(m, 0, &t, &out, &err) == OKPU_OK && memcmp(out, plain, t.bytes) == 0,
          "%s: a timed run's output differs from a plain run's", path);
    for (i = 0; i < n; i++) {
        int last = i; /* the last layer of the step layer i starts */
        if (okpu_model_beside(m, i) > i)
            last = okpu_model_beside(m, i);
        else if (okpu_model_paired(m, i) == i + 1)
            last = i + 1;
        CHECK(ns[i] == 1000u, "%s: layer %d took %llu ns by the step clock, not one step", path, i,
              (unsigned long long)ns[i]);
        groups += last > i;
        for (i++; i <= last; i++)
            CHECK(ns[i] == 0u, "%s: layer %d, run with the step before it, has %llu ns of its own", path, i,
                  (unsigned long long)ns[i]);
        i--;
    }
    printf("%s: timed run: %d layers, %d of them start a pair or side chain\n", path, n, groups);

    partial = n > 2 ? 2 : 1;
    CHECK(okpu_model_run_timed(m, partial, step_clock, &clock, ns, &err) == OKPU_OK, "%s: partial timed run: %s",
          path, err.message);
    for (i = partial; i < n; i++)
        CHECK(ns[i] == 0u, "%s: layer %d, past a run of %d layers, has %llu ns", path, i, partial,
              (unsigned long long)ns[i]);
    CHECK(okpu_model_run_timed(m, 0, NULL, NULL, ns, &err) == OKPU_ERR_PARAM, "%s: a timed run without a clock ran",
          path);
    CHECK(okpu_model_run_timed(m, 0, step_clock, &clock, NULL, &err) == OKPU_ERR_PARAM,
          "%s: a timed run without an array ran", path);
    okpu_model_free(m);
    free(plain);
    free(ns);
    free(data);
}

static void test_timed_runs(void)
{
    static const char *const real[] = {"ulffd_face_v4_nncase/slim-320.kmodel",
                                       "face_detect_yolo2_v3_maixpy/facedetect.kmodel"};

    on_test_models(timed_run, real, sizeof real / sizeof real[0]);
}

int main(void)
{
    test_layout();
    test_decode();
    test_check();
    test_hand_computed();
    test_pools();
    test_backend_and_errors();
    test_prepare(0);
    test_prepare(1);
    test_model_allocations();
    test_side_chain_fallback();
    test_timed_runs();
    test_bn_near_int64_bound();
    test_bn_fused_bound();
    test_fast_vs_reference(400, 0, 1);
    test_fast_vs_reference(200, 1, 1);
    /* the fast path again without the AVX-512 code, without the AVX2 code, then without SSE4.1 too (the emulator
     * reads these at create; on a CPU without them, or off x86-64, this repeats the same paths) */
    setenv("OKPU_EMU_NO_AVX512", "1", 1);
    test_bn_near_int64_bound();
    test_bn_fused_bound();
    test_fast_vs_reference(200, 0, 0);
    test_fast_vs_reference(100, 1, 0);
    setenv("OKPU_EMU_NO_AVX2", "1", 1);
    test_bn_near_int64_bound();
    test_bn_fused_bound();
    test_fast_vs_reference(200, 0, 0);
    test_fast_vs_reference(100, 1, 0);
    setenv("OKPU_EMU_NO_SSE41", "1", 1);
    test_bn_near_int64_bound();
    test_bn_fused_bound();
    test_fast_vs_reference(200, 0, 0);
    test_fast_vs_reference(100, 1, 0);
    return ctest_summary();
}

// SPDX-License-Identifier: Apache-2.0
/* The KPU register block of the virtual board (c_src/kpu/kpu_device.c), driven by the K210 backend.
 *
 * The board's memory is one buffer: 6 MiB of SRAM (the KPU reaches it at bus address 0x40000000) and the 2 MiB KPU
 * RAM. Models are copied into that SRAM and loaded from there, as on a board; the K210 backend's port writes the
 * device's registers and hands out bus addresses = 0x40000000 + offset in SRAM. Whole models must give the emulator
 * backend's outputs byte for byte. Register semantics (interrupt latch/mask/clear, the FIFO levels, the output FIFO
 * of send_data_out, 8/16-bit mode) and every fault (unknown register, read-only register written, tables outside
 * SRAM or misaligned, an invalid argument, a hung KPU) are checked one by one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c_src/core/bytes.h"
#include "../../c_src/kpu/kpu_args.h"
#include "../../c_src/kpu/kpu_backend.h"
#include "../../c_src/kpu/kpu_layout.h"
#include "../../c_src/okpu.h"
#include "ctest.h"
#include "model_run.h"
#include "read_file.h"

#define SRAM_SIZE (6u * 1024u * 1024u)
#define BUS_BASE 0x40000000u

typedef struct board {
    uint8_t *memory; /* SRAM then KPU RAM */
    okpu_kpu_device *dev;
    okpu_k210_port port;
    size_t sram_used; /* bump allocator for what the test places in SRAM */
} board;

static uint64_t port_read(void *ctx, uint32_t offset)
{
    return okpu_kpu_device_read(((board *)ctx)->dev, offset);
}

static void port_write(void *ctx, uint32_t offset, uint64_t value)
{
    okpu_kpu_device_write(((board *)ctx)->dev, offset, value);
}

static int port_address(void *ctx, const void *p, uint32_t *addr)
{
    board *b = ctx;
    const uint8_t *q = p;
    if (q < b->memory || q >= b->memory + SRAM_SIZE)
        return 1;
    *addr = BUS_BASE + (uint32_t)(q - b->memory);
    return 0;
}

static void board_init(board *b)
{
    okpu_error err;
    memset(b, 0, sizeof *b);
    b->memory = calloc(1, SRAM_SIZE + OKPU_KPU_RAM_SIZE);
    b->dev = okpu_kpu_device_create(b->memory, SRAM_SIZE, b->memory + SRAM_SIZE, NULL, &err);
    CHECK(b->dev != NULL, "device: %s", err.message);
    b->port.ctx = b;
    b->port.read_reg = port_read;
    b->port.write_reg = port_write;
    b->port.kpu_ram = b->memory + SRAM_SIZE;
    b->port.kpu_address = port_address;
    b->port.max_polls = 1000;
}

static void board_free(board *b)
{
    okpu_kpu_device_free(b->dev);
    free(b->memory);
}

/* 256-byte aligned room in the board's SRAM, as MaixPy aligns model buffers. */
static uint8_t *board_place(board *b, const void *src, size_t n)
{
    uint8_t *p;
    b->sram_used = (b->sram_used + 255u) & ~(size_t)255u;
    if (b->sram_used + n > SRAM_SIZE)
        return NULL;
    p = b->memory + b->sram_used;
    memcpy(p, src, n);
    b->sram_used += n;
    return p;
}

/* ---- whole models: K210 backend -> register block -> emulator, against the emulator backend ---- */

static void compare_model(const char *path, int required)
{
    okpu_options emu_opts, hw_opts;
    board b;
    okpu_model *a, *h;
    uint8_t *data, *on_board;
    size_t size;
    int i, kpu_layers = 0;

    data = read_model(path, &size, required);
    if (!data)
        return;
    board_init(&b);
    on_board = board_place(&b, data, size);
    CHECK(on_board != NULL, "%s: does not fit the board's SRAM", path);
    okpu_options_default(&emu_opts);
    hw_opts = emu_opts;
    hw_opts.backend = OKPU_BACKEND_K210;
    hw_opts.k210_port = &b.port;
    a = load_and_run(data, size, &emu_opts, 777u, path);
    h = on_board ? load_and_run(on_board, size, &hw_opts, 777u, path) : NULL;
    if (a && h) {
        for (i = 0; i < okpu_model_layer_count(a); i++) {
            okpu_layer_info li;
            okpu_model_layer_info(a, i, &li);
            kpu_layers += li.is_kpu;
        }
        CHECK(okpu_kpu_device_fault(b.dev) == NULL, "%s: device fault: %s", path,
              okpu_kpu_device_fault(b.dev)->message);
        CHECK(okpu_kpu_device_layers_run(b.dev) == (unsigned long)kpu_layers,
              "%s: the register block ran %lu layers, the model has %d KPU layers", path,
              okpu_kpu_device_layers_run(b.dev), kpu_layers);
        for (i = 0; i < okpu_model_output_count(a); i++) {
            okpu_tensor ta, th;
            const uint8_t *da, *dh;
            okpu_error err;
            int ra = okpu_model_output(a, i, &ta, &da, &err), rh = okpu_model_output(h, i, &th, &dh, &err);
            CHECK(ra == OKPU_OK && rh == OKPU_OK && ta.bytes == th.bytes && memcmp(da, dh, ta.bytes) == 0,
                  "%s: output %d differs between the emulator and the K210 backend on the register block", path, i);
        }
        printf("%s: %d KPU layers through the register block, outputs identical\n", path, kpu_layers);
    }
    okpu_model_free(a);
    okpu_model_free(h);
    board_free(&b);
    free(data);
}

static void test_models(void)
{
    static const char *const real[] = {
        "face_detect_yolo2_v3_maixpy/facedetect.kmodel", "yolo2_voc20_v3_nncase_rc5/yolo.kmodel",
        "yolo2_voc20_v4_nncase/yolo.kmodel", "mnist_v3_maixpy/mnist.kmodel", "ulffd_face_v4_nncase/slim-320.kmodel"};

    on_test_models(compare_model, real, sizeof real / sizeof real[0]);
}

/* ---- one hand-made layer through the registers ---- */

enum { R_FIFO = 0x00, R_STATUS = 0x08, R_RAW = 0x10, R_MASK = 0x18, R_CLEAR = 0x20, R_THRESH = 0x28, R_OUT = 0x30,
       R_CTRL = 0x38, R_EIGHT = 0x40 };

/* A 1x1 conv, 8x8x4 -> 8x8x2, with its tables at the start of SRAM: weights, batch norm, activation. */
typedef struct layer_words {
    uint64_t w[12];
} layer_words;

static uint64_t field(unsigned lo, uint64_t v)
{
    return v << lo;
}

static layer_words one_layer(uint32_t weights_bus, uint32_t bn_bus, uint32_t act_bus, int send_out)
{
    layer_words L;
    memset(&L, 0, sizeof L);
    L.w[0] = field(0, 1);                                                   /* int_en */
    L.w[1] = field(0, 0) | field(32, 64);                                   /* src row 0, dst row 64 */
    L.w[2] = field(0, 3) | field(32, 1) | field(48, 1);                     /* in 4, out 2, coef 2 (minus one) */
    L.w[3] = field(0, 7) | field(10, 7) | field(32, 7) | field(42, 7);      /* 8x8 -> 8x8 (minus one) */
    L.w[4] = field(0, 0) | field(32, bn_bus);                               /* kernel 1x1, pool 0; bn */
    L.w[5] = field(15, 7) | field(32, weights_bus);                         /* para_size 8; weights */
    L.w[6] = 0;
    L.w[7] = field(32, act_bus);                                            /* activation table */
    L.w[8] = 0;
    L.w[9] = 0;                                                             /* no offset terms */
    L.w[10] = 0;
    L.w[11] = field(0, send_out ? 1 : 0) | field(16, 8 * 8 * 1 - 1) | field(32, 8 * 8 * 2 - 1);
    return L;
}

static void push(board *b, const layer_words *L)
{
    unsigned i;
    for (i = 0; i < 12; i++)
        okpu_kpu_device_write(b->dev, R_FIFO, L->w[i]);
}

static void test_registers(void)
{
    board b;
    layer_words L;
    uint8_t weights[8], bn[16], act[KPU_ACT_TABLE_BYTES], in[8 * 8 * 4], out[8 * 8 * 2];
    okpu_kpu_args args;
    uint8_t raw[KPU_ARGS_BYTES];
    okpu_error err;
    unsigned i;

    board_init(&b);
    /* reset state: everything masked, 8-bit mode */
    CHECK(okpu_kpu_device_read(b.dev, R_MASK) == 7, "mask after reset %llu",
          (unsigned long long)okpu_kpu_device_read(b.dev, R_MASK));
    CHECK(okpu_kpu_device_read(b.dev, R_EIGHT) == 1, "8-bit mode after reset");
    CHECK(!okpu_kpu_device_irq(b.dev), "no interrupt line after reset");
    okpu_kpu_device_write(b.dev, R_THRESH, (1u << 4) | 10u);
    CHECK(okpu_kpu_device_read(b.dev, R_THRESH) == 0x1A, "threshold stored");
    okpu_kpu_device_write(b.dev, R_CTRL, 0xFF);
    CHECK(okpu_kpu_device_read(b.dev, R_CTRL) == 0x1F, "fifo_ctrl keeps its 5 bits");

    for (i = 0; i < sizeof weights; i++)
        weights[i] = (uint8_t)(i + 1);
    memset(bn, 0, sizeof bn);
    for (i = 0; i < 2; i++)
        bn[8 * i] = 1; /* norm_mul 1, add 0, shift 0 */
    memset(act, 0, sizeof act);
    for (i = 0; i < 16; i++) {
        /* segment 0 from x = 0 (identity: y_mul 1, shift 0), the others start out of reach */
        uint64_t w = ((i == 0 ? 0 : 0x7FFFFFFFFull) << 24) | ((uint64_t)1 << 8);
        okpu_wr_u64(act + 8 * i, w);
    }
    CHECK(board_place(&b, weights, sizeof weights) == b.memory, "weights at SRAM 0");
    board_place(&b, bn, sizeof bn);           /* at 256 */
    board_place(&b, act, sizeof act);         /* at 512 */
    fill_input(in, sizeof in, 0, 5);
    okpu_kpu_layout_upload(b.memory + SRAM_SIZE, 0, in, 8, 8, 4);

    /* the argument really is valid, so the faults below are the device's own */
    L = one_layer(BUS_BASE, BUS_BASE + 256, BUS_BASE + 512, 1);
    for (i = 0; i < 12; i++)
        okpu_wr_u64(raw + 8 * i, L.w[i]);
    okpu_kpu_args_decode(raw, &args);
    CHECK(okpu_kpu_args_check(&args, 0, -1, &err) == OKPU_OK, "hand-made layer invalid: %s", err.message);

    /* FIFO level bits follow the fill: almost-empty at <= 1 word, almost-full at >= 10 */
    okpu_kpu_device_write(b.dev, R_FIFO, L.w[0]);
    CHECK((okpu_kpu_device_read(b.dev, R_RAW) & 6) == 2, "1 word: almost empty only");
    for (i = 1; i < 10; i++)
        okpu_kpu_device_write(b.dev, R_FIFO, L.w[i]);
    CHECK((okpu_kpu_device_read(b.dev, R_RAW) & 6) == 4, "10 words: almost full only");
    CHECK(okpu_kpu_device_read(b.dev, R_STATUS) == 0, "masked: status 0");
    okpu_kpu_device_write(b.dev, R_MASK, 6); /* unmask calc_done */
    okpu_kpu_device_write(b.dev, R_FIFO, L.w[10]);
    CHECK(okpu_kpu_device_layers_run(b.dev) == 0, "11 words: nothing runs yet");
    okpu_kpu_device_write(b.dev, R_FIFO, L.w[11]);
    CHECK(okpu_kpu_device_fault(b.dev) == NULL, "fault: %s",
          okpu_kpu_device_fault(b.dev) ? okpu_kpu_device_fault(b.dev)->message : "");
    CHECK(okpu_kpu_device_layers_run(b.dev) == 1, "12th word runs the layer");
    CHECK(okpu_kpu_device_read(b.dev, R_STATUS) == 1, "calc_done in status");
    CHECK(okpu_kpu_device_irq(b.dev), "interrupt line up");

    /* the output FIFO carries the layer's output densely: 1x1 conv of weights 1..8 over 4 channels */
    for (i = 0; i < sizeof out; i += 8)
        okpu_wr_u64(out + i, okpu_kpu_device_read(b.dev, R_OUT));
    {
        int ok = 1;
        uint8_t expect[8 * 8 * 2];
        okpu_kpu_layout_download(b.memory + SRAM_SIZE, 64, expect, 8, 8, 2);
        ok = memcmp(out, expect, sizeof out) == 0;
        CHECK(ok, "fifo_data_out = the output rows in KPU RAM");
        /* a few values by hand: out[c][p] = sum_i w[c*4+i]*in[i][p] (the offsets and arg_x are 0) */
        for (i = 0; i < 64 && ok; i++) {
            unsigned c, s = 0, k;
            for (c = 0; c < 2; c++) {
                s = 0;
                for (k = 0; k < 4; k++)
                    s += weights[c * 4 + k] * in[k * 64 + i];
                if (out[c * 64 + i] != (s > 255 ? 255 : s)) {
                    CHECK(0, "pixel %u channel %u: %u, expected %u", i, c, out[c * 64 + i], s);
                    ok = 0;
                }
            }
        }
    }
    CHECK(okpu_kpu_device_read(b.dev, R_OUT) == 0, "drained output FIFO reads 0");

    okpu_kpu_device_write(b.dev, R_CLEAR, 7);
    CHECK(okpu_kpu_device_read(b.dev, R_STATUS) == 0 && !okpu_kpu_device_irq(b.dev), "clear drops calc_done");

    /* int_en 0: the layer runs but raises nothing */
    L.w[0] = 0;
    push(&b, &L);
    CHECK(okpu_kpu_device_layers_run(b.dev) == 2 && okpu_kpu_device_read(b.dev, R_STATUS) == 0,
          "int_en 0: no calc_done");
    L.w[0] = 1;

    /* hang: accepted, never done */
    okpu_kpu_device_set_hang(b.dev, 1);
    push(&b, &L);
    CHECK(okpu_kpu_device_layers_run(b.dev) == 2 && okpu_kpu_device_read(b.dev, R_STATUS) == 0, "hung KPU");
    okpu_kpu_device_set_hang(b.dev, 0);

    /* faults, each named */
    {
        struct {
            layer_words L;
            const char *want;
        } bad[4];
        unsigned k;
        bad[0].L = one_layer(BUS_BASE + SRAM_SIZE - 4, BUS_BASE + 256, BUS_BASE + 512, 0);
        bad[0].want = "weights (8 bytes at KPU bus address 0x405ffffc) is outside";
        bad[1].L = one_layer(BUS_BASE, 0x00001000u, BUS_BASE + 512, 0);
        bad[1].want = "batch-norm table (16 bytes at KPU bus address 0x00001000) is outside";
        bad[2].L = one_layer(BUS_BASE, BUS_BASE + 256, BUS_BASE + 516, 0);
        bad[2].want = "activation table at KPU bus address 0x40000204 is not 8-byte aligned";
        bad[3].L = one_layer(BUS_BASE, BUS_BASE + 256, BUS_BASE + 512, 0);
        bad[3].L.w[3] = field(0, 7) | field(10, 7) | field(32, 3) | field(42, 3); /* 8x8 -> 4x4 with no pool */
        bad[3].want = "layer 2";
        for (k = 0; k < 4; k++) {
            const okpu_error *f;
            okpu_kpu_device_clear_fault(b.dev);
            push(&b, &bad[k].L);
            f = okpu_kpu_device_fault(b.dev);
            CHECK(f && strstr(f->message, bad[k].want), "bad layer %u: want '%s', got '%s'", k, bad[k].want,
                  f ? f->message : "(no fault)");
            CHECK(okpu_kpu_device_layers_run(b.dev) == 2, "bad layer %u must not run", k);
        }
    }
    okpu_kpu_device_clear_fault(b.dev);
    okpu_kpu_device_write(b.dev, 0x48, 1);
    CHECK(okpu_kpu_device_fault(b.dev) && strstr(okpu_kpu_device_fault(b.dev)->message, "write at offset 0x48"),
          "unknown register write named");
    okpu_kpu_device_clear_fault(b.dev);
    okpu_kpu_device_write(b.dev, R_STATUS, 1);
    CHECK(okpu_kpu_device_fault(b.dev) && strstr(okpu_kpu_device_fault(b.dev)->message, "write at offset 0x8"),
          "read-only register write named");
    okpu_kpu_device_clear_fault(b.dev);
    (void)okpu_kpu_device_read(b.dev, 0x44);
    CHECK(okpu_kpu_device_fault(b.dev) && strstr(okpu_kpu_device_fault(b.dev)->message, "read at offset 0x44"),
          "misaligned register read named");
    board_free(&b);
}

/* The KPU fetches para_size x (load_time + 1) weight bytes on its own: a word whose weight-load fields reach past
 * the 8-byte table faults (issue 10), the nncase layout of the same layer runs. */
static void test_weight_loads(void)
{
    board b;
    layer_words L;
    uint8_t weights[8] = {1, 2, 3, 4, 5, 6, 7, 8}, bn[16] = {0}, act[KPU_ACT_TABLE_BYTES] = {0};
    const okpu_error *f;
    board_init(&b);
    board_place(&b, weights, sizeof weights);
    board_place(&b, bn, sizeof bn);
    board_place(&b, act, sizeof act);
    L = one_layer(BUS_BASE, BUS_BASE + 256, BUS_BASE + 512, 0);
    L.w[4] |= field(10, 1); /* load_para: the chip fetches the weights itself */
    push(&b, &L);           /* para_size 8, one load of 2 channels x 4 bytes: exactly the table */
    CHECK(okpu_kpu_device_fault(b.dev) == NULL && okpu_kpu_device_layers_run(b.dev) == 1, "nncase layout: %s",
          okpu_kpu_device_fault(b.dev) ? okpu_kpu_device_fault(b.dev)->message : "");
    L.w[5] = field(15, 0x1FFFF) | field(1, 63) | field(32, BUS_BASE); /* 131071 bytes x 64 loads */
    push(&b, &L);
    f = okpu_kpu_device_fault(b.dev);
    CHECK(f && strstr(f->message, "weight loads") && okpu_kpu_device_layers_run(b.dev) == 1,
          "para_size 131071 x 64 loads over an 8-byte table: %s", f ? f->message : "no fault");
    okpu_kpu_device_clear_fault(b.dev);
    L.w[5] = field(15, 8) | field(1, 1) | field(32, BUS_BASE); /* 2 loads of a whole table each */
    push(&b, &L);
    f = okpu_kpu_device_fault(b.dev);
    CHECK(f && strstr(f->message, "weight loads"), "load_time 1 for 2 channels per load of 2: %s",
          f ? f->message : "no fault");
    board_free(&b);
}

int main(void)
{
    test_weight_loads();
    test_registers();
    test_models();
    return ctest_summary();
}

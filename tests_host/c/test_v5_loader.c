// SPDX-License-Identifier: Apache-2.0
/* C tests for the kmodel v5 (nncase 1.x) reader on a hand-built file: a stackvm entry function that calls a k210
 * function (kpu_upload -> KPU RAM -> kpu_download into the k210 data pool -> copy to the model output), then the
 * container's refusals and every truncation and single-byte corruption of the file (run under ASan+UBSan: each must
 * load and run, or fail with a message, never crash). Exit status non-zero on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "okpu.h"
#include "ctest.h"

static void put_u8(buf *b, uint32_t v)
{
    b->d[b->n++] = (uint8_t)v;
}

static void put_name(buf *b, const char *s)
{
    size_t i, n = strlen(s);
    for (i = 0; i < 16; i++)
        put_u8(b, i < n ? (uint8_t)s[i] : 0u);
}

static void put_range(buf *b, uint32_t loc, uint32_t dt, uint32_t start, uint32_t size)
{
    put_u8(b, loc), put_u8(b, dt), put_u8(b, 0), put_u8(b, 0), put_u32(b, start), put_u32(b, size);
}

static void put_shape4(buf *b, uint32_t n, uint32_t c, uint32_t h, uint32_t w)
{
    put_u32(b, 4), put_u32(b, n), put_u32(b, c), put_u32(b, h), put_u32(b, w);
}

static void pad8(buf *b)
{
    while (b->n % 8u)
        put_u8(b, 0);
}

static void ldc(buf *b, int32_t v)
{
    put_u8(b, 0x02), put_u32(b, (uint32_t)v);
}

/* one function with a u8 [1,2,4,4] input and output (32 bytes each); returns where its text_size field is */
static size_t put_function(buf *b)
{
    size_t start = b->n, at_text;
    put_u32(b, 32), put_u32(b, 0), put_u32(b, 32), put_u32(b, 32), put_u32(b, 1), put_u32(b, 1), put_u32(b, 0);
    at_text = b->n;
    put_u32(b, 0);
    put_range(b, 0, 4, 0, 32), put_shape4(b, 1, 2, 4, 4);
    put_range(b, 1, 4, 0, 32), put_shape4(b, 1, 2, 4, 4);
    pad8(b);
    set_u32(b, start + 4, (uint32_t)(b->n - start));
    return at_text;
}

/* Offsets of interesting fields, for the targeted corruptions. */
static size_t K210_MOD, K210_TEXT, SV_TEXT;

static size_t build(buf *b)
{
    size_t mod, at_text, hdr, code;
    memset(b, 0, sizeof *b);
    put_u32(b, 0x4B4D444Cu), put_u32(b, 5), put_u32(b, 32), put_u32(b, 0), put_u32(b, 256), put_u32(b, 2);
    put_u32(b, 0), put_u32(b, 0);
    /* module 0: stackvm */
    mod = b->n;
    put_name(b, "stackvm");
    put_u32(b, 1), put_u32(b, 48), put_u32(b, 0), put_u32(b, 2), put_u32(b, 0), put_u32(b, 2), put_u32(b, 1);
    put_u32(b, 0);
    put_u8(b, 2), put_u8(b, 0), put_u8(b, 0), put_u8(b, 0), put_u32(b, 0); /* rdata 0 */
    put_u8(b, 3), put_u8(b, 0), put_u8(b, 0), put_u8(b, 0), put_u32(b, 0); /* data 0 */
    at_text = put_function(b);
    put_name(b, ".rdata"), put_u32(b, 0), put_u32(b, 0), put_u32(b, 0), put_u32(b, 0);
    put_name(b, ".text"), put_u32(b, 0), put_u32(b, 0);
    hdr = b->n;
    put_u32(b, 0), put_u32(b, 0);
    code = b->n;
    SV_TEXT = code;
    put_u8(b, 0x17), put_u8(b, 0), put_u8(b, 0), put_u32(b, 0); /* LEA_BUFFER input 0 */
    ldc(b, 4);                                                  /* u8 */
    ldc(b, 1), ldc(b, 2), ldc(b, 4), ldc(b, 4);
    put_u8(b, 0x31), put_u8(b, 0), put_u8(b, 4); /* STSHAPE r0 */
    ldc(b, 0);
    ldc(b, 32), ldc(b, 16), ldc(b, 4), ldc(b, 1);
    put_u8(b, 0x31), put_u8(b, 1), put_u8(b, 4); /* STSHAPE r1 */
    ldc(b, 1);
    put_u8(b, 0x17), put_u8(b, 1), put_u8(b, 0), put_u32(b, 0); /* LEA_BUFFER output 0 */
    ldc(b, 4), ldc(b, 0), ldc(b, 1);
    put_u8(b, 0x5E), put_u8(b, 0x03), put_u8(b, 0); /* TENSOR CALL */
    put_u32(b, 0), put_u8(b, 1), put_u8(b, 0), put_u8(b, 1), put_u8(b, 1);
    set_u32(b, hdr, (uint32_t)(b->n - code));
    set_u32(b, at_text, (uint32_t)(b->n - code));
    pad8(b);
    set_u32(b, mod + 24, (uint32_t)(b->n - mod));
    /* module 1: k210 */
    mod = b->n;
    K210_MOD = mod;
    put_name(b, "k210");
    put_u32(b, 1), put_u32(b, 48), put_u32(b, 0), put_u32(b, 3), put_u32(b, 0), put_u32(b, 2), put_u32(b, 1);
    put_u32(b, 0);
    put_u8(b, 2), put_u8(b, 0), put_u8(b, 0), put_u8(b, 0), put_u32(b, 0);
    put_u8(b, 3), put_u8(b, 0), put_u8(b, 0), put_u8(b, 0), put_u32(b, 32);
    put_u8(b, 64), put_u8(b, 0), put_u8(b, 0), put_u8(b, 0), put_u32(b, 2097152);
    at_text = put_function(b);
    put_name(b, ".rdata"), put_u32(b, 0), put_u32(b, 0), put_u32(b, 0), put_u32(b, 0);
    put_name(b, ".text"), put_u32(b, 0), put_u32(b, 0);
    hdr = b->n;
    put_u32(b, 0), put_u32(b, 0);
    code = b->n;
    K210_TEXT = code;
    put_u32(b, 0), put_range(b, 0, 4, 0, 32), put_range(b, 64, 4, 128, 0); /* kpu_upload to row 2 */
    put_u32(b, 1), put_u32(b, 2), put_u32(b, 4), put_u32(b, 4);
    put_u32(b, 1), put_range(b, 64, 4, 128, 0), put_range(b, 3, 4, 0, 32); /* kpu_download to data */
    put_u32(b, 1), put_u32(b, 2), put_u32(b, 4), put_u32(b, 4);
    put_u32(b, 3), put_range(b, 3, 4, 0, 32), put_range(b, 1, 4, 0, 32); /* copy data -> output */
    put_u32(b, 1), put_u32(b, 1), put_u32(b, 1), put_u32(b, 32);
    put_u32(b, 32), put_u32(b, 32), put_u32(b, 32), put_u32(b, 1);
    put_u32(b, 32), put_u32(b, 32), put_u32(b, 32), put_u32(b, 1);
    set_u32(b, hdr, (uint32_t)(b->n - code));
    set_u32(b, at_text, (uint32_t)(b->n - code));
    pad8(b);
    set_u32(b, mod + 24, (uint32_t)(b->n - mod));
    return b->n;
}

static okpu_model *load(const buf *b, size_t n, okpu_error *err)
{
    okpu_options o;
    okpu_options_default(&o);
    return okpu_model_load(b->d, n, &o, err);
}

/* Load (and, if it loads, run) a possibly corrupt file: must not crash; a refusal must say where. */
static void try_file(const buf *b, size_t n, const char *what, size_t at)
{
    okpu_error err;
    okpu_model *m = load(b, n, &err);
    if (m) {
        uint8_t in[32] = {0};
        okpu_tensor t;
        if (okpu_model_input(m, 0, &t) == OKPU_OK && t.bytes == 32)
            okpu_model_set_input(m, 0, in, 32, &err);
        okpu_model_run(m, 0, &err);
        okpu_model_free(m);
    } else {
        CHECK(err.code != OKPU_OK && strstr(err.message, "byte") != NULL, "%s at %lu: message without a place: %s",
              what, (unsigned long)at, err.message);
    }
}

int main(void)
{
    static buf b, c;
    okpu_error err;
    okpu_model *m;
    size_t n = build(&b), i;
    uint8_t in[32], expect[32];
    const uint8_t *out = NULL;
    okpu_tensor t;

    /* 1. it loads and runs: upload -> KPU RAM -> download into the k210 data pool -> copy to the output */
    m = load(&b, n, &err);
    CHECK(m != NULL, "load: %s", err.message);
    if (m) {
        for (i = 0; i < 32; i++)
            in[i] = (uint8_t)(i * 7 + 3), expect[i] = in[i];
        CHECK(okpu_model_version(m) == 5, "version %d", okpu_model_version(m));
        CHECK(okpu_model_layer_count(m) == 3, "layers %d", okpu_model_layer_count(m));
        CHECK(okpu_model_set_input(m, 0, in, 32, &err) == OKPU_OK, "set_input: %s", err.message);
        CHECK(okpu_model_run(m, 0, &err) == OKPU_OK, "run: %s", err.message);
        CHECK(okpu_model_output(m, 0, &t, &out, &err) == OKPU_OK && out && t.bytes == 32, "output: %s",
              err.message);
        if (out)
            CHECK(memcmp(out, expect, 32) == 0, "output differs from the input passed through KPU RAM");
        /* the map sits in KPU RAM from row 2 in the KPU layout (W 4: 4 channels share a row at a 16-byte pitch) */
        CHECK(okpu_model_kpu_ram(m)[128 + 16 + 64 + 1] == in[16 + 4 + 1], "KPU RAM layout"); /* c 1, y 1, x 1 */
        okpu_model_free(m);
    }

    /* 2. targeted refusals */
    c = b;
    set_u32(&c, 8, 0);
    m = load(&c, n, &err);
    CHECK(!m && err.code == OKPU_ERR_KMODEL_VERSION && strstr(err.message, "pre-release / development-build v5") &&
              strstr(err.message, "byte 8"),
          "pre-release: %s", err.message);
    c = b;
    set_u32(&c, 24, 2);
    m = load(&c, n, &err);
    CHECK(!m && err.code == OKPU_ERR_KMODEL_FORMAT && strstr(err.message, "entry module 2") &&
              strstr(err.message, "byte 24"),
          "entry: %s", err.message);
    c = b;
    memcpy(c.d + K210_MOD, "vulkan\0\0", 8);
    m = load(&c, n, &err);
    CHECK(!m && err.code == OKPU_ERR_KMODEL_VERSION && strstr(err.message, "\"vulkan\"") &&
              strstr(err.message, "target='k210'"),
          "type: %s", err.message);
    c = b;
    c.d[K210_TEXT] = 9;
    m = load(&c, n, &err);
    CHECK(!m && err.code == OKPU_ERR_KMODEL_FORMAT && strstr(err.message, "k210_illegal_instruction"),
          "opcode: %s", err.message);
    c = b;
    set_u32(&c, K210_TEXT + 44 + 16 + 8, 33); /* download range 8 + 33: past the 32-byte data pool */
    set_u32(&c, K210_TEXT + 44 + 16 + 4, 8);
    m = load(&c, n, &err);
    CHECK(!m && err.code == OKPU_ERR_KMODEL_FORMAT && strstr(err.message, "ends past"), "range: %s", err.message);
    c = b;
    c.d[SV_TEXT + 7] = 0x00; /* the datatype push becomes a NOP: no release's table decodes it */
    m = load(&c, n, &err);
    CHECK(!m && err.code == OKPU_ERR_KMODEL_VERSION && strstr(err.message, "no nncase 1.x release"),
          "detect: %s", err.message);
    m = load(&b, 20, &err);
    CHECK(!m && strstr(err.message, "32-byte model header"), "short: %s", err.message);

    /* 3. every truncation, every byte corrupted four ways */
    for (i = 0; i < n; i++)
        try_file(&b, i, "truncated", i);
    for (i = 0; i < n; i++) {
        static const uint8_t xors[4] = {0x01, 0x80, 0xFF, 0x10};
        int k;
        for (k = 0; k < 4; k++) {
            c = b;
            c.d[i] ^= xors[k];
            try_file(&c, n, "corrupt", i);
        }
    }
    return ctest_summary();
}

// SPDX-License-Identifier: Apache-2.0
/* C tests for the kmodel v3 reader, the generic driver and the CPU kernels, on hand-built tiny v3 files.
 * Exit status non-zero on failure; last line "N passed, N failed". */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kmodel/model.h"
#include "okpu.h"
#include "ctest.h"



static float rd_f32(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Model 1: FC 3->4 relu (in @0, out @16), FC 4->2 linear (out @32); main 40; output {32, 8}. */
#define IN1 3
#define HID 4
#define OUT1 2
static const float W1[HID][IN1] = {{0.5f, -1.25f, 2.0f}, {1.0f / 3.0f, 0.1f, -0.7f}, {-2.5f, 0.3f, 0.9f},
                                   {0.123456f, 7.5f, -0.001f}};
static const float B1[HID] = {0.1f, -0.2f, 0.3f, 1e-3f};
static const float W2[OUT1][HID] = {{1.1f, -0.9f, 0.77f, 0.01f}, {-3.3f, 2.2f, 0.15f, -0.5f}};
static const float B2[OUT1] = {0.25f, -1.0f / 7.0f};
static const float X1[IN1] = {5.1f, -3.8f, 1.9f};

/* Offsets in model 1 (for corruption tests). */
#define M1_BODY0 52u
#define M1_BODY1 144u

static void build_fc_body(buf *b, uint32_t in, uint32_t out, uint32_t ic, uint32_t oc, uint32_t act, const float *w,
                          const float *bias)
{
    uint32_t i;
    put_u32(b, 0), put_u32(b, in), put_u32(b, out), put_u32(b, ic), put_u32(b, oc), put_u32(b, act);
    for (i = 0; i < ic * oc; i++)
        put_f32(b, w[i]);
    for (i = 0; i < oc; i++)
        put_f32(b, bias[i]);
}

/* Returns the file size; last_pad: declared-but-unwritten bytes of the last body. */
static size_t build_model1(buf *b, uint32_t last_pad)
{
    size_t start0, end0, start1;
    memset(b, 0, sizeof *b);
    put_u32(b, 3), put_u32(b, 1), put_u32(b, 0), put_u32(b, 2), put_u32(b, 32768), put_u32(b, 40), put_u32(b, 1);
    put_u32(b, 32), put_u32(b, 8);             /* output */
    put_u32(b, 18), put_u32(b, 0);             /* layer 0 header, size patched */
    put_u32(b, 18), put_u32(b, 0);             /* layer 1 header */
    start0 = b->n;                             /* 52 */
    build_fc_body(b, 0, 16, IN1, HID, 1, &W1[0][0], B1);
    while (b->n % 8)
        b->d[b->n++] = 0;
    end0 = b->n;
    set_u32(b, 40, (uint32_t)(end0 - start0));
    start1 = b->n; /* 144 */
    build_fc_body(b, 16, 32, HID, OUT1, 0, &W2[0][0], B2);
    set_u32(b, 48, (uint32_t)(b->n - start1 + last_pad));
    return b->n;
}

static void reference_model1(float out[OUT1])
{
    float h[HID];
    int o, i;
    for (o = 0; o < HID; o++) {
        float s = 0.0f;
        for (i = 0; i < IN1; i++)
            s = fmaf(X1[i], W1[o][i], s);
        s = s + B1[o];
        h[o] = s < 0.0f ? 0.0f : s;
    }
    for (o = 0; o < OUT1; o++) {
        float s = 0.0f;
        for (i = 0; i < HID; i++)
            s = fmaf(h[i], W2[o][i], s);
        out[o] = s + B2[o];
    }
}

static okpu_model *load(const buf *b, size_t size, okpu_error *err)
{
    return okpu_model_load(b->d, size, NULL, err);
}

/* Expect a load failure with `code` whose message contains `needle` (may be NULL). */
static void expect_fail(const char *what, const uint8_t *data, size_t size, int code, const char *needle)
{
    okpu_error err;
    okpu_model *m = okpu_model_load(data, size, NULL, &err);
    CHECK(m == NULL, "%s: loaded but should fail", what);
    okpu_model_free(m);
    if (m)
        return;
    CHECK(err.code == code, "%s: code %d (%s), expected %d; message: %s", what, err.code, okpu_status_name(err.code),
          code, err.message);
    if (needle)
        CHECK(strstr(err.message, needle) != NULL, "%s: message lacks \"%s\": %s", what, needle, err.message);
}

static void test_fc_exact(void)
{
    buf b;
    size_t n = build_model1(&b, 0);
    okpu_error err;
    okpu_model *m = load(&b, n, &err);
    okpu_tensor t;
    const uint8_t *d;
    float ref[OUT1];
    int i;
    CHECK(m != NULL, "load: %s", err.message);
    if (!m)
        return;
    CHECK(okpu_model_version(m) == 3, "version");
    CHECK(okpu_model_input_count(m) == 1, "inputs");
    okpu_model_input(m, 0, &t);
    CHECK(t.dtype == OKPU_DTYPE_F32 && t.bytes == 12 && t.w == 3, "input tensor dtype %d bytes %u", t.dtype, t.bytes);
    /* output before run */
    CHECK(okpu_model_output(m, 0, &t, &d, &err) == OKPU_ERR_RUN_MODEL, "output before run");
    CHECK(strstr(err.message, "forward has not run") != NULL, "msg: %s", err.message);
    /* wrong input size */
    CHECK(okpu_model_set_input(m, 0, X1, 8, &err) == OKPU_ERR_SIZE_NOTMATCH, "size mismatch");
    CHECK(strstr(err.message, "expected 12 bytes") != NULL && strstr(err.message, "got 8") != NULL, "msg: %s",
          err.message);
    CHECK(okpu_model_set_input(m, 0, X1, sizeof X1, &err) == OKPU_OK, "set_input: %s", err.message);
    CHECK(okpu_model_run(m, 0, &err) == OKPU_OK, "run: %s", err.message);
    CHECK(okpu_model_output(m, 0, &t, &d, &err) == OKPU_OK, "output: %s", err.message);
    CHECK(t.dtype == OKPU_DTYPE_F32 && t.bytes == 8 && t.w == 2 && t.c == 1 && t.h == 1, "output tensor");
    reference_model1(ref);
    for (i = 0; i < OUT1; i++) {
        float v = rd_f32(d + 4 * i);
        CHECK(memcmp(&v, &ref[i], 4) == 0, "output %d = %.9g, sequential fmaf gives %.9g", i, v, ref[i]);
    }
    CHECK(okpu_model_output(m, 1, &t, &d, &err) == OKPU_ERR_IDX_OUTRANGE, "index out of range");
    /* partial run: output 0 = layer 0's 4 relu values */
    CHECK(okpu_model_set_input(m, 0, X1, sizeof X1, &err) == OKPU_OK, "set_input");
    CHECK(okpu_model_run(m, 1, &err) == OKPU_OK, "partial run: %s", err.message);
    CHECK(okpu_model_output(m, 0, &t, &d, &err) == OKPU_OK && t.w == 4 && t.dtype == OKPU_DTYPE_F32 && t.layer == 0,
          "partial output");
    {
        okpu_layer_info li;
        okpu_memory_info mi;
        CHECK(okpu_model_layer_count(m) == 2, "layer count");
        CHECK(okpu_model_layer_info(m, 1, &li) == OKPU_OK && !strcmp(li.type_name, "FULLY_CONNECTED") &&
                  li.para_size == li.body_size && li.body_offset == M1_BODY1 && li.wi == 0,
              "layer info");
        CHECK(okpu_model_layer_info(m, 2, &li) == OKPU_ERR_IDX_OUTRANGE, "layer info range");
        okpu_model_memory(m, &mi);
        CHECK(mi.model_bytes == n && mi.model_alloc == n + 256 && mi.main_mem == 40 && mi.context_bytes > 0 &&
                  mi.sram_total == mi.model_alloc + mi.main_mem + mi.context_bytes && mi.kpu_rows_used == 0 &&
                  mi.kpu_macs == 0,
              "memory info");
    }
    okpu_model_free(m);
}

static void test_tail_padding(void)
{
    buf b;
    size_t n;
    okpu_error err;
    okpu_model *m;
    n = build_model1(&b, 7);
    m = load(&b, n, &err);
    CHECK(m != NULL, "7 bytes of unwritten tail padding must load: %s", err.message);
    okpu_model_free(m);
    n = build_model1(&b, 4);
    m = load(&b, n, &err);
    CHECK(m != NULL, "4 bytes (as in yolo.kmodel/iris_v3) must load: %s", err.message);
    okpu_model_free(m);
    n = build_model1(&b, 8);
    expect_fail("8 bytes past EOF", b.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 1 (FULLY_CONNECTED)");
    /* the last layer's bias cut off: declared end within 7 bytes but used bytes past EOF */
    n = build_model1(&b, 0);
    set_u32(&b, 48, 64);
    expect_fail("bias past EOF", b.d, n - 4, OKPU_ERR_KMODEL_FORMAT, "layer 1 (FULLY_CONNECTED)");
    expect_fail("bias past EOF (mentions bias)", b.d, n - 4, OKPU_ERR_KMODEL_FORMAT, "bias");
    /* a middle layer may not run past EOF at all: truncate inside body 0 */
    expect_fail("truncated in layer 0", b.d, 100, OKPU_ERR_KMODEL_FORMAT, "layer 0");
    /* truncated right after the tables: layer 0's body starts at EOF */
    expect_fail("no bodies", b.d, M1_BODY0, OKPU_ERR_KMODEL_FORMAT, "layer 0");
}

static void test_headers(void)
{
    buf b;
    size_t n = build_model1(&b, 0);
    static const uint8_t v5[16] = {'L', 'D', 'M', 'K', 5, 0, 0, 0};
    static const uint8_t kmdl9[16] = {'L', 'D', 'M', 'K', 9, 0, 0, 0};
    static const uint8_t enc[16] = {'L', 'D', 'M', 'S', 0};
    static const uint8_t old1[16] = {1, 0, 0, 0};
    static const uint8_t rnd[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
    expect_fail("empty", b.d, 0, OKPU_ERR_KMODEL_VERSION, "empty");
    expect_fail("NULL", NULL, 0, OKPU_ERR_KMODEL_VERSION, NULL);
    expect_fail("2 bytes", b.d, 2, OKPU_ERR_KMODEL_VERSION, "too short");
    expect_fail("truncated v3 header (10)", b.d, 10, OKPU_ERR_KMODEL_FORMAT, "header");
    expect_fail("truncated v3 header (27)", b.d, 27, OKPU_ERR_KMODEL_FORMAT, "28");
    expect_fail("truncated tables", b.d, 40, OKPU_ERR_KMODEL_FORMAT, "past the end of the file");
    expect_fail("v5", v5, sizeof v5, OKPU_ERR_KMODEL_VERSION, "nncase >= 1.0");
    expect_fail("v5 (hint)", v5, sizeof v5, OKPU_ERR_KMODEL_VERSION, "recompile");
    expect_fail("KMDL v9", kmdl9, sizeof kmdl9, OKPU_ERR_KMODEL_VERSION, NULL);
    expect_fail("encrypted", enc, sizeof enc, OKPU_ERR_KMODEL_VERSION, "encrypted");
    expect_fail("old v1", old1, sizeof old1, OKPU_ERR_KMODEL_VERSION, "model-compiler");
    expect_fail("random", rnd, sizeof rnd, OKPU_ERR_KMODEL_VERSION, "DE AD BE EF");
    {
        buf c = b;
        set_u32(&c, 12, 0xFFFFFFFFu); /* layers_length */
        expect_fail("layers_length 0xFFFFFFFF", c.d, n, OKPU_ERR_KMODEL_FORMAT, "4294967295 layers");
        c = b;
        set_u32(&c, 24, 0xFFFFFFFFu); /* output_count */
        expect_fail("output_count 0xFFFFFFFF", c.d, n, OKPU_ERR_KMODEL_FORMAT, NULL);
        c = b;
        set_u32(&c, 12, 0);
        expect_fail("no layers", c.d, n, OKPU_ERR_GET_CONV_LAYER, NULL);
        c = b;
        set_u32(&c, 20, 0xFFFFFFF0u); /* main_mem_usage */
        expect_fail("main_mem_usage 4 GiB", c.d, n, OKPU_ERR_NO_MEM, "main_mem_usage");
        c = b;
        set_u32(&c, 8, 1); /* arch */
        expect_fail("arch 1", c.d, n, OKPU_ERR_KMODEL_FORMAT, "arch");
        c = b;
        set_u32(&c, 28, 36); /* output address: 36 + 8 > 40 */
        expect_fail("output past main", c.d, n, OKPU_ERR_KMODEL_FORMAT, "output");
    }
}

static void test_layer_errors(void)
{
    buf b, c;
    size_t n = build_model1(&b, 0);
    c = b;
    set_u32(&c, M1_BODY0 + 4, 30); /* layer 0 input address: 30 + 12 > 40 */
    expect_fail("FC input past main", c.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 0 (FULLY_CONNECTED)");
    c = b;
    set_u32(&c, M1_BODY1 + 8, 0xFFFFFFFCu); /* layer 1 output address, overflow-prone */
    expect_fail("FC output wraps", c.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 1 (FULLY_CONNECTED)");
    c = b;
    set_u32(&c, M1_BODY1 + 16, 0x40000000u); /* out_channels huge: weights past EOF */
    expect_fail("FC weights past EOF", c.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 1 (FULLY_CONNECTED)");
    c = b;
    set_u32(&c, M1_BODY0 + 20, 7); /* act */
    expect_fail("FC bad act", c.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 0");
    c = b;
    set_u32(&c, 44, 9999); /* layer 1 type */
    expect_fail("unknown type", c.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 1");
    expect_fail("unknown type: the known ids", c.d, n, OKPU_ERR_KMODEL_FORMAT,
                "unknown layer type 9999 in the layer table at byte 44; v3 types are 1-25 and 10240-10243 —");
    set_u32(&c, 44, 26);
    expect_fail("type 26", c.d, n, OKPU_ERR_KMODEL_FORMAT, "unknown layer type 26");
    set_u32(&c, 44, 10244);
    expect_fail("type 10244", c.d, n, OKPU_ERR_KMODEL_FORMAT, "unknown layer type 10244");
    c = b;
    set_u32(&c, 36, 15); /* layer 0 = SOFTMAX: not a valid first layer */
    set_u32(&c, 40, 16 + 76);
    expect_fail("first layer softmax", c.d, n, OKPU_ERR_GET_CONV_LAYER, "layer 0 (SOFTMAX)");
    c = b;
    set_u32(&c, 40, 8); /* body smaller than an FC header */
    expect_fail("body too small", c.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 0");
    c = b;
    set_u32(&c, 40, 0xFFFFFFF0u); /* body_size runs the walk far past EOF */
    expect_fail("body_size huge", c.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 0");
    /* first layer K210_CONV whose layer argument lies past EOF */
    c = b;
    set_u32(&c, 36, 10240);
    set_u32(&c, M1_BODY0 + 8, 100000);
    expect_fail("conv layer_offset past EOF", c.d, n, OKPU_ERR_KMODEL_FORMAT, "layer 0 (K210_CONV)");
    c = b;
    set_u32(&c, 36, 10240);
    set_u32(&c, M1_BODY0 + 8, 0); /* inside the file, outside the body */
    expect_fail("conv layer_offset outside body", c.d, n, OKPU_ERR_KMODEL_FORMAT, "outside the layer's body");
}

/* Model 2: FC 3->4 -> QUANTIZE -> QUANTIZED_ADD(self) -> DEQUANTIZE -> SOFTMAX, plus a second output on the u8 map. */
static void test_cpu_chain(void)
{
    buf b;
    okpu_error err;
    okpu_model *m;
    okpu_tensor t;
    const uint8_t *d;
    size_t hdr;
    uint32_t i;
    /* main: in 0..12, fc out 16..32, q 32..36, qadd 36..40, deq 40..56, softmax 56..72 */
    memset(&b, 0, sizeof b);
    put_u32(&b, 3), put_u32(&b, 1), put_u32(&b, 0), put_u32(&b, 5), put_u32(&b, 32768), put_u32(&b, 72);
    put_u32(&b, 2);
    put_u32(&b, 56), put_u32(&b, 16);
    put_u32(&b, 36), put_u32(&b, 4);
    hdr = b.n;
    for (i = 0; i < 5; i++)
        put_u32(&b, 0), put_u32(&b, 0);
#define BEGIN(k, type) size_t s##k = b.n; set_u32(&b, hdr + 8 * (k), type)
#define END(k) set_u32(&b, hdr + 8 * (k) + 4, (uint32_t)(b.n - s##k))
    {
        BEGIN(0, 18);
        build_fc_body(&b, 0, 16, IN1, HID, 1, &W1[0][0], B1);
        END(0);
    }
    {
        BEGIN(1, 11);
        put_u32(&b, 0), put_u32(&b, 16), put_u32(&b, 32), put_u32(&b, 4), put_f32(&b, 0.05f), put_f32(&b, 0.0f);
        END(1);
    }
    {
        /* out = carry_shift(((a + 0) * 1 + (a + 0) * 1) >> 0 * 1, 1) + 0 = a */
        BEGIN(2, 2);
        put_u32(&b, 0), put_u32(&b, 32), put_u32(&b, 32), put_u32(&b, 36), put_u32(&b, 4);
        put_u32(&b, 0), put_u32(&b, 1), put_u32(&b, 0), put_u32(&b, 0), put_u32(&b, 1), put_u32(&b, 0);
        put_u32(&b, 0), put_u32(&b, 1), put_u32(&b, 1);
        END(2);
    }
    {
        BEGIN(3, 12);
        put_u32(&b, 0), put_u32(&b, 36), put_u32(&b, 40), put_u32(&b, 4), put_f32(&b, 0.05f), put_f32(&b, 0.0f);
        END(3);
    }
    {
        BEGIN(4, 15);
        put_u32(&b, 0), put_u32(&b, 40), put_u32(&b, 56), put_u32(&b, 4);
        END(4);
    }
    m = okpu_model_load(b.d, b.n, NULL, &err);
    CHECK(m != NULL, "chain load: %s", err.message);
    if (!m)
        return;
    CHECK(okpu_model_output_count(m) == 2, "2 outputs");
    CHECK(okpu_model_set_input(m, 0, X1, sizeof X1, &err) == OKPU_OK, "set");
    CHECK(okpu_model_run(m, -1, &err) == OKPU_OK, "run: %s", err.message);
    CHECK(okpu_model_output(m, 1, &t, &d, &err) == OKPU_OK && t.dtype == OKPU_DTYPE_U8 && t.bytes == 4,
          "u8 output dtype from QUANTIZED_ADD");
    {
        float h[HID], e[HID], sum = 0.0f, mx = FLT_MIN;
        uint8_t q[HID];
        int o, k;
        for (o = 0; o < HID; o++) {
            float s = 0.0f;
            for (k = 0; k < IN1; k++)
                s = fmaf(X1[k], W1[o][k], s);
            s += B1[o];
            h[o] = s < 0 ? 0 : s;
            s = roundf((h[o] - 0.0f) * (1.0f / 0.05f));
            q[o] = s < 0 ? 0 : s > 255 ? 255 : (uint8_t)s;
            CHECK(d[o] == q[o], "quantized value %d: %u vs %u", o, d[o], q[o]);
            h[o] = fmaf((float)q[o], 0.05f, 0.0f);
            mx = fmaxf(mx, h[o]);
        }
        for (o = 0; o < HID; o++)
            e[o] = expf(h[o] - mx), sum += e[o];
        CHECK(okpu_model_output(m, 0, &t, &d, &err) == OKPU_OK && t.dtype == OKPU_DTYPE_F32 && t.w == 4, "softmax out");
        for (o = 0; o < HID; o++) {
            float v = rd_f32(d + 4 * o), r = e[o] / sum;
            CHECK(memcmp(&v, &r, 4) == 0, "softmax %d: %.9g vs %.9g", o, v, r);
        }
    }
    /* partial run stopping at the QUANTIZE layer: u8 */
    CHECK(okpu_model_run(m, 2, &err) == OKPU_OK, "partial");
    CHECK(okpu_model_output(m, 0, &t, &d, &err) == OKPU_OK && t.dtype == OKPU_DTYPE_U8 && t.bytes == 4, "partial u8");
    CHECK(okpu_model_output(m, 1, &t, &d, &err) == OKPU_ERR_IDX_OUTRANGE, "partial: output 1 unavailable");
    okpu_model_free(m);
}

static void test_kernels(void)
{
    uint8_t a[4] = {0, 100, 200, 255}, o[4];
    uint8_t fin[16], fout[16];
    okpu_qadd_params p;
    /* carry shift of the SDK: 5 >> 1 -> 3 (2.5 up); -5 >> 1: floor(-2.5) = -3, odd, one further down -> -4;
     * 6 >> 2 -> 2 (1.5 up); -6 >> 2: -3 is odd -> (-3 >> 1) - 1 = -3 */
    CHECK(okpu_round_shift(5, 1, OKPU_ROUND_SDK_CARRY) == 3, "carry 5>>1");
    CHECK(okpu_round_shift(-5, 1, OKPU_ROUND_SDK_CARRY) == -4, "carry -5>>1");
    CHECK(okpu_round_shift(-6, 2, OKPU_ROUND_SDK_CARRY) == -3, "carry -6>>2 = %lld",
          (long long)okpu_round_shift(-6, 2, OKPU_ROUND_SDK_CARRY));
    CHECK(okpu_round_shift(6, 2, OKPU_ROUND_SDK_CARRY) == 2, "carry 6>>2");
    CHECK(okpu_round_shift(-7, 2, OKPU_ROUND_SDK_CARRY) == -2, "carry -7>>2");
    CHECK(okpu_round_shift(5, 1, OKPU_ROUND_HALF_EVEN) == 2 && okpu_round_shift(7, 1, OKPU_ROUND_HALF_EVEN) == 4,
          "half even");
    CHECK(okpu_round_shift(-5, 1, OKPU_ROUND_HALF_EVEN) == -2, "half even neg");
    CHECK(okpu_round_shift(-5, 1, OKPU_ROUND_HALF_UP) == -2 && okpu_round_shift(5, 1, OKPU_ROUND_HALF_UP) == 3,
          "half up");
    CHECK(okpu_asr64(-1, 5) == -1 && okpu_asr64(-32, 5) == -1 && okpu_asr64(-33, 5) == -2, "asr");
    /* quantized add: (a*3 + b*1) >> 2, out*1 carry-shift 0, +1 */
    memset(&p, 0, sizeof p);
    p.a_mul = 3, p.a_shift = 2, p.b_mul = 1, p.b_shift = 2, p.out_mul = 1, p.out_offset = 1;
    okpu_k_quant_add_u8(a, a, o, 4, &p, OKPU_ROUND_SDK_CARRY);
    CHECK(o[0] == 1 && o[1] == 101 && o[2] == 201 && o[3] == 255, "qadd %u %u %u %u", o[0], o[1], o[2], o[3]);
    /* quantize NaN -> 0, huge -> 255, ties away from zero */
    {
        uint8_t qi[12], qo[3];
        float nanv = nanf(""), big = 1e30f, half = 2.5f;
        memcpy(qi, &nanv, 4), memcpy(qi + 4, &big, 4), memcpy(qi + 8, &half, 4);
        okpu_k_quantize(qi, qo, 3, 1.0f, 0.0f);
        CHECK(qo[0] == 0 && qo[1] == 255 && qo[2] == 3, "quantize %u %u %u", qo[0], qo[1], qo[2]);
    }
    /* softmax of all-negative values: max starts at FLT_MIN */
    {
        uint8_t si[8], so[8];
        float x0 = -1.0f, x1 = -2.0f, e0 = expf(x0 - FLT_MIN), e1 = expf(x1 - FLT_MIN), s = e0 + e1, r0 = e0 / s;
        float v;
        memcpy(si, &x0, 4), memcpy(si + 4, &x1, 4);
        okpu_k_softmax_f32(si, so, 2);
        v = rd_f32(so);
        CHECK(memcmp(&v, &r0, 4) == 0, "softmax FLT_MIN");
    }
    /* flatten u8 CHW (w2 h1 c2) -> HWC */
    {
        uint8_t in[4] = {1, 2, 3, 4}, out[4];
        okpu_k_flatten(in, out, 2, 1, 2, 1);
        CHECK(out[0] == 1 && out[1] == 3 && out[2] == 2 && out[3] == 4, "flatten");
    }
    /* resize nearest 2x2 -> 4x3 */
    {
        uint8_t in[4] = {1, 2, 3, 4}, out[12];
        okpu_k_resize_nearest(in, out, 2, 2, 1, 4, 3, 1);
        CHECK(out[0] == 1 && out[1] == 1 && out[2] == 2 && out[3] == 2 && out[4] == 1 && out[8] == 3 && out[11] == 4,
              "resize");
    }
    /* max pool u8 2x2 stride 2 over 3x3, taps past the end skipped, max from 0 */
    {
        uint8_t in[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, out[4];
        okpu_pool2d_params pp = {3, 3, 1, 2, 2, 1, 2, 2, 2, 2, 0, 0};
        okpu_k_max_pool_u8(in, out, &pp);
        CHECK(out[0] == 5 && out[1] == 6 && out[2] == 8 && out[3] == 9, "maxpool %u %u %u %u", out[0], out[1], out[2],
              out[3]);
        okpu_k_avg_pool_u8(in, out, &pp);
        CHECK(out[0] == 3 && out[1] == 4 && out[2] == 7 && out[3] == 9, "avgpool %u %u %u %u", out[0], out[1], out[2],
              out[3]);
    }
    /* add/remove padding: channel 5 -> group 1, slot 1 */
    memset(fin, 0, sizeof fin);
    {
        static uint8_t ram[64 * 8];
        uint8_t ch[6] = {10, 11, 12, 13, 14, 15}, back[6];
        memset(ram, 0, sizeof ram);
        okpu_k_add_padding(ch, ram, 6);
        CHECK(ram[0] == 10 && ram[16] == 11 && ram[48] == 13 && ram[256] == 14 && ram[272] == 15, "add padding");
        CHECK(okpu_k_add_padding_rows(6) == 8, "rows");
        {
            uint8_t dense[6 * 16];
            int k;
            for (k = 0; k < 6 * 16; k++)
                dense[k] = (uint8_t)(k % 16 == 0 ? 10 + k / 16 : 0);
            okpu_k_remove_padding(dense, back, 6);
            CHECK(back[0] == 10 && back[5] == 15, "remove padding");
        }
    }
    (void)fout;
}

static int shape_is(const okpu_tensor *t, okpu_dtype dt, uint32_t c, uint32_t h, uint32_t w)
{
    return t->dtype == dt && t->n == 1 && t->c == c && t->h == h && t->w == w &&
           t->bytes == c * h * w * (dt == OKPU_DTYPE_F32 ? 4u : 1u);
}

/* Issue 13: what a CPU layer writes keeps the w x h x c its body carries (a max-pool's output was a flat 1 x 1 x 8
 * vector). Model 3: FC 3 -> 24 (the bias, as a 4x3x2 planar map) -> MAX_POOL2D 2x2/2 -> 2x2x2 -> QUANTIZE (the pool's
 * shape) -> QUANTIZED_RESIZE 3x1 -> QUANTIZED_GLOBAL_AVERAGE_POOL2D (2 channels) -> DEQUANTIZE, and a
 * QUANTIZED_TENSORFLOW_FLATTEN of the quantized map (a flat NHWC vector). */
static void test_cpu_output_shapes(void)
{
    buf b;
    okpu_error err;
    okpu_model *m;
    okpu_tensor t;
    okpu_layer_info li;
    const uint8_t *d;
    size_t hdr;
    uint32_t i;
    float w0[24 * IN1], b0[24];
    static const float pooled[8] = {5, 7, 9, 11, 17, 19, 21, 23};
    memset(w0, 0, sizeof w0);
    for (i = 0; i < 24; i++)
        b0[i] = (float)i;
    /* main: in 0..12, fc 16..112, pool 112..144, q 144..152, resize 152..158, gpool 160..162, deq 164..172,
     * flatten 176..184 */
    memset(&b, 0, sizeof b);
    put_u32(&b, 3), put_u32(&b, 1), put_u32(&b, 0), put_u32(&b, 7), put_u32(&b, 32768), put_u32(&b, 184);
    put_u32(&b, 1);
    put_u32(&b, 164), put_u32(&b, 8);
    hdr = b.n;
    for (i = 0; i < 7; i++)
        put_u32(&b, 0), put_u32(&b, 0);
    {
        BEGIN(0, 18);
        build_fc_body(&b, 0, 16, IN1, 24, 0, w0, b0);
        END(0);
    }
    {
        BEGIN(1, 7); /* in 4x3x2, out 2x2x2, kernel 2x2, stride 2x2, no padding, linear */
        put_u32(&b, 0), put_u32(&b, 16), put_u32(&b, 112), put_u32(&b, 4), put_u32(&b, 3), put_u32(&b, 2);
        put_u32(&b, 2), put_u32(&b, 2), put_u32(&b, 2), put_u32(&b, 2), put_u32(&b, 2), put_u32(&b, 2),
            put_u32(&b, 2);
        put_u32(&b, 0), put_u32(&b, 0), put_u32(&b, 0);
        END(1);
    }
    {
        BEGIN(2, 11);
        put_u32(&b, 0), put_u32(&b, 112), put_u32(&b, 144), put_u32(&b, 8), put_f32(&b, 1.0f), put_f32(&b, 0.0f);
        END(2);
    }
    {
        BEGIN(3, 23); /* 2x2x2 -> 3x1x2 */
        put_u32(&b, 0), put_u32(&b, 144), put_u32(&b, 152), put_u32(&b, 2), put_u32(&b, 2), put_u32(&b, 2);
        put_u32(&b, 3), put_u32(&b, 1), put_u32(&b, 0);
        END(3);
    }
    {
        BEGIN(4, 6); /* 2 channels of 3 */
        put_u32(&b, 0), put_u32(&b, 152), put_u32(&b, 160), put_u32(&b, 3), put_u32(&b, 2);
        END(4);
    }
    {
        BEGIN(5, 12);
        put_u32(&b, 0), put_u32(&b, 160), put_u32(&b, 164), put_u32(&b, 2), put_f32(&b, 1.0f), put_f32(&b, 0.0f);
        END(5);
    }
    {
        BEGIN(6, 21); /* the quantized 2x2x2 map at 144, flattened */
        put_u32(&b, 0), put_u32(&b, 144), put_u32(&b, 176), put_u32(&b, 2), put_u32(&b, 2), put_u32(&b, 2);
        END(6);
    }
    m = okpu_model_load(b.d, b.n, NULL, &err);
    CHECK(m != NULL, "shapes model load: %s", err.message);
    if (!m)
        return;
    /* the plan: one typed step per layer, none through the transitional LEGACY step */
    {
        static const okpu_step_kind kinds[7] = {OKPU_STEP_FC_F32,      OKPU_STEP_MAX_POOL_F32,  OKPU_STEP_QUANTIZE,
                                                OKPU_STEP_RESIZE_NEAREST, OKPU_STEP_GLOBAL_AVG_U8,
                                                OKPU_STEP_DEQUANTIZE,  OKPU_STEP_FLATTEN};
        for (i = 0; i < 7; i++)
            CHECK(m->layers[i].step.kind == kinds[i] && m->layers[i].step.args != NULL,
                  "layer %u runs as %s", i, okpu_step_name(m->layers[i].step.kind));
    }
    CHECK(okpu_model_layer_info(m, 1, &li) == OKPU_OK && shape_is(&li.output, OKPU_DTYPE_F32, 2, 2, 2),
          "MAX_POOL2D output %ux%ux%u", li.output.w, li.output.h, li.output.c);
    /* the pool's window and maps as its body gives them (what `openkpu inspect` shows) */
    CHECK(okpu_model_layer_info(m, 1, &li) == OKPU_OK && !li.is_kpu && li.wi == 4 && li.hi == 3 && li.chi == 2 &&
              li.wo == 2 && li.ho == 2 && li.cho == 2 && li.kernel_w == 2 && li.kernel_h == 2 && li.stride_w == 2 &&
              li.stride_h == 2,
          "MAX_POOL2D info: in %ux%ux%u out %ux%ux%u kernel %ux%u stride %ux%u", li.wi, li.hi, li.chi, li.wo, li.ho,
          li.cho, li.kernel_w, li.kernel_h, li.stride_w, li.stride_h);
    /* layers without a window report none */
    CHECK(okpu_model_layer_info(m, 4, &li) == OKPU_OK && !li.kernel_w && !li.kernel_h && !li.stride_w &&
              !li.stride_h && !li.wi && !li.wo,
          "global pool has no window: kernel %ux%u stride %ux%u", li.kernel_w, li.kernel_h, li.stride_w, li.stride_h);
    CHECK(okpu_model_layer_info(m, 2, &li) == OKPU_OK && shape_is(&li.output, OKPU_DTYPE_U8, 2, 2, 2),
          "QUANTIZE after the pool keeps 2x2x2: %ux%ux%u", li.output.w, li.output.h, li.output.c);
    CHECK(okpu_model_layer_info(m, 3, &li) == OKPU_OK && shape_is(&li.output, OKPU_DTYPE_U8, 2, 1, 3),
          "QUANTIZED_RESIZE output 3x1x2: %ux%ux%u", li.output.w, li.output.h, li.output.c);
    CHECK(okpu_model_layer_info(m, 4, &li) == OKPU_OK && shape_is(&li.output, OKPU_DTYPE_U8, 2, 1, 1),
          "global pool output 1x1x2: %ux%ux%u", li.output.w, li.output.h, li.output.c);
    CHECK(okpu_model_layer_info(m, 5, &li) == OKPU_OK && shape_is(&li.output, OKPU_DTYPE_F32, 2, 1, 1),
          "DEQUANTIZE after the global pool 1x1x2: %ux%ux%u", li.output.w, li.output.h, li.output.c);
    CHECK(okpu_model_layer_info(m, 6, &li) == OKPU_OK && shape_is(&li.output, OKPU_DTYPE_U8, 1, 1, 8),
          "flatten output is a flat vector: %ux%ux%u", li.output.w, li.output.h, li.output.c);
    CHECK(okpu_model_layer_info(m, 0, &li) == OKPU_OK && shape_is(&li.output, OKPU_DTYPE_F32, 1, 1, 24),
          "FC output flat: %ux%ux%u", li.output.w, li.output.h, li.output.c);
    /* a run stopped after the pool: its map with its shape and values */
    CHECK(okpu_model_set_input(m, 0, X1, sizeof X1, &err) == OKPU_OK, "set: %s", err.message);
    CHECK(okpu_model_run(m, 2, &err) == OKPU_OK, "run 2: %s", err.message);
    CHECK(okpu_model_output(m, 0, &t, &d, &err) == OKPU_OK && shape_is(&t, OKPU_DTYPE_F32, 2, 2, 2) && t.layer == 1,
          "fmap after MAX_POOL2D: %ux%ux%u, layer %d", t.w, t.h, t.c, t.layer);
    for (i = 0; i < 8; i++)
        CHECK(rd_f32(d + 4 * i) == pooled[i], "pooled %u = %g, expected %g", i, rd_f32(d + 4 * i), pooled[i]);
    CHECK(okpu_model_run(m, 4, &err) == OKPU_OK && okpu_model_output(m, 0, &t, &d, &err) == OKPU_OK &&
              shape_is(&t, OKPU_DTYPE_U8, 2, 1, 3),
          "fmap after QUANTIZED_RESIZE: %ux%ux%u", t.w, t.h, t.c);
    CHECK(d[0] == 5 && d[1] == 5 && d[2] == 7 && d[3] == 17 && d[4] == 17 && d[5] == 19, "resized %u %u %u %u %u %u",
          d[0], d[1], d[2], d[3], d[4], d[5]);
    /* the header's outputs are unchanged: a flat vector of their bytes */
    CHECK(okpu_model_run(m, 0, &err) == OKPU_OK && okpu_model_output(m, 0, &t, &d, &err) == OKPU_OK &&
              shape_is(&t, OKPU_DTYPE_F32, 1, 1, 2),
          "model output %ux%ux%u", t.w, t.h, t.c);
    CHECK(rd_f32(d) == 5.0f && rd_f32(d + 4) == 17.0f, "truncated global averages %g %g", rd_f32(d), rd_f32(d + 4));
    okpu_model_free(m);
}

int main(void)
{
    test_fc_exact();
    test_tail_padding();
    test_headers();
    test_layer_errors();
    test_cpu_chain();
    test_cpu_output_shapes();
    test_kernels();
    return ctest_summary();
}

// SPDX-License-Identifier: Apache-2.0
/* kmodel v4 loader tests: hand-built files (valid, then malformed) through okpu_model_load, checking error codes
 * and that messages name the node. Exits non-zero on failure; last line "N passed, N failed". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "okpu.h"
#include "ctest.h"
#include "kmodel/kmodel_v4.h"
#include "kmodel/model.h"

static void mr(buf *b, uint32_t t, uint32_t dt, uint32_t start, uint32_t size)
{
    put_u32(b, t);
    put_u32(b, dt);
    put_u32(b, start);
    put_u32(b, size);
}

static void pad8(buf *b)
{
    while (b->n % 8)
        b->d[b->n++] = 0;
}

/* A model: input main f32 [1,1,1,4] at 0; node 0 unary(neg) 0->16; node 1 nnil (x*2+1) 16->32;
 * node 2 binary add (32 + const) -> 48; output main f32 48..64. main_mem 64; constants 16 bytes (4 floats). */
typedef struct parts {
    uint32_t main_mem, opcode1, neg_op;
    int nnil_ret;
    uint32_t bin_out_start;
    uint32_t const_size_hdr;
    uint32_t const_start;
} parts;

static size_t node_off[3];

static void build(buf *b, const parts *p)
{
    size_t table, start, i;
    uint32_t sizes[3];
    b->n = 0;
    put_u32(b, 0x4B4D444Cu);
    put_u32(b, 4);
    put_u32(b, 0);
    put_u32(b, 1);
    put_u32(b, p->const_size_hdr);
    put_u32(b, p->main_mem);
    put_u32(b, 3);
    put_u32(b, 1);
    put_u32(b, 1);
    put_u32(b, 0xCCCCCCCCu);
    mr(b, 1, 0, 0, 16);
    put_u32(b, 1);
    put_u32(b, 1);
    put_u32(b, 1);
    put_u32(b, 4);
    mr(b, 1, 0, 48, 16);
    for (i = 0; i < 4; i++)
        put_f32(b, (float)(i + 1) * 0.5f);
    table = b->n;
    b->n += 24; /* node table filled below */
    start = b->n;
    /* node 0: unary */
    node_off[0] = b->n;
    mr(b, 1, 0, 0, 16);
    mr(b, 1, 0, 16, 16);
    put_u32(b, p->neg_op);
    pad8(b);
    sizes[0] = (uint32_t)(b->n - start);
    /* node 1: nnil */
    start = b->n;
    node_off[1] = b->n;
    mr(b, 1, 0, 16, 16);
    mr(b, 1, 0, 32, 16);
    b->d[b->n++] = 0x03; /* lda_0 */
    b->d[b->n++] = 0x06; /* ldc_r4 2.0 */
    put_f32(b, 2.0f);
    b->d[b->n++] = 0x42; /* mul */
    b->d[b->n++] = 0x05; /* ldc_r4_1 */
    b->d[b->n++] = 0x40; /* add */
    if (p->nnil_ret)
        b->d[b->n++] = 0xA0;
    pad8(b);
    sizes[1] = (uint32_t)(b->n - start);
    /* node 2: binary add */
    start = b->n;
    node_off[2] = b->n;
    mr(b, 1, 0, 32, 16);
    mr(b, 0, 0, p->const_start, 16);
    mr(b, 1, 0, p->bin_out_start, 16);
    put_u32(b, 0);
    for (i = 0; i < 3; i++) {
        put_u32(b, 1);
        put_u32(b, 1);
        put_u32(b, 1);
        put_u32(b, 4);
    }
    put_f32(b, -3.4e38f);
    put_f32(b, 3.4e38f);
    pad8(b);
    sizes[2] = (uint32_t)(b->n - start);
    {
        size_t save = b->n;
        b->n = table;
        put_u32(b, 0x0E);
        put_u32(b, sizes[0]);
        put_u32(b, p->opcode1);
        put_u32(b, sizes[1]);
        put_u32(b, 0x00);
        put_u32(b, sizes[2]);
        b->n = save;
    }
}

static parts good(void)
{
    parts p;
    p.main_mem = 64;
    p.opcode1 = 0x14;
    p.neg_op = 6;
    p.nnil_ret = 1;
    p.bin_out_start = 48;
    p.const_size_hdr = 16;
    p.const_start = 0;
    return p;
}

static okpu_model *try_load(const buf *b, size_t size, okpu_error *e)
{
    return okpu_model_load(b->d, size, NULL, e);
}

static void expect_fail(const buf *b, size_t size, int code, const char *needle1, const char *needle2,
                        const char *what)
{
    okpu_error e;
    okpu_model *m = try_load(b, size, &e);
    CHECK(m == NULL, "%s: loaded but should fail", what);
    if (m) {
        okpu_model_free(m);
        return;
    }
    CHECK(e.code == code, "%s: code %d, expected %d (%s)", what, e.code, code, e.message);
    CHECK(!needle1 || strstr(e.message, needle1), "%s: message lacks \"%s\": %s", what, needle1, e.message);
    CHECK(!needle2 || strstr(e.message, needle2), "%s: message lacks \"%s\": %s", what, needle2, e.message);
}

static void test_valid_runs(void)
{
    buf b;
    parts p = good();
    okpu_error e;
    okpu_model *m;
    float in[4] = {1.0f, -2.0f, 0.25f, 3.0f}, out[4];
    const uint8_t *data;
    okpu_tensor t;
    okpu_layer_info li;
    int i;
    build(&b, &p);
    m = try_load(&b, b.n, &e);
    CHECK(m != NULL, "valid model failed: %s", e.message);
    if (!m)
        return;
    CHECK(okpu_model_version(m) == 4, "version");
    CHECK(okpu_model_layer_count(m) == 3, "layers");
    okpu_model_layer_info(m, 1, &li);
    CHECK(li.type == 0x14 && strcmp(li.type_name, "nnil_unary_method") == 0, "layer 1 name %s", li.type_name);
    CHECK(okpu_model_set_input(m, 0, in, sizeof in, &e) == 0, "set_input: %s", e.message);
    CHECK(okpu_model_run(m, 0, &e) == 0, "run: %s", e.message);
    CHECK(okpu_model_output(m, 0, &t, &data, &e) == 0, "output: %s", e.message);
    memcpy(out, data, sizeof out);
    for (i = 0; i < 4; i++) {
        float want = -in[i] * 2.0f + 1.0f + (float)(i + 1) * 0.5f;
        CHECK(out[i] == want, "out[%d] = %g, expected %g", i, (double)out[i], (double)want);
    }
    CHECK(t.dtype == OKPU_DTYPE_F32 && t.bytes == 16 && t.layer == 2, "output tensor");
    okpu_model_free(m);

    /* last body may run < 8 bytes past EOF (unwritten padding): drop 4 trailing zero bytes */
    m = try_load(&b, b.n - 4, &e);
    CHECK(m != NULL, "last body 4 bytes past EOF should load: %s", e.message);
    okpu_model_free(m);
}

static void test_malformed(void)
{
    buf b;
    parts p;
    size_t cut;
    p = good();
    build(&b, &p);

    expect_fail(&b, 30, OKPU_ERR_KMODEL_FORMAT, "40-byte", NULL, "header truncation");
    expect_fail(&b, 100, OKPU_ERR_KMODEL_FORMAT, "truncated", NULL, "tables truncated");
    cut = node_off[2] + 20;
    expect_fail(&b, cut, OKPU_ERR_KMODEL_FORMAT, "node 2", "binary", "body truncated");
    cut = node_off[1] + 8;
    expect_fail(&b, cut, OKPU_ERR_KMODEL_FORMAT, "node 1", "nnil_unary_method", "middle body truncated");

    p = good();
    p.opcode1 = 0x15;
    build(&b, &p);
    expect_fail(&b, b.n, OKPU_ERR_NOT_IMPLEMENT, "node 1", "0x15", "unknown opcode");
    p.opcode1 = 0x3001;
    build(&b, &p);
    expect_fail(&b, b.n, OKPU_ERR_NOT_IMPLEMENT, "0x1001-0x1005", "0x2001-0x2002", "unknown opcode ranges");
    expect_fail(&b, b.n, OKPU_ERR_NOT_IMPLEMENT, "beta4's 0x00-0x14, 0x1001", "0x1005 and 0x2001-0x2002.",
                "unknown opcode ranges, built from the op table");

    p = good();
    p.nnil_ret = 0;
    build(&b, &p);
    expect_fail(&b, b.n, OKPU_ERR_KMODEL_FORMAT, "without ret", "node 1", "nnil without ret");

    p = good();
    p.neg_op = 10;
    build(&b, &p);
    expect_fail(&b, b.n, OKPU_ERR_KMODEL_FORMAT, "unary_op", "node 0 (unary", "bad unary op");

    p = good();
    p.bin_out_start = 56; /* 56 + 16 > main_mem 64 */
    build(&b, &p);
    expect_fail(&b, b.n, OKPU_ERR_KMODEL_FORMAT, "outside main memory", "node 2", "range outside main");

    p = good();
    p.const_start = 8; /* binary b reads const bytes 8..24 of a 16-byte blob */
    build(&b, &p);
    expect_fail(&b, b.n, OKPU_ERR_KMODEL_FORMAT, "outside const memory", "input_b", "range outside constants");

    p = good();
    p.main_mem = 40; /* the output range 48..64 lies outside */
    build(&b, &p);
    expect_fail(&b, b.n, OKPU_ERR_KMODEL_FORMAT, "output 0", NULL, "output outside main");

    p = good();
    build(&b, &p);
    b.d[4] = 5; /* version 5 */
    expect_fail(&b, b.n, OKPU_ERR_KMODEL_VERSION, "nncase >= 1.0", NULL, "v5");
}

/* Bit-flip fuzz: every single-byte corruption of the header/table/bodies must load cleanly or fail with a code,
 * never crash (ASan/UBSan build); a loaded one must run. */
static void test_byte_corruptions(void)
{
    buf b, c;
    parts p = good();
    size_t i;
    int loaded = 0, refused = 0;
    static const uint8_t vals[] = {0x00, 0x01, 0x7F, 0x80, 0xFF, 0x14, 0x40};
    build(&b, &p);
    for (i = 0; i < b.n; i++) {
        size_t k;
        for (k = 0; k < sizeof vals; k++) {
            okpu_error e;
            okpu_model *m;
            c = b;
            c.d[i] = vals[k];
            m = try_load(&c, c.n, &e);
            if (m) {
                float in[4] = {1, 2, 3, 4};
                okpu_tensor t;
                loaded++;
                okpu_model_input(m, 0, &t);
                if (t.bytes == sizeof in)
                    okpu_model_set_input(m, 0, in, sizeof in, &e);
                okpu_model_run(m, 0, &e);
                okpu_model_free(m);
            } else {
                refused++;
                if (e.code < 2001 || e.code > 2015)
                    failed++;
            }
        }
    }
    CHECK(loaded > 0 && refused > 0, "fuzz: %d loaded, %d refused", loaded, refused);
}

/* The op table (kmodel_v4_ops.def): every opcode has its name and its enum constant, nothing else has a name. */
static void test_op_table(void)
{
    static const uint32_t unknown[] = {0x15, 0xFF, 0x1000, 0x1006, 0x2000, 0x2003, 0xFFFFFFFFu};
    size_t i, rows = 0;
#define V4_OP(opcode, id, name, fixed_body, decode)                                                                    \
    rows++;                                                                                                            \
    CHECK(KMODEL_V4_OP_##id == (opcode), "enum %s", #id);                                                             \
    CHECK(okpu_v4_opcode_name(opcode) && strcmp(okpu_v4_opcode_name(opcode), name) == 0, "name of 0x%X",       \
          (unsigned)(opcode));
#include "kmodel/kmodel_v4_ops.def"
#undef V4_OP
    CHECK(rows == 28, "%lu rows in kmodel_v4_ops.def", (unsigned long)rows);
    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECK(okpu_v4_opcode_name(unknown[i]) == NULL, "0x%lX has a name", (unsigned long)unknown[i]);
}

/* The plan: each node is one step with its pointers resolved at load, and running decodes nothing - changing a
 * node's fields in the file after the load does not change what runs (the constants, weights and nnil programs the
 * steps point to stay in the file, which must outlive the model). */
static void test_plan(void)
{
    buf b;
    parts p = good();
    okpu_error e;
    okpu_model *m;
    float in[4] = {1.0f, -2.0f, 0.25f, 3.0f}, out[4];
    const uint8_t *data;
    int i;
    build(&b, &p);
    m = try_load(&b, b.n, &e);
    CHECK(m != NULL, "valid model failed: %s", e.message);
    if (!m)
        return;
    CHECK(m->layers[0].step.kind == OKPU_STEP_V4_UNARY && m->layers[1].step.kind == OKPU_STEP_V4_NNIL &&
              m->layers[2].step.kind == OKPU_STEP_V4_BINARY,
          "step kinds %s, %s, %s", okpu_step_name(m->layers[0].step.kind), okpu_step_name(m->layers[1].step.kind),
          okpu_step_name(m->layers[2].step.kind));
    if (m->layers[0].step.kind == OKPU_STEP_V4_UNARY && m->layers[1].step.kind == OKPU_STEP_V4_NNIL &&
        m->layers[2].step.kind == OKPU_STEP_V4_BINARY) {
        const okpu_v4_unary_args *u = (const okpu_v4_unary_args *)m->layers[0].step.args;
        const okpu_v4_nnil_args *nn = (const okpu_v4_nnil_args *)m->layers[1].step.args;
        const okpu_v4_binary_args *bi = (const okpu_v4_binary_args *)m->layers[2].step.args;
        CHECK(u->in == m->main_mem && u->out == m->main_mem + 16 && u->count == 4 && u->op == 6, "unary args");
        CHECK(nn->program == b.d + node_off[1] + 32 && nn->length == 10 && nn->in == m->main_mem + 16 &&
                  nn->out == m->main_mem + 32 && nn->count == 4,
              "nnil args: program at file byte %ld, %lu bytes", (long)(nn->program - b.d), (unsigned long)nn->length);
        /* constants follow the header (40), the input range and shape (32) and the output range (16) */
        CHECK(bi->a == m->main_mem + 32 && bi->b == b.d + 88 && bi->out == m->main_mem + 48 && bi->op == 0 &&
                  bi->so[3] == 4,
              "binary args");
    }
    set_u32(&b, node_off[0] + 32, 0); /* unary neg -> abs */
    CHECK(okpu_model_set_input(m, 0, in, sizeof in, &e) == 0, "set_input: %s", e.message);
    CHECK(okpu_model_run(m, 0, &e) == 0, "run: %s", e.message);
    CHECK(okpu_model_output(m, 0, NULL, &data, &e) == 0, "output: %s", e.message);
    memcpy(out, data, sizeof out);
    for (i = 0; i < 4; i++) {
        float want = -in[i] * 2.0f + 1.0f + (float)(i + 1) * 0.5f;
        CHECK(out[i] == want, "after changing the file: out[%d] = %g, expected %g", i, (double)out[i], (double)want);
    }
    okpu_model_free(m);
}

int main(void)
{
    test_op_table();
    test_plan();
    test_valid_runs();
    test_malformed();
    test_byte_corruptions();
    return ctest_summary();
}

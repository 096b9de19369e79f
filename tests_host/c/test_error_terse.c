// SPDX-License-Identifier: Apache-2.0
/* The core built with OKPU_ERROR_TERSE=1 (the Makefile compiles this test's core that way): every failure keeps its
 * code, layer and byte offset, the message is only "layer L, byte O", and valid models still load and run. The
 * expected locations follow from how each file below is built. */
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "okpu.h"
#include "read_file.h"

#if !defined(OKPU_ERROR_TERSE) || !OKPU_ERROR_TERSE
#error "test_error_terse must be built with -DOKPU_ERROR_TERSE=1"
#endif

static void expect(const char *what, const uint8_t *data, size_t size, int code, int layer, long offset,
                   const char *message)
{
    okpu_error err;
    okpu_model *m = okpu_model_load(data, size, NULL, &err);
    CHECK(m == NULL, "%s: loaded", what);
    okpu_model_free(m);
    CHECK(err.code == code, "%s: code %d, expected %d", what, err.code, code);
    CHECK(err.layer == layer, "%s: layer %d, expected %d", what, err.layer, layer);
    CHECK(err.offset == offset, "%s: offset %ld, expected %ld", what, err.offset, offset);
    CHECK(strcmp(err.message, message) == 0, "%s: message \"%s\", expected \"%s\"", what, err.message, message);
}

/* A v3 header (28 bytes) with one output entry and `layers` layer entries of `type`. */
static void v3_header(buf *b, uint32_t arch, uint32_t layers, uint32_t type)
{
    uint32_t i;
    b->n = 0;
    put_u32(b, 3);    /* version */
    put_u32(b, 1);    /* flags: 8-bit */
    put_u32(b, arch); /* arch */
    put_u32(b, layers);
    put_u32(b, 0);    /* max_start_address */
    put_u32(b, 64);   /* main_mem_usage */
    put_u32(b, 1);    /* outputs */
    put_u32(b, 0);    /* output 0: address */
    put_u32(b, 4);    /* size */
    for (i = 0; i < layers; i++) {
        put_u32(b, type);
        put_u32(b, 32); /* body size */
    }
    for (i = 0; i < 32 * layers; i++)
        b->d[b->n++] = 0;
}

int main(void)
{
    static buf b;
    okpu_error err;
    size_t size = 0;
    unsigned char *mnist;

    expect("empty file", (const uint8_t *)"", 0, OKPU_ERR_KMODEL_VERSION, -1, 0, "byte 0");
    memcpy(b.d, "LDMK\x09\x00\x00\x00", 8);
    expect("LDMK version 9", b.d, 8, OKPU_ERR_KMODEL_VERSION, -1, 4, "byte 4");
    v3_header(&b, 1, 1, 1);
    expect("v3 arch 1", b.d, b.n, OKPU_ERR_KMODEL_FORMAT, -1, 8, "byte 8");
    v3_header(&b, 0, 1, 999);
    expect("v3 unknown layer type", b.d, b.n, OKPU_ERR_KMODEL_FORMAT, 0, 28 + 8, "layer 0, byte 36");
    v3_header(&b, 0, 1, 1);
    expect("v3 truncated header", b.d, 20, OKPU_ERR_KMODEL_FORMAT, -1, 20, "byte 20");

    /* A real model still loads and runs; an input of the wrong size is refused with no location. */
    mnist = read_file("../shared/testdata/mnist_v3_maixpy/mnist.kmodel", &size);
    if (!mnist) {
        printf("SKIP the MNIST part: ../shared/testdata/mnist_v3_maixpy/mnist.kmodel is absent\n");
    } else {
        okpu_model *m = okpu_model_load(mnist, size, NULL, &err);
        static uint8_t image[28 * 28];
        CHECK(m != NULL, "mnist did not load: %d %s", err.code, err.message);
        if (m) {
            CHECK(okpu_model_set_input(m, 0, image, sizeof image, &err) == OKPU_OK, "set_input: %s", err.message);
            CHECK(okpu_model_run(m, 0, &err) == OKPU_OK, "run: %s", err.message);
            CHECK(okpu_model_set_input(m, 0, image, 3, &err) == OKPU_ERR_SIZE_NOTMATCH, "short input accepted");
            CHECK(err.message[0] == '\0', "message \"%s\" for an error with no location", err.message);
            okpu_model_free(m);
        }
        free(mnist);
    }
    return ctest_summary();
}

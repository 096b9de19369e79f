// SPDX-License-Identifier: Apache-2.0
/* The C tests' real models: finding and reading them (skipped, saying so, when the test data is absent), filling
 * their inputs, loading and running them once (how the backend tests, test_kpu_k210.c and test_kpu_device.c, compare
 * two ways of running the same file). Needs ctest.h (CHECK) included first. */
#ifndef OKPU_TEST_MODEL_RUN_H
#define OKPU_TEST_MODEL_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../c_src/okpu.h"
#include "fill_input.h"
#include "read_file.h"

/* `rel` under the test data (OPENKPU_TESTDATA, else ../shared/testdata), written into out. */
static inline const char *testdata_path(char *out, size_t size, const char *rel)
{
    const char *root = getenv("OPENKPU_TESTDATA");
    snprintf(out, size, "%s/%s", root ? root : "../shared/testdata", rel);
    return out;
}

/* A model file's bytes (the caller frees), or NULL: a required file that cannot be read fails a CHECK, any other is
 * reported skipped. */
static inline uint8_t *read_model(const char *path, size_t *size, int required)
{
    uint8_t *data = read_file(path, size);
    if (!data) {
        CHECK(!required, "%s: cannot read", path);
        printf("skipped (not found, set OPENKPU_TESTDATA or place ../shared/testdata): %s\n", path);
    }
    return data;
}

/* check(path, required) on the bundled digits model (required), then on each of the test data's n files `rel`. */
static inline void on_test_models(void (*check)(const char *path, int required), const char *const *rel, size_t n)
{
    char path[512];
    size_t i;
    check("examples/models/digits.kmodel", 1);
    for (i = 0; i < n; i++)
        check(testdata_path(path, sizeof path, rel[i]), 0);
}

/* Every input of m filled from `seed` (input i from seed + i). */
static inline void set_filled_inputs(okpu_model *m, uint32_t seed, const char *name)
{
    okpu_error err;
    int i;
    for (i = 0; i < okpu_model_input_count(m); i++) {
        okpu_tensor t;
        uint8_t *bytes;
        okpu_model_input(m, i, &t);
        bytes = malloc(t.bytes);
        fill_input(bytes, t.bytes, t.dtype == OKPU_DTYPE_F32, seed + (uint32_t)i);
        CHECK(okpu_model_set_input(m, i, bytes, t.bytes, &err) == OKPU_OK, "%s: set_input: %s", name, err.message);
        free(bytes);
    }
}

/* The model loaded with `opts`, every input filled from `seed`, run once; NULL (with a failed CHECK) on error. */
static inline okpu_model *load_and_run(const uint8_t *data, size_t size, const okpu_options *opts, uint32_t seed,
                                       const char *name)
{
    okpu_error err;
    okpu_model *m = okpu_model_load(data, size, opts, &err);
    CHECK(m != NULL, "%s: load failed: %s", name, err.message);
    if (!m)
        return NULL;
    set_filled_inputs(m, seed, name);
    CHECK(okpu_model_run(m, 0, &err) == OKPU_OK, "%s (%s): run failed: %s", name,
          opts->backend == OKPU_BACKEND_K210 ? "K210 backend" : "emulator", err.message);
    return m;
}

#endif

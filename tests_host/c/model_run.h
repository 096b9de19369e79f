// SPDX-License-Identifier: Apache-2.0
/* Load a model and run it once on deterministic inputs: how the backend tests (test_kpu_k210.c, test_kpu_device.c)
 * compare two ways of running the same file. Needs ctest.h (CHECK) included first. */
#ifndef OKPU_TEST_MODEL_RUN_H
#define OKPU_TEST_MODEL_RUN_H

#include <stdlib.h>
#include <string.h>

#include "../../c_src/okpu.h"
#include "fill_input.h"

/* The model loaded with `opts`, every input filled from `seed`, run once; NULL (with a failed CHECK) on error. */
static okpu_model *load_and_run(const uint8_t *data, size_t size, const okpu_options *opts, uint32_t seed,
                                const char *name)
{
    okpu_error err;
    okpu_model *m = okpu_model_load(data, size, opts, &err);
    int i;
    CHECK(m != NULL, "%s: load failed: %s", name, err.message);
    if (!m)
        return NULL;
    for (i = 0; i < okpu_model_input_count(m); i++) {
        okpu_tensor t;
        uint8_t *bytes;
        okpu_model_input(m, i, &t);
        bytes = malloc(t.bytes);
        fill_input(bytes, t.bytes, t.dtype == OKPU_DTYPE_F32, seed + (uint32_t)i);
        CHECK(okpu_model_set_input(m, i, bytes, t.bytes, &err) == OKPU_OK, "%s: set_input: %s", name, err.message);
        free(bytes);
    }
    CHECK(okpu_model_run(m, 0, &err) == OKPU_OK, "%s (%s): run failed: %s", name,
          opts->backend == OKPU_BACKEND_K210 ? "K210 backend" : "emulator", err.message);
    return m;
}

#endif

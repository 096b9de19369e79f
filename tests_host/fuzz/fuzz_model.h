// SPDX-License-Identifier: Apache-2.0
/* Shared body of fuzz_v3, fuzz_v4 and fuzz_v5: load the input as a model through the tracking allocator, and when it
 * loads, feed every input a fixed pattern, run it (fully, then a partial run), read every output, free it, check
 * leaks. */
#ifndef OKPU_FUZZ_MODEL_H
#define OKPU_FUZZ_MODEL_H

#include <string.h>

#include "fuzz_alloc.h"
#include "fuzz_inputs.h"

/* Work budget for the fuzzer: small models run, larger ones still parse every layer and stop at the budget check
 * (keeps executions fast; the real models are 10^6-10^9). */
#define FZ_MAX_WORK 2000000u

static fz_alloc fz_state;

static void fz_model(const uint8_t *data, size_t size)
{
    okpu_allocator a;
    okpu_options o;
    okpu_error err;
    okpu_model *m;
    int i, n;
    fz_init(&fz_state, &a, data, size);
    okpu_options_default(&o);
    o.allocator = &a;
    o.max_work = FZ_MAX_WORK;
    m = okpu_model_load(data, size, &o, &err);
    if (!m) {
        if (err.code == OKPU_OK || err.message[0] == '\0')
            fz_die("load failed without an error code and message", (size_t)err.code, 0);
        fz_check_leaks(&fz_state);
        return;
    }
    fz_fill_inputs(m);
    if (okpu_model_run(m, 0, &err) == OKPU_OK) {
        n = okpu_model_output_count(m);
        for (i = 0; i < n; i++) {
            okpu_tensor t;
            const uint8_t *p = NULL;
            if (okpu_model_output(m, i, &t, &p, &err) == OKPU_OK && p && t.bytes) {
                volatile uint8_t sink = p[0] ^ p[t.bytes - 1]; /* the whole range must be readable */
                (void)sink;
            }
        }
    }
    if (okpu_model_layer_count(m) > 1 && okpu_model_run(m, 1, &err) == OKPU_OK) {
        okpu_tensor t;
        const uint8_t *p = NULL;
        if (okpu_model_output(m, 0, &t, &p, &err) == OKPU_OK && p && t.bytes) {
            volatile uint8_t sink = p[0] ^ p[t.bytes - 1];
            (void)sink;
        }
    }
    okpu_model_free(m);
    fz_check_leaks(&fz_state);
}

#endif

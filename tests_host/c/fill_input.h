// SPDX-License-Identifier: Apache-2.0
/* Deterministic model inputs for the C tests that run real models (model_run.h, test_workers.c). */
#ifndef OKPU_TEST_FILL_INPUT_H
#define OKPU_TEST_FILL_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Deterministic input bytes (floats stay small and finite). */
static void fill_input(uint8_t *p, size_t n, int is_float, uint32_t seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (uint8_t)(seed >> 24);
    }
    if (is_float)
        for (i = 0; i + 4 <= n; i += 4) {
            float f = (float)(p[i] % 200) / 50.0f - 2.0f;
            memcpy(p + i, &f, 4);
        }
}

#endif

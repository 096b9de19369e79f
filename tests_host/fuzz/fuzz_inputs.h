// SPDX-License-Identifier: Apache-2.0
/* The fuzz targets' model inputs: every input of a loaded model set to one fixed pattern (small finite floats for a
 * float input), so that a run is the same from one execution to the next and on both sides of fuzz_emu_diff. */
#ifndef OKPU_FUZZ_INPUTS_H
#define OKPU_FUZZ_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "okpu.h"

static void fz_fill_inputs(okpu_model *m)
{
    static uint8_t buf[4u << 20];
    int i, n = okpu_model_input_count(m);

    for (i = 0; i < n; i++) {
        okpu_tensor t;
        okpu_error err;
        size_t k;
        if (okpu_model_input(m, i, &t) != OKPU_OK || t.bytes > sizeof buf)
            continue;
        for (k = 0; k < t.bytes; k++)
            buf[k] = (uint8_t)(k * 37u + 11u);
        if (t.dtype == OKPU_DTYPE_F32)
            for (k = 0; k + 4 <= t.bytes; k += 4)
                buf[k + 3] = 0x3F, buf[k + 2] &= 0x7F;
        (void)okpu_model_set_input(m, i, buf, t.bytes, &err);
    }
}

#endif

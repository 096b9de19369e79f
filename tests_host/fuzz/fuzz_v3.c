// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: the kmodel v3 reader and forward. The first 4 bytes are forced to the v3 version so every
 * mutation exercises the v3 reader rather than format detection. */
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    if (size < 4 || size > (8u << 20))
        return 0;
    copy = (uint8_t *)malloc(size);
    memcpy(copy, data, size);
    copy[0] = 3, copy[1] = 0, copy[2] = 0, copy[3] = 0;
    fz_model(copy, size);
    free(copy);
    return 0;
}

// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: the kmodel v4 reader and forward. The first 8 bytes are forced to "LDMK" + version 4. */
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    if (size < 8 || size > (8u << 20))
        return 0;
    copy = (uint8_t *)malloc(size);
    memcpy(copy, data, size);
    memcpy(copy, "LDMK\x04\x00\x00\x00", 8);
    fz_model(copy, size);
    free(copy);
    return 0;
}

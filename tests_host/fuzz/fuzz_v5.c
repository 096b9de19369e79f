// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: the kmodel v5 reader (container, stackvm and k210 modules) and forward. The first 12 bytes are
 * forced to "LDMK", version 5, header_size 32, so that mutations explore the modules rather than the one-line
 * refusal of other versions and of the pre-release layout (test_malformed.py covers those). */
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    if (size < 12 || size > (8u << 20))
        return 0;
    copy = (uint8_t *)malloc(size);
    memcpy(copy, data, size);
    memcpy(copy, "LDMK\x05\x00\x00\x00\x20\x00\x00\x00", 12);
    fz_model(copy, size);
    free(copy);
    return 0;
}

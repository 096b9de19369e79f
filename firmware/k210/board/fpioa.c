// SPDX-License-Identifier: Apache-2.0
// FPIOA: write a pad word (the FPIOA clock must be on: sysctl_enable_fpioa).
#include "mmio.h"
#include "fpioa.h"

void fpioa_set(unsigned io, uint32_t pad_word) {
    if (io < FPIOA_NUM_IO) {
        mmio_write32(FPIOA_BASE + 4u * io, pad_word);
    }
}

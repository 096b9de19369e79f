// SPDX-License-Identifier: Apache-2.0
// PLIC: everything off, then the sources the port wants, each at priority > threshold 0.
#include "mmio.h"
#include "plic.h"

void plic_init(void) {
    for (unsigned w = 0; w <= PLIC_NUM_SOURCES / 32u; w++) {
        mmio_write32(PLIC_BASE + PLIC_ENABLE0 + 4u * w, 0);
    }
    for (unsigned s = 1; s <= PLIC_NUM_SOURCES; s++) {
        mmio_write32(PLIC_BASE + PLIC_PRIORITY + 4u * s, 0);
    }
    mmio_write32(PLIC_BASE + PLIC_THRESHOLD0, 0);
    // complete anything the boot ROM left claimed or pending (bounded: a claim of 0 means none)
    for (unsigned i = 0; i <= PLIC_NUM_SOURCES; i++) {
        uint32_t id = plic_claim();
        if (id == 0) {
            break;
        }
        plic_complete(id);
    }
}

void plic_enable(unsigned source, unsigned priority) {
    mmio_write32(PLIC_BASE + PLIC_PRIORITY + 4u * source, priority);
    mmio_set32(PLIC_BASE + PLIC_ENABLE0 + 4u * (source / 32u), 1u << (source % 32u));
}

uint32_t plic_claim(void) {
    return mmio_read32(PLIC_BASE + PLIC_CLAIM0);
}

void plic_complete(uint32_t source) {
    mmio_write32(PLIC_BASE + PLIC_CLAIM0, source);
}

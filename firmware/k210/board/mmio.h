// SPDX-License-Identifier: Apache-2.0
// openkpu K210 board layer: 32-/64-bit register access. Addresses are below 0x80000000, so no sign-extension games.
#ifndef OPENKPU_K210_MMIO_H
#define OPENKPU_K210_MMIO_H

#include <stdint.h>

static inline uint32_t mmio_read32(uintptr_t addr) {
    return *(volatile uint32_t *)addr;
}

static inline void mmio_write32(uintptr_t addr, uint32_t value) {
    *(volatile uint32_t *)addr = value;
}

static inline uint64_t mmio_read64(uintptr_t addr) {
    return *(volatile uint64_t *)addr;
}

static inline void mmio_write64(uintptr_t addr, uint64_t value) {
    *(volatile uint64_t *)addr = value;
}

// Set or clear `mask` in a register, leaving the other bits as they are.
static inline void mmio_set32(uintptr_t addr, uint32_t mask) {
    mmio_write32(addr, mmio_read32(addr) | mask);
}

static inline void mmio_clear32(uintptr_t addr, uint32_t mask) {
    mmio_write32(addr, mmio_read32(addr) & ~mask);
}

// Replace the field `mask` (bits in place) with `value` shifted to `shift`.
static inline void mmio_field32(uintptr_t addr, uint32_t mask, unsigned shift, uint32_t value) {
    mmio_write32(addr, (mmio_read32(addr) & ~mask) | ((value << shift) & mask));
}

#endif

// SPDX-License-Identifier: Apache-2.0
// CLINT: the port's time base. Timer interrupts are not used (sleeps poll mtime); a stray one is silenced.
#include "mmio.h"
#include "clint.h"

static uint32_t mtime_hz;

void clint_init(uint32_t cpu_hz) {
    mtime_hz = cpu_hz / CLINT_CLOCK_DIV;
    mmio_write64(CLINT_BASE + CLINT_MTIMECMP0, UINT64_MAX);
}

uint64_t clint_mtime(void) {
    return mmio_read64(CLINT_BASE + CLINT_MTIME);
}

uint32_t clint_hz(void) {
    return mtime_hz;
}

void clint_timer_irq(void) {
    // MTIP stays pending while mtime >= mtimecmp: push the compare value out of reach
    mmio_write64(CLINT_BASE + CLINT_MTIMECMP0, UINT64_MAX);
}

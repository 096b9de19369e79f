// SPDX-License-Identifier: Apache-2.0
// K210 CLINT (0x02000000): mtime ticks at ACLK / 50 (section 5). There is no usable `time` CSR on this chip.
#ifndef OPENKPU_K210_CLINT_H
#define OPENKPU_K210_CLINT_H

#include <stdint.h>

#define CLINT_BASE 0x02000000u
#define CLINT_MTIMECMP0 0x4000u // hart 0
#define CLINT_MTIME 0xBFF8u
#define CLINT_CLOCK_DIV 50u

void clint_init(uint32_t cpu_hz); // no timer interrupt until asked: mtimecmp = max
uint64_t clint_mtime(void);
uint32_t clint_hz(void);
void clint_timer_irq(void);

#endif

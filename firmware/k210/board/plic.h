// SPDX-License-Identifier: Apache-2.0
// K210 PLIC (0x0C000000), SiFive layout; target 0 = hart 0 M-mode (section 5).
#ifndef OPENKPU_K210_PLIC_H
#define OPENKPU_K210_PLIC_H

#include <stdint.h>

#define PLIC_BASE 0x0C000000u
#define PLIC_PRIORITY 0x000000u // + 4 * source
#define PLIC_ENABLE0 0x002000u // target 0: bit s % 32 of word s / 32
#define PLIC_THRESHOLD0 0x200000u // target 0
#define PLIC_CLAIM0 0x200004u // read: claim; write the id back: complete
#define PLIC_NUM_SOURCES 65u

void plic_init(void);
void plic_enable(unsigned source, unsigned priority);
uint32_t plic_claim(void);
void plic_complete(uint32_t source);

#endif

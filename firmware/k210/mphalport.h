// SPDX-License-Identifier: Apache-2.0
// openkpu K210 port HAL: console on UARTHS, ticks from CLINT mtime.
#ifndef OPENKPU_K210_MPHALPORT_H
#define OPENKPU_K210_MPHALPORT_H

#include "shared/runtime/interrupt_char.h"

mp_uint_t mp_hal_ticks_cpu(void); // CLINT mtime (CPU clock / 50): rdcycle is not deterministic on the virtual board

#endif

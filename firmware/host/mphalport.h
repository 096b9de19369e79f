// SPDX-License-Identifier: Apache-2.0
/* openkpu port HAL: console on stdin/stdout (host tty or QEMU semihosting), millisecond ticks. */
#ifndef OPENKPU_MPHALPORT_H
#define OPENKPU_MPHALPORT_H

#include "shared/runtime/interrupt_char.h"

static inline mp_uint_t mp_hal_ticks_cpu(void) {
    return 0;
}

#endif

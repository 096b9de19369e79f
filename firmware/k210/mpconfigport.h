// SPDX-License-Identifier: Apache-2.0
// openkpu K210 port configuration: the host port's (same core features, same float and int behaviour), with a
// board's name, files on the /flash filesystem (littlefs on the SPI flash, behind POSIX calls) and the KPU on the
// chip.
#include "../host/mpconfigport.h"

// These names are expanded where they are used, so redefining them here is enough.
#undef OPENKPU_PORT_NAME
#undef OPENKPU_MCU_NAME
#undef MICROPY_BANNER_MACHINE
#define OPENKPU_PORT_NAME "k210"
#define OPENKPU_MCU_NAME "Kendryte K210"
#define MICROPY_BANNER_MACHINE MICROPY_HW_BOARD_NAME " with " MICROPY_HW_MCU_NAME

// py/reader.c over open/read/close: scripts and modules import from /flash
#define OPENKPU_HAVE_FLASH_FS (1)

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

// MaixPy's time.clock() (modtime_k210.c) in the shared time module (firmware/host/modtime.c)
extern const struct _mp_obj_type_t port_time_clock_type;
#define MICROPY_PY_TIME_EXTRA_GLOBALS { MP_ROM_QSTR(MP_QSTR_clock), MP_ROM_PTR(&port_time_clock_type) },

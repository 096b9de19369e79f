// SPDX-License-Identifier: Apache-2.0
/* Backend selection: the emulator everywhere; the K210's KPU through a port (the board's own in board builds). */
#include "kpu_backend.h"

#include "../core/error.h"

okpu_kpu_backend *okpu_kpu_backend_create(const okpu_options *opts, okpu_error *err)
{
    okpu_backend_kind kind = opts ? opts->backend : OKPU_BACKEND_EMULATOR;

    switch (kind) {
    case OKPU_BACKEND_EMULATOR:
        return okpu_kpu_emu_create(opts, err);
    case OKPU_BACKEND_K210:
        if (opts->k210_port)
            return okpu_kpu_k210_create_on(opts->k210_port, opts, err);
#ifdef OKPU_HAVE_K210_HW
        return okpu_kpu_k210_create(opts, err);
#else
        okpu_fail(err, OKPU_ERR_NOT_IMPLEMENT, -1, -1,
                  "the K210 hardware KPU backend reaches the chip only in board builds (compiled with "
                  "OKPU_HAVE_K210_HW); use the emulator backend on this machine");
        return NULL;
#endif
    }
    okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "unknown KPU backend %d: expected %d (emulator) or %d (K210)", (int)kind,
              (int)OKPU_BACKEND_EMULATOR, (int)OKPU_BACKEND_K210);
    return NULL;
}

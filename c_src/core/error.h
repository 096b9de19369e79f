// SPDX-License-Identifier: Apache-2.0
/* Building error messages: every failure names the code, the layer, the byte offset, what was expected and
 * what was found. */
#ifndef OKPU_CORE_ERROR_H
#define OKPU_CORE_ERROR_H

#include "../okpu.h"

#if defined(__GNUC__)
#define OKPU_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OKPU_PRINTF(f, a)
#endif

/* Fill `err` (may be NULL) and return `code`. layer/offset: -1 when not applicable. */
int okpu_fail(okpu_error *err, int code, int layer, long offset, const char *fmt, ...) OKPU_PRINTF(5, 6);

/* The same with the message "layer L, byte O" only: what terse builds keep. */
int okpu_fail_terse(okpu_error *err, int code, int layer, long offset);

/* Error reporting, as MicroPython's MICROPY_ERROR_REPORTING: a build with OKPU_ERROR_TERSE=1 (small firmware)
 * keeps every failure's code, layer and byte offset but compiles none of the message texts in. Every message of the
 * core goes through okpu_fail or OKPU_MSGF (text formatted into a buffer for a message), so these two macros are
 * the whole switch; the readers' own wrappers do the same (kmodel_v3.c bad, kmodel_v4.c nfail/hfail). The format
 * arguments are not evaluated in terse builds: they never have side effects. */
#if defined(OKPU_ERROR_TERSE) && OKPU_ERROR_TERSE
#define okpu_fail(err, code, layer, offset, ...) okpu_fail_terse((err), (code), (layer), (long)(offset))
#define OKPU_MSGF(buf, size, ...) ((void)((buf)[0] = '\0'))
#else
#define OKPU_MSGF snprintf
#endif

/* Return the status of x from the calling function unless it is OKPU_OK: the readers' and decoders' step. */
#define OKPU_TRY(x)                                                                                                   \
    do {                                                                                                              \
        int okpu_rc_ = (x);                                                                                           \
        if (okpu_rc_ != OKPU_OK)                                                                                      \
            return okpu_rc_;                                                                                          \
    } while (0)

void okpu_error_clear(okpu_error *err);

#endif

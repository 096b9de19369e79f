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

void okpu_error_clear(okpu_error *err);

#endif

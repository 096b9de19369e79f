// SPDX-License-Identifier: Apache-2.0
#include "floats.h"

#include "bytes.h"
#include "error.h"

int okpu_floats_count_bytes(size_t nbytes, long expect, const char *what, size_t *count, okpu_error *err)
{
    if (nbytes % 4 != 0)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "%s: %lu bytes is not a whole number of float32 values", what,
                         (unsigned long)nbytes);
    if (expect >= 0 && nbytes / 4 != (size_t)expect)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "%s has %lu floats, expected %ld", what,
                         (unsigned long)(nbytes / 4), expect);
    *count = nbytes / 4;
    return OKPU_OK;
}

int okpu_floats_check_count(size_t count, long expect, const char *what, okpu_error *err)
{
    if (expect >= 0 && count != (size_t)expect)
        return okpu_fail(err, OKPU_ERR_PARAM, -1, -1, "%s has %lu values, expected %ld", what, (unsigned long)count,
                         expect);
    return OKPU_OK;
}

void okpu_floats_read(const uint8_t *src, size_t count, float *out)
{
    size_t i;
    for (i = 0; i < count; i++)
        out[i] = okpu_rd_f32(src + 4 * i);
}

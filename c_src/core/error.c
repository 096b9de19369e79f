// SPDX-License-Identifier: Apache-2.0
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {
    "ERR_PARAM",       "ERR_KMODEL_VERSION", "ERR_KMODEL_FORMAT", "ERR_DECRYPT",     "ERR_READ_FILE",
    "ERR_NO_MEM",      "ERR_GET_CONV_LAYER", "ERR_RUN_MODEL",     "ERR_MODELS_FULL", "ERR_PERMITION",
    "ERR_IDX_OUTRANGE", "ERR_SIZE_NOTMATCH", "ERR_OUTPUTS_NODONE", "ERR_NOT_IMPLEMENT", "ERR_UNKNOWN",
};

const char *okpu_status_name(int code)
{
    if (code == OKPU_OK)
        return "OK";
    if (code >= OKPU_ERR_PARAM && code <= OKPU_ERR_UNKNOWN)
        return status_names[code - OKPU_ERR_PARAM];
    return "ERR_UNKNOWN";
}

void okpu_error_clear(okpu_error *err)
{
    if (err) {
        err->code = OKPU_OK;
        err->layer = -1;
        err->offset = -1;
        err->message[0] = '\0';
    }
}

/* (okpu_fail): the name in parentheses is not expanded by the terse macro. */
int(okpu_fail)(okpu_error *err, int code, int layer, long offset, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        err->layer = layer;
        err->offset = offset;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

static char *put_long(char *p, char *end, long v)
{
    char digits[24];
    int n = 0;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    if (v < 0 && p < end)
        *p++ = '-';
    do
        digits[n++] = (char)('0' + u % 10u);
    while ((u /= 10u) != 0 && n < (int)sizeof digits);
    while (n > 0 && p < end)
        *p++ = digits[--n];
    return p;
}

static char *put_text(char *p, char *end, const char *s)
{
    while (*s && p < end)
        *p++ = *s++;
    return p;
}

int okpu_fail_terse(okpu_error *err, int code, int layer, long offset)
{
    if (err) {
        char *p = err->message, *end = err->message + sizeof err->message - 1;
        err->code = code;
        err->layer = layer;
        err->offset = offset;
        if (layer >= 0) {
            p = put_text(p, end, "layer ");
            p = put_long(p, end, layer);
        }
        if (offset >= 0) {
            p = put_text(p, end, layer >= 0 ? ", byte " : "byte ");
            p = put_long(p, end, offset);
        }
        *p = '\0';
    }
    return code;
}

size_t okpu_error_format(const okpu_error *e, const char *what, char *buf, size_t size)
{
    int code = (e && e->code != OKPU_OK) ? e->code : OKPU_ERR_UNKNOWN;
    const char *message = (e && e->message[0]) ? e->message : "(no details)";
    int n;
    char empty[1];
    if (!buf || size == 0) { /* measure only: snprintf with size 0 may not take NULL everywhere */
        buf = empty;
        size = sizeof empty;
    }
    if (!what)
        what = "";
    n = snprintf(buf, size, "[MAIXPY]kpu: %s%serror:%d, %s: %.*s", what, what[0] ? " " : "", code,
                 okpu_status_name(code), (int)sizeof e->message, message);
    return n < 0 ? 0 : (size_t)n;
}

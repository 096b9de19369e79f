// SPDX-License-Identifier: Apache-2.0
/* float32 arguments as the bindings take them (yolo2 outputs and anchors, face features): raw little-endian bytes
 * or a sequence of numbers. The object handling stays in each binding; the checks, their wording and the decoding
 * of the bytes are here, once, so the CPython and MicroPython modules cannot drift apart. */
#ifndef OKPU_CORE_FLOATS_H
#define OKPU_CORE_FLOATS_H

#include "../okpu.h"

/* `nbytes` raw bytes as float32 values: whole values only, and exactly `expect` of them when expect >= 0.
 * OKPU_OK and *count, or OKPU_ERR_PARAM with the message naming `what`. */
int okpu_floats_count_bytes(size_t nbytes, long expect, const char *what, size_t *count, okpu_error *err);

/* A sequence of `count` numbers: exactly `expect` of them when expect >= 0 (OKPU_ERR_PARAM otherwise). */
int okpu_floats_check_count(size_t count, long expect, const char *what, okpu_error *err);

/* Decode `count` little-endian float32 values from `src` (any alignment, any host byte order) into `out`. */
void okpu_floats_read(const uint8_t *src, size_t count, float *out);

#endif

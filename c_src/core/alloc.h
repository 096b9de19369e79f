// SPDX-License-Identifier: Apache-2.0
/* Allocation through the model's allocator (MicroPython routes it to its heap; default malloc). */
#ifndef OKPU_CORE_ALLOC_H
#define OKPU_CORE_ALLOC_H

#include "../okpu.h"

void *okpu_alloc(const okpu_allocator *a, size_t size); /* zeroed, NULL on failure */
void okpu_free(const okpu_allocator *a, void *ptr, size_t size);

#endif

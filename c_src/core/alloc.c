// SPDX-License-Identifier: Apache-2.0
#include "alloc.h"

#include <stdlib.h>

void *okpu_alloc(const okpu_allocator *a, size_t size)
{
    if (size == 0)
        size = 1;
    if (a && a->alloc)
        return a->alloc(a->ctx, size);
    return calloc(1, size);
}

void okpu_free(const okpu_allocator *a, void *ptr, size_t size)
{
    if (!ptr)
        return;
    if (a && a->free)
        a->free(a->ctx, ptr, size);
    else
        free(ptr);
}

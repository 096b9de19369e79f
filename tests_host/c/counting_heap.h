// SPDX-License-Identifier: Apache-2.0
/* An allocator for the C tests that counts what the core takes (okpu_options.allocator): blocks and bytes live,
 * calls (a forward pass must make none) and the peak. */
#ifndef OKPU_TEST_COUNTING_HEAP_H
#define OKPU_TEST_COUNTING_HEAP_H

#include <stddef.h>
#include <stdlib.h>

typedef struct counting_heap {
    long live, calls;
    size_t bytes, peak;
} counting_heap;

static void *count_alloc(void *ctx, size_t size)
{
    counting_heap *h = ctx;
    h->live++;
    h->calls++;
    h->bytes += size;
    if (h->bytes > h->peak)
        h->peak = h->bytes;
    return calloc(1, size);
}

static void count_free(void *ctx, void *ptr, size_t size)
{
    counting_heap *h = ctx;
    h->live--;
    h->bytes -= size;
    free(ptr);
}

#endif

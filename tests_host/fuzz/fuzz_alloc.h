// SPDX-License-Identifier: Apache-2.0
/* The fuzz targets' allocator: tracks every block the core takes, checks that each free names a live block with the
 * size it was allocated with, injects allocation failures, and reports leaks. Any violation aborts, which libFuzzer
 * records as a crash with the input that caused it. */
#ifndef OKPU_FUZZ_ALLOC_H
#define OKPU_FUZZ_ALLOC_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "okpu.h"

#define FZ_MAX_BLOCKS 4096

typedef struct fz_block {
    void *p;
    size_t size;
} fz_block;

typedef struct fz_alloc {
    fz_block blocks[FZ_MAX_BLOCKS];
    size_t live;
    unsigned long count; /* allocations attempted */
    unsigned long fail_at; /* 1-based allocation that fails; 0 = none */
    size_t cap;            /* no single block above this (a board has 6 MiB; keeps the fuzzer's RSS bounded) */
} fz_alloc;

static void fz_die(const char *what, size_t a, size_t b)
{
    fprintf(stderr, "fuzz allocator: %s (%zu, %zu)\n", what, a, b);
    abort();
}

static void *fz_alloc_fn(void *ctx, size_t size)
{
    fz_alloc *f = (fz_alloc *)ctx;
    void *p;
    size_t i;
    f->count++;
    if ((f->fail_at && f->count == f->fail_at) || size > f->cap)
        return NULL;
    for (i = 0; i < FZ_MAX_BLOCKS; i++)
        if (!f->blocks[i].p)
            break;
    if (i == FZ_MAX_BLOCKS)
        fz_die("more than FZ_MAX_BLOCKS live blocks", f->live, 0);
    p = calloc(1, size);
    if (!p)
        return NULL;
    f->blocks[i].p = p;
    f->blocks[i].size = size;
    f->live++;
    return p;
}

static void fz_free_fn(void *ctx, void *ptr, size_t size)
{
    fz_alloc *f = (fz_alloc *)ctx;
    size_t i;
    for (i = 0; i < FZ_MAX_BLOCKS; i++)
        if (f->blocks[i].p == ptr) {
            if (f->blocks[i].size != size)
                fz_die("free with a size other than the allocated one", f->blocks[i].size, size);
            free(ptr);
            f->blocks[i].p = NULL;
            f->live--;
            return;
        }
    fz_die("free of a block that is not live", (size_t)(uintptr_t)ptr, size);
}

/* Deterministic per input: a quarter of the inputs fail one of their first 16 allocations. */
static void fz_init(fz_alloc *f, okpu_allocator *a, const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    for (i = 0; i < FZ_MAX_BLOCKS; i++)
        f->blocks[i].p = NULL;
    f->live = 0;
    f->count = 0;
    f->fail_at = (h & 3u) == 0 ? 1u + ((h >> 8) & 15u) : 0u;
    f->cap = 8u * 1024u * 1024u;
    a->alloc = fz_alloc_fn;
    a->free = fz_free_fn;
    a->ctx = f;
}

static void fz_check_leaks(const fz_alloc *f)
{
    if (f->live)
        fz_die("blocks still live after the model was freed (leak)", f->live, 0);
}

#endif

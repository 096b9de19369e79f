// SPDX-License-Identifier: Apache-2.0
/* Shared scaffolding of the C tests: counters, CHECK, the closing summary line, and a small little-endian byte
 * builder for hand-made model files. Each test is its own program, so the statics here are per test. */
#ifndef OKPU_CTEST_H
#define OKPU_CTEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

/* Count a check; on failure print where, the condition and a printf-style explanation. */
#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                              \
        if (cond) {                                                                                                   \
            passed++;                                                                                                 \
        } else {                                                                                                      \
            failed++;                                                                                                 \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                                    \
            printf(__VA_ARGS__);                                                                                      \
            printf("\n");                                                                                             \
        }                                                                                                             \
    } while (0)

/* The closing line test runners read, and the exit status. */
static inline int ctest_summary(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

typedef struct buf {
    uint8_t d[4096];
    size_t n;
} buf;

static inline void put_u32(buf *b, uint32_t v)
{
    b->d[b->n++] = (uint8_t)v;
    b->d[b->n++] = (uint8_t)(v >> 8);
    b->d[b->n++] = (uint8_t)(v >> 16);
    b->d[b->n++] = (uint8_t)(v >> 24);
}

static inline void put_f32(buf *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(b, u);
}

static inline void set_u32(buf *b, size_t at, uint32_t v)
{
    b->d[at] = (uint8_t)v;
    b->d[at + 1] = (uint8_t)(v >> 8);
    b->d[at + 2] = (uint8_t)(v >> 16);
    b->d[at + 3] = (uint8_t)(v >> 24);
}

#endif

// SPDX-License-Identifier: Apache-2.0
/* Whole-file reader shared by the C test tools (okpu_run, test_kpu_k210, the fuzz replay driver). Reads until EOF
 * instead of seeking, so pipes and devices work too. Returns NULL if the file cannot be opened or memory runs out; an
 * empty file gives a 1-byte buffer and *size 0. The caller frees. */
#ifndef OKPU_TEST_READ_FILE_H
#define OKPU_TEST_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

static inline unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *contents = NULL;
    size_t cap = 0, n = 0;
    if (!f)
        return NULL;
    for (;;) {
        size_t r;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            unsigned char *grown = (unsigned char *)realloc(contents, ncap);
            if (!grown) {
                free(contents);
                fclose(f);
                return NULL;
            }
            contents = grown;
            cap = ncap;
        }
        r = fread(contents + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    *size = n;
    if (!contents)
        contents = (unsigned char *)malloc(1);
    return contents;
}

#endif

// SPDX-License-Identifier: Apache-2.0
/* A fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput once on each file named on the command line, so a
 * target can be replayed under a sanitizer libFuzzer does not combine with: built with -fsanitize=fuzzer,thread,
 * fuzz_emu_diff's workers reported races on the coverage counters (globals beside __TMC_END__) that every thread
 * writes. A file that cannot be read is skipped (a running fuzzer may remove corpus entries it has reduced). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../c/read_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int i, ran = 0;

    for (i = 1; i < argc; i++) {
        size_t n;
        unsigned char *buf = read_file(argv[i], &n);
        if (!buf)
            continue;
        LLVMFuzzerTestOneInput(buf, n);
        ran++;
        free(buf);
    }
    printf("replayed %d of %d files\n", ran, argc - 1);
    return 0;
}

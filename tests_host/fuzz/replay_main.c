// SPDX-License-Identifier: Apache-2.0
/* A fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput once on each file named on the command line, so a
 * target can be replayed under a sanitizer libFuzzer does not combine with: built with -fsanitize=fuzzer,thread,
 * fuzz_emu_diff's workers reported races on the coverage counters (globals beside __TMC_END__) that every thread
 * writes. A file that cannot be read is skipped (a running fuzzer may remove corpus entries it has reduced). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int i, ran = 0;

    for (i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        long n;
        uint8_t *buf;
        if (!f)
            continue;
        if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
            !(buf = malloc(n ? (size_t)n : 1u))) {
            fclose(f);
            continue;
        }
        if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
            LLVMFuzzerTestOneInput(buf, (size_t)n);
            ran++;
        }
        free(buf);
        fclose(f);
    }
    printf("replayed %d of %d files\n", ran, argc - 1);
    return 0;
}

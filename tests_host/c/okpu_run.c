// SPDX-License-Identifier: Apache-2.0
/* okpu_run: load a kmodel, run it, print its outputs. Used by the malformed-input tests under sanitizers and by
 * humans.
 *
 *   okpu_run MODEL [--input FILE | --zeros] [--layers N] [--info]
 *
 * On a load or run failure prints `error <code> <name>: <message>` and exits 2. Otherwise prints, per output,
 * `output <i> dtype=<f32|u8> shape=<n>x<c>x<h>x<w> bytes=<n>` and the values on one line (floats with %.6f).
 * --input FILE: the raw bytes of input 0 (planar u8 image, or little-endian float32 vector); default all zeros.
 * --info: also print one line per layer (netinfo fields) and the memory figures. Usage errors exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "okpu.h"
#include "read_file.h"

static float rd_f32(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int fail(const okpu_error *e)
{
    printf("error %d %s: %s\n", e->code, okpu_status_name(e->code), e->message);
    return 2;
}

static void print_info(const okpu_model *m)
{
    int i, n = okpu_model_layer_count(m);
    okpu_memory_info mi;
    for (i = 0; i < n; i++) {
        okpu_layer_info li;
        okpu_model_layer_info(m, i, &li);
        printf("layer %d %s type=%lu body=%lu+%lu", li.index, li.type_name, (unsigned long)li.type,
               (unsigned long)li.body_offset, (unsigned long)li.body_size);
        if (li.is_kpu)
            printf(" in=%lux%lux%lu out=%lux%lux%lu dw=%d k=%d pool=%d macs=%llu", (unsigned long)li.wi,
                   (unsigned long)li.hi, (unsigned long)li.chi, (unsigned long)li.wo, (unsigned long)li.ho,
                   (unsigned long)li.cho, li.depthwise, li.kernel_type, li.pool_type, (unsigned long long)li.macs);
        printf(" para_size=%lu output=%s:%lux%lux%lux%lu\n", (unsigned long)li.para_size,
               li.output.dtype == OKPU_DTYPE_F32 ? "f32" : "u8", (unsigned long)li.output.n,
               (unsigned long)li.output.c, (unsigned long)li.output.h, (unsigned long)li.output.w);
    }
    okpu_model_memory(m, &mi);
    printf("memory model=%lu alloc=%lu main=%lu context=%lu sram_total=%lu kpu_rows=%lu [%lu,%lu) kpu_macs=%llu\n",
           (unsigned long)mi.model_bytes, (unsigned long)mi.model_alloc, (unsigned long)mi.main_mem,
           (unsigned long)mi.context_bytes, (unsigned long)mi.sram_total, (unsigned long)mi.kpu_rows_used,
           (unsigned long)mi.kpu_row_lo, (unsigned long)mi.kpu_row_hi, (unsigned long long)mi.kpu_macs);
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *input_path = NULL;
    int layers = 0, info = 0, i, rc = 0;
    unsigned char *model = NULL, *input = NULL;
    size_t model_size = 0, input_size = 0;
    okpu_model *m;
    okpu_error err;
    okpu_tensor in;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--input") && i + 1 < argc)
            input_path = argv[++i];
        else if (!strcmp(argv[i], "--zeros"))
            input_path = NULL;
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc)
            layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--info"))
            info = 1;
        else if (argv[i][0] != '-' && !model_path)
            model_path = argv[i];
        else {
            fprintf(stderr, "usage: okpu_run MODEL [--input FILE | --zeros] [--layers N] [--info]\n");
            return 1;
        }
    }
    if (!model_path) {
        fprintf(stderr, "usage: okpu_run MODEL [--input FILE | --zeros] [--layers N] [--info]\n");
        return 1;
    }
    model = read_file(model_path, &model_size);
    if (!model) {
        printf("error %d %s: cannot read model file %s\n", OKPU_ERR_READ_FILE, okpu_status_name(OKPU_ERR_READ_FILE),
               model_path);
        return 2;
    }
    m = okpu_model_load(model, model_size, NULL, &err);
    if (!m) {
        free(model);
        return fail(&err);
    }
    if (info)
        print_info(m);

    if (okpu_model_input(m, 0, &in) == OKPU_OK) {
        if (input_path) {
            input = read_file(input_path, &input_size);
            if (!input) {
                printf("error %d %s: cannot read input file %s\n", OKPU_ERR_READ_FILE,
                       okpu_status_name(OKPU_ERR_READ_FILE), input_path);
                rc = 2;
                goto done;
            }
        } else {
            input_size = in.bytes;
            input = (unsigned char *)calloc(1, input_size ? input_size : 1);
        }
        if (okpu_model_set_input(m, 0, input, input_size, &err) != OKPU_OK) {
            rc = fail(&err);
            goto done;
        }
    }
    if (okpu_model_run(m, layers, &err) != OKPU_OK) {
        rc = fail(&err);
        goto done;
    }
    for (i = 0; i < okpu_model_output_count(m); i++) {
        okpu_tensor t;
        const uint8_t *d = NULL;
        uint32_t k, n;
        if (okpu_model_output(m, i, &t, &d, &err) != OKPU_OK) {
            if (err.code == OKPU_ERR_IDX_OUTRANGE && i > 0)
                break; /* partial run: only output 0 */
            rc = fail(&err);
            goto done;
        }
        printf("output %d dtype=%s shape=%lux%lux%lux%lu bytes=%lu\n", i, t.dtype == OKPU_DTYPE_F32 ? "f32" : "u8",
               (unsigned long)t.n, (unsigned long)t.c, (unsigned long)t.h, (unsigned long)t.w,
               (unsigned long)t.bytes);
        n = t.dtype == OKPU_DTYPE_F32 ? t.bytes / 4u : t.bytes;
        for (k = 0; k < n && d; k++) {
            if (t.dtype == OKPU_DTYPE_F32)
                printf("%s%.6f", k ? ", " : "", rd_f32(d + 4u * k));
            else
                printf("%s%u", k ? ", " : "", d[k]);
        }
        printf("\n");
    }
done:
    okpu_model_free(m);
    free(input);
    free(model);
    return rc;
}

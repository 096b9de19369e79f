// SPDX-License-Identifier: Apache-2.0
/* One regression test per finding of issue 10 (malformed models that corrupted memory or ran forever). Each case runs
 * in a forked child with a time limit, so a crash (ASan), a signal or a hang is a failure of that case, not of the
 * whole program. The cases use only the API that existed before the fixes (plus max_work when this build has it,
 * raised out of the way so each case tests its own check, not the work budget): build this file against an older
 * core to see every case fail. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctest.h"
#include "okpu.h"

typedef struct mb {
    uint8_t *d;
    size_t n, cap;
} mb;

static void w32(mb *b, uint32_t v)
{
    if (b->n + 4 > b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4096;
        b->d = (uint8_t *)realloc(b->d, b->cap);
    }
    b->d[b->n++] = (uint8_t)v, b->d[b->n++] = (uint8_t)(v >> 8);
    b->d[b->n++] = (uint8_t)(v >> 16), b->d[b->n++] = (uint8_t)(v >> 24);
}

static void wn(mb *b, const uint32_t *v, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        w32(b, v[i]);
}

/* v3: FULLY_CONNECTED 1->1 (the first layer MaixPy needs) reading main[0..4), writing main[4..8), then `body` of
 * type `type`; one output = main[out, out + out_size). */
static mb v3_model(uint32_t main_mem, uint32_t type, const uint32_t *body, size_t words, uint32_t out,
                   uint32_t out_size)
{
    static const uint32_t fc[] = {0, 0, 4, 1, 1, 0, 0x3F800000u, 0};
    mb b = {0, 0, 0};
    uint32_t hdr[] = {3, 1, 0, 2, 0, main_mem, 1};
    wn(&b, hdr, 7);
    w32(&b, out), w32(&b, out_size);
    w32(&b, 18), w32(&b, sizeof fc);
    w32(&b, type), w32(&b, (uint32_t)(4 * words));
    wn(&b, fc, 8);
    wn(&b, body, words);
    return b;
}

/* v4: one main-memory input (u8 or f32 per dtype, `in_bytes` at 0, shape [1, in_bytes/es, 1, 1]), one output
 * [out, out+out_size), `n_nodes` copies of the node (opcode, body). */
static mb v4_model(uint32_t main_mem, uint32_t dtype, uint32_t in_bytes, uint32_t out, uint32_t out_size,
                   uint32_t opcode, const uint32_t *body, size_t words, uint32_t n_nodes)
{
    mb b = {0, 0, 0};
    uint32_t i;
    uint32_t hdr[] = {0x4B4D444Cu, 4, 0, 0, 0, main_mem, n_nodes, 1, 1, 0};
    wn(&b, hdr, 10);
    w32(&b, 1), w32(&b, dtype), w32(&b, 0), w32(&b, in_bytes);
    w32(&b, 1), w32(&b, in_bytes / (dtype ? 1u : 4u)), w32(&b, 1), w32(&b, 1);
    w32(&b, 1), w32(&b, dtype), w32(&b, out), w32(&b, out_size);
    for (i = 0; i < n_nodes; i++)
        w32(&b, opcode), w32(&b, (uint32_t)(4 * words));
    for (i = 0; i < n_nodes; i++)
        wn(&b, body, words);
    return b;
}

static uint8_t input_buf[1u << 20];

/* OKPU_FINDINGS_DUMP=DIR writes each case's model (up to 64 KiB) to DIR/<v3|v4>_<line>: the seeds of the committed
 * regression corpus tests_host/fuzz/corpus/fuzz_v3, fuzz_v4. */
static void dump_model(const mb *b, int line)
{
    const char *dir = getenv("OKPU_FINDINGS_DUMP");
    char path[512];
    FILE *f;
    if (!dir || b->n > 65536u)
        return;
    snprintf(path, sizeof path, "%s/%s_finding_%d", dir, b->d[0] == 3 ? "fuzz_v3" : "fuzz_v4", line);
    f = fopen(path, "wb");
    if (f) {
        fwrite(b->d, 1, b->n, f);
        fclose(f);
    }
}
#define DUMP(b) dump_model(&(b), __LINE__)

/* Load (and if it loads, run) in this process. 0 = refused with ERR_KMODEL_FORMAT and a message containing
 * `expect` (may be NULL), 1 = anything else that returns. */
static int load_refused(const mb *b, const char *expect)
{
    okpu_options o;
    okpu_error err;
    okpu_model *m;
    okpu_tensor t;
    okpu_options_default(&o);
#ifdef OKPU_DEFAULT_MAX_WORK
    o.max_work = UINT64_MAX; /* these cases test their own checks, not the work budget */
#endif
    m = okpu_model_load(b->d, b->n, &o, &err);
    if (!m) {
        if (err.code == OKPU_ERR_KMODEL_FORMAT && (!expect || strstr(err.message, expect)))
            return 0;
        printf("    refused, but: %d %s\n", err.code, err.message);
        return 1;
    }
    if (okpu_model_input(m, 0, &t) == OKPU_OK && t.bytes <= sizeof input_buf)
        okpu_model_set_input(m, 0, input_buf, t.bytes, &err);
    okpu_model_run(m, 0, &err);
    printf("    loaded and ran (%s)\n", err.message);
    okpu_model_free(m);
    return 1;
}

/* Run `fn` in a child with a time limit: a signal (ASan abort, segfault) or the alarm is a failure. */
static int in_child(int (*fn)(void), unsigned seconds)
{
    pid_t pid;
    int status;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int rc;
        alarm(seconds);
        rc = fn();
        fflush(stdout);
        _exit(rc);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    if (WIFSIGNALED(status)) {
        printf("    child died of signal %d%s\n", WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (hang)" : "");
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#define CASE(name) static int name(void)

/* v3 pools (types 7-10): 2^31 x 2^31 x 4 wrapped to a 0-byte range; max pool wrote past the main buffer. */
CASE(v3_pool_size_wraps)
{
    static const uint32_t types[] = {8, 10, 7, 9};
    int i, bad = 0;
    for (i = 0; i < 4; i++) {
        uint32_t body[] = {0, 0, 0, 0x80000000u, 0x80000000u, 4, 0x80000000u, 0x80000000u, 4, 1, 1, 1, 1, 0, 0, 0};
        mb b = v3_model(64, types[i], body, types[i] % 2 ? 16 : 15, 8, 4);
        DUMP(b);
        bad |= load_refused(&b, "exceeds");
        free(b.d);
    }
    return bad;
}

/* v3 flatten (20/21): the same wrap, the kernel read and wrote billions of elements. */
CASE(v3_flatten_size_wraps)
{
    uint32_t body[] = {0, 0, 8, 0x80000000u, 0x80000000u, 4};
    mb b = v3_model(64, 21, body, 6, 8, 4);
    DUMP(b);
    int r = load_refused(&b, "exceeds");
    free(b.d);
    return r;
}

/* v3 resize (22/23): the same wrap. */
CASE(v3_resize_size_wraps)
{
    uint32_t body[] = {0, 0, 8, 0x80000000u, 0x80000000u, 4, 0x80000000u, 0x80000000u, 0};
    mb b = v3_model(64, 23, body, 9, 8, 4);
    DUMP(b);
    int r = load_refused(&b, "exceeds");
    free(b.d);
    return r;
}

/* v3 resize whose input and output ranges overlap reached memcpy with overlapping bytes. */
CASE(v3_resize_overlap)
{
    uint32_t body[] = {0, 8, 10, 4, 4, 1, 4, 4, 0};
    mb b = v3_model(64, 23, body, 9, 8, 4);
    DUMP(b);
    int r = load_refused(&b, "overlaps");
    free(b.d);
    return r;
}

/* A 112-byte flatten with 0 channels: every size is 0, the outer loops ran 2^32 x 2^32 times. */
CASE(v3_flatten_zero_channels)
{
    uint32_t body[] = {0, 0, 8, 0xFFFFFFFFu, 0xFFFFFFFFu, 0};
    mb b = v3_model(64, 21, body, 6, 8, 4);
    DUMP(b);
    int r = load_refused(&b, "zero dimension");
    free(b.d);
    return r;
}

/* A pool with out_w 0 and huge out_h / out_c: 0 bytes, 2^64 loop iterations. */
CASE(v3_pool_zero_width)
{
    uint32_t body[] = {0, 0, 8, 1, 1, 1, 0, 0xFFFFFFFFu, 1, 1, 1, 1, 1, 0, 0};
    mb b = v3_model(64, 8, body, 15, 8, 4);
    DUMP(b);
    int r = load_refused(&b, "zero dimension");
    free(b.d);
    return r;
}

/* v4 concat: inner 2^31 x dims 2^24 x outer 2^9 = 2^64 wrapped to 0; okpu_v4k_concat then moved 8 GiB. */
CASE(v4_concat_size_wraps)
{
    uint32_t body[] = {1, 1, 16, 0, 0x80000000u, 0x200, 1, 1, 1, 0, 0, 1u << 24};
    mb b = v4_model(64, 1, 4, 16, 4, 0x01, body, 12, 1);
    DUMP(b);
    int r = load_refused(&b, "exceeds");
    free(b.d);
    return r;
}

/* Found by fuzz_v4 during this work: a concat whose dims are all 0 and whose outer size is 2^30 - an empty output -
 * looped 2^30 times in the kernel (a hang). Refused: inner and outer sizes must be >= 1, and the work counts the
 * loop (outer x inputs). */
CASE(v4_concat_empty_huge_outer)
{
    uint32_t body[] = {1, 1, 16, 0, 0, 1u << 30, 1, 1, 1, 0, 0, 0};
    mb b = v4_model(64, 1, 4, 16, 4, 0x01, body, 12, 1);
    int r;
    DUMP(b);
    r = load_refused(&b, "inner_size 0");
    free(b.d);
    return r;
}

/* v4 quantized_conv2d: oc 2^22 x ic 2^18 x 4096 x 4096 weights = 2^64 wrapped to 0: reads outside the model. */
CASE(v4_qconv_weights_wrap)
{
    /* its bias (oc int32) comes before the weights, so the body carries 16 MiB of bias */
    static uint32_t body[29 + (1u << 22) + 4];
    uint32_t head[] = {1, 1, 0, 1u << 18, 1, 1, 1u << 18, 1u << 22, 1, 1u << 18, 1, 1, 1, 1u << 22,
                       2048, 2047, 2048, 2047, 4096, 4096, 1, 1, 1, 1, 0, 0, 1, 0, 0};
    mb b;
    memcpy(body, head, sizeof head);
    b = v4_model((1u << 18) + (1u << 22), 1, 1u << 18, 1u << 18, 1u << 22, 0x0F, body, sizeof body / 4, 1);
    DUMP(b);
    int r = load_refused(&b, "exceed");
    free(b.d);
    return r;
}

/* v4 cpu_quantized_conv2d: 4096 x 4096 x C 2^18 x oc 2^22 = 2^64, the same. */
CASE(v4_cpu_qconv_weights_wrap)
{
    /* the bias (oc int32) follows the (wrapped, 0-byte) weights: 16 MiB of it */
    static uint32_t body[28 + (1u << 22)];
    uint32_t head[] = {1, 1, 0, 1u << 18, 1, 1, 1u << 18, 1u << 22, 1, 1, 1, 1u << 18, 1u << 22,
                       2048, 2047, 2048, 2047, 4096, 4096, 1, 1, 1, 1, 0, 0, 1, 0, 0};
    mb b;
    memcpy(body, head, sizeof head);
    b = v4_model((1u << 18) + (1u << 22), 1, 1u << 18, 1u << 18, 1u << 22, 0x1004, body, sizeof body / 4, 1);
    DUMP(b);
    int r = load_refused(&b, "exceed");
    free(b.d);
    return r;
}

/* v4 strided_slice: begin 1, end INT32_MAX, stride INT32_MAX over a dimension of 2: the loader counts 1 element in
 * 64 bits but the kernel's int32 `d3 += stride` overflowed (UB) and could wrap to a valid index and write past the
 * output. Must load and run cleanly, selecting element 1. */
CASE(v4_strided_slice_counter)
{
    uint32_t body[] = {1, 1, 0, 2, 1, 1, 4, 1, 1, 1, 1, 2, 0, 0, 0, 1, 1, 1, 1, 0x7FFFFFFFu, 1, 1, 1,
                       0x7FFFFFFFu, 0, 0, 0, 0, 0};
    mb b = v4_model(64, 1, 2, 4, 1, 0x0D, body, 29, 1);
    DUMP(b);
    okpu_error err;
    okpu_model *m = okpu_model_load(b.d, b.n, NULL, &err);
    int r = 1;
    if (m) {
        uint8_t in[2] = {7, 9};
        const uint8_t *o = NULL;
        okpu_tensor t;
        okpu_model_set_input(m, 0, in, 2, &err);
        r = !(okpu_model_run(m, 0, &err) == OKPU_OK && okpu_model_output(m, 0, &t, &o, &err) == OKPU_OK && o[0] == 9);
        okpu_model_free(m);
    } else {
        printf("    refused: %s\n", err.message);
    }
    free(b.d);
    return r;
}

/* v4 conv2d_transpose: iy * stride_h overflowed int32 (UB): 2^20 input rows x stride 4096. Must run cleanly. */
CASE(v4_conv2d_transpose_origin)
{
    static uint32_t body[64];
    size_t k = 0;
    uint32_t ih = 1u << 20, oh = 2; /* 2^20 rows x stride 4096 = 2^32 */
    uint32_t in_bytes = 4u * ih, out_bytes = 4u * oh;
    mb b;
    okpu_error err;
    okpu_model *m;
    int r = 1;
    uint32_t head[] = {1, 0, 0, in_bytes, 1, 0, in_bytes, out_bytes, 1, 1, ih, 1, 1, 1, oh, 1, 1,
                       0, 0, 0, 0, 1, 1, 4096, 1, 1, 1, 0xFF800000u, 0x7F800000u, 0x3F800000u, 0};
    memcpy(body, head, sizeof head);
    k = sizeof head / 4;
    b = v4_model(in_bytes + out_bytes, 0, in_bytes, in_bytes, out_bytes, 0x13, body, k, 1);
    DUMP(b);
    m = okpu_model_load(b.d, b.n, NULL, &err);
    if (m) {
        r = okpu_model_run(m, 0, &err) != OKPU_OK;
        okpu_model_free(m);
    } else {
        printf("    refused: %s\n", err.message);
    }
    free(b.d);
    return r;
}

/* nnil with a 33-byte body: the message said "4294967290 bytes from body offset 40". */
CASE(v4_nnil_message)
{
    uint32_t body[] = {1, 0, 0, 4, 1, 0, 4, 4, 0xFF};
    mb b = v4_model(64, 0, 4, 4, 4, 0x14, body, 9, 1);
    DUMP(b);
    int r;
    b.n -= 3; /* a 33-byte body: the last node's missing padding is tolerated */
    b.d[b.n - 1] = 0xFF;
    {
        okpu_error err;
        okpu_model *m = okpu_model_load(b.d, b.n, NULL, &err);
        r = m != NULL || !strstr(err.message, "(1 bytes from body offset 32)");
        if (r)
            printf("    %s\n", m ? "loaded" : err.message);
        okpu_model_free(m);
    }
    free(b.d);
    return r;
}

/* 65,536 nodes whose flat inputs match no earlier output: the shape search was quadratic (2^31 comparisons at load,
 * again at every forward). Load and one forward must take well under the time limit. */
CASE(v4_many_nodes_load_time)
{
    /* 84-byte bodies (unary + zero padding): within the per-layer record bound, so the shape search is reached */
    uint32_t body[21] = {1, 0, 0, 4, 1, 0, 4, 4, 0};
    mb b = v4_model(64, 0, 4, 4, 4, 0x0E, body, 21, 65536);
    DUMP(b);
    okpu_error err;
    okpu_model *m = okpu_model_load(b.d, b.n, NULL, &err);
    int r = 1;
    if (m) {
        r = okpu_model_run(m, 0, &err) != OKPU_OK;
        okpu_model_free(m);
    } else {
        printf("    refused: %s\n", err.message);
    }
    free(b.d);
    return r;
}

/* 100,000 near-empty 24-byte layers took 27x the file in per-layer records; now refused (<= 4x the file). */
static size_t peak, cur;
static void *count_alloc(void *ctx, size_t n)
{
    (void)ctx;
    cur += n;
    if (cur > peak)
        peak = cur;
    return calloc(1, n);
}
static void count_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    cur -= n;
    free(p);
}
CASE(v3_many_empty_layers_memory)
{
    mb b = {0, 0, 0};
    uint32_t i, n = 100000;
    static const uint32_t fc[] = {0, 0, 4, 1, 1, 0, 0x3F800000u, 0};
    okpu_allocator a = {count_alloc, count_free, NULL};
    okpu_options o;
    okpu_error err;
    okpu_model *m;
    uint32_t hdr[] = {3, 1, 0, 0, 0, 64, 1};
    hdr[3] = n;
    wn(&b, hdr, 7);
    w32(&b, 4), w32(&b, 4);
    w32(&b, 18), w32(&b, sizeof fc);
    for (i = 1; i < n; i++)
        w32(&b, 10242), w32(&b, 16);
    wn(&b, fc, 8);
    for (i = 1; i < n; i++)
        w32(&b, 0), w32(&b, 0), w32(&b, 32), w32(&b, 0);
    okpu_options_default(&o);
    o.allocator = &a;
    m = okpu_model_load(b.d, b.n, &o, &err);
    printf("    %lu-byte file, peak %lu bytes allocated (%.1fx), %s\n", (unsigned long)b.n, (unsigned long)peak,
           (double)peak / (double)b.n, m ? "loaded" : "refused");
    okpu_model_free(m);
    free(b.d);
    return peak > 4u * (size_t)(100000u * 24u) + (2u << 20) + (1u << 20);
}

/* A 200-byte reduce_window2d with a 1000 x 1000 window over a 500 x 500 map: 2.5 x 10^11 taps, hours of work. Needs
 * the work budget, so it is only checked when this build has one (the default limit). */
CASE(v4_reduce_window_work)
{
#ifdef OKPU_DEFAULT_MAX_WORK
    uint32_t body[] = {1, 0, 0, 1000000, 1, 0, 1000000, 1000000, 1, 1, 1, 500, 500, 499, 500, 499, 500,
                       1000, 1000, 1, 1, 1, 1, 0, 0xFF800000u, 0x7F800000u};
    mb b = v4_model(2000000, 0, 1000000, 1000000, 1000000, 0x08, body, 26, 1);
    DUMP(b);
    okpu_error err;
    okpu_model *m = okpu_model_load(b.d, b.n, NULL, &err);
    int r = m != NULL || !strstr(err.message, "work limit");
    if (r)
        printf("    %s\n", m ? "loaded" : err.message);
    okpu_model_free(m);
    free(b.d);
    return r;
#else
    return 1;
#endif
}

typedef struct named_case {
    const char *name;
    int (*fn)(void);
} named_case;

int main(void)
{
    static const named_case cases[] = {
        {"v3 pool 2^31 x 2^31 x 4 size wrap (types 7-10)", v3_pool_size_wraps},
        {"v3 flatten size wrap", v3_flatten_size_wraps},
        {"v3 resize size wrap", v3_resize_size_wraps},
        {"v3 resize input/output overlap", v3_resize_overlap},
        {"v3 flatten with 0 channels (no bound on work)", v3_flatten_zero_channels},
        {"v3 pool with out_w 0 (no bound on work)", v3_pool_zero_width},
        {"v4 concat inner*dim*outer wrap", v4_concat_size_wraps},
        {"v4 concat of empty inputs with outer size 2^30 (fuzz_v4 timeout)", v4_concat_empty_huge_outer},
        {"v4 quantized_conv2d weights wrap", v4_qconv_weights_wrap},
        {"v4 cpu_quantized_conv2d weights wrap", v4_cpu_qconv_weights_wrap},
        {"v4 strided_slice 32-bit loop counter", v4_strided_slice_counter},
        {"v4 conv2d_transpose iy*stride_h overflow", v4_conv2d_transpose_origin},
        {"v4 nnil message for a 33-byte body", v4_nnil_message},
        {"v4 65,536 nodes: load and forward time", v4_many_nodes_load_time},
        {"v3 100,000 empty layers: memory", v3_many_empty_layers_memory},
        {"v4 reduce_window2d 1000x1000 window: work budget", v4_reduce_window_work},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int r;
        printf("-- %s\n", cases[i].name);
        r = in_child(cases[i].fn, cases[i].fn == v4_many_nodes_load_time ? 15u : 60u);
        CHECK(r == 0, "%s", cases[i].name);
    }
    return ctest_summary();
}

// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: the emulator's fast path, split over worker threads, against its plain reference path on one
 * thread, byte for byte, on any model the fuzzer makes. The other targets run the fast path on one thread (their
 * build has no threads), so the splits, pairs and side chains, and every SIMD level but the machine's best, see
 * malformed layer arguments only here.
 *
 * The first byte picks the fast side: bit 0, 2 or 3 threads; bit 1, every layer split one channel a task
 * (OKPU_EMU_SPLIT_ALL, which also leaves no layer on one thread to run beside another: no side chains); bits 2-3, the
 * SIMD level (the machine's best, or AVX2, SSE4.1 or plain C, by the OKPU_EMU_NO_* variables); bits 4-7, the length
 * of the partial run. The rest is a kmodel of any version. Both sides load it with the same options but the thread
 * count: both must refuse it with the same code, or both load it, and then each run must end with the same code on
 * both and, when it succeeds, the same output bytes and the same 2 MiB of KPU RAM. Each side runs the full pass
 * twice (the second starts from the first's KPU RAM, main memory and forwarding state), then a partial run; the
 * first run that fails on both ends the comparison (the two may have stopped at different points of it). Any
 * difference aborts with what differed. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_inputs.h"
#include "okpu.h"

#ifndef OKPU_HAVE_PTHREADS
#error "fuzz_emu_diff compares a split fast path with the reference: build it with -DOKPU_HAVE_PTHREADS -pthread"
#endif

/* As fuzz_model.h's budget: small models run, larger ones stop at the budget check. */
#define DIFF_MAX_WORK 2000000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct side {
    okpu_model *m;
    okpu_error err;
    int code;
} side;

static void diff_die(const char *what, int a, int b)
{
    fprintf(stderr, "fuzz_emu_diff: %s (%d, %d)\n", what, a, b);
    abort();
}

/* The fast side's environment: the emulator reads these variables when it is created, and v5's CPU kernels read
 * OKPU_EMU_NO_SSE41 when they run, so they stay set through the fast side's runs. */
static void fast_env(uint8_t cfg, int on)
{
    static const char *const simd[] = {"OKPU_EMU_NO_AVX512", "OKPU_EMU_NO_AVX2", "OKPU_EMU_NO_SSE41"};
    const unsigned level = (cfg >> 2) & 3u; /* 0 = the best the CPU has, 3 = plain C */
    unsigned i;

    for (i = 0; i < 3u; i++)
        if (on && i < level)
            setenv(simd[i], "1", 1);
        else
            unsetenv(simd[i]);
    if (on && (cfg & 2u))
        setenv("OKPU_EMU_SPLIT_ALL", "1", 1);
    else
        unsetenv("OKPU_EMU_SPLIT_ALL");
}

static void load(side *s, const uint8_t *model, size_t size, int reference, int threads)
{
    okpu_options o;

    okpu_options_default(&o);
    o.max_work = DIFF_MAX_WORK;
    o.threads = threads;
    if (reference)
        setenv("OKPU_EMU_REFERENCE", "1", 1);
    s->m = okpu_model_load(model, size, &o, &s->err);
    unsetenv("OKPU_EMU_REFERENCE");
    s->code = s->m ? OKPU_OK : s->err.code;
}

/* The same outputs, byte for byte, and the same KPU RAM. */
static void compare(const side *ref, const side *fast, const char *when)
{
    int i, n = okpu_model_output_count(ref->m);
    const uint8_t *ram_r = okpu_model_kpu_ram(ref->m), *ram_f = okpu_model_kpu_ram(fast->m);

    if (n != okpu_model_output_count(fast->m))
        diff_die("output counts differ", n, okpu_model_output_count(fast->m));
    for (i = 0; i < n; i++) {
        okpu_tensor tr, tf;
        const uint8_t *pr = NULL, *pf = NULL;
        okpu_error er, ef;
        const int cr = okpu_model_output(ref->m, i, &tr, &pr, &er), cf = okpu_model_output(fast->m, i, &tf, &pf, &ef);
        if (cr != cf)
            diff_die("an output's status differs", cr, cf);
        if (cr != OKPU_OK)
            continue;
        if (tr.bytes != tf.bytes || !pr != !pf)
            diff_die("an output's size differs", (int)tr.bytes, (int)tf.bytes);
        if (pr && memcmp(pr, pf, tr.bytes) != 0) {
            fprintf(stderr, "fuzz_emu_diff: %s: output %d differs\n", when, i);
            abort();
        }
    }
    if (!ram_r != !ram_f || (ram_r && memcmp(ram_r, ram_f, OKPU_KPU_RAM_SIZE) != 0)) {
        fprintf(stderr, "fuzz_emu_diff: %s: KPU RAM differs\n", when);
        abort();
    }
}

/* One run of n_layers (0: all) on each side, the fast one in its environment: the same status on both, and when it
 * is OKPU_OK, the same bytes. Returns that status. */
static int run_both(side *ref, side *fast, uint8_t cfg, int n_layers, const char *when)
{
    int cr, cf;

    cr = okpu_model_run(ref->m, n_layers, &ref->err);
    fast_env(cfg, 1);
    cf = okpu_model_run(fast->m, n_layers, &fast->err);
    fast_env(cfg, 0);
    if (cr != cf) {
        fprintf(stderr, "fuzz_emu_diff: %s: the status differs (reference %d, fast %d)\n", when, cr, cf);
        abort();
    }
    if (cr == OKPU_OK)
        compare(ref, fast, when);
    return cr;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    side ref, fast;
    uint8_t cfg;
    int layers;

    if (size < 9 || size > (8u << 20))
        return 0;
    cfg = data[0];
    data++, size--;

    fast_env(cfg, 0); /* (the reference side's environment: none of the variables, whatever the shell set) */
    load(&ref, data, size, 1, 1);
    fast_env(cfg, 1);
    load(&fast, data, size, 0, 2 + (cfg & 1u));
    fast_env(cfg, 0);
    if (ref.code != fast.code)
        diff_die("the load's status differs (reference, fast)", ref.code, fast.code);
    if (!ref.m)
        return 0;

    fz_fill_inputs(ref.m);
    fz_fill_inputs(fast.m);
    layers = okpu_model_layer_count(ref.m);
    /* (the second pass: a model may write over its own input, and the fast side keeps forwarding state) */
    if (run_both(&ref, &fast, cfg, 0, "a full run") == OKPU_OK &&
        run_both(&ref, &fast, cfg, 0, "a second full run") == OKPU_OK && layers > 1)
        (void)run_both(&ref, &fast, cfg, 1 + (int)((cfg >> 4) % (unsigned)(layers - 1)), /* 1 .. min(layers-1, 16) */
                       "a partial run");
    okpu_model_free(ref.m);
    okpu_model_free(fast.m);
    return 0;
}

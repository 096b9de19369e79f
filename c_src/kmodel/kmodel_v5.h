// SPDX-License-Identifier: Apache-2.0
/* kmodel v5 (nncase 1.x, K210 target): what the container reader (kmodel_v5.c) hands to the module front-ends
 * (kmodel_v5_k210.c, kmodel_v5_stackvm.c). Facts: docs kmodel-v5.md. Everything here was checked against the file by
 * v5_parse: every offset and size below lies inside the file, every pool size is known. */
#ifndef OKPU_KMODEL_KMODEL_V5_H
#define OKPU_KMODEL_KMODEL_V5_H

#include "../core/error.h"
#include "model.h"

#define V5_HEADER_BYTES 32u
#define V5_MODULE_HEADER_BYTES 48u
#define V5_FUNCTION_HEADER_BYTES 32u
#define V5_SECTION_HEADER_BYTES 32u
#define V5_RANGE_BYTES 12u
#define V5_MAX_MODULES 16u
#define V5_MAX_IO 16u

/* memory_range locations */
enum { V5_LOC_INPUT = 0, V5_LOC_OUTPUT = 1, V5_LOC_RDATA = 2, V5_LOC_DATA = 3, V5_LOC_SHARED = 4, V5_LOC_KPU = 64 };

enum { V5_MOD_STACKVM = 1, V5_MOD_K210 = 2 };

typedef struct v5_range {
    uint8_t loc, dt;
    uint16_t shared_module;
    uint32_t start, size;
} v5_range;

typedef struct v5_io {
    v5_range r;
    uint32_t rank;
    uint32_t dims[OKPU_V5_MAX_RANK];
} v5_io;

typedef struct v5_func {
    long off;        /* file offset of the function header */
    uint32_t in_pool, out_pool, ninputs, noutputs, entry, text_size;
    v5_io *io;       /* ninputs then noutputs descriptors */
} v5_func;

typedef struct v5_module {
    int kind;          /* V5_MOD_* */
    char type[17];
    long off;          /* file offset of the module header */
    uint32_t size;
    uint32_t rdata_pool, data_pool, kpu_pool; /* mempool sizes (0 when not declared) */
    uint32_t nfuncs;
    v5_func *funcs;
    long rdata_off, text_off; /* file offsets of the .rdata and .text bodies (-1: no such section) */
    uint32_t rdata_size, text_size;
    uint32_t data_base; /* main-buffer offset of this module's data pool */
    long data_pool_at;  /* file offset of its size (-1: no data mempool) */
} v5_module;

typedef struct v5_file {
    uint32_t alignment, nmodules, entry_module, entry_function;
    v5_module mod[V5_MAX_MODULES];
    uint32_t in_base, out_base; /* main-buffer offsets of the entry function's input and output pools */
    uint32_t main_size;
    long main_largest_at; /* file offset of the largest pool's size (the main-buffer budget message) */
} v5_file;

/* The reader's working state while it decodes (kmodel_v5.c owns it). */
typedef struct v5_cx {
    okpu_model *m;
    okpu_error *err;
    const v5_file *f;
    int emit;   /* 0: count the steps; 1: fill them */
    int nsteps; /* steps counted / filled so far */
    int group;  /* stackvm release group (kmodel_v5_stackvm.c) */
} v5_cx;

/* A place in memory as the front-end tracks it at load: a pool and a byte offset in it. */
enum { V5_POOL_NONE = 0, V5_POOL_IN, V5_POOL_OUT, V5_POOL_RDATA, V5_POOL_DATA, V5_POOL_KPU };
typedef struct v5_addr {
    int pool;
    int module; /* rdata/data: which module's */
    uint64_t off;
} v5_addr;

/* Size of a v5 datatype code (0: not a type this runtime handles). */
uint32_t okpu_v5_dtype_size(uint32_t dt);
const char *okpu_v5_dtype_name(uint32_t dt);
/* Bytes of the pool `a` names, or 0. */
uint64_t okpu_v5_pool_size(const v5_cx *cx, const v5_addr *a);
/* The host pointer of a validated address. */
uint8_t *okpu_v5_ptr(const v5_cx *cx, const v5_addr *a);
/* Refuse with the standard message (code, what, where, expected, found, what to do). */
int okpu_v5_fail(const v5_cx *cx, int code, long where, const char *fmt, ...) OKPU_PRINTF(4, 5);
#if defined(OKPU_ERROR_TERSE) && OKPU_ERROR_TERSE /* no message texts (core/error.h) */
#define okpu_v5_fail(cx, code, where, ...)                                                                            \
    okpu_fail_terse((cx)->err, (code), (cx)->emit ? (cx)->nsteps - 1 : -1, (long)(where))
#endif
/* Take the next step (emit: allocate its arguments and describe it; count pass: NULL and only count). `*args` is
 * NULL in the count pass. */
int okpu_v5_next_step(v5_cx *cx, okpu_step_kind kind, uint32_t type, const char *name, long where, uint32_t bytes,
                 void **args);

extern const okpu_format okpu_format_v5;

int okpu_v5_k210_call(v5_cx *cx, uint32_t module, uint32_t function, const v5_addr *bound, long call_at);
int okpu_v5_stackvm_run(v5_cx *cx, uint32_t module, uint32_t function);
/* Pick the stackvm release group (section 9; okpu_options.v5_release when set): 0 and cx->group set, or an error. */
int okpu_v5_stackvm_detect(v5_cx *cx, uint32_t module);

#endif

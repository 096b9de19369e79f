// SPDX-License-Identifier: Apache-2.0
/*
 * openkpu: the `_kpu` native module for MicroPython.
 *
 * Same API as the CPython binding (python/_kpumodule.c); modules/KPU/KPU.py builds MaixPy's `KPU` API on top of
 * either. This file only translates between MicroPython objects and the portable core (c_src/okpu.h).
 *
 *   _kpu.Model(data, *, conv_offset=0, act_round=0, v3_quant_round=2, v4_quant_round=1, mean_border=0,
 *              max_work=None, nncase=None, threads=0)
 *   act_round: 0 / "half_even" (default), 1 / "half_up", 2 / "sdk_carry", 3 / "nncase1" (nncase 1.x's Simulator);
 *   accepted and ignored on a board build (OKPU_HAVE_K210_HW: the chip rounds), as the other emulator options are.
 *   nncase: kmodel v5's compiler release ("1.9.0", "1.4" ...); None: detected from the file.
 *   threads: accepted for the CPython API; the core of a MicroPython port is built without POSIX threads and runs
 *   one. With MICROPY_PY_THREAD, run() releases the GIL and a call on a model another thread is running raises
 *   RuntimeError.
 *   _kpu.status_name(code), _kpu.error_text(what, code, message)
 *   Records as in CPython (python/_kpumodule.c): LayerInfo, TensorInfo, Output, Box: tuples whose items are also
 *   named attributes, printed as CPython prints its struct sequences; memory() is a dict.
 *   Every error text comes from the core's okpu_error_format, as in the CPython binding.
 *   _kpu.yolo2_decode(data, w, h, ch, anchors, threshold, nms, img_w, img_h), _kpu.face_encode(seq),
 *   _kpu.face_compare(a, b), _kpu.FACE_SCORE_UNDEFINED  (python/_kpu_post.c)
 *
 * Memory: by default the core's allocations go to MicroPython's GC heap (so `gc.mem_free()` shows what a model
 * costs, and nothing leaks when a script is interrupted). Every block handed to the core is also recorded in a
 * table owned by the Model object, so the GC sees it whatever the core does with the pointer (for example an
 * interior, aligned pointer would not keep a GC block alive on its own). Define MICROPY_PY_KPU_SYSTEM_HEAP=1 to
 * use the C library's malloc instead (what MaixPy does: models live in the system heap, outside the GC heap).
 */
#include <stdarg.h>
#include <string.h>

#include "py/runtime.h"
#include "py/obj.h"
#include "py/objstr.h"
#include "py/gc.h"
#include "py/mphal.h"
#include "py/binary.h"
#include "py/objlist.h"
#include "py/objtuple.h"

#include "okpu.h"
#include "kmodel/kmodel_v5_release.h"
#include "core/floats.h"
#include "core/workers.h"
#include "post/face.h"
#include "post/yolo2.h"

#ifndef MICROPY_PY_KPU_SYSTEM_HEAP
#define MICROPY_PY_KPU_SYSTEM_HEAP (0)
#endif

typedef struct _kpu_model_obj_t {
    mp_obj_base_t base;
    okpu_model *model;   /* NULL once freed */
    mp_obj_t data;       /* the buffer object the model points into: kept alive here */
    okpu_allocator allocator;
    void **allocs;       /* every live block given to the core (GC heap mode) */
    size_t n_allocs;
    size_t cap_allocs;
    size_t alloc_bytes;  /* bytes currently given to the core */
    bool finalising;     /* inside __del__: the GC reclaims the blocks itself */
    #if MICROPY_PY_THREAD
    bool running;        /* inside run() with the GIL released */
    #endif
} kpu_model_obj_t;

static const mp_obj_type_t kpu_model_type;

/* ---- allocator: the core's memory on the GC heap ------------------------------------------------------- */

#if !MICROPY_PY_KPU_SYSTEM_HEAP
static void *kpu_heap_alloc(void *ctx, size_t size) {
    kpu_model_obj_t *self = ctx;
    if (self->n_allocs == self->cap_allocs) {
        size_t cap = self->cap_allocs ? self->cap_allocs * 2 : 16;
        void **grown = m_renew_maybe(void *, self->allocs, self->cap_allocs, cap, true);
        if (grown == NULL) {
            return NULL;
        }
        self->allocs = grown;
        self->cap_allocs = cap;
    }
    void *p = m_malloc_maybe(size);
    if (p == NULL) {
        return NULL; /* the core reports ERR_NO_MEM with the size it wanted */
    }
    memset(p, 0, size);
    self->allocs[self->n_allocs++] = p;
    self->alloc_bytes += size;
    return p;
}

static void kpu_heap_free(void *ctx, void *ptr, size_t size) {
    kpu_model_obj_t *self = ctx;
    if (self->finalising || ptr == NULL) {
        /* Called from __del__ during a GC sweep: the heap is locked and these blocks are garbage already. */
        return;
    }
    for (size_t i = 0; i < self->n_allocs; i++) {
        if (self->allocs[i] == ptr) {
            self->allocs[i] = self->allocs[--self->n_allocs];
            self->allocs[self->n_allocs] = NULL;
            self->alloc_bytes -= size;
            m_del(uint8_t, ptr, size);
            return;
        }
    }
}
#endif

/* ---- helpers ---------------------------------------------------------------------------------------------- */

static kpu_model_obj_t *kpu_get_model(mp_obj_t self_in) {
    kpu_model_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (self->model == NULL) {
        mp_raise_ValueError(MP_ERROR_TEXT("model was freed (deinit)"));
    }
    return self;
}

/* The model, not running in another thread: for the calls that read or change what run() works on. */
static kpu_model_obj_t *kpu_get_idle(mp_obj_t self_in) {
    kpu_model_obj_t *self = kpu_get_model(self_in);
    #if MICROPY_PY_THREAD
    if (self->running) {
        mp_raise_msg(&mp_type_RuntimeError, MP_ERROR_TEXT("model is running in another thread"));
    }
    #endif
    return self;
}

static mp_obj_t kpu_typecode(okpu_dtype dtype) {
    return MP_OBJ_NEW_QSTR(dtype == OKPU_DTYPE_F32 ? MP_QSTR_f : MP_QSTR_B);
}

static mp_obj_t kpu_uint(uint32_t v) {
    return mp_obj_new_int_from_uint(v);
}

static mp_obj_t kpu_size(size_t v) {
    return mp_obj_new_int_from_ull((unsigned long long)v);
}

/* The core's text for `err` (okpu_error_format), as a str object. */
static mp_obj_t kpu_error_str(const char *what, const okpu_error *err) {
    vstr_t vstr;
    vstr_init(&vstr, OKPU_ERROR_TEXT_SIZE);
    size_t n = okpu_error_format(err, what, vstr.buf, vstr.alloc);
    vstr.len = n < vstr.alloc ? n : vstr.alloc - 1;
    return mp_obj_new_str_from_vstr(&vstr);
}

/* Raise `type` with the core's text for `err`; OSError gets (code, text) so errno is the MaixPy code. */
static NORETURN void kpu_raise(const mp_obj_type_t *type, const char *what, const okpu_error *err) {
    mp_obj_t text = kpu_error_str(what, err);
    if (type == &mp_type_OSError) {
        mp_obj_t args[2] = {
            MP_OBJ_NEW_SMALL_INT(err->code != OKPU_OK ? err->code : OKPU_ERR_UNKNOWN),
            text,
        };
        nlr_raise(mp_obj_new_exception_args(&mp_type_OSError, 2, args));
    }
    nlr_raise(mp_obj_new_exception_arg1(type, text));
}

/* A binding-side failure: the message formatted here (mp_printf's formats, %q included), the text by the core. */
static NORETURN void kpu_raise_fmt(const mp_obj_type_t *type, const char *what, int code, const char *fmt, ...) {
    okpu_error err;
    memset(&err, 0, sizeof(err));
    err.code = code;
    err.layer = -1;
    err.offset = -1;
    vstr_t vstr;
    vstr_init(&vstr, 96);
    va_list ap;
    va_start(ap, fmt);
    vstr_vprintf(&vstr, fmt, ap);
    va_end(ap);
    size_t n = vstr.len < sizeof(err.message) - 1 ? vstr.len : sizeof(err.message) - 1;
    memcpy(err.message, vstr.buf, n);
    err.message[n] = '\0';
    vstr_clear(&vstr);
    kpu_raise(type, what, &err);
}

static NORETURN void kpu_raise_os(const char *what, const okpu_error *err, int code) {
    okpu_error e = *err;
    e.code = code;
    kpu_raise(&mp_type_OSError, what, &e);
}

static void kpu_check_option(qstr name, mp_int_t value, mp_int_t max) {
    if (value < 0 || value > max) {
        kpu_raise_fmt(&mp_type_ValueError, "load", OKPU_ERR_PARAM, "option %q=%d out of range 0..%d", name,
            (int)value, (int)max);
    }
}

/* act_round: a name or its okpu_round_mode number (the CPython binding takes the same and words the same error). */
static mp_int_t kpu_act_round(mp_obj_t o) {
    static const char *const names[] = {[OKPU_ROUND_HALF_EVEN] = "half_even", [OKPU_ROUND_HALF_UP] = "half_up",
                                        [OKPU_ROUND_SDK_CARRY] = "sdk_carry", [OKPU_ROUND_NNCASE1] = "nncase1"};
    mp_int_t v = -1;
    if (mp_obj_is_str(o)) {
        const char *name = mp_obj_str_get_str(o);
        for (v = 0; v <= OKPU_ROUND_NNCASE1 && strcmp(name, names[v]) != 0; v++) {
        }
        if (v > OKPU_ROUND_NNCASE1) {
            kpu_raise_fmt(&mp_type_ValueError, "load", OKPU_ERR_PARAM, "option act_round='%s' is not a rounding "
                "mode: use 'half_even' (0, the default), 'half_up' (1), 'sdk_carry' (2) or 'nncase1' (3)", name);
        }
    } else if (!mp_obj_is_int(o) && o != mp_const_true && o != mp_const_false) {
        mp_raise_msg_varg(&mp_type_TypeError, MP_ERROR_TEXT("Model() act_round must be a str or an int, not %s"),
            mp_obj_get_type_str(o));
    } else if ((v = mp_obj_get_int(o)) < 0 || v > OKPU_ROUND_NNCASE1) {
        kpu_raise_fmt(&mp_type_ValueError, "load", OKPU_ERR_PARAM, "option act_round=%d is not a rounding mode: use "
            "'half_even' (0, the default), 'half_up' (1), 'sdk_carry' (2) or 'nncase1' (3)", (int)v);
    }
    return v;
}

/* ---- records: tuples with named items ---------------------------------------------------------------------
 * Laid out as MicroPython's attrtuple (the field names after the last item), but one type per record so that a
 * record prints as CPython prints its struct sequences: _kpu.LayerInfo(index=0, type=..., ...). Iteration,
 * indexing, slicing and comparison are the tuple's own (so a record equals the tuple of its items). */
static void kpu_record_print(const mp_print_t *print, mp_obj_t o_in, mp_print_kind_t kind) {
    (void)kind;
    mp_obj_tuple_t *o = MP_OBJ_TO_PTR(o_in);
    const qstr *fields = (const qstr *)MP_OBJ_TO_PTR(o->items[o->len]);
    mp_printf(print, "_kpu.%q(", (qstr)mp_obj_get_type(o_in)->name);
    for (size_t i = 0; i < o->len; i++) {
        mp_printf(print, "%s%q=", i > 0 ? ", " : "", fields[i]);
        mp_obj_print_helper(print, o->items[i], PRINT_REPR);
    }
    mp_print_str(print, ")");
}

static void kpu_record_attr(mp_obj_t self_in, qstr attr, mp_obj_t *dest) {
    if (dest[0] == MP_OBJ_NULL) {
        mp_obj_tuple_t *self = MP_OBJ_TO_PTR(self_in);
        const qstr *fields = (const qstr *)MP_OBJ_TO_PTR(self->items[self->len]);
        for (size_t i = 0; i < self->len; i++) {
            if (fields[i] == attr) {
                dest[0] = self->items[i];
                return;
            }
        }
    }
}

#define KPU_RECORD_TYPE(type_name, qname) \
    static MP_DEFINE_CONST_OBJ_TYPE(type_name, qname, \
        MP_TYPE_FLAG_ITER_IS_GETITER | MP_TYPE_FLAG_EQ_CHECKS_OTHER_TYPE, \
        print, kpu_record_print, unary_op, mp_obj_tuple_unary_op, binary_op, mp_obj_tuple_binary_op, \
        attr, kpu_record_attr, subscr, mp_obj_tuple_subscr, iter, mp_obj_tuple_getiter)

KPU_RECORD_TYPE(kpu_layer_info_type, MP_QSTR_LayerInfo);
KPU_RECORD_TYPE(kpu_tensor_info_type, MP_QSTR_TensorInfo);
KPU_RECORD_TYPE(kpu_output_type, MP_QSTR_Output);
KPU_RECORD_TYPE(kpu_box_type, MP_QSTR_Box);

/* The field names, in the CPython binding's order (python/_kpumodule.c, python/_kpu_post.c). */
static const qstr kpu_layer_fields[26] = {
    MP_QSTR_index, MP_QSTR_type, MP_QSTR_type_name, MP_QSTR_body_offset, MP_QSTR_body_size, MP_QSTR_is_kpu,
    MP_QSTR_wi, MP_QSTR_hi, MP_QSTR_chi, MP_QSTR_wo, MP_QSTR_ho, MP_QSTR_cho, MP_QSTR_depthwise,
    MP_QSTR_kernel_type, MP_QSTR_pool_type, MP_QSTR_para_size, MP_QSTR_macs, MP_QSTR_out_typecode, MP_QSTR_out_n,
    MP_QSTR_out_c, MP_QSTR_out_h, MP_QSTR_out_w,
    MP_QSTR_kernel_w, MP_QSTR_kernel_h, MP_QSTR_stride_w, MP_QSTR_stride_h, /* appended: indices above stay */
};
static const qstr kpu_tensor_fields[6] = {
    MP_QSTR_typecode, MP_QSTR_n, MP_QSTR_c, MP_QSTR_h, MP_QSTR_w, MP_QSTR_bytes,
};
static const qstr kpu_output_fields[7] = {
    MP_QSTR_data, MP_QSTR_typecode, MP_QSTR_n, MP_QSTR_c, MP_QSTR_h, MP_QSTR_w, MP_QSTR_layer,
};
static const qstr kpu_box_fields[6] = {
    MP_QSTR_x, MP_QSTR_y, MP_QSTR_w, MP_QSTR_h, MP_QSTR_value, MP_QSTR_classid,
};

static mp_obj_t kpu_new_record(const mp_obj_type_t *type, const qstr *fields, size_t n, const mp_obj_t *items) {
    mp_obj_tuple_t *o = mp_obj_malloc_var(mp_obj_tuple_t, items, mp_obj_t, n + 1, type);
    o->len = n;
    for (size_t i = 0; i < n; i++) {
        o->items[i] = items[i];
    }
    o->items[n] = MP_OBJ_FROM_PTR(fields);
    return MP_OBJ_FROM_PTR(o);
}

/* ---- Model(data, *, options) -------------------------------------------------------------------------------- */

static mp_obj_t kpu_model_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *all_args) {
    enum { ARG_data, ARG_conv_offset, ARG_act_round, ARG_v3_quant_round, ARG_v4_quant_round, ARG_mean_border,
           ARG_max_work, ARG_nncase, ARG_threads };
    static const mp_arg_t allowed_args[] = {
        { MP_QSTR_data, MP_ARG_REQUIRED | MP_ARG_OBJ, {.u_obj = MP_OBJ_NULL} },
        { MP_QSTR_conv_offset, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = OKPU_CONV_OFFSET_PER_CHANNEL} },
        { MP_QSTR_act_round, MP_ARG_KW_ONLY | MP_ARG_OBJ, {.u_obj = MP_OBJ_NEW_SMALL_INT(OKPU_ROUND_HALF_EVEN)} },
        { MP_QSTR_v3_quant_round, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = OKPU_ROUND_SDK_CARRY} },
        { MP_QSTR_v4_quant_round, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = OKPU_ROUND_HALF_UP} },
        { MP_QSTR_mean_border, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = OKPU_MEAN_BORDER_REPLICATE} },
        { MP_QSTR_max_work, MP_ARG_KW_ONLY | MP_ARG_OBJ, {.u_obj = mp_const_none} }, /* None: the default */
        { MP_QSTR_nncase, MP_ARG_KW_ONLY | MP_ARG_OBJ, {.u_obj = mp_const_none} }, /* kmodel v5: None = detect */
        { MP_QSTR_threads, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = 0} },
    };
    mp_arg_val_t args[MP_ARRAY_SIZE(allowed_args)];
    mp_arg_parse_all_kw_array(n_args, n_kw, all_args, MP_ARRAY_SIZE(allowed_args), allowed_args, args);

    mp_buffer_info_t bufinfo;
    if (!mp_get_buffer(args[ARG_data].u_obj, &bufinfo, MP_BUFFER_READ)) {
        mp_raise_msg_varg(&mp_type_TypeError,
            MP_ERROR_TEXT("Model() data must be a bytes-like object (the kmodel file), not %s"),
            mp_obj_get_type_str(args[ARG_data].u_obj));
    }
    kpu_check_option(MP_QSTR_conv_offset, args[ARG_conv_offset].u_int, OKPU_CONV_OFFSET_ONCE);
    mp_int_t act_round = kpu_act_round(args[ARG_act_round].u_obj);
    kpu_check_option(MP_QSTR_v3_quant_round, args[ARG_v3_quant_round].u_int, OKPU_ROUND_SDK_CARRY);
    kpu_check_option(MP_QSTR_v4_quant_round, args[ARG_v4_quant_round].u_int, OKPU_ROUND_SDK_CARRY);
    kpu_check_option(MP_QSTR_mean_border, args[ARG_mean_border].u_int, OKPU_MEAN_BORDER_IN_RANGE);

    okpu_options opts;
    okpu_options_default(&opts);
    opts.conv_offset = (okpu_conv_offset_mode)args[ARG_conv_offset].u_int;
    opts.act_round = (okpu_round_mode)act_round;
    opts.v3_quant_round = (okpu_round_mode)args[ARG_v3_quant_round].u_int;
    opts.v4_quant_round = (okpu_round_mode)args[ARG_v4_quant_round].u_int;
    opts.mean_border = (okpu_mean_border_mode)args[ARG_mean_border].u_int;
    opts.threads = (int)args[ARG_threads].u_int; /* the core checks the range */
    if (args[ARG_max_work].u_obj != mp_const_none) {
        mp_int_t mw = mp_obj_get_int(args[ARG_max_work].u_obj);
        if (mw <= 0) {
            kpu_raise_fmt(&mp_type_ValueError, "load", OKPU_ERR_PARAM,
                "max_work must be a positive int (operations a forward pass may cost), not %d", (int)mw);
        }
        opts.max_work = (uint64_t)mw;
    }
    if (args[ARG_nncase].u_obj != mp_const_none) {
        const char *rel = mp_obj_str_get_str(args[ARG_nncase].u_obj);
        if ((opts.v5_release = okpu_v5_release_parse(rel)) < 0) {
            kpu_raise_fmt(&mp_type_ValueError, "load", OKPU_ERR_PARAM,
                "nncase='%s' is not an nncase 1.x release; expected one of %s, or None to detect it from the file",
                rel, okpu_v5_release_names);
        }
    }
    #ifdef OKPU_HAVE_K210_HW
    opts.backend = OKPU_BACKEND_K210; /* a board build runs layers on the chip's KPU (SYSCTL_CLOCK_AI enabled) */
    #endif

    /* The object exists before the core allocates, so every block is reachable from it at all times. */
    kpu_model_obj_t *self = mp_obj_malloc_with_finaliser(kpu_model_obj_t, type);
    self->model = NULL;
    self->data = args[ARG_data].u_obj;
    self->allocs = NULL;
    self->n_allocs = 0;
    self->cap_allocs = 0;
    self->alloc_bytes = 0;
    self->finalising = false;
    #if MICROPY_PY_KPU_SYSTEM_HEAP
    opts.allocator = NULL;
    #else
    self->allocator.alloc = kpu_heap_alloc;
    self->allocator.free = kpu_heap_free;
    self->allocator.ctx = self;
    opts.allocator = &self->allocator;
    #endif

    okpu_error err;
    memset(&err, 0, sizeof(err));
    err.layer = -1;
    err.offset = -1;
    okpu_model *model = okpu_model_load(bufinfo.buf, bufinfo.len, &opts, &err);
    if (model == NULL) {
        self->data = mp_const_none;
        kpu_raise(&mp_type_ValueError, "load", &err);
    }
    self->model = model;
    return MP_OBJ_FROM_PTR(self);
}

static void kpu_model_release(kpu_model_obj_t *self) {
    if (self->model != NULL) {
        okpu_model *model = self->model;
        self->model = NULL;
        okpu_model_free(model);
    }
    self->data = mp_const_none;
    #if !MICROPY_PY_KPU_SYSTEM_HEAP
    if (!self->finalising) {
        /* Whatever the core did not give back (it should give back everything) goes now. */
        while (self->n_allocs > 0) {
            void *p = self->allocs[--self->n_allocs];
            self->allocs[self->n_allocs] = NULL;
            m_del(uint8_t, p, 0);
        }
        if (self->allocs != NULL) {
            m_del(void *, self->allocs, self->cap_allocs);
        }
    }
    self->allocs = NULL;
    self->n_allocs = 0;
    self->cap_allocs = 0;
    self->alloc_bytes = 0;
    #endif
}

static mp_obj_t kpu_model_free(mp_obj_t self_in) {
    kpu_model_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (self->model != NULL) {
        kpu_get_idle(self_in);
    }
    kpu_model_release(self);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_free_obj, kpu_model_free);

static mp_obj_t kpu_model_freed(mp_obj_t self_in) {
    kpu_model_obj_t *self = MP_OBJ_TO_PTR(self_in);
    return mp_obj_new_bool(self->model == NULL);
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_freed_obj, kpu_model_freed);

static mp_obj_t kpu_model_del(mp_obj_t self_in) {
    kpu_model_obj_t *self = MP_OBJ_TO_PTR(self_in);
    self->finalising = true;
    kpu_model_release(self);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_del_obj, kpu_model_del);

/* ---- queries ------------------------------------------------------------------------------------------------ */

static mp_obj_t kpu_model_version(mp_obj_t self_in) {
    kpu_model_obj_t *self = kpu_get_model(self_in);
    return MP_OBJ_NEW_SMALL_INT(okpu_model_version(self->model));
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_version_obj, kpu_model_version);

/* TensorInfo(typecode, n, c, h, w, bytes): how inputs() and output_info() describe a tensor. */
static mp_obj_t kpu_tensor_record(const okpu_tensor *t) {
    mp_obj_t item[6] = {
        kpu_typecode(t->dtype), kpu_uint(t->n), kpu_uint(t->c), kpu_uint(t->h), kpu_uint(t->w), kpu_uint(t->bytes),
    };
    return kpu_new_record(&kpu_tensor_info_type, kpu_tensor_fields, 6, item);
}

static mp_obj_t kpu_model_inputs(mp_obj_t self_in) {
    kpu_model_obj_t *self = kpu_get_model(self_in);
    int count = okpu_model_input_count(self->model);
    mp_obj_t list = mp_obj_new_list(0, NULL);
    for (int i = 0; i < count; i++) {
        okpu_tensor t;
        if (okpu_model_input(self->model, i, &t) != OKPU_OK) {
            continue;
        }
        mp_obj_list_append(list, kpu_tensor_record(&t));
    }
    return list;
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_inputs_obj, kpu_model_inputs);

static mp_obj_t kpu_model_set_input(mp_obj_t self_in, mp_obj_t index_in, mp_obj_t buf_in) {
    kpu_model_obj_t *self = kpu_get_idle(self_in);
    mp_int_t index = mp_obj_get_int(index_in);
    mp_buffer_info_t bufinfo;
    if (!mp_get_buffer(buf_in, &bufinfo, MP_BUFFER_READ)) {
        mp_raise_msg_varg(&mp_type_TypeError, MP_ERROR_TEXT("a bytes-like object is required, not '%s'"),
            mp_obj_get_type_str(buf_in));
    }
    okpu_error err;
    memset(&err, 0, sizeof(err));
    int rc = okpu_model_set_input(self->model, (int)index, bufinfo.buf, bufinfo.len, &err);
    if (rc != OKPU_OK) {
        err.code = rc;
        kpu_raise(&mp_type_ValueError, rc == OKPU_ERR_SIZE_NOTMATCH ? "check img format err!" : "set input", &err);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(kpu_model_set_input_obj, kpu_model_set_input);

// reserve(n_layers): the memory a run of the first n_layers needs beyond a full run, taken before forward.
static mp_obj_t kpu_model_reserve(mp_obj_t self_in, mp_obj_t n_in) {
    kpu_model_obj_t *self = kpu_get_idle(self_in);
    okpu_error err;
    memset(&err, 0, sizeof(err));
    int rc = okpu_model_reserve_partial(self->model, (int)mp_obj_get_int(n_in), &err);
    if (rc != OKPU_OK) {
        kpu_raise_os("set_layers", &err, rc);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(kpu_model_reserve_obj, kpu_model_reserve);

/* The timed runs' clock (okpu_clock_fn): the port's microsecond ticks, widened to 64 bits across their wrap. */
typedef struct {
    mp_uint_t last;
    uint64_t us;
} kpu_tick_clock_t;

static uint64_t kpu_tick_clock_ns(void *ctx) {
    kpu_tick_clock_t *c = (kpu_tick_clock_t *)ctx;
    mp_uint_t now = mp_hal_ticks_us();
    c->us += (mp_uint_t)(now - c->last);
    c->last = now;
    return c->us * 1000u;
}

/* run() and run_timed()'s arguments: the model (idle) and n_layers (0 = all). */
static kpu_model_obj_t *kpu_run_args(size_t n_args, const mp_obj_t *pos_args, mp_map_t *kw_args, int *n_layers) {
    enum { ARG_n_layers };
    static const mp_arg_t allowed_args[] = {
        { MP_QSTR_n_layers, MP_ARG_INT, {.u_int = 0} },
    };
    kpu_model_obj_t *self = kpu_get_idle(pos_args[0]);
    mp_arg_val_t args[MP_ARRAY_SIZE(allowed_args)];
    mp_arg_parse_all(n_args - 1, pos_args + 1, kw_args, MP_ARRAY_SIZE(allowed_args), allowed_args, args);
    *n_layers = (int)args[ARG_n_layers].u_int;
    return self;
}

/* Run the first n_layers, each layer's time into layer_ns unless it is NULL. With threads, the GIL is released for
 * the forward pass: the core's memory comes from the GC heap, so what a partial run needs is taken first, with the
 * GIL held (run would take it with the same error), and the pass allocates nothing while other threads run. */
static int kpu_run_model(kpu_model_obj_t *self, int n_layers, uint64_t *layer_ns, okpu_error *err) {
    kpu_tick_clock_t clock = {mp_hal_ticks_us(), 0};
    int rc;
    #if MICROPY_PY_THREAD
    rc = okpu_model_reserve_partial(self->model, n_layers, err);
    if (rc != OKPU_OK) {
        return rc;
    }
    self->running = true;
    MP_THREAD_GIL_EXIT();
    #endif
    rc = layer_ns ? okpu_model_run_timed(self->model, n_layers, kpu_tick_clock_ns, &clock, layer_ns, err)
        : okpu_model_run(self->model, n_layers, err);
    #if MICROPY_PY_THREAD
    MP_THREAD_GIL_ENTER();
    self->running = false;
    #endif
    return rc;
}

static mp_obj_t kpu_model_run(size_t n_args, const mp_obj_t *pos_args, mp_map_t *kw_args) {
    int n_layers;
    kpu_model_obj_t *self = kpu_run_args(n_args, pos_args, kw_args, &n_layers);
    okpu_error err;
    memset(&err, 0, sizeof(err));
    int rc = kpu_run_model(self, n_layers, NULL, &err);
    if (rc != OKPU_OK) {
        kpu_raise_os("run", &err, rc);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_KW(kpu_model_run_obj, 1, kpu_model_run);

/* run(), with each layer's time: a list of nanoseconds (microsecond ticks), one per layer (okpu_model_run_timed). */
static mp_obj_t kpu_model_run_timed(size_t n_args, const mp_obj_t *pos_args, mp_map_t *kw_args) {
    int n_layers;
    kpu_model_obj_t *self = kpu_run_args(n_args, pos_args, kw_args, &n_layers);
    okpu_error err;
    memset(&err, 0, sizeof(err));
    int count = okpu_model_layer_count(self->model);
    uint64_t *ns = m_new(uint64_t, count > 0 ? count : 1);
    int rc = kpu_run_model(self, n_layers, ns, &err);
    if (rc != OKPU_OK) {
        m_del(uint64_t, ns, count > 0 ? count : 1);
        kpu_raise_os("run", &err, rc);
    }
    mp_obj_t list = mp_obj_new_list(0, NULL);
    for (int i = 0; i < count; i++) {
        mp_obj_list_append(list, mp_obj_new_int_from_ull(ns[i]));
    }
    m_del(uint64_t, ns, count > 0 ? count : 1);
    return list;
}
static MP_DEFINE_CONST_FUN_OBJ_KW(kpu_model_run_timed_obj, 1, kpu_model_run_timed);

static mp_obj_t kpu_model_output_count(mp_obj_t self_in) {
    kpu_model_obj_t *self = kpu_get_model(self_in);
    return MP_OBJ_NEW_SMALL_INT(okpu_model_output_count(self->model));
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_output_count_obj, kpu_model_output_count);

/* Ints and reals as CPython's "i"/"n"/"d" argument formats take them, with its wording: the comparison tests print
 * these messages. */
static mp_int_t kpu_arg_int(mp_obj_t o) {
    if (!mp_obj_is_int(o) && !mp_obj_is_bool(o)) {
        mp_raise_msg_varg(&mp_type_TypeError, MP_ERROR_TEXT("'%s' object cannot be interpreted as an integer"),
            mp_obj_get_type_str(o));
    }
    return mp_obj_get_int(o);
}

static mp_float_t kpu_arg_float(mp_obj_t o) {
    mp_float_t v;
    if (mp_obj_is_str_or_bytes(o) || !mp_obj_get_float_maybe(o, &v)) {
        mp_raise_msg_varg(&mp_type_TypeError, MP_ERROR_TEXT("must be real number, not %s"),
            mp_obj_get_type_str(o));
    }
    return v;
}

static mp_obj_t kpu_model_output_info(mp_obj_t self_in, mp_obj_t index_in) {
    mp_int_t index = kpu_arg_int(index_in);
    kpu_model_obj_t *self = kpu_get_model(self_in);
    okpu_tensor t;
    memset(&t, 0, sizeof(t));
    if (okpu_model_output_info(self->model, (int)index, &t) != OKPU_OK) {
        kpu_raise_fmt(&mp_type_OSError, "output", OKPU_ERR_IDX_OUTRANGE,
            "output index %d out of range, the model has %d output(s)", (int)index,
            okpu_model_output_count(self->model));
    }
    return kpu_tensor_record(&t);
}
static MP_DEFINE_CONST_FUN_OBJ_2(kpu_model_output_info_obj, kpu_model_output_info);

static mp_obj_t kpu_model_output(mp_obj_t self_in, mp_obj_t index_in) {
    kpu_model_obj_t *self = kpu_get_idle(self_in);
    mp_int_t index = mp_obj_get_int(index_in);
    okpu_tensor t;
    memset(&t, 0, sizeof(t));
    const uint8_t *data = NULL;
    okpu_error err;
    memset(&err, 0, sizeof(err));
    int rc = okpu_model_output(self->model, (int)index, &t, &data, &err);
    if (rc != OKPU_OK) {
        kpu_raise_os("get output", &err, rc);
    }
    mp_obj_t item[7] = {
        mp_obj_new_bytes(data, data ? t.bytes : 0),
        kpu_typecode(t.dtype),
        kpu_uint(t.n), kpu_uint(t.c), kpu_uint(t.h), kpu_uint(t.w),
        MP_OBJ_NEW_SMALL_INT(t.layer),
    };
    return kpu_new_record(&kpu_output_type, kpu_output_fields, 7, item);
}
static MP_DEFINE_CONST_FUN_OBJ_2(kpu_model_output_obj, kpu_model_output);

static mp_obj_t kpu_model_layers(mp_obj_t self_in) {
    kpu_model_obj_t *self = kpu_get_model(self_in);
    int count = okpu_model_layer_count(self->model);
    mp_obj_t list = mp_obj_new_list(0, NULL);
    for (int i = 0; i < count; i++) {
        okpu_layer_info li;
        memset(&li, 0, sizeof(li));
        if (okpu_model_layer_info(self->model, i, &li) != OKPU_OK) {
            continue;
        }
        const char *name = li.type_name ? li.type_name : "?";
        mp_obj_t item[26] = {
            MP_OBJ_NEW_SMALL_INT(li.index),
            kpu_uint(li.type),
            mp_obj_new_str(name, strlen(name)),
            kpu_uint(li.body_offset),
            kpu_uint(li.body_size),
            MP_OBJ_NEW_SMALL_INT(li.is_kpu),
            kpu_uint(li.wi), kpu_uint(li.hi), kpu_uint(li.chi),
            kpu_uint(li.wo), kpu_uint(li.ho), kpu_uint(li.cho),
            MP_OBJ_NEW_SMALL_INT(li.depthwise),
            MP_OBJ_NEW_SMALL_INT(li.kernel_type),
            MP_OBJ_NEW_SMALL_INT(li.pool_type),
            kpu_uint(li.para_size),
            mp_obj_new_int_from_ull(li.macs),
            kpu_typecode(li.output.dtype),
            kpu_uint(li.output.n), kpu_uint(li.output.c), kpu_uint(li.output.h), kpu_uint(li.output.w),
            kpu_uint(li.kernel_w), kpu_uint(li.kernel_h), kpu_uint(li.stride_w), kpu_uint(li.stride_h),
        };
        mp_obj_list_append(list, kpu_new_record(&kpu_layer_info_type, kpu_layer_fields, 26, item));
    }
    return list;
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_layers_obj, kpu_model_layers);

/* Each layer's work (MACs or elements touched), what the model's work budget adds up. */
static mp_obj_t kpu_model_work(mp_obj_t self_in) {
    kpu_model_obj_t *self = kpu_get_model(self_in);
    int count = okpu_model_layer_count(self->model);
    mp_obj_t list = mp_obj_new_list(0, NULL);
    for (int i = 0; i < count; i++) {
        okpu_layer_info li;
        memset(&li, 0, sizeof(li));
        okpu_model_layer_info(self->model, i, &li);
        mp_obj_list_append(list, mp_obj_new_int_from_ull(li.work));
    }
    return list;
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_work_obj, kpu_model_work);

/* (layer, other layer) for each layer that `of` pairs with another, in layer order. */
static mp_obj_t kpu_layer_pairs(mp_obj_t self_in, int (*of)(const okpu_model *, int)) {
    kpu_model_obj_t *self = kpu_get_model(self_in);
    int count = okpu_model_layer_count(self->model);
    mp_obj_t list = mp_obj_new_list(0, NULL);
    for (int i = 0; i < count; i++) {
        int next = of(self->model, i);
        if (next >= 0) {
            mp_obj_t pair[2] = {MP_OBJ_NEW_SMALL_INT(i), MP_OBJ_NEW_SMALL_INT(next)};
            mp_obj_list_append(list, mp_obj_new_tuple(2, pair));
        }
    }
    return list;
}

/* (side layer, layer) pairs: a KPU layer run with the CPU steps after it as one task beside the next KPU layer's
 * shared channels (the emulator on 2+ threads; none on the K210's own KPU). */
static mp_obj_t kpu_model_side_chains(mp_obj_t self_in) {
    return kpu_layer_pairs(self_in, okpu_model_beside);
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_side_chains_obj, kpu_model_side_chains);

/* (layer, next layer) pairs: a shared KPU layer and the depthwise layer after it that reads its output, run in one
 * hand-out (the emulator on 2+ threads; none on the K210's own KPU). */
static mp_obj_t kpu_model_pairs(mp_obj_t self_in) {
    return kpu_layer_pairs(self_in, okpu_model_paired);
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_pairs_obj, kpu_model_pairs);

static mp_obj_t kpu_model_memory(mp_obj_t self_in) {
    kpu_model_obj_t *self = kpu_get_model(self_in);
    okpu_memory_info mi;
    memset(&mi, 0, sizeof(mi));
    okpu_model_memory(self->model, &mi);
    mp_obj_t dict = mp_obj_new_dict(12);
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_model_bytes), kpu_size(mi.model_bytes));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_model_alloc), kpu_size(mi.model_alloc));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_main_mem), kpu_size(mi.main_mem));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_context_bytes), kpu_size(mi.context_bytes));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_sram_total), kpu_size(mi.sram_total));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_backend_scratch), kpu_size(mi.backend_scratch));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_kpu_rows_used), kpu_uint(mi.kpu_rows_used));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_kpu_row_lo), kpu_uint(mi.kpu_row_lo));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_kpu_row_hi), kpu_uint(mi.kpu_row_hi));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_kpu_macs), mp_obj_new_int_from_ull(mi.kpu_macs));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_work), mp_obj_new_int_from_ull(mi.work));
    mp_obj_dict_store(dict, MP_OBJ_NEW_QSTR(MP_QSTR_max_work), mp_obj_new_int_from_ull(mi.max_work));
    return dict;
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_memory_obj, kpu_model_memory);

static mp_obj_t kpu_model_kpu_ram(mp_obj_t self_in) {
    kpu_model_obj_t *self = kpu_get_idle(self_in);
    const uint8_t *ram = okpu_model_kpu_ram(self->model);
    if (ram == NULL) {
        return mp_const_none;
    }
    return mp_obj_new_bytes(ram, OKPU_KPU_RAM_SIZE);
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_kpu_ram_obj, kpu_model_kpu_ram);

/* Bytes the core currently holds for this model on the GC heap (0 with the system heap). Not in the CPython
 * binding: a MicroPython-only diagnostic, used by the heap measurements. */
static mp_obj_t kpu_model_heap_bytes(mp_obj_t self_in) {
    kpu_model_obj_t *self = MP_OBJ_TO_PTR(self_in);
    #if MICROPY_PY_KPU_SYSTEM_HEAP
    (void)self;
    return MP_OBJ_NEW_SMALL_INT(0);
    #else
    return kpu_size(self->alloc_bytes);
    #endif
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_model_heap_bytes_obj, kpu_model_heap_bytes);

static void kpu_model_print(const mp_print_t *print, mp_obj_t self_in, mp_print_kind_t kind) {
    kpu_model_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (self->model == NULL) {
        mp_printf(print, "<_kpu.Model freed>");
    } else {
        mp_printf(print, "<_kpu.Model v%d, %d layers>", okpu_model_version(self->model),
            okpu_model_layer_count(self->model));
    }
}

static const mp_rom_map_elem_t kpu_model_locals_dict_table[] = {
    { MP_ROM_QSTR(MP_QSTR___del__), MP_ROM_PTR(&kpu_model_del_obj) },
    { MP_ROM_QSTR(MP_QSTR_version), MP_ROM_PTR(&kpu_model_version_obj) },
    { MP_ROM_QSTR(MP_QSTR_inputs), MP_ROM_PTR(&kpu_model_inputs_obj) },
    { MP_ROM_QSTR(MP_QSTR_set_input), MP_ROM_PTR(&kpu_model_set_input_obj) },
    { MP_ROM_QSTR(MP_QSTR_reserve), MP_ROM_PTR(&kpu_model_reserve_obj) },
    { MP_ROM_QSTR(MP_QSTR_run), MP_ROM_PTR(&kpu_model_run_obj) },
    { MP_ROM_QSTR(MP_QSTR_run_timed), MP_ROM_PTR(&kpu_model_run_timed_obj) },
    { MP_ROM_QSTR(MP_QSTR_output_count), MP_ROM_PTR(&kpu_model_output_count_obj) },
    { MP_ROM_QSTR(MP_QSTR_output_info), MP_ROM_PTR(&kpu_model_output_info_obj) },
    { MP_ROM_QSTR(MP_QSTR_output), MP_ROM_PTR(&kpu_model_output_obj) },
    { MP_ROM_QSTR(MP_QSTR_layers), MP_ROM_PTR(&kpu_model_layers_obj) },
    { MP_ROM_QSTR(MP_QSTR_memory), MP_ROM_PTR(&kpu_model_memory_obj) },
    { MP_ROM_QSTR(MP_QSTR_work), MP_ROM_PTR(&kpu_model_work_obj) },
    { MP_ROM_QSTR(MP_QSTR_side_chains), MP_ROM_PTR(&kpu_model_side_chains_obj) },
    { MP_ROM_QSTR(MP_QSTR_pairs), MP_ROM_PTR(&kpu_model_pairs_obj) },
    { MP_ROM_QSTR(MP_QSTR_kpu_ram), MP_ROM_PTR(&kpu_model_kpu_ram_obj) },
    { MP_ROM_QSTR(MP_QSTR_heap_bytes), MP_ROM_PTR(&kpu_model_heap_bytes_obj) },
    { MP_ROM_QSTR(MP_QSTR_free), MP_ROM_PTR(&kpu_model_free_obj) },
    { MP_ROM_QSTR(MP_QSTR_freed), MP_ROM_PTR(&kpu_model_freed_obj) },
};
static MP_DEFINE_CONST_DICT(kpu_model_locals_dict, kpu_model_locals_dict_table);

static MP_DEFINE_CONST_OBJ_TYPE(
    kpu_model_type,
    MP_QSTR_Model,
    MP_TYPE_FLAG_NONE,
    make_new, kpu_model_make_new,
    print, kpu_model_print,
    locals_dict, &kpu_model_locals_dict
    );

/* ---- post-processing (python/_kpu_post.c's functions, same arguments, errors and wording) ------------------ */

#if !MICROPY_PY_KPU_SYSTEM_HEAP
/* The decoder's scratch comes from the GC heap like the models' memory; it is freed before the decoder returns. */
static void *kpu_post_alloc(void *ctx, size_t size) {
    (void)ctx;
    void *p = m_malloc_maybe(size);
    if (p != NULL) {
        memset(p, 0, size);
    }
    return p;
}

static void kpu_post_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    m_del(uint8_t, ptr, size);
}

static const okpu_allocator kpu_post_allocator = { kpu_post_alloc, kpu_post_free, NULL };
#define KPU_POST_ALLOCATOR (&kpu_post_allocator)
#else
#define KPU_POST_ALLOCATOR (NULL)
#endif

/* ValueError for bad arguments, MemoryError, OSError(code, text) for the rest (as python/_kpu_post.c). */
static NORETURN void kpu_raise_post(const char *what, const okpu_error *err, int code) {
    okpu_error e = *err;
    e.code = code;
    kpu_raise(code == OKPU_ERR_PARAM ? &mp_type_ValueError
        : code == OKPU_ERR_NO_MEM ? &mp_type_MemoryError : &mp_type_OSError, what, &e);
}

/* `obj` as float32 values in a new GC-heap array of *n floats (the GC reclaims it if a later step raises).
 * A buffer must be float32 ('f') or raw bytes of whole floats; anything else is iterated as numbers (str is not a
 * buffer here, as in CPython). `expect` >= 0: the count required. The checks, their wording and the byte decoding
 * are the core's (c_src/core/floats.h), shared with the CPython binding. */
static float *kpu_floats_from(mp_obj_t obj, mp_int_t expect, size_t *n, const char *what) {
    mp_buffer_info_t bufinfo;
    if (!mp_obj_is_str(obj) && mp_get_buffer(obj, &bufinfo, MP_BUFFER_READ)) {
        /* bytearray's typecode is BYTEARRAY_TYPECODE, not 'B'; CPython calls both 'B' */
        char tc = (bufinfo.typecode == 0 || bufinfo.typecode == BYTEARRAY_TYPECODE) ? 'B' : (char)bufinfo.typecode;
        size_t itemsize = mp_binary_get_size('@', tc, NULL);
        bool is_float = tc == 'f' && itemsize == 4;
        if (!is_float && !(itemsize == 1 && (tc == 'B' || tc == 'b' || tc == 'c'))) {
            mp_raise_msg_varg(&mp_type_TypeError,
                MP_ERROR_TEXT("%s: a buffer of float32 ('f') or raw bytes is needed, got format '%c' with itemsize %d"),
                what, tc, (int)itemsize);
        }
        size_t count = 0;
        okpu_error err;
        if (okpu_floats_count_bytes(bufinfo.len, (long)expect, what, &count, &err) != OKPU_OK) {
            kpu_raise(&mp_type_ValueError, NULL, &err);
        }
        float *out = m_new(float, count > 0 ? count : 1);
        okpu_floats_read(bufinfo.buf, count, out);
        *n = count;
        return out;
    }
    /* A sequence / iterable: like CPython's PySequence_Fast, any failure to make a list of it is one TypeError. */
    mp_obj_t list;
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        list = mp_obj_list_make_new(&mp_type_list, 1, 0, &obj);
        nlr_pop();
    } else {
        mp_raise_msg_varg(&mp_type_TypeError,
            MP_ERROR_TEXT("%s: a sequence of numbers or a float32 buffer is needed, not %s"),
            what, mp_obj_get_type_str(obj));
    }
    size_t count;
    mp_obj_t *items;
    mp_obj_list_get(list, &count, &items);
    okpu_error err;
    if (okpu_floats_check_count(count, (long)expect, what, &err) != OKPU_OK) {
        kpu_raise(&mp_type_ValueError, NULL, &err);
    }
    float *out = m_new(float, count > 0 ? count : 1);
    for (size_t i = 0; i < count; i++) {
        out[i] = (float)kpu_arg_float(items[i]);
    }
    *n = count;
    return out;
}

static mp_obj_t kpu_yolo2_decode(size_t n_args, const mp_obj_t *args) {
    if (n_args != 9) {
        mp_raise_msg_varg(&mp_type_TypeError, MP_ERROR_TEXT("yolo2_decode() takes exactly 9 arguments (%d given)"),
            (int)n_args);
    }
    mp_int_t w = kpu_arg_int(args[1]);
    mp_int_t h = kpu_arg_int(args[2]);
    mp_int_t ch = kpu_arg_int(args[3]);
    mp_float_t threshold = kpu_arg_float(args[5]);
    mp_float_t nms = kpu_arg_float(args[6]);
    mp_int_t img_w = kpu_arg_int(args[7]);
    mp_int_t img_h = kpu_arg_int(args[8]);
    if (w <= 0 || h <= 0 || ch <= 0 || w > 0xFFFF || h > 0xFFFF || ch > 0xFFFF) {
        kpu_raise_fmt(&mp_type_ValueError, NULL, OKPU_ERR_PARAM, "yolo2 output shape %dx%dx%d is invalid", (int)w,
            (int)h, (int)ch);
    }
    size_t n_anchors = 0, n_data = 0;
    float *anchors = kpu_floats_from(args[4], -1, &n_anchors, "yolo2 anchors");
    if (n_anchors == 0 || n_anchors % 2 != 0) {
        kpu_raise_fmt(&mp_type_ValueError, NULL, OKPU_ERR_PARAM, "yolo2 anchors must be (w, h) pairs, got %d values",
            (int)n_anchors);
    }
    float *data = kpu_floats_from(args[0], w * h * ch, &n_data, "yolo2 output");
    okpu_yolo2_params params;
    params.threshold = (double)threshold;
    params.nms = (double)nms;
    params.anchor_num = (int)(n_anchors / 2);
    params.anchors = anchors;
    size_t cap = okpu_yolo2_max_boxes((uint32_t)w, (uint32_t)h, params.anchor_num);
    okpu_yolo2_box *boxes = m_new(okpu_yolo2_box, cap > 0 ? cap : 1);
    size_t count = 0;
    okpu_error err;
    memset(&err, 0, sizeof(err));
    int rc = okpu_yolo2_decode(data, (uint32_t)w, (uint32_t)h, (uint32_t)ch, &params, (int)img_w, (int)img_h,
        KPU_POST_ALLOCATOR, boxes, cap, &count, &err);
    m_del(float, data, n_data > 0 ? n_data : 1);
    m_del(float, anchors, n_anchors > 0 ? n_anchors : 1);
    if (rc != OKPU_OK) {
        m_del(okpu_yolo2_box, boxes, cap > 0 ? cap : 1);
        kpu_raise_post("yolo2", &err, rc);
    }
    mp_obj_t list = mp_obj_new_list(count, NULL);
    mp_obj_list_t *l = MP_OBJ_TO_PTR(list);
    for (size_t i = 0; i < count; i++) {
        const okpu_yolo2_box *b = boxes + i;
        mp_obj_t item[6] = {
            mp_obj_new_int(b->x), mp_obj_new_int(b->y), mp_obj_new_int(b->w), mp_obj_new_int(b->h),
            mp_obj_new_float((mp_float_t)b->value), mp_obj_new_int(b->classid),
        };
        l->items[i] = kpu_new_record(&kpu_box_type, kpu_box_fields, 6, item);
    }
    m_del(okpu_yolo2_box, boxes, cap > 0 ? cap : 1);
    return list;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(kpu_yolo2_decode_obj, 0, kpu_yolo2_decode);

static mp_obj_t kpu_face_encode(mp_obj_t seq) {
    size_t n = 0;
    float *v = kpu_floats_from(seq, -1, &n, "face_encode");
    vstr_t vstr;
    vstr_init_len(&vstr, n);
    okpu_error err;
    memset(&err, 0, sizeof(err));
    int rc = okpu_face_encode(v, n, (int8_t *)(void *)vstr.buf, &err);
    m_del(float, v, n > 0 ? n : 1);
    if (rc != OKPU_OK) {
        vstr_clear(&vstr);
        kpu_raise_post("face_encode", &err, rc);
    }
    return mp_obj_new_bytes_from_vstr(&vstr);
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_face_encode_obj, kpu_face_encode);

/* A C-contiguous buffer, as CPython's PyObject_GetBuffer takes it (str is not one there). */
static void kpu_get_bytes_like(mp_obj_t o, mp_buffer_info_t *bufinfo, size_t *itemsize) {
    if (mp_obj_is_str(o) || !mp_get_buffer(o, bufinfo, MP_BUFFER_READ)) {
        mp_raise_msg_varg(&mp_type_TypeError, MP_ERROR_TEXT("a bytes-like object is required, not '%s'"),
            mp_obj_get_type_str(o));
    }
    *itemsize = (bufinfo->typecode == 0 || bufinfo->typecode == BYTEARRAY_TYPECODE) ? 1
        : mp_binary_get_size('@', bufinfo->typecode, NULL);
}

static mp_obj_t kpu_face_compare(size_t n_args, const mp_obj_t *args) {
    if (n_args != 2) {
        mp_raise_msg_varg(&mp_type_TypeError, MP_ERROR_TEXT("face_compare() takes exactly 2 arguments (%d given)"),
            (int)n_args);
    }
    mp_buffer_info_t a, b;
    size_t a_item, b_item;
    kpu_get_bytes_like(args[0], &a, &a_item);
    kpu_get_bytes_like(args[1], &b, &b_item);
    if (a.len != b.len || a_item != 1 || b_item != 1) {
        kpu_raise_fmt(&mp_type_ValueError, "face_compare", OKPU_ERR_PARAM,
            "the two encodings must be byte strings of the same length (from face_encode of features of the same "
            "size), got %d and %d bytes", (int)a.len, (int)b.len);
    }
    double score = okpu_face_compare((const int8_t *)a.buf, (const int8_t *)b.buf, a.len);
    return mp_obj_new_float((mp_float_t)score);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(kpu_face_compare_obj, 0, kpu_face_compare);

/* A ROM float object. mp_obj_float_t is private to py/objfloat.c: this struct has its layout (base, value). Only the
 * boxed-float representations (A, B) have such objects; MaixPy's ports use A. */
#if MICROPY_OBJ_REPR == MICROPY_OBJ_REPR_A || MICROPY_OBJ_REPR == MICROPY_OBJ_REPR_B
typedef struct _kpu_float_obj_t {
    mp_obj_base_t base;
    mp_float_t value;
} kpu_float_obj_t;
static const kpu_float_obj_t kpu_face_score_undefined_obj = {
    { &mp_type_float }, (mp_float_t)OKPU_FACE_SCORE_UNDEFINED
};
#else
#error "_kpu: FACE_SCORE_UNDEFINED needs a boxed float (MICROPY_OBJ_REPR_A or _B)"
#endif

/* ---- module ------------------------------------------------------------------------------------------------- */

static mp_obj_t kpu_status_name(mp_obj_t code_in) {
    const char *name = okpu_status_name((int)mp_obj_get_int(code_in));
    return mp_obj_new_str(name, strlen(name));
}
static MP_DEFINE_CONST_FUN_OBJ_1(kpu_status_name_obj, kpu_status_name);

/* The threads Model(threads=0) runs: 1 here (the core of a MicroPython port has no POSIX threads). */
static mp_obj_t kpu_default_threads(void) {
    return MP_OBJ_NEW_SMALL_INT(okpu_workers_default_count());
}
static MP_DEFINE_CONST_FUN_OBJ_0(kpu_default_threads_obj, kpu_default_threads);

/* error_text(what, code, message): the text the bindings raise, for KPU.py's own errors (one wording everywhere). */
static mp_obj_t kpu_error_text(mp_obj_t what_in, mp_obj_t code_in, mp_obj_t message_in) {
    okpu_error err;
    memset(&err, 0, sizeof(err));
    err.code = (int)kpu_arg_int(code_in);
    err.layer = -1;
    err.offset = -1;
    size_t len;
    const char *message = mp_obj_str_get_data(message_in, &len);
    if (len > sizeof(err.message) - 1) {
        len = sizeof(err.message) - 1;
    }
    memcpy(err.message, message, len);
    err.message[len] = '\0';
    return kpu_error_str(what_in == mp_const_none ? NULL : mp_obj_str_get_str(what_in), &err);
}
static MP_DEFINE_CONST_FUN_OBJ_3(kpu_error_text_obj, kpu_error_text);

static const mp_rom_map_elem_t kpu_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR__kpu) },
    { MP_ROM_QSTR(MP_QSTR_Model), MP_ROM_PTR(&kpu_model_type) },
    { MP_ROM_QSTR(MP_QSTR_status_name), MP_ROM_PTR(&kpu_status_name_obj) },
    { MP_ROM_QSTR(MP_QSTR_default_threads), MP_ROM_PTR(&kpu_default_threads_obj) },
    { MP_ROM_QSTR(MP_QSTR_error_text), MP_ROM_PTR(&kpu_error_text_obj) },
    { MP_ROM_QSTR(MP_QSTR_LayerInfo), MP_ROM_PTR(&kpu_layer_info_type) },
    { MP_ROM_QSTR(MP_QSTR_TensorInfo), MP_ROM_PTR(&kpu_tensor_info_type) },
    { MP_ROM_QSTR(MP_QSTR_Output), MP_ROM_PTR(&kpu_output_type) },
    { MP_ROM_QSTR(MP_QSTR_Box), MP_ROM_PTR(&kpu_box_type) },
    { MP_ROM_QSTR(MP_QSTR_yolo2_decode), MP_ROM_PTR(&kpu_yolo2_decode_obj) },
    { MP_ROM_QSTR(MP_QSTR_face_encode), MP_ROM_PTR(&kpu_face_encode_obj) },
    { MP_ROM_QSTR(MP_QSTR_face_compare), MP_ROM_PTR(&kpu_face_compare_obj) },
    { MP_ROM_QSTR(MP_QSTR_FACE_SCORE_UNDEFINED), MP_ROM_PTR(&kpu_face_score_undefined_obj) },
    { MP_ROM_QSTR(MP_QSTR_KPU_RAM_SIZE), MP_ROM_INT(OKPU_KPU_RAM_SIZE) },
    { MP_ROM_QSTR(MP_QSTR_KPU_RAM_ROWS), MP_ROM_INT(OKPU_KPU_RAM_ROWS) },
    { MP_ROM_QSTR(MP_QSTR_KPU_ROW_BYTES), MP_ROM_INT(OKPU_KPU_ROW_BYTES) },
    { MP_ROM_QSTR(MP_QSTR_BOARD_SRAM_SIZE), MP_ROM_INT(OKPU_BOARD_SRAM_SIZE) },
    { MP_ROM_QSTR(MP_QSTR_MODEL_ALIGN_SLACK), MP_ROM_INT(OKPU_MODEL_ALIGN_SLACK) },
    { MP_ROM_QSTR(MP_QSTR_ERR_MODELS_FULL), MP_ROM_INT(OKPU_ERR_MODELS_FULL) },
    { MP_ROM_QSTR(MP_QSTR_ERR_SIZE_NOTMATCH), MP_ROM_INT(OKPU_ERR_SIZE_NOTMATCH) },
    { MP_ROM_QSTR(MP_QSTR_SYSTEM_HEAP), MP_ROM_INT(MICROPY_PY_KPU_SYSTEM_HEAP) },
    // which KPU runs the layers: the emulator's arithmetic options (act_round, conv_offset) do not apply to a chip
    #ifdef OKPU_HAVE_K210_HW
    { MP_ROM_QSTR(MP_QSTR_BACKEND), MP_ROM_QSTR(MP_QSTR_k210) },
    #else
    { MP_ROM_QSTR(MP_QSTR_BACKEND), MP_ROM_QSTR(MP_QSTR_emulator) },
    #endif
};
static MP_DEFINE_CONST_DICT(kpu_module_globals, kpu_module_globals_table);

const mp_obj_module_t kpu_user_cmodule = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&kpu_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR__kpu, kpu_user_cmodule);

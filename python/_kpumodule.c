// SPDX-License-Identifier: Apache-2.0
/*
 * _kpu: the CPython binding of the openkpu C core (c_src/okpu.h).
 *
 * Binding only: argument conversion, exceptions, copies of results. Everything about models lives in the core.
 * The same small API is meant to be re-implemented as a MicroPython native module, so it stays plain:
 *
 *   m = _kpu.Model(data, *, conv_offset=0, act_round=0, v3_quant_round=2, v4_quant_round=1, mean_border=0,
 *                  max_work=None, nncase=None, threads=0)   (None: OKPU_DEFAULT_MAX_WORK operations per forward
 *                  pass; nncase: kmodel v5's compiler release, "1.9.0" ...; None: detected from the file; threads:
 *                  the emulator's worker threads, 0 = _kpu.default_threads(), the processors this process may use)
 *   act_round: 0 / "half_even" (default), 1 / "half_up", 2 / "sdk_carry", 3 / "nncase1" (nncase 1.x's Simulator)
 *   run() releases the GIL: other Python threads (and other models) run meanwhile; while it runs, a call on the same
 *   model that reads or changes its run state (set_input, run, reserve, output, kpu_ram, free) raises RuntimeError.
 *   m.version(); m.inputs(); m.set_input(i, buf); m.run(n_layers=0); m.output_count(); m.output(i)
 *   m.layers(); m.memory(); m.kpu_ram(); m.free()
 *   _kpu.status_name(code); _kpu.error_text(what, code, message); _kpu.default_threads(); _kpu.round_trip_ns()
 *   Records (named, still indexable tuples): LayerInfo (layers()), TensorInfo (inputs(), output_info()), Output
 *   (output()), Box (yolo2_decode(), python/_kpu_post.c); memory() is a dict.
 *   _kpu.KpuDevice(memory): the virtual board's KPU register block (python/_kpu_device.c; CPython only)
 *
 * Every error text comes from the core's okpu_error_format (the MicroPython module uses it too).
 * Errors: load failures -> ValueError("[MAIXPY]kpu: load error:<code>, <name>: <message>"); an input of the wrong
 * size -> ValueError("[MAIXPY]kpu: check img format err! error:2012, ERR_SIZE_NOTMATCH: <message>"); run and
 * output failures -> OSError(code, "[MAIXPY]kpu: ..."); wrong argument types -> TypeError; any use after free() ->
 * ValueError("model was freed (deinit)").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#ifdef _WIN32
#include <windows.h>
#endif

#include "okpu.h"
#include "kmodel/kmodel_v5_release.h"
#include "core/workers.h"

typedef struct {
    PyObject_HEAD
    okpu_model *model; /* NULL once freed */
    Py_buffer view;    /* the model bytes: the core does not copy them, so the buffer is held until free */
    int has_view;
    int running; /* inside run() with the GIL released: see check_idle */
} ModelObject;

static const char FREED_MSG[] = "model was freed (deinit)";

static char dtype_code(okpu_dtype dtype)
{
    return dtype == OKPU_DTYPE_F32 ? 'f' : 'B';
}

static PyObject *typecode_str(okpu_dtype dtype)
{
    char c = dtype_code(dtype);
    return PyUnicode_FromStringAndSize(&c, 1);
}

/* Release the model and the buffer it points into. Idempotent. */
static void model_release(ModelObject *self)
{
    if (self->model) {
        okpu_model_free(self->model);
        self->model = NULL;
    }
    if (self->has_view) {
        PyBuffer_Release(&self->view);
        self->has_view = 0;
    }
}

static int check_live(ModelObject *self)
{
    if (!self->model) {
        PyErr_SetString(PyExc_ValueError, FREED_MSG);
        return 0;
    }
    return 1;
}

/* A method that reads or changes what run() works on, while another Python thread is inside run() on this model
 * (checked and set with the GIL held, so two threads cannot both pass). */
static int check_idle(ModelObject *self)
{
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError,
                        "model is running in another thread: wait for its run() to return (a model runs one forward "
                        "pass at a time; load the model twice to run two at once)");
        return 0;
    }
    return check_live(self);
}

/* The core's text for (code, message): "[MAIXPY]kpu: <what> error:<code>, <name>: <message>" (okpu_error_format). */
static PyObject *error_text(const char *what, const okpu_error *err)
{
    char text[OKPU_ERROR_TEXT_SIZE];
    size_t n = okpu_error_format(err, what, text, sizeof text);
    if (n >= sizeof text)
        n = sizeof text - 1;
    return PyUnicode_DecodeUTF8(text, (Py_ssize_t)n, "replace");
}

/* Raise `exc_type` with the core's text for `err`; OSError gets (code, text) so errno is the MaixPy code.
 * Shared with python/_kpu_post.c. */
PyObject *okpu_py_raise(PyObject *exc_type, const char *what, const okpu_error *err);
PyObject *okpu_py_raise(PyObject *exc_type, const char *what, const okpu_error *err)
{
    PyObject *text = error_text(what, err), *exc_args;
    int code = (err && err->code != OKPU_OK) ? err->code : OKPU_ERR_UNKNOWN;
    if (!text)
        return NULL;
    if (exc_type != PyExc_OSError) {
        PyErr_SetObject(exc_type, text);
        Py_DECREF(text);
        return NULL;
    }
    exc_args = Py_BuildValue("(iN)", code, text);
    if (!exc_args)
        return NULL;
    PyErr_SetObject(PyExc_OSError, exc_args);
    Py_DECREF(exc_args);
    return NULL;
}

/* A binding-side failure (bad option, index out of range, argument count): the message is formatted here
 * (PyUnicode_FromFormat: %R, %zd, ...), the error text by the core like every other. */
PyObject *okpu_py_raise_fmt(PyObject *exc_type, const char *what, int code, const char *fmt, ...);
PyObject *okpu_py_raise_fmt(PyObject *exc_type, const char *what, int code, const char *fmt, ...)
{
    okpu_error err;
    PyObject *msg;
    const char *utf8;
    va_list ap;
    va_start(ap, fmt);
    msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (!msg)
        return NULL;
    utf8 = PyUnicode_AsUTF8(msg);
    if (!utf8) {
        Py_DECREF(msg);
        return NULL;
    }
    memset(&err, 0, sizeof err);
    err.code = code;
    err.layer = -1;
    err.offset = -1;
    snprintf(err.message, sizeof err.message, "%s", utf8);
    Py_DECREF(msg);
    return okpu_py_raise(exc_type, what, &err);
}

static PyObject *raise_oserror(const char *what, const okpu_error *err, int code)
{
    okpu_error e = *err;
    e.code = code;
    return okpu_py_raise(PyExc_OSError, what, &e);
}

/* ---- records: named tuples (attribute access, and still indexable as the tuples they replace) ---------------- */

static PyStructSequence_Field layer_fields[] = {
    {"index", "layer index"}, {"type", "v3 layer type id or v4 opcode"}, {"type_name", "its name"},
    {"body_offset", "absolute file offset of the body"}, {"body_size", "declared body size"},
    {"is_kpu", "1 for a KPU convolution (depthwise, kernel_type, pool_type come from its argument words)"},
    {"wi", "input and output maps: a KPU convolution's, or a CPU pool's or convolution's (0: other layers)"}, {"hi", NULL}, {"chi", NULL}, {"wo", NULL}, {"ho", NULL}, {"cho", NULL},
    {"depthwise", NULL}, {"kernel_type", "0 = 1x1, 1 = 3x3"}, {"pool_type", NULL},
    {"para_size", "KPU: para_size; other layers: body size (MaixPy's convention)"},
    {"macs", "multiply-accumulates on the KPU (0 for CPU layers)"},
    {"out_typecode", "'B' or 'f': what the layer writes"}, {"out_n", NULL}, {"out_c", NULL}, {"out_h", NULL},
    {"out_w", NULL},
    /* appended after out_w so index-based readers keep working */
    {"kernel_w", "window of a CPU pool or convolution (0: no window)"}, {"kernel_h", NULL},
    {"stride_w", NULL}, {"stride_h", NULL}, {NULL, NULL}};
static PyStructSequence_Desc layer_desc = {"_kpu.LayerInfo", "One layer of a model (Model.layers()).", layer_fields,
                                           26};
static PyTypeObject LayerInfoType;

static PyStructSequence_Field tensor_fields[] = {
    {"typecode", "'B' (planar u8 CHW) or 'f' (float32)"}, {"n", NULL}, {"c", NULL}, {"h", NULL}, {"w", NULL},
    {"bytes", "byte size"}, {NULL, NULL}};
static PyStructSequence_Desc tensor_desc = {"_kpu.TensorInfo", "A model input or output as the model declares it.",
                                            tensor_fields, 6};
static PyTypeObject TensorInfoType;

static PyStructSequence_Field output_fields[] = {
    {"data", "a copy of the output bytes"}, {"typecode", "'B' or 'f'"}, {"n", NULL}, {"c", NULL}, {"h", NULL},
    {"w", NULL}, {"layer", "index of the layer that produced it"}, {NULL, NULL}};
static PyStructSequence_Desc output_desc = {"_kpu.Output", "An output of the last run (Model.output()).",
                                            output_fields, 7};
static PyTypeObject OutputType;

/* Fill a new record from a Py_BuildValue tuple of the same length (one place that knows how to build records). */
static PyObject *make_record(PyTypeObject *type, PyObject *values)
{
    PyObject *rec;
    Py_ssize_t i, n;
    if (!values)
        return NULL;
    rec = PyStructSequence_New(type);
    if (!rec) {
        Py_DECREF(values);
        return NULL;
    }
    n = PyTuple_GET_SIZE(values);
    for (i = 0; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(values, i);
        Py_INCREF(v);
        PyStructSequence_SET_ITEM(rec, i, v);
    }
    Py_DECREF(values);
    return rec;
}

PyObject *okpu_py_record(PyTypeObject *type, PyObject *values);
PyObject *okpu_py_record(PyTypeObject *type, PyObject *values)
{
    return make_record(type, values);
}

/* ---- Model.__new__ / dealloc -------------------------------------------------------------------------------- */

static int check_enum(const char *name, int value, int max)
{
    if (value < 0 || value > max) {
        okpu_py_raise_fmt(PyExc_ValueError, "load", OKPU_ERR_PARAM, "option %s=%d out of range 0..%d", name, value,
                          max);
        return 0;
    }
    return 1;
}

/* act_round: a name or its okpu_round_mode number (the MicroPython binding takes the same and words the same error). */
static int parse_act_round(PyObject *o, int *mode)
{
    static const char *const names[] = {[OKPU_ROUND_HALF_EVEN] = "half_even", [OKPU_ROUND_HALF_UP] = "half_up",
                                        [OKPU_ROUND_SDK_CARRY] = "sdk_carry", [OKPU_ROUND_NNCASE1] = "nncase1"};
    long v = -1;
    if (!o)
        return 1;
    if (PyUnicode_Check(o)) {
        for (v = 0; v <= OKPU_ROUND_NNCASE1; v++)
            if (PyUnicode_CompareWithASCIIString(o, names[v]) == 0)
                break;
    } else if (PyLong_Check(o)) {
        v = PyLong_AsLong(o);
        if (v == -1 && PyErr_Occurred())
            return 0; /* OverflowError, as MicroPython raises */
    } else {
        PyErr_Format(PyExc_TypeError, "Model() act_round must be a str or an int, not %.100s", Py_TYPE(o)->tp_name);
        return 0;
    }
    if (v < 0 || v > OKPU_ROUND_NNCASE1) {
        okpu_py_raise_fmt(PyExc_ValueError, "load", OKPU_ERR_PARAM,
                          "option act_round=%R is not a rounding mode: use 'half_even' (0, the default), "
                          "'half_up' (1), 'sdk_carry' (2) or 'nncase1' (3)", o);
        return 0;
    }
    *mode = (int)v;
    return 1;
}

static PyObject *Model_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"data", "conv_offset", "act_round", "v3_quant_round", "v4_quant_round", "mean_border",
                             "max_work", "nncase", "threads", NULL};
    PyObject *data, *max_work = Py_None, *act_round_obj = NULL;
    const char *nncase = NULL; /* kmodel v5: the nncase release (None: detect) */
    okpu_options opts;
    int conv_offset, act_round, v3_round, v4_round, mean_border, threads = 0;
    ModelObject *self;
    okpu_error err;

    okpu_options_default(&opts);
    conv_offset = (int)opts.conv_offset;
    act_round = (int)opts.act_round;
    v3_round = (int)opts.v3_quant_round;
    v4_round = (int)opts.v4_quant_round;
    mean_border = (int)opts.mean_border;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$iOiiiOzi:Model", kwlist, &data, &conv_offset, &act_round_obj,
                                     &v3_round, &v4_round, &mean_border, &max_work, &nncase, &threads))
        return NULL;
    opts.threads = threads; /* the core checks the range */
    if (max_work != Py_None) {
        unsigned long long mw = PyLong_Check(max_work) ? PyLong_AsUnsignedLongLong(max_work) : 0;
        if (!PyLong_Check(max_work) || PyErr_Occurred() || mw == 0) {
            PyErr_Clear();
            return okpu_py_raise_fmt(PyExc_ValueError, "load", OKPU_ERR_PARAM,
                                     "max_work must be a positive int below 2**64 (operations a forward pass may "
                                     "cost; default %llu), not %R",
                                     (unsigned long long)OKPU_DEFAULT_MAX_WORK, max_work);
        }
        opts.max_work = (uint64_t)mw;
    }
    if (!PyObject_CheckBuffer(data)) {
        PyErr_Format(PyExc_TypeError, "Model() data must be a bytes-like object (the kmodel file), not %.100s",
                     Py_TYPE(data)->tp_name);
        return NULL;
    }
    if (!check_enum("conv_offset", conv_offset, OKPU_CONV_OFFSET_ONCE) ||
        !parse_act_round(act_round_obj, &act_round) ||
        !check_enum("v3_quant_round", v3_round, OKPU_ROUND_SDK_CARRY) ||
        !check_enum("v4_quant_round", v4_round, OKPU_ROUND_SDK_CARRY) ||
        !check_enum("mean_border", mean_border, OKPU_MEAN_BORDER_IN_RANGE))
        return NULL;
    opts.conv_offset = (okpu_conv_offset_mode)conv_offset;
    opts.act_round = (okpu_round_mode)act_round;
    opts.v3_quant_round = (okpu_round_mode)v3_round;
    opts.v4_quant_round = (okpu_round_mode)v4_round;
    opts.mean_border = (okpu_mean_border_mode)mean_border;
    if (nncase && (opts.v5_release = okpu_v5_release_parse(nncase)) < 0)
        return okpu_py_raise_fmt(PyExc_ValueError, "load", OKPU_ERR_PARAM,
                                 "nncase='%s' is not an nncase 1.x release; expected one of %s, or None to detect it "
                                 "from the file", nncase, okpu_v5_release_names);

    self = (ModelObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->model = NULL;
    self->has_view = 0;
    self->running = 0;
    if (PyObject_GetBuffer(data, &self->view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->has_view = 1;

    memset(&err, 0, sizeof err);
    err.layer = -1;
    err.offset = -1;
    self->model = okpu_model_load((const uint8_t *)self->view.buf, (size_t)self->view.len, &opts, &err);
    if (!self->model) {
        okpu_py_raise(PyExc_ValueError, "load", &err);
        Py_DECREF(self); /* dealloc releases the buffer */
        return NULL;
    }
    return (PyObject *)self;
}

static void Model_dealloc(ModelObject *self)
{
    model_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- methods ------------------------------------------------------------------------------------------------- */

static PyObject *Model_version(ModelObject *self, PyObject *unused)
{
    (void)unused;
    if (!check_live(self))
        return NULL;
    return PyLong_FromLong(okpu_model_version(self->model));
}

/* TensorInfo(typecode, n, c, h, w, bytes): how inputs() and output_info() describe a tensor. */
static PyObject *tensor_tuple(const okpu_tensor *t)
{
    return make_record(&TensorInfoType,
                       Py_BuildValue("(NkkkkI)", typecode_str(t->dtype), (unsigned long)t->n, (unsigned long)t->c,
                                     (unsigned long)t->h, (unsigned long)t->w, (unsigned int)t->bytes));
}

static PyObject *Model_inputs(ModelObject *self, PyObject *unused)
{
    PyObject *list;
    int i, count;
    (void)unused;
    if (!check_live(self))
        return NULL;
    count = okpu_model_input_count(self->model);
    list = PyList_New(0);
    if (!list)
        return NULL;
    for (i = 0; i < count; i++) {
        okpu_tensor t;
        PyObject *item;
        if (okpu_model_input(self->model, i, &t) != OKPU_OK)
            continue;
        item = tensor_tuple(&t);
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    return list;
}

static PyObject *Model_set_input(ModelObject *self, PyObject *args)
{
    int index, rc;
    Py_buffer buf;
    okpu_error err;

    if (!PyArg_ParseTuple(args, "iy*:set_input", &index, &buf))
        return NULL;
    if (!check_idle(self)) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    memset(&err, 0, sizeof err);
    rc = okpu_model_set_input(self->model, index, buf.buf, (size_t)buf.len, &err);
    PyBuffer_Release(&buf);
    if (rc != OKPU_OK) {
        err.code = rc;
        return okpu_py_raise(PyExc_ValueError, rc == OKPU_ERR_SIZE_NOTMATCH ? "check img format err!" : "set input",
                             &err);
    }
    Py_RETURN_NONE;
}

/* The timed runs' clock (okpu_clock_fn): the platform's monotonic clock, in nanoseconds. */
static uint64_t monotonic_ns(void *unused)
{
    (void)unused;
#ifdef _WIN32
    {
        LARGE_INTEGER count, freq;
        QueryPerformanceCounter(&count);
        QueryPerformanceFrequency(&freq);
        return (uint64_t)((double)count.QuadPart * 1e9 / (double)freq.QuadPart);
    }
#else
    {
        struct timespec t;
        if (clock_gettime(CLOCK_MONOTONIC, &t) != 0)
            return 0;
        return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    }
#endif
}

/* Run the first n_layers, each layer's time into layer_ns unless it is NULL (and its task time into task_ns unless
 * that is NULL), with the GIL released. What a partial run needs is taken first, with the GIL held (run would take it
 * with the same error): while the GIL is released the run then changes nothing the load-time queries (layers, memory,
 * ...) read. */
static int run_released(ModelObject *self, int n_layers, uint64_t *layer_ns, uint64_t *task_ns, okpu_error *err)
{
    int rc;

    memset(err, 0, sizeof *err);
    rc = okpu_model_reserve_partial(self->model, n_layers, err);
    if (rc != OKPU_OK)
        return rc;
    self->running = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = task_ns    ? okpu_model_run_profiled(self->model, n_layers, monotonic_ns, NULL, layer_ns, task_ns, err)
         : layer_ns ? okpu_model_run_timed(self->model, n_layers, monotonic_ns, NULL, layer_ns, err)
                    : okpu_model_run(self->model, n_layers, err);
    Py_END_ALLOW_THREADS
    self->running = 0;
    return rc;
}

static PyObject *Model_run(ModelObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"n_layers", NULL};
    int n_layers = 0, rc;
    okpu_error err;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|i:run", kwlist, &n_layers))
        return NULL;
    if (!check_idle(self))
        return NULL;
    rc = run_released(self, n_layers, NULL, NULL, &err);
    if (rc != OKPU_OK)
        return raise_oserror("run", &err, rc);
    Py_RETURN_NONE;
}

/* n nanosecond counts as a list of ints (NULL with the exception set). */
static PyObject *ns_list(const uint64_t *ns, int n)
{
    PyObject *list = PyList_New(n);
    int i;

    for (i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong((unsigned long long)ns[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

/* run_timed() and run_profiled(): the layer times, and with `tasks` the task times too, as a tuple of two lists. */
static PyObject *run_with_times(ModelObject *self, PyObject *args, PyObject *kwds, int tasks)
{
    static char *kwlist[] = {"n_layers", "caller_only", NULL}; /* (run_timed: n_layers alone) */
    static char *timed_kwlist[] = {"n_layers", NULL};
    int n_layers = 0, caller_only = 0, rc, n;
    size_t slots; /* layer_count, at least 1: the layer times, then as many task times */
    uint64_t *ns;
    PyObject *layer_list, *task_list;
    okpu_error err;

    if (tasks ? !PyArg_ParseTupleAndKeywords(args, kwds, "|ip:run_profiled", kwlist, &n_layers, &caller_only)
              : !PyArg_ParseTupleAndKeywords(args, kwds, "|i:run_timed", timed_kwlist, &n_layers))
        return NULL;
    if (!check_idle(self))
        return NULL;
    n = okpu_model_layer_count(self->model);
    slots = (size_t)(n > 0 ? n : 1);
    ns = (uint64_t *)PyMem_Malloc(slots * 2u * sizeof *ns);
    if (!ns)
        return PyErr_NoMemory();
    okpu_model_caller_only(self->model, caller_only); /* (run_timed: caller_only stays 0) */
    rc = run_released(self, n_layers, ns, tasks ? ns + slots : NULL, &err);
    okpu_model_caller_only(self->model, 0);
    if (rc != OKPU_OK) {
        PyMem_Free(ns);
        return raise_oserror("run", &err, rc);
    }
    layer_list = ns_list(ns, n);
    if (!tasks || !layer_list) {
        PyMem_Free(ns);
        return layer_list;
    }
    task_list = ns_list(ns + slots, n);
    PyMem_Free(ns);
    if (!task_list) {
        Py_DECREF(layer_list);
        return NULL;
    }
    return Py_BuildValue("(NN)", layer_list, task_list);
}

/* run(), with each layer's time: a list of nanoseconds, one per layer (okpu_model_run_timed). */
static PyObject *Model_run_timed(ModelObject *self, PyObject *args, PyObject *kwds)
{
    return run_with_times(self, args, kwds, 0);
}

/* run_timed(), with each layer's task time too (okpu_model_run_profiled). */
static PyObject *Model_run_profiled(ModelObject *self, PyObject *args, PyObject *kwds)
{
    return run_with_times(self, args, kwds, 1);
}

static PyObject *Model_reserve(ModelObject *self, PyObject *args)
{
    int n_layers = 0, rc;
    okpu_error err;

    if (!PyArg_ParseTuple(args, "i:reserve", &n_layers))
        return NULL;
    if (!check_idle(self))
        return NULL;
    memset(&err, 0, sizeof err);
    rc = okpu_model_reserve_partial(self->model, n_layers, &err);
    if (rc != OKPU_OK)
        return raise_oserror("set_layers", &err, rc);
    Py_RETURN_NONE;
}

static PyObject *Model_output_info(ModelObject *self, PyObject *args)
{
    int index;
    okpu_tensor t;
    if (!PyArg_ParseTuple(args, "i:output_info", &index))
        return NULL;
    if (!check_live(self))
        return NULL;
    if (okpu_model_output_info(self->model, index, &t) != OKPU_OK)
        return okpu_py_raise_fmt(PyExc_OSError, "output", OKPU_ERR_IDX_OUTRANGE,
                                 "output index %d out of range, the model has %d output(s)", index,
                                 okpu_model_output_count(self->model));
    return tensor_tuple(&t);
}

static PyObject *Model_output_count(ModelObject *self, PyObject *unused)
{
    (void)unused;
    if (!check_live(self))
        return NULL;
    return PyLong_FromLong(okpu_model_output_count(self->model));
}

static PyObject *Model_output(ModelObject *self, PyObject *args)
{
    int index, rc;
    okpu_tensor t;
    const uint8_t *data = NULL;
    okpu_error err;

    if (!PyArg_ParseTuple(args, "i:output", &index))
        return NULL;
    if (!check_idle(self))
        return NULL;
    memset(&err, 0, sizeof err);
    memset(&t, 0, sizeof t);
    rc = okpu_model_output(self->model, index, &t, &data, &err);
    if (rc != OKPU_OK)
        return raise_oserror("get output", &err, rc);
    return make_record(&OutputType, Py_BuildValue("(y#Nkkkki)", (const char *)data, (Py_ssize_t)(data ? t.bytes : 0),
                                                  typecode_str(t.dtype), (unsigned long)t.n, (unsigned long)t.c,
                                                  (unsigned long)t.h, (unsigned long)t.w, t.layer));
}

static PyObject *Model_layers(ModelObject *self, PyObject *unused)
{
    PyObject *list;
    int i, count;
    (void)unused;
    if (!check_live(self))
        return NULL;
    count = okpu_model_layer_count(self->model);
    list = PyList_New(0);
    if (!list)
        return NULL;
    for (i = 0; i < count; i++) {
        okpu_layer_info li;
        PyObject *item;
        memset(&li, 0, sizeof li);
        if (okpu_model_layer_info(self->model, i, &li) != OKPU_OK)
            continue;
        item = make_record(&LayerInfoType, Py_BuildValue("(ikskkikkkkkkiiikKNkkkkkkkk)", li.index, (unsigned long)li.type,
                             li.type_name ? li.type_name : "?", (unsigned long)li.body_offset,
                             (unsigned long)li.body_size, li.is_kpu, (unsigned long)li.wi, (unsigned long)li.hi,
                             (unsigned long)li.chi, (unsigned long)li.wo, (unsigned long)li.ho, (unsigned long)li.cho,
                             li.depthwise, li.kernel_type, li.pool_type, (unsigned long)li.para_size,
                             (unsigned long long)li.macs, typecode_str(li.output.dtype), (unsigned long)li.output.n,
                             (unsigned long)li.output.c, (unsigned long)li.output.h, (unsigned long)li.output.w,
                             (unsigned long)li.kernel_w, (unsigned long)li.kernel_h, (unsigned long)li.stride_w,
                             (unsigned long)li.stride_h));
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    return list;
}

static PyObject *Model_memory(ModelObject *self, PyObject *unused)
{
    okpu_memory_info mi;
    (void)unused;
    if (!check_live(self))
        return NULL;
    memset(&mi, 0, sizeof mi);
    okpu_model_memory(self->model, &mi);
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:k,s:k,s:k,s:K,s:K,s:K}", "model_bytes", (Py_ssize_t)mi.model_bytes,
                         "model_alloc", (Py_ssize_t)mi.model_alloc, "main_mem", (Py_ssize_t)mi.main_mem,
                         "context_bytes", (Py_ssize_t)mi.context_bytes, "sram_total", (Py_ssize_t)mi.sram_total,
                         "backend_scratch", (Py_ssize_t)mi.backend_scratch,
                         "kpu_rows_used", (unsigned long)mi.kpu_rows_used, "kpu_row_lo", (unsigned long)mi.kpu_row_lo,
                         "kpu_row_hi", (unsigned long)mi.kpu_row_hi, "kpu_macs", (unsigned long long)mi.kpu_macs,
                         "work", (unsigned long long)mi.work, "max_work", (unsigned long long)mi.max_work);
}

/* (layer, other layer) for each layer that `of` pairs with another (okpu_model_beside, okpu_model_paired), in layer
 * order. */
static PyObject *layer_pairs(ModelObject *self, int (*of)(const okpu_model *, int))
{
    PyObject *list;
    int i, n;
    if (!check_live(self))
        return NULL;
    n = okpu_model_layer_count(self->model);
    list = PyList_New(0);
    for (i = 0; list && i < n; i++) {
        const int next = of(self->model, i);
        PyObject *pair;
        if (next < 0)
            continue;
        pair = Py_BuildValue("(ii)", i, next);
        if (!pair || PyList_Append(list, pair) < 0) {
            Py_XDECREF(pair);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(pair);
    }
    return list;
}

/* The side chains this model runs: (side layer, layer it runs beside), in layer order. */
static PyObject *Model_side_chains(ModelObject *self, PyObject *unused)
{
    (void)unused;
    return layer_pairs(self, okpu_model_beside);
}

/* The pairs this model runs: (layer, the next layer, run with it), in layer order. */
static PyObject *Model_pairs(ModelObject *self, PyObject *unused)
{
    (void)unused;
    return layer_pairs(self, okpu_model_paired);
}

/* Each layer's work (okpu_layer_info.work), in layer order: what the model's work budget adds up. */
static PyObject *Model_work(ModelObject *self, PyObject *unused)
{
    PyObject *list;
    int i, n;
    (void)unused;
    if (!check_live(self))
        return NULL;
    n = okpu_model_layer_count(self->model);
    list = PyList_New(n);
    if (!list)
        return NULL;
    for (i = 0; i < n; i++) {
        okpu_layer_info li;
        PyObject *v;
        memset(&li, 0, sizeof li);
        okpu_model_layer_info(self->model, i, &li);
        v = PyLong_FromUnsignedLongLong((unsigned long long)li.work);
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

static PyObject *Model_kpu_ram(ModelObject *self, PyObject *unused)
{
    const uint8_t *ram;
    (void)unused;
    if (!check_idle(self))
        return NULL;
    ram = okpu_model_kpu_ram(self->model);
    if (!ram)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)ram, (Py_ssize_t)OKPU_KPU_RAM_SIZE);
}

static PyObject *Model_free(ModelObject *self, PyObject *unused)
{
    (void)unused;
    if (self->model && !check_idle(self))
        return NULL;
    model_release(self);
    Py_RETURN_NONE;
}

static PyObject *Model_freed(ModelObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(self->model == NULL);
}

static PyMethodDef Model_methods[] = {
    {"version", (PyCFunction)Model_version, METH_NOARGS, "kmodel format version (3 or 4)."},
    {"inputs", (PyCFunction)Model_inputs, METH_NOARGS,
     "List of inputs as TensorInfo(typecode, n, c, h, w, bytes); typecode 'B' (planar u8 CHW) or 'f' (float32)."},
    {"set_input", (PyCFunction)Model_set_input, METH_VARARGS,
     "set_input(index, buffer): copy a bytes-like input of exactly nbytes into place."},
    {"reserve", (PyCFunction)Model_reserve, METH_VARARGS,
     "reserve(n_layers): take now the memory a run of the first n_layers needs beyond a full run (the copy of a "
     "KPU-RAM output), so that run(n_layers) cannot fail for lack of memory. Raises OSError (ERR_NO_MEM)."},
    {"run", (PyCFunction)(void (*)(void))Model_run, METH_VARARGS | METH_KEYWORDS,
     "run(n_layers=0): run layers [0, n_layers) (<= 0: all). Raises OSError on failure."},
    {"run_timed", (PyCFunction)(void (*)(void))Model_run_timed, METH_VARARGS | METH_KEYWORDS,
     "run_timed(n_layers=0) -> [ns, ...]: run() with each layer's time in nanoseconds (the monotonic clock), one per "
     "layer; layers run as one (pairs(), side_chains()) count under their first layer and the others read 0, as do "
     "the layers a partial run does not reach."},
    {"run_profiled", (PyCFunction)(void (*)(void))Model_run_profiled, METH_VARARGS | METH_KEYWORDS,
     "run_profiled(n_layers=0, caller_only=False) -> ([ns, ...], [task ns, ...]): run_timed() and, per layer, the "
     "time the model's threads spent inside their tasks, summed over the threads (0 where no task ran): above the "
     "one-thread figure, the work itself grew; threads x ns less task ns is the threads' time outside tasks (joins, "
     "serial parts). caller_only=True: every task on the calling thread, the layers split as on the model's thread "
     "count (okpu_model_caller_only): the split's work without its threads running at once; same outputs."},
    {"output_count", (PyCFunction)Model_output_count, METH_NOARGS, "Number of model outputs."},
    {"output_info", (PyCFunction)Model_output_info, METH_VARARGS,
     "output_info(index) -> TensorInfo(typecode, n, c, h, w, bytes): output index as the model declares it, "
     "without running."},
    {"output", (PyCFunction)Model_output, METH_VARARGS,
     "output(index) -> Output(data, typecode, n, c, h, w, layer): a copy of output index of the last run."},
    {"layers", (PyCFunction)Model_layers, METH_NOARGS,
     "Per-layer LayerInfo records (index, type, type_name, body_offset, body_size, is_kpu, wi, hi, chi, wo, ho, "
     "cho, depthwise, kernel_type, pool_type, para_size, macs, out_typecode, out_n, out_c, out_h, out_w, kernel_w, "
     "kernel_h, stride_w, stride_h)."},
    {"memory", (PyCFunction)Model_memory, METH_NOARGS, "What the model costs on a K210 (okpu_memory_info as a dict)."},
    {"work", (PyCFunction)Model_work, METH_NOARGS, "Each layer's work (MACs or elements touched), in layer order."},
    {"side_chains", (PyCFunction)Model_side_chains, METH_NOARGS,
     "(side layer, layer) pairs: a KPU layer run on one thread, with the CPU steps after it, as one task beside the "
     "next KPU layer's shared channels (the emulator on 2+ threads; okpu_model_beside)."},
    {"pairs", (PyCFunction)Model_pairs, METH_NOARGS,
     "(layer, next layer) pairs: a shared KPU layer and the depthwise layer after it that reads its output, run in "
     "one hand-out, each task a run of channels of both (the emulator on 2+ threads; okpu_model_paired)."},
    {"kpu_ram", (PyCFunction)Model_kpu_ram, METH_NOARGS, "A copy of the emulated 2 MiB KPU RAM, or None."},
    {"free", (PyCFunction)Model_free, METH_NOARGS, "Free the model now (idempotent)."},
    {"freed", (PyCFunction)Model_freed, METH_NOARGS, "True after free()."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_kpu.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(data, *, conv_offset=0, act_round=0, v3_quant_round=2, v4_quant_round=1, mean_border=0, max_work=None, "
              "nncase=None, threads=0)\n\n"
              "A loaded kmodel (v3/v4/v5). `data` is any bytes-like object; it is referenced, not copied.\n"
              "act_round: the KPU activation's rounding in the emulator (the K210 backend: the chip's own): 0 or "
              "'half_even' (default), 1 'half_up', 2 'sdk_carry', 3 'nncase1' (nncase 1.x's Simulator, whose "
              "reference outputs v5 models with negative activation slopes match only with it).\n"
              "nncase: for a kmodel v5, the nncase 1.x release that compiled it ('1.9.0', '1.4', ...; None: detected).\n"
              "threads: the emulator's worker threads for a forward pass (0 = default_threads()); outputs are the same "
              "for any count. run() releases the GIL.",
    .tp_methods = Model_methods,
    .tp_new = Model_new,
};

/* ---- module -------------------------------------------------------------------------------------------------- */

static PyObject *kpu_status_name(PyObject *module, PyObject *arg)
{
    long code;
    (void)module;
    code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(okpu_status_name((int)code));
}

/* error_text(what, code, message): the text the bindings raise, for KPU.py's own errors (one wording everywhere). */
static PyObject *kpu_error_text(PyObject *module, PyObject *args)
{
    const char *what, *message;
    int code;
    okpu_error err;
    (void)module;
    if (!PyArg_ParseTuple(args, "zis:error_text", &what, &code, &message))
        return NULL;
    memset(&err, 0, sizeof err);
    err.code = code;
    err.layer = -1;
    err.offset = -1;
    snprintf(err.message, sizeof err.message, "%s", message);
    return error_text(what, &err);
}

static PyObject *kpu_default_threads(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLong(okpu_workers_default_count());
}

static PyObject *kpu_round_trip_ns(PyObject *module, PyObject *unused)
{
    long ns;
    (void)module;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    ns = okpu_workers_round_trip_ns();
    Py_END_ALLOW_THREADS
    if (ns < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(ns);
}

static PyMethodDef module_methods[] = {
    {"default_threads", kpu_default_threads, METH_NOARGS,
     "default_threads() -> the worker threads Model(threads=0) runs: the processors this process may use (1 in a build "
     "without POSIX threads)"},
    {"round_trip_ns", kpu_round_trip_ns, METH_NOARGS,
     "round_trip_ns() -> nanoseconds for a cache line to go from the first processor this process may use to the second "
     "and back (best of several trials, a few milliseconds in all), or None (one processor, a build without threads): "
     "the benchmark's check that a virtual machine's two processors sit as near as usual"},
    {"status_name", kpu_status_name, METH_O, "status_name(code) -> 'ERR_KMODEL_FORMAT' etc."},
    {"error_text", kpu_error_text, METH_VARARGS,
     "error_text(what, code, message) -> '[MAIXPY]kpu: <what> error:<code>, <name>: <message>' (what may be None)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef kpu_module = {
    PyModuleDef_HEAD_INIT, "_kpu",
    "CPython binding of the openkpu C core (kmodel loader + KPU emulator). Users want `import KPU`.", -1,
    module_methods, NULL, NULL, NULL, NULL};

/* python/_kpu_post.c: yolo2_decode / face_encode / face_compare over c_src/post. */
int okpu_py_add_post(PyObject *module);
/* python/_kpu_device.c: KpuDevice, the virtual board's KPU register block over c_src/kpu/kpu_device.c. */
int okpu_py_add_device(PyObject *module);

PyMODINIT_FUNC PyInit__kpu(void);

PyMODINIT_FUNC PyInit__kpu(void)
{
    PyObject *m;
    if (PyType_Ready(&ModelType) < 0)
        return NULL;
    if ((!LayerInfoType.tp_name && PyStructSequence_InitType2(&LayerInfoType, &layer_desc) < 0) ||
        (!TensorInfoType.tp_name && PyStructSequence_InitType2(&TensorInfoType, &tensor_desc) < 0) ||
        (!OutputType.tp_name && PyStructSequence_InitType2(&OutputType, &output_desc) < 0))
        return NULL;
    m = PyModule_Create(&kpu_module);
    if (!m)
        return NULL;
    Py_INCREF(&ModelType);
    if (PyModule_AddObject(m, "Model", (PyObject *)&ModelType) < 0) {
        Py_DECREF(&ModelType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&LayerInfoType);
    Py_INCREF(&TensorInfoType);
    Py_INCREF(&OutputType);
    if (PyModule_AddObject(m, "LayerInfo", (PyObject *)&LayerInfoType) < 0 ||
        PyModule_AddObject(m, "TensorInfo", (PyObject *)&TensorInfoType) < 0 ||
        PyModule_AddObject(m, "Output", (PyObject *)&OutputType) < 0 ||
        PyModule_AddStringConstant(m, "BACKEND", "emulator") < 0 || /* the board's _kpu says "k210" */
        PyModule_AddIntConstant(m, "KPU_RAM_SIZE", (long)OKPU_KPU_RAM_SIZE) < 0 ||
        PyModule_AddIntConstant(m, "KPU_RAM_ROWS", (long)OKPU_KPU_RAM_ROWS) < 0 ||
        PyModule_AddIntConstant(m, "KPU_ROW_BYTES", (long)OKPU_KPU_ROW_BYTES) < 0 ||
        PyModule_AddIntConstant(m, "BOARD_SRAM_SIZE", (long)OKPU_BOARD_SRAM_SIZE) < 0 ||
        PyModule_AddIntConstant(m, "MODEL_ALIGN_SLACK", (long)OKPU_MODEL_ALIGN_SLACK) < 0 ||
        PyModule_AddIntConstant(m, "ERR_MODELS_FULL", (long)OKPU_ERR_MODELS_FULL) < 0 ||
        PyModule_AddIntConstant(m, "ERR_SIZE_NOTMATCH", (long)OKPU_ERR_SIZE_NOTMATCH) < 0 ||
        okpu_py_add_post(m) < 0 || okpu_py_add_device(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

// SPDX-License-Identifier: Apache-2.0
/* CPython functions over the post-processing core (c_src/post): registered into the `_kpu` extension module by
 * okpu_py_add_post(), which the module init calls.
 *
 *   yolo2_decode(data, w, h, ch, anchors, threshold, nms, img_w, img_h) -> [Box(x, y, w, h, value, classid), ...]
 *   face_encode(seq) -> bytes
 *   face_compare(a, b) -> float
 *
 * `data` is the model's float output: a buffer of float32 ('f', or raw bytes of exactly w*h*ch*4) or a sequence of
 * numbers (fmap[:]). It is copied, never modified. Errors: ValueError for bad arguments (MaixPy code 2001 in the
 * message), TypeError for wrong types, MemoryError / OSError for the rest.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "core/floats.h"
#include "post/face.h"
#include "post/yolo2.h"

int okpu_py_add_post(PyObject *module);
/* python/_kpumodule.c: the error text from the core (okpu_error_format), records from Py_BuildValue tuples. */
PyObject *okpu_py_raise(PyObject *exc_type, const char *what, const okpu_error *err);
PyObject *okpu_py_raise_fmt(PyObject *exc_type, const char *what, int code, const char *fmt, ...);
PyObject *okpu_py_record(PyTypeObject *type, PyObject *values);

static PyStructSequence_Field box_fields[] = {
    {"x", NULL}, {"y", NULL}, {"w", NULL}, {"h", NULL}, {"value", "probability of the class"},
    {"classid", NULL}, {NULL, NULL}};
static PyStructSequence_Desc box_desc = {"_kpu.Box", "One yolo2_decode detection, in image pixels.", box_fields, 6};
static PyTypeObject BoxType;

/* ValueError for bad arguments, MemoryError, OSError(code, text) for the rest. */
static PyObject *raise_post_error(const char *what, const okpu_error *err, int code)
{
    okpu_error e = *err;
    e.code = code;
    return okpu_py_raise(code == OKPU_ERR_PARAM ? PyExc_ValueError
                         : code == OKPU_ERR_NO_MEM ? PyExc_MemoryError : PyExc_OSError, what, &e);
}

/* Read `obj` as float32 values into a new PyMem buffer of *n floats. `expect` >= 0: the count required.
 * The checks, their wording and the byte decoding are the core's (c_src/core/floats.h), shared with MicroPython. */
static float *floats_from(PyObject *obj, Py_ssize_t expect, Py_ssize_t *n, const char *what)
{
    float *out;
    Py_ssize_t i, count;
    okpu_error err;
    if (PyObject_CheckBuffer(obj) && !PyUnicode_Check(obj)) {
        Py_buffer view;
        int is_float;
        size_t ucount = 0;
        if (PyObject_GetBuffer(obj, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            return NULL;
        is_float = view.itemsize == 4 && view.format &&
                   (strcmp(view.format, "f") == 0 || strcmp(view.format, "<f") == 0 ||
                    strcmp(view.format, "=f") == 0);
        if (!is_float && !(view.itemsize == 1 && (!view.format || strcmp(view.format, "B") == 0 ||
                                                   strcmp(view.format, "b") == 0 || strcmp(view.format, "c") == 0))) {
            PyErr_Format(PyExc_TypeError,
                         "%s: a buffer of float32 ('f') or raw bytes is needed, got format '%s' with itemsize %zd",
                         what, view.format ? view.format : "B", view.itemsize);
            PyBuffer_Release(&view);
            return NULL;
        }
        if (okpu_floats_count_bytes((size_t)view.len, (long)expect, what, &ucount, &err) != OKPU_OK) {
            PyBuffer_Release(&view);
            okpu_py_raise(PyExc_ValueError, NULL, &err);
            return NULL;
        }
        count = (Py_ssize_t)ucount;
        out = PyMem_Malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
        if (!out) {
            PyBuffer_Release(&view);
            PyErr_NoMemory();
            return NULL;
        }
        okpu_floats_read((const uint8_t *)view.buf, (size_t)count, out);
        PyBuffer_Release(&view);
        *n = count;
        return out;
    } else {
        PyObject *seq = PySequence_Fast(obj, "");
        if (!seq) {
            PyErr_Format(PyExc_TypeError, "%s: a sequence of numbers or a float32 buffer is needed, not %.100s",
                         what, Py_TYPE(obj)->tp_name);
            return NULL;
        }
        count = PySequence_Fast_GET_SIZE(seq);
        if (okpu_floats_check_count((size_t)count, (long)expect, what, &err) != OKPU_OK) {
            Py_DECREF(seq);
            okpu_py_raise(PyExc_ValueError, NULL, &err);
            return NULL;
        }
        out = PyMem_Malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
        if (!out) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return NULL;
        }
        for (i = 0; i < count; i++) {
            double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
            if (v == -1.0 && PyErr_Occurred()) {
                PyMem_Free(out);
                Py_DECREF(seq);
                return NULL;
            }
            out[i] = (float)v;
        }
        Py_DECREF(seq);
        *n = count;
        return out;
    }
}

static PyObject *post_yolo2_decode(PyObject *module, PyObject *args)
{
    PyObject *data_obj, *anchors_obj, *list = NULL;
    Py_ssize_t w, h, ch, n_data = 0, n_anchors = 0, i;
    double threshold, nms;
    int img_w, img_h, rc;
    float *data = NULL, *anchors = NULL;
    okpu_yolo2_box *boxes = NULL;
    size_t cap, count = 0;
    okpu_yolo2_params params;
    okpu_error err;
    (void)module;

    if (!PyArg_ParseTuple(args, "OnnnOddii:yolo2_decode", &data_obj, &w, &h, &ch, &anchors_obj, &threshold, &nms,
                          &img_w, &img_h))
        return NULL;
    if (w <= 0 || h <= 0 || ch <= 0 || w > 0xFFFF || h > 0xFFFF || ch > 0xFFFF)
        return okpu_py_raise_fmt(PyExc_ValueError, NULL, OKPU_ERR_PARAM, "yolo2 output shape %zdx%zdx%zd is invalid",
                                 w, h, ch);
    anchors = floats_from(anchors_obj, -1, &n_anchors, "yolo2 anchors");
    if (!anchors)
        return NULL;
    if (n_anchors == 0 || n_anchors % 2 != 0) {
        okpu_py_raise_fmt(PyExc_ValueError, NULL, OKPU_ERR_PARAM, "yolo2 anchors must be (w, h) pairs, got %zd values",
                          n_anchors);
        goto done;
    }
    data = floats_from(data_obj, w * h * ch, &n_data, "yolo2 output");
    if (!data)
        goto done;
    params.threshold = threshold;
    params.nms = nms;
    params.anchor_num = (int)(n_anchors / 2);
    params.anchors = anchors;
    cap = okpu_yolo2_max_boxes((uint32_t)w, (uint32_t)h, params.anchor_num);
    boxes = PyMem_Malloc((cap > 0 ? cap : 1) * sizeof *boxes);
    if (!boxes) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = okpu_yolo2_decode(data, (uint32_t)w, (uint32_t)h, (uint32_t)ch, &params, img_w, img_h, NULL, boxes, cap,
                           &count, &err);
    Py_END_ALLOW_THREADS
    if (rc != OKPU_OK) {
        raise_post_error("yolo2", &err, rc);
        goto done;
    }
    list = PyList_New((Py_ssize_t)count);
    if (!list)
        goto done;
    for (i = 0; i < (Py_ssize_t)count; i++) {
        const okpu_yolo2_box *b = boxes + i;
        PyObject *t = okpu_py_record(&BoxType, Py_BuildValue("(iiiidi)", b->x, b->y, b->w, b->h, (double)b->value,
                                                             b->classid));
        if (!t) {
            Py_CLEAR(list);
            goto done;
        }
        PyList_SET_ITEM(list, i, t);
    }
done:
    PyMem_Free(boxes);
    PyMem_Free(data);
    PyMem_Free(anchors);
    return list;
}

static PyObject *post_face_encode(PyObject *module, PyObject *arg)
{
    Py_ssize_t n = 0;
    float *v;
    PyObject *res;
    okpu_error err;
    int rc;
    (void)module;
    v = floats_from(arg, -1, &n, "face_encode");
    if (!v)
        return NULL;
    res = PyBytes_FromStringAndSize(NULL, n);
    if (!res) {
        PyMem_Free(v);
        return NULL;
    }
    rc = okpu_face_encode(v, (size_t)n, (int8_t *)(void *)PyBytes_AS_STRING(res), &err);
    PyMem_Free(v);
    if (rc != OKPU_OK) {
        Py_DECREF(res);
        return raise_post_error("face_encode", &err, rc);
    }
    return res;
}

static PyObject *post_face_compare(PyObject *module, PyObject *args)
{
    PyObject *a_obj, *b_obj;
    Py_buffer a, b;
    double score;
    (void)module;
    if (!PyArg_ParseTuple(args, "OO:face_compare", &a_obj, &b_obj))
        return NULL;
    if (PyObject_GetBuffer(a_obj, &a, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(b_obj, &b, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    if (a.len != b.len || a.itemsize != 1 || b.itemsize != 1) {
        okpu_py_raise_fmt(PyExc_ValueError, "face_compare", OKPU_ERR_PARAM,
                          "the two encodings must be byte strings of the same length (from face_encode of features of "
                          "the same size), got %zd and %zd bytes", a.len, b.len);
        PyBuffer_Release(&a);
        PyBuffer_Release(&b);
        return NULL;
    }
    score = okpu_face_compare((const int8_t *)a.buf, (const int8_t *)b.buf, (size_t)a.len);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return PyFloat_FromDouble(score);
}

static PyMethodDef post_methods[] = {
    {"yolo2_decode", post_yolo2_decode, METH_VARARGS,
     "yolo2_decode(data, w, h, ch, anchors, threshold, nms, img_w, img_h) -> list of Box(x, y, w, h, value, classid)\n"
     "YOLOv2 region decode of a float output (w, h, ch), anchor-major planar; classes = ch / anchor_num - 5;\n"
     "rectangles in img_w x img_h pixels, clamped to the image. `data` is not modified."},
    {"face_encode", post_face_encode, METH_O,
     "face_encode(seq) -> bytes: int8(trunc(clamp(v, -0.25, 0.25) * 512)), +0.25 -> 127 (MaixPy wrapped it to -128)"},
    {"face_compare", post_face_compare, METH_VARARGS,
     "face_compare(a, b) -> float: 50 * (1 + cos(a, b)) in [0, 100]; 0.0 when either encoding is all zeros"},
    {NULL, NULL, 0, NULL}};

int okpu_py_add_post(PyObject *module)
{
    PyObject *v;
    if (PyModule_AddFunctions(module, post_methods) < 0)
        return -1;
    if (!BoxType.tp_name && PyStructSequence_InitType2(&BoxType, &box_desc) < 0)
        return -1;
    Py_INCREF(&BoxType);
    if (PyModule_AddObject(module, "Box", (PyObject *)&BoxType) < 0) {
        Py_DECREF(&BoxType);
        return -1;
    }
    v = PyFloat_FromDouble(OKPU_FACE_SCORE_UNDEFINED);
    if (!v)
        return -1;
    if (PyModule_AddObject(module, "FACE_SCORE_UNDEFINED", v) < 0) {
        Py_DECREF(v);
        return -1;
    }
    return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * _kpu.KpuDevice: the KPU register block of the virtual Maix board (c_src/kpu/kpu_device.c), CPython only.
 *
 *   dev = _kpu.KpuDevice(memory, sram_size=6 MiB)
 *       memory: a writable buffer holding the board's SRAM [0, sram_size) followed by the 2 MiB KPU RAM; it is
 *       referenced, not copied (the board maps the same bytes into its CPU), and held until the device is dropped.
 *   dev.write(offset, value); dev.read(offset) -> int      64-bit register access
 *   dev.irq_pending() -> bool                               the interrupt line (PLIC source 25)
 *   dev.hang (bool, settable)                               fault injection: calc_done never rises
 *   dev.layers_run -> int; dev.fault -> str or None; dev.clear_fault()
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "okpu.h"

typedef struct {
    PyObject_HEAD
    okpu_kpu_device *dev;
    Py_buffer view;
    int has_view;
    int hang;
} KpuDeviceObject;

static PyObject *KpuDevice_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"memory", "sram_size", NULL};
    PyObject *memory;
    Py_ssize_t sram_size = OKPU_BOARD_SRAM_SIZE;
    KpuDeviceObject *self;
    okpu_error err;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|n:KpuDevice", kwlist, &memory, &sram_size))
        return NULL;
    self = (KpuDeviceObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (PyObject_GetBuffer(memory, &self->view, PyBUF_WRITABLE) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->has_view = 1;
    if (sram_size < 0 || self->view.len < sram_size || self->view.len - sram_size < (Py_ssize_t)OKPU_KPU_RAM_SIZE) {
        PyErr_Format(PyExc_ValueError,
                     "KpuDevice memory must hold sram_size (%zd) + %u bytes of KPU RAM, got a %zd-byte buffer",
                     sram_size, OKPU_KPU_RAM_SIZE, self->view.len);
        Py_DECREF(self);
        return NULL;
    }
    memset(&err, 0, sizeof err);
    self->dev = okpu_kpu_device_create((uint8_t *)self->view.buf, (size_t)sram_size,
                                       (uint8_t *)self->view.buf + sram_size, NULL, &err);
    if (!self->dev) {
        PyErr_SetString(PyExc_MemoryError, err.message);
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void KpuDevice_dealloc(KpuDeviceObject *self)
{
    okpu_kpu_device_free(self->dev);
    if (self->has_view)
        PyBuffer_Release(&self->view);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *KpuDevice_write(KpuDeviceObject *self, PyObject *args)
{
    unsigned int offset;
    unsigned long long value;
    if (!PyArg_ParseTuple(args, "IK:write", &offset, &value))
        return NULL;
    okpu_kpu_device_write(self->dev, offset, (uint64_t)value);
    Py_RETURN_NONE;
}

static PyObject *KpuDevice_read(KpuDeviceObject *self, PyObject *arg)
{
    unsigned long offset = PyLong_AsUnsignedLong(arg);
    if (offset == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromUnsignedLongLong(okpu_kpu_device_read(self->dev, (uint32_t)offset));
}

static PyObject *KpuDevice_irq_pending(KpuDeviceObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(okpu_kpu_device_irq(self->dev));
}

static PyObject *KpuDevice_clear_fault(KpuDeviceObject *self, PyObject *unused)
{
    (void)unused;
    okpu_kpu_device_clear_fault(self->dev);
    Py_RETURN_NONE;
}

static PyObject *KpuDevice_get_fault(KpuDeviceObject *self, void *closure)
{
    const okpu_error *e = okpu_kpu_device_fault(self->dev);
    (void)closure;
    if (!e)
        Py_RETURN_NONE;
    return PyUnicode_FromString(e->message);
}

static PyObject *KpuDevice_get_layers_run(KpuDeviceObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(okpu_kpu_device_layers_run(self->dev));
}

static PyObject *KpuDevice_get_hang(KpuDeviceObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->hang);
}

static int KpuDevice_set_hang(KpuDeviceObject *self, PyObject *value, void *closure)
{
    int v;
    (void)closure;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete hang");
        return -1;
    }
    v = PyObject_IsTrue(value);
    if (v < 0)
        return -1;
    self->hang = v;
    okpu_kpu_device_set_hang(self->dev, v);
    return 0;
}

static PyMethodDef KpuDevice_methods[] = {
    {"write", (PyCFunction)KpuDevice_write, METH_VARARGS, "write(offset, value): 64-bit register write."},
    {"read", (PyCFunction)KpuDevice_read, METH_O, "read(offset) -> int: 64-bit register read."},
    {"irq_pending", (PyCFunction)KpuDevice_irq_pending, METH_NOARGS,
     "True while an unmasked interrupt is raised (PLIC source 25)."},
    {"clear_fault", (PyCFunction)KpuDevice_clear_fault, METH_NOARGS, "Forget the recorded fault."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef KpuDevice_getset[] = {
    {"fault", (getter)KpuDevice_get_fault, NULL,
     "Why the first bad access or layer could not run (str), or None.", NULL},
    {"layers_run", (getter)KpuDevice_get_layers_run, NULL, "Layers executed so far.", NULL},
    {"hang", (getter)KpuDevice_get_hang, (setter)KpuDevice_set_hang,
     "Fault injection: layers are accepted but calc_done never rises.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject KpuDeviceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_kpu.KpuDevice",
    .tp_basicsize = sizeof(KpuDeviceObject),
    .tp_dealloc = (destructor)KpuDevice_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "KpuDevice(memory, sram_size=6291456)\n\n"
              "The K210 KPU register block over a virtual board's memory (SRAM then 2 MiB KPU RAM).",
    .tp_methods = KpuDevice_methods,
    .tp_getset = KpuDevice_getset,
    .tp_new = KpuDevice_new,
};

int okpu_py_add_device(PyObject *module);

int okpu_py_add_device(PyObject *module)
{
    if (PyType_Ready(&KpuDeviceType) < 0)
        return -1;
    Py_INCREF(&KpuDeviceType);
    if (PyModule_AddObject(module, "KpuDevice", (PyObject *)&KpuDeviceType) < 0) {
        Py_DECREF(&KpuDeviceType);
        return -1;
    }
    return 0;
}

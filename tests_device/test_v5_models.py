# SPDX-License-Identifier: Apache-2.0
# kmodel v5 (nncase 1.x) models of TESTDATA/kmodel_v5_nncase through MaixPy's KPU API: each output must equal the
# nncase Simulator's reference (NAME.outN.npy) byte for byte -- the same lines on CPython and MicroPython.
import struct
import KPU as kpu


def npy_data(path):
    """The array bytes of a .npy file (format 1.x/2.x: magic, version, header length, header, data), in C order
    (a Fortran-order file, as yolo320_v190.in.npy is, is reordered; 1-byte elements only then)."""
    f = open(path, "rb")
    try:
        head = f.read(12)
        if head[6] == 1:
            n = struct.unpack("<H", head[8:10])[0]
            f.seek(10)
        else:
            n = struct.unpack("<I", head[8:12])[0]
        header = f.read(n).decode()
        data = f.read()
    finally:
        f.close()
    if "'fortran_order': True" not in header:
        return data
    dims = [int(v) for v in header.split("'shape': (")[1].split(")")[0].split(",") if v.strip()]
    out = bytearray(len(data))
    fstride = [1] * len(dims)  # element strides of the Fortran layout
    for i in range(1, len(dims)):
        fstride[i] = fstride[i - 1] * dims[i - 1]
    idx = [0] * len(dims)
    for k in range(len(data)):  # k walks the C order
        src = 0
        for i in range(len(dims)):
            src += idx[i] * fstride[i]
        out[k] = data[src]
        i = len(dims) - 1
        while i >= 0:
            idx[i] += 1
            if idx[i] < dims[i]:
                break
            idx[i] = 0
            i -= 1
    return bytes(out)


def model_input(name):
    """The input bytes: the runner's C-order copy in WORKDIR when there is one (no reordering on a slow target)."""
    if WORKDIR is not None and exists(WORKDIR + "/" + name + ".in.bin"):
        f = open(WORKDIR + "/" + name + ".in.bin", "rb")
        try:
            return f.read()
        finally:
            f.close()
    return npy_data(TESTDATA + "/kmodel_v5_nncase/" + name + ".in.npy")


# name, outputs, input is float32 (fed as a list of floats) -- the bit-exact cases of the v5 folder's README
CASES = [("iris_f32_v190", 1, True), ("iris_ptq_v190", 1, True), ("convnet_u8_v190", 1, False),
         ("convnet_u8_v100", 1, False), ("multiout_u8out_v190", 2, False), ("multiout_k210copy_v190", 2, False),
         ("yolo320_v190", 1, False)]
# run_yolo2 on yolo320_v190: the README's detections (x, y, w, h, value, class)
YOLO_EXPECTED = [(0, 0, 165, 28, 0.540034, 15), (24, 0, 295, 52, 0.384857, 15), (217, 0, 61, 20, 0.409709, 15),
                 (257, 0, 62, 15, 0.595895, 15), (160, 0, 57, 121, 0.363745, 1)]
VOC_ANCHORS = (1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52)

if TESTDATA is None or not exists(TESTDATA + "/kmodel_v5_nncase/cases.json"):
    print("SKIP no v5 testdata")
else:
    d = TESTDATA + "/kmodel_v5_nncase/"
    for name, nout, floats in CASES:
        t = kpu.load(d + name + ".kmodel")
        x = model_input(name)
        if floats:
            x = list(struct.unpack("<%df" % (len(x) // 4), x))
        fm = kpu.forward(t, x)
        info = kpu.netinfo(t)
        kinds = {}
        for layer in info:
            kinds[layer.type_name()] = kinds.get(layer.type_name(), 0) + 1
        print(name, repr(t).split('"net_args": ')[1], "layers", len(info), sorted(kinds.items()))
        for i in range(nout):
            out = kpu.get_output(t, i)
            raw = out.data()
            ref = npy_data(d + name + ".out%d.npy" % i)
            print(name, "out", i, out.typecode(), out.w(), out.h(), out.ch(), len(raw), fnv(raw))
            check(raw == ref, name + " output %d = the Simulator's" % i)
        mem = kpu.memory(t)
        print(name, "memory", mem["model_bytes"], mem["main_mem"], mem["kpu_rows_used"], mem["kpu_macs"], mem["fits"])
        if name == "yolo320_v190":
            kpu.init_yolo2(t, 0.35, 0.3, 5, VOC_ANCHORS)
            found = kpu.run_yolo2(t, x)
            check(found is not None and len(found) == len(YOLO_EXPECTED), "run_yolo2 finds 5 objects")
            for obj, want in zip(found or [], YOLO_EXPECTED):
                print("yolo320", obj.rect(), "%.4f" % obj.value(), obj.classid())
                check(obj.classid() == want[5] and abs(obj.value() - want[4]) < 1e-4, "run_yolo2 class and value")
                check(max([abs(a - b) for a, b in zip(obj.rect(), want[:4])]) <= 1, "run_yolo2 rectangle")
        kpu.deinit(t)

print("RESULT", "FAIL" if FAILS else "PASS", len(FAILS))

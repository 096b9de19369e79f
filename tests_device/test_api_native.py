# SPDX-License-Identifier: Apache-2.0
# The `_kpu` native API on tiny models (WORKDIR) -- same output on CPython and MicroPython.
import struct
import _kpu


print("status", [_kpu.status_name(c) for c in (0, 2001, 2003, 2012, 2015, 9999)])

data = read(WORKDIR + "/tiny_fc.kmodel")
m = _kpu.Model(data)
print("fc version", m.version(), "inputs", m.inputs(), "outputs", m.output_count())
print("fc layers", m.layers())
mem = m.memory()
print("fc memory", memory_items(mem))
check(mem["model_bytes"] == len(data), "model_bytes")
m.set_input(0, struct.pack("<4f", 1.0, 2.0, 3.0, 4.0))
m.run()
o = m.output(0)
print("fc output", o[1:], o[0].hex())
check(struct.unpack("<3f", o[0]) == (30.5, 7.0, 5.0), "fc values")
check(m.kpu_ram() is None or len(m.kpu_ram()) == _kpu.KPU_RAM_SIZE, "kpu_ram size")
show_exc("set_input short", lambda: m.set_input(0, b"abc"))
show_exc("set_input index", lambda: m.set_input(7, struct.pack("<4f", 0, 0, 0, 0)))
e = show_exc("output index", lambda: m.output(3))
check(isinstance(e, OSError) and e.args[0] == 2011, "output index -> OSError 2011")
show_exc("set_input type", lambda: m.set_input(0, 12345))
show_exc("model type", lambda: _kpu.Model(12345))
show_exc("bad option", lambda: _kpu.Model(data, act_round=7))
show_exc("garbage", lambda: _kpu.Model(b"\x03\x00\x00\x00" + b"\x00" * 8))
show_exc("truncated", lambda: _kpu.Model(data[:40]))
m2 = _kpu.Model(data, act_round=1, conv_offset=1, v3_quant_round=0, v4_quant_round=2, mean_border=1)
show_exc("output before run", lambda: m2.output(0))
m2.free()
m.free()
m.free()
check(m.freed(), "freed")
e = show_exc("after free", m.version)
check(isinstance(e, ValueError), "after free -> ValueError")

data = read(WORKDIR + "/tiny_conv.kmodel")
m = _kpu.Model(data)
print("conv inputs", m.inputs(), "outputs", m.output_count())
for li in m.layers():
    print("conv layer", li)
print("conv memory", memory_items(m.memory()))
tc, n, c, h, w, nbytes = m.inputs()[0]
img = bytes([(i * 37 + 11) & 0xFF for i in range(nbytes)])
m.set_input(0, img)
m.run()
o = m.output(0)
print("conv output", o[1:], len(o[0]), o[0].hex())
ram = m.kpu_ram()
print("conv kpu_ram", len(ram), fnv(ram[:65536]))
# The emulator's arithmetic options; a chip's KPU has one arithmetic ([emulator] lines: absent on a board).
if _kpu.BACKEND == "emulator":
    for opts in ({"act_round": 1}, {"act_round": 2}, {"conv_offset": 1}):
        mm = _kpu.Model(data, **opts)
        mm.set_input(0, img)
        mm.run()
        print("[emulator] conv opts", sorted(opts.items()), fnv(mm.output(0)[0]))
        mm.free()
m.run(1)
o = m.output(0)
print("conv partial", o[1:], len(o[0]), fnv(o[0]))
show_exc("partial output 1", lambda: m.output(1))
m.free()

# output_info: the output as the model declares it, without running
m = _kpu.Model(read(WORKDIR + "/tiny_fc.kmodel"))
print("fc output_info", m.output_info(0))
e = show_exc("output_info index", lambda: m.output_info(1))
check(isinstance(e, OSError) and e.args[0] == 2011, "output_info index -> OSError 2011")
show_exc("output_info type", lambda: m.output_info("0"))
m.free()
show_exc("output_info after free", lambda: m.output_info(0))
m = _kpu.Model(read(WORKDIR + "/tiny_conv.kmodel"))
print("conv output_info", m.output_info(0))
m.free()
m = _kpu.Model(read(WORKDIR + "/tiny_v4.kmodel"))
print("v4 version", m.version(), "inputs", m.inputs(), "output_info", m.output_info(0))
show_exc("v4 output_info -1", lambda: m.output_info(-1))
m.free()

# yolo2_decode on synthetic grids: 1, 3 and 20 classes, 2, 3 and 4 anchors; float32 bytes, array('f'), list
import array

seed = [12345]


def rnd():
    seed[0] = (seed[0] * 1103515245 + 12345) & 0x7FFFFFFF
    return (seed[0] >> 8) / float(1 << 23)


def f32hex(v):
    return struct.pack("<f", v).hex()


for w, h, classes, anchors, thr, nms in ((4, 3, 1, (0.5, 0.8, 1.6, 2.2), 0.5, 0.3),
                                         (5, 4, 3, (1.0, 1.0, 2.5, 1.5, 0.7, 2.9), 0.3, 0.4),
                                         (3, 3, 20, (1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11), 0.06, 0.2)):
    na = len(anchors) // 2
    ch = na * (5 + classes)
    vals = [(rnd() - 0.45) * 8.0 for i in range(w * h * ch)]
    raw = struct.pack("<%df" % len(vals), *vals)
    vals = list(struct.unpack("<%df" % len(vals), raw))  # exactly the float32 values
    boxes = _kpu.yolo2_decode(raw, w, h, ch, anchors, thr, nms, 320, 240)
    print("yolo2 %dx%d classes %d anchors %d: %d boxes" % (w, h, classes, na, len(boxes)))
    for b in boxes[:6]:
        print("  box", b[0], b[1], b[2], b[3], f32hex(b[4]), b[5])
    check(len(boxes) > 0, "yolo2 %d classes finds boxes" % classes)
    for b in boxes:
        check(0 <= b[0] and 0 <= b[1] and b[0] + b[2] <= 320 and b[1] + b[3] <= 240 and thr < b[4] <= 1.0
              and 0 <= b[5] < classes, "yolo2 box in range")
    check(_kpu.yolo2_decode(vals, w, h, ch, list(anchors), thr, nms, 320, 240) == boxes, "yolo2 list input")
    check(_kpu.yolo2_decode(array.array("f", vals), w, h, ch, anchors, thr, nms, 320, 240) == boxes,
          "yolo2 array input")
    check(_kpu.yolo2_decode(bytearray(raw), w, h, ch, anchors, thr, nms, 320, 240) == boxes, "yolo2 bytearray")
    check(_kpu.yolo2_decode(raw, w, h, ch, anchors, 1.0, nms, 320, 240) == [], "yolo2 threshold 1")

A = (1.0, 1.0, 2.0, 2.0)
show_exc("yolo2 channels", lambda: _kpu.yolo2_decode([0.0] * 12, 2, 1, 6, A, 0.5, 0.3, 64, 32))
show_exc("yolo2 odd anchors", lambda: _kpu.yolo2_decode([0.0] * 24, 2, 1, 12, A[:3], 0.5, 0.3, 64, 32))
show_exc("yolo2 no anchors", lambda: _kpu.yolo2_decode([0.0] * 24, 2, 1, 12, [], 0.5, 0.3, 64, 32))
show_exc("yolo2 short list", lambda: _kpu.yolo2_decode([0.0] * 23, 2, 1, 12, A, 0.5, 0.3, 64, 32))
show_exc("yolo2 short bytes", lambda: _kpu.yolo2_decode(bytes(92), 2, 1, 12, A, 0.5, 0.3, 64, 32))
show_exc("yolo2 partial float", lambda: _kpu.yolo2_decode(bytes(95), 2, 1, 12, A, 0.5, 0.3, 64, 32))
show_exc("yolo2 shape", lambda: _kpu.yolo2_decode([0.0] * 24, 0, 1, 12, A, 0.5, 0.3, 64, 32))
show_exc("yolo2 float w", lambda: _kpu.yolo2_decode([0.0] * 24, 2.0, 1, 12, A, 0.5, 0.3, 64, 32))
show_exc("yolo2 str threshold", lambda: _kpu.yolo2_decode([0.0] * 24, 2, 1, 12, A, "x", 0.3, 64, 32))
show_exc("yolo2 threshold range", lambda: _kpu.yolo2_decode([0.0] * 24, 2, 1, 12, A, 1.5, 0.3, 64, 32))
show_exc("yolo2 arg count", lambda: _kpu.yolo2_decode([0.0] * 24, 2, 1, 12, A, 0.5, 0.3, 64))
show_exc("yolo2 data int", lambda: _kpu.yolo2_decode(5, 2, 1, 12, A, 0.5, 0.3, 64, 32))
show_exc("yolo2 data short array", lambda: _kpu.yolo2_decode(array.array("h", [0] * 48), 2, 1, 12, A, 0.5, 0.3,
                                                             64, 32))
show_exc("yolo2 data str item", lambda: _kpu.yolo2_decode([0.0] * 23 + ["x"], 2, 1, 12, A, 0.5, 0.3, 64, 32))

# face_encode / face_compare
enc = _kpu.face_encode([0.25, -0.25, 0.1, -0.3, 0.5])
print("face_encode", enc.hex(), type(enc).__name__)
check(list(struct.unpack("5b", enc)) == [127, -128, 51, -128, 127], "face_encode +0.25 -> 127")
print("face_encode buffers", _kpu.face_encode(array.array("f", [0.1, -0.2])).hex(),
      _kpu.face_encode(struct.pack("<2f", 0.1, -0.2)).hex(), _kpu.face_encode((1, 0)).hex(), _kpu.face_encode([]))
print("face_compare same", f32hex(_kpu.face_compare(enc, enc)), _kpu.face_compare(enc, enc))
neg = _kpu.face_encode([-0.25, 0.25, -0.1, 0.3, -0.5])
print("face_compare opposite", _kpu.face_compare(enc, neg))
zero = _kpu.face_encode([0.0] * 5)
print("face_compare zero", _kpu.face_compare(zero, enc), _kpu.FACE_SCORE_UNDEFINED)
check(_kpu.face_compare(zero, enc) == _kpu.FACE_SCORE_UNDEFINED == 0.0, "zero -> FACE_SCORE_UNDEFINED")
other = _kpu.face_encode([0.2, -0.1, 0.05, 0.0, 0.2])
print("face_compare other", struct.pack("<d", _kpu.face_compare(enc, other)).hex())
show_exc("face_encode str", lambda: _kpu.face_encode("abc"))
show_exc("face_encode int", lambda: _kpu.face_encode(5))
show_exc("face_encode None", lambda: _kpu.face_encode(None))
show_exc("face_encode bytes3", lambda: _kpu.face_encode(b"abc"))
show_exc("face_encode array h", lambda: _kpu.face_encode(array.array("h", [1, 2])))
show_exc("face_compare length", lambda: _kpu.face_compare(enc, enc[:2]))
show_exc("face_compare str", lambda: _kpu.face_compare("abc", "abc"))
show_exc("face_compare list", lambda: _kpu.face_compare([1], [1]))
show_exc("face_compare float array", lambda: _kpu.face_compare(array.array("f", [1]), array.array("f", [1])))
show_exc("face_compare one arg", lambda: _kpu.face_compare(enc))

print("RESULT", "FAIL" if FAILS else "PASS", len(FAILS))

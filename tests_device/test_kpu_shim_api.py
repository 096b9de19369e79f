# SPDX-License-Identifier: Apache-2.0
# MaixPy's KPU API on generated models (WORKDIR): load errors, fmaps, netinfo, deinit, the 5-model limit,
# set_outputs (kmodel v4), flash images and load_flash, init_yolo2 / run_yolo2, face_encode / face_compare.
# The expectations of tests_host/test_api.py and test_api_post.py that do not depend on the interpreter.
import struct
import KPU as kpu
import _kpu


FC = WORKDIR + "/tiny_fc.kmodel"
X = [1.0, 2.0, 3.0, 4.0]

# load() errors: empty, tiny, random, truncated files; argument types
for i, content in enumerate((b"", b"\x03", b"\x03\x00\x00\x00")):
    p = WORKDIR + "/empty%d.kmodel" % i
    write(p, content)
    e = show_exc("load tiny file %d" % len(content), lambda: kpu.load(p))
    check(isinstance(e, ValueError) and "[MAIXPY]kpu: load error:20" in str(e), "tiny file -> load error")
seed = [1234]
rnd = bytearray(4096)
for i in range(4096):
    seed[0] = (seed[0] * 1103515245 + 12345) & 0x7FFFFFFF
    rnd[i] = (seed[0] >> 16) & 0xFF
write(WORKDIR + "/random.kmodel", bytes(rnd))
e = show_exc("load random", lambda: kpu.load(WORKDIR + "/random.kmodel"))
check(isinstance(e, ValueError) and "load error:20" in str(e) and ", ERR_" in str(e), "random -> load error")
fc_data = read(FC)
write(WORKDIR + "/cut.kmodel", fc_data[:len(fc_data) - 24])
e = show_exc("load truncated", lambda: kpu.load(WORKDIR + "/cut.kmodel"))
check("load error:2003" in str(e), "truncated -> 2003")
for arg in (3.5, b"\x03\x00\x00\x00", None, 0, -5):
    show_exc("load %r" % (arg,), lambda: kpu.load(arg))
e = show_exc("load missing", lambda: kpu.load(WORKDIR + "/no_such_file.kmodel"), upto="[Errno 2]")
check("load error:2005, ERR_READ_FILE" in str(e) and "no_such_file" in str(e), "missing -> 2005")

# forward, fmaps
net = kpu.load(FC)
print("net", net.model_addr(), net.model_size() == len(fc_data), net.model_path() == FC)
check(repr(net).startswith('{"model_addr": -1, "model_size": %d, "model_path": "%s", "net_args": '
                           % (len(fc_data), FC)), "net repr")
fm = kpu.forward(net, [1.0, -2.0, 0.5, 3.0])
print("fmap", fm.typecode(), len(fm), fm.w(), fm.h(), fm.ch(), fm.size(), fm.index(), fm)
vals = fm[:]
check(isinstance(vals, tuple) and vals == (11.0, 8.375, 2.5), "fmap values")
check(fm[0] == vals[0] and fm[2] == vals[2] and fm[-1] == vals[2], "fmap items")
check(fm[1:3] == vals[1:3] and fm[1:] == vals[1:] and fm[:-1] == vals[:-1] and fm[0:3:1] == vals, "fmap slices")
show_exc("fmap step 2", lambda: fm[0:3:2])
show_exc("fmap index 3", lambda: fm[3])
check(list(fm) == list(vals), "fmap iter")
check(fm.data() == struct.pack("<3f", *vals), "fmap data")  # bytes(fm): CPython only (no __bytes__ in MicroPython)
for x in ((1, -2, 0.5, 3), struct.pack("<4f", 1.0, -2.0, 0.5, 3.0), bytearray(struct.pack("<4f", 1.0, -2.0, 0.5, 3.0))):
    check(kpu.forward(net, x, 0)[:] == vals, "forward %s" % type(x).__name__)
a = kpu.forward(net, [1, 1, 1, 1])
before = a[:]
b = kpu.forward(net, [2, 0, -3, 1])
check(a[:] == before != b[:] and kpu.get_output(net, 0)[:] == b[:], "fmap snapshot")
check(kpu.fmap_free(a) is None and a.size() == 0, "fmap_free")
show_exc("fmap after free", lambda: a[:])
show_exc("forward 3 floats", lambda: kpu.forward(net, [1.0, 2.0, 3.0]))
show_exc("forward 15 bytes", lambda: kpu.forward(net, b"x" * 15))
show_exc("forward str", lambda: kpu.forward(net, "1234"))
show_exc("forward int", lambda: kpu.forward(net, 42))
show_exc("forward not a net", lambda: kpu.forward("not a net", X))
show_exc("forward out 3", lambda: kpu.forward(net, X, 3))
show_exc("get_output 1", lambda: kpu.get_output(net, 1))
show_exc("get_output str", lambda: kpu.get_output(net, "0"))
check(kpu.set_layers(net, 1) and kpu.set_layers(net, 0) and kpu.set_layers(net, -1), "set_layers")
show_exc("set_layers 2", lambda: kpu.set_layers(net, 2))
show_exc("set_layers str", lambda: kpu.set_layers(net, "1"))
info = kpu.netinfo(net)
li = info[0]
print("netinfo", len(info), li.index(), li.type(), li.type_name(), li.is_kpu(), li.macs(), li.para_size() ==
      li.body_size(), li.output_shape(), li)
check(li.type() == 18 and li.para_size() >= 24 + 4 * 15, "netinfo fc")
mem = kpu.memory(net)
print("memory", memory_items(mem))
check(mem["model_alloc"] == len(fc_data) + 256 and mem["main_mem"] == 28 and mem["fits"] is True, "memory")
net2 = kpu.load(FC)
show_exc("get_output before run", lambda: kpu.get_output(net2, 0))
kpu.deinit(net2)
# deinit twice, use after deinit
check(kpu.deinit(net) is True and kpu.deinit(net) is True, "deinit twice")
for tag, call in (("forward", lambda: kpu.forward(net, X)), ("get_output", lambda: kpu.get_output(net, 0)),
                  ("netinfo", lambda: kpu.netinfo(net)), ("set_layers", lambda: kpu.set_layers(net, 1)),
                  ("memory", lambda: kpu.memory(net)), ("set_outputs", lambda: kpu.set_outputs(net, 0, 3, 1, 1)),
                  ("init_yolo2", lambda: kpu.init_yolo2(net, 0.5, 0.3, 1, (1.0, 1.0)))):
    e = show_exc("after deinit " + tag, call)
    check(isinstance(e, ValueError) and "model was freed (deinit)" in str(e), "use after deinit " + tag)
check("freed" in repr(net), "repr freed")

# at most 5 models
nets = [kpu.load(FC) for i in range(5)]
e = show_exc("sixth model", lambda: kpu.load(FC))
check("load error:2009, ERR_MODELS_FULL" in str(e) and "deinit" in str(e), "5-model limit")
kpu.deinit(nets[0])
nets.append(kpu.load(FC))
show_exc("sixth again", lambda: kpu.load(FC))
for n in nets:
    kpu.deinit(n)

# set_outputs on a kmodel v4 (12 floats in, negated out)
v4 = kpu.load(WORKDIR + "/tiny_v4.kmodel")
grid = [(i % 7) * 0.5 - 1.5 for i in range(12)]
fm = kpu.forward(v4, grid)
print("v4 fmap", fm.typecode(), fm.w(), fm.h(), fm.ch(), fm[:])
check(kpu.set_outputs(v4, 0, 2, 1, 5) is False, "set_outputs size")
check(kpu.set_outputs(v4, 1, 2, 1, 6) is False, "set_outputs index")
check(kpu.set_outputs(v4, 0, 0, 1, 6) is False, "set_outputs zero")
show_exc("set_outputs float", lambda: kpu.set_outputs(v4, 0, 2.0, 1, 6))
check(kpu.set_outputs(v4, 0, 2, 1, 6) is True, "set_outputs ok")
fm = kpu.get_output(v4, 0)
print("v4 set_outputs fmap", fm.w(), fm.h(), fm.ch(), len(fm))
check((fm.w(), fm.h(), fm.ch()) == (2, 1, 6), "set_outputs shape")

# YOLOv2 through the shim: the v4 model's output is a 2x1 grid, 1 anchor, 1 class
show_exc("run_yolo2 before init", lambda: kpu.run_yolo2(v4, grid))
for args in ((1.5, 0.2, 1, (1.0, 1.0)), (0.5, -0.1, 1, (1.0, 1.0)), (0.5, 0.2, 0, (1.0, 1.0)),
             (0.5, 0.2, 1, (1.0,)), (0.5, 0.2, 1, "ab")):
    show_exc("init_yolo2 %r" % (args,), lambda: kpu.init_yolo2(v4, *args))
check(kpu.init_yolo2(v4, 0.5, 0.3, 1, (1.5, 0.75)) is True, "init_yolo2")
# the model negates its input: planes x, y, w, h, obj, class of 2 cells; cell 0 has obj sigmoid(3), cell 1 none
x = [-1.0, 0.0, 1.0, 0.0, -0.5, 0.25, -0.5, 0.0, 3.0, -3.0, -1.0, -1.0]
objs = kpu.run_yolo2(v4, [-v for v in x])
print("run_yolo2", len(objs))
for o in objs:
    print("  obj", o.rect(), o.x(), o.y(), o.w(), o.h(), struct.pack("<f", o.value()).hex(), o.classid(), o.index(),
          o.objnum(), o[5])
check(len(objs) == 1 and objs[0].classid() == 0, "run_yolo2 one box")
check(kpu.get_output(v4, 0)[:] == tuple(x), "run_yolo2 leaves the output alone")
check(kpu.run_yolo2(v4, [0.0] * 8 + [9.0, 9.0, 0.0, 0.0]) is None, "run_yolo2 none")
kpu.deinit(v4)
kpu.deinit(v4)

# flash images: raw dump with tiny_fc at 0x10000, word-swapped at 0x20000
if _kpu.BACKEND == "emulator":  # a PC has no flash until one is named; a board reads its own ([pc] lines)
    show_exc("[pc] load flash no image", lambda: kpu.load(0x10000))
show_exc("set_flash_image missing", lambda: kpu.set_flash_image(WORKDIR + "/no_such.bin"), upto="[Errno 2]")
check(kpu.set_flash_image(WORKDIR + "/flash.bin") is True, "set_flash_image")
f = kpu.load(0x10000)
print("flash net", f.model_addr(), f.model_path(), f.model_size() == len(fc_data), repr(f)[:40])
ref = kpu.forward(f, X)[:]
kpu.deinit(f)
show_exc("load erased", lambda: kpu.load(0x18000))
show_exc("load past end", lambda: kpu.load(0x80000))
f = kpu.load_flash(0x20000, 1, 0xC000, 60000000)
print("load_flash net", f.model_addr(), f.model_size() == len(fc_data))
check(kpu.forward(f, X)[:] == ref, "load_flash output = load output")
kpu.deinit(f)
show_exc("load_flash not swapped", lambda: kpu.load_flash(0x10000, 0, 0, 60000000))
show_exc("load_flash spi", lambda: kpu.load_flash(0x20000, 0, 0, 100000000))
show_exc("load_flash dual", lambda: kpu.load_flash(0x20000, 2, 0, 60000000))
show_exc("load_flash batch", lambda: kpu.load_flash(0x20000, 1, 0, 60000000))
show_exc("load_flash addr", lambda: kpu.load_flash(0, 0, 0, 60000000))
show_exc("load_flash type", lambda: kpu.load_flash(0x20000, 0, 0, 6e7))
kpu.set_flash_image(None)

# face features
enc = kpu.face_encode([0.25, -0.25, 0.1, -0.3, 0.5])
print("face_encode", bytes(enc).hex())
check(list(struct.unpack("5b", bytes(enc))) == [127, -128, 51, -128, 127], "face_encode")
check(kpu.face_compare(enc, enc) == 100.0, "face_compare same")
zero = kpu.face_encode([0.0] * 5)
check(kpu.face_compare(zero, enc) == 0.0, "face_compare zero")
neg = kpu.face_encode([-0.25, 0.25, -0.1, 0.3, -0.5])
print("face_compare neg", struct.pack("<d", kpu.face_compare(enc, neg)).hex())
check(kpu.face_compare(enc, neg) < 1.0, "face_compare opposite")
net = kpu.load(FC)
fm = kpu.forward(net, [0.001, 0.002, -0.003, 0.004])
print("face_encode fmap", bytes(kpu.face_encode(fm)).hex())
kpu.deinit(net)

print("RESULT", "FAIL" if FAILS else "PASS", len(FAILS))

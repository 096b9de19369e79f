# The `_kpu` native API on tiny models (WORKDIR) -- same output on CPython and MicroPython.
import struct
import _kpu

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL", what)


def fnv(b):
    h = 0x811C9DC5
    for x in b:
        h = ((h ^ x) * 0x01000193) & 0xFFFFFFFF
    return "%08x" % h


def read(path):
    f = open(path, "rb")
    try:
        return f.read()
    finally:
        f.close()


def show_exc(tag, fn):
    try:
        fn()
        print(tag, "no exception")
        return None
    except Exception as e:
        print(tag, type(e).__name__, "|".join([str(a) for a in e.args]))
        return e


print("status", [_kpu.status_name(c) for c in (0, 2001, 2003, 2012, 2015, 9999)])

data = read(WORKDIR + "/tiny_fc.kmodel")
m = _kpu.Model(data)
print("fc version", m.version(), "inputs", m.inputs(), "outputs", m.output_count())
print("fc layers", m.layers())
mem = m.memory()
print("fc memory", sorted(mem.items()))
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
print("conv memory", sorted(m.memory().items()))
tc, n, c, h, w, nbytes = m.inputs()[0]
img = bytes([(i * 37 + 11) & 0xFF for i in range(nbytes)])
m.set_input(0, img)
m.run()
o = m.output(0)
print("conv output", o[1:], len(o[0]), o[0].hex())
ram = m.kpu_ram()
print("conv kpu_ram", len(ram), fnv(ram[:65536]))
for opts in ({"act_round": 1}, {"act_round": 2}, {"conv_offset": 1}):
    mm = _kpu.Model(data, **opts)
    mm.set_input(0, img)
    mm.run()
    print("conv opts", sorted(opts.items()), fnv(mm.output(0)[0]))
    mm.free()
m.run(1)
o = m.output(0)
print("conv partial", o[1:], len(o[0]), fnv(o[0]))
show_exc("partial output 1", lambda: m.output(1))
m.free()

print("RESULT", "FAIL" if FAILS else "PASS", len(FAILS))

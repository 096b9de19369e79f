# Real published models (TESTDATA) through MaixPy's KPU API -- same bytes on CPython and MicroPython.
import struct
import KPU as kpu

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


def exists(path):
    try:
        open(path, "rb").close()
        return True
    except OSError:
        return False


def show_fmap(tag, fm):
    raw = fm.data() if hasattr(fm, "data") else bytes(fm)
    print(tag, fm.typecode(), fm.w(), fm.h(), fm.ch(), fm.size(), fm.index(), len(raw), fnv(raw))
    return raw


if TESTDATA is None:
    print("SKIP no testdata")
else:
    p = TESTDATA + "/iris_fc_cpu_v3_v4/iris_v3.kmodel"
    if exists(p):
        t = kpu.load(p)
        fm = kpu.forward(t, [5.1, 3.8, 1.9, 0.4])
        raw = show_fmap("iris_v3", fm)
        print("iris_v3 values", raw.hex())
        v = fm[:]
        check(abs(v[0] - 16.077795) < 1e-4 and abs(v[1] - 5.607656) < 1e-4 and abs(v[2] + 2.071745) < 1e-4,
              "iris v3 = K210 reference")
        kpu.deinit(t)

    p = TESTDATA + "/mnist_v3_maixpy/mnist.kmodel"
    if exists(p):
        t = kpu.load(p)
        inp = t.net_arg().inputs()[0]
        print("mnist input", inp)
        # a "1": a vertical white bar on black
        img = bytearray(inp[5])
        for y in range(4, 24):
            for x in range(13, 16):
                img[y * 28 + x] = 255
        fm = kpu.forward(t, bytes(img))
        raw = show_fmap("mnist", fm)
        v = fm[:]
        best = 0
        for i in range(len(v)):
            if v[i] > v[best]:
                best = i
        print("mnist top1", best, raw.hex())
        for li in kpu.netinfo(t):
            print("mnist layer", li.index(), li.type(), li.wi(), li.hi(), li.chi(), li.wo(), li.ho(), li.cho(),
                  li.para_size())
        kpu.deinit(t)

    p = TESTDATA + "/mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel"
    if exists(p):
        import image
        img = image.Image(TESTDATA + "/mobilenetv1_0.75_v3_maixemc/tiger224.bmp")
        print("tiger image", img.width(), img.height(), img.get_pixel(0, 0), img.get_pixel(223, 223))
        t = kpu.load(p)
        fm = kpu.forward(t, img)
        show_fmap("mbnet", fm)
        v = fm[:]
        best = 0
        for i in range(len(v)):
            if v[i] > v[best]:
                best = i
        f = open(TESTDATA + "/mobilenetv1_0.75_v3_maixemc/labels.txt")
        labels = f.read().split("\n")
        f.close()
        print("mbnet top1", best, labels[best].strip())
        check("tiger" in labels[best], "mobilenet top-1 is tiger")
        mem = kpu.memory(t) if hasattr(kpu, "memory") else t.net_arg().memory()
        print("mbnet memory", sorted(mem.items()) if hasattr(mem, "items") else mem)
        kpu.deinit(t)

print("RESULT", "FAIL" if FAILS else "PASS", len(FAILS))

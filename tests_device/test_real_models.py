# SPDX-License-Identifier: Apache-2.0
# Real published models (TESTDATA) through MaixPy's KPU API -- same bytes on CPython and MicroPython.
import struct
import KPU as kpu
import _kpu


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
        t = kpu.load(p, threads=1)  # as MicroPython runs it: backend_scratch counts each thread's buffers
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
        print("mbnet memory", memory_items(mem) if hasattr(mem, "items") else mem)
        kpu.deinit(t)

    # refused files: kmodel v5, truncated iris (cuts written by the runner into WORKDIR)
    p = TESTDATA + "/mnist_v5_nncase_negative/mnist_v5.kmodel"
    if exists(p):
        try:
            kpu.load(p)
            print("v5 loaded?!")
        except ValueError as e:
            msg = str(e)
            print("v5", msg)
            check("load error:2002" in msg and "ERR_KMODEL_VERSION" in msg
                  and "5" in msg.split("ERR_KMODEL_VERSION", 1)[1], "v5 refused clearly")
    for cut in (20, 40, 100, 0):
        p = WORKDIR + "/iris_cut%d.kmodel" % cut
        if cut == 0:  # the last one: 50 bytes short
            p = None
            for q in ("/iris_cut%d.kmodel" % n for n in range(100, 2000)):
                if exists(WORKDIR + q):
                    p = WORKDIR + q
                    break
        if p is not None and exists(p):
            try:
                kpu.load(p)
                print("truncated iris loaded?!")
            except ValueError as e:
                print("iris cut", str(e)[:60])
                check("load error:2003, ERR_KMODEL_FORMAT: " in str(e), "truncated iris -> 2003")

    VOC_ANCHORS = (1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52)
    FACE_ANCHORS = (1.889, 2.5245, 2.9465, 3.94056, 3.99987, 5.3658, 5.155437, 6.92275, 6.718375, 9.01025)

    def show_objs(tag, objs):
        if objs is None:
            print(tag, "none")
            return
        for o in objs:
            print(tag, o.rect(), o.classid(), o.index(), o.objnum(), struct.pack("<f", o.value()).hex())

    p = TESTDATA + "/yolo2_voc20_v3_nncase_rc5/yolo.kmodel"
    if exists(p):
        import image
        img = image.Image(TESTDATA + "/yolo2_voc20_v3_nncase_rc5/dog.bmp")
        t = kpu.load(p)
        try:
            kpu.run_yolo2(t, img)
        except ValueError as e:
            print("yolo v3 before init", e)
        check(kpu.init_yolo2(t, 0.5, 0.2, 5, VOC_ANCHORS) is True, "init_yolo2")
        objs = kpu.run_yolo2(t, img)
        show_objs("yolo v3", objs)
        check(sorted([o.classid() for o in objs]) == [1, 6, 11], "yolo v3 on dog.bmp: bicycle, car, dog")
        for o in objs:
            x, y, w, h = o.rect()
            check(0 <= x and 0 <= y and x + w <= 320 and y + h <= 240 and 0.5 < o.value() <= 1.0, "box in image")
        show_fmap("yolo v3 output", kpu.get_output(t, 0))
        kpu.deinit(t)
        kpu.deinit(t)

    p = WORKDIR + "/face_flash.bin"
    if exists(p) and exists(WORKDIR + "/face21.bmp"):
        import image
        img = image.Image(WORKDIR + "/face21.bmp")
        kpu.set_flash_image(p)
        t = kpu.load(0x300000)
        print("face net", t.model_addr(), t.model_path(), t.model_size())
        check(t.model_size() == 388776, "face model size from its header")
        kpu.init_yolo2(t, 0.5, 0.3, 5, FACE_ANCHORS)
        faces = kpu.run_yolo2(t, img)
        show_objs("face", faces)
        check(faces is not None and len(faces) == 1, "one face")
        ref = show_fmap("face output", kpu.get_output(t, 0))
        kpu.deinit(t)
        try:
            kpu.load(0x100000)
        except ValueError as e:
            print("face erased", str(e).split(" (model read")[0])
        try:
            kpu.load_flash(0x300000, 0, 0, 60000000)
        except ValueError as e:
            print("face not swapped", str(e)[:90])
        if exists(WORKDIR + "/face_flash_be.bin"):
            kpu.set_flash_image(WORKDIR + "/face_flash_be.bin")
            t = kpu.load_flash(0x600000, 1, 0xC000, 60000000)
            print("face load_flash", t.model_addr(), t.model_size())
            check(kpu.forward(t, img).data() == ref, "load_flash output = load output")
            kpu.deinit(t)
        kpu.set_flash_image(None)

    p = TESTDATA + "/yolo2_voc20_v4_nncase/yolo.kmodel"
    if exists(p):
        import image
        img = image.Image(TESTDATA + "/yolo2_voc20_v4_nncase/dog.bmp")
        t = kpu.load(p)
        print("yolo v4 output_info", t.net_arg().output_info(0))
        fm = kpu.forward(t, img)
        show_fmap("yolo v4", fm)
        check((fm.w(), fm.h(), fm.ch(), fm.typecode()) == (10, 7, 125, "f"), "v4 shape from the model")
        check(kpu.set_outputs(t, 0, 10, 7, 12) is False, "set_outputs 2012")
        check(kpu.set_outputs(t, 1, 10, 7, 125) is False, "set_outputs 2011")
        check(kpu.set_outputs(t, 0, 70, 1, 125) is True, "set_outputs ok")
        fm = kpu.get_output(t, 0)
        print("yolo v4 set_outputs", fm.w(), fm.h(), fm.ch())
        check((fm.w(), fm.h(), fm.ch()) == (70, 1, 125), "set_outputs shape")
        check(kpu.set_outputs(t, 0, 10, 7, 125) is True, "set_outputs back")
        boxes = _kpu.yolo2_decode(fm.data(), 10, 7, 125, VOC_ANCHORS, 0.5, 0.2, 320, 240)
        print("yolo v4 decode", boxes and [(b[0], b[1], b[2], b[3], b[5]) for b in boxes])
        classes = [b[5] for b in boxes]
        check(1 in classes and 6 in classes, "yolo v4 on dog.bmp: bicycle and car at threshold 0.5")
        kpu.deinit(t)

print("RESULT", "FAIL" if FAILS else "PASS", len(FAILS))

# SPDX-License-Identifier: Apache-2.0
# MaixPy's KPU API (modules/KPU/KPU.py over _kpu) on tiny models -- same output on CPython and MicroPython.
import struct
import KPU as kpu

task = kpu.load(WORKDIR + "/tiny_fc.kmodel")
fm = kpu.forward(task, [1.0, 2.0, 3.0, 4.0])
print("fc fmap", fm.typecode(), fm.w(), fm.h(), fm.ch(), fm.size(), fm.index(), fm[:])
check(fm[:] == (30.5, 7.0, 5.0), "fc forward")
print("fc fmap items", fm[0], fm[1:3])
for li in kpu.netinfo(task):
    print("fc netinfo", li.index(), li.type(), li.wi(), li.hi(), li.wo(), li.ho(), li.chi(), li.cho(), li.dw(),
          li.kernel_type(), li.pool_type(), li.para_size())
show_exc("fc wrong count", lambda: kpu.forward(task, [1.0, 2.0]))
show_exc("fc str", lambda: kpu.forward(task, "abc"))
g = kpu.get_output(task, 0)
check(g[:] == fm[:], "get_output")
check(kpu.deinit(task) is True, "deinit")
kpu.deinit(task)
show_exc("forward after deinit", lambda: kpu.forward(task, [1.0, 2.0, 3.0, 4.0]))

task = kpu.load(WORKDIR + "/tiny_conv.kmodel")
inp = task.net_arg().inputs()[0]
print("conv input", inp)
tc, n, c, h, w, nbytes = inp
data = bytes([(i * 37 + 11) & 0xFF for i in range(nbytes)])
fm = kpu.forward(task, data)
print("conv fmap", fm.typecode(), fm.w(), fm.h(), fm.ch(), fm.size(), fm.index())
vals = fm[:]
print("conv fmap sum", sum(vals), vals[:8])
kpu.set_layers(task, 1)
fm1 = kpu.forward(task, data)
print("conv set_layers 1", fm1.typecode(), fm1.w(), fm1.h(), fm1.ch(), fm1.size(), fm1.index(), sum(fm1[:]))
try:
    import image
    im = kpu.fmap(fm1, 0)
    print("conv fmap image", im.width(), im.height(), im.get_pixel(0, 0), im.get_pixel(im.width() - 1, 0))
except ImportError as e:
    print("conv fmap image SKIP (no image module)")
show_exc("conv short input", lambda: kpu.forward(task, data[:-1]))
kpu.deinit(task)
show_exc("load missing", lambda: kpu.load(WORKDIR + "/no_such.kmodel"), upto="[Errno 2]")
show_exc("load type", lambda: kpu.load(1.5))

print("RESULT", "FAIL" if FAILS else "PASS", len(FAILS))

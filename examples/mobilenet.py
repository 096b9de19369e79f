# SPDX-License-Identifier: Apache-2.0
# ImageNet-1000 classification with MobileNet v1 0.75 (Maix-EMC, kmodel v3) on a 224x224 window of the camera.
#   python -m openkpu run examples/mobilenet.py --sd folder_with_mbnetv1.kmodel_and_labels.txt --frames tiger224.bmp
try:
    import sensor, image, lcd, time
except ImportError as e:  # plain Python on a PC: the camera, LCD and image modules are the board's
    raise SystemExit("examples/mobilenet.py is a MaixPy board script (%s): run it with\n"
                     "  openkpu run examples/mobilenet.py\n"
                     "(options in its first lines), which provides the board's modules" % e)
import KPU as kpu

lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.RGB565)
sensor.set_framesize(sensor.QVGA)
sensor.set_windowing((224, 224))
sensor.run(1)

f = open("/sd/labels.txt", "r")
labels = f.readlines()
f.close()

task = kpu.load("/sd/mbnetv1.kmodel")
clock = time.clock()

while True:
    clock.tick()
    img = sensor.snapshot()
    fmap = kpu.forward(task, img)
    plist = fmap[:]
    pmax = max(plist)
    max_index = plist.index(pmax)
    label = labels[max_index].strip()
    print("top1: %d %s %.3f" % (max_index, label, pmax))
    a = lcd.display(img)
    lcd.draw_string(0, 224, "%.2f: %s" % (pmax, label), lcd.RED, lcd.WHITE)
    print("fps:", clock.fps())

a = kpu.deinit(task)

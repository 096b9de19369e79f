# SPDX-License-Identifier: Apache-2.0
# Handwritten digits with MaixPy's MNIST model, showing the KPU feature maps of its first layers (kpu.set_layers +
# kpu.fmap), then the 10 softmax probabilities of the whole network.
#   python -m openkpu run examples/mnist_fmap.py --sd folder_with_mnist.kmodel --frames digits/ --lcd-out out/
# Frames: a dark digit on light paper, roughly centred.
try:
    import sensor, image, lcd, time
except ImportError as e:  # plain Python on a PC: the camera, LCD and image modules are the board's
    raise SystemExit("examples/mnist_fmap.py is a MaixPy board script (%s): run it with\n"
                     "  openkpu run examples/mnist_fmap.py\n"
                     "(options in its first lines), which provides the board's modules" % e)
import KPU as kpu

lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.GRAYSCALE)
sensor.set_framesize(sensor.QVGA)
sensor.set_windowing((224, 224))
sensor.run(1)

task = kpu.load("/sd/mnist.kmodel")
info = kpu.netinfo(task)
print("layers:", len(info))

while True:
    img = sensor.snapshot()
    img28 = img.copy().resize(28, 28)
    img28.invert()                   # the model wants white strokes on black
    img28.pix_to_ai()
    # layer 0: 16 maps of 14x14, layer 1: 32 maps of 7x7
    kpu.set_layers(task, 1)
    fmap = kpu.forward(task, img28)
    print("layer 0 fmap: %dx%dx%d" % (fmap.w(), fmap.h(), fmap.ch()))
    # the 16 maps as a 4x4 mosaic in the top-left corner of the frame
    img.draw_rectangle(0, 0, 4 * 15 + 1, 4 * 15 + 1, color=255, fill=True)
    for ch in range(min(16, fmap.ch())):
        m = kpu.fmap(fmap, ch)
        ox, oy = 1 + (ch % 4) * 15, 1 + (ch // 4) * 15
        for y in range(m.height()):
            for x in range(m.width()):
                img.set_pixel(ox + x, oy + y, m.get_pixel(x, y))
    kpu.fmap_free(fmap)
    kpu.set_layers(task, 2)
    fmap = kpu.forward(task, img28)
    print("layer 1 fmap: %dx%dx%d" % (fmap.w(), fmap.h(), fmap.ch()))
    kpu.fmap_free(fmap)
    kpu.set_layers(task, len(info))   # the whole network
    fmap = kpu.forward(task, img28)
    plist = fmap[:]
    pmax = max(plist)
    digit = plist.index(pmax)
    print("digit: %d prob: %.3f" % (digit, pmax))
    a = lcd.display(img)
    lcd.draw_string(100, 200, "%d: %.3f" % (digit, pmax), lcd.WHITE, lcd.BLACK)

# SPDX-License-Identifier: Apache-2.0
# 20-class tiny-YOLOv2 (VOC: person, dog, car, ...) from the SD card, kmodel v3 compiled by nncase v0.1.0-rc5.
#   python -m openkpu run examples/yolo_voc20.py --sd folder_with_yolo.kmodel --frames dog.bmp --lcd-out out/
try:
    import sensor, image, lcd, time
except ImportError as e:  # plain Python on a PC: the camera, LCD and image modules are the board's
    raise SystemExit("examples/yolo_voc20.py is a MaixPy board script (%s): run it with\n"
                     "  openkpu run examples/yolo_voc20.py\n"
                     "(options in its first lines), which provides the board's modules" % e)
import KPU as kpu

classes = ['aeroplane', 'bicycle', 'bird', 'boat', 'bottle', 'bus', 'car', 'cat', 'chair', 'cow', 'diningtable',
           'dog', 'horse', 'motorbike', 'person', 'pottedplant', 'sheep', 'sofa', 'train', 'tvmonitor']
anchor = (1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52)

lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.RGB565)
sensor.set_framesize(sensor.QVGA)
sensor.run(1)

task = kpu.load("/sd/yolo.kmodel")
a = kpu.init_yolo2(task, 0.5, 0.2, 5, anchor)
clock = time.clock()

while True:
    clock.tick()
    img = sensor.snapshot()
    code = kpu.run_yolo2(task, img)
    labels = []
    if code:
        for i in code:
            img.draw_rectangle(i.rect(), color=(0, 255, 0))
            labels.append((i.x(), i.y(), classes[i.classid()], i.value()))
            print("%s %.3f rect=%s" % (classes[i.classid()], i.value(), i.rect()))
    a = lcd.display(img)
    for x, y, name, value in labels:
        lcd.draw_string(x, y, "%s %.2f" % (name, value), lcd.RED, lcd.WHITE)
    print("fps:", clock.fps())

a = kpu.deinit(task)

# SPDX-License-Identifier: Apache-2.0
# Face detection with MaixPy's YOLOv2 face model burned at flash 0x300000 (face_model_at_0x300000.kfpkg).
# A MaixPy board script, unchanged on a PC:
#   python -m openkpu run examples/face_detect.py --flash face_model_at_0x300000.kfpkg --frames photos/ --lcd-out out/
try:
    import sensor, image, lcd, time
except ImportError as e:  # plain Python on a PC: the camera, LCD and image modules are the board's
    raise SystemExit("examples/face_detect.py is a MaixPy board script (%s): run it with\n"
                     "  openkpu run examples/face_detect.py\n"
                     "(options in its first lines), which provides the board's modules" % e)
import KPU as kpu

lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.RGB565)
sensor.set_framesize(sensor.QVGA)
sensor.set_hmirror(0)
sensor.run(1)
sensor.skip_frames(10)

task = kpu.load(0x300000)
anchor = (1.889, 2.5245, 2.9465, 3.94056, 3.99987, 5.3658, 5.155437, 6.92275, 6.718375, 9.01025)
a = kpu.init_yolo2(task, 0.5, 0.3, 5, anchor)
clock = time.clock()

while True:
    clock.tick()
    img = sensor.snapshot()
    objects = kpu.run_yolo2(task, img)
    if objects:
        for obj in objects:
            print(obj)
            img.draw_rectangle(obj.rect(), color=(255, 0, 0), thickness=2)
    else:
        print("no face")
    a = lcd.display(img)
    lcd.draw_string(0, 0, "faces: %d" % (len(objects) if objects else 0), lcd.RED, lcd.BLACK)
    print("fps:", clock.fps())

a = kpu.deinit(task)

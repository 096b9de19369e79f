# SPDX-License-Identifier: Apache-2.0
# 20-class object detection with MaixPy's class API (`from maix import KPU`), written to the calls of the
# `maix.KPU` documentation (MaixPy's maix.KPU page; CanMV's "voc20_object_detect" demo uses the same calls):
# KPU(), load_kmodel, init_yolo2 with keyword arguments, pix_to_ai, run_with_output, regionlayer_yolo2, deinit.
# The documented demo uses a 320x256 model (net_h=256, layer_h=8); this one runs nncase's 20-class tiny-YOLOv2
# (../shared/testdata/yolo2_voc20_v3_nncase_rc5/yolo.kmodel: 320x240 input, a 10x7 grid, its own anchors).
#   openkpu run examples/maix_kpu_voc20.py --sd ../shared/testdata/yolo2_voc20_v3_nncase_rc5 \
#       --frames ../shared/testdata/yolo2_voc20_v3_nncase_rc5/dog.bmp --lcd-out out/
import gc
import time
try:
    import image
    import lcd
    import sensor
except ImportError as e:  # plain Python on a PC: the camera, LCD and image modules are the board's
    raise SystemExit("examples/maix_kpu_voc20.py is a MaixPy board script (%s): run it with\n"
                     "  openkpu run examples/maix_kpu_voc20.py\n"
                     "(options in its first lines), which provides the board's modules" % e)
from maix import KPU

names = ("aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "diningtable",
         "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor")
anchor = (1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52)

lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.RGB565)
sensor.set_framesize(sensor.QVGA)
sensor.skip_frames(time=1000)
clock = time.clock()

net_img = image.Image(size=(320, 240))  # the model's input; a bigger model input would be padded here
detector = KPU()
detector.load_kmodel("/sd/yolo.kmodel")
detector.init_yolo2(anchor, anchor_num=len(anchor) // 2, img_w=320, img_h=240, net_w=320, net_h=240,
                    layer_w=10, layer_h=7, threshold=0.5, nms_value=0.2, classes=len(names))

while True:
    clock.tick()
    img = sensor.snapshot()
    net_img.draw_image(img, 0, 0)
    net_img.pix_to_ai()
    detector.run_with_output(net_img)
    found = detector.regionlayer_yolo2()
    for x, y, w, h, classid, prob in found:
        print("%s %.3f rect=%s" % (names[classid], prob, (x, y, w, h)))
        img.draw_rectangle(x, y, w, h, color=(0, 255, 0))
        img.draw_string(x, y, "%s %.2f" % (names[classid], prob), color=(255, 255, 255), scale=1.5)
    img.draw_string(0, 0, "%2.1ffps" % clock.fps(), color=(0, 60, 128), scale=2.0)
    lcd.display(img)
    gc.collect()

detector.deinit()

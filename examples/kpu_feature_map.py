# MaixPy's "运行特征图" (feature map) example, from the KPU page of MaixPy's documentation
# (sipeed/MaixPy_DOC, docs/maixpy/zh/api_reference/Maix/kpu.md; wiki.sipeed.com/soft/maixpy/zh/api_reference/Maix/kpu.html),
# for MaixPy's face model flashed at 0x300000 (face_model_at_0x300000.kfpkg). It shows the 16 channels of layer 3
# (80x60 each) as a 4x4 mosaic on the LCD.
#
# Two lines differ from the published text, because the published text runs neither on MaixPy nor here:
# 1. its last two lines are indented with a tab plus spaces ("\t   lcd.display(img_lcd)", "   \tkpu.fmap_free(fmap)"):
#    MicroPython (a tab reaches the next multiple of 8 columns) stops with "IndentationError: unexpected indent",
#    CPython with a TabError. Here both are indented with spaces, inside the while loop.
# 2. it calls kpu.forward(task, img, index) to stop after layer `index`; MaixPy's forward reads its third argument
#    as an OUTPUT index (Maix_kpu.c passes it to sipeed_kpu_get_output), so on this one-output model that line is
#    an error on MaixPy too. The documented intent is written with set_layers (run layers 0..index) before the loop.
# Run it: openkpu run examples/kpu_feature_map.py --flash face_model_at_0x300000.kfpkg --frames photo.jpg \
#             --lcd-out out/ --max-frames 1
import sensor
import image
import lcd
import KPU as kpu
index=3  
lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.RGB565)
sensor.set_framesize(sensor.QVGA)
sensor.run(1)
task=kpu.load(0x300000)
img=image.Image()
info=kpu.netinfo(task)
layer=info[index]
w=layer.wo()
h=layer.ho()
num=int(320*240/w/h)
list=[None]*num
x_step=int(320/w)
y_step=int(240/h)
img_lcd=image.Image()
kpu.set_layers(task, index + 1)  # openkpu: was kpu.forward(task,img,index) in the loop (see above)
while True:
    img=sensor.snapshot()
    fmap=kpu.forward(task,img)  # openkpu: was kpu.forward(task,img,index)
    for i in range(0,num):
        list[i]=kpu.fmap(fmap,i)
    for i in range(0,num):
        list[i].stretch(64,255)
    for i in range(0,num):
        a=img_lcd.draw_image(list[i],((i%x_step)*w,(int(i/x_step))*h))
    lcd.display(img_lcd)  # openkpu: re-indented (was "\t   lcd.display(img_lcd)")
    kpu.fmap_free(fmap)  # openkpu: re-indented (was "   \tkpu.fmap_free(fmap)")

# SPDX-License-Identifier: Apache-2.0
# Classify handwritten digits from the camera with openkpu's own model (scripts/train_digits.py), as a board script.
# On the board: copy models/digits.kmodel to /sd/models/. On a PC:
#   python -m openkpu run digits_demo.py --frames FRAMES --lcd-out OUT     (run from the examples/ folder)
try:
    import sensor, image, lcd
except ImportError as e:  # plain Python on a PC: the camera, LCD and image modules are the board's
    raise SystemExit("examples/digits_demo.py is a MaixPy board script (%s): run it with\n"
                     "  openkpu run examples/digits_demo.py\n"
                     "(options in its first lines), which provides the board's modules" % e)
import KPU as kpu

lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.GRAYSCALE)
sensor.set_framesize(sensor.QVGA)
sensor.set_windowing((240, 240))  # the square in the middle of the frame
sensor.run(1)

task = kpu.load("models/digits.kmodel")
print(kpu.memory(task)["sram_total"], "bytes of K210 SRAM for the model")

while True:
    img = sensor.snapshot()
    small = img.copy().resize(8, 8)  # the model's input: 8x8 grayscale
    small.pix_to_ai()
    probs = kpu.forward(task, small)[:]
    digit = probs.index(max(probs))
    print("digit: %d  p=%.3f" % (digit, probs[digit]))
    img.draw_string(8, 8, "%d  %.2f" % (digit, probs[digit]), color=255, scale=4)
    lcd.display(img)

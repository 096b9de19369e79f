# SPDX-License-Identifier: Apache-2.0
# MaixPy's `image` module: the same pixels from the PC's module (Pillow) and the board's (firmware/k210/modules/image.py
# over the native `_image`, frozen into the K210, host and RV64 MicroPython builds alike): construction from bytes,
# bilinear resize (down and up), grayscale, invert, crop, rectangles, set/get_pixel and the KPU's planar buffer.
import image


def show(tag, img):
    w, h, c, ai = img.ai_data()
    print(tag, img.width(), img.height(), c, len(ai), fnv(bytes(ai)), img.get_pixel(0, 0),
          img.get_pixel(img.width() - 1, img.height() - 1))


W, H = 23, 17  # odd sizes: resize's edge weights and rows that are not a multiple of anything
rgb = bytes([(x * 7 + y * 13 + c * 29) & 0xFF for y in range(H) for x in range(W) for c in range(3)])
img = image.Image(width=W, height=H, format=image.RGB565, data=rgb)
show("rgb", img)
check(img.get_pixel(5, 3) == ((5 * 7 + 3 * 13) & 0xFF, (5 * 7 + 3 * 13 + 29) & 0xFF, (5 * 7 + 3 * 13 + 58) & 0xFF),
      "get_pixel reads the row-major RGB bytes it was given")

small = img.copy().resize(9, 7)
show("resize down", small)
big = img.copy().resize(40, 31)
show("resize up", big)
check(img.width() == W and img.height() == H, "copy() leaves the original alone")

gray = img.copy().to_grayscale()
show("grayscale", gray)
gray.invert()
show("inverted", gray)
check(gray.get_pixel(2, 2) == 255 - img.copy().to_grayscale().get_pixel(2, 2), "invert is 255 - value")

crop = img.copy((4, 3, 10, 8))
show("crop", crop)
check(crop.get_pixel(0, 0) == img.get_pixel(4, 3), "crop starts at its roi")

canvas = image.Image(width=W, height=H, format=image.RGB565)
canvas.draw_rectangle(2, 3, 12, 7, color=(200, 40, 90), thickness=2)
canvas.draw_rectangle(15, 1, 6, 5, color=(10, 250, 30), fill=True)
canvas.draw_rectangle(-3, 10, 8, 20, color=(90, 90, 255))  # clipped at the edges
canvas.set_pixel(22, 16, (1, 2, 3))
show("rectangles", canvas)
check(canvas.get_pixel(22, 16) == (1, 2, 3), "set_pixel")

g = image.Image(width=W, height=H, format=image.GRAYSCALE, data=bytes([(i * 11) & 0xFF for i in range(W * H)]))
show("gray data", g)
show("gray resize", g.resize(12, 20))

print("RESULT", "FAIL" if FAILS else "PASS", len(FAILS))

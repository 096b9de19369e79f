# SPDX-License-Identifier: Apache-2.0
"""image: MaixPy's `image` module on the openkpu K210 firmware (frozen; the per-pixel work is C in `_image`).

An Image is planar u8: one w*h plane for GRAYSCALE, R, G and B planes for colour (RGB888). That is the KPU's input
layout, so `pix_to_ai()` has nothing to convert and a camera frame (which the DVP writes as planes) goes to the
KPU as it is; the LCD converts to RGB565 when it sends the pixels. Same protocol as the PC's `image`:
`img.ai_data()` -> (width, height, channels, planar buffer).

Image(path) (BMP: 24/32-bit, 8-bit paletted), Image(size=(w, h)), Image(width=, height=, format=, data=), Image()
(320x240 like MaixPy); width/height/format/size, resize (Pillow's bilinear, bit for bit), to_grayscale, invert,
copy(roi)/cut/crop, get_pixel/set_pixel, draw_rectangle/string/line/cross/circle/image, stretch, strech_char,
pix_to_ai, ai_data, to_bytes, save (BMP).
"""
import struct
import _image

BINARY = 1
GRAYSCALE = 2
RGB565 = 3


def _gray_of(color):
    # Pillow's int(round(0.299 R + 0.587 G + 0.114 B)), as the PC's image module draws gray with colour tuples
    return int(round(0.299 * color[0] + 0.587 * color[1] + 0.114 * color[2]))


def _read_bmp(path):
    f = open(path, "rb")
    try:
        data = f.read()
    finally:
        f.close()
    if len(data) < 54 or data[0:2] != b"BM":
        raise ValueError("image: %s is not a BMP file (only BMP is supported by this firmware)" % path)
    off = struct.unpack_from("<I", data, 10)[0]
    w, h, planes, bpp, comp = struct.unpack_from("<iiHHI", data, 18)
    if comp not in (0, 3) or bpp not in (8, 24, 32):
        raise ValueError("image: %s: unsupported BMP (%d bits, compression %d)" % (path, bpp, comp))
    top_down = h < 0
    h = -h if h < 0 else h
    stride = ((w * bpp + 31) // 32) * 4
    pal = None
    gray = False
    if bpp == 8:
        hdr = struct.unpack_from("<I", data, 14)[0]
        ncol = struct.unpack_from("<I", data, 46)[0] or 256
        pal = data[14 + hdr:14 + hdr + 4 * ncol]
        gray = True
        for i in range(ncol):
            if not (pal[4 * i] == pal[4 * i + 1] == pal[4 * i + 2]):
                gray = False
                break
    buf = bytearray(w * h * (1 if gray else 3))
    _image.bmp_rows(data, off, stride, w, h, bpp, top_down, pal, gray, buf)
    return w, h, 1 if gray else 3, buf


class Image(object):
    def __init__(self, path=None, width=None, height=None, format=RGB565, data=None, copy_to_fb=False, size=None):
        if size is not None:
            if width is not None or height is not None:
                raise ValueError("Image(): give size=(w, h) or width= and height=, not both")
            width, height = int(size[0]), int(size[1])
        if path is not None:
            self._w, self._h, self._c, self._buf = _read_bmp(path)
            return
        if width is None and height is None:  # MaixPy: Image() is a blank frame of the LCD's size
            width, height = 320, 240
        if width is None or height is None:
            raise ValueError("Image() needs a path, or width= and height=")
        w, h = int(width), int(height)
        if w <= 0 or h <= 0:
            raise ValueError("Image size must be positive, got %dx%d" % (w, h))
        self._w, self._h = w, h
        self._c = 1 if format == GRAYSCALE else 3
        n = w * h
        if data is None:
            self._buf = bytearray(self._c * n)
        elif self._c == 1:
            if len(data) != n:
                raise ValueError("Image data for %dx%d GRAYSCALE must be %d bytes, got %d" % (w, h, n, len(data)))
            self._buf = bytearray(data)
        else:
            if len(data) != 3 * n:
                raise ValueError("Image data for %dx%d RGB888 must be %d bytes, got %d" % (w, h, 3 * n, len(data)))
            self._buf = bytearray(3 * n)
            _image.planar(data, 3, self._buf)

    @staticmethod
    def _wrap(w, h, c, buf):
        """An Image over an existing planar buffer (no copy)."""
        img = Image(width=1, height=1, format=GRAYSCALE)
        img._w, img._h, img._c, img._buf = w, h, c, buf
        return img

    # -- properties ---------------------------------------------------------------------------------------------
    def width(self):
        return self._w

    def height(self):
        return self._h

    def format(self):
        return GRAYSCALE if self._c == 1 else RGB565

    def size(self):
        """Frame-buffer bytes as on MaixPy: w*h for grayscale, w*h*2 for RGB565."""
        return self._w * self._h * (1 if self._c == 1 else 2)

    def planes(self):
        """openkpu: the planar buffer itself (no copy)."""
        return self._buf

    # -- transforms (in place, return self, like MaixPy) ---------------------------------------------------------
    def resize(self, w, h):
        w, h = int(w), int(h)
        if w <= 0 or h <= 0:
            raise ValueError("resize: size must be positive, got %dx%d" % (w, h))
        out = bytearray(self._c * w * h)
        _image.resize(self._buf, self._c, self._w, self._h, out, w, h)
        self._buf, self._w, self._h = out, w, h
        return self

    def to_grayscale(self, copy=False):
        target = self.copy() if copy else self
        if target._c == 3:
            g = bytearray(target._w * target._h)
            _image.gray(target._buf, g)
            target._buf, target._c = g, 1
        return target

    def invert(self):
        _image.invert(self._buf)
        return self

    def copy(self, roi=None, copy_to_fb=False):
        if roi is None:
            return Image._wrap(self._w, self._h, self._c, bytearray(self._buf))
        x, y, w, h = [int(v) for v in roi[:4]]
        if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > self._w or y + h > self._h:
            raise ValueError("roi (%d, %d, %d, %d) is not inside the %dx%d image" % (x, y, w, h, self._w, self._h))
        out = bytearray(self._c * w * h)
        _image.crop(self._buf, self._c, self._w, self._h, x, y, w, h, out)
        return Image._wrap(w, h, self._c, out)

    def cut(self, x, y, w, h):
        return self.copy((x, y, w, h))

    crop = cut

    def stretch(self, min_value=0, max_value=255):
        lo, hi = int(min_value), int(max_value)
        if not (0 <= lo < hi <= 255):
            raise ValueError("stretch(min, max) needs 0 <= min < max <= 255, got (%d, %d)" % (lo, hi))
        _image.stretch(self._buf, lo, hi)
        return self

    def strech_char(self, de_dark=1):
        g = self if self._c == 1 else self.to_grayscale(copy=True)
        lo, hi = min(g._buf), max(g._buf)
        if hi > lo:
            _image.stretch(self._buf, lo, hi)
        return self

    # -- pixels --------------------------------------------------------------------------------------------------
    def _check_xy(self, x, y):
        if not (0 <= x < self._w and 0 <= y < self._h):
            raise IndexError("pixel (%d, %d) outside %dx%d image" % (x, y, self._w, self._h))

    def get_pixel(self, x, y):
        """An int for grayscale, an (r, g, b) tuple for colour."""
        self._check_xy(x, y)
        i = y * self._w + x
        if self._c == 1:
            return self._buf[i]
        n = self._w * self._h
        return (self._buf[i], self._buf[n + i], self._buf[2 * n + i])

    def _color(self, color):
        if self._c == 1:
            if isinstance(color, (tuple, list)):
                return (_gray_of(color),)
            return (int(color) & 0xFF,)
        if isinstance(color, (tuple, list)):
            return (int(color[0]), int(color[1]), int(color[2]))
        return (int(color) & 0xFF,) * 3

    def set_pixel(self, x, y, color):
        self._check_xy(x, y)
        c = self._color(color)
        i = y * self._w + x
        n = self._w * self._h
        for k in range(self._c):
            self._buf[k * n + i] = c[k]
        return self

    # -- drawing (C) ---------------------------------------------------------------------------------------------
    def draw_rectangle(self, x, y=None, w=None, h=None, color=(255, 255, 255), thickness=1, fill=False):
        if isinstance(x, (tuple, list)):
            x, y, w, h = x[:4]
        _image.rect(self._buf, self._c, self._w, self._h, int(x), int(y), int(w), int(h), self._color(color),
                    0 if fill else max(1, int(thickness)))
        return self

    def draw_string(self, x, y, text, color=(255, 255, 255), scale=1, x_spacing=0, y_spacing=0, mono_space=True):
        _image.text(self._buf, self._c, self._w, self._h, int(x), int(y), str(text), self._color(color),
                    max(1, int(scale + 0.5)))
        return self

    def draw_line(self, x0, y0=None, x1=None, y1=None, color=(255, 255, 255), thickness=1):
        if isinstance(x0, (tuple, list)):
            x0, y0, x1, y1 = x0[:4]
        _image.line(self._buf, self._c, self._w, self._h, int(x0), int(y0), int(x1), int(y1), self._color(color),
                    int(thickness))
        return self

    def draw_cross(self, x, y, color=(255, 255, 255), size=5, thickness=1):
        x, y, s, c = int(x), int(y), int(size), self._color(color)
        _image.line(self._buf, self._c, self._w, self._h, x - s, y, x + s, y, c, int(thickness))
        _image.line(self._buf, self._c, self._w, self._h, x, y - s, x, y + s, c, int(thickness))
        return self

    def draw_circle(self, x, y=None, radius=None, color=(255, 255, 255), thickness=1, fill=False):
        if isinstance(x, (tuple, list)):
            x, y, radius = x[:3]
        _image.circle(self._buf, self._c, self._w, self._h, int(x), int(y), int(radius), self._color(color),
                      int(thickness), fill)
        return self

    def draw_image(self, img, x, y=None, x_scale=1.0, y_scale=1.0, mask=None, alpha=256):
        if isinstance(x, (tuple, list)):
            if y is not None or len(x) != 2:
                raise TypeError("draw_image(img, x, y) or draw_image(img, (x, y)), got x=%r, y=%r" % (x, y))
            x, y = x
        elif y is None:
            raise TypeError("draw_image(img, x, y) needs y (or give the point as a tuple: draw_image(img, (x, y)))")
        src = img
        if (x_scale, y_scale) != (1.0, 1.0):
            src = img.copy().resize(max(1, int(img._w * x_scale)), max(1, int(img._h * y_scale)))
        _image.blit(self._buf, self._c, self._w, self._h, src._buf, src._c, src._w, src._h, int(x), int(y))
        return self

    # -- AI buffer and I/O ---------------------------------------------------------------------------------------
    def pix_to_ai(self):
        """The pixels are already the planar AI layout: nothing to convert."""
        return None

    def ai_data(self):
        return (self._w, self._h, self._c, self._buf)

    def to_bytes(self):
        """Row-major pixels: 1 byte each for grayscale, RGB888 triples for colour."""
        if self._c == 1:
            return bytes(self._buf)
        out = bytearray(len(self._buf))
        _image.interleaved(self._buf, 3, out)
        return bytes(out)

    def save(self, path, quality=95):
        """Write a 24-bit BMP (whatever the extension)."""
        w, h = self._w, self._h
        stride = ((w * 24 + 31) // 32) * 4
        rgb = self.to_bytes() if self._c == 3 else None
        f = open(path, "wb")
        try:
            f.write(b"BM" + struct.pack("<IHHI", 54 + stride * h, 0, 0, 54))
            f.write(struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, stride * h, 2835, 2835, 0, 0))
            for y in range(h - 1, -1, -1):
                row = bytearray(stride)
                for x in range(w):
                    if rgb is None:
                        v = self._buf[y * w + x]
                        row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = v
                    else:
                        i = 3 * (y * w + x)
                        row[3 * x], row[3 * x + 1], row[3 * x + 2] = rgb[i + 2], rgb[i + 1], rgb[i]
                f.write(row)
        finally:
            f.close()
        return self

    def __repr__(self):
        return '{"w":%d, "h":%d, "type":"%s", "size":%d}' % (
            self._w, self._h, "grayscale" if self._c == 1 else "rgb565", self.size())

# SPDX-License-Identifier: Apache-2.0
"""image: a small pure-Python stand-in for MaixPy's `image` module, frozen into the openkpu MicroPython firmware.

Same protocol as the host (Pillow) version `openkpu.board.image`, so `KPU.py` works with either:
`img.ai_data()` -> (width, height, channels, planar_bytes).

Supports: `Image(path)` for BMP files (24/32-bit, 8-bit paletted), `Image(width=, height=, format=GRAYSCALE|RGB565,
data=None)` (data: row-major, 1 byte per pixel for GRAYSCALE, RGB888 triples otherwise), `width()`, `height()`,
`format()`, `size()`, `resize(w, h)` (NEAREST neighbour: the Pillow version is bilinear), `to_grayscale()`,
`invert()`, `copy()`, `get_pixel()`, `set_pixel()`, `draw_rectangle()`, `draw_string()` (a box per character: no
font), `pix_to_ai()`, `ai_data()`, `to_bytes()`, `save(path)` (BMP).

Pixels are stored as planes (R, G, B or one gray plane): the AI buffer the KPU reads is the planes concatenated.
Colour is RGB888 (the board's frame buffer is RGB565), grayscale conversion is Pillow's integer formula.
"""
import struct

BINARY = 1
GRAYSCALE = 2
RGB565 = 3


def _gray(r, g, b):
    # Pillow's ImagingConvert RGB -> L (ITU-R 601-2 luma, 16-bit fixed point, rounded)
    return (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16


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
    n = w * h
    if bpp == 8:
        hdr = struct.unpack_from("<I", data, 14)[0]
        ncol = struct.unpack_from("<I", data, 46)[0] or 256
        pal = data[14 + hdr:14 + hdr + 4 * ncol]
        gray = True
        for i in range(ncol):
            if not (pal[4 * i] == pal[4 * i + 1] == pal[4 * i + 2]):
                gray = False
                break
        planes_out = [bytearray(n)] if gray else [bytearray(n), bytearray(n), bytearray(n)]
    else:
        planes_out = [bytearray(n), bytearray(n), bytearray(n)]
    step = bpp // 8
    for y in range(h):
        src = off + (y if top_down else h - 1 - y) * stride
        row = data[src:src + w * step]
        base = y * w
        if bpp == 8:
            if len(planes_out) == 1:
                p = planes_out[0]
                for x in range(w):
                    p[base + x] = pal[4 * row[x]]
            else:
                r, g, b = planes_out
                for x in range(w):
                    k = 4 * row[x]
                    b[base + x] = pal[k]
                    g[base + x] = pal[k + 1]
                    r[base + x] = pal[k + 2]
        else:
            r, g, b = planes_out
            i = 0
            for x in range(w):
                b[base + x] = row[i]
                g[base + x] = row[i + 1]
                r[base + x] = row[i + 2]
                i += step
    return w, h, planes_out


class Image(object):
    """An image: `Image(path)` (BMP) or `Image(width=, height=, format=, data=)`."""

    def __init__(self, path=None, width=None, height=None, format=RGB565, data=None, copy_to_fb=False):
        self._ai = None
        if path is not None:
            self._w, self._h, self._planes = _read_bmp(path)
            return
        if width is None or height is None:
            raise ValueError("Image() needs a path, or width= and height=")
        w, h = int(width), int(height)
        if w <= 0 or h <= 0:
            raise ValueError("Image size must be positive, got %dx%d" % (w, h))
        self._w, self._h = w, h
        n = w * h
        if format == GRAYSCALE:
            if data is None:
                self._planes = [bytearray(n)]
            else:
                if len(data) != n:
                    raise ValueError("Image data for %dx%d GRAYSCALE must be %d bytes, got %d" % (w, h, n, len(data)))
                self._planes = [bytearray(data)]
        else:
            self._planes = [bytearray(n), bytearray(n), bytearray(n)]
            if data is not None:
                if len(data) != 3 * n:
                    raise ValueError("Image data for %dx%d RGB888 must be %d bytes, got %d"
                                     % (w, h, 3 * n, len(data)))
                r, g, b = self._planes
                for i in range(n):
                    r[i] = data[3 * i]
                    g[i] = data[3 * i + 1]
                    b[i] = data[3 * i + 2]

    # -- properties -------------------------------------------------------------------------------------------
    def width(self):
        return self._w

    def height(self):
        return self._h

    def format(self):
        return GRAYSCALE if len(self._planes) == 1 else RGB565

    def size(self):
        """Frame-buffer bytes as on the board: w*h for grayscale, w*h*2 for RGB565."""
        return self._w * self._h * (1 if len(self._planes) == 1 else 2)

    # -- in-place transforms (return self, like MaixPy) --------------------------------------------------------
    def resize(self, w, h):
        w, h = int(w), int(h)
        xmap = [(x * self._w) // w for x in range(w)]
        out = []
        for p in self._planes:
            q = bytearray(w * h)
            for y in range(h):
                src = ((y * self._h) // h) * self._w
                dst = y * w
                for x in range(w):
                    q[dst + x] = p[src + xmap[x]]
            out.append(q)
        self._planes, self._w, self._h = out, w, h
        self._ai = None
        return self

    def to_grayscale(self, copy=False):
        target = self.copy() if copy else self
        if len(target._planes) == 3:
            r, g, b = target._planes
            n = target._w * target._h
            q = bytearray(n)
            for i in range(n):
                q[i] = _gray(r[i], g[i], b[i])
            target._planes = [q]
            target._ai = None
        return target

    def invert(self):
        for p in self._planes:
            for i in range(len(p)):
                p[i] = 255 - p[i]
        self._ai = None
        return self

    def copy(self):
        img = Image.__new__(Image)
        img._ai = None
        img._w, img._h = self._w, self._h
        img._planes = [bytearray(p) for p in self._planes]
        return img

    # -- pixels ----------------------------------------------------------------------------------------------
    def _check_xy(self, x, y):
        if not (0 <= x < self._w and 0 <= y < self._h):
            raise IndexError("pixel (%d, %d) outside %dx%d image" % (x, y, self._w, self._h))

    def get_pixel(self, x, y):
        """An int for grayscale, an (r, g, b) tuple for colour."""
        self._check_xy(x, y)
        i = y * self._w + x
        if len(self._planes) == 1:
            return self._planes[0][i]
        return (self._planes[0][i], self._planes[1][i], self._planes[2][i])

    def _color(self, color):
        if len(self._planes) == 1:
            if isinstance(color, (tuple, list)):
                return (_gray(int(color[0]), int(color[1]), int(color[2])),)
            return (int(color),)
        if isinstance(color, (tuple, list)):
            return (int(color[0]), int(color[1]), int(color[2]))
        return (int(color),) * 3

    def _put(self, x, y, c):
        if 0 <= x < self._w and 0 <= y < self._h:
            i = y * self._w + x
            for k in range(len(self._planes)):
                self._planes[k][i] = c[k]

    def set_pixel(self, x, y, color):
        self._check_xy(x, y)
        self._put(x, y, self._color(color))
        self._ai = None
        return self

    def draw_rectangle(self, x, y, w=None, h=None, color=(255, 255, 255), thickness=1, fill=False):
        if isinstance(x, (tuple, list)):
            x, y, w, h = x[:4]
        x, y, w, h = int(x), int(y), int(w), int(h)
        c = self._color(color)
        t = max(1, int(thickness))
        for yy in range(y, y + h):
            for xx in range(x, x + w):
                if fill or xx < x + t or xx >= x + w - t or yy < y + t or yy >= y + h - t:
                    self._put(xx, yy, c)
        self._ai = None
        return self

    def draw_string(self, x, y, text, color=(255, 255, 255), scale=1, **kwargs):
        """No font in this firmware: each character is drawn as an outlined 8x10 box (times scale)."""
        s = max(1, int(scale))
        for k in range(len(str(text))):
            self.draw_rectangle(int(x) + 8 * s * k, int(y), 7 * s, 10 * s, color=color)
        return self

    # -- AI buffer and I/O ------------------------------------------------------------------------------------
    def pix_to_ai(self):
        """Build the planar u8 AI buffer (RGB: R, G, B planes; grayscale: one plane)."""
        if len(self._planes) == 1:
            self._ai = bytes(self._planes[0])
        else:
            self._ai = bytes(self._planes[0]) + bytes(self._planes[1]) + bytes(self._planes[2])

    def ai_data(self):
        """The protocol `KPU.forward` uses: (width, height, channels, planar bytes), always current."""
        if self._ai is None:
            self.pix_to_ai()
        return (self._w, self._h, len(self._planes), self._ai)

    def to_bytes(self):
        """Row-major pixels: 1 byte each for grayscale, RGB888 triples for colour."""
        if len(self._planes) == 1:
            return bytes(self._planes[0])
        r, g, b = self._planes
        n = self._w * self._h
        out = bytearray(3 * n)
        for i in range(n):
            out[3 * i] = r[i]
            out[3 * i + 1] = g[i]
            out[3 * i + 2] = b[i]
        return bytes(out)

    def save(self, path, quality=95):
        """Write a 24-bit BMP (whatever the extension)."""
        w, h = self._w, self._h
        stride = ((w * 24 + 31) // 32) * 4
        f = open(path, "wb")
        try:
            f.write(b"BM" + struct.pack("<IHHI", 54 + stride * h, 0, 0, 54))
            f.write(struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, stride * h, 2835, 2835, 0, 0))
            gray = len(self._planes) == 1
            for y in range(h - 1, -1, -1):
                row = bytearray(stride)
                base = y * w
                for x in range(w):
                    if gray:
                        v = self._planes[0][base + x]
                        row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = v
                    else:
                        row[3 * x] = self._planes[2][base + x]
                        row[3 * x + 1] = self._planes[1][base + x]
                        row[3 * x + 2] = self._planes[0][base + x]
                f.write(row)
        finally:
            f.close()
        return self

    def __repr__(self):
        return '{"w":%d, "h":%d, "type":"%s", "size":%d}' % (
            self._w, self._h, "grayscale" if len(self._planes) == 1 else "rgb565", self.size())

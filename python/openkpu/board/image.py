# SPDX-License-Identifier: Apache-2.0
"""A host (PC) stand-in for MaixPy's `image` module, backed by Pillow.

How `import image` resolves
---------------------------
MaixPy scripts say `import image`. This file is installed as `openkpu/board/image.py`; it becomes the top-level
`image` module when the `openkpu/board` directory is on `sys.path`, e.g.

    import os, sys, openkpu.board
    sys.path.insert(0, os.path.dirname(openkpu.board.__file__))
    import image                      # -> this file

or `PYTHONPATH=$(python -c "import openkpu.board, os; print(os.path.dirname(openkpu.board.__file__))")`.
Nothing named `image` is installed at top level on purpose (the name is too generic). The `KPU` shim itself does
`try: import image / except ImportError: from openkpu.board import image`, so `kpu.fmap()` works either way.

What it supports
----------------
`Image(path)` (BMP / JPEG / PNG / anything Pillow reads), `Image(size=(w, h))`, `Image(width=, height=,
format=GRAYSCALE|RGB565, data=None)` (a blank image, or one made from raw row-major pixels: 1 byte per pixel for GRAYSCALE, RGB888 triples
for RGB565), `width()`, `height()`, `format()`, `size()`, `resize(w, h)` (in place, returns self as in MaixPy;
bilinear), `to_grayscale()`, `invert()` (in place, return self), `pix_to_ai()`, `save(path)`, `get_pixel(x, y)`,
`set_pixel(x, y, color)`, `draw_rectangle(x, y, w, h, color=, thickness=, fill=)`, `draw_image(img, x, y)` or
`draw_image(img, (x, y))`, `stretch(min, max)`, `mean(size)`, `copy()`, `to_bytes()`.

Differences from the board, on purpose:
- Colour images hold full RGB888 (the board's frame buffer is RGB565: 5/6/5 bits). A photo loaded here gives the
  model the same bytes nncase's examples feed it, not the RGB565-rounded ones a camera frame would.
- The AI buffer (`pix_to_ai()`: planar R, G, B planes of w*h bytes each, or one plane for grayscale) is rebuilt
  automatically whenever the image changed, so forgetting `pix_to_ai()` after `resize()` cannot feed the model a
  stale buffer, which is a classic MaixPy pitfall. Calling `pix_to_ai()` is still accepted.

The protocol the `KPU` shim uses: `img.ai_data()` -> `(width, height, channels, planar_bytes)`.
"""
from PIL import Image as _PIL
from PIL import ImageDraw as _Draw

# Pixel formats (values as in OpenMV / MaixPy's sensor module).
BINARY = 1
GRAYSCALE = 2
RGB565 = 3

__all__ = ["Image", "BINARY", "GRAYSCALE", "RGB565"]

try:
    _BILINEAR = _PIL.Resampling.BILINEAR
except AttributeError:  # Pillow < 9.1
    _BILINEAR = _PIL.BILINEAR


def _planar(pil):
    """The AI buffer: planar CHW u8 (R plane, G plane, B plane; or one grayscale plane), top row first."""
    if pil.mode == "L":
        return pil.tobytes()
    return b"".join(band.tobytes() for band in pil.split())


class Image(object):
    """An image: `Image(path)` or `Image(width=, height=, format=, data=)`."""

    def __init__(self, path=None, width=None, height=None, format=RGB565, data=None, copy_to_fb=False, size=None):
        self._ai = None
        if size is not None:  # MaixPy: image.Image(size=(w, h)), a blank frame of that size
            if width is not None or height is not None:
                raise ValueError("Image(): give size=(w, h) or width= and height=, not both")
            try:
                width, height = [int(v) for v in size]
            except (TypeError, ValueError):
                raise ValueError("Image(size=...) takes a (width, height) pair, got %r" % (size,))
        if path is not None:
            pil = _PIL.open(path)
            pil.load()
            if pil.mode in ("L", "1", "I;16", "I", "F"):
                pil = pil.convert("L")
            else:
                pil = pil.convert("RGB")
        else:
            if width is None and height is None:  # MaixPy: Image() is a blank frame of the LCD's size
                width, height = 320, 240
            if width is None or height is None:
                raise ValueError("Image() needs a path, or width= and height=")
            width, height = int(width), int(height)
            if width <= 0 or height <= 0:
                raise ValueError("Image size must be positive, got %dx%d" % (width, height))
            mode = "L" if format == GRAYSCALE else "RGB"
            if data is None:
                pil = _PIL.new(mode, (width, height), 0)
            else:
                data = bytes(data)
                need = width * height * (1 if mode == "L" else 3)
                if len(data) != need:
                    raise ValueError("Image data for %dx%d %s must be %d bytes, got %d" % (
                        width, height, "GRAYSCALE" if mode == "L" else "RGB888", need, len(data)))
                pil = _PIL.frombytes(mode, (width, height), data)
        self._pil = pil

    @classmethod
    def from_pil(cls, pil):
        """Wrap a Pillow image (converted to L or RGB)."""
        img = cls.__new__(cls)
        img._ai = None
        img._pil = pil.convert("L" if pil.mode in ("L", "1") else "RGB")
        return img

    # -- properties --------------------------------------------------------------------------------------------
    def width(self):
        return self._pil.width

    def height(self):
        return self._pil.height

    def format(self):
        return GRAYSCALE if self._pil.mode == "L" else RGB565

    def size(self):
        """Frame-buffer bytes as on the board: w*h for grayscale, w*h*2 for RGB565."""
        return self._pil.width * self._pil.height * (1 if self._pil.mode == "L" else 2)

    def pil(self):
        """The underlying Pillow image (host extension)."""
        return self._pil

    # -- in-place transforms (return self, like MaixPy) ------------------------------------------------------
    def _changed(self):
        self._ai = None

    def resize(self, w, h):
        self._pil = self._pil.resize((int(w), int(h)), _BILINEAR)
        self._changed()
        return self

    def to_grayscale(self, copy=False):
        target = self.copy() if copy else self
        target._pil = target._pil.convert("L")
        target._changed()
        return target

    def invert(self):
        from PIL import ImageOps
        self._pil = ImageOps.invert(self._pil)
        self._changed()
        return self

    def copy(self, roi=None):
        """A new image: the whole frame, or the (x, y, w, h) region `roi` (MaixPy's copy/cut/crop)."""
        if roi is None:
            return Image.from_pil(self._pil.copy())
        x, y, w, h = [int(v) for v in roi[:4]]
        if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > self._pil.width or y + h > self._pil.height:
            raise ValueError("roi (%d, %d, %d, %d) is not inside the %dx%d image" % (
                x, y, w, h, self._pil.width, self._pil.height))
        return Image.from_pil(self._pil.crop((x, y, x + w, y + h)))

    def cut(self, x, y, w, h):
        return self.copy((x, y, w, h))

    crop = cut

    def rotation_corr(self, x_rotation=0.0, y_rotation=0.0, z_rotation=0.0, x_translation=0.0, y_translation=0.0,
                      zoom=1.0):
        """In-plane rotation (z, degrees), translation and zoom about the centre; x/y tilts are not modelled."""
        if x_rotation or y_rotation:
            raise NotImplementedError("rotation_corr: only z_rotation, translation and zoom on the PC")
        w, h = self._pil.size
        pil = self._pil.rotate(-float(z_rotation), resample=_BILINEAR, translate=(x_translation, y_translation))
        if zoom != 1.0:
            zw, zh = max(1, int(w * zoom)), max(1, int(h * zoom))
            pil = pil.resize((zw, zh), _BILINEAR)
            canvas = _PIL.new(pil.mode, (w, h), 0)
            canvas.paste(pil, ((w - zw) // 2, (h - zh) // 2))
            pil = canvas
        self._pil = pil
        self._changed()
        return self

    # -- pixels --------------------------------------------------------------------------------------------------
    def _check_xy(self, x, y):
        if not (0 <= x < self._pil.width and 0 <= y < self._pil.height):
            raise IndexError("pixel (%d, %d) outside %dx%d image" % (x, y, self._pil.width, self._pil.height))

    def get_pixel(self, x, y):
        """An int for grayscale, an (r, g, b) tuple for colour."""
        self._check_xy(x, y)
        return self._pil.getpixel((x, y))

    def set_pixel(self, x, y, color):
        self._check_xy(x, y)
        self._pil.putpixel((x, y), self._color(color))
        self._changed()
        return self

    def _color(self, color):
        if self._pil.mode == "L":
            if isinstance(color, (tuple, list)):
                r, g, b = color[:3]
                return int(round(0.299 * r + 0.587 * g + 0.114 * b))
            return int(color)
        if isinstance(color, (tuple, list)):
            return tuple(int(c) for c in color[:3])
        return (int(color),) * 3

    def draw_rectangle(self, x, y=None, w=None, h=None, color=(255, 255, 255), thickness=1, fill=False):
        """draw_rectangle(x, y, w, h, ...) or draw_rectangle(rect_tuple, ...), as in MaixPy."""
        if isinstance(x, (tuple, list)):
            x, y, w, h = x[:4]
        draw = _Draw.Draw(self._pil)
        c = self._color(color)
        box = [int(x), int(y), int(x) + int(w) - 1, int(y) + int(h) - 1]
        if fill:
            draw.rectangle(box, fill=c)
        else:
            draw.rectangle(box, outline=c, width=max(1, int(thickness)))
        self._changed()
        return self

    def draw_string(self, x, y, text, color=(255, 255, 255), scale=1, x_spacing=0, y_spacing=0, mono_space=True):
        from PIL import ImageFont
        try:
            font = ImageFont.load_default(size=max(8, int(10 * scale)))
        except TypeError:  # Pillow < 10.1 has one fixed-size default font
            font = ImageFont.load_default()
        _Draw.Draw(self._pil).text((int(x), int(y)), str(text), fill=self._color(color), font=font)
        self._changed()
        return self

    def draw_cross(self, x, y, color=(255, 255, 255), size=5, thickness=1):
        d, c, x, y, s = _Draw.Draw(self._pil), self._color(color), int(x), int(y), int(size)
        d.line([x - s, y, x + s, y], fill=c, width=max(1, int(thickness)))
        d.line([x, y - s, x, y + s], fill=c, width=max(1, int(thickness)))
        self._changed()
        return self

    def draw_circle(self, x, y=None, radius=None, color=(255, 255, 255), thickness=1, fill=False):
        """draw_circle(x, y, radius, ...) or draw_circle((x, y, radius), ...)."""
        if isinstance(x, (tuple, list)):
            x, y, radius = x[:3]
        r = int(radius)
        box = [int(x) - r, int(y) - r, int(x) + r, int(y) + r]
        d, c = _Draw.Draw(self._pil), self._color(color)
        if fill:
            d.ellipse(box, fill=c)
        else:
            d.ellipse(box, outline=c, width=max(1, int(thickness)))
        self._changed()
        return self

    def draw_line(self, x0, y0=None, x1=None, y1=None, color=(255, 255, 255), thickness=1):
        if isinstance(x0, (tuple, list)):
            x0, y0, x1, y1 = x0[:4]
        _Draw.Draw(self._pil).line([int(x0), int(y0), int(x1), int(y1)], fill=self._color(color),
                                   width=max(1, int(thickness)))
        self._changed()
        return self

    def draw_image(self, img, x, y=None, x_scale=1.0, y_scale=1.0, mask=None, alpha=256):
        """Paste img at (x, y): draw_image(img, x, y, ...) or draw_image(img, (x, y), ...), as in MaixPy."""
        if isinstance(x, (tuple, list)):
            if y is not None or len(x) != 2:
                raise TypeError("draw_image(img, x, y) or draw_image(img, (x, y)), got x=%r, y=%r" % (x, y))
            x, y = x
        elif y is None:
            raise TypeError("draw_image(img, x, y) needs y (or give the point as a tuple: draw_image(img, (x, y)))")
        src = img.pil()
        if (x_scale, y_scale) != (1.0, 1.0):
            src = src.resize((max(1, int(src.width * x_scale)), max(1, int(src.height * y_scale))), _BILINEAR)
        self._pil.paste(src.convert(self._pil.mode), (int(x), int(y)))
        self._changed()
        return self

    def strech_char(self, de_dark=1):
        """MaixPy's contrast stretch (the MNIST demo calls it): map the darkest..brightest pixel to 0..255."""
        gray = self._pil.convert("L")
        lo, hi = gray.getextrema()
        if hi > lo:
            self._pil = self._pil.point(lambda v: max(0, min(255, (v - lo) * 255 // (hi - lo))))
        self._changed()
        return self

    def stretch(self, min_value=0, max_value=255):
        """MaixPy's contrast stretch (its feature-map example calls it on kpu.fmap channels): pixel values
        min_value..max_value are spread linearly over 0..255, values below become 0, above 255. In place."""
        lo, hi = int(min_value), int(max_value)
        if not (0 <= lo < hi <= 255):
            raise ValueError("stretch(min, max) needs 0 <= min < max <= 255, got (%d, %d)" % (lo, hi))
        span = hi - lo
        self._pil = self._pil.point(lambda v: 0 if v <= lo else (255 if v >= hi else (v - lo) * 255 // span))
        self._changed()
        return self

    def mean(self, size, threshold=False, offset=0, invert=False, mask=None):
        """OpenMV/MaixPy's mean filter, in place: each pixel becomes the mean of the (2*size+1)^2 box around it
        (edges replicated). With threshold=True it is an adaptive threshold: a pixel is set (255) when it is
        above the local mean minus offset (below, with invert=True), else cleared."""
        from PIL import ImageFilter
        size = int(size)
        if size < 0:
            raise ValueError("mean(size): size must be >= 0, got %d" % size)
        if mask is not None:
            raise NotImplementedError("mean(mask=...) is not supported on the PC")
        if size == 0:
            return self
        blurred = self._pil.filter(ImageFilter.BoxBlur(size))
        if threshold:
            gray, local = self._pil.convert("L"), blurred.convert("L")
            src, avg = gray.tobytes(), local.tobytes()
            off = int(offset)
            on = bytes(255 if ((p > m - off) != bool(invert)) else 0 for p, m in zip(src, avg))
            pil = _PIL.frombytes("L", gray.size, on)
            self._pil = pil if self._pil.mode == "L" else pil.convert("RGB")
        else:
            self._pil = blurred
        self._changed()
        return self

    # -- AI buffer and I/O --------------------------------------------------------------------------------------
    def pix_to_ai(self):
        """Build the planar u8 AI buffer (RGB: R, G, B planes; grayscale: one plane)."""
        self._ai = _planar(self._pil)

    def ai_data(self):
        """The protocol `KPU.forward` uses: (width, height, channels, planar bytes), always current."""
        if self._ai is None:
            self.pix_to_ai()
        return (self._pil.width, self._pil.height, 1 if self._pil.mode == "L" else 3, self._ai)

    def to_bytes(self):
        """Row-major pixels: 1 byte each for grayscale, RGB888 triples for colour."""
        return self._pil.tobytes()

    def save(self, path, quality=95):
        fmt = None
        if str(path).lower().endswith((".jpg", ".jpeg")):
            self._pil.save(path, quality=quality)
            return self
        self._pil.save(path, fmt)
        return self

    def __repr__(self):
        return '{"w":%d, "h":%d, "type":"%s", "size":%d}' % (
            self._pil.width, self._pil.height, "grayscale" if self._pil.mode == "L" else "rgb565", self.size())

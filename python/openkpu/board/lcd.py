# SPDX-License-Identifier: Apache-2.0
"""A host (PC) stand-in for MaixPy's `lcd` module: the screen is a 320x240 RGB frame buffer saved as PNGs.

Becomes the top-level `lcd` module when `openkpu/board` is on `sys.path` (`python -m openkpu run` does that).
Each `display(img)` starts a new screen frame: the previous one is written to `<out>/lcd_00001.png`,
`lcd_00002.png`, ... (the last one when the runner ends, or by `lcd.host_flush()`), so text drawn with
`lcd.draw_string` after `display` lands in the same PNG, as on the board. The output folder comes from the runner
(`--lcd-out DIR`), `lcd.host_set_output(dir)`, or the environment variable `OPENKPU_LCD_OUT`; with none of them the
frames are kept in memory only (`host_screen()` returns the current one as a Pillow image).

`display(img)`: an image smaller than the screen is centred, a larger one centre-cropped (`roi=` picks the part of
the image, `oft=` the screen position). Colours: RGB565 ints (lcd.RED...) or (r, g, b) tuples.
"""
import os

from PIL import Image as _PIL

try:
    from openkpu.runner import FramesExhausted
except ImportError:  # pragma: no cover - openkpu not importable (board folder copied alone)
    class FramesExhausted(BaseException):
        """The run is over."""


class LcdFramesCapped(FramesExhausted):
    """More LCD frames than the cap (`--max-lcd-frames`) would be written: the runner ends the script."""
from PIL import ImageDraw as _Draw

BLACK = 0x0000
NAVY = 0x000F
DARKGREEN = 0x03E0
DARKCYAN = 0x03EF
MAROON = 0x7800
PURPLE = 0x780F
OLIVE = 0x7BE0
LIGHTGREY = 0xC618
DARKGREY = 0x7BEF
BLUE = 0x001F
GREEN = 0x07E0
CYAN = 0x07FF
RED = 0xF800
MAGENTA = 0xF81F
YELLOW = 0xFFE0
WHITE = 0xFFFF
ORANGE = 0xFD20
GREENYELLOW = 0xAFE5
PINK = 0xF81F

XY_RLUD = 0x00
YX_RLUD = 0x20
XY_LRUD = 0x40
YX_LRUD = 0x60
XY_RLDU = 0x80
YX_RLDU = 0xA0
XY_LRDU = 0xC0
YX_LRDU = 0xE0

_W, _H = 320, 240


class _State(object):
    def __init__(self):
        self.rotation = 0
        self.mirror = False
        self.invert = False
        self.screen = None
        self.dirty = False
        self.out_dir = os.environ.get("OPENKPU_LCD_OUT") or None
        self.count = 0
        self.inited = False
        self.bg = (0, 0, 0)
        self.max_files = None  # cap on the PNGs written to out_dir (None: no cap)
        self.viewer = None  # callable(pil_image, final=False): a live window (the runner's --show)


_st = _State()


def _rgb(color):
    """RGB565 int or (r, g, b) -> (r, g, b)."""
    if isinstance(color, (tuple, list)):
        return tuple(int(c) for c in color[:3])
    c = int(color) & 0xFFFF
    r, g, b = (c >> 11) & 0x1F, (c >> 5) & 0x3F, c & 0x1F
    return ((r * 255 + 15) // 31, (g * 255 + 31) // 63, (b * 255 + 15) // 31)


def _size():
    return (_H, _W) if _st.rotation in (1, 3) else (_W, _H)


def _screen():
    if _st.screen is None or _st.screen.size != _size():
        _st.screen = _PIL.new("RGB", _size(), _st.bg)
    return _st.screen


# -- host side (not in MaixPy) ------------------------------------------------------------------------------------
def host_set_output(out_dir, max_files=None):
    """Write screen frames as PNGs into out_dir (created if needed); None keeps them in memory only. With
    max_files, starting frame max_files + 1 raises LcdFramesCapped (the runner ends the script and says so)."""
    host_flush()
    _st.out_dir = os.fspath(out_dir) if out_dir is not None else None
    if _st.out_dir:
        os.makedirs(_st.out_dir, exist_ok=True)
    _st.count = 0
    _st.max_files = max_files if max_files else None


def host_set_viewer(viewer):
    """viewer(pil_image, final=False) is called with the screen each time it changes (None: no viewer)."""
    _st.viewer = viewer


def _show(final=False):
    if _st.viewer is not None and _st.screen is not None:
        _st.viewer(_st.screen, final)


def host_flush():
    """Write the current screen frame if it changed since it was last written. Returns its path or None."""
    if not _st.dirty or _st.screen is None:
        return None
    _st.dirty = False
    if not _st.out_dir:
        return None
    path = os.path.join(_st.out_dir, "lcd_%05d.png" % _st.count)
    _st.screen.save(path)
    return path


def host_screen():
    """The current screen contents as a Pillow RGB image (a copy)."""
    return _screen().copy()


def host_frame_count():
    return _st.count


def _touch():
    if not _st.dirty:
        _st.dirty = True
        if _st.count == 0:
            _st.count = 1


def _new_frame():
    host_flush()
    if _st.out_dir and _st.max_files is not None and _st.count >= _st.max_files:
        raise LcdFramesCapped("stopped after writing %d LCD frame(s) to %s, the cap (--max-lcd-frames): bound the "
                              "run with --max-frames N, or raise the cap (--max-lcd-frames 0 lifts it)"
                              % (_st.count, _st.out_dir))
    _st.count += 1
    _st.dirty = True


# -- MaixPy API -----------------------------------------------------------------------------------------------------
def init(type=1, freq=15000000, color=BLACK, invert=0, lcd_type=0, width=None, height=None):
    global _W, _H
    if width and height:
        _W, _H = int(width), int(height)
    _st.inited = True
    _st.invert = bool(invert)
    _st.bg = _rgb(color)
    _st.screen = None
    _screen()
    return None


def deinit():
    host_flush()
    _st.inited = False


def width():
    return _size()[0]


def height():
    return _size()[1]


def rotation(direction=None):
    if direction is None:
        return _st.rotation
    direction = int(direction) & 3
    if direction != _st.rotation:
        host_flush()
        _st.rotation = direction
        _st.screen = None
    return _st.rotation


def mirror(enable=None):
    if enable is None:
        return _st.mirror
    _st.mirror = bool(enable)
    return _st.mirror


def direction(dir_value=None):
    return 0


def set_backlight(level=None):
    return None


def get_backlight():
    return 100


def freq(value=None):
    return 15000000


def clear(color=BLACK):
    _new_frame()
    _st.screen = _PIL.new("RGB", _size(), _rgb(color))
    _show()


def fill_rectangle(x, y, w, h, color):
    _Draw.Draw(_screen()).rectangle([int(x), int(y), int(x) + int(w) - 1, int(y) + int(h) - 1], fill=_rgb(color))
    _touch()
    _show()


def draw_string(x, y, text, color=WHITE, bg_color=BLACK):
    """Text at (x, y) on the screen (8x16-ish default font) over a bg_color box, as MaixPy's lcd.draw_string."""
    scr = _screen()
    draw = _Draw.Draw(scr)
    text = str(text)
    try:
        box = draw.textbbox((int(x), int(y)), text)
        draw.rectangle([box[0], int(y), box[2], int(y) + 15], fill=_rgb(bg_color))
    except AttributeError:  # Pillow < 8
        pass
    draw.text((int(x), int(y) + 2), text, fill=_rgb(color))
    _touch()
    _show()


def display(img, roi=None, oft=None):
    """Show an image.Image (or a Pillow image): centred if smaller than the screen, centre-cropped if larger."""
    pil = img.pil() if hasattr(img, "pil") else img
    if roi is not None:
        rx, ry, rw, rh = (int(v) for v in roi)
        pil = pil.crop((rx, ry, rx + rw, ry + rh))
    pil = pil.convert("RGB")
    sw, sh = _size()
    _new_frame()
    scr = _PIL.new("RGB", (sw, sh), _st.bg)
    if oft is not None:
        ox, oy = int(oft[0]), int(oft[1])
    else:
        ox, oy = (sw - pil.width) // 2, (sh - pil.height) // 2
    scr.paste(pil, (ox, oy))
    if _st.mirror:
        from PIL import ImageOps
        scr = ImageOps.mirror(scr)
    _st.screen = scr
    _show()

# SPDX-License-Identifier: Apache-2.0
"""lcd: MaixPy's LCD module on the openkpu K210 firmware (frozen), over `_lcd` (ST7789 on SPI0 octal in C).

init(type=1, freq=15000000, color=BLACK, invert=0, lcd_type=0, width=320, height=240, pins=None), deinit,
width, height, rotation(0..3), mirror, clear(color), fill_rectangle, draw_string(x, y, text, color, bg_color)
(8x16 font), display(img, roi=None, oft=None): an image smaller than the screen is centred (larger: centre-cropped)
and the rest of the screen is filled with the init colour, so each display() is one whole-screen frame (as
`openkpu run`'s LCD). Pins default to the Maix pads (CS IO36 SS3, RST IO37 GPIOHS30, DCX IO38 GPIOHS31, WR IO39);
`init(pins=(cs, rst, dcx, wr, rst_gpiohs, dcx_gpiohs))` overrides them.
"""
import _lcd

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

# MADCTL per rotation: 0 is MaixPy's default landscape (YX_RLDU)
_MADCTL = (YX_RLDU, XY_RLUD, YX_LRUD, XY_LRDU)


class _State(object):
    def __init__(self):
        self.inited = False
        self.w, self.h = 320, 240
        self.rotation = 0
        self.mirror = False
        self.bg = BLACK


_st = _State()


def _c565(color):
    if isinstance(color, (tuple, list)):
        r, g, b = int(color[0]), int(color[1]), int(color[2])
        return ((r >> 3) << 11) | ((g >> 2) << 5) | (b >> 3)
    return int(color) & 0xFFFF


def _size():
    return (_st.h, _st.w) if _st.rotation in (1, 3) else (_st.w, _st.h)


def _need_init():
    if not _st.inited:
        raise RuntimeError("lcd: call lcd.init() first")


def init(type=1, freq=15000000, color=BLACK, invert=0, lcd_type=0, width=None, height=None, pins=None):
    if width and height:
        _st.w, _st.h = int(width), int(height)
    _lcd.init(int(freq), _MADCTL[_st.rotation] ^ (0x40 if _st.mirror else 0), bool(invert), pins)
    _st.inited = True
    _st.bg = _c565(color)
    # the screen's RAM is random after a reset: clear it (in two halves: a whole-screen write is what display() and
    # clear() do, and the virtual board starts a new LCD frame there, as openkpu run's lcd.init starts none)
    w, h = _size()
    _lcd.fill(0, 0, w, h // 2, _st.bg)
    _lcd.fill(0, h // 2, w, h - h // 2, _st.bg)
    return None


def deinit():
    _st.inited = False


def width():
    return _size()[0]


def height():
    return _size()[1]


def rotation(direction=None):
    if direction is None:
        return _st.rotation
    _st.rotation = int(direction) & 3
    if _st.inited:
        _lcd.madctl(_MADCTL[_st.rotation] ^ (0x40 if _st.mirror else 0))
    return _st.rotation


def mirror(enable=None):
    if enable is None:
        return _st.mirror
    _st.mirror = bool(enable)
    if _st.inited:
        _lcd.madctl(_MADCTL[_st.rotation] ^ (0x40 if _st.mirror else 0))
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
    _need_init()
    w, h = _size()
    _lcd.fill(0, 0, w, h, _c565(color))


def fill_rectangle(x, y, w, h, color):
    _need_init()
    sw, sh = _size()
    x, y, w, h = int(x), int(y), int(w), int(h)
    x0, y0, x1, y1 = max(0, x), max(0, y), min(sw, x + w), min(sh, y + h)
    if x1 > x0 and y1 > y0:
        _lcd.fill(x0, y0, x1 - x0, y1 - y0, _c565(color))


def draw_string(x, y, text, color=WHITE, bg_color=BLACK):
    _need_init()
    sw, sh = _size()
    _lcd.text(int(x), int(y), str(text), _c565(color), _c565(bg_color), sw, sh)


def display(img, roi=None, oft=None):
    _need_init()
    if roi is not None:
        img = img.copy(roi)
    sw, sh = _size()
    w, h = img.width(), img.height()
    if oft is not None:
        ox, oy = int(oft[0]), int(oft[1])
    else:
        ox, oy = (sw - w) // 2, (sh - h) // 2
    c = 1 if img.format() == 2 else 3
    _lcd.display(img.planes(), c, w, h, ox, oy, sw, sh, _st.bg)

# SPDX-License-Identifier: Apache-2.0
"""sensor: MaixPy's camera module on the openkpu K210 firmware (frozen), over `_camera` (DVP + SCCB in C).

reset(freq=24000000, set_regs=True, dual_buff=False, choice=None, pins=None), set_pixformat(RGB565 | GRAYSCALE),
set_framesize(QVGA, QQVGA, ...), set_windowing((w, h) | (x, y, w, h)), set_hmirror, set_vflip, run, snapshot,
skip_frames(n=None, time=None), width/height, get_id, __read_reg/__write_reg. Camera pins default to the Maix pads
(IO40 SDA ... IO47 PCLK); `reset(pins=(sda, scl, rst, vsync, pwdn, href, xclk, pclk))` overrides them.

Sensors: OV2640 (Maix Bit/Go), GC0328 (Maix Dock), OV5640, configured with MaixPy's register tables at reset();
frames up to 800x600 on the OV2640 and 640x480 on the others; no set_windowing on the OV5640 (nor in MaixPy).

snapshot() returns the same Image every time (MaixPy too): one frame buffer, allocated when the size or format
changes, never per frame. The buffer is planar (R, G, B planes, or one Y plane): the DVP writes it, the KPU reads
it as it is. skip_frames lets the sensor stream without converting frames.
"""
import image
import time
import _camera

BINARY = image.BINARY
GRAYSCALE = image.GRAYSCALE
RGB565 = image.RGB565
YUV422 = 4
BAYER = 5
JPEG = 6

_SIZES = [
    ("QQCIF", 88, 72), ("QCIF", 176, 144), ("CIF", 352, 288), ("QQSIF", 88, 60), ("QSIF", 176, 120),
    ("SIF", 352, 240), ("QQQQVGA", 40, 30), ("QQQVGA", 80, 60), ("QQVGA", 160, 120), ("QVGA", 320, 240),
    ("VGA", 640, 480), ("HQQQVGA", 80, 40), ("HQQVGA", 160, 80), ("HQVGA", 240, 160), ("B64X32", 64, 32),
    ("B64X64", 64, 64), ("B128X64", 128, 64), ("B128X128", 128, 128), ("B240X240", 240, 240),
    ("LCD", 128, 160), ("QQVGA2", 128, 160), ("WVGA", 720, 480), ("WVGA2", 752, 480), ("SVGA", 800, 600),
    ("XGA", 1024, 768), ("SXGA", 1280, 1024), ("UXGA", 1600, 1200),
]
_FRAMESIZES = {}
_g = globals()
for _i in range(len(_SIZES)):
    _g[_SIZES[_i][0]] = _i + 1
    _FRAMESIZES[_i + 1] = (_SIZES[_i][1], _SIZES[_i][2])
del _g, _i

OV2640 = 0x2642
OV5640 = 0x5640
OV7740 = 0x7742
GC0328 = 0x9d
GC2145 = 0x2145

_TIMEOUT_MS = 2000
_MAX_SIZE = {OV2640: (800, 600, "the OV2640's SVGA mode"), GC0328: (640, 480, "the GC0328's array"),
             OV5640: (640, 480, "the OV5640's VGA mode")}


class _State(object):
    def __init__(self):
        self.id = None
        self.pixformat = RGB565
        self.framesize = QVGA  # noqa: F821
        self.window = None
        self.hmirror = False
        self.vflip = False
        self.dirty = True
        self.frame = None  # the one Image snapshot() returns


_st = _State()


def _need_reset():
    if _st.id is None:
        raise RuntimeError("sensor: call sensor.reset() first")


def reset(freq=24000000, set_regs=True, dual_buff=False, choice=None, pins=None):
    sid = _camera.init(int(freq), pins, bool(set_regs))
    if not sid:
        raise OSError("sensor: no camera answered on SCCB (OV2640 at 0x60, OV5640 at 0x78, GC0328 at 0x42): "
                      "is it plugged in?")
    _st.id = sid
    _st.pixformat = RGB565
    _st.framesize = QVGA  # noqa: F821
    _st.window = None
    _st.hmirror = _st.vflip = False
    _st.dirty = True
    return None


def set_pixformat(fmt):
    if fmt not in (RGB565, GRAYSCALE):
        raise ValueError("sensor.set_pixformat: RGB565 or GRAYSCALE on this firmware, got %r" % (fmt,))
    _st.pixformat = fmt
    _st.dirty = True
    return True


def get_pixformat():
    return _st.pixformat


def set_framesize(size):
    if size not in _FRAMESIZES:
        raise ValueError("sensor.set_framesize: unknown frame size %r" % (size,))
    w, h = _FRAMESIZES[size]
    mw, mh, mode = _MAX_SIZE.get(_st.id, _MAX_SIZE[OV2640])
    if w > mw or h > mh:
        raise ValueError("sensor.set_framesize: %dx%d is larger than %s on this firmware (%dx%d)"
                         % (w, h, mode, mw, mh))
    _st.framesize = size
    _st.window = None
    _st.dirty = True
    return True


def get_framesize():
    return _st.framesize


def _window_rect():
    fw, fh = _FRAMESIZES[_st.framesize]
    if _st.window is None:
        return 0, 0, fw, fh
    if len(_st.window) == 2:
        w, h = _st.window
        return (fw - w) // 2, (fh - h) // 2, w, h
    return tuple(_st.window)


def set_windowing(roi):
    roi = tuple(int(v) for v in roi)
    if len(roi) not in (2, 4):
        raise ValueError("sensor.set_windowing: need (w, h) or (x, y, w, h), got %r" % (roi,))
    fw, fh = _FRAMESIZES[_st.framesize]
    w, h = roi[-2:]
    x, y = ((fw - w) // 2, (fh - h) // 2) if len(roi) == 2 else roi[:2]
    if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > fw or y + h > fh:
        raise ValueError("sensor.set_windowing: %r does not fit the %dx%d frame" % (roi, fw, fh))
    _st.window = roi
    _st.dirty = True
    return True


def get_windowing():
    return _window_rect()


def width():
    return _window_rect()[2]


def height():
    return _window_rect()[3]


def set_hmirror(enable):
    _st.hmirror = bool(enable)
    _st.dirty = True
    return True


def set_vflip(enable):
    _st.vflip = bool(enable)
    _st.dirty = True
    return True


def get_hmirror():
    return _st.hmirror


def get_vflip():
    return _st.vflip


def run(enable):
    return True


def _apply():
    _need_reset()
    if not _st.dirty:
        return
    fw, fh = _FRAMESIZES[_st.framesize]
    x, y, w, h = _window_rect()
    gray = _st.pixformat == GRAYSCALE
    _camera.configure(gray, fw, fh, x, y, w, h, _st.hmirror, _st.vflip)
    c = 1 if gray else 3
    f = _st.frame
    if f is None or f._w != w or f._h != h or f._c != c:
        _st.frame = None  # the old buffer is garbage before the new one is allocated
        _st.frame = image.Image._wrap(w, h, c, bytearray(c * w * h))
    _st.dirty = False


def snapshot():
    """The next camera frame (the same Image object each time, refilled)."""
    _apply()
    f = _st.frame
    if len(f._buf) != f._c * f._w * f._h:  # the script resized the frame itself: back to the camera's buffer
        f._buf = bytearray(f._c * f._w * f._h)
    _camera.capture(f._buf, f._w, f._h, f._c == 1, _TIMEOUT_MS)
    return f


def skip_frames(n=None, time=None):
    """Let the sensor stream (auto exposure settles) without converting frames: n frames, or `time` ms."""
    _apply()
    if time is not None:
        import time as _t
        end = _t.ticks_add(_t.ticks_ms(), int(time))
        while _t.ticks_diff(end, _t.ticks_ms()) > 0:
            _camera.wait_frames(1, _TIMEOUT_MS)
        return None
    _camera.wait_frames(10 if n is None else int(n), _TIMEOUT_MS * (10 if n is None else max(1, int(n))))
    return None


def get_id():
    _need_reset()
    return _st.id


def __write_reg(addr, value):  # noqa: N802 (MaixPy's name)
    _need_reset()
    _camera.write_reg(addr, value)


def __read_reg(addr):  # noqa: N802
    _need_reset()
    return _camera.read_reg(addr)


def _noop(*args, **kwargs):
    return True


set_contrast = set_brightness = set_saturation = set_gainceiling = set_quality = set_colorbar = _noop
set_auto_gain = set_auto_exposure = set_auto_whitebal = set_jb_quality = set_lens_correction = _noop
shutdown = sleep = _noop

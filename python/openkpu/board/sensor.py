# SPDX-License-Identifier: Apache-2.0
"""A host (PC) stand-in for MaixPy's `sensor` (camera) module.

Becomes the top-level `sensor` module when `openkpu/board` is on `sys.path` (`python -m openkpu run` does that).
Frames come from files instead of a camera, configured by the runner (`--frames PATH`) or, outside it, by the
environment variable `OPENKPU_FRAMES`, or by `sensor.host_set_frames(path)`:

- an image file (one frame),
- a folder of images (sorted by name: .bmp .jpg .jpeg .png .gif .pgm .ppm .tif .tiff .webp),
- a video file (.mp4 .avi .mov .mkv .webm ...; needs OpenCV: `pip install 'openkpu[video]'`),
- a webcam: an index (`0`) or a device (`/dev/video0`), also through OpenCV; it never runs out, so bound the run
  with `max_frames` (the runner's `--max-frames`).

`snapshot()` turns each source picture into what the camera would give:
1. the frame size (`set_framesize`): a picture already of the window size (step 2) or of the frame size is used
   as is, pixel for pixel (so the nncase / MaixPy test pictures reach the model unchanged); any other picture is
   scaled to cover the frame and centre-cropped, like a lens;
2. the window (`set_windowing((w, h))` or `(x, y, w, h)`): MaixPy's semantics, a centred crop of the frame for
   `(w, h)`;
3. `set_hmirror` / `set_vflip`, then `set_pixformat` (GRAYSCALE converts).
When the frames run out (or `max_frames` were delivered) `snapshot()` raises `openkpu.runner.FramesExhausted`,
which derives from BaseException so that a script's `except Exception:` does not swallow it; the runner catches it
and ends the script cleanly. `skip_frames()` consumes nothing here (every source picture is processed).
"""
import os

import image

try:
    from openkpu.runner import FramesExhausted
except ImportError:  # pragma: no cover - openkpu not importable (board folder copied alone)
    class FramesExhausted(BaseException):
        """The frame source has no more frames."""


class BadFrame(FramesExhausted):
    """A frame file that is not an image (a BaseException, like NoFrames: the runner reports it, exit 2)."""


class NoFrames(FramesExhausted):
    """snapshot() without any frame source configured (a BaseException: a script's `except Exception` loop
    cannot spin on it forever)."""

# Pixel formats (as in `image`).
BINARY = image.BINARY
GRAYSCALE = image.GRAYSCALE
RGB565 = image.RGB565
YUV422 = 4
BAYER = 5
JPEG = 6

# Frame sizes: (name, width, height), values in OpenMV / MaixPy order.
_SIZES = [
    ("QQCIF", 88, 72), ("QCIF", 176, 144), ("CIF", 352, 288), ("QQSIF", 88, 60), ("QSIF", 176, 120),
    ("SIF", 352, 240), ("QQQQVGA", 40, 30), ("QQQVGA", 80, 60), ("QQVGA", 160, 120), ("QVGA", 320, 240),
    ("VGA", 640, 480), ("HQQQVGA", 80, 40), ("HQQVGA", 160, 80), ("HQVGA", 240, 160), ("B64X32", 64, 32),
    ("B64X64", 64, 64), ("B128X64", 128, 64), ("B128X128", 128, 128), ("B240X240", 240, 240),
    ("LCD", 128, 160), ("QQVGA2", 128, 160), ("WVGA", 720, 480), ("WVGA2", 752, 480), ("SVGA", 800, 600),
    ("XGA", 1024, 768), ("SXGA", 1280, 1024), ("UXGA", 1600, 1200),
]
_FRAMESIZES = {}
for _i, (_name, _w, _h) in enumerate(_SIZES, 1):
    globals()[_name] = _i
    _FRAMESIZES[_i] = (_w, _h)
del _i, _name, _w, _h

OV2640 = 0x2642
OV5640 = 0x5640
OV7740 = 0x7742
GC0328 = 0x9d
GC2145 = 0x2145

IMAGE_EXT = (".bmp", ".jpg", ".jpeg", ".png", ".gif", ".pgm", ".ppm", ".tif", ".tiff", ".webp")
VIDEO_EXT = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg", ".wmv")


class _State(object):
    def __init__(self):
        self.pixformat = RGB565
        self.framesize = QVGA  # noqa: F821 (defined above through globals())
        self.window = None
        self.hmirror = False
        self.vflip = False
        self.source = None  # list of items (paths or video frames) or a video reader
        self.source_path = None
        self.max_frames = None
        self.loop = False
        self.delivered = 0
        self.on_frame = None
        self.running = True


_st = _State()


# -- host configuration (not in MaixPy) -------------------------------------------------------------------------
class _VideoFrames(object):
    """Frames of a video file through OpenCV, read lazily."""

    def __init__(self, path):
        try:
            import cv2
        except ImportError:
            raise RuntimeError("reading the video %s needs OpenCV, which is not installed: "
                               "pip install opencv-python-headless (or extract the frames to a folder of images "
                               "and pass the folder)" % path)
        self._cv2 = cv2
        self.path = path
        self._cap = cv2.VideoCapture(path)
        if not self._cap.isOpened():
            raise RuntimeError("OpenCV cannot open the video %s" % path)
        self.index = 0

    def next(self):
        from PIL import Image as _PIL
        ok, frame = self._cap.read()
        if not ok:
            return None
        self.index += 1
        rgb = self._cv2.cvtColor(frame, self._cv2.COLOR_BGR2RGB)
        return _PIL.fromarray(rgb), "%s#%d" % (os.path.basename(self.path), self.index)

    def rewind(self):
        self._cap.set(self._cv2.CAP_PROP_POS_FRAMES, 0)
        self.index = 0


def is_webcam(spec):
    """True for a webcam source: an integer index (0, "1") or a /dev/video* device."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        return True
    spec = os.fspath(spec)
    return spec.isdigit() or spec.startswith("/dev/video")


class _CameraFrames(object):
    """Frames of a webcam through OpenCV (`--frames 0` or `--frames /dev/video0`): an endless source."""
    endless = True

    def __init__(self, spec):
        spec = os.fspath(spec) if not isinstance(spec, int) else spec
        device = int(spec) if isinstance(spec, int) or spec.isdigit() else spec
        self.name = "webcam %s" % (device if isinstance(device, str) else "#%d" % device)
        try:
            import cv2
        except ImportError:
            raise RuntimeError("--frames %s is a webcam, and webcams are read through OpenCV, which is not "
                               "installed: pip install 'openkpu[video]' (or opencv-python-headless)" % (spec,))
        self._cv2 = cv2
        if isinstance(device, str) and device.startswith("/dev/") and not os.path.exists(device):
            raise RuntimeError("there is no webcam %s: list the cameras with `ls /dev/video*`" % device)
        self._cap = cv2.VideoCapture(device)
        if self._cap is None or not self._cap.isOpened():
            hint = ("is it plugged in, not in use by another program, and readable by you (on Linux: the "
                    "`video` group)?")
            raise RuntimeError("OpenCV cannot open the %s: %s" % (self.name, hint))
        self.index = 0

    def next(self):
        from PIL import Image as _PIL
        ok, frame = self._cap.read()
        if not ok or frame is None:
            if self.index == 0:
                raise BadFrame("the %s opened but gave no frame: is another program using it?" % self.name)
            return None  # unplugged: the runner ends the script cleanly
        self.index += 1
        rgb = self._cv2.cvtColor(frame, self._cv2.COLOR_BGR2RGB)
        return _PIL.fromarray(rgb), "%s frame %d" % (self.name, self.index)

    def rewind(self):  # a live camera has nothing to rewind to
        pass

    def close(self):
        try:
            self._cap.release()
        except Exception:
            pass


class _FileFrames(object):
    def __init__(self, paths):
        self.paths = paths
        self.index = 0

    def next(self):
        from PIL import Image as _PIL
        if self.index >= len(self.paths):
            return None
        path = self.paths[self.index]
        self.index += 1
        try:
            pil = _PIL.open(path)
            pil.load()
        except (OSError, SyntaxError, ValueError) as e:  # PIL.UnidentifiedImageError is an OSError
            raise BadFrame("frame %s is not an image Pillow can read (%s): give --frames an image, a folder of "
                           "images or a video" % (path, e))
        return pil, os.path.basename(path)

    def rewind(self):
        self.index = 0


def host_set_frames(path, max_frames=None, loop=False, on_frame=None):
    """Set where frames come from (file, folder or video), how many to deliver at most, whether to cycle, and a
    callback on_frame(index, name, img) called for each delivered frame (the runner prints progress with it)."""
    if is_webcam(path):
        source = _CameraFrames(path)
        path = source.name
    elif os.path.isdir(os.fspath(path)):
        path = os.fspath(path)
        names = sorted(n for n in os.listdir(path) if n.lower().endswith(IMAGE_EXT))
        if not names:
            raise RuntimeError("no images (%s) in the frames folder %s" % (" ".join(IMAGE_EXT), path))
        source = _FileFrames([os.path.join(path, n) for n in names])
    elif os.path.isfile(os.fspath(path)):
        path = os.fspath(path)
        if path.lower().endswith(VIDEO_EXT):
            source = _VideoFrames(path)
        else:
            source = _FileFrames([path])
    else:
        raise FileNotFoundError("frames source not found: %s" % os.fspath(path))
    old = _st.source
    if old is not None and hasattr(old, "close"):
        old.close()
    _st.source = source
    _st.source_path = path
    _st.max_frames = max_frames
    _st.loop = bool(loop)
    _st.delivered = 0
    _st.on_frame = on_frame


def host_close():
    """Release the frame source (a webcam's device)."""
    if _st.source is not None and hasattr(_st.source, "close"):
        _st.source.close()


def host_source_is_endless():
    """True when the frame source never runs out by itself (a webcam)."""
    return bool(getattr(_st.source, "endless", False))


def host_frames_delivered():
    """How many frames snapshot() has returned so far."""
    return _st.delivered


# -- MaixPy API ------------------------------------------------------------------------------------------------
def reset(freq=None, set_regs=True, dual_buff=False, choice=None):
    _st.pixformat = RGB565
    _st.framesize = QVGA  # noqa: F821
    _st.window = None
    _st.hmirror = False
    _st.vflip = False
    _st.running = True
    if _st.source is None and os.environ.get("OPENKPU_FRAMES"):
        host_set_frames(os.environ["OPENKPU_FRAMES"],
                        max_frames=int(os.environ["OPENKPU_MAX_FRAMES"]) if os.environ.get("OPENKPU_MAX_FRAMES")
                        else None)


def set_pixformat(fmt):
    if fmt not in (RGB565, GRAYSCALE, YUV422, BAYER, JPEG):
        raise ValueError("sensor.set_pixformat: unknown format %r" % (fmt,))
    _st.pixformat = fmt
    return True


def get_pixformat():
    return _st.pixformat


def set_framesize(size):
    if size not in _FRAMESIZES:
        raise ValueError("sensor.set_framesize: unknown frame size %r" % (size,))
    _st.framesize = size
    _st.window = None
    return True


def get_framesize():
    return _st.framesize


def width():
    return (_st.window or _FRAMESIZES[_st.framesize])[-2]


def height():
    return (_st.window or _FRAMESIZES[_st.framesize])[-1]


def _window_rect():
    fw, fh = _FRAMESIZES[_st.framesize]
    if _st.window is None:
        return 0, 0, fw, fh
    if len(_st.window) == 2:
        w, h = _st.window
        return (fw - w) // 2, (fh - h) // 2, w, h
    return tuple(_st.window)


def set_windowing(roi):
    """(w, h): a centred w x h crop of the frame; (x, y, w, h): that rectangle."""
    roi = tuple(int(v) for v in roi)
    if len(roi) not in (2, 4):
        raise ValueError("sensor.set_windowing: need (w, h) or (x, y, w, h), got %r" % (roi,))
    fw, fh = _FRAMESIZES[_st.framesize]
    w, h = roi[-2:]
    x, y = ((fw - w) // 2, (fh - h) // 2) if len(roi) == 2 else roi[:2]
    if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > fw or y + h > fh:
        raise ValueError("sensor.set_windowing: %r does not fit the %dx%d frame" % (roi, fw, fh))
    _st.window = roi
    return True


def get_windowing():
    return _window_rect()


def set_hmirror(enable):
    _st.hmirror = bool(enable)
    return True


def set_vflip(enable):
    _st.vflip = bool(enable)
    return True


def get_hmirror():
    return _st.hmirror


def get_vflip():
    return _st.vflip


def run(enable):
    _st.running = bool(enable)
    return True


def skip_frames(n=None, time=None):
    """On the board: let auto-exposure settle. Here no source frame is consumed."""
    return None


def _to_frame(pil):
    """Scale / crop a source picture to the frame, then apply the window, mirror, flip and format."""
    from PIL import Image as _PIL
    from PIL import ImageOps
    pil = pil.convert("L" if pil.mode in ("L", "1", "I;16", "I", "F") else "RGB")
    fw, fh = _FRAMESIZES[_st.framesize]
    x, y, w, h = _window_rect()
    if pil.size == (w, h):
        pass
    else:
        if pil.size != (fw, fh):
            pil = ImageOps.fit(pil, (fw, fh), method=getattr(_PIL, "Resampling", _PIL).BILINEAR)
        if (x, y, w, h) != (0, 0, fw, fh):
            pil = pil.crop((x, y, x + w, y + h))
    if _st.hmirror:
        pil = ImageOps.mirror(pil)
    if _st.vflip:
        pil = ImageOps.flip(pil)
    if _st.pixformat == GRAYSCALE:
        pil = pil.convert("L")
    elif pil.mode != "RGB":
        pil = pil.convert("RGB")
    return image.Image.from_pil(pil)


def snapshot():
    """The next frame as an image.Image (see the module docstring)."""
    if _st.source is None:
        raise NoFrames("sensor.snapshot(): no frames configured on this PC: run the script with "
                           "`python -m openkpu run script.py --frames PATH` (an image, a folder of images or a "
                           "video), or set OPENKPU_FRAMES=PATH")
    if _st.max_frames is not None and _st.delivered >= _st.max_frames:
        raise FramesExhausted("%d frame(s) delivered (max_frames)" % _st.delivered)
    item = _st.source.next()
    if item is None and _st.loop and _st.delivered > 0:
        _st.source.rewind()
        item = _st.source.next()
    if item is None:
        raise FramesExhausted("no more frames in %s after %d frame(s)" % (_st.source_path, _st.delivered))
    pil, name = item
    img = _to_frame(pil)
    _st.delivered += 1
    if _st.on_frame is not None:
        _st.on_frame(_st.delivered, name, img)
    return img


# -- settings that only tune the real camera: accepted, no effect -------------------------------------------------
def _noop(*args, **kwargs):
    return True


set_contrast = set_brightness = set_saturation = set_gainceiling = set_quality = set_colorbar = _noop
set_auto_gain = set_auto_exposure = set_auto_whitebal = set_jb_quality = set_lens_correction = _noop
set_char_range = set_vcom = shutdown = sleep = _noop
set_auto_brightness = set_auto_contrast = set_auto_saturation = _noop


def get_id():
    return OV2640


def get_gain_db():
    return 0.0


def get_exposure_us():
    return 10000


def get_rgb_gain_db():
    return (0.0, 0.0, 0.0)


def __write_reg(addr, value):  # noqa: N802 (MaixPy's name)
    return None


def __read_reg(addr):  # noqa: N802
    return 0


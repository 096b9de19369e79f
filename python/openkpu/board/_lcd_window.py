# SPDX-License-Identifier: Apache-2.0
"""A live window showing the board's LCD, like MaixPy IDE's frame buffer view (`openkpu run --show`).

`open_window(zoom=2)` returns a callable `show(pil_image, final=False)` for `lcd.host_set_viewer`, backed by Tk
(tkinter, the standard library's GUI; Debian/Ubuntu: `apt-get install python3-tk`) or, when Tk is missing, by
OpenCV's highgui window (the full `opencv-python` wheel; the `-headless` wheel has no windows). Closing the window
ends the script cleanly (WindowClosed, a FramesExhausted, which the runner catches).

`WindowError` says why no window can be opened: no display (SSH, container, CI), neither Tk nor a GUI OpenCV.
"""
import os
import sys
import time

try:
    from openkpu.runner import FramesExhausted
except ImportError:  # pragma: no cover
    class FramesExhausted(BaseException):
        """The run is over."""

TITLE = "openkpu LCD"


class WindowError(RuntimeError):
    """No window can be opened here; the message says why and what to do instead."""


class WindowClosed(FramesExhausted):
    """The user closed the LCD window."""


def _no_display():
    if sys.platform.startswith(("win", "darwin")):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


_INSTEAD = ("use --lcd-out DIR to save the LCD frames as PNGs instead, or give it a virtual display: "
            "xvfb-run openkpu run ... --show")


class _TkWindow(object):
    def __init__(self, zoom):
        import tkinter as tk
        self._tk = tk
        self.root = tk.Tk()  # TclError without a usable display
        self.root.title(TITLE)
        self.root.resizable(False, False)
        self.label = tk.Label(self.root, borderwidth=0, highlightthickness=0, background="black")
        self.label.pack()
        self.closed = False
        self.root.protocol("WM_DELETE_WINDOW", self._on_close)
        self.zoom = zoom
        self.photo = None
        try:
            from PIL import ImageTk
            self._imagetk = ImageTk
        except ImportError:  # Pillow without Tk support: hand Tk a PNG
            self._imagetk = None
        self.root.update()

    def _on_close(self):
        self.closed = True

    def _photo(self, pil):
        if self._imagetk is not None:
            try:
                return self._imagetk.PhotoImage(pil, master=self.root)
            except Exception:  # Pillow built without its Tk glue
                self._imagetk = None
        import base64
        import io
        buf = io.BytesIO()
        pil.save(buf, "PNG")
        return self._tk.PhotoImage(master=self.root, data=base64.b64encode(buf.getvalue()))

    def show(self, pil):
        if self.closed:
            raise WindowClosed("LCD window closed")
        self.photo = self._photo(pil)
        self.label.configure(image=self.photo)
        self.root.update()
        if self.closed:
            raise WindowClosed("LCD window closed")

    def wait_closed(self):
        while not self.closed:
            self.root.update()
            time.sleep(0.03)

    def close(self):
        try:
            self.root.destroy()
        except Exception:
            pass


class _CvWindow(object):
    def __init__(self, zoom):
        import cv2
        import numpy  # noqa: F401 (cv2 needs it; say so early)
        self.cv2 = cv2
        self.zoom = zoom
        try:
            cv2.namedWindow(TITLE, cv2.WINDOW_AUTOSIZE)
            cv2.waitKey(1)
        except cv2.error as e:  # the -headless wheel: "The function is not implemented"
            raise WindowError("OpenCV here has no GUI (%s)" % str(e).strip().splitlines()[-1])
        self.closed = False

    def _visible(self):
        try:
            return self.cv2.getWindowProperty(TITLE, self.cv2.WND_PROP_VISIBLE) >= 1
        except self.cv2.error:
            return False

    def show(self, pil):
        import numpy as np
        if self.closed or not self._visible():
            self.closed = True
            raise WindowClosed("LCD window closed")
        self.cv2.imshow(TITLE, np.asarray(pil.convert("RGB"))[:, :, ::-1])
        self.cv2.waitKey(1)

    def wait_closed(self):
        while self._visible():
            if self.cv2.waitKey(30) == 27:  # Esc
                break

    def close(self):
        try:
            self.cv2.destroyWindow(TITLE)
        except Exception:
            pass


class Viewer(object):
    """show(pil, final=False): draw the LCD (at most ~60 times a second, always when final)."""

    def __init__(self, window, zoom):
        self.window = window
        self.zoom = max(1, int(zoom))
        self.last = 0.0
        self.pending = None
        self.backend = "Tk" if isinstance(window, _TkWindow) else "OpenCV"

    def __call__(self, pil, final=False):
        now = time.monotonic()
        if not final and now - self.last < 1.0 / 60:
            self.pending = pil
            return
        self.pending = None
        self.last = now
        if self.zoom != 1:
            from PIL import Image as _PIL
            pil = pil.resize((pil.width * self.zoom, pil.height * self.zoom), getattr(_PIL, "Resampling", _PIL).NEAREST)
        self.window.show(pil)

    def flush(self, pil):
        """Show the last screen (after the script ended)."""
        try:
            self(pil, final=True)
        except WindowClosed:
            pass

    def wait_closed(self):
        self.window.wait_closed()

    def close(self):
        self.window.close()


def open_window(zoom=2):
    """A Viewer on Tk, else OpenCV highgui; WindowError (with what to do) when neither can open a window."""
    if _no_display():
        raise WindowError("--show needs a display, and none is set here (no DISPLAY or WAYLAND_DISPLAY: SSH "
                          "without -X, a container, CI?): " + _INSTEAD)
    reasons = []
    try:
        import tkinter  # noqa: F401
    except ImportError as e:
        reasons.append("Tk is not available (%s; Debian/Ubuntu: apt-get install python3-tk)" % e)
    else:
        try:
            return Viewer(_TkWindow(zoom), zoom)
        except Exception as e:  # tkinter.TclError: no display, bad DISPLAY
            reasons.append("Tk cannot open a window (%s)" % str(e).strip())
    try:
        import cv2  # noqa: F401
    except ImportError:
        reasons.append("OpenCV is not installed (pip install opencv-python, the wheel with GUI support)")
    else:
        try:
            return Viewer(_CvWindow(zoom), zoom)
        except WindowError as e:
            reasons.append(str(e) + "; pip install opencv-python (not -headless) for its window")
        except Exception as e:
            reasons.append("OpenCV cannot open a window (%s)" % str(e).strip())
    raise WindowError("--show cannot open a window: " + "; ".join(reasons) + "; " + _INSTEAD)

# SPDX-License-Identifier: Apache-2.0
"""`openkpu run --show`: a live window of the LCD, checked on a virtual X display (Xvfb) by a screenshot.

Skipped, saying why, when Xvfb (Debian: apt-get install xvfb) or Tk (python3-tk) is missing. Set
OPENKPU_SCREENSHOT_DIR to keep the screenshot (show_window.png) for a look.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

SCRIPT = r"""
import os, time
import lcd, image
lcd.init()
img = image.Image(size=(320, 240))
img.draw_rectangle(0, 0, 160, 120, color=(255, 0, 0), fill=True)
img.draw_rectangle(160, 0, 160, 120, color=(0, 255, 0), fill=True)
img.draw_rectangle(0, 120, 160, 120, color=(0, 0, 255), fill=True)
img.draw_rectangle(160, 120, 160, 120, color=(255, 255, 255), fill=True)
img.draw_string(20, 20, "openkpu --show", color=(255, 255, 255), scale=2)
lcd.display(img)
print("READY", flush=True)
deadline = time.time() + 60
while not os.path.exists(os.environ["SHOT_TAKEN"]) and time.time() < deadline:
    lcd.display(img)          # keeps the window's event loop turning, as a camera loop would
    time.sleep(0.05)
"""


def start_xvfb():
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("Xvfb not installed (Debian/Ubuntu: apt-get install xvfb): the --show window is not tested")
    try:
        import tkinter  # noqa: F401
    except ImportError:
        pytest.skip("Tk not available (Debian/Ubuntu: apt-get install python3-tk): the --show window is not tested")
    for num in range(91, 140):
        if os.path.exists("/tmp/.X11-unix/X%d" % num) or os.path.exists("/tmp/.X%d-lock" % num):
            continue
        proc = subprocess.Popen([xvfb, ":%d" % num, "-screen", "0", "800x600x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline and proc.poll() is None:
            if os.path.exists("/tmp/.X11-unix/X%d" % num):
                return proc, ":%d" % num
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    pytest.skip("could not start Xvfb on any display :91..:139")


def test_show_opens_a_window_with_the_lcd(tmp_path):
    from PIL import ImageGrab
    xvfb, display = start_xvfb()
    script = tmp_path / "pattern.py"
    script.write_text(SCRIPT)
    flag = tmp_path / "shot_taken"
    env = dict(os.environ, DISPLAY=display, SHOT_TAKEN=str(flag))
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.Popen([sys.executable, "-m", "openkpu", "run", str(script), "--show"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()  # "[openkpu] LCD window open (Tk); close it to stop the script"
        ready = proc.stdout.readline()
        assert "LCD window open (Tk)" in first and ready.strip() == "READY", (first, ready, proc.stderr.read())
        time.sleep(0.5)
        shot = ImageGrab.grab(xdisplay=display).convert("RGB")
        flag.write_text("done")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        xvfb.terminate()
        xvfb.wait()
    keep = os.environ.get("OPENKPU_SCREENSHOT_DIR")
    if keep:
        shot.save(os.path.join(keep, "show_window.png"))
    shot.save(tmp_path / "show_window.png")
    assert proc.returncode == 0, err
    # The window holds the 320x240 LCD at zoom 2: find its 640x480 area on the black root window.
    box = shot.point(lambda v: 255 if v > 40 else 0).convert("L").getbbox()
    assert box is not None, "nothing drawn on the display"
    x0, y0, x1, y1 = box
    assert (x1 - x0, y1 - y0) == (640, 480), box

    def near(p, q):
        return all(abs(a - b) <= 8 for a, b in zip(p, q))
    for (fx, fy), colour in (((0.25, 0.75), (0, 0, 255)), ((0.75, 0.25), (0, 255, 0)),
                             ((0.75, 0.75), (255, 255, 255)), ((0.1, 0.9), (0, 0, 255))):
        px = shot.getpixel((x0 + int(fx * 640), y0 + int(fy * 480)))
        assert near(px, colour), (fx, fy, px, colour)
    assert near(shot.getpixel((x0 + 300, y0 + 200)), (255, 0, 0))  # red quadrant, below the text
    text = shot.crop((x0 + 40, y0 + 40, x0 + 320, y0 + 80))  # the string, drawn white on red
    raw = text.tobytes()
    assert any(raw[i:i + 3] == b"\xff\xff\xff" for i in range(0, len(raw), 3)), "the text is missing"

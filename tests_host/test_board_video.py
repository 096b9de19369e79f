# SPDX-License-Identifier: Apache-2.0
"""Camera frames from a video file: a board script run through the runner sees each video frame via
sensor.snapshot(), in order, and the runner stops when the video ends."""
import ast
import subprocess
import sys

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2", reason="video frames need OpenCV (pip install opencv-python-headless)")

COLOURS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)]  # RGB, one solid frame each

SCRIPT = """
import sensor, lcd
lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.RGB565)
sensor.set_framesize(sensor.QVGA)
sensor.run(1)
while True:
    img = sensor.snapshot()
    print("pixel", img.width(), img.height(), img.get_pixel(160, 120))
    lcd.display(img)
"""


def test_video_frames_reach_the_script_in_order(tmp_path):
    video = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 5, (320, 240))
    assert writer.isOpened()
    for r, g, b in COLOURS:
        writer.write(np.full((240, 320, 3), (b, g, r), np.uint8))  # OpenCV frames are BGR
    writer.release()
    script = tmp_path / "show.py"
    script.write_text(SCRIPT)
    out = subprocess.run([sys.executable, "-m", "openkpu", "run", str(script), "--frames", str(video),
                          "--lcd-out", str(tmp_path / "lcd")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    pixels = [line.split(None, 3) for line in out.stdout.splitlines() if line.startswith("pixel")]
    assert len(pixels) == len(COLOURS)
    for (tag, w, h, pixel), colour in zip(pixels, COLOURS):
        assert (int(w), int(h)) == (320, 240)
        got = ast.literal_eval(pixel)  # the tuple the script printed
        assert all(abs(a - b) <= 8 for a, b in zip(got, colour)), (got, colour)  # MJPG is lossy
    assert len(list((tmp_path / "lcd").glob("*.png"))) == len(COLOURS)

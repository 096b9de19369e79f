# SPDX-License-Identifier: Apache-2.0
"""`openkpu run` as people use it: endless sources bounded, the LCD PNG cap, webcams (through a fake OpenCV
capture: this machine has no camera), a tab/space mix, and `openkpu infer` over a folder of inputs."""
import io
import os
import pathlib
import struct
import subprocess
import sys
import types

import numpy as np
import pytest
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIGITS = ROOT / "examples" / "models" / "digits.kmodel"

LOOP_SCRIPT = """
import sensor, lcd
lcd.init()
sensor.reset()
while True:
    img = sensor.snapshot()
    print("pixel", img.get_pixel(10, 10))
    lcd.display(img)
"""


def openkpu(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "openkpu"] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


@pytest.fixture
def photo(tmp_path):
    path = tmp_path / "photo.png"
    Image.new("RGB", (320, 240), (10, 200, 30)).save(path)
    return path


def test_loop_with_lcd_out_and_no_max_frames_is_a_usage_error(tmp_path, photo):
    script = tmp_path / "loop.py"
    script.write_text(LOOP_SCRIPT)
    out = openkpu("run", script, "--frames", photo, "--loop", "--lcd-out", tmp_path / "lcd")
    assert out.returncode == 2, out
    assert "--loop with --lcd-out and no --max-frames" in out.stderr and "add --max-frames N" in out.stderr
    assert "Traceback" not in out.stderr
    assert not list((tmp_path / "lcd").glob("*.png")) if (tmp_path / "lcd").exists() else True
    bounded = openkpu("run", script, "--frames", photo, "--loop", "--lcd-out", tmp_path / "lcd", "--max-frames", 7)
    assert bounded.returncode == 0, bounded.stderr
    assert len(list((tmp_path / "lcd").glob("lcd_*.png"))) == 7


def test_lcd_pngs_are_capped_and_the_runner_says_so(tmp_path):
    script = tmp_path / "spin.py"  # never calls snapshot(): only the cap stops it
    script.write_text("import lcd, image\nlcd.init()\nimg = image.Image()\nwhile True:\n    lcd.display(img)\n")
    out = openkpu("run", script, "--lcd-out", tmp_path / "lcd", "--max-lcd-frames", 5)
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "lcd").glob("lcd_*.png"))) == 5
    assert "stopped after writing 5 LCD frame(s)" in out.stderr and "--max-frames N" in out.stderr


def test_a_tab_and_space_mix_says_what_micropython_does_with_it(tmp_path):
    script = tmp_path / "tabs.py"
    script.write_text("for i in range(2):\n    x = i\n\t   print(x)\n")
    out = openkpu("run", script)
    assert out.returncode == 2
    assert "line 3" in out.stderr and "multiple of 8 columns" in out.stderr and "re-indent" in out.stderr
    assert "Traceback" not in out.stderr


class FakeCapture(object):
    """cv2.VideoCapture for a webcam that gives solid frames, red then green then blue ... (BGR arrays)."""
    opened = {}

    def __init__(self, device):
        self.device = device
        self.count = 0
        self.released = False
        FakeCapture.opened[device] = self

    def isOpened(self):  # noqa: N802 (OpenCV's name)
        return self.device == 1

    def read(self):
        rgb = [(255, 0, 0), (0, 255, 0), (0, 0, 255)][self.count % 3]
        self.count += 1
        return True, np.full((480, 640, 3), rgb[::-1], np.uint8)

    def release(self):
        self.released = True


@pytest.fixture
def fake_cv2(monkeypatch):
    fake = types.ModuleType("cv2")
    fake.VideoCapture = FakeCapture
    fake.COLOR_BGR2RGB = 4
    fake.cvtColor = lambda frame, code: np.ascontiguousarray(frame[:, :, ::-1])
    FakeCapture.opened = {}
    monkeypatch.setitem(sys.modules, "cv2", fake)
    return fake


def run_inprocess(*argv):
    from openkpu import runner
    saved = list(sys.path)
    try:
        return runner.main([str(a) for a in argv])
    finally:
        sys.path[:] = saved


def test_a_webcam_index_feeds_the_script_through_opencv(tmp_path, fake_cv2, capsys):
    script = tmp_path / "cam.py"
    script.write_text(LOOP_SCRIPT)
    status = run_inprocess("run", script, "--frames", "1", "--max-frames", 3, "--lcd-out", tmp_path / "lcd")
    out = capsys.readouterr()
    assert status == 0, out.err
    pixels = [line for line in out.out.splitlines() if line.startswith("pixel")]
    assert pixels == ["pixel (255, 0, 0)", "pixel (0, 255, 0)", "pixel (0, 0, 255)"]
    assert "[openkpu] frame 1: webcam #1 frame 1 320x240" in out.out  # 640x480 scaled to the QVGA frame
    assert FakeCapture.opened[1].released  # the device is given back at the end
    assert len(list((tmp_path / "lcd").glob("lcd_*.png"))) == 3


def test_a_webcam_with_lcd_out_needs_max_frames(tmp_path, fake_cv2, capsys):
    script = tmp_path / "cam.py"
    script.write_text(LOOP_SCRIPT)
    assert run_inprocess("run", script, "--frames", "1", "--lcd-out", tmp_path / "lcd") == 2
    assert "a webcam with --lcd-out and no --max-frames" in capsys.readouterr().err


def test_a_webcam_that_does_not_open_or_does_not_exist_says_so(tmp_path, fake_cv2, capsys):
    script = tmp_path / "cam.py"
    script.write_text(LOOP_SCRIPT)
    assert run_inprocess("run", script, "--frames", "0", "--max-frames", 1) == 2
    err = capsys.readouterr().err
    assert "OpenCV cannot open the webcam #0" in err and "video` group" in err
    assert run_inprocess("run", script, "--frames", "/dev/video97", "--max-frames", 1) == 2
    assert "there is no webcam /dev/video97: list the cameras with `ls /dev/video*`" in capsys.readouterr().err


def test_a_webcam_without_opencv_says_to_install_the_video_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 -> ImportError
    script = tmp_path / "cam.py"
    script.write_text(LOOP_SCRIPT)
    assert run_inprocess("run", script, "--frames", "0", "--max-frames", 1) == 2
    err = capsys.readouterr().err
    assert "--frames 0 is a webcam" in err and "pip install 'openkpu[video]'" in err


def test_show_without_a_display_is_a_usage_error(tmp_path, photo):
    script = tmp_path / "loop.py"
    script.write_text(LOOP_SCRIPT)
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    out = subprocess.run([sys.executable, "-m", "openkpu", "run", str(script), "--frames", str(photo), "--show"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 2
    assert "--show needs a display" in out.stderr and "--lcd-out DIR" in out.stderr and "xvfb-run" in out.stderr


# -- openkpu infer ------------------------------------------------------------------------------------------------
def direct(data):
    import KPU as kpu
    net = kpu.load(str(DIGITS))
    fm = kpu.forward(net, data)
    vals = np.frombuffer(fm.data(), "<f4").copy()
    kpu.deinit(net)
    return vals


def test_infer_runs_a_model_over_a_folder_of_inputs(tmp_path):
    ds = tmp_path / "ds"
    ds.mkdir()
    rng = np.random.default_rng(7)
    big = Image.fromarray(rng.integers(0, 256, (40, 32, 3), dtype=np.uint8))  # colour, 32x40: to 8x8 gray
    big.save(ds / "a_photo.png")
    raw = bytes(rng.integers(0, 256, 64, dtype=np.uint8))
    (ds / "b_raw.bin").write_bytes(raw)
    arr = rng.integers(0, 256, (8, 8, 1), dtype=np.uint8)
    np.save(ds / "c_array.npy", arr)
    (ds / "d_notes.txt").write_text("not an input")
    out = openkpu("infer", DIGITS, "--dataset", ds, "--out", tmp_path / "out")
    assert out.returncode == 0, out.stderr
    assert "[openkpu] infer: 3 input(s) run through digits.kmodel (input 8x8x1), 3 .npy file(s) written" in out.stdout
    assert "1 skipped (d_notes.txt), 0 failed" in out.stdout
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["a_photo.out0.npy", "b_raw.out0.npy", "c_array.out0.npy"]
    expect_img = big.convert("L").resize((8, 8), Image.BILINEAR).tobytes()
    for name, data in (("a_photo", expect_img), ("b_raw", raw), ("c_array", arr.tobytes())):
        got = np.load(tmp_path / "out" / ("%s.out0.npy" % name))
        assert got.dtype == np.float32 and got.shape == (10,)
        assert np.array_equal(got, direct(data)), name


def test_infer_names_a_bad_input_and_fails(tmp_path):
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "short.bin").write_bytes(bytes(63))
    (ds / "ok.bin").write_bytes(bytes(64))
    out = openkpu("infer", DIGITS, "--dataset", ds, "--out", tmp_path / "out")
    assert out.returncode == 1
    assert "short.bin: a .bin input is the model's raw input, 64 bytes (8x8x1 u8), this file has 63" in out.stderr
    assert "1 input(s) run" in out.stdout and "1 failed" in out.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    out = openkpu("infer", DIGITS, "--dataset", empty, "--out", tmp_path / "out2")
    assert out.returncode == 2 and "is empty" in out.stderr


def test_infer_writes_u8_kpu_outputs_with_their_shape(tmp_path):
    from openkpu.infer import write_npy
    write_npy(tmp_path / "x.npy", bytes(range(24)), "|u1", (2, 3, 4))
    got = np.load(tmp_path / "x.npy")
    assert got.dtype == np.uint8 and got.shape == (2, 3, 4) and got[1, 2, 3] == 23
    write_npy(tmp_path / "f.npy", struct.pack("<3f", 1.5, -2.0, 3.25), "<f4", (3,))
    assert np.load(tmp_path / "f.npy").tolist() == [1.5, -2.0, 3.25]

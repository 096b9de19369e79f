# SPDX-License-Identifier: Apache-2.0
"""MaixPy's camera examples on the K210 firmware on the virtual board, compared with `openkpu run`.

Every script in examples/ runs unchanged: `openkpu vboard run build/k210/firmware.bin SCRIPT --frames SRC
--lcd-out DIR` (camera: DVP + OV2640 model fed from openkpu run's frame sources; LCD: SPI0 + ST7789 model writing
PNGs), models from flash offsets (--flash kfpkg) or from files on /flash (a littlefs image at 0xD00000; the
scripts' /sd/... paths are /flash/sd/... on this firmware). Against `openkpu run` with the same frames:
- what the scripts print (detections, classes, probabilities) is identical: the KPU gets the same bytes
  (the DVP's YUV->RGB888 path is modelled as lossless, resize is Pillow's arithmetic in C);
- the LCD PNGs are the PC's PNGs quantised to RGB565 (the panel's format), pixel for pixel, except inside the
  boxes where the scripts draw text: the firmware has its own 8x16 font, the PC draws Pillow's.
Skips, saying why, without unicorn, riscv64-unknown-elf-gcc or ../shared/testdata.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIRMWARE = ROOT / "build" / "k210" / "firmware.bin"
TESTDATA = pathlib.Path(os.environ.get("OPENKPU_TESTDATA", ROOT.parent / "shared" / "testdata"))
FACE_KFPKG = TESTDATA / "face_detect_yolo2_v3_maixpy" / "face_model_at_0x300000.kfpkg"
FACES = TESTDATA / "face_images_nncase"
DOG = TESTDATA / "yolo2_voc20_v3_nncase_rc5" / "dog.bmp"
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "python"))


def _need():
    pytest.importorskip("unicorn", reason="the virtual board needs unicorn (pip install 'openkpu[vboard]')")
    pytest.importorskip("littlefs", reason="the /flash image needs littlefs-python")
    pytest.importorskip("numpy", reason="the LCD model needs numpy")
    if shutil.which("riscv64-unknown-elf-gcc") is None:
        pytest.skip("the K210 firmware needs riscv64-unknown-elf-gcc + picolibc")
    if not FACE_KFPKG.exists():
        pytest.skip("needs ../shared/testdata (face model, pictures): %s is missing" % FACE_KFPKG)


@pytest.fixture(scope="module")
def firmware():
    _need()
    r = subprocess.run(["make", "-C", str(ROOT), "firmware"], capture_output=True, text=True)
    assert r.returncode == 0, "make firmware failed:\n" + (r.stdout + r.stderr)[-3000:]
    return FIRMWARE


def _fs_image(tmp, files):
    """A littlefs image for 0xD00000 holding {path on /flash: source file}."""
    from openkpu import fsimage
    data = {}
    for name, src in files.items():
        data[name] = pathlib.Path(src).read_bytes()
    path = tmp / "fs.bin"
    path.write_bytes(fsimage.make_image(data))
    return path


def run_vboard(fw, script, tmp, frames, flash=(), fs=None, max_frames=None, timeout=900, extra=()):
    out = tmp / "vb_lcd"
    cmd = [sys.executable, "-m", "openkpu.vboard", "run", str(fw), str(script), "--frames", str(frames),
           "--lcd-out", str(out), "--timeout", str(timeout)]
    for item in flash:
        cmd += ["--flash", str(item)]
    if fs:
        cmd += ["--flash", "%s@0xD00000" % _fs_image(tmp, fs)]
    if max_frames:
        cmd += ["--max-frames", str(max_frames)]
    cmd += list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=str(ROOT), timeout=timeout + 60)
    return r, sorted(out.glob("lcd_*.png")) if out.exists() else []


def run_host(script, tmp, frames, flash=None, sd=None, max_frames=None, cwd=ROOT):
    out = tmp / "host_lcd"
    cmd = [sys.executable, "-m", "openkpu", "run", str(script), "--frames", str(frames), "--lcd-out", str(out)]
    if flash:
        cmd += ["--flash", str(flash)]
    if sd:
        cmd += ["--sd", str(sd)]
    if max_frames:
        cmd += ["--max-frames", str(max_frames)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=str(cwd), timeout=600)
    return r, sorted(out.glob("lcd_*.png")) if out.exists() else []


def _kpu_lines(text):
    """What a script prints about its results: progress and timing lines dropped."""
    return [ln for ln in text.replace("\r", "").splitlines()
            if ln.strip() and "fps" not in ln and not ln.startswith(("[openkpu]", "vboard:"))]


def _q565(a):
    import numpy as np
    a = a.astype(np.uint32)
    r, g, b = a[..., 0] >> 3, a[..., 1] >> 2, a[..., 2] >> 3
    return np.stack([(r * 255 + 15) // 31, (g * 255 + 31) // 63, (b * 255 + 15) // 31], -1).astype(np.uint8)


def compare_pngs(host_pngs, vb_pngs, masks=()):
    """Host PNGs quantised to RGB565 == the virtual LCD's PNGs, outside the text boxes `masks` ((x0, y0, x1, y1),
    inclusive-exclusive). Returns the number of pixels that differ inside the masks."""
    import numpy as np
    from PIL import Image
    assert [p.name for p in host_pngs] == [p.name for p in vb_pngs], (host_pngs, vb_pngs)
    assert host_pngs, "no LCD frames written"
    masked = 0
    for hp, vp in zip(host_pngs, vb_pngs):
        h = _q565(np.asarray(Image.open(hp).convert("RGB")))
        v = np.asarray(Image.open(vp).convert("RGB"))
        assert h.shape == v.shape, (hp.name, h.shape, v.shape)
        diff = np.any(h != v, axis=-1)
        inside = np.zeros_like(diff)
        for x0, y0, x1, y1 in masks:
            inside[max(0, y0):max(0, y1), max(0, x0):max(0, x1)] = True
        outside = diff & ~inside
        ys, xs = np.nonzero(outside)
        assert not outside.any(), "%s: %d pixels differ outside the text boxes, e.g. at %s" % (
            vp.name, outside.sum(), list(zip(xs[:5].tolist(), ys[:5].tolist())))
        masked += int((diff & inside).sum())
    return masked


def _rects(text):
    return [tuple(int(v) for v in m) for m in re.findall(r"rect=\((-?\d+), (-?\d+), (-?\d+), (-?\d+)\)", text)]


def _check(host, vb):
    (hr, hp), (vr, vp) = host, vb
    assert hr.returncode == 0, hr.stdout + hr.stderr
    assert vr.returncode == 0, vr.stdout[-2000:] + vr.stderr[-2000:]
    assert _kpu_lines(vr.stdout) == _kpu_lines(hr.stdout), (vr.stdout, hr.stdout)
    assert "no more frames" in vr.stderr
    return hp, vp


def test_face_detect(firmware, tmp_path):
    """Faces from the flash model at 0x300000; boxes drawn in the frame; a count on the LCD."""
    script = ROOT / "examples" / "face_detect.py"
    host = run_host(script, tmp_path, FACES, flash=FACE_KFPKG)
    vb = run_vboard(firmware, script, tmp_path, FACES, flash=[FACE_KFPKG])
    hp, vp = _check(host, vb)
    assert len(vp) == 2 and '"value":0.905852' in vb[0].stdout
    compare_pngs(hp, vp, masks=[(0, 0, 320, 16)])  # lcd.draw_string(0, 0, "faces: %d")


def test_kpu_feature_map(firmware, tmp_path):
    """The 4x4 mosaic of layer 3's channels: no text, so the PNG is the PC's pixel for pixel (in RGB565)."""
    script = ROOT / "examples" / "kpu_feature_map.py"
    host = run_host(script, tmp_path, FACES / "21.jpg", flash=FACE_KFPKG)
    vb = run_vboard(firmware, script, tmp_path, FACES / "21.jpg", flash=[FACE_KFPKG])
    hp, vp = _check(host, vb)
    assert compare_pngs(hp, vp) == 0


def test_digits_demo(firmware, tmp_path):
    """GRAYSCALE 240x240 window, copy().resize(8, 8) (Pillow's bilinear in C), the model from /flash/models."""
    script = ROOT / "examples" / "digits_demo.py"
    host = run_host(script, tmp_path, FACES, cwd=ROOT / "examples")  # its model path is relative
    vb = run_vboard(firmware, script, tmp_path, FACES,
                    fs={"models/digits.kmodel": ROOT / "examples" / "models" / "digits.kmodel"})
    hp, vp = _check(host, vb)
    compare_pngs(hp, vp, masks=[(40, 0, 280, 90)])  # img.draw_string(8, 8, ..., scale=4) in the centred frame


def test_mnist_fmap(firmware, tmp_path):
    """set_layers + fmap mosaic drawn with set_pixel, the MNIST model from /sd (= /flash/sd)."""
    model = TESTDATA / "mnist_v3_maixpy" / "mnist.kmodel"
    script = ROOT / "examples" / "mnist_fmap.py"
    host = run_host(script, tmp_path, FACES / "22.jpg", sd=model.parent)
    vb = run_vboard(firmware, script, tmp_path, FACES / "22.jpg", fs={"sd/mnist.kmodel": model})
    hp, vp = _check(host, vb)
    compare_pngs(hp, vp, masks=[(100, 200, 320, 216)])  # lcd.draw_string(100, 200, ...)


def test_yolo_voc20(firmware, tmp_path):
    """20-class YOLOv2 from /sd on dog.bmp: boxes in the frame, labels on the LCD at each box."""
    folder = TESTDATA / "yolo2_voc20_v3_nncase_rc5"
    script = ROOT / "examples" / "yolo_voc20.py"
    host = run_host(script, tmp_path, DOG, sd=folder)
    vb = run_vboard(firmware, script, tmp_path, DOG, fs={"sd/yolo.kmodel": folder / "yolo.kmodel"})
    hp, vp = _check(host, vb)
    rects = _rects(host[0].stdout)
    assert rects
    compare_pngs(hp, vp, masks=[(x, y, 320, y + 16) for x, y, w, h in rects])


def test_maix_kpu_voc20(firmware, tmp_path):
    """MaixPy's class API (from maix import KPU, frozen in the firmware), Image(size=...), draw_image, img text."""
    folder = TESTDATA / "yolo2_voc20_v3_nncase_rc5"
    script = ROOT / "examples" / "maix_kpu_voc20.py"
    host = run_host(script, tmp_path, DOG, sd=folder)
    vb = run_vboard(firmware, script, tmp_path, DOG, fs={"sd/yolo.kmodel": folder / "yolo.kmodel"})
    hp, vp = _check(host, vb)
    rects = _rects(host[0].stdout)
    assert rects
    # img.draw_string at each box (scale 1.5) and the fps at (0, 0) (scale 2)
    compare_pngs(hp, vp, masks=[(0, 0, 320, 40)] + [(x, y, 320, y + 32) for x, y, w, h in rects])


def test_mobilenet(firmware, tmp_path):
    folder = TESTDATA / "mobilenetv1_0.75_v3_maixemc"
    script = ROOT / "examples" / "mobilenet.py"
    frame = folder / "tiger224.bmp"
    host = run_host(script, tmp_path, frame, sd=folder)
    vb = run_vboard(firmware, script, tmp_path, frame,
                    fs={"sd/mbnetv1.kmodel": folder / "mbnetv1.kmodel", "sd/labels.txt": folder / "labels.txt"})
    hp, vp = _check(host, vb)
    compare_pngs(hp, vp, masks=[(0, 224, 320, 240)])


MEMORY_SCRIPT = b"""
import gc, sensor, lcd, image, Maix
import KPU as kpu
lcd.init()
sensor.reset()
sensor.set_pixformat(sensor.RGB565)
sensor.set_framesize(sensor.QVGA)
sensor.run(1)
task = kpu.load(0x300000)
kpu.init_yolo2(task, 0.5, 0.3, 5, (1.889, 2.5245, 2.9465, 3.94056, 3.99987, 5.3658, 5.155437, 6.92275, 6.718375, 9.01025))
gc.collect()
frees = []
first = sensor.snapshot()
buf = first.planes()
for i in range(3):
    img = sensor.snapshot()
    assert img is first and img.planes() is buf
    kpu.run_yolo2(task, img)
    img.draw_rectangle(1, 1, 10, 10)
    lcd.display(img)
    gc.collect()
    frees.append(gc.mem_free())
print("gc_free", frees)
print("c_heap_free", Maix.utils.heap_free())
print("gc_heap", Maix.utils.gc_heap_size())
"""


def test_memory_with_face_detector(firmware, tmp_path):
    """Point 4: with the face detector loaded and the camera and LCD running, the free heap is reported, steady
    from frame to frame (the frame buffer is allocated once: snapshot() returns the same Image and buffer)."""
    script = tmp_path / "mem.py"
    script.write_bytes(MEMORY_SCRIPT)
    r, pngs = run_vboard(firmware, script, tmp_path, FACES, flash=[FACE_KFPKG], extra=["--loop", "--max-frames", "4"])
    assert r.returncode == 0, r.stdout + r.stderr
    frees = [int(v) for v in re.search(r"gc_free \[([\d, ]+)\]", r.stdout).group(1).split(",")]
    assert max(frees) - min(frees) < 4096, frees  # nothing per frame stays allocated
    c_free = int(re.search(r"c_heap_free (\d+)", r.stdout).group(1))
    print("free GC heap with the face model, camera and LCD: %d bytes; free C heap %d" % (min(frees), c_free))
    # MaixPy's full firmware: a 512 KiB GC heap and about 2 MiB of system heap for models; here both the model and
    # the frame live in the 5 MiB GC heap and more than 4 MiB is still free
    assert min(frees) > 4 * 1024 * 1024


def test_unmodelled_sccb_register_stops(firmware, tmp_path):
    """An SCCB write the OV2640 model does not know stops the board with a message naming the register."""
    script = tmp_path / "bad.py"
    script.write_bytes(b"import sensor\nsensor.reset()\nsensor.__write_reg(0x99, 1)\n")
    r, _ = run_vboard(firmware, script, tmp_path, DOG, timeout=120)
    assert r.returncode == 2
    assert "OV2640 DSP register 0x99" in r.stderr, r.stderr


def test_snapshot_without_frames_is_an_error(firmware, tmp_path):
    script = tmp_path / "snap.py"
    script.write_bytes(b"import sensor\nsensor.reset()\nsensor.snapshot()\n")
    cmd = [sys.executable, "-m", "openkpu.vboard", "run", str(firmware), str(script), "--timeout", "120"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=str(ROOT), timeout=200)
    assert r.returncode == 2 and "--frames" in r.stderr, r.stderr

# SPDX-License-Identifier: Apache-2.0
"""The K210 firmware's `sensor` module with each camera the virtual board models (`openkpu vboard --sensor`):
OV2640 (Maix Bit/Go), GC0328 (Maix Dock), OV5640. For each, MaixPy's sequence sensor.reset(); set_pixformat;
set_framesize; [set_hmirror / set_vflip / set_windowing]; snapshot() must give the picture the frame source holds:
pictures of exactly the frame size are used as they are, so the expected frame is the picture itself (cut,
mirrored, flipped, made gray here with numpy / Pillow's "L"), compared after RGB565 quantisation for colour (the
OV5640 sends RGB565; the YUV path of the others is lossless) and exactly for GRAYSCALE. The firmware writes the
registers, the model reads the frame geometry, format and mirror/flip back from them; the image-quality tables
are checked by reading back a value from MaixPy's tables; a register the model does not know stops the board.
Skips without unicorn, numpy or riscv64-unknown-elf-gcc."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIRMWARE = ROOT / "build" / "k210" / "firmware.bin"
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "python"))


@pytest.fixture(scope="module")
def firmware():
    pytest.importorskip("unicorn", reason="the virtual board needs unicorn (pip install 'openkpu[vboard]')")
    pytest.importorskip("numpy")
    pytest.importorskip("PIL")
    if shutil.which("riscv64-unknown-elf-gcc") is None:
        pytest.skip("the K210 firmware needs riscv64-unknown-elf-gcc + picolibc")
    r = subprocess.run(["make", "-C", str(ROOT), "firmware"], capture_output=True, text=True)
    assert r.returncode == 0, "make firmware failed:\n" + (r.stdout + r.stderr)[-3000:]
    return FIRMWARE


def run_vboard(fw, script, tmp, frames, sensor, timeout=300):
    path = tmp / "script.py"
    path.write_text(script)
    cmd = [sys.executable, "-m", "openkpu.vboard", "run", str(fw), str(path), "--sensor", sensor,
           "--timeout", str(timeout)]
    if frames is not None:
        cmd += ["--frames", str(frames)]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=str(ROOT), timeout=timeout + 60)


def _picture(seed, w, h):
    """A picture with no symmetry: smooth gradients plus noise (mirror/flip/crop mistakes cannot hide)."""
    import numpy as np
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w]
    a = np.stack([x * 255 // max(1, w - 1), y * 255 // max(1, h - 1), (x * 3 + y * 5) % 256], -1)
    a = (a + rng.randint(0, 64, size=a.shape)) % 256
    return a.astype(np.uint8)


def _q565(a):
    import numpy as np
    a = a.astype(np.uint32)
    r, g, b = a[..., 0] >> 3, a[..., 1] >> 2, a[..., 2] >> 3
    return np.stack([(r * 255 + 15) // 31, (g * 255 + 31) // 63, (b * 255 + 15) // 31], -1).astype(np.uint8)


# (pixformat, framesize, (w, h), hmirror, vflip, window or None)
STEPS = [
    ("RGB565", "QVGA", (320, 240), False, False, None),
    ("RGB565", "QVGA", (320, 240), True, True, None),
    ("RGB565", "QQVGA", (160, 120), False, True, None),
    ("GRAYSCALE", "QVGA", (320, 240), True, False, None),
    ("GRAYSCALE", "QQVGA", (160, 120), False, False, None),
    ("RGB565", "QQVGA", (160, 120), True, False, None),
]
WINDOW_STEPS = [  # the OV5640 has no set_windowing (nor in MaixPy)
    ("RGB565", "QVGA", (320, 240), False, False, (40, 16, 224, 200)),
    ("GRAYSCALE", "QVGA", (320, 240), True, True, (0, 8, 240, 224)),
]
# a value of MaixPy's register tables that the firmware must have written at reset() (read back over SCCB in the
# bank / page the firmware leaves selected: OV2640 DSP, GC0328 page 0)
QUALITY_REG = {"ov2640": (0xC3, 0xED), "gc0328": (0x70, 0x45), "ov5640": (0x5001, 0xA3)}
IDS = {"ov2640": 0x2642, "gc0328": 0x9D, "ov5640": 0x5640}


def _script(steps, quality):
    lines = ["import sensor", "sensor.reset()", "print('ID', sensor.get_id())",
             "print('Q', sensor.__read_reg(%d))" % quality[0]]
    for i, (fmt, size, _, hm, vf, win) in enumerate(steps):
        lines += ["sensor.set_pixformat(sensor.%s)" % fmt, "sensor.set_framesize(sensor.%s)" % size,
                  "sensor.set_hmirror(%s)" % hm, "sensor.set_vflip(%s)" % vf]
        if win:
            lines.append("sensor.set_windowing(%r)" % (win,))
        lines += ["img = sensor.snapshot()", "b = img.planes()",
                  "print('F', %d, img.width(), img.height(), len(b))" % i,
                  "for i in range(0, len(b), 4096):", "    print('H', b[i:i + 4096].hex())", "print('E', %d)" % i]
    return "\n".join(lines) + "\n"


def _frames_out(text):
    """{step: (w, h, bytes)} from the script's F / H / E lines."""
    out, cur = {}, None
    for ln in text.replace("\r", "").splitlines():
        if ln.startswith("F "):
            _, i, w, h, n = ln.split()
            cur = [int(i), int(w), int(h), bytearray()]
        elif ln.startswith("H ") and cur is not None:
            cur[3] += bytes.fromhex(ln[2:])
        elif ln.startswith("E ") and cur is not None:
            out[cur[0]] = (cur[1], cur[2], bytes(cur[3]))
            cur = None
    return out


@pytest.mark.parametrize("sensor", ["ov2640", "gc0328", "ov5640"])
def test_snapshot_is_the_source_picture(firmware, tmp_path, sensor):
    import numpy as np
    from PIL import Image
    steps = STEPS + (WINDOW_STEPS if sensor != "ov5640" else [])
    folder = tmp_path / "frames"
    folder.mkdir()
    pictures = []
    for i, step in enumerate(steps):
        w, h = step[2]
        pic = _picture(100 + i, w, h)
        Image.fromarray(pic, "RGB").save(str(folder / ("%02d.png" % i)))
        pictures.append(pic)
    r = run_vboard(firmware, _script(steps, QUALITY_REG[sensor]), tmp_path, folder, sensor)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert re.search(r"^ID %d$" % IDS[sensor], r.stdout, re.M), r.stdout[:500]
    assert re.search(r"^Q %d$" % QUALITY_REG[sensor][1], r.stdout, re.M), r.stdout[:500]
    got = _frames_out(r.stdout)
    assert sorted(got) == list(range(len(steps))), r.stdout[-500:]
    for i, (fmt, size, (fw, fh), hm, vf, win) in enumerate(steps):
        x, y, w, h = win or (0, 0, fw, fh)
        want = pictures[i][y:y + h, x:x + w]
        if hm:
            want = want[:, ::-1]
        if vf:
            want = want[::-1]
        gw, gh, data = got[i]
        assert (gw, gh) == (w, h), (i, gw, gh)
        if fmt == "GRAYSCALE":
            want = np.asarray(Image.fromarray(np.ascontiguousarray(want), "RGB").convert("L"))
            have = np.frombuffer(data, np.uint8).reshape(h, w)
            bad = have != want
        else:
            have = np.frombuffer(data, np.uint8).reshape(3, h, w).transpose(1, 2, 0)
            bad = np.any(_q565(have) != _q565(want), axis=-1)
            if sensor == "ov5640":  # RGB565 on the bus: the planes hold the expanded 5/6/5-bit values
                bad |= np.any(have != _q565(want), axis=-1)
        ys, xs = np.nonzero(bad)
        assert not bad.any(), "%s step %d (%s %s hmirror=%s vflip=%s window=%s): %d pixels differ, e.g. at %s" % (
            sensor, i, fmt, size, hm, vf, win, bad.sum(), list(zip(xs[:5].tolist(), ys[:5].tolist())))


@pytest.mark.parametrize("sensor, reg, message", [
    ("gc0328", 0x37, "GC0328 page 0 register 0x37"),
    ("gc0328", 0x44, "GC0328 output format 0x44 = 0x01"),  # a known register, a value the model does not know
    ("ov5640", 0x6000, "OV5640 register 0x6000"),
])
def test_unknown_register_write_stops_the_board(firmware, tmp_path, sensor, reg, message):
    """An SCCB write the sensor model does not know (register or value) stops the board with a message naming
    the register."""
    r = run_vboard(firmware, "import sensor\nsensor.reset()\nsensor.__write_reg(%d, 1)\n" % reg, tmp_path, None,
                   sensor, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr


def test_dvp_format_must_match_what_the_sensor_sends(firmware, tmp_path):
    """The OV5640 sends RGB565 for RGB565 frames: a guest that switches it to YUV behind the firmware's back makes
    the DVP (set for RGB565 input) and the sensor disagree, which the board reports instead of converting."""
    script = ("import sensor\nsensor.reset()\nsensor.set_pixformat(sensor.RGB565)\n"
              "sensor.set_framesize(sensor.QQVGA)\nsensor.snapshot()\nsensor.__write_reg(0x4300, 0x10)\n"
              "sensor.__write_reg(0x501F, 0x00)\nsensor.snapshot()\n")
    folder = tmp_path / "frames"
    folder.mkdir()
    from PIL import Image
    for i in range(2):
        Image.fromarray(_picture(i, 160, 120), "RGB").save(str(folder / ("%d.png" % i)))
    r = run_vboard(firmware, script, tmp_path, folder, "ov5640", timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the DVP takes RGB565 (dvp_cfg format 0) but the OV5640 sends YUV422" in r.stderr, r.stderr


def test_ov5640_has_no_windowing(firmware, tmp_path):
    script = ("import sensor\nsensor.reset()\nsensor.set_framesize(sensor.QVGA)\n"
              "sensor.set_windowing((224, 224))\nsensor.snapshot()\n")
    r = run_vboard(firmware, script, tmp_path, None, "ov5640", timeout=120)
    assert r.returncode == 1 and "set_windowing is not supported with the OV5640" in r.stderr, r.stdout + r.stderr

# SPDX-License-Identifier: Apache-2.0
"""What a new user sees when something is off: each message names what the thing is and what to do, in MaixPy's
error style, never a raw TypeError/OverflowError or a traceback from the tools."""
import os
import subprocess
import sys
import zipfile

import pytest

import KPU as kpu
from openkpu import flashing
from openkpu.model_tools import swap_words

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(ROOT, "examples", "models", "digits.kmodel")


@pytest.fixture
def digits():
    with open(DIGITS, "rb") as f:
        return f.read()


@pytest.fixture(autouse=True)
def no_flash_image():
    yield
    kpu.set_flash_image(None)


def load_error(arg):
    with pytest.raises(ValueError) as e:
        kpu.load(arg)
    return str(e.value)


def test_a_word_swapped_model_says_so_from_a_file_and_from_flash(digits, tmp_path):
    path = tmp_path / "digits_be.kmodel"
    path.write_bytes(swap_words(digits))
    msg = load_error(str(path))
    assert msg.startswith("[MAIXPY]kpu: load error:2002, ERR_KMODEL_VERSION: a kmodel word-swapped for kpu.load_flash")
    assert "kpu.load_flash(address" in msg and "openkpu swap --unswap IN.kmodel OUT.kmodel" in msg
    flash = bytearray(b"\xff" * 0x20000)
    flash[0x10000:0x10000 + len(digits)] = swap_words(digits)
    (tmp_path / "flash.bin").write_bytes(bytes(flash))
    kpu.set_flash_image(str(tmp_path / "flash.bin"))
    msg = load_error(0x10000)
    assert "a kmodel word-swapped for kpu.load_flash" in msg and "at 0x10000)" in msg


@pytest.mark.parametrize("name, head, kind", [
    ("model.tflite", b"\x1c\x00\x00\x00TFL3\x00\x00", "a TensorFlow Lite model (.tflite)"),
    ("model.onnx", b"\x08\x07\x12\x07pytorch", "an ONNX model (.onnx)"),
    ("model.h5", b"\x89HDF\r\n\x1a\n", "a Keras/HDF5 model (.h5)"),
    ("frozen.pb", b"\x0a\x0e\x0a\x05input", "a TensorFlow graph (.pb)"),
    ("renamed.kmodel", b"\x1c\x00\x00\x00TFL3\x00\x00", "a TensorFlow Lite model (.tflite)"),  # by content
])
def test_another_frameworks_model_says_what_it_is_and_how_to_compile_it(tmp_path, name, head, kind):
    path = tmp_path / name
    path.write_bytes(head + b"\x00" * 200)
    msg = load_error(str(path))
    assert "ERR_KMODEL_VERSION: this is %s, not a kmodel: compile it to a kmodel first with nncase" % kind in msg
    assert "ncc 0.1.0-rc5 gives kmodel v3" in msg and "nncase 0.2.0-beta4 kmodel v4" in msg and "kmodel v5" in msg


def test_an_erased_flash_offset_says_nothing_is_flashed_there(digits, tmp_path):
    flash = bytearray(b"\xff" * 0x40000)
    flash[0x10000:0x10000 + len(digits)] = digits
    (tmp_path / "flash.bin").write_bytes(bytes(flash))
    kpu.set_flash_image(str(tmp_path / "flash.bin"))
    msg = load_error(0x30000)
    assert ("ERR_KMODEL_VERSION: nothing is flashed there (the bytes are erased flash, all 0xFF): flash the model at "
            "this offset (first bytes FF FF FF FF)") in msg and "at 0x30000)" in msg
    assert kpu.load(0x10000) is not None  # the flashed one still loads


def test_run_yolo2_after_deinit_says_the_model_was_freed(digits):
    net = kpu.load(DIGITS)
    kpu.init_yolo2(net, 0.5, 0.3, 5, [1.0] * 10)
    kpu.deinit(net)
    with pytest.raises(ValueError, match=r"model was freed \(deinit\)"):
        kpu.run_yolo2(net, bytes(64))


def test_a_huge_output_index_is_maixpys_index_error_not_an_overflow():
    net = kpu.load(DIGITS)
    inp = net.net_arg().inputs()[0]
    for index in (2 ** 40, -1, 1):
        with pytest.raises(OSError) as e:
            kpu.forward(net, bytes(inp[5]), index)
        assert e.value.errno == 2011
        assert "forward error:2011, ERR_IDX_OUTRANGE: output index %d out of range: the model has 1 output(s)" % index \
            in str(e.value)
        assert "to run only the first n layers call kpu.set_layers(task, n) before forward" in str(e.value)
    kpu.deinit(net)


@pytest.mark.parametrize("arg, says", [
    ("abc", "the feature must be a list or tuple of numbers (or an fmap), not str"),
    (b"abc", "the feature must be a list or tuple of numbers (or an fmap), not bytes"),
    ([0.1, "x"], "the feature must be a sequence of numbers"),
])
def test_face_encode_of_non_numbers_is_a_maixpy_error(arg, says):
    with pytest.raises(ValueError) as e:
        kpu.face_encode(arg)
    assert str(e.value).startswith("[MAIXPY]kpu: face_encode error:2001, ERR_PARAM: ") and says in str(e.value)


def test_a_truncated_kfpkg_is_a_damaged_kfpkg(tmp_path):
    good = tmp_path / "good.kfpkg"
    with zipfile.ZipFile(str(good), "w") as z:
        z.writestr("flash-list.json", '{"version": "0.1.0", "files": [{"address": 65536, "bin": "m.kmodel", '
                                      '"sha256Prefix": false}]}')
        z.writestr("m.kmodel", open(DIGITS, "rb").read())
    cut = tmp_path / "cut.kfpkg"
    cut.write_bytes(good.read_bytes()[:300])
    with pytest.raises(ValueError) as e:
        kpu.set_flash_image(str(cut))
    assert "cut.kfpkg is a damaged kfpkg: a truncated zip archive (its directory is missing); download or copy it " \
           "again" in str(e.value)
    (tmp_path / "junk.kfpkg").write_bytes(b"hello")
    with pytest.raises(ValueError, match="junk.kfpkg is a damaged kfpkg: not a zip archive at all"):
        kpu.set_flash_image(str(tmp_path / "junk.kfpkg"))


def test_alignment_advice_never_points_past_the_flash(tmp_path, capsys):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00" * 6000)
    out = tmp_path / "x.kfpkg"
    # 0xffe100: the next boundary (0xfff000) leaves 4 KiB, too little for 6000 bytes; only 0xffe000 is offered
    assert flashing.main(["pack", "-o", str(out), str(blob) + "@0xffe100"]) == 2
    err = capsys.readouterr().err
    assert "not on a 4 KiB sector boundary" in err and "use 0xffe000" in err and "0xfff000" not in err
    assert flashing.main(["pack", "-o", str(out), str(blob) + "@0xfff100"]) == 2
    err = capsys.readouterr().err
    assert "no 4 KiB boundary near it leaves room for its 6000 bytes before the end of the flash" in err


def test_a_frames_file_that_is_not_an_image_is_a_usage_error_without_a_traceback(tmp_path):
    bad = tmp_path / "frame.png"
    bad.write_text("not an image")
    script = tmp_path / "cam.py"
    script.write_text("import sensor\nsensor.reset()\nimg = sensor.snapshot()\nprint('got', img)\n")
    r = subprocess.run([sys.executable, "-m", "openkpu", "run", str(script), "--frames", str(bad), "--quiet"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "[openkpu] error: frame %s is not an image Pillow can read" % bad in r.stderr


def test_the_runner_says_a_flash_package_is_damaged_without_a_traceback(tmp_path):
    cut = tmp_path / "cut.kfpkg"
    cut.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    script = tmp_path / "s.py"
    script.write_text("print('never')\n")
    r = subprocess.run([sys.executable, "-m", "openkpu", "run", str(script), "--flash", str(cut)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "cut.kfpkg is a damaged kfpkg: a truncated zip archive" in r.stderr and "never" not in r.stdout


# ---- inputs: NumPy arrays in the layout Pillow and OpenCV give are converted, never read as planar by accident ----

def test_an_hwc_image_array_is_transposed_and_other_layouts_or_dtypes_are_named(tmp_path):
    np = pytest.importorskip("numpy")
    kw = pytest.importorskip("openkpu.kmodel_writer")
    rng = np.random.default_rng(7)
    conv = kw.KpuConv(in_w=16, in_h=12, in_c=3, out_c=4, kernel=1, depthwise=False,
                      weights=rng.integers(0, 256, size=(4, 3, 1, 1)), pool_type=0, pad_value=0, arg_x=-128, shr_x=0,
                      arg_w=-128, shr_w=0, arg_add=0, bn_mul=[20] * 4, bn_add=[0] * 4, bn_shift=[15] * 4,
                      act=kw.ActTable([-(1 << 35)] + list(range(1, 16)), [1] * 16, [0] * 16, [0] * 16),
                      src=0, dst=100, main_out=0)
    path = tmp_path / "rgb.kmodel"
    path.write_bytes(kw.V3Model(layers=[conv], outputs=[(0, conv.out_bytes())], eight_bit=True).to_bytes())
    net = kpu.load(str(path))
    hwc = rng.integers(0, 256, size=(12, 16, 3), dtype=np.uint8)   # what PIL.Image / cv2 give
    planar = np.ascontiguousarray(hwc.transpose(2, 0, 1))
    want = kpu.forward(net, planar.tobytes()).data()
    assert kpu.forward(net, hwc).data() == want
    assert kpu.forward(net, planar).data() == want
    assert kpu.forward(net, hwc[np.newaxis]).data() == want        # a batch of one
    assert kpu.forward(net, planar.reshape(-1)).data() == want      # flat: as bytes
    with pytest.raises(ValueError) as e:
        kpu.forward(net, hwc.astype(np.float32))
    assert "the array's elements are float32: convert it, e.g. arr.astype(np.uint8)" in str(e.value)
    with pytest.raises(ValueError) as e:
        kpu.forward(net, hwc.reshape(16, 12, 3))                     # W x H x C: a transposed image
    assert "ERR_SIZE_NOTMATCH" in str(e.value) and "the array is 16x12x3: give it as H x W x C (12, 16, 3) or " \
        "planar C x H x W (3, 12, 16)" in str(e.value)
    kpu.deinit(net)

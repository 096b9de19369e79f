# SPDX-License-Identifier: Apache-2.0
"""kmodel v5 (nncase 1.x) through MaixPy's API (the installed KPU shim over the CPython binding) and the `openkpu`
tools, on the nncase-compiled models of ../shared/testdata/kmodel_v5_nncase (skipped, saying why, without them).

What the outputs are compared with is never produced by openkpu: the nncase Simulator's reference outputs
(NAME.outN.npy), the testdata's own dumps of every k210 instruction and stackvm tensor call (NAME.kmodel.header.txt,
made by an independent decoder), the YOLOv2 region decode of tests_host/yolo_reference.py on the reference output,
and a small NumPy YOLOX decoder written here from the example's decoder (grids of strides 8/16/32, score =
objectness x class, greedy NMS)."""
import collections
import json
import os
import re
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import KPU as kpu
from openkpu.board import image

import yolo_reference
from test_api_post import check_set_outputs_yolo_head

DIR = "kmodel_v5_nncase"
# the models whose outputs equal the Simulator's bit for bit under the default rounding (floatin and YOLOX have
# negative KPU activation slopes, which nncase's Simulator rounds its own way: exact with act_round="nncase1",
# test_v5_models.py)
EXACT = ["iris_f32_v190", "iris_ptq_v190", "convnet_u8_v190", "convnet_u8_v100", "multiout_u8out_v190",
         "multiout_k210copy_v190", "yolo320_v190"]
ALL = EXACT + ["floatin_f32_v190", "yolox_nano_224"]


pytestmark = pytest.mark.usefixtures("clean_kpu")


def case(testdata, name):
    return {c["name"]: c for c in json.loads(testdata(DIR, "cases.json").read_text())}[name]


def model_path(testdata, name):
    return testdata(DIR, name + ".kmodel")


def model_input(testdata, name):
    return np.load(testdata(DIR, name + ".in.npy"))


def references(testdata, name):
    return [np.load(testdata(DIR, o["file"])) for o in case(testdata, name)["outputs"]]


def fmap_array(fm, ref):
    return np.frombuffer(fm.data(), ref.dtype).reshape(ref.shape)


def openkpu_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "openkpu"] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


# ---------------------------------------------------------------------------------------------------------------
# load, forward, get_output, set_outputs, fmap


@pytest.mark.parametrize("name", EXACT)
def test_forward_gives_the_simulators_outputs(testdata, name):
    net = kpu.load(str(model_path(testdata, name)))
    assert net.model_addr() == -1 and net.model_size() == case(testdata, name)["bytes"]
    assert "kmodel v5" in repr(net)
    x = model_input(testdata, name)
    refs = references(testdata, name)
    fm = kpu.forward(net, x)  # a NumPy array: C x H x W planar (u8) or float32 values
    assert fm.typecode() == ("f" if refs[0].dtype == np.float32 else "B")
    assert fm.size() == refs[0].nbytes
    assert np.array_equal(fmap_array(fm, refs[0]), refs[0])
    for i, ref in enumerate(refs):
        # every output, as forward's output index and as get_output of the same run
        assert np.array_equal(fmap_array(kpu.get_output(net, i), ref), ref), i
        assert np.array_equal(fmap_array(kpu.forward(net, x, i), ref), ref), i
    # the other input forms of forward: bytes, and a list of floats for a float input
    assert np.array_equal(fmap_array(kpu.forward(net, x.tobytes()), refs[0]), refs[0])
    if x.dtype == np.float32:
        fm = kpu.forward(net, [float(v) for v in x.ravel()])
        assert np.array_equal(fmap_array(fm, refs[0]), refs[0])
        assert list(fm[:]) == [float(v) for v in refs[0].ravel()]
    kpu.deinit(net)


def test_fmap_shapes_follow_the_models_outputs(testdata):
    net = kpu.load(str(model_path(testdata, "yolo320_v190")))
    fm = kpu.forward(net, image.Image(str(testdata(DIR, "yolo320_v190.in.png"))))  # the PNG holds the input pixels
    assert (fm.w(), fm.h(), fm.ch(), fm.typecode(), len(fm)) == (10, 7, 125, "f", 8750)
    assert np.array_equal(fmap_array(fm, references(testdata, "yolo320_v190")[0]),
                          references(testdata, "yolo320_v190")[0])
    conv = kpu.load(str(model_path(testdata, "convnet_u8_v190")))
    fm = kpu.forward(conv, model_input(testdata, "convnet_u8_v190"))
    assert (fm.w(), fm.h(), fm.ch()) == (10, 1, 1)  # a flat float vector: MaixPy's (count, 1, 1)
    assert int(np.argmax(fm[:])) == 1 and max(fm[:]) == pytest.approx(0.1203778, abs=1e-7)  # the README's headline
    multi = kpu.load(str(model_path(testdata, "multiout_u8out_v190")))
    x = model_input(testdata, "multiout_u8out_v190")
    out0, out1 = kpu.forward(multi, x), kpu.get_output(multi, 1)
    assert (out0.w(), out0.h(), out0.ch(), out0.typecode()) == (16, 16, 8, "B")
    assert (out1.size(), out1.typecode()) == (4, "B")
    ref0, ref1 = references(testdata, "multiout_u8out_v190")
    assert bytes(out0) == ref0.tobytes() and bytes(out1) == ref1.tobytes()
    # kpu.fmap: channel c of a u8 map is the image of the reference's channel c
    for c in (0, 3, 7):
        img = kpu.fmap(out0, c)
        assert (img.width(), img.height()) == (16, 16)
        assert img.to_bytes() == ref0[0, c].tobytes()
    with pytest.raises(ValueError, match=r"error:2011.*channel 8 out of range, the map has 8 channels"):
        kpu.fmap(out0, 8)
    with pytest.raises(ValueError, match="need a u8"):
        kpu.fmap(fm, 0)
    with pytest.raises(OSError, match="2011"):
        kpu.forward(multi, x, 2)
    assert kpu.fmap_free(out0) is None and out0.size() == 0


def test_set_outputs_on_v5(testdata, capsys):
    net = kpu.load(str(model_path(testdata, "yolo320_v190")))
    x = model_input(testdata, "yolo320_v190")
    ref = references(testdata, "yolo320_v190")[0]
    check_set_outputs_yolo_head(net, capsys)
    fm = kpu.forward(net, x)
    assert (fm.w(), fm.h(), fm.ch()) == (70, 1, 125) and np.array_equal(fmap_array(fm, ref), ref)
    # a v5 model can declare u8 outputs: set_outputs counts their values as bytes
    multi = kpu.load(str(model_path(testdata, "multiout_k210copy_v190")))
    assert kpu.set_outputs(multi, 0, 16, 16, 4) is False
    assert "2048 bytes = 2048 uint8 values" in capsys.readouterr().out
    assert kpu.set_outputs(multi, 0, 32, 8, 8) is True and kpu.set_outputs(multi, 1, 2, 2, 1) is True
    out0 = kpu.forward(multi, model_input(testdata, "multiout_k210copy_v190"))
    out1 = kpu.get_output(multi, 1)
    ref0, ref1 = references(testdata, "multiout_k210copy_v190")
    assert (out0.w(), out0.h(), out0.ch()) == (32, 8, 8) and bytes(out0) == ref0.tobytes()
    assert (out1.w(), out1.h(), out1.ch()) == (2, 2, 1) and bytes(out1) == ref1.tobytes()


def test_set_layers_stops_at_a_v5_step(testdata):
    """set_layers(n) on v5 counts the steps netinfo lists; output 0 is then step n-1's output (its own shape)."""
    net = kpu.load(str(model_path(testdata, "convnet_u8_v190")))
    info = kpu.netinfo(net)
    first_conv = [l.index() for l in info if l.type_name() == "kpu_conv2d"][0]
    kpu.set_layers(net, first_conv + 1)
    fm = kpu.forward(net, model_input(testdata, "convnet_u8_v190"))
    assert fm.index() == first_conv and fm.typecode() == "B"
    assert (fm.w(), fm.h(), fm.ch()) == (info[first_conv].wo(), info[first_conv].ho(), info[first_conv].cho())
    kpu.set_layers(net, 0)
    ref = references(testdata, "convnet_u8_v190")[0]
    assert np.array_equal(fmap_array(kpu.forward(net, model_input(testdata, "convnet_u8_v190")), ref), ref)


def test_wrong_inputs_are_refused_with_the_v5_shapes(testdata):
    net = kpu.load(str(model_path(testdata, "yolo320_v190")))
    with pytest.raises(ValueError, match=r"2012.*320x240x3 \(w x h x ch\) planar u8 image = 230400 bytes.*224x224x3"):
        kpu.forward(net, image.Image(str(testdata(DIR, "yolox_nano_224.in.png"))))
    iris = kpu.load(str(model_path(testdata, "iris_f32_v190")))
    with pytest.raises(ValueError, match=r"2012.*4 float32 values.*got a list of 3 values"):
        kpu.forward(iris, [5.1, 3.8, 1.9])
    assert kpu.forward(iris, [5.1, 3.8, 1.9, 0.4])[:] == pytest.approx([16.077797, 5.607656, -2.0717456], abs=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# netinfo, against the testdata's independent dump of every instruction, and against `openkpu inspect`

CONV_LINE = re.compile(r"kpu_conv2d (\d+)x(\d+)x(\d+) -> (\d+)x(\d+)x(\d+) (\d)x\d( depthwise)? pool (\d+) .*"
                       r"weights rdata:u8\[\d+\+(\d+)\]")
TENSOR_LINE = re.compile(r"^\s+\d+ TENSOR 0x[0-9a-f]+ ([A-Z_0-9]+)", re.M)
K210_LINE = re.compile(r"^\s+\d+ (kpu_upload|kpu_download|copy) ", re.M)


def load_bytes(weights, oc, depthwise):
    """para_size (netinfo, the layer argument's bytes per weight load): all weights at once up to 30 KiB, else as
    many whole output channels as fit in 30 KiB (docs/kpu-reference.md section 3); depthwise loads once."""
    per_channel = weights // oc
    return weights if depthwise else min(oc, 30 * 1024 // per_channel) * per_channel


def dumped_steps(text):
    """From NAME.kmodel.header.txt: the KPU convolutions (as netinfo fields) and how many of each other step."""
    convs = sorted((int(wi), int(hi), int(ci), int(wo), int(ho), int(co), int(k == "3"), int(bool(dw)), int(pool),
                    load_bytes(int(para), int(co), bool(dw))) for ci, hi, wi, co, ho, wo, k, dw, pool, para
                   in CONV_LINE.findall(text))
    others = collections.Counter(n for n in TENSOR_LINE.findall(text) if n != "CALL")
    others.update(K210_LINE.findall(text))
    return convs, others


@pytest.mark.parametrize("name", ALL)
def test_netinfo_lists_every_instruction_of_the_dump(testdata, name):
    net = kpu.load(str(model_path(testdata, name)))
    info = kpu.netinfo(net)
    convs, others = dumped_steps(testdata(DIR, name + ".kmodel.header.txt").read_text())
    kpu_layers = [l for l in info if l.is_kpu()]
    assert all(l.type_name() == "kpu_conv2d" for l in kpu_layers)
    got = sorted((l.wi(), l.hi(), l.chi(), l.wo(), l.ho(), l.cho(), l.kernel_type(), l.dw(), l.pool_type(),
                  l.para_size()) for l in kpu_layers)
    assert got == convs
    assert len(kpu_layers) == case(testdata, name)["k210_instructions"].get("kpu_conv2d", 0)
    assert collections.Counter(l.type_name() for l in info if not l.is_kpu()) == others
    assert [l.index() for l in info] == list(range(len(info)))
    for l in kpu_layers:
        # MACs of a KPU conv at input resolution: w x h x (channels per group) x out channels x k x k
        k = 9 if l.kernel_type() else 1
        assert l.macs() == l.wi() * l.hi() * (1 if l.dw() else l.chi()) * l.cho() * k
        assert l.output_shape()[0] == "B" and l.output_shape()[2:] == (l.cho(), l.ho(), l.wo())
        assert '"type": kpu_conv2d' in repr(l)
    assert sum(l.macs() for l in info) == kpu.memory(net)["kpu_macs"]
    # the last step writes the model's output
    out = net.net_arg().output_info(0)
    assert info[-1].output_shape()[0] == out.typecode


@pytest.mark.parametrize("name", ["convnet_u8_v100", "multiout_k210copy_v190"])
def test_inspect_agrees_with_netinfo_and_memory(testdata, name):
    path = model_path(testdata, name)
    out = openkpu_cli("inspect", path, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["version"] == 5 and report["format"].startswith("kmodel v5")
    net = kpu.load(str(path))
    info = kpu.netinfo(net)
    assert len(report["layers"]) == len(info)
    for row, l in zip(report["layers"], info):
        assert (row["index"], row["type"], row["type_name"], row["is_kpu"], row["macs"]) == (
            l.index(), l.type(), l.type_name(), l.is_kpu(), l.macs())
        assert row["output"]["shape_nchw"] == list(l.output_shape()[1:])
        if l.is_kpu():
            k = row["kpu"]
            assert (k["in_whc"], k["out_whc"], k["depthwise"], k["kernel_type"], k["pool_type"], k["para_size"]) == (
                [l.wi(), l.hi(), l.chi()], [l.wo(), l.ho(), l.cho()], bool(l.dw()), l.kernel_type(), l.pool_type(),
                l.para_size())
    mem = kpu.memory(net)
    for key in ("model_bytes", "main_mem", "context_bytes", "sram_total", "kpu_rows_used", "kpu_macs"):
        assert report["memory"][key] == mem[key], key
    m = net.net_arg()
    assert [t["shape_nchw"] for t in report["outputs"]] == [
        [o.n, o.c, o.h, o.w] for o in (m.output_info(i) for i in range(m.output_count()))]
    n, c, h, w = case(testdata, name)["input"]["shape"]
    assert report["inputs"][0]["forward_takes"] == "a %dx%d RGB888 image" % (w, h)
    text = openkpu_cli("inspect", path)
    assert text.returncode == 0, text.stderr
    first = text.stdout.splitlines()[0]
    assert first == "%s: kmodel v5 (nncase v1.x, K210 target), %d bytes" % (path, path.stat().st_size)
    assert "layer bodies (the instructions in the modules' .text)" in text.stdout


# ---------------------------------------------------------------------------------------------------------------
# run_yolo2 on the YOLOv2-shaped model


def test_run_yolo2_matches_an_independent_decode_of_the_reference(testdata):
    c = case(testdata, "yolo320_v190")
    y = c["yolo2"]
    ref = references(testdata, "yolo320_v190")[0]
    w, h, ch = y["grid"]
    independent = yolo_reference.region_decode(ref.ravel(), w, h, ch, y["anchors"], y["threshold"], y["nms"],
                                               320, 240)
    # the reference decode is the README's list
    assert len(independent) == len(y["expected"])
    for got, want in zip(sorted(independent, key=lambda d: d[4]), sorted(y["expected"], key=lambda d: d[4])):
        assert got[5] == want[5] and got[4] == pytest.approx(want[4], abs=1e-4)
        assert max(abs(a - b) for a, b in zip(got[:4], want[:4])) <= 1
    net = kpu.load(str(model_path(testdata, "yolo320_v190")))
    kpu.init_yolo2(net, y["threshold"], y["nms"], y["anchor_num"], tuple(y["anchors"]))
    found = kpu.run_yolo2(net, image.Image(str(testdata(DIR, "yolo320_v190.in.png"))))
    assert found is not None and len(found) == len(independent)
    for obj, want in zip(found, independent):  # same order: anchor-major, cells row-major
        assert obj.classid() == want[5] and obj.value() == pytest.approx(want[4], abs=1e-4)
        assert max(abs(a - b) for a, b in zip(obj.rect(), want[:4])) <= 1
        assert obj.objnum() == len(found)
    print("run_yolo2 on yolo320_v190:", [(o.rect(), round(o.value(), 4), o.classid()) for o in found])
    # the output is not altered in place: get_output still gives the Simulator's numbers
    assert np.array_equal(fmap_array(kpu.get_output(net, 0), ref), ref)


# ---------------------------------------------------------------------------------------------------------------
# YOLOX-nano: its output decoded to boxes on the example's picture

COCO_PERSON = 0


def yolox_decode(out, size=224, threshold=0.3, nms=0.65):
    """nncase's YOLOX example decoder (yolox.cpp), in NumPy: rows are the cells of the 28x28, 14x14, 7x7 grids (strides
    8, 16, 32; row-major), each x, y, w, h, objectness, 80 class scores; a box = centre ((x + gx) * s, (y + gy) * s),
    size (exp(w) * s, exp(h) * s); one proposal per class whose objectness x class score > threshold; greedy NMS by
    score over all classes. Returns (score, class, x, y, w, h) with x, y the top-left corner."""
    out = np.asarray(out, np.float64).reshape(-1, 85)
    gx, gy, st = [], [], []
    for s in (8, 16, 32):
        n = size // s
        rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        gx.append(cols.ravel())
        gy.append(rows.ravel())
        st.append(np.full(n * n, s))
    gx, gy, st = (np.concatenate(v) for v in (gx, gy, st))
    assert gx.size == out.shape[0]
    bw, bh = np.exp(out[:, 2]) * st, np.exp(out[:, 3]) * st
    x0, y0 = (out[:, 0] + gx) * st - bw / 2, (out[:, 1] + gy) * st - bh / 2
    score = out[:, 4:5] * out[:, 5:]
    cells, classes = np.nonzero(score > threshold)
    proposals = sorted(((float(score[i, k]), int(k), x0[i], y0[i], bw[i], bh[i]) for i, k in zip(cells, classes)),
                       key=lambda p: -p[0])
    kept = []
    for p in proposals:
        if all(iou(p[2:], q[2:]) <= nms for q in kept):
            kept.append(p)
    return kept


def iou(a, b):
    iw = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    ih = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    inter = max(iw, 0.0) * max(ih, 0.0)
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def test_yolox_nano_decodes_to_the_three_people(testdata):
    """YOLOX-nano through kpu.load / kpu.forward on yolox_nano_224.in.png (the example's letterboxed photo of three
    people). The reference output decodes to the README's four boxes (three people, the fourth overlapping the
    right-hand one). Under the default rounding openkpu's output is not bit-exact (104 KPU layers with negative
    activation slopes: SiLU, whose negative products nncase's Simulator rounds its own way, test_v5_models.py);
    decoded, it finds the three people: every box it finds is a person box of the reference (IoU >= 0.75), and every
    reference box scoring >= 0.7 is found. With kpu.load(..., act_round="nncase1") the output is the reference's
    bit for bit, so it decodes to the same four boxes."""
    c = case(testdata, "yolox_nano_224")
    ref = references(testdata, "yolox_nano_224")[0]
    want = yolox_decode(ref, threshold=c["yolox"]["threshold"], nms=c["yolox"]["nms"])
    assert len(want) == len(c["yolox"]["expected"]) == 4
    for got, (label, score, x, y, w, h) in zip(want, c["yolox"]["expected"]):
        assert label == "person" and got[1] == COCO_PERSON and got[0] == pytest.approx(score, abs=1e-4)
        assert np.allclose(got[2:], (x, y, w, h), atol=0.06)
    net = kpu.load(str(model_path(testdata, "yolox_nano_224")))
    fm = kpu.forward(net, image.Image(str(testdata(DIR, "yolox_nano_224.in.png"))))
    assert (fm.typecode(), len(fm)) == ("f", 1029 * 85)
    got = np.frombuffer(fm.data(), np.float32).reshape(ref.shape)
    found = yolox_decode(got, threshold=c["yolox"]["threshold"], nms=c["yolox"]["nms"])
    for title, boxes in (("openkpu", found), ("reference", want)):
        print("yolox_nano_224, %s: %s" % (title, ", ".join("class %d %.3f (%.1f, %.1f, %.1f, %.1f)" % b
                                                             for b in ((k, s, x, y, w, h)
                                                                       for s, k, x, y, w, h in boxes))))
    assert len(found) >= 3
    for f in found:
        best = max(want, key=lambda w_: iou(f[2:], w_[2:]))
        assert f[1] == best[1] == COCO_PERSON and iou(f[2:], best[2:]) >= 0.75, (f, best)
    for w_ in want:
        if w_[0] >= 0.7:
            assert any(iou(f[2:], w_[2:]) >= 0.75 for f in found), w_
    kpu.deinit(net)
    net = kpu.load(str(model_path(testdata, "yolox_nano_224")), act_round="nncase1")
    fm = kpu.forward(net, image.Image(str(testdata(DIR, "yolox_nano_224.in.png"))))
    exact = np.frombuffer(fm.data(), np.float32).reshape(ref.shape)
    assert np.array_equal(exact, ref)
    assert yolox_decode(exact, threshold=c["yolox"]["threshold"], nms=c["yolox"]["nms"]) == want


# ---------------------------------------------------------------------------------------------------------------
# flash: kpu.load(offset), kpu.load_flash, and the `openkpu flash` / `swap` tools that prepare them


def pack(tmp_path, *items):
    out = tmp_path / "v5.kfpkg"
    r = openkpu_cli("flash", "pack", "-o", out, *items)
    assert r.returncode == 0, r.stderr
    return out


def test_load_from_a_flash_offset_and_load_flash(testdata, tmp_path):
    yolo = model_path(testdata, "yolo320_v190")
    iris = model_path(testdata, "iris_ptq_v190")
    swapped = tmp_path / "yolo_be.kmodel"
    r = openkpu_cli("swap", yolo, swapped)
    assert r.returncode == 0, r.stderr
    assert "word-swapped kmodel v5" in r.stdout and "MaixPy's own firmware loads no kmodel v5" in r.stderr
    pkg = pack(tmp_path, "%s@0x300000" % yolo, "%s@0x310000" % iris, "%s@0x400000" % swapped)
    kpu.set_flash_image(str(pkg))
    x = model_input(testdata, "yolo320_v190")
    ref = references(testdata, "yolo320_v190")[0]
    net = kpu.load(0x300000)
    assert net.model_addr() == 0x300000 and net.model_path() is None and net.model_size() == yolo.stat().st_size
    assert np.array_equal(fmap_array(kpu.forward(net, x), ref), ref)
    small = kpu.load(0x310000)  # a model followed by erased flash: its size comes from its module headers
    assert small.model_size() == iris.stat().st_size
    iris_ref = references(testdata, "iris_ptq_v190")[0]
    assert np.array_equal(fmap_array(kpu.forward(small, model_input(testdata, "iris_ptq_v190")), iris_ref), iris_ref)
    be = kpu.load_flash(0x400000, 1, 0x4000, 60000000)
    assert be.model_addr() == 0x400000 and be.model_size() == yolo.stat().st_size
    assert np.array_equal(fmap_array(kpu.forward(be, x), ref), ref)
    assert [repr(l) for l in kpu.netinfo(be)] == [repr(l) for l in kpu.netinfo(net)]
    # each loader names the other when given the other's bytes
    with pytest.raises(ValueError, match=r"2002.*word-swapped for kpu.load_flash.*at 0x400000"):
        kpu.load(0x400000)
    with pytest.raises(ValueError, match=r"2002.*NOT word-swapped.*kpu.load\(0x300000\)"):
        kpu.load_flash(0x300000, 0, 0, 60000000)


def test_a_v5_model_cut_by_the_end_of_a_raw_flash_dump(testdata, tmp_path):
    data = model_path(testdata, "convnet_u8_v190").read_bytes()
    flash = tmp_path / "flash.bin"
    flash.write_bytes(b"\xff" * 0x10000 + data[:-100])
    kpu.set_flash_image(str(flash))
    with pytest.raises(ValueError) as e:
        kpu.load(0x10000)
    msg = str(e.value)
    assert "load error:2003" in msg and "kmodel version 5" in msg and "truncated" in msg and "at 0x10000" in msg
    flash.write_bytes(b"\xff" * 0x10000 + data)  # whole, ending at the image's end
    kpu.set_flash_image(str(flash))
    assert kpu.load(0x10000).model_size() == len(data)


def test_a_v5_header_with_too_many_modules_at_a_flash_offset(testdata, tmp_path):
    data = bytearray(model_path(testdata, "iris_f32_v190").read_bytes())
    data[20:24] = (100000).to_bytes(4, "little")
    flash = tmp_path / "flash.bin"
    flash.write_bytes(b"\xff" * 0x1000 + bytes(data))
    kpu.set_flash_image(str(flash))
    with pytest.raises(ValueError, match=r"load error:2003.*kmodel v5 header at flash 0x1000 declares 100000 modules"):
        kpu.load(0x1000)


def test_the_pre_release_v5_at_a_flash_offset_is_refused_by_name(testdata, tmp_path):
    old = model_path(testdata, "yolox_nano_224_old")
    flash = tmp_path / "flash.bin"
    flash.write_bytes(b"\xff" * 0x1000 + old.read_bytes()[:4096])
    kpu.set_flash_image(str(flash))
    with pytest.raises(ValueError, match=r"2002.*pre-release / development-build v5"):
        kpu.load(0x1000)


def test_swap_check_and_unswap_round_trip(testdata, tmp_path):
    src = model_path(testdata, "multiout_k210copy_v190")
    be, back = tmp_path / "be.kmodel", tmp_path / "back.kmodel"
    assert openkpu_cli("swap", src, be).returncode == 0
    data = src.read_bytes()
    words = np.frombuffer(data[:len(data) // 4 * 4], "<u4")
    assert be.read_bytes()[:len(words) * 4] == words.astype(">u4").tobytes()  # every 32-bit word reversed
    r = openkpu_cli("swap", "--check", be)
    assert r.returncode == 0 and "word-swapped kmodel v5" in r.stdout
    r = openkpu_cli("swap", "--check", src)
    assert r.returncode == 0 and "plain kmodel v5" in r.stdout
    r = openkpu_cli("swap", be, tmp_path / "twice.kmodel")
    assert r.returncode == 2 and "already word-swapped" in r.stderr
    assert openkpu_cli("swap", "--unswap", be, back).returncode == 0
    assert back.read_bytes() == data


def test_flash_plan_names_v5_models_and_their_loader(testdata, tmp_path):
    yolo = model_path(testdata, "yolo320_v190")
    be = tmp_path / "be.kmodel"
    assert openkpu_cli("swap", yolo, be).returncode == 0
    r = openkpu_cli("flash", "write", "--dry-run", "%s@0x300000" % yolo, "%s@0x400000" % be)
    assert r.returncode == 0, r.stderr
    assert re.search(r"0x300000\.\.0x309080 .* kmodel v5, for kpu\.load\(0x300000\)", r.stdout)
    assert "kmodel v5 word-swapped, for kpu.load_flash(0x400000, ...)" in r.stdout
    r = openkpu_cli("flash", "write", "--dry-run", "%s@0x300000" % yolo, "%s@0x308000" % be)
    assert r.returncode == 2 and "overlap" in (r.stdout + r.stderr)
    bad = tmp_path / "cut.kmodel"
    bad.write_bytes(yolo.read_bytes()[:1000])
    r = openkpu_cli("flash", "pack", "-o", tmp_path / "x.kfpkg", "%s@0x300000" % bad)
    assert r.returncode == 2 and "kmodel version 5" in (r.stdout + r.stderr)
    with zipfile.ZipFile(pack(tmp_path, "%s@0x300000" % yolo)) as z:
        assert z.read(yolo.name) == yolo.read_bytes()


# ---------------------------------------------------------------------------------------------------------------
# fit and memtest


def test_fit_and_memtest_agree_on_v5_models(testdata, capsys):
    small = [model_path(testdata, n) for n in ("convnet_u8_v190", "yolo320_v190")]
    r = openkpu_cli("fit", "--json", *small)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [m["version"] for m in report["models"]] == [5, 5] and report["together"]["fits"]
    nets = [kpu.load(str(p)) for p in small]
    assert [m["sram_total"] for m in report["models"]] == [kpu.memory(n)["sram_total"] for n in nets]
    assert kpu.memtest() is None
    out = capsys.readouterr().out
    for net in nets:
        info = kpu.memory(net)
        line = [l for l in out.splitlines() if net.model_path() in l]
        assert len(line) == 1 and str(info["sram_total"]) in line[0] and line[0].endswith("; fits")
        assert kpu.rows_text(info["kpu_row_lo"], info["kpu_row_hi"]) in line[0]
    assert "%d B left: fit" % (report["budget"]["for_models"] - report["together"]["sram_total"]) in out
    # YOLOX-nano needs more than MaixPy's full firmware leaves (about 2 MiB); the minimum firmware's 4 MiB hold it
    yolox = model_path(testdata, "yolox_nano_224")
    r = openkpu_cli("fit", yolox)
    assert r.returncode == 1 and "DOES NOT FIT" in r.stdout and "--firmware minimum" in r.stdout
    assert "load_flash" not in r.stdout  # MaixPy streams only v3 bodies from flash; openkpu reads v5 whole
    assert openkpu_cli("fit", "--firmware", "minimum", yolox).returncode == 0
    big = kpu.load(str(yolox))
    assert kpu.memory(big)["fits"] is False
    kpu.memtest()
    out = capsys.readouterr().out
    assert [l for l in out.splitlines() if str(yolox) in l][0].endswith("; DOES NOT FIT")


# ---------------------------------------------------------------------------------------------------------------
# the hand-built v5 files the fuzz seeds and the malformed-input suite start from are valid models


def test_hand_built_v5_seeds_compute_what_they_say():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fuzz"))
    import make_seeds
    import _kpu
    models = make_seeds.v5_seed_models()
    x = (np.arange(16) * 37 % 256).astype(np.uint8)
    m = _kpu.Model(models["v5_kpu_conv"])
    assert [l.type_name for l in m.layers()] == ["kpu_upload", "kpu_conv2d", "kpu_download"]
    m.set_input(0, x.tobytes())
    m.run()
    got = np.frombuffer(m.output(0).data, np.uint8).reshape(2, 16)
    # 1x1 conv with weights 1 and 2, BN x1, linear activation: x and min(2x, 255)
    assert np.array_equal(got[0], x) and np.array_equal(got[1], np.minimum(2 * x.astype(int), 255))
    q = _kpu.Model(models["v5_stackvm_quantize"])
    v = np.linspace(-20, 20, 24).astype(np.float32)
    q.set_input(0, v.tobytes())
    q.run()
    u8 = np.clip(np.rint((v * np.float32(8.0)).astype(np.float32) + np.float32(128.0)), 0, 255)
    want = (u8.astype(np.float32) * np.float32(0.125)).astype(np.float32) + np.float32(-16.0)
    assert np.array_equal(np.frombuffer(q.output(0).data, np.float32), want)

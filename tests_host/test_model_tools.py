"""The kmodel tools (python/openkpu/model_tools.py, scripts/kmodel_tool.py): inspect, fit, swap.

Self-made models (openkpu.kmodel_writer / kmodel_writer_v4) make every command testable without the real models;
the real models in ../shared/testdata (skipped when absent) are checked against their *.header.txt dumps and the
word-swapped face detector MaixPy ships for load_flash.
"""
import argparse
import ast
import json
import os
import random
import re
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import _kpu  # noqa: E402
import KPU as kpu  # noqa: E402
from openkpu import kmodel_writer as kw  # noqa: E402
from openkpu import kmodel_writer_v4 as kw4  # noqa: E402
from openkpu import model_tools as tools  # noqa: E402
from openkpu.kmodel_writer_v4 import CONST, F32, KPU, MAIN, U8, mr  # noqa: E402

MIB = 1024 * 1024
FULL_FIRMWARE_ROOM = 2 * MIB  # for models with the default preset and GC heap (docs/maixpy-kpu-api.md section 6)


# ---------------------------------------------------------------------------------------------------------------
# Self-made models


def _conv(in_w, in_h, in_c, out_c, kernel, src, dst, depthwise=False, pool_type=0, main_out=None):
    shape = (out_c, kernel, kernel) if depthwise else (out_c, in_c, kernel, kernel)
    return kw.KpuConv(in_w=in_w, in_h=in_h, in_c=in_c, out_c=out_c, kernel=kernel, weights=np.ones(shape, np.uint8),
                      bn_mul=[1] * out_c, bn_add=[0] * out_c, bn_shift=[0] * out_c, act=kw.ActTable.linear(),
                      src=src, dst=dst, depthwise=depthwise, pool_type=pool_type, main_out=main_out)


def v3_kpu_model():
    """conv3x3 16x8x3 -> 8x4x8 (max pool), dw3x3 8x4x8, dequantize 256 values: 3 layers, 2 on the KPU."""
    conv = _conv(16, 8, 3, 8, 3, src=0, dst=kw.kpu_map_rows(16, 8, 3), pool_type=1)
    dw = _conv(8, 4, 8, 8, 3, src=conv.dst, dst=0, depthwise=True, main_out=0)
    deq = kw.Dequantize(inp=0, out=256, count=256, scale=0.5, bias=0.0)
    return kw.V3Model(layers=[conv, dw, deq], outputs=[(256, 1024)]).to_bytes()


def v3_float_model():
    """One FULLY_CONNECTED layer, 4 floats in, 3 out: CPU only."""
    fc = kw.FullyConnected(inp=0, out=16, weights=np.arange(12, dtype=np.float32).reshape(3, 4), bias=[1, 2, 3],
                           act=0)
    return kw.V3Model(layers=[fc], outputs=[(16, 12)]).to_bytes()


def v4_kpu_model(constants=b""):
    """kpu_upload of a 16x8x3 u8 input, conv1x1 -> 16x8x4 (main copy), dequantize to float32."""
    conv = _conv(16, 8, 3, 4, 1, src=0, dst=kw.kpu_map_rows(16, 8, 3))
    n_in, n_out = 16 * 8 * 3, 16 * 8 * 4
    w = kw4.V4Writer(main_mem=n_in + n_out + 4 * n_out)
    w.add_input(mr(MAIN, U8, 0, n_in), (1, 3, 8, 16))
    w.add_output(mr(MAIN, F32, n_in + n_out, 4 * n_out))
    if constants:
        w.add_constant(constants)
    w.add(kw4.kpu_upload(mr(MAIN, U8, 0, n_in), mr(KPU, U8, 0, kw.kpu_map_rows(16, 8, 3) * 64), (1, 3, 8, 16)))
    w.add(kw4.kpu_conv2d(conv.pack_args(), kw.pack_bn(conv.bn_mul, conv.bn_add, conv.bn_shift), conv.act.pack(),
                         conv.weights_array(True).tobytes(), main_out=mr(MAIN, U8, n_in, n_out)))
    w.add(kw4.dequantize(mr(MAIN, U8, n_in, n_out), mr(MAIN, F32, n_in + n_out, 4 * n_out), 0, 0.5))
    return w.build()


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def run_tool(capsys, *argv):
    rc = tools.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def run_json(capsys, *argv):
    rc, out, err = run_tool(capsys, *(argv + ("--json",)))
    return rc, json.loads(out), err


def loader_message(data):
    with pytest.raises(ValueError) as info:
        _kpu.Model(data)
    return str(info.value)


def reference_le2be(data):
    """MaixPy-v1_scripts' model_le2be.py, restated: pad with b'0000' to a multiple of 4, reverse each 4 bytes."""
    if len(data) % 4:
        data = data + b"0000"[:4 - len(data) % 4]
    return b"".join(data[i:i + 4][::-1] for i in range(0, len(data), 4))


pytestmark = pytest.mark.usefixtures("clean_kpu")


# ---------------------------------------------------------------------------------------------------------------
# inspect: self-made models


def test_inspect_v3_kpu_model_json(tmp_path, capsys):
    data = v3_kpu_model()
    rc, info, err = run_json(capsys, "inspect", write(tmp_path, "m.kmodel", data))
    assert rc == 0 and err == ""
    assert info["version"] == 3 and info["format"].startswith("kmodel v3") and info["file_bytes"] == len(data)
    assert info["inputs"] == [{"index": 0, "dtype": "uint8", "typecode": "B", "shape_nchw": [1, 3, 8, 16],
                               "bytes": 384, "forward_takes": "a 16x8 RGB888 image"}]
    assert info["outputs"] == [{"index": 0, "dtype": "float32", "typecode": "f", "shape_nchw": [1, 1, 1, 256],
                                "bytes": 1024}]
    conv, dw, deq = info["layers"]
    assert conv["kpu"] == {"in_whc": [16, 8, 3], "out_whc": [8, 4, 8], "kernel": "3x3", "kernel_type": 1,
                           "depthwise": False, "pool_type": 1, "pool": "max 2x2 stride 2", "para_size": 216,
                           "description": "conv3x3 in 16x8x3 -> out 8x4x8"}
    assert dw["kpu"]["depthwise"] and dw["kpu"]["description"] == "dw3x3 in 8x4x8 -> out 8x4x8"
    assert dw["kpu"]["pool"] == "none"
    # the KPU convolves at input resolution: W*H*k*k*Cin*Cout, depthwise W*H*k*k*C
    assert conv["macs"] == 16 * 8 * 9 * 3 * 8 and dw["macs"] == 8 * 4 * 9 * 8
    assert deq["type_name"] == "DEQUANTIZE" and deq["kpu"] is None and deq["macs"] == 0
    # a dequantize of the KPU output keeps its 8x4x8 map (issue 13); the header's output stays a flat vector
    assert deq["output"] == {"dtype": "float32", "shape_nchw": [1, 8, 4, 8]}
    totals = info["totals"]
    assert totals["layers"] == 3 and totals["kpu_layers"] == 2 and totals["cpu_layers"] == 1
    assert totals["by_type"] == {"K210_CONV": 2, "DEQUANTIZE": 1}
    assert totals["kpu_macs"] == conv["macs"] + dw["macs"]
    assert totals["tables_bytes"] == 28 + 8 * 1 + 8 * 3  # header, one output, three layer headers
    assert totals["body_bytes"] == sum(layer["body_size"] for layer in info["layers"])
    core = _kpu.Model(data).memory()
    assert {k: info["memory"][k] for k in core} == core
    assert info["memory"]["kpu_bytes_used"] == core["kpu_rows_used"] * 64


def test_inspect_v3_kpu_model_text(tmp_path, capsys):
    data = v3_kpu_model()
    rc, out, err = run_tool(capsys, "inspect", write(tmp_path, "m.kmodel", data))
    assert rc == 0 and err == ""
    mem = _kpu.Model(data).memory()
    bodies = [layer[4] for layer in _kpu.Model(data).layers()]
    assert "kmodel v3" in out and "%d bytes" % len(data) in out
    assert re.search(r"#0\s+uint8\s+NCHW \[1, 3, 8, 16\]\s+384 B\s+kpu.forward takes a 16x8 RGB888 image", out)
    assert re.search(r"#0\s+float32\s+NCHW \[1, 1, 1, 256\]\s+1024 B", out)
    layer_lines = [line for line in out.splitlines() if re.match(r"\s+\d+\s+(K210_CONV|DEQUANTIZE)\s", line)]
    assert len(layer_lines) == 3
    assert re.search(r"K210_CONV\s+%d\s+27.65 k\s+conv3x3 in 16x8x3 -> out 8x4x8, pool 1 \(max 2x2 stride 2\)"
                     % bodies[0], layer_lines[0])
    assert re.search(r"K210_CONV\s+%d\s+2.30 k\s+dw3x3 in 8x4x8 -> out 8x4x8 \[work [^]]+\]$" % bodies[1], layer_lines[1])
    assert re.search(r"DEQUANTIZE\s+%d\s+-\s+CPU, out float32 \[1, 8, 4, 8\]" % bodies[2], layer_lines[2])
    assert "K210_CONV 2, DEQUANTIZE 1" in out and "KPU MACs per forward: 29952" in out
    for key in ("model_bytes", "model_alloc", "main_mem", "context_bytes", "sram_total"):
        assert "%d B" % mem[key] in out, key
    assert "%d rows of 64 B" % mem["kpu_rows_used"] in out
    assert "rows %d..%d of 32768" % (mem["kpu_row_lo"], mem["kpu_row_hi"] - 1) in out


def test_inspect_v4_kpu_model(tmp_path, capsys):
    data = v4_kpu_model()
    rc, info, _ = run_json(capsys, "inspect", write(tmp_path, "m4.kmodel", data))
    assert rc == 0 and info["version"] == 4 and info["format"].startswith("kmodel v4")
    assert [layer["type_name"] for layer in info["layers"]] == ["kpu_upload", "kpu_conv2d", "dequantize"]
    conv = info["layers"][1]
    assert conv["kpu"]["description"] == "conv1x1 in 16x8x3 -> out 16x8x4" and conv["kpu"]["kernel"] == "1x1"
    assert conv["macs"] == 16 * 8 * 3 * 4 == info["totals"]["kpu_macs"]
    assert info["outputs"][0]["shape_nchw"] == [1, 4, 8, 16] and info["outputs"][0]["bytes"] == 2048
    rc, out, _ = run_tool(capsys, "inspect", write(tmp_path, "m4.kmodel", data))
    assert rc == 0 and "kmodel v4 (nncase v0.2.x)" in out and "kpu_upload 1, kpu_conv2d 1, dequantize 1" in out


def test_inspect_float_cpu_model(tmp_path, capsys):
    data = v3_float_model()
    rc, info, _ = run_json(capsys, "inspect", write(tmp_path, "fc.kmodel", data))
    assert rc == 0
    assert info["inputs"][0]["forward_takes"] == "a list of 4 floats"
    assert info["totals"]["kpu_macs"] == 0 and info["totals"]["kpu_layers"] == 0
    assert info["memory"]["kpu_rows_used"] == 0
    rc, out, _ = run_tool(capsys, "inspect", write(tmp_path, "fc.kmodel", data))
    assert "KPU RAM                   not used (no KPU layer)" in out
    assert re.search(r"FULLY_CONNECTED\s+\d+\s+-\s+CPU, out float32", out)


def v3_pool_model():
    """FULLY_CONNECTED 4 -> 3, then a MAX_POOL2D over an 8x6x4 float map in main memory: kernel 3x2, stride 2x1
    (all different, so a swapped width and height shows) -> 3x5x4."""
    fc = kw.FullyConnected(inp=0, out=16, weights=np.arange(12, dtype=np.float32).reshape(3, 4), bias=[1, 2, 3],
                           act=0)
    pool = kw.MaxPool2d(inp=64, out=64 + 4 * 8 * 6 * 4, in_w=8, in_h=6, in_c=4, out_w=3, out_h=5, out_c=4,
                        kernel_w=3, kernel_h=2, stride_w=2, stride_h=1, padding_w=0, padding_h=0, act=0)
    return kw.V3Model(layers=[fc, pool], outputs=[(64 + 4 * 8 * 6 * 4, 4 * 3 * 5 * 4)]).to_bytes()


def test_inspect_cpu_pool_window(tmp_path, capsys):
    """Issue 13: a CPU pool shows its kernel, stride and maps (from its body), in JSON and in text."""
    path = write(tmp_path, "pool.kmodel", v3_pool_model())
    raw = _kpu.Model(open(path, "rb").read()).layers()[1]
    assert (raw.kernel_w, raw.kernel_h, raw.stride_w, raw.stride_h) == (3, 2, 2, 1)
    assert (raw.wi, raw.hi, raw.chi, raw.wo, raw.ho, raw.cho) == (8, 6, 4, 3, 5, 4)
    assert tuple(raw[-4:]) == (3, 2, 2, 1)  # appended: the older indices are unchanged
    assert (raw[17], raw[21]) == (raw.out_typecode, raw.out_w)
    rc, info, _ = run_json(capsys, "inspect", path)
    assert rc == 0
    fc, pool = info["layers"]
    assert fc["window"] is None and fc["kpu"] is None
    assert pool["type_name"] == "MAX_POOL2D" and pool["kpu"] is None
    win = pool["window"]
    assert win["op"] == "max pool"
    assert win["kernel_wh"] == [3, 2] and win["stride_wh"] == [2, 1]
    assert win["in_whc"] == [8, 6, 4] and win["out_whc"] == [3, 5, 4]
    assert pool["output"]["shape_nchw"] == [1, 4, 5, 3]
    rc, out, _ = run_tool(capsys, "inspect", path)
    assert rc == 0
    assert re.search(r"MAX_POOL2D\s+\d+\s+-\s+CPU max pool 3x2 stride 2x1, 8x6x4 -> 3x5x4, out float32", out), out
    assert re.search(r"FULLY_CONNECTED\s+\d+\s+-\s+CPU, out float32", out)


# ---------------------------------------------------------------------------------------------------------------
# inspect: the real models against their header dumps

REAL_MODELS = [
    ("face_detect_yolo2_v3_maixpy", "facedetect.kmodel"),
    ("iris_fc_cpu_v3_v4", "iris_v3.kmodel"),
    ("iris_fc_cpu_v3_v4", "iris_v4.kmodel"),
    ("mnist_v3_maixpy", "mnist.kmodel"),
    ("mobilenetv1_0.75_v3_maixemc", "mbnetv1.kmodel"),
    ("yolo2_voc20_v3_nncase_rc5", "yolo.kmodel"),
    ("yolo2_voc20_v4_nncase", "yolo.kmodel"),
    ("yolo2_voc20_v4_nncase", "yolo_v0.2.0-alpha1_cpu_maxpool.kmodel"),
    ("ulffd_face_v4_nncase", "slim-320.kmodel"),
    ("ulffd_face_v4_nncase", "RFB-320.kmodel"),
]


def parse_header_dump(path):
    """The *.header.txt dump: scalar fields, input[i]/output[i] dicts, and the layer/node lines in order."""
    dump = {"inputs": [], "outputs": [], "layers": [], "fields": {}}
    for line in path.read_text().splitlines():
        layer = re.match(r"\s+(?:layer|node \d+) (\{.*\})$", line)
        tensor = re.match(r"(input|output)\[\d+\]: (\{.*\})$", line)
        scalar = re.match(r"(\w+): (\d+)$", line)
        if layer:
            dump["layers"].append(json.loads(layer.group(1)))
        elif tensor:
            dump[tensor.group(1) + "s"].append(ast.literal_eval(tensor.group(2)))
        elif scalar:
            dump["fields"][scalar.group(1)] = int(scalar.group(2))
    return dump


def dump_kpu_text(layer):
    """What the dump writes for a KPU layer: 'conv3x3 in 320x240x3 -> out 160x120x16 pool_type=1'."""
    kpu_info = layer["kpu"]
    return "%s pool_type=%d" % (kpu_info["description"], kpu_info["pool_type"])


@pytest.mark.parametrize("folder,name", REAL_MODELS)
def test_inspect_real_model_matches_header_dump(testdata, capsys, folder, name):
    path = testdata(folder, name)
    dump = parse_header_dump(testdata(folder, name + ".header.txt"))
    rc, info, err = run_json(capsys, "inspect", path)
    assert rc == 0 and err == ""
    fields = dump["fields"]
    assert info["version"] == fields["version"] and info["file_bytes"] == fields["size"]
    assert len(info["layers"]) == len(dump["layers"]) == fields.get("layers", fields.get("nodes"))
    for mine, theirs in zip(info["layers"], dump["layers"]):
        assert mine["index"] == theirs.get("idx", mine["index"])
        assert mine["type_name"] == theirs.get("type", theirs.get("op"))
        assert mine["body_size"] == theirs["body_size"]
        assert mine["is_kpu"] == ("kpu" in theirs)
        if "kpu" in theirs:
            assert dump_kpu_text(mine) == theirs["kpu"]
    assert [t["bytes"] for t in info["outputs"]] == [t["size"] for t in dump["outputs"]]
    for mine, theirs in zip(info["inputs"], dump["inputs"]):  # v4 dumps list the inputs
        assert mine["shape_nchw"] == theirs["shape_nchw"] and mine["bytes"] == theirs["size"]
    assert info["memory"]["main_mem"] == fields.get("main_mem_usage", fields.get("main_mem"))
    data = path.read_bytes()
    core = _kpu.Model(data).memory()
    assert {k: info["memory"][k] for k in core} == core

    rc, out, _ = run_tool(capsys, "inspect", path)
    assert rc == 0
    lines = out.splitlines()
    for mine in info["layers"]:
        line = [ln for ln in lines if re.match(r"\s+%d\s+%s\s+%d\s" % (mine["index"], re.escape(mine["type_name"]),
                                                                          mine["body_size"]), ln)]
        assert len(line) == 1, (mine["index"], out)
        if mine["is_kpu"]:
            assert mine["kpu"]["description"] in line[0]
    assert "SRAM total                %d B" % core["sram_total"] in out


def test_inspect_face_detector_figures(testdata, capsys):
    """Hand-checked numbers of MaixPy's face detector (its README: 24 layers, 23 KPU convs + dequantize)."""
    rc, info, _ = run_json(capsys, "inspect", testdata("face_detect_yolo2_v3_maixpy", "facedetect.kmodel"))
    assert rc == 0
    assert info["totals"]["by_type"] == {"K210_CONV": 23, "DEQUANTIZE": 1}
    assert info["inputs"][0]["forward_takes"] == "a 320x240 RGB888 image"
    assert info["outputs"][0]["bytes"] == 36000
    assert info["layers"][0]["macs"] == 320 * 240 * 9 * 3 * 16
    assert info["totals"]["largest_body"] == {"index": 14, "type_name": "K210_CONV", "bytes": 68096}
    assert info["memory"]["kpu_row_lo"] == 17408  # the header's max_start_address


# ---------------------------------------------------------------------------------------------------------------
# Malformed input: exit code 2, the loader's message, no traceback

MALFORMED = {
    "empty": (b"", "empty"),
    "garbage": (bytes(random.Random(7).randrange(256) for _ in range(300)), "not a kmodel"),
    "v5": (b"LDMK" + struct.pack("<7I", 5, 0x20, 0, 8, 1, 0, 0), "version 5"),
    "truncated": (v3_kpu_model()[:200], "ERR_"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("command", ["inspect", "fit"])
def test_malformed_model_is_refused_with_the_loader_message(tmp_path, capsys, case, command):
    data, words = MALFORMED[case]
    path = write(tmp_path, "bad.kmodel", data)
    rc, out, err = run_tool(capsys, command, path)
    assert rc == 2 and out == ""
    assert err.startswith("kmodel_tool %s: error: %s: " % (command, path))
    assert loader_message(data) in err and words in err
    assert "Traceback" not in err


def test_real_v5_model_is_refused(testdata, capsys):
    path = testdata("kmodel_v5_nncase", "yolox_nano_224_old.kmodel")  # pre-release v5 (v5 loads since issue 15)
    for argv in (("inspect", path), ("inspect", path, "--json"), ("fit", path)):
        rc, out, err = run_tool(capsys, *argv)
        assert rc == 2 and out == ""
        assert "ERR_KMODEL_VERSION" in err and "nncase >= 1.0" in err
        assert loader_message(path.read_bytes()) in err


@pytest.mark.parametrize("command", ["inspect", "fit"])
def test_missing_file_and_directory(tmp_path, capsys, command):
    rc, _, err = run_tool(capsys, command, tmp_path / "nope.kmodel")
    assert rc == 2 and "cannot read" in err and "No such file" in err
    rc, _, err = run_tool(capsys, command, tmp_path)
    assert rc == 2 and "cannot read %s" % tmp_path in err


def test_inspect_of_a_swapped_model_says_so(tmp_path, capsys):
    path = write(tmp_path, "m_be.kmodel", tools.swap_words(v3_kpu_model()))
    rc, _, err = run_tool(capsys, "inspect", path)
    assert rc == 2 and "ERR_KMODEL_VERSION" in err and "WORD-SWAPPED kmodel v3" in err and "--unswap" in err


def test_command_line_errors(capsys):
    assert tools.main([]) == 2
    assert tools.main(["frobnicate"]) == 2
    assert tools.main(["--help"]) == 0
    assert "inspect" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------------------------
# fit


def test_fit_default_budget_and_one_model(tmp_path, capsys):
    data = v3_kpu_model()
    rc, report, _ = run_json(capsys, "fit", write(tmp_path, "m.kmodel", data))
    sram = _kpu.Model(data).memory()["sram_total"]
    assert rc == 0 and report["fits"] is True
    budget = report["budget"]
    assert budget["for_models"] == FULL_FIRMWARE_ROOM == 6 * MIB - budget["firmware_bytes"] - budget["gc_heap"]
    assert budget["gc_heap"] == 512 * 1024 and budget["max_models"] == 5
    assert report["models"][0]["sram_total"] == sram and report["models"][0]["fits_alone"]
    assert report["together"]["spare_bytes"] == FULL_FIRMWARE_ROOM - sram
    rc, out, _ = run_tool(capsys, "fit", write(tmp_path, "m.kmodel", data))
    assert rc == 0 and "Verdict: FITS (%d B to spare" % (FULL_FIRMWARE_ROOM - sram) in out


def firmware_bytes_for_room(room, heap=512 * 1024):
    return 6 * MIB - heap - room


def test_fit_exact_boundary_and_one_byte_over(tmp_path, capsys):
    data = v3_kpu_model()
    path = write(tmp_path, "m.kmodel", data)
    sram = _kpu.Model(data).memory()["sram_total"]
    rc, out, _ = run_tool(capsys, "fit", path, "--firmware-bytes", firmware_bytes_for_room(sram))
    assert rc == 0 and "Verdict: FITS (0 B to spare" in out
    rc, out, _ = run_tool(capsys, "fit", path, "--firmware-bytes", firmware_bytes_for_room(sram - 1))
    assert rc == 1
    assert "DOES NOT FIT (1 B over)" in out and "Verdict: DOES NOT FIT (1 B over" in out
    # streaming the bodies from flash needs less than the whole model in RAM, and a GC heap 1 byte smaller is enough
    assert "kpu.load_flash(addr, 1, ...)" in out and "word-swap it first with `swap`" in out
    assert "Maix.utils.gc_heap_size(%d)" % (512 * 1024 - 1) in out


def test_fit_load_flash_estimate(tmp_path, capsys):
    data = v3_kpu_model()
    rc, report, _ = run_json(capsys, "fit", write(tmp_path, "m.kmodel", data))
    m = report["models"][0]
    bodies = [layer[4] for layer in _kpu.Model(data).layers()]
    mem = _kpu.Model(data).memory()
    base = (28 + 8 + 8 * 3) + mem["main_mem"] + mem["context_bytes"]
    assert m["largest_body"] == max(bodies)
    assert m["load_flash_one_buffer"] == base + max(bodies)
    assert m["load_flash_two_buffers"] == base + 2 * max(bodies)


def test_fit_models_that_fit_alone_but_not_together(tmp_path, capsys):
    a, b = v3_kpu_model(), v4_kpu_model()
    sizes = [_kpu.Model(d).memory()["sram_total"] for d in (a, b)]
    room = max(sizes) + 100  # each alone fits, both do not
    paths = [write(tmp_path, "a.kmodel", a), write(tmp_path, "b.kmodel", b)]
    argv = ("fit",) + tuple(paths) + ("--firmware-bytes", str(firmware_bytes_for_room(room)))
    rc, report, _ = run_json(capsys, *argv)
    assert rc == 1 and report["fits"] is False
    assert [m["fits_alone"] for m in report["models"]] == [True, True]
    assert report["together"]["sram_total"] == sum(sizes)
    assert report["together"]["spare_bytes"] == room - sum(sizes)
    assert report["together"]["first_failing_load"] == 1
    assert report["groups"] == []  # a model alone is not a group
    rc, out, _ = run_tool(capsys, *argv)
    assert rc == 1 and "DO NOT FIT" in out and "one at a time" in out
    assert "no two of them fit together" in out and "can be loaded together" not in out
    assert "kpu.load of model #2 (%s) is the first to fail" % paths[1] in out
    assert "Verdict: DOES NOT FIT (%d B over" % (sum(sizes) - room) in out


def test_fit_groups_are_real_groups_without_duplicates(tmp_path, capsys):
    """small + a and small + b fit, a + b does not; small is given twice: each group has two or more models, no
    group is printed twice, and every printed group fits while adding any other model to it would not."""
    small, a, b = v3_float_model(), v3_kpu_model(), v4_kpu_model()
    sizes = [_kpu.Model(d).memory()["sram_total"] for d in (small, a, b)]
    room = max(sizes[1], sizes[2]) + sizes[0] + 100
    assert sizes[1] + sizes[2] > room and 2 * sizes[0] + max(sizes[1], sizes[2]) > room
    paths = [write(tmp_path, "small.kmodel", small), write(tmp_path, "a.kmodel", a), write(tmp_path, "b.kmodel", b)]
    argv = ("fit", paths[0], paths[1], paths[0], paths[2], "--firmware-bytes", str(firmware_bytes_for_room(room)))
    rc, report, _ = run_json(capsys, *argv)
    assert rc == 1
    groups = [sorted(g) for g in report["groups"]]
    assert sorted(groups) == sorted([sorted([paths[0], paths[1]]), sorted([paths[0], paths[2]]),
                                     [paths[0], paths[0]]])
    assert len(set(map(tuple, groups))) == len(groups)
    rc, out, _ = run_tool(capsys, *argv)
    lines = out.splitlines()
    start = lines.index("  these can be loaded together:")
    printed = [line.strip() for line in lines[start + 1:] if line.startswith("    ")]
    assert len(printed) == 3 and len(set(printed)) == 3 and all(" + " in line for line in printed)


def test_fit_more_than_five_models(tmp_path, capsys):
    path = write(tmp_path, "fc.kmodel", v3_float_model())
    rc, report, _ = run_json(capsys, "fit", *([path] * 6))
    assert rc == 1 and report["together"]["spare_bytes"] > 0  # memory is fine, the count is not
    assert report["together"]["first_failing_load"] == 5
    assert report["groups"] == [[path] * 5]  # the six ways to pick five copies are one group
    assert any("at most 5 models" in tip for tip in report["advice"])
    rc, out, _ = run_tool(capsys, "fit", *([path] * 6))
    assert rc == 1 and "Verdict: DOES NOT FIT (6 models, MaixPy loads at most 5 at once)" in out
    assert "B over" not in out  # memory is not the problem


@pytest.mark.parametrize("argv,room", [
    ((), 2 * MIB),
    (("--firmware", "minimum"), 4 * MIB),
    (("--firmware", "minimum-no-camera"), 5 * MIB),
    (("--heap", "256K"), 2 * MIB + 256 * 1024),
    (("--firmware-bytes", "0x100000", "--heap", "1M"), 4 * MIB),
    (("--firmware", "minimum", "--firmware-bytes", "1.5M"), 4 * MIB),  # explicit bytes win over the preset
])
def test_fit_budget_options(tmp_path, capsys, argv, room):
    rc, report, _ = run_json(capsys, "fit", write(tmp_path, "fc.kmodel", v3_float_model()), *argv)
    assert rc == 0 and report["budget"]["for_models"] == room


@pytest.mark.parametrize("text,value", [("524288", 524288), ("0x80000", 524288), ("512K", 524288),
                                        ("512KiB", 524288), ("1.5M", 1572864), ("2MiB", 2 * MIB), ("64b", 64),
                                        ("0x1B", 27), ("0xAB", 171), ("512KB", 524288), (" 1 M ", MIB)])
def test_parse_size(text, value):
    assert tools.parse_size(text) == value


@pytest.mark.parametrize("text", ["", "-1", "12Q", "1e3", "infK", "nanK", "0x", "K", "0x1G"])
def test_parse_size_refuses(text):
    with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
        tools.parse_size(text)


def test_fit_bad_options(tmp_path, capsys):
    path = write(tmp_path, "fc.kmodel", v3_float_model())
    rc, _, err = run_tool(capsys, "fit", path, "--heap", "12Q")
    assert rc == 2 and "not a size: '12Q'" in err
    rc, _, err = run_tool(capsys, "fit", path, "--firmware-bytes", "6M")
    assert rc == 2 and "leave nothing" in err and "Traceback" not in err
    rc, _, err = run_tool(capsys, "fit", path, path + ".missing")
    assert rc == 2 and "cannot read" in err


def test_fit_real_models(testdata, capsys):
    mbnet = testdata("mobilenetv1_0.75_v3_maixemc", "mbnetv1.kmodel")
    face = testdata("face_detect_yolo2_v3_maixpy", "facedetect.kmodel")
    sram = _kpu.Model(mbnet.read_bytes()).memory()["sram_total"]
    rc, report, _ = run_json(capsys, "fit", mbnet, face)
    assert rc == 1
    assert report["models"][0]["over_bytes"] == sram - FULL_FIRMWARE_ROOM
    assert report["models"][1]["fits_alone"] and report["groups"] == []
    rc, out, _ = run_tool(capsys, "fit", mbnet)
    assert rc == 1 and "DOES NOT FIT (%d B over)" % (sram - FULL_FIRMWARE_ROOM) in out
    assert "kpu.load_flash" in out and "--firmware minimum" in out
    rc, out, _ = run_tool(capsys, "fit", mbnet, face, "--firmware", "minimum")
    assert rc == 0 and "Verdict: FITS" in out


def test_fit_advice_only_suggests_what_is_enough(testdata, capsys):
    """MobileNet with a 1.5 MiB GC heap is 2235848 B over the 1 MiB left by the full firmware: the minimum firmware
    (2 MiB more) is not enough, minimum-no-camera (3 MiB more) is; no GC heap size can absorb it."""
    mbnet = testdata("mobilenetv1_0.75_v3_maixemc", "mbnetv1.kmodel")
    sram = _kpu.Model(mbnet.read_bytes()).memory()["sram_total"]
    rc, report, _ = run_json(capsys, "fit", mbnet, "--heap", "1.5M")
    assert rc == 1 and report["models"][0]["over_bytes"] == sram - MIB
    advice = "\n".join(report["advice"])
    assert "--firmware minimum-no-camera" in advice and "--firmware minimum)" not in advice
    assert "gc_heap_size" not in advice


# ---------------------------------------------------------------------------------------------------------------
# swap


@pytest.mark.parametrize("extra", [b"", b"\x07", b"\x07\x08", b"\x07\x08\x09"])
def test_swap_words_is_model_le2be(extra):
    data = v3_kpu_model() + extra
    swapped = tools.swap_words(data)
    assert swapped == reference_le2be(data) and len(swapped) % 4 == 0
    assert tools.swap_words(swapped)[:len(data)] == data


def flash_bin(tmp_path, offset, payload):
    path = tmp_path / "flash.bin"
    path.write_bytes(b"\xff" * offset + payload)
    return str(path)


def test_swap_output_runs_through_load_flash(tmp_path, capsys):
    """A model of odd length (so the swap pads) swapped by the tool, placed in a raw flash dump: KPU.load_flash
    must give what KPU.load gives for the plain file."""
    plain = v3_kpu_model() + b"\x07"  # a trailing byte the loader ignores: 1705 bytes, 3 padding bytes
    plain_path = write(tmp_path, "m.kmodel", plain)
    swapped_path = str(tmp_path / "m_be.kmodel")
    rc, out, err = run_tool(capsys, "swap", plain_path, swapped_path)
    assert rc == 0 and err == ""
    assert "word-swapped kmodel v3, 1708 bytes (3 padding bytes '0')" in out
    swapped = open(swapped_path, "rb").read()
    assert swapped[-4:] == b"000\x07"
    image = np.arange(384, dtype=np.uint8).tobytes()
    expected = kpu.forward(kpu.load(plain_path), image).data()
    kpu.set_flash_image(flash_bin(tmp_path, 0x10000, swapped))
    for dual, batch in ((0, 0), (1, 0x4000)):
        net = kpu.load_flash(0x10000, dual, batch, 60000000)
        assert kpu.forward(net, image).data() == expected
        kpu.deinit(net)


def write_kfpkg(path, address, name, data):
    """A kfpkg as kflash wants it: `address` as a number on its own line, not the last key."""
    listing = ('{\n  "version": "0.1.0",\n  "files": [\n    {\n      "address": %d,\n      "bin": "%s",\n'
               '      "sha256Prefix": false\n    }\n  ]\n}\n' % (address, name))
    with zipfile.ZipFile(str(path), "w") as z:
        z.writestr("flash-list.json", listing)
        z.writestr(name, data)
    return str(path)


def test_swap_golden_face_detector(testdata, tmp_path, capsys):
    """MaixPy ships the face detector word-swapped for load_flash at 0x600000: swapping the plain model must give
    that file byte for byte (388776 % 4 == 0: no padding), and loading our kfpkg with load_flash must give the
    plain model's output."""
    plain_path = testdata("face_detect_yolo2_v3_maixpy", "facedetect.kmodel")
    with zipfile.ZipFile(str(testdata("face_detect_yolo2_v3_maixpy", "face_model_be_at_0x600000.kfpkg"))) as z:
        golden = z.read("facedetect_be.kmodel")
    out_path = tmp_path / "facedetect_be.kmodel"
    rc, out, _ = run_tool(capsys, "swap", plain_path, out_path)
    assert rc == 0 and "0 padding bytes" in out
    assert out_path.read_bytes() == golden

    pkg = write_kfpkg(tmp_path / "face_be.kfpkg", 0x600000, "facedetect_be.kmodel", out_path.read_bytes())
    image = bytes(random.Random(21).randrange(256) for _ in range(320 * 240 * 3))
    expected = kpu.forward(kpu.load(str(plain_path)), image).data()
    kpu.set_flash_image(pkg)
    net = kpu.load_flash(0x600000, 1, 0xC000, 60000000)
    assert kpu.forward(net, image).data() == expected

    rc, out, _ = run_tool(capsys, "swap", "--check", out_path)
    assert rc == 0 and "word-swapped kmodel v3" in out
    back = tmp_path / "facedetect.kmodel"
    rc, out, _ = run_tool(capsys, "swap", "--unswap", out_path, back)
    assert rc == 0 and back.read_bytes() == plain_path.read_bytes()


def test_swap_refuses_an_already_swapped_file(tmp_path, capsys):
    swapped = write(tmp_path, "m_be.kmodel", tools.swap_words(v4_kpu_model()))
    target = tmp_path / "again.kmodel"
    rc, out, err = run_tool(capsys, "swap", swapped, target)
    assert rc == 2 and out == "" and not target.exists()
    assert "already word-swapped" in err and "kmodel v4" in err


def test_swap_refuses_what_is_not_a_model(tmp_path, capsys):
    data = MALFORMED["garbage"][0]
    target = tmp_path / "out.kmodel"
    rc, _, err = run_tool(capsys, "swap", write(tmp_path, "junk.bin", data), target)
    assert rc == 2 and not target.exists()
    assert "not a kmodel, neither plain nor word-swapped" in err and loader_message(data) in err
    rc, _, err = run_tool(capsys, "swap", tmp_path / "missing.kmodel", target)
    assert rc == 2 and "cannot read" in err


@pytest.mark.parametrize("make,kind", [(v3_kpu_model, "plain kmodel v3"), (v4_kpu_model, "plain kmodel v4"),
                                       (lambda: tools.swap_words(v4_kpu_model()), "word-swapped kmodel v4")])
def test_swap_check(tmp_path, capsys, make, kind):
    path = write(tmp_path, "m.kmodel", make())
    rc, out, _ = run_tool(capsys, "swap", "--check", path)
    assert rc == 0 and out.startswith("%s: %s (" % (path, kind))


def test_swap_check_of_garbage_and_empty(tmp_path, capsys):
    for data in (MALFORMED["garbage"][0], b""):
        rc, out, err = run_tool(capsys, "swap", "--check", write(tmp_path, "x.bin", data))
        assert rc == 2 and out == "" and loader_message(data) in err


def test_swap_argument_mistakes(tmp_path, capsys):
    plain = write(tmp_path, "m.kmodel", v3_kpu_model())
    rc, _, err = run_tool(capsys, "swap", plain)
    assert rc == 2 and "needs an output file" in err
    rc, _, err = run_tool(capsys, "swap", "--check", plain, plain)
    assert rc == 2 and "takes one file" in err
    rc, _, err = run_tool(capsys, "swap", plain, plain)
    assert rc == 2 and "same file" in err and open(plain, "rb").read() == v3_kpu_model()
    rc, _, err = run_tool(capsys, "swap", "--unswap", plain, tmp_path / "x.kmodel")
    assert rc == 2 and "not word-swapped" in err


def test_unswap_drops_the_padding(tmp_path, capsys):
    plain = v3_kpu_model() + b"\x07"
    swapped = write(tmp_path, "m_be.kmodel", tools.swap_words(plain))
    back = tmp_path / "m.kmodel"
    rc, out, _ = run_tool(capsys, "swap", "--unswap", swapped, back)
    assert rc == 0 and back.read_bytes() == plain and "%d bytes" % len(plain) in out


def test_swap_warns_when_maixpy_load_flash_cannot_read_the_tables(tmp_path, capsys):
    """MaixPy's load_flash wants the header and tables in the first 4 KiB; a v4 model's constants count too."""
    data = v4_kpu_model(constants=bytes(5000))
    rc, out, err = run_tool(capsys, "swap", write(tmp_path, "big.kmodel", data), tmp_path / "big_be.kmodel")
    assert rc == 0 and "word-swapped kmodel v4" in out
    assert "warning" in err and "first 4096 B" in err
    rc, _, err = run_tool(capsys, "swap", write(tmp_path, "small.kmodel", v4_kpu_model()), tmp_path / "s.kmodel")
    assert rc == 0 and err == ""


# ---------------------------------------------------------------------------------------------------------------
# The wrapper script


def test_wrapper_script(tmp_path):
    script = os.path.join(ROOT, "scripts", "kmodel_tool.py")
    good = write(tmp_path, "m.kmodel", v3_kpu_model())
    run = subprocess.run([sys.executable, script, "inspect", good], capture_output=True, text=True)
    assert run.returncode == 0 and "conv3x3 in 16x8x3 -> out 8x4x8" in run.stdout
    bad = write(tmp_path, "bad.kmodel", MALFORMED["v5"][0])
    run = subprocess.run([sys.executable, script, "inspect", bad], capture_output=True, text=True)
    assert run.returncode == 2 and "version 5" in run.stderr and "Traceback" not in run.stderr

# SPDX-License-Identifier: Apache-2.0
"""The tools agree (issue 13, point 6): `kpu.memtest()` and `openkpu fit` compute one budget and give one verdict on
the same models; inspect, fit and memtest write KPU RAM row ranges in one notation; the text tables stay aligned
with long names and large numbers; the memory report's backend_scratch is shown where memory is listed."""
import re

import pytest

import _kpu
import KPU as kpu
from openkpu import model_tools as tools

MODEL_SETS = [
    # (directory, file) pairs loaded together
    [("mnist_v3_maixpy", "mnist.kmodel"), ("face_detect_yolo2_v3_maixpy", "facedetect.kmodel")],
    [("mobilenetv1_0.75_v3_maixemc", "mbnetv1.kmodel")],
    [("face_detect_yolo2_v3_maixpy", "facedetect.kmodel"), ("yolo2_voc20_v4_nncase", "yolo.kmodel")],
    [("mobilenetv1_0.75_v3_maixemc", "mbnetv1.kmodel"), ("mnist_v3_maixpy", "mnist.kmodel")],
]


def run_tool(capsys, *argv):
    rc = tools.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def memtest_lines(capsys):
    capsys.readouterr()
    kpu.memtest()
    return capsys.readouterr().out.splitlines()


pytestmark = pytest.mark.usefixtures("clean_kpu")


def test_one_budget():
    assert tools.board_budget(tools.DEFAULT_FIRMWARE, None, tools.DEFAULT_GC_HEAP) == kpu.budget()
    for name in tools.FIRMWARE_PRESETS:
        assert tools.board_budget(name, None, 256 * 1024) == kpu.budget(name, None, 256 * 1024)
    assert kpu.budget()["for_models"] == 2 * 1024 * 1024  # MaixPy's full firmware leaves about 2 MiB for models


@pytest.mark.parametrize("models", MODEL_SETS, ids=lambda ms: "+".join(f.split(".")[0] for _, f in ms))
def test_memtest_and_fit_give_one_verdict(testdata, capsys, models):
    paths = [testdata(d, f) for d, f in models]
    import json
    rc, out, _ = run_tool(capsys, "fit", *paths, "--json")
    report = json.loads(out)
    nets = [kpu.load(str(p)) for p in paths]
    lines = memtest_lines(capsys)
    for net, m in zip(nets, report["models"]):
        line = [l for l in lines if ("model %s:" % net.model_path()) in l]
        assert len(line) == 1, lines
        assert "of %d;" % report["budget"]["for_models"] in line[0]
        assert line[0].endswith("; fits" if m["fits_alone"] else "; DOES NOT FIT"), (line[0], m)
        assert kpu.memory(net)["fits"] == m["fits_alone"]
        assert kpu.memory(net)["sram_total"] == m["sram_total"]
    summary = [l for l in lines if "model(s) loaded take" in l]
    assert len(summary) == 1
    assert summary[0].endswith(": fit" if report["fits"] else ": DO NOT FIT"), (summary[0], report["fits"])
    assert "%d B left" % report["together"]["spare_bytes"] in summary[0]
    assert rc == (0 if report["fits"] else 1)


def test_verdicts_differ_between_the_sets(testdata, capsys):
    """The sets above are not all the same verdict (else the agreement test proves little)."""
    import json
    verdicts = set()
    for models in MODEL_SETS:
        rc, out, _ = run_tool(capsys, "fit", *[testdata(d, f) for d, f in models], "--json")
        verdicts.add(json.loads(out)["fits"])
    assert verdicts == {True, False}


def test_one_row_range_notation(testdata, capsys):
    path = testdata("face_detect_yolo2_v3_maixpy", "facedetect.kmodel")
    mem = _kpu.Model(path.read_bytes()).memory()
    lo, hi = mem["kpu_row_lo"], mem["kpu_row_hi"]
    assert lo > 0 and hi > lo + 1
    text = "rows %d..%d" % (lo, hi - 1)  # first..last, both included
    assert kpu.rows_text(lo, hi) == text and kpu.rows_text(5, 5) == "no rows"
    exclusive = re.compile(r"\b%d\.\.%d\b" % (lo, hi))  # the other notation must not appear anywhere
    rc, inspect_out, _ = run_tool(capsys, "inspect", path)
    rc, fit_out, _ = run_tool(capsys, "fit", path)
    net = kpu.load(str(path))
    memtest_out = "\n".join(memtest_lines(capsys))
    for out in (inspect_out, fit_out, memtest_out):
        assert text in out, out
        assert not exclusive.search(out), out
        assert not re.search(r"rows \d+-\d+|rows \[\d+", out)


def cell_spans(line):
    """(start, end) of each cell: cells are separated by two or more spaces and hold at most single spaces."""
    return [m.span() for m in re.finditer(r"\S+(?: \S+)*", line)]


def assert_aligned(lines, align):
    spans = [cell_spans(line) for line in lines]
    for row in spans:
        assert len(row) == len(align), (lines, row)
    for col, a in enumerate(align):
        edge = 1 if a == ">" else 0
        assert len({row[col][edge] for row in spans}) == 1, (col, lines)


def fake_model(name, big):
    return {"file": name, "sram_total": big, "model_alloc": big // 2, "main_mem": big // 3,
            "context_bytes": big // 4, "backend_scratch": big // 5, "kpu_rows_used": 32768, "kpu_row_lo": 0,
            "kpu_row_hi": 32768, "fits_alone": False, "over_bytes": big}


def test_fit_table_stays_aligned_with_long_names_and_large_numbers():
    models = [fake_model("m.kmodel", 7), fake_model("/a/very/long/path/" + "x" * 70 + ".kmodel", 12345678901234),
              fake_model("mid.kmodel", 99999)]
    models[0].update(fits_alone=True, kpu_rows_used=0, kpu_row_lo=32768, kpu_row_hi=0, over_bytes=0)
    lines = tools.format_model_rows(models)
    table = lines[1:1 + 1 + len(models)]
    assert table[0].split() == ["model", "SRAM", "B", "model+256", "main", "context", "scratch", "KPU", "rows",
                                "KPU", "RAM", "alone"]
    assert_aligned(table, "<>>>>>><<")


def test_inspect_tables_stay_aligned_with_long_names_and_large_numbers():
    layers = [{"index": i, "type_name": name, "body_size": size, "is_kpu": False, "macs": 0, "work": 3,
               "kpu": None, "output": {"dtype": "float32", "shape_nchw": [1, 2, 3, 4]}}
              for i, (name, size) in enumerate([("a", 1), ("a_really_long_operator_name_from_v4_x", 123456789012),
                                                ("mid", 4096)] + [("b", 5)] * 9)]
    lines = tools.format_layers(layers)[1:]
    assert_aligned(lines, "><>><")
    tensors = [{"index": i, "dtype": dt, "shape_nchw": shape, "bytes": nbytes, "forward_takes": "x"}
               for i, (dt, shape, nbytes) in enumerate([("uint8", [1, 3, 240, 320], 230400),
                                                        ("float32", [1, 1, 1, 4], 16),
                                                        ("uint8", [1, 1000, 1000, 1000], 10 ** 9)])]
    lines = tools.format_tensors("Inputs", tensors, usage=False)[1:]
    spans = [cell_spans(line) for line in lines]
    assert len({row[-1][1] for row in spans}) == 1  # the byte counts end in one column
    assert len({row[2][0] for row in spans}) == 1


def test_backend_scratch_is_shown_where_memory_is_listed(testdata, capsys):
    import json
    path = testdata("mnist_v3_maixpy", "mnist.kmodel")
    mem = _kpu.Model(path.read_bytes()).memory()
    assert "backend_scratch" in mem
    rc, out, _ = run_tool(capsys, "inspect", path, "--json")
    assert json.loads(out)["memory"]["backend_scratch"] == mem["backend_scratch"]
    rc, out, _ = run_tool(capsys, "inspect", path)
    assert re.search(r"KPU backend scratch\s+%d B" % mem["backend_scratch"], out)
    rc, out, _ = run_tool(capsys, "fit", path, "--json")
    assert json.loads(out)["models"][0]["backend_scratch"] == mem["backend_scratch"]
    rc, out, _ = run_tool(capsys, "fit", path)
    header = [l for l in out.splitlines() if l.strip().startswith("model ")][0]
    row = [l for l in out.splitlines() if str(path) in l and "SRAM" not in l][0]
    col = header.index("scratch") + len("scratch")
    assert row[:col].split()[-1] == str(mem["backend_scratch"])
    net = kpu.load(str(path))
    assert kpu.memory(net)["backend_scratch"] == mem["backend_scratch"]

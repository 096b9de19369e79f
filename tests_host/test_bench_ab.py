"""scripts/bench_ab.py, which times two builds of _kpu in one process, their passes taking turns: it loads a build
from a directory (the installed extension's, twice here), runs a model on each thread count asked for, prints one row
per thread count with both medians and B/A, and refuses a directory without an extension or a model it cannot find
with a message that says so."""
import os
import pathlib
import re
import sys

import numpy as np
import pytest

_kpu = pytest.importorskip("_kpu")
from openkpu import kmodel_writer as kw  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_ab  # noqa: E402


def _model(tmp_path):
    """A shared 1x1 layer (32 -> 32 channels over 40x30) whose output is copied to main memory."""
    rng = np.random.default_rng(3)
    conv = kw.KpuConv(in_w=40, in_h=30, in_c=32, out_c=32, kernel=1, weights=rng.integers(0, 256, (32, 32, 1, 1)),
                      bn_mul=[int(v) for v in rng.integers(1, 1000, 32)], bn_add=[0] * 32, bn_shift=[12] * 32,
                      act=kw.ActTable.linear(1, 4), src=0, dst=200, main_out=0)
    path = tmp_path / "one_layer.kmodel"
    path.write_bytes(kw.V3Model(layers=[conv], outputs=[(0, 40 * 30 * 32)]).to_bytes())
    return path


def test_two_builds_rows(tmp_path, capsys):
    build = os.path.dirname(_kpu.__file__)
    model = _model(tmp_path)
    assert bench_ab.main([build, build, str(model), "-n", "5", "--threads", "1,2"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(str(model))]
    assert [int(r[1]) for r in rows] == [1, 2], out
    for r in rows:
        a_ms, b_ms, ratio, faster = float(r[2]), float(r[3]), float(r[4]), r[5]
        assert a_ms > 0 and b_ms > 0 and ratio > 0, r
        assert re.fullmatch(r"\d+%", faster), r
    assert "A = %s, B = %s; 5 rounds" % (build, build) in out


def test_refusals(tmp_path):
    build = os.path.dirname(_kpu.__file__)
    with pytest.raises(SystemExit, match="no _kpu extension .* in %s" % re.escape(str(tmp_path))):
        bench_ab.main([str(tmp_path), build, str(_model(tmp_path)), "-n", "1"])
    with pytest.raises(SystemExit, match="no model nowhere.kmodel"):
        bench_ab.main([build, build, "nowhere.kmodel", "-n", "1"])

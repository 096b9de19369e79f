"""scripts/bench_ab.py, which times two builds of _kpu in one process, their passes taking turns: it loads a build
from a directory (the installed extension's, twice here), runs a model on each thread count asked for, prints one row
per thread count with both medians and B/A, and refuses a directory without an extension or a model it cannot find
with a message that says so."""
import os
import pathlib
import re
import sys

import pytest

_kpu = pytest.importorskip("_kpu")

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_ab  # noqa: E402


def test_two_builds_rows(shared_layer_model, capsys):
    build = os.path.dirname(_kpu.__file__)
    model = shared_layer_model
    assert bench_ab.main([build, build, str(model), "-n", "5", "--threads", "1,2"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(str(model))]
    assert [int(r[1]) for r in rows] == [1, 2], out
    for r in rows:
        a_ms, b_ms, ratio, faster = float(r[2]), float(r[3]), float(r[4]), r[5]
        assert a_ms > 0 and b_ms > 0 and ratio > 0, r
        assert re.fullmatch(r"\d+%", faster), r
    assert "A = %s, B = %s; 5 rounds" % (build, build) in out


def test_refusals(tmp_path, shared_layer_model):
    build = os.path.dirname(_kpu.__file__)
    with pytest.raises(SystemExit, match="no _kpu extension .* in %s" % re.escape(str(tmp_path))):
        bench_ab.main([str(tmp_path), build, str(shared_layer_model), "-n", "1"])
    with pytest.raises(SystemExit, match="no model nowhere.kmodel"):
        bench_ab.main([build, build, "nowhere.kmodel", "-n", "1"])

# SPDX-License-Identifier: Apache-2.0
"""The KPU's pool types are listed once, in c_src/kpu/kpu_pool_types.def: the tools' names and the writer's strides
must say what the core runs. (tests_host/kpu_reference.py keeps its own table on purpose: it is the independent
reference the emulator is checked against.)"""
import pathlib
import re

from openkpu import kmodel_writer, model_tools

DEF = pathlib.Path(__file__).resolve().parents[1] / "c_src" / "kpu" / "kpu_pool_types.def"
ROW = re.compile(r'^OKPU_KPU_POOL\((\d+), (\d+), (\d+), (\w+), "([^"]*)"\)$', re.M)


def table():
    rows = [(int(t), int(side), int(stride), kind, name) for t, side, stride, kind, name in ROW.findall(DEF.read_text())]
    assert [r[0] for r in rows] == list(range(len(rows))), "pool types must be listed in order from 0"
    return rows


def test_def_lists_the_ten_pool_types():
    rows = table()
    assert len(rows) == 10
    assert {r[3] for r in rows} == {"BYPASS", "MAX", "MEAN", "PICK00", "PICK01"}


def test_tool_names_equal_the_core():
    assert model_tools.POOL_NAMES == {t: name for t, _, _, _, name in table()}


def test_writer_strides_equal_the_core():
    for t, _, stride, _, _ in table():
        assert kmodel_writer.pool_stride(t) == stride
    bad = len(table())
    try:
        kmodel_writer.pool_stride(bad)
    except ValueError:
        pass
    else:
        raise AssertionError("the writer accepts pool type %d, which the core refuses" % bad)


def test_names_state_window_and_stride():
    for t, side, stride, kind, name in table():
        if kind != "BYPASS":
            assert "%dx%d stride %d" % (side, side, stride) in name, (t, name)

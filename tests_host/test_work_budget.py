# SPDX-License-Identifier: Apache-2.0
"""The work budget (issue 10) through the bindings and the tools: Model(max_work=) in CPython and MicroPython,
Model.memory() / kpu.memory() report it, openkpu inspect shows it per layer and in total."""
import pathlib
import subprocess
import sys

import pytest

import _kpu
from test_micropython import host_mpy  # noqa: F401

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIGITS = ROOT / "examples" / "models" / "digits.kmodel"


def test_memory_reports_work_and_default_limit():
    m = _kpu.Model(DIGITS.read_bytes())
    mem = m.memory()
    assert mem["work"] == sum(m.work()) and mem["work"] >= mem["kpu_macs"] > 0
    assert mem["max_work"] == 8000000000
    assert all(w >= 1 for w in m.work()) and len(m.work()) == len(m.layers())


def test_max_work_refuses_naming_layer_work_limit_and_fix():
    data = DIGITS.read_bytes()
    first = _kpu.Model(data).work()[0]
    with pytest.raises(ValueError) as e:
        _kpu.Model(data, max_work=first)  # the second layer crosses it
    text = str(e.value)
    assert "error:2003" in text and "layer 1 (" in text and "past the work limit of %d" % first in text
    assert "max_work=" in text
    assert _kpu.Model(data, max_work=sum(_kpu.Model(data).work())).memory()["max_work"] > 0


@pytest.mark.parametrize("bad", [0, -1, "10", 2 ** 64])
def test_max_work_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="error:2001, ERR_PARAM: max_work"):
        _kpu.Model(DIGITS.read_bytes(), max_work=bad)


def test_kpu_memory_and_inspect_show_work():
    sys.path.insert(0, str(ROOT / "modules" / "KPU"))
    import KPU as kpu
    task = kpu.load(str(DIGITS))
    try:
        assert kpu.memory(task)["work"] == sum(_kpu.Model(DIGITS.read_bytes()).work())
    finally:
        kpu.deinit(task)
    out = subprocess.run([sys.executable, "-m", "openkpu", "inspect", str(DIGITS)], capture_output=True,
                         text=True, check=True).stdout
    assert "work per forward (MACs + elements touched)" in out and "of the 8.00 G limit (max_work)" in out


def test_micropython_max_work(host_mpy):  # noqa: F811
    script = """
import _kpu
f = open(%r, 'rb'); d = f.read(); f.close()
m = _kpu.Model(d)
print('WORK', m.memory()['work'], m.memory()['max_work'])
try:
    _kpu.Model(d, max_work=10)
except ValueError as e:
    print('REFUSED', e)
""" % str(DIGITS)
    out = subprocess.run([str(host_mpy), "-c", script], capture_output=True, text=True, timeout=60).stdout
    work = sum(_kpu.Model(DIGITS.read_bytes()).work())
    assert ("WORK %d 8000000000" % work) in out, out
    assert "REFUSED" in out and "past the work limit of 10" in out, out

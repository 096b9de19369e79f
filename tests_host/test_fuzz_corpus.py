# SPDX-License-Identifier: Apache-2.0
"""The fuzz regression corpus (tests_host/fuzz/corpus/fuzz_v3, fuzz_v4, fuzz_v5: every input that ever failed, and
the hand-built v5 seeds) through the CPython binding and the host MicroPython. Each file runs in its own interpreter
process, so a crash is this test's failure with the file named, not a dead test runner: the file must load and run,
or raise MaixPy's error (a ValueError carrying "[MAIXPY]kpu: ... error:<code>, ERR_<name>") - never a signal."""
import pathlib
import subprocess
import sys

import pytest

from test_micropython import host_mpy  # noqa: F401  (builds build/micropython-host/micropython)

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests_host" / "fuzz" / "corpus"
FILES = sorted(p for t in ("fuzz_v3", "fuzz_v4", "fuzz_v5") for p in (CORPUS / t).glob("*") if p.is_file())

# Valid MicroPython and CPython: the binding's calls only. The v3 reader needs the version the fuzz target forces.
SCRIPT = """
import _kpu
f = open(%r, 'rb')
data = bytearray(f.read())
f.close()
magic = %r
data[0:len(magic)] = magic
try:
    m = _kpu.Model(bytes(data))
    for i, t in enumerate(m.inputs()):
        m.set_input(i, bytes(t[5]))
    m.run()
    for i in range(m.output_count()):
        m.output(i)
    print('RESULT ran')
except ValueError as e:
    text = str(e)
    print('RESULT refused ' + text)
"""


def _magic(path):
    return {"fuzz_v3": b"\x03\x00\x00\x00", "fuzz_v4": b"LDMK\x04\x00\x00\x00",
            "fuzz_v5": b"LDMK\x05\x00\x00\x00\x20\x00\x00\x00"}[path.parent.name]


def _check(proc, path):
    assert proc.returncode == 0 and "RESULT" in proc.stdout, (
        "%s: the interpreter died (status %d) instead of raising MaixPy's error:\n%s\n%s"
        % (path.name, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    line = proc.stdout.split("RESULT ", 1)[1].strip()
    if line.startswith("refused"):
        assert "[MAIXPY]kpu:" in line and "error:20" in line and "ERR_" in line, line


def test_corpus_is_there():
    assert len(FILES) >= 11, FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: "%s/%s" % (p.parent.name, p.name))
def test_corpus_file_through_cpython(path):
    proc = subprocess.run([sys.executable, "-c", SCRIPT % (str(path), _magic(path))], capture_output=True, text=True,
                          timeout=120)
    _check(proc, path)


@pytest.mark.parametrize("path", FILES, ids=lambda p: "%s/%s" % (p.parent.name, p.name))
def test_corpus_file_through_micropython(host_mpy, path):  # noqa: F811
    proc = subprocess.run([str(host_mpy), "-X", "heapsize=64M", "-c", SCRIPT % (str(path), _magic(path))],
                          capture_output=True, text=True, timeout=120)
    _check(proc, path)

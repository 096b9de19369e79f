# SPDX-License-Identifier: Apache-2.0
"""The whole user path on the virtual Maix board, as a user with a real one walks it:

1. `make firmware` builds build/k210/firmware.bin;
2. `openkpu flash pack` puts it at 0, the real models at flash offsets (and one word-swapped for load_flash) and a
   folder of files as the /flash filesystem into one .kfpkg;
3. the real kflash writes that package over a serial line into a fake K210's flash (fake_k210_isp.FakeK210);
4. `openkpu vboard boot --pty` boots the very bytes kflash wrote, through the boot ROM model;
5. scripts/serial_runner.py's raw REPL runs every tests_device/ script there. Each prints the same lines as on the
   host MicroPython (whose outputs test_micropython.py compares with CPython's), and the real models loaded from
   flash offsets give the PC emulator's output bytes.

Skips, saying why, without the RISC-V toolchain, Unicorn or kflash. Real models need ../shared/testdata.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import pytest

from test_micropython import TESTDATA, device_source, host_mpy, workdir  # noqa: F401 (fixtures)

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEVICE_TESTS = ROOT / "tests_device"
FIRMWARE = ROOT / "build" / "k210" / "firmware.bin"
sys.path.insert(0, str(ROOT / "scripts"))

# Real models at flash offsets (64 KiB aligned from 1 MiB up, below the /flash filesystem at 0xD00000).
REAL_MODELS = [
    ("iris_v3", "iris_fc_cpu_v3_v4/iris_v3.kmodel"),
    ("iris_v4", "iris_fc_cpu_v3_v4/iris_v4.kmodel"),
    ("mnist", "mnist_v3_maixpy/mnist.kmodel"),
    ("facedetect", "face_detect_yolo2_v3_maixpy/facedetect.kmodel"),
    ("yolo_v3", "yolo2_voc20_v3_nncase_rc5/yolo.kmodel"),
    ("yolo_v4", "yolo2_voc20_v4_nncase/yolo.kmodel"),
    ("yolo_v4_alpha", "yolo2_voc20_v4_nncase/yolo_v0.2.0-alpha1_cpu_maxpool.kmodel"),
    ("mobilenet", "mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel"),
    ("ulffd_slim", "ulffd_face_v4_nncase/slim-320.kmodel"),
    ("ulffd_rfb", "ulffd_face_v4_nncase/RFB-320.kmodel"),
]
FS_FILES = ("tiny_fc.kmodel", "tiny_conv.kmodel", "tiny_v4.kmodel", "flash.bin")
SCRIPT_TIMEOUT = 300


def _need_tools():
    if shutil.which("riscv64-unknown-elf-gcc") is None:
        pytest.skip("the K210 firmware needs riscv64-unknown-elf-gcc + picolibc (apt-get install "
                    "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf)")
    pytest.importorskip("unicorn", reason="the virtual board needs unicorn (pip install 'openkpu[vboard]')")
    pytest.importorskip("kflash", reason="flashing needs kflash (pip install 'openkpu[flash]')")
    pytest.importorskip("littlefs", reason="the /flash filesystem image needs littlefs-python")


@pytest.fixture(scope="module")
def firmware():
    _need_tools()
    r = subprocess.run(["make", "-C", str(ROOT), "firmware"], capture_output=True, text=True)
    assert r.returncode == 0, "make firmware failed:\n" + (r.stdout + r.stderr)[-3000:]
    assert "GC heap" in r.stdout and FIRMWARE.exists()
    return FIRMWARE


def _align(x, a=0x10000):
    return (x + a - 1) // a * a


@pytest.fixture(scope="module")
def flash_layout(workdir, tmp_path_factory):  # noqa: F811 (pytest fixture)
    """[(name, address, "load" | "load_flash", path)] of the models to flash, and the /flash folder."""
    from openkpu.model_tools import swap_words
    d = tmp_path_factory.mktemp("board_files")
    folder = d / "flash_fs"
    folder.mkdir()
    for name in FS_FILES:
        shutil.copy(workdir / name, folder / name)
    models = []
    address = 0x100000
    for name, rel in [("tiny_fc", None)] + REAL_MODELS:
        path = workdir / "tiny_fc.kmodel" if rel is None else TESTDATA / rel
        if not path.exists():
            continue
        models.append((name, address, "load", path))
        address = _align(address + path.stat().st_size)
    mnist = TESTDATA / "mnist_v3_maixpy" / "mnist.kmodel"
    if mnist.exists():
        swapped = d / "mnist_be.kmodel"
        swapped.write_bytes(swap_words(mnist.read_bytes()))
        models.append(("mnist_swapped", address, "load_flash", swapped))
        address = _align(address + swapped.stat().st_size)
    assert address <= 0xD00000, "the models reach the /flash filesystem"
    return models, folder


@pytest.fixture(scope="module")
def flashed(firmware, flash_layout, tmp_path_factory):
    """Pack with `openkpu flash pack`, write with the real kflash into a fake K210: its 16 MiB flash."""
    import serial.serialposix
    from fake_k210_isp import FakeK210
    from openkpu import flashing
    models, folder = flash_layout
    d = tmp_path_factory.mktemp("flashed")
    package = d / "board.kfpkg"
    items = [str(firmware)] + ["%s@0x%x" % (path, address) for _n, address, _h, path in models] + [str(folder)]
    assert flashing.main(["pack", "-o", str(package)] + items) == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(serial.serialposix.Serial, "_update_dtr_state", lambda self: None)
        mp.setattr(serial.serialposix.Serial, "_update_rts_state", lambda self: None)
        with FakeK210() as isp:
            assert flashing.main(["write", "-p", isp.port, "-b", "1500000", str(package)]) == 0
            assert isp.errors == [] and isp.rebooted
            flash = bytes(isp.flash)
    dump = d / "board_flash.bin"
    dump.write_bytes(flash)
    for _name, address, _how, path in models:
        data = path.read_bytes()
        assert flash[address:address + len(data)] == data
    return dump


class VirtualBoard(object):
    """`openkpu vboard boot FLASH --pty` in a child process, and a raw REPL on its pty."""

    def __init__(self, flash_dump, extra=()):
        from serial_runner import RawRepl
        self.proc = subprocess.Popen([sys.executable, "-m", "openkpu.vboard", "boot", str(flash_dump),
                                      "--image-kind", "flash", "--pty", "--stats"] + list(extra),
                                     stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        m = re.search(r"guest UART on (\S+)", line)
        assert m, "vboard did not report its pty: %r" % line
        self.repl = RawRepl(m.group(1), timeout=SCRIPT_TIMEOUT)

    def run(self, source, timeout=SCRIPT_TIMEOUT):
        """Run `source` on a fresh interpreter (soft reset first, as serial_runner does between scripts)."""
        try:
            self.repl.soft_reset()
            out, err = self.repl.exec(source, timeout)
        except Exception:
            if self.proc.poll() is not None:  # say why the board went away, not just that its pty did
                raise AssertionError("the virtual board stopped (exit %d): %s" % (self.proc.returncode,
                                                                                  self.proc.stderr.read()[-3000:]))
            raise
        return out.replace("\r\n", "\n"), err.replace("\r\n", "\n")

    def close(self):
        try:
            self.repl.close()
        finally:
            self.proc.terminate()
            try:
                _out, err = self.proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                _out, err = self.proc.communicate()
            self.stats = err


@pytest.fixture(scope="module")
def board(flashed):
    vb = VirtualBoard(flashed)
    yield vb
    vb.close()
    print(vb.stats)


BOARD_PRELUDE = "WORKDIR = '/flash'\nTESTDATA = None\nFLASH_MODELS = []\nFLASH_IMAGE = None\n"


def test_the_board_boots_from_what_kflash_wrote_and_mounts_the_files(board):
    out, err = board.run("import os, sys, _board, Maix\n"
                         "print(sys.platform, sys.implementation.name)\n"
                         "print(sorted(os.listdir('/flash')))\n"
                         "print(_board.cpu_freq(), _board.kpu_freq(), _board.flash_size())\n"
                         "print(Maix.utils.gc_heap_size())\n")
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == "openkpu micropython"
    assert lines[1] == str(sorted(FS_FILES))
    cpu, kpu, flash = map(int, lines[2].split())
    assert 400e6 < cpu < 410e6 and 395e6 < kpu < 400e6 and flash == 16 << 20
    assert int(lines[3]) >= 4 << 20  # more room for models than MaixPy's full firmware leaves


DEVICE_SCRIPTS = sorted(p.name for p in DEVICE_TESTS.glob("test_*.py") if p.name != "test_models_from_flash.py")


@pytest.mark.parametrize("name", DEVICE_SCRIPTS)
def test_device_script_prints_what_the_host_micropython_prints(board, host_mpy, workdir, tmp_path, name):  # noqa
    """Same lines as the host MicroPython (paths aside: the board's WORKDIR is /flash; and the lines the emulator's
    own options print), and a PASS."""
    host_src = tmp_path / ("host_" + name)
    host_src.write_text("WORKDIR = %r\nTESTDATA = None\nFLASH_MODELS = []\nFLASH_IMAGE = None\n" % str(workdir)
                        + device_source(name))
    r = subprocess.run([str(host_mpy), str(host_src)], capture_output=True, text=True, timeout=600,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    # [emulator] lines show the emulator's arithmetic options, which a chip's KPU does not have; [pc] lines what a
    # PC does without a flash image (a board always has its flash)
    expected = "".join(line for line in r.stdout.replace(str(workdir), "/flash").splitlines(True)
                       if not line.startswith(("[emulator] ", "[pc] ")))
    out, err = board.run(BOARD_PRELUDE + device_source(name))
    assert err == "", "the board raised:\n" + err + "\noutput:\n" + out[-2000:]
    assert "RESULT PASS" in out
    assert out == expected, _first_difference(expected, out)


def _first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return "line %d differs:\n  host:  %r\n  board: %r" % (i + 1, x, y)
    return "host has %d lines, the board %d" % (len(la), len(lb))


def test_real_models_from_flash_offsets_give_the_pc_emulators_bytes(board, flash_layout, flashed, tmp_path):
    """kpu.load(address) / kpu.load_flash(address, ...) on the board's SPI flash, run on the KPU register block of
    the virtual board, against CPython's KPU on the same flash dump."""
    models, _folder = flash_layout
    # Largest first: a model is one contiguous block of the GC heap, which small objects left between earlier
    # models can split (MicroPython's GC does not compact); a fresh heap takes MobileNet's 2.6 MB at once.
    by_size = sorted(models, key=lambda m: -m[3].stat().st_size)
    listing = [(name, address, how) for name, address, how, _path in by_size]
    if len(listing) < 2:
        pytest.skip("real models not found in %s (set OPENKPU_TESTDATA or place ../shared/testdata)" % TESTDATA)
    script = device_source("test_models_from_flash.py")
    t0 = time.monotonic()
    out, err = board.run("FLASH_MODELS = %r\nFLASH_IMAGE = None\n" % listing + script)
    board_s = time.monotonic() - t0
    assert err == "", err + out[-2000:]
    pc_src = tmp_path / "pc_models_from_flash.py"
    pc_src.write_text("FLASH_MODELS = %r\nFLASH_IMAGE = %r\n" % (listing, str(flashed)) + script)
    pc = _run_cpython_file(pc_src, tmp_path)
    assert "RESULT PASS %d" % len(listing) in out
    assert out == pc, _first_difference(pc, out)
    print("%d models loaded from flash and run on the virtual board in %.1f s" % (len(listing), board_s))


def _run_cpython_file(path, cwd):
    env = dict(os.environ)
    import openkpu.board
    env["PYTHONPATH"] = os.path.dirname(openkpu.board.__file__) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600, env=env,
                       cwd=str(cwd))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


# ---- faults give named errors, never hangs ----------------------------------------------------------------------

def test_a_kpu_that_never_finishes_is_an_error_naming_the_layer(flashed, tmp_path):
    """`openkpu vboard run --kpu-hang`: the K210 backend gives up after its 1 s timeout (virtual time) and says
    which layer; the uncaught exception makes `run` exit 1."""
    script = tmp_path / "hang.py"
    script.write_text("import KPU as kpu\nt = kpu.load('/flash/tiny_conv.kmodel')\nkpu.forward(t, bytes(576))\n")
    r = subprocess.run([sys.executable, "-m", "openkpu.vboard", "run", str(flashed), str(script), "--image-kind",
                        "flash", "--kpu-hang", "--timeout", "120"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("ERR_RUN_MODEL: layer 0: the KPU did not signal calc_done within 1000 ms; check that its clock is "
            "enabled (SYSCTL_CLOCK_AI)") in r.stderr, r.stderr


def test_layer_times_run_on_the_firmware(board):
    """kpu.layer_times on the firmware (run_timed over the board's tick clock): a row per layer, named as the model's
    layers, and the run's outputs those of forward. (The times are the virtual board's: see the README.)"""
    out, err = board.run("import KPU as kpu\n"
                         "task = kpu.load(0x100000)\n"  # tiny_fc, flashed first
                         "m = task.net_arg(); t = m.inputs()[0]\n"
                         "x = [0.25 * i for i in range(t.bytes // 4)] if t.typecode == 'f' else bytes(t.bytes)\n"
                         "f = kpu.forward(task, x)[:]\n"
                         "lt = kpu.layer_times(task, x)\n"
                         "print(len(lt), [r[1] for r in lt] == [l.type_name for l in m.layers()],\n"
                         "      kpu.get_output(task, 0)[:] == f, all(r[2] >= 0 for r in lt))\n")
    assert err == ""
    n, names, same, nonnegative = out.split()
    assert int(n) >= 1 and names == same == nonnegative == "True", out


def test_an_erased_flash_offset_gets_the_loaders_message(board):
    out, err = board.run("import KPU as kpu\n"
                         "try:\n    kpu.load(0xC00000)\nexcept ValueError as e:\n    print(e)\n")
    assert err == ""
    assert out.startswith("[MAIXPY]kpu: load error:2002, ERR_KMODEL_VERSION: nothing is flashed there (the bytes are "
                          "erased flash, all 0xFF): flash the model at this offset (first bytes FF FF FF FF)")
    assert "(model read from SPI flash at 0xc00000)" in out


def test_a_model_larger_than_the_free_heap_is_maixpys_memory_error_with_the_figures(board, flash_layout):
    models, _folder = flash_layout
    big = [(address, path.stat().st_size) for name, address, _how, path in models if name == "mobilenet"]
    if not big:
        pytest.skip("MobileNet not found in %s (set OPENKPU_TESTDATA or place ../shared/testdata)" % TESTDATA)
    address, size = big[0]
    out, err = board.run("import gc, KPU as kpu\n"
                         "gc.collect()\nhog = bytearray(gc.mem_free() - 1000000)\n"
                         "try:\n    kpu.load(0x%x)\nexcept ValueError as e:\n    print(e)\n"
                         "hog = None\ngc.collect()\n" % address)
    assert err == ""
    assert out.startswith("[MAIXPY]kpu: load error:2006, ERR_NO_MEM: the model at SPI flash 0x%x is %d bytes and "
                          "needs them in one block; the heap has " % (address, size)), out
    free = int(re.search(r"the heap has (\d+) bytes free", out).group(1))
    assert 0 < free < size


# ---- the tools people use with MicroPython boards ---------------------------------------------------------------

def test_mpremote_and_pyboard_py_work_with_the_board(flashed, tmp_path):
    """mpremote (files in and out of /flash, exec, run) and MicroPython's own tools/pyboard.py, on the board's
    UART. mpremote's `fs cp` starts with os.stat of a file that is not there yet: a failing file call once made the
    board lose console input (errno shared memory with the receive ring), which this catches."""
    pytest.importorskip("mpremote", reason="mpremote is not installed (requirements-dev.txt)")
    pyboard = next((ROOT / "build" / "mpy-src").glob("*/micropython/tools/pyboard.py"), None)
    vb = subprocess.Popen([sys.executable, "-m", "openkpu.vboard", "boot", str(flashed), "--image-kind", "flash",
                           "--pty"], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = re.search(r"guest UART on (\S+)", vb.stderr.readline()).group(1)
        local = tmp_path / "hello.py"
        local.write_text("import os\nprint('hello from', os.getcwd(), sorted(os.listdir()))\n")

        def mpremote(*args):
            r = subprocess.run([sys.executable, "-m", "mpremote", "connect", port] + list(args),
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, "mpremote %s: %s%s" % (" ".join(args), r.stdout, r.stderr)
            return r.stdout

        mpremote("fs", "cp", str(local), ":hello.py")
        assert "hello.py" in mpremote("fs", "ls")
        assert mpremote("fs", "cat", ":hello.py") == local.read_text()
        mpremote("fs", "cp", ":hello.py", str(tmp_path / "back.py"))
        assert (tmp_path / "back.py").read_text() == local.read_text()
        out = mpremote("exec", "import hello")
        assert out.replace("\r\n", "\n") == "hello from /flash %s\n" % sorted(list(FS_FILES) + ["hello.py"])
        mpremote("fs", "mkdir", ":lib", "+", "fs", "rm", ":hello.py", "+", "fs", "rmdir", ":lib")
        assert "hello.py" not in mpremote("fs", "ls")
        assert mpremote("run", str(local)).replace("\r\n", "\n") == "hello from /flash %s\n" % sorted(FS_FILES)
        if pyboard is not None:
            r = subprocess.run([sys.executable, str(pyboard), "-d", port, str(local)], capture_output=True,
                               text=True, timeout=120)
            assert r.returncode == 0, r.stdout + r.stderr
            assert r.stdout.replace("\r\n", "\n") == "hello from /flash %s\n" % sorted(FS_FILES)
    finally:
        vb.terminate()
        vb.communicate(timeout=20)


def test_files_the_board_writes_are_read_back_on_a_pc(flashed, tmp_path):
    """The firmware's littlefs and openkpu.fsimage agree on the geometry both ways: the PC wrote /flash's first
    files, the board writes more, and littlefs-python reads them out of the saved flash."""
    from openkpu import fsimage
    script = tmp_path / "write.py"
    script.write_text("import os\nos.mkdir('logs')\nf = open('logs/run.txt', 'w')\nf.write('x' * 5000)\nf.close()\n"
                      "os.remove('tiny_v4.kmodel')\nprint(sorted(os.listdir()))\n")
    saved = tmp_path / "after.bin"
    r = subprocess.run([sys.executable, "-m", "openkpu.vboard", "run", str(flashed), str(script), "--image-kind",
                        "flash", "--save-flash", str(saved)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    files = fsimage.read_image(saved.read_bytes()[fsimage.FS_ADDRESS:fsimage.FS_ADDRESS + fsimage.FS_SIZE])
    assert files["logs/run.txt"] == b"x" * 5000
    assert sorted(files) == sorted(set(FS_FILES) - {"tiny_v4.kmodel"} | {"logs/run.txt"})

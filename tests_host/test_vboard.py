# SPDX-License-Identifier: Apache-2.0
"""The virtual Maix board (openkpu.vboard), checked from the guest side: small bare-metal RV64 programs in
tests_host/vboard_guest/ are built here with riscv64-unknown-elf-gcc, booted on the board, and print what they
observe through the UART; the tests compare that (and the board's stop messages) with what the K210 does."""
import hashlib
import io
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import zipfile

import pytest

pytest.importorskip("unicorn", reason="the virtual board needs unicorn (pip install 'openkpu[vboard]')")
if shutil.which("riscv64-unknown-elf-gcc") is None:
    pytest.skip("riscv64-unknown-elf-gcc not found (apt-get install gcc-riscv64-unknown-elf): the guests cannot be "
                "built", allow_module_level=True)

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from openkpu.vboard import Board, BoardFault, BootError  # noqa: E402
from openkpu.vboard.cli import main as vboard_main, run_script  # noqa: E402

GUEST_DIR = ROOT / "tests_host" / "vboard_guest"
GUESTS = ("hello", "timer", "plic_uart", "spi3_flash", "faults", "kpu", "fake_repl")
SLICE = 200000  # the board's default slice (instructions)


class Guest(object):
    def __init__(self, bin_path, symbols):
        self.bin = str(bin_path)
        self.symbols = symbols
        with open(self.bin, "rb") as f:
            self.data = f.read()


@pytest.fixture(scope="module")
def guests(tmp_path_factory):
    out = tmp_path_factory.mktemp("vboard_guests")
    built = {}
    for name in GUESTS:
        subprocess.run(["sh", str(GUEST_DIR / "build_guest.sh"), name, str(out)], check=True)
        nm = subprocess.run(["riscv64-unknown-elf-nm", str(out / (name + ".elf"))], check=True,
                            stdout=subprocess.PIPE, universal_newlines=True).stdout
        syms = {}
        for line in nm.splitlines():
            parts = line.split()
            if len(parts) == 3:
                syms[parts[2]] = int(parts[0], 16)
        built[name] = Guest(out / (name + ".bin"), syms)
    return built


def kflash_image(firmware, flag=0):
    """Flash bytes as kflash writes a firmware: flag, u32 length, image, SHA-256 of the three (computed here, not
    with the board's own helper)."""
    head = bytes([flag]) + struct.pack("<I", len(firmware)) + firmware
    return head + hashlib.sha256(head).digest() + b"\xff" * 4096


# --- boot ROM ---------------------------------------------------------------------------------------------------------

def test_bare_firmware_boots_and_uart_echoes(guests):
    board = Board(guests["hello"].bin)
    assert board.run_until("HELLO vboard\r\n", max_instructions=2000000) == b"HELLO vboard\r\n"
    board.write_uart(b"abc xyz\x04")
    assert board.run_until("BYE", max_instructions=2000000) == b"ABC XYZ\r\nBYE"
    # the firmware went to flash 0 behind kflash's header
    assert bytes(board.flash[:5]) == b"\x00" + struct.pack("<I", len(guests["hello"].data))


@pytest.mark.parametrize("flag", [0, 2])  # kflash 1.1.6 writes flag 2 (bit 1) in its default DIO mode
def test_raw_flash_dump_with_header_boots(guests, flag):
    board = Board(kflash_image(guests["hello"].data, flag))
    assert board.run_until("HELLO", max_instructions=2000000).endswith(b"HELLO")
    assert board.image_size == len(guests["hello"].data)


def test_bad_sha256_is_refused(guests, tmp_path):
    image = bytearray(kflash_image(guests["hello"].data))
    image[40] ^= 1  # one bit of the image
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(image))
    with pytest.raises(BootError, match="SHA-256 mismatch"):
        Board(str(path))
    image = bytearray(kflash_image(guests["hello"].data))
    image[5 + len(guests["hello"].data)] ^= 0x80  # the stored hash itself
    with pytest.raises(BootError, match="SHA-256 mismatch"):
        Board(bytes(image), image_kind="flash")


def test_encrypted_image_is_refused(guests):
    with pytest.raises(BootError, match="AES-encrypted"):
        Board(kflash_image(guests["hello"].data, flag=1))


def test_erased_flash_is_refused():
    with pytest.raises(BootError, match="erased"):
        Board(b"\xff" * 8192, image_kind="flash")


# --- CLINT ------------------------------------------------------------------------------------------------------------

def test_mtime_rate_and_timer_interrupt_entry(guests):
    board = Board(guests["timer"].bin)
    out = board.run_until("DONE", max_instructions=40000000).decode()
    lines = dict(line.split(" ", 1) for line in out.split("\r\n") if " " in line)
    # a 10M-instruction loop: mtime = instructions / 50 (within the slice granularity of the reads)
    delta = int(out.split("DELTA ")[1].split("\r")[0])
    assert abs(delta - 10000000 // 50) <= SLICE // 50, delta
    timers = [l for l in out.split("\r\n") if l.startswith("TIMER")]
    assert len(timers) == 3, out
    for t in timers:
        f = dict(kv.split("=") for kv in t.split()[1:])
        assert int(f["cause"], 16) == (1 << 63) | 7
        # inside the handler: MIE cleared, MPIE = old MIE (1), MPP = M
        assert int(f["mstatus_in"], 16) & 0x1888 == 0x1880
        assert int(f["mstatus_after"], 16) & 0x8 == 0x8   # mret restored MIE
        assert 0 <= int(f["late"]) <= SLICE // 50           # not before mtimecmp, at most a slice after
        assert f["epc_in_ram"] == "1"
    assert "VECTORED 1" in out  # mtvec mode 1: the timer went to base + 4 * 7
    # the third waited in wfi: the sleep (a slice cut at the deadline) ends exactly at mtimecmp
    assert " late=0 " in timers[2], timers[2]
    assert board.stats()["interrupts"] == 3
    assert board.stats()["wfi_slices"] >= 2


def test_timer_deadline_cuts_the_slice(guests):
    """A deadline written in an earlier slice is hit exactly: the slice is cut at mtime == mtimecmp."""
    board = Board(guests["hello"].bin)
    board.run_until("HELLO", max_instructions=2000000)
    board.clint.mtimecmp[0] = board.clint.mtime() + 123
    board.uc.reg_write(__import__("unicorn").riscv_const.UC_RISCV_REG_MIE, 1 << 7)
    start = board.cycles
    board.step()
    assert board.clint.mtip()
    assert (board.cycles - start) <= 123 * 50
    assert board.clint.mtime() == board.clint.mtimecmp[0]


# --- PLIC + UARTHS interrupt -----------------------------------------------------------------------------------------

def test_plic_claims_and_completes_uart_rx_interrupt(guests):
    board = Board(guests["plic_uart"].bin)
    assert b"PENDING_BEFORE 0" in board.run_until("READY", max_instructions=2000000)
    board.run(1000000)
    assert board.stats()["interrupts"] == 0  # nothing arrives, nothing is taken
    board.write_uart(b"abc")
    out = board.run_until("DONE", max_instructions=5000000).decode()
    assert "GOT abc id=33 claims=1 extra=0 cause=0x800000000000000b ip=0" in out, out
    assert board.stats()["interrupts"] == 1


# --- SPI3 + NOR flash -------------------------------------------------------------------------------------------------

def _kfpkg(path, files):
    with zipfile.ZipFile(str(path), "w") as z:
        spec = {"version": "0.1.0", "files": []}
        for name, address, data, prefix in files:
            z.writestr(name, data)
            spec["files"].append({"address": address, "bin": name, "sha256Prefix": prefix})
        z.writestr("flash-list.json", json.dumps(spec))


def test_spi3_flash_reads_ids_and_program_erase_from_kfpkg(guests, tmp_path):
    data = bytes(range(0x40, 0x80))
    pkg = tmp_path / "board.kfpkg"
    _kfpkg(pkg, [("fw.bin", 0, guests["spi3_flash"].data, True), ("data.bin", 0x100000, data, False)])
    board = Board(str(pkg))
    out = board.run_until("DONE", max_instructions=20000000).decode()
    r = dict(line.split(" ", 1) for line in out.split("\r\n") if " " in line)
    assert r["JEDEC"] == "ef4018"
    assert r["MID"] == "ef17"
    assert r["R8"] == data[:16].hex()                                       # 0x03, 8-bit frames
    assert r["R16"] == data[2:10].hex()                                     # 16-bit frames, MSB first
    assert r["R32"].split() == [data[4 + 4 * i:8 + 4 * i].hex() for i in range(3)]  # b0<<24|..|b3
    assert r["FAST"] == data[8:16].hex()                                    # 0x0B skips one dummy byte
    assert r["SR"] == "00 WEL 02"
    assert r["PE"] == "ffff12345678ffff"    # erased sector, then 4 programmed bytes
    assert r["NOWEL"] == "ffff12345678ffff"  # a program without write-enable changes nothing
    assert bytes(board.flash[0x200010:0x200014]) == b"\x12\x34\x56\x78"
    assert bytes(board.flash[0x200000:0x200010]) == b"\xff" * 16


def test_flash_item_at_address(guests):
    data = bytes(range(0x40, 0x80))
    board = Board(guests["spi3_flash"].bin, flash=[(data, 0x100000)])
    assert "R8 " + data[:16].hex() in board.run_until("DONE", max_instructions=20000000).decode()


# --- exceptions and stops ---------------------------------------------------------------------------------------------

def _faults_board(guests, key):
    board = Board(guests["faults"].bin)
    board.run_until("READY", max_instructions=2000000)
    board.write_uart(key)
    return board


@pytest.mark.parametrize("key,symbol,cause", [("i", "ill32", 2), ("c", "ill16", 2), ("e", "ecall_here", 11),
                                              ("f", "fp_here", 2)])
def test_exception_enters_trap_with_mepc_and_mcause(guests, key, symbol, cause):
    board = _faults_board(guests, key)
    out = board.run_until("AFTER " + key, max_instructions=2000000).decode()
    exc = [l for l in out.split("\r\n") if l.startswith("EXC")]
    assert len(exc) == 1, out
    f = dict(kv.split("=") for kv in exc[0].split()[1:])
    assert int(f["cause"], 16) == cause
    assert int(f["epc"], 16) == guests["faults"].symbols[symbol]  # the faulting instruction itself
    assert int(f["mstatus"], 16) & 0x1888 == 0x1800                # MPP = M, MIE = MPIE = 0
    assert board.stats()["exceptions"] == 1


@pytest.mark.parametrize("key,symbol,expect", [
    ("r", "bad_read", "unmodelled 4-byte read at 0x50450000 (AES, not modelled)"),
    ("w", "bad_write", "unmodelled 4-byte write at 0x50440100 (SYSCTL+0x100) value 0x55"),
    ("b", "ebreak_here", "guest executed ebreak"),
    ("k", "lone_sw", "KPU interrupt_clear (0x40800020) got a lone 32-bit write"),
])
def test_board_stops_with_address_and_pc(guests, key, symbol, expect):
    board = _faults_board(guests, key)
    with pytest.raises(BoardFault) as err:
        board.run_until("AFTER", max_instructions=5000000)
    msg = str(err.value)
    assert expect in msg
    assert "pc 0x%x" % guests["faults"].symbols[symbol] in msg
    assert board.fault_pc == guests["faults"].symbols[symbol]
    with pytest.raises(BoardFault):  # a stopped board stays stopped
        board.step()


# --- KPU register block -----------------------------------------------------------------------------------------------

class RecordingKpu(object):
    """Stand-in for _kpu.KpuDevice: records the 64-bit writes, raises calc_done after 12 FIFO words."""

    def __init__(self):
        self.writes = []
        self.raw = 0
        self.mask = 7
        self.fifo_words = 0
        self.pops = 0
        self.fault = None
        self.layers_run = 0

    def write(self, offset, value):
        self.writes.append((offset, value))
        if offset == 0x00:
            self.fifo_words += 1
            if self.fifo_words % 12 == 0:
                self.raw |= 1
                self.layers_run += 1
        elif offset == 0x18:
            self.mask = value
        elif offset == 0x20:
            self.raw &= ~value

    def read(self, offset):
        if offset == 0x08:
            return self.raw & ~self.mask
        if offset == 0x30:
            self.pops += 1
            return 0x0102030405060708 * self.pops
        return 0x1122334455667788 if offset == 0x28 else 0

    def irq_pending(self):
        return bool(self.raw & ~self.mask & 7)


def test_kpu_64bit_accesses_are_reassembled_and_irq_reaches_plic(guests):
    dev = RecordingKpu()
    board = Board(guests["kpu"].bin, kpu=dev)
    board.run_until("READY", max_instructions=2000000)
    board.write_uart("r")
    out = board.run_until("DONE", max_instructions=5000000).decode()
    # one 64-bit write per sd, never a half
    assert dev.writes[:3] == [(0x28, 0x1122334455667788), (0x40, 1), (0x18, 0xFFFFFFFF00000006)]
    fifo = [v for o, v in dev.writes if o == 0x00]
    assert fifo == [0xA5A5000000000000 | (i << 32) | i for i in range(12)]
    # each ld is one 64-bit read: fifo_data_out popped once per ld, both halves from the same value
    assert "R28 0x1122334455667788 R30 0x0102030405060708 R30 0x020406080a0c0e10" in out, out
    assert dev.pops == 2
    assert "KPUIRQ id=25 status=0x0000000000000001 after=0x0000000000000000" in out, out
    assert (0x20, 7) in dev.writes


def test_real_kpu_device_fault_stops_the_board(guests):
    _kpu = pytest.importorskip("_kpu")
    if not hasattr(_kpu, "KpuDevice"):
        pytest.skip("this _kpu build has no KpuDevice")
    board = Board(guests["kpu"].bin)
    assert board.kpu_device is not None
    board.run_until("READY", max_instructions=2000000)
    board.write_uart("p")
    with pytest.raises(BoardFault, match=r"KPU fault: the KPU could not run pushed layer .*0xf0000000"):
        board.run_until("PUSHED", max_instructions=5000000)


# --- CLI --------------------------------------------------------------------------------------------------------------

def test_run_script_through_the_raw_repl(guests):
    out, err = io.BytesIO(), io.BytesIO()
    board = Board(guests["fake_repl"].bin)
    status, _boot = run_script(board, b"print(1)\nprint(2)\n", timeout=20, out=out, err=err)
    assert status == 0
    assert out.getvalue() == b"print(1)\nprint(2)\n"
    assert err.getvalue() == b""
    board = Board(guests["fake_repl"].bin)
    status, _boot = run_script(board, b"raise!\n", timeout=20, out=out, err=err)
    assert status == 1
    assert b"ValueError: bang" in err.getvalue()


def test_cli_exit_codes(guests, tmp_path, capfd):
    script = tmp_path / "s.py"
    script.write_bytes(b"x = 1\n")
    assert vboard_main(["run", guests["fake_repl"].bin, str(script), "--timeout", "20"]) == 0
    script.write_bytes(b"boom!\n")
    assert vboard_main(["run", guests["fake_repl"].bin, str(script), "--timeout", "20"]) == 1
    bad = tmp_path / "bad.bin"
    image = bytearray(kflash_image(guests["hello"].data))
    image[20] ^= 1
    bad.write_bytes(bytes(image))
    assert vboard_main(["run", str(bad), str(script)]) == 2
    assert "boot error" in capfd.readouterr().err


FIRMWARE = ROOT / "build" / "k210" / "firmware.bin"


@pytest.mark.skipif(not FIRMWARE.exists(), reason="build/k210/firmware.bin not built (make -C firmware/k210)")
def test_project_firmware_boots_to_the_repl_and_runs_a_script():
    board = Board(str(FIRMWARE))
    board.run_until(">>> ", max_instructions=200000000)
    out, err = io.BytesIO(), io.BytesIO()
    status, _ = run_script(board, b"print(6 * 7)\n", timeout=30, out=out, err=err, wait_prompt=False)
    assert (status, out.getvalue()) == (0, b"42\n"), err.getvalue()
    status, _ = run_script(board, b"1/0\n", timeout=30, out=out, err=err, wait_prompt=False)
    assert status == 1 and b"ZeroDivisionError" in err.getvalue()
    # the shared time module with the K210's time.clock() (MaixPy's frame timer) added to it
    out = io.BytesIO()
    script = (b"import time\nc = time.clock()\nc.tick()\nt = time.ticks_ms()\ntime.sleep_ms(3)\n"
              b"print(c.fps() > 0, c.avg() >= 3, time.ticks_diff(time.ticks_ms(), t) >= 3)\n"
              b"print(sorted(n for n in dir(time) if not n.startswith('_')))\n")
    status, _ = run_script(board, script, timeout=30, out=out, err=err, wait_prompt=False)
    assert status == 0, err.getvalue()
    assert out.getvalue().decode().splitlines() == [
        "True True True",
        str(sorted(["clock", "sleep", "sleep_ms", "sleep_us", "ticks_add", "ticks_diff", "ticks_ms", "ticks_us",
                    "time"]))]


def test_project_firmware_soft_reset_reboots_from_flash():
    if not FIRMWARE.exists():
        pytest.skip("build/k210/firmware.bin not built (make -C firmware/k210)")
    board = Board(str(FIRMWARE))
    banner = board.run_until(">>> ", max_instructions=200000000)
    board.write_uart(b"import _board\r_board.reset()\r")
    board.run_until(b"_board.reset()", max_instructions=200000000)
    again = board.run_until(">>> ", max_instructions=200000000)
    assert board.stats()["resets"] == 1
    assert banner.split(b"\r\n")[0] in again  # the boot banner again: the ROM model reloaded the firmware


TESTDATA = pathlib.Path(os.environ.get("OPENKPU_TESTDATA", ROOT.parent / "shared" / "testdata"))


@pytest.mark.parametrize("rel, input_bytes", [
    ("mnist_v3_maixpy/mnist.kmodel", 28 * 28),
    # kmodel v5 (nncase 1.9): the k210 module's kpu_upload / kpu_conv2d / kpu_download on the register block, then
    # the stackvm's float ops on the board's CPU
    ("kmodel_v5_nncase/convnet_u8_v190.kmodel", 3 * 48 * 64),
])
def test_project_firmware_runs_a_model_from_flash_on_the_kpu_device(tmp_path, rel, input_bytes):
    """kpu.load(0x300000) reads the model over SPI3, its KPU layers run on _kpu.KpuDevice through the register
    block; the output equals CPython's KPU shim on the same model and input."""
    model = TESTDATA / rel
    if not FIRMWARE.exists():
        pytest.skip("build/k210/firmware.bin not built (make -C firmware/k210)")
    if not model.exists():
        pytest.skip("real-model data not found: %s" % model)
    _kpu = pytest.importorskip("_kpu")
    if not hasattr(_kpu, "KpuDevice"):
        pytest.skip("this _kpu build has no KpuDevice")
    script = (b"import KPU as kpu\n"
              b"task = kpu.load(0x300000)\n"
              b"fm = kpu.forward(task, bytes([(i * 7) & 255 for i in range(%d)]))\n"
              b"print(' '.join('%%.6f' %% v for v in fm[:]))\n" % input_bytes)
    board = Board(str(FIRMWARE), flash=[(str(model), 0x300000)])
    out, err = io.BytesIO(), io.BytesIO()
    status, _ = run_script(board, script, timeout=60, out=out, err=err)
    assert status == 0, err.getvalue()
    assert board.kpu_device.layers_run >= 1
    flash = tmp_path / "flash.bin"
    flash.write_bytes(b"\xff" * 0x300000 + model.read_bytes())
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import KPU as kpu\n"
            "kpu.set_flash_image(%r)\n" % (str(ROOT / "modules" / "KPU"), str(flash))) + script.decode()
    ref = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, check=True).stdout
    assert out.getvalue() == ref and len(ref.split()) >= 10


def test_exception_without_trap_vector_stops_the_board():
    # a firmware whose first instruction is illegal (opcode 0x6b), before any mtvec is set
    board = Board(b"\x6b\x00\x00\x00" + b"\x13\x00\x00\x00" * 4, image_kind="firmware")
    with pytest.raises(BoardFault, match=r"exception 2 \(illegal instruction\) at pc 0x80000000 but mtvec is 0x0"):
        board.run(1000)


def test_unmapped_fetch_names_the_region():
    # jalr to the boot ROM address, which the board does not model
    lui_t0 = struct.pack("<I", 0x880002B7)   # lui t0, 0x88000  (sign-extended: 0xffffffff88000000)
    jalr = struct.pack("<I", 0x000280E7)     # jalr ra, 0(t0)
    board = Board(lui_t0 + jalr, image_kind="firmware")
    with pytest.raises(BoardFault, match=r"instruction fetch at 0xffffffff88000000 \(boot ROM, not modelled\)"):
        board.run(1000)


def test_project_firmware_flash_filesystem_persists_in_the_flash_image():
    """The firmware's /flash (littlefs over SPI3 erase/program) written on one board is read on a board booted
    from the first one's flash bytes."""
    if not FIRMWARE.exists():
        pytest.skip("build/k210/firmware.bin not built (make -C firmware/k210)")
    board = Board(str(FIRMWARE))
    out, err = io.BytesIO(), io.BytesIO()
    status, _ = run_script(board, b"f = open('/flash/vb.txt', 'w')\nf.write('kept')\nf.close()\n", timeout=60,
                           out=out, err=err)
    if status and b"ENOENT" in err.getvalue():
        pytest.skip("this firmware has no /flash filesystem")
    assert status == 0, err.getvalue()
    assert board.flash_chip.erased > 0 and board.flash_chip.programmed > 0
    again = Board(bytes(board.flash), image_kind="flash")
    status, _ = run_script(again, b"print(open('/flash/vb.txt').read())\n", timeout=60, out=out, err=err)
    assert status == 0, err.getvalue()
    assert out.getvalue().endswith(b"kept\n")

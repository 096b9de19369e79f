# SPDX-License-Identifier: Apache-2.0
"""openkpu.flashing: the flash-layout checks, .kfpkg packing, and flashing through the real kflash against a fake K210.

The fake board (fake_k210_isp.FakeK210) answers kflash's ISP protocol on a pseudo-terminal and records every flash
write; the end-to-end tests compare its whole flash, byte for byte, with what the plan says should be there.
"""
import io
import json
import os
import pathlib
import random
import re
import sys
import threading
import zipfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from fake_k210_isp import SRAM_BASE, FakeK210  # noqa: E402
from openkpu import flashing  # noqa: E402
from openkpu.flash import FlashImage, flashed_bytes, read_kfpkg  # noqa: E402
from openkpu.model_tools import swap_words  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIGITS = ROOT / "examples" / "models" / "digits.kmodel"
WATCHDOG_S = 30  # kflash retries some steps for minutes: hang up on it instead of hanging the suite


@pytest.fixture
def files(tmp_path):
    """Small inputs: firmware (3 kflash frames, every byte value, so SLIP escapes occur), a model, its
    load_flash (word-swapped) form, a raw blob, and a non-model."""
    rng = random.Random(210)
    out = {
        "fw": tmp_path / "maixpy.bin",
        "model": tmp_path / "digits.kmodel",
        "swapped": tmp_path / "digits_be.kmodel",
        "blob": tmp_path / "blob.bin",
        "junk": tmp_path / "junk.kmodel",
    }
    out["fw"].write_bytes(bytes(rng.randrange(256) for _ in range(150 * 1024)))
    out["model"].write_bytes(DIGITS.read_bytes())
    out["swapped"].write_bytes(swap_words(DIGITS.read_bytes()))
    out["blob"].write_bytes(bytes(rng.randrange(256) for _ in range(100 * 1024)))
    out["junk"].write_bytes(b"this is not a model" * 10)
    return {k: str(v) for k, v in out.items()}


@pytest.fixture
def fake_board(monkeypatch):
    """A FakeK210 on a pty, with pyserial's DTR/RTS ioctls (which fail on a pty) made no-ops."""
    pytest.importorskip("kflash", reason="kflash is not installed (pip install %s)" % flashing.KFLASH_REQUIREMENT)
    import serial.serialposix
    monkeypatch.setattr(serial.serialposix.Serial, "_update_dtr_state", lambda self: None)
    monkeypatch.setattr(serial.serialposix.Serial, "_update_rts_state", lambda self: None)
    with FakeK210() as board:
        watchdog = threading.Timer(WATCHDOG_S, board.close)
        watchdog.start()
        try:
            yield board
        finally:
            watchdog.cancel()


def expected_flash(size, placements):
    """Erased flash with `placements` [(address, bytes)] written."""
    flash = bytearray(b"\xff") * size
    for address, data in placements:
        flash[address:address + len(data)] = data
    return flash


def assert_board_flashed(board, placements):
    assert board.errors == []
    assert board.booted_at == SRAM_BASE and board.sram_image(), "the flash bootloader was not uploaded and booted"
    assert board.flash_chip == 1  # kflash's default: the on-board SPI flash
    assert board.rebooted
    assert board.flash == expected_flash(len(board.flash), placements)


# ---- end to end through kflash ---------------------------------------------------------------------------------------

def test_write_firmware_model_and_blob_through_kflash(fake_board, files, capsys):
    items = [files["fw"], files["model"] + "@0x300000", files["blob"] + "@0x7f000"]  # 4 KiB- but not 64 KiB-aligned
    assert flashing.main(["write", "-p", fake_board.port] + items) == 0
    fw = open(files["fw"], "rb").read()
    assert_board_flashed(fake_board, [
        (0, flashed_bytes(fw, True, flashing.KFLASH_DIO_FLAG)),  # firmware behind its boot header
        (0x300000, DIGITS.read_bytes()),
        (0x7F000, open(files["blob"], "rb").read()),
    ])
    out = capsys.readouterr().out
    assert "[flash] digits.kmodel: 6,600 of 6,600 bytes (100%)" in out
    assert "[flash] maixpy.bin: 153,637 of 153,637 bytes (100%)" in out
    assert "flashed 3 files" in out


def test_write_kfpkg_through_kflash_with_baudrate_change(fake_board, files, tmp_path, capsys):
    package = str(tmp_path / "board.kfpkg")
    assert flashing.main(["pack", "-o", package, files["fw"], files["model"] + "@3M",
                          files["swapped"] + "@0x600000"]) == 0
    capsys.readouterr()
    assert flashing.main(["write", "-p", fake_board.port, "-b", "1500000", "-B", "goE", package]) == 0
    entries = read_kfpkg(package)
    assert [(e.address, e.sha256_prefix) for e in entries] == [(0, True), (0x300000, False), (0x600000, False)]
    assert_board_flashed(fake_board, [(e.address, flashed_bytes(e.data, e.sha256_prefix, flashing.KFLASH_DIO_FLAG))
                                      for e in entries])
    assert ("stub", 1500000) in fake_board.baudrates  # the goE stage-0 switch and the stub's switch both happened
    assert [stage for stage, _ in fake_board.baudrates] == ["rom", "stub"]


def test_flashing_failure_is_exit_1_with_kflashs_reason(files, tmp_path, capsys):
    pytest.importorskip("kflash")
    port = str(tmp_path / "no-such-port")
    assert flashing.main(["write", "-p", port, files["fw"]]) == 1
    err = capsys.readouterr().err
    assert "error: flashing failed:" in err and "no-such-port" in err


# ---- pack and dry run ------------------------------------------------------------------------------------------------

def test_pack_round_trip_through_flash_image(files, tmp_path):
    package = tmp_path / "out.kfpkg"
    items = [files["fw"], files["model"] + "@0x300000", files["blob"] + "@0x400000", files["model"] + "@6M"]
    assert flashing.main(["pack", "-o", str(package)] + items) == 0
    image = FlashImage(str(package))
    fw = open(files["fw"], "rb").read()
    assert image.read(5, len(fw)) == fw and image.read(1, 4) == len(fw).to_bytes(4, "little")
    assert image.read(0x300000, len(DIGITS.read_bytes())) == DIGITS.read_bytes()
    assert image.read(0x600000, len(DIGITS.read_bytes())) == DIGITS.read_bytes()
    assert image.read(0x400000, 100 * 1024) == open(files["blob"], "rb").read()
    names = [name for _address, name in image.entries()]
    assert names == ["maixpy.bin", "digits.kmodel", "blob.bin", "digits_0x600000.kmodel"]  # no clash in the zip


def test_flash_list_json_is_what_kflash_parses(files, tmp_path):
    package = tmp_path / "out.kfpkg"
    assert flashing.main(["pack", "-o", str(package), files["fw"], files["model"] + "@0x300000"]) == 0
    with zipfile.ZipFile(package) as z:
        text = z.read("flash-list.json").decode()
    assert json.loads(text)["version"] == "0.1.0"
    # kflash 1.1.6's parser: quote the address with this regex, json.loads, then int(address, 0)
    quoted = json.loads(re.sub(r'"address": (.*),', r'"address": "\1",', text))
    assert [(int(f["address"], 0), f["bin"], f["sha256Prefix"]) for f in quoted["files"]] == [
        (0, "maixpy.bin", True), (0x300000, "digits.kmodel", False)]
    assert '            "address": 3145728,\n' in text  # one key per line, a bare decimal number, then a comma


def test_dry_run_prints_the_plan_and_the_kflash_command(files, capsys):
    assert flashing.main(["write", "--dry-run", "-b", "1500000", files["fw"], files["model"] + "@0x300000"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"0x000000\.\.0x025825 +\S*maixpy\.bin +153,637 B +firmware", out)
    assert re.search(r"0x300000\.\.0x3019c8 +\S*digits\.kmodel +6,600 B +kmodel v3, for kpu\.load\(0x300000\)", out)
    assert "kflash -p PORT -b 1500000 -n PLAN.kfpkg" in out


def test_swapped_model_is_accepted_with_a_load_flash_warning(files, tmp_path, capsys):
    assert flashing.main(["pack", "-o", str(tmp_path / "p.kfpkg"), files["swapped"] + "@0x600000"]) == 0
    captured = capsys.readouterr()
    assert "word-swapped, for kpu.load_flash(0x600000, ...)" in captured.out
    assert re.search(r"warning: \S*digits_be\.kmodel is word-swapped for kpu\.load_flash.*kpu\.load\(0x600000\) "
                     r"cannot read it", captured.err)


def test_real_maixpy_kfpkgs_merge_and_the_swapped_model_is_recognised(testdata, capsys):
    plain = testdata("face_detect_yolo2_v3_maixpy", "face_model_at_0x300000.kfpkg")
    swapped = testdata("face_detect_yolo2_v3_maixpy", "face_model_be_at_0x600000.kfpkg")
    assert flashing.main(["write", "--dry-run", str(plain), str(swapped)]) == 0
    captured = capsys.readouterr()
    assert "face_model_at_0x300000.kfpkg:facedetect.kmodel" in captured.out
    assert "for kpu.load(0x300000)" in captured.out and "for kpu.load_flash(0x600000, ...)" in captured.out
    assert "facedetect_be.kmodel is word-swapped" in captured.err


# ---- planner errors: exit 2, nothing written, messages naming files and addresses ------------------------------------

def run_pack_expecting_errors(items, tmp_path, capsys):
    output = tmp_path / "never.kfpkg"
    assert flashing.main(["pack", "-o", str(output)] + items) == 2
    assert not output.exists()
    err = capsys.readouterr().err
    assert "nothing was written" in err
    return err


def test_overlap_names_both_files_the_range_and_the_next_free_address(files, tmp_path, capsys):
    err = run_pack_expecting_errors([files["fw"], files["model"] + "@0x20000"], tmp_path, capsys)
    # the 150 KiB firmware + 37-byte header ends at 0x25825: the model collides, 0x30000 is the next 64 KiB step
    assert re.search(r"digits\.kmodel at 0x020000\.\.0x0219c8 overlaps \S*maixpy\.bin at 0x000000\.\.0x025825: "
                     r"both claim 0x020000\.\.0x0219c8; the next free 64 KiB-aligned address for \S*digits\.kmodel "
                     r"is 0x30000 \(leave the firmware room to grow", err)


def test_overlap_suggestions_do_not_collide_with_each_other(files, tmp_path, capsys):
    err = run_pack_expecting_errors([files["fw"], files["model"] + "@0x10000", files["blob"] + "@0x20000"],
                                    tmp_path, capsys)
    suggestions = re.findall(r"next free 64 KiB-aligned address for \S+ is (0x[0-9a-f]+)", err)
    assert suggestions == ["0x30000", "0x40000"]


def test_a_model_at_0_moves_and_the_firmware_stays_whatever_the_order(files, tmp_path, capsys):
    for items in ([files["model"] + "@0", files["fw"]], [files["fw"], files["model"] + "@0"]):
        err = run_pack_expecting_errors(items, tmp_path, capsys)
        assert re.search(r"digits\.kmodel at 0x000000\.\.0x0019c8 overlaps \S*maixpy\.bin .*next free 64 KiB-aligned "
                         r"address for \S*digits\.kmodel is 0x30000", err)
        assert "address for %s" % files["fw"] not in err


def test_overlap_with_a_merged_kfpkg_names_the_package_member(files, tmp_path, capsys):
    package = str(tmp_path / "m.kfpkg")
    assert flashing.main(["pack", "-o", package, files["model"] + "@0x300000"]) == 0
    err = run_pack_expecting_errors([package, files["blob"] + "@0x300000"], tmp_path, capsys)
    assert "blob.bin at 0x300000..0x319000 overlaps m.kfpkg:digits.kmodel at 0x300000..0x3019c8" in err


def test_out_of_range(files, tmp_path, capsys):
    err = run_pack_expecting_errors([files["blob"] + "@0xff0000", "--flash-size", "16M"], tmp_path, capsys)
    assert re.search(r"blob\.bin at 0xff0000\.\.0x1009000 \(102400 bytes\) ends past the end of the 16 MiB flash "
                     r"\(0x1000000\); the highest 4 KiB-aligned address it fits at is 0xfe7000", err)
    err = run_pack_expecting_errors([files["model"] + "@0x7ff000", "--flash-size", "8M"], tmp_path, capsys)
    assert "ends past the end of the 8 MiB flash (0x800000)" in err


def test_not_a_kmodel_quotes_the_loader(files, tmp_path, capsys):
    err = run_pack_expecting_errors([files["junk"] + "@0x300000"], tmp_path, capsys)
    assert re.search(r"junk\.kmodel is not a valid kmodel: \[MAIXPY\]kpu: load error:2002, ERR_KMODEL_VERSION", err)


def test_misaligned(files, tmp_path, capsys):
    err = run_pack_expecting_errors([files["model"] + "@0x300100"], tmp_path, capsys)
    assert re.search(r"digits\.kmodel at 0x300100 is not on a 4 KiB sector boundary.*use 0x300000 or 0x301000", err)


def test_every_problem_is_reported_at_once(files, tmp_path, capsys):
    err = run_pack_expecting_errors([files["junk"] + "@0x300000", files["model"] + "@0x300100",
                                     files["model"], files["fw"] + "@0x300000"], tmp_path, capsys)
    assert "junk.kmodel is not a valid kmodel" in err
    assert "not on a 4 KiB sector boundary" in err
    assert "give its flash address, e.g." in err
    assert "overlaps" in err
    assert "nothing was written (5 problems)" in err


def test_a_folder_becomes_the_board_filesystem(tmp_path, capsys):
    """A folder item is packed as a littlefs image of its files, at the firmware's /flash address by default."""
    pytest.importorskip("littlefs", reason="littlefs-python (requirements-dev.txt) builds filesystem images")
    from openkpu import fsimage
    folder = tmp_path / "board_files"
    (folder / "models").mkdir(parents=True)
    (folder / "main.py").write_bytes(b"print('hello from /flash')\n")
    (folder / "models" / "blob.bin").write_bytes(bytes(range(256)) * 300)
    out = tmp_path / "fs.kfpkg"
    assert flashing.main(["pack", "-o", str(out), str(folder)]) == 0
    assert "littlefs for /flash: 2 files, 76827 bytes" in capsys.readouterr().out
    (entry,) = read_kfpkg(str(out))
    assert entry.address == fsimage.FS_ADDRESS and not entry.sha256_prefix
    assert len(entry.data) % fsimage.BLOCK_SIZE == 0 and len(entry.data) < fsimage.FS_SIZE  # trimmed
    assert fsimage.read_image(entry.data) == {"main.py": b"print('hello from /flash')\n",
                                              "models/blob.bin": bytes(range(256)) * 300}
    # at another address, and a folder that cannot fit
    assert flashing.main(["pack", "-o", str(out), str(folder) + "@0x900000"]) == 0
    assert read_kfpkg(str(out))[0].address == 0x900000
    (folder / "huge.bin").write_bytes(b"\0" * (fsimage.FS_SIZE + 1))
    err = run_pack_expecting_errors([str(folder)], tmp_path, capsys)
    assert "do not fit a 3072 KiB filesystem" in err and "LFS_ERR_NOSPC" in err


def test_an_unreadable_file_is_reported_not_raised(files, tmp_path, capsys, monkeypatch):
    real_open = open

    def no_permission(path, *args, **kwargs):
        if str(path) == files["blob"]:
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_permission)
    err = run_pack_expecting_errors([files["blob"] + "@0x300000"], tmp_path, capsys)
    assert "blob.bin: cannot read it: Permission denied" in err


def test_a_damaged_package_is_reported_not_raised(testdata, tmp_path, capsys):
    """A byte flipped in the deflate stream of the model (zlib.error, not BadZipFile, in zipfile)."""
    data = bytearray(testdata("face_detect_yolo2_v3_maixpy", "face_model_at_0x300000.kfpkg").read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        member = z.getinfo("facedetect.kmodel")
    data[member.header_offset + 30 + len(member.filename) + len(member.extra)] ^= 0xFF  # first compressed byte
    damaged = tmp_path / "damaged.kfpkg"
    damaged.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="cannot extract facedetect.kmodel"):
        FlashImage(str(damaged))
    err = run_pack_expecting_errors([str(damaged)], tmp_path, capsys)
    assert "damaged.kfpkg: cannot read the package: " in err and "cannot extract facedetect.kmodel" in err


def test_sha256_prefix_is_read_as_kflash_reads_it(tmp_path):
    """kflash prefixes a file only when sha256Prefix == True: a quoted "false" (or "true") is written raw."""
    package = tmp_path / "quoted.kfpkg"
    with zipfile.ZipFile(str(package), "w") as z:
        z.writestr("flash-list.json", '{"version": "0.1.0", "files": ['
                   '{"address": 0, "bin": "a.bin", "sha256Prefix": "false"}, '
                   '{"address": 4096, "bin": "b.bin", "sha256Prefix": true}, '
                   '{"address": 8192, "bin": "c.bin", "sha256Prefix": 0}]}')
        for name in ("a.bin", "b.bin", "c.bin"):
            z.writestr(name, name.encode() * 10)
    assert [e.sha256_prefix for e in read_kfpkg(package)] == [False, True, False]
    image = FlashImage(str(package))
    assert image.read(0, 50) == b"a.bin" * 10 and image.read(8192, 50) == b"c.bin" * 10


def test_planner_refusals_name_the_file_and_the_reason(files, tmp_path, capsys):
    empty = tmp_path / "empty.kmodel"
    empty.write_bytes(b"")
    package = str(tmp_path / "m.kfpkg")
    assert flashing.main(["pack", "-o", package, files["model"] + "@0x300000"]) == 0
    err = run_pack_expecting_errors([str(empty) + "@0x300000"], tmp_path, capsys)
    assert "empty.kmodel is empty (0 bytes): nothing to flash" in err
    err = run_pack_expecting_errors([package + "@0x400000"], tmp_path, capsys)
    assert "m.kfpkg: a .kfpkg carries its own addresses (flash-list.json); give it without @ADDRESS" in err
    err = run_pack_expecting_errors([files["blob"] + "@0x1000", "--flash-size", "64K"], tmp_path, capsys)
    assert "blob.bin at 0x001000..0x01a000 (102400 bytes) ends past the end of the 64 KiB flash (0x10000); it is " \
           "larger than the whole flash" in err
    err = run_pack_expecting_errors([files["blob"] + "@0x1000", files["model"] + "@0x10000", "--flash-size", "128K"],
                                    tmp_path, capsys)
    assert re.search(r"digits\.kmodel at 0x010000\.\.0x0119c8 overlaps \S*blob\.bin .*; no free 64 KiB-aligned room "
                     r"for \S*digits\.kmodel \(6600 bytes\) above it in the 128 KiB flash", err)


def test_a_model_at_0_is_planned_with_a_boot_warning(files, tmp_path, capsys):
    assert flashing.main(["pack", "-o", str(tmp_path / "p.kfpkg"), files["model"] + "@0"]) == 0
    assert re.search(r"warning: \S*digits\.kmodel is at address 0, where the boot ROM looks for firmware",
                     capsys.readouterr().err)


def test_a_model_behind_a_boot_header_is_planned_with_a_warning(files, tmp_path, capsys):
    """A kfpkg that marks a model sha256Prefix true: kflash puts 5 header bytes before it, so kpu.load(addr) would
    read the header. The plan still packs (the user may want it) but says where the model really starts."""
    package = tmp_path / "prefixed.kfpkg"
    with zipfile.ZipFile(str(package), "w") as z:
        z.writestr("flash-list.json", '{"version": "0.1.0", "files": [\n'
                   '{\n"address": 3145728,\n"bin": "digits.kmodel",\n"sha256Prefix": true\n}]}')
        z.write(files["model"], "digits.kmodel")
    assert flashing.main(["pack", "-o", str(tmp_path / "out.kfpkg"), str(package)]) == 0
    assert re.search(r"warning: \S*digits\.kmodel is written behind kflash's boot header \(sha256Prefix true\): the "
                     r"model starts at 0x300005, so kpu\.load\(0x300000\) reads the header",
                     capsys.readouterr().err)


def test_dry_run_command_carries_board_and_slow_mode(files, capsys):
    assert flashing.main(["write", "--dry-run", "-p", "/dev/ttyUSB0", "-B", "goE", "-S", files["fw"]]) == 0
    assert "kflash -p /dev/ttyUSB0 -b 115200 -B goE -S -n PLAN.kfpkg" in capsys.readouterr().out


class _Log(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_kflash_output_off_a_terminal_drops_the_redrawn_bar_and_prints_quarters():
    log = _Log(tty=False)
    output = flashing.KflashOutput(log)
    output.log("[INFO]", "Greeting", end="")
    output.log(".", end="")
    output.log()  # ends the greeting line: kept
    output.log("\rProgramming BIN: |===| 50.0%", end="\r")  # the redrawn bar: dropped
    output.log()  # the newline closing the bar: dropped
    for done in (10, 25, 30, 60, 100):
        output.progress("m.kmodel", done, 100)
    assert log.getvalue() == ("[INFO] Greeting.\n"
                              "[flash] m.kmodel: 25 of 100 bytes (25%)\n"
                              "[flash] m.kmodel: 60 of 100 bytes (60%)\n"
                              "[flash] m.kmodel: 100 of 100 bytes (100%)\n")
    terminal = _Log(tty=True)
    output = flashing.KflashOutput(terminal)
    output.log("bar", end="\r")
    output.progress("m.kmodel", 100, 100)  # kflash's own bar shows progress on a terminal
    assert terminal.getvalue() == "bar\r"


def test_argument_errors_are_exit_2(files, capsys):
    assert flashing.main(["write"]) == 2
    assert flashing.main(["pack", files["fw"]]) == 2  # no -o
    assert flashing.main(["pack", "-o", "x.kfpkg", "--flash-size", "12345", files["fw"]]) == 2
    assert flashing.main(["write", "--dry-run", files["model"] + "@0xzz"]) == 2
    assert "bad address after '@'" in capsys.readouterr().err


def test_pack_to_a_path_it_cannot_write_is_exit_2_without_a_traceback(files, tmp_path, capsys):
    for output in (tmp_path / "no-such-folder" / "p.kfpkg", tmp_path):  # a missing folder, a directory
        assert flashing.main(["pack", "-o", str(output), files["fw"]]) == 2
        assert "error: cannot write %s: " % output in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(os.path.basename(f) for f in files.values())


# ---- helpers ---------------------------------------------------------------------------------------------------------

def test_parse_size_and_next_free_address():
    assert [flashing.parse_size(t) for t in ("0x300000", "3145728", "3M", "3MiB", "64k")] == [
        0x300000, 0x300000, 0x300000, 0x300000, 0x10000]
    seg = lambda address, size: flashing.Segment("f", "f", address, b"x" * size, False)  # noqa: E731
    occupied = [seg(0, 0x25000), seg(0x30000, 0x100)]
    assert flashing.next_free_address(0x1000, occupied, 0x25000, 0x1000000) == 0x40000
    assert flashing.next_free_address(0x8000, occupied, 0, 0x1000000) == 0x40000
    assert flashing.next_free_address(0x1000, occupied, 0x25000, 0x40000) is None


def test_the_script_wrapper_runs_the_same_command_line(files):
    import subprocess
    script = ROOT / "scripts" / "flash_board.py"
    done = subprocess.run([sys.executable, str(script), "write", "--dry-run", files["fw"], files["model"] + "@3M"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "kmodel v3, for kpu.load(0x300000)" in done.stdout

# SPDX-License-Identifier: Apache-2.0
"""Flash firmware and kmodels to a K210 board with kflash, after checking where everything goes.

    python -m openkpu.flashing write [-p PORT] [-b BAUD] [-B BOARD] [--dry-run] ITEM...
    python -m openkpu.flashing pack -o OUT.kfpkg ITEM...
    scripts/flash_board.py write ...              (the same, from a checkout)

An ITEM is `FILE@ADDRESS` (decimal, 0x hex, or with a K/M suffix: 3M = 0x300000), a `.kfpkg` to merge (its files
keep their own addresses), a firmware `.bin` without an address (it goes to 0, as with kflash), or a FOLDER: its
files become the openkpu firmware's `/flash` filesystem (a littlefs image at 0xD00000 unless FOLDER@ADDRESS; see
openkpu.fsimage). For example

    python -m openkpu.flashing write -p /dev/ttyUSB0 -b 1500000 maixpy.bin digits.kmodel@0x300000

The plan is checked before anything is written. Every problem is reported, and the exit status is then 2:
- each file lies inside the flash (`--flash-size`, 16 MiB by default: the W25Q128 of the Maix boards);
- no two files overlap. The message names both files and the range they both claim, and suggests the next free
  64 KiB-aligned address for the one placed higher. A model placed where the firmware grows is silently corrupted on
  the board, so this is an error, never a warning;
- each file starts on a 4 KiB boundary. SPI NOR flash erases whole 4 KiB sectors, so a file starting mid-sector would
  share a sector with its neighbour, and writing either one again later erases the other's bytes there (kflash's own
  erase, -A/-L, refuses addresses that are not 4 KiB-aligned for the same reason). Suggestions use 64 KiB steps: the
  flash's erase block, and kflash sends data in 64 KiB frames aligned to 64 KiB;
- each `.kmodel` loads (`_kpu.Model`, the same loader as `KPU.load`); otherwise the loader's message is quoted. A model
  whose 32-bit words are byte-swapped (prepared for `kpu.load_flash` by MaixPy's model_le2be.py) does not load, but
  its swap does: that model is accepted with a warning that `kpu.load(address)` cannot read it and
  `kpu.load_flash(address, ...)` must be used.

On flash, a `.bin` at address 0 is firmware. kflash writes it behind the boot header the K210 boot ROM checks
("sha256Prefix": flag byte, u32 length, the data, SHA-256 of those; 37 bytes more than the file). Everything else
is written raw.

`pack` writes the plan as a .kfpkg. `write` packs the plan into a temporary .kfpkg and flashes it in one kflash
session (one ISP handshake) through kflash's module API (`kflash.KFlash().process`, checked with kflash 1.1.6),
printing kflash's progress. `--dry-run` prints the plan and the equivalent kflash command, and writes nothing.

Exit status: 0 done; 1 flashing failed (kflash not installed, serial or board error); 2 bad arguments or a plan that
fails the checks (nothing is written then).
"""
import argparse
import json
import os
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from typing import List

from openkpu.flash import SHA256_PREFIX_OVERHEAD, flashed_bytes, read_kfpkg

KIB = 1024
MIB = 1024 * KIB
SECTOR_SIZE = 4 * KIB       # smallest erasable unit of the SPI NOR flash: files must start on one
SUGGEST_ALIGN = 64 * KIB    # suggested addresses: the erase block, and kflash's write frame
DEFAULT_FLASH_SIZE = 16 * MIB
KFLASH_DIO_FLAG = 0x02      # the boot header's flag byte as kflash 1.1.6 writes it (bit 1: dual-SPI boot)
KFPKG_VERSION = "0.1.0"     # what MaixPy's released packages carry
KFLASH_BOARDS = ("kd233", "dan", "bit", "bit_mic", "goE", "goD", "maixduino", "trainer")
KFLASH_REQUIREMENT = "kflash==1.1.6"

EXIT_OK, EXIT_FLASH_FAILED, EXIT_BAD_PLAN = 0, 1, 2

__all__ = ["main", "make_plan", "write_kfpkg", "flash_list_json", "flash_with_kflash", "Plan", "Segment",
           "PlanError", "FlashFailed", "next_free_address", "parse_size"]


class PlanError(Exception):
    """The items do not make a valid flash layout; `problems` lists every reason."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class FlashFailed(Exception):
    """kflash (or the serial port under it) failed."""


@dataclass
class Segment:
    """One file at one flash address."""
    source: str            # as the user named it: "fw.bin", or "pkg.kfpkg:face.kmodel" for a merged package
    name: str              # its member name in the kfpkg
    address: int
    data: bytes
    sha256_prefix: bool    # written behind the firmware boot header
    order: int = 0         # position on the command line: of two files at one address, the later one moves
    note: str = ""

    @property
    def size(self):
        """Bytes it occupies in flash."""
        return len(self.data) + (SHA256_PREFIX_OVERHEAD if self.sha256_prefix else 0)

    @property
    def end(self):
        return self.address + self.size

    def span(self):
        return "0x%06x..0x%06x" % (self.address, self.end)

    def flashed(self, flag=KFLASH_DIO_FLAG):
        """The bytes kflash puts in flash for it."""
        return flashed_bytes(self.data, self.sha256_prefix, flag)


@dataclass
class Plan:
    segments: List[Segment]
    flash_size: int = DEFAULT_FLASH_SIZE
    warnings: List[str] = field(default_factory=list)


# ---- numbers --------------------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"\s*(0x[0-9a-f]+|[0-9]+)\s*(k|kib|m|mib)?\s*", re.IGNORECASE)
_UNITS = {None: 1, "k": KIB, "kib": KIB, "m": MIB, "mib": MIB}


def parse_size(text):
    """'0x300000', '3145728', '3M', '3MiB', '64K' -> int; ValueError otherwise."""
    m = _NUMBER.fullmatch(text)
    if not m:
        raise ValueError("%r is not an address or size (use decimal, 0x hex, or a K/M suffix)" % text)
    digits, unit = m.group(1), m.group(2)
    value = int(digits, 16) if digits.lower().startswith("0x") else int(digits, 10)
    return value * _UNITS[unit.lower() if unit else None]


def _flash_size_arg(text):
    try:
        size = parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    if size <= 0 or size % SECTOR_SIZE:
        raise argparse.ArgumentTypeError("flash size must be a positive multiple of 4 KiB, not %s" % text)
    return size


def align_up(value, align):
    return -(-value // align) * align


def align_down(value, align):
    return value // align * align


def human_size(size):
    if size % MIB == 0:
        return "%d MiB" % (size // MIB)
    if size % KIB == 0:
        return "%d KiB" % (size // KIB)
    return "%d bytes" % size


# ---- items -> segments ----------------------------------------------------------------------------------------------

def split_item(text):
    """'model.kmodel@0x300000' -> ('model.kmodel', 0x300000); 'fw.bin' -> ('fw.bin', None)."""
    path, sep, address = text.rpartition("@")
    if not sep or (os.path.exists(text) and not os.path.exists(path)):  # an '@' inside a file name
        return text, None
    try:
        return path, parse_size(address)
    except ValueError as e:
        raise PlanError(["%s: bad address after '@': %s" % (text, e)])


def is_kfpkg(path):
    return path.lower().endswith(".kfpkg") or zipfile.is_zipfile(path)


def is_kmodel(name):
    return name.lower().endswith(".kmodel")


def segments_from_item(text, order):
    """The segments one command-line item stands for (several for a .kfpkg)."""
    path, address = split_item(text)
    if os.path.isdir(path):
        return [_filesystem_segment(path, address, order)]
    if not os.path.isfile(path):
        raise PlanError(["%s: no such file" % path])
    if is_kfpkg(path):
        return _segments_from_kfpkg(path, address, order)
    data = _read(path)
    if address is None:
        if not path.lower().endswith(".bin"):
            raise PlanError(["%s: give its flash address, e.g. %s@0x300000 (only a firmware .bin defaults to 0)"
                             % (path, path)])
        address = 0
    firmware = address == 0 and not is_kmodel(path)  # the boot ROM reads firmware at 0 behind its header
    return [Segment(path, os.path.basename(path), address, data, firmware, order)]


def _filesystem_segment(folder, address, order):
    """A folder becomes the board's filesystem: a littlefs image of its files, at the firmware's /flash address."""
    from openkpu import fsimage
    if address is None:
        address = fsimage.FS_ADDRESS
    try:
        files = fsimage.files_of_folder(folder)
        image = fsimage.make_image(files, trim=True)
    except OSError as e:
        raise PlanError(["%s: cannot read the folder: %s" % (folder, e.strerror or e)])
    except fsimage.FsImageError as e:
        raise PlanError(["%s: %s" % (folder, e)])
    seg = Segment(folder, "fs_%s.img" % (os.path.basename(os.path.normpath(folder)) or "root"), address, image,
                  False, order)
    seg.note = "littlefs for %s: %d file%s, %d bytes" % (fsimage.MOUNT_POINT, len(files), "" if len(files) == 1
                                                           else "s", sum(map(len, files.values())))
    return seg


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:  # e.g. no permission: reported with the other problems
        raise PlanError(["%s: cannot read it: %s" % (path, e.strerror or e)])


def _segments_from_kfpkg(path, address, order):
    if address is not None:
        raise PlanError(["%s: a .kfpkg carries its own addresses (flash-list.json); give it without @ADDRESS" % path])
    try:
        entries = read_kfpkg(path)
    except (ValueError, zipfile.BadZipFile, OSError) as e:
        raise PlanError(["%s: cannot read the package: %s" % (path, e)])
    base = os.path.basename(path)
    return [Segment("%s:%s" % (base, e.name), e.name, e.address, e.data, e.sha256_prefix, order) for e in entries]


# ---- checks ---------------------------------------------------------------------------------------------------------

def check_not_empty(segments):
    return ["%s is empty (0 bytes): nothing to flash" % s.source for s in segments if not s.data]


def check_range(segments, flash_size):
    problems = []
    for seg in segments:
        if seg.end <= flash_size:
            continue
        msg = "%s at %s (%d bytes) ends past the end of the %s flash (0x%x)" % (
            seg.source, seg.span(), seg.size, human_size(flash_size), flash_size)
        highest = align_down(flash_size - seg.size, SECTOR_SIZE)
        msg += ("; the highest 4 KiB-aligned address it fits at is 0x%x" % highest if highest >= 0
                else "; it is larger than the whole flash")
        problems.append(msg)
    return problems


def check_alignment(segments, flash_size=DEFAULT_FLASH_SIZE):
    problems = []
    for seg in segments:
        if seg.address % SECTOR_SIZE:
            # only addresses where the file still fits the flash are suggested
            choices = [a for a in (align_down(seg.address, SECTOR_SIZE), align_up(seg.address, SECTOR_SIZE))
                       if a + seg.size <= flash_size]
            advice = ("use %s" % " or ".join("0x%x" % a for a in choices)) if choices else \
                "no 4 KiB boundary near it leaves room for its %d bytes before the end of the flash" % seg.size
            problems.append(
                "%s at 0x%x is not on a 4 KiB sector boundary: the flash erases whole 4 KiB sectors, so it would share "
                "a sector with its neighbour and rewriting either one erases the other's bytes there; %s"
                % (seg.source, seg.address, advice))
    return problems


def next_free_address(size, occupied, start, flash_size, align=SUGGEST_ALIGN):
    """The lowest `align`-aligned address >= start where `size` bytes overlap none of `occupied`; None if none."""
    candidate = align_up(start, align)
    for seg in sorted(occupied, key=lambda s: s.address):
        if seg.end <= candidate:
            continue
        if seg.address >= candidate + size:
            break
        candidate = align_up(seg.end, align)
    return candidate if candidate + size <= flash_size else None


def check_overlaps(segments, flash_size):
    """One message per overlapping pair; the higher file of each pair is the one to move. Of two files at one
    address the firmware stays (the boot ROM reads it at 0 only), then the one named first."""
    ordered = sorted(segments, key=lambda s: (s.address, not s.sha256_prefix, s.order))
    pairs = []
    for i, low in enumerate(ordered):
        for high in ordered[i + 1:]:
            if high.address >= low.end:
                break  # sorted by address: every later one starts higher still
            if high.size:
                pairs.append((low, high))
    movers = {id(high) for _low, high in pairs}
    suggested = {}  # id(mover) -> address suggested for it; later suggestions keep clear of it
    return [_overlap_message(low, high, segments, flash_size, movers, suggested) for low, high in pairs]


def _overlap_message(low, high, segments, flash_size, movers, suggested):
    shared = "0x%06x..0x%06x" % (high.address, min(low.end, high.end))
    msg = "%s at %s overlaps %s at %s: both claim %s" % (high.source, high.span(), low.source, low.span(), shared)
    if id(high) not in suggested:
        # what stays put, and the files already given a new place; not the other files still to be moved
        others = [_placed(s, suggested) for s in segments
                  if s is not high and (id(s) not in movers or id(s) in suggested)]
        suggested[id(high)] = next_free_address(high.size, [s for s in others if s is not None], low.end, flash_size)
    free = suggested[id(high)]
    if free is None:
        msg += "; no free 64 KiB-aligned room for %s (%d bytes) above it in the %s flash" % (
            high.source, high.size, human_size(flash_size))
    else:
        msg += "; the next free 64 KiB-aligned address for %s is 0x%x" % (high.source, free)
    if low.sha256_prefix:
        msg += " (leave the firmware room to grow: a model where it grows is silently corrupted)"
    return msg


def _placed(seg, suggested):
    """`seg` where it is, or where an earlier message suggested moving it (None: no room was found for it)."""
    if id(seg) not in suggested:
        return seg
    address = suggested[id(seg)]
    return None if address is None else Segment(seg.source, seg.name, address, seg.data, seg.sha256_prefix, seg.order)


# ---- models ---------------------------------------------------------------------------------------------------------

def model_version_or_error(data):
    """(kmodel version, None) if the loader accepts `data`, else (None, the loader's message)."""
    from openkpu.model_tools import try_load  # imports _kpu: only when there is a model to check
    model, error = try_load(data)
    if model is None:
        return None, error
    version = model.version()
    model.free()
    return version, None


def swapped(data):
    """`data` with the bytes of every 32-bit word reversed, as MaixPy's model_le2be.py prepares load_flash models."""
    from openkpu.model_tools import swap_words
    return swap_words(data)


def check_model(seg):
    """(problem, warning) for one .kmodel segment, each None or a message; sets seg.note."""
    version, error = model_version_or_error(seg.data)
    if error is None:
        seg.note = "kmodel v%d, for kpu.load(0x%x)" % (version, seg.address)
        return None, None
    swapped_version, _ = model_version_or_error(swapped(seg.data))
    if swapped_version is not None:
        seg.note = "kmodel v%d word-swapped, for kpu.load_flash(0x%x, ...)" % (swapped_version, seg.address)
        return None, ("%s is word-swapped for kpu.load_flash (its 32-bit-word byte swap is a valid kmodel): "
                      "kpu.load(0x%x) cannot read it; use kpu.load_flash(0x%x, is_dual_buf, batch_size, spi_speed), "
                      "or flash the plain model for kpu.load" % (seg.source, seg.address, seg.address))
    return "%s is not a valid kmodel: %s" % (seg.source, error), None


def check_models(segments):
    problems, warnings = [], []
    for seg in segments:
        if not is_kmodel(seg.name) or not seg.data:
            continue
        if seg.address == 0:
            warnings.append("%s is at address 0, where the boot ROM looks for firmware: the board will not boot"
                            % seg.source)
        try:
            problem, warning = check_model(seg)
        except ImportError as e:
            problems.append("%s: cannot check the model, the _kpu extension is missing (%s): pip install ."
                            % (seg.source, e))
            continue
        problems += [problem] if problem else []
        warnings += [warning] if warning else []
        if seg.sha256_prefix:  # kflash writes flag byte + u32 length before the data
            warnings.append("%s is written behind kflash's boot header (sha256Prefix true): the model starts at 0x%x, "
                            "so kpu.load(0x%x) reads the header, not the model; set \"sha256Prefix\": false for "
                            "models" % (seg.source, seg.address + 5, seg.address))
    return problems, warnings


def describe_other(seg):
    if seg.sha256_prefix:
        return "firmware (boot header: +%d bytes)" % SHA256_PREFIX_OVERHEAD
    return "raw data"


# ---- the plan -------------------------------------------------------------------------------------------------------

def make_plan(items, flash_size=DEFAULT_FLASH_SIZE):
    """Plan from command-line items; PlanError listing every problem found."""
    problems, segments = [], []
    for order, item in enumerate(items):
        try:
            segments.extend(segments_from_item(item, order))
        except PlanError as e:
            problems.extend(e.problems)
    problems += check_not_empty(segments)
    problems += check_range(segments, flash_size)
    problems += check_alignment(segments, flash_size)
    problems += check_overlaps(segments, flash_size)
    model_problems, warnings = check_models(segments)
    problems += model_problems
    if problems:
        raise PlanError(problems)
    segments.sort(key=lambda s: (s.address, s.order))
    give_unique_names(segments)
    for seg in segments:
        seg.note = seg.note or describe_other(seg)
    return Plan(segments, flash_size, warnings)


def give_unique_names(segments):
    """kflash extracts the package into one folder: two files called model.kmodel would clash."""
    used = {"flash-list.json"}
    for seg in segments:
        if seg.name in used:
            stem, ext = os.path.splitext(seg.name)
            seg.name = "%s_0x%x%s" % (stem, seg.address, ext)
        used.add(seg.name)


def format_plan(plan):
    rows = ["flash plan: %d file%s on a %s flash" % (len(plan.segments), "" if len(plan.segments) == 1 else "s",
                                                     human_size(plan.flash_size))]
    width = max([len(s.source) for s in plan.segments] + [4])
    for seg in plan.segments:
        rows.append("  %s  %-*s %10s B  %s" % (seg.span(), width, seg.source, "{:,}".format(seg.size), seg.note))
    used = sum(s.size for s in plan.segments)
    rows.append("  %s of %s used" % ("{:,}".format(used), human_size(plan.flash_size)))
    return "\n".join(rows)


# ---- kfpkg ----------------------------------------------------------------------------------------------------------

def flash_list_json(segments):
    """flash-list.json in the one layout kflash 1.1.6 parses.

    kflash rewrites the text with re.sub(r'"address": (.*),', r'"address": "\\1",', ...) before json.loads, then
    reads int(address, 0). So each key goes on its own line, "address" is first (never last: it needs the comma),
    with one space after the colon, and the number is decimal (0x hex would not be JSON for other readers)."""
    files = []
    for seg in segments:
        files.append('        {\n'
                     '            "address": %d,\n'
                     '            "bin": %s,\n'
                     '            "sha256Prefix": %s\n'
                     '        }' % (seg.address, json.dumps(seg.name), "true" if seg.sha256_prefix else "false"))
    return '{\n    "version": "%s",\n    "files": [\n%s\n    ]\n}\n' % (KFPKG_VERSION, ",\n".join(files))


def write_kfpkg(plan, path):
    """Write the plan as a .kfpkg (the files in address order, then flash-list.json); replaces `path` whole."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for seg in plan.segments:
                z.writestr(seg.name, seg.data)
            z.writestr("flash-list.json", flash_list_json(plan.segments))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# ---- kflash ---------------------------------------------------------------------------------------------------------
#
# Why kflash's module API rather than its command line: `KFlash().process(terminal=False, ...)` is the entry point
# kflash_gui drives, so it is kflash's stable interface. In process, errors arrive as exceptions carrying kflash's
# message (the CLI prints it and exits 1), progress arrives per file through its callback (no parsing of redrawn
# ANSI progress bars), and the same code runs against the tests' fake board on a pseudo-terminal, where the DTR/RTS
# ioctls must be patched out in this process. Both routes flash the same .kfpkg; --dry-run prints the CLI equivalent.

class KflashOutput(object):
    """Forwards kflash's log lines; prints per-file progress lines where its redrawn bar would clutter a log."""

    def __init__(self, out):
        self.out = out
        self.bar = hasattr(out, "isatty") and out.isatty()
        self.reported = {}
        self.line_open = False  # something printed without its newline yet (kflash's greeting dots)

    def log(self, *args, **kwargs):
        end = kwargs.get("end", "\n")
        if not self.bar and (end == "\r" or (not args and not self.line_open)):
            return  # kflash's progress bar redrawn in place, and the bare newline ending it: only on a terminal
        text = kwargs.get("sep", " ").join(str(a) for a in args) + end
        self.out.write(text)
        self.out.flush()
        self.line_open = not text.endswith("\n")

    def progress(self, what, done, total, _speed=""):
        if self.bar or not total:
            return
        quarter = done * 4 // total
        if quarter > self.reported.get(what, 0):  # a line at 25, 50, 75 and 100 %
            self.reported[what] = quarter
            print("[flash] %s: %s of %s bytes (%d%%)" % (what, "{:,}".format(done), "{:,}".format(total),
                                                          done * 100 // total), file=self.out, flush=True)


def import_kflash():
    try:
        import kflash
    except ImportError:
        raise FlashFailed("kflash is not installed: pip install %s" % KFLASH_REQUIREMENT)
    return kflash


def flash_with_kflash(plan, port=None, baudrate=115200, board=None, slow=False, out=None):
    """Pack the plan and flash it in one kflash session; FlashFailed with kflash's message on failure."""
    out = out or sys.stdout
    kflash = import_kflash()
    output = KflashOutput(out)
    with tempfile.TemporaryDirectory(prefix="openkpu-flash-") as tmp:
        package = os.path.join(tmp, "openkpu_flash.kfpkg")
        write_kfpkg(plan, package)
        # KFlash.log reads the class attribute (the constructor's print_callback is never used): set it, then restore.
        saved = kflash.KFlash.print_callback
        kflash.KFlash.print_callback = output.log
        try:
            kflash.KFlash().process(terminal=False, dev=port or "DEFAULT", baudrate=baudrate, board=board,
                                    file=package, callback=output.progress, noansi=True, slow_mode=slow)
        except Exception as e:  # kflash raises bare Exception with its message; pyserial its SerialException
            raise FlashFailed(str(e).strip() or type(e).__name__)
        finally:
            kflash.KFlash.print_callback = saved


def kflash_command(args):
    words = ["kflash", "-p", args.port or "PORT", "-b", str(args.baudrate)]
    words += ["-B", args.board] if args.board else []
    words += ["-S"] if args.slow else []
    return " ".join(words + ["-n", "PLAN.kfpkg"])


# ---- command line ---------------------------------------------------------------------------------------------------

def build_parser(prog=None):
    parser = argparse.ArgumentParser(prog=prog, description="Check a K210 flash layout, pack it as a .kfpkg, or "
                                     "flash it to a board with kflash.")
    sub = parser.add_subparsers(dest="command", metavar="{write,pack}")
    sub.required = True
    items = argparse.ArgumentParser(add_help=False)
    items.add_argument("items", nargs="+", metavar="ITEM",
                       help="FILE@ADDRESS (e.g. digits.kmodel@0x300000), a .kfpkg to merge, a firmware .bin (at 0), or a "
                            "FOLDER for the firmware's /flash filesystem (littlefs at 0xD00000)")
    items.add_argument("--flash-size", type=_flash_size_arg, default=DEFAULT_FLASH_SIZE, metavar="SIZE",
                       help="the board's SPI flash size (default 16M)")
    pack = sub.add_parser("pack", parents=[items], help="write the checked plan as a .kfpkg")
    pack.add_argument("-o", "--output", required=True, help="the .kfpkg to write")
    write = sub.add_parser("write", parents=[items], help="flash the checked plan to a board with kflash")
    write.add_argument("-p", "--port", help="serial port (default: kflash's auto-detection by USB id)")
    write.add_argument("-b", "--baudrate", type=int, default=115200,
                       help="UART baud rate once the ISP stub runs (default 115200; 1500000 is usual on Maix boards)")
    write.add_argument("-B", "--board", choices=KFLASH_BOARDS, help="board, for kflash's reset sequence "
                       "(default: kflash tries them in turn)")
    write.add_argument("-S", "--slow", action="store_true", help="kflash's slow mode (no early baud-rate change)")
    write.add_argument("--dry-run", action="store_true", help="print the plan and the kflash command; write nothing")
    return parser


def report_problems(problems, err):
    for problem in problems:
        print("error: %s" % problem, file=err)
    print("nothing was written (%d problem%s)" % (len(problems), "" if len(problems) == 1 else "s"), file=err)


def main(argv=None, prog=None):
    """Command line entry point; returns the exit status."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits on --help (0) and on bad arguments (2)
        return e.code if isinstance(e.code, int) else EXIT_BAD_PLAN
    out, err = sys.stdout, sys.stderr
    try:
        plan = make_plan(args.items, args.flash_size)
    except PlanError as e:
        report_problems(e.problems, err)
        return EXIT_BAD_PLAN
    print(format_plan(plan), file=out)
    for warning in plan.warnings:
        print("warning: %s" % warning, file=err)
    if args.command == "pack":
        try:
            write_kfpkg(plan, args.output)
        except OSError as e:  # a missing folder, a directory, no permission: a bad -o, not a crash
            print("error: cannot write %s: %s" % (args.output, e.strerror or e), file=err)
            return EXIT_BAD_PLAN
        print("wrote %s" % args.output, file=out)
        return EXIT_OK
    if args.dry_run:
        print("dry run: nothing written. The same with kflash's command line, after `pack -o PLAN.kfpkg`:\n  %s"
              % kflash_command(args), file=out)
        return EXIT_OK
    try:
        flash_with_kflash(plan, args.port, args.baudrate, args.board, args.slow, out)
    except FlashFailed as e:
        print("error: flashing failed: %s" % e, file=err)
        return EXIT_FLASH_FAILED
    print("flashed %d file%s; the board is rebooting" % (
        len(plan.segments), "" if len(plan.segments) == 1 else "s"), file=out)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

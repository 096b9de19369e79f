# SPDX-License-Identifier: Apache-2.0
"""The boot ROM model and the flash image it boots from (k210-board.md section 2).

The board's flash is a 16 MiB bytearray, erased (0xFF) where nothing was written. It is built from:
- a .kfpkg (each listed file at its address, firmware behind kflash's header: `openkpu.flash`),
- a raw flash dump from address 0 (a .bin whose first bytes are a valid boot header),
- a bare firmware.bin (objcopy output, linked at 0x80000000): placed at 0 behind the header kflash writes,
plus `--flash FILE@ADDR` items (raw bytes at ADDR, or a .kfpkg's own files).

Booting reads the header at flash 0: flag byte (bit 0 = AES-encrypted with the OTP key: refused, the key is not
known), u32 LE length N, N image bytes, SHA-256 over flag + length + image. A bad hash is refused like the ROM
would (it would not start the image). The image is copied to 0x80000000.
"""
import hashlib
import os
import struct
import zipfile

from .errors import BootError

FLASH_SIZE = 16 << 20
MAX_IMAGE = 6 << 20  # what fits in SRAM0+SRAM1 (the ROM's own limit is not known)


def _is_kfpkg(data_or_path):
    if isinstance(data_or_path, (bytes, bytearray, memoryview)):
        return bytes(data_or_path[:4]) == b"PK\x03\x04"
    return zipfile.is_zipfile(data_or_path)


def _place(flash, address, data, what):
    if address < 0 or address + len(data) > FLASH_SIZE:
        raise BootError("%s at 0x%x (%d bytes) does not fit in the 16 MiB flash" % (what, address, len(data)))
    flash[address:address + len(data)] = data


def _place_kfpkg(flash, path):
    from openkpu.flash import flashed_bytes, read_kfpkg
    try:
        entries = read_kfpkg(path)
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise BootError(str(e))
    for e in entries:
        _place(flash, e.address, flashed_bytes(e.data, e.sha256_prefix), "%s from %s" % (e.name, path))


def header_of(data):
    """(flag, length) when `data` starts with a plausible boot header whose SHA-256 region fits, else None."""
    if len(data) < 5 + 32:
        return None
    flag, length = struct.unpack_from("<BI", data, 0)
    if flag > 3 or not 0 < length <= MAX_IMAGE or 5 + length + 32 > len(data):
        return None
    return flag, length


def kflash_header(image, flag=0):
    """What kflash writes at flash 0 for a firmware: flag, u32 length, image, SHA-256 of the three."""
    head = struct.pack("<BI", flag, len(image)) + bytes(image)
    return head + hashlib.sha256(head).digest()


def classify(data):
    """'flash' for a raw dump starting with a plausible boot header (its hash checked at boot), else 'firmware'."""
    return "flash" if header_of(data) is not None else "firmware"


def build_flash(image, items=(), kind=None):
    """The board's flash bytes. `image`: bytes or a path (.kfpkg, raw dump, bare firmware); `kind`: None to guess,
    or 'kfpkg' / 'flash' / 'firmware'. `items`: [(path or bytes, address or None)] written over it in order."""
    flash = bytearray(b"\xff") * FLASH_SIZE
    if isinstance(image, (str, os.PathLike)):
        path = os.fspath(image)
        if not os.path.isfile(path):
            raise BootError("image not found: %s" % path)
        if kind is None and _is_kfpkg(path):
            kind = "kfpkg"
        if kind == "kfpkg":
            _place_kfpkg(flash, path)
            data = None
        else:
            with open(path, "rb") as f:
                data = f.read()
    else:
        data = bytes(image)
        if kind is None and _is_kfpkg(data):
            raise BootError("pass a .kfpkg by path, not as bytes")
    if data is not None:
        kind = kind or classify(data)
        if kind == "flash":
            if len(data) > FLASH_SIZE:
                raise BootError("flash dump is %d bytes, more than the 16 MiB flash" % len(data))
            flash[:len(data)] = data
        elif kind == "firmware":
            if not data:
                raise BootError("firmware image is empty")
            if len(data) > MAX_IMAGE:
                raise BootError("firmware is %d bytes: more than the 6 MiB SRAM it is copied to" % len(data))
            _place(flash, 0, kflash_header(data), "firmware")
        else:
            raise BootError("unknown image kind %r" % kind)
    for item, address in items:
        what = item if isinstance(item, str) else "flash item"
        if isinstance(item, (str, os.PathLike)) and _is_kfpkg(item):
            if address is not None:
                raise BootError("%s: a .kfpkg carries its own addresses; give it without @ADDR" % item)
            _place_kfpkg(flash, item)
            continue
        if address is None:
            raise BootError("%s: needs an address (FILE@ADDR)" % what)
        if isinstance(item, (str, os.PathLike)):
            if not os.path.isfile(item):
                raise BootError("flash item not found: %s" % item)
            with open(item, "rb") as f:
                item = f.read()
        _place(flash, address, bytes(item), what)
    return flash


def parse_flash_item(text):
    """'FILE@ADDR' -> (FILE, ADDR); 'FILE' -> (FILE, None). ADDR accepts 0x... hex or decimal."""
    if "@" in text:
        path, _, addr = text.rpartition("@")
        try:
            return path, int(addr, 0)
        except ValueError:
            raise BootError("bad flash address in %r (use FILE@0x300000)" % text)
    return text, None


def boot_image(flash):
    """The firmware image the ROM copies to 0x80000000; BootError (saying why) when the ROM would not boot."""
    flag, length = struct.unpack_from("<BI", flash, 0)
    if flag == 0xFF and length == 0xFFFFFFFF:
        raise BootError("flash is erased at address 0: no firmware to boot")
    if flag & 1:
        raise BootError("boot header flag 0x%02x: the image is AES-encrypted with the chip's OTP key, which the "
                        "virtual board does not have" % flag)
    if flag & ~3:
        raise BootError("boot header flag 0x%02x has unknown bits set (expected 0..3)" % flag)
    if not 0 < length <= MAX_IMAGE:
        raise BootError("boot header length %d (0x%x) is not a firmware size (1 .. %d bytes)"
                        % (length, length, MAX_IMAGE))
    end = 5 + length
    want = hashlib.sha256(bytes(flash[:end])).digest()
    got = bytes(flash[end:end + 32])
    if want != got:
        raise BootError("boot header SHA-256 mismatch: flash 0x%x..0x%x holds %s, the flag + length + %d-byte image "
                        "hash to %s: the ROM would not boot this image" % (end, end + 32, got.hex(), length,
                                                                            want.hex()))
    return bytes(flash[5:end])

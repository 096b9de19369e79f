# SPDX-License-Identifier: Apache-2.0
"""SPI-flash images for `KPU.load(offset)` on a PC.

On a board, `kpu.load(0x300000)` reads the model that `kflash` wrote at that flash address. On a PC the flash is a
file, set with `KPU.set_flash_image(path)` or the environment variable `OPENKPU_FLASH_IMAGE`:

- a raw `.bin` dump of the flash from address 0 (what `kflash` reads back, or a file you assemble yourself);
- a `.kfpkg` package (a zip holding `flash-list.json` and the files it lists), as released with MaixPy models. The
  image is assembled from it sparsely: each listed file lands at its `address`; bytes nobody wrote read as 0xFF
  (erased flash). Files with `"sha256Prefix": true` are laid out as kflash writes them: flag byte 0, u32 LE length,
  the data, then the SHA-256 of those three.

    from openkpu.flash import FlashImage
    img = FlashImage("face_model_at_0x300000.kfpkg")
    head = img.read(0x300000, 28)

`FlashImage.read(address, size)` returns exactly `size` bytes (0xFF past the written areas); `size()` is one past
the last written byte. Overlapping entries in a kfpkg are refused (on a board the later one silently corrupts the
earlier one).

Shared with the flashing tool (`openkpu.flashing`): `read_kfpkg(path)` lists a package's files as
`KfpkgEntry(address, name, data, sha256_prefix)`, and `flashed_bytes(data, sha256_prefix)` is what lands in flash for
one of them.
"""
import collections
import hashlib
import json
import os
import struct
import zipfile
import zlib

ERASED = 0xFF

__all__ = ["FlashImage", "open_image", "read_kfpkg", "KfpkgEntry", "flashed_bytes", "sha256_prefixed",
           "SHA256_PREFIX_OVERHEAD"]


SHA256_PREFIX_OVERHEAD = 1 + 4 + 32  # flag byte, u32 length, SHA-256


class KfpkgEntry(collections.namedtuple("KfpkgEntry", "address name data sha256_prefix")):
    """One file of a .kfpkg: its flash address, member name, raw bytes, and whether kflash prefixes it."""


def sha256_prefixed(data, flag=0):
    """The bytes kflash writes for a `"sha256Prefix": true` file (firmware): flag byte, u32 LE length, the data,
    then the SHA-256 of those three. (kflash 1.1.6 sets flag bit 1, value 0x02, in its default DIO mode.)"""
    head = struct.pack("<BI", flag, len(data)) + bytes(data)
    return head + hashlib.sha256(head).digest()


def flashed_bytes(data, sha256_prefix, flag=0):
    """What lands in flash for a kfpkg file: the prefixed layout for firmware, the raw bytes otherwise."""
    return sha256_prefixed(data, flag) if sha256_prefix else bytes(data)


def _read_member(z, path, name):
    """A member's bytes; ValueError when its zip data is damaged (bad CRC, broken deflate stream, cut short)."""
    try:
        return z.read(name)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
        raise ValueError("%s: cannot extract %s: %s" % (path, name, e))


def _kflash_prefixes(entry):
    """Whether kflash writes this file behind the boot header. kflash tests `sha256Prefix == True`, so a quoted
    "false" (or "true") is written raw: read it the same way, or the image and a repacked kfpkg would differ."""
    return entry.get("sha256Prefix") == True  # noqa: E712 (kflash's own comparison)


def read_kfpkg(path):
    """[KfpkgEntry] of a .kfpkg in flash-list.json order; ValueError naming the problem for a malformed package."""
    path = os.fspath(path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        if "flash-list.json" not in names:
            raise ValueError("%s: not a kfpkg (no flash-list.json in the zip; members: %s)"
                             % (path, ", ".join(names[:8])))
        try:
            spec = json.loads(_read_member(z, path, "flash-list.json").decode("utf-8"))
        except ValueError as e:
            raise ValueError("%s: flash-list.json is not valid JSON: %s" % (path, e))
        files = spec.get("files") if isinstance(spec, dict) else None
        if not isinstance(files, list):
            raise ValueError("%s: flash-list.json has no \"files\" list" % path)
        entries = []
        for entry in files:
            try:
                addr = int(entry["address"])
                name = entry["bin"]
            except (KeyError, TypeError, ValueError):
                raise ValueError("%s: flash-list.json entry %r needs \"address\" (int) and \"bin\"" % (path, entry))
            if name not in names:
                raise ValueError("%s: flash-list.json names %r, which is not in the package" % (path, name))
            if addr < 0:
                raise ValueError("%s: negative flash address %d for %s" % (path, addr, name))
            entries.append(KfpkgEntry(addr, name, _read_member(z, path, name), _kflash_prefixes(entry)))
    return entries


class FlashImage(object):
    """A flash image: a raw .bin dump (from address 0) or a .kfpkg assembled sparsely."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise FileNotFoundError("flash image not found: %s" % self.path)
        self.kind = "kfpkg" if zipfile.is_zipfile(self.path) else "bin"
        if self.kind == "bin" and self.path.lower().endswith(".kfpkg"):
            with open(self.path, "rb") as f:
                head = f.read(4)
            # a zip that does not open (cut short in a download or copy): not a raw dump to read blindly
            raise ValueError("%s is a damaged kfpkg: %s; download or copy it again" % (
                self.path, "a truncated zip archive (its directory is missing)" if head == b"PK\x03\x04"
                else "not a zip archive at all"))
        self._segments = []  # sorted (address, bytes) for kfpkg
        self._size = 0
        if self.kind == "kfpkg":
            self._load_kfpkg()
        else:
            self._size = os.path.getsize(self.path)

    def _load_kfpkg(self):
        segs = [(e.address, flashed_bytes(e.data, e.sha256_prefix), e.name) for e in read_kfpkg(self.path)]
        segs.sort(key=lambda s: s[0])
        for (a0, d0, n0), (a1, _d1, n1) in zip(segs, segs[1:]):
            if a0 + len(d0) > a1:
                raise ValueError("%s: %s at 0x%x..0x%x overlaps %s at 0x%x" % (
                    self.path, n0, a0, a0 + len(d0), n1, a1))
        self._segments = [(a, d) for a, d, _n in segs]
        self._names = [(a, n) for a, _d, n in segs]
        self._size = max([a + len(d) for a, d in self._segments] or [0])

    def size(self):
        """One past the last written byte."""
        return self._size

    def entries(self):
        """[(address, file name)] of a kfpkg; [(0, path)] for a raw dump."""
        if self.kind == "kfpkg":
            return list(self._names)
        return [(0, self.path)]

    def read(self, address, size):
        """Exactly `size` bytes at `address`; 0xFF where nothing was written."""
        if address < 0 or size < 0:
            raise ValueError("flash read at %d of %d bytes" % (address, size))
        out = bytearray([ERASED]) * size
        if self.kind == "bin":
            if address < self._size:
                with open(self.path, "rb") as f:
                    f.seek(address)
                    chunk = f.read(size)
                out[:len(chunk)] = chunk
            return bytes(out)
        end = address + size
        for a, d in self._segments:
            lo = max(a, address)
            hi = min(a + len(d), end)
            if lo < hi:
                out[lo - address:hi - address] = d[lo - a:hi - a]
        return bytes(out)

    def __repr__(self):
        return "FlashImage(%r, kind=%s, size=0x%x)" % (self.path, self.kind, self._size)


def open_image(path):
    """FlashImage(path); a separate name so callers can swap in another reader."""
    return FlashImage(path)

# SPDX-License-Identifier: Apache-2.0
"""The board's filesystem as a flash image: littlefs, with the geometry the K210 firmware mounts.

The openkpu firmware mounts a littlefs filesystem at `/flash`, kept in the SPI NOR flash at FS_ADDRESS (FS_SIZE
bytes; the region MaixPy uses for its own filesystem). This module builds and reads such images on a PC with
littlefs-python (the same littlefs release, 2.11, whose C source the firmware is built from), so a folder can be
flashed with the firmware (`openkpu flash pack fw.bin models/@0xD00000`) and a board's flash dump can be read back.

    image = make_image({"main.py": b"print(1)", "models/digits.kmodel": data})
    files = read_image(image)                      # {"main.py": b"...", "models/digits.kmodel": b"..."}

The geometry below is the firmware's (firmware/k210/board/flash_fs.c): change both together.
"""
import os

KIB = 1024
FS_ADDRESS = 0xD00000       # where the firmware mounts it (MaixPy keeps its filesystem there too)
FS_SIZE = 3 * 1024 * KIB    # up to the end of a 16 MiB flash
BLOCK_SIZE = 4 * KIB        # the flash's erase sector
READ_SIZE = 1
PROG_SIZE = 256             # the flash's page
CACHE_SIZE = 256
LOOKAHEAD_SIZE = 32
MOUNT_POINT = "/flash"

__all__ = ["FS_ADDRESS", "FS_SIZE", "BLOCK_SIZE", "MOUNT_POINT", "make_image", "read_image", "files_of_folder",
           "FsImageError"]


class FsImageError(Exception):
    """The files do not fit, or the bytes are not a filesystem of this geometry."""


def _littlefs():
    try:
        import littlefs
    except ImportError:
        raise FsImageError("building or reading the board's filesystem needs littlefs-python: "
                           "pip install 'openkpu[flash]' (or pip install littlefs-python)")
    return littlefs


def _new_fs(littlefs, size, mount):
    if size % BLOCK_SIZE:
        raise FsImageError("a filesystem size must be a whole number of %d-byte sectors, not %d" % (BLOCK_SIZE, size))
    return littlefs.LittleFS(block_size=BLOCK_SIZE, block_count=size // BLOCK_SIZE, read_size=READ_SIZE,
                             prog_size=PROG_SIZE, cache_size=CACHE_SIZE, lookahead_size=LOOKAHEAD_SIZE, mount=mount)


def files_of_folder(folder):
    """{relative/path: bytes} of every file under `folder` (sorted, '/' separators)."""
    out = {}
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            with open(path, "rb") as f:
                out[rel] = f.read()
    return out


def make_image(files, size=FS_SIZE, trim=False):
    """A littlefs image of `size` bytes holding `files` ({path: bytes}, folders made as needed). trim: drop the
    trailing sectors nothing was written to (littlefs erases a sector before it writes one, so what the flash holds
    beyond the image does not matter: flashing only the used part is faster)."""
    littlefs = _littlefs()
    fs = _new_fs(littlefs, size, mount=False)
    fs.format()
    fs.mount()
    total = 0
    try:
        for path in sorted(files):
            parts = [p for p in path.split("/") if p]
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                try:
                    fs.mkdir(d)
                except FileExistsError:
                    pass
            with fs.open("/".join(parts), "wb") as f:
                f.write(files[path])
            total += len(files[path])
    except littlefs.errors.LittleFSError as e:
        raise FsImageError("%d bytes of files do not fit a %d KiB filesystem (%s): use fewer files or put large "
                           "models at flash offsets for kpu.load(address)" % (sum(map(len, files.values())),
                                                                               size // KIB, e))
    fs.unmount()
    image = bytes(fs.context.buffer)
    if trim:
        end = len(image)
        blank = b"\xff" * BLOCK_SIZE
        while end > BLOCK_SIZE and image[end - BLOCK_SIZE:end] == blank:
            end -= BLOCK_SIZE
        image = image[:end]
    return image


def read_image(image, size=FS_SIZE):
    """{path: bytes} of every file in a filesystem image of `size` bytes, or its first sectors as make_image(trim=True)
    gives them (FsImageError if it is not one)."""
    littlefs = _littlefs()
    if len(image) % BLOCK_SIZE or not image or len(image) > size:
        raise FsImageError("a %d-byte region is not a whole number of %d-byte sectors up to %d bytes"
                           % (len(image), BLOCK_SIZE, size))
    fs = _new_fs(littlefs, size, mount=False)
    fs.context.buffer[:len(image)] = image
    try:
        fs.mount()
    except littlefs.errors.LittleFSError as e:
        raise FsImageError("no littlefs filesystem there (%s)" % e)
    out = {}
    for root, _dirs, names in fs.walk("/"):
        for name in names:
            path = (root.rstrip("/") + "/" + name).lstrip("/")
            with fs.open(path, "rb") as f:
                out[path] = f.read()
    fs.unmount()
    return out

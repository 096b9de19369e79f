# SPDX-License-Identifier: Apache-2.0
"""The 16 MiB SPI NOR flash chip behind SPI3 CS0 (W25Q128 class, k210-board.md section 7), backed by the board's
flash image (a bytearray). The SSI feeds it one byte per clocked byte while CS is low: `select()`, `xfer(mosi) ->
miso`, `deselect()`. Program/erase complete at once (status never busy) and need write-enable, as on the chip:
program ANDs bytes into the 256-byte page (the address wraps inside the page), erase sets 0xFF.
"""
from .mmio import Unmodelled

SIZE = 16 << 20
JEDEC_ID = (0xEF, 0x40, 0x18)  # Winbond, SPI NOR, 2^24 bytes
DEVICE_ID = 0x17               # 0x90 / 0xAB device id of the 128 Mbit part
UNIQUE_ID = bytes(b"openkpu!")

# command -> (address bytes, dummy bytes)
READS = {0x03: (3, 0), 0x0B: (3, 1)}
ERASES = {0x20: 4 << 10, 0x52: 32 << 10, 0xD8: 64 << 10}


class NorFlash(object):
    def __init__(self, image):
        self.image = image  # bytearray of SIZE bytes
        self.wel = False
        self.programmed = 0  # bytes programmed, sectors erased: for tests and the report
        self.erased = 0
        self.deselect()

    def deselect(self):
        if getattr(self, "cmd", None) is not None:
            self._finish()
        self.cmd = None
        self.args = bytearray()
        self.pos = 0

    def select(self):
        self.deselect()

    def _need(self):
        """Argument bytes command `cmd` takes before its data phase."""
        cmd = self.cmd
        if cmd in READS:
            a, d = READS[cmd]
            return a + d
        if cmd in (0x02,) or cmd in ERASES:
            return 3
        if cmd == 0x90:
            return 3
        if cmd == 0x4B:
            return 4
        if cmd == 0xAB:
            return 3
        return 0

    def xfer(self, mosi):
        if self.cmd is None:
            self.cmd = mosi
            if mosi not in KNOWN:
                raise Unmodelled("SPI flash command 0x%02x is not modelled" % mosi)
            if mosi == 0x06:
                self.wel = True
            elif mosi == 0x04:
                self.wel = False
            return 0xFF
        if len(self.args) < self._need():
            self.args.append(mosi)
            return 0xFF
        # data phase
        cmd = self.cmd
        i = self.pos
        self.pos += 1
        if cmd in READS:
            addr = self._addr()
            return self.image[(addr + i) % SIZE]
        if cmd == 0x9F:
            return JEDEC_ID[i] if i < 3 else 0xFF
        if cmd == 0x90:
            return (JEDEC_ID[0], DEVICE_ID)[(i + (self.args[2] & 1)) % 2]
        if cmd == 0xAB:
            return DEVICE_ID
        if cmd == 0x4B:
            return UNIQUE_ID[i % len(UNIQUE_ID)]
        if cmd == 0x05:
            return 0x02 if self.wel else 0x00
        if cmd in (0x35, 0x15):
            return 0x00
        if cmd == 0x02:
            if self.wel:
                addr = self._addr()
                page = addr & ~0xFF
                at = page | ((addr + i) & 0xFF)
                self.image[at] &= mosi
                self.programmed += 1
            return 0xFF
        return 0xFF

    def read_bulk(self, n):
        """`n` data bytes of a read command already past its address/dummy bytes (what n xfer(0) calls would
        return), or None when the chip is not in a read's data phase. The SSI uses it to fill its RX FIFO fast."""
        if self.cmd not in READS or len(self.args) < self._need():
            return None
        start = (self._addr() + self.pos) % SIZE
        self.pos += n
        data = self.image[start:start + n]
        if len(data) < n:  # wrapped past the end of the chip
            data += self.image[:n - len(data)]
        return data

    def _addr(self):
        a = self.args
        return (a[0] << 16) | (a[1] << 8) | a[2]

    def _finish(self):
        cmd = self.cmd
        if cmd in ERASES and len(self.args) >= 3:
            if self.wel:
                size = ERASES[cmd]
                start = self._addr() & ~(size - 1)
                self.image[start:start + size] = b"\xff" * size
                self.erased += size
            self.wel = False
        elif cmd in (0xC7, 0x60):
            if self.wel:
                self.image[:] = b"\xff" * SIZE
                self.erased += SIZE
            self.wel = False
        elif cmd == 0x02:
            self.wel = False


KNOWN = set(READS) | set(ERASES) | {0x02, 0x04, 0x05, 0x06, 0x35, 0x15, 0x9F, 0x90, 0xAB, 0x4B, 0xC7, 0x60,
                                    0x66, 0x99, 0xB9}

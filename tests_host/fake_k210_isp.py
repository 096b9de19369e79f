# SPDX-License-Identifier: Apache-2.0
"""A fake K210 on the far side of a pseudo-terminal that answers kflash's UART ISP protocol, for tests without a board.

    with FakeK210() as board:               # board.port: the pty path to hand to kflash
        ...run kflash on board.port...
    board.flash                             # 16 MiB bytearray, 0xFF where nothing was written
    board.flash_writes, board.errors        # [(address, length)], protocol errors seen (must stay empty)

The protocol, as kflash 1.1.6 speaks it (its MAIXLoader class):
- every message is SLIP-framed: 0xC0 ends a frame, 0xDB 0xDC stands for 0xC0 and 0xDB 0xDD for 0xDB;
- a request is u16 op, u16 zero, u32 CRC-32 of everything after it, u32 address, u32 length, data[length]; the
  greetings are shorter (op and zeros, no checksum);
- a reply is two bytes, op and status: 0xE0 ok, 0xE1 bad length, 0xE2 bad checksum, 0xE6 bad flash write.
Stage 1 is the boot ROM (0xC_ ops): 0xC2 greeting, 0xC3 write a chunk of the flash bootloader into SRAM (1 KiB at a
time from 0x80000000), 0xC6 change baud rate (goE / trainer boards, no reply), 0xC5 boot at an address (no reply).
Stage 2 is kflash's flash bootloader running from SRAM (0xD_ ops): 0xD2 greeting, 0xD6 change baud rate (no reply),
0xD7 flash init, 0xD4 write to flash (64 KiB frames), 0xD8 erase, 0xD9 erase status, 0xD5 reboot.

On a pty the DTR/RTS ioctls kflash resets the board with fail (ENOTTY): the test makes pyserial's
`_update_dtr_state` / `_update_rts_state` no-ops.
"""
import os
import select
import struct
import threading
import tty
import zlib

SRAM_BASE = 0x80000000
OK, BAD_LEN, BAD_CHECKSUM, BAD_WRITE = 0xE0, 0xE1, 0xE2, 0xE6
HEADER = struct.Struct("<HHIII")  # op, zero, crc32, address, length


def slip_frames(buffer):
    """Split complete SLIP frames off the front of `buffer` (a bytearray, consumed); yields unescaped payloads."""
    while True:
        end = buffer.find(b"\xc0")
        if end < 0:
            return
        frame = bytes(buffer[:end])
        del buffer[:end + 1]
        if frame:  # the opening 0xC0 of a frame ends an empty one
            yield frame.replace(b"\xdb\xdc", b"\xc0").replace(b"\xdb\xdd", b"\xdb")


def slip_encode(payload):
    return b"\xc0" + payload.replace(b"\xdb", b"\xdb\xdd").replace(b"\xc0", b"\xdb\xdc") + b"\xc0"


class FakeK210(object):
    """Boot ROM, then flash bootloader, serving the master side of a pty in a thread."""

    def __init__(self, flash_size=16 * 1024 * 1024):
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)  # no echo or line editing before pyserial configures the port
        self.port = os.ttyname(self.slave)
        self.flash = bytearray(b"\xff") * flash_size
        self.sram = {}            # address -> chunk written by 0xC3
        self.flash_writes = []    # (address, length) of each 0xD4
        self.baudrates = []       # ("rom" | "stub", baud) of each baud-rate change
        self.flash_chip = None    # the 0xD7 argument: 1 = on-board SPI flash
        self.booted_at = None
        self.rebooted = False
        self.errors = []
        self.stage = "rom"
        self._inbox = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-k210", daemon=True)
        self._handlers = {
            ("rom", 0xC2): self._greeting, ("rom", 0xC3): self._sram_write, ("rom", 0xC6): self._baudrate,
            ("rom", 0xC5): self._boot,
            ("stub", 0xD2): self._greeting, ("stub", 0xD6): self._baudrate, ("stub", 0xD7): self._flash_init,
            ("stub", 0xD4): self._flash_write, ("stub", 0xD8): self._flash_erase, ("stub", 0xD9): self._greeting,
            ("stub", 0xD5): self._reboot,
        }

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Stop serving and hang up: kflash's next read or write on the port fails."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(5)
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def sram_image(self):
        """The bytes written to SRAM from 0x80000000 on, if contiguous."""
        image, address = b"", SRAM_BASE
        while address in self.sram:
            chunk = self.sram[address]
            image += chunk
            address += len(chunk)
        return image

    # ---- transport ----

    def _serve(self):
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                continue
            try:
                self._inbox += os.read(self.master, 1 << 16)
            except OSError:
                return
            for frame in slip_frames(self._inbox):
                self._handle(frame)

    def _reply(self, op, status=OK):
        os.write(self.master, slip_encode(bytes([op, status])))

    def _handle(self, frame):
        handler = self._handlers.get((self.stage, frame[0]))
        if handler is None:
            self.errors.append("op 0x%02x unexpected in stage %s" % (frame[0], self.stage))
            return
        handler(frame)

    def _request(self, frame):
        """(address, data) of a checksummed request; None after replying with the error status."""
        op = frame[0]
        if len(frame) < HEADER.size:
            return self._refuse(op, BAD_LEN, "op 0x%02x: %d-byte request" % (op, len(frame)))
        _op, _zero, crc, address, length = HEADER.unpack_from(frame)
        data = frame[HEADER.size:]
        if len(data) != length:
            return self._refuse(op, BAD_LEN, "op 0x%02x: length field %d, %d data bytes" % (op, length, len(data)))
        if zlib.crc32(frame[8:]) & 0xFFFFFFFF != crc:
            return self._refuse(op, BAD_CHECKSUM, "op 0x%02x: bad CRC-32 at 0x%x" % (op, address))
        return address, data

    def _refuse(self, op, status, why):
        self.errors.append(why)
        self._reply(op, status)
        return None

    # ---- operations ----

    def _greeting(self, frame):
        self._reply(frame[0])

    def _sram_write(self, frame):
        request = self._request(frame)
        if request:
            address, data = request
            self.sram[address] = data
            self._reply(frame[0])

    def _baudrate(self, frame):
        request = self._request(frame)
        if request:
            self.baudrates.append((self.stage, struct.unpack("<I", request[1])[0]))

    def _boot(self, frame):
        request = self._request(frame)
        if request:
            self.booted_at = request[0]
            if request[0] == SRAM_BASE and self.sram_image():
                self.stage = "stub"
            else:
                self.errors.append("boot at 0x%x with nothing loaded there" % request[0])

    def _flash_init(self, frame):
        request = self._request(frame)
        if request:
            self.flash_chip = request[0]
            self._reply(frame[0])

    def _flash_write(self, frame):
        request = self._request(frame)
        if not request:
            return
        address, data = request
        if address + len(data) > len(self.flash):
            self._refuse(frame[0], BAD_WRITE, "flash write at 0x%x..0x%x past the end of the flash"
                         % (address, address + len(data)))
            return
        self.flash[address:address + len(data)] = data
        self.flash_writes.append((address, len(data)))
        self._reply(frame[0])

    def _flash_erase(self, frame):
        # address, byte count (0: the whole chip) and no data: only the checksum applies
        if len(frame) != HEADER.size or zlib.crc32(frame[8:]) & 0xFFFFFFFF != HEADER.unpack_from(frame)[2]:
            self._refuse(frame[0], BAD_CHECKSUM, "malformed erase request")
        else:
            address, length = struct.unpack("<II", frame[8:16])
            end = len(self.flash) if length == 0 else address + length
            self.flash[address:end] = b"\xff" * (end - address)
            self._reply(frame[0])

    def _reboot(self, frame):
        self.rebooted = True
        self.stage = "rebooted"
        self._reply(frame[0])

# SPDX-License-Identifier: Apache-2.0
"""The LCD side of the virtual Maix board: SPI0 (0x52000000, DesignWare SSI, SPI0/1 ctrlr0 layout) in octal
transmit-only mode, and the ST7789 behind it, with DCX on GPIOHS31 and RST on GPIOHS30 (k210-board.md sections
6, 7, 9).

SPI0 shifts its TX frames (8/16/32 bits, MSB first) out when the guest looks at the SSI (txflr, sr), disables it
or changes ser, so the DCX level that applies is the one at that time: a guest that changes DCX with frames still
in the FIFO is stopped (the real panel would take them as the wrong kind). The panel's wiring is checked at the
first transfer: SS3 on IO36, SPI0_SCLK on IO39, GPIOHS30 on IO37, GPIOHS31 on IO38, SYSCTL misc bit 10, SPI0's
clock on.

ST7789 commands understood: SWRESET 0x01, SLPIN/SLPOUT 0x10/0x11, NORON 0x13, INVOFF/INVON 0x20/0x21,
DISPOFF/DISPON 0x28/0x29, CASET 0x2A, RASET 0x2B, RAMWR 0x2C, MADCTL 0x36, COLMOD 0x3A (0x55 only). Anything else,
parameters without a command, or pixels before COLMOD stop the board. MADCTL's MV bit gives the screen 320x240
(else 240x320); the PNG is the address space the firmware draws in (as `openkpu run`'s screen), mirrored when MX
differs from the rotation's own value (lcd.mirror).

Frames: a RAMWR whose window is the whole screen (lcd.display, lcd.clear) starts a new frame; the previous one is
written as <out>/lcd_%05d.png if anything was drawn in it; later partial writes (lcd.draw_string) land in the same
frame, as `openkpu run`'s LCD does. What is drawn before the first whole-screen write (lcd.init's clear, in two
halves) is not written. RGB565 is expanded to RGB888 as openkpu.board.lcd does ((v * 255 + 15) // 31 ...).
"""
import os

from .gpiohs import Gpiohs
from .mmio import Device, DeviceFault, Unmodelled

FIFO = 32
PARAMS = {0x01: 0, 0x10: 0, 0x11: 0, 0x13: 0, 0x20: 0, 0x21: 0, 0x28: 0, 0x29: 0, 0x2A: 4, 0x2B: 4, 0x36: 1, 0x3A: 1}
ROTATION_MADCTL = (0xA0, 0x00, 0x60, 0xC0)
NAMES = {0x00: "ctrlr0", 0x04: "ctrlr1", 0x08: "ssienr", 0x0C: "mwcr", 0x10: "ser", 0x14: "baudr", 0x18: "txftlr",
         0x1C: "rxftlr", 0x20: "txflr", 0x24: "rxflr", 0x28: "sr", 0x2C: "imr", 0x30: "isr", 0x34: "risr",
         0x4C: "dmacr", 0x50: "dmatdlr", 0x54: "dmardlr", 0xF0: "rx_sample_delay", 0xF4: "spi_ctrlr0",
         0x118: "endian"}


class St7789(object):
    """The panel: a command/parameter decoder and an RGB565 frame buffer, with PNG frames out."""

    def __init__(self, out_dir=None, max_files=1000):
        self.out_dir = out_dir
        self.max_files = max_files
        self.count = 0          # PNGs started (lcd_00001 is the first)
        self.written = []
        self.reset()

    def reset(self):
        import numpy as np
        self.np = np
        self.madctl = 0x00
        self.colmod = None
        self.sleeping = True
        self.display_on = False
        self.cmd = None
        self.params = []
        self.cols = (0, 239)
        self.rows = (0, 319)
        self.ptr = 0
        self.ramwr = False
        self.fb = np.zeros((320, 320), dtype=np.uint16)  # big enough for either orientation
        self.dirty = False
        self.in_frame = False

    def size(self):
        return (320, 240) if self.madctl & 0x20 else (240, 320)

    # --- the wire -----------------------------------------------------------------------------------------------
    def command(self, b):
        self._end_params()
        self.ramwr = False
        if b not in PARAMS and b != 0x2C:
            raise Unmodelled("ST7789 command 0x%02x is not modelled" % b)
        if b == 0x01:
            self.madctl, self.colmod, self.sleeping, self.display_on = 0x00, None, True, False
        elif b == 0x11:
            self.sleeping = False
        elif b == 0x10:
            self.sleeping = True
        elif b == 0x29:
            self.display_on = True
        elif b == 0x28:
            self.display_on = False
        elif b == 0x2C:
            self._ramwr()
            return
        self.cmd = b if PARAMS.get(b) else None
        self.params = []

    def data(self, data):
        if self.ramwr:
            self._pixels(bytes(data))
            return
        if self.cmd is None:
            raise Unmodelled("ST7789: %d data byte(s) (DCX high) with no command expecting parameters" % len(data))
        self.params.extend(data)
        if len(self.params) > PARAMS[self.cmd]:
            raise Unmodelled("ST7789 command 0x%02x takes %d parameter byte(s), got %d"
                             % (self.cmd, PARAMS[self.cmd], len(self.params)))
        if len(self.params) == PARAMS[self.cmd]:
            self._apply()

    def _end_params(self):
        if self.cmd is not None and len(self.params) != PARAMS[self.cmd]:
            raise Unmodelled("ST7789 command 0x%02x got %d of its %d parameter byte(s)"
                             % (self.cmd, len(self.params), PARAMS[self.cmd]))

    def _apply(self):
        p, cmd = self.params, self.cmd
        self.cmd = None
        if cmd == 0x3A:
            if p[0] != 0x55:
                raise Unmodelled("ST7789 COLMOD 0x%02x: only 0x55 (RGB565) is modelled" % p[0])
            self.colmod = p[0]
        elif cmd == 0x36:
            if p[0] & 0x1C:
                raise Unmodelled("ST7789 MADCTL 0x%02x: ML/RGB/MH bits are not modelled" % p[0])
            self.madctl = p[0]
        elif cmd in (0x2A, 0x2B):
            a, b = (p[0] << 8) | p[1], (p[2] << 8) | p[3]
            if cmd == 0x2A:
                self.cols = (a, b)
            else:
                self.rows = (a, b)

    def _ramwr(self):
        if self.colmod is None:
            raise Unmodelled("ST7789 RAMWR before COLMOD: the pixel format is not set")
        if self.sleeping:
            raise Unmodelled("ST7789 RAMWR while asleep (no SLPOUT since reset)")
        w, h = self.size()
        (c0, c1), (r0, r1) = self.cols, self.rows
        if c0 > c1 or r0 > r1 or c1 >= w or r1 >= h:
            raise Unmodelled("ST7789 window columns %d..%d rows %d..%d is outside the %dx%d screen (MADCTL 0x%02x)"
                             % (c0, c1, r0, r1, w, h, self.madctl))
        if (c0, c1, r0, r1) == (0, w - 1, 0, h - 1):
            self.new_frame()
        self.ramwr = True
        self.ptr = 0
        self.odd = b""

    def _pixels(self, data):
        np = self.np
        data = self.odd + data
        if len(data) & 1:
            data, self.odd = data[:-1], data[-1:]
        else:
            self.odd = b""
        if not data:
            return
        px = np.frombuffer(data, dtype=">u2")
        (c0, c1), (r0, r1) = self.cols, self.rows
        ww, wh = c1 - c0 + 1, r1 - r0 + 1
        idx = (self.ptr + np.arange(px.size)) % (ww * wh)
        self.fb[r0 + idx // ww, c0 + idx % ww] = px
        self.ptr = (self.ptr + px.size) % (ww * wh)
        if self.in_frame:
            self.dirty = True

    # --- frames -------------------------------------------------------------------------------------------------
    def new_frame(self):
        self.flush()
        self.count += 1
        self.in_frame = True
        self.dirty = False

    def image(self):
        """The screen as a Pillow RGB image (RGB565 expanded as openkpu.board.lcd does)."""
        np = self.np
        from PIL import Image as _PIL
        w, h = self.size()
        v = self.fb[:h, :w].astype(np.uint32)
        r, g, b = (v >> 11) & 0x1F, (v >> 5) & 0x3F, v & 0x1F
        rgb = np.stack([(r * 255 + 15) // 31, (g * 255 + 31) // 63, (b * 255 + 15) // 31], axis=-1).astype(np.uint8)
        pil = _PIL.fromarray(rgb, "RGB")
        base = self.madctl & 0xE0
        if base not in ROTATION_MADCTL and (base ^ 0x40) in ROTATION_MADCTL:
            from PIL import ImageOps
            pil = ImageOps.mirror(pil)
        return pil

    def flush(self):
        """Write the current frame if it has pixels drawn since it started. Returns the path or None."""
        if not self.in_frame or not self.dirty:
            return None
        self.dirty = False
        if not self.out_dir:
            return None
        if self.max_files and len(self.written) >= self.max_files:
            return None
        os.makedirs(self.out_dir, exist_ok=True)
        path = os.path.join(self.out_dir, "lcd_%05d.png" % self.count)
        self.image().save(path)
        self.written.append(path)
        return path


class Spi0(Device):
    name = "SPI0"
    base = 0x52000000
    size = 0x1000

    def __init__(self, board, panel):
        Device.__init__(self, board)
        self.panel = panel
        self.wiring_checked = False
        self.reset()

    def reset(self):
        self.regs = dict((off, 0) for off in NAMES)
        self.tx = []
        self.tx_dcx = None
        self.transfers = 0
        self.panel.reset()

    def _dfs(self):
        return ((self.regs[0x00] >> 16) & 0x1F) + 1

    def read32(self, offset):
        if 0x60 <= offset < 0xF0:
            raise Unmodelled("SPI0 receive is not modelled (the LCD is write-only)")
        if offset not in self.regs:
            raise Unmodelled()
        if offset == 0x20:
            self._pump()
            return 0
        if offset == 0x24:
            return 0
        if offset == 0x28:
            self._pump()
            return 0x6  # tfnf | tfe, never busy
        if offset in (0x30, 0x34):
            return 0
        return self.regs[offset]

    def write32(self, offset, value):
        if 0x60 <= offset < 0xF0:
            if not self.regs[0x08] & 1:
                return
            if len(self.tx) >= FIFO:
                raise Unmodelled("SPI0 TX FIFO overflow (32 frames): poll txflr before writing dr")
            self.tx.append(value & ((1 << self._dfs()) - 1) if self._dfs() < 32 else value & 0xFFFFFFFF)
            return
        if offset not in self.regs or offset in (0x20, 0x24, 0x28):
            raise Unmodelled()
        if offset in (0x08, 0x10):
            self._pump()
        if offset == 0x4C and value:
            raise Unmodelled("SPI0 DMA is not modelled: write dr")
        if offset == 0x118 and value:
            raise Unmodelled("SPI0 endian mode %d is not modelled (only 0)" % value)
        if offset == 0x10 and value & ~0x8:
            raise Unmodelled("only the LCD (SS3) is wired on SPI0")
        self.regs[offset] = value

    def dcx_changed(self):
        """GPIOHS calls this when the DCX output changes: frames still queued would go out with the new level."""
        if self.tx:
            raise DeviceFault("LCD DCX (GPIOHS31) changed with %d frame(s) still in SPI0's TX FIFO: wait for sr "
                              "busy = 0 / tfe before switching command/data" % len(self.tx))

    def _check_wiring(self):
        board = self.board
        problems = []
        for func, io, what in ((15, 36, "SPI0_SS3 (LCD CS)"), (17, 39, "SPI0_SCLK (LCD WR)"),
                               (24 + 30, 37, "GPIOHS30 (LCD RST)"), (24 + 31, 38, "GPIOHS31 (LCD DCX)")):
            pad = board.fpioa.function_pad(func)
            if pad != io:
                problems.append("%s is on %s, the panel is on IO%d" % (what, "IO%d" % pad if pad is not None
                                                                          else "no pad", io))
        if not board.sysctl.regs[0x54] & (1 << 10):
            problems.append("SYSCTL misc bit 10 (SPI0_D0-7 on their pins) is off")
        if not board.sysctl.regs[0x2C] & (1 << 6):
            problems.append("SPI0's clock (clk_en_peri bit 6) is off")
        oe = board.gpiohs.regs[0x08]
        if (oe >> 30) & 3 != 3:
            problems.append("GPIOHS30/31 are not outputs")
        if problems:
            raise DeviceFault("the LCD is not reachable: " + "; ".join(problems))
        self.wiring_checked = True

    def _pump(self):
        if not self.tx:
            return
        if not (self.regs[0x08] & 1 and self.regs[0x10] & 0x8):
            return
        if not self.wiring_checked:
            self._check_wiring()
        c0 = self.regs[0x00]
        frf, tmod = (c0 >> 21) & 3, (c0 >> 8) & 3
        if frf != 3:
            raise Unmodelled("SPI0 frame format %s: the LCD is wired to 8 data lines (octal)"
                             % ("standard", "dual", "quad")[frf])
        if tmod != 1:
            raise Unmodelled("SPI0 transfer mode %d: only transmit-only (1) is modelled for the LCD" % tmod)
        dfs = self._dfs()
        if dfs not in (8, 16, 32):
            raise Unmodelled("SPI0 frame size %d bits is not modelled (8, 16, 32)" % dfs)
        sc = self.regs[0xF4]
        trans, addr_l, inst_l = sc & 3, (sc >> 2) & 0xF, (sc >> 8) & 3
        if trans != 2:
            raise Unmodelled("SPI0 spi_ctrlr0 trans_type %d: the LCD path uses 2 (instruction and address in the "
                             "frame format)" % trans)
        if not ((inst_l == 2 and addr_l == 0 and dfs == 8) or (inst_l == 0 and addr_l * 4 == dfs)):
            raise Unmodelled("SPI0 spi_ctrlr0 0x%x with %d-bit frames: expected an 8-bit instruction (inst_l 2) or "
                             "addr_l = frame bits / 4" % (sc, dfs))
        frames, self.tx = self.tx, []
        self.transfers += 1
        dcx = self.board.gpiohs.level(31)
        if not self.board.gpiohs.level(30):
            raise DeviceFault("LCD transfer while its RST (GPIOHS30) is low")
        n = dfs // 8
        data = b"".join(f.to_bytes(n, "big") for f in frames)
        if dcx:
            self.panel.data(data)
        else:
            for b in data:
                self.panel.command(b)


class LcdGpiohs(Gpiohs):
    """GPIOHS with the LCD's DCX (GPIOHS31) and RST (GPIOHS30) lines read by SPI0 (board.spi0)."""

    def level(self, n):
        return (self.regs[0x0C] ^ self.regs[0x40]) >> n & 1

    def write32(self, offset, value):
        before = self.level(31)
        Gpiohs.write32(self, offset, value)
        spi0 = getattr(self.board, "spi0", None)
        if spi0 is not None and self.level(31) != before:
            spi0.dcx_changed()

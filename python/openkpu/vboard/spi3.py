# SPDX-License-Identifier: Apache-2.0
"""SPI3 (0x54000000): the DesignWare SSI (dwc-ssi 1.01a register layout of ctrlr0) with the NOR flash on CS0
(k210-board.md section 7).

Transfers happen when the guest next looks at the SSI (txflr, rxflr, sr, dr read) or changes ser: by then the whole
command is in the TX FIFO, whichever order the guest filled it and set ser, so one burst of TX frames is one CS-low
period, as the SSI does when its FIFO runs empty. Frames of 8, 16 or 32 bits shift MSB first (a 32-bit frame
carries b0<<24|b1<<16|b2<<8|b3). Modes: tmod 0 (tx+rx), 1 (tx only), 2 (rx only: ndf+1 frames), 3 (EEPROM: send
the TX frames, then receive ndf+1 frames), standard frame format only. The RX side is served from a generator, so
rxflr reports min(frames left, 32) and the guest can never overrun it. Quad/dual/octal, XIP and DMA are not
modelled: using them stops the board with a message.
"""
import collections

from .mmio import Device, Unmodelled

FIFO = 32

NAMES = {
    0x00: "ctrlr0", 0x04: "ctrlr1", 0x08: "ssienr", 0x0C: "mwcr", 0x10: "ser", 0x14: "baudr", 0x18: "txftlr",
    0x1C: "rxftlr", 0x20: "txflr", 0x24: "rxflr", 0x28: "sr", 0x2C: "imr", 0x30: "isr", 0x34: "risr",
    0x38: "txoicr", 0x3C: "rxoicr", 0x40: "rxuicr", 0x44: "msticr", 0x48: "icr", 0x4C: "dmacr", 0x50: "dmatdlr",
    0x54: "dmardlr", 0x58: "idr", 0x5C: "ssic_version_id", 0xF0: "rx_sample_delay", 0xF4: "spi_ctrlr0",
    0xFC: "xip_mode_bits", 0x100: "xip_incr_inst", 0x104: "xip_wrap_inst", 0x108: "xip_ctrl", 0x10C: "xip_ser",
    0x110: "xrxoicr", 0x114: "xip_cnt_time_out", 0x118: "endian",
}
DR_START, DR_END = 0x60, 0xF0  # dr[36]: every word is the FIFO


class Spi3(Device):
    name = "SPI3"
    base = 0x54000000
    size = 0x1000

    def __init__(self, board, flash_chip):
        Device.__init__(self, board)
        self.chip = flash_chip
        self.reset()

    def reset(self):
        self.regs = dict((off, 0) for off in NAMES)
        self.regs[0x5C] = 0x3130312A  # "101*"
        self.tx = []           # frames written, not yet shifted
        self.rx = collections.deque()  # frames received, not yet read
        self.rx_left = 0       # frames still to receive in rx-only / EEPROM mode
        self.selected = False
        self.transfers = 0

    # ctrlr0, SPI3 layout: dfs [4:0], tmod [11:10], frf [23:22]
    def _dfs(self):
        return (self.regs[0x00] & 0x1F) + 1

    def _tmod(self):
        return (self.regs[0x00] >> 10) & 3

    def _active(self):
        return self.regs[0x08] & 1 and self.regs[0x10] & 1

    def read32(self, offset):
        if DR_START <= offset < DR_END:
            if not self.rx:
                self._pump()
                self._fill_rx()
                if not self.rx:
                    return 0  # reading an empty FIFO (an underflow on the chip)
            return self.rx.popleft()
        if offset not in self.regs:
            raise Unmodelled()
        if offset == 0x20:
            self._pump()
            return len(self.tx)
        if offset == 0x24:
            self._pump()
            self._fill_rx()
            return len(self.rx)
        if offset == 0x28:
            self._pump()
            self._fill_rx()
            sr = 0x2  # tfnf; busy (bit 0) never: transfers are instant
            if not self.tx:
                sr |= 0x4
            if self.rx:
                sr |= 0x8
            if len(self.rx) >= FIFO:
                sr |= 0x10
            return sr
        if offset in (0x30, 0x34, 0x38, 0x3C, 0x40, 0x44, 0x48):
            return 0  # no interrupt sources modelled: nothing ever pending
        return self.regs[offset]

    def write32(self, offset, value):
        if DR_START <= offset < DR_END:
            if not self.regs[0x08] & 1:
                return  # the SSI ignores dr writes while disabled
            self._check_format()
            if len(self.tx) < FIFO:
                self.tx.append(value & ((1 << self._dfs()) - 1))
            return
        if offset not in self.regs or offset in (0x20, 0x24, 0x28, 0x5C):
            raise Unmodelled()
        if offset == 0x08:
            self.regs[0x08] = value & 1
            if not value & 1:  # disabling flushes both FIFOs and ends the transfer
                self._end()
            return
        if offset == 0x10:
            if value & ~1:
                raise Unmodelled("only CS0 (the flash) is wired on SPI3")
            self.regs[0x10] = value
            if value & 1:
                self._pump()
            else:
                self._end()
            return
        if offset == 0x4C and value:
            raise Unmodelled("SPI3 DMA is not modelled")
        if offset == 0x108 or offset == 0x10C:
            if value:
                raise Unmodelled("SPI3 XIP is not modelled")
        if offset == 0x118 and value:
            raise Unmodelled("SPI3 endian mode %d is not modelled (only 0)" % value)
        self.regs[offset] = value

    def _check_format(self):
        frf = (self.regs[0x00] >> 22) & 3
        if frf:
            raise Unmodelled("SPI3 frame format %s is not modelled (only standard SPI)"
                             % ("dual", "quad", "octal")[frf - 1])
        if self._dfs() not in (8, 16, 32):
            raise Unmodelled("SPI3 frame size %d bits is not modelled (8, 16, 32)" % self._dfs())

    def _end(self):
        self.tx = []
        self.rx.clear()
        self.rx_left = 0
        if self.selected:
            self.chip.deselect()
            self.selected = False

    def _frame_bytes(self, frame):
        n = self._dfs() // 8
        return [(frame >> (8 * (n - 1 - i))) & 0xFF for i in range(n)]

    def _xfer_frame(self, frame):
        value = 0
        for b in self._frame_bytes(frame):
            value = (value << 8) | self.chip.xfer(b)
        return value

    def _pump(self):
        """Shift the TX frames out as one CS-low burst (a new command), then arm reception by tmod."""
        if not self.tx or not self._active():
            return
        self._check_format()
        if self.selected:  # the previous burst ended when its FIFO ran empty: CS went high
            self.chip.deselect()
        self.chip.select()
        self.selected = True
        self.transfers += 1
        tmod = self._tmod()
        frames, self.tx = self.tx, []
        self.rx.clear()
        if tmod == 2:  # rx only: the written word just starts the transfer (SDK writes one dummy word)
            self.rx_left = (self.regs[0x04] & 0xFFFF) + 1
            return
        for f in frames:
            miso = self._xfer_frame(f)
            if tmod == 0 and len(self.rx) < FIFO:
                self.rx.append(miso)
        self.rx_left = (self.regs[0x04] & 0xFFFF) + 1 if tmod == 3 else 0

    def _fill_rx(self):
        """Receive frames on demand (EEPROM / rx-only) so rxflr shows min(left, 32). MOSI is 0 meanwhile [U]."""
        want = min(self.rx_left, FIFO - len(self.rx))
        if want <= 0:
            return
        width = self._dfs() // 8
        data = self.chip.read_bulk(want * width)
        if data is not None:  # a flash read's data phase: take the bytes in one go
            if width == 1:
                self.rx.extend(data)
            else:
                self.rx.extend(int.from_bytes(data[i:i + width], "big") for i in range(0, len(data), width))
            self.rx_left -= want
            return
        while self.rx_left and len(self.rx) < FIFO:
            self.rx.append(self._xfer_frame(0))
            self.rx_left -= 1

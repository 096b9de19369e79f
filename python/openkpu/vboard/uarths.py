# SPDX-License-Identifier: Apache-2.0
"""UARTHS (0x38000000), the SiFive-style console UART (k210-board.md section 4).

TX: bytes written to txdata go to the board's console at once while txctrl.txen is set; with txen clear they wait
in the 8-entry FIFO (txdata bit 31 then reads full), as on the chip. RX: host input waits in an unbounded queue
(no overrun: a pasted script is never dropped) and is delivered while rxctrl.rxen is set; each rxdata read pops one
byte, bit 31 = empty. ip.txwm / ip.rxwm are levels (tx FIFO below txcnt; rx FIFO above rxcnt) and ie & ip drives
PLIC source 33.
"""
import collections

from .mmio import Device, Unmodelled
from .plic import UARTHS_IRQ

FIFO_DEPTH = 8


class Uarths(Device):
    name = "UARTHS"
    base = 0x38000000
    size = 0x1000

    def __init__(self, board):
        Device.__init__(self, board)
        self.rx = collections.deque()
        self.reset()

    def reset(self):
        self.txctrl = 0
        self.rxctrl = 0
        self.ie = 0
        self.div = 0xFFFF  # [U] reset value
        self.tx_fifo = bytearray()

    # host side
    def feed(self, data):
        self.rx.extend(bytes(data))
        self.update_irq()

    def rx_level(self):
        return min(len(self.rx), FIFO_DEPTH) if self.rxctrl & 1 else 0

    def ip(self):
        ip = 0
        if len(self.tx_fifo) < ((self.txctrl >> 16) & 7):
            ip |= 1
        if self.rx_level() > ((self.rxctrl >> 16) & 7):
            ip |= 2
        return ip

    def update_irq(self):
        self.board.plic.set_line(UARTHS_IRQ, self.ie & self.ip())

    def baud(self):
        return self.board.sysctl.cpu_hz() / (self.div + 1)

    def read32(self, offset):
        if offset == 0x00:
            return (1 << 31) if len(self.tx_fifo) >= FIFO_DEPTH else 0
        if offset == 0x04:
            if not (self.rxctrl & 1) or not self.rx:
                return 1 << 31
            byte = self.rx.popleft()
            self.update_irq()
            return byte
        if offset == 0x08:
            return self.txctrl
        if offset == 0x0C:
            return self.rxctrl
        if offset == 0x10:
            return self.ie
        if offset == 0x14:
            return self.ip()
        if offset == 0x18:
            return self.div
        raise Unmodelled()

    def write32(self, offset, value):
        if offset == 0x00:
            if len(self.tx_fifo) < FIFO_DEPTH:
                self.tx_fifo.append(value & 0xFF)
            self._drain()
        elif offset == 0x04:
            pass  # rxdata is read-only
        elif offset == 0x08:
            self.txctrl = value & 0x70003
            self._drain()
        elif offset == 0x0C:
            self.rxctrl = value & 0x70001
        elif offset == 0x10:
            self.ie = value & 3
        elif offset == 0x14:
            pass  # ip is read-only
        elif offset == 0x18:
            self.div = value & 0xFFFF
        else:
            raise Unmodelled()
        self.update_irq()

    def _drain(self):
        if self.txctrl & 1 and self.tx_fifo:
            data, self.tx_fifo = bytes(self.tx_fifo), bytearray()
            self.board.console_output(data)

# SPDX-License-Identifier: Apache-2.0
"""FPIOA (0x502B0000): 48 pad words and the tie-enable / tie-value words, stored (k210-board.md section 6).
Nothing is routed by it in the virtual board: every model is wired as on a Maix board (UARTHS on IO4/IO5)."""
from .mmio import Device, Unmodelled

PADS = 48


class Fpioa(Device):
    name = "FPIOA"
    base = 0x502B0000
    size = 0x1000

    def __init__(self, board):
        Device.__init__(self, board)
        self.reset()

    def reset(self):
        self.words = [0] * (PADS + 16)  # 0x00..0xBC pads, 0xC0..0xDC tie_en, 0xE0..0xFC tie_val

    def read32(self, offset):
        if offset < 4 * len(self.words) and not offset & 3:
            return self.words[offset // 4]
        raise Unmodelled()

    def write32(self, offset, value):
        if offset < 4 * len(self.words) and not offset & 3:
            self.words[offset // 4] = value & 0x7FFFFFFF if offset < 4 * PADS else value  # pad_di is read-only
            return
        raise Unmodelled()

    def function_pad(self, function):
        """The IO number carrying FPIOA function `function`, or None."""
        for io in range(PADS):
            if self.words[io] & 0xFF == function:
                return io
        return None

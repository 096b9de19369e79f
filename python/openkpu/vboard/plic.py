# SPDX-License-Identifier: Apache-2.0
"""PLIC (0x0C000000), SiFive layout (k210-board.md section 5): 65 sources, priorities, pending, per-target
enables, threshold and claim/complete. Devices drive level lines with `set_line(source, level)`; a source is
pending while its line is high and it is not claimed (claimed sources wait for their complete, then pend again if
still high). Target 0 (hart 0, M-mode) drives MEIP; target 1's registers are stored (the SDK initialises them).
"""
from .mmio import Device, Unmodelled

SOURCES = 66  # 0 (none) .. 65
TARGETS = 2
WORDS = (SOURCES + 31) // 32

UARTHS_IRQ = 33
KPU_IRQ = 25


class Plic(Device):
    name = "PLIC"
    base = 0x0C000000
    size = 0x4000000

    def __init__(self, board):
        Device.__init__(self, board)
        self.reset()

    def reset(self):
        self.priority = [0] * SOURCES
        self.enable = [[0] * WORDS for _ in range(TARGETS)]
        self.threshold = [0] * TARGETS
        self.lines = 0      # bit s: device line s is high
        self.claimed = 0    # bit s: claimed, not yet completed

    def set_line(self, source, level):
        if level:
            self.lines |= 1 << source
        else:
            self.lines &= ~(1 << source)

    def pending_bits(self):
        return self.lines & ~self.claimed & ~1

    def best(self, target):
        """The source a claim by `target` would get: highest priority above threshold, lowest id on ties; 0 if none."""
        pend = self.pending_bits()
        if not pend:
            return 0
        en = 0
        for i, word in enumerate(self.enable[target]):
            en |= word << (32 * i)
        pend &= en
        best, best_prio = 0, self.threshold[target]
        s = 1
        while pend >> s:
            if (pend >> s) & 1 and self.priority[s] > best_prio:
                best, best_prio = s, self.priority[s]
            s += 1
        return best

    def meip(self):
        return self.best(0) != 0

    def read32(self, offset):
        if offset < 4 * SOURCES:
            return self.priority[offset // 4]
        if 0x1000 <= offset < 0x1000 + 4 * WORDS:
            return (self.pending_bits() >> (32 * ((offset - 0x1000) // 4))) & 0xFFFFFFFF
        t, word = self._enable_index(offset)
        if t is not None:
            return self.enable[t][word]
        t, reg = self._context_index(offset)
        if t is not None:
            if reg == 0:
                return self.threshold[t]
            src = self.best(t)
            if src:
                self.claimed |= 1 << src
                self.board.irq_changed()
            return src
        raise Unmodelled()

    def write32(self, offset, value):
        if offset < 4 * SOURCES:
            if offset:
                self.priority[offset // 4] = value & 7
            self.board.irq_changed()
            return
        if 0x1000 <= offset < 0x1000 + 4 * WORDS:
            return  # pending bits are read-only
        t, word = self._enable_index(offset)
        if t is not None:
            if word == WORDS - 1:
                value &= (1 << (SOURCES - 32 * word)) - 1
            self.enable[t][word] = value & ~(1 if word == 0 else 0)
            self.board.irq_changed()
            return
        t, reg = self._context_index(offset)
        if t is not None:
            if reg == 0:
                self.threshold[t] = value & 7
            elif 0 < value < SOURCES:
                self.claimed &= ~(1 << value)  # complete
            self.board.irq_changed()
            return
        raise Unmodelled()

    @staticmethod
    def _enable_index(offset):
        if 0x2000 <= offset < 0x2000 + 0x80 * TARGETS:
            t, rel = divmod(offset - 0x2000, 0x80)
            if rel < 4 * WORDS:
                return t, rel // 4
        return None, None

    @staticmethod
    def _context_index(offset):
        if 0x200000 <= offset < 0x200000 + 0x1000 * TARGETS:
            t, rel = divmod(offset - 0x200000, 0x1000)
            if rel in (0, 4):
                return t, rel // 4
        return None, None

# SPDX-License-Identifier: Apache-2.0
"""CLINT (0x02000000): msip, mtimecmp and mtime (k210-board.md section 5).

mtime is virtual: the board counts CPU cycles (one executed instruction = one cycle; a hart asleep in wfi spends the
rest of its slice idle) and mtime = cycles / 50 (the chip's ACLK/50) — deterministic, independent of host speed.
Inside a slice the board only knows the count at the slice start, so mtime advances in slice steps. 64-bit
registers arrive as two 32-bit halves, low first: a read of mtime's low half snapshots the value so the high half
read cannot tear.
"""
from .mmio import Device, Unmodelled

MASK64 = (1 << 64) - 1
HARTS = 2  # registers for both harts exist on the chip; only hart 0 runs (Unicorn has one hart)


class Clint(Device):
    name = "CLINT"
    base = 0x02000000
    size = 0xC000

    def __init__(self, board):
        Device.__init__(self, board)
        self.reset()

    def reset(self):
        self.msip = [0] * HARTS
        self.mtimecmp = [MASK64] * HARTS
        self.mtime_offset = 0  # what the guest wrote to mtime, relative to the instruction count
        self._snapshot = None

    def mtime(self):
        return (self.board.cycles // 50 + self.mtime_offset) & MASK64

    def read32(self, offset):
        if offset < 4 * HARTS and not offset & 3:
            return self.msip[offset // 4]
        if 0x4000 <= offset < 0x4000 + 8 * HARTS:
            cmp = self.mtimecmp[(offset - 0x4000) // 8]
            return (cmp >> 32) if offset & 4 else cmp & 0xFFFFFFFF
        if offset == 0xBFF8:
            self._snapshot = self.mtime()
            return self._snapshot & 0xFFFFFFFF
        if offset == 0xBFFC:
            snap, self._snapshot = self._snapshot, None
            if snap is None:
                snap = self.mtime()
            return snap >> 32
        raise Unmodelled()

    def write32(self, offset, value):
        if offset < 4 * HARTS and not offset & 3:
            self.msip[offset // 4] = value & 1
            return
        if 0x4000 <= offset < 0x4000 + 8 * HARTS:
            hart = (offset - 0x4000) // 8
            if offset & 4:
                self.mtimecmp[hart] = (self.mtimecmp[hart] & 0xFFFFFFFF) | (value << 32)
            else:
                self.mtimecmp[hart] = (self.mtimecmp[hart] & ~0xFFFFFFFF & MASK64) | value
            return
        if offset in (0xBFF8, 0xBFFC):
            now = self.mtime()
            new = (now & 0xFFFFFFFF) | (value << 32) if offset & 4 else (now & ~0xFFFFFFFF & MASK64) | value
            self.mtime_offset = (self.mtime_offset + new - now) & MASK64
            return
        raise Unmodelled()

    def mtip(self):
        return self.mtime() >= self.mtimecmp[0]

    def cycles_until_mtip(self):
        """How many cycles until mtime reaches mtimecmp (0 if already), for cutting slices exactly."""
        ticks = self.mtimecmp[0] - self.mtime()
        if ticks <= 0:
            return 0
        # mtime = cycles // 50 + offset: the first count with mtime >= cmp
        return ticks * 50 - self.board.cycles % 50

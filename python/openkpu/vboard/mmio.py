# SPDX-License-Identifier: Apache-2.0
"""Common plumbing of a memory-mapped peripheral on Unicorn's `mmio_map`.

A device subclasses `Device`, names its base and size, and implements `read32(offset)` / `write32(offset, value)`.
Unicorn splits 64-bit accesses into two 32-bit ones (low half first); 8/16-bit accesses are passed on with their
size so a device can refuse them. Anything a device does not model calls `self.unmodelled(...)`: the board records
a fault naming the address, size, direction and guest PC and stops at the end of the slice. We never stop inside
the callback: Unicorn would re-execute the access on restart (k210-board.md section 11).
"""
from unicorn.riscv_const import UC_RISCV_REG_PC


class Unmodelled(Exception):
    """Raised by a device's read32/write32 for an offset or value it does not model."""

    def __init__(self, why=""):
        Exception.__init__(self, why)
        self.why = why


class DeviceFault(Unmodelled):
    """Raised by a device for a modelled access whose effect the board cannot survive (e.g. a KPU layer fault)."""


class Device(object):
    name = "device"
    base = 0
    size = 0x1000

    def __init__(self, board):
        self.board = board

    # --- subclass interface -------------------------------------------------------------------------------------
    def read32(self, offset):
        raise Unmodelled()

    def write32(self, offset, value):
        raise Unmodelled()

    def reset(self):
        pass

    # --- Unicorn callbacks ------------------------------------------------------------------------------------------
    def map(self, uc):
        uc.mmio_map(self.base, self.size, self._uc_read, None, self._uc_write, None)

    def _uc_read(self, uc, offset, size, _ud):
        board = self.board
        if board.fault is not None:  # the board is stopping: no more side effects
            return 0
        try:
            if size == 4 or (size == 8 and not offset & 7):
                if size == 8:
                    return self.read32(offset) | (self.read32(offset + 4) << 32)
                return self.read32(offset)
            return self.read_other(offset, size)
        except Unmodelled as e:
            self._fault(uc, offset, size, "read", None, e)
            return 0
        except Exception as e:  # a model bug must not vanish inside Unicorn
            self._fault(uc, offset, size, "read", None, DeviceFault("model error %s: %s" % (type(e).__name__, e)))
            return 0

    def _uc_write(self, uc, offset, size, value, _ud):
        board = self.board
        if board.fault is not None:
            return
        try:
            if size == 4:
                self.write32(offset, value & 0xFFFFFFFF)
            elif size == 8 and not offset & 7:
                self.write32(offset, value & 0xFFFFFFFF)
                self.write32(offset + 4, (value >> 32) & 0xFFFFFFFF)
            else:
                self.write_other(offset, size, value)
        except Unmodelled as e:
            self._fault(uc, offset, size, "write", value, e)
        except Exception as e:
            self._fault(uc, offset, size, "write", value, DeviceFault("model error %s: %s" % (type(e).__name__, e)))

    def read_other(self, offset, size):
        raise Unmodelled("%d-byte access" % size)

    def write_other(self, offset, size, value):
        raise Unmodelled("%d-byte access" % size)

    def _fault(self, uc, offset, size, kind, value, err):
        pc = uc.reg_read(UC_RISCV_REG_PC)
        addr = self.base + offset
        where = "%d-byte %s at 0x%08x (%s+0x%x)" % (size, kind, addr, self.name, offset)
        if value is not None:
            where += " value 0x%x" % value
        where += ", guest pc 0x%x" % pc
        if isinstance(err, DeviceFault):
            msg = "%s fault: %s (%s)" % (self.name, err, where)
        else:
            msg = "unmodelled " + where
            if str(err):
                msg += ": %s" % err
        self.board.stop_fault(msg, pc=pc, address=addr)


class RegisterFile(Device):
    """A device whose registers are plain stored 32-bit words at known offsets (reads return what was written)."""

    registers = {}  # offset -> (name, reset value)
    read_only = ()

    def __init__(self, board):
        Device.__init__(self, board)
        self.regs = {}
        self.reset()

    def reset(self):
        self.regs = dict((off, reset) for off, (_name, reset) in self.registers.items())

    def read32(self, offset):
        if offset not in self.regs:
            raise Unmodelled()
        return self.regs[offset]

    def write32(self, offset, value):
        if offset not in self.regs:
            raise Unmodelled()
        if offset in self.read_only:
            return
        self.regs[offset] = value

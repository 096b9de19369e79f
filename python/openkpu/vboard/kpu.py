# SPDX-License-Identifier: Apache-2.0
"""KPU register block (0x40800000, 0x48 bytes of 64-bit registers; kpu-reference.md section 7).

The KPU itself is the C device model `_kpu.KpuDevice(memory)` of the CPython binding, which shares the board's
8 MiB SRAM buffer and runs a layer on the project's bit-exact emulator on every 12th FIFO word. This module only
turns the CPU's bus accesses into its 64-bit register calls: Unicorn delivers an `sd`/`ld` as two 32-bit accesses,
low half first (k210-board.md section 11). A low-half write is held until its high half arrives; a low-half read
performs the 64-bit read (reads can pop, e.g. fifo_data_out) and keeps the value for the high-half read. After
every access the device's interrupt line is copied to PLIC source 25, and a layer the device could not run stops
the board.
"""
from .mmio import Device, DeviceFault, Unmodelled
from .plic import KPU_IRQ

REG_END = 0x48
NAMES = ("layer_argument_fifo", "interrupt_status", "interrupt_raw", "interrupt_mask", "interrupt_clear",
         "fifo_threshold", "fifo_data_out", "fifo_ctrl", "eight_bit_mode")


def make_device(memory, hang=False):
    """The binding's KpuDevice over `memory`, or None when this _kpu build has none."""
    try:
        import _kpu
    except ImportError:
        return None
    cls = getattr(_kpu, "KpuDevice", None)
    if cls is None:
        return None
    dev = cls(memory)
    dev.hang = bool(hang)
    return dev


class KpuRegisters(Device):
    name = "KPU"
    base = 0x40800000
    size = 0x1000  # the chip decodes a 12 MiB window; anything past the registers is unmodelled anyway

    def __init__(self, board, device):
        Device.__init__(self, board)
        self.dev = device
        self.reset()

    def reset(self):
        self.held_write = None  # (offset, low half, guest pc) waiting for its high half
        self.read_snapshot = None  # (offset, 64-bit value) from the low-half read
        self.reported_fault = None

    def _device(self):
        if self.dev is None:
            raise Unmodelled("no KPU device model: this _kpu build has no KpuDevice")
        return self.dev

    def read32(self, offset):
        reg, half = offset & ~7, offset & 4
        if reg >= REG_END:
            raise Unmodelled()
        self._check_held(reg, "read")
        if not half:
            value = self._device().read(reg)
            self.read_snapshot = (reg, value)
            self._after()
            return value & 0xFFFFFFFF
        if self.read_snapshot is not None and self.read_snapshot[0] == reg:
            value = self.read_snapshot[1]
            self.read_snapshot = None
        else:  # a lone high-half read
            value = self._device().read(reg)
            self._after()
        return (value >> 32) & 0xFFFFFFFF

    def write32(self, offset, value):
        reg, half = offset & ~7, offset & 4
        if reg >= REG_END:
            raise Unmodelled()
        if not half:
            self._check_held(reg, "written")
            self.held_write = (reg, value, self.board.guest_pc())
            return
        if self.held_write is None or self.held_write[0] != reg:
            raise Unmodelled("high half of KPU %s written without its low half (KPU registers are 64-bit: use sd)"
                             % NAMES[reg // 8])
        low = self.held_write[1]
        self.held_write = None
        self._device().write(reg, (value << 32) | low)
        self._after()

    def _check_held(self, reg, what):
        if self.held_write is not None:
            held = self.held_write[0]
            self.held_write = None
            raise Unmodelled("KPU %s got only its low 32 bits before %s was %s (KPU registers are 64-bit: use sd)"
                             % (NAMES[held // 8], NAMES[reg // 8], what))

    def _after(self):
        dev = self.dev
        self.board.plic.set_line(KPU_IRQ, bool(dev.irq_pending()))
        self.board.irq_changed()
        fault = getattr(dev, "fault", None)
        if fault and fault != self.reported_fault:
            self.reported_fault = fault
            raise DeviceFault("the KPU could not run pushed layer %d: %s" % (getattr(dev, "layers_run", -1), fault))

    def slice_end(self):
        """Between slices: refresh the interrupt line, and catch a lone 32-bit write (both halves of an `sd` come
        within one instruction, so a low half still held at a slice boundary was an `sw`)."""
        if self.held_write is not None:
            reg, _low, pc = self.held_write
            self.held_write = None
            return ("KPU %s (0x%08x) got a lone 32-bit write at guest pc 0x%x (KPU registers are 64-bit: use sd)"
                    % (NAMES[reg // 8], self.base + reg, pc)), pc
        if self.dev is not None:
            self.board.plic.set_line(KPU_IRQ, bool(self.dev.irq_pending()))
        return None, None

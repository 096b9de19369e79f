# SPDX-License-Identifier: Apache-2.0
"""GPIOHS (0x38001000), SiFive gpio0 layout, registers stored (k210-board.md section 6). Nothing is attached to
the pins: input_val reads back the driven level of output-enabled pins (0 for the others); interrupt pending
bits never rise."""
from .mmio import RegisterFile

REGISTERS = dict((off, (name, 0)) for off, name in (
    (0x00, "input_val"), (0x04, "input_en"), (0x08, "output_en"), (0x0C, "output_val"), (0x10, "pullup"),
    (0x14, "drive"), (0x18, "rise_ie"), (0x1C, "rise_ip"), (0x20, "fall_ie"), (0x24, "fall_ip"),
    (0x28, "high_ie"), (0x2C, "high_ip"), (0x30, "low_ie"), (0x34, "low_ip"), (0x38, "iof_en"),
    (0x3C, "iof_sel"), (0x40, "output_xor")))


class Gpiohs(RegisterFile):
    name = "GPIOHS"
    base = 0x38001000
    size = 0x1000
    registers = REGISTERS
    read_only = (0x00,)

    def read32(self, offset):
        if offset == 0x00:
            return (self.regs[0x0C] ^ self.regs[0x40]) & self.regs[0x08]
        if offset in (0x1C, 0x24, 0x2C, 0x34):
            return 0
        return RegisterFile.read32(self, offset)

# SPDX-License-Identifier: Apache-2.0
"""SYSCTL (0x50440000): PLLs, clock selects, gates, dividers, resets (k210-board.md section 3).

Registers are stored; the PLLs lock at once (pll_lock reads locked), and the CPU clock is derived from PLL0 and
clk_sel0 the way the SDK's sysctl_clock_get_freq does, so the board can turn instructions into seconds and report
the UARTHS baud rate. Reset values give the 390 MHz the boot ROM leaves (PLL0 780 MHz, ACLK = PLL0/2) [U: exact
ROM values are unknown]. soft_reset bit 0 asks the board to reboot.
"""
from .mmio import RegisterFile

IN0_HZ = 26000000

# PLL0 780 MHz: clkr 0, clkf 59, clkod 1, bwadj 59, pwrd 1, out_en 1.
PLL0_RESET = (59 << 4) | (1 << 10) | (59 << 14) | (1 << 21) | (1 << 25)
# PLL1 / PLL2: same fields, powered down.
PLL_OFF = (59 << 4) | (1 << 10) | (59 << 14)

REGISTERS = {
    0x00: ("git_id", 0x4B3E2A1D),
    0x04: ("clk_freq", IN0_HZ),
    0x08: ("pll0", PLL0_RESET),
    0x0C: ("pll1", PLL_OFF),
    0x10: ("pll2", PLL_OFF),
    0x14: ("resv5", 0),
    0x18: ("pll_lock", 0x00010103),
    0x1C: ("rom_error", 0),
    0x20: ("clk_sel0", 0x1),  # aclk_sel = PLL0, aclk_div 0 -> ACLK = PLL0 / 2
    0x24: ("clk_sel1", 0),
    0x28: ("clk_en_cent", 0x3F),
    0x2C: ("clk_en_peri", 0),
    0x30: ("soft_reset", 0),
    0x34: ("peri_reset", 0),
    0x38: ("clk_th0", 0),
    0x3C: ("clk_th1", 0),
    0x40: ("clk_th2", 0),
    0x44: ("clk_th3", 0),
    0x48: ("clk_th4", 0),
    0x4C: ("clk_th5", 0),
    0x50: ("clk_th6", 0),
    0x54: ("misc", 0),
    0x58: ("peri", 0),
    0x5C: ("spi_sleep", 0),
    0x60: ("reset_status", 0x1),
    0x64: ("dma_sel0", 0),
    0x68: ("dma_sel1", 0),
    0x6C: ("power_sel", 0),
}

PLL_LOCKED = 0x3 | (1 << 8) | (1 << 16)


def pll_hz(word, ref=IN0_HZ):
    """Output of a PLL word: F = ref * (clkf+1) / ((clkr+1) * (clkod+1)); bypass passes ref; off gives 0."""
    if word & (1 << 23):  # bypass
        return ref
    if not word & (1 << 21) or not word & (1 << 25):  # powered down or output disabled
        return 0
    clkr = word & 0xF
    clkf = (word >> 4) & 0x3F
    clkod = (word >> 10) & 0xF
    return ref * (clkf + 1) // ((clkr + 1) * (clkod + 1))


class Sysctl(RegisterFile):
    name = "SYSCTL"
    base = 0x50440000
    size = 0x1000
    registers = REGISTERS
    read_only = (0x00, 0x04)

    def read32(self, offset):
        value = RegisterFile.read32(self, offset)
        if offset == 0x18:  # PLLs lock at once; slip_clear bits read back as written
            value |= PLL_LOCKED
        return value

    def write32(self, offset, value):
        RegisterFile.write32(self, offset, value)
        if offset == 0x30 and value & 1:
            self.board.request_reset("guest wrote SYSCTL soft_reset")
        elif offset in (0x08, 0x20):
            self.board.clock_changed()

    def pll0_hz(self):
        return pll_hz(self.regs[0x08])

    def cpu_hz(self):
        """ACLK (= CPU clock): IN0 when aclk_sel = 0, else PLL0 / (2 << aclk_div)."""
        sel0 = self.regs[0x20]
        if not sel0 & 1:
            return IN0_HZ
        return self.pll0_hz() // (2 << ((sel0 >> 1) & 3))

    def ai_hz(self):
        th = (self.regs[0x38] >> 8) & 0xF
        return pll_hz(self.regs[0x0C]) // (th + 1)

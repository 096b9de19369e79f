// SPDX-License-Identifier: Apache-2.0
// K210 clocks: PLL0 and PLL1 with the documented lock sequence, the gates the port needs (k210-board.md section 3).
#include "mmio.h"
#include "sysctl.h"

#define REG(off) (SYSCTL_BASE + (off))

// F = 26 MHz * (clkf + 1) / ((clkr + 1) * (clkod + 1)); bwadj = clkf as in the SDK's solutions.
// 806 MHz: 800 MHz (MaixPy's request) is not reachable from 26 MHz; CPU = 403 MHz.
#define PLL0_CLKR 0u
#define PLL0_CLKF 61u
#define PLL0_CLKOD 1u
// 398.67 MHz for the KPU (MaixPy asks 400 MHz)
#define PLL1_CLKR 0u
#define PLL1_CLKF 45u
#define PLL1_CLKOD 2u

#define PLL_RATIO(r, f, od) (((r) << PLL_CLKR_SHIFT) | ((f) << PLL_CLKF_SHIFT) | ((od) << PLL_CLKOD_SHIFT) \
    | ((f) << PLL_BWADJ_SHIFT))

// > 100 ns at up to 403 MHz (the CPU runs from 26 MHz while PLL0 changes): a few hundred cycles are plenty.
static void short_delay(void) {
    for (volatile int i = 0; i < 200; i++) {
    }
}

static int pll_locked(unsigned pll) {
    uint32_t lock = mmio_read32(REG(SYSCTL_PLL_LOCK));
    return pll == 0 ? (lock & PLL_LOCK0_MASK) == PLL_LOCK0_MASK : (lock & PLL_LOCK1) != 0;
}

static void pll_set(unsigned pll, uint32_t ratio) {
    uintptr_t reg = REG(pll == 0 ? SYSCTL_PLL0 : SYSCTL_PLL1);
    if (pll == 0) {
        // the CPU, and everything on ACLK, runs from IN0 while PLL0 is down
        mmio_clear32(REG(SYSCTL_CLK_SEL0), CLK_SEL0_ACLK_SEL);
    }
    mmio_clear32(reg, PLL_OUT_EN);
    mmio_clear32(reg, PLL_PWRD);
    mmio_write32(reg, (mmio_read32(reg) & ~(PLL_RATIO_MASK | PLL_BYPASS)) | ratio);
    mmio_set32(reg, PLL_PWRD);
    short_delay();
    mmio_clear32(reg, PLL_RESET);
    mmio_set32(reg, PLL_RESET);
    short_delay();
    mmio_clear32(reg, PLL_RESET);
    while (!pll_locked(pll)) {
        mmio_set32(REG(SYSCTL_PLL_LOCK), pll == 0 ? PLL_SLIP_CLEAR0 : PLL_SLIP_CLEAR1);
    }
    mmio_set32(reg, PLL_OUT_EN);
    if (pll == 0) {
        mmio_field32(REG(SYSCTL_CLK_SEL0), CLK_SEL0_ACLK_DIV_MASK, CLK_SEL0_ACLK_DIV_SHIFT, 0); // ACLK = PLL0 / 2
        mmio_set32(REG(SYSCTL_CLK_SEL0), CLK_SEL0_ACLK_SEL);
    }
}

void sysctl_clocks_init(void) {
    pll_set(0, PLL_RATIO(PLL0_CLKR, PLL0_CLKF, PLL0_CLKOD));
    pll_set(1, PLL_RATIO(PLL1_CLKR, PLL1_CLKF, PLL1_CLKOD));
    // KPU: AI clock = PLL1 / 1, then its gate, before any KPU register or AI SRAM access
    mmio_field32(REG(SYSCTL_CLK_TH0), CLK_TH0_AI_MASK, CLK_TH0_AI_SHIFT, 0);
    mmio_set32(REG(SYSCTL_CLK_EN_PERI), CLK_PERI_AI);
}

void sysctl_enable_fpioa(void) {
    mmio_set32(REG(SYSCTL_CLK_EN_CENT), CLK_CENT_APB0);
    mmio_set32(REG(SYSCTL_CLK_EN_PERI), CLK_PERI_FPIOA);
}

void sysctl_enable_spi3(void) {
    // SSI clock = PLL0 / ((0 + 1) * 2) = 403 MHz; APB2 is its bus clock
    mmio_set32(REG(SYSCTL_CLK_SEL0), CLK_SEL0_SPI3_SEL);
    mmio_field32(REG(SYSCTL_CLK_TH1), CLK_TH1_SPI3_MASK, CLK_TH1_SPI3_SHIFT, 0);
    mmio_set32(REG(SYSCTL_CLK_EN_CENT), CLK_CENT_APB2);
    mmio_set32(REG(SYSCTL_CLK_EN_PERI), CLK_PERI_SPI3);
}

uint32_t sysctl_pll_hz(unsigned pll) {
    uint32_t w = mmio_read32(REG(pll == 0 ? SYSCTL_PLL0 : SYSCTL_PLL1));
    uint64_t r = ((w >> PLL_CLKR_SHIFT) & 0xFu) + 1u;
    uint64_t f = ((w >> PLL_CLKF_SHIFT) & 0x3Fu) + 1u;
    uint64_t od = ((w >> PLL_CLKOD_SHIFT) & 0xFu) + 1u;
    return (uint32_t)((uint64_t)SYSCTL_IN0_HZ * f / (r * od));
}

uint32_t sysctl_cpu_hz(void) {
    uint32_t sel = mmio_read32(REG(SYSCTL_CLK_SEL0));
    if (!(sel & CLK_SEL0_ACLK_SEL)) {
        return SYSCTL_IN0_HZ;
    }
    unsigned div = (sel & CLK_SEL0_ACLK_DIV_MASK) >> CLK_SEL0_ACLK_DIV_SHIFT;
    return sysctl_pll_hz(0) / (2u << div);
}

uint32_t sysctl_kpu_hz(void) {
    uint32_t th = (mmio_read32(REG(SYSCTL_CLK_TH0)) & CLK_TH0_AI_MASK) >> CLK_TH0_AI_SHIFT;
    return sysctl_pll_hz(1) / (th + 1u);
}

uint32_t sysctl_spi3_hz(void) {
    uint32_t src = (mmio_read32(REG(SYSCTL_CLK_SEL0)) & CLK_SEL0_SPI3_SEL) ? sysctl_pll_hz(0) : SYSCTL_IN0_HZ;
    uint32_t th = (mmio_read32(REG(SYSCTL_CLK_TH1)) & CLK_TH1_SPI3_MASK) >> CLK_TH1_SPI3_SHIFT;
    return src / ((th + 1u) * 2u);
}

void sysctl_soft_reset(void) {
    mmio_write32(REG(SYSCTL_SOFT_RESET), 1u); // the SoC resets; the boot ROM reloads the firmware from flash
    for (;;) {
    }
}

// SPDX-License-Identifier: Apache-2.0
// K210 SYSCTL (0x50440000): PLLs, clock selects, gates and dividers (k210-board.md section 3).
#ifndef OPENKPU_K210_SYSCTL_H
#define OPENKPU_K210_SYSCTL_H

#include <stdint.h>

#define SYSCTL_BASE 0x50440000u
#define SYSCTL_PLL0 0x08u
#define SYSCTL_PLL1 0x0Cu
#define SYSCTL_PLL_LOCK 0x18u
#define SYSCTL_CLK_SEL0 0x20u
#define SYSCTL_CLK_EN_CENT 0x28u
#define SYSCTL_CLK_EN_PERI 0x2Cu
#define SYSCTL_SOFT_RESET 0x30u
#define SYSCTL_CLK_TH0 0x38u
#define SYSCTL_CLK_TH1 0x3Cu

// PLLn word fields
#define PLL_CLKR_SHIFT 0
#define PLL_CLKF_SHIFT 4
#define PLL_CLKOD_SHIFT 10
#define PLL_BWADJ_SHIFT 14
#define PLL_RATIO_MASK 0x000FFFFFu // clkr, clkf, clkod, bwadj
#define PLL_RESET (1u << 20)
#define PLL_PWRD (1u << 21) // 1 = powered
#define PLL_BYPASS (1u << 23)
#define PLL_OUT_EN (1u << 25)

// pll_lock: PLL0 is locked when both bits [1:0] are set; PLL1 has one bit
#define PLL_LOCK0_MASK 0x3u
#define PLL_SLIP_CLEAR0 (1u << 2)
#define PLL_LOCK1 (1u << 8)
#define PLL_SLIP_CLEAR1 (1u << 10)

// clk_sel0
#define CLK_SEL0_ACLK_SEL (1u << 0) // 0: IN0 26 MHz, 1: PLL0
#define CLK_SEL0_ACLK_DIV_MASK (3u << 1) // ACLK = PLL0 / (2 << n)
#define CLK_SEL0_ACLK_DIV_SHIFT 1
#define CLK_SEL0_SPI3_SEL (1u << 12) // 1: SPI3 clock from PLL0

// clk_en_cent / clk_en_peri bits
#define CLK_CENT_APB0 (1u << 3)
#define CLK_CENT_APB2 (1u << 5)
#define CLK_PERI_AI (1u << 2)
#define CLK_PERI_SPI3 (1u << 9)
#define CLK_PERI_FPIOA (1u << 20)

// clk_th0 / clk_th1 dividers
#define CLK_TH0_AI_MASK (0xFu << 8) // AI clock = PLL1 / (t + 1)
#define CLK_TH0_AI_SHIFT 8
#define CLK_TH1_SPI3_MASK (0xFFu << 24) // SPI3 clock = PLL0 / ((t + 1) * 2)
#define CLK_TH1_SPI3_SHIFT 24

#define SYSCTL_IN0_HZ 26000000u

// Clocks the port sets: PLL0 806 MHz (CPU = ACLK = PLL0 / 2 = 403 MHz), PLL1 398.67 MHz (KPU).
void sysctl_clocks_init(void);
// Frequencies computed from the registers as they are now.
uint32_t sysctl_pll_hz(unsigned pll);
uint32_t sysctl_cpu_hz(void);
uint32_t sysctl_kpu_hz(void);
uint32_t sysctl_spi3_hz(void);
void sysctl_enable_fpioa(void);
void sysctl_enable_spi3(void);
void sysctl_soft_reset(void) __attribute__((noreturn));

#endif

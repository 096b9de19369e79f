// SPDX-License-Identifier: Apache-2.0
// K210 DVP: camera lines, SCCB and polled capture (see dvp.h). Register facts: k210-board.md sections 3, 6, 9.
#include "dvp.h"
#include "clint.h"
#include "fpioa.h"
#include "mmio.h"
#include "sysctl.h"

#define REG(off) (DVP_BASE + (off))

// FPIOA function numbers (the SDK's function table) and the pad words it yields (k210-board.md section 6).
#define PAD_SCCB_SCLK 0x00993092u
#define PAD_SCCB_SDA 0x00993093u
#define PAD_CMOS_XCLK 0x00001F84u
#define PAD_CMOS_RST 0x00001F85u
#define PAD_CMOS_PWDN 0x00001F86u
#define PAD_CMOS_VSYNC 0x00900087u
#define PAD_CMOS_HREF 0x00900088u
#define PAD_CMOS_PCLK 0x00900089u

#define SYSCTL_MISC 0x54u
#define SYSCTL_PERI_RESET 0x34u
#define SYSCTL_POWER_SEL 0x6Cu
#define MISC_SPI_DVP_DATA (1u << 10)
#define CLK_CENT_APB1 (1u << 4)
#define CLK_PERI_DVP (1u << 3)

const dvp_pins_t dvp_maix_pins = { 40, 41, 42, 43, 44, 45, 46, 47 };

static void delay_us(uint32_t us) {
    uint64_t end = clint_mtime() + (uint64_t)us * clint_hz() / 1000000u;
    while (clint_mtime() < end) {
        for (volatile int i = 0; i < 64; i++) {
        }
    }
}

static uint32_t apb1_hz(void) {
    uint32_t sel0 = mmio_read32(SYSCTL_BASE + SYSCTL_CLK_SEL0);
    return sysctl_cpu_hz() / (((sel0 >> 6) & 7u) + 1u);
}

uint32_t dvp_init(const dvp_pins_t *pins, uint32_t xclk_hz) {
    mmio_set32(SYSCTL_BASE + SYSCTL_CLK_EN_CENT, CLK_CENT_APB1);
    mmio_set32(SYSCTL_BASE + SYSCTL_CLK_EN_PERI, CLK_PERI_DVP);
    mmio_set32(SYSCTL_BASE + SYSCTL_PERI_RESET, CLK_PERI_DVP); // same bit numbers as clk_en_peri
    delay_us(10);
    mmio_clear32(SYSCTL_BASE + SYSCTL_PERI_RESET, CLK_PERI_DVP);

    fpioa_set(pins->sda, PAD_SCCB_SDA);
    fpioa_set(pins->scl, PAD_SCCB_SCLK);
    fpioa_set(pins->rst, PAD_CMOS_RST);
    fpioa_set(pins->vsync, PAD_CMOS_VSYNC);
    fpioa_set(pins->pwdn, PAD_CMOS_PWDN);
    fpioa_set(pins->href, PAD_CMOS_HREF);
    fpioa_set(pins->xclk, PAD_CMOS_XCLK);
    fpioa_set(pins->pclk, PAD_CMOS_PCLK);
    mmio_set32(SYSCTL_BASE + SYSCTL_MISC, MISC_SPI_DVP_DATA); // DVP_D0-7 on their dedicated pins
    mmio_set32(SYSCTL_BASE + SYSCTL_POWER_SEL, (1u << 6) | (1u << 7)); // IO36..47 banks at 1.8 V, as MaixPy

    // XCLK = APB1 / ((d + 1) * 2)
    uint32_t apb1 = apb1_hz();
    uint32_t d = xclk_hz ? apb1 / (2u * xclk_hz) : 0;
    d = d ? d - 1u : 0;
    if (d > 0xFF) {
        d = 0xFF;
    }
    uint32_t cmos = d | DVP_CMOS_CLK_EN | DVP_CMOS_RESET;
    // power-down pulse, then a reset pulse (the sensor needs XCLK running meanwhile)
    mmio_write32(REG(DVP_CMOS_CFG), cmos | DVP_CMOS_PWDN);
    delay_us(10000);
    mmio_write32(REG(DVP_CMOS_CFG), cmos);
    delay_us(10000);
    mmio_write32(REG(DVP_CMOS_CFG), cmos & ~DVP_CMOS_RESET);
    delay_us(10000);
    mmio_write32(REG(DVP_CMOS_CFG), cmos);
    delay_us(10000);
    // SCCB clock: SCL low/high counts of APB1 cycles (the largest: the slowest bus)
    mmio_write32(REG(DVP_SCCB_CFG), (0xFFu << 8) | (0xFFu << 16));
    mmio_write32(REG(DVP_AXI), 0); // 1-byte bursts
    mmio_write32(REG(DVP_CFG), 0);
    return apb1 / ((d + 1u) * 2u);
}

static int sccb_go(void) {
    for (uint32_t i = 0; mmio_read32(REG(DVP_STS)) & DVP_STS_SCCB_EN; i++) {
        if (i > 1000000u) {
            return -1;
        }
    }
    mmio_write32(REG(DVP_STS), DVP_STS_SCCB_EN | DVP_STS_SCCB_EN_WE);
    for (uint32_t i = 0; mmio_read32(REG(DVP_STS)) & DVP_STS_SCCB_EN; i++) {
        if (i > 1000000u) {
            return -1;
        }
    }
    return 0;
}

static void sccb_bytes(uint32_t count_code) {
    mmio_write32(REG(DVP_SCCB_CFG), (mmio_read32(REG(DVP_SCCB_CFG)) & ~3u) | count_code);
}

int dvp_sccb_write(uint8_t addr, uint16_t reg, uint8_t value, bool reg16) {
    if (reg16) {
        sccb_bytes(3); // address, register high, register low, data
        mmio_write32(REG(DVP_SCCB_CTL), 1u | addr | ((uint32_t)(reg >> 8) << 8) | ((uint32_t)(reg & 0xFF) << 16) |
            ((uint32_t)value << 24));
    } else {
        sccb_bytes(2); // address, register, data
        mmio_write32(REG(DVP_SCCB_CTL), 1u | addr | ((uint32_t)reg << 8) | ((uint32_t)value << 16));
    }
    return sccb_go();
}

int dvp_sccb_read(uint8_t addr, uint16_t reg, uint8_t *value, bool reg16) {
    // write phase: the register address; then a read phase of one byte
    if (reg16) {
        sccb_bytes(2);
        mmio_write32(REG(DVP_SCCB_CTL), 1u | addr | ((uint32_t)(reg >> 8) << 8) | ((uint32_t)(reg & 0xFF) << 16));
    } else {
        sccb_bytes(1);
        mmio_write32(REG(DVP_SCCB_CTL), 1u | addr | ((uint32_t)reg << 8));
    }
    if (sccb_go() != 0) {
        return -1;
    }
    mmio_write32(REG(DVP_SCCB_CTL), addr | ((uint32_t)(reg & 0xFF) << 8));
    if (sccb_go() != 0) {
        return -1;
    }
    *value = (uint8_t)(mmio_read32(REG(DVP_SCCB_CFG)) >> 24);
    return 0;
}

static int wait_sts(uint32_t bit, uint64_t deadline) {
    while (!(mmio_read32(REG(DVP_STS)) & bit)) {
        if (clint_mtime() > deadline) {
            return -1;
        }
        for (volatile int i = 0; i < 32; i++) {
        }
    }
    return 0;
}

static uint64_t deadline_of(uint32_t ms) {
    return clint_mtime() + (uint64_t)ms * clint_hz() / 1000u;
}

int dvp_wait_frames(unsigned n, uint32_t timeout_ms) {
    uint64_t deadline = deadline_of(timeout_ms);
    for (unsigned i = 0; i < n; i++) {
        mmio_write32(REG(DVP_STS), DVP_STS_FRAME_START | DVP_STS_FRAME_START_WE);
        if (wait_sts(DVP_STS_FRAME_START, deadline) != 0) {
            return -1;
        }
    }
    return 0;
}

int dvp_capture(unsigned w, unsigned h, uint32_t format, uint8_t *r, uint8_t *g, uint8_t *b, uint32_t timeout_ms) {
    mmio_write32(REG(DVP_CFG), format | DVP_CFG_AI_OUT | ((w / 8u) << DVP_CFG_HREF_BURST_SHIFT) |
        (h << DVP_CFG_LINE_NUM_SHIFT));
    // MaixPy hands the DVP the cached addresses; the virtual board accepts either alias
    mmio_write32(REG(DVP_R_ADDR), (uint32_t)(uintptr_t)r);
    mmio_write32(REG(DVP_G_ADDR), (uint32_t)(uintptr_t)g);
    mmio_write32(REG(DVP_B_ADDR), (uint32_t)(uintptr_t)b);
    uint64_t deadline = deadline_of(timeout_ms);
    // the next frame start, then convert that frame (polled variant of MaixPy's interrupt flow)
    mmio_write32(REG(DVP_STS), DVP_STS_FRAME_START | DVP_STS_FRAME_START_WE | DVP_STS_FRAME_FINISH |
        DVP_STS_FRAME_FINISH_WE);
    if (wait_sts(DVP_STS_FRAME_START, deadline) != 0) {
        return -1;
    }
    mmio_write32(REG(DVP_STS), DVP_STS_FRAME_START | DVP_STS_FRAME_START_WE | DVP_STS_DVP_EN | DVP_STS_DVP_EN_WE);
    if (wait_sts(DVP_STS_FRAME_FINISH, deadline) != 0) {
        return -1;
    }
    mmio_write32(REG(DVP_STS), DVP_STS_FRAME_FINISH | DVP_STS_FRAME_FINISH_WE);
    return 0;
}

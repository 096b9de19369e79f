// SPDX-License-Identifier: Apache-2.0
// ST7789 over SPI0 (DesignWare SSI, SPI0 ctrlr0 layout) in octal frame format, polled. Command bytes go out as 8-bit
// "instruction" frames with DCX low; parameters and pixels as 8- or 32-bit frames with DCX high (MaixPy's
// st7789.c / lcd_mcu.c sequence, k210-board.md section 9).
#include "lcd.h"
#include "clint.h"
#include "fpioa.h"
#include "mmio.h"
#include "sysctl.h"

#define SPI0_BASE 0x52000000u
#define SPI_CTRLR0 0x00u
#define SPI_SSIENR 0x08u
#define SPI_SER 0x10u
#define SPI_BAUDR 0x14u
#define SPI_TXFLR 0x20u
#define SPI_SR 0x28u
#define SPI_IMR 0x2Cu
#define SPI_DMACR 0x4Cu
#define SPI_DR 0x60u
#define SPI_SPI_CTRLR0 0xF4u
#define SPI_ENDIAN 0x118u
#define SR_BUSY 0x1u
#define SR_TFE 0x4u
#define FIFO_DEPTH 32u

#define GPIOHS_BASE 0x38001000u
#define GPIOHS_INPUT_EN 0x04u
#define GPIOHS_OUTPUT_EN 0x08u
#define GPIOHS_OUTPUT_VAL 0x0Cu

#define SYSCTL_MISC 0x54u
#define MISC_SPI_DVP_DATA (1u << 10)
#define CLK_CENT_APB2 (1u << 5)
#define CLK_PERI_SPI0 (1u << 6)

#define PAD_SPI0_SS3 0x00001F0Fu
#define PAD_SPI0_SCLK 0x00001F11u
#define PAD_GPIOHS(n) (0x00901F00u + 24u + (n))
#define FUNC_SPI0_ARB 16u

const lcd_pins_t lcd_maix_pins = { 36, 37, 38, 39, 30, 31 };
static lcd_pins_t pins;

static void delay_ms(uint32_t ms) {
    uint64_t end = clint_mtime() + (uint64_t)ms * clint_hz() / 1000u;
    while (clint_mtime() < end) {
        for (volatile int i = 0; i < 64; i++) {
        }
    }
}

static void gpiohs_out(unsigned n, int level) {
    if (level) {
        mmio_set32(GPIOHS_BASE + GPIOHS_OUTPUT_VAL, 1u << n);
    } else {
        mmio_clear32(GPIOHS_BASE + GPIOHS_OUTPUT_VAL, 1u << n);
    }
}

static void spi_wait_idle(void) {
    while ((mmio_read32(SPI0_BASE + SPI_SR) & (SR_BUSY | SR_TFE)) != SR_TFE) {
    }
}

// Set the frame size and the octal enhanced-mode framing: a command is an 8-bit instruction (inst_l 2), data
// frames carry no instruction and an "address" of the frame's own width (addr_l = bits / 4), trans_type 2.
static void spi_setup(unsigned bits, int command) {
    spi_wait_idle();
    mmio_write32(SPI0_BASE + SPI_SSIENR, 0);
    mmio_write32(SPI0_BASE + SPI_CTRLR0, ((bits - 1u) << 16) | (1u << 8) /* tmod tx */ | (3u << 21) /* octal */);
    mmio_write32(SPI0_BASE + SPI_SPI_CTRLR0, command ? ((2u << 8) | 2u) : (((bits / 4u) << 2) | 2u));
    mmio_write32(SPI0_BASE + SPI_SER, 1u << 3); // SS3
    mmio_write32(SPI0_BASE + SPI_SSIENR, 1);
}

static void spi_push(uint32_t frame) {
    while (mmio_read32(SPI0_BASE + SPI_TXFLR) >= FIFO_DEPTH) {
    }
    mmio_write32(SPI0_BASE + SPI_DR, frame);
}

static void write_command(uint8_t cmd) {
    spi_setup(8, 1);
    gpiohs_out(pins.dcx_gpiohs, 0);
    spi_push(cmd);
    spi_wait_idle();
    gpiohs_out(pins.dcx_gpiohs, 1);
}

static void write_bytes(const uint8_t *b, unsigned n) {
    spi_setup(8, 0);
    for (unsigned i = 0; i < n; i++) {
        spi_push(b[i]);
    }
    spi_wait_idle();
}

static void command(uint8_t cmd, const uint8_t *params, unsigned n) {
    write_command(cmd);
    if (n) {
        write_bytes(params, n);
    }
}

uint32_t lcd_init(const lcd_pins_t *p, uint32_t freq, uint8_t madctl, bool invert) {
    pins = *p;
    mmio_set32(SYSCTL_BASE + SYSCTL_CLK_EN_CENT, CLK_CENT_APB2);
    mmio_set32(SYSCTL_BASE + SYSCTL_CLK_EN_PERI, CLK_PERI_SPI0);
    mmio_field32(SYSCTL_BASE + SYSCTL_CLK_TH1, 0xFFu, 0, 0); // SSI clock = PLL0 / 2
    mmio_set32(SYSCTL_BASE + SYSCTL_MISC, MISC_SPI_DVP_DATA);  // SPI0_D0-7 on their dedicated pins
    fpioa_set(pins.cs, PAD_SPI0_SS3);
    fpioa_set(pins.wr, PAD_SPI0_SCLK);
    fpioa_set(pins.rst, PAD_GPIOHS(pins.rst_gpiohs));
    fpioa_set(pins.dcx, PAD_GPIOHS(pins.dcx_gpiohs));
    // SPI0_ARB tied high (tie value, then tie enable), as the SDK's FPIOA init does before SPI0 is a master
    mmio_set32(FPIOA_BASE + 0xE0u + 4u * (FUNC_SPI0_ARB / 32u), 1u << (FUNC_SPI0_ARB % 32u));
    mmio_set32(FPIOA_BASE + 0xC0u + 4u * (FUNC_SPI0_ARB / 32u), 1u << (FUNC_SPI0_ARB % 32u));
    uint32_t mask = (1u << pins.rst_gpiohs) | (1u << pins.dcx_gpiohs);
    mmio_clear32(GPIOHS_BASE + GPIOHS_INPUT_EN, mask);
    mmio_set32(GPIOHS_BASE + GPIOHS_OUTPUT_EN, mask);
    gpiohs_out(pins.dcx_gpiohs, 1);

    uint32_t ssi = sysctl_pll_hz(0) / 2u;
    uint32_t baudr = freq ? ssi / freq : 2u;
    baudr = (baudr + 1u) & ~1u; // even, rounded up: at most `freq`
    if (baudr < 2u) {
        baudr = 2u;
    } else if (baudr > 65534u) {
        baudr = 65534u;
    }
    mmio_write32(SPI0_BASE + SPI_SSIENR, 0);
    mmio_write32(SPI0_BASE + SPI_BAUDR, baudr);
    mmio_write32(SPI0_BASE + SPI_IMR, 0);
    mmio_write32(SPI0_BASE + SPI_DMACR, 0);
    mmio_write32(SPI0_BASE + SPI_ENDIAN, 0);

    gpiohs_out(pins.rst_gpiohs, 0); // hardware reset
    delay_ms(50);
    gpiohs_out(pins.rst_gpiohs, 1);
    delay_ms(50);
    command(0x01, 0, 0); // SWRESET
    delay_ms(50);
    command(0x11, 0, 0); // SLPOUT
    delay_ms(120);
    static const uint8_t colmod = 0x55; // 16 bits per pixel
    command(0x3A, &colmod, 1);
    lcd_set_madctl(madctl);
    command(invert ? 0x21 : 0x20, 0, 0); // INVON / INVOFF
    command(0x13, 0, 0); // NORON
    command(0x29, 0, 0); // DISPON
    return ssi / baudr;
}

void lcd_set_madctl(uint8_t madctl) {
    command(0x36, &madctl, 1);
}

void lcd_window(unsigned x0, unsigned y0, unsigned x1, unsigned y1) {
    uint8_t b[4] = { (uint8_t)(x0 >> 8), (uint8_t)x0, (uint8_t)(x1 >> 8), (uint8_t)x1 };
    command(0x2A, b, 4); // CASET
    b[0] = (uint8_t)(y0 >> 8), b[1] = (uint8_t)y0, b[2] = (uint8_t)(y1 >> 8), b[3] = (uint8_t)y1;
    command(0x2B, b, 4); // RASET
    write_command(0x2C); // RAMWR
}

void lcd_pixels(const uint16_t *px, unsigned n) {
    unsigned i = 0;
    if (n >= 2) {
        spi_setup(32, 0);
        for (; i + 1 < n; i += 2) {
            spi_push(((uint32_t)px[i] << 16) | px[i + 1]);
        }
    }
    if (i < n) {
        spi_setup(16, 0);
        spi_push(px[i]);
    }
    spi_wait_idle();
}

void lcd_fill(unsigned x, unsigned y, unsigned w, unsigned h, uint16_t color) {
    if (!w || !h) {
        return;
    }
    lcd_window(x, y, x + w - 1u, y + h - 1u);
    uint32_t n = (uint32_t)w * h;
    spi_setup(32, 0);
    uint32_t two = ((uint32_t)color << 16) | color;
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        spi_push(two);
    }
    if (n & 1u) {
        spi_setup(16, 0);
        spi_push(color);
    }
    spi_wait_idle();
}

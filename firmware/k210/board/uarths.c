// SPDX-License-Identifier: Apache-2.0
// UARTHS: polled TX, RX by polling or by the rx-watermark interrupt (the console decides).
#include "mmio.h"
#include "uarths.h"

#define REG(off) (UARTHS_BASE + (off))

void uarths_init(uint32_t cpu_hz, uint32_t baud) {
    // the divider follows the CPU clock: call again whenever PLL0 / ACLK changes
    uint32_t div = (cpu_hz + baud / 2u) / baud - 1u;
    mmio_write32(REG(UARTHS_DIV), div);
    mmio_write32(REG(UARTHS_TXCTRL), UARTHS_TXEN); // 1 stop bit, txcnt 0
    mmio_write32(REG(UARTHS_RXCTRL), UARTHS_RXEN); // rxcnt 0
    mmio_write32(REG(UARTHS_IE), 0);
}

void uarths_putc(int c) {
    while (mmio_read32(REG(UARTHS_TXDATA)) & UARTHS_FIFO_FLAG) {
    }
    mmio_write32(REG(UARTHS_TXDATA), (uint8_t)c);
}

void uarths_puts(const char *s) {
    while (*s) {
        uarths_putc(*s++);
    }
}

int uarths_getc(void) {
    uint32_t v = mmio_read32(REG(UARTHS_RXDATA)); // one read: data and the empty flag come together
    return (v & UARTHS_FIFO_FLAG) ? -1 : (int)(v & 0xFFu);
}

void uarths_rx_irq_enable(void) {
    mmio_write32(REG(UARTHS_RXCTRL), UARTHS_RXEN | (0u << UARTHS_CNT_SHIFT));
    mmio_write32(REG(UARTHS_IE), UARTHS_IE_RXWM);
}

void uarths_rx_irq_disable(void) {
    mmio_write32(REG(UARTHS_IE), 0);
}

// SPDX-License-Identifier: Apache-2.0
// K210 UARTHS (0x38000000): SiFive-style UART clocked by the CPU clock, the console on IO4/IO5 (section 4).
#ifndef OPENKPU_K210_UARTHS_H
#define OPENKPU_K210_UARTHS_H

#include <stdint.h>

#define UARTHS_BASE 0x38000000u
#define UARTHS_TXDATA 0x00u // write: byte; read: bit 31 = TX FIFO full
#define UARTHS_RXDATA 0x04u // read pops: byte, bit 31 = was empty
#define UARTHS_TXCTRL 0x08u
#define UARTHS_RXCTRL 0x0Cu
#define UARTHS_IE 0x10u
#define UARTHS_IP 0x14u
#define UARTHS_DIV 0x18u // baud = CPU clock / (div + 1)

#define UARTHS_FIFO_FLAG (1u << 31)
#define UARTHS_TXEN (1u << 0)
#define UARTHS_RXEN (1u << 0)
#define UARTHS_CNT_SHIFT 16 // txcnt / rxcnt watermark
#define UARTHS_IE_RXWM (1u << 1)

#define UARTHS_PLIC_SOURCE 33u

void uarths_init(uint32_t cpu_hz, uint32_t baud);
void uarths_putc(int c);
void uarths_puts(const char *s);
int uarths_getc(void); // -1 when the RX FIFO is empty
void uarths_rx_irq_enable(void); // rxwm with rxcnt = 0: pending while the RX FIFO holds anything
void uarths_rx_irq_disable(void);

#endif

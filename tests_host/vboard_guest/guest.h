/* SPDX-License-Identifier: Apache-2.0 */
/* Register helpers and a polled UARTHS console for the virtual-board test guests. */
#ifndef VBOARD_GUEST_H
#define VBOARD_GUEST_H
#include <stdint.h>

#define REG32(a) (*(volatile uint32_t *)(uintptr_t)(a))
#define REG64(a) (*(volatile uint64_t *)(uintptr_t)(a))

#define UARTHS 0x38000000UL
#define CLINT 0x02000000UL
#define CLINT_MTIMECMP0 (CLINT + 0x4000)
#define CLINT_MTIME (CLINT + 0xBFF8)
#define PLIC 0x0C000000UL
#define SYSCTL 0x50440000UL
#define SPI3 0x54000000UL
#define KPU 0x40800000UL

#define csr_read(r) ({ uint64_t v_; __asm__ volatile("csrr %0, " #r : "=r"(v_)); v_; })
#define csr_write(r, v) __asm__ volatile("csrw " #r ", %0" ::"r"((uint64_t)(v)))
#define csr_set(r, v) __asm__ volatile("csrs " #r ", %0" ::"r"((uint64_t)(v)))
#define csr_clear(r, v) __asm__ volatile("csrc " #r ", %0" ::"r"((uint64_t)(v)))

uint64_t trap(uint64_t mcause, uint64_t mepc);

static inline void uart_init(void) {
    REG32(UARTHS + 0x08) = 1; /* txen */
    REG32(UARTHS + 0x0C) = 1; /* rxen */
}
static inline void putc_(char c) {
    while (REG32(UARTHS + 0x00) & 0x80000000u) {}
    REG32(UARTHS + 0x00) = (uint8_t)c;
}
static inline void puts_(const char *s) { while (*s) putc_(*s++); }
static inline void puthex(uint64_t v) {
    puts_("0x");
    for (int i = 60; i >= 0; i -= 4) putc_("0123456789abcdef"[(v >> i) & 15]);
}
static inline void putdec(uint64_t v) {
    char b[24]; int n = 0;
    do { b[n++] = '0' + v % 10; v /= 10; } while (v);
    while (n) putc_(b[--n]);
}
static inline int getc_(void) { /* -1 when empty */
    uint32_t v = REG32(UARTHS + 0x04);
    return (v & 0x80000000u) ? -1 : (int)(v & 0xFF);
}
static inline int getc_wait(void) { int c; while ((c = getc_()) < 0) {} return c; }
static inline void halt(void) { for (;;) __asm__ volatile("wfi"); }
#endif

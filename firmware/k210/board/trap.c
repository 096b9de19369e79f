// SPDX-License-Identifier: Apache-2.0
// Trap dispatch (start.S saves x1-x31, f0-f31 and fcsr, then calls trap_handler): machine external interrupts go
// through the PLIC, a timer interrupt is silenced, any synchronous exception is fatal: it is reported on the
// console and the hart stops (continuing after e.g. a misaligned access the chip does not emulate would be wrong).
#include <stdint.h>

#include "board.h"
#include "clint.h"
#include "plic.h"
#include "uarths.h"

#define MCAUSE_INTERRUPT (1ul << 63)
#define IRQ_M_TIMER 7u
#define IRQ_M_EXT 11u

void board_uarths_irq(void);
void trap_handler(uintptr_t mcause, uintptr_t mepc, uintptr_t mtval, const uintptr_t *frame);

static const char *const exception_names[] = {
    "instruction address misaligned", "instruction access fault", "illegal instruction", "breakpoint",
    "load address misaligned", "load access fault", "store address misaligned", "store access fault",
    "ecall from U-mode", "ecall from S-mode", "reserved", "ecall from M-mode",
};

static void put_hex(const char *name, uintptr_t v) {
    uarths_puts(name);
    uarths_puts("=0x");
    for (int shift = 60; shift >= 0; shift -= 4) {
        uarths_putc("0123456789abcdef"[(v >> shift) & 0xFu]);
    }
}

static void fatal(uintptr_t mcause, uintptr_t mepc, uintptr_t mtval, const uintptr_t *frame) {
    uarths_puts("\r\nFATAL: ");
    uintptr_t code = mcause & ~MCAUSE_INTERRUPT;
    if (mcause & MCAUSE_INTERRUPT) {
        uarths_puts("unexpected interrupt");
    } else if (code < sizeof(exception_names) / sizeof(exception_names[0])) {
        uarths_puts(exception_names[code]);
    } else {
        uarths_puts("exception");
    }
    put_hex(" mcause", mcause);
    put_hex(" mepc", mepc);
    put_hex(" mtval", mtval);
    put_hex("\r\n       ra", frame[1]);
    put_hex(" sp", frame[2]);
    uarths_puts("\r\nhalted: press RESET\r\n");
    for (;;) {
        __asm__ volatile ("csrc mstatus, %0\n\twfi" : : "r" (MSTATUS_MIE));
    }
}

void trap_handler(uintptr_t mcause, uintptr_t mepc, uintptr_t mtval, const uintptr_t *frame) {
    if (!(mcause & MCAUSE_INTERRUPT)) {
        fatal(mcause, mepc, mtval, frame);
    }
    switch (mcause & ~MCAUSE_INTERRUPT) {
        case IRQ_M_EXT:
            for (uint32_t id; (id = plic_claim()) != 0;) {
                if (id == UARTHS_PLIC_SOURCE) {
                    board_uarths_irq();
                }
                plic_complete(id);
            }
            break;
        case IRQ_M_TIMER:
            clint_timer_irq();
            break;
        default:
            fatal(mcause, mepc, mtval, frame); // never enabled in mie
    }
}

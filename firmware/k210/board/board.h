// SPDX-License-Identifier: Apache-2.0
// openkpu K210 board layer: what the MicroPython port calls.
#ifndef OPENKPU_K210_BOARD_H
#define OPENKPU_K210_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BOARD_CONSOLE_BAUD 115200u

// mstatus / mie bits (privileged spec 1.9.1 and later agree on these)
#define MSTATUS_MIE (1u << 3)
#define MIE_MEIE (1u << 11)

// Clocks, FPIOA, UARTHS console, CLINT, PLIC with the UARTHS RX interrupt, SPI3 flash; interrupts on.
void board_init(void);

// The console's receive ring, filled by the UARTHS RX interrupt and by board_console_poll().
int board_console_getc(void); // -1 when empty
bool board_console_pending(void);
void board_console_idle(void); // wfi unless input is waiting
bool board_console_irq_seen(void); // the RX interrupt has delivered bytes (it works on this board)
void board_console_poll(void); // drain the UART into the ring (interrupts masked meanwhile)
void board_console_rx_byte(int c); // the port's hook for one received byte (Ctrl-C handling)
void board_console_put(int c); // into the ring

// Linker-script symbols as sizes
size_t board_gc_heap_size(void);
void *board_gc_heap_start(void);
size_t board_c_heap_size(void);
size_t board_c_heap_free(void);
size_t board_stack_size(void);

static inline unsigned long board_irq_save(void) {
    unsigned long s;
    __asm__ volatile ("csrrc %0, mstatus, %1" : "=r" (s) : "r" (MSTATUS_MIE) : "memory");
    return s & MSTATUS_MIE;
}

static inline void board_irq_restore(unsigned long s) {
    __asm__ volatile ("csrs mstatus, %0" : : "r" (s) : "memory");
}

#endif

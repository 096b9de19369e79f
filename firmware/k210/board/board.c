// SPDX-License-Identifier: Apache-2.0
// openkpu K210 board bring-up (after start.S): clocks, console pins and UART, interrupt controller, flash; the
// console's receive ring; what picolibc needs from the platform (stdio streams, _exit, gettimeofday).
#include <stdio.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/time.h>

#include "board.h"
#include "clint.h"
#include "fpioa.h"
#include "plic.h"
#include "spi3_flash.h"
#include "sysctl.h"
#include "uarths.h"

extern char __gc_heap_start[], __gc_heap_end[], __heap_start[], __heap_end[], __stack0_bottom[], __stack0_top[];

void board_init(void) {
    sysctl_clocks_init();
    uint32_t cpu_hz = sysctl_cpu_hz();
    sysctl_enable_fpioa();
    fpioa_set(BOARD_IO_UARTHS_RX, FPIOA_UARTHS_RX);
    fpioa_set(BOARD_IO_UARTHS_TX, FPIOA_UARTHS_TX);
    uarths_init(cpu_hz, BOARD_CONSOLE_BAUD); // after PLL0: the divider follows the CPU clock
    clint_init(cpu_hz);
    sysctl_enable_spi3();
    spi3_flash_init(sysctl_spi3_hz());

    plic_init();
    plic_enable(UARTHS_PLIC_SOURCE, 1);
    uarths_rx_irq_enable();
    __asm__ volatile ("csrs mie, %0" : : "r" (MIE_MEIE));
    __asm__ volatile ("csrs mstatus, %0" : : "r" (MSTATUS_MIE));
}

// ---- console receive ring: the UARTHS RX interrupt and polling both feed it ------------------------------------

#define RX_RING_SIZE 1024u // > MicroPython's 256-byte raw-paste window
static volatile uint8_t rx_ring[RX_RING_SIZE];
static volatile unsigned rx_head, rx_tail; // head: next write; tail: next read

void board_console_put(int c) {
    unsigned next = (rx_head + 1u) % RX_RING_SIZE;
    if (next != rx_tail) { // full: the byte is lost, as it would be in the UART
        rx_ring[rx_head] = (uint8_t)c;
        rx_head = next;
    }
}

bool board_console_pending(void) {
    return rx_tail != rx_head;
}

int board_console_getc(void) {
    if (rx_tail == rx_head) {
        return -1;
    }
    int c = rx_ring[rx_tail];
    rx_tail = (rx_tail + 1u) % RX_RING_SIZE;
    return c;
}

static bool rx_irq_masked; // by the handler, when the ring filled up

static bool ring_full(void) {
    return (rx_head + 1u) % RX_RING_SIZE == rx_tail;
}

// Move received bytes from the UART to the ring while there is room. With the ring full the bytes stay in the UART
// (whose own FIFO then overflows on the chip; a host feeding the virtual board faster than the REPL reads loses
// nothing).
static void drain_uart(void) {
    for (int c; !ring_full() && (c = uarths_getc()) >= 0;) {
        board_console_rx_byte(c);
    }
}

// The interrupt handler and polling both pop the UART and push the ring: polling masks interrupts meanwhile. The
// reader calls this, so it is where the RX interrupt, masked by a full ring, comes back.
void board_console_poll(void) {
    unsigned long s = board_irq_save();
    drain_uart();
    if (rx_irq_masked && !ring_full()) {
        rx_irq_masked = false;
        uarths_rx_irq_enable();
    }
    board_irq_restore(s);
}

// Set once the UARTHS interrupt has delivered input: from then on a wait for input may sleep in wfi.
static volatile bool rx_irq_seen;

bool board_console_irq_seen(void) {
    return rx_irq_seen;
}

// Sleep until an interrupt unless input is already there. Checked with interrupts masked: a byte arriving between
// the check and wfi keeps its interrupt pending, and wfi returns at once (it wakes on mip & mie, whatever
// mstatus.MIE says); the handler runs when MIE comes back on.
void board_console_idle(void) {
    unsigned long s = board_irq_save();
    if (!board_console_pending()) {
        __asm__ volatile ("wfi");
    }
    board_irq_restore(s);
}

void board_uarths_irq(void) {
    rx_irq_seen = true;
    drain_uart();
    if (ring_full()) {
        rx_irq_masked = true;
        uarths_rx_irq_disable(); // rxwm stays pending while bytes wait: mask it until the reader makes room
    }
}

// ---- memory figures ----------------------------------------------------------------------------------------------

void *board_gc_heap_start(void) {
    return __gc_heap_start;
}

size_t board_gc_heap_size(void) {
    return (size_t)(__gc_heap_end - __gc_heap_start);
}

size_t board_c_heap_size(void) {
    return (size_t)(__heap_end - __heap_start);
}

// Never handed to malloc yet (above the break) + free blocks malloc holds.
size_t board_c_heap_free(void) {
    char *brk = sbrk(0);
    struct mallinfo mi = mallinfo();
    return (size_t)(__heap_end - brk) + (size_t)mi.fordblks;
}

size_t board_stack_size(void) {
    return (size_t)(__stack0_top - __stack0_bottom);
}

// ---- picolibc platform hooks --------------------------------------------------------------------------------------

static int console_putc(char c, FILE *f) {
    (void)f;
    if (c == '\n') {
        uarths_putc('\r');
    }
    uarths_putc(c);
    return (unsigned char)c;
}

static FILE console_out = FDEV_SETUP_STREAM(console_putc, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = NULL; // the console is read through MicroPython's HAL, not stdio
FILE *const stdout = &console_out;
FILE *const stderr = &console_out;

void _exit(int status) {
    (void)status;
    uarths_puts("\r\nFATAL: _exit called; resetting\r\n");
    sysctl_soft_reset();
}

// No RTC is set up: the epoch is the boot.
int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    uint64_t t = clint_mtime();
    uint32_t hz = clint_hz();
    tv->tv_sec = (time_t)(t / hz);
    tv->tv_usec = (suseconds_t)((t % hz) * 1000000u / hz);
    return 0;
}

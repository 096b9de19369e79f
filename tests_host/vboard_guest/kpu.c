/* SPDX-License-Identifier: Apache-2.0 */
/* KPU register block from the guest side, chosen by one UART byte:
   r = 64-bit writes and reads (sd/ld) of several registers, then 12 FIFO words and the calc_done interrupt
       through PLIC source 25, cleared with interrupt_clear;
   p = 12 FIFO words of a layer whose tables lie outside SRAM (the device model refuses it: the board stops). */
#include "guest.h"

volatile int irqs, claimed_id = -1;
volatile uint64_t status_in_irq;

uint64_t trap(uint64_t mcause, uint64_t mepc) {
    if (mcause == ((1ULL << 63) | 11)) {
        int id = REG32(PLIC + 0x200004);
        claimed_id = id;
        status_in_irq = REG64(KPU + 0x08);
        REG64(KPU + 0x20) = 7;            /* interrupt_clear */
        irqs++;
        REG32(PLIC + 0x200004) = id;
        return mepc;
    }
    puts_("TRAP "); puthex(mcause); halt();
    return mepc;
}

static void rw_test(void) {
    REG64(KPU + 0x28) = 0x1122334455667788ULL;  /* fifo_threshold */
    REG64(KPU + 0x40) = 1;                      /* eight_bit_mode */
    REG64(KPU + 0x18) = 0xFFFFFFFF00000006ULL;  /* interrupt_mask: calc_done unmasked */
    puts_("R28 "); puthex(REG64(KPU + 0x28));
    puts_(" R30 "); puthex(REG64(KPU + 0x30));
    puts_(" R30 "); puthex(REG64(KPU + 0x30));
    puts_("\r\n");
    REG32(PLIC + 4 * 25) = 1;
    REG32(PLIC + 0x2000) = 1u << 25;
    REG32(PLIC + 0x200000) = 0;
    csr_set(mie, 1 << 11);
    csr_set(mstatus, 8);
    for (uint64_t i = 0; i < 12; i++) REG64(KPU + 0x00) = 0xA5A5000000000000ULL | (i << 32) | i;
    while (!irqs) {}
    puts_("KPUIRQ id="); putdec(claimed_id); puts_(" status="); puthex(status_in_irq);
    puts_(" after="); puthex(REG64(KPU + 0x08)); puts_("\r\nDONE\r\n");
}

static void bad_layer(void) {
    REG64(KPU + 0x20) = 7;
    for (int i = 0; i < 12; i++) {
        uint64_t w = 0;
        if (i == 2) w = 0;                               /* 1 input, 1 output channel */
        if (i == 3) w = (3ULL) | (3ULL << 10) | (3ULL << 32) | (3ULL << 42); /* 4x4 -> 4x4 */
        if (i == 4) w = 0xF0000000ULL << 32;             /* bwsx_base_addr far outside SRAM */
        if (i == 5) w = 0xF0000000ULL << 32;             /* para_start_addr */
        if (i == 7) w = 0xF0000000ULL << 32;             /* active_addr */
        REG64(KPU + 0x00) = w;
    }
    puts_("PUSHED\r\n");
}

int main(void) {
    uart_init();
    REG32(SYSCTL + 0x2C) |= 1u << 2;  /* AI clock */
    puts_("READY\r\n");
    for (;;) {
        int c = getc_wait();
        if (c == 'r') rw_test();
        if (c == 'p') bad_layer();
    }
    return 0;
}

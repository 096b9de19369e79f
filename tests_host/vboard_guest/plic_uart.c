/* SPDX-License-Identifier: Apache-2.0 */
/* PLIC + UARTHS: the rx watermark interrupt (source 33) claimed and completed by the external-interrupt handler. */
#include "guest.h"

volatile char buf[16];
volatile int n, claims, last_id, extra_claim = -1;
volatile uint64_t cause;

uint64_t trap(uint64_t mcause, uint64_t mepc) {
    cause = mcause;
    int id = REG32(PLIC + 0x200004);          /* claim */
    last_id = id;
    claims++;
    int c;
    while ((c = getc_()) >= 0 && n < 15) buf[n++] = (char)c;
    extra_claim = REG32(PLIC + 0x200004);     /* nothing else pending: 0 */
    REG32(PLIC + 0x200004) = id;              /* complete */
    return mepc;
}

int main(void) {
    uart_init();
    for (int s = 1; s < 66; s++) REG32(PLIC + 4 * s) = 0;
    REG32(PLIC + 4 * 33) = 1;                 /* priority */
    REG32(PLIC + 0x2000) = 0;
    REG32(PLIC + 0x2004) = 1u << (33 - 32);   /* enable source 33 for target 0 */
    REG32(PLIC + 0x2008) = 0;
    REG32(PLIC + 0x200000) = 0;               /* threshold */
    REG32(UARTHS + 0x0C) = 1;                 /* rxen, rxcnt 0: pending while the fifo holds > 0 */
    REG32(UARTHS + 0x10) = 2;                 /* ie.rxwm */
    puts_("PENDING_BEFORE "); putdec(REG32(PLIC + 0x1004)); puts_("\r\n");
    csr_set(mie, 1 << 11);
    csr_set(mstatus, 8);
    puts_("READY\r\n");
    /* the firmware's idle idiom: mask, check, wfi (wakes on a pending interrupt whatever MIE says), unmask:
       the interrupt must be taken right after the unmask */
    while (n < 3) {
        csr_clear(mstatus, 8);
        if (n < 3) __asm__ volatile("wfi");
        csr_set(mstatus, 8);
    }
    csr_clear(mstatus, 8);
    buf[n] = 0;
    puts_("GOT "); puts_((const char *)buf);
    puts_(" id="); putdec(last_id);
    puts_(" claims="); putdec(claims);
    puts_(" extra="); putdec(extra_claim);
    puts_(" cause="); puthex(cause);
    puts_(" ip="); putdec(REG32(UARTHS + 0x14));
    puts_("\r\nDONE\r\n");
    halt();
    return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* CLINT: mtime rate against a loop of known length, then a machine timer interrupt taken through the trap entry
   (direct mtvec), then the same through a vectored mtvec (entry 7), then one awaited in a wfi loop. */
#include "guest.h"

volatile uint64_t got_cause, got_epc, got_mtime, got_mstatus, vectored_hits, hits;

__asm__(".align 8\n.globl vectors\nvectors:\n"
        ".rept 7\n j trap_entry\n.endr\n"           /* entries 0..6 */
        " j vec_timer\n"                            /* entry 7: machine timer */
        ".rept 4\n j trap_entry\n.endr\n"
        "vec_timer:\n"
        " addi sp, sp, -16\n sd t0, 0(sp)\n sd t1, 8(sp)\n"
        " la t0, vectored_hits\n ld t1, 0(t0)\n addi t1, t1, 1\n sd t1, 0(t0)\n"
        " ld t0, 0(sp)\n ld t1, 8(sp)\n addi sp, sp, 16\n"
        " j trap_entry\n");
extern char vectors[], trap_entry[];

uint64_t trap(uint64_t mcause, uint64_t mepc) {
    got_cause = mcause;
    got_epc = mepc;
    got_mtime = REG64(CLINT_MTIME);
    got_mstatus = csr_read(mstatus);
    REG64(CLINT_MTIMECMP0) = ~0ULL; /* clears MTIP */
    hits++;
    return mepc;
}

static void spin(uint64_t n) { /* exactly 2 instructions per iteration */
    __asm__ volatile("1: addi %0, %0, -1\n bnez %0, 1b" : "+r"(n));
}

static void one_timer(uint64_t delay, int sleep) {
    uint64_t h = hits;
    uint64_t cmp = REG64(CLINT_MTIME) + delay;
    REG64(CLINT_MTIMECMP0) = cmp;
    csr_set(mie, 1 << 7);
    csr_set(mstatus, 8);
    while (hits == h) { if (sleep) __asm__ volatile("wfi"); }
    csr_clear(mie, 1 << 7);
    puts_("TIMER cause="); puthex(got_cause);
    puts_(" late="); putdec(got_mtime - cmp);
    puts_(" mstatus_in="); puthex(got_mstatus);
    puts_(" mstatus_after="); puthex(csr_read(mstatus));
    puts_(" epc_in_ram="); putdec(got_epc >= 0x80000000 && got_epc < 0x80800000);
    puts_("\r\n");
    csr_clear(mstatus, 8);
}

int main(void) {
    uart_init();
    uint64_t t0 = REG64(CLINT_MTIME);
    spin(5000000);
    uint64_t t1 = REG64(CLINT_MTIME);
    puts_("DELTA "); putdec(t1 - t0); puts_("\r\n");
    one_timer(2000, 0);
    csr_write(mtvec, (uint64_t)vectors | 1);
    one_timer(3000, 0);
    csr_write(mtvec, (uint64_t)trap_entry);
    one_timer(25000, 1); /* asleep in wfi until the timer: the board wakes it exactly at the deadline */
    puts_("VECTORED "); putdec(vectored_hits); puts_("\r\nDONE\r\n");
    halt();
    return 0;
}

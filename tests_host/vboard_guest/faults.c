/* SPDX-License-Identifier: Apache-2.0 */
/* Exceptions and board stops, chosen by one UART byte: i = illegal 32-bit, c = illegal 16-bit (c.unimp),
   e = ecall, f = FP with mstatus.FS off (trap entry; the handler prints mcause and mepc, then skips the
   instruction); b = ebreak, r = read of the unmodelled AES block, w = write of an unmodelled SYSCTL register,
   k = a lone 32-bit write to a KPU register (the board stops). */
#include "guest.h"

uint64_t trap(uint64_t mcause, uint64_t mepc) {
    puts_("EXC cause="); puthex(mcause); puts_(" epc="); puthex(mepc);
    puts_(" mstatus="); puthex(csr_read(mstatus)); puts_("\r\n");
    uint16_t low = *(volatile uint16_t *)mepc;
    return mepc + ((low & 3) == 3 ? 4 : 2);
}

int main(void) {
    uart_init();
    puts_("READY\r\n");
    for (;;) {
        int c = getc_wait();
        uint32_t v = 0;
        switch (c) {
        case 'i': __asm__ volatile(".globl ill32\nill32: .4byte 0x0000006b"); break;
        case 'c': __asm__ volatile(".globl ill16\nill16: .2byte 0x0000"); break;
        case 'e': __asm__ volatile(".globl ecall_here\necall_here: ecall"); break;
        case 'f': __asm__ volatile(".globl fp_here\nfp_here: fadd.d f0, f1, f2"); break;
        case 'b': __asm__ volatile(".globl ebreak_here\nebreak_here: ebreak"); break;
        case 'r': __asm__ volatile(".globl bad_read\nbad_read: lw %0, 0(%1)" : "=r"(v) : "r"(0x50450000UL)); break;
        case 'w': __asm__ volatile(".globl bad_write\nbad_write: sw %0, 0x100(%1)" :: "r"(0x55u), "r"(SYSCTL)); break;
        case 'k': __asm__ volatile(".globl lone_sw\nlone_sw: sw %0, 0x20(%1)" :: "r"(7u), "r"(KPU)); break;
        default: continue;
        }
        puts_("AFTER "); putc_((char)c); puts_(" "); puthex(v); puts_("\r\n");
    }
    return 0;
}

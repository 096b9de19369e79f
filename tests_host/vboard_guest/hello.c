/* SPDX-License-Identifier: Apache-2.0 */
/* Boots, prints, then echoes UART input back uppercased until Ctrl-D (UART echo test, boot tests). */
#include "guest.h"

uint64_t trap(uint64_t mcause, uint64_t mepc) { puts_("TRAP "); puthex(mcause); halt(); return mepc; }

int main(void) {
    uart_init();
    puts_("HELLO vboard\r\n");
    for (;;) {
        int c = getc_wait();
        if (c == 4) break;
        if (c >= 'a' && c <= 'z') c -= 32;
        putc_((char)c);
    }
    puts_("\r\nBYE\r\n");
    halt();
    return 0;
}

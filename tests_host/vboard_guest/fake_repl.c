/* SPDX-License-Identifier: Apache-2.0 */
/* Speaks MicroPython's raw-REPL protocol without Python, so the `vboard run` plumbing is tested without the
   firmware: ">>> " prompt; Ctrl-A -> banner; the script up to Ctrl-D is answered with "OK", its text echoed as
   stdout, then an exception text when it contains '!', each part ended by Ctrl-D, then the ">" prompt. */
#include "guest.h"

uint64_t trap(uint64_t mcause, uint64_t mepc) { puts_("TRAP "); puthex(mcause); halt(); return mepc; }

static char script[4096];

int main(void) {
    uart_init();
    puts_("fake firmware\r\n>>> ");
    for (;;) {
        int c = getc_wait();
        if (c != 1) continue;
        puts_("raw REPL; CTRL-B to exit\r\n>");
        for (;;) {
            int n = 0, bang = 0;
            while ((c = getc_wait()) != 4) { if (n < 4095) script[n++] = (char)c; if (c == '!') bang = 1; }
            script[n] = 0;
            puts_("OK");
            for (int i = 0; i < n; i++) { if (script[i] == '\n') putc_('\r'); putc_(script[i]); }
            putc_(4);
            if (bang) puts_("Traceback (most recent call last):\r\nValueError: bang\r\n");
            putc_(4);
            putc_('>');
        }
    }
    return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* SPI3 + NOR flash, polled as in k210-board.md section 7: JEDEC / 0x90 ids, 0x03 reads with 8-, 16- and 32-bit
   frames, 0x0B fast read, status, write-enable + sector erase + page program. */
#include "guest.h"

#define SSI(o) REG32(SPI3 + (o))

static void setup(uint32_t ctrlr0, uint32_t ndf) {
    SSI(0x08) = 0; SSI(0x00) = ctrlr0; SSI(0x14) = 16; SSI(0x04) = ndf; SSI(0x2C) = 0; SSI(0x4C) = 0;
    SSI(0xF4) = 0; SSI(0x118) = 0; SSI(0x10) = 0; SSI(0x08) = 1;
}
static void finish(void) { SSI(0x10) = 0; SSI(0x08) = 0; }

/* EEPROM mode with frames of `bits`: send ncmd frames, receive n frames. */
static void eeprom(int bits, const uint32_t *cmd, int ncmd, uint32_t *out, int n) {
    setup(0x0C00 | (bits - 1), n - 1);
    for (int i = 0; i < ncmd; i++) SSI(0x60) = cmd[i];
    SSI(0x10) = 1;
    int got = 0;
    while (got < n) { int k = SSI(0x24); while (k-- > 0) out[got++] = SSI(0x60); }
    finish();
}
static void tx_only(const uint8_t *b, int n) {
    setup(0x0400 | 7, 0);
    for (int i = 0; i < n; i++) SSI(0x60) = b[i];
    SSI(0x10) = 1;
    while ((SSI(0x28) & 5) != 4) {}  /* tfe, not busy */
    finish();
}
static uint32_t status(void) { uint32_t c = 0x05, s; eeprom(8, &c, 1, &s, 1); return s; }
uint64_t trap(uint64_t mcause, uint64_t mepc) { puts_("TRAP "); puthex(mcause); halt(); return mepc; }
static void put8(uint32_t v) { putc_("0123456789abcdef"[(v >> 4) & 15]); putc_("0123456789abcdef"[v & 15]); }
static void put32(uint32_t v) { put8(v >> 24); put8(v >> 16); put8(v >> 8); put8(v); }

int main(void) {
    uint32_t out[16];
    uart_init();
    REG32(SYSCTL + 0x2C) |= 1u << 9;       /* spi3 clock */
    uint32_t jedec = 0x9F; eeprom(8, &jedec, 1, out, 3);
    puts_("JEDEC "); for (int i = 0; i < 3; i++) put8(out[i]);
    uint32_t mid[4] = {0x90, 0, 0, 0}; eeprom(8, mid, 4, out, 2);
    puts_("\r\nMID "); put8(out[0]); put8(out[1]);
    uint32_t rd[4] = {0x03, 0x10, 0x00, 0x00}; eeprom(8, rd, 4, out, 16);
    puts_("\r\nR8 "); for (int i = 0; i < 16; i++) put8(out[i]);
    uint32_t rd16[2] = {0x0310, 0x0002}; eeprom(16, rd16, 2, out, 4);
    puts_("\r\nR16 "); for (int i = 0; i < 4; i++) { put8(out[i] >> 8); put8(out[i]); }
    uint32_t rd32 = 0x03100004; eeprom(32, &rd32, 1, out, 3);
    puts_("\r\nR32 "); for (int i = 0; i < 3; i++) { put32(out[i]); putc_(' '); }
    uint32_t fr[5] = {0x0B, 0x10, 0x00, 0x08, 0xFF}; eeprom(8, fr, 5, out, 8);
    puts_("\r\nFAST "); for (int i = 0; i < 8; i++) put8(out[i]);
    puts_("\r\nSR "); put8(status());
    uint8_t wren = 0x06; tx_only(&wren, 1);
    puts_(" WEL "); put8(status());
    uint8_t erase[4] = {0x20, 0x20, 0x00, 0x00}; tx_only(erase, 4);
    while (status() & 1) {}
    tx_only(&wren, 1);
    uint8_t prog[8] = {0x02, 0x20, 0x00, 0x10, 0x12, 0x34, 0x56, 0x78}; tx_only(prog, 8);
    while (status() & 1) {}
    uint32_t back[4] = {0x03, 0x20, 0x00, 0x0E}; eeprom(8, back, 4, out, 8);
    puts_("\r\nPE "); for (int i = 0; i < 8; i++) put8(out[i]);
    uint8_t nowren[8] = {0x02, 0x20, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00}; tx_only(nowren, 8); /* no WEL: ignored */
    eeprom(8, back, 4, out, 8);
    puts_("\r\nNOWEL "); for (int i = 0; i < 8; i++) put8(out[i]);
    puts_("\r\nDONE\r\n");
    halt();
    return 0;
}

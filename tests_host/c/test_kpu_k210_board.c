// SPDX-License-Identifier: Apache-2.0
/* The board's own port of the K210 backend (kpu_k210.c as a board build compiles it, with OKPU_HAVE_K210_HW),
 * checked on the host without touching the chip: where the CPU reaches the KPU RAM, and which addresses the KPU
 * is given for tables in main SRAM. Nothing here reads or writes a chip address. */
#include <stdint.h>

#include "../../c_src/kpu/kpu_backend.h"
#include "ctest.h"

/* What a board build provides (the firmware: CLINT mtime); here a clock the test sets. */
static uint64_t board_clock_us;

uint64_t okpu_board_time_us(void)
{
    return board_clock_us;
}

static int kpu_address_of(const okpu_k210_port *port, uintptr_t cpu_address, uint32_t *kpu_address)
{
    return port->kpu_address(port->ctx, (const void *)cpu_address, kpu_address);
}

int main(void)
{
    const okpu_k210_port *port = okpu_k210_board_port();
    uint32_t addr = 0;

    /* the uncached alias, as the SDK (AI_IO_BASE_ADDR) and nncase's K210 runtime use: through the cached alias
     * 0x80600000 the CPU's data cache sits between the CPU and the KPU's reads and writes */
    CHECK((uintptr_t)port->kpu_ram == 0x40600000u, "KPU RAM seen by the CPU at %p", (void *)port->kpu_ram);
    CHECK(port->read_reg && port->write_reg && port->kpu_address && port->max_polls == 0,
          "a complete port with the default poll limit");
    /* the wait for calc_done is bounded by the board's clock, with the default timeout */
    board_clock_us = 123456789u;
    CHECK(port->now_us && port->now_us(port->ctx) == 123456789u && port->timeout_us == 0,
          "the port waits on okpu_board_time_us() with the default timeout");
    /* tables in main SRAM (0x80000000..0x805fffff) are given to the KPU at CPU address - 0x40000000 */
    CHECK(kpu_address_of(port, 0x80000000u, &addr) == 0 && addr == 0x40000000u, "start of SRAM -> 0x%lx",
          (unsigned long)addr);
    CHECK(kpu_address_of(port, 0x805ffff8u, &addr) == 0 && addr == 0x405ffff8u, "end of SRAM -> 0x%lx",
          (unsigned long)addr);
    /* refused: the KPU RAM itself, main SRAM through its uncached alias, below SRAM */
    CHECK(kpu_address_of(port, 0x80600000u, &addr) != 0, "KPU RAM is not a table address");
    CHECK(kpu_address_of(port, 0x40001000u, &addr) != 0, "the uncached alias of main SRAM is refused");
    CHECK(kpu_address_of(port, 0x1000u, &addr) != 0, "an address below SRAM is refused");
    return ctest_summary();
}

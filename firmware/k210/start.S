// SPDX-License-Identifier: Apache-2.0
// openkpu K210 start-up: the boot ROM copies firmware.bin to 0x80000000 and starts both harts here.
// Hart 0 runs the port; hart 1 parks at once without touching memory.

#define MSTATUS_MIE 0x8
#define MSTATUS_FS_INITIAL 0x2000
#define FRAME_WORDS 66 // x0-x31 (x0 slot unused), f0-f31, fcsr, pad: 528 bytes, a multiple of 16

    .section .text.start, "ax"
    .globl _start
_start:
    csrw mie, zero
    csrci mstatus, MSTATUS_MIE
    csrr t0, mhartid
    bnez t0, park_hart

    // gp must be set with relaxation off, or the linker turns this into "mv gp, gp"
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack0_top
    li t0, MSTATUS_FS_INITIAL // FP on: the port is built for lp64d; FP instructions trap while FS is off
    csrs mstatus, t0
    fscsr zero
    la t0, trap_entry
    csrw mtvec, t0

    // zero .tbss and .bss (both 8-byte aligned by k210.ld); .data and .tdata came with the image
    la t0, __bss_zero_start
    la t1, __bss_zero_end
1:  bgeu t0, t1, 2f
    sd zero, 0(t0)
    addi t0, t0, 8
    j 1b
2:
    // TLS (picolibc's errno): the linked .tdata/.tbss is hart 0's block; RISC-V tp points at its start
    la tp, __tls_base
    call main
    j park_hart

park_hart:
    la t0, park_trap
    csrw mtvec, t0
park_loop:
    wfi // mie = 0: nothing wakes it for good; a spurious wake-up loops
    j park_loop

    .align 2
park_trap:
    j park_loop

// Trap entry (mtvec direct mode): save everything an interrupted C function may hold, doubles included.
    .align 6
    .globl trap_entry
trap_entry:
    addi sp, sp, -FRAME_WORDS * 8
    sd x1, 1 * 8(sp)
    .irp n, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
    sd x\n, \n * 8(sp)
    .endr
    addi t0, sp, FRAME_WORDS * 8
    sd t0, 2 * 8(sp) // the interrupted sp, for the fatal report
    .irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
    fsd f\n, (32 + \n) * 8(sp)
    .endr
    frcsr t0
    sd t0, 64 * 8(sp)

    csrr a0, mcause
    csrr a1, mepc
    csrr a2, mtval
    mv a3, sp
    call trap_handler

    ld t0, 64 * 8(sp)
    fscsr t0
    .irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
    fld f\n, (32 + \n) * 8(sp)
    .endr
    ld x1, 1 * 8(sp)
    .irp n, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
    ld x\n, \n * 8(sp)
    .endr
    addi sp, sp, FRAME_WORDS * 8
    mret

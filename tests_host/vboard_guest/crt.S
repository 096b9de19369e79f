# SPDX-License-Identifier: Apache-2.0
# Start code of the virtual-board test guests: stack, trap vector, main. The trap entry saves the caller-saved
# registers and calls trap(mcause, mepc), whose return value becomes the new mepc.
    .section .text.start
    .globl _start
_start:
    csrr  t0, mhartid
    bnez  t0, park
    la    sp, stack_top
    la    t0, trap_entry
    csrw  mtvec, t0
    call  main
park:
    j     park

    .text
    .align 4
    .globl trap_entry
trap_entry:
    addi  sp, sp, -144
    sd    ra, 0(sp)
    sd    t0, 8(sp)
    sd    t1, 16(sp)
    sd    t2, 24(sp)
    sd    a0, 32(sp)
    sd    a1, 40(sp)
    sd    a2, 48(sp)
    sd    a3, 56(sp)
    sd    a4, 64(sp)
    sd    a5, 72(sp)
    sd    a6, 80(sp)
    sd    a7, 88(sp)
    sd    t3, 96(sp)
    sd    t4, 104(sp)
    sd    t5, 112(sp)
    sd    t6, 120(sp)
    csrr  a0, mcause
    csrr  a1, mepc
    call  trap
    csrw  mepc, a0
    ld    ra, 0(sp)
    ld    t0, 8(sp)
    ld    t1, 16(sp)
    ld    t2, 24(sp)
    ld    a0, 32(sp)
    ld    a1, 40(sp)
    ld    a2, 48(sp)
    ld    a3, 56(sp)
    ld    a4, 64(sp)
    ld    a5, 72(sp)
    ld    a6, 80(sp)
    ld    a7, 88(sp)
    ld    t3, 96(sp)
    ld    t4, 104(sp)
    ld    t5, 112(sp)
    ld    t6, 120(sp)
    addi  sp, sp, 144
    mret

    .bss
    .align 4
    .space 16384
stack_top:

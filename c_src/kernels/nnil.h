// SPDX-License-Identifier: Apache-2.0
/* nnil: the one-byte-opcode stack bytecode of nncase v0.2's nnil_unary_method (opcode 0x14).
 * Opcodes (nncase runtime/nnil.h): nop 0x00, dup 0x01, pop 0x02, lda_0 0x03 (push the input value), ldc_r4_0 0x04,
 * ldc_r4_1 0x05, ldc_r4 0x06 + little-endian f32, unary 0x20-0x29 (abs, ceil, cos, exp, floor, log, neg, rsqrt, sin,
 * square), binary 0x40-0x45 (add, sub, mul, div, min, max; pop b then a), clamp 0x80 (pop high, low, v), ret 0xA0
 * (pop the result). The program runs once per element, from the start, until ret. */
#ifndef OKPU_KERNELS_NNIL_H
#define OKPU_KERNELS_NNIL_H

#include <stddef.h>
#include <stdint.h>

#define NNIL_STACK_MAX 64 /* nncase's nnil_evalstack holds 64 floats */

enum {
    NNIL_NOP = 0x00, NNIL_DUP = 0x01, NNIL_POP = 0x02, NNIL_LDA_0 = 0x03, NNIL_LDC_R4_0 = 0x04, NNIL_LDC_R4_1 = 0x05,
    NNIL_LDC_R4 = 0x06, NNIL_ABS = 0x20, NNIL_SQUARE = 0x29, NNIL_ADD = 0x40, NNIL_MAX = 0x45, NNIL_CLAMP = 0x80,
    NNIL_RET = 0xA0
};

/* Static check of a program: every opcode known, ldc_r4 operands inside the program, no stack underflow, depth
 * <= NNIL_STACK_MAX, and a ret reached (with a value on the stack) before the end. Returns 0 when valid, else -1 and
 * fills *bad_offset (byte offset in the program) and *why (static text). *length gets the bytes up to and
 * including the ret. */
int okpu_nnil_check(const uint8_t *prog, size_t size, size_t *length, size_t *bad_offset, const char **why);

/* Run a checked program on one value. */
float okpu_nnil_eval(const uint8_t *prog, size_t length, float x);

/* Apply to count little-endian floats (in and out may be the same buffer). */
void okpu_nnil_unary(const uint8_t *prog, size_t length, const uint8_t *in, uint8_t *out, uint32_t count);

#endif

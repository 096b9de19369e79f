// SPDX-License-Identifier: Apache-2.0
/* nnil bytecode checker and interpreter (see nnil.h). */
#include "nnil.h"

#include <math.h>

#include "../core/bytes.h"
#include "neutral_kernels.h"

/* stack effect of an opcode: pops, pushes; -1 for an unknown opcode */
static int nnil_effect(uint8_t op, int *pops, int *pushes)
{
    if (op == NNIL_NOP) { *pops = 0; *pushes = 0; return 0; }
    if (op == NNIL_DUP) { *pops = 1; *pushes = 2; return 0; }
    if (op == NNIL_POP) { *pops = 1; *pushes = 0; return 0; }
    if (op >= NNIL_LDA_0 && op <= NNIL_LDC_R4) { *pops = 0; *pushes = 1; return 0; }
    if (op >= NNIL_ABS && op <= NNIL_SQUARE) { *pops = 1; *pushes = 1; return 0; }
    if (op >= NNIL_ADD && op <= NNIL_MAX) { *pops = 2; *pushes = 1; return 0; }
    if (op == NNIL_CLAMP) { *pops = 3; *pushes = 1; return 0; }
    if (op == NNIL_RET) { *pops = 1; *pushes = 0; return 0; }
    return -1;
}

int okpu_nnil_check(const uint8_t *prog, size_t size, size_t *length, size_t *bad_offset, const char **why)
{
    size_t pc = 0;
    int depth = 0;
    while (pc < size) {
        uint8_t op = prog[pc];
        int pops, pushes;
        if (nnil_effect(op, &pops, &pushes) != 0) {
            *bad_offset = pc;
            *why = "unknown nnil opcode (known: 0x00-0x06, 0x20-0x29, 0x40-0x45, 0x80, 0xA0)";
            return -1;
        }
        if (depth < pops) {
            *bad_offset = pc;
            *why = "stack underflow (the instruction pops more values than the program pushed)";
            return -1;
        }
        depth += pushes - pops;
        if (depth > NNIL_STACK_MAX) {
            *bad_offset = pc;
            *why = "stack overflow (deeper than nncase's 64-entry evaluation stack)";
            return -1;
        }
        if (op == NNIL_LDC_R4) {
            if (size - pc < 5) {
                *bad_offset = pc;
                *why = "ldc_r4 operand (4-byte float) runs past the end of the program";
                return -1;
            }
            pc += 5;
            continue;
        }
        pc++;
        if (op == NNIL_RET) {
            *length = pc;
            return 0;
        }
    }
    *bad_offset = size;
    *why = "the program ends without ret (0xA0)";
    return -1;
}

float okpu_nnil_eval(const uint8_t *prog, size_t length, float x)
{
    float st[NNIL_STACK_MAX + 1];
    int top = 0;
    size_t pc = 0;
    while (pc < length) {
        uint8_t op = prog[pc++];
        float a, b, c;
        switch (op) {
        case NNIL_NOP: break;
        case NNIL_DUP: st[top] = st[top - 1]; top++; break;
        case NNIL_POP: top--; break;
        case NNIL_LDA_0: st[top++] = x; break;
        case NNIL_LDC_R4_0: st[top++] = 0.0f; break;
        case NNIL_LDC_R4_1: st[top++] = 1.0f; break;
        case NNIL_LDC_R4: st[top++] = okpu_rd_f32(prog + pc); pc += 4; break;
        case NNIL_CLAMP: /* pops high, low, v: std::clamp(v, low, high) */
            c = st[--top];
            b = st[--top];
            a = st[--top];
            st[top++] = okpu_v4_clampf(a, b, c);
            break;
        case NNIL_RET: return st[top - 1];
        default:
            if (op >= NNIL_ABS && op <= NNIL_SQUARE) {
                st[top - 1] = okpu_v4_unary_apply(op - NNIL_ABS, st[top - 1]);
            } else { /* binary 0x40-0x45: pop b, then a */
                b = st[--top];
                a = st[--top];
                switch (op - NNIL_ADD) {
                case V4_BIN_ADD: c = a + b; break;
                case V4_BIN_SUB: c = a - b; break;
                case V4_BIN_MUL: c = a * b; break;
                case V4_BIN_DIV: c = a / b; break;
                case V4_BIN_MIN: c = (b < a) ? b : a; break;
                default: c = (a < b) ? b : a; break;
                }
                st[top++] = c;
            }
            break;
        }
    }
    return 0.0f; /* not reached for a checked program */
}

void okpu_nnil_unary(const uint8_t *prog, size_t length, const uint8_t *in, uint8_t *out, uint32_t count)
{
    uint32_t i;
    for (i = 0; i < count; i++)
        okpu_wr_f32(out + (size_t)i * 4u, okpu_nnil_eval(prog, length, okpu_rd_f32(in + (size_t)i * 4u)));
}

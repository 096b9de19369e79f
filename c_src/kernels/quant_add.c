/* QUANTIZED_ADD (v3 type 2), SDK kpu.c semantics (docs/kpu-reference.md section 2). */
#include "kernels.h"

void okpu_k_quant_add_u8(const uint8_t *a, const uint8_t *b, uint8_t *out, uint32_t count,
                         const okpu_qadd_params *p, okpu_round_mode mode)
{
    /* Operands: (x + offset) * mul, floor-shifted by the shared shift after the add when both shifts are equal,
     * else each by its own shift before the add. The output step rounds with `mode` (the SDK's carry shift by
     * default). The SDK processes ALIGN_UP(count, 8) elements; this kernel writes exactly `count`. */
    uint32_t i;
    unsigned sa = (unsigned)(p->a_shift < 0 ? 0 : p->a_shift), sb = (unsigned)(p->b_shift < 0 ? 0 : p->b_shift);
    unsigned so = (unsigned)(p->out_shift < 0 ? 0 : p->out_shift);
    for (i = 0; i < count; i++) {
        int64_t va = okpu_wrap_mul((int64_t)a[i] + p->a_offset, p->a_mul);
        int64_t vb = okpu_wrap_mul((int64_t)b[i] + p->b_offset, p->b_mul);
        int64_t v;
        if (sa == sb)
            v = okpu_asr64(okpu_wrap_add(va, vb), sa);
        else
            v = okpu_wrap_add(okpu_asr64(va, sa), okpu_asr64(vb, sb));
        v = okpu_mul_shift(v, p->out_mul, so, mode);
        out[i] = okpu_clamp_u8(okpu_wrap_add(v, p->out_offset));
    }
}

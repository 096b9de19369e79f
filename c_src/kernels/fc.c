/* Fully connected layers. */
#include <math.h>

#include "../core/bytes.h"
#include "kernels.h"

void okpu_k_fc_f32(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias, uint32_t in_ch,
                   uint32_t out_ch, uint32_t act)
{
    /* Exactly the chip's order (docs/kpu-reference.md section 2): s starts at 0.0f, one fused multiply-add per input in
     * index order, then the bias, then the activation. Any other order or float64 misses the K210's digits. */
    uint32_t o, i;
    for (o = 0; o < out_ch; o++) {
        const uint8_t *w = weights + (size_t)4u * in_ch * o;
        float s = 0.0f;
        for (i = 0; i < in_ch; i++)
            s = fmaf(okpu_rd_f32(in + 4u * i), okpu_rd_f32(w + 4u * i), s);
        s = s + okpu_rd_f32(bias + 4u * o);
        okpu_wr_f32(out + 4u * o, okpu_apply_act(s, act));
    }
}

void okpu_k_fc_u8(const uint8_t *in, uint8_t *out, const uint8_t *weights, const uint8_t *bias, uint32_t in_ch,
                  uint32_t out_ch, const okpu_qfc_params *p, okpu_round_mode mode)
{
    uint32_t o, i;
    unsigned shift = p->output_shift < 0 ? 0u : (unsigned)p->output_shift;
    for (o = 0; o < out_ch; o++) {
        const uint8_t *w = weights + (size_t)in_ch * o;
        int64_t acc = okpu_rd_i32(bias + 4u * o);
        for (i = 0; i < in_ch; i++)
            acc = okpu_wrap_add(acc, okpu_wrap_mul((int64_t)in[i] + p->input_offset, (int64_t)w[i] + p->weight_offset));
        acc = okpu_mul_shift(acc, p->output_mul, shift, mode);
        out[o] = okpu_clamp_u8(okpu_wrap_add(acc, p->output_offset));
    }
}

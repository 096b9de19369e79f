// SPDX-License-Identifier: Apache-2.0
/* The KPU's arithmetic as docs/kpu-reference.md section 4 writes it, one value at a time: the oracle the fast paths
 * (kpu_emu_conv.c, kpu_emu_act.c) are tested against, and the path OKPU_EMU_REFERENCE=1 selects. Pooling has one
 * implementation, this one, used by both paths. */
#include <string.h>

#include "../core/arith.h"
#include "kpu_emu.h"
#include "kpu_layout.h"

/* Batch norm then activation of one accumulator (docs/kpu-reference.md sections 4.2, 4.3). A real layer's alu stays far
 * below 2^40 and its BN product below 2^63; the wrapping ops only pin down the result of values no real layer produces (alu near
 * 2^53 is reachable only with 16-bit weights and near-maximal arg fields). */
uint8_t okpu_emu_bn_act(int64_t alu, const okpu_kpu_bn *bn, const okpu_kpu_act *act, int act_sorted, okpu_round_mode mode)
{
    int64_t y = okpu_wrap_add(okpu_asr64(okpu_wrap_mul(alu, bn->norm_mul), bn->norm_shift), bn->norm_add);
    int64_t r;
    int i;

    if (act_sorted) {
        /* x_start non-decreasing: the segments with y > x_start form a prefix, so search for its end */
        i = 0;
        i += y > act->x_start[i + 8] ? 8 : 0;
        i += y > act->x_start[i + 4] ? 4 : 0;
        i += y > act->x_start[i + 2] ? 2 : 0;
        i += y > act->x_start[i + 1] ? 1 : 0;
    } else {
        i = 15;
        while (i > 0 && !(y > act->x_start[i]))
            i--;
    }
    r = okpu_round_shift(okpu_wrap_mul(okpu_wrap_add(y, -act->x_start[i]), act->y_mul[i]), act->shift[i], mode);
    if (r >= 255)
        return 255;
    if (r <= -255)
        return 0;
    return okpu_clamp_u8(r + act->bias[i]);
}

/* ---- Pooling (docs/kpu-reference.md section 4.4) ---- */

enum pool_kind { POOL_BYPASS, POOL_MAX, POOL_MEAN, POOL_PICK00, POOL_PICK01 };

void okpu_emu_pool_plane(const uint8_t *in, uint32_t w, uint32_t h, unsigned pool_type,
                         okpu_mean_border_mode border, uint8_t *out)
{
    static const unsigned char kinds[] = {
#define OKPU_KPU_POOL(type, side, stride, kind, name) POOL_##kind,
#include "kpu_pool_types.def"
#undef OKPU_KPU_POOL
    };
    const uint32_t f = okpu_kpu_pool_window(pool_type), s = okpu_kpu_pool_stride(pool_type);
    const uint32_t ow = w / s, oh = h / s;
    const uint32_t pick_x = kinds[pool_type] == POOL_PICK01 ? 1u : 0u; /* the column a pick takes */
    uint32_t ox, oy, kx, ky;

    if (kinds[pool_type] == POOL_BYPASS) {
        memcpy(out, in, (size_t)w * h);
        return;
    }
    for (oy = 0; oy < oh; oy++) {
        for (ox = 0; ox < ow; ox++) {
            const uint32_t y0 = oy * s, x0 = ox * s;
            uint32_t v = 0, taps = 0;
            switch (kinds[pool_type]) {
            case POOL_PICK00:
            case POOL_PICK01:
                v = x0 + pick_x < w ? in[(size_t)y0 * w + x0 + pick_x] : 0u;
                break;
            case POOL_MAX: /* taps past the edge read 0, which never wins */
                for (ky = 0; ky < f; ky++)
                    for (kx = 0; kx < f; kx++)
                        if (y0 + ky < h && x0 + kx < w && in[(size_t)(y0 + ky) * w + x0 + kx] > v)
                            v = in[(size_t)(y0 + ky) * w + x0 + kx];
                break;
            default: /* POOL_MEAN */
                for (ky = 0; ky < f; ky++) {
                    for (kx = 0; kx < f; kx++) {
                        uint32_t y = y0 + ky, x = x0 + kx;
                        if (border == OKPU_MEAN_BORDER_IN_RANGE) {
                            if (y >= h || x >= w)
                                continue;
                        } else {
                            y = y < h ? y : h - 1;
                            x = x < w ? x : w - 1;
                        }
                        v += in[(size_t)y * w + x];
                        taps++;
                    }
                }
                v = border == OKPU_MEAN_BORDER_IN_RANGE ? v / taps : v / (f * f);
                break;
            }
            out[(size_t)oy * ow + ox] = (uint8_t)v;
        }
    }
}

/* Section 4.1 as written: one output value at a time. */
static void conv_reference(const emu_layer *L, uint32_t oc, const okpu_kpu_bn *bn, uint8_t *activated)
{
    const okpu_kpu_args *a = L->a;
    uint32_t x, y, i, kx, ky;

    for (y = 0; y < L->h; y++) {
        for (x = 0; x < L->w; x++) {
            int64_t alu = 0, all_xw = 0, all_x = 0, all_w = 0;
            for (i = 0; i < L->g_ic; i++) {
                const uint8_t *plane = L->in + (size_t)okpu_emu_input_channel(L, oc, i) * L->plane;
                const size_t w0 = okpu_emu_weight_index(L, oc, i);
                int64_t sum_xw = 0, sum_x = 0, sum_w = 0;
                for (ky = 0; ky < L->k; ky++) {
                    for (kx = 0; kx < L->k; kx++) {
                        /* (y + ky - pad, x + kx - pad) in the map is (y + ky, x + kx) in the padded plane */
                        int64_t xv = plane[(size_t)(y + ky) * L->pitch + x + kx];
                        int64_t wv = okpu_emu_weight_at(L, w0 + ky * L->k + kx);
                        sum_xw += xv * wv;
                        sum_x += xv;
                        sum_w += wv;
                    }
                }
                if (L->offset_mode == OKPU_CONV_OFFSET_PER_CHANNEL) {
                    alu += sum_xw + okpu_asr64(a->arg_x * sum_x, a->shr_x) + okpu_asr64(a->arg_w * sum_w, a->shr_w) +
                           a->arg_add;
                } else {
                    all_xw += sum_xw;
                    all_x += sum_x;
                    all_w += sum_w;
                }
            }
            if (L->offset_mode == OKPU_CONV_OFFSET_ONCE)
                alu = all_xw + okpu_asr64(a->arg_x * all_x, a->shr_x) + okpu_asr64(a->arg_w * all_w, a->shr_w) +
                      a->arg_add * (int64_t)L->g_ic;
            activated[(size_t)y * L->w + x] = okpu_emu_bn_act(alu, bn, &L->act, 0, L->round);
        }
    }
}

void okpu_emu_channels_reference(const emu_layer *L, uint32_t oc_first, uint32_t oc_end, uint8_t *activated,
                                 uint8_t *out)
{
    const size_t out_plane = (size_t)L->a->out_width * L->a->out_height;
    uint32_t oc;

    for (oc = oc_first; oc < oc_end; oc++) {
        okpu_kpu_bn bn;
        okpu_kpu_bn_decode(L->bn_raw + (size_t)oc * KPU_BN_ENTRY_BYTES, &bn);
        conv_reference(L, oc, &bn, activated);
        okpu_emu_pool_plane(activated, L->w, L->h, L->a->pool_type, L->mean_border, out + oc * out_plane);
    }
}

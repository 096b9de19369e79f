/* Reshaping CPU layers: TensorFlow flatten and nearest-neighbour resize. */
#include <math.h>
#include <string.h>

#include "kernels.h"

void okpu_k_flatten(const uint8_t *in, uint8_t *out, uint32_t w, uint32_t h, uint32_t c, uint32_t elem)
{
    /* SDK kpu_tf_flatten: for y, x, ch: out++ = in[(ch*h + y)*w + x]. The fields are used as stored; Maix-EMC
     * writes width = H and height = W (docs/kpu-reference.md section 2), and its patched driver runs this same loop on
     * those stored fields, so following the stored values reproduces the chip for both writers. */
    uint32_t y, x, ch;
    size_t o = 0;
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++)
            for (ch = 0; ch < c; ch++, o++)
                memcpy(out + o * elem, in + (((size_t)ch * h + y) * w + x) * elem, elem);
}

void okpu_k_resize_nearest(const uint8_t *in, uint8_t *out, uint32_t in_w, uint32_t in_h, uint32_t c,
                           uint32_t out_w, uint32_t out_h, uint32_t elem)
{
    /* Source index min(floor(o * in / out), in - 1), computed exactly in integers; align_corners is ignored as in
     * the SDK (docs/kpu-reference.md section 2). */
    uint32_t ch, oy, ox;
    size_t o = 0;
    for (ch = 0; ch < c; ch++)
        for (oy = 0; oy < out_h; oy++) {
            uint64_t iy = (uint64_t)oy * in_h / out_h;
            if (iy > in_h - 1u)
                iy = in_h - 1u;
            for (ox = 0; ox < out_w; ox++, o++) {
                uint64_t ix = (uint64_t)ox * in_w / out_w;
                if (ix > in_w - 1u)
                    ix = in_w - 1u;
                memcpy(out + o * elem, in + (((size_t)ch * in_h + (size_t)iy) * in_w + (size_t)ix) * elem, elem);
            }
        }
}

/* K210_ADD_PADDING / K210_REMOVE_PADDING: the CPU side of running a fully connected layer as a 1x1 conv on 4x4
 * maps (docs/kpu-reference.md section 2; SDK kpu.c kpu_add_padding / kpu_remove_padding). */
#include "kernels.h"

/* A 4-wide map: 4 channels share a 64-byte row, 16 bytes apart; one row per image row, 4 rows per channel group. */
#define PAD_GROUPS 4u
#define PAD_PITCH 16u
#define PAD_H 4u

void okpu_k_add_padding(const uint8_t *in, uint8_t *kpu_dst, uint32_t channels)
{
    uint32_t c;
    for (c = 0; c < channels; c++)
        kpu_dst[(size_t)(c / PAD_GROUPS) * PAD_H * 64u + (c % PAD_GROUPS) * PAD_PITCH] = in[c];
}

uint32_t okpu_k_add_padding_rows(uint32_t channels)
{
    return (channels + PAD_GROUPS - 1u) / PAD_GROUPS * PAD_H;
}

void okpu_k_remove_padding(const uint8_t *in, uint8_t *out, uint32_t channels)
{
    uint32_t c;
    for (c = 0; c < channels; c++)
        out[c] = in[(size_t)c * 16u];
}

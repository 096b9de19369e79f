/* KPU RAM layout of a feature map (docs/kpu-reference.md section 5): channels are packed several to a 64-byte row
 * when the image is narrow. */
#ifndef OKPU_KPU_LAYOUT_H
#define OKPU_KPU_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "../okpu.h"

typedef struct okpu_kpu_layout {
    uint32_t groups;    /* channels sharing a row: 4 (W<=16), 2 (W<=32), 1 */
    uint32_t row_len;   /* 64-byte rows per image row */
    uint32_t row_pitch; /* byte distance between channels in the same row */
} okpu_kpu_layout;

/* (inline: the emulator's loaders ask once per channel, or per run of a channel's rows) */
static inline okpu_kpu_layout okpu_kpu_layout_for_width(uint32_t width)
{
    okpu_kpu_layout l;
    if (width <= 16) {
        l.groups = 4;
        l.row_len = 1;
        l.row_pitch = 16;
    } else if (width <= 32) {
        l.groups = 2;
        l.row_len = 1;
        l.row_pitch = 32;
    } else {
        l.groups = 1;
        l.row_len = (width + OKPU_KPU_ROW_BYTES - 1) / OKPU_KPU_ROW_BYTES;
        l.row_pitch = OKPU_KPU_ROW_BYTES;
    }
    return l;
}

/* 64-byte rows a WxHxC map occupies. */
uint32_t okpu_kpu_layout_rows(uint32_t width, uint32_t height, uint32_t channels);

/* Byte offset of (c, y, x) from the map's first row (inline: the loaders call it per channel; groups is 1, 2 or 4). */
static inline size_t okpu_kpu_layout_offset(const okpu_kpu_layout *l, uint32_t height, uint32_t c, uint32_t y,
                                            uint32_t x)
{
    const unsigned shift = l->groups == 4u ? 2u : l->groups == 2u ? 1u : 0u;
    return (size_t)(c >> shift) * l->row_len * height * OKPU_KPU_ROW_BYTES +
           (size_t)(c & (l->groups - 1u)) * l->row_pitch + (size_t)y * l->row_len * OKPU_KPU_ROW_BYTES + x;
}

/* Dense planar NCHW u8 <-> KPU layout at row `row` of `ram` (2 MiB). The caller checks the region fits. */
void okpu_kpu_layout_upload(uint8_t *ram, uint32_t row, const uint8_t *src, uint32_t width, uint32_t height,
                       uint32_t channels);
/* The channels [first, end) of a dense planar map `src` (channel c at src + c x width x height) into KPU layout. */
void okpu_kpu_layout_upload_channels(uint8_t *ram, uint32_t row, const uint8_t *src, uint32_t width, uint32_t height,
                                     uint32_t first, uint32_t end);
/* The image rows [y0, y1) of the channels [first, end) of a width x height map into KPU layout, from `src`: row y0 of
 * channel `first`, each next channel src_stride bytes on. */
void okpu_kpu_layout_upload_rows(uint8_t *ram, uint32_t row, const uint8_t *src, size_t src_stride, uint32_t width,
                                 uint32_t height, uint32_t first, uint32_t end, uint32_t y0, uint32_t y1);
void okpu_kpu_layout_download(const uint8_t *ram, uint32_t row, uint8_t *dst, uint32_t width, uint32_t height,
                         uint32_t channels);

#endif

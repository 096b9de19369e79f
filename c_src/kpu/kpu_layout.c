/* KPU RAM layout of a feature map (docs/kpu-reference.md section 5). */
#include "kpu_layout.h"

#include <string.h>

#include "../core/bytes.h"
#include "../okpu.h"

uint32_t okpu_kpu_layout_rows(uint32_t width, uint32_t height, uint32_t channels)
{
    okpu_kpu_layout l = okpu_kpu_layout_for_width(width);
    return l.row_len * height * ((channels + l.groups - 1) / l.groups);
}

void okpu_kpu_layout_upload_rows(uint8_t *ram, uint32_t row, const uint8_t *src, size_t src_stride, uint32_t width,
                                 uint32_t height, uint32_t first, uint32_t end, uint32_t y0, uint32_t y1)
{
    const okpu_kpu_layout l = okpu_kpu_layout_for_width(width);
    const size_t pitch = (size_t)l.row_len * OKPU_KPU_ROW_BYTES; /* one image row to the next */
    uint8_t *base = ram + (size_t)row * OKPU_KPU_ROW_BYTES;
    uint32_t c, y;

    for (c = first; c < end; c++) {
        const uint8_t *from = src + (c - first) * src_stride;
        uint8_t *dst = base + okpu_kpu_layout_offset(&l, height, c, y0, 0);
        for (y = y0; y < y1; y++, from += width, dst += pitch)
            okpu_copy_short(dst, from, width);
    }
}

void okpu_kpu_layout_upload_channels(uint8_t *ram, uint32_t row, const uint8_t *src, uint32_t width, uint32_t height,
                                     uint32_t first, uint32_t end)
{
    const size_t plane = (size_t)width * height;
    okpu_kpu_layout_upload_rows(ram, row, src + first * plane, plane, width, height, first, end, 0, height);
}

void okpu_kpu_layout_upload(uint8_t *ram, uint32_t row, const uint8_t *src, uint32_t width, uint32_t height,
                            uint32_t channels)
{
    okpu_kpu_layout_upload_channels(ram, row, src, width, height, 0, channels);
}

void okpu_kpu_layout_download(const uint8_t *ram, uint32_t row, uint8_t *dst, uint32_t width, uint32_t height,
                              uint32_t channels)
{
    const okpu_kpu_layout l = okpu_kpu_layout_for_width(width);
    const size_t pitch = (size_t)l.row_len * OKPU_KPU_ROW_BYTES;
    const uint8_t *base = ram + (size_t)row * OKPU_KPU_ROW_BYTES;
    uint32_t c, y;

    for (c = 0; c < channels; c++) {
        const uint8_t *src = base + okpu_kpu_layout_offset(&l, height, c, 0, 0);
        for (y = 0; y < height; y++, dst += width, src += pitch)
            okpu_copy_short(dst, src, width);
    }
}

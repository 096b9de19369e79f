// SPDX-License-Identifier: Apache-2.0
/*
 * `_lcd`: the ST7789 behind the frozen `lcd` module (firmware/k210/lcd.py).
 *   init(freq, madctl, invert, pins=None) -> SCLK Hz   pins: (cs, rst, dcx, wr, rst_gpiohs, dcx_gpiohs)
 *   madctl(value)
 *   fill(x, y, w, h, rgb565)
 *   display(buf, c, w, h, ox, oy, sw, sh, bg565)   the whole sw x sh screen in one RAMWR: the planar image (c = 1 or
 *                                                   3) at (ox, oy), clipped, bg around it; RGB888 -> RGB565 here
 *   text(x, y, str, fg565, bg565, sw, sh) -> width  8x16 font over a bg box, clipped to the screen
 */
#include "py/runtime.h"

#include "board/lcd.h"
#include "font8x16.h"

#define MAX_W 512

static mp_obj_t lcd_init_(size_t n_args, const mp_obj_t *args) {
    lcd_pins_t pins = lcd_maix_pins;
    if (n_args > 3 && args[3] != mp_const_none) {
        size_t n;
        mp_obj_t *items;
        mp_obj_get_array(args[3], &n, &items);
        if (n != 6) {
            mp_raise_ValueError(MP_ERROR_TEXT("lcd pins: (cs, rst, dcx, wr, rst_gpiohs, dcx_gpiohs)"));
        }
        uint8_t *p = (uint8_t *)&pins;
        for (size_t i = 0; i < 6; i++) {
            mp_int_t v = mp_obj_get_int(items[i]);
            if (v < 0 || v > (i < 4 ? 47 : 31)) {
                mp_raise_ValueError(MP_ERROR_TEXT("lcd pins: pads 0..47, GPIOHS 0..31"));
            }
            p[i] = (uint8_t)v;
        }
    }
    uint32_t hz = lcd_init(&pins, (uint32_t)mp_obj_get_int(args[0]), (uint8_t)mp_obj_get_int(args[1]),
        mp_obj_is_true(args[2]));
    return mp_obj_new_int(hz);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(lcd_init_obj, 3, 4, lcd_init_);

static mp_obj_t lcd_madctl_(mp_obj_t v) {
    lcd_set_madctl((uint8_t)mp_obj_get_int(v));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(lcd_madctl_obj, lcd_madctl_);

static mp_obj_t lcd_fill_(size_t n_args, const mp_obj_t *a) {
    int x = mp_obj_get_int(a[0]), y = mp_obj_get_int(a[1]), w = mp_obj_get_int(a[2]), h = mp_obj_get_int(a[3]);
    if (x < 0 || y < 0 || w <= 0 || h <= 0) {
        return mp_const_none;
    }
    lcd_fill(x, y, w, h, (uint16_t)mp_obj_get_int(a[4]));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(lcd_fill_obj, 5, 5, lcd_fill_);

static inline uint16_t rgb565(unsigned r, unsigned g, unsigned b) {
    return (uint16_t)(((r >> 3) << 11) | ((g >> 2) << 5) | (b >> 3));
}

static mp_obj_t lcd_display_(size_t n_args, const mp_obj_t *a) {
    mp_buffer_info_t bi;
    mp_get_buffer_raise(a[0], &bi, MP_BUFFER_READ);
    int c = mp_obj_get_int(a[1]), w = mp_obj_get_int(a[2]), h = mp_obj_get_int(a[3]);
    int ox = mp_obj_get_int(a[4]), oy = mp_obj_get_int(a[5]), sw = mp_obj_get_int(a[6]), sh = mp_obj_get_int(a[7]);
    uint16_t bg = (uint16_t)mp_obj_get_int(a[8]);
    if ((c != 1 && c != 3) || w <= 0 || h <= 0 || bi.len < (size_t)c * w * h) {
        mp_raise_ValueError(MP_ERROR_TEXT("display: bad image"));
    }
    if (sw <= 0 || sh <= 0 || sw > MAX_W) {
        mp_raise_ValueError(MP_ERROR_TEXT("display: bad screen size"));
    }
    static uint16_t row[MAX_W];
    const uint8_t *p = bi.buf;
    size_t plane = (size_t)w * h;
    lcd_window(0, 0, sw - 1, sh - 1);
    for (int y = 0; y < sh; y++) {
        int iy = y - oy;
        for (int x = 0; x < sw; x++) {
            int ix = x - ox;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) {
                row[x] = bg;
            } else {
                size_t i = (size_t)iy * w + ix;
                row[x] = c == 1 ? rgb565(p[i], p[i], p[i]) : rgb565(p[i], p[plane + i], p[2 * plane + i]);
            }
        }
        lcd_pixels(row, sw);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(lcd_display_obj, 9, 9, lcd_display_);

static mp_obj_t lcd_text_(size_t n_args, const mp_obj_t *a) {
    int x = mp_obj_get_int(a[0]), y = mp_obj_get_int(a[1]);
    size_t len;
    const char *s = mp_obj_str_get_data(a[2], &len);
    uint16_t fg = (uint16_t)mp_obj_get_int(a[3]), bg = (uint16_t)mp_obj_get_int(a[4]);
    int sw = mp_obj_get_int(a[5]), sh = mp_obj_get_int(a[6]);
    int tw = (int)len * FONT_W;
    // clip to the screen: whole columns/rows of the text box that are on it
    int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    int x1 = x + tw > sw ? sw : x + tw, y1 = y + FONT_H > sh ? sh : y + FONT_H;
    if (x0 >= x1 || y0 >= y1 || x1 - x0 > MAX_W) {
        return mp_obj_new_int(0);
    }
    static uint16_t row[MAX_W];
    lcd_window(x0, y0, x1 - 1, y1 - 1);
    for (int yy = y0; yy < y1; yy++) {
        int gy = yy - y;
        for (int xx = x0; xx < x1; xx++) {
            int k = (xx - x) / FONT_W, gx = (xx - x) % FONT_W;
            unsigned ch = (uint8_t)s[k];
            if (ch < FONT_FIRST || ch > FONT_LAST) {
                ch = '?';
            }
            row[xx - x0] = font8x16[ch - FONT_FIRST][gy] & (0x80 >> gx) ? fg : bg;
        }
        lcd_pixels(row, x1 - x0);
    }
    return mp_obj_new_int(tw);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(lcd_text_obj, 7, 7, lcd_text_);

static const mp_rom_map_elem_t lcd_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR__lcd) },
    { MP_ROM_QSTR(MP_QSTR_init), MP_ROM_PTR(&lcd_init_obj) },
    { MP_ROM_QSTR(MP_QSTR_madctl), MP_ROM_PTR(&lcd_madctl_obj) },
    { MP_ROM_QSTR(MP_QSTR_fill), MP_ROM_PTR(&lcd_fill_obj) },
    { MP_ROM_QSTR(MP_QSTR_display), MP_ROM_PTR(&lcd_display_obj) },
    { MP_ROM_QSTR(MP_QSTR_text), MP_ROM_PTR(&lcd_text_obj) },
};
static MP_DEFINE_CONST_DICT(lcd_globals, lcd_globals_table);

const mp_obj_module_t lcd_native_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&lcd_globals,
};
MP_REGISTER_MODULE(MP_QSTR__lcd, lcd_native_module);

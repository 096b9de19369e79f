// SPDX-License-Identifier: Apache-2.0
// The Maix LCD: an ST7789 (320x240 landscape) on SPI0 in octal mode, CS = SS3, DCX = GPIOHS31, RST = GPIOHS30
// (k210-board.md sections 6, 7, 9).
#ifndef OPENKPU_K210_LCD_H
#define OPENKPU_K210_LCD_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint8_t cs, rst, dcx, wr;       // pads: IO36 SPI0_SS3, IO37 RST, IO38 DCX, IO39 SPI0_SCLK
    uint8_t rst_gpiohs, dcx_gpiohs; // GPIOHS 30, 31
} lcd_pins_t;
extern const lcd_pins_t lcd_maix_pins;

// Pins, SPI0 at `freq` Hz (returns the SCLK reached), reset and the ST7789 init sequence; MADCTL `madctl`.
uint32_t lcd_init(const lcd_pins_t *pins, uint32_t freq, uint8_t madctl, bool invert);
void lcd_set_madctl(uint8_t madctl);
// A drawing window (inclusive corners) followed by RAMWR; then lcd_pixels as often as needed.
void lcd_window(unsigned x0, unsigned y0, unsigned x1, unsigned y1);
// `n` RGB565 pixels (values, sent high byte first); n even is fastest (32-bit frames).
void lcd_pixels(const uint16_t *px, unsigned n);
void lcd_fill(unsigned x, unsigned y, unsigned w, unsigned h, uint16_t color);

#endif

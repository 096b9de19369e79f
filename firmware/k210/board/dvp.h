// SPDX-License-Identifier: Apache-2.0
// K210 DVP (0x50430000): camera clock/reset/power lines, the DVP's own SCCB master and polled frame capture into
// planar "AI" buffers (k210-board.md section 9; register layout of the SDK's dvp.h).
#ifndef OPENKPU_K210_DVP_H
#define OPENKPU_K210_DVP_H

#include <stdbool.h>
#include <stdint.h>

#define DVP_BASE 0x50430000u
#define DVP_CFG 0x00u
#define DVP_R_ADDR 0x04u
#define DVP_G_ADDR 0x08u
#define DVP_B_ADDR 0x0Cu
#define DVP_CMOS_CFG 0x10u
#define DVP_SCCB_CFG 0x14u
#define DVP_SCCB_CTL 0x18u
#define DVP_AXI 0x1Cu
#define DVP_STS 0x20u
#define DVP_RGB_ADDR 0x28u

#define DVP_CFG_AI_OUT (1u << 2)
#define DVP_CFG_DISPLAY_OUT (1u << 3)
#define DVP_CFG_FMT_RGB (0u << 9)
#define DVP_CFG_FMT_YUV (1u << 9)
#define DVP_CFG_FMT_Y (3u << 9)
#define DVP_CFG_HREF_BURST_SHIFT 12 // width / 8 (no burst)
#define DVP_CFG_LINE_NUM_SHIFT 20   // height

#define DVP_CMOS_CLK_EN (1u << 8)
#define DVP_CMOS_RESET (1u << 16) // 1 = reset released
#define DVP_CMOS_PWDN (1u << 24)  // 1 = power-down line high

#define DVP_STS_FRAME_START 0x00000001u
#define DVP_STS_FRAME_START_WE 0x00000002u
#define DVP_STS_FRAME_FINISH 0x00000100u
#define DVP_STS_FRAME_FINISH_WE 0x00000200u
#define DVP_STS_DVP_EN 0x00010000u
#define DVP_STS_DVP_EN_WE 0x00020000u
#define DVP_STS_SCCB_EN 0x01000000u
#define DVP_STS_SCCB_EN_WE 0x02000000u

// The Maix pins (MaixPy's defaults; overridable through dvp_pins_t).
typedef struct {
    uint8_t sda, scl, rst, vsync, pwdn, href, xclk, pclk;
} dvp_pins_t;
extern const dvp_pins_t dvp_maix_pins; // IO40 SDA, 41 SCL, 42 RST, 43 VSYNC, 44 PWDN, 45 HREF, 46 XCLK, 47 PCLK

// Clock gate + reset pulse of the DVP, pads, data pins, XCLK (Hz, returns the one reached), power/reset sequence.
uint32_t dvp_init(const dvp_pins_t *pins, uint32_t xclk_hz);
// SCCB through the DVP: `addr` is the 8-bit (write) address, e.g. 0x60 for the OV2640. 16-bit register addresses
// when reg16. 0 ok, -1 when the controller never finished.
int dvp_sccb_write(uint8_t addr, uint16_t reg, uint8_t value, bool reg16);
int dvp_sccb_read(uint8_t addr, uint16_t reg, uint8_t *value, bool reg16);
// Wait for `n` frame starts (the sensor streams; nothing is converted). -1 on timeout.
int dvp_wait_frames(unsigned n, uint32_t timeout_ms);
// One frame of w x h: planes at r/g/b (for the Y format only r is written: one w*h plane). -1 on timeout.
int dvp_capture(unsigned w, unsigned h, uint32_t format, uint8_t *r, uint8_t *g, uint8_t *b, uint32_t timeout_ms);

#endif

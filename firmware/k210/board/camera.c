// SPDX-License-Identifier: Apache-2.0
// Camera probe and configuration over the DVP's SCCB master: OV2640 (Maix Bit/Go), GC0328 (Maix Dock), OV5640.
//
// camera_reset writes MaixPy's register tables (camera_regs.h: image quality, clocks, the sensor mode), as
// MaixPy's sensor.reset() does; camera_configure then writes the geometry, format and mirror/flip registers for
// the frame the script asked for (set_pixformat / set_framesize / set_windowing / set_hmirror / set_vflip):
// - OV2640: SVGA (800x600) sensor mode; the DSP crops a window of that image (0x51..0x55) and scales it to the
//   output size (ZMOW/ZMOH, 0x5A..0x5C). A frame size F is the whole 800x600 image scaled to F; set_windowing's
//   window is the same crop in sensor pixels. YUV422 out (the DVP makes planar RGB888, or keeps Y for GRAYSCALE).
// - GC0328: 640x480 array subsampled by 1, 1/2 or 1/4 (0x59, as MaixPy: 1/2 for QVGA, 1/4 for QQVGA); the frame is
//   the centre of the subsampled image (all of it for 4:3 sizes) and the crop window (0x50..0x58) cuts the
//   frame's window out of it. YCbCr 4:2:2 out, as MaixPy (its set_pixformat writes nothing: the DVP keeps Y).
// - OV5640: the ISP scales the subsampled array to the output size (0x3808..0x380B, as MaixPy's set_framesize);
//   RGB565 out for RGB565 (the DVP converts RGB565), YUV422 for GRAYSCALE (the DVP keeps Y), as MaixPy. No
//   set_windowing (MaixPy's OV5640 driver has none either).
// Checked on the virtual board only (python/openkpu/vboard/camera.py models the three sensors), not on silicon.
#include <stddef.h>

#include "camera.h"
#include "camera_regs.h"
#include "clint.h"
#include "dvp.h"

#define OV_BANK_SEL 0xFF
#define OV_BANK_DSP 0x00
#define OV_BANK_SENSOR 0x01
#define OV_SENSOR_W 800u
#define OV_SENSOR_H 600u

#define GC_PAGE_SEL 0xFE
#define GC_ARRAY_W 640u
#define GC_ARRAY_H 480u

#define OV5640_MAX_W 640u // the ISP's input after the 1/4 subsample: it scales down, not up
#define OV5640_MAX_H 480u

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void delay_ms(uint32_t ms) {
    uint64_t end = clint_mtime() + (uint64_t)ms * clint_hz() / 1000u;
    while (clint_mtime() < end) {
        for (volatile int i = 0; i < 64; i++) {
        }
    }
}

static int ov_w(uint8_t reg, uint8_t val) {
    return dvp_sccb_write(CAMERA_ADDR_OV2640, reg, val, false);
}

static int gc_w(uint8_t reg, uint8_t val) {
    return dvp_sccb_write(CAMERA_ADDR_GC0328, reg, val, false);
}

static int ov5_w(uint16_t reg, uint8_t val) {
    return dvp_sccb_write(CAMERA_ADDR_OV5640, reg, val, true);
}

static int write_table8(uint8_t addr, const camera_reg8_t *t, size_t n) {
    int err = 0;
    for (size_t i = 0; i < n; i++) {
        err |= dvp_sccb_write(addr, t[i].reg, t[i].val, false);
    }
    return err;
}

int camera_probe(void) {
    uint8_t a = 0, b = 0;
    // OV2640: sensor bank, PID/VER at 0x0A/0x0B
    if (ov_w(OV_BANK_SEL, OV_BANK_SENSOR) == 0 && dvp_sccb_read(CAMERA_ADDR_OV2640, 0x0A, &a, false) == 0 &&
        dvp_sccb_read(CAMERA_ADDR_OV2640, 0x0B, &b, false) == 0 && a == 0x26 && (b & 0xF0) == 0x40) {
        ov_w(0x12, 0x80); // COM7: system reset
        return CAMERA_OV2640;
    }
    // OV5640: 16-bit registers, chip id 0x300A/0x300B
    if (dvp_sccb_read(CAMERA_ADDR_OV5640, 0x300A, &a, true) == 0 &&
        dvp_sccb_read(CAMERA_ADDR_OV5640, 0x300B, &b, true) == 0 && a == 0x56 && b == 0x40) {
        return CAMERA_OV5640;
    }
    // GC0328: page 0, id at 0xF0
    if (dvp_sccb_write(CAMERA_ADDR_GC0328, GC_PAGE_SEL, 0x00, false) == 0 &&
        dvp_sccb_read(CAMERA_ADDR_GC0328, 0xF0, &a, false) == 0 && a == 0x9D) {
        return CAMERA_GC0328;
    }
    return 0;
}

const char *camera_reset(int id) {
    int err = 0;
    switch (id) {
        case CAMERA_OV2640:
            err |= ov_w(OV_BANK_SEL, OV_BANK_SENSOR);
            err |= ov_w(0x12, 0x80); // COM7: system reset, then 10 ms (MaixPy's delay)
            delay_ms(10);
            err |= write_table8(CAMERA_ADDR_OV2640, ov2640_default_regs, COUNT(ov2640_default_regs));
            break;
        case CAMERA_GC0328:
            err |= write_table8(CAMERA_ADDR_GC0328, gc0328_default_regs, COUNT(gc0328_default_regs));
            break;
        case CAMERA_OV5640:
            err |= ov5_w(0x3103, 0x11); // clock from the pad, then software reset + power down, 10 ms
            err |= ov5_w(0x3008, 0x82);
            delay_ms(10);
            for (size_t i = 0; i < COUNT(ov5640_default_regs); i++) {
                err |= ov5_w(ov5640_default_regs[i].reg, ov5640_default_regs[i].val);
            }
            delay_ms(100); // MaixPy waits 100 ms after the table (the PLL and AEC settle)
            break;
        default:
            return "no camera answered on SCCB (OV2640 at 0x60, OV5640 at 0x78, GC0328 at 0x42)";
    }
    return err ? "the camera stopped answering on SCCB while its registers were written" : NULL;
}

static const char *ov2640_configure(const camera_config_t *c) {
    // the window in sensor pixels: the frame is the whole sensor image scaled by OV_SENSOR_W / fw
    unsigned sx = c->wx * OV_SENSOR_W / c->fw, sy = c->wy * OV_SENSOR_H / c->fh;
    unsigned sw = c->ww * OV_SENSOR_W / c->fw, sh = c->wh * OV_SENSOR_H / c->fh;
    sw &= ~3u;
    sh &= ~3u;
    if (c->fw > OV_SENSOR_W || c->fh > OV_SENSOR_H) {
        return "the OV2640 mode of this firmware is SVGA: frames up to 800x600";
    }
    if (c->ww % 4 || c->wh % 4 || c->ww > 1020 || c->wh > 508 || sw == 0 || sh == 0) {
        return "the OV2640 outputs widths and heights that are multiples of 4 (at most 1020x508)";
    }
    int err = 0;
    err |= ov_w(OV_BANK_SEL, OV_BANK_SENSOR);
    err |= ov_w(0x12, 0x40); // COM7: SVGA sensor mode (also clears the colour bar of MaixPy's table)
    // REG04: HREF_EN | 0x20 as MaixPy's table; mirror; vflip with VREF_EN, as MaixPy's set_vflip
    err |= ov_w(0x04, 0x28 | (c->hmirror ? 0x80 : 0) | (c->vflip ? 0x50 : 0));
    err |= ov_w(OV_BANK_SEL, OV_BANK_DSP);
    err |= ov_w(0x05, 0x01);                       // R_BYPASS: DSP bypassed while it changes
    err |= ov_w(0xE0, 0x04);                       // RESET: DVP interface
    err |= ov_w(0xC0, OV_SENSOR_W / 8);            // HSIZE8 / VSIZE8: the sensor image entering the DSP
    err |= ov_w(0xC1, OV_SENSOR_H / 8);
    err |= ov_w(0x51, (sw / 4) & 0xFF);            // HSIZE, VSIZE (/4), XOFFL, YOFFL, VHYX (high bits)
    err |= ov_w(0x52, (sh / 4) & 0xFF);
    err |= ov_w(0x53, sx & 0xFF);
    err |= ov_w(0x54, sy & 0xFF);
    err |= ov_w(0x55, ((sh / 4) >> 8 & 1) << 7 | ((sy >> 8) & 7) << 4 | ((sw / 4) >> 8 & 1) << 3 | ((sx >> 8) & 7));
    err |= ov_w(0x5A, (c->ww / 4) & 0xFF);         // ZMOW, ZMOH, ZMHH: the output size (/4)
    err |= ov_w(0x5B, (c->wh / 4) & 0xFF);
    err |= ov_w(0x5C, ((c->ww / 4) >> 8 & 3) | ((c->wh / 4) >> 8 & 1) << 2);
    err |= ov_w(0xDA, 0x01);                       // IMAGE_MODE: YUV422, DVP byte order of MaixPy's table
    err |= ov_w(0xE0, 0x00);
    err |= ov_w(0x05, 0x00);                       // DSP on
    return err ? "the OV2640 does not answer on SCCB" : NULL;
}

static const char *gc0328_configure(const camera_config_t *c) {
    if (c->fw > GC_ARRAY_W || c->fh > GC_ARRAY_H) {
        return "the GC0328 sees 640x480: frames up to VGA";
    }
    // the smallest subsample ratio of MaixPy's (1, 1/2, 1/4) whose image still holds the frame
    unsigned n = (c->fw <= GC_ARRAY_W / 4 && c->fh <= GC_ARRAY_H / 4) ? 4
        : (c->fw <= GC_ARRAY_W / 2 && c->fh <= GC_ARRAY_H / 2) ? 2 : 1;
    unsigned cx = (GC_ARRAY_W / n - c->fw) / 2 + c->wx, cy = (GC_ARRAY_H / n - c->fh) / 2 + c->wy;
    int err = 0;
    err |= gc_w(GC_PAGE_SEL, 0x00);
    err |= gc_w(0x17, 0x14 | (c->hmirror ? 0x01 : 0) | (c->vflip ? 0x02 : 0)); // 0x14: MaixPy's table
    if (n == 1) {
        err |= gc_w(0x4B, 0x8B); // MaixPy's VGA table
    }
    err |= gc_w(0x50, 0x01); // crop window: y, x, height, width (after the subsample)
    err |= gc_w(0x51, (cy >> 8) & 0x01);
    err |= gc_w(0x52, cy & 0xFF);
    err |= gc_w(0x53, (cx >> 8) & 0x03);
    err |= gc_w(0x54, cx & 0xFF);
    err |= gc_w(0x55, (c->wh >> 8) & 0x01);
    err |= gc_w(0x56, c->wh & 0xFF);
    err |= gc_w(0x57, (c->ww >> 8) & 0x03);
    err |= gc_w(0x58, c->ww & 0xFF);
    err |= gc_w(0x59, (uint8_t)(n * 0x11)); // subsample ratio rows/columns; 0x5A mode as MaixPy per ratio
    err |= gc_w(0x5A, n == 1 ? 0x02 : n == 2 ? 0x00 : 0x03);
    for (uint8_t r = 0x5B; r <= 0x62; r++) {
        err |= gc_w(r, 0x00);
    }
    return err ? "the GC0328 does not answer on SCCB" : NULL;
}

static const char *ov5640_configure(const camera_config_t *c) {
    if (c->wx || c->wy || c->ww != c->fw || c->wh != c->fh) {
        return "set_windowing is not supported with the OV5640 (MaixPy's OV5640 driver has no windowing either)";
    }
    if (c->fw > OV5640_MAX_W || c->fh > OV5640_MAX_H) {
        return "the OV5640 mode of this firmware scales a 640x480 image: frames up to VGA";
    }
    int err = 0;
    err |= ov5_w(0x4300, c->gray ? 0x10 : 0x61); // format: YUV422 (the DVP keeps Y) / RGB565, as MaixPy
    err |= ov5_w(0x501F, c->gray ? 0x00 : 0x01); // ISP output: YUV / RGB
    err |= ov5_w(0x3808, (uint8_t)(c->fw >> 8)); // DVPHO, DVPVO: the ISP's output size
    err |= ov5_w(0x3809, (uint8_t)(c->fw & 0xFF));
    err |= ov5_w(0x380A, (uint8_t)(c->fh >> 8));
    err |= ov5_w(0x380B, (uint8_t)(c->fh & 0xFF));
    // MaixPy: 0x3820 bits 1-2 set (its table's 0x46) is the upright picture, set_vflip clears them;
    // set_hmirror sets 0x3821 bits 1-2
    err |= ov5_w(0x3820, c->vflip ? 0x40 : 0x46);
    err |= ov5_w(0x3821, c->hmirror ? 0x06 : 0x00);
    return err ? "the OV5640 does not answer on SCCB" : NULL;
}

const char *camera_configure(int id, const camera_config_t *cfg) {
    if (cfg->ww % 8) {
        return "the DVP captures widths that are multiples of 8";
    }
    switch (id) {
        case CAMERA_OV2640:
            return ov2640_configure(cfg);
        case CAMERA_OV5640:
            return ov5640_configure(cfg);
        case CAMERA_GC0328:
            return gc0328_configure(cfg);
        default:
            return "no camera answered on SCCB (OV2640 at 0x60, OV5640 at 0x78, GC0328 at 0x42)";
    }
}

uint32_t camera_dvp_format(int id, bool gray) {
    if (gray) {
        return DVP_CFG_FMT_Y;
    }
    return id == CAMERA_OV5640 ? DVP_CFG_FMT_RGB : DVP_CFG_FMT_YUV;
}

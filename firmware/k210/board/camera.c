// SPDX-License-Identifier: Apache-2.0
// Camera probe and OV2640 configuration over the DVP's SCCB master.
//
// The OV2640 runs its SVGA (800x600) sensor mode; its DSP crops a window of that image (0x51..0x55) and scales it
// to the output size (ZMOW/ZMOH, 0x5A..0x5C). A frame size F (QVGA ...) is the whole 800x600 image scaled to F;
// set_windowing's window is the same crop in sensor pixels. Output is YUV422: the DVP turns it into planar RGB888
// (or keeps Y for GRAYSCALE). Only the registers below are written: the image-quality tables of MaixPy's driver
// (AEC/AGC/AWB, gamma, lens correction) are not, which a real board may need (not checked on silicon).
#include <stddef.h>

#include "camera.h"
#include "dvp.h"

#define OV_BANK_SEL 0xFF
#define OV_BANK_DSP 0x00
#define OV_BANK_SENSOR 0x01
#define OV_SENSOR_W 800u
#define OV_SENSOR_H 600u

static int ov_w(uint8_t reg, uint8_t val) {
    return dvp_sccb_write(CAMERA_ADDR_OV2640, reg, val, false);
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
    if (dvp_sccb_write(CAMERA_ADDR_GC0328, 0xFE, 0x00, false) == 0 &&
        dvp_sccb_read(CAMERA_ADDR_GC0328, 0xF0, &a, false) == 0 && a == 0x9D) {
        return CAMERA_GC0328;
    }
    return 0;
}

static const char *ov2640_configure(const camera_config_t *c) {
    // the window in sensor pixels: the frame is the whole sensor image scaled by OV_SENSOR_W / fw
    unsigned sx = c->wx * OV_SENSOR_W / c->fw, sy = c->wy * OV_SENSOR_H / c->fh;
    unsigned sw = c->ww * OV_SENSOR_W / c->fw, sh = c->wh * OV_SENSOR_H / c->fh;
    sw &= ~3u;
    sh &= ~3u;
    if (c->ww % 4 || c->wh % 4 || c->ww > 1020 || c->wh > 508 || sw == 0 || sh == 0) {
        return "the OV2640 outputs widths and heights that are multiples of 4 (at most 1020x508)";
    }
    if (c->ww % 8) {
        return "the DVP captures widths that are multiples of 8";
    }
    int err = 0;
    err |= ov_w(OV_BANK_SEL, OV_BANK_SENSOR);
    err |= ov_w(0x12, 0x40);                       // COM7: SVGA sensor mode
    err |= ov_w(0x04, (c->hmirror ? 0x80 : 0) | (c->vflip ? 0x40 : 0) | 0x28); // REG04: mirror, flip, VREF
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
    err |= ov_w(0xDA, 0x00);                       // IMAGE_MODE: YUV422
    err |= ov_w(0xE0, 0x00);
    err |= ov_w(0x05, 0x00);                       // DSP on
    return err ? "the OV2640 does not answer on SCCB" : NULL;
}

const char *camera_configure(int id, const camera_config_t *cfg) {
    switch (id) {
        case CAMERA_OV2640:
            return ov2640_configure(cfg);
        case CAMERA_OV5640:
            return "an OV5640 answered; openkpu has no OV5640 register table yet (only the OV2640 is configured)";
        case CAMERA_GC0328:
            return "a GC0328 answered (Maix Dock); openkpu has no GC0328 register table yet (only the OV2640)";
        default:
            return "no camera answered on SCCB (OV2640 at 0x60, OV5640 at 0x78, GC0328 at 0x42)";
    }
}

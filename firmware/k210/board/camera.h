// SPDX-License-Identifier: Apache-2.0
// The Maix camera over SCCB: probe (OV2640, OV5640, GC0328 ids), MaixPy's register tables at reset, and the
// geometry / format / mirror-flip configuration of each sensor.
#ifndef OPENKPU_K210_CAMERA_H
#define OPENKPU_K210_CAMERA_H

#include <stdbool.h>
#include <stdint.h>

#define CAMERA_OV2640 0x2642
#define CAMERA_OV5640 0x5640
#define CAMERA_GC0328 0x9d

#define CAMERA_ADDR_OV2640 0x60 // SCCB 8-bit write addresses
#define CAMERA_ADDR_OV5640 0x78
#define CAMERA_ADDR_GC0328 0x42

typedef struct {
    bool gray;                 // the DVP keeps Y only; else it converts YUV422 (RGB565 for the OV5640) to RGB888
    unsigned fw, fh;           // frame size (QVGA 320x240 ...)
    unsigned wx, wy, ww, wh;   // window inside the frame (the whole frame without set_windowing)
    bool hmirror, vflip;
} camera_config_t;

// The sensor's id (CAMERA_OV2640, ...) or 0 when none answers. Leaves the sensor reset.
int camera_probe(void);
// Write the sensor's MaixPy register tables (image quality, clocks, sensor mode): NULL when done, else why not.
const char *camera_reset(int id);
// Program the sensor for `cfg`. NULL when done, else why not (a message for the user).
const char *camera_configure(int id, const camera_config_t *cfg);
// The DVP input format (dvp.h DVP_CFG_FMT_*) for what the sensor sends: Y of YUV422 for GRAYSCALE, else YUV422,
// or RGB565 for the OV5640 (as MaixPy).
uint32_t camera_dvp_format(int id, bool gray);

#endif

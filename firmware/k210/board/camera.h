// SPDX-License-Identifier: Apache-2.0
// The Maix camera over SCCB: probe (OV2640, OV5640, GC0328 ids) and the OV2640 configuration openkpu writes.
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
    bool gray;                 // YUV422 out, the DVP keeps Y only; else YUV422 -> planar RGB888
    unsigned fw, fh;           // frame size (QVGA 320x240 ...)
    unsigned wx, wy, ww, wh;   // window inside the frame (the whole frame without set_windowing)
    bool hmirror, vflip;
} camera_config_t;

// The sensor's id (CAMERA_OV2640, ...) or 0 when none answers. Leaves the sensor reset.
int camera_probe(void);
// Program the sensor for `cfg`. NULL when done, else why not (a message for the user).
const char *camera_configure(int id, const camera_config_t *cfg);

#endif

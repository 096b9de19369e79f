// SPDX-License-Identifier: Apache-2.0
/*
 * `_camera`: the DVP and the sensor behind the frozen `sensor` module (firmware/k210/sensor.py).
 *   init(xclk_hz, pins=None, set_regs=True) -> sensor id (0x2642 OV2640, 0x5640 OV5640, 0x9d GC0328, 0 none)
 *                               pins: (sda, scl, rst, vsync, pwdn, href, xclk, pclk), default the Maix pads 40..47;
 *                               set_regs: write MaixPy's register tables for the sensor (as MaixPy's reset)
 *   configure(gray, fw, fh, wx, wy, ww, wh, hmirror, vflip)
 *   capture(buf, w, h, gray, timeout_ms)   one frame into buf: planes R, G, B (or one Y plane), w*h each
 *   wait_frames(n, timeout_ms)             let the sensor stream n frames without converting them
 *   read_reg(reg) / write_reg(reg, value)  the sensor's 8-bit registers (MaixPy's __read_reg / __write_reg)
 */
#include "py/runtime.h"
#include "py/mperrno.h"

#include "board/camera.h"
#include "board/dvp.h"

static int camera_id;

static uint8_t sensor_addr(void) {
    return camera_id == CAMERA_OV5640 ? CAMERA_ADDR_OV5640 : camera_id == CAMERA_GC0328 ? CAMERA_ADDR_GC0328
                                                                                       : CAMERA_ADDR_OV2640;
}

static mp_obj_t camera_init(size_t n_args, const mp_obj_t *args) {
    dvp_pins_t pins = dvp_maix_pins;
    if (n_args > 1 && args[1] != mp_const_none) {
        size_t n;
        mp_obj_t *items;
        mp_obj_get_array(args[1], &n, &items);
        if (n != 8) {
            mp_raise_ValueError(MP_ERROR_TEXT("camera pins: (sda, scl, rst, vsync, pwdn, href, xclk, pclk)"));
        }
        uint8_t *p = (uint8_t *)&pins;
        for (size_t i = 0; i < 8; i++) {
            mp_int_t io = mp_obj_get_int(items[i]);
            if (io < 0 || io > 47) {
                mp_raise_ValueError(MP_ERROR_TEXT("camera pins are IO 0..47"));
            }
            p[i] = (uint8_t)io;
        }
    }
    dvp_init(&pins, (uint32_t)mp_obj_get_int(args[0]));
    camera_id = camera_probe();
    if (camera_id && (n_args < 3 || mp_obj_is_true(args[2]))) {
        const char *why = camera_reset(camera_id);
        if (why) {
            mp_raise_msg_varg(&mp_type_OSError, MP_ERROR_TEXT("sensor: %s"), why);
        }
    }
    return mp_obj_new_int(camera_id);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(camera_init_obj, 1, 3, camera_init);

static mp_obj_t camera_configure_(size_t n_args, const mp_obj_t *a) {
    camera_config_t c = {
        .gray = mp_obj_is_true(a[0]),
        .fw = (unsigned)mp_obj_get_int(a[1]), .fh = (unsigned)mp_obj_get_int(a[2]),
        .wx = (unsigned)mp_obj_get_int(a[3]), .wy = (unsigned)mp_obj_get_int(a[4]),
        .ww = (unsigned)mp_obj_get_int(a[5]), .wh = (unsigned)mp_obj_get_int(a[6]),
        .hmirror = mp_obj_is_true(a[7]), .vflip = mp_obj_is_true(a[8]),
    };
    const char *why = camera_configure(camera_id, &c);
    if (why) {
        mp_raise_msg_varg(&mp_type_OSError, MP_ERROR_TEXT("sensor: %s"), why);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(camera_configure_obj, 9, 9, camera_configure_);

static mp_obj_t camera_capture(size_t n_args, const mp_obj_t *a) {
    mp_buffer_info_t bi;
    mp_get_buffer_raise(a[0], &bi, MP_BUFFER_WRITE);
    size_t w = (size_t)mp_obj_get_int(a[1]), h = (size_t)mp_obj_get_int(a[2]);
    bool gray = mp_obj_is_true(a[3]);
    size_t n = w * h;
    if (bi.len < n * (gray ? 1 : 3)) {
        mp_raise_ValueError(MP_ERROR_TEXT("capture: buffer too small"));
    }
    uint8_t *r = bi.buf;
    if (dvp_capture(w, h, camera_dvp_format(camera_id, gray), r, gray ? r : r + n, gray ? r : r + 2 * n,
        (uint32_t)mp_obj_get_int(a[4])) != 0) {
        mp_raise_msg(&mp_type_OSError, MP_ERROR_TEXT("sensor: no frame from the camera (DVP timeout)"));
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(camera_capture_obj, 5, 5, camera_capture);

static mp_obj_t camera_wait_frames(mp_obj_t n_in, mp_obj_t timeout_in) {
    if (dvp_wait_frames((unsigned)mp_obj_get_int(n_in), (uint32_t)mp_obj_get_int(timeout_in)) != 0) {
        mp_raise_msg(&mp_type_OSError, MP_ERROR_TEXT("sensor: no frame from the camera (DVP timeout)"));
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(camera_wait_frames_obj, camera_wait_frames);

static mp_obj_t camera_read_reg(mp_obj_t reg_in) {
    uint8_t v;
    if (dvp_sccb_read(sensor_addr(), (uint16_t)mp_obj_get_int(reg_in), &v, camera_id == CAMERA_OV5640) != 0) {
        mp_raise_OSError(MP_EIO);
    }
    return mp_obj_new_int(v);
}
static MP_DEFINE_CONST_FUN_OBJ_1(camera_read_reg_obj, camera_read_reg);

static mp_obj_t camera_write_reg(mp_obj_t reg_in, mp_obj_t val_in) {
    if (dvp_sccb_write(sensor_addr(), (uint16_t)mp_obj_get_int(reg_in), (uint8_t)mp_obj_get_int(val_in),
        camera_id == CAMERA_OV5640) != 0) {
        mp_raise_OSError(MP_EIO);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(camera_write_reg_obj, camera_write_reg);

static const mp_rom_map_elem_t camera_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR__camera) },
    { MP_ROM_QSTR(MP_QSTR_init), MP_ROM_PTR(&camera_init_obj) },
    { MP_ROM_QSTR(MP_QSTR_configure), MP_ROM_PTR(&camera_configure_obj) },
    { MP_ROM_QSTR(MP_QSTR_capture), MP_ROM_PTR(&camera_capture_obj) },
    { MP_ROM_QSTR(MP_QSTR_wait_frames), MP_ROM_PTR(&camera_wait_frames_obj) },
    { MP_ROM_QSTR(MP_QSTR_read_reg), MP_ROM_PTR(&camera_read_reg_obj) },
    { MP_ROM_QSTR(MP_QSTR_write_reg), MP_ROM_PTR(&camera_write_reg_obj) },
};
static MP_DEFINE_CONST_DICT(camera_globals, camera_globals_table);

const mp_obj_module_t camera_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&camera_globals,
};
MP_REGISTER_MODULE(MP_QSTR__camera, camera_module);

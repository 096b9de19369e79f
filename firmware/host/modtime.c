// SPDX-License-Identifier: Apache-2.0
/* openkpu ports: a small `time` module (MicroPython's extmod/modtime.c is not in the core sdist), shared by the host,
 * rv64 and K210 ports; a port adds entries with MICROPY_PY_TIME_EXTRA_GLOBALS. */
#include <time.h>

#include "py/mphal.h"
#include "py/runtime.h"
#include "py/smallint.h"

#define TICKS_PERIOD (MICROPY_PY_TIME_TICKS_PERIOD)
#define TICKS_MAX (TICKS_PERIOD - 1)
#define TICKS_HALFPERIOD (TICKS_PERIOD / 2)

static mp_obj_t port_time_time(void) {
    return mp_obj_new_float((mp_float_t)time(NULL));
}
static MP_DEFINE_CONST_FUN_OBJ_0(port_time_time_obj, port_time_time);

static mp_obj_t port_time_sleep(mp_obj_t s_in) {
    mp_hal_delay_ms((mp_uint_t)(1000 * mp_obj_get_float(s_in)));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(port_time_sleep_obj, port_time_sleep);

static mp_obj_t port_time_sleep_ms(mp_obj_t ms_in) {
    mp_int_t ms = mp_obj_get_int(ms_in);
    if (ms > 0) {
        mp_hal_delay_ms(ms);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(port_time_sleep_ms_obj, port_time_sleep_ms);

static mp_obj_t port_time_sleep_us(mp_obj_t us_in) {
    mp_int_t us = mp_obj_get_int(us_in);
    if (us > 0) {
        mp_hal_delay_us(us);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(port_time_sleep_us_obj, port_time_sleep_us);

static mp_obj_t port_time_ticks_ms(void) {
    return MP_OBJ_NEW_SMALL_INT(mp_hal_ticks_ms() & TICKS_MAX);
}
static MP_DEFINE_CONST_FUN_OBJ_0(port_time_ticks_ms_obj, port_time_ticks_ms);

static mp_obj_t port_time_ticks_us(void) {
    return MP_OBJ_NEW_SMALL_INT(mp_hal_ticks_us() & TICKS_MAX);
}
static MP_DEFINE_CONST_FUN_OBJ_0(port_time_ticks_us_obj, port_time_ticks_us);

static mp_obj_t port_time_ticks_diff(mp_obj_t end_in, mp_obj_t start_in) {
    mp_uint_t start = MP_OBJ_SMALL_INT_VALUE(start_in);
    mp_uint_t end = MP_OBJ_SMALL_INT_VALUE(end_in);
    mp_int_t diff = ((end - start + TICKS_HALFPERIOD) & TICKS_MAX) - TICKS_HALFPERIOD;
    return MP_OBJ_NEW_SMALL_INT(diff);
}
static MP_DEFINE_CONST_FUN_OBJ_2(port_time_ticks_diff_obj, port_time_ticks_diff);

static mp_obj_t port_time_ticks_add(mp_obj_t ticks_in, mp_obj_t delta_in) {
    mp_uint_t ticks = MP_OBJ_SMALL_INT_VALUE(ticks_in);
    mp_uint_t delta = mp_obj_get_int(delta_in);
    return MP_OBJ_NEW_SMALL_INT((ticks + delta) & TICKS_MAX);
}
static MP_DEFINE_CONST_FUN_OBJ_2(port_time_ticks_add_obj, port_time_ticks_add);

static const mp_rom_map_elem_t port_time_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_time) },
    { MP_ROM_QSTR(MP_QSTR_time), MP_ROM_PTR(&port_time_time_obj) },
    { MP_ROM_QSTR(MP_QSTR_sleep), MP_ROM_PTR(&port_time_sleep_obj) },
    { MP_ROM_QSTR(MP_QSTR_sleep_ms), MP_ROM_PTR(&port_time_sleep_ms_obj) },
    { MP_ROM_QSTR(MP_QSTR_sleep_us), MP_ROM_PTR(&port_time_sleep_us_obj) },
    { MP_ROM_QSTR(MP_QSTR_ticks_ms), MP_ROM_PTR(&port_time_ticks_ms_obj) },
    { MP_ROM_QSTR(MP_QSTR_ticks_us), MP_ROM_PTR(&port_time_ticks_us_obj) },
    { MP_ROM_QSTR(MP_QSTR_ticks_diff), MP_ROM_PTR(&port_time_ticks_diff_obj) },
    { MP_ROM_QSTR(MP_QSTR_ticks_add), MP_ROM_PTR(&port_time_ticks_add_obj) },
#ifdef MICROPY_PY_TIME_EXTRA_GLOBALS
    MICROPY_PY_TIME_EXTRA_GLOBALS // a port's additions (the K210's time.clock)
#endif
};
static MP_DEFINE_CONST_DICT(port_time_globals, port_time_globals_table);

const mp_obj_module_t port_time_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&port_time_globals,
};
MP_REGISTER_MODULE(MP_QSTR_time, port_time_module);

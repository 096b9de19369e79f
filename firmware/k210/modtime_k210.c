// SPDX-License-Identifier: Apache-2.0
/* openkpu K210: the `time` module: the host port's functions (firmware/host/modtime.c) plus MaixPy's time.clock()
 * (tick() at the start of a frame, fps() / avg() after it), which MaixPy's camera examples use. */
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


// time.clock(): tick() remembers now; fps() = 1 s / (now - tick), avg() = that time in ms.
typedef struct {
    mp_obj_base_t base;
    mp_uint_t t;
    bool ticked;
    mp_float_t dt; // seconds
} clock_obj_t;

static const mp_obj_type_t clock_type;

static mp_obj_t clock_make_new(const mp_obj_type_t *type, size_t n_args, size_t n_kw, const mp_obj_t *args) {
    mp_arg_check_num(n_args, n_kw, 0, 0, false);
    clock_obj_t *self = mp_obj_malloc(clock_obj_t, type);
    self->ticked = false;
    self->dt = 0;
    return MP_OBJ_FROM_PTR(self);
}

static mp_obj_t clock_tick(mp_obj_t self_in) {
    clock_obj_t *self = MP_OBJ_TO_PTR(self_in);
    self->t = mp_hal_ticks_us();
    self->ticked = true;
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(clock_tick_obj, clock_tick);

static mp_obj_t clock_fps(mp_obj_t self_in) {
    clock_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (self->ticked) {
        self->dt = (mp_float_t)(mp_uint_t)(mp_hal_ticks_us() - self->t) / (mp_float_t)1e6;
    }
    return mp_obj_new_float(self->dt > 0 ? 1 / self->dt : 0);
}
static MP_DEFINE_CONST_FUN_OBJ_1(clock_fps_obj, clock_fps);

static mp_obj_t clock_avg(mp_obj_t self_in) {
    clock_obj_t *self = MP_OBJ_TO_PTR(self_in);
    return mp_obj_new_float(self->dt * 1000);
}
static MP_DEFINE_CONST_FUN_OBJ_1(clock_avg_obj, clock_avg);

static mp_obj_t clock_reset(mp_obj_t self_in) {
    clock_obj_t *self = MP_OBJ_TO_PTR(self_in);
    self->ticked = false;
    self->dt = 0;
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(clock_reset_obj, clock_reset);

static const mp_rom_map_elem_t clock_locals_table[] = {
    { MP_ROM_QSTR(MP_QSTR_tick), MP_ROM_PTR(&clock_tick_obj) },
    { MP_ROM_QSTR(MP_QSTR_fps), MP_ROM_PTR(&clock_fps_obj) },
    { MP_ROM_QSTR(MP_QSTR_avg), MP_ROM_PTR(&clock_avg_obj) },
    { MP_ROM_QSTR(MP_QSTR_reset), MP_ROM_PTR(&clock_reset_obj) },
};
static MP_DEFINE_CONST_DICT(clock_locals, clock_locals_table);

static MP_DEFINE_CONST_OBJ_TYPE(clock_type, MP_QSTR_clock, MP_TYPE_FLAG_NONE, make_new, clock_make_new,
    locals_dict, &clock_locals);

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
    { MP_ROM_QSTR(MP_QSTR_clock), MP_ROM_PTR(&clock_type) },
};
static MP_DEFINE_CONST_DICT(port_time_globals, port_time_globals_table);

const mp_obj_module_t port_time_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&port_time_globals,
};
MP_REGISTER_MODULE(MP_QSTR_time, port_time_module);

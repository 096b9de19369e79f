// SPDX-License-Identifier: Apache-2.0
/* openkpu K210: MaixPy's time.clock() (tick() at the start of a frame, fps() / avg() after it), which MaixPy's camera
 * examples use. It joins the host port's time module (firmware/host/modtime.c) through MICROPY_PY_TIME_EXTRA_GLOBALS
 * (mpconfigport.h). */
#include "py/runtime.h"
#include "py/mphal.h"

// time.clock(): tick() remembers now; fps() = 1 s / (now - tick), avg() = that time in ms.
typedef struct {
    mp_obj_base_t base;
    mp_uint_t t;
    bool ticked;
    mp_float_t dt; // seconds
} clock_obj_t;

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

MP_DEFINE_CONST_OBJ_TYPE(port_time_clock_type, MP_QSTR_clock, MP_TYPE_FLAG_NONE, make_new, clock_make_new,
    locals_dict, &clock_locals);

// SPDX-License-Identifier: Apache-2.0
/*
 * `Maix`: the part of MaixPy's module this port has, under MaixPy's names.
 *   Maix.utils.flash_read(offset, size) -> bytes   the on-board SPI flash (KPU.py loads models through it)
 *   Maix.utils.gc_heap_size() -> int               the GC heap (fixed at build time: make firmware GC_HEAP_KB=...)
 *   Maix.utils.heap_free() -> int                  free C heap (picolibc malloc)
 */
#include "py/runtime.h"
#include "py/mperrno.h"
#include "py/objstr.h"

#include "board/board.h"
#include "board/spi3_flash.h"

static mp_obj_t maix_utils_flash_read(mp_obj_t offset_in, mp_obj_t size_in) {
    mp_int_t offset = mp_obj_get_int(offset_in);
    mp_int_t size = mp_obj_get_int(size_in);
    mp_int_t flash = (mp_int_t)spi3_flash_size();
    if (offset < 0 || size < 0 || offset > flash || size > flash - offset) {
        mp_raise_msg_varg(&mp_type_ValueError,
            MP_ERROR_TEXT("flash_read(0x%x, %d) is outside the %d-byte SPI flash"), (int)offset, (int)size, (int)flash);
    }
    vstr_t vstr;
    vstr_init_len(&vstr, (size_t)size);
    if (spi3_flash_read((uint32_t)offset, (uint8_t *)vstr.buf, (size_t)size) != 0) {
        vstr_clear(&vstr);
        mp_raise_OSError(MP_EIO);
    }
    return mp_obj_new_bytes_from_vstr(&vstr);
}
static MP_DEFINE_CONST_FUN_OBJ_2(maix_utils_flash_read_obj, maix_utils_flash_read);

static mp_obj_t maix_utils_gc_heap_size(size_t n_args, const mp_obj_t *args) {
    mp_int_t size = (mp_int_t)board_gc_heap_size();
    if (n_args == 1 && mp_obj_get_int(args[0]) != size) {
        mp_raise_ValueError(MP_ERROR_TEXT("the GC heap size is set when the firmware is built (GC_HEAP_KB)"));
    }
    return mp_obj_new_int(size);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(maix_utils_gc_heap_size_obj, 0, 1, maix_utils_gc_heap_size);

static mp_obj_t maix_utils_heap_free(void) {
    return mp_obj_new_int((mp_int_t)board_c_heap_free());
}
static MP_DEFINE_CONST_FUN_OBJ_0(maix_utils_heap_free_obj, maix_utils_heap_free);

static const mp_rom_map_elem_t maix_utils_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_utils) },
    { MP_ROM_QSTR(MP_QSTR_flash_read), MP_ROM_PTR(&maix_utils_flash_read_obj) },
    { MP_ROM_QSTR(MP_QSTR_gc_heap_size), MP_ROM_PTR(&maix_utils_gc_heap_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_heap_free), MP_ROM_PTR(&maix_utils_heap_free_obj) },
};
static MP_DEFINE_CONST_DICT(maix_utils_globals, maix_utils_globals_table);

static const mp_obj_module_t maix_utils_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&maix_utils_globals,
};

static const mp_rom_map_elem_t maix_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_Maix) },
    { MP_ROM_QSTR(MP_QSTR_utils), MP_ROM_PTR(&maix_utils_module) },
};
static MP_DEFINE_CONST_DICT(maix_globals, maix_globals_table);

const mp_obj_module_t maix_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&maix_globals,
};
MP_REGISTER_MODULE(MP_QSTR_Maix, maix_module);

// SPDX-License-Identifier: Apache-2.0
/*
 * `_board`: what the K210 port knows about its board that MaixPy has no name for.
 *   flash_size() -> int              bytes of SPI flash (from the 0x90 id; 16 MiB on every Maix board)
 *   flash_id() -> (manufacturer, device)          0x90 read id, e.g. (0xef, 0x17) W25Q128, (0xc8, 0x17) GD25Q128
 *   flash_jedec_id() -> (manufacturer, type, capacity)   0x9F
 *   cpu_freq(), kpu_freq(), mtime_freq() -> Hz   from the clock registers as set at boot
 *   reset()                          SoC reset: the boot ROM loads the firmware again
 */
#include "py/runtime.h"
#include "py/mperrno.h"

#include "board/clint.h"
#include "board/spi3_flash.h"
#include "board/sysctl.h"

static mp_obj_t board_flash_size(void) {
    return mp_obj_new_int_from_uint(spi3_flash_size());
}
static MP_DEFINE_CONST_FUN_OBJ_0(board_flash_size_obj, board_flash_size);

static mp_obj_t bytes_tuple(const uint8_t *b, size_t n) {
    mp_obj_t items[3];
    for (size_t i = 0; i < n; i++) {
        items[i] = MP_OBJ_NEW_SMALL_INT(b[i]);
    }
    return mp_obj_new_tuple(n, items);
}

static mp_obj_t board_flash_id(void) {
    uint8_t id[2];
    if (spi3_flash_read_id(id) != 0) {
        mp_raise_OSError(MP_EIO);
    }
    return bytes_tuple(id, 2);
}
static MP_DEFINE_CONST_FUN_OBJ_0(board_flash_id_obj, board_flash_id);

static mp_obj_t board_flash_jedec_id(void) {
    uint8_t id[3];
    if (spi3_flash_jedec_id(id) != 0) {
        mp_raise_OSError(MP_EIO);
    }
    return bytes_tuple(id, 3);
}
static MP_DEFINE_CONST_FUN_OBJ_0(board_flash_jedec_id_obj, board_flash_jedec_id);

static mp_obj_t board_cpu_freq(void) {
    return mp_obj_new_int_from_uint(sysctl_cpu_hz());
}
static MP_DEFINE_CONST_FUN_OBJ_0(board_cpu_freq_obj, board_cpu_freq);

static mp_obj_t board_kpu_freq(void) {
    return mp_obj_new_int_from_uint(sysctl_kpu_hz());
}
static MP_DEFINE_CONST_FUN_OBJ_0(board_kpu_freq_obj, board_kpu_freq);

static mp_obj_t board_mtime_freq(void) {
    return mp_obj_new_int_from_uint(clint_hz());
}
static MP_DEFINE_CONST_FUN_OBJ_0(board_mtime_freq_obj, board_mtime_freq);

static mp_obj_t board_reset(void) {
    sysctl_soft_reset();
}
static MP_DEFINE_CONST_FUN_OBJ_0(board_reset_obj, board_reset);

static const mp_rom_map_elem_t board_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR__board) },
    { MP_ROM_QSTR(MP_QSTR_flash_size), MP_ROM_PTR(&board_flash_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_flash_id), MP_ROM_PTR(&board_flash_id_obj) },
    { MP_ROM_QSTR(MP_QSTR_flash_jedec_id), MP_ROM_PTR(&board_flash_jedec_id_obj) },
    { MP_ROM_QSTR(MP_QSTR_cpu_freq), MP_ROM_PTR(&board_cpu_freq_obj) },
    { MP_ROM_QSTR(MP_QSTR_kpu_freq), MP_ROM_PTR(&board_kpu_freq_obj) },
    { MP_ROM_QSTR(MP_QSTR_mtime_freq), MP_ROM_PTR(&board_mtime_freq_obj) },
    { MP_ROM_QSTR(MP_QSTR_reset), MP_ROM_PTR(&board_reset_obj) },
};
static MP_DEFINE_CONST_DICT(board_globals, board_globals_table);

const mp_obj_module_t board_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&board_globals,
};
MP_REGISTER_MODULE(MP_QSTR__board, board_module);

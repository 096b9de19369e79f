// SPDX-License-Identifier: Apache-2.0
/*
 * openkpu port: `open()` on the C library's stdio (host files; under QEMU, host files through semihosting), and a
 * minimal `os` (stat, remove, getcwd) so scripts can check a model file exists before loading it. The K210 port
 * builds it over its /flash filesystem (OPENKPU_HAVE_FLASH_FS: the POSIX calls of firmware/k210/fs/flash_fs.c), with
 * listdir, mkdir and rename added.
 */
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "py/builtin.h"
#include "py/mperrno.h"
#include "py/runtime.h"
#include "py/stream.h"

typedef struct _port_file_obj_t {
    mp_obj_base_t base;
    FILE *fp; /* NULL once closed */
} port_file_obj_t;

static const mp_obj_type_t port_textio_type;
static const mp_obj_type_t port_fileio_type;

static void port_file_print(const mp_print_t *print, mp_obj_t self_in, mp_print_kind_t kind) {
    port_file_obj_t *self = MP_OBJ_TO_PTR(self_in);
    mp_printf(print, "<io.%s %p>", mp_obj_get_type_str(self_in), self->fp);
}

static int port_file_check(port_file_obj_t *self, int *errcode) {
    if (self->fp == NULL) {
        *errcode = MP_EBADF;
        return 0;
    }
    return 1;
}

static mp_uint_t port_file_read(mp_obj_t self_in, void *buf, mp_uint_t size, int *errcode) {
    port_file_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (!port_file_check(self, errcode)) {
        return MP_STREAM_ERROR;
    }
    size_t n = fread(buf, 1, size, self->fp);
    if (n == 0 && ferror(self->fp)) {
        *errcode = errno ? errno : MP_EIO;
        clearerr(self->fp);
        return MP_STREAM_ERROR;
    }
    return n;
}

static mp_uint_t port_file_write(mp_obj_t self_in, const void *buf, mp_uint_t size, int *errcode) {
    port_file_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (!port_file_check(self, errcode)) {
        return MP_STREAM_ERROR;
    }
    size_t n = fwrite(buf, 1, size, self->fp);
    if (n != size && ferror(self->fp)) {
        *errcode = errno ? errno : MP_EIO;
        clearerr(self->fp);
        return MP_STREAM_ERROR;
    }
    return n;
}

static mp_uint_t port_file_ioctl(mp_obj_t self_in, mp_uint_t request, uintptr_t arg, int *errcode) {
    port_file_obj_t *self = MP_OBJ_TO_PTR(self_in);
    if (request == MP_STREAM_CLOSE) {
        if (self->fp != NULL) {
            fclose(self->fp);
            self->fp = NULL;
        }
        return 0;
    }
    if (!port_file_check(self, errcode)) {
        return MP_STREAM_ERROR;
    }
    switch (request) {
        case MP_STREAM_FLUSH:
            fflush(self->fp);
            return 0;
        case MP_STREAM_SEEK: {
            struct mp_stream_seek_t *s = (struct mp_stream_seek_t *)arg;
            int whence = s->whence == MP_SEEK_SET ? SEEK_SET : s->whence == MP_SEEK_CUR ? SEEK_CUR : SEEK_END;
            if (fseek(self->fp, (long)s->offset, whence) != 0) {
                *errcode = errno ? errno : MP_EINVAL;
                return MP_STREAM_ERROR;
            }
            s->offset = ftell(self->fp);
            return 0;
        }
        default:
            *errcode = MP_EINVAL;
            return MP_STREAM_ERROR;
    }
}

static const mp_rom_map_elem_t port_file_locals_dict_table[] = {
    { MP_ROM_QSTR(MP_QSTR_read), MP_ROM_PTR(&mp_stream_read_obj) },
    { MP_ROM_QSTR(MP_QSTR_readinto), MP_ROM_PTR(&mp_stream_readinto_obj) },
    { MP_ROM_QSTR(MP_QSTR_readline), MP_ROM_PTR(&mp_stream_unbuffered_readline_obj) },
    { MP_ROM_QSTR(MP_QSTR_readlines), MP_ROM_PTR(&mp_stream_unbuffered_readlines_obj) },
    { MP_ROM_QSTR(MP_QSTR_write), MP_ROM_PTR(&mp_stream_write_obj) },
    { MP_ROM_QSTR(MP_QSTR_seek), MP_ROM_PTR(&mp_stream_seek_obj) },
    { MP_ROM_QSTR(MP_QSTR_tell), MP_ROM_PTR(&mp_stream_tell_obj) },
    { MP_ROM_QSTR(MP_QSTR_flush), MP_ROM_PTR(&mp_stream_flush_obj) },
    { MP_ROM_QSTR(MP_QSTR_close), MP_ROM_PTR(&mp_stream_close_obj) },
    { MP_ROM_QSTR(MP_QSTR___del__), MP_ROM_PTR(&mp_stream_close_obj) },
    { MP_ROM_QSTR(MP_QSTR___enter__), MP_ROM_PTR(&mp_identity_obj) },
    { MP_ROM_QSTR(MP_QSTR___exit__), MP_ROM_PTR(&mp_stream___exit___obj) },
};
static MP_DEFINE_CONST_DICT(port_file_locals_dict, port_file_locals_dict_table);

static const mp_stream_p_t port_fileio_stream_p = {
    .read = port_file_read,
    .write = port_file_write,
    .ioctl = port_file_ioctl,
};

static const mp_stream_p_t port_textio_stream_p = {
    .read = port_file_read,
    .write = port_file_write,
    .ioctl = port_file_ioctl,
    .is_text = true,
};

static MP_DEFINE_CONST_OBJ_TYPE(
    port_fileio_type,
    MP_QSTR_FileIO,
    MP_TYPE_FLAG_ITER_IS_STREAM,
    print, port_file_print,
    protocol, &port_fileio_stream_p,
    locals_dict, &port_file_locals_dict
    );

static MP_DEFINE_CONST_OBJ_TYPE(
    port_textio_type,
    MP_QSTR_TextIOWrapper,
    MP_TYPE_FLAG_ITER_IS_STREAM,
    print, port_file_print,
    protocol, &port_textio_stream_p,
    locals_dict, &port_file_locals_dict
    );

mp_obj_t mp_builtin_open(size_t n_args, const mp_obj_t *pos_args, mp_map_t *kw_args) {
    enum { ARG_file, ARG_mode };
    static const mp_arg_t allowed_args[] = {
        { MP_QSTR_file, MP_ARG_OBJ | MP_ARG_REQUIRED, {.u_rom_obj = MP_ROM_NONE} },
        { MP_QSTR_mode, MP_ARG_OBJ, {.u_rom_obj = MP_ROM_QSTR(MP_QSTR_r)} },
        { MP_QSTR_buffering, MP_ARG_KW_ONLY | MP_ARG_INT, {.u_int = -1} },
        { MP_QSTR_encoding, MP_ARG_KW_ONLY | MP_ARG_OBJ, {.u_rom_obj = MP_ROM_NONE} },
    };
    mp_arg_val_t args[MP_ARRAY_SIZE(allowed_args)];
    mp_arg_parse_all(n_args, pos_args, kw_args, MP_ARRAY_SIZE(allowed_args), allowed_args, args);

    const char *path = mp_obj_str_get_str(args[ARG_file].u_obj);
    const char *mode_in = mp_obj_str_get_str(args[ARG_mode].u_obj);
    char mode[4] = "r";
    bool text = true;
    bool plus = false;
    for (const char *m = mode_in; *m; m++) {
        switch (*m) {
            case 'r': case 'w': case 'a': case 'x':
                mode[0] = *m == 'x' ? 'w' : *m;
                break;
            case 'b':
                text = false;
                break;
            case 't':
                text = true;
                break;
            case '+':
                plus = true;
                break;
            default:
                mp_raise_msg_varg(&mp_type_ValueError, MP_ERROR_TEXT("invalid mode: '%s'"), mode_in);
        }
    }
    size_t i = 1;
    mode[i++] = 'b';
    if (plus) {
        mode[i++] = '+';
    }
    mode[i] = '\0';

    errno = 0;
    FILE *fp = fopen(path, mode);
    if (fp == NULL) {
        mp_raise_OSError_with_filename(errno ? errno : MP_ENOENT, path);
    }
    port_file_obj_t *o = mp_obj_malloc_with_finaliser(port_file_obj_t, text ? &port_textio_type : &port_fileio_type);
    o->fp = fp;
    return MP_OBJ_FROM_PTR(o);
}
MP_DEFINE_CONST_FUN_OBJ_KW(mp_builtin_open_obj, 1, mp_builtin_open);

/* ---- os ------------------------------------------------------------------------------------------------------ */

static mp_obj_t port_os_stat(mp_obj_t path_in) {
    const char *path = mp_obj_str_get_str(path_in);
    mp_obj_t t[10];
    for (size_t i = 0; i < 10; i++) {
        t[i] = MP_OBJ_NEW_SMALL_INT(0);
    }
    #ifndef OPENKPU_SEMIHOST
    struct stat st;
    if (stat(path, &st) != 0) {
        mp_raise_OSError_with_filename(errno, path);
    }
    t[0] = MP_OBJ_NEW_SMALL_INT(st.st_mode);
    t[6] = mp_obj_new_int_from_ull((unsigned long long)st.st_size);
    t[8] = mp_obj_new_int_from_ull((unsigned long long)st.st_mtime);
    #else
    /* Semihosting: a file that opens is a regular file; its size comes from seeking to the end. */
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        mp_raise_OSError_with_filename(MP_ENOENT, path);
    }
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fclose(fp);
    t[0] = MP_OBJ_NEW_SMALL_INT(0x8000);
    t[6] = mp_obj_new_int_from_ull((unsigned long long)size);
    #endif
    return mp_obj_new_tuple(10, t);
}
static MP_DEFINE_CONST_FUN_OBJ_1(port_os_stat_obj, port_os_stat);

static mp_obj_t port_os_remove(mp_obj_t path_in) {
    const char *path = mp_obj_str_get_str(path_in);
    if (remove(path) != 0) {
        mp_raise_OSError_with_filename(errno, path);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(port_os_remove_obj, port_os_remove);

static mp_obj_t port_os_getcwd(void) {
    #ifndef OPENKPU_SEMIHOST
    char buf[MICROPY_ALLOC_PATH_MAX];
    if (getcwd(buf, sizeof(buf)) != NULL) {
        return mp_obj_new_str(buf, strlen(buf));
    }
    #endif
    return MP_OBJ_NEW_QSTR(MP_QSTR__slash_);
}
static MP_DEFINE_CONST_FUN_OBJ_0(port_os_getcwd_obj, port_os_getcwd);

#if OPENKPU_HAVE_FLASH_FS
/* The K210 board's /flash (firmware/k210/fs/flash_fs.c): directories too, as MaixPy's os offers them. */
#include "fs/flash_fs.h"

static void port_os_listdir_entry(void *ctx, const char *name, int is_dir, unsigned long size) {
    mp_obj_list_append(MP_OBJ_FROM_PTR(ctx), mp_obj_new_str(name, strlen(name)));
}

// ilistdir's tuples as MicroPython's VFS gives them (name, type, inode, size): what mpremote's `fs` reads.
static void port_os_ilistdir_entry(void *ctx, const char *name, int is_dir, unsigned long size) {
    mp_obj_t t[4] = {
        mp_obj_new_str(name, strlen(name)), MP_OBJ_NEW_SMALL_INT(is_dir ? 0x4000 : 0x8000), MP_OBJ_NEW_SMALL_INT(0),
        mp_obj_new_int_from_uint(size),
    };
    mp_obj_list_append(MP_OBJ_FROM_PTR(ctx), mp_obj_new_tuple(4, t));
}

static mp_obj_t port_os_list(size_t n_args, const mp_obj_t *args,
    void (*entry)(void *ctx, const char *name, int is_dir, unsigned long size)) {
    const char *path = n_args ? mp_obj_str_get_str(args[0]) : "";
    mp_obj_t list = mp_obj_new_list(0, NULL);
    if (flash_fs_listdir(path, entry, MP_OBJ_TO_PTR(list)) != 0) {
        mp_raise_OSError_with_filename(errno, path);
    }
    return list;
}

static mp_obj_t port_os_listdir(size_t n_args, const mp_obj_t *args) {
    return port_os_list(n_args, args, port_os_listdir_entry);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(port_os_listdir_obj, 0, 1, port_os_listdir);

static mp_obj_t port_os_ilistdir(size_t n_args, const mp_obj_t *args) {
    return mp_getiter(port_os_list(n_args, args, port_os_ilistdir_entry), NULL);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(port_os_ilistdir_obj, 0, 1, port_os_ilistdir);

static mp_obj_t port_os_mkdir(mp_obj_t path_in) {
    const char *path = mp_obj_str_get_str(path_in);
    if (mkdir(path, 0777) != 0) {
        mp_raise_OSError_with_filename(errno, path);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_1(port_os_mkdir_obj, port_os_mkdir);

static mp_obj_t port_os_rename(mp_obj_t from_in, mp_obj_t to_in) {
    const char *from = mp_obj_str_get_str(from_in);
    if (rename(from, mp_obj_str_get_str(to_in)) != 0) {
        mp_raise_OSError_with_filename(errno, from);
    }
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(port_os_rename_obj, port_os_rename);
#endif

static const mp_rom_map_elem_t port_os_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_os) },
    { MP_ROM_QSTR(MP_QSTR_stat), MP_ROM_PTR(&port_os_stat_obj) },
    { MP_ROM_QSTR(MP_QSTR_remove), MP_ROM_PTR(&port_os_remove_obj) },
    { MP_ROM_QSTR(MP_QSTR_getcwd), MP_ROM_PTR(&port_os_getcwd_obj) },
    { MP_ROM_QSTR(MP_QSTR_sep), MP_ROM_QSTR(MP_QSTR__slash_) },
    #if OPENKPU_HAVE_FLASH_FS
    { MP_ROM_QSTR(MP_QSTR_listdir), MP_ROM_PTR(&port_os_listdir_obj) },
    { MP_ROM_QSTR(MP_QSTR_ilistdir), MP_ROM_PTR(&port_os_ilistdir_obj) },
    { MP_ROM_QSTR(MP_QSTR_mkdir), MP_ROM_PTR(&port_os_mkdir_obj) },
    { MP_ROM_QSTR(MP_QSTR_rmdir), MP_ROM_PTR(&port_os_remove_obj) }, // littlefs removes an empty directory alike
    { MP_ROM_QSTR(MP_QSTR_rename), MP_ROM_PTR(&port_os_rename_obj) },
    #endif
};
static MP_DEFINE_CONST_DICT(port_os_globals, port_os_globals_table);

const mp_obj_module_t port_os_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&port_os_globals,
};
MP_REGISTER_MODULE(MP_QSTR_os, port_os_module);

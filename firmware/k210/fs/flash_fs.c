// SPDX-License-Identifier: Apache-2.0
/*
 * The board's filesystem: littlefs on the SPI NOR flash, mounted at /flash, behind the POSIX calls picolibc's stdio
 * makes (open, read, write, lseek, close, unlink, stat, ...). So MicroPython's open() (firmware/host/file.c, over
 * fopen), its file reader (py/reader.c, over open/read) and imports all work on it unchanged.
 *
 * Geometry (python/openkpu/fsimage.py builds images with the same): 3 MiB from flash 0xD00000, 4 KiB blocks (the
 * flash's erase sector), 256-byte program and cache size (its page). A flash that holds no filesystem there is
 * formatted at boot, as MaixPy formats its own. Relative paths are relative to /flash (the only directory).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lfs.h"

#include "board/spi3_flash.h"
#include "fs/flash_fs.h"

#define FS_FIRST_FD 3 // 0-2 are the console's
#define FS_MAX_FILES 8

static lfs_t fs;
static int mounted;
static uint8_t read_buf[FS_CACHE_SIZE], prog_buf[FS_CACHE_SIZE], lookahead_buf[FS_LOOKAHEAD_SIZE];

static int bd_read(const struct lfs_config *c, lfs_block_t block, lfs_off_t off, void *buffer, lfs_size_t size) {
    return spi3_flash_read(FS_FLASH_ADDRESS + block * c->block_size + off, buffer, size) ? LFS_ERR_IO : 0;
}

static int bd_prog(const struct lfs_config *c, lfs_block_t block, lfs_off_t off, const void *buffer,
    lfs_size_t size) {
    return spi3_flash_program(FS_FLASH_ADDRESS + block * c->block_size + off, buffer, size) ? LFS_ERR_IO : 0;
}

static int bd_erase(const struct lfs_config *c, lfs_block_t block) {
    return spi3_flash_erase_sector(FS_FLASH_ADDRESS + block * c->block_size) ? LFS_ERR_IO : 0;
}

static int bd_sync(const struct lfs_config *c) {
    return 0; // every program waits until the chip is done
}

static const struct lfs_config fs_config = {
    .read = bd_read,
    .prog = bd_prog,
    .erase = bd_erase,
    .sync = bd_sync,
    .read_size = FS_READ_SIZE,
    .prog_size = FS_PROG_SIZE,
    .block_size = FS_BLOCK_SIZE,
    .block_count = FS_SIZE / FS_BLOCK_SIZE,
    .block_cycles = 500,
    .cache_size = FS_CACHE_SIZE,
    .lookahead_size = FS_LOOKAHEAD_SIZE,
    .read_buffer = read_buf,
    .prog_buffer = prog_buf,
    .lookahead_buffer = lookahead_buf,
};

int flash_fs_mount(int *formatted) {
    *formatted = 0;
    if (mounted) {
        return 0;
    }
    int err = lfs_mount(&fs, &fs_config);
    if (err) {
        // no filesystem yet (a new board, or MaixPy's SPIFFS was there): start an empty one
        err = lfs_format(&fs, &fs_config);
        if (!err) {
            err = lfs_mount(&fs, &fs_config);
        }
        *formatted = !err;
    }
    mounted = !err;
    return err;
}

int flash_fs_usage(unsigned long *total, unsigned long *used) {
    lfs_ssize_t blocks = mounted ? lfs_fs_size(&fs) : -1;
    if (blocks < 0) {
        return -1;
    }
    *total = (unsigned long)FS_SIZE;
    *used = (unsigned long)blocks * FS_BLOCK_SIZE;
    return 0;
}

/* ---- paths ---------------------------------------------------------------------------------------------------- */

// The littlefs path of `path`: "/flash/a/b" and "a/b" -> "a/b"; "/flash" -> "/" (0 = not on the filesystem).
static const char *fs_path(const char *path) {
    static const char mount[] = FS_MOUNT_POINT;
    size_t n = sizeof(mount) - 1;
    if (path[0] != '/') {
        while (path[0] == '.' && path[1] == '/') {
            path += 2;
        }
        return (path[0] == '\0' || (path[0] == '.' && path[1] == '\0')) ? "/" : path;
    }
    // No SD card driver: "/sd/..." (where MaixPy's scripts keep models) is the folder /flash/sd
    if (strncmp(path, "/sd", 3) == 0 && (path[3] == '\0' || path[3] == '/')) {
        return path + 1;
    }
    if (strncmp(path, mount, n) != 0 || (path[n] != '\0' && path[n] != '/')) {
        return NULL;
    }
    path += n;
    while (*path == '/') {
        path++;
    }
    return *path ? path : "/";
}

static int errno_of(int lfs_err) {
    switch (lfs_err) {
        case LFS_ERR_NOENT: return ENOENT;
        case LFS_ERR_EXIST: return EEXIST;
        case LFS_ERR_NOTDIR: return ENOTDIR;
        case LFS_ERR_ISDIR: return EISDIR;
        case LFS_ERR_NOTEMPTY: return ENOTEMPTY;
        case LFS_ERR_BADF: return EBADF;
        case LFS_ERR_FBIG: return EFBIG;
        case LFS_ERR_INVAL: return EINVAL;
        case LFS_ERR_NOSPC: return ENOSPC;
        case LFS_ERR_NOMEM: return ENOMEM;
        case LFS_ERR_NAMETOOLONG: return ENAMETOOLONG;
        default: return EIO;
    }
}

static int fail(int e) {
    errno = e;
    return -1;
}

/* ---- POSIX calls picolibc's stdio and MicroPython's reader make ----------------------------------------------- */

static struct {
    lfs_file_t file;
    uint8_t buffer[FS_CACHE_SIZE];
    struct lfs_file_config config;
    int used;
} files[FS_MAX_FILES];

static lfs_file_t *file_of(int fd) {
    int i = fd - FS_FIRST_FD;
    return (i >= 0 && i < FS_MAX_FILES && files[i].used) ? &files[i].file : NULL;
}

int open(const char *path, int flags, ...) {
    const char *p = fs_path(path);
    if (!p || !mounted) {
        return fail(ENOENT);
    }
    int i = 0;
    while (i < FS_MAX_FILES && files[i].used) {
        i++;
    }
    if (i == FS_MAX_FILES) {
        return fail(EMFILE);
    }
    int lflags = 0;
    switch (flags & O_ACCMODE) {
        case O_RDONLY: lflags = LFS_O_RDONLY; break;
        case O_WRONLY: lflags = LFS_O_WRONLY; break;
        default: lflags = LFS_O_RDWR; break;
    }
    if (flags & O_CREAT) {
        lflags |= LFS_O_CREAT;
    }
    if (flags & O_EXCL) {
        lflags |= LFS_O_EXCL;
    }
    if (flags & O_TRUNC) {
        lflags |= LFS_O_TRUNC;
    }
    if (flags & O_APPEND) {
        lflags |= LFS_O_APPEND;
    }
    memset(&files[i].config, 0, sizeof(files[i].config));
    files[i].config.buffer = files[i].buffer;
    int err = lfs_file_opencfg(&fs, &files[i].file, p, lflags, &files[i].config);
    if (err) {
        return fail(errno_of(err));
    }
    files[i].used = 1;
    return FS_FIRST_FD + i;
}

int close(int fd) {
    lfs_file_t *f = file_of(fd);
    if (!f) {
        return fail(EBADF);
    }
    int err = lfs_file_close(&fs, f);
    files[fd - FS_FIRST_FD].used = 0;
    return err ? fail(errno_of(err)) : 0;
}

ssize_t read(int fd, void *buf, size_t n) {
    lfs_file_t *f = file_of(fd);
    if (!f) {
        return fail(EBADF);
    }
    lfs_ssize_t got = lfs_file_read(&fs, f, buf, n);
    return got < 0 ? fail(errno_of(got)) : got;
}

ssize_t write(int fd, const void *buf, size_t n) {
    lfs_file_t *f = file_of(fd);
    if (!f) {
        return fail(EBADF);
    }
    lfs_ssize_t put = lfs_file_write(&fs, f, buf, n);
    return put < 0 ? fail(errno_of(put)) : put;
}

off_t lseek(int fd, off_t offset, int whence) {
    lfs_file_t *f = file_of(fd);
    if (!f) {
        return fail(EBADF);
    }
    int lwhence = whence == SEEK_CUR ? LFS_SEEK_CUR : whence == SEEK_END ? LFS_SEEK_END : LFS_SEEK_SET;
    lfs_soff_t pos = lfs_file_seek(&fs, f, (lfs_soff_t)offset, lwhence);
    return pos < 0 ? fail(errno_of(pos)) : pos;
}

int unlink(const char *path) {
    const char *p = fs_path(path);
    if (!p || !mounted) {
        return fail(ENOENT);
    }
    int err = lfs_remove(&fs, p);
    return err ? fail(errno_of(err)) : 0;
}

int stat(const char *path, struct stat *st) {
    const char *p = fs_path(path);
    struct lfs_info info;
    if (!p || !mounted) {
        return fail(ENOENT);
    }
    int err = lfs_stat(&fs, p, &info);
    if (err) {
        return fail(errno_of(err));
    }
    memset(st, 0, sizeof(*st));
    st->st_mode = info.type == LFS_TYPE_DIR ? (S_IFDIR | 0777) : (S_IFREG | 0666);
    st->st_size = info.type == LFS_TYPE_DIR ? 0 : info.size;
    return 0;
}

int fstat(int fd, struct stat *st) {
    lfs_file_t *f = file_of(fd);
    if (!f) {
        return fail(EBADF);
    }
    memset(st, 0, sizeof(*st));
    st->st_mode = S_IFREG | 0666;
    st->st_size = lfs_file_size(&fs, f);
    return 0;
}

int mkdir(const char *path, mode_t mode) {
    const char *p = fs_path(path);
    if (!p || !mounted) {
        return fail(ENOENT);
    }
    int err = lfs_mkdir(&fs, p);
    return err ? fail(errno_of(err)) : 0;
}

int rename(const char *from, const char *to) {
    const char *a = fs_path(from), *b = fs_path(to);
    if (!a || !b || !mounted) {
        return fail(ENOENT);
    }
    int err = lfs_rename(&fs, a, b);
    return err ? fail(errno_of(err)) : 0;
}

char *getcwd(char *buf, size_t size) {
    if (size < sizeof(FS_MOUNT_POINT)) {
        errno = ERANGE;
        return NULL;
    }
    memcpy(buf, FS_MOUNT_POINT, sizeof(FS_MOUNT_POINT));
    return buf;
}

int flash_fs_listdir(const char *path, void (*entry)(void *ctx, const char *name, int is_dir, unsigned long size),
    void *ctx) {
    const char *p = fs_path(path);
    lfs_dir_t dir;
    struct lfs_info info;
    if (!p || !mounted) {
        return fail(ENOENT);
    }
    int err = lfs_dir_open(&fs, &dir, p);
    if (err) {
        return fail(errno_of(err));
    }
    while ((err = lfs_dir_read(&fs, &dir, &info)) > 0) {
        if (strcmp(info.name, ".") != 0 && strcmp(info.name, "..") != 0) {
            entry(ctx, info.name, info.type == LFS_TYPE_DIR, info.type == LFS_TYPE_DIR ? 0 : info.size);
        }
    }
    lfs_dir_close(&fs, &dir);
    return err < 0 ? fail(errno_of(err)) : 0;
}

// SPDX-License-Identifier: Apache-2.0
// The /flash filesystem (littlefs on the SPI NOR flash). python/openkpu/fsimage.py uses the same geometry.
#ifndef OPENKPU_K210_FLASH_FS_H
#define OPENKPU_K210_FLASH_FS_H

#define FS_MOUNT_POINT "/flash"
#define FS_FLASH_ADDRESS 0xD00000u // where MaixPy keeps its filesystem too; models go below
#define FS_SIZE (3u * 1024u * 1024u)
#define FS_BLOCK_SIZE 4096u // the flash's erase sector
#define FS_READ_SIZE 1u
#define FS_PROG_SIZE 256u // the flash's page
#define FS_CACHE_SIZE 256u
#define FS_LOOKAHEAD_SIZE 32u

// Mount /flash, formatting the region when it holds no filesystem (*formatted then 1). 0 or a littlefs error.
int flash_fs_mount(int *formatted);
int flash_fs_usage(unsigned long *total, unsigned long *used);
// Call entry() for each name in a directory (size: bytes of a file, 0 for a directory); 0, or -1 with errno.
int flash_fs_listdir(const char *path, void (*entry)(void *ctx, const char *name, int is_dir, unsigned long size),
    void *ctx);

#endif

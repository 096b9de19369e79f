// SPDX-License-Identifier: Apache-2.0
/*
 * openkpu MicroPython on the Kendryte K210 (Maix Bit / Dock / Go): REPL on UARTHS (IO4/IO5, 115200 8N1), friendly
 * and raw REPL from shared/runtime/pyexec.c, Ctrl-D soft reset ("MPY: soft reboot"), Ctrl-C through the UARTHS RX
 * interrupt or console polling. Files on /flash (littlefs in the SPI flash, fs/flash_fs.c): boot.py and main.py run
 * at boot as on MaixPy; models load from files or from flash offsets.
 * firmware/host/main.c is the host/QEMU entry point (argv, files, exit status); a board needs none of that.
 */
#include <stdio.h>
#include <string.h>

#include "py/builtin.h"
#include "py/compile.h"
#include "py/gc.h"
#include "py/lexer.h"
#include "py/mperrno.h"
#include "py/mphal.h"
#include "py/runtime.h"
#include "py/stackctrl.h"
#include "py/stream.h"
#include "shared/readline/readline.h"
#include "shared/runtime/gchelper.h"
#include "shared/runtime/pyexec.h"

#include "board/board.h"
#include "board/clint.h"
#include "board/spi3_flash.h"
#include "board/sysctl.h"
#include "board/uarths.h"
#include "fs/flash_fs.h"
#include <sys/stat.h>

// Room below MicroPython's stack limit for the frames it does not check: C library, interrupt entry (528 bytes),
// the KPU core's deepest calls.
#define STACK_MARGIN (16u * 1024u)

/* ---- console ------------------------------------------------------------------------------------------------- */

// Every received byte, from the interrupt handler or from polling: Ctrl-C while Python runs raises
// KeyboardInterrupt, anything else is input.
void board_console_rx_byte(int c) {
    if (c == mp_interrupt_char) {
        mp_sched_keyboard_interrupt();
    } else {
        board_console_put(c);
    }
}

int mp_hal_stdin_rx_chr(void) {
    for (;;) {
        board_console_poll();
        int c = board_console_getc();
        if (c >= 0) {
            return c;
        }
        if (board_console_irq_seen()) {
            board_console_idle(); // the next byte interrupts; a board without working interrupts keeps polling
        }
    }
}

mp_uint_t mp_hal_stdout_tx_strn(const char *str, size_t len) {
    for (size_t i = 0; i < len; i++) {
        uarths_putc(str[i]);
    }
    return len;
}

uintptr_t mp_hal_stdio_poll(uintptr_t poll_flags) {
    uintptr_t ret = 0;
    if (poll_flags & MP_STREAM_POLL_RD) {
        board_console_poll();
        if (board_console_pending()) {
            ret |= MP_STREAM_POLL_RD;
        }
    }
    if (poll_flags & MP_STREAM_POLL_WR) {
        ret |= MP_STREAM_POLL_WR;
    }
    return ret;
}

// MICROPY_VM_HOOK_POLL (every 64 backward jumps / returns): Ctrl-C reaches running code even without interrupts.
void openkpu_poll_interrupt(void) {
    board_console_poll();
}

/* ---- time: CLINT mtime at ACLK / 50 ------------------------------------------------------------------------- */

static uint64_t mtime_to_us(uint64_t t) {
    uint64_t hz = clint_hz();
    return t / hz * 1000000u + t % hz * 1000000u / hz;
}

mp_uint_t mp_hal_ticks_us(void) {
    return (mp_uint_t)mtime_to_us(clint_mtime());
}

mp_uint_t mp_hal_ticks_ms(void) {
    return (mp_uint_t)(mtime_to_us(clint_mtime()) / 1000u);
}

// The K210 backend's clock (c_src/kpu/kpu_backend.h): a KPU that never raises calc_done is an error after 1 s.
uint64_t okpu_board_time_us(void) {
    return mtime_to_us(clint_mtime());
}

mp_uint_t mp_hal_ticks_cpu(void) {
    return (mp_uint_t)clint_mtime();
}

// Between two reads of mtime: about a microsecond of CPU work instead of a stream of bus reads (each one is also
// a host callback on the virtual board).
static void spin_a_little(void) {
    for (volatile int i = 0; i < 64; i++) {
    }
}

void mp_hal_delay_us(mp_uint_t us) {
    uint64_t end = clint_mtime() + (uint64_t)us * clint_hz() / 1000000u;
    while (clint_mtime() < end) {
        spin_a_little();
    }
}

// Sleeps of a millisecond or more let Ctrl-C and scheduled callbacks in (the console is polled every ~0.1 ms).
void mp_hal_delay_ms(mp_uint_t ms) {
    uint64_t end = clint_mtime() + (uint64_t)ms * clint_hz() / 1000u;
    uint64_t step = clint_hz() / 10000u;
    for (uint64_t now = clint_mtime(); now < end; now = clint_mtime()) {
        board_console_poll();
        mp_handle_pending(true);
        uint64_t next = now + step < end ? now + step : end;
        while (clint_mtime() < next) {
            spin_a_little();
        }
    }
}

/* ---- files: /flash (open() is firmware/host/file.c over stdio over fs/flash_fs.c) ------------------------- */

mp_import_stat_t mp_import_stat(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        return MP_IMPORT_STAT_NO_EXIST;
    }
    return S_ISDIR(st.st_mode) ? MP_IMPORT_STAT_DIR : MP_IMPORT_STAT_FILE;
}

/* ---- GC, errors --------------------------------------------------------------------------------------------- */

void gc_collect(void) {
    gc_collect_start();
    gc_helper_collect_regs_and_stack();
    gc_collect_end();
}

void nlr_jump_fail(void *val) {
    printf("FATAL: uncaught NLR %p\n", val);
    sysctl_soft_reset();
}

#ifndef NDEBUG
void MP_WEAK __assert_func(const char *file, int line, const char *func, const char *expr) {
    printf("Assertion '%s' failed, at file %s:%d (%s)\n", expr, file, line, func ? func : "");
    sysctl_soft_reset();
}
#endif

/* ---- start-up ------------------------------------------------------------------------------------------------ */

static void boot_report(void) {
    uint8_t id[2] = {0, 0};
    spi3_flash_read_id(id);
    printf("openkpu k210: cpu %lu Hz, kpu %lu Hz, mtime %lu Hz, flash %02x:%02x %lu KiB, "
        "gc heap %lu KiB, c heap %lu KiB, stack %lu KiB\n",
        (unsigned long)sysctl_cpu_hz(), (unsigned long)sysctl_kpu_hz(), (unsigned long)clint_hz(), id[0], id[1],
        (unsigned long)(spi3_flash_size() / 1024u), (unsigned long)(board_gc_heap_size() / 1024u),
        (unsigned long)(board_c_heap_size() / 1024u), (unsigned long)(board_stack_size() / 1024u));
}

static void mount_flash(void) {
    int formatted;
    unsigned long total, used;
    if (flash_fs_mount(&formatted) != 0) {
        printf("openkpu k210: cannot mount or format %s at flash 0x%x: files unavailable\n", FS_MOUNT_POINT,
            FS_FLASH_ADDRESS);
        return;
    }
    if (flash_fs_usage(&total, &used) == 0) {
        printf("openkpu k210: %s %s, %lu of %lu KiB used\n", FS_MOUNT_POINT,
            formatted ? "was empty: formatted" : "mounted", used / 1024u, total / 1024u);
    }
}

int main(void) {
    board_init();
    boot_report();
    mount_flash();
    int first_boot = 1;
    for (;;) {
        mp_stack_ctrl_init();
        mp_stack_set_limit(board_stack_size() - STACK_MARGIN);
        char *heap = board_gc_heap_start();
        gc_init(heap, heap + board_gc_heap_size());
        mp_init();
        // MaixPy's sys.path: the current directory (/flash), frozen modules, /flash/lib
        mp_obj_list_init(MP_OBJ_TO_PTR(mp_sys_path), 0);
        mp_obj_list_append(mp_sys_path, MP_OBJ_NEW_QSTR(MP_QSTR_));
        mp_obj_list_append(mp_sys_path, MP_OBJ_NEW_QSTR(MP_QSTR__dot_frozen));
        mp_obj_list_append(mp_sys_path, mp_obj_new_str("/flash/lib", 10));
        mp_obj_list_init(MP_OBJ_TO_PTR(mp_sys_argv), 0);
        readline_init0();

        // boot.py, then main.py, as on MaixPy (a Ctrl-C stops either); only after a reset, not a soft reboot,
        // so a runaway main.py can be replaced over the raw REPL
        if (first_boot) {
            first_boot = 0;
            pyexec_file_if_exists("boot.py");
            if (pyexec_mode_kind == PYEXEC_MODE_FRIENDLY_REPL) {
                pyexec_file_if_exists("main.py");
            }
        }

        for (;;) {
            int ret = pyexec_mode_kind == PYEXEC_MODE_RAW_REPL ? pyexec_raw_repl() : pyexec_friendly_repl();
            if (ret & PYEXEC_FORCED_EXIT) {
                break; // Ctrl-D: soft reset; otherwise Ctrl-A / Ctrl-B switched the REPL mode
            }
        }
        mp_hal_stdout_tx_str("MPY: soft reboot\r\n");
        gc_sweep_all();
        mp_deinit();
    }
}

// SPDX-License-Identifier: Apache-2.0
/*
 * openkpu MicroPython port: entry point, console, heap, file import.
 *
 *   micropython                      friendly REPL (Ctrl-A raw REPL, Ctrl-B friendly, Ctrl-C interrupt, Ctrl-D
 *                                    soft reset / exit at an empty friendly prompt)
 *   micropython SCRIPT.py [ARGS...]  run a script file, exit status 1 on an uncaught exception
 *   micropython -c 'CODE'            run a string
 *   -X heapsize=N[k|M]               GC heap size (default 64M on the host, 48M on RV64)
 *
 * The same file builds the host port and the RV64 bare-metal port (OPENKPU_SEMIHOST: picolibc + semihosting).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <unistd.h>
#include <sys/stat.h>

#ifndef OPENKPU_SEMIHOST
#include <termios.h>
#include <sys/select.h>
#endif

#include "py/builtin.h"
#include "py/compile.h"
#include "py/gc.h"
#include "py/mperrno.h"
#include "py/mphal.h"
#include "py/runtime.h"
#include "py/repl.h"
#include "py/stackctrl.h"
#include "py/stream.h"
#include "shared/readline/readline.h"
#include "shared/runtime/gchelper.h"
#include "shared/runtime/pyexec.h"

#ifdef OPENKPU_SEMIHOST
#define DEFAULT_HEAP_SIZE (48u * 1024u * 1024u)
#else
#define DEFAULT_HEAP_SIZE (64u * 1024u * 1024u)
#endif

static char *heap;
static size_t heap_size = DEFAULT_HEAP_SIZE;

/* ---- console ------------------------------------------------------------------------------------------------- */

static int pending_char = -1; /* a character read by the interrupt poll that was not Ctrl-C */

#ifndef OPENKPU_SEMIHOST
static struct termios saved_termios;
static int termios_saved;

static void console_restore(void) {
    if (termios_saved) {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_termios);
        termios_saved = 0;
    }
}

/* Raw mode for the REPL: characters one by one, no echo, Ctrl-C/Ctrl-D as bytes (the REPL handles them). */
static void console_raw(void) {
    struct termios t;
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_termios) != 0) {
        return;
    }
    termios_saved = 1;
    atexit(console_restore);
    t = saved_termios;
    t.c_iflag &= ~(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    t.c_lflag &= ~(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
    t.c_cflag &= ~(CSIZE | PARENB);
    t.c_cflag |= CS8;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

static int console_char_ready(void) {
    fd_set rfds;
    struct timeval tv = {0, 0};
    FD_ZERO(&rfds);
    FD_SET(STDIN_FILENO, &rfds);
    return select(STDIN_FILENO + 1, &rfds, NULL, NULL, &tv) > 0;
}

static int console_read(void) {
    unsigned char c;
    for (;;) {
        ssize_t n = read(STDIN_FILENO, &c, 1);
        if (n == 1) {
            return c;
        }
        if (n == 0) {
            return -1; /* end of input */
        }
        if (errno != EINTR) {
            return -1;
        }
    }
}
#else
static void console_raw(void) {
}

static int console_char_ready(void) {
    return 0; /* semihosting has no non-blocking console read */
}

static int console_read(void) {
    int c = getchar();
    return c == EOF ? -1 : c;
}
#endif

static int stdin_eof;

int mp_hal_stdin_rx_chr(void) {
    if (pending_char >= 0) {
        int c = pending_char;
        pending_char = -1;
        return c;
    }
    fflush(stdout);
    int c = console_read();
    if (c < 0) {
        /* End of input: behave like Ctrl-D so the REPL exits, then keep saying so. */
        stdin_eof = 1;
        return CHAR_CTRL_D;
    }
    return c;
}

mp_uint_t mp_hal_stdout_tx_strn(const char *str, size_t len) {
    size_t done = fwrite(str, 1, len, stdout);
    fflush(stdout);
    return done;
}

uintptr_t mp_hal_stdio_poll(uintptr_t poll_flags) {
    uintptr_t ret = 0;
    if ((poll_flags & MP_STREAM_POLL_RD) && (pending_char >= 0 || console_char_ready())) {
        ret |= MP_STREAM_POLL_RD;
    }
    if (poll_flags & MP_STREAM_POLL_WR) {
        ret |= MP_STREAM_POLL_WR;
    }
    return ret;
}

/* Called from the VM every MICROPY_VM_HOOK_COUNT jumps: a Ctrl-C typed while code runs raises KeyboardInterrupt. */
void openkpu_poll_interrupt(void) {
    if (mp_interrupt_char < 0 || pending_char >= 0 || !console_char_ready()) {
        return;
    }
    int c = console_read();
    if (c < 0) {
        return;
    }
    if (c == mp_interrupt_char) {
        mp_sched_keyboard_interrupt();
    } else {
        pending_char = c;
    }
}

/* ---- time ---------------------------------------------------------------------------------------------------- */

static uint64_t monotonic_us(void) {
    #ifdef OPENKPU_SEMIHOST
    /* picolibc's clock() is the semihosting SYS_CLOCK / SYS_ELAPSED time */
    return (uint64_t)clock() * 1000000u / CLOCKS_PER_SEC;
    #else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    #endif
}

mp_uint_t mp_hal_ticks_ms(void) {
    return (mp_uint_t)(monotonic_us() / 1000u);
}

mp_uint_t mp_hal_ticks_us(void) {
    return (mp_uint_t)monotonic_us();
}

void mp_hal_delay_us(mp_uint_t us) {
    uint64_t end = monotonic_us() + us;
    while (monotonic_us() < end) {
        mp_handle_pending(true);
        #ifndef OPENKPU_SEMIHOST
        usleep(us > 1000 ? 1000 : us);
        #endif
    }
}

void mp_hal_delay_ms(mp_uint_t ms) {
    mp_hal_delay_us(ms * 1000u);
}

/* ---- GC, import, errors -------------------------------------------------------------------------------------- */

void gc_collect(void) {
    gc_collect_start();
    gc_helper_collect_regs_and_stack();
    gc_collect_end();
}

mp_import_stat_t mp_import_stat(const char *path) {
    #ifndef OPENKPU_SEMIHOST
    struct stat st;
    if (stat(path, &st) == 0) {
        return S_ISDIR(st.st_mode) ? MP_IMPORT_STAT_DIR : MP_IMPORT_STAT_FILE;
    }
    return MP_IMPORT_STAT_NO_EXIST;
    #else
    /* Semihosting cannot stat: a path that opens is a file (packages as directories are not supported). */
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return MP_IMPORT_STAT_NO_EXIST;
    }
    fclose(f);
    return MP_IMPORT_STAT_FILE;
    #endif
}

void nlr_jump_fail(void *val) {
    fprintf(stderr, "FATAL: uncaught NLR %p\n", val);
    exit(2);
}

#ifndef NDEBUG
void MP_WEAK __assert_func(const char *file, int line, const char *func, const char *expr) {
    fprintf(stderr, "Assertion '%s' failed, at file %s:%d (%s)\n", expr, file, line, func ? func : "");
    exit(2);
}
#endif

/* ---- start-up ------------------------------------------------------------------------------------------------ */

static int run_string(const char *src) {
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_lexer_t *lex = mp_lexer_new_from_str_len(MP_QSTR__lt_stdin_gt_, src, strlen(src), 0);
        qstr source_name = lex->source_name;
        mp_parse_tree_t parse_tree = mp_parse(lex, MP_PARSE_FILE_INPUT);
        mp_obj_t module_fun = mp_compile(&parse_tree, source_name, false);
        mp_call_function_0(module_fun);
        nlr_pop();
        return 0;
    }
    mp_obj_t exc = MP_OBJ_FROM_PTR(nlr.ret_val);
    if (mp_obj_is_subclass_fast(MP_OBJ_FROM_PTR(mp_obj_get_type(exc)), MP_OBJ_FROM_PTR(&mp_type_SystemExit))) {
        mp_obj_t code = mp_obj_exception_get_value(exc);
        return code == mp_const_none ? 0 : (int)mp_obj_get_int(code);
    }
    mp_obj_print_exception(&mp_plat_print, exc);
    return 1;
}

static size_t parse_size(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end == 'k' || *end == 'K') {
        v *= 1024u;
    } else if (*end == 'm' || *end == 'M') {
        v *= 1024u * 1024u;
    }
    return (size_t)v;
}

static void vm_init(int argc, char **argv, int first_arg, const char *script) {
    mp_stack_set_limit(256 * 1024);
    gc_init(heap, heap + heap_size);
    mp_init();

    /* sys.path: the script's directory (or the current one), then the frozen modules. */
    mp_obj_list_init(MP_OBJ_TO_PTR(mp_sys_path), 0);
    if (script != NULL) {
        const char *slash = strrchr(script, '/');
        if (slash != NULL) {
            mp_obj_list_append(mp_sys_path, mp_obj_new_str(script, slash - script));
        } else {
            mp_obj_list_append(mp_sys_path, MP_OBJ_NEW_QSTR(MP_QSTR_));
        }
    } else {
        mp_obj_list_append(mp_sys_path, MP_OBJ_NEW_QSTR(MP_QSTR_));
    }
    mp_obj_list_append(mp_sys_path, MP_OBJ_NEW_QSTR(MP_QSTR__dot_frozen));
    const char *extra = getenv("MICROPYPATH");
    if (extra != NULL && *extra) {
        mp_obj_list_append(mp_sys_path, mp_obj_new_str(extra, strlen(extra)));
    }

    mp_obj_list_init(MP_OBJ_TO_PTR(mp_sys_argv), 0);
    for (int i = first_arg; i < argc; i++) {
        mp_obj_list_append(mp_sys_argv, mp_obj_new_str(argv[i], strlen(argv[i])));
    }
}

int main(int argc, char **argv) {
    volatile int stack_dummy;
    mp_stack_ctrl_init();
    (void)stack_dummy;

    int a = 1;
    while (a < argc && strcmp(argv[a], "-X") == 0 && a + 1 < argc) {
        if (strncmp(argv[a + 1], "heapsize=", 9) == 0) {
            heap_size = parse_size(argv[a + 1] + 9);
        }
        a += 2;
    }
    heap = malloc(heap_size);
    if (heap == NULL) {
        fprintf(stderr, "cannot allocate a %lu byte heap\n", (unsigned long)heap_size);
        return 2;
    }

    const char *code = NULL;
    const char *script = NULL;
    if (a < argc && strcmp(argv[a], "-c") == 0 && a + 1 < argc) {
        code = argv[a + 1];
    } else if (a < argc) {
        script = argv[a];
    }

    int status = 0;
    if (code != NULL) {
        vm_init(argc, argv, a + 1, NULL);
        status = run_string(code);
    } else if (script != NULL) {
        vm_init(argc, argv, a, script);
        /* pyexec_file prints the traceback; returns 1 on success, 0 on exception, with the SystemExit flag. */
        int ret = pyexec_file(script);
        if (ret & PYEXEC_FORCED_EXIT) {
            status = 0;
        } else {
            status = ret ? 0 : 1;
        }
    } else {
        console_raw();
        vm_init(argc, argv, a, NULL);
        for (;;) {
            int ret;
            if (pyexec_mode_kind == PYEXEC_MODE_RAW_REPL) {
                ret = pyexec_raw_repl();
            } else {
                ret = pyexec_friendly_repl();
            }
            if (stdin_eof) {
                break;
            }
            if (!(ret & PYEXEC_FORCED_EXIT)) {
                continue; /* Ctrl-A / Ctrl-B switched REPL mode */
            }
            if (pyexec_mode_kind == PYEXEC_MODE_FRIENDLY_REPL) {
                break; /* Ctrl-D at an empty friendly prompt: leave, as the unix port does */
            }
            /* Ctrl-D at the raw REPL: soft reset, as a board does (pyboard.py / mpremote expect it). */
            gc_sweep_all();
            mp_deinit();
            mp_hal_stdout_tx_str("MPY: soft reboot\r\n");
            vm_init(argc, argv, a, NULL);
        }
    }
    fflush(stdout);
    gc_sweep_all();
    mp_deinit();
    free(heap);
    return status;
}

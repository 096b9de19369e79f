// SPDX-License-Identifier: Apache-2.0
/*
 * openkpu MicroPython port configuration: the host (Linux) build and, with OPENKPU_SEMIHOST defined, the bare-metal
 * RV64 build under QEMU `virt` (firmware/rv64). MicroPython v1.23 core only (py/ + shared/, no extmod/).
 */
#include <stdint.h>
#include <alloca.h>

#define MICROPY_CONFIG_ROM_LEVEL (MICROPY_CONFIG_ROM_LEVEL_CORE_FEATURES)

/* Core: NLR and register scanning through setjmp (portable; v1.23 has no RISC-V NLR assembly). */
#define MICROPY_NLR_SETJMP (1)
#define MICROPY_GCREGS_SETJMP (1)
#define MICROPY_ENABLE_GC (1)
#define MICROPY_ENABLE_FINALISER (1)
#define MICROPY_STACK_CHECK (1)
#define MICROPY_ALLOC_PATH_MAX (256)
#define MICROPY_ENABLE_COMPILER (1)
#define MICROPY_ENABLE_SOURCE_LINE (1)
#define MICROPY_ERROR_REPORTING (MICROPY_ERROR_REPORTING_DETAILED)
#define MICROPY_LONGINT_IMPL (MICROPY_LONGINT_IMPL_MPZ)
#define MPZ_DIG_SIZE (16) /* what mpy-tool.py assumes for frozen big-int constants */
#define MICROPY_FLOAT_IMPL (MICROPY_FLOAT_IMPL_DOUBLE)
#define MICROPY_USE_INTERNAL_PRINTF (0)
#define MICROPY_CPYTHON_COMPAT (1)
#define MICROPY_WARNINGS (1)
#define MICROPY_KBD_EXCEPTION (1)
#define MICROPY_ENABLE_SCHEDULER (1)
#define MICROPY_PERSISTENT_CODE_LOAD (1)

/* REPL (friendly + raw), scripts from files, frozen modules. */
#define MICROPY_HELPER_REPL (1)
#define MICROPY_REPL_AUTO_INDENT (1)
#define MICROPY_REPL_EMACS_KEYS (1)
#define MICROPY_REPL_INFO (1)
#define MICROPY_READER_POSIX (1)
#define MICROPY_PY_BUILTINS_INPUT (1)
#define MICROPY_PY_SYS_STDFILES (1)
#define MICROPY_PY_SYS_STDIO_BUFFER (1)
#define MICROPY_PY_SYS_EXIT (1)
#define MICROPY_PY_SYS_PLATFORM "openkpu"
#define MICROPY_PY_SYS_MAXSIZE (1)
#define MICROPY_PY_SYS_MODULES (1)
#define MICROPY_PY___FILE__ (1)
#define MICROPY_MODULE_FROZEN_MPY_PATH ".frozen"

/* Language and modules the tests and KPU.py use. */
#define MICROPY_PY_BUILTINS_STR_UNICODE (1)
#define MICROPY_PY_BUILTINS_BYTEARRAY (1)
#define MICROPY_PY_BUILTINS_MEMORYVIEW (1)
#define MICROPY_PY_BUILTINS_SLICE_ATTRS (1)
#define MICROPY_PY_BUILTINS_SLICE_INDICES (1)
#define MICROPY_PY_BUILTINS_FROZENSET (1)
#define MICROPY_PY_BUILTINS_SET (1)
#define MICROPY_PY_BUILTINS_PROPERTY (1)
#define MICROPY_PY_BUILTINS_ENUMERATE (1)
#define MICROPY_PY_BUILTINS_REVERSED (1)
#define MICROPY_PY_BUILTINS_MIN_MAX (1)
#define MICROPY_PY_BUILTINS_ROUND_INT (1)
#define MICROPY_PY_BUILTINS_HELP (1)
#define MICROPY_PY_BUILTINS_STR_COUNT (1)
#define MICROPY_PY_BUILTINS_STR_OP_MODULO (1)
#define MICROPY_PY_BUILTINS_STR_CENTER (1)
#define MICROPY_PY_BUILTINS_STR_PARTITION (1)
#define MICROPY_PY_BUILTINS_STR_SPLITLINES (1)
#define MICROPY_PY_BUILTINS_BYTES_HEX (1)
#define MICROPY_PY_BUILTINS_NOTIMPLEMENTED (1)
#define MICROPY_PY_ALL_SPECIAL_METHODS (1)
#define MICROPY_PY_REVERSE_SPECIAL_METHODS (1)
#define MICROPY_PY_DELATTR_SETATTR (1)
#define MICROPY_PY_FSTRINGS (1)
#define MICROPY_PY_ASYNC_AWAIT (0)
#define MICROPY_PY_ARRAY (1)
#define MICROPY_PY_ARRAY_SLICE_ASSIGN (1)
#define MICROPY_PY_ATTRTUPLE (1)
#define MICROPY_PY_COLLECTIONS (1)
#define MICROPY_PY_COLLECTIONS_ORDEREDDICT (1)
#define MICROPY_PY_MATH (1)
#define MICROPY_PY_MATH_SPECIAL_FUNCTIONS (1)
#define MICROPY_PY_CMATH (0)
#define MICROPY_PY_GC (1)
#define MICROPY_PY_IO (1)
#define MICROPY_PY_IO_IOBASE (0)
#define MICROPY_PY_IO_BYTESIO (1)
#define MICROPY_PY_STRUCT (1)
#define MICROPY_PY_SYS (1)
#define MICROPY_PY_ERRNO (1)
#define MICROPY_PY_MICROPYTHON (1)
#define MICROPY_PY_MICROPYTHON_MEM_INFO (1)
#define MICROPY_PY_TIME (0) /* extmod's time is not in the sdist: the port provides its own `time` (modtime.c) */
#define MICROPY_PY_OS (0)

/* Ctrl-C while a script runs: the VM polls the console every so often (no signals on a raw tty, none on QEMU). */
void openkpu_poll_interrupt(void);
#define MICROPY_VM_HOOK_COUNT (64)
#define MICROPY_VM_HOOK_INIT static unsigned int vm_hook_divisor = MICROPY_VM_HOOK_COUNT;
#define MICROPY_VM_HOOK_POLL if (--vm_hook_divisor == 0) { \
        vm_hook_divisor = MICROPY_VM_HOOK_COUNT; \
        openkpu_poll_interrupt(); \
}
#define MICROPY_VM_HOOK_LOOP MICROPY_VM_HOOK_POLL
#define MICROPY_VM_HOOK_RETURN MICROPY_VM_HOOK_POLL

/* Types. */
#define MP_SSIZE_MAX (0x7fffffffffffffffL)
typedef intptr_t mp_int_t;
typedef uintptr_t mp_uint_t;
typedef long mp_off_t;

#define MP_STATE_PORT MP_STATE_VM
#define MICROPY_HW_BOARD_NAME "openkpu-" OPENKPU_PORT_NAME
#define MICROPY_HW_MCU_NAME OPENKPU_MCU_NAME
#define MICROPY_BANNER_MACHINE MICROPY_HW_BOARD_NAME " with " MICROPY_HW_MCU_NAME " (KPU emulator)"

#ifdef OPENKPU_SEMIHOST
#define OPENKPU_PORT_NAME "rv64"
#define OPENKPU_MCU_NAME "rv64imafdc (QEMU virt, semihosting)"
#else
#define OPENKPU_PORT_NAME "host"
#define OPENKPU_MCU_NAME "host"
#endif

/* extmod/virtpin.h is not in the sdist; py/mphal.h only needs the type name. */
#define mp_hal_pin_obj_t void *

# SPDX-License-Identifier: Apache-2.0
"""The virtual Maix board: a Unicorn RV64 hart, 8 MiB SRAM, the peripheral models and the run loop.

The CPU runs in `emu_start(pc, 0, count=N)` slices (no per-instruction hook: full speed). Between slices the board
advances virtual time (one instruction = one CPU cycle; CLINT mtime = cycles / 50), refreshes device
interrupt lines and injects an interrupt when one is pending and enabled, emulating the trap entry that Unicorn
never performs (k210-board.md section 11). Slices are cut exactly at the next timer deadline. Synchronous
exceptions reach UC_HOOK_INTR and enter the guest's mtvec the same way. Faults (unmodelled address, ebreak, KPU
fault, ...) are recorded by the models and raised as BoardFault at the slice end.

wfi: Unicorn 2.1.4 ends emu_start right after a `wfi` (checked here; the PC is the next instruction), and how many
instructions ran before it is not reported. The board models wfi as "sleep until the next slice boundary", where
interrupts are checked: a slice that ended at a wfi counts as N cycles of virtual time (deterministic), and is not
counted in `instructions` or the MIPS figure. An idle guest therefore costs almost no host time, and its virtual
clock runs ahead of the host's (interactive sessions throttle it to real time: console.interact).

    board = Board("build/k210/firmware.bin", flash=[("model.kmodel", 0x300000)])
    board.run_until(b">>> ", timeout=10)
    board.write_uart(b"print(1+1)\\r")
    print(board.run_until(b">>> "))
"""
import ctypes
import time

from unicorn import Uc, UcError, UC_ARCH_RISCV, UC_MODE_RISCV64, UC_PROT_ALL, UC_HOOK_INTR, \
    UC_HOOK_MEM_UNMAPPED, UC_MEM_READ_UNMAPPED, UC_MEM_WRITE_UNMAPPED, UC_MEM_FETCH_UNMAPPED, \
    UC_ERR_INSN_INVALID
from unicorn import riscv_const as R

from . import bootrom
from .clint import Clint
from .errors import BoardFault, BoardTimeout
from .fpioa import Fpioa
from .camera import BoardStopped, Dvp, FrameSource
from .lcd import LcdGpiohs, Spi0, St7789
from .kpu import KpuRegisters, make_device
from .mmio import DeviceFault
from .norflash import NorFlash
from .plic import Plic
from .spi3 import Spi3
from .sysctl import Sysctl
from .uarths import Uarths

SRAM_BASE = 0x80000000
UNCACHED_BASE = 0x40000000
HIGH_ALIAS = 0xFFFFFFFF80000000  # lui-built 0x8xxxxxxx pointers are sign-extended; the chip ignores bits 63..32
MEM_SIZE = 8 << 20               # 6 MiB SRAM + 2 MiB AI SRAM
ENTRY = 0x80000000

MSTATUS_MIE = 1 << 3
MSTATUS_MPIE = 1 << 7
MSTATUS_MPP = 3 << 11
IRQ_MSI, IRQ_MTI, IRQ_MEI = 3, 7, 11
CAUSE_NAMES = {0: "instruction address misaligned", 1: "instruction access fault", 2: "illegal instruction",
               3: "breakpoint", 4: "load address misaligned", 5: "load access fault",
               6: "store address misaligned", 7: "store access fault", 11: "environment call from M-mode"}
SHORT_SLICE = 1        # instructions per slice while an interrupt waits for mstatus.MIE (single steps)
SHORT_SLICES = 64      # at most this many in a row
EXCEPTION_STORM = 100000  # synchronous exceptions in one slice: the guest's trap handler is faulting itself

# What lives at addresses the board does not model, for the stop message.
REGIONS = [
    (0x00000000, 0x1000, "debug"), (0x00001000, 0x1000, "reset ROM"), (0x42000000, 0x400000, "FFT"),
    (0x50000000, 0x1000, "DMAC"), (0x50200000, 0x10000, "GPIO"), (0x50210000, 0x10000, "UART1"),
    (0x50220000, 0x10000, "UART2"), (0x50230000, 0x10000, "UART3"), (0x50240000, 0x10000, "SPI2"),
    (0x50250000, 0x10000, "I2S0"), (0x50260000, 0x10000, "I2S1"), (0x50270000, 0x10000, "I2S2"),
    (0x50280000, 0x10000, "I2C0"), (0x50290000, 0x10000, "I2C1"), (0x502A0000, 0x10000, "I2C2"),
    (0x502C0000, 0x10000, "SHA256"), (0x502D0000, 0x10000, "TIMER0"), (0x502E0000, 0x10000, "TIMER1"),
    (0x502F0000, 0x10000, "TIMER2"), (0x50400000, 0x10000, "WDT0"), (0x50410000, 0x10000, "WDT1"),
    (0x50420000, 0x10000, "OTP"), (0x50430000, 0x10000, "DVP"), (0x50450000, 0x10000, "AES"),
    (0x50460000, 0x10000, "RTC"), (0x52000000, 0x1000000, "SPI0"), (0x53000000, 0x1000000, "SPI1"),
    (0x54000000, 0x1000000, "SPI3 XIP window"), (0x40800000, 0xC00000, "KPU window"),
    (0x88000000, 0x20000, "boot ROM"),
]


def region_name(address):
    a = address & 0xFFFFFFFF if address >> 32 == 0xFFFFFFFF else address
    for base, size, name in REGIONS:
        if base <= a < base + size:
            return name
    return None


class Board(object):
    """A virtual Maix board booted from a flash image (see bootrom.build_flash for what `image` may be)."""

    def __init__(self, image, flash=(), image_kind=None, kpu_hang=False, kpu=None, slice_instructions=200000,
                 console=None, frames=None, max_frames=None, loop=False, lcd_out=None, max_lcd_frames=1000,
                 report=None, sensor="ov2640"):
        self.flash = bootrom.build_flash(image, flash, image_kind)
        self.slice = int(slice_instructions)
        self.console = console          # callable(bytes) for guest UART output, or None
        self.uart_log = bytearray()     # everything the guest printed
        self._cursor = 0                # read_uart / run_until consume from here
        self.fault = None
        self.fault_pc = None
        self.fault_address = None
        self._reset_reason = None
        self.cycles = 0                 # virtual CPU cycles: drives mtime and virtual seconds
        self.instructions = 0           # instructions known to have run (slices that did not end at a wfi)
        self.wfi_slices = 0             # slices that ended at a wfi (the rest of the slice was idle)
        self.busy_host_seconds = 0.0    # host time of the slices counted in `instructions`
        self.virtual_seconds = 0.0
        self.host_seconds = 0.0
        self.interrupts_taken = 0
        self.exceptions_taken = 0
        self.resets = 0
        self._slice_exceptions = 0
        self._short_slices = SHORT_SLICES
        self._stop = None               # (message, error) from a model that ends the run (camera frames ran out)

        self.mem = (ctypes.c_ubyte * MEM_SIZE)()
        uc = self.uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
        ptr = ctypes.addressof(self.mem)
        for base in (SRAM_BASE, UNCACHED_BASE, HIGH_ALIAS):
            uc.mem_map_ptr(base, MEM_SIZE, UC_PROT_ALL, ptr)

        self.sysctl = Sysctl(self)
        self.clint = Clint(self)
        self.plic = Plic(self)
        self.uarths = Uarths(self)
        self.fpioa = Fpioa(self)
        self.gpiohs = LcdGpiohs(self)
        # camera (DVP + OV2640, GC0328 or OV5640 on SCCB) and LCD (ST7789 on SPI0): camera.py, lcd.py
        source = FrameSource(frames, max_frames=max_frames, loop=loop) if frames is not None else None
        self.dvp = Dvp(self, source, report=report, sensor=sensor)
        self.panel = St7789(lcd_out, max_files=max_lcd_frames)
        self.spi0 = Spi0(self, self.panel)
        self.flash_chip = NorFlash(self.flash)
        self.spi3 = Spi3(self, self.flash_chip)
        if kpu is None:
            kpu = make_device(self.mem, hang=kpu_hang)
        self.kpu_device = kpu
        self.kpu = KpuRegisters(self, kpu)
        self.devices = [self.sysctl, self.clint, self.plic, self.uarths, self.fpioa, self.gpiohs, self.spi3,
                        self.kpu, self.dvp, self.spi0]
        for dev in self.devices:
            dev.map(uc)
        uc.hook_add(UC_HOOK_INTR, self._hook_intr)
        uc.hook_add(UC_HOOK_MEM_UNMAPPED, self._hook_unmapped)
        self._boot()

    # --- boot ---------------------------------------------------------------------------------------------------------
    def _boot(self):
        image = bootrom.boot_image(self.flash)
        ctypes.memset(self.mem, 0, MEM_SIZE)
        ctypes.memmove(self.mem, image, len(image))
        self.image_size = len(image)
        uc = self.uc
        for i in range(1, 32):
            uc.reg_write(getattr(R, "UC_RISCV_REG_X%d" % i), 0)
        for reg in ("MSTATUS", "MIE", "MTVEC", "MEPC", "MCAUSE", "MSCRATCH"):
            uc.reg_write(getattr(R, "UC_RISCV_REG_" + reg), 0)
        self.pc = ENTRY

    def _reboot(self):
        for dev in self.devices:
            dev.reset()
        self.flash_chip.deselect()
        self.resets += 1
        self._boot()

    # --- hooks (never raise; MMIO callbacks never stop the CPU: they record and the slice end stops) -------------
    def stop_fault(self, message, pc=None, address=None):
        if self.fault is None:
            self.fault = message
            self.fault_pc = pc
            self.fault_address = address

    def guest_pc(self):
        return self.uc.reg_read(R.UC_RISCV_REG_PC)

    def request_reset(self, reason):
        self._reset_reason = reason

    def request_stop(self, message, error=False):
        """A model ends the run at the end of this slice (BoardStopped): e.g. the camera's frames ran out."""
        if self._stop is None:
            self._stop = (message, error)

    def write_sram(self, address, data, what="device"):
        """A bus master (the DVP) writes `data` at a bus address: cached 0x80.. or uncached 0x40.. alias."""
        a = address & 0xFFFFFFFF
        for base in (SRAM_BASE, UNCACHED_BASE):
            if base <= a and a + len(data) <= base + MEM_SIZE:
                ctypes.memmove(ctypes.addressof(self.mem) + (a - base), bytes(data), len(data))
                return
        raise DeviceFault("%s: %d bytes at 0x%08x are outside SRAM" % (what, len(data), a))

    def finish(self):
        """Write the LCD's last frame (as the runner does when the script ends); returns the PNG paths written."""
        self.panel.flush()
        if self.dvp.source is not None:
            self.dvp.source.close()
        return list(self.panel.written)

    def clock_changed(self):
        pass  # virtual seconds are integrated per slice with the clock of that slice

    def irq_changed(self):
        pass  # lines are sampled at slice boundaries

    def console_output(self, data):
        self.uart_log += data
        if self.console is not None:
            self.console(data)

    def _hook_intr(self, uc, intno, _ud):
        pc = uc.reg_read(R.UC_RISCV_REG_PC) - 4  # Unicorn reports fault + 4 for every exception
        cause = 11 if intno == 8 else intno      # ecall arrives as 8 (U-mode number): we are in M-mode
        self._slice_exceptions += 1
        if self._slice_exceptions > EXCEPTION_STORM:
            self.stop_fault("exception storm: more than %d synchronous exceptions in one slice (last: mcause %d at "
                            "pc 0x%x): the trap handler keeps faulting" % (EXCEPTION_STORM, cause, pc), pc=pc)
            uc.emu_stop()
            return
        if not self._enter_trap(cause, pc, interrupt=False):
            uc.emu_stop()

    def _hook_unmapped(self, uc, access, address, size, value, _ud):
        pc = uc.reg_read(R.UC_RISCV_REG_PC)
        kind = {UC_MEM_READ_UNMAPPED: "read", UC_MEM_WRITE_UNMAPPED: "write",
                UC_MEM_FETCH_UNMAPPED: "instruction fetch"}.get(access, "access %d" % access)
        name = region_name(address)
        msg = "unmodelled %d-byte %s at 0x%08x%s" % (size, kind, address,
                                                    " (%s, not modelled)" % name if name else " (nothing mapped)")
        if access == UC_MEM_WRITE_UNMAPPED:
            msg += " value 0x%x" % value
        msg += ", guest pc 0x%x" % pc
        self.stop_fault(msg, pc=pc, address=address)
        return False

    # --- trap entry (Unicorn never performs it) -----------------------------------------------------------------------
    def _enter_trap(self, cause, epc, interrupt):
        uc = self.uc
        mtvec = uc.reg_read(R.UC_RISCV_REG_MTVEC)
        base = mtvec & ~3
        target = base + 4 * cause if interrupt and mtvec & 3 == 1 else base
        if not (SRAM_BASE <= target < SRAM_BASE + MEM_SIZE or HIGH_ALIAS <= target < HIGH_ALIAS + MEM_SIZE):
            what = "interrupt %d" % cause if interrupt else "exception %d (%s)" % (cause, CAUSE_NAMES.get(cause, "?"))
            self.stop_fault("guest %s at pc 0x%x but mtvec is 0x%x: no trap handler in SRAM" % (what, epc, mtvec),
                            pc=epc)
            return False
        mstatus = uc.reg_read(R.UC_RISCV_REG_MSTATUS)
        mpie = MSTATUS_MPIE if mstatus & MSTATUS_MIE else 0
        uc.reg_write(R.UC_RISCV_REG_MSTATUS, (mstatus & ~(MSTATUS_MIE | MSTATUS_MPIE)) | mpie | MSTATUS_MPP)
        uc.reg_write(R.UC_RISCV_REG_MEPC, epc)
        uc.reg_write(R.UC_RISCV_REG_MCAUSE, cause | ((1 << 63) if interrupt else 0))
        uc.reg_write(R.UC_RISCV_REG_PC, target)
        if interrupt:
            self.interrupts_taken += 1
        else:
            self.exceptions_taken += 1
        return True

    def _pending_interrupt(self, ignore_mstatus=False):
        """The interrupt to take now (MEI > MSI > MTI) among those pending and enabled in mie; None if none, or if
        mstatus.MIE is off (unless `ignore_mstatus`: what wakes a wfi)."""
        uc = self.uc
        if not ignore_mstatus and not uc.reg_read(R.UC_RISCV_REG_MSTATUS) & MSTATUS_MIE:
            return None
        mie = uc.reg_read(R.UC_RISCV_REG_MIE)
        if mie & (1 << IRQ_MEI) and self.plic.meip():
            return IRQ_MEI
        if mie & (1 << IRQ_MSI) and self.clint.msip[0]:
            return IRQ_MSI
        if mie & (1 << IRQ_MTI) and self.clint.mtip():
            return IRQ_MTI
        return None

    # --- the run loop -------------------------------------------------------------------------------------------------
    def _check_fault(self):
        if self.fault is not None:
            raise BoardFault(self.fault)

    def step(self, limit=None):
        """Run one slice of at most `limit` cycles (interrupts pending at its start are taken first).
        BoardFault when the board stops."""
        self._check_fault()
        uc = self.uc
        cause = self._pending_interrupt()  # e.g. host input queued since the last slice
        if cause is not None:
            self._enter_trap(cause, self.pc, interrupt=True)
            self.pc = uc.reg_read(R.UC_RISCV_REG_PC)
            self._check_fault()
        n = self.slice if limit is None else max(1, min(self.slice, limit))
        if cause is None and self._pending_interrupt(ignore_mstatus=True) is not None:
            # Pending but masked by mstatus.MIE: the guest is likely in "mask, check, wfi, unmask" and will take it
            # right after unmasking. Interrupts are only injected between slices, so run short slices for a while
            # to catch the unmask within SHORT_SLICE instructions (bounded: a long masked section runs at full speed
            # after SHORT_SLICES of them).
            if self._short_slices > 0:
                self._short_slices -= 1
                n = min(n, SHORT_SLICE)
        else:
            self._short_slices = SHORT_SLICES
        if uc.reg_read(R.UC_RISCV_REG_MIE) & (1 << IRQ_MTI):
            until = self.clint.cycles_until_mtip()
            if until > 0:
                n = min(n, until)
        self._slice_exceptions = 0
        hz = self.sysctl.cpu_hz() or bootrom_fallback_hz()
        t0 = time.perf_counter()
        try:
            uc.emu_start(self.pc, 0, count=n)
        except UcError as e:
            self.host_seconds += time.perf_counter() - t0
            self._emu_error(e)
        dt = time.perf_counter() - t0
        self.host_seconds += dt
        self.cycles += n
        self.virtual_seconds += n / float(hz)
        self.pc = uc.reg_read(R.UC_RISCV_REG_PC)
        if self._after_wfi(self.pc):
            self.wfi_slices += 1
        else:
            self.instructions += n
            self.busy_host_seconds += dt
        lone, lone_pc = self.kpu.slice_end()
        if lone:
            self.stop_fault(lone, pc=lone_pc, address=KpuRegisters.base)
        self._check_fault()
        if self._stop is not None:
            message, error = self._stop
            raise BoardStopped(message, error)
        if self._reset_reason is not None:
            self._reset_reason = None
            self._reboot()

    def _emu_error(self, err):
        pc = self.uc.reg_read(R.UC_RISCV_REG_PC)
        if self.fault is None:
            if err.errno == UC_ERR_INSN_INVALID:
                word = bytes(self.uc.mem_read(pc, 4)) if self._mapped(pc) else b""
                low16 = int.from_bytes(word[:2], "little") if word else None
                if word and (int.from_bytes(word, "little") == 0x00100073 or low16 == 0x9002):
                    self.stop_fault("guest executed ebreak at pc 0x%x" % pc, pc=pc)
                else:
                    self.stop_fault("invalid instruction at pc 0x%x (%s)" % (pc, word.hex() or "unmapped"), pc=pc)
            else:
                self.stop_fault("CPU stopped at pc 0x%x: %s" % (pc, err), pc=pc)
        raise BoardFault(self.fault)

    def _after_wfi(self, pc):
        """Did the slice stop right after a wfi (0x10500073)? Then it may have ended early (see the module doc)."""
        try:
            return bytes(self.uc.mem_read(pc - 4, 4)) == b"\x73\x00\x50\x10"
        except UcError:
            return False

    @staticmethod
    def _mapped(addr):
        return any(b <= addr < b + MEM_SIZE for b in (SRAM_BASE, UNCACHED_BASE, HIGH_ALIAS))

    def run(self, max_instructions):
        """Run `max_instructions` CPU cycles (instructions, or idle cycles of a hart in wfi) in slices.
        BoardFault if the board stops."""
        end = self.cycles + max_instructions
        while self.cycles < end:
            self.step(end - self.cycles)

    def run_until(self, expect, max_instructions=None, timeout=None):
        """Run until `expect` (bytes/str) appears in the unread UART output, or `expect(board)` is true.
        Returns the output up to and including the match (it is consumed), or True for a predicate.
        BoardTimeout after max_instructions CPU cycles (see run) or `timeout` host seconds; BoardFault if the board
        stops."""
        if isinstance(expect, str):
            expect = expect.encode()
        start = self.cycles
        t0 = time.perf_counter()
        searched = self._cursor
        while True:
            if callable(expect):
                if expect(self):
                    return True
            else:
                at = self.uart_log.find(expect, max(self._cursor, searched - len(expect) + 1))
                if at >= 0:
                    end = at + len(expect)
                    out = bytes(self.uart_log[self._cursor:end])
                    self._cursor = end
                    return out
                searched = len(self.uart_log)
            done = self.cycles - start
            if max_instructions is not None and done >= max_instructions:
                raise BoardTimeout("no %r after %d cycles; output so far: %r"
                                   % (expect, done, bytes(self.uart_log[self._cursor:][-400:])))
            if timeout is not None and time.perf_counter() - t0 > timeout:
                raise BoardTimeout("no %r after %.1f s (%d cycles); output so far: %r"
                                   % (expect, timeout, done, bytes(self.uart_log[self._cursor:][-400:])))
            self.step(None if max_instructions is None else max_instructions - done)

    def write_uart(self, data):
        """Queue host bytes for the guest's UARTHS receiver (delivered at the next slice boundary)."""
        if isinstance(data, str):
            data = data.encode()
        self.uarths.feed(data)

    def read_uart(self):
        """The guest's UART output not yet consumed by read_uart / run_until."""
        out = bytes(self.uart_log[self._cursor:])
        self._cursor = len(self.uart_log)
        return out

    def stats(self):
        """instructions (known executed), cycles (virtual, incl. wfi idle), mtime, virtual/host seconds, MIPS
        (instructions per host second of the slices that ran them), interrupts/exceptions taken, KPU layers."""
        busy = self.busy_host_seconds
        return {
            "instructions": self.instructions,
            "cycles": self.cycles,
            "wfi_slices": self.wfi_slices,
            "mtime": self.clint.mtime(),
            "virtual_seconds": self.virtual_seconds,
            "host_seconds": self.host_seconds,
            "mips": self.instructions / busy / 1e6 if busy > 0 else 0.0,
            "cpu_hz": self.sysctl.cpu_hz(),
            "interrupts": self.interrupts_taken,
            "exceptions": self.exceptions_taken,
            "kpu_layers": getattr(self.kpu_device, "layers_run", 0) if self.kpu_device is not None else 0,
            "resets": self.resets,
        }


def bootrom_fallback_hz():
    return 26000000  # CPU clock with no PLL: only used if the guest switched ACLK to a powered-down PLL0

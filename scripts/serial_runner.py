#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run MicroPython scripts on a board (or any MicroPython console) through its raw REPL, over pyserial.

    python3 scripts/serial_runner.py --port /dev/ttyUSB0 --prelude-file tests_device/common.py tests_device/test_*.py
    python3 scripts/serial_runner.py --pty-host build/micropython-host/micropython \
        --prelude-file tests_device/common.py tests_device/test_*.py

Raw REPL protocol (MicroPython shared/runtime/pyexec.c): Ctrl-C Ctrl-C interrupts whatever runs; Ctrl-A enters the
raw REPL, which answers "raw REPL; CTRL-B to exit\\r\\n>"; the script is sent followed by Ctrl-D; the board answers
"OK", the script's stdout, Ctrl-D, the traceback (stderr) if any, Ctrl-D, ">". Ctrl-D at the empty raw prompt is a
soft reset; Ctrl-B goes back to the friendly REPL.

A script passes when it raised nothing and printed no line starting with "RESULT FAIL" (tests_device scripts end
with "RESULT PASS n" / "RESULT FAIL n"). A script that runs longer than --timeout is interrupted (Ctrl-C) and fails.
--prelude lines (e.g. 'TESTDATA = "/sd"'), then the text of each --prelude-file (tests_device/common.py: the helpers
the device scripts share), are prepended to every script.

`PtyBoard(cmd)` starts a program (e.g. the host MicroPython) with its console on the master side of a
pseudo-terminal and gives the slave's path as `port`, so the same code path as with a USB serial board can be
tested without one.
"""
import argparse
import os
import subprocess
import sys
import time

RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n>"


class Timeout(Exception):
    """The board did not answer (or the script did not finish) in time."""


class ReplError(Exception):
    """The board answered something the raw REPL protocol does not allow."""


class RawRepl(object):
    def __init__(self, port, baudrate=115200, timeout=60.0, serial_obj=None):
        if serial_obj is None:
            import serial
            serial_obj = serial.Serial(port, baudrate=baudrate, timeout=0.05, write_timeout=10)
        self.ser = serial_obj
        self.timeout = timeout
        self._buf = b""
        self.enter()

    # -- low level ------------------------------------------------------------------------------------------
    def read_until(self, ending, timeout):
        """Read until `ending` arrives; return what came before it (what follows stays buffered).
        Timeout -> Timeout (with the data so far as .partial)."""
        deadline = time.monotonic() + timeout
        while True:
            i = self._buf.find(ending)
            if i >= 0:
                data, self._buf = self._buf[:i], self._buf[i + len(ending):]
                return data
            chunk = self.ser.read(max(1, self.ser.in_waiting))
            if chunk:
                self._buf += chunk
                continue
            if time.monotonic() > deadline:
                err = Timeout("no %r from the board after %.1f s; got %r" % (ending, timeout, self._buf[-200:]))
                err.partial = self._buf
                self._buf = b""
                raise err

    def read_exactly(self, n, timeout):
        deadline = time.monotonic() + timeout
        while len(self._buf) < n:
            chunk = self.ser.read(max(1, self.ser.in_waiting))
            if chunk:
                self._buf += chunk
            elif time.monotonic() > deadline:
                raise Timeout("board did not answer (%d of %d bytes: %r)" % (len(self._buf), n, self._buf))
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def write(self, data):
        # small chunks: boards with a small UART FIFO drop bytes on long bursts
        for i in range(0, len(data), 256):
            self.ser.write(data[i:i + 256])
            self.ser.flush()

    def drain(self, quiet=0.2):
        """Discard input until the line is quiet."""
        self._buf = b""
        end = time.monotonic() + quiet
        while time.monotonic() < end:
            if self.ser.read(max(1, self.ser.in_waiting)):
                end = time.monotonic() + quiet

    # -- protocol -------------------------------------------------------------------------------------------
    def enter(self):
        self.write(b"\r\x03\x03")
        self.drain()
        self.ser.reset_input_buffer()
        self.write(b"\r\x01")
        self.read_until(RAW_BANNER, self.timeout)
        self.drain(0.05)

    def exec(self, source, timeout=None):
        """Run `source`; return (stdout, stderr) as str. stderr holds the traceback of an uncaught exception."""
        if isinstance(source, str):
            source = source.encode("utf-8")
        timeout = self.timeout if timeout is None else timeout
        self.write(source)
        self.write(b"\x04")
        ok = self.read_exactly(2, 10)
        if ok != b"OK":
            raise ReplError("expected OK from the raw REPL, got %r" % (ok + self._buf[:200]))
        try:
            out = self.read_until(b"\x04", timeout)
        except Timeout as t:
            self.interrupt()
            t.args = ("script still running after %.1f s: interrupted; output so far: %r"
                      % (timeout, t.partial[-500:].decode("utf-8", "replace")),)
            raise
        err = self.read_until(b"\x04", 10)
        self.read_until(b">", 10)
        return out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def interrupt(self):
        """Ctrl-C a running script and resynchronise at the raw prompt."""
        self.write(b"\x03")
        try:
            self.read_until(b"\x04>", 10)  # end of the KeyboardInterrupt traceback, then the prompt
        except Timeout:
            self.enter()

    def soft_reset(self):
        self.write(b"\x04")
        self.read_until(b"soft reboot\r\n", self.timeout)
        self.read_until(RAW_BANNER, self.timeout)

    def close(self):
        try:
            self.write(b"\x02")  # back to the friendly REPL
        finally:
            self.ser.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class PtyBoard(object):
    """A program whose console is a pseudo-terminal: `port` is the path pyserial opens."""

    def __init__(self, cmd):
        self.master, self.slave = os.openpty()
        self.port = os.ttyname(self.slave)
        self.proc = subprocess.Popen(cmd, stdin=self.master, stdout=self.master, stderr=self.master,
                                     close_fds=True)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_scripts(repl, paths, prelude="", timeout=None, verbose=False, soft_reset=True):
    """Run each script; return a list of (path, passed, seconds, message). soft_reset: start each script on a
    fresh interpreter (Ctrl-D at the raw prompt, as mpremote does), so one script's models and globals do not
    take the next one's heap."""
    results = []
    for path in paths:
        with open(path) as f:
            source = prelude + f.read()
        t0 = time.monotonic()
        try:
            if soft_reset:
                repl.soft_reset()
            out, err = repl.exec(source, timeout)
        except Timeout as e:
            results.append((path, False, time.monotonic() - t0, str(e)))
            continue
        dt = time.monotonic() - t0
        if verbose:
            sys.stdout.write(out.replace("\r\n", "\n"))
        failed = [line for line in out.splitlines() if line.startswith("RESULT FAIL") or line.startswith("FAIL ")]
        if err:
            results.append((path, False, dt, err.strip().splitlines()[-1] if err.strip() else "exception"))
        elif failed:
            results.append((path, False, dt, "; ".join(failed[:5])))
        else:
            results.append((path, True, dt, ""))
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", help="serial port of the board (/dev/ttyUSB0, COM3, ...)")
    where.add_argument("--pty-host", metavar="PROGRAM", help="run PROGRAM (a MicroPython) on a pseudo-terminal")
    ap.add_argument("--baud", type=int, default=115200)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per script (default 120)")
    ap.add_argument("--prelude", action="append", default=[], help="a line prepended to every script")
    ap.add_argument("--prelude-file", action="append", default=[], metavar="FILE",
                    help="a file prepended to every script, after the --prelude lines (tests_device/common.py)")
    ap.add_argument("-v", "--verbose", action="store_true", help="show each script's output")
    ap.add_argument("--no-soft-reset", action="store_true",
                    help="run the scripts one after another in one interpreter (default: soft reset before each)")
    ap.add_argument("scripts", nargs="+")
    args = ap.parse_args(argv)
    prelude = "".join(line + "\n" for line in args.prelude)
    for path in args.prelude_file:
        with open(path) as f:
            text = f.read()
        prelude += text if text.endswith("\n") else text + "\n"

    board = PtyBoard([args.pty_host]) if args.pty_host else None
    try:
        repl = RawRepl(board.port if board else args.port, baudrate=args.baud, timeout=args.timeout)
        try:
            results = run_scripts(repl, args.scripts, prelude, args.timeout, args.verbose, not args.no_soft_reset)
        finally:
            repl.close()
    finally:
        if board:
            board.close()
    failed = 0
    for path, ok, dt, msg in results:
        print("%-4s %-40s %6.2fs %s" % ("PASS" if ok else "FAIL", path, dt, msg))
        failed += not ok
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

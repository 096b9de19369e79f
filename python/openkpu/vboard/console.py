# SPDX-License-Identifier: Apache-2.0
"""Where the guest's UARTHS goes in an interactive session: this terminal (raw mode; Ctrl-] quits) or a
pseudo-terminal (`--pty`) that serial tools (scripts/serial_runner.py, mpremote, pyboard.py) open like a board's
USB serial port. Host input is queued to the UARTHS receiver at slice boundaries.
"""
import errno
import os
import select
import sys

QUIT_KEY = 0x1D  # Ctrl-]


class TerminalConsole(object):
    """stdin in raw mode → guest; guest → stdout. Ctrl-] ends the session."""

    def __init__(self, stdin=None, stdout=None):
        self.fd_in = (stdin or sys.stdin).fileno()
        self.fd_out = (stdout or sys.stdout).fileno()
        self.quit = False
        self._saved = None

    def __enter__(self):
        if os.isatty(self.fd_in):
            import termios
            import tty
            self._saved = termios.tcgetattr(self.fd_in)
            tty.setraw(self.fd_in)
        return self

    def __exit__(self, *exc):
        if self._saved is not None:
            import termios
            termios.tcsetattr(self.fd_in, termios.TCSADRAIN, self._saved)
        return False

    def write(self, data):
        os.write(self.fd_out, data)

    def poll_input(self):
        if self.quit or not select.select([self.fd_in], [], [], 0)[0]:
            return b""
        data = os.read(self.fd_in, 1024)
        if not data:  # stdin closed
            self.quit = True
            return b""
        if QUIT_KEY in data:
            data = data[:data.index(QUIT_KEY)]
            self.quit = True
        return data


class PtyConsole(object):
    """A pseudo-terminal: the guest UART on the master side, `path` for the client. Output nobody reads is
    dropped once the pty buffer is full, as a real UART's would be."""

    def __init__(self):
        import tty
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)  # no echo, no newline translation: a plain byte pipe like a USB serial port
        os.set_blocking(self.master, False)
        self.path = os.ttyname(self.slave)
        self.quit = False
        self.dropped = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass
        return False

    def write(self, data):
        try:
            n = os.write(self.master, data)
            self.dropped += len(data) - n
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EIO):
                raise
            self.dropped += len(data)

    def poll_input(self):
        try:
            return os.read(self.master, 4096)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EIO):
                return b""
            raise


def interact(board, console, realtime=True):
    """Run the board with `console` until the user quits; BoardFault propagates. With `realtime`, virtual time is
    not allowed to run ahead of the host clock (an idle guest sleeping in wfi would otherwise race through
    time.sleep() and burn a host core): the board pauses while it is ahead."""
    import time
    board.console = console.write
    t0 = time.perf_counter()
    v0 = board.virtual_seconds
    pending = board.read_uart()  # anything printed before the console was attached
    if pending:
        console.write(pending)
    while not console.quit:
        data = console.poll_input()
        if data:
            board.write_uart(data)
        board.step()
        if realtime:
            ahead = (board.virtual_seconds - v0) - (time.perf_counter() - t0)
            if ahead > 0.002:
                time.sleep(min(ahead, 0.02))
        board.read_uart()  # the console got it already; keep the log from growing without bound
        if len(board.uart_log) > 1 << 20:
            del board.uart_log[:len(board.uart_log) - (1 << 16)]
            board._cursor = len(board.uart_log)

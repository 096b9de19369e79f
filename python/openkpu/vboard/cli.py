# SPDX-License-Identifier: Apache-2.0
"""`openkpu vboard`: boot the K210 firmware on the virtual Maix board.

    openkpu vboard boot IMAGE [--flash FILE@ADDR ...] [--pty] [--kpu-hang]     interactive (Ctrl-] quits)
    openkpu vboard run IMAGE SCRIPT.py [--flash FILE@ADDR ...] [--timeout S]   run a script in the raw REPL
    both: [--frames SRC] [--max-frames N] [--loop] [--sensor ov2640|gc0328|ov5640] [--lcd-out DIR]
          [--max-lcd-frames N]   camera and LCD

The camera (DVP + the --sensor on SCCB: OV2640 by default, GC0328 or OV5640) takes its frames from --frames (an
image, a folder of images, a video or a webcam, as `openkpu run --frames`); the LCD (ST7789 on SPI0) writes each
screen frame as DIR/lcd_00001.png ... (as `openkpu run --lcd-out`). When the frames run out, `run` writes the last LCD frame and exits 0, as the runner does.

IMAGE is a bare firmware.bin (objcopy output), a raw flash dump from address 0, or a .kfpkg. `run` boots, enters
MicroPython's raw REPL, sends the script, prints what it prints (stdout; the traceback to stderr) and exits 1 when
the script raised, 0 when it ended, 2 for a board fault, a boot error or a timeout.
"""
import argparse
import signal
import sys
import time

from .camera import BoardStopped
from .errors import BoardError, BoardFault, BoardTimeout, BootError

RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n>"


def _board(args):
    from .board import Board
    from .bootrom import parse_flash_item
    items = [parse_flash_item(f) for f in args.flash or ()]
    return Board(args.image, flash=items, image_kind=args.image_kind, kpu_hang=args.kpu_hang,
                 frames=args.frames, max_frames=args.max_frames, loop=args.loop, lcd_out=args.lcd_out,
                 max_lcd_frames=args.max_lcd_frames, report=_report, sensor=args.sensor)


def _report(line):
    print("vboard: %s" % line, file=sys.stderr)
    sys.stderr.flush()


def _add_common(p):
    p.add_argument("image", help="firmware.bin, a raw flash .bin dump from address 0, or a .kfpkg")
    p.add_argument("--flash", action="append", metavar="FILE@ADDR",
                   help="write FILE into the flash image at ADDR (a .kfpkg: its own addresses); repeatable")
    p.add_argument("--image-kind", choices=("firmware", "flash", "kfpkg"),
                   help="how to read IMAGE (default: guess: a zip is a kfpkg, a .bin starting with a valid boot "
                        "header is a flash dump, anything else a bare firmware)")
    p.add_argument("--kpu-hang", action="store_true", help="fault injection: the KPU never raises calc_done")
    p.add_argument("--stats", action="store_true", help="print instructions, virtual/host time and MIPS at the end")
    p.add_argument("--frames", metavar="SRC",
                   help="camera frames: an image, a folder of images, a video, or a webcam (0, /dev/video0)")
    p.add_argument("--max-frames", type=int, metavar="N", help="stop after N camera frames")
    p.add_argument("--sensor", choices=("ov2640", "gc0328", "ov5640"), default="ov2640",
                   help="the camera on SCCB: ov2640 (Maix Bit/Go, default), gc0328 (Maix Dock) or ov5640")
    p.add_argument("--loop", action="store_true", help="cycle through the frames (with --max-frames)")
    p.add_argument("--lcd-out", metavar="DIR", help="write LCD frames as DIR/lcd_00001.png ...")
    p.add_argument("--max-lcd-frames", type=int, default=1000, metavar="N",
                   help="write at most N LCD PNGs (default 1000; 0: no cap)")
    p.add_argument("--save-flash", metavar="FILE",
                   help="write the 16 MiB flash (as the guest left it: programs/erases included) to FILE at the end")


def _print_stats(board, boot=None):
    s = board.stats()
    line = ("vboard: %d instructions (+ %d wfi-ended slices), %.3f s virtual at %.0f MHz, %.3f s host, %.0f MIPS, "
            "%d interrupts, %d KPU layers" % (s["instructions"], s["wfi_slices"], s["virtual_seconds"],
                                              s["cpu_hz"] / 1e6, s["host_seconds"], s["mips"], s["interrupts"],
                                              s["kpu_layers"]))
    if boot:
        line += "; prompt after %d cycles, %.3f s host" % boot
    print(line, file=sys.stderr)


def _save_flash(board, args):
    if board is not None and getattr(args, "save_flash", None):
        with open(args.save_flash, "wb") as f:
            f.write(board.flash)


def cmd_boot(args):
    from .console import PtyConsole, TerminalConsole, interact
    board = _board(args)

    if args.pty:
        console = PtyConsole()
        print("vboard: guest UART on %s (Ctrl-C here stops the board)" % console.path, file=sys.stderr)
        sys.stderr.flush()
    else:
        console = TerminalConsole()
        print("vboard: booting %s (Ctrl-] quits)\r" % args.image, file=sys.stderr)

    def on_term(_sig, _frame):
        # A flag the loop reads, not an exception: the signal may arrive inside one of Unicorn's ctypes callbacks,
        # which prints and drops an exception raised there, and the board would run on.
        console.quit = True
    signal.signal(signal.SIGTERM, on_term)
    try:
        with console:
            interact(board, console)
    except KeyboardInterrupt:
        pass
    except BoardStopped as e:
        print("\r\nvboard: %s\r" % e, file=sys.stderr)
    finally:
        _finish(board)
        _save_flash(board, args)
        if args.stats:
            _print_stats(board)
    print("\r\nvboard: stopped", file=sys.stderr)
    return 0


def _write_out(stream, data):
    stream.write(data.replace(b"\r\n", b"\n"))
    stream.flush()


def run_script(board, script, timeout=60.0, out=None, err=None, wait_prompt=True):
    """Run `script` (bytes) in the raw REPL (after waiting for the boot's ">>> " prompt when `wait_prompt`).
    Returns (exit status: 0 ok / 1 the script raised, (cycles, host seconds) when the prompt came)."""
    out = out or sys.stdout.buffer
    err = err or sys.stderr.buffer
    t0 = time.perf_counter()
    deadline = t0 + timeout

    def left():
        return max(0.0, deadline - time.perf_counter())

    if wait_prompt:
        try:
            board.run_until(b">>> ", timeout=min(left(), 20.0))
        except BoardTimeout:
            pass  # a boot script may be running: Ctrl-C below interrupts it
    boot = (board.cycles, time.perf_counter() - t0)
    board.write_uart(b"\r\x03\x03")
    board.write_uart(b"\r\x01")
    board.run_until(RAW_BANNER, timeout=left())
    board.write_uart(script + b"\x04")
    board.run_until(b"OK", timeout=left())
    # stdout up to the first \x04 (streamed as it comes), then the exception text up to the second
    parts = []
    for stream in (out, err):
        buf = bytearray()
        while True:
            chunk = board.read_uart()
            if chunk:
                end = chunk.find(b"\x04")
                if end >= 0:
                    _write_out(stream, chunk[:end])
                    buf += chunk[:end]
                    board._cursor -= len(chunk) - end - 1  # give the rest back
                    break
                _write_out(stream, chunk)
                buf += chunk
            if left() <= 0:
                raise BoardTimeout("script still running after %.1f s" % timeout)
            board.step()
        parts.append(bytes(buf))
    return (1 if parts[1].strip() else 0), boot


def cmd_run(args):
    try:
        with open(args.script, "rb") as f:
            script = f.read()
    except OSError as e:
        print("vboard: %s" % e, file=sys.stderr)
        return 2
    board = None
    try:
        board = _board(args)
        status, boot = run_script(board, script, timeout=args.timeout)
    except BoardStopped as e:
        sys.stdout.flush()
        _finish(board)
        print("vboard: %s" % e, file=sys.stderr)
        _save_flash(board, args)
        if args.stats:
            _print_stats(board)
        return 2 if e.error else 0
    except BoardError as e:
        sys.stdout.flush()
        kind = {BootError: "boot error", BoardFault: "board fault", BoardTimeout: "timeout"}.get(type(e), "error")
        print("vboard: %s: %s" % (kind, e), file=sys.stderr)
        _save_flash(board, args)
        if board is not None and args.stats:
            _print_stats(board)
        return 2
    _finish(board)
    _save_flash(board, args)
    if args.stats:
        _print_stats(board, boot)
    return status


def _finish(board):
    if board is None:
        return
    written = board.finish()
    if board.panel.out_dir:
        print("vboard: %d LCD frame(s) in %s" % (len(written), board.panel.out_dir), file=sys.stderr)


def main(argv=None, prog="openkpu vboard"):
    parser = argparse.ArgumentParser(prog=prog, description="virtual Maix (K210) board on the Unicorn emulator")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("boot", help="boot IMAGE with the guest UART on this terminal or a --pty")
    _add_common(p)
    p.add_argument("--pty", action="store_true", help="put the guest UART on a pseudo-terminal (path printed)")
    p = sub.add_parser("run", help="boot IMAGE, run SCRIPT.py in the raw REPL, exit 1 if it raised")
    _add_common(p)
    p.add_argument("script", help="MicroPython script to run on the board")
    p.add_argument("--timeout", type=float, default=60.0, help="host seconds for boot + script (default 60)")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "boot":
            return cmd_boot(args)
        return cmd_run(args)
    except BoardError as e:
        print("vboard: %s" % e, file=sys.stderr)
        return 2
    except ImportError as e:
        print("vboard: %s (install the extra: pip install 'openkpu[vboard]')" % e, file=sys.stderr)
        return 2

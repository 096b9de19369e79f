# SPDX-License-Identifier: Apache-2.0
"""Run an unmodified MaixPy board script on a PC.

    python -m openkpu run script.py [--frames PATH] [--lcd-out DIR] [--max-frames N] [--loop] [--flash IMAGE]
                                    [--sd DIR] [--show] [--max-lcd-frames N] [-- script args...]
    python -m openkpu infer MODEL --dataset DIR --out DIR     (see openkpu.infer)

What it does:
- puts the board stand-ins (`openkpu/board`: `image`, `sensor`, `lcd`, `Maix`, `utime`) first on `sys.path`, then
  the script's folder, so `import sensor, image, lcd, KPU as kpu` resolves as on the board;
- MicroPython names CPython lacks: `time.clock()` (MaixPy's FPS clock), `gc.mem_free()`, `gc.mem_alloc()`;
- camera frames from `--frames` (an image, a folder of images, a video, or a webcam `0` / `/dev/video0`: see
  `sensor`), at most `--max-frames`;
- LCD frames to numbered PNGs in `--lcd-out`, at most `--max-lcd-frames` (default 1000; 0: no cap); an endless
  source (`--loop`, a webcam) with `--lcd-out` needs `--max-frames` (a usage error otherwise: one such run wrote
  18,121 PNGs);
- `--show`: a live window of the LCD (Tk, else OpenCV's highgui; see board/_lcd_window.py);
- the SPI flash for `kpu.load(0x300000)`: `--flash` a `.kfpkg` or a `.bin` (`KPU.set_flash_image`, and the
  environment variable `OPENKPU_FLASH_IMAGE` for anything that reads it);
- the SD card: `--sd DIR` makes the script's `/sd/...` paths (open, os.listdir, os.stat, os.path.exists) refer
  to DIR, so `kpu.load("/sd/yolo.kmodel")` runs unchanged;
- prints `[openkpu] frame N: NAME WxH` before each frame, and ends cleanly when the frames run out: `snapshot()`
  raises FramesExhausted (a BaseException, so the script's `except Exception:` cannot swallow it), caught here.
Exit status: 0 when the script ended or the frames ran out, 1 when the script raised.
"""
import argparse
import os
import sys
import time
import traceback

PREFIX = "[openkpu]"


class FramesExhausted(BaseException):
    """sensor.snapshot() has no more frames (or --max-frames were delivered): the runner ends the script."""


def board_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "board")


def install_micropython_names():
    """Add the MicroPython / MaixPy names CPython's `time` and `gc` lack (only when missing)."""
    import gc
    if board_dir() not in sys.path:
        sys.path.insert(0, board_dir())
    import utime
    if not hasattr(time, "clock"):
        time.clock = utime.clock
    for name in ("ticks_ms", "ticks_us", "ticks_diff", "ticks_add", "sleep_ms", "sleep_us"):
        if not hasattr(time, name):
            setattr(time, name, getattr(utime, name))
    if not hasattr(gc, "mem_free"):
        gc.mem_free = lambda: 512 * 1024
    if not hasattr(gc, "mem_alloc"):
        gc.mem_alloc = lambda: 0
    if not hasattr(sys, "print_exception"):  # MicroPython's sys.print_exception(exc, file=sys.stdout)
        sys.print_exception = _print_exception


def _print_exception(exc, file=None):
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=file or sys.stdout)


def set_flash(path):
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("flash image not found: %s" % path)
    os.environ["OPENKPU_FLASH_IMAGE"] = path
    try:
        import KPU
    except ImportError:
        return
    setter = getattr(KPU, "set_flash_image", None)
    if setter is not None:
        try:
            setter(path)
        except ValueError as e:  # a damaged .kfpkg: a usage error (exit 2), not a traceback
            raise RuntimeError("--flash %s: %s" % (path, e))


class _SdCard(object):
    """Map the board's `/sd/...` paths to a folder for open(), os.listdir(), os.stat() and os.path.exists()."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.saved = None

    def map(self, path):
        if isinstance(path, str) and (path == "/sd" or path.startswith("/sd/")):
            return os.path.join(self.root, path[4:])
        return path

    def __enter__(self):
        import builtins
        self.saved = (builtins.open, os.listdir, os.stat, os.path.exists)
        b_open, listdir, stat, exists = self.saved
        builtins.open = lambda file, *a, **k: b_open(self.map(file), *a, **k)
        os.listdir = lambda path=".": listdir(self.map(path))
        os.stat = lambda path, *a, **k: stat(self.map(path), *a, **k)
        os.path.exists = lambda path: exists(self.map(path))
        return self

    def __exit__(self, *exc):
        import builtins
        builtins.open, os.listdir, os.stat, os.path.exists = self.saved
        return False


BOARD_MODULES = ("sensor", "lcd", "image", "Maix", "utime", "maix", "machine", "fpioa_manager", "board", "uio")
DEFAULT_MAX_LCD_FRAMES = 1000


class UsageError(RuntimeError):
    """A command line that cannot work as given (exit status 2); the message says what to change."""


def _compile_script(script):
    """The script's code object; a tab/space mix gets MicroPython's reading of it in the message."""
    with open(script, "rb") as f:
        source = f.read()
    try:
        return compile(source, script, "exec")
    except (TabError, IndentationError) as e:
        line = (e.text or "").rstrip("\n")
        raise UsageError("%s line %s: %s: %r. MicroPython on the board counts a tab as reaching the next multiple "
                         "of 8 columns and rejects this too; re-indent the script with spaces only"
                         % (script, e.lineno, e.msg, line))


def run(script, frames=None, lcd_out=None, max_frames=None, loop=False, flash=None, argv=(), quiet=False,
        out=None, sd=None, show=False, show_zoom=2, max_lcd_frames=DEFAULT_MAX_LCD_FRAMES):
    """Run `script` as __main__ with the board stand-ins. Returns the exit status (0 ok, 1 script error)."""
    out = out or sys.stdout
    script = os.path.abspath(script)
    if not os.path.isfile(script):
        raise FileNotFoundError("script not found: %s" % script)
    code = _compile_script(script)
    bdir = board_dir()
    for p in (os.path.dirname(script), bdir):
        while p in sys.path:
            sys.path.remove(p)
    sys.path.insert(0, os.path.dirname(script))
    sys.path.insert(0, bdir)
    install_micropython_names()
    # Forget board modules imported from elsewhere so the stand-ins are the ones the script gets.
    for name in BOARD_MODULES:
        mod = sys.modules.get(name)
        where = os.path.abspath(getattr(mod, "__file__", "") or "")
        if mod is not None and not where.startswith(bdir + os.sep):
            del sys.modules[name]
    import lcd
    import sensor

    def on_frame(index, name, img):
        if not quiet:
            print("%s frame %d: %s %dx%d" % (PREFIX, index, name, img.width(), img.height()), file=out)
            out.flush()

    if frames is not None:
        sensor.host_set_frames(frames, max_frames=max_frames, loop=loop, on_frame=on_frame)
        endless = "--loop" if loop else ("a webcam" if sensor.host_source_is_endless() else None)
        if endless and lcd_out is not None and max_frames is None:
            raise UsageError("%s with --lcd-out and no --max-frames would write LCD PNGs until the disk is full "
                             "(one such run wrote 18,121): add --max-frames N" % endless)
    if lcd_out is not None:
        lcd.host_set_output(lcd_out, max_files=max_lcd_frames or None)
    if flash is not None:
        set_flash(flash)
    viewer = None
    if show:
        import _lcd_window
        try:
            viewer = _lcd_window.open_window(zoom=show_zoom)
        except _lcd_window.WindowError as e:
            raise UsageError(str(e))
        lcd.host_set_viewer(viewer)
        if not quiet:
            print("%s LCD window open (%s); close it to stop the script" % (PREFIX, viewer.backend), file=out)

    saved_argv = sys.argv
    sys.argv = [script] + list(argv)
    status = 0
    reason = "script ended"
    t0 = time.perf_counter()
    sdcard = _SdCard(sd) if sd is not None else None
    try:
        if sdcard is not None:
            sdcard.__enter__()
        namespace = {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__}
        exec(code, namespace)
    except FramesExhausted as e:
        reason = str(e) or "frames exhausted"
        if type(e).__name__ == "LcdFramesCapped":  # the safety cap on PNGs: say so where it is seen
            print("%s %s" % (PREFIX, reason), file=sys.stderr)
        if type(e).__name__ in ("NoFrames", "BadFrame"):  # no --frames, or one that is not an image: usage errors
            status = 2
            print("%s error: %s" % (PREFIX, reason), file=sys.stderr)
    except SystemExit as e:
        code = e.code
        status = 0 if code in (None, 0) else (code if isinstance(code, int) else 1)
        reason = "script exited (%s)" % (code,)
    except KeyboardInterrupt:
        status = 130
        reason = "interrupted"
    except Exception:
        traceback.print_exc()
        status = 1
        reason = "script raised"
    finally:
        sys.argv = saved_argv
        if sdcard is not None:
            sdcard.__exit__(None, None, None)
        getattr(sensor, "host_close", lambda: None)()
        lcd.host_flush()
        if viewer is not None:
            lcd.host_set_viewer(None)
            viewer.flush(lcd.host_screen())
            if reason != "LCD window closed" and sys.stdin is not None and sys.stdin.isatty():
                print("%s close the LCD window to exit" % PREFIX, file=out)
                try:
                    viewer.wait_closed()
                except KeyboardInterrupt:
                    pass
            viewer.close()
    if not quiet:
        print("%s done: %s; %d frame(s) in %.2f s, %d LCD frame(s)%s" % (
            PREFIX, reason, sensor.host_frames_delivered(), time.perf_counter() - t0, lcd.host_frame_count(),
            (" in " + lcd_out) if lcd_out else ""), file=out)
    return status


def main(argv=None):
    from openkpu import __version__
    parser = argparse.ArgumentParser(prog="openkpu", description="openkpu host tools")
    parser.add_argument("--version", action="version", version="openkpu %s" % __version__)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("run", help="run an unmodified MaixPy board script on this PC")
    p.add_argument("script", help="the MaixPy script (.py)")
    p.add_argument("--frames", help="camera frames: an image, a folder of images (sorted), a video file, or a "
                   "webcam (0, 1, ... or /dev/video0; needs openkpu[video])")
    p.add_argument("--lcd-out", help="folder for the LCD frames (lcd_00001.png, ...)")
    p.add_argument("--max-frames", type=int, default=None, help="stop after this many camera frames")
    p.add_argument("--loop", action="store_true", help="cycle the frames (with --lcd-out it needs --max-frames)")
    p.add_argument("--max-lcd-frames", type=int, default=DEFAULT_MAX_LCD_FRAMES,
                   help="stop the script before writing more LCD PNGs than this (default %(default)s; 0: no cap)")
    p.add_argument("--show", action="store_true",
                   help="a live window of the LCD, like MaixPy IDE's frame buffer (Tk, or OpenCV's highgui)")
    p.add_argument("--show-zoom", type=int, default=2, help="window pixels per LCD pixel (default %(default)s)")
    p.add_argument("--flash", help="SPI-flash image for kpu.load(offset): a .kfpkg or a .bin dump")
    p.add_argument("--sd", help="folder that stands for the SD card: the script's /sd/... paths open files there")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    sub.add_parser("infer", add_help=False,
                   help="run a model over a folder of inputs, one .npy per input and output (openkpu infer -h)")
    sub.add_parser("inspect", help="format, inputs, outputs, layers, MACs and memory of a .kmodel", add_help=False)
    sub.add_parser("profile", add_help=False,
                   help="each layer's time on this PC's emulator, on one and on N threads (openkpu profile -h)")
    sub.add_parser("fit", help="will these models fit on a K210, alone and together?", add_help=False)
    sub.add_parser("swap", help="word-swap a model for kpu.load_flash (or --check / --unswap)", add_help=False)
    sub.add_parser("flash", add_help=False,
                   help="check a flash layout, pack a .kfpkg, or flash a board with kflash (openkpu flash -h)")
    sub.add_parser("vboard", add_help=False,
                   help="boot the K210 firmware on the virtual Maix board (openkpu vboard -h; needs openkpu[vboard])")
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("inspect", "fit", "swap"):  # the kmodel tools have their own parser
        from openkpu.model_tools import main as model_tools_main
        return model_tools_main(argv, prog="openkpu")
    if argv and argv[0] == "profile":  # `openkpu profile MODEL`: see openkpu.profile
        from openkpu.profile import main as profile_main
        return profile_main(argv[1:], prog="openkpu profile")
    if argv and argv[0] == "infer":  # `openkpu infer MODEL --dataset DIR --out DIR`: see openkpu.infer
        from openkpu.infer import main as infer_main
        return infer_main(argv[1:], prog="openkpu infer")
    if argv and argv[0] == "flash":  # `openkpu flash write|pack ...`: see openkpu.flashing
        from openkpu.flashing import main as flash_main
        return flash_main(argv[1:], prog="openkpu flash")
    if argv and argv[0] == "vboard":  # `openkpu vboard boot|run ...`: see openkpu.vboard.cli
        from openkpu.vboard.cli import main as vboard_main
        return vboard_main(argv[1:], prog="openkpu vboard")
    script_args = []
    if "--" in argv:  # everything after `--` goes to the script
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    if args.command != "run":
        parser.print_help()
        return 2
    if args.max_frames is not None and args.max_frames < 0:
        parser.error("--max-frames must be >= 0")
    if args.max_lcd_frames < 0:
        parser.error("--max-lcd-frames must be >= 0 (0: no cap)")
    if args.show_zoom < 1:
        parser.error("--show-zoom must be >= 1")
    try:
        return run(args.script, frames=args.frames, lcd_out=args.lcd_out, max_frames=args.max_frames,
                   loop=args.loop, flash=args.flash, argv=script_args, quiet=args.quiet, sd=args.sd,
                   show=args.show, show_zoom=args.show_zoom, max_lcd_frames=args.max_lcd_frames)
    except (FileNotFoundError, RuntimeError) as e:
        print("%s error: %s" % (PREFIX, e), file=sys.stderr)
        return 2

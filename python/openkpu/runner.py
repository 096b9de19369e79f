"""Run an unmodified MaixPy board script on a PC.

    python -m openkpu run script.py [--frames PATH] [--lcd-out DIR] [--max-frames N] [--loop] [--flash IMAGE]
                                    [--sd DIR] [-- script args...]

What it does:
- puts the board stand-ins (`openkpu/board`: `image`, `sensor`, `lcd`, `Maix`, `utime`) first on `sys.path`, then
  the script's folder, so `import sensor, image, lcd, KPU as kpu` resolves as on the board;
- MicroPython names CPython lacks: `time.clock()` (MaixPy's FPS clock), `gc.mem_free()`, `gc.mem_alloc()`;
- camera frames from `--frames` (an image, a folder of images, or a video: see `sensor`), at most `--max-frames`;
- LCD frames to numbered PNGs in `--lcd-out`;
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
import runpy
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


def run(script, frames=None, lcd_out=None, max_frames=None, loop=False, flash=None, argv=(), quiet=False,
        out=None, sd=None):
    """Run `script` as __main__ with the board stand-ins. Returns the exit status (0 ok, 1 script error)."""
    out = out or sys.stdout
    script = os.path.abspath(script)
    if not os.path.isfile(script):
        raise FileNotFoundError("script not found: %s" % script)
    bdir = board_dir()
    for p in (os.path.dirname(script), bdir):
        while p in sys.path:
            sys.path.remove(p)
    sys.path.insert(0, os.path.dirname(script))
    sys.path.insert(0, bdir)
    install_micropython_names()
    # Forget board modules imported from elsewhere so the stand-ins are the ones the script gets.
    for name in ("sensor", "lcd", "image", "Maix", "utime"):
        mod = sys.modules.get(name)
        if mod is not None and os.path.dirname(os.path.abspath(getattr(mod, "__file__", "") or "")) != bdir:
            del sys.modules[name]
    import lcd
    import sensor

    def on_frame(index, name, img):
        if not quiet:
            print("%s frame %d: %s %dx%d" % (PREFIX, index, name, img.width(), img.height()), file=out)
            out.flush()

    if frames is not None:
        sensor.host_set_frames(frames, max_frames=max_frames, loop=loop, on_frame=on_frame)
    if lcd_out is not None:
        lcd.host_set_output(lcd_out)
    if flash is not None:
        set_flash(flash)

    saved_argv = sys.argv
    sys.argv = [script] + list(argv)
    status = 0
    reason = "script ended"
    t0 = time.perf_counter()
    sdcard = _SdCard(sd) if sd is not None else None
    try:
        if sdcard is not None:
            sdcard.__enter__()
        runpy.run_path(script, run_name="__main__")
    except FramesExhausted as e:
        reason = str(e) or "frames exhausted"
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
        lcd.host_flush()
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
    p.add_argument("--frames", help="camera frames: an image, a folder of images (sorted) or a video file")
    p.add_argument("--lcd-out", help="folder for the LCD frames (lcd_00001.png, ...)")
    p.add_argument("--max-frames", type=int, default=None, help="stop after this many camera frames")
    p.add_argument("--loop", action="store_true", help="cycle the frames (use with --max-frames)")
    p.add_argument("--flash", help="SPI-flash image for kpu.load(offset): a .kfpkg or a .bin dump")
    p.add_argument("--sd", help="folder that stands for the SD card: the script's /sd/... paths open files there")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    sub.add_parser("inspect", help="format, inputs, outputs, layers, MACs and memory of a .kmodel", add_help=False)
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
    try:
        return run(args.script, frames=args.frames, lcd_out=args.lcd_out, max_frames=args.max_frames,
                   loop=args.loop, flash=args.flash, argv=script_args, quiet=args.quiet, sd=args.sd)
    except (FileNotFoundError, RuntimeError) as e:
        print("%s error: %s" % (PREFIX, e), file=sys.stderr)
        return 2

# SPDX-License-Identifier: Apache-2.0
"""KPU: MaixPy's `KPU` module, reimplemented over openkpu's C core (`_kpu`).

    import KPU as kpu
    task = kpu.load("/sd/facedetect.kmodel")      # or kpu.load(0x300000) with a flash image, see set_flash_image
    fmap = kpu.forward(task, img)                # img: an image.Image of the model's input size
    print(fmap[:])
    kpu.deinit(task)

This file is valid MicroPython (it is compiled with mpy-cross): no f-strings, no typing, nothing beyond the subset
MicroPython implements. On CPython `_kpu` is the C extension; on a board it is the native module with the same API.

Functions: load, load_flash, forward, get_output, set_layers, set_outputs, fmap, fmap_free, netinfo, deinit,
memtest, memory, set_flash_image, init_yolo2, run_yolo2, face_encode, face_compare; and budget, fits, rows_text (the
memory budget, verdict and KPU RAM row notation shared with `openkpu inspect` / `openkpu fit`), layer_times (a
forward timed layer by layer: on a board, where the time goes on the K210).

Where this differs from MaixPy, on purpose:
- `forward(net, img, out_index)`: the third argument is the OUTPUT INDEX (MaixPy's docs call it `end_layer`, but it
  never was). Use `set_layers(net, n)` to stop after n layers.
- fmap objects are SNAPSHOTS: a copy of the output taken when `forward`/`get_output` returned. In MaixPy an fmap
  aliases the model's output buffer, so the next forward silently changes an fmap you kept; here it does not.
- fmap `typecode()` works ('B' raw u8 KPU output, 'f' float32), and for 'f' maps `w()` is the ELEMENT count (MaixPy
  reported the byte count). A float output that is a flat vector has w = count, h = ch = 1 (MaixPy's shape);
  a float output with a real 3-D shape (e.g. a YOLO grid) reports its w, h, ch.
- fmap buffer protocol: `fmap.data()` gives the raw bytes everywhere; on CPython also `bytes(fmap)`, and on
  CPython >= 3.12 `memoryview(fmap)` (`__buffer__`). A pure-Python class cannot export a buffer before 3.12, and
  MicroPython has no `__bytes__`: on the board use `fmap.data()`.
- Errors keep MaixPy's exception types and numeric codes and add what was expected, what was found, and where.
- `memtest()` also prints, per loaded model, what it costs on a K210 (SRAM and KPU RAM) and whether it fits, against
  the budget `openkpu fit` uses by default (`budget()`: MaixPy's full firmware and 512 KiB GC heap, about 2 MiB for
  models; `fits()` is the verdict both give); `memory(net)` / `net.memory()` return the same figures as a dict.
- Error texts are worded by the C core (`_kpu.error_text`), the same from the CPython and the MicroPython binding.
- `load(path)` does not insist on ".kmodel" in the file name; `load(path, act_round="nncase1")` selects the
  emulator's activation rounding and `load(path, nncase="1.4")` a kmodel v5's compiler release (see `load`).
- kmodel v4 (and v5): `forward` works without `set_outputs`; the shape comes from the model where it is known, else a
  flat (n, 1, 1). `set_outputs` keeps MaixPy's checks (True/False, codes 2011/2012) and overrides the shape.
- `run_yolo2`: classes come from anchor_num (MaixPy assumed 5 anchors), any number of detections (MaixPy kept 10),
  a clear error when `init_yolo2` was not called (MaixPy crashed), the output is not altered in place (so
  `get_output` still sees the model's numbers), boxes are clamped to the image.
- `face_encode` clamps +0.25 to 127 (MaixPy wrapped it to -128) and takes at most 512 values (FACE_FEATURES_MAX,
  the documented limit: more is error 2001); `face_compare` of a zero vector is 0.0, not NaN.
- At most 5 models at once, as in MaixPy (error 2009 says which are loaded). On CPython a net that is no longer
  referenced is freed and gives its slot back; on MicroPython (no weak references) the module's list of loaded nets
  keeps them until `deinit(net)`, so call it.

Flash offsets (`load(0x300000)`): on a PC the SPI flash is a file: `set_flash_image(path)` or (CPython) the
environment variable OPENKPU_FLASH_IMAGE, naming a raw `.bin` dump from address 0 or (CPython) a `.kfpkg`. On a board
whose MicroPython has `Maix.utils.flash_read` (openkpu's K210 firmware) the on-board SPI flash is read unless
`set_flash_image` named a file. The model's size is read from its header (kmodel v3 / v4 / v5).
"""
import _kpu
import gc
import struct
import sys

try:
    import os
except ImportError:  # older MicroPython ports; none at all on a port without a filesystem (openkpu's K210)
    try:
        import uos as os
    except ImportError:
        os = None

try:
    import weakref as _weakref
except ImportError:
    _weakref = None

_MICROPYTHON = sys.implementation.name == "micropython"

MAX_MODELS = 5
KPU_RAM_ROWS = 32768
KPU_ROW_BYTES = 64
KPU_RAM_SIZE = KPU_RAM_ROWS * KPU_ROW_BYTES  # 2 MiB
BOARD_SRAM_SIZE = 6 * 1024 * 1024

ERR_PARAM = 2001
ERR_KMODEL_VERSION = 2002
ERR_KMODEL_FORMAT = 2003
ERR_READ_FILE = 2005
ERR_NO_MEM = 2006
ERR_MODELS_FULL = 2009
ERR_IDX_OUTRANGE = 2011
ERR_SIZE_NOTMATCH = 2012

_KMDL = 0x4B4D444C  # 'KMDL' read as a little-endian u32 (bytes "LDMK")
_MAX_FLASH = 16 * 1024 * 1024  # the largest K210 board flash
_V5_MAX_MODULES = 16  # the core's limit (c_src/kmodel/kmodel_v5.h); nncase's K210 files have 1 or 2

_flash_path = None
_flash_reader = None

# Loaded nets, for the 5-model limit and memtest(). Weak references on CPython so that dropping a net frees it.
if _weakref is not None:
    _nets = _weakref.WeakSet()
else:
    _nets = []


def _text(what, code, message):
    """The error text, worded by the core as the bindings word theirs: "[MAIXPY]kpu: <what> error:<code>, <name>:
    <message>" (what None: "[MAIXPY]kpu: error:<code>, ...")."""
    return _kpu.error_text(what, code, message)


def _load_error(code, message):
    return ValueError(_text("load", code, message))


def _size_error(message):
    return ValueError(_text("check img format err!", ERR_SIZE_NOTMATCH, message))


def _param_error(what, message):
    return ValueError(_text(what, ERR_PARAM, message))


# ---------------------------------------------------------------------------------------------------------------
# Flash images


class _RawFlash(object):
    """A raw flash dump from address 0 (the MicroPython-side reader; CPython uses openkpu.flash)."""

    def __init__(self, path):
        self.path = path
        try:
            f = open(path, "rb")
        except OSError:
            # worded as openkpu.flash words it on CPython (MicroPython's OSError str is only "[Errno 2] ENOENT")
            raise OSError("flash image not found: %s" % path)
        try:
            f.seek(0, 2)
            self._size = f.tell()
        finally:
            f.close()

    def size(self):
        return self._size

    def read(self, address, size):
        out = b""
        if address < self._size:
            f = open(self.path, "rb")
            try:
                f.seek(address)
                out = f.read(size)
            finally:
                f.close()
        if len(out) < size:
            out = out + b"\xff" * (size - len(out))
        return out


class _BoardFlash(object):
    """The board's own SPI flash, through Maix.utils.flash_read (MicroPython on a K210 board)."""

    def __init__(self, flash_read):
        self._flash_read = flash_read
        try:
            import _board
            self._size = _board.flash_size()
        except ImportError:
            self._size = _MAX_FLASH

    def size(self):
        return self._size

    def read(self, address, size):
        n = max(0, min(size, self._size - address))
        out = self._flash_read(address, n) if n else b""
        if n < size:
            out = out + b"\xff" * (size - n)
        return out


def _board_flash_read():
    """Maix.utils.flash_read when MicroPython runs on a board that has it, else None."""
    if not _MICROPYTHON:
        return None
    try:
        import Maix
    except ImportError:
        return None
    return getattr(getattr(Maix, "utils", None), "flash_read", None)


def _flash_name():
    """What the flash being read is, for messages."""
    if _flash_path is None and isinstance(_flash_reader, _BoardFlash):
        return "SPI flash"
    return "flash image %s" % _flash_path


def set_flash_image(path):
    """Use `path` (a raw .bin flash dump from address 0, or on CPython a .kfpkg) for load(offset). None: unset."""
    global _flash_path, _flash_reader
    _flash_path = path
    _flash_reader = None
    if path is not None:
        _flash()  # open it now so a wrong path fails here, not at load()
    return True


def _flash():
    global _flash_path, _flash_reader
    if _flash_reader is not None:
        return _flash_reader
    path = _flash_path
    if path is None and not _MICROPYTHON:
        environ = getattr(os, "environ", None)
        if environ is not None:
            path = environ.get("OPENKPU_FLASH_IMAGE")
    if not path:
        flash_read = _board_flash_read()
        if flash_read is not None:
            _flash_reader = _BoardFlash(flash_read)
            return _flash_reader
        raise _load_error(ERR_READ_FILE, "no flash image to read the model from: on a PC call "
                          "KPU.set_flash_image(path) or set OPENKPU_FLASH_IMAGE to a raw .bin flash dump or a .kfpkg, "
                          "or load the .kmodel file by its path")
    try:
        if _MICROPYTHON:
            reader = _RawFlash(path)
        else:
            from openkpu import flash as _flashmod
            reader = _flashmod.open_image(path)
    except (OSError, ValueError) as e:
        raise _load_error(ERR_READ_FILE, "cannot open flash image %s: %s" % (path, e))
    _flash_path = path
    _flash_reader = reader
    return reader


def _u32s(data, count):
    return struct.unpack("<%dI" % count, data)


def _sum_bodies(table, count):
    words = _u32s(table, 2 * count)
    total = 0
    i = 1
    while i < 2 * count:
        total += words[i]
        i += 2
    return total


def _model_size(reader, offset):
    """The size of the kmodel at `offset`, from its header; None when no v3/v4/v5 header is there."""
    w0, w1 = _u32s(reader.read(offset, 8), 2)
    if w0 == 3:
        h = _u32s(reader.read(offset, 28), 7)
        layers, outputs = h[3], h[6]
        if layers > 0xFFFF or outputs > 0xFFFF:
            raise _load_error(ERR_KMODEL_FORMAT, "kmodel v3 header at flash 0x%x declares %d layers and %d outputs: "
                              "not a model" % (offset, layers, outputs))
        pos = 28 + 8 * outputs
        return pos + 8 * layers + _sum_bodies(reader.read(offset + pos, 8 * layers), layers)
    if w0 == _KMDL and w1 == 4:
        h = _u32s(reader.read(offset, 40), 10)
        constants, nodes, inputs, outputs = h[4], h[6], h[7], h[8]
        if nodes > 0xFFFF or inputs > 0xFFFF or outputs > 0xFFFF or constants > _MAX_FLASH:
            raise _load_error(ERR_KMODEL_FORMAT, "kmodel v4 header at flash 0x%x declares %d nodes, %d inputs, "
                              "%d outputs, %d constant bytes: not a model" % (offset, nodes, inputs, outputs,
                                                                              constants))
        pos = 40 + 32 * inputs + 16 * outputs + constants
        return pos + 8 * nodes + _sum_bodies(reader.read(offset + pos, 8 * nodes), nodes)
    if w0 == _KMDL and w1 == 5:
        return _v5_size(reader, offset)
    return None


def _v5_size(reader, offset):
    """kmodel v5: the 32-byte header, then its modules back to back, each sized by its own header (u32 at 24);
    nothing follows the last one (docs/kmodel-v5.md 2.1). A pre-release file (header_size != 32) or a module
    running past the flash gets the bytes up to there: the core's message then says what is wrong."""
    h = _u32s(reader.read(offset, 32), 8)
    if h[2] != 32:
        return 64
    count = h[5]
    if count > _V5_MAX_MODULES:
        raise _load_error(ERR_KMODEL_FORMAT, "kmodel v5 header at flash 0x%x declares %d modules (at most %d): not "
                          "a model" % (offset, count, _V5_MAX_MODULES))
    end = reader.size() - offset
    pos = 32
    i = 0
    while i < count:
        if pos + 48 > end:
            return pos + 48
        size = _u32s(reader.read(offset + pos + 24, 4), 1)[0]
        if size < 48 or size > _MAX_FLASH:
            return pos + 48  # the core names the bad module size
        pos += size
        if pos > _MAX_FLASH:
            break
        i += 1
    return pos


def _read_flash(offset, swapped=False):
    """The model bytes at flash `offset`. swapped: the model was word-swapped for load_flash (read it back swapped)."""
    reader = _flash()
    if swapped:
        reader = _SwappedFlash(reader)
    end = reader.size()
    if offset >= end:
        raise _load_error(ERR_READ_FILE, "flash offset 0x%x is past the end of the %s (0x%x bytes)"
                          % (offset, _flash_name(), end))
    size = _model_size(reader, offset)
    if size is None:
        if swapped:
            raise _not_swapped_error(offset)
        # Not a kmodel: hand the core the first bytes so it names the format (v5, encrypted, erased flash, ...).
        size = 64
    if size > _MAX_FLASH:
        raise _load_error(ERR_KMODEL_FORMAT, "the header at flash 0x%x declares a %d-byte model, more than a "
                          "K210 flash holds" % (offset, size))
    if offset + size > end:
        size = end - offset  # the core accepts a last body whose alignment padding was never written
    try:
        return reader.read(offset, size)
    except MemoryError:
        raise _no_memory_error(size, "the model at %s 0x%x" % (_flash_name(), offset))


def _no_memory_error(size, what):
    """MaixPy's memory error with the figures: the model is one block of the heap (MicroPython's GC heap on a
    board, which it does not compact)."""
    gc.collect()
    free = gc.mem_free() if hasattr(gc, "mem_free") else -1
    return _load_error(ERR_NO_MEM, "%s is %d bytes and needs them in one block; the heap has %d bytes free in all "
                       "(fragmented or too small): kpu.deinit() models no longer needed, load the largest model "
                       "first (or right after a reset), or build the firmware with a larger GC_HEAP_KB"
                       % (what, size, free))


# ---------------------------------------------------------------------------------------------------------------
# kpu_net


class kpu_net(object):
    """A loaded model (what load() returns)."""

    def __init__(self, model, data, addr, path):
        self._model = model
        self._data = data
        self._size = len(data)
        self._addr = addr
        self._path = path
        self._layers = 0
        self._yolo = None  # (threshold, nms, anchor_num, anchors) from init_yolo2
        self._out_shapes = {}  # output index -> (w, h, ch) from set_outputs
        self._version = model.version()
        self._nlayers = len(model.layers())

    def model_addr(self):
        """Flash offset the model was loaded from; -1 when loaded from a file."""
        return self._addr

    def model_size(self):
        return self._size

    def model_path(self):
        """File path the model was loaded from; None when loaded from flash."""
        return self._path

    def net_arg(self):
        """The native model handle (_kpu.Model)."""
        return self._model

    def memory(self):
        return memory(self)

    def _live(self):
        if self._model.freed():
            raise ValueError("[MAIXPY]kpu: model was freed (deinit): load it again")
        return self._model

    def _free(self):
        if self._model is not None:
            self._model.free()
        self._data = None
        self._yolo = None  # MaixPy freed the yolo arguments here twice (board freeze); drop them once

    def __del__(self):
        try:
            self._free()
        except Exception:
            pass

    def __repr__(self):
        if self._model.freed():
            args = "freed"
        else:
            args = "kmodel v%d, %d layers" % (self._version, self._nlayers)
        return '{"model_addr": %d, "model_size": %d, "model_path": "%s", "net_args": "%s"}' % (
            self._addr, self._size, self._path, args)

    __str__ = __repr__


def _live_nets():
    return [n for n in _nets if not n._model.freed()]


def _check_slots():
    live = _live_nets()
    if len(live) >= MAX_MODELS:
        gc.collect()  # nets only reachable from reference cycles
        live = _live_nets()
    if len(live) >= MAX_MODELS:
        raise _load_error(ERR_MODELS_FULL, "%d models are loaded already, the most MaixPy allows at once: call "
                          "kpu.deinit(net) on one you no longer need (loaded: %s)"
                          % (len(live), ", ".join([_net_name(n) for n in live])))


def _net_name(net):
    if net._path is not None:
        return str(net._path)
    return "flash 0x%x" % net._addr


def _read_file(path):
    try:
        f = open(path, "rb")
    except OSError as e:
        raise _load_error(ERR_READ_FILE, "cannot open model file '%s': %s" % (path, e))
    try:
        return f.read()
    except MemoryError:
        raise _no_memory_error(_file_size(path), "the model file '%s'" % path)
    finally:
        f.close()


def _file_size(path):
    try:
        return os.stat(path)[6]
    except (OSError, AttributeError, NameError):
        return -1


def load(path_or_offset, act_round=None, nncase=None, threads=0):
    """load(path) or load(flash_offset) -> kpu_net.

    act_round (openkpu's, not MaixPy's): how the emulator rounds the KPU activation, as _kpu.Model takes it:
    None / "half_even" (default, the rule taken for the chip), "half_up", "sdk_carry", or "nncase1" to reproduce
    nncase 1.x's Simulator (its reference outputs of kmodel v5 models with negative activation slopes, e.g. swish
    or YOLOX). A board build runs the layers on the chip's KPU, which does its own rounding: the option is accepted
    there and has no effect.
    nncase: for a kmodel v5, the nncase 1.x release that compiled it ("1.9.0", "1.4.0", ...) when its code decodes
    under several (None: detected from the file).
    threads (openkpu): the emulator's worker threads for a forward pass on a PC (0 = the processors available; the
    same outputs for any count); a board runs one."""
    arg = path_or_offset
    if not _MICROPYTHON and not isinstance(arg, (str, int)) and hasattr(arg, "__fspath__"):
        arg = arg.__fspath__()
    if isinstance(arg, bool) or not isinstance(arg, (str, int)):
        raise TypeError("kpu.load() takes a file path (str) or a flash offset (int > 0), not %s"
                        % type(path_or_offset).__name__)
    if isinstance(arg, int) and arg <= 0:
        raise _load_error(ERR_PARAM, "flash offset must be > 0, got %d" % arg)
    _check_slots()
    if isinstance(arg, str):
        data = _read_file(arg)
        addr, path, where = -1, arg, None
    else:
        data = _read_flash(arg)
        addr, path, where = arg, None, "model read from %s at 0x%x" % (_flash_name(), arg)
    return _open_net(data, addr, path, where, act_round, nncase, threads)


_COMPILE_HINT = ("compile it to a kmodel first with nncase: ncc 0.1.0-rc5 gives kmodel v3 and nncase 0.2.0-beta4 "
                 "kmodel v4 (both run here and on MaixPy); nncase 1.x gives kmodel v5")


def _what_it_is(data, path, flash):
    """What the bytes are when they are not a kmodel v3/v4 the core loads: a word-swapped kmodel, another
    framework's model file, erased flash; None when the core's own message says it best."""
    head = bytes(data[:64])
    if head[:4] == b"\x00\x00\x00\x03" or head[:4] == b"KMDL":
        return ("a kmodel word-swapped for kpu.load_flash (MaixPy's model_le2be.py, openkpu swap): use "
                "kpu.load_flash(address, is_dual_buf, batch_size, spi_speed) for it in flash, or turn it back with "
                "`openkpu swap --unswap IN.kmodel OUT.kmodel` for kpu.load")
    if len(head) >= 16 and head == b"\xff" * len(head):
        if flash:
            return "nothing is flashed there (the bytes are erased flash, all 0xFF): flash the model at this offset"
        return "the file holds only 0xFF bytes (an erased flash dump, not a model)"
    name = (path or "").lower()
    if head[4:8] == b"TFL3" or name.endswith(".tflite"):
        kind = "a TensorFlow Lite model (.tflite)"
    elif head[:8] == b"\x89HDF\r\n\x1a\n" or name.endswith(".h5"):
        kind = "a Keras/HDF5 model (.h5)"
    elif name.endswith(".onnx"):
        kind = "an ONNX model (.onnx)"
    elif name.endswith(".pb"):
        kind = "a TensorFlow graph (.pb)"
    else:
        return None
    return "this is %s, not a kmodel: %s" % (kind, _COMPILE_HINT)


def _open_net(data, addr, path, where, act_round=None, nncase=None, threads=0):
    """Load `data` into the core and count the net against the model limit. where: said after a load error."""
    try:
        options = {} if act_round is None else {"act_round": act_round}  # (Model takes no None for it)
        model = _kpu.Model(data, nncase=nncase, threads=threads, **options)
    except ValueError as e:
        text = str(e)
        if ("error:%d," % ERR_KMODEL_VERSION) in text:
            what = _what_it_is(data, path, addr > 0)
            if what is not None:
                text = _text("load", ERR_KMODEL_VERSION, "%s (first bytes %s)"
                             % (what, " ".join("%02X" % b for b in bytes(data[:4]))))
        if where is not None:
            text = "%s (%s)" % (text, where)
        raise ValueError(text)
    net = kpu_net(model, data, addr, path)
    if _weakref is not None:
        _nets.add(net)
    else:
        _nets.append(net)
    return net


def deinit(net):
    """Free the model now. Safe to call twice."""
    _check_net(net)
    net._free()
    if _weakref is None and net in _nets:
        _nets.remove(net)
    return True


def _check_net(net):
    if not isinstance(net, kpu_net):
        raise TypeError("expected a kpu_net (from kpu.load()), not %s" % type(net).__name__)


# ---------------------------------------------------------------------------------------------------------------
# Running


def set_layers(net, n):
    """Run only layers 0..n-1 on the next forward (n <= 0: all). Output 0 then is layer n-1's output."""
    _check_net(net)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError("set_layers() layer count must be an int, not %s" % type(n).__name__)
    m = net._live()
    count = len(m.layers())
    if n > count:
        raise _param_error("set_layers", "the model has %d layers, asked for %d" % (count, n))
    if 0 < n < count:
        m.reserve(n)  # the copy of layer n-1's output is taken now, so forward cannot fail for lack of memory
    net._layers = n if n > 0 else 0
    return True


def _describe_input(inp):
    if inp.typecode == "f":
        return "%d float32 values (%d bytes)" % (inp.bytes // 4, inp.bytes)
    return "%dx%dx%d (w x h x ch) planar u8 image = %d bytes" % (inp.w, inp.h, inp.c * inp.n, inp.bytes)


def _nbytes(obj):
    try:
        return memoryview(obj).nbytes
    except (AttributeError, TypeError):
        return len(obj)


def _input_bytes(obj, inp):
    tc, c, h, w, nbytes = inp.typecode, inp.c * inp.n, inp.h, inp.w, inp.bytes
    if hasattr(obj, "ai_data"):
        iw, ih, ich, data = obj.ai_data()
        if tc != "B" or iw != w or ih != h or ich != c:
            raise _size_error("the model input is %s, the image is %dx%dx%d (w x h x ch): resize it (and "
                              "to_grayscale() for 1 channel) to match" % (_describe_input(inp), iw, ih, ich))
        return data
    if isinstance(obj, (list, tuple)):
        if tc == "f":
            count = nbytes // 4
            if len(obj) != count:
                raise _size_error("the model input is %s, got a %s of %d values"
                                  % (_describe_input(inp), type(obj).__name__, len(obj)))
            vals = []
            for v in obj:
                vals.append(float(v))
            return struct.pack("<%df" % count, *vals)
        if len(obj) != nbytes:
            raise _size_error("the model input is %s, got a %s of %d values"
                              % (_describe_input(inp), type(obj).__name__, len(obj)))
        return bytes(bytearray(obj))
    if isinstance(obj, str):
        raise TypeError("forward() takes an image, a bytes-like input or a list of floats, not str")
    if getattr(obj, "shape", None) is not None and getattr(obj, "dtype", None) is not None:
        return _array_bytes(obj, inp)
    try:
        size = _nbytes(obj)
    except TypeError:
        raise TypeError("forward() takes an image (with the AI buffer), a bytes-like input of the model's input "
                        "size, or a list of floats for a float input; not %s" % type(obj).__name__)
    if size != nbytes:
        raise _size_error("the model input is %s, got %d bytes" % (_describe_input(inp), size))
    return obj


def _array_bytes(arr, inp):
    """A NumPy-style array (CPython): H x W x C as Pillow and OpenCV give images is transposed to the planar C x H x W
    the KPU reads (never read as planar by accident); C x H x W and H x W (one channel) are taken as they are; the
    element type must be the input's (uint8 for an image input, float32 for a float one)."""
    tc, ch, h, w, nbytes = inp.typecode, inp.c * inp.n, inp.h, inp.w, inp.bytes
    shape = tuple(arr.shape)
    if len(shape) == 4 and shape[0] == 1:
        arr = arr[0]
        shape = shape[1:]
    want = "uint8" if tc == "B" else "float32"
    if str(arr.dtype) != want:
        raise _size_error("the model input is %s, the array's elements are %s: convert it, e.g. arr.astype(np.%s)"
                          % (_describe_input(inp), arr.dtype, want))
    if tc == "f":
        if arr.size * 4 != nbytes:
            raise _size_error("the model input is %s, got an array of %d values" % (_describe_input(inp), arr.size))
        return arr.tobytes()
    if shape == (h, w, ch) and shape != (ch, h, w):
        return arr.transpose(2, 0, 1).tobytes()  # HWC (Pillow / OpenCV) -> planar CHW
    if shape == (ch, h, w) or (ch == 1 and shape == (h, w)) or (len(shape) == 1 and shape[0] == nbytes):
        return arr.tobytes()  # planar already (or flat bytes, as a bytes object would be)
    raise _size_error("the model input is %s, the array is %s: give it as H x W x C (%d, %d, %d) or planar "
                      "C x H x W (%d, %d, %d)" % (_describe_input(inp), "x".join(str(d) for d in shape), h, w, ch,
                                                   ch, h, w))


def forward(net, img_or_data, out_index=0):
    """Run the model (or its first n layers after set_layers) on an image / bytes / float list; fmap of out_index."""
    _check_net(net)
    if isinstance(out_index, bool) or not isinstance(out_index, int):
        raise TypeError("forward() output index must be an int, not %s" % type(out_index).__name__)
    m = net._live()
    if not 0 <= out_index < m.output_count():
        # checked before running (and before the index reaches C, where 2**40 would overflow), as get_output says it
        raise OSError(ERR_IDX_OUTRANGE, _text("forward", ERR_IDX_OUTRANGE, "output index %d out of range: the model "
                      "has %d output(s) (the third argument of forward is an output index; to run only the first n "
                      "layers call kpu.set_layers(task, n) before forward)" % (out_index, m.output_count())))
    _set_input(m, img_or_data)
    m.run(net._layers)
    return get_output(net, out_index)


def _set_input(m, img_or_data):
    inputs = m.inputs()
    if not inputs:
        raise OSError(ERR_KMODEL_FORMAT, "[MAIXPY]kpu: the model declares no input")
    m.set_input(0, _input_bytes(img_or_data, inputs[0]))


def layer_times(net, img_or_data):
    """forward(net, img) timed layer by layer (not in MaixPy): [(layer index, type name, microseconds), ...], one per
    layer. On a board these are the K210's own times (the firmware's tick clock, microsecond steps); on a PC the
    emulator's. Layers run as one step with the layer before them (the emulator's pairs and side chains on 2+ threads)
    read 0, their time counted in the step's first layer, as do layers past set_layers. get_output then gives this
    run's outputs."""
    _check_net(net)
    m = net._live()
    _set_input(m, img_or_data)
    ns = m.run_timed(net._layers)
    return [(i, layer.type_name, t / 1000.0) for i, (layer, t) in enumerate(zip(m.layers(), ns))]


def get_output(net, idx):
    """The fmap of output idx of the last run (a snapshot copy), without running."""
    _check_net(net)
    if isinstance(idx, bool) or not isinstance(idx, int):
        raise TypeError("get_output() index must be an int, not %s" % type(idx).__name__)
    out = net._live().output(idx)
    n, c, h, w = out.n, out.c, out.h, out.w
    shape = net._out_shapes.get(idx)
    if shape is not None:
        w, h, c, n = shape[0], shape[1], shape[2], 1
    return kpu_fmap(out.data, out.typecode, n, c, h, w, out.layer)


# ---------------------------------------------------------------------------------------------------------------
# Feature maps


class kpu_fmap(object):
    """A feature map: a snapshot copy of one model output (see the module docstring)."""

    def __init__(self, data, typecode, n, c, h, w, layer):
        self._data = data
        self._tc = typecode
        self._layer = layer
        self._vals = None
        ch = c * n
        if typecode == "f" and h == 1 and w == 1:
            w, ch = ch, 1  # a flat float vector: (count, 1, 1) as MaixPy shapes it
        self._w, self._h, self._ch = w, h, ch

    def _values(self):
        if self._data is None:
            raise ValueError("[MAIXPY]kpu: fmap was freed (fmap_free)")
        if self._vals is None:
            if self._tc == "f":
                self._vals = struct.unpack("<%df" % (len(self._data) // 4), self._data)
            else:
                self._vals = self._data
        return self._vals

    def size(self):
        """Size in bytes."""
        return 0 if self._data is None else len(self._data)

    def index(self):
        """Index of the layer that produced it."""
        return self._layer

    def w(self):
        return self._w

    def h(self):
        return self._h

    def ch(self):
        return self._ch

    def typecode(self):
        """'B' (raw u8 KPU output) or 'f' (float32)."""
        return self._tc

    def data(self):
        """The raw bytes (u8 planar CHW, or float32 little-endian)."""
        if self._data is None:
            raise ValueError("[MAIXPY]kpu: fmap was freed (fmap_free)")
        return self._data

    def __bytes__(self):
        return bytes(self.data())

    def __buffer__(self, flags):  # CPython >= 3.12: memoryview(fmap)
        mv = memoryview(self.data())
        if self._tc == "f":
            mv = mv.cast("f")
        return mv

    def __len__(self):
        return len(self._values())

    def __getitem__(self, key):
        vals = self._values()
        if isinstance(key, int):
            return vals[key]
        step = getattr(key, "step", None)
        if step is not None and step != 1:
            raise NotImplementedError("fmap slices support step 1 only")
        return tuple(vals[key])

    def __iter__(self):
        return iter(self._values())

    def __repr__(self):
        return '{"size": %d, "index": %d, "w": %d, "h": %d, "ch": %d, "typecode": "%s"}' % (
            self.size(), self._layer, self._w, self._h, self._ch, self._tc)

    __str__ = __repr__


def _image_module():
    try:
        import image
        return image
    except ImportError:
        pass
    try:
        from openkpu.board import image
        return image
    except ImportError:
        raise ImportError("kpu.fmap() needs an `image` module (on a PC: openkpu.board.image, which needs Pillow)")


def fmap(fm, ch):
    """Channel ch of a u8 feature map as a grayscale image (w x h)."""
    if not isinstance(fm, kpu_fmap):
        raise TypeError("fmap() takes an fmap (from kpu.forward / get_output), not %s" % type(fm).__name__)
    if isinstance(ch, bool) or not isinstance(ch, int):
        raise TypeError("fmap() channel must be an int, not %s" % type(ch).__name__)
    if fm.typecode() != "B":
        raise _param_error("fmap", "channel images need a u8 ('B') feature map; this one is float32 ('f', %d values): "
                           "read it with fmap[:]" % len(fm))
    if ch < 0 or ch >= fm.ch():
        raise ValueError(_text("fmap", ERR_IDX_OUTRANGE, "channel %d out of range, the map has %d channels (%dx%d)"
                               % (ch, fm.ch(), fm.w(), fm.h())))
    plane = fm.w() * fm.h()
    data = fm.data()[ch * plane:(ch + 1) * plane]
    image = _image_module()
    return image.Image(width=fm.w(), height=fm.h(), format=image.GRAYSCALE, data=data)


def fmap_free(fm):
    """Release an fmap's data (its memory goes back at once; the object is unusable afterwards)."""
    if not isinstance(fm, kpu_fmap):
        raise TypeError("fmap_free() takes an fmap, not %s" % type(fm).__name__)
    fm._data = None
    fm._vals = None
    return None


# ---------------------------------------------------------------------------------------------------------------
# Network information and memory


class kpu_layer(object):
    """One netinfo() item, over the binding's LayerInfo record (read by field name)."""

    def __init__(self, t):
        self._t = t

    def index(self):
        return self._t.index

    def type(self):
        """Layer type id (v3), opcode (v4), or (v5) the stackvm tensor-function id in the numbering of the nncase
        release that wrote the file, or the k210 instruction's opcode; type_name() is its name and tells them apart."""
        return self._t.type

    def type_name(self):
        return self._t.type_name

    def is_kpu(self):
        return bool(self._t.is_kpu)

    def wi(self):
        return self._t.wi

    def hi(self):
        return self._t.hi

    def chi(self):
        return self._t.chi

    def wo(self):
        return self._t.wo

    def ho(self):
        return self._t.ho

    def cho(self):
        return self._t.cho

    def dw(self):
        return self._t.depthwise

    def kernel_type(self):
        """0 = 1x1, 1 = 3x3."""
        return self._t.kernel_type

    def pool_type(self):
        return self._t.pool_type

    def para_size(self):
        return self._t.para_size

    def macs(self):
        """Multiply-accumulates on the KPU (0 for CPU layers)."""
        return self._t.macs

    def body_offset(self):
        return self._t.body_offset

    def body_size(self):
        return self._t.body_size

    def output_shape(self):
        """(typecode, n, c, h, w) of what the layer writes."""
        t = self._t
        return (t.out_typecode, t.out_n, t.out_c, t.out_h, t.out_w)

    def __repr__(self):
        t = self._t
        return ('{"index": %d, "type": %s, "wi": %d, "hi": %d, "wo": %d, "ho": %d, "chi": %d, "cho": %d, '
                '"dw": %d, "kernel_type": %d, "pool_type": %d, "para_size": %d}'
                % (t.index, t.type_name, t.wi, t.hi, t.wo, t.ho, t.chi, t.cho, t.depthwise, t.kernel_type,
                   t.pool_type, t.para_size))

    __str__ = __repr__


def netinfo(net):
    """One kpu_layer per layer."""
    _check_net(net)
    return [kpu_layer(t) for t in net._live().layers()]


# ---------------------------------------------------------------------------------------------------------------
# The board's memory budget: one computation for memtest(), memory() and `openkpu fit` (python/openkpu/model_tools.py)

DEFAULT_GC_HEAP = 512 * 1024  # MaixPy's default Maix.utils.gc_heap_size() (0x80000)
# What the firmware keeps of the 6 MiB besides the GC heap, so that with the default GC heap the room left for models
# is what MaixPy's docs give (docs/maixpy-kpu-api.md section 6): about 2 MiB with the full firmware, about 4 MiB with
# the minimum one, about 5 MiB with the minimum one and no camera/LCD buffers.
FIRMWARE_PRESETS = {
    "full": BOARD_SRAM_SIZE - DEFAULT_GC_HEAP - 2 * 1024 * 1024,
    "minimum": BOARD_SRAM_SIZE - DEFAULT_GC_HEAP - 4 * 1024 * 1024,
    "minimum-no-camera": BOARD_SRAM_SIZE - DEFAULT_GC_HEAP - 5 * 1024 * 1024,
}
DEFAULT_FIRMWARE = "full"  # what most boards run; "fits" then holds on the minimum firmware too


def budget(firmware=DEFAULT_FIRMWARE, firmware_bytes=None, gc_heap=DEFAULT_GC_HEAP):
    """SRAM left for models = 6 MiB - firmware - GC heap, as a dict. firmware: a FIRMWARE_PRESETS name, unless
    firmware_bytes gives what the firmware keeps. ValueError when nothing is left."""
    if firmware_bytes is None:
        if firmware not in FIRMWARE_PRESETS:
            raise ValueError("unknown firmware %r: one of %s" % (firmware, ", ".join(sorted(FIRMWARE_PRESETS))))
        firmware_bytes = FIRMWARE_PRESETS[firmware]
        source = "preset %r" % firmware
    else:
        source = "--firmware-bytes"
    for_models = BOARD_SRAM_SIZE - firmware_bytes - gc_heap
    if for_models <= 0:
        raise ValueError("firmware %d B + GC heap %d B leave nothing of the K210's %d B SRAM for models"
                         % (firmware_bytes, gc_heap, BOARD_SRAM_SIZE))
    return {"sram": BOARD_SRAM_SIZE, "firmware_bytes": firmware_bytes, "firmware_source": source,
            "gc_heap": gc_heap, "for_models": for_models, "kpu_rows": KPU_RAM_ROWS, "max_models": MAX_MODELS}


def fits(sram_totals, b):
    """The verdict for models loaded together (their sram_total figures): within the budget's room for models and
    MaixPy's model count."""
    return len(sram_totals) <= b["max_models"] and sum(sram_totals) <= b["for_models"]


def rows_text(lo, hi):
    """KPU RAM rows [lo, hi) in the one notation inspect, fit and memtest print: first..last, both included."""
    if hi <= lo:
        return "no rows"
    return "rows %d..%d" % (lo, hi - 1)


def memory(net):
    """What the model costs on a K210: the core's figures plus the board budgets (budget(): MaixPy's full firmware
    and default GC heap, as `openkpu fit` assumes by default) and whether it fits."""
    _check_net(net)
    info = net._live().memory()
    b = budget()
    info["sram_budget"] = b["for_models"]
    info["kpu_rows_budget"] = KPU_RAM_ROWS
    info["kpu_bytes_used"] = info["kpu_rows_used"] * KPU_ROW_BYTES
    info["fits_sram"] = fits([info["sram_total"]], b)
    info["fits_kpu_ram"] = info["kpu_rows_used"] <= KPU_RAM_ROWS and info["kpu_row_hi"] <= KPU_RAM_ROWS
    info["fits"] = info["fits_sram"] and info["fits_kpu_ram"]
    return info


def memtest():
    """Print the free heap and, per loaded model, its K210 memory cost against the board budget (the one `openkpu
    fit` uses by default)."""
    gc.collect()
    if _MICROPYTHON:
        print("[MAIXPY]: gc heap free: %d B, used: %d B" % (gc.mem_free(), gc.mem_alloc()))
    else:
        print("[MAIXPY]: gc heap: n/a on a PC (CPython manages its own memory)")
    b = budget()
    live = _live_nets()
    totals = []
    for net in live:
        info = memory(net)
        totals.append(info["sram_total"])
        print("[MAIXPY]: model %s: SRAM %d B (model %d + align %d + main_mem %d + context %d) of %d; "
              "KPU RAM %d of %d rows (%d KiB of %d KiB, %s); %s"
              % (_net_name(net), info["sram_total"], info["model_bytes"],
                 info["model_alloc"] - info["model_bytes"], info["main_mem"], info["context_bytes"],
                 b["for_models"], info["kpu_rows_used"], KPU_RAM_ROWS, info["kpu_bytes_used"] // 1024,
                 KPU_RAM_SIZE // 1024, rows_text(info["kpu_row_lo"], info["kpu_row_hi"]),
                 "fits" if info["fits"] else "DOES NOT FIT"))
    total = sum(totals)
    print("[MAIXPY]: system heap: %d model(s) loaded take %d B of the %d B for models, %d B left: %s"
          % (len(live), total, b["for_models"], b["for_models"] - total,
             "fit" if fits(totals, b) else "DO NOT FIT"))
    print("[MAIXPY]: (budget: the K210's %d B SRAM - firmware %d B (MaixPy's full firmware) - GC heap %d B; "
          "`openkpu fit --firmware minimum` for the minimum firmware, about 4 MiB for models)"
          % (BOARD_SRAM_SIZE, b["firmware_bytes"], b["gc_heap"]))
    return None


def set_outputs(net, idx, w, h, ch):
    """Declare the shape of output idx (kmodel v4, as in MaixPy; v5 too): w*h*ch values (float32, or uint8 for a
    u8 output) must fill it exactly.

    Returns True, or False after printing why (MaixPy's behaviour). Optional here: forward() takes the shape from the
    model where it knows it."""
    _check_net(net)
    for v in (idx, w, h, ch):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("set_outputs() takes ints (idx, w, h, ch), not %s" % type(v).__name__)
    m = net._live()
    count = m.output_count()
    if idx < 0 or idx >= count:
        print(_text("set_outputs", ERR_IDX_OUTRANGE, "output index %d out of range, the model has %d output(s)"
                    % (idx, count)))
        return False
    if w <= 0 or h <= 0 or ch <= 0:
        print(_text("set_outputs", ERR_PARAM, "w, h, ch must be > 0, got %d, %d, %d" % (w, h, ch)))
        return False
    nbytes = _output_nbytes(m, idx)
    # float32 outputs (v3/v4 dequantized, v5 float), or the u8 outputs a kmodel v5 can declare
    size, kind = (4, "float32") if m.output_info(idx).typecode == "f" else (1, "uint8")
    if w * h * ch * size != nbytes:
        print(_text("set_outputs", ERR_SIZE_NOTMATCH, "output %d holds %d bytes = %d %s values; "
                    "w*h*ch = %d*%d*%d = %d values does not match" % (idx, nbytes, nbytes // size, kind, w, h, ch,
                                                                      w * h * ch)))
        return False
    net._out_shapes[idx] = (w, h, ch)
    return True


def _output_nbytes(m, idx):
    """Byte size of output idx as the model declares it (the core's output description)."""
    return m.output_info(idx).bytes


# ---------------------------------------------------------------------------------------------------------------
# load_flash: models pre-swapped per 32-bit word (MaixPy-v1_scripts model_le2be.py)


def _swap_words(data):
    out = bytearray(len(data))
    n = len(data) - len(data) % 4
    i = 0
    while i < n:
        out[i] = data[i + 3]
        out[i + 1] = data[i + 2]
        out[i + 2] = data[i + 1]
        out[i + 3] = data[i]
        i += 4
    out[n:] = data[n:]
    return bytes(out)


class _SwappedFlash(object):
    """A view of the flash image that undoes the per-word swap, as the board's 32-bit flash reads do."""

    def __init__(self, reader):
        self._r = reader

    def size(self):
        return self._r.size()

    def read(self, address, size):
        start = address - address % 4
        end = address + size
        end += (4 - end % 4) % 4
        raw = _swap_words(self._r.read(start, end - start))
        return raw[address - start:address - start + size]


def load_flash(model_addr, is_dual_buf, batch_size, spi_speed):
    """Load a word-swapped model from flash (MaixPy's load_flash). On a PC the layers are not streamed: the whole
    model is read from the flash image (set_flash_image) and run as load() would; the arguments are checked as the
    board checks them."""
    for name, v in (("model_addr", model_addr), ("is_dual_buf", is_dual_buf), ("batch_size", batch_size),
                    ("spi_speed", spi_speed)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("load_flash() %s must be an int, not %s" % (name, type(v).__name__))
    if model_addr <= 0:
        raise _load_error(ERR_PARAM, "flash offset must be > 0, got %d" % model_addr)
    if is_dual_buf not in (0, 1):
        raise _load_error(ERR_PARAM, "is_dual_buf must be 0 (one buffer) or 1 (two buffers), got %d" % is_dual_buf)
    if is_dual_buf and batch_size <= 0:
        raise _load_error(ERR_PARAM, "batch_size must be > 0 with two buffers (0x4000-0x10000 advised), got %d"
                          % batch_size)
    if spi_speed <= 0 or spi_speed > 80000000:
        raise _load_error(ERR_PARAM, "spi_speed must be in 1..80000000 Hz, got %d" % spi_speed)
    _check_slots()
    data = _read_flash(model_addr, swapped=True)
    return _open_net(data, model_addr, None,
                     "word-swapped model read from %s at 0x%x" % (_flash_name(), model_addr))


def _not_swapped_error(offset):
    raw = _flash().read(offset, 4)
    hint = ""
    if raw == b"\x03\x00\x00\x00" or raw == b"LDMK":
        hint = ": the bytes there are a NOT word-swapped model; use kpu.load(0x%x) for it" % offset
    return _load_error(2002, "no word-swapped kmodel v3/v4/v5 header at flash 0x%x%s (models for load_flash are "
                       "swapped per 32-bit word, e.g. by MaixPy-v1_scripts' machine_vision/model_le2be.py)"
                       % (offset, hint))


# ---------------------------------------------------------------------------------------------------------------
# YOLOv2


class kpu_yolo2_obj(object):
    """One run_yolo2 detection."""

    def __init__(self, box, index, objnum):
        self._box = box  # the binding's Box record (x, y, w, h, value, classid)
        self._index = index
        self._objnum = objnum

    def rect(self):
        b = self._box
        return (b.x, b.y, b.w, b.h)

    def x(self):
        return self._box.x

    def y(self):
        return self._box.y

    def w(self):
        return self._box.w

    def h(self):
        return self._box.h

    def value(self):
        return self._box.value

    def classid(self):
        return self._box.classid

    def index(self):
        return self._index

    def objnum(self):
        return self._objnum

    def __getitem__(self, i):
        return self._box[i]

    def __repr__(self):
        b = self._box
        return ('{"x":%d, "y":%d, "w":%d, "h":%d, "value":%f, "classid":%d, "index":%d, "objnum":%d}'
                % (b.x, b.y, b.w, b.h, b.value, b.classid, self._index, self._objnum))

    __str__ = __repr__


def init_yolo2(net, threshold, nms_value, anchor_num, anchor):
    """Set the YOLOv2 region-layer parameters for run_yolo2."""
    _check_net(net)
    net._live()
    for name, v in (("threshold", threshold), ("nms_value", nms_value)):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not (0.0 <= v <= 1.0):
            raise _param_error("init_yolo2", "%s must be a number in [0, 1], got %r" % (name, v))
    if isinstance(anchor_num, bool) or not isinstance(anchor_num, int) or anchor_num <= 0:
        raise _param_error("init_yolo2", "anchor_num must be an int > 0, got %r" % (anchor_num,))
    if not isinstance(anchor, (tuple, list)) or len(anchor) != 2 * anchor_num:
        raise _param_error("init_yolo2", "anchor must be a tuple/list of 2*anchor_num = %d numbers (w, h per anchor), "
                           "got %s" % (2 * anchor_num, _describe_seq(anchor)))
    anchors = tuple([float(a) for a in anchor])
    net._yolo = (float(threshold), float(nms_value), anchor_num, anchors)
    return True


def _describe_seq(v):
    if isinstance(v, (tuple, list)):
        return "%d values" % len(v)
    return type(v).__name__


def _grid_shape(net, fm):
    """(w, h, ch) of a YOLO output: set_outputs' shape, the fmap's own 3-D shape, or the shape of the last KPU layer
    that produced the same number of values (the layer a dequantize reads)."""
    count = len(fm)
    if fm.h() > 1 or fm.ch() > 1:
        return fm.w(), fm.h(), fm.ch()
    layers = net._live().layers()
    i = len(layers) - 1
    while i >= 0:
        t = layers[i]
        if t.is_kpu and t.wo * t.ho * t.cho == count:
            return t.wo, t.ho, t.cho
        i -= 1
    raise _param_error("run_yolo2", "cannot tell the grid shape of the %d-value output; declare it with "
                       "kpu.set_outputs(net, 0, w, h, ch)" % count)


def run_yolo2(net, img):
    """forward + YOLOv2 region decode: a list of detections, or None when there is none."""
    _check_net(net)
    net._live()  # a freed model says so before anything else
    if net._yolo is None:
        raise _param_error("run_yolo2", "call kpu.init_yolo2(net, threshold, nms_value, anchor_num, anchors) before "
                           "run_yolo2")
    fm = forward(net, img)
    if fm.typecode() != "f":
        raise _param_error("run_yolo2", "the model's output is u8, a YOLO region layer needs its float (dequantized) "
                           "output")
    w, h, ch = _grid_shape(net, fm)
    inp = net._live().inputs()[0]
    threshold, nms, anchor_num, anchors = net._yolo
    boxes = _kpu.yolo2_decode(fm.data(), w, h, ch, anchors, threshold, nms, inp.w, inp.h)
    if not boxes:
        return None
    count = len(boxes)
    return [kpu_yolo2_obj(boxes[i], i, count) for i in range(count)]


# ---------------------------------------------------------------------------------------------------------------
# Face features


FACE_FEATURES_MAX = 512  # the documented limit of face_encode (docs/maixpy-kpu-api.md section 1)


def face_encode(seq):
    """Quantise a feature vector (at most FACE_FEATURES_MAX = 512 floats) to int8:
    trunc(clamp(v, -0.25, 0.25) * 512), +0.25 -> 127."""
    if isinstance(seq, kpu_fmap):
        seq = seq[:]
    if isinstance(seq, (str, bytes)):
        raise _param_error("face_encode", "the feature must be a list or tuple of numbers (or an fmap), not %s"
                           % type(seq).__name__)
    try:
        count = len(seq)
    except TypeError:
        count = 0  # an iterator: the binding says what it needs
    if count > FACE_FEATURES_MAX:
        raise _param_error("face_encode", "the feature has %d values, at most %d are encoded"
                           % (count, FACE_FEATURES_MAX))
    try:
        return _kpu.face_encode(seq)
    except TypeError as e:
        raise _param_error("face_encode", "the feature must be a sequence of numbers (%s)" % (e,))


def face_compare(a, b):
    """Similarity of two face_encode results, 0..100 (50 * (1 + cosine)); 0.0 when either is all zeros."""
    return _kpu.face_compare(a, b)

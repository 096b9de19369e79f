# SPDX-License-Identifier: Apache-2.0
# Real models loaded from SPI-flash offsets (MaixPy's main path): every output's bytes, the same on a board, the
# virtual board and the PC emulator. Runners prepend, besides WORKDIR / TESTDATA:
#   FLASH_MODELS = [(name, address, "load" | "load_flash"), ...]
#   FLASH_IMAGE = None (the board's own flash) or the path of a raw flash dump (a PC: kpu.set_flash_image)
import gc
import KPU as kpu


class Lcg(object):
    """Deterministic inputs, identical under CPython and MicroPython."""

    def __init__(self, seed):
        self.s = seed

    def byte(self):
        self.s = (self.s * 1103515245 + 12345) & 0x7FFFFFFF
        return self.s >> 23


def model_input(inp, seed):
    """Bytes for a u8 input, floats in [-2, 2) for a float one (kpu.forward takes a list of floats)."""
    rnd = Lcg(seed)
    if inp[0] == "f":
        return [rnd.byte() / 64.0 - 2.0 for _ in range(inp[5] // 4)]
    return bytes(bytearray(rnd.byte() for _ in range(inp[5])))


try:
    FLASH_MODELS
except NameError:  # a runner that knows nothing of this script: nothing to load
    FLASH_MODELS, FLASH_IMAGE = [], None
if not FLASH_MODELS:
    print("SKIP no FLASH_MODELS")
if FLASH_IMAGE is not None:
    kpu.set_flash_image(FLASH_IMAGE)

for name, address, how in FLASH_MODELS:
    gc.collect()
    if how == "load":
        t = kpu.load(address)
    else:
        t = kpu.load_flash(address, 0, 0x4000, 60000000)
    inp = t.net_arg().inputs()[0]
    print(name, "at 0x%x" % address, how, "input", inp, "size", t.model_size())
    fm = kpu.forward(t, model_input(inp, len(name)))
    outputs = t.net_arg().output_count()
    for i in range(outputs):
        fm = kpu.get_output(t, i)
        raw = fm.data()
        print(name, "output", i, fm.typecode(), fm.w(), fm.h(), fm.ch(), len(raw), fnv(raw))
        check(len(raw) > 0, name + " output %d is empty" % i)
    kpu.deinit(t)
    t = None
    fm = None

print("RESULT", "FAIL" if FAILS else "PASS", len(FLASH_MODELS))

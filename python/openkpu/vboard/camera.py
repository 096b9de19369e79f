# SPDX-License-Identifier: Apache-2.0
"""The camera side of the virtual Maix board: the DVP (0x50430000) with its SCCB master, one camera on the SCCB
bus — an OV2640 at 0x60 (Maix Bit/Go, the default), a GC0328 at 0x42 (Maix Dock) or an OV5640 at 0x78
(`openkpu vboard --sensor`) — and the frames it sees (k210-board.md section 9).

Frames come from an image, a folder of images, a video or a webcam, through the same frame sources as
`openkpu run --frames` (openkpu.board.sensor), and are turned into the frame the script asked for the same way:
the frame size and window are read back from the sensor's registers —
- OV2640: the DSP window in sensor pixels of its 800x600 SVGA mode and the output size ZMOW/ZMOH;
- GC0328: the subsample ratio of its 640x480 array (0x59: 1, 1/2, 1/4) gives the frame, the crop window
  (0x50..0x58) the window;
- OV5640: the ISP's output size (0x3808..0x380B) of the whole subsampled array is the frame (no window);
then a picture of exactly the window size is used as it is, any other is scaled to cover the frame and
centre-cropped, the window is cut, then mirror/flip (OV2640 REG04; GC0328 0x17; OV5640 0x3821 mirror and
0x3820 flip, whose bits set are the upright picture as in MaixPy's driver) and, with the DVP's Y format, Pillow's
grayscale. The DVP writes the planes (R, G, B or Y) into the guest's SRAM at r/g/b_addr when the guest sets
dvp_en: the YUV422 -> RGB888 path is modelled as lossless (the picture's own RGB888 bytes), so the KPU gets the
bytes `openkpu run` gives it; the RGB565 path (the OV5640's RGB565 output, DVP format 0) quantises to RGB565 and
expands each channel as the LCD model does ((v * 255 + 15) // 31 ...: the chip's own expansion is not known).

The image-quality registers of MaixPy's tables (exposure, gain, white balance, gamma, lens shading, colour
matrix, denoise, clocks and timing) are accepted and stored but change nothing in the picture: the frames are the
source's pixels, not what a sensor with those settings would see.

Camera timing is not modelled: frame_start is up as soon as the sensor streams (XCLK on, reset released, not
powered down) and a conversion finishes at once. Source frames are consumed by conversions only (skip_frames lets
the sensor stream without converting, and consumes none, like `openkpu run`). When the source runs out the board
stops (BoardStopped: the CLI exits 0 like the runner).

Everything the models do not know stops the board with a message naming it: an SCCB write to a register outside
a sensor's tables below or a value the model does not know (a mode other than the ones MaixPy uses, another
output format), a DVP size that differs from the sensor's output, a DVP input format other than what the sensor
sends, the DVP's RGB565 display output, planes outside SRAM.
"""
import os
import sys

from .errors import BoardError
from .mmio import Device, DeviceFault, Unmodelled

SENSOR_W, SENSOR_H = 800, 600  # the OV2640's SVGA mode


def _ranges(*items):
    """A set of register addresses from single addresses and inclusive (first, last) ranges."""
    out = set()
    for it in items:
        if isinstance(it, tuple):
            out.update(range(it[0], it[1] + 1))
        else:
            out.add(it)
    return out


# OV2640 registers the model understands, (bank, register): name. Bank 0 = DSP, 1 = sensor (0xFF selects).
OV2640_WRITES = {
    (1, 0x12): "COM7", (1, 0x04): "REG04", (1, 0x17): "HSTART", (1, 0x18): "HSTOP", (1, 0x19): "VSTART",
    (1, 0x1A): "VSTOP", (1, 0x32): "REG32",
    (0, 0x05): "R_BYPASS", (0, 0xE0): "RESET", (0, 0xC0): "HSIZE8", (0, 0xC1): "VSIZE8", (0, 0x51): "HSIZE",
    (0, 0x52): "VSIZE", (0, 0x53): "XOFFL", (0, 0x54): "YOFFL", (0, 0x55): "VHYX", (0, 0x5A): "ZMOW",
    (0, 0x5B): "ZMOH", (0, 0x5C): "ZMHH", (0, 0xDA): "IMAGE_MODE", (0, 0xD3): "R_DVP_SP", (0, 0x50): "CTRLI",
    (0, 0x8C): "SIZEL",
}
# image quality, clocks and analog timing (MaixPy's ov2640_default / svga_config): stored, no effect on frames
OV2640_QUALITY = {
    1: _ranges(0x03, (0x06, 0x0E), 0x10, 0x11, (0x13, 0x16), (0x20, 0x28), (0x2C, 0x31), (0x33, 0x3E),
               (0x42, 0x50), (0x5A, 0x63), (0x6C, 0x73), 0x7C),
    0: _ranges(0x2C, 0x2E, 0x33, (0x41, 0x44), 0x4C, 0x76, 0x7C, 0x7D, 0x7F, (0x86, 0x88), (0x90, 0x97),
               (0xA4, 0xA8), (0xB0, 0xBF), (0xC2, 0xC9), 0xD7, 0xD9, 0xDD, 0xE1, 0xE5, 0xF9),
}
OV2640_IDS = {0x0A: 0x26, 0x0B: 0x42, 0x1C: 0x7F, 0x1D: 0xA2}  # PID, VER, MIDH, MIDL (sensor bank)
# the SVGA sensor window of MaixPy's svga_config (sensor bank)
OV2640_SVGA_WINDOW = {0x17: 0x11, 0x18: 0x43, 0x19: 0x00, 0x1A: 0x4B, 0x32: 0x09}


class BoardStopped(BoardError):
    """The run ended at a model's request: the frames ran out (error False), or snapshot() without frames (True)."""

    def __init__(self, message, error=False):
        BoardError.__init__(self, message)
        self.error = error


class Sensor(object):
    """A camera on SCCB: registers as the firmware programs them. Subclasses say what frame they send:
    output() -> "yuv" | "rgb565" | why none; geometry() -> (frame w, h, window x, y, w, h) | why none;
    mirror_flip() -> (hmirror, vflip) of the picture."""
    name = "?"
    address = 0
    reg_bytes = 1  # register address width on SCCB

    def __init__(self):
        self.pointer = None
        self.reset()


class Ov2640(Sensor):
    """The OV2640's registers as the firmware programs them."""
    name = "OV2640"
    address = 0x60

    def reset(self):
        self.regs = {0: {}, 1: {}}
        self.bank = 0

    def write(self, reg, value):
        if reg == 0xFF:
            if value not in (0, 1):
                raise Unmodelled("OV2640 bank select 0x%02x (0 DSP, 1 sensor)" % value)
            self.bank = value
            return
        key = (self.bank, reg)
        if key not in OV2640_WRITES and reg not in OV2640_QUALITY[self.bank]:
            raise Unmodelled("SCCB write of 0x%02x to OV2640 %s register 0x%02x: not in the model's register table"
                             % (value, ("DSP", "sensor")[self.bank], reg))
        if key == (1, 0x12):
            if value & 0x80:
                self.reset()
                return
            if value not in (0x40, 0x02):
                raise Unmodelled("OV2640 COM7 = 0x%02x: only the SVGA mode (0x40) is modelled (and MaixPy's "
                                 "transient 0x02 in its reset table)" % value)
        if key == (0, 0xDA) and value not in (0x00, 0x01):
            raise Unmodelled("OV2640 IMAGE_MODE = 0x%02x: only YUV422 is modelled" % value)
        if key in ((0, 0xC0), (0, 0xC1)):
            want = SENSOR_W // 8 if reg == 0xC0 else SENSOR_H // 8
            if value != want:
                raise Unmodelled("OV2640 %s = %d: the SVGA sensor image is %dx%d (HSIZE8 100, VSIZE8 75)"
                                 % (OV2640_WRITES[key], value, SENSOR_W, SENSOR_H))
        self.regs[self.bank][reg] = value

    def read(self, reg):
        if self.bank == 1 and reg in OV2640_IDS:
            return OV2640_IDS[reg]
        if reg == 0xFF:
            return self.bank
        if reg in self.regs[self.bank]:
            return self.regs[self.bank][reg]
        raise Unmodelled("SCCB read of OV2640 %s register 0x%02x: not modelled" % (("DSP", "sensor")[self.bank], reg))

    # --- what the registers say -----------------------------------------------------------------------------------
    def output(self):
        return "yuv"  # IMAGE_MODE only takes the YUV422 values (write())

    def geometry(self):
        """(frame w, h, window x, y, w, h) in frame pixels, or a reason string."""
        d, s = self.regs[0], self.regs[1]
        need = [r for r in (0x51, 0x52, 0x53, 0x54, 0x55, 0x5A, 0x5B, 0x5C) if r not in d]
        if need:
            return "the OV2640's window/output registers were never written (%s)" % ", ".join(
                "0x%02X" % r for r in need)
        if d.get(0x05, 1) != 0:
            return "the OV2640's DSP is bypassed (R_BYPASS 0x05 != 0): it sends no YUV frames"
        if d.get(0xE0, 0) & 0x04:
            return "the OV2640's DVP interface is held in reset (RESET 0xE0 bit 2)"
        if s.get(0x12) != 0x40:
            return "the OV2640's sensor mode (COM7) is not SVGA (0x40) after its reset"
        bad = [(r, s.get(r)) for r, v in sorted(OV2640_SVGA_WINDOW.items()) if s.get(r) != v]
        if bad:
            return "the OV2640's sensor window is not MaixPy's SVGA one: %s" % ", ".join(
                "0x%02X = %s (want 0x%02X)" % (r, "unset" if v is None else "0x%02X" % v, OV2640_SVGA_WINDOW[r])
                for r, v in bad)
        if d.get(0x50, 0) != 0 or d.get(0x8C, 0) != 0:
            return "OV2640 CTRLI (0x50) / SIZEL (0x8C) are not 0: DSP dividers and odd sizes are not modelled"
        vhyx = d[0x55]
        sw = 4 * (d[0x51] | ((vhyx >> 3) & 1) << 8)
        sh = 4 * (d[0x52] | ((vhyx >> 7) & 1) << 8)
        sx = d[0x53] | (vhyx & 7) << 8
        sy = d[0x54] | ((vhyx >> 4) & 7) << 8
        ow = 4 * (d[0x5A] | (d[0x5C] & 3) << 8)
        oh = 4 * (d[0x5B] | ((d[0x5C] >> 2) & 1) << 8)
        if not sw or not sh or not ow or not oh or sx + sw > SENSOR_W or sy + sh > SENSOR_H:
            return "OV2640 window %dx%d at (%d, %d), output %dx%d: not inside the 800x600 sensor image" % (
                sw, sh, sx, sy, ow, oh)
        fw, fh = int(round(ow * SENSOR_W / float(sw))), int(round(oh * SENSOR_H / float(sh)))
        x, y = int(round(sx * ow / float(sw))), int(round(sy * oh / float(sh)))
        return fw, fh, x, y, ow, oh

    def mirror_flip(self):
        r = self.regs[1].get(0x04, 0)
        return bool(r & 0x80), bool(r & 0x40)


# GC0328: page 0 registers with a modelled meaning; the rest of the page's known registers are image quality.
GC0328_GEOMETRY = {0x09: "ROW_START_H", 0x0A: "ROW_START_L", 0x0B: "COL_START_H", 0x0C: "COL_START_L",
                   0x0D: "WIN_HEIGHT_H", 0x0E: "WIN_HEIGHT_L", 0x0F: "WIN_WIDTH_H", 0x10: "WIN_WIDTH_L",
                   0x17: "MIRROR_FLIP", 0x44: "OUTPUT_FORMAT", 0x50: "CROP_EN", 0x51: "CROP_Y_H", 0x52: "CROP_Y_L",
                   0x53: "CROP_X_H", 0x54: "CROP_X_L", 0x55: "CROP_H_H", 0x56: "CROP_H_L", 0x57: "CROP_W_H",
                   0x58: "CROP_W_L", 0x59: "SUBSAMPLE", 0x5A: "SUBSAMPLE_MODE"}
GC0328_GEOMETRY.update(dict((r, "SUBSAMPLE_COEF") for r in range(0x5B, 0x63)))
# image quality (MaixPy's sensor_default_regs): exposure, analog, black level, block enables, gamma, AWB gains,
# denoise, colour matrix, YCP on page 0; AEC, AWB, lens shading on page 1
GC0328_QUALITY = {
    0: _ranges((0x03, 0x08), 0x16, (0x18, 0x24), (0x26, 0x36), (0x40, 0x43), (0x45, 0x4F), (0x63, 0x79),
               (0x7E, 0x95), (0x98, 0xB6), (0xBF, 0xE5)),
    1: _ranges((0x08, 0x32), (0x4C, 0x62), (0x70, 0x85), (0x9C, 0x9F), (0xA1, 0xCB)),
}
GC0328_GLOBAL = {0xF1: "OUTPUT_EN1", 0xF2: "OUTPUT_EN2", 0xFC: "CLOCK"}  # every page
GC0328_ARRAY = (0, 0, 488, 648)  # the window MaixPy programs: the 640x480 image with its 8-pixel margins


class Gc0328(Sensor):
    """The GC0328 (Maix Dock): 8-bit registers in pages (0xFE), chip id 0x9D at 0xF0."""
    name = "GC0328"
    address = 0x42

    def reset(self):
        self.regs = {0: {}, 1: {}}
        self.glob = {}
        self.page = 0

    def write(self, reg, value):
        if reg == 0xFE:
            if value & 0x80:
                self.reset()
                return
            if value not in (0x00, 0x01):
                raise Unmodelled("GC0328 page select 0xFE = 0x%02x: pages 0 and 1 are modelled" % value)
            self.page = value
            return
        if reg in GC0328_GLOBAL:
            self.glob[reg] = value
            return
        if self.page == 0 and reg in GC0328_GEOMETRY:
            if reg == 0x44 and value != 0x00:
                raise Unmodelled("GC0328 output format 0x44 = 0x%02x: only YCbCr 4:2:2 (0x00, MaixPy's) is "
                                 "modelled" % value)
            if reg == 0x5A and value not in (0x00, 0x02, 0x03):
                raise Unmodelled("GC0328 subsample mode 0x5A = 0x%02x: only MaixPy's 0x00/0x02/0x03 are modelled"
                                 % value)
        elif reg not in GC0328_QUALITY[self.page]:
            raise Unmodelled("SCCB write of 0x%02x to GC0328 page %d register 0x%02x: not in the model's register "
                             "table" % (value, self.page, reg))
        self.regs[self.page][reg] = value

    def read(self, reg):
        if reg == 0xF0:
            return 0x9D
        if reg == 0xFE:
            return self.page
        if reg in GC0328_GLOBAL and reg in self.glob:
            return self.glob[reg]
        if reg in self.regs[self.page]:
            return self.regs[self.page][reg]
        raise Unmodelled("SCCB read of GC0328 page %d register 0x%02x: not modelled" % (self.page, reg))

    def output(self):
        if (self.glob.get(0xF1), self.glob.get(0xF2)) != (0x07, 0x01):
            return "the GC0328's outputs are off (0xF1/0xF2 are not 0x07/0x01 as MaixPy's table leaves them)"
        if self.regs[0].get(0x44) != 0x00:
            return "the GC0328's output format (0x44) was never set to YCbCr 4:2:2"
        return "yuv"

    def geometry(self):
        d = self.regs[0]
        need = [r for r in list(range(0x09, 0x11)) + [0x50, 0x59] if r not in d]
        if need:
            return "the GC0328's window/subsample registers were never written (%s)" % ", ".join(
                "0x%02X" % r for r in need)
        win = ((d[0x09] & 1) << 8 | d[0x0A], (d[0x0B] & 3) << 8 | d[0x0C], (d[0x0D] & 1) << 8 | d[0x0E],
               (d[0x0F] & 3) << 8 | d[0x10])
        if win != GC0328_ARRAY:
            return "GC0328 array window (row, col, height, width) = %s: only MaixPy's %s is modelled" % (
                win, GC0328_ARRAY)
        sub = d[0x59]
        if sub >> 4 != sub & 15 or sub & 15 not in (1, 2, 4):
            return "GC0328 subsample 0x59 = 0x%02x: only MaixPy's 1 (0x11), 1/2 (0x22), 1/4 (0x44) are modelled" % sub
        coef = [r for r in range(0x5B, 0x63) if d.get(r, 0) != 0]
        if coef:
            return "GC0328 subsample coefficients %s are not 0: not modelled" % ", ".join("0x%02X" % r for r in coef)
        n = sub & 15
        fw, fh = 640 // n, 480 // n
        if d[0x50] & 1:
            need = [r for r in range(0x51, 0x59) if r not in d]
            if need:
                return "the GC0328's crop window was never written (%s)" % ", ".join("0x%02X" % r for r in need)
            y, x = (d[0x51] & 1) << 8 | d[0x52], (d[0x53] & 3) << 8 | d[0x54]
            h, w = (d[0x55] & 1) << 8 | d[0x56], (d[0x57] & 3) << 8 | d[0x58]
        else:
            x, y, w, h = 0, 0, fw, fh
        if not w or not h or x + w > fw or y + h > fh:
            return "GC0328 crop %dx%d at (%d, %d): not inside the %dx%d subsampled image" % (w, h, x, y, fw, fh)
        return fw, fh, x, y, w, h

    def mirror_flip(self):
        r = self.regs[0].get(0x17, 0)
        return bool(r & 1), bool(r & 2)


# OV5640 (16-bit registers): registers with a modelled meaning, and the known rest (system, clocks, analog, AEC,
# BLC, AWB, gamma, colour matrix, sharpening, lens correction of MaixPy's default_regs) as image quality.
OV5640_GEOMETRY = {
    0x3008: "SYSTEM_CTROL0", 0x3800: "X_ADDR_ST_H", 0x3801: "X_ADDR_ST_L", 0x3802: "Y_ADDR_ST_H",
    0x3803: "Y_ADDR_ST_L", 0x3804: "X_ADDR_END_H", 0x3805: "X_ADDR_END_L", 0x3806: "Y_ADDR_END_H",
    0x3807: "Y_ADDR_END_L", 0x3808: "X_OUTPUT_SIZE_H", 0x3809: "X_OUTPUT_SIZE_L", 0x380A: "Y_OUTPUT_SIZE_H",
    0x380B: "Y_OUTPUT_SIZE_L", 0x3810: "X_OFFSET_H", 0x3811: "X_OFFSET_L", 0x3812: "Y_OFFSET_H",
    0x3813: "Y_OFFSET_L", 0x3814: "X_INC", 0x3815: "Y_INC", 0x3820: "TIMING_TC_REG20 (flip)",
    0x3821: "TIMING_TC_REG21 (mirror)", 0x4300: "FORMAT_CONTROL", 0x501F: "FORMAT_MUX", 0x5001: "ISP_CONTROL1",
}
OV5640_QUALITY = _ranges((0x3000, 0x3007), (0x3009, 0x30FF), (0x3100, 0x31FF), (0x3500, 0x37FF),
                         (0x380C, 0x380F), 0x3824, (0x3900, 0x39FF), (0x3A00, 0x3AFF), (0x3C00, 0x3CFF),
                         (0x4000, 0x40FF), 0x4407, 0x440E, 0x460B, 0x460C, 0x4713, 0x471C, 0x4740, 0x4837, 0x5000,
                         0x501D, 0x5025, (0x5180, 0x519E), (0x5300, 0x530C), (0x5380, 0x538B), (0x5480, 0x5490),
                         (0x5580, 0x558B), (0x5800, 0x583D))
OV5640_IDS = {0x300A: 0x56, 0x300B: 0x40}
# MaixPy's array window (2624 x 1952 from (0, 0)) and 1/4 subsample; the ISP scales the result (up to 640x480)
OV5640_ARRAY = {0x3800: 0x00, 0x3801: 0x00, 0x3802: 0x00, 0x3803: 0x00, 0x3804: 0x0A, 0x3805: 0x3F, 0x3806: 0x07,
                0x3807: 0x9F, 0x3814: 0x71, 0x3815: 0x35}
OV5640_FORMATS = {(0x61, 0x01): "rgb565", (0x10, 0x00): "yuv"}  # (0x4300, 0x501F): MaixPy's RGB565 / GRAYSCALE


class Ov5640(Sensor):
    """The OV5640: 16-bit register addresses, chip id 0x5640 at 0x300A/0x300B."""
    name = "OV5640"
    address = 0x78
    reg_bytes = 2

    def reset(self):
        self.regs = {}

    def write(self, reg, value):
        if reg in OV5640_GEOMETRY:
            if reg == 0x3008:
                if value & 0x80:
                    self.reset()
                    value &= 0x7F
                if value not in (0x02, 0x42):
                    raise Unmodelled("OV5640 0x3008 = 0x%02x: only run (0x02), standby (0x42) and reset (0x82) "
                                     "are modelled" % value)
            if reg == 0x4300 and value not in (0x61, 0x10):
                raise Unmodelled("OV5640 format 0x4300 = 0x%02x: only RGB565 (0x61) and YUV422 (0x10) are "
                                 "modelled" % value)
            if reg == 0x501F and value not in (0x00, 0x01):
                raise Unmodelled("OV5640 format mux 0x501F = 0x%02x: only YUV (0) and RGB (1) are modelled" % value)
            if reg in (0x3820, 0x3821) and (bool(value & 2) != bool(value & 4) or value & ~0x46):
                raise Unmodelled("OV5640 0x%04X = 0x%02x: only bits 1+2 together (and 0x40 in 0x3820) are "
                                 "modelled" % (reg, value))
        elif reg not in OV5640_QUALITY:
            raise Unmodelled("SCCB write of 0x%02x to OV5640 register 0x%04X: not in the model's register table"
                             % (value, reg))
        self.regs[reg] = value

    def read(self, reg):
        if reg in OV5640_IDS:
            return OV5640_IDS[reg]
        if reg in self.regs:
            return self.regs[reg]
        raise Unmodelled("SCCB read of OV5640 register 0x%04X: not modelled" % reg)

    def output(self):
        d = self.regs
        if d.get(0x3008) != 0x02:
            return "the OV5640 is not running (0x3008 = %s: reset/standby)" % (
                "unset" if 0x3008 not in d else "0x%02X" % d[0x3008])
        fmt = OV5640_FORMATS.get((d.get(0x4300), d.get(0x501F)))
        if fmt is None:
            return "OV5640 format 0x4300 = %s with 0x501F = %s: not a pair MaixPy writes" % (
                d.get(0x4300), d.get(0x501F))
        return fmt

    def geometry(self):
        d = self.regs
        bad = [r for r, v in sorted(OV5640_ARRAY.items()) if d.get(r) != v]
        if bad:
            return "the OV5640's array window / subsample is not MaixPy's (%s)" % ", ".join(
                "0x%04X" % r for r in bad)
        if not d.get(0x5001, 0) & 0x20:
            return "the OV5640's ISP scaler is off (0x5001 bit 5)"
        need = [r for r in (0x3808, 0x3809, 0x380A, 0x380B) if r not in d]
        if need:
            return "the OV5640's output size was never written (%s)" % ", ".join("0x%04X" % r for r in need)
        w = (d[0x3808] & 0x0F) << 8 | d[0x3809]
        h = (d[0x380A] & 0x07) << 8 | d[0x380B]
        if not 0 < w <= 640 or not 0 < h <= 480:
            return "OV5640 output %dx%d: the model scales its 640x480 image down only" % (w, h)
        return w, h, 0, 0, w, h

    def mirror_flip(self):
        return bool(self.regs.get(0x3821, 0) & 0x06), not self.regs.get(0x3820, 0x46) & 0x06


SENSORS = {"ov2640": Ov2640, "gc0328": Gc0328, "ov5640": Ov5640}


class FrameSource(object):
    """`openkpu run --frames`'s frame sources (openkpu.board.sensor) for the virtual camera."""

    def __init__(self, spec, max_frames=None, loop=False, report=None):
        from openkpu import runner
        bdir = runner.board_dir()
        if bdir not in sys.path:
            sys.path.insert(0, bdir)
        import sensor as host_sensor  # the PC stand-in (it imports the PC's `image`)
        self.sensor = host_sensor
        host_sensor.host_set_frames(spec, max_frames=max_frames, loop=loop)
        self.spec = spec
        self.max_frames = max_frames
        self.loop = loop
        self.delivered = 0
        self.report = report

    def next(self):
        """(Pillow image, name) or None when the source has no more frames."""
        st = self.sensor._st
        if self.max_frames is not None and self.delivered >= self.max_frames:
            return None
        item = st.source.next()
        if item is None and self.loop and self.delivered > 0:
            st.source.rewind()
            item = st.source.next()
        if item is None:
            return None
        self.delivered += 1
        return item

    def close(self):
        self.sensor.host_close()


def to_frame(pil, fw, fh, x, y, w, h, hmirror, vflip, gray):
    """The frame `openkpu run`'s sensor.snapshot() makes of a source picture (openkpu.board.sensor._to_frame)."""
    from PIL import Image as _PIL
    from PIL import ImageOps
    pil = pil.convert("L" if pil.mode in ("L", "1", "I;16", "I", "F") else "RGB")
    if pil.size != (w, h):
        if pil.size != (fw, fh):
            pil = ImageOps.fit(pil, (fw, fh), method=getattr(_PIL, "Resampling", _PIL).BILINEAR)
        if (x, y, w, h) != (0, 0, fw, fh):
            pil = pil.crop((x, y, x + w, y + h))
    if hmirror:
        pil = ImageOps.mirror(pil)
    if vflip:
        pil = ImageOps.flip(pil)
    return pil.convert("L") if gray else pil.convert("RGB")


def _lut565(bits):
    top, shift = (1 << bits) - 1, 8 - bits
    return [((v >> shift) * 255 + top // 2) // top for v in range(256)]


_LUT5, _LUT6 = _lut565(5), _lut565(6)


def rgb565_expand(frame):
    """An RGB picture as the DVP's RGB565 input carries it: 5/6/5 bits per channel, expanded back to 8 bits as
    the LCD model does ((v * 255 + 15) // 31, (v * 255 + 31) // 63)."""
    return frame.point(_LUT5 + _LUT6 + _LUT5)


class Dvp(Device):
    name = "DVP"
    base = 0x50430000
    size = 0x1000
    NAMES = {0x00: "dvp_cfg", 0x04: "r_addr", 0x08: "g_addr", 0x0C: "b_addr", 0x10: "cmos_cfg", 0x14: "sccb_cfg",
             0x18: "sccb_ctl", 0x1C: "axi", 0x20: "sts", 0x24: "reverse", 0x28: "rgb_addr"}

    def __init__(self, board, frames=None, report=None, sensor="ov2640"):
        Device.__init__(self, board)
        self.source = frames          # FrameSource or None
        self.report = report          # callable(str) for progress lines
        if sensor not in SENSORS:
            raise BoardError("unknown camera %r: %s" % (sensor, ", ".join(sorted(SENSORS))))
        self.sensor = SENSORS[sensor]()
        self.sccb_devices = {self.sensor.address: self.sensor}
        self.frames = 0
        self.sccb_transfers = 0
        self.reset()

    def reset(self):
        self.regs = dict((off, 0) for off in self.NAMES)
        self.start = False
        self.finish = False
        self.sensor.reset()

    # --- registers ------------------------------------------------------------------------------------------------
    def read32(self, offset):
        if offset not in self.regs:
            raise Unmodelled()
        if offset == 0x20:
            if not self.start and self._streaming():
                self.start = True
            return (1 if self.start else 0) | (0x100 if self.finish else 0)
        return self.regs[offset]

    def write32(self, offset, value):
        if offset not in self.regs:
            raise Unmodelled()
        if offset == 0x20:
            if value & 0x2 and value & 0x1:
                self.start = False
            if value & 0x200 and value & 0x100:
                self.finish = False
            if value & 0x02000000 and value & 0x01000000:
                self._sccb()
            if value & 0x00020000 and value & 0x00010000:
                self._convert()
            return
        if offset == 0x00 and value & 0x3:
            raise Unmodelled("DVP interrupts (dvp_cfg bits 0/1) are not modelled: poll sts")
        if offset == 0x00 and value & 0x10:
            raise Unmodelled("DVP auto mode is not modelled")
        self.regs[offset] = value

    def _streaming(self):
        cmos = self.regs[0x10]
        return bool(cmos & 0x100) and bool(cmos & 0x10000) and not cmos & 0x1000000

    # --- SCCB ---------------------------------------------------------------------------------------------------
    def _sccb(self):
        self.sccb_transfers += 1
        cfg, ctl = self.regs[0x14], self.regs[0x18]
        count = (cfg & 3) + 1  # bytes on the bus including the address (code 1 = 2 bytes ...)
        if count < 2:
            raise Unmodelled("SCCB byte count code 0 is not modelled")
        addr = ctl & 0xFE
        dev = self.sccb_devices.get(addr)
        if not self._streaming() and not self.regs[0x10] & 0x100:
            raise DeviceFault("SCCB transfer with the camera's XCLK off (cmos_cfg bit 8): the sensor cannot answer")
        if ctl & 1:  # write phase: register (+ data)
            data = [(ctl >> 8) & 0xFF, (ctl >> 16) & 0xFF, (ctl >> 24) & 0xFF][:count - 1]
            if dev is None:
                return  # nobody at that address: the bytes go nowhere
            n = dev.reg_bytes
            if len(data) not in (n, n + 1):
                raise Unmodelled("SCCB write of %d byte(s) after the address to 0x%02x: the %s has %d-bit register "
                                 "addresses" % (len(data), addr, dev.name, 8 * n))
            reg = data[0] if n == 1 else data[0] << 8 | data[1]
            if len(data) > n:
                dev.write(reg, data[n])
            dev.pointer = reg
        else:  # read phase: one byte from the register pointer
            if dev is None:
                value = 0xFF
            else:
                if dev.pointer is None:
                    raise Unmodelled("SCCB read from 0x%02x without a register address phase" % addr)
                value = dev.read(dev.pointer)
            self.regs[0x14] = (cfg & 0x00FFFFFF) | (value << 24)

    # --- a frame ------------------------------------------------------------------------------------------------
    def _convert(self):
        if not self._streaming():
            raise DeviceFault("dvp_en with the camera not streaming (XCLK off, in reset or powered down)")
        cfg = self.regs[0x00]
        if cfg & 0x8:
            raise Unmodelled("the DVP's RGB565 display output (dvp_cfg bit 3) is not modelled: use the AI planes")
        if not cfg & 0x4:
            raise Unmodelled("dvp_en without the AI output (dvp_cfg bit 2): nothing would be written")
        fmt = (cfg >> 9) & 3
        if fmt == 2:
            raise Unmodelled("DVP input format 2: only RGB565 (0), YUV422 (1) and Y (3) are modelled")
        sends = self.sensor.output()
        if sends not in ("yuv", "rgb565"):
            raise DeviceFault(sends)
        if (sends == "rgb565") != (fmt == 0):
            raise DeviceFault("the DVP takes %s (dvp_cfg format %d) but the %s sends %s" % (
                ("RGB565", "YUV422", "", "Y of YUV422")[fmt], fmt, self.sensor.name,
                "RGB565" if sends == "rgb565" else "YUV422"))
        w = ((cfg >> 12) & 0xFF) * (32 if cfg & 0x100 else 8)
        h = (cfg >> 20) & 0x3FF
        geo = self.sensor.geometry()
        if isinstance(geo, str):
            raise DeviceFault(geo)
        fw, fh, x, y, ow, oh = geo
        if (w, h) != (ow, oh):
            raise DeviceFault("the DVP expects %dx%d frames (dvp_cfg) but the %s sends %dx%d" % (
                w, h, self.sensor.name, ow, oh))
        if self.source is None:
            self.board.request_stop("sensor.snapshot(): the virtual camera has no frames: give `openkpu vboard "
                                    "run/boot` --frames (an image, a folder of images or a video)", error=True)
            return
        item = self.source.next()
        if item is None:
            self.board.request_stop("camera: no more frames in %s after %d frame(s)" % (self.source.spec, self.frames))
            return
        pil, name = item
        gray = fmt == 3
        hm, vf = self.sensor.mirror_flip()
        frame = to_frame(pil, fw, fh, x, y, w, h, hm, vf, gray)
        if fmt == 0:
            frame = rgb565_expand(frame)
        if gray:
            planes = [(self.regs[0x04], frame.tobytes())]
        else:
            r, g, b = frame.split()
            planes = [(self.regs[0x04], r.tobytes()), (self.regs[0x08], g.tobytes()), (self.regs[0x0C], b.tobytes())]
        for addr, data in planes:
            self.board.write_sram(addr, data, "DVP plane")
        self.frames += 1
        self.finish = True
        if self.report is not None:
            self.report("frame %d: %s %dx%d" % (self.frames, name, w, h))

# SPDX-License-Identifier: Apache-2.0
"""The camera side of the virtual Maix board: the DVP (0x50430000) with its SCCB master, an OV2640 on the SCCB
bus at 0x60, and the frames it sees (k210-board.md section 9).

Frames come from an image, a folder of images, a video or a webcam, through the same frame sources as
`openkpu run --frames` (openkpu.board.sensor), and are turned into the frame the script asked for the same way:
the frame size and window are read back from the OV2640's registers (the DSP window in sensor pixels of its
800x600 SVGA mode, and the output size ZMOW/ZMOH), then a picture of exactly the window size is used as it is,
any other is scaled to cover the frame and centre-cropped, the window is cut, then mirror/flip (REG04) and, with
the DVP's Y format, Pillow's grayscale. The DVP writes the planes (R, G, B or Y) into the guest's SRAM at
r/g/b_addr when the guest sets dvp_en: the YUV422 -> RGB888 path is modelled as lossless (the picture's own RGB888
bytes), so the KPU gets the bytes `openkpu run` gives it.

Camera timing is not modelled: frame_start is up as soon as the sensor streams (XCLK on, reset released, not
powered down) and a conversion finishes at once. Source frames are consumed by conversions only (skip_frames lets
the sensor stream without converting, and consumes none, like `openkpu run`). When the source runs out the board
stops (BoardStopped: the CLI exits 0 like the runner).

Everything the models do not know stops the board with a message: an SCCB write to an OV2640 register outside
the table below, a COM7 mode other than SVGA, a DVP size that differs from the sensor's output, the DVP's RGB565
display output, an input format other than YUV422 / Y, planes outside SRAM.
"""
import os
import sys

from .errors import BoardError
from .mmio import Device, DeviceFault, Unmodelled

SENSOR_W, SENSOR_H = 800, 600

# OV2640 registers the model understands, (bank, register): name. Bank 0 = DSP, 1 = sensor (0xFF selects).
OV2640_WRITES = {
    (1, 0x12): "COM7", (1, 0x04): "REG04",
    (0, 0x05): "R_BYPASS", (0, 0xE0): "RESET", (0, 0xC0): "HSIZE8", (0, 0xC1): "VSIZE8", (0, 0x51): "HSIZE",
    (0, 0x52): "VSIZE", (0, 0x53): "XOFFL", (0, 0x54): "YOFFL", (0, 0x55): "VHYX", (0, 0x5A): "ZMOW",
    (0, 0x5B): "ZMOH", (0, 0x5C): "ZMHH", (0, 0xDA): "IMAGE_MODE", (0, 0xD3): "R_DVP_SP",
}
OV2640_IDS = {0x0A: 0x26, 0x0B: 0x42, 0x1C: 0x7F, 0x1D: 0xA2}  # PID, VER, MIDH, MIDL (sensor bank)


class BoardStopped(BoardError):
    """The run ended at a model's request: the frames ran out (error False), or snapshot() without frames (True)."""

    def __init__(self, message, error=False):
        BoardError.__init__(self, message)
        self.error = error


class Ov2640(object):
    """The OV2640's registers as the firmware programs them."""
    name = "OV2640"
    address = 0x60

    def __init__(self):
        self.reset()

    def reset(self):
        self.regs = {0: {}, 1: {}}
        self.bank = 0
        self.pointer = None

    def write(self, reg, value):
        if reg == 0xFF:
            if value not in (0, 1):
                raise Unmodelled("OV2640 bank select 0x%02x (0 DSP, 1 sensor)" % value)
            self.bank = value
            return
        key = (self.bank, reg)
        if key not in OV2640_WRITES:
            raise Unmodelled("SCCB write of 0x%02x to OV2640 %s register 0x%02x: not in the model's register table"
                             % (value, ("DSP", "sensor")[self.bank], reg))
        if key == (1, 0x12):
            if value & 0x80:
                self.reset()
                return
            if value != 0x40:
                raise Unmodelled("OV2640 COM7 = 0x%02x: only the SVGA mode (0x40) is modelled" % value)
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
    def geometry(self):
        """(frame w, h, window x, y, w, h) in frame pixels, or a reason string."""
        d = self.regs[0]
        need = [r for r in (0x51, 0x52, 0x53, 0x54, 0x55, 0x5A, 0x5B, 0x5C) if r not in d]
        if need:
            return "the OV2640's window/output registers were never written (%s)" % ", ".join(
                "0x%02X" % r for r in need)
        if d.get(0x05, 1) != 0:
            return "the OV2640's DSP is bypassed (R_BYPASS 0x05 != 0): it sends no YUV frames"
        if self.regs[1].get(0x12) != 0x40:
            return "the OV2640's sensor mode (COM7) was not set to SVGA after its reset"
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


class Dvp(Device):
    name = "DVP"
    base = 0x50430000
    size = 0x1000
    NAMES = {0x00: "dvp_cfg", 0x04: "r_addr", 0x08: "g_addr", 0x0C: "b_addr", 0x10: "cmos_cfg", 0x14: "sccb_cfg",
             0x18: "sccb_ctl", 0x1C: "axi", 0x20: "sts", 0x24: "reverse", 0x28: "rgb_addr"}

    def __init__(self, board, frames=None, report=None):
        Device.__init__(self, board)
        self.source = frames          # FrameSource or None
        self.report = report          # callable(str) for progress lines
        self.sensor = Ov2640()
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
            if len(data) == 1:
                dev.pointer = data[0]
            elif len(data) == 2:
                dev.write(data[0], data[1])
                dev.pointer = data[0]
            else:
                raise Unmodelled("SCCB write of %d bytes to 0x%02x: the OV2640 has 8-bit registers" % (len(data), addr))
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
        if fmt not in (1, 3):
            raise Unmodelled("DVP input format %d: only YUV422 (1) and Y (3) are modelled" % fmt)
        w = ((cfg >> 12) & 0xFF) * (32 if cfg & 0x100 else 8)
        h = (cfg >> 20) & 0x3FF
        geo = self.sensor.geometry()
        if isinstance(geo, str):
            raise DeviceFault(geo)
        fw, fh, x, y, ow, oh = geo
        if (w, h) != (ow, oh):
            raise DeviceFault("the DVP expects %dx%d frames (dvp_cfg) but the OV2640 sends %dx%d" % (w, h, ow, oh))
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

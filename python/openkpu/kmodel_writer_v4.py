# SPDX-License-Identifier: Apache-2.0
"""kmodel v4 (nncase v0.2) writer: header, memory ranges, shapes, constants, node table, bodies.

Layout (docs/kpu-reference.md section 6, nncase v0.2.0-beta4 runtime/model.h and *_ops_body.h): a 40-byte header
``'KMDL', version 4, flags, target, constants, main_mem, nodes, inputs, outputs, reserved``; then the input memory
ranges, the input shapes (i32[4] NCHW), the output memory ranges, the constants blob, ``{u32 opcode, u32 body_size}``
per node and the bodies one after another, each padded so it ends on an absolute 8-byte file offset (the padding is
counted in body_size, as nncase's writer does).

Memory ranges are ``(memory_type, datatype, start, size)`` tuples: memory_type CONST/MAIN/KPU, datatype F32/U8.
One builder function per opcode returns ``(opcode, body)``; bodies follow nncase's struct layouts field by field.
Used by the tests and, later, by tools. Pure Python (struct only).
"""
import struct

KMDL = 0x4B4D444C
CONST, MAIN, KPU = 0, 1, 2
F32, U8 = 0, 1
FLT_MAX = 3.4028234663852886e38

BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MIN, BIN_MAX = range(6)
RED_MEAN, RED_MIN, RED_MAX, RED_SUM = range(4)
UN_ABS, UN_CEIL, UN_COS, UN_EXP, UN_FLOOR, UN_LOG, UN_NEG, UN_RSQRT, UN_SIN, UN_SQUARE = range(10)

OPCODES = {
    0x00: "binary", 0x01: "concat", 0x02: "conv2d", 0x03: "dequantize", 0x04: "matmul", 0x05: "pad",
    0x06: "quantize", 0x07: "reduce", 0x08: "reduce_window2d", 0x09: "memory_copy", 0x0A: "resize_image",
    0x0B: "softmax", 0x0C: "transpose", 0x0D: "strided_slice", 0x0E: "unary", 0x0F: "quantized_conv2d",
    0x10: "quantized_matmul", 0x11: "quantized_binary", 0x12: "table_lookup1d", 0x13: "conv2d_transpose",
    0x14: "nnil_unary_method", 0x1001: "cpu_conv2d", 0x1002: "cpu_depthwise_conv2d",
    0x1003: "cpu_reduce_window2d", 0x1004: "cpu_quantized_conv2d", 0x1005: "cpu_quantized_depthwise_conv2d",
    0x2001: "kpu_upload", 0x2002: "kpu_conv2d",
}


def mr(memory_type, datatype, start, size):
    return (int(memory_type), int(datatype), int(start), int(size))


def _mr(r):
    return struct.pack("<4I", *r)


def _shape(s):
    s = list(s)
    assert len(s) == 4
    return struct.pack("<4i", *s)


def _i32(*v):
    return struct.pack("<%di" % len(v), *v)


def _f32(*v):
    return struct.pack("<%df" % len(v), *v)


def _act(act):
    lo, hi = act if act is not None else (-FLT_MAX, FLT_MAX)
    return _f32(lo, hi)


def _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw):
    return _i32(pad_h[0], pad_h[1], pad_w[0], pad_w[1], fh, fw, sh, sw, dh, dw)


def _farr(a):
    a = list(map(float, a))
    return struct.pack("<%df" % len(a), *a)


def _iarr(a):
    a = list(map(int, a))
    return struct.pack("<%di" % len(a), *a)


def _u8arr(a):
    return bytes(bytearray(int(x) & 0xFF for x in a))


# ---- neutral ops ----

def binary(a, b, out, op, sa, sb, so, act=None):
    return 0x00, _mr(a) + _mr(b) + _mr(out) + _i32(op) + _shape(sa) + _shape(sb) + _shape(so) + _act(act)


def concat(out, inputs, dims, inner, outer):
    body = _mr(out) + struct.pack("<3I", inner, outer, len(inputs))
    body += b"".join(_mr(r) for r in inputs) + _iarr(dims)
    return 0x01, body


def conv2d(inp, out, in_shape, groups, out_channels, pad_h, pad_w, fh, fw, sh, sw, dh, dw, weights, bias, act=None):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _i32(groups, out_channels)
    body += _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw) + _act(act) + _farr(weights) + _farr(bias)
    return 0x02, body


def dequantize(inp, out, zero_point, scale):
    return 0x03, _mr(inp) + _mr(out) + _i32(zero_point) + _f32(scale)


def matmul(a, b, out, a_rows, a_cols, b_cols, bias, act=None):
    return 0x04, _mr(a) + _mr(b) + _mr(out) + _i32(a_rows, a_cols, b_cols) + _act(act) + _farr(bias)


def pad(inp, out, in_shape, paddings, pad_value, datatype=None):
    """paddings: 4 (before, after) pairs; pad_value: float (f32) or int (u8)."""
    dt = inp[1] if datatype is None else datatype
    if dt == F32:
        storage = struct.pack("<f", pad_value)
    else:
        storage = struct.pack("<B3x", int(pad_value) & 0xFF)
    flat = [v for p in paddings for v in p]
    return 0x05, _mr(inp) + _mr(out) + _shape(in_shape) + _iarr(flat) + struct.pack("<I", dt) + storage


def quantize(inp, out, zero_point, scale):
    return 0x06, _mr(inp) + _mr(out) + _i32(zero_point) + _f32(scale)


def reduce(inp, out, op, in_shape, out_shape, init_value):
    return 0x07, _mr(inp) + _mr(out) + _i32(op) + _shape(in_shape) + _shape(out_shape) + _f32(init_value)


def reduce_window2d(inp, out, op, in_shape, pad_h, pad_w, fh, fw, sh, sw, dh, dw, init_value, act=None,
                    opcode=0x08):
    body = _mr(inp) + _mr(out) + _i32(op) + _shape(in_shape) + _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw)
    return opcode, body + _f32(init_value) + _act(act)


def memory_copy(inp, out):
    return 0x09, _mr(inp) + _mr(out)


def resize_image(inp, out, in_shape, out_h, out_w, mode, align_corners=False):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _i32(out_h, out_w, mode)
    return 0x0A, body + struct.pack("<?3x", bool(align_corners))


def softmax(inp, out, inner_size, outer_size, beta=1.0):
    return 0x0B, _mr(inp) + _mr(out) + _i32(inner_size, outer_size) + _f32(beta)


def transpose(inp, out, in_shape, perm):
    return 0x0C, _mr(inp) + _mr(out) + _shape(in_shape) + _shape(perm)


def strided_slice(inp, out, in_shape, begin, end, strides, masks=(0, 0, 0, 0, 0)):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _shape(begin) + _shape(end) + _shape(strides)
    return 0x0D, body + _iarr(masks)


def unary(inp, out, op):
    return 0x0E, _mr(inp) + _mr(out) + _i32(op)


def quantized_conv2d(inp, out, in_shape, groups, out_channels, pad_h, pad_w, fh, fw, sh, sw, dh, dw, input_offset,
                     filter_offset, output_mul, output_shift, output_offset, bias, weights):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _i32(groups, out_channels)
    body += _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw)
    body += _i32(input_offset, filter_offset, output_mul, output_shift, output_offset)
    return 0x0F, body + _iarr(bias) + _u8arr(weights)


def quantized_matmul(a, b, out, a_rows, a_cols, b_cols, input_a_offset, input_b_offset, output_mul, output_shift,
                     output_offset, bias):
    body = _mr(a) + _mr(b) + _mr(out) + _i32(a_rows, a_cols, b_cols)
    body += _i32(input_a_offset, input_b_offset, output_mul, output_shift, output_offset)
    return 0x10, body + _iarr(bias)


def quantized_binary(a, b, out, op, sa, sb, so, a_offset, a_mul, a_shift, b_offset, b_mul, b_shift, out_offset,
                     out_mul, out_shift):
    body = _mr(a) + _mr(b) + _mr(out) + _i32(op) + _shape(sa) + _shape(sb) + _shape(so)
    return 0x11, body + _i32(a_offset, a_mul, a_shift, b_offset, b_mul, b_shift, out_offset, out_mul, out_shift)


def table_lookup1d(inp, table, out):
    return 0x12, _mr(inp) + _mr(table) + _mr(out)


def conv2d_transpose(inp, out, in_shape, out_shape, groups, pad_h, pad_w, fh, fw, sh, sw, dh, dw, weights, bias,
                     act=None):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _shape(out_shape) + _i32(groups)
    body += _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw) + _act(act) + _farr(weights) + _farr(bias)
    return 0x13, body


def nnil_unary_method(inp, out, program):
    return 0x14, _mr(inp) + _mr(out) + bytes(program)


class Nnil:
    """Tiny nnil assembler: Nnil().lda().ldc(2.0).mul().ret().code"""
    OPS = {"nop": 0x00, "dup": 0x01, "pop": 0x02, "lda": 0x03, "ldc0": 0x04, "ldc1": 0x05,
           "abs": 0x20, "ceil": 0x21, "cos": 0x22, "exp": 0x23, "floor": 0x24, "log": 0x25, "neg": 0x26,
           "rsqrt": 0x27, "sin": 0x28, "square": 0x29, "add": 0x40, "sub": 0x41, "mul": 0x42, "div": 0x43,
           "min": 0x44, "max": 0x45, "clamp": 0x80, "ret": 0xA0}

    def __init__(self):
        self.code = bytearray()

    def ldc(self, value):
        self.code += b"\x06" + struct.pack("<f", value)
        return self

    def __getattr__(self, name):
        if name in Nnil.OPS:
            def emit():
                self.code.append(Nnil.OPS[name])
                return self
            return emit
        raise AttributeError(name)


# ---- CPU (NHWC) ops ----

def cpu_conv2d(inp, out, in_shape, out_channels, pad_h, pad_w, fh, fw, sh, sw, dh, dw, weights, bias, act=None):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _i32(out_channels) + _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw)
    return 0x1001, body + _act(act) + _farr(weights) + _farr(bias)


def cpu_depthwise_conv2d(inp, out, in_shape, pad_h, pad_w, fh, fw, sh, sw, dh, dw, weights, bias, act=None):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw)
    return 0x1002, body + _act(act) + _farr(weights) + _farr(bias)


def cpu_reduce_window2d(*args, **kw):
    kw["opcode"] = 0x1003
    return reduce_window2d(*args, **kw)


def cpu_quantized_conv2d(inp, out, in_shape, out_channels, pad_h, pad_w, fh, fw, sh, sw, dh, dw, input_offset,
                         filter_offset, output_mul, output_shift, output_offset, weights, bias):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _i32(out_channels) + _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw)
    body += _i32(input_offset, filter_offset, output_mul, output_shift, output_offset)
    return 0x1004, body + _u8arr(weights) + _iarr(bias)


def cpu_quantized_depthwise_conv2d(inp, out, in_shape, pad_h, pad_w, fh, fw, sh, sw, dh, dw, input_offset,
                                   filter_offset, output_mul, output_shift, output_offset, weights, bias):
    body = _mr(inp) + _mr(out) + _shape(in_shape) + _window(pad_h, pad_w, fh, fw, sh, sw, dh, dw)
    body += _i32(input_offset, filter_offset, output_mul, output_shift, output_offset)
    return 0x1005, body + _u8arr(weights) + _iarr(bias)


# ---- K210 ops ----

def kpu_upload(inp, out, in_shape):
    return 0x2001, _mr(inp) + _mr(out) + _shape(in_shape)


def kpu_conv2d(layer_args, bn, act, weights, main_out=None, batches=1, paddings=(0, 0, 0)):
    """layer_args: the 96 bytes (12 u64 words); its bwsx_base_addr / active_addr / para_start_addr fields are
    overwritten with the three padding counts (`paddings`), as nncase stores them."""
    words = list(struct.unpack("<12Q", bytes(layer_args)))
    p_bn, p_act, p_w = paddings
    words[4] = (words[4] & 0xFFFFFFFF) | (p_bn << 32)
    words[7] = (words[7] & 0xFFFFFFFF) | (p_act << 32)
    words[5] = (words[5] & 0xFFFFFFFF) | (p_w << 32)
    body = _mr(main_out if main_out is not None else (CONST, U8, 0, 0)) + _i32(batches, 0)
    body += struct.pack("<12Q", *words)
    body += b"\0" * p_bn + bytes(bn) + b"\0" * p_act + bytes(act) + b"\0" * p_w + bytes(weights)
    return 0x2002, body


class V4Writer:
    def __init__(self, main_mem, target=1, flags=0):
        self.main_mem = main_mem
        self.target = target
        self.flags = flags
        self.inputs = []
        self.outputs = []
        self.constants = bytearray()
        self.nodes = []

    def add_input(self, memory_range, shape):
        self.inputs.append((memory_range, tuple(shape)))

    def add_output(self, memory_range):
        self.outputs.append(memory_range)

    def add_constant(self, data, align=8):
        while len(self.constants) % align:
            self.constants.append(0)
        start = len(self.constants)
        self.constants += bytes(data)
        return start

    def add(self, node):
        opcode, body = node
        self.nodes.append((opcode, bytes(body)))
        return len(self.nodes) - 1

    def build(self, write_last_padding=True):
        head = struct.pack("<10I", KMDL, 4, self.flags, self.target, len(self.constants), self.main_mem,
                           len(self.nodes), len(self.inputs), len(self.outputs), 0)
        head += b"".join(_mr(r) for r, _ in self.inputs) + b"".join(_shape(s) for _, s in self.inputs)
        head += b"".join(_mr(r) for r in self.outputs) + bytes(self.constants)
        pos = len(head) + 8 * len(self.nodes)
        table, bodies = b"", b""
        for i, (opcode, body) in enumerate(self.nodes):
            end = pos + len(body)
            padded = body + b"\0" * ((-end) % 8)
            table += struct.pack("<2I", opcode, len(padded))
            if i == len(self.nodes) - 1 and not write_last_padding:
                padded = body
            bodies += padded
            pos += len(padded)
        return head + table + bodies

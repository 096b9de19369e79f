"""Write kmodel v3 files (the format of nncase v0.1.x and Maix-EMC) from a list of layer descriptions.

Format: docs/kpu-reference.md sections 2 (file layout, layer bodies) and 3 (the KPU layer argument). A model is a
:class:`V3Model` holding layers (:class:`KpuConv` for the KPU, one class per CPU layer type) and the output table;
``V3Model.to_bytes()`` emits the file:

* a 28-byte header, the output table, the layer table, then the bodies one after the other;
* every body's END is padded to an absolute 8-byte file offset, the padding counted in ``body_size``
  (``omit_last_padding=True`` leaves the last body's padding unwritten, as real files do);
* a K210_CONV body is a 24-byte header with ABSOLUTE file offsets of the 96-byte layer argument, the weights,
  the BN table and the activation table, all inside the body and aligned as nncase v0.1 does (8/128/128/256;
  Maix-EMC uses 128 for the activation table: see ``KpuConv.align``).

All addresses are given by the caller: ``main`` addresses are byte offsets into the CPU main buffer, ``kpu``
addresses are 64-byte row indices into the 2 MiB KPU RAM. ``main_mem_usage`` and ``max_start_address`` are derived
from the layers unless given.

:func:`parse_v3` is a small reader (no validation beyond what it needs to walk the file) for tests and tools.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "LAYER_TYPES", "LAYER_ARG_FIELDS", "KPU_RAM_ROWS", "pack_layer_args", "unpack_layer_args", "kpu_row_layout",
    "kpu_map_rows", "pool_stride", "pack_bn", "pack_act", "ActTable", "V3Layer", "KpuConv", "Add", "QuantizedAdd",
    "GlobalMaxPool2d", "QuantizedGlobalMaxPool2d", "GlobalAveragePool2d", "QuantizedGlobalAveragePool2d",
    "MaxPool2d", "QuantizedMaxPool2d", "AveragePool2d", "QuantizedAveragePool2d", "Quantize", "Dequantize",
    "Requantize", "L2Normalization", "Softmax", "Concat", "QuantizedConcat", "FullyConnected",
    "QuantizedFullyConnected", "TensorflowFlatten", "QuantizedTensorflowFlatten", "ResizeNearestNeighbor",
    "QuantizedResizeNearestNeighbor", "ChannelwiseDequantize", "Logistic", "K210AddPadding", "K210RemovePadding",
    "K210Upload", "RawLayer", "V3Model", "parse_v3", "ParsedV3", "ParsedLayer",
]

KPU_RAM_ROWS = 32768  # 2 MiB of 64-byte rows
KPU_ROW_BYTES = 64

LAYER_TYPES = {
    1: "ADD", 2: "QUANTIZED_ADD", 3: "GLOBAL_MAX_POOL2D", 4: "QUANTIZED_GLOBAL_MAX_POOL2D",
    5: "GLOBAL_AVERAGE_POOL2D", 6: "QUANTIZED_GLOBAL_AVERAGE_POOL2D", 7: "MAX_POOL2D", 8: "QUANTIZED_MAX_POOL2D",
    9: "AVERAGE_POOL2D", 10: "QUANTIZED_AVERAGE_POOL2D", 11: "QUANTIZE", 12: "DEQUANTIZE", 13: "REQUANTIZE",
    14: "L2_NORMALIZATION", 15: "SOFTMAX", 16: "CONCAT", 17: "QUANTIZED_CONCAT", 18: "FULLY_CONNECTED",
    19: "QUANTIZED_FULLY_CONNECTED", 20: "TENSORFLOW_FLATTEN", 21: "QUANTIZED_TENSORFLOW_FLATTEN",
    22: "RESIZE_NEAREST_NEIGHBOR", 23: "QUANTIZED_RESIZE_NEAREST_NEIGHBOR", 24: "CHANNELWISE_DEQUANTIZE",
    25: "LOGISTIC", 10240: "K210_CONV", 10241: "K210_ADD_PADDING", 10242: "K210_REMOVE_PADDING",
    10243: "K210_UPLOAD",
}

MAIN_MEM_OUT = 1  # body flags bit0

# ---------------------------------------------------------------------------------------------------------------
# The 96-byte KPU layer argument (12 x u64, LSB-first bitfields; docs/kpu-reference.md section 3).
# (word, lowest bit, width, name, signed). Names are the SDK's; the *_num / *_wid / *_high fields hold stored
# values (count - 1).
LAYER_ARG_FIELDS: Tuple[Tuple[int, int, int, str, bool], ...] = (
    (0, 0, 1, "int_en", False), (0, 1, 1, "ram_flag", False), (0, 2, 1, "full_add", False),
    (0, 3, 1, "depth_wise_layer", False),
    (1, 0, 15, "image_src_addr", False), (1, 32, 15, "image_dst_addr", False),
    (2, 0, 10, "i_ch_num", False), (2, 32, 10, "o_ch_num", False), (2, 48, 10, "o_ch_num_coef", False),
    (3, 0, 10, "i_row_wid", False), (3, 10, 9, "i_col_high", False), (3, 32, 10, "o_row_wid", False),
    (3, 42, 9, "o_col_high", False),
    (4, 0, 3, "kernel_type", False), (4, 3, 1, "pad_type", False), (4, 4, 4, "pool_type", False),
    (4, 8, 1, "first_stride", False), (4, 9, 1, "bypass_conv", False), (4, 10, 1, "load_para", False),
    (4, 16, 8, "dma_burst_size", False), (4, 24, 8, "pad_value", False), (4, 32, 32, "bwsx_base_addr", False),
    (5, 0, 1, "load_coor", False), (5, 1, 6, "load_time", False), (5, 15, 17, "para_size", False),
    (5, 32, 32, "para_start_addr", False),
    (6, 0, 4, "coef_column_offset", False), (6, 4, 12, "coef_row_offset", False),
    (7, 0, 15, "channel_switch_addr", False), (7, 16, 4, "row_switch_addr", False), (7, 20, 8, "coef_size", False),
    (7, 28, 3, "coef_group", False), (7, 31, 1, "load_act", False), (7, 32, 32, "active_addr", False),
    (8, 0, 15, "wb_channel_switch_addr", False), (8, 16, 4, "wb_row_switch_addr", False),
    (8, 20, 3, "wb_group", False),
    (9, 0, 4, "shr_w", False), (9, 4, 4, "shr_x", False), (9, 8, 24, "arg_w", True), (9, 32, 24, "arg_x", True),
    (10, 0, 40, "arg_add", True),
    (11, 0, 1, "send_data_out", False), (11, 16, 16, "channel_byte_num", False),
    (11, 32, 32, "dma_total_byte", False),
)
_FIELD_BY_NAME = {f[3]: f for f in LAYER_ARG_FIELDS}


def _check_range(name: str, value: int, width: int, signed: bool) -> None:
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    if not lo <= value <= hi:
        raise ValueError("%s = %d does not fit %s %d bits [%d, %d]"
                         % (name, value, "signed" if signed else "unsigned", width, lo, hi))


def pack_layer_args(fields: Optional[Dict[str, int]] = None, *, strict: bool = True, **kw: int) -> bytes:
    """The 96 bytes of a ``kpu_layer_argument_t`` from stored field values (names: ``LAYER_ARG_FIELDS``).

    Missing fields are 0. ``strict`` (default) raises ValueError for a value that does not fit its bitfield;
    ``strict=False`` truncates it to the field width (for deliberately malformed files)."""
    values = dict(fields or {})
    values.update(kw)
    unknown = set(values) - set(_FIELD_BY_NAME)
    if unknown:
        raise ValueError("unknown layer argument fields: %s" % ", ".join(sorted(unknown)))
    words = [0] * 12
    for word, lo, width, name, signed in LAYER_ARG_FIELDS:
        v = int(values.get(name, 0))
        if strict:
            _check_range(name, v, width, signed)
        words[word] |= (v & ((1 << width) - 1)) << lo
    return struct.pack("<12Q", *words)


def unpack_layer_args(raw: bytes) -> Dict[str, int]:
    """Decode 96 bytes into stored field values (signed fields sign-extended)."""
    if len(raw) < 96:
        raise ValueError("layer argument needs 96 bytes, got %d" % len(raw))
    words = struct.unpack_from("<12Q", raw, 0)
    out = {}
    for word, lo, width, name, signed in LAYER_ARG_FIELDS:
        v = (words[word] >> lo) & ((1 << width) - 1)
        if signed and v >> (width - 1):
            v -= 1 << width
        out[name] = v
    return out


# ---------------------------------------------------------------------------------------------------------------
# KPU RAM layout (docs/kpu-reference.md section 5) and pooling geometry (docs/kpu-reference.md section 4.4)

def kpu_row_layout(width: int) -> Tuple[int, int, int]:
    """(groups, row_len, row_pitch) of a feature map of this width."""
    if width <= 16:
        return 4, 1, 16
    if width <= 32:
        return 2, 1, 32
    return 1, (width + 63) // 64, 64


def kpu_map_rows(width: int, height: int, channels: int) -> int:
    """64-byte KPU RAM rows a width x height x channels map occupies."""
    groups, row_len, _ = kpu_row_layout(width)
    return row_len * height * ((channels + groups - 1) // groups)


_POOL_STRIDE = {0: 1, 1: 2, 2: 2, 3: 4, 4: 4, 5: 2, 6: 2, 7: 4, 8: 1, 9: 1}


def pool_stride(pool_type: int) -> int:
    if pool_type not in _POOL_STRIDE:
        raise ValueError("pool_type %d is not a KPU pool type (0..9)" % pool_type)
    return _POOL_STRIDE[pool_type]


# ---------------------------------------------------------------------------------------------------------------
# BN and activation tables (docs/kpu-reference.md section 3)

def pack_bn(mul: Sequence[int], add: Sequence[int], shift: Sequence[int], *, strict: bool = True) -> bytes:
    """u64 per output channel: [23:0] norm_mul (s24), [55:24] norm_add (s32), [59:56] norm_shift (u4)."""
    if not len(mul) == len(add) == len(shift):
        raise ValueError("BN mul/add/shift lengths differ")
    out = bytearray()
    for m, a, s in zip(mul, add, shift):
        m, a, s = int(m), int(a), int(s)
        if strict:
            _check_range("norm_mul", m, 24, True)
            _check_range("norm_add", a, 32, True)
            _check_range("norm_shift", s, 4, False)
        out += struct.pack("<Q", (m & 0xFFFFFF) | ((a & 0xFFFFFFFF) << 24) | ((s & 0xF) << 56))
    return bytes(out)


@dataclass
class ActTable:
    """The 16-segment activation: segment i applies when y > x_start[i] (the last such i).

    ``y_mul`` is a signed 16-bit value (nncase sign-extends it); it is stored as its low 16 bits."""
    x_start: Sequence[int]
    y_mul: Sequence[int]
    shift: Sequence[int]
    bias: Sequence[int]

    def pack(self, strict: bool = True) -> bytes:
        return pack_act(self.x_start, self.y_mul, self.shift, self.bias, strict=strict)

    @classmethod
    def linear(cls, y_mul: int = 1, shift: int = 0) -> "ActTable":
        """Identity-like table for u8 data: y <= 0 -> 0, y > 0 -> round_shift(y * y_mul, shift)."""
        xs = [-(1 << 35)] + [-1] * 14 + [0]
        return cls(xs, [0] * 15 + [y_mul], [0] * 15 + [shift], [0] * 16)


def pack_act(x_start, y_mul, shift, bias, *, strict: bool = True) -> bytes:
    """144 bytes: 16 x u64 {[7:0] shift, [23:8] y_mul, [59:24] x_start (s36)}, then 16 u8 biases."""
    if not (len(x_start) == len(y_mul) == len(shift) == len(bias) == 16):
        raise ValueError("an activation table has exactly 16 segments")
    out = bytearray()
    for xs, m, s in zip(x_start, y_mul, shift):
        xs, m, s = int(xs), int(m), int(s)
        if strict:
            _check_range("x_start", xs, 36, True)
            _check_range("y_mul", m, 16, True)
            _check_range("shift_number", s, 8, False)
        out += struct.pack("<Q", (s & 0xFF) | ((m & 0xFFFF) << 8) | ((xs & ((1 << 36) - 1)) << 24))
    b = [int(v) for v in bias]
    if strict:
        for v in b:
            _check_range("result_bias", v, 8, False)
    out += bytes(v & 0xFF for v in b)
    return bytes(out)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


# ---------------------------------------------------------------------------------------------------------------
# Layers

class V3Layer:
    """A layer: its v3 type id and body. Subclasses implement ``body(offset)`` (``offset`` = absolute file offset
    where the body starts; only K210_CONV needs it), ``main_extents()`` (byte ranges of the main buffer it reads
    or writes) and ``kpu_rows()`` (KPU RAM row ranges it touches)."""
    type_id: int = 0

    def body(self, offset: int) -> bytes:
        raise NotImplementedError

    def main_extents(self) -> List[Tuple[int, int]]:
        return []

    def kpu_rows(self) -> List[Tuple[int, int]]:
        return []


@dataclass
class RawLayer(V3Layer):
    """Any type id with literal body bytes (unknown types, hand-made bodies)."""
    type_id: int = 0
    data: bytes = b""

    def body(self, offset: int) -> bytes:
        return bytes(self.data)


def _u32s(*vals) -> bytes:
    return struct.pack("<%dI" % len(vals), *[int(v) & 0xFFFFFFFF for v in vals])


def _i32s(*vals) -> bytes:
    return struct.pack("<%di" % len(vals), *[int(v) for v in vals])


def _f32s(vals) -> bytes:
    return np.asarray(vals, dtype="<f4").tobytes()


@dataclass
class KpuConv(V3Layer):
    """One KPU layer (K210_CONV, type 10240) from its high-level description.

    Weights: ``[oc][ic][k][k]`` (``[c][k][k]`` depthwise), u8 in 8-bit models, u16 in 16-bit models (the model's
    ``eight_bit`` flag decides; the array is checked against it). BN: per output channel (mul, add, shift).
    ``main_out``: main-buffer byte address the output is also copied to densely (NCHW), or None.
    ``src``/``dst``: KPU RAM rows of the input and output maps."""
    in_w: int
    in_h: int
    in_c: int
    out_c: int
    kernel: int  # 1 or 3
    weights: np.ndarray
    bn_mul: Sequence[int]
    bn_add: Sequence[int]
    bn_shift: Sequence[int]
    act: ActTable
    src: int
    dst: int
    depthwise: bool = False
    pool_type: int = 0
    pad_value: int = 0
    arg_x: int = 0
    shr_x: int = 0
    arg_w: int = 0
    shr_w: int = 0
    arg_add: int = 0
    main_out: Optional[int] = None
    flags: Optional[int] = None  # body flags; default MAIN_MEM_OUT iff main_out is set
    first_stride: int = 0
    align: Tuple[int, int, int, int] = (8, 128, 128, 256)  # args, weights, BN, activation (absolute offsets)
    overrides: Dict[str, int] = field(default_factory=dict)  # stored-field values replacing the derived ones
    strict: bool = True
    type_id: int = 10240

    @property
    def out_w(self) -> int:
        return self.in_w // pool_stride(self.pool_type)

    @property
    def out_h(self) -> int:
        return self.in_h // pool_stride(self.pool_type)

    @property
    def kernel_type(self) -> int:
        if self.kernel not in (1, 3):
            raise ValueError("KPU kernels are 1x1 or 3x3, not %r" % self.kernel)
        return 0 if self.kernel == 1 else 1

    def weights_array(self, eight_bit: bool) -> np.ndarray:
        k = self.kernel
        shape = (self.out_c, k, k) if self.depthwise else (self.out_c, self.in_c, k, k)
        w = np.asarray(self.weights)
        if w.shape != shape:
            raise ValueError("weights shape %s, expected %s" % (w.shape, shape))
        limit = 255 if eight_bit else 65535
        if w.size and (w.min() < 0 or w.max() > limit):
            raise ValueError("weights must lie in [0, %d] in %s-bit mode" % (limit, 8 if eight_bit else 16))
        return w.astype("u1" if eight_bit else "<u2")

    def layer_fields(self, eight_bit: bool = True) -> Dict[str, int]:
        """Stored field values of the 12 words, derived as nncase v0.2's codegen does
        (docs/kpu-reference.md section 3)."""
        k = self.kernel
        bpw = 1 if eight_bit else 2
        if self.depthwise:
            one_load = self.out_c
            para_size = self.out_c * k * k * bpw
            loads = 1
        else:
            per_channel = k * k * self.in_c * bpw
            one_load = max(1, min(self.out_c, (30 * 1024) // per_channel))
            para_size = per_channel * one_load
            loads = (self.out_c + one_load - 1) // one_load
        g_in, rl_in, _ = kpu_row_layout(self.in_w)
        g_out, rl_out, _ = kpu_row_layout(self.out_w)
        ow, oh = self.out_w, self.out_h
        f = dict(
            int_en=0, ram_flag=0, full_add=0, depth_wise_layer=int(self.depthwise),
            image_src_addr=self.src, image_dst_addr=self.dst,
            i_ch_num=self.in_c - 1, o_ch_num=self.out_c - 1, o_ch_num_coef=one_load - 1,
            i_row_wid=self.in_w - 1, i_col_high=self.in_h - 1, o_row_wid=ow - 1, o_col_high=oh - 1,
            kernel_type=self.kernel_type, pad_type=0, pool_type=self.pool_type, first_stride=self.first_stride,
            bypass_conv=0, load_para=1, dma_burst_size=15, pad_value=self.pad_value, bwsx_base_addr=0,
            # hardware-timing fields: nncase assigns them to bitfields, which wrap
            load_coor=1, load_time=(loads - 1) & 0x3F, para_size=para_size & 0x1FFFF, para_start_addr=0,
            coef_column_offset=0, coef_row_offset=0,
            channel_switch_addr=rl_in * self.in_h, row_switch_addr=rl_in, coef_size=0, coef_group=g_in,
            load_act=1, active_addr=0,
            wb_channel_switch_addr=rl_out * oh, wb_row_switch_addr=rl_out, wb_group=g_out,
            shr_w=self.shr_w, shr_x=self.shr_x, arg_w=self.arg_w, arg_x=self.arg_x, arg_add=self.arg_add,
            send_data_out=0, channel_byte_num=(ow * oh - 1) & 0xFFFF, dma_total_byte=ow * oh * self.out_c - 1,
        )
        f.update(self.overrides)
        return f

    def pack_args(self, eight_bit: bool = True) -> bytes:
        return pack_layer_args(self.layer_fields(eight_bit), strict=self.strict)

    # The model sets this before asking for the body (the weight width is a model-wide flag).
    _eight_bit = True

    def body(self, offset: int) -> bytes:
        a_args, a_w, a_bn, a_act = self.align
        args = self.pack_args(self._eight_bit)
        weights = self.weights_array(self._eight_bit).tobytes()
        bn = pack_bn(self.bn_mul, self.bn_add, self.bn_shift, strict=self.strict)
        if len(self.bn_mul) != self.out_c and self.strict:
            raise ValueError("BN table has %d entries for %d output channels" % (len(self.bn_mul), self.out_c))
        act = self.act.pack(strict=self.strict)
        o_args = _align(offset + 24, a_args)
        o_w = _align(o_args + len(args), a_w)
        o_bn = _align(o_w + len(weights), a_bn)
        o_act = _align(o_bn + len(bn), a_act)
        end = o_act + len(act)
        flags = self.flags if self.flags is not None else (MAIN_MEM_OUT if self.main_out is not None else 0)
        buf = bytearray(end - offset)
        buf[0:24] = _u32s(flags, self.main_out or 0, o_args, o_w, o_bn, o_act)
        for o, data in ((o_args, args), (o_w, weights), (o_bn, bn), (o_act, act)):
            buf[o - offset:o - offset + len(data)] = data
        return bytes(buf)

    def out_bytes(self) -> int:
        return self.out_w * self.out_h * self.out_c

    def main_extents(self):
        # the output DMA moves whole u64 words: the destination is written up to the next 8-byte boundary
        return [] if self.main_out is None else [(self.main_out, _align(self.out_bytes(), 8))]

    def kpu_rows(self):
        return [(self.src, kpu_map_rows(self.in_w, self.in_h, self.in_c)),
                (self.dst, kpu_map_rows(self.out_w, self.out_h, self.out_c))]


# --- CPU layers: fields in body order (docs/kpu-reference.md section 2). `flags` first in every body. ---

@dataclass
class Add(V3Layer):
    in_a: int
    in_b: int
    out: int
    count: int
    flags: int = 0
    type_id: int = 1

    def body(self, offset):
        return _u32s(self.flags, self.in_a, self.in_b, self.out, self.count)

    def main_extents(self):
        n = 4 * self.count
        return [(self.in_a, n), (self.in_b, n), (self.out, n)]


@dataclass
class QuantizedAdd(V3Layer):
    in_a: int
    in_b: int
    out: int
    count: int
    in_a_offset: int
    in_a_mul: int
    in_a_shift: int
    in_b_offset: int
    in_b_mul: int
    in_b_shift: int
    out_offset: int
    out_mul: int
    out_shift: int
    flags: int = 0
    type_id: int = 2

    def body(self, offset):
        return _u32s(self.flags, self.in_a, self.in_b, self.out, self.count) + _i32s(
            self.in_a_offset, self.in_a_mul, self.in_a_shift, self.in_b_offset, self.in_b_mul, self.in_b_shift,
            self.out_offset, self.out_mul, self.out_shift)

    def main_extents(self):
        return [(self.in_a, self.count), (self.in_b, self.count), (self.out, self.count)]


@dataclass
class _GlobalPool(V3Layer):
    """flags, in, out, kernel_size (= H*W), channels."""
    inp: int
    out: int
    kernel_size: int
    channels: int
    flags: int = 0
    elem: int = 4  # bytes per input element (f32 / u8)
    out_elem: int = 4

    def body(self, offset):
        return _u32s(self.flags, self.inp, self.out, self.kernel_size, self.channels)

    def main_extents(self):
        return [(self.inp, self.elem * self.kernel_size * self.channels), (self.out, self.out_elem * self.channels)]


@dataclass
class GlobalMaxPool2d(_GlobalPool):
    type_id: int = 3


@dataclass
class QuantizedGlobalMaxPool2d(_GlobalPool):
    elem: int = 1
    out_elem: int = 1
    type_id: int = 4


@dataclass
class GlobalAveragePool2d(_GlobalPool):
    type_id: int = 5


@dataclass
class QuantizedGlobalAveragePool2d(_GlobalPool):
    elem: int = 1
    out_elem: int = 1
    type_id: int = 6


@dataclass
class _Pool2d(V3Layer):
    """flags, in, out, in_shape{w,h,c}, out_shape{w,h,c}, kernel_w, kernel_h, stride_w, stride_h, padding_w,
    padding_h, then act (float pools only; 0 linear, 1 relu, 2 relu6)."""
    inp: int
    out: int
    in_w: int
    in_h: int
    in_c: int
    out_w: int
    out_h: int
    out_c: int
    kernel_w: int
    kernel_h: int
    stride_w: int
    stride_h: int
    padding_w: int
    padding_h: int
    act: int = 0
    flags: int = 0
    quantized: bool = False

    def body(self, offset):
        b = _u32s(self.flags, self.inp, self.out, self.in_w, self.in_h, self.in_c, self.out_w, self.out_h,
                  self.out_c, self.kernel_w, self.kernel_h, self.stride_w, self.stride_h, self.padding_w,
                  self.padding_h)
        return b if self.quantized else b + _u32s(self.act)

    def main_extents(self):
        e = 1 if self.quantized else 4
        return [(self.inp, e * self.in_w * self.in_h * self.in_c), (self.out, e * self.out_w * self.out_h * self.out_c)]


@dataclass
class MaxPool2d(_Pool2d):
    type_id: int = 7


@dataclass
class QuantizedMaxPool2d(_Pool2d):
    quantized: bool = True
    type_id: int = 8


@dataclass
class AveragePool2d(_Pool2d):
    type_id: int = 9


@dataclass
class QuantizedAveragePool2d(_Pool2d):
    quantized: bool = True
    type_id: int = 10


@dataclass
class _QuantParamLayer(V3Layer):
    """flags, in, out, count, f32 scale, f32 bias."""
    inp: int
    out: int
    count: int
    scale: float
    bias: float
    flags: int = 0

    def body(self, offset):
        return _u32s(self.flags, self.inp, self.out, self.count) + _f32s([self.scale, self.bias])


@dataclass
class Quantize(_QuantParamLayer):
    type_id: int = 11

    def main_extents(self):
        return [(self.inp, 4 * self.count), (self.out, self.count)]


@dataclass
class Dequantize(_QuantParamLayer):
    type_id: int = 12

    def main_extents(self):
        return [(self.inp, self.count), (self.out, 4 * self.count)]


@dataclass
class Requantize(V3Layer):
    """flags, in, out, count, u8 table[256]."""
    inp: int
    out: int
    count: int
    table: Sequence[int]
    flags: int = 0
    type_id: int = 13

    def body(self, offset):
        t = bytes(int(v) for v in self.table)
        if len(t) != 256:
            raise ValueError("REQUANTIZE needs a 256-entry table")
        return _u32s(self.flags, self.inp, self.out, self.count) + t

    def main_extents(self):
        return [(self.inp, self.count), (self.out, self.count)]


@dataclass
class _ChannelsLayer(V3Layer):
    """flags, in, out, channels (f32 in and out)."""
    inp: int
    out: int
    channels: int
    flags: int = 0

    def body(self, offset):
        return _u32s(self.flags, self.inp, self.out, self.channels)

    def main_extents(self):
        return [(self.inp, 4 * self.channels), (self.out, 4 * self.channels)]


@dataclass
class L2Normalization(_ChannelsLayer):
    type_id: int = 14


@dataclass
class Softmax(_ChannelsLayer):
    type_id: int = 15


@dataclass
class Logistic(_ChannelsLayer):
    type_id: int = 25


@dataclass
class Concat(V3Layer):
    """flags, out, input_count, {start, size} x input_count (bytes, copied in order)."""
    out: int
    inputs: Sequence[Tuple[int, int]]
    flags: int = 0
    type_id: int = 16

    def body(self, offset):
        b = _u32s(self.flags, self.out, len(self.inputs))
        for start, size in self.inputs:
            b += _u32s(start, size)
        return b

    def main_extents(self):
        return list(self.inputs) + [(self.out, sum(s for _, s in self.inputs))]


@dataclass
class QuantizedConcat(Concat):
    type_id: int = 17


@dataclass
class FullyConnected(V3Layer):
    """flags, in, out, in_channels, out_channels, act (0 linear, 1 relu, 2 relu6), f32 weights[out][in],
    f32 bias[out]."""
    inp: int
    out: int
    weights: np.ndarray  # [out][in]
    bias: Sequence[float]
    act: int = 0
    flags: int = 0
    type_id: int = 18

    @property
    def in_channels(self):
        return int(np.shape(self.weights)[1])

    @property
    def out_channels(self):
        return int(np.shape(self.weights)[0])

    def body(self, offset):
        w = np.asarray(self.weights, dtype="<f4")
        b = np.asarray(self.bias, dtype="<f4")
        if w.ndim != 2 or b.shape != (w.shape[0],):
            raise ValueError("FC weights must be [out][in] and bias [out]")
        return _u32s(self.flags, self.inp, self.out, w.shape[1], w.shape[0], self.act) + w.tobytes() + b.tobytes()

    def main_extents(self):
        return [(self.inp, 4 * self.in_channels), (self.out, 4 * self.out_channels)]


@dataclass
class QuantizedFullyConnected(V3Layer):
    """Type 19. No public writer or runtime defines its body; this is openkpu's definition, shared with the C loader
    (c_src/kmodel/kmodel_v3.c, the v3 analogue of nncase v0.2's quantized_matmul): flags, in, out, in_channels,
    out_channels, i32 input_offset, i32 weight_offset, i32 output_mul, i32 output_shift, i32 output_offset,
    u8 weights[out][in], i32 bias[out].
    acc = bias[o] + sum_i (x[i] + input_offset) * (w[o][i] + weight_offset);
    out = clamp(round_shift(acc * output_mul, output_shift) + output_offset, 0, 255)."""
    inp: int
    out: int
    weights: np.ndarray  # u8 [out][in]
    bias: Sequence[int]
    input_offset: int = 0
    weight_offset: int = 0
    output_mul: int = 1
    output_shift: int = 0
    output_offset: int = 0
    flags: int = 0
    type_id: int = 19

    def body(self, offset):
        w = np.asarray(self.weights, dtype="u1")
        b = np.asarray(self.bias, dtype="<i4")
        if w.ndim != 2 or b.shape != (w.shape[0],):
            raise ValueError("quantized FC weights must be [out][in] and bias [out]")
        return (_u32s(self.flags, self.inp, self.out, w.shape[1], w.shape[0])
                + _i32s(self.input_offset, self.weight_offset, self.output_mul, self.output_shift, self.output_offset)
                + w.tobytes() + b.tobytes())

    def main_extents(self):
        w = np.shape(self.weights)
        return [(self.inp, w[1]), (self.out, w[0])]


@dataclass
class TensorflowFlatten(V3Layer):
    """flags, in, out, shape{w,h,c}: NCHW -> NHWC."""
    inp: int
    out: int
    width: int
    height: int
    channels: int
    flags: int = 0
    elem: int = 4
    type_id: int = 20

    def body(self, offset):
        return _u32s(self.flags, self.inp, self.out, self.width, self.height, self.channels)

    def main_extents(self):
        n = self.elem * self.width * self.height * self.channels
        return [(self.inp, n), (self.out, n)]


@dataclass
class QuantizedTensorflowFlatten(TensorflowFlatten):
    elem: int = 1
    type_id: int = 21


@dataclass
class ResizeNearestNeighbor(V3Layer):
    """flags, in, out, in_shape{w,h,c}, out_w, out_h, align_corners."""
    inp: int
    out: int
    in_w: int
    in_h: int
    channels: int
    out_w: int
    out_h: int
    align_corners: int = 0
    flags: int = 0
    elem: int = 4
    type_id: int = 22

    def body(self, offset):
        return _u32s(self.flags, self.inp, self.out, self.in_w, self.in_h, self.channels, self.out_w, self.out_h,
                     self.align_corners)

    def main_extents(self):
        return [(self.inp, self.elem * self.in_w * self.in_h * self.channels),
                (self.out, self.elem * self.out_w * self.out_h * self.channels)]


@dataclass
class QuantizedResizeNearestNeighbor(ResizeNearestNeighbor):
    elem: int = 1
    type_id: int = 23


@dataclass
class ChannelwiseDequantize(V3Layer):
    """flags, in, out, channels, channel_size, {f32 scale, f32 bias} x channels."""
    inp: int
    out: int
    channel_size: int
    scale: Sequence[float]
    bias: Sequence[float]
    flags: int = 0
    type_id: int = 24

    def body(self, offset):
        p = np.stack([np.asarray(self.scale, "<f4"), np.asarray(self.bias, "<f4")], axis=1)
        return _u32s(self.flags, self.inp, self.out, len(self.scale), self.channel_size) + p.tobytes()

    def main_extents(self):
        n = len(self.scale) * self.channel_size
        return [(self.inp, n), (self.out, 4 * n)]


@dataclass
class K210AddPadding(V3Layer):
    """flags, main_in, kpu_out (rows), channels: channel c's byte -> pixel (0,0) of a 4x4 map in KPU layout."""
    inp: int
    kpu_out: int
    channels: int
    flags: int = 0
    type_id: int = 10241

    def body(self, offset):
        return _u32s(self.flags, self.inp, self.kpu_out, self.channels)

    def main_extents(self):
        return [(self.inp, self.channels)]

    def kpu_rows(self):
        return [(self.kpu_out, kpu_map_rows(4, 4, self.channels))]


@dataclass
class K210RemovePadding(V3Layer):
    """flags, main_in, main_out, channels: dst[c] = src[c*16]."""
    inp: int
    out: int
    channels: int
    flags: int = 0
    type_id: int = 10242

    def body(self, offset):
        return _u32s(self.flags, self.inp, self.out, self.channels)

    def main_extents(self):
        return [(self.inp, 16 * self.channels), (self.out, self.channels)]


@dataclass
class K210Upload(V3Layer):
    """flags, main_in, kpu_out (rows), width, height, channels: dense NCHW u8 -> KPU layout."""
    inp: int
    kpu_out: int
    width: int
    height: int
    channels: int
    flags: int = 0
    type_id: int = 10243

    def body(self, offset):
        return _u32s(self.flags, self.inp, self.kpu_out, self.width, self.height, self.channels)

    def main_extents(self):
        return [(self.inp, self.width * self.height * self.channels)]

    def kpu_rows(self):
        return [(self.kpu_out, kpu_map_rows(self.width, self.height, self.channels))]


# ---------------------------------------------------------------------------------------------------------------
# The model

@dataclass
class V3Model:
    """A kmodel v3 file. ``outputs``: (main-buffer byte address, byte size) per output."""
    layers: List[V3Layer]
    outputs: List[Tuple[int, int]]
    eight_bit: bool = True
    main_mem_usage: Optional[int] = None  # default: end of the highest main-buffer range any layer/output uses
    max_start_address: Optional[int] = None  # default: lowest KPU row any layer touches, 32768 if none
    flags: Optional[int] = None  # header flags; default bit0 = eight_bit
    arch: int = 0
    version: int = 3
    omit_last_padding: bool = False  # real files do not write the last body's alignment padding

    def derived_main_mem(self) -> int:
        end = 0
        for layer in self.layers:
            for start, size in layer.main_extents():
                end = max(end, start + size)
        for start, size in self.outputs:
            end = max(end, start + size)
        return end

    def derived_max_start(self) -> int:
        rows = [r for layer in self.layers for r, _ in layer.kpu_rows()]
        return min(rows) if rows else KPU_RAM_ROWS

    def to_bytes(self) -> bytes:
        head_len = 28 + 8 * (len(self.outputs) + len(self.layers))
        bodies, sizes = [], []
        pos = head_len
        for layer in self.layers:
            if isinstance(layer, KpuConv):
                layer._eight_bit = self.eight_bit
            body = layer.body(pos)
            padded = _align(pos + len(body), 8) - pos
            bodies.append(body + b"\0" * (padded - len(body)))
            sizes.append(padded)
            pos += padded
        if self.omit_last_padding and self.layers:
            last = self.layers[-1]
            bodies[-1] = last.body(pos - sizes[-1])
        flags = self.flags if self.flags is not None else int(bool(self.eight_bit))
        main = self.main_mem_usage if self.main_mem_usage is not None else self.derived_main_mem()
        start = self.max_start_address if self.max_start_address is not None else self.derived_max_start()
        out = bytearray(_u32s(self.version, flags, self.arch, len(self.layers), start, main, len(self.outputs)))
        for addr, size in self.outputs:
            out += _u32s(addr, size)
        for layer, size in zip(self.layers, sizes):
            out += _u32s(layer.type_id, size)
        for b in bodies:
            out += b
        return bytes(out)


# ---------------------------------------------------------------------------------------------------------------
# A small reader for tests and tools

@dataclass
class ParsedLayer:
    index: int
    type_id: int
    type_name: str
    table_offset: int  # file offset of this layer's {type, body_size} entry
    body_offset: int
    body_size: int
    body: bytes  # as present in the file (may be short for the last layer)
    conv: Optional[Dict[str, object]] = None  # K210_CONV: header offsets and decoded layer-argument fields


@dataclass
class ParsedV3:
    version: int
    flags: int
    arch: int
    layers_length: int
    max_start_address: int
    main_mem_usage: int
    output_count: int
    outputs: List[Tuple[int, int]]
    layers: List[ParsedLayer]

    HEADER_FIELDS = ("version", "flags", "arch", "layers_length", "max_start_address", "main_mem_usage",
                     "output_count")


def parse_v3(data: bytes) -> ParsedV3:
    """Walk a v3 file. Raises ValueError when the tables or bodies run past the end (the last body may end up to 7
    bytes past EOF, as in real files)."""
    if len(data) < 28:
        raise ValueError("v3 header needs 28 bytes, file has %d" % len(data))
    hdr = struct.unpack_from("<7I", data, 0)
    if hdr[0] != 3:
        raise ValueError("not a kmodel v3 file (version %d)" % hdr[0])
    n_out, n_layers = hdr[6], hdr[3]
    tables_end = 28 + 8 * (n_out + n_layers)
    if tables_end > len(data):
        raise ValueError("output/layer tables end at %d, past the file end %d" % (tables_end, len(data)))
    outputs = [struct.unpack_from("<II", data, 28 + 8 * i) for i in range(n_out)]
    pos = tables_end
    layers = []
    for i in range(n_layers):
        toff = 28 + 8 * (n_out + i)
        type_id, size = struct.unpack_from("<II", data, toff)
        last = i == n_layers - 1
        if pos + size > len(data) + (7 if last else 0):
            raise ValueError("layer %d body [%d, %d) runs past the file end %d" % (i, pos, pos + size, len(data)))
        body = data[pos:pos + size]
        conv = None
        if type_id == 10240 and len(body) >= 24:
            f, main_out, lo, wo, bo, ao = struct.unpack_from("<6I", body, 0)
            conv = dict(flags=f, main_mem_out_address=main_out, layer_offset=lo, weights_offset=wo, bn_offset=bo,
                        act_offset=ao)
            if lo + 96 <= len(data):
                conv["args"] = unpack_layer_args(data[lo:lo + 96])
        layers.append(ParsedLayer(i, type_id, LAYER_TYPES.get(type_id, "UNKNOWN"), toff, pos, size, body, conv))
        pos += size
    return ParsedV3(*hdr, outputs=[tuple(o) for o in outputs], layers=layers)

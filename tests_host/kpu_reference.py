# SPDX-License-Identifier: Apache-2.0
"""NumPy reference of the KPU and of the kmodel v3 CPU layers, written from docs/kpu-reference.md (sections 2, 4,
5, 8) and NOT from the C emulator: the tests compare the two bit for bit.

Everything starts from HIGH-LEVEL layer fields (shapes, args, tables), never from packed words.

Integer arithmetic: the convolution sums fit int64 comfortably (|alu| < 2^50 for every legal layer); batch norm
and the activation are computed on Python ints (object arrays), so they are exact for any input and
:func:`kpu_bn_act` can report whether an intermediate left the int64 range (a C implementation cannot be expected
to agree there, so the tests keep their cases inside it).
"""
from __future__ import annotations

import numpy as np

INT64_MAX = (1 << 63) - 1

ROUND_HALF_EVEN, ROUND_HALF_UP, ROUND_SDK_CARRY, ROUND_NNCASE1 = 0, 1, 2, 3
CONV_OFFSET_PER_CHANNEL, CONV_OFFSET_ONCE = 0, 1
MEAN_BORDER_REPLICATE, MEAN_BORDER_IN_RANGE = 0, 1


# ---------------------------------------------------------------------------------------------------------------
# Rounding shifts on exact integers

def round_shift_int(v: int, s: int, mode: int) -> int:
    """v / 2^s rounded per `mode` (Python ints, exact for any size). s == 0 returns v.

    HALF_EVEN: nearest, ties to even. HALF_UP: (v + 2^(s-1)) >> s. SDK_CARRY: kpu_carry_shift of the SDK
    (section 2): v >>= s-1; odd -> (v >> 1) + 1 if v >= 0 else (v >> 1) - 1; even -> v >> 1. NNCASE1: nncase 1.x's
    carry_shift<Banker> (kmodel-v5.md 4.3 item 5): q = floor, f = low s bits, h = 2^(s-1), sign of v; q if f < h,
    q + sign if f > h, on a tie q + sign when q is odd."""
    if s <= 0:
        return v
    if mode == ROUND_HALF_EVEN:
        q = v >> s
        r = v - (q << s)
        half = 1 << (s - 1)
        return q + (1 if (r > half or (r == half and (q & 1))) else 0)
    if mode == ROUND_HALF_UP:
        return (v + (1 << (s - 1))) >> s
    if mode == ROUND_NNCASE1:
        q = v >> s
        f = v - (q << s)
        half = 1 << (s - 1)
        sign = -1 if v < 0 else 1
        return q + (sign if (f > half or (f == half and (q & 1))) else 0)
    if mode == ROUND_SDK_CARRY:
        v >>= s - 1
        if v & 1:
            return (v >> 1) - 1 if v < 0 else (v >> 1) + 1
        return v >> 1
    raise ValueError("unknown rounding mode %r" % mode)


_round_shift_vec = np.frompyfunc(round_shift_int, 3, 1)


def round_shift(v, s, mode):
    """Element-wise round_shift_int on arrays (object dtype result)."""
    return _round_shift_vec(np.asarray(v, dtype=object), np.asarray(s, dtype=object), mode)


# ---------------------------------------------------------------------------------------------------------------
# KPU RAM layout (section 5)

def row_layout(width):
    """(groups, row_len, row_pitch)."""
    if width <= 16:
        return 4, 1, 16
    if width <= 32:
        return 2, 1, 32
    return 1, -(-width // 64), 64


def layout_offsets(c, h, w):
    """Byte offsets (from the map's first row) of every (c, y, x), as an int64 [c, h, w] array."""
    groups, row_len, pitch = row_layout(w)
    cc = np.arange(c)[:, None, None]
    yy = np.arange(h)[None, :, None]
    xx = np.arange(w)[None, None, :]
    return (cc // groups) * row_len * h * 64 + (cc % groups) * pitch + yy * row_len * 64 + xx


def layout_rows(c, h, w):
    groups, row_len, _ = row_layout(w)
    return row_len * h * (-(-c // groups))


def kpu_upload(ram: np.ndarray, row: int, img: np.ndarray) -> None:
    """Write a planar u8 [c, h, w] map into the KPU RAM image `ram` (u8, 2 MiB) at 64-byte row `row`."""
    c, h, w = img.shape
    ram[row * 64 + layout_offsets(c, h, w)] = img


def kpu_download(ram, row: int, c: int, h: int, w: int) -> np.ndarray:
    """Read a [c, h, w] map in KPU layout at `row` (ram: bytes or u8 array) back to planar u8."""
    ram = np.frombuffer(ram, dtype=np.uint8) if isinstance(ram, (bytes, bytearray, memoryview)) else ram
    return ram[row * 64 + layout_offsets(c, h, w)].copy()


# ---------------------------------------------------------------------------------------------------------------
# One KPU layer (section 4)

def kpu_conv(x, weights, kernel, depthwise, pad_value, arg_x, shr_x, arg_w, shr_w, arg_add,
             offset_mode=CONV_OFFSET_PER_CHANNEL):
    """The convolution accumulator `alu` [oc, h, w] (int64), stride 1, 'same' size, padded taps = pad_value.

    Per output channel, per input channel ic (only ic == oc when depthwise):
        sum(x*w) + ((arg_x * sum(x)) >> shr_x) + ((arg_w * sum(w)) >> shr_w) + arg_add
    summed over ic (PER_CHANNEL, the chip), or with the two offset terms floored once over all input channels'
    sums and arg_add added once per input channel (ONCE, nncase's emulators)."""
    x = np.asarray(x, dtype=np.int64)
    ic, h, w = x.shape
    k = kernel
    p = (k - 1) // 2
    xp = np.full((ic, h + 2 * p, w + 2 * p), int(pad_value), dtype=np.int64)
    xp[:, p:p + h, p:p + w] = x
    taps = np.stack([xp[:, ky:ky + h, kx:kx + w] for ky in range(k) for kx in range(k)], axis=1)  # [ic,kk,h,w]
    sum_x = taps.sum(axis=1)  # [ic, h, w]
    wt = np.asarray(weights, dtype=np.int64)
    if depthwise:
        wt = wt.reshape(ic, k * k)  # [c, kk]
        xw = np.einsum("ct,cthw->chw", wt, taps)
        sum_w = wt.sum(axis=1)  # [c]
        # one input channel per output channel: both offset modes compute the same thing
        xterm = (arg_x * sum_x) >> shr_x
        wterm = ((arg_w * sum_w) >> shr_w)[:, None, None]
        return xw + xterm + wterm + arg_add
    oc = wt.shape[0]
    wt = wt.reshape(oc, ic, k * k)
    xw = np.einsum("oit,ithw->ohw", wt, taps)
    sum_w = wt.sum(axis=2)  # [oc, ic]
    if offset_mode == CONV_OFFSET_PER_CHANNEL:
        xterm = ((arg_x * sum_x) >> shr_x).sum(axis=0)[None]  # same for every output channel
        wterm = ((arg_w * sum_w) >> shr_w).sum(axis=1)[:, None, None]
    else:
        xterm = ((arg_x * sum_x.sum(axis=0)) >> shr_x)[None]
        wterm = ((arg_w * sum_w.sum(axis=1)) >> shr_w)[:, None, None]
    return xw + xterm + wterm + ic * arg_add


def kpu_bn_act(alu, bn_mul, bn_add, bn_shift, x_start, y_mul, act_shift, act_bias, round_mode=ROUND_HALF_EVEN):
    """Batch norm then the 16-segment activation, exact. Returns (u8 [oc, h, w], max |intermediate|).

    y = ((alu * mul[c]) >> shift[c]) + add[c]  (floor shift)
    i = last segment with y > x_start[i], else 0
    out = clamp(round_shift((y - x_start[i]) * y_mul[i], shift[i]) + bias[i], 0, 255)"""
    a = np.asarray(alu).astype(object)
    oc = a.shape[0]
    mul = np.array([int(v) for v in bn_mul], dtype=object).reshape(oc, 1, 1)
    add = np.array([int(v) for v in bn_add], dtype=object).reshape(oc, 1, 1)
    sh = np.array([int(v) for v in bn_shift], dtype=object).reshape(oc, 1, 1)
    prod = a * mul
    y = (prod >> sh) + add
    seg = np.zeros(a.shape, dtype=np.int64)
    for i in range(1, 16):
        seg[y > int(x_start[i])] = i  # later (higher) segments override: the last match wins
    xs = np.array([int(v) for v in x_start], dtype=object)[seg]
    ym = np.array([int(v) for v in y_mul], dtype=object)[seg]
    ash = np.array([int(v) for v in act_shift], dtype=object)[seg]
    bias = np.array([int(v) for v in act_bias], dtype=object)[seg]
    t = (y - xs) * ym
    v = round_shift(t, ash, round_mode) + bias
    out = np.clip(v.astype(object), 0, 255).astype(np.uint8)
    mags = [np.abs(arr).max() if arr.size else 0 for arr in (prod, y, y - xs, t)]
    return out, int(max(mags))


_POOL = {  # pool_type: (window, stride, op)
    0: (1, 1, "bypass"), 1: (2, 2, "max"), 2: (2, 2, "mean"), 3: (4, 4, "max"), 4: (4, 4, "mean"),
    5: (2, 2, "pick00"), 6: (2, 2, "pick01"), 7: (4, 4, "pick00"), 8: (2, 1, "mean"), 9: (2, 1, "max"),
}


def pool_out_size(pool_type, w, h):
    _, s, _ = _POOL[pool_type]
    return w // s, h // s


def kpu_pool(a, pool_type, mean_border=MEAN_BORDER_REPLICATE):
    """Pool u8 [c, h, w] activations. Output size in // stride; window at (oy*stride, ox*stride).
    max: out-of-range taps count as 0. mean: REPLICATE clamps taps to the edge and divides by f*f; IN_RANGE
    averages the in-range taps only; both truncate."""
    win, st, op = _POOL[pool_type]
    a = np.asarray(a, dtype=np.int64)
    c, h, w = a.shape
    oh, ow = h // st, w // st
    if op == "bypass":
        return a.astype(np.uint8)
    if op == "pick00":
        return a[:, 0:oh * st:st, 0:ow * st:st].astype(np.uint8)
    if op == "pick01":
        return a[:, 0:oh * st:st, 1:ow * st:st].astype(np.uint8)
    oy = np.arange(oh) * st
    ox = np.arange(ow) * st
    acc = np.zeros((c, oh, ow), dtype=np.int64)
    cnt = np.zeros((oh, ow), dtype=np.int64)
    for ky in range(win):
        for kx in range(win):
            iy, ix = oy + ky, ox + kx
            inside = (iy < h)[:, None] & (ix < w)[None, :]
            vals = a[:, np.minimum(iy, h - 1)[:, None], np.minimum(ix, w - 1)[None, :]]  # edge-clamped
            if op == "max":
                acc = np.maximum(acc, np.where(inside[None], vals, 0))
            elif mean_border == MEAN_BORDER_REPLICATE:
                acc += vals
            else:
                acc += np.where(inside[None], vals, 0)
                cnt += inside
    if op == "max":
        return acc.astype(np.uint8)
    div = win * win if mean_border == MEAN_BORDER_REPLICATE else cnt[None]
    return (acc // div).astype(np.uint8)


def kpu_layer(x, conv, round_mode=ROUND_HALF_EVEN, offset_mode=CONV_OFFSET_PER_CHANNEL,
              mean_border=MEAN_BORDER_REPLICATE):
    """One whole KPU layer from a high-level description (any object with the attributes of
    openkpu.kmodel_writer.KpuConv: kernel, weights, depthwise, pad_value, arg_*, shr_*, bn_*, act, pool_type).
    Returns (u8 [oc, oh, ow], max |intermediate|)."""
    alu = kpu_conv(x, conv.weights, conv.kernel, conv.depthwise, conv.pad_value, conv.arg_x, conv.shr_x,
                   conv.arg_w, conv.shr_w, conv.arg_add, offset_mode)
    act = conv.act
    y, mag = kpu_bn_act(alu, conv.bn_mul, conv.bn_add, conv.bn_shift, act.x_start, act.y_mul, act.shift,
                        act.bias, round_mode)
    mag = max(mag, int(np.abs(alu).max()))
    return kpu_pool(y, conv.pool_type, mean_border), mag


# ---------------------------------------------------------------------------------------------------------------
# float32 helpers

def fma_f32(a, b, c):
    """Correctly rounded float32 fused multiply-add a*b + c (like C's fmaf), element-wise.

    Method (no fmaf in NumPy, no math.fma before Python 3.13):
    1. p = a*b in float64 is EXACT: two 24-bit significands give at most 48 bits, and float64's exponent range
       holds any product of two float32s (even subnormal ones: 2^-298 is a normal float64).
    2. s = fl64(p + c) and its rounding error e = (p + c) - s, which is exactly representable, by Knuth's TwoSum
       (exact in round-to-nearest when nothing overflows). So p + c == s + e exactly.
    3. Round s + e to float32 correctly via ROUND-TO-ODD: if e != 0 and s's last significand bit is even, replace
       s by its float64 neighbour in the direction of e (the exact value lies strictly between the two, and one of
       them is odd). Rounding to odd at 53 bits followed by round-to-nearest-even at 24 bits equals a single
       round-to-nearest-even of the exact value, because 53 >= 24 + 2 (Boldo & Melquiond, "Emulation of FMA and
       correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008). Plain float64 addition
       then a cast would round twice, which can differ when the first rounding lands exactly on a float32 tie.
    Validated against exact fractions.Fraction arithmetic in test_kpu_bitexact.py."""
    a = np.asarray(a, dtype=np.float32).astype(np.float64)
    b = np.asarray(b, dtype=np.float32).astype(np.float64)
    c = np.asarray(c, dtype=np.float32).astype(np.float64)
    p = a * b
    s = p + c
    bb = s - p
    e = (p - (s - bb)) + (c - bb)
    even = (s.view(np.int64) & 1) == 0
    fix = (e != 0) & even
    if np.any(fix):
        s = np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def roundf_f32(x):
    """C roundf: nearest, ties away from zero. Done in float64, where |x| + 0.5 is exact for float32 x."""
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.float32)


def float_act(y, act):
    """v3 float activation (0 linear, 1 relu, 2 relu6) as the SDK writes it: `if (v < 0) v = 0` (keeps -0.0)."""
    y = np.asarray(y, dtype=np.float32)
    if act == 1:
        return np.where(y < 0, np.float32(0), y).astype(np.float32)
    if act == 2:
        return np.where(y < 0, np.float32(0), np.where(y > 6, np.float32(6), y)).astype(np.float32)
    return y


# ---------------------------------------------------------------------------------------------------------------
# v3 CPU layers (section 2). Float tensors are float32 arrays, quantized ones u8.

def ref_add(a, b):
    return (np.asarray(a, np.float32) + np.asarray(b, np.float32)).astype(np.float32)


def ref_quantized_add(a, b, in_a_offset, in_a_mul, in_a_shift, in_b_offset, in_b_mul, in_b_shift, out_offset,
                      out_mul, out_shift, round_mode=ROUND_SDK_CARRY):
    """Equal shifts: ((a+off_a)*mul_a + (b+off_b)*mul_b) >> sh; else each operand >> its own shift before the add
    (plain arithmetic shifts). Then round_shift(v*out_mul, out_shift) + out_offset, clamp 0..255."""
    a = np.asarray(a, dtype=object)
    b = np.asarray(b, dtype=object)
    va = (a + in_a_offset) * in_a_mul
    vb = (b + in_b_offset) * in_b_mul
    if in_a_shift == in_b_shift:
        v = (va + vb) >> in_a_shift
    else:
        v = (va >> in_a_shift) + (vb >> in_b_shift)
    v = round_shift(v * out_mul, out_shift, round_mode) + out_offset
    return np.clip(v, 0, 255).astype(np.uint8)


def ref_global_pool(x, kernel_size, channels, op):
    """x: flat [channels * kernel_size]; op 'max' / 'avg' (float32 sequential sum / kernel_size)."""
    x = np.asarray(x).reshape(channels, kernel_size)
    if op == "max":
        return x.max(axis=1)
    s = np.zeros(channels, np.float32)
    for i in range(kernel_size):
        s = (s + x[:, i].astype(np.float32)).astype(np.float32)
    return (s / np.float32(kernel_size)).astype(np.float32)


def pool2d_windows(x, out_w, out_h, kernel_w, kernel_h, stride_w, stride_h, padding_w, padding_h):
    """Yield (tap values [c, out_h, out_w], in-range mask [out_h, out_w]) for every tap (ky, kx) in order."""
    c, h, w = x.shape
    oy = np.arange(out_h) * stride_h - padding_h
    ox = np.arange(out_w) * stride_w - padding_w
    for ky in range(kernel_h):
        for kx in range(kernel_w):
            iy, ix = oy + ky, ox + kx
            inside = ((iy >= 0) & (iy < h))[:, None] & ((ix >= 0) & (ix < w))[None, :]
            vals = x[:, np.clip(iy, 0, h - 1)[:, None], np.clip(ix, 0, w - 1)[None, :]]
            yield vals, inside


def ref_max_pool2d(x, out_w, out_h, kernel_w, kernel_h, stride_w, stride_h, padding_w, padding_h, act=0,
                   quantized=False):
    """Out-of-range taps are skipped. Float: running max from -FLT_MAX. Quantized: running max from 0 (section 2)."""
    x = np.asarray(x)
    if quantized:
        acc = np.zeros((x.shape[0], out_h, out_w), np.uint8)
    else:
        acc = np.full((x.shape[0], out_h, out_w), -np.finfo(np.float32).max, np.float32)
    for vals, inside in pool2d_windows(x, out_w, out_h, kernel_w, kernel_h, stride_w, stride_h, padding_w,
                                       padding_h):
        acc = np.where(inside[None], np.maximum(acc, vals), acc)
    return acc if quantized else float_act(acc, act)


def ref_average_pool2d(x, out_w, out_h, kernel_w, kernel_h, stride_w, stride_h, padding_w, padding_h, act=0,
                       quantized=False):
    """Average of the in-range taps. Float: float32 sum in tap order / count. Quantized: integer sum / count."""
    x = np.asarray(x)
    c = x.shape[0]
    cnt = np.zeros((out_h, out_w), np.int64)
    if quantized:
        acc = np.zeros((c, out_h, out_w), np.int64)
    else:
        acc = np.zeros((c, out_h, out_w), np.float32)
    for vals, inside in pool2d_windows(x, out_w, out_h, kernel_w, kernel_h, stride_w, stride_h, padding_w,
                                       padding_h):
        if quantized:
            acc += np.where(inside[None], vals.astype(np.int64), 0)
        else:
            acc = np.where(inside[None], (acc + vals).astype(np.float32), acc)
        cnt += inside
    if quantized:
        return acc, cnt  # the integer division rule is the caller's (see test_v3_cpu_layers.py)
    return float_act((acc / cnt[None].astype(np.float32)).astype(np.float32), act)


def ref_quantize(x, scale, bias):
    """q = clamp(roundf((x - bias) * (1.0f / scale)), 0, 255), every step in float32."""
    x = np.asarray(x, np.float32)
    r = np.float32(1) / np.float32(scale)
    m = ((x - np.float32(bias)).astype(np.float32) * r).astype(np.float32)
    q = roundf_f32(m)
    return np.clip(q, 0, 255).astype(np.uint8)


def ref_dequantize(q, scale, bias):
    """x = fmaf(q, scale, bias)."""
    q = np.asarray(q, np.uint8).astype(np.float32)
    return fma_f32(q, np.float32(scale), np.float32(bias))


def ref_channelwise_dequantize(q, channels, channel_size, scales, biases):
    q = np.asarray(q, np.uint8).reshape(channels, channel_size).astype(np.float32)
    s = np.asarray(scales, np.float32)[:, None]
    b = np.asarray(biases, np.float32)[:, None]
    return fma_f32(q, s, b).reshape(-1)


def ref_requantize(q, table):
    return np.asarray(table, np.uint8)[np.asarray(q, np.uint8)]


def ref_l2_normalization(x):
    x = np.asarray(x, np.float32)
    s = np.float32(0)
    for v in x:
        s = fma_f32(v, v, s)[()]
    s = max(s, np.float32(1e-10))
    inv = np.float32(1) / np.sqrt(np.float32(s))
    return (x * inv).astype(np.float32)


def ref_softmax(x):
    """Running max from FLT_MIN (not -inf), e = exp(x - max), sequential float32 sum, e / sum."""
    x = np.asarray(x, np.float32)
    m = np.float32(np.finfo(np.float32).tiny)
    for v in x:
        if v > m:
            m = v
    e = np.exp((x - m).astype(np.float32)).astype(np.float32)
    s = np.float32(0)
    for v in e:
        s = np.float32(s + v)
    return (e / s).astype(np.float32)


def ref_logistic(x):
    x = np.asarray(x, np.float32)
    return (np.float32(1) / (np.float32(1) + np.exp(-x).astype(np.float32))).astype(np.float32)


def ref_concat(main: bytes, inputs):
    return b"".join(main[s:s + n] for s, n in inputs)


def ref_fully_connected(x, weights, bias, act):
    """Per output: s = 0.0f; s = fmaf(x[i], w[o][i], s) for i in order; y = s + bias[o]; then the activation."""
    x = np.asarray(x, np.float32)
    w = np.asarray(weights, np.float32)
    s = np.zeros(w.shape[0], np.float32)
    for i in range(w.shape[1]):
        s = fma_f32(x[i], w[:, i], s)
    return float_act((s + np.asarray(bias, np.float32)).astype(np.float32), act)


def ref_flatten(x, width, height, channels):
    """NCHW -> NHWC."""
    return np.asarray(x).reshape(channels, height, width).transpose(1, 2, 0).reshape(-1)


def ref_resize_nearest(x, in_w, in_h, channels, out_w, out_h):
    """Source index min(floor(o * in / out), in - 1), exact integers."""
    x = np.asarray(x).reshape(channels, in_h, in_w)
    sy = np.minimum(np.arange(out_h) * in_h // out_h, in_h - 1)
    sx = np.minimum(np.arange(out_w) * in_w // out_w, in_w - 1)
    return x[:, sy[:, None], sx[None, :]].reshape(-1)


def ref_add_padding(ram: np.ndarray, row: int, channels_bytes) -> None:
    """Channel c's byte -> pixel (0, 0) of a 4x4 map (groups 4, pitch 16) at `row`; other bytes untouched."""
    v = np.asarray(channels_bytes, np.uint8)
    c = np.arange(v.size)
    ram[row * 64 + (c // 4) * 4 * 64 + (c % 4) * 16] = v


def ref_remove_padding(src, channels):
    return np.asarray(src, np.uint8)[np.arange(channels) * 16]

"""Independent NumPy references for the kmodel v4 (nncase v0.2.0-beta4) ops, written from the op semantics
(docs/kpu-reference.md section 6), not from the C code. Integer ops are exact; float ops are computed in float64
and rounded to float32 at the end (the tests compare those with a tolerance: the C core uses fmaf in nncase's
loop order, like the K210 build of nncase).

Shapes are NCHW tuples unless the name says NHWC. Quantized multiply-shift rounding: 'half_up' (beta4, default),
'sdk_carry', 'half_even'."""
import numpy as np


def mul_shift(v, mul, shift, mode="half_up"):
    """(int64 v * mul) >> (shift & 0xFF) with rounding; result wrapped to int32."""
    p = np.asarray(v, dtype=np.int64) * np.int64(mul)
    s = int(shift) & 0xFF
    if s == 0:
        r = p
    elif mode == "half_up":
        r = (p + (np.int64(1) << (s - 1))) >> s
    elif mode == "sdk_carry":
        t = p >> (s - 1)
        odd = (t & 1) == 1
        r = np.where(odd, np.where(t < 0, (t >> 1) - 1, (t >> 1) + 1), t >> 1)
    else:  # half_even
        fl = p >> s
        frac = p - (fl << s)
        half = np.int64(1) << (s - 1)
        r = np.where((frac > half) | ((frac == half) & ((fl & 1) == 1)), fl + 1, fl)
    return r.astype(np.int64).astype(np.uint32).astype(np.int32)  # wrap like a C++ int32 cast


def _bcast_index(shape_in, out_shape):
    idx = np.indices(out_shape).reshape(4, -1)
    return tuple(np.where(idx[k] < shape_in[k], idx[k], 0) for k in range(4))


def binary(a, b, op, sa, sb, so, lo=-np.inf, hi=np.inf):
    a = np.asarray(a, np.float64).reshape(sa)
    b = np.asarray(b, np.float64).reshape(sb)
    ia, ib = _bcast_index(sa, so), _bcast_index(sb, so)
    x, y = a[ia], b[ib]
    r = [x + y, x - y, x * y, x / y, np.minimum(x, y), np.maximum(x, y)][op]
    return np.clip(r, lo, hi).astype(np.float32).reshape(so)


def _int_op(op, a, b):
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    if op == 0:
        r = a + b
    elif op == 1:
        r = a - b
    elif op == 2:
        r = a * b
    elif op == 3:
        # (a + b / 2) / b in int32: the sum wraps as the K210's 32-bit add does
        n = (a + np.trunc(b / 2).astype(np.int64)).astype(np.uint32).astype(np.int32).astype(np.int64)
        safe = np.where(b == 0, 1, b)
        q = np.trunc(n / safe).astype(np.int64)
        r = np.where(b == 0, -1, q)
    elif op == 4:
        r = np.minimum(a, b)
    else:
        r = np.maximum(a, b)
    return r.astype(np.uint32).astype(np.int32)


def quantized_binary(a, b, op, sa, sb, so, p, mode="half_up"):
    """p = (a_off, a_mul, a_shift, b_off, b_mul, b_shift, out_off, out_mul, out_shift)"""
    a = np.asarray(a, np.int64).reshape(sa)
    b = np.asarray(b, np.int64).reshape(sb)
    x = a[_bcast_index(sa, so)]
    y = b[_bcast_index(sb, so)]
    x = mul_shift(x + p[0], p[1], p[2], mode)
    y = mul_shift(y + p[3], p[4], p[5], mode)
    o = mul_shift(_int_op(op, x, y), p[7], p[8], mode).astype(np.int64) + p[6]
    return np.clip(o, 0, 255).astype(np.uint8).reshape(so)


def concat(inputs, dims, inner, outer):
    out = []
    for oc in range(outer):
        for x, d in zip(inputs, dims):
            size = inner * d
            out.append(np.frombuffer(bytes(x), np.uint8)[oc * size:(oc + 1) * size])
    return np.concatenate(out).tobytes()


def _out_size(size, f, s, d, pb, pa):
    return (size + pb + pa - ((f - 1) * d + 1) + s) // s


def _taps(size_in, out, f, s, d, pb):
    """for each output position, the list of (k, in_index) taps in range"""
    res = []
    for o in range(out):
        origin = o * s - pb
        res.append([(k, origin + d * k) for k in range(f) if 0 <= origin + d * k < size_in])
    return res


def conv2d(x, w, bias, in_shape, groups, oc, pad_h, pad_w, fh, fw, sh, sw, dh, dw, lo=-np.inf, hi=np.inf,
           quant=None, mode="half_up"):
    """NCHW grouped conv. quant = (input_offset, filter_offset, out_mul, out_shift, out_offset) for u8."""
    n, ic, h, wd = in_shape
    oh = _out_size(h, fh, sh, dh, *pad_h)
    ow = _out_size(wd, fw, sw, dw, *pad_w)
    dt = np.int64 if quant else np.float64
    x = np.asarray(x, dt).reshape(in_shape)
    w = np.asarray(w, dt).reshape(oc, ic // groups, fh, fw)
    if quant:
        x = x + quant[0]
        w = w + quant[1]
    out = np.zeros((n, oc, oh, ow), dt)
    g_ic, g_oc = ic // groups, oc // groups
    ty, tx = _taps(h, oh, fh, sh, dh, pad_h[0]), _taps(wd, ow, fw, sw, dw, pad_w[0])
    for o in range(oc):
        g = o // g_oc
        xs = x[:, g * g_ic:(g + 1) * g_ic]
        for oy in range(oh):
            for ox in range(ow):
                acc = np.zeros(n, dt) + bias[o]
                for ky, iy in ty[oy]:
                    for kx, ix in tx[ox]:
                        acc = acc + (xs[:, :, iy, ix] * w[o, :, ky, kx]).sum(axis=1)
                out[:, o, oy, ox] = acc
    if quant:
        r = mul_shift(out.astype(np.uint32).astype(np.int32), quant[2], quant[3], mode).astype(np.int64) + quant[4]
        return np.clip(r, 0, 255).astype(np.uint8)
    return np.clip(out, lo, hi).astype(np.float32)


def conv2d_transpose(x, w, in_shape, out_shape, groups, pad_h, pad_w, fh, fw, sh, sw, dh, dw, lo=-np.inf, hi=np.inf):
    """nncase v0.2 ignores the bias of conv2d_transpose."""
    n, ic, h, wd = in_shape
    oc = out_shape[1]
    x = np.asarray(x, np.float64).reshape(in_shape)
    w = np.asarray(w, np.float64).reshape(oc, ic // groups, fh, fw)
    out = np.zeros(out_shape, np.float64)
    g_ic, g_oc = ic // groups, oc // groups
    for g in range(groups):
        for i in range(g_ic):
            for iy in range(h):
                for ix in range(wd):
                    for o in range(g_oc):
                        for ky in range(fh):
                            oy = iy * sh - pad_h[0] + dh * ky
                            if not 0 <= oy < out_shape[2]:
                                continue
                            for kx in range(fw):
                                ox = ix * sw - pad_w[0] + dw * kx
                                if 0 <= ox < out_shape[3]:
                                    out[:, g * g_oc + o, oy, ox] += x[:, g * g_ic + i, iy, ix] * w[g * g_oc + o, i, ky, kx]
    return np.clip(out, lo, hi).astype(np.float32)


def dequantize(q, zero_point, scale):
    s = np.float32(1.0) / np.float32(scale)
    z = np.float32(-zero_point) * s
    return (np.asarray(q, np.float64) * np.float64(s) + np.float64(z)).astype(np.float32)


def quantize(x, zero_point, scale):
    """pairs round half to even (fcvt.w.s rne), an odd last element rounds half away from zero (roundf)."""
    v = (np.asarray(x, np.float32).astype(np.float64) * np.float64(np.float32(scale)) + zero_point).astype(np.float32)
    r = np.rint(v)
    if len(v) % 2:
        t = v[-1]
        r[-1] = np.sign(t) * np.floor(np.abs(t) + np.float32(0.5))
    return np.clip(r, 0, 255).astype(np.uint8)


def matmul(a, b, bias, rows, cols, bcols, lo=-np.inf, hi=np.inf):
    a = np.asarray(a, np.float64).reshape(rows, cols)
    b = np.asarray(b, np.float64).reshape(cols, bcols)
    return np.clip(a @ b + np.asarray(bias, np.float64), lo, hi).astype(np.float32)


def quantized_matmul(a, b, bias, rows, cols, bcols, a_off, b_off, mul, shift, out_off, mode="half_up"):
    a = np.asarray(a, np.int64).reshape(rows, cols) + a_off
    b = np.asarray(b, np.int64).reshape(cols, bcols) + b_off
    acc = (a @ b + np.asarray(bias, np.int64)).astype(np.uint32).astype(np.int32)
    return np.clip(mul_shift(acc, mul, shift, mode).astype(np.int64) + out_off, 0, 255).astype(np.uint8)


def pad(x, in_shape, paddings, value, dtype):
    x = np.asarray(x, dtype).reshape(in_shape)
    out_shape = [in_shape[k] + paddings[k][0] + paddings[k][1] for k in range(4)]
    out = np.full(out_shape, value, dtype)
    src = tuple(slice(max(0, -p[0]), in_shape[k] - max(0, -p[1])) for k, p in enumerate(paddings))
    dst = tuple(slice(max(0, p[0]), out_shape[k] - max(0, p[1])) for k, p in enumerate(paddings))
    out[dst] = x[src]
    return out


def reduce(x, op, in_shape, out_shape, init):
    x = np.asarray(x, np.float64).reshape(in_shape)
    axes = tuple(k for k in range(4) if out_shape[k] == 1 and in_shape[k] != 1)
    if op == 1:
        r = np.minimum(np.min(x, axis=axes, keepdims=True), init)
    elif op == 2:
        r = np.maximum(np.max(x, axis=axes, keepdims=True), init)
    else:
        r = np.sum(x, axis=axes, keepdims=True) + init
        if op == 0:
            r = r * (np.prod(out_shape) / np.prod(in_shape))
    return np.broadcast_to(r, out_shape).astype(np.float32)


def reduce_window2d(x, op, in_shape, pad_h, pad_w, fh, fw, sh, sw, dh, dw, init, lo=-np.inf, hi=np.inf, nhwc=False):
    x = np.asarray(x, np.float64).reshape(in_shape)
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    oh, ow = _out_size(h, fh, sh, dh, *pad_h), _out_size(w, fw, sw, dw, *pad_w)
    out = np.zeros((n, c, oh, ow))
    ty, tx = _taps(h, oh, fh, sh, dh, pad_h[0]), _taps(w, ow, fw, sw, dw, pad_w[0])
    for oy in range(oh):
        for ox in range(ow):
            vals = [x[:, :, iy, ix] for _, iy in ty[oy] for _, ix in tx[ox]]
            k = len(vals)
            if op == 1:
                v = np.minimum.reduce(vals + [np.full((n, c), init)])
            elif op == 2:
                v = np.maximum.reduce(vals + [np.full((n, c), init)])
            else:
                v = sum(vals) + init
                if op == 0:
                    v = v / k
            out[:, :, oy, ox] = v
    out = np.clip(out, lo, hi)
    if nhwc:
        out = out.transpose(0, 2, 3, 1)
    return out.astype(np.float32)


def resize_nearest(x, in_shape, out_h, out_w, dtype):
    x = np.asarray(x, dtype).reshape(in_shape)
    hs, ws = np.float32(in_shape[2]) / np.float32(out_h), np.float32(in_shape[3]) / np.float32(out_w)
    ys = np.minimum(np.floor(np.arange(out_h, dtype=np.float32) * hs).astype(int), in_shape[2] - 1)
    xs = np.minimum(np.floor(np.arange(out_w, dtype=np.float32) * ws).astype(int), in_shape[3] - 1)
    return x[:, :, ys][:, :, :, xs]


def resize_bilinear(x, in_shape, out_h, out_w, align_corners=False):
    x = np.asarray(x, np.float64).reshape(in_shape)
    hs, ws = np.float32(in_shape[2]) / np.float32(out_h), np.float32(in_shape[3]) / np.float32(out_w)
    if align_corners and out_h > 1:
        hs = np.float32(in_shape[2] - 1) / np.float32(out_h - 1)
    if align_corners and out_w > 1:
        ws = np.float32(in_shape[3] - 1) / np.float32(out_w - 1)
    out = np.zeros(tuple(in_shape[:2]) + (out_h, out_w))
    for oy in range(out_h):
        fy = np.float32(oy) * hs
        y0 = int(np.floor(fy))
        y1 = min(y0 + 1, in_shape[2] - 1)
        for ox in range(out_w):
            fx = np.float32(ox) * ws
            x0 = int(np.floor(fx))
            x1 = min(x0 + 1, in_shape[3] - 1)
            dy, dx = float(fy) - y0, float(fx) - x0
            out[:, :, oy, ox] = (x[:, :, y0, x0] * (1 - dy) * (1 - dx) + x[:, :, y1, x0] * dy * (1 - dx) +
                                 x[:, :, y0, x1] * (1 - dy) * dx + x[:, :, y1, x1] * dy * dx)
    return out.astype(np.float32)


def softmax(x, inner, outer, beta=1.0):
    x = np.asarray(x, np.float64).reshape(outer, inner)
    e = np.exp((x - x.max(axis=1, keepdims=True)) * beta)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def transpose(x, in_shape, perm, dtype):
    return np.ascontiguousarray(np.asarray(x, dtype).reshape(in_shape).transpose(perm))


def strided_slice(x, in_shape, begin, end, strides, dtype):
    x = np.asarray(x, dtype).reshape(in_shape)
    sl = tuple(slice(b, e if e >= 0 or s > 0 else None, s) for b, e, s in zip(begin, end, strides))
    return np.ascontiguousarray(x[sl])


UNARY = [np.abs, np.ceil, np.cos, np.exp, np.floor, np.log, np.negative, lambda a: 1 / np.sqrt(a), np.sin,
         np.square]


def unary(x, op):
    with np.errstate(all="ignore"):
        return UNARY[op](np.asarray(x, np.float64)).astype(np.float32)


def table_lookup1d(x, table):
    return np.asarray(table, np.uint8)[np.asarray(x, np.uint8)]


def nnil(x, program):
    """Evaluate an nnil program per element (float64 then float32)."""
    import struct
    out = []
    for v in np.asarray(x, np.float64):
        st, pc = [], 0
        while True:
            op = program[pc]
            pc += 1
            if op == 0x00:
                pass
            elif op == 0x01:
                st.append(st[-1])
            elif op == 0x02:
                st.pop()
            elif op == 0x03:
                st.append(v)
            elif op == 0x04:
                st.append(0.0)
            elif op == 0x05:
                st.append(1.0)
            elif op == 0x06:
                st.append(struct.unpack_from("<f", bytes(program), pc)[0])
                pc += 4
            elif 0x20 <= op <= 0x29:
                with np.errstate(all="ignore"):
                    st.append(float(UNARY[op - 0x20](np.float64(st.pop()))))
            elif 0x40 <= op <= 0x45:
                b, a = st.pop(), st.pop()
                st.append([a + b, a - b, a * b, a / b if b else np.inf, min(a, b), max(a, b)][op - 0x40])
            elif op == 0x80:
                hi, lo, a = st.pop(), st.pop(), st.pop()
                st.append(min(max(a, lo), hi))
            elif op == 0xA0:
                out.append(st.pop())
                break
    return np.asarray(out, np.float64).astype(np.float32)


def cpu_conv2d_nhwc(x, w, bias, in_shape, oc, pad_h, pad_w, fh, fw, sh, sw, dh, dw, lo=-np.inf, hi=np.inf,
                    depthwise=False, quant=None, mode="half_up"):
    """NHWC. weights [oc][fh][fw][ic] (depthwise [c][fh][fw]); quant offsets are SUBTRACTED (cpu kernels)."""
    n, h, wd, ic = in_shape
    xs = np.asarray(x, np.int64 if quant else np.float64).reshape(in_shape).transpose(0, 3, 1, 2)
    if depthwise:
        wt = np.asarray(w, np.int64 if quant else np.float64).reshape(ic, 1, fh, fw)
        groups, oc = ic, ic
    else:
        wt = np.asarray(w, np.int64 if quant else np.float64).reshape(oc, fh, fw, ic).transpose(0, 3, 1, 2)
        groups = 1
    nchw = (n, ic, h, wd)
    if quant:
        q = (-quant[0], -quant[1], quant[2], quant[3], quant[4])
        r = conv2d(xs.ravel(), wt.ravel(), bias, nchw, groups, oc, pad_h, pad_w, fh, fw, sh, sw, dh, dw, quant=q,
                   mode=mode)
    else:
        r = conv2d(xs.ravel(), wt.ravel(), bias, nchw, groups, oc, pad_h, pad_w, fh, fw, sh, sw, dh, dw, lo, hi)
    return np.ascontiguousarray(r.transpose(0, 2, 3, 1))


def kpu_layout_upload(x, c, h, w):
    """dense CHW u8 -> bytes in KPU layout (docs/kpu-reference.md section 5), returns (bytes, rows)"""
    groups, row_len, pitch = (4, 1, 16) if w <= 16 else (2, 1, 32) if w <= 32 else (1, (w + 63) // 64, 64)
    rows = row_len * h * ((c + groups - 1) // groups)
    ram = np.zeros(rows * 64, np.uint8)
    x = np.asarray(x, np.uint8).reshape(c, h, w)
    for ch in range(c):
        base = (ch // groups) * row_len * h * 64 + (ch % groups) * pitch
        for y in range(h):
            ram[base + y * row_len * 64: base + y * row_len * 64 + w] = x[ch, y]
    return ram, rows

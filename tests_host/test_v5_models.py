# SPDX-License-Identifier: Apache-2.0
"""kmodel v5 (nncase 1.x, K210 target) through the _kpu binding.

1. Hand-built v5 files, one stackvm tensor function each, against independent NumPy references (the file layout and
   the instruction encodings are written from kmodel-v5.md by tests_host/fuzz/make_seeds.py and here, not by the code
   under test).
2. The nncase-compiled models of ../shared/testdata/kmodel_v5_nncase against the nncase Simulator's outputs (skipped,
   saying why, without the data); models using tensor functions not implemented yet must be refused by name."""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

_kpu = pytest.importorskip("_kpu")

F32, U8, I8 = 9, 4, 0
DT_SIZE = {F32: 4, U8: 1, I8: 1}
NP = {F32: np.float32, U8: np.uint8, I8: np.int8}


# ---------------------------------------------------------------------------------------------------------------
# files of one stackvm function, written by make_seeds.py's v5 writer (kmodel-v5.md section 2; 1.6-1.9 numbering,
# 3-value paddings)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fuzz"))
import make_seeds  # noqa: E402

Code = make_seeds.StackCode
strides = make_seeds.v5_strides


def v5_file(code, in_dt, in_shape, out_dt, out_shape, rdata=b"", data_pool=0):
    """The stackvm function `code` from input 0 (in_dt, in_shape) to output 0, as the file's only module."""
    in_bytes = int(np.prod(in_shape)) * DT_SIZE[in_dt]
    out_bytes = int(np.prod(out_shape)) * DT_SIZE[out_dt]
    fn = make_seeds.V5Function(code, [(make_seeds.v5_range(make_seeds.LOC_INPUT, in_dt, 0, in_bytes), list(in_shape))],
                               [(make_seeds.v5_range(make_seeds.LOC_OUTPUT, out_dt, 0, out_bytes), list(out_shape))],
                               in_bytes, out_bytes)
    return make_seeds.v5_file([("stackvm", [fn], rdata, data_pool, 8)], 8)


def run(data, x, threads=0):
    m = _kpu.Model(data, threads=threads)
    m.set_input(0, np.ascontiguousarray(x).tobytes())
    m.run()
    out = m.output(0)
    return m, out[0]


def out_array(raw, dt, shape):
    return np.frombuffer(raw, NP[dt]).reshape(shape)


def copy_like(fid, in_shape, src_strides, out_shape, extra_fields, extra_regs, dt=F32, src_off=0):
    c = Code()
    c.lea(0, src_off)
    c.lea(1, 0)
    c.shape(0, in_shape)
    c.shape(1, src_strides)
    c.shape(2, strides(out_shape))
    for reg, vals in extra_regs:
        c.shape(reg, vals)
    c.tensor(fid, bytes([dt, 0, 1, 2]) + extra_fields)
    return c.b


# ---------------------------------------------------------------------------------------------------------------
# one tensor function per file, against NumPy

RNG = np.random.default_rng(5)


def test_copy_strided_matches_numpy():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    # copy channels 1..2 of a [2,3,4,5] tensor: shape [2,2,4,5] read with the source's strides from channel 1
    code = copy_like(0x09, [2, 2, 4, 5], strides([2, 3, 4, 5]), [2, 2, 4, 5], b"", [], src_off=4 * 20)
    _, raw = run(v5_file(code, F32, [2, 3, 4, 5], F32, [2, 2, 4, 5]), x)
    assert np.array_equal(out_array(raw, F32, (2, 2, 4, 5)), x[:, 1:3])


def test_slice_with_steps_matches_numpy():
    x = RNG.integers(0, 256, (1, 4, 9, 7), dtype=np.uint8)
    want = x[:, 1:4:2, 8:0:-3, 0:7:2]
    code = copy_like(0x1E, [1, 4, 9, 7], strides([1, 4, 9, 7]), list(want.shape), bytes([3, 4, 5]),
                     [(3, [0, 1, 8, 0]), (4, [1, 4, 0, 7]), (5, [1, 2, -3, 2])], dt=U8)
    _, raw = run(v5_file(code, U8, [1, 4, 9, 7], U8, list(want.shape)), x)
    assert np.array_equal(out_array(raw, U8, want.shape), want)


@pytest.mark.parametrize("dt", [U8, F32])  # (elements copied one by one, of 1 and 4 bytes)
def test_transpose_matches_numpy(dt):
    x = (RNG.integers(0, 256, (1, 3, 4, 5), dtype=np.uint8) if dt == U8 else
         RNG.standard_normal((1, 3, 4, 5)).astype(np.float32))
    want = x.transpose(0, 2, 3, 1)
    code = copy_like(0x24, [1, 3, 4, 5], strides([1, 3, 4, 5]), list(want.shape), bytes([3]), [(3, [0, 2, 3, 1])],
                     dt=dt)
    _, raw = run(v5_file(code, dt, [1, 3, 4, 5], dt, list(want.shape)), x)
    assert np.array_equal(out_array(raw, dt, want.shape), want)


@pytest.mark.parametrize("qdt", [U8, I8])
def test_quantize_rounds_half_even_and_clamps(qdt):
    x = np.array([[-300, -128.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49, 127.5, 254.5, 255.5, 1e9]], np.float32) / 2
    scale, bias = np.float32(2.0), np.float32(0.25)
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [1, 12]), c.shape(1, [12, 1]), c.shape(2, [12, 1])
    c.r4(scale), c.r4(bias)
    c.tensor(0x14, bytes([F32, qdt, 0, 1, 2]))
    # the model exchanges u8; the instruction reads/writes those bytes as its own type
    _, raw = run(v5_file(c.b, F32, [1, 12], U8, [1, 12]), x)
    lo, hi = (0, 255) if qdt == U8 else (-128, 127)
    v = np.float32(x * scale) + bias  # two roundings, as nncase
    want = np.clip(np.rint(v.astype(np.float32)), lo, hi).astype(NP[qdt])
    assert np.array_equal(out_array(raw, qdt, (1, 12)), want)


@pytest.mark.parametrize("scalar", [False, True])
@pytest.mark.parametrize("qdt", [U8, I8])
def test_quantize_dense_run_matches_numpy(qdt, scalar, monkeypatch):
    """A dense run long enough for the SSE4.1 path (16 at a time) and its scalar tail, and the same with the scalar
    loop alone (OKPU_EMU_NO_SSE41): ties, values past the range, +-inf and NaN (the low end)."""
    if scalar:
        monkeypatch.setenv("OKPU_EMU_NO_SSE41", "1")
    n = 1031
    scale, bias = np.float32(2.0), np.float32(0.5)  # x * 2 + 0.5: x = k / 2 lands on a tie
    x = (RNG.standard_normal(n) * 75).astype(np.float32)
    x[:20] = [0, 0.5, 1, -0.5, -1, -1.5, 63, 63.5, -64.5, 127, 127.5, 1e30, -1e30, np.inf, -np.inf, np.nan, -np.nan,
              -0.25, 1.7499999, 0.2]
    x[-3:] = [np.nan, 1, 126.5]  # in the scalar tail
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [1, n]), c.shape(1, [n, 1]), c.shape(2, [n, 1])
    c.r4(scale), c.r4(bias)
    c.tensor(0x14, bytes([F32, qdt, 0, 1, 2]))
    _, raw = run(v5_file(c.b, F32, [1, n], U8, [1, n]), x)
    lo, hi = (0, 255) if qdt == U8 else (-128, 127)
    v = np.rint((x * scale).astype(np.float32) + bias)
    want = np.where(np.isnan(v), lo, np.clip(np.nan_to_num(v, nan=lo), lo, hi)).astype(NP[qdt]).reshape(1, n)
    assert np.array_equal(out_array(raw, qdt, (1, n)), want)


@pytest.mark.parametrize("qdt", [U8, I8])
def test_dequantize_matches_numpy(qdt):
    x = np.arange(256, dtype=np.uint8).astype(NP[qdt]).reshape(1, 4, 8, 8)
    scale, bias = np.float32(0.03845), np.float32(-5.0374)
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [1, 4, 8, 8]), c.shape(1, strides([1, 4, 8, 8])), c.shape(2, strides([1, 4, 8, 8]))
    c.r4(scale), c.r4(bias)
    c.tensor(0x0B, bytes([qdt, F32, 0, 1, 2]))
    _, raw = run(v5_file(c.b, U8, [1, 4, 8, 8], F32, [1, 4, 8, 8]), x)
    want = (x.astype(np.float32) * scale).astype(np.float32) + bias
    assert np.array_equal(out_array(raw, F32, x.shape), want)


@pytest.mark.parametrize("qdt", [U8, I8])
def test_dequantize_strided_view_matches_numpy(qdt):
    """An NHWC buffer read as NCHW (the walk, not the dense loop): every byte value once."""
    xb = RNG.permutation(256).astype(np.uint8).astype(NP[qdt])
    scale, bias = np.float32(-0.0173), np.float32(2.25)
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [1, 4, 8, 8]), c.shape(1, [256, 1, 32, 4]), c.shape(2, strides([1, 4, 8, 8]))
    c.r4(scale), c.r4(bias)
    c.tensor(0x0B, bytes([qdt, F32, 0, 1, 2]))
    _, raw = run(v5_file(c.b, U8, [1, 8, 8, 4], F32, [1, 4, 8, 8]), xb.reshape(1, 8, 8, 4))
    x = xb.reshape(1, 8, 8, 4).transpose(0, 3, 1, 2)
    want = (x.astype(np.float32) * scale).astype(np.float32) + bias
    assert np.array_equal(out_array(raw, F32, x.shape), want)


def test_pad_constant_with_crop_matches_numpy():
    x = RNG.integers(0, 256, (1, 2, 5, 6), dtype=np.uint8)
    pads = [(0, 0), (1, 2), (2, -1), (-2, 3)]
    want = np.pad(x, [(max(b, 0), max(a, 0)) for b, a in pads], constant_values=7)
    want = want[:, :, :want.shape[2] - 1, 2:]
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.i4(7)
    c.shape(0, [1, 2, 5, 6]), c.shape(1, strides([1, 2, 5, 6])), c.shape(2, strides(list(want.shape)))
    c.paddings(0, pads)
    c.tensor(0x13, bytes([U8, 0, 1, 2, 0, 0]))
    _, raw = run(v5_file(c.b, U8, [1, 2, 5, 6], U8, list(want.shape)), x)
    assert np.array_equal(out_array(raw, U8, want.shape), want)


def conv_reference(x, w, b, stride, dil, pads, groups, lo, hi):
    n, ic, ih, iw = x.shape
    oc, gic, kh, kw = w.shape
    (pt, pb), (pl, pr) = pads
    oh = (ih + pt + pb - ((kh - 1) * dil[0] + 1)) // stride[0] + 1
    ow = (iw + pl + pr - ((kw - 1) * dil[1] + 1)) // stride[1] + 1
    out = np.zeros((n, oc, oh, ow), np.float32)
    goc = oc // groups
    for bi in range(n):
        for o in range(oc):
            g = o // goc
            for oy in range(oh):
                for ox in range(ow):
                    v = np.float32(b[o])
                    for c in range(gic):
                        for ky in range(kh):
                            y = oy * stride[0] - pt + ky * dil[0]
                            if not 0 <= y < ih:
                                continue
                            for kx in range(kw):
                                xx = ox * stride[1] - pl + kx * dil[1]
                                if 0 <= xx < iw:
                                    v = np.float32(v + np.float32(x[bi, g * gic + c, y, xx] * w[o, c, ky, kx]))
                    out[bi, o, oy, ox] = min(max(v, lo), hi)
    return out


@pytest.mark.parametrize("groups, stride, dil", [(1, (1, 1), (1, 1)), (2, (2, 1), (1, 2))])
def test_float_conv2d_matches_numpy(groups, stride, dil):
    x = RNG.standard_normal((1, 4, 6, 7)).astype(np.float32)
    w = RNG.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    pads = ((1, 0), (2, 1))
    lo, hi = np.float32(-1.5), np.float32(2.0)
    want = conv_reference(x, w, b, stride, dil, pads, groups, lo, hi)
    rdata = w.tobytes() + b.tobytes()
    c = Code()
    c.lea(0, 0), c.lea(2, 0), c.lea(2, w.nbytes), c.lea(1, 0)
    for before, after in pads:
        c.i4(before), c.i4(after), c.i4(0)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape)))
    c.shape(2, list(w.shape)), c.shape(3, strides(list(w.shape)))
    c.shape(4, [1]), c.shape(5, strides(list(want.shape)))
    c.tensor(0x06, bytes([F32, 0, 1, 2, 3, 4, 5]) + struct.pack("<5H2f", groups, stride[0], stride[1], dil[0],
                                                                    dil[1], lo, hi))
    _, raw = run(v5_file(c.b, F32, list(x.shape), F32, list(want.shape), rdata=rdata), x)
    assert np.array_equal(out_array(raw, F32, want.shape), want)


def window_reference(x, op, f, st, dil, pads, init, lo, hi):
    n, c, ih, iw = x.shape
    (pt, pb), (pl, pr) = pads
    oh = (ih + pt + pb - ((f[0] - 1) * dil[0] + 1) + st[0]) // st[0]
    ow = (iw + pl + pr - ((f[1] - 1) * dil[1] + 1) + st[1]) // st[1]
    out = np.zeros((n, c, oh, ow), np.float32)
    for b, ch, oy, ox in np.ndindex(n, c, oh, ow):
        v, taps = np.float32(init), 0
        for ky in range(f[0]):
            y = oy * st[0] - pt + ky * dil[0]
            for kx in range(f[1]):
                xx = ox * st[1] - pl + kx * dil[1]
                if 0 <= y < ih and 0 <= xx < iw:
                    t = x[b, ch, y, xx]
                    taps += 1
                    v = np.float32(v + t) if op in (0, 3) else (min(v, t) if op == 1 else max(v, t))
        if op == 0:
            v = np.float32(v / np.float32(taps))
        out[b, ch, oy, ox] = min(max(v, lo), hi)
    return out


# the second geometry starts windows left of and above the map with dilation 2 (the kernel clips each window's taps)
@pytest.mark.parametrize("f, st, dil, pads", [((3, 2), (2, 1), (1, 2), ((1, 1), (0, 2))),
                                             ((3, 3), (1, 2), (2, 2), ((3, 2), (3, 1)))])
@pytest.mark.parametrize("op, init", [(0, 0.0), (1, 3e38), (2, -3.4028234663852886e38), (3, 0.0)])
def test_reduce_window2d_matches_numpy(op, init, f, st, dil, pads):
    x = RNG.standard_normal((1, 3, 7, 8)).astype(np.float32)
    lo, hi = np.float32(-1.0), np.float32(1.25)
    want = window_reference(x, op, f, st, dil, pads, init, lo, hi)
    c = Code()
    c.lea(0, 0), c.r4(init), c.lea(1, 0)
    for before, after in pads:
        c.i4(before), c.i4(after), c.i4(0)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape))), c.shape(2, strides(list(want.shape)))
    c.tensor(0x1A, bytes([F32, op, 0, 1, 2]) + struct.pack("<6H2f", f[0], f[1], st[0], st[1], dil[0], dil[1], lo, hi))
    _, raw = run(v5_file(c.b, F32, list(x.shape), F32, list(want.shape)), x)
    assert np.array_equal(out_array(raw, F32, want.shape), want)


@pytest.mark.parametrize("op, axes, keep", [(0, [2, 3], 1), (3, [1], 0), (1, [0, 2], 1), (2, [3], 0)])
def test_reduce_matches_numpy(op, axes, keep):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    kept = np.zeros([1 if i in axes else d for i, d in enumerate(x.shape)], np.float32)
    if op in (0, 3):
        for idx in np.ndindex(*x.shape):  # index order, one float32 rounding per addition
            o = tuple(0 if i in axes else v for i, v in enumerate(idx))
            kept[o] = np.float32(kept[o] + x[idx])
        if op == 0:
            kept = (kept / np.float32(np.prod([x.shape[a] for a in axes]))).astype(np.float32)
    else:
        kept = (x.min if op == 1 else x.max)(axis=tuple(axes), keepdims=True)
    want = kept if keep else kept.reshape([d for i, d in enumerate(x.shape) if i not in axes])
    c = Code()
    c.lea(0, 0), c.lea(1, 0), c.r4(0.0)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape))), c.shape(2, strides(list(want.shape)))
    c.shape(3, axes)
    c.tensor(0x17, bytes([F32, 0, 1, 2, op, 3, keep]))
    _, raw = run(v5_file(c.b, F32, list(x.shape), F32, list(want.shape)), x)
    assert np.array_equal(out_array(raw, F32, want.shape), want)


def test_softmax_matches_numpy():
    x = (RNG.standard_normal((2, 5, 3)) * 4).astype(np.float32)
    beta = np.float32(0.75)
    m = x.max(axis=1, keepdims=True)
    e = np.exp(((x - m) * beta).astype(np.float32)).astype(np.float32)
    s = np.zeros((2, 1, 3), np.float32)
    for i in range(5):
        s = (s + e[:, i:i + 1]).astype(np.float32)
    want = (e / s).astype(np.float32)
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [2, 5, 3]), c.shape(1, strides([2, 5, 3])), c.shape(2, strides([2, 5, 3]))
    c.tensor(0x1F, bytes([F32, 0, 1, 2]) + struct.pack("<if", -2, beta))
    _, raw = run(v5_file(c.b, F32, [2, 5, 3], F32, [2, 5, 3]), x)
    got = out_array(raw, F32, want.shape)
    assert np.max(np.abs(got - want)) <= 1e-7  # expf vs NumPy's exp may differ by an ulp
    assert np.allclose(got.sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 4), (3, 1)), ((2, 3, 4), (2, 3, 4)), ((3, 1), (2, 3, 4)),
                                              ((2, 1, 4), (3, 1))])
@pytest.mark.parametrize("op", range(6))
def test_binary_broadcast_matches_numpy(op, a_shape, b_shape):
    """Each kind of last-axis steps the kernel has a loop for (a dense, b one value; both dense; a one value, b dense)
    and the general walk (a broadcast on a middle axis)."""
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = (RNG.standard_normal(b_shape) + 0.1).astype(np.float32)
    want = [np.add, np.subtract, np.multiply, np.divide, np.minimum, np.maximum][op](a, b).astype(np.float32)
    want = np.clip(want, np.float32(-2), np.float32(3))
    assert want.shape == (2, 3, 4)
    c = Code()
    c.lea(0, 0), c.lea(0, a.nbytes), c.lea(1, 0)
    c.shape(0, list(a_shape)), c.shape(1, strides(list(a_shape))), c.shape(2, list(b_shape))
    c.shape(3, strides(list(b_shape)))
    c.shape(4, [2, 3, 4]), c.shape(5, strides([2, 3, 4]))
    c.tensor(0x01, bytes([F32, 0, 1, 2, 3, 4, 5, op]) + struct.pack("<2f", -2, 3))
    data = v5_file(c.b, F32, [a.size + b.size], F32, [2, 3, 4])
    _, raw = run(data, np.concatenate([a.ravel(), b.ravel()]))
    assert np.array_equal(out_array(raw, F32, want.shape), want)


def test_binary_writing_one_row_over_and_over_is_not_split_over_threads():
    """A file may give the output a stride of 0 on an axis (every row written to the same place): the step must not
    be shared among threads then (their order would decide the bytes), so on any thread count the last row's values
    stay, as one thread in index order leaves them."""
    a = RNG.standard_normal((64, 512)).astype(np.float32)  # 32768 elements: above the threads' split threshold
    b = RNG.standard_normal((64, 512)).astype(np.float32)
    c = Code()
    c.lea(0, 0), c.lea(0, a.nbytes), c.lea(1, 0)
    c.shape(0, [64, 512]), c.shape(1, [512, 1]), c.shape(2, [64, 512]), c.shape(3, [512, 1])
    c.shape(4, [64, 512]), c.shape(5, [0, 1])
    c.tensor(0x01, bytes([F32, 0, 1, 2, 3, 4, 5, 0]) + struct.pack("<2f", -1e30, 1e30))
    data = v5_file(c.b, F32, [a.size + b.size], F32, [512])
    x = np.concatenate([a.ravel(), b.ravel()])
    want = (a[63] + b[63]).astype(np.float32)
    for threads in (1, 2, 3):
        m = _kpu.Model(data, threads=threads)
        m.set_input(0, x.tobytes())
        for attempt in range(1 if threads == 1 else 100):  # shared, the last task to finish would decide
            m.run()
            assert np.array_equal(out_array(m.output(0)[0], F32, (512,)), want), (threads, attempt)


def test_lut1d_matches_numpy():
    x = RNG.integers(0, 256, (1, 3, 5, 7), dtype=np.uint8)
    table = RNG.integers(0, 256, 256, dtype=np.uint8)
    c = Code()
    c.lea(0, 0), c.lea(2, 0), c.lea(1, 0), c.i4(0), c.i4(255)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape))), c.shape(2, strides(list(x.shape)))
    c.tensor(0x10, bytes([U8, 0, 1, 2]) + struct.pack("<H", 256))
    _, raw = run(v5_file(c.b, U8, list(x.shape), U8, list(x.shape), rdata=table.tobytes()), x)
    assert np.array_equal(out_array(raw, U8, x.shape), table[x])


def resize_reference(x, oh, ow, nearest, align, half):
    n, c, ih, iw = x.shape
    u8 = x.dtype == np.uint8

    def scale(i, o):
        return np.float32(i - 1) / np.float32(o - 1) if align and o > 1 else np.float32(i) / np.float32(o)

    hs, ws = scale(ih, oh), scale(iw, ow)
    out = np.zeros((n, c, oh, ow), x.dtype)
    for oy, ox in np.ndindex(oh, ow):
        if nearest:
            def src(o, s, size):
                v = (np.floor(float(np.float32(o) * s) + 0.5) if align else  # roundf: half away from zero
                     np.floor((np.float32(o) + np.float32(0.5)) * s) if half else np.floor(np.float32(o) * s))
                return int(min(max(v, 0), size - 1))
            out[:, :, oy, ox] = x[:, :, src(oy, hs, ih), src(ox, ws, iw)]
            continue

        def lin(o, s, size):
            v = np.float32((np.float32(o) + np.float32(0.5)) * s - np.float32(0.5)) if half else np.float32(
                np.float32(o) * s)
            return v, max(int(np.floor(v)), 0), min(int(np.ceil(v)), size - 1)
        sy, y0, y1 = lin(oy, hs, ih)
        sx, x0, x1 = lin(ox, ws, iw)
        fy, fx = np.float32(sy - np.float32(y0)), np.float32(sx - np.float32(x0))
        one = np.float32(1)
        a = [np.float32((one - fy) * (one - fx)), np.float32(fy * (one - fx)), np.float32((one - fy) * fx),
             np.float32(fy * fx)]
        taps = [x[:, :, y0, x0], x[:, :, y1, x0], x[:, :, y0, x1], x[:, :, y1, x1]]
        v = np.zeros((n, c), np.float32)
        for i in range(4):
            v = (v + (taps[i].astype(np.float32) * a[i]).astype(np.float32)).astype(np.float32)
        out[:, :, oy, ox] = np.clip(np.trunc(v + np.float32(0.5)), 0, 255) if u8 else v
    return out


@pytest.mark.parametrize("dt, mode, align, half", [(F32, 0, 0, 0), (U8, 0, 0, 1), (F32, 0, 1, 0), (U8, 1, 0, 0),
                                                   (F32, 1, 0, 1), (U8, 1, 1, 0)])
def test_resize_image_matches_numpy(dt, mode, align, half):
    x = (RNG.integers(0, 256, (1, 2, 5, 7)).astype(np.uint8) if dt == U8 else
         RNG.standard_normal((1, 2, 5, 7)).astype(np.float32))
    oh, ow = 9, 4
    want = resize_reference(x, oh, ow, mode == 1, align, half)
    c = Code()
    c.i4(oh), c.i4(ow), c.lea(0, 0), c.lea(1, 0)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape))), c.shape(2, strides(list(want.shape)))
    c.tensor(0x1B, bytes([dt, 0, 1, 2, align, half, mode]))
    _, raw = run(v5_file(c.b, dt, list(x.shape), dt, list(want.shape)), x)
    assert np.array_equal(out_array(raw, dt, want.shape), want)


@pytest.mark.parametrize("shape, dt, mode", [((1, 6, 40, 50), F32, 0), ((3, 2, 40, 50), U8, 0), ((1, 5, 40, 50), U8, 1)])
def test_resize_image_split_among_threads(shape, dt, mode):
    """Big enough to be shared among threads, by channels or (several batches) by batches: the bytes of the reference
    on any thread count."""
    x = (RNG.integers(0, 256, shape).astype(np.uint8) if dt == U8 else RNG.standard_normal(shape).astype(np.float32))
    oh, ow = 31, 70
    want = resize_reference(x, oh, ow, mode == 1, 0, 1)
    c = Code()
    c.i4(oh), c.i4(ow), c.lea(0, 0), c.lea(1, 0)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape))), c.shape(2, strides(list(want.shape)))
    c.tensor(0x1B, bytes([dt, 0, 1, 2, 0, 1, mode]))
    data = v5_file(c.b, dt, list(x.shape), dt, list(want.shape))
    for threads in (1, 2, 3):
        _, raw = run(data, x, threads)
        assert np.array_equal(out_array(raw, dt, want.shape), want), threads


def test_matmul_matches_numpy():
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 4)).astype(np.float32)
    bias = RNG.standard_normal(4).astype(np.float32)
    want = np.zeros((3, 4), np.float32)
    for i, j in np.ndindex(3, 4):
        v = bias[j]
        for k in range(5):
            v = np.float32(v + np.float32(a[i, k] * b[k, j]))
        want[i, j] = min(max(v, np.float32(-1.0)), np.float32(2.5))
    c = Code()
    c.lea(0, 0), c.lea(2, 0), c.lea(2, b.nbytes), c.lea(1, 0)
    c.shape(0, [3, 5]), c.shape(1, [5, 1]), c.shape(2, [5, 4]), c.shape(3, [4, 1]), c.shape(4, [3, 4])
    c.shape(5, [4, 1])
    c.tensor(0x11, bytes([0, 1, 2, 3, 4, 5]) + struct.pack("<2f", -1.0, 2.5))
    _, raw = run(v5_file(c.b, F32, [3, 5], F32, [3, 4], rdata=b.tobytes() + bias.tobytes()), a)
    assert np.array_equal(out_array(raw, F32, (3, 4)), want)


@pytest.mark.parametrize("src, dst", [(U8, F32), (F32, I8), (F32, U8), (I8, F32)])
def test_convert_casts_like_c(src, dst):
    x = (np.array([0, 1, 7, 127, 128, 200, 255, 3], np.uint8).astype(NP[src]) if src != F32 else
         np.array([-1.9, -0.5, 0.0, 0.99, 1.5, 126.7, 127.2, 254.9], np.float32))
    want = np.trunc(x.astype(np.float64)).astype(NP[dst]) if dst != F32 else x.astype(np.float32)
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [8]), c.shape(1, [1]), c.shape(2, [1])
    c.tensor(0x08, bytes([src, dst, 0, 1, 2]))
    io = {F32: F32, U8: U8, I8: U8}  # the model exchanges u8 bytes for i8
    _, raw = run(v5_file(c.b, io[src], [8], io[dst], [8]), x)
    # out-of-range float -> integer casts are undefined in C (openkpu saturates): compare the defined ones
    lo, hi = {U8: (0, 255), I8: (-128, 127), F32: (-1e30, 1e30)}[dst]
    ok = (np.trunc(x.astype(np.float64)) >= lo) & (np.trunc(x.astype(np.float64)) <= hi)
    assert np.array_equal(out_array(raw, dst, (8,))[ok], want[ok])


@pytest.mark.parametrize("dt", [F32, U8, I8])
def test_convert_to_its_own_type_copies_the_bytes(dt):
    """A CONVERT to the same type is nncase's static_cast to that type: every element's bytes, a signalling NaN, a
    NaN's payload and -0.0 included."""
    if dt == F32:
        x = np.array([0x7F800001, 0x7FC01234, 0xFFC00000, 0x80000000, 0x7F800000, 0x3F800000, 0xC2C80000, 1],
                     np.uint32).view(np.float32)
    else:
        x = np.array([0, 1, 7, 127, 128, 200, 255, 3], np.uint8).astype(NP[dt])
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [8]), c.shape(1, [1]), c.shape(2, [1])
    c.tensor(0x08, bytes([dt, dt, 0, 1, 2]))
    io = {F32: F32, U8: U8, I8: U8}
    _, raw = run(v5_file(c.b, io[dt], [8], io[dt], [8]), x)
    assert bytes(raw) == x.tobytes()


def test_convert_split_among_threads():
    """40000 u8 to f32 and back (saturating), big enough to be shared among threads: the same values on any count."""
    x = RNG.integers(0, 256, (8, 5000)).astype(np.uint8)
    for src, dst, data_in, want in [(U8, F32, x, x.astype(np.float32)),
                                    (F32, U8, x.astype(np.float32) * 1.5 - 20, None)]:
        if want is None:
            want = np.clip(np.trunc(data_in.astype(np.float64)), 0, 255).astype(np.uint8)
        c = Code()
        c.lea(0, 0), c.lea(1, 0)
        c.shape(0, [8, 5000]), c.shape(1, [5000, 1]), c.shape(2, [5000, 1])
        c.tensor(0x08, bytes([src, dst, 0, 1, 2]))
        data = v5_file(c.b, src, [8, 5000], dst, [8, 5000])
        for threads in (1, 2, 3):
            _, raw = run(data, data_in, threads)
            assert np.array_equal(out_array(raw, dst, (8, 5000)), want), (src, dst, threads)


def test_unimplemented_tensor_function_is_refused_by_name():
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [1, 4]), c.shape(1, [4, 1]), c.shape(2, [4, 1])
    c.tensor(0x0A, bytes([F32, 0]) + struct.pack("<iBB", 1, 0, 0))  # CUMSUM (1.6-1.9)
    with pytest.raises(Exception) as e:
        _kpu.Model(v5_file(c.b, F32, [1, 4], F32, [1, 4]))
    msg = str(e.value)
    assert "2002" in msg and "CUMSUM" in msg and "byte" in msg
    # the supported functions are listed from the table
    assert "it runs BINARY, BROADCAST, CALL," in msg and "SIGMOID" in msg and "CUMSUM, " not in msg


def test_copy_past_its_pool_is_refused():
    code = copy_like(0x09, [2, 3, 4, 5], strides([2, 3, 4, 5]), [2, 3, 4, 5], b"", [], src_off=4)
    with pytest.raises(Exception) as e:
        _kpu.Model(v5_file(code, F32, [2, 3, 4, 5], F32, [2, 3, 4, 5]))
    assert "2003" in str(e.value) and "outside" in str(e.value) and "COPY" in str(e.value)


# ---------------------------------------------------------------------------------------------------------------
# empty walks: a zero extent beside extents no run could walk (the views check no stride of an empty tensor, and a
# stride of 0 passes them): the step must do nothing at once, or the load refuse it by its work

HUGE = 1 << 30


empty_walk_code = make_seeds.v5_empty_walk_code


def lut_code():
    c = Code()
    c.lea(0, 0), c.lea(2, 0), c.lea(1, 0), c.i4(0), c.i4(255)
    c.shape(0, [HUGE, HUGE, 0]), c.shape(1, [0, 1, 1]), c.shape(2, [0, 1, 1])
    c.tensor(0x10, bytes([U8, 0, 1, 2]) + struct.pack("<H", 256))
    return c.b


def pad_code():
    c = Code()
    c.lea(0, 0), c.lea(1, 0), c.i4(7)
    c.shape(0, [HUGE, HUGE, 0]), c.shape(1, [0, 1, 1]), c.shape(2, [0, 1, 1])
    c.paddings(0, [(0, 0)] * 3)
    c.tensor(0x13, bytes([U8, 0, 1, 2, 0, 0]))
    return c.b


def binary_code():
    c = Code()
    c.lea(0, 0), c.lea(0, 0), c.lea(1, 0)
    for reg in (0, 2, 4):
        c.shape(reg, [HUGE, HUGE, 0]), c.shape(reg + 1, [0, 1, 1])
    c.tensor(0x01, bytes([F32, 0, 1, 2, 3, 4, 5, 0]) + struct.pack("<2f", -1e30, 1e30))
    return c.b


def reduce_code():
    c = Code()
    c.lea(0, 0), c.lea(1, 0), c.r4(0.0)
    c.shape(0, [HUGE, 0, HUGE]), c.shape(1, [0, 1, 1]), c.shape(2, [0, 0, 0]), c.shape(3, [1])
    c.tensor(0x17, bytes([F32, 0, 1, 2, 3, 3, 1]))  # sum over the empty axis 1, kept: HUGE x HUGE zeros to write
    return c.b


def conv_code(n, oc):
    c = Code()
    c.lea(0, 0), c.lea(2, 0), c.lea(2, 0), c.lea(1, 0)
    for _ in range(2):
        c.i4(0), c.i4(0), c.i4(0)
    c.shape(0, [n, 0, 1, 1]), c.shape(1, [0, 1, 1, 1]), c.shape(2, [oc, 0, 1, 1]), c.shape(3, [0, 1, 1, 1])
    c.shape(4, [0]), c.shape(5, [0, 0, 0, 0])  # no input channel: every output is the (one) bias
    c.tensor(0x06, bytes([F32, 0, 1, 2, 3, 4, 5]) + struct.pack("<5H2f", 1, 1, 1, 1, 1, -1e30, 1e30))
    return c.b


def matmul_code(m, n):
    c = Code()
    c.lea(0, 0), c.lea(2, 0), c.lea(2, 0), c.lea(1, 0)
    c.shape(0, [m, 0]), c.shape(1, [0, 1]), c.shape(2, [0, n]), c.shape(3, [n, 1]), c.shape(4, [m, n])
    c.shape(5, [n, 1])
    c.tensor(0x11, bytes([0, 1, 2, 3, 4, 5]) + struct.pack("<2f", -1e30, 1e30))
    return c.b


EMPTY_WALKS = {  # name: (code, input type, output type, rdata, what must happen)
    "quantize": (empty_walk_code(0x14, bytes([F32, U8, 0, 1, 2]), [HUGE, HUGE, 0], (1.0, 0.0)), F32, U8,
                 b"", "ran"),
    "dequantize": (empty_walk_code(0x0B, bytes([U8, F32, 0, 1, 2]), [HUGE, HUGE, 0], (1.0, 0.0)), U8, F32,
                   b"", "ran"),
    "convert": (empty_walk_code(0x08, bytes([U8, F32, 0, 1, 2]), [HUGE, HUGE, 0]), U8, F32, b"", "ran"),
    "unary": (empty_walk_code(0x26, bytes([F32, 0, 1, 2, 0]), [HUGE, HUGE, 0]), F32, F32, b"", "ran"),
    "copy": (empty_walk_code(0x09, bytes([F32, 0, 1, 2]), [HUGE, HUGE, 0]), F32, F32, b"", "ran"),
    "softmax": (empty_walk_code(0x1F, bytes([F32, 0, 1, 2]) + struct.pack("<if", 1, 1.0), [HUGE, 0, HUGE]), F32,
                F32, b"", "ran"),
    "lut": (lut_code(), U8, U8, bytes(256), "ran"),
    "pad": (pad_code(), U8, U8, b"", "ran"),
    "binary": (binary_code(), F32, F32, b"", "ran"),
    "reduce": (reduce_code(), F32, F32, b"", "refused"),
    "conv2d": (conv_code(HUGE, HUGE), F32, F32, bytes(4), "refused"),
}

RUN_ONCE = """
import sys, _kpu
try:
    m = _kpu.Model(open(sys.argv[1], 'rb').read(), threads=int(sys.argv[2]))
except Exception as e:
    print('refused', e)
    sys.exit(0)
m.set_input(0, bytes(16))
m.run()
print('ran')
"""


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(EMPTY_WALKS))
def test_an_empty_walk_ends_at_once_or_is_refused_by_its_work(name, threads, tmp_path):
    """(fuzz_v5 found a quantize of [n, n, 0] walking n x n times: a CI timeout.) In a child process with a time
    limit, so that a walk that does not end fails the test rather than hanging the suite."""
    code, in_dt, out_dt, rdata, want = EMPTY_WALKS[name]
    path = tmp_path / (name + ".kmodel")
    path.write_bytes(v5_file(code, in_dt, [16 // DT_SIZE[in_dt]], out_dt, [4], rdata=rdata))
    try:
        r = subprocess.run([sys.executable, "-c", RUN_ONCE, str(path), str(threads)], capture_output=True, text=True,
                           timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("%s over an empty walk still running after 60 s" % name)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == want, r.stdout
    if want == "refused":
        assert "work limit" in r.stdout and name.upper()[:4] in r.stdout, r.stdout


@pytest.mark.parametrize("name, code, outputs", [("CONV2D", conv_code(40, 50), 2000),
                                                 ("MATMUL", matmul_code(40, 50), 2000)])
def test_a_product_over_nothing_counts_a_work_for_each_output(name, code, outputs):
    """No input channel (conv2d) or K = 0 (matmul): no multiply, but every output is written; the work budget must
    count them, or a file could write without bound under a budget of 1."""
    data = v5_file(code, F32, [4], F32, [outputs], rdata=bytes(4 * 50))
    _kpu.Model(data, max_work=outputs)
    with pytest.raises(Exception) as e:
        _kpu.Model(data, max_work=outputs - 1)
    assert "work limit" in str(e.value) and name in str(e.value)


# ---------------------------------------------------------------------------------------------------------------
# the nncase-compiled models

RUNS = ["iris_f32_v190", "iris_ptq_v190", "yolo320_v190", "convnet_u8_v190", "convnet_u8_v100", "multiout_u8out_v190",
        "multiout_k210copy_v190"]


def case(testdata, name):
    cases = {c["name"]: c for c in json.loads(testdata("kmodel_v5_nncase", "cases.json").read_text())}
    return cases[name]


@pytest.mark.parametrize("name", RUNS)
def test_compiled_model_matches_the_simulator(testdata, name):
    c = case(testdata, name)
    m = _kpu.Model(testdata("kmodel_v5_nncase", c["kmodel"]).read_bytes())
    x = np.load(testdata("kmodel_v5_nncase", c["input"]["file"]))
    m.set_input(0, x.tobytes())
    m.run()
    for i, o in enumerate(c["outputs"]):
        ref = np.load(testdata("kmodel_v5_nncase", o["file"]))
        raw = m.output(i)[0]
        got = np.frombuffer(raw, ref.dtype).reshape(ref.shape)
        diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
        print("%s output %d: max |difference| %.3g" % (name, i, diff))
        assert np.array_equal(got, ref), "max difference %g" % diff


def test_floatin_differs_only_where_the_kpu_rounds_negative_products(testdata):
    """floatin_f32_v190's KPU activation has negative slopes (x * sigmoid(x)); nncase's Simulator rounds those
    products with its carry_shift, the emulator by default with round-half-even (kmodel-v5.md 4.3 item 5: 102 of 6144
    outputs differ; act_round="nncase1" removes them, test_negative_slope_models_match_with_nncase1_rounding).
    Everything else - the CPU QUANTIZE, max pool, bilinear RESIZE_IMAGE, TRANSPOSE, DEQUANTIZE - is exact."""
    c = case(testdata, "floatin_f32_v190")
    m = _kpu.Model(testdata("kmodel_v5_nncase", c["kmodel"]).read_bytes())
    m.set_input(0, np.load(testdata("kmodel_v5_nncase", c["input"]["file"])).tobytes())
    m.run()
    ref = np.load(testdata("kmodel_v5_nncase", "floatin_f32_v190.out0.npy"))
    got = np.frombuffer(m.output(0)[0], np.float32).reshape(ref.shape)
    diff = np.abs(got - ref)
    print("floatin_f32_v190: %d of %d outputs differ, max %.4g" % ((diff > 0).sum(), ref.size, diff.max()))
    assert (diff > 0).sum() == 102 and diff.max() < 0.02


def test_mnist_v5_cpu_model_loads_and_runs(testdata):
    """nncase's CPU-target MNIST (CONV2D, BINARY max, REDUCE_WINDOW2D, MATMUL, ...): no reference output exists, so
    only that it loads, runs and gives 10 finite scores."""
    m = _kpu.Model(testdata("mnist_v5_nncase_negative", "mnist_v5.kmodel").read_bytes())
    m.set_input(0, np.linspace(0, 1, 784, dtype=np.float32).tobytes())
    m.run()
    out = np.frombuffer(m.output(0)[0], np.float32)
    assert out.size == 10 and np.all(np.isfinite(out))


def test_yolox_nano_runs_and_finds_the_same_objects(testdata):
    """nncase's YOLOX-nano (a September-2021 development build: the 1.0.0-beta1..rc1 numbering and 2-value
    paddings). 102 of its 120 KPU layers have negative activation slopes (SiLU), where the emulator by default rounds
    the products half-to-even and nncase's Simulator with its carry_shift (kmodel-v5.md 4.3 item 5), so the outputs
    differ (measured: 22877 of 87465 values, max 1.86 on box coordinates; act_round="nncase1" makes them equal); the
    objects found agree."""
    c = case(testdata, "yolox_nano_224")
    m = _kpu.Model(testdata("kmodel_v5_nncase", c["kmodel"]).read_bytes())
    m.set_input(0, np.load(testdata("kmodel_v5_nncase", c["input"]["file"])).tobytes())
    m.run()
    ref = np.load(testdata("kmodel_v5_nncase", "yolox_nano_224.out0.npy")).reshape(1029, 85)
    got = np.frombuffer(m.output(0)[0], np.float32).reshape(1029, 85)
    diff = np.abs(got - ref)
    print("yolox_nano_224: %d of %d values differ, max %.4g" % ((diff > 0).sum(), ref.size, diff.max()))
    assert (diff > 0).sum() == 22877  # the default rounding is unchanged
    assert np.argmax(ref[:, 4]) in np.argsort(-got[:, 4])[:10]
    assert np.argmax(got[:, 4]) in np.argsort(-ref[:, 4])[:10]
    assert set(np.flatnonzero(ref[:, 4] > 0.9)) <= set(np.flatnonzero(got[:, 4] > 0.8))


@pytest.mark.parametrize("name", ["floatin_f32_v190", "yolox_nano_224"])
@pytest.mark.parametrize("act_round", ["nncase1", 3])
def test_negative_slope_models_match_with_nncase1_rounding(testdata, name, act_round):
    """act_round="nncase1" rounds the activation products as nncase 1.x's Simulator does (kmodel-v5.md 4.3 item 5,
    not a rounding for negative products): the two models with negative slopes then match its outputs exactly."""
    c = case(testdata, name)
    m = _kpu.Model(testdata("kmodel_v5_nncase", c["kmodel"]).read_bytes(), act_round=act_round)
    m.set_input(0, np.load(testdata("kmodel_v5_nncase", c["input"]["file"])).tobytes())
    m.run()
    ref = np.load(testdata("kmodel_v5_nncase", c["outputs"][0]["file"]))
    got = np.frombuffer(m.output(0)[0], np.float32).reshape(ref.shape)
    assert np.array_equal(got, ref), "%d values differ" % (got != ref).sum()


@pytest.mark.parametrize("name", RUNS)
def test_nncase1_rounding_changes_nothing_without_negative_slopes(testdata, name):
    """For every other model the Simulator's rounding and the default agree (kmodel-v5.md 4.3 item 5)."""
    c = case(testdata, name)
    m = _kpu.Model(testdata("kmodel_v5_nncase", c["kmodel"]).read_bytes(), act_round="nncase1")
    m.set_input(0, np.load(testdata("kmodel_v5_nncase", c["input"]["file"])).tobytes())
    m.run()
    for i, o in enumerate(c["outputs"]):
        ref = np.load(testdata("kmodel_v5_nncase", o["file"]))
        assert np.array_equal(np.frombuffer(m.output(i)[0], ref.dtype).reshape(ref.shape), ref)


def test_kpu_load_takes_act_round(testdata):
    """KPU.py on the PC: kpu.load(path, act_round="nncase1") reaches _kpu.Model (exact outputs); the default stays."""
    kpu = pytest.importorskip("KPU")
    path = str(testdata("kmodel_v5_nncase", "floatin_f32_v190.kmodel"))
    x = np.load(testdata("kmodel_v5_nncase", "floatin_f32_v190.in.npy"))
    ref = np.load(testdata("kmodel_v5_nncase", "floatin_f32_v190.out0.npy"))
    differ = []
    for kw in ({}, {"act_round": None}, {"act_round": "half_even"}, {"act_round": "nncase1"}):
        net = kpu.load(path, **kw)
        m = net.net_arg()
        m.set_input(0, x.tobytes())
        m.run()
        differ.append(int((np.frombuffer(m.output(0)[0], np.float32).reshape(ref.shape) != ref).sum()))
        kpu.deinit(net)
    assert differ == [102, 102, 102, 0]
    with pytest.raises(ValueError, match="error:2001.*act_round='chip'.*'half_even' .*'nncase1' \\(3\\)"):
        kpu.load(path, act_round="chip")


def test_act_round_option_values():
    """act_round takes the names or the numbers 0..3; anything else is refused naming the allowed values."""
    data = v5_file(copy_like(0x09, [1, 4], [4, 1], [1, 4], b"", []), F32, [1, 4], F32, [1, 4])
    for v in ("half_even", "half_up", "sdk_carry", "nncase1", 0, 1, 2, 3):
        _kpu.Model(data, act_round=v)
    allowed = "use 'half_even' (0, the default), 'half_up' (1), 'sdk_carry' (2) or 'nncase1' (3)"
    for bad, shown in ((4, "4"), (-1, "-1"), ("NNCASE1", "'NNCASE1'"), ("", "''")):
        with pytest.raises(ValueError) as e:
            _kpu.Model(data, act_round=bad)
        assert "error:2001" in str(e.value) and ("act_round=%s is not a rounding mode: %s" % (shown, allowed)) in str(
            e.value)
    with pytest.raises(TypeError, match="act_round must be a str or an int, not float"):
        _kpu.Model(data, act_round=3.0)
    with pytest.raises(OverflowError):
        _kpu.Model(data, act_round=2 ** 70)


def test_pre_release_v5_is_refused(testdata):
    data = testdata("kmodel_v5_nncase", "yolox_nano_224_old.kmodel").read_bytes()
    with pytest.raises(Exception) as e:
        _kpu.Model(data)
    msg = str(e.value)
    assert "2002" in msg and "pre-release / development-build v5" in msg and "byte 8" in msg

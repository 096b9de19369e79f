# SPDX-License-Identifier: Apache-2.0
"""One test per kmodel v4 opcode: a generated model (python/openkpu/kmodel_writer_v4.py) run through the _kpu
binding and compared with tests_host/nncase_reference.py — bit for bit for integer ops, with a float tolerance for
float ops (the core uses fmaf in nncase's order; the reference rounds once from float64)."""
import os
import struct
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import nncase_reference as ref  # noqa: E402
from openkpu import kmodel_writer_v4 as kw  # noqa: E402
from openkpu.kmodel_writer_v4 import CONST, F32, KPU, MAIN, U8, mr  # noqa: E402

_kpu = pytest.importorskip("_kpu")

RNG = np.random.default_rng(1234)
ROUND_MODES = {"half_even": 0, "half_up": 1, "sdk_carry": 2}


def run_model(nodes, in_bytes, in_dtype, out_ranges, main_mem, consts=b"", extra_out_dtype=None, v4_round=1,
              threads=0):
    """One main-memory input at 0 holding `in_bytes`; nodes as (opcode, body); returns the outputs' bytes."""
    w = kw.V4Writer(main_mem)
    es = 4 if in_dtype == F32 else 1
    n = max(1, len(in_bytes) // es)
    w.add_input(mr(MAIN, in_dtype, 0, n * es), (1, 1, 1, n))
    if consts:
        w.add_constant(consts)
    for r in out_ranges:
        w.add_output(r)
    for node in nodes:
        w.add(node)
    m = _kpu.Model(w.build(), v4_quant_round=v4_round, threads=threads)
    buf = bytes(in_bytes) + b"\0" * (n * es - len(in_bytes))
    m.set_input(0, buf)
    m.run()
    return [m.output(i)[0] for i in range(m.output_count())], m


def f32(a):
    return np.asarray(a, np.float32).tobytes()


def as_f32(b):
    return np.frombuffer(b, np.float32)


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(as_f32(got), np.asarray(want, np.float32).ravel(), rtol=rtol, atol=atol)


def test_binary_broadcast_all_ops():
    sa, sb, so = (1, 3, 4, 5), (1, 3, 1, 5), (1, 3, 4, 5)
    a = RNG.standard_normal(60).astype(np.float32)
    b = (RNG.standard_normal(15) + 3).astype(np.float32)
    for op in range(6):
        na, nb = 240, 60
        node = kw.binary(mr(MAIN, F32, 0, na), mr(MAIN, F32, na, nb), mr(MAIN, F32, 300, 240), op, sa, sb, so,
                         act=(-2.5, 2.5))
        (out,), _ = run_model([node], f32(np.concatenate([a, b])), F32, [mr(MAIN, F32, 300, 240)], 540)
        close(out, ref.binary(a, b, op, sa, sb, so, -2.5, 2.5))


def test_binary_same_shape_from_constants():
    a = RNG.standard_normal(8).astype(np.float32)
    c = RNG.standard_normal(8).astype(np.float32)
    node = kw.binary(mr(MAIN, F32, 0, 32), mr(CONST, F32, 0, 32), mr(MAIN, F32, 32, 32), kw.BIN_MUL, (1, 1, 2, 4),
                     (1, 1, 2, 4), (1, 1, 2, 4))
    (out,), _ = run_model([node], f32(a), F32, [mr(MAIN, F32, 32, 32)], 64, consts=f32(c))
    close(out, a * c)


@pytest.mark.parametrize("mode", ["half_up", "sdk_carry", "half_even"])
def test_quantized_binary_bit_exact(mode):
    sa, sb, so = (1, 2, 3, 8), (1, 2, 1, 8), (1, 2, 3, 8)
    a = RNG.integers(0, 256, 48, dtype=np.uint8)
    b = RNG.integers(0, 256, 16, dtype=np.uint8)
    p = (-120, 1717986918, 30, -7, 1288490189, 29, 100, 1431655765, 31)
    for op in range(6):
        if op == kw.BIN_DIV:
            pp = (-120, 1717986918, 24, 3, 1288490189, 29, 5, 1431655765, 20)
        elif op == kw.BIN_MUL:
            pp = (-120, 1717986918, 27, -7, 1288490189, 27, 100, 1431655765, 38)
        else:
            pp = p
        node = kw.quantized_binary(mr(MAIN, U8, 0, 48), mr(MAIN, U8, 48, 16), mr(MAIN, U8, 64, 48), op, sa, sb, so,
                                   *pp)
        (out,), _ = run_model([node], np.concatenate([a, b]).tobytes(), U8, [mr(MAIN, U8, 64, 48)], 112,
                              v4_round=ROUND_MODES[mode])
        want = ref.quantized_binary(a, b, op, sa, sb, so, pp, mode)
        assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist(), (op, mode)


@pytest.mark.parametrize("mode", ["half_up", "sdk_carry", "half_even"])
def test_quantized_binary_same_shape(mode):
    # 203 values of one shape: eight at a time where the CPU has AVX2 (every op but division), the rest one at a
    # time. The second parameter set's output multiplier is 2^20 with shift 22, so a quarter of the products are
    # exact ties; the third saturates at both ends.
    n = 203
    a = RNG.integers(0, 256, n, dtype=np.uint8)
    b = RNG.integers(0, 256, n, dtype=np.uint8)
    params = [(-120, 1717986918, 30, -7, 1288490189, 29, 100, 1431655765, 31),
              (-128, 1 << 30, 26, -100, 1 << 30, 27, 128, 1 << 20, 22),
              (0, 2147483647, 20, -255, 1073741824, 18, -50, 2000000000, 33)]
    for op in range(6):
        for pp in params:
            if op == kw.BIN_MUL:
                pp = pp[:8] + (pp[8] + 16,)
            node = kw.quantized_binary(mr(MAIN, U8, 0, n), mr(MAIN, U8, n, n), mr(MAIN, U8, 2 * n, n), op,
                                       (1, 1, 1, n), (1, 1, 1, n), (1, 1, 1, n), *pp)
            (out,), _ = run_model([node], np.concatenate([a, b]).tobytes(), U8, [mr(MAIN, U8, 2 * n, n)], 3 * n,
                                  v4_round=ROUND_MODES[mode])
            want = ref.quantized_binary(a, b, op, (1, 1, 1, n), (1, 1, 1, n), (1, 1, 1, n), pp, mode)
            assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist(), (op, mode, pp)


@pytest.mark.parametrize("mode", ["half_up", "sdk_carry", "half_even"])
def test_quantized_binary_broadcast_blocks(mode):
    # broadcast shapes with more outputs than one block of 256: ULFFD's softmax pair ([n, 2] against [n, 1]) and both
    # operands broadcast along different axes
    # (the last three are big enough to be split among threads, along their first axis of more than one element: a
    # wide on it, both, b wide on it)
    cases = [((1, 1, 300, 2), (1, 1, 300, 1), (1, 1, 300, 2)), ((1, 3, 1, 100), (1, 1, 7, 100), (1, 3, 7, 100)),
             ((1, 1, 4420, 2), (1, 1, 4420, 1), (1, 1, 4420, 2)), ((1, 3, 1, 800), (1, 3, 7, 800), (1, 3, 7, 800)),
             ((1, 1, 1, 2), (1, 1, 3001, 1), (1, 1, 3001, 2))]
    p = (-120, 1717986918, 30, -7, 1288490189, 29, 100, 1431655765, 31)
    for sa, sb, so in cases:
        na, nb, no = int(np.prod(sa)), int(np.prod(sb)), int(np.prod(so))
        a = RNG.integers(0, 256, na, dtype=np.uint8)
        b = RNG.integers(0, 256, nb, dtype=np.uint8)
        for op in range(6):
            pp = (-120, 1717986918, 24, 3, 1288490189, 29, 5, 1431655765, 20) if op == kw.BIN_DIV else p
            node = kw.quantized_binary(mr(MAIN, U8, 0, na), mr(MAIN, U8, na, nb), mr(MAIN, U8, na + nb, no), op, sa,
                                       sb, so, *pp)
            want = ref.quantized_binary(a, b, op, sa, sb, so, pp, mode)
            for threads in (1, 2, 3):
                (out,), _ = run_model([node], np.concatenate([a, b]).tobytes(), U8, [mr(MAIN, U8, na + nb, no)],
                                      na + nb + no, v4_round=ROUND_MODES[mode], threads=threads)
                assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist(), (op, mode, sa, sb, threads)


def test_binary_out_wider_than_the_broadcast_is_refused():
    # a and b both 1 on the last axis, out 8 there: no element of out beyond the broadcast's would be written, and
    # which stale bytes stayed would depend on the thread count
    sa = sb = (1, 1, 64, 1)
    so = (1, 1, 64, 8)
    p = (-120, 1717986918, 30, -7, 1288490189, 29, 100, 1431655765, 31)
    node = kw.quantized_binary(mr(MAIN, U8, 0, 64), mr(MAIN, U8, 64, 64), mr(MAIN, U8, 128, 512), 0, sa, sb, so, *p)
    with pytest.raises(ValueError) as e:
        run_model([node], bytes(128), U8, [mr(MAIN, U8, 128, 512)], 640)
    msg = str(e.value)
    assert "out_shape [1,1,64,8] is not the broadcast of a [1,1,64,1] and b [1,1,64,1]" in msg
    assert "dimension 3 is 8" in msg and "node 0 (quantized_binary" in msg


def test_concat_bytes():
    x = RNG.integers(0, 256, 2 * 3 * 4 + 2 * 5 * 4, dtype=np.uint8)
    inner, outer, dims = 4, 2, [3, 5]
    node = kw.concat(mr(MAIN, U8, 64, 64), [mr(MAIN, U8, 0, 24), mr(MAIN, U8, 24, 40)], dims, inner, outer)
    (out,), _ = run_model([node], x.tobytes(), U8, [mr(MAIN, U8, 64, 64)], 128)
    assert out == ref.concat([x[:24].tobytes(), x[24:].tobytes()], dims, inner, outer)


@pytest.mark.parametrize("groups,stride,dil,pad", [(1, 1, 1, (1, 1)), (2, 2, 1, (0, 1)), (4, 1, 2, (2, 2))])
def test_conv2d_float(groups, stride, dil, pad):
    ins, oc, fh, fw = (2, 4, 7, 6), 8, 3, 3
    x = RNG.standard_normal(int(np.prod(ins))).astype(np.float32)
    w = RNG.standard_normal(oc * (ins[1] // groups) * fh * fw).astype(np.float32)
    b = RNG.standard_normal(oc).astype(np.float32)
    want = ref.conv2d(x, w, b, ins, groups, oc, pad, pad, fh, fw, stride, stride, dil, dil, -1.0, 4.0)
    nout = want.size * 4
    node = kw.conv2d(mr(MAIN, F32, 0, x.size * 4), mr(MAIN, F32, x.size * 4, nout), ins, groups, oc, pad, pad, fh, fw,
                     stride, stride, dil, dil, w, b, act=(-1.0, 4.0))
    (out,), m = run_model([node], f32(x), F32, [mr(MAIN, F32, x.size * 4, nout)], x.size * 4 + nout)
    close(out, want, rtol=1e-5, atol=1e-5)
    assert m.output(0)[2:6] == want.shape


@pytest.mark.parametrize("mode", ["half_up", "sdk_carry"])
def test_quantized_conv2d_bit_exact(mode):
    ins, oc, groups = (1, 4, 6, 5), 6, 2
    x = RNG.integers(0, 256, int(np.prod(ins)), dtype=np.uint8)
    w = RNG.integers(0, 256, oc * 2 * 9, dtype=np.uint8)
    bias = RNG.integers(-5000, 5000, oc)
    q = (-128, -120, 1518500250, 40, 7)
    want = ref.conv2d(x, w, bias, ins, groups, oc, (1, 1), (1, 1), 3, 3, 1, 1, 1, 1, quant=q, mode=mode)
    node = kw.quantized_conv2d(mr(MAIN, U8, 0, x.size), mr(MAIN, U8, x.size, want.size), ins, groups, oc, (1, 1),
                               (1, 1), 3, 3, 1, 1, 1, 1, *q, bias, w)
    (out,), _ = run_model([node], x.tobytes(), U8, [mr(MAIN, U8, x.size, want.size)], x.size + want.size,
                          v4_round=ROUND_MODES[mode])
    assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist()


def test_conv2d_transpose_ignores_bias():
    ins, outs, fh = (1, 2, 3, 3), (1, 4, 7, 7), 3
    x = RNG.standard_normal(18).astype(np.float32)
    w = RNG.standard_normal(4 * 2 * 9).astype(np.float32)
    b = np.full(4, 100.0, np.float32)
    want = ref.conv2d_transpose(x, w, ins, outs, 1, (0, 0), (0, 0), 3, 3, 2, 2, 1, 1)
    node = kw.conv2d_transpose(mr(MAIN, F32, 0, 72), mr(MAIN, F32, 72, want.size * 4), ins, outs, 1, (0, 0), (0, 0),
                               3, 3, 2, 2, 1, 1, w, b)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 72, want.size * 4)], 72 + want.size * 4)
    close(out, want, atol=1e-5)


def test_dequantize_and_quantize():
    q = np.arange(256, dtype=np.uint8)
    deq = kw.dequantize(mr(MAIN, U8, 0, 256), mr(MAIN, F32, 256, 1024), 37, 12.5)
    quant = kw.quantize(mr(MAIN, F32, 256, 1020), mr(MAIN, U8, 1280, 255), 11, 0.9)  # odd count: roundf tail
    (o1, o2), _ = run_model([deq, quant], q.tobytes(), U8, [mr(MAIN, F32, 256, 1024), mr(MAIN, U8, 1280, 255)], 1536)
    want = ref.dequantize(q, 37, 12.5)
    close(o1, want, rtol=1e-6, atol=1e-7)
    got_q = np.frombuffer(o2, np.uint8)
    want_q = ref.quantize(as_f32(o1)[:255], 11, 0.9)
    assert got_q.tolist() == want_q.tolist()


@pytest.mark.parametrize("zero_point,scale", [(0, 1.0), (37, 12.5), (200, 0.0123), (128, -3.0)])
def test_dequantize_bit_exact(zero_point, scale):
    # 256 values: eight at a time (vfmadd) where the CPU has AVX2 and FMA; the float64 reference is exact here
    # (q * s and z are within 53 bits of each other), so one rounding to float32 is fmaf's
    q = np.arange(256, dtype=np.uint8)
    node = kw.dequantize(mr(MAIN, U8, 0, 256), mr(MAIN, F32, 256, 1024), zero_point, scale)
    (out,), _ = run_model([node], q.tobytes(), U8, [mr(MAIN, F32, 256, 1024)], 1280)
    assert out == ref.dequantize(q, zero_point, scale).tobytes()


def test_quantize_vector_and_tail_paths():
    # 37 values, an odd count: the first 32 eight at a time where the CPU allows (ties to even, clamped), then the
    # rest one at a time, the last rounding half away from zero; past both ends, infinities, and NaN (255: the
    # chip's saturating conversion gives INT32_MAX)
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 252.5, 253.5, 300.0, -300.0, np.inf, -np.inf, 1e30, -1e30,
                  0.49999997, 127.5, 128.5, 3.25, -0.0, 0.0, 5e-45, 254.5, 255.5, 256.5, 10.0, 11.5, 12.5, 13.5,
                  np.nan, 7.0, 8.5, 9.5, 100.5, 101.5, np.nan, 2.5, 4.5], np.float32)
    node = kw.quantize(mr(MAIN, F32, 0, 4 * len(x)), mr(MAIN, U8, 4 * len(x), len(x)), 0, 1.0)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, U8, 4 * len(x), len(x))], 5 * len(x))
    want = ref.quantize(np.nan_to_num(x, nan=0.0), 0, 1.0)
    want[np.isnan(x)] = 255
    assert list(out) == want.tolist()


def test_quantize_ties_pairs_even_tail_away():
    # x*scale + zp lands exactly on .5: pairs round to even (fcvt.w.s rne), the odd tail rounds away (roundf)
    x = np.array([0.5, 1.5, 2.5, 3.5, 2.5], np.float32)
    node = kw.quantize(mr(MAIN, F32, 0, 20), mr(MAIN, U8, 20, 5), 0, 1.0)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, U8, 20, 5)], 32)
    assert list(out) == [0, 2, 2, 4, 3]


def test_matmul():
    a = RNG.standard_normal(3 * 5).astype(np.float32)
    b = RNG.standard_normal(5 * 4).astype(np.float32)
    bias = RNG.standard_normal(4).astype(np.float32)
    node = kw.matmul(mr(MAIN, F32, 0, 60), mr(MAIN, F32, 60, 80), mr(MAIN, F32, 140, 48), 3, 5, 4, bias, act=(0, 1e9))
    (out,), _ = run_model([node], f32(np.concatenate([a, b])), F32, [mr(MAIN, F32, 140, 48)], 188)
    close(out, ref.matmul(a, b, bias, 3, 5, 4, 0, 1e9), atol=1e-5)


def test_quantized_matmul_bit_exact():
    a = RNG.integers(0, 256, 2 * 7, dtype=np.uint8)
    b = RNG.integers(0, 256, 7 * 3, dtype=np.uint8)
    bias = RNG.integers(-1000, 1000, 3)
    node = kw.quantized_matmul(mr(MAIN, U8, 0, 14), mr(MAIN, U8, 14, 21), mr(MAIN, U8, 35, 6), 2, 7, 3, -100, -131,
                               1717986918, 38, 9, bias)
    (out,), _ = run_model([node], np.concatenate([a, b]).tobytes(), U8, [mr(MAIN, U8, 35, 6)], 48)
    want = ref.quantized_matmul(a, b, bias, 2, 7, 3, -100, -131, 1717986918, 38, 9)
    assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist()


def test_pad_u8_and_f32_with_crop():
    ins = (1, 2, 3, 4)
    x = RNG.integers(0, 256, 24, dtype=np.uint8)
    pads = [(0, 0), (1, 0), (2, -1), (-1, 3)]
    want = ref.pad(x, ins, pads, 77, np.uint8)
    node = kw.pad(mr(MAIN, U8, 0, 24), mr(MAIN, U8, 32, want.size), ins, pads, 77)
    (out,), _ = run_model([node], x.tobytes(), U8, [mr(MAIN, U8, 32, want.size)], 32 + want.size)
    assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist()
    xf = RNG.standard_normal(24).astype(np.float32)
    wantf = ref.pad(xf, ins, pads, -1.5, np.float32)
    node = kw.pad(mr(MAIN, F32, 0, 96), mr(MAIN, F32, 96, wantf.size * 4), ins, pads, -1.5)
    (out,), _ = run_model([node], f32(xf), F32, [mr(MAIN, F32, 96, wantf.size * 4)], 96 + wantf.size * 4)
    assert as_f32(out).tolist() == wantf.ravel().tolist()


@pytest.mark.parametrize("op", range(4))
def test_reduce(op):
    ins, outs = (1, 3, 4, 5), (1, 3, 1, 1)
    x = RNG.standard_normal(60).astype(np.float32)
    init = 0.0 if op in (0, 3) else (1e30 if op == 1 else -1e30)
    node = kw.reduce(mr(MAIN, F32, 0, 240), mr(MAIN, F32, 240, 12), op, ins, outs, init)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 240, 12)], 252)
    close(out, ref.reduce(x, op, ins, outs, init), atol=1e-5)


@pytest.mark.parametrize("op,nhwc", [(0, False), (2, False), (1, False), (3, False), (0, True), (2, True)])
def test_reduce_window2d(op, nhwc):
    ins = (1, 5, 7, 3) if nhwc else (1, 3, 5, 7)
    x = RNG.standard_normal(105).astype(np.float32)
    init = {0: 0.0, 1: 3e38, 2: -3e38, 3: 0.0}[op]
    want = ref.reduce_window2d(x, op, ins, (1, 1), (0, 1), 3, 2, 2, 2, 1, 1, init, -1.0, 1.0, nhwc=nhwc)
    build = kw.cpu_reduce_window2d if nhwc else kw.reduce_window2d
    node = build(mr(MAIN, F32, 0, 420), mr(MAIN, F32, 420, want.size * 4), op, ins, (1, 1), (0, 1), 3, 2, 2, 2, 1, 1,
                 init, act=(-1.0, 1.0))
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 420, want.size * 4)], 420 + want.size * 4)
    close(out, want, atol=1e-6)


def test_memory_copy():
    x = RNG.standard_normal(10).astype(np.float32)
    node = kw.memory_copy(mr(MAIN, F32, 0, 40), mr(MAIN, F32, 40, 40))
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 40, 40)], 80)
    assert out == f32(x)


def test_resize_nearest_u8_and_bilinear_f32():
    ins = (1, 2, 3, 5)
    x = RNG.integers(0, 256, 30, dtype=np.uint8)
    want = ref.resize_nearest(x, ins, 7, 4, np.uint8)
    node = kw.resize_image(mr(MAIN, U8, 0, 30), mr(MAIN, U8, 32, want.size), ins, 7, 4, 1)
    (out,), _ = run_model([node], x.tobytes(), U8, [mr(MAIN, U8, 32, want.size)], 32 + want.size)
    assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist()
    xf = RNG.standard_normal(30).astype(np.float32)
    for align in (False, True):
        wantf = ref.resize_bilinear(xf, ins, 6, 9, align)
        node = kw.resize_image(mr(MAIN, F32, 0, 120), mr(MAIN, F32, 120, wantf.size * 4), ins, 6, 9, 0, align)
        (out,), _ = run_model([node], f32(xf), F32, [mr(MAIN, F32, 120, wantf.size * 4)], 120 + wantf.size * 4)
        close(out, wantf, atol=1e-5)


def test_softmax():
    x = (RNG.standard_normal(24) * 4).astype(np.float32)
    node = kw.softmax(mr(MAIN, F32, 0, 96), mr(MAIN, F32, 96, 96), 6, 4, 0.5)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 96, 96)], 192)
    close(out, ref.softmax(x, 6, 4, 0.5), atol=1e-6)


@pytest.mark.parametrize("dtype", [U8, F32])
def test_transpose(dtype):
    ins, perm = (2, 3, 4, 5), (0, 2, 3, 1)
    npdt = np.uint8 if dtype == U8 else np.float32
    es = 1 if dtype == U8 else 4
    x = (RNG.integers(0, 256, 120) if dtype == U8 else RNG.standard_normal(120)).astype(npdt)
    node = kw.transpose(mr(MAIN, dtype, 0, 120 * es), mr(MAIN, dtype, 120 * es, 120 * es), ins, perm)
    (out,), m = run_model([node], x.tobytes(), dtype, [mr(MAIN, dtype, 120 * es, 120 * es)], 240 * es)
    assert out == ref.transpose(x, ins, perm, npdt).tobytes()
    assert m.output(0)[2:6] == (2, 4, 5, 3)


def test_strided_slice_negative_stride():
    ins = (1, 3, 6, 8)
    x = RNG.integers(0, 256, 144, dtype=np.uint8)
    begin, end, strides = (0, 2, 1, 7), (1, -1, 6, 0), (1, -1, 2, -3)
    want = ref.strided_slice(x, ins, begin, end, strides, np.uint8)
    node = kw.strided_slice(mr(MAIN, U8, 0, 144), mr(MAIN, U8, 144, want.size), ins, begin, end, strides)
    (out,), _ = run_model([node], x.tobytes(), U8, [mr(MAIN, U8, 144, want.size)], 144 + want.size)
    assert out == want.tobytes()


@pytest.mark.parametrize("op", range(10))
def test_unary(op):
    x = (RNG.random(16) * 3 + 0.1).astype(np.float32)
    node = kw.unary(mr(MAIN, F32, 0, 64), mr(MAIN, F32, 64, 64), op)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 64, 64)], 128)
    close(out, ref.unary(x, op), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("in_place", [False, True])
def test_unary_split_among_threads(in_place):
    # 3001 elements: enough to be split (an element of exp counts ten of quantize); in place or not, the bytes are
    # those of one thread
    n = 3001
    x = (RNG.random(n) * 3 + 0.1).astype(np.float32)
    out_at = 0 if in_place else n * 4
    for op in range(10):
        node = kw.unary(mr(MAIN, F32, 0, n * 4), mr(MAIN, F32, out_at, n * 4), op)
        outs = [run_model([node], f32(x), F32, [mr(MAIN, F32, out_at, n * 4)], 2 * n * 4, threads=t)[0][0]
                for t in (1, 2, 3)]
        assert outs[1] == outs[0] and outs[2] == outs[0], op
        close(outs[0], ref.unary(x, op), rtol=2e-6, atol=1e-6)


def test_table_lookup1d():
    x = RNG.integers(0, 256, 40, dtype=np.uint8)
    table = RNG.integers(0, 256, 256, dtype=np.uint8)
    node = kw.table_lookup1d(mr(MAIN, U8, 0, 40), mr(CONST, U8, 0, 256), mr(MAIN, U8, 40, 40))
    (out,), _ = run_model([node], x.tobytes(), U8, [mr(MAIN, U8, 40, 40)], 80, consts=table.tobytes())
    assert np.frombuffer(out, np.uint8).tolist() == ref.table_lookup1d(x, table).tolist()


def test_nnil_unary_method():
    # clamp(exp(-x) * 2.5 - 1, 0, 6) with dup/pop/nop and a sigmoid-like tail
    prog = (kw.Nnil().lda().neg().exp().ldc(2.5).mul().ldc1().sub().dup().pop().nop().ldc0().ldc(6.0).clamp()
            .ldc1().add().ret().code)
    x = RNG.standard_normal(13).astype(np.float32)
    node = kw.nnil_unary_method(mr(MAIN, F32, 0, 52), mr(MAIN, F32, 52, 52), prog)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 52, 52)], 104)
    close(out, ref.nnil(x, prog), rtol=2e-6, atol=1e-6)


def test_cpu_conv2d_and_depthwise():
    ins, oc = (1, 6, 5, 3), 4
    x = RNG.standard_normal(90).astype(np.float32)
    w = RNG.standard_normal(oc * 9 * 3).astype(np.float32)
    b = RNG.standard_normal(oc).astype(np.float32)
    want = ref.cpu_conv2d_nhwc(x, w, b, ins, oc, (1, 1), (1, 1), 3, 3, 2, 1, 1, 1)
    node = kw.cpu_conv2d(mr(MAIN, F32, 0, 360), mr(MAIN, F32, 360, want.size * 4), ins, oc, (1, 1), (1, 1), 3, 3, 2,
                         1, 1, 1, w, b)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 360, want.size * 4)], 360 + want.size * 4)
    close(out, want, atol=1e-5)
    wd = RNG.standard_normal(3 * 9).astype(np.float32)
    bd = RNG.standard_normal(3).astype(np.float32)
    want = ref.cpu_conv2d_nhwc(x, wd, bd, ins, 3, (1, 1), (1, 1), 3, 3, 1, 1, 1, 1, 0, 6, depthwise=True)
    node = kw.cpu_depthwise_conv2d(mr(MAIN, F32, 0, 360), mr(MAIN, F32, 360, want.size * 4), ins, (1, 1), (1, 1), 3, 3,
                                   1, 1, 1, 1, wd, bd, act=(0, 6))
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, 360, want.size * 4)], 360 + want.size * 4)
    close(out, want, atol=1e-5)


def test_cpu_quantized_conv2d_and_depthwise():
    ins, oc = (1, 5, 4, 3), 2
    x = RNG.integers(0, 256, 60, dtype=np.uint8)
    q = (128, 120, 1518500250, 38, 100)
    w = RNG.integers(0, 256, oc * 9 * 3, dtype=np.uint8)
    b = RNG.integers(-3000, 3000, oc)
    want = ref.cpu_conv2d_nhwc(x, w, b, ins, oc, (1, 1), (1, 1), 3, 3, 1, 1, 1, 1, quant=q)
    node = kw.cpu_quantized_conv2d(mr(MAIN, U8, 0, 60), mr(MAIN, U8, 64, want.size), ins, oc, (1, 1), (1, 1), 3, 3,
                                   1, 1, 1, 1, *q, w, b)
    (out,), _ = run_model([node], x.tobytes(), U8, [mr(MAIN, U8, 64, want.size)], 64 + want.size)
    assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist()
    wd = RNG.integers(0, 256, 27, dtype=np.uint8)
    bd = RNG.integers(-3000, 3000, 3)
    want = ref.cpu_conv2d_nhwc(x, wd, bd, ins, 3, (0, 2), (1, 0), 3, 3, 1, 2, 1, 1, depthwise=True, quant=q)
    node = kw.cpu_quantized_depthwise_conv2d(mr(MAIN, U8, 0, 60), mr(MAIN, U8, 64, want.size), ins, (0, 2), (1, 0), 3,
                                             3, 1, 2, 1, 1, *q, wd, bd)
    (out,), _ = run_model([node], x.tobytes(), U8, [mr(MAIN, U8, 64, want.size)], 64 + want.size)
    assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist()


def _kpu_words(w, h, c, src, dst):
    words = [0] * 12
    words[0] = 0
    words[1] = src | (dst << 32)
    words[2] = (c - 1) | ((c - 1) << 32) | ((c - 1) << 48)
    words[3] = (w - 1) | ((h - 1) << 10) | ((w - 1) << 32) | ((h - 1) << 42)
    words[4] = 0 | (0 << 4) | (1 << 10) | (31 << 16)  # 1x1, bypass pool, load_para
    groups = 4 if w <= 16 else 2 if w <= 32 else 1
    row_len = (w + 63) // 64 if groups == 1 else 1
    words[5] = ((c * c) << 15)
    words[7] = (row_len * h) | (row_len << 16) | (groups << 28) | (1 << 31)
    words[8] = (row_len * h) | (row_len << 16) | (groups << 20)
    words[9] = 0
    words[10] = 0
    words[11] = ((w * h - 1) << 16) | ((w * h * c - 1) << 32)
    return struct.pack("<12Q", *words)


def _identity_tables(c):
    bn = b"".join(struct.pack("<Q", (1 & 0xFFFFFF)) for _ in range(c))  # mul 1, add 0, shift 0
    # weights 4*I: y = 4x; every segment: x_start -1, y_mul 1, shift 2 -> round((4x + 1) / 4) = x
    seg = 2 | (1 << 8) | (((-1) & ((1 << 36) - 1)) << 24)
    act = struct.pack("<16Q", *([seg] * 16)) + b"\0" * 16
    weights = (np.eye(c) * 4).astype(np.uint8)  # [oc][ic] for 1x1
    return bn, act, weights.tobytes()


@pytest.mark.parametrize("batches,w,h,c", [(1, 20, 6, 5), (3, 10, 5, 3), (2, 70, 4, 2)])
def test_kpu_upload_batched_and_kpu_conv2d_main_output(batches, w, h, c):
    """kpu_upload of n maps at a non-zero KPU row, then an identity 1x1 kpu_conv2d over the n batches with a
    main-memory output: must give the input back, batch after batch (layout, batching, main copy)."""
    _, rows = ref.kpu_layout_upload(np.zeros(c * h * w, np.uint8), c, h, w)
    src, dst = 1000, 1000 + rows * batches
    n = batches * c * h * w
    x = RNG.integers(0, 256, n, dtype=np.uint8)
    bn, act, weights = _identity_tables(c)
    up = kw.kpu_upload(mr(MAIN, U8, 0, n), mr(KPU, U8, src * 64, rows * batches * 64), (batches, c, h, w))
    conv = kw.kpu_conv2d(_kpu_words(w, h, c, src, dst), bn, act, weights, main_out=mr(MAIN, U8, n, n),
                         batches=batches, paddings=(8, 24, 40))
    (out,), m = run_model([up, conv], x.tobytes(), U8, [mr(MAIN, U8, n, n)], 2 * n)
    assert out == x.tobytes()
    layers = m.layers()
    assert len(layers) == 2


def test_iris_like_graph_output_shape_inference():
    # transpose (const weights -> main) + matmul, like nncase's iris build
    wt = RNG.standard_normal(12).astype(np.float32)
    node_t = kw.transpose(mr(CONST, F32, 0, 48), mr(MAIN, F32, 16, 48), (1, 1, 3, 4), (0, 1, 3, 2))
    node_m = kw.matmul(mr(MAIN, F32, 0, 16), mr(MAIN, F32, 16, 48), mr(MAIN, F32, 64, 12), 1, 4, 3, [0, 0, 0])
    x = RNG.standard_normal(4).astype(np.float32)
    (out,), m = run_model([node_t, node_m], f32(x), F32, [mr(MAIN, F32, 64, 12)], 76, consts=f32(wt))
    close(out, ref.matmul(x, wt.reshape(3, 4).T.ravel(), [0, 0, 0], 1, 4, 3), atol=1e-5)
    assert m.output(0)[1:6] == ("f", 1, 3, 1, 1)


# ---- randomized: the fast forms of quantized_binary, pad and transpose against the reference ----
from hypothesis import given, settings, strategies as st  # noqa: E402

SETTINGS = settings(max_examples=int(os.environ.get("OPENKPU_V4_OP_EXAMPLES", "60")), deadline=None,
                    derandomize=True)


@SETTINGS
@given(data=st.data())
def test_quantized_binary_random(data):
    """Same-shape (the per-operand tables and the branch-free half-up shift) and broadcast inputs, any op, any
    rounding, offsets, multipliers and shifts from the ordinary to the extreme."""
    draw = data.draw
    op = draw(st.integers(0, 5), label="op")
    mode = draw(st.sampled_from(sorted(ROUND_MODES)), label="mode")
    so = tuple(draw(st.lists(st.integers(1, 5), min_size=4, max_size=4), label="shape"))
    sb = so if draw(st.booleans(), label="same shape") else tuple(
        d if draw(st.booleans()) else 1 for d in so)
    # small multipliers and shifts put every remainder, exact halves included, under the rounding
    shift = st.one_of(st.integers(0, 63), st.integers(1, 4), st.sampled_from([0, 1, 31, 62, 63]))
    mul = st.one_of(st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-9, 9), st.sampled_from([-2 ** 31, 1]))
    off = st.integers(-300, 300)
    p = (draw(off), draw(mul), draw(shift), draw(off), draw(mul), draw(shift), draw(off), draw(mul), draw(shift))
    na, nb = int(np.prod(so)), int(np.prod(sb))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    a = rng.integers(0, 256, na, dtype=np.uint8)
    b = rng.integers(0, 256, nb, dtype=np.uint8)
    node = kw.quantized_binary(mr(MAIN, U8, 0, na), mr(MAIN, U8, na, nb), mr(MAIN, U8, na + nb, na), op, so, sb, so,
                               *p)
    (out,), _ = run_model([node], np.concatenate([a, b]).tobytes(), U8, [mr(MAIN, U8, na + nb, na)],
                          2 * na + nb, v4_round=ROUND_MODES[mode])
    want = ref.quantized_binary(a, b, op, so, sb, so, p, mode)
    assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist()


@SETTINGS
@given(data=st.data())
def test_pad_random(data):
    """Row-wise pad: positive, zero and negative (cropping) paddings on every axis, 1- and 4-byte elements."""
    draw = data.draw
    ins = tuple(draw(st.lists(st.integers(1, 5), min_size=4, max_size=4), label="shape"))
    pads = []
    for d in ins:
        before = draw(st.integers(-(d - 1), 3))
        after = draw(st.integers(-(d - 1 + min(before, 0)), 3))
        pads.append((before, after))
    if draw(st.booleans(), label="last axis whole"):  # (then the kernel copies whole planes' rows at once)
        pads[3] = (0, 0)
    f32_elems = draw(st.booleans(), label="f32")
    dtype, npdt, es, value = (F32, np.float32, 4, -1.5) if f32_elems else (U8, np.uint8, 1, 77)
    n = int(np.prod(ins))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    x = (rng.standard_normal(n) if f32_elems else rng.integers(0, 256, n)).astype(npdt)
    want = ref.pad(x, ins, pads, value, npdt)
    node = kw.pad(mr(MAIN, dtype, 0, n * es), mr(MAIN, dtype, n * es, want.size * es), ins, pads, value)
    (out,), _ = run_model([node], x.tobytes(), dtype, [mr(MAIN, dtype, n * es, want.size * es)], (n + want.size) * es)
    assert out == want.tobytes()


@SETTINGS
@given(data=st.data())
def test_transpose_random(data):
    """Every permutation of random shapes, 1- and 4-byte elements."""
    draw = data.draw
    ins = tuple(draw(st.lists(st.integers(1, 6), min_size=4, max_size=4), label="shape"))
    perm = tuple(draw(st.permutations(range(4)), label="perm"))
    dtype = draw(st.sampled_from([U8, F32]), label="dtype")
    npdt, es = (np.uint8, 1) if dtype == U8 else (np.float32, 4)
    n = int(np.prod(ins))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    x = (rng.integers(0, 256, n) if dtype == U8 else rng.standard_normal(n)).astype(npdt)
    node = kw.transpose(mr(MAIN, dtype, 0, n * es), mr(MAIN, dtype, n * es, n * es), ins, perm)
    (out,), _ = run_model([node], x.tobytes(), dtype, [mr(MAIN, dtype, n * es, n * es)], 2 * n * es)
    assert out == ref.transpose(x, ins, perm, npdt).tobytes()


@pytest.mark.parametrize("mode", sorted(ROUND_MODES))
@pytest.mark.parametrize("out_shift", [0, 1, 2, 3, 7, 31, 62, 63])
def test_quantized_binary_same_shape_every_remainder(mode, out_shift):
    """Operands rescaled by exactly 1 (2^30 >> 30) and output multipliers 1, 3 and -3, so the op's values land on every
    remainder of the output shift, exact halves included: each rounding rule is seen at its ties."""
    shape = (1, 2, 16, 16)
    a = np.arange(512, dtype=np.int64).astype(np.uint8)
    b = np.random.default_rng(out_shift).integers(0, 256, 512, dtype=np.uint8)
    for op in range(6):
        for out_mul in (1, 3, -3):
            p = (-128, 1 << 30, 30, -100, 1 << 30, 30, 128, out_mul, out_shift)
            node = kw.quantized_binary(mr(MAIN, U8, 0, 512), mr(MAIN, U8, 512, 512), mr(MAIN, U8, 1024, 512), op,
                                       shape, shape, shape, *p)
            (out,), _ = run_model([node], np.concatenate([a, b]).tobytes(), U8, [mr(MAIN, U8, 1024, 512)], 1536,
                                  v4_round=ROUND_MODES[mode])
            want = ref.quantized_binary(a, b, op, shape, shape, shape, p, mode)
            assert np.frombuffer(out, np.uint8).tolist() == want.ravel().tolist(), (op, out_mul)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_cpu_steps_shared_among_threads(threads):
    """quantize (an odd count: the last element's roundf tail must stay last), dequantize and same-shape
    quantized_binary large enough to be split over the emulator's threads: the reference's bytes for any count."""
    n = 40001  # > the 16384 elements a split needs; odd
    # every element a tie: pairs round to even, the odd tail away from zero, so a range cut at an odd place (making
    # an inner element some range's tail) changes a byte
    x = (np.arange(n) % 250 + 0.5).astype(np.float32)
    x[-1] = 2.5  # roundf takes the tail to 3, the pair rule would take it to 2
    quant = kw.quantize(mr(MAIN, F32, 0, n * 4), mr(MAIN, U8, n * 4, n), 0, 1.0)
    shape = (1, 1, 1, n)
    p = (-128, 1 << 30, 30, -100, 1 << 30, 30, 128, 3, 2)
    qbin = kw.quantized_binary(mr(MAIN, U8, n * 4, n), mr(MAIN, U8, n * 4, n), mr(MAIN, U8, n * 5, n), kw.BIN_ADD,
                               shape, shape, shape, *p)
    deq = kw.dequantize(mr(MAIN, U8, n * 5, n), mr(MAIN, F32, n * 6, n * 4), 37, 12.5)
    w = kw.V4Writer(n * 10)
    w.add_input(mr(MAIN, F32, 0, n * 4), shape)
    for r in (mr(MAIN, U8, n * 4, n), mr(MAIN, U8, n * 5, n), mr(MAIN, F32, n * 6, n * 4)):
        w.add_output(r)
    for node in (quant, qbin, deq):
        w.add(node)
    m = _kpu.Model(w.build(), threads=threads)
    m.set_input(0, x.tobytes())
    m.run()
    q = ref.quantize(x, 0, 1.0)
    assert np.frombuffer(m.output(0)[0], np.uint8).tolist() == q.tolist()
    assert q[-1] == 3 and q[2] == 2
    b = ref.quantized_binary(q, q, kw.BIN_ADD, shape, shape, shape, p)
    assert np.frombuffer(m.output(1)[0], np.uint8).tolist() == b.ravel().tolist()
    close(m.output(2)[0], ref.dequantize(b.ravel(), 37, 12.5), rtol=1e-6, atol=1e-7)


def reduce_in_order(x, op, in_shape, out_shape, init):
    """nncase v0.2's reduce bit for bit: each output starts at init and folds its inputs in float32, one at a time, in
    the input's C order (for each output, that is the reduced axes' indices in C order); mean then multiplies by
    (float)out_count / in_count."""
    x = np.asarray(x, np.float32).reshape(in_shape)
    axes = [k for k in range(4) if out_shape[k] == 1 and in_shape[k] != 1]
    out = np.full(out_shape, init, np.float32)
    for idx in np.ndindex(*[in_shape[k] for k in axes]):
        sl = [slice(None)] * 4
        for k, i in zip(axes, idx):
            sl[k] = slice(i, i + 1)
        v = x[tuple(sl)]
        if op == 1:
            out = np.where(v < out, v, out)  # std::min
        elif op == 2:
            out = np.where(out < v, v, out)  # std::max
        else:
            out = (out + v).astype(np.float32)
    if op == 0:
        out = (out * (np.float32(np.prod(out_shape)) / np.float32(np.prod(in_shape)))).astype(np.float32)
    return out


@SETTINGS
@given(data=st.data())
def test_reduce_random_bit_exact(data):
    """Every op over random shapes and any set of reduced axes (the last one reduced or not), bit for bit against the
    fold in nncase's order."""
    draw = data.draw
    ins = tuple(draw(st.lists(st.integers(1, 6), min_size=4, max_size=4), label="shape"))
    reduced = draw(st.lists(st.booleans(), min_size=4, max_size=4), label="reduced")
    outs = tuple(1 if r else d for r, d in zip(reduced, ins))
    op = draw(st.integers(0, 3), label="op")
    init = draw(st.sampled_from([0.0, 0.5, -3e38, 3e38]), label="init")
    n, n_out = int(np.prod(ins)), int(np.prod(outs))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    node = kw.reduce(mr(MAIN, F32, 0, n * 4), mr(MAIN, F32, n * 4, n_out * 4), op, ins, outs, init)
    (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, n * 4, n_out * 4)], (n + n_out) * 4)
    assert out == reduce_in_order(x, op, ins, outs, init).tobytes()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_pad_and_transpose_shared_among_threads(threads):
    """Pads and transposes big enough to be split over the emulator's threads (pad by output planes, transpose by the
    runs of its outer loops): RFB-320's space-to-batch and batch-to-space shapes (a pad of [1, 16, 30, 40] to
    [1, 16, 34, 44], its transpose to [2, 2, 272, 22], a crop, the transposes back), a pad with cropping and padding on
    every axis, 1- and 4-byte elements: the NumPy reference's bytes for any thread count."""
    rng = np.random.default_rng(threads)
    pad_cases = [((1, 16, 30, 40), [(0, 0), (0, 0), (2, 2), (2, 2)], U8),
                 ((4, 16, 17, 22), [(0, 0), (0, 0), (-1, -1), (-1, -1)], U8),
                 ((3, 9, 20, 31), [(1, -1), (-2, 3), (1, 2), (3, -2)], U8),
                 ((2, 8, 20, 30), [(0, 1), (1, 0), (-1, 2), (0, 0)], F32)]
    for ins, pads, dtype in pad_cases:
        npdt, es, value = (np.float32, 4, -1.5) if dtype == F32 else (np.uint8, 1, 77)
        n = int(np.prod(ins))
        x = (rng.standard_normal(n) if dtype == F32 else rng.integers(0, 256, n)).astype(npdt)
        want = ref.pad(x, ins, pads, value, npdt)
        node = kw.pad(mr(MAIN, dtype, 0, n * es), mr(MAIN, dtype, n * es, want.size * es), ins, pads, value)
        (out,), _ = run_model([node], x.tobytes(), dtype, [mr(MAIN, dtype, n * es, want.size * es)],
                              (n + want.size) * es, threads=threads)
        assert out == want.tobytes(), (ins, pads)
    transpose_cases = [((1, 16, 34, 44), (0, 1, 2, 3), U8), ((16, 17, 2, 44), (2, 0, 1, 3), U8),
                       ((4, 16, 15, 20), (2, 0, 3, 1), U8), ((9, 16, 12, 16), (2, 0, 3, 1), U8),
                       ((5, 5, 128, 10), (2, 0, 1, 3), U8), ((96, 5, 8, 5), (1, 3, 2, 0), F32)]
    for ins, perm, dtype in transpose_cases:
        npdt, es = (np.float32, 4) if dtype == F32 else (np.uint8, 1)
        n = int(np.prod(ins))
        x = (rng.standard_normal(n) if dtype == F32 else rng.integers(0, 256, n)).astype(npdt)
        node = kw.transpose(mr(MAIN, dtype, 0, n * es), mr(MAIN, dtype, n * es, n * es), ins, perm)
        (out,), _ = run_model([node], x.tobytes(), dtype, [mr(MAIN, dtype, n * es, n * es)], 2 * n * es,
                              threads=threads)
        assert out == ref.transpose(x, ins, perm, npdt).tobytes(), (ins, perm)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("op", [0, 1, 2, 3])
def test_reduce_shared_among_threads(op, threads):
    """A reduce big enough to be split over the emulator's threads by its first kept axis (the last axis reduced,
    as ULFFD's class scores; a middle one; a reduced axis before the first kept one, which runs whole): the fold in
    nncase's order, bit for bit, for any thread count."""
    rng = np.random.default_rng(op)
    for ins, outs in (((1, 1, 9001, 2), (1, 1, 9001, 1)), ((1, 3001, 3, 2), (1, 3001, 1, 2)),
                      ((1, 7, 3001, 1), (1, 1, 3001, 1))):
        n, n_out = int(np.prod(ins)), int(np.prod(outs))
        x = (rng.standard_normal(n) * 100).astype(np.float32)
        node = kw.reduce(mr(MAIN, F32, 0, n * 4), mr(MAIN, F32, n * 4, n_out * 4), op, ins, outs, 0.5)
        (out,), _ = run_model([node], f32(x), F32, [mr(MAIN, F32, n * 4, n_out * 4)], (n + n_out) * 4,
                              threads=threads)
        assert out == reduce_in_order(x, op, ins, outs, 0.5).tobytes(), (ins, outs)

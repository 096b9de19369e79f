# SPDX-License-Identifier: Apache-2.0
"""Threads: the emulator's worker pool (Model(threads=N)) and the binding releasing the GIL during run().

- the real models (v3, v4, v5) give the same outputs and KPU RAM for threads=1, 2, 3, also with every layer split one
  output channel (and one input channel) per task (OKPU_EMU_SPLIT_ALL=1);
- a layer writing over its own input rows (in place, or shifted a few rows) gives the NumPy reference's bytes on any
  thread count: a depthwise layer's tasks load their own input channels only when its output misses its input;
- the randomized bit-exact layer cases (test_kpu_bitexact.py: NumPy reference, every option set) pass with threads=3
  and every layer split;
- two Python threads run two models at once and get what each gives alone; a Python thread makes progress while
  another is inside a long run(); a second call on a model that is running raises RuntimeError.
"""
import functools
import os
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(__file__))

_kpu = pytest.importorskip("_kpu")
from openkpu import kmodel_writer as kw  # noqa: E402

import kpu_reference as kref  # noqa: E402
import test_kpu_bitexact as bx  # noqa: E402  (its case generator and check, run here on several threads)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REAL = [
    "mnist_v3_maixpy/mnist.kmodel",
    "face_detect_yolo2_v3_maixpy/facedetect.kmodel",
    "mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel",
    "yolo2_voc20_v4_nncase/yolo.kmodel",
    "ulffd_face_v4_nncase/slim-320.kmodel",
    "ulffd_face_v4_nncase/RFB-320.kmodel",  # its quantize and quantized_binary are big enough to be split
    "kmodel_v5_nncase/convnet_u8_v190.kmodel",
    "kmodel_v5_nncase/yolo320_v190.kmodel",
    "kmodel_v5_nncase/yolox_nano_224.kmodel",
]


def fill(model, seed=0):
    for i, t in enumerate(model.inputs()):
        rng = np.random.default_rng(seed + i)
        if t.typecode == "B":
            model.set_input(i, rng.integers(0, 256, t.bytes, dtype=np.uint8).tobytes())
        else:
            model.set_input(i, rng.uniform(-2, 2, t.bytes // 4).astype(np.float32).tobytes())


def run_once(data, seed=0, **opts):
    m = _kpu.Model(data, **opts)
    fill(m, seed)
    m.run()
    got = ([m.output(i).data for i in range(m.output_count())], m.kpu_ram(), m.memory()["backend_scratch"])
    m.free()
    return got


@pytest.mark.parametrize("rel", REAL)
def test_real_models_same_for_any_thread_count(rel, testdata, monkeypatch):
    data = testdata(*rel.split("/")).read_bytes()
    outs1, ram1, scratch1 = run_once(data, threads=1)
    for split in ("0", "1"):
        monkeypatch.setenv("OKPU_EMU_SPLIT_ALL", split)
        for threads in (2, 3):
            outs, ram, scratch = run_once(data, threads=threads)
            assert outs == outs1, "%s: outputs differ with threads=%d (split %s)" % (rel, threads, split)
            assert ram == ram1, "%s: KPU RAM differs with threads=%d (split %s)" % (rel, threads, split)
            if _kpu.default_threads() > 1:  # a build with threads: each worker's buffers are counted, for the
                # layers split over them (all of them when split per channel)
                want = scratch > scratch1 if split == "1" else scratch >= scratch1
                assert want, "%s: threads=%d reports %d scratch bytes, threads=1 %d (split %s)" % (
                    rel, threads, scratch, scratch1, split)


@settings(max_examples=int(os.environ.get("OPENKPU_THREADS_EXAMPLES", "60")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_layers_bitexact_threaded(monkeypatch, data):
    """test_kpu_bitexact's cases (against the NumPy reference) on three workers, every layer split per channel."""
    monkeypatch.setenv("OKPU_EMU_SPLIT_ALL", "1")
    monkeypatch.setattr(_kpu, "Model", functools.partial(_kpu.Model, threads=3))
    x, convs, eight_bit = bx.draw_case(data)
    bx.check_case(x, convs, eight_bit, convs[-1].main_out)


HEAVY_MAP = (64, 64, 256)  # w, h, c of heavy_model's layer


def heavy_model(seed):
    """A single 3x3 KPU layer, 64x64x256 -> 256 (2.4 G multiply-accumulates, its input and output filling KPU RAM): a
    run() that takes a while (about 25 ms on one thread of the README's machine)."""
    rng = np.random.default_rng(seed)
    w, h, c = HEAVY_MAP
    conv = kw.KpuConv(in_w=w, in_h=h, in_c=c, out_c=c, kernel=3, weights=rng.integers(0, 16, size=(c, c, 3, 3)),
                      bn_mul=[int(v) for v in rng.integers(1, 9, c)], bn_add=[0] * c, bn_shift=[15] * c,
                      act=kw.ActTable.linear(), src=0, dst=kw.kpu_map_rows(w, h, c), arg_x=-3, shr_x=1, main_out=0)
    return kw.V3Model(layers=[conv], outputs=[(0, w * h * c)]).to_bytes()


def _same_on_threads(data, x, conv, want, what=""):
    """A one-layer model run on 1, 2 and 3 threads gives `want` in main memory and at conv.dst in KPU RAM."""
    for threads in (1, 2, 3):
        m = _kpu.Model(data, threads=threads)
        m.set_input(0, x.tobytes())
        m.run()
        got = np.frombuffer(m.output(0)[0], np.uint8)[:want.size].reshape(want.shape)
        assert np.array_equal(got, want), "threads=%d%s: %d bytes differ" % (threads, what, int((got != want).sum()))
        ram = np.frombuffer(m.kpu_ram(), np.uint8)
        assert np.array_equal(kref.kpu_download(ram, conv.dst, conv.out_c, conv.out_h, conv.out_w), want), (
            "threads=%d%s: KPU RAM" % (threads, what))
        m.free()


@pytest.mark.parametrize("depthwise", [True, False])
@pytest.mark.parametrize("shift", [0, 1, -1, 7])
def test_layer_over_its_own_input(depthwise, shift, monkeypatch):
    """dst = src + shift rows: every output channel must still be computed from the input as it was before the layer
    (the emulator reads the whole input map before any output reaches KPU RAM), whatever the threads and the split."""
    rng = np.random.default_rng(10 + shift)
    w, h, c = 24, 10, 40  # two channels a KPU row (w <= 32): an output channel's rows interleave with input channels
    rows = kw.kpu_map_rows(w, h, c)
    src = 200
    conv = kw.KpuConv(in_w=w, in_h=h, in_c=c, out_c=c, kernel=3, depthwise=depthwise,
                      weights=rng.integers(0, 256, size=(c, 3, 3) if depthwise else (c, c, 3, 3)),
                      bn_mul=[int(v) for v in rng.integers(1, 64, c)], bn_add=[int(v) for v in rng.integers(-99, 99, c)],
                      bn_shift=[12] * c, act=kw.ActTable.linear(), src=src, dst=src + shift, arg_x=-5, shr_x=2,
                      arg_w=-3, shr_w=1, main_out=0, pad_value=7)
    assert abs(shift) < rows  # the regions overlap
    data = kw.V3Model(layers=[conv], outputs=[(0, w * h * c)]).to_bytes()
    x = rng.integers(0, 256, size=(c, h, w)).astype(np.uint8)
    want, _ = kref.kpu_layer(x, conv)
    for split in ("0", "1"):
        monkeypatch.setenv("OKPU_EMU_SPLIT_ALL", split)
        _same_on_threads(data, x, conv, want, " split %s" % split)


@pytest.mark.parametrize("kernel,pool_type", [(1, 0), (3, 0), (3, 5), (3, 6), (3, 7), (1, 6), (1, 1), (3, 1), (1, 2),
                                               (3, 2), (3, 3), (1, 4), (3, 4)])
@pytest.mark.parametrize("arg_x,shr_x", [(-6, 1), (-5, 2)])  # x-offset terms folded into the weights, and not
def test_few_quads_in_bands(kernel, pool_type, arg_x, shr_x):
    """A layer by quads with few of them over a large map (3x3: 6 output channels, a whole quad and a partial one; 1x1:
    18, the fewest a 1x1 layer is shared with) is computed in bands of rows, each band a task (kpu_emu.c,
    channel_bands): the NumPy reference's bytes in main memory and in KPU RAM on any thread count, picked pools
    included (types 5 and 6: a stride-2 pick of 66 x 65 = 4290 pixels, over the band limit; 7's is too small)."""
    rng = np.random.default_rng(20 + kernel + pool_type + shr_x)
    w, h, c, oc = 132, 130, 5, 6 if kernel == 3 else 18
    src, dst = 0, kw.kpu_map_rows(w, h, c) + 3
    conv = kw.KpuConv(in_w=w, in_h=h, in_c=c, out_c=oc, kernel=kernel, weights=rng.integers(0, 256, size=(oc, c, kernel, kernel)),
                      bn_mul=[int(v) for v in rng.integers(1, 64, oc)], bn_add=[int(v) for v in rng.integers(-99, 99, oc)],
                      bn_shift=[12] * oc, act=kw.ActTable.linear(), src=src, dst=dst, arg_x=arg_x, shr_x=shr_x,
                      arg_w=-3, shr_w=1, main_out=0, pad_value=9, pool_type=pool_type)
    data = kw.V3Model(layers=[conv], outputs=[(0, conv.out_w * conv.out_h * oc)]).to_bytes()
    x = rng.integers(0, 256, size=(c, h, w)).astype(np.uint8)
    want, _ = kref.kpu_layer(x, conv)
    _same_on_threads(data, x, conv, want)


def _spread_conv(rng, x, oc, kernel, depthwise, src, dst, pool_type, args, weight_end=256):
    """A layer (weights in 0 .. weight_end - 1: 1024 for a 16-bit model) whose batch norm is scaled to each channel's
    sums, so its outputs spread over 0..255 (saturated ones would hide wrong sums)."""
    c = x.shape[0]
    shape = (oc, kernel, kernel) if depthwise else (oc, c, kernel, kernel)
    weights = rng.integers(0, weight_end, size=shape)
    alu = kref.kpu_conv(x, weights, kernel, depthwise, args["pad_value"], args["arg_x"], args["shr_x"], args["arg_w"],
                        args["shr_w"], 0, kref.CONV_OFFSET_PER_CHANNEL)
    bn_mul, bn_add, bn_shift = [], [], []
    for ch in range(oc):
        lo, hi = int(alu[ch].min()), int(alu[ch].max())
        shift = max(0, min(15, int(np.ceil(np.log2(max(hi - lo, 1) / 200.0)))))
        mul = max(1, min(255, int(200 * 2 ** shift // max(hi - lo, 1))))
        bn_mul.append(mul)
        bn_shift.append(shift)
        bn_add.append(28 - ((lo * mul) >> shift))
    return kw.KpuConv(in_w=x.shape[2], in_h=x.shape[1], in_c=c, out_c=oc, kernel=kernel, depthwise=depthwise,
                      weights=weights, bn_mul=bn_mul, bn_add=bn_add, bn_shift=bn_shift, act=kw.ActTable.linear(),
                      src=src, dst=dst, main_out=0, pool_type=pool_type, **args)


@pytest.mark.parametrize("arg_x,shr_x", [(-8, 2), (-7, 1)])
@pytest.mark.parametrize("pool_type", [0, 1, 2, 3, 4, 8, 9, 5])
def test_1x1_after_its_producer(pool_type, arg_x, shr_x):
    """A 1x1 layer that reads the whole output of the layer run just before it takes that layer's dense output planes
    as its input (kpu_emu.c, "Forwarding"), with or without a max or mean pool of its own (a picked one, 5, loads the
    pixels it picks instead), its x-offset terms folded into the weights (arg_x -8 >> 2) or computed (-7 >> 1): the
    NumPy reference's bytes for both layers in KPU RAM and in main memory on 1-3 threads."""
    rng = np.random.default_rng(40 + pool_type + shr_x)
    w, h, c, oc = 40, 32, 16, 24
    x = rng.integers(0, 256, size=(c, h, w)).astype(np.uint8)
    args = dict(pad_value=9, arg_x=arg_x, shr_x=shr_x, arg_w=-3, shr_w=1)
    mid_row = kw.kpu_map_rows(w, h, c) + 3
    first = _spread_conv(rng, x, c, 3, True, 0, mid_row, 0, args)
    mid, _ = kref.kpu_layer(x, first)
    second = _spread_conv(rng, mid, oc, 1, False, mid_row, mid_row + kw.kpu_map_rows(w, h, c) + 5, pool_type, args)
    want, _ = kref.kpu_layer(mid, second)
    data = kw.V3Model(layers=[first, second], outputs=[(0, second.out_w * second.out_h * oc)]).to_bytes()
    for threads in (1, 2, 3):
        m = _kpu.Model(data, threads=threads)
        m.set_input(0, x.tobytes())
        m.run()
        got = np.frombuffer(m.output(0)[0], np.uint8)[:want.size].reshape(want.shape)
        assert np.array_equal(got, want), "threads=%d: %d bytes differ" % (threads, int((got != want).sum()))
        ram = np.frombuffer(m.kpu_ram(), np.uint8)
        assert np.array_equal(kref.kpu_download(ram, first.dst, c, h, w), mid), "threads=%d: first layer" % threads
        assert np.array_equal(kref.kpu_download(ram, second.dst, oc, second.out_h, second.out_w), want), (
            "threads=%d: KPU RAM" % threads)
        m.free()


@pytest.mark.parametrize("split", ["0", "1"])
@pytest.mark.parametrize("eight_bit", [True, False])
@pytest.mark.parametrize("kernel,depthwise,pool_type,shift", [
    (3, True, 0, None), (3, True, 0, 40), (1, True, 0, None), (1, False, 0, None), (3, False, 0, None),
    (3, False, 5, None), (1, False, 6, None), (3, True, 1, None)])
def test_rows(kernel, depthwise, pool_type, shift, eight_bit, split, monkeypatch):
    """A layer over a map of 16,384 pixels or more is shared by rows, band after band (kpu_emu.c, "Rows kept on one
    thread"): 8- and 16-bit weights, depthwise or not, 1x1 and 3x3, picked (types 5 and 6: 160x120 picked from
    320x240), written over its own input rows shifted (`shift`: the depthwise layer then loads before its bands), and
    with a 2x2 max pool (not by rows: its windows would straddle the bands) give the NumPy reference's bytes in main
    memory and in KPU RAM on 1-3 threads, also split one channel a task."""
    monkeypatch.setenv("OKPU_EMU_SPLIT_ALL", split)
    rng = np.random.default_rng(kernel * 10 + pool_type + (5 if depthwise else 0) + (0 if eight_bit else 50))
    w, h = (320, 240) if pool_type in (5, 6) else (160, 120)
    c = 8 if depthwise else 5
    oc = c if depthwise else 12
    src = 0
    dst = kw.kpu_map_rows(w, h, c) + 3 if shift is None else src + shift
    x = rng.integers(0, 256, size=(c, h, w)).astype(np.uint8)
    args = dict(pad_value=9, arg_x=-6, shr_x=1, arg_w=-3, shr_w=1)
    conv = _spread_conv(rng, x, oc, kernel, depthwise, src, dst, pool_type, args, 256 if eight_bit else 1024)
    data = kw.V3Model(layers=[conv], outputs=[(0, conv.out_w * conv.out_h * oc)], eight_bit=eight_bit).to_bytes()
    want, _ = kref.kpu_layer(x, conv)
    assert ((want > 0) & (want < 255)).mean() > 0.5, ((want == 0).mean(), (want == 255).mean())
    _same_on_threads(data, x, conv, want)


def _side_chain_model(rng, layout):
    """A v3 model with a detection head (1x1, 16 -> 4 channels: too few to share) and its dequantize between two
    shared depthwise layers (16 channels), and what the NumPy reference makes of it, run step after step over a
    simulated KPU RAM. layout "chain": the layer after the head writes the rows the head reads (its input is the
    forwarded output of the layer before it, so the two may overlap); "head_writes_next_input": the head writes rows
    the next layer reads; "head_loads_input": a CPU step before the head, so it loads its input from the rows the next
    layer overwrites."""
    w, h, c = 40, 30, 16
    rows = kw.kpu_map_rows(w, h, c)
    src, d1, d_head, d_last = 0, rows, 2 * rows, 2 * rows + 200
    if layout == "head_writes_next_input":
        d_head = 100  # inside the input map, which the next layer reads

    def conv(src_, dst, oc, kernel, depthwise, main_out=None):
        k = kernel
        shape = (oc, k, k) if depthwise else (oc, c, k, k)
        return kw.KpuConv(in_w=w, in_h=h, in_c=c, out_c=oc, kernel=k, depthwise=depthwise,
                          weights=rng.integers(0, 256, size=shape), bn_mul=[int(v) for v in rng.integers(1, 64, oc)],
                          bn_add=[int(v) for v in rng.integers(-99, 99, oc)], bn_shift=[12] * oc,
                          act=kw.ActTable.linear(), src=src_, dst=dst, arg_x=-7, shr_x=0, arg_w=-3, shr_w=1,
                          pad_value=3, main_out=main_out)

    head_out, deq_out, last_out = 0, 8192, 32768
    first = conv(src, d1, c, 3, True)
    head = conv(d1, d_head, 4, 1, False, main_out=head_out)
    deq = kw.Dequantize(inp=head_out, out=deq_out, count=4 * w * h, scale=np.float32(0.05), bias=np.float32(-3.0))
    nxt = conv(src, d1, c, 3, True)
    last = conv(d1, d_last, c, 1, False, main_out=last_out)
    layers = [first, head, deq, nxt, last]
    if layout == "head_loads_input":
        layers.insert(1, kw.Dequantize(inp=60000, out=61000, count=4, scale=np.float32(1.0), bias=np.float32(0.0)))
    data = kw.V3Model(layers=layers, outputs=[(deq_out, 4 * 4 * w * h), (last_out, c * w * h)]).to_bytes()

    x = rng.integers(0, 256, size=(c, h, w)).astype(np.uint8)
    ram = np.zeros(2 * 1024 * 1024, np.uint8)
    kref.kpu_upload(ram, src, x)
    outs = {}
    for conv_ in (first, head, nxt, last):
        y, _ = kref.kpu_layer(kref.kpu_download(ram, conv_.src, c, h, w), conv_)
        kref.kpu_upload(ram, conv_.dst, y)
        outs[id(conv_)] = y
    want_deq = kref.ref_dequantize(outs[id(head)].ravel(), np.float32(0.05), np.float32(-3.0))
    at = [next(i for i, layer in enumerate(layers) if layer is one) for one in (head, nxt)]
    return data, x, want_deq, outs[id(last)], ram, at[0], at[1]


@pytest.mark.parametrize("layout", ["chain", "head_writes_next_input", "head_loads_input"])
def test_side_chain(layout):
    """A head the emulator runs on one thread, with the CPU steps after it, runs as one task beside the next KPU
    layer's shared channels (kpu_emu.c, "Side chains") only where the two touch separate KPU RAM rows: the outputs and
    the whole KPU RAM are the step-by-step reference's on 1-3 threads either way, and the pair is made exactly when
    it may be (on 2 or more threads)."""
    rng = np.random.default_rng(7)
    data, x, want_deq, want_last, want_ram, head_at, next_at = _side_chain_model(rng, layout)
    for threads in (1, 2, 3):
        m = _kpu.Model(data, threads=threads)
        chains = m.side_chains()
        assert chains == ([(head_at, next_at)] if layout == "chain" and threads > 1 else []), (threads, chains)
        for _ in range(2):  # the second pass starts from the first's KPU RAM and forwarding state
            m.set_input(0, x.tobytes())  # (the input's rows: the head overwrites some in one layout)
            m.run()
            got_deq = np.frombuffer(m.output(0)[0], np.float32)
            assert got_deq.tobytes() == want_deq.astype(np.float32).tobytes(), "threads=%d: dequantized head" % threads
            got_last = np.frombuffer(m.output(1)[0], np.uint8).reshape(want_last.shape)
            assert np.array_equal(got_last, want_last), "threads=%d: last layer" % threads
            assert np.array_equal(np.frombuffer(m.kpu_ram(), np.uint8), want_ram), "threads=%d: KPU RAM" % threads
        m.free()


def _pair_model(rng, layout):
    """A v3 model: a depthwise layer, a 1x1 layer reading its output, and a depthwise layer reading the 1x1's (all
    c channels, shared on 2+ threads), with what the NumPy reference makes of it step after step over a simulated KPU
    RAM. layout "pair": the last layer writes the rows the 1x1 layer read; "narrow": the same on a 20x15 map (two
    channels share each 64-byte row of KPU RAM); "bands": an 80x60 map of 16 channels (the 1x1 layer's channels run in
    bands of rows: the pair runs one hand-out after the other); "rows": 160x120 (both layers shared by rows, band
    after band: not paired); "in_place": the last layer writes over its own input; "both_to_main": the 1x1 layer's
    output is copied to main memory too. Returns the model, its input, the expected outputs and KPU RAM, and the pairs
    the emulator should make on 2+ threads."""
    w, h, c = {"narrow": (20, 15, 32), "bands": (80, 60, 16), "rows": (160, 120, 16)}.get(layout, (40, 30, 16))
    rows = kw.kpu_map_rows(w, h, c)
    src, d1, d2 = 0, rows, 2 * rows
    d_last = {"in_place": d2}.get(layout, d1)

    def conv(src_, dst, kernel, depthwise, main_out=None):
        shape = (c, kernel, kernel) if depthwise else (c, c, kernel, kernel)
        return kw.KpuConv(in_w=w, in_h=h, in_c=c, out_c=c, kernel=kernel, depthwise=depthwise,
                          weights=rng.integers(0, 256, size=shape), bn_mul=[int(v) for v in rng.integers(1, 16, c)],
                          bn_add=[int(v) for v in rng.integers(-99, 99, c)], bn_shift=[13 if depthwise else 15] * c,
                          act=kw.ActTable.linear(), src=src_, dst=dst, arg_x=-7, shr_x=0, arg_w=-3, shr_w=1,
                          pad_value=3, main_out=main_out)

    n = c * w * h
    first = conv(src, d1, 3, True)
    one = conv(d1, d2, 1, False, main_out=n if layout == "both_to_main" else None)
    last = conv(d2, d_last, 3, True, main_out=0)
    outputs = [(0, n)] + ([(n, n)] if layout == "both_to_main" else [])
    data = kw.V3Model(layers=[first, one, last], outputs=outputs).to_bytes()

    x = rng.integers(0, 256, size=(c, h, w)).astype(np.uint8)
    ram = np.zeros(2 * 1024 * 1024, np.uint8)
    kref.kpu_upload(ram, src, x)
    outs = []
    for conv_ in (first, one, last):
        y, _ = kref.kpu_layer(kref.kpu_download(ram, conv_.src, c, h, w), conv_)
        kref.kpu_upload(ram, conv_.dst, y)
        outs.append(y)
    for y in outs:  # (saturated outputs would hide a layer that read the wrong bytes)
        assert ((y > 0) & (y < 255)).mean() > 0.3, ((y == 0).mean(), (y == 255).mean())
    want = [outs[2]] + ([outs[1]] if layout == "both_to_main" else [])
    pairs = [(1, 2)] if layout in ("pair", "narrow", "bands") else []
    return data, x, want, ram, pairs


@pytest.mark.parametrize("split_all", [False, True])
@pytest.mark.parametrize("layout", ["pair", "narrow", "bands", "rows", "in_place", "both_to_main"])
def test_pair(layout, split_all, monkeypatch):
    """A shared layer and the depthwise layer after it that reads its output run in one hand-out, each task a run of
    channels of both (kpu_emu.c, "Pairs"), only where their tasks cannot meet: the outputs and the whole KPU RAM are
    the step-by-step reference's on 1-3 threads either way, and the pair is made exactly when it may be; also with
    every layer split one channel a task (OKPU_EMU_SPLIT_ALL=1: in "narrow", tasks then write the two halves of the
    same 64-byte rows of KPU RAM)."""
    if split_all:
        monkeypatch.setenv("OKPU_EMU_SPLIT_ALL", "1")
    rng = np.random.default_rng(11)
    data, x, want, want_ram, want_pairs = _pair_model(rng, layout)
    for threads in (1, 2, 3):
        m = _kpu.Model(data, threads=threads)
        assert m.pairs() == (want_pairs if threads > 1 else []), (threads, m.pairs())
        for _ in range(2):  # the second pass starts from the first's KPU RAM and forwarding state
            m.set_input(0, x.tobytes())
            m.run()
            for k, y in enumerate(want):
                got = np.frombuffer(m.output(k)[0], np.uint8).reshape(y.shape)
                assert np.array_equal(got, y), "threads=%d: output %d" % (threads, k)
            assert np.array_equal(np.frombuffer(m.kpu_ram(), np.uint8), want_ram), "threads=%d: KPU RAM" % threads
        m.free()


def test_two_models_run_concurrently():
    datas = [heavy_model(1), heavy_model(2)]
    want = [run_once(d, seed=i, threads=1)[0] for i, d in enumerate(datas)]
    assert want[0] != want[1]
    models = [_kpu.Model(d, threads=2) for d in datas]
    got, errors = [None, None], []

    def work(i):
        try:
            fill(models[i], seed=i)
            for _ in range(2):
                models[i].run()
            got[i] = [models[i].output(k).data for k in range(models[i].output_count())]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert got == want


def test_run_releases_the_gil():
    """While one Python thread is inside run(), another keeps running Python code: its longest pause is far shorter
    than the run (with the GIL held through run() it would be the whole run)."""
    model = _kpu.Model(heavy_model(3), threads=1)
    fill(model)
    model.run()  # warm-up
    state = {"start": None, "end": None}

    def work():
        state["start"] = time.perf_counter()
        model.run()
        state["end"] = time.perf_counter()

    t = threading.Thread(target=work)
    stamps = []
    t.start()
    while t.is_alive():
        stamps.append(time.perf_counter())
    t.join()
    inside = [s for s in stamps if state["start"] <= s <= state["end"]]
    duration = state["end"] - state["start"]
    gaps = np.diff([state["start"]] + inside + [state["end"]])
    assert duration > 0.01, "the run was too short to tell (%.4f s)" % duration
    assert gaps.max() < duration / 2, "the main thread paused %.3f s of a %.3f s run()" % (gaps.max(), duration)


def test_same_model_guard():
    """A call that reads or changes the run state of a model another thread is running raises RuntimeError; the
    description methods still answer; after the run everything works again."""
    data = heavy_model(4)
    seen = {}
    for _ in range(5):  # until the main thread catches the other inside run() for every call
        model = _kpu.Model(data, threads=1)
        fill(model)
        t = threading.Thread(target=model.run)
        t.start()
        caught = False
        while t.is_alive() and not caught:
            try:
                model.output(0)
            except OSError:  # nothing ran yet: not inside run() either
                pass
            except RuntimeError as e:
                caught = True
                seen["output"] = str(e)
        if caught:
            assert model.layers() and model.memory()["kpu_macs"] > 0  # load-time facts still answer
            for name, call in (("run", model.run), ("set_input", lambda: fill(model)), ("kpu_ram", model.kpu_ram),
                               ("free", model.free)):  # free last: it succeeds if the run ended meanwhile
                try:
                    call()
                except RuntimeError as e:
                    seen[name] = str(e)
        t.join()
        if not model.freed():
            model.run()
            assert len(model.output(0).data) == HEAVY_MAP[0] * HEAVY_MAP[1] * HEAVY_MAP[2]
            model.free()
        if len(seen) == 5:
            break
    assert sorted(seen) == ["free", "kpu_ram", "output", "run", "set_input"], "caught inside run(): %s" % seen
    for name, text in seen.items():
        assert "model is running in another thread" in text, (name, text)


def test_threads_option():
    data = open(os.path.join(ROOT, "examples", "models", "digits.kmodel"), "rb").read()
    if hasattr(os, "sched_getaffinity"):
        assert _kpu.default_threads() == min(64, len(os.sched_getaffinity(0)))
    for bad in (-1, 65):
        with pytest.raises(ValueError, match=r"threads=%d: expected 0 .* or 1\.\.64" % bad):
            _kpu.Model(data, threads=bad)
    with pytest.raises(TypeError):
        _kpu.Model(data, threads="2")
    base = run_once(data, threads=0)
    wide = run_once(data, threads=64)
    assert base[:2] == wide[:2]
    # no layer of this small model is worth waking a worker: it takes no more working memory on 64 threads
    assert wide[2] == run_once(data, threads=1)[2]


def test_round_trip_ns():
    """_kpu.round_trip_ns(), the benchmark's check that the two processors sit near: a figure with two processors,
    None with one; the calling thread's processor set is the same after."""
    import subprocess
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_getaffinity on this system: the processor set cannot be checked")
    before = os.sched_getaffinity(0)
    ns = _kpu.round_trip_ns()
    assert os.sched_getaffinity(0) == before
    if len(before) < 2:
        assert ns is None
    else:
        assert isinstance(ns, int) and 0 < ns < 100000, ns
    # a process allowed one processor: nothing to measure
    one = min(before)
    r = subprocess.run([sys.executable, "-c", "import os, _kpu; os.sched_setaffinity(0, {%d}); "
                        "print(_kpu.round_trip_ns(), sorted(os.sched_getaffinity(0)))" % one],
                       capture_output=True, text=True, check=True)
    assert r.stdout.split(None, 1) == ["None", "[%d]\n" % one], r.stdout

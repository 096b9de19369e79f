# SPDX-License-Identifier: Apache-2.0
"""The KPU emulator (through `_kpu`) against the independent NumPy reference (kpu_reference.py), byte for byte.

Each case is a real kmodel v3 file made by openkpu.kmodel_writer: 1-3 randomized K210_CONV layers (widths around
the KPU layout boundaries 16/32/64, channels above the row groups, 1x1/3x3, depthwise, every pool type, 8- and
16-bit weights, extreme args/shifts, random BN and activation tables, KPU RAM regions anywhere including the last
rows, a main-memory output). Every case runs under every option value (act_round x conv_offset x mean_border) and
is compared with the reference for the same options: the model output and, for each layer, its map in KPU RAM.

The first tests check the reference itself on hand-computed cases, so a wrong reference cannot hide behind a
matching emulator.
"""
import fractions
import itertools
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(__file__))
import kpu_reference as ref  # noqa: E402

from openkpu import kmodel_writer as kw  # noqa: E402

OPTION_SETS = [dict(act_round=r, conv_offset=o, mean_border=b) for r, o, b in itertools.product((0, 1, 2, 3), (0, 1),
                                                                                                   (0, 1))]


# ---------------------------------------------------------------------------------------------------------------
# The reference on hand-computed cases

@pytest.mark.parametrize("v,s,even,up,carry", [
    (5, 1, 2, 3, 3),      # 2.5
    (7, 1, 4, 4, 4),      # 3.5
    (-5, 1, -2, -2, -4),  # -2.5: the SDK carry shift biases negatives one further down
    (-7, 1, -4, -3, -5),  # -3.5: (-7 >> 0) odd -> (-7 >> 1) - 1 = -5
    (6, 2, 2, 2, 2),      # 1.5
    (10, 2, 2, 3, 3),     # 2.5
    (9, 2, 2, 2, 2),      # 2.25
    (11, 2, 3, 3, 3),     # 2.75
    (-6, 2, -2, -1, -3),  # -1.5: carry: -6 >> 1 = -3 odd -> (-3 >> 1) - 1 = -3
    (123, 0, 123, 123, 123),
    (-1, 100, 0, 0, -2),  # far shifts stay exact: -2^-100 -> 0; carry: -1 odd -> -1 - 1
])
def test_round_shift_hand_cases(v, s, even, up, carry):
    assert ref.round_shift_int(v, s, ref.ROUND_HALF_EVEN) == even
    assert ref.round_shift_int(v, s, ref.ROUND_HALF_UP) == up
    assert ref.round_shift_int(v, s, ref.ROUND_SDK_CARRY) == carry


@pytest.mark.parametrize("v, s, nncase1", [
    (5, 1, 2), (7, 1, 4), (10, 2, 2), (11, 2, 3), (9, 2, 2),  # non-negative: ties to even, like HALF_EVEN
    (-5, 1, -4), (-7, 1, -4), (-6, 2, -2),                    # negative ties: to even
    (-5, 2, -3),   # kmodel-v5.md 4.3: -1.25 -> -3 (floor -2, remainder 3 > 2: one step further down)
    (-2, 2, -2),   # -0.5: floor -1 is odd on the tie -> -2
    (-1, 100, -2), (123, 0, 123),
])
def test_round_shift_nncase1_hand_cases(v, s, nncase1):
    assert ref.round_shift_int(v, s, ref.ROUND_NNCASE1) == nncase1


def test_layout_hand_cases():
    # W=16: 4 channels per row, pitch 16: (c5, y1, x3) in a 4-high map = row block 1 (4 rows) + pitch 16 + row 1
    assert ref.layout_offsets(6, 4, 16)[5, 1, 3] == 4 * 64 + 16 + 64 + 3
    # W=17..32: 2 per row, pitch 32
    assert ref.layout_offsets(3, 2, 17)[1, 1, 16] == 32 + 64 + 16
    assert ref.layout_offsets(3, 2, 17)[2, 0, 0] == 2 * 64
    # W=33: one channel per row
    assert ref.layout_offsets(3, 2, 33)[2, 1, 3] == 2 * 2 * 64 + 64 + 3
    # W=65: two rows per image row
    assert ref.layout_offsets(2, 3, 65)[1, 1, 64] == 1 * 2 * 3 * 64 + 1 * 2 * 64 + 64
    # W % 64 == 0: dense NCHW
    off = ref.layout_offsets(3, 5, 64)
    assert np.array_equal(off.reshape(-1), np.arange(3 * 5 * 64))
    assert ref.layout_rows(5, 4, 16) == 2 * 4 and ref.layout_rows(3, 7, 65) == 3 * 7 * 2
    ram = np.zeros(1 << 21, np.uint8)
    img = np.arange(5 * 4 * 17, dtype=np.uint8).reshape(5, 4, 17)
    ref.kpu_upload(ram, 32768 - ref.layout_rows(5, 4, 17), img)
    assert np.array_equal(ref.kpu_download(ram, 32768 - ref.layout_rows(5, 4, 17), 5, 4, 17), img)


def test_conv_hand_cases():
    # 3x3 on a 1x1 map: 8 padded taps read pad_value 2, the centre 10, all weights 1
    x = np.array([[[10]]])
    w = np.ones((1, 1, 3, 3))
    # sum(xw) = 26, sum(x) = 26, sum(w) = 9: 26 + (-1*26 >> 0) + (3*9 >> 1) + 5 = 26 - 26 + 13 + 5
    assert ref.kpu_conv(x, w, 3, False, 2, -1, 0, 3, 1, 5)[0, 0, 0] == 18
    # per input channel vs once: two channels with x = 1, arg_x = 1, shr_x = 1, arg_add = 3
    x = np.ones((2, 1, 1))
    w = np.zeros((1, 2, 1, 1))
    assert ref.kpu_conv(x, w, 1, False, 0, 1, 1, 0, 0, 3, ref.CONV_OFFSET_PER_CHANNEL)[0, 0, 0] == 0 + 0 + 6
    assert ref.kpu_conv(x, w, 1, False, 0, 1, 1, 0, 0, 3, ref.CONV_OFFSET_ONCE)[0, 0, 0] == 1 + 6
    # negative floor: arg_x = -1, sum 1, shr 1 -> floor(-0.5) = -1 per channel
    assert ref.kpu_conv(x, w, 1, False, 0, -1, 1, 0, 0, 0, ref.CONV_OFFSET_PER_CHANNEL)[0, 0, 0] == -2
    assert ref.kpu_conv(x, w, 1, False, 0, -1, 1, 0, 0, 0, ref.CONV_OFFSET_ONCE)[0, 0, 0] == -1
    # depthwise reads only its own channel
    x = np.array([[[1]], [[100]]])
    w = np.array([[[0, 0, 0], [0, 2, 0], [0, 0, 0]], [[0, 0, 0], [0, 3, 0], [0, 0, 0]]])
    assert list(ref.kpu_conv(x, w, 3, True, 0, 0, 0, 0, 0, 0)[:, 0, 0]) == [2, 300]


def test_bn_act_hand_cases():
    xs = [-(1 << 35), 64] + [1 << 30] * 14
    ym = [0, 3] + [0] * 14
    sh = [0, 1] + [0] * 14
    bias = [200, 7] + [0] * 14
    alu = np.array([[[100, 99, 110, 1000]]])
    # y = (alu*3 >> 2) - 10 = 65, 64, 72, 740
    out, _ = ref.kpu_bn_act(alu, [3], [-10], [2], xs, ym, sh, bias, ref.ROUND_HALF_EVEN)
    # 65 > 64 -> seg 1: (1*3)/2 = 1.5 -> 2, + 7; 64 is not > 64 -> seg 0: 0 + 200; 72: 24/2 = 12 + 7;
    # 740 > 2^30? no -> seg 1: 676*3/2 = 1014 + 7 -> clamp 255
    assert out.reshape(-1).tolist() == [9, 200, 19, 255]
    # a tie: (y - x_start) * y_mul = 1, shift 1 -> 0.5
    ym2 = [0, 1] + [0] * 14
    for mode, want in ((ref.ROUND_HALF_EVEN, 7), (ref.ROUND_HALF_UP, 8), (ref.ROUND_SDK_CARRY, 8)):
        o, _ = ref.kpu_bn_act(np.array([[[65]]]), [1], [0], [0], xs, ym2, sh, bias, mode)
        assert o[0, 0, 0] == want
    # negative tie: segment 1 with x_start 64, y_mul -1: (65-64)*-1 = -1 >> 1 = -0.5 (carry: (-1 >> 1) - 1 = -2)
    ym3 = [0, -1] + [0] * 14
    for mode, want in ((ref.ROUND_HALF_EVEN, 7), (ref.ROUND_HALF_UP, 7), (ref.ROUND_SDK_CARRY, 5)):
        o, _ = ref.kpu_bn_act(np.array([[[65]]]), [1], [0], [0], xs, ym3, sh, bias, mode)
        assert o[0, 0, 0] == want


def test_pool_hand_cases():
    a = np.array([[[1, 2, 5], [3, 4, 6], [7, 8, 9]]])
    assert ref.kpu_pool(a, 0).tolist() == a.tolist()
    assert ref.kpu_pool(a, 1).tolist() == [[[4]]]
    assert ref.kpu_pool(a, 2).tolist() == [[[2]]]  # 10 // 4
    assert ref.kpu_pool(a, 5).tolist() == [[[1]]]
    assert ref.kpu_pool(a, 6).tolist() == [[[2]]]
    # stride 1, one row/col past the end: max counts it as 0, mean clamps (or skips) it
    assert ref.kpu_pool(a, 9).tolist() == [[[4, 6, 6], [8, 9, 9], [8, 9, 9]]]
    assert ref.kpu_pool(a, 8, ref.MEAN_BORDER_REPLICATE).tolist() == [[[2, 4, 5], [5, 6, 7], [7, 8, 9]]]
    assert ref.kpu_pool(a, 8, ref.MEAN_BORDER_IN_RANGE).tolist() == [[[2, 4, 5], [5, 6, 7], [7, 8, 9]]]
    b = np.arange(16).reshape(1, 4, 4)
    assert ref.kpu_pool(b, 3).tolist() == [[[15]]]
    assert ref.kpu_pool(b, 4).tolist() == [[[120 // 16]]]
    assert ref.kpu_pool(b, 7).tolist() == [[[0]]]


def _f32_from_fraction(fr):
    """Round an exact rational to the nearest float32, ties to even."""
    f = np.float32(float(fr))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    best = min(cands, key=lambda c: (abs(fractions.Fraction(float(c)) - fr), int(np.array(c).view(np.int32)) & 1))
    return best


def test_fma_f32_exact():
    # A double-rounding trap: a*b + c = 1 + 2^-23 + 2^-24 - 2^-54, just below a float32 tie. float64 addition
    # rounds it onto the tie, and the cast then goes to even (1 + 2^-22); the correct fmaf result is 1 + 2^-23.
    a = np.float32((1 + 2.0 ** -15) * 2.0 ** -24)
    b = np.float32(1 - 2.0 ** -15)
    c = np.float32(1 + 2.0 ** -23)
    naive = np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    assert naive == np.float32(1 + 2.0 ** -22)
    assert ref.fma_f32(a, b, c) == np.float32(1 + 2.0 ** -23)
    rng = np.random.default_rng(7)
    for _ in range(3000):
        e = rng.integers(-30, 30, size=3)
        a, b, c = (np.float32(rng.standard_normal() * 2.0 ** int(k)) for k in e)
        if rng.random() < 0.3:  # near-cancellation
            c = np.float32(-np.float64(a) * np.float64(b))
        exact = fractions.Fraction(float(a)) * fractions.Fraction(float(b)) + fractions.Fraction(float(c))
        want = _f32_from_fraction(exact)
        got = ref.fma_f32(a, b, c)
        assert got == want or (got == 0 and want == 0), (a, b, c, got, want)


# ---------------------------------------------------------------------------------------------------------------
# Random layers

WIDTHS = [4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 130]
INT64_SAFE = 1 << 62


def _draw_u(data, bits_max, label):
    """An unsigned value, biased to edges."""
    return data.draw(st.one_of(st.just(0), st.just((1 << bits_max) - 1), st.integers(0, (1 << bits_max) - 1),
                               st.integers(0, 7)), label=label)


def _draw_s(data, bits, label, limit=None):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if limit is not None:
        lo, hi = max(lo, -limit), min(hi, limit)
    return data.draw(st.one_of(st.just(0), st.integers(lo, hi), st.integers(max(lo, -300), min(hi, 300)),
                               st.sampled_from([lo, hi])), label=label)


def draw_conv(data, in_w, in_h, in_c, eight_bit, src, dst_choice):
    kernel = data.draw(st.sampled_from([1, 3]), label="kernel")
    depthwise = data.draw(st.booleans(), label="depthwise")
    out_c = in_c if depthwise else data.draw(st.sampled_from([1, 2, 3, 4, 5, 8, 9, 17]), label="out_c")
    pool_type = data.draw(st.integers(0, 9), label="pool_type")
    wmax = 255 if eight_bit else 65535
    shape = (out_c, kernel, kernel) if depthwise else (out_c, in_c, kernel, kernel)
    seed = data.draw(st.integers(0, 2 ** 32 - 1), label="weight seed")
    rng = np.random.default_rng(seed)
    wkind = data.draw(st.sampled_from(["uniform", "small", "extreme"]), label="weights")
    if wkind == "uniform":
        weights = rng.integers(0, wmax + 1, size=shape)
    elif wkind == "small":
        weights = rng.integers(0, 4, size=shape)
    else:
        weights = rng.choice([0, wmax], size=shape)
    conv = dict(in_w=in_w, in_h=in_h, in_c=in_c, out_c=out_c, kernel=kernel, weights=weights, depthwise=depthwise,
                pool_type=pool_type, pad_value=data.draw(st.integers(0, 255), label="pad_value"),
                arg_x=_draw_s(data, 24, "arg_x"), shr_x=data.draw(st.integers(0, 15), label="shr_x"),
                arg_w=_draw_s(data, 24, "arg_w"), shr_w=data.draw(st.integers(0, 15), label="shr_w"),
                arg_add=_draw_s(data, 40, "arg_add"), src=src, dst=0)
    return conv, rng


def alu_bound(conv, eight_bit):
    """|alu| can never exceed this, whatever the input bytes (so BN/activation stay inside int64 for any input)."""
    kk = conv["kernel"] ** 2
    wmax = 255 if eight_bit else 65535
    per_ic = (kk * 255 * wmax + ((abs(conv["arg_x"]) * kk * 255) >> conv["shr_x"]) + 1
              + ((abs(conv["arg_w"]) * kk * wmax) >> conv["shr_w"]) + 1 + abs(conv["arg_add"]))
    return per_ic * (1 if conv["depthwise"] else conv["in_c"])


def fine_tables(data, rng, oc, alu):
    """Tables at unit scale around each channel's median accumulator: a one-unit difference in `alu` (per-channel vs
    once offsets) reaches the output bytes, and small activation shifts produce exact ties (the tie rules)."""
    med = [int(np.median(alu[c])) for c in range(oc)]
    bn_shift = [data.draw(st.integers(0, 2), label="fine bn_shift")] * oc
    bn_add = [max(-(1 << 31), min((1 << 31) - 1, -(m >> s))) for m, s in zip(med, bn_shift)]
    xs = [-(1 << 35)] + sorted(int(v) for v in rng.integers(-200, 200, 15))
    y_mul = [int(v) for v in rng.choice([1, 1, -1, 2, 3, -3], 16)]
    shifts = [int(v) for v in rng.integers(0, 3, 16)]
    bias = [int(v) for v in rng.integers(64, 192, 16)]
    return dict(bn_mul=[1] * oc, bn_add=bn_add, bn_shift=bn_shift,
                act=kw.ActTable(x_start=xs, y_mul=y_mul, shift=shifts, bias=bias))


def draw_tables(data, rng, conv, x, eight_bit):
    """BN and activation tables fitted to this layer's actual accumulator (segments where the values are), with
    magnitudes bounded so every intermediate stays inside int64 for ANY input (a C implementation with 64-bit
    intermediates is only defined there)."""
    oc = conv["out_c"]
    alus = [ref.kpu_conv(x, conv["weights"], conv["kernel"], conv["depthwise"], conv["pad_value"], conv["arg_x"],
                         conv["shr_x"], conv["arg_w"], conv["shr_w"], conv["arg_add"], mode) for mode in (0, 1)]
    amax = alu_bound(conv, eight_bit)
    if data.draw(st.sampled_from(["fine", "fitted", "fitted"]), label="table kind") == "fine":
        return fine_tables(data, rng, oc, alus[0])
    mul_limit = max(1, min((1 << 23) - 1, INT64_SAFE // amax // 2))
    bn_mul = [_draw_s(data, 24, "bn_mul", limit=mul_limit) for _ in range(min(oc, 3))]
    bn_mul = (bn_mul * oc)[:oc] if data.draw(st.booleans(), label="bn repeat") else \
        [int(v) for v in rng.integers(-mul_limit, mul_limit + 1, size=oc)]
    bn_shift = [int(v) for v in rng.integers(0, 16, size=oc)]
    if data.draw(st.booleans(), label="bn_shift fixed"):
        bn_shift = [data.draw(st.integers(0, 15), label="bn_shift")] * oc
    add_kind = data.draw(st.sampled_from(["small", "small", "small", "full"]), label="bn_add")
    add_lim = 1 << 31 if add_kind == "full" else 1000
    bn_add = [int(v) for v in rng.integers(-add_lim, add_lim, size=oc)]
    if data.draw(st.booleans(), label="bn_mul one sign"):
        bn_mul = [abs(v) for v in bn_mul]
    # y range over both conv modes
    ys = []
    for a in alus:
        y = (a.astype(object) * np.array(bn_mul, dtype=object)[:, None, None]) >> \
            np.array(bn_shift, dtype=object)[:, None, None]
        ys.append(y + np.array(bn_add, dtype=object)[:, None, None])
    yall = np.concatenate([y.reshape(-1) for y in ys]).astype(object)
    ylo, yhi = int(yall.min()), int(yall.max())
    xlim = (1 << 35) - 1
    n_pts = data.draw(st.integers(0, 15), label="segments inside the y range")
    if yhi > ylo:
        pts = [int(v) for v in rng.integers(max(ylo, -xlim), min(yhi, xlim) + 1, size=n_pts)] \
            if max(ylo, -xlim) <= min(yhi, xlim) else []
    else:
        pts = [max(-xlim, min(xlim, ylo - 1))] * min(n_pts, 1)
    if pts and data.draw(st.booleans(), label="first segment at the bottom of the range"):
        pts[0] = max(-xlim, min(xlim, ylo - 1))
    if data.draw(st.booleans(), label="unused segments above the range") and yhi < xlim:
        others = [int(v) for v in rng.integers(max(yhi, -xlim), xlim + 1, size=15 - len(pts))]
    else:
        others = [int(v) for v in rng.integers(-xlim, xlim + 1, size=15 - len(pts))]
    xs = [-(1 << 35)] + sorted(pts + others)
    # some exact hits on y values make the strict '>' matter
    if data.draw(st.booleans(), label="x_start on a y value") and yall.size:
        i = data.draw(st.integers(1, 15), label="segment")
        v = int(yall[int(rng.integers(0, yall.size))])
        if -xlim <= v <= xlim:
            xs[i] = v
            xs = [xs[0]] + sorted(xs[1:])
    ybound = (amax * max(abs(v) for v in bn_mul)) + (1 << 31)
    ymul_limit = max(0, min(32767, INT64_SAFE // (ybound + (1 << 35))))
    y_mul = [int(v) for v in rng.integers(-ymul_limit, ymul_limit + 1, size=16)]
    if data.draw(st.booleans(), label="y_mul extremes"):
        y_mul[int(rng.integers(0, 16))] = ymul_limit
        y_mul[int(rng.integers(0, 16))] = -ymul_limit
    # shifts: per segment, scaled so the segment's part of the y range spans about 0..255; or random / wild
    shift_kind = data.draw(st.sampled_from(["fitted", "fitted", "random", "large"]), label="act shift")
    if shift_kind == "fitted":
        shifts = []
        for i in range(16):
            lo = max(xs[i], ylo)
            hi = min(xs[i + 1] if i < 15 else yhi, yhi)
            span = max(1, (hi - xs[i]) * abs(y_mul[i]), (lo - xs[i]) * abs(y_mul[i]))
            shifts.append(max(0, min(255, span.bit_length() - 8 + int(rng.integers(-1, 2)))))
    elif shift_kind == "random":
        shifts = [int(v) for v in rng.integers(0, 64, size=16)]
    else:
        shifts = [int(v) for v in rng.integers(0, 256, size=16)]
    bias = [int(v) for v in rng.integers(0, 256 if shift_kind != "fitted" else 128, size=16)]
    return dict(bn_mul=bn_mul, bn_add=bn_add, bn_shift=bn_shift,
                act=kw.ActTable(x_start=xs, y_mul=y_mul, shift=shifts, bias=bias))


class Regions:
    """Disjoint KPU RAM row ranges."""

    def __init__(self, data):
        self.data = data
        self.used = []

    def take(self, rows):
        d = self.data
        where = d.draw(st.sampled_from(["end", "start", "any"]), label="placement")
        cands = []
        if where == "end":
            cands.append(kw.KPU_RAM_ROWS - rows)
        if where == "start":
            cands.append(0)
        cands.append(d.draw(st.integers(0, kw.KPU_RAM_ROWS - rows), label="row"))
        cands += list(range(0, kw.KPU_RAM_ROWS - rows, 997))
        for r in cands:
            if all(r + rows <= a or r >= a + n for a, n in self.used):
                self.used.append((r, rows))
                return r
        raise AssertionError("no free KPU RAM region")  # pragma: no cover


def compute_reference(x, convs, opts):
    """Run the chain in the reference; returns the list of per-layer u8 outputs and the max |intermediate|."""
    outs, mag = [], 0
    for c in convs:
        x, m = ref.kpu_layer(x, c, round_mode=opts["act_round"], offset_mode=opts["conv_offset"],
                             mean_border=opts["mean_border"])
        outs.append(x)
        mag = max(mag, m)
    return outs, mag


def describe_mismatch(layer_i, conv, want, got, opts):
    diff = np.argwhere(want != got)
    c, y, xx = diff[0]
    return ("layer %d (%dx%dx%d -> %d, k%d%s pool %d, shr_x %d arg_x %d shr_w %d arg_w %d arg_add %d pad %d) "
            "options %s: %d/%d bytes differ; first at (c=%d, y=%d, x=%d): expected %d got %d"
            % (layer_i, conv.in_w, conv.in_h, conv.in_c, conv.out_c, conv.kernel, " dw" if conv.depthwise else "",
               conv.pool_type, conv.shr_x, conv.arg_x, conv.shr_w, conv.arg_w, conv.arg_add, conv.pad_value, opts,
               len(diff), want.size, c, y, xx, want[c, y, xx], got[c, y, xx]))


def check_case(x, convs, eight_bit, main_out_addr):
    """Write the model, run it under every option set, compare output and KPU RAM maps with the reference."""
    import _kpu
    last = convs[-1]
    model = kw.V3Model(layers=list(convs), outputs=[(main_out_addr, last.out_bytes())], eight_bit=eight_bit)
    data = model.to_bytes()
    for opts in OPTION_SETS:
        outs, mag = compute_reference(x, convs, opts)
        assert mag < (1 << 63), "test generator left the int64 range"
        m = _kpu.Model(data, **opts)
        m.set_input(0, x.astype(np.uint8).tobytes())
        m.run()
        ram = np.frombuffer(m.kpu_ram(), dtype=np.uint8)
        for i, (c, want) in enumerate(zip(convs, outs)):
            got = ref.kpu_download(ram, c.dst, c.out_c, c.out_h, c.out_w)
            assert np.array_equal(got, want), "KPU RAM: " + describe_mismatch(i, c, want, got, opts)
        blob = m.output(0)[0]
        got = np.frombuffer(blob, dtype=np.uint8)[:last.out_bytes()]
        assert len(got) == last.out_bytes(), "output 0 has %d bytes, expected %d" % (len(blob), last.out_bytes())
        assert np.array_equal(got.reshape(outs[-1].shape), outs[-1]), \
            "main output: " + describe_mismatch(len(convs) - 1, last, outs[-1], got.reshape(outs[-1].shape), opts)


def draw_case(data):
    draw = data.draw
    eight_bit = draw(st.booleans())
    in_w = draw(st.one_of(st.sampled_from(WIDTHS), st.sampled_from(WIDTHS), st.integers(4, 140)), label="in_w")
    in_h = draw(st.integers(4, 12 if in_w > 64 else 20), label="in_h")
    in_c = draw(st.sampled_from([1, 2, 3, 4, 5, 7, 9]), label="in_c")
    n_layers = draw(st.integers(1, 3), label="layers")
    seed = draw(st.integers(0, 2 ** 32 - 1), label="input seed")
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, size=(in_c, in_h, in_w)).astype(np.uint8)
    if draw(st.booleans(), label="flat input"):
        x[:] = rng.integers(0, 256)
    regions = Regions(data)
    src = regions.take(kw.kpu_map_rows(in_w, in_h, in_c))
    convs, cur, (w, h, c) = [], x, (in_w, in_h, in_c)
    for i in range(n_layers):
        if i and (w < 4 or h < 4 or w > 512 or h > 256):
            break
        spec, lrng = draw_conv(data, w, h, c, eight_bit, src, None)
        ow, oh = w // kw.pool_stride(spec["pool_type"]), h // kw.pool_stride(spec["pool_type"])
        spec["dst"] = regions.take(kw.kpu_map_rows(ow, oh, spec["out_c"]))
        spec.update(draw_tables(data, lrng, spec, cur, eight_bit))
        conv = kw.KpuConv(**spec)
        convs.append(conv)
        cur, _ = ref.kpu_layer(cur, conv)
        src, (w, h, c) = spec["dst"], (ow, oh, spec["out_c"])
    convs[-1].main_out = draw(st.sampled_from([0, 8, 4096, 123456]), label="main_out")
    return x, convs, eight_bit


@settings(max_examples=int(os.environ.get("OPENKPU_BITEXACT_EXAMPLES", "120")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(st.data())
def test_random_layers_bitexact(data):
    pytest.importorskip("_kpu")
    x, convs, eight_bit = draw_case(data)
    check_case(x, convs, eight_bit, convs[-1].main_out)


@pytest.mark.parametrize("pool_type", range(10))
@pytest.mark.parametrize("in_w", [4, 16, 17, 32, 33, 64, 65])
@pytest.mark.parametrize("kernel,depthwise", [(1, False), (3, False), (3, True)])
def test_sweep_pool_width_kernel(pool_type, in_w, kernel, depthwise):
    """Every pool type x layout width x kernel, with fractional args (where the two conv offset modes differ)."""
    pytest.importorskip("_kpu")
    rng = np.random.default_rng(pool_type * 1000 + in_w * 10 + kernel + depthwise)
    in_c, in_h = 6, 8
    out_c = in_c if depthwise else 5
    shape = (out_c, kernel, kernel) if depthwise else (out_c, in_c, kernel, kernel)
    # a narrow input and small weights keep most accumulators near the median, where unit-scale tables put them
    # inside the u8 range: every option then changes some output bytes (asserted below)
    x = rng.integers(96, 104, size=(in_c, in_h, in_w)).astype(np.uint8)
    conv = kw.KpuConv(in_w=in_w, in_h=in_h, in_c=in_c, out_c=out_c, kernel=kernel, depthwise=depthwise,
                      weights=rng.integers(0, 16, size=shape), pool_type=pool_type, pad_value=37,
                      arg_x=-12345, shr_x=7, arg_w=-54321, shr_w=9, arg_add=1 << 20,
                      bn_mul=[1] * out_c, bn_add=[0] * out_c, bn_shift=[0] * out_c, act=kw.ActTable.linear(),
                      src=32768 - kw.kpu_map_rows(in_w, in_h, in_c), dst=100, main_out=16)
    want = {o: ref.kpu_conv(x, conv.weights, kernel, depthwise, 37, -12345, 7, -54321, 9, 1 << 20, o) for o in (0, 1)}
    # unit-scale tables around the median accumulator, with 1-bit activation shifts (ties)
    conv.bn_add = [-int(np.median(want[0][c])) for c in range(out_c)]
    conv.act = kw.ActTable([-(1 << 35)] + sorted(int(v) for v in rng.integers(-150, 150, 15)),
                           [int(v) for v in rng.choice([1, -1, 3], 16)], [1] * 16,
                           [int(v) for v in rng.integers(64, 192, 16)])
    outs = {(r, o): ref.kpu_layer(x, conv, round_mode=r, offset_mode=o)[0] for r in (0, 1, 2) for o in (0, 1)}
    if pool_type in (0, 8):  # (max/pick pools keep few unsaturated pixels of these random maps)
        if not depthwise:  # one input channel per output: the modes coincide for depthwise layers
            assert not np.array_equal(outs[0, 0], outs[0, 1]), "case should separate the conv offset modes"
        assert not np.array_equal(outs[0, 0], outs[1, 0]), "case should separate half-even from half-up"
        assert not np.array_equal(outs[1, 0], outs[2, 0]), "case should separate half-up from the SDK carry"
    check_case(x, [conv], True, 16)

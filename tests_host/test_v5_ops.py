# SPDX-License-Identifier: Apache-2.0
"""kmodel v5 stackvm tensor functions added after the first set (UNARY, SIGMOID, BROADCAST, REDUCE_ARG, PAD's
reflect / symmetric / edge modes), the release-group option (nncase=) and the main-buffer budget message, on
hand-built files (test_v5_models.py's writer) against independent NumPy references."""
import math
import struct

import numpy as np
import pytest

from test_v5_models import F32, U8, Code, out_array, run, strides, v5_file

_kpu = pytest.importorskip("_kpu")

RNG = np.random.default_rng(15)
I32, I64 = 2, 3


def elementwise(fid, fields, x, dt=F32):
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape))), c.shape(2, strides(list(x.shape)))
    c.tensor(fid, bytes([dt, 0, 1, 2]) + fields)
    _, raw = run(v5_file(c.b, dt, list(x.shape), dt, list(x.shape)), x)
    return out_array(raw, dt, x.shape)


def f32_of_f64(fn):
    """A float function as nncase's C kernels give it, correctly rounded: computed in float64, rounded once."""
    return lambda x: fn(x.astype(np.float64)).astype(np.float32)


UNARY = {  # unary_op (nncase 1.1.0+ numbering): reference, input range
    0: (np.abs, (-5, 5)),
    1: (f32_of_f64(np.arccos), (-1, 1)),
    2: (f32_of_f64(np.arcsin), (-1, 1)),
    3: (np.ceil, (-5, 5)),
    4: (f32_of_f64(np.cos), (-5, 5)),
    5: (f32_of_f64(np.exp), (-10, 10)),
    6: (np.floor, (-5, 5)),
    7: (f32_of_f64(np.log), (0.01, 50)),
    8: (np.negative, (-5, 5)),
    9: (np.rint, (-5, 5)),
    10: (lambda x: (np.float32(1) / np.sqrt(x)).astype(np.float32), (0.01, 50)),  # 1 / sqrtf: two roundings
    11: (np.sign, (-5, 5)),
    12: (f32_of_f64(np.sin), (-5, 5)),
    13: (np.sqrt, (0, 50)),
    14: (np.square, (-5, 5)),
    15: (f32_of_f64(np.tanh), (-5, 5)),
    18: (f32_of_f64(np.vectorize(math.erf)), (-3, 3)),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_matches_numpy(op):
    ref, (lo, hi) = UNARY[op]
    x = RNG.uniform(lo, hi, (2, 3, 17)).astype(np.float32)
    if op in (3, 6, 9):
        x[0, 0, :6] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]  # ties: round is half to even
    if op == 11:
        x[0, 0, 0] = 0.0
    got = elementwise(0x26, bytes([op]), x)
    assert np.array_equal(got, ref(x).astype(np.float32))


def test_unary_numbering_before_1_1_0():
    """up to 1.0.0-tcu_num there is no sign: 11 is sin, 14 tanh (kmodel-v5.md 7.4); UNARY is id 0x1D in 1.0.0"""
    x = RNG.uniform(-3, 3, (1, 40)).astype(np.float32)
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [1, 40]), c.shape(1, [40, 1]), c.shape(2, [40, 1])
    c.tensor(0x1D, bytes([F32, 0, 1, 2, 11]))
    data = v5_file(c.b, F32, [1, 40], F32, [1, 40])
    m = _kpu.Model(data, nncase="1.0.0")
    m.set_input(0, x.tobytes())
    m.run()
    assert np.array_equal(out_array(m.output(0)[0], F32, x.shape), f32_of_f64(np.sin)(x))


def test_unary_bitwise_not_on_f32_is_refused_by_name():
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [4]), c.shape(1, [1]), c.shape(2, [1])
    c.tensor(0x26, bytes([F32, 0, 1, 2, 16]))
    with pytest.raises(ValueError) as e:
        _kpu.Model(v5_file(c.b, F32, [4], F32, [4]))
    assert "2014" in str(e.value) and "UNARY" in str(e.value) and "unary_op 16" in str(e.value)


def test_sigmoid_matches_numpy():
    x = RNG.uniform(-12, 12, (1, 3, 5, 7)).astype(np.float32)
    e = np.exp(-x.astype(np.float64)).astype(np.float32)  # expf(-x) correctly rounded, then two float roundings
    want = (np.float32(1) / (np.float32(1) + e).astype(np.float32)).astype(np.float32)
    assert np.array_equal(elementwise(0x1D, b"", x), want)


@pytest.mark.parametrize("dt", [F32, U8])
def test_broadcast_matches_numpy(dt):
    x = (RNG.standard_normal((3, 1)).astype(np.float32) if dt == F32 else
         RNG.integers(0, 256, (3, 1), dtype=np.uint8))
    want = np.broadcast_to(x, (2, 3, 4))
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [3, 1]), c.shape(1, [1, 1]), c.shape(2, [2, 3, 4]), c.shape(3, strides([2, 3, 4]))
    c.tensor(0x02, bytes([dt, 0, 1, 2, 3]))
    _, raw = run(v5_file(c.b, dt, [3, 1], dt, [2, 3, 4]), x)
    assert np.array_equal(out_array(raw, dt, want.shape), want)


def test_broadcast_of_incompatible_shapes_is_refused():
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [3, 2]), c.shape(1, [2, 1]), c.shape(2, [2, 3, 4]), c.shape(3, strides([2, 3, 4]))
    c.tensor(0x02, bytes([F32, 0, 1, 2, 3]))
    with pytest.raises(ValueError) as e:
        _kpu.Model(v5_file(c.b, F32, [3, 2], F32, [2, 3, 4]))
    assert "2003" in str(e.value) and "BROADCAST" in str(e.value) and "does not broadcast" in str(e.value)


@pytest.mark.parametrize("op, axis, keep, last, odt", [(1, 1, 1, 0, I32), (0, 2, 0, 0, I64), (1, 0, 0, 1, I32),
                                                       (0, 1, 1, 1, I64)])
def test_reduce_arg_matches_numpy(op, axis, keep, last, odt):
    x = RNG.integers(-3, 4, (3, 5, 4)).astype(np.float32)  # small integers: many ties
    y = np.flip(x, axis) if last else x
    idx = (np.argmax if op else np.argmin)(y, axis=axis)
    if last:
        idx = x.shape[axis] - 1 - idx
    want = np.expand_dims(idx, axis) if keep else idx
    want = want.astype(np.int32 if odt == I32 else np.int64)
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape))), c.shape(2, strides(list(want.shape)))
    c.shape(3, [axis])
    c.tensor(0x18, bytes([F32, 0, 1, odt, 2, op, 3, keep, last]))
    esize = 4 if odt == I32 else 8
    data = v5_file(c.b, F32, list(x.shape), U8, [want.size * esize])  # the model exchanges the bytes as u8
    _, raw = run(data, x)
    assert np.array_equal(np.frombuffer(raw, want.dtype).reshape(want.shape), want)


@pytest.mark.parametrize("mode, np_mode", [(1, "reflect"), (2, "symmetric"), (3, "edge")])
def test_pad_modes_match_numpy(mode, np_mode):
    x = RNG.integers(0, 256, (1, 2, 4, 5), dtype=np.uint8)
    pads = [(0, 0), (1, 1), (3, 2), (4, 0)]  # reflect's limit on a dimension of 4 and of 5: 3 and 4
    want = np.pad(x, pads, mode=np_mode)
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.i4(0)
    c.shape(0, list(x.shape)), c.shape(1, strides(list(x.shape))), c.shape(2, strides(list(want.shape)))
    c.paddings(0, pads)
    c.tensor(0x13, bytes([U8, 0, 1, 2, 0, mode]))
    _, raw = run(v5_file(c.b, U8, list(x.shape), U8, list(want.shape)), x)
    assert np.array_equal(out_array(raw, U8, want.shape), want)


def test_reflect_pad_wider_than_its_dimension_is_refused():
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.i4(0)
    c.shape(0, [1, 4]), c.shape(1, [4, 1]), c.shape(2, [8, 1])
    c.paddings(0, [(0, 0), (4, 0)])
    c.tensor(0x13, bytes([U8, 0, 1, 2, 0, 1]))
    with pytest.raises(ValueError) as e:
        _kpu.Model(v5_file(c.b, U8, [1, 4], U8, [1, 8]))
    msg = str(e.value)
    assert "2003" in msg and "PAD" in msg and "reflect padding of axis 1 (4 before" in msg and "dimension - 1" in msg


# ---------------------------------------------------------------------------------------------------------------
# the release group: detected, or chosen with nncase=

def transpose_file():
    """TRANSPOSE is id 0x24 in 1.3.0-rc1 .. 1.9.0 (three release groups decode this code alike) and TRILU, CUMSUM or
    nothing in the older ones."""
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [1, 3, 4, 5]), c.shape(1, strides([1, 3, 4, 5])), c.shape(2, strides([1, 4, 5, 3]))
    c.shape(3, [0, 2, 3, 1])
    c.tensor(0x24, bytes([U8, 0, 1, 2, 3]))
    return v5_file(c.b, U8, [1, 3, 4, 5], U8, [1, 4, 5, 3])


@pytest.mark.parametrize("release", [None, "1.9.0", "1.8", "1.4.0", "1.3.0-rc1", "1.9.0.20230322", "v1.5.0"])
def test_compatible_release_decodes_the_same(release):
    x = RNG.integers(0, 256, (1, 3, 4, 5), dtype=np.uint8)
    m = _kpu.Model(transpose_file(), nncase=release)
    m.set_input(0, x.tobytes())
    m.run()
    assert np.array_equal(out_array(m.output(0)[0], U8, (1, 4, 5, 3)), x.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("release, group", [("1.0.0", "1.0.0"), ("1.2.0", "1.2.0"), ("1.0.0-rc1", "1.0.0-beta1")])
def test_incompatible_release_is_refused_naming_those_that_fit(release, group):
    with pytest.raises(ValueError) as e:
        _kpu.Model(transpose_file(), nncase=release)
    msg = str(e.value)
    assert "2002" in msg and ("nncase %s" % group) in msg and "does not decode" in msg
    assert "decodes it: 1.6.0 .. 1.9.0, 1.4.0 .. 1.5.0, 1.3.0-rc1 .. 1.3.x;" in msg and "without the option" in msg


@pytest.mark.parametrize("bad", ["2.0", "1.10.0", "0.2", "", "1.9.0-x"])
def test_unknown_release_name_is_a_parameter_error(bad):
    with pytest.raises(ValueError) as e:
        _kpu.Model(transpose_file(), nncase=bad)
    assert "2001" in str(e.value) and "1.0.0-tcu_num" in str(e.value) and "None to detect" in str(e.value)


def test_release_choice_reads_the_layout_of_that_release():
    """BINARY has no rshape_dest before 1.4.0 (18 bytes, kmodel-v5.md 7.3): a 1.3 file decodes only as 1.3 (and as
    nothing newer), and runs with that layout."""
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    c = Code()
    c.lea(0, 0), c.lea(0, a.nbytes), c.lea(1, 0)
    c.shape(0, [2, 3]), c.shape(1, [3, 1]), c.shape(2, [2, 3]), c.shape(3, [3, 1]), c.shape(4, [3, 1])
    c.tensor(0x01, bytes([F32, 0, 1, 2, 3, 4, 2]) + struct.pack("<2f", -1e30, 1e30))  # mul, no rshape_dest
    data = v5_file(c.b, F32, [12], F32, [2, 3])
    for release in (None, "1.3.0"):
        m = _kpu.Model(data, nncase=release)
        m.set_input(0, np.concatenate([a.ravel(), a.ravel()]).tobytes())
        m.run()
        assert np.array_equal(out_array(m.output(0)[0], F32, (2, 3)), a * a)
    with pytest.raises(ValueError) as e:
        _kpu.Model(data, nncase="1.9.0")
    assert "2002" in str(e.value) and "1.3.0-rc1 .. 1.3.x" in str(e.value)


def test_main_buffer_budget_names_the_largest_pool():
    c = Code()
    c.lea(0, 0), c.lea(1, 0)
    c.shape(0, [4]), c.shape(1, [1]), c.shape(2, [1])
    c.tensor(0x09, bytes([U8, 0, 1, 2]))
    data = v5_file(c.b, U8, [4], U8, [4], data_pool=7 << 20)
    with pytest.raises(ValueError) as e:
        _kpu.Model(data)
    msg = str(e.value)
    # the stackvm module's data mempool: model header 32 + module header 48 + the rdata descriptor 8, size at +4
    assert "2006" in msg and "at byte 92" in msg and "data pool" in msg and "header byte 20" not in msg
    assert "%d bytes" % ((7 << 20) + 8 + 8) in msg


def test_kpu_load_takes_the_release(tmp_path):
    kpu = pytest.importorskip("KPU")
    path = tmp_path / "transpose_v5.kmodel"
    path.write_bytes(transpose_file())
    net = kpu.load(str(path), nncase="1.4.0")
    try:
        assert net is not None
    finally:
        kpu.deinit(net)
    with pytest.raises(Exception) as e:
        kpu.load(str(path), nncase="1.1.0")
    assert "2002" in str(e.value) and "nncase 1.1.0" in str(e.value)


def gather_code(in_shape, axis, idx_shape, idx_loc, idx_off, dt):
    out_shape = list(in_shape[:axis]) + list(idx_shape) + list(in_shape[axis + 1:])
    c = Code()
    c.lea(0, 0), c.lea(1, 0), c.lea(idx_loc, idx_off)
    c.shape(0, list(in_shape)), c.shape(1, out_shape), c.shape(2, strides(list(in_shape)))
    c.shape(3, strides(out_shape)), c.shape(4, list(idx_shape))
    c.tensor(0x0C, bytes([dt, 0, 1, 2, 3, 4, axis]))
    return c.b, out_shape


@pytest.mark.parametrize("axis, idx_shape", [(0, [2]), (1, [2, 3]), (2, [5])])
def test_gather_matches_numpy(axis, idx_shape):
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    idx = RNG.integers(0, x.shape[axis], idx_shape).astype(np.int32)
    code, out_shape = gather_code(x.shape, axis, idx_shape, 2, 0, F32)
    _, raw = run(v5_file(code, F32, list(x.shape), F32, out_shape, rdata=idx.tobytes()), x)
    assert np.array_equal(out_array(raw, F32, out_shape), np.take(x, idx, axis=axis))


def test_gather_with_indices_from_the_input_checks_them_while_running():
    x = RNG.integers(0, 256, (6, 4), dtype=np.uint8)
    idx = np.array([5, 0, 3], np.int32)
    code, out_shape = gather_code(x.shape, 0, [3], 0, x.nbytes, U8)
    data = v5_file(code, U8, [x.nbytes + idx.nbytes], U8, out_shape)
    _, raw = run(data, np.concatenate([x.ravel(), idx.view(np.uint8)]))
    assert np.array_equal(out_array(raw, U8, out_shape), x[idx])
    m = _kpu.Model(data)
    m.set_input(0, np.concatenate([x.ravel(), np.array([1, 6, 0], np.int32).view(np.uint8)]).tobytes())
    with pytest.raises(Exception) as e:
        m.run()
    assert "2008" in str(e.value) and "GATHER" in str(e.value) and "index 6" in str(e.value)


def test_gather_constant_index_out_of_range_is_refused_at_load():
    x_shape = (3, 4)
    code, out_shape = gather_code(x_shape, 1, [2], 2, 0, F32)
    with pytest.raises(ValueError) as e:
        _kpu.Model(v5_file(code, F32, list(x_shape), F32, out_shape, rdata=np.array([1, -1], np.int32).tobytes()))
    msg = str(e.value)
    assert "2003" in msg and "GATHER" in msg and "index 1 in .rdata is -1" in msg and "0 .. 3" in msg

# SPDX-License-Identifier: Apache-2.0
"""Malformed models and inputs must give a clear error, never a crash.

Starting from valid models (generated with openkpu.kmodel_writer, plus the real ones in ../shared/testdata when
present) this file produces truncations at many points, absurd header fields, layer tables and body fields,
offsets and sizes pointing outside the file, unknown layer types, impossible KPU layer arguments, other format
versions and random bytes. Each one is loaded by `_kpu` (and through the `KPU` shim): the error must carry MaixPy's
numeric code and say where (the layer and/or the byte). Every file is ALSO fed to the sanitizer-built CLI
`build/san/okpu_run` (ASan + UBSan): exit code 2 with an `error <code>` line when `_kpu` refused it, and never a
sanitizer report.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from openkpu import kmodel_writer as kw  # noqa: E402
from openkpu import kmodel_writer_v4 as kw4  # noqa: E402
from kpu_layers_from_file import v4_layout  # noqa: E402

_kpu = pytest.importorskip("_kpu")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ERR_VERSION, ERR_FORMAT, ERR_NO_MEM, ERR_GET_CONV, ERR_RUN = 2002, 2003, 2006, 2007, 2008
LOAD_CODES = {ERR_VERSION, ERR_FORMAT, ERR_NO_MEM, ERR_GET_CONV}
BAD = 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------------------------
# Valid starting points

def base_model():
    """An MNIST-shaped chain using 8 layer types: conv, conv (main out), dequantize, flatten, FC, quantize,
    add_padding, conv 4x4, remove_padding, dequantize, softmax."""
    rng = np.random.default_rng(5)

    def conv(w, h, ic, oc, k, pool, src, dst, main_out=None):
        return kw.KpuConv(in_w=w, in_h=h, in_c=ic, out_c=oc, kernel=k, weights=rng.integers(0, 256, (oc, ic, k, k)),
                          bn_mul=[int(v) for v in rng.integers(1, 1000, oc)], bn_add=[0] * oc, bn_shift=[12] * oc,
                          act=kw.ActTable.linear(1, 4), pool_type=pool, pad_value=3, arg_x=-100, shr_x=2, arg_w=-50,
                          shr_w=3, arg_add=1000, src=src, dst=dst, main_out=main_out)

    layers = [
        conv(16, 8, 3, 4, 3, 1, 0, 100),
        conv(8, 4, 4, 8, 1, 0, 100, 200, main_out=0),  # 256 bytes at 0
        kw.Dequantize(inp=0, out=256, count=256, scale=0.01, bias=-1.0),
        kw.TensorflowFlatten(inp=256, out=1280, width=8, height=4, channels=8),
        kw.FullyConnected(inp=1280, out=2304, weights=rng.standard_normal((10, 256)).astype(np.float32),
                          bias=np.zeros(10), act=1),
        kw.Quantize(inp=2304, out=2344, count=10, scale=0.05, bias=0.0),
        kw.K210AddPadding(inp=2344, kpu_out=300, channels=10),
        conv(4, 4, 10, 10, 1, 0, 300, 400, main_out=2360),  # 160 bytes
        kw.K210RemovePadding(inp=2360, out=2520, channels=10),
        kw.Dequantize(inp=2520, out=2536, count=10, scale=0.1, bias=-3.0),
        kw.Softmax(inp=2536, out=2576, channels=10),
    ]
    return kw.V3Model(layers=layers, outputs=[(2576, 40)]).to_bytes()


def fc_model():
    rng = np.random.default_rng(6)
    layers = [kw.FullyConnected(inp=0, out=16, weights=rng.standard_normal((10, 4)), bias=np.zeros(10), act=1),
              kw.FullyConnected(inp=16, out=0, weights=rng.standard_normal((3, 10)), bias=np.zeros(3))]
    return kw.V3Model(layers=layers, outputs=[(0, 12)], omit_last_padding=True).to_bytes()


BASE = base_model()
FC = fc_model()


# ---------------------------------------------------------------------------------------------------------------
# Loading and checking

def try_load(data):
    """(None, None) when `_kpu` loads and runs the model, else (code, message)."""
    try:
        m = _kpu.Model(data)
    except ValueError as e:
        msg = str(e)
        code = re.search(r"error:(\d+)", msg)
        assert code, "load error without a numeric code: %r" % msg
        return int(code.group(1)), msg
    # loaded: it must run on its default input without crashing (a run error is allowed, with a code)
    ins = m.inputs()
    m.set_input(0, bytes(ins[0][-1]))
    try:
        m.run()
    except OSError as e:
        assert e.errno and str(e.errno) in str(e), "run error without its code: %r" % str(e)
    return None, None


class Case:
    def __init__(self, name, data, must_fail=True, codes=LOAD_CODES, where=None):
        self.name, self.data, self.must_fail, self.codes, self.where = name, bytes(data), must_fail, codes, where

    def check(self):
        code, msg = try_load(self.data)
        if code is None:
            assert not self.must_fail, "%s: loaded, expected a load error" % self.name
            return None
        assert code in self.codes, "%s: error code %d, expected one of %s: %s" % (self.name, code, sorted(self.codes),
                                                                                 msg)
        assert str(code) in msg
        where = self.where if self.where is not None else ["byte"]
        assert any(w in msg for w in where), "%s: message does not say where (%s): %s" % (self.name, where, msg)
        return code


def put_u32(data, offset, value):
    b = bytearray(data)
    b[offset:offset + 4] = struct.pack("<I", value & 0xFFFFFFFF)
    return bytes(b)


def layer_containing(pm, offset):
    for L in pm.layers:
        if L.body_offset <= offset < L.body_offset + L.body_size:
            return L.index
    return None


# ---------------------------------------------------------------------------------------------------------------
# Case generators

def truncation_cases(name, data, n_random=12, seed=0):
    pm = kw.parse_v3(data)
    tables_end = 28 + 8 * (pm.output_count + pm.layers_length)
    cuts = {0, 1, 3, 4, 8, 27, 28, 29, tables_end - 4, tables_end - 1, tables_end}
    for L in pm.layers:
        for d in (0, 1, 4, 12, 23, 24, 100, L.body_size // 2, L.body_size - 8):
            if 0 <= d < L.body_size:
                cuts.add(L.body_offset + d)
    rng = np.random.default_rng(seed)
    cuts |= {int(v) for v in rng.integers(0, len(data), n_random)}
    cases = []
    for cut in sorted(c for c in cuts if 0 <= c < len(data)):
        i = layer_containing(pm, cut)
        near_end = cut >= len(data) - 7  # the tolerated unwritten padding of the last body
        where = ["layer %d" % i] if i is not None and not near_end else ["byte", "bytes"]
        codes = {ERR_VERSION} if cut < 4 else {ERR_VERSION, ERR_FORMAT}
        cases.append(Case("%s cut at %d" % (name, cut), data[:cut], must_fail=not near_end, codes=codes, where=where))
    return cases


HEADER_MUST_FAIL = {  # field index -> values that can never describe a valid file
    0: [0, 1, 2, 4, 5, BAD],
    2: [1, BAD],
    3: [0, 0x7FFFFFFF, 0x80000000, BAD],
    5: [0, 1, 0x7FFFFFFF, BAD],
    6: [0x7FFFFFFF, BAD, 1 << 20],
}
HEADER_MAYBE = {1: [0, 2, BAD], 4: [0, 32768, BAD], 6: [0]}


def header_cases(name, data):
    cases = []
    for field, values in HEADER_MUST_FAIL.items():
        for v in values:
            codes = {ERR_VERSION} if field == 0 else LOAD_CODES
            where = ["byte", "first"] if field == 0 else ["byte", "layer"]
            cases.append(Case("%s header field %s = %#x" % (name, kw.ParsedV3.HEADER_FIELDS[field], v),
                              put_u32(data, 4 * field, v), codes=codes, where=where))
    for field, values in HEADER_MAYBE.items():
        for v in values:
            cases.append(Case("%s header field %s = %#x" % (name, kw.ParsedV3.HEADER_FIELDS[field], v),
                              put_u32(data, 4 * field, v), must_fail=False, where=["byte", "layer"]))
    pm = kw.parse_v3(data)
    for i in range(pm.output_count):
        for part, v in ((0, BAD), (1, BAD), (0, pm.main_mem_usage), (1, pm.main_mem_usage + 1)):
            cases.append(Case("%s output %d %s = %#x" % (name, i, ("address", "size")[part], v),
                              put_u32(data, 28 + 8 * i + 4 * part, v), where=["output", "byte"]))
    return cases


def layer_table_cases(name, data):
    pm = kw.parse_v3(data)
    cases = []
    for L in pm.layers:
        for t in (0, 26, 10239, 10244, BAD):
            cases.append(Case("%s layer %d type %d" % (name, L.index, t), put_u32(data, L.table_offset, t),
                              codes={ERR_FORMAT}, where=["layer %d" % L.index]))
        for size in (0, 4, BAD, 0x7FFFFFF8):
            # a changed body_size moves every later body: the error may name this layer or a later one
            cases.append(Case("%s layer %d body_size %#x" % (name, L.index, size),
                              put_u32(data, L.table_offset + 4, size), where=["layer"]))
    return cases


def body_field_cases(name, data, max_fields=8):
    """Each u32 field after `flags` of every CPU layer set to absurd values. Fields that are addresses or counts
    must make the load fail; a few (float bits, activation) may be accepted, but never crash."""
    pm = kw.parse_v3(data)
    cases = []
    for L in pm.layers:
        if L.type_id == 10240:
            continue
        n = min(max_fields, len(L.body) // 4)
        for f in range(1, n):
            for v in (BAD, 0x7FFFFFFF):
                cases.append(Case("%s layer %d (%s) field %d = %#x" % (name, L.index, L.type_name, f, v),
                                  put_u32(data, L.body_offset + 4 * f, v), must_fail=False,
                                  where=["layer %d" % L.index, "layer"]))
    return cases


def conv_header_cases(name, data):
    pm = kw.parse_v3(data)
    cases = []
    for L in pm.layers:
        if L.type_id != 10240:
            continue
        c = L.conv
        for f, key in ((2, "layer_offset"), (3, "weights_offset"), (4, "bn_offset"), (5, "act_offset")):
            for v in (BAD, len(data), len(data) - 8, 0, L.body_offset + L.body_size - 8):
                cases.append(Case("%s layer %d %s = %#x" % (name, L.index, key, v),
                                  put_u32(data, L.body_offset + 4 * f, v), where=["layer %d" % L.index]))
            if key == "layer_offset":  # misaligned but inside the body: the stored offset is followed, never assumed
                cases.append(Case("%s layer %d layer_offset + 1" % (name, L.index),
                                  put_u32(data, L.body_offset + 8, c["layer_offset"] + 1), must_fail=False,
                                  where=["layer %d" % L.index]))
        if c["flags"] & 1:
            for v in (BAD, pm.main_mem_usage):
                cases.append(Case("%s layer %d main_mem_out_address = %#x" % (name, L.index, v),
                                  put_u32(data, L.body_offset + 4, v), where=["layer %d" % L.index]))
    return cases


KPU_ARG_MUTATIONS = [  # (description, field changes) - all impossible for the KPU or for this layer
    ("width 600", dict(i_row_wid=599)), ("width 1024", dict(i_row_wid=1023)), ("width 1", dict(i_row_wid=0)),
    ("width 3", dict(i_row_wid=2)), ("height 300", dict(i_col_high=299)), ("height 2", dict(i_col_high=1)),
    ("in channels 1024", dict(i_ch_num=1023)), ("out channels 1024", dict(o_ch_num=1023)),
    ("in channels 2000 (wrapped to 10 bits)", dict(i_ch_num=1999)),
    ("pool type 15", dict(pool_type=15)), ("pool type 10", dict(pool_type=10)), ("kernel type 7", dict(kernel_type=7)),
    ("dst row 32767", dict(image_dst_addr=32767)), ("src row 32765", dict(image_src_addr=32765)),
    ("output width mismatch", dict(o_row_wid=0)), ("output height mismatch", dict(o_col_high=100)),
    ("depthwise with in != out", dict(depth_wise_layer=1)),
]


def kpu_arg_cases(name, data, layers=None):
    pm = kw.parse_v3(data)
    cases = []
    for L in pm.layers:
        if L.type_id != 10240 or (layers is not None and L.index not in layers):
            continue
        off = L.conv["layer_offset"]
        fields = kw.unpack_layer_args(data[off:off + 96])
        for desc, change in KPU_ARG_MUTATIONS:
            f = dict(fields)
            for k, v in change.items():
                f[k] = v
            if f == fields:
                continue
            if desc.startswith("depthwise") and fields["i_ch_num"] == fields["o_ch_num"]:
                continue
            raw = kw.pack_layer_args(f, strict=False)
            mutated = data[:off] + raw + data[off + 96:]
            cases.append(Case("%s layer %d KPU args: %s" % (name, L.index, desc), mutated, codes={ERR_FORMAT},
                              where=["layer %d" % L.index]))
    return cases


def version_cases(testdata_dir):
    rng = np.random.default_rng(11)
    cases = [
        Case("empty", b"", codes={ERR_VERSION}, where=["byte", "empty"]),
        Case("3 bytes", b"\x03\0\0", codes={ERR_VERSION}, where=["byte"]),
        Case("v5 LDMK", b"LDMK" + struct.pack("<I", 5) + bytes(64), codes={ERR_VERSION}, where=["byte"]),
        Case("LDMK v9", b"LDMK" + struct.pack("<I", 9) + bytes(64), codes={ERR_VERSION}, where=["byte"]),
        Case("LDMK cut", b"LDMK", codes={ERR_VERSION, ERR_FORMAT}, where=["byte"]),
        Case("v1 model-compiler", struct.pack("<I", 1) + bytes(60), codes={ERR_VERSION}, where=["byte", "first"]),
        Case("raw 0x12345678", struct.pack("<I", 0x12345678) + bytes(60), codes={ERR_VERSION}, where=["byte", "first"]),
        Case("LDMS smodel", b"LDMS" + bytes(60), codes={ERR_VERSION}, where=["byte", "first"]),
        Case("v3 header only", struct.pack("<7I", 3, 1, 0, 0, 32768, 0, 0), codes={ERR_FORMAT, ERR_GET_CONV}),
    ]
    for i in range(8):
        n = int(rng.integers(1, 4096))
        cases.append(Case("random %d bytes" % n, rng.integers(0, 256, n, dtype=np.uint8).tobytes(),
                          codes={ERR_VERSION}, where=["byte", "first"]))
    # random bytes behind a valid v3 version word
    for i in range(6):
        n = int(rng.integers(28, 2048))
        body = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        cases.append(Case("v3 + random %d bytes" % n, struct.pack("<I", 3) + body[4:], where=["byte", "layer"]))
    v5 = os.path.join(testdata_dir, "kmodel_v5_nncase", "yolox_nano_224_old.kmodel")  # pre-release v5: refused
    if os.path.exists(v5):
        with open(v5, "rb") as f:
            cases.append(Case("real v5 file", f.read(), codes={ERR_VERSION}, where=["byte"]))
    return cases


def generated_cases():
    cases = []
    for name, data in (("base", BASE), ("fc", FC)):
        cases += truncation_cases(name, data)
        cases += header_cases(name, data)
        cases += layer_table_cases(name, data)
        cases += body_field_cases(name, data)
        cases += conv_header_cases(name, data)
        cases += kpu_arg_cases(name, data)
    cases += v4_cases("base_v4", BASE_V4)
    return cases


# ---------------------------------------------------------------------------------------------------------------
# kmodel v4: the same kinds of damage on the v4 layout (header, ranges, constants, node table, bodies)

def base_v4_model():
    """A small v4 graph over several op kinds: quantize -> kpu_upload -> KPU conv (main output) -> dequantize ->
    matmul (weights in the constants) -> softmax."""
    rng = np.random.default_rng(9)
    conv = kw.KpuConv(in_w=8, in_h=8, in_c=2, out_c=4, kernel=3, weights=rng.integers(0, 256, (4, 2, 3, 3)),
                      bn_mul=[int(v) for v in rng.integers(1, 1000, 4)], bn_add=[0] * 4, bn_shift=[12] * 4,
                      act=kw.ActTable.linear(1, 4), pool_type=1, pad_value=3, arg_x=-100, shr_x=0, arg_w=-50,
                      shr_w=0, arg_add=1000, src=0, dst=64, main_out=0)
    w = kw4.V4Writer(main_mem=2048)
    w.add_input(kw4.mr(kw4.MAIN, kw4.F32, 512, 512), [1, 2, 8, 8])
    weights = w.add_constant(rng.standard_normal((64, 10)).astype(np.float32).tobytes())
    w.add(kw4.quantize(kw4.mr(kw4.MAIN, kw4.F32, 512, 512), kw4.mr(kw4.MAIN, kw4.U8, 1024, 128), 10, 20.0))
    w.add(kw4.kpu_upload(kw4.mr(kw4.MAIN, kw4.U8, 1024, 128), kw4.mr(kw4.KPU, kw4.U8, 0, 128), [1, 2, 8, 8]))
    w.add(kw4.kpu_conv2d(conv.pack_args(), kw.pack_bn(conv.bn_mul, conv.bn_add, conv.bn_shift), conv.act.pack(),
                         conv.weights_array(True).tobytes(), main_out=kw4.mr(kw4.MAIN, kw4.U8, 1200, 64)))
    w.add(kw4.dequantize(kw4.mr(kw4.MAIN, kw4.U8, 1200, 64), kw4.mr(kw4.MAIN, kw4.F32, 1280, 256), 8, 16.0))
    w.add(kw4.matmul(kw4.mr(kw4.MAIN, kw4.F32, 1280, 256), kw4.mr(kw4.CONST, kw4.F32, weights, 2560),
                     kw4.mr(kw4.MAIN, kw4.F32, 1536, 40), 1, 64, 10, np.zeros(10, np.float32)))
    w.add(kw4.softmax(kw4.mr(kw4.MAIN, kw4.F32, 1536, 40), kw4.mr(kw4.MAIN, kw4.F32, 1600, 40), 10, 1))
    w.add_output(kw4.mr(kw4.MAIN, kw4.F32, 1600, 40))
    return w.build(write_last_padding=False)


def v4_cases(name, data, n_random=12, seed=0, max_nodes=6):
    h, table, nodes = v4_layout(data)
    cases = []
    # truncations: inside the header, the tables, and at points of each body
    cuts = {0, 3, 4, 8, 39, 40, table - 1, table, table + 8 * h[6] - 1}
    for i, op, off, size in nodes[:max_nodes] + nodes[-2:]:
        cuts |= {off + d for d in (0, 1, 16, 40, size // 2, size - 8) if 0 <= d < size}
    rng = np.random.default_rng(seed)
    cuts |= {int(v) for v in rng.integers(0, len(data), n_random)}
    for cut in sorted(c for c in cuts if 0 <= c < len(data) - 7):
        node = [i for i, op, off, size in nodes if off <= cut < off + size]
        where = ["node %d" % node[0]] if node else ["byte"]
        codes = {ERR_VERSION} if cut < 8 else {ERR_VERSION, ERR_FORMAT}
        cases.append(Case("%s cut at %d" % (name, cut), data[:cut], codes=codes, where=where))
    # header counts and sizes that cannot describe this file
    for field, values in ((4, [BAD, len(data)]), (5, [BAD]), (6, [0x7FFFFFFF, BAD]), (7, [0x7FFFFFFF, BAD]),
                          (8, [0x7FFFFFFF, BAD])):
        for v in values:
            cases.append(Case("%s header[%d] = %#x" % (name, field, v), put_u32(data, 4 * field, v),
                              codes={ERR_FORMAT, ERR_NO_MEM}, where=["byte"]))
    # node table: unknown opcodes (2014, naming the node) and absurd body sizes
    for i, op, off, size in nodes[:max_nodes]:
        cases.append(Case("%s node %d opcode 0x7777" % (name, i), put_u32(data, table + 8 * i, 0x7777),
                          codes={2014}, where=["node %d" % i]))
        cases.append(Case("%s node %d body_size = 0xffffffff" % (name, i), put_u32(data, table + 8 * i + 4, BAD),
                          codes={ERR_FORMAT}, where=["node"]))
    # body fields: every u32 of the first bytes of each body set to absurd values; errors must name the node
    # (the KPU layer-argument checks, shared with v3, call it "layer N": the same index)
    for i, op, off, size in nodes[:max_nodes]:
        for d in range(0, min(size - 4, 96), 4):
            for v in (BAD, 0x7FFFFFFF):
                cases.append(Case("%s node %d body+%d = %#x" % (name, i, d, v), put_u32(data, off + d, v),
                                  must_fail=False, codes={ERR_FORMAT, ERR_NO_MEM, 2014},
                                  where=["node %d" % i, "layer %d" % i]))
    return cases


BASE_V4 = base_v4_model()
TESTDATA = os.environ.get("OPENKPU_TESTDATA", os.path.join(os.path.dirname(ROOT), "shared", "testdata"))
REAL_V3 = [("iris_fc_cpu_v3_v4", "iris_v3.kmodel"), ("mnist_v3_maixpy", "mnist.kmodel")]
REAL_V4 = [("iris_fc_cpu_v3_v4", "iris_v4.kmodel"), ("ulffd_face_v4_nncase", "slim-320.kmodel")]


def real_cases():
    cases = []
    for folder, fn in REAL_V3:
        path = os.path.join(TESTDATA, folder, fn)
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        cases += truncation_cases(fn, data, n_random=6, seed=len(data))
        cases += header_cases(fn, data)
        cases += layer_table_cases(fn, data)[::3]
        cases += kpu_arg_cases(fn, data, layers={0, 1})
    for folder, fn in REAL_V4:
        path = os.path.join(TESTDATA, folder, fn)
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            cases += v4_cases(fn, data, n_random=6, seed=len(data), max_nodes=4)
    return cases


ALL_CASES = generated_cases() + version_cases(TESTDATA)


# ---------------------------------------------------------------------------------------------------------------
# Tests

def test_base_models_are_valid():
    for data in (BASE, FC, BASE_V4):
        assert try_load(data) == (None, None)


@pytest.mark.parametrize("data, field", [(BASE, "main_mem_usage"), (BASE_V4, "main_mem")], ids=["v3", "v4"])
def test_main_buffer_over_the_sram_names_its_header_field(data, field):
    code, msg = try_load(put_u32(data, 20, 7 << 20))
    assert code == ERR_NO_MEM
    assert ("at byte 20: the header's %s is %d bytes, more than the K210's whole" % (field, 7 << 20)) in msg, msg


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_malformed_load(case):
    case.check()


def test_real_models_malformed(testdata):
    testdata("mnist_v3_maixpy", "mnist.kmodel")  # skips with the reason when the data is absent
    cases = real_cases()
    assert len(cases) > 50
    failures = []
    for c in cases:
        try:
            c.check()
        except AssertionError as e:
            failures.append(str(e).splitlines()[0])
    assert not failures, "%d/%d cases:\n%s" % (len(failures), len(cases), "\n".join(failures[:20]))


def test_real_v5_refused(testdata):
    data = testdata("kmodel_v5_nncase", "yolox_nano_224_old.kmodel").read_bytes()  # pre-release v5
    code, msg = try_load(data)
    assert code == ERR_VERSION and "5" in msg and "byte" in msg


def test_kpu_shim_load_errors(tmp_path):
    """The MaixPy-level API: KPU.load(path) raises ValueError with the code and the location."""
    kpu = pytest.importorskip("KPU")
    pm = kw.parse_v3(BASE)
    bad = BASE[:pm.layers[3].body_offset + 5]
    path = tmp_path / "cut.kmodel"
    path.write_bytes(bad)
    with pytest.raises(ValueError) as e:
        kpu.load(str(path))
    assert "2003" in str(e.value) and "layer 3" in str(e.value)
    path.write_bytes(b"")
    with pytest.raises(ValueError) as e:
        kpu.load(str(path))
    assert "2002" in str(e.value)


def test_wrong_inputs():
    m = _kpu.Model(BASE)
    n = m.inputs()[0][-1]
    assert n == 16 * 8 * 3
    for size in (0, n - 1, n + 1, 10 * n):
        with pytest.raises(ValueError) as e:
            m.set_input(0, bytes(size))
        assert "2012" in str(e.value) and str(size) in str(e.value) and str(n) in str(e.value)
    with pytest.raises((ValueError, OSError, IndexError)) as e:
        m.set_input(1, bytes(n))
    assert "2011" in str(e.value)
    with pytest.raises(OSError) as e:
        m.output(0)  # nothing ran yet
    assert e.value.errno == ERR_RUN and "2008" in str(e.value)
    m.set_input(0, bytes(n))
    m.run()
    with pytest.raises((OSError, IndexError, ValueError)) as e:
        m.output(1)
    assert "2011" in str(e.value)
    f = _kpu.Model(FC)
    with pytest.raises(ValueError) as e:
        f.set_input(0, bytes(15))  # 4 floats = 16 bytes
    assert "2012" in str(e.value)


# ---------------------------------------------------------------------------------------------------------------
# The sanitizer-built CLI

SAN_REPORT = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:")


@pytest.fixture(scope="module")
def okpu_run():
    if not shutil.which("make") or not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        pytest.skip("make or a C compiler is not available: cannot build build/san/okpu_run")
    r = subprocess.run(["make", "-s", "build/san/okpu_run"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    exe = os.path.join(ROOT, "build", "san", "okpu_run")
    if r.returncode != 0 or not os.path.exists(exe):
        pytest.skip("could not build build/san/okpu_run (make exit %d): %s" % (r.returncode, r.stderr[-500:]))
    return exe


def run_cli(exe, data, tmpdir):
    path = os.path.join(tmpdir, "model.kmodel")
    with open(path, "wb") as f:
        f.write(data)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    return subprocess.run([exe, path], capture_output=True, text=True, timeout=60, env=env)


def test_cli_under_sanitizers(okpu_run):
    cases = ALL_CASES + ([c for c in real_cases() if len(c.data) < 4096 or c.name.endswith(("= 0", "0xffffffff"))]
                         if os.path.isdir(TESTDATA) else [])
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            code, _ = try_load(c.data)
            r = run_cli(okpu_run, c.data, tmp)
            if SAN_REPORT.search(r.stderr):
                failures.append("%s: sanitizer report:\n%s" % (c.name, r.stderr[-1500:]))
                continue
            if code is not None:
                if r.returncode != 2 or ("error %d" % code) not in r.stdout:
                    failures.append("%s: _kpu refused it with %d, okpu_run exit %d, stdout %r" % (
                        c.name, code, r.returncode, r.stdout[-300:]))
            elif r.returncode not in (0, 2) or (r.returncode == 2 and "error " not in r.stdout):
                failures.append("%s: loaded by _kpu, okpu_run exit %d: %r" % (c.name, r.returncode, r.stdout[-300:]))
    assert not failures, "%d/%d files:\n%s" % (len(failures), len(cases), "\n\n".join(failures[:10]))


# ---------------------------------------------------------------------------------------------------------------
# kmodel v5: damage to the container (header, modules, mempools, functions, sections), the k210 instructions and the
# stackvm code of small hand-built files (tests_host/fuzz/make_seeds.py, written from docs/kmodel-v5.md). Every case
# names the error code and the words the message must contain: what is wrong and where (a byte offset).

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fuzz"))
import make_seeds  # noqa: E402

V5_SEEDS = make_seeds.v5_seed_models()
V5_CONV = V5_SEEDS["v5_kpu_conv"]
V5_QUANT = V5_SEEDS["v5_stackvm_quantize"]
TRUNCATED = "the file is truncated or corrupt"


def v5_layout(data):
    """The container of a v5 file (docs/kmodel-v5.md section 2), read independently of the core: per module its
    start, size, mempool descriptor offsets, function header offsets and sections {name: (header, body, size)}."""
    count = struct.unpack_from("<I", data, 20)[0]
    mods, pos = [], 32
    for _ in range(count):
        size, npool, nshared, nsec, nfn = struct.unpack_from("<5I", data, pos + 24)
        p = pos + 48
        pools = [p + 8 * k for k in range(npool)]
        p += 8 * (npool + nshared)
        fns = []
        for _ in range(nfn):
            fns.append(p)
            p += struct.unpack_from("<I", data, p + 4)[0]
        secs = {}
        for _ in range(nsec):
            name = data[p:p + 16].rstrip(b"\0").decode()
            padding, body = struct.unpack_from("<2I", data, p + 20)
            secs[name] = (p, p + 32 + padding, body)
            p += 32 + padding + body
        mods.append(dict(kind=data[pos:pos + 16].rstrip(b"\0").decode(), start=pos, size=size, pools=pools, fns=fns,
                         secs=secs))
        pos += size
    return mods


def put(data, offset, value, fmt="<I"):
    b = bytearray(data)
    b[offset:offset + struct.calcsize(fmt)] = struct.pack(fmt, value)
    return bytes(b)


class V5Case:
    def __init__(self, name, data, code, words):
        self.name, self.data, self.code, self.words = name, bytes(data), code, ["byte"] + list(words)

    def check(self):
        code, msg = try_load(self.data)
        assert code is not None, "%s: loaded and ran, expected a load error" % self.name
        assert code == self.code and "error:%d" % code in msg, "%s: error %d, expected %d: %s" % (
            self.name, code, self.code, msg)
        # a word, or a tuple of words one of which must be there
        missing = [w for w in self.words if not any(x in msg for x in ((w,) if isinstance(w, str) else w))]
        assert not missing, "%s: the message lacks %s: %s" % (self.name, missing, msg)
        return code


def v5_cases():
    d = V5_CONV
    stackvm, k210 = v5_layout(d)
    m0, m1, f1 = stackvm["start"], k210["start"], k210["fns"][0]
    rdata, text = k210["secs"][".rdata"], k210["secs"][".text"]
    t = text[1]  # k210 code: kpu_upload at +0 (44 bytes), kpu_conv2d at +44 (152), kpu_download at +196 (44)
    conv, down = t + 44, t + 196
    s = stackvm["secs"][".text"][1]
    call = s + d[s:s + stackvm["secs"][".text"][2]].index(b"\x5e\x03\x00")  # TENSOR CALL (id 0x03)
    cases = [
        # truncations: the header, a module header, a module body, inside the k210 module, the last byte
        V5Case("v5 cut at 31", d[:31], 2003, ["32-byte model header", TRUNCATED]),
        V5Case("v5 cut at 40", d[:40], 2003, ["48-byte module header at byte 32", "ends at byte 40", TRUNCATED]),
        V5Case("v5 cut at 100", d[:100], 2003, ["module 0 (stackvm) at byte 32", "size 376", TRUNCATED]),
        V5Case("v5 cut in the k210 .text", d[:t + 50], 2003, ["module 1 (k210)", "to the end of the file"]),
        V5Case("v5 cut by one byte", d[:-1], 2003, ["module 1 (k210)", "expected 48 .. %d" % (len(d) - 1 - m1)]),
        # model header
        V5Case("v5 0 modules", put(d, 20, 0), 2003, ["at byte 20", "0 modules", "expected 1 .. 16"]),
        V5Case("v5 17 modules", put(d, 20, 17), 2003, ["17 modules", "expected 1 .. 16"]),
        V5Case("v5 3 modules in a 2-module file", put(d, 20, 3), 2003, ["48-byte module header at byte %d" % len(d)]),
        V5Case("v5 entry module 2", put(d, 24, 2), 2003, ["at byte 24", "entry module 2", "a module below 2"]),
        V5Case("v5 entry function 1", put(d, 28, 1), 2003, ["entry module 0, function 1", "a function it has"]),
        V5Case("v5 pre-release header_size 0", put(d, 8, 0), 2002, ["pre-release / development-build v5", "byte 8"]),
        # module headers and mempools
        V5Case("v5 module 0 size 0", put(d, m0 + 24, 0), 2003, ["module 0 (stackvm)", "size 0 at byte %d" % (m0 + 24)]),
        V5Case("v5 module 0 size 0xffffffff", put(d, m0 + 24, BAD), 2003, ["size 4294967295",
                                                                           "to the end of the file"]),
        V5Case("v5 module 1 size + 8", put(d, m1 + 24, k210["size"] + 8), 2003, ["module 1 (k210)",
                                                                                 "size %d" % (k210["size"] + 8)]),
        V5Case("v5 module 1 size - 8", put(d, m1 + 24, k210["size"] - 8), 2003, ["section's padding and body",
                                                                                 "inside its module"]),
        V5Case("v5 module 1 with 5 sections", put(d, m1 + 36, 5), 2003, ["32-byte section header", "its module"]),
        V5Case("v5 module 1 with 200 mempools", put(d, m1 + 28, 200), 2003, ["200 mempools", "do not fit its"]),
        V5Case("v5 module type k211", d[:m1] + b"k211" + d[m1 + 4:], 2002, ['type "k211"', '"stackvm" or "k210"']),
        V5Case("v5 rdata mempool 0xffffffff", put(d, k210["pools"][0] + 4, BAD), 2003, [
            "its .rdata section has %d bytes" % rdata[2], "rdata mempool declares 4294967295"]),
        # function headers
        V5Case("v5 k210 function size 0xffffffff", put(d, f1 + 4, BAD), 2003, ["function 0 header at byte %d" % f1,
                                                                              "size 4294967295"]),
        V5Case("v5 k210 function input pool 0", put(d, f1 + 8, 0), 2003, ["function 0 input 0",
                                                                          "past the function's input pool of 0"]),
        V5Case("v5 k210 function 1000 inputs", put(d, f1 + 16, 1000), 2003, ["1000 inputs", "at most 16"]),
        V5Case("v5 k210 entrypoint 0xffffffff", put(d, f1 + 24, BAD), 2003, ["code at .text + 4294967295",
                                                                            "inside the module's .text"]),
        V5Case("v5 k210 text_size 0xffffffff", put(d, f1 + 28, BAD), 2003, ["4294967295 bytes",
                                                                           ".text of %d bytes" % text[2]]),
        # sections
        V5Case("v5 .rdata size 0xffffffff", put(d, rdata[0] + 24, BAD), 2003, ["section's padding and body",
                                                                              "inside its module"]),
        V5Case("v5 .rdata padding 0xffffffff", put(d, rdata[0] + 20, BAD), 2003, ["section's padding and body"]),
        V5Case("v5 .text one byte longer", put(d, text[0] + 24, text[2] + 1), 2003, [
            "expected %d bytes inside its module" % (text[1] - text[0] - 32 + text[2] + 1)]),
        V5Case("v5 .text renamed", d[:text[0]] + b".texx" + d[text[0] + 5:], 2003, [".text of 0 bytes"]),
        # k210 instruction operands
        V5Case("v5 k210 opcode 7", put(d, t, 7, "<B"), 2003, ["instruction word 0x00000007", "k210_illegal"]),
        V5Case("v5 kpu_upload into KPU RAM byte 0x200000", put(d, t + 20, 0x200000), 2003, [
            "kpu_upload at byte %d" % t, "output range 2097152 + 16 bytes", "ends past the 2097152 bytes"]),
        V5Case("v5 kpu_upload input size 0xffffffff", put(d, t + 12, BAD), 2003, [
            "input range of 4294967295 bytes is larger than the 16-byte tensor"]),
        V5Case("v5 kpu_upload shape 0xffffffff", put(d, t + 28, BAD), 2003, ["shape [4294967295, 1, 4, 4]",
                                                                            "dimensions 1 .. 4096"]),
        V5Case("v5 kpu_upload height 0", put(d, t + 36, 0), 2003, ["shape [1, 1, 0, 4]"]),
        V5Case("v5 kpu_conv2d weights at 0xffffffff", put(d, conv + 8, BAD), 2003, [
            "kpu_conv2d at byte %d" % conv, "weights range 4294967295 + 2 bytes", "%d bytes" % rdata[2]]),
        V5Case("v5 kpu_conv2d weights location 9", put(d, conv + 4, 9, "<B"), 2003, ["weights range has location 9"]),
        V5Case("v5 kpu_conv2d activation table past .rdata", put(d, conv + 32, 264), 2003, [
            "activation table range 264 + 144 bytes", "ends past the %d bytes" % rdata[2]]),
        V5Case("v5 kpu_conv2d 0 batches", put(d, conv + 52, 0), 2003, ["batches 0 at byte %d" % (conv + 52),
                                                                      "expected 1 .. 4096"]),
        V5Case("v5 kpu_conv2d 0xffffffff batches", put(d, conv + 52, BAD), 2003, ["batches 4294967295"]),
        V5Case("v5 kpu_download into 1 byte", put(d, down + 24, 1), 2003, ["kpu_download at byte %d" % down,
                                                                          "32 bytes of main memory (its range has 1)"]),
        V5Case("v5 kpu_download from KPU RAM byte 0xffffffff", put(d, down + 8, BAD), 2003, [
            "input range 4294967295 + 32 bytes (location 64)"]),
        # stackvm code
        V5Case("v5 stackvm opcode 0xff", put(d, s, 0xFF, "<B"), 2002, ["no nncase 1.x release's tensor-function table",
                                                                      "byte %d" % s]),
        V5Case("v5 stackvm LDIND_I1 (a load: not nncase's straight-line code)", put(d, s, 0x06, "<B"), 2002, [
            "instruction LDIND_I1 (opcode 0x06)", "byte %d" % s]),
        V5Case("v5 stackvm LEA_BUFFER location 9", put(d, s + 1, 9, "<B"), 2003, ["LEA_BUFFER at byte %d" % s,
                                                                                 "location 9"]),
        V5Case("v5 CALL of function 5", put(d, call + 3, 5), 2003, ["CALL at byte %d" % call, "function 5",
                                                                   "a function of a k210 module"]),
        V5Case("v5 CALL of module 7", put(d, call + 7, 7, "<H"), 2003, ["calls module 7"]),
        V5Case("v5 CALL of the stackvm module", put(d, call + 7, 0, "<H"), 2003, ["calls module 0"]),
        V5Case("v5 CALL with 3 inputs", put(d, call + 9, 3, "<B"), 2002, ["byte %d" % call, "CALL with"]),
        V5Case("v5 tensor function 0x7777", put(d, call + 1, 0x7777, "<H"), 2002, ["tensor function id 0x"]),
    ]
    # the KPU layer argument of the v5 convolution (96 bytes at +56 of kpu_conv2d): impossible fields, as for v3
    off = conv + 56
    fields = kw.unpack_layer_args(d[off:off + 96])
    for desc, change in KPU_ARG_MUTATIONS:
        f = dict(fields, **change)
        if f == fields or desc.startswith("depthwise"):
            continue
        cases.append(V5Case("v5 KPU args: %s" % desc, d[:off] + kw.pack_layer_args(f, strict=False) + d[off + 96:],
                            2003, [("layer 1: KPU", "kpu_conv2d at byte %d: tables" % conv)]))
    # truncation at every 24th byte of both files, and random bytes behind a v5 header: a code and a byte, always
    for name, data in (("conv", V5_CONV), ("quantize", V5_QUANT)):
        for cut in range(8, len(data), 24):
            # before byte 12 the header_size field itself is missing: a version error
            cases.append(V5Case("v5 %s cut at %d" % (name, cut), data[:cut], 2002 if cut < 12 else 2003,
                                ["truncated"]))
    rng = np.random.default_rng(15)
    for i in range(6):
        n = int(rng.integers(32, 2048))
        cases.append(V5Case("v5 + random %d bytes" % n, b"LDMK" + struct.pack("<II", 5, 32) +
                            rng.integers(0, 256, n, dtype=np.uint8).tobytes(), 2003, ["kmodel version 5"]))
    return cases


V5_CASES = v5_cases()


def test_v5_base_models_are_valid():
    for data in V5_SEEDS.values():
        assert try_load(data) == (None, None)


@pytest.mark.parametrize("case", V5_CASES, ids=lambda c: c.name)
def test_malformed_v5(case):
    case.check()


def test_v5_cli_under_sanitizers(okpu_run):
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in V5_CASES:
            r = run_cli(okpu_run, c.data, tmp)
            if SAN_REPORT.search(r.stderr):
                failures.append("%s: sanitizer report:\n%s" % (c.name, r.stderr[-1500:]))
            elif r.returncode != 2 or ("error %d" % c.code) not in r.stdout:
                failures.append("%s: okpu_run exit %d, stdout %r" % (c.name, r.returncode, r.stdout[-300:]))
    assert not failures, "%d/%d files:\n%s" % (len(failures), len(V5_CASES), "\n\n".join(failures[:10]))

# SPDX-License-Identifier: Apache-2.0
"""Seed corpora for the fuzz targets, generated at fuzz time into a build directory (never committed):

- the real models in ../shared/testdata (when present) and examples/models;
- every model the writers (openkpu.kmodel_writer, kmodel_writer_v4) build in the v3/v4 layer tests: those tests run
  in-process with _kpu.Model wrapped to record each model it is given;
- for fuzz_post: a few YOLO outputs and face vectors;
- for fuzz_v5: small kmodel v5 files built here (v5_seed_models: a stackvm-only model and a stackvm + k210 model
  with a KPU convolution, written from docs/kmodel-v5.md), the v5 files of the v5 tests, and the real v5 models;
- for fuzz_emu_diff: every v3, v4 and v5 seed behind a first byte that picks the fast side's threads, split and SIMD
  level (fuzz_emu_diff.c), taken from the model's hash so that the seeds cover every configuration.

usage: python make_seeds.py OUT_DIR   (creates OUT_DIR/fuzz_v3, fuzz_v4, fuzz_v5, fuzz_post and fuzz_emu_diff)
       python make_seeds.py --corpus  (writes the hand-built v5 seeds into tests_host/fuzz/corpus/fuzz_v5 and the
                                       fuzz_emu_diff ones into tests_host/fuzz/corpus/fuzz_emu_diff: the committed
                                       regression corpus starts from them; needs the installed _kpu)
"""
import hashlib
import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = ROOT.parent / "shared" / "testdata"
MAX_SEED = 4 << 20


def save(out: pathlib.Path, data: bytes) -> None:
    if not data or len(data) > MAX_SEED:
        return
    target = ("fuzz_v5" if data[:8] == b"LDMK\x05\x00\x00\x00" else "fuzz_v4" if data[:4] == b"LDMK" else
              "fuzz_v3" if data[:4] == b"\x03\x00\x00\x00" else None)
    if target is None:
        return
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def writer_models(out: pathlib.Path) -> None:
    import pytest
    import _kpu

    real = _kpu.Model

    def recording(data, *a, **kw):
        try:
            save(out, bytes(data))
        except Exception:
            pass
        return real(data, *a, **kw)

    _kpu.Model = recording
    try:
        tests = [str(ROOT / "tests_host" / t) for t in ("test_v3_cpu_layers.py", "test_v4_ops.py", "test_v5_models.py",
                                                           "test_malformed.py", "test_threads.py")]
        pytest.main(["-q", "-x", "-p", "no:cacheprovider", "-k", "not slow", *tests])
    finally:
        _kpu.Model = real


def diff_seeds(out: pathlib.Path) -> None:
    d = out / "fuzz_emu_diff"
    d.mkdir(parents=True, exist_ok=True)
    for t in ("fuzz_v3", "fuzz_v4", "fuzz_v5"):
        for f in (out / t).glob("*"):
            data = f.read_bytes()
            (d / f.name).write_bytes(hashlib.sha1(data).digest()[:1] + data)


def post_seeds(out: pathlib.Path) -> None:
    d = out / "fuzz_post"
    d.mkdir(parents=True, exist_ok=True)
    for i, (w, h, anchors, classes) in enumerate([(7, 7, 5, 20), (13, 13, 5, 1), (4, 3, 2, 3)]):
        ch = anchors * (5 + classes)
        head = bytes([0, (w - 1), (h - 1), ch - 1 if ch <= 256 else 255, anchors + 1, 128, 100]) + bytes(10)
        vals = b"".join(struct.pack("<f", ((k * 7919) % 200 - 100) / 25.0) for k in range(w * h * min(ch, 64)))
        (d / f"yolo{i}").write_bytes(head + vals)
    (d / "face0").write_bytes(b"\x01" + b"".join(struct.pack("<f", (k % 9 - 4) / 16.0) for k in range(196)))
    (d / "face1").write_bytes(b"\x01" + struct.pack("<4f", 0.25, -0.25, float("nan"), float("inf")))


# ---------------------------------------------------------------------------------------------------------------
# kmodel v5 files built by hand (docs/kmodel-v5.md sections 2, 4, 5, 6; nncase 1.6-1.9 tensor-function numbering)

V5_U8, V5_U64, V5_F32 = 4, 7, 9
LOC_INPUT, LOC_OUTPUT, LOC_RDATA, LOC_DATA, LOC_KPU = 0, 1, 2, 3, 64
KPU_RAM_BYTES = 2 * 1024 * 1024


def _pad_to(buf: bytes, base: int, align: int) -> bytes:
    """buf followed by zeros so that base + len(buf) is a multiple of align."""
    return buf + bytes(-(base + len(buf)) % align)


def v5_range(loc: int, dtype: int, start: int, size: int) -> bytes:
    return struct.pack("<BBHII", loc, dtype, 0, start, size)


def v5_shape(dims) -> bytes:
    return struct.pack("<I%dI" % len(dims), len(dims), *dims)


def v5_strides(dims):
    out, acc = [], 1
    for d in reversed(dims):
        out.insert(0, acc)
        acc *= d
    return out


class V5Function:
    """One function: (range, shape) per input and output, its pools' sizes and its code."""

    def __init__(self, code: bytes, inputs, outputs, in_pool: int, out_pool: int):
        self.code, self.inputs, self.outputs, self.in_pool, self.out_pool = code, inputs, outputs, in_pool, out_pool


def v5_module(kind: str, start: int, functions, rdata: bytes, data_pool: int, align: int) -> bytes:
    """A module blob placed at file offset `start`: header, mempools, functions, .rdata and .text (bodies on
    `align`-byte file offsets), zeros up to an 8-byte file offset."""
    pools = [(LOC_RDATA, len(rdata)), (LOC_DATA, data_pool)] + ([(LOC_KPU, KPU_RAM_BYTES)] if kind == "k210" else [])
    body = b"".join(struct.pack("<BBBBI", loc, 0, 0, 0, size) for loc, size in pools)
    text, entry = b"", []
    for f in functions:
        entry.append(len(text))
        text += f.code
    pos = start + 48 + len(body)
    for f, ep in zip(functions, entry):
        tail = b"".join(r for r, _ in f.inputs) + b"".join(v5_shape(d) for _, d in f.inputs)
        tail += b"".join(r for r, _ in f.outputs) + b"".join(v5_shape(d) for _, d in f.outputs)
        blob = _pad_to(struct.pack("<8I", 32, 0, f.in_pool, f.out_pool, len(f.inputs), len(f.outputs), ep,
                                   len(f.code)) + tail, pos, 8)
        blob = blob[:4] + struct.pack("<I", len(blob)) + blob[8:]
        body += blob
        pos += len(blob)
    for name, content in ((b".rdata", rdata), (b".text", text)):
        padding = -(pos + 32) % align
        body += name.ljust(16, b"\0") + struct.pack("<4I", 0, padding, len(content), 0) + bytes(padding) + content
        pos += 32 + padding + len(content)
    body = _pad_to(body, start + 48, 8)
    return kind.encode().ljust(16, b"\0") + struct.pack("<8I", 1, 48, 48 + len(body), len(pools), 0, 2,
                                                        len(functions), 0) + body


def v5_file(modules, alignment: int) -> bytes:
    """modules: (kind, functions, rdata, data_pool, section alignment); entry = module 0, function 0."""
    out = b"LDMK" + struct.pack("<7I", 5, 32, 0, alignment, len(modules), 0, 0)
    for kind, functions, rdata, data_pool, align in modules:
        out += v5_module(kind, len(out), functions, rdata, data_pool, align)
    return out


class StackCode:
    def __init__(self):
        self.b = b""

    def lea(self, loc: int, off: int) -> None:
        self.b += struct.pack("<BBBI", 0x17, loc, 0, off)

    def i4(self, v: int) -> None:
        self.b += struct.pack("<Bi", 0x02, v)

    def r4(self, v: float) -> None:
        self.b += struct.pack("<Bf", 0x05, v)

    def shape(self, reg: int, vals) -> None:
        for v in vals:
            self.i4(v)
        self.b += struct.pack("<BBB", 0x31, reg, len(vals))

    def paddings(self, reg: int, pads) -> None:
        """(before, after) per dimension into paddings register `reg` (interior 0)."""
        for before, after in pads:
            self.i4(before), self.i4(after), self.i4(0)
        self.b += struct.pack("<BBB", 0x32, reg, len(pads))

    def tensor(self, fid: int, fields: bytes) -> None:
        self.b += struct.pack("<BH", 0x5E, fid) + fields

    def call_arg(self, loc: int, off: int, dtype: int, dims, rshape: int, rstride: int) -> None:
        """One tensor of a CALL: address, datatype, shape-register index, stride-register index (section 6.1)."""
        self.lea(loc, off)
        self.i4(dtype)
        self.shape(rshape, dims)
        self.i4(rshape)
        self.shape(rstride, v5_strides(dims))
        self.i4(rstride)


def v5_stackvm_quantize(scale: float = 8.0, q_strides=None, data_pool: int = 24) -> bytes:
    """stackvm only: f32 [1,2,3,4] -> QUANTIZE (u8, data pool; q_strides: its output strides) -> DEQUANTIZE -> f32
    output."""
    dims, n = [1, 2, 3, 4], 24
    c = StackCode()
    c.lea(LOC_INPUT, 0), c.lea(LOC_DATA, 0)
    c.shape(0, dims), c.shape(1, v5_strides(dims)), c.shape(2, v5_strides(dims) if q_strides is None else q_strides)
    c.r4(scale), c.r4(128.0)
    c.tensor(0x14, bytes([V5_F32, V5_U8, 0, 1, 2]))
    c.lea(LOC_DATA, 0), c.lea(LOC_OUTPUT, 0)
    c.shape(1, v5_strides(dims) if q_strides is None else q_strides), c.shape(2, v5_strides(dims))
    c.r4(0.125), c.r4(-16.0)
    c.tensor(0x0B, bytes([V5_U8, V5_F32, 0, 1, 2]))
    fn = V5Function(c.b, [(v5_range(LOC_INPUT, V5_F32, 0, 4 * n), dims)],
                    [(v5_range(LOC_OUTPUT, V5_F32, 0, 4 * n), dims)], 4 * n, 4 * n)
    return v5_file([("stackvm", [fn], b"", data_pool, 8)], 8)


def v5_stackvm_overlapping_copy() -> bytes:
    """stackvm only: COPY the f32 [1,2] input to the output, then COPY output bytes 0..3 onto bytes 2..5: an element
    whose source and destination overlap."""
    c = StackCode()
    c.lea(LOC_INPUT, 0), c.lea(LOC_OUTPUT, 0)
    c.shape(0, [1, 2]), c.shape(1, [2, 1]), c.shape(2, [2, 1])
    c.tensor(0x09, bytes([V5_F32, 0, 1, 2]))
    c.lea(LOC_OUTPUT, 0), c.lea(LOC_OUTPUT, 2)
    c.shape(0, [1, 1]), c.shape(1, [1, 1]), c.shape(2, [1, 1])
    c.tensor(0x09, bytes([V5_F32, 0, 1, 2]))
    fn = V5Function(c.b, [(v5_range(LOC_INPUT, V5_F32, 0, 8), [1, 2])], [(v5_range(LOC_OUTPUT, V5_F32, 0, 8), [1, 2])],
                    8, 8)
    return v5_file([("stackvm", [fn], b"", 0, 8)], 8)


def v5_kpu_conv(weights=(1, 2), in_dims=(1, 1, 4, 4), dst_row=8) -> bytes:
    """stackvm CALL -> a k210 function: kpu_upload of the u8 input, one 1x1 KPU conv (one weight per output channel,
    BN x1, linear activation: out channel o = min(255, x * weights[o])), kpu_download to the u8 output."""
    from openkpu import kmodel_writer as kw
    import numpy as np
    n, ic, h, w = in_dims
    oc = len(weights)
    out_dims = [n, oc, h, w]
    in_bytes, out_bytes = n * ic * h * w, n * oc * h * w
    conv = kw.KpuConv(in_w=w, in_h=h, in_c=ic, out_c=oc, kernel=1,
                      weights=np.array(weights, np.uint8).reshape(oc, 1, 1, 1).repeat(ic, axis=1), bn_mul=[1] * oc,
                      bn_add=[0] * oc, bn_shift=[0] * oc, act=kw.ActTable.linear(), src=0, dst=dst_row)
    wts = conv.weights_array(True).tobytes()
    bn = kw.pack_bn(conv.bn_mul, conv.bn_add, conv.bn_shift)
    act = conv.act.pack()
    # .rdata: weights at 0, BN at 8-aligned, activation table at a 256-byte offset (4.2)
    bn_off = (len(wts) + 7) // 8 * 8
    act_off = (bn_off + len(bn) + 255) // 256 * 256
    rdata = bytearray(act_off + len(act))
    rdata[0:len(wts)], rdata[bn_off:bn_off + len(bn)], rdata[act_off:] = wts, bn, act
    k = struct.pack("<I", 0) + v5_range(LOC_INPUT, V5_U8, 0, in_bytes) + v5_range(LOC_KPU, V5_U8, 0, in_bytes)
    k += struct.pack("<4I", *in_dims)
    k += struct.pack("<I", 2) + v5_range(LOC_RDATA, V5_U8, 0, len(wts)) + v5_range(LOC_RDATA, V5_U64, bn_off, len(bn))
    k += v5_range(LOC_RDATA, V5_U8, act_off, len(act)) + bytes(12) + struct.pack("<I", 1) + conv.pack_args(True)
    k += struct.pack("<I", 1) + v5_range(LOC_KPU, V5_U8, dst_row * 64, out_bytes)
    k += v5_range(LOC_OUTPUT, V5_U8, 0, out_bytes) + struct.pack("<4I", *out_dims)
    kfn = V5Function(k, [(v5_range(LOC_INPUT, V5_U8, 0, in_bytes), list(in_dims))],
                     [(v5_range(LOC_OUTPUT, V5_U8, 0, out_bytes), out_dims)], in_bytes, out_bytes)
    c = StackCode()
    c.call_arg(LOC_INPUT, 0, V5_U8, list(in_dims), 0, 1)
    c.call_arg(LOC_OUTPUT, 0, V5_U8, out_dims, 2, 3)
    c.tensor(0x03, struct.pack("<IHBB", 0, 1, 1, 1))
    sfn = V5Function(c.b, [(v5_range(LOC_INPUT, V5_U8, 0, in_bytes), list(in_dims))],
                     [(v5_range(LOC_OUTPUT, V5_U8, 0, out_bytes), out_dims)], in_bytes, out_bytes)
    return v5_file([("stackvm", [sfn], b"", 0, 8), ("k210", [kfn], bytes(rdata), 0, 256)], 256)


def v5_empty_walk_code(fid: int, fields: bytes, dims, floats=()) -> bytes:
    """One tensor function (after pushing `floats`) from input to output offset 0 over `dims` (a 0 among extents of
    2^30), strides 0 on the first axis and 1 on the others: the views pass and the walk is empty."""
    strides = [0] + [1] * (len(dims) - 1)
    c = StackCode()
    c.lea(LOC_INPUT, 0), c.lea(LOC_OUTPUT, 0)
    for f in floats:
        c.r4(f)
    c.shape(0, dims), c.shape(1, strides), c.shape(2, strides)
    c.tensor(fid, fields)
    return c.b


def v5_stackvm_empty_walk(fid: int, fields: bytes, dims, floats=()) -> bytes:
    """stackvm only: v5_empty_walk_code between the f32 [4] input and output."""
    fn = V5Function(v5_empty_walk_code(fid, fields, dims, floats), [(v5_range(LOC_INPUT, V5_F32, 0, 16), [4])],
                    [(v5_range(LOC_OUTPUT, V5_F32, 0, 16), [4])], 16, 16)
    return v5_file([("stackvm", [fn], b"", 0, 8)], 8)


def v5_seed_models():
    """Name -> bytes of the hand-built v5 seeds (each a few hundred bytes)."""
    return {"v5_stackvm_quantize": v5_stackvm_quantize(), "v5_kpu_conv": v5_kpu_conv(),
            "v5_kpu_conv_3ch": v5_kpu_conv(weights=(3, 1, 0, 5), in_dims=(1, 3, 5, 6), dst_row=4)}


def v5_regression_models():
    """Name -> bytes of hand-built equivalents of what fuzz_v5 found (the found inputs were mutated real models)."""
    # QUANTIZE with a NaN scale: (int)NaN was undefined behaviour in okpu_v5_k_quantize (UBSan)
    # a step whose output strides are all 0 in a 1-byte pool: the partial-run output was described as the dense
    # 24 bytes, read past the pool (ASan: heap-buffer-overflow in fuzz_model.h reading the output)
    return {"fuzz_v5_quantize_nan_scale": v5_stackvm_quantize(scale=float("nan")),
            "fuzz_v5_partial_output_outside_its_pool": v5_stackvm_quantize(q_strides=[0, 0, 0, 0], data_pool=1),
            # COPY of an element onto bytes that overlap it: memcpy with overlapping ranges (ASan: memcpy-param-overlap)
            "fuzz_v5_copy_overlapping_element": v5_stackvm_overlapping_copy(),
            # a walk of [n, n, 0] ran n x n times doing nothing (libFuzzer: timeout in okpu_v5_k_quantize); SOFTMAX
            # over an empty axis also read one element of its unchecked empty input
            "fuzz_v5_quantize_empty_walk": v5_stackvm_empty_walk(0x14, bytes([V5_F32, V5_U8, 0, 1, 2]),
                                                                 [1 << 30, 1 << 30, 0], (1.0, 0.0)),
            "fuzz_v5_softmax_empty_axis": v5_stackvm_empty_walk(0x1F, bytes([V5_F32, 0, 1, 2]) +
                                                                struct.pack("<if", 1, 1.0), [1 << 30, 0, 1 << 30])}


def diff_corpus_models():
    """Name -> bytes of the hand-built fuzz_emu_diff seeds: test_threads' models of the emulator's thread plans, each
    behind a first byte that picks a configuration of the fast side (fuzz_emu_diff.c: bit 0 three threads, bit 1 every
    layer split, bits 2-3 the SIMD level, bits 4-7 the partial run's length): a pair of layers run as one hand-out
    (its partial run stops inside the pair), the same on a map whose channels share KPU RAM rows with every layer
    split, a layer over its own input and a pair refused for its two main-memory outputs (neither paired), a side
    chain, and a head that writes the next layer's input (no side chain: they would meet). Needs the installed _kpu
    (test_threads imports it)."""
    sys.path.insert(0, str(ROOT / "tests_host"))
    import numpy as np
    import test_threads

    def pair(layout):
        return test_threads._pair_model(np.random.default_rng(11), layout)[0]

    def side_chain(layout):
        return test_threads._side_chain_model(np.random.default_rng(7), layout)[0]

    return {"diff_pair_partial_inside": b"\x10" + pair("pair"),
            "diff_pair_narrow_split_all": b"\x03" + pair("narrow"),
            "diff_in_place_c": b"\x0d" + pair("in_place"),
            "diff_both_to_main_split_all_avx2": b"\x16" + pair("both_to_main"),
            "diff_side_chain_sse41": b"\x29" + side_chain("chain"),
            "diff_no_side_chain_head_writes_next_input_c": b"\x0c" + side_chain("head_writes_next_input")}


def write_corpus() -> None:
    d = ROOT / "tests_host" / "fuzz" / "corpus" / "fuzz_v5"
    d.mkdir(parents=True, exist_ok=True)
    for name, data in list(v5_seed_models().items()) + list(v5_regression_models().items()):
        (d / name).write_bytes(data)
        print(d / name, len(data), "bytes")
    d = ROOT / "tests_host" / "fuzz" / "corpus" / "fuzz_emu_diff"
    d.mkdir(parents=True, exist_ok=True)
    for name, data in diff_corpus_models().items():
        (d / name).write_bytes(data)
        print(d / name, len(data), "bytes")


def main() -> int:
    if sys.argv[1:] == ["--corpus"]:
        write_corpus()
        return 0
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for f in list(TESTDATA.rglob("*.kmodel")) + list((ROOT / "examples" / "models").glob("*.kmodel")):
        save(out, f.read_bytes())
    for data in v5_seed_models().values():
        save(out, data)
    post_seeds(out)
    writer_models(out)
    diff_seeds(out)
    for t in ("fuzz_v3", "fuzz_v4", "fuzz_v5", "fuzz_post", "fuzz_emu_diff"):
        print(t, len(list((out / t).glob("*"))), "seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())

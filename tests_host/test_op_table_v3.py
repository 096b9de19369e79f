# SPDX-License-Identifier: Apache-2.0
"""The kmodel v3 op table is listed once, in c_src/kmodel/kmodel_v3_ops.def: the Python writer's type list and body
layouts must agree with it, and the compiled reader must be built from it (minimum body sizes, names, and the list of
known types in the "unknown layer type" message)."""
import dataclasses
import pathlib
import re

import numpy as np
import pytest

from openkpu import kmodel_writer as kw

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEF = ROOT / "c_src" / "kmodel" / "kmodel_v3_ops.def"
READER = ROOT / "c_src" / "kmodel" / "kmodel_v3.c"

_ROW = re.compile(r'^V3_OP\(\s*(\d+)\s*,\s*(\w+)\s*,\s*"(\w+)"\s*,\s*(\d+)\s*,\s*(\w+)\s*\)\s*$')


def _ops():
    """[(type id, enum name, name, minimum body bytes, decode function)] in file order."""
    rows = []
    for line in DEF.read_text().splitlines():
        if line.startswith("V3_OP("):
            m = _ROW.match(line)
            assert m, "unparsable line in %s: %r" % (DEF.name, line)
            rows.append((int(m.group(1)), m.group(2), m.group(3), int(m.group(4)), m.group(5)))
    return rows


OPS = _ops()
MIN_BODY = {t: size for t, _, _, size, _ in OPS}


def test_def_is_well_formed():
    ids = [t for t, _, _, _, _ in OPS]
    assert len(OPS) >= 29  # the SDK's 25 CPU types and 4 K210 types at least
    assert ids == sorted(set(ids)), "type ids must be unique and ascending"
    for t, enum, name, size, dec in OPS:
        assert enum == name, "enum name and name differ for type %d" % t
        assert size % 4 == 0 and size >= 12, "type %d: a body is u32 fields, flags first" % t
    src = READER.read_text()
    for dec in {row[4] for row in OPS}:
        assert re.search(r"^static int %s\(v3_ctx \*c\)$" % dec, src, re.M), "no decode function %s" % dec


def test_writer_layer_types_equal_the_def():
    assert kw.LAYER_TYPES == {t: name for t, _, name, _, _ in OPS}


def _writer_classes():
    """Every concrete layer class of the writer, by type id."""
    seen = {}
    stack = list(kw.V3Layer.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls is kw.RawLayer or cls.__name__.startswith("_"):
            continue
        seen.setdefault(cls.type_id, []).append(cls)
    return seen


def test_writer_has_a_class_per_type():
    classes = _writer_classes()
    assert sorted(classes) == sorted(MIN_BODY)
    assert all(len(v) == 1 for v in classes.values()), classes


def _minimal(cls):
    """An instance with no variable part (no weights, no inputs, no channels of a table)."""
    name = cls.__name__
    if name in ("Concat", "QuantizedConcat"):
        return cls(out=0, inputs=[])
    if name == "FullyConnected":
        return cls(inp=0, out=0, weights=np.zeros((0, 0), np.float32), bias=[])
    if name == "QuantizedFullyConnected":
        return cls(inp=0, out=0, weights=np.zeros((0, 0), np.uint8), bias=[])
    if name == "ChannelwiseDequantize":
        return cls(inp=0, out=0, channel_size=1, scale=[], bias=[])
    if name == "Requantize":
        return cls(inp=0, out=0, count=1, table=range(256))
    if name == "KpuConv":
        return cls(in_w=4, in_h=4, in_c=1, out_c=1, kernel=1, weights=np.zeros((1, 1, 1, 1), np.uint8),
                   bn_mul=[1], bn_add=[0], bn_shift=[0], act=kw.ActTable.linear(), src=0, dst=64)
    # every other layer is fixed fields only: fill each with 1
    fields = [f for f in cls.__dataclass_fields__.values()
              if f.name not in ("flags", "type_id", "elem", "out_elem", "quantized")
              and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    return cls(**{f.name: 1 for f in fields})


@pytest.mark.parametrize("type_id", sorted(MIN_BODY))
def test_min_body_matches_the_writer(type_id):
    """The fixed fields the writer emits are exactly the reader's minimum body (the KPU convolution: its 24-byte
    header of offsets, the argument, weights and tables following it)."""
    (cls,) = _writer_classes()[type_id]
    body = _minimal(cls).body(0)
    if type_id == 10240:
        header = np.frombuffer(body[:24], "<u4")
        assert min(header[2:]) >= MIN_BODY[type_id] == 24, header
    else:
        assert len(body) == MIN_BODY[type_id], (cls.__name__, len(body))


def _fc_then(layer):
    fc = kw.FullyConnected(inp=0, out=16, weights=np.eye(4, dtype=np.float32), bias=np.zeros(4))
    return kw.V3Model(layers=[fc, layer], outputs=[(16, 16)], main_mem_usage=1024).to_bytes()


@pytest.mark.parametrize("type_id", sorted(MIN_BODY))
def test_reader_min_body_is_the_def(type_id):
    """The compiled reader refuses a body one 8-byte step short of the .def's minimum, naming that minimum."""
    _kpu = pytest.importorskip("_kpu")
    name = kw.LAYER_TYPES[type_id]
    data = _fc_then(kw.RawLayer(type_id=type_id, data=bytes(MIN_BODY[type_id] - 8)))
    with pytest.raises(Exception, match=r"layer 1 \(%s\) body at byte \d+: body_size \d+ is smaller than the %d "
                                        r"bytes of a %s body" % (name, MIN_BODY[type_id], name)):
        _kpu.Model(data)


def _runs(ids):
    runs, start = [], ids[0]
    for a, b in zip(ids, ids[1:] + [None]):
        if b != a + 1:
            runs.append(str(start) if start == a else "%d-%d" % (start, a))
            start = b
    return runs[0] if len(runs) == 1 else ", ".join(runs[:-1]) + " and " + runs[-1]


@pytest.mark.parametrize("type_id", [0, 26, 9999, 10239, 10244])
def test_unknown_type_message_lists_the_def(type_id):
    _kpu = pytest.importorskip("_kpu")
    known = _runs([t for t, _, _, _, _ in OPS])
    data = _fc_then(kw.RawLayer(type_id=type_id, data=bytes(16)))
    with pytest.raises(Exception, match="unknown layer type %d in the layer table at byte 44; v3 types are %s " %
                                        (type_id, known)):
        _kpu.Model(data)

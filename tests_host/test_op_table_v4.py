# SPDX-License-Identifier: Apache-2.0
"""The kmodel v4 opcodes are listed once for the C core, in c_src/kmodel/kmodel_v4_ops.def; the Python side (the v4
writer and any other v4 opcode constant under python/, scripts/ and tests_host/) must agree with that text.

Checked here, by parsing the .def: the writer's OPCODES table equals it; every writer builder is named after its op
and returns that op's opcode; a body built with its variable parts empty is exactly the op's fixed body size (the
.def's column, an independent count of nncase's struct fields); every V4_<OP> = 0x... constant names the opcode the
.def gives it."""
import ast
import inspect
import pathlib
import re

import pytest

from openkpu import kmodel_writer_v4 as kw

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEF = ROOT / "c_src" / "kmodel" / "kmodel_v4_ops.def"
ROW = re.compile(r"^V4_OP\(\s*(0x[0-9A-Fa-f]+)\s*,\s*(\w+)\s*,\s*\"(\w+)\"\s*,\s*(\d+)\s*,\s*(\w+)\s*\)\s*$")


def _def_rows():
    rows = []
    for line in DEF.read_text().splitlines():
        if line.startswith("V4_OP("):
            m = ROW.match(line)
            assert m, "unparsed row in %s: %s" % (DEF.name, line)
            rows.append((int(m.group(1), 16), m.group(2), m.group(3), int(m.group(4)), m.group(5)))
    return rows


ROWS = _def_rows()


def test_def_is_well_formed():
    codes = [r[0] for r in ROWS]
    assert len(ROWS) == 28  # nncase v0.2.0-beta4: 21 neutral, 5 CPU, 2 K210 ops
    assert codes == sorted(codes) and len(set(codes)) == len(codes)
    assert len({r[1] for r in ROWS}) == len(ROWS) and len({r[2] for r in ROWS}) == len(ROWS)
    for code, enum, name, _, decode in ROWS:
        assert enum == name.upper() and decode == "d_" + name, (hex(code), enum, name, decode)


def test_writer_opcodes_equal_the_def():
    assert kw.OPCODES == {code: name for code, _, name, _, _ in ROWS}


# Argument values by parameter name: memory ranges, shapes, windows; variable parts (weights, biases, lists, tables,
# programs) empty, so that the body is the op's fixed part alone.
_RANGE = kw.mr(kw.MAIN, kw.F32, 0, 0)
_ARGS = {
    "inp": _RANGE, "out": _RANGE, "a": _RANGE, "b": _RANGE, "table": _RANGE,
    "in_shape": (1, 1, 1, 1), "out_shape": (1, 1, 1, 1), "sa": (1, 1, 1, 1), "sb": (1, 1, 1, 1),
    "so": (1, 1, 1, 1), "perm": (0, 1, 2, 3), "begin": (0, 0, 0, 0), "end": (1, 1, 1, 1), "strides": (1, 1, 1, 1),
    "paddings": [(0, 0)] * 4, "pad_h": (0, 0), "pad_w": (0, 0),
    "weights": [], "bias": [], "inputs": [], "dims": [], "program": b"",
    "layer_args": bytes(96), "bn": b"", "act": b"",
}


def _build(name):
    fn = getattr(kw, name)
    params = inspect.signature(fn).parameters
    if any(p.kind == p.VAR_POSITIONAL for p in params.values()):
        # a variant of another builder (cpu_reduce_window2d: reduce_window2d's layout, its own opcode)
        base = getattr(kw, name[len("cpu_"):])
        params = {k: v for k, v in inspect.signature(base).parameters.items() if k != "opcode"}
    args = {k: _ARGS.get(k, 1) for k, p in params.items() if p.default is inspect.Parameter.empty}
    return fn(**args)


@pytest.mark.parametrize("code,name,fixed", [(r[0], r[2], r[3]) for r in ROWS], ids=[r[2] for r in ROWS])
def test_writer_builder_matches_the_def(code, name, fixed):
    opcode, body = _build(name)
    assert opcode == code
    assert len(body) == fixed, "%s: a body with empty variable parts is %d bytes, the .def says %d" % (
        name, len(body), fixed)


def test_every_writer_opcode_is_in_the_def():
    """Every `return 0x.., body` in the writer returns an opcode of the .def, from the builder of that name."""
    by_code = {r[0]: r[2] for r in ROWS}
    tree = ast.parse(pathlib.Path(kw.__file__).read_text())
    seen = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and node.value.elts:
                first = node.value.elts[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, int):
                    seen[fn.name] = first.value
    assert seen, "no builder found in the writer"
    for fname, code in seen.items():
        assert by_code.get(code) == fname, "%s returns opcode 0x%X (%s in the .def)" % (fname, code,
                                                                                        by_code.get(code))
    # reduce_window2d's opcode argument: the default and cpu_reduce_window2d's override
    assert inspect.signature(kw.reduce_window2d).parameters["opcode"].default == 0x08
    assert _build("cpu_reduce_window2d")[0] == 0x1003


def test_named_opcode_constants_agree():
    """V4_<OP> = 0x... constants anywhere in the Python sources name the .def's opcode of <OP>."""
    by_enum = {r[1]: r[0] for r in ROWS}
    found = 0
    for top in ("python", "scripts", "tests_host"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                    for t in node.targets:
                        if isinstance(t, ast.Name) and t.id.startswith("V4_") and t.id[3:] in by_enum:
                            found += 1
                            assert node.value.value == by_enum[t.id[3:]], "%s: %s = %r, the .def says 0x%X" % (
                                path.relative_to(ROOT), t.id, node.value.value, by_enum[t.id[3:]])
    assert found >= 1  # tests_host/kpu_layers_from_file.py: V4_KPU_CONV2D

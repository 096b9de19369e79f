"""kmodel tools: look inside a .kmodel, check that models fit a K210, word-swap a model for `kpu.load_flash`.

    python scripts/kmodel_tool.py inspect face.kmodel             # format, inputs, outputs, layers, MACs, memory
    python scripts/kmodel_tool.py inspect face.kmodel --json      # the same as one JSON object
    python scripts/kmodel_tool.py fit face.kmodel mnist.kmodel    # will they fit on the board, alone and together?
    python scripts/kmodel_tool.py fit big.kmodel --firmware minimum --heap 256K
    python scripts/kmodel_tool.py fit big.kmodel --firmware-bytes 0x180000 --json
    python scripts/kmodel_tool.py swap face.kmodel face_be.kmodel # word-swapped copy for kpu.load_flash
    python scripts/kmodel_tool.py swap --check face_be.kmodel     # plain or word-swapped?
    python scripts/kmodel_tool.py swap --unswap face_be.kmodel face.kmodel

Everything about the model comes from the C core (`_kpu.Model`: layers(), inputs(), output_info(), memory(), read by
their field names); this module only arranges it. The memory budget, the fit verdict and the KPU RAM row notation are
the ones `kpu.memtest()` uses (`KPU.budget`, `KPU.fits`, `KPU.rows_text`), so the two always agree. A file the loader
refuses (garbage, a truncated file, a pre-release kmodel v5) is reported with the loader's own message.

Exit codes: 0 = done / fits, 1 = `fit`: does not fit, 2 = error (unreadable or invalid model, bad option).
`swap --check` exits 0 for a plain and for a word-swapped kmodel (it prints which) and 2 for anything else.

Memory budget used by `fit` (docs: docs/maixpy-kpu-api.md section 6; MaixPy's `Maix.utils` docs for the GC heap):
the K210 has 6 MiB of general SRAM. The firmware keeps part of it (code, data, stacks, camera and LCD buffers),
MaixPy's GC heap (Python objects) takes `gc_heap_size()` (default 512 KiB), and models are loaded into what is left
(the system heap): each `kpu.load` costs model + 256 + main buffer + context (the core's `sram_total`). Loaded models
add up. KPU RAM (2 MiB) holds one model's feature maps during its forward, and the next forward reuses it, so it is
checked per model, not summed. MaixPy loads at most 5 models at once.

`swap` does what MaixPy-v1_scripts' machine_vision/model_le2be.py does: reverse the 4 bytes of every 32-bit word.
A file whose length is not a multiple of 4 is padded with ASCII '0' bytes (0x30), exactly as model_le2be.py pads,
so the two tools give identical files; the padding lies past the model's end, where the loader never reads.
The swap is the same for every format (it undoes the board's 32-bit flash reads), so kmodel v5 files swap too and
openkpu's `kpu.load_flash` reads them; MaixPy's own firmware loads no kmodel v5 at all (`swap` says so).
"""
import argparse
import array
import itertools
import json
import os
import re
import sys

import _kpu
import KPU

EXIT_OK = 0
EXIT_DOES_NOT_FIT = 1
EXIT_ERROR = 2

KIB = 1024
MIB = 1024 * 1024
BOARD_SRAM = _kpu.BOARD_SRAM_SIZE  # 6 MiB general SRAM
KPU_RAM_ROWS = _kpu.KPU_RAM_ROWS  # 2 MiB of 64-byte rows
KPU_ROW_BYTES = _kpu.KPU_ROW_BYTES
MAX_LOADED_MODELS = KPU.MAX_MODELS  # MaixPy's limit (ERR_MODELS_FULL, 2009)
DEFAULT_GC_HEAP = KPU.DEFAULT_GC_HEAP  # MaixPy's default Maix.utils.gc_heap_size() (0x80000)
# Below this the tool does not suggest shrinking the GC heap: a MaixPy script with a camera loop needs some room
# for its Python objects. A rule of thumb, not a documented limit.
MIN_SUGGESTED_GC_HEAP = 128 * KIB

# What the firmware keeps of the 6 MiB besides the GC heap (KPU.py: the budget kpu.memtest() uses too).
FIRMWARE_PRESETS = KPU.FIRMWARE_PRESETS
DEFAULT_FIRMWARE = KPU.DEFAULT_FIRMWARE

PAD_BYTE = b"0"  # model_le2be.py pads a short last word with ASCII '0'
MAIXPY_LOAD_FLASH_TABLES = 4 * KIB  # MaixPy's load_flash wants header + tables in the first 4 KiB

FORMAT_NAMES = {3: "kmodel v3 (nncase v0.1.x / Maix-EMC)", 4: "kmodel v4 (nncase v0.2.x)",
                5: "kmodel v5 (nncase v1.x, K210 target)"}
DTYPE_NAMES = {"B": "uint8", "f": "float32"}
KERNEL_NAMES = {0: "1x1", 1: "3x3"}
# docs/kpu-reference.md section 4, step 4
POOL_NAMES = {
    0: "none", 1: "max 2x2 stride 2", 2: "mean 2x2 stride 2", 3: "max 4x4 stride 4", 4: "mean 4x4 stride 4",
    5: "pick left-top 2x2 stride 2", 6: "pick right-top 2x2 stride 2", 7: "pick left-top 4x4 stride 4",
    8: "mean 2x2 stride 1", 9: "max 2x2 stride 1",
}


class ToolError(Exception):
    """A problem to report in one line (exit code 2), never as a traceback."""


# ---------------------------------------------------------------------------------------------------------------
# Reading and loading


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ToolError("cannot read %s: %s" % (path, e.strerror or e))


def try_load(data):
    """(model, None) when the core loads `data`, else (None, the loader's error message)."""
    try:
        return _kpu.Model(data), None
    except ValueError as e:
        return None, str(e)


def swap_words(data):
    """Reverse the bytes of every 32-bit word; a short last word is first padded with ASCII '0' (model_le2be.py)."""
    tail = len(data) % 4
    if tail:
        data = bytes(data) + PAD_BYTE * (4 - tail)
    words = array.array("I", bytes(data))  # "I" is 4 bytes on every platform CPython runs on
    words.byteswap()
    return words.tobytes()


def load_model(path, data):
    """The loaded model, or ToolError with the loader's message (and a hint when the file is word-swapped)."""
    model, error = try_load(data)
    if model is not None:
        return model
    swapped, _ = try_load(swap_words(data)) if data else (None, None)
    if swapped is not None:
        error += ("\n  %s is a WORD-SWAPPED kmodel v%d (a kpu.load_flash image); its plain form is what kpu.load "
                  "takes: `swap --unswap %s plain.kmodel`" % (path, swapped.version(), path))
    raise ToolError("%s: %s" % (path, error))


def open_model(path):
    data = read_file(path)
    return data, load_model(path, data)


# ---------------------------------------------------------------------------------------------------------------
# Describing a model (inspect)


def tensor_info(index, t):
    """A TensorInfo record (inputs(), output_info()) as plain data."""
    return {"index": index, "dtype": DTYPE_NAMES.get(t.typecode, t.typecode), "typecode": t.typecode,
            "shape_nchw": [t.n, t.c, t.h, t.w], "bytes": t.bytes}


def input_usage(t):
    """How a MaixPy script feeds this input to kpu.forward."""
    n, c, h, w = t["shape_nchw"]
    if t["typecode"] == "f":
        return "a list of %d floats" % (t["bytes"] // 4)
    if n == 1 and c in (1, 3):
        return "a %dx%d %s image" % (w, h, "RGB888" if c == 3 else "grayscale")
    return "%d bytes, planar" % t["bytes"]


def kpu_layer_info(layer):
    """The KPU convolution of a LayerInfo record: shapes WxHxC, kernel, depthwise, pooling."""
    kernel = KERNEL_NAMES.get(layer.kernel_type, "kernel_type %d" % layer.kernel_type)
    depthwise = bool(layer.depthwise)
    description = "%s%s in %dx%dx%d -> out %dx%dx%d" % (
        "dw" if depthwise else "conv", kernel, layer.wi, layer.hi, layer.chi, layer.wo, layer.ho, layer.cho)
    return {"in_whc": [layer.wi, layer.hi, layer.chi], "out_whc": [layer.wo, layer.ho, layer.cho],
            "kernel": kernel, "kernel_type": layer.kernel_type, "depthwise": depthwise,
            "pool_type": layer.pool_type, "pool": POOL_NAMES.get(layer.pool_type, "unknown"),
            "para_size": layer.para_size, "description": description}


def window_op_name(type_name):
    """What a CPU windowed layer does, from its type name (v3 pools, v4 reduce_window2d and convolutions)."""
    name = type_name.lower()
    if "max_pool" in name:
        return "max pool"
    if "average_pool" in name:
        return "average pool"
    if "reduce_window" in name:
        return "reduce window"
    if "transpose" in name:
        return "transposed conv"
    if "depthwise" in name:
        return "depthwise conv"
    return "conv"


def window_layer_info(layer):
    """The window of a CPU pool or convolution (LayerInfo kernel_w/h, stride_w/h, and its maps WxHxC)."""
    op = window_op_name(layer.type_name)
    kernel = "%dx%d" % (layer.kernel_w, layer.kernel_h)
    stride = ("%d" % layer.stride_w if layer.stride_w == layer.stride_h
              else "%dx%d" % (layer.stride_w, layer.stride_h))
    description = "%s %s stride %s, %dx%dx%d -> %dx%dx%d" % (
        op, kernel, stride, layer.wi, layer.hi, layer.chi, layer.wo, layer.ho, layer.cho)
    return {"op": op, "kernel_wh": [layer.kernel_w, layer.kernel_h], "stride_wh": [layer.stride_w, layer.stride_h],
            "in_whc": [layer.wi, layer.hi, layer.chi], "out_whc": [layer.wo, layer.ho, layer.cho],
            "description": description}


def layer_info(layer):
    """A LayerInfo record (Model.layers()) as plain data."""
    return {"index": layer.index, "type": layer.type, "type_name": layer.type_name,
            "is_kpu": bool(layer.is_kpu), "body_offset": layer.body_offset, "body_size": layer.body_size,
            "macs": layer.macs, "kpu": kpu_layer_info(layer) if layer.is_kpu else None,
            "window": window_layer_info(layer) if not layer.is_kpu and layer.kernel_w else None,
            "output": {"dtype": DTYPE_NAMES.get(layer.out_typecode, layer.out_typecode),
                       "shape_nchw": [layer.out_n, layer.out_c, layer.out_h, layer.out_w]}}


def count_by_type(layers):
    counts = {}
    for layer in layers:
        counts[layer["type_name"]] = counts.get(layer["type_name"], 0) + 1
    return counts


def totals_info(layers, memory):
    kpu_layers = sum(1 for layer in layers if layer["is_kpu"])
    largest = max(layers, key=lambda layer: layer["body_size"]) if layers else None
    return {"layers": len(layers), "kpu_layers": kpu_layers, "cpu_layers": len(layers) - kpu_layers,
            "by_type": count_by_type(layers), "kpu_macs": memory["kpu_macs"],
            "work": memory["work"], "max_work": memory["max_work"],
            "body_bytes": sum(layer["body_size"] for layer in layers),
            "largest_body": ({"index": largest["index"], "type_name": largest["type_name"],
                              "bytes": largest["body_size"]} if largest else None),
            # header and tables (v4: and the constants) that precede the first layer body
            "tables_bytes": min(layer["body_offset"] for layer in layers) if layers else memory["model_bytes"]}


def memory_info(model):
    mem = dict(model.memory())
    mem["kpu_bytes_used"] = mem["kpu_rows_used"] * KPU_ROW_BYTES
    mem["kpu_rows_budget"] = KPU_RAM_ROWS
    return mem


def describe(path, data, model):
    """Everything `inspect` shows, as plain data (what --json prints)."""
    layers = [layer_info(raw) for raw in model.layers()]
    for layer, work in zip(layers, model.work()):  # the work budget's per-layer figures
        layer["work"] = work
    memory = memory_info(model)
    inputs = [tensor_info(i, t) for i, t in enumerate(model.inputs())]
    for t in inputs:
        t["forward_takes"] = input_usage(t)
    return {"file": path, "file_bytes": len(data), "version": model.version(),
            "format": FORMAT_NAMES.get(model.version(), "kmodel v%d" % model.version()),
            "inputs": inputs,
            "outputs": [tensor_info(i, model.output_info(i)) for i in range(model.output_count())],
            "layers": layers, "totals": totals_info(layers, memory), "memory": memory}


def human_count(n):
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= limit:
            return "%.2f %s" % (n / limit, suffix)
    return str(n)


def human_bytes(n):
    if abs(n) >= MIB:
        return "%d B (%.2f MiB)" % (n, n / MIB)
    if abs(n) >= KIB:
        return "%d B (%.1f KiB)" % (n, n / KIB)
    return "%d B" % n


def shape_text(shape):
    return "[%s]" % ", ".join(str(d) for d in shape)


def layer_details(layer):
    kpu = layer["kpu"]
    if kpu is None:
        text = "CPU, out %s %s" % (layer["output"]["dtype"], shape_text(layer["output"]["shape_nchw"]))
        window = layer.get("window")
        return "CPU %s, out %s" % (window["description"], layer["output"]["dtype"]) if window else text
    text = kpu["description"]
    if kpu["pool_type"]:
        text += ", pool %d (%s)" % (kpu["pool_type"], kpu["pool"])
    return text


def kpu_rows_text(mem):
    if not mem["kpu_rows_used"]:
        return "not used (no KPU layer)"
    return "%d rows of %d B = %s, %s of %d (2 MiB)" % (
        mem["kpu_rows_used"], KPU_ROW_BYTES, human_bytes(mem["kpu_bytes_used"]),
        KPU.rows_text(mem["kpu_row_lo"], mem["kpu_row_hi"]), KPU_RAM_ROWS)


def format_table(header, rows, align, indent="  ", gap="  "):
    """Lines of a table whose columns are as wide as their widest cell (header included; header None: no header
    line), so long names and large numbers never push a row out of line. align: one '<' or '>' per column; a last
    left-aligned column is not padded."""
    cells = [[str(c) for c in row] for row in ([header] if header else []) + rows]
    if not cells:
        return []
    widths = [max(len(row[i]) for row in cells) for i in range(len(align))]
    lines = []
    for row in cells:
        parts = []
        for i, cell in enumerate(row):
            if i == len(row) - 1 and align[i] == "<":
                parts.append(cell)
            else:
                parts.append(cell.rjust(widths[i]) if align[i] == ">" else cell.ljust(widths[i]))
        lines.append((indent + gap.join(parts)).rstrip())
    return lines


def format_tensors(title, tensors, usage):
    rows = [["#%d" % t["index"], t["dtype"], "NCHW %s" % shape_text(t["shape_nchw"]), "%d B" % t["bytes"]]
            + (["kpu.forward takes %s" % t["forward_takes"]] if usage else []) for t in tensors]
    return [title] + format_table(None, rows, "<<<>" + ("<" if usage else ""))


def format_layers(layers):
    rows = [[layer["index"], layer["type_name"], layer["body_size"],
             human_count(layer["macs"]) if layer["is_kpu"] else "-",
             "%s [work %s]" % (layer_details(layer), human_count(layer.get("work", 0)))] for layer in layers]
    return ["Layers"] + format_table(["#", "type", "body B", "KPU MACs", "details [work]"], rows, "><>><")


def format_totals(totals, version):
    by_type = ", ".join("%s %d" % item for item in totals["by_type"].items())
    lines = ["Totals",
             "  layers: %d (%d KPU, %d CPU): %s" % (totals["layers"], totals["kpu_layers"], totals["cpu_layers"],
                                                  by_type or "none"),
             "  KPU MACs per forward: %d (%s)" % (totals["kpu_macs"], human_count(totals["kpu_macs"])),
             "  work per forward (MACs + elements touched): %d (%s) of the %s limit (max_work)"
             % (totals["work"], human_count(totals["work"]), human_count(totals["max_work"])),
             "  layer bodies: %s; before the first body (header, tables, v4 constants): %d B"
             % (human_bytes(totals["body_bytes"]), totals["tables_bytes"]) if version < 5 else
             # a v5 layer's body is its instruction (a stackvm tensor call or a k210 instruction), inside .text
             "  layer bodies (the instructions in the modules' .text): %s" % human_bytes(totals["body_bytes"])]
    if totals["largest_body"]:
        big = totals["largest_body"]
        lines.append("  largest body: layer %d (%s), %s" % (big["index"], big["type_name"], human_bytes(big["bytes"])))
    return lines


def format_memory(mem):
    return ["Memory on a K210 (what kpu.load takes)",
            "  model file                %s" % human_bytes(mem["model_bytes"]),
            "  model buffer (+256 align) %s" % human_bytes(mem["model_alloc"]),
            "  main buffer               %s" % human_bytes(mem["main_mem"]),
            "  runtime context           %s" % human_bytes(mem["context_bytes"]),
            "  KPU backend scratch       %s (the emulator's working memory on a PC; none on the K210's KPU; not part "
            "of the SRAM total)" % human_bytes(mem["backend_scratch"]),
            "  SRAM total                %s of the 6 MiB (`fit` checks it against the firmware's budget)"
            % human_bytes(mem["sram_total"]),
            "  KPU RAM                   %s" % kpu_rows_text(mem)]


def format_inspect(info):
    lines = ["%s: %s, %d bytes" % (info["file"], info["format"], info["file_bytes"]), ""]
    lines += format_tensors("Inputs", info["inputs"], usage=True) + [""]
    lines += format_tensors("Outputs", info["outputs"], usage=False) + [""]
    lines += format_layers(info["layers"]) + [""]
    lines += format_totals(info["totals"], info["version"]) + [""]
    lines += format_memory(info["memory"])
    return "\n".join(lines)


def cmd_inspect(args, out):
    data, model = open_model(args.model)
    info = describe(args.model, data, model)
    out.write((json.dumps(info, indent=1) if args.json else format_inspect(info)) + "\n")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------------------
# Will it fit (fit)


# a hex number (its digits may end in B: 0x1B is 27), or a decimal one; then K or M, then B / iB
_SIZE = re.compile(r"(0x[0-9a-f]+|[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([km]?)(?:i?b)?", re.IGNORECASE)


def parse_size(text):
    """Byte count from '524288', '0x80000', '512K', '512KiB', '1.5M', '2MiB'."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise argparse.ArgumentTypeError("not a size: %r (examples: 524288, 0x80000, 512K, 1.5M)" % text)
    number, scale = match.group(1), {"": 1, "K": KIB, "M": MIB}[match.group(2).upper()]
    if number.lower().startswith("0x"):
        return int(number, 16) * scale
    return int(float(number) * scale)


def board_budget(firmware, firmware_bytes, gc_heap):
    """SRAM left for models = 6 MiB - firmware - GC heap: KPU.budget, the one kpu.memtest() uses."""
    try:
        return KPU.budget(firmware, firmware_bytes, gc_heap)
    except ValueError as e:
        raise ToolError(str(e))


def load_flash_cost(mem, totals, buffers):
    """SRAM kpu.load_flash needs: header and tables, one or two layer-body buffers, main buffer, context."""
    largest = totals["largest_body"]["bytes"] if totals["largest_body"] else 0
    return totals["tables_bytes"] + buffers * largest + mem["main_mem"] + mem["context_bytes"]


def model_cost(path, budget):
    """What one model costs. No KPU RAM verdict: the loader refuses a model whose feature maps do not fit the
    2 MiB, so every model that loads fits it, and each forward reuses it (nothing adds up across models)."""
    data, model = open_model(path)
    info = describe(path, data, model)
    mem, totals = info["memory"], info["totals"]
    return {"file": path, "version": info["version"], "sram_total": mem["sram_total"],
            "model_alloc": mem["model_alloc"], "main_mem": mem["main_mem"], "context_bytes": mem["context_bytes"],
            "kpu_rows_used": mem["kpu_rows_used"], "kpu_row_lo": mem["kpu_row_lo"], "kpu_row_hi": mem["kpu_row_hi"],
            "backend_scratch": mem["backend_scratch"],
            "fits_alone": KPU.fits([mem["sram_total"]], budget),
            "over_bytes": max(0, mem["sram_total"] - budget["for_models"]),
            "tables_bytes": totals["tables_bytes"],
            "largest_body": totals["largest_body"]["bytes"] if totals["largest_body"] else 0,
            "load_flash_one_buffer": load_flash_cost(mem, totals, 1),
            "load_flash_two_buffers": load_flash_cost(mem, totals, 2)}


def fits_together(group, budget):
    return KPU.fits([m["sram_total"] for m in group], budget)


def maximal_groups(models, budget, limit=12):
    """Groups of two or more models (by index) that fit together and to which no other model can be added; a model
    given twice counts as two loads, but two groups that name the same files are one. Only for up to `limit`
    models: the search tries every subset."""
    if len(models) > limit:
        return None
    indices = range(len(models))
    fitting = [set(c) for k in range(2, len(models) + 1) for c in itertools.combinations(indices, k)
               if fits_together([models[i] for i in c], budget)]
    maximal = [g for g in fitting if not any(g < other for other in fitting)]
    maximal.sort(key=lambda g: (-len(g), sum(models[i]["sram_total"] for i in g), sorted(g)))
    groups, seen = [], set()
    for g in maximal:
        names = tuple(sorted(models[i]["file"] for i in g))
        if names not in seen:
            seen.add(names)
            groups.append(sorted(g))
    return groups


def first_failing_load(models, budget):
    """Loading the models in the order given: index of the first kpu.load that fails, or None."""
    for i in range(len(models)):
        if not fits_together(models[:i + 1], budget):
            return i
    return None


def advice_for_model(m, budget):
    """What to do when one model alone does not fit."""
    tips = []
    over = m["over_bytes"]
    # two buffers first: the next bodies are read while the KPU runs, so it is the faster way when it fits.
    # Not for v5: MaixPy's load_flash streams v3 layer bodies and reads no v5 file (openkpu's reads the whole model).
    for buffers, key in ((2, "load_flash_two_buffers"), (1, "load_flash_one_buffer")) if m["version"] < 5 else ():
        if m[key] <= budget["for_models"]:
            tips.append("load it with kpu.load_flash(addr, %d, ...): layer bodies are streamed from flash, it "
                        "then needs about %s (largest body %d B x %d, header/tables %d B, main buffer %d B, "
                        "context %d B); word-swap it first with `swap`" % (
                            buffers - 1, human_bytes(m[key]), m["largest_body"], buffers, m["tables_bytes"],
                            m["main_mem"], m["context_bytes"]))
            if m["tables_bytes"] > MAIXPY_LOAD_FLASH_TABLES:
                tips[-1] += (" (but its header and tables take %d B: MaixPy's load_flash reads only the first "
                             "%d B)" % (m["tables_bytes"], MAIXPY_LOAD_FLASH_TABLES))
            break
    for name, fw_bytes in sorted(FIRMWARE_PRESETS.items(), key=lambda kv: -kv[1]):
        if fw_bytes < budget["firmware_bytes"] and over <= budget["firmware_bytes"] - fw_bytes:
            tips.append("use MaixPy's %s firmware (check with --firmware %s)" % (name, name))
            break
    heap_needed = budget["gc_heap"] - over
    if heap_needed >= MIN_SUGGESTED_GC_HEAP:
        tips.append("shrink the GC heap to at most %d B: Maix.utils.gc_heap_size(%d), then machine.reset() "
                    "(the script's Python objects must fit in it)" % (heap_needed, heap_needed))
    tips.append("a smaller model: fewer channels or a smaller input (it is %d B too big here)" % over)
    return ["%s does not fit alone (%d B over); either:" % (m["file"], over)] + ["  - " + t for t in tips]


def advice_together(models, budget):
    over = sum(m["sram_total"] for m in models) - budget["for_models"]
    tips = []
    if len(models) > MAX_LOADED_MODELS:
        tips.append("MaixPy loads at most %d models at once (error 2009): kpu.deinit(net) one before loading "
                    "another" % MAX_LOADED_MODELS)
    if over > 0:
        tips.append("together they are %d B over: load them one at a time (kpu.deinit(net) before the next "
                    "kpu.load), or use load_flash for the biggest, a smaller firmware or GC heap (see the options)"
                    % over)
    return tips


def fit_report(paths, budget):
    models = [model_cost(path, budget) for path in paths]
    total = sum(m["sram_total"] for m in models)
    together = fits_together(models, budget)
    advice = []
    for m in models:
        if not m["fits_alone"]:
            advice += advice_for_model(m, budget)
    if len(models) > 1 and not together:
        advice += advice_together(models, budget)
    groups = maximal_groups(models, budget) if len(models) > 1 and not together else None
    return {"budget": budget, "models": models,
            "together": {"count": len(models), "sram_total": total, "fits": together,
                         "spare_bytes": budget["for_models"] - total,
                         "first_failing_load": first_failing_load(models, budget)},
            "groups": [[models[i]["file"] for i in g] for g in groups] if groups is not None else None,
            "fits": together, "advice": advice}


def format_budget(b):
    return ["K210 memory budget",
            "  general SRAM        %s" % human_bytes(b["sram"]),
            "  - firmware          %s: %s" % (human_bytes(b["firmware_bytes"]), b["firmware_source"]),
            "  - GC heap           %s: Maix.utils.gc_heap_size()" % human_bytes(b["gc_heap"]),
            "  = for models        %s: the system heap kpu.load allocates from" % human_bytes(b["for_models"]),
            "  KPU RAM per model   %d rows of %d B (2 MiB), reused by every forward: not summed (the loader "
            "refuses a model whose maps do not fit)" % (b["kpu_rows"], KPU_ROW_BYTES)]


def format_model_rows(models):
    rows = [[m["file"], m["sram_total"], m["model_alloc"], m["main_mem"], m["context_bytes"], m["backend_scratch"],
             m["kpu_rows_used"], KPU.rows_text(m["kpu_row_lo"], m["kpu_row_hi"]),
             "fits" if m["fits_alone"] else "DOES NOT FIT (%d B over)" % m["over_bytes"]] for m in models]
    return (["Models"] + format_table(["model", "SRAM B", "model+256", "main", "context", "scratch", "KPU rows",
                                       "KPU RAM", "alone"], rows, "<>>>>>><<")
            + ["  (scratch: the KPU backend's working memory, the emulator's on a PC and none on the K210's KPU; not "
               "part of the SRAM figure)"])


def format_together(report):
    t, b = report["together"], report["budget"]
    if t["count"] == 1:
        return []
    state = "fit" if t["fits"] else "DO NOT FIT"
    lines = ["", "All %d models loaded together: %d B of %d B: %s" % (t["count"], t["sram_total"], b["for_models"],
                                                                    state)]
    if not t["fits"]:
        if t["first_failing_load"] is not None:
            lines.append("  loaded in the order given, kpu.load of model #%d (%s) is the first to fail"
                         % (t["first_failing_load"] + 1, report["models"][t["first_failing_load"]]["file"]))
        if report["groups"]:
            lines.append("  these can be loaded together:")
            for group in report["groups"][:8]:
                lines.append("    " + " + ".join(group))
        elif report["groups"] is not None:
            lines.append("  no two of them fit together: load one at a time (kpu.deinit(net) before the next "
                         "kpu.load)")
    return lines


def misfit_reasons(report):
    """Why the models do not fit: bytes over the budget, more models than MaixPy loads, or both."""
    b, t = report["budget"], report["together"]
    reasons = []
    if t["spare_bytes"] < 0:
        reasons.append("%d B over the %d B for models" % (-t["spare_bytes"], b["for_models"]))
    if t["count"] > MAX_LOADED_MODELS:
        reasons.append("%d models, MaixPy loads at most %d at once" % (t["count"], MAX_LOADED_MODELS))
    return reasons


def format_verdict(report):
    b, t = report["budget"], report["together"]
    if report["fits"]:
        return ["", "Verdict: FITS (%d B to spare of %d B for models)" % (t["spare_bytes"], b["for_models"])]
    return ["", "Verdict: DOES NOT FIT (%s)" % "; ".join(misfit_reasons(report)),
            "What to do:"] + ["  " + a for a in report["advice"]]


def format_fit(report):
    lines = format_budget(report["budget"]) + [""] + format_model_rows(report["models"])
    return "\n".join(lines + format_together(report) + format_verdict(report))


def cmd_fit(args, out):
    budget = board_budget(args.firmware, args.firmware_bytes, args.heap)
    report = fit_report(args.models, budget)
    out.write((json.dumps(report, indent=1) if args.json else format_fit(report)) + "\n")
    return EXIT_OK if report["fits"] else EXIT_DOES_NOT_FIT


# ---------------------------------------------------------------------------------------------------------------
# Word swap for load_flash (swap)


def classify(path, data):
    """('plain', version) or ('swapped', version); ToolError with the loader's message when neither loads."""
    model, error = try_load(data)
    if model is not None:
        return "plain", model.version()
    swapped, _ = try_load(swap_words(data)) if data else (None, None)
    if swapped is not None:
        return "swapped", swapped.version()
    raise ToolError("%s is not a kmodel, neither plain nor word-swapped: %s" % (path, error))


def tables_bytes_of(data):
    """Bytes before the first layer body (header, tables, v4 constants), as the core places the bodies."""
    layers = _kpu.Model(data).layers()
    return min(layer.body_offset for layer in layers) if layers else len(data)


def check_not_same_file(src, dst):
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise ToolError("%s: input and output are the same file; write the result elsewhere" % dst)


def write_file(path, data):
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise ToolError("cannot write %s: %s" % (path, e.strerror or e))


def cmd_check(path, out):
    kind, version = classify(path, read_file(path))
    if kind == "plain":
        out.write("%s: plain kmodel v%d (for kpu.load; `swap` it for kpu.load_flash)\n" % (path, version))
    else:
        out.write("%s: word-swapped kmodel v%d (for kpu.load_flash; `swap --unswap` gives the plain model)\n"
                  % (path, version))
    return EXIT_OK


def cmd_swap_file(src, dst, out, err):
    data = read_file(src)
    kind, version = classify(src, data)
    if kind == "swapped":
        raise ToolError("%s is already word-swapped: its bytes do not load as a kmodel, their word swap loads as "
                        "kmodel v%d. Flash it as it is for kpu.load_flash; `swap --unswap` gives the plain model"
                        % (src, version))
    check_not_same_file(src, dst)
    swapped = swap_words(data)
    write_file(dst, swapped)
    out.write("%s: word-swapped kmodel v%d, %d bytes (%d padding bytes '0'), for kpu.load_flash(address, ...)\n"
              % (dst, version, len(swapped), len(swapped) - len(data)))
    if version >= 5:
        err.write("note: %s is a kmodel v5: openkpu's kpu.load_flash reads it; MaixPy's own firmware loads no kmodel "
                  "v5 (neither kpu.load nor kpu.load_flash)\n" % src)
        return EXIT_OK
    tables = tables_bytes_of(data)
    if tables > MAIXPY_LOAD_FLASH_TABLES:
        err.write("warning: %s: header and tables take %d B; MaixPy's load_flash reads them from the first %d B "
                  "only, so MaixPy may refuse this model (openkpu's load_flash does not)\n"
                  % (src, tables, MAIXPY_LOAD_FLASH_TABLES))
    return EXIT_OK


def strip_padding(plain, model, swapped_size):
    """Drop the (at most 3) ASCII '0' bytes swap_words appended: only those past the model's declared end."""
    ends = [layer.body_offset + layer.body_size for layer in model.layers()]
    end = max(ends) if ends else len(plain)
    cut = len(plain)
    while cut > max(end, swapped_size - 3) and plain[cut - 1:cut] == PAD_BYTE:
        cut -= 1
    return plain[:cut]


def cmd_unswap_file(src, dst, out):
    data = read_file(src)
    kind, version = classify(src, data)
    if kind == "plain":
        raise ToolError("%s is a plain kmodel v%d, not word-swapped: nothing to undo" % (src, version))
    check_not_same_file(src, dst)
    plain = swap_words(data)
    plain = strip_padding(plain, _kpu.Model(plain), len(data))
    write_file(dst, plain)
    out.write("%s: plain kmodel v%d, %d bytes, for kpu.load\n" % (dst, version, len(plain)))
    return EXIT_OK


def cmd_swap(args, out, err):
    if args.check:
        if args.output is not None:
            raise ToolError("swap --check takes one file, got %s and %s" % (args.input, args.output))
        return cmd_check(args.input, out)
    if args.output is None:
        raise ToolError("swap needs an output file: swap IN OUT")
    if args.unswap:
        return cmd_unswap_file(args.input, args.output, out)
    return cmd_swap_file(args.input, args.output, out, err)


# ---------------------------------------------------------------------------------------------------------------
# Command line


def build_parser(prog):
    parser = argparse.ArgumentParser(prog=prog, description="Inspect kmodel files, check that they fit a K210, "
                                     "word-swap them for kpu.load_flash.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("inspect", help="format, inputs, outputs, layers, MACs and memory of a .kmodel")
    p.add_argument("model", help="the .kmodel file (v3, v4 or v5)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    p = sub.add_parser("fit", help="will these models fit on the board, alone and together?",
                       description="SRAM for models = 6 MiB - firmware - GC heap. Firmware presets (with the "
                       "default 512 KiB GC heap they leave the room MaixPy's docs give): full = %d B (about 2 MiB "
                       "for models), minimum = %d B (about 4 MiB), minimum-no-camera = %d B (about 5 MiB). To measure "
                       "your firmware, after sensor/lcd init on the board: 6291456 - Maix.utils.gc_heap_size() - "
                       "Maix.utils.heap_free(), and pass it as --firmware-bytes."
                       % (FIRMWARE_PRESETS["full"], FIRMWARE_PRESETS["minimum"],
                          FIRMWARE_PRESETS["minimum-no-camera"]))
    p.add_argument("models", nargs="+", metavar="MODEL", help="the .kmodel files, in the order the script loads them")
    p.add_argument("--firmware", choices=sorted(FIRMWARE_PRESETS), default=DEFAULT_FIRMWARE,
                   help="MaixPy firmware build (default: %(default)s)")
    p.add_argument("--firmware-bytes", type=parse_size, metavar="N",
                   help="SRAM the firmware keeps besides the GC heap (overrides --firmware); 0x.., K, M accepted")
    p.add_argument("--heap", type=parse_size, default=DEFAULT_GC_HEAP, metavar="N",
                   help="MaixPy GC heap size, Maix.utils.gc_heap_size() (default: 512K)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    p = sub.add_parser("swap", help="word-swap a model for kpu.load_flash (MaixPy's model_le2be.py)",
                       description="Swap the bytes of every 32-bit word, as kpu.load_flash expects (a short last "
                       "word is padded with ASCII '0', like model_le2be.py). The input must be a plain kmodel; an "
                       "already swapped one is refused.")
    p.add_argument("input", metavar="IN")
    p.add_argument("output", metavar="OUT", nargs="?")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="only tell whether IN is a plain or a word-swapped kmodel")
    mode.add_argument("--unswap", action="store_true", help="turn a word-swapped IN back into the plain model")
    return parser


def run_command(args, out, err):
    if args.command == "inspect":
        return cmd_inspect(args, out)
    if args.command == "fit":
        return cmd_fit(args, out)
    return cmd_swap(args, out, err)


def main(argv=None, prog="kmodel_tool"):
    """Run the command line `argv` (default sys.argv[1:]); returns the exit code."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits on --help (0) and on bad arguments (2)
        return e.code if isinstance(e.code, int) else EXIT_ERROR
    try:
        return run_command(args, sys.stdout, sys.stderr)
    except ToolError as e:
        sys.stderr.write("%s %s: error: %s\n" % (prog, args.command, e))
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())

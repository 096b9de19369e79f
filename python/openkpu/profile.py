# SPDX-License-Identifier: Apache-2.0
"""Where a forward pass spends its time on this PC's emulator, layer by layer, on one and on N threads.

    openkpu profile face.kmodel                     # 1 thread and the default count, median of 20 runs
    openkpu profile face.kmodel -n 50 --threads 1,2,4
    openkpu profile face.kmodel --input img.bin     # the input's own bytes (planar CHW, exactly its size)
    openkpu profile face.kmodel --json              # the same as one JSON object (times in microseconds)

Each layer's time comes from the core's profiled run (`_kpu.Model.run_profiled`: the monotonic clock read between
the plan's steps, and around each task the model's threads run). A plan on two or more threads runs some layers as
one step (a pair: a KPU layer and the depthwise layer reading its output; a side chain: a KPU layer and the CPU
layers after it beside the next KPU layer); such layers are one row here, for every thread count, so the columns
compare the same work. The figures are this machine's and the emulator's: the K210's own per-layer times come from
the board (`run_timed` in the firmware's `_kpu`: the layer times without the task times), not from here.

Beside each thread count after the first, three columns tell where a split loses: `tasks N/1`, the time the N
threads spent inside their tasks over the same on the first count (above 1.00: the work itself grew, as when a thread
reads what another processor wrote and the bytes cross between their caches, or the machine gave the threads slower
processors); `split N/1`, the same for the N-way split run by the calling thread alone (`run_profiled(caller_only=
True)`, timed in turn with the others: the work the split itself adds, smaller tasks and set-ups repeated per task,
with no thread running beside it, so `tasks N/1` over `split N/1` is what running at once cost); and `idle N %`, the
share of the N threads' time outside tasks (waiting at the joins of the layers' hand-outs, and the serial parts: a
layer's setup, the CPU layers no thread shares). The two clock reads around each task cost about 40 ns together on a
Linux PC, and every column includes them.

Timing follows `make bench`: the thread counts take turns, each timed run follows an untimed run of the same model
(as in a loop over camera frames), and each row shows the median over the runs. Pseudo-random input bytes (a fixed
seed) unless --input gives a file. Exit codes: 0 = done, 2 = error (unreadable or invalid model, bad option).
"""
import argparse
import array
import json
import random
import statistics
import sys

import _kpu

from openkpu.model_tools import FORMAT_NAMES, ToolError, format_table, human_count, layer_details, layer_info, \
    open_model, read_file

EXIT_OK = 0
EXIT_ERROR = 2
DEFAULT_RUNS = 20
INPUT_SEED = 0


def parse_threads(text):
    """'1,2' -> [1, 2]; each count 1..64, no repeats."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ToolError("--threads takes counts separated by commas (1,2), not %r" % text)
    if not counts or any(c < 1 or c > 64 for c in counts) or len(set(counts)) != len(counts):
        raise ToolError("--threads: each count between 1 and 64, none twice (got %r)" % text)
    return counts


def input_bytes(model, path):
    """One bytes object per model input: --input's file for a one-input model, else pseudo-random bytes."""
    tensors = model.inputs()
    if path is None:
        rng = random.Random(INPUT_SEED)
        inputs = []
        for t in tensors:
            if t.typecode == "f":  # small finite floats, as a normalised input would be
                inputs.append(array.array("f", (rng.uniform(-2.0, 2.0) for _ in range(t.bytes // 4))).tobytes())
            else:
                inputs.append(bytes(rng.getrandbits(8) for _ in range(t.bytes)))
        return inputs
    if len(tensors) != 1:
        raise ToolError("--input gives one input; this model has %d" % len(tensors))
    data = read_file(path)
    if len(data) != tensors[0].bytes:
        raise ToolError("%s: %d bytes, but the model's input takes exactly %d (NCHW %d x %d x %d x %d, %s)"
                        % (path, len(data), tensors[0].bytes, tensors[0].n, tensors[0].c, tensors[0].h, tensors[0].w,
                           "float32" if tensors[0].typecode == "f" else "uint8 planar"))
    return [data]


def steps_of(model):
    """The plan's steps as (first layer, last layer) in order: pairs and side chains span several layers."""
    n = len(model.layers())
    last = {first: other for first, other in model.pairs() + model.side_chains()}
    steps, i = [], 0
    while i < n:
        steps.append((i, last.get(i, i)))
        i = last.get(i, i) + 1
    return steps


def common_rows(step_lists):
    """The finest split of the layers into runs that no thread count's step crosses."""
    ends = None
    for steps in step_lists:
        mine = {last for _, last in steps}
        ends = mine if ends is None else ends & mine
    rows, first = [], 0
    for end in sorted(ends):
        rows.append((first, end))
        first = end + 1
    return rows


def time_runs(models, inputs, runs):
    """({threads: [(per-layer ns, per-layer task ns) of each timed run]}, the same for the counts above 1 run with
    caller_only: their split on the calling thread alone): the thread counts and the split runs take turns, each run
    timed after an untimed one of the same kind (so a split run finds the data in its own processor's caches)."""
    times = {threads: [] for threads in models}
    alone = {threads: [] for threads in models if threads > 1}
    kinds = [(threads, False) for threads in models] + [(threads, True) for threads in alone]
    for _ in range(runs):
        for threads, caller_only in kinds:
            model = models[threads]
            for attempt in range(2):
                for i, data in enumerate(inputs):
                    model.set_input(i, data)  # (a run may reuse the input's memory, as on the chip)
                if attempt == 0:  # (untimed: a plain run, or one on the calling thread alone like the timed one)
                    model.run_profiled(caller_only=True) if caller_only else model.run()
                else:
                    (alone if caller_only else times)[threads].append(model.run_profiled(caller_only=caller_only))
    return times, alone


def median_us(ns_per_run):
    """The median of per-run nanoseconds, in microseconds."""
    return statistics.median(ns_per_run) / 1000.0


def profile(path, thread_counts, runs, input_path=None):
    """Everything the profile shows, as plain data (what --json prints); times in microseconds."""
    data, checked = open_model(path)  # (the kmodel tools' messages for a file that does not load)
    checked.free()
    models = {threads: _kpu.Model(data, threads=threads) for threads in thread_counts}
    reference = models[thread_counts[0]]
    layers = [layer_info(raw) for raw in reference.layers()]
    rows = common_rows([steps_of(model) for model in models.values()])
    inputs = input_bytes(reference, input_path)
    for model in models.values():  # one untimed pass each: buffers touched, workers started
        for i, blob in enumerate(inputs):
            model.set_input(i, blob)
        model.run()
    times, alone = time_runs(models, inputs, runs)
    out_rows = []
    for lo, hi in rows:
        group = layers[lo:hi + 1]
        row = {"layers": [lo, hi], "types": [layer["type_name"] for layer in group],
               "details": " | ".join(("" if hi == lo else "%d: " % layer["index"]) + layer_details(layer)
                                     for layer in group),
               "kpu_macs": sum(layer["macs"] for layer in group), "is_kpu": any(layer["is_kpu"] for layer in group),
               "us": {}, "task_us": {}, "split_task_us": {}}
        for threads in thread_counts:
            row["us"][str(threads)] = median_us(sum(run[lo:hi + 1]) for run, _ in times[threads])
            row["task_us"][str(threads)] = median_us(sum(tasks[lo:hi + 1]) for _, tasks in times[threads])
        for threads in alone:
            row["split_task_us"][str(threads)] = median_us(sum(tasks[lo:hi + 1]) for _, tasks in alone[threads])
        out_rows.append(row)
    totals = {}
    for threads in thread_counts:
        passes = [sum(run) for run, _ in times[threads]]
        kpu = [sum(t for t, layer in zip(run, layers) if layer["is_kpu"]) for run, _ in times[threads]]
        totals[str(threads)] = {"pass_us": median_us(passes), "pass_min_us": min(passes) / 1000.0,
                                "kpu_layers_us": median_us(kpu),
                                "task_us": median_us(sum(tasks) for _, tasks in times[threads])}
        if threads in alone:
            totals[str(threads)]["split_task_us"] = median_us(sum(tasks) for _, tasks in alone[threads])
    version = reference.version()
    for model in models.values():
        model.free()
    return {"file": path, "format": FORMAT_NAMES.get(version, "kmodel v%d" % version),
            "layers": len(layers), "runs": runs, "threads": thread_counts,
            "input": input_path or "pseudo-random bytes (seed %d)" % INPUT_SEED,
            "kpu_macs": sum(layer["macs"] for layer in layers), "rows": out_rows, "totals": totals}


def task_ratio(task_us, base_task_us):
    """Task time on some thread count over that on the base count ("-" where the base has none)."""
    return "%.2f" % (task_us / base_task_us) if base_task_us > 0 else "-"


def idle_share(count, us, task_us):
    """Percent of `count` threads' time over `us` spent outside tasks ("-" for no time)."""
    capacity = int(count) * us
    return "%.0f" % (100.0 * (1.0 - task_us / capacity)) if capacity > 0 else "-"


def format_profile(info):
    counts = [str(t) for t in info["threads"]]
    base = counts[0]
    first_total = info["totals"][base]["pass_us"] or 1.0
    header = (["layers", "type", "KPU MACs"] + ["%s thr us" % c for c in counts]
              + ["x%s/%s" % (c, base) for c in counts[1:]] + ["tasks %s/%s" % (c, base) for c in counts[1:]]
              + ["split %s/%s" % (c, base) for c in counts[1:]] + ["idle %s %%" % c for c in counts[1:]]
              + ["%% of %s thr" % base, "details"])
    table = []
    for row in info["rows"]:
        lo, hi = row["layers"]
        cells = ["%d" % lo if lo == hi else "%d-%d" % (lo, hi),
                 row["types"][0] + ("" if lo == hi else "+%d" % (hi - lo)),
                 human_count(row["kpu_macs"]) if row["kpu_macs"] else "-"]
        cells += ["%.1f" % row["us"][c] for c in counts]
        cells += ["%.2f" % (row["us"][base] / row["us"][c]) if row["us"][c] > 0 else "-" for c in counts[1:]]
        cells += [task_ratio(row["task_us"][c], row["task_us"][base]) for c in counts[1:]]
        cells += [task_ratio(row["split_task_us"][c], row["task_us"][base]) for c in counts[1:]]
        cells += [idle_share(c, row["us"][c], row["task_us"][c]) for c in counts[1:]]
        cells += ["%.1f" % (100.0 * row["us"][base] / first_total), row["details"]]
        table.append(cells)
    lines = ["%s: %s, %d layers, %s KPU MACs; %d timed runs per thread count (median), input: %s"
             % (info["file"], info["format"], info["layers"], human_count(info["kpu_macs"]), info["runs"],
                info["input"]), ""]
    lines += format_table(header, table, "<<>" + ">" * (5 * len(counts) - 4) + "><", indent="")
    lines.append("")
    for c in counts:
        t = info["totals"][c]
        lines.append("%s thread%s: pass %.3f ms (median; fastest %.3f), KPU layers %.3f ms, CPU layers %.3f ms%s"
                     % (c, "" if c == "1" else "s", t["pass_us"] / 1000, t["pass_min_us"] / 1000,
                        t["kpu_layers_us"] / 1000, (t["pass_us"] - t["kpu_layers_us"]) / 1000,
                        "" if c == base else ", %.2fx %s thread%s; tasks' time %sx %s's (the same split on one "
                        "thread: %sx), %s%% of the threads' time outside tasks" % (
                            info["totals"][base]["pass_us"] / t["pass_us"] if t["pass_us"] else 0.0, base,
                            "" if base == "1" else "s", task_ratio(t["task_us"], info["totals"][base]["task_us"]), base,
                            task_ratio(t["split_task_us"], info["totals"][base]["task_us"]),
                            idle_share(c, t["pass_us"], t["task_us"]))))
    lines.append("(the emulator on this machine, not the K210; a row of several layers is one step of the plan on "
                 "some thread count, a pair or a side chain, whose CPU layers count with its KPU layers)")
    return "\n".join(lines)


def build_parser(prog):
    parser = argparse.ArgumentParser(prog=prog, description="Time a model's forward pass on this PC's emulator, "
                                     "layer by layer, on one and on N threads.")
    parser.add_argument("model", help="the .kmodel file (v3, v4 or v5)")
    parser.add_argument("-n", "--runs", type=int, default=DEFAULT_RUNS,
                        help="timed runs per thread count (default %(default)s)")
    parser.add_argument("--threads", default=None,
                        help="thread counts separated by commas (default: 1 and the processors available, %d)"
                        % _kpu.default_threads())
    parser.add_argument("--input", help="a raw input file (planar CHW bytes, or float32), exactly the input's size")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return parser


def main(argv=None, prog="openkpu profile"):
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_ERROR
    try:
        if args.runs < 1:
            raise ToolError("-n/--runs must be at least 1")
        counts = parse_threads(args.threads) if args.threads else sorted({1, _kpu.default_threads()})
        info = profile(args.model, counts, args.runs, args.input)
    except ToolError as e:
        sys.stderr.write("%s: error: %s\n" % (prog, e))
        return EXIT_ERROR
    sys.stdout.write((json.dumps(info, indent=1) if args.json else format_profile(info)) + "\n")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

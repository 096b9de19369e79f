#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark the emulator on the real models: load time, forward time (median of several runs), KPU MACs, and side
by side the peer: onnxruntime's int8 convolutions (QLinearConv, one thread) on the same convolution shapes, and the
K210's own published latency where there is one.

    make bench                      # all real models found in ../shared/testdata (the peer in build/bench-venv)
    python scripts/bench.py -n 9    # more runs per model
    python scripts/bench.py --peer-python build/bench-venv/bin/python   # with the peer column

Figures are wall-clock on this machine, single thread. Models that are absent are listed as skipped. The peer runs
in its own environment (onnx, onnxruntime, numpy: never dependencies of the package) through scripts/bench_peer.py.
"""
import json
import subprocess
import tempfile
import argparse
import os
import pathlib
import statistics
import sys
import time

import _kpu

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTDATA = pathlib.Path(os.environ.get("OPENKPU_TESTDATA", ROOT.parent / "shared" / "testdata"))

# Published K210 latencies (../shared/testdata READMEs): ULFFD's README; MobileNet's "~26 fps".
K210_MS = {
    "ulffd_face_v4_nncase/slim-320.kmodel": 65.6,
    "ulffd_face_v4_nncase/RFB-320.kmodel": 164.8,
    "mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel": 1000.0 / 26,
}

MODELS = [
    "iris_fc_cpu_v3_v4/iris_v3.kmodel",
    "mnist_v3_maixpy/mnist.kmodel",
    "face_detect_yolo2_v3_maixpy/facedetect.kmodel",
    "yolo2_voc20_v3_nncase_rc5/yolo.kmodel",
    "mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel",
    "iris_fc_cpu_v3_v4/iris_v4.kmodel",
    "yolo2_voc20_v4_nncase/yolo.kmodel",
    "yolo2_voc20_v4_nncase/yolo_v0.2.0-alpha1_cpu_maxpool.kmodel",
    "ulffd_face_v4_nncase/slim-320.kmodel",
    "ulffd_face_v4_nncase/RFB-320.kmodel",
]


def median_time(fn, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(path, runs):
    data = path.read_bytes()
    load_s = median_time(lambda: _kpu.Model(data).free(), runs)
    model = _kpu.Model(data)
    for index, inp in enumerate(model.inputs()):
        # A deterministic, non-trivial input: the forward time does not depend on the values.
        model.set_input(index, bytes((i * 37 + 11) & 0xFF for i in range(inp.bytes)) if inp.typecode == "B"
                        else bytes(inp.bytes))
    model.run()  # warm-up
    fwd_s = median_time(model.run, runs)
    mem = model.memory()
    model.free()
    return load_s, fwd_s, mem


def conv_shapes(path):
    """[[w, h, in_c, out_c, kernel, depthwise], ...] of the model's KPU layers, at input resolution."""
    model = _kpu.Model(path.read_bytes())
    out = []
    for t in model.layers():
        if t.is_kpu:
            out.append([t.wi, t.hi, t.chi, t.cho, 3 if t.kernel_type == 1 else 1, int(bool(t.depthwise))])
    model.free()
    return out


def peer_seconds(python, runs):
    """{model: onnxruntime seconds} from scripts/bench_peer.py in the peer's environment, or {} (with the reason)."""
    present = [rel for rel in MODELS if (TESTDATA / rel).exists()]
    with tempfile.TemporaryDirectory() as d:
        shapes, out = os.path.join(d, "shapes.json"), os.path.join(d, "peer.json")
        with open(shapes, "w") as f:
            json.dump({rel: conv_shapes(TESTDATA / rel) for rel in present}, f)
        r = subprocess.run([python, str(ROOT / "scripts" / "bench_peer.py"), shapes, out, "--runs", str(runs)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("peer (onnxruntime) not measured: %s" % (r.stderr.strip().splitlines() or ["failed"])[-1])
            return {}, None
        with open(out) as f:
            peer = json.load(f)
    return peer["seconds"], peer["onnxruntime"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=5, help="runs per measurement (median is reported)")
    ap.add_argument("--peer-python", help="a Python with onnx + onnxruntime + numpy for the peer column "
                                          "(make bench: build/bench-venv/bin/python)")
    args = ap.parse_args()
    peer, peer_version = peer_seconds(args.peer_python, args.runs) if args.peer_python else ({}, None)
    if peer_version:
        print("peer: onnxruntime %s, QLinearConv (uint8) on the same convolution shapes, 1 thread" % peer_version)
    print("%-58s %9s %11s %10s %12s %8s %9s %7s %7s" % ("model", "load ms", "forward ms", "KPU MMAC", "MMAC/s",
                                                       "SRAM KiB", "ort ms", "ratio", "K210 ms"))
    for rel in MODELS:
        path = TESTDATA / rel
        if not path.exists():
            print("%-58s skipped: %s not found" % (rel, path))
            continue
        try:
            load_s, fwd_s, mem = bench(path, args.runs)
        except (ValueError, OSError) as e:
            print("%-58s error: %s" % (rel, e))
            continue
        macs = mem["kpu_macs"]
        ort_s = peer.get(rel)
        print("%-58s %9.2f %11.2f %10.1f %12.1f %8d %9s %7s %7s" % (
            rel, load_s * 1e3, fwd_s * 1e3, macs / 1e6, macs / 1e6 / fwd_s if fwd_s else 0.0,
            mem["sram_total"] // 1024, "%.2f" % (ort_s * 1e3) if ort_s else "-",
            "%.1f" % (fwd_s / ort_s) if ort_s else "-", "%.1f" % K210_MS[rel] if rel in K210_MS else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

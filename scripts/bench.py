#!/usr/bin/env python3
"""Benchmark the emulator on the real models: load time, forward time (median of several runs), KPU MACs.

    make bench                      # all real models found in ../shared/testdata
    python scripts/bench.py -n 9    # more runs per model

Figures are wall-clock on this machine, single thread. Models that are absent are listed as skipped.
"""
import argparse
import os
import pathlib
import statistics
import sys
import time

import _kpu

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTDATA = pathlib.Path(os.environ.get("OPENKPU_TESTDATA", ROOT.parent / "shared" / "testdata"))

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
    for index, (typecode, n, c, h, w, nbytes) in enumerate(model.inputs()):
        # A deterministic, non-trivial input: the forward time does not depend on the values.
        model.set_input(index, bytes((i * 37 + 11) & 0xFF for i in range(nbytes)) if typecode == "B"
                        else bytes(nbytes))
    model.run()  # warm-up
    fwd_s = median_time(model.run, runs)
    mem = model.memory()
    model.free()
    return load_s, fwd_s, mem


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=5, help="runs per measurement (median is reported)")
    args = ap.parse_args()
    print("%-58s %9s %11s %10s %12s %8s" % ("model", "load ms", "forward ms", "KPU MMAC", "MMAC/s", "SRAM KiB"))
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
        print("%-58s %9.2f %11.2f %10.1f %12.1f %8d" % (
            rel, load_s * 1e3, fwd_s * 1e3, macs / 1e6, macs / 1e6 / fwd_s if fwd_s else 0.0,
            mem["sram_total"] // 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())

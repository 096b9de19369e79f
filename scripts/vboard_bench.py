#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The K210 firmware's figures on the virtual Maix board: image size, free heap after boot, boot-to-prompt time,
instructions per second, and per real model the time to load it from a flash offset and to run it.

    python scripts/vboard_bench.py [--firmware build/k210/firmware.bin] [--testdata ../shared/testdata]
    make vboard-bench

Host seconds are what the virtual board takes on this PC. "virtual ms" is the board's own clock (CLINT mtime,
1 instruction = 1 CPU cycle at 403 MHz): the CPU's share on a real chip, without the KPU's (the virtual KPU takes no
virtual time), so it is a lower bound of the chip's latency, not a prediction of it.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

MODELS = [
    ("iris v3", "iris_fc_cpu_v3_v4/iris_v3.kmodel"),
    ("MNIST (v3)", "mnist_v3_maixpy/mnist.kmodel"),
    ("face detector (v3)", "face_detect_yolo2_v3_maixpy/facedetect.kmodel"),
    ("YOLOv2 20-class (v3)", "yolo2_voc20_v3_nncase_rc5/yolo.kmodel"),
    ("YOLOv2 20-class (v4)", "yolo2_voc20_v4_nncase/yolo.kmodel"),
    ("MobileNet v1 0.75 (v3)", "mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel"),
    ("ULFFD slim-320 (v4)", "ulffd_face_v4_nncase/slim-320.kmodel"),
    ("ULFFD RFB-320 (v4)", "ulffd_face_v4_nncase/RFB-320.kmodel"),
]


def run(board, source, timeout=600):
    """Run `source` in the raw REPL; (stdout text, host seconds). Raises on a traceback."""
    import io
    from openkpu.vboard.cli import run_script
    out, err = io.BytesIO(), io.BytesIO()
    t0 = time.perf_counter()
    status, _boot = run_script(board, source.encode(), timeout=timeout, out=out, err=err, wait_prompt=False)
    dt = time.perf_counter() - t0
    if status:
        raise RuntimeError("the board raised:\n" + err.getvalue().decode())
    return out.getvalue().decode().replace("\r\n", "\n"), dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--firmware", default=os.path.join(ROOT, "build", "k210", "firmware.bin"))
    ap.add_argument("--testdata", default=os.environ.get("OPENKPU_TESTDATA",
                                                         os.path.join(os.path.dirname(ROOT), "shared", "testdata")))
    ap.add_argument("--runs", type=int, default=3, help="forward passes per model (median reported)")
    args = ap.parse_args(argv)
    from openkpu.vboard.board import Board

    flash, address, present = [], 0x100000, []
    for name, rel in MODELS:
        path = os.path.join(args.testdata, rel)
        if os.path.exists(path):
            flash.append((path, address))
            present.append((name, address, os.path.getsize(path)))
            address = (address + os.path.getsize(path) + 0xFFFF) // 0x10000 * 0x10000
    t0 = time.perf_counter()
    board = Board(args.firmware, flash=flash)
    board.run_until(b">>> ", timeout=30)
    boot_host = time.perf_counter() - t0
    boot_cycles = board.cycles
    print("firmware: %s, %d bytes" % (args.firmware, os.path.getsize(args.firmware)))
    out, _ = run(board, "import gc\ngc.collect()\nprint(gc.mem_free(), gc.mem_free() + gc.mem_alloc())\n")
    free, total = map(int, out.split())
    print("boot to the >>> prompt: %d instructions, %.3f s on this PC (%.3f ms at 403 MHz)"
          % (boot_cycles, boot_host, boot_cycles / 403e3))
    print("GC heap after boot: %d bytes free of %d" % (free, total))
    out, dt = run(board, "s = 0\nfor i in range(200000):\n    s += i * 3 & 255\nprint(s)\n")
    s = board.stats()
    print("a bytecode loop of 200,000 iterations: %.2f s; board so far: %d instructions, %.0f MIPS while busy"
          % (dt, s["instructions"], s["mips"]))
    if not present:
        print("no real models found under %s" % args.testdata)
        return 0
    print()
    print("| model | bytes | load from flash (host s) | forward (host s, median of %d) | forward (virtual ms) |"
          % args.runs)
    print("|---|---|---|---|---|")
    for name, addr, size in present:
        _, load_s = run(board, "import gc, KPU as kpu\nt = None\ngc.collect()\nt = kpu.load(0x%x)\n"
                               "inp = t.net_arg().inputs()[0]\n"
                               "x = [0.5] * (inp.bytes // 4) if inp.typecode == 'f' else bytes(inp.bytes)\n" % addr)
        times, virt = [], []
        for _ in range(args.runs):
            out, dt = run(board, "import time\nt0 = time.ticks_us()\nkpu.forward(t, x)\n"
                                 "print(time.ticks_diff(time.ticks_us(), t0))\n")
            times.append(dt)
            virt.append(int(out.split()[-1]) / 1000.0)
        run(board, "kpu.deinit(t)\nt = None\nx = None\n")
        print("| %s | %d | %.2f | %.3f | %.1f |" % (name, size, load_s, statistics.median(times),
                                                     statistics.median(virt)))
    s = board.stats()
    print("\nboard total: %d instructions in %.1f s host busy, %.0f MIPS, %d KPU layers"
          % (s["instructions"], s["host_seconds"], s["mips"], s["kpu_layers"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

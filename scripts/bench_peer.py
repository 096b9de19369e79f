#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peer side of `make bench`: onnxruntime's int8 convolutions (QLinearConv) on the same convolution shapes as
each real model's KPU layers, one thread. Runs in the benchmark's own environment (build/bench-venv: onnx,
onnxruntime, numpy), never in the package's.

    python scripts/bench_peer.py SHAPES.json OUT.json [--runs N] [--threads T]

SHAPES.json (written by scripts/bench.py --shapes): {model: [[w, h, in_c, out_c, kernel, depthwise], ...]}. Each
layer becomes one QLinearConv at the KPU's input resolution (stride 1, same padding: the KPU convolves at input
resolution and pools afterwards), uint8 activations and weights, fed its own input, all in one graph, so the time
is the sum of the model's convolutions as onnxruntime runs them. OUT.json: {model: median seconds}.
"""
import argparse
import json
import statistics
import sys
import time


def conv_graph(layers):
    import numpy as np
    from onnx import TensorProto, helper
    rng = np.random.default_rng(0)
    nodes, inputs, outputs, inits = [], [], [], []

    def scalar(name, value, dtype):
        inits.append(helper.make_tensor(name, dtype, [], [value]))
        return name

    scalar("xs", 0.02, TensorProto.FLOAT)
    scalar("xz", 128, TensorProto.UINT8)
    scalar("ws", 0.01, TensorProto.FLOAT)
    scalar("wz", 128, TensorProto.UINT8)
    scalar("ys", 0.05, TensorProto.FLOAT)
    scalar("yz", 128, TensorProto.UINT8)
    feeds = {}
    for i, (w, h, ic, oc, k, dw) in enumerate(layers):
        group = ic if dw else 1
        wshape = [oc, 1 if dw else ic, k, k]
        weights = rng.integers(0, 256, size=wshape, dtype=np.uint8)
        inits.append(helper.make_tensor("w%d" % i, TensorProto.UINT8, wshape, weights.tobytes(), raw=True))
        inputs.append(helper.make_tensor_value_info("x%d" % i, TensorProto.UINT8, [1, ic, h, w]))
        outputs.append(helper.make_tensor_value_info("y%d" % i, TensorProto.UINT8, [1, oc, h, w]))
        nodes.append(helper.make_node("QLinearConv", ["x%d" % i, "xs", "xz", "w%d" % i, "ws", "wz", "ys", "yz"],
                                      ["y%d" % i], kernel_shape=[k, k], pads=[k // 2] * 4, group=group))
        feeds["x%d" % i] = rng.integers(0, 256, size=(1, ic, h, w), dtype=np.uint8)
    graph = helper.make_graph(nodes, "kpu_convs", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString(), feeds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes")
    ap.add_argument("out")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    import onnxruntime as ort
    with open(args.shapes) as f:
        shapes = json.load(f)
    results = {}
    for name, layers in shapes.items():
        if not layers:
            continue
        blob, feeds = conv_graph(layers)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(blob, opts, providers=["CPUExecutionProvider"])
        sess.run(None, feeds)  # warm-up
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            times.append(time.perf_counter() - t0)
        results[name] = statistics.median(times)
    with open(args.out, "w") as f:
        json.dump({"onnxruntime": ort.__version__, "threads": args.threads, "seconds": results}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

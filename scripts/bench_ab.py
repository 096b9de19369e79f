#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare two builds of the _kpu extension in one process, their forward passes taking turns.

    python scripts/bench_ab.py BUILD_A BUILD_B [MODEL ...] [-n 200] [--threads 1,2]

BUILD_A and BUILD_B are directories that each hold a _kpu extension (_kpu*.so / _kpu*.pyd), for example two revisions
built side by side:

    git worktree add /tmp/rev-a HEAD~1 && (cd /tmp/rev-a && python setup.py -q build_ext --force -b /tmp/build-a)
    python setup.py -q build_ext --force -b /tmp/build-b
    python scripts/bench_ab.py /tmp/build-a /tmp/build-b ulffd_face_v4_nncase/slim-320.kmodel

A MODEL is a path, or one relative to ../shared/testdata (OPENKPU_TESTDATA); none given: the three models issue 12
names. For each model and thread count both builds run the same input; each round times one pass of A and one of B
(each after an untimed pass of the same model, as in scripts/bench.py; that pass also outlasts the other build's
workers, which watch for work 0.3 ms after their last task), A first in even rounds and B first in odd ones. It prints each build's median and, per thread count, the median over the rounds of B's time over A's in the
same round, with the share of rounds B was faster. A host whose speed changes from second to second (another
tenant, a processor taken away) moves both builds of a round alike, where separate runs of scripts/bench.py or
`openkpu profile` for each build can differ by more than the change being measured (this project's machine: 40%
between minutes). The figures compare the two builds; they are not the speed of either (scripts/bench.py is).
"""
import argparse
import glob
import importlib.util
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTDATA = pathlib.Path(os.environ.get("OPENKPU_TESTDATA", ROOT.parent / "shared" / "testdata"))
DEFAULT_MODELS = [
    "face_detect_yolo2_v3_maixpy/facedetect.kmodel",
    "mobilenetv1_0.75_v3_maixemc/mbnetv1.kmodel",
    "ulffd_face_v4_nncase/slim-320.kmodel",
]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_build(directory):
    """The _kpu extension in `directory`, loaded under its own name beside any other build (each file is its own
    shared object, so the two builds share no code or state)."""
    found = sorted(glob.glob(os.path.join(directory, "_kpu*.so")) + glob.glob(os.path.join(directory, "_kpu*.pyd")))
    if not found:
        raise SystemExit("bench_ab: no _kpu extension (_kpu*.so) in %s: build one there with "
                         "`python setup.py -q build_ext --force -b %s`" % (directory, directory))
    return _load("_kpu", found[0])


def timed_pass(model):
    model.run()  # (untimed: the timed pass finds its own buffers in the caches)
    t0 = time.perf_counter()
    model.run()
    return time.perf_counter() - t0


def compare(modules, ready_model, data, threads, rounds):
    """{thread count: ([A's seconds], [B's seconds])}, one pass of each a round; ready_model: scripts/bench.py's."""
    times = {}
    for count in threads:
        models = [ready_model(data, count, module) for module in modules]
        a, b = [], []
        for r in range(rounds):
            if r % 2 == 0:
                a.append(timed_pass(models[0]))
                b.append(timed_pass(models[1]))
            else:
                b.append(timed_pass(models[1]))
                a.append(timed_pass(models[0]))
        for model in models:
            model.free()
        times[count] = (a, b)
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_a", help="directory holding build A's _kpu extension")
    ap.add_argument("build_b", help="directory holding build B's _kpu extension")
    ap.add_argument("models", nargs="*", help="kmodel files, or paths under ../shared/testdata (default: %s)"
                                              % ", ".join(DEFAULT_MODELS))
    ap.add_argument("-n", "--rounds", type=int, default=200, help="rounds per model and thread count (default 200)")
    ap.add_argument("--threads", default=None,
                    help="thread counts separated by commas (default: 1 and the processors available)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    modules = [load_build(args.build_a), load_build(args.build_b)]
    # bench.py's model set-up (its rows' input and warm-up) and model names; loading it imports the installed _kpu too
    bench = _load("openkpu_bench", ROOT / "scripts" / "bench.py")
    if args.threads:
        try:
            threads = [int(t) for t in args.threads.split(",")]
        except ValueError:
            ap.error("--threads: expected counts separated by commas, e.g. 1,2")
    else:
        threads = sorted({1, modules[0].default_threads()})
    names = args.models or DEFAULT_MODELS
    print("A = %s, B = %s; %d rounds a model and thread count, one pass of each build a round, turns alternating"
          % (args.build_a, args.build_b, args.rounds))
    print("%-48s %7s %10s %10s %9s %9s" % ("model", "threads", "A ms", "B ms", "B/A", "B faster"))
    for name in names:
        if args.models:
            path = bench.model_path(name, "bench_ab")
        else:
            path = TESTDATA / name
            if not path.exists():
                print("%-48s skipped: not in %s" % (name, TESTDATA))
                continue
        times = compare(modules, bench.ready_model, path.read_bytes(), threads, args.rounds)
        for count in threads:
            a, b = times[count]
            ratios = [y / x for x, y in zip(a, b)]
            print("%-48s %7d %10.3f %10.3f %9.3f %8.0f%%" % (
                name, count, statistics.median(a) * 1e3, statistics.median(b) * 1e3, statistics.median(ratios),
                100.0 * sum(1 for r in ratios if r < 1.0) / len(ratios)))
    print("(B/A: the median over the rounds of B's pass time over A's in the same round; B faster: the share of "
          "rounds where it was)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

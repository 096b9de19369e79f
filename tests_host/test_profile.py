# SPDX-License-Identifier: Apache-2.0
"""Per-layer timing: `_kpu.Model.run_timed` (the core's okpu_model_run_timed) and `openkpu profile` over it.

- a timed run gives the same outputs as run(); one time per layer, 0 for layers run inside another's step (a pair, a
  side chain) and for layers a partial run does not reach; the layer times add up to no more than the call took;
- a profiled run (`run_profiled`) too, and its task times: each layer's at most threads x its time (every task lies
  inside its step), a KPU layer's above 0, and on one thread at most its time;
- `openkpu profile` covers every layer once, in order, with a row per step of the plan that no thread count splits
  (a real model's pairs and side chains on two threads), and its totals are the sums of its rows for a single run,
  task times included; its text shows the task-time ratio and the idle share beside each thread count after the first;
- `run_profiled(caller_only=True)` on two threads: the same outputs, every layer's tasks within its time (one thread
  ran them all), and profile's `split 2/1` column and totals from those runs;
- bad options, a wrong-size --input and an unreadable model exit 2 with a message that says what to fix;
- `KPU.layer_times(task, img)` (the shim, for board scripts): forward's outputs, one (index, type name, us) a layer,
  zeros past set_layers.
(The C test test_kpu_emu checks the attribution exactly, with a clock that advances a fixed step per read.)
"""
import json
import os
import subprocess
import sys
import time

import pytest

_kpu = pytest.importorskip("_kpu")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(ROOT, "examples", "models", "digits.kmodel")


def loaded(path, threads=1):
    with open(path, "rb") as f:
        data = f.read()
    model = _kpu.Model(data, threads=threads)
    inputs = [bytes((i * 37 + 11) & 0xFF for i in range(t.bytes)) for t in model.inputs()]
    return model, inputs


def set_inputs(model, inputs):
    for i, data in enumerate(inputs):
        model.set_input(i, data)


def outputs(model):
    return [model.output(i).data for i in range(model.output_count())]


def grouped_layers(model):
    """{layer: the first layer of the step it runs in}, for layers run inside another's step."""
    inside = {}
    for first, last in model.pairs() + model.side_chains():
        for layer in range(first + 1, last + 1):
            inside[layer] = first
    return inside


def check_timed_run(model, inputs):
    set_inputs(model, inputs)
    model.run()
    plain = outputs(model)
    set_inputs(model, inputs)
    t0 = time.perf_counter_ns()
    ns = model.run_timed()
    wall = time.perf_counter_ns() - t0
    assert outputs(model) == plain
    assert len(ns) == len(model.layers()) and all(isinstance(v, int) and v >= 0 for v in ns)
    assert 0 < sum(ns) <= wall
    inside = grouped_layers(model)
    assert all(ns[layer] == 0 for layer in inside), [(layer, ns[layer]) for layer in inside if ns[layer]]
    assert all(ns[layer] > 0 for layer in range(len(ns)) if layer not in inside and model.layers()[layer].is_kpu)
    return ns


def test_run_timed_digits():
    model, inputs = loaded(DIGITS)
    check_timed_run(model, inputs)
    set_inputs(model, inputs)
    partial = model.run_timed(2)
    assert partial[2:] == [0] * (len(partial) - 2) and sum(partial[:2]) > 0
    assert model.output(0).layer == 1


@pytest.mark.parametrize("name", ["ulffd_face_v4_nncase/slim-320.kmodel",
                                  "face_detect_yolo2_v3_maixpy/facedetect.kmodel"])
def test_run_timed_real_model_on_two_threads(testdata, name):
    model, inputs = loaded(testdata(*name.split("/")), threads=2)
    assert model.pairs(), "the two-thread plan of %s has no pair to check" % name
    ns = check_timed_run(model, inputs)
    # the layer times are the run's: a plain run of the same model takes about as long (not a timing test: a
    # factor of 3 either way only catches a clock in the wrong unit)
    set_inputs(model, inputs)
    t0 = time.perf_counter_ns()
    model.run()
    wall = time.perf_counter_ns() - t0
    assert wall / 3 < sum(ns) < wall * 3


def check_profiled_run(model, inputs, threads):
    set_inputs(model, inputs)
    model.run()
    plain = outputs(model)
    set_inputs(model, inputs)
    ns, tasks = model.run_profiled()
    assert outputs(model) == plain
    assert len(ns) == len(tasks) == len(model.layers()) and all(isinstance(v, int) and v >= 0 for v in ns + tasks)
    assert all(task <= threads * t for task, t in zip(tasks, ns)), [(i, t, task) for i, (t, task) in
                                                                    enumerate(zip(ns, tasks)) if task > threads * t]
    inside = grouped_layers(model)
    assert all(ns[layer] == 0 and tasks[layer] == 0 for layer in inside)
    kpu = [i for i, layer in enumerate(model.layers()) if layer.is_kpu and i not in inside]
    assert kpu and all(tasks[i] > 0 for i in kpu)
    return ns, tasks


def test_run_profiled_digits():
    for threads in (1, 2):
        model, inputs = loaded(DIGITS, threads=threads)
        check_profiled_run(model, inputs, threads)
        set_inputs(model, inputs)
        ns, tasks = model.run_profiled(2)
        assert ns[2:] == tasks[2:] == [0] * (len(ns) - 2) and sum(tasks[:2]) > 0


@pytest.mark.parametrize("name", ["ulffd_face_v4_nncase/slim-320.kmodel",
                                  "face_detect_yolo2_v3_maixpy/facedetect.kmodel"])
def test_run_profiled_real_model(testdata, name):
    for threads in (1, 2):
        model, inputs = loaded(testdata(*name.split("/")), threads=threads)
        ns, tasks = check_profiled_run(model, inputs, threads)
        if threads == 1:
            assert all(task <= t for task, t in zip(tasks, ns))
        else:  # (which thread ran a task is the scheduler's: test_workers counts every task's clock reads instead)
            assert model.pairs() and all(tasks[first] > 0 for first, _ in model.pairs())
            # the same split on the calling thread alone: the same outputs, no layer's tasks longer than the layer
            plain = outputs(model)
            set_inputs(model, inputs)
            ns, tasks = model.run_profiled(caller_only=True)
            assert outputs(model) == plain
            assert all(task <= t for task, t in zip(tasks, ns)), [(i, t, task) for i, (t, task) in
                                                                 enumerate(zip(ns, tasks)) if task > t]
            assert all(tasks[first] > 0 for first, _ in model.pairs())


def test_run_timed_errors():
    model, inputs = loaded(DIGITS)
    with pytest.raises(TypeError):
        model.run_timed("all")
    with pytest.raises(TypeError):  # (the task times' diagnostic: run_profiled's alone)
        model.run_timed(caller_only=True)
    model.free()
    with pytest.raises(ValueError, match="freed"):
        model.run_timed()


def profile_cli(*args):
    return subprocess.run([sys.executable, "-m", "openkpu", "profile"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=600)


def check_rows_cover_layers(info, n_layers):
    spans = [row["layers"] for row in info["rows"]]
    assert spans[0][0] == 0 and spans[-1][1] == n_layers - 1
    assert all(b[0] == a[1] + 1 for a, b in zip(spans, spans[1:])) and all(lo <= hi for lo, hi in spans)


def test_profile_json_digits():
    r = profile_cli(DIGITS, "--json", "-n", 1, "--threads", "1,2")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    model, _ = loaded(DIGITS)
    layers = model.layers()
    assert info["threads"] == [1, 2] and info["runs"] == 1 and info["layers"] == len(layers)
    check_rows_cover_layers(info, len(layers))
    assert [row["types"][0] for row in info["rows"]] == [layer.type_name for layer in layers]
    assert sum(row["kpu_macs"] for row in info["rows"]) == info["kpu_macs"] == model.memory()["kpu_macs"]
    for threads in ("1", "2"):
        # one run: the pass is the sum of the rows (medians of one value each), the task time too
        assert info["totals"][threads]["pass_us"] == pytest.approx(sum(row["us"][threads] for row in info["rows"]))
        assert info["totals"][threads]["pass_us"] > 0
        assert info["totals"][threads]["task_us"] == pytest.approx(
            sum(row["task_us"][threads] for row in info["rows"]))
        assert 0 < info["totals"][threads]["task_us"] <= int(threads) * info["totals"][threads]["pass_us"]
    # the 2-thread split on one thread: its own runs, one thread's time at most, and its rows add up the same way
    assert "split_task_us" not in info["totals"]["1"] and all(row["split_task_us"].keys() == {"2"}
                                                             for row in info["rows"])
    split = info["totals"]["2"]["split_task_us"]
    assert split == pytest.approx(sum(row["split_task_us"]["2"] for row in info["rows"])) and split > 0


def test_profile_text_real_model(testdata):
    path = testdata("ulffd_face_v4_nncase", "slim-320.kmodel")
    r = profile_cli(path, "-n", 2, "--threads", "1,2", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    model, _ = loaded(path, threads=2)
    check_rows_cover_layers(info, len(model.layers()))
    steps = {(first, last) for first, last in model.pairs() + model.side_chains()}
    assert steps and steps <= {tuple(row["layers"]) for row in info["rows"]}
    text = profile_cli(path, "-n", 1, "--threads", "1,2")
    assert text.returncode == 0, text.stderr
    assert "x2/1" in text.stdout and "2 threads: pass" in text.stdout and "4-5 " in text.stdout
    assert "tasks 2/1" in text.stdout and "idle 2 %" in text.stdout and "outside tasks" in text.stdout
    assert "split 2/1" in text.stdout and "the same split on one thread" in text.stdout


def test_profile_errors(tmp_path):
    r = profile_cli(DIGITS, "--threads", "1,1")
    assert r.returncode == 2 and "none twice" in r.stderr
    r = profile_cli(DIGITS, "--threads", "two")
    assert r.returncode == 2 and "counts separated by commas" in r.stderr
    r = profile_cli(DIGITS, "-n", 0)
    assert r.returncode == 2 and "at least 1" in r.stderr
    short = tmp_path / "short.bin"
    short.write_bytes(b"\x00" * 10)
    r = profile_cli(DIGITS, "--input", short)
    need = loaded(DIGITS)[0].inputs()[0].bytes
    assert r.returncode == 2 and "10 bytes" in r.stderr and "exactly %d" % need in r.stderr
    garbage = tmp_path / "garbage.kmodel"
    garbage.write_bytes(b"\x01\x02\x03\x04" * 8)
    r = profile_cli(garbage)
    assert r.returncode == 2 and "garbage.kmodel" in r.stderr and "Traceback" not in r.stderr
    r = profile_cli(tmp_path / "missing.kmodel")
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_profile_input_file(tmp_path):
    model, inputs = loaded(DIGITS)
    blob = tmp_path / "in.bin"
    blob.write_bytes(inputs[0])
    r = profile_cli(DIGITS, "--input", blob, "-n", 1, "--threads", "1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["input"] == str(blob)


def test_kpu_layer_times(clean_kpu):
    import KPU as kpu
    task = kpu.load(DIGITS)
    model, inputs = loaded(DIGITS)
    plain = kpu.forward(task, inputs[0])[:]
    times = kpu.layer_times(task, inputs[0])
    assert kpu.get_output(task, 0)[:] == plain
    assert [(i, name) for i, name, _ in times] == [(layer.index, layer.type_name) for layer in model.layers()]
    assert all(isinstance(us, float) for _, _, us in times) and sum(us for _, _, us in times) > 0
    kpu.set_layers(task, 3)
    times = kpu.layer_times(task, inputs[0])
    assert [us for _, _, us in times[3:]] == [0.0] * (len(times) - 3) and times[0][2] > 0
    with pytest.raises(Exception, match="check img format"):
        kpu.layer_times(task, b"\x00" * 3)
    kpu.deinit(task)

# SPDX-License-Identifier: Apache-2.0
"""scripts/bench.py's per-round timing (the `free` column): bench() on two threads times, in each of its rounds, a
one-thread pass, two one-thread copies at once (AtOnce: threads started once, each copy one pass a call, the call
returning the slowest) and a two-thread pass; free_speedup keeps the rounds whose copies each ran at 90% or more of
the one-thread pass's speed and gives the ratio of those rounds' medians (the speedup column's statistic), so with
every round kept it equals the speedup column, and with none it says so."""
import pathlib
import statistics
import sys
import threading

import pytest

_kpu = pytest.importorskip("_kpu")

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402


def test_free_speedup_keeps_free_rounds():
    # (one-thread s, the copies' slowest s at once, two-thread s)
    rounds = [(10.0, 10.5, 5.0), (10.0, 11.0, 5.5), (6.0, 9.0, 4.5), (8.0, 8.0, 4.0)]
    speedup, kept = bench.free_speedup(rounds)
    assert kept == 3  # (6.0 against 9.0 at once: the copies ran at 67%)
    assert speedup == pytest.approx(10.0 / 5.0)  # median of 10, 10, 8 over median of 5, 5.5, 4
    everything = [(10.0, 10.0, 5.0), (8.0, 8.0, 5.0), (9.0, 9.0, 4.0)]
    assert bench.free_speedup(everything) == (pytest.approx(9.0 / 5.0), 3)  # the speedup column's statistic
    assert bench.free_speedup([(6.0, 9.0, 4.5)]) == (None, 0)
    assert bench.free_speedup([]) == (None, 0)


def test_at_once_runs_every_copy(shared_layer_model):
    data = shared_layer_model.read_bytes()
    models = [bench.ready_model(data, 1) for _ in range(3)]
    started = threading.active_count()
    copies = bench.AtOnce(models)
    assert threading.active_count() == started + 2  # threads started once, not per pass
    for _ in range(3):
        slowest = copies()
        assert slowest > 0 and slowest == max(copies.seconds) and all(s > 0 for s in copies.seconds)
    copies.close()
    assert threading.active_count() == started
    for m in models:
        m.free()


def test_at_once_reports_an_error(shared_layer_model):
    # a copy whose pass fails (a freed model) makes the call raise that error, and the copies can still be closed
    data = shared_layer_model.read_bytes()
    models = [bench.ready_model(data, 1) for _ in range(2)]
    copies = bench.AtOnce(models)
    copies()
    models[1].free()
    with pytest.raises(ValueError, match="freed"):
        copies()
    copies.close()
    assert not any(t.is_alive() for t in copies.threads)
    models[0].free()


def test_bench_rounds(shared_layer_model):
    path = shared_layer_model
    load_s, one_s, many_s, mem, rounds = bench.bench(path, 4, 2)
    assert load_s > 0 and one_s > 0 and many_s > 0 and mem["kpu_macs"] == 40 * 30 * 32 * 32
    assert len(rounds) == 4 and all(len(r) == 3 and min(r) > 0 for r in rounds)
    # the rounds' passes are the columns' own: their medians are the one- and two-thread figures
    assert statistics.median(r[0] for r in rounds) == one_s and statistics.median(r[2] for r in rounds) == many_s
    assert bench.bench(path, 3, 1)[4] == []  # one thread: no copies, no rounds


def test_repeat_summary_counts_rows_at_the_target():
    rows = [("a.kmodel", [(1.70, 1.85), (1.90, None), (1.80, 1.80)]), ("b.kmodel", [(None, None)])]
    header, a, b = bench.repeat_summary(rows, 1.8)
    assert "at 1.80+" in header
    # a: 3 rows, speedups 1.70-1.90 (median 1.80), 2 of 3 at 1.80 or more; free figures of the 2 rows with one
    assert a.split()[:2] == ["a.kmodel", "3"]
    assert "1.70-1.90 (median 1.80)" in a and "1.80-1.85 (median 1.83)" in a  # (1.825 shown to two places)
    assert [field for field in a.split() if "/" in field] == ["2/3", "2/2"]
    # b: one row without a figure (a pass too short to time two threads against one)
    assert b.split() == ["b.kmodel", "1", "-", "-", "-", "-"]
    assert bench.spread([1.5]) == "1.50" and bench.spread([]) == "-"


def test_selected_models(shared_layer_model, monkeypatch):
    assert bench.selected_models([]) == [(rel, bench.TESTDATA / rel) for rel in bench.MODELS]
    monkeypatch.setattr(bench, "TESTDATA", shared_layer_model.parent)  # a name under the test data folder
    assert bench.selected_models([shared_layer_model.name]) == [(shared_layer_model.name, shared_layer_model)]
    assert bench.selected_models([str(shared_layer_model)]) == [(str(shared_layer_model), shared_layer_model)]
    with pytest.raises(SystemExit, match="no model nowhere.kmodel"):
        bench.selected_models(["nowhere.kmodel"])


def test_main_repeats_rows_and_sums_them_up(one_layer_model, capsys):
    # a 3x3 layer of about 1 ms on one thread, so each row has a speedup (rows of passes under 0.1 ms show none)
    path = one_layer_model(64, 3, 5)
    name = str(path)
    assert bench.main([name, "-n", "2", "--repeat", "3", "--threads", "2", "--retries", "0", "--settle", "0",
                       "--target", "0.01"]) == 0
    out = capsys.readouterr().out
    assert sum(line.startswith("repeat ") for line in out.splitlines()) == 3
    rows = [line for line in out.splitlines() if line.startswith(name + " ")]
    assert len(rows) == 4  # three timed rows and the summary's
    speedups = [float(row.split()[5]) for row in rows[:3]]
    summary = rows[3].split()
    assert summary[1] == "3"
    assert summary[2] == "%.2f-%.2f" % (min(speedups), max(speedups))
    assert summary[5] == "3/3"  # every speedup reaches the 0.01 target

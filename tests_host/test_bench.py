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

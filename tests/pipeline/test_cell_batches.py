"""Several cells per Prefect task (``execution.cells_per_task``): how the cells are cut into batches, the
sink that hands each result over as soon as its cell ends, and — through the real flow — that results, child runs
and a failing cell inside a batch are the same as with one cell per task."""

from __future__ import annotations

import concurrent.futures
import json
import sqlite3
import threading
import time
from types import SimpleNamespace

import pytest
from conftest import small_config

from fairmiss.config import ConfigError, load_config
from flows.experiment import (TARGET_TASK_SECONDS, TASKS_PER_WORKER, CellSink, CellTasks, batch_end, cell_batches,
                              measured_batch_size, run_experiment)


def _ex(**kw):
    return SimpleNamespace(**{"cells_per_task": "auto", "task_runner": "thread", "max_workers": 2, **kw})


@pytest.mark.parametrize("n,workers", [(1, 1), (7, 2), (100, 1), (100, 2), (1000, 2), (13, 8)])
def test_auto_thread_batches_are_guided_and_keep_the_order(n, workers):
    cells = list(range(n))
    batches = cell_batches(cells, _ex(max_workers=workers))
    assert [c for b in batches for c in b] == cells  # every cell once, config order
    left = n
    for b in batches:  # the rule, recomputed from its statement: ceil(left / (4 x workers)), at most 32
        assert len(b) == min(32, max(1, -(-left // (4 * workers))))
        left -= len(b)
    assert len(batches[-1]) == 1
    assert all(len(a) >= len(b) for a, b in zip(batches, batches[1:]))  # shrinking
    if n >= 4 * workers * 2:
        assert len(batches) < n  # batching actually happens on a grid of this size


def test_auto_is_one_cell_per_task_off_the_thread_runner_and_an_integer_is_a_size():
    cells = list(range(10))
    for runner in ("process", "dask"):
        assert cell_batches(cells, _ex(task_runner=runner)) == [[c] for c in cells]
    for runner in ("thread", "process", "dask"):
        assert cell_batches(cells, _ex(task_runner=runner, cells_per_task=4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert cell_batches([], _ex()) == []


@pytest.mark.parametrize("seconds,left,workers,expected", [
    ([], 1000, 2, 1),  # nothing measured yet: one cell
    ([0.05] * 10, 1000, 2, 32),  # 2 s / 0.05 s = 40 cells, capped at 32
    ([0.2] * 10, 1000, 2, 10),  # 2 s / 0.2 s
    ([0.2] * 10, 30, 2, 4),  # guided near the end: ceil(30 / (4 x 2))
    ([5.0] * 3, 1000, 2, 1),  # cells slower than a task's target: one per task
    ([0.1, 0.1, 0.1, 10.0], 1000, 1, 20),  # the median, not the mean (one slow cell does not shrink batches)
    ([9.0] * 100 + [0.5] * 64, 1000, 2, 4),  # the last 64 cells only: the run's cells changed speed
])
def test_measured_batch_size(seconds, left, workers, expected):
    assert TARGET_TASK_SECONDS == 2.0 and TASKS_PER_WORKER == 4  # the cases above are computed for these
    assert measured_batch_size(seconds, left, workers) == expected


def test_a_batch_end_never_cuts_a_fit_group():
    cells = [SimpleNamespace(fit_group=g) for g in [None, "a", "a", "a", None, "b", "b"]]
    assert batch_end(cells, 0, 1) == 1
    assert batch_end(cells, 0, 2) == 4  # extended over fit group a
    assert batch_end(cells, 1, 1) == 4
    assert batch_end(cells, 4, 2) == 7
    assert batch_end(cells, 6, 5) == 7


@pytest.mark.parametrize("bad", [0, -1, "some", 1.5])
def test_cells_per_task_rejects_bad_values(tmp_path, bad):
    cfg = small_config(tmp_path, execution={"cells_per_task": bad})
    with pytest.raises(ConfigError, match="cells_per_task"):
        load_config(cfg)


def test_sink_hands_results_over_as_they_come_and_raises_the_task_error():
    sink = CellSink()
    fut = concurrent.futures.Future()
    got = []
    reader = threading.Thread(target=lambda: got.extend([sink.take("a", "a", fut), sink.take("b", "a", fut)]))
    reader.start()
    assert sink.put("a", 1) is True
    time.sleep(0.2)
    assert got == [] or got == [1]  # "b" not there yet: the reader still waits
    assert reader.is_alive()
    sink.put("b", 2)
    sink.end("a")
    reader.join(5)
    assert got == [1, 2]
    # a batch that ended without the cell: the task's own exception reaches the flow
    failed = concurrent.futures.Future()
    failed.set_exception(KeyError("boom"))
    sink.end("c")
    with pytest.raises(KeyError, match="boom"):
        sink.take("c", "c", failed)
    # a batch that ended without the cell and without an exception
    fine = concurrent.futures.Future()
    fine.set_result(None)
    with pytest.raises(RuntimeError, match="ended without a result"):
        sink.take("d", "c", fine)
    sink.stop()
    assert sink.put("e", 3) is False  # a stopped flow: the batch starts no other cell


class _FailedTask:
    """A finished, failed task future as :class:`CellTasks` reads it: the executor's future (``wrapped_future``,
    what ``_done`` polls) and ``result()``, counted."""

    def __init__(self, exc):
        self.wrapped_future = concurrent.futures.Future()
        self.wrapped_future.set_exception(exc)
        self.calls = 0

    def result(self):
        self.calls += 1
        return self.wrapped_future.result()


def test_a_failed_batch_is_fetched_once_and_raises_at_its_first_cell(tmp_path):
    """Measured batches (process runner, ``auto``): a task that failed frees its place in flight at once, its
    exception is read once however often the flow polls, and reaches the flow where the batch's first cell is taken."""
    tasks = CellTasks(load_config(small_config(tmp_path, execution={"task_runner": "process"})), None, "cfg.yaml")
    assert tasks.measured
    failed = _FailedTask(KeyError("boom"))
    batch = [SimpleNamespace(key="a"), SimpleNamespace(key="b")]
    tasks.queue, tasks.pos = batch, 2  # everything submitted
    tasks.futures = {c.key: (failed, batch) for c in batch}
    tasks.in_flight = {"a": (failed, batch)}
    for _ in range(5):  # the flow's polls while it waits on another batch
        tasks._fill()
    assert failed.calls == 1 and tasks.in_flight == {}
    with pytest.raises(KeyError, match="boom"):
        tasks.result("a")
    assert failed.calls == 1


BAD = {"kind": "estimator", "name": "bad_lr", "estimator": "sklearn.linear_model.LogisticRegression",
       "params": {"solver": "liblinear", "penalty": "elasticnet", "l1_ratio": 0.5}}


def _run(tmp_path, name, cells_per_task, runner="thread"):
    cfg = small_config(tmp_path / name, split={"test_size": 0.3, "n_splits": 3},
                       learners=[{"kind": "decision_tree", "name": "tree_d3", "max_depth": 3}, BAD],
                       execution={"max_workers": 2, "cells_per_task": cells_per_task, "task_runner": runner,
                                  "resume": False})
    # checked=: the flow as `fairmiss run` starts it, after the command's checks; here they are left out on purpose
    # (they would refuse BAD before the flow, and this test is about cells failing inside it)
    out = run_experiment(cfg, results_dir=str(tmp_path / name / "results"),
                         processed_dir=str(tmp_path / "processed"), checked=load_config(cfg))
    metrics = (tmp_path / name / "results" / "compas_small" / "metrics.json").read_bytes()
    with sqlite3.connect(tmp_path / name / "mlruns" / "mlflow.db") as c:
        runs = c.execute("select name, status from runs").fetchall()
    return out, metrics, runs


@pytest.mark.slow
def test_batched_flow_same_metrics_runs_and_failures_as_one_cell_per_task(tmp_path):
    """12 cells (3 splits x 2 imputers x 2 learners), one learner failing in every cell: batches of 5 (each mixing
    good and failing cells), guided batches, batches of 3 on the process runner (each batch's list comes back
    pickled) and one cell per task give byte-identical metrics, one FINISHED or FAILED child run per cell and the
    same failed cells."""
    outs = {k: _run(tmp_path, f"cpt_{k}", k) for k in (1, 5, "auto")}
    outs["3-process"] = _run(tmp_path, "proc3", 3, runner="process")
    # auto off the thread runner: batches submitted as the run goes, sized from the cells measured so far
    outs["auto-process"] = _run(tmp_path, "procauto", "auto", runner="process")
    ref_out, ref_metrics, ref_runs = outs[1]
    assert len(ref_out["failed"]) == 6 and all("bad_lr" in k for k in ref_out["failed"])
    assert json.loads(ref_metrics)["n_cells"] == 12
    for k, (out, metrics, runs) in outs.items():
        assert metrics == ref_metrics, k
        assert sorted(out["failed"]) == sorted(ref_out["failed"]), k
        assert sorted(runs) == sorted(ref_runs), k
        children = [r for r in runs if r[0] != "compas_small"]
        assert len(children) == 12 and sum(s == "FAILED" for _, s in children) == 6, (k, runs)
        assert not [r for r in runs if r[1] == "RUNNING"]


def test_a_split_that_cannot_be_made_fails_the_parent_run_with_its_error(tmp_path):
    """The cells start before the splits are waited for (thread runner): a split the data cannot give still
    raises its own ConfigError in the flow, inside the parent run, which ends FAILED; nothing stays RUNNING."""
    cfg = small_config(tmp_path, split={"test_size": 0.0001, "n_splits": 1})
    with pytest.raises(ConfigError, match=r"split: test_size 0.0001"):
        run_experiment(cfg, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    with sqlite3.connect(tmp_path / "mlruns" / "mlflow.db") as c:
        runs = c.execute("select name, status from runs").fetchall()
    assert runs == [("compas_small", "FAILED")]
    assert not (tmp_path / "results" / "compas_small").exists()

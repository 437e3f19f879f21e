"""The process pool's warm-up (issue P): ``StoppableProcessPoolTaskRunner`` starts its workers as the flow
starts, and each imports the cell path (``tasks.experiment.warm_worker``) before the first task arrives —
never more workers than the run has cells."""

from __future__ import annotations

import sys
import time

import pytest
from conftest import small_config

from fairmiss.config import load_config
from flows.experiment import StoppableProcessPoolTaskRunner, _task_runner


def lazily_imported() -> bool:
    """In a worker: has it imported what only building a Fair MIP Forest learner imports (Pyomo)?"""
    return "pyomo.environ" in sys.modules


def _mip_specs(tmp_path):
    cfg = load_config(small_config(tmp_path, learners=[{"kind": "fair_mip_forest", "name": "mip", "n_trees": 1}],
                                   execution={"max_workers": 1, "task_runner": "process"}))
    return tuple(cfg.imputers), tuple(cfg.learners)


def _alive(runner) -> int:
    return sum(p.is_alive() for p in (runner._executor._processes or {}).values())


@pytest.mark.parametrize("prewarm,max_workers,expected", [(0, 2, 0), (1, 2, 1), (2, 2, 2), (5, 2, 2)])
def test_workers_start_with_the_runner(prewarm, max_workers, expected):
    with StoppableProcessPoolTaskRunner(max_workers=max_workers, prewarm=prewarm) as runner:
        # spawned by the runner's enter, before any task: ProcessPoolExecutor spawns one worker per call queued
        assert len(runner._executor._processes) == expected
        t0 = time.monotonic()
        while _alive(runner) < expected and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        assert _alive(runner) == expected


@pytest.mark.parametrize("prewarm", [0, 1])
def test_the_warm_up_imports_the_cell_path_before_the_first_task(prewarm, tmp_path):
    # one worker: the queue is first in, first out, so the check runs after the warm-up (if any) in that worker
    with StoppableProcessPoolTaskRunner(max_workers=1, prewarm=prewarm, warm=_mip_specs(tmp_path)) as runner:
        assert runner._executor.submit(lazily_imported).result(timeout=120) is bool(prewarm)


def test_a_duplicate_does_not_warm_up():
    # Prefect enters a duplicate of the flow's runner in each worker around every task: no workers of workers
    dup = StoppableProcessPoolTaskRunner(max_workers=2, prewarm=2, warm=((), ("x",))).duplicate()
    assert isinstance(dup, StoppableProcessPoolTaskRunner) and dup._prewarm == 0
    with dup as runner:
        assert len(runner._executor._processes) == 0


def test_the_flow_warms_no_more_workers_than_cells(tmp_path):
    one = load_config(small_config(tmp_path / "a", imputers=[{"kind": "mean"}],
                                   split={"test_size": 0.3, "n_splits": 1},
                                   execution={"max_workers": 2, "task_runner": "process"}))
    assert sum(1 for _ in one.cells()) == 1
    assert _task_runner(one)._prewarm == 1
    many = load_config(small_config(tmp_path / "b", execution={"max_workers": 2, "task_runner": "process"}))
    assert _task_runner(many)._prewarm == 2
    assert _task_runner(many)._warm == (tuple(many.imputers), tuple(many.learners))

"""From a notebook: :func:`flows.api.run` runs a config given as a dict through the same
Prefect flow as the CLI and returns the cell table as a DataFrame plus the MLflow parent run id."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from conftest import ROOT

from flows.api import RunResult, run

CONFIG = {
    "experiment": "api_tiny", "seed": 3,
    "dataset": {"name": "compas_000"},
    "split": {"test_size": 0.3, "n_splits": 1},
    "missingness": [{"kind": "none"}, {"kind": "mcar", "name": "mcar20", "rates": {"priors_count": 0.2}}],
    "imputers": [{"kind": "mean"}],
    "learners": [{"kind": "decision_tree", "name": "tree", "max_depth": 3}],
    "tracking": {"log_models": False},
    "execution": {"max_workers": 1},
}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api")
    uri = f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}"
    (tmp / "mlruns").mkdir()
    res = run(CONFIG, results_dir=tmp / "results", processed_dir=tmp / "processed", tracking_uri=uri)
    return tmp, uri, res


def test_cells_table_one_row_per_cell(result):
    tmp, uri, res = result
    assert isinstance(res, RunResult) and isinstance(res.cells, pd.DataFrame)
    assert len(res.cells) == 2  # 1 split x 2 missingness x 1 imputer x 1 learner
    assert set(res.cells["status"]) == {"ok"}
    assert {"accuracy", "fnr_difference", "missingness", "imputer", "learner"} <= set(res.cells.columns)
    assert res.cells["accuracy"].between(0.5, 0.8).all()
    assert res.cells["fnr_difference"].notna().all()
    assert res.results_dir == tmp / "results" / "api_tiny"
    assert res.cells.equals(pd.read_csv(res.results_dir / "cells.csv"))
    assert res.metrics["n_cells"] == 2 and res.metrics["n_failed"] == 0


def test_parent_run_in_the_store(result):
    from mlflow.tracking import MlflowClient

    tmp, uri, res = result
    assert res.tracking_uri == uri
    client = MlflowClient(uri)
    parent = client.get_run(res.parent_run_id)
    assert parent.info.status == "FINISHED"
    kids = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{res.parent_run_id}'")
    assert len(kids) == 2


def test_second_call_is_up_to_date(result):
    tmp, uri, res = result
    from mlflow.tracking import MlflowClient

    again = run(dict(CONFIG), results_dir=tmp / "results", processed_dir=tmp / "processed",
                tracking_uri=uri)
    assert again.up_to_date and again.parent_run_id == res.parent_run_id
    assert again.cells.equals(res.cells)
    assert MlflowClient(uri).get_run(again.parent_run_id).info.status == "FINISHED"



@pytest.mark.parametrize("runner", ["thread", "process"])
@pytest.mark.slow
def test_the_console_shows_fairmiss_lines_not_prefect_task_runs(tmp_path, runner):
    """As ``fairmiss run``: progress lines per cell, no Prefect "Task run '…' - Finished in state" line. In a
    fresh process (a notebook's): Prefect's console handler is created on first use, with the stream of then.
    With worker processes (``task_runner: process``, as the paper studies run) the task-run lines are logged
    in the workers, by their own Prefect console handlers, to the same terminal."""
    cfg = {**CONFIG, "experiment": "api_console", "missingness": [{"kind": "none"}],
           "execution": {"max_workers": 1, "task_runner": runner}}
    code = ("import json, sys; from flows.api import run; "
            "run(json.loads(sys.argv[1]), results_dir='results', processed_dir='processed', "
            "tracking_uri='sqlite:///mlflow.db')")
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "FAIRMISS_VERBOSE")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src")])
    r = subprocess.run([sys.executable, "-c", code, json.dumps(cfg)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    text = r.stdout + r.stderr
    assert r.returncode == 0, text[-3000:]
    assert "tree · split 0" in text, text[-3000:]  # the cell's progress line
    assert "Task run '" not in text and "Finished in state" not in text, text[-3000:]

"""From a notebook: :func:`flows.api.run` runs a config given as a dict through the same
Prefect flow as the CLI and returns the cell table as a DataFrame plus the MLflow parent run id."""

from __future__ import annotations

import pandas as pd
import pytest

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

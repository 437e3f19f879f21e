"""One method label (the learner's name, the imputer's only where the data have missing values) in the
console table, MLflow run names and tags, reports and metrics keys — while cell keys and cache keys stay."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import small_config

from fairmiss.config import load_config
from fairmiss.pipeline import cell_cache_key
from fairmiss.pipeline.summary import data_has_missing, format_table, label_cells, run_name, summary_frame


def _cfg(tmp_path, **over):
    return load_config(small_config(tmp_path, **over))


COMPLETE = {"missingness": [{"kind": "none"}], "imputers": [{"kind": "mean"}],
            "learners": [{"kind": "decision_tree", "name": "tree_d3", "max_depth": 3},
                         {"kind": "logistic_regression", "name": "logreg"}]}


def test_complete_data_one_imputer_is_the_learner_name(tmp_path):
    cfg = _cfg(tmp_path, **COMPLETE)
    df = pd.DataFrame({"a": [1.0, 2.0], "b": [0.0, 1.0]})
    raw = cfg.cells()
    cells = label_cells(cfg, raw, df, ["a", "b"])
    assert [c.method for c in raw] == ["mean+tree_d3", "mean+logreg"] * 2  # unlabelled: imputer named
    assert [c.method for c in cells] == ["tree_d3", "logreg"] * 2
    # keys and cache keys do not change with the label
    assert [c.key for c in cells] == [c.key for c in raw]
    assert [cell_cache_key(cfg, c, data_hash="h", code_version="v") for c in cells] == \
        [cell_cache_key(cfg, c, data_hash="h", code_version="v") for c in raw]
    assert cells == raw  # with_imputer is not compared


def test_native_nan_or_injected_missingness_names_the_imputer(tmp_path):
    cfg = _cfg(tmp_path, **COMPLETE)
    holed = pd.DataFrame({"a": [1.0, np.nan], "b": [0.0, 1.0]})
    assert [c.method for c in label_cells(cfg, cfg.cells(), holed, ["a", "b"])][:2] == ["mean+tree_d3", "mean+logreg"]
    # NaN only outside the features (e.g. a dropped column) does not count
    assert data_has_missing(cfg.cells()[0], holed, ["b"]) is False
    injected = _cfg(tmp_path / "i", imputers=COMPLETE["imputers"], learners=COMPLETE["learners"])  # a preset
    full = pd.DataFrame({"a": [1.0, 2.0]})
    assert {c.method for c in label_cells(injected, injected.cells(), full, ["a"])} == {"mean+tree_d3", "mean+logreg"}


def test_several_imputers_on_complete_data_stay_distinct(tmp_path):
    cfg = _cfg(tmp_path, **{**COMPLETE, "imputers": [{"kind": "mean"}, {"kind": "median"}]})
    labels = {c.method for c in label_cells(cfg, cfg.cells(), pd.DataFrame({"a": [1.0]}), ["a"])}
    assert labels == {"mean+tree_d3", "median+tree_d3", "mean+logreg", "median+logreg"}


def test_run_name_method_first_split_last():
    class R:
        method, missingness, split_index = "knn+tree_d3", "mcar_0.2", 3
    assert run_name(R()) == "knn+tree_d3 · split 3"
    assert run_name(R(), with_missingness=True) == "knn+tree_d3 · mcar_0.2 · split 3"


def test_console_table_sorted_by_fairness_metric():
    e = lambda gap, acc: {"accuracy_mean": acc, "accuracy_se": 0.01, "fnr_difference_mean": gap,  # noqa: E731
                          "fnr_difference_se": 0.0, "n_splits": 2}
    summary = {"none": {"a_method": e(0.30, 0.7), "b_method": e(0.05, 0.6), "c_method": e(None, 0.5),
                        "d_method": e(0.10, 0.65)}}
    rows = [ln.split()[0] for ln in format_table(summary, "fnr_difference").splitlines()[2:]]
    assert rows == ["b_method", "d_method", "a_method", "c_method"]


def test_summary_frame_headline_first_sorted_by_gap():
    e = lambda gap, acc: {"n_splits": 2, "accuracy_difference_mean": 0.1, "accuracy_difference_se": 0.0,  # noqa: E731
                          "accuracy_mean": acc, "accuracy_se": 0.01, "consistency_status_mean": 0.9,
                          "consistency_status_se": 0.0, "fpr_difference_mean": gap, "fpr_difference_se": 0.01}
    df = summary_frame({"none": {"A": e(0.2, 0.7), "B": e(0.1, 0.6)}}, "fpr_difference")
    assert list(df.columns) == ["missingness", "method", "accuracy_mean", "accuracy_se", "fpr_difference_mean",
                                "fpr_difference_se", "consistency_status_mean", "consistency_status_se",
                                "accuracy_difference_mean", "accuracy_difference_se", "n_splits"]
    assert df["method"].tolist() == ["B", "A"]


@pytest.mark.slow
def test_flow_on_complete_data_uses_learner_names_everywhere(tmp_path):
    """A 2-split run on complete data (missingness none, one imputer): the learner's name in metrics.json,
    summary.txt, the Pareto CSV, cell_metrics.csv and the MLflow run names and tags."""
    from mlflow.tracking import MlflowClient

    from flows.experiment import run_experiment

    cfg = small_config(tmp_path, experiment="labels_complete", **COMPLETE,
                       tracking={"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}", "log_models": False})
    out = run_experiment(cfg, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    res = tmp_path / "results" / "labels_complete"
    summary = json.loads((res / "metrics.json").read_text())["summary"]
    assert set(summary["none"]) == {"tree_d3", "logreg"}
    table = (res / "summary.txt").read_text()
    assert "tree_d3" in table and "mean+" not in table
    assert set(pd.read_csv(res / "pareto_nondominated.csv")["method"]) == {"tree_d3", "logreg"}
    assert set(pd.read_csv(res / "cell_metrics.csv")["method"]) == {"tree_d3", "logreg"}
    client = MlflowClient(out["tracking_uri"])
    exp_id = client.get_run(out["parent_run_id"]).info.experiment_id
    kids = client.search_runs([exp_id], f"tags.mlflow.parentRunId = '{out['parent_run_id']}'")
    assert sorted(r.info.run_name for r in kids) == ["logreg · split 0", "logreg · split 1",
                                                      "tree_d3 · split 0", "tree_d3 · split 1"]
    for r in kids:
        t = r.data.tags
        assert t["method"] == t["learner"] and t["imputer"] == "mean" and t["missingness"] == "none"
        assert t["cell.key"] == f"split{t['split']}/none/mean/{t['learner']}"  # the key keeps its form
    assert any(k.startswith("none/tree_d3/") for k in client.get_run(out["parent_run_id"]).data.metrics)

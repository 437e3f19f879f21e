"""End to end: the Prefect flow on the local ephemeral server, runs in MLflow, read back through
a real ``mlflow server`` started on 127.0.0.1, and determinism of the results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from conftest import ROOT, free_port, mlflow_server, small_config, wait_http

from flows.experiment import run_experiment


@pytest.fixture(scope="module")
def flow_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flow")
    cfg = small_config(tmp)
    out = run_experiment(cfg, results_dir=str(tmp / "results"), processed_dir=str(tmp / "processed"))
    return tmp, cfg, out


def test_flow_completes_and_writes_results(flow_run):
    tmp, cfg, out = flow_run
    assert out["failed"] == []
    m = json.loads((tmp / "results" / "compas_small" / "metrics.json").read_text())
    assert m["n_cells"] == 4 and m["n_failed"] == 0
    methods = m["summary"]["table3"]
    assert set(methods) == {"mean+tree_d3", "knn+tree_d3"}
    for e in methods.values():
        assert 0.55 < e["accuracy_mean"] < 0.75
        assert e["n_splits"] == 2
    assert (tmp / "processed" / "compas_000.parquet").exists()
    # group names from the dataset registry: in metrics.json and the report
    assert m["groups"] == {"0": "Black", "1": "White"}
    html = (tmp / "results" / "compas_small" / "report.html").read_text()
    assert "0 = <b>Black</b>" in html and "<th>White</th>" in html
    assert (tmp / "results" / "compas_small" / "front_table3.png").stat().st_size > 5000  # the cross-method front
    assert html.index("front_table3.png") < html.index("tradeoff_table3.png")


def test_prefect_flow_run_state_completed(flow_run):
    from prefect import get_client

    tmp, cfg, out = flow_run
    import asyncio

    async def states():
        async with get_client() as c:
            runs = await c.read_flow_runs()
            return [r.state.type.value for r in runs if r.name and r.flow_id]
    # the ephemeral API is reachable after the flow; at least one completed flow run exists
    assert "COMPLETED" in asyncio.run(states())


def test_mlflow_runs_have_params_metrics_tags_model(flow_run):
    from mlflow.tracking import MlflowClient

    tmp, cfg, out = flow_run
    client = MlflowClient(out["tracking_uri"])
    parent = client.get_run(out["parent_run_id"])
    assert parent.info.status == "FINISHED"
    exp_id = parent.info.experiment_id
    kids = client.search_runs([exp_id], f"tags.mlflow.parentRunId = '{out['parent_run_id']}'")
    assert len(kids) == 4
    for r in kids:
        assert r.info.status == "FINISHED"
        assert r.data.params["dataset"] == "compas_000"
        assert r.data.params["learner.max_depth"] == "3"
        assert r.data.params["missingness.preset"] == "000_table3_compas"
        # the groups' names in metric keys, their codes in a tag
        assert {"accuracy", "fnr_difference", "fpr_Black", "fpr_White", "equalized_odds_difference"} <= set(r.data.metrics)
        assert not any("_group_" in k for k in r.data.metrics), sorted(r.data.metrics)
        assert json.loads(r.data.tags["groups.metric_names"]) == {"0": "Black", "1": "White"}
        t = r.data.tags
        assert t["dataset"] == "compas_000" and len(t["data.processed_hash"]) == 16
        assert t["data.raw_sha256.compas-scores-two-years.csv"].startswith("c451db85")
        assert "git.commit" in t and t["fairmiss.version"]
        # one method label: tags name it and its parts; the run name starts with it
        assert t["method"] == f"{t['imputer']}+{t['learner']}" and t["learner"] == "tree_d3"
        assert t["missingness"] == "table3" and t["split"] in ("0", "1")
        assert r.info.run_name == f"{t['method']} · split {t['split']}"
        arts = {a.path for a in client.list_artifacts(r.info.run_id)}
        assert {"confusion_matrices.json", "confusion_matrices.csv", "missingness_mask_summary.csv"} <= arts
        assert json.loads(t["groups"]) == {"0": "Black", "1": "White"} and "Black" in t["mlflow.note.content"]
        # labelled per-group confusion matrices: TN/FP/FN/TP per named group, adding up to the test split
        (tmp / r.info.run_id).mkdir(exist_ok=True)
        local = client.download_artifacts(r.info.run_id, "confusion_matrices.json", str(tmp / r.info.run_id))
        cm = json.loads(Path(local).read_text())
        assert [(g["group"], g["name"]) for g in cm["groups"]] == [("0", "Black"), ("1", "White")]
        assert all(g["TN"] + g["FP"] + g["FN"] + g["TP"] == g["n"] > 0 for g in cm["groups"])
        # the dataset as an MLflow input: name, digest = processed-data hash, source = the raw file
        (inp,) = r.inputs.dataset_inputs
        assert inp.dataset.name == "compas_000" and inp.dataset.digest == t["data.processed_hash"]
        assert json.loads(inp.dataset.source)["uri"].endswith("compas-scores-two-years.csv")
        assert {(x.key, x.value) for x in inp.tags} == {("mlflow.data.context", "training")}
        fnr0 = cm["groups"][0]["FN"] / (cm["groups"][0]["FN"] + cm["groups"][0]["TP"])
        assert abs(fnr0 - r.data.metrics["fnr_Black"]) < 1e-9
    # the parent: dataset input, a summary table with the headline metrics first, a cells table
    assert parent.inputs.dataset_inputs[0].dataset.digest == parent.data.tags["data.processed_hash"]
    part = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"summary_table.json", "cells_table.json"} <= part
    local = client.download_artifacts(parent.info.run_id, "summary_table.json", str(tmp))
    table = json.loads(Path(local).read_text())
    assert table["columns"][:6] == ["missingness", "method", "accuracy_mean", "accuracy_se", "fnr_difference_mean",
                                    "fnr_difference_se"]
    assert len(table["data"]) == 2
    local = client.download_artifacts(parent.info.run_id, "cells_table.json", str(tmp))
    cells = json.loads(Path(local).read_text())
    assert cells["columns"][0] == "method" and len(cells["data"]) == 4
    # the model round-trips through MLflow and predicts like the cell did
    import mlflow.sklearn
    import pandas as pd

    models = client.search_logged_models([exp_id])
    assert len(models) == 4
    # each model carries its cell's params and metrics (MLflow's model view), linked once, at the cell's step
    for m in models:
        run = client.get_run(m.source_run_id)
        assert m.params["learner.max_depth"] == "3" and m.params == run.data.params
        assert {x.key: x.value for x in m.metrics} == run.data.metrics
        assert {x.model_id for x in m.metrics} == {m.model_id} and {x.step for x in m.metrics} == {0}
        assert len(m.metrics) == len(run.data.metrics)
    # the flow's process leaves MLflow's global tracking URI alone (its Tracker names its store explicitly)
    old_uri = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(out["tracking_uri"])
    try:
        model = mlflow.sklearn.load_model(models[0].model_uri)
    finally:
        mlflow.set_tracking_uri(old_uri)
    X = pd.read_parquet(tmp / "processed" / "compas_000.parquet").drop(columns=["race", "two_year_recid"])
    assert set(model.predict(X.to_numpy(dtype=float)[:50])) <= {0, 1}


@pytest.mark.server
@pytest.mark.slow
def test_runs_visible_through_mlflow_server_rest_api(flow_run):
    tmp, cfg, out = flow_run
    port = free_port()
    proc = mlflow_server(out["tracking_uri"], port, tmp)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/health", timeout=120, proc=proc)
        exp = requests.get(base + "/api/2.0/mlflow/experiments/get-by-name",
                           params={"experiment_name": "compas_small"}, timeout=10).json()["experiment"]
        runs = requests.post(base + "/api/2.0/mlflow/runs/search",
                             json={"experiment_ids": [exp["experiment_id"]], "max_results": 100}, timeout=10).json()["runs"]
        names = {r["info"]["run_name"] for r in runs}
        # method first, split last (one missingness: not in the name)
        assert "mean+tree_d3 · split 0" in names and "compas_small" in names
        assert all(r["info"]["status"] == "FINISHED" for r in runs)
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.slow
def test_same_config_same_metrics(flow_run, tmp_path):
    """Recomputed from scratch (resume off, fresh store) in worker processes (``task_runner: process``) instead of
    threads: byte-identical metrics."""
    import yaml

    tmp, cfg, out = flow_run
    d = yaml.safe_load(cfg.read_text())
    d["execution"] = {"max_workers": 2, "resume": False, "task_runner": "process"}
    d["tracking"] = {"uri": f"sqlite:///{tmp_path / 'other.db'}"}
    cfg2 = tmp_path / "again.yaml"
    cfg2.write_text(yaml.safe_dump(d))
    out2 = run_experiment(cfg2, results_dir=str(tmp_path / "results"), processed_dir=str(tmp / "processed"))
    assert not out2["failed"]
    a = (tmp / "results" / "compas_small" / "metrics.json").read_bytes()
    b = (tmp_path / "results" / "compas_small" / "metrics.json").read_bytes()
    assert a == b
    assert out2["parent_run_id"] != out["parent_run_id"]


def test_rerun_resumes_from_finished_cells(flow_run, tmp_path):
    """Same config, same store: every cell is reused from its FINISHED run, nothing recomputed."""
    from mlflow.tracking import MlflowClient

    tmp, cfg, out = flow_run
    out2 = run_experiment(cfg, results_dir=str(tmp_path / "results"), processed_dir=str(tmp / "processed"))
    parent = MlflowClient(out2["tracking_uri"]).get_run(out2["parent_run_id"])
    assert parent.data.tags["n_reused"] == "4"
    a = (tmp / "results" / "compas_small" / "metrics.json").read_bytes()
    assert (tmp_path / "results" / "compas_small" / "metrics.json").read_bytes() == a
    # every per-cell metric read back, per-group ones too (MLflow has fpr_Black, the library fpr_group_0)
    cm = (tmp / "results" / "compas_small" / "cell_metrics.csv").read_text()
    assert "fpr_group_0" in cm and (tmp_path / "results" / "compas_small" / "cell_metrics.csv").read_text() == cm


def test_unchanged_rerun_is_up_to_date_and_force_reruns(flow_run):
    """Same config, results dir and store, nothing changed: no flow run, no data gate, the finished
    parent run is reported; ``force`` goes through the flow again and reuses every cell."""
    from mlflow.tracking import MlflowClient

    tmp, cfg, out = flow_run
    kw = {"results_dir": str(tmp / "results"), "processed_dir": str(tmp / "processed")}
    before = (tmp / "results" / "compas_small" / "metrics.json").read_bytes()
    again = run_experiment(cfg, **kw)
    assert again["up_to_date"]
    client = MlflowClient(out["tracking_uri"])
    reported, original = client.get_run(again["parent_run_id"]), client.get_run(out["parent_run_id"])
    # the newest finished run with the same fingerprint (an earlier test may have added one)
    assert reported.info.status == "FINISHED"
    assert reported.data.tags["run.fingerprint"] == original.data.tags["run.fingerprint"]
    assert again["metrics"] == json.loads(before) and again["failed"] == []
    forced = run_experiment(cfg, force=True, **kw)
    assert not forced.get("up_to_date") and forced["parent_run_id"] != out["parent_run_id"]
    assert client.get_run(forced["parent_run_id"]).data.tags["n_reused"] == "4"
    assert (tmp / "results" / "compas_small" / "metrics.json").read_bytes() == before


def test_up_to_date_needs_results_and_a_matching_finished_run(flow_run, tmp_path):
    import yaml

    from fairmiss.config import load_config
    from flows.experiment import up_to_date

    tmp, cfg, out = flow_run
    results = tmp / "results"
    assert up_to_date(load_config(cfg), results) is not None
    assert up_to_date(load_config(cfg), tmp_path / "elsewhere") is None  # no results there
    d = yaml.safe_load(cfg.read_text())
    d["seed"] = int(d.get("seed", 0)) + 1  # another config: other hash, no finished run with its fingerprint
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(d))
    assert up_to_date(load_config(other), results) is None
    d = yaml.safe_load(cfg.read_text())
    d["tracking"] = {"uri": f"sqlite:///{tmp_path / 'empty.db'}"}  # same config hash, a store without the run
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(yaml.safe_dump(d))
    assert load_config(elsewhere).config_hash == load_config(cfg).config_hash
    assert up_to_date(load_config(elsewhere), results) is None


def test_first_finished_run_is_found_up_to_date(tmp_path):
    """Regression: the newest FINISHED run with the fingerprint used to be a cell (child) run, which made
    the run right after a first one go through the flow again."""
    from fairmiss.config import load_config
    from flows.experiment import up_to_date

    cfg = small_config(tmp_path, split={"test_size": 0.3, "n_splits": 1}, imputers=[{"kind": "mean"}],
                       tracking={"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}", "log_models": False})
    out = run_experiment(cfg, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    found = up_to_date(load_config(cfg), tmp_path / "results")
    assert found is not None and found["parent_run_id"] == out["parent_run_id"]


@pytest.mark.slow
def test_outputs_staged_and_a_failing_report_loses_no_cell(tmp_path, monkeypatch):
    """The results directory's files are written into a staging directory after the last child
    run is logged, and published only once all of them are there. An error while writing
    them (here the HTML report, after the other files were staged) publishes nothing and leaves no staging
    directory behind, while every computed cell is still FINISHED in the store: the re-run reuses them all,
    logs none twice, and publishes the same files a run without the fault writes. A staging directory left
    by a process that no longer runs (SIGKILL while staging) is removed."""
    import sqlite3

    import fairmiss.reporting.html as html

    db = tmp_path / "mlruns" / "mlflow.db"
    cfg = small_config(tmp_path, split={"test_size": 0.3, "n_splits": 2}, imputers=[{"kind": "mean"}],
                       tracking={"uri": f"sqlite:///{db}", "log_models": False})
    results = tmp_path / "results"
    results.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = results / f".compas_small.staging-{gone.pid}-x1"
    stale.mkdir()
    (stale / "metrics.json").write_text("{}")
    alive = results / f".compas_small.staging-{os.getpid()}-x2"  # a live process's (this test's): kept
    alive.mkdir()

    def broken_report(*args, **kwargs):
        raise RuntimeError("report failed (injected)")

    monkeypatch.setattr(html, "html_report", broken_report)
    with pytest.raises(Exception, match="report failed"):
        run_experiment(cfg, results_dir=str(results), processed_dir=str(tmp_path / "processed"))
    assert not (results / "compas_small").exists() or not any((results / "compas_small").iterdir())
    assert sorted(p.name for p in results.iterdir()) == [alive.name]  # own staging removed, stale one swept

    def cells():
        with sqlite3.connect(db) as c:
            return c.execute("select r.status, count(*) from runs r join tags t on t.run_uuid = r.run_uuid "
                             "and t.key = 'cell.key' group by r.status").fetchall()

    assert cells() == [("FINISHED", 2)]
    monkeypatch.undo()
    out = run_experiment(cfg, results_dir=str(results), processed_dir=str(tmp_path / "processed"))
    assert out["failed"] == []
    assert cells() == [("FINISHED", 2)]  # both reused, none logged twice
    names = sorted(p.name for p in (results / "compas_small").iterdir())
    assert {"metrics.json", "headline.json", "report.html", "cells.csv", "cell_metrics.csv"} <= set(names)
    assert not [n for n in names if n.startswith(".")]
    assert sorted(p.name for p in results.iterdir()) == sorted([alive.name, "compas_small"])
    with sqlite3.connect(db) as c:
        reused = c.execute("select value from tags where key = 'n_reused'").fetchall()
    assert ("2",) in reused


def test_the_flow_refuses_a_config_that_changed_after_the_command_checked_it(tmp_path):
    """``fairmiss run`` parses and checks the config once, then hands the flow the config hash it found: a file
    edited in between (while Prefect starts) is refused before anything is computed or written, instead of
    running a config nothing checked."""
    import yaml

    from fairmiss.config import ConfigError, load_config

    path = small_config(tmp_path)
    checked = load_config(path)
    data = yaml.safe_load(path.read_text())
    data["seed"] = 8
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"changed after the command checked it.*nothing was run"):
        run_experiment(path, checked=checked, results_dir=str(tmp_path / "results"),
                       processed_dir=str(tmp_path / "processed"))
    assert not (tmp_path / "results").exists() and not (tmp_path / "processed").exists()

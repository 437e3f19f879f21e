"""flows.fastcheck.up_to_date_fast: the same answer as flows.experiment.up_to_date_mlflow (the MLflow-client check)
on a real finished run and on every way of not being up to date, without importing MLflow or Prefect."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, small_config

from fairmiss.config import load_config
from flows.experiment import run_experiment, run_fingerprint, up_to_date, up_to_date_mlflow
from flows.fastcheck import UNKNOWN, run_fingerprint as fast_fingerprint, up_to_date_fast

pytestmark = pytest.mark.slow  # one real flow run (~40 s on 2 shared cores) and copies of its store


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fastcheck")
    cfg = small_config(tmp, split={"test_size": 0.3, "n_splits": 1}, imputers=[{"kind": "mean"}])
    out = run_experiment(cfg, results_dir=str(tmp / "results"), processed_dir=str(tmp / "processed"))
    assert out["failed"] == []
    return tmp, cfg, out


def _copy(finished, dest, **over):
    """The finished run's results and store copied under ``dest`` (a consistent copy of the SQLite file via
    the backup API), with a config pointing at the copy; ``over`` changes config keys."""
    tmp, cfg, _ = finished
    shutil.copytree(tmp / "results", dest / "results")
    (dest / "mlruns").mkdir(parents=True)
    src, dst = sqlite3.connect(tmp / "mlruns" / "mlflow.db"), sqlite3.connect(dest / "mlruns" / "mlflow.db")
    src.backup(dst)
    src.close(), dst.close()
    d = yaml.safe_load(cfg.read_text())
    d["tracking"] = {**d.get("tracking", {}), "uri": f"sqlite:///{dest / 'mlruns' / 'mlflow.db'}"}
    for k, v in over.items():
        d[k] = v
    p = dest / "cfg.yaml"
    p.write_text(yaml.safe_dump(d, sort_keys=False))
    return load_config(p), dest / "results"


def _both(cfg, results):
    """The SQL check, MLflow's client and :func:`up_to_date` (which uses the SQL check on a SQLite store)
    give one answer."""
    fast, slow = up_to_date_fast(cfg, results), up_to_date_mlflow(cfg, results)
    assert fast == slow
    assert up_to_date(cfg, results) == fast
    return fast


def test_fingerprint_is_the_flows(finished):
    _, cfg, _ = finished
    c = load_config(cfg)
    assert fast_fingerprint(c) == run_fingerprint(c)


def test_equal_to_the_mlflow_check_on_a_finished_run(finished):
    tmp, cfg, out = finished
    found = _both(load_config(cfg), tmp / "results")
    assert found is not None and found["up_to_date"] and found["parent_run_id"] == out["parent_run_id"]
    assert found["table"] == out["table"]  # summary.txt is the table the run printed


def test_not_up_to_date_without_results_or_with_another_config(finished, tmp_path):
    tmp, cfg, _ = finished
    assert _both(load_config(cfg), tmp_path / "nowhere") is None
    c, results = _copy(finished, tmp_path / "seed", seed=8)  # another config hash: metrics.json is not its
    assert _both(c, results) is None
    c, results = _copy(finished, tmp_path / "report")
    (results / "compas_small" / "report.html").unlink()
    assert _both(c, results) is None


def test_failed_cell_in_results_or_in_the_run(finished, tmp_path):
    from mlflow.tracking import MlflowClient

    c, results = _copy(finished, tmp_path / "a")
    m = results / "compas_small" / "metrics.json"
    m.write_text(json.dumps({**json.loads(m.read_text()), "n_failed": 1}))
    assert _both(c, results) is None
    c, results = _copy(finished, tmp_path / "b")
    assert _both(c, results) is not None
    MlflowClient(c.tracking.uri).set_tag(finished[2]["parent_run_id"], "n_failed", "1")
    assert _both(c, results) is None
    c, results = _copy(finished, tmp_path / "c")
    MlflowClient(c.tracking.uri).set_tag(finished[2]["parent_run_id"], "data.processed_hash", "other")
    assert _both(c, results) is None


def test_other_experiment_name_is_not_up_to_date(finished, tmp_path):
    c, results = _copy(finished, tmp_path / "a", tracking={"experiment_name": "someone_else"})
    assert c.config_hash == load_config(finished[1]).config_hash
    assert _both(c, results) is None


@pytest.mark.parametrize("status", ["RUNNING", "FAILED", "KILLED", "deleted"])
def test_unfinished_or_deleted_parent_is_not_up_to_date(finished, tmp_path, status):
    from mlflow.tracking import MlflowClient

    c, results = _copy(finished, tmp_path / "a")
    client, run_id = MlflowClient(c.tracking.uri), finished[2]["parent_run_id"]
    if status == "deleted":
        client.delete_run(run_id)
    else:
        client.update_run(run_id, status=status)
    assert _both(c, results) is None


def test_newest_finished_parent_is_the_one_compared(finished, tmp_path):
    """A newer FINISHED parent with the same fingerprint but a failed cell hides the older good one (as in
    the MLflow check: newest start time first); an older one with a failed cell does not."""
    from mlflow.tracking import MlflowClient

    c, results = _copy(finished, tmp_path / "a")
    client = MlflowClient(c.tracking.uri)
    old = client.get_run(finished[2]["parent_run_id"])
    exp = old.info.experiment_id
    tags = {k: v for k, v in old.data.tags.items() if not k.startswith("mlflow.")}
    earlier = client.create_run(exp, start_time=old.info.start_time - 1000, tags={**tags, "n_failed": "2"})
    client.set_terminated(earlier.info.run_id, "FINISHED")
    found = _both(c, results)
    assert found is not None and found["parent_run_id"] == old.info.run_id
    newer = client.create_run(exp, start_time=old.info.start_time + 1000, tags={**tags, "n_failed": "2"})
    client.set_terminated(newer.info.run_id, "FINISHED")
    assert _both(c, results) is None


def test_a_tracking_server_is_unknown(finished, tmp_path):
    c, results = _copy(finished, tmp_path / "a", tracking={"uri": "http://127.0.0.1:9"})
    assert up_to_date_fast(c, results) == UNKNOWN  # up_to_date then asks MLflow's client


def test_imports_neither_mlflow_nor_prefect(finished):
    tmp, cfg, out = finished
    code = ("import sys, json\nfrom fairmiss.config import load_config\nfrom flows.fastcheck import up_to_date_fast\n"
            f"r = up_to_date_fast(load_config({str(cfg)!r}), {str(tmp / 'results')!r})\n"
            "print(json.dumps({'run': r['parent_run_id'], 'loaded': sorted(m for m in ('mlflow', 'prefect') "
            "if m in sys.modules)}))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == {"run": out["parent_run_id"], "loaded": []}


def test_run_any_answers_up_to_date_without_prefect(finished):
    """The CLI path: an up-to-date run prints the usual message and imports neither Prefect nor MLflow."""
    tmp, cfg, out = finished
    code = ("import sys\nfrom flows.cli import main\n"
            f"rc = main(['run', {str(cfg)!r}, '--results-dir', {str(tmp / 'results')!r}, '--processed-dir', "
            f"{str(tmp / 'processed')!r}])\n"
            "print('LOADED', sorted(m for m in ('mlflow', 'prefect') if m in sys.modules), rc)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "up to date: same config, raw data and code" in r.stdout and "--force" in r.stdout
    assert out["parent_run_id"] in r.stdout
    assert "LOADED [] 0" in r.stdout

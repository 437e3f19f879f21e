"""Bad input found by probing the commands as a user would: each is exit 2 with one ``fairmiss: error:`` line
naming the file and key, before anything runs (see docs/reliability.md)."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT, run_cli

BASE = {"experiment": "probe", "dataset": {"name": "compas_000"}, "split": {"test_size": 0.3, "n_splits": 1},
        "missingness": [{"kind": "mcar", "name": "m1", "rates": {"priors_count": 0.2}}],
        "imputers": [{"kind": "mean"}], "learners": [{"kind": "decision_tree", "name": "t", "max_depth": 2}]}


def _one_error(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("fairmiss: error: "), r.stderr[-3000:]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _cfg(tmp_path, **over):
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({**BASE, **over}, sort_keys=False))
    return p


def test_names_with_plus_that_make_two_methods_one_label_are_refused(tmp_path):
    """mean 'a' + tree 'b+c' and median 'a+b' + LR 'c' were both 'a+b+c': their cells averaged as one method."""
    p = _cfg(tmp_path, imputers=[{"kind": "mean", "name": "a"}, {"kind": "median", "name": "a+b"}],
             learners=[{"kind": "decision_tree", "name": "b+c"}, {"kind": "logistic_regression", "name": "c"}])
    _one_error(run_cli("validate", str(p)), "'a+b+c'", "imputer 'a'", "learner 'b+c'")
    ok = _cfg(tmp_path, imputers=[{"kind": "mean", "name": "a"}, {"kind": "median", "name": "a+b"}],
              learners=[{"kind": "decision_tree", "name": "t+1"}])
    assert run_cli("validate", str(ok)).returncode == 0


@pytest.mark.parametrize("value,ok", [("garbage:::", False), ("tcp://h:99999", False), ("tcp://127.0.0.1:8786", True),
                                      ("tcp://[::1]:8786", True), ("sched.example.org", True)])
def test_dask_address_is_checked_at_load(tmp_path, value, ok):
    """'garbage:::' was accepted by validate and failed the run after ~80 s with a Dask traceback."""
    r = run_cli("validate", str(_cfg(tmp_path, execution={"task_runner": "dask", "dask_address": value})))
    if ok:
        assert r.returncode == 0, r.stderr
    else:
        _one_error(r, "execution.dask_address", "not a Dask scheduler address")


@pytest.mark.parametrize("fill", [".nan", ".inf", "-.inf"])
def test_constant_imputer_fill_value_must_be_finite(tmp_path, fill):
    """NaN left every masked cell missing: each cell failed at run time, exit 1."""
    p = _cfg(tmp_path)
    p.write_text(p.read_text().replace("- kind: mean", f"- kind: constant\n  fill_value: {fill}"))
    assert "fill_value" in p.read_text()
    _one_error(run_cli("validate", str(p)), "imputers.0", "fill_value", "finite")


@pytest.mark.parametrize("entry,key", [({"cron": ""}, "deployments.0.cron"),
                                       ({"interval_seconds": 10 ** 15}, "deployments.0.interval_seconds")])
def test_schedules_with_an_empty_cron_or_a_huge_interval_are_refused(tmp_path, entry, key):
    """'' served a deployment that never fires; 10**15 s was an OverflowError traceback in Prefect."""
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"deployments": [{"name": "d1", "config": "params/compas_default.yaml", **entry}]}))
    _one_error(run_cli("serve", str(f), env={"PREFECT_API_URL": "http://127.0.0.1:9/api"}, timeout=120), key)


def test_serve_names_a_prefect_api_url_that_does_not_answer(tmp_path):
    """A 99-line httpx.ConnectError traceback before."""
    r = run_cli("serve", str(ROOT / "params" / "schedules.yaml"), env={"PREFECT_API_URL": "http://127.0.0.1:9/api"},
                timeout=120)
    _one_error(r, "PREFECT_API_URL http://127.0.0.1:9/api", "no Prefect server answers")


def test_own_file_without_feature_columns_is_refused_by_ingest(tmp_path):
    """Only the label and the group: ingest wrote a config and the run ended in a numpy TypeError traceback."""
    f = tmp_path / "tiny.csv"
    f.write_text("g,y\n" + "a,0\nb,0\na,1\nb,1\n" * 20)
    _one_error(run_cli("ingest", str(f), "--label", "y", "--group", "g", cwd=tmp_path), "no feature columns")
    assert not list(tmp_path.glob("*.yaml"))


@pytest.mark.parametrize("run_id", ["../../x", "'; drop table runs;--"])
def test_compare_with_a_malformed_run_id_is_one_line(tmp_path, run_id):
    """MLflow's 'Invalid value … for parameter run_id' was a traceback (a well-formed unknown id already said
    'no run')."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(uri).create_experiment("exp")
    _one_error(run_cli("compare", "exp", "--run", run_id, "--tracking-uri", uri), "is not a run id")


def test_report_of_a_config_whose_results_are_another_configs_is_refused(tmp_path):
    """The report of a config that never ran showed the results of another config of the same experiment."""
    out = tmp_path / "results" / "probe"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text(json.dumps({"config_hash": "0" * 16, "summary": {}}))
    p = _cfg(tmp_path)
    _one_error(run_cli("report", str(p), "--no-mlflow", "--results-dir", str(tmp_path / "results")),
               "holds the results of another config", "run this config first")
    assert not (out / "report.html").exists()

"""CLI and bad input: one clear message naming file and field, exit 2, nothing written downstream,
no MLflow run left RUNNING."""

from __future__ import annotations

import sqlite3

import pytest
import yaml
from conftest import ROOT, run_cli, small_config


def _no_outputs(tmp_path):
    return not (tmp_path / "results").exists() and not (tmp_path / "processed").exists()


def test_help():
    r = run_cli("--help")
    assert r.returncode == 0 and "ingest" in r.stdout and "datasets" in r.stdout and "run" in r.stdout


def test_unknown_key_in_config(tmp_path):
    p = small_config(tmp_path)
    d = yaml.safe_load(p.read_text())
    d["learners"][0]["depth"] = 3
    p.write_text(yaml.safe_dump(d))
    r = run_cli("run", str(p), "--results-dir", str(tmp_path / "results"), "--processed-dir", str(tmp_path / "processed"))
    assert r.returncode == 2
    assert str(p) in r.stderr and "unknown key 'learners.0.decision_tree.depth'" in r.stderr
    assert "Traceback" not in r.stderr
    assert _no_outputs(tmp_path) and not (tmp_path / "mlruns").exists()


def test_out_of_range_rate(tmp_path):
    p = small_config(tmp_path, missingness=[{"kind": "mcar_group", "name": "m", "rates": {"sex": {0: 1.2, 1: 0.1}}}])
    r = run_cli("validate", str(p))
    assert r.returncode == 2 and "missingness.0.mcar_group.rates.sex.0" in r.stderr


def test_checksum_mismatch_stops_before_anything_is_written(tmp_path, mirror):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "compas-scores-two-years.csv").write_bytes((mirror / "compas-scores-two-years.csv").read_bytes()[:5000])
    p = small_config(tmp_path)
    r = run_cli("run", str(p), "--results-dir", str(tmp_path / "results"), "--processed-dir",
                str(tmp_path / "processed"), env={"FAIRMISS_RAW_DIR": str(raw)})
    assert r.returncode == 2, r.stderr[-3000:]
    assert "compas-scores-two-years.csv: checksum mismatch" in r.stderr
    assert _no_outputs(tmp_path)
    db = tmp_path / "mlruns" / "mlflow.db"
    if db.exists():  # no run may be left RUNNING
        with sqlite3.connect(db) as c:
            assert c.execute("select count(*) from runs where status='RUNNING'").fetchone()[0] == 0


def test_missing_column_raw_file_is_a_clear_error(tmp_path, mirror):
    import pandas as pd

    raw = tmp_path / "raw"
    raw.mkdir()
    df = pd.read_csv(mirror / "compas-scores-two-years.csv").drop(columns=["two_year_recid"])
    df.to_csv(raw / "compas-scores-two-years.csv", index=False)
    # a user-supplied file that does not match the declared checksum is refused before parsing
    r = run_cli("ingest", "compas_000", "--raw-dir", str(raw))
    assert r.returncode == 2 and "checksum mismatch" in r.stderr


def test_ingest_and_datasets(tmp_path):
    r = run_cli("ingest", "compas_000", "--raw-dir", str(tmp_path / "raw"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "raw" / "compas-scores-two-years.csv").exists()
    r = run_cli("datasets", "--raw-dir", str(tmp_path / "raw"))
    assert r.returncode == 0 and "compas_000" in r.stdout and "present" in r.stdout
    r = run_cli("ingest", "no_such_dataset")
    assert r.returncode == 2 and "unknown dataset 'no_such_dataset'" in r.stderr


@pytest.mark.slow
def test_cli_run_prints_table(tmp_path):
    p = small_config(tmp_path, split={"n_splits": 1}, imputers=[{"kind": "mean"}])
    r = run_cli("run", str(p), "--results-dir", str(tmp_path / "results"), "--processed-dir", str(tmp_path / "processed"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "mean+tree_d3" in r.stdout and "fnr_difference" in r.stdout
    assert (tmp_path / "results" / "compas_small" / "metrics.json").exists()
    with sqlite3.connect(tmp_path / "mlruns" / "mlflow.db") as c:
        status = [s for (s,) in c.execute("select status from runs")]
    assert status and set(status) == {"FINISHED"}
    # a quiet console: progress lines with the method label, no task-run chatter, no server banner, no library
    # warnings (they stay in Prefect's log; `-v` shows them); the last line says how to open the store
    assert "[1/1] mean+tree_d3 · split 0: accuracy" in r.stderr, r.stderr[-3000:]
    # the seconds the report takes are announced, not silent
    assert "1 cell done; writing the results, figures and report to" in r.stderr, r.stderr[-3000:]
    for noise in ("Finished in state Completed", "Starting temporary server", "Warning:", "prefect.task_runs"):
        assert noise not in r.stderr, (noise, r.stderr[-3000:])
    assert "open with `fairmiss ui`" in r.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_cli_verbose_shows_task_logs(tmp_path):
    p = small_config(tmp_path, split={"n_splits": 1}, imputers=[{"kind": "mean"}])
    r = run_cli("-v", "run", str(p), "--results-dir", str(tmp_path / "results"), "--processed-dir",
                str(tmp_path / "processed"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Finished in state Completed" in r.stderr

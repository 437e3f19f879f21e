"""A new SQLite tracking store starts as a copy of an empty migrated one (fairmiss.tracking.store._new_store_from_template):
the copy must be the store MLflow itself would have created — same schema, same alembic revision, the same
Default experiment with the store's own artifact location — and a store that exists is never touched."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest
from conftest import ROOT


def _lines(sql: str | None) -> list[str]:
    """A CREATE statement as the sorted set of its lines (trailing commas dropped): MLflow's own migrations
    write a table's constraints in a different order from one process to the next (alembic's batch mode
    rebuilds the table from a set; seen: two stores created by MLflow alone differ in that order)."""
    return sorted(line.strip().rstrip(",").strip() for line in (sql or "").splitlines())


def _schema(db) -> list:
    con = sqlite3.connect(db)
    try:
        tables = sorted(((t, n, tn, _lines(sql)) for t, n, tn, sql in con.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")),
            key=lambda r: (r[0], r[1]))
        rows = {t: con.execute(f"SELECT * FROM {t}").fetchall()
                for t in ("alembic_version", "workspaces")}
        exps = con.execute("SELECT experiment_id, name, artifact_location, lifecycle_stage, workspace "
                           "FROM experiments ORDER BY experiment_id").fetchall()
    finally:
        con.close()
    return [tables, rows, exps]


def _mlflow_creates(db, cwd) -> None:
    """The reference: MLflow's own client creates the store (all migrations), in a clean process."""
    code = f"from mlflow.tracking import MlflowClient; MlflowClient('sqlite:///{db}').search_experiments()"
    r = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.slow
def test_new_store_equals_the_one_mlflow_creates(tmp_path, monkeypatch):
    from fairmiss.tracking import Tracker

    monkeypatch.setenv("FAIRMISS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # MLflow's Default experiment lives under ./mlruns of the working directory
    ref = tmp_path / "ref" / "mlflow.db"
    ref.parent.mkdir()
    _mlflow_creates(ref, tmp_path)
    a, b = tmp_path / "a" / "mlflow.db", tmp_path / "b" / "mlflow.db"
    Tracker(f"sqlite:///{a}", "exp")  # builds the template, then copies it
    assert len(list((tmp_path / "cache" / "mlflow-store").glob("*.db"))) == 1
    Tracker(f"sqlite:///{b}", "exp")  # copies the template
    assert len(ref_schema := _schema(ref)) == 3 and len(ref_schema[0]) > 100
    for db in (a, b):
        got = _schema(db)
        assert got[0] == ref_schema[0] and got[1] == ref_schema[1]
        assert got[2][0] == ref_schema[2][0]  # Default: same id, name, artifact location, stage, workspace
        assert [e[1] for e in got[2]] == ["Default", "exp"]
    assert oct(a.stat().st_mode & 0o777) == "0o644"


def test_existing_store_is_not_replaced(tmp_path, monkeypatch):
    from fairmiss.tracking import Tracker

    monkeypatch.setenv("FAIRMISS_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "s" / "mlflow.db"
    t = Tracker(f"sqlite:///{db}", "exp")
    run = t.start_run("kept")
    t.end_run(run)
    again = Tracker(f"sqlite:///{db}", "exp")
    assert again.client.get_run(run).info.run_name == "kept"


def test_unusable_cache_leaves_the_store_to_mlflow(tmp_path, monkeypatch):
    """The cache directory is a file: no template, and MLflow creates the store as without one."""
    from fairmiss.tracking import Tracker

    (tmp_path / "cache").write_text("not a directory")
    monkeypatch.setenv("FAIRMISS_CACHE_DIR", str(tmp_path / "cache"))
    t = Tracker(f"sqlite:///{tmp_path / 's' / 'mlflow.db'}", "exp")
    run = t.start_run("r")
    t.end_run(run)
    assert t.client.get_run(run).info.status == "FINISHED"


@pytest.mark.slow
@pytest.mark.parametrize("n", [2])
def test_concurrent_first_stores_share_one_template(tmp_path, n):
    """Processes creating new stores at once (and building the template at once) all succeed."""
    code = ("import sys; from fairmiss.tracking import Tracker; t = Tracker(sys.argv[1], 'exp'); "
            "r = t.start_run('r'); t.end_run(r); print('OK')")
    env_cache = {"FAIRMISS_CACHE_DIR": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", code, f"sqlite:///{tmp_path / f's{i % 2}' / 'mlflow.db'}"],
                              cwd=ROOT, env={**os.environ, **env_cache}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2 * n)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 and "OK" in o for p, (o, _) in zip(procs, outs)), [e[-1500:] for _, e in outs]
    assert len(list((tmp_path / "cache" / "mlflow-store").glob("*.db"))) == 1
    for i in range(2):
        con = sqlite3.connect(tmp_path / f"s{i}" / "mlflow.db")
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == n
        assert con.execute("SELECT count(*) FROM experiments WHERE name = 'exp'").fetchone()[0] == 1
        con.close()

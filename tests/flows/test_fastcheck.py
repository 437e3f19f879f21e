"""flows.fastcheck.up_to_date_fast: the same answer as flows.experiment.up_to_date_mlflow (the MLflow-client check)
on a real finished run and on every way of not being up to date, without importing MLflow or Prefect."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

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


# --- receipts: the up-to-date answer before the config is parsed (flows.fastcheck.up_to_date_from_receipt) ---


def _receipt_case(finished, dest, monkeypatch, **over):
    """A copy of the finished run, its config file and a receipt directory of its own; the receipt is written
    by the full path (:func:`flows.run.prepare_run`), whose up-to-date answer is returned."""
    from flows.run import prepare_run

    monkeypatch.setenv("FAIRMISS_CACHE_DIR", str(dest / "cache"))
    c, results = _copy(finished, dest, **over)
    path = dest / "cfg.yaml"
    _, done = prepare_run(path, results_dir=str(results), processed_dir=str(dest / "processed"))
    return c, path, results, done


def test_receipt_gives_the_full_paths_answer(finished, tmp_path, monkeypatch):
    from flows.fastcheck import receipts_dir, up_to_date_from_receipt

    c, path, results, done = _receipt_case(finished, tmp_path / "a", monkeypatch)
    assert done is not None and done["parent_run_id"] == finished[2]["parent_run_id"]
    assert len(list(receipts_dir().glob("*.json"))) == 1
    assert up_to_date_from_receipt(path, False, results) == done == up_to_date_mlflow(c, results)
    # the results or the store change after the receipt was written: read afresh, the full path decides
    (results / "compas_small" / "report.html").unlink()
    assert up_to_date_from_receipt(path, False, results) is None
    assert up_to_date_fast(c, results) is None


def test_receipt_key_changes_with_every_input(finished, tmp_path, monkeypatch):
    """Bytes, path, --quick, code version and plugins each change the key: an edited config (even a comment) or
    changed code is parsed again, never answered from an old receipt."""
    import fairmiss.codeversion as cv
    import flows.fastcheck as fc

    _, path, results, done = _receipt_case(finished, tmp_path / "a", monkeypatch)
    key = fc.receipt_key(path, False)
    assert fc.receipt_key(path, False) == key and fc.receipt_key(path, True) != key
    other = tmp_path / "a" / "same_bytes.yaml"
    other.write_bytes(path.read_bytes())
    assert fc.receipt_key(other, False) != key
    assert fc.up_to_date_from_receipt(other, False, results) is None  # no receipt for that file yet
    path.write_text(path.read_text() + "# a comment\n")
    assert fc.receipt_key(path, False) != key and fc.up_to_date_from_receipt(path, False, results) is None
    path.write_text(path.read_text()[: -len("# a comment\n")])
    assert fc.up_to_date_from_receipt(path, False, results) == done
    monkeypatch.setattr(cv, "code_version", lambda: "src-0000000000000000")
    assert fc.receipt_key(path, False) != key and fc.up_to_date_from_receipt(path, False, results) is None
    monkeypatch.undo()
    monkeypatch.setenv("FAIRMISS_CACHE_DIR", str(tmp_path / "a" / "cache"))
    monkeypatch.setattr(fc, "_plugins", lambda: [["fairmiss.learners", "mine", "my_pkg.learners", "my-pkg", "1"]])
    assert fc.receipt_key(path, False) != key and fc.up_to_date_from_receipt(path, False, results) is None


def test_receipt_needs_verified_raw_files(finished, tmp_path, monkeypatch):
    """A corrupt or missing raw file: no answer from the receipt, so the full path's preflight names it."""
    from flows.fastcheck import up_to_date_from_receipt

    _, path, results, done = _receipt_case(finished, tmp_path / "a", monkeypatch)
    raw = tmp_path / "raw"
    raw.mkdir()
    mirror = Path(os.environ["FAIRMISS_DATA_MIRROR"])
    monkeypatch.setenv("FAIRMISS_DATA_MIRROR", str(tmp_path / "empty_mirror"))
    assert up_to_date_from_receipt(path, False, results, raw_dir=raw) is None  # nowhere
    for f in mirror.glob("compas*"):
        (raw / f.name).write_bytes(f.read_bytes())
    monkeypatch.delenv("FAIRMISS_DATA_MIRROR")
    got = up_to_date_from_receipt(path, False, results, raw_dir=raw)
    assert got == done
    victim = next(raw.glob("compas*"))
    victim.write_bytes(victim.read_bytes()[:-1])
    assert up_to_date_from_receipt(path, False, results, raw_dir=raw) is None


def test_no_receipt_without_resume_and_a_broken_receipt_is_ignored(finished, tmp_path, monkeypatch):
    from flows.fastcheck import receipt_key, receipts_dir, up_to_date_from_receipt

    _, path, results, _ = _receipt_case(finished, tmp_path / "a", monkeypatch,
                                        execution={"max_workers": 2, "resume": False})
    assert not receipts_dir().exists() or not list(receipts_dir().glob("*.json"))
    _, path, results, done = _receipt_case(finished, tmp_path / "b", monkeypatch)
    (receipts_dir() / f"{receipt_key(path, False)}.json").write_text("{not json")
    assert up_to_date_from_receipt(path, False, results) is None
    (receipts_dir() / f"{receipt_key(path, False)}.json").write_text(json.dumps({"experiment": "../x"}))
    assert up_to_date_from_receipt(path, False, results) is None


def test_cli_answers_from_the_receipt_without_the_heavy_stack(finished, tmp_path):
    """The second `fairmiss run` of an up-to-date config prints what the first printed and imports neither
    scikit-learn, pandas, pydantic, MLflow nor Prefect."""
    tmp, cfg, out = finished
    code = ("import sys\nfrom flows.cli import main\n"
            f"rc = main(['run', {str(cfg)!r}, '--results-dir', {str(tmp / 'results')!r}, '--processed-dir', "
            f"{str(tmp / 'processed')!r}])\n"
            "print('LOADED', sorted(m for m in ('sklearn', 'pandas', 'pydantic', 'mlflow', 'prefect', 'scipy') "
            "if m in sys.modules), rc)")
    env = {**os.environ, "FAIRMISS_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env=env)
    second = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr[-3000:] + second.stderr[-3000:]
    assert "up to date: same config" in first.stdout and out["parent_run_id"] in first.stdout
    assert "LOADED [] 0" in second.stdout and "'sklearn'" in first.stdout.splitlines()[-1]
    assert first.stdout.splitlines()[:-1] == second.stdout.splitlines()[:-1]


def test_receipt_leaves_bad_output_dirs_to_the_full_path(finished, tmp_path, monkeypatch):
    """An up-to-date config with --processed-dir (or --results-dir) that is a file: no answer from the receipt,
    so the command fails with the full path's one-line error, as without receipts."""
    from flows.fastcheck import up_to_date_from_receipt
    from flows.run import prepare_run

    _, path, results, done = _receipt_case(finished, tmp_path / "a", monkeypatch)
    assert up_to_date_from_receipt(path, False, results, processed_dir=tmp_path / "a" / "processed") == done
    bad = tmp_path / "a" / "a_file"
    bad.write_text("x")
    assert up_to_date_from_receipt(path, False, results, processed_dir=bad) is None
    assert up_to_date_from_receipt(path, False, bad / "sub", processed_dir=tmp_path / "p") is None
    with pytest.raises(Exception, match="--processed-dir is not a directory"):
        prepare_run(path, results_dir=str(results), processed_dir=str(bad))

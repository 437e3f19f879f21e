"""flows.fastcheck.up_to_date_fast: up to date as for make or dvc repro — the results files and the stamp a finished
run writes beside them (config hash, fingerprint, processed-data hash, tracking store and experiment), never the
tracking store's tables — on a real finished run and on every way of not being up to date, without importing
MLflow or Prefect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, small_config

from fairmiss.config import load_config
from flows.experiment import run_experiment, run_fingerprint, up_to_date
from flows.fastcheck import STAMP, run_fingerprint as fast_fingerprint, up_to_date_fast

pytestmark = pytest.mark.slow  # one real flow run (~40 s on 2 shared cores)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fastcheck")
    cfg = small_config(tmp, split={"test_size": 0.3, "n_splits": 1}, imputers=[{"kind": "mean"}])
    out = run_experiment(cfg, results_dir=str(tmp / "results"), processed_dir=str(tmp / "processed"))
    assert out["failed"] == []
    return tmp, cfg, out


def _copy(finished, dest, **over):
    """The finished run's results copied under ``dest`` with its config (``over`` changes config keys); the
    store is not copied: the check does not read it."""
    tmp, cfg, _ = finished
    shutil.copytree(tmp / "results", dest / "results")
    d = yaml.safe_load(cfg.read_text())
    for k, v in over.items():
        d[k] = v
    p = dest / "cfg.yaml"
    p.write_text(yaml.safe_dump(d, sort_keys=False))
    return load_config(p), dest / "results"


def _check(cfg, results):
    """:func:`up_to_date` (the flow's) and :func:`up_to_date_fast` (the command's) give one answer."""
    fast = up_to_date_fast(cfg, results)
    assert up_to_date(cfg, results) == fast
    return fast


def _stamp(results) -> Path:
    return results / "compas_small" / STAMP


def test_fingerprint_is_the_flows(finished):
    _, cfg, _ = finished
    c = load_config(cfg)
    assert fast_fingerprint(c) == run_fingerprint(c)


def test_a_finished_run_is_up_to_date_from_its_stamp(finished):
    tmp, cfg, out = finished
    found = _check(load_config(cfg), tmp / "results")
    assert found is not None and found["up_to_date"] and found["parent_run_id"] == out["parent_run_id"]
    assert found["table"] == out["table"]  # summary.txt is the table the run printed
    stamp = json.loads(_stamp(tmp / "results").read_text())
    assert stamp["fingerprint"] == run_fingerprint(load_config(cfg)) and stamp["parent_run_id"] == out["parent_run_id"]


def test_the_store_is_not_read(finished, tmp_path):
    """No store at all where the config points: still up to date (the answer comes from the files); --force is
    how a user re-runs."""
    tmp, cfg, _ = finished
    c, results = _copy(finished, tmp_path / "a")
    db = Path(c.tracking.uri[len("sqlite:///"):])
    assert db.is_file()
    moved = tmp_path / "moved.db"
    db.rename(moved)  # the store the run logged to is gone from where the config points
    try:
        assert _check(c, results) is not None
    finally:
        moved.rename(db)


def test_not_up_to_date_without_results_or_with_another_config(finished, tmp_path):
    tmp, cfg, _ = finished
    assert _check(load_config(cfg), tmp_path / "nowhere") is None
    c, results = _copy(finished, tmp_path / "seed", seed=8)  # another config hash: metrics.json is not its
    assert _check(c, results) is None
    for name in ("report.html", "summary.txt", STAMP):
        c, results = _copy(finished, tmp_path / f"no_{name}")
        (results / "compas_small" / name).unlink()
        assert _check(c, results) is None, name


def test_failed_cell_or_another_fingerprint_or_data(finished, tmp_path):
    c, results = _copy(finished, tmp_path / "a")
    m = results / "compas_small" / "metrics.json"
    m.write_text(json.dumps({**json.loads(m.read_text()), "n_failed": 1}))
    assert _check(c, results) is None
    for key, value in (("fingerprint", "other-code"), ("data_hash", "other-data"), ("config_hash", "x"),
                       ("tracking_uri", "sqlite:///other.db")):
        c, results = _copy(finished, tmp_path / key)
        s = _stamp(results)
        s.write_text(json.dumps({**json.loads(s.read_text()), key: value}))
        assert _check(c, results) is None, key
    c, results = _copy(finished, tmp_path / "broken")
    _stamp(results).write_text("{not json")
    assert _check(c, results) is None


def test_other_store_or_experiment_name_is_not_up_to_date(finished, tmp_path):
    c, results = _copy(finished, tmp_path / "a", tracking={"experiment_name": "someone_else"})
    assert c.config_hash == load_config(finished[1]).config_hash
    assert _check(c, results) is None
    c, results = _copy(finished, tmp_path / "b", tracking={"uri": f"sqlite:///{tmp_path / 'b' / 'other.db'}"})
    assert _check(c, results) is None


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
    assert up_to_date_from_receipt(path, False, results) == done == up_to_date_fast(c, results)
    # the results change after the receipt was written: read afresh, the full path decides
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

"""Library warnings of a run are kept for the parent run's ``warnings.txt`` (quiet console, nothing
lost): the collector itself, and a real flow whose logistic regressions cannot converge in one iteration."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import yaml

from flows.experiment import WarningLog


def test_warning_log_counts_sorts_and_caps():
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with WarningLog(limit=2) as w:
            for _ in range(3):
                warnings.warn("b   often  folded", UserWarning, stacklevel=1)
            warnings.warn("a once", DeprecationWarning, stacklevel=1)
            warnings.warn("c beyond the cap", UserWarning, stacklevel=1)  # a third distinct warning: not kept
        warnings.warn("after exit", UserWarning, stacklevel=1)
    lines = w.text().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("3x ") and lines[0].endswith(": UserWarning: b often folded"), lines
    assert "test_warnings_log.py:" in lines[0]
    assert lines[1].startswith("1x ") and lines[1].endswith(": DeprecationWarning: a once"), lines
    assert "c beyond" not in w.text() and "after exit" not in w.text()


def test_flow_logs_library_warnings_to_the_parent_run(tmp_path):
    from fairmiss.tracking import Tracker
    from flows.experiment import run_experiment

    db = tmp_path / "mlruns" / "mlflow.db"
    cfg = {"experiment": "warned", "seed": 3, "dataset": {"name": "compas_000"},
           "split": {"test_size": 0.3, "n_splits": 1}, "missingness": [{"kind": "none"}],
           "imputers": [{"kind": "mean"}],
           "learners": [{"kind": "logistic_regression", "name": "lr_1iter", "max_iter": 1}],
           "tracking": {"uri": f"sqlite:///{db}", "log_models": False}, "execution": {"max_workers": 1}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = run_experiment(path, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    t = Tracker(f"sqlite:///{db}", "warned")
    run = t.client.get_run(out["parent_run_id"])
    assert int(run.data.tags["n_warnings"]) >= 1
    text = t.client.download_artifacts(out["parent_run_id"], "warnings.txt", str(tmp_path))
    body = Path(text).read_text()
    assert "converge" in body.lower(), body  # scikit-learn's ConvergenceWarning for max_iter=1

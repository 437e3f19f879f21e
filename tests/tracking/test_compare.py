"""``fairmiss compare``: the trade-off front (accuracy and a fairness gap, mean ± SE over splits, on-front flag)
read back from any MLflow store — here a real ``mlflow server`` on 127.0.0.1 — equals the front built from the
run's local summary (``metrics.json``)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, free_port, mlflow_server, run_cli, small_config, wait_http

from fairmiss.reporting.compare import format_front, front_from_cells, front_from_summary, plot_front


def _brute_front(points):
    """On the front: no other point with gap <= and accuracy >= and one strict (brute force, O(n^2))."""
    return [not any((g2 <= g and a2 >= a) and (g2 < g or a2 > a) for (g2, a2) in points) for (g, a) in points]


def test_front_from_cells_matches_hand_computation():
    rng = np.random.default_rng(3)
    rows = [{"missingness": "m", "method": f"M{i}", "split": s, "accuracy": float(rng.uniform(0.6, 0.8)),
             "fnr_difference": float(rng.uniform(0.0, 0.3))} for i in range(8) for s in range(3)]
    front = front_from_cells(rows, "fnr_difference")
    df = pd.DataFrame(rows)
    for _, r in front.iterrows():
        d = df[df.method == r["method"]]
        assert r["accuracy_mean"] == pytest.approx(d.accuracy.mean(), abs=1e-10)
        assert r["gap_se"] == pytest.approx(d.fnr_difference.std(ddof=1) / np.sqrt(3), abs=1e-10)
        assert r["n_splits"] == 3
    assert front["on_front"].tolist() == _brute_front(list(zip(front.gap_mean, front.accuracy_mean)))
    assert front["gap_mean"].is_monotonic_increasing  # sorted by the gap
    assert 1 <= front["on_front"].sum() < 8


def test_front_from_summary_equals_front_from_cells(tmp_path):
    rows = [{"missingness": "none", "method": m, "split": s, "accuracy": a + 0.01 * s, "fpr_difference": g - 0.02 * s}
            for m, a, g in (("a", 0.7, 0.2), ("b", 0.65, 0.1), ("c", 0.6, 0.15)) for s in range(2)]
    summary = {"none": {}}
    for m, d in pd.DataFrame(rows).groupby("method"):
        summary["none"][m] = {"n_splits": 2, "accuracy_mean": round(d.accuracy.mean(), 10),
                              "accuracy_se": round(d.accuracy.std(ddof=1) / np.sqrt(2), 10),
                              "fpr_difference_mean": round(d.fpr_difference.mean(), 10),
                              "fpr_difference_se": round(d.fpr_difference.std(ddof=1) / np.sqrt(2), 10)}
    a = front_from_cells(rows, "fpr_difference")
    b = front_from_summary(summary, "fpr_difference")
    assert format_front(a, "fpr_difference") == format_front(b, "fpr_difference")
    assert dict(zip(a.method, a.on_front)) == {"a": True, "b": True, "c": False}  # c: a worse gap and accuracy than b
    assert plot_front(a, tmp_path / "front.png", "fpr_difference").stat().st_size > 5000


@pytest.mark.slow
@pytest.mark.server
def test_compare_against_mlflow_server_prints_the_local_front(tmp_path):
    from flows.experiment import run_experiment

    cfg = small_config(tmp_path, learners=[{"kind": "decision_tree", "name": "tree_d3", "max_depth": 3},
                                           {"kind": "logistic_regression", "name": "logreg"}],
                       tracking={"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}", "log_models": False})
    out = run_experiment(cfg, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    summary = json.loads((tmp_path / "results" / "compas_small" / "metrics.json").read_text())["summary"]
    want = format_front(front_from_summary(summary, "fnr_difference"), "fnr_difference")
    assert want.count("\n") == 1 + 4  # header lines + 4 methods (2 imputers x 2 learners)

    local = run_cli("compare", "compas_small", "--tracking-uri", out["tracking_uri"])
    assert local.returncode == 0, local.stderr
    assert want in local.stdout
    assert "Downloading artifacts" not in local.stderr  # MLflow's progress bar stays off the terminal
    # reading a store needs neither Prefect nor scikit-learn: ~3.4 s of the command's start when it imported them
    probe = ("import sys; from flows.cli import main; code = main(['compare', 'compas_small', '--tracking-uri', "
             f"{out['tracking_uri']!r}]); print('imported:', sorted(m for m in ('prefect', 'sklearn') if m in sys.modules));"
             " sys.exit(code)")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "imported: []" in r.stdout and want in r.stdout
    for args, words in ((["--run", "deadbeef"], ["no run 'deadbeef'"]),
                        (["--metric", "wat"], ["--metric wat", "recorded no metric 'wat'"])):
        bad = run_cli("compare", "compas_small", "--tracking-uri", out["tracking_uri"], *args)
        lines = bad.stderr.strip().splitlines()
        assert bad.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in words), bad.stderr

    port = free_port()
    proc = mlflow_server(out["tracking_uri"], port, tmp_path)
    try:
        wait_http(f"http://127.0.0.1:{port}/health", timeout=180, proc=proc)
        png = tmp_path / "front.png"
        r = run_cli("compare", "compas_small", "--metric", "fnr_difference", "--tracking-uri",
                    f"http://127.0.0.1:{port}", "--plot", str(png))
        assert r.returncode == 0, r.stderr
        assert want in r.stdout and f"run {out['parent_run_id']}" in r.stdout
        assert png.stat().st_size > 5000
        bad = run_cli("compare", "no_such_experiment", "--tracking-uri", f"http://127.0.0.1:{port}")
        assert bad.returncode == 2 and "no experiment 'no_such_experiment'" in bad.stderr
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.slow
def test_compare_counts_the_cells_an_edited_sweep_reused(tmp_path):
    """An edited sweep computes only its new cells and reuses the others from the earlier run, whose child runs
    carry the earlier config's hash. The front read back from MLflow must still be the one of every cell the
    new run summarised — equal to its metrics.json — not of the cells it computed."""
    from flows.experiment import run_experiment
    from fairmiss.tracking import read_cell_runs

    store = {"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}", "log_models": False}
    dirs = {"results_dir": str(tmp_path / "results"), "processed_dir": str(tmp_path / "processed")}
    first = small_config(tmp_path / "a", imputers=[{"kind": "mean"}], tracking=store, execution={"max_workers": 1},
                         learners=[{"kind": "decision_tree", "name": "tree_d3", "max_depth": 3},
                                   {"kind": "logistic_regression", "name": "logreg"}])
    run_experiment(first, **dirs)
    edited = small_config(tmp_path / "b", imputers=[{"kind": "mean"}, {"kind": "knn"}], tracking=store,
                          execution={"max_workers": 1},
                          learners=[{"kind": "decision_tree", "name": "tree_d3", "max_depth": 3},
                                    {"kind": "logistic_regression", "name": "logreg"}])
    out = run_experiment(edited, **dirs)
    rows, info = read_cell_runs(store["uri"], "compas_small", metrics=("accuracy", "fnr_difference"))
    assert info["run_id"] == out["parent_run_id"]
    assert len(rows) == 8  # 2 splits x 2 imputers x 2 learners: the 4 reused cells count
    summary = json.loads((tmp_path / "results" / "compas_small" / "metrics.json").read_text())["summary"]
    assert format_front(front_from_cells(rows, "fnr_difference"), "fnr_difference") == \
        format_front(front_from_summary(summary, "fnr_difference"), "fnr_difference")

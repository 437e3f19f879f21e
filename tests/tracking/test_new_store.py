"""A new SQLite tracking store is MLflow's own (its migrations, run once under the store's lock): an existing
store is never replaced, and processes creating the same new store at once all succeed with one copy of each
experiment. The counts are read through MLflow's client, not its tables."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT


def test_existing_store_is_not_replaced(tmp_path):
    from fairmiss.tracking import Tracker

    db = tmp_path / "s" / "mlflow.db"
    t = Tracker(f"sqlite:///{db}", "exp")
    run = t.start_run("kept")
    t.end_run(run)
    again = Tracker(f"sqlite:///{db}", "exp")
    assert again.client.get_run(run).info.run_name == "kept"


@pytest.mark.slow
@pytest.mark.parametrize("n", [2])
def test_concurrent_first_stores(tmp_path, n):
    """2n processes create two new stores at once (n each): all succeed, each store holds one experiment 'exp'
    with n runs."""
    from mlflow import MlflowClient

    code = ("import sys; from fairmiss.tracking import Tracker; t = Tracker(sys.argv[1], 'exp'); "
            "r = t.start_run('r'); t.end_run(r); print('OK')")
    procs = [subprocess.Popen([sys.executable, "-c", code, f"sqlite:///{tmp_path / f's{i % 2}' / 'mlflow.db'}"],
                              cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(2 * n)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 and "OK" in o for p, (o, _) in zip(procs, outs)), [e[-1500:] for _, e in outs]
    for i in range(2):
        client = MlflowClient(f"sqlite:///{tmp_path / f's{i}' / 'mlflow.db'}")
        exps = [e for e in client.search_experiments() if e.name == "exp"]
        assert len(exps) == 1
        assert len(client.search_runs([exps[0].experiment_id])) == n

"""Two wall-time goals of ``fairmiss bench``, each the whole command on a fresh project (start-up, a new MLflow
store, data checks, every cell and the leaderboard included; the user's local Prefect server is started by the
command when none runs, and reused when one does, as after a user's first run: the record says which):

| suite (written by this script from the shipped files) | cells | goal |
|---|---|---|
| ``quick192``: COMPAS and German credit (``compas_000``, ``german_son``) x the Shades-of-Null MCAR3, MAR3, MNAR3 and mixed scenarios (COMPAS's as ``params/suites/fairmiss_core.yaml`` writes them) x median, mean, k-NN and iterative imputation x logistic regression and ``fairmiss_core``'s random forest (100 trees, depth 6) x 3 splits | 192 | ≤ 5 min |
| ``son_german2400``: German credit x the suite's 16 German scenarios (MCAR, MAR and MNAR at levels 1-5, and mixed) x median, mean, k-NN, iterative and median + indicators x the five learners of ``params/suites/son_german_paper_learners.yaml`` (forest, tree, logistic regression, MLP (100, 100), LightGBM, with the hyperparameters chosen there) x the suite's 6 seeds 100 ... 600, no stability copies | 2,400 | ≤ 30 min |

Both suites are derived from the shipped suite files when the script runs (so they follow those files); they are
written into the temporary project beside the run. The machine is shared: the record states the load average
before and after, and a time measured under load is an upper bound of the time on a quiet machine.

    FAIRMISS_DATA_MIRROR=<raw dir> .venv/bin/python bench/bench_suite_sizes.py [--only quick192|son_german2400]

Writes ``bench/results/suite_sizes.{json,md}`` (command, date, load average, commit); with ``--only`` the other
suite's last record is kept.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SUITES = ROOT / "params" / "suites"
GOALS = {"quick192": (192, 300.0), "son_german2400": (2400, 1800.0)}


def quick192() -> dict:
    core = yaml.safe_load((SUITES / "fairmiss_core.yaml").read_text())
    scen = [s for s in core["scenarios"] if s["name"] in ("mcar3", "mar3", "mnar3", "mixed")]
    learners = [lr for lr in core["candidates"]["learners"] if lr["name"] in ("lr", "rf")]
    return {"suite": "quick192", "seed": core["seed"],
            "datasets": [{"name": "compas_000"}, {"name": "german_son"}], "scenarios": scen,
            "per_dataset": {"compas_000": {k: v for k, v in core["per_dataset"]["compas_000"].items()
                                           if k in ("mcar3", "mar3", "mnar3", "mixed")}},
            "candidates": {"imputers": [{"kind": k} for k in ("median", "mean", "knn", "iterative")],
                           "learners": learners},
            "reference": "median+lr", "splits": {"n_splits": 3, "test_size": 0.3},
            "rank_by": core["rank_by"], "fairness_metric": core["fairness_metric"]}


def son_german2400() -> dict:
    paper = yaml.safe_load((SUITES / "son_german_paper_learners.yaml").read_text())
    scen = [{"kind": "preset", "preset": f"son_german_{m}{k}", "name": f"{m}{k}"}
            for m in ("mcar", "mar", "mnar") for k in range(1, 6)]
    scen.append({"kind": "preset", "preset": "son_german_mixed", "name": "mixed"})
    return {"suite": "son_german2400", "seed": paper["seed"], "datasets": paper["datasets"], "scenarios": scen,
            "candidates": {"imputers": [{"kind": "median"}, {"kind": "mean"}, {"kind": "knn"}, {"kind": "iterative"},
                                        {"kind": "median", "name": "median_ind", "add_indicator": True}],
                           "learners": paper["candidates"]["learners"]},
            "reference": "median+rf", "splits": paper["splits"], "metrics": paper["metrics"],
            "rank_by": {"accuracy": "max", "f1": "max", "equalized_odds_difference": "min"},
            "fairness_metric": paper["fairness_metric"]}


def run_suite(name: str, tmp: Path) -> dict:
    proj = tmp / "proj"
    (proj / "params").mkdir(parents=True)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"quick192": quick192, "son_german2400": son_german2400}[name](), sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    r = subprocess.run([PY, "-m", "flows.cli", "bench", str(path)], cwd=proj, env=env, capture_output=True,
                       text=True, timeout=4 * 3600)
    dt = time.perf_counter() - t0
    load1 = os.getloadavg()
    out = r.stdout + r.stderr
    if r.returncode != 0:
        raise RuntimeError(f"{name}: exit {r.returncode}\n{out[-3000:]}")
    lb = next((proj / "results" / "bench").glob(f"{name}*/leaderboard.csv"))
    import pandas as pd
    board = pd.read_csv(lb)
    return {"suite": name, "seconds": dt, "load_before": load0, "load_after": load1,
            "leaderboard_rows": len(board),
            "prefect_server_started": "started the local Prefect server" in out,
            "last_progress": [ln for ln in out.splitlines() if re.search(r"\d+ of \d+ cells", ln)][-1][-200:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(GOALS))
    ap.add_argument("--report", action="store_true", help="rewrite the .md from the .json; run nothing")
    a = ap.parse_args()
    res = ROOT / "bench" / "results"
    old = json.loads((res / "suite_sizes.json").read_text()) if (res / "suite_sizes.json").exists() else {}
    runs = dict(old.get("runs", {}))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    for name in [] if a.report else ([a.only] if a.only else list(GOALS)):
        started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        with tempfile.TemporaryDirectory() as t:
            rec = run_suite(name, Path(t))
        cells, goal = GOALS[name]
        rec.update(cells=cells, goal_s=goal, met=rec["seconds"] <= goal, commit=commit,
                   command=f"bench/bench_suite_sizes.py --only {name}",
                   date=started)
        runs[name] = rec
        print(json.dumps(rec, indent=2), flush=True)
    doc = {"runs": runs}
    tmp = res / "suite_sizes.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, res / "suite_sizes.json")
    md = ["# `fairmiss bench`: wall time of a 192-cell and a 2,400-cell suite", "",
          "Each row: the whole `fairmiss bench SUITE` command on a fresh project (a new MLflow store, data checks,",
          "every cell, the leaderboard), 2 cores, the suite's own `execution` defaults; the user's local Prefect",
          "server was already running (column `server`: started by the command or reused). The suites",
          "are derived from the shipped suite files by `bench/bench_suite_sizes.py` (its docstring says how). The",
          "machine is shared; a time measured under load (load average ≥ 2 on 2 cores) is an upper bound.", "",
          "| suite | cells | wall time | goal | met | load before → after | server | started (UTC) | command (commit) |",
          "|---|---|---|---|---|---|---|---|---|"]
    for name, rec in runs.items():
        lo = f"{rec['load_before'][0]:.2f} → {rec['load_after'][0]:.2f}"
        md.append(f"| `{name}` | {rec['cells']:,} | {rec['seconds'] / 60:.1f} min ({rec['seconds']:.0f} s) | "
                  f"≤ {rec['goal_s'] / 60:.0f} min | {'yes' if rec['met'] else '**no**'} | {lo} | "
                  f"{'started' if rec.get('prefect_server_started') else 'reused'} | {rec['date']} | "
                  f"`{rec['command']}` ({rec['commit']}) |")
    (res / "suite_sizes.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

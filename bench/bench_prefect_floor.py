"""Prefect's own floor under the flow-vs-direct goals: an empty flow with the same Prefect task runs.

    .venv/bin/python bench/bench_prefect_floor.py [--repeats 3] [--out prefect_floor]

For the 100-cell logistic-regression grid and the 100-cell random-forest grid of ``bench_orchestration.py``
(``max_workers: 1``, ``execution.cells_per_task: auto``), measures in one run, arms interleaved, medians:

- ``direct``: the library alone (``bench_orchestration.run_direct``: prepare, split, fit and evaluate every cell;
  no Prefect, no MLflow);
- ``floor``: a Prefect flow against a running Prefect API server on 127.0.0.1 holding **no work at all**, but the
  same task runs as the real flow (one data task, one split task per split, one task per batch of
  ``flows.experiment.cell_batches``), each a no-op returning ``None``, on the same thread runner. This is what
  Prefect alone costs the real flow, whatever fairmiss does; timed inside a fresh process after its imports;
- ``flow``: the real flow (``bench_orchestration.run_flow``, ``log_models: false``), same server.

The floor does no work, so all of it is overhead: ``direct + floor`` bounds from below what the real flow can take
while it stays a Prefect flow with these task runs, and the last column compares the floor with the overhead the
goal allows, ``(goal - 1) × direct``. Writes ``bench/results/<out>.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import bench_orchestration as bo  # noqa: E402

FLOOR_CODE = """
import sys, time
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote
from flows.experiment import StoppableThreadPoolTaskRunner, cell_batches
from fairmiss.config import load_config

@task(name="prepare-and-validate", cache_policy=NO_CACHE)
def data_task(): return None

@task(name="split-and-inject", cache_policy=NO_CACHE)
def split_task(i): return None

@task(name="impute-train-evaluate", cache_policy=NO_CACHE)
def batch_task(cells, splits): return None

cfg = load_config(sys.argv[1])
cells = list(cfg.cells())

@flow(name="prefect-floor", task_runner=StoppableThreadPoolTaskRunner(max_workers=cfg.execution.max_workers),
      persist_result=False)
def floor():
    data_task.submit().result()
    splits = {i: split_task.submit(i) for i in sorted({c.split_index for c in cells})}
    futs = [batch_task.submit(quote(b), quote([splits[c.split_index] for c in b]))
            for b in cell_batches(cells, cfg.execution)]
    for f in futs:
        f.result()
    return len(futs)

t = time.perf_counter()
n = floor()
print("ELAPSED", time.perf_counter() - t)
print("TASKS", n + 1 + len({c.split_index for c in cells}))
"""


def run_floor(cfg: Path, env: dict) -> tuple[float, int]:
    r = subprocess.run([sys.executable, "-c", FLOOR_CODE, str(cfg)], cwd=ROOT, env={**os.environ, **env},
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    out = dict(ln.split(maxsplit=1) for ln in r.stdout.splitlines() if ln.startswith(("ELAPSED", "TASKS")))
    return float(out["ELAPSED"]), int(out["TASKS"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="prefect_floor")
    args = ap.parse_args(argv)
    tmp_root = Path(tempfile.mkdtemp(prefix="bench_floor_"))
    home = tmp_root / "prefect_home"
    home.mkdir()
    load0 = os.getloadavg()
    t_all = time.perf_counter()
    proc, env = bo.prefect_server(home)
    grids = {"lr": bo.FAST, "rf100": bo.rf_grid(100)}
    times = {g: {a: [] for a in ("direct", "floor", "flow")} for g in grids}
    n_tasks = {}
    try:
        for rep in range(args.repeats):
            for g, learners in grids.items():
                for arm in ("direct", "floor", "flow"):
                    tmp = tmp_root / f"{g}-{arm}-{rep}"
                    tmp.mkdir()
                    cfg = bo.grid_config(tmp, "grid100", log_models=False, learners=learners, n_splits=10)
                    if arm == "direct":
                        t = bo.run_direct(cfg, tmp)
                    elif arm == "floor":
                        t, n_tasks[g] = run_floor(cfg, env)
                    else:
                        t = bo.run_flow(cfg, tmp, env)
                    times[g][arm].append(t)
                    print(rep, g, arm, f"{t:.2f}", file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        proc.wait(30)
    load1 = os.getloadavg()
    med = {g: {a: statistics.median(v) for a, v in d.items()} for g, d in times.items()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    what = {"lr": "100 cells of ~27 ms (LR grid)", "rf100": "100 cells of ~150 ms (RF-100 grid)"}
    goal = {"lr": 1.5, "rf100": 1.10}
    lines = [f"# Prefect's floor under the flow-vs-direct goals — {args.out}\n",
             f"`.venv/bin/python bench/bench_prefect_floor.py --repeats {args.repeats} --out {args.out}` on commit "
             f"`{commit}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs; load average "
             f"{load0[0]:.2f} at start, {load1[0]:.2f} at end; {time.perf_counter() - t_all:.0f} s in all. Medians of "
             f"{args.repeats} interleaved repeats; every arm a fresh process timed after its imports; a Prefect API "
             "server on 127.0.0.1 started by the script. `floor`: an empty Prefect flow with the same task runs as "
             "the real one (see the script's docstring).\n",
             "| grid | Prefect task runs | direct (s) | floor (s) | flow (s) | floor / direct | flow / direct | goal | "
             "overhead the goal allows, (goal − 1) × direct | floor's share of it |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for g in grids:
        m = med[g]
        lines.append(f"| {what[g]} | {n_tasks[g]} | {m['direct']:.2f} | {m['floor']:.2f} | {m['flow']:.2f} | "
                     f"{m['floor'] / m['direct']:.2f}× | {m['flow'] / m['direct']:.2f}× | ≤ {goal[g]}× | "
                     f"{(goal[g] - 1) * m['direct']:.2f} s | {m['floor'] / ((goal[g] - 1) * m['direct']):.0%} |")
    text = "\n".join(lines) + "\n"
    (ROOT / "bench" / "results" / f"{args.out}.md").write_text(text)
    (ROOT / "bench" / "results" / f"{args.out}.json").write_text(json.dumps(
        {"commit": commit, "load": [load0, load1], "seconds": times, "median": med, "tasks": n_tasks}, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Dask cells in batches sized from measured cell times (``execution.cells_per_task: auto``) against one cell per
Prefect task (``cells_per_task: 1``, what ``auto`` gave on the Dask runner before), same cells, same run.

A COMPAS grid of fast cells (10 splits x 3 MCAR levels x 2 imputers x 3 learners = 180 cells of ~30-100 ms: the
case where Prefect's and Dask's per-task costs matter) runs with ``fairmiss run --force`` on a local Dask cluster
of 2 workers against a Prefect server this script starts on 127.0.0.1; arms interleaved over ``--repeats``
rounds, each a fresh process. Timed: the cells' phase, from the flow's line announcing the cells to its line
saying they are computed (start-up, data checks and the report excluded), and the whole command. Both arms must
give byte-identical ``metrics.json`` (checked).

    FAIRMISS_DATA_MIRROR=<raw dir> .venv/bin/python bench/bench_dask_batches.py [--repeats 2]

Writes ``bench/results/dask_batches.{md,json}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results"
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def _config(tmp: Path, arm: str) -> Path:
    cfg = {"experiment": f"dask_batches_{arm}", "seed": 7, "dataset": {"name": "compas_000"},
           "split": {"test_size": 0.3, "n_splits": 10},
           "missingness": [{"kind": "mcar", "name": f"m{r}", "rates": {"priors_count": r / 100}} for r in (10, 20, 40)],
           "imputers": [{"kind": "mean"}, {"kind": "median"}],
           "learners": [{"kind": "logistic_regression", "name": "lr"},
                        {"kind": "decision_tree", "name": "t3", "max_depth": 3},
                        {"kind": "decision_tree", "name": "t6", "max_depth": 6}],
           "tracking": {"uri": f"sqlite:///{tmp / arm / 'mlruns' / 'mlflow.db'}", "log_models": False},
           "execution": {"max_workers": 2, "task_runner": "dask", "resume": False,  # every round computes its cells
                         "cells_per_task": 1 if arm == "one" else "auto"}}
    p = tmp / arm / "config.yaml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


def _t(line: str) -> float:
    return _dt.datetime.strptime(STAMP.match(line)[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def _run(tmp: Path, arm: str, env: dict) -> dict:
    cfg = _config(tmp, arm)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "flows.cli", "-v", "run", str(cfg), "--force", "--results-dir",
                        str(tmp / arm / "results"), "--processed-dir", str(tmp / "processed")],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    whole = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{arm}: exit {p.returncode}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    lines = (p.stdout + p.stderr).splitlines()
    start = [x for x in lines if STAMP.match(x) and re.search(r"\d+ cells in ", x)]
    if not start:
        raise SystemExit(f"{arm}: no line announcing the cells:\n" + "\n".join(lines[-40:]))
    start = start[0]
    ends = [x for x in lines if STAMP.match(x) and re.search(r"\[180/180\]", x)]
    tasks = re.search(r"in (\d+) Prefect task runs", "\n".join(lines))
    metrics = (tmp / arm / "results" / f"dask_batches_{arm}" / "metrics.json").read_text()
    return {"whole": whole, "cells": _t(ends[-1]) - _t(start), "tasks": int(tasks[1]) if tasks else None,
            "metrics": json.loads(metrics)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "PREFECT_HOME": str(tmp / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
               "PREFECT_SERVER_UI_ENABLED": "false", "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}
        server = subprocess.Popen([str(Path(sys.executable).parent / "prefect"), "server", "start", "--host",
                                   "127.0.0.1", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            for _ in range(180):
                try:
                    urllib.request.urlopen(env["PREFECT_API_URL"] + "/health", timeout=2)
                    break
                except OSError:
                    time.sleep(1)
            runs = {"one": [], "auto": []}
            for _ in range(args.repeats):
                for arm in ("one", "auto"):
                    runs[arm].append(_run(tmp, arm, env))
        finally:
            server.terminate()
            server.wait(30)
    strip = lambda m: {k: v for k, v in m.items() if k not in ("experiment", "config_hash", "config_path")}  # noqa: E731
    same = strip(runs["one"][0]["metrics"]) == strip(runs["auto"][0]["metrics"])
    med = {arm: {k: statistics.median(r[k] for r in rs) for k in ("whole", "cells")} for arm, rs in runs.items()}
    record = {"command": "FAIRMISS_DATA_MIRROR=<raw dir> .venv/bin/python bench/bench_dask_batches.py "
                         + " ".join(argv if argv is not None else sys.argv[1:]),
              "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                       text=True).stdout.strip(),
              "loadavg_before": load_before, "loadavg_after": os.getloadavg(), "cpus": os.cpu_count(),
              "cells": 180, "repeats": args.repeats, "same_metrics": same,
              "runs": {arm: [{k: v for k, v in r.items() if k != "metrics"} for r in rs] for arm, rs in runs.items()},
              "median": med}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "dask_batches.json").write_text(json.dumps(record, indent=1) + "\n")
    fmt = lambda xs: ", ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    lines = ["# Dask: batches sized from measured cell times against one cell per task", "",
             f"- command: `{record['command'].strip()}` at commit `{record['commit']}`",
             f"- date: {record['date']}; load average before {tuple(round(x, 2) for x in load_before)}, after "
             f"{tuple(round(x, 2) for x in record['loadavg_after'])} ({record['cpus']} CPUs, shared)",
             "- 180 COMPAS cells (10 splits x 3 MCAR levels x 2 imputers x 3 learners: logistic regression, trees of "
             "depth 3 and 6), local Dask cluster of 2 workers, Prefect server on 127.0.0.1; arms interleaved, "
             f"{args.repeats} rounds, each a fresh `fairmiss run --force`",
             f"- metrics.json of the two arms identical (config names aside): {'yes' if same else '**no**'}", "",
             "| arm | Prefect task runs | cells' phase (s), each round | median | whole command (s), each round | median |",
             "|---|---:|---|---:|---|---:|"]
    for arm, label in (("one", "`cells_per_task: 1` (one cell per task)"),
                       ("auto", "`cells_per_task: auto` (measured batches)")):
        rs = runs[arm]
        lines.append(f"| {label} | {rs[0]['tasks'] or 180} | {fmt(r['cells'] for r in rs)} | "
                     f"**{med[arm]['cells']:.1f}** | {fmt(r['whole'] for r in rs)} | **{med[arm]['whole']:.1f}** |")
    ratio = med["auto"]["cells"] / med["one"]["cells"]
    lines += ["", f"Cells' phase, measured batches over one cell per task: {ratio:.2f}x (median over median)."]
    (OUT / "dask_batches.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return record


if __name__ == "__main__":
    main()

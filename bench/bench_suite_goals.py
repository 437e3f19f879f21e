"""Two of the benchmark command's goals, each measured against its reference in the same run:

| measure | reference | goal |
|---|---|---|
| ``fairmiss bench SUITE`` (the shipped ``son_german``: 400 cells, 5 imputers x 2 learners x 4 scenarios x 10 splits), the whole command on a fresh project | a plain Python loop command over the same library calls (``prepare``, ``make_split``, ``fit_evaluate`` per cell; no Prefect, no MLflow, one process) | ≤ 1.3× |
| ``fairmiss bench SUITE --plan`` for a 30,000-cell suite (german_son x 10 Shades-of-Null scenarios x 30 candidates x 100 splits) | — | ≤ 60 s, nothing computed |

The suite runs with its config's ``execution`` (2 workers on a 2-core machine); the loop runs in one process, as a
researcher's script would. The console's per-cell lines give the suite's time from its first to its last cell
(start-up, data checks and the report excluded), reported beside the whole command.

    FAIRMISS_DATA_MIRROR=<raw dir> .venv/bin/python bench/bench_suite_goals.py [--repeats 1]

Writes ``bench/results/suite_goals.{json,md}`` (command, date, load average, commit).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SUITE = ROOT / "params" / "suites" / "son_german.yaml"

LOOP = r'''
import sys, time
from pathlib import Path
from fairmiss import pipeline
from fairmiss.bench import load_suite
t0 = time.perf_counter()
suite = load_suite(sys.argv[1])
n = 0
for name, raw, cfg in suite.configs:
    data = pipeline.prepare(cfg.dataset, processed_dir=Path(sys.argv[2]), docs_dir=Path(sys.argv[2]),
                            fairness_metric=cfg.fairness_metric)
    splits = {}
    for cell in cfg.cells():
        key = (cell.split_index, id(cell.missingness))
        if key not in splits:
            splits = {key: pipeline.make_split(cfg, data, cell.split_index, cell.missingness)}
        r = pipeline.fit_evaluate(cfg, cell, data, splits[key], keep_model=False)
        assert r.status == "ok", r.error
        n += 1
print("LOOP", n, time.perf_counter() - t0)
'''


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI",)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return env


def _run(cmd, cwd) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=7200)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd[:5]))}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return dt, r.stdout + r.stderr


def _project(tmp: Path) -> Path:
    proj = tmp / "proj"
    (proj / "params").mkdir(parents=True)
    return proj


def suite_command(tmp: Path) -> tuple[float, float, int]:
    """The whole command on a fresh project, and its first-to-last-cell span from the console's cell lines."""
    proj = _project(tmp)
    dt, out = _run([PY, "-m", "flows.cli", "bench", str(SUITE)], proj)
    stamps = [h * 3600 + m * 60 + s for h, m, s in
              ((int(a), int(b), int(c)) for a, b, c in re.findall(r"^(\d\d):(\d\d):(\d\d) \[\d+/\d+\]", out, re.M))]
    done = len(stamps)
    return dt, (stamps[-1] - stamps[0]) if len(stamps) > 1 else float("nan"), done


def loop_command(tmp: Path) -> tuple[float, float, int]:
    proj = _project(tmp)
    script = tmp / "loop.py"
    script.write_text(LOOP)
    dt, out = _run([PY, str(script), str(SUITE), str(proj / "processed")], proj)
    _, n, inner = next(ln for ln in out.splitlines() if ln.startswith("LOOP ")).split()
    return dt, float(inner), int(n)


def big_suite(tmp: Path) -> Path:
    """30,000 cells: 10 scenarios x 30 candidates x 100 splits on german_son."""
    scen = [{"kind": "preset", "preset": f"son_german_{m}{k}"} for m in ("mcar", "mar") for k in range(1, 6)]
    d = {"suite": "plan30k", "seed": 1, "datasets": [{"name": "german_son"}], "scenarios": scen,
         "candidates": {"imputers": [{"kind": "median"}, {"kind": "mean"}, {"kind": "most_frequent"}],
                        "learners": [{"kind": "logistic_regression", "name": "lr",
                                      "sweep": {"C": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0]}}]},
         "splits": {"n_splits": 100}}
    path = tmp / "plan30k.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


def plan_command(tmp: Path) -> tuple[float, int, bool]:
    proj = _project(tmp)
    dt, out = _run([PY, "-m", "flows.cli", "bench", str(big_suite(tmp)), "--plan"], proj)
    m = re.search(r"= (\d[\d,]*) cells", out)
    cells = int(m.group(1).replace(",", "")) if m else -1
    nothing = not (proj / "results").exists() and not (proj / "mlruns").exists()
    return dt, cells, nothing


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=1)
    a = ap.parse_args()
    load0 = os.getloadavg()
    suite, loop, plan = [], [], []
    for _ in range(a.repeats):  # interleaved
        with tempfile.TemporaryDirectory() as t:
            suite.append(suite_command(Path(t)))
        with tempfile.TemporaryDirectory() as t:
            loop.append(loop_command(Path(t)))
        with tempfile.TemporaryDirectory() as t:
            plan.append(plan_command(Path(t)))
    load1 = os.getloadavg()
    med = statistics.median
    s_whole, s_cells = med(x[0] for x in suite), med(x[1] for x in suite)
    l_whole, l_inner = med(x[0] for x in loop), med(x[1] for x in loop)
    p_time = med(x[0] for x in plan)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    doc = {"command": f"bench/bench_suite_goals.py --repeats {a.repeats}", "commit": commit,
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "load_before": load0, "load_after": load1,
           "suite": {"cells": suite[0][2], "whole_s": s_whole, "first_to_last_cell_s": s_cells, "runs": suite},
           "loop": {"cells": loop[0][2], "whole_s": l_whole, "cells_s": l_inner, "runs": loop},
           "ratio_whole": s_whole / l_whole, "ratio_cells": s_cells / l_inner,
           "plan": {"cells": plan[0][1], "seconds": p_time, "nothing_written": all(x[2] for x in plan), "runs": plan}}
    res = ROOT / "bench" / "results"
    tmp = res / "suite_goals.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, res / "suite_goals.json")
    md = [
        "# `fairmiss bench`: the suite against a plain loop, and `--plan` at 30,000 cells", "",
        f"- command: `FAIRMISS_DATA_MIRROR=<raw dir> .venv/bin/python {doc['command']}` at commit `{commit}`",
        f"- date: {doc['date']}; load average before {tuple(round(x, 2) for x in load0)}, after "
        f"{tuple(round(x, 2) for x in load1)} (2 CPUs, shared); medians of {a.repeats} interleaved repeat(s)",
        "- suite: `params/suites/son_german.yaml` on a fresh project (Prefect, MLflow store created, 2 workers); "
        "loop: the same cells through `prepare`, `make_split` and `fit_evaluate` in one process", "",
        "| measure | result | goal | met |", "|---|---|---|---|",
        f"| `fairmiss bench` whole command vs the plain loop command ({doc['suite']['cells']} cells) | "
        f"{doc['ratio_whole']:.2f}× ({l_whole:.1f} → {s_whole:.1f} s) | ≤ 1.3× | "
        f"{'yes' if doc['ratio_whole'] <= 1.3 else '**no**'} |",
        f"| the suite's first-to-last cell vs the loop's cells | {doc['ratio_cells']:.2f}× ({l_inner:.1f} → "
        f"{s_cells:.1f} s) | — | — |",
        f"| `--plan` for {doc['plan']['cells']:,} cells | {p_time:.1f} s, nothing written: "
        f"{'yes' if doc['plan']['nothing_written'] else 'no'} | ≤ 60 s | {'yes' if p_time <= 60 else '**no**'} |", ""]
    (res / "suite_goals.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()

"""Cost of a missingness ``shift`` with several test scenarios (``tests``): fit once, evaluate k scenarios.

On COMPAS (``compas_000``, 3 splits, mean imputation), a shift trains under MCAR (20 % of ``priors_count``, 10 %
of ``c_charge_degree``) and is evaluated under k test scenarios (MCAR at 10/30/50 %, label-driven, MCAR on the
other column). Timed, as the flow computes cells: every cell's split and mask (``make_split``) and the flow's
batch task function (``tasks.experiment.fit_evaluate_task``) over the flow's batches (``cell_batches``,
``cells_per_task: auto``), the imputation cache emptied before each case; Prefect's and MLflow's per-cell costs
are not included. Cases per learner, in interleaved rounds (median reported):

* ``k=1``: ``tests`` with the first scenario only;
* ``k=5``: ``tests`` with all five (one fit per split);
* ``5 one-test shifts``: the five scenarios as five one-test ``shift`` configs, each fitted on its own (what
  ``tests`` replaces); their metrics must equal the k=5 cells' (checked).

Run single-threaded::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 FAIRMISS_DATA_MIRROR=... .venv/bin/python bench/bench_shift_tests.py

Writes ``bench/results/shift_tests.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import sklearn

from fairmiss import pipeline
from fairmiss.config import parse_config
from flows.experiment import cell_batches
from tasks.experiment import fit_evaluate_task

OUT = Path(__file__).resolve().parent / "results"
TRAIN = {"kind": "mcar", "rates": {"priors_count": 0.2, "c_charge_degree": 0.1}}
TESTS = [{"kind": "mcar", "name": "mcar10", "rates": {"priors_count": 0.1, "c_charge_degree": 0.1}},
         {"kind": "mcar", "name": "mcar30", "rates": {"priors_count": 0.3, "c_charge_degree": 0.1}},
         {"kind": "mcar", "name": "mcar50", "rates": {"priors_count": 0.5, "c_charge_degree": 0.1}},
         {"kind": "label_driven", "name": "label", "columns": ["priors_count"], "rates_by_label": {0: 0.1, 1: 0.4}},
         {"kind": "mcar", "name": "charge40", "rates": {"c_charge_degree": 0.4}}]
LEARNERS = {
    "mlp": {"kind": "estimator", "name": "mlp", "estimator": "sklearn.neural_network.MLPClassifier",
            "params": {"hidden_layer_sizes": [200, 200], "max_iter": 300}},
    "random_forest": {"kind": "random_forest", "n_estimators": 300},
}


def config(learner: dict, n_splits: int, **shift) -> object:
    return parse_config({"experiment": "bench_shift_tests", "seed": 0, "dataset": {"name": "compas_000"},
                         "split": {"n_splits": n_splits}, "imputers": [{"kind": "mean"}], "learners": [learner],
                         "missingness": [{"kind": "shift", "name": "s", "train": TRAIN, **shift}]})


def compute(cfg, data) -> tuple[float, list]:
    """Seconds to make every cell's split and compute every cell through the flow's batch task function."""
    pipeline.IMPUTE_CACHE.clear()
    t0 = time.perf_counter()
    cells = cfg.cells()
    splits = {c.key: pipeline.make_split(cfg, data, c.split_index, c.missingness) for c in cells}
    out = []
    for batch in cell_batches(cells, cfg.execution):
        out += fit_evaluate_task.fn(cfg, batch, data, [splits[c.key] for c in batch])
    seconds = time.perf_counter() - t0
    bad = [r.error for r in out if r.status != "ok"]
    if bad:
        raise SystemExit(f"failed cells: {bad}")
    return seconds, out


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(v == b[k] or (math.isnan(v) and math.isnan(b[k])) for k, v in a.items())


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--learners", default="mlp,random_forest")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        data = pipeline.prepare(config(LEARNERS["mlp"], 1, test=TESTS[0]).dataset, raw_dir=Path(tmp) / "raw",
                                processed_dir=Path(tmp) / "proc")
    rows = []
    for name in args.learners.split(","):
        ln = LEARNERS[name]
        cfg1, cfg5 = config(ln, args.splits, tests=TESTS[:1]), config(ln, args.splits, tests=TESTS)
        singles = [config(ln, args.splits, test=t) for t in TESTS]
        times = {"k=1": [], "k=5": [], "5 one-test shifts": []}
        fits = {}
        for _ in range(args.rounds):
            t1, r1 = compute(cfg1, data)
            t5, r5 = compute(cfg5, data)
            runs = [compute(c, data) for c in singles]
            times["k=1"].append(t1)
            times["k=5"].append(t5)
            times["5 one-test shifts"].append(sum(t for t, _ in runs))
            fits = {"k=1": sum(r.timings["fit_seconds"] > 0 for r in r1),
                    "k=5": sum(r.timings["fit_seconds"] > 0 for r in r5),
                    "5 one-test shifts": sum(r.timings["fit_seconds"] > 0 for _, rs in runs for r in rs)}
            # each k=5 cell equals its one-test shift (same name, train, test): the same draws and fit
            by_key = {r.key: r for r in r5}
            for j, (_, rs) in enumerate(runs):
                for r in rs:
                    twin = by_key[r.key.replace("/s/", f"/s.{TESTS[j]['name']}/")]
                    if not _same(twin.metrics, r.metrics):
                        raise SystemExit(f"{twin.key}: metrics differ from the one-test shift's")
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"learner": name, "seconds": times, "median_seconds": med, "learner_fits": fits,
                     "ratio_k5_over_k1": med["k=5"] / med["k=1"],
                     "ratio_refit_over_k1": med["5 one-test shifts"] / med["k=1"]})
    record = {"command": "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/bench_shift_tests.py "
                         + " ".join(argv if argv is not None else sys.argv[1:]),
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "loadavg_before": load_before, "loadavg_after": os.getloadavg(), "cpus": os.cpu_count(),
              "sklearn": sklearn.__version__, "dataset": "compas_000", "rows": len(data.df), "splits": args.splits,
              "rounds": args.rounds, "tests": [t["name"] for t in TESTS], "results": rows}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "shift_tests.json").write_text(json.dumps(record, indent=1) + "\n")
    lines = ["# Missingness shift with several test scenarios: fit once, evaluate k", "",
             f"- command: `{record['command'].strip()}`", f"- date: {record['date']}",
             f"- load average (1, 5, 15 min) before: {tuple(round(x, 2) for x in load_before)}, after: "
             f"{tuple(round(x, 2) for x in record['loadavg_after'])} ({record['cpus']} CPUs, shared)",
             f"- data: COMPAS (`compas_000`, {record['rows']} rows), {args.splits} splits, mean imputation; train "
             f"MCAR, test scenarios {', '.join(record['tests'])}; medians of {args.rounds} interleaved rounds",
             "- timed: every cell's split and mask plus the flow's batch task function (Prefect and MLflow per-cell "
             "costs not included); each k=5 cell's metrics equal its one-test shift's (checked every round)", "",
             "| learner | k=1 (s) | k=5 (s) | 5 one-test shifts (s) | k=5 / k=1 | 5 one-test / k=1 | learner fits "
             "(k=1, k=5, 5 one-test) |", "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        m, f = r["median_seconds"], r["learner_fits"]
        lines.append(f"| {r['learner']} | {m['k=1']:.3f} | {m['k=5']:.3f} | {m['5 one-test shifts']:.3f} | "
                     f"{r['ratio_k5_over_k1']:.2f} | {r['ratio_refit_over_k1']:.2f} | "
                     f"{f['k=1']}, {f['k=5']}, {f['5 one-test shifts']} |")
    lines += ["", "Learners: `mlp` = scikit-learn `MLPClassifier(hidden_layer_sizes=(200, 200), max_iter=300)` "
              "(kind: estimator); `random_forest` = 300 trees. One fit per split whatever k; each further scenario "
              "costs its split and mask (~0.03 s on COMPAS), the imputer's transform, the prediction, the bootstrap "
              "intervals and the diagnostics. k=5 / k=1 is therefore near 1 where the fit dominates a cell (the "
              "MLP) and higher where prediction is costly too: the forest walks its 300 trees once per scenario "
              "(labels and scores from one pass), about 9 % of its fit (profiled), so k = 5 cannot go below about "
              "1 + 4 x 0.09 = 1.35 x one scenario; the five one-test shifts it replaces cost about 5x."]
    (out / "shift_tests.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return record


if __name__ == "__main__":
    main()

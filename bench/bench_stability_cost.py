"""Cost of ``evaluation.stability``: B bootstrap copies of a cell's learner (:func:`fairmiss.pipeline.stability.
cell_stability`: resamples, B fits, B predictions, the stability and ensemble metrics) against B single fits of
the same learner on resamples of the same size (fits only), on one real COMPAS cell (mean imputation of the
Table 3 missingness, split 0). The copies run with scikit-learn's parameter validation and finiteness scan off
(:func:`~fairmiss.pipeline.stability.copy_checks`); the single fits are timed as a cell fits (checks on) and,
to show what the copies cost beyond their fits, also inside the same ``copy_checks``.

    .venv/bin/python bench/bench_stability_cost.py [--estimators 50] [--fraction 0.8] [--repeats 5]

Both sides are timed interleaved over ``--repeats`` rounds in one process; the ratio is of the medians. Writes
``bench/results/stability_cost.{json,md}`` (command, date, load average before/after).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LEARNERS = {"logistic_regression": {"kind": "logistic_regression"},
            "decision_tree": {"kind": "decision_tree", "max_depth": None}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--estimators", type=int, default=50)
    ap.add_argument("--fraction", type=float, default=0.8)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    from fairmiss import pipeline
    from fairmiss.config import parse_config
    from fairmiss.learners.build import make_learner
    from fairmiss.pipeline.stability import cell_stability, copy_checks, copy_seeds

    load0 = os.getloadavg()
    cfg = parse_config({"experiment": "bench", "seed": 1, "dataset": {"name": "compas_000"}, "split": {"n_splits": 1},
                        "missingness": [{"kind": "preset", "preset": "000_table3_compas", "name": "t3"}],
                        "imputers": [{"kind": "mean"}], "learners": list(LEARNERS.values())})
    tmp = Path(tempfile.mkdtemp())
    data = pipeline.prepare(cfg.dataset, raw_dir=tmp / "raw", processed_dir=tmp / "proc")
    rows = []
    for cell in cfg.cells():
        sp = pipeline.make_split(cfg, data, 0, cell.missingness)
        X = sp.X.to_numpy(dtype=float)
        y, s = data.df[data.label].to_numpy(), data.df[data.group].to_numpy()
        tr, te = sp.train_idx, sp.test_idx
        mean = np.nanmean(X[tr], axis=0)
        Xtr, Xte = np.where(np.isnan(X[tr]), mean, X[tr]), np.where(np.isnan(X[te]), mean, X[te])

        def make(seed, spec=cell.learner):
            return make_learner(spec, seed, threads=1, feature_names=data.features)

        def ensemble():
            cell_stability(make, Xtr, y[tr], s[tr], Xte, y[te], s[te], root_seed=1, cell_key=cell.key,
                           estimators=a.estimators, fraction=a.fraction)

        size = int(a.fraction * len(tr))
        idxs = [np.random.default_rng(ss).choice(len(tr), size=size, replace=True)
                for ss in copy_seeds(1, cell.key, a.estimators)]

        def singles(predict):
            for b, idx in enumerate(idxs):
                ln = make(b).fit(Xtr[idx], y[tr][idx], s[tr][idx])
                if predict:
                    ln.predict(Xte, s[te])

        def singles_unchecked():
            with copy_checks(Xtr, Xte):
                singles(False)

        t_ens, t_fit, t_fp, t_fu = [], [], [], []
        ensemble(), singles(True), singles_unchecked()  # warm-up
        for _ in range(a.repeats):
            t = time.perf_counter(); ensemble(); t_ens.append(time.perf_counter() - t)  # noqa: E702
            t = time.perf_counter(); singles(False); t_fit.append(time.perf_counter() - t)  # noqa: E702
            t = time.perf_counter(); singles(True); t_fp.append(time.perf_counter() - t)  # noqa: E702
            t = time.perf_counter(); singles_unchecked(); t_fu.append(time.perf_counter() - t)  # noqa: E702
        me, mf, mp, mu = (statistics.median(v) for v in (t_ens, t_fit, t_fp, t_fu))
        rows.append({"learner": cell.learner.label, "n_train": int(len(tr)), "n_test": int(len(te)),
                     "stability_seconds": me, "single_fits_seconds": mf, "single_fit_predict_seconds": mp,
                     "single_fits_unchecked_seconds": mu, "ratio_vs_fits": me / mf, "ratio_vs_fit_predict": me / mp,
                     "ratio_vs_unchecked_fits": me / mu})
    load1 = os.getloadavg()
    cmd = " ".join([".venv/bin/python", "bench/bench_stability_cost.py", *sys.argv[1:]])
    rec = {"command": cmd, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "estimators": a.estimators, "fraction": a.fraction, "repeats": a.repeats,
           "load_before": load0, "load_after": load1, "threshold": 1.1, "rows": rows}
    out = ROOT / "bench" / "results"
    (out / "stability_cost.json").write_text(json.dumps(rec, indent=2) + "\n")
    lines = ["# Stability cost: B bootstrap copies vs B single fits", "",
             f"- command: `{cmd}`", f"- date: {rec['date']}",
             f"- load average (1, 5, 15 min) before: {tuple(round(x, 2) for x in load0)}, after: "
             f"{tuple(round(x, 2) for x in load1)} (2 CPUs, shared)",
             f"- B = {a.estimators} copies, fraction {a.fraction}; medians of {a.repeats} interleaved rounds; one COMPAS "
             "cell (compas_000, Table 3 missingness, mean imputation, split 0)",
             "- stability = resample + fit + one probability pass over the test rows of every copy + label stability, "
             "jitter, probability spread and the ensemble's metrics; B single fits = the same learner fitted on "
             "resamples of the same size, nothing else; B single fit + predict = each of those also predicting the "
             "test rows, as a cell's learner does; B unchecked fits = the B single fits inside the copies' "
             "`copy_checks` (scikit-learn's parameter validation and finiteness scan off, as the copies run): "
             "the ratio against them is what the copies cost beyond their fits (the test-row probability pass, "
             "resampling, metrics)",
             "", "| learner | n train | n test | stability (s) | B single fits (s) | B fit + predict (s) "
             "| B unchecked fits (s) | ratio vs fits | ≤ 1.1 (vs fits) | ratio vs fit + predict "
             "| ratio vs unchecked fits |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        ok = "yes" if r["ratio_vs_fits"] <= 1.1 else "no"
        lines.append(f"| {r['learner']} | {r['n_train']} | {r['n_test']} | {r['stability_seconds']:.4f} | "
                     f"{r['single_fits_seconds']:.4f} | {r['single_fit_predict_seconds']:.4f} | "
                     f"{r['single_fits_unchecked_seconds']:.4f} | {r['ratio_vs_fits']:.3f} | {ok} | "
                     f"{r['ratio_vs_fit_predict']:.3f} | {r['ratio_vs_unchecked_fits']:.3f} |")
    (out / "stability_cost.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Why does the Fair MIP front on Adult stop at an FPR gap of about 0.06? (Figure 2(b))

On split 0 of ``000_fig2_adult`` (same data, Table 3 missingness, seeds and learner settings as the
study), fit the Fair MIP Forest for λ in the study's grid and beyond, and report for each λ:

* per tree: FPR gap on its own training batch (what the objective penalises) and on the whole training set;
* the forest (majority vote): FPR gap and accuracy on the training set and on the test set.

If the trees are fair on their batches but not on the training set, the limit is the batch size
(each tree sees ~200 rows, ~60 negatives per group); if the trees are fair on the training set but
the vote is not, the limit is the aggregation.

Run: ``FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 .venv/bin/python bench/adult_front_gap.py``
Writes ``bench/results/adult_front_gap.md`` and, beside it, ``bench/results/adult_front_gap.json``
(``meta``: command, date, settings, load average, versions; ``results``: one flat object per λ, unrounded).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fairmiss.config import load_config
from fairmiss.learners.build import make_learner
from fairmiss.pipeline import make_split, prepare

ROOT = Path(__file__).resolve().parents[1]


def fpr_gap(y, pred, s):
    rates = []
    for g in (0, 1):
        neg = (s == g) & (y == 0)
        rates.append(pred[neg].mean() if neg.any() else np.nan)
    return abs(rates[0] - rates[1])


def _jsonable(v):
    """A plain Python number (NaN as ``None``) for numpy scalars and floats; anything else unchanged."""
    if isinstance(v, (np.integer, np.floating)):
        v = v.item()
    return None if isinstance(v, float) and math.isnan(v) else v


def write_json(rows, meta, out):
    """Write ``{"meta": meta, "results": rows}`` to ``out`` (sorted keys, 2-space indent, NaN as null)."""
    rows = [{k: _jsonable(v) for k, v in r.items()} for r in rows]
    meta = {k: _jsonable(v) for k, v in meta.items()}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "results": rows}, indent=2, sort_keys=True, ensure_ascii=False,
                              allow_nan=False) + "\n", encoding="utf-8")


def main(lams=(0.1, 0.5, 2.0, 10.0, 50.0), argv=None):
    started, t0, load_start = dt.datetime.now(), time.perf_counter(), os.getloadavg()
    cfg = load_config(ROOT / "params" / "studies" / "000_fig2_adult.yaml")
    mirror = os.environ.get("FAIRMISS_DATA_MIRROR", str(ROOT.parent / "shared" / "data" / "raw"))
    data = prepare(cfg.dataset, raw_dir=mirror, processed_dir=Path(tempfile.mkdtemp()))
    split = make_split(cfg, data, 0, cfg.missingness[0])
    y = data.df[data.label].to_numpy()
    s = data.df[data.group].to_numpy()
    tr, te = split.train_idx, split.test_idx
    Xtr, Xte = split.X.iloc[tr], split.X.iloc[te]
    base = next(lr for lr in cfg.learners if lr.kind == "fair_mip_forest")
    lines = ["# Adult Figure 2(b): where the Fair MIP front stops (split 0)", "",
             f"`bench/adult_front_gap.py`; learner settings of `{base.name}` (batch {base.batch_size}, "
             f"{base.n_trees} trees, depth {base.max_depth}, solver-free search) with λ varied. FPR gap = |FPR(S=0) - FPR(S=1)|.",
             "", "| λ | tree: batch gap (mean) | tree: train gap (mean) | forest train gap | forest test gap | "
             "forest test accuracy | trees predicting one class on train |", "|---|---|---|---|---|---|---|"]
    results = []
    for lam in lams:
        spec = base.model_copy(update={"lambda_": lam})
        est = make_learner(spec, seed=12345, threads=1).estimator
        est.fit(Xtr, y[tr], sensitive_features=s[tr])
        Xs = est._scale(Xtr.to_numpy(float))
        batch_gaps, train_gaps, const = [], [], 0
        y01 = np.searchsorted(est.classes_, y[tr])
        s01 = np.searchsorted(est.sensitive_groups_, s[tr])
        for t, info in zip(est.trees_, est.solve_info_, strict=True):
            p = t.predict(Xs)
            train_gaps.append(fpr_gap(y01, p, s01))
            const += int(p.min() == p.max())
            rows = est._draw_batch(y01, s01, ("fpr",), info["batch_seed"])  # the tree's own batch
            batch_gaps.append(fpr_gap(y01[rows], p[rows], s01[rows]))
        ptr, pte = est.predict(Xtr), est.predict(Xte)
        results.append({"lambda": lam, "tree_batch_gap_mean": np.mean(batch_gaps) if batch_gaps else float("nan"),
                        "tree_train_gap_mean": np.mean(train_gaps), "forest_train_gap": fpr_gap(y[tr], ptr, s[tr]),
                        "forest_test_gap": fpr_gap(y[te], pte, s[te]), "forest_test_accuracy": (pte == y[te]).mean(),
                        "trees_one_class_train": const, "n_trees": len(est.trees_)})
        row = (f"| {lam} | {np.mean(batch_gaps) if batch_gaps else float('nan'):.3f} | {np.mean(train_gaps):.3f} | "
               f"{fpr_gap(y[tr], ptr, s[tr]):.3f} | {fpr_gap(y[te], pte, s[te]):.3f} | {(pte == y[te]).mean():.3f} | "
               f"{const} of {len(est.trees_)} |")
        print(row, flush=True)
        lines.append(row)
    out = ROOT / "bench" / "results" / "adult_front_gap.md"
    out.write_text("\n".join(lines) + "\n")
    meta = {"command": shlex.join(["python", "bench/adult_front_gap.py", *(sys.argv[1:] if argv is None else argv)]),
            "date": started.strftime("%Y-%m-%d %H:%M"), "study": "000_fig2_adult", "split": 0,
            "learner": base.name, "batch_size": base.batch_size, "n_trees": base.n_trees, "max_depth": base.max_depth,
            "search": "solver-free search", "lambdas": [float(lam) for lam in lams],
            "fpr_gap": "|FPR(S=0) - FPR(S=1)|", "learner_threads": 1,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "wall_seconds": round(time.perf_counter() - t0, 1),
            "loadavg_start": list(load_start), "loadavg_end": list(os.getloadavg()),
            "python": platform.python_version(), "numpy": np.__version__}
    write_json(results, meta, out.with_suffix(".json"))


if __name__ == "__main__":
    main(tuple(float(a) for a in sys.argv[1:]) or (0.1, 0.5, 2.0, 10.0, 50.0))

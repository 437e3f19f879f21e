"""How much did paper 000's k-NN results depend on how ties between donors were broken?

Runs cells of a study config at library level (no Prefect, no MLflow) with the k-NN imputer swapped
between tie rules — ``average`` (fairmiss's default: the expectation over all tie-breaks), ``lowest_index``
(a stable sort), and scikit-learn's ``KNNImputer`` on THIS CPU (donors picked by ``np.argpartition``,
whose SIMD kernel orders ties) — beside mean imputation, for the chosen learners and splits. Prints
mean ± SE over splits per (imputer variant, learner) and decides spec 000's B4c (Zafar + mean beats Zafar + k-NN) once per tie rule with
:func:`fairmiss.studies.p000_claims.figure2_claims`.

    python bench/knn_ties.py params/studies/000_fig2_compas.yaml --splits 10 \
        --learners baseline_tree_d3 agarwal_eps0.01 hardt_eo zafar_tau0.001 ... --out bench/results/knn_ties.md

With ``--out``, also writes the same numbers as JSON beside the Markdown (``knn_ties.json``: ``meta`` with
command, date, load average, threads and versions; ``results``, one flat object per (imputer variant,
learner), unrounded; ``claims``, the B4c verdict per tie rule).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import flows  # noqa: F401  (pins the OpenBLAS kernel before numpy loads, as the flows do)
import numpy as np
import pandas as pd

from fairmiss.impute import build as impute

from fairmiss import pipeline
from fairmiss.studies.p000_claims import figure2_claims
from fairmiss.config import load_config


def _sklearn_knn(spec, seed):
    from sklearn.impute import KNNImputer

    return KNNImputer(n_neighbors=spec.n_neighbors, add_indicator=spec.add_indicator, keep_empty_features=True)


def _jsonable(v):
    """A plain Python number (NaN as ``None``) for numpy scalars and floats; anything else unchanged."""
    if isinstance(v, (np.integer, np.floating)):
        v = v.item()
    return None if isinstance(v, float) and math.isnan(v) else v


def write_json(rows, meta, out, claims=()):
    """Write ``{"meta": meta, "results": rows, "claims": claims}`` to ``out`` (sorted keys, 2-space indent,
    NaN as null)."""
    doc = {"meta": {k: _jsonable(v) for k, v in meta.items()},
           "results": [{k: _jsonable(v) for k, v in r.items()} for r in rows],
           "claims": [{k: _jsonable(v) for k, v in c.items()} for c in claims]}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n",
                   encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--learners", nargs="+", required=True)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    cfg = load_config(args.config)
    data = pipeline.prepare(cfg.dataset, processed_dir=Path("processed"))
    variants = {"knn": ("average", None), "knn_lowest": ("lowest_index", None), "knn_sklearn": (None, _sklearn_knn)}
    rows, ties = [], []
    started, load_start = dt.datetime.now(), os.getloadavg()
    t0 = time.perf_counter()
    original = impute.IMPUTERS["knn"]
    for split_i in range(args.splits):
        for miss in cfg.missingness:
            split = pipeline.make_split(cfg, data, split_i, miss)
            for cell in cfg.cells():
                if cell.split_index != split_i or cell.missingness is not miss or cell.learner.label not in args.learners:
                    continue
                if cell.imputer.kind == "mean":
                    todo = {"mean": cell}
                elif cell.imputer.kind == "knn":
                    todo = {}
                    for name, (rule, factory) in variants.items():
                        spec = cell.imputer.model_copy(update={"ties": rule}) if rule else cell.imputer
                        todo[name] = (cell.__class__(cell.split_index, cell.missingness, spec, cell.learner), factory)
                else:
                    continue
                for name, item in todo.items():
                    c, factory = (item, None) if name == "mean" else item
                    pipeline._IMPUTE_CACHE.clear()
                    impute.IMPUTERS["knn"] = factory or original
                    try:
                        r = pipeline.fit_evaluate(cfg, c, data, split)
                    finally:
                        impute.IMPUTERS["knn"] = original
                    rows.append({"split": split_i, "imputer": name, "learner": cell.learner.label,
                                 "status": r.status, **{k: r.metrics.get(k) for k in ("accuracy", cfg.fairness_metric)}})
        print(f"split {split_i} done, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    cells = pd.DataFrame(rows)
    g = cells.groupby(["imputer", "learner"])[["accuracy", cfg.fairness_metric]]
    full = g.mean().join(g.sem(), rsuffix="_se")
    summary = full.round(4)
    wall = time.perf_counter() - t0
    lines = [f"# k-NN tie rules on `{args.config}` ({args.splits} splits; {time.perf_counter() - t0:.0f} s)", "",
             "Command: `python bench/knn_ties.py " + " ".join(argv or sys.argv[1:]) + "`", "",
             summary.to_markdown(), ""]
    # B4c once per k-NN variant: Zafar + mean vs Zafar + (that variant)
    claims = []
    for name in variants:
        sub = cells[cells["imputer"].isin(["mean", name])].replace({"imputer": {name: "knn"}})
        try:
            cl = figure2_claims(sub, "compas")
            b4c = cl[cl["claim"] == "B4c"].iloc[0]
            lines.append(f"- B4c with `{name}`: verdict {b4c['verdict']} — {b4c['evidence']}")
            claims.append({"claim": "B4c", "imputer": name, "verdict": b4c["verdict"], "evidence": b4c["evidence"]})
        except Exception as exc:  # noqa: BLE001 - a bench reports, it does not stop
            lines.append(f"- B4c with `{name}`: not decided ({exc})")
            claims.append({"claim": "B4c", "imputer": name, "verdict": "not decided", "evidence": str(exc)})
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
        import sklearn

        meta = {"command": "python bench/knn_ties.py " + " ".join(argv or sys.argv[1:]),
                "date": started.strftime("%Y-%m-%d %H:%M"), "config": args.config, "splits": args.splits,
                "wall_seconds": round(wall, 1), "learners": list(args.learners),
                "fairness_metric": cfg.fairness_metric, "aggregate": "mean and standard error over splits",
                "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
                "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                "loadavg_start": list(load_start), "loadavg_end": list(os.getloadavg()),
                "python": platform.python_version(), "numpy": np.__version__, "pandas": pd.__version__,
                "scikit-learn": sklearn.__version__}
        results = [{"imputer": imp, "learner": learner, **r} for (imp, learner), r in full.to_dict("index").items()]
        write_json(results, meta, Path(args.out).with_suffix(".json"), claims)
    return 0


if __name__ == "__main__":
    sys.exit(main())

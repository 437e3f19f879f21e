"""Local-search speed and the threshold cap on continuous features (HSLS Figure 2 panel).

Two measurements, both in one process so the ratios share the machine's state:

1. **Pruned vs full subtree move.** ``search_tree`` with the pruned subtree move (default) and with
   pruning switched off (every split at the node enumerated against every pair of child splits, the
   code before this change) on the same batches: the trees must be identical; the time ratio is
   the speed-up. Batches: HSLS-synthetic (400 rows, continuous features, 64 thresholds) and Adult
   000 (200 rows, 15 % MCAR on every feature so that MIA splits double the candidates).
2. **Threshold cap** (``search_max_thresholds``) on HSLS-synthetic batches of 400 (Table 4), depth 3,
   FNR, λ ∈ {0.1, 1, 3}, 50 restarts: objective and seconds at 16, 32 and 64 thresholds a feature.

Run (about 10 minutes on an idle 2-core machine)::

    FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 .venv/bin/python bench/bench_mip_search.py

Writes ``bench/results/mip_search.json`` and ``bench/results/mip_search.md``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

from fairmiss.datasets import get_variant
from fairmiss.datasets.hsls import FEATURES, GROUP, LABEL, generate_hsls_synthetic
from fairmiss.learners.build.fair_mip_forest import search as mip_search
from fairmiss.learners.fair_mip_forest.forest import _cart_tree
from fairmiss.learners.fair_mip_forest.tree import prepare_batch

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results"


def _scaled(X):
    X = np.asarray(X, float)
    lo, hi = np.nanmin(X, 0), np.nanmax(X, 0)
    return (X - lo) / np.where(hi > lo, hi - lo, 1.0)


def _hsls_batches(n_batches, size=400):
    df = generate_hsls_synthetic(seed=0)
    X, y, s = _scaled(df[FEATURES].to_numpy(float)), df[LABEL].to_numpy(), df[GROUP].to_numpy()
    out = []
    for b in range(n_batches):
        rows = np.random.default_rng(1000 + b).choice(len(y), size, replace=False)
        out.append(prepare_batch(X[rows], y[rows], s[rows]))
    return out


def _adult_batch(size=200):
    mirror = os.environ.get("FAIRMISS_DATA_MIRROR", str(ROOT.parent / "shared" / "data" / "raw"))
    df, _ = get_variant("adult_000").build(mirror)
    y, s = df["income"].to_numpy(), df["gender"].to_numpy()
    X = df.drop(columns=["income", "gender"]).to_numpy(float)
    rng = np.random.default_rng(0)
    X[rng.random(X.shape) < 0.15] = np.nan
    rows = rng.choice(len(y), size, replace=False)
    return prepare_batch(_scaled(X)[rows], y[rows], s[rows])


def _search(batch, *, pruned=True, **kw):
    real = mip_search._Search._subtree_row_minima
    if not pruned:
        mip_search._Search._subtree_row_minima = lambda self, *a: None
    try:
        t0 = time.perf_counter()
        res = mip_search.search_tree(batch, depth=3, fairness="fnr", starts=[_cart_tree(batch, 3, 0)], seed=0, **kw)
        return res, time.perf_counter() - t0
    finally:
        mip_search._Search._subtree_row_minima = real


def _same(a, b):
    return all(np.array_equal(getattr(a.tree, f), getattr(b.tree, f))
               for f in ("feature", "threshold", "missing_left", "value")) and a.objective == b.objective


def main():
    hsls = _hsls_batches(3)
    res = {"pruning": [], "thresholds": [], "machine": platform.processor() or platform.machine(),
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    cwd=ROOT).stdout.strip()}
    cases = [("hsls batch 0 (n=400)", hsls[0], {"lambda_": 1.0, "max_thresholds": 64, "n_restarts": 4}),
             ("hsls batch 1 (n=400)", hsls[1], {"lambda_": 0.1, "max_thresholds": 64, "n_restarts": 4}),
             ("adult 000 (n=200, 15% MCAR)", _adult_batch(), {"lambda_": 0.5, "max_thresholds": 64, "n_restarts": 4})]
    for name, batch, kw in cases:
        fast, t_fast = _search(batch, pruned=True, **kw)
        full, t_full = _search(batch, pruned=False, **kw)
        row = {"case": name, **kw, "seconds_full": t_full, "seconds_pruned": t_fast, "speedup": t_full / t_fast,
               "identical": _same(fast, full), "objective": fast.objective}
        res["pruning"].append(row)
        print(row, flush=True)
    for b, batch in enumerate(hsls):
        for lam in (0.1, 1.0, 3.0):
            for mt in (16, 32, 64):
                r, t = _search(batch, lambda_=lam, max_thresholds=mt, n_restarts=50)
                row = {"batch": b, "lambda": lam, "max_thresholds": mt, "objective": r.objective, "seconds": t,
                       "greedy": r.start_objectives["greedy"], "cart": r.start_objectives["start0"]}
                res["thresholds"].append(row)
                print(row, flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "mip_search.json").write_text(json.dumps(res, indent=1))
    (OUT / "mip_search.md").write_text(render(res))


def render(res) -> str:
    lines = ["# MIP local search: pruned subtree move, threshold cap (HSLS-synthetic, Adult)", "",
             f"`bench/bench_mip_search.py`, commit {res['commit']}, 1 thread. Depth 3, FNR regulariser.", "",
             "## Pruned vs full subtree move (same process, same batches)", "",
             "| case | λ | restarts | full (s) | pruned (s) | speed-up | identical tree | objective |",
             "|---|---|---|---|---|---|---|---|"]
    for r in res["pruning"]:
        lines.append(f"| {r['case']} | {r['lambda_']} | {r['n_restarts']} | {r['seconds_full']:.1f} | "
                     f"{r['seconds_pruned']:.1f} | {r['speedup']:.1f}x | {r['identical']} | {r['objective']:.5f} |")
    lines += ["", "## Threshold cap on HSLS-synthetic batches of 400 (50 restarts)", "",
              "| batch | λ | CART start | 16 thr: obj (s) | 32 thr: obj (s) | 64 thr: obj (s) |", "|---|---|---|---|---|---|"]
    rows = res["thresholds"]
    for b in sorted({r["batch"] for r in rows}):
        for lam in sorted({r["lambda"] for r in rows}):
            sel = {r["max_thresholds"]: r for r in rows if r["batch"] == b and r["lambda"] == lam}
            cells = " | ".join(f"{sel[m]['objective']:.4f} ({sel[m]['seconds']:.1f})" for m in (16, 32, 64))
            lines.append(f"| {b} | {lam} | {sel[64]['cart']:.4f} | {cells} |")
    for m in (16, 32, 64):
        sel = [r for r in rows if r["max_thresholds"] == m]
        gap = np.mean([r["objective"] - next(q["objective"] for q in rows if q["batch"] == r["batch"]
                                             and q["lambda"] == r["lambda"] and q["max_thresholds"] == 64)
                       for r in sel])
        lines.append(f"\n{m} thresholds: mean {np.mean([r['seconds'] for r in sel]):.1f} s a tree, mean objective "
                     f"{gap:+.4f} vs 64")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

"""Benchmark of the equality-constrained-tree post-processor (paper 003).

Measures, in one run and on one thread:

1. adjusting a 500-tree random forest on 100k reference rows (closed form, both modes),
   next to the forest's own ``predict`` and ``apply`` on the same rows as the reference;
2. the same for a 500-round XGBoost model (margin);
3. cost against the number of leaves: (a) total adjustment time as the forest grows
   (total leaves proportional to the number of trees), (b) the per-tree closed form alone
   on synthetic trees with 1e3..1e6 leaves, with a least-squares line through each;
4. the Pyomo/HiGHS program (bounds) against the closed form on a smaller forest.

Writes ``bench/results/eqtree.json`` and ``bench/results/eqtree.md``.
Run: ``OMP_NUM_THREADS=1 .venv/bin/python bench/bench_eqtree.py`` (about 2-4 minutes).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")

import sklearn  # noqa: E402
import xgboost as xgb  # noqa: E402
from sklearn.ensemble import RandomForestRegressor  # noqa: E402

from fairmiss.learners.equality_trees.eqtree import (  # noqa: E402
    EqualityConstrainedTrees,
    LeafProblem,
    equalise_leaf_values,
)

logger = logging.getLogger("bench_eqtree")
OUT = Path(__file__).resolve().parent / "results"
SEED = 0


def _data(n, rng):
    g = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 10))
    X[:, 0] += 0.7 * g
    y = 2 * X[:, 0] + X[:, 1] - X[:, 2] * X[:, 3] + 0.5 * rng.normal(size=n)
    return X, y, g


def _timed(fn, repeat=1):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _gap(v, g):
    return float(abs(v[g == 1].mean() - v[g == 0].mean()))


def _line(x, y):
    """Least-squares ``y = a + b x`` with R^2."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    b, a = np.polyfit(x, y, 1)
    r2 = 1 - np.sum((y - (a + b * x)) ** 2) / np.sum((y - y.mean()) ** 2)
    return {"intercept": float(a), "slope": float(b), "r2": float(r2)}


def bench_forest(X_train, y_train, X_ref, g_ref):
    t_fit, rf = _timed(lambda: RandomForestRegressor(
        n_estimators=500, max_depth=10, max_features=0.5, max_samples=0.5, n_jobs=1,
        random_state=SEED).fit(X_train, y_train))
    n_leaves = int(sum(e.tree_.n_leaves for e in rf.estimators_))
    t_pred, pred = _timed(lambda: rf.predict(X_ref), repeat=2)
    t_apply, _ = _timed(lambda: rf.apply(X_ref), repeat=1)
    out = {"n_trees": 500, "n_ref_rows": int(X_ref.shape[0]), "total_leaves": n_leaves,
           "train_seconds": t_fit, "predict_seconds": t_pred, "apply_seconds": t_apply,
           "gap_before": _gap(pred, g_ref), "modes": {}}
    for mode in ("explicit", "compressed"):
        t_adj, fair = _timed(lambda mode=mode: EqualityConstrainedTrees(
            estimator=rf, mode=mode).fit(X_ref, sensitive_features=g_ref), repeat=2)
        after = fair.predict(X_ref)
        out["modes"][mode] = {"adjust_seconds": t_adj, "adjust_over_predict": t_adj / t_pred,
                              "gap_after_measured": _gap(after, g_ref),
                              "rms_perturbation": fair.rms_perturbation_}
        logger.info("RF %s: adjust %.2fs, predict %.2fs, gap %.3g -> %.2g", mode, t_adj,
                    t_pred, out["gap_before"], out["modes"][mode]["gap_after_measured"])
    return out, rf


def bench_xgboost(X_train, y_train, X_ref, g_ref):
    t_fit, model = _timed(lambda: xgb.XGBRegressor(
        n_estimators=500, max_depth=6, learning_rate=0.05, n_jobs=1, random_state=SEED,
        tree_method="hist").fit(X_train, y_train))
    t_pred, pred = _timed(lambda: model.predict(X_ref, output_margin=True), repeat=2)
    t_leaf, _ = _timed(lambda: model.apply(X_ref), repeat=2)
    t_adj, fair = _timed(lambda: EqualityConstrainedTrees(estimator=model).fit(
        X_ref, sensitive_features=g_ref), repeat=2)
    after = fair.decision_function(X_ref).astype(float)
    out = {"n_trees": 500, "n_ref_rows": int(X_ref.shape[0]), "train_seconds": t_fit,
           "predict_seconds": t_pred, "pred_leaf_seconds": t_leaf, "adjust_seconds": t_adj,
           "adjust_over_predict": t_adj / t_pred, "gap_before": _gap(pred.astype(float), g_ref),
           "gap_after_measured": _gap(after, g_ref)}
    logger.info("XGB: adjust %.2fs, predict %.2fs, gap %.3g -> %.2g", t_adj, t_pred,
                out["gap_before"], out["gap_after_measured"])
    return out


def bench_trees_scaling(rf, X_ref, g_ref):
    """Adjust growing prefixes of the 500-tree forest: total leaves grow with the trees."""
    rows = []
    for n_trees in (50, 100, 200, 300, 500):
        sub = RandomForestRegressor(n_estimators=n_trees)
        sub.__dict__.update({k: v for k, v in rf.__dict__.items() if k.endswith("_")})
        sub.estimators_ = rf.estimators_[:n_trees]
        sub.n_estimators = n_trees
        leaves = int(sum(e.tree_.n_leaves for e in sub.estimators_))
        t_adj, _ = _timed(lambda sub=sub: EqualityConstrainedTrees(estimator=sub).fit(
            X_ref, sensitive_features=g_ref), repeat=2)
        t_pred, _ = _timed(lambda sub=sub: sub.predict(X_ref), repeat=2)
        rows.append({"n_trees": n_trees, "total_leaves": leaves, "adjust_seconds": t_adj,
                     "predict_seconds": t_pred})
        logger.info("prefix %d trees (%d leaves): adjust %.2fs predict %.2fs", n_trees, leaves,
                    t_adj, t_pred)
    fit = _line([r["total_leaves"] for r in rows], [r["adjust_seconds"] for r in rows])
    return {"rows": rows, "adjust_vs_leaves": fit}


def bench_closed_form_scaling(rng):
    """The per-tree O(L) closed form alone, on synthetic trees with L leaves."""
    rows = []
    for L in (1_000, 10_000, 100_000, 300_000, 1_000_000):
        n = rng.integers(1, 50, L).astype(float)
        a = rng.dirichlet(np.ones(L))
        prob = LeafProblem(np.arange(L), rng.normal(size=L), (a - rng.permutation(a))[None, :], n)
        reps = max(3, 2_000_000 // L)
        per = {}
        for mode in ("compressed", "explicit"):
            t, _ = _timed(lambda mode=mode: [equalise_leaf_values(prob, mode=mode)
                                             for _ in range(reps)], repeat=3)
            per[mode] = t / reps
        rows.append({"n_leaves": L, "compressed_seconds": per["compressed"],
                     "explicit_seconds": per["explicit"]})
    fit = {m: _line([r["n_leaves"] for r in rows], [r[f"{m}_seconds"] for r in rows])
           for m in ("compressed", "explicit")}
    return {"rows": rows, "fit": fit}


def bench_program(X_train, y_train, g_train):
    """Pyomo + HiGHS with bounds vs the closed form on a 20-tree decile forest."""
    deciles = np.clip(np.round(5 + 1.5 * y_train / y_train.std()), 1, 10)
    rf = RandomForestRegressor(n_estimators=20, max_depth=8, n_jobs=1, random_state=SEED).fit(
        X_train, deciles)
    t_cf, cf = _timed(lambda: EqualityConstrainedTrees(estimator=rf).fit(
        X_train, sensitive_features=g_train))
    # repeat=2: the first call also pays the one-off Pyomo/HiGHS import
    t_qp, qp = _timed(lambda: EqualityConstrainedTrees(estimator=rf, bounds=(1, 10)).fit(
        X_train, sensitive_features=g_train), repeat=2)
    p_cf, p_qp = cf.predict(X_train), qp.predict(X_train)
    return {"n_trees": 20, "n_rows": int(X_train.shape[0]), "leaves": qp.n_leaves_adjusted_,
            "closed_form_seconds": t_cf, "qp_bounds_seconds": t_qp,
            "solver_seconds": sum(r.solve_seconds for r in qp.solve_results_ if r is not None),
            "status": qp.solver_status_,
            "closed_form_range": [float(p_cf.min()), float(p_cf.max())],
            "qp_range": [float(p_qp.min()), float(p_qp.max())],
            "qp_gap_after": _gap(p_qp, g_train)}


def _markdown(res):
    rf, xg = res["forest"], res["xgboost"]
    lines = [
        "# Equality-constrained trees: benchmark",
        "",
        f"Generated by `bench/bench_eqtree.py` ({res['meta']['date']}, one thread, "
        f"Python {res['meta']['python']}, scikit-learn {res['meta']['sklearn']}, "
        f"xgboost {res['meta']['xgboost']}). Total run {res['meta']['total_seconds']:.0f} s. "
        f"Load average at start/end {res['meta']['load_start']:.1f}/{res['meta']['load_end']:.1f} "
        "on a shared 2-core machine: absolute seconds vary between runs (up to ~2x); the "
        "ratios to `predict` measured in the same run are the comparable numbers.",
        "",
        f"## 500-tree random forest, {rf['n_ref_rows']:,} reference rows "
        f"({rf['total_leaves']:,} leaves)",
        "",
        "| step | seconds | x forest.predict |",
        "|---|---|---|",
        f"| forest.predict (reference) | {rf['predict_seconds']:.2f} | 1.00 |",
        f"| forest.apply | {rf['apply_seconds']:.2f} | "
        f"{rf['apply_seconds'] / rf['predict_seconds']:.2f} |",
    ]
    for mode, r in rf["modes"].items():
        lines.append(f"| adjust, {mode} | {r['adjust_seconds']:.2f} | "
                     f"{r['adjust_over_predict']:.2f} |")
    lines += [
        "",
        f"Group gap on the reference rows: {rf['gap_before']:.4f} before, "
        + ", ".join(f"{r['gap_after_measured']:.1e} after ({m})" for m, r in rf["modes"].items())
        + ".",
        "",
        f"## 500-round XGBoost, {xg['n_ref_rows']:,} reference rows (margin)",
        "",
        f"predict {xg['predict_seconds']:.2f} s, `apply` (pred_leaf) "
        f"{xg['pred_leaf_seconds']:.2f} s, adjust {xg['adjust_seconds']:.2f} s "
        f"({xg['adjust_over_predict']:.2f}x predict, "
        f"{xg['adjust_seconds'] / xg['pred_leaf_seconds']:.2f}x pred_leaf); gap "
        f"{xg['gap_before']:.4f} -> {xg['gap_after_measured']:.1e} (float32 leaves). "
        "The adjustment needs leaf indices, so XGBoost's pred_leaf pass is its floor.",
        "",
        "## Cost against the number of leaves",
        "",
        "(a) Prefixes of the 500-tree forest, 100k reference rows. The cost is one leaf-index "
        "pass per tree (O(n) per tree, like predict) plus O(L) per tree, so it grows "
        "linearly with the total number of leaves as trees are added:",
        "",
        "| trees | total leaves | adjust s | predict s |",
        "|---|---|---|---|",
    ]
    sc = res["trees_scaling"]
    for r in sc["rows"]:
        lines.append(f"| {r['n_trees']} | {r['total_leaves']:,} | {r['adjust_seconds']:.2f} | "
                     f"{r['predict_seconds']:.2f} |")
    f = sc["adjust_vs_leaves"]
    lines += [
        "",
        f"Linear fit: adjust = {f['intercept']:.3f} s + {f['slope'] * 1e6:.2f} µs x leaves "
        f"(R² = {f['r2']:.4f}).",
        "",
        "(b) Per-tree closed form alone (no data pass), synthetic trees:",
        "",
        "| leaves | compressed ms | explicit ms | compressed ns/leaf |",
        "|---|---|---|---|",
    ]
    cf = res["closed_form_scaling"]
    for r in cf["rows"]:
        lines.append(f"| {r['n_leaves']:,} | {r['compressed_seconds'] * 1e3:.3f} | "
                     f"{r['explicit_seconds'] * 1e3:.3f} | "
                     f"{r['compressed_seconds'] / r['n_leaves'] * 1e9:.1f} |")
    lines += [""] + [
        f"Linear fit ({m}): {v['slope'] * 1e9:.2f} ns per leaf, R² = {v['r2']:.4f}."
        for m, v in cf["fit"].items()
    ] + ["", "At small sizes a fixed per-call overhead of ~10-20 µs dominates; beyond it the "
         "cost is a few ns per leaf. Real trees have 1e2..1e4 leaves, so the closed form "
         "costs microseconds per tree and the data pass in (a) dominates."]
    q = res["program"]
    lines += [
        "",
        "## Optimisation view (Pyomo + HiGHS QP, bounds [1, 10])",
        "",
        f"{q['n_trees']} trees, {q['leaves']:,} reached leaves, {q['n_rows']:,} rows: closed "
        f"form {q['closed_form_seconds']:.2f} s (range {q['closed_form_range'][0]:.2f}.."
        f"{q['closed_form_range'][1]:.2f}); QP {q['qp_bounds_seconds']:.2f} s of which solver "
        f"{q['solver_seconds']:.2f} s, status {q['status']} (range {q['qp_range'][0]:.2f}.."
        f"{q['qp_range'][1]:.2f}), gap after {q['qp_gap_after']:.1e}.",
        "",
    ]
    return "\n".join(lines)


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED)
    X_train, y_train, g_train = _data(20_000, rng)
    X_ref, _, g_ref = _data(100_000, rng)
    res = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M"), "python": platform.python_version(),
                    "sklearn": sklearn.__version__, "xgboost": xgb.__version__,
                    "threads": 1, "train_rows": 20_000, "load_start": os.getloadavg()[0]}}
    res["forest"], rf = bench_forest(X_train, y_train, X_ref, g_ref)
    res["xgboost"] = bench_xgboost(X_train, y_train, X_ref, g_ref)
    res["trees_scaling"] = bench_trees_scaling(rf, X_ref, g_ref)
    res["closed_form_scaling"] = bench_closed_form_scaling(rng)
    res["program"] = bench_program(X_train[:5000], y_train[:5000], g_train[:5000])
    res["meta"]["total_seconds"] = time.perf_counter() - t0
    res["meta"]["load_end"] = os.getloadavg()[0]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "eqtree.json").write_text(json.dumps(res, indent=2))
    (OUT / "eqtree.md").write_text(_markdown(res))
    logger.info("wrote %s (%.0f s)", OUT / "eqtree.json", res["meta"]["total_seconds"])


if __name__ == "__main__":
    main()

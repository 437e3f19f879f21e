"""Benchmark of BuDRO (paper 004) against plain XGBoost on Adult.

Adult ``adult_004`` (45,222 rows, 41 features incl. gender and race), one 80/20 split
(36,177 training rows, as the paper). Every run is a fresh subprocess, so that its peak RSS
(``resource.getrusage``, which also sees XGBoost's C++ heap, unlike tracemalloc) is its own;
one thread by default (OMP/OPENBLAS_NUM_THREADS, XGBoost ``nthread`` = ``BUDRO_BENCH_THREADS`` in both arms).
The machine is shared and noisy, so the configurations are run **interleaved**
(xgb, budro, ..., xgb, budro, ... for ``BUDRO_BENCH_REPEATS`` rounds) and the ratio reported
is the median over repeats of ``fit time / the xgb_plain fit time of the same repeat``,
both for wall time and for process CPU time (``time.process_time``; less sensitive to the
other jobs on the machine).

* ``xgb_plain``: plain XGBoost, BuDRO's Table 6 tree parameters (depth 14, lambda 1e-4,
  eta 0.005, min_child_weight 0.1/n, scale_pos_weight n0/n1), ``ROUNDS + 1`` rounds
  (QuantileDMatrix construction included in its time, as BuDRO's is in BuDRO's);
* ``budro_<method>[_aug]``: BuDRO with the same parameters and ``ROUNDS`` steps after f0 (the
  same number of trees), eps = 0.4, kNN fair-metric support (k = 32), XGBoost fed the paper's
  functional gradient on n rows (``xgb_mode="gradient"``, same trees as the 2n-row data) or
  the 2n-row augmented data (``_aug``). Methods: ``greedy`` and ``dual`` (exact on the
  support, vectorised uniform-width path), ``dual_sgd`` (Algorithm 2, approximate).

``BUDRO_BENCH_THREADS`` (default 1) sets the BLAS and XGBoost threads of both arms (the machine has 2 cores).
``ROUNDS`` defaults to the paper's 180 steps (env ``BUDRO_BENCH_ROUNDS``); configurations via
``BUDRO_BENCH_CONFIGS`` (comma separated), output stem via ``BUDRO_BENCH_OUT``. Writes ``bench/results/budro.json`` and
``bench/results/budro.md`` (the markdown keeps the hand-written sections after the
``<!-- generated -->`` table). Run::

    FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python bench/bench_budro.py
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import platform
import resource
import sys
import time
from pathlib import Path

THREADS = int(os.environ.get("BUDRO_BENCH_THREADS", "1"))  # BLAS + XGBoost threads, both arms
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
RAW = Path(os.environ.get("FAIRMISS_DATA_MIRROR", Path(__file__).resolve().parents[2] / "shared" / "data" / "raw"))
ROUNDS = int(os.environ.get("BUDRO_BENCH_ROUNDS", "180"))
REPEATS = int(os.environ.get("BUDRO_BENCH_REPEATS", "3"))
APPROX_N = int(os.environ.get("BUDRO_BENCH_APPROX_N", "4000"))
CONFIGS = os.environ.get("BUDRO_BENCH_CONFIGS", "xgb_plain,budro_greedy,budro_greedy_aug,budro_dual").split(",")
EPS = 0.4
SEED = 0
logger = logging.getLogger("bench_budro")


def _adult():
    from sklearn.model_selection import train_test_split

    from fairmiss.datasets import get_variant
    df, _ = get_variant("adult_004").build(RAW)
    feats = [c for c in df.columns if c != "income"]
    X, y = df[feats], df["income"].to_numpy().astype(int)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=SEED, stratify=y)
    return Xtr, Xte, ytr, yte


def _tree_params(n, y):
    return dict(max_depth=14, reg_lambda=1e-4, min_child_weight=0.1 / n, learning_rate=0.005,
                scale_pos_weight=float(np.sum(y == 0) / np.sum(y == 1)), base_score=0.5)


def _run(config: str, q):
    logging.basicConfig(level=logging.WARNING)
    import xgboost as xgb

    from fairmiss.learners.budro.boosting import BuDROClassifier
    from fairmiss.learners.budro.metrics import balanced_accuracy, counterfactual_consistency, counterfactual_copies

    Xtr, Xte, ytr, yte = _adult()
    n = len(ytr)
    p = _tree_params(n, ytr)
    out = {"config": config, "n_train": n, "n_features": Xtr.shape[1]}
    t0, c0 = time.perf_counter(), time.process_time()
    if config == "xgb_plain":
        params = {"objective": "binary:logistic", "tree_method": "hist", "nthread": THREADS, "seed": SEED,
                  "max_depth": p["max_depth"], "lambda": p["reg_lambda"], "min_child_weight": p["min_child_weight"],
                  "eta": p["learning_rate"], "scale_pos_weight": p["scale_pos_weight"], "base_score": 0.5}
        booster = xgb.train(params, xgb.QuantileDMatrix(Xtr.to_numpy(np.float64), label=ytr), ROUNDS + 1)
        out["fit_seconds"], out["fit_cpu_seconds"] = time.perf_counter() - t0, time.process_time() - c0

        def predict(X):
            return (booster.predict(xgb.DMatrix(np.asarray(X, dtype=np.float64))) > 0.5).astype(int)
    else:
        method = config.split("_", 1)[1]
        mode = "gradient"
        if method.endswith("_aug"):
            method, mode = method[:-4], "augmented"
        clf = BuDROClassifier(eps=EPS, n_estimators=ROUNDS, ot_method=method, candidates="knn", n_neighbors=32,
                              xgb_mode=mode, random_state=SEED, n_jobs=THREADS, **p)
        clf.fit(Xtr, ytr, protected_columns=["gender", "race"], protected_target="gender")
        out["fit_seconds"], out["fit_cpu_seconds"] = time.perf_counter() - t0, time.process_time() - c0
        h = clf.history_
        paths = {}
        for pth in h["ot_path"]:
            paths[pth] = paths.get(pth, 0) + 1
        out.update(xgb_mode=mode, ot_paths=paths, robust_loss_last=h["robust_loss"][-1])
        out.update(candidate_seconds=clf.candidate_seconds_, solver_seconds=float(np.sum(h["solver_seconds"])),
                   boost_seconds=float(np.sum(h["boost_seconds"])),
                   budget_used_mean=float(np.nanmean(h["budget_used"])),
                   budget_used_max=float(np.nanmax(h["budget_used"])),
                   uncertified_columns_max=int(np.max(h["uncertified_columns"])),
                   robust_loss_first_last=[h["robust_loss"][0], h["robust_loss"][-1]],
                   certificate_gap_last=h["certificate_gap"][-1],
                   metric_attribute_accuracy=clf.fair_metric_.attribute_score_)
        predict = clf.predict
    yp = predict(Xte)
    spouse = counterfactual_copies(Xte, [[{"relationship_Husband": 1, "relationship_Wife": 0},
                                          {"relationship_Husband": 0, "relationship_Wife": 1}]])
    gr = counterfactual_copies(Xte, [[{"gender": 0}, {"gender": 1}], [{"race": 0}, {"race": 1}]])
    out.update(bacc=balanced_accuracy(yte, yp), s_cons=counterfactual_consistency(predict, spouse),
               gr_cons=counterfactual_consistency(predict, gr))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    q.put(out)


def _approx(config: str, q):
    """Effect of the kNN support (the one approximation left) on the robust loss.

    A random subsample of ``APPROX_N`` training points (all-pairs support is ``APPROX_N^2``
    entries), the fair metric of the full training set, margins of plain XGBoost (Table 6
    parameters) after 1, 60 and 181 rounds; the exact transport value on all pairs vs on the
    ``k`` nearest neighbours (same exact solver). Relative errors of the robust loss and of the
    certificate gap (robust - empirical loss).
    """
    import xgboost as xgb

    from fairmiss.learners.budro.fair_metric import FairMetric
    from fairmiss.learners.budro.ot import all_candidates, knn_candidates, solve_ot

    Xtr, _, ytr, _ = _adult()
    n = len(ytr)
    p = _tree_params(n, ytr)
    X = Xtr.to_numpy(np.float64)
    fm = FairMetric().fit(Xtr, protected_columns=["gender", "race"], protected_target="gender")
    params = {"objective": "binary:logistic", "tree_method": "hist", "nthread": THREADS, "seed": SEED,
              "max_depth": p["max_depth"], "lambda": p["reg_lambda"], "min_child_weight": p["min_child_weight"],
              "eta": p["learning_rate"], "scale_pos_weight": p["scale_pos_weight"], "base_score": 0.5}
    booster = xgb.train(params, xgb.QuantileDMatrix(X, label=ytr), ROUNDS + 1)
    idx = np.sort(np.random.RandomState(SEED).choice(n, APPROX_N, replace=False))
    Z, ys = fm.project(X[idx]), ytr[idx]
    full = all_candidates(Z)
    knn = {k: knn_candidates(Z, k=k) for k in (16, 32, 64)}
    rows = []
    for r in sorted({1, min(60, ROUNDS + 1), ROUNDS + 1}):
        f = booster.predict(xgb.DMatrix(X[idx]), output_margin=True, iteration_range=(0, r)).astype(np.float64)
        kw = dict(y=ys, loss0=np.logaddexp(0, f), loss1=np.logaddexp(0, -f), method="greedy")
        ex = solve_ot(full, EPS, **kw)
        for k, cand in knn.items():
            res = solve_ot(cand, EPS, **kw)
            rows.append({"rounds": r, "k": k, "robust_exact": ex.robust_loss, "robust_knn": res.robust_loss,
                         "rel_err_robust": (ex.robust_loss - res.robust_loss) / ex.robust_loss,
                         "gap_exact": ex.robust_loss - ex.empirical_loss, "gap_knn": res.robust_loss - res.empirical_loss,
                         "rel_err_gap": (ex.robust_loss - res.robust_loss) / (ex.robust_loss - ex.empirical_loss),
                         "eta_exact": ex.eta, "eta_knn": res.eta,
                         "uncertified_columns": res.info.get("uncertified_columns")})
    q.put({"config": config, "n_sub": APPROX_N, "rows": rows})


def _spawn(config):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_approx if config == "approx" else _run, args=(config, q))
    proc.start()
    res = q.get(timeout=3600)
    proc.join()
    return res


def _median(x):
    return float(np.median(np.asarray(x, dtype=float)))


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    OUT.mkdir(exist_ok=True)
    configs = CONFIGS
    runs = {c: [] for c in configs}
    for rep in range(REPEATS):
        for c in configs:  # interleaved: every repeat runs every configuration once
            logger.info("repeat %d: running %s (%d rounds)", rep, c, ROUNDS)
            r = _spawn(c)
            runs[c].append(r)
            logger.info("%s: %s", c, r)
    approx = _spawn("approx") if APPROX_N > 0 else None
    results = {}
    for c in configs:
        rs = runs[c]
        wall = [r["fit_seconds"] / b["fit_seconds"] for r, b in zip(rs, runs["xgb_plain"])]
        cpu = [r["fit_cpu_seconds"] / b["fit_cpu_seconds"] for r, b in zip(rs, runs["xgb_plain"])]
        agg = {k: _median([r[k] for r in rs]) for k in rs[0] if isinstance(rs[0][k], float)}
        agg.update({k: v for k, v in rs[-1].items() if k not in agg})
        agg.update(time_ratio_vs_xgb=_median(wall), cpu_ratio_vs_xgb=_median(cpu), wall_ratios=wall, cpu_ratios=cpu,
                   peak_rss_mb_max=max(r["peak_rss_mb"] for r in rs), repeats=len(rs))
        results[c] = agg
    meta = {"rounds": ROUNDS, "paper_rounds": 180, "eps": EPS, "n_neighbors": 32, "seed": SEED, "repeats": REPEATS,
            "threads": THREADS, "python": sys.version.split()[0], "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "load_avg_at_end": os.getloadavg(),
            "goal": "BuDRO <= 3x plain XGBoost time, peak < 4 GB"}
    stem = os.environ.get("BUDRO_BENCH_OUT") or ("budro" if THREADS == 1 else f"budro_threads{THREADS}")
    (OUT / f"{stem}.json").write_text(json.dumps({"meta": meta, "results": results, "runs": runs, "approx": approx}, indent=2))
    lines = [
        "# BuDRO vs plain XGBoost on Adult (paper 004)", "",
        f"Adult `adult_004`, one 80/20 split ({results['xgb_plain']['n_train']} training rows, "
        f"{results['xgb_plain']['n_features']} features), Table 6 tree parameters, eps = {EPS}, "
        f"{ROUNDS} BuDRO steps + f0 vs {ROUNDS + 1} XGBoost rounds (paper: 180), {THREADS} thread(s) (BLAS and XGBoost), "
        f"every run in its own process, {REPEATS} interleaved repeats, medians "
        f"(load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores). "
        "Support: 32 fair-metric nearest neighbours.", "",
        f"Command: `FAIRMISS_DATA_MIRROR=../shared/data/raw BUDRO_BENCH_THREADS={THREADS} "
        + (f"BUDRO_BENCH_OUT={stem} " if os.environ.get("BUDRO_BENCH_OUT") else "") +
        f"BUDRO_BENCH_REPEATS={REPEATS} BUDRO_BENCH_CONFIGS={','.join(configs)} BUDRO_BENCH_APPROX_N={APPROX_N} "
        ".venv/bin/python bench/bench_budro.py`", "",
        "<!-- generated -->",
        "| config | xgb_mode | fit s (wall) | ratio wall (median) | ratio CPU (median) | kNN s | OT s | boost s "
        "| peak RSS MB (max) | OT path (steps) | budget used (mean/max) | uncertified cols (max) | robust loss (last) "
        "| BAcc | S-cons | GR-cons |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in configs:
        r = results[c]
        paths = ", ".join(f"{k}: {v}" for k, v in r.get("ot_paths", {}).items()) or "-"
        lines.append(
            f"| {c} | {r.get('xgb_mode', '-')} | {r['fit_seconds']:.1f} | {r['time_ratio_vs_xgb']:.2f} "
            f"| {r['cpu_ratio_vs_xgb']:.2f} | {r.get('candidate_seconds', 0):.1f} "
            f"| {r.get('solver_seconds', 0):.1f} | {r.get('boost_seconds', 0):.1f} | {r['peak_rss_mb_max']:.0f} | {paths} "
            f"| {r.get('budget_used_mean', float('nan')):.3f}/{r.get('budget_used_max', float('nan')):.3f} "
            f"| {r.get('uncertified_columns_max', '-')} | {r.get('robust_loss_last', float('nan')):.5f} "
            f"| {r['bacc']:.3f} | {r['s_cons']:.3f} | {r['gr_cons']:.3f} |")
    lines += ["", "Per-repeat ratios (wall / CPU): " + "; ".join(
        f"{c}: " + ", ".join(f"{w:.2f}/{u:.2f}" for w, u in zip(results[c]['wall_ratios'], results[c]['cpu_ratios']))
        for c in configs if c != "xgb_plain"), ""]
    if approx is not None:
        lines += [f"kNN-support approximation on a random subsample of {approx['n_sub']} training points "
                  "(exact all-pairs transport vs the k nearest neighbours, same exact solver, margins of plain "
                  "XGBoost after r rounds):", "",
                  "| rounds r | k | robust exact | robust kNN | rel. err robust | rel. err certificate gap "
                  "| eta exact / kNN | uncertified cols |", "|---|---|---|---|---|---|---|---|"]
        for a in approx["rows"]:
            lines.append(f"| {a['rounds']} | {a['k']} | {a['robust_exact']:.6f} | {a['robust_knn']:.6f} "
                         f"| {a['rel_err_robust']:.2e} | {a['rel_err_gap']:.2e} | {a['eta_exact']:.4g} / {a['eta_knn']:.4g} "
                         f"| {a['uncertified_columns']} |")
        lines.append("")
    md = OUT / f"{stem}.md"
    tail = ""
    if md.exists() and "<!-- notes -->" in md.read_text():
        tail = md.read_text().split("<!-- notes -->", 1)[1]
    md.write_text("\n".join(lines) + "\n<!-- notes -->" + tail)
    logger.info("wrote %s", md)


if __name__ == "__main__":
    main()

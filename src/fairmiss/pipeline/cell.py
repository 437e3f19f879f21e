"""One cell: fit_evaluate (impute -> train -> evaluate), its parameters and cache key, CellResult."""

from __future__ import annotations

import copy
import logging
import time
import traceback
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from sklearn.pipeline import Pipeline

from fairmiss.datasets.prepare import Processed  # noqa: F401  (annotations)
from fairmiss.config import Cell, ExperimentConfig
from fairmiss.config.experiment import missingness_label
from fairmiss.impute.build import make_imputer, wrap_multiple
from fairmiss.learners.build import make_learner
from fairmiss.metrics import evaluate, group_confusion_matrices
from fairmiss.metrics.bootstrap import NOT_FROM_COUNTS, bootstrap_ci, interval_metrics
from fairmiss.missingness.mechanisms import mask_summary
from fairmiss.seeds import derive_seed

from fairmiss.pipeline.impute_cache import _shared_imputation
from fairmiss.pipeline.split import SplitData
logger = logging.getLogger(__name__)


@dataclass
class CellResult:
    key: str
    method: str
    split_index: int
    missingness: str
    imputer: str
    learner: str
    status: str
    metrics: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    seeds: dict = field(default_factory=dict)
    confusion: dict = field(default_factory=dict)
    mask_summary: pd.DataFrame | None = None
    model: object = None
    timings: dict = field(default_factory=dict)
    error: str | None = None
    reused_from: str | None = None
    #: tables logged as CSV artifacts of the cell's run, by file name (e.g. imputation diagnostics)
    tables: dict = field(default_factory=dict)


def cell_params(cfg: ExperimentConfig, cell: Cell) -> dict:
    """Flattened config of one cell (what MLflow records as params)."""
    p = {
        "experiment": cfg.experiment, "seed": cfg.seed, "dataset": cfg.dataset.name,
        "group_as_feature": cfg.dataset.group_as_feature, "split.index": cell.split_index,
        "split.test_size": cfg.split.test_size, "split.stratify": cfg.split.stratify,
        "missingness": missingness_label(cell.missingness), "imputer": cell.imputer.label,
        "learner": cell.learner.label,
    }
    for prefix, spec in (("missingness", cell.missingness), ("imputer", cell.imputer), ("learner", cell.learner)):
        for k, v in _flatten(spec.model_dump(mode="json", by_alias=True)).items():
            p[f"{prefix}.{k}"] = v
    for k, v in _flatten(cfg.dataset.options).items():
        p[f"dataset.options.{k}"] = v
    if cfg.split.seeds is not None:  # only when the config names its split seeds: other cells' keys unchanged
        p["split.seed"] = cfg.split.seeds[cell.split_index]
    cc = getattr(cfg, "complete_case", "none")
    if cc != "none":  # only when set, so the cache keys of every existing cell are unchanged
        p["complete_case"] = cc
    if getattr(cfg, "min_group_size", 0):
        p["min_group_size"] = cfg.min_group_size
    if not cfg.evaluation.is_default():  # only when set: the cache keys of every existing cell are unchanged
        p.update(_flatten(cfg.evaluation.model_dump(), "evaluation."))
    if getattr(cfg.dataset, "privileged", None) is not None:  # only when set (signed differences)
        p["dataset.privileged"] = cfg.dataset.privileged
    return p


def cell_cache_key(cfg: ExperimentConfig, cell: Cell, *, data_hash: str, code_version: str) -> str:
    """What a cell's result depends on, hashed: its own config (root seed, dataset options, split
    settings, missingness / imputer / learner specs — :func:`cell_params`), the metrics it computes
    (``metrics``, ``consistency``, ``extra_groups``, and ``fairness_metric``, whose bootstrap interval the cell
    records), the processed data's content hash and the code version. Never the DataFrames themselves.

    A re-run reuses every cell whose key matches a FINISHED run in the tracking store, so editing a
    sweep (adding a learner, a split, a missingness spec) recomputes only the new cells, and a crashed
    sweep resumes where it stopped. Cell seeds derive from the cell's own keys (``fairmiss.seeds``), so
    a reused cell is exactly what a recomputation would give."""
    from fairmiss.io import stable_hash

    p = {k: v for k, v in cell_params(cfg, cell).items() if k != "experiment"}
    return stable_hash({"cell": p, "metrics": list(cfg.metrics), "consistency": cfg.consistency,
                        "extra_groups": list(cfg.extra_groups), "fairness_metric": cfg.fairness_metric,
                        "data": data_hash, "code": code_version}, length=24)


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def fit_evaluate(cfg: ExperimentConfig, cell: Cell, data: Processed, split: SplitData, *, threads: int = 1,
                 keep_model: bool = True, fitted: dict | None = None) -> CellResult:
    """Impute (fit on train only) → train → evaluate on test. Failures are captured, not raised.

    ``keep_model=False`` leaves ``result.model`` empty: the flow passes ``tracking.log_models`` here,
    because a result crosses a process boundary under the Dask and process task runners and a fitted
    model can dwarf everything else in it (a 6000-tree random forest on COMPAS pickles to hundreds of MB).

    ``fitted``: one dict shared by the cells of a fit group (:attr:`fairmiss.config.Cell.fit_group`, the test
    scenarios of a ``shift`` with ``tests``), evaluated one after the other. The first cell fits the imputer
    on the training rows (through the imputation cache, keyed by the fit group) and the learner, and keeps
    them there as they were right after fitting; every cell, the first included, transforms and predicts its
    own test rows with a fresh copy of them, so each scenario's result is exactly that of a one-test shift
    (imputers and learners that draw at test time start from the same state). The training rows must be the
    same in every cell of the group (checked). The later cells record ``fit_seconds`` 0.
    """
    res = CellResult(
        key=cell.key, method=cell.method, split_index=cell.split_index,
        missingness=split.missingness, imputer=cell.imputer.label, learner=cell.learner.label,
        status="running", params=cell_params(cfg, cell), mask_summary=split.mask_summary,
    )
    seeds = {**split.seeds,
             "imputer": derive_seed(cfg.seed, "imputer", cell.imputer.label, cell.split_index),
             "learner": derive_seed(cfg.seed, "learner", cell.learner.label, cell.split_index),
             "bootstrap": derive_seed(cfg.seed, "bootstrap", cell.seed_key)}
    if cfg.evaluation.stability is not None:
        seeds["stability"] = derive_seed(cfg.seed, "stability", cell.seed_key)
    res.seeds = seeds
    df = data.df
    y = df[data.label].to_numpy()
    s = df[data.group].to_numpy()
    X = split.X.to_numpy(dtype=float)
    cc_mode = getattr(cfg, "complete_case", "none")
    complete = ~np.isnan(X).any(axis=1)
    tr, te = split.train_idx, split.test_idx
    if cc_mode in ("train", "both"):  # complete-case training: the imputer and the learner see complete rows
        tr = tr[complete[tr]]
        split = replace(split, train_idx=tr)  # the imputation cache keys on the training rows
    try:
        if cc_mode in ("test", "both") and not complete[te].any():
            raise ValueError("complete_case: no test row is complete")
        if len(np.unique(y[tr])) < 2:
            raise ValueError(f"single-class labels in the training split ({np.unique(y[tr]).tolist()})")
        t0 = time.perf_counter()

        def impute(test: bool = True):
            imp = make_imputer(cell.imputer, seeds["imputer"] % (2**31))
            a, b = X[tr], X[te] if test else X[:0]
            if imp is not None:
                from fairmiss.impute.imputers import requires_groups

                pg = requires_groups(imp)
                a = imp.fit_transform(a, **({"sensitive_features": s[tr]} if pg else {}))
                if test:
                    b = imp.transform(b, **({"sensitive_features": s[te]} if pg else {}))
            return imp, a, b

        if fitted is None:
            imputer, Xtr, Xte = _shared_imputation(cell, data, split, seeds["imputer"], impute)
        else:
            imputer, Xtr, Xte = _group_imputation(cell, data, split, seeds["imputer"], fitted, X, s,
                                                  lambda: impute(test=False))
        group_kw = {}
        if imputer is not None:
            from fairmiss.impute.imputers import requires_groups

            if requires_groups(imputer):
                group_kw = {"sensitive_features": s[te]}
        t1 = time.perf_counter()
        if fitted is not None and "learner" in fitted:  # a later cell of its fit group: the group's fit
            learner = fitted["learner"] if fitted["learner"].plain_forest else copy.deepcopy(fitted["learner"])
            t2 = t1  # no fit (the copy counts as prediction time)
        else:
            learner = _fit_learner(cfg, cell, data, seeds, threads, Xtr, y[tr], s[tr])
            if fitted is not None:  # as fitted, before any prediction (a forest's predictions change nothing in it)
                fitted["learner"] = learner if learner.plain_forest else copy.deepcopy(learner)
            t2 = time.perf_counter()
        pred, score = learner.predict_and_score(Xte, s[te])
        # every test row is predicted; complete_case test/both evaluates on the complete ones only
        cc_metrics = complete_case_metrics(cfg, y[te], pred, s[te], score, complete[te])
        keep = complete[te] if cc_mode in ("test", "both") else np.ones(len(te), dtype=bool)
        te_all, te = te, te[keep]
        pred, score, Xte_eval = pred[keep], (None if score is None else np.asarray(score)[keep]), Xte[keep]
        res.metrics = evaluate_cell(cfg, y[te], pred, s[te], score, seeds["bootstrap"])
        res.metrics.update(cc_metrics)
        res.metrics.update(consistency_metrics(cfg, data, learner, Xte_eval, imputer, X[te], s[te], pred))
        res.metrics.update(extra_group_metrics(cfg, data, te, y[te], pred))
        res.metrics.update(learner.fit_metrics())
        t3 = time.perf_counter()
        if cfg.evaluation.stability is not None:
            res.metrics.update(stability_of_cell(cfg, cell, data, Xtr, y[tr], s[tr], Xte_eval, y[te], s[te],
                                                 seeds["imputer"], threads,
                                                 copies=None if fitted is None else fitted.setdefault("copies", [])))
        t_stab = time.perf_counter() - t3
        res.metrics.update(signed_metrics(cfg, data, res.metrics))
        res.metrics["n_train"] = float(len(tr))
        res.metrics["n_test"] = float(len(te))
        res.confusion = group_confusion_matrices(y[te], pred, s[te])
        # the logged model maps raw features to predictions; with a per-group imputer or a learner
        # that needs the group at predict time, only the learner is logged (the group is data)
        steps = ([("impute", imputer)] if imputer is not None and not group_kw else []) + [("learner", learner.estimator)]
        if keep_model:
            res.model = Pipeline(steps) if not learner.needs_sensitive_predict else learner.estimator
        t4 = time.perf_counter()
        # imputation diagnostics are about the imputer: on every test row (complete rows hold nothing imputed)
        diag, tables = imputation_diagnostics(cell, data, split, imputer, learner, Xte, group_kw,
                                              pred if len(te) == len(te_all) else None,
                                              min_group_size=getattr(cfg, "min_group_size", 0),
                                              quality=cfg.evaluation.imputation_quality)
        res.metrics.update(diag)
        res.tables.update(tables)
        res.timings = {"impute_seconds": t1 - t0, "fit_seconds": t2 - t1, "predict_seconds": t4 - t2 - t_stab,
                       "diagnostics_seconds": time.perf_counter() - t4}
        if cfg.evaluation.stability is not None:
            res.timings["stability_seconds"] = t_stab
        res.status = "ok"
    except Exception as exc:  # captured so one failing cell does not kill the sweep
        logger.error("cell %s failed: %s", cell.key, exc)
        res.status = "failed"
        res.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"
    return res


def _fit_learner(cfg: ExperimentConfig, cell: Cell, data: Processed, seeds: dict, threads: int, Xtr, y_tr, s_tr):
    """The cell's learner, built with its seed (wrapped in multiple imputation for ``kind: multiple``) and fitted."""
    if cell.learner.kind == "mlflow_model":  # its loader lives in fairmiss.tracking (MLflow stays there)
        import fairmiss.tracking  # noqa: F401  (registers the loader; cells may run in fresh worker processes)
    learner = make_learner(cell.learner, seeds["learner"] % (2**31), threads=threads, feature_names=data.features)
    if cell.imputer.kind == "multiple":
        if learner.needs_sensitive_fit or learner.needs_sensitive_predict or learner.carve_validation:
            raise ValueError(f"the multiple imputer cannot wrap learner '{cell.learner.label}' (it needs the "
                             "group at fit or predict time)")
        learner.estimator = wrap_multiple(cell.imputer, learner.estimator, seeds["imputer"] % (2**31))
    learner.fit(Xtr, y_tr, s_tr)
    return learner


def _group_imputation(cell: Cell, data: Processed, split: SplitData, seed: int, fitted: dict, X, s, fit_train):
    """A fit group's imputation (:func:`fit_evaluate`, ``fitted``): the imputer fitted on the training rows once
    (``fit_train() -> (imputer, Xtr, empty)``; a shareable imputer through the process cache, keyed by the shift
    and its train spec, so the learners of a split share it as they do for any other missingness), then a fresh
    copy of it transforms this cell's test rows."""
    import json

    tr, te = split.train_idx, split.test_idx
    if "imputer" not in fitted:
        m = cell.missingness
        key = f"{m.fit_group} (fit, train {json.dumps(m.train, sort_keys=True)})"
        imp, a, _ = _shared_imputation(cell, data, replace(split, missingness=key), seed, fit_train)
        fitted.update(imputer=copy.deepcopy(imp), Xtr=a, train_rows=tr, train_X=X[tr])
    elif not (np.array_equal(fitted["train_rows"], tr)
              and np.array_equal(fitted["train_X"], X[tr], equal_nan=True)):
        raise RuntimeError(f"fit group {cell.fit_group}: the training rows differ between its test scenarios")
    imp = copy.deepcopy(fitted["imputer"])
    if imp is None:
        return None, fitted["Xtr"].copy(), X[te]
    from fairmiss.impute.imputers import requires_groups

    return imp, fitted["Xtr"].copy(), imp.transform(X[te], **({"sensitive_features": s[te]}
                                                               if requires_groups(imp) else {}))


#: the metrics a cell records a bootstrap confidence interval for, besides the config's ``fairness_metric``
CI_METRICS = ("accuracy",)


def _between_groups(key: str, metrics: dict) -> bool:
    """Whether ``key`` of :func:`~fairmiss.metrics.evaluate`'s dict compares groups (a difference, ratio or
    derived gap) rather than describing all rows (``fnr``) or one group (``fnr_group_0``)."""
    return "_group_" not in key and not any(k.startswith(f"{key}_group_") for k in metrics)


def evaluate_cell(cfg: ExperimentConfig, y_te, pred, s_te, score, seed: int) -> dict:
    """A cell's metrics on its evaluated test rows (:func:`~fairmiss.metrics.evaluate`) and bootstrap intervals
    (:func:`_intervals`; ``cfg.evaluation``: by default 95 %, 1000 resamples stratified by group, of accuracy and
    the fairness metric). With ``cfg.min_group_size`` a group with fewer test rows keeps its
    per-group metrics, is flagged (``left_out_group_<g>`` = 1, ``n_groups_left_out``) and is left out of every
    between-group value: the differences, ratios and derived gaps, and their intervals, are those of the other
    groups' rows (with fewer than two left: NaN, as for any one-group split); overall and per-group metrics and
    their intervals keep every row."""
    out = evaluate(y_te, pred, s_te, y_score=score, metrics=cfg.metrics)
    codes, sizes = np.unique(s_te, return_counts=True)
    small = codes[sizes < cfg.min_group_size]
    if len(small) == 0:
        out.update(_intervals(cfg, y_te, pred, s_te, seed, _interval_names(cfg, out), _rates(out)))
        if cfg.min_group_size:
            out["n_groups_left_out"] = 0.0
        return out
    kept = ~np.isin(s_te, small)
    between = evaluate(y_te[kept], pred[kept], s_te[kept], metrics=cfg.metrics,
                       y_score=None if score is None else np.asarray(score)[kept])
    out.update({k: v for k, v in between.items() if _between_groups(k, between)})
    names, rates = _interval_names(cfg, out), _rates(out)
    out.update(_intervals(cfg, y_te, pred, s_te, seed, [k for k in names if not _between_groups(k, out)], rates))
    out.update(_intervals(cfg, y_te[kept], pred[kept], s_te[kept], seed,
                          [k for k in names if _between_groups(k, out)], rates))
    out.update({f"left_out_group_{g}": 1.0 for g in small})
    out["n_groups_left_out"] = float(len(small))
    return out


def _rates(out: dict) -> list[str]:
    """The rates of ``evaluate``'s dict ``out`` that it computed per group (``fnr`` for ``fnr_group_0``)."""
    return sorted({k.split("_group_")[0] for k in out if "_group_" in k})


def _interval_names(cfg: ExperimentConfig, out: dict) -> list[str]:
    """The metrics of ``out`` that get an interval (``evaluation.intervals``): accuracy and the fairness metric,
    or every one the confusion counts give (not AUC, nor complete-case or consistency values)."""
    if cfg.evaluation.intervals == "headline":
        return list(dict.fromkeys((*CI_METRICS, cfg.fairness_metric)))
    return list(out)  # those the resamples give are kept (:func:`_intervals`)


def _intervals(cfg: ExperimentConfig, y_te, pred, s_te, seed: int, names: list, got_rates=()) -> dict:
    """Intervals of ``names`` (``cfg.evaluation``); with ``intervals: all``, ``got_rates`` are the rates
    ``evaluate`` computed per group (e.g. ``fn_share``), which the resamples then compute too."""
    ev = cfg.evaluation
    if not ev.bootstrap or not names:
        return {}
    if ev.intervals == "all":  # every metric the resamples give, of those asked for
        got = bootstrap_ci(y_te, pred, s_te, seed=seed, n_boot=ev.bootstrap, level=ev.ci, strata=ev.strata,
                           rates=[k for k in got_rates if k not in NOT_FROM_COUNTS])
        return interval_metrics({k: v for k, v in got.items() if k in names})
    return interval_metrics(bootstrap_ci(y_te, pred, s_te, seed=seed, names=names, n_boot=ev.bootstrap,
                                         level=ev.ci, strata=ev.strata))


def stability_of_cell(cfg: ExperimentConfig, cell: Cell, data: Processed, X_tr, y_tr, s_tr, X_te, y_te, s_te,
                      imputer_seed: int, threads: int = 1, copies: list | None = None) -> dict:
    """``evaluation.stability``: label stability, jitter, probability spread and the ensemble's metrics of
    bootstrap copies of the cell's learner (:mod:`fairmiss.pipeline.stability`), on the evaluated test rows.
    ``copies``: a fit group's fitted copies, shared by its scenario cells (fitted once, by the first)."""
    from fairmiss.pipeline.stability import cell_stability

    def make(seed):
        ln = make_learner(cell.learner, seed, threads=threads, feature_names=data.features)
        if cell.imputer.kind == "multiple":
            ln.estimator = wrap_multiple(cell.imputer, ln.estimator, imputer_seed % (2**31))
        return ln

    st = cfg.evaluation.stability
    return cell_stability(make, X_tr, y_tr, s_tr, X_te, y_te, s_te, root_seed=cfg.seed, cell_key=cell.seed_key,
                          estimators=st.estimators, fraction=st.fraction, metrics=cfg.metrics, copies=copies)


def signed_metrics(cfg: ExperimentConfig, data: Processed, metrics: dict) -> dict:
    """``dataset.privileged``: the signed differences (other group − privileged group, Virny's ``dis − priv``;
    :func:`fairmiss.metrics.stability.signed_differences`) of the config's ``metrics`` and, with
    ``evaluation.stability``, of the stability measures; groups left out by ``min_group_size`` give NaN."""
    priv = getattr(cfg.dataset, "privileged", None)
    if priv is None:
        return {}
    from fairmiss.metrics.stability import STABILITY_METRICS, signed_differences

    names = list(dict.fromkeys([*cfg.metrics, *(STABILITY_METRICS if cfg.evaluation.stability else ())]))
    groups = np.unique(data.df[data.group].to_numpy())
    left = [k[len("left_out_group_"):] for k in metrics if k.startswith("left_out_group_")]
    left = [g for g in groups if str(g) in left]
    return signed_differences(metrics, names, groups, priv, left_out=left)


def complete_case_metrics(cfg: ExperimentConfig, y_te, pred, s_te, score, complete_te) -> dict:
    """Complete-case measurement (Zhang & Long, NeurIPS 2021): when some test rows hold a missing value,
    the metrics on the complete test rows (``cc.<metric>``), their difference to the same metrics on every
    test row (``cc_bias.<metric>`` = complete-case − full: the error of estimating a fairness gap from
    complete cases, the quantity Zhang & Long bound) and ``cc.n_test``; with ``complete_case`` test/both
    also the full-test-set values (``full.<metric>``), since the cell's own metrics are then complete-case.
    Empty when every test row is complete (the two would be equal)."""
    complete_te = np.asarray(complete_te, dtype=bool)
    if complete_te.all() or not complete_te.any():
        return {}
    score = None if score is None else np.asarray(score, dtype=float)
    full = evaluate(y_te, pred, s_te, y_score=score, metrics=cfg.metrics)
    cc = evaluate(y_te[complete_te], pred[complete_te], s_te[complete_te],
                  y_score=None if score is None else score[complete_te], metrics=cfg.metrics)
    out = {"cc.n_test": float(complete_te.sum())}
    for k, v in cc.items():
        out[f"cc.{k}"] = v
        if k in full:
            out[f"cc_bias.{k}"] = float(v - full[k])
    if getattr(cfg, "complete_case", "none") in ("test", "both"):
        out.update({f"full.{k}": v for k, v in full.items()})
    return out


class _Predictor:
    """``predict(X)`` of a fitted learner on the test rows (the group is passed as data when needed)."""

    def __init__(self, learner, s):
        self.learner, self.s = learner, s

    def predict(self, X):
        return self.learner.predict(X, self.s)


class _Transformer:
    """``transform(X)`` through a fitted imputer's method, with the group when it needs one."""

    def __init__(self, fn, kw):
        self.fn, self.kw = fn, kw

    def transform(self, X):
        return self.fn(X, **self.kw)


def imputation_diagnostics(cell: Cell, data: Processed, split: SplitData, imputer, learner, Xte_imputed,
                           group_kw: dict, pred=None, *, min_group_size: int = 0,
                           quality: bool = False) -> tuple[dict, dict]:
    """Imputation-fairness diagnostics of one cell on the test split (paper 000 §3), as metrics and tables.

    * Missingness by group, for every imputer (``none`` included): the share of each group's rows of the
      split (train and test) whose value of a feature is missing, real or injected
      (:func:`~fairmiss.impute.diagnostics.missing_share_table`), as ``imp_miss.<col>_group_<g>`` and the
      table ``missing_by_group.csv``; with several group columns the groups are their intersections, so
      this says which intersection loses most data.
    * Definition 1 and per-group imputation error for every injected column, on the test cells that
      were masked and whose true (pre-injection) value is known (:func:`~fairmiss.impute.diagnostics.
      cell_imputation_diagnostics`); for the multiple imputer, over its m test-time draws. Skipped
      when the imputer is ``none`` (MIA: nothing is imputed) or nothing is masked in the test split.
    * With ``test_fit_on: test``, Theorem 2's bound (eq. 6, pushforward TV) comparing the learner on
      train-fitted vs test-fitted imputations of the test split, as ``mismatch_bound.*`` (``holds`` and
      ``complete_rows_agree`` are 1.0 / 0.0), plus the table ``mismatch_bound.csv``.

    Metric names: ``imp_miss.<col>_group_<g>``, ``imp_disc.<col>``, ``imp_{mse,rmse,bias}.<col>_group_<g>``,
    ``imp_thm1_disc.<col>``. Disc is taken over the groups with at least ``min_group_size`` test rows.
    With ``quality`` (``evaluation.imputation_quality``) also ``imp_{acc,f1,kl}.<col>[_group_<g>]`` and their
    gaps ``imp_{acc,f1,kl}_gap.<col>`` (:func:`~fairmiss.impute.diagnostics.imputation_quality`) and the table
    ``imputation_quality.csv``.
    Cost: ~3 ms CPU per cell on COMPAS (numpy on the test split; the imputed matrix is reused).
    """
    from fairmiss.impute.diagnostics import (cell_imputation_diagnostics, mismatch_bound, mismatch_bound_from_model,
                                             missing_share_table)

    metrics, tables = {}, {}
    s_all = data.df[data.group].to_numpy()
    shares = missing_share_table(split.X[data.features], sensitive_features=s_all)
    if not shares.empty:
        metrics.update({f"imp_miss.{r.feature}_group_{r.group}": r.share for r in shares.itertuples(index=False)})
        tables["missing_by_group.csv"] = shares
    if cell.imputer.kind == "none":
        return metrics, tables
    te = split.test_idx
    X_masked = split.X.to_numpy(dtype=float)[te]
    s_te = s_all[te]
    codes, sizes = np.unique(s_te, return_counts=True)
    if getattr(cell.imputer, "test_fit_on", "train") == "test" and imputer is not None:
        # rows with any missing entry (injected or real) are the M = 1 rows of the bound
        y_te = data.df[data.label].to_numpy()[te]
        if pred is None:
            b = mismatch_bound_from_model(
                _Predictor(learner, s_te), X_masked, y_te, sensitive_features=s_te,
                imputer_train=_Transformer(imputer.transform_train, group_kw),
                imputer_test=_Transformer(imputer.transform, group_kw))
        else:  # the same computation without refitting the test-time imputer: h(f^test(X̃)) is ``pred``
            y_train_imp = learner.predict(imputer.transform_train(X_masked, **group_kw), s_te)
            b = mismatch_bound(y_te, y_train_imp, pred, sensitive_features=s_te,
                               missing_rows=np.isnan(X_masked).any(axis=1))
        for k, v in b.items():
            metrics[f"mismatch_bound.{k}"] = float(v)
        tables["mismatch_bound.csv"] = pd.DataFrame([b])
    X_true = data.df[data.features].to_numpy(dtype=float)[te]
    mask = np.isnan(X_masked) & ~np.isnan(X_true)
    if not mask.any():
        return metrics, tables
    imputed = (learner.estimator.impute_draws(X_masked) if cell.imputer.kind == "multiple"
               else np.asarray(Xte_imputed, dtype=float))
    diag, table = cell_imputation_diagnostics(pd.DataFrame(X_true, columns=data.features), imputed, mask,
                                              sensitive_features=s_te, left_out=codes[sizes < min_group_size])
    metrics.update(diag)
    if not table.empty:
        tables["imputation_diagnostics.csv"] = table
    if quality:
        from fairmiss.impute.diagnostics import imputation_quality

        qm, qt = imputation_quality(pd.DataFrame(X_true, columns=data.features), imputed, mask,
                                    sensitive_features=s_te, categorical=categorical_features(data),
                                    left_out=codes[sizes < min_group_size])
        metrics.update(qm)
        if not qt.empty:
            tables["imputation_quality.csv"] = qt
    return metrics, tables


def categorical_features(data: Processed) -> list[str]:
    """The features the dataset registry types ``binary`` or ``categorical`` (one-hot columns are binary); for
    data the registry of this process does not know, the features whose values are all 0 or 1."""
    try:
        from fairmiss.datasets import get_variant

        types = get_variant(data.dataset).features
        return [c for c in data.features if types.get(c) in ("binary", "categorical")]
    except Exception:  # noqa: BLE001 — an own file registered in another process: read the values
        X = data.df[data.features]
        return [c for c in data.features if X[c].dropna().isin((0, 1)).all()]


EXTRA_GROUP_GAPS = ("tpr_difference", "fpr_difference", "selection_rate_difference", "accuracy_difference",
                    "equalized_odds_difference", "gap_rms")


def check_extra_groups(cfg: ExperimentConfig, data: Processed) -> None:
    """``extra_groups`` must name columns of the processed data with no missing value and at least two
    values; raises :class:`~fairmiss.config.ConfigError` naming the column (checked before any cell runs)."""
    from fairmiss.config import ConfigError

    for col in cfg.extra_groups:
        if col == data.group:
            raise ConfigError(f"extra_groups: '{col}' is the dataset's group already")
        if col not in data.df.columns:
            raise ConfigError(f"extra_groups: '{col}' is not a column of the processed {data.dataset} data; "
                              f"columns: {sorted(map(str, data.df.columns))}")
        v = data.df[col]
        if v.isna().any():
            raise ConfigError(f"extra_groups: column '{col}' of {data.dataset} has {int(v.isna().sum())} missing "
                              "values; a protected attribute used for gaps must be fully observed")
        if v.nunique() < 2:
            raise ConfigError(f"extra_groups: column '{col}' of {data.dataset} has a single value")


def extra_group_metrics(cfg, data, te, y_te, pred) -> dict:
    """Gaps against each of ``cfg.extra_groups`` on the test rows: ``<gap>_by_<column>``."""
    out = {}
    for col in cfg.extra_groups:
        m = evaluate(y_te, pred, data.df[col].to_numpy()[te], metrics=["accuracy", "fpr", "tpr", "selection_rate"])
        out.update({f"{k}_by_{col}": m[k] for k in EXTRA_GROUP_GAPS})
    return out


def consistency_metrics(cfg, data, learner, Xte_model, imputer, Xte_raw, s_te, pred) -> dict:
    """Counterfactual consistency (paper 004): share of test rows whose prediction is unchanged on
    every counterfactual copy (binary column flipped / every level of a one-hot block)."""
    from fairmiss.learners.budro.metrics import counterfactual_consistency, counterfactual_copies

    out = {}
    for name, cols in cfg.consistency.items():
        missing = [c for c in cols if c not in data.features]
        if missing:
            raise ValueError(f"consistency '{name}': columns {missing} are not features")
        idx = [data.features.index(c) for c in cols]
        block = [{idx[0]: 0}, {idx[0]: 1}] if len(idx) == 1 else [{j: int(j == k) for j in idx} for k in idx]
        copies = counterfactual_copies(Xte_raw, [block])
        if imputer is not None:
            from fairmiss.impute.imputers import requires_groups

            kw = {"sensitive_features": s_te} if requires_groups(imputer) else {}
            copies = [imputer.transform(c, **kw) for c in copies]
        out[f"consistency_{name}"] = counterfactual_consistency(lambda Z: learner.predict(Z, s_te), copies)
    return out


TIMING_KEYS = ("impute_seconds", "fit_seconds", "predict_seconds", "diagnostics_seconds", "stability_seconds")


def reused_result(cell: Cell, params: dict, metrics: dict, run_id: str) -> CellResult:
    """A cell result rebuilt from a FINISHED tracked run (resume): same metrics, no model."""
    return CellResult(
        key=cell.key, method=cell.method, split_index=cell.split_index, missingness=missingness_label(cell.missingness),
        imputer=cell.imputer.label, learner=cell.learner.label, status="ok", params=dict(params),
        metrics={k: v for k, v in metrics.items() if k not in TIMING_KEYS}, reused_from=run_id,
    )

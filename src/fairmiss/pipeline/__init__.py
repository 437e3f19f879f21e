"""Pure experiment steps, called by the thin Prefect tasks in ``tasks/``.

``prepare`` (raw → validated processed table) → for each split and missingness spec
``make_split`` (seeded split + injection + mask check) → for each cell ``fit_evaluate``
(impute on train only → train → evaluate on test → imputation-fairness diagnostics on the test
split, :func:`imputation_diagnostics`) → ``summarise`` (mean and standard error over splits per
method). Nothing here talks to Prefect, DVC or MLflow.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.pipeline import Pipeline

from fairmiss.config import Cell, ExperimentConfig, missingness_label
from fairmiss.datasets import get_variant
from fairmiss.datasets.validate import check_groups, suite_fingerprint, validate_table
from fairmiss.impute.build import make_imputer, wrap_multiple
from fairmiss.io import atomic_write_json, atomic_write_with
from fairmiss.learners.build import make_learner
from fairmiss.metrics import evaluate, group_confusion_matrices
from fairmiss.missingness.mechanisms import MissingnessError, check_mask, inject, mask_summary, masked_columns
from fairmiss.seeds import derive_seed
from fairmiss.missingness.splits import split_indices

logger = logging.getLogger(__name__)

SUMMARY_METRICS = (
    "accuracy", "balanced_accuracy", "auc", "fnr_difference", "fpr_difference", "tpr_difference",
    "equalized_odds_difference", "demographic_parity_difference", "accuracy_difference", "gap_rms",
)


def _extra_keys(results) -> list[str]:
    """Per-run metric keys summarised beside :data:`SUMMARY_METRICS`: consistencies and extra-group gaps."""
    return sorted({k for r in results for k in r.metrics if k.startswith("consistency_") or "_by_" in k})


def dataset_card(variant, df: pd.DataFrame, info: dict) -> str:
    """Markdown card of a processed table: source, licence, preprocessing, counts by group × label,
    missing values by group (logged with every run; the long-form cards are in docs/datasets.md)."""
    g, y = variant.group, variant.label
    lines = [f"# {variant.name}", "", variant.description, "",
             f"* paper: {variant.paper}", f"* synthetic: {'yes — NOT real data' if variant.synthetic else 'no'}"]
    for rf in variant.raw_files:
        lines.append(f"* raw file `{rf.filename}`: {rf.url or rf.note} (sha256 {rf.sha256}) {rf.licence}")
    lines.append("* preprocessing counts: " + ", ".join(f"{k} = {v}" for k, v in info.items() if k.startswith("rows")))
    lines.append(f"* options: {info.get('options')}")
    lines += ["", f"## rows by group ({g}) × label ({y})", ""]
    ct = pd.crosstab(df[g].map(lambda v: f"{v} ({variant.group_encoding.get(v, v)})"), df[y])
    lines.append(ct.to_string())
    miss = df[list(variant.features)].isna().groupby(df[g]).mean()
    miss = miss.loc[:, miss.any()]
    lines += ["", "## share of missing values by group", ""]
    lines.append("none" if miss.empty else miss.round(4).to_string())
    return "\n".join(lines) + "\n"


def frame_hash(df: pd.DataFrame) -> str:
    """Content hash of a table (values, column names and dtypes), independent of file format."""
    h = hashlib.sha256()
    h.update(",".join(f"{c}:{t}" for c, t in df.dtypes.astype(str).items()).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


@dataclass
class Processed:
    dataset: str
    df: pd.DataFrame
    features: list[str]
    group: str
    label: str
    info: dict
    data_hash: str
    docs_index: str | None = None


def _read_meta(meta: Path) -> dict:
    import json

    try:
        return json.loads(meta.read_text()) if meta.exists() else {}
    except ValueError:
        return {}


def validation_receipt(processed_dir: Path, stem: str, *, data_hash: str, suite: str,
                       docs_dir: Path | None = None) -> dict | None:
    """The stored metadata if this exact table (content hash) already passed this exact suite.

    Written by :func:`persist_processed` beside ``<stem>.parquet``; ``None`` when the table, the suite,
    the processed file or the requested Data Docs are not there, so the gate must run again.
    """
    processed_dir = Path(processed_dir)
    old = _read_meta(processed_dir / f"{stem}.json")
    receipt = old.get("validation")  # older metadata held a prose string here: no receipt
    ok = (old.get("data_hash") == data_hash and isinstance(receipt, dict) and receipt.get("suite") == suite
          and (processed_dir / f"{stem}.parquet").exists()
          and (docs_dir is None or (Path(docs_dir) / "index.html").exists()))
    return old if ok else None


def persist_processed(df: pd.DataFrame, info: dict, processed_dir: Path, stem: str) -> None:
    """Write ``<stem>.parquet`` and ``<stem>.json`` atomically, only when their content changed."""
    processed_dir = Path(processed_dir)
    target, meta = processed_dir / f"{stem}.parquet", processed_dir / f"{stem}.json"
    old = _read_meta(meta)
    if old.get("data_hash") != info["data_hash"] or not target.exists():
        atomic_write_with(target, lambda p: df.to_parquet(p, index=False), suffix=".parquet")
    if old != info:
        atomic_write_json(meta, info)


def _data_where(variant, raw_dir=None) -> str:
    """How an error names a dataset: its variant and raw file(s) (or 'synthetic')."""
    if variant.synthetic or not variant.raw_files:
        return f"dataset '{variant.name}' (synthetic)"
    from fairmiss.datasets.acquire import default_raw_dir

    base = Path(raw_dir) if raw_dir is not None else default_raw_dir()
    return f"dataset '{variant.name}' ({', '.join(str(base / rf.filename) for rf in variant.raw_files)})"


def _binary_label(variant) -> bool:
    return set(variant.label_encoding) == {0, 1}


def prepare(dataset_spec, *, raw_dir=None, processed_dir: Path = Path("processed"),
            docs_dir: Path | None = None, allow_download: bool = True, revalidate: bool = False,
            fairness_metric: str | None = None) -> Processed:
    """Build the processed table from raw files, validate it (GE gate), persist it atomically.

    The gate is skipped when the processed metadata holds a receipt saying that a table with the same
    content hash passed the same suite (:func:`fairmiss.datasets.validate.suite_fingerprint`; the suite is a
    pure function of the table, so the outcome cannot differ) — the expensive part of a re-run whose
    inputs did not change. ``revalidate=True`` (or ``FAIRMISS_REVALIDATE=1``) always runs it.
    """
    import os

    variant = get_variant(dataset_spec.name)
    df, info = variant.build(raw_dir, allow_download=allow_download, **dataset_spec.options)
    # fairness needs two groups (and both classes where the metric needs them): checked before the gate
    # and before anything is written (processed/ included); fairness_metric=None checks groups and classes
    check_groups(df, variant.group, variant.label, where=_data_where(variant, raw_dir),
                 fairness_metric=fairness_metric, binary_label=_binary_label(variant))
    opts_nondefault = {k: v for k, v in info["options"].items() if variant.options.get(k) != v}
    n_rows = None if not opts_nondefault else len(df)
    h = frame_hash(df)
    stem = variant.name if not opts_nondefault else f"{variant.name}-{h[:8]}"
    suite = suite_fingerprint(variant, n_rows)
    revalidate = revalidate or os.environ.get("FAIRMISS_REVALIDATE", "").lower() in ("1", "true", "yes")
    receipt = None if revalidate else validation_receipt(processed_dir, stem, data_hash=h, suite=suite,
                                                         docs_dir=docs_dir)
    if receipt is not None:
        n_expectations = int(receipt["n_expectations"])
        docs_index = Path(docs_dir) / "index.html" if docs_dir is not None else None
        logger.info("validation of %s: table %s already passed suite %s (%d expectations); not re-run",
                    variant.name, h, suite, n_expectations)
    else:
        report = validate_table(df, variant, docs_dir=docs_dir, n_rows=n_rows)
        n_expectations, docs_index = report.n_expectations, report.docs_index
    info = {**info, "data_hash": h, "n_expectations": n_expectations, "dataset": variant.name,
            "validation": {"suite": suite, "data_hash": h}}
    persist_processed(df, info, processed_dir, stem)
    info["validation_reused"] = receipt is not None
    info["card"] = dataset_card(variant, df, {k: v for k, v in info.items() if k != "card"})
    features = list(variant.features)
    if dataset_spec.group_as_feature:
        features = [*features, variant.group]
    return Processed(variant.name, df, features, variant.group, variant.label, info, h,
                     str(docs_index) if docs_index else None)


@dataclass
class SplitData:
    split_index: int
    missingness: str
    train_idx: np.ndarray
    test_idx: np.ndarray
    X: pd.DataFrame  # masked features, all rows
    mask_summary: pd.DataFrame
    seeds: dict


def make_split(cfg: ExperimentConfig, data: Processed, split_index: int, miss_spec) -> SplitData:
    """Seeded split stratified by group × label, then missingness injected and checked.

    Missingness is drawn on the whole table for each split (train and test share the
    mechanism, as in paper 000's protocol) with a seed derived from (split, missingness name);
    the split seed depends on the split index only, so every missingness spec, imputer and
    learner in split ``i`` sees the same rows.
    """
    df = data.df
    y = df[data.label].to_numpy()
    s = df[data.group].to_numpy()
    mlabel = missingness_label(miss_spec)
    seeds = {
        "split": derive_seed(cfg.seed, "split", split_index),
        "missingness": derive_seed(cfg.seed, "missingness", mlabel, split_index),
    }
    binary = set(np.unique(y).tolist()) <= {0, 1}
    # the configured fairness metric's needs on the whole table (before any model is fitted)
    files = sorted((data.info or {}).get("raw_sha256") or {})
    where = f"dataset '{data.dataset}'" + (f" (raw file(s) {', '.join(files)})" if files else "")
    check_groups(df, data.group, data.label, where=where, fairness_metric=cfg.fairness_metric, binary_label=binary)
    tr, te = split_indices(y, s, test_size=cfg.split.test_size, seed=seeds["split"] % (2**31),
                           stratify=cfg.split.stratify)
    # the training rows must hold two groups and two classes; a test split lacking a class in a group
    # only makes that split's gaps NaN (warned here and by fairmiss.metrics.evaluate), never 0
    check_groups(df.iloc[tr], data.group, data.label, where=f"{where}, split {split_index} (training rows)")
    _warn_test_split(df.iloc[te], data, split_index, cfg.fairness_metric, binary)
    X = df[data.features]
    if any(c in (data.group, data.label) for c in masked_columns(miss_spec)):
        raise MissingnessError(f"missingness '{mlabel}' would mask the group or the label")
    Xm, mask = inject(X, miss_spec, group=s, rng=np.random.default_rng(seeds["missingness"]),
                      protected=(data.group, data.label))
    problems = check_mask(mask, miss_spec, s, original=X, masked=Xm)
    if problems:
        raise MissingnessError(f"missingness '{mlabel}' failed validation: " + "; ".join(problems))
    all_missing = [c for c in Xm.columns if Xm[c].iloc[tr].isna().all()]
    if all_missing:
        logger.warning("split %d, %s: columns entirely missing in train: %s", split_index, mlabel, all_missing)
    return SplitData(split_index, mlabel, tr, te, Xm, mask_summary(mask, s), seeds)


def _warn_test_split(test: pd.DataFrame, data: Processed, split_index: int, metric: str, binary: bool) -> None:
    from fairmiss.datasets import DatasetError
    try:
        check_groups(test, data.group, data.label, where=f"split {split_index} (test rows)",
                     fairness_metric=metric, binary_label=binary)
    except DatasetError as exc:
        logger.warning("%s: the gaps of this split are NaN (undefined), not 0", exc)


def _masked_columns(spec) -> list[str]:
    return masked_columns(spec)


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
    return p


def cell_cache_key(cfg: ExperimentConfig, cell: Cell, *, data_hash: str, code_version: str) -> str:
    """What a cell's result depends on, hashed: its own config (root seed, dataset options, split
    settings, missingness / imputer / learner specs — :func:`cell_params`), the metrics it computes
    (``metrics``, ``consistency``, ``extra_groups``), the processed data's content hash and the code version. Never the DataFrames themselves.

    A re-run reuses every cell whose key matches a FINISHED run in the tracking store, so editing a
    sweep (adding a learner, a split, a missingness spec) recomputes only the new cells, and a crashed
    sweep resumes where it stopped. Cell seeds derive from the cell's own keys (``fairmiss.seeds``), so
    a reused cell is exactly what a recomputation would give."""
    from fairmiss.io import stable_hash

    p = {k: v for k, v in cell_params(cfg, cell).items() if k != "experiment"}
    return stable_hash({"cell": p, "metrics": list(cfg.metrics), "consistency": cfg.consistency,
                        "extra_groups": list(cfg.extra_groups), "data": data_hash, "code": code_version}, length=24)


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


#: imputers whose fitted state is read-only after fit (shared safely between the learners of a split)
_SHAREABLE_IMPUTERS = ("mean", "median", "most_frequent", "constant", "knn", "iterative")
_IMPUTE_CACHE: OrderedDict = OrderedDict()
_IMPUTE_LOCKS: dict = {}
_IMPUTE_GUARD = threading.Lock()
_IMPUTE_CACHE_SIZE = 8


def _shared_imputation(cell: Cell, data: Processed, split: SplitData, seed: int, compute):
    """Fit an imputer once per (data, split, missingness, imputer spec, seed) in this process and share
    it between the learners of that split. Every learner of split *i* gets the same imputer seed, so
    sharing gives exactly what refitting would — and k-NN imputation on Adult (~160 s a fit) is then
    paid once per split instead of once per learner. Imputers with test-time state (mismatch mode,
    multiple imputation) are never shared. Callers get their own copies of the arrays."""
    spec = cell.imputer
    if spec.kind not in _SHAREABLE_IMPUTERS or getattr(spec, "test_fit_on", "train") != "train":
        return compute()
    key = (data.data_hash, split.split_index, split.missingness, spec.model_dump_json(), seed,
           len(split.train_idx), int(split.train_idx[:16].sum()))
    with _IMPUTE_GUARD:
        lock = _IMPUTE_LOCKS.setdefault(key, threading.Lock())
    with lock:  # two workers asking for the same imputation: one computes, the other waits
        with _IMPUTE_GUARD:
            hit = _IMPUTE_CACHE.get(key)
            if hit is not None:
                _IMPUTE_CACHE.move_to_end(key)
        if hit is None:
            hit = compute()
            with _IMPUTE_GUARD:
                _IMPUTE_CACHE[key] = hit
                while len(_IMPUTE_CACHE) > _IMPUTE_CACHE_SIZE:
                    old, _ = _IMPUTE_CACHE.popitem(last=False)
                    _IMPUTE_LOCKS.pop(old, None)
    imp, a, b = hit
    return imp, a.copy(), b.copy()


def fit_evaluate(cfg: ExperimentConfig, cell: Cell, data: Processed, split: SplitData, *, threads: int = 1,
                 keep_model: bool = True) -> CellResult:
    """Impute (fit on train only) → train → evaluate on test. Failures are captured, not raised.

    ``keep_model=False`` leaves ``result.model`` empty: the flow passes ``tracking.log_models`` here,
    because a result crosses a process boundary under the Dask and process task runners and a fitted
    model can dwarf everything else in it (a 6000-tree random forest on COMPAS pickles to hundreds of MB).
    """
    res = CellResult(
        key=cell.key, method=cell.method, split_index=cell.split_index,
        missingness=split.missingness, imputer=cell.imputer.label, learner=cell.learner.label,
        status="running", params=cell_params(cfg, cell), mask_summary=split.mask_summary,
    )
    seeds = {**split.seeds,
             "imputer": derive_seed(cfg.seed, "imputer", cell.imputer.label, cell.split_index),
             "learner": derive_seed(cfg.seed, "learner", cell.learner.label, cell.split_index)}
    res.seeds = seeds
    df = data.df
    y = df[data.label].to_numpy()
    s = df[data.group].to_numpy()
    X = split.X.to_numpy(dtype=float)
    tr, te = split.train_idx, split.test_idx
    try:
        if len(np.unique(y[tr])) < 2:
            raise ValueError(f"single-class labels in the training split ({np.unique(y[tr]).tolist()})")
        t0 = time.perf_counter()

        def impute():
            imp = make_imputer(cell.imputer, seeds["imputer"] % (2**31))
            a, b = X[tr], X[te]
            if imp is not None:
                from fairmiss.impute.imputers import requires_groups

                pg = requires_groups(imp)
                a = imp.fit_transform(a, **({"sensitive_features": s[tr]} if pg else {}))
                b = imp.transform(b, **({"sensitive_features": s[te]} if pg else {}))
            return imp, a, b

        imputer, Xtr, Xte = _shared_imputation(cell, data, split, seeds["imputer"], impute)
        group_kw = {}
        if imputer is not None:
            from fairmiss.impute.imputers import requires_groups

            if requires_groups(imputer):
                group_kw = {"sensitive_features": s[te]}
        t1 = time.perf_counter()
        learner = make_learner(cell.learner, seeds["learner"] % (2**31), threads=threads, feature_names=data.features)
        if cell.imputer.kind == "multiple":
            if learner.needs_sensitive_fit or learner.needs_sensitive_predict or learner.carve_validation:
                raise ValueError(f"the multiple imputer cannot wrap learner '{cell.learner.label}' (it needs the "
                                 "group at fit or predict time)")
            learner.estimator = wrap_multiple(cell.imputer, learner.estimator, seeds["imputer"] % (2**31))
        learner.fit(Xtr, y[tr], s[tr])
        t2 = time.perf_counter()
        pred = learner.predict(Xte, s[te])
        score = learner.score(Xte, s[te])
        res.metrics = evaluate(y[te], pred, s[te], y_score=score, metrics=cfg.metrics)
        res.metrics.update(consistency_metrics(cfg, data, learner, Xte, imputer, X[te], s[te], pred))
        res.metrics.update(extra_group_metrics(cfg, data, te, y[te], pred))
        res.metrics["n_train"] = float(len(tr))
        res.metrics["n_test"] = float(len(te))
        res.confusion = group_confusion_matrices(y[te], pred, s[te])
        # the logged model maps raw features to predictions; with a per-group imputer or a learner
        # that needs the group at predict time, only the learner is logged (the group is data)
        steps = ([("impute", imputer)] if imputer is not None and not group_kw else []) + [("learner", learner.estimator)]
        if keep_model:
            res.model = Pipeline(steps) if not learner.needs_sensitive_predict else learner.estimator
        t4 = time.perf_counter()
        diag, tables = imputation_diagnostics(cell, data, split, imputer, learner, Xte, group_kw, pred)
        res.metrics.update(diag)
        res.tables.update(tables)
        res.timings = {"impute_seconds": t1 - t0, "fit_seconds": t2 - t1, "predict_seconds": t4 - t2,
                       "diagnostics_seconds": time.perf_counter() - t4}
        res.status = "ok"
    except Exception as exc:  # captured so one failing cell does not kill the sweep
        logger.error("cell %s failed: %s", cell.key, exc)
        res.status = "failed"
        res.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"
    return res


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
                           group_kw: dict, pred=None) -> tuple[dict, dict]:
    """Imputation-fairness diagnostics of one cell on the test split (paper 000 §3), as metrics and tables.

    * Definition 1 and per-group imputation error for every injected column, on the test cells that
      were masked and whose true (pre-injection) value is known (:func:`~fairmiss.impute.diagnostics.
      cell_imputation_diagnostics`); for the multiple imputer, over its m test-time draws. Skipped
      when the imputer is ``none`` (MIA: nothing is imputed) or nothing is masked in the test split.
    * With ``test_fit_on: test``, Theorem 2's bound (eq. 6, pushforward TV) comparing the learner on
      train-fitted vs test-fitted imputations of the test split, as ``mismatch_bound.*`` (``holds`` and
      ``complete_rows_agree`` are 1.0 / 0.0), plus the table ``mismatch_bound.csv``.

    Metric names: ``imp_disc.<col>``, ``imp_{mse,rmse,bias}.<col>_group_<g>``, ``imp_thm1_disc.<col>``.
    Cost: ~3 ms CPU per cell on COMPAS (numpy on the test split; the imputed matrix is reused).
    """
    from fairmiss.impute.diagnostics import cell_imputation_diagnostics, mismatch_bound, mismatch_bound_from_model

    metrics, tables = {}, {}
    if cell.imputer.kind == "none":
        return metrics, tables
    te = split.test_idx
    X_masked = split.X.to_numpy(dtype=float)[te]
    s_te = data.df[data.group].to_numpy()[te]
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
                                              sensitive_features=s_te)
    metrics.update(diag)
    if not table.empty:
        tables["imputation_diagnostics.csv"] = table
    return metrics, tables


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


TIMING_KEYS = ("impute_seconds", "fit_seconds", "predict_seconds", "diagnostics_seconds")


def reused_result(cell: Cell, params: dict, metrics: dict, run_id: str) -> CellResult:
    """A cell result rebuilt from a FINISHED tracked run (resume): same metrics, no model."""
    return CellResult(
        key=cell.key, method=cell.method, split_index=cell.split_index, missingness=missingness_label(cell.missingness),
        imputer=cell.imputer.label, learner=cell.learner.label, status="ok", params=dict(params),
        metrics={k: v for k, v in metrics.items() if k not in TIMING_KEYS}, reused_from=run_id,
    )


def summarise(results: list[CellResult]) -> dict:
    """Per missingness × method: mean and standard error over splits of the headline metrics."""
    keys = list(SUMMARY_METRICS) + _extra_keys(results)
    rows = [
        {"missingness": r.missingness, "method": r.method, **{k: r.metrics.get(k, math.nan) for k in keys}}
        for r in results if r.status == "ok"
    ]
    out: dict = {}
    if not rows:
        return out
    df = pd.DataFrame(rows)
    for (miss, method), g in df.groupby(["missingness", "method"], sort=True):
        entry = {"n_splits": int(len(g))}
        for k in keys:
            v = g[k].to_numpy(dtype=float)
            v = v[~np.isnan(v)]
            entry[f"{k}_mean"] = round(float(v.mean()), 10) if len(v) else None
            entry[f"{k}_se"] = round(float(v.std(ddof=1) / np.sqrt(len(v))), 10) if len(v) > 1 else None
        out.setdefault(miss, {})[method] = entry
    return out


def cells_table(results: list[CellResult]) -> pd.DataFrame:
    keys = list(SUMMARY_METRICS) + _extra_keys(results)
    df = pd.DataFrame([
        {"key": r.key, "split": r.split_index, "missingness": r.missingness, "imputer": r.imputer,
         "learner": r.learner, "status": r.status, **{k: r.metrics.get(k) for k in keys}}
        for r in results
    ])
    floats = df.select_dtypes("float").columns
    df[floats] = df[floats] + 0.0  # -0.0 is written as 0.0 (io.no_negative_zero)
    return df


def format_table(summary: dict, fairness_metric: str) -> str:
    lines = []
    for miss, methods in summary.items():
        lines.append(f"missingness: {miss}")
        lines.append(f"  {'method':40s} {'accuracy':>16s} {'bal.acc':>16s} {fairness_metric:>24s}")
        for m, e in methods.items():
            def f(k):
                mean, se = e.get(f"{k}_mean"), e.get(f"{k}_se")
                return "n/a" if mean is None else f"{mean:.3f} ± {se or 0:.3f}"
            lines.append(f"  {m:40s} {f('accuracy'):>16s} {f('balanced_accuracy'):>16s} {f(fairness_metric):>24s}")
    return "\n".join(lines)

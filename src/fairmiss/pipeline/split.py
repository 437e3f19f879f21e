"""One split of a prepared dataset: stratified train/test indices, injected missingness (make_split, SplitData)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairmiss.datasets.prepare import Processed  # noqa: F401  (annotations)
from fairmiss.config import ExperimentConfig
from fairmiss.config.experiment import missingness_label
from fairmiss.datasets.validate import check_groups
from fairmiss.missingness.mechanisms import (MissingnessError, RawCoding, check_mask, inject, mask_summary,
                                             masked_columns)
from fairmiss.seeds import derive_seed
from fairmiss.missingness.splits import split_indices

logger = logging.getLogger(__name__)


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
    mechanism, as in paper 000's protocol — unless the spec is a ``shift``, which draws its ``train`` and
    ``test`` mechanisms on the split's train and test rows) with a seed derived from (split, missingness name;
    for a test scenario of a shift with ``tests``, the shift's name, so that every scenario has the same
    training draw and the mask of the one-test shift of that name);
    the split seed depends on the split index only, so every missingness spec, imputer and
    learner in split ``i`` sees the same rows.
    """
    df = data.df
    y = df[data.label].to_numpy()
    s = df[data.group].to_numpy()
    mlabel = missingness_label(miss_spec)
    seeds = {
        "split": (derive_seed(cfg.seed, "split", split_index) if cfg.split.seeds is None
                  else cfg.split.seeds[split_index]),
        # a shift's test scenarios (``tests``) draw from their shift's generator: one training draw for all
        "missingness": derive_seed(cfg.seed, "missingness", getattr(miss_spec, "fit_group", None) or mlabel,
                                   split_index),
    }
    binary = set(np.unique(y).tolist()) <= {0, 1}
    # the configured fairness metric's needs on the whole table (before any model is fitted)
    files = sorted((data.info or {}).get("raw_sha256") or {})
    where = f"dataset '{data.dataset}'" + (f" (raw file(s) {', '.join(files)})" if files else "")
    check_groups(df, data.group, data.label, where=where, fairness_metric=cfg.fairness_metric, binary_label=binary)
    tr, te = split_rows(cfg, data, split_index)
    check_knn_rows(cfg, s, tr, te, split_index=split_index)
    # the training rows must hold two groups and two classes; a test split lacking a class in a group
    # only makes that split's gaps NaN (warned here and by fairmiss.metrics.evaluate), never 0
    check_groups(df.iloc[tr], data.group, data.label, where=f"{where}, split {split_index} (training rows)")
    _warn_test_split(df.iloc[te], data, split_index, cfg.fairness_metric, binary)
    X = df[data.features]
    if any(c in (data.group, data.label) for c in masked_columns(miss_spec)):
        raise MissingnessError(f"missingness '{mlabel}' would mask the group or the label")
    test_rows = np.zeros(len(df), dtype=bool)
    test_rows[te] = True
    # the label and the test rows reach kinds that need them (label-driven missingness, train/test shift), the
    # table's raw coding those that read raw attribute names (conditional)
    raw = raw_coding(data)
    Xm, mask = inject(X, miss_spec, group=s, rng=np.random.default_rng(seeds["missingness"]),
                      protected=(data.group, data.label), label=y, test_rows=test_rows, raw=raw)
    problems = check_mask(mask, miss_spec, s, original=X, masked=Xm, label=y, test_rows=test_rows, raw=raw)
    if problems:
        raise MissingnessError(f"missingness '{mlabel}' failed validation: " + "; ".join(problems))
    all_missing = [c for c in Xm.columns if Xm[c].iloc[tr].isna().all()]
    if all_missing:
        logger.warning("split %d, %s: columns entirely missing in train: %s", split_index, mlabel, all_missing)
    return SplitData(split_index, mlabel, tr, te, Xm, mask_summary(mask, s), seeds)


def raw_coding(data: Processed) -> RawCoding | None:
    """How the dataset's table codes the raw file's attributes (its variant's ``raw_coding``) with the table's
    columns beside the features (the group, the kept protected attributes); ``None`` for a table without one."""
    from fairmiss.datasets import get_variant

    try:
        coding = get_variant(data.dataset).raw_coding
    except KeyError:  # data the registry of this process does not know
        return None
    if not coding:
        return None
    df = data.df
    return RawCoding(coding, df.drop(columns=[c for c in (*data.features, data.label) if c in df.columns]))


def split_rows(cfg: ExperimentConfig, data: Processed, split_index: int) -> tuple[np.ndarray, np.ndarray]:
    """The training and test rows (positions) of split ``split_index``: seeded by the config's seed and the split
    index only (or by ``split.seeds[split_index]`` when the config names its seeds), stratified as
    ``split.stratify`` says (scikit-learn's ``ValueError`` when the data cannot give the split)."""
    df = data.df
    return split_indices(df[data.label].to_numpy(), df[data.group].to_numpy(), test_size=cfg.split.test_size,
                         seed=cfg.split.seed_of(cfg.seed, split_index), stratify=cfg.split.stratify)


def check_knn_rows(cfg: ExperimentConfig, group, train_idx, test_idx, *, split_index: int = 0,
                   source: str | None = None) -> None:
    """Every k-NN imputer has fewer neighbours than the rows it is fitted on: the training rows of the split
    (those of each group with ``per_group``; and the test rows with ``test_fit_on: test``). With ``n_neighbors``
    at least that many rows every row is a donor, and each missing value becomes its column's mean — mean
    imputation under the k-NN imputer's name (scikit-learn's ``KNNImputer`` uses all the donors there are without
    a word). Raises :class:`~fairmiss.config.ConfigError` naming ``imputers.<i>.knn.n_neighbors``. A column with
    fewer observed training values than ``n_neighbors`` (heavy missingness) still uses all of them, as in
    scikit-learn: that depends on the drawn mask, not on the config."""
    from fairmiss.config import ConfigError

    group = np.asarray(group)
    for i, imp in enumerate(cfg.imputers):
        if imp.kind != "knn":
            continue
        fitted_on = [("training rows", np.asarray(train_idx))]
        if imp.test_fit_on == "test":
            fitted_on.append(("test rows", np.asarray(test_idx)))
        for what, idx in fitted_on:
            n, where = len(idx), what
            if imp.per_group:
                values, counts = np.unique(group[idx], return_counts=True)
                j = int(np.argmin(counts))
                n, where = int(counts[j]), f"{what} of group {values[j]} (per_group: true)"
            if imp.n_neighbors >= n:
                raise ConfigError(
                    f"{source + ': ' if source else ''}imputers.{i}.knn.n_neighbors: {imp.n_neighbors} neighbours, "
                    f"but the imputer is fitted on the {n} {where} of split {split_index}: every row would be a "
                    f"donor and each missing value its column's mean (mean imputation, not k-NN); give fewer "
                    f"than {n} neighbours, or use kind: mean")


def _warn_test_split(test: pd.DataFrame, data: Processed, split_index: int, metric: str, binary: bool) -> None:
    from fairmiss.datasets import DatasetError
    try:
        check_groups(test, data.group, data.label, where=f"split {split_index} (test rows)",
                     fairness_metric=metric, binary_label=binary)
    except DatasetError as exc:
        logger.warning("%s: the gaps of this split are NaN (undefined), not 0", exc)


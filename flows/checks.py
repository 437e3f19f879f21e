"""The data's own checks of a run, before anything is written: the table built, its groups, classes and sizes,
the missingness scenarios drawn on the first split, the estimators given by import path test-fitted.

:func:`check_data` runs them before a command starts any server (``fairmiss run``, ``validate``, ``bench``);
the experiment flow's prepare step runs :func:`check_table` itself when no command checked the config first (a
scheduled deployment of ``fairmiss serve``, a run started from the Prefect UI), so ``processed/`` and the Data
Docs are written only for a table every check passed, whichever way the run started."""

from __future__ import annotations

import logging
from pathlib import Path

from fairmiss.io import safe_child

logger = logging.getLogger(__name__)


def check_data(cfg, raw_dir: str | None, processed_dir: str, source: str | None = None, *,
               write: bool = True) -> None:
    """The data's own checks before any server starts, when a flow is going to run and every raw file is on
    this machine (in the raw directory or the mirror): the table is built, its groups and classes checked, the
    run's checks of it made (:func:`check_table`: learners by import path fitted, group counts and sizes) and the
    validation gate run, as the flow's prepare step does — a one-group column, a class a metric needs that a group
    lacks, a malformed raw file answer in 1-3 s instead of after the Prefect server and the flow have started
    (8-25 s). Nothing is written until every check has passed (``processed/`` and the Data Docs then are); the
    flow's prepare step reuses the built table and the gate's receipt (:func:`fairmiss.datasets.prepare.prepare`),
    ~10 ms for a built-in dataset. ``write=False`` (``fairmiss validate``): the checks only, before the gate,
    writing nothing. Raw files still to download are left to the flow, whose acquire task retries network
    errors. Errors name ``source``, the config file."""
    from fairmiss.datasets import get_variant
    from fairmiss.datasets.acquire import raw_status
    from fairmiss.datasets.prepare import prepare

    variant = get_variant(cfg.dataset.name)
    if any(raw_status(rf, Path(raw_dir) if raw_dir else None) not in ("present", "in mirror")
           for rf in variant.raw_files):
        return
    docs = safe_child(Path("reports") / "datadocs", cfg.dataset.name, what="dataset.name")

    def checks(data) -> None:
        check_table(cfg, data, source)
        if not write:
            raise _Checked

    try:
        prepare(cfg.dataset, raw_dir=raw_dir, processed_dir=Path(processed_dir), docs_dir=docs,
                allow_download=False, fairness_metric=cfg.fairness_metric, check=checks)
    except _Checked:
        pass


class _Checked(Exception):
    """Stops :func:`fairmiss.datasets.prepare.prepare` once :func:`check_table` passed (``write=False``)."""


#: a group with fewer test rows than this in a split gets a warning pointing at ``min_group_size``
SMALL_GROUP_ROWS = 30


def check_table(cfg, data, source: str | None = None) -> None:
    """The run's checks of its built table, before anything is written: ``extra_groups`` columns, learners
    defined for two groups, the k-NN imputers' ``n_neighbors`` against the first split's rows (the flow checks
    every split's, :func:`fairmiss.pipeline.make_split`), ``min_group_size`` against each split's test rows,
    every missingness scenario on the first split (:func:`check_missingness`) and the import-path estimators
    (:func:`smoke_fit`). Groups with few test rows and no ``min_group_size`` get
    a warning naming them."""
    from fairmiss import pipeline

    pipeline.check_extra_groups(cfg, data)
    check_group_count(cfg, data, source)
    try:
        train, test = pipeline.split_rows(cfg, data, 0)
    except ValueError:  # a split the data cannot give: the flow's split step names it
        train = test = None
    if train is not None:
        pipeline.check_knn_rows(cfg, data.df[data.group].to_numpy(), train, test, source=source)
        check_group_sizes(cfg, data, source)
        check_missingness(cfg, data, source)
    smoke_fit(cfg, data, source)


def check_missingness(cfg, data, source: str | None = None) -> None:
    """Every missingness scenario drawn and gated on the first split, as the flow's split step does it: what only
    the data can refuse — a bucket value the condition column never takes, a rate a bucket cannot give, a column
    the raw coding does not know — is a :class:`~fairmiss.config.ConfigError` naming the scenario, before
    anything is written (the flow draws every split again)."""
    from fairmiss import pipeline
    from fairmiss.config import ConfigError
    from fairmiss.config.experiment import missingness_label
    from fairmiss.missingness.mechanisms import MissingnessError

    seen = set()
    for cell in cfg.cells():
        label = missingness_label(cell.missingness)
        if cell.split_index != 0 or label in seen:
            continue
        seen.add(label)
        try:
            pipeline.make_split(cfg, data, 0, cell.missingness)
        except MissingnessError as exc:
            raise ConfigError(f"{source + ': ' if source else ''}missingness '{label}': {exc}") from None


def check_group_sizes(cfg, data, source: str | None = None) -> None:
    """``min_group_size`` larger than every group's test rows in a split (each cell's evaluation would leave every
    group out) is a :class:`~fairmiss.config.ConfigError` naming the key, the value and the largest group; without
    ``min_group_size``, groups with fewer than :data:`SMALL_GROUP_ROWS` test rows in the first split are named in
    a warning: their rates, and every gap involving them, rest on a handful of rows."""
    import numpy as np

    from fairmiss import pipeline
    from fairmiss.config import ConfigError
    from fairmiss.datasets import get_variant

    names = {str(k): str(v) for k, v in get_variant(data.dataset).group_encoding.items()}  # no flow import
    group = data.df[data.group].to_numpy()
    where = f"{source}: " if source else ""
    for i in range(cfg.split.n_splits if cfg.min_group_size else 1):
        try:
            _, test = pipeline.split_rows(cfg, data, i)
        except ValueError:
            return
        codes, sizes = np.unique(group[test], return_counts=True)
        big = int(np.argmax(sizes))
        if cfg.min_group_size and sizes[big] < cfg.min_group_size:
            raise ConfigError(
                f"{where}min_group_size: {cfg.min_group_size} is more than the test rows of every group in split "
                f"{i} (largest: '{names.get(str(codes[big]), codes[big])}', {sizes[big]} rows of {len(test)}): "
                f"every group would be left out of every gap; give at most {sizes[big]}")
        small = [(names.get(str(c), str(c)), int(n)) for c, n in zip(codes, sizes) if n < SMALL_GROUP_ROWS]
        if small and not cfg.min_group_size:
            logger.warning("%sdataset %s: %d group(s) with fewer than %d test rows in split 0: %s; their rates and "
                           "every gap involving them rest on a handful of rows — set min_group_size: %d to leave "
                           "such groups out of the gaps (or use fewer group columns)", where, data.dataset,
                           len(small), SMALL_GROUP_ROWS, ", ".join(f"'{g}' ({n})" for g, n in small),
                           SMALL_GROUP_ROWS)


def check_group_count(cfg, data, source: str | None = None) -> None:
    """Learners defined for two groups (registered with ``two_groups=True``: the Fair MIP Forest's regulariser)
    are refused, naming the learner and the groups, when the data have more (e.g. intersectional groups). The
    config's load refuses them already when the dataset registry knows the groups
    (:func:`fairmiss.config.loading.check_two_group_learners`); this finds the rest (an own file's raw values)."""
    from fairmiss.config import ConfigError
    from fairmiss.learners.adapter import LEARNER_KINDS

    k = int(data.df[data.group].nunique())
    two = [(i, ln.label) for i, ln in enumerate(cfg.learners) if ln.kind in LEARNER_KINDS.with_flag("two_groups")]
    if k > 2 and two:
        raise ConfigError(f"{source + ': ' if source else ''}learners.{two[0][0]}: {two[0][1]} is defined for two "
                          f"groups, but the data have {k} groups in column '{data.group}'; use one group column "
                          "(or two-valued groups) with it, or another learner")


#: rows of each label the import-path estimators are test-fitted on before a flow starts
SMOKE_ROWS_PER_LABEL = 100


def smoke_fit(cfg, data, source: str | None = None) -> None:
    """Fit every import-path imputer and learner (``kind: estimator``: a user's class, whose parameter values
    only its ``fit`` checks — an XGBoost parameter of the wrong type, a penalty its solver does not support)
    once on a small sample of the data (the first :data:`SMOKE_ROWS_PER_LABEL` rows of each label, NaN
    mean-filled for a learner that does not take NaN), before any server starts: a failure is one
    :class:`~fairmiss.config.ConfigError` naming the estimator, instead of every cell failing after the flow
    started. Built-in kinds are not fitted here (their parameters are checked by their specs). ~0.1-1 s."""
    import numpy as np

    from fairmiss.config import ConfigError
    from fairmiss.impute.build import make_imputer
    from fairmiss.learners.build import make_learner

    where = f"{source}: " if source else ""
    imputers = [(i, imp) for i, imp in enumerate(cfg.imputers) if imp.kind == "estimator"]
    learners = [(i, ln) for i, ln in enumerate(cfg.learners) if ln.kind == "estimator"]
    if not imputers and not learners:
        return
    df = data.df
    y_all = df[data.label].to_numpy()
    rows = np.concatenate([np.flatnonzero(y_all == v)[:SMOKE_ROWS_PER_LABEL] for v in np.unique(y_all)])
    X = df[data.features].to_numpy(dtype=float)[rows]
    y, s = y_all[rows], df[data.group].to_numpy()[rows]
    for i, spec in imputers:
        try:
            make_imputer(spec, 0).fit(X)
        except Exception as exc:  # noqa: BLE001 - the user's class: any failure is reported, with its type
            raise ConfigError(f"{where}imputers.{i}: {spec.estimator} could not be fitted on a {len(rows)}-row sample of "
                              f"{data.dataset}: "
                              f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from None
    X_filled = np.where(np.isnan(X), np.nanmean(np.where(np.isnan(X), np.nan, X), axis=0), X)
    X_filled = np.nan_to_num(X_filled)  # a column missing on every sampled row
    for i, spec in learners:
        try:
            learner = make_learner(spec, 0, feature_names=data.features)
            learner.fit(X_filled, y, s)
            learner.predict(X_filled, s)
        except Exception as exc:  # noqa: BLE001 - the user's class: any failure is reported, with its type
            raise ConfigError(f"{where}learners.{i}: {spec.label} ({spec.estimator}) could not be fitted on a {len(rows)}-row "
                              f"sample of {data.dataset}: {type(exc).__name__}: "
                              f"{' '.join(str(exc).split())[:300]}") from None

"""Prefect tasks of the experiment flow. Each is a thin wrapper over :mod:`fairmiss.pipeline`.

Caching: tasks take DataFrames and fitted models, which Prefect would try to hash as inputs;
caching is therefore off here (``NO_CACHE``) and results are not persisted by Prefect. The
experiment's own outputs (processed table, results JSON, MLflow runs) are the record.
Retries are set only on the I/O task that fetches raw data, and only for transient network errors
(:func:`transient_network_error`): a checksum mismatch, a missing or unreadable file or a parse error
fails at once.

Errors in user input raised inside a task keep their type (the flow receives the task's own exception,
see ``flows.experiment``), and the split task adds the config file and key to the message.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from fairmiss import pipeline
from fairmiss.config import ExperimentConfig


def transient_network_error(exc: BaseException | None) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a network failure worth retrying: a
    connection error, a time-out, a broken transfer, or an HTTP 429 / 5xx answer."""
    import requests

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)):
            return True
        if isinstance(exc, requests.HTTPError) and exc.response is not None \
                and (exc.response.status_code == 429 or exc.response.status_code >= 500):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _retry_on_network_error(task, task_run, state) -> bool:
    """Prefect ``retry_condition_fn``: retry the failed run only for :func:`transient_network_error`."""
    try:
        exc = state.result(raise_on_failure=False)
    except Exception as err:  # the result itself could not be read: do not retry blindly
        exc = err
    return isinstance(exc, BaseException) and transient_network_error(exc)


@task(name="acquire-raw", retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=_retry_on_network_error,
      cache_policy=NO_CACHE)
def acquire_task(dataset: str, raw_dir: str | None = None) -> dict:
    from fairmiss.datasets import fetch
    from fairmiss.datasets import get_variant
    variant = get_variant(dataset)
    return {rf.filename: str(fetch(rf, Path(raw_dir) if raw_dir else None)) for rf in variant.raw_files}


@task(name="prepare-and-validate", cache_policy=NO_CACHE)
def prepare_task(dataset_spec, raw_dir: str | None, processed_dir: str, docs_dir: str | None,
                 fairness_metric: str | None = None, check=None) -> pipeline.Processed:
    """:func:`fairmiss.pipeline.prepare`; ``check``: the run's own checks of the built table, before anything
    is written (:func:`flows.checks.check_table`)."""
    return pipeline.prepare(dataset_spec, raw_dir=raw_dir, processed_dir=Path(processed_dir),
                            docs_dir=Path(docs_dir) if docs_dir else None, allow_download=False,
                            fairness_metric=fairness_metric, check=check)


@task(name="split-and-inject", cache_policy=NO_CACHE)
def split_task(cfg: ExperimentConfig, data: pipeline.Processed, split_index: int, miss_spec,
               config_path: str = "<config>") -> pipeline.SplitData:
    """:func:`fairmiss.pipeline.make_split`; a failure names the config file and key: ``missingness.<i>``
    for a :class:`~fairmiss.missingness.mechanisms.MissingnessError`, ``split`` for a split the data cannot give
    (e.g. ``test_size: 0.0001`` leaves fewer test rows than strata)."""
    from fairmiss.config import ConfigError
    from fairmiss.config.experiment import missingness_label
    from fairmiss.datasets import DatasetError
    from fairmiss.missingness.mechanisms import MissingnessError

    try:
        return pipeline.make_split(cfg, data, split_index, miss_spec)
    except MissingnessError as exc:
        label = missingness_label(miss_spec)
        owner = getattr(miss_spec, "fit_group", None) or label  # a shift's test scenario: the shift's entry
        i = next((j for j, m in enumerate(cfg.missingness) if missingness_label(m) == owner), "?")
        raise MissingnessError(f"{config_path}: missingness.{i} ('{label}'): {exc}") from exc
    except (ConfigError, DatasetError):  # DatasetError: fewer than two groups / classes (check_groups)
        raise
    except ValueError as exc:  # scikit-learn's train_test_split refusing the split
        raise ConfigError(f"{config_path}: split: test_size {cfg.split.test_size} with stratify "
                          f"'{cfg.split.stratify}' cannot split the {len(data.df)} rows of {data.dataset} "
                          f"(split {split_index}): {' '.join(str(exc).split())}") from exc


@task(name="impute-train-evaluate", cache_policy=NO_CACHE)
def fit_evaluate_task(cfg, cells, data, splits, threads: int = 1, sink=None) -> list[pipeline.CellResult] | None:
    """:func:`fairmiss.pipeline.fit_evaluate` on a batch of cells, in order (``execution.cells_per_task``), each
    with its own split (with the thread runner, possibly the split task's future: the cells then start before the
    flow has waited for the splits and the tracking store, and a failed split fails the batch with its error); the
    cells of one fit group (:attr:`fairmiss.config.Cell.fit_group`) are imputed and fitted once. With a ``sink`` (the thread runner's ``flows.experiment.CellSink``, same process) every
    result is handed over as soon as its cell finishes and the task returns None; otherwise the list of results.
    A cell's own failure is its result (``status``), not an exception, so one bad cell does not end the batch."""
    from prefect.futures import PrefectFuture

    out, fitted = [], {}
    try:
        for cell, split in zip(cells, splits, strict=True):
            if isinstance(split, PrefectFuture):  # thread runner: the split task's future, resolved here
                split = split.result()
            # the model travels back to the flow (pickled under Dask / process runners) only if it is logged;
            # the cells of a fit group (a shift's test scenarios) share one fit
            group = None if cell.fit_group is None else fitted.setdefault(cell.fit_group, {})
            res = pipeline.fit_evaluate(cfg, cell, data, split, threads=threads, keep_model=cfg.tracking.log_models,
                                        fitted=group)
            if sink is not None:
                if not sink.put(cell.key, res):
                    break  # the flow has stopped (an error or a signal): the rest of the batch is not wanted
            else:
                out.append(res)
    finally:
        if sink is not None:
            sink.end(cells[0].key)  # the batch is over (also on an exception): the flow stops waiting for it
            sink.done()
    return None if sink is not None else out

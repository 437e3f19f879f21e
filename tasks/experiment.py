"""Prefect tasks of the experiment flow. Each is a thin wrapper over :mod:`fairmiss.pipeline`.

Caching: tasks take DataFrames and fitted models, which Prefect would try to hash as inputs;
caching is therefore off here (``NO_CACHE``) and results are not persisted by Prefect. The
experiment's own outputs (processed table, results JSON, MLflow runs) are the record.
Retries are set only on the I/O task that fetches raw data.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from fairmiss import pipeline
from fairmiss.config import ExperimentConfig, load_config


@task(name="load-config", cache_policy=NO_CACHE)
def load_config_task(path: str) -> ExperimentConfig:
    return load_config(path)


@task(name="acquire-raw", retries=2, retry_delay_seconds=[2, 10], cache_policy=NO_CACHE)
def acquire_task(dataset: str, raw_dir: str | None = None) -> dict:
    from fairmiss.data import fetch, get_variant

    variant = get_variant(dataset)
    return {rf.filename: str(fetch(rf, Path(raw_dir) if raw_dir else None)) for rf in variant.raw_files}


@task(name="prepare-and-validate", cache_policy=NO_CACHE)
def prepare_task(dataset_spec, raw_dir: str | None, processed_dir: str, docs_dir: str | None) -> pipeline.Processed:
    return pipeline.prepare(dataset_spec, raw_dir=raw_dir, processed_dir=Path(processed_dir),
                            docs_dir=Path(docs_dir) if docs_dir else None, allow_download=False)


@task(name="split-and-inject", cache_policy=NO_CACHE)
def split_task(cfg: ExperimentConfig, data: pipeline.Processed, split_index: int, miss_spec) -> pipeline.SplitData:
    return pipeline.make_split(cfg, data, split_index, miss_spec)


@task(name="impute-train-evaluate", cache_policy=NO_CACHE)
def fit_evaluate_task(cfg, cell, data, split, threads: int = 1) -> pipeline.CellResult:
    # the model travels back to the flow (pickled under Dask / process runners) only if it is logged
    return pipeline.fit_evaluate(cfg, cell, data, split, threads=threads, keep_model=cfg.tracking.log_models)

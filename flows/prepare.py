"""Prepare flow: fetch/verify raw files, build the processed table, run the validation gate.

``python -m flows.prepare --dataset compas_000`` is the first stage of ``dvc.yaml`` (``--config CONFIG``: the
dataset of an experiment config, e.g. the user's own file — a DVC stage lists that file as a dep); it writes
``processed/<dataset>.parquet`` and ``processed/<dataset>.json`` (provenance: row counts after
each preprocessing step, raw SHA-256s, content hash) atomically, and Great Expectations Data Docs
under ``reports/datadocs/<dataset>/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":  # a DVC stage: the user's local Prefect server (started if needed), as `fairmiss run`
    # finds it, instead of a temporary server per stage; set before Prefect reads its settings at import
    from flows.server import use_local_server

    use_local_server()

from prefect import flow, get_run_logger  # noqa: E402

from fairmiss.config.experiment import DatasetSpec
from tasks.experiment import acquire_task, prepare_task


@flow(name="fairmiss-prepare")
def prepare_flow(dataset: str | DatasetSpec, processed_dir: str = "processed", raw_dir: str | None = None) -> dict:
    """``dataset``: a registered dataset's name, or a :class:`DatasetSpec` (own data: ``file`` + ``label`` …)."""
    log = get_run_logger()
    spec = dataset if isinstance(dataset, DatasetSpec) else DatasetSpec(name=dataset)
    dataset = spec.name
    acquire_task(dataset, raw_dir)
    data = prepare_task(spec, raw_dir, processed_dir, str(Path("reports") / "datadocs" / dataset))
    log.info("%s: %d rows, hash %s, provenance %s", dataset, len(data.df), data.data_hash,
             {k: v for k, v in data.info.items() if k.startswith("rows")})
    return data.info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.prepare")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--dataset", help="a registered dataset's name")
    which.add_argument("--config", help="an experiment config: prepare its dataset (e.g. your own file)")
    ap.add_argument("--processed-dir", default="processed")
    args = ap.parse_args(argv)
    from flows.errors import run_guarded

    def go():
        if args.config:
            from fairmiss.config import load_config

            return prepare_flow(load_config(args.config).dataset, args.processed_dir)
        return prepare_flow(args.dataset, args.processed_dir)

    return run_guarded(go)


if __name__ == "__main__":
    sys.exit(main())

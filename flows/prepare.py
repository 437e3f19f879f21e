"""Prepare flow: fetch/verify raw files, build the processed table, run the validation gate.

``python -m flows.prepare --dataset compas_000`` is the first stage of ``dvc.yaml``; it writes
``processed/<dataset>.parquet`` and ``processed/<dataset>.json`` (provenance: row counts after
each preprocessing step, raw SHA-256s, content hash) atomically, and Great Expectations Data Docs
under ``reports/datadocs/<dataset>/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prefect import flow, get_run_logger

from fairmiss.config import DatasetSpec
from tasks.experiment import acquire_task, prepare_task


@flow(name="fairmiss-prepare")
def prepare_flow(dataset: str, processed_dir: str = "processed", raw_dir: str | None = None) -> dict:
    log = get_run_logger()
    acquire_task(dataset, raw_dir)
    data = prepare_task(DatasetSpec(name=dataset), raw_dir, processed_dir, str(Path("reports") / "datadocs" / dataset))
    log.info("%s: %d rows, hash %s, provenance %s", dataset, len(data.df), data.data_hash,
             {k: v for k, v in data.info.items() if k.startswith("rows")})
    return data.info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.prepare")
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--processed-dir", default="processed")
    args = ap.parse_args(argv)
    from flows.errors import run_guarded

    return run_guarded(lambda: prepare_flow(args.dataset, args.processed_dir))


if __name__ == "__main__":
    sys.exit(main())

"""Pure experiment steps, called by the thin Prefect tasks in ``tasks/``.

``prepare`` (raw → validated processed table) → for each split and missingness spec
``make_split`` (seeded split + injection + mask check) → for each cell ``fit_evaluate``
(impute on train only → train → evaluate on test → imputation-fairness diagnostics on the test
split, :func:`imputation_diagnostics`) → ``summarise`` (mean and standard error over splits per
method). Nothing here talks to Prefect, DVC or MLflow.
"""

from __future__ import annotations

from fairmiss.missingness.splits import split_indices  # noqa: F401

# The steps, each from its module:
from fairmiss.datasets.prepare import (Processed, _binary_label, _data_where, _read_meta, dataset_card,  # noqa: F401
                                       frame_hash, persist_processed, prepare, validation_receipt)
from fairmiss.pipeline.cell import (EXTRA_GROUP_GAPS, TIMING_KEYS, CellResult, _flatten, _Predictor,  # noqa: F401
                                    _Transformer, cell_cache_key, cell_params, check_extra_groups,
                                    consistency_metrics, extra_group_metrics, fit_evaluate, imputation_diagnostics,
                                    reused_result)
from fairmiss.pipeline.impute_cache import (IMPUTE_CACHE, ImputationCache,  # noqa: F401
                                            _shared_imputation)
from fairmiss.pipeline.split import SplitData, _warn_test_split, check_knn_rows, make_split, split_rows  # noqa: F401
from fairmiss.pipeline.summary import (SUMMARY_METRICS, _extra_keys, cells_table, format_table, headline,  # noqa: F401
                                      gap_groups, one_split_intervals, summarise, tradeoff_table)

_IMPUTE_CACHE = IMPUTE_CACHE.entries  # the shared imputations (tests and benchmarks clear it)
_IMPUTE_LOCKS = IMPUTE_CACHE.locks
_IMPUTE_GUARD = IMPUTE_CACHE.guard
_IMPUTE_CACHE_SIZE = IMPUTE_CACHE.size

"""Pure experiment steps, called by the thin Prefect tasks in ``tasks/``.

``prepare`` (raw → validated processed table) → for each split and missingness spec
``make_split`` (seeded split + injection + mask check) → for each cell ``fit_evaluate``
(impute on train only → train → evaluate on test → imputation-fairness diagnostics on the test
split, :func:`imputation_diagnostics`) → ``summarise`` (mean and standard error over splits per
method). Nothing here talks to Prefect, DVC or MLflow.
"""

from __future__ import annotations

# names this module imported before K, kept importable from it
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
from fairmiss.missingness.splits import split_indices  # noqa: F401

logger = logging.getLogger(__name__)

# The former 618-line module, split. Every name importable from here before stays importable.
from fairmiss.datasets.prepare import (Processed, _binary_label, _data_where, _read_meta, dataset_card,  # noqa: F401
                                       frame_hash, persist_processed, prepare, validation_receipt)
from fairmiss.pipeline.cell import (EXTRA_GROUP_GAPS, TIMING_KEYS, CellResult, _flatten, _Predictor,  # noqa: F401
                                    _Transformer, cell_cache_key, cell_params, check_extra_groups,
                                    consistency_metrics, extra_group_metrics, fit_evaluate, imputation_diagnostics,
                                    reused_result)
from fairmiss.pipeline.impute_cache import (IMPUTE_CACHE, ImputationCache,  # noqa: F401
                                            _shared_imputation)
from fairmiss.pipeline.split import SplitData, _masked_columns, _warn_test_split, make_split  # noqa: F401
from fairmiss.pipeline.summary import (SUMMARY_METRICS, _extra_keys, cells_table, format_table, headline,  # noqa: F401
                                      gap_groups, one_split_intervals, summarise, tradeoff_table)

_IMPUTE_CACHE = IMPUTE_CACHE.entries  # the same dict as before K (tests and bench clear it)
_IMPUTE_LOCKS = IMPUTE_CACHE.locks
_IMPUTE_GUARD = IMPUTE_CACHE.guard
_IMPUTE_CACHE_SIZE = IMPUTE_CACHE.size

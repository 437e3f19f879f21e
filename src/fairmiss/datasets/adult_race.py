"""Adult with race as the protected group and its real missing values kept (``adult_race``).

Race is coded White (1) vs every other recorded race (0); gender becomes an ordinary binary feature.
By default (``missing: keep``) the rows whose ``workclass`` / ``occupation`` / ``native-country`` are
``?`` in the raw files stay, with the workclass and occupation one-hot columns NaN (native-country is not a
feature): 48,842 rows, 2,809 of them with a real (not injected) missing value, which injected missingness
then adds to. ``missing: drop`` gives the 45,222 rows complete in all three raw columns.
Encoding (numeric columns standardised, the same one-hots) as :mod:`fairmiss.datasets.adult`'s
``adult_004``.

Added as the demonstration that a dataset is one module (+ its test): it registers itself, and
:mod:`fairmiss.datasets` imports every dataset module of the package.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from fairmiss.datasets.adult import ADULT_DATA, ADULT_TEST, FEATURES_004, _build_004
from fairmiss.datasets.registry import DatasetError, DatasetVariant, register

logger = logging.getLogger(__name__)

__all__ = ["ADULT_RACE"]


def _build(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    if opts["missing"] not in ("drop", "keep"):
        raise DatasetError(f"adult_race: option 'missing' must be 'drop' or 'keep', got {opts['missing']!r}")
    out, info = _build_004(paths, {"missing": opts["missing"], "standardize": opts["standardize"]})
    info = {**info, "protected": ["race", "gender"],
            "counts_group_label": {f"g{g}_y{y}": int(n)
                                   for (g, y), n in out.groupby(["race", "income"]).size().items()},
            "rows_with_missing": int(out.isna().any(axis=1).sum())}
    logger.info("adult_race: %d rows, %d with a missing value", len(out), info["rows_with_missing"])
    return out, info


ADULT_RACE = register(
    DatasetVariant(
        name="adult_race",
        description="Adult, race (White vs other) as the group, real missing values kept (48842 rows), gender a feature",
        paper="platform variant (group = race), encoding as 004",
        raw_files=(ADULT_DATA, ADULT_TEST),
        builder=_build,
        features={**{k: v for k, v in FEATURES_004.items() if k != "race"}, "gender": "binary"},
        group="race",
        group_encoding={0: "other", 1: "White"},
        protected={"gender": {0: "female", 1: "male"}},
        label="income",
        label_encoding={0: "<=50K", 1: ">50K"},
        options={"missing": "keep", "standardize": True},
    )
)

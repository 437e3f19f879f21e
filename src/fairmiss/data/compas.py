"""COMPAS (ProPublica two-year recidivism file).

Variant ``compas_000`` follows paper 000 (spec 000 §3.1):

* ProPublica filter: ``days_b_screening_arrest`` in [-30, 30] (NaN dropped), ``is_recid != -1``,
  ``c_charge_degree != "O"``, ``score_text != "N/A"``: 7214 rows → 6172;
* African-American and Caucasian only: 5278 rows (3175 Black, 2103 White);
* Black rows randomly downsampled to the White count (seed ``balance_seed``, default 0, as the
  authors' code): 4206 rows. The label is not balanced. The authors' exact row draw is not
  reproducible (their RNG call is unknown), so the sampled rows differ from theirs; the counts match.
* inputs: 3 ``age_cat`` one-hots, ``sex`` (Female 0, Male 1), ``priors_count`` (raw count 0–38;
  scaling is left to learners — trees are invariant, the MIP scales to [0, 1] itself),
  ``c_charge_degree`` (F 0, M 1);
* group ``race``: 0 = Black (African-American), 1 = White (Caucasian); label ``two_year_recid``.

PII columns (``name``, ``first``, ``last``, ``dob``) are dropped immediately after reading.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.data.acquire import RawFile
from fairmiss.data.registry import DatasetError, DatasetVariant, read_csv_checked, register

logger = logging.getLogger(__name__)

COMPAS_RAW = RawFile(
    filename="compas-scores-two-years.csv",
    url="https://raw.githubusercontent.com/propublica/compas-analysis/master/compas-scores-two-years.csv",
    sha256="c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d",
    licence="ProPublica data, see https://github.com/propublica/compas-analysis",
)

_PII = ["name", "first", "last", "dob"]
_REQUIRED = [
    "age_cat", "race", "sex", "priors_count", "c_charge_degree", "two_year_recid",
    "days_b_screening_arrest", "is_recid", "score_text",
]
AGE_CATS = {"25 - 45": "age_cat_25-45", "Greater than 45": "age_cat_Greater-than-45", "Less than 25": "age_cat_Less-than-25"}


def read_compas(path: Path) -> pd.DataFrame:
    """Read the raw file, drop PII at once, check required columns and value sets."""
    df = read_csv_checked(path, _REQUIRED)
    df = df.drop(columns=[c for c in _PII if c in df.columns])
    for col, allowed in {"age_cat": set(AGE_CATS), "sex": {"Male", "Female"}, "c_charge_degree": {"F", "M", "O"}}.items():
        bad = set(df[col].dropna().unique()) - allowed
        if bad:
            raise DatasetError(f"{path}: column '{col}' has unexpected values {sorted(map(str, bad))[:5]}")
    for col in ["priors_count", "two_year_recid", "is_recid", "days_b_screening_arrest"]:
        if not pd.api.types.is_numeric_dtype(df[col]):
            raise DatasetError(f"{path}: column '{col}' is not numeric (dtype {df[col].dtype})")
    return df


def propublica_filter(df: pd.DataFrame) -> pd.DataFrame:
    keep = (
        df["days_b_screening_arrest"].between(-30, 30)
        & (df["is_recid"] != -1)
        & (df["c_charge_degree"] != "O")
        & (df["score_text"].notna())
        & (df["score_text"] != "N/A")
    )
    return df.loc[keep]


def _build_000(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[COMPAS_RAW.filename]
    raw = read_compas(path)
    info = {"rows_raw": len(raw)}
    df = propublica_filter(raw)
    info["rows_filtered"] = len(df)
    df = df[df["race"].isin(["African-American", "Caucasian"])]
    info["rows_black_white"] = len(df)
    black = np.flatnonzero((df["race"] == "African-American").to_numpy())
    white = np.flatnonzero((df["race"] == "Caucasian").to_numpy())
    info["rows_black"], info["rows_white"] = len(black), len(white)
    if opts["balance"]:
        rng = np.random.default_rng(opts["balance_seed"])
        keep_black = np.sort(rng.choice(black, size=min(len(white), len(black)), replace=False))
        df = df.iloc[np.sort(np.concatenate([keep_black, white]))]
    info["rows_processed"] = len(df)
    out = pd.DataFrame(index=df.index)
    for raw_val, col in AGE_CATS.items():
        out[col] = (df["age_cat"] == raw_val).astype("int64")
    out["sex"] = (df["sex"] == "Male").astype("int64")
    out["priors_count"] = df["priors_count"].astype("float64")
    out["c_charge_degree"] = (df["c_charge_degree"] == "M").astype("int64")
    out["race"] = (df["race"] == "Caucasian").astype("int64")
    out["two_year_recid"] = df["two_year_recid"].astype("int64")
    logger.info("compas_000: %s", info)
    return out.reset_index(drop=True), info


COMPAS_000 = register(
    DatasetVariant(
        name="compas_000",
        description="COMPAS, paper 000 variant: ProPublica filter, Black/White balanced to 2103 each, 6 inputs",
        paper="000 (Fair MIP Forest), spec 000 §3.1",
        raw_files=(COMPAS_RAW,),
        builder=_build_000,
        features={
            "age_cat_25-45": "binary",
            "age_cat_Greater-than-45": "binary",
            "age_cat_Less-than-25": "binary",
            "sex": "binary",
            "priors_count": "numeric",
            "c_charge_degree": "binary",
        },
        group="race",
        group_encoding={0: "Black", 1: "White"},
        label="two_year_recid",
        label_encoding={0: "no recidivism", 1: "recidivated within two years"},
        expected_rows=4206,
        numeric_ranges={"priors_count": (0, 38)},
        options={"balance": True, "balance_seed": 0},
    )
)

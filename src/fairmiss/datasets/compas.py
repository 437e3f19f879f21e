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

from fairmiss.datasets.acquire import RawFile
from fairmiss.datasets.csvcheck import read_csv_strict
from fairmiss.datasets.registry import DatasetError, DatasetVariant, register

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
# numeric columns read by some variant (checked for finite values when present)
_NUMERIC = ["priors_count", "two_year_recid", "is_recid", "days_b_screening_arrest", "juv_fel_count",
            "juv_misd_count", "juv_other_count", "age", "decile_score", "c_days_from_compas", "r_days_from_arrest"]
AGE_CATS = {"25 - 45": "age_cat_25-45", "Greater than 45": "age_cat_Greater-than-45", "Less than 25": "age_cat_Less-than-25"}


def read_compas(path: Path) -> pd.DataFrame:
    """Read the raw file, drop PII at once, check required columns and value sets.

    Read strictly (:func:`fairmiss.datasets.csvcheck.read_csv_strict`): a truncated line, a duplicated
    required column with different values, a non-UTF-8 byte or a non-finite number (``inf``, ``nan``
    text) in a numeric column is a :class:`DatasetError` naming the file, line and column.
    """
    df = read_csv_strict(path, _REQUIRED, numeric=_NUMERIC)
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
        protected={"sex": {0: "Female", 1: "Male"}},
        label="two_year_recid",
        label_encoding={0: "no recidivism", 1: "recidivated within two years"},
        expected_rows=4206,
        numeric_ranges={"priors_count": (0, 38)},
        options={"balance": True, "balance_seed": 0},
    )
)


# --------------------------------------------------------------------------------------
# Variants of papers 002, 003 and 004 (appended; compas_000 above is unchanged).
# --------------------------------------------------------------------------------------

def _require(df: pd.DataFrame, path: Path, cols: list[str], numeric: bool = False) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise DatasetError(f"{path}: missing required column(s) {missing}")
    if numeric:
        for col in cols:
            if not pd.api.types.is_numeric_dtype(df[col]):
                raise DatasetError(f"{path}: column '{col}' is not numeric (dtype {df[col].dtype})")


def _check_race(df: pd.DataFrame, path: Path) -> None:
    """The group column must be fully observed and hold ProPublica's race labels."""
    race = df["race"]
    if race.isna().all():
        raise DatasetError(f"{path}: group column 'race' is all missing")
    if race.isna().any():
        raise DatasetError(f"{path}: group column 'race' has {int(race.isna().sum())} missing value(s)")
    bad = sorted(set(race.unique()) - set(RACES))
    if bad:
        raise DatasetError(f"{path}: group column 'race' has unknown category code(s) {bad[:5]}")


def _zscore(x: pd.Series) -> pd.Series:
    x = x.astype("float64")
    sd = x.std(ddof=0)
    return (x - x.mean()) / (sd if sd > 0 else 1.0)


# ---- 002: OG / SOG (spec 002 §2.3) -----------------------------------------------------
BASE_002 = ["juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count", "sex", "age"]


def _interaction_names() -> list[str]:
    from itertools import combinations

    names = ["const"]
    for k in range(1, len(BASE_002) + 1):
        names += ["*".join(c) for c in combinations(BASE_002, k)]
    return names


FEATURES_002 = {n: ("binary" if n == "sex" else "numeric") for n in _interaction_names()}


def _build_002(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[COMPAS_RAW.filename]
    raw = read_compas(path)
    _require(raw, path, ["juv_fel_count", "juv_misd_count", "juv_other_count", "age"], numeric=True)
    _check_race(raw, path)
    info = {"rows_raw": len(raw)}
    df = propublica_filter(raw) if opts["filter"] == "propublica" else raw
    if opts["filter"] not in ("propublica", "none"):
        raise DatasetError(f"compas_002: option 'filter' must be 'propublica' or 'none', got {opts['filter']!r}")
    info["rows_filtered"] = len(df)
    base = pd.DataFrame({c: df[c].astype("float64") for c in BASE_002 if c != "sex"}, index=df.index)
    base["sex"] = (df["sex"] == "Male").astype("float64")
    out = pd.DataFrame(index=df.index)
    for name in FEATURES_002:
        if name == "const":
            out[name] = 1.0
            continue
        prod = np.prod([base[c].to_numpy() for c in name.split("*")], axis=0)
        out[name] = prod
    if opts["standardize"]:  # every product column except the constant and the binary main effect
        for name in out.columns:
            if name not in ("const", "sex"):
                out[name] = _zscore(out[name])
    out["sex"] = out["sex"].astype("int64")
    out["race"] = (df["race"] == "Caucasian").astype("int64")
    out["two_year_recid"] = df["two_year_recid"].astype("int64")
    info["rows_processed"] = len(out)
    info["counts_group_label"] = {f"g{g}_y{y}": int(n) for (g, y), n in out.groupby(["race", "two_year_recid"]).size().items()}
    logger.info("compas_002: %s", info)
    return out.reset_index(drop=True), info


COMPAS_002 = register(
    DatasetVariant(
        name="compas_002",
        description="COMPAS, paper 002 variant: 6 base variables and all their interactions (64 columns incl. constant), White vs non-White",
        paper="002 (orthogonal representations), spec 002 §2.3",
        raw_files=(COMPAS_RAW,),
        builder=_build_002,
        features=FEATURES_002,
        group="race",
        group_encoding={0: "non-White", 1: "White"},
        protected={"sex": {0: "Female", 1: "Male"}},
        label="two_year_recid",
        label_encoding={0: "no recidivism", 1: "recidivated within two years"},
        expected_rows=6172,
        options={"filter": "propublica", "standardize": True},
        option_domains={"filter": ("propublica", "none")},
    )
)


# ---- 003: GFE forest on the decile score (spec 003 §9.2) --------------------------------
RACES = ["African-American", "Asian", "Caucasian", "Hispanic", "Native American", "Other"]
CHARGE_DEGREES = ["none", "(CO3)", "(F1)", "(F2)", "(F3)", "(F4)", "(F5)", "(F6)", "(F7)",
                  "(M1)", "(M2)", "(M3)", "(MO3)", "(NI0)", "(X)"]
DATE_ORIGIN = pd.Timestamp("2013-01-01")
FEATURES_003 = {
    "sex": "binary", "age": "numeric", "race_code": "categorical", "juv_fel_count": "numeric",
    "juv_misd_count": "numeric", "juv_other_count": "numeric", "priors_count": "numeric",
    "days_b_screening_arrest": "numeric", "c_jail_in": "numeric", "c_jail_out": "numeric",
    "c_days_from_compas": "numeric", "r_charge_degree": "categorical",
    "r_days_from_arrest": "numeric", "vr_charge_degree": "categorical",
}


def _days(path: Path, s: pd.Series, col: str) -> pd.Series:
    t = pd.to_datetime(s, errors="coerce", format="%Y-%m-%d %H:%M:%S")
    bad = t.isna() & s.notna()
    if bad.any():
        raise DatasetError(f"{path}: column '{col}' has unparseable datetime(s) {s[bad].astype(str).head(3).tolist()}")
    return (t - DATE_ORIGIN) / pd.Timedelta(days=1)


def _degree(path: Path, s: pd.Series, col: str) -> pd.Series:
    s = s.fillna("none")
    bad = sorted(set(s.unique()) - set(CHARGE_DEGREES))
    if bad:
        raise DatasetError(f"{path}: column '{col}' has unknown category code(s) {bad[:5]}")
    return s.map({v: i for i, v in enumerate(CHARGE_DEGREES)}).astype("int64")


def _build_003(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[COMPAS_RAW.filename]
    raw = read_compas(path)
    _require(raw, path, ["juv_fel_count", "juv_misd_count", "juv_other_count", "age", "decile_score",
                         "c_days_from_compas", "r_days_from_arrest"], numeric=True)
    _require(raw, path, ["c_jail_in", "c_jail_out", "r_charge_degree", "vr_charge_degree"])
    if opts["filter"] not in ("propublica", "none"):
        raise DatasetError(f"compas_003: option 'filter' must be 'propublica' or 'none', got {opts['filter']!r}")
    info = {"rows_raw": len(raw)}
    df = propublica_filter(raw) if opts["filter"] == "propublica" else raw
    info["rows_filtered"] = len(df)
    _check_race(df, path)
    dec = df["decile_score"]
    if dec.isna().any() or not dec.between(1, 10).all():
        raise DatasetError(f"{path}: label column 'decile_score' must be integers 1..10, got "
                           f"{sorted(dec[~dec.between(1, 10)].unique().tolist())[:5]}")
    out = pd.DataFrame(index=df.index)
    out["sex"] = (df["sex"] == "Male").astype("int64")
    out["age"] = df["age"].astype("float64")
    out["race_code"] = df["race"].map({r: i for i, r in enumerate(RACES)}).astype("int64")
    for c in ["juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count",
              "days_b_screening_arrest", "c_days_from_compas", "r_days_from_arrest"]:
        out[c] = df[c].astype("float64")
    for c in ["c_jail_in", "c_jail_out"]:
        out[c] = _days(path, df[c], c)
    for c in ["r_charge_degree", "vr_charge_degree"]:
        out[c] = _degree(path, df[c], c)
    out = out[list(FEATURES_003)]
    out["african_american"] = (df["race"] == "African-American").astype("int64")
    out["decile_score"] = dec.astype("int64")
    info["rows_processed"] = len(out)
    info["missing_by_column"] = {c: int(n) for c, n in out.isna().sum().items() if n}
    info["label_mean_by_group"] = {int(g): float(m) for g, m in out.groupby("african_american")["decile_score"].mean().items()}
    logger.info("compas_003: %s", info)
    return out.reset_index(drop=True), info


COMPAS_003 = register(
    DatasetVariant(
        name="compas_003",
        description="COMPAS, paper 003 variant: decile score (1..10) regression target, 14 features incl. race, African-American vs not",
        paper="003 (GFE forests), spec 003 §9.2",
        raw_files=(COMPAS_RAW,),
        builder=_build_003,
        features=FEATURES_003,
        group="african_american",
        group_encoding={0: "not African-American", 1: "African-American"},
        protected={"sex": {0: "Female", 1: "Male"}},
        label="decile_score",
        label_encoding={i: f"decile {i}" for i in range(1, 11)},
        expected_rows=7214,
        numeric_ranges={"race_code": (0, len(RACES) - 1), "r_charge_degree": (0, len(CHARGE_DEGREES) - 1),
                        "vr_charge_degree": (0, len(CHARGE_DEGREES) - 1), "age": (0, 120)},
        options={"filter": "none"},
        option_domains={"filter": ("propublica", "none")},
    )
)


# ---- 004: BuDRO (spec 004 §2.1) --------------------------------------------------------
FEATURES_004 = {
    "sex": "binary",
    **{col: "binary" for col in AGE_CATS.values()},
    "c_charge_degree": "binary",
    "priors_count": "numeric",
}


def _build_004(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[COMPAS_RAW.filename]
    raw = read_compas(path)
    _check_race(raw, path)
    info = {"rows_raw": len(raw)}
    df = propublica_filter(raw)
    info["rows_filtered"] = len(df)
    df = df[df["race"].isin(["African-American", "Caucasian"])]
    info["rows_black_white"] = len(df)
    out = pd.DataFrame(index=df.index)
    out["sex"] = (df["sex"] == "Male").astype("int64")
    for raw_val, col in AGE_CATS.items():
        out[col] = (df["age_cat"] == raw_val).astype("int64")
    out["c_charge_degree"] = (df["c_charge_degree"] == "M").astype("int64")
    out["priors_count"] = _zscore(df["priors_count"]) if opts["standardize"] else df["priors_count"].astype("float64")
    out["race"] = (df["race"] == "Caucasian").astype("int64")
    out["two_year_recid"] = df["two_year_recid"].astype("int64")
    info["rows_processed"] = len(out)
    info["protected"] = ["race", "sex"]
    info["counts_group_label"] = {f"g{g}_y{y}": int(n) for (g, y), n in out.groupby(["race", "two_year_recid"]).size().items()}
    logger.info("compas_004: %s", info)
    return out.reset_index(drop=True), info


COMPAS_004 = register(
    DatasetVariant(
        name="compas_004",
        description="COMPAS, paper 004 (BuDRO) variant: 5278 rows, 7 features incl. race (group) and sex",
        paper="004 (BuDRO), spec 004 §2.1",
        raw_files=(COMPAS_RAW,),
        builder=_build_004,
        features=FEATURES_004,
        group="race",
        group_encoding={0: "non-Caucasian (African-American)", 1: "Caucasian"},
        protected={"sex": {0: "Female", 1: "Male"}},
        label="two_year_recid",
        label_encoding={0: "no recidivism", 1: "recidivated within two years"},
        expected_rows=5278,
        options={"standardize": True},
    )
)

"""The five tables of the Shades-of-Null evaluation suite (Khan et al., arXiv 2409.07510), coded as the suite
codes them: ``bank``, ``law_school``, ``diabetes``, ``cardio`` and ``german_son``.

The raw files are those that the Virny library ships (repository DataResponsibly/Virny, tag 0.6.0, folder
``virny/datasets/data/``), which the suite loads through Virny's data loaders. The coding follows those loaders
and the suite's own settings (its ``configs/datasets_config.py`` and ``configs/yaml_files/*_config.yaml``):

* the columns Virny drops are dropped (bank ``duration``, ``contact``, ``poutcome``; cardio ``id``), its
  missing markers become missing values (bank ``unknown``), its text clean-up is repeated (diabetes
  ``RegularMedicine`` ``o`` = ``no``, ``BPLevel`` case and blanks, ``Diabetic`` blanks; ``Pregancies`` renamed
  ``Pregnancies``), cardio's age in days becomes whole years;
* numeric columns are Virny's numerical columns, raw (scaling is a pipeline step fitted on train, as the suite
  scales in its model pipeline); every categorical column is one-hot encoded (the suite's ``OneHotEncoder``):
  one 0/1 column ``<column>_<level>`` per level, a two-level attribute as one 0/1 column named after it;
  a missing value makes the whole block missing (NaN), so injected missingness adds to the real one;
* the protected attributes are the keys of the suite's ``sensitive_attributes_dct``; the suite removes them
  from the model inputs, so they are never features here: they are the group column and the ``protected``
  columns (``dataset.group: [a, b]`` intersects them). The value the suite lists is its disadvantaged group,
  coded 0; the other is coded 1 (``dataset.privileged`` takes its name or code).

**Raw attribute names** (``raw_coding`` of each variant; the Shades-of-Null missingness presets and any
``conditional`` spec name the raw files' columns, :mod:`fairmiss.missingness.conditional`):

* a one-hot attribute (``checking-account``, bank ``job``, law school ``fam_inc``, cardio ``cholesterol``, …) is
  its block ``{raw value: column}`` (:data:`ONEHOT_COLUMNS`): masking it blanks the whole block in that row, and
  a condition value selects the rows whose column for that value is 1;
* a binary attribute, the group and the protected attributes keep their raw name and hold codes
  (``{raw value: code}``, as above: German ``sex`` female = 0, law school ``male`` 0/1 and ``race``
  Non-White = 0, cardio ``gender`` 1 = 0 and 2 = 1, bank ``marital`` single = 0, diabetes ``Family_Diabetes``
  no = 0): a condition value is a raw value, mapped to its code;
* binned: the suite's MAR scenarios read the raw ages of German credit (``age <= 25``) and bank (``age < 30``),
  which the group / protected bands (``age_band``) cannot give (bank's band is 25-60). The raw ``age`` (whole
  years) is kept in the table beside the features under its raw name: never a feature, never masked, read by
  conditions only; law school's ``male`` is kept beside the features in the same way;
* renamed: diabetes ``Pregancies`` is the column ``Pregnancies``; cardio's ``age`` is in whole years, not the
  file's days (the suite's threshold of 50 is in years).

Every text cell is compared with surrounding blanks removed (``german_data_credit.csv`` writes ``'>= 200 DM '``)
against the complete list of levels below: an unknown level, a non-numeric or non-integer value where a number or
code is expected, a truncated line or a wrong delimiter is a :class:`DatasetError` naming file, line and column.
Duplicate rows are kept, as the suite keeps them (their count is in the build info and the dataset cards).
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

__all__ = ["BANK", "CARDIO", "DIABETES", "GERMAN_SON", "LAW_SCHOOL", "ONEHOT_COLUMNS", "code", "onehot", "read_raw"]

_VIRNY = "https://raw.githubusercontent.com/DataResponsibly/Virny/0.6.0/virny/datasets/data/"
_PAPER = "Shades of Null (Khan et al., arXiv 2409.07510); coding of Virny 0.6.0's loader"


def _raw(filename: str, sha256: str, licence: str) -> RawFile:
    return RawFile(filename, _VIRNY + filename, sha256, note="as shipped by Virny 0.6.0 (virny/datasets/data/)",
                   licence=licence)


BANK_RAW = _raw("bank-full.csv", "03e78e93396e664a079dff3e1df1b40b6359b1f9945adfb9a09ceabd0fb79193",
                "CC BY 4.0 (UCI Machine Learning Repository, Bank Marketing, Moro et al. 2014)")
LAW_RAW = _raw("law_school_clean.csv", "23c1b173f3480beb7afc4957b107a9917dfc4a8dc9d87ea6034ec35222152452",
               "none stated (LSAC National Longitudinal Bar Passage Study, Wightman 1998, as cleaned by Le Quy "
               "et al. 2022)")
DIABETES_RAW = _raw("diabetes_dataset__2019.csv", "ff50221a906049407e40b069e4a7aa1575441ef3e915c1e97690cfbfdf7e7faf",
                    "none stated in Virny (Kaggle tigganeha4/diabetes-dataset-2019; Tigga & Garg 2019)")
CARDIO_RAW = _raw("cardio.csv", "21a705d23381b0dfd6a6416da701b490744f1fc3b47e9ff3db3968c420ffa10c",
                  "none stated in Virny (Kaggle sulianova/cardiovascular-disease-dataset)")
GERMAN_RAW = _raw("german_data_credit.csv", "0b656ef2cbd849d7e445ad5f2dc06d3f5335efdb4171d35876afba6b0b94219e",
                  "CC BY 4.0 (UCI Statlog German credit, Hofmann 1994; named columns by Le Quy et al. 2022)")

YES_NO = {"no": 0, "yes": 1}


# ---- reading and coding ---------------------------------------------------------------------------------------

def read_raw(path: Path, columns: list[str], numeric: list[str], *, sep: str = ",",
             allow_missing=False) -> tuple[pd.DataFrame, np.ndarray]:
    """The raw table (text columns stripped of surrounding blanks, numeric columns float64) and each row's line
    number, read strictly (:func:`fairmiss.datasets.csvcheck.read_csv_strict`)."""
    df, lines = read_csv_strict(path, columns, numeric=numeric, allow_missing=allow_missing, sep=sep,
                                columns="required", return_lines=True, dtype=str)
    for c in columns:
        if c not in numeric:
            df[c] = df[c].str.strip().replace("", np.nan)
    return df, lines


def _first(mask, lines) -> int:
    return int(lines[int(np.flatnonzero(np.asarray(mask, dtype=bool))[0])])


def _integral(path: Path, x: pd.Series, lines, column: str) -> None:
    frac = (x % 1 != 0) & x.notna()
    if frac.any():
        raise DatasetError(f"{path}: line {_first(frac, lines)}, column '{column}': non-integer value "
                           f"{x[frac].iloc[0]!r} ({int(frac.sum())} such cell(s)); expected a whole number")


def code(path: Path, values: pd.Series, lines, column: str, levels: dict, *, missing=(), allow_missing=False,
         fold=None) -> pd.Series:
    """``values`` mapped through ``levels`` (raw value -> code or level name); the ``missing`` markers and empty
    cells become NaN (an error unless ``allow_missing``), any other value is an error naming line and column.
    ``fold`` normalises text before the lookup (e.g. ``str.lower``)."""
    v = values if fold is None else values.map(lambda x: fold(x) if isinstance(x, str) else x)
    na = v.isna() | v.isin(list(missing))
    unknown = ~na & ~v.isin(list(levels))
    if unknown.any():
        i = int(np.flatnonzero(unknown.to_numpy())[0])
        shown = ", ".join(repr(k if not isinstance(k, float) else int(k)) for k in levels)
        raise DatasetError(f"{path}: line {int(lines[i])}, column '{column}': unknown value {values.iloc[i]!r} "
                           f"({int(unknown.sum())} such cell(s)); expected one of {shown}"
                           + (f" or the missing marker(s) {list(missing)}" if missing else ""))
    if na.any() and not allow_missing:
        raise DatasetError(f"{path}: line {_first(na, lines)}, column '{column}': missing value "
                           f"({int(na.sum())} such cell(s)); this column may not have missing values")
    return v.where(~na).map(levels)


def onehot(coded: pd.Series, column: str, levels) -> dict[str, pd.Series]:
    """One 0/1 column ``<column>_<level>`` per level (int64; float64 with the whole block NaN where ``coded`` is
    missing)."""
    na = coded.isna()
    out = {}
    for lv in levels:
        x = (coded == lv).astype("int64")
        out[f"{column}_{lv}"] = x.astype("float64").mask(na) if na.any() else x
    return out


def _binary(coded: pd.Series) -> pd.Series:
    return coded.astype("float64") if coded.isna().any() else coded.astype("int64")


def _onehot_types(spec: dict[str, dict]) -> dict[str, str]:
    return {f"{c}_{lv}": "binary" for c, lvs in spec.items() for lv in dict.fromkeys(lvs.values())}


def _onehot_coding(spec: dict[str, dict]) -> dict[str, dict]:
    """The ``raw_coding`` entries of one-hot attributes: ``{raw column: {"onehot": {raw value: column}}}``."""
    return {c: {"onehot": {raw: f"{c}_{lv}" for raw, lv in levels.items()}} for c, levels in spec.items()}


def _coded(spec: dict[str, dict]) -> dict[str, dict]:
    """The ``raw_coding`` entries of columns holding codes under their raw name ``{c: {"column": c, "codes": …}}``."""
    return {c: {"column": c, "codes": dict(levels)} for c, levels in spec.items()}


def _info(raw: pd.DataFrame, out: pd.DataFrame, group: str, label: str, **extra) -> dict:
    """Row counts, duplicates (among the raw columns read, and of the processed rows: kept, as the suite keeps
    them), missing values by column and the group x label counts."""
    return {"rows_raw": len(raw), "duplicate_rows_raw": int(raw.duplicated().sum()), **extra,
            "rows_processed": len(out), "duplicate_rows_processed": int(out.duplicated().sum()),
            "missing_by_column": {c: int(n) for c, n in out.isna().sum().items() if n},
            "counts_group_label": {f"g{g}_y{y}": int(n) for (g, y), n in out.groupby([group, label]).size().items()}}


# ---- bank -----------------------------------------------------------------------------------------------------

BANK_NUMERIC = ["balance", "day", "campaign", "pdays", "previous"]
BANK_ONEHOT = {
    "job": {v: v for v in ["admin.", "blue-collar", "entrepreneur", "housemaid", "management", "retired",
                           "self-employed", "services", "student", "technician", "unemployed"]},
    "education": {v: v for v in ["primary", "secondary", "tertiary"]},
    "month": {v: v for v in ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]},
}
BANK_BINARY = {"marital": {"single": 0, "married": 1}, "default": YES_NO, "housing": YES_NO, "loan": YES_NO}
#: the suite's disadvantaged ages (``sensitive_attributes_dct: {'age': [18, …, 24, 61, …, 95]}``)
BANK_AGE_BAND = (25, 60)


def _build_bank(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[BANK_RAW.filename]
    cols = ["age", *BANK_NUMERIC, *BANK_ONEHOT, *BANK_BINARY, "y"]
    raw, lines = read_raw(path, cols, ["age", *BANK_NUMERIC])
    for c in ["age", "day", "campaign", "pdays", "previous"]:
        _integral(path, raw[c], lines, c)
    out = {c: raw[c] for c in BANK_NUMERIC}
    for c, lv in BANK_ONEHOT.items():
        out.update(onehot(code(path, raw[c], lines, c, lv, missing=("unknown",), allow_missing=True), c, lv.values()))
    for c, lv in BANK_BINARY.items():
        out[c] = _binary(code(path, raw[c], lines, c, lv, missing=("unknown",), allow_missing=True))
    lo, hi = BANK_AGE_BAND
    out["age"] = raw["age"].astype("int64")  # kept beside the features (raw_coding): the suite's MAR reads age < 30
    out["age_band"] = raw["age"].between(lo, hi).astype("int64")
    out["y"] = code(path, raw["y"], lines, "y", YES_NO).astype("int64")
    out = pd.DataFrame(out)
    info = _info(raw, out, "age_band", "y", unknown_markers={c: int((raw[c] == "unknown").sum())
                                                             for c in [*BANK_ONEHOT, *BANK_BINARY]})
    logger.info("bank: %s", info)
    return out, info


BANK = register(DatasetVariant(
    name="bank",
    description="Bank marketing (Shades-of-Null coding): age band 25-60 vs 18-24 / 61-95, 1 = subscribed a term deposit",
    paper=_PAPER,
    raw_files=(BANK_RAW,),
    builder=_build_bank,
    features={**{c: "numeric" for c in BANK_NUMERIC}, **_onehot_types(BANK_ONEHOT),
              **{c: "binary" for c in BANK_BINARY}},
    group="age_band",
    group_encoding={0: "age 18-24 or 61-95", 1: "age 25-60"},
    label="y",
    label_encoding={0: "no", 1: "yes (subscribed)"},
    expected_rows=40004,
    numeric_ranges={"day": (1, 31), "campaign": (1, 100), "previous": (0, 1000)},
    raw_coding={**_onehot_coding(BANK_ONEHOT), **_coded(BANK_BINARY), "age": {"column": "age"}},
))


# ---- law school -----------------------------------------------------------------------------------------------

LAW_NUMERIC = ["decile1b", "decile3", "lsat", "ugpa", "zfygpa", "zgpa"]
LAW_ONEHOT = {"fam_inc": {float(k): k for k in range(1, 6)}, "tier": {float(k): k for k in range(1, 7)}}
LAW_CODES = {"fulltime": {1.0: 1, 2.0: 0}, "male": {0.0: 0, 1.0: 1}, "race": {"Non-White": 0, "White": 1}}


def _build_law(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[LAW_RAW.filename]
    codes = ["fulltime", "fam_inc", "male", "tier", "pass_bar"]
    raw, lines = read_raw(path, [*LAW_NUMERIC, *codes, "race"], [*LAW_NUMERIC, *codes])
    out = {c: raw[c] for c in LAW_NUMERIC}
    out["fulltime"] = code(path, raw["fulltime"], lines, "fulltime", LAW_CODES["fulltime"]).astype("int64")
    for c, lv in LAW_ONEHOT.items():
        out.update(onehot(code(path, raw[c], lines, c, lv), c, lv.values()))
    for c in ["male", "race"]:
        out[c] = code(path, raw[c], lines, c, LAW_CODES[c]).astype("int64")
    out["pass_bar"] = code(path, raw["pass_bar"], lines, "pass_bar", {0.0: 0, 1.0: 1}).astype("int64")
    out = pd.DataFrame(out)
    info = _info(raw, out, "race", "pass_bar", protected=["race", "male"])
    logger.info("law_school: %s", info)
    return out, info


LAW_SCHOOL = register(DatasetVariant(
    name="law_school",
    description="LSAC law school bar passage (Shades-of-Null coding): race White vs non-White (sex protected too), 1 = passed",
    paper=_PAPER,
    raw_files=(LAW_RAW,),
    builder=_build_law,
    features={**{c: "numeric" for c in LAW_NUMERIC}, "fulltime": "binary", **_onehot_types(LAW_ONEHOT)},
    group="race",
    group_encoding={0: "Non-White", 1: "White"},
    protected={"male": {0: "female", 1: "male"}},
    label="pass_bar",
    label_encoding={0: "failed the bar", 1: "passed the bar"},
    expected_rows=20798,
    numeric_ranges={"decile1b": (1, 10), "decile3": (1, 10), "ugpa": (0, 4)},
    raw_coding={**_onehot_coding(LAW_ONEHOT), **_coded(LAW_CODES)},
))


# ---- diabetes -------------------------------------------------------------------------------------------------

DIABETES_NUMERIC = ["BMI", "Sleep", "SoundSleep", "Pregancies"]
DIABETES_ONEHOT = {
    "Age": {"less than 40": "lt40", "40-49": "40_49", "50-59": "50_59", "60 or older": "ge60"},
    "PhysicallyActive": {"none": "none", "less than half an hr": "lt_half_hr", "more than half an hr": "gt_half_hr",
                         "one hr or more": "ge_1hr"},
    "JunkFood": {"occasionally": "occasionally", "often": "often", "very often": "very_often", "always": "always"},
    "Stress": {"not at all": "not_at_all", "sometimes": "sometimes", "very often": "very_often", "always": "always"},
    "BPLevel": {"low": "low", "normal": "normal", "high": "high"},  # case-folded: the file also writes High, Low
}
DIABETES_BINARY = {
    "Family_Diabetes": YES_NO, "highBP": YES_NO, "Smoking": YES_NO, "Alcohol": YES_NO,
    "RegularMedicine": {**YES_NO, "o": 0},  # one row writes 'o': 'no', as Virny reads it
    "Pdiabetes": {"0": 0, "no": 0, "yes": 1},  # gestational diabetes; the file writes '0' for no in 936 rows
    "UriationFreq": {"not much": 0, "quite often": 1},
}
DIABETES_CODES = {"Gender": {"Female": 0, "Male": 1}}


def _build_diabetes(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[DIABETES_RAW.filename]
    cols = [*DIABETES_ONEHOT, "Gender", *DIABETES_BINARY, *DIABETES_NUMERIC, "Diabetic"]
    raw, lines = read_raw(path, cols, DIABETES_NUMERIC, allow_missing=True)
    for c in ["Sleep", "SoundSleep", "Pregancies"]:
        _integral(path, raw[c], lines, c)
    raw_all, info_extra = raw, {"rows_with_missing_raw": int(raw[cols].isna().any(axis=1).sum())}
    if opts["missing"] == "drop":  # the suite's with_nulls=False: rows with any empty cell are dropped first
        keep = raw[cols].notna().all(axis=1).to_numpy()
    else:  # a row without a label cannot be used
        keep = raw["Diabetic"].notna().to_numpy()
    raw, lines = raw[keep].reset_index(drop=True), lines[keep]
    out = {"BMI": raw["BMI"], "Sleep": raw["Sleep"], "SoundSleep": raw["SoundSleep"], "Pregnancies": raw["Pregancies"]}
    for c, lv in DIABETES_ONEHOT.items():
        fold = str.lower if c == "BPLevel" else None
        out.update(onehot(code(path, raw[c], lines, c, lv, fold=fold, allow_missing=True), c, lv.values()))
    for c, lv in DIABETES_BINARY.items():
        out[c] = _binary(code(path, raw[c], lines, c, lv, allow_missing=True))
    out["Gender"] = code(path, raw["Gender"], lines, "Gender", DIABETES_CODES["Gender"]).astype("int64")
    out["Diabetic"] = code(path, raw["Diabetic"], lines, "Diabetic", YES_NO).astype("int64")
    out = pd.DataFrame(out)
    info = _info(raw_all, out, "Gender", "Diabetic", **info_extra)
    logger.info("diabetes: %s", info)
    return out, info


DIABETES = register(DatasetVariant(
    name="diabetes",
    description="Diabetes 2019 survey (Shades-of-Null coding): Female vs Male, 1 = diabetic; rows with an empty cell dropped",
    paper=_PAPER,
    raw_files=(DIABETES_RAW,),
    builder=_build_diabetes,
    features={"BMI": "numeric", "Sleep": "numeric", "SoundSleep": "numeric", "Pregnancies": "numeric",
              **_onehot_types(DIABETES_ONEHOT), **{c: "binary" for c in DIABETES_BINARY}},
    group="Gender",
    group_encoding={0: "Female", 1: "Male"},
    label="Diabetic",
    label_encoding={0: "not diabetic", 1: "diabetic"},
    expected_rows=905,
    numeric_ranges={"BMI": (10, 80), "Sleep": (0, 24), "SoundSleep": (0, 24), "Pregnancies": (0, 20)},
    options={"missing": "drop"},
    option_domains={"missing": ("drop", "keep")},
    raw_coding={**_onehot_coding(DIABETES_ONEHOT), **_coded(DIABETES_BINARY), **_coded(DIABETES_CODES),
                "Pregancies": {"column": "Pregnancies"}},
))


# ---- cardio ---------------------------------------------------------------------------------------------------

CARDIO_NUMERIC = ["age", "height", "weight", "ap_hi", "ap_lo"]
CARDIO_ONEHOT = {"cholesterol": {1.0: 1, 2.0: 2, 3.0: 3}, "gluc": {1.0: 1, 2.0: 2, 3.0: 3}}
CARDIO_BINARY = ["smoke", "alco", "active"]
_ZERO_ONE = {0.0: 0, 1.0: 1}
CARDIO_CODES = {**{c: _ZERO_ONE for c in CARDIO_BINARY}, "gender": {1.0: 0, 2.0: 1}}


def _build_cardio(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[CARDIO_RAW.filename]
    codes = ["gender", *CARDIO_ONEHOT, *CARDIO_BINARY, "cardio"]
    raw, lines = read_raw(path, [*CARDIO_NUMERIC, *codes], [*CARDIO_NUMERIC, *codes], sep=";")
    for c in ["age", "height", "ap_hi", "ap_lo"]:
        _integral(path, raw[c], lines, c)
    neg = raw["age"] < 0
    if neg.any():
        raise DatasetError(f"{path}: line {_first(neg, lines)}, column 'age': negative age in days "
                           f"{raw['age'][neg].iloc[0]!r}")
    out = {"age": (raw["age"] // 365).astype("int64"), **{c: raw[c] for c in CARDIO_NUMERIC[1:]}}
    for c, lv in CARDIO_ONEHOT.items():
        out.update(onehot(code(path, raw[c], lines, c, lv), c, lv.values()))
    for c in CARDIO_BINARY:
        out[c] = code(path, raw[c], lines, c, _ZERO_ONE).astype("int64")
    out["gender"] = code(path, raw["gender"], lines, "gender", CARDIO_CODES["gender"]).astype("int64")
    out["cardio"] = code(path, raw["cardio"], lines, "cardio", _ZERO_ONE).astype("int64")
    out = pd.DataFrame(out)
    implausible = {"ap_hi outside 1..300": int((~raw["ap_hi"].between(1, 300)).sum()),
                   "ap_lo outside 1..200": int((~raw["ap_lo"].between(1, 200)).sum()),
                   "ap_lo above ap_hi": int((raw["ap_lo"] > raw["ap_hi"]).sum()),
                   "height below 120 cm": int((raw["height"] < 120).sum()),
                   "weight below 30 kg": int((raw["weight"] < 30).sum())}
    info = _info(raw, out, "gender", "cardio", implausible_kept=implausible)
    logger.info("cardio: %s", info)
    return out, info


CARDIO = register(DatasetVariant(
    name="cardio",
    description="Cardiovascular disease (Shades-of-Null coding): gender code 1 (women) vs 2 (men), 1 = disease",
    paper=_PAPER,
    raw_files=(CARDIO_RAW,),
    builder=_build_cardio,
    features={**{c: "numeric" for c in CARDIO_NUMERIC}, **_onehot_types(CARDIO_ONEHOT),
              **{c: "binary" for c in CARDIO_BINARY}},
    group="gender",
    group_encoding={0: "women (code 1)", 1: "men (code 2)"},
    label="cardio",
    label_encoding={0: "no cardiovascular disease", 1: "cardiovascular disease"},
    expected_rows=70000,
    numeric_ranges={"age": (0, 120)},
    raw_coding={**_onehot_coding(CARDIO_ONEHOT), **_coded(CARDIO_CODES)},
))


# ---- German credit (named columns) ----------------------------------------------------------------------------

GERMAN_NUMERIC = ["duration", "credit-amount", "installment-rate", "residence-since", "existing-credits",
                  "number-people-provide-maintenance-for"]
GERMAN_ONEHOT = {
    "checking-account": {"<0 DM": "lt0", "0 <= <200 DM": "0to200", ">= 200 DM": "ge200", "no account": "none"},
    "credit-history": {"no credits taken": "none", "all credits at this bank paid back duly": "all_paid",
                       "existing credits paid back duly till now": "paid_duly", "delay in paying off": "delay",
                       "critical account": "critical"},
    "purpose": {"car (new)": "car_new", "car (used)": "car_used", "furniture/equipment": "furniture",
                "radio/television": "radio_tv", "domestic appliances": "appliances", "repairs": "repairs",
                "education": "education", "retraining": "retraining", "business": "business", "others": "others"},
    "savings-account": {"<100 DM": "lt100", "100 <= <500 DM": "100to500", "500 <= < 1000 DM": "500to1000",
                        ">= 1000 DM": "ge1000", "no savings account": "none"},
    "employment-since": {"unemployed": "unemployed", "<1 years": "lt1", "1<= < 4 years": "1to4",
                         "4<= <7 years": "4to7", ">=7 years": "ge7"},
    "other-debtors": {"none": "none", "co-applicant": "co_applicant", "guarantor": "guarantor"},
    # 'unknown / no property' is a level of the codebook (UCI A124), not a missing marker
    "property": {"real estate": "real_estate", "savings agreement/life insurance": "savings_insurance",
                 "car or other": "car_other", "unknown / no property": "unknown_none"},
    "other-installment": {"bank": "bank", "store": "store", "none": "none"},
    "housing": {"rent": "rent", "own": "own", "for free": "free"},
    "job": {"unemployed/ unskilled  - non-resident": "unskilled_nonresident", "unskilled - resident":
            "unskilled_resident", "skilled employee / official": "skilled",
            "management/ highly qualified employee": "management"},
}
GERMAN_BINARY = {"telephone": {"none": 0, "yes": 1}, "foreign-worker": YES_NO,
                 "marital-status": {"divorced/separated": 0, "married/widowed": 1}}
#: the suite's disadvantaged ages (``sensitive_attributes_dct: {'age': [19, …, 25]}``): age <= 25
GERMAN_YOUNG_MAX = 25
GERMAN_CODES = {**GERMAN_BINARY, "sex": {"female": 0, "male": 1}}


def _build_german(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[GERMAN_RAW.filename]
    cols = [*GERMAN_NUMERIC, *GERMAN_ONEHOT, *GERMAN_BINARY, "age", "sex", "class-label"]
    raw, lines = read_raw(path, cols, [*GERMAN_NUMERIC, "age", "class-label"])
    for c in [*GERMAN_NUMERIC, "age"]:
        _integral(path, raw[c], lines, c)
    out = {c: raw[c] for c in GERMAN_NUMERIC}
    for c, lv in GERMAN_ONEHOT.items():
        out.update(onehot(code(path, raw[c], lines, c, lv), c, lv.values()))
    for c, lv in GERMAN_BINARY.items():
        out[c] = code(path, raw[c], lines, c, lv).astype("int64")
    out["sex"] = code(path, raw["sex"], lines, "sex", GERMAN_CODES["sex"]).astype("int64")
    out["age"] = raw["age"].astype("int64")  # kept beside the features (raw_coding): the suite's MAR reads age
    out["age_band"] = (raw["age"] > GERMAN_YOUNG_MAX).astype("int64")
    out["class-label"] = code(path, raw["class-label"], lines, "class-label", _ZERO_ONE).astype("int64")
    out = pd.DataFrame(out)
    info = _info(raw, out, "sex", "class-label", protected=["sex", "age_band"])
    logger.info("german_son: %s", info)
    return out, info


GERMAN_SON = register(DatasetVariant(
    name="german_son",
    description="German credit, named columns (Shades-of-Null coding): female vs male (age <= 25 protected too), 1 = good credit",
    paper=_PAPER,
    raw_files=(GERMAN_RAW,),
    builder=_build_german,
    features={**{c: "numeric" for c in GERMAN_NUMERIC}, **_onehot_types(GERMAN_ONEHOT),
              **{c: "binary" for c in GERMAN_BINARY}},
    group="sex",
    group_encoding={0: "female", 1: "male"},
    protected={"age_band": {0: "age <= 25", 1: "age > 25"}},
    label="class-label",
    label_encoding={0: "bad credit", 1: "good credit"},
    expected_rows=1000,
    raw_coding={**_onehot_coding(GERMAN_ONEHOT), **_coded(GERMAN_CODES), "age": {"column": "age"}},
))


#: every one-hot attribute of each variant: ``{variant: {raw column: {raw value: one-hot column}}}`` (raw values as
#: the file writes them, blanks stripped; law school's and cardio's codes as floats), e.g. to name the block of
#: columns that stands for one raw attribute
ONEHOT_COLUMNS: dict[str, dict[str, dict]] = {
    v.name: {c: how["onehot"] for c, how in v.raw_coding.items() if "onehot" in how}
    for v in (BANK, LAW_SCHOOL, DIABETES, CARDIO, GERMAN_SON)
}

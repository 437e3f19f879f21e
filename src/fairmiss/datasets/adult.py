"""Adult (UCI census income, ``adult.data`` + ``adult.test``).

Raw format: comma-separated, 15 fields, no header, a space after each comma, ``?`` for the
three real missing values (workclass, occupation, native-country). ``adult.test`` starts with
a junk line (``|1x3 Cross validator``) and its labels carry a trailing ``.`` (``<=50K.``);
both are handled here. Every field is checked against the level sets of ``adult.names``;
an unknown code, a wrong field count (wrong delimiter, truncated line) or a missing/unknown
label raises :class:`~fairmiss.datasets.registry.DatasetError` naming file, line and column.

Variants
--------
``adult_000`` (spec 000 §3.2): inputs age, workclass, education, education-num,
marital-status, occupation, relationship, race, capital-gain, capital-loss, hours-per-week,
native-country (gender excluded from the inputs as in [REPO]; it is the group), group
``gender`` (0 female, 1 male), label ``income`` (0 ≤50K, 1 >50K). Option ``mode``:

* ``"legacy"`` (default, paper parity): the authors' procedure step by step — concatenate
  train+test, drop ``?`` rows (45,222), label-encode categoricals alphabetically, min–max
  scale every input on those 45,222 rows, keep the first 32,561 rows, then downsample
  income = 0 and afterwards male rows with ``numpy.random.RandomState(0).choice`` over *index
  labels*; the concatenation duplicates index labels, so a drop removes every row sharing the
  label. This reproduces exactly 7834 rows, income 4510/3324, gender 3927/3907 (15,113 rows
  after the label step). The marital-status binarisation of [REPO] is a no-op there (leading
  spaces); ``binarize_marital`` (default False) applies it for real.
* ``"clean"``: ``adult.data`` only, ``?`` rows dropped (30,162) or kept as NaN, label then
  gender downsampled without index aliasing (``numpy.random.default_rng(balance_seed)``),
  categoricals as integer codes (alphabetical, over the ``adult.names`` levels), numerics
  raw (scaling is a pipeline step fitted on train). About 7,970 rows.

``adult_004`` (spec 004 §2.1, SenSR/BuDRO): train+test concatenated, ``?`` rows dropped
(45,222). 5 standardised numerics, ``race`` (1 = White), one-hot workclass (7),
marital-status (7), occupation (14), relationship (6): 40 columns plus the group ``gender``,
i.e. 41 features when the group is used as a feature (``group_as_feature: true``, as 004
keeps both protected attributes in the inputs). education and native-country are dropped.
With ``missing="keep"`` (48,842 rows) a ``?`` makes the whole one-hot block of that
attribute NaN; ``Never-worked`` (only ever with occupation ``?``) is encoded as all-zero.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.datasets.acquire import RawFile
from fairmiss.datasets.csvcheck import check_finite_numbers, read_text_strict
from fairmiss.datasets.registry import DatasetError, DatasetVariant, register

logger = logging.getLogger(__name__)

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
_LICENCE = "CC BY 4.0 (UCI Machine Learning Repository, Becker & Kohavi 1996)"
ADULT_DATA = RawFile("adult.data", _UCI + "adult.data",
                     "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d", licence=_LICENCE)
ADULT_TEST = RawFile("adult.test", _UCI + "adult.test",
                     "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05", licence=_LICENCE)
ADULT_NAMES = RawFile("adult.names", _UCI + "adult.names",
                      "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a", licence=_LICENCE)

COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "gender", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]
NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
MISSING_COLUMNS = ("workclass", "occupation", "native-country")
# Level sets from adult.names (the only values a valid raw file may hold, besides "?").
LEVELS: dict[str, tuple[str, ...]] = {
    "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                  "State-gov", "Without-pay", "Never-worked"),
    "education": ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
                  "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate",
                  "5th-6th", "Preschool"),
    "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"),
    "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                   "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
                   "Armed-Forces"),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "gender": ("Female", "Male"),
    "native-country": (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran",
        "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal",
        "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia",
        "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
        "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"),
}
LABELS = {"<=50K": 0, ">50K": 1}
MARRIED = {"Married-civ-spouse", "Married-AF-spouse", "Married-spouse-absent"}


def read_adult(path: Path) -> pd.DataFrame:
    """Parse one raw Adult file into strings/numbers; ``?`` becomes NaN.

    The index is the 0-based data-row number (blank lines and the ``|`` junk line of
    ``adult.test`` do not count), exactly as ``pandas.read_csv(..., skiprows=1)`` numbers it,
    which the legacy mode needs. Label dots are stripped.
    """
    path = Path(path)
    text = read_text_strict(path, expected="15 comma-separated fields a line, ending with 'income'")
    rows, lines = [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("|"):
            continue
        fields = [f.strip() for f in s.split(",")]
        if len(fields) != len(COLUMNS):
            col = COLUMNS[len(fields)] if len(fields) < len(COLUMNS) else "<extra field>"
            raise DatasetError(
                f"{path}: line {lineno}: expected {len(COLUMNS)} comma-separated fields, got "
                f"{len(fields)} (wrong delimiter or truncated file?); first absent column '{col}'"
            )
        rows.append(fields)
        lines.append(lineno)
    if not rows:
        raise DatasetError(f"{path}: no data rows (empty file?); expected column 'income' and 14 others")
    df = pd.DataFrame(rows, columns=COLUMNS, dtype=object)
    for col in NUMERIC:  # finite integers, no '?' (file, line, column on failure)
        num = check_finite_numbers(path, df[col].replace("?", ""), col, lines, allow_missing=False)
        frac = (num % 1 != 0).to_numpy()
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            raise DatasetError(f"{path}: line {lines[i]}, column '{col}': non-integer value {df[col].iloc[i]!r}")
        df[col] = num.astype("int64")
    df = df.replace("?", np.nan)
    for col, levels in LEVELS.items():
        observed = df[col].dropna()
        bad = sorted(set(observed.unique()) - set(levels))
        if bad:
            raise DatasetError(f"{path}: line {_first_line(df[col].isin(bad), lines)}, column '{col}': unknown "
                               f"category code(s) {bad[:5]}")
        if col not in MISSING_COLUMNS and len(observed) < len(df):
            what = "all missing" if observed.empty else f"{len(df) - len(observed)} missing value(s)"
            raise DatasetError(f"{path}: line {_first_line(df[col].isna(), lines)}, column '{col}' has {what} ('?'); "
                               f"only {list(MISSING_COLUMNS)} may")
    lab = df["income"].astype("string").str.rstrip(".")
    bad = sorted(set(lab.dropna().unique()) - set(LABELS))
    if bad or lab.isna().any():
        first = _first_line((lab.isin(bad) | lab.isna()).fillna(True), lines)
        raise DatasetError(f"{path}: line {first}, label column 'income' has unknown or missing values {bad[:5] or ['?']}")
    df["income"] = lab.map(LABELS).astype("int64")
    return df


def _first_line(mask, lines) -> int:
    return int(lines[int(np.flatnonzero(np.asarray(mask, dtype=bool))[0])])


def _read_both(paths: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return read_adult(paths[ADULT_DATA.filename]), read_adult(paths[ADULT_TEST.filename])


def _binarize_marital(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["marital-status"] = np.where(df["marital-status"].isin(MARRIED), "married", "not married")
    return df


def _downsample(df: pd.DataFrame, attr: str, major: int, rng: np.random.Generator) -> pd.DataFrame:
    """Drop random rows of ``attr == major`` (by position) until both values are equal."""
    maj = np.flatnonzero((df[attr] == major).to_numpy())
    n_drop = len(maj) - int((df[attr] == 1 - major).sum())
    if n_drop < 0:
        raise DatasetError(f"adult: cannot downsample '{attr}'={major}: it is the minority")
    drop = rng.choice(maj, size=n_drop, replace=False)
    keep = np.setdiff1d(np.arange(len(df)), drop)
    return df.iloc[keep]


def _legacy_downsample(df: pd.DataFrame, attr: str, major: int) -> pd.DataFrame:
    """[REPO] ``balance_data``: seed 0, draw index *labels*, ``DataFrame.drop`` them (aliasing)."""
    n_drop = int((df[attr] == major).sum() - (df[attr] == 1 - major).sum())
    if n_drop < 0:
        raise DatasetError(f"adult: cannot downsample '{attr}'={major}: it is the minority")
    rs = np.random.RandomState(0)  # the authors' np.random.seed(0) stream, without global state
    drop = rs.choice(df.index[(df[attr] == major).to_numpy()], n_drop, replace=False)
    return df.drop(drop)


FEATURES_000 = {
    "age": "numeric", "workclass": "categorical", "education": "categorical",
    "education-num": "numeric", "marital-status": "categorical", "occupation": "categorical",
    "relationship": "categorical", "race": "categorical", "capital-gain": "numeric",
    "capital-loss": "numeric", "hours-per-week": "numeric", "native-country": "categorical",
}
_CATS_000 = [c for c, t in FEATURES_000.items() if t == "categorical"]


def _build_000(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    mode, missing = opts["mode"], opts["missing"]
    if mode not in ("legacy", "clean"):
        raise DatasetError(f"adult_000: option 'mode' must be 'legacy' or 'clean', got {mode!r}")
    if missing not in ("drop", "keep"):
        raise DatasetError(f"adult_000: option 'missing' must be 'drop' or 'keep', got {missing!r}")
    train, test = _read_both(paths)
    info: dict = {"rows_raw_train": len(train), "rows_raw_test": len(test), "mode": mode}
    if mode == "legacy":
        if missing != "drop":
            raise DatasetError("adult_000: mode 'legacy' reproduces the authors' row drop; use missing='drop' or mode='clean'")
        df = pd.concat([train, test])  # index labels duplicated on purpose (see module doc)
        df = df.dropna(subset=list(MISSING_COLUMNS))
        info["rows_after_drop_missing"] = len(df)
        if opts["binarize_marital"]:
            df = _binarize_marital(df)
        out = df[list(FEATURES_000)].copy()
        for col in _CATS_000:
            _, codes = np.unique(out[col].to_numpy(dtype=str), return_inverse=True)
            out[col] = codes
        out = out.astype("float64")
        lo, hi = out.min(), out.max()
        out = (out - lo) / (hi - lo).replace(0, 1)
        out["gender"] = (df["gender"] == "Male").astype("int64").to_numpy()
        out["income"] = df["income"].to_numpy()
        out = out.iloc[: len(train)]
        info["rows_first_len_train"] = len(out)
        if opts["balance"]:
            out = _legacy_downsample(out, "income", 0)
            info["rows_after_label_balance"] = len(out)
            out = _legacy_downsample(out, "gender", 1)
    else:
        df = train
        if missing == "drop":
            df = df.dropna(subset=list(MISSING_COLUMNS))
        info["rows_after_missing"] = len(df)
        if opts["binarize_marital"]:
            df = _binarize_marital(df)
        out = pd.DataFrame(index=df.index)
        for col, ftype in FEATURES_000.items():
            if ftype == "numeric":
                out[col] = df[col].astype("float64")
            else:
                binar = col == "marital-status" and opts["binarize_marital"]
                levels = ["married", "not married"] if binar else sorted(LEVELS[col])
                out[col] = df[col].map({v: i for i, v in enumerate(levels)}).astype("float64")
        out["gender"] = (df["gender"] == "Male").astype("int64")
        out["income"] = df["income"]
        out = out.reset_index(drop=True)
        if opts["balance"]:
            rng = np.random.default_rng(opts["balance_seed"])
            out = _downsample(out, "income", 0, rng)
            info["rows_after_label_balance"] = len(out)
            out = _downsample(out, "gender", 1, rng)
    info["rows_processed"] = len(out)
    info["counts_group_label"] = {f"g{g}_y{y}": int(n) for (g, y), n in out.groupby(["gender", "income"]).size().items()}
    logger.info("adult_000: %s", info)
    return out.reset_index(drop=True), info


ADULT_000 = register(
    DatasetVariant(
        name="adult_000",
        description="Adult, paper 000 variant: gender group, income label, label- then gender-balanced",
        paper="000 (Fair MIP Forest), spec 000 §3.2",
        raw_files=(ADULT_DATA, ADULT_TEST),
        builder=_build_000,
        features=FEATURES_000,
        group="gender",
        group_encoding={0: "female", 1: "male"},
        label="income",
        label_encoding={0: "<=50K", 1: ">50K"},
        expected_rows=7834,
        numeric_ranges={
            "age": (0, 90), "education-num": (0, 16), "capital-gain": (0, 99999),
            "capital-loss": (0, 4356), "hours-per-week": (0, 99),
            **{c: (0, len(LEVELS[c]) - 1) for c in _CATS_000},
        },
        options={"mode": "legacy", "missing": "drop", "balance": True, "balance_seed": 0,
                 "binarize_marital": False},
        option_domains={"mode": ("legacy", "clean"), "missing": ("drop", "keep")},
    )
)


NUMERIC_004 = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
ONEHOT_004 = {
    "workclass": [lv for lv in LEVELS["workclass"] if lv != "Never-worked"],
    "marital-status": list(LEVELS["marital-status"]),
    "occupation": list(LEVELS["occupation"]),
    "relationship": list(LEVELS["relationship"]),
}
FEATURES_004: dict = {
    **{c: "numeric" for c in NUMERIC_004},
    "race": "binary",
    **{f"{col}_{lv}": "binary" for col, lvs in ONEHOT_004.items() for lv in lvs},
}


def _build_004(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    if opts["missing"] not in ("drop", "keep"):
        raise DatasetError(f"adult_004: option 'missing' must be 'drop' or 'keep', got {opts['missing']!r}")
    train, test = _read_both(paths)
    df = pd.concat([train, test], ignore_index=True)
    info: dict = {"rows_raw": len(df)}
    if opts["missing"] == "drop":
        df = df.dropna(subset=list(MISSING_COLUMNS)).reset_index(drop=True)
    info["rows_after_missing"] = len(df)
    out = pd.DataFrame(index=df.index)
    for col in NUMERIC_004:
        x = df[col].astype("float64")
        out[col] = (x - x.mean()) / x.std(ddof=0) if opts["standardize"] else x
    out["race"] = (df["race"] == "White").astype("int64")
    for col, lvs in ONEHOT_004.items():
        miss = df[col].isna()
        for lv in lvs:
            v = (df[col] == lv).astype("float64")
            v[miss] = np.nan
            out[f"{col}_{lv}"] = v if miss.any() else v.astype("int64")
    out["gender"] = (df["gender"] == "Male").astype("int64")
    out["income"] = df["income"]
    info["rows_processed"] = len(out)
    info["protected"] = ["gender", "race"]
    info["counts_group_label"] = {f"g{g}_y{y}": int(n) for (g, y), n in out.groupby(["gender", "income"]).size().items()}
    logger.info("adult_004: %s", {k: v for k, v in info.items()})
    return out, info


ADULT_004 = register(
    DatasetVariant(
        name="adult_004",
        description="Adult, paper 004 (SenSR/BuDRO) variant: 45222 rows, 41 features incl. gender (group) and race",
        paper="004 (BuDRO), spec 004 §2.1",
        raw_files=(ADULT_DATA, ADULT_TEST),
        builder=_build_004,
        features=FEATURES_004,
        group="gender",
        group_encoding={0: "female", 1: "male"},
        protected={"race": {0: "non-White", 1: "White"}},
        label="income",
        label_encoding={0: "<=50K", 1: ">50K"},
        expected_rows=45222,
        options={"missing": "drop", "standardize": True},
        option_domains={"missing": ("drop", "keep")},
    )
)

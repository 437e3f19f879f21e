"""German credit (UCI Statlog, ``german.data``: 1000 rows, 20 attributes + label).

Raw format: space-separated, 21 fields, no header; categorical attributes are codes
``A11``…``A202`` (documented in ``german.doc``), the label is 1 = good, 2 = bad.

Variants
--------
``german_004`` (spec 004 §2.1, SenSR/BuDRO via AIF360): every categorical attribute one-hot
encoded (levels observed in the UCI file: 54 columns; ``A47`` and ``A95`` never occur and
are rejected as unsupported codes), the 7 numerical attributes standardised over the 1000
rows (the authors' code standardises before splitting [GAP]), plus the binary ``age_bin``
column that the authors zero out in the features (option ``zero_age_bin``, default True):
7 + 54 + 1 = **62 features**. Protected attribute age (kept, standardised, as a feature);
group ``age_group``: 0 = age < 25, 1 = age ≥ 25 (Kamiran & Calders; AIF360's own default is
age > 25 — option ``age_threshold``, 20 … 75: the thresholds that leave two groups, ages being
19 … 75). Label ``credit_risk``: 1 = bad credit (30 %).
The personal-status one-hots (``personal_status_A91`` …) are kept so 004's *status
counterfactual* can be built with :func:`status_counterfactuals`; :data:`PERSONAL_STATUS`
decodes them into sex and marital status.

``german_sex``: same encoding but the group is sex decoded from personal status
(0 = female: A92/A95, 1 = male: A91/A93/A94) and the personal-status one-hots are removed
from the inputs (they determine the group); no ``age_bin``: 57 features.
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

GERMAN_RAW = RawFile(
    filename="german.data",
    url="https://archive.ics.uci.edu/ml/machine-learning-databases/statlog/german/german.data",
    sha256="b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
    licence="CC BY 4.0 (UCI Machine Learning Repository, Hofmann 1994)",
)

COLUMNS = [
    "checking_status", "duration", "credit_history", "purpose", "credit_amount", "savings",
    "employment", "installment_rate", "personal_status", "other_debtors", "residence_since",
    "property", "age", "other_installment_plans", "housing", "existing_credits", "job",
    "num_liable", "telephone", "foreign_worker", "credit_risk",
]
NUMERIC = ["duration", "credit_amount", "installment_rate", "residence_since", "age",
           "existing_credits", "num_liable"]
# Levels present in the UCI file (german.doc also lists A47 "vacation" and A95 "female single",
# which never occur; AIF360's get_dummies therefore yields these 54 columns).
LEVELS: dict[str, list[str]] = {
    "checking_status": ["A11", "A12", "A13", "A14"],
    "credit_history": ["A30", "A31", "A32", "A33", "A34"],
    "purpose": ["A40", "A41", "A410", "A42", "A43", "A44", "A45", "A46", "A48", "A49"],
    "savings": ["A61", "A62", "A63", "A64", "A65"],
    "employment": ["A71", "A72", "A73", "A74", "A75"],
    "personal_status": ["A91", "A92", "A93", "A94"],
    "other_debtors": ["A101", "A102", "A103"],
    "property": ["A121", "A122", "A123", "A124"],
    "other_installment_plans": ["A141", "A142", "A143"],
    "housing": ["A151", "A152", "A153"],
    "job": ["A171", "A172", "A173", "A174"],
    "telephone": ["A191", "A192"],
    "foreign_worker": ["A201", "A202"],
}
CODEBOOK_ONLY = {"purpose": {"A47"}, "personal_status": {"A95"}}
# german.doc, attribute 9; 004 footnote 3 groups these into the "status" categories.
PERSONAL_STATUS: dict[str, tuple[str, str]] = {
    "A91": ("male", "divorced/separated"),
    "A92": ("female", "divorced/separated/married"),
    "A93": ("male", "single"),
    "A94": ("male", "married/widowed"),
    "A95": ("female", "single"),
}
STATUS_COLUMNS = [f"personal_status_{c}" for c in LEVELS["personal_status"]]


def read_german(path: Path) -> pd.DataFrame:
    """Parse ``german.data``; fail naming file, line and column on any malformed field."""
    path = Path(path)
    text = read_text_strict(path, expected="21 space-separated fields a line, ending with 'credit_risk'")
    rows, lines = [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != len(COLUMNS):
            col = COLUMNS[len(fields)] if len(fields) < len(COLUMNS) else "<extra field>"
            raise DatasetError(
                f"{path}: line {lineno}: expected {len(COLUMNS)} space-separated fields, got {len(fields)} "
                f"(wrong delimiter or truncated file?); first absent column '{col}'"
            )
        rows.append(fields)
        lines.append(lineno)
    if not rows:
        raise DatasetError(f"{path}: no data rows (empty file?); expected 21 columns ending with 'credit_risk'")
    df = pd.DataFrame(rows, columns=COLUMNS, dtype=object)
    for col in [*NUMERIC, "credit_risk"]:  # finite integers (file, line, column on failure)
        num = check_finite_numbers(path, df[col], col, lines, allow_missing=False)
        frac = (num % 1 != 0).to_numpy()
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            raise DatasetError(f"{path}: line {lines[i]}, column '{col}': non-integer value {df[col].iloc[i]!r}")
        df[col] = num.astype("int64")
    for col, levels in LEVELS.items():
        bad = sorted(set(df[col].unique()) - set(levels))
        if bad:
            extra = " (in the codebook but absent from the UCI file; not encoded by this variant)" \
                if set(bad) <= CODEBOOK_ONLY.get(col, set()) else ""
            line = lines[int(np.flatnonzero(df[col].isin(bad).to_numpy())[0])]
            raise DatasetError(f"{path}: line {line}, column '{col}': unknown category code(s) {bad[:5]}{extra}")
    bad = sorted(set(df["credit_risk"].unique()) - {1, 2})
    if bad:
        line = lines[int(np.flatnonzero(df["credit_risk"].isin(bad).to_numpy())[0])]
        raise DatasetError(f"{path}: line {line}, label column 'credit_risk' must be 1 (good) or 2 (bad), got {bad[:5]}")
    return df


def _encode(df: pd.DataFrame, *, standardize: bool, skip: tuple[str, ...] = ()) -> pd.DataFrame:
    out = pd.DataFrame(index=df.index)
    for col in NUMERIC:
        x = df[col].astype("float64")
        out[col] = (x - x.mean()) / x.std(ddof=0) if standardize else x
    for col, levels in LEVELS.items():
        if col in skip:
            continue
        for lv in levels:
            out[f"{col}_{lv}"] = (df[col] == lv).astype("int64")
    return out


def sex_from_status(codes: pd.Series) -> pd.Series:
    """1 = male, 0 = female, decoded from personal-status codes (A91…A95)."""
    return codes.map({c: int(sex == "male") for c, (sex, _) in PERSONAL_STATUS.items()}).astype("int64")


def status_counterfactuals(X: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """004's status counterfactuals: for each personal-status code, ``X`` with that status set.

    Returns ``{code: X_cf}`` where every row's personal-status one-hot block is replaced by
    the one-hot of ``code``; all other columns are unchanged. Works on ``german_004`` tables.
    """
    missing = [c for c in STATUS_COLUMNS if c not in X.columns]
    if missing:
        raise DatasetError(f"status_counterfactuals: columns {missing} not in X (use german_004)")
    out = {}
    for col in STATUS_COLUMNS:
        cf = X.copy()
        cf[STATUS_COLUMNS] = 0
        cf[col] = 1
        out[col.rsplit("_", 1)[1]] = cf
    return out


def _build_004(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    raw = read_german(paths[GERMAN_RAW.filename])
    out = _encode(raw, standardize=opts["standardize"])
    age_group = (raw["age"] >= opts["age_threshold"]).astype("int64")
    out["age_bin"] = 0 if opts["zero_age_bin"] else age_group
    out["age_bin"] = out["age_bin"].astype("int64")
    out["age_group"] = age_group
    out["credit_risk"] = (raw["credit_risk"] == 2).astype("int64")
    info = {
        "rows_raw": len(raw), "rows_processed": len(out),
        "personal_status_decoding": {c: list(v) for c, v in PERSONAL_STATUS.items()},
        "status_columns": STATUS_COLUMNS,
        "age_raw": {"mean": float(raw["age"].mean()), "std": float(raw["age"].std(ddof=0))},
        "counts_group_label": {f"g{g}_y{y}": int(n) for (g, y), n in out.groupby(["age_group", "credit_risk"]).size().items()},
    }
    logger.info("german_004: %d rows, %d groups x labels", len(out), len(info["counts_group_label"]))
    return out, info


def _build_sex(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    raw = read_german(paths[GERMAN_RAW.filename])
    out = _encode(raw, standardize=opts["standardize"], skip=("personal_status",))
    out["sex"] = sex_from_status(raw["personal_status"])
    out["age_group"] = (raw["age"] >= 25).astype("int64")  # not a column of german_sex; a group with `group:`
    out["credit_risk"] = (raw["credit_risk"] == 2).astype("int64")
    info = {
        "rows_raw": len(raw), "rows_processed": len(out),
        "personal_status_decoding": {c: list(v) for c, v in PERSONAL_STATUS.items()},
        "counts_group_label": {f"g{g}_y{y}": int(n) for (g, y), n in out.groupby(["sex", "credit_risk"]).size().items()},
    }
    logger.info("german_sex: %d rows", len(out))
    return out, info


_ONEHOT = {f"{c}_{lv}": "binary" for c, lvs in LEVELS.items() for lv in lvs}

GERMAN_004 = register(
    DatasetVariant(
        name="german_004",
        description="German credit, paper 004 variant: 62 features (one-hot, standardised), age < 25 vs >= 25, 1 = bad credit",
        paper="004 (BuDRO), spec 004 §2.1",
        raw_files=(GERMAN_RAW,),
        builder=_build_004,
        features={**{c: "numeric" for c in NUMERIC}, **_ONEHOT, "age_bin": "binary"},
        group="age_group",
        group_encoding={0: "age < 25", 1: "age >= 25"},
        label="credit_risk",
        label_encoding={0: "good credit", 1: "bad credit"},
        expected_rows=1000,
        options={"standardize": True, "age_threshold": 25, "zero_age_bin": True},
        # ages in german.data run from 19 to 75: a threshold outside 20..75 puts every row in one group
        option_domains={"age_threshold": (20, 75)},
    )
)

GERMAN_SEX = register(
    DatasetVariant(
        name="german_sex",
        description="German credit with sex (decoded from personal status) as the group; status one-hots removed",
        paper="platform variant (group = sex), encoding as 004",
        raw_files=(GERMAN_RAW,),
        builder=_build_sex,
        features={**{c: "numeric" for c in NUMERIC},
                  **{k: v for k, v in _ONEHOT.items() if not k.startswith("personal_status_")}},
        group="sex",
        group_encoding={0: "female", 1: "male"},
        protected={"age_group": {0: "age < 25", 1: "age >= 25"}},
        label="credit_risk",
        label_encoding={0: "good credit", 1: "bad credit"},
        expected_rows=1000,
        options={"standardize": True},
    )
)

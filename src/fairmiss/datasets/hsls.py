"""HSLS:09 (High School Longitudinal Study of 2009), spec 000 §3.3.

``hsls_000`` — loader for the real NCES public-use *student* file
--------------------------------------------------------------------
The file is free to download from NCES but may not be redistributed, so it is never bundled,
mirrored or downloaded: obtain the student-level CSV of an HSLS:09 public-use release
holding the variables below (NCES Online Codebook / EDAT), rename it to ``hsls_student.csv``
and place it in the raw directory (or in ``FAIRMISS_DATA_MIRROR``). It has no published checksum
(``sha256=None``): the builder records the actual SHA-256 in its provenance instead.

* variables (real names, spec 000 Table 1): ``X1RACE``, ``X1MTHID``, ``X1MTHUTI``, ``X1MTHEFF``,
  ``X1PAR2EDU``, ``X1FAMINCOME``, ``X1P1RELATION``, ``X1PAR1EMP``, ``X1SCHOOLBEL``,
  ``X1STU30OCC2``, ``X1TXMSCR`` (other columns are ignored; ``STU_ID`` is never read);
* reserve codes → NaN [GAP, NCES codebook convention]: for the standardised scales
  (``X1MTHID``, ``X1MTHUTI``, ``X1MTHEFF``, ``X1SCHOOLBEL``, legitimately negative) only the
  integer codes −9…−4 (−9 missing, −8 unit nonresponse, −7 skip, −6 component not applicable,
  −5 suppressed, −4 not administered); for every other variable any negative value;
* group ``race_wa`` from ``X1RACE``: 0 = URM (1 Amer. Indian/Alaska Native, 3 Black,
  4/5 Hispanic, 7 Native Hawaiian/Pacific Islander), 1 = White/Asian (2 Asian, 8 White);
  6 = "more than one race" is not assigned by the paper [GAP]: option ``multiracial``
  (``"drop"`` default, ``"urm"``, ``"wa"``);
* rows missing race or score are dropped; label ``math_top_half`` = top half of
  ``X1TXMSCR`` by rank, ties broken by file order (``label_split="rank"``, default; exactly
  half the rows are 1, as the authors' file 10,722/10,722) or ``"above_median"`` (strict);
* scaling to [0, 1] is *not* done here: it is a pipeline step fitted on the training split
  (option ``scale="minmax"`` reproduces the authors' full-table min–max scaling).
* features are all declared ``numeric`` (categorical codes are treated as ordinal, as in 000).

``hsls_synthetic`` — a synthetic stand-in, labelled as such everywhere
-----------------------------------------------------------------------
Same columns, ``synthetic=True``, no raw file. Group shares are the authors' file
(URM 9,590 / WA 11,854 of 21,444); missingness per group is calibrated to paper 000 Table 2
(WA / URM) for X1MTHID (4.8/7.8 %), X1MTHEFF (14.0/20.1 %) and X1PAR2EDU (35.8/51.0 %), and
to the authors'-file rates for the others (X1MTHUTI 10.5/14.5, X1SCHOOLBEL 3.0/4.3,
X1STU30OCC2 1.6/2.5, parent-survey trio X1FAMINCOME/X1P1RELATION/X1PAR1EMP jointly
20.8/26.6). X1PAR2EDU is missing whenever the parent survey is and otherwise with the
probability completing Table 2. Table 2's male/female columns are not calibrated: they are
inconsistent with its WA/URM columns for any race share (X1MTHID: race average ≤ 7.8 % but
both sexes ≥ 9.3 %). The label is a rank split of a latent score whose group shift gives
P(y=1) ≈ 0.451 (URM) / 0.540 (WA).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.datasets.acquire import RawFile
from fairmiss.datasets.csvcheck import read_csv_strict
from fairmiss.datasets.registry import DatasetError, DatasetVariant, register
from fairmiss.io import sha256_file

logger = logging.getLogger(__name__)

HSLS_RAW = RawFile(
    filename="hsls_student.csv",
    url=None,
    sha256=None,
    note=("HSLS:09 public-use student file (NCES, not redistributable): download it from "
          "https://nces.ed.gov/surveys/hsls09/hsls09_data.asp (Online Codebook / EDAT, CSV), "
          "rename it to hsls_student.csv"),
    licence="NCES public-use data; terms of use forbid redistribution and re-identification",
)

FEATURES = ["X1MTHID", "X1MTHUTI", "X1MTHEFF", "X1PAR2EDU", "X1FAMINCOME", "X1P1RELATION",
            "X1PAR1EMP", "X1SCHOOLBEL", "X1STU30OCC2"]
SCALES = {"X1MTHID", "X1MTHUTI", "X1MTHEFF", "X1SCHOOLBEL"}
SCALE_RESERVE = (-9, -8, -7, -6, -5, -4)
RACE, SCORE = "X1RACE", "X1TXMSCR"
URM_CODES, WA_CODES, MULTI_CODE = (1, 3, 4, 5, 7), (2, 8), 6
GROUP, LABEL = "race_wa", "math_top_half"


def _reserve_to_nan(col: str, x: pd.Series) -> pd.Series:
    if col in SCALES:
        return x.mask(x.isin(SCALE_RESERVE))
    return x.mask(x < 0)


def read_hsls(path: Path) -> pd.DataFrame:
    """Read the needed columns of a real-format HSLS student CSV, reserve codes as NaN."""
    path = Path(path)
    need = [RACE, *FEATURES, SCORE]
    # strict: truncated lines, duplicated columns, inf/nan text, non-UTF-8 bytes -> file, line, column
    df = read_csv_strict(path, need, numeric=need, normalize=lambda h: h.strip().upper(), columns="required")
    df = df[need].copy()
    for c in need:
        df[c] = _reserve_to_nan(c, df[c].astype("float64"))
    race = df[RACE]
    bad = sorted(set(race.dropna().unique()) - {*URM_CODES, *WA_CODES, MULTI_CODE})
    if bad:
        raise DatasetError(f"{path}: group column '{RACE}' has unknown category code(s) {bad[:5]}")
    if race.isna().all():
        raise DatasetError(f"{path}: group column '{RACE}' is all missing (reserve codes)")
    if df[SCORE].isna().all():
        raise DatasetError(f"{path}: label column '{SCORE}' is all missing (reserve codes)")
    return df


def _label_top_half(score: pd.Series, how: str) -> pd.Series:
    if how == "rank":
        r = score.rank(method="first")
        return (r > len(score) / 2).astype("int64")
    if how == "above_median":
        return (score > score.median()).astype("int64")
    raise DatasetError(f"hsls: option 'label_split' must be 'rank' or 'above_median', got {how!r}")


def _build_000(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    path = paths[HSLS_RAW.filename]
    df = read_hsls(path)
    info: dict = {"rows_raw": len(df), "raw_sha256_actual": sha256_file(path)}
    df = df.dropna(subset=[RACE, SCORE])
    info["rows_race_score_observed"] = len(df)
    multi = opts["multiracial"]
    if multi not in ("drop", "urm", "wa"):
        raise DatasetError(f"hsls_000: option 'multiracial' must be 'drop', 'urm' or 'wa', got {multi!r}")
    if multi == "drop":
        df = df[df[RACE] != MULTI_CODE]
    info["rows_processed"] = len(df)
    if df.empty:
        raise DatasetError(f"{path}: no rows left after dropping missing '{RACE}'/'{SCORE}'")
    wa = set(WA_CODES) | ({MULTI_CODE} if multi == "wa" else set())
    out = df[FEATURES].copy()
    if opts["scale"] == "minmax":
        lo, hi = out.min(), out.max()
        out = (out - lo) / (hi - lo).replace(0, 1)
    elif opts["scale"] != "none":
        raise DatasetError(f"hsls_000: option 'scale' must be 'none' or 'minmax', got {opts['scale']!r}")
    out[GROUP] = df[RACE].isin(wa).astype("int64")
    out[LABEL] = _label_top_half(df[SCORE], opts["label_split"])
    info.update(_summary(out))
    logger.info("hsls_000: %s", {k: v for k, v in info.items() if k.startswith("rows")})
    return out.reset_index(drop=True), info


def _summary(out: pd.DataFrame) -> dict:
    return {
        "counts_group_label": {f"g{g}_y{y}": int(n) for (g, y), n in out.groupby([GROUP, LABEL]).size().items()},
        "missing_rate_by_group": {
            int(g): {c: round(float(v), 4) for c, v in sub[FEATURES].isna().mean().items()}
            for g, sub in out.groupby(GROUP)
        },
    }


HSLS_000 = register(
    DatasetVariant(
        name="hsls_000",
        description="HSLS:09 public-use student file (user-supplied), paper 000 variant: 9 inputs with real missing values, URM vs White/Asian",
        paper="000 (Fair MIP Forest), spec 000 §3.3",
        raw_files=(HSLS_RAW,),
        builder=_build_000,
        features={c: "numeric" for c in FEATURES},
        group=GROUP,
        group_encoding={0: "URM", 1: "White/Asian"},
        label=LABEL,
        label_encoding={0: "bottom half of X1TXMSCR", 1: "top half of X1TXMSCR"},
        expected_rows=None,
        options={"multiracial": "drop", "label_split": "rank", "scale": "none"},
        option_domains={"multiracial": ("drop", "urm", "wa"), "label_split": ("rank", "above_median"),
                        "scale": ("none", "minmax")},
    )
)


# ---- synthetic stand-in ------------------------------------------------------------------
# (WA, URM) missing probabilities.
TABLE2_TARGETS = {"X1MTHID": (0.048, 0.078), "X1MTHEFF": (0.140, 0.201), "X1PAR2EDU": (0.358, 0.510)}
FILE_TARGETS = {"X1MTHUTI": (0.105, 0.145), "X1SCHOOLBEL": (0.030, 0.043), "X1STU30OCC2": (0.016, 0.025)}
PARENT_SURVEY = ("X1FAMINCOME", "X1P1RELATION", "X1PAR1EMP")
PARENT_TARGET = (0.208, 0.266)
MISSING_TARGETS = {**TABLE2_TARGETS, **FILE_TARGETS, **{c: PARENT_TARGET for c in PARENT_SURVEY}}
N_URM, N_WA = 9590, 11854
P_POS = (0.540, 0.451)  # (WA, URM)


def generate_hsls_synthetic(n: int = N_URM + N_WA, *, seed: int = 0, urm_share: float = N_URM / (N_URM + N_WA)) -> pd.DataFrame:
    """Draw a synthetic HSLS-like table (see module docstring for the calibration)."""
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    n_urm = int(round(n * urm_share))
    g = np.r_[np.zeros(n_urm, dtype=np.int64), np.ones(n - n_urm, dtype=np.int64)]
    rng.shuffle(g)
    idx = g  # 1 = WA → column 0 of the (WA, URM) tuples
    col = 1 - idx
    mu = np.where(g == 1, norm.ppf(P_POS[0]), norm.ppf(P_POS[1]))
    ability = rng.standard_normal(n)
    ses = 0.5 * ability + rng.standard_normal(n) * 0.87 + 0.3 * (g - 0.5)
    X = pd.DataFrame(index=range(n))
    X["X1MTHID"] = np.round(0.5 * ability + 0.87 * rng.standard_normal(n), 2)
    X["X1MTHUTI"] = np.round(0.3 * ability + 0.95 * rng.standard_normal(n), 2)
    X["X1MTHEFF"] = np.round(0.6 * ability + 0.8 * rng.standard_normal(n), 2)
    X["X1PAR2EDU"] = np.clip(np.round(3 + 1.3 * ses + rng.standard_normal(n)), 1, 7)
    X["X1FAMINCOME"] = np.clip(np.round(5 + 2.5 * ses + rng.standard_normal(n)), 1, 13)
    X["X1P1RELATION"] = rng.choice([1, 2, 3, 4, 5, 6, 7, 8], size=n, p=[.66, .2, .03, .03, .02, .02, .02, .02]).astype(float)
    X["X1PAR1EMP"] = np.clip(np.round(2.2 + 0.8 * ses + 0.8 * rng.standard_normal(n)), 1, 4)
    X["X1SCHOOLBEL"] = np.round(0.2 * ability + 0.98 * rng.standard_normal(n), 2)
    X["X1STU30OCC2"] = rng.integers(1, 10, size=n).astype(float)
    # Missingness (per group; parent survey jointly; X1PAR2EDU ⊇ parent survey).
    p = lambda c: np.asarray(MISSING_TARGETS[c])[col]  # noqa: E731
    parent = rng.random(n) < p("X1FAMINCOME")
    for c in PARENT_SURVEY:
        X.loc[parent, c] = np.nan
    q = (p("X1PAR2EDU") - p("X1FAMINCOME")) / (1 - p("X1FAMINCOME"))
    X.loc[parent | (rng.random(n) < q), "X1PAR2EDU"] = np.nan
    for c in [*TABLE2_TARGETS, *FILE_TARGETS]:
        if c != "X1PAR2EDU":
            X.loc[rng.random(n) < p(c), c] = np.nan
    score = mu + ability
    X[GROUP] = g
    X[LABEL] = _label_top_half(pd.Series(score), "rank").to_numpy()
    return X


def _build_synthetic(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    out = generate_hsls_synthetic(opts["n"], seed=opts["seed"])
    info = {"synthetic": True, "seed": opts["seed"], "rows_processed": len(out),
            "calibration_missing_targets": {c: {"WA": t[0], "URM": t[1]} for c, t in MISSING_TARGETS.items()},
            **_summary(out)}
    logger.info("hsls_synthetic (SYNTHETIC): %d rows, seed %d", len(out), opts["seed"])
    return out, info


HSLS_SYNTHETIC = register(
    DatasetVariant(
        name="hsls_synthetic",
        description="SYNTHETIC HSLS-like data calibrated to paper 000 Table 2 missingness by group (not real HSLS data)",
        paper="000 (Fair MIP Forest), spec 000 §3.3 Table 2 — synthetic stand-in",
        raw_files=(),
        builder=_build_synthetic,
        features={c: "numeric" for c in FEATURES},
        group=GROUP,
        group_encoding={0: "URM", 1: "White/Asian"},
        label=LABEL,
        label_encoding={0: "bottom half of latent score", 1: "top half of latent score"},
        expected_rows=N_URM + N_WA,
        synthetic=True,
        options={"n": N_URM + N_WA, "seed": 0},
        option_domains={"n": (50, 10_000_000)},
    )
)

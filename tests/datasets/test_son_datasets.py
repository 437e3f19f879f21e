"""The Shades-of-Null tables (bank, law_school, diabetes, cardio, german_son) built from the data mirror: row
counts, columns, group and label codes against an independent pandas read of each raw file, intersections, the
Great Expectations gate, malformed copies of every raw file (a DatasetError naming file, line and column), and
the CLI (ingest, datasets, validate, a one-cell run)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fairmiss.datasets import get_variant
from fairmiss.datasets.registry import DatasetError
from fairmiss.datasets.son import ONEHOT_COLUMNS
from fairmiss.datasets.validate import validate_table

MIRROR = Path(os.environ.get("FAIRMISS_TEST_MIRROR") or os.environ.get("FAIRMISS_DATA_MIRROR")
              or Path(__file__).resolve().parents[3] / "shared" / "data" / "raw")
FILES = {"bank": ("bank-full.csv", ","), "law_school": ("law_school_clean.csv", ","),
         "diabetes": ("diabetes_dataset__2019.csv", ","), "cardio": ("cardio.csv", ";"),
         "german_son": ("german_data_credit.csv", ",")}
ROWS = {"bank": 40004, "law_school": 20798, "diabetes": 905, "cardio": 70000, "german_son": 1000}
#: protected attributes of the raw files: never features
PROTECTED_RAW = {"bank": ["age"], "law_school": ["race", "male"], "diabetes": ["Gender"], "cardio": ["gender"],
                 "german_son": ["sex", "age"]}


@pytest.fixture(scope="module")
def raw_dir(tmp_path_factory):
    missing = [f for f, _ in FILES.values() if not (MIRROR / f).exists()]
    if missing:  # must fail, not skip: the real-data checks are the point of this module
        pytest.fail(f"data mirror {MIRROR} lacks {missing}; set FAIRMISS_TEST_MIRROR")
    mp = pytest.MonkeyPatch()
    mp.setenv("FAIRMISS_DATA_MIRROR", str(MIRROR))
    yield tmp_path_factory.mktemp("raw")
    mp.undo()


_CACHE: dict = {}


def build(name, raw_dir, **opts):
    key = (name, tuple(sorted(opts.items())))
    if key not in _CACHE:
        _CACHE[key] = get_variant(name).build(raw_dir, **opts)
    return _CACHE[key]


def raw(name) -> pd.DataFrame:
    f, sep = FILES[name]
    return pd.read_csv(MIRROR / f, sep=sep)


def vc(s: pd.Series) -> dict:
    return {int(k): int(v) for k, v in s.value_counts().sort_index().items()}


# ---- every table ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FILES))
def test_builds_with_expected_rows_columns_and_passes_the_gate(name, raw_dir):
    v = get_variant(name)
    df, info = build(name, raw_dir)
    assert len(df) == ROWS[name] == v.expected_rows
    assert list(df.columns) == v.columns
    assert info["rows_processed"] == ROWS[name]
    # the suite removes its protected attributes from the inputs: no feature is (or is derived from) one
    assert not any(f == p or f.startswith(p + "_") for f in v.features for p in PROTECTED_RAW[name])
    assert {v.group, *v.protected}.isdisjoint(v.features)
    # features are numbers; binary ones 0/1 (NaN only where the raw file has a missing marker)
    for c, t in v.features.items():
        assert pd.api.types.is_numeric_dtype(df[c]), c
        if t == "binary":
            assert set(df[c].dropna().unique()) <= {0, 1}, c
    report = validate_table(df, v)
    assert report.success and report.n_expectations > len(v.features)


@pytest.mark.parametrize("name", sorted(FILES))
def test_onehot_blocks_hold_exactly_one_level_per_row(name, raw_dir):
    """Every one-hot block (``<column>_<level>``, two or more columns) sums to 1 where observed and is missing
    as a whole."""
    v = get_variant(name)
    df, _ = build(name, raw_dir)
    r = raw(name)
    blocks = {c: [f for f in v.features if f.startswith(c + "_")] for c in r.columns}
    blocks = {c: b for c, b in blocks.items() if len(b) >= 2}
    assert blocks == {c: list(m.values()) for c, m in ONEHOT_COLUMNS[name].items()}
    for c, cols in blocks.items():
        B = df[cols]
        na = B.isna()
        assert (na.all(axis=1) | ~na.any(axis=1)).all(), c
        assert (B[~na.any(axis=1)].sum(axis=1) == 1).all(), c


# ---- codes against an independent read ----------------------------------------------------------------------

def test_bank_age_band_label_and_unknown_markers(raw_dir):
    df, info = build("bank", raw_dir)
    r = raw("bank")
    privileged = r["age"].between(25, 60)  # the suite lists 18..24 and 61..95 as its disadvantaged ages
    assert set(r.loc[~privileged, "age"]) <= set(range(18, 25)) | set(range(61, 96))
    assert vc(df["age_band"]) == {0: int((~privileged).sum()), 1: int(privileged.sum())}
    assert vc(df["y"]) == {0: int((r["y"] == "no").sum()), 1: int((r["y"] == "yes").sum())}
    assert (df["age_band"] == privileged.astype(int)).all() and (df["y"] == (r["y"] == "yes")).all()
    # 'unknown' is a missing value (the whole one-hot block), every other level its own column
    for c in ["job", "education"]:
        unknown = (r[c] == "unknown").to_numpy()
        assert unknown.sum() > 0
        block = df[[f for f in df.columns if f.startswith(c + "_")]]
        assert (block.isna().all(axis=1).to_numpy() == unknown).all()
        for lv in set(r[c]) - {"unknown"}:
            assert int(df[f"{c}_{lv}"].sum()) == int((r[c] == lv).sum())
    assert (df["marital"] == (r["marital"] == "married")).all()
    assert not {"duration", "contact", "poutcome"} & set(df.columns)
    # the raw age is kept beside the features (raw_coding, read by missingness conditions), never a feature
    assert "age" not in get_variant("bank").features and (df["age"] == r["age"]).all()
    assert info["unknown_markers"]["job"] == 271 and info["unknown_markers"]["education"] == 1688


def test_law_school_race_male_label_and_intersection(raw_dir):
    df, _ = build("law_school", raw_dir)
    r = raw("law_school")
    assert vc(df["race"]) == {0: int((r["race"] == "Non-White").sum()), 1: int((r["race"] == "White").sum())}
    assert vc(df["pass_bar"]) == vc(r["pass_bar"].astype(int))
    assert (df["fulltime"] == (r["fulltime"] == 1)).all()
    for k in range(1, 7):
        assert int(df[f"tier_{k}"].sum()) == int((r["tier"] == k).sum())
    inter, info = build("law_school.race_x_male", raw_dir)
    expected = r.groupby(["race", "male"]).size()
    enc = get_variant("law_school.race_x_male").group_encoding
    assert enc == {0: "Non-White · female", 1: "Non-White · male", 2: "White · female", 3: "White · male"}
    assert vc(inter["race_x_male"]) == {0: int(expected[("Non-White", 0.0)]), 1: int(expected[("Non-White", 1.0)]),
                                        2: int(expected[("White", 0.0)]), 3: int(expected[("White", 1.0)])}
    assert "male" not in get_variant("law_school.race_x_male").features
    male, _ = build("law_school.male", raw_dir)
    assert vc(male["male"]) == vc(r["male"].astype(int))


def test_diabetes_drops_rows_with_empty_cells_and_cleans_text(raw_dir):
    df, info = build("diabetes", raw_dir)
    r = raw("diabetes").dropna()  # the suite's with_nulls=False
    assert len(df) == len(r) == 905 and info["rows_raw"] == 952
    assert vc(df["Gender"]) == {0: int((r["Gender"] == "Female").sum()), 1: int((r["Gender"] == "Male").sum())}
    label = r["Diabetic"].str.strip()
    assert vc(df["Diabetic"]) == {0: int((label == "no").sum()), 1: int((label == "yes").sum())}
    bp = r["BPLevel"].str.strip().str.lower()
    for lv in ["low", "normal", "high"]:
        assert int(df[f"BPLevel_{lv}"].sum()) == int((bp == lv).sum())
    assert int(df["RegularMedicine"].sum()) == int((r["RegularMedicine"] == "yes").sum())  # 'o' is 'no'
    assert (df["Pregnancies"].to_numpy() == r["Pregancies"].to_numpy()).all()
    # duplicates (kept, as the suite keeps them) count rows equal once surrounding blanks are removed
    stripped = raw("diabetes").apply(lambda c: c.str.strip() if c.dtype != float and c.dtype != int else c)
    assert info["duplicate_rows_raw"] == int(stripped.duplicated().sum()) == 624


def test_diabetes_keep_missing_keeps_every_labelled_row(raw_dir):
    df, info = build("diabetes", raw_dir, missing="keep")
    r = raw("diabetes")
    assert len(df) == int(r["Diabetic"].notna().sum()) == 951
    assert int(df["BMI"].isna().sum()) == int(r.loc[r["Diabetic"].notna(), "BMI"].isna().sum()) == 3
    assert int(df["Pregnancies"].isna().sum()) == int(r.loc[r["Diabetic"].notna(), "Pregancies"].isna().sum())
    validate_table(df, get_variant("diabetes"), n_rows=951)


def test_cardio_gender_age_years_and_label(raw_dir):
    df, info = build("cardio", raw_dir)
    r = raw("cardio")
    assert vc(df["gender"]) == {0: int((r["gender"] == 1).sum()), 1: int((r["gender"] == 2).sum())}
    assert vc(df["cardio"]) == vc(r["cardio"])
    assert (df["age"].to_numpy() == (r["age"] / 365).astype(int).to_numpy()).all()  # whole years, as Virny
    for k in (1, 2, 3):
        assert int(df[f"cholesterol_{k}"].sum()) == int((r["cholesterol"] == k).sum())
    assert "id" not in df.columns
    assert info["implausible_kept"]["ap_lo above ap_hi"] == int((r["ap_lo"] > r["ap_hi"]).sum())


def test_german_son_sex_age_band_label_and_intersection(raw_dir):
    df, _ = build("german_son", raw_dir)
    r = raw("german_son")
    assert vc(df["sex"]) == {0: int((r["sex"] == "female").sum()), 1: int((r["sex"] == "male").sum())}
    assert vc(df["class-label"]) == {0: int((r["class-label"] == 0).sum()), 1: int((r["class-label"] == 1).sum())}
    # ' >= 200 DM ' with its trailing blank is the level '>= 200 DM'
    assert int(df["checking-account_ge200"].sum()) == int((r["checking-account"].str.strip() == ">= 200 DM").sum()) == 63
    inter, _ = build("german_son.sex_x_age_band", raw_dir)
    young = r["age"] <= 25  # the suite's disadvantaged ages 19..25
    expected = pd.crosstab(r["sex"] == "male", ~young)
    assert vc(inter["sex_x_age_band"]) == {0: int(expected.loc[False, False]), 1: int(expected.loc[False, True]),
                                           2: int(expected.loc[True, False]), 3: int(expected.loc[True, True])}
    assert not {"age", "age_band"} & set(get_variant("german_son").features)
    assert (df["age"] == r["age"]).all()  # kept beside the features (raw_coding), read by missingness conditions


@pytest.mark.parametrize("name, cols, column", [("law_school", ["race", "male"], "lsat"),
                                                  ("german_son", ["sex", "age_band"], "duration")])
def test_config_group_list_intersects_the_two_protected_attributes(name, cols, column):
    from fairmiss.config import ConfigError, parse_config

    cfg = {"experiment": "x", "seed": 1, "dataset": {"name": name, "group": cols}, "split": {"n_splits": 1},
           "missingness": [{"kind": "mcar", "name": "m", "rates": {column: 0.1}}], "imputers": [{"kind": "mean"}],
           "learners": [{"kind": "logistic_regression", "name": "lr"}]}
    assert parse_config(cfg, "c.yaml").dataset.name == f"{name}.{'_x_'.join(cols)}"
    cfg["dataset"]["group"] = [cols[0], "marital"]
    with pytest.raises(ConfigError, match="not a protected attribute"):
        parse_config(cfg, "c.yaml")


# ---- malformed raw files --------------------------------------------------------------------------------------

NUMERIC_COLUMN = {"bank": "balance", "law_school": "lsat", "diabetes": "BMI", "cardio": "weight",
                  "german_son": "credit-amount"}


def _damaged(name, tmp_path, damage) -> tuple[Path, list[str]]:
    f, sep = FILES[name]
    lines = (MIRROR / f).read_text(encoding="utf-8").split("\n")[:40]
    header = lines[0].rstrip("\r").split(sep)
    lines = damage(lines, header, sep)
    p = tmp_path / f
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p, header


def _build_file(name, p):
    v = get_variant(name)
    return v.builder({p.name: p}, dict(v.options))


def _field_line(line: str, sep: str) -> tuple[list[str], str]:
    cr = "\r" if line.endswith("\r") else ""
    return line.rstrip("\r").split(sep), cr


@pytest.mark.parametrize("name", sorted(FILES))
def test_truncated_row_names_file_line_and_column(name, tmp_path):
    def cut(lines, header, sep):
        fields, cr = _field_line(lines[9], sep)
        lines[9] = sep.join(fields[:5]) + cr
        return lines

    p, header = _damaged(name, tmp_path, cut)
    with pytest.raises(DatasetError) as e:
        _build_file(name, p)
    msg = str(e.value)
    assert str(p) in msg and "line 10" in msg and f"first absent column '{header[5]}'" in msg, msg


@pytest.mark.parametrize("name", sorted(FILES))
def test_non_numeric_value_names_file_line_and_column(name, tmp_path):
    col = NUMERIC_COLUMN[name]

    def text(lines, header, sep):
        fields, cr = _field_line(lines[6], sep)
        fields[header.index(col)] = "abc"
        lines[6] = sep.join(fields) + cr
        return lines

    p, _ = _damaged(name, tmp_path, text)
    with pytest.raises(DatasetError) as e:
        _build_file(name, p)
    msg = str(e.value)
    assert str(p) in msg and "line 7" in msg and f"column '{col}'" in msg and "'abc'" in msg, msg


@pytest.mark.parametrize("name", sorted(FILES))
def test_wrong_delimiter_on_a_line_names_file_line_and_column(name, tmp_path):
    other = {",": ";", ";": ","}

    def swap(lines, header, sep):
        lines[11] = lines[11].replace(sep, other[sep])
        return lines

    p, header = _damaged(name, tmp_path, swap)
    with pytest.raises(DatasetError) as e:
        _build_file(name, p)
    msg = str(e.value)
    assert str(p) in msg and "line 12" in msg and f"first absent column '{header[1]}'" in msg, msg
    assert "wrong delimiter" in msg


@pytest.mark.parametrize("name", sorted(FILES))
def test_whole_file_with_the_wrong_delimiter_is_named(name, tmp_path):
    other = {",": ";", ";": ","}
    p, _ = _damaged(name, tmp_path, lambda lines, header, sep: [ln.replace(sep, other[sep]) for ln in lines])
    with pytest.raises(DatasetError) as e:
        _build_file(name, p)
    msg = str(e.value)
    sep_name = "semicolon" if FILES[name][1] == ";" else "comma"
    assert str(p) in msg and f"must be {sep_name}-separated" in msg and "missing required column" in msg, msg


@pytest.mark.parametrize("name, column, value", [
    ("bank", "job", "astronaut"), ("law_school", "tier", "7.0"), ("diabetes", "Stress", "never"),
    ("cardio", "gluc", "4"), ("german_son", "savings-account", "lots"), ("law_school", "fam_inc", "2.5"),
])
def test_unknown_level_names_file_line_column_and_value(name, column, value, tmp_path):
    def put(lines, header, sep):
        fields, cr = _field_line(lines[4], sep)
        fields[header.index(column)] = value
        lines[4] = sep.join(fields) + cr
        return lines

    p, _ = _damaged(name, tmp_path, put)
    with pytest.raises(DatasetError) as e:
        _build_file(name, p)
    msg = str(e.value)
    assert str(p) in msg and "line 5" in msg and f"column '{column}'" in msg and value in msg, msg


# ---- CLI ------------------------------------------------------------------------------------------------------

def test_cli_ingest_each_and_list(tmp_path):
    from conftest import run_cli

    env = {"FAIRMISS_DATA_MIRROR": str(MIRROR)}
    for name, (f, _) in FILES.items():
        r = run_cli("ingest", name, "--raw-dir", str(tmp_path / "raw"), env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        assert (tmp_path / "raw" / f).read_bytes() == (MIRROR / f).read_bytes()
    r = run_cli("datasets", "--raw-dir", str(tmp_path / "raw"), env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    for name, (f, _) in FILES.items():
        assert name in r.stdout
        assert any(f in line and "present" in line for line in r.stdout.splitlines()), (f, r.stdout)


def _config(tmp_path, **over) -> Path:
    cfg = {
        "experiment": "diabetes_small",
        "seed": 3,
        "dataset": {"name": "diabetes"},
        "split": {"test_size": 0.3, "n_splits": 1},
        "missingness": [{"kind": "mcar", "name": "m20", "rates": {"BMI": 0.2, "SoundSleep": 0.2}}],
        "imputers": [{"kind": "mean"}],
        "learners": [{"kind": "logistic_regression", "name": "lr"}],
        "tracking": {"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}", "log_models": False},
        "execution": {"max_workers": 1},
        **over,
    }
    p = tmp_path / "diabetes.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


def test_cli_validate_refuses_a_protected_attribute_as_masked_column(tmp_path):
    from conftest import run_cli

    p = _config(tmp_path, missingness=[{"kind": "mcar", "name": "m", "rates": {"Gender": 0.2}}])
    r = run_cli("validate", str(p))
    assert r.returncode == 2 and "Gender" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]


@pytest.mark.slow
def test_cli_validate_and_one_cell_run(tmp_path):
    from conftest import run_cli

    env = {"FAIRMISS_DATA_MIRROR": str(MIRROR), "FAIRMISS_RAW_DIR": str(tmp_path / "raw")}
    p = _config(tmp_path)
    r = run_cli("validate", str(p), env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    r = run_cli("run", str(p), "--results-dir", str(tmp_path / "results"), "--processed-dir",
                str(tmp_path / "processed"), env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "mean+lr" in r.stdout
    metrics = tmp_path / "results" / "diabetes_small" / "metrics.json"
    assert metrics.exists()
    processed = pd.read_parquet(tmp_path / "processed" / "diabetes.parquet")
    assert len(processed) == 905 and np.isin(processed["Gender"], [0, 1]).all()

import hashlib

import pandas as pd
import pytest

from fairmiss.datasets import ChecksumError

from fairmiss.datasets import DatasetError

from fairmiss.datasets import RawFile

from fairmiss.datasets import fetch

from fairmiss.datasets import get_variant
from fairmiss.datasets.compas import read_compas
from fairmiss.datasets.validate import DataValidationError, validate_table


def test_compas_000_counts(raw_dir):
    df, info = get_variant("compas_000").build(raw_dir)
    assert info["rows_raw"] == 7214
    assert info["rows_filtered"] == 6172
    assert info["rows_black_white"] == 5278
    assert (info["rows_black"], info["rows_white"]) == (3175, 2103)
    assert info["rows_processed"] == 4206
    assert df["race"].value_counts().to_dict() == {0: 2103, 1: 2103}
    # label is not balanced; White label counts are untouched by downsampling (spec 000 §3.1)
    white = df[df.race == 1]["two_year_recid"].value_counts().to_dict()
    assert white == {0: 1281, 1: 822}
    assert list(df.columns) == ["age_cat_25-45", "age_cat_Greater-than-45", "age_cat_Less-than-25", "sex",
                                "priors_count", "c_charge_degree", "race", "two_year_recid"]
    assert (df[["age_cat_25-45", "age_cat_Greater-than-45", "age_cat_Less-than-25"]].sum(axis=1) == 1).all()


def test_pii_dropped_at_read(compas_csv):
    df = read_compas(compas_csv)
    assert not {"name", "first", "last", "dob"} & set(df.columns)


def test_validation_gate_passes_and_writes_docs(raw_dir, tmp_path):
    v = get_variant("compas_000")
    df, _ = v.build(raw_dir)
    rep = validate_table(df, v, docs_dir=tmp_path / "docs")
    assert rep.success and rep.n_expectations >= 15
    assert (tmp_path / "docs" / "index.html").exists()


def test_validation_gate_lists_failures(raw_dir):
    v = get_variant("compas_000")
    df, _ = v.build(raw_dir)
    bad = df.copy()
    bad.loc[0, "race"] = 3
    bad.loc[1, "priors_count"] = 99
    bad["name"] = "x"
    with pytest.raises(DataValidationError) as ei:
        validate_table(bad, v)
    msg = str(ei.value)
    assert "PII columns present: ['name']" in msg
    assert "'column': 'race'" in msg and "'column': 'priors_count'" in msg


def test_missing_column_names_file_and_column(compas_csv):
    df = pd.read_csv(compas_csv).drop(columns=["priors_count"])
    df.to_csv(compas_csv, index=False)
    with pytest.raises(DatasetError, match=r"compas-scores-two-years.csv: missing required column\(s\) \['priors_count'\]"):
        read_compas(compas_csv)


def test_unexpected_category(compas_csv):
    df = pd.read_csv(compas_csv)
    df.loc[0, "sex"] = "X"
    df.to_csv(compas_csv, index=False)
    with pytest.raises(DatasetError, match="column 'sex' has unexpected values"):
        read_compas(compas_csv)


def test_checksum_mismatch_names_file(raw_dir, mirror):
    good = mirror / "compas-scores-two-years.csv"
    (raw_dir / good.name).write_bytes(good.read_bytes()[: 100_000])  # truncated download
    v = get_variant("compas_000")
    with pytest.raises(ChecksumError, match="compas-scores-two-years.csv: checksum mismatch"):
        v.build(raw_dir)


def test_mirror_copy_is_verified_and_atomic(raw_dir, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "f.csv").write_text("a,b\n1,2\n")
    monkeypatch.setenv("FAIRMISS_DATA_MIRROR", str(mirror))
    rf = RawFile("f.csv", None, hashlib.sha256(b"a,b\n1,2\n").hexdigest())
    assert fetch(rf, raw_dir).read_text() == "a,b\n1,2\n"
    bad = RawFile("g.csv", None, "0" * 64)
    (mirror / "g.csv").write_text("x")
    with pytest.raises(ChecksumError, match="g.csv"):
        fetch(bad, raw_dir)
    assert not (raw_dir / "g.csv").exists()
    assert [p.name for p in raw_dir.iterdir()] == ["f.csv"]

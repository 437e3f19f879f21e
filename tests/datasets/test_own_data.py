"""The user's own CSV / Parquet file named in a config (``dataset: {file:, label:, group:}``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fairmiss import pipeline
from fairmiss.config import ConfigError, load_config
from fairmiss.datasets import DatasetError, get_variant
from fairmiss.datasets.prepare import frame_hash

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "own_data"
MIRROR = Path(os.environ.get("FAIRMISS_DATA_MIRROR") or ROOT.parent / "shared" / "data" / "raw")


def _config(tmp: Path, dataset: dict, **over) -> Path:
    d = yaml.safe_load((EXAMPLE / "credit.yaml").read_text())
    d["dataset"] = dataset
    d["tracking"] = {"uri": f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}", "log_models": False}
    d.update(over)
    p = tmp / "cfg.yaml"
    p.write_text(yaml.safe_dump(d))
    return p


def _example_dataset(file=None) -> dict:
    d = yaml.safe_load((EXAMPLE / "credit.yaml").read_text())["dataset"]
    d["file"] = str(file or EXAMPLE / "credit.csv")
    return d


def test_example_csv_is_small_with_real_nans_and_pii():
    df = pd.read_csv(EXAMPLE / "credit.csv")
    assert (EXAMPLE / "credit.csv").stat().st_size < 100_000 and len(df) == 1000
    assert df["name"].str.startswith("Synthetic Person ").all()
    assert set(df["sex"]) == {"female", "male"} and set(df["default"]) == {"no", "yes"}
    assert df["credit_amount"].isna().sum() > 0 and df["housing"].isna().sum() > 0


def test_example_runs_end_to_end_through_the_library(tmp_path):
    cfg = load_config(_config(tmp_path, _example_dataset()))
    assert cfg.dataset.name.startswith("own_credit_")
    data = pipeline.prepare(cfg.dataset, processed_dir=tmp_path / "processed")
    stem = cfg.dataset.name
    assert sorted(p.name for p in (tmp_path / "processed").iterdir()) == [f"{stem}.json", f"{stem}.parquet"]
    df = data.df
    assert list(df.columns[-2:]) == ["sex", "default"]
    assert set(df["sex"]) == {0, 1} and set(df["default"]) == {0, 1}
    v = get_variant(stem)
    assert v.group_encoding == {0: "female", 1: "male"} and v.label_encoding == {0: "no", 1: "yes"}
    raw = pd.read_csv(EXAMPLE / "credit.csv")
    assert (df["default"] == (raw["default"] == "yes")).all() and (df["sex"] == (raw["sex"] == "male")).all()
    # real NaNs stay NaN (a missing category: NaN in all its one-hot columns); levels in sorted order
    assert df["credit_amount"].isna().sum() == raw["credit_amount"].isna().sum()
    assert [c for c in df.columns if c.startswith("housing_")] == ["housing_free", "housing_own", "housing_rent"]
    assert df[["housing_free", "housing_own", "housing_rent"]].isna().all(axis=1).sum() == raw["housing"].isna().sum()
    purpose = [c for c in df.columns if c.startswith("purpose_")]
    assert purpose == sorted(purpose)
    # the processed table is hashed and versioned like the built-ins
    meta = json.loads((tmp_path / "processed" / f"{stem}.json").read_text())
    assert meta["data_hash"] == data.data_hash == frame_hash(pd.read_parquet(tmp_path / "processed" / f"{stem}.parquet"))
    results = []
    for cell in [c for c in cfg.cells() if c.split_index == 0]:
        split = pipeline.make_split(cfg, data, cell.split_index, cell.missingness)
        r = pipeline.fit_evaluate(cfg, cell, data, split, keep_model=False)
        assert r.error is None if hasattr(r, "error") else True
        results.append(r)
    assert len(results) == 4  # 1 missingness x 2 imputers x 2 learners
    for r in results:
        assert 0.5 < r.metrics["accuracy"] < 0.9
        blob = json.dumps({"metrics": r.metrics, "params": getattr(r, "params", {})}, default=str)
        assert "Synthetic Person" not in blob and '"name"' not in blob
    # the PII column is nowhere in the processed data
    assert "name" not in df.columns and "Synthetic Person" not in (tmp_path / "processed" / f"{stem}.json").read_text()
    assert not df.astype(str).apply(lambda s: s.str.contains("Synthetic")).any().any()


def test_pii_column_is_never_read(tmp_path, monkeypatch):
    """The dropped column is not even parsed: garbage in it (a stray non-number) changes nothing."""
    raw = pd.read_csv(EXAMPLE / "credit.csv")
    raw["name"] = "x,y" if False else "not \"read\""
    f = tmp_path / "credit.csv"
    raw.to_csv(f, index=False)
    cfg = load_config(_config(tmp_path, _example_dataset(f)))
    df, info = get_variant(cfg.dataset.name).build()
    assert "name" not in df.columns and "not" not in json.dumps(info)


def test_copy_of_builtin_table_gives_the_same_processed_table(tmp_path):
    builtin, _ = get_variant("german_sex").build(MIRROR)
    v = get_variant("german_sex")
    f = tmp_path / "german_copy.csv"
    builtin.to_csv(f, index=False)
    miss = [{"kind": "mcar", "name": "mcar_duration", "rates": {"duration": 0.2}}]
    cfg = load_config(_config(tmp_path, {"file": str(f), "label": v.label, "group": v.group}, missingness=miss))
    own = pipeline.prepare(cfg.dataset, processed_dir=tmp_path / "processed")
    pd.testing.assert_frame_equal(own.df, builtin)
    assert own.data_hash == frame_hash(builtin)
    # and the same pipeline gives the same metrics as on the built-in dataset
    bcfg = load_config(_config(tmp_path, {"name": "german_sex"}, missingness=miss))
    base = pipeline.prepare(bcfg.dataset, raw_dir=MIRROR, processed_dir=tmp_path / "processed_builtin")
    assert base.data_hash == own.data_hash
    for c_own, c_base in list(zip(cfg.cells(), bcfg.cells()))[:4]:
        r_own = pipeline.fit_evaluate(cfg, c_own, own, pipeline.make_split(cfg, own, 0, c_own.missingness),
                                      keep_model=False)
        r_base = pipeline.fit_evaluate(bcfg, c_base, base, pipeline.make_split(bcfg, base, 0, c_base.missingness),
                                       keep_model=False)
        assert r_own.metrics == r_base.metrics
    # Parquet copy: the same again
    fp = tmp_path / "german_copy.parquet"
    builtin.to_parquet(fp, index=False)
    cfg2 = load_config(_config(tmp_path, {"file": str(fp), "label": v.label, "group": v.group}, missingness=miss))
    df2, _ = get_variant(cfg2.dataset.name).build()
    assert frame_hash(df2) == frame_hash(builtin)
    assert cfg2.dataset.name != cfg.dataset.name  # two different own-data specs never share a stem


def test_spec_name_depends_on_fields_and_content(tmp_path):
    f = tmp_path / "a.csv"
    f.write_bytes((EXAMPLE / "credit.csv").read_bytes())
    a = load_config(_config(tmp_path, _example_dataset(f))).dataset.name
    b = load_config(_config(tmp_path, {**_example_dataset(f), "categorical": ["purpose", "housing"],
                                       "features": ["age", "duration_months", "purpose", "housing"]})).dataset.name
    f.write_bytes(f.read_bytes().replace(b"\n1,", b"\n1,", 1) + b"Synthetic Person 1001,30,male,6,1000,1,other,own,no\n")
    c = load_config(_config(tmp_path, _example_dataset(f))).dataset.name
    assert len({a, b, c}) == 3


def test_builtin_dataset_spec_dump_unchanged():
    from fairmiss.config.experiment import DatasetSpec

    assert DatasetSpec(name="compas_000").model_dump(mode="json") == {"name": "compas_000", "options": {},
                                                                     "group_as_feature": False}


def _bad_csv(tmp: Path, mutate) -> Path:
    raw = pd.read_csv(EXAMPLE / "credit.csv")
    raw = mutate(raw) if mutate else raw
    f = tmp / "bad.csv"
    raw.to_csv(f, index=False)
    return f


BAD = {
    "no_label_column": (lambda r: r, {"label": "defaulted"}, ["defaulted", "dataset.label"]),
    "label_three_values": (lambda r: r.assign(default=r["default"].where(r.index != 5, "maybe")), {},
                           ["'default'", "line 7", "binary"]),
    "group_one_value": (lambda r: r.assign(sex="female"), {}, ["'sex'", "single value"]),
    "drop_missing": (lambda r: r, {"drop": ["ssn"]}, ["ssn", "dataset.drop"]),
    "text_not_categorical": (lambda r: r, {"categorical": ["purpose"]}, ["'housing'", "non-numeric", "categorical"]),
    "pii_not_dropped": (lambda r: r, {"drop": None}, ["PII", "name"]),
    "positive_unknown": (lambda r: r, {"positive": "Y"}, ["dataset.positive", "'default'"]),
    "empty_label": (lambda r: r.assign(default=r["default"].where(r.index != 3, None)), {}, ["line 5", "'default'"]),
    "few_rows_per_cell": (lambda r: r.assign(sex=np.where(r.index < 3, "other", r["sex"])), {}, ["'other'", "at least 2"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_clear_error_exit_2_nothing_written(tmp_path, case, capsys):
    from flows.cli import main

    mutate, over, words = BAD[case]
    f = _bad_csv(tmp_path, mutate)
    ds = {**_example_dataset(f), **over}
    ds = {k: v for k, v in ds.items() if v is not None}
    cfg = _config(tmp_path, ds)
    with pytest.raises((DatasetError, ConfigError)) as exc:
        load_config(cfg)
    msg = str(exc.value)
    assert str(f) in msg, msg
    for w in words:
        assert w in msg, (w, msg)
    rc = main(["run", str(cfg), "--results-dir", str(tmp_path / "results"),
               "--processed-dir", str(tmp_path / "processed")])
    assert rc == 2
    assert str(f) in capsys.readouterr().err
    assert not (tmp_path / "results").exists() and not (tmp_path / "processed").exists()
    assert not (tmp_path / "mlruns").exists()


def test_malformed_csv_line_and_missing_file(tmp_path):
    f = tmp_path / "bad.csv"
    text = (EXAMPLE / "credit.csv").read_text().splitlines()
    text[10] = text[10] + ",extra"
    f.write_text("\n".join(text) + "\n")
    with pytest.raises(DatasetError, match=r"line 11"):
        load_config(_config(tmp_path, _example_dataset(f)))
    with pytest.raises(DatasetError, match="no such file"):
        load_config(_config(tmp_path, _example_dataset(tmp_path / "nope.csv")))
    (tmp_path / "x.xlsx").write_text("a")
    with pytest.raises(DatasetError, match=r"\.csv or \.parquet"):
        load_config(_config(tmp_path, _example_dataset(tmp_path / "x.xlsx")))
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DatasetError, match="empty file"):
        load_config(_config(tmp_path, _example_dataset(tmp_path / "empty.csv")))


def test_string_groups_sorted_and_group_names(tmp_path):
    f = _bad_csv(tmp_path, lambda r: r.assign(sex=r["sex"].map({"female": 2, "male": 1})))
    cfg = load_config(_config(tmp_path, {**_example_dataset(f), "group_names": {1: "men", 2: "women"}}))
    v = get_variant(cfg.dataset.name)
    assert v.group_encoding == {0: "men", 1: "women"}


def test_numeric_looking_categorical_is_one_hot_in_numeric_order(tmp_path):
    f = _bad_csv(tmp_path, lambda r: r.assign(installment_rate=r["installment_rate"] * 5))
    cfg = load_config(_config(tmp_path, {**_example_dataset(f),
                                         "categorical": ["purpose", "housing", "installment_rate"]}))
    cols = [c for c in get_variant(cfg.dataset.name).features if c.startswith("installment_rate_")]
    assert cols == ["installment_rate_5", "installment_rate_10", "installment_rate_15", "installment_rate_20"]


def test_ingest_writes_starter_config_atomically_and_refuses_overwrite(tmp_path, capsys):
    from flows.cli import main

    out = tmp_path / "starter.yaml"
    args = ["ingest", str(EXAMPLE / "credit.csv"), "--label", "default", "--group", "sex", "--positive", "yes",
            "--out", str(out)]
    assert main(args) == 0
    cfg = load_config(out)
    assert cfg.dataset.drop == ["name"] and cfg.dataset.categorical == ["purpose", "housing"]
    before = out.read_text()
    assert main(args) == 2 and "--force" in capsys.readouterr().err
    assert out.read_text() == before
    assert main([*args, "--force"]) == 0
    bad = tmp_path / "bad.yaml"
    assert main(["ingest", str(EXAMPLE / "credit.csv"), "--label", "nope", "--group", "sex", "--out", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "--label: no column 'nope'" in err and "dataset.label" not in err and not bad.exists()  # the flag typed
    assert main(["ingest", str(EXAMPLE / "credit.csv"), "--label", "default", "--group", "sex", "--positive", "maybe",
                 "--out", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "--positive: 'maybe' is not a value of column 'default'" in err and not bad.exists()


@pytest.mark.slow
def test_flow_run_any_on_own_data(tmp_path):
    from flows.run import run_any

    cfg = _config(tmp_path, _example_dataset(), split={"test_size": 0.3, "n_splits": 1, "stratify": "group_label"})
    out = run_any(cfg, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    assert out["failed"] == []
    m = json.loads((tmp_path / "results" / "example_credit" / "metrics.json").read_text())
    assert m["n_cells"] == 4 and m["dataset"].startswith("own_credit_")
    blob = "".join(p.read_text(errors="ignore") for p in (tmp_path / "results").rglob("*") if p.is_file())
    assert "Synthetic Person" not in blob
    from mlflow.tracking import MlflowClient

    client = MlflowClient(out["tracking_uri"])
    runs = client.search_runs([client.get_run(out["parent_run_id"]).info.experiment_id])
    for r in runs:
        assert "Synthetic Person" not in json.dumps(r.data.params) and "name" not in r.data.params
    # the data's own group names, carried through: MLflow metric names, the name map, the confusion table
    cells = [r for r in runs if r.info.run_id != out["parent_run_id"]]
    assert len(cells) == 4
    for r in cells:
        keys = set(r.data.metrics)
        assert {"fnr_female", "fnr_male", "accuracy_female"} <= keys, sorted(keys)[:40]
        assert not [k for k in keys if "_group_" in k and not k.startswith("imp_")], sorted(keys)
        assert {"female", "male"} <= set(json.loads(r.data.tags["groups.metric_names"]).values())
    confusion = next((tmp_path / "results" / "example_credit").rglob("confusion*.csv")).read_text()
    assert "(female)" in confusion and "(male)" in confusion
    # cell_metrics.csv: coded keys for machines, the group's name beside every per-group row, none elsewhere
    import pandas as pd

    cm = pd.read_csv(tmp_path / "results" / "example_credit" / "cell_metrics.csv", keep_default_na=False)
    groups = json.loads((tmp_path / "results" / "example_credit" / "metrics.json").read_text())["groups"]
    per_group = cm[cm["metric"].str.contains(r"(?:^|_)group_\d+$")]
    assert set(per_group["group"]) == {"female", "male"}, set(per_group["group"])
    for code, name in groups.items():
        assert (per_group[per_group["metric"].str.endswith(f"group_{code}")]["group"] == name).all()
    assert (cm.loc[~cm.index.isin(per_group.index), "group"] == "").all()
    assert (cm["metric"] == "fnr_group_0").any()


@pytest.mark.slow
def test_prepare_flow_takes_an_own_data_config(tmp_path, monkeypatch):
    """``python -m flows.prepare --config CONFIG`` (a DVC stage for an own-data config, the file as its dep)."""
    from flows.prepare import main

    cfg = _config(tmp_path, _example_dataset())
    name = load_config(cfg).dataset.name
    monkeypatch.chdir(tmp_path)  # Data Docs go to reports/datadocs/<name> under the current directory
    assert main(["--config", str(cfg), "--processed-dir", str(tmp_path / "processed")]) == 0
    assert (tmp_path / "processed" / f"{name}.parquet").exists()
    assert main(["--config", str(tmp_path / "nope.yaml"), "--processed-dir", str(tmp_path / "p2")]) == 2
    assert not (tmp_path / "p2").exists()


def test_url_with_sha256_is_fetched_verified_and_checked(tmp_path, monkeypatch):
    """A URL is fetched into the raw directory (here from the mirror, no network) and verified."""
    import hashlib

    from fairmiss.datasets import ChecksumError

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    data = (EXAMPLE / "credit.csv").read_bytes()
    (mirror / "credit_remote.csv").write_bytes(data)
    monkeypatch.setenv("FAIRMISS_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("FAIRMISS_RAW_DIR", str(tmp_path / "raw"))
    ds = {**_example_dataset(), "file": "https://example.invalid/data/credit_remote.csv",
          "sha256": hashlib.sha256(data).hexdigest()}
    cfg = load_config(_config(tmp_path, ds))
    df, _ = get_variant(cfg.dataset.name).build(tmp_path / "raw")
    assert len(df) == 1000 and (tmp_path / "raw" / "credit_remote.csv").exists()
    (tmp_path / "raw" / "credit_remote.csv").unlink()
    with pytest.raises(ChecksumError):
        load_config(_config(tmp_path, {**ds, "sha256": "0" * 64}))

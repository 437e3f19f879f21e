"""Several group columns for own data (``group: [sex, race]``): the groups are their intersections, named by
their values ("female · b"), and every gap is max - min over all of them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fairmiss import pipeline
from fairmiss.config import ConfigError, load_config
from fairmiss.datasets import DatasetError, get_variant
from fairmiss.metrics import evaluate


pytestmark = pytest.mark.usefixtures("variants_forgotten")


def _csv(tmp_path, n=240, seed=0, **cols):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["female", "male"], n), "race": rng.choice(["a", "b", "c"], n),
                       "x1": rng.normal(size=n).round(3), "x2": rng.integers(0, 5, n), "y": rng.choice(["no", "yes"], n)})
    for k, v in cols.items():
        df[k] = v
    p = tmp_path / "people.csv"
    df.to_csv(p, index=False)
    return p, df


def _cfg(tmp_path, dataset: dict) -> str:
    d = {"experiment": "inter", "seed": 1, "dataset": dataset, "split": {"n_splits": 1, "test_size": 0.3},
         "missingness": [{"kind": "none", "name": "none"}], "imputers": [{"kind": "mean"}],
         "learners": [{"kind": "decision_tree", "name": "tree", "max_depth": 2}],
         "tracking": {"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"}}
    p = tmp_path / "cfg.yaml"
    p.write_text(yaml.safe_dump(d))
    return str(p)


def test_two_group_columns_make_one_group_per_intersection(tmp_path):
    path, raw = _csv(tmp_path)
    cfg = load_config(_cfg(tmp_path, {"file": str(path), "label": "y", "positive": "yes", "group": ["sex", "race"],
                                      "group_names": {"female · a": "women, a"}}))
    data = pipeline.prepare(cfg.dataset, processed_dir=tmp_path / "processed")
    assert data.group == "sex_x_race" and data.features == ["x1", "x2"]  # neither group column is a feature
    v = get_variant(cfg.dataset.name)
    assert v.group_encoding == {0: "women, a", 1: "female · b", 2: "female · c", 3: "male · a", 4: "male · b",
                                5: "male · c"}
    expected = (raw["sex"] + " · " + raw["race"]).map({"female · a": 0, "female · b": 1, "female · c": 2,
                                                       "male · a": 3, "male · b": 4, "male · c": 5})
    assert (data.df["sex_x_race"].to_numpy() == expected.to_numpy()).all()
    # a gap over six groups is the largest minus the smallest group rate
    y = data.df["y"].to_numpy()
    pred = (data.df["x1"].to_numpy() > 0).astype(int)
    m = evaluate(y, pred, data.df["sex_x_race"].to_numpy(), metrics=["accuracy", "selection_rate"])
    rates = [pred[data.df["sex_x_race"].to_numpy() == g].mean() for g in range(6)]
    assert m["demographic_parity_difference"] == pytest.approx(max(rates) - min(rates), abs=1e-12)


def test_one_column_in_a_list_is_that_column(tmp_path):
    path, _ = _csv(tmp_path)
    a = load_config(_cfg(tmp_path, {"file": str(path), "label": "y", "positive": "yes", "group": ["sex"],
                                      "drop": ["race"]}))
    b = load_config(_cfg(tmp_path, {"file": str(path), "label": "y", "positive": "yes", "group": "sex",
                                      "drop": ["race"]}))
    assert a.dataset.group == "sex" and a.dataset.name == b.dataset.name and a.config_hash == b.config_hash


@pytest.mark.parametrize("group,expect", [(["sex", "sex"], "names a column twice"),
                                          (["sex", "race", "x1", "x2", "y"], "at most 4"),
                                          (["sex", "nope"], "no column 'nope'"),
                                          (["sex", "y"], "is the label too")])
def test_bad_group_lists_are_one_clear_error(tmp_path, group, expect):
    path, _ = _csv(tmp_path)
    with pytest.raises((ConfigError, DatasetError)) as e:
        cfg = load_config(_cfg(tmp_path, {"file": str(path), "label": "y", "positive": "yes", "group": group}))
        pipeline.prepare(cfg.dataset, processed_dir=tmp_path / "processed")
    assert expect in str(e.value)
    assert not (tmp_path / "processed").exists() or not any((tmp_path / "processed").glob("*.parquet"))


def test_a_missing_value_in_one_group_column_names_that_column(tmp_path):
    n = 240
    race = np.array(["a", "b", "c"] * (n // 3), dtype=object)
    race[7] = None
    path, _ = _csv(tmp_path, race=race)
    with pytest.raises((ConfigError, DatasetError)) as e:
        cfg = load_config(_cfg(tmp_path, {"file": str(path), "label": "y", "positive": "yes",
                                          "group": ["sex", "race"]}))
        pipeline.prepare(cfg.dataset, processed_dir=tmp_path / "processed")
    assert "column 'race'" in str(e.value) and "group may not be missing" in str(e.value)


def test_an_intersection_too_small_to_split_is_refused_by_name(tmp_path):
    n = 240
    sex = np.array(["female", "male"] * (n // 2), dtype=object)
    race = np.array(["a", "b"] * (n // 2), dtype=object)  # female is always a, male always b ...
    race[1] = "c"  # ... but one man is c: the 'male · c' group has one row
    path, _ = _csv(tmp_path, sex=sex, race=race)
    with pytest.raises((ConfigError, DatasetError)) as e:
        cfg = load_config(_cfg(tmp_path, {"file": str(path), "label": "y", "positive": "yes",
                                          "group": ["sex", "race"]}))
        pipeline.prepare(cfg.dataset, processed_dir=tmp_path / "processed")
    assert "'male · c'" in str(e.value) and "at least 2 rows" in str(e.value)


def test_a_two_group_learner_is_refused_before_the_flow_when_intersections_make_more(tmp_path):
    from flows.run import prepare_run

    path, _ = _csv(tmp_path)
    p = _cfg(tmp_path, {"file": str(path), "label": "y", "positive": "yes", "group": ["sex", "race"]})
    d = yaml.safe_load(Path(p).read_text())
    d["learners"] = [{"kind": "fair_mip_forest", "name": "fmf", "n_trees": 1, "max_depth": 1}]
    Path(p).write_text(yaml.safe_dump(d))
    with pytest.raises(ConfigError) as e:
        prepare_run(p, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    assert "fmf is defined for two groups" in str(e.value) and "6 groups" in str(e.value)

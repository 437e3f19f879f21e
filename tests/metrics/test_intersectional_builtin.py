"""Other and intersectional groups of a registered dataset (``dataset: {name: compas_000, group: [race, sex]}``):
the variant ``compas_000.race_x_sex`` is the base table with one group per combination, checked here against
the base table itself (pandas ``groupby`` on the two columns), on the real COMPAS file."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from fairmiss import pipeline
from fairmiss.config import ConfigError, load_config
from fairmiss.datasets import get_variant


pytestmark = pytest.mark.usefixtures("variants_forgotten")


def _cfg(tmp_path, dataset: dict, **extra) -> str:
    d = {"experiment": "inter", "seed": 1, "dataset": dataset, "split": {"n_splits": 1, "test_size": 0.3},
         "missingness": [{"kind": "none", "name": "none"}], "imputers": [{"kind": "mean"}],
         "learners": [{"kind": "decision_tree", "name": "tree", "max_depth": 2}],
         "tracking": {"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"}, **extra}
    p = tmp_path / "cfg.yaml"
    p.write_text(yaml.safe_dump(d))
    return str(p)


def test_race_by_sex_on_compas_is_one_group_per_combination_of_the_base_table(tmp_path):
    cfg = load_config(_cfg(tmp_path, {"name": "compas_000", "group": ["race", "sex"]}))
    assert cfg.dataset.name == "compas_000.race_x_sex"
    data = pipeline.prepare(cfg.dataset, processed_dir=tmp_path / "processed")
    base, _ = get_variant("compas_000").build()
    v = get_variant(cfg.dataset.name)
    assert data.group == "race_x_sex" and "sex" not in data.features and "race" not in data.features
    assert v.group_encoding == {0: "Black · Female", 1: "Black · Male", 2: "White · Female", 3: "White · Male"}
    # every row's group is its (race, sex) pair, named by the base table's codes: race 1 = Caucasian, sex 1 = Male
    expect = base.groupby(["race", "sex"]).size()
    got = data.df.groupby("race_x_sex").size()
    names = {(0, 0): "Black · Female", (0, 1): "Black · Male", (1, 0): "White · Female", (1, 1): "White · Male"}
    inverse = {name: code for code, name in v.group_encoding.items()}
    assert {names[k]: int(n) for k, n in expect.items()} == {v.group_encoding[int(k)]: int(n) for k, n in got.items()}
    assert np.array_equal(data.df["race_x_sex"].to_numpy(),
                          np.array([inverse[names[(r, s)]] for r, s in zip(base["race"], base["sex"])]))
    # the other columns are the base table's
    for c in [*data.features, data.label]:
        assert data.df[c].equals(base[c]), c


def test_both_spellings_and_a_dumped_config_are_one_config(tmp_path):
    a = load_config(_cfg(tmp_path, {"name": "compas_000", "group": ["race", "sex"]}))
    b = load_config(_cfg(tmp_path, {"name": "compas_000.race_x_sex"}))
    assert a.config_hash == b.config_hash and b.dataset.group == ["race", "sex"]
    p = tmp_path / "dumped.yaml"
    p.write_text(yaml.safe_dump(a.model_dump(mode="json")))
    assert load_config(str(p)).config_hash == a.config_hash
    plain = load_config(_cfg(tmp_path, {"name": "compas_000"}))
    assert "group" not in plain.model_dump(mode="json")["dataset"]  # configs without groups keep their hash


@pytest.mark.parametrize("dataset, expect", [
    ({"name": "compas_000", "group": ["race", "priors_count"]},
     "'priors_count' is not a protected attribute of dataset 'compas_000'; its protected attributes: ['race', 'sex']"),
    ({"name": "compas_000", "group": ["sex", "sex"]}, "names a column twice"),
    ({"name": "compas_001", "group": ["race", "sex"]}, "unknown dataset 'compas_001'"),
    ({"name": "compas_000.race_x_sex", "group": ["sex", "race"]}, "names the groups ['race', 'sex'], but group"),
    ({"name": "compas_000", "group": ["race", "sex"], "group_names": {"0": "a"}}, "group_names is for your own data"),
    ({"name": "compas_000", "group": 5}, "group: 5: give a column name or a list of column names"),
    ({"name": "compas_000", "group": []}, "group: []: give a column name or a list of column names"),
    ({"name": "compas_000.race_x_"}, "name 'compas_000.race_x_': give '<dataset>.<column>'"),
    ({"name": "compas_000."}, "name 'compas_000.': give '<dataset>.<column>'"),
    ({"name": "adult_000", "group": ["gender", "race"]}, "its protected attributes: ['gender']"),
])
def test_bad_groups_of_a_registered_dataset_are_one_clear_error(tmp_path, dataset, expect):
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, dataset))
    assert expect in str(e.value)


def test_a_group_column_is_no_longer_a_feature_to_mask(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, {"name": "compas_000", "group": ["race", "sex"]},
                         missingness=[{"kind": "mcar", "name": "m", "rates": {"sex": 0.2}}]))
    assert "'sex' is not a feature of dataset compas_000.race_x_sex" in str(e.value)


def test_sex_alone_on_compas_and_age_by_sex_on_german(tmp_path):
    sex = load_config(_cfg(tmp_path, {"name": "compas_000", "group": "sex"}))
    data = pipeline.prepare(sex.dataset, processed_dir=tmp_path / "processed")
    base, _ = get_variant("compas_000").build()
    assert data.group == "sex" and data.df["sex"].equals(base["sex"]) and "race" not in data.df.columns
    german = load_config(_cfg(tmp_path, {"name": "german_sex", "group": ["sex", "age_group"]}))
    g = pipeline.prepare(german.dataset, processed_dir=tmp_path / "processed")
    assert get_variant(german.dataset.name).group_encoding == {
        0: "female · age < 25", 1: "female · age >= 25", 2: "male · age < 25", 3: "male · age >= 25"}
    assert sorted(g.df["sex_x_age_group"].unique().tolist()) == [0, 1, 2, 3]


def test_a_two_group_learner_is_refused_on_compas_race_by_sex(tmp_path):
    from flows.run import prepare_run

    p = _cfg(tmp_path, {"name": "compas_000", "group": ["race", "sex"]},
             learners=[{"kind": "fair_mip_forest", "name": "fmf", "n_trees": 1, "max_depth": 1}])
    with pytest.raises(ConfigError) as e:
        prepare_run(p, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    assert "fmf is defined for two groups" in str(e.value) and "4 groups" in str(e.value)


def test_fairmiss_datasets_lists_the_groups_each_variant_offers(capsys):
    from flows.cli import main

    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("\ncompas_000 "):].split("\ncompas_002")[0]
    assert "groups (dataset.group)             race (Black / White), sex (Female / Male)" in block, block

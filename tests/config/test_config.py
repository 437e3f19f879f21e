import pytest
import yaml

from fairmiss.config import ConfigError, load_config, parse_config
from fairmiss.seeds import derive_seed

BASE = {
    "experiment": "t",
    "dataset": {"name": "compas_000"},
    "imputers": [{"kind": "mean"}],
    "learners": [{"kind": "decision_tree"}],
}


def _write(tmp_path, data):
    p = tmp_path / "cfg.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_default_config_loads():
    cfg = load_config("params/compas_default.yaml")
    assert cfg.dataset.name == "compas_000"
    assert len(cfg.cells()) == 10 * 1 * 2 * 1


def test_unknown_key_names_key_and_file(tmp_path):
    p = _write(tmp_path, {**BASE, "split": {"n_splits": 2, "ratio": 0.3}})
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    msg = str(ei.value)
    assert str(p) in msg and "unknown key 'split.ratio'" in msg


def test_unknown_learner_hyperparameter_rejected(tmp_path):
    p = _write(tmp_path, {**BASE, "learners": [{"kind": "decision_tree", "max_dpth": 3}]})
    with pytest.raises(ConfigError, match=r"learners\.0\.decision_tree\.max_dpth"):
        load_config(p)


def test_out_of_range_rate(tmp_path):
    p = _write(tmp_path, {**BASE, "missingness": [{"kind": "mcar_group", "name": "m", "rates": {"sex": {0: 1.5}}}]})
    with pytest.raises(ConfigError, match=r"missingness\.0\.mcar_group\.rates\.sex\.0.*less than or equal to 1"):
        load_config(p)


def test_unknown_dataset_and_preset(tmp_path):
    with pytest.raises(ConfigError, match="unknown dataset 'nope'"):
        parse_config({**BASE, "dataset": {"name": "nope"}}, "x.yaml")
    with pytest.raises(ConfigError, match="unknown preset"):
        parse_config({**BASE, "missingness": [{"kind": "preset", "preset": "zzz"}]}, "x.yaml")


def test_unknown_kind(tmp_path):
    with pytest.raises(ConfigError, match=r"learners\.0"):
        parse_config({**BASE, "learners": [{"kind": "svm"}]}, "x.yaml")


def test_nan_path_requires_native_missing_learner():
    with pytest.raises(ConfigError, match="need an imputer"):
        parse_config({**BASE, "imputers": [{"kind": "none"}], "learners": [{"kind": "logistic_regression"}]})
    cfg = parse_config({**BASE, "imputers": [{"kind": "none"}], "learners": [{"kind": "hist_gradient_boosting"}]})
    assert cfg.imputers[0].kind == "none"


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    p = tmp_path / "bad.yaml"
    p.write_text("experiment: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)


def test_seeds_derived_not_global():
    a = derive_seed(1, "split", 0)
    assert a == derive_seed(1, "split", 0)
    assert a != derive_seed(1, "split", 1) != derive_seed(2, "split", 0)
    # adding a learner does not move other cells' seeds: seeds depend only on their own keys
    assert derive_seed(1, "learner", "tree", 0) == derive_seed(1, "learner", "tree", 0)


def test_config_hash_changes_with_content():
    a = parse_config(BASE).config_hash
    b = parse_config({**BASE, "seed": 1}).config_hash
    assert a != b and a == parse_config(BASE).config_hash


def test_config_hash_ignores_execution_and_tracking():
    a = parse_config(BASE).config_hash
    assert a == parse_config({**BASE, "execution": {"max_workers": 1}, "tracking": {"uri": "sqlite:///x.db"}}).config_hash

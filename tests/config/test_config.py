import re

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


@pytest.mark.parametrize("change,key,expected", [
    ({"seed": True}, "seed", "an integer"),
    ({"split": {"n_splits": True}}, "split.n_splits", "an integer"),
    ({"split": {"test_size": True}}, "split.test_size", "a number"),
    ({"imputers": [{"kind": "knn", "n_neighbors": True}]}, "imputers.0.knn.n_neighbors", "an integer"),
    ({"learners": [{"kind": "decision_tree", "max_depth": True}]}, "learners.0.decision_tree.max_depth", "an integer"),
    ({"execution": {"cells_per_task": True}}, "execution.cells_per_task", "an integer"),
    ({"evaluation": {"bootstrap": False}}, "evaluation.bootstrap", "an integer"),
    ({"min_group_size": True}, "min_group_size", "an integer"),
    ({"missingness": [{"kind": "mcar", "name": "m", "rates": {"priors_count": True}}]},
     "missingness.0.mcar.rates.priors_count", "a number"),
    ({"missingness": [{"kind": "mcar_group", "name": "m", "rates": {"priors_count": {0: False}}}]},
     "missingness.0.mcar_group.rates.priors_count.0", "a number"),
])
def test_a_boolean_where_a_number_is_expected_is_refused(change, key, expected):
    """YAML's true / false where a seed, a count or a rate is expected: pydantic's lax mode read them as 1 and 0
    (`seed: true` ran with seed 1, `n_neighbors: true` with one neighbour); now one error naming the key."""
    with pytest.raises(ConfigError) as ei:
        parse_config({**BASE, **change}, "x.yaml")
    assert str(ei.value).startswith(f"x.yaml: invalid config: {key}: Input should be {expected}, not true or false "
                                    "(got "), str(ei.value)


def test_a_boolean_where_a_boolean_is_allowed_still_passes():
    cfg = parse_config({**BASE, "tracking": {"log_models": False}, "execution": {"resume": True},
                        "imputers": [{"kind": "knn", "n_neighbors": 3, "add_indicator": True}]})
    assert cfg.tracking.log_models is False and cfg.imputers[0].n_neighbors == 3


def test_a_boolean_seed_of_a_study_config_is_refused(tmp_path):
    from fairmiss.config import load_study_config

    from conftest import ROOT

    data = yaml.safe_load((ROOT / "params" / "studies" / "003_decile_compas.yaml").read_text())
    data["seed"] = True
    p = _write(tmp_path, data)
    with pytest.raises(ConfigError, match=r"seed: Input should be an integer, not true or false"):
        load_study_config(p)


@pytest.mark.parametrize("missingness,key", [
    ({"kind": "mcar", "name": "m", "rates": {}}, "missingness.0.mcar.rates"),
    ({"kind": "mcar_group", "name": "m", "rates": {}}, "missingness.0.mcar_group.rates"),
    ({"kind": "mcar_group", "name": "m", "rates": {"priors_count": {}}}, "missingness.0.mcar_group.rates.priors_count"),
    ({"kind": "mnar_censor", "name": "m", "columns": [], "rate": 0.2}, "missingness.0.mnar_censor.columns"),
    ({"kind": "mcar_block", "name": "m", "columns": ["priors_count"], "rates_by_group": {}},
     "missingness.0.mcar_block.rates_by_group"),
])
def test_an_empty_missingness_mapping_is_refused(missingness, key):
    """An empty `rates: {}` (or column list) masked nothing while the cells were labelled with the mechanism."""
    with pytest.raises(ConfigError, match=rf"^x\.yaml: invalid config: {re.escape(key)}: "
                                          r"(Dictionary|List) should have at least 1 item"):
        parse_config({**BASE, "missingness": [missingness]}, "x.yaml")


def test_a_learner_restricted_to_no_imputer_is_refused():
    """`imputers: []` paired the learner with no imputer: it silently had no cells."""
    with pytest.raises(ConfigError, match=r"^x\.yaml: invalid config: learners\.0\.decision_tree\.imputers: List "
                                          r"should have at least 1 item"):
        parse_config({**BASE, "learners": [{"kind": "decision_tree", "imputers": []}]}, "x.yaml")

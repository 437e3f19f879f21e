"""Dataset options are checked for their values, not only their types, when a config is loaded: a value the
builder cannot use (``n: 0`` of a synthetic table, a negative seed, an unknown ``filter``) is one config error
naming ``dataset.options.<key>`` from ``validate``, not a ZeroDivisionError in every cell of ``run``."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT

from fairmiss.config import ConfigError, parse_config
from fairmiss.datasets import get_variant, list_variants


def _config(dataset: dict) -> dict:
    cfg = yaml.safe_load((ROOT / "params" / "compas_default.yaml").read_text())
    cfg["dataset"], cfg["missingness"] = dataset, [{"kind": "none"}]
    return cfg


@pytest.mark.parametrize("name,options,words", [
    ("hcp_synthetic", {"n": 0}, "dataset.options.n: must be between 50 and"),
    ("hsls_synthetic", {"n": -5}, "dataset.options.n: must be between 50 and"),
    ("hcp_synthetic", {"seed": -1}, "dataset.options.seed: must be between 0 and 4294967295"),
    ("compas_000", {"balance_seed": 2**40}, "dataset.options.balance_seed: must be between 0"),
    ("compas_002", {"filter": "bogus"}, "dataset.options.filter: must be one of 'propublica', 'none', got 'bogus'"),
    ("hcp_synthetic", {"prevalence": 2.0}, "dataset.options.prevalence: must be between 0.01 and 0.99"),
    ("adult_000", {"mode": "raw"}, "dataset.options.mode: must be one of 'legacy', 'clean'"),
    ("hsls_000", {"scale": "zscore"}, "dataset.options.scale: must be one of 'none', 'minmax'"),
    # every row in one age group: refused only once the data were built, after the command had started
    ("german_004", {"age_threshold": 500}, "dataset.options.age_threshold: must be between 20 and 75, got 500"),
    ("german_004", {"age_threshold": -1}, "dataset.options.age_threshold: must be between 20 and 75, got -1"),
])
def test_an_option_value_the_builder_cannot_use_is_a_config_error(name, options, words):
    with pytest.raises(ConfigError, match=f"^x.yaml: {words}".replace("(", r"\(").replace(")", r"\)")):
        parse_config(_config({"name": name, "options": options}), "x.yaml")


def test_every_default_is_inside_its_own_domain():
    for v in list_variants():
        assert v.option_problems(dict(v.options)) == [], v.name


def test_values_inside_the_domain_pass():
    assert get_variant("hcp_synthetic").option_problems({"n": 50, "seed": 0, "prevalence": 0.99}) == []
    assert get_variant("compas_002").option_problems({"filter": "none"}) == []


def test_an_integer_beyond_64_bits_is_named_at_load():
    cfg = _config({"name": "compas_000"})
    cfg["learners"] = [{"kind": "decision_tree", "max_depth": 10**30}]  # every cell failed with OverflowError
    with pytest.raises(ConfigError, match=r"^x.yaml: learners.0.max_depth: 10{30} does not fit a 64-bit integer$"):
        parse_config(cfg, "x.yaml")


def test_the_german_age_threshold_domain_is_where_both_groups_have_rows(mirror):
    """``age_threshold`` of german_004 (group = age >= threshold): 20 … 75 are exactly the thresholds that leave
    rows on both sides in the raw file (ages 19 … 75)."""
    from fairmiss.datasets.german import read_german

    age = read_german(mirror / "german.data")["age"]
    lo, hi = get_variant("german_004").option_domains["age_threshold"]
    assert (lo, hi) == (int(age.min()) + 1, int(age.max()))
    for t in (lo, hi):
        assert 0 < int((age >= t).sum()) < len(age)
    for t in (lo - 1, hi + 1):
        assert int((age >= t).sum()) in (0, len(age))

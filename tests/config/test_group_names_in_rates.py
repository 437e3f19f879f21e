"""Missingness rates keyed by groups or labels take the data's own names as well as their codes: the names are
stored as the codes, so the two spellings are one config (one hash), and a name the data do not have is one
clear error listing every code with its name."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import ROOT, run_cli

from fairmiss.config import ConfigError, load_config, parse_config
from fairmiss.datasets import get_variant

BASE = {"experiment": "names", "seed": 1, "dataset": {"name": "compas_000"},
        "split": {"test_size": 0.3, "n_splits": 2}, "imputers": [{"kind": "mean"}],
        "learners": [{"kind": "decision_tree", "name": "t", "max_depth": 3}]}


def _specs(g, lab, col):
    """The three kinds with group- or label-keyed rates; ``g`` / ``lab`` map code -> the key written."""
    return [{"kind": "mcar_group", "name": "m", "rates": {col: {g[0]: 0.1, g[1]: 0.3}}},
            {"kind": "label_driven", "name": "l", "columns": [col],
             "rates_by_group_label": {g[0]: {lab[0]: 0.1, lab[1]: 0.2}, g[1]: {lab[0]: 0.3, lab[1]: 0.0}}},
            {"kind": "label_driven", "name": "l2", "columns": [col], "rates_by_label": {lab[0]: 0.2, lab[1]: 0.5}},
            {"kind": "mcar_block", "name": "b", "columns": [col], "rates_by_group": {g[0]: 0.1, g[1]: 0.2}}]


def test_names_and_codes_are_one_config():
    v = get_variant("compas_000")
    col = sorted(v.features)[0]
    codes = parse_config({**copy.deepcopy(BASE), "missingness": _specs({0: 0, 1: 1}, {0: 0, 1: 1}, col)})
    named = parse_config({**copy.deepcopy(BASE), "missingness": _specs(v.group_encoding, v.label_encoding, col)})
    mixed = parse_config({**copy.deepcopy(BASE), "missingness": _specs({0: v.group_encoding[0], 1: 1},
                                                                        {0: 0, 1: v.label_encoding[1]}, col)})
    assert codes.config_hash == named.config_hash == mixed.config_hash
    assert named.missingness[0].rates == {col: {0: 0.1, 1: 0.3}}
    assert named.missingness[2].rates_by_label == {0: 0.2, 1: 0.5}


@pytest.mark.parametrize("where", ["group", "label"])
def test_a_name_the_data_do_not_have_lists_the_codes_and_names(where):
    v = get_variant("compas_000")
    col = sorted(v.features)[0]
    specs = _specs(v.group_encoding, v.label_encoding, col)
    if where == "group":
        specs[0]["rates"][col] = {"Blak": 0.1}
        field, listed = "missingness.0.rates." + col, "0 = Black, 1 = White"
    else:
        specs[2]["rates_by_label"] = {"no": 0.1}
        field, listed = "missingness.2.rates_by_label", "0 = no recidivism"
    with pytest.raises(ConfigError) as e:
        parse_config({**copy.deepcopy(BASE), "missingness": specs}, "c.yaml")
    msg = str(e.value)
    assert msg.startswith(f"c.yaml: {field}: ") and f"is not a {where} of dataset compas_000" in msg and listed in msg


def test_own_data_group_names_through_the_command(tmp_path):
    """An own CSV: its group values as keys (what a user types); validate accepts them and a misspelled one
    is exit 2 with one line naming the file, the field and the groups."""
    cfg = yaml.safe_load((ROOT / "examples" / "own_data" / "credit.yaml").read_text())
    cfg["dataset"]["file"] = str(ROOT / "examples" / "own_data" / "credit.csv")
    cfg["missingness"] = [{"kind": "mcar_group", "name": "by_sex", "rates": {"age": {"female": 0.1, "male": 0.4}}}]
    good = tmp_path / "names.yaml"
    good.write_text(yaml.safe_dump(cfg, sort_keys=False))
    codes = copy.deepcopy(cfg)
    codes["missingness"][0]["rates"] = {"age": {0: 0.1, 1: 0.4}}
    (tmp_path / "codes.yaml").write_text(yaml.safe_dump(codes, sort_keys=False))
    assert load_config(good).config_hash == load_config(tmp_path / "codes.yaml").config_hash
    cfg["missingness"][0]["rates"] = {"age": {"femal": 0.1}}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg, sort_keys=False))
    r = run_cli("validate", str(bad))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fairmiss: error: {bad}: missingness.0.rates.age: 'femal' is not "
                                                   "a group of dataset own_credit"), r.stderr
    assert "0 = female, 1 = male" in lines[0]

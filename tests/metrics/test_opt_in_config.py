"""The opt-in keys ``evaluation.stability``, ``evaluation.imputation_quality`` and ``dataset.privileged``: left
out of dumps while unset (hashes and cache keys of existing configs unchanged), in the cache key when set, and
bad values refused as one line naming the key (config loader and ``fairmiss validate``)."""

from __future__ import annotations

import pytest
import yaml
from conftest import run_cli

from fairmiss.config import ConfigError, load_config
from fairmiss.pipeline.cell import cell_cache_key, cell_params

BASE = {"experiment": "opt", "seed": 3, "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
        "learners": [{"kind": "logistic_regression"}]}


def _cfg(tmp_path, **extra):
    d = {**BASE, **extra}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(d))
    return load_config(str(p))


def test_unset_keys_leave_hashes_and_cache_keys_unchanged(tmp_path):
    a = _cfg(tmp_path)
    b = _cfg(tmp_path, evaluation={"imputation_quality": False})
    assert a.config_hash == b.config_hash and "privileged" not in a.model_dump(mode="json")["dataset"]
    old = _cfg(tmp_path, evaluation={"bootstrap": 200})
    assert "stability" not in old.model_dump(mode="json")["evaluation"]
    assert "imputation_quality" not in old.model_dump(mode="json")["evaluation"]
    key = lambda c: cell_cache_key(c, c.cells()[0], data_hash="d", code_version="v")  # noqa: E731
    for extra in ({"evaluation": {"stability": {"estimators": 5}}}, {"evaluation": {"imputation_quality": True}},
                  {"dataset": {"name": "compas_000", "privileged": "White"}}):
        c = _cfg(tmp_path, **extra)
        assert c.config_hash != a.config_hash and key(c) != key(a)
    c = _cfg(tmp_path, evaluation={"stability": {"estimators": 5}}, dataset={"name": "compas_000", "privileged": 1})
    p = cell_params(c, c.cells()[0])
    assert p["evaluation.stability.estimators"] == 5 and p["evaluation.stability.fraction"] == 0.8
    assert p["dataset.privileged"] == 1
    # a name and its code are one config
    named = _cfg(tmp_path, evaluation={"stability": {"estimators": 5}},
                 dataset={"name": "compas_000", "privileged": "White"})
    assert named.config_hash == c.config_hash and named.dataset.privileged == 1


@pytest.mark.parametrize("extra,key", [
    ({"evaluation": {"stability": {"fraction": 0}}}, "evaluation.stability.fraction"),
    ({"evaluation": {"stability": {"fraction": 1.2}}}, "evaluation.stability.fraction"),
    ({"evaluation": {"stability": {"fraction": -0.5}}}, "evaluation.stability.fraction"),
    ({"evaluation": {"stability": {"estimators": 1}}}, "evaluation.stability.estimators"),
    ({"evaluation": {"stability": {"estimators": 0}}}, "evaluation.stability.estimators"),
    ({"evaluation": {"stability": {"n": 5}}}, "evaluation.stability.n"),
    ({"evaluation": {"imputation_quality": "maybe"}}, "evaluation.imputation_quality"),
    ({"dataset": {"name": "compas_000", "privileged": "Whte"}}, "dataset.privileged"),
    ({"dataset": {"name": "compas_000", "privileged": 7}}, "dataset.privileged"),
])
def test_bad_values_are_one_line_naming_the_key(tmp_path, extra, key):
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, **extra)
    msg = str(e.value)
    assert key in msg and "c.yaml" in msg and "\n" not in msg


@pytest.mark.parametrize("extra,key", [({"evaluation": {"stability": {"estimators": 50, "fraction": 0}}},
                                        "evaluation.stability.fraction"),
                                       ({"evaluation": {"stability": {"estimators": 1}}},
                                        "evaluation.stability.estimators"),
                                       ({"dataset": {"name": "compas_000", "privileged": "nobody"}},
                                        "dataset.privileged")])
def test_cli_validate_refuses(tmp_path, extra, key):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump({**BASE, **extra}))
    r = run_cli("validate", str(p))
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith("fairmiss: error:") and key in lines[0] and "bad.yaml" in lines[0]
    assert not list(tmp_path.glob("results*")), "nothing written"

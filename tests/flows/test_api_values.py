"""``flows.api.run`` takes a config dict built in a notebook: numpy numbers in it are config values like any other
(they failed with yaml's RepresenterError), and a value YAML cannot hold is one ConfigError naming its key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import small_config

from fairmiss.config import ConfigError, load_config
from flows.api import _write_yaml


def test_numpy_values_are_written_as_plain_numbers(tmp_path):
    cfg = yaml.safe_load(small_config(tmp_path).read_text())
    cfg["split"]["test_size"] = np.float64(0.3)
    cfg["seed"] = np.int64(7)
    cfg["learners"][0]["max_depth"] = np.int32(3)
    path = _write_yaml(cfg, tmp_path / "out")
    loaded = load_config(path)
    assert loaded.split.test_size == 0.3 and loaded.seed == 7 and loaded.learners[0].max_depth == 3
    assert load_config(small_config(tmp_path / "ref")).cells()[0].key == loaded.cells()[0].key


def test_a_value_yaml_cannot_hold_names_its_key(tmp_path):
    cfg = yaml.safe_load(small_config(tmp_path).read_text())
    cfg["learners"][0]["max_depth"] = object()
    with pytest.raises(ConfigError, match=r"learners\.0\.max_depth: a object cannot be written"):
        _write_yaml(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written


def test_an_invalid_dict_config_names_its_key_not_a_temporary_file(tmp_path):
    """The dict is written to a temporary config.yaml for the flow; an error names the key and ``<config dict>``,
    never that file (deleted by the time the user reads the message). Nothing starts: the check comes first."""
    from flows.api import run

    cfg = yaml.safe_load(small_config(tmp_path).read_text())
    cfg["split"]["test_size"] = 1.5
    with pytest.raises(ConfigError) as e:
        run(cfg, results_dir=tmp_path / "results", processed_dir=tmp_path / "processed")
    msg = str(e.value)
    assert msg.startswith("<config dict>: ") and "split.test_size" in msg, msg
    assert "fairmiss-api-" not in msg and "config.yaml" not in msg, msg
    assert not (tmp_path / "results").exists() and not (tmp_path / "processed").exists()

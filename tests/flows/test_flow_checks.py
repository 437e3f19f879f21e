"""A flow started without a command's checks (a scheduled deployment of ``fairmiss serve``, a run from the Prefect
UI or from Python: no ``config_hash``) makes the table's checks itself, before ``processed/`` or the Data Docs are
written — the same refusal ``fairmiss run`` gives before any server starts."""

from __future__ import annotations

import pytest
from conftest import small_config

from fairmiss.config import ConfigError
from flows.experiment import run_experiment


@pytest.mark.slow
@pytest.mark.parametrize("over, words", [
    ({"learners": [{"kind": "estimator", "name": "lr_l1", "estimator": "sklearn.linear_model.LogisticRegression",
                    "params": {"penalty": "l1", "solver": "lbfgs"}}]}, ["learners.0: lr_l1", "could not be fitted"]),
    ({"min_group_size": 5000}, ["min_group_size: 5000", "give at most"]),
], ids=["unfittable-estimator", "min-group-size-above-every-group"])
def test_the_flow_checks_the_table_before_writing_it(tmp_path, over, words):
    cfg = small_config(tmp_path, **over)
    processed = tmp_path / "processed"
    with pytest.raises(ConfigError) as err:
        run_experiment(cfg, results_dir=str(tmp_path / "results"), processed_dir=str(processed))
    for w in words:
        assert w in str(err.value), str(err.value)
    written = sorted(str(p.relative_to(tmp_path)) for p in processed.rglob("*") if p.is_file()) \
        if processed.exists() else []
    assert written == [], written  # neither the table nor the kept build
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.json"))

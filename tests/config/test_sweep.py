"""A learner's ``sweep:`` (fairmiss.config.sweep): one learner per point, named ``<name>,<param>=<value>``, the same
cells (same cache keys) as the learners written out by hand; bad sweeps name the entry, the parameter and the
problem."""

from __future__ import annotations

import pytest

from fairmiss.config import ConfigError, parse_config
from fairmiss.config.sweep import family
from fairmiss.pipeline import cell_cache_key

BASE = {"experiment": "t", "seed": 3, "dataset": {"name": "compas_000"}, "split": {"n_splits": 2},
        "missingness": [{"kind": "mcar", "name": "m", "rates": {"priors_count": 0.2}}], "imputers": [{"kind": "mean"}]}


def _cfg(learners):
    return parse_config({**BASE, "learners": learners})


def test_sweep_is_the_learners_written_out():
    swept = _cfg([{"kind": "exponentiated_gradient", "name": "eg", "sweep": {"eps": [0.01, 0.05]}},
                  {"kind": "logistic_regression", "name": "lr"}])
    hand = _cfg([{"kind": "exponentiated_gradient", "name": "eg,eps=0.01", "eps": 0.01},
                 {"kind": "exponentiated_gradient", "name": "eg,eps=0.05", "eps": 0.05},
                 {"kind": "logistic_regression", "name": "lr"}])
    assert [ln.label for ln in swept.learners] == ["eg,eps=0.01", "eg,eps=0.05", "lr"]
    keys = [{c.key: cell_cache_key(cfg, c, data_hash="d", code_version="c") for c in cfg.cells()}
            for cfg in (swept, hand)]
    assert keys[0] == keys[1] and len(keys[0]) == 2 * 3
    assert {family(ln.label) for ln in swept.learners} == {"eg", "lr"}


def test_two_parameters_make_their_product_in_order():
    cfg = _cfg([{"kind": "decision_tree", "sweep": {"max_depth": [2, 4], "min_samples_leaf": [1, 5]}}])
    assert [ln.label for ln in cfg.learners] == [
        "decision_tree,max_depth=2,min_samples_leaf=1", "decision_tree,max_depth=2,min_samples_leaf=5",
        "decision_tree,max_depth=4,min_samples_leaf=1", "decision_tree,max_depth=4,min_samples_leaf=5"]
    assert [(ln.max_depth, ln.min_samples_leaf) for ln in cfg.learners] == [(2, 1), (2, 5), (4, 1), (4, 5)]


@pytest.mark.parametrize("entry,expect", [
    ({"sweep": {"eps": []}}, "learners.0.sweep.eps: a non-empty list"),
    ({"sweep": []}, "learners.0.sweep: a mapping"),
    ({"sweep": {"kind": [1, 2]}}, "learners.0.sweep.kind: cannot be swept"),
    ({"sweep": {"nope": [1, 2]}}, "learners.0.sweep.nope: 'exponentiated_gradient' has no parameter 'nope'"),
    ({"sweep": {"eps": [0.1]}, "eps": 0.2}, "learners.0.sweep.eps: also given outside the sweep"),
    ({"sweep": {"eps": [0.1, 0.1]}}, "learners.0.sweep.eps: a value is listed twice"),
    ({"sweep": {"eps": [{"a": 1}]}}, "learners.0.sweep.eps: values must be numbers"),
    ({"name": "e,g", "sweep": {"eps": [0.1]}}, "cannot hold ','"),
    ({"sweep": {"eps": ["high"]}}, "eps"),  # a value of the wrong type: the point's own validation names the key
])
def test_bad_sweeps_are_named(entry, expect):
    with pytest.raises(ConfigError) as e:
        _cfg([{"kind": "exponentiated_gradient", "name": "eg", **entry}])
    assert expect in str(e.value)

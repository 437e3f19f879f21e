"""Learners that use the groups, on more than two of them (``dataset.group: [sex, race]``: six intersections).

Every registered learner kind that needs the groups and is not declared for two groups only runs a cell on six
intersections and is scored over all six; the ones whose constraint is over the groups (fairlearn's reductions and
threshold optimiser, the Feng interventions built on them) shrink the six-group gap they target against the same
base learner without it. The two-group-only kinds are refused before the flow (test_intersectional)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from fairmiss.learners.adapter import LEARNER_KINDS

pytestmark = pytest.mark.usefixtures("variants_forgotten")

#: a small, quick setting of each k-group kind (defaults elsewhere); a kind registered later without an entry
#: here runs with its defaults
QUICK = {
    "group_covariate": {},
    "equality_constrained": {"n_estimators": 3, "max_depth": 3},
    "exponentiated_gradient": {"constraint": "fnr", "eps": 0.01, "max_depth": 2, "max_iter": 30},
    "threshold_optimizer": {"constraint": "equalized_odds", "max_depth": 2},
    "orthogonal": {"n_components": 2, "head": "logistic"},
    "zafar": {"constraint": "fnr", "max_iter": 30},
    "fairmissbag": {"n_estimators": 3, "base": {"kind": "exponentiated_gradient", "max_iter": 20, "max_depth": 2}},
    "pattern_clusters": {"base": {"kind": "exponentiated_gradient", "max_iter": 20, "max_depth": 2}},
}
K_GROUP_KINDS = sorted(LEARNER_KINDS.with_flag("needs_groups") - LEARNER_KINDS.with_flag("two_groups"))
GROUPS = [f"{s} · {r}" for s in ("female", "male") for r in ("a", "b", "c")]


def _people(path, n=1800, seed=3):
    """Six intersections with different base rates and a feature whose meaning differs by group, so that an
    unconstrained tree has clearly different error rates per intersection; a few missing x2 values."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["female", "male"], n)
    race = rng.choice(["a", "b", "c"], n)
    x1 = rng.normal(size=n)
    x2 = rng.normal(size=n)
    shift = (sex == "male") * 0.8 + (race == "b") * -0.6 + ((sex == "female") & (race == "c")) * 1.2
    p = 1 / (1 + np.exp(-(1.5 * x1 + 0.7 * x2 + shift)))
    y = np.where(rng.random(n) < p, "yes", "no")
    df = pd.DataFrame({"sex": sex, "race": race, "x1": x1.round(4), "x2": x2.round(4), "y": y})
    df.loc[rng.random(n) < 0.05, "x2"] = np.nan
    df.to_csv(path, index=False)


def _config(tmp_path, learners, experiment="kgroups", n=1800):
    csv = tmp_path / f"people{n}.csv"
    if not csv.exists():
        _people(csv, n=n)
    d = {"experiment": experiment, "seed": 7,
         "dataset": {"file": str(csv), "label": "y", "positive": "yes", "group": ["sex", "race"]},
         "split": {"n_splits": 1, "test_size": 0.4, "stratify": "group_label"},
         "missingness": [{"kind": "none", "name": "none"}], "imputers": [{"kind": "mean"}],
         "learners": learners, "evaluation": {"bootstrap": 0},
         "tracking": {"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"}}
    p = tmp_path / f"{experiment}.yaml"
    p.write_text(yaml.safe_dump(d, sort_keys=False))
    return p


def _cells(tmp_path, cfg):
    from flows.run import run_any

    out = run_any(str(cfg), results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    assert out["failed"] == [], out["failed"]
    exp = yaml.safe_load(cfg.read_text())["experiment"]
    meta = json.loads((tmp_path / "results" / exp / "metrics.json").read_text())
    cm = pd.read_csv(tmp_path / "results" / exp / "cell_metrics.csv", keep_default_na=False)
    return meta, cm


# equality-constrained trees equalise leaf probabilities past [0, 1] on 1,800 rows (their documented warning,
# kept in the run's warnings.txt): shown, not a failed cell
@pytest.mark.filterwarnings("default:adjusted positive-class leaf probabilities span"
                            ":fairmiss.learners.equality_trees.eqtree.ProbabilityRangeWarning")
@pytest.mark.slow
def test_every_k_group_learner_runs_on_six_intersections_and_is_scored_over_all(tmp_path):
    assert {"exponentiated_gradient", "threshold_optimizer", "orthogonal", "zafar", "equality_constrained"} \
        <= set(K_GROUP_KINDS), K_GROUP_KINDS
    learners = [{"kind": k, "name": k, **QUICK.get(k, {})} for k in K_GROUP_KINDS]
    meta, cm = _cells(tmp_path, _config(tmp_path, learners))
    assert sorted(meta["groups"].values()) == sorted(GROUPS)
    for k in K_GROUP_KINDS:
        rows = cm[cm["method"].str.endswith(k)]
        fnr = rows[rows["metric"].str.fullmatch(r"fnr_group_\d+")]
        assert sorted(fnr["group"]) == sorted(GROUPS), (k, list(fnr["group"]))
        gap = rows.loc[rows["metric"] == "fnr_difference", "value"].item()
        assert gap == pytest.approx(fnr["value"].max() - fnr["value"].min(), abs=1e-9), k  # cell_metrics.csv keeps 10 significant digits


@pytest.mark.slow
def test_group_constraints_shrink_the_six_group_gap_they_target(tmp_path):
    """The base tree alone against the same tree under fairlearn's reduction (FNR parity over the six
    intersections) and its threshold optimiser (equalized odds): the targeted max - min gap over six groups,
    measured on 2,400 test rows (~400 a group), falls: by at least a fifth under the reduction (seen: 0.134 ->
    0.077), below the base under the threshold optimiser (seen: 0.167 -> 0.121; it fits its thresholds on half
    the training rows, and on 1,800 rows in all its test gap rose, 0.267 -> 0.356: too few rows a group)."""
    learners = [{"kind": "decision_tree", "name": "tree", "max_depth": 2},
                {"kind": "exponentiated_gradient", "name": "eg", **QUICK["exponentiated_gradient"]},
                {"kind": "threshold_optimizer", "name": "to", **QUICK["threshold_optimizer"]}]
    _, cm = _cells(tmp_path, _config(tmp_path, learners, experiment="kgroups_gap", n=6000))

    def value(method, metric):
        return cm.loc[(cm["method"].str.endswith(method)) & (cm["metric"] == metric), "value"].item()

    base_fnr, base_eo = value("tree", "fnr_difference"), value("tree", "equalized_odds_difference")
    assert base_fnr > 0.1 and base_eo > 0.1, (base_fnr, base_eo)  # the planted disparity is there
    assert value("eg", "fnr_difference") < base_fnr * 0.8, (value("eg", "fnr_difference"), base_fnr)
    assert value("to", "equalized_odds_difference") < base_eo, (value("to", "equalized_odds_difference"), base_eo)

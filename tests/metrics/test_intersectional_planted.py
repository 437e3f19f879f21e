"""A planted intersectional disparity: positives of 'female · b' and 'male · a' cannot be recognised (their label
is a coin flip), so those two intersections have a high FNR — while sex alone and race alone each mix
one hard and one easy intersection and show no gap. fairmiss, given both columns, finds the gap, names the pair
and its one-split bootstrap interval excludes 0; given sex alone it does not show it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow  # two real flow runs (~30 s each on 2 cores)


def _people(path, n=4000, seed=11):
    rng = np.random.default_rng(seed)
    sex = rng.choice(["female", "male"], n)
    race = rng.choice(["a", "b"], n)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    hard = ((sex == "female") & (race == "b")) | ((sex == "male") & (race == "a"))
    # easy intersections: the label follows x1; hard ones: it is a coin flip (a model that follows x1 misses about
    # half of their positives, and few of the easy ones')
    score = np.where(hard, rng.normal(size=n), 2.5 * x1 + rng.normal(scale=0.3, size=n))
    y = np.where(score > 0, "yes", "no")
    pd.DataFrame({"sex": sex, "race": race, "x1": x1.round(4), "x2": x2.round(4), "y": y}).to_csv(path, index=False)


def _run(tmp_path, name, group, **dataset):
    from flows.experiment import run_experiment

    cfg = {"experiment": name, "seed": 5, "dataset": {"file": str(tmp_path / "people.csv"), "label": "y",
                                                       "positive": "yes", "group": group, **dataset},
           "split": {"n_splits": 1, "test_size": 0.5}, "missingness": [{"kind": "none", "name": "none"}],
           "imputers": [{"kind": "mean"}], "learners": [{"kind": "logistic_regression", "name": "logreg"}],
           "fairness_metric": "fnr_difference",
           "tracking": {"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"}}
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(cfg))
    out = run_experiment(str(p), results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    cells = pd.read_csv(tmp_path / "results" / name / "cells.csv")
    return out, cells.iloc[0]


def test_a_planted_intersection_gap_is_found_named_and_its_interval_excludes_zero(tmp_path):
    _people(tmp_path / "people.csv")
    out, cell = _run(tmp_path, "both", ["sex", "race"])
    assert cell["fnr_difference"] > 0.25, cell["fnr_difference"]
    assert cell["fnr_difference_ci_low"] > 0.1, (cell["fnr_difference_ci_low"], cell["fnr_difference_ci_high"])
    between = [ln for ln in out["table"].splitlines() if ln.strip().startswith("logreg:")]
    assert between, out["table"]
    worst = between[0].split("worst (highest) for ")[1].split(",")[0].strip("'")
    assert worst in ("female · b", "male · a"), between[0]
    assert "lowest for 'female · a'" in between[0] or "lowest for 'male · b'" in between[0], between[0]
    # sex alone mixes one hard and one easy intersection on each side: no gap to speak of, and 0 in its interval
    _, one = _run(tmp_path, "sex_only", "sex", drop=["race"])  # race is then not a feature either
    assert one["fnr_difference"] < 0.08, one["fnr_difference"]
    assert one["fnr_difference_ci_low"] < 0.02 or one["fnr_difference"] < cell["fnr_difference_ci_low"] / 2, one
